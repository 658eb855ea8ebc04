/* SPDX-License-Identifier: MIT */
/* dsh-sandbox: global options, then one subcommand from the table. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

const cli_command cli_commands[] = {
	{"policy", "[--session ID|PATH] [--mode MODE] [--workspace DIR] [--config FILE] [--json]",
	 "show the resolved policy and its writable roots", cmd_policy},
	{"session",
	 "new [--cwd DIR] [--json] | list [--json] | show ID [--json] | log ID |\n"
	 "          mode ID MODE | approval ID ask|never",
	 "create, inspect and switch sessions (ID may be a log file's path)", cmd_session},
	{NULL, NULL, NULL, NULL},
};

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{"config", required_argument, NULL, 'c'},
		{"store", required_argument, NULL, 's'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{0},
	};
	cli_global global = {0};
	int c;

	opterr = 0;
	/* '+': stop at the subcommand; its own options are its business. */
	while ((c = getopt_long(argc, argv, "+h", options, NULL)) != -1) {
		switch (c) {
		case 'c':
			global.config_path = optarg;
			break;
		case 's':
			global.store_path = optarg;
			break;
		case 'h':
			cli_print_usage(stdout, NULL);
			return 0;
		case 'V':
			printf("dsh-sandbox %s\n", dsb_version());
			return 0;
		case ':':
			return cli_usage_error(NULL, "option '%s' needs a value", argv[optind - 1]);
		default:
			return cli_usage_error(NULL, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error(NULL, "no command given");

	const cli_command *cmd = cli_find_command(argv[optind]);
	if (!cmd)
		return cli_usage_error(NULL, "unknown command '%s'", argv[optind]);

	/* The subcommand sees argv from its own name on; optind = 0 re-arms getopt for it. */
	int first = optind;
	optind = 0;
	return cmd->run(&global, argc - first, argv + first);
}
