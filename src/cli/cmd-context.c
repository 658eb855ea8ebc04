/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox context: the runtime-context snapshot a harness hands the model at this step
 * (dsh-compat §9): its text and a newline, or nothing at all when the model already sees the policy
 * in force. A harness calls it once per model step, with --append to log what it sends.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

/* The projection for the named session: 1 with *@ret_message, 0 when there is nothing to send. */
static int project(const cli_args *args, dsb_context_message **ret_message, dsb_error *err)
{
	dsb_config *cfg = NULL;
	dsb_policy *policy = NULL;
	dsb_store *store = NULL;
	dsb_session *session = NULL;

	const cli_global *global = &args->global;
	int r = cli_load_config(global, &cfg, err);
	if (r >= 0)
		r = dsb_policy_new(cfg, &policy, err);
	if (r >= 0)
		r = dsb_store_open(global->store_path, &store, err);
	if (r >= 0)
		r = dsb_session_open(store, args->opt[CLI_OPT_SESSION], &session, err);
	/*
	 * Logged before it is printed: what the model is shown must be in the log. Decided and
	 * appended under one lock, so concurrent callers append one snapshot, not several.
	 */
	if (r >= 0 && args->opt[CLI_OPT_APPEND])
		r = dsb_context_project_append(session, policy, cfg, ret_message, NULL, err);
	else if (r >= 0)
		r = dsb_context_project(session, policy, cfg, ret_message, err);
	dsb_session_free(session);
	dsb_store_free(store);
	dsb_policy_free(policy);
	dsb_config_free(cfg);
	return r;
}

int cmd_context(const cli_args *args)
{
	if (args->argc > 0)
		return cli_usage_error(args->cmd, "unexpected argument '%s'", args->argv[0]);
	if (!args->opt[CLI_OPT_SESSION])
		return cli_usage_error(args->cmd, "--session is required");

	dsb_error err = {0};
	dsb_context_message *message = NULL;
	int r = project(args, &message, &err);
	if (r < 0)
		return cli_report(&err);
	if (!message)
		return 0;

	const char *out = args->opt[CLI_OPT_JSON] ? dsb_context_message_json(message)
						  : dsb_context_message_text(message);
	/* fwrite, not puts: the text is printed exactly, whatever it holds. */
	(void)fwrite(out, 1, strlen(out), stdout);
	(void)fputc('\n', stdout);
	dsb_context_message_free(message);
	return cli_flush_stdout();
}
