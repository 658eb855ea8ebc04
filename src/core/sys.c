/* SPDX-License-Identifier: MIT */
/* Thin system-call shims and clocks the pieces share. */
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

int pidfd_open_raw(pid_t pid)
{
#ifdef SYS_pidfd_open
	long fd = syscall(SYS_pidfd_open, pid, 0);
	return fd < 0 ? -errno : (int)fd;
#else
	(void)pid;
	return -ENOSYS;
#endif
}

uint64_t monotonic_ms(void)
{
	struct timespec ts;
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
