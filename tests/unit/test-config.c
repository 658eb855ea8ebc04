/* SPDX-License-Identifier: MIT */
/*
 * The configuration loader (src/policy/load.c) and the DSH_PERMISSION_MODE override: defaults,
 * every key of a full document, the golden invalid cases of tests/data/config/invalid (NAME.yaml
 * fails with exactly the code and message in NAME.expected), the valid files of
 * tests/data/config/valid, the input limits and dsb_config_load_file()'s I/O paths.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dsb/policy.h>

#include "../../src/policy/policy.h"
#include "helpers.h"

static const size_t max_bytes = (size_t)DSB_CONFIG_MAX_BYTES;

static dsb_config *parse_ok(const char *yaml)
{
	dsb_config *cfg = NULL;
	dsb_error err = {0};
	int r = dsb_config_parse(yaml, strlen(yaml), "test.yaml", &cfg, &err);
	if (r != 0)
		fail_msg("parsing failed: %s\n%s", err.message, yaml);
	assert_non_null(cfg);
	return cfg;
}

/* Parses @yaml expecting failure; returns the error and checks *ret_cfg was left alone. */
static dsb_error parse_fail(const char *buf, size_t len, const char *origin)
{
	dsb_config *sentinel = dsb_config_new(), *cfg = sentinel;
	dsb_error err = {0};
	int r = dsb_config_parse(buf, len, origin, &cfg, &err);
	assert_true(r < 0);
	assert_int_equal(r, -(int)err.code);
	assert_ptr_equal(cfg, sentinel);
	dsb_config_free(sentinel);
	return err;
}

static void assert_strv_equal(char *const *actual, const char *const *expected)
{
	size_t i = 0;
	assert_non_null(actual);
	for (; expected[i]; i++) {
		assert_non_null(actual[i]);
		assert_string_equal(actual[i], expected[i]);
	}
	assert_null(actual[i]);
}

static void assert_preset(const dsb_preset *p, const char *key, dsb_mode sandbox,
			  dsb_approval_policy approval, const char *name, const char *description)
{
	assert_string_equal(p->key, key);
	assert_int_equal(p->sandbox, sandbox);
	assert_int_equal(p->approval, approval);
	if (name)
		assert_string_equal(p->name, name);
	else
		assert_null(p->name);
	if (description)
		assert_string_equal(p->description, description);
	else
		assert_null(p->description);
}

/* The default bash.scrubEnv list, as docs/design/environment.md documents it. */
static const char *const default_scrub_env[] = {
	"(^|_)PAT$",
	"(^|_)O?AUTH([NZ]|ORIZATION|ENTICATION)?(_|$)",
	"CREDENTIAL",
	"PRIVATE",
	"COOKIE",
	"PASSWD",
	"PASSPHRASE",
	"(^|_)PASS(_|$)",
	"_PWD$",
	"(^|_)DSN$",
	"WEBHOOK",
	"CONNECTION_?STRING",
	"value:[a-z][a-z0-9+.-]*://[^/?#@:]*:[^/?#@]*@",
	NULL,
};

static void assert_defaults(const dsb_config *cfg)
{
	static const char *const none[] = {NULL};

	assert_int_equal(cfg->mode, DSB_MODE_READ_ONLY);
	assert_null(cfg->workspace_root);
	assert_int_equal(cfg->n_backends, 2);
	assert_int_equal(cfg->backends[0], DSB_BACKEND_BWRAP);
	assert_int_equal(cfg->backends[1], DSB_BACKEND_LANDLOCK);
	assert_int_equal(cfg->probe_timeout_ms, DSB_DEFAULT_PROBE_TIMEOUT_MS);
	assert_strv_equal(cfg->runner_command, none);
	assert_strv_equal(cfg->runner_failure_signatures, none);
	assert_int_equal(cfg->timeout_ms, DSB_DEFAULT_TIMEOUT_MS);
	assert_int_equal(cfg->max_timeout_ms, DSB_DEFAULT_MAX_TIMEOUT_MS);
	assert_int_equal(cfg->max_output_bytes, DSB_DEFAULT_MAX_OUTPUT_BYTES);
	assert_int_equal(cfg->max_spill_bytes, DSB_DEFAULT_MAX_SPILL_BYTES);
	assert_int_equal(cfg->grace_ms, DSB_DEFAULT_GRACE_MS);
	/* Each default is matched by its built-in equivalent: nothing compiled. */
	assert_int_equal(cfg->n_scrub_env, ELEMENTSOF(default_scrub_env) - 1);
	for (size_t i = 0; i < cfg->n_scrub_env; i++) {
		assert_string_equal(cfg->scrub_env[i].source, default_scrub_env[i]);
		assert_non_null(cfg->scrub_env[i].literal);
		assert_int_equal(cfg->scrub_env[i].on_value,
				 strncmp(default_scrub_env[i], "value:", 6) == 0);
	}
	assert_int_equal(cfg->approval_policy, DSB_APPROVAL_ASK);
	assert_strv_equal(cfg->answerer, none);
	assert_int_equal(cfg->n_presets, 3);
	assert_preset(&cfg->presets[0], "read-only", DSB_MODE_READ_ONLY, DSB_APPROVAL_ASK, NULL,
		      NULL);
	assert_preset(&cfg->presets[1], "workspace-write", DSB_MODE_WORKSPACE_WRITE,
		      DSB_APPROVAL_ASK, "workspace-write",
		      "Write inside the workspace and permitted temporary directories; wider "
		      "retries require approval.");
	assert_preset(&cfg->presets[2], "danger-full-access", DSB_MODE_DANGER_FULL_ACCESS,
		      DSB_APPROVAL_NEVER, "danger-full-access",
		      "Full file access without approval prompts.");
	assert_null(cfg->default_preset);
	assert_true(cfg->protect_git);
	assert_strv_equal(cfg->protected_paths, none);
	assert_strv_equal(cfg->deny_read, none);
	assert_null(cfg->file);
	assert_null(dsb_config_file(cfg));
	assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_FULL);
	assert_strv_equal(dsb_config_network_allow(cfg), none);
	assert_strv_equal(dsb_config_network_deny(cfg), none);
	assert_strv_equal(dsb_config_network_hosts(cfg), none);
	assert_int_equal(dsb_config_network_proxy_port(cfg), 0);
}

static void test_defaults(void **state)
{
	static const char *const documents[] = {
		"",
		"~\n",
		"null",
		"# only a comment\n",
		"\n\n   \n",
		"---\n",
		"--- ~\n...\n",
		"sandbox-policy:\nsandbox-local:\nbash:\napproval: ~\npermission: null\nnetwork:\n",
		"{}",
		"network: {}",
		"network: {access: full, allow: [], deny: [], proxyPort: 0, hosts: {}}",
	};

	for (size_t i = 0; i < sizeof(documents) / sizeof(documents[0]); i++) {
		dsb_config *cfg = parse_ok(documents[i]);
		assert_defaults(cfg);
		dsb_config_free(cfg);
	}

	dsb_config *cfg = dsb_config_new();
	assert_defaults(cfg);
	dsb_config_free(cfg);
}

static void test_full_document(void **state)
{
	static const char yaml[] =
		"sandbox-policy:\n"
		"  mode: workspace-write\n"
		"  workspaceRoot: ./relative/root\n"
		"sandbox-local:\n"
		"  backends: [landlock]\n"
		"  probeTimeoutMs: 250\n"
		"  runnerCommand: [/opt/runner/bin/run, --profile, 10]\n"
		"  runnerFailureSignatures: ['runner: cannot start', fatal]\n"
		"bash:\n"
		"  timeoutMs: 60000\n"
		"  maxTimeoutMs: 900000\n"
		"  maxOutputBytes: 128000\n"
		"  maxSpillBytes: 1048576\n"
		"  graceMs: 2147483647\n"
		"approval:\n"
		"  policy: never\n"
		"  answerer: [/usr/local/bin/approve, --json]\n"
		"permission:\n"
		"  defaultPreset: ro\n"
		"  presets:\n"
		"    ro: {sandbox: read-only, approval: ask,\n"
		"         name: Read only, description: Looks.}\n"
		"    rw: {approval: ask, sandbox: workspace-write}\n"
		"    yolo: {sandbox: danger-full-access, approval: never, name: ''}\n";
	static const char *const runner[] = {"/opt/runner/bin/run", "--profile", "10", NULL};
	static const char *const signatures[] = {"runner: cannot start", "fatal", NULL};
	static const char *const answerer[] = {"/usr/local/bin/approve", "--json", NULL};
	dsb_config *cfg = parse_ok(yaml);

	assert_int_equal(cfg->mode, DSB_MODE_WORKSPACE_WRITE);
	assert_int_equal(dsb_config_mode(cfg), DSB_MODE_WORKSPACE_WRITE);
	assert_string_equal(cfg->workspace_root, "./relative/root");
	assert_string_equal(dsb_config_workspace_root(cfg), "./relative/root");
	assert_int_equal(cfg->n_backends, 1);
	assert_int_equal(cfg->backends[0], DSB_BACKEND_LANDLOCK);
	assert_int_equal(cfg->probe_timeout_ms, 250);
	assert_strv_equal(cfg->runner_command, runner);
	assert_strv_equal(cfg->runner_failure_signatures, signatures);
	assert_int_equal(cfg->timeout_ms, 60000);
	assert_int_equal(cfg->max_timeout_ms, 900000);
	assert_int_equal(cfg->max_output_bytes, 128000);
	assert_int_equal(cfg->max_spill_bytes, 1048576);
	assert_int_equal(cfg->grace_ms, DSB_MAX_GRACE_MS);
	assert_int_equal(cfg->approval_policy, DSB_APPROVAL_NEVER);
	assert_strv_equal(cfg->answerer, answerer);
	assert_int_equal(cfg->n_presets, 3);
	assert_preset(&cfg->presets[0], "ro", DSB_MODE_READ_ONLY, DSB_APPROVAL_ASK, "Read only",
		      "Looks.");
	assert_preset(&cfg->presets[1], "rw", DSB_MODE_WORKSPACE_WRITE, DSB_APPROVAL_ASK, NULL,
		      NULL);
	assert_preset(&cfg->presets[2], "yolo", DSB_MODE_DANGER_FULL_ACCESS, DSB_APPROVAL_NEVER, "",
		      NULL);
	assert_string_equal(cfg->default_preset, "ro");
	dsb_config_free(cfg);
}

/* Setting one key leaves every other default in place; empty lists clear the defaults' lists. */
static void test_partial_document(void **state)
{
	dsb_config *cfg = parse_ok("bash: {graceMs: 10}\napproval: {answerer: []}\n");
	assert_int_equal(cfg->grace_ms, 10);
	cfg->grace_ms = DSB_DEFAULT_GRACE_MS;
	assert_defaults(cfg);
	dsb_config_free(cfg);

	/* defaultPreset may name an entry of the default table. */
	cfg = parse_ok("permission: {defaultPreset: danger-full-access}\n");
	assert_string_equal(cfg->default_preset, "danger-full-access");
	dsb_config_free(cfg);

	/* Tagged numbers are numbers; plain numbers are text where a string is expected. */
	cfg = parse_ok("bash: {timeoutMs: !!int 42}\nsandbox-policy: {workspaceRoot: 42}\n");
	assert_int_equal(cfg->timeout_ms, 42);
	assert_string_equal(cfg->workspace_root, "42");
	dsb_config_free(cfg);
}

/*
 * bash.scrubEnv replaces the default list as a whole; an entry spelled as a default keeps its
 * built-in matcher, any other is compiled; [] leaves DSH's rule alone (tests/unit/test-exec.c).
 */
static void test_scrub_env(void **state)
{
	dsb_config *cfg =
		parse_ok("bash:\n"
			 "  scrubEnv: ['^STRIPE_', '(^|_)PAT$', 'value:^sk_live_', 42]\n");
	assert_int_equal(cfg->n_scrub_env, 4);
	assert_string_equal(cfg->scrub_env[0].source, "^STRIPE_");
	assert_false(cfg->scrub_env[0].on_value);
	assert_null(cfg->scrub_env[0].literal);
	assert_string_equal(cfg->scrub_env[1].source, "(^|_)PAT$");
	assert_non_null(cfg->scrub_env[1].literal);
	assert_string_equal(cfg->scrub_env[2].source, "value:^sk_live_");
	assert_true(cfg->scrub_env[2].on_value);
	assert_null(cfg->scrub_env[2].literal);
	assert_string_equal(cfg->scrub_env[3].source, "42");
	dsb_config_free(cfg);

	cfg = parse_ok("bash: {scrubEnv: []}\n");
	assert_int_equal(cfg->n_scrub_env, 0);
	dsb_config_free(cfg);

	/* The rest of bash keeps its defaults, and the list its defaults without the key. */
	cfg = parse_ok("bash: {graceMs: 7}\n");
	assert_int_equal(cfg->n_scrub_env, ELEMENTSOF(default_scrub_env) - 1);
	dsb_config_free(cfg);
}

static int filter_yaml(const struct dirent *d)
{
	size_t n = strlen(d->d_name);
	return n > 5 && strcmp(d->d_name + n - 5, ".yaml") == 0;
}

/* Calls @fn for every tests/data/@dir/ *.yaml in name order; returns how many there were. */
static size_t for_each_yaml(const char *dir, void (*fn)(const char *dir, const char *name))
{
	char *path = dsb_test_data_path(dir);
	struct dirent **names = NULL;
	int n = scandir(path, &names, filter_yaml, alphasort);
	if (n < 0)
		fail_msg("%s: %s", path, strerror(errno));
	for (int i = 0; i < n; i++) {
		fn(dir, names[i]->d_name);
		free(names[i]);
	}
	free(names);
	free(path);
	return (size_t)n;
}

static void check_invalid(const char *dir, const char *name)
{
	char *rel = NULL, *golden = NULL, *actual = NULL;
	size_t len;

	assert_true(asprintf(&rel, "%s/%s", dir, name) > 0);
	char *path = dsb_test_data_path(rel);
	char *buf = dsb_test_read_file(path, &len);
	assert_non_null(buf);

	dsb_error err = parse_fail(buf, len, name);
	assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
	assert_true(asprintf(&actual, "%s\n%s\n", dsb_code_name(err.code), err.message) > 0);
	assert_true(asprintf(&golden, "%s/%.*s.expected", dir, (int)(strlen(name) - 5), name) > 0);
	dsb_test_assert_golden(golden, actual);

	free(actual);
	free(golden);
	free(buf);
	free(path);
	free(rel);
}

static void test_invalid_golden(void **state)
{
	assert_true(for_each_yaml("config/invalid", check_invalid) >= 30);
}

static void check_valid(const char *dir, const char *name)
{
	char *rel = NULL;
	size_t len;
	dsb_config *cfg = NULL;
	dsb_error err = {0};

	assert_true(asprintf(&rel, "%s/%s", dir, name) > 0);
	char *path = dsb_test_data_path(rel);
	char *buf = dsb_test_read_file(path, &len);
	assert_non_null(buf);

	if (dsb_config_parse(buf, len, name, &cfg, &err) != 0)
		fail_msg("%s", err.message);
	cfg = dsb_config_free(cfg);
	if (dsb_config_load_file(path, &cfg, &err) != 0)
		fail_msg("%s", err.message);
	dsb_config_free(cfg);

	free(buf);
	free(path);
	free(rel);
}

static void test_valid_files(void **state)
{
	assert_true(for_each_yaml("config/valid", check_valid) >= 10);

	/* A spot check that the files say what their names promise. */
	char *path = dsb_test_data_path("config/valid/design-example.yaml");
	dsb_config *cfg = NULL;
	assert_int_equal(dsb_config_load_file(path, &cfg, NULL), 0);
	assert_string_equal(cfg->workspace_root, "/srv/work");
	assert_int_equal(cfg->n_presets, 3);
	assert_string_equal(cfg->presets[2].key, "danger-full-access");
	assert_string_equal(cfg->default_preset, "workspace-write");
	assert_string_equal(cfg->answerer[1], "--json");
	dsb_config_free(cfg);
	free(path);
}

/* Cases whose input is better generated than stored: sizes at and past the limits, raw bytes. */
static void test_limits(void **state)
{
	char *big = malloc(max_bytes + 1);
	assert_non_null(big);

	/* Exactly DSB_CONFIG_MAX_BYTES is fine: a comment line filling the whole buffer. */
	memset(big, 'x', max_bytes + 1);
	big[0] = '#';
	big[max_bytes - 1] = '\n';
	dsb_config *cfg = NULL;
	assert_int_equal(dsb_config_parse(big, max_bytes, "big.yaml", &cfg, NULL), 0);
	assert_defaults(cfg);
	dsb_config_free(cfg);

	dsb_error err = parse_fail(big, max_bytes + 1, "big.yaml");
	assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
	assert_string_equal(err.message, "big.yaml: larger than 1048576 bytes");
	free(big);

	/* 1025 presets: one past DSB_CONFIG_MAX_ITEMS in a mapping. */
	char *doc = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&doc, &len);
	assert_non_null(f);
	fprintf(f, "permission:\n  presets:\n");
	for (int i = 0; i <= DSB_CONFIG_MAX_ITEMS; i++)
		fprintf(f, "    p%d: {sandbox: read-only, approval: ask}\n", i);
	assert_int_equal(fclose(f), 0);
	err = parse_fail(doc, len, "many.yaml");
	assert_string_equal(err.message, "many.yaml:1027:5: permission.presets: more than 1024 "
					 "entries");
	assert_string_equal(err.subject, "permission.presets");
	free(doc);

	/*
	 * A scrubEnv expression of DSB_SCRUB_PATTERN_MAX_BYTES - 1 bytes (after "value:") is fine;
	 * one byte more is refused, the reason kept after the shortened expression.
	 */
	char *pattern = malloc(DSB_SCRUB_PATTERN_MAX_BYTES + 1);
	assert_non_null(pattern);
	memset(pattern, 'a', DSB_SCRUB_PATTERN_MAX_BYTES);
	pattern[DSB_SCRUB_PATTERN_MAX_BYTES - 1] = '\0';
	assert_true(asprintf(&doc, "bash:\n  scrubEnv:\n    - value:%s\n", pattern) > 0);
	cfg = parse_ok(doc);
	assert_true(cfg->scrub_env[0].on_value);
	dsb_config_free(cfg);
	free(doc);
	pattern[DSB_SCRUB_PATTERN_MAX_BYTES - 1] = 'a';
	pattern[DSB_SCRUB_PATTERN_MAX_BYTES] = '\0';
	assert_true(asprintf(&doc, "bash:\n  scrubEnv:\n    - %s\n", pattern) > 0);
	err = parse_fail(doc, strlen(doc), "long.yaml");
	assert_string_equal(err.message,
			    "long.yaml:3:7: bash.scrubEnv: invalid regular expression "
			    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...\": "
			    "longer than 1023 bytes");
	assert_string_equal(err.subject, "bash.scrubEnv");
	free(doc);
	free(pattern);

	/* A raw NUL byte is not YAML at all: libyaml's reader refuses it, placed by offset. */
	static const char raw_nul[] = "bash:\n  timeoutMs: 5\0000\n";
	err = parse_fail(raw_nul, sizeof(raw_nul) - 1, "nul.yaml");
	assert_string_equal(err.message,
			    "nul.yaml:2:15: YAML syntax error: control characters are not allowed");

	/* The buffer needs no terminating NUL: an exact-size copy lets ASan see any over-read. */
	static const char text[] = "sandbox-policy: {mode: danger-full-access}";
	char *exact = malloc(sizeof(text) - 1);
	assert_non_null(exact);
	memcpy(exact, text, sizeof(text) - 1);
	assert_int_equal(dsb_config_parse(exact, sizeof(text) - 1, NULL, &cfg, NULL), 0);
	assert_int_equal(cfg->mode, DSB_MODE_DANGER_FULL_ACCESS);
	dsb_config_free(cfg);
	free(exact);
}

/* The subject is the key path; a NULL @reterr and a NULL @origin are fine. */
static void test_error_details(void **state)
{
	static const struct {
		const char *yaml;
		const char *subject;
		const char *message;
	} cases[] = {
		{"bash: {timeoutMs: 0}", "bash.timeoutMs",
		 "<config>:1:19: bash.timeoutMs: invalid value \"0\": expected a positive whole "
		 "number"},
		{"nope: 1", "",
		 "<config>:1:1: unknown key \"nope\" "
		 "(accepted: sandbox-policy, sandbox-local, bash, approval, permission, network, "
		 "limits)"},
		{"permission: {presets: {a: {sandbox: x, approval: ask}}}",
		 "permission.presets.a.sandbox",
		 "<config>:1:37: permission.presets.a.sandbox: invalid mode \"x\" (accepted: "
		 "read-only, workspace-write, danger-full-access)"},
		{"sandbox-policy: {mode: \"a\\\"b\\e[31m\"}", "sandbox-policy.mode",
		 "<config>:1:24: sandbox-policy.mode: invalid mode \"a\\\"b\\x1b[31m\" (accepted: "
		 "read-only, workspace-write, danger-full-access)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dsb_error err = parse_fail(cases[i].yaml, strlen(cases[i].yaml), NULL);
		assert_string_equal(err.subject, cases[i].subject);
		assert_string_equal(err.message, cases[i].message);

		dsb_config *cfg = NULL;
		assert_int_equal(
			dsb_config_parse(cases[i].yaml, strlen(cases[i].yaml), NULL, &cfg, NULL),
			-DSB_E_CONFIG_INVALID);
		assert_null(cfg);
	}

	dsb_config *cfg = NULL;
	dsb_error err = {0};
	assert_int_equal(dsb_config_parse(NULL, 1, "x", &cfg, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_config_parse("", 0, "x", NULL, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_config_parse(NULL, 0, "x", &cfg, &err), 0);
	assert_defaults(cfg);
	dsb_config_free(cfg);
}

static void test_load_file(void **state)
{
	char *dir = dsb_test_mkdtemp();
	char *path = NULL;
	dsb_config *cfg = NULL;
	dsb_error err = {0};

	assert_true(asprintf(&path, "%s/missing.yaml", dir) > 0);
	assert_int_equal(dsb_config_load_file(path, &cfg, &err), -DSB_E_CONFIG_INVALID);
	assert_null(cfg);
	assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
	assert_int_equal(err.sys_errno, ENOENT);
	assert_string_equal(err.subject, path);
	assert_non_null(strstr(err.message, path));
	assert_non_null(strstr(err.message, strerror(ENOENT)));

	err = (dsb_error){0};
	assert_int_equal(dsb_config_load_file(dir, &cfg, &err), -DSB_E_CONFIG_INVALID);
	assert_null(cfg);
	char *expected = NULL;
	assert_true(asprintf(&expected, "%s: not a regular file", dir) > 0);
	assert_string_equal(err.message, expected);
	free(expected);

	static const char good[] = "sandbox-policy:\n  mode: workspace-write\n";
	dsb_test_write_file(path, good, sizeof(good) - 1);
	assert_int_equal(dsb_config_load_file(path, &cfg, &err), 0);
	assert_int_equal(cfg->mode, DSB_MODE_WORKSPACE_WRITE);
	cfg = dsb_config_free(cfg);

	/* Errors in a file carry its path as the origin. */
	static const char bad[] = "sandbox-policy:\n  mode: yolo\n";
	dsb_test_write_file(path, bad, sizeof(bad) - 1);
	assert_int_equal(dsb_config_load_file(path, &cfg, &err), -DSB_E_CONFIG_INVALID);
	assert_true(asprintf(&expected,
			     "%s:2:9: sandbox-policy.mode: invalid mode \"yolo\" (accepted: "
			     "read-only, workspace-write, danger-full-access)",
			     path) > 0);
	assert_string_equal(err.message, expected);
	free(expected);

	/* One byte past the limit is read, and refused. */
	char *big = malloc(max_bytes + 1);
	assert_non_null(big);
	memset(big, '#', max_bytes + 1);
	dsb_test_write_file(path, big, max_bytes + 1);
	free(big);
	assert_int_equal(dsb_config_load_file(path, &cfg, &err), -DSB_E_CONFIG_INVALID);
	assert_true(asprintf(&expected, "%s: larger than 1048576 bytes", path) > 0);
	assert_string_equal(err.message, expected);
	free(expected);
	assert_null(cfg);

	assert_int_equal(dsb_config_load_file(NULL, &cfg, &err), -DSB_E_INVALID_ARGS);

	dsb_test_rm_rf(dir);
	free(path);
	free(dir);
}

/* sandbox-policy.protectedPaths, protectGit and denyRead (beyond DSH; protected paths). */
static void test_protected_paths_keys(void **state)
{
	static const char *const listed[] = {".envrc", "secrets/*.json", ".github/workflows/",
					     "a..b",   "..x/y..",	 NULL};
	static const char *const deny[] = {"~/.ssh", "/etc/shadow", "~", NULL};
	static const char *const none[] = {NULL};
	dsb_config *cfg =
		parse_ok("sandbox-policy:\n"
			 "  protectedPaths: ['.envrc', 'secrets/*.json', .github/workflows/,\n"
			 "                   a..b, ..x/y..]\n"
			 "  protectGit: false\n"
			 "  denyRead:\n"
			 "    - ~/.ssh\n"
			 "    - /etc/shadow\n"
			 "    - '~'\n");
	assert_strv_equal(cfg->protected_paths, listed);
	assert_false(cfg->protect_git);
	assert_strv_equal(cfg->deny_read, deny);
	assert_null(dsb_config_file(cfg));
	dsb_config_free(cfg);

	/* The booleans as YAML 1.2's core schema spells them; the lists may be empty. */
	static const struct {
		const char *yaml;
		bool value;
	} bools[] = {
		{"sandbox-policy: {protectGit: true}", true},
		{"sandbox-policy: {protectGit: True}", true},
		{"sandbox-policy: {protectGit: TRUE}", true},
		{"sandbox-policy: {protectGit: false}", false},
		{"sandbox-policy: {protectGit: False}", false},
		{"sandbox-policy: {protectGit: FALSE}", false},
	};
	for (size_t i = 0; i < ELEMENTSOF(bools); i++) {
		cfg = parse_ok(bools[i].yaml);
		assert_int_equal(cfg->protect_git, bools[i].value);
		dsb_config_free(cfg);
	}
	cfg = parse_ok("sandbox-policy: {protectedPaths: [], denyRead: []}");
	assert_strv_equal(cfg->protected_paths, none);
	assert_strv_equal(cfg->deny_read, none);
	assert_true(cfg->protect_git);
	dsb_config_free(cfg);
}

/* approval.timeoutMs and approval.sessionGrants (beyond DSH; the server's elicitation). */
static void test_approval_server_keys(void **state)
{
	dsb_config *cfg = parse_ok("approval: {policy: ask}");
	assert_int_equal(dsb_config_approval_timeout_ms(cfg), 0);
	assert_false(dsb_config_session_grants(cfg));
	dsb_config_free(cfg);
	cfg = parse_ok("approval:\n  timeoutMs: 45000\n  sessionGrants: true\n");
	assert_int_equal(dsb_config_approval_timeout_ms(cfg), 45000);
	assert_true(dsb_config_session_grants(cfg));
	dsb_config_free(cfg);

	static const char *const bad[] = {"approval: {timeoutMs: -1}\n",
					  "approval: {timeoutMs: soon}\n",
					  "approval: {sessionGrants: maybe}\n"};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		dsb_error err = parse_fail(bad[i], strlen(bad[i]), "test.yaml");
		assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
		assert_non_null(strstr(err.message, "test.yaml:1:"));
	}
}

/* A bad entry is named with its key and its own line and column, not the list's end. */
static void test_protected_paths_invalid(void **state)
{
#define RELATIVE_ONLY                                                                        \
	"entries are relative to each writable root and stay inside it (no leading / or ~, " \
	"no ..)"
	static const struct {
		const char *yaml;
		const char *subject;
		const char *message;
	} cases[] = {
		{"sandbox-policy:\n  protectedPaths: ['.envrc', /etc/x, b]\n",
		 "sandbox-policy.protectedPaths",
		 "test.yaml:2:30: sandbox-policy.protectedPaths: \"/etc/x\": " RELATIVE_ONLY},
		{"sandbox-policy:\n  protectedPaths:\n    - ok\n    - a/../b\n  protectGit: true\n",
		 "sandbox-policy.protectedPaths",
		 "test.yaml:4:7: sandbox-policy.protectedPaths: \"a/../b\": " RELATIVE_ONLY},
		{"sandbox-policy:\n  protectedPaths: [..]\n", "sandbox-policy.protectedPaths",
		 "test.yaml:2:20: sandbox-policy.protectedPaths: \"..\": " RELATIVE_ONLY},
		{"sandbox-policy:\n  protectedPaths: [a/..]\n", "sandbox-policy.protectedPaths",
		 "test.yaml:2:20: sandbox-policy.protectedPaths: \"a/..\": " RELATIVE_ONLY},
		{"sandbox-policy:\n  protectedPaths: ['~/x']\n", "sandbox-policy.protectedPaths",
		 "test.yaml:2:20: sandbox-policy.protectedPaths: \"~/x\": " RELATIVE_ONLY},
		{"sandbox-policy:\n  protectedPaths: ['']\n", "sandbox-policy.protectedPaths",
		 "test.yaml:2:20: sandbox-policy.protectedPaths: entries must be non-empty "
		 "strings"},
		{"sandbox-policy:\n  protectedPaths: .envrc\n", "sandbox-policy.protectedPaths",
		 "test.yaml:2:19: sandbox-policy.protectedPaths: expected a list of strings, got a "
		 "string"},
		{"sandbox-policy:\n  denyRead: [/ok, rel/x]\n", "sandbox-policy.denyRead",
		 "test.yaml:2:19: sandbox-policy.denyRead: \"rel/x\": entries are absolute paths "
		 "or "
		 "start with ~/"},
		{"sandbox-policy:\n  denyRead: ['~x']\n", "sandbox-policy.denyRead",
		 "test.yaml:2:14: sandbox-policy.denyRead: \"~x\": entries are absolute paths or "
		 "start with ~/"},
		{"sandbox-policy:\n  denyRead: ['']\n", "sandbox-policy.denyRead",
		 "test.yaml:2:14: sandbox-policy.denyRead: entries must be non-empty strings"},
		{"sandbox-policy:\n  protectGit: yes\n", "sandbox-policy.protectGit",
		 "test.yaml:2:15: sandbox-policy.protectGit: expected true or false, got a string"},
		{"sandbox-policy:\n  protectGit: 'true'\n", "sandbox-policy.protectGit",
		 "test.yaml:2:15: sandbox-policy.protectGit: expected true or false, got a string"},
		{"sandbox-policy:\n  protectGit: ''\n", "sandbox-policy.protectGit",
		 "test.yaml:2:15: sandbox-policy.protectGit: expected true or false, got a string"},
	};
#undef RELATIVE_ONLY

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		dsb_error err = parse_fail(cases[i].yaml, strlen(cases[i].yaml), "test.yaml");
		assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
		assert_string_equal(err.subject, cases[i].subject);
		assert_string_equal(err.message, cases[i].message);
	}

	/* Entries as long as a path may be, and one byte longer. */
	static const struct {
		const char *key, *prefix;
		int column;
	} lists[] = {{"protectedPaths", "", 20}, {"denyRead", "/", 14}};
	for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
		for (size_t len = DSB_PATH_MAX - 1; len <= DSB_PATH_MAX; len++) {
			char *entry = malloc(len + 1), *doc = NULL, *expected = NULL;
			assert_non_null(entry);
			memset(entry, 'a', len);
			entry[len] = '\0';
			memcpy(entry, lists[i].prefix, strlen(lists[i].prefix));
			assert_true(asprintf(&doc, "sandbox-policy:\n  %s: ['%s']\n", lists[i].key,
					     entry) > 0);
			if (len < DSB_PATH_MAX) {
				dsb_config *cfg = parse_ok(doc);
				assert_string_equal(strcmp(lists[i].key, "denyRead") == 0
							    ? cfg->deny_read[0]
							    : cfg->protected_paths[0],
						    entry);
				dsb_config_free(cfg);
			} else {
				dsb_error err = parse_fail(doc, strlen(doc), "test.yaml");
				assert_true(
					asprintf(&expected,
						 "test.yaml:2:%d: sandbox-policy.%s: longer than "
						 "%d bytes",
						 lists[i].column, lists[i].key,
						 DSB_PATH_MAX - 1) > 0);
				assert_string_equal(err.message, expected);
			}
			free(expected);
			free(doc);
			free(entry);
		}
	}

	/* A value that is not a scalar at all names the key too. */
	static const char list[] = "sandbox-policy:\n  protectGit: [true]\n";
	dsb_error err = parse_fail(list, sizeof(list) - 1, "test.yaml");
	assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
	assert_string_equal(err.subject, "sandbox-policy.protectGit");
	assert_non_null(strstr(err.message, "test.yaml:2:15: sandbox-policy.protectGit: "));
}

/* dsb_config_file(): the canonical path of the file loaded, whatever path reached it. */
static void test_config_file_is_canonical(void **state)
{
	char *dir = dsb_test_mkdtemp();
	char *real = realpath(dir, NULL);
	char *file = NULL, *link = NULL, *via_dir = NULL, *expected = NULL, *linked_dir = NULL;
	assert_non_null(real);
	assert_true(asprintf(&file, "%s/config.yaml", dir) > 0);
	assert_true(asprintf(&link, "%s/link.yaml", dir) > 0);
	assert_true(asprintf(&linked_dir, "%s/d", dir) > 0);
	assert_true(asprintf(&via_dir, "%s/d/d/link.yaml", dir) > 0);
	assert_true(asprintf(&expected, "%s/config.yaml", real) > 0);
	static const char yaml[] = "sandbox-policy: {protectGit: false}\n";
	dsb_test_write_file(file, yaml, sizeof(yaml) - 1);
	assert_int_equal(symlink("config.yaml", link), 0);
	assert_int_equal(symlink(".", linked_dir), 0);

	const char *paths[] = {file, link, via_dir};
	for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
		dsb_config *cfg = NULL;
		dsb_error err = {0};
		if (dsb_config_load_file(paths[i], &cfg, &err) != 0)
			fail_msg("%s: %s", paths[i], err.message);
		assert_false(cfg->protect_git);
		assert_non_null(dsb_config_file(cfg));
		assert_string_equal(dsb_config_file(cfg), expected);
		dsb_config_free(cfg);
	}

	/* Parsed from a buffer, or made with the defaults: no file. */
	dsb_config *cfg = parse_ok(yaml);
	assert_null(dsb_config_file(cfg));
	dsb_config_free(cfg);
	cfg = dsb_config_new();
	assert_null(dsb_config_file(cfg));
	dsb_config_free(cfg);
	assert_null(dsb_config_file(NULL));

	dsb_test_rm_rf(dir);
	free(dir);
	free(real);
	free(file);
	free(link);
	free(linked_dir);
	free(via_dir);
	free(expected);
}

static void test_apply_env(void **state)
{
	static const char *const bad[] = {"yolo", "", "Read-Only", "read-only "};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dsb_config *cfg = parse_ok("sandbox-policy: {mode: workspace-write}");
		dsb_error err = {0};
		char *expected = NULL;
		assert_int_equal(dsb_config_apply_env(cfg, bad[i], &err), -DSB_E_CONFIG_INVALID);
		assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
		assert_string_equal(err.subject, "DSH_PERMISSION_MODE");
		assert_true(asprintf(&expected,
				     "DSH_PERMISSION_MODE: invalid mode \"%s\" (accepted: "
				     "read-only, workspace-write, danger-full-access)",
				     bad[i]) > 0);
		assert_string_equal(err.message, expected);
		assert_int_equal(cfg->mode, DSB_MODE_WORKSPACE_WRITE);
		free(expected);
		dsb_config_free(cfg);
	}

	dsb_config *cfg = parse_ok("sandbox-policy: {mode: workspace-write}");
	assert_int_equal(dsb_config_apply_env(cfg, NULL, NULL), 0);
	assert_int_equal(cfg->mode, DSB_MODE_WORKSPACE_WRITE);
	assert_int_equal(dsb_config_apply_env(cfg, "danger-full-access", NULL), 0);
	assert_int_equal(cfg->mode, DSB_MODE_DANGER_FULL_ACCESS);
	assert_int_equal(dsb_config_apply_env(cfg, "read-only", NULL), 0);
	assert_int_equal(cfg->mode, DSB_MODE_READ_ONLY);
	dsb_config_free(cfg);
}

static void test_mode_parse(void **state)
{
	static const struct {
		const char *s;
		dsb_mode mode;
	} cases[] = {
		{"read-only", DSB_MODE_READ_ONLY},
		{"workspace-write", DSB_MODE_WORKSPACE_WRITE},
		{"danger-full-access", DSB_MODE_DANGER_FULL_ACCESS},
		{"yolo", _DSB_MODE_INVALID},
		{"", _DSB_MODE_INVALID},
		{"READ-ONLY", _DSB_MODE_INVALID},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dsb_mode mode = _DSB_MODE_INVALID;
		dsb_error err = {0};
		int r = dsb_mode_parse(cases[i].s, "--mode", DSB_E_INVALID_ARGS, &mode, &err);
		if (cases[i].mode == _DSB_MODE_INVALID) {
			assert_int_equal(r, -DSB_E_INVALID_ARGS);
			assert_int_equal(mode, _DSB_MODE_INVALID);
			assert_string_equal(err.subject, "--mode");
		} else {
			assert_int_equal(r, 0);
			assert_int_equal(mode, cases[i].mode);
			assert_string_equal(dsb_mode_to_string(mode), cases[i].s);
		}
	}
}

/* network: every key, read back canonical through the public accessors. */
static void test_network_keys(void **state)
{
	static const char yaml[] =
		"network:\n"
		"  access: allowlist\n"
		"  allow: ['Registry.NPMjs.org.', '*.Debian.ORG', 127.0.0.1, '[2001:DB8:0:0::1]',\n"
		"          '::ffff:10.0.0.1', localhost, 'a-b.c0']\n"
		"  deny: [Evil.Debian.org, '2001:db8::2']\n"
		"  proxyPort: 3128\n"
		"  hosts: {Registry.Test: 127.0.0.1, 'v6.test.': '[::1]', w.test: '0:0::2'}\n";
	static const char *const allow[] = {
		"registry.npmjs.org", "*.debian.org", "127.0.0.1", "2001:db8::1",
		"10.0.0.1",	      "localhost",    "a-b.c0",	   NULL,
	};
	static const char *const deny[] = {"evil.debian.org", "2001:db8::2", NULL};
	static const char *const hosts[] = {"registry.test=127.0.0.1", "v6.test=::1", "w.test=::2",
					    NULL};

	dsb_config *cfg = parse_ok(yaml);
	assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_ALLOWLIST);
	assert_strv_equal(dsb_config_network_allow(cfg), allow);
	assert_strv_equal(dsb_config_network_deny(cfg), deny);
	assert_strv_equal(dsb_config_network_hosts(cfg), hosts);
	assert_int_equal(dsb_config_network_proxy_port(cfg), 3128);
	dsb_config_free(cfg);

	cfg = parse_ok("network: {access: none, proxyPort: 65535}\n");
	assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_NONE);
	assert_int_equal(dsb_config_network_proxy_port(cfg), 65535);
	dsb_config_free(cfg);

	/* The longest label and name there may be; an allowlist may also come after its list. */
	char label[64], name[254], *doc = NULL;
	memset(label, 'a', 63);
	label[63] = '\0';
	for (size_t i = 0; i < 253; i++)
		name[i] = i % 2 ? '.' : 'b';
	name[253] = '\0';
	assert_true(asprintf(&doc, "network: {allow: ['%s.x', '*.%s', '%s'], access: allowlist}\n",
			     label, label, name) > 0);
	cfg = parse_ok(doc);
	assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_ALLOWLIST);
	assert_int_equal(strlen(dsb_config_network_allow(cfg)[2]), 253);
	dsb_config_free(cfg);
	free(doc);

	/* Ports on rules, canonical; address ranges, canonical. */
	static const char *const ported[] = {"registry.npmjs.org:443",
					     "*.debian.org:80",
					     "[2001:db8::1]:22",
					     "10.0.0.1:*",
					     "x.test:*",
					     NULL};
	static const char *const ranges[] = {"10.0.0.0/8", "fd00::/8", "192.168.1.7/32",
					     "2001:db8::1/128", NULL};
	cfg = parse_ok(
		"network:\n"
		"  allow: ['Registry.NPMjs.org.:443', '*.Debian.ORG:80', '[2001:DB8::1]:22',\n"
		"          '[::ffff:10.0.0.1]:*', 'X.test:*']\n"
		"  allowPrivate: [10.0.0.0/8, 'FD00::/8', 192.168.1.7, '2001:db8::1']\n");
	assert_strv_equal(dsb_config_network_allow(cfg), ported);
	assert_strv_equal(dsb_config_network_allow_private(cfg), ranges);
	dsb_config_free(cfg);
	static const char *const bad_ranges[][2] = {
		{"10.0.0.1/8", "bits set past the prefix"},
		{"10.0.0.0/33", "prefix length is 0 to 32"},
		{"fd00::/129", "prefix length is 0 to 128"},
		{"10.0.0.0/", "prefix length"},
		{"10.0.0/8", "ADDRESS/PREFIX"},
		{"/8", "ADDRESS/PREFIX"},
		{"example.com", "ADDRESS/PREFIX"},
	};
	for (size_t i = 0; i < ELEMENTSOF(bad_ranges); i++) {
		assert_true(asprintf(&doc, "network: {allowPrivate: ['%s']}\n", bad_ranges[i][0]) >
			    0);
		dsb_error err = parse_fail(doc, strlen(doc), "test.yaml");
		assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
		if (!strstr(err.message, "invalid address range") ||
		    !strstr(err.message, bad_ranges[i][1]))
			fail_msg("\"%s\": %s", bad_ranges[i][0], err.message);
		free(doc);
	}
	doc = NULL;

	/* The accessors of no configuration: nothing, never NULL. */
	assert_int_equal(dsb_config_network_access(NULL), _DSB_NETWORK_ACCESS_INVALID);
	assert_null(dsb_config_network_allow_private(NULL)[0]);
	assert_null(dsb_config_network_allow(NULL)[0]);
	assert_null(dsb_config_network_deny(NULL)[0]);
	assert_null(dsb_config_network_hosts(NULL)[0]);
	assert_int_equal(dsb_config_network_proxy_port(NULL), 0);
}

/* Each invalid network value is refused where it stands, named. */
static void test_network_invalid(void **state)
{
	/* Host patterns: each refused in allow (and deny) at its own column, named. */
	static const char *const bad_patterns[] = {
		"",
		"*",
		"*foo",
		"a*.b",
		"*.*.b",
		"*.",
		"a b",
		"a..b",
		".a",
		".",
		"..",
		"a_b",
		"http://a.b",
		"a.b/x",
		"[1.2.3.4]",
		"1.2.3.256",
		"127.1",
		"2130706433",
		"0x7f000001",
		"*.0.0.1",
		"[::1",
		"fe80::1%eth0",
		"::1]",
		"a.b..",
		"é.test",
		/* Ports: 1 to 65535 or "*", after a name, an IPv4 address or a bracketed IPv6. */
		"a.b:0",
		"a.b:65536",
		"a.b:",
		"a.b:http",
		"a.b:+80",
		"a.b:8 0",
		"a.b:**",
		"[::1]:0",
		"[::1]x",
		":443",
		"*:443",
		"1.2.3.4:99999",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad_patterns); i++) {
		static const char *const keys[] = {"allow", "deny"};
		for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
			char *doc = NULL, *prefix = NULL;
			/* Column: after "  KEY: [ok.test, ". */
			assert_true(asprintf(&doc, "network:\n  %s: [ok.test, '%s']\n", keys[k],
					     bad_patterns[i]) > 0);
			assert_true(asprintf(&prefix,
					     "test.yaml:2:%zu: network.%s: invalid host pattern "
					     "\"%s\": ",
					     strlen("  : [ok.test, ") + strlen(keys[k]) + 1,
					     keys[k], bad_patterns[i]) > 0);
			dsb_error err = parse_fail(doc, strlen(doc), "test.yaml");
			assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
			assert_string_equal(err.subject,
					    keys[k][0] == 'a' ? "network.allow" : "network.deny");
			if (strncmp(err.message, prefix, strlen(prefix)) != 0)
				fail_msg("\"%s\": %s", bad_patterns[i], err.message);
			free(prefix);
			free(doc);
		}
	}

	/* A label of 64 characters, a name of 254. */
	char label[65], name[255], *doc = NULL;
	memset(label, 'a', 64);
	label[64] = '\0';
	for (size_t i = 0; i < 254; i++)
		name[i] = i % 2 ? 'b' : '.';
	name[0] = 'b';
	name[254] = '\0';
	const char *const long_ones[] = {label, name};
	for (size_t i = 0; i < ELEMENTSOF(long_ones); i++) {
		assert_true(asprintf(&doc, "network: {allow: [x.%s]}\n", long_ones[i]) > 0);
		dsb_error err = parse_fail(doc, strlen(doc), "test.yaml");
		assert_non_null(strstr(err.message, "test.yaml:1:19: network.allow: invalid host "
						    "pattern"));
		assert_non_null(strstr(err.message, i == 0 ? "label longer than 63 characters"
							   : "longer than 253 characters"));
		free(doc);
	}

	static const struct {
		const char *yaml;
		const char *subject;
		const char *message;
	} cases[] = {
		{"network:\n  access: some\n", "network.access",
		 "test.yaml:2:11: network.access: invalid access \"some\" (accepted: full, none, "
		 "allowlist)"},
		{"network:\n  access: Full\n", "network.access",
		 "test.yaml:2:11: network.access: invalid access \"Full\" (accepted: full, none, "
		 "allowlist)"},
		{"network:\n  access: [none]\n", "network.access",
		 "test.yaml:2:11: network.access: expected a string, got a list"},
		{"network:\n  allow: registry.npmjs.org\n", "network.allow",
		 "test.yaml:2:10: network.allow: expected a list of strings, got a string"},
		{"network:\n  allow: ['*foo']\n", "network.allow",
		 "test.yaml:2:11: network.allow: invalid host pattern \"*foo\": a wildcard only as "
		 "a leading \"*.\" (a host name, \"*.\" and a domain, or an IP address, and "
		 "optionally \":PORT\")"},
		{"network:\n  access: allowlist\n", "network.access",
		 "test.yaml:2:11: network.access: allowlist needs at least one allowed host "
		 "(network.allow is empty)"},
		{"network:\n  allow: []\n  deny: [a.test]\n  access: allowlist\n", "network.access",
		 "test.yaml:4:11: network.access: allowlist needs at least one allowed host "
		 "(network.allow is empty)"},
		{"network:\n  proxyPort: 65536\n", "network.proxyPort",
		 "test.yaml:2:14: network.proxyPort: invalid value \"65536\": expected 0 (any "
		 "free port) or a port number from 1 to 65535"},
		{"network:\n  proxyPort: -1\n", "network.proxyPort",
		 "test.yaml:2:14: network.proxyPort: invalid value \"-1\": expected 0 (any "
		 "free port) or a port number from 1 to 65535"},
		{"network:\n  proxyPort: 080\n", "network.proxyPort",
		 "test.yaml:2:14: network.proxyPort: invalid value \"080\": expected 0 (any "
		 "free port) or a port number from 1 to 65535"},
		{"network:\n  proxyPort: 80.5\n", "network.proxyPort",
		 "test.yaml:2:14: network.proxyPort: invalid value \"80.5\": expected 0 (any "
		 "free port) or a port number from 1 to 65535"},
		{"network:\n  proxyPort: '80'\n", "network.proxyPort",
		 "test.yaml:2:14: network.proxyPort: expected a number, got a string"},
		{"network:\n  hosts: [a.test]\n", "network.hosts",
		 "test.yaml:2:10: network.hosts: expected a mapping of host names to IP addresses, "
		 "got a list"},
		{"network:\n  hosts: {'*.a.test': 127.0.0.1}\n", "network.hosts",
		 "test.yaml:2:11: network.hosts: invalid host name \"*.a.test\": an exact host "
		 "name, no wildcard"},
		{"network:\n  hosts: {10.0.0.1: 127.0.0.1}\n", "network.hosts",
		 "test.yaml:2:11: network.hosts: invalid host name \"10.0.0.1\": an address where "
		 "a host name is expected"},
		{"network:\n  hosts: {a.test: localhost}\n", "network.hosts",
		 "test.yaml:2:19: network.hosts: invalid address \"localhost\" for \"a.test\": an "
		 "IPv4 or IPv6 address is expected"},
		{"network:\n  hosts: {a.test: '127.0.0.1:80'}\n", "network.hosts",
		 "test.yaml:2:19: network.hosts: invalid address \"127.0.0.1:80\" for \"a.test\": "
		 "an IPv4 or IPv6 address is expected"},
		{"network:\n  hosts: {a.test: 127.0.0.1, A.Test.: ::1}\n", "network.hosts",
		 "test.yaml:2:30: network.hosts: duplicate host \"a.test\""},
		{"network:\n  hosts: {a.test: [127.0.0.1]}\n", "network.hosts",
		 "test.yaml:2:19: network.hosts: expected a string, got a list"},
		{"network:\n  port: 1\n", "network",
		 "test.yaml:2:3: network: unknown key \"port\" (accepted: access, allow, deny, "
		 "proxyPort, hosts, allowPrivate)"},
		{"network: none\n", "network",
		 "test.yaml:1:10: network: expected a mapping, got a string"},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		dsb_error err = parse_fail(cases[i].yaml, strlen(cases[i].yaml), "test.yaml");
		assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
		assert_string_equal(err.subject, cases[i].subject);
		assert_string_equal(err.message, cases[i].message);
	}
}

/* The --network override: what dsb_config_set_network_access() takes and refuses. */
/* limits: counts and sizes as people write them; 0 is none; set explicitly either way. */
static void test_limits_section(void **state)
{
	(void)state;
	dsb_limits l;
	dsb_config *cfg = parse_ok("limits:\n  processes: 300\n  memoryBytes: 2G\n"
				   "  tmpBytes: \"512MiB\"\n  fileBytes: 0\n");
	dsb_config_limits(cfg, &l);
	assert_int_equal(l.value[DSB_LIMIT_PROCESSES], 300);
	assert_true(l.value[DSB_LIMIT_MEMORY] == (uint64_t)2 << 30);
	assert_true(l.value[DSB_LIMIT_TMP_BYTES] == (uint64_t)512 << 20);
	assert_int_equal(l.value[DSB_LIMIT_FILE_BYTES], 0);
	assert_int_equal(l.set, (1u << DSB_LIMIT_PROCESSES) | (1u << DSB_LIMIT_MEMORY) |
					(1u << DSB_LIMIT_TMP_BYTES) | (1u << DSB_LIMIT_FILE_BYTES));
	/* A flag over the file: only what it sets. */
	dsb_limits flag = {.set = 1u << DSB_LIMIT_MEMORY};
	flag.value[DSB_LIMIT_MEMORY] = 256u << 20;
	assert_int_equal(dsb_config_set_limits(cfg, &flag, NULL), 0);
	dsb_config_limits(cfg, &l);
	assert_true(l.value[DSB_LIMIT_MEMORY] == 256u << 20);
	assert_int_equal(l.value[DSB_LIMIT_PROCESSES], 300);
	dsb_config_free(cfg);

	/* Nothing set: every default is the provider's. */
	cfg = parse_ok("");
	dsb_config_limits(cfg, &l);
	assert_int_equal(l.set, 0);
	dsb_config_free(cfg);

	static const struct {
		const char *yaml, *message;
	} bad[] = {
		{"limits: {processes: 2G}",
		 "<config>:1:21: limits.processes: invalid value \"2G\" (a whole number; 0 for "
		 "none)"},
		{"limits: {memoryBytes: 2X}",
		 "<config>:1:23: limits.memoryBytes: invalid value \"2X\" (a number of "
		 "bytes, or one with K, M, G or T: 512M, 2G; 0 for none)"},
		{"limits: {memoryBytes: -1}",
		 "<config>:1:23: limits.memoryBytes: invalid value \"-1\" (a number of "
		 "bytes, or one with K, M, G or T: 512M, 2G; 0 for none)"},
		{"limits: {cpuSeconds: 1.5}",
		 "<config>:1:22: limits.cpuSeconds: invalid value \"1.5\" (a whole number; 0 for "
		 "none)"},
		{"limits: {memoryBytes: 99999999999T}",
		 "<config>:1:23: limits.memoryBytes: invalid value \"99999999999T\" (a number of "
		 "bytes, or one with K, M, G or T: 512M, 2G; 0 for none)"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dsb_error err = parse_fail(bad[i].yaml, strlen(bad[i].yaml), NULL);
		assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
		assert_string_equal(err.message, bad[i].message);
	}
}

/* The flags' parser: the same words, named by the flag. */
static void test_limit_parse(void **state)
{
	(void)state;
	uint64_t v = 1;
	dsb_error err = {0};
	assert_int_equal(dsb_limit_parse(DSB_LIMIT_MEMORY, "512M", "--memory", &v, &err), 0);
	assert_true(v == 512u << 20);
	assert_int_equal(dsb_limit_parse(DSB_LIMIT_MEMORY, "1k", "--memory", &v, &err), 0);
	assert_int_equal(v, 1024);
	assert_int_equal(dsb_limit_parse(DSB_LIMIT_PROCESSES, "0", "--max-processes", &v, &err), 0);
	assert_int_equal(v, 0);
	assert_true(dsb_limit_parse(DSB_LIMIT_PROCESSES, "10k", "--max-processes", &v, &err) < 0);
	assert_string_equal(
		err.message,
		"--max-processes: invalid value \"10k\" (a whole number; 0 for no limit)");
	assert_string_equal(err.subject, "--max-processes");
	assert_true(dsb_limit_parse(DSB_LIMIT_MEMORY, "", "--memory", &v, &err) < 0);
	assert_true(dsb_limit_parse(DSB_LIMIT_MEMORY, "M", "--memory", &v, &err) < 0);
	assert_true(dsb_limit_parse(DSB_LIMIT_MEMORY, "5MB ", "--memory", &v, &err) < 0);
	assert_true(dsb_limit_parse(DSB_LIMIT_MEMORY, "4611686018427387905", "--memory", &v, &err) <
		    0);
	assert_int_equal(dsb_limit_from_string("memoryBytes"), DSB_LIMIT_MEMORY);
	assert_int_equal(dsb_limit_from_string("memory"), _DSB_LIMIT_INVALID);
	assert_null(dsb_limit_to_string(_DSB_LIMIT_MAX));
}

static void test_network_set_access(void **state)
{
	dsb_config *cfg = dsb_config_new();
	dsb_error err = {0};

	assert_int_equal(dsb_config_set_network_access(cfg, DSB_NETWORK_NONE, &err), 0);
	assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_NONE);
	/* An allowlist that allows nothing: refused, the level left alone. */
	assert_int_equal(dsb_config_set_network_access(cfg, DSB_NETWORK_ALLOWLIST, &err),
			 -DSB_E_CONFIG_INVALID);
	assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
	assert_non_null(strstr(err.message, "allowlist needs at least one allowed host"));
	assert_string_equal(err.subject, "network.allow");
	assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_NONE);
	static const int invalid[] = {_DSB_NETWORK_ACCESS_INVALID, _DSB_NETWORK_ACCESS_MAX, -2, 42};
	for (size_t i = 0; i < ELEMENTSOF(invalid); i++) {
		err = (dsb_error){0};
		assert_int_equal(
			dsb_config_set_network_access(cfg, (dsb_network_access)invalid[i], &err),
			-DSB_E_INVALID_ARGS);
		assert_int_equal(err.code, DSB_E_INVALID_ARGS);
		assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_NONE);
	}
	assert_int_equal(dsb_config_set_network_access(NULL, DSB_NETWORK_FULL, NULL),
			 -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_config_set_network_access(cfg, DSB_NETWORK_FULL, NULL), 0);
	assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_FULL);
	dsb_config_free(cfg);

	/* With a host allowed, the flag may ask for the allowlist; and lift it again. */
	cfg = parse_ok("network: {access: none, allow: [registry.test]}\n");
	assert_int_equal(dsb_config_set_network_access(cfg, DSB_NETWORK_ALLOWLIST, &err), 0);
	assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_ALLOWLIST);
	assert_int_equal(dsb_config_set_network_access(cfg, DSB_NETWORK_FULL, &err), 0);
	assert_int_equal(dsb_config_network_access(cfg), DSB_NETWORK_FULL);
	dsb_config_free(cfg);

	/* The vocabulary, both ways, exactly spelled. */
	static const char *const names[] = {"full", "none", "allowlist"};
	for (int a = 0; a < _DSB_NETWORK_ACCESS_MAX; a++) {
		assert_string_equal(dsb_network_access_to_string((dsb_network_access)a), names[a]);
		assert_int_equal(dsb_network_access_from_string(names[a]), a);
	}
	assert_null(dsb_network_access_to_string(_DSB_NETWORK_ACCESS_INVALID));
	assert_null(dsb_network_access_to_string(_DSB_NETWORK_ACCESS_MAX));
	assert_int_equal(dsb_network_access_from_string(NULL), _DSB_NETWORK_ACCESS_INVALID);
	assert_int_equal(dsb_network_access_from_string("Full"), _DSB_NETWORK_ACCESS_INVALID);
	assert_int_equal(dsb_network_access_from_string(""), _DSB_NETWORK_ACCESS_INVALID);
	assert_int_equal(dsb_network_access_from_string("allow"), _DSB_NETWORK_ACCESS_INVALID);
}

/* dsb_network_host_allowed(): how a host is matched against allow and deny. */
static void test_network_host_allowed(void **state)
{
	char *const allow[] = {
		(char *)"registry.npmjs.org",
		(char *)"*.debian.org",
		(char *)"127.0.0.1",
		(char *)"2001:db8::1",
		NULL,
	};
	char *const deny[] = {(char *)"evil.debian.org", NULL};
	static const struct {
		const char *host;
		bool allowed;
	} cases[] = {
		/* Exact names, any case, one trailing dot. */
		{"registry.npmjs.org", true},
		{"REGISTRY.NPMjs.Org.", true},
		{"registry.npmjs.org..", false},
		{"npmjs.org", false},
		{"x.registry.npmjs.org", false},
		{"registry.npmjs.org.evil.test", false},
		/* A suffix pattern: names below the domain, not the domain itself. */
		{"deb.debian.org", true},
		{"a.b.debian.org", true},
		{"Security.Debian.Org.", true},
		{"debian.org", false},
		{"xdebian.org", false},
		{"debian.org.evil.test", false},
		/* Deny wins (an exact deny: not what lies below it). */
		{"evil.debian.org", false},
		{"EVIL.debian.org.", false},
		{"sub.evil.debian.org", true},
		/* IP literals: only the same address, however spelled. */
		{"127.0.0.1", true},
		{"127.0.0.2", false},
		{"::ffff:127.0.0.1", true},
		{"[::ffff:127.0.0.1]", true},
		{"2001:db8::1", true},
		{"[2001:db8::1]", true},
		{"2001:DB8:0:0:0:0:0:1", true},
		{"[2001:db8::2]", false},
		{"::1", false},
		/* Numeric shorthands the resolver takes for 127.0.0.1 are no name. */
		{"127.1", false},
		{"2130706433", false},
		{"0x7f000001", false},
		{"0177.0.0.1", false},
		{"[127.0.0.1]", false},
		/* What is neither a name nor an address. */
		{"", false},
		{".", false},
		{"*.debian.org", false},
		{"deb.debian.org:443", false},
		{"deb debian.org", false},
		{"deb_x.debian.org", false},
		{"localhost", false},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		if (dsb_network_host_allowed(allow, deny, cases[i].host) != cases[i].allowed)
			fail_msg("\"%s\": expected %s", cases[i].host,
				 cases[i].allowed ? "allowed" : "refused");

	/* The control: without the deny list the denied host is allowed by the suffix. */
	assert_true(dsb_network_host_allowed(allow, NULL, "evil.debian.org"));
	/* A suffix deny covers every name below it, over an exact allow. */
	char *const exact[] = {(char *)"deb.debian.org", NULL};
	char *const below[] = {(char *)"*.debian.org", NULL};
	assert_true(dsb_network_host_allowed(exact, NULL, "deb.debian.org"));
	assert_false(dsb_network_host_allowed(exact, below, "deb.debian.org"));
	/* Patterns not in canonical spelling still match; invalid ones match nothing. */
	char *const spelled[] = {(char *)"*.Debian.ORG.", (char *)"[2001:DB8::1]", (char *)"*",
				 (char *)"", NULL};
	assert_true(dsb_network_host_allowed(spelled, NULL, "deb.debian.org"));
	assert_true(dsb_network_host_allowed(spelled, NULL, "2001:db8::1"));
	assert_false(dsb_network_host_allowed(spelled, NULL, "npmjs.org"));
	/* Nothing allowed, no host: nothing passes. */
	assert_false(dsb_network_host_allowed(NULL, NULL, "deb.debian.org"));
	assert_false(dsb_network_host_allowed(allow, deny, NULL));

	/* Ports: a rule without one allows 80 and 443; deny without one denies every port. */
	char *const ports[] = {(char *)"plain.test",	(char *)"ssh.test:22",
			       (char *)"*.any.test:*",	(char *)"[2001:db8::1]:8443",
			       (char *)"10.0.0.1:5432", NULL};
	char *const no_ports[] = {(char *)"*.any.test:25", (char *)"gone.any.test", NULL};
	static const struct {
		const char *host;
		unsigned port;
		bool allowed;
	} port_cases[] = {
		{"plain.test", 443, true},   {"plain.test", 80, true},
		{"plain.test", 22, false},   {"plain.test", 8080, false},
		{"ssh.test", 22, true},	     {"ssh.test", 443, false},
		{"a.any.test", 1, true},     {"a.any.test", 65535, true},
		{"a.any.test", 25, false},   {"gone.any.test", 443, false},
		{"2001:db8::1", 8443, true}, {"[2001:db8::1]", 443, false},
		{"10.0.0.1", 5432, true},    {"10.0.0.1", 443, false},
		{"plain.test", 0, false},    {"plain.test", 65536, false},
	};
	for (size_t i = 0; i < ELEMENTSOF(port_cases); i++)
		if (dsb_network_host_port_allowed(ports, no_ports, port_cases[i].host,
						  port_cases[i].port) != port_cases[i].allowed)
			fail_msg("\"%s\" port %u: expected %s", port_cases[i].host,
				 port_cases[i].port, port_cases[i].allowed ? "allowed" : "refused");
	/* Some port: what a rule names, or any that no deny names. */
	assert_true(dsb_network_host_allowed(ports, no_ports, "ssh.test"));
	assert_true(dsb_network_host_allowed(ports, no_ports, "a.any.test"));
	assert_false(dsb_network_host_allowed(ports, no_ports, "gone.any.test"));
	char *const only_22[] = {(char *)"x.test:22", NULL}, *const not_22[] = {(char *)"x.test:22",
										NULL};
	assert_false(dsb_network_host_allowed(only_22, not_22, "x.test"));
}

int main(void)
{
	/* One test per line, like the table of contents it is. */
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_full_document),
		cmocka_unit_test(test_partial_document),
		cmocka_unit_test(test_scrub_env),
		cmocka_unit_test(test_invalid_golden),
		cmocka_unit_test(test_valid_files),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_error_details),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_protected_paths_keys),
		cmocka_unit_test(test_approval_server_keys),
		cmocka_unit_test(test_protected_paths_invalid),
		cmocka_unit_test(test_config_file_is_canonical),
		cmocka_unit_test(test_apply_env),
		cmocka_unit_test(test_mode_parse),
		cmocka_unit_test(test_network_keys),
		cmocka_unit_test(test_network_invalid),
		cmocka_unit_test(test_limits_section),
		cmocka_unit_test(test_limit_parse),
		cmocka_unit_test(test_network_set_access),
		cmocka_unit_test(test_network_host_allowed),
	};
	/* clang-format on */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
