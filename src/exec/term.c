/* SPDX-License-Identifier: MIT */
/*
 * The terminal a person's confined command is given (`dsh-sandbox exec`). The command runs in a
 * process group of its own, so that a signal it sends its group reaches nobody outside
 * (confine/spawn.c); a group that is not the terminal's foreground could not read the terminal
 * nor get its Ctrl-C. So while it runs, its group is the foreground: Ctrl-C and Ctrl-\ go to it
 * alone, and Ctrl-Z stops it, upon which we take the terminal back and stop our own group as
 * the terminal would have, so that the person's shell sees its job stop; `fg` continues us, and
 * we give the terminal back to the command and continue its group. At the end the foreground
 * and the terminal's settings are ours again, whatever the command left.
 *
 * The command's child makes its group the foreground itself, before exec (SPAWN_FOREGROUND in
 * confine/spawn.c), as a shell's child does: one given the terminal only once we ran again could
 * read it first, and stop on SIGTTIN. term_give() then does the same from here, for a command
 * spawned by a monitor, which is not our child: there it may lose that race, and its stops are
 * not followed (term_watch() waits for our own child's stops only).
 *
 * While the command holds the terminal, we are a background process of it: SIGTTOU, which the
 * kernel raises for a background writer under `stty tostop` and for tcsetpgrp() and tcsetattr()
 * from the background, stays blocked in this thread, so that none of them stops us.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "exec.h"

bool term_open(exec_term *t)
{
	*t = (exec_term){.fd = -1};
	int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false; /* no controlling terminal: nothing to give */
	pid_t ours = getpgrp();
	if (tcgetpgrp(fd) != ours) {
		(void)close(fd); /* we run in the background: so does the command */
		return false;
	}
	*t = (exec_term){.fd = fd, .ours = ours};
	t->have_modes = tcgetattr(fd, &t->modes) == 0;
	sigset_t ttou;
	(void)sigemptyset(&ttou);
	(void)sigaddset(&ttou, SIGTTOU);
	(void)pthread_sigmask(SIG_BLOCK, &ttou, &t->mask);
	return true;
}

void term_give(exec_term *t, pid_t pgid)
{
	if (t->fd < 0)
		return;
	t->theirs = pgid;
	if (tcgetpgrp(t->fd) != pgid && tcsetpgrp(t->fd, pgid) < 0)
		t->theirs = 0; /* no such group of ours (a runner that made none): keep it */
}

bool term_watch(exec_term *t, pid_t leader)
{
	if (t->fd < 0 || t->theirs <= 0 || leader <= 0)
		return false;
	/*
	 * Only the stop: an exit stays for tree_check() to reap (WEXITED is not asked for), and
	 * a stop is reported to this one waitid() only, since nothing else here asks for stops.
	 */
	siginfo_t si = {0};
	if (waitid(P_PID, (id_t)leader, &si, WSTOPPED | WNOHANG) < 0 || si.si_pid != leader)
		return false;
	/* Stopped (Ctrl-Z, or a signal): the person's shell gets its job back. */
	struct termios theirs;
	bool have_theirs = tcgetattr(t->fd, &theirs) == 0;
	(void)tcsetpgrp(t->fd, t->ours);
	if (t->have_modes)
		(void)tcsetattr(t->fd, TCSADRAIN, &t->modes);
	/*
	 * Our whole group, as the terminal stops its foreground group: a script that ran us is
	 * stopped with us, and its shell sees the job stop. An orphaned group is not stopped by
	 * SIGTSTP (nobody could continue it): then we go straight on.
	 */
	(void)kill(0, SIGTSTP);
	/* Continued (fg): the settings the shell gave us are ours now; the command's as it left
	 * them. */
	t->have_modes = tcgetattr(t->fd, &t->modes) == 0;
	if (have_theirs)
		(void)tcsetattr(t->fd, TCSADRAIN, &theirs);
	(void)tcsetpgrp(t->fd, t->theirs);
	(void)kill(-t->theirs, SIGCONT);
	return true;
}

void term_take_back(exec_term *t)
{
	if (t->fd < 0)
		return;
	(void)tcsetpgrp(t->fd, t->ours);
	if (t->have_modes)
		(void)tcsetattr(t->fd, TCSADRAIN, &t->modes);
	(void)close(t->fd);
	if (!sigismember(&t->mask, SIGTTOU)) {
		sigset_t ttou;
		(void)sigemptyset(&ttou);
		(void)sigaddset(&ttou, SIGTTOU);
		(void)pthread_sigmask(SIG_UNBLOCK, &ttou, NULL);
	}
	*t = (exec_term){.fd = -1};
}
