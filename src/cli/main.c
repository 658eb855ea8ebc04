/* SPDX-License-Identifier: MIT */
/* dsh-sandbox: global options, then one subcommand from the table (options.c). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int main(int argc, char **argv)
{
	cli_global global = {0};

	/* Installed (or linked) as `landlock-run`, the binary is DSH's launcher, nothing else. */
	if (argc > 0 && strcmp(basename(argv[0]), "landlock-run") == 0)
		return cmd_landlock_run(&global, argc, argv);

	cli_args tool;
	int r = cli_parse(NULL, NULL, argc, argv, &tool);
	if (r != 0)
		return r > 0 ? 0 : -r;
	if (tool.opt[CLI_OPT_VERSION]) {
		printf("dsh-sandbox %s\n", dsb_version());
		return 0;
	}
	if (tool.argc == 0)
		return cli_usage_error(NULL, "no command given");

	const cli_command *cmd = cli_find_command(tool.argv[0]);
	if (!cmd)
		return cli_unknown_command(tool.argv[0]);

	/* The command sees argv from its own name on. */
	cli_args args;
	r = cli_parse(cmd, &tool.global, tool.argc, tool.argv, &args);
	if (r != 0)
		return r > 0 ? 0 : -r;
	return cmd->run(&args);
}
