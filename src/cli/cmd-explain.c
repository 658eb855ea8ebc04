/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox explain: what `exec` would do with the same options and ARGV, without running
 * anything: the configuration, the mode and why, the backend and why, and how the command would
 * be confined (the runner's argv, or the Landlock rules; hardening, network, limits, protected
 * paths). The library prepares and confines the call as a run does (dsb_call_explain()) and
 * tells each decision: one line each on stdout, or the explanation's JSON with --json.
 */
#include <stdio.h>
#include <stdlib.h>

#include "run-common.h"

static void print_line(void *userdata, const char *line)
{
	(void)userdata;
	printf("%s\n", line);
}

int cmd_explain(const cli_args *a)
{
	run_args args = run_args_of(a);
	if (args.policy.session && args.policy.mode)
		return cli_usage_error(a->cmd, "--session and --mode do not go together");
	if (a->argc == 0)
		return cli_usage_error(
			a->cmd, "no command given (dsh-sandbox explain [OPTIONS] -- ARGV...)");

	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = DSB_TOOL_EXEC;
	req.argv = a->argv;
	dsb_error err = {0};
	_cleanup_free_ char *json = NULL;
	/* The lines are the explanation; with --json they go to stderr only when asked (-v). */
	dsb_call_debug_fn told = !args.json	     ? print_line
				 : a->global.verbose ? cli_debug_line
						     : NULL;
	if (run_explain(&a->global, &args, &req, told, &json, &err) < 0) {
		(void)cli_flush_stdout();
		return cli_report(&err);
	}
	if (args.json)
		puts(json);
	return cli_flush_stdout();
}
