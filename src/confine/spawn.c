/* SPDX-License-Identifier: MIT */
/*
 * Spawning under a confinement. The child (vfork'ed) resets every signal disposition, takes its
 * standard streams, marks every other descriptor close-on-exec, takes its plan's steps
 * (steps.c) and execs. Whatever goes wrong before exec is reported through the parent's memory,
 * never through the command's output, so a confined command can neither fake a runner failure
 * nor hide one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../policy/policy.h"
#include "confine.h"

/*
 * What the child reports. It lives in the parent's stack frame: a vfork'ed child shares the
 * parent's memory and the parent sleeps until the child has exec'd or died, so the record needs
 * no pipe and the parent reads it once vfork() returns. An exec'd command can no longer reach
 * it, so it can neither fake a runner failure nor hide one.
 */
typedef struct child_report {
	confine_failure failure; /* kind 0: exec'd */
	unsigned achieved;	 /* HARDEN_* */
	confine_pid_fork fork;	 /* the command's PID namespace: its init and first process */
} child_report;

/* In the child: report and die. */
NO_ASAN_STACK static _Noreturn void child_fail(child_report *rep, confine_failure_kind kind,
					       int errnum, const char *detail)
{
	confine_failure *f = &rep->failure;
	size_t n = strlen(detail);
	if (n >= sizeof(f->detail))
		n = sizeof(f->detail) - 1;
	memcpy(f->detail, detail, n);
	f->detail[n] = '\0';
	f->sys_errno = errnum;
	f->kind = kind;
	_exit(125);
}

static int move_fd(int from, int to)
{
	if (from < 0 || from == to)
		return 0;
	return dup2(from, to) < 0 ? -errno : 0;
}

/* Signal handlers point into the parent's memory: none may run here, and the command starts
 * with every disposition at its default and nothing blocked, as Node's spawn gives it. */
static void reset_signals(void)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL);
}

/* What the child knows, shared with the PID namespace's first process when there is one. */
typedef struct child_args {
	const dsb_confined *c;
	const dsb_spawn_options *o;
	unsigned flags;
	child_report *rep;
	bool partial; /* an older Landlock ABI */
	char msg[1024];
} child_args;

/* The command's session or process group, and the terminal's foreground for a person's. */
NO_ASAN_STACK static void take_group(const child_args *a)
{
	const dsb_spawn_options *o = a->o;
	if (o->new_session && setsid() < 0)
		child_fail(a->rep, CONFINE_SETUP_FAILED, errno, "cannot start a new session");
	/*
	 * A confined command never shares a process group with anything outside it: kill(0), a
	 * signal to its own group, would reach the caller's whole group (a process group spans
	 * PID namespaces). A person's command keeps its session and terminal, and is made the
	 * terminal's foreground group by its caller (exec/term.c).
	 */
	bool own_group = !o->new_session && confined_plan(a->c);
	if (own_group && setpgid(0, 0) < 0)
		child_fail(a->rep, CONFINE_SETUP_FAILED, errno, "cannot start a process group");
	/*
	 * Before exec, as a shell's child takes its job's terminal: given only once the parent
	 * ran again, the command could read it first and stop (SIGTTIN). SIGTTOU, which
	 * tcsetpgrp() raises in a background group, is blocked here like every signal.
	 */
	if (own_group && (a->flags & SPAWN_FOREGROUND)) {
		int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (tty >= 0) {
			(void)tcsetpgrp(tty, getpgrp());
			(void)close(tty);
		}
	}
}

/* The command's own process in a PID namespace: a session or group of its own again. */
NO_ASAN_STACK static void child_enter(void *arg)
{
	take_group(arg);
}

/* After the steps (@r: their outcome): the directory, the signal mask, the exec. */
NO_ASAN_STACK static _Noreturn void child_exec(void *arg, int r)
{
	child_args *a = arg;
	const dsb_confined *c = a->c;
	const dsb_spawn_options *o = a->o;
	sigset_t none;

	if (r < 0)
		child_fail(a->rep, CONFINE_SANDBOX_FAILED, -r, a->msg);
	/* DSH's launcher tells the command's stderr; the bytes stay the same (§5.6). */
	if (a->partial) {
		ssize_t ignored = write(2, LL_PARTIAL_NOTICE "\n", sizeof(LL_PARTIAL_NOTICE));
		(void)ignored;
	}

	/* After the mounts: a directory entered before them would bypass them. */
	if (o->cwd && chdir(o->cwd) < 0) {
		/* The errno text is the error's own (dsb_fail_errno): not twice. */
		(void)snprintf(a->msg, sizeof(a->msg), "cannot change directory to '%s'", o->cwd);
		child_fail(a->rep, CONFINE_SETUP_FAILED, errno, a->msg);
	}

	(void)sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if (o->envp)
		execvpe(c->argv[0], c->argv, o->envp);
	else
		execvp(c->argv[0], c->argv);

	/*
	 * The command itself could not be executed: without a backend (danger-full-access) or
	 * in-process under Landlock, whose restrictions were all in place, that is the command's
	 * failure (126/127, as env(1) reports it), never the sandbox's. Its text is Node's spawn
	 * error, what DSH reports for a command it could not start. A runner's own spawn
	 * failure (bwrap or a runnerCommand missing) stays a runner failure (dsh-compat §5.8); so
	 * does that of a caller's own dsb_confined that names a backend but has no plan of ours.
	 */
	int e = errno;
	const char *name = strerrorname_np(e);
	(void)snprintf(a->msg, sizeof(a->msg), "Error: spawn %s %s", c->argv[0],
		       name ? name : "EUNKNOWN");
	const confine_plan *plan = confined_plan(c);
	bool runner = plan ? plan->wraps : c->backend != NULL;
	child_fail(a->rep, runner ? CONFINE_RUNNER_SPAWN : CONFINE_EXEC_FAILED, e, a->msg);
}

/* child_exec() as a confine_pid_fork's continuation. */
NO_ASAN_STACK static void child_then(void *arg, int r)
{
	child_exec(arg, r);
}

static _Noreturn void child_run(const dsb_confined *c, const dsb_spawn_options *o, unsigned flags,
				const int *cgroup_procs, int filter_read, int sock, pid_t parent,
				child_report *rep)
{
	child_args a = {.c = c, .o = o, .flags = flags, .rep = rep};

	reset_signals();
	/*
	 * The death signal is armed for a parent alive now: one killed between the vfork and
	 * the prctl left us orphaned already, and nothing would ever fire. bwrap arms its own
	 * only once it runs, without that check; ours, set here, survives its exec.
	 */
	if (flags & SPAWN_DIE_WITH_PARENT) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0L, 0L, 0L);
		if (getppid() != parent)
			_exit(1);
	}
	take_group(&a);
	if (move_fd(o->stdin_fd, 0) < 0 || move_fd(o->stdout_fd, 1) < 0 ||
	    move_fd(o->stderr_fd, 2) < 0)
		child_fail(rep, CONFINE_SETUP_FAILED, errno, "cannot set up the standard streams");

	/* The runner's filter descriptor survives exec; nothing else above stdio does. */
	const confine_plan *plan = confined_plan(c);
	int keep = 3;
	if (filter_read >= 0) {
		if (filter_read == plan->filter_fd ? fcntl(filter_read, F_SETFD, 0) < 0
						   : dup2(filter_read, plan->filter_fd) < 0)
			child_fail(rep, CONFINE_SANDBOX_FAILED, errno,
				   "cannot pass the system-call filter");
		keep = plan->filter_fd + 1;
	}
	confine_cloexec_from(keep);

	int r = 0;
	if (plan) {
		/* A PID namespace's init is ended by whoever reaps the call: only for one that
		 * does. */
		confine_pid_fork *fork = NULL;
		if (flags & SPAWN_DIE_WITH_PARENT) {
			fork = &rep->fork;
			*fork = (confine_pid_fork){
				.enter = child_enter, .then = child_then, .arg = &a};
		}
		r = confine_self(plan, sock, cgroup_procs, fork, &rep->achieved, &a.partial, a.msg,
				 sizeof(a.msg));
		/* The command went on in the namespace's first process, which reported for itself.
		 */
		if (r == 1)
			_exit(0);
	}
	child_exec(&a, r);
}

/* The filter program for the runner to read, on a descriptor at 3 or above; -errno. */
static int filter_fd_for(const confine_plan *plan)
{
	int fd = seccomp_program_memfd(seccomp_program_for(plan->filter_flags));
	if (fd < 0 || fd >= 3)
		return fd;
	/* Our stdio was closed: keep it clear of the child's 0, 1 and 2. */
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int r = high < 0 ? -errno : high;
	(void)close(fd);
	return r;
}

/*
 * vfork in a frame of its own, where nothing changes once it has returned twice. The child
 * writes @rep through our memory: reached only through this call (never inlined), the record
 * is read afresh by the caller, which would otherwise keep the zeroed one in registers.
 */
static __attribute__((noinline)) pid_t vfork_child(const dsb_confined *c,
						   const dsb_spawn_options *o, unsigned flags,
						   const int *cgroup_procs, int filter_fd, int sock,
						   child_report *rep)
{
	pid_t parent = getpid();
	pid_t pid = vfork();
	if (pid == 0)
		child_run(c, o, flags, cgroup_procs, filter_fd, sock, parent, rep);
	return pid;
}

/* @f as the error the caller gets (@mode names the requested mode). */
static int failure_error(const dsb_confined *c, dsb_mode mode, const confine_failure *f,
			 dsb_error *reterr)
{
	/*
	 * The arguments and the environment together are more than execve() takes: the caller's
	 * to shorten, whether it was the runner's exec or the command's that said so. Nothing ran.
	 */
	if (f->sys_errno == E2BIG &&
	    (f->kind == CONFINE_RUNNER_SPAWN || f->kind == CONFINE_EXEC_FAILED))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"argument list too long: the command's arguments and environment "
				"are more than the kernel takes (ARG_MAX, %ld bytes here)",
				sysconf(_SC_ARG_MAX));
	switch ((confine_failure_kind)f->kind) {
	case CONFINE_SANDBOX_FAILED:
	case CONFINE_RUNNER_SPAWN:
		return policy_fail_unavailable(reterr, mode, f->detail);
	case CONFINE_EXEC_FAILED: {
		/*
		 * Node's spawn error is named Error with the message "spawn X ENOENT"; DSH's
		 * renderers add the "Error: " themselves. The detail carries String(error), as a
		 * runner failure quotes it: without the name here, a tool result never says "Error:
		 * Error: ...".
		 */
		static const char node_name[] = "Error: ";
		const char *message = f->detail;
		if (strncmp(message, node_name, sizeof(node_name) - 1) == 0)
			message += sizeof(node_name) - 1;
		int r = dsb_fail(reterr, DSB_E_EXEC_FAILED, "%s", message);
		if (reterr) {
			reterr->sys_errno = f->sys_errno;
			(void)snprintf(reterr->subject, sizeof(reterr->subject), "%s", c->argv[0]);
		}
		return r;
	}
	case CONFINE_SETUP_FAILED:
		break;
	}
	return dsb_fail_errno(reterr, DSB_E_IO, f->sys_errno, "%s", f->detail);
}

int confined_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts,
		   unsigned flags, const int *cgroup_procs, pid_t *ret_pid,
		   spawn_handoff *ret_handoff, confine_failure *ret_failure, dsb_error *reterr)
{
	static const dsb_spawn_options defaults = DSB_SPAWN_OPTIONS_INIT;
	if (!c || !c->argv || !c->argv[0] || !ret_pid)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_confined_spawn: nothing to run");
	if (!opts)
		opts = &defaults;

	const confine_plan *plan = confined_plan(c);
	if (ret_handoff)
		*ret_handoff = (spawn_handoff)SPAWN_HANDOFF_INIT;
	/*
	 * A network policy is enforced by a supervisor (the connect calls) and, for the
	 * allow-list, by the proxy it runs: with nobody to do either, nothing runs.
	 */
	if (plan_net_restricted(plan) && !ret_handoff)
		return policy_fail_unavailable(reterr, mode,
					       "a network policy needs a supervising parent");
	/* The child sends here, before it execs, what its steps hand the supervisor. */
	_cleanup_close_ int ours = -1, theirs = -1;
	if (ret_handoff && (plan_sends_proxy(plan) || plan_sends_listener(plan))) {
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
			return policy_fail_unavailable(
				reterr, mode, "cannot make the metadata supervisor's socket");
		ours = sp[0];
		theirs = sp[1];
	}
	_cleanup_close_ int filter_read = -1;
	if (plan && plan->filter_fd >= 0) {
		filter_read = filter_fd_for(plan);
		if (filter_read < 0)
			return policy_fail_unavailable(reterr, mode,
						       "cannot pass the system-call filter");
	}

	/*
	 * vfork: the child borrows our memory until it execs, so spawning costs no copy of the
	 * caller's page tables and no copy-on-write faults afterwards (measured in bench/exec.sh).
	 * Every signal stays blocked across it: a handler of ours must never run in the child.
	 */
	child_report rep;
	failure_clear(&rep.failure);
	rep.achieved = 0;
	rep.fork = (confine_pid_fork){0};
	int dumpable = prctl(PR_GET_DUMPABLE, 0L, 0L, 0L, 0L);
	sigset_t all, old;
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = vfork_child(c, opts, flags, cgroup_procs, filter_read, theirs, &rep);
	int fork_errno = errno;
	if (dumpable >= 0 && prctl(PR_GET_DUMPABLE, 0L, 0L, 0L, 0L) != dumpable)
		(void)prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0L, 0L, 0L);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, fork_errno, "cannot fork");
	/*
	 * The command went on in a PID namespace (steps.c): the child we made has handed it to
	 * the namespace's first process, our child too, and exits now. That one is the leader.
	 */
	pid_t init = rep.fork.init;
	if (init > 0) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		pid = rep.fork.leader;
	}

	if (!rep.failure.kind) {
		*ret_pid = pid;
		if (ret_handoff) {
			/* The child sent them before it exec'd: nothing to wait for. */
			if (ours >= 0 && plan_sends_proxy(plan))
				ret_handoff->proxy = fd_receive(ours, MSG_DONTWAIT);
			if (ours >= 0) /* none: it refuses the calls */
				ret_handoff->listener = fd_receive(ours, MSG_DONTWAIT);
			ret_handoff->achieved = rep.achieved;
			ret_handoff->init = init;
		}
		return 0;
	}
	int status;
	while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	/* Nothing of the command ran: its namespace holds the init alone. */
	if (init > 0) {
		(void)kill(init, SIGKILL);
		while (waitpid(init, NULL, 0) < 0 && errno == EINTR)
			;
	}
	rep.failure.detail[sizeof(rep.failure.detail) - 1] = '\0';
	if (ret_failure)
		*ret_failure = rep.failure;
	return failure_error(c, mode, &rep.failure, reterr);
}

int dsb_confined_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts,
		       pid_t *ret_pid, dsb_error *reterr)
{
	return confined_spawn(c, mode, opts, 0, NULL, ret_pid, NULL, NULL, reterr);
}

int spawn_wait(pid_t pid, uint64_t timeout_ms, int *ret_status)
{
	if (timeout_ms) {
		_cleanup_close_ int pidfd = pidfd_open_raw(pid);
		uint64_t deadline = monotonic_ms() + timeout_ms;
		for (;;) {
			uint64_t now = monotonic_ms();
			if (now >= deadline) {
				(void)kill(pid, SIGKILL);
				while (waitpid(pid, ret_status, 0) < 0 && errno == EINTR)
					;
				return -ETIMEDOUT;
			}
			uint64_t left = deadline - now;
			int wait_ms = left > 100 ? 100 : (int)left;
			if (pidfd >= 0) {
				struct pollfd p = {.fd = pidfd, .events = POLLIN};
				if (poll(&p, 1, (int)(left > INT32_MAX ? INT32_MAX : left)) < 0 &&
				    errno != EINTR)
					return -errno;
			} else {
				/* No pidfd (kernel < 5.3): poll the child every 100 ms. */
				struct timespec ts = {0, (long)wait_ms * 1000000};
				(void)nanosleep(&ts, NULL);
			}
			pid_t r = waitpid(pid, ret_status, WNOHANG);
			if (r == pid)
				return 0;
			if (r < 0 && errno != EINTR)
				return -errno;
		}
	}
	while (waitpid(pid, ret_status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* Copies as much of @src as fits: a reason is for people, a cut one still says enough. */
static void copy_truncated(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The runner's first stderr line, when it said something, is the reason it failed. */
int spawn_probe(const dsb_confined *c, uint64_t timeout_ms, unsigned *ret_achieved, char *reason,
		size_t size)
{
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		(void)snprintf(reason, size, "cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	_cleanup_close_ int err_read = errpipe[0];
	dsb_spawn_options o = DSB_SPAWN_OPTIONS_INIT;
	o.stdin_fd = o.stdout_fd = devnull;
	o.stderr_fd = errpipe[1];
	dsb_error err;
	confine_failure failure;
	failure_clear(&failure);
	pid_t pid;
	/* A listener taken is what a call gets (the probe's command changes no metadata). */
	spawn_handoff h = SPAWN_HANDOFF_INIT;
	int r = confined_spawn(c, DSB_MODE_READ_ONLY, &o, 0, NULL, &pid, &h, &failure, &err);
	close(errpipe[1]);
	if (h.listener >= 0)
		(void)close(h.listener);
	if (h.proxy >= 0)
		(void)close(h.proxy);
	if (r < 0) {
		/* The sandbox's own words when it failed ("Runner failure: DETAIL"), else the
		 * spawn's. */
		bool sandbox = failure.kind == CONFINE_SANDBOX_FAILED ||
			       failure.kind == CONFINE_RUNNER_SPAWN;
		copy_truncated(reason, size, sandbox ? failure.detail : err.message);
		return -1;
	}
	if (ret_achieved)
		*ret_achieved = h.achieved;
	int status;
	r = spawn_wait(pid, timeout_ms, &status);
	if (r == -ETIMEDOUT) {
		(void)snprintf(reason, size, "the probe did not finish within %llu ms",
			       (unsigned long long)timeout_ms);
		return -1;
	}
	if (r < 0) {
		(void)snprintf(reason, size, "cannot wait for the probe: %s", strerror(-r));
		return -1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;

	/* Everyone who could write the pipe is gone: this read cannot block. */
	char said[256] = "";
	ssize_t n = read(err_read, said, sizeof(said) - 1);
	said[n > 0 ? n : 0] = '\0';
	said[strcspn(said, "\n")] = '\0';
	if (WIFEXITED(status))
		(void)snprintf(reason, size, "the probe exited with status %d%s%s",
			       WEXITSTATUS(status), said[0] ? ": " : "", said);
	else
		(void)snprintf(reason, size, "the probe was killed by signal %d", WTERMSIG(status));
	return -1;
}
