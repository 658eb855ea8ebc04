/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER */
#include "exec.h"
