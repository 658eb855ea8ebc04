/* SPDX-License-Identifier: MIT */
/*
 * Protected paths as mounts (docs/design/protected-paths.md). A backend turns a call's
 * protected paths (policy/protect.c) into mount operations in the command's own mount
 * namespace: bwrap as arguments after its writable binds, Landlock in the child before it
 * restricts itself (Landlock grants rights to whole subtrees and cannot take a subtree back, so
 * a read-only bind is what subtracts one).
 *
 *   read-only  the path bound onto itself read-only: nothing in it changes, and being a mount
 *              point it cannot be renamed, removed or replaced either;
 *   pin        a directory between a writable root and a protected path bound onto itself,
 *              writable: the command cannot rename it away and put its own in its place (a
 *              mount point cannot be renamed in its namespace), so the protected path stays
 *              where the harness and git will look;
 *   hide       a denyRead directory gets an empty, unreadable (mode 000), read-only tmpfs over
 *              it, a file /dev/null (reads as empty under Landlock; bwrap's binds are nodev,
 *              so there it cannot be opened at all).
 *
 * Pins come first, then the rest, each group parents first: a read-only bind of a directory
 * then covers any pin below it, and a read-only file inside a pinned directory stays so.
 * Nothing is mounted below a hidden directory: it is out of reach already.
 *
 * A name that must stay absent (a main gitdir's commondir) has no mount: no empty stand-in
 * would do, so it is removed after the call instead (protect_remove_absent()).
 *
 * A protected path that does not exist is made, empty, before the call (beneath its root, no
 * symlink followed), so that there is something to bind and the command cannot create it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine.h"

static int ops_add_from(protect_ops *o, protect_op op, const char *path, const char *source,
			dsb_protect_kind kind)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->v[i].path, path) == 0) {
			/* A read-only or hidden path needs no pin of its own. */
			if (o->v[i].op == PROTECT_PIN && op != PROTECT_PIN) {
				o->v[i].op = op;
				o->v[i].kind = kind;
			}
			return 0;
		}
	protect_mount *v = reallocarray(o->v, o->n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	o->v = v;
	char *copy = strdup(path), *from = source ? strdup(source) : NULL;
	if (!copy || (source && !from)) {
		free(copy);
		return -ENOMEM;
	}
	v[o->n++] = (protect_mount){.op = op, .path = copy, .source = from, .kind = kind};
	return 0;
}

static int ops_add(protect_ops *o, protect_op op, const char *path, dsb_protect_kind kind)
{
	return ops_add_from(o, op, path, NULL, kind);
}

/* Pins every directory strictly between @root and @path (none when @path is @root). */
static int pin_between(protect_ops *o, const char *root, const char *path)
{
	size_t n = strlen(root);
	if (n == 1)
		n = 0;
	if (strlen(path) <= n + 1)
		return 0;
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	int r = 0;
	for (char *s = p + n + 1; r >= 0 && (s = strchr(s, '/')); s++) {
		*s = '\0';
		r = ops_add(o, PROTECT_PIN, p, DSB_PROTECT_GIT);
		*s = '/';
	}
	return r;
}

static int by_op_then_path(const void *a, const void *b)
{
	const protect_mount *x = a, *y = b;
	if ((x->op == PROTECT_PIN) != (y->op == PROTECT_PIN))
		return x->op == PROTECT_PIN ? -1 : 1;
	return strcmp(x->path, y->path);
}

/* What lies below a hidden directory is out of reach already, and its mount point is gone. */
static void drop_hidden(protect_ops *o)
{
	size_t k = 0;
	for (size_t i = 0; i < o->n; i++) {
		bool below = false;
		for (size_t j = 0; j < o->n && !below; j++)
			below = o->v[j].op == PROTECT_HIDE_DIR && i != j &&
				strcmp(o->v[i].path, o->v[j].path) != 0 &&
				path_is_under(o->v[i].path, o->v[j].path);
		if (below) {
			free(o->v[i].path);
			free(o->v[i].source);
		} else
			o->v[k++] = o->v[i];
	}
	o->n = k;
}

void protect_ops_done(protect_ops *o)
{
	if (!o)
		return;
	for (size_t i = 0; i < o->n; i++) {
		free(o->v[i].path);
		free(o->v[i].source);
	}
	free(o->v);
	*o = (protect_ops){0};
}

int protect_ops_build(const dsb_exec_policy *policy, char *const *visible, char *const *unseen,
		      protect_ops *ret)
{
	protect_ops o = {0};
	int r = 0;
	for (size_t i = 0; r >= 0 && i < policy->n_protected; i++) {
		const dsb_protected *e = &policy->protected[i];
		bool hide = dsb_protect_kind_hides(e->kind);
		if (e->absent) /* nothing to bind: protect_remove_absent() after the call */
			continue;
		/* In the session's private /tmp (the spill directory): where the command sees it.
		 */
		if (policy->tmp_dir && path_is_under(e->path, policy->tmp_dir) &&
		    strcmp(e->path, policy->tmp_dir) != 0) {
			_cleanup_free_ char *seen = NULL;
			if (asprintf(&seen, "/tmp%s", e->path + strlen(policy->tmp_dir)) < 0)
				r = -ENOMEM;
			else
				r = ops_add_from(
					&o,
					hide ? (e->directory ? PROTECT_HIDE_DIR : PROTECT_HIDE_FILE)
					     : PROTECT_READ_ONLY,
					seen, e->path, e->kind);
			continue;
		}
		const char *root = path_root_of(visible, e->path);
		/* Outside every writable root a path is read-only already; hidden it still must
		 * be, unless the backend does not show it at all (the host's /tmp, where the
		 * command has one of its own). */
		if (!root && (!hide || path_root_of(unseen, e->path)))
			continue;
		if (root)
			r = pin_between(&o, root, e->path);
		if (r >= 0)
			r = ops_add(&o,
				    hide ? (e->directory ? PROTECT_HIDE_DIR : PROTECT_HIDE_FILE)
					 : PROTECT_READ_ONLY,
				    e->path, e->kind);
	}
	/*
	 * A workspace inside another writable root (/tmp/ws under Landlock) is pinned too, whether
	 * or not anything else is protected: the command cannot rename it away and leave another
	 * directory, or a symlink to "/", for the next call to take as its root. From the
	 * outermost such root: with TMPDIR=/tmp/user/1000 and the workspace below it, TMPDIR
	 * itself can be renamed through /tmp.
	 */
	const char *outer = NULL;
	for (char *const *v = visible; r >= 0 && v && *v; v++)
		if (strcmp(*v, policy->workspace_root) != 0 &&
		    path_is_under(policy->workspace_root, *v) &&
		    (!outer || strlen(*v) < strlen(outer)))
			outer = *v;
	if (r >= 0 && outer) {
		r = pin_between(&o, outer, policy->workspace_root);
		if (r >= 0)
			r = ops_add(&o, PROTECT_PIN, policy->workspace_root, DSB_PROTECT_GIT);
	}
	if (r < 0) {
		protect_ops_done(&o);
		return r;
	}
	if (o.n > 1)
		qsort(o.v, o.n, sizeof(*o.v), by_op_then_path);
	drop_hidden(&o);
	*ret = o;
	return 0;
}

/* --- missing protected paths ------------------------------------------------------------------ */

/*
 * Makes @path (inside @root) as an empty directory or file, with its missing parents,
 * beneath @root and through no symlink: a command may have planted one on the way to point
 * this (unconfined) step elsewhere. An entry that exists now is left as it is. -errno.
 */
static int make_missing(const char *root, const char *path, bool directory, mode_t mode)
{
	int dfd = open_dir_no_symlinks(root);
	if (dfd < 0)
		return dfd;
	_cleanup_free_ char *rel = strdup(path + strlen(root) + (strcmp(root, "/") != 0));
	if (!rel) {
		(void)close(dfd);
		return -ENOMEM;
	}
	int r = 0;
	for (char *name = rel; r >= 0;) {
		char *slash = strchr(name, '/');
		bool last = !slash;
		if (slash)
			*slash = '\0';
		if (last && !directory) {
			int fd = openat(dfd, name,
					O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
			r = fd >= 0 || errno == EEXIST ? 0 : -errno;
			if (fd >= 0)
				(void)close(fd);
			break;
		}
		if (mkdirat(dfd, name, last ? mode : 0755) < 0 && errno != EEXIST)
			r = -errno;
		int next = r < 0 ? -1
				 : openat(dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (r >= 0 && next < 0)
			r = -errno;
		(void)close(dfd);
		dfd = next;
		if (last || r < 0)
			break;
		name = slash + 1;
	}
	if (dfd >= 0)
		(void)close(dfd);
	return r;
}

int protect_make_missing(const dsb_exec_policy *policy, char *const *roots, char *why,
			 size_t why_size)
{
	for (size_t i = 0; i < policy->n_protected; i++) {
		const dsb_protected *e = &policy->protected[i];
		const char *root = path_root_of(roots, e->path);
		/* A root itself exists (it was opened as one) and is no protected path to make. */
		if (e->exists || e->absent || !root || strcmp(root, e->path) == 0)
			continue;
		bool private = e->kind == DSB_PROTECT_STORE || e->kind == DSB_PROTECT_SPILL;
		int r = make_missing(root, e->path, e->directory,
				     private	    ? 0700
				     : e->directory ? 0755
						    : 0644);
		if (r == -ENOMEM)
			return r;
		if (r < 0 && dsb_protect_kind_required(e->kind)) {
			(void)snprintf(why, why_size, "cannot make the protected %s %s: %s",
				       dsb_protect_kind_to_string(e->kind), e->path, strerror(-r));
			return -EPERM;
		}
	}
	return 0;
}

/*
 * The symlink @e->path, entry @name of @dfd, as it was before the call: whatever the command
 * left in its place is removed and the symlink made again. -ENOMEM, else 0.
 */
static int restore_link(int dfd, const char *name, const dsb_protected *e, strbuf *notes)
{
	char target[DSB_PATH_MAX];
	ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);
	if (n >= 0) {
		target[n] = '\0';
		if (strcmp(target, e->link) == 0)
			return 0;
	}
	int r = rm_tree_at(dfd, name);
	if (r >= 0 && symlinkat(e->link, dfd, name) < 0)
		r = -errno;
	if (!notes)
		return 0;
	return strbuf_printf(notes, "%s[sandbox: %s %s after the call: it is protected (%s)]",
			     notes->len ? "\n" : "", e->path,
			     r < 0 ? "was replaced, and could not be restored" : "was restored",
			     dsb_protect_kind_reason(e->kind)) < 0
		       ? -ENOMEM
		       : 0;
}

int protect_remove_absent(const dsb_exec_policy *policy, strbuf *notes)
{
	int ret = 0;
	for (size_t i = 0; policy && i < policy->n_protected; i++) {
		const dsb_protected *e = &policy->protected[i];
		struct stat st;
		if (!e->absent)
			continue;
		/*
		 * Nothing there, the usual case (22 start-up names a root): no more to do. A
		 * symlink on the way that hides what is there would stop the walk below as well.
		 */
		if (!e->link && lstat(e->path, &st) < 0 && errno == ENOENT)
			continue;
		/* Through its directory, opened with no symlink on the way: the command's last
		 * word on that path must not steer this unconfined unlink elsewhere. */
		_cleanup_free_ char *dir = strdup(e->path);
		char *slash = dir ? strrchr(dir, '/') : NULL;
		if (!slash || slash == dir)
			continue;
		*slash = '\0';
		_cleanup_close_ int dfd = open_dir_no_symlinks(dir);
		if (e->link) {
			if (dfd >= 0 && restore_link(dfd, slash + 1, e, notes) < 0)
				ret = -ENOMEM;
			continue;
		}
		if (dfd < 0 || fstatat(dfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		int r = rm_tree_at(dfd, slash + 1);
		if (notes && e->kind != DSB_PROTECT_GIT &&
		    strbuf_printf(notes, "%s[sandbox: %s %s after the call: it is protected (%s)]",
				  notes->len ? "\n" : "", e->path,
				  r < 0 ? "was made, and could not be removed" : "was removed",
				  dsb_protect_kind_reason(e->kind)) < 0)
			ret = -ENOMEM;
	}
	return ret;
}

/* How to fix a policy-bearing path a backend cannot protect. */
static const char *fix_for(dsb_protect_kind kind)
{
	switch (kind) {
	case DSB_PROTECT_STORE:
		return "move the store out of the writable roots (--store or DSH_SANDBOX_STORE)";
	case DSB_PROTECT_CONFIG:
		return "move the configuration out of the writable roots";
	case DSB_PROTECT_ANSWERER:
		return "move the answerer out of the writable roots";
	case DSB_PROTECT_RUNNER:
		return "move the runner out of the writable roots";
	case DSB_PROTECT_SPILL:
		return "point TMPDIR out of the writable roots";
	case DSB_PROTECT_GIT:
	case DSB_PROTECT_LISTED:
	case DSB_PROTECT_DENY_READ:
	case DSB_PROTECT_STARTUP:
	case DSB_PROTECT_PRIVATE_TMP:
	case _DSB_PROTECT_MAX:
	case _DSB_PROTECT_INVALID:
		break;
	}
	return "";
}

int protect_refuse(const protect_ops *o, const char *cannot, char *why, size_t why_size)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].op != PROTECT_PIN && dsb_protect_kind_required(o->v[i].kind)) {
			(void)snprintf(why, why_size,
				       "the %s %s lies in a writable root and %s; %s",
				       dsb_protect_kind_to_string(o->v[i].kind), o->v[i].path,
				       cannot, fix_for(o->v[i].kind));
			return -EPERM;
		}
	return 0;
}

bool protect_ops_required(const protect_ops *o)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->v[i].op != PROTECT_PIN && dsb_protect_kind_required(o->v[i].kind))
			return true;
	return false;
}

/* --- bwrap ---------------------------------------------------------------------------------- */

int protect_bwrap_args(const protect_ops *o, char ***io_argv)
{
	int r = 0;
	for (size_t i = 0; r >= 0 && i < o->n; i++) {
		const char *p = o->v[i].path;
		switch (o->v[i].op) {
		case PROTECT_PIN:
			r = strv_push(io_argv, "--bind");
			break;
		case PROTECT_READ_ONLY:
			r = strv_push(io_argv, "--ro-bind");
			break;
		case PROTECT_HIDE_FILE:
			r = strv_push(io_argv, "--ro-bind");
			if (r >= 0)
				r = strv_push(io_argv, "/dev/null");
			if (r >= 0)
				r = strv_push(io_argv, p);
			continue;
		case PROTECT_HIDE_DIR: {
			const char *a[] = {"--perms", "0000", "--tmpfs", p, "--remount-ro", p};
			for (size_t k = 0; r >= 0 && k < ELEMENTSOF(a); k++)
				r = strv_push(io_argv, a[k]);
			continue;
		}
		}
		if (r >= 0)
			r = strv_push(io_argv, o->v[i].source ? o->v[i].source : p);
		if (r >= 0)
			r = strv_push(io_argv, p);
	}
	return r;
}
