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
#include "interrupt.h"
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

/* A unit's milliseconds: a bare number is milliseconds, as DSH's timeoutMs. 0: no such unit. */
static uint64_t unit_ms(const char *unit)
{
	static const struct {
		const char *name;
		uint64_t ms;
	} units[] = {{"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60000}};
	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if (strcmp(unit, units[i].name) == 0)
			return units[i].ms;
	return 0;
}

int run_parse_timeout(const char *s, bool zero_is_none, uint64_t *ret_ms, dsb_error *err)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
	uint64_t per = end ? unit_ms(end) : 0;
	if (!end || !per || errno || (v == 0 && !zero_is_none) || v > UINT64_MAX / per) {
		_cleanup_free_ char *quoted = NULL;
		if (json_quote(s, strlen(s), &quoted) < 0)
			return dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
		return dsb_fail(
			err, DSB_E_INVALID_ARGS,
			"invalid --timeout: expected %s (milliseconds, or with a unit: 500ms, "
			"30s, 2m%s), got %s",
			zero_is_none ? "a duration" : "a positive duration",
			zero_is_none ? "; 0 for none" : "", quoted);
	}
	*ret_ms = (uint64_t)v * per;
	return 0;
}

/* The CLI's own options, checked in the place DSH's tool checks the same arguments. */
static int check_options(const cli_global *global, const run_args *args, dsb_call_request *req,
			 dsb_error *err)
{
	int r = call_check_arguments(req, err);
	if (r < 0)
		return r;
	/* A person's command has no timeout unless given one: 0 says so again. */
	if (args->timeout &&
	    run_parse_timeout(args->timeout, req->tool == DSB_TOOL_EXEC, &req->timeout_ms, err) < 0)
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
	     dsb_call_on_run_fn on_run, dsb_call_result *ret, int *ret_signal, dsb_error *err)
{
	*ret_signal = 0;
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
	bool no_terminal = false;
	dsb_call_set_answerer(call, cli_answer_terminal, &no_terminal);
	dsb_call_set_on_run(call, on_run, NULL);
	if (global->verbose)
		dsb_call_set_debug(call, cli_debug_line, NULL);
	cli_interrupt_arm(call);
	r = dsb_call_run(call, req, ret, err);
	*ret_signal = cli_interrupt_disarm();
	/* Why nobody decided a refused escalation, for the person: the model reads DSH's words. */
	const char *note = dsb_call_approval_note(call);
	if (note)
		cli_error("approval: %s", note);
	else if (r >= 0 && no_terminal && ret->is_error &&
		 ret->error.code == DSB_E_ESCALATION_REFUSED)
		cli_error("approval: no terminal to ask on, and the configuration names no "
			  "approval.answerer");
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

/*
 * What the model reads, on stdout. A pipe or a file gets DSH's bytes exactly. A person's terminal
 * gets them made visible: the text is a command's output, which a hostile model writes, and a
 * terminal acts on its control sequences (OSC 52 sets the clipboard, OSC 0 the title, CSI erases
 * what was shown), so every control but a newline and a tab is shown as an escape instead. DSH's
 * text has no final newline (a model reads no prompt after it); a terminal gets one, so that the
 * shell's prompt does not start on its last line.
 */
static int print_text(const char *text, size_t len)
{
	if (!isatty(STDOUT_FILENO)) {
		(void)fwrite(text, 1, len, stdout);
		return 0;
	}
	_cleanup_free_ char *visible = NULL;
	if (visible_escape(text, len, VISIBLE_KEEP_LINES | VISIBLE_KEEP_BACKSLASH, &visible) < 0)
		return cli_out_of_memory();
	(void)fputs(visible, stdout);
	if (len > 0 && text[len - 1] != '\n')
		(void)fputc('\n', stdout);
	return 0;
}

int run_print_result(const dsb_call_result *res, bool json)
{
	if (json) {
		dsb_error err = {0};
		_cleanup_free_ char *text = NULL;
		if (dsb_call_render_json(res, &text, &err) < 0)
			return cli_report(&err);
		printf("%s\n", text);
	} else {
		int status = print_text(res->text, res->text_len);
		if (status)
			return status;
	}
	if (res->is_error) {
		(void)cli_flush_stdout();
		return dsb_code_exit_status(res->error.code);
	}
	return cli_flush_stdout();
}

bool run_interrupted(const dsb_call_result *res, int sig)
{
	return sig && res->is_error && res->error.code == DSB_E_ABORTED;
}

/*
 * A call a signal stopped: what its command said until then, as the model would have read it
 * had it ended so (DSH's text has no place for it: an aborted call is an error), or with --json
 * the error and the run beside it; then what happened, on stderr.
 */
static int print_interrupted(const dsb_call_result *res, bool json, int sig)
{
	bool ran = res->run.aborted;
	if (json || !ran)
		(void)run_print_result(res, json);
	else {
		dsb_error err = {0};
		_cleanup_free_ char *text = NULL;
		size_t len = 0;
		if (dsb_render_result(&res->run, true, &text, &len, &err) < 0)
			return cli_report(&err);
		(void)print_text(text, len);
		(void)cli_flush_stdout();
	}
	cli_interrupt_report(sig, ran);
	return 128 + sig;
}

int run_tool(const cli_global *global, const run_args *args, dsb_call_request *req)
{
	dsb_call_result res = {0};
	dsb_error err = {0};
	int sig;
	if (run_call(global, args, req, NULL, &res, &sig, &err) < 0)
		return run_report(&err, args->json);
	int status = run_interrupted(&res, sig) ? print_interrupted(&res, args->json, sig)
						: run_print_result(&res, args->json);
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
