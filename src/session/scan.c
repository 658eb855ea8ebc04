/* SPDX-License-Identifier: MIT */
/*
 * The forward scanner of DSH's session logs (spec §3.6): the header line, then every event line
 * in order, plain JSONL or concatenated zstd frames. It is the one place that decides what DSH
 * would accept as a log, so the rules follow DSH's reader (session-persistence-jsonl format.ts
 * and zstd.ts, chunk-rows.ts) and its messages are DSH's texts. A small line reader turns the
 * file into complete lines in bounded memory (the longest line); the record checks sit on top.
 * Lines are decoded with JSON.parse() semantics, as far as jansson can follow them, because a
 * log DSH reads must read here too, and a log DSH refuses must be refused here too.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include <dsb/policy.h>

#include "session.h"

/* File bytes read at once, and the first size of the line buffer. */
#define READ_BLOCK ((size_t)64 * 1024)

/* Number.MAX_SAFE_INTEGER: DSH's integers are doubles, exact only up to here. */
#define JS_MAX_SAFE_INTEGER INT64_C(9007199254740991)

static const unsigned char zstd_magic[4] = {0x28, 0xB5, 0x2F, 0xFD}; /* 0xFD2FB528, LE */

/* --- JavaScript's view of JSON values ------------------------------------------------------ */

/* A JSON integer as JavaScript holds it: exact within the safe range, a double beyond. */
static int js_integer_append(strbuf *sb, json_int_t v)
{
	if (v >= -JS_MAX_SAFE_INTEGER && v <= JS_MAX_SAFE_INTEGER)
		return strbuf_printf(sb, "%" JSON_INTEGER_FORMAT, v);
	return js_number_append(sb, (double)v);
}

/*
 * String(@v), as a template literal interpolates it; NULL is undefined. Recursion (here and in
 * js_stringify_append()) is bounded by the nesting jansson's parser accepts (2048).
 */
/* NOLINTNEXTLINE(misc-no-recursion) */
static int js_string_append(strbuf *sb, const json_t *v)
{
	if (!v)
		return strbuf_puts(sb, "undefined");
	switch (json_typeof(v)) {
	case JSON_STRING:
		return strbuf_append(sb, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return js_integer_append(sb, json_integer_value(v));
	case JSON_REAL:
		return js_number_append(sb, json_real_value(v));
	case JSON_TRUE:
		return strbuf_puts(sb, "true");
	case JSON_FALSE:
		return strbuf_puts(sb, "false");
	case JSON_NULL:
		return strbuf_puts(sb, "null");
	case JSON_OBJECT:
		return strbuf_puts(sb, "[object Object]");
	case JSON_ARRAY: {
		/* Array.prototype.join(","): null elements print as nothing. */
		int r = 0;
		for (size_t i = 0; r >= 0 && i < json_array_size(v); i++) {
			const json_t *e = json_array_get(v, i);
			if (i > 0)
				r = strbuf_putc(sb, ',');
			if (r >= 0 && !json_is_null(e))
				r = js_string_append(sb, e);
		}
		return r;
	}
	}
	return -EINVAL;
}

/* JSON.stringify(@v) (compact; NULL is undefined), as DSH's invariant messages quote values. */
/* NOLINTNEXTLINE(misc-no-recursion) */
static int js_stringify_append(strbuf *sb, const json_t *v)
{
	if (!v)
		return strbuf_puts(sb, "undefined");
	int r = 0;
	switch (json_typeof(v)) {
	case JSON_STRING:
		return json_quote_append(sb, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
	case JSON_REAL:
	case JSON_TRUE:
	case JSON_FALSE:
	case JSON_NULL:
		return js_string_append(sb, v);
	case JSON_ARRAY:
		r = strbuf_putc(sb, '[');
		for (size_t i = 0; r >= 0 && i < json_array_size(v); i++) {
			if (i > 0)
				r = strbuf_putc(sb, ',');
			if (r >= 0)
				r = js_stringify_append(sb, json_array_get(v, i));
		}
		return r >= 0 ? strbuf_putc(sb, ']') : r;
	case JSON_OBJECT: {
		const char *key;
		const json_t *value;
		bool first = true;
		r = strbuf_putc(sb, '{');
		json_object_foreach((json_t *)v, key, value)
		{
			if (r >= 0 && !first)
				r = strbuf_putc(sb, ',');
			if (r >= 0)
				r = json_quote_append(sb, key, strlen(key));
			if (r >= 0)
				r = strbuf_putc(sb, ':');
			if (r >= 0)
				r = js_stringify_append(sb, value);
			first = false;
		}
		return r >= 0 ? strbuf_putc(sb, '}') : r;
	}
	}
	return -EINVAL;
}

/* Number.isSafeInteger(@v), with the value. A JSON real like 5.0 is the JS number 5. */
static bool js_safe_integer(const json_t *v, int64_t *ret)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < -JS_MAX_SAFE_INTEGER || i > JS_MAX_SAFE_INTEGER)
			return false;
		*ret = i;
		return true;
	}
	if (!json_is_real(v))
		return false;
	double d = json_real_value(v);
	/* Range first, so the conversion is defined; no libm needed. */
	if (!isfinite(d) || d < -(double)JS_MAX_SAFE_INTEGER || d > (double)JS_MAX_SAFE_INTEGER ||
	    (double)(int64_t)d != d)
		return false;
	*ret = (int64_t)d;
	return true;
}

/* A safe non-negative integer that is not -0, as isHeaderLine() wants createdAt. */
static bool js_count(const json_t *v, uint64_t *ret)
{
	int64_t i;
	if (!js_safe_integer(v, &i) || i < 0 || (json_is_real(v) && signbit(json_real_value(v))))
		return false;
	*ret = (uint64_t)i;
	return true;
}

/* @v === @n for a JSON value and a count below 2^53. */
static bool js_equals_count(const json_t *v, uint64_t n)
{
	if (json_is_integer(v))
		return json_integer_value(v) >= 0 && (uint64_t)json_integer_value(v) == n;
	return json_is_real(v) && json_real_value(v) == (double)n;
}

/*
 * JSON.parse() of @len bytes, as far as jansson can follow it: a duplicate key keeps the last
 * value, "\u0000" is allowed, bytes that are not UTF-8 read as U+FFFD (Node decodes the file as
 * UTF-8 before parsing it), and an integer past int64 becomes a double as every JS number is.
 * Returns 0 and a new reference, -EINVAL when the text is not JSON, -ENOMEM.
 */
int log_parse_json(const char *text, size_t len, json_t **ret)
{
	_cleanup_free_ char *clean = NULL;
	size_t flags = JSON_ALLOW_NUL | JSON_DECODE_ANY;

	json_seed();
	for (;;) {
		json_error_t err;
		json_t *v = json_loadb(text, len, flags, &err);
		if (v) {
			*ret = v;
			return 0;
		}
		enum json_error_code code = json_error_code(&err);
		if (code == json_error_out_of_memory)
			return -ENOMEM;
		if (code == json_error_invalid_utf8 && !clean) {
			int r = utf8_sanitize(text, len, &clean, &len);
			if (r < 0)
				return r;
			text = clean;
		} else if (code == json_error_numeric_overflow &&
			   !(flags & JSON_DECODE_INT_AS_REAL))
			flags |= JSON_DECODE_INT_AS_REAL;
		else
			return -EINVAL;
	}
}

/* --- the header line ----------------------------------------------------------------------- */

void log_header_done(log_header *h)
{
	if (!h)
		return;
	free(h->id);
	free(h->cwd);
	free(h->parent_session);
	free(h->agent_preset);
	*h = (log_header){0};
}

static int header_fail(dsb_error *reterr, const char *path, const char *text)
{
	return dsb_fail(reterr, DSB_E_SESSION_INVALID, "%s: %s", path, text);
}

static int no_memory(dsb_error *reterr, const char *path)
{
	return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
}

/*
 * sessionFormatVersionRefusal(): a numeric version other than ours is refused before the shape
 * is checked, so the user of a newer log sees "upgrade the harness", never "corrupt".
 */
static int refuse_foreign_version(const json_t *v, const char *path, dsb_error *reterr)
{
	const json_t *version = json_object_get(v, "version");
	if (!json_is_number(version) || json_number_value(version) == LOG_FORMAT_VERSION)
		return 0;

	bool newer = json_number_value(version) > LOG_FORMAT_VERSION;
	strbuf sb = STRBUF_INIT;
	int r = strbuf_puts(&sb, "session \"");
	if (r >= 0)
		r = js_string_append(&sb, json_object_get(v, "id"));
	if (r >= 0)
		r = strbuf_puts(&sb, "\" uses log format v");
	if (r >= 0)
		r = js_string_append(&sb, version);
	if (r >= 0 && newer)
		r = strbuf_printf(&sb,
				  ", but this harness reads only v%d: the log was written by a "
				  "newer harness \u2014 upgrade the harness to open it",
				  LOG_FORMAT_VERSION);
	else if (r >= 0)
		r = strbuf_printf(&sb,
				  ", older than the supported v%d, and this build ships no upgrade "
				  "path for it",
				  LOG_FORMAT_VERSION);
	_cleanup_free_ char *text = r >= 0 ? strbuf_take(&sb) : NULL;
	strbuf_done(&sb);
	if (!text)
		return no_memory(reterr, path);
	return header_fail(reterr, path, text);
}

/* An optional key: absent, or a string. */
static bool optional_string(const json_t *v, const char *key)
{
	const json_t *s = json_object_get(v, key);
	return !s || json_is_string(s);
}

/* Why a line is not a header: the field at fault, or none when it is no header at all. */
typedef struct header_fault {
	const char *field; /* NULL: not an object, or a "type" other than "session" */
	bool missing;	   /* absent, rather than present with a value of the wrong kind */
} header_fault;

static bool header_refuse(header_fault *fault, const json_t *v, const char *field)
{
	*fault = (header_fault){.field = field, .missing = !json_object_get(v, field)};
	return false;
}

/*
 * isHeaderLine(), plus what a C struct needs: cwd and parentSession strings and seedLength a
 * count where present (DSH trusts those three, but nothing it writes breaks them). When it is
 * not a header, *@fault names the first field at fault (the required ones in DSH's order).
 */
static bool is_header_line(const json_t *v, log_header *h, header_fault *fault)
{
	const json_t *type = json_object_get(v, "type");
	const json_t *origin = json_object_get(v, "origin");
	const json_t *seed = json_object_get(v, "seedLength");

	*fault = (header_fault){0};
	if (!json_is_object(v))
		return false;
	if (!type)
		return header_refuse(fault, v, "type");
	if (!json_is_string(type) || strcmp(json_string_value(type), "session") != 0 ||
	    json_string_length(type) != strlen("session"))
		return false;
	if (!json_is_number(json_object_get(v, "version")))
		return header_refuse(fault, v, "version");
	if (!json_is_string(json_object_get(v, "id")))
		return header_refuse(fault, v, "id");
	if (!js_count(json_object_get(v, "createdAt"), &h->created_at))
		return header_refuse(fault, v, "createdAt");
	if (!js_count(json_object_get(v, "delegationDepth"), &h->delegation_depth))
		return header_refuse(fault, v, "delegationDepth");
	if (origin &&
	    !(json_is_string(origin) && json_string_length(origin) == strlen("subagent") &&
	      strcmp(json_string_value(origin), "subagent") == 0))
		return header_refuse(fault, v, "origin");
	if (seed && !js_count(seed, &h->seed_length))
		return header_refuse(fault, v, "seedLength");
	h->has_seed_length = seed != NULL;
	h->origin_subagent = origin != NULL;
	static const char *const optional[] = {"agentPreset", "cwd", "parentSession"};
	for (size_t i = 0; i < ELEMENTSOF(optional); i++)
		if (!optional_string(v, optional[i]))
			return header_refuse(fault, v, optional[i]);
	return true;
}

/* A copy of the string at @key (NULL when absent); -EINVAL for one holding a NUL. */
static int copy_string(const json_t *v, const char *key, char **ret)
{
	const json_t *s = json_object_get(v, key);
	if (!s)
		return 0;
	if (strlen(json_string_value(s)) != json_string_length(s))
		return -EINVAL;
	*ret = strdup(json_string_value(s));
	return *ret ? 0 : -ENOMEM;
}

int log_header_parse(const char *line, size_t len, const char *path, log_header *ret_header,
		     dsb_error *reterr)
{
	if (len == 0)
		return header_fail(reterr, path, "empty or header-less session log");

	_cleanup_(json_decrefp) json_t *v = NULL;
	int r = log_parse_json(line, len, &v);
	if (r == -ENOMEM)
		return no_memory(reterr, path);
	if (r < 0)
		return header_fail(reterr, path,
				   "corrupt session log: header line is not valid JSON");
	if (json_is_object(v)) {
		r = refuse_foreign_version(v, path, reterr);
		if (r < 0)
			return r;
	}

	_cleanup_(log_header_done) log_header h = {0};
	header_fault fault;
	if (!is_header_line(v, &h, &fault)) {
		static const char not_header[] =
			"corrupt session log: first line is not a session header";
		if (!fault.field)
			return header_fail(reterr, path, not_header);
		return dsb_fail(reterr, DSB_E_SESSION_INVALID, "%s: %s (%s field \"%s\")", path,
				not_header, fault.missing ? "missing required" : "invalid",
				fault.field);
	}
	if (json_object_get(v, "sandboxMode") || json_object_get(v, "approvalPolicy"))
		return header_fail(reterr, path,
				   "session header uses retired policy baseline fields");

	r = copy_string(v, "id", &h.id);
	if (r >= 0)
		r = copy_string(v, "cwd", &h.cwd);
	if (r >= 0)
		r = copy_string(v, "parentSession", &h.parent_session);
	if (r >= 0)
		r = copy_string(v, "agentPreset", &h.agent_preset);
	if (r == -ENOMEM)
		return no_memory(reterr, path);
	/* JSON.parse() takes "\u0000"; a C string cannot hold it. Refuse rather than cut. */
	if (r < 0)
		return header_fail(reterr, path,
				   "session header holds a NUL character, which this build cannot "
				   "represent");

	if (ret_header) {
		*ret_header = h;
		h = (log_header){0};
	}
	return 0;
}

static int put_key_string(strbuf *sb, const char *key, const char *value)
{
	int r = strbuf_printf(sb, ",\"%s\":", key);
	return r < 0 ? r : json_quote_append(sb, value, strlen(value));
}

int log_header_format(const log_header *h, char **ret_line)
{
	if (!h || !h->id)
		return -EINVAL;

	/* toHeaderLine() then JSON.stringify(): this key order, absent optional keys omitted. */
	strbuf sb = STRBUF_INIT;
	int r = strbuf_printf(&sb,
			      "{\"type\":\"session\",\"version\":%d,\"id\":", LOG_FORMAT_VERSION);
	if (r >= 0)
		r = json_quote_append(&sb, h->id, strlen(h->id));
	if (r >= 0)
		r = strbuf_printf(&sb, ",\"createdAt\":%" PRIu64, h->created_at);
	if (r >= 0 && h->cwd)
		r = put_key_string(&sb, "cwd", h->cwd);
	if (r >= 0 && h->parent_session)
		r = put_key_string(&sb, "parentSession", h->parent_session);
	if (r >= 0 && h->has_seed_length)
		r = strbuf_printf(&sb, ",\"seedLength\":%" PRIu64, h->seed_length);
	if (r >= 0 && h->origin_subagent)
		r = strbuf_puts(&sb, ",\"origin\":\"subagent\"");
	if (r >= 0)
		r = strbuf_printf(&sb, ",\"delegationDepth\":%" PRIu64, h->delegation_depth);
	if (r >= 0 && h->agent_preset)
		r = put_key_string(&sb, "agentPreset", h->agent_preset);
	if (r >= 0)
		r = strbuf_putc(&sb, '}');
	char *line = r >= 0 ? strbuf_take(&sb) : NULL;
	strbuf_done(&sb);
	if (!line)
		return -ENOMEM;
	*ret_line = line;
	return 0;
}

/* --- the line reader ----------------------------------------------------------------------- */

/*
 * Complete lines of the log's text, the file itself or its zstd frames decoded. The buffer holds
 * the line being read and what was read past it; it grows only as far as the longest line.
 *
 * zstd: DSH writes the header alone in a first frame, then a frame per append batch, and treats
 * a frame the file ends inside as a torn tail. Each frame is walked structurally before it is
 * decoded (scanZstdFrames()), so no line of a torn frame is ever handed out and nothing has to
 * be held back to find out. committed then moves only at frame ends that are line ends.
 */
typedef struct line_reader {
	int fd;
	const char *path;
	off_t size;	/* the file size seen at the start: later appends are not read */
	off_t file_pos; /* the next file byte to read */

	char *buf; /* [start, len) not handed out yet, of which [scan, len) not searched */
	size_t cap, start, scan, len;
	off_t text_pos;	 /* the text offset of buf[start] */
	size_t line_no;	 /* lines handed out */
	off_t committed; /* file bytes up to the end of the last line that ends a unit */

	bool zstd;
	ZSTD_DCtx *dctx;
	unsigned char *in;
	size_t in_pos, in_len;
	bool in_frame;
	off_t frame_start, frame_end; /* the frame being decoded, or the last one */
	size_t frames;		      /* frames decoded to their end */
	off_t boundary_text;	      /* where the last of them ended: text offset */
	off_t boundary_file;	      /* ... and file offset */
	bool torn_frame;	      /* the file ends inside a frame */
} line_reader;

static void reader_done(line_reader *r)
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

static int reader_init(line_reader *r, int fd, const char *path, dsb_error *reterr)
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
		return no_memory(reterr, path);
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
		return no_memory(reterr, r->path);
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

/*
 * The next complete line (without its newline), valid until the next call. Returns 1, or 0 at
 * the end of the text, where buf[start, len) is what follows the last newline.
 */
static int reader_next(line_reader *r, const char **ret_line, size_t *ret_len, dsb_error *reterr)
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

/* The first line, checked as parseHeaderRecord() and assertZstdHeaderFrame() check it. */
static int read_header(line_reader *r, log_header *ret_header, dsb_error *reterr)
{
	const char *line = NULL;
	size_t len = 0;
	int k = reader_next(r, &line, &len, reterr);
	if (k < 0)
		return k;
	if (!r->zstd) {
		if (k == 0)
			return header_fail(reterr, r->path, "empty or header-less session log");
		return log_header_parse(line, len, r->path, ret_header, reterr);
	}

	static const char not_alone[] =
		"corrupt Zstandard session log: first frame is not exactly one header line";
	if (k == 0)
		return header_fail(reterr, r->path,
				   r->frames == 0 ? "empty or header-less Zstandard session log"
						  : not_alone);
	/* Decoding the rest of the first frame moves the buffer: keep the line. */
	_cleanup_free_ char *copy = malloc(len + 1);
	if (!copy)
		return no_memory(reterr, r->path);
	memcpy(copy, line, len);
	while (r->frames == 0 && (k = fill_zstd(r, reterr)) > 0)
		;
	if (k < 0)
		return k;
	if (r->frames != 1 || r->boundary_text != r->text_pos)
		return header_fail(reterr, r->path, not_alone);
	return log_header_parse(copy, len, r->path, ret_header, reterr);
}

/* --- records ------------------------------------------------------------------------------- */

typedef struct scan_state {
	const char *path;
	log_record_fn fn;
	void *userdata;
	uint64_t n_events;
	log_surface surface;
} scan_state;

static void scan_state_done(scan_state *s)
{
	log_surface_done(&s->surface);
}

static bool has_exact_keys(const json_t *v, const char *const *keys, size_t n)
{
	if (json_object_size(v) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!json_object_get(v, keys[i]))
			return false;
	return true;
}

/*
 * decodeStorageRecord()'s checks of a packed chunk row (chunk-rows.ts validateRow()). Returns
 * its member count, or 0 when it is malformed. seq0 and time0 may be absent: DSH's snapshot
 * fixtures strip them as they strip every seq and time. Rows of any size decode, though DSH
 * packs only runs of three or more.
 */
static size_t row_members(const json_t *row, bool tool_call)
{
	static const char *const envelope[] = {"type", "seq0", "time0", "data"};
	static const char *const text_keys[] = {"turn", "step", "index", "dt", "texts"};
	static const char *const call_keys[] = {"turn", "step", "index", "id",
						"name", "dt",	"args"};
	static const char *const call_keys_unnamed[] = {"turn", "step", "index",
							"id",	"dt",	"args"};

	const char *key;
	const json_t *value;
	json_object_foreach((json_t *)row, key, value)
	{
		size_t i = 0;
		while (i < ELEMENTSOF(envelope) && strcmp(key, envelope[i]) != 0)
			i++;
		if (i == ELEMENTSOF(envelope))
			return 0;
	}
	const json_t *seq0 = json_object_get(row, "seq0"), *time0 = json_object_get(row, "time0");
	int64_t first_seq = 0, time = 0;
	if (seq0 && (!js_safe_integer(seq0, &first_seq) || first_seq < 0))
		return 0;
	if (time0 && !js_safe_integer(time0, &time))
		return 0;

	const json_t *data = json_object_get(row, "data");
	if (!json_is_object(data))
		return 0;
	if (tool_call) {
		bool named = has_exact_keys(data, call_keys, ELEMENTSOF(call_keys));
		if (!named &&
		    !has_exact_keys(data, call_keys_unnamed, ELEMENTSOF(call_keys_unnamed)))
			return 0;
		if (!json_is_string(json_object_get(data, "id")) ||
		    (named && !json_is_string(json_object_get(data, "name"))))
			return 0;
	} else if (!has_exact_keys(data, text_keys, ELEMENTSOF(text_keys)))
		return 0;
	if (!json_is_number(json_object_get(data, "turn")) ||
	    !json_is_number(json_object_get(data, "step")) ||
	    !json_is_number(json_object_get(data, "index")))
		return 0;

	const json_t *members = json_object_get(data, tool_call ? "args" : "texts");
	const json_t *dt = json_object_get(data, "dt");
	size_t n = json_array_size(members);
	if (!json_is_array(members) || n == 0 || !json_is_array(dt) || json_array_size(dt) != n - 1)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!json_is_string(json_array_get(members, i)))
			return 0;
	/* Member seqs and times must stay exact, as the encoder only packs such runs. */
	if (first_seq + (int64_t)(n - 1) > JS_MAX_SAFE_INTEGER)
		return 0;
	for (size_t i = 0; i < n - 1; i++) {
		int64_t gap;
		if (!js_safe_integer(json_array_get(dt, i), &gap))
			return 0;
		if (!time0)
			continue;
		time += gap; /* both within ±2^53: no overflow */
		if (time > JS_MAX_SAFE_INTEGER || time < -JS_MAX_SAFE_INTEGER)
			return 0;
	}
	return n;
}

static bool is_row_type(const char *type)
{
	return strcmp(type, "text-chunks") == 0 || strcmp(type, "reasoning-chunks") == 0 ||
	       strcmp(type, "tool-call-chunks") == 0;
}

/* A string value that is exactly one of the names @from_string() knows (no NUL inside). */
static bool known_name(const json_t *v, int (*from_string)(const char *))
{
	return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v) &&
	       from_string(json_string_value(v)) >= 0;
}

static int mode_from_string(const char *s)
{
	return dsb_mode_from_string(s);
}

static int approval_from_string(const char *s)
{
	return dsb_approval_policy_from_string(s);
}

/*
 * The package invariants of spec §3.5 that concern policy values: a mode or approval policy
 * outside the vocabulary is refused, never read as a default (fail closed).
 */
static int check_invariants(const scan_state *s, const char *type, const json_t *v, size_t line,
			    dsb_error *reterr)
{
	const char *key, *what;
	int (*from_string)(const char *);
	if (strcmp(type, "sandbox/mode") == 0) {
		key = "mode";
		what = "sandbox/mode carries unknown mode ";
		from_string = mode_from_string;
	} else if (strcmp(type, "approval/policy") == 0) {
		key = "policy";
		what = "approval/policy carries unknown policy ";
		from_string = approval_from_string;
	} else
		return 0;

	const json_t *data = json_object_get(v, "data");
	const json_t *value = json_is_object(data) ? json_object_get(data, key) : NULL;
	if (known_name(value, from_string))
		return 0;
	strbuf sb = STRBUF_INIT;
	int r = js_stringify_append(&sb, value);
	_cleanup_free_ char *text = r >= 0 ? strbuf_take(&sb) : NULL;
	strbuf_done(&sb);
	if (!text)
		return no_memory(reterr, s->path);
	return dsb_fail(reterr, DSB_E_INVARIANT, "%s:%zu: %s%s", s->path, line, what, text);
}

static int unparsable(const scan_state *s, size_t line, dsb_error *reterr)
{
	return dsb_fail(reterr, DSB_E_SESSION_INVALID,
			"%s:%zu: corrupt session log: unparsable committed event at line %zu",
			s->path, line, line);
}

/* One complete line after the header: decoded, checked, handed to @fn. 1 when @fn stops. */
static int scan_record(scan_state *s, const char *text, size_t len, size_t line, off_t offset,
		       dsb_error *reterr)
{
	_cleanup_(json_decrefp) json_t *v = NULL;
	int r = log_parse_json(text, len, &v);
	if (r == -ENOMEM)
		return no_memory(reterr, s->path);
	/*
	 * A record needs a string type. One holding a NUL would read as a shorter name in C (a
	 * "sandbox/mode\u0000x" the folds would take for a mode switch): refused as well.
	 */
	const json_t *type_json = r >= 0 ? json_object_get(v, "type") : NULL;
	const char *type = json_string_value(type_json);
	if (!type || strlen(type) != json_string_length(type_json))
		return unparsable(s, line, reterr);

	size_t count = 1;
	const char *seq_key = "seq";
	if (is_row_type(type)) {
		count = row_members(v, strcmp(type, "tool-call-chunks") == 0);
		if (count == 0)
			return unparsable(s, line, reterr);
		seq_key = "seq0";
	}

	/* Without seq (the fixtures strip it) an event takes its position; with one, must match. */
	const json_t *seq = json_object_get(v, seq_key);
	if (seq && !js_equals_count(seq, s->n_events)) {
		/* An integer is printed exactly, never through a double (2^53 + 1 stays itself). */
		strbuf sb = STRBUF_INIT;
		r = json_is_integer(seq)
			    ? strbuf_printf(&sb, "%" JSON_INTEGER_FORMAT, json_integer_value(seq))
			    : js_string_append(&sb, seq);
		_cleanup_free_ char *got = r >= 0 ? strbuf_take(&sb) : NULL;
		strbuf_done(&sb);
		if (!got)
			return no_memory(reterr, s->path);
		return dsb_fail(reterr, DSB_E_SESSION_INVALID,
				"%s:%zu: corrupt session log: seq gap in committed region at line "
				"%zu (expected %" PRIu64 ", got %s)",
				s->path, line, line, s->n_events, got);
	}
	r = check_invariants(s, type, v, line, reterr);
	if (r < 0)
		return r;

	log_record rec = {
		.seq = s->n_events,
		.count = count,
		.type = type,
		.json = v,
		.text = text,
		.text_len = len,
		.line = line,
		.offset = offset,
	};
	r = log_surface_apply(&s->surface, s->path, &rec, reterr);
	if (r < 0)
		return r;
	s->n_events += count;
	if (!s->fn)
		return 0;
	r = s->fn(&rec, s->userdata, reterr);
	return r < 0 ? r : r > 0;
}

/* log_scan_from() with the caller's state @s, which holds the surface and counts afterwards. */
static int scan_file(int fd, const log_position *from, scan_state *s, log_header *ret_header,
		     log_scan_result *ret_result, dsb_error *reterr)
{
	const char *path = s->path;
	if (fd < 0 || !path)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "log_scan: no file");

	_cleanup_(reader_done) line_reader r = {0};
	int k = reader_init(&r, fd, path, reterr);
	if (k < 0)
		return k;
	_cleanup_(log_header_done) log_header header = {0};
	k = read_header(&r, &header, reterr);
	if (k < 0)
		return k;
	off_t header_end = r.text_pos;

	s->surface.known = true;
	if (from && from->offset != r.text_pos) {
		/* Only a plain log's complete line ends are places to resume at. */
		if (r.zstd || from->offset < r.text_pos || from->offset > r.size || from->lines < 1)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS, "%s: no line ends at byte %jd",
					path, (intmax_t)from->offset);
		r.start = r.scan = r.len = 0;
		r.file_pos = r.text_pos = r.committed = from->offset;
		r.line_no = from->lines;
		s->n_events = from->events;
		s->surface.known = from->events == 0;
	}

	const char *line;
	size_t len;
	int stopped = 0;
	while (!stopped && (k = reader_next(&r, &line, &len, reterr)) > 0) {
		stopped = scan_record(s, line, len, r.line_no, r.text_pos - (off_t)len - 1, reterr);
		if (stopped < 0)
			return stopped;
	}
	if (k < 0)
		return k;

	bool leftover = r.len > r.start;
	/* As readZstdPrefix() asserts: the complete frames end on a line end. */
	if (!stopped && r.zstd && leftover)
		return header_fail(reterr, path,
				   "corrupt Zstandard session log: complete frame contains a torn "
				   "JSONL record");
	if (ret_result)
		*ret_result = (log_scan_result){
			.n_events = s->n_events,
			.last_seq = s->n_events > 0 ? s->n_events - 1 : 0,
			.committed_bytes = r.committed,
			.file_bytes = r.size,
			.torn = !stopped && (r.zstd ? r.torn_frame : leftover),
			.zstd = r.zstd,
			.header_end = header_end,
			.lines = r.line_no,
		};
	if (ret_header) {
		*ret_header = header;
		header = (log_header){0};
	}
	return stopped;
}

int log_scan_from(int fd, const char *path, const log_position *from, log_header *ret_header,
		  log_record_fn fn, void *userdata, log_scan_result *ret_result, dsb_error *reterr)
{
	_cleanup_(scan_state_done) scan_state s = {.path = path, .fn = fn, .userdata = userdata};
	return scan_file(fd, from, &s, ret_header, ret_result, reterr);
}

int log_scan(int fd, const char *path, log_header *ret_header, log_record_fn fn, void *userdata,
	     log_scan_result *ret_result, dsb_error *reterr)
{
	return log_scan_from(fd, path, NULL, ret_header, fn, userdata, ret_result, reterr);
}

int log_check_appended(int fd, const char *path, const log_position *at, const char *line,
		       size_t len, dsb_error *reterr)
{
	_cleanup_(scan_state_done) scan_state s = {.path = path, .n_events = at->events};
	dsb_error why = {0};
	/* The reader's bound on a line (reader_reserve()), with its words. */
	if (len > LOG_LINE_MAX)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"refusing to append an event the log's readers would refuse: "
				"%s:%zu: corrupt session log: line longer than %zu bytes",
				path, at->lines + 1, LOG_LINE_MAX);
	int r = scan_record(&s, line, len, at->lines + 1, at->offset, &why);
	if (r == LOG_RESCAN) {
		/* A replacement is checked against the surface so far: the whole log's. */
		log_surface_done(&s.surface);
		s = (scan_state){.path = path};
		r = scan_file(fd, NULL, &s, NULL, NULL, reterr);
		if (r < 0)
			return r;
		if (s.n_events != at->events)
			return dsb_fail(reterr, DSB_E_IO, "%s: changed while appending", path);
		r = scan_record(&s, line, len, at->lines + 1, at->offset, &why);
	}
	if (r == -(int)DSB_E_NO_MEMORY)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
	if (r < 0)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"refusing to append an event the log's readers would refuse: %s",
				why.message);
	return 0;
}
