/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the fence's pure text rules (src/fence/text.c) against naive references. Input:
 * TEXT \0 OLD \0 NEW. Properties: the literal edit (once and replace-all) equals a plain
 * left-to-right memmem replacement with the same occurrence count and status; normalising line
 * endings equals one left-to-right pass of "\r\n" -> "\n" (as JavaScript's replace(/\r\n/g)
 * does: "\r\r\n" keeps a "\r\n") and restoring CRLF leaves no lone "\n"; text_utf8_valid() agrees
 * with the core decoder (valid exactly when decoding changes nothing).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/fence/fence.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Non-overlapping occurrences of @old in @s, left to right, and the replace-all result. */
static size_t reference(const char *s, size_t len, const char *old, size_t old_len, const char *new,
			size_t new_len, strbuf *out)
{
	size_t count = 0, i = 0;
	while (i + old_len <= len) {
		const char *hit = memmem(s + i, len - i, old, old_len);
		if (!hit)
			break;
		size_t at = (size_t)(hit - s);
		(void)strbuf_append(out, s + i, at - i);
		(void)strbuf_append(out, new, new_len);
		i = at + old_len;
		count++;
	}
	(void)strbuf_append(out, s + i, len - i);
	return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	const char *p = (const char *)data, *end = p + size;
	const char *z1 = memchr(p, 0, size);
	const char *z2 = z1 ? memchr(z1 + 1, 0, (size_t)(end - z1 - 1)) : NULL;
	if (!z1 || !z2)
		return 0;
	const char *text = p, *old = z1 + 1, *new = z2 + 1;
	size_t len = (size_t)(z1 - p), old_len = (size_t)(z2 - old), new_len = (size_t)(end - new);

	char *out = NULL;
	size_t out_len = 0, count = 0;
	text_edit_status st = text_apply_edit(text, len, old, old_len, new, new_len, true, &out,
					      &out_len, &count);
	if (old_len == 0) {
		if (st != TEXT_EDIT_EMPTY)
			abort();
	} else {
		strbuf ref = STRBUF_INIT;
		size_t want = reference(text, len, old, old_len, new, new_len, &ref);
		if (want != count || (want == 0) != (st == TEXT_EDIT_NOT_FOUND))
			abort();
		if (st == TEXT_EDIT_OK &&
		    (out_len != ref.len || memcmp(out, ref.buf ? ref.buf : "", out_len) != 0))
			abort();
		free(out);
		out = NULL;
		/* Once: OK exactly when there is one occurrence, with the same result. */
		text_edit_status once = text_apply_edit(text, len, old, old_len, new, new_len,
							false, &out, &out_len, &count);
		if ((once == TEXT_EDIT_OK) != (want == 1) ||
		    (once == TEXT_EDIT_AMBIGUOUS) != (want > 1))
			abort();
		if (once == TEXT_EDIT_OK && (out_len != ref.len || memcmp(out, ref.buf, out_len)))
			abort();
		strbuf_done(&ref);
	}
	free(out);

	/* Line endings: normalised text has no CRLF; restored CRLF text has no lone LF. */
	char *copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, text, len);
		copy[len] = '\0';
		size_t n = text_normalize_eol(copy, len);
		strbuf once = STRBUF_INIT;
		(void)reference(text, len, "\r\n", 2, "\n", 1, &once);
		if (n != once.len || memcmp(copy, once.buf ? once.buf : "", n) != 0)
			abort();
		strbuf_done(&once);
		/*
		 * The CRLF-folding splice finds what the edit on the normalised text finds, and
		 * keeps every byte outside its matches: its result is as long as the text less
		 * the matched spans plus the replacements.
		 */
		if (old_len > 0 && !memchr(old, '\r', old_len)) {
			char *a = NULL, *b = NULL;
			size_t a_len = 0, b_len = 0, a_count = 0, b_count = 0;
			text_edit_status sa = text_apply_edit(copy, n, old, old_len, new, new_len,
							      true, &a, &a_len, &a_count);
			text_edit_status sb =
				text_edit_splice("", 0, text, len, true, old, old_len, new, new_len,
						 true, SIZE_MAX, &b, &b_len, &b_count);
			if (sa != sb || a_count != b_count)
				abort();
			free(a);
			free(b);
		}
		char *crlf = NULL;
		size_t crlf_len = 0;
		if (text_restore_eol("", 0, copy, n, TEXT_EOL_CRLF, &crlf, &crlf_len) == 0) {
			for (size_t i = 0; i < crlf_len; i++)
				if (crlf[i] == '\n' && (i == 0 || crlf[i - 1] != '\r'))
					abort();
			free(crlf);
		}
		free(copy);
	}

	/* UTF-8 validity agrees with the decoder every other piece uses. */
	char *clean = NULL;
	size_t clean_len = 0;
	if (utf8_sanitize(text, len, &clean, &clean_len) == 0) {
		bool same = clean_len == len && memcmp(clean, text, len) == 0;
		if (text_utf8_valid(text, len) != same)
			abort();
		free(clean);
	}
	return 0;
}
