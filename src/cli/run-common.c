/* SPDX-License-Identifier: MIT */
/* What `bash`, `exec` and `fs` share: their options, and one call made with them. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../call/call.h"
#include "../core/core.h"
#include "../policy/policy.h"
#include "answer.h"
#include "run-common.h"

int run_parse_option(int c, const char *arg, cli_global *global, run_args *args)
{
	switch (c) {
	case 's':
		args->policy.session = arg;
		return 1;
	case 'm':
		args->policy.mode = arg;
		return 1;
	case 'w':
		args->policy.workspace = arg;
		return 1;
	case 'd':
		args->workdir = arg;
		return 1;
	case 't':
		args->timeout = arg;
		return 1;
	case 'b':
		args->backend = arg;
		return 1;
	case 'c':
		global->config_path = arg;
		return 1;
	case 'p':
		args->sandbox_permissions = arg;
		return 1;
	case 'J':
		args->justification = arg;
		return 1;
	case 'i':
		args->call_id = arg;
		return 1;
	default:
		return 0;
	}
}

const struct option run_options[] = {
	{"session", required_argument, NULL, 's'},
	{"mode", required_argument, NULL, 'm'},
	{"workspace", required_argument, NULL, 'w'},
	{"workdir", required_argument, NULL, 'd'},
	{"timeout", required_argument, NULL, 't'},
	{"backend", required_argument, NULL, 'b'},
	{"config", required_argument, NULL, 'c'},
	{"json", no_argument, NULL, 'j'},
	{"sandbox-permissions", required_argument, NULL, 'p'},
	{"justification", required_argument, NULL, 'J'},
	{"call-id", required_argument, NULL, 'i'},
	{"help", no_argument, NULL, 'h'},
	{0},
};

int run_parse_timeout(const char *s, uint64_t *ret_ms, dsb_error *err)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
	if (!end || *end || errno || v == 0) {
		/* The tool's text: the value as JSON, a number when it reads as one (spec §6.7). */
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
	/* The bash tool's order (spec §6.7 step 1): the escalation pairing after the timeout. */
	r = dsb_escalation_validate(args->sandbox_permissions, args->justification, err);
	if (r >= 0)
		r = cli_parse_mode(&args->policy, &req->mode, err);
	if (r >= 0)
		r = cli_check_config_option(global, err);
	return r;
}

int run_call(const cli_global *global, const run_args *args, dsb_call_request *req,
	     dsb_call_on_run_fn on_run, dsb_call_result *ret, dsb_error *err)
{
	req->session = args->policy.session;
	req->workspace = args->policy.workspace;
	req->workdir = args->workdir;
	req->sandbox_permissions = args->sandbox_permissions;
	req->justification = args->justification;
	req->call_id = args->call_id;

	dsb_call_result res = {.tool = req->tool};
	int r = check_options(global, args, req, err);
	if (r < 0) {
		/* Not made: a failed call all the same, for the model as for a person. */
		if (call_result_fail(&res, err, NULL) < 0)
			return r;
		*ret = res;
		return 0;
	}

	_cleanup_free_ char *cache = cli_cache_dir(global);
	dsb_call_setup setup = cli_setup(global);
	setup.cache_dir = cache;
	dsb_call *call = NULL;
	r = dsb_call_new(&setup, &call, err);
	if (r < 0)
		return r;
	dsb_call_set_answerer(call, cli_answer_terminal, NULL);
	dsb_call_set_on_run(call, on_run, NULL);
	r = dsb_call_run(call, req, ret, err);
	dsb_call_free(call);
	return r;
}

int run_report(const dsb_error *err, bool json)
{
	if (json) {
		strbuf sb = STRBUF_INIT;
		const char *name = dsb_code_dsh_error(err->code);
		int r = strbuf_printf(&sb,
				      "{\"error\":{\"name\":\"%s\",\"code\":\"%s\",\"message\":",
				      name ? name : "Error", dsb_code_name(err->code));
		if (r >= 0)
			r = json_quote_append(&sb, err->message, strlen(err->message));
		if (r >= 0 && strbuf_puts(&sb, "}}\n") >= 0)
			fputs(sb.buf, stdout);
		strbuf_done(&sb);
	} else
		printf("Error: %s", err->message);
	(void)cli_flush_stdout();
	return dsb_code_exit_status(err->code);
}

int run_print_result(const dsb_call_result *res, bool json)
{
	if (json) {
		dsb_error err = {0};
		_cleanup_free_ char *text = NULL;
		if (dsb_call_render_json(res, &text, &err) < 0)
			return run_report(&err, json);
		printf("%s\n", text);
	} else
		(void)fwrite(res->text, 1, res->text_len, stdout);
	if (res->is_error) {
		(void)cli_flush_stdout();
		return dsb_code_exit_status(res->error.code);
	}
	return cli_flush_stdout();
}
