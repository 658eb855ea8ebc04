/* SPDX-License-Identifier: MIT */
/*
 * The processes one call starts, and the guarantee that none outlives it: setsid'd,
 * double-forked and nohup'ed children included, whatever mode ran them.
 *
 * The mechanism is a child subreaper (prctl PR_SET_CHILD_SUBREAPER): an orphan is re-parented to
 * the nearest subreaper among its ancestors instead of init, so everything a command starts
 * stays below the subreaper, and once the command is done the subreaper kills its children
 * until none is left. It needs no namespace (the Landlock backend exists for hosts where bwrap
 * and namespaces cannot run), no delegated cgroup, and keeps setsid(), process groups and ptys
 * working for the command. Why not the alternatives alone: a PID namespace needs an init process
 * of its own on every call and privileges Landlock hosts often lack; cgroup.kill needs a
 * delegated cgroup v2 tree; a process-group kill misses setsid'd children. Where a Landlock
 * call has no cgroup, its command runs in a PID namespace too (steps.c), whose init, our child,
 * is killed first (reap_kill_init()): a fork bomb is ended at once, not walked.
 *
 * Who is the subreaper, on both backends (bwrap's PID namespace alone leaves a gap: see
 * tree_spawn()):
 *  - this process, when nothing else can become its child meanwhile: it is single-threaded and
 *    has no child (the CLI; a simple library caller). It becomes a subreaper for the call and
 *    kills and reaps every child it has at the end. No extra process.
 *  - otherwise a monitor (monitor.c): a forked process that is the subreaper, spawns the
 *    command, reports its status through a pipe, and kills what is left when told to or when
 *    we go away. A server forks it through its spawner (spawner.c), a small process forked at
 *    its start.
 *
 * A command can only leave the tree by killing its subreaper; Landlock's signal scope (ABI 6)
 * keeps it from signalling anything outside its domain, and `probe` says when that is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine.h"

int tree_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts, unsigned flags,
	       proc_tree *t, dsb_error *reterr)
{
	*t = (proc_tree)PROC_TREE_INIT;
	bool reap = flags & TREE_REAP;
	/*
	 * bwrap's PID namespace is not enough on its own: its init dies with bwrap only once it
	 * has armed --die-with-parent, and bwrap killed before that (a call cancelled, or its
	 * caller killed, as the sandbox is being set up) leaves the init orphaned, running the
	 * command with its daemons. Reaped like any other tree, the orphan is re-parented to the
	 * subreaper, which ends it (tests/e2e/t-serve.sh "storm").
	 */
	if (!reap || reap_alone()) {
		if (reap) {
			int was = 0;
			(void)prctl(PR_GET_CHILD_SUBREAPER, &was, 0L, 0L, 0L);
			t->was_subreaper = was != 0;
			if (!was && prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) < 0)
				return dsb_fail_errno(reterr, DSB_E_IO, errno,
						      "cannot become a child subreaper");
			t->reaping = true;
		}
		spawn_handoff h = SPAWN_HANDOFF_INIT;
		unsigned spawn_flags = (reap ? SPAWN_DIE_WITH_PARENT : 0) |
				       (flags & TREE_FOREGROUND ? SPAWN_FOREGROUND : 0);
		int r = call_cgroup_for(c, mode, &t->cg, reterr);
		if (r >= 0)
			r = confined_spawn(c, mode, opts, spawn_flags, t->cg.procs, &t->leader, &h,
					   NULL, reterr);
		if (r < 0) {
			tree_done(t);
			return r;
		}
		t->achieved = h.achieved;
		t->init = h.init;
		t->init_fd = h.init > 0 ? pidfd_open_raw(h.init) : -1;
		supervision_start(&t->sv, confined_plan(c), &h);
		t->event_fd = pidfd_open_raw(t->leader); /* < 0: tree_check() polls instead */
		return 0;
	}

	int status_pipe[2], ctl_pipe[2];
	if (pipe2(status_pipe, O_CLOEXEC) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "cannot create a pipe");
	if (pipe2(ctl_pipe, O_CLOEXEC) < 0) {
		int e = errno;
		(void)close(status_pipe[0]);
		(void)close(status_pipe[1]);
		return dsb_fail_errno(reterr, DSB_E_IO, e, "cannot create a pipe");
	}
	/* The spawner's fork is cheap; ours copies a threaded process (spawner.c). */
	bool spawned = spawner_request(c, mode, opts, status_pipe[1], ctl_pipe[0]) == 0;
	pid_t pid = spawned ? -1 : fork();
	if (pid == 0)
		monitor_run(c, mode, opts, status_pipe[1], ctl_pipe[0]);
	int e = errno;
	(void)close(status_pipe[1]);
	(void)close(ctl_pipe[0]);
	t->event_fd = status_pipe[0];
	t->ctl_fd = ctl_pipe[1];
	if (pid < 0 && !spawned) {
		tree_done(t);
		return dsb_fail_errno(reterr, DSB_E_IO, e, "cannot fork");
	}
	t->monitor = pid;

	monitor_report m = {0};
	int r = record_receive(t->event_fd, &monitor_report_record, &m);
	if (r < 0 || m.kind != MONITOR_STARTED) {
		tree_done(t);
		if (r >= 0 && m.kind == MONITOR_FAILED) {
			r = dsb_fail(reterr, (dsb_code)m.err_code, "%s",
				     m.err_message ? m.err_message : "");
			if (reterr) {
				reterr->sys_errno = m.err_errno;
				dsb_error_set_subject(reterr, m.err_subject ? m.err_subject : "");
			}
		} else
			r = dsb_fail(reterr, DSB_E_IO, "the monitor process failed");
		record_free(&monitor_report_record, &m);
		return r;
	}
	t->leader = m.pid;
	t->achieved = m.achieved;
	/* The monitor's child, alive until it is killed: this pidfd cannot name another. */
	t->init_fd = m.init > 0 ? pidfd_open_raw(m.init) : -1;
	record_free(&monitor_report_record, &m);
	return 0;
}

int tree_check(proc_tree *t, int *ret_status)
{
	if (t->ended) {
		*ret_status = t->status;
		return 1;
	}
	if (t->monitor) {
		struct pollfd p = {.fd = t->event_fd, .events = POLLIN};
		if (poll(&p, 1, 0) <= 0)
			return 0;
		monitor_report m = {0};
		if (record_receive(t->event_fd, &monitor_report_record, &m) < 0 ||
		    m.kind != MONITOR_ENDED) {
			record_free(&monitor_report_record, &m);
			m.status =
				W_EXITCODE(125, 0); /* the monitor died: nothing left to wait for */
		}
		t->status = m.status;
		t->refused = m.refusals; /* taken */
		m.refusals = (confine_refusals){0};
		record_free(&monitor_report_record, &m);
	} else {
		int status;
		pid_t w;
		if (t->reaping) {
			/* Every child is the command's: orphans that ended are reaped as we go. */
			bool found = false;
			while (!found && (w = waitpid(-1, &status, WNOHANG)) > 0) {
				found = w == t->leader;
				if (w == t->init)
					t->init = 0; /* killed from inside (no signal scope) */
			}
			if (!found)
				return 0;
		} else {
			w = waitpid(t->leader, &status, WNOHANG);
			if (w != t->leader)
				return w < 0 && errno != EINTR ? -errno : 0;
		}
		t->status = status;
	}
	t->ended = true;
	*ret_status = t->status;
	return 1;
}

void tree_signal(const proc_tree *t, int sig)
{
	/* Once reaped, the leader's pid may name someone else's process: tree_done() ends the
	 * rest by another route. */
	if (t->ended || t->leader <= 0)
		return;
	if (kill(-t->leader, sig) < 0)
		(void)kill(t->leader, sig);
	/*
	 * A SIGKILL is for the whole tree: in a PID namespace, its init's death ends every
	 * process at once. The leader alone would have to wait its turn to die behind a bomb's
	 * every process, and the tree would be ended only after that.
	 */
	if (sig == SIGKILL && t->init_fd >= 0)
		(void)syscall(SYS_pidfd_send_signal, t->init_fd, SIGKILL, NULL, 0);
}

void tree_done(proc_tree *t)
{
	if (t->monitor) {
		/* Closing the control pipe is the monitor's cue to kill what is left and exit. */
		if (t->ctl_fd >= 0)
			(void)close(t->ctl_fd);
		t->ctl_fd = -1;
		if (t->monitor > 0) {
			while (waitpid(t->monitor, NULL, 0) < 0 && errno == EINTR)
				;
		} else {
			/* The spawner's child: its status pipe ends when it has. */
			char drain[4096];
			for (ssize_t k = 1; t->event_fd >= 0 && k != 0;)
				if ((k = read(t->event_fd, drain, sizeof(drain))) < 0 &&
				    errno != EINTR)
					break;
		}
	} else if (t->reaping) {
		reap_kill_init(t->ended ? 0 : t->leader, t->init);
		if (t->init > 0)
			t->ended = true;  /* reaped */
		call_cgroup_kill(&t->cg); /* the whole tree at once, where a cgroup holds it */
		reap_kill_children(t->ended ? 0 : t->leader);
		if (!t->was_subreaper)
			(void)prctl(PR_SET_CHILD_SUBREAPER, 0L, 0L, 0L, 0L);
	} else if (t->leader > 0 && !t->ended) {
		/* Not ours to reap beyond the leader (bwrap contains the rest): end and reap it. */
		(void)kill(t->leader, SIGKILL);
		while (waitpid(t->leader, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (t->event_fd >= 0)
		(void)close(t->event_fd);
	if (t->ctl_fd >= 0)
		(void)close(t->ctl_fd);
	if (t->init_fd >= 0)
		(void)close(t->init_fd);
	/* After the tree: nothing is left in its cgroups, nor to call the supervisor. */
	call_cgroup_remove(&t->cg);
	supervision_done(&t->sv);
	record_free(&confine_refusals_record, &t->refused);
	*t = (proc_tree)PROC_TREE_INIT;
}

void tree_supervise(proc_tree *t, short revents)
{
	supervision_ready(&t->sv, revents);
}

int tree_refusals(proc_tree *t, confine_refusals *ret)
{
	if (!t->monitor) {
		int r = supervision_refusals(&t->sv, ret);
		ret->limits_hit = call_cgroup_hits(&t->cg);
		return r;
	}
	*ret = (confine_refusals){.metadata = t->refused.metadata,
				  .network = t->refused.network,
				  .limits_hit = t->refused.limits_hit,
				  .evidence = t->refused.evidence,
				  .files = t->refused.files};
	if (t->refused.named && !(ret->named = strv_copy(t->refused.named)))
		return -ENOMEM;
	if (t->refused.files_named && !(ret->files_named = strv_copy(t->refused.files_named)))
		return -ENOMEM;
	return 0;
}
