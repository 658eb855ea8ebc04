/* SPDX-License-Identifier: MIT */
/*
 * The background-job registry (DSH's LocalJobRegistry with tool-jobs' tools over it, for the
 * bash kind): ids per kind counted from 1 and taken only by a start that succeeded, a limit on
 * the jobs running or stopping, consuming reads, waits, kills that settle as killed, completion
 * notices unless the job was reported, and an end that kills and waits for everything.
 *
 * Each job runs its command through the executor in a thread of its own, for as long as the
 * command runs: the executor's spawn ties the command's tree to the thread that spawned it (the
 * parent-death signal of the child and of bwrap's --die-with-parent follow the spawning thread,
 * not the process), and the calling thread of a start is a front end's, gone when the tool call
 * is answered. The start waits for the thread's spawn, so that a failure before it (no sandbox,
 * no memory) is the start's error and takes no id, as DSH's synchronous confine() does.
 *
 * One mutex guards the registry and every job's state; a job's output has its own lock in the
 * executor (exec_live), taken after the registry's and never the other way round, so a command
 * that writes never waits for a reader of the registry. One condition variable (on the monotonic
 * clock) carries every change: spawn attempted, id given, job settled.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../call/call.h"
#include "../exec/exec.h"
#include "jobs.h"

/* The only kind this registry starts: DSH's bash tool's. */
#define JOB_KIND "bash"

typedef struct job job;

struct job {
	job *next; /* start order */
	dsb_jobs *jobs;
	char id[sizeof(JOB_KIND "-") + 20];
	char *label; /* the command, as given */

	job_status status;
	char *detail;	  /* the status's detail once settled, or NULL */
	bool reported;	  /* read after it settled, waited on, or killed: no notice */
	unsigned waiters; /* reads waiting for it to settle */
	bool kill_requested;

	/* The start's handshake with the thread. */
	int spawned;	 /* 0: not yet attempted; 1: attempted (takes an id); -1: failed before */
	dsb_error error; /* why it failed before the spawn */
	bool registered; /* it has its id: the thread may settle it */

	dsb_call *cancel;  /* a call used for its cancellation: dsb_call_cancel() ends the tree */
	call_context ctx;  /* the prepared call; the thread's alone once it runs */
	exec_live *live;   /* its output; NULL once a settled job was read to its end */
	char *spawn_note;  /* "spawn failed: ...", delivered once through a read's stderr */
	bool spawn_failed; /* the spawn was attempted and failed */
	job_facts facts;   /* once settled */
	char *protected_note;
	char *network_note;
	char *limit_note;
	char *undone_note;

	pthread_t thread;
	bool thread_running; /* created and not yet joined */
	bool thread_done;    /* nothing left to do but return: joining it cannot block */
};

struct dsb_jobs {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	dsb_jobs_setup setup;
	job *head, *tail;
	unsigned long long counter; /* the bash kind's: never reset */
	size_t pending;		    /* starts past the limit check, not yet given an id */
	bool closing;
	dsb_jobs_notice_fn notice;
	void *notice_userdata;
};

static job *job_free(job *j)
{
	if (!j)
		return NULL;
	call_context_done(&j->ctx);
	dsb_call_free(j->cancel);
	exec_live_free(j->live);
	free(j->label);
	free(j->detail);
	free(j->spawn_note);
	free(j->protected_note);
	free(j->network_note);
	free(j->limit_note);
	free(j->undone_note);
	free(j);
	return NULL;
}

int dsb_jobs_new(const dsb_jobs_setup *setup, dsb_jobs **ret_jobs, dsb_error *reterr)
{
	if (!ret_jobs)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_jobs_new: missing argument");
	dsb_jobs_setup s = setup ? *setup : (dsb_jobs_setup){0};
	if (!s.max_active)
		s.max_active = DSB_JOBS_MAX_ACTIVE;
	if (!s.wait_timeout_ms)
		s.wait_timeout_ms = DSB_JOBS_WAIT_TIMEOUT_MS;
	if (!s.max_wait_timeout_ms)
		s.max_wait_timeout_ms = DSB_JOBS_MAX_WAIT_TIMEOUT_MS;
	/* tool-jobs' own check of its configuration, in its words. */
	if (s.wait_timeout_ms > s.max_wait_timeout_ms)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"tool-jobs: waitTimeoutMs (%llu) exceeds maxWaitTimeoutMs (%llu)",
				(unsigned long long)s.wait_timeout_ms,
				(unsigned long long)s.max_wait_timeout_ms);

	dsb_jobs *jobs = calloc(1, sizeof(*jobs));
	if (!jobs)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	pthread_condattr_t attr;
	bool ok = pthread_condattr_init(&attr) == 0;
	/* A wait's deadline must not move with the wall clock. */
	ok = ok && pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
	     pthread_cond_init(&jobs->changed, &attr) == 0;
	(void)pthread_condattr_destroy(&attr);
	if (!ok) {
		free(jobs);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "cannot make the registry's condition");
	}
	if (pthread_mutex_init(&jobs->lock, NULL) != 0) {
		(void)pthread_cond_destroy(&jobs->changed);
		free(jobs);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "cannot make the registry's lock");
	}
	jobs->setup = s;
	*ret_jobs = jobs;
	return 0;
}

void dsb_jobs_set_notice(dsb_jobs *jobs, dsb_jobs_notice_fn notice, void *userdata)
{
	if (!jobs)
		return;
	(void)pthread_mutex_lock(&jobs->lock);
	jobs->notice = notice;
	jobs->notice_userdata = userdata;
	(void)pthread_mutex_unlock(&jobs->lock);
}

/* job_kill's effect on a job not yet settled (DSH's kill(): cancel first, then stopping). */
static void request_kill(job *j)
{
	dsb_call_cancel(j->cancel);
	j->kill_requested = true;
	j->status = JOB_STOPPING;
	j->reported = true;
}

dsb_jobs *dsb_jobs_free(dsb_jobs *jobs)
{
	if (!jobs)
		return NULL;
	/*
	 * DSH's disposeAll(): no notice goes out any more (nobody is left to read it), every live
	 * job is killed and reported, and the registry ends once each has settled. Joining the
	 * threads waits for the executor's own end of each job, which kills what the command
	 * left running and reaps it: when this returns, no process of any job is left.
	 */
	(void)pthread_mutex_lock(&jobs->lock);
	jobs->closing = true;
	for (job *j = jobs->head; j; j = j->next)
		if (!job_status_terminal(j->status))
			request_kill(j);
	(void)pthread_mutex_unlock(&jobs->lock);
	for (job *j = jobs->head; j; j = j->next)
		if (j->thread_running)
			(void)pthread_join(j->thread, NULL);
	for (job *j = jobs->head, *next; j; j = next) {
		next = j->next;
		job_free(j);
	}
	(void)pthread_mutex_destroy(&jobs->lock);
	(void)pthread_cond_destroy(&jobs->changed);
	free(jobs);
	return NULL;
}

/* The job named @id, or NULL. Under the lock. */
static job *find(const dsb_jobs *jobs, const char *id)
{
	for (job *j = jobs->head; j; j = j->next)
		if (strcmp(j->id, id) == 0)
			return j;
	return NULL;
}

/* Joins the threads of jobs that are done with them, so a long-lived registry holds none. */
static void reap_threads(dsb_jobs *jobs)
{
	for (job *j = jobs->head; j; j = j->next)
		if (j->thread_running && j->thread_done) {
			(void)pthread_join(j->thread, NULL);
			j->thread_running = false;
		}
}

/* String(error) of a failed spawn, as DSH's note quotes it. New string or NULL. */
static char *spawn_error_string(const dsb_error *err)
{
	char *s = NULL;
	/* A runner's spawn failure already carries String(error) after "Runner failure: ". */
	const char *detail = err->code == DSB_E_SANDBOX_UNAVAILABLE
				     ? strstr(err->message, "Runner failure: ")
				     : NULL;
	if (detail)
		return strdup(detail + strlen("Runner failure: "));
	/* Node's spawn errors are Errors: "Error: spawn bash ENOENT". */
	return asprintf(&s, "Error: %s", err->message) < 0 ? NULL : s;
}

/* exec_opts.on_spawn: in the job's thread, once the command was spawned or failed to be. */
static void on_spawn(void *userdata, int r, const dsb_error *err)
{
	job *j = userdata;
	dsb_jobs *jobs = j->jobs;
	_cleanup_free_ char *what = r < 0 && err ? spawn_error_string(err) : NULL;
	char *note = NULL;
	if (what && asprintf(&note, "spawn failed: %s", what) < 0)
		note = NULL;

	(void)pthread_mutex_lock(&jobs->lock);
	if (r < 0) {
		/* A start whose spawn fails still takes its id, as DSH's does (dsh-compat §6.5). */
		j->spawn_failed = true;
		j->spawn_note = note;
		j->facts.runner_failed = err && err->code == DSB_E_SANDBOX_UNAVAILABLE;
	}
	j->spawned = 1;
	(void)pthread_cond_broadcast(&jobs->changed);
	(void)pthread_mutex_unlock(&jobs->lock);
}

/* tool-bash's processOutcome(): killed (with the signal when there is one) or completed. */
static int settle_outcome(job *j, int r, const dsb_run_result *res, const exec_opts *o,
			  const dsb_error *err)
{
	char *detail = NULL;
	int n;
	if (r < 0 && j->spawn_failed) {
		j->status = JOB_KILLED;
		detail = strdup("killed before exit");
		n = detail ? 0 : -1;
	} else if (r < 0) {
		/* The executor failed while the command ran (it was ended): DSH's `failed`. */
		j->status = JOB_FAILED;
		detail = strdup(err->message);
		n = detail ? 0 : -1;
	} else if (j->kill_requested || o->aborted || res->signal != 0) {
		/* Any death by a signal is killed, also a command's signal to itself (§6.5). */
		j->status = JOB_KILLED;
		const char *name = render_signal_name(res->signal);
		if (name)
			n = asprintf(&detail, "signal: %s", name);
		else if (res->signal)
			n = asprintf(&detail, "signal: %d", res->signal);
		else
			n = (detail = strdup("killed before exit")) ? 0 : -1;
	} else {
		j->status = JOB_COMPLETED;
		n = asprintf(&detail, "exit code: %d", res->exit_code);
	}
	if (n < 0)
		return -ENOMEM;
	j->detail = detail;
	return 0;
}

/* Settles @j with the executor's outcome (under the lock). */
static void settle(job *j, int r, dsb_run_result *res, const exec_opts *o, const dsb_error *err)
{
	if (settle_outcome(j, r, res, o, err) < 0) {
		/* No memory for the detail: the status alone still tells the truth. */
		j->status = r < 0 && !j->spawn_failed ? JOB_FAILED : JOB_KILLED;
		j->detail = NULL;
	}
	/* Sandbox facts exist for a confined mode only; danger-full-access stamps none (§6.5). */
	dsb_mode mode = j->ctx.policy.mode;
	j->facts.sandboxed = mode != DSB_MODE_DANGER_FULL_ACCESS;
	j->facts.mode = mode;
	if (r >= 0) {
		j->facts.runner_failed = o->runner_failed;
		j->facts.denied = !o->runner_failed && res->denied;
		/* The evidence's lines stand where the stderr's protected path would. */
		j->protected_note = res->refusal_note ? TAKE_PTR(res->refusal_note)
						      : TAKE_PTR(res->protected_note);
		j->facts.protected_note = j->protected_note;
		j->network_note = TAKE_PTR(res->network_note);
		j->facts.network_note = j->network_note;
		j->limit_note = TAKE_PTR(res->limit_note);
		j->facts.limit_note = j->limit_note;
		j->undone_note = TAKE_PTR(res->undone_note);
		j->facts.undone_note = j->undone_note;
	}
	/* A settlement someone waits for is reported to them: no notice (LocalJobRegistry). */
	if (j->waiters > 0)
		j->reported = true;
}

static void *job_main(void *arg)
{
	job *j = arg;
	dsb_jobs *jobs = j->jobs;
	dsb_run_request run = {
		.command = j->label,
		.workdir = j->ctx.workdir,
		.dsh_env = j->ctx.dsh_env,
	};
	exec_opts o = EXEC_OPTS_INIT;
	o.cancel_fd = j->cancel->cancel_fd;
	o.live = j->live;
	o.on_spawn = on_spawn;
	o.userdata = j;
	dsb_run_result res = {0};
	dsb_error err = {0};
	int r = exec_run(j->ctx.provider, j->ctx.cfg, &j->ctx.policy, &run, &o, &res, &err);

	_cleanup_(strbuf_done) strbuf notice = STRBUF_INIT;
	dsb_jobs_notice_fn tell = NULL;
	void *userdata = NULL;
	(void)pthread_mutex_lock(&jobs->lock);
	if (j->spawned == 0) {
		/* Nothing was spawned: the start fails with this, and the job never was. */
		j->spawned = -1;
		j->error = err;
	} else {
		while (!j->registered)
			(void)pthread_cond_wait(&jobs->changed, &jobs->lock);
		settle(j, r, &res, &o, &err);
		if (!j->reported && !jobs->closing && jobs->notice &&
		    job_notice_append(&notice, j->id, JOB_KIND, j->label, j->status, j->detail) >=
			    0) {
			tell = jobs->notice;
			userdata = jobs->notice_userdata;
		}
	}
	(void)pthread_cond_broadcast(&jobs->changed);
	(void)pthread_mutex_unlock(&jobs->lock);

	dsb_run_result_done(&res);
	/* Announced last, with no lock held: the front end may read or list at once. */
	if (tell)
		tell(j->id, notice.buf, userdata);

	(void)pthread_mutex_lock(&jobs->lock);
	j->thread_done = true;
	(void)pthread_mutex_unlock(&jobs->lock);
	return NULL;
}

/* @res the failed start @err (as dsb_call_run() makes a failed call). */
static int start_fail(dsb_call_result *res, const dsb_error *err, const call_context *ctx,
		      dsb_error *reterr)
{
	bool prepared = res->prepared;
	dsb_call_result_done(res);
	*res = (dsb_call_result){.tool = DSB_TOOL_BASH, .prepared = prepared};
	if (call_result_fail(res, err, &ctx->policy) < 0) {
		if (reterr)
			*reterr = *err;
		return -(int)err->code;
	}
	return 0;
}

/* How many jobs run or stop, with the starts under way. Under the lock. */
static size_t active_count(const dsb_jobs *jobs)
{
	size_t n = jobs->pending;
	for (const job *j = jobs->head; j; j = j->next)
		if (j->status == JOB_RUNNING || j->status == JOB_STOPPING)
			n++;
	return n;
}

/*
 * The prepared start (dsh-compat §6.7 step 7, jobs-local start()): the limit, then the command
 * spawned in its thread, then the id. *@j is the new job on success. Fills @err otherwise.
 */
static int start_job(dsb_jobs *jobs, const dsb_call_request *req, call_context *ctx, job **ret,
		     dsb_error *err)
{
	(void)pthread_mutex_lock(&jobs->lock);
	reap_threads(jobs);
	if (jobs->closing) {
		(void)pthread_mutex_unlock(&jobs->lock);
		return dsb_fail(err, DSB_E_INVALID_ARGS, "dsb_jobs_start: the registry is ending");
	}
	if (active_count(jobs) >= jobs->setup.max_active) {
		size_t limit = jobs->setup.max_active;
		(void)pthread_mutex_unlock(&jobs->lock);
		return dsb_fail(
			err, DSB_E_JOB_LIMIT,
			"background job limit reached for this owner (limit: %zu); use "
			"job_kill to stop an unneeded job, wait for it to finish, then retry",
			limit);
	}
	jobs->pending++;
	(void)pthread_mutex_unlock(&jobs->lock);

	int r;
	job *j = calloc(1, sizeof(*j));
	if (!j || !(j->label = strdup(req->command)) || !(j->live = exec_live_new()))
		r = dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
	else
		r = dsb_call_new(NULL, &j->cancel, err);
	if (r >= 0) {
		j->jobs = jobs;
		j->status = JOB_RUNNING;
		j->ctx = *ctx;
		*ctx = (call_context){0};
		int e = pthread_create(&j->thread, NULL, job_main, j);
		if (e != 0) {
			/* The prepared call goes back to the caller, who releases it. */
			*ctx = j->ctx;
			j->ctx = (call_context){0};
			r = dsb_fail_errno(err, DSB_E_IO, e, "cannot start the job's thread");
		}
	}

	(void)pthread_mutex_lock(&jobs->lock);
	if (r >= 0) {
		j->thread_running = true;
		while (j->spawned == 0)
			(void)pthread_cond_wait(&jobs->changed, &jobs->lock);
		if (j->spawned < 0) {
			*err = j->error;
			r = -(int)err->code;
		} else {
			/* The id is taken only now: a start that failed consumed none (§1.9). */
			(void)snprintf(j->id, sizeof(j->id), JOB_KIND "-%llu", ++jobs->counter);
			j->registered = true;
			if (jobs->tail)
				jobs->tail->next = j;
			else
				jobs->head = j;
			jobs->tail = j;
			(void)pthread_cond_broadcast(&jobs->changed);
		}
	}
	jobs->pending--;
	(void)pthread_mutex_unlock(&jobs->lock);

	if (r < 0) {
		if (j && j->thread_running)
			(void)pthread_join(j->thread, NULL);
		job_free(j);
		return r;
	}
	*ret = j;
	return 0;
}

int dsb_jobs_start(dsb_jobs *jobs, dsb_call *call, const dsb_call_request *req,
		   dsb_call_result *ret, dsb_error *reterr)
{
	if (!jobs || !call || !req || !ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_jobs_start: missing argument");
	if (req->tool != DSB_TOOL_BASH)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_jobs_start: only the bash tool runs in the background");
	if (call->ran)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_jobs_start: a call runs once");
	call->ran = true;

	dsb_call_result res = {.tool = DSB_TOOL_BASH};
	dsb_error err = {0};
	call_context ctx;
	job *j = NULL;
	/* Approval comes before everything of the background path, as in DSH (§6.7 step 3). */
	int r = call_prepare(call, req, &ctx, &err);
	if (r >= 0) {
		res.prepared = true;
		/* The tool call ends with this start, and so does the turn it opened. */
		call_context_end_turn(&ctx);
		ctx.session = dsb_session_free(ctx.session);
		ctx.store = dsb_store_free(ctx.store);
		if (call->on_run)
			call->on_run(call->on_run_userdata);
		r = atomic_load(&call->cancelled)
			    ? dsb_fail(&err, DSB_E_ABORTED, "tool call aborted")
			    : start_job(jobs, req, &ctx, &j, &err);
	}
	if (r >= 0) {
		char *text = NULL;
		int n = asprintf(&text, "started background job %s", j->id);
		if (n < 0)
			r = dsb_fail(&err, DSB_E_NO_MEMORY, "out of memory");
		else {
			res.text = text;
			res.text_len = (size_t)n;
		}
	}
	if (r < 0 && (r = start_fail(&res, &err, &ctx, reterr)) < 0) {
		call_context_done(&ctx);
		return r;
	}
	call_context_done(&ctx);
	*ret = res;
	return 0;
}

void dsb_job_reply_done(dsb_job_reply *r)
{
	if (!r)
		return;
	free(r->text);
	*r = (dsb_job_reply){0};
}

/* @ret the text in @sb. -ENOMEM. */
static int reply_text(dsb_job_reply *ret, strbuf *sb, dsb_error *reterr)
{
	size_t len = sb->len;
	char *text = sb->buf ? strbuf_take(sb) : strdup("");
	if (!text)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	*ret = (dsb_job_reply){.text = text, .text_len = len};
	return 0;
}

/*
 * @ret the failed tool call: "Error: " and @fmt's text in full (it may quote a long id, which
 * dsb_error's message would cut), @code with the message as far as it fits.
 */
static int reply_fail(dsb_job_reply *ret, dsb_error *reterr, dsb_code code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int reply_fail(dsb_job_reply *ret, dsb_error *reterr, dsb_code code, const char *fmt, ...)
{
	_cleanup_free_ char *message = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&message, fmt, ap);
	va_end(ap);
	char *text = NULL;
	if (n < 0 || asprintf(&text, "Error: %s", message) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	*ret = (dsb_job_reply){.is_error = true, .text = text, .text_len = strlen(text)};
	(void)dsb_fail(&ret->error, code, "%s", message);
	return 0;
}

/*
 * tool-jobs' validateJobId(), then the registry's expect(): the job named @id under the lock,
 * or NULL with @ret the failed call. -code when no reply could be made.
 */
static int lookup(dsb_jobs *jobs, const char *id, job **ret_job, dsb_job_reply *ret,
		  dsb_error *reterr)
{
	*ret_job = NULL;
	if (!*id)
		return reply_fail(ret, reterr, DSB_E_INVALID_ARGS,
				  "invalid job_id: expected a non-empty string, got \"\"");
	*ret_job = find(jobs, id);
	if (*ret_job)
		return 0;
	return reply_fail(ret, reterr, DSB_E_JOB_NOT_FOUND, "unknown job %s", id);
}

/* Waits until @j settles, @timeout_ms (> 0, finite) passes or @w is aborted. Under the lock. */
static void wait_settled(dsb_jobs *jobs, job *j, double timeout_ms, const dsb_jobs_waiter *w)
{
	/* A configured cap may be any number of milliseconds: a century is forever enough. */
	const double max_ms = 100.0 * 365 * 24 * 3600 * 1000;
	uint64_t ns = (uint64_t)((timeout_ms < max_ms ? timeout_ms : max_ms) * 1e6);
	struct timespec deadline;
	(void)clock_gettime(CLOCK_MONOTONIC, &deadline);
	ns += (uint64_t)deadline.tv_nsec;
	deadline.tv_sec += (time_t)(ns / 1000000000u);
	deadline.tv_nsec = (long)(ns % 1000000000u);
	j->waiters++;
	while (!job_status_terminal(j->status) && !(w && w->aborted))
		if (pthread_cond_timedwait(&jobs->changed, &jobs->lock, &deadline) == ETIMEDOUT)
			break;
	j->waiters--;
}

/* The read body of @j (consuming its new output) into @sb. Under the lock. -ENOMEM. */
static int read_body(job *j, strbuf *sb)
{
	exec_delta d = {0};
	if (j->live) {
		int r = exec_live_read(j->live, &d);
		if (r < 0)
			return r;
	}
	/* A failed spawn made no output: its note is the stderr of one read (bash-local). */
	_cleanup_free_ char *note = NULL;
	const char *err = d.err;
	size_t err_len = d.err_len;
	if (err_len == 0 && j->spawn_note) {
		note = TAKE_PTR(j->spawn_note);
		err = note;
		err_len = strlen(note);
	}
	bool settled = job_status_terminal(j->status);
	job_read rd = {
		.out = d.out,
		.out_len = d.out_len,
		.err = err,
		.err_len = err_len,
		.lossy = d.lossy,
		.out_spill = d.out_spill,
		.err_spill = d.err_spill,
	};
	int r = job_read_body_append(sb, &rd, settled ? &j->facts : NULL);
	exec_delta_done(&d);
	if (r < 0) {
		j->spawn_note = TAKE_PTR(note);
		return r;
	}
	/* Settled and read to its end: nothing more will come, so the tails can go. */
	if (settled)
		j->live = exec_live_free(j->live);
	return 0;
}

void dsb_jobs_abort_wait(dsb_jobs *jobs, dsb_jobs_waiter *waiter)
{
	if (!jobs || !waiter)
		return;
	(void)pthread_mutex_lock(&jobs->lock);
	waiter->aborted = true;
	(void)pthread_cond_broadcast(&jobs->changed);
	(void)pthread_mutex_unlock(&jobs->lock);
}

int dsb_jobs_read(dsb_jobs *jobs, const char *job_id, bool wait, const double *timeout_ms,
		  dsb_jobs_waiter *waiter, dsb_job_reply *ret, dsb_error *reterr)
{
	if (!jobs || !job_id || !ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_jobs_read: missing argument");
	_cleanup_(strbuf_done) strbuf body = STRBUF_INIT;
	_cleanup_(strbuf_done) strbuf text = STRBUF_INIT;
	job *j;
	int r;

	(void)pthread_mutex_lock(&jobs->lock);
	r = lookup(jobs, job_id, &j, ret, reterr);
	if (r < 0 || !j)
		goto out;
	if (wait) {
		/* Math.min(timeout_ms ?? waitTimeoutMs, maxWaitTimeoutMs), then checked (§1.9). */
		double t = timeout_ms ? *timeout_ms : (double)jobs->setup.wait_timeout_ms;
		if (t > (double)jobs->setup.max_wait_timeout_ms)
			t = (double)jobs->setup.max_wait_timeout_ms;
		if (!isfinite(t) || t <= 0) {
			_cleanup_(strbuf_done) strbuf js = STRBUF_INIT;
			r = json_number_append(&js, t);
			r = r < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory")
				  : reply_fail(
					    ret, reterr, DSB_E_INVALID_ARGS,
					    "invalid wait timeout: expected a positive number of "
					    "milliseconds, got %s",
					    js.buf);
			goto out;
		}
		if (!job_status_terminal(j->status))
			wait_settled(jobs, j, t, waiter);
		/* DSH's wait rejects with the abort; nothing is read, the job is not reported. */
		if (waiter && waiter->aborted) {
			r = reply_fail(ret, reterr, DSB_E_ABORTED, "wait aborted");
			goto out;
		}
	}
	r = read_body(j, &body);
	if (r >= 0)
		r = job_output_append(&text, body.buf ? body.buf : "", body.len, j->status,
				      j->detail);
	if (r < 0) {
		r = dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
		goto out;
	}
	/* A read after the job settled reports it (also the read of a wait that saw it). */
	if (job_status_terminal(j->status))
		j->reported = true;
	r = reply_text(ret, &text, reterr);
out:
	(void)pthread_mutex_unlock(&jobs->lock);
	return r;
}

int dsb_jobs_kill(dsb_jobs *jobs, const char *job_id, dsb_job_reply *ret, dsb_error *reterr)
{
	if (!jobs || !job_id || !ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_jobs_kill: missing argument");
	_cleanup_(strbuf_done) strbuf text = STRBUF_INIT;
	job *j;

	(void)pthread_mutex_lock(&jobs->lock);
	int r = lookup(jobs, job_id, &j, ret, reterr);
	if (r >= 0 && j) {
		if (job_status_terminal(j->status)) {
			j->reported = true;
			r = strbuf_printf(&text, "job %s had already finished ", j->id);
			if (r >= 0)
				r = job_status_line_append(&text, j->status, j->detail);
		} else {
			request_kill(j);
			r = strbuf_printf(&text, "requested cancellation of job %s", j->id);
		}
		r = r < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory")
			  : reply_text(ret, &text, reterr);
	}
	(void)pthread_mutex_unlock(&jobs->lock);
	return r;
}

int dsb_jobs_list(dsb_jobs *jobs, dsb_job_reply *ret, dsb_error *reterr)
{
	if (!jobs || !ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_jobs_list: missing argument");
	_cleanup_(strbuf_done) strbuf text = STRBUF_INIT;
	int r = 0;

	(void)pthread_mutex_lock(&jobs->lock);
	for (const job *j = jobs->head; r >= 0 && j; j = j->next) {
		if (j != jobs->head)
			r = strbuf_putc(&text, '\n');
		if (r >= 0)
			r = job_list_line_append(&text, j->id, JOB_KIND, j->status, j->label);
	}
	if (r >= 0 && !jobs->head)
		r = strbuf_puts(&text, "(no background jobs)");
	(void)pthread_mutex_unlock(&jobs->lock);
	return r < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory")
		     : reply_text(ret, &text, reterr);
}
