/* SPDX-License-Identifier: MIT */
/*
 * The writer of every JSON document whose bytes matter: the --json outputs, a call's structured
 * result, the session log's lines. Compact JSON into a growing buffer, strings escaped as
 * JSON.stringify() escapes them (json_quote_append()), members in the order they are written.
 * Its first failure sticks and turns every later call into a no-op, so a document is built
 * straight through and checked once at the end, by jw_take(). jansson stays the parser; its
 * encoder escapes differently (upper-case \u hex) and refuses bytes that are not UTF-8.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "core.h"

/* Runs one strbuf call on @w's buffer, recording its failure. */
#define JW_DO(w, call)                   \
	do {                             \
		int r_ = (call);         \
		if (r_ < 0)              \
			(w)->error = r_; \
	} while (0)

/* Before a value: the comma it needs after another one. */
static bool value_begin(jw *w)
{
	if (w->error)
		return false;
	if (w->comma)
		JW_DO(w, strbuf_putc(&w->sb, ','));
	w->comma = true;
	return !w->error;
}

static void put_raw(jw *w, const char *s)
{
	if (value_begin(w))
		JW_DO(w, strbuf_puts(&w->sb, s));
}

static void open_(jw *w, const char *s)
{
	put_raw(w, s);
	w->comma = false;
}

static void close_(jw *w, char c)
{
	if (!w->error)
		JW_DO(w, strbuf_putc(&w->sb, c));
	w->comma = true;
}

void jw_object_begin(jw *w)
{
	open_(w, "{");
}

void jw_object_end(jw *w)
{
	close_(w, '}');
}

void jw_array_begin(jw *w)
{
	open_(w, "[");
}

void jw_array_end(jw *w)
{
	close_(w, ']');
}

void jw_key(jw *w, const char *key)
{
	if (value_begin(w))
		JW_DO(w, strbuf_printf(&w->sb, "\"%s\":", key));
	w->comma = false;
}

void jw_string(jw *w, const char *s)
{
	if (!s)
		jw_null(w);
	else
		jw_string_len(w, s, strlen(s));
}

void jw_string_len(jw *w, const char *s, size_t len)
{
	if (value_begin(w))
		JW_DO(w, json_quote_append(&w->sb, s, len));
}

void jw_uint(jw *w, uint64_t v)
{
	if (value_begin(w))
		JW_DO(w, strbuf_printf(&w->sb, "%" PRIu64, v));
}

void jw_int(jw *w, int64_t v)
{
	if (value_begin(w))
		JW_DO(w, strbuf_printf(&w->sb, "%" PRId64, v));
}

void jw_bool(jw *w, bool v)
{
	put_raw(w, v ? "true" : "false");
}

void jw_null(jw *w)
{
	put_raw(w, "null");
}

void jw_raw(jw *w, const char *json)
{
	put_raw(w, json);
}

void jw_verbatim(jw *w, const char *s)
{
	if (!w->error)
		JW_DO(w, strbuf_puts(&w->sb, s));
}

void jw_member_string(jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_string(w, s);
}

void jw_member_string_len(jw *w, const char *key, const char *s, size_t len)
{
	jw_key(w, key);
	jw_string_len(w, s, len);
}

void jw_member_uint(jw *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	jw_uint(w, v);
}

void jw_member_int(jw *w, const char *key, int64_t v)
{
	jw_key(w, key);
	jw_int(w, v);
}

void jw_member_bool(jw *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_bool(w, v);
}

void jw_member_raw(jw *w, const char *key, const char *json)
{
	jw_key(w, key);
	jw_raw(w, json);
}

int jw_take(jw *w, char **ret_json)
{
	int r = w->error;
	if (r >= 0 && !w->sb.buf)
		r = -ENOMEM; /* nothing was written: no document */
	if (r < 0)
		strbuf_done(&w->sb);
	else
		*ret_json = strbuf_take(&w->sb);
	*w = (jw)JW_INIT;
	return r;
}
