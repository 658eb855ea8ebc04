/* SPDX-License-Identifier: MIT */
/*
 * A process's children, as the kernel lists them (/proc/self/task/TID/children, else a scan of
 * /proc): whether there are any, and killing them, and what they leave behind as it is
 * re-parented to us, until none is left. What makes a subreaper's promise good (tree.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine.h"

/*
 * Field @n (1-based, n >= 4) of a /proc/PID/stat line as a number, -1 if absent. The command
 * name (field 2) may hold anything, spaces and parentheses included: count after its last ')'.
 */
static long stat_field(const char *line, int n)
{
	const char *p = strrchr(line, ')');
	if (!p)
		return -1;
	p++; /* " S ppid ...": field 3 starts after this space */
	for (int field = 3; field < n; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -1;
	}
	char *end;
	long v = strtol(p, &end, 10);
	return end == p ? -1 : v;
}

/*
 * This process's children, into @pids (at most @max); their number, or -errno. From the
 * kernel's per-thread list when it has one (CONFIG_PROC_CHILDREN), else by scanning /proc.
 */
static int list_children(pid_t *pids, int max)
{
	char path[300], buf[4096];
	(void)snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
	ssize_t n = file_read_at(AT_FDCWD, path, buf, sizeof(buf));
	int count = 0;
	if (n >= 0) {
		for (char *p = buf, *end; count < max && *p; p = end) {
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			pids[count++] = (pid_t)v;
		}
		return count;
	}

	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	pid_t self = getpid();
	for (struct dirent *e; count < max && (e = readdir(d));) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (file_read_at(AT_FDCWD, path, buf, sizeof(buf)) < 0)
			continue;
		if (stat_field(buf, 4) == self)
			pids[count++] = (pid_t)strtol(e->d_name, NULL, 10);
	}
	(void)closedir(d);
	return count;
}

/* The children of every thread of @pid into @pids (at most @max): their number, or -errno. */
static int list_children_of(pid_t pid, pid_t *pids, int max)
{
	char path[64], buf[8192];
	(void)snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -errno;
	int count = 0;
	for (struct dirent *e; count < max && (e = readdir(d));) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char children[320];
		(void)snprintf(children, sizeof(children), "/proc/%d/task/%s/children", (int)pid,
			       e->d_name);
		if (file_read_at(AT_FDCWD, children, buf, sizeof(buf)) < 0)
			continue;
		for (char *p = buf, *end; count < max && *p; p = end) {
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			pids[count++] = (pid_t)v;
		}
	}
	(void)closedir(d);
	return count;
}

/*
 * Sends @sig to @pid if it is still a child of @parent: through a pidfd, taken before the check,
 * so that the pid cannot name another process between the two. Whether it was sent.
 */
static bool signal_child_of(pid_t pid, pid_t parent, int sig)
{
	int fd = pidfd_open_raw(pid);
	if (fd < 0)
		return false;
	char path[64], buf[1024];
	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	bool sent = file_read_at(AT_FDCWD, path, buf, sizeof(buf)) > 0 &&
		    stat_field(buf, 4) == parent &&
		    syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) == 0;
	(void)close(fd);
	return sent;
}

/* The most pids a kernel hands out (PID_MAX_LIMIT): a bit each. */
#define PID_LIMIT (1 << 22)

static bool bit_test_set(uint8_t *bits, pid_t pid)
{
	if (pid <= 0 || pid >= PID_LIMIT)
		return true;
	bool was = bits[pid >> 3] & (1u << (pid & 7));
	bits[pid >> 3] |= (uint8_t)(1u << (pid & 7));
	return was;
}

/*
 * Everything below this process stopped, then killed. A fork bomb that setsid()s out of the
 * command's group regrows faster than one kill a process ends it, while a stopped process forks
 * no more. Each pass walks the whole tree breadth first, stopping parents before listing their
 * children: a stopped parent neither forks nor reaps, so the pids it lists stay its children's
 * (one whose SIGCHLD is ignored may still free one: signal_child_of() checks). Passes go on
 * until one stops nothing it had not stopped before (a fork in flight finishes).
 */
static void freeze_and_kill(void)
{
	uint8_t *stopped = calloc(PID_LIMIT / 8, 1), *seen = malloc(PID_LIMIT / 8);
	pid_t *queue = malloc(sizeof(pid_t) * 65536), *parent = malloc(sizeof(pid_t) * 65536);
	if (!stopped || !seen || !queue || !parent)
		goto done;
	int n = 0;
	for (int pass = 0; pass < 64; pass++) {
		bool grew = false;
		memset(seen, 0, PID_LIMIT / 8);
		n = list_children(queue, 512);
		for (int i = 0; i < n; i++) {
			parent[i] = 0; /* our own, unreaped: their pids are exact */
			(void)bit_test_set(seen, queue[i]);
		}
		for (int i = 0; i < n; i++) {
			bool sent = parent[i] ? signal_child_of(queue[i], parent[i], SIGSTOP)
					      : kill(queue[i], SIGSTOP) == 0;
			if (!sent)
				continue;
			if (!bit_test_set(stopped, queue[i]))
				grew = true;
			pid_t kids[512];
			int k = list_children_of(queue[i], kids, (int)ELEMENTSOF(kids));
			for (int j = 0; j < k && n < 65536; j++) {
				if (bit_test_set(seen, kids[j]))
					continue;
				queue[n] = kids[j];
				parent[n++] = queue[i];
			}
		}
		if (!grew)
			break;
	}
	/* All stopped: killed the same way, children first; the sweep reaps what is left. */
	for (int i = n - 1; i >= 0; i--)
		(void)(parent[i] ? signal_child_of(queue[i], parent[i], SIGKILL)
				 : kill(queue[i], SIGKILL) == 0);
done:
	free(stopped);
	free(seen);
	free(queue);
	free(parent);
}

/*
 * Our own unreaped children cannot have their pids reused, so kill() by pid is exact. A killed
 * process forks no more, so each round removes a generation and the loop ends; the bound only
 * guards against a /proc that lies. Anything below our children is stopped first.
 */
void reap_kill_children(pid_t leader)
{
	if (leader > 0)
		(void)kill(-leader, SIGKILL); /* the bulk at once: the command's process group */
	pid_t any;
	if (list_children(&any, 1) > 0)
		freeze_and_kill();
	for (int round = 0; round < 100000; round++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		pid_t pids[512];
		int n = list_children(pids, (int)ELEMENTSOF(pids));
		if (n < 0)
			return; /* no /proc to list them: the group kill above is all we can do */
		if (n == 0) {
			/* Nothing listed: done once nothing is left to reap either. */
			if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
				return;
			continue;
		}
		for (int i = 0; i < n; i++)
			(void)kill(pids[i], SIGKILL);
		(void)waitpid(-1, NULL, 0);
	}
}

void reap_kill_init(pid_t leader, pid_t init)
{
	if (init <= 0)
		return;
	/*
	 * The kernel kills every process of the namespace when its init dies, and the init's
	 * exit waits until each is reaped: by itself, or by us for the one of ours in there, the
	 * leader (our child; the rest are the init's or its children's). So the leader is reaped
	 * first, then the init: both at once, with no tree to walk.
	 */
	if (leader > 0)
		(void)kill(leader, SIGKILL);
	(void)kill(init, SIGKILL);
	while (leader > 0 && waitpid(leader, NULL, __WALL) < 0 && errno == EINTR)
		;
	while (waitpid(init, NULL, __WALL) < 0 && errno == EINTR)
		;
}

bool reap_single_threaded(void)
{
	char buf[4096];
	return file_read_at(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf)) >= 0 &&
	       stat_field(buf, 20) == 1; /* field 20: num_threads */
}

bool reap_alone(void)
{
	if (!reap_single_threaded())
		return false;
	pid_t one;
	return list_children(&one, 1) == 0;
}
