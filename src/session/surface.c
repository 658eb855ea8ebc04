/* SPDX-License-Identifier: MIT */
/*
 * The surface rule of dsh-compat §3.1. What the model sees of a log is its surface: the
 * surface-eligible events (user/message, assistant/message, tool/result), each of which must
 * carry a surfaceOp. "append" adds the event; {"op":"replace","start":S,"end":E} collapses the
 * visible range S..E into it (a compaction), and its sourceEventSeqs must name every event it
 * shadows. DSH's foldSurface() and assertProvenance() refuse a log that breaks the rule. The
 * scanner applies the same checks, with DSH's texts, for every reader and writer here, so no two
 * commands can disagree on whether a log is corrupt.
 *
 * Only a replacement needs the surface so far, which only a scan from the first event knows. A
 * scan resumed from a checkpoint does not know it and asks for a full scan instead (LOG_RESCAN).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

void log_surface_done(log_surface *s)
{
	free(s->nodes);
	free(s->sources);
	*s = (log_surface){0};
}

static bool surface_type(const char *type)
{
	return strcmp(type, "user/message") == 0 || strcmp(type, "assistant/message") == 0 ||
	       strcmp(type, "tool/result") == 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* isEventSeq(): a non-negative safe integer (a JSON real like 5.0 is the JS number 5). */
static bool event_seq(const json_t *v, uint64_t *ret)
{
	int64_t i;
	if (!js_safe_integer(v, &i) || i < 0)
		return false;
	*ret = (uint64_t)i;
	return true;
}

static int surface_fail(const char *path, const log_record *rec, dsb_error *reterr, const char *fmt,
			...) __attribute__((format(printf, 4, 5)));

static int surface_fail(const char *path, const log_record *rec, dsb_error *reterr, const char *fmt,
			...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return dsb_fail(reterr, DSB_E_SESSION_INVALID, "%s:%zu: %s", path, rec->line, text);
}

static int no_memory(const char *path, dsb_error *reterr)
{
	return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
}

/*
 * assertProvenance(): the sourceEventSeqs of @rec, when present, are a non-empty (except on
 * assistant/message) array of distinct earlier seqs, which must include every @shadowed node.
 * On success *@ret_sorted is the sorted set (NULL when absent), *@ret_n its size.
 */
static int check_provenance(const char *path, const log_record *rec, const uint64_t *shadowed,
			    size_t n_shadowed, uint64_t **ret_sorted, size_t *ret_n,
			    dsb_error *reterr)
{
	const json_t *raw = json_object_get(rec->json, "sourceEventSeqs");
	_cleanup_free_ uint64_t *sorted = NULL;
	size_t n = 0;

	if (raw) {
		if (!json_is_array(raw))
			return surface_fail(path, rec, reterr,
					    "sourceEventSeqs on event at seq %" PRIu64
					    " must be an array when present",
					    rec->seq);
		n = json_array_size(raw);
		if (n == 0 && strcmp(rec->type, "assistant/message") != 0)
			return surface_fail(path, rec, reterr,
					    "sourceEventSeqs must not be empty except on "
					    "assistant/message");
		sorted = calloc(n ? n : 1, sizeof(*sorted));
		if (!sorted)
			return no_memory(path, reterr);
		bool late = false;
		uint64_t first_late = 0;
		for (size_t i = 0; i < n; i++) {
			if (!event_seq(json_array_get(raw, i), &sorted[i]))
				return surface_fail(
					path, rec, reterr,
					"session event \"%s\" sourceEventSeqs must densely "
					"contain non-negative safe integers",
					rec->type);
			if (!late && sorted[i] >= rec->seq) {
				late = true;
				first_late = sorted[i];
			}
		}
		if (n > 0)
			qsort(sorted, n, sizeof(*sorted), cmp_u64);
		for (size_t i = 1; i < n; i++)
			if (sorted[i] == sorted[i - 1])
				return surface_fail(path, rec, reterr,
						    "sourceEventSeqs must not contain duplicates");
		if (late)
			return surface_fail(
				path, rec, reterr,
				"sourceEventSeqs must reference earlier events: %" PRIu64
				" >= current seq %" PRIu64,
				first_late, rec->seq);
	}

	strbuf missing = STRBUF_INIT;
	int r = 0;
	for (size_t i = 0; r >= 0 && i < n_shadowed; i++)
		if (!n || !bsearch(&shadowed[i], sorted, n, sizeof(*sorted), cmp_u64))
			r = strbuf_printf(&missing, "%s%" PRIu64, missing.len ? ", " : "",
					  shadowed[i]);
	if (r < 0 || missing.len) {
		r = r < 0 ? no_memory(path, reterr)
			  : surface_fail(path, rec, reterr,
					 "surface replace: sourceEventSeqs must include every "
					 "shadowed surface node; missing %s",
					 missing.buf);
		strbuf_done(&missing);
		return r;
	}
	strbuf_done(&missing);
	*ret_sorted = n ? TAKE_PTR(sorted) : NULL;
	*ret_n = n;
	return 0;
}

/* The index of @seq in the surface, or -1. */
static ssize_t node_index(const log_surface *s, uint64_t seq)
{
	for (size_t i = 0; i < s->n_nodes; i++)
		if (s->nodes[i] == seq)
			return (ssize_t)i;
	return -1;
}

static int push_node(log_surface *s, uint64_t seq)
{
	if (s->n_nodes == s->cap_nodes) {
		size_t cap = s->cap_nodes ? s->cap_nodes * 2 : 64;
		uint64_t *grown = reallocarray(s->nodes, cap, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		s->nodes = grown;
		s->cap_nodes = cap;
	}
	s->nodes[s->n_nodes++] = seq;
	return 0;
}

/* Whether @op is exactly {"op":"replace","start":S,"end":E} with event seqs S and E. */
static bool replace_op(const json_t *op, uint64_t *ret_start, uint64_t *ret_end)
{
	const json_t *kind = json_object_get(op, "op");
	return json_object_size(op) == 3 && json_is_string(kind) &&
	       strcmp(json_string_value(kind), "replace") == 0 &&
	       event_seq(json_object_get(op, "start"), ret_start) &&
	       event_seq(json_object_get(op, "end"), ret_end);
}

/* A replacement: the surface range start..end becomes the event itself (foldSurface()). */
static int apply_replace(log_surface *s, const char *path, log_record *rec, uint64_t start,
			 uint64_t end, dsb_error *reterr)
{
	ssize_t si = node_index(s, start);
	if (si < 0)
		return surface_fail(path, rec, reterr,
				    "surface replace: start seq %" PRIu64 " not found in surface",
				    start);
	ssize_t ei = node_index(s, end);
	if (ei < 0)
		return surface_fail(path, rec, reterr,
				    "surface replace: end seq %" PRIu64 " not found in surface",
				    end);
	if (si > ei)
		return surface_fail(path, rec, reterr,
				    "surface replace: start seq %" PRIu64
				    " (index %zd) is after end seq %" PRIu64 " (index %zd)",
				    start, si, end, ei);

	int r = check_provenance(path, rec, s->nodes + si, (size_t)(ei - si + 1), &s->sources,
				 &s->n_sources, reterr);
	if (r < 0)
		return r;
	rec->sources = s->sources;
	rec->n_sources = s->n_sources;

	s->nodes[si] = rec->seq;
	memmove(s->nodes + si + 1, s->nodes + ei + 1,
		(s->n_nodes - (size_t)ei - 1) * sizeof(*s->nodes));
	s->n_nodes -= (size_t)(ei - si);
	return 0;
}

int log_surface_apply(log_surface *s, const char *path, log_record *rec, dsb_error *reterr)
{
	free(s->sources);
	s->sources = NULL;
	s->n_sources = 0;

	const json_t *op = json_object_get(rec->json, "surfaceOp");
	if (!surface_type(rec->type)) {
		if (op)
			return surface_fail(path, rec, reterr,
					    "session event \"%s\" is not surface-eligible and "
					    "cannot carry surfaceOp",
					    rec->type);
		if (json_object_get(rec->json, "sourceEventSeqs"))
			return surface_fail(path, rec, reterr,
					    "session event \"%s\" is not surface-eligible and "
					    "cannot carry sourceEventSeqs",
					    rec->type);
		return 0;
	}
	if (!op)
		return surface_fail(path, rec, reterr,
				    "session event \"%s\" is surface-eligible and requires a "
				    "surfaceOp marker",
				    rec->type);

	uint64_t start, end;
	if (json_is_string(op) && strcmp(json_string_value(op), "append") == 0 &&
	    json_string_length(op) == strlen("append")) {
		uint64_t *unused = NULL;
		size_t n = 0;
		int r = check_provenance(path, rec, NULL, 0, &unused, &n, reterr);
		free(unused);
		if (r < 0)
			return r;
		if (s->known && push_node(s, rec->seq) < 0)
			return no_memory(path, reterr);
		return 0;
	}
	if (!json_is_object(op))
		return surface_fail(path, rec, reterr,
				    "session event \"%s\" carries an invalid surfaceOp", rec->type);
	if (!replace_op(op, &start, &end))
		return surface_fail(path, rec, reterr,
				    "session event \"%s\" carries an invalid replace surfaceOp",
				    rec->type);
	if (!s->known)
		return LOG_RESCAN;
	return apply_replace(s, path, rec, start, end, reterr);
}
