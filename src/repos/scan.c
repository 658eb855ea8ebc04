/* SPDX-License-Identifier: MIT */
/*
 * The repositories below the writable roots, found as git would find them from a directory:
 * a ".git" entry (a gitdir or a gitfile), or the directory itself a bare repository (what git's
 * is_git_directory() asks: HEAD, objects/ and refs/). Each directory is read once, through
 * its parent's descriptor with O_NOFOLLOW, to a fixed depth and a fixed number in all.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "repos.h"

typedef struct scan {
	char **markers;
	size_t dirs; /* read so far */
	bool truncated;
} scan;

/* The type of @dfd's entry @e, asked of the file system where readdir() did not say. */
static unsigned char entry_type(int dfd, const struct dirent *e)
{
	struct stat st;
	if (e->d_type != DT_UNKNOWN)
		return e->d_type;
	if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return DT_UNKNOWN;
	return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
}

static bool skipped(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, ".git") == 0 ||
	       strcmp(name, "node_modules") == 0;
}

/*
 * A subdirectory @name of @dfd (@path) that holds no directory (a link count of 2, where the
 * file system counts them: most of a tree's directories) is no bare repository and has no
 * gitdir, and has no subdirectory to look into: whether it holds a gitfile is one stat, not
 * a read of every name in it. Returns whether it was such a leaf (@io_r: -ENOMEM).
 */
static bool scan_leaf(scan *s, int dfd, const char *name, const char *path, int *io_r)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_nlink != 2)
		return false;
	if (s->dirs >= REPOS_DIRS_MAX) {
		s->truncated = true;
		return true;
	}
	s->dirs++;
	_cleanup_free_ char *gitfile = NULL;
	if (asprintf(&gitfile, "%s/.git", name) < 0) {
		*io_r = -ENOMEM;
		return true;
	}
	if (fstatat(dfd, gitfile, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
		char *m = NULL;
		*io_r = asprintf(&m, "%s/.git", path) < 0 ? -ENOMEM : strv_consume(&s->markers, m);
	}
	return true;
}

/*
 * Reads the directory @fd (owned), @path, @depth below its root: its marker, then its
 * subdirectories. Recursion is bounded by REPOS_DEPTH.
 */
/* NOLINTNEXTLINE(misc-no-recursion): at most REPOS_DEPTH deep */
static int scan_dir(scan *s, int fd, const char *path, int depth)
{
	if (s->dirs >= REPOS_DIRS_MAX) {
		s->truncated = true;
		(void)close(fd);
		return 0;
	}
	s->dirs++;
	DIR *d = fdopendir(fd);
	if (!d) {
		(void)close(fd);
		return errno == ENOMEM ? -ENOMEM : 0;
	}
	enum {
		HEAD = 1,
		OBJECTS = 2,
		REFS = 4,
		BARE = 7
	};
	unsigned bare = 0;
	bool dotgit = false;
	_cleanup_strv_free_ char **subdirs = NULL;
	int r = 0;
	for (struct dirent *e; r >= 0 && (e = readdir(d));) {
		unsigned char type = entry_type(dirfd(d), e);
		if (strcmp(e->d_name, ".git") == 0)
			dotgit = type == DT_DIR || type == DT_REG;
		else if (strcmp(e->d_name, "HEAD") == 0 && type == DT_REG)
			bare |= HEAD;
		else if (strcmp(e->d_name, "objects") == 0 && type == DT_DIR)
			bare |= OBJECTS;
		else if (strcmp(e->d_name, "refs") == 0 && type == DT_DIR)
			bare |= REFS;
		if (type == DT_DIR && !skipped(e->d_name) && depth < REPOS_DEPTH)
			r = strv_push(&subdirs, e->d_name);
	}
	int dfd = dirfd(d);
	if (r >= 0 && bare == BARE)
		r = strv_push(&s->markers, path);
	else if (r >= 0 && dotgit) {
		_cleanup_free_ char *m = NULL;
		r = asprintf(&m, "%s/.git", strcmp(path, "/") ? path : "") < 0
			    ? -ENOMEM
			    : strv_consume(&s->markers, TAKE_PTR(m));
	}
	/* Nothing below a bare repository is another's directory. */
	for (char **n = subdirs; r >= 0 && bare != BARE && n && *n; n++) {
		_cleanup_free_ char *p = NULL;
		if (asprintf(&p, "%s/%s", strcmp(path, "/") ? path : "", *n) < 0) {
			r = -ENOMEM;
			break;
		}
		if (scan_leaf(s, dfd, *n, p, &r))
			continue;
		int sub = openat(dfd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			r = scan_dir(s, sub, p, depth + 1);
	}
	(void)closedir(d);
	return r;
}

static int compare(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int repos_scan(char *const *roots, char ***ret_markers, bool *ret_truncated)
{
	scan s = {.markers = calloc(1, sizeof(char *))};
	int r = s.markers ? 0 : -ENOMEM;
	for (char *const *root = roots; r >= 0 && root && *root; root++) {
		if (strcmp(*root, "/tmp") == 0)
			continue;
		_cleanup_close_ int path_fd = open_dir_no_symlinks(*root);
		int fd =
			path_fd < 0 ? -1 : openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			r = scan_dir(&s, fd, *root, 0);
	}
	if (r < 0) {
		strv_free(s.markers);
		return r;
	}
	qsort(s.markers, strv_length(s.markers), sizeof(char *), compare);
	*ret_markers = s.markers;
	if (ret_truncated)
		*ret_truncated = s.truncated;
	return 0;
}

int repos_check(char *const *roots, char *const *scope, char *const *known, strbuf *notes)
{
	_cleanup_strv_free_ char **markers = NULL;
	int r = repos_scan(roots, &markers, NULL);
	for (char **m = markers; r >= 0 && m && *m; m++)
		if (!strv_contains(known, *m))
			r = repos_disarm(*m, scope, known, notes);
	return r;
}

/* Whether the directory @dir is a bare repository: HEAD, objects/ and refs/ in it. */
static bool is_bare(const char *dir)
{
	_cleanup_close_ int fd = open_dir_no_symlinks(dir);
	struct stat st;
	return fd >= 0 && fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode) && fstatat(fd, "objects", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode) && fstatat(fd, "refs", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

int repos_check_path(const char *path, char *const *roots, char *const *scope, char *const *known,
		     strbuf *notes)
{
	const char *root = path_root_of(roots, path);
	if (!root || strcmp(root, "/tmp") == 0)
		return 0;
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return -ENOMEM;
	/* From the path up to its root: the first ".git", or a bare repository. */
	for (;;) {
		char *slash = strrchr(p, '/');
		bool dotgit = slash && strcmp(slash, "/.git") == 0;
		if (dotgit || is_bare(p)) {
			if (strv_contains(known, p))
				return 0;
			return repos_disarm(p, scope, known, notes);
		}
		if (!slash || strcmp(p, root) == 0)
			return 0;
		*(slash == p ? slash + 1 : slash) = '\0';
	}
}
