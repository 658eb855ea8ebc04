/* SPDX-License-Identifier: MIT */
/*
 * Removing a tree a confined command made (a session's private /tmp, a start-up file it
 * planted): every entry is reached through its parent's descriptor with O_NOFOLLOW, so a
 * symlink is removed, never followed, whatever the command left. A tree deeper than RM_DEPTH
 * is not walked with one descriptor per level: its deeper directories are renamed up next to
 * the tree (renameat2 RENAME_NOREPLACE, a name of ours) and removed from there, so any depth
 * goes with a bounded number of open descriptors.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"

#define RM_DEPTH 32

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE 1
#endif

typedef struct rm_walk {
	int top;	/* where deep directories are moved */
	unsigned moved; /* how many were */
	unsigned tries; /* names drawn */
} rm_walk;

static void moved_name(unsigned n, char *buf, size_t size)
{
	(void)snprintf(buf, size, ".dsb-rm-%d-%u", (int)getpid(), n);
}

/* Moves @name of @dfd up next to the tree: the walk takes it from there. */
static int move_up(rm_walk *w, int dfd, const char *name)
{
	for (;;) {
		char up[64];
		moved_name(w->tries++, up, sizeof(up));
		if (syscall(SYS_renameat2, dfd, name, w->top, up, RENAME_NOREPLACE) == 0) {
			w->moved = w->tries;
			return 0;
		}
		if (errno != EEXIST || w->tries > 1000000)
			return -errno;
	}
}

/* NOLINTNEXTLINE(misc-no-recursion): at most RM_DEPTH deep */
static int rm_at(rm_walk *w, int dfd, const char *name, int depth)
{
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		(void)close(fd);
		return -ENOMEM;
	}
	int r = 0;
	for (struct dirent *de; (de = readdir(d));) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		int k = depth + 1 < RM_DEPTH || de->d_type != DT_DIR
				? rm_at(w, dirfd(d), de->d_name, depth + 1)
				: move_up(w, dirfd(d), de->d_name);
		if (k < 0 && r == 0)
			r = k;
	}
	(void)closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r == 0)
		r = -errno;
	return r;
}

int rm_tree_at(int dfd, const char *name)
{
	rm_walk w = {.top = dfd};
	int r = rm_at(&w, dfd, name, 0);
	/* What was moved up, and what that moves up in turn, until none is left. */
	for (unsigned i = 0; i < w.moved; i++) {
		char up[64];
		moved_name(i, up, sizeof(up));
		int k = rm_at(&w, dfd, up, 0);
		if (k < 0 && r == 0)
			r = k;
	}
	return r;
}
