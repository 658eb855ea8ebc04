/* SPDX-License-Identifier: MIT */
/* A growable string buffer with overflow-checked growth. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static int strbuf_reserve(strbuf *sb, size_t extra)
{
	size_t need;
	if (__builtin_add_overflow(sb->len, extra, &need) || __builtin_add_overflow(need, 1, &need))
		return -ENOMEM;
	if (need <= sb->cap)
		return 0;

	size_t cap = sb->cap ? sb->cap : 64;
	while (cap < need)
		if (__builtin_mul_overflow(cap, 2, &cap))
			return -ENOMEM;

	char *grown = realloc(sb->buf, cap);
	if (!grown)
		return -ENOMEM;
	sb->buf = grown;
	sb->cap = cap;
	return 0;
}

int strbuf_append(strbuf *sb, const char *s, size_t n)
{
	int r = strbuf_reserve(sb, n);
	if (r < 0)
		return r;
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_puts(strbuf *sb, const char *s)
{
	return strbuf_append(sb, s, strlen(s));
}

int strbuf_putc(strbuf *sb, char c)
{
	return strbuf_append(sb, &c, 1);
}

int strbuf_printf(strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;

	int r = strbuf_reserve(sb, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	(void)vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
	return 0;
}

char *strbuf_take(strbuf *sb)
{
	char *s = sb->buf ? sb->buf : strdup("");
	*sb = (strbuf)STRBUF_INIT;
	return s;
}

void strbuf_done(strbuf *sb)
{
	free(sb->buf);
	*sb = (strbuf)STRBUF_INIT;
}

char *str_trim_space(char *s)
{
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	size_t n = strlen(s);
	while (n > 0 && strchr(" \t\r\n", s[n - 1]))
		s[--n] = '\0';
	return s;
}
