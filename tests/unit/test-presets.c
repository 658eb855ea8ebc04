/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of permission presets (dsh-compat §8.6; DSH's permission-presets.spec.ts, §11.27): the
 * preset fold, the table order, derive() with its tie-break and "custom", the command-path
 * apply (record the choice, repair only the changed knobs), the default preset and pinning of
 * fresh, seeded and partial sessions. Every assertion on the log compares exact event lines,
 * with "time" and random ids replaced by T and U.
 *
 * Each test gets a private store under a temp dir T:
 *
 *   T/store/--<projectKey>--/<encodedId>/session.jsonl     sessions made by dsb_session_create
 *   T/<name>.jsonl                                         logs written by hand (seeded sessions)
 *
 * Most cases run over the package's own two-entry table (workspace-write, danger-full-access)
 * with workspace-write as the executor default, configured through YAML as DSH's tests mount
 * the service; the deployment's three-entry default table has its own cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "src/approval/approval.h"
#include "src/policy/policy.h"
#include "src/session/session.h"
#include "helpers.h"

typedef struct fixture {
	char *dir;
	dsb_store *store;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = dsb_test_mkdtemp();
	char *root = NULL;
	assert_true(asprintf(&root, "%s/store", f->dir) > 0);
	assert_int_equal(dsb_store_open(root, &f->store, NULL), 0);
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

/* --- configurations ------------------------------------------------------------------------- */

#define WW_DESCRIPTION                                                                           \
	"Write inside the workspace and permitted temporary directories; wider retries require " \
	"approval."
#define DFA_DESCRIPTION "Full file access without approval prompts."

/* The package's default table, spelled out in YAML. */
#define PACKAGE_TABLE                                 \
	"permission:\n"                               \
	"  presets:\n"                                \
	"    workspace-write:\n"                      \
	"      sandbox: workspace-write\n"            \
	"      approval: ask\n"                       \
	"      name: workspace-write\n"               \
	"      description: \"" WW_DESCRIPTION "\"\n" \
	"    danger-full-access:\n"                   \
	"      sandbox: danger-full-access\n"         \
	"      approval: never\n"                     \
	"      name: danger-full-access\n"            \
	"      description: \"" DFA_DESCRIPTION "\"\n"

static dsb_config *parse_cfg(const char *yaml)
{
	dsb_config *cfg = NULL;
	dsb_error err = {0};
	if (dsb_config_parse(yaml, strlen(yaml), "test.yaml", &cfg, &err) != 0)
		fail_msg("parsing failed: %s\n%s", err.message, yaml);
	return cfg;
}

/*
 * DSH's mounted(): executor default workspace-write, approval config @approval, the package
 * table (or @presets_yaml, a whole `permission:` section), and @default_preset if non-NULL.
 */
static dsb_config *mounted(const char *approval, const char *presets_yaml,
			   const char *default_preset)
{
	char *yaml = NULL;
	assert_true(asprintf(&yaml,
			     "sandbox-policy: {mode: workspace-write}\n"
			     "approval: {policy: %s}\n"
			     "%s%s%s%s",
			     approval, presets_yaml ? presets_yaml : PACKAGE_TABLE,
			     default_preset ? "  defaultPreset: " : "",
			     default_preset ? default_preset : "", default_preset ? "\n" : "") > 0);
	dsb_config *cfg = parse_cfg(yaml);
	free(yaml);
	return cfg;
}

/* --- sessions and their logs ---------------------------------------------------------------- */

static dsb_session *fresh_session(fixture *f)
{
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, f->dir, &s, NULL), 0);
	return s;
}

#define HEADER                                                                   \
	"{\"type\":\"session\",\"version\":0,\"id\":\"seeded\",\"createdAt\":1," \
	"\"delegationDepth\":0}\n"

/* A log written by hand at T/@name.jsonl: the header, then @events (complete lines). */
static dsb_session *handmade_session(fixture *f, const char *name, const char *events)
{
	char *path = NULL, *text = NULL;
	assert_true(asprintf(&path, "%s/%s.jsonl", f->dir, name) > 0);
	assert_true(asprintf(&text, "%s%s", HEADER, events) > 0);
	dsb_test_write_file(path, text, strlen(text));
	dsb_session *s = NULL;
	dsb_error err = {0};
	if (dsb_session_open(f->store, path, &s, &err) != 0)
		fail_msg("opening %s: %s", path, err.message);
	free(text);
	free(path);
	return s;
}

/* Replaces the digits after every "time": with T and the value of every 36-char "id" with U. */
static char *normalise(const char *line)
{
	strbuf sb = STRBUF_INIT;
	for (const char *p = line; *p;) {
		if (strncmp(p, "\"time\":", 7) == 0) {
			assert_int_equal(strbuf_puts(&sb, "\"time\":T"), 0);
			p += 7;
			while (*p >= '0' && *p <= '9')
				p++;
		} else if (strncmp(p, "\"id\":\"", 6) == 0 && strlen(p) > 42 && p[42] == '"') {
			assert_int_equal(strbuf_puts(&sb, "\"id\":\"U\""), 0);
			p += 43;
		} else
			assert_int_equal(strbuf_putc(&sb, *p++), 0);
	}
	return strbuf_take(&sb);
}

/* The log's event lines from index @from on, normalised, each ending in '\n'. */
static char *events_from(dsb_session *s, size_t from)
{
	size_t len;
	char *data = dsb_test_read_file(dsb_session_path(s), &len);
	assert_non_null(data);
	strbuf sb = STRBUF_INIT;
	assert_int_equal(strbuf_puts(&sb, ""), 0);
	size_t index = 0;
	char *save = NULL;
	bool header = true;
	for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (header) {
			header = false;
			continue;
		}
		if (index++ < from)
			continue;
		char *n = normalise(line);
		assert_int_equal(strbuf_printf(&sb, "%s\n", n), 0);
		free(n);
	}
	free(data);
	return strbuf_take(&sb);
}

static size_t n_events(dsb_session *s)
{
	char *all = events_from(s, 0);
	size_t n = 0;
	for (const char *p = all; *p; p++)
		n += *p == '\n';
	free(all);
	return n;
}

static void assert_events_from(dsb_session *s, size_t from, const char *expected)
{
	char *actual = events_from(s, from);
	if (strcmp(actual, expected) != 0)
		fail_msg("log events from #%zu:\n%s\nexpected:\n%s", from, actual, expected);
	free(actual);
}

static void assert_current(dsb_session *s, const dsb_config *cfg, const char *expected)
{
	char *name = NULL;
	dsb_error err = {0};
	if (presets_current(s, cfg, &name, &err) != 0)
		fail_msg("presets_current: %s", err.message);
	assert_string_equal(name, expected);
	free(name);
}

static void apply_ok(dsb_session *s, const dsb_config *cfg, const char *name)
{
	dsb_error err = {0};
	if (presets_apply(s, cfg, name, &err) != 0)
		fail_msg("presets_apply(%s): %s", name, err.message);
}

static void pin_ok(dsb_session *s, const dsb_config *cfg)
{
	dsb_error err = {0};
	if (presets_pin(s, cfg, &err) != 0)
		fail_msg("presets_pin: %s", err.message);
}

static void append_ok(dsb_session *s, const char *type, const char *data)
{
	assert_int_equal(dsb_session_append(s, type, data, NULL, NULL), 0);
}

/* One event line as the log holds it after normalise(). */
#define EV(seq, type, data) \
	"{\"type\":\"" type "\",\"seq\":" #seq ",\"time\":T,\"data\":" data "}\n"
#define PRESET(seq, name)   EV(seq, "permission/preset", "{\"preset\":\"" name "\"}")
#define MODE(seq, mode)	    EV(seq, "sandbox/mode", "{\"mode\":\"" mode "\"}")
#define POLICY(seq, policy) EV(seq, "approval/policy", "{\"policy\":\"" policy "\"}")
/* The live switch's notice to the model (dsh-compat §8.5), appended by approval_set_policy(). */
#define NOTICE(seq, from, to)                                                                      \
	"{\"type\":\"user/message\",\"seq\":" #seq ",\"time\":T,\"data\":{\"content\":[{\"type\":" \
	"\"text\",\"text\":\"The approval policy changed from \\\"" from "\\\" to \\\"" to         \
	"\\\" (changed by the user).\"}],\"source\":{\"kind\":\"plugin\",\"plugin\":"              \
	"\"user-approval\"},\"role\":\"user\",\"id\":\"U\"},\"surfaceOp\":\"append\"}\n"

/* --- #1-4: the fold, the table, current() ---------------------------------------------------- */

/* #1 effectivePermissionPreset folds to the last event, stepping over other types. */
static void test_preset_fold(void **state)
{
	fixture *f = *state;
	dsb_session *s = fresh_session(f);
	char *preset = NULL;
	assert_int_equal(dsb_session_fold_preset(s, &preset, NULL), 0);
	assert_null(preset);
	append_ok(s, "permission/preset", "{\"preset\":\"danger-full-access\"}");
	append_ok(s, "permission/preset", "{\"preset\":\"workspace-write\"}");
	assert_int_equal(dsb_session_fold_preset(s, &preset, NULL), 1);
	assert_string_equal(preset, "workspace-write");
	free(preset);
	append_ok(s, "sandbox/mode", "{\"mode\":\"read-only\"}");
	assert_int_equal(dsb_session_fold_preset(s, &preset, NULL), 1);
	assert_string_equal(preset, "workspace-write");
	free(preset);
	dsb_session_free(s);
}

/* #2 The table keeps declaration order; an unknown name is refused and appends nothing. */
static void test_table_order_and_unknown(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	assert_int_equal(cfg->n_presets, 2);
	assert_string_equal(cfg->presets[0].key, "workspace-write");
	assert_string_equal(cfg->presets[1].key, "danger-full-access");
	assert_int_equal(cfg->presets[1].sandbox, DSB_MODE_DANGER_FULL_ACCESS);
	assert_int_equal(cfg->presets[1].approval, DSB_APPROVAL_NEVER);

	dsb_session *s = fresh_session(f);
	dsb_error err = {0};
	assert_int_equal(presets_apply(s, cfg, "plan", &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(
		err.message,
		"unknown preset \"plan\" (available: workspace-write, danger-full-access)");
	assert_int_equal(n_events(s), 0);
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #3 current() derives from the effective knobs. */
static void test_current_derives_from_knobs(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	dsb_session *s = fresh_session(f);
	assert_current(s, cfg, "workspace-write");
	apply_ok(s, cfg, "danger-full-access");
	assert_current(s, cfg, "danger-full-access");
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #4 Knobs matching no entry derive custom, a state: never a switch target. */
static void test_unmatched_knobs_derive_custom(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	dsb_session *s = fresh_session(f);
	append_ok(s, "sandbox/mode", "{\"mode\":\"read-only\"}");
	assert_current(s, cfg, "custom");
	apply_ok(s, cfg, "danger-full-access");
	assert_current(s, cfg, "danger-full-access");

	dsb_error err = {0};
	size_t before = n_events(s);
	assert_int_equal(presets_apply(s, cfg, "custom", &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(
		err.message,
		"unknown preset \"custom\" (available: workspace-write, danger-full-access)");
	assert_int_equal(n_events(s), before);
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #5 Defaults outside the table derive custom even with an explicit default preset. */
static void test_defaults_outside_table_with_explicit_default(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("never", NULL, "workspace-write");
	const dsb_preset *def = NULL;
	assert_int_equal(presets_default(cfg, &def, NULL), 0);
	assert_string_equal(def->key, "workspace-write");
	dsb_session *s = fresh_session(f);
	assert_current(s, cfg, "custom");
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #6 The recorded preset breaks a bundle tie; once stale, table order decides. */
static void test_fold_breaks_ties(void **state)
{
	fixture *f = *state;
	dsb_config *cfg =
		mounted("ask",
			"permission:\n"
			"  presets:\n"
			"    workspace-write: {sandbox: workspace-write, approval: ask}\n"
			"    agentish: {sandbox: workspace-write, approval: ask}\n"
			"    danger-full-access: {sandbox: danger-full-access, approval: never}\n",
			NULL);
	dsb_session *s = fresh_session(f);
	assert_current(s, cfg, "workspace-write");
	apply_ok(s, cfg, "agentish");
	/* The bundle is already effective: only the choice is recorded. */
	assert_events_from(s, 0, PRESET(0, "agentish"));
	assert_current(s, cfg, "agentish");
	append_ok(s, "approval/policy", "{\"policy\":\"never\"}");
	append_ok(s, "sandbox/mode", "{\"mode\":\"danger-full-access\"}");
	assert_current(s, cfg, "danger-full-access");
	/* Back on the shared bundle, the stale record matches again and wins over table order. */
	append_ok(s, "approval/policy", "{\"policy\":\"ask\"}");
	append_ok(s, "sandbox/mode", "{\"mode\":\"workspace-write\"}");
	assert_current(s, cfg, "agentish");
	/* Selecting the first entry of the shared bundle records it, and touches no knob. */
	size_t before = n_events(s);
	apply_ok(s, cfg, "workspace-write");
	assert_events_from(s, before, PRESET(5, "workspace-write"));
	assert_current(s, cfg, "workspace-write");
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* --- #7-9: the write path -------------------------------------------------------------------- */

/* #7 A switch writes the preset, then each knob; the approval goes through the live switch. */
static void test_apply_writes_through(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	dsb_session *s = fresh_session(f);
	apply_ok(s, cfg, "danger-full-access");
	assert_events_from(s, 0,
			   PRESET(0, "danger-full-access") MODE(1, "danger-full-access")
				   POLICY(2, "never") NOTICE(3, "ask", "never"));
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #8 Selecting the effective preset appends nothing (clicks are not switches). */
static void test_apply_current_is_noop(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	dsb_session *s = fresh_session(f);
	apply_ok(s, cfg, "workspace-write");
	assert_int_equal(n_events(s), 0);
	apply_ok(s, cfg, "danger-full-access");
	size_t before = n_events(s);
	apply_ok(s, cfg, "danger-full-access");
	assert_int_equal(n_events(s), before);
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #9 Re-selecting from a drifted (custom) state re-records it and repairs only that knob. */
static void test_reassert_from_drift(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	dsb_session *s = fresh_session(f);
	apply_ok(s, cfg, "danger-full-access");
	append_ok(s, "sandbox/mode", "{\"mode\":\"read-only\"}");
	assert_current(s, cfg, "custom");
	size_t before = n_events(s);
	assert_int_equal(before, 5);
	apply_ok(s, cfg, "danger-full-access");
	assert_events_from(s, before,
			   PRESET(5, "danger-full-access") MODE(6, "danger-full-access"));

	/* A drifted approval knob is repaired through the live switch, with its notice. */
	append_ok(s, "approval/policy", "{\"policy\":\"ask\"}");
	before = n_events(s);
	apply_ok(s, cfg, "danger-full-access");
	assert_events_from(s, before,
			   PRESET(8, "danger-full-access") POLICY(9, "never")
				   NOTICE(10, "ask", "never"));
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* --- #12-13, #21: load requirements --------------------------------------------------------- */

/* #12 "custom" cannot name an entry: the loader refuses it, and so does presets_default(). */
static void test_custom_is_reserved(void **state)
{
	(void)state;
	static const char yaml[] =
		"permission:\n  presets:\n    custom: {sandbox: read-only, approval: ask}\n";
	dsb_config *cfg = NULL;
	dsb_error err = {0};
	assert_true(dsb_config_parse(yaml, strlen(yaml), "test.yaml", &cfg, &err) < 0);
	assert_non_null(strstr(err.message, "permission: \"custom\" is reserved for the derived "
					    "not-a-preset state and cannot name a table entry"));

	/* A table built in code. */
	cfg = dsb_config_new();
	free(cfg->presets[0].key);
	cfg->presets[0].key = strdup("custom");
	const dsb_preset *def = NULL;
	assert_int_equal(presets_default(cfg, &def, &err), -DSB_E_CONFIG_INVALID);
	assert_string_equal(err.message, "permission: \"custom\" is reserved for the derived "
					 "not-a-preset state and cannot name a table entry");
	assert_null(def);
	dsb_config_free(cfg);
}

/* #13 Without defaultPreset the composed defaults must match an entry; nothing is pinned. */
static void test_explicit_default_needed(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("never", NULL, NULL);
	const dsb_preset *def = NULL;
	dsb_error err = {0};
	assert_int_equal(presets_default(cfg, &def, &err), -DSB_E_CONFIG_INVALID);
	assert_string_equal(err.message,
			    "permission: composed sandbox and approval defaults match no preset; "
			    "configure defaultPreset explicitly");
	assert_null(def);

	dsb_session *s = fresh_session(f);
	memset(&err, 0, sizeof(err));
	assert_int_equal(presets_pin(s, cfg, &err), -DSB_E_CONFIG_INVALID);
	assert_non_null(strstr(err.message, "configure defaultPreset explicitly"));
	assert_int_equal(n_events(s), 0);
	dsb_session_free(s);
	dsb_config_free(cfg);

	/* An explicit default fixes it. */
	cfg = mounted("never", NULL, "danger-full-access");
	assert_int_equal(presets_default(cfg, &def, NULL), 0);
	assert_string_equal(def->key, "danger-full-access");
	dsb_config_free(cfg);
}

/* #21 A default outside the table: the loader refuses it; so does presets_default(). */
static void test_unknown_default_refused(void **state)
{
	(void)state;
	char *yaml = NULL;
	assert_true(asprintf(&yaml, "%s  defaultPreset: missing\n", PACKAGE_TABLE) > 0);
	dsb_config *cfg = NULL;
	dsb_error err = {0};
	assert_true(dsb_config_parse(yaml, strlen(yaml), "test.yaml", &cfg, &err) < 0);
	assert_int_equal(err.code, DSB_E_CONFIG_INVALID);
	assert_non_null(strstr(err.message, "permission: unknown preset \"missing\" (known: "
					    "workspace-write, danger-full-access)"));
	free(yaml);

	cfg = mounted("ask", NULL, NULL);
	cfg->default_preset = strdup("missing");
	const dsb_preset *def = NULL;
	assert_int_equal(presets_default(cfg, &def, &err), -DSB_E_CONFIG_INVALID);
	assert_string_equal(err.message, "permission: unknown preset \"missing\" (known: "
					 "workspace-write, danger-full-access)");
	/* DSH compares with "custom" before resolving. */
	free(cfg->default_preset);
	cfg->default_preset = strdup("custom");
	assert_int_equal(presets_default(cfg, &def, &err), -DSB_E_CONFIG_INVALID);
	assert_non_null(strstr(err.message, "configure defaultPreset explicitly"));
	dsb_config_free(cfg);
}

/* --- #15-20: pinning ------------------------------------------------------------------------- */

/* #15 A fresh session gets the current default whole; earlier sessions keep theirs. */
static void test_pin_fresh_sessions(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	dsb_session *first = fresh_session(f);
	pin_ok(first, cfg);
	assert_events_from(
		first, 0, PRESET(0, "workspace-write") MODE(1, "workspace-write") POLICY(2, "ask"));

	/* The user default changes: only sessions created afterwards see it. */
	dsb_config *later = mounted("ask", NULL, "danger-full-access");
	dsb_session *second = fresh_session(f);
	pin_ok(second, later);
	assert_current(first, later, "workspace-write");
	assert_current(second, later, "danger-full-access");
	assert_events_from(second, 0,
			   PRESET(0, "danger-full-access") MODE(1, "danger-full-access")
				   POLICY(2, "never"));

	/* Pinning again finds every fact recorded: nothing more. */
	pin_ok(first, later);
	assert_int_equal(n_events(first), 3);
	dsb_session_free(second);
	dsb_session_free(first);
	dsb_config_free(later);
	dsb_config_free(cfg);
}

/* #16 A seeded legacy session keeps the composition defaults, not the latest user default. */
static void test_pin_seeded_legacy(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, "danger-full-access");
	dsb_session *s = handmade_session(
		f, "legacy",
		"{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}\n"
		"{\"type\":\"turn/end\",\"seq\":1,\"time\":2,\"data\":{\"turn\":1,\"reason\":{"
		"\"kind\":\"completed\"}}}\n"
		"{\"type\":\"session/end-seed\",\"seq\":2,\"time\":3,\"data\":{}}\n");
	pin_ok(s, cfg);
	assert_current(s, cfg, "workspace-write");
	assert_events_from(
		s, 3, PRESET(3, "workspace-write") MODE(4, "workspace-write") POLICY(5, "ask"));
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #17 An empty resumed session: the end-seed, then the composition defaults' triplet. */
static void test_pin_empty_resumed(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, "danger-full-access");
	dsb_session *s = handmade_session(
		f, "empty", "{\"type\":\"session/end-seed\",\"seq\":0,\"time\":1,\"data\":{}}\n");
	pin_ok(s, cfg);
	assert_current(s, cfg, "workspace-write");
	assert_events_from(s, 0,
			   EV(0, "session/end-seed", "{}") PRESET(1, "workspace-write")
				   MODE(2, "workspace-write") POLICY(3, "ask"));
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #18 A session that existed before the service (no events at all) is pinned like a new one. */
static void test_pin_existing_session(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	dsb_session *s = handmade_session(f, "existing", "");
	assert_int_equal(n_events(s), 0);
	pin_ok(s, cfg);
	assert_events_from(
		s, 0, PRESET(0, "workspace-write") MODE(1, "workspace-write") POLICY(2, "ask"));
	assert_current(s, cfg, "workspace-write");
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #19 Only missing facts are filled; a seeded combination matching nothing stays custom. */
static void test_pin_partial_and_unmatched(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	dsb_session *s = handmade_session(
		f, "partial",
		"{\"type\":\"sandbox/mode\",\"seq\":0,\"time\":1,\"data\":{\"mode\":"
		"\"workspace-write\"}}\n"
		"{\"type\":\"approval/"
		"policy\",\"seq\":1,\"time\":2,\"data\":{\"policy\":\"ask\"}}\n"
		"{\"type\":\"session/end-seed\",\"seq\":2,\"time\":3,\"data\":{}}\n");
	pin_ok(s, cfg);
	assert_events_from(s, 3, PRESET(3, "workspace-write"));
	dsb_session_free(s);

	s = handmade_session(f, "custom",
			     "{\"type\":\"sandbox/"
			     "mode\",\"seq\":0,\"time\":1,\"data\":{\"mode\":\"read-only\"}}\n"
			     "{\"type\":\"approval/"
			     "policy\",\"seq\":1,\"time\":2,\"data\":{\"policy\":\"never\"}}\n"
			     "{\"type\":\"session/end-seed\",\"seq\":2,\"time\":3,\"data\":{}}\n");
	pin_ok(s, cfg);
	assert_current(s, cfg, "custom");
	assert_int_equal(n_events(s), 3);
	assert_events_from(s, 2, EV(2, "session/end-seed", "{}"));

	/* A partial log without an end-seed is no fresh session either: its knob is kept. */
	dsb_session_free(s);
	s = handmade_session(f, "mode-only",
			     "{\"type\":\"sandbox/mode\",\"seq\":0,\"time\":1,\"data\":{\"mode\":"
			     "\"danger-full-access\"}}\n");
	pin_ok(s, cfg);
	assert_events_from(s, 1, POLICY(1, "ask"));
	assert_current(s, cfg, "custom");
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* #20 A legacy seed without a policy materialises the configured one (ask). */
static void test_pin_materialises_ask(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask", NULL, NULL);
	dsb_session *s = handmade_session(
		f, "no-policy",
		"{\"type\":\"sandbox/mode\",\"seq\":0,\"time\":1,\"data\":{\"mode\":"
		"\"workspace-write\"}}\n"
		"{\"type\":\"session/end-seed\",\"seq\":1,\"time\":2,\"data\":{}}\n");
	pin_ok(s, cfg);
	assert_events_from(s, 2, PRESET(2, "workspace-write") POLICY(3, "ask"));
	dsb_session_free(s);
	dsb_config_free(cfg);
}

/* --- the deployment's default table ----------------------------------------------------------- */

/* read-only + ask is the deployment default, and the first entry of its table. */
static void test_deployment_default_table(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = dsb_config_new();
	assert_non_null(cfg);
	const dsb_preset *def = NULL;
	assert_int_equal(presets_default(cfg, &def, NULL), 0);
	assert_string_equal(def->key, "read-only");

	dsb_session *s = fresh_session(f);
	pin_ok(s, cfg);
	assert_events_from(s, 0, PRESET(0, "read-only") MODE(1, "read-only") POLICY(2, "ask"));
	assert_current(s, cfg, "read-only");

	apply_ok(s, cfg, "workspace-write");
	assert_events_from(s, 3, PRESET(3, "workspace-write") MODE(4, "workspace-write"));
	apply_ok(s, cfg, "danger-full-access");
	assert_events_from(s, 5,
			   PRESET(5, "danger-full-access") MODE(6, "danger-full-access")
				   POLICY(7, "never") NOTICE(8, "ask", "never"));
	apply_ok(s, cfg, "read-only");
	assert_events_from(s, 9,
			   PRESET(9, "read-only") MODE(10, "read-only") POLICY(11, "ask")
				   NOTICE(12, "never", "ask"));

	dsb_error err = {0};
	assert_int_equal(presets_apply(s, cfg, "yolo", &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message, "unknown preset \"yolo\" (available: read-only, "
					 "workspace-write, danger-full-access)");
	dsb_session_free(s);

	/* DSH_PERMISSION_MODE moves the executor default, and the inferred preset with it. */
	assert_int_equal(dsb_config_apply_env(cfg, "workspace-write", NULL), 0);
	assert_int_equal(presets_default(cfg, &def, NULL), 0);
	assert_string_equal(def->key, "workspace-write");
	dsb_config_free(cfg);
}

/* Preset names are JSON-quoted as JSON.stringify() quotes them. */
static void test_preset_names_are_quoted(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = mounted("ask",
				  "permission:\n"
				  "  presets:\n"
				  "    'say \"hi\"\\': {sandbox: workspace-write, approval: ask}\n",
				  NULL);
	assert_string_equal(cfg->presets[0].key, "say \"hi\"\\");
	dsb_session *s = fresh_session(f);
	pin_ok(s, cfg);
	assert_events_from(
		s, 0, PRESET(0, "say \\\"hi\\\"\\\\") MODE(1, "workspace-write") POLICY(2, "ask"));
	assert_current(s, cfg, "say \"hi\"\\");
	dsb_session_free(s);
	dsb_config_free(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_preset_fold, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_order_and_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_current_derives_from_knobs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmatched_knobs_derive_custom, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_defaults_outside_table_with_explicit_default,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_fold_breaks_ties, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_writes_through, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_current_is_noop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reassert_from_drift, setup, teardown),
		cmocka_unit_test(test_custom_is_reserved),
		cmocka_unit_test_setup_teardown(test_explicit_default_needed, setup, teardown),
		cmocka_unit_test(test_unknown_default_refused),
		cmocka_unit_test_setup_teardown(test_pin_fresh_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_seeded_legacy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_empty_resumed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_existing_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_partial_and_unmatched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pin_materialises_ask, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deployment_default_table, setup, teardown),
		cmocka_unit_test_setup_teardown(test_preset_names_are_quoted, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
