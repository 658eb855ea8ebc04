/* SPDX-License-Identifier: MIT */
/* What `bash`, `exec` and `fs` share: their options, and one call made with them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../call/call.h"
#include "../core/core.h"
#include "../policy/policy.h"
#include "answer.h"
#include "run-common.h"

run_args run_args_of(const cli_args *args)
{
	return (run_args){
		.policy = cli_policy_args_of(args),
		.workdir = args->opt[CLI_OPT_WORKDIR],
		.timeout = args->opt[CLI_OPT_TIMEOUT],
		.backend = args->opt[CLI_OPT_BACKEND],
		.network = args->opt[CLI_OPT_NETWORK],
		.sandbox_permissions = args->opt[CLI_OPT_SANDBOX_PERMISSIONS],
		.justification = args->opt[CLI_OPT_JUSTIFICATION],
		.call_id = args->opt[CLI_OPT_CALL_ID],
		.json = args->opt[CLI_OPT_JSON] != NULL,
	};
}

int run_parse_timeout(const char *s, uint64_t *ret_ms, dsb_error *err)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
	if (!end || *end || errno || v == 0) {
		/* The tool's text: the value as JSON, a number when it reads as one (dsh-compat
		 * §6.7). */
		char *num_end = NULL;
		(void)strtod(s, &num_end);
		bool numeric = *s && num_end && !*num_end;
		_cleanup_free_ char *quoted = NULL;
		if (!numeric && json_quote(s, strlen(s), &quoted) < 0)
			return dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
		return dsb_fail(err, DSB_E_INVALID_ARGS,
				"invalid timeoutMs: expected a positive number, got %s",
				numeric ? s : quoted);
	}
	*ret_ms = v;
	return 0;
}

/* The CLI's own options, checked in the place DSH's tool checks the same arguments. */
static int check_options(const cli_global *global, const run_args *args, dsb_call_request *req,
			 dsb_error *err)
{
	int r = call_check_arguments(req, err);
	if (r < 0)
		return r;
	if (args->timeout && run_parse_timeout(args->timeout, &req->timeout_ms, err) < 0)
		return -DSB_E_INVALID_ARGS;
	if (args->backend && (req->backend = dsb_backend_from_string(args->backend)) < 0)
		return dsb_fail(err, DSB_E_INVALID_ARGS,
				"--backend: invalid backend \"%s\" (accepted: %s)", args->backend,
				policy_backends_accepted());
	if (args->network && cli_parse_network(args->network, &req->network, err) < 0)
		return -DSB_E_INVALID_ARGS;
	/* The bash tool's order (dsh-compat §6.7 step 1): the escalation pairing after the timeout.
	 */
	r = dsb_escalation_validate(args->sandbox_permissions, args->justification, err);
	if (r >= 0)
		r = cli_parse_mode(&args->policy, &req->mode, err);
	if (r >= 0)
		r = cli_check_config_option(global, err);
	return r;
}

/* The request's arguments from the command line's options. */
static void request_of(const run_args *args, dsb_call_request *req)
{
	req->session = args->policy.session;
	req->workspace = args->policy.workspace;
	req->workdir = args->workdir;
	req->sandbox_permissions = args->sandbox_permissions;
	req->justification = args->justification;
	req->call_id = args->call_id;
}

/* A call with the global options' setup and the CLI's probe verdict cache. */
static int new_call(const cli_global *global, dsb_call **ret_call, dsb_error *err)
{
	_cleanup_free_ char *cache = cli_cache_dir(global);
	dsb_call_setup setup = cli_setup(global);
	setup.cache_dir = cache;
	return dsb_call_new(&setup, ret_call, err);
}

int run_call(const cli_global *global, const run_args *args, dsb_call_request *req,
	     dsb_call_on_run_fn on_run, dsb_call_result *ret, dsb_error *err)
{
	request_of(args, req);

	dsb_call_result res = {.tool = req->tool};
	int r = check_options(global, args, req, err);
	if (r < 0) {
		/* Not made: a failed call all the same, for the model as for a person. */
		if (call_result_fail(&res, err, NULL) < 0)
			return r;
		*ret = res;
		return 0;
	}

	dsb_call *call = NULL;
	r = new_call(global, &call, err);
	if (r < 0)
		return r;
	dsb_call_set_answerer(call, cli_answer_terminal, NULL);
	dsb_call_set_on_run(call, on_run, NULL);
	if (global->verbose)
		dsb_call_set_debug(call, cli_debug_line, NULL);
	r = dsb_call_run(call, req, ret, err);
	dsb_call_free(call);
	return r;
}

int run_report(const dsb_error *err, bool json)
{
	/* No tool's: its message as it is, with no fence denial to map. */
	dsb_call_result res = {.tool = _DSB_TOOL_INVALID};
	if (call_result_fail(&res, err, NULL) < 0)
		return cli_out_of_memory();
	int status = run_print_result(&res, json);
	dsb_call_result_done(&res);
	return status;
}

int run_print_result(const dsb_call_result *res, bool json)
{
	if (json) {
		dsb_error err = {0};
		_cleanup_free_ char *text = NULL;
		if (dsb_call_render_json(res, &text, &err) < 0)
			return cli_report(&err);
		printf("%s\n", text);
	} else if (isatty(STDOUT_FILENO)) {
		/*
		 * A person's terminal: the text is a command's output, which a hostile model
		 * writes, and a terminal acts on its control sequences (OSC 52 sets the clipboard,
		 * OSC 0 the title, CSI erases what was shown). Every control but a newline and a
		 * tab is shown as an escape instead. A pipe or a file gets DSH's bytes exactly.
		 */
		_cleanup_free_ char *visible = NULL;
		if (visible_escape(res->text, res->text_len,
				   VISIBLE_KEEP_LINES | VISIBLE_KEEP_BACKSLASH, &visible) < 0)
			return cli_out_of_memory();
		(void)fputs(visible, stdout);
	} else
		(void)fwrite(res->text, 1, res->text_len, stdout);
	if (res->is_error) {
		(void)cli_flush_stdout();
		return dsb_code_exit_status(res->error.code);
	}
	return cli_flush_stdout();
}

int run_tool(const cli_global *global, const run_args *args, dsb_call_request *req)
{
	dsb_call_result res = {0};
	dsb_error err = {0};
	if (run_call(global, args, req, NULL, &res, &err) < 0)
		return run_report(&err, args->json);
	int status = run_print_result(&res, args->json);
	dsb_call_result_done(&res);
	return status;
}

int run_explain(const cli_global *global, const run_args *args, dsb_call_request *req,
		dsb_call_debug_fn told, char **ret_json, dsb_error *err)
{
	request_of(args, req);
	int r = check_options(global, args, req, err);
	if (r < 0)
		return r;
	dsb_call *call = NULL;
	r = new_call(global, &call, err);
	if (r < 0)
		return r;
	dsb_call_set_debug(call, told, NULL);
	r = dsb_call_explain(call, req, ret_json, err);
	dsb_call_free(call);
	return r;
}
