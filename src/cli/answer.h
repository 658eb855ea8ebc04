/* SPDX-License-Identifier: MIT */
/* The CLI's approval answerers: an external command, else the terminal, else none. */
#ifndef DSB_CLI_ANSWER_H
#define DSB_CLI_ANSWER_H

#include <stdint.h>

#include <dsb/approval.h>

typedef struct cli_answerer {
	char *const *argv;   /* approval.answerer, or empty: ask the controlling terminal */
	uint64_t timeout_ms; /* how long a person or command may take: the call's timeout */
} cli_answerer;

/* A dsb_answerer_fn; @userdata is a cli_answerer. */
int cli_answer(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret);

#endif
