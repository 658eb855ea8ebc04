/* SPDX-License-Identifier: MIT */
/*
 * What the model is told of the file operations the sandbox refused, from the supervisor's
 * evidence (docs/design/evidence.md): each refused path once, in the order they came, as a
 * line in the style of the network's, and how many more there were. The evidence arrives as
 * "OP\tERRNO\tPATH\tNAMED\tWHY" entries (confine_refusals.files_named), which come from a
 * process of ours, but are parsed as carefully as anything read from another process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

void refusal_done(dsb_refusal *f)
{
	if (!f)
		return;
	free(f->op);
	free(f->path);
	free(f->named);
	free(f->why);
	*f = (dsb_refusal){0};
}

/* The errno an entry names ("EACCES"), or 0 for a name this build does not know. */
static int errno_of(const char *name)
{
	static const int known[] = {EACCES, EROFS, EPERM, EXDEV, ENOENT, EEXIST};
	for (size_t i = 0; i < ELEMENTSOF(known); i++) {
		const char *n = strerrorname_np(known[i]);
		if (n && strcmp(n, name) == 0)
			return known[i];
	}
	return 0;
}

/* Splits "OP\tERRNO\tPATH\tNAMED\tWHY" into @f; -EBADMSG when it is not one. */
static int refusal_parse(const char *entry, dsb_refusal *f)
{
	const char *field[5];
	size_t len[5];
	const char *p = entry;
	for (size_t i = 0; i < 5; i++) {
		const char *tab = strchr(p, '\t');
		if ((i < 4) != (tab != NULL))
			return -EBADMSG;
		field[i] = p;
		len[i] = tab ? (size_t)(tab - p) : strlen(p);
		p = tab ? tab + 1 : p + len[i];
	}
	if (len[0] == 0 || len[2] == 0 || field[2][0] != '/')
		return -EBADMSG;
	*f = (dsb_refusal){.op = strndup(field[0], len[0]),
			   .path = strndup(field[2], len[2]),
			   .named = strndup(field[3], len[3]),
			   .why = strndup(field[4], len[4])};
	_cleanup_free_ char *name = strndup(field[1], len[1]);
	if (!f->op || !f->path || !f->named || !f->why || !name) {
		refusal_done(f);
		return -ENOMEM;
	}
	f->sys_errno = errno_of(name);
	return 0;
}

int refusals_parse(char *const *named, dsb_refusal **ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	size_t n = 0;
	while (named && named[n] && n < DSB_REFUSED_NAMED)
		n++;
	if (n == 0)
		return 0;
	dsb_refusal *v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		int r = refusal_parse(named[i], &v[k]);
		if (r == -ENOMEM) {
			while (k > 0)
				refusal_done(&v[--k]);
			free(v);
			return r;
		}
		/* A malformed entry is left out: the count still has it. */
		if (r >= 0)
			k++;
	}
	*ret = v;
	*ret_n = k;
	return 0;
}

/* What the model reads for @op: "write to PATH", "create PATH", ... */
static const char *op_phrase(const char *op)
{
	static const struct {
		const char *op, *phrase;
	} phrases[] = {
		{"write", "write to"},
		{"create", "create"},
		{"truncate", "truncate"},
		{"mkdir", "create directory"},
		{"remove", "remove"},
		{"rmdir", "remove directory"},
		{"rename", "rename"},
		{"link", "hard link"},
		{"symlink", "symlink"},
		{"read", "read"},
		{"chmod", "chmod"},
		{"chown", "chown"},
		{"utimes", "set the times of"},
		{"xattr", "set the attributes of"},
		{"setflags", "set the flags of"},
	};
	for (size_t i = 0; i < ELEMENTSOF(phrases); i++)
		if (strcmp(op, phrases[i].op) == 0)
			return phrases[i].phrase;
	return op;
}

/* The protected path of @p that @path is or lies beneath, the innermost; NULL when none. */
static const dsb_protected *protected_of(const dsb_exec_policy *p, const char *path)
{
	const dsb_protected *best = NULL;
	for (size_t i = 0; p && i < p->n_protected; i++)
		if (path_is_under(path, p->protected[i].path) &&
		    (!best || strlen(p->protected[i].path) > strlen(best->path)))
			best = &p->protected[i];
	return best;
}

int refusal_note(const dsb_refusal *v, size_t n, unsigned total, const dsb_exec_policy *p,
		 char **ret_note)
{
	_cleanup_(strbuf_done) strbuf sb = STRBUF_INIT;
	int r = 0;
	*ret_note = NULL;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		const dsb_protected *prot =
			strcmp(v[i].why, "outside") != 0 ? protected_of(p, v[i].path) : NULL;
		/* The command chose the name: a newline in it must not make a line of ours. */
		_cleanup_free_ char *path = NULL;
		if (sb.len > 0)
			r = strbuf_putc(&sb, '\n');
		if (r >= 0)
			r = visible_escape(v[i].path, strlen(v[i].path), VISIBLE_KEEP_BACKSLASH,
					   &path);
		if (r < 0)
			break;
		if (prot)
			r = strbuf_printf(&sb, "[sandbox: %s is protected: %s]", path,
					  dsb_protect_kind_reason(prot->kind));
		else
			r = strbuf_printf(
				&sb, "[sandbox: %s %s denied (%s)]", op_phrase(v[i].op), path,
				p && p->mode == DSB_MODE_READ_ONLY ? "read-only mode"
								   : "outside the writable roots");
	}
	/* The same path refused again, or more paths than are named: how many in all. */
	if (r >= 0 && total > n)
		r = strbuf_printf(&sb, "%s[sandbox: %u file operation%s refused in all]",
				  sb.len ? "\n" : "", total, total == 1 ? "" : "s");
	if (r < 0)
		return -ENOMEM;
	if (sb.len > 0 && !(*ret_note = strbuf_take(&sb)))
		return -ENOMEM;
	return 0;
}
