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
	{"permission", "[--session ID|PATH] [--config FILE] [PRESET]",
	 "show or switch a session's permission preset (sandbox mode + approval policy)",
	 cmd_permission},
	{"context", "--session ID|PATH [--json] [--append] [--config FILE]",
	 "the runtime-context snapshot to send the model now (nothing when unchanged)",
	 cmd_context},
	{"exec",
	 "[--session ID|PATH | --mode MODE] [--workspace DIR] [--workdir DIR]\n"
	 "          [--timeout MS] [--backend bwrap|landlock] [--config FILE]\n"
	 "          [--sandbox-permissions MODE --justification TEXT [--call-id ID]] -- ARGV...",
	 "run ARGV confined; its status, 124 on timeout, 125 when nothing could run", cmd_exec},
	{"bash",
	 "[--session ID|PATH | --mode MODE] [--workspace DIR] [--workdir DIR]\n"
	 "          [--timeout MS] [--backend bwrap|landlock] [--config FILE] [--json]\n"
	 "          [--sandbox-permissions MODE --justification TEXT [--call-id ID]] COMMAND",
	 "DSH's bash tool: bash -c COMMAND, printed exactly as the model sees it", cmd_bash},
	{"fs",
	 "write|edit|read [--session ID|PATH | --mode MODE] [--workspace DIR] [--json]\n"
	 "          [--sandbox-permissions MODE --justification TEXT [--call-id ID]]\n"
	 "          [--old TEXT --new TEXT [--all]] PATH     (write: the content on stdin)",
	 "DSH's write and edit tools (and read), fenced by the policy", cmd_fs},
	{"serve", "[--session ID|PATH | --cwd DIR] [--config FILE]",
	 "DSH's tools as an MCP server on stdin/stdout (a new session unless --session)",
	 cmd_serve},
	{"probe", "[--fresh] [--json] [--config FILE]",
	 "which backends confine here, with what enforcement, and which one is used", cmd_probe},
	{"landlock-run", "[--ro PATH]... [--rw PATH]... -- ARGV... | --probe",
	 "DSH's Landlock launcher contract, byte for byte", cmd_landlock_run},
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

	/* Installed (or linked) as `landlock-run`, the binary is DSH's launcher, nothing else. */
	if (argc > 0 && strcmp(basename(argv[0]), "landlock-run") == 0)
		return cmd_landlock_run(&global, argc, argv);

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
		default:
			return cli_option_error(NULL, c, argv);
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
