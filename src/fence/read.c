/* SPDX-License-Identifier: MIT */
/*
 * dsb_fs_read(): DSH's readText (packages/fs/fs-local/src/fsio.ts readWholeText), not fenced:
 * every mode reads (spec §7.6). A regular file only; a NUL in the first 8 KiB is a binary file;
 * the rest must be strict UTF-8; a leading BOM is dropped as TextDecoder drops it. DSH reads
 * text without a size limit; we stop at FENCE_MAX_BYTES with the texts of its byte reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"

int dsb_fs_read(const char *cwd, const char *path, char **ret_text, size_t *ret_len,
		dsb_error *reterr)
{
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};

	if (!cwd || !path || !ret_text)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_fs_read: missing argument");
	int r = dsb_fs_resolve(cwd, path, &t, reterr);
	if (r < 0)
		return r;

	/* Unfenced: the key is opened as a path, symlinks followed, as DSH reads. */
	const fence_grant g = {.target = t, .mode = _DSB_MODE_INVALID, .resolve = 0};
	const fence_op op = {.verb = "read", .grant = &g};
	const char *display = t.display_path;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	uint64_t size = 0;

	r = fence_read_at(AT_FDCWD, t.target_key, 0, false, &buf, &len, NULL, &size);
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
