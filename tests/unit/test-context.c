/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the context piece (dsh-compat §9, §8.4, §8.9, §11.29-11.30): the three texts byte
 * for byte (goldens in tests/data/context/, taken from DSH's sources and the spec, never from our
 * output), assembly (order, ties, empty texts, interpolation, the join), project() and the
 * retained snapshot rebuilt from logs (first, unchanged, changed, switched back, compacted,
 * cleared, restarted, malformed), and every owned snapshot of DSH's fixture logs reproduced
 * from the log prefix before it.
 *
 * Each test gets a private directory T (canonical):
 *
 *   T/ws/                    the workspace of the sessions the tests create
 *   T/store/...              their logs
 *   T/log.jsonl              hand-written logs (fixture style: no seq, no time)
 *   T/fx/                    the directory the fixtures' {{cwd}} is replaced with
 *   T/prefix.jsonl           a fixture's log up to some line
 *
 * {{cwd}}: the fixtures replaced the real cwd by "{{cwd}}" everywhere (the header's cwd and the
 * snapshot's JSON-quoted workspace). The test undoes that consistently: it substitutes the
 * canonical path of T/fx for every "{{cwd}}" of the log, header and expected message alike, so
 * the real resolver (realpath of the header cwd) yields exactly the path the expected text
 * names. T/fx needs no JSON escaping, so one plain substitution is exact.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/context/context.h"
#include "src/policy/policy.h"
#include "src/session/session.h"
#include "helpers.h"

typedef struct fixture {
	char *dir; /* canonical */
	char *ws;
	dsb_store *store;
	dsb_config *cfg;
	dsb_policy *policy;
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
	char *tmp = dsb_test_mkdtemp();
	f->dir = realpath(tmp, NULL);
	assert_non_null(f->dir);
	free(tmp);
	f->ws = join(f->dir, "ws");
	assert_int_equal(mkdir(f->ws, 0755), 0);
	char *root = join(f->dir, "store");
	assert_int_equal(dsb_store_open(root, &f->store, NULL), 0);
	dsb_store_set_fsync(f->store, false);
	free(root);
	f->cfg = dsb_config_new();
	assert_non_null(f->cfg);
	assert_int_equal(dsb_config_set_workspace_root(f->cfg, f->ws, NULL), 0);
	assert_int_equal(dsb_policy_new(f->cfg, &f->policy, NULL), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	dsb_policy_free(f->policy);
	dsb_config_free(f->cfg);
	dsb_store_free(f->store);
	dsb_test_rm_rf(f->dir);
	free(f->ws);
	free(f->dir);
	free(f);
	return 0;
}

static char *golden(const char *name)
{
	char *rel = join("context", name);
	char *path = dsb_test_data_path(rel);
	char *text = dsb_test_read_file(path, NULL);
	if (!text)
		fail_msg("golden file %s is missing", path);
	free(path);
	free(rel);
	return text;
}

/* The session's projection; fails the test on an error. NULL when it would append nothing. */
static dsb_context_message *project_with(dsb_session *s, const dsb_policy *policy,
					 const dsb_config *cfg)
{
	dsb_context_message *m = NULL;
	dsb_error err = {0};
	int r = dsb_context_project(s, policy, cfg, &m, &err);
	if (r < 0)
		fail_msg("dsb_context_project: %s", err.message);
	assert_int_equal(r, m ? 1 : 0);
	return m;
}

static dsb_context_message *project(fixture *f, dsb_session *s)
{
	return project_with(s, f->policy, f->cfg);
}

static void expect_nothing(fixture *f, dsb_session *s)
{
	dsb_context_message *m = project(f, s);
	if (m)
		fail_msg("expected nothing, got: %s", dsb_context_message_json(m));
}

/* One pre-step: the projection must produce a message; it is appended. Returns its text. */
static char *step(fixture *f, dsb_session *s)
{
	dsb_context_message *m = project(f, s);
	if (!m)
		fail_msg("expected a snapshot, got nothing");
	assert_int_equal(dsb_context_message_append(s, m, NULL, NULL), 0);
	char *text = strdup(dsb_context_message_text(m));
	dsb_context_message_free(m);
	return text;
}

/* A fresh object on the same log: what a new process (a restart) sees. */
static dsb_session *reopen(fixture *f, dsb_session *s)
{
	dsb_session *fresh = NULL;
	assert_int_equal(dsb_session_open(f->store, dsb_session_path(s), &fresh, NULL), 0);
	dsb_session_free(s);
	return fresh;
}

static uint64_t append(dsb_session *s, const char *type, const char *data, const char *extra)
{
	uint64_t seq = 0;
	dsb_error err = {0};
	if (session_append_extra(s, type, data, extra, &seq, &err) < 0)
		fail_msg("append: %s", err.message);
	return seq;
}

static uint64_t append_prompt(dsb_session *s, const char *text)
{
	char *data = NULL;
	assert_true(asprintf(&data,
			     "{\"content\":[{\"type\":\"text\",\"text\":\"%s\"},{\"type\":\"text\","
			     "\"text\":\"more\"}],\"source\":{\"kind\":\"user\"},\"role\":\"user\","
			     "\"id\":\"u\"}",
			     text) > 0);
	uint64_t seq = append(s, "user/message", data, ",\"surfaceOp\":\"append\"");
	free(data);
	return seq;
}

/* A compaction: a @type event replacing surface nodes @start..@end, citing @sources. */
static uint64_t compact(dsb_session *s, const char *type, uint64_t start, uint64_t end,
			const char *sources)
{
	char *extra = NULL;
	assert_true(asprintf(&extra,
			     ",\"sourceEventSeqs\":[%s],\"surfaceOp\":{\"op\":\"replace\","
			     "\"start\":%" PRIu64 ",\"end\":%" PRIu64 "}",
			     sources, start, end) > 0);
	const char *data =
		strcmp(type, "user/message") == 0
			? "{\"content\":[{\"type\":\"text\",\"text\":\"summary\"}],\"source\":{"
			  "\"kind\":\"plugin\",\"plugin\":\"test-compaction\"},\"role\":\"user\","
			  "\"id\":\"c\"}"
			: "{\"turn\":1,\"step\":1,\"message\":{\"role\":\"assistant\",\"content\":["
			  "{"
			  "\"type\":\"text\",\"text\":\"summary\"}]}}";
	uint64_t seq = append(s, type, data, extra);
	free(extra);
	return seq;
}

/* The seq of the last owned message of @s's log. */
static int last_owned(const log_record *rec, void *userdata, dsb_error *reterr)
{
	if (strcmp(rec->type, "user/message") == 0 &&
	    context_is_owned(json_object_get(rec->json, "data")))
		*(int64_t *)userdata = (int64_t)rec->seq;
	return 0;
}

static uint64_t last_owned_seq(dsb_session *s)
{
	int64_t seq = -1;
	assert_int_equal(session_scan(s, last_owned, &seq, NULL, NULL), 0);
	assert_true(seq >= 0);
	return (uint64_t)seq;
}

static int count_owned_fn(const log_record *rec, void *userdata, dsb_error *reterr)
{
	if (strcmp(rec->type, "user/message") == 0 &&
	    context_is_owned(json_object_get(rec->json, "data")))
		(*(int *)userdata)++;
	return 0;
}

static int count_owned(dsb_session *s)
{
	int n = 0;
	assert_int_equal(session_scan(s, count_owned_fn, &n, NULL, NULL), 0);
	return n;
}

static dsb_session *new_session(fixture *f)
{
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, f->ws, &s, NULL), 0);
	return s;
}

/* The sandbox:policy text of workspace-write for a root that needs no escaping. */
static char *workspace_text(const char *root)
{
	char *t = NULL;
	assert_true(
		asprintf(&t,
			 "Current DSH file policy: workspace-write. Any available operation "
			 "enforced by the DSH file sandbox may modify files under the session "
			 "workspace: \"%s\". Some platform temporary areas may also be writable.",
			 root) > 0);
	return t;
}

static char *snapshot_of(const char *a, const char *b, const char *c)
{
	char *t = NULL;
	assert_true(asprintf(&t, "%s\n\n%s\n\n%s%s%s", DSB_CONTEXT_HEADER, a, b, c ? "\n\n" : "",
			     c ? c : "") > 0);
	return t;
}

/* --- texts (§9.4, §8.4, §8.9) ------------------------------------------------------------- */

static void assert_sandbox_golden(dsb_mode mode, const char *root, const char *name)
{
	char *text = NULL;
	assert_int_equal(dsb_context_render_sandbox(mode, root, &text, NULL), 0);
	char *expected = golden(name);
	assert_string_equal(text, expected);
	free(expected);
	free(text);
}

static void test_sandbox_texts(void **state)
{
	(void)state;
	assert_sandbox_golden(DSB_MODE_READ_ONLY, NULL, "sandbox-read-only.txt");
	assert_sandbox_golden(DSB_MODE_READ_ONLY, "/ignored", "sandbox-read-only.txt");
	assert_sandbox_golden(DSB_MODE_DANGER_FULL_ACCESS, "/ignored",
			      "sandbox-danger-full-access.txt");
	/* Quotes, backslashes, non-ASCII, controls, DEL and U+2028, as JSON.stringify() spells. */
	assert_sandbox_golden(DSB_MODE_WORKSPACE_WRITE,
			      "/ws/a \"q\" \\b\\ \xC3\xBCn\xC3\xAF \xE6\x97\xA5\xE6\x9C\xAC "
			      "\x01"
			      "\t\n\x7f"
			      "\xE2\x80\xA8"
			      "end",
			      "sandbox-workspace-write-awkward.txt");

	/* Bytes that are not UTF-8 read as U+FFFD, as Node decodes a path. */
	char *text = NULL;
	assert_int_equal(
		dsb_context_render_sandbox(DSB_MODE_WORKSPACE_WRITE, "/ws/\xff", &text, NULL), 0);
	assert_non_null(strstr(text, "workspace: \"/ws/\xEF\xBF\xBD\". Some"));
	free(text);

	dsb_error err = {0};
	assert_int_equal(dsb_context_render_sandbox(_DSB_MODE_INVALID, "/", &text, &err),
			 -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_context_render_sandbox(DSB_MODE_WORKSPACE_WRITE, NULL, &text, &err),
			 -DSB_E_INVALID_ARGS);
}

static void test_approval_and_delegation_texts(void **state)
{
	(void)state;
	char *ask = golden("approval-ask.txt");
	char *never = golden("approval-never.txt");
	char *deleg = golden("subagent-delegation.txt");
	assert_string_equal(dsb_context_approval_text(DSB_APPROVAL_ASK), ask);
	assert_string_equal(dsb_context_approval_text(DSB_APPROVAL_NEVER), never);
	assert_null(dsb_context_approval_text(_DSB_APPROVAL_INVALID));
	assert_null(dsb_context_approval_text(_DSB_APPROVAL_MAX));
	assert_string_equal(dsb_context_delegation_text(), deleg);
	free(ask);
	free(never);
	free(deleg);
}

/* --- assembly (§9.2, §11.29) -------------------------------------------------------------- */

static char *render_join(const context_assembly *a, context_sections *ret)
{
	dsb_error err = {0};
	if (context_render_sections(a, ret, &err) < 0)
		fail_msg("render: %s", err.message);
	char *text = NULL;
	assert_int_equal(context_join(ret, &text), 0);
	return text;
}

/* §11.29 #2: sorted by order, stable for ties, joined under the header. */
static void test_assembly_order_and_join(void **state)
{
	(void)state;
	context_assembly a = {0};
	context_sections s = {0};
	assert_int_equal(context_assembly_add(&a, "later", 20, "context 2", NULL), 0);
	assert_int_equal(context_assembly_add(&a, "earlier", 10, "context 1", NULL), 0);
	char *text = render_join(&a, &s);
	assert_string_equal(text, "Current runtime context. This snapshot supersedes earlier "
				  "runtime-context snapshots.\n\ncontext 1\n\ncontext 2");
	assert_int_equal(s.n, 2);
	assert_string_equal(s.items[0].name, "earlier");
	assert_string_equal(s.items[1].name, "later");
	free(text);
	context_sections_done(&s);
	context_assembly_done(&a);

	/* Ties keep registration order; negative and fractional orders sort as numbers. */
	static const struct {
		const char *name;
		double order;
	} entries[] = {{"b", 5}, {"a", 5}, {"c", -1.5}, {"d", 5}, {"e", 4.75}};
	for (size_t i = 0; i < ELEMENTSOF(entries); i++)
		assert_int_equal(context_assembly_add(&a, entries[i].name, entries[i].order,
						      entries[i].name, NULL),
				 0);
	text = render_join(&a, &s);
	assert_string_equal(text, DSB_CONTEXT_HEADER "\n\nc\n\ne\n\nb\n\na\n\nd");
	free(text);
	context_sections_done(&s);
	context_assembly_done(&a);
}

/* §11.29 #4 and #10: duplicates and non-finite orders are refused, leaving the first. */
static void test_assembly_rejects_duplicates_and_non_finite(void **state)
{
	(void)state;
	context_assembly a = {0};
	context_sections s = {0};
	dsb_error err = {0};
	assert_int_equal(context_assembly_add(&a, "policy", 1, "first", NULL), 0);
	assert_int_equal(context_assembly_add(&a, "policy", 2, "second", &err),
			 -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message,
			    "prompt context \"policy\" is already registered (for a per-agent "
			    "override, register through that agent's `agent.ctx` instead)");
	assert_int_equal(context_assembly_add(&a, "bad", NAN, "x", &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message, "prompt context \"bad\" order must be a finite number");
	assert_int_equal(context_assembly_add(&a, "bad", INFINITY, "x", &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(context_assembly_add(&a, "", 1, "x", &err), -DSB_E_INVALID_ARGS);
	char *text = render_join(&a, &s);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.items[0].name, "policy");
	assert_string_equal(s.items[0].text, "first");
	free(text);
	context_sections_done(&s);

	assert_int_equal(context_assembly_set_variable(&a, "Bad", "x", &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(
		err.message,
		"invalid prompt variable name \"Bad\" (must match /^[a-z][a-z0-9_]*$/)");
	assert_int_equal(context_assembly_set_variable(&a, "mode", "x", NULL), 0);
	assert_int_equal(context_assembly_set_variable(&a, "mode", "y", &err), -DSB_E_INVALID_ARGS);
	context_assembly_done(&a);
}

/* §11.29 #5: empty texts drop out, variables interpolate, nothing active gives "". */
static void test_assembly_filters_empty_and_interpolates(void **state)
{
	(void)state;
	context_assembly a = {0};
	context_sections s = {0};
	assert_int_equal(context_assembly_add(&a, "empty", 0, "", NULL), 0);
	char *text = render_join(&a, &s);
	assert_string_equal(text, "");
	assert_int_equal(s.n, 0);
	free(text);
	context_sections_done(&s);

	assert_int_equal(context_assembly_set_variable(&a, "mode", "read-only", NULL), 0);
	assert_int_equal(context_assembly_add(&a, "policy", 1, "Mode: {{mode}}.", NULL), 0);
	text = render_join(&a, &s);
	assert_string_equal(text, DSB_CONTEXT_HEADER "\n\nMode: read-only.");
	assert_int_equal(s.n, 1);
	assert_string_equal(s.items[0].text, "Mode: read-only.");
	free(text);
	context_sections_done(&s);
	context_assembly_done(&a);

	/* A text that interpolates to "" is dropped too. */
	assert_int_equal(context_assembly_set_variable(&a, "none", "", NULL), 0);
	assert_int_equal(context_assembly_add(&a, "x", 0, "{{none}}", NULL), 0);
	text = render_join(&a, &s);
	assert_string_equal(text, "");
	free(text);
	context_sections_done(&s);
	context_assembly_done(&a);
}

static void expect_interpolation(const context_assembly *a, const char *text, const char *result,
				 const char *message)
{
	char *out = NULL;
	dsb_error err = {0};
	int r = context_interpolate(a, "policy", text, &out, &err);
	if (result) {
		if (r < 0)
			fail_msg("interpolating '%s': %s", text, err.message);
		assert_string_equal(out, result);
		free(out);
		return;
	}
	assert_int_equal(r, -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message, message);
}

/* §11.29 #6 and DSH's interpolate(): failures name the context; a lone "{{" is prose. */
static void test_interpolation(void **state)
{
	(void)state;
	context_assembly a = {0};
	expect_interpolation(&a, "Mode: {{missing}}.", NULL,
			     "unknown prompt variable \"{{missing}}\" in context \"policy\"; "
			     "registered variables: (none)");
	assert_int_equal(context_assembly_set_variable(&a, "provider", NULL, NULL), 0);
	assert_int_equal(context_assembly_set_variable(&a, "cwd", "/w/{{provider}}", NULL), 0);
	expect_interpolation(&a, "{{missing}}", NULL,
			     "unknown prompt variable \"{{missing}}\" in context \"policy\"; "
			     "registered variables: provider, cwd");
	expect_interpolation(&a, "at {{provider}}", NULL,
			     "prompt variable \"{{provider}}\" has no value for this assembly "
			     "(context \"policy\")");
	expect_interpolation(&a, "x {{Bad}} y", NULL,
			     "malformed prompt variable reference \"{{Bad}}\" in context "
			     "\"policy\" (variable names match /^[a-z][a-z0-9_]*$/)");
	expect_interpolation(&a, "{{}}", NULL,
			     "malformed prompt variable reference \"{{}}\" in context \"policy\" "
			     "(variable names match /^[a-z][a-z0-9_]*$/)");
	/* A broken group with a later "}}": the message quotes 16 UTF-16 units of it. */
	expect_interpolation(&a, "a {{{cwd}}} b", NULL,
			     "malformed prompt variable reference at \"{{{cwd}}} b\xE2\x80\xA6\" "
			     "in context \"policy\" (references are complete simple {{name}} "
			     "groups)");
	/* 16 units: U+1F600 counts two. */
	expect_interpolation(&a, "{{\xC3\xBC\xF0\x9F\x98\x80{ and more text}}", NULL,
			     "malformed prompt variable reference at \"{{\xC3\xBC\xF0\x9F\x98\x80{ "
			     "and more \xE2\x80\xA6\" in context \"policy\" (references are "
			     "complete simple {{name}} groups)");
	/* Prose: no later "}}". Values are not scanned again. */
	expect_interpolation(&a, "a {{ b {{c", "a {{ b {{c", NULL);
	expect_interpolation(&a, "root {{cwd}}!", "root /w/{{provider}}!", NULL);
	expect_interpolation(&a, "{{cwd}}{{cwd}}", "/w/{{provider}}/w/{{provider}}", NULL);
	expect_interpolation(&a, "no references", "no references", NULL);
	context_assembly_done(&a);
}

/* --- project() and the message (§9.3, §11.30) --------------------------------------------- */

static void sections_of(context_sections *s, const char *name, const char *text)
{
	context_assembly a = {0};
	assert_int_equal(context_assembly_add(&a, name, 110, text, NULL), 0);
	assert_int_equal(context_render_sections(&a, s, NULL), 0);
	context_assembly_done(&a);
}

/* Everything of @json but the id's value, which must be a v4 UUID. */
static char *without_id(const char *json)
{
	const char *at = strstr(json, ",\"id\":\"");
	assert_non_null(at);
	while (strstr(at + 1, ",\"id\":\""))
		at = strstr(at + 1, ",\"id\":\"");
	const char *id = at + 7;
	assert_int_equal(strlen(id), 36 + 2);
	assert_string_equal(id + 36, "\"}");
	for (size_t i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			assert_int_equal(id[i], '-');
		else
			assert_non_null(strchr("0123456789abcdef", id[i]));
	}
	assert_int_equal(id[14], '4');
	return strndup(json, (size_t)(at - json));
}

static void test_message_shape(void **state)
{
	(void)state;
	context_sections s = {0};
	context_assembly a = {0};
	assert_int_equal(context_assembly_add(&a, "sandbox:policy", 110, "p \"1\"", NULL), 0);
	assert_int_equal(context_assembly_add(&a, "approval:policy", 115, "a\n2", NULL), 0);
	assert_int_equal(context_render_sections(&a, &s, NULL), 0);
	char *json = NULL;
	assert_int_equal(context_message_format("T\t\"x\"", &s, "id-1", &json), 0);
	assert_string_equal(json,
			    "{\"content\":[{\"type\":\"text\",\"text\":\"T\\t\\\"x\\\"\"}],"
			    "\"source\":{\"kind\":\"plugin\",\"plugin\":\"@deepseek-ai/"
			    "dsh-system-prompt\",\"form\":\"snapshot\",\"sections\":[{\"name\":"
			    "\"sandbox:policy\",\"text\":\"p \\\"1\\\"\"},{\"name\":\"approval:"
			    "policy\",\"text\":\"a\\n2\"}]},\"role\":\"user\",\"id\":\"id-1\"}");
	free(json);
	assert_int_equal(context_message_format(DSB_CONTEXT_CLEARED, NULL, "id-2", &json), 0);
	assert_string_equal(json, "{\"content\":[{\"type\":\"text\",\"text\":\"Current runtime "
				  "context: none. Earlier runtime-context snapshots no longer "
				  "apply.\"}],\"source\":{\"kind\":\"plugin\",\"plugin\":"
				  "\"@deepseek-ai/dsh-system-prompt\"},\"role\":\"user\",\"id\":"
				  "\"id-2\"}");
	free(json);
	context_sections_done(&s);
	context_assembly_done(&a);
}

/* project() over a synthetic state: 0 with NULL, or 1 and the message. */
static dsb_context_message *project_state(retained_state state, const char *retained_text,
					  const context_sections *s)
{
	context_retained r = {.state = state, .seq = 3};
	if (retained_text) {
		r.text = strdup(retained_text);
		r.text_len = strlen(retained_text);
	}
	dsb_context_message *m = NULL;
	int k = context_project(&r, s, &m, NULL);
	assert_int_equal(k, m ? 1 : 0);
	context_retained_done(&r);
	return m;
}

static void test_project_state_machine(void **state)
{
	(void)state;
	context_sections none = {0}, some = {0}, other = {0};
	sections_of(&some, "sandbox:policy", "policy");
	sections_of(&other, "sandbox:policy", "other");
	char *current = NULL;
	assert_int_equal(context_join(&some, &current), 0);

	/* Never had context and still none: nothing. */
	assert_null(project_state(RETAINED_NEVER, NULL, &none));
	/* The first context: a snapshot with its sections. */
	dsb_context_message *m = project_state(RETAINED_NEVER, NULL, &some);
	assert_non_null(m);
	assert_string_equal(dsb_context_message_text(m), current);
	char *shape = without_id(dsb_context_message_json(m));
	assert_non_null(strstr(shape, "\"form\":\"snapshot\",\"sections\":[{\"name\":"
				      "\"sandbox:policy\",\"text\":\"policy\"}]}"));
	free(shape);
	dsb_context_message_free(m);
	/* Unchanged: nothing. Changed, compacted away (none retained), malformed: a snapshot. */
	assert_null(project_state(RETAINED_SOME, current, &some));
	m = project_state(RETAINED_SOME, current, &other);
	assert_non_null(m);
	dsb_context_message_free(m);
	m = project_state(RETAINED_NONE, NULL, &some);
	assert_non_null(m);
	dsb_context_message_free(m);
	m = project_state(RETAINED_SOME, NULL, &some);
	assert_non_null(m);
	dsb_context_message_free(m);
	/* A retained text that differs in one trailing byte is not the same snapshot. */
	char *longer = NULL;
	assert_true(asprintf(&longer, "%s ", current) > 0);
	m = project_state(RETAINED_SOME, longer, &some);
	assert_non_null(m);
	dsb_context_message_free(m);
	free(longer);
	/* All contexts gone after one existed: CLEARED with the bare source, then nothing. */
	m = project_state(RETAINED_SOME, current, &none);
	assert_non_null(m);
	assert_string_equal(dsb_context_message_text(m), DSB_CONTEXT_CLEARED);
	shape = without_id(dsb_context_message_json(m));
	assert_string_equal(shape,
			    "{\"content\":[{\"type\":\"text\",\"text\":\"" DSB_CONTEXT_CLEARED
			    "\"}],\"source\":{\"kind\":\"plugin\",\"plugin\":\"" DSB_CONTEXT_SOURCE
			    "\"},\"role\":\"user\"");
	free(shape);
	dsb_context_message_free(m);
	m = project_state(RETAINED_NONE, NULL, &none);
	assert_non_null(m);
	assert_string_equal(dsb_context_message_text(m), DSB_CONTEXT_CLEARED);
	dsb_context_message_free(m);
	assert_null(project_state(RETAINED_SOME, DSB_CONTEXT_CLEARED, &none));
	/* ...and a context that comes back is stated again. */
	m = project_state(RETAINED_SOME, DSB_CONTEXT_CLEARED, &some);
	assert_non_null(m);
	dsb_context_message_free(m);

	free(current);
	context_sections_done(&some);
	context_sections_done(&other);
}

/* --- the retained snapshot from hand-written logs ------------------------------------------ */

static const char log_header_line[] =
	"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":1,\"delegationDepth\":0}\n";

static char *owned_line(const char *text, bool two_blocks)
{
	char *line = NULL;
	assert_true(asprintf(&line,
			     "{\"type\":\"user/message\",\"data\":{\"content\":[{\"type\":\"text\","
			     "\"text\":\"%s\"}%s],\"source\":{\"kind\":\"plugin\",\"plugin\":"
			     "\"" DSB_CONTEXT_SOURCE
			     "\"},\"role\":\"user\",\"id\":\"x\"},\"surfaceOp\":\"append\"}\n",
			     text, two_blocks ? ",{\"type\":\"text\",\"text\":\"b\"}" : "") > 0);
	return line;
}

/* Loads `retained` from @body (lines after a header) written to T/log.jsonl. */
static int load_retained(fixture *f, const char *body, context_retained *ret, dsb_error *err)
{
	char *path = join(f->dir, "log.jsonl");
	char *text = NULL;
	assert_true(asprintf(&text, "%s%s", log_header_line, body) > 0);
	dsb_test_write_file(path, text, strlen(text));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	int r = context_retained_load(fd, path, ret, NULL, err);
	close(fd);
	free(text);
	free(path);
	return r;
}

/* §11.30 #1: the newest owned snapshot still on the surface is the retained one. */
static void test_restores_latest_visible_snapshot(void **state)
{
	fixture *f = *state;
	context_sections retained_s = {0}, next_s = {0};
	sections_of(&retained_s, "x", "retained");
	sections_of(&next_s, "sandbox:policy", "policy");
	char *retained_text = NULL;
	assert_int_equal(context_join(&retained_s, &retained_text), 0);

	char *esc = NULL;
	assert_int_equal(json_quote(retained_text, strlen(retained_text), &esc), 0);
	esc[strlen(esc) - 1] = '\0';
	char *l0 = owned_line(esc + 1, false);
	char *l1 = owned_line("shadowed", false);
	char *body = NULL;
	assert_true(
		asprintf(&body,
			 "%s%s{\"type\":\"user/message\",\"data\":{\"content\":[{\"type\":\"text\","
			 "\"text\":\"summary\"}],\"source\":{\"kind\":\"plugin\",\"plugin\":"
			 "\"test-compaction\"},\"role\":\"user\",\"id\":\"c\"},\"sourceEventSeqs\":"
			 "[1],\"surfaceOp\":{\"op\":\"replace\",\"start\":1,\"end\":1}}\n",
			 l0, l1) > 0);
	context_retained r = {0};
	assert_int_equal(load_retained(f, body, &r, NULL), 0);
	assert_int_equal(r.state, RETAINED_SOME);
	assert_int_equal(r.seq, 0);
	assert_string_equal(r.text, retained_text);

	dsb_context_message *m = NULL;
	assert_int_equal(context_project(&r, &retained_s, &m, NULL), 0);
	assert_null(m);
	assert_int_equal(context_project(&r, &next_s, &m, NULL), 1);
	char *shape = without_id(dsb_context_message_json(m));
	assert_non_null(strstr(shape, "\"source\":{\"kind\":\"plugin\",\"plugin\":"
				      "\"@deepseek-ai/dsh-system-prompt\",\"form\":\"snapshot\","
				      "\"sections\":[{\"name\":\"sandbox:policy\",\"text\":"
				      "\"policy\"}]}"));
	free(shape);
	dsb_context_message_free(m);
	context_retained_done(&r);

	/* Only owned messages count: another plugin's message is not a snapshot. */
	assert_int_equal(
		load_retained(f,
			      "{\"type\":\"user/message\",\"data\":{\"content\":[{\"type\":"
			      "\"text\",\"text\":\"t\"}],\"source\":{\"kind\":\"plugin\","
			      "\"plugin\":\"user-approval\"},\"role\":\"user\",\"id\":\"n\"},"
			      "\"surfaceOp\":\"append\"}\n",
			      &r, NULL),
		0);
	assert_int_equal(r.state, RETAINED_NEVER);
	context_retained_done(&r);

	free(body);
	free(l0);
	free(l1);
	free(esc);
	free(retained_text);
	context_sections_done(&retained_s);
	context_sections_done(&next_s);
}

/* §11.30 #6: a retained message that is not one text block is replaced by a full snapshot. */
static void test_malformed_retained_is_replaced(void **state)
{
	fixture *f = *state;
	context_sections s = {0};
	sections_of(&s, "sandbox:policy", "policy");
	char *line = owned_line("Current runtime context. This snapshot supersedes earlier "
				"runtime-context snapshots.\\n\\npolicy",
				true);
	context_retained r = {0};
	assert_int_equal(load_retained(f, line, &r, NULL), 0);
	assert_int_equal(r.state, RETAINED_SOME);
	assert_null(r.text);
	dsb_context_message *m = NULL;
	assert_int_equal(context_project(&r, &s, &m, NULL), 1);
	dsb_context_message_free(m);
	context_retained_done(&r);
	free(line);

	/* The same text as one block is the retained snapshot: nothing. */
	line = owned_line("Current runtime context. This snapshot supersedes earlier "
			  "runtime-context snapshots.\\n\\npolicy",
			  false);
	assert_int_equal(load_retained(f, line, &r, NULL), 0);
	assert_int_equal(context_project(&r, &s, &m, NULL), 0);
	context_retained_done(&r);
	free(line);
	context_sections_done(&s);
}

/* §9.3 (e), §11.30 #2/#4: contexts gone after a snapshot: one CLEARED, then nothing. */
static void test_cleared_once(void **state)
{
	fixture *f = *state;
	context_sections none = {0};
	char *line = owned_line("old", false);
	context_retained r = {0};
	assert_int_equal(load_retained(f, line, &r, NULL), 0);
	dsb_context_message *m = NULL;
	assert_int_equal(context_project(&r, &none, &m, NULL), 1);
	assert_string_equal(dsb_context_message_text(m), DSB_CONTEXT_CLEARED);
	context_retained_done(&r);

	/* Append it (as a log line of the fixture style) and read the log again. */
	char *body = NULL;
	assert_true(asprintf(&body,
			     "%s{\"type\":\"user/message\",\"data\":%s,\"surfaceOp\":"
			     "\"append\"}\n",
			     line, dsb_context_message_json(m)) > 0);
	dsb_context_message_free(m);
	assert_int_equal(load_retained(f, body, &r, NULL), 0);
	assert_int_equal(r.seq, 1);
	assert_string_equal(r.text, DSB_CONTEXT_CLEARED);
	assert_int_equal(context_project(&r, &none, &m, NULL), 0);
	context_retained_done(&r);

	/* A compaction that shadows the CLEARED message brings it back once more. */
	char *body2 = NULL;
	assert_true(asprintf(&body2,
			     "%s{\"type\":\"assistant/message\",\"data\":{},\"sourceEventSeqs\":[0,"
			     "1],\"surfaceOp\":{\"op\":\"replace\",\"start\":0,\"end\":1}}\n",
			     body) > 0);
	assert_int_equal(load_retained(f, body2, &r, NULL), 0);
	assert_int_equal(r.state, RETAINED_NONE);
	assert_int_equal(context_project(&r, &none, &m, NULL), 1);
	assert_string_equal(dsb_context_message_text(m), DSB_CONTEXT_CLEARED);
	dsb_context_message_free(m);
	context_retained_done(&r);
	free(body2);
	free(body);
	free(line);
}

/* A log DSH would refuse to fold is refused with DSH's words, never read as empty. */
static void test_surface_errors(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *body;
		const char *text;
	} cases[] = {
		{"{\"type\":\"user/message\",\"data\":{},\"sourceEventSeqs\":[],\"surfaceOp\":{"
		 "\"op\":\"replace\",\"start\":7,\"end\":7}}\n",
		 "surface replace: start seq 7 not found in surface"},
		{"{\"type\":\"user/message\",\"data\":{},\"surfaceOp\":\"append\"}\n"
		 "{\"type\":\"user/message\",\"data\":{},\"surfaceOp\":\"append\"}\n"
		 "{\"type\":\"user/message\",\"data\":{},\"sourceEventSeqs\":[0],\"surfaceOp\":{"
		 "\"op\":\"replace\",\"start\":0,\"end\":1}}\n",
		 "surface replace: sourceEventSeqs must include every shadowed surface node; "
		 "missing 1"},
		{"{\"type\":\"user/message\",\"data\":{},\"surfaceOp\":\"append\"}\n"
		 "{\"type\":\"user/message\",\"data\":{},\"surfaceOp\":\"append\"}\n"
		 "{\"type\":\"user/message\",\"data\":{},\"sourceEventSeqs\":[0,1],\"surfaceOp\":{"
		 "\"op\":\"replace\",\"start\":1,\"end\":0}}\n",
		 "surface replace: start seq 1 (index 1) is after end seq 0 (index 0)"},
		{"{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"read-only\"},\"surfaceOp\":"
		 "\"append\"}\n",
		 "session event \"sandbox/mode\" is not surface-eligible and cannot carry "
		 "surfaceOp"},
		{"{\"type\":\"tool/result\",\"data\":{}}\n",
		 "session event \"tool/result\" is surface-eligible and requires a surfaceOp "
		 "marker"},
		{"{\"type\":\"user/message\",\"data\":{},\"surfaceOp\":{\"op\":\"replace\","
		 "\"start\":0}}\n",
		 "session event \"user/message\" carries an invalid replace surfaceOp"},
		{"{\"type\":\"user/message\",\"data\":{},\"surfaceOp\":\"prepend\"}\n",
		 "session event \"user/message\" carries an invalid surfaceOp"},
		{"{\"type\":\"user/message\",\"data\":{},\"sourceEventSeqs\":[3],\"surfaceOp\":"
		 "\"append\"}\n",
		 "sourceEventSeqs must reference earlier events: 3 >= current seq 0"},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		context_retained r = {0};
		dsb_error err = {0};
		assert_int_equal(load_retained(f, cases[i].body, &r, &err), -DSB_E_SESSION_INVALID);
		const char *colon = strstr(err.message, ".jsonl:");
		assert_non_null(colon);
		colon = strchr(colon + 7, ' ');
		assert_non_null(colon);
		assert_string_equal(colon + 1, cases[i].text);
		context_retained_done(&r);
	}
}

/* --- sessions end to end (§9.3 (a)-(e), §11.30 #2-#5) -------------------------------------- */

static void test_session_lifecycle(void **state)
{
	fixture *f = *state;
	dsb_session *s = new_session(f);
	char *expected_ro = golden("snapshot-read-only-ask.txt");

	/* First step: the read-only + ask snapshot (the configured defaults). */
	char *first = step(f, s);
	assert_string_equal(first, expected_ro);
	/* Unchanged across many calls and across a restart: nothing. */
	for (int i = 0; i < 5; i++)
		expect_nothing(f, s);
	s = reopen(f, s);
	expect_nothing(f, s);
	assert_int_equal(count_owned(s), 1);

	/* Mode switch: new; switch back: another (the same bytes as the first, appended again). */
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_WORKSPACE_WRITE, NULL), 0);
	char *ww = step(f, s);
	char *wt = workspace_text(f->ws);
	char *ask = golden("approval-ask.txt");
	char *expected_ww = snapshot_of(wt, ask, NULL);
	assert_string_equal(ww, expected_ww);
	expect_nothing(f, s);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_READ_ONLY, NULL), 0);
	char *back = step(f, s);
	assert_string_equal(back, expected_ro);
	expect_nothing(f, s);

	/* A switch to the mode in force changes nothing. */
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_READ_ONLY, NULL), 0);
	expect_nothing(f, s);

	/* Approval switch: the never text. */
	assert_int_equal(dsb_session_set_approval(s, "never", NULL), 0);
	char *nv = step(f, s);
	char *never = golden("approval-never.txt");
	char *ro = golden("sandbox-read-only.txt");
	char *expected_nv = snapshot_of(ro, never, NULL);
	assert_string_equal(nv, expected_nv);
	s = reopen(f, s);
	expect_nothing(f, s);
	assert_int_equal(count_owned(s), 4);

	/* The deployment default changed while "down": a new snapshot on the next step. */
	dsb_config *cfg = dsb_config_new();
	dsb_policy *policy = NULL;
	assert_int_equal(dsb_config_set_workspace_root(cfg, f->ws, NULL), 0);
	cfg->approval_policy = DSB_APPROVAL_ASK;
	assert_int_equal(dsb_policy_new(cfg, &policy, NULL), 0);
	dsb_context_message *m = project_with(s, policy, cfg);
	assert_null(m); /* the session's own events pin both */
	dsb_policy_free(policy);
	dsb_config_free(cfg);

	free(expected_nv);
	free(ro);
	free(never);
	free(nv);
	free(back);
	free(expected_ww);
	free(ask);
	free(wt);
	free(ww);
	free(first);
	free(expected_ro);
	dsb_session_free(s);
}

/* A changed default reaches sessions that do not pin their own mode. */
static void test_default_change_between_runs(void **state)
{
	fixture *f = *state;
	dsb_session *s = new_session(f);
	char *first = step(f, s);
	expect_nothing(f, s);

	dsb_config *cfg = dsb_config_new();
	dsb_policy *policy = NULL;
	assert_int_equal(dsb_config_set_workspace_root(cfg, f->ws, NULL), 0);
	assert_int_equal(dsb_config_apply_env(cfg, "danger-full-access", NULL), 0);
	assert_int_equal(dsb_policy_new(cfg, &policy, NULL), 0);
	dsb_context_message *m = project_with(s, policy, cfg);
	assert_non_null(m);
	char *dfa = golden("sandbox-danger-full-access.txt");
	char *never = golden("approval-never.txt");
	char *expected = snapshot_of(dfa, never, NULL);
	assert_string_equal(dsb_context_message_text(m), expected);
	assert_int_equal(dsb_context_message_append(s, m, NULL, NULL), 0);
	dsb_context_message_free(m);
	assert_null(project_with(s, policy, cfg));
	/* Back under the old configuration: the first text again. */
	char *again = step(f, s);
	assert_string_equal(again, first);

	free(again);
	free(expected);
	free(never);
	free(dfa);
	dsb_policy_free(policy);
	dsb_config_free(cfg);
	free(first);
	dsb_session_free(s);
}

/*
 * Beyond DSH: a network policy other than full adds one sentence to sandbox:policy, and only
 * then; full (the default) keeps DSH's bytes, and going back to it re-emits them.
 */
static void test_network_sentence(void **state)
{
	fixture *f = *state;
	dsb_session *s = new_session(f);
	char *first = step(f, s);
	assert_null(strstr(first, "Network"));

	static const struct {
		const char *yaml, *sentence;
	} cases[] = {
		{"network: {access: none}\n",
		 " Network access is disabled: commands cannot reach any host, nor services of the "
		 "machine outside the sandbox."},
		{"network: {access: allowlist, allow: [registry.npmjs.org, \"*.debian.org:80\"]}\n",
		 " Network access is limited to these hosts, through a proxy the sandbox sets for "
		 "commands: registry.npmjs.org, *.debian.org:80 (ports 80 and 443 where no port is "
		 "given). Other hosts and ports are refused."},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dsb_config *cfg = NULL;
		dsb_policy *policy = NULL;
		assert_int_equal(
			dsb_config_parse(cases[i].yaml, strlen(cases[i].yaml), "t", &cfg, NULL), 0);
		assert_int_equal(dsb_config_set_workspace_root(cfg, f->ws, NULL), 0);
		assert_int_equal(dsb_policy_new(cfg, &policy, NULL), 0);
		dsb_context_message *m = project_with(s, policy, cfg);
		assert_non_null(m);
		const char *text = dsb_context_message_text(m);
		const char *at = strstr(text, cases[i].sentence);
		assert_non_null(at);
		/* Right after DSH's sandbox text, which is otherwise unchanged. */
		size_t head = (size_t)(at - text);
		assert_memory_equal(text, first, head);
		assert_string_equal(at + strlen(cases[i].sentence), first + head);
		assert_int_equal(dsb_context_message_append(s, m, NULL, NULL), 0);
		dsb_context_message_free(m);
		/* Unchanged policy: nothing new. */
		assert_null(project_with(s, policy, cfg));
		dsb_policy_free(policy);
		dsb_config_free(cfg);
	}
	char *again = step(f, s);
	assert_string_equal(again, first);
	free(again);
	free(first);
	dsb_session_free(s);
}

/* §9.3 (c), §11.30 #3: a compaction that replaced the retained snapshot re-emits it. */
static void compaction_reemits(fixture *f, const char *type)
{
	dsb_session *s = new_session(f);
	uint64_t u0 = append_prompt(s, "hello");
	char *first = step(f, s);
	uint64_t snap = last_owned_seq(s);
	uint64_t u1 = append_prompt(s, "again");
	expect_nothing(f, s);

	char *sources = NULL;
	assert_true(asprintf(&sources, "%" PRIu64 ",%" PRIu64 ",%" PRIu64, u0, snap, u1) > 0);
	(void)compact(s, type, u0, u1, sources);
	free(sources);
	char *again = step(f, s);
	assert_string_equal(again, first);
	expect_nothing(f, s);
	s = reopen(f, s);
	expect_nothing(f, s);
	assert_int_equal(count_owned(s), 2);
	free(again);
	free(first);
	dsb_session_free(s);
}

static void test_compaction_by_user_message_reemits(void **state)
{
	compaction_reemits(*state, "user/message");
}

static void test_compaction_by_assistant_message_reemits(void **state)
{
	compaction_reemits(*state, "assistant/message");
}

/* §11.30 #5: a replacement that does not cite the snapshot changes nothing. */
static void test_unrelated_replacement_changes_nothing(void **state)
{
	fixture *f = *state;
	dsb_session *s = new_session(f);
	char *first = step(f, s);
	uint64_t u1 = append_prompt(s, "one");
	uint64_t u2 = append_prompt(s, "two");
	char *sources = NULL;
	assert_true(asprintf(&sources, "%" PRIu64 ",%" PRIu64, u1, u2) > 0);
	(void)compact(s, "user/message", u1, u2, sources);
	free(sources);
	expect_nothing(f, s);
	assert_int_equal(count_owned(s), 1);
	free(first);
	dsb_session_free(s);
}

/*
 * DSH's live rule: a replacement citing the retained snapshot in sourceEventSeqs drops it even
 * when its range leaves the snapshot on the surface, so the next step states it again.
 */
static void test_cited_snapshot_is_reemitted(void **state)
{
	fixture *f = *state;
	dsb_session *s = new_session(f);
	char *first = step(f, s);
	uint64_t snap = last_owned_seq(s);
	uint64_t u1 = append_prompt(s, "one");
	char *sources = NULL;
	assert_true(asprintf(&sources, "%" PRIu64 ",%" PRIu64, snap, u1) > 0);
	(void)compact(s, "user/message", u1, u1, sources);
	free(sources);
	char *again = step(f, s);
	assert_string_equal(again, first);
	expect_nothing(f, s);
	free(again);
	free(first);
	dsb_session_free(s);
}

/* §11.30 #1: another session's snapshots do not count. */
static void test_other_sessions_ignored(void **state)
{
	fixture *f = *state;
	dsb_session *a = new_session(f);
	dsb_session *b = new_session(f);
	char *first = step(f, a);
	char *in_b = step(f, b);
	assert_string_equal(first, in_b);
	assert_int_equal(dsb_session_set_mode(b, DSB_MODE_DANGER_FULL_ACCESS, NULL), 0);
	char *changed = step(f, b);
	expect_nothing(f, a);
	assert_int_equal(count_owned(a), 1);
	free(changed);
	free(in_b);
	free(first);
	dsb_session_free(b);
	dsb_session_free(a);
}

/* §8.9: delegated sessions (origin subagent, or a depth > 0) state their fixed scope last. */
static void test_delegated_sessions(void **state)
{
	fixture *f = *state;
	static const char *const headers[] = {
		"\"origin\":\"subagent\",\"delegationDepth\":1",
		"\"delegationDepth\":2",
		"\"origin\":\"subagent\",\"delegationDepth\":0",
	};
	char *ro = golden("sandbox-read-only.txt");
	char *never = golden("approval-never.txt");
	char *deleg = golden("subagent-delegation.txt");
	char *expected = snapshot_of(ro, never, deleg);
	for (size_t i = 0; i < ELEMENTSOF(headers); i++) {
		char *path = join(f->dir, "child.jsonl");
		char *log = NULL;
		/* As DSH seeds a child: the parent's mode and approval never, by delegation. */
		assert_true(asprintf(&log,
				     "{\"type\":\"session\",\"version\":0,\"id\":\"child\","
				     "\"createdAt\":1,\"cwd\":\"%s\",\"parentSession\":\"p\",%s}\n"
				     "{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"read-only\","
				     "\"source\":\"delegation\"}}\n"
				     "{\"type\":\"approval/policy\",\"data\":{\"policy\":\"never\","
				     "\"source\":\"delegation\"}}\n",
				     f->ws, headers[i]) > 0);
		dsb_test_write_file(path, log, strlen(log));
		dsb_session *s = NULL;
		assert_int_equal(dsb_session_open(f->store, path, &s, NULL), 0);
		dsb_context_message *m = project(f, s);
		assert_non_null(m);
		assert_string_equal(dsb_context_message_text(m), expected);
		assert_non_null(
			strstr(dsb_context_message_json(m),
			       "{\"name\":\"approval:policy\",\"text\":\"Approval prompts "));
		assert_non_null(strstr(dsb_context_message_json(m),
				       "{\"name\":\"subagent:delegation\",\"text\":\"You are a "
				       "delegated subagent: "));
		dsb_context_message_free(m);
		dsb_session_free(s);
		free(log);
		free(path);
	}
	/* A top-level session never says it. */
	dsb_session *top = new_session(f);
	dsb_context_message *m = project(f, top);
	assert_null(strstr(dsb_context_message_text(m), "delegated"));
	dsb_context_message_free(m);
	dsb_session_free(top);
	free(expected);
	free(deleg);
	free(never);
	free(ro);
}

/* §9.4: the bytes do not depend on TMPDIR, TMP or TEMP (writable temp dirs are not named). */
static void test_byte_stable_across_tmpdir(void **state)
{
	fixture *f = *state;
	static const char *const vars[] = {"TMPDIR", "TMP", "TEMP"};
	static const char *const values[] = {NULL, "/var/tmp", "/nonexistent/x", "rel", "/"};
	char *saved[ELEMENTSOF(vars)];
	for (size_t i = 0; i < ELEMENTSOF(vars); i++)
		saved[i] = getenv(vars[i]) ? strdup(getenv(vars[i])) : NULL;

	dsb_session *s = new_session(f);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_WORKSPACE_WRITE, NULL), 0);
	char *reference = NULL;
	for (size_t v = 0; v < ELEMENTSOF(vars); v++) {
		for (size_t k = 0; k < ELEMENTSOF(values); k++) {
			if (values[k])
				assert_int_equal(setenv(vars[v], values[k], 1), 0);
			else
				assert_int_equal(unsetenv(vars[v]), 0);
			dsb_context_message *m = project(f, s);
			assert_non_null(m);
			if (!reference)
				reference = strdup(dsb_context_message_json(m));
			char *a = without_id(reference);
			char *b = without_id(dsb_context_message_json(m));
			assert_string_equal(a, b);
			free(a);
			free(b);
			dsb_context_message_free(m);
		}
	}
	/* With a snapshot logged under one temp dir, any other appends nothing. */
	char *text = step(f, s);
	free(text);
	for (size_t v = 0; v < ELEMENTSOF(vars); v++) {
		for (size_t k = 0; k < ELEMENTSOF(values); k++) {
			if (values[k])
				assert_int_equal(setenv(vars[v], values[k], 1), 0);
			else
				assert_int_equal(unsetenv(vars[v]), 0);
			expect_nothing(f, s);
		}
	}
	free(reference);
	dsb_session_free(s);
	for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
		if (saved[i])
			assert_int_equal(setenv(vars[i], saved[i], 1), 0);
		else
			assert_int_equal(unsetenv(vars[i]), 0);
		free(saved[i]);
	}
}

/* The workspace path as the resolver canonicalises it, JSON-quoted in the text. */
static void test_awkward_workspace_in_session(void **state)
{
	fixture *f = *state;
	char *dir = join(f->dir, "a \"q\" \\b\\ \xC3\xBCn\xC3\xAF\t\x01 {x}");
	assert_int_equal(mkdir(dir, 0755), 0);
	/* Reached through a symlink and "..": the canonical path is what the text names. */
	char *link = join(f->dir, "link");
	assert_int_equal(symlink(dir, link), 0);
	char *spelled = join(link, "sub/..");
	char *sub = join(dir, "sub");
	assert_int_equal(mkdir(sub, 0755), 0);

	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, spelled, &s, NULL), 0);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_WORKSPACE_WRITE, NULL), 0);
	dsb_context_message *m = project(f, s);
	char *expected = NULL;
	assert_true(
		asprintf(&expected,
			 "workspace: \"%s/a \\\"q\\\" \\\\b\\\\ \xC3\xBCn\xC3\xAF\\t\\u0001 {x}\". "
			 "Some platform",
			 f->dir) > 0);
	if (!strstr(dsb_context_message_text(m), expected))
		fail_msg("%s\ndoes not contain\n%s", dsb_context_message_text(m), expected);
	dsb_context_message_free(m);
	dsb_session_free(s);
	free(expected);
	free(sub);
	free(spelled);
	free(link);
	free(dir);
}

/* A workspace path holding a {{variable}} is interpolated as DSH does, or refused with its text. */
static void test_workspace_path_with_references(void **state)
{
	fixture *f = *state;
	char *dir = join(f->dir, "w{{model}}");
	assert_int_equal(mkdir(dir, 0755), 0);
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, dir, &s, NULL), 0);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_WORKSPACE_WRITE, NULL), 0);
	dsb_context_message *m = NULL;
	dsb_error err = {0};
	assert_int_equal(dsb_context_project(s, f->policy, f->cfg, &m, &err), -DSB_E_INVALID_ARGS);
	assert_null(m);
	assert_string_equal(err.message, "prompt variable \"{{model}}\" has no value for this "
					 "assembly (context \"sandbox:policy\")");
	dsb_session_free(s);
	free(dir);
}

/* --- the fixtures: every owned snapshot reproduced from the log before it ----------------- */

/* What each fixture's deployment was configured with (its log pins nothing else). */
static const struct {
	const char *name;
	dsb_mode mode;
	dsb_approval_policy approval;
} fixture_configs[] = {
	{"escalation-approved.session.jsonl", DSB_MODE_WORKSPACE_WRITE, DSB_APPROVAL_ASK},
	{"escalation-rejected.session.jsonl", DSB_MODE_WORKSPACE_WRITE, DSB_APPROVAL_ASK},
	{"missing-sandbox-runner.session.jsonl", DSB_MODE_READ_ONLY, DSB_APPROVAL_ASK},
	/* DSH_PERMISSION_MODE=danger-full-access, which also sets approval never. */
	{"packed-chunks.session.jsonl", DSB_MODE_DANGER_FULL_ACCESS, DSB_APPROVAL_NEVER},
	/* The log pins read-only itself: the wider default shows that the fold wins. */
	{"subagent-continuable-inheritance.session.jsonl", DSB_MODE_WORKSPACE_WRITE,
	 DSB_APPROVAL_NEVER},
};

static char *replace_all(const char *s, const char *from, const char *to)
{
	strbuf sb = STRBUF_INIT;
	size_t n = strlen(from);
	for (const char *p; (p = strstr(s, from)); s = p + n) {
		assert_int_equal(strbuf_append(&sb, s, (size_t)(p - s)), 0);
		assert_int_equal(strbuf_puts(&sb, to), 0);
	}
	assert_int_equal(strbuf_puts(&sb, s), 0);
	return strbuf_take(&sb);
}

/* Writes lines [0, @n) of @lines to @path, each with its newline. */
static void write_prefix(const char *path, char *const *lines, size_t n)
{
	strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(strbuf_printf(&sb, "%s\n", lines[i]), 0);
	dsb_test_write_file(path, sb.buf ? sb.buf : "", sb.len);
	strbuf_done(&sb);
}

static dsb_context_message *project_file(fixture *f, const char *path, const dsb_policy *policy,
					 const dsb_config *cfg)
{
	dsb_session *s = NULL;
	dsb_error err = {0};
	if (dsb_session_open(f->store, path, &s, &err) < 0)
		fail_msg("open %s: %s", path, err.message);
	dsb_context_message *m = project_with(s, policy, cfg);
	dsb_session_free(s);
	return m;
}

/* The last line of the file at @path, without "seq":N,"time":T, (a fixture line's shape). */
static char *last_line_without_seq_time(const char *path)
{
	char *text = dsb_test_read_file(path, NULL);
	assert_non_null(text);
	size_t len = strlen(text);
	assert_true(len > 1 && text[len - 1] == '\n');
	text[len - 1] = '\0';
	char *line = strrchr(text, '\n') + 1;
	const char *seq = strstr(line, ",\"seq\":");
	assert_non_null(seq);
	const char *p = seq + 7;
	while (*p >= '0' && *p <= '9')
		p++;
	assert_true(strncmp(p, ",\"time\":", 8) == 0);
	p += 8;
	while (*p >= '0' && *p <= '9')
		p++;
	char *out = NULL;
	assert_true(asprintf(&out, "%.*s%s", (int)(seq - line), line, p) > 0);
	free(text);
	return out;
}

/* Checks the fixture @name; returns how many owned snapshots it holds. */
static int check_fixture(fixture *f, const char *dir, const char *name, const char *cwd)
{
	size_t c = 0;
	while (c < ELEMENTSOF(fixture_configs) && strcmp(fixture_configs[c].name, name) != 0)
		c++;
	if (c == ELEMENTSOF(fixture_configs))
		fail_msg("fixture %s has no configuration in this test: add it", name);

	dsb_config *cfg = dsb_config_new();
	assert_non_null(cfg);
	cfg->mode = fixture_configs[c].mode;
	cfg->approval_policy = fixture_configs[c].approval;
	assert_int_equal(dsb_config_set_workspace_root(cfg, f->ws, NULL), 0);
	dsb_policy *policy = NULL;
	assert_int_equal(dsb_policy_new(cfg, &policy, NULL), 0);

	char *src = join(dir, name);
	char *raw = dsb_test_read_file(src, NULL);
	assert_non_null(raw);
	assert_non_null(strstr(raw, "\"cwd\":\"{{cwd}}\""));
	char *text = replace_all(raw, "{{cwd}}", cwd);
	char **lines = NULL;
	size_t n = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save)) {
		lines = reallocarray(lines, n + 1, sizeof(*lines));
		assert_non_null(lines);
		lines[n++] = l;
	}
	char *prefix = join(f->dir, "prefix.jsonl");

	int owned_count = 0;
	for (size_t i = 1; i < n; i++) {
		json_t *rec = json_loads(lines[i], 0, NULL);
		assert_non_null(rec);
		json_t *data = json_object_get(rec, "data");
		bool owned = strcmp(json_string_value(json_object_get(rec, "type")),
				    "user/message") == 0 &&
			     context_is_owned(data);
		if (!owned) {
			json_decref(rec);
			continue;
		}
		owned_count++;

		/* Just before it: exactly this message (id aside). */
		write_prefix(prefix, lines, i);
		dsb_context_message *m = project_file(f, prefix, policy, cfg);
		if (!m)
			fail_msg("%s line %zu: no snapshot projected", name, i + 1);
		const char *want_text = json_string_value(json_object_get(
			json_array_get(json_object_get(data, "content"), 0), "text"));
		assert_string_equal(dsb_context_message_text(m), want_text);

		const char *line_head = "{\"type\":\"user/message\",\"data\":";
		const char *line_tail = ",\"surfaceOp\":\"append\"}";
		size_t ll = strlen(lines[i]), hl = strlen(line_head), tl = strlen(line_tail);
		assert_true(strncmp(lines[i], line_head, hl) == 0);
		assert_string_equal(lines[i] + ll - tl, line_tail);
		char *want_data = strndup(lines[i] + hl, ll - hl - tl);
		char *a = without_id(want_data);
		char *b = without_id(dsb_context_message_json(m));
		assert_string_equal(b, a);
		free(a);
		free(b);

		/* Appended, the line is the fixture's line (with our id, seq and time). */
		dsb_session *s = NULL;
		assert_int_equal(dsb_session_open(f->store, prefix, &s, NULL), 0);
		assert_int_equal(dsb_context_message_append(s, m, NULL, NULL), 0);
		dsb_session_free(s);
		char *got_line = last_line_without_seq_time(prefix);
		char *fixture_id = NULL;
		const char *our_id = strrchr(dsb_context_message_json(m), ':') + 2;
		assert_true(asprintf(&fixture_id, "\"id\":\"%s",
				     json_string_value(json_object_get(data, "id"))) > 0);
		char *our = NULL;
		assert_true(asprintf(&our, "\"id\":\"%.36s", our_id) > 0);
		char *want_line = replace_all(lines[i], fixture_id, our);
		assert_string_equal(got_line, want_line);
		free(want_line);
		free(our);
		free(fixture_id);
		free(got_line);
		free(want_data);
		dsb_context_message_free(m);

		/* Right after ours, and right after the fixture's own: nothing. */
		m = project_file(f, prefix, policy, cfg);
		if (m)
			fail_msg("%s line %zu: projected again after ours: %s", name, i + 1,
				 dsb_context_message_json(m));
		write_prefix(prefix, lines, i + 1);
		m = project_file(f, prefix, policy, cfg);
		if (m)
			fail_msg("%s line %zu: projected right after it: %s", name, i + 1,
				 dsb_context_message_json(m));
		json_decref(rec);
	}
	/* Nothing changes the policy later in any fixture: every later step appends nothing. */
	for (size_t i = 2; i <= n; i++) {
		if (!strstr(lines[i - 1], "\"type\":\"step/start\""))
			continue;
		write_prefix(prefix, lines, i);
		int before_first = 0;
		for (size_t k = 1; k < i; k++)
			before_first += strstr(lines[k], DSB_CONTEXT_SOURCE) != NULL;
		dsb_context_message *m = project_file(f, prefix, policy, cfg);
		if (before_first > 0 && m)
			fail_msg("%s: projected at the step/start of line %zu: %s", name, i,
				 dsb_context_message_json(m));
		dsb_context_message_free(m);
	}
	write_prefix(prefix, lines, n);
	dsb_context_message *m = project_file(f, prefix, policy, cfg);
	if (m)
		fail_msg("%s: projected at the end of the log: %s", name,
			 dsb_context_message_json(m));

	free(prefix);
	free(lines);
	free(text);
	free(raw);
	free(src);
	dsb_policy_free(policy);
	dsb_config_free(cfg);
	return owned_count;
}

/* Owned snapshots (user/message of ours) in the log of @s. */
static int count_snapshot(const log_record *rec, void *userdata, dsb_error *reterr)
{
	if (strcmp(rec->type, "user/message") == 0 &&
	    context_is_owned(json_object_get(rec->json, "data")))
		(*(size_t *)userdata)++;
	return 0;
}

static size_t snapshots_in(dsb_session *s)
{
	size_t n = 0;
	dsb_error err = {0};
	if (session_scan(s, count_snapshot, &n, NULL, &err) < 0)
		fail_msg("scan: %s", err.message);
	return n;
}

/*
 * @n processes released at once, each projecting and appending the session's snapshot. Returns
 * how many reported an append; fails on any error.
 */
static int race_project_append(fixture *f, const char *path, int n)
{
	int gate[2];
	assert_int_equal(pipe(gate), 0);
	pid_t pids[32];
	assert_true(n <= 32);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] > 0)
			continue;
		close(gate[1]);
		char c;
		if (read(gate[0], &c, 1) != 0)
			_exit(3);
		dsb_session *s = NULL;
		dsb_context_message *m = NULL;
		int r = dsb_session_open(f->store, path, &s, NULL);
		if (r >= 0)
			r = dsb_context_project_append(s, f->policy, f->cfg, &m, NULL, NULL);
		int status = r < 0 ? 2 : r > 0 && m ? 1 : r == 0 && !m ? 0 : 2;
		dsb_context_message_free(m);
		dsb_session_free(s);
		_exit(status);
	}
	close(gate[0]);
	close(gate[1]); /* EOF releases them all at once */
	int appended = 0;
	for (int i = 0; i < n; i++) {
		int st;
		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st));
		assert_true(WEXITSTATUS(st) <= 1);
		appended += WEXITSTATUS(st);
	}
	return appended;
}

/* Item 3 of issue 13: decided and appended under one lock, so one snapshot per state. */
static void test_concurrent_project_append(void **state)
{
	fixture *f = *state;
	dsb_session *s = NULL;
	assert_int_equal(dsb_session_create(f->store, f->ws, &s, NULL), 0);
	const char *path = dsb_session_path(s);
	static const dsb_mode modes[] = {DSB_MODE_READ_ONLY, DSB_MODE_WORKSPACE_WRITE,
					 DSB_MODE_DANGER_FULL_ACCESS};
	size_t expected = 0;
	for (int round = 0; round < 6; round++) {
		if (round > 0 && round % 2 == 0)
			assert_int_equal(dsb_session_set_mode(s, modes[round / 2 % 3], NULL), 0);
		int changed = round % 2 == 0;
		assert_int_equal(race_project_append(f, path, 12), changed);
		expected += (size_t)changed;
		assert_int_equal(snapshots_in(s), expected);
	}
	/* A state already logged is not appended again, whoever asks. */
	dsb_context_message *m = NULL;
	assert_int_equal(dsb_context_project_append(s, f->policy, f->cfg, &m, NULL, NULL), 0);
	assert_null(m);
	dsb_session_free(s);
}

static void test_fixture_snapshots(void **state)
{
	fixture *f = *state;
	char *dir = dsb_test_dsh_fixture(NULL);
	/* {{cwd}} becomes a real canonical directory that needs no JSON escaping. */
	char *cwd = join(f->dir, "fx");
	assert_int_equal(mkdir(cwd, 0755), 0);
	assert_null(strpbrk(cwd, "\"\\{}\n\t"));

	DIR *d = opendir(dir);
	assert_non_null(d);
	int fixtures = 0, snapshots = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 6, ".jsonl") != 0)
			continue;
		int k = check_fixture(f, dir, e->d_name, cwd);
		if (k == 0)
			fail_msg("fixture %s holds no snapshot", e->d_name);
		fixtures++;
		snapshots += k;
	}
	closedir(d);
	assert_int_equal(fixtures, (int)ELEMENTSOF(fixture_configs));
	assert_true(snapshots >= fixtures);
	print_message("reproduced %d snapshots from %d fixtures\n", snapshots, fixtures);
	free(cwd);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sandbox_texts),
		cmocka_unit_test(test_approval_and_delegation_texts),
		cmocka_unit_test(test_assembly_order_and_join),
		cmocka_unit_test(test_assembly_rejects_duplicates_and_non_finite),
		cmocka_unit_test(test_assembly_filters_empty_and_interpolates),
		cmocka_unit_test(test_interpolation),
		cmocka_unit_test(test_message_shape),
		cmocka_unit_test(test_project_state_machine),
		cmocka_unit_test_setup_teardown(test_restores_latest_visible_snapshot, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_malformed_retained_is_replaced, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cleared_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_surface_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_default_change_between_runs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_network_sentence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compaction_by_user_message_reemits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_compaction_by_assistant_message_reemits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_unrelated_replacement_changes_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cited_snapshot_is_reemitted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_other_sessions_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delegated_sessions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_stable_across_tmpdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_awkward_workspace_in_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_workspace_path_with_references, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fixture_snapshots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_project_append, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
