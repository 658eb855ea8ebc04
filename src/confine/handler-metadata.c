/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's metadata calls (docs/design/metadata.md): Landlock has no rights for
 * permissions, owners, times, extended attributes or inode flags, so under Landlock the filter
 * hands those calls to the supervisor (SECCOMP_METADATA_NOTIFY), and this handler performs
 * them itself on objects beneath a writable root and refuses them elsewhere.
 *
 * Each call is answered from one resolution: its arguments are the notification's, a path or
 * a value is copied once from the caller's memory, the object is opened once (from the caller's
 * working directory or descriptor, in the caller's mount namespace, by notify.c), checked, and
 * the operation is done on that open object. Nothing is ever re-resolved by path.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "confine.h"

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

/*
 * The object @c names, resolved once in the caller's view and found beneath a root
 * (sup_open_path()): O_PATH, SUP_OUTSIDE when it lies outside every root, or the caller's
 * -errno.
 */
static int open_object(const supervisor *s, const struct seccomp_notif *n, const meta_call *c)
{
	pid_t tid = (pid_t)n->pid;
	if (c->fd >= 0)
		return sup_open_fd(s, tid, c->fd);
	if (c->null_path && c->dirfd == AT_FDCWD)
		return -EFAULT; /* utimensat(AT_FDCWD, NULL, ...), as the kernel answers it */

	char path[4096];
	if (c->null_path) {
		path[0] = '\0';
	} else {
		int r = sup_peek_string(tid, c->path, path, sizeof(path));
		if (r < 0)
			return r;
	}
	if (path[0] == '\0' && !c->empty_path && !c->null_path)
		return -ENOENT;
	return sup_open_path(s, tid, c->dirfd, path, c->follow);
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
	int r = sup_peek(pid, addr, all, usize);
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
	int r = sup_peek_string(pid, name_addr, name, sizeof(name));
	if (r < 0)
		return r == -ENAMETOOLONG ? -ERANGE : r;
	if (size > XATTR_VALUE_MAX)
		return -E2BIG;
	_cleanup_free_ char *value = malloc(size ? (size_t)size : 1);
	if (!value)
		return -ENOMEM;
	if (size > 0 && (r = sup_peek(pid, value_addr, value, (size_t)size)) < 0)
		return r;
	xattr_arg x = {.name = name, .value = value, .size = (size_t)size, .flags = flags};
	return sup_as_caller(op_xattr, obj, &x);
}

/* removexattr() of the caller's name at @name_addr on @obj. */
static int remove_xattr(pid_t pid, uint64_t name_addr, int obj)
{
	char name[256];
	int r = sup_peek_string(pid, name_addr, name, sizeof(name));
	if (r < 0)
		return r == -ENAMETOOLONG ? -ERANGE : r;
	xattr_arg x = {.name = name};
	return sup_as_caller(op_xattr, obj, &x);
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
		return sup_as_caller(op_chmod, obj, &mode);
	}
	case SYS_chown:
	case SYS_lchown:
	case SYS_fchown: {
		chown_arg c = {(uid_t)a[1], (gid_t)a[2]};
		return sup_as_caller(op_chown, obj, &c);
	}
	case SYS_fchownat: {
		chown_arg c = {(uid_t)a[2], (gid_t)a[3]};
		return sup_as_caller(op_chown, obj, &c);
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
			if ((r = sup_peek(pid, addr, &u, sizeof(u))) < 0)
				return r;
			ts[0] = (struct timespec){.tv_sec = u.actime};
			ts[1] = (struct timespec){.tv_sec = u.modtime};
		} else if (n->data.nr == SYS_utimensat) {
			if ((r = sup_peek(pid, addr, ts, sizeof(ts))) < 0)
				return r;
		} else {
			struct timeval tv[2];
			if ((r = sup_peek(pid, addr, tv, sizeof(tv))) < 0)
				return r;
			for (int i = 0; i < 2; i++)
				ts[i] = (struct timespec){.tv_sec = tv[i].tv_sec,
							  .tv_nsec = tv[i].tv_usec * 1000};
		}
		return sup_as_caller(op_utimens, obj, times);
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
		return sup_as_caller(op_file_setattr, obj, &fa);
	}
	case SYS_ioctl: {
		/* FS_IOC_SETFLAGS reads an int (whatever its name says); FSSETXATTR a struct. */
		union {
			int flags;
			struct fsxattr fsx;
		} v;
		unsigned request = (unsigned)a[1];
		size_t size = request == FS_IOC_FSSETXATTR ? sizeof(v.fsx) : sizeof(v.flags);
		if ((r = sup_peek(pid, a[2], &v, size)) < 0)
			return r;
		ioctl_arg io = {.request = request, .value = &v};
		return sup_as_caller(op_ioctl, obj, &io);
	}
	default:
		return -EPERM; /* decode() took no other call */
	}
}

/* --- the handler -------------------------------------------------------------------------------
 */

/*
 * Its state: the changes refused outside the roots so far, counted before each answer; or,
 * below a runner, where its read-only mounts refuse every change outside the roots and this
 * handler only looks (evidence), the plan whose protected and hidden paths name a refusal.
 */
typedef struct metadata_state {
	_Atomic unsigned refused;
	const confine_plan *observed; /* borrowed; NULL: it performs the calls */
	bool ioctl_mount_first;	      /* the kernel checks FS_IOC_SETFLAGS's mount first (5.13) */
} metadata_state;

static const int metadata_calls[] = {
	SYS_chmod,
	SYS_fchmod,
	SYS_fchmodat,
	NR_FCHMODAT2,
	SYS_chown,
	SYS_fchown,
	SYS_lchown,
	SYS_fchownat,
	SYS_utime,
	SYS_utimes,
	SYS_futimesat,
	SYS_utimensat,
	SYS_setxattr,
	SYS_lsetxattr,
	SYS_fsetxattr,
	SYS_removexattr,
	SYS_lremovexattr,
	SYS_fremovexattr,
	NR_SETXATTRAT,
	NR_REMOVEXATTRAT,
	NR_FILE_SETATTR,
	SYS_ioctl,
	-1,
};

/* The evidence's name of the operation of call @nr (docs/design/evidence.md). */
static const char *op_name(int nr)
{
	switch (nr) {
	case SYS_chmod:
	case SYS_fchmod:
	case SYS_fchmodat:
	case NR_FCHMODAT2:
		return "chmod";
	case SYS_chown:
	case SYS_fchown:
	case SYS_lchown:
	case SYS_fchownat:
		return "chown";
	case SYS_utime:
	case SYS_utimes:
	case SYS_futimesat:
	case SYS_utimensat:
		return "utimes";
	case SYS_ioctl:
	case NR_FILE_SETATTR:
		return "setflags";
	default:
		return "xattr";
	}
}

/*
 * Records a refusal in the run's evidence: the object's path as the caller's view resolves it
 * (a second walk, only for a refusal; a descriptor's by its link), and as the caller named it.
 */
static void record_refusal(sup_call *c, const meta_call *call)
{
	pid_t tid = (pid_t)c->n->pid;
	char named[4096] = "", where[4096] = "";
	int fd = call->fd >= 0 ? call->fd : -1;
	if (fd < 0 && call->path && sup_peek_string(tid, call->path, named, sizeof(named)) < 0)
		named[0] = '\0';
	if (fd < 0 && !named[0])
		fd = call->dirfd; /* AT_EMPTY_PATH, utimensat(fd, NULL) */
	if (fd >= 0 || !named[0]) {
		char link[64];
		if (fd >= 0)
			(void)snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)tid, fd);
		else
			(void)snprintf(link, sizeof(link), "/proc/%d/cwd", (int)tid);
		ssize_t len = readlink(link, where, sizeof(where) - 1);
		where[len > 0 ? len : 0] = '\0';
		(void)snprintf(named, sizeof(named), "%s", where);
	} else {
		bool inside;
		_cleanup_close_ int obj =
			sup_resolve(c->sup, tid, call->dirfd, named, call->follow, &inside);
		if (obj < 0 || sup_fd_path(obj, where, sizeof(where)) < 0)
			(void)snprintf(where, sizeof(where), "%s", named);
	}
	sup_record(c->sup, 1, op_name(c->n->data.nr), EPERM, where, named, "outside");
}

/* --- below a runner: evidence of what its read-only mounts refuse --------------------------- */

static bool nsec_valid(long nsec)
{
	return (nsec >= 0 && nsec <= 999999999) || nsec == UTIME_NOW || nsec == UTIME_OMIT;
}

/*
 * Whether every check the kernel makes of call @n's arguments before the mount's (EROFS) is
 * known to pass: its flags, a new time's fields, an extended attribute's name, size and value,
 * an ioctl's value. The calls newest to the kernel (setxattrat, removexattrat, file_setattr)
 * and FS_IOC32_SETFLAGS (not a native request) are not looked at.
 */
static bool checks_pass(const metadata_state *m, const struct seccomp_notif *n)
{
	const __u64 *a = n->data.args;
	pid_t pid = (pid_t)n->pid;
	const uint64_t at_ok = AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH;
	switch (n->data.nr) {
	case NR_FCHMODAT2:
		return !(a[3] & ~at_ok);
	case SYS_fchownat:
		return !(a[4] & ~at_ok);
	case SYS_utimensat: {
		struct timespec ts[2];
		if ((a[3] & ~at_ok) || (a[1] == 0 && a[3]))
			return false;
		if (a[2] == 0)
			return true;
		return sup_peek(pid, a[2], ts, sizeof(ts)) == 0 && nsec_valid(ts[0].tv_nsec) &&
		       nsec_valid(ts[1].tv_nsec) &&
		       !(ts[0].tv_nsec == UTIME_OMIT && ts[1].tv_nsec == UTIME_OMIT);
	}
	case SYS_utimes:
	case SYS_futimesat: {
		struct timeval tv[2];
		uint64_t addr = n->data.nr == SYS_utimes ? a[1] : a[2];
		if (addr == 0)
			return true;
		return sup_peek(pid, addr, tv, sizeof(tv)) == 0 && tv[0].tv_usec >= 0 &&
		       tv[0].tv_usec < 1000000 && tv[1].tv_usec >= 0 && tv[1].tv_usec < 1000000;
	}
	case SYS_utime: {
		long u[2];
		return a[1] == 0 || sup_peek(pid, a[1], u, sizeof(u)) == 0;
	}
	case SYS_setxattr:
	case SYS_lsetxattr:
	case SYS_fsetxattr:
	case SYS_removexattr:
	case SYS_lremovexattr:
	case SYS_fremovexattr: {
		bool set = n->data.nr == SYS_setxattr || n->data.nr == SYS_lsetxattr ||
			   n->data.nr == SYS_fsetxattr;
		char name[256];
		if (sup_peek_string(pid, a[1], name, sizeof(name)) < 0 || !name[0])
			return false; /* ERANGE, EFAULT */
		if (!set)
			return true;
		if ((a[4] & ~(uint64_t)(XATTR_CREATE | XATTR_REPLACE)) || a[3] > XATTR_VALUE_MAX)
			return false;
		if (a[3] == 0)
			return true;
		void *value = malloc(a[3]);
		bool ok = value && sup_peek(pid, a[2], value, a[3]) == 0;
		free(value);
		return ok;
	}
	case SYS_ioctl: {
		struct fsxattr fsx;
		if (!m->ioctl_mount_first || (a[1] & 0xffffffffu) == 0x40046602u)
			return false;
		size_t size = (a[1] & 0xffffffffu) == FS_IOC_FSSETXATTR ? sizeof(fsx) : sizeof(int);
		return sup_peek(pid, a[2], &fsx, size) == 0;
	}
	case NR_SETXATTRAT:
	case NR_REMOVEXATTRAT:
	case NR_FILE_SETATTR:
		return false;
	default:
		return true; /* chmod, fchmod, fchmodat, the chowns: none before the mount's */
	}
}

/* Whether the caller's descriptor @fd is an O_PATH one (EBADF for the fd-based calls). */
static bool opath_fd(pid_t tid, int fd)
{
	char path[64], buf[512];
	(void)snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)tid, fd);
	_cleanup_close_ int info = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = info < 0 ? -1 : read(info, buf, sizeof(buf) - 1);
	if (len <= 0)
		return true; /* unsure: as if it were */
	buf[len] = '\0';
	const char *flags = strstr(buf, "\nflags:");
	if (!flags)
		return true;
	unsigned long v = strtoul(flags + 7, NULL, 8);
	return v & O_PATH;
}

/* Why the read-only mount at @path refuses, as the model is told; NULL: not the sandbox. */
static const char *readonly_why(const confine_plan *plan, bool inside, const char *path)
{
	for (char **p = plan->ro_paths; p && *p; p++)
		if (sup_beneath(path, *p))
			return "protected";
	for (size_t i = 0; i < plan->mounts.n; i++)
		if (plan->mounts.v[i].op == PROTECT_READ_ONLY &&
		    sup_beneath(path, plan->mounts.v[i].path))
			return "protected";
	for (char **p = plan->hidden_paths; p && *p; p++)
		if (sup_beneath(path, *p))
			return "hidden";
	for (size_t i = 0; i < plan->mounts.n; i++)
		if ((plan->mounts.v[i].op == PROTECT_HIDE_DIR ||
		     plan->mounts.v[i].op == PROTECT_HIDE_FILE) &&
		    sup_beneath(path, plan->mounts.v[i].path))
			return "hidden";
	return inside ? NULL : "outside";
}

/*
 * Below a runner: lets the call go on (the kernel makes it, with every check of the read-only
 * mounts), unless the object's mount is read-only and every earlier check of the kernel passes:
 * then the very refusal the kernel would make (EROFS) is answered here and recorded.
 */
static int observe(const metadata_state *m, sup_call *c, const meta_call *call,
		   struct seccomp_notif_resp *resp)
{
	pid_t tid = (pid_t)c->n->pid;
	resp->error = 0;
	resp->val = 0;
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	char named[4096] = "", where[4096];
	bool inside = false;
	int fd = call->fd;
	if (fd < 0 && call->path && sup_peek_string(tid, call->path, named, sizeof(named)) < 0)
		return SUP_ANSWERED;
	if (fd < 0 && !named[0] && (call->empty_path || call->null_path))
		fd = call->dirfd; /* the descriptor itself, O_PATH allowed */
	_cleanup_close_ int obj = -1;
	if (fd == AT_FDCWD) {
		obj = sup_resolve(c->sup, tid, AT_FDCWD, ".", true, &inside);
	} else if (fd >= 0) {
		char link[64];
		(void)snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)tid, fd);
		obj = open(link, O_PATH | O_CLOEXEC);
	} else if (named[0]) {
		obj = sup_resolve(c->sup, tid, call->dirfd, named, call->follow, &inside);
	}
	/* Most changes land on a writable mount: that first, the rest only for a refusal. */
	bool ro;
	if (obj < 0 || !sup_mount_readonly(obj, &ro) || !ro || !checks_pass(m, c->n) ||
	    (call->fd >= 0 && opath_fd(tid, call->fd)) ||
	    sup_fd_path(obj, where, sizeof(where)) < 0)
		return SUP_ANSWERED; /* (an O_PATH descriptor is EBADF) */
	if (fd >= 0) {
		int beneath = sup_open_fd(c->sup, tid, fd);
		inside = beneath >= 0;
		if (beneath >= 0)
			(void)close(beneath);
	}
	const char *why = readonly_why(m->observed, inside, where);
	/* What was read of /proc/TID was the caller's only if it still waits in this call. */
	if (!why || !sup_call_valid(c))
		return SUP_ANSWERED;
	sup_record(c->sup, 1, op_name(c->n->data.nr), EROFS, where, named[0] ? named : where, why);
	resp->flags = 0;
	resp->error = -EROFS;
	return SUP_REFUSED;
}

static int metadata_answer(void *state, sup_call *c, struct seccomp_notif_resp *resp)
{
	metadata_state *m = state;
	meta_call call;
	if (decode(c->n, &call) < 0)
		return SUP_PASS;
	if (m->observed)
		return observe(m, c, &call, resp);
	_cleanup_close_ int obj = open_object(c->sup, c->n, &call);
	/*
	 * What was read of /proc/TID above was the caller's: it is still the one blocked in this
	 * call, so its thread id was not reused meanwhile.
	 */
	if (!sup_call_valid(c))
		return SUP_ANSWERED;
	if (obj == SUP_OUTSIDE || (obj >= 0 && sup_is_fixed_root(c->sup, obj))) {
		/* Counted before the answer, which may end the caller and then the run. */
		atomic_fetch_add(&m->refused, 1);
		record_refusal(c, &call);
		return SUP_REFUSED;
	}
	resp->error = obj < 0 ? obj : perform(c->n, obj);
	return SUP_ANSWERED;
}

static int metadata_refusals(void *state, confine_refusals *io)
{
	metadata_state *m = state;
	io->metadata += atomic_load(&m->refused);
	return 0;
}

static void metadata_free(void *state)
{
	free(state);
}

static bool metadata_wanted(const confine_plan *plan)
{
	return plan_supervises(plan, SECCOMP_METADATA_NOTIFY);
}

static bool metadata_looks_only(const void *state)
{
	const metadata_state *m = state;
	return m->observed != NULL;
}

int metadata_handler_new(void **ret_state)
{
	metadata_state *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	*ret_state = m;
	return 0;
}

static int metadata_new(const confine_plan *plan, spawn_handoff *in, void **ret_state)
{
	(void)in;
	int r = metadata_handler_new(ret_state);
	/* Not the command's own filter's calls: a runner's listener's, to look at. */
	if (r >= 0 && !((plan->steps & STEP(STEP_FILTER)) &&
			(plan->filter_flags & SECCOMP_METADATA_NOTIFY))) {
		metadata_state *m = *ret_state;
		m->observed = plan;
		m->ioctl_mount_first = kernel_at_least(5, 13);
	}
	return r;
}

const sup_handler handler_metadata = {
	.name = "metadata",
	.calls = metadata_calls,
	.answer = metadata_answer,
	.looks_only = metadata_looks_only,
	.refusals = metadata_refusals,
	.free = metadata_free,
	.wanted = metadata_wanted,
	.new = metadata_new,
};
