/* SPDX-License-Identifier: MIT */
/*
 * A library user's program, built through pkg-config against an installed libdshsandbox by
 * tests/install-check.sh and tests/package-check.sh: it prints the library's version.
 */
#include <stdio.h>

#include <dsb/dsb.h>

int main(void)
{
	if (dsb_mode_from_string("workspace-write") != DSB_MODE_WORKSPACE_WRITE)
		return 1;
	printf("%s\n", dsb_version());
	return 0;
}
