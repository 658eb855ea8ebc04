/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox exec: run ARGV under the resolved policy, confined, for people and scripts.
 * stdin and stdout pass straight through; stderr is copied through as it comes (and read for
 * the denial dialect). Exit status: the command's; 124 when it timed out; 125 when dsh-sandbox
 * failed or no sandbox could run it (then nothing ran). A denial adds the denial marker on
 * stderr after the command's own output. A command that could not be executed: 127 when it
 * does not exist, 126 otherwise, with `dsh-sandbox: COMMAND: REASON` (as env(1)).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "../policy/policy.h"
#include "run-common.h"

/* dsh-sandbox's own failures: the command's statuses take everything else (DESIGN.md). */
#define EXEC_FAILED    125
#define EXEC_TIMED_OUT 124
/* The command could not be executed (GNU env and timeout): it does not exist, or another
 * reason (no x bit, a directory, not an executable format). */
#define EXEC_NOT_FOUND	127
#define EXEC_CANNOT_RUN 126

int cmd_exec(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("exec");
	run_args args = {.tool_name = "exec"};
	int c;

	opterr = 0;
	/* '+': the command's own options are not ours. */
	while ((c = getopt_long(argc, argv, "+:h", run_options, NULL)) != -1) {
		if (run_parse_option(c, optarg, global, &args))
			continue;
		if (c == 'h') {
			cli_print_usage(stdout, cmd);
			return 0;
		}
		return cli_option_error(cmd, c, argv);
	}
	if (args.policy.session && args.policy.mode)
		return cli_usage_error(cmd, "--session and --mode do not go together");
	if (optind >= argc)
		return cli_usage_error(cmd,
				       "no command given (dsh-sandbox exec [OPTIONS] -- ARGV...)");

	/* What the person approving sees: the whole command, as typed. */
	strbuf shown = STRBUF_INIT;
	for (int i = optind; i < argc; i++)
		(void)strbuf_printf(&shown, i > optind ? " %s" : "%s", argv[i]);
	args.subject = shown.buf ? shown.buf : argv[optind];
	dsb_error err = {0};
	run_context ctx;
	dsb_run_result res = {0};
	int r = run_prepare(global, &args, &ctx, &err);
	if (r == -DSB_E_INVALID_ARGS) {
		cli_report(&err);
		run_context_done(&ctx);
		strbuf_done(&shown);
		return CLI_EXIT_USAGE;
	}
	if (r >= 0) {
		dsb_run_request req = {
			.argv = argv + optind,
			.workdir = args.workdir ? ctx.workdir : NULL,
			.timeout_ms = ctx.timeout_ms ? ctx.timeout_ms : UINT64_MAX,
			.dsh_env = ctx.dsh_env,
			.passthrough = true,
			.no_spill = true,
		};
		/* The child owns the terminal's signals; we only wait and pass its status on. */
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		/* A person's command has no default timeout: only --timeout sets one. */
		ctx.cfg->max_timeout_ms = UINT64_MAX;
		r = dsb_exec_run(ctx.provider, ctx.cfg, &ctx.policy, &req, &res, &err);
	}
	run_context_done(&ctx);
	strbuf_done(&shown);
	if (r == -DSB_E_EXEC_FAILED) {
		/* The sandbox ran; the command did not: env(1)'s words and statuses. */
		fprintf(stderr, "dsh-sandbox: %s: %s\n", err.subject, strerror(err.sys_errno));
		return err.sys_errno == ENOENT ? EXEC_NOT_FOUND : EXEC_CANNOT_RUN;
	}
	if (r < 0) {
		fprintf(stderr, "dsh-sandbox: %s\n", err.message);
		return EXEC_FAILED;
	}

	int status = res.exit_code >= 0 ? res.exit_code : 128 + res.signal;
	if (res.denied) {
		fflush(stdout);
		fprintf(stderr, "[sandbox: file access denied under %s mode]\n",
			dsb_mode_to_string(res.mode));
	}
	if (res.timed_out)
		status = EXEC_TIMED_OUT;
	dsb_run_result_done(&res);
	return status;
}
