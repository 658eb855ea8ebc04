/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER */
#include "confine.h"
