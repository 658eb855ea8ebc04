/* SPDX-License-Identifier: MIT */
/*
 * The terminal a person's confined command is given (`dsh-sandbox exec`). The command runs in a
 * process group of its own, so that a signal it sends its group reaches nobody outside
 * (confine/spawn.c); a group that is not the terminal's foreground could not read the terminal
 * nor get its Ctrl-C. So while it runs, its group is the foreground: Ctrl-C and Ctrl-\ go to it
 * alone, and Ctrl-Z stops it, upon which we take the terminal back and stop as well, as a job
 * does, so that the person's shell sees the stop; `fg` continues us, and we give the terminal
 * back to the command and continue it. At the end the foreground and the terminal's settings
 * are ours again, whatever the command left.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "exec.h"

/* tcsetpgrp() from a background group raises SIGTTOU: held back for the call. */
static void set_foreground(int fd, pid_t pgid)
{
	sigset_t ttou, old;
	(void)sigemptyset(&ttou);
	(void)sigaddset(&ttou, SIGTTOU);
	(void)pthread_sigmask(SIG_BLOCK, &ttou, &old);
	(void)tcsetpgrp(fd, pgid);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void term_give(exec_term *t, pid_t pgid)
{
	*t = (exec_term){.fd = -1};
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return; /* no controlling terminal: nothing to give */
	pid_t ours = getpgrp();
	if (tcgetpgrp(fd) != ours) {
		(void)close(fd); /* we run in the background: so does the command */
		return;
	}
	*t = (exec_term){.fd = fd, .ours = ours, .theirs = pgid};
	t->have_modes = tcgetattr(fd, &t->modes) == 0;
	set_foreground(fd, pgid);
}

void term_watch(exec_term *t, pid_t leader)
{
	if (t->fd < 0)
		return;
	siginfo_t si = {0};
	if (waitid(P_PID, (id_t)leader, &si, WSTOPPED | WNOHANG) < 0 || si.si_pid != leader)
		return;
	/* Stopped (Ctrl-Z, or a signal): the person's shell gets its job back. */
	struct termios theirs;
	bool have_theirs = tcgetattr(t->fd, &theirs) == 0;
	set_foreground(t->fd, t->ours);
	if (t->have_modes)
		(void)tcsetattr(t->fd, TCSADRAIN, &t->modes);
	(void)raise(SIGTSTP);
	/* Continued (fg): as it was when it stopped. */
	t->have_modes = tcgetattr(t->fd, &t->modes) == 0;
	if (have_theirs)
		(void)tcsetattr(t->fd, TCSADRAIN, &theirs);
	set_foreground(t->fd, t->theirs);
	(void)kill(-t->theirs, SIGCONT);
}

void term_take_back(exec_term *t)
{
	if (t->fd < 0)
		return;
	set_foreground(t->fd, t->ours);
	if (t->have_modes)
		(void)tcsetattr(t->fd, TCSADRAIN, &t->modes);
	(void)close(t->fd);
	t->fd = -1;
}
