/* SPDX-License-Identifier: MIT */
/*
 * The CLI's approval answerers (spec §8.3 answerer chain): the external command of
 * approval.answerer, which reads the request as one JSON line on stdin and prints one outcome;
 * else a prompt on the controlling terminal (allow once / reject; Ctrl-C cancels); else none,
 * which the service turns into `unavailable`. A hung answerer is cancelled at the call's
 * timeout and its late answer discarded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/core.h"
#include "answer.h"

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Reads up to @size-1 bytes from @fd until EOF, the deadline or Ctrl-C. 0, or -ETIMEDOUT/-EINTR. */
static int read_until(int fd, char *buf, size_t size, uint64_t deadline, bool stop_at_newline)
{
	size_t len = 0;
	buf[0] = '\0';
	while (len + 1 < size) {
		uint64_t now = monotonic_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (interrupted)
			return -EINTR;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		uint64_t left = deadline - now;
		int k = poll(&p, 1, left > 200 ? 200 : (int)left);
		if (k < 0 && errno != EINTR)
			return -errno;
		if (k <= 0)
			continue;
		ssize_t n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (stop_at_newline && memchr(buf, '\n', len))
			break;
	}
	return 0;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n > 0 && strchr(" \t\r\n", s[n - 1]))
		s[--n] = '\0';
	return s;
}

static int put_member(strbuf *sb, const char *key, const char *value)
{
	if (!value)
		return 0;
	int r = strbuf_printf(sb, "%s\"%s\":", sb->len > 1 ? "," : "", key);
	return r < 0 ? r : json_quote_append(sb, value, strlen(value));
}

/* The external command: request on stdin as one JSON line, the outcome word on stdout. */
static int ask_command(const cli_answerer *a, const dsb_approval_request *req,
		       dsb_approval_outcome *ret)
{
	strbuf line = STRBUF_INIT;
	int r = strbuf_putc(&line, '{');
	if (r >= 0)
		r = put_member(&line, "id", req->id);
	if (r >= 0)
		r = put_member(&line, "sessionId", req->session_id);
	if (r >= 0)
		r = put_member(&line, "toolName", req->tool_name);
	if (r >= 0)
		r = put_member(&line, "callId", req->call_id);
	if (r >= 0)
		r = put_member(&line, "reason", req->reason);
	if (r >= 0)
		r = put_member(&line, "subject", req->subject);
	if (r >= 0)
		r = strbuf_puts(&line, "}\n");
	int in[2] = {-1, -1}, out[2] = {-1, -1};
	if (r < 0 || pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
		strbuf_done(&line);
		return -1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execvp(a->argv[0], a->argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	/* A small line; an answerer that does not read it gets EPIPE, not us blocked. */
	struct sigaction ignore = {.sa_handler = SIG_IGN}, old;
	sigaction(SIGPIPE, &ignore, &old);
	ssize_t ignored = pid > 0 ? write(in[1], line.buf, line.len) : -1;
	(void)ignored;
	sigaction(SIGPIPE, &old, NULL);
	close(in[1]);
	strbuf_done(&line);
	if (pid < 0) {
		close(out[0]);
		return -1;
	}

	char said[256];
	r = read_until(out[0], said, sizeof(said), monotonic_ms() + a->timeout_ms, false);
	close(out[0]);
	int status = 0;
	if (r < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		*ret = DSB_OUTCOME_CANCELLED; /* a hung answerer: the call's time is up */
		return 0;
	}
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1; /* a failing answerer: unavailable */
	*ret = dsb_approval_outcome_from_string(trim(said));
	return 0;
}

/* The controlling terminal, where a person can answer. No terminal: no answerer. */
static int ask_terminal(const cli_answerer *a, const dsb_approval_request *req,
			dsb_approval_outcome *ret)
{
	_cleanup_close_ int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty < 0) {
		*ret = DSB_OUTCOME_UNAVAILABLE;
		return 0;
	}
	/* Ctrl-C cancels: the handler is in place before the person can see the question. */
	struct sigaction on_int = {.sa_handler = on_interrupt}, old;
	interrupted = 0;
	sigaction(SIGINT, &on_int, &old);
	dprintf(tty,
		"\ndsh-sandbox: approval needed\n  tool:    %s\n  %s: %s\n  reason:  %s\n"
		"Allow once? [y/N] ",
		req->tool_name,
		req->subject && strchr(req->subject, '/') == req->subject ? "path" : "command",
		req->subject ? req->subject : "", req->reason ? req->reason : "");
	char answer[64];
	int r = read_until(tty, answer, sizeof(answer), monotonic_ms() + a->timeout_ms, true);
	sigaction(SIGINT, &old, NULL);
	if (r < 0) {
		dprintf(tty, "\n");
		*ret = DSB_OUTCOME_CANCELLED;
		return 0;
	}
	char *word = trim(answer);
	*ret = strcmp(word, "y") == 0 || strcmp(word, "yes") == 0 || strcmp(word, "Y") == 0
		       ? DSB_OUTCOME_ALLOWED_ONCE
		       : DSB_OUTCOME_REJECTED;
	return 0;
}

int cli_answer(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
{
	const cli_answerer *a = userdata;
	if (a->argv && a->argv[0])
		return ask_command(a, req, ret);
	return ask_terminal(a, req, ret);
}
