/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes visible_escape() over arbitrary bytes. Properties: the escaped text holds no control
 * character (C0 or DEL), escaping it again with its backslashes kept changes nothing (no hidden
 * character and no invalid UTF-8 is left), and reading the notation back gives the input,
 * byte for byte. With the output flags, the only controls left are newline and tab.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned hex(char c)
{
	if (c >= '0' && c <= '9')
		return (unsigned)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (unsigned)(c - 'a' + 10);
	abort(); /* the notation writes lower-case hex only */
}

static void put_utf8(strbuf *sb, uint32_t c)
{
	char b[4];
	size_t n;
	if (c < 0x80) {
		b[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		b[0] = (char)(0xC0 | (c >> 6));
		b[1] = (char)(0x80 | (c & 0x3F));
		n = 2;
	} else if (c < 0x10000) {
		b[0] = (char)(0xE0 | (c >> 12));
		b[1] = (char)(0x80 | ((c >> 6) & 0x3F));
		b[2] = (char)(0x80 | (c & 0x3F));
		n = 3;
	} else {
		b[0] = (char)(0xF0 | (c >> 18));
		b[1] = (char)(0x80 | ((c >> 12) & 0x3F));
		b[2] = (char)(0x80 | ((c >> 6) & 0x3F));
		b[3] = (char)(0x80 | (c & 0x3F));
		n = 4;
	}
	if (strbuf_append(sb, b, n) < 0)
		abort();
}

/* The notation read back (core.h); aborts on anything it does not write. */
static void unescape(const char *s, strbuf *sb)
{
	if (strbuf_append(sb, "", 0) < 0)
		abort();
	for (size_t i = 0; s[i];) {
		if (s[i] != '\\') {
			if (strbuf_putc(sb, s[i++]) < 0)
				abort();
			continue;
		}
		char e = s[i + 1];
		i += 2;
		if (e == '\\' || e == 'n' || e == 'r' || e == 't') {
			char c = e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : '\\';
			if (strbuf_putc(sb, c) < 0)
				abort();
		} else if (e == 'x') {
			if (!s[i] || !s[i + 1])
				abort();
			if (strbuf_putc(sb, (char)(hex(s[i]) << 4 | hex(s[i + 1]))) < 0)
				abort();
			i += 2;
		} else if (e == 'u' && s[i] == '{') {
			uint32_t c = 0;
			size_t digits = 0;
			for (i++; s[i] && s[i] != '}'; i++, digits++)
				c = c << 4 | hex(s[i]);
			if (s[i] != '}' || digits < 4 || digits > 6)
				abort();
			i++;
			put_utf8(sb, c);
		} else
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	char *out = NULL, *again = NULL, *lines = NULL;
	if (visible_escape(in, size, 0, &out) < 0)
		return 0;
	for (const unsigned char *p = (const unsigned char *)out; *p; p++)
		if (*p < 0x20 || *p == 0x7F)
			abort();
	if (visible_escape(out, strlen(out), VISIBLE_KEEP_BACKSLASH, &again) < 0)
		abort();
	if (strcmp(out, again) != 0)
		abort();

	strbuf back = STRBUF_INIT;
	unescape(out, &back);
	if (back.len != size || memcmp(back.buf, data, size) != 0)
		abort();
	strbuf_done(&back);

	if (visible_escape(in, size, VISIBLE_KEEP_LINES | VISIBLE_KEEP_BACKSLASH, &lines) < 0)
		abort();
	for (const unsigned char *p = (const unsigned char *)lines; *p; p++)
		if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7F)
			abort();
	free(lines);
	free(again);
	free(out);
	return 0;
}
