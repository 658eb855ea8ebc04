/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER */
#include "cli.h"

int cmd_probe(cli_global *global, int argc, char **argv)
{
	(void)global;
	(void)argc;
	(void)argv;
	return 1;
}
