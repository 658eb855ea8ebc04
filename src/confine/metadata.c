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
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <linux/audit.h>
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

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#define NR_FCHMODAT2	 452
#define NR_SETXATTRAT	 463
#define NR_REMOVEXATTRAT 466
#define NR_FILE_SETATTR	 469

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

/* Copies @len bytes at @addr of process @pid into @buf; -errno. */
static int peek(pid_t pid, uint64_t addr, void *buf, size_t len)
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

/* The caller's descriptor @fd, as ours (pidfd_getfd); -errno. */
static int grab_fd(int pidfd, int fd)
{
	int r = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	return r < 0 ? -errno : r;
}

/* The caller's working directory, in its mount namespace; -errno. */
static int grab_cwd(pid_t pid)
{
	char proc[64];
	(void)snprintf(proc, sizeof(proc), "/proc/%d/cwd", (int)pid);
	int r = open(proc, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return r < 0 ? -errno : r;
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

/*
 * Opens the object @c names, O_PATH, resolving it once as the caller would, in the caller's
 * mount namespace: from its root (RESOLVE_IN_ROOT, so that an absolute path or symlink stays in
 * the caller's view, where the read-only binds of protected paths are), the path made absolute
 * from its working directory or descriptor. A race that renames a directory meanwhile only
 * leads to another object of the caller's view, which is checked as any. Magic links are
 * refused but the caller's own /proc/self/fd/N. Returns the descriptor or -errno.
 */
static int open_object(const struct seccomp_notif *n, const meta_call *c, int pidfd)
{
	if (c->fd >= 0)
		return grab_fd(pidfd, c->fd);
	if (c->null_path && c->dirfd == AT_FDCWD)
		return -EFAULT; /* utimensat(AT_FDCWD, NULL, ...), as the kernel answers it */

	char path[4096];
	if (c->null_path) {
		path[0] = '\0';
	} else {
		int r = peek_string(n->pid, c->path, path, sizeof(path));
		if (r < 0)
			return r;
	}
	if (path[0] == '\0') {
		if (!c->empty_path && !c->null_path)
			return -ENOENT;
		return c->dirfd == AT_FDCWD ? grab_cwd(n->pid) : grab_fd(pidfd, c->dirfd);
	}
	int fdnum = proc_fd_of(path, (pid_t)n->pid);
	if (fdnum >= 0)
		return grab_fd(pidfd, fdnum);

	/* The absolute spelling, in the caller's view. */
	char full[8192];
	if (path[0] == '/') {
		(void)snprintf(full, sizeof(full), "%s", path);
	} else {
		_cleanup_close_ int base =
			c->dirfd == AT_FDCWD ? grab_cwd(n->pid) : grab_fd(pidfd, c->dirfd);
		if (base < 0)
			return base;
		char link[64], dir[4096];
		(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", base);
		ssize_t len = readlink(link, dir, sizeof(dir) - 1);
		if (len <= 0 || dir[0] != '/')
			return -ENOENT; /* a deleted directory, or not one at all */
		dir[len] = '\0';
		if ((size_t)snprintf(full, sizeof(full), "%s/%s", dir, path) >= sizeof(full))
			return -ENAMETOOLONG;
	}
	char proc_root[64];
	(void)snprintf(proc_root, sizeof(proc_root), "/proc/%d/root", (int)n->pid);
	_cleanup_close_ int root = open(proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (c->follow ? 0 : O_NOFOLLOW),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, root, full, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

/*
 * Whether @obj lies beneath one of the writable roots, as the caller sees them: its own path
 * names the candidate root, and that path, opened again from the root (in the caller's mount
 * namespace, with no symlink and no way out), must be the same inode.
 */
static bool beneath_a_root(const meta_supervisor *s, pid_t pid, int obj)
{
	char self[64], path[4096];
	(void)snprintf(self, sizeof(self), "/proc/self/fd/%d", obj);
	ssize_t len = readlink(self, path, sizeof(path) - 1);
	if (len <= 0 || path[0] != '/')
		return false; /* a pipe, a socket, a deleted file: not beneath any root */
	path[len] = '\0';

	struct stat want;
	if (fstat(obj, &want) < 0)
		return false;
	char proc_root[64];
	(void)snprintf(proc_root, sizeof(proc_root), "/proc/%d/root", (int)pid);
	_cleanup_close_ int their_root = open(proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (their_root < 0)
		return false;

	for (size_t i = 0; s->roots && s->roots[i]; i++) {
		const char *root = s->roots[i];
		size_t rl = strlen(root);
		if (rl == 1)
			rl = 0; /* "/": every path is beneath it */
		if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
			continue;
		_cleanup_close_ int rootfd = openat(their_root, root[1] ? root + 1 : ".",
						    O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (rootfd < 0)
			continue;
		const char *rel = path[rl] == '/' && path[rl + 1] ? path + rl + 1 : ".";
		struct open_how how = {
			.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		_cleanup_close_ int again =
			(int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
		struct stat got;
		if (again >= 0 && fstat(again, &got) == 0 && got.st_dev == want.st_dev &&
		    got.st_ino == want.st_ino)
			return true;
	}
	return false;
}

/*
 * Runs @op(@obj, @arg) with this thread's effective capabilities cleared, as the caller, who holds
 * none, would: an owner check the kernel makes must not be passed on our capabilities. Returns
 * what @op returns.
 */
static int as_caller(int (*op)(int obj, const void *arg), int obj, const void *arg)
{
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
		return as_caller(op_chmod, obj, &mode);
	}
	case SYS_chown:
	case SYS_lchown:
	case SYS_fchown: {
		chown_arg c = {(uid_t)a[1], (gid_t)a[2]};
		return as_caller(op_chown, obj, &c);
	}
	case SYS_fchownat: {
		chown_arg c = {(uid_t)a[2], (gid_t)a[3]};
		return as_caller(op_chown, obj, &c);
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
			if ((r = peek(pid, addr, &u, sizeof(u))) < 0)
				return r;
			ts[0] = (struct timespec){.tv_sec = u.actime};
			ts[1] = (struct timespec){.tv_sec = u.modtime};
		} else if (n->data.nr == SYS_utimensat) {
			if ((r = peek(pid, addr, ts, sizeof(ts))) < 0)
				return r;
		} else {
			struct timeval tv[2];
			if ((r = peek(pid, addr, tv, sizeof(tv))) < 0)
				return r;
			for (int i = 0; i < 2; i++)
				ts[i] = (struct timespec){.tv_sec = tv[i].tv_sec,
							  .tv_nsec = tv[i].tv_usec * 1000};
		}
		return as_caller(op_utimens, obj, times);
	}
	case SYS_setxattr:
	case SYS_lsetxattr:
	case SYS_fsetxattr:
	case SYS_removexattr:
	case SYS_lremovexattr:
	case SYS_fremovexattr: {
		_cleanup_free_ char *value = NULL;
		char name[256];
		xattr_arg x = {.name = name};
		if ((r = peek_string(pid, a[1], name, sizeof(name))) < 0)
			return r == -ENAMETOOLONG ? -ERANGE : r;
		bool set = n->data.nr == SYS_setxattr || n->data.nr == SYS_lsetxattr ||
			   n->data.nr == SYS_fsetxattr;
		if (set) {
			if (a[3] > XATTR_VALUE_MAX)
				return -E2BIG;
			if (!(value = malloc(a[3] ? (size_t)a[3] : 1)))
				return -ENOMEM;
			if (a[3] > 0 && (r = peek(pid, a[2], value, (size_t)a[3])) < 0)
				return r;
			x.value = value;
			x.size = (size_t)a[3];
			x.flags = (int)a[4];
		}
		return as_caller(op_xattr, obj, &x);
	}
	case SYS_ioctl: {
		/* FS_IOC_SETFLAGS reads an int (whatever its name says); FSSETXATTR a struct. */
		union {
			int flags;
			struct fsxattr fsx;
		} v;
		unsigned request = (unsigned)a[1];
		size_t size = request == FS_IOC_FSSETXATTR ? sizeof(v.fsx) : sizeof(v.flags);
		if ((r = peek(pid, a[2], &v, size)) < 0)
			return r;
		ioctl_arg io = {.request = request, .value = &v};
		return as_caller(op_ioctl, obj, &io);
	}
	default:
		/* setxattrat, removexattrat, file_setattr: refused until they are emulated. */
		return -EPERM;
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

int meta_handle(const meta_supervisor *s, int listener)
{
	struct seccomp_notif n;
	memset(&n, 0, sizeof(n));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n) < 0)
		return errno == EINTR || errno == ENOENT ? 0 : -errno;

	struct seccomp_notif_resp resp = {.id = n.id, .error = -EPERM};
	bool outside = false;
	meta_call c;
	/* Another ABI (i386, x32) has other numbers and argument widths: refused, not guessed. */
	if (n.data.arch == s->native_arch && decode(&n, &c) == 0) {
		_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, n.pid, 0);
		/* The caller is still the one blocked in this call: its pid was not reused. */
		if (pidfd >= 0 && ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n.id) == 0) {
			_cleanup_close_ int obj = open_object(&n, &c, pidfd);
			if (obj < 0)
				resp.error = obj;
			else if (!(outside = !beneath_a_root(s, (pid_t)n.pid, obj)))
				resp.error = perform(&n, obj);
		}
	}
	/* ENOENT: the caller is gone (killed meanwhile); nothing waits for the answer. */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		return -errno;
	return outside;
}
