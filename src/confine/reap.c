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
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine.h"

/* Reads up to @size bytes of /proc @path into @buf (NUL-terminated); -errno. */
static ssize_t read_proc(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int e = errno;
	(void)close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return n;
}

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
	ssize_t n = read_proc(path, buf, sizeof(buf));
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
		if (read_proc(path, buf, sizeof(buf)) < 0)
			continue;
		if (stat_field(buf, 4) == self)
			pids[count++] = (pid_t)strtol(e->d_name, NULL, 10);
	}
	(void)closedir(d);
	return count;
}

/*
 * Our own unreaped children cannot have their pids reused, so kill() by pid is exact. A killed
 * process forks no more, so each round removes a generation and the loop ends; the bound only
 * guards against a /proc that lies.
 */
void reap_kill_children(pid_t leader)
{
	if (leader > 0)
		(void)kill(-leader, SIGKILL); /* the bulk at once: the command's process group */
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

bool reap_single_threaded(void)
{
	char buf[4096];
	return read_proc("/proc/self/stat", buf, sizeof(buf)) >= 0 &&
	       stat_field(buf, 20) == 1; /* field 20: num_threads */
}

bool reap_alone(void)
{
	if (!reap_single_threaded())
		return false;
	pid_t one;
	return list_children(&one, 1) == 0;
}
