/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the core piece: canonicalisation (dsh-compat §2.3, §11.2), the platform temp dir
 * (§4.1), symlink-free directory opening (with and without openat2), JSON.stringify-identical
 * quoting, UUIDs, string helpers and error helpers.
 *
 * Fixture tree made per test under a private temp dir T:
 *
 *   T/physical/child/          a real directory
 *   T/lexical/link -> T/physical/child
 *   T/file                     a regular file
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/core/core.h"
#include "helpers.h"

typedef struct fixture {
	char *dir;  /* T, as mkdtemp spelled it */
	char *real; /* realpath(T) */
} fixture;

static int setup_tree(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = dsb_test_mkdtemp();
	f->real = realpath(f->dir, NULL);
	char *p = NULL;

	assert_true(asprintf(&p, "%s/physical", f->dir) > 0);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	assert_true(asprintf(&p, "%s/physical/child", f->dir) > 0);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	assert_true(asprintf(&p, "%s/lexical", f->dir) > 0);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	char *target = NULL;
	assert_true(asprintf(&target, "%s/physical/child", f->dir) > 0);
	assert_true(asprintf(&p, "%s/lexical/link", f->dir) > 0);
	assert_int_equal(symlink(target, p), 0);
	free(p);
	free(target);
	assert_true(asprintf(&p, "%s/file", f->dir) > 0);
	dsb_test_write_file(p, "x", 1);
	free(p);

	*state = f;
	return 0;
}

static int teardown_tree(void **state)
{
	fixture *f = *state;
	dsb_test_rm_rf(f->dir);
	free(f->dir);
	free(f->real);
	free(f);
	return 0;
}

/* --- lexical resolution (path.resolve) ------------------------------------------------------ */

static void test_lexical_resolve_table(void **state)
{
	(void)state;
	static const struct {
		const char *cwd, *path, *expected;
	} cases[] = {
		{"/cwd", "/ws/../ws/./sub", "/ws/sub"},
		{"/cwd", "/", "/"},
		{"/cwd", "//", "/"},
		{"/cwd", "///a//b///", "/a/b"},
		{"/cwd", "/a/b/", "/a/b"},
		{"/cwd", "/..", "/"},
		{"/cwd", "/../../a", "/a"},
		{"/cwd", "/a/./b/./", "/a/b"},
		{"/cwd", "/a/b/../../..", "/"},
		{"/cwd", "/a/...", "/a/..."},
		{"/cwd", "/a/.b/..c", "/a/.b/..c"},
		{"/cwd", "rel", "/cwd/rel"},
		{"/cwd", "rel/../x/", "/cwd/x"},
		{"/cwd", ".", "/cwd"},
		{"/cwd", "", "/cwd"},
		{"/cwd", "..", "/"},
		{"/cwd/deep/er", "../../x", "/cwd/x"},
		{"/", "a", "/a"},
		{"/cwd/", "./a/", "/cwd/a"},
		{"/c w d", "sp ace", "/c w d/sp ace"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *out = NULL;
		assert_int_equal(path_lexical_resolve(cases[i].cwd, cases[i].path, &out), 0);
		if (strcmp(out, cases[i].expected) != 0)
			fail_msg("resolve(%s, %s) = %s, expected %s", cases[i].cwd, cases[i].path,
				 out, cases[i].expected);
		free(out);
	}
}

static void test_lexical_resolve_errors(void **state)
{
	(void)state;
	char *out = NULL;

	assert_int_equal(path_lexical_resolve("relative", "x", &out), -EINVAL);
	assert_null(out);

	/* An absolute path does not need the cwd at all. */
	assert_int_equal(path_lexical_resolve("relative", "/x", &out), 0);
	assert_string_equal(out, "/x");
	free(out);
	out = NULL;

	char *huge = malloc(DSB_PATH_MAX + 2);
	huge[0] = '/';
	memset(huge + 1, 'a', DSB_PATH_MAX);
	huge[DSB_PATH_MAX + 1] = '\0';
	assert_int_equal(path_lexical_resolve("/", huge, &out), -ENAMETOOLONG);
	assert_null(out);

	/* ...but one that normalises below the limit is fine. */
	free(huge);
	huge = malloc(2 + 3 * 2000 + 1);
	strcpy(huge, "/x");
	for (size_t i = 0; i < 2000; i++)
		memcpy(huge + 2 + 3 * i, "/..", 4);
	assert_int_equal(path_lexical_resolve("/", huge, &out), 0);
	assert_string_equal(out, "/");
	free(out);
	free(huge);
}

/* --- canonicalPath (dsh-compat §11.2 #1, #2)
 * ------------------------------------------------------ */

static void test_canonical_existing_realpaths(void **state)
{
	fixture *f = *state;
	char *out = NULL;
	assert_int_equal(path_canonical(f->dir, &out), 0);
	assert_string_equal(out, f->real);
	free(out);
}

static void test_canonical_missing_keeps_spelling(void **state)
{
	(void)state;
	static const char *const spelled[] = {
		"/does/not/exist/anywhere-xyz",
		"/does/not/../exist//",
		"relative/missing",
		"",
	};
	for (size_t i = 0; i < ELEMENTSOF(spelled); i++) {
		char *out = NULL;
		assert_int_equal(path_canonical(spelled[i], &out), 0);
		assert_string_equal(out, spelled[i]);
		free(out);
	}
}

static void test_canonical_root_and_trailing_slash(void **state)
{
	fixture *f = *state;
	char *out = NULL;
	assert_int_equal(path_canonical("/", &out), 0);
	assert_string_equal(out, "/");
	free(out);

	char *p = NULL;
	assert_true(asprintf(&p, "%s/physical//child/", f->dir) > 0);
	assert_int_equal(path_canonical(p, &out), 0);
	char *expected = NULL;
	assert_true(asprintf(&expected, "%s/physical/child", f->real) > 0);
	assert_string_equal(out, expected);
	free(out);
	free(expected);
	free(p);
}

/* --- resolveWorkspaceRoot (dsh-compat §2.3, §11.11 #5)
 * -------------------------------------------- */

static void test_root_symlink_dotdot_follows_chdir(void **state)
{
	fixture *f = *state;
	char *p = NULL, *out = NULL, *expected = NULL;

	/* lexical/link/.. is where chdir lands: the physical parent, not "lexical". */
	assert_true(asprintf(&p, "%s/lexical/link/..", f->dir) > 0);
	assert_int_equal(path_resolve_root(p, &out), 0);
	assert_true(asprintf(&expected, "%s/physical", f->real) > 0);
	assert_string_equal(out, expected);
	free(p);
	free(out);
	free(expected);
}

static void test_root_missing_tail_is_lexical(void **state)
{
	fixture *f = *state;
	char *p = NULL, *out = NULL, *expected = NULL;

	/* realpath fails on the whole path, so the spelling is normalised lexically: "link/.."
	 * then collapses to "lexical", unlike an existing path. */
	assert_true(asprintf(&p, "%s/lexical/link/../missing/./tail/", f->dir) > 0);
	assert_int_equal(path_resolve_root(p, &out), 0);
	assert_true(asprintf(&expected, "%s/lexical/missing/tail", f->dir) > 0);
	assert_string_equal(out, expected);
	free(p);
	free(out);
	free(expected);

	assert_int_equal(path_resolve_root("/ws/../ws/./sub", &out), 0);
	assert_string_equal(out, "/ws/sub");
	free(out);
}

static void test_root_relative_uses_cwd(void **state)
{
	fixture *f = *state;
	char *saved = getcwd(NULL, 0);
	char *out = NULL, *expected = NULL;

	assert_int_equal(chdir(f->dir), 0);
	assert_int_equal(path_resolve_root("physical/child/..", &out), 0);
	assert_true(asprintf(&expected, "%s/physical", f->real) > 0);
	assert_string_equal(out, expected);
	free(out);
	free(expected);

	assert_int_equal(path_resolve_root("not-here/../x", &out), 0);
	assert_true(asprintf(&expected, "%s/x", f->real) > 0);
	assert_string_equal(out, expected);
	free(out);
	free(expected);

	assert_int_equal(path_resolve_root(".", &out), 0);
	assert_string_equal(out, f->real);
	free(out);

	assert_int_equal(chdir(saved), 0);
	free(saved);
}

static void test_root_of_a_file_is_kept(void **state)
{
	fixture *f = *state;
	char *p = NULL, *out = NULL, *expected = NULL;
	assert_true(asprintf(&p, "%s/file", f->dir) > 0);
	assert_int_equal(path_resolve_root(p, &out), 0);
	assert_true(asprintf(&expected, "%s/file", f->real) > 0);
	assert_string_equal(out, expected);
	free(p);
	free(out);
	free(expected);
}

/* --- os.tmpdir() (dsh-compat §4.1)
 * ---------------------------------------------------------------- */

static void test_tmpdir_pick_table(void **state)
{
	(void)state;
	static const struct {
		const char *tmpdir, *tmp, *temp, *expected;
	} cases[] = {
		{NULL, NULL, NULL, "/tmp"},
		{"", "", "", "/tmp"},
		{"/var/tmp", "/a", "/b", "/var/tmp"},
		{"", "/a", "/b", "/a"},
		{NULL, NULL, "/b", "/b"},
		{"/x/", NULL, NULL, "/x"},
		{"/x//", NULL, NULL, "/x/"}, /* Node strips exactly one */
		{"/", NULL, NULL, "/"},
		{"relative/", NULL, NULL, "relative"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *out = tmpdir_pick(cases[i].tmpdir, cases[i].tmp, cases[i].temp);
		assert_non_null(out);
		assert_string_equal(out, cases[i].expected);
		free(out);
	}
}

static void test_tmpdir_get_reads_environment(void **state)
{
	(void)state;
	char *saved = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	char *out = NULL;

	assert_int_equal(setenv("TMPDIR", "/from/env/", 1), 0);
	assert_int_equal(tmpdir_get(&out), 0);
	assert_string_equal(out, "/from/env");
	free(out);

	assert_int_equal(unsetenv("TMPDIR"), 0);
	assert_int_equal(setenv("TMP", "/from/tmp", 1), 0);
	assert_int_equal(tmpdir_get(&out), 0);
	assert_string_equal(out, "/from/tmp");
	free(out);
	assert_int_equal(unsetenv("TMP"), 0);

	if (saved)
		assert_int_equal(setenv("TMPDIR", saved, 1), 0);
	free(saved);
}

/* --- open_dir_no_symlinks() ------------------------------------------------------------------ */

/* One case a line, aligned: clang-format would spread each over several. */
/* clang-format off */
static const struct {
	const char *path;     /* '@' stands for realpath(T); relative paths are against it */
	int expected;	      /* 0: opened; else the -errno */
	const char *same_as;  /* the directory it must have opened, '@'-relative */
} open_dir_cases[] = {
	{ "@",			  0,	    "@" },
	{ "@/",			  0,	    "@" },
	{ "@/physical/child",	  0,	    "@/physical/child" },
	{ "@/physical/child/",	  0,	    "@/physical/child" },
	{ "@//physical/./child",  0,	    "@/physical/child" },
	{ "@/physical/child/..",  0,	    "@/physical" },
	{ "/",			  0,	    "/" },
	{ "physical/child",	  0,	    "@/physical/child" },
	{ ".",			  0,	    "@" },
	{ "@/lexical/link",	  -ELOOP,   NULL },
	{ "@/lexical/link/",	  -ELOOP,   NULL },
	{ "@/lexical/link/..",	  -ELOOP,   NULL },
	{ "@/lexical/link/.",	  -ELOOP,   NULL },
	{ "lexical/link",	  -ELOOP,   NULL },
	{ "@/file",		  -ENOTDIR, NULL },
	{ "@/file/x",		  -ENOTDIR, NULL },
	{ "@/missing",		  -ENOENT,  NULL },
	{ "@/missing/x",	  -ENOENT,  NULL },
	{ "",			  -ENOENT,  NULL },
};
/* clang-format on */

static char *at_path(const char *real, const char *spelled)
{
	char *p = NULL;
	if (spelled[0] == '@') {
		if (asprintf(&p, "%s%s", real, spelled + 1) < 0)
			p = NULL;
	} else
		p = strdup(spelled);
	return p;
}

/*
 * Runs the table from realpath(T) as the cwd; returns how many cases failed, with a line each on
 * stderr. Usable in a child, where cmocka assertions must not run.
 */
static int open_dir_table(const fixture *f)
{
	char cwd[PATH_MAX];
	int failed = 0;

	if (!getcwd(cwd, sizeof(cwd)) || chdir(f->real) < 0)
		return 100;
	for (size_t i = 0; i < ELEMENTSOF(open_dir_cases); i++) {
		char *path = at_path(f->real, open_dir_cases[i].path);
		int fd = path ? open_dir_no_symlinks(path) : -ENOMEM;
		const char *what = NULL;

		if (open_dir_cases[i].expected < 0) {
			if (fd != open_dir_cases[i].expected)
				what = "wrong result";
		} else if (fd < 0) {
			what = "not opened";
		} else {
			char *want = at_path(f->real, open_dir_cases[i].same_as);
			struct stat a, b;
			if (!want || fstat(fd, &a) < 0 || stat(want, &b) < 0 ||
			    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
				what = "another directory";
			else if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
				what = "no O_CLOEXEC";
			else if (!(fcntl(fd, F_GETFL) & O_PATH))
				what = "no O_PATH";
			free(want);
		}
		if (what) {
			fprintf(stderr, "open_dir_no_symlinks(\"%s\"): %s (%d, expected %d)\n",
				open_dir_cases[i].path, what, fd, open_dir_cases[i].expected);
			failed++;
		}
		if (fd >= 0)
			(void)close(fd);
		free(path);
	}
	if (chdir(cwd) < 0)
		return 101;
	return failed;
}

static void test_open_dir_no_symlinks(void **state)
{
	assert_int_equal(open_dir_table(*state), 0);
}

static int open_dir_without_openat2(void *arg, int err)
{
	if (dsb_test_hide_openat2(err) != 0)
		return 102;
	/* The filter is really there: a bare openat2 now fails as an old kernel's would. */
	if (openat2_raw(AT_FDCWD, "/", O_PATH | O_CLOEXEC, 0, 0) != -err)
		return 103;
	return open_dir_table(arg);
}

static int open_dir_enosys(void *arg)
{
	return open_dir_without_openat2(arg, ENOSYS);
}

static int open_dir_eperm(void *arg)
{
	return open_dir_without_openat2(arg, EPERM);
}

/* Without openat2 (ENOSYS, or a seccomp profile's EPERM) the walk refuses the same paths. */
static void test_open_dir_no_symlinks_without_openat2(void **state)
{
	assert_int_equal(dsb_test_run_in_child(open_dir_enosys, *state), 0);
	assert_int_equal(dsb_test_run_in_child(open_dir_eperm, *state), 0);
}

/* --- mkdir_beneath() ------------------------------------------------------------------------ */

/* It makes what is missing, and never goes through a symlink or a file on the way. */
static void test_mkdir_beneath(void **state)
{
	const fixture *f = *state;
	int fd = open(f->real, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(mkdir_beneath(fd, "physical/child/new/deep", 0700), 0);
	assert_int_equal(mkdir_beneath(fd, "physical//child/new/deep/", 0700), 0);
	char *p = NULL;
	struct stat st;
	assert_true(asprintf(&p, "%s/physical/child/new/deep", f->real) > 0);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	free(p);
	assert_int_equal(mkdir_beneath(fd, "lexical/link/x", 0700), -ELOOP);
	assert_int_equal(mkdir_beneath(fd, "lexical/link", 0700), -ELOOP);
	assert_int_equal(mkdir_beneath(fd, "file/x", 0700), -ENOTDIR);
	assert_int_equal(mkdir_beneath(fd, "physical/../x", 0700), -EINVAL);
	/* Nothing was made through the link. */
	assert_true(asprintf(&p, "%s/physical/child/x", f->real) > 0);
	assert_int_equal(access(p, F_OK), -1);
	free(p);
	(void)close(fd);
}

/* --- JSON.stringify quoting ----------------------------------------------------------------- */

static void assert_quoted(const char *in, size_t len, const char *expected)
{
	char *out = NULL;
	assert_int_equal(json_quote(in, len, &out), 0);
	bool same = strcmp(out, expected) == 0;
	if (!same)
		print_error("json_quote gave [%s], expected [%s]\n", out, expected);
	free(out);
	assert_true(same);
}

static void test_json_quote_table(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t len;
		const char *expected;
	} cases[] = {
		{"", 0, "\"\""},
		{"/home/u/proj", 12, "\"/home/u/proj\""},
		{"a\"b", 3, "\"a\\\"b\""},
		{"a\\b", 3, "\"a\\\\b\""},
		{"/", 1, "\"/\""}, /* not escaped, unlike jansson's JSON_ESCAPE_SLASH */
		{"\x7f", 1, "\"\x7f\""},
		{"caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x98\x80", 14,
		 "\"caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x98\x80\""},
		{"\xE2\x80\xA8", 3, "\"\xE2\x80\xA8\""}, /* U+2028 stays raw in JSON.stringify */
		{"a\0b", 3, "\"a\\u0000b\""},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		assert_quoted(cases[i].in, cases[i].len, cases[i].expected);
}

static void test_json_quote_every_control_character(void **state)
{
	(void)state;
	for (unsigned c = 0; c < 0x20; c++) {
		char in[1] = {(char)c};
		char expected[16];
		switch (c) {
		case '\b':
			strcpy(expected, "\"\\b\"");
			break;
		case '\t':
			strcpy(expected, "\"\\t\"");
			break;
		case '\n':
			strcpy(expected, "\"\\n\"");
			break;
		case '\f':
			strcpy(expected, "\"\\f\"");
			break;
		case '\r':
			strcpy(expected, "\"\\r\"");
			break;
		default:
			snprintf(expected, sizeof(expected), "\"\\u%04x\"", c);
			break;
		}
		assert_quoted(in, 1, expected);
	}
	assert_quoted("\x1f", 1, "\"\\u001f\""); /* lower-case hex, as V8 writes it */
}

static void test_json_quote_invalid_utf8(void **state)
{
	(void)state;
#define FFFD "\xEF\xBF\xBD"
	static const struct {
		const char *in;
		size_t len;
		const char *expected;
	} cases[] = {
		{"\x80", 1, "\"" FFFD "\""},				/* lone continuation */
		{"\xFF", 1, "\"" FFFD "\""},				/* never valid */
		{"\xC0\xAF", 2, "\"" FFFD FFFD "\""},			/* overlong lead C0 */
		{"\xC3", 1, "\"" FFFD "\""},				/* truncated at the end */
		{"\xC3(", 2, "\"" FFFD "(\""},				/* truncated mid-string */
		{"\xE2\x82", 2, "\"" FFFD "\""},			/* one maximal subpart */
		{"\xE2\x82(", 3, "\"" FFFD "(\""},			/* ...then the next char */
		{"\xE0\x80\x80", 3, "\"" FFFD FFFD FFFD "\""},		/* overlong 3-byte */
		{"\xED\xA0\x80", 3, "\"" FFFD FFFD FFFD "\""},		/* a surrogate */
		{"\xF0\x9F\x98", 3, "\"" FFFD "\""},			/* truncated 4-byte */
		{"\xF4\x90\x80\x80", 4, "\"" FFFD FFFD FFFD FFFD "\""}, /* past U+10FFFF */
		{"\xF5\x80", 2, "\"" FFFD FFFD "\""},
		{"a\xC3\xA9\x80z", 5, "\"a\xC3\xA9" FFFD "z\""},
		{"\xF4\x8F\xBF\xBF", 4, "\"\xF4\x8F\xBF\xBF\""}, /* U+10FFFF itself is valid */
	};
#undef FFFD
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		assert_quoted(cases[i].in, cases[i].len, cases[i].expected);
}

/* --- text made visible to a person ----------------------------------------------------------- */

static void assert_visible(const char *in, size_t len, unsigned flags, const char *expected)
{
	char *out = NULL;
	assert_int_equal(visible_escape(in, len, flags, &out), 0);
	bool same = strcmp(out, expected) == 0;
	if (!same)
		print_error("visible_escape gave [%s], expected [%s]\n", out, expected);
	free(out);
	assert_true(same);
}

static void test_visible_escape_table(void **state)
{
	(void)state;
	static const struct {
		const char *in;
		size_t len;
		const char *expected;
	} cases[] = {
		{"", 0, ""},
		{"ls -la /home/u", 14, "ls -la /home/u"},
		{"caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x98\x80", 14,
		 "caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x98\x80"}, /* printable UTF-8 kept */
		{"\xEF\xBF\xBD", 3, "\xEF\xBF\xBD"},	       /* a real U+FFFD is printable */
		{"a\\b", 3, "a\\\\b"},
		{"a\\x1b", 5, "a\\\\x1b"}, /* an escape typed as text cannot pass for one of ours */
		{"a\nb\tc\rd", 7, "a\\nb\\tc\\rd"},
		{"\x1b[2K\x1b[1A", 8, "\\x1b[2K\\x1b[1A"},
		{"\x1b]52;c;aGk=\x07", 12, "\\x1b]52;c;aGk=\\x07"}, /* OSC 52 */
		{"a\0b", 3, "a\\x00b"},
		{"\x7f", 1, "\\x7f"},
		{"\x01\x1f", 2, "\\x01\\x1f"},
		/* C1 controls encoded in UTF-8: U+0085 (NEL), U+009B (CSI) */
		{"\xC2\x85\xC2\x9B", 4, "\\u{0085}\\u{009b}"},
		{"\xC2\xA0", 2, "\xC2\xA0"}, /* U+00A0 is visible enough: kept */
		/* bidi: U+202E override, U+2066 isolate, U+200F RLM, U+061C ALM */
		{"x\xE2\x80\xAEy", 5, "x\\u{202e}y"},
		{"\xE2\x81\xA6\xE2\x81\xA9", 6, "\\u{2066}\\u{2069}"},
		{"\xE2\x80\x8E\xE2\x80\x8F", 6, "\\u{200e}\\u{200f}"},
		{"\xD8\x9C", 2, "\\u{061c}"},
		{"\xE2\x80\xAA\xE2\x80\xAB\xE2\x80\xAC\xE2\x80\xAD", 12,
		 "\\u{202a}\\u{202b}\\u{202c}\\u{202d}"},
		/* invisible: ZWSP, LS, PS, BOM, a tag letter; the joiners stay */
		{"\xE2\x80\x8B\xE2\x80\xA8\xE2\x80\xA9\xEF\xBB\xBF", 12,
		 "\\u{200b}\\u{2028}\\u{2029}\\u{feff}"},
		{"\xF3\xA0\x81\x81", 4, "\\u{e0041}"},
		{"\xE2\x80\x8C\xE2\x80\x8D", 6, "\xE2\x80\x8C\xE2\x80\x8D"},
		/* not UTF-8: each byte of the invalid part as \xNN */
		{"\x80", 1, "\\x80"},
		{"\xFF", 1, "\\xff"},
		{"\xC3(", 2, "\\xc3("},
		{"\xE2\x82", 2, "\\xe2\\x82"},
		{"\xC0\xAF", 2, "\\xc0\\xaf"},
		{"\xED\xA0\x80", 3, "\\xed\\xa0\\x80"}, /* a surrogate */
		{"\xF4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80"},
		{"a\xC3\xA9\x9Bz", 5, "a\xC3\xA9\\x9bz"}, /* a raw 8-bit CSI */
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		assert_visible(cases[i].in, cases[i].len, 0, cases[i].expected);
}

/* The approval spoof: the escaped form is one line, holds the hidden part, and acts on nothing. */
static void test_visible_escape_spoof_is_one_line(void **state)
{
	(void)state;
	static const char spoof[] = "touch /tmp/pwned #\r\x1b[2K\x1b[1A\xE2\x80\xAE"
				    "\nls -la";
	char *out = NULL;
	assert_int_equal(visible_escape(spoof, sizeof(spoof) - 1, 0, &out), 0);
	assert_string_equal(out, "touch /tmp/pwned #\\r\\x1b[2K\\x1b[1A\\u{202e}\\nls -la");
	for (const unsigned char *p = (const unsigned char *)out; *p; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
	free(out);
}

static void test_visible_escape_flags(void **state)
{
	(void)state;
	/* A command's output: lines and tabs kept, a backslash single, every other control shown.
	 */
	const unsigned out_flags = VISIBLE_KEEP_LINES | VISIBLE_KEEP_BACKSLASH;
	assert_visible("a\tb\nc\\d\r\n", 9, out_flags, "a\tb\nc\\d\\r\n");
	assert_visible("\x1b]0;title\x07\x1b]52;c;eA==\x1b\\", 23, out_flags,
		       "\\x1b]0;title\\x07\\x1b]52;c;eA==\\x1b\\");
	assert_visible("\xE2\x80\xAE", 3, out_flags, "\\u{202e}");
	assert_visible("a\\b\n", 4, VISIBLE_KEEP_LINES, "a\\\\b\n");
	assert_visible("a\\b\n", 4, VISIBLE_KEEP_BACKSLASH, "a\\b\\n");

	/* Appending keeps what was there; nothing at all still makes a string. */
	strbuf sb = STRBUF_INIT;
	assert_int_equal(visible_escape_append(&sb, "", 0, 0), 0);
	assert_non_null(sb.buf);
	assert_int_equal(strbuf_puts(&sb, "command: "), 0);
	assert_int_equal(visible_escape_append(&sb, "x\ny", 3, 0), 0);
	assert_string_equal(sb.buf, "command: x\\ny");
	strbuf_done(&sb);
}

/* --- the JSON writer ------------------------------------------------------------------------ */

static void assert_taken(jw *w, const char *expected, size_t expected_len)
{
	char *out = NULL;
	assert_int_equal(jw_take(w, &out), 0);
	bool same = strlen(out) == expected_len && memcmp(out, expected, expected_len) == 0;
	if (!same)
		print_error("jw gave [%s], expected [%s]\n", out, expected);
	free(out);
	assert_true(same);
}

static void test_jw_document(void **state)
{
	(void)state;
	jw w = JW_INIT;
	jw_object_begin(&w);
	jw_member_string(&w, "s", "a\"b\n");
	jw_member_string(&w, "none", NULL);
	jw_member_string_len(&w, "nul", "a\0b", 3);
	jw_member_string_len(&w, "empty", NULL, 0);
	jw_member_uint(&w, "u", UINT64_MAX);
	jw_member_int(&w, "i", INT64_MIN);
	jw_member_bool(&w, "t", true);
	jw_member_raw(&w, "raw", "{\"k\":[1,2]}");
	jw_key(&w, "a");
	jw_array_begin(&w);
	jw_array_end(&w);
	jw_key(&w, "b");
	jw_array_begin(&w);
	jw_null(&w);
	jw_bool(&w, false);
	jw_raw(&w, "7");
	jw_object_begin(&w);
	jw_object_end(&w);
	jw_string(&w, "\xFF");
	jw_array_end(&w);
	jw_verbatim(&w, ",\"more\":1");
	jw_object_end(&w);
	jw_verbatim(&w, "\n");
	static const char expected[] =
		"{\"s\":\"a\\\"b\\n\",\"none\":null,\"nul\":\"a\\u0000b\",\"empty\":\"\","
		"\"u\":18446744073709551615,\"i\":-9223372036854775808,\"t\":true,"
		"\"raw\":{\"k\":[1,2]},\"a\":[],\"b\":[null,false,7,{},\"\xEF\xBF\xBD\"],"
		"\"more\":1}\n";
	assert_taken(&w, expected, strlen(expected));

	/* Taken, the writer is empty and starts the next document afresh. */
	jw_array_begin(&w);
	jw_uint(&w, 1);
	jw_array_end(&w);
	assert_taken(&w, "[1]", 3);
}

static void test_jw_failure_sticks(void **state)
{
	(void)state;
	char *out = NULL;
	jw w = JW_INIT;
	assert_int_equal(jw_take(&w, &out), -ENOMEM); /* nothing written: no document */
	assert_null(out);

	jw_object_begin(&w);
	jw_member_string(&w, "k", "v");
	w.error = -ENOMEM; /* as a failed allocation records it */
	size_t len = w.sb.len;
	jw_member_string(&w, "later", "ignored");
	jw_verbatim(&w, "\n");
	jw_object_end(&w);
	assert_int_equal(w.sb.len, len);
	assert_int_equal(jw_take(&w, &out), -ENOMEM);
	assert_null(out);
	assert_null(w.sb.buf);
	assert_int_equal(w.error, 0);
}

/* --- UUIDs ---------------------------------------------------------------------------------- */

static void test_uuid_v4_format_and_uniqueness(void **state)
{
	(void)state;
	char a[UUID_STRING_MAX], b[UUID_STRING_MAX];
	assert_int_equal(uuid_random(a), 0);
	assert_int_equal(uuid_random(b), 0);
	assert_string_not_equal(a, b);

	assert_int_equal(strlen(a), 36);
	for (size_t i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			assert_int_equal(a[i], '-');
		else
			assert_non_null(strchr("0123456789abcdef", a[i]));
	}
	assert_int_equal(a[14], '4');
	assert_non_null(strchr("89ab", a[19]));
}

/* --- strv, strbuf, errors ------------------------------------------------------------------- */

static void test_strv_helpers(void **state)
{
	(void)state;
	char **v = NULL;
	assert_int_equal(strv_length(v), 0);
	assert_int_equal(strv_push(&v, "a"), 0);
	assert_int_equal(strv_push(&v, "b"), 0);
	assert_int_equal(strv_length(v), 2);
	assert_true(strv_contains(v, "b"));
	assert_false(strv_contains(v, "c"));

	char **copy = strv_copy(v);
	assert_int_equal(strv_length(copy), 2);
	assert_string_equal(copy[1], "b");
	assert_ptr_not_equal(copy[1], v[1]);
	strv_free(copy);

	char **empty = strv_copy(NULL);
	assert_non_null(empty);
	assert_null(empty[0]);
	strv_free(empty);
	assert_null(strv_free(v));
}

static void test_strbuf_growth_and_printf(void **state)
{
	(void)state;
	strbuf sb = STRBUF_INIT;
	char *empty = strbuf_take(&sb);
	assert_string_equal(empty, "");
	free(empty);

	for (int i = 0; i < 1000; i++)
		assert_int_equal(strbuf_printf(&sb, "%d,", i % 10), 0);
	assert_int_equal(sb.len, 2000);
	assert_int_equal(strlen(sb.buf), 2000);
	assert_memory_equal(sb.buf, "0,1,2,", 6);
	strbuf_done(&sb);
	assert_null(sb.buf);
}

static void test_error_helpers(void **state)
{
	(void)state;
	dsb_error err = {0};

	assert_int_equal(dsb_fail(&err, DSB_E_CONFIG_INVALID, "bad %s", "thing"),
			 -DSB_E_CONFIG_INVALID);
	assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
	assert_string_equal(err.message, "bad thing");

	dsb_error_prefix(&err, "loading '%s'", "f.yaml");
	assert_string_equal(err.message, "loading 'f.yaml': bad thing");
	assert_int_equal(err.code, DSB_E_CONFIG_INVALID);

	assert_int_equal(dsb_fail_errno(&err, DSB_E_IO, ENOENT, "open '%s'", "/x"), -DSB_E_IO);
	assert_int_equal(err.sys_errno, ENOENT);
	assert_string_equal(err.message, "open '/x': No such file or directory");

	/* A NULL reterr is allowed everywhere. */
	assert_int_equal(dsb_fail(NULL, DSB_E_IO, "x"), -DSB_E_IO);
	dsb_error_prefix(NULL, "x");
	dsb_error_set_subject(NULL, "x");
}

static void test_error_truncation_is_safe(void **state)
{
	(void)state;
	dsb_error err = {0};
	char *big = malloc(5000);
	memset(big, 'm', 4999);
	big[4999] = '\0';

	dsb_fail(&err, DSB_E_IO, "%s", big);
	assert_int_equal(strlen(err.message), sizeof(err.message) - 1);
	dsb_error_prefix(&err, "%s", big);
	assert_int_equal(strlen(err.message), sizeof(err.message) - 1);

	dsb_fail(&err, DSB_E_IO, "tail");
	dsb_error_prefix(&err, "%s", big);
	assert_int_equal(strlen(err.message), sizeof(err.message) - 1);

	dsb_error_set_subject(&err, big);
	assert_int_equal(strlen(err.subject), sizeof(err.subject) - 1);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lexical_resolve_table),
		cmocka_unit_test(test_lexical_resolve_errors),
		cmocka_unit_test_setup_teardown(test_canonical_existing_realpaths, setup_tree,
						teardown_tree),
		cmocka_unit_test(test_canonical_missing_keeps_spelling),
		cmocka_unit_test_setup_teardown(test_canonical_root_and_trailing_slash, setup_tree,
						teardown_tree),
		cmocka_unit_test_setup_teardown(test_root_symlink_dotdot_follows_chdir, setup_tree,
						teardown_tree),
		cmocka_unit_test_setup_teardown(test_root_missing_tail_is_lexical, setup_tree,
						teardown_tree),
		cmocka_unit_test_setup_teardown(test_root_relative_uses_cwd, setup_tree,
						teardown_tree),
		cmocka_unit_test_setup_teardown(test_root_of_a_file_is_kept, setup_tree,
						teardown_tree),
		cmocka_unit_test(test_tmpdir_pick_table),
		cmocka_unit_test(test_tmpdir_get_reads_environment),
		cmocka_unit_test_setup_teardown(test_mkdir_beneath, setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(test_open_dir_no_symlinks, setup_tree,
						teardown_tree),
		cmocka_unit_test_setup_teardown(test_open_dir_no_symlinks_without_openat2,
						setup_tree, teardown_tree),
		cmocka_unit_test(test_json_quote_table),
		cmocka_unit_test(test_json_quote_every_control_character),
		cmocka_unit_test(test_json_quote_invalid_utf8),
		cmocka_unit_test(test_visible_escape_table),
		cmocka_unit_test(test_visible_escape_spoof_is_one_line),
		cmocka_unit_test(test_visible_escape_flags),
		cmocka_unit_test(test_jw_document),
		cmocka_unit_test(test_jw_failure_sticks),
		cmocka_unit_test(test_uuid_v4_format_and_uniqueness),
		cmocka_unit_test(test_strv_helpers),
		cmocka_unit_test(test_strbuf_growth_and_printf),
		cmocka_unit_test(test_error_helpers),
		cmocka_unit_test(test_error_truncation_is_safe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
