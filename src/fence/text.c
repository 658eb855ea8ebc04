/* SPDX-License-Identifier: MIT */
/*
 * The text rules of DSH's local filesystem (packages/fs/fs-local/src/fsio.ts), pure: strict UTF-8
 * as TextDecoder({fatal: true}) checks it, the blank-path test of String.prototype.trim(), the
 * CRLF detection, normalisation and restoration around an edit, and applyLiteralEdit(). Every
 * result is built in one allocation sized beforehand; nothing here touches the file system.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"

/* The length of the well-formed UTF-8 sequence at @u (@n bytes left), or 0 if ill-formed. */
static size_t utf8_len(const unsigned char *u, size_t n)
{
	unsigned char lo = 0x80, hi = 0xBF;
	size_t len;

	if (u[0] < 0x80)
		return 1;
	if (u[0] >= 0xC2 && u[0] <= 0xDF)
		len = 2;
	else if (u[0] >= 0xE0 && u[0] <= 0xEF)
		len = 3;
	else if (u[0] >= 0xF0 && u[0] <= 0xF4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	/* The second byte's range excludes overlongs, surrogates and code points past U+10FFFF. */
	if (u[0] == 0xE0)
		lo = 0xA0;
	else if (u[0] == 0xED)
		hi = 0x9F;
	else if (u[0] == 0xF0)
		lo = 0x90;
	else if (u[0] == 0xF4)
		hi = 0x8F;
	if (u[1] < lo || u[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((u[i] & 0xC0) != 0x80)
			return 0;
	return len;
}

bool text_utf8_valid(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = utf8_len(u + i, len - i);
		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

size_t text_bom_len(const char *s, size_t len)
{
	return len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

text_eol text_detect_eol(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t crlf = 0, lf = 0, units = 0;

	/* raw.slice(0, 4096) counts UTF-16 units: a 4-byte sequence is two. */
	for (size_t i = 0; i < len && units < 4096; i++) {
		if ((u[i] & 0xC0) == 0x80)
			continue;
		units += u[i] >= 0xF0 ? 2 : 1;
		if (u[i] == '\n') {
			if (i > 0 && u[i - 1] == '\r')
				crlf++;
			else
				lf++;
		}
	}
	return crlf > lf ? TEXT_EOL_CRLF : TEXT_EOL_LF;
}

size_t text_normalize_eol(char *s, size_t len)
{
	size_t w = 0;

	for (size_t r = 0; r < len; r++) {
		if (s[r] == '\r' && r + 1 < len && s[r + 1] == '\n')
			continue;
		s[w++] = s[r];
	}
	s[w] = '\0';
	return w;
}

text_edit_status text_apply_edit(const char *text, size_t len, const char *old, size_t old_len,
				 const char *new, size_t new_len, bool all, char **ret,
				 size_t *ret_len, size_t *ret_count)
{
	size_t count = 0, out_len;

	if (old_len == 0)
		return TEXT_EDIT_EMPTY;

	/* countOccurrences(): non-overlapping, left to right, as split()/join() replace. */
	for (const char *p = text, *end = text + len;
	     (p = memmem(p, (size_t)(end - p), old, old_len)) != NULL; p += old_len)
		count++;
	*ret_count = count;
	if (count == 0)
		return TEXT_EDIT_NOT_FOUND;
	if (count > 1 && !all)
		return TEXT_EDIT_AMBIGUOUS;

	/* len - count * old_len cannot underflow: the occurrences are disjoint parts of @text. */
	size_t grow;
	if (__builtin_mul_overflow(count, new_len, &grow) ||
	    __builtin_add_overflow(len - count * old_len, grow, &out_len) || out_len == SIZE_MAX)
		return TEXT_EDIT_NO_MEMORY;

	char *out = malloc(out_len + 1), *w = out;
	if (!out)
		return TEXT_EDIT_NO_MEMORY;
	const char *p = text, *end = text + len;
	for (const char *hit; (hit = memmem(p, (size_t)(end - p), old, old_len)) != NULL;
	     p = hit + old_len) {
		memcpy(w, p, (size_t)(hit - p));
		w += hit - p;
		memcpy(w, new, new_len);
		w += new_len;
	}
	memcpy(w, p, (size_t)(end - p));
	w += end - p;
	*w = '\0';

	*ret = out;
	*ret_len = out_len;
	return TEXT_EDIT_OK;
}

int text_restore_eol(const char *prefix, size_t prefix_len, const char *s, size_t len, text_eol eol,
		     char **ret, size_t *ret_len)
{
	size_t lone = 0, out_len;

	/*
	 * DSH: normalizeLineEndings(content).split('\n').join('\r\n'). A "\r\n" stays, a lone "\n"
	 * gains its "\r", a lone "\r" stays: one pass, counting first so one allocation suffices.
	 */
	if (eol == TEXT_EOL_CRLF)
		for (size_t i = 0; i < len; i++)
			if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
				lone++;
	if (__builtin_add_overflow(prefix_len, len, &out_len) ||
	    __builtin_add_overflow(out_len, lone, &out_len) || out_len == SIZE_MAX)
		return -ENOMEM;

	char *out = malloc(out_len + 1), *w = out;
	if (!out)
		return -ENOMEM;
	memcpy(w, prefix, prefix_len);
	w += prefix_len;
	if (lone == 0) {
		memcpy(w, s, len);
		w += len;
	} else {
		for (size_t i = 0; i < len; i++) {
			if (s[i] == '\n' && (i == 0 || s[i - 1] != '\r'))
				*w++ = '\r';
			*w++ = s[i];
		}
	}
	*w = '\0';

	*ret = out;
	*ret_len = out_len;
	return 0;
}
