/* SPDX-License-Identifier: MIT */
/* The CLI's approval answerer: a prompt on the controlling terminal. */
#ifndef DSB_CLI_ANSWER_H
#define DSB_CLI_ANSWER_H

#include <dsb/approval.h>

/*
 * A dsb_answerer_fn: asks on /dev/tty, allow once or reject, within the request's timeout_ms;
 * Ctrl-C or the timeout cancels; no terminal: unavailable, and *@userdata (a bool *, may be
 * NULL) set, so that the caller can say why nobody was asked.
 */
int cli_answer_terminal(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret);

#endif
