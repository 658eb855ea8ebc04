/* SPDX-License-Identifier: MIT */
/*
 * Which programs we run outside the sandbox to build it (bwrap, a configured runner): only
 * ones that a confined command cannot have replaced. Found by absolute path, or on PATH without
 * its empty and relative entries (they name the current directory, often the workspace); never
 * in a temp dir (a workspace-write command writes there) or, per call, the workspace; and only
 * when the file and every directory above it are owned by root or us and writable by nobody
 * else.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "confine.h"

/*
 * Nobody but root or us can have written @canon or any directory above it: each is owned by
 * root or our uid and writable by neither group nor others (a root-owned sticky directory
 * excepted).
 */
static bool trusted_file(const char *canon, char *why, size_t why_size)
{
	char path[PATH_MAX];
	uid_t me = geteuid();
	(void)snprintf(path, sizeof(path), "%s", canon);
	for (;;) {
		struct stat st;
		if (stat(path, &st) < 0) {
			(void)snprintf(why, why_size, "%s: %s", path, strerror(errno));
			return false;
		}
		/* A root-owned sticky directory (/var/tmp) lets nobody else replace our entries. */
		bool sticky = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) && st.st_uid == 0;
		if ((st.st_uid != 0 && st.st_uid != me) ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !sticky)) {
			(void)snprintf(why, why_size,
				       "%s is writable by others than root and uid %u, so %s is "
				       "not trusted",
				       path, (unsigned)me, canon);
			return false;
		}
		char *slash = strrchr(path, '/');
		if (!slash || slash == path) {
			if (strcmp(path, "/") == 0)
				return true;
			path[1] = '\0';
			continue;
		}
		*slash = '\0';
	}
}

/* @candidate, canonical, when it is a program to trust; else false with @why. */
static bool try_candidate(const char *candidate, char *out, size_t size, char *why, size_t why_size)
{
	char canon[PATH_MAX];
	struct stat st;
	if (!realpath(candidate, canon) || stat(canon, &st) < 0 || !S_ISREG(st.st_mode) ||
	    access(canon, X_OK) < 0) {
		(void)snprintf(why, why_size, "%s: not an executable file", candidate);
		return false;
	}
	/* Where a workspace-write command writes (the workspace is checked per call). */
	_cleanup_free_ char *tmp = NULL;
	char tmp_canon[PATH_MAX];
	if (path_is_under(canon, "/tmp") || (tmpdir_get(&tmp) >= 0 && realpath(tmp, tmp_canon) &&
					     path_is_under(canon, tmp_canon))) {
		(void)snprintf(why, why_size, "%s lies in a temporary directory", canon);
		return false;
	}
	if (!trusted_file(canon, why, why_size))
		return false;
	(void)snprintf(out, size, "%s", canon);
	return true;
}

int trusted_program(const char *name, char *out, size_t size, char *why, size_t why_size)
{
	char first_why[512] = "";
	bool seen = false;

	why[0] = '\0';
	if (strchr(name, '/')) {
		if (name[0] != '/') {
			(void)snprintf(why, why_size, "'%s' is not an absolute path", name);
			return -EPERM;
		}
		if (access(name, F_OK) < 0) {
			(void)snprintf(why, why_size, "%s: %s", name, strerror(errno));
			return -ENOENT;
		}
		return try_candidate(name, out, size, why, why_size) ? 0 : -EPERM;
	}

	/*
	 * PATH, as DSH's spawn would search it, but never an empty or relative entry (they name
	 * the caller's current directory, often the workspace).
	 */
	const char *path = getenv("PATH");
	_cleanup_free_ char *dirs = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
	if (!dirs)
		return -ENOMEM;
	for (char *d = dirs, *next; d; d = next) {
		next = strchr(d, ':');
		if (next)
			*next++ = '\0';
		if (d[0] != '/')
			continue;
		char candidate[PATH_MAX];
		if ((size_t)snprintf(candidate, sizeof(candidate), "%s/%s", d, name) >=
		    sizeof(candidate))
			continue;
		if (access(candidate, F_OK) < 0)
			continue;
		seen = true;
		if (try_candidate(candidate, out, size, why, why_size))
			return 0;
		if (!first_why[0])
			(void)snprintf(first_why, sizeof(first_why), "%s", why);
	}
	(void)snprintf(why, why_size, "no trusted %s on PATH%s%s", name, first_why[0] ? ": " : "",
		       first_why);
	return seen ? -EPERM : -ENOENT;
}
