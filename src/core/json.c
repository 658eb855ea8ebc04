/* SPDX-License-Identifier: MIT */
/*
 * JSON string quoting byte-identical to JSON.stringify(), for JSON that appears inside
 * model-facing text (the workspace path in the sandbox:policy context) and in DSH-compatible
 * logs. jansson escapes differently (upper-case \u hex) and refuses invalid UTF-8, so this one
 * is ours. Bytes that are not UTF-8 are decoded first the way Node turns bytes into a string:
 * each maximal invalid subpart becomes U+FFFD (WHATWG Encoding, "UTF-8 decode").
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "core.h"

static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */

/*
 * The length of the well-formed UTF-8 sequence at @s (1 to 4), or the negated length of its
 * maximal invalid subpart (at least 1) which decodes to one U+FFFD.
 */
static int utf8_sequence(const unsigned char *s, size_t len)
{
	unsigned char b = s[0];
	int need;
	unsigned char lower = 0x80, upper = 0xBF;

	if (b < 0x80)
		return 1;
	if (b >= 0xC2 && b <= 0xDF)
		need = 1;
	else if (b >= 0xE0 && b <= 0xEF) {
		need = 2;
		if (b == 0xE0)
			lower = 0xA0; /* overlong */
		else if (b == 0xED)
			upper = 0x9F; /* surrogates */
	} else if (b >= 0xF0 && b <= 0xF4) {
		need = 3;
		if (b == 0xF0)
			lower = 0x90; /* overlong */
		else if (b == 0xF4)
			upper = 0x8F; /* past U+10FFFF */
	} else
		return -1;

	size_t i = 1;
	for (int k = 0; k < need; k++, i++) {
		if (i >= len || s[i] < lower || s[i] > upper)
			return -(int)i;
		lower = 0x80;
		upper = 0xBF;
	}
	return (int)i;
}

int json_quote_append(strbuf *sb, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	int r = strbuf_putc(sb, '"');

	for (size_t i = 0; r >= 0 && i < len;) {
		unsigned char c = u[i];
		const char *esc = NULL;

		switch (c) {
		case '"':
			esc = "\\\"";
			break;
		case '\\':
			esc = "\\\\";
			break;
		case '\b':
			esc = "\\b";
			break;
		case '\f':
			esc = "\\f";
			break;
		case '\n':
			esc = "\\n";
			break;
		case '\r':
			esc = "\\r";
			break;
		case '\t':
			esc = "\\t";
			break;
		default:
			break;
		}
		if (esc) {
			r = strbuf_puts(sb, esc);
			i++;
		} else if (c < 0x20) {
			r = strbuf_printf(sb, "\\u%04x", c);
			i++;
		} else {
			int n = utf8_sequence(u + i, len - i);
			if (n > 0)
				r = strbuf_append(sb, s + i, (size_t)n);
			else
				r = strbuf_puts(sb, replacement);
			i += (size_t)(n > 0 ? n : -n);
		}
	}
	if (r >= 0)
		r = strbuf_putc(sb, '"');
	return r;
}

uint32_t utf8_next(const char *s, size_t len, size_t *i)
{
	const unsigned char *u = (const unsigned char *)s + *i;
	int n = utf8_sequence(u, len - *i);

	if (n < 0) {
		*i += (size_t)-n;
		return 0xFFFD;
	}
	*i += (size_t)n;
	switch (n) {
	case 1:
		return u[0];
	case 2:
		return ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
	case 3:
		return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) |
		       (u[2] & 0x3F);
	default:
		return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) |
		       ((uint32_t)(u[2] & 0x3F) << 6) | (u[3] & 0x3F);
	}
}

/* ECMAScript WhiteSpace (TAB VT FF ZWNBSP and category Zs) and LineTerminator (LF CR LS PS). */
static bool js_space(uint32_t c)
{
	switch (c) {
	case 0x09:
	case 0x0A:
	case 0x0B:
	case 0x0C:
	case 0x0D:
	case 0x20:
	case 0xA0:
	case 0x1680:
	case 0x2028:
	case 0x2029:
	case 0x202F:
	case 0x205F:
	case 0x3000:
	case 0xFEFF:
		return true;
	default:
		return c >= 0x2000 && c <= 0x200A;
	}
}

bool js_blank(const char *s)
{
	size_t len = strlen(s);
	for (size_t i = 0; i < len;)
		if (!js_space(utf8_next(s, len, &i)))
			return false;
	return true;
}

int utf8_sanitize(const char *s, size_t len, char **ret_text, size_t *ret_len)
{
	strbuf sb = STRBUF_INIT;
	int r = strbuf_append(&sb, "", 0);

	for (size_t i = 0; r >= 0 && i < len;) {
		int n = utf8_sequence((const unsigned char *)s + i, len - i);
		if (n > 0)
			r = strbuf_append(&sb, s + i, (size_t)n);
		else
			r = strbuf_puts(&sb, replacement);
		i += (size_t)(n > 0 ? n : -n);
	}
	if (r < 0) {
		strbuf_done(&sb);
		return r;
	}
	*ret_len = sb.len;
	*ret_text = strbuf_take(&sb);
	return 0;
}

int json_quote(const char *s, size_t len, char **ret_json)
{
	strbuf sb = STRBUF_INIT;
	int r = json_quote_append(&sb, s, len);
	if (r < 0) {
		strbuf_done(&sb);
		return r;
	}
	*ret_json = strbuf_take(&sb);
	return *ret_json ? 0 : -ENOMEM;
}

int js_number_append(strbuf *sb, double v)
{
	if (isnan(v))
		return strbuf_puts(sb, "NaN");
	if (v == 0)
		return strbuf_putc(sb, '0'); /* -0 too */
	int r = 0;
	if (v < 0) {
		r = strbuf_putc(sb, '-');
		v = -v;
	}
	if (r < 0 || isinf(v))
		return r < 0 ? r : strbuf_puts(sb, "Infinity");

	char e[40];
	for (int p = 1; p <= 17; p++) {
		(void)snprintf(e, sizeof(e), "%.*e", p - 1, v);
		if (strtod(e, NULL) == v)
			break;
	}
	/* "d.ddde+XX": the digits (any decimal separator the locale chose is skipped), then n. */
	char digits[20];
	int k = 0;
	const char *c = e;
	for (; *c && *c != 'e'; c++)
		if (*c >= '0' && *c <= '9' && k < (int)sizeof(digits))
			digits[k++] = *c;
	long n = (*c == 'e' ? strtol(c + 1, NULL, 10) : 0) + 1;
	while (k > 1 && digits[k - 1] == '0')
		k--;

	if (k <= n && n <= 21) {
		r = strbuf_append(sb, digits, (size_t)k);
		for (long i = k; r >= 0 && i < n; i++)
			r = strbuf_putc(sb, '0');
	} else if (n > 0 && n <= 21) {
		r = strbuf_append(sb, digits, (size_t)n);
		if (r >= 0)
			r = strbuf_putc(sb, '.');
		if (r >= 0)
			r = strbuf_append(sb, digits + n, (size_t)(k - n));
	} else if (n > -6 && n <= 0) {
		r = strbuf_puts(sb, "0.");
		for (long i = 0; r >= 0 && i < -n; i++)
			r = strbuf_putc(sb, '0');
		if (r >= 0)
			r = strbuf_append(sb, digits, (size_t)k);
	} else {
		r = strbuf_append(sb, digits, 1);
		if (r >= 0 && k > 1)
			r = strbuf_putc(sb, '.');
		if (r >= 0)
			r = strbuf_append(sb, digits + 1, (size_t)(k - 1));
		if (r >= 0)
			r = strbuf_printf(sb, "e%c%ld", n - 1 >= 0 ? '+' : '-', labs(n - 1));
	}
	return r;
}

int json_number_append(strbuf *sb, double v)
{
	return isfinite(v) ? js_number_append(sb, v) : strbuf_puts(sb, "null");
}

static void seed_from_getrandom(void)
{
	uint32_t seed = 0;

	/* Without entropy yet (early boot), jansson's own seeding is the fallback. */
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed) && seed != 0)
		json_object_seed(seed);
}

void json_seed(void)
{
	/*
	 * jansson seeds its hash function on the first object it makes, opening and reading
	 * /dev/urandom: three system calls and a descriptor on every start of the CLI. One
	 * getrandom(2) gives it the same. jansson keeps the first seed it gets, process-wide; the
	 * once-flag only saves later calls their system call.
	 */
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	(void)pthread_once(&once, seed_from_getrandom);
}
