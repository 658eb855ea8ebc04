/* SPDX-License-Identifier: MIT */
/*
 * dsb_fs_read(): DSH's readText (packages/fs/fs-local/src/fsio.ts readWholeText), not fenced:
 * every mode reads (dsh-compat §7.6). A regular file only; a NUL in the first 8 KiB is a binary
 * file; the rest must be strict UTF-8; a leading BOM is dropped as TextDecoder drops it. DSH reads
 * text without a size limit; we stop at FENCE_MAX_BYTES with the texts of its byte reader.
 *
 * dsb_fence_read() is the same read under a policy (beyond DSH): what sandbox-policy.denyRead
 * hides from the confined command is not read for the model either, or the read tool would be
 * the way round it. The target is decided by its realpath, as the write fence decides, and
 * then opened with openat2(RESOLVE_NO_SYMLINKS): the realpath has no symlink on it, so one met
 * on the way was swapped in after the check and may lead into a hidden path.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"

/*
 * Reads the resolved @t: the key opened as a path, symlinks followed, as DSH reads, when
 * @resolve is 0; else with openat2 and @resolve, a refused step being a denial under @mode.
 */
static int read_target(const dsb_fs_target *t, dsb_mode mode, uint64_t resolve, char **ret_text,
		       size_t *ret_len, struct stat *ret_st, dsb_error *reterr)
{
	/* resolve 0 in the grant: fence_fail_errno() then maps every errno as an unfenced read. */
	const fence_grant g = {.target = *t, .mode = mode, .resolve = 0};
	const fence_op op = {.verb = "read", .grant = &g};
	const char *display = t->display_path;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	uint64_t size = 0;

	int r = fence_read_at(AT_FDCWD, t->target_key, resolve, false, &buf, &len, ret_st, &size);
	if (r == -ENOSYS && resolve)
		return dsb_fail(reterr, DSB_E_FENCE_UNAVAILABLE,
				"the fs fence needs openat2 (Linux 5.6+) to keep "
				"sandbox-policy.denyRead hidden; nothing was read");
	if ((r == -ELOOP || r == -EXDEV || r == -EAGAIN) && resolve)
		return fence_fail_refused("read", display, mode, NULL, -r, reterr);
	if (r == -EFBIG)
		r = dsb_fail(reterr, DSB_E_FS_TOO_LARGE,
			     "cannot read \"%s\": %" PRIu64 " bytes exceeds the %zu-byte limit",
			     display, size, FENCE_MAX_BYTES);
	else if (r == -EOVERFLOW)
		r = dsb_fail(reterr, DSB_E_FS_TOO_LARGE,
			     "cannot read \"%s\": content exceeds the %zu-byte limit", display,
			     FENCE_MAX_BYTES);
	else if (r < 0)
		return fence_fail_errno(&op, -r, reterr);
	else if (memchr(buf, '\0', len < FENCE_BINARY_SAMPLE ? len : FENCE_BINARY_SAMPLE))
		r = dsb_fail(reterr, DSB_E_FS_NOT_TEXT, "cannot read \"%s\": binary file", display);
	else if (!text_utf8_valid(buf, len))
		r = dsb_fail(reterr, DSB_E_FS_NOT_TEXT, "cannot read \"%s\": invalid UTF-8 text",
			     display);
	if (r < 0) {
		dsb_error_set_subject(reterr, display);
		return r;
	}

	size_t bom = text_bom_len(buf, len);
	if (bom > 0) {
		memmove(buf, buf + bom, len - bom + 1);
		len -= bom;
	}
	*ret_text = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}

int dsb_fs_read(const char *cwd, const char *path, char **ret_text, size_t *ret_len,
		dsb_error *reterr)
{
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};

	if (!cwd || !path || !ret_text)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_fs_read: missing argument");
	int r = dsb_fs_resolve(cwd, path, &t, reterr);
	if (r < 0)
		return r;
	return read_target(&t, _DSB_MODE_INVALID, 0, ret_text, ret_len, NULL, reterr);
}

/* Whether @p hides anything from reads. */
static bool hides_any(const dsb_exec_policy *p)
{
	for (size_t i = 0; i < p->n_protected; i++)
		if (dsb_protect_kind_hides(p->protected[i].kind))
			return true;
	return false;
}

/* dsb_fence_read() with the stat of what was read in *@ret_st (may be NULL). */
static int fence_read_st(const dsb_exec_policy *policy, const char *cwd, const char *path,
			 char **ret_text, size_t *ret_len, struct stat *ret_st, dsb_error *reterr)
{
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};

	if (!policy || !cwd || !path || !ret_text)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_fence_read: missing argument");
	if (!dsb_mode_to_string(policy->mode))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "fence: invalid mode %d",
				(int)policy->mode);
	int r = dsb_fs_resolve_in(policy, cwd, path, &t, reterr);
	if (r < 0)
		return r;

	/* Full access confines nothing, commands or tools: the read is DSH's. */
	if (policy->mode == DSB_MODE_DANGER_FULL_ACCESS || !hides_any(policy))
		return read_target(&t, policy->mode, 0, ret_text, ret_len, ret_st, reterr);

	const dsb_protected *hidden = dsb_exec_policy_protected_at(policy, t.target_key, false);
	if (hidden)
		return fence_fail_refused("read", t.display_path, policy->mode, hidden, 0, reterr);
	return read_target(&t, policy->mode,
			   FENCE_RESOLVE_NO_SYMLINKS | FENCE_RESOLVE_NO_MAGICLINKS, ret_text,
			   ret_len, ret_st, reterr);
}

int dsb_fence_read(const dsb_exec_policy *policy, const char *cwd, const char *path,
		   char **ret_text, size_t *ret_len, dsb_error *reterr)
{
	return fence_read_st(policy, cwd, path, ret_text, ret_len, NULL, reterr);
}

int fence_read_version(const dsb_exec_policy *policy, const char *cwd, const char *path,
		       char **ret_text, size_t *ret_len, fence_version *ret_version,
		       bool *ret_absent, dsb_error *reterr)
{
	struct stat st;
	dsb_error err = {0};

	int r = fence_read_st(policy, cwd, path, ret_text, ret_len, &st, &err);
	/* DSH records absence only for a read that found nothing at the name (read-target.ts). */
	if (ret_absent)
		*ret_absent = r < 0 && err.code == DSB_E_FS_NOT_FOUND && err.sys_errno == ENOENT;
	if (r < 0) {
		if (reterr)
			*reterr = err;
		return r;
	}
	if (ret_version)
		fence_version_of(&st, ret_version);
	return 0;
}
