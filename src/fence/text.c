/* SPDX-License-Identifier: MIT */
/*
 * The text rules of DSH's local filesystem (packages/fs/fs-local/src/fsio.ts), pure: strict UTF-8
 * as TextDecoder({fatal: true}) checks it, the blank-path test of String.prototype.trim(), the
 * CRLF detection, normalisation and restoration around an edit, and applyLiteralEdit(). Every
 * result is built in one allocation sized beforehand; nothing here touches the file system.
 */
#include <errno.h>
#include <stdint.h>
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

/*
 * A linear literal search (Knuth-Morris-Pratt) over @s, read with every "\r\n" folded to one
 * "\n" when @fold (as text_normalize_eol() would fold it, without a copy). Matches are found
 * left to right and never overlap; each is reported as its byte span in @s. glibc's memmem() is
 * linear too, but a loop of memmem() calls over the rest of the text is not under ASan, whose
 * interceptor checks the whole remaining range on every call; this search never looks back.
 */
typedef struct text_scan {
	const char *s;
	size_t len, pos;
	bool fold;
	const char *pat;
	size_t m, k; /* the pattern, and how much of it is matched so far */
	const size_t *fail;
} text_scan;

/* The KMP failure function of @pat: fail[i] is the longest proper border of pat[0..i]. */
static void text_fail_table(const char *pat, size_t m, size_t *fail)
{
	fail[0] = 0;
	for (size_t i = 1, k = 0; i < m; i++) {
		while (k > 0 && pat[i] != pat[k])
			k = fail[k - 1];
		if (pat[i] == pat[k])
			k++;
		fail[i] = k;
	}
}

/* The next match: true with its span [*start, *end) in @sc->s, or false at the end. */
static bool text_scan_next(text_scan *sc, size_t *start, size_t *end)
{
	while (sc->pos < sc->len) {
		if (sc->k == 0) {
			/* Nothing matched yet: skip to the next byte that can start a match. */
			const char *hit = memchr(sc->s + sc->pos, sc->pat[0], sc->len - sc->pos);
			if (!hit) {
				sc->pos = sc->len;
				break;
			}
			size_t at = (size_t)(hit - sc->s);
			/* A "\n" folded with its "\r" starts at the "\r": step back onto it. */
			if (sc->fold && *hit == '\n' && at > sc->pos && sc->s[at - 1] == '\r')
				at--;
			sc->pos = at;
		}
		char c = sc->s[sc->pos];
		if (sc->fold && c == '\r' && sc->pos + 1 < sc->len && sc->s[sc->pos + 1] == '\n') {
			c = '\n';
			sc->pos += 2;
		} else {
			sc->pos++;
		}
		while (sc->k > 0 && sc->pat[sc->k] != c)
			sc->k = sc->fail[sc->k - 1];
		if (sc->pat[sc->k] == c)
			sc->k++;
		if (sc->k == sc->m) {
			/* Walk back over the m characters matched: the spans never overlap, so
			 * every byte is walked back over at most once. */
			size_t p = sc->pos;
			for (size_t i = 0; i < sc->m; i++)
				p -= sc->fold && sc->s[p - 1] == '\n' && p >= 2 &&
						     sc->s[p - 2] == '\r'
					     ? 2
					     : 1;
			*start = p;
			*end = sc->pos;
			sc->k = 0;
			return true;
		}
	}
	return false;
}

text_edit_status text_edit_splice(const char *prefix, size_t prefix_len, const char *text,
				  size_t len, bool fold_crlf, const char *old, size_t old_len,
				  const char *new, size_t new_len, bool all, size_t limit,
				  char **ret, size_t *ret_len, size_t *ret_count)
{
	size_t count = 0, matched = 0, out_len, start, end;

	if (old_len == 0)
		return TEXT_EDIT_EMPTY;
	size_t *fail = malloc(old_len * sizeof(*fail));
	if (!fail)
		return TEXT_EDIT_NO_MEMORY;
	text_fail_table(old, old_len, fail);
	const text_scan init = {
		.s = text, .len = len, .fold = fold_crlf, .pat = old, .m = old_len, .fail = fail};

	/* countOccurrences(): non-overlapping, left to right, as split()/join() replace. */
	text_scan sc = init;
	while (text_scan_next(&sc, &start, &end)) {
		count++;
		matched += end - start;
	}
	*ret_count = count;
	text_edit_status status = TEXT_EDIT_OK;
	if (count == 0)
		status = TEXT_EDIT_NOT_FOUND;
	else if (count > 1 && !all)
		status = TEXT_EDIT_AMBIGUOUS;
	if (status != TEXT_EDIT_OK) {
		free(fail);
		return status;
	}

	/* len - matched cannot underflow: the spans are disjoint parts of @text. */
	size_t grow;
	if (__builtin_mul_overflow(count, new_len, &grow) ||
	    __builtin_add_overflow(len - matched, grow, &out_len) ||
	    __builtin_add_overflow(out_len, prefix_len, &out_len) || out_len == SIZE_MAX) {
		free(fail);
		*ret_len = SIZE_MAX;
		return limit < SIZE_MAX ? TEXT_EDIT_TOO_LARGE : TEXT_EDIT_NO_MEMORY;
	}
	/* Refused before the result is built: the size is known from the count alone. */
	if (out_len > limit) {
		free(fail);
		*ret_len = out_len;
		return TEXT_EDIT_TOO_LARGE;
	}

	char *out = malloc(out_len + 1), *w = out;
	if (!out) {
		free(fail);
		return TEXT_EDIT_NO_MEMORY;
	}
	memcpy(w, prefix, prefix_len);
	w += prefix_len;
	size_t p = 0;
	sc = init;
	while (text_scan_next(&sc, &start, &end)) {
		memcpy(w, text + p, start - p);
		w += start - p;
		memcpy(w, new, new_len);
		w += new_len;
		p = end;
	}
	memcpy(w, text + p, len - p);
	w += len - p;
	*w = '\0';
	free(fail);

	*ret = out;
	*ret_len = out_len;
	return TEXT_EDIT_OK;
}

text_edit_status text_apply_edit(const char *text, size_t len, const char *old, size_t old_len,
				 const char *new, size_t new_len, bool all, char **ret,
				 size_t *ret_len, size_t *ret_count)
{
	return text_edit_splice("", 0, text, len, false, old, old_len, new, new_len, all, SIZE_MAX,
				ret, ret_len, ret_count);
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
