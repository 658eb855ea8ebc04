/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox fs write|edit|read: DSH's write and edit tools (and read) from the command line,
 * fenced by the resolved policy (dsh-compat §7; reads only by its denyRead paths): a
 * DSB_TOOL_WRITE, EDIT or READ call, the write's content on stdin. Results and errors are printed
 * as the model sees them; a fence denial becomes the denial marker plus the escalation hint (§7.4
 * mapError), and the protected path that refused it, if one did. A one-shot --sandbox-permissions
 * escalation is approved before the path is even resolved.
 */
#include <string.h>
#include <unistd.h>

#include "run-common.h"

int cmd_fs(const cli_args *a)
{
	const cli_command *cmd = a->cmd;
	const char *verb = a->verb->name;
	run_args args = run_args_of(a);
	const char *old_string = a->opt[CLI_OPT_OLD], *new_string = a->opt[CLI_OPT_NEW];
	bool all = a->opt[CLI_OPT_ALL] != NULL;
	if (a->argc != 1)
		return cli_usage_error(cmd, "expected exactly one PATH, got %d", a->argc);
	if (strcmp(verb, "edit") == 0 && (!old_string || !new_string))
		return cli_usage_error(cmd, "'fs edit' needs --old TEXT and --new TEXT");
	if (strcmp(verb, "edit") != 0 && (old_string || new_string || all))
		return cli_usage_error(cmd, "--old, --new and --all go with 'fs edit'");
	if (strcmp(verb, "read") == 0 && (args.sandbox_permissions || args.justification))
		return cli_usage_error(cmd, "reads are not escalated: nothing to approve");
	if (args.policy.session && args.policy.mode)
		return cli_usage_error(cmd, "--session and --mode do not go together");

	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = dsb_tool_from_string(verb);
	req.path = a->argv[0];
	req.content_fd = STDIN_FILENO; /* write: read once approved, as the tool gets it then */
	req.old_string = old_string;
	req.new_string = new_string;
	req.replace_all = all;
	return run_tool(&a->global, &args, &req);
}
