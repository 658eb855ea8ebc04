/* SPDX-License-Identifier: MIT */
/*
 * A log file's bytes: the zstd magic number, and the line reader that turns the file, plain JSONL
 * or concatenated zstd frames, into complete lines in bounded memory (the longest line). The frames
 * are walked as DSH's scanZstdFrames() walks them and its refusals are DSH's texts; what a line
 * holds is for the layers above.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "session.h"

/* File bytes read at once, and the first size of the line buffer. */
#define READ_BLOCK ((size_t)64 * 1024)

static const unsigned char zstd_magic[4] = {0x28, 0xB5, 0x2F, 0xFD}; /* 0xFD2FB528, LE */

bool log_is_zstd(int fd, off_t size)
{
	unsigned char head[4];
	return size >= 4 && fd_pread_all(fd, head, sizeof(head), 0) == 0 &&
	       memcmp(head, zstd_magic, sizeof(head)) == 0;
}

void line_reader_done(line_reader *r)
{
	free(r->buf);
	free(r->in);
	ZSTD_freeDCtx(r->dctx);
}

static int read_fail(line_reader *r, int err, dsb_error *reterr)
{
	return dsb_fail_errno(reterr, DSB_E_IO, -err, "%s: cannot read", r->path);
}

static int zstd_fail(line_reader *r, dsb_error *reterr, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int zstd_fail(line_reader *r, dsb_error *reterr, const char *fmt, ...)
{
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return dsb_fail(reterr, DSB_E_SESSION_INVALID, "%s: corrupt Zstandard session log: %s",
			r->path, text);
}

int line_reader_init(line_reader *r, int fd, const char *path, dsb_error *reterr)
{
	*r = (line_reader){.fd = fd, .path = path};

	struct stat st;
	if (fstat(fd, &st) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot stat", path);
	if (!S_ISREG(st.st_mode))
		return dsb_fail(reterr, DSB_E_IO, "%s: not a regular file", path);
	r->size = st.st_size;

	unsigned char magic[4];
	if (r->size >= 4) {
		int k = fd_pread_all(fd, magic, sizeof(magic), 0);
		if (k < 0)
			return read_fail(r, k, reterr);
		r->zstd = memcmp(magic, zstd_magic, sizeof(magic)) == 0;
	}
	r->cap = READ_BLOCK;
	r->buf = malloc(r->cap);
	if (r->zstd) {
		r->in = malloc(READ_BLOCK);
		r->dctx = ZSTD_createDCtx();
		/* A hostile frame may not make us reserve more than a real log ever needs. */
		if (r->dctx)
			(void)ZSTD_DCtx_setParameter(r->dctx, ZSTD_d_windowLogMax, 24);
	}
	if (!r->buf || (r->zstd && (!r->in || !r->dctx)))
		return log_no_memory(reterr, path);
	return 0;
}

/* Makes room after buf[len]: drops what was handed out, else grows up to LOG_LINE_MAX + 1. */
static int reader_reserve(line_reader *r, dsb_error *reterr)
{
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->len - r->start);
		r->len -= r->start;
		r->scan -= r->start;
		r->start = 0;
	}
	if (r->len < r->cap)
		return 0;
	/* A full buffer without a newline: the line is longer than any we accept. */
	if (r->cap > LOG_LINE_MAX)
		return dsb_fail(reterr, DSB_E_SESSION_INVALID,
				"%s:%zu: corrupt session log: line longer than %zu bytes", r->path,
				r->line_no + 1, LOG_LINE_MAX);
	size_t cap = r->cap * 2 > LOG_LINE_MAX ? LOG_LINE_MAX + 1 : r->cap * 2;
	char *buf = realloc(r->buf, cap);
	if (!buf)
		return log_no_memory(reterr, r->path);
	r->buf = buf;
	r->cap = cap;
	return 0;
}

/* Appends more of a plain file. 1 on progress, 0 at its end. */
static int fill_plain(line_reader *r, dsb_error *reterr)
{
	if (r->file_pos >= r->size)
		return 0;
	int k = reader_reserve(r, reterr);
	if (k < 0)
		return k;
	size_t want = r->cap - r->len;
	if ((off_t)want > r->size - r->file_pos)
		want = (size_t)(r->size - r->file_pos);
	ssize_t n;
	do
		n = pread(r->fd, r->buf + r->len, want, r->file_pos);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return read_fail(r, -errno, reterr);
	if (n == 0) {
		r->size = r->file_pos; /* it shrank under us: it ends here */
		return 0;
	}
	r->len += (size_t)n;
	r->file_pos += n;
	return 1;
}

/*
 * Walks the frame at @start through its headers without decoding it, as scanZstdFrames() does.
 * Returns 1 and its end, 0 when the file ends inside it (a torn frame), or an error for a
 * foreign magic number or a reserved bit (DSH refuses those rather than skip them).
 */
static int probe_frame(line_reader *r, off_t start, off_t *ret_end, dsb_error *reterr)
{
	/* magic, descriptor, window, dictionary id, content size: at most 4 + 1 + 1 + 4 + 8 */
	unsigned char h[18];
	off_t avail = r->size - start;
	if (avail < 4)
		return 0;
	size_t n = avail < (off_t)sizeof(h) ? (size_t)avail : sizeof(h);
	int k = fd_pread_all(r->fd, h, n, start);
	if (k < 0)
		return read_fail(r, k, reterr);
	if (memcmp(h, zstd_magic, sizeof(zstd_magic)) != 0)
		return zstd_fail(r, reterr, "invalid frame magic at byte %lld", (long long)start);
	if (avail < 5)
		return 0;
	unsigned d = h[4];
	if (d & 0x18)
		return zstd_fail(r, reterr, "reserved frame-header bit at byte %lld",
				 (long long)start + 4);
	bool single_segment = d & 0x20, checksum = d & 0x04;
	unsigned size_flag = d >> 6, dict_flag = d & 0x03;
	off_t off = start + 5 + (single_segment ? 0 : 1) + (dict_flag == 3 ? 4 : dict_flag) +
		    (size_flag == 0 ? (single_segment ? 1 : 0) : 1 << size_flag);
	if (off > r->size)
		return 0;

	for (;;) {
		unsigned char b[3];
		if (r->size - off < 3)
			return 0;
		k = fd_pread_all(r->fd, b, sizeof(b), off);
		if (k < 0)
			return read_fail(r, k, reterr);
		uint32_t block = b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
		unsigned type = (block >> 1) & 0x03;
		if (type == 3)
			return zstd_fail(r, reterr, "reserved block type at byte %lld",
					 (long long)off);
		off_t payload = type == 1 ? 1 : (off_t)(block >> 3); /* RLE: one byte */
		off += 3;
		if (r->size - off < payload)
			return 0;
		off += payload;
		if (block & 1)
			break;
	}
	if (checksum) {
		if (r->size - off < 4)
			return 0;
		off += 4;
	}
	*ret_end = off;
	return 1;
}

/* Appends more text of the zstd frames. 1 on progress (or a frame end), 0 at the end. */
static int fill_zstd(line_reader *r, dsb_error *reterr)
{
	if (!r->in_frame) {
		if (r->file_pos >= r->size || r->torn_frame)
			return 0;
		int k = probe_frame(r, r->file_pos, &r->frame_end, reterr);
		if (k < 0)
			return k;
		if (k == 0) {
			r->torn_frame = true;
			return 0;
		}
		r->frame_start = r->file_pos;
		r->in_frame = true;
		r->in_pos = r->in_len = 0;
		(void)ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
	}
	int k = reader_reserve(r, reterr);
	if (k < 0)
		return k;

	for (;;) {
		if (r->in_pos == r->in_len && r->file_pos < r->frame_end) {
			size_t n = READ_BLOCK;
			if ((off_t)n > r->frame_end - r->file_pos)
				n = (size_t)(r->frame_end - r->file_pos);
			k = fd_pread_all(r->fd, r->in, n, r->file_pos);
			if (k < 0)
				return read_fail(r, k, reterr);
			r->in_pos = 0;
			r->in_len = n;
			r->file_pos += (off_t)n;
		}
		ZSTD_outBuffer out = {r->buf + r->len, r->cap - r->len, 0};
		ZSTD_inBuffer in = {r->in, r->in_len, r->in_pos};
		size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
		r->in_pos = in.pos;
		r->len += out.pos;
		if (ZSTD_isError(ret))
			return zstd_fail(r, reterr, "frame at byte %lld: %s",
					 (long long)r->frame_start, ZSTD_getErrorName(ret));
		if (ret == 0) {
			/* The walk and the decoder must agree on where the frame ends. */
			if (r->in_pos != r->in_len || r->file_pos != r->frame_end)
				return zstd_fail(r, reterr,
						 "frame at byte %lld ends before its last block",
						 (long long)r->frame_start);
			r->in_frame = false;
			r->frames++;
			r->boundary_text = r->text_pos + (off_t)(r->len - r->start);
			r->boundary_file = r->frame_end;
			if (r->len == r->start)
				r->committed = r->boundary_file;
			return 1;
		}
		if (out.pos > 0)
			return 1;
		if (r->in_pos == r->in_len && r->file_pos == r->frame_end)
			return zstd_fail(r, reterr, "frame at byte %lld ends inside a block",
					 (long long)r->frame_start);
	}
}

int line_reader_next(line_reader *r, const char **ret_line, size_t *ret_len, dsb_error *reterr)
{
	for (;;) {
		char *nl = memchr(r->buf + r->scan, '\n', r->len - r->scan);
		if (nl) {
			size_t n = (size_t)(nl - (r->buf + r->start));
			*ret_line = r->buf + r->start;
			*ret_len = n;
			r->start = r->scan = r->start + n + 1;
			r->text_pos += (off_t)n + 1;
			r->line_no++;
			if (!r->zstd)
				r->committed = r->text_pos;
			else if (r->frames > 0 && r->text_pos == r->boundary_text)
				r->committed = r->boundary_file;
			return 1;
		}
		r->scan = r->len;
		int k = r->zstd ? fill_zstd(r, reterr) : fill_plain(r, reterr);
		if (k <= 0)
			return k;
	}
}

int line_reader_end_first_frame(line_reader *r, dsb_error *reterr)
{
	int k = 0;
	while (r->frames == 0 && (k = fill_zstd(r, reterr)) > 0)
		;
	return k < 0 ? k : 0;
}

void line_reader_seek(line_reader *r, off_t offset, size_t lines)
{
	r->start = r->scan = r->len = 0;
	r->file_pos = r->text_pos = r->committed = offset;
	r->line_no = lines;
}
