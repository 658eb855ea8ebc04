/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the call piece through its public API, as a C harness drives it: fenced
 * writes, edits and reads; a bash call denied in read-only mode; an escalation inside a session,
 * answered by a C callback (allowed once, rejected) with its turn and audit pair; cancellation
 * of a running command, of an answerer program and of a call not yet started; calls from
 * several threads at once; the JSON of each result. Real processes;
 * both backends must be usable here (never skipped).
 *
 *	TMP/dsb-test.XXXXXX/
 *	├── config.yaml   the configuration every call loads (no answerer program)
 *	├── store/        the session store
 *	└── ws/           the workspace: the session's cwd, the agentless calls' root
 */
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <dsb/call.h>
#include <dsb/session.h>

#include "src/core/cleanup.h"
#include "helpers.h"

/* A growing text, for what a hook is told. */
typedef struct strbuf_like {
	char *buf;
	size_t len;
} strbuf_like;

typedef struct fixture {
	char *dir, *ws, *store_dir, *config;
	dsb_call_setup setup;
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
	f->ws = join(f->dir, "ws");
	f->store_dir = join(f->dir, "store");
	f->config = join(f->dir, "config.yaml");
	assert_int_equal(mkdir(f->ws, 0755), 0);
	/* Nothing of the environment decides: the file is named, its mode is overridden. */
	static const char yaml[] = "bash: { graceMs: 300 }\n";
	dsb_test_write_file(f->config, yaml, sizeof(yaml) - 1);
	unsetenv("DSH_PERMISSION_MODE");
	f->setup = (dsb_call_setup){.config_path = f->config, .store_path = f->store_dir};
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	dsb_test_rm_rf(f->dir);
	free(f->dir);
	free(f->ws);
	free(f->store_dir);
	free(f->config);
	free(f);
	return 0;
}

/* An agentless request for @tool in @mode, rooted in the fixture's workspace. */
static dsb_call_request request(const fixture *f, dsb_tool tool, dsb_mode mode)
{
	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = tool;
	req.mode = mode;
	req.workspace = f->ws;
	return req;
}

/* Runs @req as one call of @f's setup; the result in *@ret. */
static void run(const fixture *f, const dsb_call_request *req, dsb_answerer_fn answer,
		void *userdata, dsb_call_result *ret)
{
	dsb_call *call = NULL;
	dsb_error err = {0};
	assert_int_equal(dsb_call_new(&f->setup, &call, &err), 0);
	dsb_call_set_answerer(call, answer, userdata);
	*ret = (dsb_call_result){0};
	assert_int_equal(dsb_call_run(call, req, ret, &err), 0);
	assert_null(dsb_call_free(call));
}

static char *json_of(const dsb_call_result *res)
{
	char *json = NULL;
	assert_int_equal(dsb_call_render_json(res, &json, NULL), 0);
	return json;
}

static void test_tool_names(void **state)
{
	(void)state;
	static const char *const names[] = {"bash", "exec", "write", "edit", "read"};
	for (int t = 0; t < _DSB_TOOL_MAX; t++) {
		assert_string_equal(dsb_tool_to_string((dsb_tool)t), names[t]);
		assert_int_equal(dsb_tool_from_string(names[t]), t);
	}
	assert_null(dsb_tool_to_string(_DSB_TOOL_MAX));
	assert_int_equal(dsb_tool_from_string("Bash"), _DSB_TOOL_INVALID);
	assert_int_equal(dsb_tool_from_string(NULL), _DSB_TOOL_INVALID);
}

static void test_fenced_write_edit_read(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *path = join(f->ws, "notes.txt");
	dsb_call_result res;

	dsb_call_request req = request(f, DSB_TOOL_WRITE, DSB_MODE_WORKSPACE_WRITE);
	req.path = "notes.txt";
	req.content = "one two two\n";
	req.content_len = strlen(req.content);
	run(f, &req, NULL, NULL, &res);
	assert_false(res.is_error);
	assert_true(res.prepared);
	assert_true(res.created);
	_cleanup_free_ char *want = NULL;
	assert_true(asprintf(&want,
			     "<path>%s</path>\n<type>file</type>\n<content>\nCreated file\n"
			     "</content>",
			     path) > 0);
	assert_string_equal(res.text, want);
	assert_int_equal(res.text_len, strlen(want));
	_cleanup_free_ char *json = json_of(&res);
	_cleanup_free_ char *want_json = NULL;
	assert_true(asprintf(&want_json, "{\"path\":\"%s\",\"operation\":\"create\"}", path) > 0);
	assert_string_equal(json, want_json);
	dsb_call_result_done(&res);

	req = request(f, DSB_TOOL_EDIT, DSB_MODE_WORKSPACE_WRITE);
	req.path = path;
	req.old_string = "two";
	req.new_string = "three";
	req.replace_all = true;
	run(f, &req, NULL, NULL, &res);
	assert_false(res.is_error);
	assert_int_equal(res.replacements, 2);
	free(want);
	assert_true(asprintf(&want,
			     "The file %s has been updated. All occurrences were successfully "
			     "replaced.",
			     path) > 0);
	assert_string_equal(res.text, want);
	dsb_call_result_done(&res);

	/* A read passes in read-only mode; its text is the file's. */
	req = request(f, DSB_TOOL_READ, DSB_MODE_READ_ONLY);
	req.path = "notes.txt";
	run(f, &req, NULL, NULL, &res);
	assert_false(res.is_error);
	assert_string_equal(res.text, "one three three\n");
	assert_string_equal(res.path, path);
	free(json);
	json = json_of(&res);
	free(want_json);
	assert_true(asprintf(&want_json, "{\"path\":\"%s\",\"content\":\"one three three\\n\"}",
			     path) > 0);
	assert_string_equal(json, want_json);
	dsb_call_result_done(&res);
}

static void test_fenced_write_denied_in_read_only(void **state)
{
	fixture *f = *state;
	dsb_call_result res;
	dsb_call_request req = request(f, DSB_TOOL_WRITE, DSB_MODE_READ_ONLY);
	req.path = "denied.txt";
	req.content = "x";
	req.content_len = 1;
	run(f, &req, NULL, NULL, &res);
	assert_true(res.is_error);
	assert_true(res.prepared);
	assert_int_equal(res.error.code, DSB_E_FS_SANDBOX_DENIED);
	/* mapError (dsh-compat §7.4): the marker and the hint, never the fence's own first line. */
	assert_string_equal(res.text,
			    "Error: [sandbox: file access denied under read-only mode]\n"
			    "[sandbox: escalation available — retry this exact operation once with "
			    "sandbox_permissions (the narrowest wider mode that suffices) + "
			    "justification; the approval prompt asks the user]");
	_cleanup_free_ char *json = json_of(&res);
	assert_non_null(strstr(
		json, "{\"error\":{\"name\":\"FsError\",\"code\":\"FS_SANDBOX_DENIED\","
		      "\"message\":\"[sandbox: file access denied under read-only mode]\\n"));
	dsb_call_result_done(&res);
	_cleanup_free_ char *path = join(f->ws, "denied.txt");
	assert_int_equal(access(path, F_OK), -1);
}

static void test_arguments_checked_first(void **state)
{
	fixture *f = *state;
	static const struct {
		dsb_tool tool;
		const char *command, *path, *old_string, *new_string, *perm, *just;
		dsb_code code;
		const char *text;
	} cases[] = {
		{DSB_TOOL_BASH, " \t", NULL, NULL, NULL, NULL, NULL, DSB_E_INVALID_ARGS,
		 "Error: invalid command: expected a non-empty string"},
		{DSB_TOOL_BASH, "true", NULL, NULL, NULL, "workspace-write", NULL,
		 DSB_E_INVALID_ARGS,
		 "Error: invalid escalation: sandbox_permissions requires a justification"},
		{DSB_TOOL_WRITE, NULL, "", NULL, NULL, NULL, NULL, DSB_E_FS_NOT_FOUND,
		 "Error: file_path must be a non-empty string"},
		{DSB_TOOL_EDIT, NULL, "f", "", "x", NULL, NULL, DSB_E_INVALID_ARGS,
		 "Error: old_string must be a non-empty string"},
		{DSB_TOOL_EDIT, NULL, "f", "x", "x", NULL, NULL, DSB_E_INVALID_ARGS,
		 "Error: old_string and new_string must differ"},
		{DSB_TOOL_READ, NULL, "f", NULL, NULL, "workspace-write", "j", DSB_E_INVALID_ARGS,
		 "Error: reads are not escalated: nothing to approve"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dsb_call_request req = request(f, cases[i].tool, DSB_MODE_WORKSPACE_WRITE);
		req.command = cases[i].command;
		req.path = cases[i].path;
		req.content = "";
		req.old_string = cases[i].old_string;
		req.new_string = cases[i].new_string;
		req.sandbox_permissions = cases[i].perm;
		req.justification = cases[i].just;
		dsb_call_result res;
		run(f, &req, NULL, NULL, &res);
		assert_true(res.is_error);
		assert_false(res.prepared);
		assert_int_equal(res.error.code, cases[i].code);
		assert_string_equal(res.text, cases[i].text);
		dsb_call_result_done(&res);
	}
}

static void test_bash_denied_in_read_only(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *target = join(f->ws, "out.txt");
	_cleanup_free_ char *command = NULL;
	assert_true(asprintf(&command, "echo x > '%s'", target) > 0);
	dsb_call_request req = request(f, DSB_TOOL_BASH, DSB_MODE_READ_ONLY);
	req.command = command;
	for (dsb_backend b = 0; b < _DSB_BACKEND_MAX; b++) {
		req.backend = b;
		dsb_call_result res;
		run(f, &req, NULL, NULL, &res);
		/* A denial is a result the model reads, not a failed call. */
		assert_false(res.is_error);
		assert_true(res.run.denied);
		assert_int_equal(res.run.mode, DSB_MODE_READ_ONLY);
		assert_int_not_equal(res.run.exit_code, 0);
		assert_non_null(strstr(
			res.text, "\n[sandbox: file access denied under read-only mode]\n"
				  "[sandbox: escalation available — retry this exact command"));
		_cleanup_free_ char *json = json_of(&res);
		assert_non_null(strstr(json, "\"sandbox\":{\"mode\":\"read-only\",\"denied\":true,"
					     "\"enforcement\":\"full\"}"));
		dsb_call_result_done(&res);
		assert_int_equal(access(target, F_OK), -1);
	}
}

/* --- escalation inside a session ------------------------------------------------------------ */

typedef struct answerer {
	dsb_approval_outcome outcome;
	int asked;
	char tool[16], reason[256], subject[256];
	uint64_t timeout_ms;
} answerer;

static int answer(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
{
	answerer *a = userdata;
	a->asked++;
	(void)snprintf(a->tool, sizeof(a->tool), "%s", req->tool_name);
	(void)snprintf(a->reason, sizeof(a->reason), "%s", req->reason);
	(void)snprintf(a->subject, sizeof(a->subject), "%s", req->subject);
	a->timeout_ms = req->timeout_ms;
	*ret = a->outcome;
	return 0;
}

/* A read-only session rooted in the workspace; its id in *@ret_id, its log in *@ret_log. */
static void new_session(const fixture *f, char **ret_id, char **ret_log)
{
	dsb_store *store = NULL;
	dsb_session *s = NULL;
	assert_int_equal(dsb_store_open(f->store_dir, &store, NULL), 0);
	dsb_store_set_fsync(store, false);
	assert_int_equal(dsb_session_create(store, f->ws, &s, NULL), 0);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_READ_ONLY, NULL), 0);
	*ret_id = strdup(dsb_session_id(s));
	*ret_log = strdup(dsb_session_path(s));
	dsb_session_free(s);
	dsb_store_free(store);
}

/* Whether @log holds @needles in this order, each after the one before. */
static bool log_has_in_order(const char *log, const char *const *needles, size_t n)
{
	_cleanup_free_ char *text = dsb_test_read_file(log, NULL);
	const char *at = text;
	for (size_t i = 0; at && i < n; i++)
		if ((at = strstr(at, needles[i])))
			at += strlen(needles[i]);
	return at != NULL;
}

static void test_escalation_answered_by_a_callback(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *id = NULL, *log = NULL;
	new_session(f, &id, &log);
	_cleanup_free_ char *target = join(f->ws, "escalated.txt");
	_cleanup_free_ char *command = NULL;
	assert_true(asprintf(&command, "echo yes > '%s'", target) > 0);

	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = DSB_TOOL_BASH;
	req.session = id;
	req.command = command;
	req.sandbox_permissions = "workspace-write";
	req.justification = "the test writes into the workspace";
	req.call_id = "call-1";

	/* Allowed once: it runs wider, inside the turn the call opened and closed. */
	answerer a = {.outcome = DSB_OUTCOME_ALLOWED_ONCE};
	dsb_call_result res;
	run(f, &req, answer, &a, &res);
	assert_int_equal(a.asked, 1);
	assert_string_equal(a.tool, "bash");
	assert_string_equal(a.reason, "escalate sandbox to workspace-write: the test writes into "
				      "the workspace");
	assert_string_equal(a.subject, command);
	assert_int_equal(a.timeout_ms, 120000); /* bash.timeoutMs: the call gave none */
	assert_false(res.is_error);
	assert_false(res.run.denied);
	assert_int_equal(res.run.mode, DSB_MODE_WORKSPACE_WRITE);
	assert_string_equal(res.text, "(no output)");
	dsb_call_result_done(&res);
	_cleanup_free_ char *written = dsb_test_read_file(target, NULL);
	assert_string_equal(written, "yes\n");
	static const char *const allowed[] = {
		"\"type\":\"turn/start\"",
		"\"data\":{\"turn\":1}",
		"\"type\":\"approval/asked\"",
		("\"toolName\":\"bash\",\"callId\":\"call-1\",\"reason\":\"escalate sandbox to "
		 "workspace-write: the test writes into the workspace\""),
		"\"type\":\"approval/decided\"",
		"\"outcome\":\"allowed-once\"",
		"\"type\":\"turn/end\"",
		"\"data\":{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}",
	};
	assert_true(log_has_in_order(log, allowed, sizeof(allowed) / sizeof(allowed[0])));

	/* Rejected: refused with DSH's text, nothing ran, the pair audited in turn 2. */
	assert_int_equal(unlink(target), 0);
	a = (answerer){.outcome = DSB_OUTCOME_REJECTED};
	req.timeout_ms = 5000;
	run(f, &req, answer, &a, &res);
	assert_int_equal(a.asked, 1);
	assert_int_equal(a.timeout_ms, 5000);
	assert_true(res.is_error);
	assert_false(res.prepared);
	assert_int_equal(res.error.code, DSB_E_ESCALATION_REFUSED);
	assert_string_equal(res.text, "Error: the user rejected escalating this command to "
				      "\"workspace-write\"");
	dsb_call_result_done(&res);
	assert_int_equal(access(target, F_OK), -1);
	static const char *const rejected[] = {
		"\"data\":{\"turn\":2}",
		"\"type\":\"approval/asked\"",
		"\"outcome\":\"rejected\"",
		"\"data\":{\"turn\":2,\"reason\":{\"kind\":\"completed\"}}",
	};
	assert_true(log_has_in_order(log, rejected, sizeof(rejected) / sizeof(rejected[0])));

	/* No answerer at all: unavailable, refused. */
	run(f, &req, NULL, NULL, &res);
	assert_int_equal(res.error.code, DSB_E_ESCALATION_REFUSED);
	assert_string_equal(res.text, "Error: sandbox escalation to \"workspace-write\" requires "
				      "approval, but no approval channel is available");
	dsb_call_result_done(&res);
}

static void test_fs_escalation_answered_by_a_callback(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *id = NULL, *log = NULL;
	new_session(f, &id, &log);
	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = DSB_TOOL_WRITE;
	req.session = id;
	req.path = "granted.txt";
	req.content = "granted";
	req.content_len = strlen(req.content);
	req.sandbox_permissions = "workspace-write";
	req.justification = "the test writes a file";
	answerer a = {.outcome = DSB_OUTCOME_ALLOWED_ONCE};
	dsb_call_result res;
	run(f, &req, answer, &a, &res);
	assert_int_equal(a.asked, 1);
	assert_string_equal(a.tool, "write");
	assert_string_equal(a.subject, "granted.txt");
	assert_false(res.is_error);
	assert_true(res.created);
	dsb_call_result_done(&res);
}

/* --- cancellation --------------------------------------------------------------------------- */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *cancel_later(void *call)
{
	struct timespec pause = {0, 300 * 1000 * 1000};
	nanosleep(&pause, NULL);
	dsb_call_cancel(call);
	return NULL;
}

static void test_cancel_kills_the_running_command(void **state)
{
	fixture *f = *state;
	dsb_call_request req = request(f, DSB_TOOL_BASH, DSB_MODE_READ_ONLY);
	req.command = "echo before; trap '' TERM; sleep 30";
	for (dsb_backend b = 0; b < _DSB_BACKEND_MAX; b++) {
		req.backend = b;
		dsb_call *call = NULL;
		assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, cancel_later, call), 0);
		double start = now();
		dsb_call_result res = {0};
		assert_int_equal(dsb_call_run(call, &req, &res, NULL), 0);
		double took = now() - start;
		assert_int_equal(pthread_join(t, NULL), 0);
		/* TERM is trapped: SIGKILL after graceMs (300 ms) ends it. */
		assert_true(took < 10.0);
		assert_true(res.is_error);
		assert_true(res.prepared);
		assert_int_equal(res.error.code, DSB_E_ABORTED);
		assert_string_equal(res.text, "Error: tool call aborted");
		/* What the command said before it was stopped is kept beside the error. */
		assert_true(res.run.aborted);
		assert_string_equal(res.run.out.text, "before\n");
		assert_true(res.run.signal == SIGTERM || res.run.signal == SIGKILL);
		_cleanup_free_ char *json = json_of(&res);
		_cleanup_free_ char *expected = NULL;
		assert_true(
			asprintf(
				&expected,
				"{\"error\":{\"name\":\"AbortError\",\"code\":\"ABORTED\","
				"\"message\":\"tool call aborted\"},\"exitCode\":null,"
				"\"signal\":\"SIG%s\",\"timedOut\":false,\"aborted\":true,"
				"\"timeoutMs\":120000,\"stdout\":{\"text\":\"before\\n\","
				"\"truncated\":false,\"spillPath\":null},\"stderr\":{\"text\":\"\","
				"\"truncated\":false,\"spillPath\":null},\"sandbox\":{\"mode\":"
				"\"read-only\",\"denied\":false,\"enforcement\":\"full\"}}",
				sigabbrev_np(res.run.signal)) > 0);
		assert_string_equal(json, expected);
		dsb_call_result_done(&res);
		dsb_call_free(call);
	}
}

static void test_cancel_stops_the_answerer_program(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *id = NULL, *log = NULL;
	new_session(f, &id, &log);
	/* approval.answerer's program wins over the callback; this one never answers. */
	_cleanup_free_ char *program = join(f->dir, "answer.sh");
	static const char script[] = "#!/bin/sh\ncat >/dev/null\nexec sleep 30\n";
	dsb_test_write_file(program, script, sizeof(script) - 1);
	assert_int_equal(chmod(program, 0755), 0);
	_cleanup_free_ char *yaml = NULL;
	assert_true(asprintf(&yaml, "approval: { answerer: [%s] }\n", program) > 0);
	dsb_test_write_file(f->config, yaml, strlen(yaml));

	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = DSB_TOOL_BASH;
	req.session = id;
	req.command = "true";
	req.sandbox_permissions = "workspace-write";
	req.justification = "the test needs it";
	answerer a = {.outcome = DSB_OUTCOME_ALLOWED_ONCE};
	dsb_call *call = NULL;
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	dsb_call_set_answerer(call, answer, &a);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, cancel_later, call), 0);
	double start = now();
	dsb_call_result res = {0};
	assert_int_equal(dsb_call_run(call, &req, &res, NULL), 0);
	assert_true(now() - start < 10.0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(a.asked, 0);
	assert_true(res.is_error);
	assert_int_equal(res.error.code, DSB_E_ABORTED);
	dsb_call_result_done(&res);
	dsb_call_free(call);
	/* The audit pair records what happened to the question. */
	static const char *const cancelled[] = {"\"type\":\"approval/asked\"",
						"\"outcome\":\"cancelled\"",
						"\"type\":\"turn/end\""};
	assert_true(log_has_in_order(log, cancelled, sizeof(cancelled) / sizeof(cancelled[0])));
}

static void test_cancel_before_the_call_runs_nothing(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *target = join(f->ws, "never.txt");
	dsb_call_request req = request(f, DSB_TOOL_WRITE, DSB_MODE_WORKSPACE_WRITE);
	req.path = target;
	req.content = "x";
	req.content_len = 1;
	dsb_call *call = NULL;
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	dsb_call_cancel(call);
	dsb_call_cancel(call); /* idempotent */
	dsb_call_result res = {0};
	assert_int_equal(dsb_call_run(call, &req, &res, NULL), 0);
	assert_true(res.is_error);
	assert_false(res.prepared);
	assert_int_equal(res.error.code, DSB_E_ABORTED);
	assert_int_equal(access(target, F_OK), -1);
	dsb_call_result_done(&res);

	/* A call runs once. */
	dsb_error err = {0};
	assert_int_equal(dsb_call_run(call, &req, &res, &err), -DSB_E_INVALID_ARGS);
	assert_int_equal(err.code, DSB_E_INVALID_ARGS);
	dsb_call_free(call);
}

typedef struct concurrent {
	const fixture *f;
	int n;
	dsb_call_result res;
	int r;
} concurrent;

static void *run_one(void *userdata)
{
	concurrent *c = userdata;
	char command[32];
	(void)snprintf(command, sizeof(command), "echo %d", c->n);
	dsb_call_request req = request(c->f, DSB_TOOL_BASH, DSB_MODE_WORKSPACE_WRITE);
	req.command = command;
	dsb_call *call = NULL;
	c->r = dsb_call_new(&c->f->setup, &call, NULL);
	if (c->r >= 0)
		c->r = dsb_call_run(call, &req, &c->res, NULL);
	dsb_call_free(call);
	return NULL;
}

static void test_concurrent_calls(void **state)
{
	/* No global state: calls from several threads at once each get their own result. */
	fixture *f = *state;
	concurrent c[4];
	pthread_t t[4];
	for (int i = 0; i < 4; i++) {
		c[i] = (concurrent){.f = f, .n = i};
		assert_int_equal(pthread_create(&t[i], NULL, run_one, &c[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(c[i].r, 0);
		assert_false(c[i].res.is_error);
		char want[8];
		(void)snprintf(want, sizeof(want), "%d\n", i);
		assert_string_equal(c[i].res.text, want);
		dsb_call_result_done(&c[i].res);
	}
}

static void test_resolve_as_a_call_does(void **state)
{
	fixture *f = *state;
	dsb_config *cfg = NULL;
	dsb_exec_policy p = {0};
	assert_int_equal(
		dsb_call_resolve(&f->setup, NULL, DSB_MODE_WORKSPACE_WRITE, f->ws, &cfg, &p, NULL),
		0);
	assert_int_equal(p.mode, DSB_MODE_WORKSPACE_WRITE);
	/* The store is protected, as a front end's calls protect it. */
	bool store = false;
	for (size_t i = 0; i < p.n_protected; i++)
		store |= p.protected[i].kind == DSB_PROTECT_STORE;
	assert_true(store);
	dsb_exec_policy_done(&p);
	dsb_config_free(cfg);

	dsb_error err = {0};
	dsb_call_setup empty = {.config_path = ""};
	assert_int_equal(dsb_call_load_config(&empty, &cfg, &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message, "config_path: expected a file path, got an empty string");
}

/* One call of @req under @obs; the result in *@ret. */
static void run_observed(const fixture *f, dsb_observations *obs, const dsb_call_request *req,
			 dsb_call_result *ret)
{
	dsb_call *call = NULL;
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	dsb_call_set_observations(call, obs);
	*ret = (dsb_call_result){0};
	assert_int_equal(dsb_call_run(call, req, ret, NULL), 0);
	assert_null(dsb_call_free(call));
}

/* Expects @res to fail with @code and the text @before, @path, @after. */
static void expect_error(const dsb_call_result *res, dsb_code code, const char *before,
			 const char *path, const char *after)
{
	_cleanup_free_ char *want = NULL;
	assert_true(asprintf(&want, "%s%s%s", before, path, after) > 0);
	assert_true(res->is_error);
	assert_int_equal(res->error.code, code);
	assert_string_equal(res->text, want);
}

/* DSH's read-before-write observation rule, with its texts (fs-observation-policy). */
static void test_observation_rule(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *path = join(f->ws, "seen.txt");
	dsb_observations *obs = NULL;
	dsb_call_result res;
	assert_int_equal(dsb_observations_new(&obs, NULL), 0);
	dsb_test_write_file(path, "old\n", 4);

	dsb_call_request edit = request(f, DSB_TOOL_EDIT, DSB_MODE_WORKSPACE_WRITE);
	edit.path = "seen.txt";
	edit.old_string = "old";
	edit.new_string = "new";
	dsb_call_request write = request(f, DSB_TOOL_WRITE, DSB_MODE_WORKSPACE_WRITE);
	write.path = "seen.txt";
	write.content = "written\n";
	write.content_len = strlen(write.content);
	dsb_call_request read = request(f, DSB_TOOL_READ, DSB_MODE_WORKSPACE_WRITE);
	read.path = "seen.txt";

	/* Unread: an edit asks for a read; a write may only create. */
	run_observed(f, obs, &edit, &res);
	expect_error(&res, DSB_E_FS_NOT_OBSERVED, "Error: edit requires reading \"", path,
		     "\" first — read the file, then retry");
	dsb_call_result_done(&res);
	run_observed(f, obs, &write, &res);
	expect_error(&res, DSB_E_FS_NOT_OBSERVED, "Error: cannot overwrite existing \"", path,
		     "\" without reading it first — read the file, then retry");
	dsb_call_result_done(&res);

	/* Read: the edit applies, and its own result counts as seen for the next one. */
	run_observed(f, obs, &read, &res);
	assert_false(res.is_error);
	dsb_call_result_done(&res);
	run_observed(f, obs, &edit, &res);
	assert_false(res.is_error);
	dsb_call_result_done(&res);
	edit.old_string = "new";
	edit.new_string = "newer";
	run_observed(f, obs, &edit, &res);
	assert_false(res.is_error);
	dsb_call_result_done(&res);

	/* Changed behind the session's back: stale, for the edit and for the write. */
	/* The rewrite changes the size: the version differs whatever the mtime granularity. */
	dsb_test_write_file(path, "changed outside\n", 16);
	edit.old_string = "newer";
	edit.new_string = "x";
	run_observed(f, obs, &edit, &res);
	expect_error(&res, DSB_E_FS_STALE_VERSION, "Error: cannot edit \"", path,
		     "\": file changed since it was read — re-read the file, then retry");
	dsb_call_result_done(&res);
	run_observed(f, obs, &write, &res);
	expect_error(&res, DSB_E_FS_STALE_VERSION, "Error: cannot write \"", path,
		     "\": file changed since it was read — re-read the file, then retry");
	dsb_call_result_done(&res);
	_cleanup_free_ char *kept = dsb_test_read_file(path, NULL);
	assert_string_equal(kept, "changed outside\n");

	/* Re-read, then removed: the write says so; a read of nothing records the absence. */
	run_observed(f, obs, &read, &res);
	dsb_call_result_done(&res);
	assert_int_equal(unlink(path), 0);
	run_observed(f, obs, &write, &res);
	expect_error(&res, DSB_E_FS_STALE_VERSION, "Error: cannot write \"", path,
		     "\": file no longer exists — re-read the file, then retry");
	dsb_call_result_done(&res);
	run_observed(f, obs, &read, &res);
	assert_int_equal(res.error.code, DSB_E_FS_NOT_FOUND);
	dsb_call_result_done(&res);
	run_observed(f, obs, &edit, &res);
	expect_error(&res, DSB_E_FS_NOT_FOUND, "Error: cannot edit \"", path, "\": not found");
	dsb_call_result_done(&res);
	run_observed(f, obs, &write, &res);
	assert_false(res.is_error);
	assert_true(res.created);
	dsb_call_result_done(&res);

	/* A new file needs no read (DSH's fs-write fixture). */
	write.path = "fresh.txt";
	run_observed(f, obs, &write, &res);
	assert_false(res.is_error);
	dsb_call_result_done(&res);
	assert_null(dsb_observations_free(obs));
}

typedef struct seen_output {
	char buf[256];
	size_t len;
	int streams;
} seen_output;

static void collect_output(void *userdata, int stream, const char *buf, size_t n)
{
	seen_output *s = userdata;
	s->streams |= stream;
	for (size_t i = 0; i < n && s->len + 1 < sizeof(s->buf); i++)
		s->buf[s->len++] = buf[i];
}

/* The output hook sees a bash command's output as it comes, from both streams. */
static void test_output_hook(void **state)
{
	fixture *f = *state;
	seen_output seen = {0};
	dsb_call *call = NULL;
	dsb_call_result res = {0};
	dsb_call_request req = request(f, DSB_TOOL_BASH, DSB_MODE_WORKSPACE_WRITE);
	req.command = "echo out; echo err >&2";
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	dsb_call_set_on_output(call, collect_output, &seen);
	assert_int_equal(dsb_call_run(call, &req, &res, NULL), 0);
	assert_false(res.is_error);
	assert_int_equal(seen.streams, 3);
	assert_non_null(memmem(seen.buf, seen.len, "out\n", 4));
	assert_non_null(memmem(seen.buf, seen.len, "err\n", 4));
	dsb_call_result_done(&res);
	dsb_call_free(call);
}

/*
 * dsb_call_request.network over network.access: an allowlist with no allowed host, or a value
 * outside the enum, fails the call before anything is done; the control writes.
 */
static void test_network_override(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *path = join(f->ws, "net.txt");
	dsb_call_result res;

	dsb_call_request req = request(f, DSB_TOOL_WRITE, DSB_MODE_WORKSPACE_WRITE);
	req.path = path;
	req.content = "x";
	req.content_len = 1;
	req.network = DSB_NETWORK_ALLOWLIST;
	run(f, &req, NULL, NULL, &res);
	assert_true(res.is_error);
	assert_int_equal(res.error.code, DSB_E_CONFIG_INVALID);
	assert_non_null(strstr(res.text, "allowlist needs at least one allowed host"));
	dsb_call_result_done(&res);
	assert_int_equal(access(path, F_OK), -1);

	req.network = (dsb_network_access)_DSB_NETWORK_ACCESS_MAX;
	run(f, &req, NULL, NULL, &res);
	assert_true(res.is_error);
	assert_int_equal(res.error.code, DSB_E_INVALID_ARGS);
	dsb_call_result_done(&res);
	assert_int_equal(access(path, F_OK), -1);

	/* The control: a valid level, then the allowlist once a host is allowed. */
	req.network = DSB_NETWORK_NONE;
	run(f, &req, NULL, NULL, &res);
	assert_false(res.is_error);
	dsb_call_result_done(&res);
	assert_int_equal(access(path, F_OK), 0);
	static const char yaml[] = "network: { allow: [registry.test] }\n";
	dsb_test_write_file(f->config, yaml, sizeof(yaml) - 1);
	req.network = DSB_NETWORK_ALLOWLIST;
	req.content = "y";
	run(f, &req, NULL, NULL, &res);
	assert_false(res.is_error);
	dsb_call_result_done(&res);
	_cleanup_free_ char *text = dsb_test_read_file(path, NULL);
	assert_string_equal(text, "y");
}

/* What dsb_call_set_debug() was told: the lines, each ended by a newline. */
static void collect_line(void *userdata, const char *line)
{
	strbuf_like *sb = userdata;
	size_t n = strlen(line);
	sb->buf = realloc(sb->buf, sb->len + n + 2);
	assert_non_null(sb->buf);
	memcpy(sb->buf + sb->len, line, n);
	sb->len += n;
	sb->buf[sb->len++] = '\n';
	sb->buf[sb->len] = '\0';
}

/*
 * An exec that captures (a library's program, not a person's terminal): the argv runs as it is,
 * confined on every backend, its output comes through the hook and into the result, and the
 * result is the bash tool's, denial and all; without capture an exec has no JSON result.
 */
static void test_exec_capture(void **state)
{
	fixture *f = *state;
	char *argv[] = {(char *)"sh", (char *)"-c",
			(char *)"echo out; echo err >&2; touch /etc/dsb-capture; exit 3", NULL};
	for (dsb_backend b = 0; b < _DSB_BACKEND_MAX; b++) {
		dsb_call_request req = request(f, DSB_TOOL_EXEC, DSB_MODE_READ_ONLY);
		req.backend = b;
		req.argv = argv;
		seen_output seen = {0};
		dsb_call *call = NULL;
		assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
		dsb_call_set_capture(call, true);
		dsb_call_set_on_output(call, collect_output, &seen);
		dsb_call_result res = {0};
		assert_int_equal(dsb_call_run(call, &req, &res, NULL), 0);
		dsb_call_free(call);
		assert_false(res.is_error);
		assert_non_null(strstr(seen.buf, "out\n"));
		assert_non_null(strstr(seen.buf, "err\n"));
		assert_int_equal(seen.streams, 3);
		assert_int_equal(res.run.exit_code, 3);
		assert_true(res.run.denied);
		assert_string_equal(res.run.out.text, "out\n");
		assert_int_equal(access("/etc/dsb-capture", F_OK), -1);
		assert_non_null(
			strstr(res.text, "[sandbox: file access denied under read-only mode]"));
		assert_non_null(strstr(res.text, "[exit code: 3]"));
		_cleanup_free_ char *json = json_of(&res);
		assert_non_null(
			strstr(json, "{\"exitCode\":3,\"signal\":null,\"timedOut\":false,"));
		dsb_call_result_done(&res);
	}
	/* Not found: the command's failure, in env(1)'s terms, as without capture. */
	char *missing[] = {(char *)"dsb-no-such-command", NULL};
	dsb_call_request req = request(f, DSB_TOOL_EXEC, DSB_MODE_READ_ONLY);
	req.argv = missing;
	dsb_call *call = NULL;
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	dsb_call_set_capture(call, true);
	dsb_call_result res = {0};
	assert_int_equal(dsb_call_run(call, &req, &res, NULL), 0);
	dsb_call_free(call);
	assert_true(res.is_error);
	assert_int_equal(res.error.code, DSB_E_EXEC_FAILED);
	dsb_call_result_done(&res);
}

/*
 * dsb_call_explain() tells the decisions of an exec call and runs nothing; it explains exec
 * calls only, without an escalation, once. The debug hook of a run hears the same policy lines
 * and leaves the result as it is.
 */
static void test_explain_and_debug(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *target = join(f->ws, "X");
	char *argv[] = {(char *)"touch", target, NULL};
	strbuf_like told = {0};
	dsb_error err = {0};
	dsb_call *call = NULL;
	char *json = NULL;

	dsb_call_request req = request(f, DSB_TOOL_EXEC, DSB_MODE_WORKSPACE_WRITE);
	req.argv = argv;
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	dsb_call_set_debug(call, collect_line, &told);
	int r = dsb_call_explain(call, &req, &json, &err);
	/* Where no sandbox works, explain fails as exec would; what it told still stands. */
	assert_true(r == 0 || err.code == DSB_E_SANDBOX_UNAVAILABLE);
	assert_int_equal(access(target, F_OK), -1);
	_cleanup_free_ char *config_line = NULL;
	assert_true(asprintf(&config_line,
			     "config: %s (--config)\nmode: workspace-write (--mode)\n",
			     f->config) > 0);
	assert_non_null(told.buf);
	assert_non_null(strstr(told.buf, config_line));
	if (r == 0) {
		assert_non_null(
			strstr(json, "\"mode\":\"workspace-write\",\"modeSource\":\"explicit\""));
		assert_non_null(strstr(told.buf, "\nenforcement: "));
	}
	free(json);
	json = NULL;
	/* Once. */
	assert_int_equal(dsb_call_explain(call, &req, &json, &err), -DSB_E_INVALID_ARGS);
	assert_null(json);
	dsb_call_free(call);

	dsb_call_request bash = request(f, DSB_TOOL_BASH, DSB_MODE_READ_ONLY);
	bash.command = "echo hi";
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	assert_int_equal(dsb_call_explain(call, &bash, &json, &err), -DSB_E_INVALID_ARGS);
	dsb_call_free(call);
	req.sandbox_permissions = "danger-full-access";
	req.justification = "because";
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	assert_int_equal(dsb_call_explain(call, &req, &json, &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message,
			    "an escalation is not explained: explain the wider --mode instead");
	dsb_call_free(call);

	/* A run with the hook: the same policy lines, the same result as without it. */
	free(told.buf);
	told = (strbuf_like){0};
	dsb_call_result plain, debugged;
	run(f, &bash, NULL, NULL, &plain);
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	dsb_call_set_debug(call, collect_line, &told);
	assert_int_equal(dsb_call_run(call, &bash, &debugged, NULL), 0);
	dsb_call_free(call);
	assert_int_equal(plain.text_len, debugged.text_len);
	assert_memory_equal(plain.text, debugged.text, plain.text_len);
	assert_non_null(told.buf);
	assert_non_null(strstr(told.buf, "\nmode: read-only (--mode)\n"));
	dsb_call_result_done(&plain);
	dsb_call_result_done(&debugged);
	free(told.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tool_names),
		cmocka_unit_test_setup_teardown(test_explain_and_debug, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fenced_write_edit_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fenced_write_denied_in_read_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_arguments_checked_first, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bash_denied_in_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escalation_answered_by_a_callback, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fs_escalation_answered_by_a_callback, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cancel_kills_the_running_command, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cancel_stops_the_answerer_program, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cancel_before_the_call_runs_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve_as_a_call_does, setup, teardown),
		cmocka_unit_test_setup_teardown(test_observation_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_hook, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exec_capture, setup, teardown),
		cmocka_unit_test_setup_teardown(test_network_override, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
