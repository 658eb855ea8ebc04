/* SPDX-License-Identifier: MIT */
/*
 * resolve() and isPathUnder() of DSH's fs fence (dsh-compat §7.2, §7.3; packages/fs/fs-local/src/
 * fsio.ts resolveLocalTarget, packages/fs/fs-sandbox/src/containment.ts).
 *
 * A target has two names: the display path (path.resolve(cwd, path), purely lexical, shown to
 * the model) and the target key (its realpath; for a missing file the realpath of the nearest
 * existing ancestor with the missing components re-appended). Containment is decided on the
 * key: lexically when the spellings agree, else by (st_dev, st_ino) of the key's ancestors, which
 * recognises an aliased root (a symlinked or bind-mounted spelling) without textual guesses.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fence.h"

void dsb_fs_target_done(dsb_fs_target *t)
{
	if (!t)
		return;
	free(t->display_path);
	free(t->target_key);
	t->display_path = NULL;
	t->target_key = NULL;
}

/* The error of a realpath() other than ENOENT while resolving @display. */
static int fail_resolve(const char *display, int err, dsb_error *reterr)
{
	int r;

	if (err == ENOTDIR)
		r = dsb_fail(reterr, DSB_E_FS_NOT_FOUND,
			     "cannot resolve \"%s\": a parent path segment is not a directory",
			     display);
	else if (err == ENOMEM)
		r = dsb_fail(reterr, DSB_E_NO_MEMORY, "cannot resolve \"%s\": out of memory",
			     display);
	else if (err == EACCES)
		r = dsb_fail(reterr, DSB_E_FS_PERMISSION_DENIED,
			     "cannot resolve \"%s\": permission denied", display);
	else
		r = dsb_fail_errno(reterr, DSB_E_FS_IO_ERROR, err, "cannot resolve \"%s\"",
				   display);
	if (reterr)
		reterr->sys_errno = err;
	dsb_error_set_subject(reterr, display);
	return r;
}

int dsb_fs_resolve(const char *cwd, const char *path, dsb_fs_target *ret, dsb_error *reterr)
{
	if (!cwd || !path || !ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_fs_resolve: missing argument");
	if (js_blank(path))
		return dsb_fail(reterr, DSB_E_FS_NOT_FOUND, "file_path must be a non-empty string");

	_cleanup_free_ char *display = NULL;
	int r = path_lexical_resolve(cwd, path, &display);
	if (r == -EINVAL)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "cwd must be absolute: \"%s\"", cwd);
	if (r == -ENOMEM)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "cannot resolve \"%s\": out of memory",
				path);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_FS_IO_ERROR, -r, "cannot resolve \"%s\"", path);

	/* The file's own realpath first: a symlinked file resolves to its target. */
	_cleanup_free_ char *key = realpath(display, NULL);
	if (!key && errno != ENOENT)
		return fail_resolve(display, errno, reterr);

	if (!key) {
		/*
		 * Missing: realpath the nearest existing ancestor and re-append the missing
		 * suffix, so the key stays the same once those directories are created. Every
		 * ancestor of the lexically resolved display path is a prefix of it.
		 */
		size_t len = strlen(display);
		_cleanup_free_ char *ancestor = strdup(display);
		if (!ancestor)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "cannot resolve: out of memory");
		for (;;) {
			char *slash = strrchr(ancestor, '/');
			if (slash == ancestor && ancestor[1] == '\0')
				break; /* "/" always resolves; the walk never gets here */
			*(slash == ancestor ? slash + 1 : slash) = '\0';
			_cleanup_free_ char *real = realpath(ancestor, NULL);
			if (!real && errno == ENOENT)
				continue;
			if (!real)
				return fail_resolve(display, errno, reterr);

			/* join(realAncestor, ...missing), one '/' between them */
			const char *missing = display + strlen(ancestor) + (ancestor[1] != '\0');
			size_t real_len = strlen(real);
			if (real_len + 1 + (size_t)(display + len - missing) >= DSB_PATH_MAX)
				return fail_resolve(display, ENAMETOOLONG, reterr);
			if (asprintf(&key, "%s%s%s", real, real[real_len - 1] == '/' ? "" : "/",
				     missing) < 0) {
				key = NULL;
				return dsb_fail(reterr, DSB_E_NO_MEMORY,
						"cannot resolve: out of memory");
			}
			break;
		}
		if (!key && !(key = strdup(display)))
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "cannot resolve: out of memory");
	}

	ret->display_path = TAKE_PTR(display);
	ret->target_key = TAKE_PTR(key);
	return 0;
}

/* The lexical fast path: @path is @root or below it ("/" and any root ending in '/' as is). */
static bool lexically_under(const char *path, const char *root, size_t root_len)
{
	if (strncmp(path, root, root_len) != 0)
		return false;
	if (path[root_len] == '\0')
		return true;
	return (root_len > 0 && root[root_len - 1] == '/') || path[root_len] == '/';
}

/*
 * Node's posix dirname() of the first @len bytes of @p, as a length: every result is a prefix of
 * @p except "." for a relative path with no directory part, returned as 0.
 */
static size_t dirname_len(const char *p, size_t len)
{
	bool matched_slash = true;
	size_t end = 0;

	if (len == 0)
		return 0;
	for (size_t i = len - 1; i >= 1; i--) {
		if (p[i] == '/') {
			if (!matched_slash) {
				end = i;
				break;
			}
		} else {
			matched_slash = false;
		}
	}
	if (end == 0)
		return p[0] == '/' ? 1 : 0;
	if (p[0] == '/' && end == 1)
		return 2; /* "//" */
	return end;
}

/* stat(2) where a missing path (ENOENT, ENOTDIR) is "absent" (0), not an error. 1, 0, -errno. */
static int stat_if_present(const char *path, struct stat *st)
{
	if (stat(path, st) == 0)
		return 1;
	return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
}

int fence_match_root(const char *path, const char *root, fence_match *ret, dsb_error *reterr)
{
	size_t root_len = strlen(root);

	if (lexically_under(path, root, root_len)) {
		*ret = (fence_match){.base_len = root_len};
		return 1;
	}

	struct stat root_st;
	int r = stat_if_present(root, &root_st);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_FS_IO_ERROR, -r, "cannot stat \"%s\"", root);
	if (r == 0)
		return 0;

	/* Walk path, dirname(path), ... to the top, comparing identities. One copy, truncated. */
	size_t len = strlen(path);
	_cleanup_free_ char *ancestor = strdup(path);
	if (!ancestor)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "cannot check \"%s\": out of memory",
				path);
	for (;;) {
		struct stat st;
		const char *spelled = len == 0 ? "." : ancestor;

		r = stat_if_present(spelled, &st);
		if (r < 0)
			return dsb_fail_errno(reterr, DSB_E_FS_IO_ERROR, -r, "cannot stat \"%s\"",
					      spelled);
		if (r > 0 && st.st_dev == root_st.st_dev && st.st_ino == root_st.st_ino) {
			*ret = (fence_match){.base_len = len,
					     .by_identity = true,
					     .dev = root_st.st_dev,
					     .ino = root_st.st_ino};
			return 1;
		}
		size_t parent = dirname_len(ancestor, len);
		if (parent == len)
			return 0;
		len = parent;
		ancestor[len] = '\0';
	}
}

int dsb_fs_is_under(const char *path, const char *root, dsb_error *reterr)
{
	fence_match m;

	if (!path || !root)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_fs_is_under: missing argument");
	return fence_match_root(path, root, &m, reterr);
}

/*
 * Whether /tmp/... @lexical is the sandbox's /tmp rather than a root shown inside it: the
 * workspace, in every mode (read-only shows it too, call/prepare.c), or an extra writable root.
 */
static bool in_private_tmp(const dsb_exec_policy *p, const char *lexical)
{
	if (!path_is_under(lexical, "/tmp"))
		return false;
	if (path_is_under(lexical, p->workspace_root) && strcmp(p->workspace_root, "/tmp") != 0)
		return false;
	for (char **e = p->extra_roots; e && *e; e++)
		if (path_is_under(lexical, *e))
			return false;
	return true;
}

int dsb_fs_resolve_in(const dsb_exec_policy *policy, const char *cwd, const char *path,
		      dsb_fs_target *ret, dsb_error *reterr)
{
	if (!policy || !policy->tmp_dir || !cwd || !path || js_blank(path))
		return dsb_fs_resolve(cwd, path, ret, reterr);
	_cleanup_free_ char *lexical = NULL, *mapped = NULL;
	int r = path_lexical_resolve(cwd, path, &lexical);
	if (r < 0 || !in_private_tmp(policy, lexical))
		return dsb_fs_resolve(cwd, path, ret, reterr);
	if (asprintf(&mapped, "%s%s", policy->tmp_dir, lexical + strlen("/tmp")) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "cannot resolve: out of memory");
	r = dsb_fs_resolve("/", mapped, ret, reterr);
	if (r < 0) {
		/* The model's path in the message, never the store's. */
		if (reterr && reterr->message[0]) {
			_cleanup_free_ char *msg = NULL;
			const char *at = strstr(reterr->message, mapped);
			if (at && asprintf(&msg, "%.*s%s%s", (int)(at - reterr->message),
					   reterr->message, lexical, at + strlen(mapped)) >= 0)
				(void)snprintf(reterr->message, sizeof(reterr->message), "%s", msg);
			dsb_error_set_subject(reterr, lexical);
		}
		return r;
	}
	free(ret->display_path);
	ret->display_path = TAKE_PTR(lexical);
	return 0;
}
