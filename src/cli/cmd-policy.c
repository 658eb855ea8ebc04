/* SPDX-License-Identifier: MIT */
/* dsh-sandbox policy: the resolved policy of an agentless call and its writable roots. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "cli.h"

typedef struct policy_args {
	const char *mode;
	const char *workspace;
	bool json;
} policy_args;

static int parse_args(cli_global *global, const cli_command *cmd, int argc, char **argv,
		      policy_args *args)
{
	static const struct option options[] = {
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
		case ':':
			return -cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		default:
			return -cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return -cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return 0;
}

static int print_json(const dsb_exec_policy *p, char *const *roots)
{
	strbuf sb = STRBUF_INIT;
	int r = strbuf_puts(&sb, "{\"mode\":");
	if (r >= 0)
		r = json_quote_append(&sb, dsb_mode_to_string(p->mode),
				      strlen(dsb_mode_to_string(p->mode)));
	if (r >= 0)
		r = strbuf_puts(&sb, ",\"workspaceRoot\":");
	if (r >= 0)
		r = json_quote_append(&sb, p->workspace_root, strlen(p->workspace_root));
	if (r >= 0 && p->session_id) {
		r = strbuf_puts(&sb, ",\"sessionId\":");
		if (r >= 0)
			r = json_quote_append(&sb, p->session_id, strlen(p->session_id));
	}
	if (r >= 0)
		r = strbuf_puts(&sb, ",\"writableRoots\":[");
	for (size_t i = 0; r >= 0 && roots[i]; i++) {
		if (i > 0)
			r = strbuf_putc(&sb, ',');
		if (r >= 0)
			r = json_quote_append(&sb, roots[i], strlen(roots[i]));
	}
	if (r >= 0)
		r = strbuf_puts(&sb, "]}\n");
	if (r >= 0)
		fputs(sb.buf, stdout);
	strbuf_done(&sb);
	return r;
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
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	if (args.mode &&
	    dsb_mode_parse(args.mode, "--mode", DSB_E_INVALID_ARGS, &req.mode, &err) < 0)
		return cli_report(&err);

	dsb_config *cfg = NULL;
	if (cli_load_config(global, &cfg, &err) < 0)
		return cli_report(&err);

	dsb_policy *policy = NULL;
	dsb_exec_policy resolved = {0};
	char **roots = NULL;
	r = 0;
	if (args.workspace)
		r = dsb_config_set_workspace_root(cfg, args.workspace, &err);
	if (r >= 0)
		r = dsb_policy_new(cfg, &policy, &err);
	if (r >= 0)
		r = dsb_policy_resolve(policy, &req, &resolved, &err);
	if (r >= 0)
		r = dsb_policy_writable_roots(&resolved, &roots, &err);

	int status = 0;
	if (r < 0)
		status = cli_report(&err);
	else if (args.json) {
		if (print_json(&resolved, roots) < 0) {
			fputs("dsh-sandbox: out of memory\n", stderr);
			status = 1;
		}
	} else
		print_text(&resolved, roots);

	if (status == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
		perror("dsh-sandbox: writing the policy");
		status = 1;
	}
	dsb_strv_free(roots);
	dsb_exec_policy_done(&resolved);
	dsb_policy_free(policy);
	dsb_config_free(cfg);
	return status;
}
