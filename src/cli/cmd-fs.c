/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox fs write|edit|read: DSH's write and edit tools (and read) from the command line,
 * fenced by the resolved policy (spec §7; reads only by its denyRead paths): a DSB_TOOL_WRITE,
 * EDIT or READ call, the write's content on stdin. Results and errors are printed as the model
 * sees them; a fence denial becomes the denial marker plus the escalation hint (§7.4 mapError),
 * and the protected path that refused it, if one did. A one-shot --sandbox-permissions
 * escalation is approved before the path is even resolved.
 */
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "run-common.h"

typedef struct fs_args {
	run_args run;
	const char *verb;
	const char *path;
	const char *old_string;
	const char *new_string;
	bool all;
} fs_args;

static const struct option fs_options[] = {
	{"session", required_argument, NULL, 's'},
	{"mode", required_argument, NULL, 'm'},
	{"workspace", required_argument, NULL, 'w'},
	{"config", required_argument, NULL, 'c'},
	{"json", no_argument, NULL, 'j'},
	{"sandbox-permissions", required_argument, NULL, 'p'},
	{"justification", required_argument, NULL, 'J'},
	{"call-id", required_argument, NULL, 'i'},
	{"old", required_argument, NULL, 'O'},
	{"new", required_argument, NULL, 'N'},
	{"all", no_argument, NULL, 'A'},
	{"help", no_argument, NULL, 'h'},
	{0},
};

static int parse_args(cli_global *global, const cli_command *cmd, int argc, char **argv, fs_args *a)
{
	if (argc < 2 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "edit") != 0 &&
			 strcmp(argv[1], "read") != 0))
		return -cli_usage_error(
			cmd, argc < 2 ? "no subcommand given" : "unknown subcommand '%s'",
			argc < 2 ? "" : argv[1]);
	a->verb = argv[1];
	argc--;
	argv++;
	optind = 0;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":h", fs_options, NULL)) != -1) {
		if (run_parse_option(c, optarg, global, &a->run))
			continue;
		switch (c) {
		case 'j':
			a->run.json = true;
			break;
		case 'O':
			a->old_string = optarg;
			break;
		case 'N':
			a->new_string = optarg;
			break;
		case 'A':
			a->all = true;
			break;
		case 'h':
			cli_print_usage(stdout, cmd);
			return 1;
		default:
			return -cli_option_error(cmd, c, argv);
		}
	}
	if (argc - optind != 1)
		return -cli_usage_error(cmd, "expected exactly one PATH, got %d", argc - optind);
	a->path = argv[optind];
	if (strcmp(a->verb, "edit") == 0 && (!a->old_string || !a->new_string))
		return -cli_usage_error(cmd, "'fs edit' needs --old TEXT and --new TEXT");
	if (strcmp(a->verb, "edit") != 0 && (a->old_string || a->new_string || a->all))
		return -cli_usage_error(cmd, "--old, --new and --all go with 'fs edit'");
	if (strcmp(a->verb, "read") == 0 && (a->run.sandbox_permissions || a->run.justification))
		return -cli_usage_error(cmd, "reads are not escalated: nothing to approve");
	return 0;
}

int cmd_fs(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("fs");
	fs_args a = {0};
	int r = parse_args(global, cmd, argc, argv, &a);
	if (r != 0)
		return r > 0 ? 0 : -r;
	if (a.run.policy.session && a.run.policy.mode)
		return cli_usage_error(cmd, "--session and --mode do not go together");

	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = dsb_tool_from_string(a.verb);
	req.path = a.path;
	req.content_fd = STDIN_FILENO; /* write: read once approved, as the tool gets it then */
	req.old_string = a.old_string;
	req.new_string = a.new_string;
	req.replace_all = a.all;
	dsb_call_result res = {0};
	dsb_error err = {0};
	if (run_call(global, &a.run, &req, NULL, &res, &err) < 0)
		return run_report(&err, a.run.json);
	int status = run_print_result(&res, a.run.json);
	dsb_call_result_done(&res);
	return status;
}
