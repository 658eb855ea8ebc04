/* SPDX-License-Identifier: MIT */
/*
 * Disarming a repository a call made, once nothing the command started runs any more. Every
 * name is reached through the gitdir's descriptor, opened with no symlink on the way, and
 * nothing a name leads to is followed: the command's last word on the tree must not steer
 * these unconfined writes elsewhere.
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

#define CONFIG_MAX	(1 << 20) /* a planted config larger than this is emptied */
#define COMMONDIR_DEPTH 2	  /* a gitdir's commondir, and that one's */

/* What was done to one repository, for its note. */
typedef struct disarmed {
	char **hooks;  /* made non-executable, or removed (symlinks) */
	char **keys;   /* config keys removed */
	char **failed; /* what could not be changed */
} disarmed;

static void disarmed_done(disarmed *d)
{
	strv_free(d->hooks);
	strv_free(d->keys);
	strv_free(d->failed);
}

static int push_unique(char ***v, const char *s)
{
	return strv_contains(*v, s) ? 0 : strv_push(v, s);
}

/* The hooks of the gitdir @gfd: plain files, no symlink among them. */
static int disarm_hooks(int gfd, disarmed *d)
{
	struct stat st;
	if (fstatat(gfd, "hooks", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (S_ISLNK(st.st_mode))
		return push_unique(unlinkat(gfd, "hooks", 0) == 0 ? &d->hooks : &d->failed,
				   "hooks (a symlink)");
	if (!S_ISDIR(st.st_mode))
		return 0;
	int fd = openat(gfd, "hooks", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	if (!dir) {
		if (fd >= 0)
			(void)close(fd);
		return push_unique(&d->failed, "hooks");
	}
	int r = 0;
	for (struct dirent *e; r >= 0 && (e = readdir(dir));) {
		/* git runs a hook by its name alone: never a sample's. */
		size_t n = strlen(e->d_name);
		if ((n > 7 && strcmp(e->d_name + n - 7, ".sample") == 0) ||
		    fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			r = push_unique(unlinkat(dirfd(dir), e->d_name, 0) == 0 ? &d->hooks
										: &d->failed,
					e->d_name);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
			continue;
		int h = openat(dirfd(dir), e->d_name,
			       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat now;
		bool done = h >= 0 && fstat(h, &now) == 0 && S_ISREG(now.st_mode) &&
			    fchmod(h, now.st_mode & 07666) == 0;
		if (h >= 0)
			(void)close(h);
		r = push_unique(done ? &d->hooks : &d->failed, e->d_name);
	}
	(void)closedir(dir);
	return r;
}

/* Reads the regular file @fd whole, up to CONFIG_MAX bytes; -EFBIG beyond. */
static int read_whole(int fd, strbuf *sb)
{
	char buf[8192];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		if (sb->len + (size_t)n > CONFIG_MAX)
			return -EFBIG;
		int r = strbuf_append(sb, buf, (size_t)n);
		if (r < 0)
			return r;
	}
}

/* Replaces @gfd's @name by @text, through a new file renamed over it. */
static int replace_file(int gfd, const char *name, const char *text, size_t len)
{
	char tmp[64];
	(void)snprintf(tmp, sizeof(tmp), ".dsb-%s-%d", name, (int)getpid());
	(void)unlinkat(gfd, tmp, 0);
	int fd = openat(gfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int r = fd_write_all(fd, text, len);
	if (close(fd) < 0 && r >= 0)
		r = -errno;
	if (r >= 0 && renameat(gfd, tmp, gfd, name) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(gfd, tmp, 0);
	return r;
}

/* @gfd's config file @name, kept to its inert keys (config_filter()). */
static int disarm_config(int gfd, const char *name, disarmed *d)
{
	struct stat st;
	if (fstatat(gfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (!S_ISREG(st.st_mode)) {
		/* git reads a config through a symlink, and whatever it names. */
		char what[64];
		(void)snprintf(what, sizeof(what), "%s (not a file)", name);
		return push_unique(unlinkat(gfd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) == 0
					   ? &d->keys
					   : &d->failed,
				   what);
	}
	_cleanup_close_ int fd = openat(gfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return push_unique(&d->failed, name);
	_cleanup_(strbuf_done) strbuf in = STRBUF_INIT, out = STRBUF_INIT;
	int r = read_whole(fd, &in);
	if (r == -ENOMEM)
		return r;
	if (r == -EFBIG) {
		char what[64];
		(void)snprintf(what, sizeof(what), "%s (over 1 MiB: emptied)", name);
		r = push_unique(&d->keys, what);
	} else if (r < 0)
		return push_unique(&d->failed, name);
	else {
		size_t before = strv_length(d->keys);
		r = config_filter(in.buf ? in.buf : "", in.len, &out, &d->keys);
		if (r < 0 || strv_length(d->keys) == before)
			return r;
	}
	if (r >= 0 && replace_file(gfd, name, out.buf ? out.buf : "", out.len) < 0)
		r = push_unique(&d->failed, name);
	return r;
}

/* The gitdir named by a gitfile or a commondir file @name of @dfd (in @dir), resolved. */
static char *named_gitdir(int dfd, const char *dir, const char *name, const char *prefix)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	char line[4096];
	ssize_t n = fd < 0 ? -1 : read(fd, line, sizeof(line) - 1);
	if (n <= 0)
		return NULL;
	line[n] = '\0';
	line[strcspn(line, "\r\n")] = '\0';
	size_t k = strlen(prefix);
	if (strncmp(line, prefix, k) != 0)
		return NULL;
	_cleanup_free_ char *joined = NULL;
	char *canon = NULL;
	if (path_lexical_resolve(dir, line + k, &joined) < 0 || path_canonical(joined, &canon) < 0)
		return NULL;
	return canon;
}

static bool in_scope(char *const *scope, const char *path)
{
	for (char *const *s = scope; s && *s; s++)
		if (path_is_under(path, *s))
			return true;
	return false;
}

/* NOLINTNEXTLINE(misc-no-recursion): commondir followed at most COMMONDIR_DEPTH times */
static int disarm_gitdir(const char *gitdir, char *const *scope, char *const *known, int depth,
			 disarmed *d)
{
	if (!in_scope(scope, gitdir) || strv_contains(known, gitdir))
		return 0;
	_cleanup_close_ int gfd = open_dir_no_symlinks(gitdir);
	if (gfd < 0)
		return 0;
	int r = disarm_hooks(gfd, d);
	if (r >= 0)
		r = disarm_config(gfd, "config", d);
	if (r >= 0)
		r = disarm_config(gfd, "config.worktree", d);
	/* A linked worktree's gitdir names the common one, whose config git reads too. */
	_cleanup_free_ char *common = NULL;
	if (r >= 0 && depth < COMMONDIR_DEPTH &&
	    (common = named_gitdir(gfd, gitdir, "commondir", "")))
		r = disarm_gitdir(common, scope, known, depth + 1, d);
	return r;
}

static int join_note(strbuf *sb, const char *what, char **v)
{
	if (!v || !*v)
		return 0;
	int r = strbuf_printf(sb, "; %s ", what);
	for (char **s = v; r >= 0 && *s; s++)
		r = strbuf_printf(sb, "%s%s", s == v ? "" : ", ", *s);
	return r;
}

int repos_disarm(const char *marker, char *const *scope, char *const *known, strbuf *notes)
{
	_cleanup_(disarmed_done) disarmed d = {0};
	_cleanup_free_ char *dir = strdup(marker);
	if (!dir)
		return -ENOMEM;
	const char *slash = strrchr(dir, '/');
	bool dotgit = slash && strcmp(slash, "/.git") == 0;
	struct stat st;
	int r = 0;
	if (lstat(marker, &st) < 0)
		return 0;
	if (dotgit && S_ISREG(st.st_mode)) {
		/* A gitfile: the gitdir it names, if the command could have written it. */
		dir[slash - dir] = '\0';
		_cleanup_close_ int dfd = open_dir_no_symlinks(dir[0] ? dir : "/");
		_cleanup_free_ char *gitdir =
			dfd < 0 ? NULL : named_gitdir(dfd, dir, ".git", "gitdir: ");
		if (gitdir)
			r = disarm_gitdir(gitdir, scope, known, 0, &d);
	} else if (S_ISDIR(st.st_mode))
		r = disarm_gitdir(marker, scope, known, 0, &d);
	if (r < 0 || (!d.hooks && !d.keys && !d.failed))
		return r;
	if (notes->len)
		r = strbuf_putc(notes, '\n');
	if (r >= 0)
		r = strbuf_printf(
			notes,
			"[sandbox: %s is a repository this call made; disarmed so that git "
			"outside the sandbox runs none of its code",
			marker);
	if (r >= 0)
		r = join_note(notes, "hooks made inert:", d.hooks);
	if (r >= 0)
		r = join_note(notes, "config keys removed:", d.keys);
	if (r >= 0)
		r = join_note(notes, "could not change:", d.failed);
	if (r >= 0)
		r = strbuf_puts(notes, "]");
	return r;
}
