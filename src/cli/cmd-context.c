/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox context: the runtime-context snapshot a harness hands the model at this step
 * (spec §9): its text and a newline, or nothing at all when the model already sees the policy
 * in force. A harness calls it once per model step, with --append to log what it sends.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct context_args {
	const char *session;
	bool json;
	bool append;
} context_args;

static int parse_args(cli_global *global, const cli_command *cmd, int argc, char **argv,
		      context_args *args)
{
	static const struct option options[] = {
		{"session", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
		{"append", no_argument, NULL, 'a'},	   {"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},	   {0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (c) {
		case 's':
			args->session = optarg;
			break;
		case 'j':
			args->json = true;
			break;
		case 'a':
			args->append = true;
			break;
		case 'c':
			global->config_path = optarg;
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
	if (!args->session)
		return -cli_usage_error(cmd, "--session is required");
	return 0;
}

/* The projection for the named session: 1 with *@ret_message, 0 when there is nothing to send. */
static int project(const cli_global *global, const context_args *args,
		   dsb_context_message **ret_message, dsb_error *err)
{
	dsb_config *cfg = NULL;
	dsb_policy *policy = NULL;
	dsb_store *store = NULL;
	dsb_session *session = NULL;

	int r = cli_load_config(global, &cfg, err);
	if (r >= 0)
		r = dsb_policy_new(cfg, &policy, err);
	if (r >= 0)
		r = dsb_store_open(global->store_path, &store, err);
	if (r >= 0)
		r = dsb_session_open(store, args->session, &session, err);
	/*
	 * Logged before it is printed: what the model is shown must be in the log. Decided and
	 * appended under one lock, so concurrent callers append one snapshot, not several.
	 */
	if (r >= 0 && args->append)
		r = dsb_context_project_append(session, policy, cfg, ret_message, NULL, err);
	else if (r >= 0)
		r = dsb_context_project(session, policy, cfg, ret_message, err);
	dsb_session_free(session);
	dsb_store_free(store);
	dsb_policy_free(policy);
	dsb_config_free(cfg);
	return r;
}

int cmd_context(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("context");
	context_args args = {0};
	int r = parse_args(global, cmd, argc, argv, &args);
	if (r != 0)
		return r > 0 ? 0 : -r;

	dsb_error err = {0};
	dsb_context_message *message = NULL;
	r = project(global, &args, &message, &err);
	if (r < 0)
		return cli_report(&err);
	if (!message)
		return 0;

	const char *out =
		args.json ? dsb_context_message_json(message) : dsb_context_message_text(message);
	/* fwrite, not puts: the text is printed exactly, whatever it holds. */
	(void)fwrite(out, 1, strlen(out), stdout);
	(void)fputc('\n', stdout);
	dsb_context_message_free(message);
	return cli_flush_stdout();
}
