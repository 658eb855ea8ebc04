/* SPDX-License-Identifier: MIT */
/*
 * The CLI's approval answerer (dsh-compat §8.3 answerer chain), asked when approval.answerer names
 * no program (the library asks that one itself): a prompt on the controlling terminal (allow once
 * / reject; Ctrl-C cancels); without a terminal none, which the service records as
 * `unavailable`. An unanswered prompt is cancelled at the call's timeout.
 */
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
	(void)sig;
	interrupted = 1;
}

/* The controlling terminal, where a person can answer. No terminal: no answerer. */
int cli_answer_terminal(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
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
	uint64_t now = monotonic_ms();
	uint64_t deadline = req->timeout_ms > UINT64_MAX - now ? UINT64_MAX : now + req->timeout_ms;
	/* One line, until the deadline or Ctrl-C: 0, -ETIMEDOUT, -EINTR. */
	int r = fd_read_until(tty, answer, sizeof(answer), deadline, -1, &interrupted, true);
	sigaction(SIGINT, &old, NULL);
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
