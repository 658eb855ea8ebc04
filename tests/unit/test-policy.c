/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the policy piece: the mode vocabulary (spec §1.1, §11.11 #16), the fail-closed
 * error (§1.2, §11.3), resolve() precedence and roots (§2.2, §11.11), the writable roots (§4.1,
 * §11.2) and the DSH_PERMISSION_MODE override.
 *
 * Fixture tree under a private temp dir T:
 *
 *   T/ws/                       a workspace
 *   T/physical/child/           a real directory
 *   T/lexical/link -> T/physical/child
 *   T/tmp-link -> /tmp          a TMPDIR that canonicalises onto /tmp
 *   T/other-tmp/                a TMPDIR of its own
 */
#include <errno.h>
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

#include "src/policy/policy.h"
#include "helpers.h"

typedef struct fixture {
	char *dir;
	char *real;
} fixture;

static char *join(const char *a, const char *b)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", a, b) > 0);
	return p;
}

static void make_dir(const char *base, const char *rel)
{
	char *p = join(base, rel);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
}

static void make_link(const char *target, const char *base, const char *rel)
{
	char *p = join(base, rel);
	assert_int_equal(symlink(target, p), 0);
	free(p);
}

static int setup_tree(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = dsb_test_mkdtemp();
	f->real = realpath(f->dir, NULL);
	make_dir(f->dir, "ws");
	make_dir(f->dir, "physical");
	make_dir(f->dir, "physical/child");
	make_dir(f->dir, "lexical");
	make_dir(f->dir, "other-tmp");
	char *child = join(f->dir, "physical/child");
	make_link(child, f->dir, "lexical/link");
	free(child);
	make_link("/tmp", f->dir, "tmp-link");
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

static dsb_policy *policy_for(dsb_mode mode, const char *root)
{
	dsb_config *cfg = dsb_config_new();
	assert_non_null(cfg);
	cfg->mode = mode;
	if (root)
		assert_int_equal(dsb_config_set_workspace_root(cfg, root, NULL), 0);
	dsb_policy *p = NULL;
	assert_int_equal(dsb_policy_new(cfg, &p, NULL), 0);
	dsb_config_free(cfg);
	return p;
}

/* --- vocabulary ----------------------------------------------------------------------------- */

static void test_sandbox_modes_lists_every_mode_in_order(void **state)
{
	(void)state;
	static const char *const expected[] = {"read-only", "workspace-write",
					       "danger-full-access"};
	assert_int_equal(_DSB_MODE_MAX, 3);
	for (int m = 0; m < _DSB_MODE_MAX; m++) {
		assert_string_equal(dsb_mode_to_string((dsb_mode)m), expected[m]);
		assert_int_equal(dsb_mode_from_string(expected[m]), m);
	}
	assert_null(dsb_mode_to_string(_DSB_MODE_MAX));
	assert_null(dsb_mode_to_string(_DSB_MODE_INVALID));
}

static void test_mode_vocabulary_is_closed_and_exact(void **state)
{
	(void)state;
	static const char *const refused[] = {
		"yolo",	     "",	 "Read-Only", "read-only ", " read-only",
		"read_only", "readonly", "danger",    "host-root",  "workspace-write\n",
	};
	for (size_t i = 0; i < ELEMENTSOF(refused); i++)
		assert_int_equal(dsb_mode_from_string(refused[i]), _DSB_MODE_INVALID);
	assert_int_equal(dsb_mode_from_string(NULL), _DSB_MODE_INVALID);
}

static void test_mode_parse_names_the_accepted_modes(void **state)
{
	(void)state;
	dsb_error err = {0};
	dsb_mode m = DSB_MODE_WORKSPACE_WRITE;

	assert_int_equal(dsb_mode_parse("yolo", "--mode", DSB_E_INVALID_ARGS, &m, &err),
			 -DSB_E_INVALID_ARGS);
	assert_int_equal(m, DSB_MODE_WORKSPACE_WRITE); /* untouched on failure */
	assert_int_equal(err.code, DSB_E_INVALID_ARGS);
	assert_string_equal(err.message, "--mode: invalid mode \"yolo\" (accepted: read-only, "
					 "workspace-write, danger-full-access)");
	assert_string_equal(err.subject, "--mode");

	assert_int_equal(
		dsb_mode_parse("danger-full-access", "--mode", DSB_E_INVALID_ARGS, &m, &err), 0);
	assert_int_equal(m, DSB_MODE_DANGER_FULL_ACCESS);
}

static void test_approval_and_backend_vocabularies(void **state)
{
	(void)state;
	assert_string_equal(dsb_approval_policy_to_string(DSB_APPROVAL_ASK), "ask");
	assert_string_equal(dsb_approval_policy_to_string(DSB_APPROVAL_NEVER), "never");
	assert_int_equal(dsb_approval_policy_from_string("never"), DSB_APPROVAL_NEVER);
	assert_int_equal(dsb_approval_policy_from_string("sometimes"), _DSB_APPROVAL_INVALID);
	assert_string_equal(dsb_backend_to_string(DSB_BACKEND_BWRAP), "bwrap");
	assert_string_equal(dsb_backend_to_string(DSB_BACKEND_LANDLOCK), "landlock");
	assert_int_equal(dsb_backend_from_string("landlock"), DSB_BACKEND_LANDLOCK);
	assert_int_equal(dsb_backend_from_string("seatbelt"), _DSB_BACKEND_INVALID);
}

/* --- the fail-closed error (spec §1.2, §11.3) ----------------------------------------------- */

static const char unavailable_ww[] =
	"sandbox mode \"workspace-write\" is requested but no sandbox backend is usable on this "
	"host; refusing to run the command unconfined. Install bubblewrap or run a "
	"Landlock-enforcing kernel (Linux), ensure sandbox-exec is usable (macOS), or ensure the "
	"ACL "
	"restricted-token runner can start (Windows) \xE2\x80\x94 otherwise switch the consumer to "
	"danger-full-access.";

static void test_unavailable_carries_name_and_code(void **state)
{
	(void)state;
	dsb_error err = {0};
	assert_int_equal(policy_fail_unavailable(&err, DSB_MODE_WORKSPACE_WRITE, NULL),
			 -DSB_E_SANDBOX_UNAVAILABLE);
	assert_int_equal(err.code, DSB_E_SANDBOX_UNAVAILABLE);
	assert_string_equal(dsb_code_name(err.code), "SANDBOX_UNAVAILABLE");
	assert_string_equal(dsb_code_dsh_error(err.code), "SandboxUnavailableError");
}

static void test_unavailable_names_mode_and_escape_hatches(void **state)
{
	(void)state;
	dsb_error err = {0};
	policy_fail_unavailable(&err, DSB_MODE_WORKSPACE_WRITE, NULL);
	assert_string_equal(err.message, unavailable_ww);
	assert_non_null(strstr(err.message, "\"workspace-write\""));
	assert_non_null(strstr(err.message, "danger-full-access"));
	assert_null(strstr(err.message, "Runner failure"));
	assert_string_equal(err.subject, "workspace-write");
}

static void test_unavailable_carries_runner_detail(void **state)
{
	(void)state;
	dsb_error err = {0};
	policy_fail_unavailable(&err, DSB_MODE_WORKSPACE_WRITE,
				"landlock-run: landlock is not enforced by this kernel");
	char *expected = NULL;
	assert_true(asprintf(&expected,
			     "%s Runner failure: landlock-run: landlock is not enforced by this "
			     "kernel",
			     unavailable_ww) > 0);
	assert_string_equal(err.message, expected);
	free(expected);

	policy_fail_unavailable(&err, DSB_MODE_READ_ONLY, "Error: spawn bwrap ENOENT");
	assert_non_null(strstr(err.message, "sandbox mode \"read-only\" is requested"));
	assert_non_null(strstr(err.message, "danger-full-access. Runner failure: Error: spawn "
					    "bwrap ENOENT"));
}

/* --- the policy service (spec §2, §11.11) --------------------------------------------------- */

static void test_defaults_to_read_only_under_the_cwd(void **state)
{
	(void)state;
	dsb_policy *p = policy_for(DSB_MODE_READ_ONLY, NULL);
	char *cwd = getcwd(NULL, 0);
	char *real = realpath(cwd, NULL);

	dsb_config *cfg = dsb_config_new();
	assert_int_equal(dsb_config_mode(cfg), DSB_MODE_READ_ONLY);
	assert_null(dsb_config_workspace_root(cfg));
	dsb_config_free(cfg);

	assert_int_equal(dsb_policy_default_mode(p), DSB_MODE_READ_ONLY);
	assert_string_equal(dsb_policy_workspace_root(p), real);
	free(cwd);
	free(real);
	dsb_policy_free(p);
}

static void test_configured_root_resolves_lexically_when_missing(void **state)
{
	(void)state;
	dsb_policy *p = policy_for(DSB_MODE_WORKSPACE_WRITE, "/ws/../ws/./sub");
	assert_int_equal(dsb_policy_default_mode(p), DSB_MODE_WORKSPACE_WRITE);
	assert_string_equal(dsb_policy_workspace_root(p), "/ws/sub");
	dsb_policy_free(p);
}

static void test_agentless_resolve_has_no_session_id(void **state)
{
	(void)state;
	dsb_policy *p = policy_for(DSB_MODE_WORKSPACE_WRITE, "/fallback");
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	dsb_exec_policy out = {0};

	assert_int_equal(dsb_policy_resolve(p, &req, &out, NULL), 0);
	assert_int_equal(out.mode, DSB_MODE_WORKSPACE_WRITE);
	assert_string_equal(out.workspace_root, "/fallback");
	assert_null(out.session_id);
	dsb_exec_policy_done(&out);
	assert_null(out.workspace_root);
	dsb_policy_free(p);
}

static void test_session_mode_and_cwd_resolve_together(void **state)
{
	(void)state;
	dsb_policy *p = policy_for(DSB_MODE_WORKSPACE_WRITE, "/fallback");
	dsb_exec_policy out = {0};

	dsb_resolve_request second = DSB_RESOLVE_REQUEST_INIT;
	second.session_id = "sess-second";
	second.session_cwd = "/projects/second";
	second.session_mode = DSB_MODE_READ_ONLY;
	assert_int_equal(dsb_policy_resolve(p, &second, &out, NULL), 0);
	assert_int_equal(out.mode, DSB_MODE_READ_ONLY);
	assert_string_equal(out.workspace_root, "/projects/second");
	assert_string_equal(out.session_id, "sess-second");
	dsb_exec_policy_done(&out);

	/* A session with no override falls back to the default; the service is unchanged. */
	dsb_resolve_request first = DSB_RESOLVE_REQUEST_INIT;
	first.session_id = "sess-first";
	first.session_cwd = "/projects/first";
	assert_int_equal(dsb_policy_resolve(p, &first, &out, NULL), 0);
	assert_int_equal(out.mode, DSB_MODE_WORKSPACE_WRITE);
	assert_string_equal(out.workspace_root, "/projects/first");
	assert_string_equal(out.session_id, "sess-first");
	dsb_exec_policy_done(&out);

	assert_string_equal(dsb_policy_workspace_root(p), "/fallback");
	assert_int_equal(dsb_policy_default_mode(p), DSB_MODE_WORKSPACE_WRITE);
	dsb_policy_free(p);
}

static void test_session_cwd_follows_symlink_then_dotdot(void **state)
{
	fixture *f = *state;
	dsb_policy *p = policy_for(DSB_MODE_READ_ONLY, "/fallback");
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	char *cwd = join(f->dir, "lexical/link/..");
	char *expected = join(f->real, "physical");
	dsb_exec_policy out = {0};

	req.session_id = "s";
	req.session_cwd = cwd;
	assert_int_equal(dsb_policy_resolve(p, &req, &out, NULL), 0);
	assert_string_equal(out.workspace_root, expected);
	dsb_exec_policy_done(&out);
	free(cwd);
	free(expected);
	dsb_policy_free(p);
}

static void test_approved_mode_outranks_session_mode_keeping_root(void **state)
{
	(void)state;
	dsb_policy *p = policy_for(DSB_MODE_WORKSPACE_WRITE, "/fallback");
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	dsb_exec_policy out = {0};

	req.mode = DSB_MODE_DANGER_FULL_ACCESS;
	req.session_id = "sess-second";
	req.session_cwd = "/projects/second";
	req.session_mode = DSB_MODE_READ_ONLY;
	assert_int_equal(dsb_policy_resolve(p, &req, &out, NULL), 0);
	assert_int_equal(out.mode, DSB_MODE_DANGER_FULL_ACCESS);
	assert_string_equal(out.workspace_root, "/projects/second");
	assert_string_equal(out.session_id, "sess-second");
	dsb_exec_policy_done(&out);

	/* An explicit mode on an agentless call outranks the default. */
	dsb_resolve_request agentless = DSB_RESOLVE_REQUEST_INIT;
	agentless.mode = DSB_MODE_READ_ONLY;
	assert_int_equal(dsb_policy_resolve(p, &agentless, &out, NULL), 0);
	assert_int_equal(out.mode, DSB_MODE_READ_ONLY);
	assert_string_equal(out.workspace_root, "/fallback");
	dsb_exec_policy_done(&out);
	dsb_policy_free(p);
}

static void test_session_without_cwd_uses_configured_root(void **state)
{
	(void)state;
	dsb_policy *p = policy_for(DSB_MODE_READ_ONLY, "/fallback");
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	dsb_exec_policy out = {0};

	req.session_id = "headless";
	assert_int_equal(dsb_policy_resolve(p, &req, &out, NULL), 0);
	assert_string_equal(out.workspace_root, "/fallback");
	assert_string_equal(out.session_id, "headless");
	dsb_exec_policy_done(&out);
	dsb_policy_free(p);
}

static void test_session_fields_ignored_without_a_session(void **state)
{
	(void)state;
	dsb_policy *p = policy_for(DSB_MODE_READ_ONLY, "/fallback");
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	dsb_exec_policy out = {0};

	/* No session id means an agentless call: a stray fold or cwd must not leak in. */
	req.session_mode = DSB_MODE_DANGER_FULL_ACCESS;
	req.session_cwd = "/elsewhere";
	assert_int_equal(dsb_policy_resolve(p, &req, &out, NULL), 0);
	assert_int_equal(out.mode, DSB_MODE_READ_ONLY);
	assert_string_equal(out.workspace_root, "/fallback");
	dsb_exec_policy_done(&out);
	dsb_policy_free(p);
}

static void test_resolve_rejects_bad_arguments(void **state)
{
	(void)state;
	dsb_policy *p = policy_for(DSB_MODE_READ_ONLY, "/fallback");
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	dsb_exec_policy out = {0};
	dsb_error err = {0};

	req.mode = (dsb_mode)7;
	assert_int_equal(dsb_policy_resolve(p, &req, &out, &err), -DSB_E_INVALID_ARGS);
	assert_null(out.workspace_root);
	assert_int_equal(dsb_policy_resolve(NULL, &req, &out, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_policy_new(NULL, NULL, &err), -DSB_E_INVALID_ARGS);
	assert_null(dsb_policy_free(NULL));
	dsb_exec_policy_done(NULL);
	dsb_policy_free(p);
}

static void test_workspace_root_setter_validates(void **state)
{
	(void)state;
	dsb_config *cfg = dsb_config_new();
	dsb_error err = {0};

	assert_int_equal(dsb_config_set_workspace_root(cfg, "", &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message, "workspace root: empty path");
	char *huge = malloc(DSB_PATH_MAX + 1);
	memset(huge, 'a', DSB_PATH_MAX);
	huge[DSB_PATH_MAX] = '\0';
	assert_int_equal(dsb_config_set_workspace_root(cfg, huge, &err), -DSB_E_INVALID_ARGS);
	free(huge);
	assert_null(dsb_config_workspace_root(cfg));

	assert_int_equal(dsb_config_set_workspace_root(cfg, "rel/dir", &err), 0);
	assert_string_equal(dsb_config_workspace_root(cfg), "rel/dir");
	dsb_config_free(cfg);
}

/* --- DSH_PERMISSION_MODE -------------------------------------------------------------------- */

static void test_env_mode_overrides_the_configured_mode(void **state)
{
	(void)state;
	dsb_config *cfg = dsb_config_new();
	dsb_error err = {0};

	assert_int_equal(dsb_config_apply_env(cfg, NULL, &err), 0);
	assert_int_equal(dsb_config_mode(cfg), DSB_MODE_READ_ONLY);
	assert_int_equal(dsb_config_apply_env(cfg, "workspace-write", &err), 0);
	assert_int_equal(dsb_config_approval_policy(cfg), DSB_APPROVAL_ASK);
	assert_int_equal(dsb_config_apply_env(cfg, "danger-full-access", &err), 0);
	assert_int_equal(dsb_config_mode(cfg), DSB_MODE_DANGER_FULL_ACCESS);
	assert_int_equal(dsb_config_approval_policy(cfg), DSB_APPROVAL_NEVER);

	static const char *const refused[] = {"yolo", "", "READ-ONLY"};
	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		assert_int_equal(dsb_config_apply_env(cfg, refused[i], &err),
				 -DSB_E_CONFIG_INVALID);
		assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
		assert_int_equal(dsb_config_mode(cfg), DSB_MODE_DANGER_FULL_ACCESS);
	}
	assert_string_equal(err.message,
			    "DSH_PERMISSION_MODE: invalid mode \"READ-ONLY\" "
			    "(accepted: read-only, workspace-write, danger-full-access)");
	dsb_config_free(cfg);
}

/* --- writable roots (spec §4.1, §11.2 #3, #4) ----------------------------------------------- */

static char **roots_of(dsb_mode mode, const char *root, const char *tmpdir, int *ret_n)
{
	dsb_exec_policy p = {.mode = mode, .workspace_root = (char *)root};
	char **roots = NULL;
	*ret_n = policy_writable_roots_with_tmpdir(&p, tmpdir, &roots, NULL);
	assert_true(*ret_n >= 0);
	assert_int_equal(strv_length(roots), (size_t)*ret_n);
	return roots;
}

static void test_read_only_and_full_access_grant_nothing(void **state)
{
	fixture *f = *state;
	int n;
	char **roots = roots_of(DSB_MODE_READ_ONLY, f->dir, "/tmp", &n);
	assert_int_equal(n, 0);
	assert_null(roots[0]);
	strv_free(roots);

	roots = roots_of(DSB_MODE_DANGER_FULL_ACCESS, f->dir, "/tmp", &n);
	assert_int_equal(n, 0);
	strv_free(roots);
}

static void test_workspace_write_grants_root_and_temp_canonical_deduplicated(void **state)
{
	fixture *f = *state;
	char *ws = join(f->dir, "ws");
	char *ws_real = join(f->real, "ws");
	char *tmp_real = realpath("/tmp", NULL);
	char *tmp_link = join(f->dir, "tmp-link");
	char *other = join(f->dir, "other-tmp");
	char *other_real = join(f->real, "other-tmp");
	int n;

	/* TMPDIR canonicalising onto /tmp is one root, not two. */
	char **roots = roots_of(DSB_MODE_WORKSPACE_WRITE, ws, tmp_link, &n);
	assert_int_equal(n, 2);
	assert_string_equal(roots[0], ws_real);
	assert_string_equal(roots[1], tmp_real);
	strv_free(roots);

	/* A TMPDIR of its own is a third root, canonical. */
	roots = roots_of(DSB_MODE_WORKSPACE_WRITE, ws, other, &n);
	assert_int_equal(n, 3);
	assert_string_equal(roots[0], ws_real);
	assert_string_equal(roots[1], tmp_real);
	assert_string_equal(roots[2], other_real);
	strv_free(roots);

	/* A workspace that is /tmp itself collapses everything into one root. */
	roots = roots_of(DSB_MODE_WORKSPACE_WRITE, "/tmp", "/tmp", &n);
	assert_int_equal(n, 1);
	assert_string_equal(roots[0], tmp_real);
	strv_free(roots);

	/* A missing TMPDIR is granted as spelled (matches nothing until it exists). */
	roots = roots_of(DSB_MODE_WORKSPACE_WRITE, ws, "/no/such/tmp-xyz", &n);
	assert_int_equal(n, 3);
	assert_string_equal(roots[2], "/no/such/tmp-xyz");
	strv_free(roots);

	free(ws);
	free(ws_real);
	free(tmp_real);
	free(tmp_link);
	free(other);
	free(other_real);
}

static void test_writable_roots_reads_tmpdir_from_the_environment(void **state)
{
	fixture *f = *state;
	char *saved = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	char *other = join(f->dir, "other-tmp/");
	char *other_real = join(f->real, "other-tmp");
	dsb_exec_policy p = {.mode = DSB_MODE_WORKSPACE_WRITE, .workspace_root = f->real};
	char **roots = NULL;

	assert_int_equal(setenv("TMPDIR", other, 1), 0);
	assert_int_equal(dsb_policy_writable_roots(&p, &roots, NULL), 3);
	assert_string_equal(roots[2], other_real);
	dsb_strv_free(roots);

	if (saved)
		assert_int_equal(setenv("TMPDIR", saved, 1), 0);
	else
		assert_int_equal(unsetenv("TMPDIR"), 0);
	free(saved);
	free(other);
	free(other_real);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sandbox_modes_lists_every_mode_in_order),
		cmocka_unit_test(test_mode_vocabulary_is_closed_and_exact),
		cmocka_unit_test(test_mode_parse_names_the_accepted_modes),
		cmocka_unit_test(test_approval_and_backend_vocabularies),
		cmocka_unit_test(test_unavailable_carries_name_and_code),
		cmocka_unit_test(test_unavailable_names_mode_and_escape_hatches),
		cmocka_unit_test(test_unavailable_carries_runner_detail),
		cmocka_unit_test(test_defaults_to_read_only_under_the_cwd),
		cmocka_unit_test(test_configured_root_resolves_lexically_when_missing),
		cmocka_unit_test(test_agentless_resolve_has_no_session_id),
		cmocka_unit_test(test_session_mode_and_cwd_resolve_together),
		cmocka_unit_test_setup_teardown(test_session_cwd_follows_symlink_then_dotdot,
						setup_tree, teardown_tree),
		cmocka_unit_test(test_approved_mode_outranks_session_mode_keeping_root),
		cmocka_unit_test(test_session_without_cwd_uses_configured_root),
		cmocka_unit_test(test_session_fields_ignored_without_a_session),
		cmocka_unit_test(test_resolve_rejects_bad_arguments),
		cmocka_unit_test(test_workspace_root_setter_validates),
		cmocka_unit_test(test_env_mode_overrides_the_configured_mode),
		cmocka_unit_test_setup_teardown(test_read_only_and_full_access_grant_nothing,
						setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(
			test_workspace_write_grants_root_and_temp_canonical_deduplicated,
			setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(
			test_writable_roots_reads_tmpdir_from_the_environment, setup_tree,
			teardown_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
