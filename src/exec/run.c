/* SPDX-License-Identifier: MIT */
/*
 * Running one command (dsh-compat §6.2-6.5): confine it (or not, for danger-full-access), spawn it
 * in a new session with a scrubbed environment, pump stdin, stdout and stderr through one poll loop
 * that also watches the child through a pidfd, the deadline and the caller's cancellation, and on
 * timeout (or cancellation) SIGTERM the whole process group, then SIGKILL it after graceMs — a
 * timer that outlives the leader, so a TERM-trapping descendant still dies. Once the leader is
 * gone, the pipes get graceMs more to close: a background grandchild holding them cannot hold the
 * result hostage. Then whatever the command left running is killed (src/confine/tree.c: nothing
 * outlives the call), and the outcome is classified: a runner failure outranks a denial.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../confine/confine.h"
#include "../policy/policy.h"
#include "exec.h"

void dsb_run_result_done(dsb_run_result *r)
{
	if (!r)
		return;
	free(r->out.text);
	free(r->out.spill_path);
	free(r->err.text);
	free(r->err.spill_path);
	free(r->protected_note);
	free(r->network_note);
	free(r->limit_note);
	free(r->undone_note);
	for (size_t i = 0; i < r->n_refused_named; i++)
		refusal_done(&r->refused[i]);
	free(r->refused);
	free(r->refusal_note);
	*r = (dsb_run_result){0};
}

/* What one read of the command's output takes at most. */
#define PUMP_BYTES ((size_t)64 * 1024)

/* How often a command holding the terminal is looked at for a stop (Ctrl-Z), at most. */
#define TERM_WATCH_MS 50

/* Everything one run owns; released in one place. */
typedef struct run {
	int out_fd, err_fd, in_fd;
	proc_tree tree;
	collector *out, *err;
	spill_dir spill;
	char **env;
	dsb_confined confined;
	char *bash_argv[4];
	char *const *argv; /* what runs: the request's, or bash_argv */
	exec_live *live;   /* owns out and err once they are made (a background run) */
	bool aborted;	   /* cancelled (a background run's end says so) */
	/*
	 * A person's stderr is held back while it could still be the runner's own line saying it
	 * could not execute the command (bwrap's "bwrap: execvp ARGV0: ERROR",
	 * confined_exec_errno()), which we then report in env(1)'s words instead.
	 */
	const char *exec_prefix; /* that line's start, or NULL: nothing is held */
	bool holding;
	size_t held;
	char hold[4096];
	exec_output_fn on_output;
	void *userdata;
	/*
	 * The read buffer, on the heap: a 64 KiB array on the stack is probed page by page
	 * (-fstack-clash-protection), which costs a server 64 KiB of resident stack per call.
	 */
	char *buf;
	confine_refusals refused; /* the tree's, kept past tree_done() for the classification */
	exec_term term;		  /* a person's terminal, lent to the command (term.c) */
} run;

/* A person watching sees stderr as it comes; a closed stderr is their choice. */
static void tee_write(int tee, const char *buf, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t k = write(tee, buf + off, n - off);
		if (k <= 0)
			break;
		off += (size_t)k;
	}
}

/* Also lets out a person's stderr still held back (unless it was the runner's exec line). */
static void run_done(run *r)
{
	term_take_back(&r->term);
	tee_write(STDERR_FILENO, r->hold, r->held);
	const int fds[] = {r->out_fd, r->err_fd, r->in_fd};
	for (size_t i = 0; i < ELEMENTSOF(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	tree_done(&r->tree);
	if (r->live)
		/* Sealed before the spill directory goes: they never touch it again. */
		(void)live_seal(r->live, NULL, NULL);
	else {
		collector_free(r->out);
		collector_free(r->err);
	}
	spill_dir_done(&r->spill);
	strv_free(r->env);
	record_free(&confine_refusals_record, &r->refused);
	dsb_confined_done(&r->confined);
	free(r->buf);
}

/* Whether @h (@n bytes) can still be the start of the runner's one line @prefix, and nothing
 * more. */
static bool may_be_exec_line(const char *prefix, const char *h, size_t n)
{
	size_t p = strlen(prefix);
	if (memcmp(h, prefix, n < p ? n : p) != 0)
		return false;
	const char *nl = memchr(h, '\n', n);
	return !nl || nl == h + n - 1;
}

/* Holds @buf back in @r while it may be the runner's exec line; else lets it (and the held) out. */
static void tee_hold(run *r, int tee, const char *buf, size_t n)
{
	if (r->holding && n <= sizeof(r->hold) - r->held) {
		memcpy(r->hold + r->held, buf, n);
		r->held += n;
		if (may_be_exec_line(r->exec_prefix, r->hold, r->held))
			return;
		n = 0; /* now in the hold */
	}
	if (r->holding) {
		r->holding = false;
		tee_write(tee, r->hold, r->held);
		r->held = 0;
	}
	tee_write(tee, buf, n);
}

/* Reads what is there from *@fd into @c (and @tee); closes it at EOF. -errno, -ENOMEM. */
static int pump(run *r, int *fd, collector *c, int tee, int stream)
{
	if (!r->buf && !(r->buf = malloc(PUMP_BYTES)))
		return -ENOMEM;
	char *buf = r->buf;
	ssize_t n = read(*fd, buf, PUMP_BYTES);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	if (n == 0) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	if (tee >= 0)
		tee_hold(r, tee, buf, (size_t)n);
	if (r->on_output)
		r->on_output(r->userdata, stream, buf, (size_t)n);
	if (!c)
		return 0;
	return r->live ? live_write(r->live, c, buf, (size_t)n)
		       : collector_write(c, buf, (size_t)n);
}

/*
 * The loop: until the leader has exited and both pipes are closed (or the drain bound passed).
 * Fills exit status, timed_out and aborted: @cancel_fd (-1: none) polled readable before the
 * deadline ends the command as the deadline does (dsh-compat §6.4: the timer first is a timeout, a
 * cancellation first an abort; never both).
 */
static int run_loop(run *r, const char *stdin_text, size_t stdin_len, uint64_t timeout_ms,
		    uint64_t grace_ms, int tee, int cancel_fd, int *ret_status, bool *ret_timed_out,
		    bool *ret_aborted)
{
	/* UINT64_MAX is "no timeout" (a person's exec without --timeout): saturate. */
	uint64_t start = monotonic_ms();
	uint64_t deadline = timeout_ms > UINT64_MAX - start ? UINT64_MAX : start + timeout_ms;
	uint64_t kill_at = 0, drain_until = 0;
	size_t stdin_off = 0;
	bool exited = false, timed_out = false, aborted = false;
	int status = 0;

	for (;;) {
		if (exited && r->out_fd < 0 && r->err_fd < 0)
			break;
		uint64_t now = monotonic_ms();
		if (!exited && !timed_out && !aborted && now >= deadline) {
			timed_out = true;
			tree_signal(&r->tree, SIGTERM);
			kill_at = now + grace_ms;
		}
		if (kill_at && now >= kill_at) {
			/* Survives the leader: a descendant that trapped TERM still dies, and so
			 * does one that left the group or holds the pipes. */
			tree_signal(&r->tree, SIGKILL);
			if (exited)
				tree_done(&r->tree);
			kill_at = 0;
		}
		if (exited && now >= drain_until)
			break; /* a descendant still holds a pipe: stop waiting for it */

		struct pollfd p[6];
		int n = 0, i_out = -1, i_err = -1, i_in = -1, i_pid = -1, i_cancel = -1,
		    i_meta = -1;
		if (r->out_fd >= 0)
			p[i_out = n++] = (struct pollfd){.fd = r->out_fd, .events = POLLIN};
		if (r->err_fd >= 0)
			p[i_err = n++] = (struct pollfd){.fd = r->err_fd, .events = POLLIN};
		if (r->in_fd >= 0)
			p[i_in = n++] = (struct pollfd){.fd = r->in_fd, .events = POLLOUT};
		if (!exited && r->tree.event_fd >= 0)
			p[i_pid = n++] = (struct pollfd){.fd = r->tree.event_fd, .events = POLLIN};
		if (!exited && !timed_out && !aborted && cancel_fd >= 0)
			p[i_cancel = n++] = (struct pollfd){.fd = cancel_fd, .events = POLLIN};
		/* Metadata calls of the command and of what it left behind, until the tree ends. */
		if (r->tree.sv.listener >= 0)
			p[i_meta = n++] =
				(struct pollfd){.fd = r->tree.sv.listener, .events = POLLIN};

		bool stopping = timed_out || aborted;
		uint64_t wake = exited	   ? drain_until
				: stopping ? (kill_at ? kill_at : 0)
					   : (deadline == UINT64_MAX ? 0 : deadline);
		if (kill_at && (!wake || kill_at < wake))
			wake = kill_at;
		int wait_ms = wake ? (int)(wake > now ? (wake - now > 1000 ? 1000 : wake - now) : 0)
				   : 1000;
		if (!exited && r->tree.event_fd < 0 && wait_ms > 50)
			wait_ms = 50; /* no pidfd: notice the exit by polling waitpid */
		/* A stop wakes no descriptor: Ctrl-Z is noticed by looking, this often. */
		if (!exited && r->term.theirs > 0 && wait_ms > TERM_WATCH_MS)
			wait_ms = TERM_WATCH_MS;
		if (poll(p, (nfds_t)n, wait_ms) < 0 && errno != EINTR)
			return -errno;

		if (i_meta >= 0)
			tree_supervise(&r->tree, p[i_meta].revents);
		if (i_cancel >= 0 && p[i_cancel].revents) {
			aborted = true;
			tree_signal(&r->tree, SIGTERM);
			kill_at = monotonic_ms() + grace_ms;
		}
		int rr = 0;
		if (i_out >= 0 && p[i_out].revents)
			rr = pump(r, &r->out_fd, r->out, -1, 1);
		if (rr >= 0 && i_err >= 0 && p[i_err].revents)
			rr = pump(r, &r->err_fd, r->err, tee, 2);
		if (rr < 0)
			return rr;
		if (i_in >= 0 && p[i_in].revents) {
			ssize_t k = p[i_in].revents & POLLOUT && stdin_off < stdin_len
					    ? write_no_sigpipe(r->in_fd, stdin_text + stdin_off,
							       stdin_len - stdin_off)
					    : -1;
			if (k > 0)
				stdin_off += (size_t)k;
			/* Done, or the command stopped reading: close, as Node ends stdin. */
			if (k < 0 || stdin_off == stdin_len) {
				close(r->in_fd);
				r->in_fd = -1;
			}
		}
		/* Our own child's stop only: a monitor's child is the monitor's to wait for. */
		if (!exited && !r->tree.monitor)
			(void)term_watch(&r->term, r->tree.leader);
		/* Also on every other wake: reaping orphans as they end is tree_check()'s job. */
		if (!exited && tree_check(&r->tree, &status) > 0) {
			exited = true;
			/* The leader's refusals: tree_done() below clears them (a monitor tells
			 * them with the end). */
			(void)tree_refusals(&r->tree, &r->refused);
			drain_until = monotonic_ms() + grace_ms;
			/* After a timeout nothing it left behind gets to print: end it all now. */
			if ((timed_out || aborted) && !kill_at)
				tree_done(&r->tree);
		}
	}
	*ret_status = status;
	*ret_timed_out = timed_out;
	*ret_aborted = aborted;
	return 0;
}

/* The command and its limits, as resolve() turns a request into a spec (dsh-compat §6.1). */
static int check_request(const dsb_config *cfg, const dsb_run_request *req, uint64_t *ret_timeout,
			 dsb_error *reterr)
{
	if (!!req->command == !!req->argv)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "give a command or an argv, not both");
	if (req->argv && (!req->argv[0] || !req->argv[0][0]))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"invalid argv: expected a non-empty program name at argv[0]");
	uint64_t t = req->timeout_ms ? req->timeout_ms : cfg->timeout_ms;
	*ret_timeout = t < cfg->max_timeout_ms ? t : cfg->max_timeout_ms;
	return 0;
}

/*
 * The spill directory lies in a writable root (TMPDIR) in workspace-write, and the model reads
 * what it holds: it is made before the command starts, so that the confinement can keep it
 * read-only, and listed in a copy of the policy (@local, its array in *@ret_more). Where the
 * backend cannot enforce that, or the directory cannot be made, there is no spill file (the
 * result says so) rather than one the command could write. -ENOMEM.
 */
static int spill_protect(dsb_provider *provider, spill_dir *spill, dsb_exec_policy *local,
			 dsb_protected **ret_more)
{
	if (!provider_protects(provider) || spill_dir_ensure(spill) < 0) {
		spill->off = true;
		return 0;
	}
	_cleanup_free_ char *canon = NULL;
	if (path_lexical_resolve("/", spill->host_path, &canon) < 0)
		return -ENOMEM;
	dsb_protected *v = calloc(local->n_protected + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (local->n_protected)
		memcpy(v, local->protected, local->n_protected * sizeof(*v));
	v[local->n_protected] = (dsb_protected){
		.path = canon, .kind = DSB_PROTECT_SPILL, .directory = true, .exists = true};
	local->protected = v;
	local->n_protected++;
	*ret_more = v;
	spill->protected_path = TAKE_PTR(canon);
	return 0;
}

int dsb_exec_run(dsb_provider *provider, const dsb_config *cfg, const dsb_exec_policy *policy,
		 const dsb_run_request *req, dsb_run_result *ret, dsb_error *reterr)
{
	return exec_run(provider, cfg, policy, req, NULL, ret, reterr);
}

/* Tells @opts' caller how the spawn went (once, and only when it was attempted). */
static void report_spawn(const exec_opts *opts, int r, const dsb_error *err)
{
	if (opts && opts->on_spawn)
		opts->on_spawn(opts->userdata, r, err);
}

/*
 * The command and its confinement: the argv (bash -c COMMAND), the sandbox (none for
 * danger-full-access, which never reaches the provider: dsh-compat §1.1, §6.5), with the spill
 * directory protected, and the environment and collectors it will run with.
 */
static int run_prepare(run *x, dsb_provider *provider, const dsb_config *cfg,
		       const dsb_exec_policy *policy, const dsb_run_request *req, exec_opts *opts,
		       dsb_error *reterr)
{
	exec_live *live = opts ? opts->live : NULL;
	x->argv = req->argv;
	if (req->command) {
		x->bash_argv[0] = (char *)"bash";
		x->bash_argv[1] = (char *)"-c";
		x->bash_argv[2] = (char *)req->command;
		x->argv = x->bash_argv;
	}
	uint64_t spill_cap = req->no_spill ? 0 : cfg->max_spill_bytes;
	/* A session's spill files lie in its private /tmp, where the model finds them as /tmp. */
	if (policy->tmp_dir &&
	    (!(x->spill.tmpdir = strdup(policy->tmp_dir)) || !(x->spill.shown = strdup("/tmp"))))
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");

	int r = 0;
	if (policy->mode == DSB_MODE_DANGER_FULL_ACCESS) {
		if (!(x->confined.argv = strv_copy(x->argv)))
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	} else {
		_cleanup_free_ dsb_protected *more = NULL;
		dsb_exec_policy local = *policy;
		if (spill_cap > 0 && policy->mode == DSB_MODE_WORKSPACE_WRITE &&
		    spill_protect(provider, &x->spill, &local, &more) < 0)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
		confine_failure failure;
		failure_clear(&failure);
		r = provider_confine(provider, &local, x->argv, &x->confined, &failure, reterr);
		/*
		 * A runnerCommand that is missing is found here, in DSH's words for its failed
		 * spawn (backend-runner.c). DSH only finds it when spawning, which in the
		 * background is a job that started and failed (dsh-compat §6.5 start()): so is
		 * ours.
		 */
		if (r < 0 && live && failure.kind == CONFINE_RUNNER_SPAWN)
			report_spawn(opts, r, reterr);
		if (r < 0)
			return r;
		if (opts && opts->on_confined)
			opts->on_confined(opts->confined_userdata, &local, &x->confined);
	}

	uint64_t out_cap = req->stdout_max_bytes ? req->stdout_max_bytes : cfg->max_output_bytes;
	x->env = env_build(environ, cfg->scrub_env, cfg->n_scrub_env, req->env, req->dsh_env);
	/* The allow-list's proxy, inside the command's network namespace. */
	const confine_plan *plan = confined_plan(&x->confined);
	if (x->env && plan && plan->proxy_port && env_proxy(&x->env, plan->proxy_port) < 0)
		x->env = strv_free(x->env);
	/*
	 * A confined command's temp dir is the sandbox's /tmp, the one temp dir among the
	 * writable roots (docs/design/paths.md): the caller's TMPDIR may be any other place.
	 */
	if (x->env && policy->mode != DSB_MODE_DANGER_FULL_ACCESS &&
	    env_put(&x->env, "TMPDIR=/tmp") < 0)
		x->env = strv_free(x->env);
	if (!req->passthrough)
		x->out = collector_new("stdout", out_cap, spill_cap, &x->spill);
	x->err = collector_new("stderr", cfg->max_output_bytes, spill_cap, &x->spill);
	if (!x->env || (!req->passthrough && !x->out) || !x->err)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (live) {
		/* Readable from now on; a reader before the first byte gets nothing. */
		live_attach(live, x->out, x->err);
		x->live = live;
	}
	return 0;
}

/* The pipes, then the command spawned in its own tree (tree.c), our ends kept in @x. */
static int run_spawn(run *x, const dsb_exec_policy *policy, const dsb_run_request *req,
		     exec_opts *opts, dsb_error *reterr)
{
	int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, in_pipe[2] = {-1, -1};
	_cleanup_close_ int devnull = -1;
	int r = 0;
	if ((!req->passthrough && pipe2(out_pipe, O_CLOEXEC) < 0) ||
	    pipe2(err_pipe, O_CLOEXEC) < 0 || (req->stdin_text && pipe2(in_pipe, O_CLOEXEC) < 0) ||
	    (!req->stdin_text && !req->passthrough &&
	     (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0))
		r = dsb_fail_errno(reterr, DSB_E_IO, errno, "cannot create pipes");

	if (r >= 0) {
		dsb_spawn_options o = DSB_SPAWN_OPTIONS_INIT;
		o.stdin_fd = req->stdin_text ? in_pipe[0] : devnull;
		o.stdout_fd = out_pipe[1];
		o.stderr_fd = err_pipe[1];
		o.cwd = req->workdir;
		o.envp = x->env;
		/*
		 * Its own session, so the timeout reaches every descendant (DSH's detached spawn).
		 * A person's command keeps our session and terminal: confined, in a process group
		 * of its own (confine/spawn.c), which is lent the terminal's foreground while it
		 * runs, so that it reads the terminal and gets its Ctrl-C, Ctrl-\ and Ctrl-Z
		 * (term.c); unconfined, in ours.
		 */
		o.new_session = !req->passthrough;
		/* Nothing the command starts outlives the call, except what a person's own
		 * unconfined command leaves behind on purpose. */
		bool confined = policy->mode != DSB_MODE_DANGER_FULL_ACCESS;
		unsigned flags = !req->passthrough || confined ? TREE_REAP : 0;
		if (req->passthrough && confined && term_open(&x->term))
			flags |= TREE_FOREGROUND;
		r = tree_spawn(&x->confined, policy->mode, &o, flags, &x->tree, reterr);
		report_spawn(opts, r, reterr);
		if (r >= 0)
			term_give(&x->term, x->tree.leader);
	}
	/* Our copies of the child's ends go, so EOF means the child's side is closed. */
	const int child_ends[] = {out_pipe[1], err_pipe[1], in_pipe[0]};
	for (size_t i = 0; i < ELEMENTSOF(child_ends); i++)
		if (child_ends[i] >= 0)
			close(child_ends[i]);
	x->out_fd = out_pipe[0];
	x->err_fd = err_pipe[0];
	x->in_fd = in_pipe[1];
	if (r >= 0 && x->in_fd >= 0)
		(void)fcntl(x->in_fd, F_SETFL, O_NONBLOCK);
	return r;
}

/*
 * The run to its end (run_loop()), everything it left killed, and what it said collected into
 * @res: exit status, signal, timeout, the streams. A cancellation (not a background run's) is
 * the call's failure, DSB_E_ABORTED, unless @opts keeps it as a result.
 */
static int run_collect(run *x, const dsb_config *cfg, const dsb_exec_policy *policy,
		       const dsb_run_request *req, uint64_t timeout_ms, const exec_opts *opts,
		       dsb_run_result *res, dsb_error *reterr)
{
	int cancel_fd = opts ? opts->cancel_fd : -1;
	bool keep_aborted = opts && opts->keep_aborted;
	x->exec_prefix = policy->mode != DSB_MODE_DANGER_FULL_ACCESS
				 ? confined_exec_prefix(&x->confined)
				 : NULL;
	x->holding = x->exec_prefix && req->passthrough;
	int status = 0;
	bool timed_out = false, aborted = false;
	_cleanup_(strbuf_done) strbuf undone = STRBUF_INIT;
	int r = run_loop(x, req->stdin_text, req->stdin_len, timeout_ms, cfg->grace_ms,
			 req->passthrough ? STDERR_FILENO : -1, cancel_fd, &status, &timed_out,
			 &aborted);
	/* Once nothing the command started runs any more, undo what no mount could forbid. */
	if (policy->mode != DSB_MODE_DANGER_FULL_ACCESS) {
		tree_done(&x->tree);
		if (protect_remove_absent(policy, &undone) < 0 && r >= 0)
			r = -ENOMEM;
		if (policy_check_repos(policy, NULL, &undone) < 0 && r >= 0)
			r = -ENOMEM;
	}
	if (r < 0)
		return r == -ENOMEM ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory")
				    : dsb_fail_errno(reterr, DSB_E_IO, -r, "running the command");
	x->aborted = aborted;
	/* Cancellation wins over whatever the killed command left (dsh-compat §6.5, §6.7). */
	if (aborted && !x->live && !keep_aborted)
		return dsb_fail(reterr, DSB_E_ABORTED, "tool call aborted");

	*res = (dsb_run_result){
		.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
		.timed_out = timed_out,
		.timeout_ms = timeout_ms,
		.aborted = aborted && !x->live,
		.sandboxed = true,
		.mode = policy->mode,
		.undone_note = undone.len ? strbuf_take(&undone) : NULL,
	};
	/* A background run's collectors stay readable: its result gets copies. */
	if (x->live)
		r = live_seal(x->live, &res->out, &res->err);
	else if (x->out)
		r = collector_finish(x->out, &res->out);
	if (r >= 0 && !x->live)
		r = collector_finish(x->err, &res->err);
	if (r >= 0 && !res->out.text && !(res->out.text = strdup("")))
		r = -ENOMEM;
	return r < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory") : 0;
}

/*
 * What the run was, from its outcome and what the sandbox saw: the command could not be
 * executed (EXEC_FAILED), the runner failed (SANDBOX_UNAVAILABLE: it outranks a denial, the
 * command did not really run, §6.5), a denial (with the protected path it touched), the
 * network refusals.
 */
static int run_classify(run *x, const dsb_exec_policy *policy, const dsb_run_request *req,
			exec_opts *opts, dsb_run_result *res, dsb_error *reterr)
{
	/*
	 * The runner set everything up, then could not execute the command: the command's
	 * failure (126/127), not the runner's. Only the runner's whole stderr, exactly its line.
	 */
	int exec_errno = 0;
	if (x->exec_prefix && !x->live && !res->timed_out && !res->err.truncated &&
	    (!req->passthrough || x->holding))
		exec_errno = confined_exec_errno(&x->confined, res->exit_code, res->err.text,
						 res->err.len, x->argv[0]);
	if (exec_errno) {
		const char *name = strerrorname_np(exec_errno);
		x->held = 0; /* the line said so: reported in env(1)'s words instead */
		int r = dsb_fail(reterr, DSB_E_EXEC_FAILED, "spawn %s %s", x->argv[0],
				 name ? name : "EUNKNOWN");
		if (reterr) {
			reterr->sys_errno = exec_errno;
			dsb_error_set_subject(reterr, x->argv[0]);
		}
		return r;
	}
	if (x->live)
		opts->aborted = x->aborted;
	if (policy->mode == DSB_MODE_DANGER_FULL_ACCESS)
		return 0;

	_cleanup_free_ char *detail =
		classify_runner_failure(res->exit_code, res->err.text, res->err.len,
					x->confined.rules, x->confined.n_rules);
	if (detail && !x->live)
		return policy_fail_unavailable(reterr, policy->mode, detail);
	/* A background run's runner failure is a fact of its result (§6.5 start()). */
	if (detail)
		opts->runner_failed = true;
	else if (x->refused.evidence)
		/*
		 * The supervisor saw the command's file operations: a denial is what it refused,
		 * exit status and stderr aside (our one departure from DSH's bytes: a command that
		 * silences a refusal is still told, one that prints DSH's words is not).
		 */
		res->denied = x->refused.files > 0;
	else
		/*
		 * DSH's rule. A metadata change the supervisor refused outside the roots is a
		 * denial as bwrap's read-only mounts make it one ("Read-only file system"),
		 * whatever the command printed of it.
		 */
		res->denied = classify_denial(res->exit_code, res->err.text, res->err.len,
					      x->confined.denial_signatures) ||
			      (res->exit_code > 0 && x->refused.metadata > 0);
	if (x->refused.evidence && !detail) {
		res->evidence = true;
		res->n_refused = x->refused.files;
		if (refusals_parse(x->refused.files_named, &res->refused, &res->n_refused_named) <
			    0 ||
		    refusal_note(res->refused, res->n_refused_named, res->n_refused, policy,
				 &res->refusal_note) < 0)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	} else if (res->denied && classify_protected(res->err.text, res->err.len, policy,
						     req->workdir, &res->protected_note) < 0) {
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	}
	res->has_enforcement = true;
	res->enforcement = x->confined.enforcement;
	const confine_plan *plan = confined_plan(&x->confined);
	if (plan_net_restricted(plan) &&
	    network_note(plan->proxy_port != 0, res->exit_code != 0, x->refused.network,
			 x->refused.named, &res->network_note) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	/* The limits the tree reached, as its cgroup counted them (docs/design/limits.md). */
	unsigned hits = x->refused.limits_hit;
	res->limits_hit = (hits & LIMIT_HIT_PROCESSES ? 1u << DSB_LIMIT_PROCESSES : 0) |
			  (hits & LIMIT_HIT_MEMORY ? 1u << DSB_LIMIT_MEMORY : 0);
	if (plan && limit_note(res->limits_hit, plan->limits.processes, plan->limits.memory,
			       &res->limit_note) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return 0;
}

int exec_run(dsb_provider *provider, const dsb_config *cfg, const dsb_exec_policy *policy,
	     const dsb_run_request *req, exec_opts *opts, dsb_run_result *ret, dsb_error *reterr)
{
	if (!cfg || !policy || !req || !ret ||
	    (!provider && policy->mode != DSB_MODE_DANGER_FULL_ACCESS))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_exec_run: missing argument");
	uint64_t timeout_ms = 0;
	int r = check_request(cfg, req, &timeout_ms, reterr);
	if (r < 0)
		return r;
	/* Background processes have no timeout (dsh-compat §6.4): a kill or the registry's end
	 * stops them. */
	if (opts && opts->live)
		timeout_ms = UINT64_MAX;

	run x = {.out_fd = -1,
		 .err_fd = -1,
		 .in_fd = -1,
		 .tree = PROC_TREE_INIT,
		 .term = {.fd = -1},
		 .on_output = opts ? opts->on_output : NULL,
		 .userdata = opts ? opts->userdata : NULL};
	dsb_run_result res = {0};
	r = run_prepare(&x, provider, cfg, policy, req, opts, reterr);
	if (r >= 0)
		r = run_spawn(&x, policy, req, opts, reterr);
	if (r >= 0)
		r = run_collect(&x, cfg, policy, req, timeout_ms, opts, &res, reterr);
	if (r >= 0)
		r = run_classify(&x, policy, req, opts, &res, reterr);
	run_done(&x);
	if (r < 0) {
		dsb_run_result_done(&res);
		return r;
	}
	*ret = res;
	return 0;
}
