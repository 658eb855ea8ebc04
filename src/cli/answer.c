/* SPDX-License-Identifier: MIT */
/*
 * The CLI's approval answerer (dsh-compat §8.3 answerer chain), asked when approval.answerer names
 * no program (the library asks that one itself): a prompt on the controlling terminal (allow once
 * / reject; Ctrl-C cancels), its values escaped to what their bytes are; without a terminal none,
 * which the service records as `unavailable`. An unanswered prompt is cancelled at the call's
 * timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/core.h"
#include "answer.h"

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	interrupted = sig;
}

/* What ends the question: Ctrl-C cancels it; SIGTERM and SIGHUP stop the whole call. */
static const int question_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_QUESTION_SIGNALS (sizeof(question_signals) / sizeof(question_signals[0]))

/* "  NAME VALUE\n", the value escaped (visible_escape()): one line, whatever its bytes. */
static int put_field(strbuf *sb, const char *name, const char *value)
{
	int r = strbuf_printf(sb, "  %-15s", name);
	if (r >= 0)
		r = visible_escape_append(sb, value ? value : "", value ? strlen(value) : 0, 0);
	return r < 0 ? r : strbuf_putc(sb, '\n');
}

/*
 * The question as the person reads it. The command, path and justification are the model's
 * and may be hostile: a carriage return and an erase-line sequence would show "ls -la" for
 * "touch /tmp/pwned\r\x1b[2Kls -la", and a newline would forge a line of ours. So every value is
 * escaped to one line of what its bytes are, and the whole string that runs is shown, nothing
 * cut (a question that could not be made whole is not asked). NULL on OOM.
 */
static char *question(const dsb_approval_request *req)
{
	const char *subject = req->subject ? req->subject : "";
	strbuf sb = STRBUF_INIT;
	int r = strbuf_puts(&sb, "\ndsh-sandbox: approval needed\n");
	if (r >= 0)
		r = put_field(&sb, "tool:", req->tool_name);
	if (r >= 0)
		r = put_field(&sb, subject[0] == '/' ? "path:" : "command:", subject);
	if (r >= 0 && req->mode) {
		r = put_field(&sb, "mode:", req->mode);
		if (r >= 0)
			r = put_field(&sb, "justification:", req->justification);
	} else if (r >= 0)
		r = put_field(&sb, "reason:", req->reason);
	/* What the retried call was refused: what the wider mode is for. */
	for (const char *p = req->refused; r >= 0 && p && *p;) {
		size_t n = strcspn(p, "\n");
		_cleanup_free_ char *line = strndup(p, n);
		r = line ? put_field(&sb, "refused:", line) : -ENOMEM;
		p += n + (p[n] == '\n');
	}
	if (r >= 0)
		r = strbuf_puts(&sb, "Allow once? [y/N] ");
	if (r < 0) {
		strbuf_done(&sb);
		return NULL;
	}
	return strbuf_take(&sb);
}

/* The controlling terminal, where a person can answer. No terminal: no answerer. */
int cli_answer_terminal(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
{
	_cleanup_free_ char *text = question(req);
	if (!text)
		return -ENOMEM;
	_cleanup_close_ int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty < 0) {
		bool *no_terminal = userdata;
		if (no_terminal)
			*no_terminal = true;
		*ret = DSB_OUTCOME_UNAVAILABLE;
		return 0;
	}
	/* Ctrl-C cancels: the handler is in place before the person can see the question. */
	struct sigaction on_int = {.sa_handler = on_interrupt}, old[N_QUESTION_SIGNALS];
	interrupted = 0;
	for (size_t i = 0; i < N_QUESTION_SIGNALS; i++)
		sigaction(question_signals[i], &on_int, &old[i]);
	(void)fd_write_all(tty, text, strlen(text));
	char answer[64];
	uint64_t now = monotonic_ms();
	uint64_t deadline = req->timeout_ms > UINT64_MAX - now ? UINT64_MAX : now + req->timeout_ms;
	/* One line, until the deadline or Ctrl-C: 0, -ETIMEDOUT, -EINTR. */
	int r = fd_read_until(tty, answer, sizeof(answer), deadline, -1, &interrupted, true);
	for (size_t i = 0; i < N_QUESTION_SIGNALS; i++)
		sigaction(question_signals[i], &old[i], NULL);
	/* Passed on to whoever handled it before the question: the call's own end (interrupt.c). */
	if (interrupted && interrupted != SIGINT)
		(void)raise(interrupted);
	if (r < 0) {
		dprintf(tty, "\n");
		*ret = DSB_OUTCOME_CANCELLED;
		return 0;
	}
	char *word = str_trim_space(answer);
	*ret = strcmp(word, "y") == 0 || strcmp(word, "yes") == 0 || strcmp(word, "Y") == 0
		       ? DSB_OUTCOME_ALLOWED_ONCE
		       : DSB_OUTCOME_REJECTED;
	return 0;
}
