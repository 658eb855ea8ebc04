/* SPDX-License-Identifier: MIT */
/* dsh-sandbox policy: the resolved policy of one call (agentless or a session's) and its roots. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "cli.h"

typedef struct policy_args {
	const char *session;
	const char *mode;
	const char *workspace;
	bool json;
} policy_args;

static int parse_args(cli_global *global, const cli_command *cmd, int argc, char **argv,
		      policy_args *args)
{
	static const struct option options[] = {
		{"session", required_argument, NULL, 's'},
		{"mode", required_argument, NULL, 'm'},
		{"workspace", required_argument, NULL, 'w'},
		{"config", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (c) {
		case 's':
			args->session = optarg;
			break;
		case 'm':
			args->mode = optarg;
			break;
		case 'w':
			args->workspace = optarg;
			break;
		case 'c':
			global->config_path = optarg;
			break;
		case 'j':
			args->json = true;
			break;
		case 'h':
			cli_print_usage(stdout, cmd);
			return 1;
		default:
			return -cli_option_error(cmd, c, argv);
		}
	}
	if (optind < argc)
		return -cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return 0;
}

static void print_text(const dsb_exec_policy *p, char *const *roots)
{
	printf("mode: %s\n", dsb_mode_to_string(p->mode));
	printf("workspaceRoot: %s\n", p->workspace_root);
	if (p->session_id)
		printf("sessionId: %s\n", p->session_id);
	if (!roots[0]) {
		printf("writableRoots: (none)\n");
		return;
	}
	printf("writableRoots:\n");
	for (size_t i = 0; roots[i]; i++)
		printf("  %s\n", roots[i]);
}

int cmd_policy(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("policy");
	policy_args args = {0};
	int r = parse_args(global, cmd, argc, argv, &args);
	if (r != 0)
		return r > 0 ? 0 : -r;

	dsb_error err = {0};
	dsb_exec_policy resolved = {0};
	dsb_config *cfg = NULL;
	char **roots = NULL;
	cli_policy_args pa = {args.session, args.mode, args.workspace};
	r = cli_resolve_policy(global, &pa, &cfg, &resolved, NULL, NULL, &err);
	dsb_config_free(cfg);
	if (r >= 0)
		r = dsb_policy_writable_roots(&resolved, &roots, &err);
	if (r < 0) {
		dsb_exec_policy_done(&resolved);
		return cli_report(&err);
	}

	int status = 0;
	if (args.json) {
		strbuf sb = STRBUF_INIT;
		if (cli_policy_json(&sb, &resolved, roots) < 0) {
			fputs("dsh-sandbox: out of memory\n", stderr);
			status = 1;
		} else
			puts(sb.buf);
		strbuf_done(&sb);
	} else
		print_text(&resolved, roots);
	if (status == 0)
		status = cli_flush_stdout();
	dsb_strv_free(roots);
	dsb_exec_policy_done(&resolved);
	return status;
}
