/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the policy piece: the mode vocabulary (dsh-compat §1.1, §11.11 #16), the
 * fail-closed error (§1.2, §11.3), resolve() precedence and roots (§2.2, §11.11), the writable
 * roots (§4.1, §11.2) and the DSH_PERMISSION_MODE override.
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

#include <dsb/session.h>

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

/* --- the fail-closed error (dsh-compat §1.2, §11.3)
 * ----------------------------------------------- */

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

/* --- the policy service (dsh-compat §2, §11.11)
 * --------------------------------------------------- */

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

/* --- writable roots (dsh-compat §4.1, §11.2 #3, #4)
 * ----------------------------------------------- */

static char **roots_of(dsb_mode mode, const char *root, char **extras, int *ret_n)
{
	dsb_exec_policy p = {.mode = mode, .workspace_root = (char *)root, .extra_roots = extras};
	char **roots = NULL;
	*ret_n = dsb_policy_writable_roots(&p, &roots, NULL);
	assert_true(*ret_n >= 0);
	assert_int_equal(strv_length(roots), (size_t)*ret_n);
	return roots;
}

static void test_read_only_and_full_access_grant_nothing(void **state)
{
	fixture *f = *state;
	int n;
	char **roots = roots_of(DSB_MODE_READ_ONLY, f->real, NULL, &n);
	assert_int_equal(n, 0);
	assert_null(roots[0]);
	strv_free(roots);

	roots = roots_of(DSB_MODE_DANGER_FULL_ACCESS, f->real, NULL, &n);
	assert_int_equal(n, 0);
	strv_free(roots);
}

/* The workspace, the sandbox's own /tmp and the extra roots; TMPDIR is never one. */
static void test_workspace_write_grants_root_tmp_and_extras(void **state)
{
	fixture *f = *state;
	char *saved = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	char *other = join(f->real, "physical");
	assert_int_equal(setenv("TMPDIR", other, 1), 0);
	int n;
	char **roots = roots_of(DSB_MODE_WORKSPACE_WRITE, f->real, NULL, &n);
	assert_int_equal(n, 2);
	assert_string_equal(roots[0], f->real);
	assert_string_equal(roots[1], "/tmp");
	strv_free(roots);

	/* A workspace that is /tmp itself is one root. */
	roots = roots_of(DSB_MODE_WORKSPACE_WRITE, "/tmp", NULL, &n);
	assert_int_equal(n, 1);
	assert_string_equal(roots[0], "/tmp");
	strv_free(roots);

	char *extras[] = {other, (char *)"/opt", other, NULL};
	roots = roots_of(DSB_MODE_WORKSPACE_WRITE, f->real, extras, &n);
	assert_int_equal(n, 4);
	assert_string_equal(roots[2], other);
	assert_string_equal(roots[3], "/opt");
	strv_free(roots);

	if (saved)
		assert_int_equal(setenv("TMPDIR", saved, 1), 0);
	else
		assert_int_equal(unsetenv("TMPDIR"), 0);
	free(saved);
	free(other);
}

/* Resolves sandbox-policy @yaml in workspace-write at @root: 0, or the error in @err. */
static int resolve_extras(fixture *f, const char *yaml, const char *root, dsb_exec_policy *out,
			  dsb_error *err)
{
	(void)f;
	dsb_config *cfg = NULL;
	if (dsb_config_parse(yaml, strlen(yaml), "test.yaml", &cfg, err) < 0)
		return -err->code;
	cfg->mode = DSB_MODE_WORKSPACE_WRITE;
	assert_int_equal(dsb_config_set_workspace_root(cfg, root, NULL), 0);
	dsb_policy *p = NULL;
	assert_int_equal(dsb_policy_new(cfg, &p, err), 0);
	char *store = join(f->real, "physical/child");
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_STORE, store, err), 0);
	free(store);
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	int r = dsb_policy_resolve(p, &req, out, err);
	dsb_policy_free(p);
	dsb_config_free(cfg);
	return r;
}

static void test_extra_roots_resolve(void **state)
{
	fixture *f = *state;
	char *ws = join(f->real, "ws"), *yaml = NULL;
	dsb_exec_policy e = {0};
	dsb_error err = {0};

	/* Canonical, deduplicated, "~/" expanded, one inside the workspace dropped. */
	char *saved_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	assert_int_equal(setenv("HOME", f->dir, 1), 0);
	assert_true(asprintf(&yaml,
			     "sandbox-policy:\n  writableRoots: [\"~/lexical\", \"%s/lexical/\", "
			     "\"%s/ws/inner\", \"/opt\"]\n",
			     f->dir, f->dir) > 0);
	make_dir(f->dir, "ws/inner");
	assert_int_equal(resolve_extras(f, yaml, ws, &e, &err), 0);
	char *lexical = join(f->real, "lexical");
	assert_int_equal(strv_length(e.extra_roots), 2);
	assert_string_equal(e.extra_roots[0], lexical);
	assert_string_equal(e.extra_roots[1], "/opt");
	dsb_exec_policy_done(&e);
	free(yaml);

	/* Missing, not a directory, "/": errors naming the entry. */
	static const struct {
		const char *root, *message;
		int code;
	} refused[] = {
		{"/no/such/dir-xyz",
		 "writable root \"/no/such/dir-xyz\" (/no/such/dir-xyz): it must be an existing "
		 "directory: No such file or directory",
		 DSB_E_INVALID_ARGS},
		{"/etc/hostname",
		 "writable root \"/etc/hostname\" (/etc/hostname): not a directory",
		 DSB_E_INVALID_ARGS},
		{"/",
		 "writable root \"/\": \"/\" would make every file writable, which is "
		 "danger-full-access, not a sandbox; name the directories instead",
		 DSB_E_INVALID_ARGS},
	};
	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		assert_true(asprintf(&yaml, "sandbox-policy:\n  writableRoots: [\"%s\"]\n",
				     refused[i].root) > 0);
		assert_int_equal(resolve_extras(f, yaml, ws, &e, &err), -refused[i].code);
		assert_string_equal(err.message, refused[i].message);
		free(yaml);
	}

	/* A root holding the store, or inside it: the policy's own, so the call fails closed. */
	assert_true(asprintf(&yaml, "sandbox-policy:\n  writableRoots: [\"%s/physical\"]\n",
			     f->real) > 0);
	assert_int_equal(resolve_extras(f, yaml, ws, &e, &err), 0);
	assert_null(dsb_exec_policy_protected_at(&e, e.extra_roots[0], true));
	char *child = join(f->real, "physical/child");
	const dsb_protected *pe = dsb_exec_policy_protected_at(&e, child, true);
	assert_non_null(pe);
	assert_int_equal(pe->kind, DSB_PROTECT_STORE);
	dsb_exec_policy_done(&e);
	free(yaml);
	assert_true(asprintf(&yaml, "sandbox-policy:\n  writableRoots: [\"%s\"]\n", child) > 0);
	assert_int_equal(resolve_extras(f, yaml, ws, &e, &err), -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "lies inside the store"));
	free(yaml);

	/* Spelled through a symlink inside the workspace: the command could repoint it. */
	char *link = join(f->real, "ws/link");
	assert_int_equal(symlink(lexical, link), 0);
	assert_true(asprintf(&yaml, "sandbox-policy:\n  writableRoots: [\"%s\"]\n", link) > 0);
	assert_int_equal(resolve_extras(f, yaml, ws, &e, &err), -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "leads through the symlink"));
	free(yaml);

	/* Nothing is resolved outside workspace-write: a missing root is no read-only error. */
	dsb_config *cfg = NULL;
	const char *missing = "sandbox-policy:\n  writableRoots: [\"/no/such/dir-xyz\"]\n";
	assert_int_equal(dsb_config_parse(missing, strlen(missing), "t.yaml", &cfg, &err), 0);
	assert_int_equal(dsb_config_set_workspace_root(cfg, ws, NULL), 0);
	dsb_policy *p = NULL;
	assert_int_equal(dsb_policy_new(cfg, &p, &err), 0);
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	assert_int_equal(dsb_policy_resolve(p, &req, &e, &err), 0);
	assert_null(e.extra_roots);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	dsb_config_free(cfg);

	if (saved_home)
		assert_int_equal(setenv("HOME", saved_home, 1), 0);
	free(saved_home);
	free(link);
	free(child);
	free(lexical);
	free(ws);
}

/* --writable: absolute or ~/ only, added after the file's. */
static void test_add_writable_roots(void **state)
{
	(void)state;
	dsb_config *cfg = dsb_config_new();
	dsb_error err = {0};
	char *bad[] = {(char *)"relative/dir", NULL};
	assert_int_equal(dsb_config_add_writable_roots(cfg, bad, &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message, "--writable \"relative/dir\": a writable root is an "
					 "absolute path or starts with ~/");
	assert_null(dsb_config_writable_roots(cfg)[0]);
	char *good[] = {(char *)"/opt", (char *)"~/.cargo", NULL};
	assert_int_equal(dsb_config_add_writable_roots(cfg, good, &err), 0);
	assert_string_equal(dsb_config_writable_roots(cfg)[1], "~/.cargo");
	dsb_config_free(cfg);
}

/* --- protected paths (beyond DSH) ------------------------------------------------------------ */

/*
 * A private tree for the protected-path tests: T (as spelled) and R (canonical). T lies under
 * /tmp or $TMPDIR, itself a writable root of every workspace-write call, so the tests look only
 * at entries below R: /tmp holds other people's files.
 */
typedef struct ptree {
	char *dir;
	char *real;
	char *home; /* $HOME as it was, restored by the teardown */
} ptree;

static int setup_ptree(void **state)
{
	ptree *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->dir = dsb_test_mkdtemp();
	t->real = realpath(t->dir, NULL);
	assert_non_null(t->real);
	t->home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	*state = t;
	return 0;
}

static int teardown_ptree(void **state)
{
	ptree *t = *state;
	if (t->home)
		assert_int_equal(setenv("HOME", t->home, 1), 0);
	else
		assert_int_equal(unsetenv("HOME"), 0);
	dsb_test_rm_rf(t->dir);
	free(t->dir);
	free(t->real);
	free(t->home);
	free(t);
	return 0;
}

/* mkdir -p of @rel under @base. */
static void mkdirs(const char *base, const char *rel)
{
	char *p = join(base, rel);
	for (char *s = p + strlen(base) + 1;; s++) {
		s = strchrnul(s, '/');
		char saved = *s;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", p, strerror(errno));
		*s = saved;
		if (!saved)
			break;
	}
	free(p);
}

static void write_at(const char *base, const char *rel, const char *text)
{
	char *p = join(base, rel);
	dsb_test_write_file(p, text, strlen(text));
	free(p);
}

/* A checkout's .git directory as `git init` lays it out (hooks, info, config, objects, refs). */
static void make_gitdir(const char *base, const char *rel)
{
	static const char *const dirs[] = {"hooks", "info", "objects", "refs/heads"};
	char *gitdir = join(base, rel);
	mkdirs(base, rel);
	for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
		mkdirs(gitdir, dirs[i]);
	write_at(gitdir, "HEAD", "ref: refs/heads/main\n");
	write_at(gitdir, "config", "[core]\n\trepositoryformatversion = 0\n\tbare = false\n");
	write_at(gitdir, "hooks/pre-commit.sample", "#!/bin/sh\n");
	write_at(gitdir, "info/exclude",
		 "# git ls-files --others --exclude-from=.git/info/exclude\n");
	free(gitdir);
}

/* A policy from the sandbox-policy @yaml (NULL: the defaults) with @mode and @root. */
static dsb_policy *policy_from(const char *yaml, dsb_mode mode, const char *root)
{
	dsb_config *cfg = NULL;
	dsb_error err = {0};
	if (dsb_config_parse(yaml ? yaml : "", yaml ? strlen(yaml) : 0, "test.yaml", &cfg, &err) <
	    0)
		fail_msg("%s", err.message);
	cfg->mode = mode;
	assert_int_equal(dsb_config_set_workspace_root(cfg, root, NULL), 0);
	dsb_policy *p = NULL;
	if (dsb_policy_new(cfg, &p, &err) < 0)
		fail_msg("%s", err.message);
	dsb_config_free(cfg);
	return p;
}

static void resolve_into(const dsb_policy *p, dsb_exec_policy *out)
{
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	dsb_error err = {0};
	if (dsb_policy_resolve(p, &req, out, &err) < 0)
		fail_msg("%s", err.message);
}

/* The entry for @base/@rel (@rel NULL: @base), or NULL. */
static const dsb_protected *entry(const dsb_exec_policy *e, const char *base, const char *rel)
{
	char *p = rel ? join(base, rel) : strdup(base);
	const dsb_protected *found = NULL;
	for (size_t i = 0; i < e->n_protected && !found; i++)
		if (strcmp(e->protected[i].path, p) == 0)
			found = &e->protected[i];
	free(p);
	return found;
}

static size_t index_of(const dsb_exec_policy *e, const char *base, const char *rel)
{
	const dsb_protected *x = entry(e, base, rel);
	assert_non_null(x);
	return (size_t)(x - e->protected);
}

/* How many entries lie at or below @dir (not counting the ones that must stay absent). */
static size_t count_under(const dsb_exec_policy *e, const char *dir)
{
	size_t n = 0;
	for (size_t i = 0; i < e->n_protected; i++)
		n += !e->protected[i].absent && path_is_under(e->protected[i].path, dir);
	return n;
}

static void dump(const dsb_exec_policy *e)
{
	for (size_t i = 0; i < e->n_protected; i++)
		print_message("  %s (%s%s%s)\n", e->protected[i].path,
			      dsb_protect_kind_to_string(e->protected[i].kind),
			      e->protected[i].directory ? ", directory" : "",
			      e->protected[i].exists ? "" : ", missing");
}

#define expect_entry(e, base, rel, k, dir, ex) expect_entry_at(e, base, rel, k, dir, ex, __LINE__)

static void expect_entry_at(const dsb_exec_policy *e, const char *base, const char *rel,
			    dsb_protect_kind kind, bool directory, bool exists, int line)
{
	const dsb_protected *x = entry(e, base, rel);
	if (!x) {
		dump(e);
		fail_msg("line %d: %s/%s is not listed", line, base, rel ? rel : "");
	}
	if (x->kind != kind || x->directory != directory || x->exists != exists) {
		dump(e);
		fail_msg("line %d: %s: kind %s directory %d exists %d, expected %s %d %d", line,
			 x->path, dsb_protect_kind_to_string(x->kind), x->directory, x->exists,
			 dsb_protect_kind_to_string(kind), directory, exists);
	}
}

#define expect_absent(e, base, rel) expect_absent_at(e, base, rel, __LINE__)

static void expect_absent_at(const dsb_exec_policy *e, const char *base, const char *rel, int line)
{
	const dsb_protected *x = entry(e, base, rel);
	if (x && !x->absent) {
		dump(e);
		fail_msg("line %d: %s/%s is listed", line, base, rel ? rel : "");
	}
}

/* Listed as a name that must stay absent (removed after the call if made). */
#define expect_gone(e, base, rel) expect_gone_at(e, base, rel, __LINE__)

static void expect_gone_at(const dsb_exec_policy *e, const char *base, const char *rel, int line)
{
	const dsb_protected *x = entry(e, base, rel);
	if (!x || !x->absent || x->exists || x->kind != DSB_PROTECT_GIT) {
		dump(e);
		fail_msg("line %d: %s/%s is not listed as one to stay absent", line, base,
			 rel ? rel : "");
	}
}

static void test_protect_kind_vocabulary(void **state)
{
	(void)state;
	static const char *const names[] = {"store",   "config",     "answerer", "runner",
					    "spill",   "git",	     "listed",	 "deny-read",
					    "startup", "private-tmp"};
	assert_int_equal(_DSB_PROTECT_MAX, ELEMENTSOF(names));
	for (int k = 0; k < _DSB_PROTECT_MAX; k++) {
		assert_string_equal(dsb_protect_kind_to_string((dsb_protect_kind)k), names[k]);
		const char *reason = dsb_protect_kind_reason((dsb_protect_kind)k);
		assert_non_null(reason);
		assert_true(strlen(reason) > 10);
		assert_int_not_equal(reason[strlen(reason) - 1], '.');
		/* The policy-bearing kinds, store .. spill, fail closed; the others do not. */
		assert_int_equal(dsb_protect_kind_required((dsb_protect_kind)k),
				 k <= DSB_PROTECT_SPILL);
	}
	assert_string_equal(dsb_protect_kind_reason(DSB_PROTECT_GIT),
			    "git runs hooks and reads its config outside the sandbox");
	assert_null(dsb_protect_kind_to_string(_DSB_PROTECT_MAX));
	assert_null(dsb_protect_kind_to_string(_DSB_PROTECT_INVALID));
	assert_null(dsb_protect_kind_reason(_DSB_PROTECT_MAX));
	assert_false(dsb_protect_kind_required(_DSB_PROTECT_INVALID));
	assert_false(dsb_protect_kind_required(_DSB_PROTECT_MAX));
}

/* A checkout's hooks, info and config are protected, its objects, refs and HEAD are not. */
/* With extensions.worktreeConfig, config.worktree is read: made empty and kept read-only. */
static void test_git_worktree_config(void **state)
{
	ptree *t = *state;
	make_gitdir(t->real, "ws/.git");
	char *ws = join(t->real, "ws");
	char *git = join(ws, ".git");
	write_at(git, "config",
		 "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n");
	dsb_exec_policy e = {0};
	dsb_policy *p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, ws);
	resolve_into(p, &e);
	expect_entry(&e, git, "config.worktree", DSB_PROTECT_GIT, false, false);
	assert_false(entry(&e, git, "config.worktree")->absent);
	expect_gone(&e, git, "commondir");
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	free(git);
	free(ws);
}

static void test_git_set_per_mode(void **state)
{
	ptree *t = *state;
	make_gitdir(t->real, "ws/.git");
	char *ws = join(t->real, "ws");
	char *git = join(ws, ".git");
	dsb_exec_policy e = {0};

	dsb_policy *p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, ws);
	resolve_into(p, &e);
	expect_entry(&e, git, "hooks", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, git, "info", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, git, "config", DSB_PROTECT_GIT, false, true);
	expect_absent(&e, git, NULL);
	expect_absent(&e, git, "objects");
	expect_absent(&e, git, "refs");
	expect_absent(&e, git, "HEAD");
	/* A main gitdir's commondir, and config.worktree without extensions.worktreeConfig:
	 * no empty stand-in would do, so they must stay absent. */
	expect_gone(&e, git, "config.worktree");
	expect_gone(&e, git, "commondir");
	assert_int_equal(count_under(&e, t->real), 3);
	/* In resolve() order: hooks, info, then config. */
	assert_true(index_of(&e, git, "hooks") < index_of(&e, git, "info"));
	assert_true(index_of(&e, git, "info") < index_of(&e, git, "config"));
	dsb_exec_policy_done(&e);
	assert_null(e.protected);
	assert_int_equal(e.n_protected, 0);

	/* config.worktree too, once there is one. */
	write_at(git, "config.worktree", "[core]\n");
	resolve_into(p, &e);
	expect_entry(&e, git, "config.worktree", DSB_PROTECT_GIT, false, true);
	assert_int_equal(count_under(&e, t->real), 4);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	/* Read-only has no writable root to protect anything in; full access is unconfined. */
	static const dsb_mode others[] = {DSB_MODE_READ_ONLY, DSB_MODE_DANGER_FULL_ACCESS};
	for (size_t i = 0; i < ELEMENTSOF(others); i++) {
		p = policy_from(NULL, others[i], ws);
		resolve_into(p, &e);
		assert_int_equal(e.n_protected, 0);
		assert_null(e.protected);
		dsb_exec_policy_done(&e);
		dsb_policy_free(p);
	}

	/* protectGit: false lists none of it. */
	p = policy_from("sandbox-policy: {protectGit: false}", DSB_MODE_WORKSPACE_WRITE, ws);
	resolve_into(p, &e);
	assert_int_equal(count_under(&e, t->real), 0);
	for (size_t i = 0; i < e.n_protected; i++)
		assert_int_not_equal(e.protected[i].kind, DSB_PROTECT_GIT);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	/* A missing hooks (or info) directory is listed, to be made before the call. */
	char *hooks = join(git, "hooks");
	dsb_test_rm_rf(hooks);
	p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, ws);
	resolve_into(p, &e);
	expect_entry(&e, git, "hooks", DSB_PROTECT_GIT, true, false);
	expect_entry(&e, git, "info", DSB_PROTECT_GIT, true, true);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	/* A workspace reached through a symlink lists canonical paths. */
	make_link(ws, t->real, "ws-link");
	char *link = join(t->dir, "ws-link");
	p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, link);
	resolve_into(p, &e);
	expect_entry(&e, git, "info", DSB_PROTECT_GIT, true, true);
	assert_null(entry(&e, link, ".git/info"));
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	free(link);
	free(hooks);
	free(git);
	free(ws);
}

/*
 * A linked worktree: its .git file names a gitdir in the main checkout's .git/worktrees, whose
 * commondir names the common gitdir. All three are protected (T is in a writable root).
 */
static void test_git_linked_worktree(void **state)
{
	ptree *t = *state;
	make_gitdir(t->real, "main/.git");
	char *common = join(t->real, "main/.git");
	char *x = join(common, "worktrees/wt");
	char *wt = join(t->real, "wt");
	char *text = NULL;

	mkdirs(t->real, "main/.git/worktrees/wt");
	mkdirs(t->real, "wt");
	write_at(x, "HEAD", "ref: refs/heads/wt\n");
	write_at(x, "commondir", "../..\n");
	write_at(x, "config.worktree", "[core]\n");
	assert_true(asprintf(&text, "%s/.git\n", wt) > 0);
	write_at(x, "gitdir", text);
	free(text);
	assert_true(asprintf(&text, "gitdir: %s\n", x) > 0);
	write_at(wt, ".git", text);
	free(text);

	dsb_policy *p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, wt);
	dsb_exec_policy e = {0};
	resolve_into(p, &e);
	/* The .git file itself: not to be pointed elsewhere. */
	expect_entry(&e, wt, ".git", DSB_PROTECT_GIT, false, true);
	/* The worktree's gitdir. */
	expect_entry(&e, x, "hooks", DSB_PROTECT_GIT, true, false);
	expect_entry(&e, x, "info", DSB_PROTECT_GIT, true, false);
	expect_entry(&e, x, "config.worktree", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, x, "commondir", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, x, "gitdir", DSB_PROTECT_GIT, false, true);
	expect_absent(&e, x, "config");
	expect_absent(&e, x, "HEAD");
	/* The common gitdir's own set. */
	expect_entry(&e, common, "hooks", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, common, "info", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, common, "config", DSB_PROTECT_GIT, false, true);
	expect_absent(&e, common, "objects");
	expect_absent(&e, common, "HEAD");
	assert_int_equal(count_under(&e, t->real), 9);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	/*
	 * From the main checkout: what each linked worktree's gitdir holds that git follows,
	 * and the worktree's own .git file it names (not to be repointed).
	 */
	char *main_ws = join(t->real, "main");
	p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, main_ws);
	resolve_into(p, &e);
	expect_entry(&e, common, "hooks", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, x, "commondir", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, x, "config.worktree", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, x, "gitdir", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, wt, ".git", DSB_PROTECT_GIT, false, true);
	expect_absent(&e, x, "HEAD");
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	free(main_ws);

	/* A relative gitdir: line is read against the checkout. */
	write_at(wt, ".git", "gitdir: ../main/.git/worktrees/wt\n");
	p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, wt);
	resolve_into(p, &e);
	expect_entry(&e, x, "commondir", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, common, "config", DSB_PROTECT_GIT, false, true);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	/* A .git file that names no gitdir: the file alone. */
	write_at(wt, ".git", "not a gitdir line\n");
	p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, wt);
	resolve_into(p, &e);
	expect_entry(&e, wt, ".git", DSB_PROTECT_GIT, false, true);
	assert_int_equal(count_under(&e, t->real), 1);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	free(wt);
	free(x);
	free(common);
}

/* Submodules: gitdirs under .git/modules/NAME (NAME may nest), and the checkout's .git file. */
static void test_git_submodules(void **state)
{
	ptree *t = *state;
	char *super = join(t->real, "super");
	char *modules = join(super, ".git/modules");
	char *sub = join(modules, "sub");
	char *inner = join(modules, "libs/inner");

	make_gitdir(t->real, "super/.git");
	make_gitdir(t->real, "super/.git/modules/sub");
	write_at(sub, "config",
		 "[core]\n\trepositoryformatversion = 0\n\tworktree = ../../../sub\n");
	make_gitdir(t->real, "super/.git/modules/libs/inner");
	write_at(inner, "config", "[core]\n  worktree=../../../../libs/inner\n");
	mkdirs(super, "sub");
	write_at(super, "sub/.git", "gitdir: ../.git/modules/sub\n");
	mkdirs(super, "libs/inner");
	write_at(super, "libs/inner/.git", "gitdir: ../../.git/modules/libs/inner\n");

	dsb_policy *p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, super);
	dsb_exec_policy e = {0};
	resolve_into(p, &e);
	expect_entry(&e, super, ".git/hooks", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, super, ".git/config", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, sub, "hooks", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, sub, "info", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, sub, "config", DSB_PROTECT_GIT, false, true);
	expect_absent(&e, sub, "objects");
	expect_entry(&e, super, "sub/.git", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, inner, "hooks", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, inner, "config", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, super, "libs/inner/.git", DSB_PROTECT_GIT, false, true);
	/* Not a gitdir itself: libs/ has no HEAD. */
	expect_absent(&e, modules, "libs/hooks");
	assert_int_equal(count_under(&e, t->real), 11);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	/* From inside the submodule's checkout: its .git file, and the gitdir it names. */
	char *checkout = join(super, "sub");
	p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, checkout);
	resolve_into(p, &e);
	expect_entry(&e, checkout, ".git", DSB_PROTECT_GIT, false, true);
	expect_entry(&e, sub, "hooks", DSB_PROTECT_GIT, true, true);
	expect_entry(&e, sub, "config", DSB_PROTECT_GIT, false, true);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	free(checkout);
	free(inner);
	free(sub);
	free(modules);
	free(super);
}

/* sandbox-policy.protectedPaths: names made when missing, globs matching what exists. */
static void test_listed_paths(void **state)
{
	ptree *t = *state;
	char *ws = join(t->real, "ws");
	mkdirs(t->real, "ws/sub");
	mkdirs(t->real, "ws/dir.json");
	mkdirs(t->real, "outside");
	write_at(ws, "a.json", "{}");
	write_at(ws, "b.json", "{}");
	write_at(ws, "c.txt", "");
	write_at(ws, "sub/d.json", "{}");
	write_at(ws, "present", "");
	write_at(t->real, "outside/o.json", "{}");
	/* Links the glob matches: out of every writable root, dangling, or a root itself. */
	make_link("/etc/passwd", ws, "etc.json");
	make_link("nowhere", ws, "dangling.json");
	make_link("/tmp", ws, "tmp.json");

	dsb_policy *p = policy_from("sandbox-policy:\n"
				    "  protectedPaths: [.envrc, present, build/, '*.json', "
				    "'nomatch*.yaml', 'sub/*.json']\n"
				    "  protectGit: false\n"
				    "  protectDefaults: false\n",
				    DSB_MODE_WORKSPACE_WRITE, ws);
	dsb_exec_policy e = {0};
	resolve_into(p, &e);
	expect_entry(&e, ws, ".envrc", DSB_PROTECT_LISTED, false, false);
	expect_entry(&e, ws, "present", DSB_PROTECT_LISTED, false, true);
	expect_entry(&e, ws, "build", DSB_PROTECT_LISTED, true, false);
	expect_entry(&e, ws, "a.json", DSB_PROTECT_LISTED, false, true);
	expect_entry(&e, ws, "b.json", DSB_PROTECT_LISTED, false, true);
	expect_entry(&e, ws, "dir.json", DSB_PROTECT_LISTED, true, true);
	expect_entry(&e, ws, "sub/d.json", DSB_PROTECT_LISTED, false, true);
	expect_absent(&e, ws, "c.txt");
	expect_absent(&e, ws, "etc.json");
	expect_absent(&e, ws, "dangling.json");
	expect_absent(&e, ws, "nowhere");
	expect_absent(&e, ws, "tmp.json");
	expect_absent(&e, "/etc/passwd", NULL);
	assert_null(entry(&e, "/tmp", NULL));
	expect_absent(&e, t->real, "outside/o.json");
	assert_int_equal(count_under(&e, t->real), 7);
	for (size_t i = 0; i < e.n_protected; i++)
		assert_int_equal(e.protected[i].kind, DSB_PROTECT_LISTED);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	/* Read-only: nothing is writable, so nothing listed needs protecting. */
	p = policy_from("sandbox-policy: {protectedPaths: [.envrc, '*.json']}", DSB_MODE_READ_ONLY,
			ws);
	resolve_into(p, &e);
	assert_int_equal(e.n_protected, 0);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	free(ws);
}

/* A workspace whose own path holds glob characters: only the patterns are globs. */
static void test_listed_globs_below_a_bracketed_root(void **state)
{
	ptree *t = *state;
	char *ws = join(t->real, "ws[1]*?");
	char *decoy = join(t->real, "ws1ab");
	mkdirs(t->real, "ws[1]*?");
	mkdirs(t->real, "ws1ab");
	write_at(ws, "a.json", "{}");
	write_at(decoy, "b.json", "{}");

	dsb_policy *p =
		policy_from("sandbox-policy: {protectedPaths: ['*.json'], protectGit: false}",
			    DSB_MODE_WORKSPACE_WRITE, ws);
	dsb_exec_policy e = {0};
	resolve_into(p, &e);
	expect_entry(&e, ws, "a.json", DSB_PROTECT_LISTED, false, true);
	expect_absent(&e, decoy, "b.json");
	assert_int_equal(count_under(&e, t->real), 1);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	free(decoy);
	free(ws);
}

/* sandbox-policy.denyRead: wherever it points, in every confined mode, when it exists. */
static void test_deny_read(void **state)
{
	ptree *t = *state;
	char *ws = join(t->real, "ws");
	char *home = join(t->real, "home");
	mkdirs(t->real, "ws");
	mkdirs(t->real, "home/secret");
	write_at(home, ".netrc", "machine x\n");
	assert_int_equal(setenv("HOME", home, 1), 0);

	static const char yaml[] = "sandbox-policy:\n"
				   "  denyRead: ['~/secret', '~/.netrc', '~/missing', /etc/passwd, "
				   "'/', /no/such/dsb-file]\n";
	static const dsb_mode modes[] = {DSB_MODE_WORKSPACE_WRITE, DSB_MODE_READ_ONLY};
	for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
		dsb_policy *p = policy_from(yaml, modes[i], ws);
		dsb_exec_policy e = {0};
		resolve_into(p, &e);
		expect_entry(&e, home, "secret", DSB_PROTECT_DENY_READ, true, true);
		expect_entry(&e, home, ".netrc", DSB_PROTECT_DENY_READ, false, true);
		expect_absent(&e, home, "missing");
		/* Outside every writable root, still listed: it is hidden, not just read-only. */
		expect_entry(&e, "/etc/passwd", NULL, DSB_PROTECT_DENY_READ, false, true);
		expect_absent(&e, "/", NULL);
		expect_absent(&e, "/no/such/dsb-file", NULL);
		if (modes[i] == DSB_MODE_READ_ONLY)
			assert_int_equal(e.n_protected, 3);
		dsb_exec_policy_done(&e);
		dsb_policy_free(p);
	}

	/* "~" alone is the home; without a usable HOME, ~ entries are left out. */
	dsb_policy *p = policy_from("sandbox-policy: {denyRead: ['~', '~/secret']}",
				    DSB_MODE_READ_ONLY, ws);
	dsb_exec_policy e = {0};
	resolve_into(p, &e);
	expect_entry(&e, home, NULL, DSB_PROTECT_DENY_READ, true, true);
	expect_entry(&e, home, "secret", DSB_PROTECT_DENY_READ, true, true);
	dsb_exec_policy_done(&e);
	assert_int_equal(setenv("HOME", "relative/home", 1), 0);
	resolve_into(p, &e);
	assert_int_equal(e.n_protected, 0);
	dsb_exec_policy_done(&e);
	assert_int_equal(unsetenv("HOME"), 0);
	resolve_into(p, &e);
	assert_int_equal(e.n_protected, 0);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);

	/* Full access hides nothing. */
	assert_int_equal(setenv("HOME", home, 1), 0);
	p = policy_from(yaml, DSB_MODE_DANGER_FULL_ACCESS, ws);
	resolve_into(p, &e);
	assert_int_equal(e.n_protected, 0);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	free(home);
	free(ws);
}

/*
 * A policy-bearing path spelled through a symlink inside a writable root fails closed: the
 * command could repoint the link. A link outside every root, or read-only mode, is fine.
 */
static void test_policy_protect_through_a_link(void **state)
{
	ptree *t = *state;
	char *ws = join(t->real, "ws");
	mkdirs(t->real, "ws");
	mkdirs(t->real, "elsewhere/store");
	char *target = join(t->real, "elsewhere/store");
	char *link = join(ws, "store");
	assert_int_equal(symlink(target, link), 0);
	dsb_error err = {0};

	dsb_policy *p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, ws);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_STORE, link, &err), 0);
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	dsb_exec_policy e = {0};
	assert_int_equal(dsb_policy_resolve(p, &req, &e, &err), -DSB_E_SANDBOX_UNAVAILABLE);
	assert_int_equal(err.code, DSB_E_SANDBOX_UNAVAILABLE);
	char *expected = NULL;
	assert_true(asprintf(&expected,
			     "Runner failure: the store %s leads through the symlink %s in a "
			     "writable root, which a command could repoint; give its real path",
			     link, link) > 0);
	if (!strstr(err.message, expected))
		fail_msg("%s\ndoes not contain\n%s", err.message, expected);
	free(expected);
	assert_null(e.protected);
	dsb_policy_free(p);

	/* Its real path is fine; so is the link in read-only mode (nothing is writable). */
	p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, ws);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_STORE, target, &err), 0);
	resolve_into(p, &e);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	p = policy_from(NULL, DSB_MODE_READ_ONLY, ws);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_STORE, link, &err), 0);
	resolve_into(p, &e);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	free(link);
	free(target);
	free(ws);
}

/* dsb_policy_protect(): a path inside a writable root, made when missing; nothing outside. */
static void test_policy_protect(void **state)
{
	ptree *t = *state;
	char *ws = join(t->real, "ws");
	mkdirs(t->real, "ws/runner");
	write_at(ws, "runner/run", "#!/bin/sh\n");
	char *store = join(ws, "store");
	char *runner = join(ws, "runner/run");
	dsb_error err = {0};

	dsb_policy *p =
		policy_from("sandbox-policy: {protectGit: false}", DSB_MODE_WORKSPACE_WRITE, ws);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_STORE, store, &err), 0);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_RUNNER, runner, &err), 0);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_STORE, "/no/such/dsb-store/root", &err),
			 0);
	/* A whole writable root is not "inside" one. */
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_LISTED, ws, &err), 0);

	dsb_exec_policy e = {0};
	resolve_into(p, &e);
	expect_entry(&e, store, NULL, DSB_PROTECT_STORE, true, false);
	expect_entry(&e, runner, NULL, DSB_PROTECT_RUNNER, false, true);
	expect_absent(&e, "/no/such/dsb-store/root", NULL);
	expect_absent(&e, ws, NULL);
	assert_int_equal(count_under(&e, t->real), 2);
	/* Sources come first, in the order added. */
	assert_string_equal(e.protected[0].path, store);
	assert_string_equal(e.protected[1].path, runner);
	dsb_exec_policy_done(&e);

	/* Once it exists it is listed as it is. */
	mkdirs(ws, "store");
	resolve_into(p, &e);
	expect_entry(&e, store, NULL, DSB_PROTECT_STORE, true, true);
	dsb_exec_policy_done(&e);

	/* Read-only: the store lies in no writable root. */
	dsb_policy *ro = policy_from(NULL, DSB_MODE_READ_ONLY, ws);
	assert_int_equal(dsb_policy_protect(ro, DSB_PROTECT_STORE, store, &err), 0);
	resolve_into(ro, &e);
	assert_int_equal(e.n_protected, 0);
	dsb_exec_policy_done(&e);
	dsb_policy_free(ro);

	/* Relative paths and kinds a caller cannot add are refused. */
	err = (dsb_error){0};
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_STORE, "rel/store", &err),
			 -DSB_E_INVALID_ARGS);
	assert_int_equal(err.code, DSB_E_INVALID_ARGS);
	assert_string_equal(err.message, "protected path 'rel/store': not an absolute path");
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_STORE, "", &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_GIT, store, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_DENY_READ, store, &err),
			 -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_policy_protect(p, _DSB_PROTECT_MAX, store, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_STORE, NULL, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_policy_protect(NULL, DSB_PROTECT_STORE, store, &err),
			 -DSB_E_INVALID_ARGS);
	/* Nothing refused was added. */
	resolve_into(p, &e);
	assert_int_equal(count_under(&e, t->real), 2);
	dsb_exec_policy_done(&e);

	dsb_policy_free(p);
	free(runner);
	free(store);
	free(ws);
}

/* A configuration loaded from a file protects itself and, unless it holds a root, its directory. */
static void test_config_file_protects_itself(void **state)
{
	ptree *t = *state;
	char *ws = join(t->real, "ws");
	mkdirs(t->real, "ws/.dsh");
	static const char yaml[] = "sandbox-policy: {mode: workspace-write, protectGit: false}\n";
	static const struct {
		const char *rel; /* the file, under R */
		const char *dir; /* its directory when listed, under R; NULL: not listed */
	} cases[] = {
		{"ws/.dsh/config.yaml", "ws/.dsh"},
		{"ws/config.yaml", NULL}, /* the directory is the workspace */
		{"config.yaml", NULL},	  /* R holds the workspace */
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *file = join(t->real, cases[i].rel);
		dsb_test_write_file(file, yaml, sizeof(yaml) - 1);
		dsb_config *cfg = NULL;
		assert_int_equal(dsb_config_load_file(file, &cfg, NULL), 0);
		assert_string_equal(dsb_config_file(cfg), file);
		assert_int_equal(dsb_config_set_workspace_root(cfg, ws, NULL), 0);
		dsb_policy *p = NULL;
		assert_int_equal(dsb_policy_new(cfg, &p, NULL), 0);
		dsb_config_free(cfg);

		dsb_exec_policy e = {0};
		resolve_into(p, &e);
		expect_entry(&e, file, NULL, DSB_PROTECT_CONFIG, false, true);
		if (cases[i].dir)
			expect_entry(&e, t->real, cases[i].dir, DSB_PROTECT_CONFIG, true, true);
		expect_absent(&e, ws, NULL);
		expect_absent(&e, t->real, NULL);
		assert_int_equal(count_under(&e, t->real), cases[i].dir ? 2 : 1);
		dsb_exec_policy_done(&e);
		dsb_policy_free(p);
		assert_int_equal(unlink(file), 0);
		free(file);
	}

	/* A missing configuration directory (the caller's) is protected as a directory. */
	char *cfgdir = join(ws, ".config/dsh-sandbox");
	dsb_policy *p = policy_from(NULL, DSB_MODE_WORKSPACE_WRITE, ws);
	assert_int_equal(dsb_policy_protect(p, DSB_PROTECT_CONFIG, cfgdir, NULL), 0);
	dsb_exec_policy e = {0};
	resolve_into(p, &e);
	expect_entry(&e, cfgdir, NULL, DSB_PROTECT_CONFIG, true, false);
	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	free(cfgdir);
	free(ws);
}

/* dsb_exec_policy_protected_at(): a write anywhere at or below an entry; a read only deny-read. */
static void test_protected_at(void **state)
{
	ptree *t = *state;
	char *ws = join(t->real, "ws");
	char *home = join(t->real, "home");
	make_gitdir(t->real, "ws/.git");
	mkdirs(t->real, "home/secret");
	assert_int_equal(setenv("HOME", home, 1), 0);
	dsb_policy *p = policy_from("sandbox-policy: {denyRead: ['~/secret']}",
				    DSB_MODE_WORKSPACE_WRITE, ws);
	dsb_exec_policy e = {0};
	resolve_into(p, &e);

	static const struct {
		const char *rel; /* under R */
		bool write;
		const char *expected; /* the entry, under R; NULL: none */
	} cases[] = {
		{"ws/.git/hooks", true, "ws/.git/hooks"},
		{"ws/.git/hooks/pre-commit", true, "ws/.git/hooks"},
		{"ws/.git/hooks/a/b/c", true, "ws/.git/hooks"},
		{"ws/.git/config", true, "ws/.git/config"},
		{"ws/.git/hooksX", true, NULL},
		{"ws/.git/hooks.d/x", true, NULL},
		{"ws/.git/config.lock", true, NULL},
		{"ws/.git", true, NULL},
		{"ws/.git/objects/ab/cdef", true, NULL},
		{"ws/x.git/hooks", true, NULL},
		{"ws", true, NULL},
		{"home/secret/key", true, "home/secret"},
		/* Reading: only what denyRead hides. */
		{"ws/.git/hooks/pre-commit", false, NULL},
		{"ws/.git/config", false, NULL},
		{"home/secret", false, "home/secret"},
		{"home/secret/key", false, "home/secret"},
		{"home/secretX", false, NULL},
		{"home", false, NULL},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *path = join(t->real, cases[i].rel);
		const dsb_protected *x = dsb_exec_policy_protected_at(&e, path, cases[i].write);
		if (!cases[i].expected) {
			if (x)
				fail_msg("%s (%s): %s", cases[i].rel,
					 cases[i].write ? "write" : "read", x->path);
		} else {
			char *want = join(t->real, cases[i].expected);
			if (!x)
				fail_msg("%s (%s): none", cases[i].rel,
					 cases[i].write ? "write" : "read");
			assert_string_equal(x->path, want);
			free(want);
		}
		free(path);
	}
	assert_null(dsb_exec_policy_protected_at(NULL, ws, true));
	assert_null(dsb_exec_policy_protected_at(&e, NULL, true));

	/* dsb_exec_policy_protect() adds one (the spill directory), once; relative is refused. */
	size_t n = e.n_protected;
	char *spill = join(t->real, "ws/spill");
	dsb_error err = {0};
	assert_int_equal(dsb_exec_policy_protect(&e, DSB_PROTECT_SPILL, spill, true, &err), 0);
	assert_int_equal(e.n_protected, n + 1);
	assert_string_equal(e.protected[n].path, spill);
	assert_int_equal(e.protected[n].kind, DSB_PROTECT_SPILL);
	assert_true(e.protected[n].directory);
	assert_true(e.protected[n].exists);
	assert_int_equal(dsb_exec_policy_protect(&e, DSB_PROTECT_SPILL, spill, true, &err), 0);
	assert_int_equal(e.n_protected, n + 1);
	assert_int_equal(dsb_exec_policy_protect(&e, DSB_PROTECT_SPILL, "spill", true, &err),
			 -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_exec_policy_protect(&e, _DSB_PROTECT_MAX, spill, true, &err),
			 -DSB_E_INVALID_ARGS);
	assert_int_equal(e.n_protected, n + 1);
	char *inside = join(spill, "f.log");
	const dsb_protected *x = dsb_exec_policy_protected_at(&e, inside, true);
	assert_non_null(x);
	assert_int_equal(x->kind, DSB_PROTECT_SPILL);
	free(inside);
	free(spill);

	/* Onto an empty policy too. */
	dsb_exec_policy empty = {0};
	assert_int_equal(dsb_exec_policy_protect(&empty, DSB_PROTECT_SPILL, "/s", true, &err), 0);
	assert_int_equal(empty.n_protected, 1);
	assert_non_null(dsb_exec_policy_protected_at(&empty, "/s/x", true));
	assert_null(dsb_exec_policy_protected_at(&empty, "/s/x", false));
	dsb_exec_policy_done(&empty);

	dsb_exec_policy_done(&e);
	dsb_policy_free(p);
	free(home);
	free(ws);
}

/* --- the session root's identity -------------------------------------------------------------- */

/* Resolves @s expecting the swapped-root refusal. */
static void expect_swapped(dsb_session *s, const dsb_policy *p, dsb_mode mode,
			   const char *mode_name)
{
	dsb_exec_policy e = {0};
	dsb_error err = {0};
	assert_int_equal(dsb_session_resolve(s, p, mode, &e, &err), -DSB_E_SANDBOX_UNAVAILABLE);
	assert_int_equal(err.code, DSB_E_SANDBOX_UNAVAILABLE);
	if (!strstr(err.message, "swapped"))
		fail_msg("no \"swapped\" in: %s", err.message);
	char *asked = NULL;
	assert_true(asprintf(&asked, "sandbox mode \"%s\"", mode_name) > 0);
	if (!strstr(err.message, asked))
		fail_msg("no %s in: %s", asked, err.message);
	free(asked);
	/* Nothing was handed out. */
	assert_null(e.workspace_root);
	assert_null(e.protected);
}

/*
 * A session's root is the directory its header recorded. A command may rename that directory
 * away and plant a symlink in its place when it lies in a temp dir: then resolve() refuses.
 */
static void test_swapped_session_root_is_refused(void **state)
{
	ptree *t = *state;
	char *store_dir = join(t->real, "store");
	char *ws = join(t->real, "ws");
	char *away = join(t->real, "ws.real");
	char *other = join(t->real, "other");
	mkdirs(t->real, "ws");
	mkdirs(t->real, "other");

	dsb_store *store = NULL;
	dsb_session *s = NULL;
	assert_int_equal(dsb_store_open(store_dir, &store, NULL), 0);
	assert_int_equal(dsb_session_create(store, ws, &s, NULL), 0);
	assert_string_equal(dsb_session_cwd(s), ws);
	dsb_policy *p = policy_for(DSB_MODE_WORKSPACE_WRITE, "/fallback");

	dsb_exec_policy e = {0};
	assert_int_equal(dsb_session_resolve(s, p, _DSB_MODE_INVALID, &e, NULL), 0);
	assert_string_equal(e.workspace_root, ws);
	dsb_exec_policy_done(&e);

	/* Swapped for a link to "/": the next call would write anywhere. */
	assert_int_equal(rename(ws, away), 0);
	assert_int_equal(symlink("/", ws), 0);
	expect_swapped(s, p, _DSB_MODE_INVALID, "workspace-write");
	expect_swapped(s, p, DSB_MODE_READ_ONLY, "read-only");

	/* The same through dsb_policy_resolve() with the header's cwd. */
	dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
	req.session_id = dsb_session_id(s);
	req.session_cwd = ws;
	dsb_error err = {0};
	assert_int_equal(dsb_policy_resolve(p, &req, &e, &err), -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "swapped"));
	assert_non_null(strstr(err.message, ws));
	assert_null(e.workspace_root);

	/* Swapped for a link to another directory of the temp dir, relative or absolute. */
	assert_int_equal(unlink(ws), 0);
	assert_int_equal(symlink("other", ws), 0);
	expect_swapped(s, p, _DSB_MODE_INVALID, "workspace-write");
	assert_int_equal(unlink(ws), 0);
	assert_int_equal(symlink(other, ws), 0);
	expect_swapped(s, p, _DSB_MODE_INVALID, "workspace-write");

	/* A link on the way to the root, not only the root itself. */
	assert_int_equal(unlink(ws), 0);
	assert_int_equal(rename(away, ws), 0);
	mkdirs(t->real, "deep/ws");
	char *deep = join(t->real, "deep/ws");
	char *deep_parent = join(t->real, "deep");
	char *deep_away = join(t->real, "deep.real");
	dsb_session *ds = NULL;
	assert_int_equal(dsb_session_create(store, deep, &ds, NULL), 0);
	assert_int_equal(rename(deep_parent, deep_away), 0);
	assert_int_equal(symlink(t->real, deep_parent), 0); /* deep/ws is now R/ws */
	expect_swapped(ds, p, _DSB_MODE_INVALID, "workspace-write");
	dsb_session_free(ds);

	/* Put back, it resolves again. */
	assert_int_equal(unlink(deep_parent), 0);
	assert_int_equal(rename(deep_away, deep_parent), 0);
	assert_int_equal(dsb_session_resolve(s, p, _DSB_MODE_INVALID, &e, NULL), 0);
	assert_string_equal(e.workspace_root, ws);
	dsb_exec_policy_done(&e);

	dsb_policy_free(p);
	dsb_session_free(s);
	dsb_store_free(store);
	free(deep);
	free(deep_parent);
	free(deep_away);
	free(other);
	free(away);
	free(ws);
	free(store_dir);
}

/* A session created through a symlinked cwd records the canonical path and resolves fine. */
static void test_session_records_canonical_cwd(void **state)
{
	ptree *t = *state;
	char *store_dir = join(t->real, "store");
	char *ws = join(t->real, "ws");
	mkdirs(t->real, "ws");
	make_link(ws, t->real, "ws-link");
	make_link("ws", t->real, "ws-rel-link");
	char *via[] = {join(t->dir, "ws-link"), join(t->dir, "ws-rel-link"),
		       join(t->dir, "ws-link/../ws/.")};
	dsb_policy *p = policy_for(DSB_MODE_WORKSPACE_WRITE, "/fallback");
	dsb_store *store = NULL;
	assert_int_equal(dsb_store_open(store_dir, &store, NULL), 0);

	for (size_t i = 0; i < ELEMENTSOF(via); i++) {
		dsb_session *s = NULL;
		assert_int_equal(dsb_session_create(store, via[i], &s, NULL), 0);
		assert_string_equal(dsb_session_cwd(s), ws);
		dsb_exec_policy e = {0};
		dsb_error err = {0};
		if (dsb_session_resolve(s, p, _DSB_MODE_INVALID, &e, &err) < 0)
			fail_msg("%s: %s", via[i], err.message);
		assert_string_equal(e.workspace_root, ws);
		dsb_exec_policy_done(&e);

		/* Reopened from its log, it still does. */
		dsb_session *again = NULL;
		assert_int_equal(dsb_session_open(store, dsb_session_id(s), &again, NULL), 0);
		assert_string_equal(dsb_session_cwd(again), ws);
		assert_int_equal(dsb_session_resolve(again, p, _DSB_MODE_INVALID, &e, NULL), 0);
		dsb_exec_policy_done(&e);
		dsb_session_free(again);
		dsb_session_free(s);
		free(via[i]);
	}

	/* A cwd that does not exist is kept as given. */
	dsb_session *s = NULL;
	char *missing = join(t->real, "no/such/dir");
	assert_int_equal(dsb_session_create(store, missing, &s, NULL), 0);
	assert_string_equal(dsb_session_cwd(s), missing);
	dsb_session_free(s);
	free(missing);

	dsb_store_free(store);
	dsb_policy_free(p);
	free(ws);
	free(store_dir);
}

/*
 * A workspace-write session whose recorded root now resolves elsewhere is refused, wherever
 * the symlink lies (a workspace inside another session's can be swapped by that session's
 * command): here in the build tree, outside /tmp and $TMPDIR. Read-only follows it, as DSH.
 */
static void test_session_root_swapped_is_refused(void **state)
{
	ptree *t = *state;
	const char *build = getenv("DSB_BUILD_ROOT");
	char *tmp = realpath("/tmp", NULL), *tmpdir = NULL, *tmpdir_real = NULL;
	assert_int_equal(tmpdir_get(&tmpdir), 0);
	tmpdir_real = realpath(tmpdir, NULL);
	char *build_real = build ? realpath(build, NULL) : NULL;
	if (!build_real || path_is_under(build_real, tmp) ||
	    (tmpdir_real && path_is_under(build_real, tmpdir_real))) {
		print_message("the build tree lies in a temp dir: nothing to compare with\n");
		free(build_real);
		free(tmp);
		free(tmpdir);
		free(tmpdir_real);
		return;
	}
	char *base = join(build_real, "dsb-root-identity.XXXXXX");
	assert_non_null(mkdtemp(base));
	char *ws = join(base, "ws");
	char *away = join(base, "ws.real");
	char *other = join(base, "other");
	char *store_dir = join(t->real, "store");
	assert_int_equal(mkdir(ws, 0755), 0);
	assert_int_equal(mkdir(other, 0755), 0);

	dsb_store *store = NULL;
	dsb_session *s = NULL;
	assert_int_equal(dsb_store_open(store_dir, &store, NULL), 0);
	assert_int_equal(dsb_session_create(store, ws, &s, NULL), 0);
	assert_int_equal(rename(ws, away), 0);
	assert_int_equal(symlink(other, ws), 0);
	dsb_policy *p = policy_for(DSB_MODE_WORKSPACE_WRITE, "/fallback");
	dsb_exec_policy e = {0};
	dsb_error err = {0};
	assert_int_equal(dsb_session_resolve(s, p, _DSB_MODE_INVALID, &e, &err),
			 -DSB_E_SANDBOX_UNAVAILABLE);
	char *want = NULL;
	assert_true(asprintf(&want,
			     "Runner failure: the session's workspace root %s now resolves to %s "
			     "(a symlink was put on its path): it was moved or swapped, so nothing "
			     "runs; start a new session from the real directory",
			     ws, other) > 0);
	assert_non_null(strstr(err.message, want));
	free(want);
	assert_int_equal(dsb_session_resolve(s, p, DSB_MODE_READ_ONLY, &e, &err), 0);
	assert_string_equal(e.workspace_root, other);
	dsb_exec_policy_done(&e);

	dsb_policy_free(p);
	dsb_session_free(s);
	dsb_store_free(store);
	dsb_test_rm_rf(base);
	free(store_dir);
	free(other);
	free(away);
	free(ws);
	free(base);
	free(build_real);
	free(tmp);
	free(tmpdir);
	free(tmpdir_real);
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
		cmocka_unit_test_setup_teardown(test_workspace_write_grants_root_tmp_and_extras,
						setup_tree, teardown_tree),
		cmocka_unit_test_setup_teardown(test_extra_roots_resolve, setup_tree,
						teardown_tree),
		cmocka_unit_test(test_add_writable_roots),
		cmocka_unit_test(test_protect_kind_vocabulary),
		cmocka_unit_test_setup_teardown(test_git_set_per_mode, setup_ptree, teardown_ptree),
		cmocka_unit_test_setup_teardown(test_git_worktree_config, setup_ptree,
						teardown_ptree),
		cmocka_unit_test_setup_teardown(test_git_linked_worktree, setup_ptree,
						teardown_ptree),
		cmocka_unit_test_setup_teardown(test_git_submodules, setup_ptree, teardown_ptree),
		cmocka_unit_test_setup_teardown(test_listed_paths, setup_ptree, teardown_ptree),
		cmocka_unit_test_setup_teardown(test_listed_globs_below_a_bracketed_root,
						setup_ptree, teardown_ptree),
		cmocka_unit_test_setup_teardown(test_deny_read, setup_ptree, teardown_ptree),
		cmocka_unit_test_setup_teardown(test_policy_protect, setup_ptree, teardown_ptree),
		cmocka_unit_test_setup_teardown(test_policy_protect_through_a_link, setup_ptree,
						teardown_ptree),
		cmocka_unit_test_setup_teardown(test_config_file_protects_itself, setup_ptree,
						teardown_ptree),
		cmocka_unit_test_setup_teardown(test_protected_at, setup_ptree, teardown_ptree),
		cmocka_unit_test_setup_teardown(test_swapped_session_root_is_refused, setup_ptree,
						teardown_ptree),
		cmocka_unit_test_setup_teardown(test_session_records_canonical_cwd, setup_ptree,
						teardown_ptree),
		cmocka_unit_test_setup_teardown(test_session_root_swapped_is_refused, setup_ptree,
						teardown_ptree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
