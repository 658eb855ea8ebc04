/* SPDX-License-Identifier: MIT */
/*
 * The kernel's small files (/proc, /sys, cgroups), each read or written in one system call.
 * Kept apart from sys.c so that landlock-run, which links only what a child between fork and
 * exec needs, can have them too.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

int file_write_at(int dir, const char *name, const char *text)
{
	int fd = openat(dir, name, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	ssize_t k = write(fd, text, n);
	int r = k < 0 ? -errno : (size_t)k == n ? 0 : -EIO;
	(void)close(fd);
	return r;
}

ssize_t file_read_at(int dir, const char *name, char *buf, size_t size)
{
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
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
