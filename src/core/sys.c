/* SPDX-License-Identifier: MIT */
/*
 * Thin system-call shims, symlink-free directory opening, whole reads and writes, a read bounded
 * by a deadline, and clocks the pieces share.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
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
 * The next name of the path at *@p into @name, *@p moved past it: 1, 0 at the end of the path,
 * or -ENAMETOOLONG.
 */
static int next_component(const char **p, char name[static NAME_MAX + 1])
{
	while (**p == '/')
		(*p)++;
	if (**p == '\0')
		return 0;
	const char *end = strchrnul(*p, '/');
	size_t n = (size_t)(end - *p);
	if (n > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(name, *p, n);
	name[n] = '\0';
	*p = end;
	return 1;
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
		int k = next_component(&p, name);
		if (k <= 0) {
			if (k < 0)
				return k;
			break;
		}
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

int mkdir_beneath(int dfd, const char *rel, mode_t mode)
{
	_cleanup_close_ int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	char name[NAME_MAX + 1];
	const char *p = rel;

	if (fd < 0)
		return -errno;
	for (;;) {
		int k = next_component(&p, name);
		if (k <= 0)
			return k;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return -EINVAL;
		if (mkdirat(fd, name, mode) < 0 && errno != EEXIST)
			return -errno;
		int next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		struct stat st;
		if (next < 0 && errno == ENOTDIR &&
		    fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			return -ELOOP; /* O_DIRECTORY spoke first */
		if (next < 0)
			return -errno;
		(void)close(fd);
		fd = next;
	}
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

/* One write(2) or read(2) asks for at most this much (Linux itself stops short of 2 GiB). */
#define IO_CHUNK ((size_t)1 << 30)

typedef enum io_op {
	IO_WRITE,
	IO_READ,
	IO_PREAD,
} io_op;

/*
 * The loop of fd_write_all(), fd_read_all() and fd_pread_all(): all @n bytes at @p (from
 * @offset, for IO_PREAD), resumed after EINTR and short transfers. 0, -EIO for a transfer of
 * nothing (end of file, for a read), or -errno.
 */
static int transfer_all(int fd, char *p, size_t n, off_t offset, io_op op)
{
	while (n > 0) {
		size_t want = n > IO_CHUNK ? IO_CHUNK : n;
		ssize_t k = op == IO_WRITE  ? write_no_sigpipe(fd, p, want)
			    : op == IO_READ ? read(fd, p, want)
					    : pread(fd, p, want, offset);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO;
		p += k;
		n -= (size_t)k;
		offset += k;
	}
	return 0;
}

int fd_write_all(int fd, const void *buf, size_t n)
{
	/* IO_WRITE only reads the bytes: the cast lets one loop serve both directions. */
	return transfer_all(fd, (char *)buf, n, 0, IO_WRITE);
}

int fd_read_all(int fd, void *buf, size_t n)
{
	return transfer_all(fd, buf, n, 0, IO_READ);
}

int fd_pread_all(int fd, void *buf, size_t n, off_t offset)
{
	return transfer_all(fd, buf, n, offset, IO_PREAD);
}

int fd_read_until(int fd, char *buf, size_t size, uint64_t deadline, int cancel_fd,
		  const volatile sig_atomic_t *interrupted, bool line)
{
	/*
	 * A flag set by a signal handler just before poll() would wait out a whole slice: short
	 * slices bound how late it is seen. Without one, a slice only keeps the timeout an int.
	 */
	const uint64_t slice = interrupted ? 200 : 1000;
	size_t len = 0;

	buf[0] = '\0';
	while (len + 1 < size) {
		uint64_t now = monotonic_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (interrupted && *interrupted)
			return -EINTR;
		struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
				      {.fd = cancel_fd, .events = POLLIN}};
		uint64_t left = deadline - now;
		int k = poll(p, cancel_fd >= 0 ? 2 : 1, left > slice ? (int)slice : (int)left);
		if (k < 0 && errno != EINTR)
			return -errno;
		if (k <= 0)
			continue;
		if (cancel_fd >= 0 && p[1].revents)
			return -ECANCELED;
		ssize_t n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (line && memchr(buf, '\n', len))
			break;
	}
	return 0;
}
