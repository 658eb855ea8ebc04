/* SPDX-License-Identifier: MIT */
/*
 * The stdio framing of MCP: one message per line. The reader holds at most one line of the
 * limit's size: a line that passes it is reported once and then skipped up to its newline as it
 * arrives, never buffered, so a client (or anything writing to our input) cannot make the
 * server hold more than the limit, however long the line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

/* How much one read takes at most: the buffer is the limit plus this. */
#define FRAME_CHUNK ((size_t)64 * 1024)

int frame_init(frame_reader *f, size_t max)
{
	*f = (frame_reader){.max = max, .cap = max + FRAME_CHUNK};
	f->buf = malloc(f->cap);
	return f->buf ? 0 : -ENOMEM;
}

void frame_done(frame_reader *f)
{
	free(f->buf);
	*f = (frame_reader){0};
}

int frame_fill(frame_reader *f, int fd)
{
	/* What was handed out is gone: move the rest to the front. */
	if (f->off > 0) {
		memmove(f->buf, f->buf + f->off, f->len - f->off);
		f->len -= f->off;
		f->off = 0;
	}
	size_t room = f->cap - f->len;
	if (room > FRAME_CHUNK)
		room = FRAME_CHUNK;
	ssize_t n;
	do
		n = read(fd, f->buf + f->len, room);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 1 : -errno;
	if (n == 0) {
		f->eof = true;
		return 0;
	}
	f->len += (size_t)n;
	return 1;
}

frame_result frame_next(frame_reader *f, const char **ret_line, size_t *ret_len)
{
	for (;;) {
		char *start = f->buf + f->off;
		size_t held = f->len - f->off;
		char *nl = memchr(start + f->scanned, '\n', held - f->scanned);
		if (f->skipping) {
			/* Drop what arrived of the overlong line, through its newline. */
			f->off = nl ? (size_t)(nl + 1 - f->buf) : f->len;
			f->scanned = 0;
			if (!nl)
				return f->eof ? FRAME_END : FRAME_NEED_MORE;
			f->skipping = false;
			continue;
		}
		if (!nl) {
			f->scanned = held;
			if (held > f->max) {
				/* Reported now, skipped as it comes: never held whole. */
				f->skipping = true;
				f->off = f->len;
				f->scanned = 0;
				return FRAME_TOO_LONG;
			}
			if (!f->eof)
				return FRAME_NEED_MORE;
			if (held == 0)
				return FRAME_END;
			/* The input ended inside a line: that line is the last message. */
			nl = start + held;
		}
		size_t len = (size_t)(nl - start);
		f->off += len + (nl < f->buf + f->len ? 1 : 0);
		f->scanned = 0;
		if (len > f->max) {
			/* A line past the limit that arrived whole in one read: refused all the
			 * same. */
			return FRAME_TOO_LONG;
		}
		if (len > 0 && start[len - 1] == '\r')
			len--;
		*ret_line = start;
		*ret_len = len;
		return FRAME_LINE;
	}
}
