/* SPDX-License-Identifier: MIT */
/*
 * Spawning under a confinement. The child (vfork'ed) resets every signal disposition, takes its
 * standard streams, marks every other descriptor close-on-exec, and for Landlock makes its
 * namespaces, restricts itself, drops every capability and installs the system-call filter, in
 * that order; then it execs. Whatever goes wrong before exec is reported through the parent's
 * memory, never through the command's output, so a confined command can neither fake a runner
 * failure nor hide one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../policy/policy.h"
#include "confine.h"
#include "metadata.h"

/*
 * What the child reports. It lives in the parent's stack frame: a vfork'ed child shares the
 * parent's memory and the parent sleeps until the child has exec'd or died, so the record needs
 * no pipe and the parent reads it once vfork() returns. An exec'd command can no longer reach
 * it, so it can neither fake a runner failure nor hide one.
 */
typedef struct child_report {
	int failed; /* 0: exec'd; 1: setup failed; 2: the runner (sandbox) failed; 3: the
		     * command's own exec failed (the confinement was in place) */
	int sys_errno;
	unsigned achieved; /* HARDEN_* */
	char detail[1024];
} child_report;

/* In the child: report and die. */
static _Noreturn void child_fail(child_report *rep, int how, int errnum, const char *detail)
{
	size_t n = strlen(detail);
	if (n >= sizeof(rep->detail))
		n = sizeof(rep->detail) - 1;
	memcpy(rep->detail, detail, n);
	rep->detail[n] = '\0';
	rep->sys_errno = errnum;
	rep->failed = how;
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

static _Noreturn void child_run(const dsb_confined *c, const dsb_spawn_options *o, unsigned flags,
				int filter_read, int meta_sock, pid_t parent, child_report *rep)
{
	char msg[1024];
	sigset_t none;

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
	if (o->new_session && setsid() < 0)
		child_fail(rep, 1, errno, "cannot start a new session");
	if (move_fd(o->stdin_fd, 0) < 0 || move_fd(o->stdout_fd, 1) < 0 ||
	    move_fd(o->stderr_fd, 2) < 0)
		child_fail(rep, 1, errno, "cannot set up the standard streams");

	/* The runner's filter descriptor survives exec; nothing else above stdio does. */
	const confine_plan *plan = confined_plan(c);
	int keep = 3;
	if (filter_read >= 0) {
		if (filter_read == plan->filter_fd ? fcntl(filter_read, F_SETFD, 0) < 0
						   : dup2(filter_read, plan->filter_fd) < 0)
			child_fail(rep, 2, errno, "cannot pass the system-call filter");
		keep = plan->filter_fd + 1;
	}
	confine_cloexec_from(keep);

	/*
	 * A runner's network namespace, made here because bwrap would give the proxy no door
	 * into its own (the listener is made in there and sent out), and the listener for the
	 * command's connect and sendto calls: bwrap installs our main filter itself, with no
	 * listener for us, so this one goes first, below it (backend-bwrap.c).
	 */
	if (plan && !c->landlock && plan->net_ns) {
		if (prctl(PR_GET_DUMPABLE, 0L, 0L, 0L, 0L) != 1)
			(void)prctl(PR_SET_DUMPABLE, 1L, 0L, 0L, 0L);
		unsigned ns = harden_net_namespace();
		if (ns & HARDEN_FAILED)
			child_fail(rep, 2, EPERM, "cannot map the user namespace");
		int r = confine_network(ns, plan->proxy_port, meta_sock, msg, sizeof(msg));
		if (r < 0)
			child_fail(rep, 2, -r, msg);
		rep->achieved |= ns;
	}
	if (plan && !c->landlock && plan->net_notify) {
		int listener = seccomp_install_listener(seccomp_net_only_program());
		int r = listener < 0 ? listener : fd_send(meta_sock, listener);
		if (listener >= 0)
			(void)close(listener);
		if (r < 0)
			child_fail(rep, 2, -r,
				   "cannot hand over the connect supervisor's listener");
		rep->achieved |= HARDEN_NET_SUPERVISED;
	}

	/* A runner's protected paths, mounted before it starts (backend-bwrap.c). */
	if (plan && !c->landlock && plan->mounts.n > 0) {
		if (unshare(CLONE_NEWNS) < 0)
			child_fail(rep, 2, errno,
				   "cannot make a mount namespace for protected paths");
		int r = protect_apply_mounts(plan->mounts.v, plan->mounts.n, msg, sizeof(msg));
		if (r < 0)
			child_fail(rep, 2, -r, msg);
	}

	if (plan && c->landlock) {
		bool partial = false;
		int r = confine_self(plan, meta_sock, &rep->achieved, &partial, msg, sizeof(msg));
		if (r < 0)
			child_fail(rep, 2, -r, msg);
		/* DSH's launcher tells the command's stderr; the bytes stay the same (§5.6). */
		if (partial) {
			ssize_t ignored =
				write(2, LL_PARTIAL_NOTICE "\n", sizeof(LL_PARTIAL_NOTICE));
			(void)ignored;
		}
	}

	/* After the mounts: a directory entered before them would bypass them. */
	if (o->cwd && chdir(o->cwd) < 0) {
		/* The errno text is the error's own (dsb_fail_errno): not twice. */
		(void)snprintf(msg, sizeof(msg), "cannot change directory to '%s'", o->cwd);
		child_fail(rep, 1, errno, msg);
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
	 * failure (bwrap or a runnerCommand missing) stays a runner failure (spec §5.8).
	 */
	int e = errno;
	const char *name = strerrorname_np(e);
	(void)snprintf(msg, sizeof(msg), "Error: spawn %s %s", c->argv[0],
		       name ? name : "EUNKNOWN");
	child_fail(rep, c->backend != NULL && !c->landlock ? 2 : 3, e, msg);
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
						   int filter_fd, int meta_sock, child_report *rep)
{
	pid_t parent = getpid();
	pid_t pid = vfork();
	if (pid == 0)
		child_run(c, o, flags, filter_fd, meta_sock, parent, rep);
	return pid;
}

int confined_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts,
		   int *ret_meta_fd, int *ret_proxy_fd, unsigned flags, pid_t *ret_pid,
		   unsigned *ret_achieved, dsb_error *reterr)
{
	static const dsb_spawn_options defaults = DSB_SPAWN_OPTIONS_INIT;
	if (!c || !c->argv || !c->argv[0] || !ret_pid)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_confined_spawn: nothing to run");
	if (!opts)
		opts = &defaults;

	const confine_plan *plan = confined_plan(c);
	if (ret_meta_fd)
		*ret_meta_fd = -1;
	if (ret_proxy_fd)
		*ret_proxy_fd = -1;
	/*
	 * A network policy is enforced by a supervisor (the connect calls) and, for the
	 * allow-list, by the proxy it runs: with nobody to do either, nothing runs.
	 */
	bool net = plan_net_restricted(plan);
	if (net && (!ret_meta_fd || (plan->proxy_port && !ret_proxy_fd)))
		return policy_fail_unavailable(reterr, mode,
					       "a network policy needs a supervising parent");
	/*
	 * The child sends here, before it execs, the proxy's listener (net_ns with a
	 * proxy_port), then its supervisor's listener (self.c).
	 */
	_cleanup_close_ int meta_ours = -1, meta_theirs = -1;
	if (net || (ret_meta_fd && plan && c->landlock &&
		    (plan->filter_flags & SECCOMP_METADATA_NOTIFY))) {
		int sp[2];
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
			return policy_fail_unavailable(
				reterr, mode, "cannot make the metadata supervisor's socket");
		meta_ours = sp[0];
		meta_theirs = sp[1];
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
	memset(&rep, 0, sizeof(rep));
	int dumpable = prctl(PR_GET_DUMPABLE, 0L, 0L, 0L, 0L);
	sigset_t all, old;
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = vfork_child(c, opts, flags, filter_read, meta_theirs, &rep);
	int fork_errno = errno;
	if (dumpable >= 0 && prctl(PR_GET_DUMPABLE, 0L, 0L, 0L, 0L) != dumpable)
		(void)prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0L, 0L, 0L);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, fork_errno, "cannot fork");

	if (!rep.failed) {
		*ret_pid = pid;
		if (meta_ours >= 0 && plan->proxy_port)
			*ret_proxy_fd = fd_receive(meta_ours, MSG_DONTWAIT); /* the child checked */
		if (meta_ours >= 0) {
			*ret_meta_fd = fd_receive(meta_ours, MSG_DONTWAIT); /* none: it refuses */
			meta_listener_tune(*ret_meta_fd);
		}
		if (ret_achieved)
			*ret_achieved = rep.achieved;
		return 0;
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	rep.detail[sizeof(rep.detail) - 1] = '\0';
	if (rep.failed == 2)
		return policy_fail_unavailable(reterr, mode, rep.detail);
	if (rep.failed == 3) {
		/*
		 * Node's spawn error is named Error with the message "spawn X ENOENT"; DSH's
		 * renderers add the "Error: " themselves. The detail carries String(error), as a
		 * runner failure quotes it: without the name here, a tool result never says "Error:
		 * Error: ...".
		 */
		static const char node_name[] = "Error: ";
		const char *message = rep.detail;
		if (strncmp(message, node_name, sizeof(node_name) - 1) == 0)
			message += sizeof(node_name) - 1;
		int r = dsb_fail(reterr, DSB_E_EXEC_FAILED, "%s", message);
		if (reterr) {
			reterr->sys_errno = rep.sys_errno;
			(void)snprintf(reterr->subject, sizeof(reterr->subject), "%s", c->argv[0]);
		}
		return r;
	}
	return dsb_fail_errno(reterr, DSB_E_IO, rep.sys_errno, "%s", rep.detail);
}

int dsb_confined_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts,
		       pid_t *ret_pid, dsb_error *reterr)
{
	return confined_spawn(c, mode, opts, NULL, NULL, 0, ret_pid, NULL, reterr);
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
