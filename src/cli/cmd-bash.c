/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox bash: DSH's bash tool from the command line. Runs `bash -c COMMAND` under the
 * resolved policy (a DSB_TOOL_BASH call) and prints the model-facing text byte for byte (spec
 * §6.8), or the structured result with --json. Exit 0 whenever the tool call succeeded, whatever
 * the command's exit; non-zero only for infrastructure failures, printed as "Error: MESSAGE".
 */
#include <stdio.h>

#include "run-common.h"

int cmd_bash(const cli_args *a)
{
	run_args args = run_args_of(a);
	if (args.policy.session && args.policy.mode)
		return cli_usage_error(a->cmd, "--session and --mode do not go together");
	if (a->argc != 1)
		return cli_usage_error(a->cmd, "expected exactly one COMMAND, got %d", a->argc);

	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = DSB_TOOL_BASH;
	req.command = a->argv[0];
	return run_tool(&a->global, &args, &req);
}
