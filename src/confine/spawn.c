/* SPDX-License-Identifier: MIT */
/*
 * Spawning under a confinement. The child restricts itself (Landlock) and execs; nothing else
 * runs in between. Whatever goes wrong in the child before exec is written to a close-on-exec
 * pipe as a structured record: a successful exec closes the pipe and the parent reads EOF. The
 * command's own stdout and stderr never carry that record, so a confined command can neither
 * fake a runner failure nor hide one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../policy/policy.h"
#include "confine.h"

/* What a child that never reached exec reports. */
typedef struct child_report {
	int runner; /* 1: the sandbox runner failed (SANDBOX_UNAVAILABLE); 0: setup failed */
	int sys_errno;
	char detail[1024];
} child_report;

/* In the child: report and die. Only write(2) and _exit(2) after the message is formatted. */
static _Noreturn void child_fail(int fd, int runner, int errnum, const char *detail)
{
	child_report rep = {.runner = runner, .sys_errno = errnum};
	size_t n = strlen(detail);
	if (n >= sizeof(rep.detail))
		n = sizeof(rep.detail) - 1;
	memcpy(rep.detail, detail, n);
	ssize_t ignored = write(fd, &rep, sizeof(rep));
	(void)ignored;
	_exit(125);
}

static int move_fd(int from, int to)
{
	if (from < 0 || from == to)
		return 0;
	return dup2(from, to) < 0 ? -errno : 0;
}

static _Noreturn void child_run(const dsb_confined *c, const dsb_spawn_options *o, int report)
{
	char msg[1024];

	if (o->new_session && setsid() < 0)
		child_fail(report, 0, errno, "cannot start a new session");
	if (move_fd(o->stdin_fd, 0) < 0 || move_fd(o->stdout_fd, 1) < 0 ||
	    move_fd(o->stderr_fd, 2) < 0)
		child_fail(report, 0, errno, "cannot set up the standard streams");
	if (o->cwd && chdir(o->cwd) < 0) {
		(void)snprintf(msg, sizeof(msg), "cannot change directory to '%s': %s", o->cwd,
			       strerror(errno));
		child_fail(report, 0, errno, msg);
	}

	const landlock_plan *plan = confined_plan(c);
	if (plan) {
		landlock_status st;
		int r = landlock_restrict(plan, &st, msg, sizeof(msg));
		if (r < 0)
			child_fail(report, 1, -r, msg);
		/* DSH's launcher tells the command's stderr; the bytes stay the same (spec §5.6).
		 */
		if (st.partial) {
			ssize_t ignored =
				write(2, LL_PARTIAL_NOTICE "\n", sizeof(LL_PARTIAL_NOTICE));
			(void)ignored;
		}
	}

	if (o->envp)
		execvpe(c->argv[0], c->argv, o->envp);
	else
		execvp(c->argv[0], c->argv);

	/*
	 * The detail DSH reports: its launcher's line, or Node's spawn error. Without a backend
	 * (danger-full-access) the command itself failed to start: an ordinary error.
	 */
	int e = errno;
	const char *name = strerrorname_np(e);
	if (plan)
		(void)snprintf(msg, sizeof(msg), "landlock-run: exec failed: %s", strerror(e));
	else
		(void)snprintf(msg, sizeof(msg), "Error: spawn %s %s", c->argv[0],
			       name ? name : "EUNKNOWN");
	child_fail(report, c->backend != NULL, e, msg);
}

int dsb_confined_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts,
		       pid_t *ret_pid, dsb_error *reterr)
{
	static const dsb_spawn_options defaults = DSB_SPAWN_OPTIONS_INIT;
	if (!c || !c->argv || !c->argv[0] || !ret_pid)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_confined_spawn: nothing to run");
	if (!opts)
		opts = &defaults;

	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "cannot create a pipe");
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(fds[0]);
		close(fds[1]);
		return dsb_fail_errno(reterr, DSB_E_IO, e, "cannot fork");
	}
	if (pid == 0) {
		close(fds[0]);
		child_run(c, opts, fds[1]);
	}
	close(fds[1]);

	child_report rep;
	size_t got = 0;
	while (got < sizeof(rep)) {
		ssize_t n = read(fds[0], (char *)&rep + got, sizeof(rep) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	if (got == 0) {
		*ret_pid = pid; /* exec happened: the pipe closed with nothing in it */
		return 0;
	}

	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got != sizeof(rep))
		return policy_fail_unavailable(reterr, mode,
					       "the sandboxed child died before exec");
	rep.detail[sizeof(rep.detail) - 1] = '\0';
	if (rep.runner)
		return policy_fail_unavailable(reterr, mode, rep.detail);
	return dsb_fail_errno(reterr, DSB_E_IO, rep.sys_errno, "%s", rep.detail);
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
