/* SPDX-License-Identifier: MIT */
/*
 * The kernel-enforced half of the fence: a checked mutation reaches its target only through a
 * descriptor of the directory that allowed it (the anchor), one path component at a time with
 * openat2(2), and publishes the new content with a temp file and rename(2).
 *
 * DSH checks a canonical path and then hands the *path* to open() and rename(); a directory
 * swapped for a symlink between the two lands the write outside (dsh-compat §7.1 accepts that
 * window). Here the path the check approved is a realpath, so it has no symlink on it; every step
 * below the anchor refuses symlinks (RESOLVE_NO_SYMLINKS, which includes magic links such as
 * /proc/self/fd/N) and stays beneath its directory (RESOLVE_BENEATH: no "..", no absolute jump).
 * A symlink met on the way is therefore a swap made after the check, and it is refused as the
 * check would have refused it: FS_SANDBOX_DENIED. Everything after the walk (stat, create,
 * rename, unlink) names a single component relative to the verified parent descriptor, which
 * no path trick can leave.
 *
 * openat2 is the whole point, so a kernel without it (ENOSYS, before Linux 5.6, or a seccomp
 * filter that hides it) fails closed with FENCE_UNAVAILABLE before anything is created. The
 * unfenced grant of danger-full-access walks with plain openat(2) and needs no openat2.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fence.h"

int fence_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	int fd = openat2_raw(dirfd, path, flags, mode, resolve);

	if (fd == -EPERM) {
		/*
		 * Some seccomp profiles (Docker's before 20.10) refuse system calls they do not
		 * know with EPERM instead of ENOSYS. A real EPERM comes from the file; opening
		 * "/" with no restriction at all is refused only by such a filter.
		 */
		int probe = openat2_raw(AT_FDCWD, "/", O_PATH | O_CLOEXEC, 0, 0);
		if (probe >= 0)
			(void)close(probe);
		else if (probe == -EPERM || probe == -ENOSYS)
			return -ENOSYS;
	}
	return fd;
}

/* One step below a directory: openat2 with @resolve, or plain openat(2) when unfenced. */
static int open_step(int dirfd, const char *name, int flags, mode_t mode, uint64_t resolve)
{
	if (resolve == 0) {
		int fd = openat(dirfd, name, flags, mode);
		return fd < 0 ? -errno : fd;
	}
	/* openat2 refuses a mode without O_CREAT (EINVAL), unlike openat. */
	return fence_openat2(dirfd, name, (uint64_t)flags, flags & O_CREAT ? mode : 0, resolve);
}

int fence_fail_refused(const char *verb, const char *display, dsb_mode mode,
		       const dsb_protected *protected, int err, dsb_error *reterr)
{
	const char *m = dsb_mode_to_string(mode);
	const char *why = protected ? dsb_protect_kind_reason(protected->kind) : NULL;
	int r;

	/*
	 * DSH's text stays first and whole, so whatever matches on it still does; a protected
	 * path only adds a line naming what refused, which DSH has no words for.
	 */
	if (protected)
		r = dsb_fail(reterr, DSB_E_FS_SANDBOX_DENIED,
			     "cannot %s \"%s\": file access denied under %s mode\n"
			     "[sandbox: %s is protected: %s]",
			     verb, display, m ? m : "an unknown", protected->path,
			     why ? why : "the sandbox policy protects it");
	else
		r = dsb_fail(reterr, DSB_E_FS_SANDBOX_DENIED,
			     "cannot %s \"%s\": file access denied under %s mode", verb, display,
			     m ? m : "an unknown");
	if (reterr)
		reterr->sys_errno = err;
	dsb_error_set_subject(reterr, display);
	return r;
}

int fence_fail_denied(const char *display, dsb_mode mode, int err, dsb_error *reterr)
{
	return fence_fail_refused("write", display, mode, NULL, err, reterr);
}

int fence_fail_errno(const fence_op *op, int err, dsb_error *reterr)
{
	const char *display = op->grant->target.display_path;
	int r;

	switch (err) {
	case ENOSYS:
		r = dsb_fail(reterr, DSB_E_FENCE_UNAVAILABLE,
			     "the fs fence needs openat2 (Linux 5.6+); nothing was written");
		break;
	case EXDEV:
	case ELOOP:
	case EAGAIN:
		/* RESOLVE_BENEATH/NO_SYMLINKS refused a step: the path changed since the check. */
		if (op->grant->resolve)
			return fence_fail_denied(display, op->grant->mode, err, reterr);
		r = dsb_fail_errno(reterr, DSB_E_FS_IO_ERROR, err, "cannot %s \"%s\"", op->verb,
				   display);
		break;
	case EACCES:
	case EPERM:
		/* The host kernel refused: never confused with the policy's FS_SANDBOX_DENIED. */
		r = dsb_fail(reterr, DSB_E_FS_PERMISSION_DENIED,
			     "cannot %s \"%s\": permission denied", op->verb, display);
		break;
	case ENOENT:
		r = dsb_fail(reterr, DSB_E_FS_NOT_FOUND, "cannot %s \"%s\": not found", op->verb,
			     display);
		break;
	case ENOTDIR:
		r = dsb_fail(reterr, DSB_E_FS_NOT_FOUND,
			     "cannot resolve \"%s\": a parent path segment is not a directory",
			     display);
		break;
	case EISDIR:
		r = dsb_fail(reterr, DSB_E_FS_NOT_REGULAR_FILE,
			     "cannot %s \"%s\": not a regular file", op->verb, display);
		break;
	case ENOMEM:
		r = dsb_fail(reterr, DSB_E_NO_MEMORY, "cannot %s \"%s\": out of memory", op->verb,
			     display);
		break;
	default:
		r = dsb_fail_errno(reterr, DSB_E_FS_IO_ERROR, err, "cannot %s \"%s\"", op->verb,
				   display);
		break;
	}
	if (reterr)
		reterr->sys_errno = err;
	dsb_error_set_subject(reterr, display);
	return r;
}

/*
 * fsync(2) of the directory @dirfd names, so an entry just made or renamed in it survives a
 * crash. An O_PATH descriptor cannot be synced (EBADF): "." reopens the same directory for
 * reading. Best effort: the entry is already in place, and a directory without read permission
 * only loses the power-loss guarantee.
 */
static void fsync_dirfd(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		(void)fsync(fd);
		(void)close(fd);
	}
}

/* Opens the directory @name below @dirfd, making it first when missing and @create. */
static int open_dir_step(const fence_op *op, int dirfd, const char *name, bool create,
			 dsb_error *reterr)
{
	int fd = open_step(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, op->grant->resolve);

	if (fd == -ENOENT && create) {
		/* mkdirat() of one name never follows a symlink: one in the way is EEXIST. */
		if (mkdirat(dirfd, name, 0777) == 0)
			fsync_dirfd(dirfd);
		else if (errno != EEXIST)
			return fence_fail_errno(op, errno, reterr);
		fd = open_step(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
			       op->grant->resolve);
	}
	return fd < 0 ? fence_fail_errno(op, -fd, reterr) : fd;
}

int fence_open_parent(const fence_op *op, bool create, int *ret_dirfd, char *name,
		      dsb_error *reterr)
{
	const fence_grant *g = op->grant;
	const char *rel = g->target.target_key + g->rel;

	while (*rel == '/')
		rel++;
	if (*rel == '\0')
		return fence_fail_errno(op, EISDIR, reterr); /* the anchor itself */

	/*
	 * The anchor is the canonical spelling of a writable root (or of the key's ancestor that
	 * has the root's identity): RESOLVE_NO_SYMLINKS opens exactly that directory, and a
	 * component swapped for a symlink since the roots were canonicalised is refused.
	 */
	_cleanup_close_ int fd = -1;
	if (g->resolve)
		fd = fence_openat2(AT_FDCWD, g->anchor, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
				   FENCE_RESOLVE_NO_SYMLINKS);
	else
		fd = open_step(AT_FDCWD, g->anchor, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0);
	if (fd < 0)
		return fence_fail_errno(op, -fd, reterr);
	if (g->by_identity) {
		struct stat st;
		if (fstat(fd, &st) < 0)
			return fence_fail_errno(op, errno, reterr);
		if (st.st_dev != g->dev || st.st_ino != g->ino)
			return fence_fail_denied(g->target.display_path, g->mode, EXDEV, reterr);
	}

	for (;;) {
		const char *end = strchrnul(rel, '/');
		size_t n = (size_t)(end - rel);

		if (n > NAME_MAX)
			return fence_fail_errno(op, ENAMETOOLONG, reterr);
		memcpy(name, rel, n);
		name[n] = '\0';
		/* A canonical key has no "." or ".." segment: one here is forged; never step up. */
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			return fence_fail_denied(g->target.display_path, g->mode, EXDEV, reterr);
		while (*end == '/')
			end++;
		if (*end == '\0')
			break; /* @name is the final component */

		int next = open_dir_step(op, fd, name, create, reterr);
		if (next < 0)
			return next;
		(void)close(fd);
		fd = next;
		rel = end;
	}

	*ret_dirfd = TAKE_FD(fd);
	return 0;
}

int fence_read_at(int dirfd, const char *name, uint64_t resolve, bool nofollow, char **ret_buf,
		  size_t *ret_len, struct stat *ret_st, uint64_t *ret_size)
{
	struct stat st;

	/* Look before opening: opening a FIFO blocks, and opening a device may act on it. */
	if (fstatat(dirfd, name, &st, nofollow ? AT_SYMLINK_NOFOLLOW : 0) < 0)
		return -errno;
	/*
	 * A symlink where the key (a realpath) names a file dangles, or was swapped in since the
	 * check: either way there is no checked file to read, and the link is not followed.
	 */
	if (S_ISLNK(st.st_mode))
		return -ENOENT;
	if (!S_ISREG(st.st_mode))
		return -EISDIR;

	/* O_NONBLOCK: should the entry become a FIFO after the look, the open still returns. */
	_cleanup_close_ int fd = open_step(
		dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0), 0,
		resolve);
	if (fd < 0)
		return fd;
	return fence_read_fd(fd, ret_buf, ret_len, ret_st, ret_size);
}

int fence_read_fd(int fd, char **ret_buf, size_t *ret_len, struct stat *ret_st, uint64_t *ret_size)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EISDIR;
	if ((uint64_t)st.st_size > FENCE_MAX_BYTES) {
		*ret_size = (uint64_t)st.st_size;
		return -EFBIG;
	}

	/* One byte past the size seen notices a file that grows while it is read. */
	size_t cap = (size_t)st.st_size + 1, len = 0;
	_cleanup_free_ char *buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		if (len == cap) {
			size_t grown = cap > FENCE_MAX_BYTES / 2 ? FENCE_MAX_BYTES + 1 : cap * 2;
			char *p = realloc(buf, grown + 1);
			if (!p)
				return -ENOMEM;
			buf = p;
			cap = grown;
		}
		ssize_t n = pread(fd, buf + len, cap - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > FENCE_MAX_BYTES)
			return -EOVERFLOW;
	}
	buf[len] = '\0';

	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	if (ret_st)
		*ret_st = st;
	return 0;
}

int fence_fail_stale(const fence_op *op, dsb_error *reterr)
{
	const char *display = op->grant->target.display_path;

	/* Under DSH's observation rule, its own words (fs-local writeText/editText). */
	int r = dsb_fail(reterr, DSB_E_FS_STALE_VERSION,
			 op->observed ? "cannot %s \"%s\": file changed since it was read"
				      : "cannot %s \"%s\": the file changed since it was read",
			 op->verb, display);
	dsb_error_set_subject(reterr, display);
	return r;
}

int fence_fail_exists(const fence_op *op, dsb_error *reterr)
{
	const char *display = op->grant->target.display_path;

	int r = dsb_fail(reterr, DSB_E_FS_NOT_OBSERVED,
			 "cannot overwrite existing \"%s\" without reading it first", display);
	dsb_error_set_subject(reterr, display);
	return r;
}

/* How long a replacement waits for another holder of the target's lock before giving up. */
#define FENCE_LOCK_WAIT_NS ((int64_t)60 * 1000 * 1000 * 1000)

/* flock(LOCK_EX) of @fd, polled so that a lock never released is an error, not a hang. */
static int lock_wait(int fd)
{
	struct timespec now, nap = {0, 100L * 1000};
	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	int64_t deadline = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec + FENCE_LOCK_WAIT_NS;

	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		(void)clock_gettime(CLOCK_MONOTONIC, &now);
		if ((int64_t)now.tv_sec * 1000000000 + now.tv_nsec > deadline)
			return -ETIMEDOUT;
		(void)nanosleep(&nap, NULL);
		if (nap.tv_nsec < 2L * 1000 * 1000)
			nap.tv_nsec *= 2;
	}
}

int fence_lock_target(const fence_op *op, int dirfd, const char *name, int access, fence_lock *ret,
		      dsb_error *reterr)
{
	const char *display = op->grant->target.display_path;

	/* A few thousand turns: each one means another replacement was published meanwhile. */
	for (int attempt = 0; attempt < 4096; attempt++) {
		struct stat st, now;

		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT)
				return 0; /* nothing to replace: ret->fd stays -1 */
			return fence_fail_errno(op, errno, reterr);
		}
		/* A symlink where a realpath names a file: dangling, or swapped in. Not followed.
		 */
		if (S_ISLNK(st.st_mode))
			return 0;
		if (!S_ISREG(st.st_mode))
			return fence_fail_errno(op, EISDIR, reterr);

		/*
		 * Opening for writing is the kernel's own verdict on writing the file in place
		 * (mode, ACL, owner, immutable flag, capabilities): a replacement needs no less.
		 * A running executable (ETXTBSY) cannot be opened so, but may be replaced: there
		 * the access check stands in for the open.
		 */
		int fd = open_step(dirfd, name, access | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0,
				   op->grant->resolve);
		if (fd == -ETXTBSY) {
			if (faccessat(dirfd, name, (access == O_RDWR ? R_OK : 0) | W_OK,
				      AT_EACCESS) < 0)
				return fence_fail_errno(op, errno, reterr);
			fd = open_step(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC,
				       0, op->grant->resolve);
		}
		if (fd == -ENOENT)
			continue; /* replaced or removed since the look: look again */
		if (fd < 0)
			return fence_fail_errno(op, -fd, reterr);

		int r = lock_wait(fd);
		if (r < 0) {
			(void)close(fd);
			if (r == -ETIMEDOUT) {
				r = dsb_fail(reterr, DSB_E_FS_IO_ERROR,
					     "cannot %s \"%s\": another process held the file's "
					     "lock for %d s",
					     op->verb, display,
					     (int)(FENCE_LOCK_WAIT_NS / 1000000000));
				dsb_error_set_subject(reterr, display);
				return r;
			}
			return fence_fail_errno(op, -r, reterr);
		}
		/*
		 * The lock is the inode's, and a replacement renames a new inode over the name: a
		 * holder that published meanwhile left this one orphaned. Only the inode the name
		 * still names is the current version.
		 */
		if (fstat(fd, &st) < 0 || fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0) {
			int err = errno;
			(void)close(fd);
			if (err == ENOENT)
				continue;
			return fence_fail_errno(op, err, reterr);
		}
		if (now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
			(void)close(fd);
			continue;
		}
		ret->fd = fd;
		ret->st = st;
		return 0;
	}
	return fence_fail_stale(op, reterr);
}

void fence_lock_done(fence_lock *lk)
{
	if (lk && lk->fd >= 0) {
		(void)close(lk->fd); /* releases the flock */
		lk->fd = -1;
	}
}

/* `.NAME.dsb-RANDOM.tmp`, NAME cut so the whole stays within NAME_MAX. */
static void temp_name(char *buf, const char *name)
{
	uint64_t rnd;

	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		/* Uniqueness only avoids retries; O_EXCL is what makes the name safe. */
		struct timespec ts;
		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
		rnd = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec;
	}
	(void)snprintf(buf, NAME_MAX + 1, ".%.*s.dsb-%016" PRIx64 ".tmp", NAME_MAX - 26, name, rnd);
}

int fence_replace_at(const fence_op *op, int dirfd, const char *name, const char *data, size_t len,
		     const fence_lock *lk, dsb_error *reterr)
{
	const struct stat *orig = lk && lk->fd >= 0 ? &lk->st : NULL;
	char tmp[NAME_MAX + 1];
	_cleanup_close_ int fd = -EEXIST;

	/*
	 * The new content goes to a fresh file beside the target and is renamed over it: a
	 * reader, or a crash, sees the old file or the new one, never a truncated mix, and a hard
	 * link or symlink at the name is replaced, never written through (the inode another name
	 * shares is untouched). A replacement starts private (0600) and takes the old owner and
	 * mode before it is written; a new file is created 0666 and the kernel applies the umask
	 * (and any default ACL) as for any new file. O_EXCL|O_NOFOLLOW: the name is ours,
	 * nothing is followed.
	 */
	for (int attempt = 0; fd == -EEXIST && attempt < 16; attempt++) {
		temp_name(tmp, name);
		fd = open_step(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       orig ? 0600 : 0666, op->grant->resolve);
	}
	if (fd < 0)
		return fence_fail_errno(op, -fd, reterr);

	int err = 0;
	if (orig) {
		/*
		 * The replacement is the old file's: same owner and group, same mode. Root gives
		 * them; anyone else can give only what they already have, and a file owned by
		 * someone else (or in a group the caller is not in) is refused, never re-owned.
		 */
		struct stat tst;
		if (fstat(fd, &tst) < 0)
			err = errno;
		else if ((tst.st_uid != orig->st_uid || tst.st_gid != orig->st_gid) &&
			 fchown(fd, orig->st_uid, orig->st_gid) < 0)
			err = errno == EINVAL ? EPERM : errno;
		if (!err && fchmod(fd, orig->st_mode & 0777) < 0)
			err = errno;
	}
	if (!err)
		err = -fd_write_all(fd, data, len); /* err holds a positive errno */
	/* fsync before rename: else a crash after the rename may publish an empty file. */
	if (!err && fsync(fd) < 0)
		err = errno;
	if (!err && close(TAKE_FD(fd)) < 0)
		err = errno;
	/*
	 * Under the target's lock, the last look: the version replaced must be the one read (or
	 * locked). One changed in place, or renamed over, by a writer that does not take the lock
	 * is a conflict, never silently overwritten.
	 */
	bool stale = false;
	if (!err && orig) {
		struct stat held, now;
		if (fstat(lk->fd, &held) < 0 || fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
			stale = true;
		else
			stale = held.st_size != orig->st_size ||
				held.st_mtim.tv_sec != orig->st_mtim.tv_sec ||
				held.st_mtim.tv_nsec != orig->st_mtim.tv_nsec ||
				now.st_dev != orig->st_dev || now.st_ino != orig->st_ino;
	}
	/* What is about to be published, for the caller that records the version it wrote. */
	if (!err && !stale && op->published &&
	    fstatat(dirfd, tmp, op->published, AT_SYMLINK_NOFOLLOW) < 0)
		err = errno;
	/*
	 * renameat() replaces @name atomically and, naming one component of @dirfd, follows
	 * nothing. A new file that must not replace one (DSH's createIfAbsent) is published with
	 * RENAME_NOREPLACE: a file that appeared since the lock is a conflict, as DSH's hard-link
	 * publish makes it. A filesystem without the flag falls back to a link, which fails the
	 * same way.
	 */
	bool exists = false;
	if (!err && !stale && op->noreplace && !orig) {
		if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) < 0) {
			if (errno == EINVAL && linkat(dirfd, tmp, dirfd, name, 0) == 0)
				(void)unlinkat(dirfd, tmp, 0);
			else
				err = errno;
		}
		exists = err == EEXIST;
	} else if (!err && !stale && renameat(dirfd, tmp, dirfd, name) < 0) {
		err = errno;
	}
	if (err || stale) {
		(void)unlinkat(dirfd, tmp, 0);
		if (exists)
			return fence_fail_exists(op, reterr);
		return stale ? fence_fail_stale(op, reterr) : fence_fail_errno(op, err, reterr);
	}
	/* The rename is durable once the directory is. */
	fsync_dirfd(dirfd);
	return 0;
}
