/* SPDX-License-Identifier: MIT */
/*
 * The jobs piece: DSH's background jobs (dsh-compat §6.4, §6.5, §6.10; DSH's jobs-local registry
 *and tool-jobs tools). A front end that offers the bash tool's `run_in_background: true` and the
 * tools job_output, job_kill and job_list keeps one registry and drives it:
 *
 *	dsb_jobs *jobs = NULL;
 *	dsb_jobs_new(NULL, &jobs, &err);                  (one per front end: one server, one
 *registry) dsb_jobs_set_notice(jobs, deliver, server);       (completion notices, see below)
 *
 *	bash with run_in_background: true
 *		dsb_call_new(&setup, &call, &err);
 *		dsb_call_set_answerer(call, ask, ctx);    (an escalation is approved before it
 *starts) dsb_jobs_start(jobs, call, &req, &res, &err);   res.text: "started background job bash-1"
 *		dsb_call_result_done(&res); dsb_call_free(call);
 *	job_output	dsb_jobs_read(jobs, "bash-1", wait, timeout_ms, NULL, &reply, &err);
 *	job_kill	dsb_jobs_kill(jobs, "bash-1", &reply, &err);
 *	job_list	dsb_jobs_list(jobs, &reply, &err);
 *	                dsb_job_reply_done(&reply);
 *
 *	dsb_jobs_free(jobs);                              (kills what runs, waits for it)
 *
 * Every text is DSH's, byte for byte: the start's `started background job bash-N`, job_output's
 * new output since the previous read (or `(no new output)`) and its `[status: ...]` line,
 * job_kill's and job_list's texts, the completion notice and the errors.
 *
 * Lifecycle: dsb_jobs_new(); any number of starts, reads, kills and lists; dsb_jobs_free(), which
 * ends every job still running (SIGTERM to its process tree, SIGKILL after bash.graceMs) and
 * waits for each. Ids are `bash-N`, N counting from 1 per registry and never reset; a start
 * that fails takes none. Finished jobs stay listed and readable until the registry goes.
 *
 * Errors: as for a call, a tool call that fails (an unknown job, an empty job id, an invalid wait
 * timeout, the job limit, a refused escalation, an unavailable sandbox) is a result with
 * is_error set and "Error: MESSAGE" as its text; the functions return -code only when they
 * cannot make a result (a misused API, out of memory).
 *
 * Thread-safety: every function but dsb_jobs_free() may be called from any thread, at once; a
 * start runs its preparation (and the answerer callback) in the calling thread, and its command
 * in a thread of its own that lives as long as the command. dsb_jobs_free() comes once no other
 * call on the registry is under way. The notice callback is called from a job's thread, with no
 * lock held: it may call any dsb_jobs function but dsb_jobs_free().
 *
 * Memory: each job keeps its output as a foreground call does (dsh-compat §6.3): a tail of
 * bash.maxOutputBytes per stream in memory, the whole stream in a spill file. A finished job's
 * tails are released once job_output has read it to its end.
 */
#ifndef DSB_JOBS_H
#define DSB_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dsb/call.h>
#include <dsb/error.h>

/* DSH's defaults (jobs-local maxConcurrentJobsPerOwner, tool-jobs waitTimeoutMs and cap). */
#define DSB_JOBS_MAX_ACTIVE	     10
#define DSB_JOBS_WAIT_TIMEOUT_MS     30000
#define DSB_JOBS_MAX_WAIT_TIMEOUT_MS 600000

/* A registry's settings (DSH's configuration keys). Zero-initialise; 0 means DSH's default. */
typedef struct dsb_jobs_setup {
	/* Jobs running or stopping at once (maxConcurrentJobsPerOwner); 0: 10. */
	size_t max_active;
	/* How long job_output's wait waits without timeout_ms (waitTimeoutMs); 0: 30000. */
	uint64_t wait_timeout_ms;
	/* The cap on any wait (maxWaitTimeoutMs); 0: 600000. */
	uint64_t max_wait_timeout_ms;
} dsb_jobs_setup;

typedef struct dsb_jobs dsb_jobs;

/*
 * A new, empty registry with @setup (NULL: DSH's defaults; copied). DSB_E_INVALID_ARGS when
 * the wait default exceeds its cap (DSH refuses that configuration too), DSB_E_NO_MEMORY.
 * Free with dsb_jobs_free().
 */
DSB_API int dsb_jobs_new(const dsb_jobs_setup *setup, dsb_jobs **ret_jobs, dsb_error *reterr);

/*
 * Ends every job still running as job_kill does (no completion notice follows: nobody is left
 * to read it), waits until each has stopped and nothing it started runs, then frees @jobs and
 * everything it kept. NULL is fine; returns NULL. Not while another call on @jobs is under way.
 */
DSB_API dsb_jobs *dsb_jobs_free(dsb_jobs *jobs);

/*
 * What dsb_jobs_set_notice() installs: called once when job @job_id settles unless it was
 * already reported (read after it settled, waited on, or killed), with @text DSH's completion
 * notice, `background job bash-1 (bash: make test) finished [status: completed, exit code: 0].
 * Read its output with job_output.` Both strings are borrowed for the call.
 */
typedef void (*dsb_jobs_notice_fn)(const char *job_id, const char *text, void *userdata);

/*
 * Sets who is told of settled jobs (NULL, the default: nobody). DSH delivers the notice as a
 * user message of the session; where it goes is the front end's choice. Thread-safe; a notice
 * under way may still reach the previous callback.
 */
DSB_API void dsb_jobs_set_notice(dsb_jobs *jobs, dsb_jobs_notice_fn notice, void *userdata);

/*
 * The bash tool with run_in_background: true (dsh-compat §6.7 step 7). @req, a DSB_TOOL_BASH
 * request, is prepared through @call exactly as dsb_call_run() prepares it, in the calling thread:
 * its arguments, policy, an escalation approved (the call's answerer, before anything starts), its
 * working directory and DSH_* variables. Then, with fewer than max_active jobs running or
 * stopping, its command starts in a thread of its own, confined as a foreground command is but
 * with no timeout (@req->timeout_ms bounds only the approval), and *@ret is the result
 * `started background job bash-N`. A failure before the command was spawned is the failed call
 * (DSH's texts, as dsb_call_run() gives them, or `background job limit reached for this owner
 * (limit: 10); use job_kill to stop an unneeded job, wait for it to finish, then retry`,
 * DSB_E_JOB_LIMIT) and takes no id; a spawn that fails takes one, and the job settles
 * `killed` with the spawn's failure in its output, as DSH's does.
 *
 * @call is used up as by dsb_call_run() (a call runs once) and may be freed as soon as this
 * returns; dsb_call_cancel() of it reaches the preparation only, never the job (job_kill does).
 * Borrows @req. Returns 0 with *@ret filled (release with dsb_call_result_done()), or -code
 * when no result can be made (-DSB_E_INVALID_ARGS for a missing argument, a tool that is not
 * bash, or a call that ran).
 */
DSB_API int dsb_jobs_start(dsb_jobs *jobs, dsb_call *call, const dsb_call_request *req,
			   dsb_call_result *ret, dsb_error *reterr);

/* What job_output, job_kill and job_list give. Caller-owned: init with {0}. */
typedef struct dsb_job_reply {
	/* The tool call failed: @error holds the code and DSH's message, @text "Error: MESSAGE". */
	bool is_error;
	dsb_error error;
	/* What the model sees, NUL-terminated; output may hold NUL bytes, hence @text_len. */
	char *text;
	size_t text_len;
} dsb_job_reply;

/* Releases what @r holds and zeroes it. NULL is fine. */
DSB_API void dsb_job_reply_done(dsb_job_reply *r);

/*
 * A cancellable wait: a caller that may need to end a job_output wait early (see
 * dsb_jobs_abort_wait()) zero-initialises one per read and passes it; NULL: not cancellable.
 * Its field is the registry's, read and written under its lock.
 */
typedef struct dsb_jobs_waiter {
	bool aborted;
} dsb_jobs_waiter;

/*
 * job_output: the output job @job_id made since the previous read (stdout, then `[stderr]` and
 * stderr; a notice when some of it had already been dropped from memory; once the job settled,
 * DSH's sandbox notice of a denial or a runner failure, on every read), or `(no new output)`,
 * then on its own line the status: `[status: running]`, `[status: stopping]`, `[status:
 * completed, exit code: N]`, `[status: killed, signal: SIGTERM]`, `[status: killed, killed
 * before exit]`. With @wait, first waits until the job settles or *@timeout_ms passes (NULL: the
 * registry's wait_timeout_ms; capped at max_wait_timeout_ms); a wait that times out is no
 * error, the status then says `running`. Errors (as results): `invalid job_id: expected a
 * non-empty string, got ""`; `unknown job ID` (DSB_E_JOB_NOT_FOUND); with @wait, `invalid wait
 * timeout: expected a positive number of milliseconds, got N`; a wait ended through @waiter,
 * `wait aborted`. A read of a settled job reports it (no completion notice follows). Borrows
 * @job_id (NULL: -DSB_E_INVALID_ARGS), @timeout_ms and @waiter. Blocks only with @wait.
 */
DSB_API int dsb_jobs_read(dsb_jobs *jobs, const char *job_id, bool wait, const double *timeout_ms,
			  dsb_jobs_waiter *waiter, dsb_job_reply *ret, dsb_error *reterr);

/*
 * Ends the wait of the dsb_jobs_read() given @waiter, now or as soon as it begins: it returns
 * DSH's `wait aborted` (DSB_E_ABORTED) as its result and reads nothing. For a front end whose
 * caller cancelled the read (MCP's notifications/cancelled) or that is shutting down: a wait
 * may otherwise last up to max_wait_timeout_ms. Thread-safe.
 */
DSB_API void dsb_jobs_abort_wait(dsb_jobs *jobs, dsb_jobs_waiter *waiter);

/*
 * job_kill: cancels job @job_id as dsb_call_cancel() cancels a call (SIGTERM to the command's
 * process tree, SIGKILL after bash.graceMs) and returns at once with `requested cancellation of
 * job ID`; the job is `stopping` until it has stopped, then `killed`. A job that had settled:
 * `job ID had already finished [status: ...]`. Either way the job is reported (no completion
 * notice follows). Errors as dsb_jobs_read()'s. Borrows @job_id.
 */
DSB_API int dsb_jobs_kill(dsb_jobs *jobs, const char *job_id, dsb_job_reply *ret,
			  dsb_error *reterr);

/*
 * job_list: one line per job in start order, `bash-1 [bash] running — make test` (the status
 * without its detail, the label the command), or `(no background jobs)`.
 */
DSB_API int dsb_jobs_list(dsb_jobs *jobs, dsb_job_reply *ret, dsb_error *reterr);

#endif
