/* SPDX-License-Identifier: MIT */
/*
 * Writing logs without ever losing an acknowledged event.
 *
 * A new log is published the way DSH does it: the header line goes to a 0600 temp file that is
 * fsynced and then link(2)ed to its final name, which fails instead of overwriting a log that
 * appeared meanwhile; directories are 0700 and fsynced after each new entry.
 *
 * An append holds an exclusive flock(2) on the log while it decides the next seq, repairs a torn
 * tail and writes, so two writers (two CLI calls, a harness and the CLI) can neither reuse a seq
 * nor interleave. The record goes out in one write(2) on an O_APPEND descriptor, then fsync; a
 * short write or a failed fsync truncates back to the size before, so a retry cannot duplicate
 * a seq. A crash may still leave a partial last line (or zstd frame): the next append cuts it
 * off, after copying its bytes to a side file next to the log, so nothing is silently dropped.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "session.h"

uint64_t log_now_ms(void)
{
	struct timespec ts;
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int log_create(const char *dir, const char *name, const char *header_line, char **ret_path,
	       dsb_error *reterr)
{
	_cleanup_free_ char *path = NULL, *tmp = NULL;
	char suffix[UUID_STRING_MAX];
	int r = uuid_random(suffix);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "cannot draw random bytes");
	if (asprintf(&path, "%s/%s", dir, name) < 0 ||
	    asprintf(&tmp, "%s/%s.%.12s.tmp", dir, name, suffix) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");

	r = mkdir_p(dir, 0700, true);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot create", dir);

	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot create", tmp);
	size_t len = strlen(header_line);
	r = fd_write_all(fd, header_line, len);
	if (r >= 0)
		r = fd_write_all(fd, "\n", 1);
	if (r >= 0 && fsync(fd) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlink(tmp);
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot write", tmp);
	}

	/* link(), not rename(): it refuses to replace a log that appeared meanwhile. */
	if (link(tmp, path) < 0) {
		int saved = errno;
		(void)unlink(tmp);
		if (saved == EEXIST)
			return dsb_fail(reterr, DSB_E_IO,
					"%s: a log already exists there; refusing to replace it",
					path);
		return dsb_fail_errno(reterr, DSB_E_IO, saved, "%s: cannot publish", path);
	}
	r = fsync_dir(dir);
	(void)unlink(tmp);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot sync", dir);
	*ret_path = TAKE_PTR(path);
	return 0;
}

/* Copies the torn bytes [from, size) to "PATH.torn-MS" (fsynced), then cuts the log at @from. */
static int cut_torn_tail(int fd, const char *path, off_t from, off_t size, dsb_error *reterr)
{
	size_t n = (size_t)(size - from);
	_cleanup_free_ char *bytes = malloc(n);
	if (!bytes)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
	int r = fd_pread_all(fd, bytes, n, from);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot read its torn tail", path);

	_cleanup_free_ char *side = NULL;
	_cleanup_close_ int out = -1;
	uint64_t now = log_now_ms();
	for (unsigned attempt = 0; out < 0; attempt++) {
		free(side);
		side = NULL;
		if ((attempt ? asprintf(&side, "%s.torn-%llu-%u", path, (unsigned long long)now,
					attempt)
			     : asprintf(&side, "%s.torn-%llu", path, (unsigned long long)now)) < 0)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
		out = open(side, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (out < 0 && (errno != EEXIST || attempt > 100))
			return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot create", side);
	}
	r = fd_write_all(out, bytes, n);
	if (r >= 0 && fsync(out) < 0)
		r = -errno;
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot write", side);

	/* Only once the bytes are safe elsewhere does the log lose them. */
	if (ftruncate(fd, from) < 0 || fsync(fd) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot cut its torn tail",
				      path);
	return 0;
}

static int lock_exclusive(int fd)
{
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/*
 * Under the lock: validates the log by the one rule every reader applies (check.c), so nothing
 * lands on a log `session log` refuses, then repairs a torn tail. *@io_size becomes the size to
 * append at; @ret_valid says where the next record goes.
 */
static int prepare_append(int fd, const char *path, off_t *io_size, log_valid *ret_valid,
			  dsb_error *reterr)
{
	int r = log_validate(fd, path, ret_valid, reterr);
	if (r < 0)
		return r;
	if (ret_valid->end.offset < ret_valid->file_bytes) {
		r = cut_torn_tail(fd, path, ret_valid->end.offset, ret_valid->file_bytes, reterr);
		if (r < 0)
			return r;
	}
	*io_size = ret_valid->end.offset;
	return 0;
}

/* One zstd frame (with its checksum, as DSH writes them) holding @text. */
static int zstd_frame(const char *text, size_t len, char **ret_frame, size_t *ret_len)
{
	size_t cap = ZSTD_compressBound(len);
	_cleanup_free_ char *frame = malloc(cap);
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	if (!frame || !cctx) {
		ZSTD_freeCCtx(cctx);
		return -ENOMEM;
	}
	size_t n = ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
	if (!ZSTD_isError(n))
		n = ZSTD_compress2(cctx, frame, cap, text, len);
	ZSTD_freeCCtx(cctx);
	if (ZSTD_isError(n))
		return -EIO;
	*ret_frame = TAKE_PTR(frame);
	*ret_len = n;
	return 0;
}

int log_append_decide(const char *path, bool sync, log_decide_fn decide, void *userdata,
		      uint64_t *ret_seq, dsb_error *reterr)
{
	_cleanup_close_ int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot open", path);
	int r = lock_exclusive(fd);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot lock", path);

	struct stat st;
	if (fstat(fd, &st) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot stat", path);
	if (!S_ISREG(st.st_mode))
		return dsb_fail(reterr, DSB_E_IO, "%s: not a regular file", path);
	off_t size = st.st_size;
	log_valid valid;
	r = prepare_append(fd, path, &size, &valid, reterr);
	if (r < 0)
		return r;
	uint64_t seq = valid.end.events;

	/* Decided here, under the lock: no other writer can change the log before the write. */
	log_event ev = {0};
	r = decide(userdata, &ev, reterr);
	if (r <= 0)
		return r;
	const char *type = ev.type, *data_json = ev.data_json, *extra = ev.extra;

	/* JSON.stringify({type, seq, time, data}): DSH's envelope key order (dsh-compat §3.1). */
	jw line = JW_INIT;
	jw_object_begin(&line);
	jw_member_string(&line, "type", type);
	jw_member_uint(&line, "seq", seq);
	jw_member_uint(&line, "time", log_now_ms());
	jw_member_raw(&line, "data", data_json);
	if (extra)
		jw_verbatim(&line, extra);
	jw_object_end(&line);
	jw_verbatim(&line, "\n");
	_cleanup_free_ char *text = NULL;
	if (jw_take(&line, &text) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);

	/* What readers would refuse is never written: the same rule, at the line it would take. */
	size_t text_len = strlen(text);
	r = log_check_appended(fd, path, &valid.end, text, text_len - 1, reterr);
	if (r < 0)
		return r;

	_cleanup_free_ char *frame = NULL;
	const char *out = text;
	size_t out_len = text_len;
	if (valid.zstd) {
		r = zstd_frame(text, out_len, &frame, &out_len);
		if (r < 0)
			return dsb_fail(reterr, r == -ENOMEM ? DSB_E_NO_MEMORY : DSB_E_IO,
					"%s: cannot compress the record", path);
		out = frame;
	}

	/* One write(2): a reader or a crash sees the whole record or none of it. */
	ssize_t n;
	do
		n = write(fd, out, out_len);
	while (n < 0 && errno == EINTR);
	int saved = n < 0 ? errno : (size_t)n < out_len ? ENOSPC : 0;
	if (!saved && sync && fsync(fd) < 0)
		saved = errno;
	if (saved) {
		/* Leave no partial record behind: a retry must not find half of this one. */
		if (ftruncate(fd, size) == 0)
			(void)fsync(fd);
		return dsb_fail_errno(reterr, DSB_E_IO, saved, "%s: cannot append", path);
	}
	if (!valid.zstd) {
		log_position next = {.offset = size + (off_t)out_len,
				     .lines = valid.end.lines + 1,
				     .events = seq + 1};
		log_checkpoint_save(fd, &next);
	}
	if (ret_seq)
		*ret_seq = seq;
	return 1;
}

/* The decision of a plain append: always this one event. */
static int decide_fixed(void *userdata, log_event *ret_event, dsb_error *reterr)
{
	*ret_event = *(const log_event *)userdata;
	return 1;
}

int log_append(const char *path, const char *type, const char *data_json, const char *extra,
	       bool sync, uint64_t *ret_seq, dsb_error *reterr)
{
	log_event ev = {.type = type, .data_json = data_json, .extra = extra};
	int r = log_append_decide(path, sync, decide_fixed, &ev, ret_seq, reterr);
	return r < 0 ? r : 0;
}
