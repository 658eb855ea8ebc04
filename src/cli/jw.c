/* SPDX-License-Identifier: MIT */
/*
 * The --json outputs' writer: compact JSON into a growing buffer, escaped as JSON.stringify()
 * escapes (json_quote_append()). Its first failure sticks and turns every later call into a
 * no-op, so a document is built straight through and checked once at the end.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "cli.h"

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
	else if (value_begin(w))
		JW_DO(w, json_quote_append(&w->sb, s, strlen(s)));
}

void jw_uint(jw *w, unsigned long long v)
{
	if (value_begin(w))
		JW_DO(w, strbuf_printf(&w->sb, "%llu", v));
}

void jw_int(jw *w, long long v)
{
	if (value_begin(w))
		JW_DO(w, strbuf_printf(&w->sb, "%lld", v));
}

void jw_bool(jw *w, bool v)
{
	put_raw(w, v ? "true" : "false");
}

void jw_null(jw *w)
{
	put_raw(w, "null");
}

void jw_member_string(jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	jw_string(w, s);
}

void jw_member_uint(jw *w, const char *key, unsigned long long v)
{
	jw_key(w, key);
	jw_uint(w, v);
}

void jw_member_int(jw *w, const char *key, long long v)
{
	jw_key(w, key);
	jw_int(w, v);
}

void jw_member_bool(jw *w, const char *key, bool v)
{
	jw_key(w, key);
	jw_bool(w, v);
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

int jw_print(jw *w)
{
	_cleanup_free_ char *json = NULL;
	int r = jw_take(w, &json);
	if (r >= 0)
		puts(json);
	return r;
}
