/* SPDX-License-Identifier: MIT */
/*
 * Internals of the session piece: DSH's JSONL v0 session logs (spec §3), plain or zstd-framed.
 *
 *   layout.c  the store root and the --projectKey--/encodedId/ layout (§3.6)
 *   scan.c    the forward scanner: header, events, packed chunk rows, seq checks, zstd frames
 *   tail.c    the backward reader of plain logs: last complete line, folds from the end
 *   append.c  creating a log and appending to it under flock, torn-tail recovery
 *   session.c the dsb_session object the rest of the library uses
 *
 * Every reader tolerates a torn last line (no final newline): it is not a record yet.
 */
#ifndef DSB_SESSION_SESSION_H
#define DSB_SESSION_SESSION_H

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

/* The header line (spec §3.6), absent optional keys NULL / false. */
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
 * messages). Fails with DSB_E_SESSION_INVALID and the message "PATH: TEXT", TEXT being DSH's: "empty or header-less session log", "corrupt session log: header line is not valid JSON",
 * "corrupt session log: first line is not a session header", the version refusal of
 * sessionFormatVersionRefusal(), or "session header uses retired policy baseline fields".
 */
int log_header_parse(const char *line, size_t len, const char *path, log_header *ret_header,
		     dsb_error *reterr);

/* The header line as DSH writes it (key order of §3.6), without the newline. -ENOMEM. */
int log_header_format(const log_header *h, char **ret_line);

/*
 * One record of a log as the scanner hands it over: an event, or a packed chunk row standing
 * for @count consecutive assistant/chunk events seq .. seq + count - 1.
 */
typedef struct log_record {
	uint64_t seq;       /* the first event's seq (as written, or its position) */
	size_t count;       /* events this record stands for: 1, or a packed row's members */
	const char *type;   /* "sandbox/mode", ..., or "text-chunks" for a packed row */
	json_t *json;       /* the whole record; borrowed for the callback's duration */
	size_t line;        /* 1-based line in the decompressed text; the header is line 1 */
	off_t offset;       /* byte offset of the line in the decompressed text */
} log_record;

/* Return < 0 (a -code, with @reterr filled) to stop with that error, 1 to stop early, 0 to go on. */
typedef int (*log_record_fn)(const log_record *rec, void *userdata, dsb_error *reterr);

typedef struct log_scan_result {
	uint64_t n_events;      /* events in the complete records (packed rows expanded) */
	uint64_t last_seq;      /* seq of the last event; meaningless when n_events == 0 */
	off_t committed_bytes;  /* file bytes up to the end of the last complete record */
	off_t file_bytes;       /* file size seen */
	bool torn;              /* bytes after the last complete record (a crash tail) */
	bool zstd;              /* the file is zstd-framed */
} log_scan_result;

/*
 * Reads the log at @fd (opened by the caller, positioned anywhere; read with pread) from the
 * start: validates the header, then hands each complete record to @fn in order. Plain JSONL or
 * concatenated zstd frames (detected by the magic number). Events without "seq" (DSH's snapshot
 * fixtures strip it) take their position; where "seq" is present it must equal the position.
 * A malformed line, a seq gap or duplicate, or a packed row that does not decode is DSB_E_SESSION_INVALID naming @path and the line ("PATH:LINE: corrupt session log:
 * ..."). A sandbox/mode event with a mode outside the three, or an approval/policy event with a
 * policy outside ask/never, is DSB_E_INVARIANT with spec §3.5's text, "PATH:LINE: sandbox/mode
 * carries unknown mode "X"" (fail closed: never read as the default). A final
 * line without a newline (or a final incomplete zstd frame) is a torn tail: not handed over,
 * reported in *@ret_result. Memory stays bounded by the longest line.
 * @ret_header and @ret_result may be NULL. Returns 0, or 1 when @fn stopped early.
 */
int log_scan(int fd, const char *path, log_header *ret_header, log_record_fn fn, void *userdata,
	     log_scan_result *ret_result, dsb_error *reterr);

#endif
