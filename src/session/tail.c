/* SPDX-License-Identifier: MIT */
/*
 * Reading a plain log from its end. The folds (dsh-compat §3.4) want the last event of one type,
 * and an append wants the last seq: both are near the end of a log that may be gigabytes long, so
 * lines are found backwards in fixed-size blocks and only a short prefix of each is looked at
 * ("{"type":"sandbox/mode"" — DSH always writes "type" first). The cost follows the distance to
 * the answer, not the size of the log, and memory is one block plus the matching line.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "session.h"

/* Loads the block that ends just after @pos (inclusive), never reaching below t->lo. */
static int load_block(tail *t, off_t pos)
{
	off_t start = pos + 1 - (off_t)TAIL_BLOCK;
	if (start < t->lo)
		start = t->lo;
	size_t n = (size_t)(pos + 1 - start);
	int r = fd_pread_all(t->fd, t->block, n, start);
	if (r < 0)
		return r;
	t->block_start = start;
	t->block_len = n;
	return 0;
}

/* The offset of the last '\n' in [t->lo, pos], or t->lo - 1 when there is none. */
static int find_newline_back(tail *t, off_t pos, off_t *ret)
{
	while (pos >= t->lo) {
		if (pos < t->block_start || pos >= t->block_start + (off_t)t->block_len) {
			int r = load_block(t, pos);
			if (r < 0)
				return r;
		}
		size_t upto = (size_t)(pos - t->block_start) + 1;
		const char *nl = memrchr(t->block, '\n', upto);
		if (nl) {
			*ret = t->block_start + (nl - t->block);
			return 0;
		}
		pos = t->block_start - 1;
	}
	*ret = t->lo - 1;
	return 0;
}

int tail_init(tail *t, int fd, off_t lo, off_t committed_end)
{
	*t = (tail){.fd = fd, .lo = lo, .next_end = committed_end - 1, .block_start = -1};
	t->block = malloc(TAIL_BLOCK);
	return t->block ? 0 : -ENOMEM;
}

void tail_done(tail *t)
{
	free(t->block);
	t->block = NULL;
}

int tail_prev_line(tail *t, off_t *ret_start, off_t *ret_end)
{
	if (t->next_end < t->lo)
		return 0;
	off_t nl;
	int r = find_newline_back(t, t->next_end - 1, &nl);
	if (r < 0)
		return r;
	*ret_start = nl + 1;
	*ret_end = t->next_end;
	t->next_end = nl;
	return 1;
}

int tail_read(tail *t, off_t start, size_t n, char *buf)
{
	if (start >= t->block_start && start + (off_t)n <= t->block_start + (off_t)t->block_len) {
		memcpy(buf, t->block + (start - t->block_start), n);
		return 0;
	}
	return fd_pread_all(t->fd, buf, n, start);
}

int tail_bounds(int fd, off_t size, off_t *ret_header_end, off_t *ret_committed_end)
{
	/* The header ends at the first newline, found forwards. */
	char buf[4096];
	off_t header_end = -1;
	for (off_t pos = 0; pos < size && header_end < 0;) {
		size_t n = size - pos < (off_t)sizeof(buf) ? (size_t)(size - pos) : sizeof(buf);
		int r = fd_pread_all(fd, buf, n, pos);
		if (r < 0)
			return r;
		const char *nl = memchr(buf, '\n', n);
		if (nl)
			header_end = pos + (nl - buf) + 1;
		pos += (off_t)n;
		if (pos >= (off_t)LOG_LINE_MAX && header_end < 0)
			break;
	}
	if (header_end < 0)
		return -ENODATA;

	/* The committed region ends after the last newline, found backwards. */
	_cleanup_(tail_done) tail t;
	int r = tail_init(&t, fd, header_end, size + 1);
	if (r < 0)
		return r;
	off_t nl;
	r = size > header_end ? find_newline_back(&t, size - 1, &nl) : 0;
	if (r < 0)
		return r;
	*ret_header_end = header_end;
	*ret_committed_end = size > header_end ? nl + 1 : header_end;
	return 0;
}

/* Reads and parses the line [start, end) as one JSON record. */
static int read_record(tail *t, const char *path, off_t start, off_t end, json_t **ret_json,
		       dsb_error *reterr)
{
	size_t len = (size_t)(end - start);
	if (len > LOG_LINE_MAX)
		return dsb_fail(reterr, DSB_E_SESSION_INVALID,
				"%s: corrupt session log: line at byte %jd longer than %zu bytes",
				path, (intmax_t)start, LOG_LINE_MAX);
	_cleanup_free_ char *line = malloc(len ? len : 1);
	if (!line)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
	int r = tail_read(t, start, len, line);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot read", path);
	/* Failure never touches *ret_json: the caller's cleanup owns only what it was given. */
	_cleanup_(json_decrefp) json_t *rec = NULL;
	r = log_parse_json(line, len, &rec);
	if (r == -ENOMEM)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
	if (r < 0 || !json_is_object(rec))
		return dsb_fail(reterr, DSB_E_SESSION_INVALID,
				"%s: corrupt session log: unparsable committed event at byte %jd",
				path, (intmax_t)start);
	*ret_json = TAKE_PTR(rec);
	return 0;
}

int tail_find_last(int fd, const char *path, off_t header_end, off_t committed_end,
		   const char *const *types, size_t n, size_t *ret_which, json_t **ret_record,
		   dsb_error *reterr)
{
	/* The prefixes lines of these types start with, as DSH and we write them. */
	char prefixes[4][256];
	size_t lens[4];
	if (n == 0 || n > ELEMENTSOF(prefixes))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "tail_find_last: 1 to 4 types");
	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *quoted = NULL;
		if (json_quote(types[i], strlen(types[i]), &quoted) < 0)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
		int k = snprintf(prefixes[i], sizeof(prefixes[i]), "{\"type\":%s,", quoted);
		if (k < 0 || (size_t)k >= sizeof(prefixes[i]))
			return dsb_fail(reterr, DSB_E_INVALID_ARGS, "event type too long");
		lens[i] = (size_t)k;
	}

	_cleanup_(tail_done) tail t;
	if (tail_init(&t, fd, header_end, committed_end) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
	off_t start, end;
	char head[256];
	int r;
	while ((r = tail_prev_line(&t, &start, &end)) > 0) {
		size_t len =
			(size_t)(end - start) < sizeof(head) ? (size_t)(end - start) : sizeof(head);
		r = tail_read(&t, start, len, head);
		if (r < 0)
			break;
		for (size_t i = 0; i < n; i++) {
			if (len < lens[i] || memcmp(head, prefixes[i], lens[i]) != 0)
				continue;
			r = read_record(&t, path, start, end, ret_record, reterr);
			if (r < 0)
				return r;
			if (ret_which)
				*ret_which = i;
			return 1;
		}
	}
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot read", path);
	return 0;
}
