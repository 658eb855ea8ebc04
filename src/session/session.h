/* SPDX-License-Identifier: MIT */
/*
 * Internals of the session piece: DSH's JSONL v0 session logs (dsh-compat §3), plain or
 * zstd-framed.
 *
 * Files on floors, each using only those below it (and core):
 *
 *   0 layout.c  the store root and the --projectKey--/encodedId/ layout (§3.6)
 *   0 js.c      JavaScript's view of JSON values: JSON.parse() of a line, safe integers,
 *               String() and JSON.stringify() of a value as DSH's messages quote it
 *   0 reader.c  a log file's bytes: the zstd magic, the line reader (plain or zstd)
 *   1 header.c  the header line: parsed and checked, and formatted (js.c)
 *   1 surface.c the surface rule (surfaceOp, sourceEventSeqs) the scanner applies to every record
 *               (js.c)
 *   1 tail.c    the backward reader of plain logs: last complete line, folds from the end
 *               (reader.c, js.c)
 *   2 scan.c    the forward scanner: events, packed chunk rows, seq checks, the policy invariants
 *               (reader.c, header.c, surface.c, js.c)
 *   3 check.c   validating a log before it is read or appended to, resumed from a checkpoint
 *               (scan.c, reader.c)
 *   4 append.c  creating a log and appending to it under flock, torn-tail recovery (check.c,
 *               scan.c, reader.c)
 *   5 session.c the dsb_session object the rest of the library uses (all of the above)
 *
 * Every reader tolerates a torn last line (no final newline): it is not a record yet.
 *
 * One rule decides whether a log is valid (scan.c with surface.c), and every reader and writer
 * applies it to the whole committed log before it trusts any of it, so `session log`, the folds
 * and the appends agree on every input. A checkpoint (check.c) keeps that from costing a scan
 * of the whole log each time.
 */
#ifndef DSB_SESSION_SESSION_H
#define DSB_SESSION_SESSION_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include <dsb/session.h>

#include "../core/core.h"

/* The only log format version DSH reads and writes (SESSION_FORMAT_VERSION). */
#define LOG_FORMAT_VERSION 0

/* One line of a log, at most (a 10 MB tool result is a real line; 64 MiB is not). */
#define LOG_LINE_MAX ((size_t)64 * 1024 * 1024)

/* Number.MAX_SAFE_INTEGER: DSH's integers are doubles, exact only up to here. */
#define JS_MAX_SAFE_INTEGER INT64_C(9007199254740991)

/* DSB_E_SESSION_INVALID with the message "PATH: TEXT". */
static inline int log_invalid(dsb_error *reterr, const char *path, const char *text)
{
	return dsb_fail(reterr, DSB_E_SESSION_INVALID, "%s: %s", path, text);
}

/* DSB_E_NO_MEMORY with the message "PATH: out of memory". */
static inline int log_no_memory(dsb_error *reterr, const char *path)
{
	return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
}

/* --- layout.c ------------------------------------------------------------------------------ */

/* encodeSegment(): one safe path segment, injective over strings. -EINVAL for "", -ENOMEM. */
int layout_encode_segment(const char *raw, char **ret_segment);

/* projectKey(): "--slug--" for a cwd. -EINVAL for "", -ENOMEM. */
int layout_project_key(const char *cwd, char **ret_key);

/* ROOT/--projectKey--/encodedId, or ROOT/_no-cwd/encodedId when @cwd is NULL. */
int layout_session_dir(const char *root, const char *cwd, const char *id, char **ret_dir);

/* $DSH_SANDBOX_STORE, else $XDG_STATE_HOME/dsh-sandbox, else ~/.local/state/dsh-sandbox. */
int layout_default_root(char **ret_root);

/* --- js.c ---------------------------------------------------------------------------------- */

/*
 * JSON.parse() of one line, as far as jansson can follow it: a duplicate key keeps the last
 * value, bytes that are not UTF-8 read as U+FFFD, as Node decodes the file before parsing.
 * 0 and a new reference; -EINVAL when the text is not JSON; -ENOMEM.
 */
int log_parse_json(const char *text, size_t len, json_t **ret_json);

/* Number.isSafeInteger(@v), with the value. A JSON real like 5.0 is the JS number 5. */
bool js_safe_integer(const json_t *v, int64_t *ret);

/* A safe non-negative integer that is not -0, as isHeaderLine() wants createdAt. */
bool js_count(const json_t *v, uint64_t *ret);

/* @v === @n for a JSON value and a count below 2^53. */
bool js_equals_count(const json_t *v, uint64_t n);

/* Appends String(@v), as a template literal interpolates it; NULL is undefined. -ENOMEM. */
int js_string_append(strbuf *sb, const json_t *v);

/*
 * Appends JSON.stringify(@v) (compact; NULL is undefined), as DSH's invariant messages quote
 * values. -ENOMEM.
 */
int js_stringify_append(strbuf *sb, const json_t *v);

/* --- reader.c ------------------------------------------------------------------------------ */

/* Whether the file starts with the zstd frame magic (DSH's default .jsonl.zstd logs). */
bool log_is_zstd(int fd, off_t size);

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
	struct ZSTD_DCtx_s *dctx; /* <zstd.h>'s ZSTD_DCtx */
	unsigned char *in;
	size_t in_pos, in_len;
	bool in_frame;
	off_t frame_start, frame_end; /* the frame being decoded, or the last one */
	size_t frames;		      /* frames decoded to their end */
	off_t boundary_text;	      /* where the last of them ended: text offset */
	off_t boundary_file;	      /* ... and file offset */
	bool torn_frame;	      /* the file ends inside a frame */
} line_reader;

/*
 * Opens a reader of the log at @fd (named @path in messages; both borrowed), which must be a
 * regular file: plain or zstd by its magic number. Release with line_reader_done() either way.
 * Callers read the fields above and leave them alone.
 */
int line_reader_init(line_reader *r, int fd, const char *path, dsb_error *reterr);
void line_reader_done(line_reader *r);

/*
 * The next complete line (without its newline), valid until the next call. Returns 1, or 0 at
 * the end of the text, where buf[start, len) is what follows the last newline.
 */
int line_reader_next(line_reader *r, const char **ret_line, size_t *ret_len, dsb_error *reterr);

/* zstd: decodes until the first frame has ended (or the file ends inside it). 0 or an error. */
int line_reader_end_first_frame(line_reader *r, dsb_error *reterr);

/* A plain log's reader moved to @offset, just past a '\n', with @lines lines before it. */
void line_reader_seek(line_reader *r, off_t offset, size_t lines);

/* --- header.c ------------------------------------------------------------------------------ */

/* The header line (dsh-compat §3.6), absent optional keys NULL / false. */
typedef struct log_header {
	char *id;
	uint64_t created_at;
	char *cwd;
	char *parent_session;
	bool has_seed_length;
	uint64_t seed_length;
	bool origin_subagent;
	uint64_t delegation_depth;
	char *agent_preset;
} log_header;

void log_header_done(log_header *h);

/*
 * Parses and validates a header line (@len bytes, no newline) of the log at @path (named in
 * messages). Fails with DSB_E_SESSION_INVALID and the message "PATH: TEXT", TEXT being DSH's:
 * "empty or header-less session log", "corrupt session log: header line is not valid JSON",
 * "corrupt session log: first line is not a session header", the version refusal of
 * sessionFormatVersionRefusal(), or "session header uses retired policy baseline fields".
 */
int log_header_parse(const char *line, size_t len, const char *path, log_header *ret_header,
		     dsb_error *reterr);

/* The header line as DSH writes it (key order of §3.6), without the newline. -ENOMEM. */
int log_header_format(const log_header *h, char **ret_line);

/* --- scan.c -------------------------------------------------------------------------------- */

/*
 * One record of a log as the scanner hands it over: an event, or a packed chunk row standing
 * for @count consecutive assistant/chunk events seq .. seq + count - 1.
 */
typedef struct log_record {
	uint64_t seq;	  /* the first event's seq (as written, or its position) */
	size_t count;	  /* events this record stands for: 1, or a packed row's members */
	const char *type; /* "sandbox/mode", ..., or "text-chunks" for a packed row */
	json_t *json;	  /* the whole record; borrowed for the callback's duration */
	const char *text; /* the line's bytes as stored (no newline); borrowed like @json */
	size_t text_len;
	size_t line;  /* 1-based line in the decompressed text; the header is line 1 */
	off_t offset; /* byte offset of the line in the decompressed text */
	/* A surface replacement's sourceEventSeqs, sorted; NULL and 0 for any other record. */
	const uint64_t *sources;
	size_t n_sources;
} log_record;

/* Return < 0 (a -code, with @reterr filled) to stop with that error, 1 to stop early, 0 to go on.
 */
typedef int (*log_record_fn)(const log_record *rec, void *userdata, dsb_error *reterr);

typedef struct log_scan_result {
	uint64_t n_events;     /* events in the complete records (packed rows expanded) */
	uint64_t last_seq;     /* seq of the last event; meaningless when n_events == 0 */
	off_t committed_bytes; /* file bytes up to the end of the last complete record */
	off_t file_bytes;      /* file size seen */
	bool torn;	       /* bytes after the last complete record (a crash tail) */
	bool zstd;	       /* the file is zstd-framed */
	off_t header_end;      /* text offset just past the header line */
	size_t lines;	       /* complete lines, the header included */
} log_scan_result;

/*
 * Reads the log at @fd (opened by the caller, positioned anywhere; read with pread) from the
 * start: validates the header, then hands each complete record to @fn in order. Plain JSONL or
 * concatenated zstd frames (detected by the magic number). Events without "seq" (DSH's snapshot
 * fixtures strip it) take their position; where "seq" is present it must equal the position.
 * A malformed line, a seq gap or duplicate, or a packed row that does not decode is
 * DSB_E_SESSION_INVALID naming @path and the line ("PATH:LINE: corrupt session log:
 * ..."). A sandbox/mode event with a mode outside the three, or an approval/policy event with a
 * policy outside ask/never, is DSB_E_INVARIANT with dsh-compat §3.5's text, "PATH:LINE:
 * sandbox/mode carries unknown mode "X"" (fail closed: never read as the default). A final line
 * without a newline (or a final incomplete zstd frame) is a torn tail: not handed over, reported in
 * *@ret_result. Memory stays bounded by the longest line.
 * @ret_header and @ret_result may be NULL. Returns 0, or 1 when @fn stopped early.
 */
int log_scan(int fd, const char *path, log_header *ret_header, log_record_fn fn, void *userdata,
	     log_scan_result *ret_result, dsb_error *reterr);

/* Where a scan may resume: just past a complete line, with the counts up to there. */
typedef struct log_position {
	off_t offset;	 /* a file offset just past a '\n' (plain logs only) */
	size_t lines;	 /* complete lines before @offset, the header included */
	uint64_t events; /* events in them (the next seq) */
} log_position;

/* What a scan resumed from @from returns, instead of an error, to ask for a full scan. */
#define LOG_RESCAN (-EAGAIN)

/*
 * log_scan() of a plain log from @from (NULL: from the start): the header is read and checked
 * as always, then lines from @from->offset on, numbered and counted from @from. A resumed scan
 * does not know the surface so far and returns LOG_RESCAN when it meets a replacement.
 */
int log_scan_from(int fd, const char *path, const log_position *from, log_header *ret_header,
		  log_record_fn fn, void *userdata, log_scan_result *ret_result, dsb_error *reterr);

/*
 * Checks one line an append is about to write at @at (no newline) in the log at @fd as a scan
 * would check it there (a surface replacement against the surface, which takes a full scan).
 * A line readers would refuse is DSB_E_INVALID_ARGS, the scan's reason quoted.
 */
int log_check_appended(int fd, const char *path, const log_position *at, const char *line,
		       size_t len, dsb_error *reterr);

/* --- surface.c ----------------------------------------------------------------------------- */

/* The surface so far: the seqs the model sees, in order; @known once scanned from the start. */
typedef struct log_surface {
	bool known;
	uint64_t *nodes;
	size_t n_nodes, cap_nodes;
	uint64_t *sources; /* the last replacement's sourceEventSeqs, lent to its record */
	size_t n_sources;
} log_surface;

void log_surface_done(log_surface *s);

/*
 * Applies the surface rule to @rec (whose seq, type, json and line are set): DSH's texts,
 * DSB_E_SESSION_INVALID "PATH:LINE: ...". Sets @rec's sources for a replacement, valid until the
 * next call. LOG_RESCAN (nothing filled) for a replacement when the surface is not @known.
 */
int log_surface_apply(log_surface *s, const char *path, log_record *rec, dsb_error *reterr);

/* --- check.c ------------------------------------------------------------------------------- */

/* A log found valid up to its committed end. */
typedef struct log_valid {
	bool zstd;
	off_t header_end; /* plain logs: just past the header line */
	log_position end; /* the committed end: where the next record goes */
	off_t file_bytes; /* the size seen */
} log_valid;

/*
 * Validates the log at @fd by the one rule (log_scan()'s), from the start or, for a plain log,
 * from its checkpoint when the bytes it vouches for are still there, and records a new
 * checkpoint at the committed end when the file did not change meanwhile and it may. Errors are
 * log_scan()'s, so every reader and writer refuses a log with the same message.
 */
int log_validate(int fd, const char *path, log_valid *ret, dsb_error *reterr);

/*
 * Records that the plain log at @fd is valid up to @at (a complete line end), as an append
 * does after writing a record it checked. Best effort: a file system without user extended
 * attributes, or a log the caller may not write, just keeps no checkpoint.
 */
void log_checkpoint_save(int fd, const log_position *at);

/* session.c: log_validate() of a session's log. */
int session_validate(dsb_session *session, dsb_error *reterr);

/* session.c: log_scan() of a session's log. */
int session_scan(dsb_session *session, log_record_fn fn, void *userdata,
		 log_scan_result *ret_result, dsb_error *reterr);

/* session.c: dsb_session_append() with more envelope members (see log_append()). */
int session_append_extra(dsb_session *session, const char *type, const char *data_json,
			 const char *extra, uint64_t *ret_seq, dsb_error *reterr);

/*
 * session.c: a plugin's user/message data as DSH's createUserMessage() lays it out, in two
 * halves around the members the plugin adds to its source:
 * {"content":[{"type":"text","text":@text}],"source":{"kind":"plugin","plugin":@plugin ...
 * then ...},"role":"user","id":@id}. Written into @w; checked at its jw_take().
 */
void session_message_begin(jw *w, const char *text, const char *plugin);
void session_message_end(jw *w, const char *id);

/*
 * session.c: the last event whose type is one of @types (@n of them), read from the end:
 * 1 with *@ret_which (its index in @types) and *@ret_record (a new reference), or 0.
 */
int session_find_last(dsb_session *session, const char *const *types, size_t n, size_t *ret_which,
		      json_t **ret_record, dsb_error *reterr);

/* --- append.c ------------------------------------------------------------------------------ */

/* The wall clock in epoch milliseconds (Date.now()). */
uint64_t log_now_ms(void);

/*
 * Publishes a new log DIR/NAME holding @header_line (no newline) and creates DIR (0700) as
 * needed. Fails, touching nothing, when the log exists. *@ret_path is a new string.
 */
int log_create(const char *dir, const char *name, const char *header_line, char **ret_path,
	       dsb_error *reterr);

/*
 * Appends {"type":@type,"seq":N,"time":T,"data":@data_json@extra} to the log at @path (plain or
 * zstd) under an exclusive flock, after cutting a torn tail into a side file; fsyncs when @sync.
 * @data_json must already be one compact JSON value; @extra (NULL for none) is more envelope
 * members in DSH's order, e.g. `,"surfaceOp":"append"`.
 */
int log_append(const char *path, const char *type, const char *data_json, const char *extra,
	       bool sync, uint64_t *ret_seq, dsb_error *reterr);

/* One event an append writes: see log_append() for the members. */
typedef struct log_event {
	const char *type;
	const char *data_json;
	const char *extra;
} log_event;

/*
 * Decides, under the append's lock, whether to append and what: 1 with *@ret_event filled (its
 * strings must live until log_append_decide() returns), 0 to append nothing, or < 0 (an error,
 * nothing appended). The log it may read is complete, valid and repaired, and no other writer
 * can change it until the decision is written.
 */
typedef int (*log_decide_fn)(void *userdata, log_event *ret_event, dsb_error *reterr);

/*
 * log_append() whose event is decided by @decide inside the locked section, after the log was
 * validated and a torn tail repaired: N concurrent callers deciding from the log's contents
 * (e.g. "append the snapshot unless the log already ends with it") append it at most once.
 * Returns 1 when an event was appended (*@ret_seq, may be NULL, is its seq), 0 when @decide
 * chose none.
 */
int log_append_decide(const char *path, bool sync, log_decide_fn decide, void *userdata,
		      uint64_t *ret_seq, dsb_error *reterr);

/* session.c: log_append_decide() on a session's log. */
int session_append_decide(dsb_session *session, log_decide_fn decide, void *userdata,
			  uint64_t *ret_seq, dsb_error *reterr);

/* --- tail.c: plain logs read backwards ---------------------------------------------------- */

#define TAIL_BLOCK ((size_t)64 * 1024)

typedef struct tail {
	int fd;
	off_t lo;	/* the first byte after the header line */
	off_t next_end; /* offset of the '\n' ending the next line to yield */
	char *block;	/* TAIL_BLOCK bytes on the heap: a thread's stack stays small */
	off_t block_start;
	size_t block_len;
} tail;

/*
 * The end of the header line (just past its '\n') and of the committed region (just past the
 * last '\n') of a plain log of @size bytes. -ENODATA when the header line has no newline,
 * -ENOMEM, -errno.
 */
int tail_bounds(int fd, off_t size, off_t *ret_header_end, off_t *ret_committed_end);

/*
 * Yields event lines from the last to the first: [lo, committed_end) holds complete lines.
 * -ENOMEM; release with tail_done() either way.
 */
int tail_init(tail *t, int fd, off_t lo, off_t committed_end);
void tail_done(tail *t);

/* 1 with [*start, *end) the previous line (end excludes '\n'), 0 at the header, -errno. */
int tail_prev_line(tail *t, off_t *ret_start, off_t *ret_end);
/* Reads @n bytes at @start, from the current block when it holds them. -errno. */
int tail_read(tail *t, off_t start, size_t n, char *buf);

/*
 * The last record of @type in a plain log: 1 with *@ret_record (a new reference), 0 when there
 * is none. A matching line that does not parse is DSB_E_SESSION_INVALID.
 */
int tail_find_last(int fd, const char *path, off_t header_end, off_t committed_end,
		   const char *const *types, size_t n, size_t *ret_which, json_t **ret_record,
		   dsb_error *reterr);

#endif
