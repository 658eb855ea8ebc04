/* SPDX-License-Identifier: MIT */
/*
 * Records declared once (confine.h): one walk over a record's table of fields encodes it for
 * another process, one decodes it there, one frees it. The encoding is this machine's own (the
 * two ends are the same program, forked): scalars as they lie in memory, a string as its
 * length and bytes, a vector as its count and strings, NULL as a count of NONE. Decoding trusts
 * nothing: every length is checked against what is left, so a truncated or forged message is
 * refused rather than read past. The walks recurse into nested records, as deep as the types
 * nest (a plan's Landlock grants and mounts: two levels), never as deep as data says.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confine.h"

#define NONE UINT32_MAX /* a NULL string, vector or record */

static int put(strbuf *sb, const void *p, size_t n)
{
	return strbuf_append(sb, p, n);
}

static int put_u32(strbuf *sb, uint32_t v)
{
	return put(sb, &v, sizeof(v));
}

static int put_str(strbuf *sb, const char *s)
{
	if (!s)
		return put_u32(sb, NONE);
	size_t n = strlen(s);
	if (n >= NONE)
		return -E2BIG;
	int r = put_u32(sb, (uint32_t)n);
	return r < 0 ? r : put(sb, s, n);
}

static int put_strv(strbuf *sb, char *const *v)
{
	if (!v)
		return put_u32(sb, NONE);
	size_t n = strv_length(v);
	if (n >= NONE)
		return -E2BIG;
	int r = put_u32(sb, (uint32_t)n);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = put_str(sb, v[i]);
	return r;
}

/* NOLINTNEXTLINE(misc-no-recursion): as deep as the types nest */
int record_encode(strbuf *sb, const record_type *t, const void *rec)
{
	const char *base = rec;
	int r = 0;
	for (size_t i = 0; r >= 0 && i < t->n_fields; i++) {
		const record_field *f = &t->fields[i];
		const char *at = base + f->offset;
		switch (f->kind) {
		case FIELD_BOOL:
			r = put_u32(sb, *(const bool *)at);
			break;
		case FIELD_U16:
		case FIELD_U32:
		case FIELD_I32:
		case FIELD_U64:
			r = put(sb, at, f->size);
			break;
		case FIELD_STR:
			r = put_str(sb, *(char *const *)at);
			break;
		case FIELD_STRV:
			r = put_strv(sb, *(char **const *)at);
			break;
		case FIELD_RECORD:
			r = record_encode(sb, f->type, at);
			break;
		case FIELD_VEC: {
			const record_vec *vec = (const record_vec *)at;
			uint64_t n = vec->n;
			r = put(sb, &n, sizeof(n));
			for (size_t k = 0; r >= 0 && k < vec->n; k++)
				r = record_encode(sb, f->type,
						  (const char *)vec->v + k * f->type->size);
			break;
		}
		case FIELD_PTR: {
			const void *p = *(void *const *)at;
			r = put_u32(sb, p ? 1 : NONE);
			if (r >= 0 && p)
				r = record_encode(sb, f->type, p);
			break;
		}
		}
	}
	return r;
}

/* Reading it back: every length checked against what is left. */
typedef struct reader {
	const char *p;
	size_t left;
} reader;

static int get(reader *rd, void *out, size_t n)
{
	if (rd->left < n)
		return -EBADMSG;
	memcpy(out, rd->p, n);
	rd->p += n;
	rd->left -= n;
	return 0;
}

static int get_u32(reader *rd, uint32_t *ret)
{
	return get(rd, ret, sizeof(*ret));
}

static int get_str(reader *rd, char **ret)
{
	uint32_t n;
	int r = get_u32(rd, &n);
	if (r < 0 || n == NONE)
		return r;
	if (n > rd->left || memchr(rd->p, '\0', n))
		return -EBADMSG; /* past the end, or a NUL inside */
	if (!(*ret = strndup(rd->p, n)))
		return -ENOMEM;
	rd->p += n;
	rd->left -= n;
	return 0;
}

static int get_strv(reader *rd, char ***ret)
{
	uint32_t n;
	int r = get_u32(rd, &n);
	if (r < 0 || n == NONE)
		return r;
	/* Each string takes its length at least: more than that many cannot follow. */
	if (n > rd->left / sizeof(uint32_t))
		return -EBADMSG;
	char **v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	*ret = v;
	for (uint32_t i = 0; r >= 0 && i < n; i++) {
		r = get_str(rd, &v[i]);
		if (r >= 0 && !v[i])
			r = -EBADMSG; /* no NULL inside a vector */
	}
	return r;
}

/* NOLINTNEXTLINE(misc-no-recursion): as deep as the types nest */
static int decode(reader *rd, const record_type *t, void *rec)
{
	char *base = rec;
	int r = 0;
	for (size_t i = 0; r >= 0 && i < t->n_fields; i++) {
		const record_field *f = &t->fields[i];
		char *at = base + f->offset;
		switch (f->kind) {
		case FIELD_BOOL: {
			uint32_t v;
			r = get_u32(rd, &v);
			*(bool *)at = v != 0;
			break;
		}
		case FIELD_U16:
		case FIELD_U32:
		case FIELD_I32:
		case FIELD_U64:
			r = get(rd, at, f->size);
			break;
		case FIELD_STR:
			r = get_str(rd, (char **)at);
			break;
		case FIELD_STRV:
			r = get_strv(rd, (char ***)at);
			break;
		case FIELD_RECORD:
			r = decode(rd, f->type, at);
			break;
		case FIELD_VEC: {
			record_vec *vec = (record_vec *)at;
			uint64_t n;
			r = get(rd, &n, sizeof(n));
			/* A record takes a byte at least: more than that many cannot follow. */
			if (r >= 0 && n > rd->left)
				r = -EBADMSG;
			if (r >= 0 && !(vec->v = calloc(n ? (size_t)n : 1, f->type->size)))
				r = -ENOMEM;
			for (uint64_t k = 0; r >= 0 && k < n; k++) {
				vec->n = (size_t)k + 1; /* what record_free() must look at */
				r = decode(rd, f->type, (char *)vec->v + k * f->type->size);
			}
			break;
		}
		case FIELD_PTR: {
			uint32_t present;
			r = get_u32(rd, &present);
			if (r < 0 || present == NONE)
				break;
			void *p = calloc(1, f->type->size);
			if (!p)
				return -ENOMEM;
			*(void **)at = p;
			r = present == 1 ? decode(rd, f->type, p) : -EBADMSG;
			break;
		}
		}
	}
	return r;
}

int record_decode(const record_type *t, const void *buf, size_t len, void *rec)
{
	reader rd = {.p = buf, .left = len};
	int r = decode(&rd, t, rec);
	return r < 0 ? r : rd.left == 0 ? 0 : -EBADMSG;
}

/* NOLINTNEXTLINE(misc-no-recursion): as deep as the types nest */
void record_free(const record_type *t, void *rec)
{
	char *base = rec;
	for (size_t i = 0; i < t->n_fields; i++) {
		const record_field *f = &t->fields[i];
		char *at = base + f->offset;
		switch (f->kind) {
		case FIELD_BOOL:
		case FIELD_U16:
		case FIELD_U32:
		case FIELD_I32:
		case FIELD_U64:
			break;
		case FIELD_STR:
			free(*(char **)at);
			break;
		case FIELD_STRV:
			strv_free(*(char ***)at);
			break;
		case FIELD_RECORD:
			record_free(f->type, at);
			break;
		case FIELD_VEC: {
			record_vec *vec = (record_vec *)at;
			for (size_t k = 0; vec->v && k < vec->n; k++)
				record_free(f->type, (char *)vec->v + k * f->type->size);
			free(vec->v);
			break;
		}
		case FIELD_PTR: {
			void *p = *(void **)at;
			if (p)
				record_free(f->type, p);
			free(p);
			break;
		}
		}
	}
	memset(rec, 0, t->size);
}

/* --- framed on a stream ---------------------------------------------------------------------- */

int record_send(int fd, const record_type *t, const void *rec)
{
	_cleanup_(strbuf_done) strbuf sb = STRBUF_INIT;
	uint64_t len = 0;
	int r = put(&sb, &len, sizeof(len));
	if (r >= 0)
		r = record_encode(&sb, t, rec);
	if (r < 0)
		return r;
	len = sb.len - sizeof(len);
	memcpy(sb.buf, &len, sizeof(len));
	return fd_write_all(fd, sb.buf, sb.len);
}

int record_receive(int fd, const record_type *t, void *rec)
{
	uint64_t len;
	int r = fd_read_all(fd, &len, sizeof(len));
	if (r < 0)
		return r == -EIO ? -EPIPE : r; /* the end, before a record */
	if (len > RECORD_FRAME_MAX)
		return -EBADMSG;
	_cleanup_free_ char *buf = malloc(len ? (size_t)len : 1);
	if (!buf)
		return -ENOMEM;
	r = fd_read_all(fd, buf, (size_t)len);
	if (r < 0)
		return r == -EIO ? -EBADMSG : r; /* cut short */
	return record_decode(t, buf, (size_t)len, rec);
}
