/* SPDX-License-Identifier: MIT */
/*
 * Internals of the call piece.
 *
 *   tool.c     the tools' names
 *   setup.c    where a front end's configuration comes from, and one call's policy with the
 *              protected paths a front end adds (dsh-compat §2.2)
 *   explain.c  each decision of a call told (explain, a front end's -v), as lines and JSON
 *   prepare.c  a call's preparation in DSH's order: arguments, escalation pairing, policy,
 *              approval inside a turn, working directory, DSH_* variables, provider (§6.7, §7.4)
 *   call.c     the dsb_call object, its cancellation, and each tool's run
 *   result.c   the result as the model sees it: texts, fs error mapping, JSON (§6.8, §7.4)
 *   observe.c  DSH's read-before-write observation rule for a front end's session
 *   refusals.c a session's record of what the sandbox refused a call, read back for the
 *              escalation that retries it
 */
#ifndef DSB_CALL_CALL_H
#define DSB_CALL_CALL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <dsb/call.h>
#include <dsb/confine.h>
#include <dsb/session.h>

#include "../confine/confine.h"
#include "../core/core.h"
#include "../policy/policy.h"

struct dsb_call {
	char *config_path; /* copies of the dsb_call_setup */
	char *store_path;
	char *cache_dir;
	dsb_limits limits;     /* the setup's, when it gave any (limits.set) */
	char **writable_roots; /* the setup's --writable roots, or NULL */
	dsb_answerer_fn answer;
	void *answer_userdata;
	dsb_deferral_fn defer;
	void *defer_userdata;
	dsb_call_on_run_fn on_run;
	void *on_run_userdata;
	dsb_call_on_output_fn on_output;
	void *on_output_userdata;
	dsb_observations *observations; /* borrowed; NULL: DSH's rule is not applied */
	dsb_call_debug_fn debug;	/* NULL: no decision is told */
	void *debug_userdata;
	jw *explain_json; /* dsb_call_explain(): the explanation's object, open */
	bool dry;	  /* dsb_call_explain(): prepare and confine, make nothing */
	/* An eventfd that polls readable once the call is cancelled (never read, so it stays). */
	int cancel_fd;
	atomic_bool cancelled;
	bool ran;	     /* dsb_call_run() was called: a call runs once */
	bool capture;	     /* exec: the output captured, not the caller's stdio */
	char *approval_note; /* why nobody decided its escalation (dsb_call_approval_note()) */
};

/* --- setup.c -------------------------------------------------------------------------------- */

/*
 * The configuration file @setup reads: its path in *@ret_path (a new string), or NULL when
 * there is none (defaults and environment only). -EINVAL for an empty path, -ENOMEM.
 */
int call_config_file(const dsb_call_setup *setup, char **ret_path);

/* @call's setup as the public struct (its strings borrowed from @call). */
dsb_call_setup call_setup(const dsb_call *call);

/*
 * dsb_call_resolve(), also handing out the store and the session the policy was read from
 * (NULL when no session was named), so that a call going on to append to the session does not
 * open and fold it a second time. @ret_store and @ret_session may be NULL (then both are).
 */
int call_resolve(const dsb_call_setup *setup, const char *session, dsb_mode mode,
		 const char *workspace, dsb_config **ret_cfg, dsb_exec_policy *ret_policy,
		 dsb_store **ret_store, dsb_session **ret_session, dsb_error *reterr);

/* --- prepare.c ------------------------------------------------------------------------------ */

/*
 * The tool's own argument checks, first failure wins, in DSH's order (dsh-compat §6.7 step 1,
 * §7.4): a blank command; a blank file_path (FS_NOT_FOUND), an edit's blank or unchanged
 * old_string. The escalation pairing (dsb_escalation_validate()) comes next, after what a front end
 * parses of its own in between. DSB_E_INVALID_ARGS (or FS_NOT_FOUND) with DSH's texts.
 */
int call_check_arguments(const dsb_call_request *req, dsb_error *reterr);

/* Everything one call needs once prepared. */
typedef struct call_context {
	dsb_config *cfg;
	dsb_exec_policy policy; /* the mode granted by an approved escalation, if one was */
	dsb_store *store;
	dsb_session *session;
	dsb_provider *provider; /* NULL for danger-full-access */
	char *workdir;		/* the workdir resolved against the workspace root */
	char **dsh_env;
	int64_t opened_turn; /* > 0: the turn this call opened, to close when done */
} call_context;

/*
 * Prepares @req (dsh-compat §6.7 steps 1-6, §7.4 resolvePolicy): its arguments and escalation
 * pairing checked, its policy resolved, an escalation approved through the session before anything
 * runs (the call opening its own turn when the session has none open), its working directory,
 * the DSH_* variables and the provider. Fills @ctx, also on failure (release it with
 * call_context_done()).
 */
int call_prepare(dsb_call *call, const dsb_call_request *req, call_context *ctx, dsb_error *reterr);

/*
 * Closes the turn call_prepare() opened, if it did (turn/end, reason completed): where the tool
 * call ends before what it started (a background job), while @ctx still serves the job.
 */
void call_context_end_turn(call_context *ctx);

/* Closes the turn call_prepare() opened (turn/end, reason completed) and releases @ctx. */
void call_context_done(call_context *ctx);

/* What the person approving sees of an exec: the whole command, as typed. New string. */
char *call_shown_argv(char *const *argv);

/* --- refusals.c ----------------------------------------------------------------------------- */

/*
 * Appends the sandbox/refusals event of @run, the run of @req whose command reads @subject
 * (the command, or an exec's call_shown_argv()), to @session when it has one and the run's
 * evidence refused something; else does nothing.
 */
int call_log_refusals(dsb_session *session, const dsb_call_request *req, const char *subject,
		      const dsb_run_result *run, dsb_error *reterr);

/*
 * What the call an escalation of @tool on @subject retries was refused: 1 with its lines in
 * *@ret_note (a new string) when the session's last sandbox/refusals event is of the same tool
 * and subject, else 0.
 */
int call_refused_before(dsb_session *session, const char *tool, const char *subject,
			char **ret_note, dsb_error *reterr);

/* --- observe.c ------------------------------------------------------------------------------ */

/*
 * The write, edit and read tools under @obs (DSH's fs-observation-policy, dsh-compat §7.4): the
 * target's observation decides the mutation's condition, and what succeeds is recorded.
 * Fill @res as run_write(), run_edit(), run_read() do.
 */
int observe_write(dsb_observations *obs, const dsb_call_request *req, call_context *ctx,
		  const char *content, size_t len, dsb_call_result *res, dsb_error *reterr);
int observe_edit(dsb_observations *obs, const dsb_call_request *req, call_context *ctx,
		 dsb_call_result *res, dsb_error *reterr);
int observe_read(dsb_observations *obs, const dsb_call_request *req, call_context *ctx,
		 dsb_call_result *res, dsb_error *reterr);

/* --- explain.c ------------------------------------------------------------------------------ */

/* Whether @call tells its decisions (a debug callback, or dsb_call_explain()). */
bool call_explaining(const dsb_call *call);

/* Where @call tells its decisions. */
explain_sink call_sink(const dsb_call *call);

/*
 * Tells @call's sink the policy @ctx resolved for @req: the configuration and where it came
 * from, the mode and why (@escalated: an approved escalation granted it), the workspace and
 * why, the working directory, the session and the writable roots.
 */
void call_explain_policy(const dsb_call *call, const dsb_call_request *req, const call_context *ctx,
			 bool escalated);

/* Tells @call's sink the backend @ctx's provider confines with, and why (none: unconfined). */
void call_explain_backend(const dsb_call *call, const dsb_call_request *req, call_context *ctx);

/* What call_explain_confined() is given. */
typedef struct call_explain_run {
	const dsb_call *call;
	dsb_provider *provider;
} call_explain_run;

/* exec_opts.on_confined: tells the call's sink how the run is confined (@userdata: a
 * call_explain_run). */
void call_explain_confined(void *userdata, const dsb_exec_policy *policy, const dsb_confined *c);

/* --- result.c ------------------------------------------------------------------------------- */

/*
 * Makes @res the failed call @err, for the model: "Error: MESSAGE", a fence denial mapped as
 * mapError() does under @policy (NULL or unresolved: not mapped) with the escalation hint when
 * the tool escalates, a stale version remedied (dsh-compat §7.4). -ENOMEM.
 */
int call_result_fail(dsb_call_result *res, const dsb_error *err, const dsb_exec_policy *policy);

/* The write tool's confirmation in @res->text (dsh-compat §7.4). -ENOMEM. */
int call_result_write(dsb_call_result *res);

/* The edit tool's confirmation in @res->text (dsh-compat §7.4). -ENOMEM. */
int call_result_edit(dsb_call_result *res);

#endif
