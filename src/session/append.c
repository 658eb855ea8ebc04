/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER */
#include "session.h"
