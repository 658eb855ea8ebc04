/* SPDX-License-Identifier: MIT */
/*
 * Validating a log before anything trusts it, without reading the whole log every time.
 *
 * Every reader and writer checks the whole committed log by the scanner's rule first, so all of
 * them refuse the same logs with the same message: an append never lands on a log `session log`
 * calls corrupt, and a fold never answers from one. So that this does not grow with the log, a
 * plain log carries a checkpoint in a user extended attribute: how far it was found valid (byte
 * offset, lines, events), the file's size and mtime at that moment, and a fingerprint of the
 * bytes just before the offset. A later check resumes from the checkpoint when the bytes it
 * vouches for are plainly still there:
 *
 *   - the file is as it was (same size and mtime), or it only grew: appends, by DSH or by us,
 *     and crash tails, only ever add bytes;
 *   - and the bytes before the offset still hash to the fingerprint.
 *
 * Anything else (a shorter file, or the same size with a new mtime: an edit in place) costs one
 * full scan, which records a fresh checkpoint. Appends here record theirs right after writing,
 * so a log only we write is never scanned whole again. The checkpoint is a consistency aid for
 * logs that writers only append to. It does not defend against whoever can write the log: they
 * could as well append a valid mode switch. Such a writer who edits lines below the checkpoint
 * in place and also appends is not noticed until the next full scan.
 *
 * zstd logs are always scanned whole, as their frames cannot be entered in the middle. Where
 * user extended attributes are not supported, or the caller may not write the log, every check
 * is a full scan: slower, never wrong.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "session.h"

#define CHECKPOINT_XATTR "user.dsh-sandbox.checked"

/* How many bytes before the checkpoint its fingerprint covers: the last line or lines. */
#define FINGERPRINT_BYTES 4096

/* FNV-1a, 64-bit: a change detector over a few KiB, not a defence against forgery. */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

static int fingerprint(int fd, off_t offset, uint64_t *ret)
{
	unsigned char buf[FINGERPRINT_BYTES];
	size_t n = offset < (off_t)sizeof(buf) ? (size_t)offset : sizeof(buf);
	int r = fd_pread_all(fd, buf, n, offset - (off_t)n);
	if (r < 0)
		return r;
	*ret = fnv1a(buf, n);
	return 0;
}

/* The checkpoint of the plain log at @fd, when the bytes it vouches for are still there. */
static bool checkpoint_load(int fd, const struct stat *st, log_position *ret)
{
	char text[256];
	ssize_t n = fgetxattr(fd, CHECKPOINT_XATTR, text, sizeof(text) - 1);
	if (n <= 0)
		return false;
	text[n] = '\0';

	/* "1 OFFSET LINES EVENTS SIZE MTIME_SEC MTIME_NSEC FINGERPRINT", as checkpoint_save() puts
	 * it. */
	uint64_t field[8];
	char *p = text;
	for (size_t i = 0; i < ELEMENTSOF(field); i++) {
		char *end;
		errno = 0;
		field[i] = strtoull(p, &end, i == 7 ? 16 : 10);
		if (errno || end == p || *end != (i == 7 ? '\0' : ' ') || *p == '-' || *p == ' ')
			return false;
		p = end + 1;
	}
	if (field[0] != 1 || field[1] > INT64_MAX || field[4] > INT64_MAX || field[5] > INT64_MAX ||
	    field[6] > 999999999)
		return false;
	off_t offset = (off_t)field[1], size = (off_t)field[4];
	size_t lines = (size_t)field[2];
	uint64_t events = field[3], fp = field[7];
	int64_t mtime_sec = (int64_t)field[5];
	long mtime_nsec = (long)field[6];
	if (offset < 1 || offset > size || lines < 1 || st->st_size < offset)
		return false;
	bool same_time = st->st_mtim.tv_sec == mtime_sec && st->st_mtim.tv_nsec == mtime_nsec;
	/* Same size, new mtime: written in place. Only growth leaves the old bytes alone. */
	if (st->st_size == size && !same_time)
		return false;

	uint64_t now;
	if (fingerprint(fd, offset, &now) < 0 || now != fp)
		return false;
	*ret = (log_position){.offset = offset, .lines = lines, .events = events};
	return true;
}

/*
 * Saves @at unless the file differs from @expect in size or mtime; without @expect, unless it
 * ends anywhere but at @at (something else was appended meanwhile).
 */
static void checkpoint_save(int fd, const log_position *at, const struct stat *expect)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size < at->offset || (!expect && st.st_size != at->offset))
		return;
	if (expect &&
	    (st.st_size != expect->st_size || st.st_mtim.tv_sec != expect->st_mtim.tv_sec ||
	     st.st_mtim.tv_nsec != expect->st_mtim.tv_nsec))
		return;
	uint64_t fp;
	if (fingerprint(fd, at->offset, &fp) < 0)
		return;
	char text[256];
	int n = snprintf(text, sizeof(text), "1 %jd %zu %" PRIu64 " %jd %lld %ld %" PRIx64,
			 (intmax_t)at->offset, at->lines, at->events, (intmax_t)st.st_size,
			 (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec, fp);
	if (n > 0 && (size_t)n < sizeof(text))
		(void)fsetxattr(fd, CHECKPOINT_XATTR, text, (size_t)n, 0);
}

void log_checkpoint_save(int fd, const log_position *at)
{
	checkpoint_save(fd, at, NULL);
}

int log_validate(int fd, const char *path, log_valid *ret, dsb_error *reterr)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot stat", path);
	if (!S_ISREG(st.st_mode))
		return dsb_fail(reterr, DSB_E_IO, "%s: not a regular file", path);

	bool zstd = log_is_zstd(fd, st.st_size);
	log_position from;
	bool resume = !zstd && checkpoint_load(fd, &st, &from);
	log_scan_result res;
	int r = log_scan_from(fd, path, resume ? &from : NULL, NULL, NULL, NULL, &res, reterr);
	if (r == LOG_RESCAN) {
		/* A replacement past the checkpoint needs the surface from the first event. */
		resume = false;
		r = log_scan_from(fd, path, NULL, NULL, NULL, NULL, &res, reterr);
	}
	if (r < 0)
		return r;

	*ret = (log_valid){
		.zstd = res.zstd,
		.header_end = res.header_end,
		.end = {.offset = res.committed_bytes, .lines = res.lines, .events = res.n_events},
		.file_bytes = res.file_bytes,
	};
	if (!zstd && (!resume || ret->end.offset > from.offset))
		checkpoint_save(fd, &ret->end, &st);
	return 0;
}
