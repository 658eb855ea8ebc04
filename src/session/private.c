/* SPDX-License-Identifier: MIT */
/*
 * Each session's private /tmp (docs/design/paths.md): STORE/.tmp/HASH, where HASH is sixteen
 * hex digits of FNV-1a over the log's canonical path, so a session named by id or by the path
 * of its log finds the same directory, and DSH's layout (which never makes a name starting with
 * '.') is untouched. Confined commands see their own as /tmp and never STORE/.tmp itself (a
 * hidden path of every call, policy/protect.c); what they leave there is hostile, so it is
 * removed without following a link (rm_tree_at()).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session.h"

#define TMP_ROOT_NAME ".tmp"

static uint64_t fnv1a64(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The name of the private directory of the log at @path, in STORE/.tmp. */
static int tmp_name_of(const char *log_path, char name[17])
{
	_cleanup_free_ char *canon = realpath(log_path, NULL);
	if (!canon)
		return -errno;
	(void)snprintf(name, 17, "%016" PRIx64, fnv1a64(canon));
	return 0;
}

int dsb_store_tmp_root(const dsb_store *store, char **ret_dir)
{
	if (!store || !ret_dir)
		return -EINVAL;
	return asprintf(ret_dir, "%s/" TMP_ROOT_NAME, dsb_store_root(store)) < 0 ? -ENOMEM : 0;
}

/* mkdir 0700 that takes an existing directory of ours, and no symlink, as made. */
static int make_private_dir(const char *path)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return -EPERM;
	return 0;
}

int dsb_session_tmp_dir(const dsb_store *store, const dsb_session *session, bool make,
			char **ret_dir, dsb_error *reterr)
{
	if (!store || !session || !ret_dir)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_session_tmp_dir: missing argument");
	char name[17];
	int r = tmp_name_of(dsb_session_path(session), name);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot resolve",
				      dsb_session_path(session));
	_cleanup_free_ char *root = NULL, *dir = NULL;
	if (dsb_store_tmp_root(store, &root) < 0 || asprintf(&dir, "%s/%s", root, name) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (make) {
		(void)mkdir(dsb_store_root(store), 0700);
		r = make_private_dir(root);
		if (r >= 0)
			r = make_private_dir(dir);
		if (r < 0)
			return dsb_fail_errno(reterr, DSB_E_IO, -r,
					      "%s: cannot make the session's private /tmp", dir);
	}
	*ret_dir = TAKE_PTR(dir);
	return 0;
}

/* Removes STORE/.tmp/@name, if there is one. 0 or -errno. */
static int remove_tmp_named(const dsb_store *store, const char *name)
{
	_cleanup_free_ char *root = NULL;
	if (dsb_store_tmp_root(store, &root) < 0)
		return -ENOMEM;
	_cleanup_close_ int fd = open_dir_no_symlinks(root);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	/* The O_PATH descriptor cannot be read: open the directory itself through it. */
	_cleanup_close_ int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return dfd < 0 ? -errno : rm_tree_at(dfd, name);
}

int dsb_session_tmp_remove(const dsb_store *store, const dsb_session *session, dsb_error *reterr)
{
	if (!store || !session)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_session_tmp_remove: missing argument");
	char name[17];
	int r = tmp_name_of(dsb_session_path(session), name);
	if (r >= 0)
		r = remove_tmp_named(store, name);
	if (r < 0 && r != -ENOENT)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot remove its private /tmp",
				      dsb_session_path(session));
	return 0;
}

static void session_freep(dsb_session **s)
{
	dsb_session_free(*s);
}

int dsb_session_remove(dsb_store *store, const char *name, dsb_error *reterr)
{
	_cleanup_(session_freep) dsb_session *s = NULL;
	int r = dsb_session_open(store, name, &s, reterr);
	if (r < 0)
		return r;
	const char *log = dsb_session_path(s);
	char tmp[17];
	r = tmp_name_of(log, tmp);
	if (r >= 0)
		r = remove_tmp_named(store, tmp);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot remove the private /tmp",
				      log);
	/*
	 * A log of the store goes with its directory (ROOT/--projectKey--/id/, which holds its
	 * torn tails too), and the project's directory once empty; one named by its path
	 * elsewhere is a DSH log of its own: only the file goes.
	 */
	_cleanup_free_ char *canon = realpath(log, NULL);
	_cleanup_free_ char *root = realpath(dsb_store_root(store), NULL);
	if (!canon || !root)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot resolve", log);
	/* canon: ROOT/KEY/SEG/session.jsonl, cut into ROOT/KEY and SEG. */
	char *file = strrchr(canon, '/');
	*file = '\0';
	char *seg = strrchr(canon, '/');
	char *key = seg && seg > canon ? memrchr(canon, '/', (size_t)(seg - canon)) : NULL;
	if (key && (size_t)(key - canon) == strlen(root) &&
	    strncmp(canon, root, strlen(root)) == 0) {
		*seg++ = '\0';
		_cleanup_close_ int pfd = open(canon, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		r = pfd < 0 ? -errno : rm_tree_at(pfd, seg);
		(void)rmdir(canon); /* the project's directory, once it holds no session */
	} else if (unlink(log) < 0 && errno != ENOENT) {
		r = -errno;
	}
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "%s: cannot remove", log);
	return 0;
}

/* What prune() learns from the listing: the logs to remove, the private dirs to keep. */
typedef struct prune_scan {
	uint64_t cutoff_ms;
	char **old;  /* logs last written before the cutoff */
	char **kept; /* the private dirs' names of the others */
} prune_scan;

static uint64_t mtime_ms(const struct stat *st)
{
	return (uint64_t)st->st_mtim.tv_sec * 1000 + (uint64_t)st->st_mtim.tv_nsec / 1000000;
}

static int prune_visit(const dsb_session_info *info, void *userdata)
{
	prune_scan *p = userdata;
	struct stat st;
	if (stat(info->path, &st) < 0)
		return 0;
	if (mtime_ms(&st) < p->cutoff_ms)
		return strv_push(&p->old, info->path);
	char name[17];
	return tmp_name_of(info->path, name) < 0 ? 0 : strv_push(&p->kept, name);
}

/* Removes each private dir of STORE/.tmp that no kept session owns and nothing touched lately. */
static int prune_orphans(const dsb_store *store, const prune_scan *p, int *io_count)
{
	_cleanup_free_ char *root = NULL;
	if (dsb_store_tmp_root(store, &root) < 0)
		return -ENOMEM;
	_cleanup_close_ int fd = open_dir_no_symlinks(root);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		int e = errno;
		if (dfd >= 0)
			(void)close(dfd);
		return -e;
	}
	int r = 0;
	for (struct dirent *de; (de = readdir(d));) {
		struct stat st;
		if (de->d_name[0] == '.' || strv_contains(p->kept, de->d_name) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    mtime_ms(&st) >= p->cutoff_ms)
			continue;
		int k = rm_tree_at(dirfd(d), de->d_name);
		if (k < 0 && r == 0)
			r = k;
		else if (k >= 0)
			(*io_count)++;
	}
	(void)closedir(d);
	return r;
}

int dsb_store_prune(dsb_store *store, uint64_t older_than_ms, dsb_error *reterr)
{
	if (!store)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_store_prune: missing argument");
	struct timespec now;
	(void)clock_gettime(CLOCK_REALTIME, &now);
	uint64_t now_ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
	prune_scan p = {.cutoff_ms = now_ms > older_than_ms ? now_ms - older_than_ms : 0};
	int r = dsb_store_list(store, prune_visit, &p, reterr);
	int count = 0;
	for (char **e = p.old; r >= 0 && e && *e; e++) {
		r = dsb_session_remove(store, *e, reterr);
		if (r >= 0)
			count++;
	}
	if (r >= 0) {
		r = prune_orphans(store, &p, &count);
		if (r < 0)
			(void)dsb_fail_errno(reterr, DSB_E_IO, -r,
					     "%s: cannot prune the private /tmp directories",
					     dsb_store_root(store));
	}
	strv_free(p.old);
	strv_free(p.kept);
	return r < 0 ? r : count;
}
