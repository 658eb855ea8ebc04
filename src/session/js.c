/* SPDX-License-Identifier: MIT */
/*
 * JavaScript's view of JSON values, for the session logs DSH reads and writes: JSON.parse() of a
 * line as far as jansson can follow it, the integers DSH's doubles hold exactly, and String()
 * and JSON.stringify() of a value, as DSH's messages interpolate them. A log DSH reads must read
 * here too, and a log DSH refuses must be refused here too, with DSH's words.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "session.h"

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
int js_string_append(strbuf *sb, const json_t *v)
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
int js_stringify_append(strbuf *sb, const json_t *v)
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
bool js_safe_integer(const json_t *v, int64_t *ret)
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
bool js_count(const json_t *v, uint64_t *ret)
{
	int64_t i;
	if (!js_safe_integer(v, &i) || i < 0 || (json_is_real(v) && signbit(json_real_value(v))))
		return false;
	*ret = (uint64_t)i;
	return true;
}

/* @v === @n for a JSON value and a count below 2^53. */
bool js_equals_count(const json_t *v, uint64_t n)
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
