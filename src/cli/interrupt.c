/* SPDX-License-Identifier: MIT */
/*
 * A call interrupted: SIGINT, SIGTERM or SIGHUP sent to dsh-sandbox while it makes a call
 * cancels the call (its command's tree gets SIGTERM, then SIGKILL after bash.graceMs), so that
 * what the command said until then can still be printed and the exit status says which signal
 * ended it (128 + N, as a shell reports it). The default action would end dsh-sandbox at once:
 * the output already captured lost, and nothing said.
 *
 * A person's command (`exec`) holds the terminal: its group is the terminal's foreground, or,
 * unconfined, it shares ours. Either way a Ctrl-C the terminal sends has reached it already, and
 * it decides what that means (an interactive program may go on). So once it runs, a SIGINT the
 * kernel sent is ignored (and SIGQUIT, Ctrl-\, always); sent by a process (kill(1), timeout(1)),
 * it reached dsh-sandbox alone, and the call is cancelled.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "interrupt.h"

static dsb_call *armed_call;
static volatile sig_atomic_t caught_signal;
static volatile sig_atomic_t terminal_is_the_commands;

static const int stopping_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void on_signal(int sig, siginfo_t *info, void *ucontext)
{
	(void)ucontext;
	if (terminal_is_the_commands && info->si_code == SI_KERNEL)
		return;
	if (!caught_signal)
		caught_signal = sig;
	dsb_call_cancel(armed_call);
}

void cli_interrupt_arm(dsb_call *call)
{
	armed_call = call;
	caught_signal = 0;
	terminal_is_the_commands = 0;
	/* No SA_RESTART: a blocking read returns, and whoever waits sees the cancellation. */
	struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stopping_signals) / sizeof(stopping_signals[0]); i++)
		(void)sigaction(stopping_signals[i], &sa, NULL);
}

void cli_interrupt_command_has_terminal(void)
{
	terminal_is_the_commands = 1;
	/* Ctrl-\ is the command's to act on (a core dump of its own), never ours. */
	(void)signal(SIGQUIT, SIG_IGN);
}

int cli_interrupt_disarm(void)
{
	for (size_t i = 0; i < sizeof(stopping_signals) / sizeof(stopping_signals[0]); i++)
		(void)signal(stopping_signals[i], SIG_DFL);
	(void)signal(SIGQUIT, SIG_DFL);
	armed_call = NULL;
	return caught_signal;
}

void cli_interrupt_report(int sig, bool ran)
{
	const char *abbrev = sigabbrev_np(sig);
	cli_error("interrupted by SIG%s: %s", abbrev ? abbrev : "?",
		  ran ? "the command was stopped" : "nothing was run");
}
