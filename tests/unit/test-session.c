/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the session store: the layout encodings (dsh-compat §3.6), creating and opening
 * sessions, appends (one line each, DSH's envelope, contiguous seq), the folds (§3.4, §11.11
 * #17-18), the write-path validation, resolve() with a session (§2.2, §11.11 #4-7), torn tails,
 * zstd logs, concurrent writers and writers killed mid-append.
 *
 * Each test gets a private store under a temp dir T:
 *
 *   T/store/--<projectKey>--/<encodedId>/session.jsonl     created by the tests
 *   T/copy.jsonl                                           a copy of a DSH fixture
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "src/policy/policy.h"
#include "src/session/session.h"
#include "helpers.h"

typedef struct fixture {
	char *dir;
	dsb_store *store;
} fixture;

static char *join(const char *a, const char *b)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", a, b) > 0);
	return p;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = dsb_test_mkdtemp();
	char *root = join(f->dir, "store");
	assert_int_equal(dsb_store_open(root, &f->store, NULL), 0);
	/* Durability is tested where it matters; the rest need not wait for the disk. */
	dsb_store_set_fsync(f->store, false);
	free(root);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	dsb_store_free(f->store);
	dsb_test_rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* Copies a DSH fixture into the test dir and returns the copy's path. */
static char *copy_fixture(fixture *f, const char *name)
{
	char *src = dsb_test_dsh_fixture(name);
	size_t len;
	char *data = dsb_test_read_file(src, &len);
	assert_non_null(data);
	char *dst = join(f->dir, name);
	dsb_test_write_file(dst, data, len);
	free(data);
	free(src);
	return dst;
}

static size_t count_lines(const char *path)
{
	size_t len, n = 0;
	char *data = dsb_test_read_file(path, &len);
	assert_non_null(data);
	for (size_t i = 0; i < len; i++)
		n += data[i] == '\n';
	free(data);
	return n;
}

/* The last line of a file, without its newline. */
static char *last_line(const char *path)
{
	size_t len;
	char *data = dsb_test_read_file(path, &len);
	assert_non_null(data);
	assert_true(len > 0 && data[len - 1] == '\n');
	data[len - 1] = '\0';
	char *nl = strrchr(data, '\n');
	char *line = strdup(nl ? nl + 1 : data);
	free(data);
	return line;
}

/* The line with "time":N replaced by "time":T, so it can be compared exactly. */
static char *without_time(const char *line)
{
	char *copy = strdup(line);
	char *t = strstr(copy, "\"time\":");
	assert_non_null(t);
	char *digits = t + 7, *end = digits;
	while (*end >= '0' && *end <= '9')
		end++;
	assert_true(end > digits);
	*digits = 'T';
	memmove(digits + 1, end, strlen(end) + 1);
	return copy;
}

/* --- layout (dsh-compat §3.6)
 * --------------------------------------------------------------------- */

static void test_encode_segment(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"f3cbd087-fb45-4b32-b0f2-3082d65bfcb4", "f3cbd087-fb45-4b32-b0f2-3082d65bfcb4"},
		{"sess_1.A", "sess_1.A"},
		{".", "~002E"},
		{"..", "~002E~002E"},
		{"...", "..."},
		{"a~b", "a~007Eb"},
		{"../etc", "..~002Fetc"},
		{"a b\\c:", "a~0020b~005Cc~003A"},
		{"caf\xC3\xA9", "caf~00E9"},
		{"\xF0\x9F\x98\x80", "~D83D~DE00"}, /* two UTF-16 code units */
		{"\xFF", "~FFFD"},		    /* what Node decodes the byte to */
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *out = NULL;
		assert_int_equal(layout_encode_segment(cases[i].in, &out), 0);
		assert_string_equal(out, cases[i].out);
		free(out);
	}
	char *out = NULL;
	assert_int_equal(layout_encode_segment("", &out), -EINVAL);
}

static void test_project_key(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"/home/u/proj", "--home-u-proj--"},
		{"/", "--root--"},
		{"///", "--root--"},
		{"//a///b/", "--a-b---"}, /* a trailing separator is a trailing '-' */
		{"C:\\Users\\me", "--C-Users-me--"},
		{"/a-/b", "--a--b--"}, /* a literal '-' is not a separator run */
		{"/a b/~", "--a~0020b-~007E--"},
		{"/caf\xC3\xA9", "--caf~00E9--"},
		{"{{cwd}}", "--~007B~007Bcwd~007D~007D--"},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *out = NULL;
		assert_int_equal(layout_project_key(cases[i].in, &out), 0);
		assert_string_equal(out, cases[i].out);
		free(out);
	}

	/* The slug keeps 251 characters between the dashes. */
	char long_path[400] = "/";
	memset(long_path + 1, 'x', 300);
	char *out = NULL;
	assert_int_equal(layout_project_key(long_path, &out), 0);
	assert_int_equal(strlen(out), 2 + 251 + 2);
	free(out);
	assert_int_equal(layout_project_key("", &out), -EINVAL);
}

/* --- create and open ------------------------------------------------------------------------ */

static void test_create_writes_dsh_header_privately(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, "/home/u/proj", &s, NULL), 0);

	char *expected = NULL;
	assert_true(asprintf(&expected, "%s/store/--home-u-proj--/%s/session.jsonl", f->dir,
			     dsb_session_id(s)) > 0);
	char *real_dir = realpath(f->dir, NULL);
	char *expected_real = NULL;
	assert_true(asprintf(&expected_real, "%s/store/--home-u-proj--/%s/session.jsonl", real_dir,
			     dsb_session_id(s)) > 0);
	assert_string_equal(dsb_session_path(s), expected_real);

	char *line = last_line(dsb_session_path(s));
	char *header = NULL;
	assert_true(asprintf(&header,
			     "{\"type\":\"session\",\"version\":0,\"id\":\"%s\",\"createdAt\":%llu,"
			     "\"cwd\":\"/home/u/proj\",\"delegationDepth\":0}",
			     dsb_session_id(s), (unsigned long long)dsb_session_created_at(s)) > 0);
	assert_string_equal(line, header);
	assert_int_equal(count_lines(dsb_session_path(s)), 1);

	struct stat st;
	assert_int_equal(stat(dsb_session_path(s), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	char *dir = strdup(dsb_session_path(s));
	*strrchr(dir, '/') = '\0';
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	*strrchr(dir, '/') = '\0';
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);

	/* No temp file is left behind. */
	*strrchr(expected, '/') = '\0';
	char *tmp_glob = NULL;
	assert_true(asprintf(&tmp_glob, "ls %s | grep -c tmp >/dev/null", expected) > 0);
	assert_int_not_equal(system(tmp_glob), 0);

	free(tmp_glob);
	free(dir);
	free(header);
	free(line);
	free(expected);
	free(expected_real);
	free(real_dir);
	dsb_session_free(s);
}

static void test_open_by_id_and_by_path(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL, *by_id = NULL, *by_path = NULL, *no_cwd = NULL, *again = NULL;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	assert_int_equal(dsb_session_create(f->store, NULL, &no_cwd, NULL), 0);
	assert_non_null(strstr(dsb_session_path(no_cwd), "/_no-cwd/"));
	assert_null(dsb_session_cwd(no_cwd));

	assert_int_equal(dsb_session_open(f->store, dsb_session_id(s), &by_id, NULL), 0);
	assert_string_equal(dsb_session_path(by_id), dsb_session_path(s));
	assert_string_equal(dsb_session_cwd(by_id), "/p");
	assert_int_equal(dsb_session_open(f->store, dsb_session_path(s), &by_path, NULL), 0);
	assert_string_equal(dsb_session_id(by_path), dsb_session_id(s));
	assert_int_equal(dsb_session_open(f->store, dsb_session_id(no_cwd), &again, NULL), 0);
	assert_null(dsb_session_cwd(again));

	dsb_error err = {0};
	dsb_session *none = NULL;
	assert_int_equal(dsb_session_open(f->store, "no-such-id", &none, &err),
			 -DSB_E_SESSION_NOT_FOUND);
	assert_non_null(strstr(err.message, "no session \"no-such-id\""));
	assert_int_equal(dsb_session_open(f->store, "/no/such/session.jsonl", &none, &err),
			 -DSB_E_SESSION_NOT_FOUND);
	assert_int_equal(dsb_session_create(f->store, "relative", &none, &err),
			 -DSB_E_INVALID_ARGS);
	assert_null(none);

	dsb_session_free(s);
	dsb_session_free(no_cwd);
	dsb_session_free(by_id);
	dsb_session_free(by_path);
	dsb_session_free(again);
}

static int count_listed(const dsb_session_info *info, void *userdata)
{
	(*(int *)userdata)++;
	return 0;
}

static void test_list_finds_every_session(void **state)
{
	fixture *f = *state;
	int seen = 0;
	assert_int_equal(dsb_store_list(f->store, count_listed, &seen, NULL), 0);
	for (int i = 0; i < 3; i++) {
		dsb_session *s = NULL;
		assert_int_equal(dsb_session_create(f->store, i ? "/a" : "/b", &s, NULL), 0);
		dsb_session_free(s);
	}
	assert_int_equal(dsb_store_list(f->store, count_listed, &seen, NULL), 3);
	assert_int_equal(seen, 3);
}

/* --- appends and folds ---------------------------------------------------------------------- */

static void test_set_mode_appends_exactly_one_event(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_DANGER_FULL_ACCESS, NULL), 0);

	assert_int_equal(count_lines(dsb_session_path(s)), 2);
	char *line = last_line(dsb_session_path(s));
	char *stable = without_time(line);
	assert_string_equal(stable, "{\"type\":\"sandbox/mode\",\"seq\":0,\"time\":T,"
				    "\"data\":{\"mode\":\"danger-full-access\"}}");
	free(stable);
	free(line);
	dsb_session_free(s);
}

static void test_fold_is_last_switch_or_nothing(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	dsb_mode mode = DSB_MODE_WORKSPACE_WRITE;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);

	assert_int_equal(dsb_session_fold_mode(s, &mode, NULL), 0);
	assert_int_equal(mode, DSB_MODE_WORKSPACE_WRITE); /* untouched: undefined */

	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_DANGER_FULL_ACCESS, NULL), 0);
	assert_int_equal(dsb_session_append(s, "turn/start", "{\"turn\":1}", NULL, NULL), 0);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_READ_ONLY, NULL), 0);
	assert_int_equal(dsb_session_append(s, "turn/end", "{\"turn\":1}", NULL, NULL), 0);
	assert_int_equal(dsb_session_fold_mode(s, &mode, NULL), 1);
	assert_int_equal(mode, DSB_MODE_READ_ONLY);

	dsb_approval_policy policy;
	char *preset = NULL;
	assert_int_equal(dsb_session_fold_approval(s, &policy, NULL), 0);
	assert_int_equal(dsb_session_fold_preset(s, &preset, NULL), 0);
	assert_int_equal(dsb_session_set_approval(s, "never", NULL), 0);
	assert_int_equal(
		dsb_session_append(s, "permission/preset", "{\"preset\":\"custom-x\"}", NULL, NULL),
		0);
	assert_int_equal(dsb_session_fold_approval(s, &policy, NULL), 1);
	assert_int_equal(policy, DSB_APPROVAL_NEVER);
	assert_int_equal(dsb_session_fold_preset(s, &preset, NULL), 1);
	assert_string_equal(preset, "custom-x");
	free(preset);

	/* Delegation events fold like any other (dsh-compat §2.6). */
	assert_int_equal(
		dsb_session_append(s, "sandbox/mode",
				   "{\"mode\":\"workspace-write\",\"source\":\"delegation\"}", NULL,
				   NULL),
		0);
	assert_int_equal(dsb_session_fold_mode(s, &mode, NULL), 1);
	assert_int_equal(mode, DSB_MODE_WORKSPACE_WRITE);
	dsb_session_free(s);
}

static void test_seq_is_contiguous_across_sessions_objects(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL, *other = NULL;
	uint64_t seq = 99;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	assert_int_equal(dsb_session_open(f->store, dsb_session_id(s), &other, NULL), 0);
	for (uint64_t i = 0; i < 10; i++) {
		assert_int_equal(dsb_session_append(i % 2 ? s : other, "x/y", "{}", &seq, NULL), 0);
		assert_int_equal(seq, i);
	}
	log_scan_result res;
	assert_int_equal(session_scan(s, NULL, NULL, &res, NULL), 0);
	assert_int_equal(res.n_events, 10);
	assert_int_equal(res.last_seq, 9);
	assert_false(res.torn);
	dsb_session_free(s);
	dsb_session_free(other);
}

static void test_write_paths_validate_first(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	dsb_error err = {0};
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);

	assert_int_equal(dsb_session_set_approval(s, "sometimes", &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message, "approval policy must be one of \"ask\" or \"never\"");
	assert_int_equal(dsb_session_set_mode(s, (dsb_mode)9, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_session_append(s, "x", "{\"a\":\n1}", NULL, &err),
			 -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_session_append(s, "x", "{not json", NULL, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_session_append(s, "", "{}", NULL, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(count_lines(dsb_session_path(s)), 1); /* nothing was appended */

	/* A type with characters JSON must escape is escaped, keeping the line whole. */
	assert_int_equal(dsb_session_append(s, "odd\"type\n", "{}", NULL, &err), 0);
	char *line = last_line(dsb_session_path(s));
	assert_non_null(strstr(line, "{\"type\":\"odd\\\"type\\n\",\"seq\":0,"));
	free(line);
	dsb_session_free(s);
}

static void append_raw(const char *path, const char *bytes);

static void test_unknown_mode_fails_closed(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	dsb_error err = {0};
	dsb_mode mode;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	/* The library never writes what its readers refuse... */
	assert_int_equal(
		dsb_session_append(s, "sandbox/mode", "{\"mode\":\"host-root\"}", NULL, &err),
		-DSB_E_INVALID_ARGS);
	assert_non_null(strstr(err.message, "sandbox/mode carries unknown mode \"host-root\""));
	assert_int_equal(
		dsb_session_append(s, "approval/policy", "{\"policy\":\"always\"}", NULL, &err),
		-DSB_E_INVALID_ARGS);

	/* ...and refuses it when another writer did. */
	append_raw(dsb_session_path(s), "{\"type\":\"approval/policy\",\"seq\":0,\"time\":1,"
					"\"data\":{\"policy\":\"always\"}}\n");
	dsb_approval_policy p;
	assert_int_equal(dsb_session_fold_approval(s, &p, &err), -DSB_E_INVARIANT);
	assert_non_null(strstr(err.message, "approval/policy carries unknown policy \"always\""));
	/* Any reader, whatever it looks for: the log as a whole is refused. */
	assert_int_equal(dsb_session_fold_mode(s, &mode, &err), -DSB_E_INVARIANT);
	assert_non_null(strstr(err.message, "approval/policy carries unknown policy \"always\""));

	/* The policy of such a session cannot be resolved: nothing may run under a guess. */
	dsb_config *cfg = dsb_config_new();
	dsb_policy *policy = NULL;
	dsb_exec_policy out = {0};
	assert_int_equal(dsb_policy_new(cfg, &policy, NULL), 0);
	assert_int_equal(dsb_session_resolve(s, policy, _DSB_MODE_INVALID, &out, &err),
			 -DSB_E_INVARIANT);
	/* Not even when an approved grant names the mode outright: the log is corrupt. */
	assert_int_equal(dsb_session_resolve(s, policy, DSB_MODE_READ_ONLY, &out, &err),
			 -DSB_E_INVARIANT);
	dsb_policy_free(policy);
	dsb_config_free(cfg);
	dsb_session_free(s);
}

/* --- resolve with a session (dsh-compat §2.2, §11.11 #4-7)
 * ---------------------------------------- */

static void test_resolve_with_sessions(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = dsb_config_new();
	cfg->mode = DSB_MODE_WORKSPACE_WRITE;
	assert_int_equal(dsb_config_set_workspace_root(cfg, "/fallback", NULL), 0);
	dsb_policy *policy = NULL;
	assert_int_equal(dsb_policy_new(cfg, &policy, NULL), 0);

	dsb_session *first = NULL, *second = NULL, *headless = NULL;
	assert_int_equal(dsb_session_create(f->store, "/projects/first", &first, NULL), 0);
	assert_int_equal(dsb_session_create(f->store, "/projects/second", &second, NULL), 0);
	assert_int_equal(dsb_session_create(f->store, NULL, &headless, NULL), 0);
	assert_int_equal(dsb_session_set_mode(second, DSB_MODE_READ_ONLY, NULL), 0);

	dsb_exec_policy out = {0};
	assert_int_equal(dsb_session_resolve(first, policy, _DSB_MODE_INVALID, &out, NULL), 0);
	assert_int_equal(out.mode, DSB_MODE_WORKSPACE_WRITE);
	assert_string_equal(out.workspace_root, "/projects/first");
	assert_string_equal(out.session_id, dsb_session_id(first));
	dsb_exec_policy_done(&out);

	assert_int_equal(dsb_session_resolve(second, policy, _DSB_MODE_INVALID, &out, NULL), 0);
	assert_int_equal(out.mode, DSB_MODE_READ_ONLY);
	assert_string_equal(out.workspace_root, "/projects/second");
	dsb_exec_policy_done(&out);

	/* An approved grant outranks the session's mode and keeps its root. */
	assert_int_equal(
		dsb_session_resolve(second, policy, DSB_MODE_DANGER_FULL_ACCESS, &out, NULL), 0);
	assert_int_equal(out.mode, DSB_MODE_DANGER_FULL_ACCESS);
	assert_string_equal(out.workspace_root, "/projects/second");
	dsb_exec_policy_done(&out);

	assert_int_equal(dsb_session_resolve(headless, policy, _DSB_MODE_INVALID, &out, NULL), 0);
	assert_string_equal(out.workspace_root, "/fallback");
	dsb_exec_policy_done(&out);

	assert_string_equal(dsb_policy_workspace_root(policy), "/fallback");
	dsb_session_free(first);
	dsb_session_free(second);
	dsb_session_free(headless);
	dsb_policy_free(policy);
	dsb_config_free(cfg);
}

/* --- DSH's own logs ------------------------------------------------------------------------- */

static void test_fixture_copy_accepts_appends(void **state)
{
	fixture *f = *state;
	static const char *const names[] = {
		"escalation-approved.session.jsonl",
		"escalation-rejected.session.jsonl",
		"missing-sandbox-runner.session.jsonl",
		"packed-chunks.session.jsonl",
		"subagent-continuable-inheritance.session.jsonl",
	};
	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		char *path = copy_fixture(f, names[i]);
		dsb_session *s = NULL;
		log_scan_result before, after;
		assert_int_equal(dsb_session_open(f->store, path, &s, NULL), 0);
		assert_int_equal(session_scan(s, NULL, NULL, &before, NULL), 0);

		/* The fixture's lines carry no seq: the next one is the event count. */
		uint64_t seq = 0;
		assert_int_equal(dsb_session_set_mode(s, DSB_MODE_READ_ONLY, NULL), 0);
		assert_int_equal(dsb_session_append(s, "x/probe", "{}", &seq, NULL), 0);
		assert_int_equal(seq, before.n_events + 1);
		assert_int_equal(session_scan(s, NULL, NULL, &after, NULL), 0);
		assert_int_equal(after.n_events, before.n_events + 2);

		dsb_mode mode;
		assert_int_equal(dsb_session_fold_mode(s, &mode, NULL), 1);
		assert_int_equal(mode, DSB_MODE_READ_ONLY);
		dsb_session_free(s);
		free(path);
	}
}

static void test_fixture_delegation_folds(void **state)
{
	fixture *f = *state;
	char *path = copy_fixture(f, "subagent-continuable-inheritance.session.jsonl");
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_open(f->store, path, &s, NULL), 0);
	assert_string_equal(dsb_session_cwd(s), "{{cwd}}");

	/* Pinned by reading the log: its own knob events, in the order they stand. */
	char *text = dsb_test_read_file(path, NULL);
	char *last_mode = NULL;
	for (char *p = text; (p = strstr(p, "{\"type\":\"sandbox/mode\"")); p++)
		last_mode = p;
	dsb_mode mode;
	int found = dsb_session_fold_mode(s, &mode, NULL);
	if (last_mode) {
		assert_int_equal(found, 1);
		char *m = strstr(last_mode, "\"mode\":\"") + 8;
		assert_int_equal(
			strncmp(m, dsb_mode_to_string(mode), strlen(dsb_mode_to_string(mode))), 0);
	} else
		assert_int_equal(found, 0);
	free(text);
	dsb_session_free(s);
	free(path);
}

/* --- torn tails ----------------------------------------------------------------------------- */

static void append_raw(const char *path, const char *bytes)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, strlen(bytes)), (ssize_t)strlen(bytes));
	close(fd);
}

static void test_torn_tail_is_cut_and_kept(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	dsb_mode mode;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_WORKSPACE_WRITE, NULL), 0);

	/* A crash mid-line: a sandbox/mode that never finished does not count. */
	append_raw(dsb_session_path(s),
		   "{\"type\":\"sandbox/mode\",\"seq\":1,\"time\":1,\"data\":{\"mo");
	assert_int_equal(dsb_session_fold_mode(s, &mode, NULL), 1);
	assert_int_equal(mode, DSB_MODE_WORKSPACE_WRITE);

	uint64_t seq = 0;
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_DANGER_FULL_ACCESS, NULL), 0);
	assert_int_equal(dsb_session_append(s, "x/y", "{}", &seq, NULL), 0);
	assert_int_equal(seq, 2);
	assert_int_equal(count_lines(dsb_session_path(s)), 4);
	assert_int_equal(dsb_session_fold_mode(s, &mode, NULL), 1);
	assert_int_equal(mode, DSB_MODE_DANGER_FULL_ACCESS);

	/* The cut bytes are in a side file next to the log. */
	char *cmd = NULL;
	assert_true(asprintf(&cmd, "cat %s.torn-* | grep -q '\"data\":{\"mo$'",
			     dsb_session_path(s)) > 0);
	assert_int_equal(system(cmd), 0);
	free(cmd);

	log_scan_result res;
	assert_int_equal(session_scan(s, NULL, NULL, &res, NULL), 0);
	assert_false(res.torn);
	assert_int_equal(res.n_events, 3);
	dsb_session_free(s);
}

static void test_header_without_newline_is_refused(void **state)
{
	fixture *f = *state;
	char *path = join(f->dir, "torn-header.jsonl");
	dsb_test_write_file(path, "{\"type\":\"session\",\"ver", 22);
	dsb_session *s = NULL;
	dsb_error err = {0};
	assert_int_equal(dsb_session_open(f->store, path, &s, &err), -DSB_E_SESSION_INVALID);
	assert_non_null(strstr(err.message, "empty or header-less session log"));
	dsb_test_write_file(path, "", 0);
	assert_int_equal(dsb_session_open(f->store, path, &s, &err), -DSB_E_SESSION_INVALID);
	free(path);
}

static void test_last_line_not_an_object_is_an_error_not_a_crash(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	dsb_error err = {0};
	dsb_mode mode;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	/* Found by fuzz/fuzz-fold: valid JSON that is not an object, as the last line. */
	append_raw(dsb_session_path(s), "[1]\n");
	assert_int_equal(dsb_session_append(s, "x/y", "{}", NULL, &err), -DSB_E_SESSION_INVALID);
	assert_non_null(strstr(err.message, "corrupt session log: unparsable committed event"));
	/* Every reader refuses the whole log, with the same message, whatever it looks for. */
	char *message = strdup(err.message);
	append_raw(dsb_session_path(s), "{\"type\":\"sandbox/mode\",\"seq\":1,\"data\":\"x\"}\n");
	assert_int_equal(dsb_session_fold_mode(s, &mode, &err), -DSB_E_SESSION_INVALID);
	assert_string_equal(err.message, message);
	free(message);
	dsb_session_free(s);
}

/* --- a 10 MB line --------------------------------------------------------------------------- */

static void test_huge_last_line(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_READ_ONLY, NULL), 0);

	size_t n = 10 * 1024 * 1024;
	char *data = malloc(n + 32);
	strcpy(data, "{\"text\":\"");
	memset(data + 9, 'x', n);
	strcpy(data + 9 + n, "\"}");
	uint64_t seq;
	assert_int_equal(dsb_session_append(s, "tool/output", data, &seq, NULL), 0);
	assert_int_equal(seq, 1);
	free(data);

	dsb_mode mode;
	assert_int_equal(dsb_session_fold_mode(s, &mode, NULL), 1);
	assert_int_equal(mode, DSB_MODE_READ_ONLY);
	assert_int_equal(dsb_session_append(s, "x/y", "{}", &seq, NULL), 0);
	assert_int_equal(seq, 2);
	dsb_session_free(s);
}

/* A checkpoint is an aid, never trusted blindly: garbage in it costs a full scan, no more. */
static void test_checkpoint_garbage_means_a_full_scan(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	dsb_error err = {0};
	dsb_mode mode;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_READ_ONLY, NULL), 0);
	const char *path = dsb_session_path(s);
	char value[256];
	assert_true(getxattr(path, "user.dsh-sandbox.checked", value, sizeof(value)) > 0);

	static const char *const garbage[] = {
		"",
		"2 1 1 0 1 1 1 0",
		"1 -5 1 0 9 1 1 0",
		"1 99999 2 1 99999 1 1 0",
		"1 10 2 1 10 1 1 zz",
		"1 10 2 1 10 1 1000000000 0",
		"1  10 2 1 10 1 1 0",
	};
	for (size_t i = 0; i < ELEMENTSOF(garbage); i++) {
		assert_int_equal(setxattr(path, "user.dsh-sandbox.checked", garbage[i],
					  strlen(garbage[i]), 0),
				 0);
		assert_int_equal(dsb_session_fold_mode(s, &mode, &err), 1);
		assert_int_equal(mode, DSB_MODE_READ_ONLY);
	}
	/* A corrupt line after a good checkpoint is read, and refused. */
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_WORKSPACE_WRITE, NULL), 0);
	append_raw(path, "{\"type\":\"x\",\"seq\":7}\n");
	assert_int_equal(dsb_session_fold_mode(s, &mode, &err), -DSB_E_SESSION_INVALID);
	assert_non_null(strstr(err.message, "seq gap in committed region"));
	dsb_session_free(s);
}

/* A line longer than readers take (LOG_LINE_MAX) is refused before it is written. */
static void test_overlong_line_never_written(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	dsb_error err = {0};
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	struct stat before, after;
	assert_int_equal(stat(dsb_session_path(s), &before), 0);

	size_t n = (size_t)64 * 1024 * 1024;
	char *data = malloc(n + 32);
	assert_non_null(data);
	strcpy(data, "{\"text\":\"");
	memset(data + 9, 'x', n);
	strcpy(data + 9 + n, "\"}");
	assert_int_equal(dsb_session_append(s, "tool/output", data, NULL, &err),
			 -DSB_E_INVALID_ARGS);
	assert_non_null(
		strstr(err.message, "corrupt session log: line longer than 67108864 bytes"));
	free(data);
	assert_int_equal(stat(dsb_session_path(s), &after), 0);
	assert_int_equal(after.st_size, before.st_size);
	dsb_session_free(s);
}

/* --- zstd logs ------------------------------------------------------------------------------ */

static void test_zstd_log_reads_folds_and_appends(void **state)
{
	fixture *f = *state;
	static const char header[] =
		"{\"type\":\"session\",\"version\":0,\"id\":\"z-1\",\"createdAt\":1,\"cwd\":\"/z\","
		"\"delegationDepth\":0}\n";
	static const char body[] =
		"{\"type\":\"sandbox/"
		"mode\",\"seq\":0,\"time\":2,\"data\":{\"mode\":\"read-only\"}}\n"
		"{\"type\":\"turn/start\",\"seq\":1,\"time\":3,\"data\":{\"turn\":1}}\n";
	char *path = join(f->dir, "session.jsonl.zstd");
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	const char *parts[] = {header, body};
	for (size_t i = 0; i < 2; i++) {
		size_t cap = ZSTD_compressBound(strlen(parts[i]));
		char *frame = malloc(cap);
		size_t n = ZSTD_compress(frame, cap, parts[i], strlen(parts[i]), 3);
		assert_false(ZSTD_isError(n));
		assert_int_equal(write(fd, frame, n), (ssize_t)n);
		free(frame);
	}
	close(fd);

	dsb_session *s = NULL;
	dsb_mode mode;
	uint64_t seq;
	assert_int_equal(dsb_session_open(f->store, path, &s, NULL), 0);
	assert_string_equal(dsb_session_id(s), "z-1");
	assert_int_equal(dsb_session_fold_mode(s, &mode, NULL), 1);
	assert_int_equal(mode, DSB_MODE_READ_ONLY);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_WORKSPACE_WRITE, NULL), 0);
	assert_int_equal(dsb_session_append(s, "x/y", "{}", &seq, NULL), 0);
	assert_int_equal(seq, 3);
	assert_int_equal(dsb_session_fold_mode(s, &mode, NULL), 1);
	assert_int_equal(mode, DSB_MODE_WORKSPACE_WRITE);

	/* Still a valid zstd stream: the zstd tool decodes it to the header and four events. */
	char *cmd = NULL;
	assert_true(asprintf(&cmd, "test \"$(zstd -dc %s | wc -l)\" = 5", path) > 0);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	dsb_session_free(s);
	free(path);
}

/* --- concurrent writers and crashes --------------------------------------------------------- */

static void test_concurrent_writers_keep_seq_contiguous(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	const int writers = 6, each = 50;

	for (int w = 0; w < writers; w++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			dsb_session *mine = NULL;
			if (dsb_session_open(f->store, dsb_session_path(s), &mine, NULL) < 0)
				_exit(2);
			for (int i = 0; i < each; i++) {
				char data[64];
				snprintf(data, sizeof(data), "{\"writer\":%d,\"i\":%d}", w, i);
				if (dsb_session_append(mine, "x/concurrent", data, NULL, NULL) < 0)
					_exit(3);
			}
			dsb_session_free(mine);
			_exit(0);
		}
	}
	for (int w = 0; w < writers; w++) {
		int status;
		assert_true(wait(&status) > 0);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	/* Every line whole, seq 0..N-1 in order (the scan checks contiguity), none lost. */
	log_scan_result res;
	assert_int_equal(session_scan(s, NULL, NULL, &res, NULL), 0);
	assert_int_equal(res.n_events, (uint64_t)(writers * each));
	assert_false(res.torn);
	dsb_session_free(s);
}

/* A writer that reports each acknowledged seq on @report, appending until killed. */
static void crash_writer(dsb_store *store, const char *path, int report)
{
	dsb_session *s = NULL;
	/* Acknowledged means durable: this writer fsyncs, as the default does. */
	dsb_store_set_fsync(store, true);
	if (dsb_session_open(store, path, &s, NULL) < 0)
		_exit(2);
	for (;;) {
		uint64_t seq;
		if (dsb_session_append(s, "x/crash",
				       "{\"payload\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}", &seq,
				       NULL) < 0)
			_exit(3);
		if (write(report, &seq, sizeof(seq)) != sizeof(seq))
			_exit(4);
	}
}

static int check_acknowledged(const log_record *rec, void *userdata, dsb_error *reterr)
{
	uint8_t *present = userdata;
	if (rec->seq < 100000)
		present[rec->seq] = 1;
	return 0;
}

static void test_killed_writers_lose_nothing_acknowledged(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, "/p", &s, NULL), 0);
	srand((unsigned)time(NULL));
	uint8_t *acked = calloc(100000, 1);
	uint64_t max_acked = 0;
	bool any = false;

	for (int round = 0; round < 25; round++) {
		int fds[2];
		assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			crash_writer(f->store, dsb_session_path(s), fds[1]);
		}
		close(fds[1]);
		struct timespec delay = {0, (long)(rand() % 20000) * 1000};
		nanosleep(&delay, NULL);
		kill(pid, SIGKILL);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		uint64_t seq;
		while (read(fds[0], &seq, sizeof(seq)) == sizeof(seq)) {
			assert_true(seq < 100000);
			acked[seq] = 1;
			max_acked = seq;
			any = true;
		}
		close(fds[0]);

		/* The log always loads, and every acknowledged append is in it. */
		uint8_t *present = calloc(100000, 1);
		log_scan_result res;
		assert_int_equal(session_scan(s, check_acknowledged, present, &res, NULL), 0);
		for (uint64_t i = 0; i < 100000; i++)
			if (acked[i] && !present[i])
				fail_msg("round %d: acknowledged seq %llu is missing", round,
					 (unsigned long long)i);
		free(present);
	}
	/* ...and the next append continues the sequence. */
	log_scan_result res;
	uint64_t next;
	assert_int_equal(session_scan(s, NULL, NULL, &res, NULL), 0);
	assert_int_equal(dsb_session_append(s, "x/after", "{}", &next, NULL), 0);
	assert_int_equal(next, res.n_events);
	if (any)
		assert_true(next > max_acked);
	free(acked);
	dsb_session_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode_segment),
		cmocka_unit_test(test_project_key),
		cmocka_unit_test_setup_teardown(test_create_writes_dsh_header_privately, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_open_by_id_and_by_path, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_finds_every_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_mode_appends_exactly_one_event, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fold_is_last_switch_or_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_seq_is_contiguous_across_sessions_objects,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_paths_validate_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_mode_fails_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve_with_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fixture_copy_accepts_appends, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fixture_delegation_folds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_torn_tail_is_cut_and_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_without_newline_is_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_last_line_not_an_object_is_an_error_not_a_crash, setup, teardown),
		cmocka_unit_test_setup_teardown(test_huge_last_line, setup, teardown),
		cmocka_unit_test_setup_teardown(test_overlong_line_never_written, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint_garbage_means_a_full_scan, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_zstd_log_reads_folds_and_appends, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_writers_keep_seq_contiguous, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_killed_writers_lose_nothing_acknowledged,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
