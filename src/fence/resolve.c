/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER */
#include <dsb/fence.h>
