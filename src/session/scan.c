/* SPDX-License-Identifier: MIT */
/*
 * The forward scanner of DSH's session logs (dsh-compat §3.6): the header line, then every event
 * line in order, plain JSONL or concatenated zstd frames. It is the one place that decides what DSH
 * would accept as a log, so the rules follow DSH's reader (session-persistence-jsonl format.ts
 * and zstd.ts, chunk-rows.ts) and its messages are DSH's texts. The line reader (reader.c) hands
 * it complete lines, the header is header.c's, each line is decoded with JSON.parse() semantics
 * (js.c) and put through the surface rule (surface.c); the record checks are here.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dsb/policy.h>

#include "session.h"

/* The first line, checked as parseHeaderRecord() and assertZstdHeaderFrame() check it. */
static int read_header(line_reader *r, log_header *ret_header, dsb_error *reterr)
{
	const char *line = NULL;
	size_t len = 0;
	int k = line_reader_next(r, &line, &len, reterr);
	if (k < 0)
		return k;
	if (!r->zstd) {
		if (k == 0)
			return log_invalid(reterr, r->path, "empty or header-less session log");
		return log_header_parse(line, len, r->path, ret_header, reterr);
	}

	static const char not_alone[] =
		"corrupt Zstandard session log: first frame is not exactly one header line";
	if (k == 0)
		return log_invalid(reterr, r->path,
				   r->frames == 0 ? "empty or header-less Zstandard session log"
						  : not_alone);
	/* Decoding the rest of the first frame moves the buffer: keep the line. */
	_cleanup_free_ char *copy = malloc(len + 1);
	if (!copy)
		return log_no_memory(reterr, r->path);
	memcpy(copy, line, len);
	k = line_reader_end_first_frame(r, reterr);
	if (k < 0)
		return k;
	if (r->frames != 1 || r->boundary_text != r->text_pos)
		return log_invalid(reterr, r->path, not_alone);
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
 * The package invariants of dsh-compat §3.5 that concern policy values: a mode or approval policy
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
		return log_no_memory(reterr, s->path);
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
		return log_no_memory(reterr, s->path);
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
			return log_no_memory(reterr, s->path);
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

	_cleanup_(line_reader_done) line_reader r = {0};
	int k = line_reader_init(&r, fd, path, reterr);
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
		line_reader_seek(&r, from->offset, from->lines);
		s->n_events = from->events;
		s->surface.known = from->events == 0;
	}

	const char *line;
	size_t len;
	int stopped = 0;
	while (!stopped && (k = line_reader_next(&r, &line, &len, reterr)) > 0) {
		stopped = scan_record(s, line, len, r.line_no, r.text_pos - (off_t)len - 1, reterr);
		if (stopped < 0)
			return stopped;
	}
	if (k < 0)
		return k;

	bool leftover = r.len > r.start;
	/* As readZstdPrefix() asserts: the complete frames end on a line end. */
	if (!stopped && r.zstd && leftover)
		return log_invalid(reterr, path,
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
