/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox exec: run ARGV under the resolved policy, confined, for people and scripts (a
 * DSB_TOOL_EXEC call). stdin and stdout pass straight through; stderr is copied through as it
 * comes (and read for the denial dialect). Exit status: the command's; 124 when it timed out; 125
 * when dsh-sandbox failed, a usage error included, or no sandbox could run it (then nothing ran);
 * 128 + N when signal N stopped dsh-sandbox (and so the command). A denial adds the denial marker
 * on stderr after the command's own output. A command that could not be executed: 127 when it
 * does not exist, 126 otherwise, with `dsh-sandbox: COMMAND: REASON` (as env(1)).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "interrupt.h"
#include "run-common.h"

/* dsh-sandbox's own failures, usage errors too: the command's statuses take everything else
 * (DESIGN.md), as env(1) and timeout(1) do. */
#define EXEC_FAILED    CLI_EXIT_OWN_FAILURE
#define EXEC_TIMED_OUT 124
/* The command could not be executed (GNU env and timeout): it does not exist, or another
 * reason (no x bit, a directory, not an executable format). */
#define EXEC_NOT_FOUND	127
#define EXEC_CANNOT_RUN 126

/* The child owns the terminal's signals once it runs; we only wait and pass its status on. */
static void leave_signals_to_the_command(void *userdata)
{
	(void)userdata;
	cli_interrupt_command_has_terminal();
}

int cmd_exec(const cli_args *a)
{
	run_args args = run_args_of(a);
	if (args.policy.session && args.policy.mode)
		return cli_usage_error(a->cmd, "--session and --mode do not go together");
	if (a->argc == 0)
		return cli_usage_error(a->cmd,
				       "no command given (dsh-sandbox exec [OPTIONS] -- ARGV...)");

	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = DSB_TOOL_EXEC;
	req.argv = a->argv;
	dsb_call_result res = {0};
	dsb_error err = {0};
	int sig;
	if (run_call(&a->global, &args, &req, leave_signals_to_the_command, &res, &sig, &err) < 0) {
		(void)cli_report(&err);
		return EXEC_FAILED;
	}
	int status;
	if (run_interrupted(&res, sig)) {
		/* Its output went through as it came: only what happened is left to say. */
		cli_interrupt_report(sig, res.run.aborted);
		status = 128 + sig;
	} else if (res.is_error && res.error.code == DSB_E_EXEC_FAILED) {
		/* The sandbox ran; the command did not: env(1)'s words and statuses. */
		cli_error("%s: %s", res.error.subject, strerror(res.error.sys_errno));
		status = res.error.sys_errno == ENOENT ? EXEC_NOT_FOUND : EXEC_CANNOT_RUN;
	} else if (res.is_error) {
		(void)cli_report(&res.error);
		status = EXEC_FAILED;
	} else {
		status = res.run.exit_code >= 0 ? res.run.exit_code : 128 + res.run.signal;
		if (res.run.denied) {
			fflush(stdout);
			fprintf(stderr, "[sandbox: file access denied under %s mode]\n",
				dsb_mode_to_string(res.run.mode));
		}
		/* Which paths, where the sandbox watched (sandbox-local.evidence). */
		if (res.run.refusal_note) {
			fflush(stdout);
			fprintf(stderr, "%s\n", res.run.refusal_note);
		}
		/* What a limit did, for the person at the terminal too. */
		if (res.run.limit_note) {
			fflush(stdout);
			fprintf(stderr, "%s\n", res.run.limit_note);
		}
		if (res.run.undone_note) {
			fflush(stdout);
			fprintf(stderr, "%s\n", res.run.undone_note);
		}
		if (res.run.timed_out) {
			cli_error("timed out after %" PRIu64 "ms: the command was stopped",
				  res.run.timeout_ms);
			status = EXEC_TIMED_OUT;
		}
	}
	dsb_call_result_done(&res);
	return status;
}
