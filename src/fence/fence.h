/* SPDX-License-Identifier: MIT */
/*
 * Internals of the fence piece. The check (resolve.c, fence.c) turns a model-controlled path into
 * a fence_grant: the freshly resolved target, the directory the mutation is anchored at (the
 * writable root that allowed it, or the ancestor that has that root's identity) and the target's
 * path below it. The mutation (beneath.c) then reaches the target only through a descriptor of
 * that anchor, one component at a time with openat2(), so what the kernel touches is what the
 * check approved. text.c holds the pure text rules (UTF-8, line endings, the literal edit).
 */
#ifndef DSB_FENCE_FENCE_H
#define DSB_FENCE_FENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dsb/fence.h>

#include "../core/core.h"

/* The RESOLVE_* flags of core's openat2 shim, under the names the fence reads. */
#define FENCE_RESOLVE_NO_MAGICLINKS OPENAT2_RESOLVE_NO_MAGICLINKS
#define FENCE_RESOLVE_NO_SYMLINKS   OPENAT2_RESOLVE_NO_SYMLINKS
#define FENCE_RESOLVE_BENEATH	    OPENAT2_RESOLVE_BENEATH

/* The largest file the fence reads, writes or makes by an edit. DSH has no limit here. */
#define FENCE_MAX_BYTES DSB_FS_MAX_BYTES

/* DSH's read looks for a NUL only in the first 8 KiB (fsio.ts BINARY_SAMPLE_BYTES). */
#define FENCE_BINARY_SAMPLE 8192

/* --- resolve.c ----------------------------------------------------------------------------- */

/* How a path was found under a root (dsh-compat §7.3). */
typedef struct fence_match {
	size_t base_len;  /* the path's first base_len bytes name the matching directory */
	bool by_identity; /* matched by (st_dev, st_ino), not by spelling */
	dev_t dev;	  /* the root's identity, when by_identity */
	ino_t ino;
} fence_match;

/* dsb_fs_is_under() that also says where it matched. 1, 0 or -code. Borrows both paths. */
int fence_match_root(const char *path, const char *root, fence_match *ret, dsb_error *reterr);

/* --- fence.c ------------------------------------------------------------------------------- */

/* What one mutation may touch, and how to describe a refusal. Caller-owned. */
typedef struct fence_grant {
	dsb_fs_target target; /* resolved now; the mutation goes to target.target_key */
	dsb_mode mode;	      /* for the denial text */
	char *anchor;	      /* the directory the mutation is confined beneath ("/" unfenced) */
	size_t rel;	      /* offset into target.target_key of the path below the anchor */
	bool by_identity;     /* the anchor must have this identity once opened */
	dev_t dev;
	ino_t ino;
	uint64_t resolve; /* RESOLVE_* for every step below the anchor; 0 when unfenced */
} fence_grant;

/*
 * checkedTarget (dsh-compat §7.2) under @policy's mode and protected paths, but against explicit
 * @roots (NULL-terminated, canonical) instead of its writable roots: resolve @path against @cwd,
 * then deny or fill *@ret. A target under a root that lies in a protected path is denied too.
 * The tests use it to reach the identity (alias root) branch, which
 * dsb_policy_writable_roots() never produces by spelling.
 */
int fence_grant_check_roots(const dsb_exec_policy *policy, char *const *roots, const char *cwd,
			    const char *path, fence_grant *ret, dsb_error *reterr);

/* fence_grant_check_roots() with dsb_policy_writable_roots(@policy). */
int fence_grant_check(const dsb_exec_policy *policy, const char *cwd, const char *path,
		      fence_grant *ret, dsb_error *reterr);

void fence_grant_done(fence_grant *g);

/* The mutation half of dsb_fence_write(), for an already checked @g. */
int fence_write_granted(const fence_grant *g, const char *content, size_t len,
			dsb_fs_write_result *ret, dsb_error *reterr);

/* --- beneath.c ----------------------------------------------------------------------------- */

/* openat2_raw() of core, where a seccomp EPERM that hides the call reads -ENOSYS. -errno. */
int fence_openat2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve);

/*
 * Names what failed in a refusal: "write" or "edit", and the grant. A mutation made under DSH's
 * read-before-write observation rule (fence_expect) also sets @observed, whose stale version
 * reads as DSH's observation policy words it, @noreplace, for a file that must not exist when it
 * is published, and @published, which receives the identity of what was published.
 */
typedef struct fence_op {
	const char *verb;
	const fence_grant *grant;
	bool observed;
	bool noreplace;
	struct stat *published;
} fence_op;

/*
 * Maps a kernel errno met during the mutation to the fence's codes and texts: ENOSYS to
 * FENCE_UNAVAILABLE, EXDEV/ELOOP/EAGAIN under a fenced grant to FS_SANDBOX_DENIED (the check's
 * text), EACCES/EPERM to FS_PERMISSION_DENIED, ENOENT and ENOTDIR to FS_NOT_FOUND, others to
 * FS_IO_ERROR. Returns -code.
 */
int fence_fail_errno(const fence_op *op, int err, dsb_error *reterr);

/*
 * FS_SANDBOX_DENIED with DSH's text, `cannot VERB "DISPLAY": file access denied under MODE mode`,
 * and, when @protected names the path that refused, the line `[sandbox: PATH is protected:
 * REASON]` after it. @err becomes sys_errno. Returns -code.
 */
int fence_fail_refused(const char *verb, const char *display, dsb_mode mode,
		       const dsb_protected *protected, int err, dsb_error *reterr);

/* The check's FS_SANDBOX_DENIED text for @display under @mode (a "write", for edits too). */
int fence_fail_denied(const char *display, dsb_mode mode, int err, dsb_error *reterr);

/*
 * Opens the directory that holds the target (its parent), starting from the anchor and never
 * leaving it; creates missing directories when @create. On success *@ret_dirfd is an O_PATH
 * descriptor and @name (NAME_MAX + 1 bytes) the final component. Writing the anchor itself is
 * FS_NOT_REGULAR_FILE.
 */
int fence_open_parent(const fence_op *op, bool create, int *ret_dirfd, char *name,
		      dsb_error *reterr);

/*
 * Reads the regular file @name beneath @dirfd into a new buffer of at most FENCE_MAX_BYTES
 * (NUL-terminated). With @nofollow a final symlink is -ENOENT, never followed. -errno; -EFBIG
 * past the limit (*@ret_size the size seen), -EOVERFLOW when it grew past it while read;
 * -EISDIR for anything not regular.
 */
int fence_read_at(int dirfd, const char *name, uint64_t resolve, bool nofollow, char **ret_buf,
		  size_t *ret_len, struct stat *ret_st, uint64_t *ret_size);

/*
 * Reads the regular file open at @fd (from offset 0, with pread) as fence_read_at() reads it,
 * with the same limits and results.
 */
int fence_read_fd(int fd, char **ret_buf, size_t *ret_len, struct stat *ret_st, uint64_t *ret_size);

/* The version of a target a read-modify-write holds: an open, flock()ed descriptor. */
typedef struct fence_lock {
	int fd; /* -1: there was no regular file to lock (absent, or a symlink not followed) */
	struct stat st;
} fence_lock;

#define FENCE_LOCK_INIT ((fence_lock){.fd = -1})

/*
 * Every replacement of an existing file is serialised on the file: the target @name in @dirfd
 * is opened with @access (O_RDWR for an edit, O_WRONLY for a write: what writing it in place
 * needs, so a file the caller may not write is FS_PERMISSION_DENIED, DSH's `cannot VERB "P":
 * permission denied`) and flock()ed exclusively, and the lock counts only once the name still
 * names the locked inode (a holder renames a new inode over it; the next one then locks that
 * one). Held until fence_lock_done(), across the read, the edit and the rename, so concurrent
 * edits apply one after the other, each on the version the one before published. A name that
 * is absent, or a symlink (never followed), leaves @ret->fd -1 and returns 0; anything not a
 * regular file is FS_NOT_REGULAR_FILE. The lock is advisory: writers that do not take it are
 * caught by fence_replace_at()'s last look instead.
 */
int fence_lock_target(const fence_op *op, int dirfd, const char *name, int access, fence_lock *ret,
		      dsb_error *reterr);
void fence_lock_done(fence_lock *lk);

/* FS_STALE_VERSION: `cannot VERB "DISPLAY": the file changed since it was read`. -code. */
int fence_fail_stale(const fence_op *op, dsb_error *reterr);

/* FS_NOT_OBSERVED: `cannot overwrite existing "DISPLAY" without reading it first`. -code. */
int fence_fail_exists(const fence_op *op, dsb_error *reterr);

/*
 * Publishes @len bytes of @data as @name in @dirfd atomically: a temp file beside it, written,
 * fsynced, renamed over @name, then the directory fsynced. A crash leaves the old or the new
 * file, and maybe a `.NAME.dsb-*.tmp`. With @lk holding an existing file, the temp file first
 * takes that file's owner, group and mode (a caller who cannot give it them, not being root,
 * is FS_PERMISSION_DENIED: a file is never re-owned), and just before the rename the target
 * must still be the locked inode, with the size and mtime it had when locked, or nothing is
 * renamed and the result is FS_STALE_VERSION (fence_fail_stale()). Without one (@lk NULL or
 * its fd -1) the file is new: created 0666 less the umask.
 */
int fence_replace_at(const fence_op *op, int dirfd, const char *name, const char *data, size_t len,
		     const fence_lock *lk, dsb_error *reterr);

/* --- fence.c, read.c: the observation rule's conditions --------------------------------------- */

/*
 * DSH's read-before-write observation rule (fs-observation-policy) needs the version a tool saw
 * and a mutation conditional on it. A version is the provider's stat identity, as DSH's is:
 * device, inode, size and modification time. Every mutation of the fence publishes a new inode,
 * so its own writes always change the version; a writer in place changes size or mtime.
 */
typedef struct fence_version {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim;
} fence_version;

void fence_version_of(const struct stat *st, fence_version *ret);
bool fence_version_equal(const fence_version *a, const fence_version *b);

typedef enum fence_expect_kind {
	FENCE_EXPECT_ANY,     /* unconditional, as dsb_fence_write() and dsb_fence_edit() */
	FENCE_EXPECT_ABSENT,  /* createIfAbsent: an existing file is FS_NOT_OBSERVED */
	FENCE_EXPECT_VERSION, /* replaceIfVersion: another version, or none, is FS_STALE_VERSION */
} fence_expect_kind;

typedef struct fence_expect {
	fence_expect_kind kind;
	fence_version version;
} fence_expect;

/*
 * dsb_fence_write() under @expect, decided under the target's lock and again at the publish
 * (a file that appears meanwhile is never replaced): FS_NOT_OBSERVED `cannot overwrite existing
 * "P" without reading it first`, FS_STALE_VERSION `cannot write "P": file no longer exists` or
 * `cannot write "P": file changed since it was read` (DSH's texts). The sandbox check comes
 * first, as DSH's provider checks before its intent. *@ret_version (may be NULL): what was
 * published.
 */
int fence_write_expect(const dsb_exec_policy *policy, const char *cwd, const char *path,
		       const char *content, size_t len, const fence_expect *expect,
		       dsb_fs_write_result *ret, fence_version *ret_version, dsb_error *reterr);

/*
 * dsb_fence_edit() under @expect (ANY or VERSION): the locked file must be the version
 * expected, else FS_STALE_VERSION `cannot edit "P": file changed since it was read`.
 * *@ret_version (may be NULL): what was published.
 */
int fence_edit_expect(const dsb_exec_policy *policy, const char *cwd, const char *path,
		      const char *old_string, const char *new_string, bool replace_all,
		      const fence_expect *expect, dsb_fs_edit_result *ret,
		      fence_version *ret_version, dsb_error *reterr);

/*
 * dsb_fence_read() that also gives the version read (*@ret_version, from the descriptor the
 * bytes came from) and, in *@ret_absent, whether the failure was that no file exists there.
 */
int fence_read_version(const dsb_exec_policy *policy, const char *cwd, const char *path,
		       char **ret_text, size_t *ret_len, fence_version *ret_version,
		       bool *ret_absent, dsb_error *reterr);

/* --- text.c: pure ---------------------------------------------------------------------------- */

/* True when @s (@len bytes) is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
bool text_utf8_valid(const char *s, size_t len);

/* 3 when @s starts with a UTF-8 byte order mark (which Node's TextDecoder strips), else 0. */
size_t text_bom_len(const char *s, size_t len);

typedef enum text_eol {
	TEXT_EOL_LF,
	TEXT_EOL_CRLF,
} text_eol;

/* DSH's detectLineEndings(): CRLF when "\r\n" outnumbers lone "\n" in the first 4096 UTF-16
 * units. */
text_eol text_detect_eol(const char *s, size_t len);

/* Replaces every "\r\n" with "\n" in place; returns the new length (the NUL moves too). */
size_t text_normalize_eol(char *s, size_t len);

/* The result of a literal edit. */
typedef enum text_edit_status {
	TEXT_EDIT_OK,
	TEXT_EDIT_EMPTY,     /* old is empty */
	TEXT_EDIT_NOT_FOUND, /* no occurrence */
	TEXT_EDIT_AMBIGUOUS, /* several, and not @all */
	TEXT_EDIT_NO_MEMORY,
	TEXT_EDIT_TOO_LARGE, /* the result would pass the limit (*ret_len its size) */
} text_edit_status;

/*
 * applyLiteralEdit() on LF-normalised @text: replaces @old (non-overlapping, left to right) with
 * @new, once or, with @all, everywhere. *@ret_count is the number of occurrences in every status
 * but EMPTY; on OK *@ret is a new NUL-terminated buffer of *@ret_len bytes.
 */
text_edit_status text_apply_edit(const char *text, size_t len, const char *old, size_t old_len,
				 const char *new, size_t new_len, bool all, char **ret,
				 size_t *ret_len, size_t *ret_count);

/*
 * The edit as a splice of @text (@len bytes, as read): @old (LF-normalised) is searched for in
 * linear time, with every "\r\n" of @text read as "\n" when @fold_crlf, and each occurrence's
 * bytes in @text (its own line endings included) are replaced by @new, written as given; every
 * other byte is kept, so a file with mixed line endings changes only where it matched. The
 * result is @prefix then the spliced text. Statuses and *@ret_count as text_apply_edit();
 * TEXT_EDIT_TOO_LARGE, with the size in *@ret_len, when the result would exceed @limit bytes,
 * decided before anything is built.
 */
text_edit_status text_edit_splice(const char *prefix, size_t prefix_len, const char *text,
				  size_t len, bool fold_crlf, const char *old, size_t old_len,
				  const char *new, size_t new_len, bool all, size_t limit,
				  char **ret, size_t *ret_len, size_t *ret_count);

/*
 * restoreLineEndings(): @prefix (the BOM, or nothing) then @s with every "\n" not already after
 * "\r" written "\r\n" when @eol is CRLF, or @s unchanged. A new NUL-terminated buffer. -ENOMEM.
 */
int text_restore_eol(const char *prefix, size_t prefix_len, const char *s, size_t len, text_eol eol,
		     char **ret, size_t *ret_len);

#endif
