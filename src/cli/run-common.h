/* SPDX-License-Identifier: MIT */
/* What `bash`, `exec` and `fs` share: their options, and one call made with them. */
#ifndef DSB_CLI_RUN_COMMON_H
#define DSB_CLI_RUN_COMMON_H

#include <stdint.h>

#include "cli.h"

typedef struct run_args {
	cli_policy_args policy;
	const char *workdir;
	const char *timeout;
	const char *backend;
	const char *network;		 /* --network full|none|allowlist: over network.access */
	const char *sandbox_permissions; /* --sandbox-permissions MODE: a one-shot escalation */
	const char *justification;
	const char *call_id;
	bool json;
} run_args;

/* The options of @args that a call takes. */
run_args run_args_of(const cli_args *args);

/*
 * --timeout DURATION: a whole number of milliseconds (as DSH's timeoutMs), or of the unit after
 * it, ms, s or m; positive, or 0 (none) when @zero_is_none. INVALID_ARGS naming the option.
 */
int run_parse_timeout(const char *s, bool zero_is_none, uint64_t *ret_ms, dsb_error *err);

/*
 * Makes the call @req (its tool and the tool's arguments set) with the options of @args, an
 * escalation asked of approval.answerer's program, else on the terminal. The options the CLI
 * parses itself are checked where DSH's tool checks its arguments: the tool's own checks, then
 * --timeout, --backend and --network, the escalation pairing, --mode and --config, so that the
 * first failure is the same whoever checks it. *@ret is the call's result (release it with
 * dsb_call_result_done()), a failure to start it included; @on_run (may be NULL) as
 * dsb_call_set_on_run(). A SIGINT, SIGTERM or SIGHUP while the call runs cancels it
 * (interrupt.c): *@ret_signal is that signal, else 0. 0, or -code with @err when no result
 * could be made.
 */
int run_call(const cli_global *global, const run_args *args, dsb_call_request *req,
	     dsb_call_on_run_fn on_run, dsb_call_result *ret, int *ret_signal, dsb_error *err);

/* The call @res was cancelled by the signal @sig that run_call() caught (0: none). */
bool run_interrupted(const dsb_call_result *res, int sig);

/*
 * The tool errors' one reporter: a failure with no result to show, printed as the failed result
 * it makes (run_print_result()): what the model sees, "Error: MESSAGE", or with @json its JSON,
 * on stdout. Returns the exit status of its code.
 */
int run_report(const dsb_error *err, bool json);

/*
 * The call's result on stdout: its text (which may hold NUL bytes) or, with @json, its JSON. On
 * a terminal the text is made visible (visible_escape(): controls other than newline and tab
 * shown as escapes), so a command's output cannot drive the terminal, and ends with a newline;
 * elsewhere it is exact. Returns the exit status: 0, the failed call's code's, or 1 when stdout
 * could not be written.
 */
int run_print_result(const dsb_call_result *res, bool json);

/*
 * A model's tool (bash, fs): run_call(), then the result or the failure printed. The exit
 * status; after a signal, what the command said until then, a line on stderr saying so, and 128
 * + the signal.
 */
int run_tool(const cli_global *global, const run_args *args, dsb_call_request *req);

/*
 * `explain`: the exec call @req prepared and confined as run_call() would make it, with the same
 * options checked in the same order, and nothing run (dsb_call_explain()). Each decision is told
 * to @told (may be NULL); *@ret_json is the explanation. 0, or -code with @err.
 */
int run_explain(const cli_global *global, const run_args *args, dsb_call_request *req,
		dsb_call_debug_fn told, char **ret_json, dsb_error *err);

#endif
