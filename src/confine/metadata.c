/* SPDX-License-Identifier: MIT */
/*
 * The metadata supervisor (docs/design/metadata.md): Landlock has no rights for permissions,
 * owners, times, extended attributes or inode flags, so under Landlock the filter hands those
 * calls to the confined command's parent (SECCOMP_METADATA_NOTIFY), which performs them itself
 * on objects beneath a writable root and refuses them elsewhere.
 *
 * Each call is answered from one resolution: its arguments are the notification's, a path or
 * a value is copied once from the caller's memory, the object is opened once (from the caller's
 * working directory or descriptor, in the caller's mount namespace), checked, and the operation
 * is done on that open object. Nothing is ever re-resolved by path and no call is let through
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE would re-read memory the caller can change meanwhile).
 * meta_handle() is also the dispatcher of the network calls (connect, sendto), which netsup.c
 * answers with the helpers of metadata-int.h.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <linux/audit.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../core/cleanup.h"
#include "metadata.h"
#include "metadata-int.h"

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#define NR_FCHMODAT2	 452
#define NR_SETXATTRAT	 463
#define NR_REMOVEXATTRAT 466
#define NR_FILE_SETATTR	 469

/* open_object()'s answer for an object outside every root: EPERM, counted as a refusal. */
#define OUTSIDE META_OUTSIDE

/* The largest extended attribute value the kernel takes (XATTR_SIZE_MAX). */
#define XATTR_VALUE_MAX 65536

/* What one notification asks, once decoded. */
typedef struct meta_call {
	int dirfd;	 /* the caller's: AT_FDCWD or a descriptor number */
	uint64_t path;	 /* the caller's address of the path, 0 for an fd-based call */
	int fd;		 /* fd-based calls: the caller's descriptor */
	bool follow;	 /* follow a final symlink */
	bool empty_path; /* AT_EMPTY_PATH: the object is @dirfd itself */
	bool null_path;	 /* utimensat(fd, NULL, ...): the object is @dirfd itself */
} meta_call;

int meta_peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	/* An address in the caller's memory, never dereferenced here. */
	/* NOLINTNEXTLINE(performance-no-int-to-ptr) */
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/*
 * Copies the NUL-terminated string at @addr of @pid into @buf (@size bytes, which holds the
 * NUL): page by page, since the string may end right before an unmapped page. -ENAMETOOLONG
 * when it does not fit, -EFAULT when it cannot be read.
 */
static int peek_string(pid_t pid, uint64_t addr, char *buf, size_t size)
{
	size_t got = 0;
	while (got < size) {
		size_t page_left = 4096 - (size_t)((addr + got) % 4096);
		size_t want = page_left < size - got ? page_left : size - got;
		struct iovec local = {.iov_base = buf + got, .iov_len = want};
		/* NOLINTNEXTLINE(performance-no-int-to-ptr) */
		struct iovec remote = {.iov_base = (void *)(uintptr_t)(addr + got),
				       .iov_len = want};
		ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n <= 0)
			return -EFAULT;
		char *nul = memchr(buf + got, '\0', (size_t)n);
		if (nul)
			return 0;
		got += (size_t)n;
	}
	return -ENAMETOOLONG;
}

/* Reads the link /proc/@tid/@what (cwd, fd/N) into @buf: its path as we see it; -errno. */
static int proc_readlink(pid_t tid, const char *what, char *buf, size_t size)
{
	char link[64];
	(void)snprintf(link, sizeof(link), "/proc/%d/%s", (int)tid, what);
	ssize_t len = readlink(link, buf, size - 1);
	if (len < 0)
		return -errno;
	if ((size_t)len >= size - 1)
		return -ENAMETOOLONG;
	buf[len] = '\0';
	return 0;
}

/*
 * The caller's descriptor number when @path names one through /proc (/proc/self/fd/N, as
 * glibc's fchmodat(AT_SYMLINK_NOFOLLOW) and lchmod spell an O_PATH descriptor), else -1. Our
 * own /proc/self is not the caller's, so such a path is never resolved here.
 */
static int proc_fd_of(const char *path, pid_t pid)
{
	char self[32];
	const char *rest = NULL;
	(void)snprintf(self, sizeof(self), "/proc/%d/fd/", (int)pid);
	if (strncmp(path, "/proc/self/fd/", 14) == 0)
		rest = path + 14;
	else if (strncmp(path, "/proc/thread-self/fd/", 21) == 0)
		rest = path + 21;
	else if (strncmp(path, self, strlen(self)) == 0)
		rest = path + strlen(self);
	if (!rest || !*rest || strlen(rest) > 9 || strspn(rest, "0123456789") != strlen(rest))
		return -1;
	return (int)strtol(rest, NULL, 10); /* nine digits at most: no overflow */
}

/* The index of the root @path lies beneath, textually, from @from on; -1 when none. */
static int root_of(const meta_supervisor *s, const char *path, size_t from)
{
	for (size_t i = from; s->roots && s->roots[i]; i++) {
		const char *root = s->roots[i];
		size_t rl = strlen(root);
		if (rl == 1)
			rl = 0; /* "/": every path is beneath it */
		if (strncmp(path, root, rl) == 0 && (path[rl] == '/' || path[rl] == '\0'))
			return (int)i;
	}
	return -1;
}

/* @path's part beneath root @i (root_of() said it is): "." for the root itself. */
static const char *beneath_part(const meta_supervisor *s, const char *path, int i)
{
	size_t rl = strlen(s->roots[i]);
	if (rl == 1)
		rl = 0;
	while (path[rl] == '/')
		rl++;
	return path[rl] ? path + rl : ".";
}

/*
 * Opens @rel beneath root @i, O_PATH, where nothing may lead out of it: the kernel's answer
 * that the object is beneath that root (RESOLVE_BENEATH refuses "..", absolute symlinks and
 * magic links that would leave it, with EXDEV or ELOOP). Returns the descriptor or -errno.
 */
static int open_beneath(const meta_supervisor *s, int i, const char *rel, bool follow,
			bool symlinks)
{
	if (s->root_fds[i] < 0)
		return -ENOENT;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
			   (symlinks ? 0 : RESOLVE_NO_SYMLINKS),
	};
	int fd = (int)syscall(SYS_openat2, s->root_fds[i], rel, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/*
 * Finds the object whose path (as we read it, in the caller's view) is @path and whose inode is
 * @want beneath one of the roots, walking no symlink: the object itself, opened beneath the
 * root, or OUTSIDE when it is not beneath any (a pipe, a socket, a deleted file, elsewhere).
 */
static int find_beneath(const meta_supervisor *s, const char *path, const struct stat *want)
{
	if (path[0] != '/')
		return OUTSIDE;
	for (int i = root_of(s, path, 0); i >= 0; i = root_of(s, path, (size_t)i + 1)) {
		int fd = open_beneath(s, i, beneath_part(s, path, i), false, false);
		struct stat got;
		if (fd >= 0 && fstat(fd, &got) == 0 && got.st_dev == want->st_dev &&
		    got.st_ino == want->st_ino)
			return fd;
		if (fd >= 0)
			(void)close(fd);
	}
	return OUTSIDE;
}

/*
 * The object of the caller's descriptor @fd, found beneath a root: what the descriptor's
 * path names there, provided it is the descriptor's own inode. Returns it O_PATH, OUTSIDE
 * when it is not beneath a root, or -errno (EBADF: no such descriptor).
 */
static int object_of_fd(const meta_supervisor *s, pid_t tid, int fd)
{
	char what[32], path[4096];
	(void)snprintf(what, sizeof(what), "fd/%d", fd);
	int r = proc_readlink(tid, what, path, sizeof(path));
	if (r < 0)
		return r == -ENOENT ? -EBADF : r;
	char link[64];
	struct stat want;
	(void)snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)tid, fd);
	if (stat(link, &want) < 0)
		return errno == ENOENT ? -EBADF : -errno;
	return find_beneath(s, path, &want);
}

/*
 * The object @c names, resolved once as the caller would resolve it, in the caller's mount
 * namespace (where the read-only binds of protected paths are), and found beneath a root.
 * The path is made absolute from the caller's working directory or descriptor. Most paths
 * lead to the object beneath the root they start in, which one openat2() from that root
 * proves; a path that leaves it (an absolute symlink, "..") is resolved from the caller's root
 * (RESOLVE_IN_ROOT) and the object it reaches is looked for beneath the roots. A race that
 * renames a directory meanwhile only leads to another object of the caller's view, which is
 * checked as any. Magic links are refused but the caller's own /proc/self/fd/N. Returns the
 * object O_PATH, OUTSIDE when it lies outside every root, or the caller's -errno.
 */
static int open_object(const meta_supervisor *s, const struct seccomp_notif *n, const meta_call *c)
{
	pid_t tid = (pid_t)n->pid;
	if (c->fd >= 0)
		return object_of_fd(s, tid, c->fd);
	if (c->null_path && c->dirfd == AT_FDCWD)
		return -EFAULT; /* utimensat(AT_FDCWD, NULL, ...), as the kernel answers it */

	char path[4096];
	if (c->null_path) {
		path[0] = '\0';
	} else {
		int r = peek_string(tid, c->path, path, sizeof(path));
		if (r < 0)
			return r;
	}
	if (path[0] == '\0' && !c->empty_path && !c->null_path)
		return -ENOENT;
	return meta_open_path(s, tid, c->dirfd, path, c->follow);
}

int meta_open_path(const meta_supervisor *s, pid_t tid, int dirfd, const char *path, bool follow)
{
	int fdnum = path[0] ? proc_fd_of(path, tid) : dirfd;
	if (fdnum >= 0)
		return object_of_fd(s, tid, fdnum);

	/* The absolute spelling, in the caller's view. */
	char full[8192];
	if (path[0] == '/') {
		(void)snprintf(full, sizeof(full), "%s", path);
	} else {
		char dir[4096], what[32];
		if (dirfd == AT_FDCWD)
			(void)snprintf(what, sizeof(what), "cwd");
		else
			(void)snprintf(what, sizeof(what), "fd/%d", dirfd);
		int r = proc_readlink(tid, what, dir, sizeof(dir));
		if (r < 0)
			return r == -ENOENT && dirfd != AT_FDCWD ? -EBADF : r;
		if (dir[0] != '/')
			return -ENOENT; /* a deleted directory, or not one at all */
		if (!path[0])
			(void)snprintf(full, sizeof(full), "%s", dir);
		else if ((size_t)snprintf(full, sizeof(full), "%s/%s", dir, path) >= sizeof(full))
			return -ENAMETOOLONG;
	}
	if (strlen(full) >= 4096)
		return -ENAMETOOLONG;

	int i = root_of(s, full, 0);
	if (i >= 0) {
		int fd = open_beneath(s, i, beneath_part(s, full, i), follow, true);
		if (fd >= 0 || (fd != -EXDEV && fd != -ELOOP && fd != -EAGAIN))
			return fd;
	}
	if (s->caller_root < 0)
		return OUTSIDE;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	_cleanup_close_ int obj =
		(int)syscall(SYS_openat2, s->caller_root, full, &how, sizeof(how));
	if (obj < 0)
		return -errno;
	char self[64], where[4096];
	struct stat want;
	(void)snprintf(self, sizeof(self), "/proc/self/fd/%d", obj);
	ssize_t len = readlink(self, where, sizeof(where) - 1);
	if (len <= 0 || fstat(obj, &want) < 0)
		return OUTSIDE;
	where[len] = '\0';
	return find_beneath(s, where, &want);
}

/*
 * Runs @op(@obj, @arg) with this thread's effective capabilities cleared, as the caller, who holds
 * none, would: an owner check the kernel makes must not be passed on our capabilities. Returns
 * what @op returns.
 */
/* Set in a worker thread, which clears its effective capabilities once for all its calls. */
static _Thread_local bool caps_cleared;

int meta_as_caller(int (*op)(int obj, const void *arg), int obj, const void *arg)
{
	if (caps_cleared)
		return op(obj, arg);
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct saved[2], none[2];
	bool dropped = false;
	if (syscall(SYS_capget, &hdr, saved) == 0 && (saved[0].effective || saved[1].effective)) {
		memcpy(none, saved, sizeof(none));
		none[0].effective = none[1].effective = 0;
		if (syscall(SYS_capset, &hdr, none) < 0)
			return -EPERM; /* never act on our capabilities */
		dropped = true;
	}
	int r = op(obj, arg);
	if (dropped)
		(void)syscall(SYS_capset, &hdr, saved);
	return r;
}

/* The operations, each on an open object; -errno. */

typedef struct chown_arg {
	uid_t uid;
	gid_t gid;
} chown_arg;

typedef struct xattr_arg {
	const char *name;
	const void *value; /* NULL: remove */
	size_t size;
	int flags;
} xattr_arg;

typedef struct ioctl_arg {
	unsigned long request;
	const void *value;
} ioctl_arg;

static int op_chmod(int obj, const void *arg)
{
	mode_t mode = *(const mode_t *)arg;
	return syscall(NR_FCHMODAT2, obj, "", mode, AT_EMPTY_PATH) < 0 ? -errno : 0;
}

static int op_chown(int obj, const void *arg)
{
	const chown_arg *a = arg;
	return fchownat(obj, "", a->uid, a->gid, AT_EMPTY_PATH) < 0 ? -errno : 0;
}

/* Through /proc/self/fd/N, which names this very object whatever its path became. */
static void magic_path(int obj, char *buf, size_t size)
{
	(void)snprintf(buf, size, "/proc/self/fd/%d", obj);
}

static int op_utimens(int obj, const void *arg)
{
	char p[64];
	magic_path(obj, p, sizeof(p));
	return utimensat(AT_FDCWD, p, arg, 0) < 0 ? -errno : 0;
}

static int op_xattr(int obj, const void *arg)
{
	const xattr_arg *a = arg;
	char p[64];
	magic_path(obj, p, sizeof(p));
	int r = a->value ? setxattr(p, a->name, a->value, a->size, a->flags)
			 : removexattr(p, a->name);
	return r < 0 ? -errno : 0;
}

static int op_ioctl(int obj, const void *arg)
{
	const ioctl_arg *a = arg;
	char p[64];
	magic_path(obj, p, sizeof(p));
	/* The flag ioctls need a real open file: this object's, read-only, never a device. */
	struct stat st;
	if (fstat(obj, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return -ENOTTY;
	_cleanup_close_ int f = open(p, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (f < 0)
		return -errno;
	return ioctl(f, a->request, a->value) < 0 ? -errno : 0;
}

/* struct file_attr, file_setattr()'s argument (Linux 6.17). */
typedef struct file_attr {
	uint64_t xflags;
	uint32_t extsize, nextents, projid, cowextsize;
} file_attr;

static int op_file_setattr(int obj, const void *arg)
{
	return syscall(NR_FILE_SETATTR, obj, "", arg, sizeof(file_attr), AT_EMPTY_PATH) < 0 ? -errno
											    : 0;
}

/*
 * Copies an extensible structure of the caller (@usize bytes at @addr) into @buf (@size bytes)
 * as the kernel would take it: EINVAL when shorter, E2BIG when longer with a byte that is not
 * zero past what we know (or longer than a page).
 */
static int peek_struct(pid_t pid, uint64_t addr, size_t usize, void *buf, size_t size)
{
	if (usize < size)
		return -EINVAL;
	if (usize > 4096)
		return -E2BIG;
	unsigned char all[4096];
	int r = meta_peek(pid, addr, all, usize);
	if (r < 0)
		return r;
	for (size_t i = size; i < usize; i++)
		if (all[i])
			return -E2BIG;
	memcpy(buf, all, size);
	return 0;
}

/* setxattr() of the caller's name at @name_addr, @size bytes at @value_addr, on @obj. */
static int set_xattr(pid_t pid, uint64_t name_addr, uint64_t value_addr, uint64_t size, int flags,
		     int obj)
{
	char name[256];
	int r = peek_string(pid, name_addr, name, sizeof(name));
	if (r < 0)
		return r == -ENAMETOOLONG ? -ERANGE : r;
	if (size > XATTR_VALUE_MAX)
		return -E2BIG;
	_cleanup_free_ char *value = malloc(size ? (size_t)size : 1);
	if (!value)
		return -ENOMEM;
	if (size > 0 && (r = meta_peek(pid, value_addr, value, (size_t)size)) < 0)
		return r;
	xattr_arg x = {.name = name, .value = value, .size = (size_t)size, .flags = flags};
	return meta_as_caller(op_xattr, obj, &x);
}

/* removexattr() of the caller's name at @name_addr on @obj. */
static int remove_xattr(pid_t pid, uint64_t name_addr, int obj)
{
	char name[256];
	int r = peek_string(pid, name_addr, name, sizeof(name));
	if (r < 0)
		return r == -ENAMETOOLONG ? -ERANGE : r;
	xattr_arg x = {.name = name};
	return meta_as_caller(op_xattr, obj, &x);
}

/* Decodes the native ABI's call in @n into @c; -ENOSYS for what is not a metadata call. */
static int decode(const struct seccomp_notif *n, meta_call *c)
{
	const __u64 *a = n->data.args;
	*c = (meta_call){.dirfd = AT_FDCWD, .fd = -1, .follow = true};
	switch (n->data.nr) {
	case SYS_chmod:
	case SYS_chown:
	case SYS_utime:
	case SYS_utimes:
	case SYS_setxattr:
	case SYS_removexattr:
		c->path = a[0];
		return 0;
	case SYS_lchown:
	case SYS_lsetxattr:
	case SYS_lremovexattr:
		c->path = a[0];
		c->follow = false;
		return 0;
	case SYS_fchmod:
	case SYS_fchown:
	case SYS_fsetxattr:
	case SYS_fremovexattr:
	case SYS_ioctl:
		c->fd = (int)a[0];
		return 0;
	case SYS_fchmodat:
	case SYS_futimesat:
		c->dirfd = (int)a[0];
		c->path = a[1];
		return 0;
	case NR_FCHMODAT2:
		c->dirfd = (int)a[0];
		c->path = a[1];
		c->follow = !(a[3] & AT_SYMLINK_NOFOLLOW);
		c->empty_path = a[3] & AT_EMPTY_PATH;
		return 0;
	case SYS_fchownat:
		c->dirfd = (int)a[0];
		c->path = a[1];
		c->follow = !(a[4] & AT_SYMLINK_NOFOLLOW);
		c->empty_path = a[4] & AT_EMPTY_PATH;
		return 0;
	case SYS_utimensat:
		c->dirfd = (int)a[0];
		c->path = a[1];
		c->null_path = a[1] == 0;
		c->follow = !(a[3] & AT_SYMLINK_NOFOLLOW);
		c->empty_path = a[3] & AT_EMPTY_PATH;
		return 0;
	case NR_SETXATTRAT:
	case NR_REMOVEXATTRAT:
	case NR_FILE_SETATTR: {
		unsigned at = (unsigned)(n->data.nr == NR_FILE_SETATTR ? a[4] : a[2]);
		c->dirfd = (int)a[0];
		c->path = a[1];
		c->follow = !(at & AT_SYMLINK_NOFOLLOW);
		c->empty_path = at & AT_EMPTY_PATH;
		return 0;
	}
	default:
		return -ENOSYS;
	}
}

/* Performs the call of @n on @obj, with the values it points at copied once; -errno. */
static int perform(const struct seccomp_notif *n, int obj)
{
	const __u64 *a = n->data.args;
	pid_t pid = (pid_t)n->pid;
	int r;

	switch (n->data.nr) {
	case SYS_chmod:
	case SYS_fchmod:
	case SYS_fchmodat:
	case NR_FCHMODAT2: {
		mode_t mode =
			(mode_t)(n->data.nr == SYS_chmod || n->data.nr == SYS_fchmod ? a[1] : a[2]);
		return meta_as_caller(op_chmod, obj, &mode);
	}
	case SYS_chown:
	case SYS_lchown:
	case SYS_fchown: {
		chown_arg c = {(uid_t)a[1], (gid_t)a[2]};
		return meta_as_caller(op_chown, obj, &c);
	}
	case SYS_fchownat: {
		chown_arg c = {(uid_t)a[2], (gid_t)a[3]};
		return meta_as_caller(op_chown, obj, &c);
	}
	case SYS_utime:
	case SYS_utimes:
	case SYS_futimesat:
	case SYS_utimensat: {
		struct timespec ts[2], *times = ts;
		uint64_t addr = n->data.nr == SYS_utime || n->data.nr == SYS_utimes ? a[1] : a[2];
		if (addr == 0) {
			times = NULL; /* now */
		} else if (n->data.nr == SYS_utime) {
			struct utimbuf {
				long actime, modtime;
			} u;
			if ((r = meta_peek(pid, addr, &u, sizeof(u))) < 0)
				return r;
			ts[0] = (struct timespec){.tv_sec = u.actime};
			ts[1] = (struct timespec){.tv_sec = u.modtime};
		} else if (n->data.nr == SYS_utimensat) {
			if ((r = meta_peek(pid, addr, ts, sizeof(ts))) < 0)
				return r;
		} else {
			struct timeval tv[2];
			if ((r = meta_peek(pid, addr, tv, sizeof(tv))) < 0)
				return r;
			for (int i = 0; i < 2; i++)
				ts[i] = (struct timespec){.tv_sec = tv[i].tv_sec,
							  .tv_nsec = tv[i].tv_usec * 1000};
		}
		return meta_as_caller(op_utimens, obj, times);
	}
	case SYS_setxattr:
	case SYS_lsetxattr:
	case SYS_fsetxattr:
		return set_xattr(pid, a[1], a[2], a[3], (int)a[4], obj);
	case SYS_removexattr:
	case SYS_lremovexattr:
	case SYS_fremovexattr:
		return remove_xattr(pid, a[1], obj);
	case NR_SETXATTRAT: {
		/* struct xattr_args: the value's address, its size, setxattr's flags. */
		struct {
			uint64_t value;
			uint32_t size, flags;
		} x;
		if ((r = peek_struct(pid, a[4], (size_t)a[5], &x, sizeof(x))) < 0)
			return r;
		return set_xattr(pid, a[3], x.value, x.size, (int)x.flags, obj);
	}
	case NR_REMOVEXATTRAT:
		return remove_xattr(pid, a[3], obj);
	case NR_FILE_SETATTR: {
		file_attr fa;
		if ((r = peek_struct(pid, a[2], (size_t)a[3], &fa, sizeof(fa))) < 0)
			return r;
		return meta_as_caller(op_file_setattr, obj, &fa);
	}
	case SYS_ioctl: {
		/* FS_IOC_SETFLAGS reads an int (whatever its name says); FSSETXATTR a struct. */
		union {
			int flags;
			struct fsxattr fsx;
		} v;
		unsigned request = (unsigned)a[1];
		size_t size = request == FS_IOC_FSSETXATTR ? sizeof(v.fsx) : sizeof(v.flags);
		if ((r = meta_peek(pid, a[2], &v, size)) < 0)
			return r;
		ioctl_arg io = {.request = request, .value = &v};
		return meta_as_caller(op_ioctl, obj, &io);
	}
	default:
		return -EPERM; /* decode() took no other call */
	}
}

uint32_t meta_native_arch(void)
{
#if defined(__x86_64__)
	return AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
	return AUDIT_ARCH_AARCH64;
#elif defined(__riscv) && __riscv_xlen == 64
	return AUDIT_ARCH_RISCV64;
#else
	return 0; /* no call is decoded: every one is refused */
#endif
}

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

void meta_listener_tune(int listener)
{
	if (listener >= 0)
		(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
			    (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
}

void meta_supervisor_init(meta_supervisor *s, char *const *roots, char *const *fixed)
{
	*s = (meta_supervisor){.roots = roots, .fixed = fixed};
	(void)pthread_mutex_init(&s->net_lock, NULL);
}

/* Closes the roots opened at the first call: the next call opens them again. */
static void close_roots(meta_supervisor *s)
{
	if (!s->opened)
		return;
	if (s->caller_root >= 0)
		(void)close(s->caller_root);
	for (size_t i = 0; s->roots && s->roots[i]; i++)
		if (s->root_fds[i] >= 0)
			(void)close(s->root_fds[i]);
	free(s->root_fds);
	free(s->fixed_ids);
	s->root_fds = NULL;
	s->fixed_ids = NULL;
	s->n_fixed = 0;
	s->caller_root = -1;
	s->opened = false;
}

void meta_supervisor_done(meta_supervisor *s)
{
	close_roots(s);
	(void)pthread_mutex_lock(&s->net_lock);
	for (size_t i = 0; i < s->n_net_refused; i++)
		free(s->net_refused_list[i]);
	free(s->net_refused_list);
	s->net_refused_list = NULL;
	s->n_net_refused = 0;
	(void)pthread_mutex_unlock(&s->net_lock);
	atomic_store(&s->refused, 0);
	atomic_store(&s->net_refused, 0);
}

void meta_supervisor_set_net(meta_supervisor *s, const meta_net *net)
{
	s->net = *net;
}

/* Whether @obj is the very directory of a root that keeps its own metadata (the host's /tmp). */
static bool is_fixed_root(const meta_supervisor *s, int obj)
{
	struct stat st;
	if (s->n_fixed == 0 || fstat(obj, &st) < 0)
		return s->n_fixed > 0;
	for (size_t i = 0; i < s->n_fixed; i++)
		if (st.st_dev == s->fixed_ids[i].st_dev && st.st_ino == s->fixed_ids[i].st_ino)
			return true;
	return false;
}

/*
 * Opens, at the first call, the callers' root and each writable root as they see them: every
 * command of the tree shares one root and one mount namespace (its filter refuses chroot,
 * unshare and setns), so these serve the whole run. A root that cannot be opened (gone
 * meanwhile) is -1, beneath which nothing is performed. Returns 0, or -errno when the
 * caller's root cannot be opened (then nothing is kept and the call is refused).
 */
static int open_roots(meta_supervisor *s, pid_t tid)
{
	char proc_root[64];
	(void)snprintf(proc_root, sizeof(proc_root), "/proc/%d/root", (int)tid);
	int caller_root = open(proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (caller_root < 0)
		return -errno;
	size_t n = 0;
	while (s->roots && s->roots[n])
		n++;
	int *fds = malloc((n ? n : 1) * sizeof(*fds));
	struct stat *fixed_ids = calloc(n ? n : 1, sizeof(*fixed_ids));
	if (!fds || !fixed_ids) {
		free(fds);
		free(fixed_ids);
		(void)close(caller_root);
		return -ENOMEM;
	}
	size_t n_fixed = 0;
	for (size_t i = 0; i < n; i++) {
		struct open_how how = {
			.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
			.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		fds[i] = (int)syscall(SYS_openat2, caller_root, s->roots[i], &how, sizeof(how));
		bool fixed = false;
		for (size_t k = 0; s->fixed && s->fixed[k]; k++)
			fixed = fixed || strcmp(s->fixed[k], s->roots[i]) == 0;
		if (fixed && fds[i] >= 0 && fstat(fds[i], &fixed_ids[n_fixed]) == 0)
			n_fixed++;
	}
	s->caller_root = caller_root;
	s->root_fds = fds;
	s->fixed_ids = fixed_ids;
	s->n_fixed = n_fixed;
	s->opened = true;
	return 0;
}

int meta_handle(meta_supervisor *s, int listener)
{
	struct seccomp_notif n;
	memset(&n, 0, sizeof(n));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n) < 0)
		return errno == EINTR || errno == ENOENT ? 0 : -errno;

	struct seccomp_notif_resp resp = {.id = n.id, .error = -EPERM};
	bool outside = false;
	meta_call c;
	/* Another ABI (i386, x32) has other numbers and argument widths: refused, not guessed. */
	bool native = n.data.arch == meta_native_arch();
	bool net = native && (n.data.nr == SYS_connect || n.data.nr == SYS_sendto);
	bool opened_now = false;
	if (net && (s->opened || (opened_now = open_roots(s, (pid_t)n.pid) == 0))) {
		outside = meta_net_answer(s, listener, &n, &resp) > 0;
		if (opened_now && resp.error == -ESRCH)
			close_roots(s); /* the caller was gone: the view may be another's */
	} else if (native && !net && decode(&n, &c) == 0 &&
		   (s->opened || (opened_now = open_roots(s, (pid_t)n.pid) == 0))) {
		_cleanup_close_ int obj = open_object(s, &n, &c);
		/*
		 * What was read of /proc/TID above was the caller's: it is still the one blocked
		 * in this call, so its thread id was not reused meanwhile.
		 */
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n.id) < 0) {
			if (opened_now)
				close_roots(s); /* another process's view: not kept */
		} else if (obj == OUTSIDE || (obj >= 0 && is_fixed_root(s, obj))) {
			outside = true;
			/* Counted before the answer, which may end the caller and then the run. */
			atomic_fetch_add(&s->refused, 1);
		} else if (obj < 0) {
			resp.error = obj;
		} else {
			resp.error = perform(&n, obj);
		}
	}
	/* ENOENT: the caller is gone (killed meanwhile); nothing waits for the answer. */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		return -errno;
	return outside;
}

/*
 * A worker thread answers the calls from the first one on: a thread's capabilities are its
 * own, so it clears its effective set once (the calls run as the caller, who holds none)
 * instead of twice a call, and it waits in RECV alone, not in the caller's poll loop.
 */
struct meta_worker {
	pthread_t thread;
	meta_supervisor *s;
	int listener;
	int stop[2]; /* closing stop[1] ends the worker */
};

bool meta_clear_caps(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct caps[2];
	if (syscall(SYS_capget, &hdr, caps) == 0) {
		caps[0].effective = caps[1].effective = 0;
		caps_cleared = syscall(SYS_capset, &hdr, caps) == 0;
	}
	return caps_cleared;
}

static void *worker_main(void *arg)
{
	meta_worker *w = arg;
	(void)meta_clear_caps();
	for (;;) {
		struct pollfd p[2] = {{.fd = w->listener, .events = POLLIN},
				      {.fd = w->stop[0], .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN) {
			if (meta_handle(w->s, w->listener) < 0)
				break;
		} else if (p[0].revents) {
			break; /* POLLHUP: no process of the run is left to call */
		}
	}
	/* From here the kernel answers the run's calls ENOSYS: refused, never let through. */
	(void)close(w->listener);
	w->listener = -1;
	return NULL;
}

int meta_worker_start(meta_worker **ret, meta_supervisor *s, int listener)
{
	meta_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (meta_worker){.s = s, .listener = listener};
	if (pipe2(w->stop, O_CLOEXEC) < 0) {
		int r = -errno;
		free(w);
		return r;
	}
	/* Signals are the caller's to take: the worker blocks them all from its start. */
	sigset_t all, old;
	(void)sigfillset(&all);
	(void)pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(&w->thread, NULL, worker_main, w);
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		(void)close(w->stop[0]);
		(void)close(w->stop[1]);
		free(w);
		return -r;
	}
	*ret = w;
	return 0;
}

void meta_worker_stop(meta_worker *w)
{
	if (!w)
		return;
	(void)close(w->stop[1]);
	(void)pthread_join(w->thread, NULL);
	(void)close(w->stop[0]);
	free(w);
}
