/* SPDX-License-Identifier: MIT */
/*
 * The external answerer of approval.answerer (dsh-compat §8.3 answerer chain): a program that reads
 * the request as one JSON line on stdin and prints one outcome word. It runs as the caller,
 * unconfined, and is trusted with the decision (the configuration names it and the call's
 * protected paths keep it out of a command's reach). A hung answerer is cancelled at the call's
 * timeout, or when the call is cancelled, and its late answer discarded.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "approval.h"

static int put_member(strbuf *sb, const char *key, const char *value)
{
	if (!value)
		return 0;
	int r = strbuf_printf(sb, "%s\"%s\":", sb->len > 1 ? "," : "", key);
	return r < 0 ? r : json_quote_append(sb, value, strlen(value));
}

/*
 * The request as the program reads it: one JSON object and a newline. The values are raw (the
 * program decides on the bytes that run); JSON's quoting escapes every control character (\r,
 * \u001b), so the line is one line and drives no terminal. DEL, C1, bidi and invisible
 * characters stay raw, as JSON has them: a program that shows them to a person escapes them
 * itself. -ENOMEM.
 */
static int request_line(const dsb_approval_request *req, strbuf *line)
{
	int r = strbuf_putc(line, '{');
	if (r >= 0)
		r = put_member(line, "id", req->id);
	if (r >= 0)
		r = put_member(line, "sessionId", req->session_id);
	if (r >= 0)
		r = put_member(line, "toolName", req->tool_name);
	if (r >= 0)
		r = put_member(line, "callId", req->call_id);
	if (r >= 0)
		r = put_member(line, "reason", req->reason);
	if (r >= 0)
		r = put_member(line, "subject", req->subject);
	if (r >= 0 && req->refused)
		r = put_member(line, "refused", req->refused);
	if (r >= 0)
		r = strbuf_puts(line, "}\n");
	return r;
}

/* Starts @argv with @in as its stdin and @out as its stdout. The pid, or -1 with *@ret_errno. */
static pid_t spawn_answerer(char *const *argv, int in, int out, int *ret_errno)
{
	/* posix_spawn, not fork: the caller may be a threaded server. */
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	pid_t pid = -1;
	*ret_errno = ENOMEM;
	if (posix_spawn_file_actions_init(&fa) != 0)
		return -1;
	if (posix_spawnattr_init(&attr) != 0) {
		(void)posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	/*
	 * A clean start: a server blocks its stop signals in every thread and ignores SIGPIPE,
	 * and the program must not inherit either (a mask and an ignored signal survive exec).
	 */
	(void)sigemptyset(&none);
	(void)sigfillset(&all);
	if (posix_spawnattr_setsigmask(&attr, &none) == 0 &&
	    posix_spawnattr_setsigdefault(&attr, &all) == 0 &&
	    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF) == 0 &&
	    posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO) == 0 &&
	    posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO) == 0 &&
	    (*ret_errno = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ)) != 0)
		pid = -1;
	(void)posix_spawnattr_destroy(&attr);
	(void)posix_spawn_file_actions_destroy(&fa);
	return pid;
}

/* *@ret_why (may be NULL) as printf(@fmt) names it: what became of the question. -1. */
static int failed(char **ret_why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failed(char **ret_why, const char *fmt, ...)
{
	if (ret_why) {
		va_list ap;
		va_start(ap, fmt);
		if (vasprintf(ret_why, fmt, ap) < 0)
			*ret_why = NULL;
		va_end(ap);
	}
	return -1;
}

int approval_answer_command(char *const *argv, const dsb_approval_request *req, uint64_t timeout_ms,
			    int cancel_fd, dsb_approval_outcome *ret_outcome, char **ret_why)
{
	strbuf line = STRBUF_INIT;
	int in[2] = {-1, -1}, out[2] = {-1, -1};
	if (ret_why)
		*ret_why = NULL;
	if (request_line(req, &line) < 0 || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		int e = errno;
		const int fds[] = {in[0], in[1]};
		for (size_t i = 0; i < ELEMENTSOF(fds); i++)
			if (fds[i] >= 0)
				close(fds[i]);
		strbuf_done(&line);
		return failed(ret_why, "the approval answerer %s could not be asked: %s", argv[0],
			      strerror(e));
	}
	int spawn_errno = 0;
	pid_t pid = spawn_answerer(argv, in[0], out[1], &spawn_errno);
	close(in[0]);
	close(out[1]);
	/* A small line; an answerer that does not read it gets EPIPE, not us blocked. */
	if (pid > 0)
		(void)write_no_sigpipe(in[1], line.buf, line.len);
	close(in[1]);
	strbuf_done(&line);
	if (pid < 0) {
		close(out[0]);
		return failed(ret_why, "the approval answerer %s could not be started: %s", argv[0],
			      strerror(spawn_errno));
	}

	char said[256];
	uint64_t now = monotonic_ms();
	uint64_t deadline = timeout_ms > UINT64_MAX - now ? UINT64_MAX : now + timeout_ms;
	/* What the program says until it closes its stdout, the deadline or a cancel. */
	int r = fd_read_until(out[0], said, sizeof(said), deadline, cancel_fd, NULL, false);
	close(out[0]);
	int status = 0;
	if (r < 0) {
		(void)kill(pid, SIGKILL);
		(void)waitpid(pid, NULL, 0);
		*ret_outcome = DSB_OUTCOME_CANCELLED; /* a hung answerer: the call's time is up */
		if (r == -ETIMEDOUT)
			(void)failed(ret_why,
				     "the approval answerer %s gave no answer within %" PRIu64
				     " ms",
				     argv[0], timeout_ms);
		return 0;
	}
	/* A failing answerer: unavailable, and whoever reads the note learns why. */
	if (waitpid(pid, &status, 0) < 0)
		return failed(ret_why, "the approval answerer %s could not be waited for: %s",
			      argv[0], strerror(errno));
	if (WIFSIGNALED(status))
		return failed(
			ret_why, "the approval answerer %s was killed by signal SIG%s", argv[0],
			sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
	if (WEXITSTATUS(status) != 0)
		return failed(ret_why, "the approval answerer %s exited with status %d", argv[0],
			      WEXITSTATUS(status));
	char *word = str_trim_space(said);
	*ret_outcome = dsb_approval_outcome_from_string(word);
	if (*ret_outcome < 0) {
		_cleanup_free_ char *shown = NULL;
		if (visible_escape(word, strlen(word), 0, &shown) < 0)
			shown = NULL;
		(void)failed(ret_why,
			     "the approval answerer %s answered \"%s\", which is none of "
			     "allowed-once, rejected, cancelled, unavailable",
			     argv[0], shown ? shown : "");
	}
	return 0;
}
