/* SPDX-License-Identifier: MIT */
/*
 * The fs fence's decisions and its two mutations (dsh-compat §7.2; DSH packages/fs/fs-sandbox/src/
 * index.ts checkedTarget, packages/fs/fs-local/src/index.ts writeText/editText).
 *
 * Every call resolves its path now (as DSH's tool resolves, then checkedTarget re-resolves), so
 * the identity checked is the one mutated. danger-full-access passes unfenced; read-only refuses
 * every mutation; workspace-write allows a target under the first writable root (dsh-compat §4.1),
 * unless it lies in one of the call's protected paths (beyond DSH), and anchors the mutation at
 * that root (beneath.c). The texts are DSH's; the denial says "write" for edits too, as DSH's
 * does, and a protected path adds one line naming it after DSH's text.
 *
 * Symlinks and hard links:
 *  - a final symlink is resolved by the check (realpath), and its *target* is what is checked
 *    and written, as in DSH: a link inside pointing inside is written through (the link stays),
 *    one pointing outside is denied; a dangling one is checked as itself and replaced by the
 *    new file, never followed;
 *  - a hard link inside a root to an outside inode is replaced by the rename: the other name's
 *    inode keeps its content (it loses the one link that was replaced).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fence.h"

void fence_grant_done(fence_grant *g)
{
	if (!g)
		return;
	dsb_fs_target_done(&g->target);
	free(g->anchor);
	*g = (fence_grant){.mode = _DSB_MODE_INVALID};
}

int fence_grant_check_roots(const dsb_exec_policy *policy, char *const *roots, const char *cwd,
			    const char *path, fence_grant *ret, dsb_error *reterr)
{
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};
	fence_match m = {0};
	uint64_t resolve = 0;

	if (!policy)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "fence: missing policy");
	dsb_mode mode = policy->mode;
	int r = dsb_fs_resolve_in(policy, cwd, path, &t, reterr);
	if (r < 0)
		return r;

	switch (mode) {
	case DSB_MODE_DANGER_FULL_ACCESS:
		/* Unfenced: anchored at "/", walked with plain openat(), symlinks followed. */
		m.base_len = 0;
		break;
	case DSB_MODE_READ_ONLY:
		return fence_fail_denied(t.display_path, mode, 0, reterr);
	case DSB_MODE_WORKSPACE_WRITE:
		r = 0;
		for (char *const *root = roots; root && *root && r == 0; root++) {
			/* An empty or relative root would match by accident ("" prefixes
			 * everything); grant only through an absolute one. */
			if ((*root)[0] != '/')
				continue;
			r = fence_match_root(t.target_key, *root, &m, reterr);
		}
		if (r < 0) {
			dsb_error_set_subject(reterr, t.display_path);
			return r;
		}
		if (r == 0)
			return fence_fail_denied(t.display_path, mode, 0, reterr);
		/*
		 * Inside a root, but maybe in what the confined command cannot change either (a
		 * hook, the store, the configuration): the fence must not be the way round that.
		 * The key is a realpath, so a symlink in the workspace that points into one is
		 * caught; a protected directory that does not exist yet is listed by the path it
		 * will have, so a write that would create it is caught too.
		 */
		const dsb_protected *protected =
			dsb_exec_policy_protected_at(policy, t.target_key, true);
		if (protected)
			return fence_fail_refused("write", t.display_path, mode, protected, 0,
						  reterr);
		/*
		 * RESOLVE_NO_SYMLINKS: the key is a realpath, so the approved path has no symlink
		 * and one met now is a swap. RESOLVE_BENEATH: no step may climb out ("..") or
		 * jump (absolute). NO_MAGICLINKS is implied; spelled for the reader.
		 */
		resolve = FENCE_RESOLVE_BENEATH | FENCE_RESOLVE_NO_SYMLINKS |
			  FENCE_RESOLVE_NO_MAGICLINKS;
		break;
	case _DSB_MODE_MAX:
	case _DSB_MODE_INVALID:
	default:
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "fence: invalid mode %d", (int)mode);
	}

	/* Every ancestor the match walked is a prefix of the key: the anchor is spelled by it. */
	char *anchor = m.base_len == 0 ? strdup("/") : strndup(t.target_key, m.base_len);
	if (!anchor)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "fence: out of memory");
	*ret = (fence_grant){
		.target = t,
		.mode = mode,
		.anchor = anchor,
		.rel = m.base_len,
		.by_identity = m.by_identity,
		.dev = m.dev,
		.ino = m.ino,
		.resolve = resolve,
	};
	t = (dsb_fs_target){NULL, NULL};
	return 0;
}

int fence_grant_check(const dsb_exec_policy *policy, const char *cwd, const char *path,
		      fence_grant *ret, dsb_error *reterr)
{
	_cleanup_strv_free_ char **roots = NULL;

	if (!policy || !cwd || !path)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "fence: missing argument");
	if (policy->mode == DSB_MODE_WORKSPACE_WRITE) {
		int r = dsb_policy_writable_roots(policy, &roots, reterr);
		if (r < 0)
			return r;
		/* The sandbox's /tmp is the session's private directory, where it has one. */
		for (char **root = roots; policy->tmp_dir && *root; root++)
			if (strcmp(*root, "/tmp") == 0) {
				char *dir = strdup(policy->tmp_dir);
				if (!dir)
					return dsb_fail(reterr, DSB_E_NO_MEMORY,
							"fence: out of memory");
				free(*root);
				*root = dir;
			}
	}
	return fence_grant_check_roots(policy, roots, cwd, path, ret, reterr);
}

int dsb_fence_check(const dsb_exec_policy *policy, const char *cwd, const char *path,
		    dsb_error *reterr)
{
	_cleanup_(fence_grant_done) fence_grant g = {.mode = _DSB_MODE_INVALID};

	int r = fence_grant_check(policy, cwd, path, &g, reterr);
	return r < 0 ? r : 0;
}

void fence_version_of(const struct stat *st, fence_version *ret)
{
	*ret = (fence_version){
		.dev = st->st_dev, .ino = st->st_ino, .size = st->st_size, .mtim = st->st_mtim};
}

bool fence_version_equal(const fence_version *a, const fence_version *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec;
}

/*
 * @expect checked against the locked target @lk (fd -1: none there), with DSH's texts: an
 * existing file where none was seen; a seen file gone or of another version.
 */
static int check_expect(const fence_op *op, const fence_lock *lk, const fence_expect *expect,
			dsb_error *reterr)
{
	const char *display = op->grant->target.display_path;
	fence_version now;
	int r = 0;

	if (!expect || expect->kind == FENCE_EXPECT_ANY)
		return 0;
	if (expect->kind == FENCE_EXPECT_ABSENT)
		return lk->fd >= 0 ? fence_fail_exists(op, reterr) : 0;
	if (lk->fd >= 0) {
		fence_version_of(&lk->st, &now);
		if (fence_version_equal(&now, &expect->version))
			return 0;
	}
	if (lk->fd < 0 && strcmp(op->verb, "write") == 0)
		r = dsb_fail(reterr, DSB_E_FS_STALE_VERSION,
			     "cannot write \"%s\": file no longer exists", display);
	else
		return fence_fail_stale(op, reterr);
	dsb_error_set_subject(reterr, display);
	return r;
}

/* fence_write_granted() under @expect (NULL: none); the version published in *@ret_version. */
static int write_granted(const fence_grant *g, const char *content, size_t len,
			 const fence_expect *expect, dsb_fs_write_result *ret,
			 fence_version *ret_version, dsb_error *reterr)
{
	struct stat published = {0};
	bool observed = expect && expect->kind != FENCE_EXPECT_ANY;
	const fence_op op = {.verb = "write",
			     .grant = g,
			     .observed = observed,
			     .noreplace = observed,
			     .published = ret_version ? &published : NULL};
	_cleanup_close_ int dirfd = -1;
	char name[NAME_MAX + 1];

	int r = fence_open_parent(&op, true, &dirfd, name, reterr);
	if (r < 0)
		return r;

	/*
	 * DSH's probe: not a regular file is FS_NOT_REGULAR_FILE. An existing file is locked
	 * (and so needs write permission) for the replacement, which keeps its owner and mode:
	 * a write that replaces content serialises with every edit, so an edit already reported
	 * is replaced, never lost in between.
	 */
	_cleanup_(fence_lock_done) fence_lock lk = FENCE_LOCK_INIT;
	r = fence_lock_target(&op, dirfd, name, O_WRONLY, &lk, reterr);
	if (r < 0)
		return r;
	r = check_expect(&op, &lk, expect, reterr);
	if (r < 0)
		return r;

	/* Allocate what the result needs before publishing: no OOM after the write. */
	_cleanup_free_ char *display = NULL;
	if (ret && !(display = strdup(g->target.display_path)))
		return fence_fail_errno(&op, ENOMEM, reterr);

	r = fence_replace_at(&op, dirfd, name, content, len, &lk, reterr);
	if (r < 0)
		return r;
	if (ret)
		*ret = (dsb_fs_write_result){.display_path = TAKE_PTR(display),
					     .created = lk.fd < 0};
	if (ret_version)
		fence_version_of(&published, ret_version);
	return 0;
}

int fence_write_granted(const fence_grant *g, const char *content, size_t len,
			dsb_fs_write_result *ret, dsb_error *reterr)
{
	return write_granted(g, content, len, NULL, ret, NULL, reterr);
}

int fence_write_expect(const dsb_exec_policy *policy, const char *cwd, const char *path,
		       const char *content, size_t len, const fence_expect *expect,
		       dsb_fs_write_result *ret, fence_version *ret_version, dsb_error *reterr)
{
	_cleanup_(fence_grant_done) fence_grant g = {.mode = _DSB_MODE_INVALID};

	if (!content && len > 0)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_fence_write: missing content");
	int r = fence_grant_check(policy, cwd, path, &g, reterr);
	if (r < 0)
		return r;
	/* The limit the read and the edit keep, checked before anything is made. */
	if (len > FENCE_MAX_BYTES) {
		r = dsb_fail(reterr, DSB_E_FS_TOO_LARGE,
			     "cannot write \"%s\": %zu bytes exceeds the %zu-byte limit",
			     g.target.display_path, len, FENCE_MAX_BYTES);
		dsb_error_set_subject(reterr, g.target.display_path);
		return r;
	}
	return write_granted(&g, content ? content : "", len, expect, ret, ret_version, reterr);
}

int dsb_fence_write(const dsb_exec_policy *policy, const char *cwd, const char *path,
		    const char *content, size_t len, dsb_fs_write_result *ret, dsb_error *reterr)
{
	return fence_write_expect(policy, cwd, path, content, len, NULL, ret, NULL, reterr);
}

/* The edit's read failures, with DSH's "cannot edit" texts and the size limit. */
static int fail_edit_read(const fence_op *op, int r, uint64_t size, dsb_error *reterr)
{
	const char *display = op->grant->target.display_path;

	if (r == -EFBIG)
		r = dsb_fail(reterr, DSB_E_FS_TOO_LARGE,
			     "cannot edit \"%s\": %" PRIu64 " bytes exceeds the %zu-byte limit",
			     display, size, FENCE_MAX_BYTES);
	else if (r == -EOVERFLOW)
		r = dsb_fail(reterr, DSB_E_FS_TOO_LARGE,
			     "cannot edit \"%s\": content exceeds the %zu-byte limit", display,
			     FENCE_MAX_BYTES);
	else
		return fence_fail_errno(op, -r, reterr);
	dsb_error_set_subject(reterr, display);
	return r;
}

/*
 * readForEdit() + applyLiteralEdit() + restoreLineEndings() on the @len bytes read in @buf
 * (left as they are): the new content in *@ret (a new buffer) and the number of
 * occurrences replaced in *@ret_count.
 */
static int edit_text(const fence_op *op, const char *buf, size_t len, const char *old,
		     size_t old_len, const char *new, size_t new_len, bool all, char **ret,
		     size_t *ret_len, size_t *ret_count, dsb_error *reterr)
{
	const char *display = op->grant->target.display_path;
	int r = 0;

	/* Any NUL is a binary file; then strict UTF-8, as TextDecoder({fatal: true}). */
	if (memchr(buf, '\0', len))
		r = dsb_fail(reterr, DSB_E_FS_NOT_TEXT, "cannot edit \"%s\": binary file", display);
	else if (!text_utf8_valid(buf, len))
		r = dsb_fail(reterr, DSB_E_FS_NOT_TEXT, "cannot edit \"%s\": invalid UTF-8 text",
			     display);
	if (r < 0) {
		dsb_error_set_subject(reterr, display);
		return r;
	}

	/*
	 * TextDecoder drops a leading BOM, so DSH matches on the text without it (and then writes
	 * it back without it). We match as DSH does but keep the BOM on write-back: an edit
	 * should not change bytes it was not asked to.
	 */
	size_t bom = text_bom_len(buf, len);
	const char *text = buf + bom;
	size_t text_len = len - bom;
	text_eol eol = text_detect_eol(text, text_len);

	/*
	 * DSH normalises the whole text to LF, edits and restores the majority's line ending
	 * everywhere, rewriting every line of a mixed file. We match exactly as it does (each
	 * "\r\n" read as "\n") but splice the original bytes: only the matched text changes,
	 * and the new text takes the file's line ending, as DSH's restore gives it.
	 */
	_cleanup_free_ char *new_eol = NULL;
	size_t new_eol_len;
	if (text_restore_eol("", 0, new, new_len, eol, &new_eol, &new_eol_len) < 0)
		return fence_fail_errno(op, ENOMEM, reterr);

	size_t count = 0;
	switch (text_edit_splice(buf, bom, text, text_len, true, old, old_len, new_eol, new_eol_len,
				 all, FENCE_MAX_BYTES, ret, ret_len, &count)) {
	case TEXT_EDIT_OK:
		break;
	case TEXT_EDIT_EMPTY:
		return dsb_fail(reterr, DSB_E_FS_EDIT_NOT_FOUND,
				"old_string must be a non-empty string");
	case TEXT_EDIT_NOT_FOUND:
		r = dsb_fail(reterr, DSB_E_FS_EDIT_NOT_FOUND, "old_string was not found in \"%s\"",
			     display);
		dsb_error_set_subject(reterr, display);
		return r;
	case TEXT_EDIT_AMBIGUOUS:
		r = dsb_fail(reterr, DSB_E_FS_AMBIGUOUS_EDIT,
			     "old_string matched %zu times in \"%s\"; provide a more specific "
			     "old_string or set replace_all to true",
			     count, display);
		dsb_error_set_subject(reterr, display);
		return r;
	case TEXT_EDIT_TOO_LARGE:
		/* Refused before the result is built: a file the read could not read back. */
		if (*ret_len == SIZE_MAX)
			r = dsb_fail(reterr, DSB_E_FS_TOO_LARGE,
				     "cannot edit \"%s\": content exceeds the %zu-byte limit",
				     display, FENCE_MAX_BYTES);
		else
			r = dsb_fail(reterr, DSB_E_FS_TOO_LARGE,
				     "cannot edit \"%s\": %zu bytes exceeds the %zu-byte limit",
				     display, *ret_len, FENCE_MAX_BYTES);
		dsb_error_set_subject(reterr, display);
		return r;
	case TEXT_EDIT_NO_MEMORY:
	default:
		return fence_fail_errno(op, ENOMEM, reterr);
	}
	*ret_count = count;
	return 0;
}

int dsb_fence_edit(const dsb_exec_policy *policy, const char *cwd, const char *path,
		   const char *old_string, const char *new_string, bool replace_all,
		   dsb_fs_edit_result *ret, dsb_error *reterr)
{
	return fence_edit_expect(policy, cwd, path, old_string, new_string, replace_all, NULL, ret,
				 NULL, reterr);
}

int fence_edit_expect(const dsb_exec_policy *policy, const char *cwd, const char *path,
		      const char *old_string, const char *new_string, bool replace_all,
		      const fence_expect *expect, dsb_fs_edit_result *ret,
		      fence_version *ret_version, dsb_error *reterr)
{
	struct stat published = {0};
	_cleanup_(fence_grant_done) fence_grant g = {.mode = _DSB_MODE_INVALID};
	_cleanup_free_ char *old = NULL, *new = NULL;
	size_t old_len, new_len;

	if (!policy || !cwd || !path || !old_string || !new_string)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_fence_edit: missing argument");

	/* The tool's argument checks come first, before any policy (tool-fs edit.ts). */
	if (js_blank(path))
		return dsb_fail(reterr, DSB_E_FS_NOT_FOUND, "file_path must be a non-empty string");
	if (old_string[0] == '\0')
		return dsb_fail(reterr, DSB_E_FS_EDIT_NOT_FOUND,
				"old_string must be a non-empty string");
	/* The strings as Node holds them: ill-formed UTF-8 decoded to U+FFFD, so a match never
	 * splits a character. */
	if (utf8_sanitize(old_string, strlen(old_string), &old, &old_len) < 0 ||
	    utf8_sanitize(new_string, strlen(new_string), &new, &new_len) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "edit: out of memory");
	if (old_len == new_len && memcmp(old, new, old_len) == 0)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"old_string and new_string must differ");
	/* applyLiteralEdit() matches LF-normalised text with LF-normalised arguments. */
	old_len = text_normalize_eol(old, old_len);
	new_len = text_normalize_eol(new, new_len);

	int r = fence_grant_check(policy, cwd, path, &g, reterr);
	if (r < 0)
		return r;

	const fence_op op = {.verb = "edit",
			     .grant = &g,
			     .observed = expect && expect->kind != FENCE_EXPECT_ANY,
			     .published = ret_version ? &published : NULL};
	const char *display = g.target.display_path;
	_cleanup_close_ int dirfd = -1;
	char name[NAME_MAX + 1];
	r = fence_open_parent(&op, false, &dirfd, name, reterr);
	if (r < 0)
		return r;

	/*
	 * Lock the target (opened for reading and writing: an edit needs what writing in place
	 * needs) and hold the lock across the read, the edit and the rename, so that concurrent
	 * edits apply in turn and each one reported is in the file the next one reads.
	 */
	_cleanup_(fence_lock_done) fence_lock lk = FENCE_LOCK_INIT;
	r = fence_lock_target(&op, dirfd, name, O_RDWR, &lk, reterr);
	if (r < 0)
		return r;
	if (expect && expect->kind == FENCE_EXPECT_VERSION) {
		/* The version seen, or nothing: the file changed since it was read (DSH). */
		r = check_expect(&op, &lk, expect, reterr);
		if (r < 0)
			return r;
	}
	if (lk.fd < 0) /* absent, or a symlink that is not followed */
		return fence_fail_errno(&op, ENOENT, reterr);

	/* Read through the locked descriptor: the bytes edited are the version locked. */
	_cleanup_free_ char *buf = NULL;
	size_t len;
	uint64_t size = 0;
	r = fence_read_fd(lk.fd, &buf, &len, NULL, &size);
	if (r < 0)
		return fail_edit_read(&op, r, size, reterr);

	_cleanup_free_ char *out = NULL;
	size_t out_len, count = 0;
	r = edit_text(&op, buf, len, old, old_len, new, new_len, replace_all, &out, &out_len,
		      &count, reterr);
	if (r < 0)
		return r;

	_cleanup_free_ char *ret_display = NULL;
	if (ret && !(ret_display = strdup(display)))
		return fence_fail_errno(&op, ENOMEM, reterr);

	r = fence_replace_at(&op, dirfd, name, out, out_len, &lk, reterr);
	if (r < 0)
		return r;
	if (ret)
		*ret = (dsb_fs_edit_result){.display_path = TAKE_PTR(ret_display),
					    .replaced_all = replace_all,
					    .replacements = count};
	if (ret_version)
		fence_version_of(&published, ret_version);
	return 0;
}

void dsb_fs_write_result_done(dsb_fs_write_result *r)
{
	if (!r)
		return;
	free(r->display_path);
	*r = (dsb_fs_write_result){NULL, false};
}

void dsb_fs_edit_result_done(dsb_fs_edit_result *r)
{
	if (!r)
		return;
	free(r->display_path);
	*r = (dsb_fs_edit_result){NULL, false, 0};
}
