/* SPDX-License-Identifier: MIT */
/*
 * The filesystem fence (dsh-compat §7): the agent's own file mutations (the write and edit tools),
 * held to the same policy as its commands. Reads pass in every mode; read-only refuses every
 * mutation; workspace-write allows one only beneath a writable root (dsh-compat §4.1); full access
 * is unfenced. Beyond DSH's canonicalise-then-contain check, the mutation itself goes through
 * a directory descriptor of the root it was allowed under, opened with openat2(RESOLVE_BENEATH
 * | RESOLVE_NO_MAGICLINKS), so a path swapped after the check still cannot land outside; files
 * are replaced atomically (temp file, fsync, rename). A kernel without openat2 fails closed
 * with DSB_E_FENCE_UNAVAILABLE — never a weaker fallback.
 *
 * Also beyond DSH, the call's protected paths (dsb_exec_policy_protected_at()) bind the fence as
 * they bind the confined command, or the agent's own tools would be the way round them: no write
 * or edit lands in one, and dsb_fence_read() does not read what sandbox-policy.denyRead hides.
 */
#ifndef DSB_FENCE_H
#define DSB_FENCE_H

#include <stdbool.h>
#include <stddef.h>

#include <dsb/error.h>
#include <dsb/policy.h>

/*
 * The one size limit of the fs fence (DSH has none): no file larger is read, written or made
 * by an edit. Each is refused before the work that would pass it, FS_TOO_LARGE, with one text:
 * `cannot VERB "PATH": N bytes exceeds the LIMIT-byte limit` (`content exceeds the
 * LIMIT-byte limit` where N is not known, as for a stream cut at the limit).
 */
#define DSB_FS_MAX_BYTES ((size_t)64 * 1024 * 1024)

/* A resolved target (dsh-compat §7.2 resolve()). Caller-owned; release with dsb_fs_target_done().
 */
typedef struct dsb_fs_target {
	char *display_path; /* path.resolve(cwd, path) */
	char *target_key;   /* realpath, or the nearest existing ancestor's realpath + the rest */
} dsb_fs_target;

/*
 * resolve(path) against @cwd (absolute): FS_NOT_FOUND `file_path must be a non-empty string`
 * for a blank path, `cannot resolve "P": a parent path segment is not a directory` on ENOTDIR.
 */
DSB_API int dsb_fs_resolve(const char *cwd, const char *path, dsb_fs_target *ret,
			   dsb_error *reterr);
DSB_API void dsb_fs_target_done(dsb_fs_target *t);

/*
 * dsb_fs_resolve() as a confined command of @policy sees the path (docs/design/paths.md): with
 * a private /tmp (@policy->tmp_dir), /tmp/... that no other writable root holds is that
 * directory's; the display path stays the one the model gave. @policy may be NULL.
 */
DSB_API int dsb_fs_resolve_in(const dsb_exec_policy *policy, const char *cwd, const char *path,
			      dsb_fs_target *ret, dsb_error *reterr);

/* isPathUnder (dsh-compat §7.3): the lexical fast path, then (st_dev, st_ino) ancestry. 1, 0,
 * -code. */
DSB_API int dsb_fs_is_under(const char *path, const char *root, dsb_error *reterr);

/*
 * checkedTarget (dsh-compat §7.2): 0 when @policy allows mutating @path (resolved afresh against
 * @cwd); DSB_E_FS_SANDBOX_DENIED with `cannot write "DISPLAY": file access denied under MODE
 * mode` otherwise. Where the target lies in a protected path of @policy, that text is followed
 * by the line `[sandbox: PATH is protected: REASON]` (dsb_protect_kind_reason()). The same
 * check, and texts, refuse dsb_fence_write() and dsb_fence_edit().
 */
DSB_API int dsb_fence_check(const dsb_exec_policy *policy, const char *cwd, const char *path,
			    dsb_error *reterr);

typedef struct dsb_fs_write_result {
	char *display_path;
	bool created; /* false: an existing file was replaced */
} dsb_fs_write_result;

/*
 * Writes @content (@len bytes) to @path (relative to @cwd) under @policy: checked, then created
 * or atomically replaced through the allowed root's descriptor, missing parent directories made
 * beneath it. The root itself or a directory is FS_NOT_REGULAR_FILE.
 *
 * Replacing an existing file (beyond DSH) needs what writing it in place needs: the file is
 * opened for writing, or the result is FS_PERMISSION_DENIED, `cannot write "P": permission
 * denied`; the replacement keeps its owner, group and mode. A caller who is not root and does
 * not own the file (or is not in its group) is refused the same way, the file unchanged: a
 * rename would re-own it, and writing in place would give up atomicity. The file is locked
 * (flock) for the replacement, as every edit locks it, so a write never slips between an
 * edit's read and its rename. @len past DSB_FS_MAX_BYTES is FS_TOO_LARGE before anything is
 * made.
 */
DSB_API int dsb_fence_write(const dsb_exec_policy *policy, const char *cwd, const char *path,
			    const char *content, size_t len, dsb_fs_write_result *ret,
			    dsb_error *reterr);

typedef struct dsb_fs_edit_result {
	char *display_path;
	bool replaced_all;
	size_t replacements;
} dsb_fs_edit_result;

/*
 * Replaces @old_string with @new_string in the file at @path under @policy (every occurrence
 * with @replace_all), atomically, with DSH's edit rules and texts: FS_EDIT_NOT_FOUND,
 * FS_AMBIGUOUS_EDIT, `old_string must be a non-empty string`, `old_string and new_string must
 * differ`. A denied edit leaves the file unchanged.
 *
 * Beyond DSH: the file is opened for reading and writing (FS_PERMISSION_DENIED otherwise) and
 * locked (flock) across the read, the edit and the rename, so concurrent edits apply in turn
 * and none that reported success is lost; a change by a writer that does not lock, seen just
 * before the rename, is FS_STALE_VERSION, `cannot edit "P": the file changed since it was
 * read`, with the file left as that writer left it. Owner and mode are kept as by
 * dsb_fence_write(). The search is linear; with mixed line endings only the matched bytes
 * change (DSH rewrites every line to the majority's ending), the new text taking the majority's
 * ending. A result past DSB_FS_MAX_BYTES is FS_TOO_LARGE before it is built.
 */
DSB_API int dsb_fence_edit(const dsb_exec_policy *policy, const char *cwd, const char *path,
			   const char *old_string, const char *new_string, bool replace_all,
			   dsb_fs_edit_result *ret, dsb_error *reterr);

/* Reads the text file at @path (relative to @cwd). Not fenced: every mode reads (dsh-compat §7.6).
 */
DSB_API int dsb_fs_read(const char *cwd, const char *path, char **ret_text, size_t *ret_len,
			dsb_error *reterr);

/*
 * dsb_fs_read() under @policy (beyond DSH, whose reads pass in every mode): a target that lies
 * in a sandbox-policy.denyRead path of @policy is DSB_E_FS_SANDBOX_DENIED with `cannot read
 * "DISPLAY": file access denied under MODE mode` and the line `[sandbox: PATH is protected:
 * REASON]`; every other read is dsb_fs_read()'s, with its results and texts. The target is
 * decided by its realpath, so a symlink into a hidden path is refused, and, when @policy hides
 * anything, opened without following any symlink (openat2; DSB_E_FENCE_UNAVAILABLE without it)
 * so that one swapped in after the check is refused too. danger-full-access is unfenced.
 */
DSB_API int dsb_fence_read(const dsb_exec_policy *policy, const char *cwd, const char *path,
			   char **ret_text, size_t *ret_len, dsb_error *reterr);

DSB_API void dsb_fs_write_result_done(dsb_fs_write_result *r);
DSB_API void dsb_fs_edit_result_done(dsb_fs_edit_result *r);

#endif
