/* SPDX-License-Identifier: MIT */
/* The library's own version, for callers built against other headers. */
#include "config.h"

#include <dsb/dsb.h>

const char *dsb_version(void)
{
	return DSB_PACKAGE_VERSION;
}
