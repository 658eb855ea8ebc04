/* SPDX-License-Identifier: MIT */
/*
 * Path canonicalisation exactly as DSH does it (dsh-compat §2.3, §4.1): realpath(3) first, so a
 * component like "link/.." resolves where chdir() would land, and only then lexical
 * normalisation, as Node's path.resolve(). A path realpath cannot resolve (missing, unreadable)
 * keeps its spelling; a missing root is then granted as spelled and matches nothing until it
 * exists, which is the conservative outcome.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"

/* Appends the components of @p to @out (length *@len), resolving "." and ".." lexically. */
static void push_components(char *out, size_t *len, const char *p)
{
	while (*p) {
		while (*p == '/')
			p++;
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);

		if (n == 0 || (n == 1 && p[0] == '.')) {
			/* nothing */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			/* ".." above the root stays at the root, as in path.resolve(). */
			while (*len > 0 && out[*len - 1] != '/')
				(*len)--;
			if (*len > 0)
				(*len)--;
		} else {
			out[(*len)++] = '/';
			memcpy(out + *len, p, n);
			*len += n;
		}
		p = end;
	}
}

int path_lexical_resolve(const char *cwd, const char *path, char **ret_path)
{
	bool absolute = path[0] == '/';
	if (!absolute && cwd[0] != '/')
		return -EINVAL;

	size_t cap;
	if (__builtin_add_overflow(strlen(path), absolute ? 0 : strlen(cwd), &cap) ||
	    __builtin_add_overflow(cap, 3, &cap))
		return -ENAMETOOLONG;

	_cleanup_free_ char *out = malloc(cap);
	if (!out)
		return -ENOMEM;

	size_t len = 0;
	if (!absolute)
		push_components(out, &len, cwd);
	push_components(out, &len, path);
	if (len == 0)
		out[len++] = '/';
	out[len] = '\0';

	if (len >= DSB_PATH_MAX)
		return -ENAMETOOLONG;
	*ret_path = TAKE_PTR(out);
	return 0;
}

int path_canonical(const char *path, char **ret_path)
{
	char *real = realpath(path, NULL);
	if (!real) {
		if (errno == ENOMEM)
			return -ENOMEM;
		real = strdup(path);
		if (!real)
			return -ENOMEM;
	}
	*ret_path = real;
	return 0;
}

int path_resolve_root(const char *path, char **ret_path)
{
	_cleanup_free_ char *canonical = NULL;
	int r = path_canonical(path, &canonical);
	if (r < 0)
		return r;

	/* Only a path realpath left relative needs the cwd, which may itself be gone. */
	_cleanup_free_ char *cwd = NULL;
	if (canonical[0] != '/') {
		cwd = getcwd(NULL, 0);
		if (!cwd)
			return -errno;
	}
	return path_lexical_resolve(cwd ? cwd : "/", canonical, ret_path);
}

int fsync_dir(const char *dir)
{
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		return -errno;
	return 0;
}

int mkdir_p(const char *path, mode_t mode, bool sync)
{
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	for (char *slash = p + 1;; slash++) {
		slash = strchr(slash, '/');
		if (slash)
			*slash = '\0';
		if (mkdir(p, mode) < 0) {
			if (errno != EEXIST)
				return -errno;
		} else if (sync) {
			/* The new entry is durable only once its parent directory is synced. */
			char *parent_end = strrchr(p, '/');
			if (parent_end && parent_end != p) {
				*parent_end = '\0';
				int r = fsync_dir(p);
				*parent_end = '/';
				if (r < 0)
					return r;
			}
		}
		if (!slash)
			return 0;
		*slash = '/';
	}
}

bool path_is_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0' || n == 1);
}

const char *path_root_of(char *const *roots, const char *path)
{
	for (char *const *r = roots; r && *r; r++)
		if (path_is_under(path, *r))
			return *r;
	return NULL;
}

int path_link_within(const char *path, char *const *dirs, char **ret_link)
{
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	*ret_link = NULL;
	for (char *slash = p + 1;; slash++) {
		slash = strchrnul(slash, '/');
		char saved = *slash;
		*slash = '\0';
		struct stat st;
		if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode)) {
			_cleanup_free_ char *parent = NULL, *real_parent = NULL;
			if (path_lexical_resolve(p, "..", &parent) < 0 ||
			    path_canonical(parent, &real_parent) < 0)
				return -ENOMEM;
			if (path_root_of(dirs, real_parent)) {
				*ret_link = strdup(p);
				return *ret_link ? 1 : -ENOMEM;
			}
		}
		*slash = saved;
		if (!saved)
			return 0;
	}
}
