/* SPDX-License-Identifier: MIT */
/* A call interrupted by a signal to dsh-sandbox: cancelled, its output kept (interrupt.c). */
#ifndef DSB_CLI_INTERRUPT_H
#define DSB_CLI_INTERRUPT_H

#include <stdbool.h>

#include "cli.h"

/* From now until cli_interrupt_disarm(), SIGINT, SIGTERM and SIGHUP cancel @call. */
void cli_interrupt_arm(dsb_call *call);

/* The command now holds the terminal: the terminal's Ctrl-C and Ctrl-\ are its alone. */
void cli_interrupt_command_has_terminal(void);

/* The signals' defaults back (before the call is freed); the first signal caught, or 0. */
int cli_interrupt_disarm(void);

/* "dsh-sandbox: interrupted by SIGNAME: ..." on stderr; @ran: the command had started. */
void cli_interrupt_report(int sig, bool ran);

#endif
