/* SPDX-License-Identifier: MIT */
/* Thin system-call shims, symlink-free directory opening and clocks the pieces share. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core.h"

#ifndef SYS_openat2
#define SYS_openat2 437 /* the same number on every architecture */
#endif

/* struct open_how of <linux/openat2.h>, the version-0 layout (24 bytes). */
struct core_open_how {
	uint64_t flags;
	uint64_t mode;
	uint64_t resolve;
};

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

int openat2_raw(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	struct core_open_how how = {.flags = flags, .mode = mode, .resolve = resolve};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

/*
 * open_dir_no_symlinks() without openat2: from "/" (or the cwd), each component is opened
 * O_PATH|O_NOFOLLOW below the descriptor of the one before, so no name is ever resolved twice
 * and a symlink is seen as itself (fstat says S_IFLNK) instead of being followed.
 */
static int open_dir_walk(const char *path)
{
	_cleanup_close_ int fd = -1;
	char name[NAME_MAX + 1];
	const char *p = path;
	struct stat st;

	if (*p == '\0')
		return -ENOENT;
	fd = open(*p == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);
		if (n > NAME_MAX)
			return -ENAMETOOLONG;
		memcpy(name, p, n);
		name[n] = '\0';
		p = end;
		if (strcmp(name, ".") == 0)
			continue;

		int next = openat(fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0)
			return -errno;
		(void)close(fd);
		fd = next;
		if (fstat(fd, &st) < 0)
			return -errno;
		if (S_ISLNK(st.st_mode))
			return -ELOOP;
		if (!S_ISDIR(st.st_mode))
			return -ENOTDIR;
	}
	return TAKE_FD(fd);
}

int open_dir_no_symlinks(const char *path)
{
	int fd = openat2_raw(AT_FDCWD, path, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
			     OPENAT2_RESOLVE_NO_SYMLINKS | OPENAT2_RESOLVE_NO_MAGICLINKS);

	/*
	 * No openat2 (ENOSYS before Linux 5.6; EPERM from seccomp profiles that refuse calls they
	 * do not know): the walk refuses the same paths, so this is no weaker resolver, and a
	 * real EPERM from the file system comes back from the walk as well.
	 */
	if (fd == -ENOSYS || fd == -EPERM)
		return open_dir_walk(path);
	return fd;
}

uint64_t monotonic_ms(void)
{
	struct timespec ts;
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

ssize_t write_no_sigpipe(int fd, const void *buf, size_t n)
{
	/*
	 * The reader may be gone between poll and write: the EPIPE is ours to handle, never a
	 * SIGPIPE that kills the caller. SIGPIPE is blocked for the write and a pending one
	 * consumed, thread-directed, so other threads (and their dispositions) are unaffected.
	 */
	sigset_t pipe_only, old;
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	(void)pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
	ssize_t k = write(fd, buf, n);
	if (k < 0 && errno == EPIPE) {
		int saved = errno;
		struct timespec none = {0, 0};
		(void)sigtimedwait(&pipe_only, NULL, &none);
		errno = saved;
	}
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	return k;
}
