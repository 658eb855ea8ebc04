/* SPDX-License-Identifier: MIT */
/*
 * src/repos: the config filter (what is kept, what is dropped, what git might read otherwise),
 * the scan (markers, depth, symlinks, node_modules, bare repositories) and the disarming of a
 * planted repository (hooks, symlinks, config, a gitfile's gitdir, the known ones untouched).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/repos/repos.h"
#include "helpers.h"

/* --- config_filter() ------------------------------------------------------------------------ */

static void assert_filtered(const char *in, const char *kept, const char *dropped)
{
	strbuf out = STRBUF_INIT;
	char **names = NULL;
	assert_int_equal(config_filter(in, strlen(in), &out, &names), 0);
	strbuf joined = STRBUF_INIT;
	for (char **n = names; n && *n; n++)
		assert_int_equal(strbuf_printf(&joined, "%s%s", n == names ? "" : " ", *n), 0);
	const char *got = out.buf ? out.buf : "", *got_dropped = joined.buf ? joined.buf : "";
	if (strcmp(got, kept) != 0 || strcmp(got_dropped, dropped) != 0)
		print_error("in:\n%s\nkept:\n%s\ndropped: %s\n", in, got, got_dropped);
	assert_string_equal(got, kept);
	assert_string_equal(got_dropped, dropped);
	strbuf_done(&out);
	strbuf_done(&joined);
	strv_free(names);
}

static void test_config_filter_keeps_what_init_and_clone_write(void **state)
{
	(void)state;
	static const char clone[] = "[core]\n"
				    "\trepositoryformatversion = 0\n"
				    "\tfilemode = true\n"
				    "\tbare = false\n"
				    "\tlogallrefupdates = true\n"
				    "[remote \"origin\"]\n"
				    "\turl = /srv/git/project.git\n"
				    "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
				    "[branch \"main\"]\n"
				    "\tremote = origin\n"
				    "\tmerge = refs/heads/main\n"
				    "# a comment\n"
				    "\n";
	assert_filtered(clone, clone, "");
}

static void test_config_filter_drops_program_keys(void **state)
{
	(void)state;
	assert_filtered("[core]\n\tfsmonitor = \"touch /x; false\"\n\tbare = false\n"
			"[alias]\n\tst = !touch /x\n",
			"[core]\n\tbare = false\n[alias]\n", "core.fsmonitor alias.st");
	assert_filtered("[core]\n\thooksPath = .h\n\tpager = less\n\teditor = vi\n"
			"\tsshCommand = ssh -oProxyCommand=x\n",
			"[core]\n", "core.hookspath core.pager core.editor core.sshcommand");
	assert_filtered("[filter \"x\"]\n\tclean = a\n\tsmudge = b\n[diff \"y\"]\n\ttextconv = c\n"
			"[include]\n\tpath = /elsewhere\n[includeIf \"gitdir:/\"]\n\tpath = p\n",
			"[filter \"x\"]\n[diff \"y\"]\n[include]\n[includeIf \"gitdir:/\"]\n",
			"filter.clean filter.smudge diff.textconv include.path includeif.path");
	/* A remote's uploadpack runs a program for a local fetch; a submodule's update too. */
	assert_filtered("[remote \"o\"]\n\turl = x\n\tuploadpack = evil\n[submodule \"s\"]\n"
			"\tupdate = !evil\n\tpath = s\n",
			"[remote \"o\"]\n\turl = x\n[submodule \"s\"]\n\tpath = s\n",
			"remote.uploadpack submodule.update");
	/* Keys are case-insensitive, and so are section names. */
	assert_filtered("[CORE]\n\tFSMonitor = x\n\tBare = false\n", "[CORE]\n\tBare = false\n",
			"core.fsmonitor");
	/* A subsection where none belongs, or none where one must be. */
	assert_filtered("[core \"x\"]\n\tbare = false\n[remote]\n\turl = x\n",
			"[core \"x\"]\n[remote]\n", "core.bare remote.url");
}

static void test_config_filter_drops_what_git_might_read_otherwise(void **state)
{
	(void)state;
	/* A continued value: dropped with its continuation, even of a kept key. */
	assert_filtered("[core]\n\tbare = fa\\\nlse\n\tfsmonitor = a\\\n\\\nb\n\tfilemode = true\n",
			"[core]\n\tfilemode = true\n", "core.bare core.fsmonitor");
	/* A backslash inside a comment continues nothing; one inside quotes does. */
	assert_filtered("[core]\n\tbare = false # x\\\n\tfilemode = true\n",
			"[core]\n\tbare = false # x\\\n\tfilemode = true\n", "");
	assert_filtered("[core]\n\tbare = \"a;\\\n\tfsmonitor = x\"\n\tfilemode = true\n",
			"[core]\n\tfilemode = true\n", "core.bare");
	/* A key on the header's line is judged as any key; the header stays. */
	assert_filtered("[core] fsmonitor = x\n[core] bare = false\n",
			"[core]\n[core]\nbare = false\n", "core.fsmonitor");
	/* An unreadable header: everything up to the next one goes. */
	assert_filtered("[core\n\tbare = false\n[co re]\n\tbare = false\n[core]\n\tbare = true\n",
			"[core]\n\tbare = true\n", "(an unreadable header) bare");
	/* A line that is no key, and old-style [section.subsection] headers. */
	assert_filtered("[core]\n\t=x\n\t9bare = 1\n[remote.origin]\n\turl = x\n",
			"[core]\n[remote.origin]\n\turl = x\n", "(an unreadable line)");
	/* No newline at the end, CRLF lines. */
	assert_filtered("[core]\r\n\tbare = false\r\n\tpager = x", "[core]\r\n\tbare = false\r\n",
			"core.pager");
}

/* --- repos_scan() and repos_disarm() -------------------------------------------------------- */

typedef struct tree {
	char *dir;
} tree;

static int setup_tree(void **state)
{
	tree *t = calloc(1, sizeof(*t));
	char tmpl[] = "/tmp/dsb-repos.XXXXXX";
	if (!t || !mkdtemp(tmpl))
		return -1;
	t->dir = realpath(tmpl, NULL);
	*state = t;
	return t->dir ? 0 : -1;
}

static int teardown_tree(void **state)
{
	tree *t = *state;
	dsb_test_rm_rf(t->dir);
	free(t->dir);
	free(t);
	return 0;
}

static char *at(const tree *t, const char *rel)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", t->dir, rel) > 0);
	return p;
}

static void make_dir(const tree *t, const char *rel)
{
	_cleanup_free_ char *p = at(t, rel);
	assert_int_equal(mkdir_p(p, 0755, false), 0);
}

static void make_file(const tree *t, const char *rel, const char *text, mode_t mode)
{
	_cleanup_free_ char *p = at(t, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	assert_int_equal(fd_write_all(fd, text, strlen(text)), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	(void)close(fd);
}

static char *read_text(const tree *t, const char *rel)
{
	_cleanup_free_ char *p = at(t, rel);
	FILE *f = fopen(p, "re");
	assert_non_null(f);
	char *buf = calloc(1, 4096);
	assert_non_null(buf);
	(void)fread(buf, 1, 4095, f);
	(void)fclose(f);
	return buf;
}

/* A gitdir at @rel: HEAD, objects/, refs/, hooks/ with @hook executable, and @config. */
static void make_gitdir(const tree *t, const char *rel, const char *config)
{
	char p[512];
	(void)snprintf(p, sizeof(p), "%s/objects", rel);
	make_dir(t, p);
	(void)snprintf(p, sizeof(p), "%s/refs", rel);
	make_dir(t, p);
	(void)snprintf(p, sizeof(p), "%s/hooks", rel);
	make_dir(t, p);
	(void)snprintf(p, sizeof(p), "%s/HEAD", rel);
	make_file(t, p, "ref: refs/heads/main\n", 0644);
	(void)snprintf(p, sizeof(p), "%s/config", rel);
	make_file(t, p, config, 0644);
	(void)snprintf(p, sizeof(p), "%s/hooks/pre-commit", rel);
	make_file(t, p, "#!/bin/sh\nexit 1\n", 0755);
	(void)snprintf(p, sizeof(p), "%s/hooks/pre-commit.sample", rel);
	make_file(t, p, "#!/bin/sh\n", 0755);
}

static void test_scan_finds_markers_to_its_depth(void **state)
{
	const tree *t = *state;
	make_dir(t, "ws/.git");
	make_gitdir(t, "ws/vendor/x/.git", "");
	make_dir(t, "ws/wt");
	make_file(t, "ws/wt/.git", "gitdir: ../.git/worktrees/wt\n", 0644);
	make_gitdir(t, "ws/bare", "");
	make_gitdir(t, "ws/bare/inner/.git", ""); /* inside a bare repository: not looked for */
	make_gitdir(t, "ws/a/b/c/d/.git", "");	  /* depth 4 */
	make_gitdir(t, "ws/a/b/c/d/e/.git", "");  /* depth 5 */
	make_gitdir(t, "ws/node_modules/p/.git", "");
	make_gitdir(t, "elsewhere/.git", "");
	_cleanup_free_ char *link = at(t, "ws/link"), *target = at(t, "elsewhere");
	assert_int_equal(symlink(target, link), 0);

	_cleanup_free_ char *ws = at(t, "ws");
	char *roots[] = {ws, (char *)"/tmp", NULL};
	char **markers = NULL;
	bool truncated = true;
	assert_int_equal(repos_scan(roots, &markers, &truncated), 0);
	assert_false(truncated);
	const char *want[] = {"ws/.git", "ws/a/b/c/d/.git", "ws/bare", "ws/vendor/x/.git",
			      "ws/wt/.git"};
	assert_int_equal(strv_length(markers), ELEMENTSOF(want));
	for (size_t i = 0; i < ELEMENTSOF(want); i++) {
		_cleanup_free_ char *w = at(t, want[i]);
		assert_string_equal(markers[i], w);
	}
	strv_free(markers);
}

static void test_disarm_a_planted_repository(void **state)
{
	const tree *t = *state;
	make_gitdir(t, "ws/sub/.git", "[core]\n\tbare = false\n\tfsmonitor = evil\n");
	_cleanup_free_ char *hooks = at(t, "ws/sub/.git/hooks"), *outside = at(t, "outside");
	make_file(t, "outside", "#!/bin/sh\n", 0755);
	_cleanup_free_ char *post = NULL;
	assert_true(asprintf(&post, "%s/post-checkout", hooks) > 0);
	assert_int_equal(symlink(outside, post), 0);

	_cleanup_free_ char *ws = at(t, "ws"), *marker = at(t, "ws/sub/.git");
	char *scope[] = {ws, NULL};
	strbuf notes = STRBUF_INIT;
	assert_int_equal(repos_disarm(marker, scope, NULL, &notes), 0);
	assert_non_null(notes.buf);
	assert_non_null(strstr(notes.buf, "is a repository this call made"));
	assert_non_null(strstr(notes.buf, "hooks made inert: "));
	assert_non_null(strstr(notes.buf, "pre-commit"));
	assert_non_null(strstr(notes.buf, "post-checkout"));
	assert_null(strstr(notes.buf, ".sample"));
	assert_non_null(strstr(notes.buf, "config keys removed: core.fsmonitor]"));

	struct stat st;
	_cleanup_free_ char *pre = at(t, "ws/sub/.git/hooks/pre-commit");
	assert_int_equal(stat(pre, &st), 0);
	assert_int_equal(st.st_mode & 0111, 0);
	assert_int_equal(lstat(post, &st), -1);
	/* What the symlink named is untouched. */
	assert_int_equal(stat(outside, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	_cleanup_free_ char *config = read_text(t, "ws/sub/.git/config");
	assert_string_equal(config, "[core]\n\tbare = false\n");

	/* Nothing more to do: no second note. */
	strbuf_done(&notes);
	assert_int_equal(repos_disarm(marker, scope, NULL, &notes), 0);
	assert_null(notes.buf);
}

static void test_disarm_follows_a_gitfile_within_scope_only(void **state)
{
	const tree *t = *state;
	make_gitdir(t, "ws/real", "[core]\n\tpager = evil\n");
	make_gitdir(t, "out/real", "[core]\n\tpager = theirs\n");
	_cleanup_free_ char *real = at(t, "ws/real"), *out = at(t, "out/real");
	_cleanup_free_ char *in_line = NULL, *out_line = NULL;
	assert_true(asprintf(&in_line, "gitdir: %s\n", real) > 0);
	assert_true(asprintf(&out_line, "gitdir: %s\n", out) > 0);
	make_dir(t, "ws/a");
	make_dir(t, "ws/b");
	make_file(t, "ws/a/.git", in_line, 0644);
	make_file(t, "ws/b/.git", out_line, 0644);
	_cleanup_free_ char *ws = at(t, "ws"), *a = at(t, "ws/a/.git"), *b = at(t, "ws/b/.git");
	char *scope[] = {ws, NULL};
	strbuf notes = STRBUF_INIT;
	assert_int_equal(repos_disarm(a, scope, NULL, &notes), 0);
	assert_int_equal(repos_disarm(b, scope, NULL, &notes), 0);
	_cleanup_free_ char *in_config = read_text(t, "ws/real/config");
	_cleanup_free_ char *out_config = read_text(t, "out/real/config");
	assert_string_equal(in_config, "[core]\n");
	assert_string_equal(out_config, "[core]\n\tpager = theirs\n");
	/* A known repository (protected during the call) is left alone. */
	make_gitdir(t, "ws/known/.git", "[core]\n\thooksPath = mine\n");
	_cleanup_free_ char *known = at(t, "ws/known/.git");
	char *known_v[] = {known, NULL};
	assert_int_equal(repos_check(scope, scope, known_v, &notes), 0);
	_cleanup_free_ char *kept = read_text(t, "ws/known/.git/config");
	assert_string_equal(kept, "[core]\n\thooksPath = mine\n");
	strbuf_done(&notes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_filter_keeps_what_init_and_clone_write),
		cmocka_unit_test(test_config_filter_drops_program_keys),
		cmocka_unit_test(test_config_filter_drops_what_git_might_read_otherwise),
		cmocka_unit_test_setup_teardown(test_scan_finds_markers_to_its_depth, setup_tree,
						teardown_tree),
		cmocka_unit_test_setup_teardown(test_disarm_a_planted_repository, setup_tree,
						teardown_tree),
		cmocka_unit_test_setup_teardown(test_disarm_follows_a_gitfile_within_scope_only,
						setup_tree, teardown_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
