/* SPDX-License-Identifier: MIT */
/*
 * Text a person is shown, made visible: bytes that a terminal or a dialog would act on or hide
 * instead of showing (a carriage return, an erase-line sequence, OSC 52, a bidi override, an
 * invisible tag character) are written as escapes, so that what a person reads is what the bytes
 * are. The text may come from a hostile model (a command, a justification, a tool's output);
 * the person deciding on it must not be shown something else. The notation is in core.h.
 */
#include <errno.h>
#include <stdio.h>

#include "core.h"

/*
 * Code points that are valid UTF-8 and printable to a decoder, yet invisible or
 * direction-changing when rendered: C1 controls, bidi embeddings, overrides, isolates and marks,
 * zero-width spaces, line and paragraph separators (a dialog may break a line there), invisible
 * operators, the BOM, interlinear annotation and Unicode tags (text smuggled past a person).
 * The zero-width joiners U+200C and U+200D stay: scripts and emoji need them, and they hide no
 * text.
 */
static bool hidden(uint32_t c)
{
	static const struct {
		uint32_t lo, hi;
	} ranges[] = {
		{0x0080, 0x009F},   /* C1 controls (U+009B is CSI to some terminals) */
		{0x00AD, 0x00AD},   /* soft hyphen */
		{0x061C, 0x061C},   /* Arabic letter mark */
		{0x180E, 0x180E},   /* Mongolian vowel separator */
		{0x200B, 0x200B},   /* zero-width space */
		{0x200E, 0x200F},   /* LRM, RLM */
		{0x2028, 0x202E},   /* LS, PS, LRE, RLE, PDF, LRO, RLO */
		{0x2060, 0x2064},   /* word joiner, invisible operators */
		{0x2066, 0x2069},   /* LRI, RLI, FSI, PDI */
		{0xFEFF, 0xFEFF},   /* BOM, zero-width no-break space */
		{0xFFF9, 0xFFFB},   /* interlinear annotation */
		{0xE0000, 0xE007F}, /* tags */
	};
	for (size_t i = 0; i < ELEMENTSOF(ranges); i++)
		if (c >= ranges[i].lo && c <= ranges[i].hi)
			return true;
	return false;
}

int visible_escape_append(strbuf *sb, const char *s, size_t len, unsigned flags)
{
	const unsigned char *u = (const unsigned char *)s;
	int r = strbuf_append(sb, "", 0);

	for (size_t i = 0; r >= 0 && i < len;) {
		unsigned char c = u[i];
		if (c == '\n' || c == '\t') {
			if (flags & VISIBLE_KEEP_LINES)
				r = strbuf_putc(sb, (char)c);
			else
				r = strbuf_puts(sb, c == '\n' ? "\\n" : "\\t");
			i++;
		} else if (c == '\r') {
			r = strbuf_puts(sb, "\\r");
			i++;
		} else if (c == '\\') {
			r = strbuf_puts(sb, flags & VISIBLE_KEEP_BACKSLASH ? "\\" : "\\\\");
			i++;
		} else if (c < 0x20 || c == 0x7F) {
			r = strbuf_printf(sb, "\\x%02x", c);
			i++;
		} else if (c < 0x80) {
			r = strbuf_putc(sb, (char)c);
			i++;
		} else {
			size_t start = i;
			uint32_t cp = utf8_next(s, len, &i);
			/* U+FFFD is also what a maximal invalid subpart decodes to: tell them
			 * apart. */
			bool valid = cp != 0xFFFD ||
				     (i - start == 3 && memcmp(s + start, "\xEF\xBF\xBD", 3) == 0);
			if (!valid)
				for (size_t k = start; r >= 0 && k < i; k++)
					r = strbuf_printf(sb, "\\x%02x", u[k]);
			else if (hidden(cp))
				r = strbuf_printf(sb, "\\u{%04x}", (unsigned)cp);
			else
				r = strbuf_append(sb, s + start, i - start);
		}
	}
	return r;
}

int visible_escape(const char *s, size_t len, unsigned flags, char **ret_text)
{
	strbuf sb = STRBUF_INIT;
	int r = visible_escape_append(&sb, s, len, flags);
	if (r < 0) {
		strbuf_done(&sb);
		return r;
	}
	*ret_text = strbuf_take(&sb);
	return *ret_text ? 0 : -ENOMEM;
}
