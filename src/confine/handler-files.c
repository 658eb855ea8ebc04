/* SPDX-License-Identifier: MIT */
/*
 * Evidence of file refusals (docs/design/evidence.md): the filter hands the supervisor the
 * write-class file calls (SECCOMP_FILES_NOTIFY), and this handler tells which of them the kernel
 * is about to refuse because of the sandbox, so that a denial is known, not guessed from the
 * command's stderr.
 *
 * It enforces nothing. A call it lets through goes on with SECCOMP_USER_NOTIF_FLAG_CONTINUE,
 * which is safe only because another layer still governs every such call whatever we decided:
 * Landlock's rules (its domain is the caller's, checked by the kernel when the call goes on) and
 * the read-only mounts (the protected paths' binds). The kernel re-reads the call's arguments
 * then, so a caller that changes them after we looked gains nothing: the kernel's own checks
 * are made on what it reads. Where the kernel would surely refuse the call, the handler answers
 * that very refusal itself (EROFS for a read-only mount, EACCES for Landlock) and records it.
 * "Surely" means every check the kernel makes before ours is known to pass: the walk, the
 * object's existence (mkdir of an existing directory is EEXIST, which `mkdir -p` relies on), its
 * type (a device, a FIFO or a socket opens for writing on a read-only mount), and where the
 * permission bits come first, the caller's own access (checked as the caller, who holds no
 * capability). Whenever any of that is unsure the call goes on, unrecorded: a wrong errno would
 * change what the command sees, a missing record only what the model is told.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef SYS_faccessat2
#define SYS_faccessat2 439
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* What one notification asks, once decoded. */
typedef enum file_op {
	FOP_OPEN,
	FOP_MKDIR,
	FOP_MKNOD,
	FOP_UNLINK,
	FOP_RMDIR,
	FOP_RENAME,
	FOP_LINK,
	FOP_SYMLINK,
	FOP_TRUNCATE,
} file_op;

typedef struct file_call {
	file_op op;
	int dirfd;	   /* the caller's, for @path */
	uint64_t path;	   /* the caller's address of the path (the new name for symlink) */
	int dirfd2;	   /* rename, link: the new name's */
	uint64_t path2;	   /* rename, link: the new name; symlink: the target */
	uint64_t flags;	   /* open's flags, unlinkat's, renameat2's, linkat's */
	uint64_t mode;	   /* mknod's */
	int64_t length;	   /* truncate's */
	uint64_t how;	   /* openat2: the caller's address of its struct open_how ... */
	uint64_t how_size; /* ... and its size */
} file_call;

typedef struct files_state {
	files_rules rules;
	char **readonly; /* owned copies of rules.readonly and rules.hidden */
	char **hidden;
} files_state;

/* A refusal: what the kernel answers and what is recorded. */
typedef struct verdict {
	int err; /* the errno answered, 0: let through */
	const char *op;
	char path[4096];  /* resolved, in the caller's view */
	const char *why;  /* "outside", "protected" */
	bool second;	  /* @path is the call's second name (rename's, link's new one) */
	int read_err;	  /* a read of a hidden path: the errno it gets, -1 for none */
	char path2[4096]; /* rename: the new name too, when both were refused ("" if not) */
	const char *why2;
} verdict;

/* Decodes the native ABI's call of @n into @c; -ENOSYS for one that is not ours. */
static int decode(const struct seccomp_notif *n, file_call *c)
{
	const __u64 *a = n->data.args;
	*c = (file_call){.dirfd = AT_FDCWD, .dirfd2 = AT_FDCWD};
	switch (n->data.nr) {
#ifdef SYS_open
	case SYS_open:
		*c = (file_call){FOP_OPEN, AT_FDCWD, a[0], .flags = a[1]};
		return 0;
	case SYS_creat:
		*c = (file_call){FOP_OPEN, AT_FDCWD, a[0], .flags = O_CREAT | O_WRONLY | O_TRUNC};
		return 0;
	case SYS_mkdir:
		*c = (file_call){FOP_MKDIR, AT_FDCWD, a[0]};
		return 0;
	case SYS_mknod:
		*c = (file_call){FOP_MKNOD, AT_FDCWD, a[0], .mode = a[1]};
		return 0;
	case SYS_unlink:
		*c = (file_call){FOP_UNLINK, AT_FDCWD, a[0]};
		return 0;
	case SYS_rmdir:
		*c = (file_call){FOP_RMDIR, AT_FDCWD, a[0]};
		return 0;
	case SYS_rename:
		*c = (file_call){FOP_RENAME, AT_FDCWD, a[0], AT_FDCWD, a[1]};
		return 0;
	case SYS_link:
		*c = (file_call){FOP_LINK, AT_FDCWD, a[0], AT_FDCWD, a[1]};
		return 0;
	case SYS_symlink:
		*c = (file_call){FOP_SYMLINK, AT_FDCWD, a[1], AT_FDCWD, a[0]};
		return 0;
#endif
	case SYS_openat:
		*c = (file_call){FOP_OPEN, (int)a[0], a[1], .flags = a[2]};
		return 0;
	case SYS_openat2:
		*c = (file_call){FOP_OPEN, (int)a[0], a[1], .how = a[2], .how_size = a[3]};
		return 0;
	case SYS_mkdirat:
		*c = (file_call){FOP_MKDIR, (int)a[0], a[1]};
		return 0;
	case SYS_mknodat:
		*c = (file_call){FOP_MKNOD, (int)a[0], a[1], .mode = a[2]};
		return 0;
	case SYS_unlinkat:
		*c = (file_call){a[2] & AT_REMOVEDIR ? FOP_RMDIR : FOP_UNLINK, (int)a[0], a[1],
				 .flags = a[2]};
		return 0;
#ifdef SYS_renameat
	case SYS_renameat:
		*c = (file_call){FOP_RENAME, (int)a[0], a[1], (int)a[2], a[3]};
		return 0;
#endif
	case SYS_renameat2:
		*c = (file_call){FOP_RENAME, (int)a[0], a[1], (int)a[2], a[3], .flags = a[4]};
		return 0;
	case SYS_linkat:
		*c = (file_call){FOP_LINK, (int)a[0], a[1], (int)a[2], a[3], .flags = a[4]};
		return 0;
	case SYS_symlinkat:
		*c = (file_call){FOP_SYMLINK, (int)a[1], a[2], AT_FDCWD, a[0]};
		return 0;
	case SYS_truncate:
		*c = (file_call){FOP_TRUNCATE, AT_FDCWD, a[0], .length = (int64_t)a[1]};
		return 0;
	default:
		return -ENOSYS;
	}
}

/* --- what the kernel would answer ------------------------------------------------------------ */

static bool beneath_any(char *const *dirs, const char *path)
{
	for (char *const *p = dirs; p && *p; p++)
		if (sup_beneath(path, *p))
			return true;
	return false;
}

static bool is_protected(const files_state *f, const char *path)
{
	return beneath_any(f->readonly, path);
}

/* Whether the absolute @path has no "." or ".." name: its text is where it leads (symlinks
 * aside). */
static bool plain_spelling(const char *path)
{
	for (const char *p = path; (p = strchr(p, '/')) != NULL; p++)
		if (p[1] == '.' &&
		    (p[2] == '/' || !p[2] || (p[2] == '.' && (p[3] == '/' || !p[3]))))
			return false;
	return true;
}

/*
 * A read-only mount's refusal (EROFS) at @path, as the model is told of it: on a protected
 * path's bind, or outside the roots; a read-only mount of the host's own inside the roots is
 * no refusal of the sandbox's (0: let through, unrecorded).
 */
static int readonly_refusal(const files_state *f, bool inside, const char *path, const char **why)
{
	if (is_protected(f, path))
		*why = "protected";
	else if (beneath_any(f->hidden, path))
		*why = "hidden"; /* its stand-in is read-only: a write there is refused too */
	else if (!inside)
		*why = "outside";
	else
		return 0;
	return EROFS;
}

/*
 * Whether the caller's credentials are ours with no capability, so that an access check we
 * make (as ourselves, our effective capabilities cleared) is the one the kernel makes for it.
 */
/*
 * The number of a /proc/PID/status line after @skip others on it (its fields are separated by
 * blanks), in @base, from @line (just past the field's name). -EINVAL when there is none.
 */
static int status_number(const char *line, int skip, int base, unsigned long long *ret)
{
	const char *p = line;
	char *end;
	for (int i = 0; i <= skip; i++) {
		errno = 0;
		unsigned long long v = strtoull(p, &end, base);
		if (end == p || errno || (*end != '\t' && *end != ' ' && *end != '\n'))
			return -EINVAL;
		*ret = v;
		p = end;
	}
	return 0;
}

static bool caller_is_us(pid_t tid)
{
	char path[64], buf[2048];
	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t len = read(fd, buf, sizeof(buf) - 1);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	const char *uid = strstr(buf, "\nUid:"), *gid = strstr(buf, "\nGid:");
	const char *caps = strstr(buf, "\nCapEff:");
	if (!uid || !gid || !caps)
		return false;
	unsigned long long fsuid, fsgid, eff;
	if (status_number(uid + 5, 3, 10, &fsuid) < 0 || fsuid != geteuid() ||
	    status_number(gid + 5, 3, 10, &fsgid) < 0 || fsgid != getegid() ||
	    status_number(caps + 8, 0, 16, &eff) < 0 || eff != 0)
		return false;
	/* The supplementary groups: the same list, in the kernel's (sorted) order. */
	const char *groups = strstr(buf, "\nGroups:");
	gid_t ours[64];
	int n = getgroups(64, ours);
	if (!groups || n < 0)
		return false;
	groups += 8;
	for (int i = 0; i < n; i++) {
		char *end;
		unsigned long g = strtoul(groups, &end, 10);
		if (end == groups)
			return false;
		bool found = false;
		for (int k = 0; k < n; k++)
			found = found || ours[k] == (gid_t)g;
		if (!found)
			return false;
		groups = end;
	}
	while (*groups == ' ' || *groups == '\t')
		groups++;
	return *groups == '\n' || *groups == '\0';
}

static int op_access(int obj, const void *arg)
{
	int mode = *(const int *)arg;
	return syscall(SYS_faccessat2, obj, "", mode, AT_EACCESS | AT_EMPTY_PATH) < 0 ? -errno : 0;
}

/* The caller's access @mode (R_OK, W_OK) to @obj as the kernel checks it: 0, -EACCES, -EROFS. */
static int access_as_caller(int obj, int mode)
{
	return sup_as_caller(op_access, obj, &mode);
}

/* A regular file with no inode flag that refuses first (append-only, immutable: EPERM). */
static bool plain_file(int obj)
{
	struct statx stx;
	if (statx(obj, "", AT_EMPTY_PATH, STATX_TYPE, &stx) < 0 || !S_ISREG(stx.stx_mode))
		return false;
	return !(stx.stx_attributes & (STATX_ATTR_APPEND | STATX_ATTR_IMMUTABLE));
}

static bool mount_id(int obj, uint64_t *ret)
{
	struct statx stx;
	if (statx(obj, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
		return false;
	*ret = stx.stx_mnt_id;
	return true;
}

/* A name's parent resolved (followed) in the caller's view, with where the name would be. */
typedef struct place {
	int dir; /* O_PATH, or -1 */
	bool inside;
	bool exists; /* the name is there (any type, a symlink not followed) */
	mode_t type;
	char last[256];	 /* the name (NAME_MAX) */
	char path[4096]; /* place_path(): the parent's path, resolved, then the name */
} place;

static void place_done(place *p)
{
	if (p->dir >= 0)
		(void)close(p->dir);
	p->dir = -1;
}

/*
 * Finds where @named (for the caller @tid, relative to its @dirfd) would be made or removed:
 * its parent walked (symlinks followed, as the kernel walks all but the last name), the last
 * name looked up there without following. 0, or -1 when unsure (the walk fails: the kernel
 * answers its own error; an odd last name).
 */
static int find_place(const supervisor *s, pid_t tid, int dirfd, const char *named, bool slash_ok,
		      place *ret)
{
	char buf[4096];
	size_t len = strlen(named);
	*ret = (place){.dir = -1};
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, named, len + 1);
	bool slash = false;
	while (len > 1 && buf[len - 1] == '/') {
		buf[--len] = '\0';
		slash = true;
	}
	if ((slash && !slash_ok) || strcmp(buf, "/") == 0)
		return -1;
	char *cut = strrchr(buf, '/');
	const char *last = cut ? cut + 1 : buf;
	const char *parent = ".";
	if (cut) {
		*cut = '\0';
		parent = cut == buf ? "/" : buf;
	}
	if (!*last || strcmp(last, ".") == 0 || strcmp(last, "..") == 0 || strlen(last) > 255)
		return -1;
	memcpy(ret->last, last, strlen(last) + 1); /* 255 at most, checked above */
	ret->dir = sup_resolve(s, tid, dirfd, parent, true, &ret->inside);
	if (ret->dir < 0)
		return -1;
	struct stat st;
	if (fstatat(ret->dir, last, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		ret->exists = true;
		ret->type = st.st_mode & S_IFMT;
	} else if (errno != ENOENT) {
		place_done(ret);
		return -1;
	}
	return 0;
}

/* Fills p->path, for a record (only then: it costs a readlink); 0, or -1 without one. */
static int place_path(place *p)
{
	char dir[4096];
	if (sup_fd_path(p->dir, dir, sizeof(dir)) < 0 || strstr(dir, " (deleted)"))
		return -1;
	size_t n = (size_t)snprintf(p->path, sizeof(p->path), "%s/%s", strcmp(dir, "/") ? dir : "",
				    p->last);
	return n < sizeof(p->path) ? 0 : -1;
}

/*
 * Making a name at @p (mkdir, mknod, symlink, O_CREAT of a missing file): the kernel answers
 * EEXIST and the walk's errors first, then a read-only mount (EROFS), then Landlock (EACCES,
 * outside the roots), all before the permission bits of the directory.
 */
static int make_refusal(const files_state *f, place *p, verdict *v)
{
	bool ro;
	if (p->exists || !sup_mount_readonly(p->dir, &ro) || (p->inside && !ro) ||
	    (!ro && f->rules.abi < 1) || place_path(p) < 0)
		return 0;
	(void)snprintf(v->path, sizeof(v->path), "%s", p->path);
	if (ro)
		return readonly_refusal(f, p->inside, p->path, &v->why);
	v->why = "outside";
	return EACCES;
}

/*
 * Removing the name at @p (unlink, rmdir): a read-only mount refuses before the name is looked
 * up (EROFS even for a missing one); then a missing name is ENOENT; then Landlock (EACCES).
 */
static int remove_refusal(const files_state *f, place *p, verdict *v)
{
	bool ro;
	if (!sup_mount_readonly(p->dir, &ro) ||
	    (!ro && (!p->exists || p->inside || f->rules.abi < 1)) || place_path(p) < 0)
		return 0;
	(void)snprintf(v->path, sizeof(v->path), "%s", p->path);
	if (ro)
		return readonly_refusal(f, p->inside, p->path, &v->why);
	v->why = "outside";
	return EACCES;
}

/*
 * Writing to the existing object @obj (open for writing, O_TRUNC, truncate()) at @path: a
 * regular file only (a device, a FIFO, a socket opens for writing on a read-only mount; a
 * directory is EISDIR). Truncation checks the mount before the permission bits; an open for
 * writing checks the bits first, then the mount, then Landlock; truncate() the mount, the bits,
 * then Landlock. @mask: the access the call asks (R_OK, W_OK).
 */
static int write_refusal(const files_state *f, pid_t tid, int obj, bool inside, int mask,
			 bool mount_first, bool truncate_only, verdict *v)
{
	bool ro;
	/* The common case first, in one call: a file beneath a root on a writable mount. */
	if (!sup_mount_readonly(obj, &ro) || (inside && !ro) || (!ro && f->rules.abi < 1) ||
	    !plain_file(obj) || sup_fd_path(obj, v->path, sizeof(v->path)) < 0)
		return 0;
	if (ro && mount_first)
		return readonly_refusal(f, inside, v->path, &v->why);
	/* The permission bits come first: only a caller whose check is ours can be answered. */
	if (!caller_is_us(tid))
		return 0;
	int r = access_as_caller(obj, mask);
	if (ro)
		return r == -EROFS ? readonly_refusal(f, inside, v->path, &v->why) : 0;
	if (r < 0 || (truncate_only && f->rules.abi < 3))
		return 0;
	v->why = "outside";
	return EACCES;
}

/*
 * Whether the walk to @named stopped in a hidden directory (mode 000: EACCES for everyone
 * without a capability): its text says where it was going, into @v->path.
 */
static bool hidden_walk(const files_state *f, pid_t tid, int dirfd, const char *named, int walk,
			verdict *v)
{
	return f->hidden && walk == -EACCES &&
	       sup_absolute(tid, dirfd, named, v->path, sizeof(v->path)) == 0 &&
	       plain_spelling(v->path) && beneath_any(f->hidden, v->path) && caller_is_us(tid);
}

/* A device opens on no mount that has nodev (a runner's stand-in for a hidden file). */
static bool nodev_device(int obj)
{
	struct stat st;
	struct statvfs v;
	return fstat(obj, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) &&
	       fstatvfs(obj, &v) == 0 && (v.f_flag & ST_NODEV);
}

/*
 * A read (an open with no intent to write) of a hidden path (FILES_READ_NOTIFY): never refused
 * here, the hiding mounts answer it (a hidden directory is an empty tmpfs of mode 000: EACCES
 * for it and for anything beneath it; a hidden file is /dev/null: it opens, and reads empty).
 * Recorded when that is sure: true with the errno the caller gets in @ret_err (0: it opens)
 * and the hidden path read in @v->path.
 */
static bool hidden_read(const files_state *f, const supervisor *s, pid_t tid, const file_call *c,
			uint64_t flags, const char *named, verdict *v, int *ret_err)
{
	if (!f->hidden || (flags & O_PATH))
		return false;
	bool inside;
	_cleanup_close_ int obj =
		sup_resolve(s, tid, c->dirfd, named, !(flags & O_NOFOLLOW), &inside);
	v->op = "read";
	v->why = "hidden";
	if (obj >= 0) {
		if (sup_fd_path(obj, v->path, sizeof(v->path)) < 0 ||
		    !beneath_any(f->hidden, v->path) || !caller_is_us(tid))
			return false;
		*ret_err = -access_as_caller(obj, R_OK);
		if (*ret_err == 0 && nodev_device(obj))
			*ret_err = EACCES;
		return *ret_err == 0 || *ret_err == EACCES;
	}
	if (!hidden_walk(f, tid, c->dirfd, named, obj, v))
		return false;
	*ret_err = EACCES;
	return true;
}

/* open, openat, creat, openat2 with an intent to write, create or truncate. */
static int open_refusal(const files_state *f, const supervisor *s, pid_t tid, const file_call *c,
			const char *named, verdict *v)
{
	uint64_t flags = c->flags;
	if (c->how) {
		/* openat2: its flags from memory; resolve flags change the walk: not ours. */
		struct open_how how;
		if (c->how_size != sizeof(how) || sup_peek(tid, c->how, &how, sizeof(how)) < 0 ||
		    how.resolve || (how.mode && !(how.flags & O_CREAT)) || (how.flags >> 32))
			return 0;
		flags = how.flags;
	}
	int acc = (int)(flags & O_ACCMODE);
	bool creat = flags & O_CREAT, trunc = flags & O_TRUNC;
	if (acc == O_RDONLY && !creat && !trunc) {
		int err;
		if (hidden_read(f, s, tid, c, flags, named, v, &err))
			v->read_err = err; /* recorded, let through */
		return 0;
	}
	/* (O_TMPFILE carries O_DIRECTORY: it is let through with it.) */
	if (acc == O_ACCMODE || (flags & (O_PATH | O_DIRECTORY | O_NOATIME)))
		return 0;
	if (creat) {
		/* A new name is made in its directory: one walk, to the directory. */
		place p;
		if (find_place(s, tid, c->dirfd, named, false, &p) < 0)
			return 0;
		int err = p.exists ? 0 : make_refusal(f, &p, v);
		place_done(&p);
		v->op = "create";
		if (err || !p.exists || (flags & O_EXCL))
			return err; /* made (or refused), or EEXIST */
	}
	bool inside;
	_cleanup_close_ int obj =
		sup_resolve(s, tid, c->dirfd, named, !(flags & O_NOFOLLOW), &inside);
	if (obj < 0)
		return 0; /* the kernel's own error, or a dangling symlink: unsure */
	/* Opened to write, it is a write, emptied first or not (the shell's `>`). */
	v->op = trunc && acc == O_RDONLY ? "truncate" : "write";
	int mask = (acc != O_WRONLY ? R_OK : 0) | W_OK;
	return write_refusal(f, tid, obj, inside, mask, trunc, acc == O_RDONLY, v);
}

static int mknod_refusal(const files_state *f, const supervisor *s, pid_t tid, const file_call *c,
			 const char *named, verdict *v)
{
	mode_t type = (mode_t)c->mode & S_IFMT;
	if (type != 0 && type != S_IFREG && type != S_IFCHR && type != S_IFBLK && type != S_IFIFO &&
	    type != S_IFSOCK)
		return 0; /* EINVAL, EPERM */
	place p;
	if (find_place(s, tid, c->dirfd, named, false, &p) < 0)
		return 0;
	int err = make_refusal(f, &p, v);
	place_done(&p);
	v->op = "create";
	return err;
}

/* rename: both sides must be known; the refused side is recorded, both if both are. */
static int rename_refusal(const files_state *f, const supervisor *s, pid_t tid, const file_call *c,
			  const char *from, const char *to, verdict *v)
{
	v->op = "rename";
	if (c->flags & ~(uint64_t)RENAME_NOREPLACE)
		return 0;
	place a, b;
	if (find_place(s, tid, c->dirfd, from, false, &a) < 0)
		return 0;
	int err = 0;
	uint64_t ma, mb;
	bool ro;
	if (find_place(s, tid, c->dirfd2, to, false, &b) < 0 || place_path(&a) < 0 ||
	    place_path(&b) < 0) {
		place_done(&a);
		place_done(&b);
		return 0;
	}
	/* Another mount is EXDEV; a name inside the other (a directory into itself) EINVAL or
	 * ENOTEMPTY: all before the sandbox's checks. */
	if (!mount_id(a.dir, &ma) || !mount_id(b.dir, &mb) || ma != mb ||
	    sup_beneath(a.path, b.path) || sup_beneath(b.path, a.path) ||
	    !sup_mount_readonly(a.dir, &ro))
		goto out;
	if (ro) {
		const char *wa = NULL, *wb = NULL;
		bool ra = readonly_refusal(f, a.inside, a.path, &wa) != 0;
		bool rb = readonly_refusal(f, b.inside, b.path, &wb) != 0;
		if (!ra && !rb)
			goto out;
		(void)snprintf(v->path, sizeof(v->path), "%s", ra ? a.path : b.path);
		v->why = ra ? wa : wb;
		v->second = !ra;
		if (ra && rb) {
			(void)snprintf(v->path2, sizeof(v->path2), "%s", b.path);
			v->why2 = wb;
		}
		err = EROFS;
		goto out;
	}
	/* Landlock's checks come after the mount's: REFER (ABI 2) or EXDEV for every move. */
	if (f->rules.abi < 2 || !a.exists || ((c->flags & RENAME_NOREPLACE) && b.exists) ||
	    (a.inside && b.inside))
		goto out; /* ENOENT, EEXIST, or Landlock's to decide (EXDEV for REFER) */
	(void)snprintf(v->path, sizeof(v->path), "%s", !a.inside ? a.path : b.path);
	v->why = "outside";
	v->second = a.inside;
	if (!a.inside && !b.inside) {
		(void)snprintf(v->path2, sizeof(v->path2), "%s", b.path);
		v->why2 = "outside";
	}
	err = EACCES;
out:
	place_done(&a);
	place_done(&b);
	return err;
}

/* link: the new name decides (Landlock refuses making it outside), the old one must exist,
 * be on the same mount and be the caller's (protected_hardlinks refuses others first). */
static int link_refusal(const files_state *f, const supervisor *s, pid_t tid, const file_call *c,
			const char *from, const char *to, verdict *v)
{
	v->op = "link";
	if (c->flags & ~(uint64_t)AT_SYMLINK_FOLLOW)
		return 0;
	bool old_inside;
	_cleanup_close_ int old =
		sup_resolve(s, tid, c->dirfd, from, c->flags & AT_SYMLINK_FOLLOW, &old_inside);
	place p;
	if (old < 0 || find_place(s, tid, c->dirfd2, to, false, &p) < 0)
		return 0;
	int err = 0;
	bool ro;
	struct stat st;
	uint64_t mo, mp;
	if (p.exists || !sup_mount_readonly(p.dir, &ro) || place_path(&p) < 0)
		goto out;
	(void)snprintf(v->path, sizeof(v->path), "%s", p.path);
	v->second = true;
	if (ro) {
		err = readonly_refusal(f, p.inside, p.path, &v->why);
		goto out;
	}
	if (p.inside || f->rules.abi < 2 || !mount_id(old, &mo) || !mount_id(p.dir, &mp) ||
	    mo != mp || fstat(old, &st) < 0 || st.st_uid != geteuid() || !caller_is_us(tid))
		goto out;
	v->why = "outside";
	err = EACCES;
out:
	place_done(&p);
	return err;
}

/* The kernel's refusal of @c that the sandbox causes, in @v, or 0 for any other outcome. */
static int refusal(const files_state *f, const supervisor *s, pid_t tid, const file_call *c,
		   const char *named, const char *named2, verdict *v)
{
	place p;
	int err = 0;
	switch (c->op) {
	case FOP_OPEN:
		return open_refusal(f, s, tid, c, named, v);
	case FOP_MKDIR:
	case FOP_SYMLINK:
		v->op = c->op == FOP_MKDIR ? "mkdir" : "symlink";
		if (c->op == FOP_SYMLINK && !named2[0])
			return 0; /* ENOENT */
		if (find_place(s, tid, c->dirfd, named, c->op == FOP_MKDIR, &p) < 0)
			return 0;
		err = make_refusal(f, &p, v);
		place_done(&p);
		return err;
	case FOP_MKNOD:
		return mknod_refusal(f, s, tid, c, named, v);
	case FOP_UNLINK:
	case FOP_RMDIR:
		v->op = c->op == FOP_UNLINK ? "remove" : "rmdir";
		if (c->flags & ~(uint64_t)AT_REMOVEDIR)
			return 0; /* EINVAL */
		if (find_place(s, tid, c->dirfd, named, c->op == FOP_RMDIR, &p) < 0)
			return 0;
		err = remove_refusal(f, &p, v);
		place_done(&p);
		return err;
	case FOP_RENAME:
		return rename_refusal(f, s, tid, c, named, named2, v);
	case FOP_LINK:
		return link_refusal(f, s, tid, c, named, named2, v);
	case FOP_TRUNCATE: {
		v->op = "truncate";
		if (c->length < 0)
			return 0;
		bool inside;
		_cleanup_close_ int obj = sup_resolve(s, tid, c->dirfd, named, true, &inside);
		if (obj < 0)
			return 0;
		return write_refusal(f, tid, obj, inside, W_OK, true, true, v);
	}
	}
	return 0;
}

/* --- the handler ------------------------------------------------------------------------------
 */

static const int files_calls[] = {
#ifdef SYS_open
	SYS_open,      SYS_creat,   SYS_mkdir,	   SYS_mknod,	 SYS_unlink,
	SYS_rmdir,     SYS_rename,  SYS_link,	   SYS_symlink,
#endif
#ifdef SYS_renameat
	SYS_renameat,
#endif
	SYS_openat,    SYS_openat2, SYS_mkdirat,   SYS_mknodat,	 SYS_unlinkat,
	SYS_renameat2, SYS_linkat,  SYS_symlinkat, SYS_truncate, -1,
};

/* The name of operation @c for the record, when no refusal named it. */
static const char *op_of(const file_call *c)
{
	static const char *const names[] = {
		[FOP_OPEN] = "write",	 [FOP_MKDIR] = "mkdir",	    [FOP_MKNOD] = "create",
		[FOP_UNLINK] = "remove", [FOP_RMDIR] = "rmdir",	    [FOP_RENAME] = "rename",
		[FOP_LINK] = "link",	 [FOP_SYMLINK] = "symlink", [FOP_TRUNCATE] = "truncate",
	};
	return c->op == FOP_OPEN && (c->flags & O_CREAT) ? "create" : names[c->op];
}

/*
 * A change the kernel refuses (EACCES) because its walk goes into a hidden directory: recorded
 * as a read of a hidden path is (in @v, its errno in read_err), and let through.
 */
static void hidden_write(const files_state *f, const supervisor *s, pid_t tid, const file_call *c,
			 const char *named, const char *named2, verdict *v)
{
	bool second = c->op == FOP_RENAME || c->op == FOP_LINK;
	/* A read is hidden_read()'s (and openat2's flags were not read here: not known). */
	if (c->op == FOP_OPEN && (c->flags & O_ACCMODE) == O_RDONLY &&
	    !(c->flags & (O_CREAT | O_TRUNC)))
		return;
	for (int i = 0; i < (second ? 2 : 1); i++) {
		int dirfd = i ? c->dirfd2 : c->dirfd;
		const char *name = i ? named2 : named;
		/* Its spelling first: most changes are nowhere near a hidden path. */
		if (sup_absolute(tid, dirfd, name, v->path, sizeof(v->path)) < 0 ||
		    !beneath_any(f->hidden, v->path))
			continue;
		bool inside;
		int walk = sup_resolve(s, tid, dirfd, name, false, &inside);
		if (walk >= 0)
			(void)close(walk);
		else if (hidden_walk(f, tid, dirfd, name, walk, v)) {
			v->op = op_of(c);
			v->why = "hidden";
			v->read_err = EACCES;
			return;
		}
	}
}

/* Lets the call go on: the kernel makes it, with every check of Landlock and the mounts. */
static void let_through(struct seccomp_notif_resp *resp)
{
	resp->error = 0;
	resp->val = 0;
	resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
}

static int files_answer(void *state, sup_call *c, struct seccomp_notif_resp *resp)
{
	files_state *f = state;
	file_call call;
	if (decode(c->n, &call) < 0)
		return SUP_PASS;
	let_through(resp);
	pid_t tid = (pid_t)c->n->pid;
	char named[4096], named2[4096] = "";
	if (sup_peek_string(tid, call.path, named, sizeof(named)) < 0 ||
	    (call.path2 && sup_peek_string(tid, call.path2, named2, sizeof(named2)) < 0))
		return SUP_ANSWERED;
	verdict v = {.read_err = -1};
	int err = refusal(f, c->sup, tid, &call, named, named2, &v);
	if (err == 0 && v.read_err < 0 && f->hidden)
		hidden_write(f, c->sup, tid, &call, named, named2, &v);
	if (v.read_err >= 0) {
		/* A read of a hidden path: the mount answers it; recorded, let through. */
		if (sup_call_valid(c))
			sup_record(c->sup, 1, v.op, v.read_err, v.path, named, v.why);
		return SUP_ANSWERED;
	}
	/* What was read of /proc/TID was the caller's only if it still waits in this call. */
	if (err == 0 || !sup_call_valid(c))
		return SUP_ANSWERED;
	/* Recorded before the answer, which may end the caller and then the run: one call,
	 * though both of rename's names may be named. */
	sup_record(c->sup, 1, v.op, err, v.path, v.second ? named2 : named, v.why);
	if (v.path2[0])
		sup_record(c->sup, 0, v.op, err, v.path2, named2, v.why2);
	resp->flags = 0;
	resp->error = -err;
	return SUP_REFUSED;
}

static int files_refusals(void *state, confine_refusals *io)
{
	files_state *f = state;
	if (f->rules.complete)
		io->evidence = 1;
	return 0;
}

static void files_free(void *state)
{
	files_state *f = state;
	if (f) {
		strv_free(f->readonly);
		strv_free(f->hidden);
	}
	free(f);
}

static bool files_wanted(const confine_plan *plan)
{
	return plan_supervises(plan, SECCOMP_FILES_NOTIFY);
}

static bool files_looks_only(const void *state)
{
	(void)state;
	return true;
}

int files_handler_new(const files_rules *rules, void **ret_state)
{
	files_state *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->rules = *rules;
	if ((rules->readonly && !(f->readonly = strv_copy(rules->readonly))) ||
	    (rules->hidden && !(f->hidden = strv_copy(rules->hidden)))) {
		files_free(f);
		return -ENOMEM;
	}
	f->rules.readonly = f->readonly;
	f->rules.hidden = f->hidden;
	*ret_state = f;
	return 0;
}

/* @v's paths, then those of @plan's mounts of @op or @op2, onto @io. -ENOMEM. */
static int paths_of(const confine_plan *plan, char *const *v, protect_op op, protect_op op2,
		    char ***io)
{
	for (size_t i = 0; v && v[i]; i++)
		if (strv_push(io, v[i]) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < plan->mounts.n; i++)
		if ((plan->mounts.v[i].op == op || plan->mounts.v[i].op == op2) &&
		    strv_push(io, plan->mounts.v[i].path) < 0)
			return -ENOMEM;
	return 0;
}

static int files_new(const confine_plan *plan, spawn_handoff *in, void **ret_state)
{
	_cleanup_strv_free_ char **readonly = NULL, **hidden = NULL;
	if (paths_of(plan, plan->ro_paths, PROTECT_READ_ONLY, PROTECT_READ_ONLY, &readonly) < 0 ||
	    paths_of(plan, plan->hidden_paths, PROTECT_HIDE_DIR, PROTECT_HIDE_FILE, &hidden) < 0)
		return -ENOMEM;
	/* Without a Landlock domain of ours (below a runner) its read-only mounts alone refuse. */
	int abi = 0;
	if (plan->steps & STEP(STEP_LANDLOCK)) {
		abi = landlock_abi();
		if (abi > 0 && plan->landlock.abi_max > 0 && abi > plan->landlock.abi_max)
			abi = plan->landlock.abi_max;
	}
	files_rules rules = {
		.complete = in->achieved & HARDEN_FILES_SUPERVISED, /* and we hold its listener */
		.abi = abi,
		.readonly = readonly,
		.hidden = hidden,
	};
	return files_handler_new(&rules, ret_state);
}

const sup_handler handler_files = {
	.name = "files",
	.calls = files_calls,
	.answer = files_answer,
	.looks_only = files_looks_only,
	.refusals = files_refusals,
	.free = files_free,
	.wanted = files_wanted,
	.new = files_new,
};
