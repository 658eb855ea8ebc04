/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER */
#include "approval.h"
