/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's core (docs/design/metadata.md): receives the calls a confined command's
 * filter hands over (SECCOMP_RET_USER_NOTIF), routes each by its system call to the handler
 * that registered it (handler-*.c), and sends the answer; a call nobody takes, or of another
 * ABI, is refused with EPERM. It gives the handlers what every answer needs: the caller's
 * memory and /proc/TID read once, an object resolved in the caller's view and found beneath
 * the run's roots, an operation done as the caller (without our capabilities), and the check
 * that the caller still waits (SECCOMP_IOCTL_NOTIF_ID_VALID) before anything is done. No call
 * is ever let through (SECCOMP_USER_NOTIF_FLAG_CONTINUE would re-read memory the caller can
 * change meanwhile). A worker thread answers from the first call on.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/stat.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "confine.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

#define RECORD confine_refusals
static const record_field confine_refusals_fields[] = {CONFINE_REFUSALS_FIELDS(RECORD_FIELD)};
const record_type confine_refusals_record = RECORD_TYPE(confine_refusals_fields);
#undef RECORD

/* --- the caller's memory and /proc/TID -------------------------------------------------------- */

int sup_peek(pid_t pid, uint64_t addr, void *buf, size_t len)
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

int sup_poke(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	/* process_vm_writev() only reads the local side. */
	struct iovec local = {.iov_base = (void *)buf, .iov_len = len};
	/* NOLINTNEXTLINE(performance-no-int-to-ptr) */
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n = process_vm_writev(pid, &local, 1, &remote, 1, 0);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

/* Page by page: the string may end right before an unmapped page. */
int sup_peek_string(pid_t pid, uint64_t addr, char *buf, size_t size)
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
static int root_of(const supervisor *s, const char *path, size_t from)
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
static const char *beneath_part(const supervisor *s, const char *path, int i)
{
	size_t rl = strlen(s->roots[i]);
	if (rl == 1)
		rl = 0;
	while (path[rl] == '/')
		rl++;
	return path[rl] ? path + rl : ".";
}

/*
 * openat2(2), again while it says EAGAIN: with RESOLVE_BENEATH or RESOLVE_IN_ROOT it gives up on
 * a ".." whenever a rename or a mount anywhere on the host raced the walk (it cannot tell an
 * escape from a busy machine), and asks to be retried. The caller's call must not fail for what
 * other processes do, so a few more tries; a walk that still cannot finish fails with EAGAIN.
 */
static int openat2_retry(int dirfd, const char *path, const struct open_how *how)
{
	for (int tries = 0;; tries++) {
		int fd = (int)syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
		if (fd >= 0 || errno != EAGAIN || tries == 64)
			return fd < 0 ? -errno : fd;
	}
}

/*
 * Opens @rel beneath root @i, O_PATH, where nothing may lead out of it: the kernel's answer
 * that the object is beneath that root (RESOLVE_BENEATH refuses "..", absolute symlinks and
 * magic links that would leave it, with EXDEV or ELOOP). Returns the descriptor or -errno.
 */
static int open_beneath(const supervisor *s, int i, const char *rel, bool follow, bool symlinks)
{
	if (s->root_fds[i] < 0)
		return -ENOENT;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
			   (symlinks ? 0 : RESOLVE_NO_SYMLINKS),
	};
	return openat2_retry(s->root_fds[i], rel, &how);
}

/*
 * Finds the object whose path (as we read it, in the caller's view) is @path and whose inode is
 * @want beneath one of the roots, walking no symlink: the object itself, opened beneath the
 * root, or SUP_OUTSIDE when it is not beneath any (a pipe, a socket, a deleted file, elsewhere).
 */
static int find_beneath(const supervisor *s, const char *path, const struct stat *want)
{
	if (path[0] != '/')
		return SUP_OUTSIDE;
	for (int i = root_of(s, path, 0); i >= 0; i = root_of(s, path, (size_t)i + 1)) {
		int fd = open_beneath(s, i, beneath_part(s, path, i), false, false);
		struct stat got;
		if (fd >= 0 && fstat(fd, &got) == 0 && got.st_dev == want->st_dev &&
		    got.st_ino == want->st_ino)
			return fd;
		if (fd >= 0)
			(void)close(fd);
	}
	return SUP_OUTSIDE;
}

/* What the descriptor's path names beneath a root, provided it is the descriptor's own inode. */
int sup_open_fd(const supervisor *s, pid_t tid, int fd)
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

int sup_absolute(pid_t tid, int dirfd, const char *path, char *full, size_t size)
{
	if (path[0] == '/') {
		(void)snprintf(full, size, "%s", path);
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
			(void)snprintf(full, size, "%s", dir);
		else if ((size_t)snprintf(full, size, "%s/%s", dir, path) >= size)
			return -ENAMETOOLONG;
	}
	return strlen(full) >= 4096 ? -ENAMETOOLONG : 0;
}

/*
 * The object is resolved once as the caller would resolve it, in the caller's mount namespace
 * (where the read-only binds of protected paths are), and found beneath a root. The path is
 * made absolute from the caller's working directory or descriptor. Most paths lead to the
 * object beneath the root they start in, which one openat2() from that root proves; a path
 * that leaves it (an absolute symlink, "..") is resolved from the caller's root
 * (RESOLVE_IN_ROOT) and the object it reaches is looked for beneath the roots. A race that
 * renames a directory meanwhile only leads to another object of the caller's view, which is
 * checked as any. Magic links are refused but the caller's own /proc/self/fd/N.
 */
/*
 * Walks the absolute @full in the caller's view: the object (O_PATH) or the walk's -errno
 * (SUP_OUTSIDE: no view to walk in), and in *@ret_beneath the same object found beneath a root:
 * the very descriptor returned when one walk beneath the root it starts in reached it, another
 * one when it was found there by its path, or SUP_OUTSIDE.
 */
static int walk(const supervisor *s, const char *full, bool follow, int *ret_beneath)
{
	*ret_beneath = SUP_OUTSIDE;
	int i = root_of(s, full, 0);
	if (i >= 0) {
		int fd = open_beneath(s, i, beneath_part(s, full, i), follow, true);
		if (fd >= 0)
			*ret_beneath = fd;
		if (fd >= 0 || (fd != -EXDEV && fd != -ELOOP && fd != -EAGAIN))
			return fd;
	}
	if (s->caller_root < 0)
		return SUP_OUTSIDE;
	struct open_how how = {
		.flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int obj = openat2_retry(s->caller_root, full, &how);
	if (obj < 0)
		return obj;
	char where[4096];
	struct stat want;
	if (sup_fd_path(obj, where, sizeof(where)) == 0 && fstat(obj, &want) == 0)
		*ret_beneath = find_beneath(s, where, &want);
	return obj;
}

int sup_open_path(const supervisor *s, pid_t tid, int dirfd, const char *path, bool follow)
{
	int fdnum = path[0] ? proc_fd_of(path, tid) : dirfd;
	if (fdnum >= 0)
		return sup_open_fd(s, tid, fdnum);

	char full[8192];
	int r = sup_absolute(tid, dirfd, path, full, sizeof(full));
	if (r < 0)
		return r;
	int beneath;
	int obj = walk(s, full, follow, &beneath);
	if (obj >= 0 && obj != beneath)
		(void)close(obj);
	return obj < 0 ? obj : beneath;
}

int sup_resolve(const supervisor *s, pid_t tid, int dirfd, const char *path, bool follow,
		bool *ret_inside)
{
	*ret_inside = false;
	if (!path[0] || proc_fd_of(path, tid) >= 0)
		return -ELOOP; /* a descriptor, not a path: not this function's */
	char full[8192];
	int r = sup_absolute(tid, dirfd, path, full, sizeof(full));
	if (r < 0)
		return r;
	int beneath;
	int obj = walk(s, full, follow, &beneath);
	*ret_inside = beneath >= 0;
	if (beneath >= 0 && beneath != obj)
		(void)close(beneath);
	return obj == SUP_OUTSIDE ? -ENOENT : obj;
}

int sup_fd_path(int fd, char *buf, size_t size)
{
	char self[64];
	(void)snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	ssize_t len = readlink(self, buf, size - 1);
	if (len <= 0 || (size_t)len >= size - 1)
		return -ENAMETOOLONG;
	buf[len] = '\0';
	return buf[0] == '/' ? 0 : -ENOENT;
}

bool sup_beneath(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1)
		return true; /* "/" */
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

bool sup_mount_readonly(int obj, bool *ret_ro)
{
	struct statvfs v;
	if (fstatvfs(obj, &v) < 0)
		return false;
	*ret_ro = v.f_flag & ST_RDONLY;
	return true;
}

/* Set in a worker thread, which clears its effective capabilities once for all its calls. */
static _Thread_local bool caps_cleared;

/* As the caller, who holds none: an owner check the kernel makes must not pass on ours. */
int sup_as_caller(int (*op)(int obj, const void *arg), int obj, const void *arg)
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

pid_t sup_tgid(pid_t tid)
{
	char path[64], buf[512];
	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t len = read(fd, buf, sizeof(buf) - 1);
	if (len <= 0)
		return -ESRCH;
	buf[len] = '\0';
	const char *t = strstr(buf, "\nTgid:");
	if (!t)
		return -ESRCH;
	long tgid = strtol(t + 6, NULL, 10);
	return tgid > 0 ? (pid_t)tgid : -ESRCH;
}

int sup_caller_pidfd(pid_t tid)
{
	/* A pidfd of a thread that is not the leader needs Linux 6.9: the leader's, then. */
	pid_t tgid = sup_tgid(tid);
	if (tgid < 0)
		return tgid;
	int pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
	return pidfd < 0 ? -errno : pidfd;
}

int sup_pidfd_getfd(int pidfd, int fd)
{
	int ours = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	return ours < 0 ? -errno : ours;
}

int sup_caller_fd(pid_t tid, int fd)
{
	_cleanup_close_ int pidfd = sup_caller_pidfd(tid);
	return pidfd < 0 ? pidfd : sup_pidfd_getfd(pidfd, fd);
}

uint32_t sup_native_arch(void)
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

void sup_listener_tune(int listener)
{
	if (listener >= 0)
		(void)ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
			    (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
}

/* --- the roots ---------------------------------------------------------------------------------
 */

static void close_roots(supervisor *s)
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

bool sup_is_fixed_root(const supervisor *s, int obj)
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
 * The identity of the caller @tid's view: its root directory and that root's mount, whose id
 * changes with its mount namespace too (a new namespace's mounts are copies, with ids of their
 * own). One statx() of /proc/TID/root where the kernel tells mount ids (5.8); before, its mount
 * namespace's inode and the root's. False when it cannot be told.
 */
static bool view_id(pid_t tid, uint64_t id[3])
{
	char path[64];
	struct statx stx;
	(void)snprintf(path, sizeof(path), "/proc/%d/root", (int)tid);
	if (syscall(SYS_statx, AT_FDCWD, path, 0, STATX_INO | STATX_MNT_ID, &stx) < 0)
		return false;
	id[1] = ((uint64_t)stx.stx_dev_major << 32) | stx.stx_dev_minor;
	id[2] = stx.stx_ino;
	if (stx.stx_mask & STATX_MNT_ID) {
		id[0] = stx.stx_mnt_id;
		return true;
	}
	struct stat ns;
	(void)snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)tid);
	if (stat(path, &ns) < 0)
		return false;
	id[0] = ns.st_ino;
	return true;
}

/*
 * Below a runner, whether the caller @tid still has the view the roots were opened in: the
 * runner's setup moves from the host's mount namespace and root to its own (unshare,
 * pivot_root) before the command runs.
 */
static bool same_view(const supervisor *s, pid_t tid)
{
	uint64_t id[3];
	return view_id(tid, id) && id[0] == s->view[0] && id[1] == s->view[1] &&
	       id[2] == s->view[2];
}

/*
 * Opens, at the first call, the callers' root and each writable root as they see them: every
 * command of the tree shares one root and one mount namespace (its filter refuses chroot,
 * unshare and setns), so these serve the whole run; below a runner, while its view stays the
 * same (same_view()). A root that cannot be opened (gone meanwhile) is -1, beneath which
 * nothing is performed. Returns 0, or -errno when the caller's root cannot be opened (then
 * nothing is kept and the call is refused, or goes on unseen where its handler only looks).
 */
static int open_roots(supervisor *s, pid_t tid)
{
	char proc_root[64];
	(void)snprintf(proc_root, sizeof(proc_root), "/proc/%d/root", (int)tid);
	int caller_root = open(proc_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (caller_root < 0)
		return -errno;
	uint64_t id[3] = {0, 0, 0};
	if (s->runner && !view_id(tid, id)) {
		(void)close(caller_root);
		return -ENOENT; /* no view that can be told from the next */
	}
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
		fds[i] = openat2_retry(caller_root, s->roots[i], &how);
		bool fixed = false;
		for (size_t k = 0; s->fixed && s->fixed[k]; k++)
			fixed = fixed || strcmp(s->fixed[k], s->roots[i]) == 0;
		if (fixed && fds[i] >= 0 && fstat(fds[i], &fixed_ids[n_fixed]) == 0)
			n_fixed++;
	}
	s->caller_root = caller_root;
	memcpy(s->view, id, sizeof(s->view));
	s->root_fds = fds;
	s->fixed_ids = fixed_ids;
	s->n_fixed = n_fixed;
	s->opened = true;
	return 0;
}

/* --- handlers and the answer -------------------------------------------------------------------
 */

void supervisor_init(supervisor *s, char *const *roots, char *const *fixed)
{
	*s = (supervisor){.roots = roots, .fixed = fixed, .caller_root = -1};
	(void)pthread_mutex_init(&s->ev_lock, NULL);
}

/* @path's characters, control ones as '?', into @buf: a record is one line of tab-split fields. */
static void printable(const char *path, char *buf, size_t size)
{
	size_t i = 0;
	for (; path[i] && i + 1 < size; i++)
		buf[i] = (unsigned char)path[i] < 0x20 || path[i] == 0x7f ? '?' : path[i];
	buf[i] = '\0';
}

/* The name of an errno the handlers answer (musl, which landlock-run is built with, has no
 * strerrorname_np()). */
static const char *errno_name(int err)
{
	switch (err) {
	case 0:
		return "-";
	case EACCES:
		return "EACCES";
	case EROFS:
		return "EROFS";
	case EPERM:
		return "EPERM";
	default:
		return "EIO";
	}
}

/* Whether record @rec ("OP\tERRNO\tPATH\t...") names @path. */
static bool names_path(const char *rec, const char *path)
{
	const char *p = strchr(rec, '\t');
	p = p ? strchr(p + 1, '\t') : NULL;
	if (!p)
		return false;
	size_t len = strlen(path);
	return strncmp(p + 1, path, len) == 0 && p[1 + len] == '\t';
}

void sup_record(supervisor *s, unsigned calls, const char *op, int err, const char *path,
		const char *named, const char *why)
{
	char p[4096], n[4096];
	printable(path, p, sizeof(p));
	printable(named, n, sizeof(n));
	const char *name = errno_name(err);
	(void)pthread_mutex_lock(&s->ev_lock);
	s->ev_files += calls;
	bool known = false;
	for (size_t i = 0; i < s->ev_n && !known; i++)
		known = names_path(s->ev_named[i], p);
	if (!known && s->ev_n < FILES_NAMED_MAX) {
		if (!s->ev_named)
			s->ev_named = calloc(FILES_NAMED_MAX + 1, sizeof(char *));
		char *rec = NULL;
		if (s->ev_named && asprintf(&rec, "%s\t%s\t%s\t%s\t%s", op, name, p, n, why) >= 0)
			s->ev_named[s->ev_n++] = rec;
	}
	(void)pthread_mutex_unlock(&s->ev_lock);
}

int supervisor_add(supervisor *s, const sup_handler *h, void *state)
{
	size_t n = 0;
	while (h->calls[n] >= 0)
		n++;
	int r = 0;
	if (s->n_slots == SUP_HANDLERS_MAX || s->n_routes + n > SUP_ROUTES_MAX)
		r = -ENOSPC;
	for (size_t i = 0; r >= 0 && i < n; i++)
		for (size_t k = 0; k < s->n_routes; k++)
			if (s->routes[k].nr == h->calls[i])
				r = -EEXIST;
	if (r < 0) {
		h->free(state);
		return r;
	}
	unsigned slot = (unsigned)s->n_slots++;
	s->slots[slot].h = h;
	s->slots[slot].state = state;
	for (size_t i = 0; i < n; i++)
		s->routes[s->n_routes++] = (sup_route){.nr = h->calls[i], .slot = slot};
	return 0;
}

void *supervisor_state(const supervisor *s, const sup_handler *h)
{
	for (size_t i = 0; i < s->n_slots; i++)
		if (s->slots[i].h == h)
			return s->slots[i].state;
	return NULL;
}

void supervisor_start(supervisor *s)
{
	if (s->started)
		return;
	s->started = true;
	for (size_t i = 0; i < s->n_slots; i++)
		if (s->slots[i].h->start)
			s->slots[i].h->start(s->slots[i].state);
}

int supervisor_refusals(supervisor *s, confine_refusals *io)
{
	int r = 0;
	for (size_t i = 0; r >= 0 && i < s->n_slots; i++)
		if (s->slots[i].h->refusals)
			r = s->slots[i].h->refusals(s->slots[i].state, io);
	(void)pthread_mutex_lock(&s->ev_lock);
	io->files += s->ev_files;
	if (s->ev_unseen)
		io->evidence = 0; /* the caller keeps the signature rule */
	if (r >= 0 && s->ev_n > 0) {
		/* Appended to what @io holds (a monitor's copy starts empty). */
		size_t had = 0;
		while (io->files_named && io->files_named[had])
			had++;
		char **v = realloc(io->files_named, (had + s->ev_n + 1) * sizeof(char *));
		if (v) {
			io->files_named = v;
			v[had] = NULL;
		}
		r = v ? 0 : -ENOMEM;
		for (size_t i = 0; r >= 0 && i < s->ev_n; i++) {
			if (!(v[had] = strdup(s->ev_named[i])))
				r = -ENOMEM;
			else
				v[++had] = NULL;
		}
	}
	(void)pthread_mutex_unlock(&s->ev_lock);
	return r;
}

void supervisor_done(supervisor *s)
{
	close_roots(s);
	for (size_t i = 0; i < s->n_slots; i++)
		s->slots[i].h->free(s->slots[i].state);
	s->n_slots = 0;
	s->n_routes = 0;
	s->started = false;
	for (size_t i = 0; i < s->ev_n; i++)
		free(s->ev_named[i]);
	free(s->ev_named);
	s->ev_named = NULL;
	s->ev_n = 0;
	s->ev_files = 0;
	s->ev_unseen = 0;
	(void)pthread_mutex_destroy(&s->ev_lock);
}

bool sup_call_valid(sup_call *c)
{
	if (ioctl(c->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &c->n->id) == 0)
		return true;
	c->gone = true;
	return false;
}

/* The handlers that registered @nr, in their order: the first that does not pass answers. */
static int dispatch(supervisor *s, sup_call *c, struct seccomp_notif_resp *resp)
{
	for (size_t i = 0; i < s->n_routes; i++) {
		if (s->routes[i].nr != c->n->data.nr)
			continue;
		unsigned slot = s->routes[i].slot;
		int r = s->slots[slot].h->answer(s->slots[slot].state, c, resp);
		if (r != SUP_PASS)
			return r;
	}
	return SUP_ANSWERED; /* nobody's: refused (-EPERM), not counted */
}

/* x32's calls carry the x86-64 arch with this bit in their number: another ABI. */
#ifdef __x86_64__
#define X32_SYSCALL_BIT 0x40000000
#else
#define X32_SYSCALL_BIT 0
#endif

/* Whether the handler that answers @nr only looks at it (sup_handler.looks_only). */
static bool looks_only(const supervisor *s, int nr)
{
	for (size_t i = 0; i < s->n_routes; i++)
		if (s->routes[i].nr == nr) {
			const sup_handler *h = s->slots[s->routes[i].slot].h;
			return h->looks_only && h->looks_only(s->slots[s->routes[i].slot].state);
		}
	return false;
}

int supervisor_handle(supervisor *s, int listener)
{
	struct seccomp_notif n;
	memset(&n, 0, sizeof(n));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &n) < 0)
		return errno == EINTR || errno == ENOENT ? 0 : -errno;

	struct seccomp_notif_resp resp = {.id = n.id, .error = -EPERM};
	sup_call c = {.sup = s, .listener = listener, .n = &n};
	int r = SUP_ANSWERED;
	bool native = n.data.arch == sup_native_arch() && !(n.data.nr & X32_SYSCALL_BIT);
	/* Another ABI (i386, x32) has other numbers and argument widths: refused, not guessed;
	 * below a runner, where we only look, it goes on unseen. */
	if (!native && s->runner) {
		resp.error = 0;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	}
	if (native && s->opened && s->runner && !same_view(s, (pid_t)n.pid))
		close_roots(s);
	bool opened_now = false;
	if (native && (s->opened || (opened_now = open_roots(s, (pid_t)n.pid) == 0))) {
		r = dispatch(s, &c, &resp);
		if (opened_now && c.gone)
			close_roots(s); /* another process's view: not kept */
	} else if (native && looks_only(s, n.data.nr)) {
		resp.error = 0;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		/* Gone, it made no call; alive, its call went unseen: the evidence is not whole. */
		if (sup_call_valid(&c)) {
			(void)pthread_mutex_lock(&s->ev_lock);
			s->ev_unseen++;
			(void)pthread_mutex_unlock(&s->ev_lock);
		}
	}
	/* ENOENT: the caller is gone (killed meanwhile); nothing waits for the answer. */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		return -errno;
	return r == SUP_REFUSED;
}

/*
 * A worker thread answers the calls from the first one on: a thread's capabilities are its
 * own, so it clears its effective set once (the calls run as the caller, who holds none)
 * instead of twice a call, and it waits in RECV alone, not in the caller's poll loop.
 */
struct sup_worker {
	pthread_t thread;
	supervisor *s;
	int listener;
	int stop[2]; /* closing stop[1] ends the worker */
};

bool sup_clear_caps(void)
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
	sup_worker *w = arg;
	(void)sup_clear_caps();
	for (;;) {
		struct pollfd p[2] = {{.fd = w->listener, .events = POLLIN},
				      {.fd = w->stop[0], .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (p[0].revents & POLLIN) {
			if (supervisor_handle(w->s, w->listener) < 0)
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

int sup_worker_start(sup_worker **ret, supervisor *s, int listener)
{
	sup_worker *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (sup_worker){.s = s, .listener = listener};
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

void sup_worker_stop(sup_worker *w)
{
	if (!w)
		return;
	(void)close(w->stop[1]);
	(void)pthread_join(w->thread, NULL);
	(void)close(w->stop[0]);
	free(w);
}
