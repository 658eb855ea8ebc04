/* SPDX-License-Identifier: MIT */
/*
 * A call's monitor: a forked process (of the caller, or of its spawner) that is the subreaper
 * of one call's processes when the caller cannot be (tree.c). It spawns the command, reports
 * its start and end to the caller as records (monitor_report) on a pipe, supervises the run's
 * calls, reaps orphans as they die, and kills what is left when the caller closes its control
 * pipe (asked to, or gone).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine.h"

#define RECORD monitor_report
static const record_field monitor_report_fields[] = {MONITOR_REPORT_FIELDS(RECORD_FIELD)};
const record_type monitor_report_record = RECORD_TYPE(monitor_report_fields);
#undef RECORD

/*
 * The monitor, a forked copy of the caller or of its spawner: keeps only the descriptors it
 * needs (a multi-threaded caller's other pipes must not be held open here).
 */
_Noreturn void monitor_run(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *o,
			   int status_w, int ctl_r)
{
	/* The descriptors we keep, moved to 3..7 in that order; everything else closed. */
	int keep[5] = {status_w, ctl_r, o->stdin_fd, o->stdout_fd, o->stderr_fd};
	int high[5];
	for (int i = 0; i < 5; i++)
		high[i] = keep[i] < 0 ? -1 : fcntl(keep[i], F_DUPFD_CLOEXEC, 64);
	for (int i = 0; i < 5; i++)
		if (high[i] >= 0 && dup3(high[i], 3 + i, O_CLOEXEC) < 0)
			_exit(125);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 8U, ~0U, 0U) < 0)
#endif
		for (int fd = 8; fd < 65536; fd++)
			(void)close(fd);

	(void)prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
	/* A copy of the caller's memory, secrets included: nobody may read or trace it. */
	(void)prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);

	dsb_spawn_options so = *o;
	so.stdin_fd = high[2] < 0 ? -1 : 5;
	so.stdout_fd = high[3] < 0 ? -1 : 6;
	so.stderr_fd = high[4] < 0 ? -1 : 7;
	spawn_handoff h = SPAWN_HANDOFF_INIT;
	pid_t leader = 0;
	dsb_error err;
	call_cgroup cg;
	int r = call_cgroup_for(c, mode, &cg, &err);
	if (r >= 0)
		r = confined_spawn(c, mode, &so, SPAWN_DIE_WITH_PARENT, cg.procs, &leader, &h, NULL,
				   &err);
	/* The error's strings are borrowed: this record is sent, never freed. */
	monitor_report m = {.kind = r < 0 ? MONITOR_FAILED : MONITOR_STARTED,
			    .pid = leader,
			    .achieved = h.achieved,
			    .init = h.init};
	if (r < 0) {
		m.err_code = (int)err.code;
		m.err_errno = err.sys_errno;
		m.err_subject = err.subject;
		m.err_message = err.message;
	}
	if (record_send(3, &monitor_report_record, &m) < 0 || r < 0) {
		call_cgroup_remove(&cg);
		_exit(r < 0 ? 125 : 1);
	}
	for (int fd = 5; fd <= 7; fd++)
		(void)close(fd);

	int pidfd = pidfd_open_raw(leader);
	bool ended = false;
	supervision sv = SUPERVISION_INIT; /* ended with this process */
	supervision_start(&sv, confined_plan(c), &h);
	for (;;) {
		/*
		 * Woken by the leader's end, the caller, or the tree's first supervised call (a
		 * worker takes the rest); each second anyway, to reap orphans.
		 */
		struct pollfd p[3] = {{.fd = 4, .events = POLLIN},
				      {.fd = ended ? -1 : pidfd, .events = POLLIN},
				      {.fd = sv.listener, .events = POLLIN}};
		(void)poll(p, 3, 1000);
		supervision_ready(&sv, p[2].revents);
		int status;
		pid_t w;
		while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
			if (w == h.init)
				h.init = 0; /* killed from inside (no signal scope) */
			if (w != leader)
				continue; /* an orphan that ended by itself */
			monitor_report end = {
				.kind = MONITOR_ENDED, .pid = leader, .status = status};
			if (supervision_refusals(&sv, &end.refusals) < 0)
				end.refusals = (confine_refusals){0};
			end.refusals.limits_hit = call_cgroup_hits(&cg);
			(void)record_send(3, &monitor_report_record, &end);
			record_free(&monitor_report_record, &end);
			ended = true;
		}
		if (p[0].revents)
			break; /* told to finish, or the caller is gone */
	}
	reap_kill_init(ended ? 0 : leader, h.init);
	call_cgroup_kill(&cg);
	reap_kill_children(h.init > 0 ? 0 : leader);
	call_cgroup_remove(&cg);
	/* Nothing of the call is left: the caller goes on while this process is torn down. */
	(void)close(3);
	_exit(0);
}
