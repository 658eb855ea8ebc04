/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER */
#include "cli.h"

int cmd_landlock_run(cli_global *global, int argc, char **argv)
{
	(void)global;
	(void)argc;
	(void)argv;
	return 125;
}
