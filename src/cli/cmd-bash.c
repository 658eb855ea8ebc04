/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox bash: DSH's bash tool from the command line. Runs `bash -c COMMAND` under the
 * resolved policy (a DSB_TOOL_BASH call) and prints the model-facing text byte for byte (spec
 * §6.8), or the structured result with --json. Exit 0 whenever the tool call succeeded, whatever
 * the command's exit; non-zero only for infrastructure failures, printed as "Error: MESSAGE".
 */
#include <stdio.h>

#include "run-common.h"

int cmd_bash(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("bash");
	run_args args = {0};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", run_options, NULL)) != -1) {
		if (run_parse_option(c, optarg, global, &args))
			continue;
		if (c == 'j')
			args.json = true;
		else if (c == 'h') {
			cli_print_usage(stdout, cmd);
			return 0;
		} else
			return cli_option_error(cmd, c, argv);
	}
	if (args.policy.session && args.policy.mode)
		return cli_usage_error(cmd, "--session and --mode do not go together");
	if (argc - optind != 1)
		return cli_usage_error(cmd, "expected exactly one COMMAND, got %d", argc - optind);

	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = DSB_TOOL_BASH;
	req.command = argv[optind];
	dsb_call_result res = {0};
	dsb_error err = {0};
	if (run_call(global, &args, &req, NULL, &res, &err) < 0)
		return run_report(&err, args.json);
	int status = run_print_result(&res, args.json);
	dsb_call_result_done(&res);
	return status;
}
