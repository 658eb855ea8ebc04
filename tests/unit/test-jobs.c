/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the jobs piece through its public API, as a front end drives it: ids, the
 * start's text, reads that return only new output, the status lines and DSH's newline rule,
 * waits that time out or see the end, kills (stopping, then killed), job_list, completion
 * notices and their suppression, a denial inside a job, the errors, the limit, an escalation
 * approved before the start, output dropped from memory, free() with jobs running, and many
 * jobs from many threads. Real processes on both backends (never skipped), and unconfined.
 *
 *	TMP/dsb-test.XXXXXX/
 *	├── config.yaml   the configuration every call loads (graceMs 3000)
 *	├── small.yaml    the same with maxOutputBytes 1000 (output dropped from memory)
 *	├── store/        the session store
 *	└── ws/           the workspace: the agentless calls' root
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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

#include <dsb/jobs.h>
#include <dsb/session.h>

#include "src/core/cleanup.h"
#include "helpers.h"

#define HINT                                                                                 \
	"[sandbox: escalation available \xE2\x80\x94 retry this exact command once with "    \
	"sandbox_permissions (the narrowest wider mode that suffices) + justification; the " \
	"approval prompt asks the user]"

typedef struct fixture {
	char *dir, *ws, *store_dir, *config, *small;
	dsb_call_setup setup;
	dsb_jobs *jobs;
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
	f->small = join(f->dir, "small.yaml");
	assert_int_equal(mkdir(f->ws, 0755), 0);
	/* A grace long enough for a trap to finish, however loaded the machine. */
	static const char yaml[] = "bash: { graceMs: 3000 }\n";
	dsb_test_write_file(f->config, yaml, sizeof(yaml) - 1);
	static const char small[] = "bash: { graceMs: 3000, maxOutputBytes: 1000 }\n";
	dsb_test_write_file(f->small, small, sizeof(small) - 1);
	unsetenv("DSH_PERMISSION_MODE");
	f->setup = (dsb_call_setup){.config_path = f->config, .store_path = f->store_dir};
	assert_int_equal(dsb_jobs_new(NULL, &f->jobs, NULL), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	assert_null(dsb_jobs_free(f->jobs));
	dsb_test_rm_rf(f->dir);
	free(f->dir);
	free(f->ws);
	free(f->store_dir);
	free(f->config);
	free(f->small);
	free(f);
	return 0;
}

/* An agentless bash request for @command in @mode on @backend, rooted in the workspace. */
static dsb_call_request request(const fixture *f, const char *command, dsb_mode mode,
				dsb_backend backend)
{
	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	req.tool = DSB_TOOL_BASH;
	req.command = command;
	req.mode = mode;
	req.backend = backend;
	req.workspace = f->ws;
	return req;
}

/* Starts @req as a call of @setup (NULL: the fixture's); the start's result in *@ret. */
static void start_as(const fixture *f, const dsb_call_setup *setup, const dsb_call_request *req,
		     dsb_answerer_fn answer, void *userdata, dsb_call_result *ret)
{
	dsb_call *call = NULL;
	assert_int_equal(dsb_call_new(setup ? setup : &f->setup, &call, NULL), 0);
	dsb_call_set_answerer(call, answer, userdata);
	*ret = (dsb_call_result){0};
	assert_int_equal(dsb_jobs_start(f->jobs, call, req, ret, NULL), 0);
	assert_null(dsb_call_free(call));
}

/* Starts @command and checks the start's text names job @want_id. */
static void start_ok(const fixture *f, const char *command, dsb_mode mode, dsb_backend backend,
		     const char *want_id)
{
	dsb_call_request req = request(f, command, mode, backend);
	dsb_call_result res;
	start_as(f, NULL, &req, NULL, NULL, &res);
	if (res.is_error)
		fail_msg("start failed: %s", res.text);
	char want[64];
	(void)snprintf(want, sizeof(want), "started background job %s", want_id);
	assert_string_equal(res.text, want);
	assert_int_equal(res.text_len, strlen(want));
	dsb_call_result_done(&res);
}

/* job_output's text for @id (no wait, or a wait of @timeout_ms; < 0: the default). */
static char *read_job(const fixture *f, const char *id, bool wait, double timeout_ms)
{
	dsb_job_reply reply = {0};
	assert_int_equal(dsb_jobs_read(f->jobs, id, wait, timeout_ms < 0 ? NULL : &timeout_ms, NULL,
				       &reply, NULL),
			 0);
	if (reply.is_error)
		fail_msg("read failed: %s", reply.text);
	assert_int_equal(strlen(reply.text), reply.text_len);
	return reply.text;
}

/* A read that waits until the job settles. */
static char *read_done(const fixture *f, const char *id)
{
	return read_job(f, id, true, 20000);
}

static void assert_read(const fixture *f, const char *id, bool wait, const char *want)
{
	_cleanup_free_ char *text = wait ? read_done(f, id) : read_job(f, id, false, -1);
	assert_string_equal(text, want);
}

static char *kill_job(const fixture *f, const char *id)
{
	dsb_job_reply reply = {0};
	assert_int_equal(dsb_jobs_kill(f->jobs, id, &reply, NULL), 0);
	assert_false(reply.is_error);
	return reply.text;
}

static char *list_jobs(const fixture *f)
{
	dsb_job_reply reply = {0};
	assert_int_equal(dsb_jobs_list(f->jobs, &reply, NULL), 0);
	assert_false(reply.is_error);
	return reply.text;
}

/* Polls reads of @id until one brings output (5 s at most); returns that read. */
static char *read_until_output(const fixture *f, const char *id)
{
	for (int i = 0; i < 500; i++) {
		char *text = read_job(f, id, false, -1);
		if (strncmp(text, "(no new output)", strlen("(no new output)")) != 0)
			return text;
		free(text);
		(void)usleep(10000);
	}
	fail_msg("job %s made no output", id);
	return NULL;
}

static double elapsed_ms(const struct timespec *since)
{
	struct timespec now;
	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - since->tv_sec) * 1e3 +
	       (double)(now.tv_nsec - since->tv_nsec) / 1e6;
}

/* An id and a text per job: "bash-N". */
static const char *job_id(char buf[32], int n)
{
	(void)snprintf(buf, 32, "bash-%d", n);
	return buf;
}

static void test_ids_and_failed_starts(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *empty = list_jobs(f);
	assert_string_equal(empty, "(no background jobs)");

	start_ok(f, "echo one", DSB_MODE_READ_ONLY, DSB_BACKEND_BWRAP, "bash-1");

	/* A start that fails before its command is spawned takes no id (§1.9). */
	dsb_call_request req = request(f, "   ", DSB_MODE_READ_ONLY, _DSB_BACKEND_INVALID);
	dsb_call_result res;
	start_as(f, NULL, &req, NULL, NULL, &res);
	assert_true(res.is_error);
	assert_false(res.prepared);
	assert_string_equal(res.text, "Error: invalid command: expected a non-empty string");
	dsb_call_result_done(&res);
	req = request(f, "echo x", DSB_MODE_READ_ONLY, _DSB_BACKEND_INVALID);
	req.workdir = "no-such-dir";
	start_as(f, NULL, &req, NULL, NULL, &res);
	assert_true(res.is_error);
	assert_int_equal(res.error.code, DSB_E_INVALID_ARGS);
	dsb_call_result_done(&res);

	start_ok(f, "echo two", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, "bash-2");
	assert_read(f, "bash-1", true, "one\n[status: completed, exit code: 0]");
	assert_read(f, "bash-2", true, "two\n[status: completed, exit code: 0]");

	/* A call runs once; only bash goes to the background. */
	dsb_call *call = NULL;
	dsb_error err = {0};
	assert_int_equal(dsb_call_new(&f->setup, &call, NULL), 0);
	req = request(f, "echo x", DSB_MODE_READ_ONLY, _DSB_BACKEND_INVALID);
	req.tool = DSB_TOOL_WRITE;
	assert_int_equal(dsb_jobs_start(f->jobs, call, &req, &res, &err), -DSB_E_INVALID_ARGS);
	req.tool = DSB_TOOL_BASH;
	assert_int_equal(dsb_jobs_start(f->jobs, call, &req, &res, &err), 0);
	dsb_call_result_done(&res);
	assert_int_equal(dsb_jobs_start(f->jobs, call, &req, &res, &err), -DSB_E_INVALID_ARGS);
	dsb_call_free(call);
	assert_read(f, "bash-3", true, "x\n[status: completed, exit code: 0]");
}

static void test_reads_return_only_new_output(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *go = join(f->ws, "go");
	_cleanup_free_ char *command = NULL;
	assert_true(asprintf(&command,
			     "printf 'one\\n'; while [ ! -e '%s' ]; do sleep 0.02; done; "
			     "printf 'two\\n'",
			     go) > 0);
	char id[32];
	for (dsb_backend b = 0; b < _DSB_BACKEND_MAX; b++) {
		(void)unlink(go);
		start_ok(f, command, DSB_MODE_READ_ONLY, b, job_id(id, (int)b + 1));
		_cleanup_free_ char *first = read_until_output(f, id);
		assert_string_equal(first, "one\n[status: running]");
		assert_read(f, id, false, "(no new output)\n[status: running]");
		dsb_test_write_file(go, "", 0);
		assert_read(f, id, true, "two\n[status: completed, exit code: 0]");
		assert_read(f, id, false, "(no new output)\n[status: completed, exit code: 0]");
	}
}

static void test_status_lines_and_the_newline_rule(void **state)
{
	fixture *f = *state;
	static const struct {
		const char *command, *want;
	} cases[] = {
		/* The status line follows the body's own newline, or gets one: never doubled. */
		{"printf 'no newline'", "no newline\n[status: completed, exit code: 0]"},
		{"echo line", "line\n[status: completed, exit code: 0]"},
		{"exit 3", "(no new output)\n[status: completed, exit code: 3]"},
		/* One newline between stdout and the stderr section. */
		{"printf out; printf err >&2",
		 "out\n[stderr]\nerr\n[status: completed, exit code: 0]"},
		{"echo out; echo err >&2; exit 2",
		 "out\n[stderr]\nerr\n[status: completed, exit code: 2]"},
		{"echo err >&2", "[stderr]\nerr\n[status: completed, exit code: 0]"},
	};
	char id[32];
	int n = 0;
	for (dsb_backend b = 0; b < _DSB_BACKEND_MAX; b++)
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			start_ok(f, cases[i].command, DSB_MODE_READ_ONLY, b, job_id(id, ++n));
			assert_read(f, id, true, cases[i].want);
		}
	/*
	 * Any death by a signal is killed, a command's own too, where the command leads its
	 * group. Under bwrap, bwrap leads: it reports its child's death as exit 128 + N, which
	 * DSH then sees as a completion too.
	 */
	start_ok(f, "kill -KILL $$", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, job_id(id, ++n));
	assert_read(f, id, true, "(no new output)\n[status: killed, signal: SIGKILL]");
	start_ok(f, "kill -KILL $$", DSB_MODE_READ_ONLY, DSB_BACKEND_BWRAP, job_id(id, ++n));
	assert_read(f, id, true, "(no new output)\n[status: completed, exit code: 137]");
}

static void test_wait_times_out_and_waits_for_the_end(void **state)
{
	fixture *f = *state;
	start_ok(f, "sleep 0.6; echo late", DSB_MODE_READ_ONLY, DSB_BACKEND_BWRAP, "bash-1");
	struct timespec t0;
	(void)clock_gettime(CLOCK_MONOTONIC, &t0);
	/* A wait that times out is no error: the job is still running, and says so. */
	_cleanup_free_ char *early = read_job(f, "bash-1", true, 100);
	double waited = elapsed_ms(&t0);
	assert_string_equal(early, "(no new output)\n[status: running]");
	assert_true(waited >= 95);
	/* A wait that sees the end returns as soon as it comes. */
	_cleanup_free_ char *done = read_job(f, "bash-1", true, 20000);
	assert_string_equal(done, "late\n[status: completed, exit code: 0]");
	assert_true(elapsed_ms(&t0) < 5000);
	/* Fractional milliseconds are a number like any other. */
	start_ok(f, "sleep 5", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, "bash-2");
	_cleanup_free_ char *brief = read_job(f, "bash-2", true, 0.5);
	assert_string_equal(brief, "(no new output)\n[status: running]");
}

static void test_kill_stops_and_settles_killed(void **state)
{
	fixture *f = *state;
	char id[32];
	int n = 0;
	/* The whole tree gets SIGTERM: the leader dies of it, on either backend. */
	for (dsb_backend b = 0; b < _DSB_BACKEND_MAX; b++) {
		start_ok(f, "echo started; sleep 30", DSB_MODE_READ_ONLY, b, job_id(id, ++n));
		_cleanup_free_ char *started = read_until_output(f, id);
		assert_string_equal(started, "started\n[status: running]");
		_cleanup_free_ char *killed = kill_job(f, id);
		char want[96];
		(void)snprintf(want, sizeof(want), "requested cancellation of job %s", id);
		assert_string_equal(killed, want);
		assert_read(f, id, true, "(no new output)\n[status: killed, signal: SIGTERM]");
		_cleanup_free_ char *again = kill_job(f, id);
		(void)snprintf(want, sizeof(want),
			       "job %s had already finished [status: killed, signal: SIGTERM]", id);
		assert_string_equal(again, want);
	}

	/*
	 * stopping while the command takes its time to stop (less than graceMs); killed before
	 * exit when it then exits rather than dies (a trap, unconfined so that the trapping bash
	 * leads the group).
	 */
	start_ok(f, "trap 'sleep 0.5; exit 0' TERM; echo ready; sleep 30 & wait",
		 DSB_MODE_DANGER_FULL_ACCESS, _DSB_BACKEND_INVALID, job_id(id, ++n));
	_cleanup_free_ char *ready = read_until_output(f, id);
	assert_string_equal(ready, "ready\n[status: running]");
	_cleanup_free_ char *requested = kill_job(f, id);
	assert_string_equal(requested, "requested cancellation of job bash-3");
	assert_read(f, id, false, "(no new output)\n[status: stopping]");
	_cleanup_free_ char *list = list_jobs(f);
	assert_string_equal(list,
			    "bash-1 [bash] killed \xE2\x80\x94 echo started; sleep 30\n"
			    "bash-2 [bash] killed \xE2\x80\x94 echo started; sleep 30\n"
			    "bash-3 [bash] stopping \xE2\x80\x94 trap 'sleep 0.5; exit 0' TERM; "
			    "echo ready; sleep 30 & wait");
	assert_read(f, id, true, "(no new output)\n[status: killed, killed before exit]");

	/* A job that finished by itself: its status, and no cancellation. */
	start_ok(f, "exit 4", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, job_id(id, ++n));
	assert_read(f, id, true, "(no new output)\n[status: completed, exit code: 4]");
	_cleanup_free_ char *late = kill_job(f, id);
	assert_string_equal(late,
			    "job bash-4 had already finished [status: completed, exit code: 4]");
}

static void test_list(void **state)
{
	fixture *f = *state;
	start_ok(f, "echo hi", DSB_MODE_READ_ONLY, DSB_BACKEND_BWRAP, "bash-1");
	assert_read(f, "bash-1", true, "hi\n[status: completed, exit code: 0]");
	start_ok(f, "sleep 30", DSB_MODE_WORKSPACE_WRITE, DSB_BACKEND_LANDLOCK, "bash-2");
	_cleanup_free_ char *list = list_jobs(f);
	assert_string_equal(list, "bash-1 [bash] completed \xE2\x80\x94 echo hi\n"
				  "bash-2 [bash] running \xE2\x80\x94 sleep 30");
}

/* What a front end's notice callback saw. */
typedef struct notices {
	pthread_mutex_t lock;
	int n;
	char ids[8][32];
	char texts[8][256];
} notices;

static void record_notice(const char *job_id, const char *text, void *userdata)
{
	notices *ns = userdata;
	(void)pthread_mutex_lock(&ns->lock);
	if (ns->n < 8) {
		(void)snprintf(ns->ids[ns->n], sizeof(ns->ids[0]), "%s", job_id);
		(void)snprintf(ns->texts[ns->n], sizeof(ns->texts[0]), "%s", text);
	}
	ns->n++;
	(void)pthread_mutex_unlock(&ns->lock);
}

static void test_completion_notices(void **state)
{
	fixture *f = *state;
	notices ns = {.lock = PTHREAD_MUTEX_INITIALIZER};
	dsb_jobs_set_notice(f->jobs, record_notice, &ns);

	/* Settled and never read: the notice. */
	start_ok(f, "echo done", DSB_MODE_READ_ONLY, DSB_BACKEND_BWRAP, "bash-1");
	/* Waited on: reported to the waiter, no notice. */
	start_ok(f, "sleep 0.3", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, "bash-2");
	assert_read(f, "bash-2", true, "(no new output)\n[status: completed, exit code: 0]");
	/* Killed: reported, no notice. */
	start_ok(f, "sleep 30", DSB_MODE_READ_ONLY, DSB_BACKEND_BWRAP, "bash-3");
	free(kill_job(f, "bash-3"));
	assert_read(f, "bash-3", true, "(no new output)\n[status: killed, signal: SIGTERM]");
	/*
	 * Polled until it settled: the reads before did not report it, so it settled unreported
	 * and the notice went out (DSH decides at settlement); the read after reports it.
	 */
	start_ok(f, "sleep 0.2; exit 1", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, "bash-4");
	for (int i = 0; i < 500; i++) {
		_cleanup_free_ char *text = read_job(f, "bash-4", false, -1);
		if (strcmp(text, "(no new output)\n[status: completed, exit code: 1]") == 0)
			break;
		(void)usleep(10000);
	}
	/* Killed by the registry's end: nobody is left to tell. */
	start_ok(f, "sleep 30", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, "bash-5");

	/* The end joins every job: every notice there will be has been given. */
	f->jobs = dsb_jobs_free(f->jobs);
	assert_int_equal(ns.n, 2);
	int one = strcmp(ns.ids[0], "bash-1") == 0 ? 0 : 1;
	assert_string_equal(ns.ids[one], "bash-1");
	assert_string_equal(ns.texts[one],
			    "background job bash-1 (bash: echo done) finished "
			    "[status: completed, exit code: 0]. Read its output with "
			    "job_output.");
	assert_string_equal(ns.ids[1 - one], "bash-4");
	assert_string_equal(ns.texts[1 - one],
			    "background job bash-4 (bash: sleep 0.2; exit 1) finished [status: "
			    "completed, exit code: 1]. Read its output with job_output.");
	assert_int_equal(dsb_jobs_new(NULL, &f->jobs, NULL), 0);
}

static void test_denial_inside_a_job(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *target = join(f->ws, "out.txt");
	_cleanup_free_ char *command = NULL;
	assert_true(asprintf(&command, "echo before; echo x > '%s'", target) > 0);
	char id[32];
	for (dsb_backend b = 0; b < _DSB_BACKEND_MAX; b++) {
		start_ok(f, command, DSB_MODE_READ_ONLY, b, job_id(id, (int)b + 1));
		_cleanup_free_ char *text = read_done(f, id);
		/* The output, then DSH's marker and hint, then the status (exit 1). */
		assert_true(strncmp(text, "before\n[stderr]\n", strlen("before\n[stderr]\n")) == 0);
		static const char tail[] =
			"\n[sandbox: file access denied under read-only mode]\n" HINT
			"\n[status: completed, exit code: 1]";
		assert_non_null(strstr(text, tail));
		assert_string_equal(text + strlen(text) - strlen(tail), tail);
		/* Settled facts repeat on every later read, with nothing new before them. */
		assert_read(f, id, false,
			    "[sandbox: file access denied under read-only mode]\n" HINT
			    "\n[status: completed, exit code: 1]");
		assert_int_equal(access(target, F_OK), -1);
	}
	/* Unconfined: no sandbox facts, so no marker, whatever stderr says. */
	start_ok(f, "echo 'Read-only file system' >&2; exit 1", DSB_MODE_DANGER_FULL_ACCESS,
		 _DSB_BACKEND_INVALID, "bash-3");
	assert_read(f, "bash-3", true,
		    "[stderr]\nRead-only file system\n[status: completed, exit code: 1]");
}

/* An answerer that allows or rejects, counting the questions. */
typedef struct answerer {
	dsb_approval_outcome outcome;
	int asked;
} answerer;

static int answer(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
{
	(void)req;
	answerer *a = userdata;
	a->asked++;
	*ret = a->outcome;
	return 0;
}

static void test_escalation_before_the_start(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *target = join(f->ws, "escalated.txt");
	_cleanup_free_ char *command = NULL;
	assert_true(asprintf(&command, "echo yes > '%s'", target) > 0);
	/* A session's call: the approval is asked and audited inside a turn of it. */
	dsb_store *store = NULL;
	dsb_session *s = NULL;
	assert_int_equal(dsb_store_open(f->store_dir, &store, NULL), 0);
	dsb_store_set_fsync(store, false);
	assert_int_equal(dsb_session_create(store, f->ws, &s, NULL), 0);
	assert_int_equal(dsb_session_set_mode(s, DSB_MODE_READ_ONLY, NULL), 0);
	_cleanup_free_ char *session = strdup(dsb_session_id(s));
	_cleanup_free_ char *log = strdup(dsb_session_path(s));
	dsb_session_free(s);
	dsb_store_free(store);
	dsb_call_request req = request(f, command, _DSB_MODE_INVALID, DSB_BACKEND_LANDLOCK);
	req.session = session;
	req.workspace = NULL;
	req.sandbox_permissions = "workspace-write";
	req.justification = "the test writes into the workspace";

	/* Rejected: refused before anything starts, and no id taken. */
	answerer a = {.outcome = DSB_OUTCOME_REJECTED};
	dsb_call_result res;
	start_as(f, NULL, &req, answer, &a, &res);
	assert_int_equal(a.asked, 1);
	assert_true(res.is_error);
	assert_int_equal(res.error.code, DSB_E_ESCALATION_REFUSED);
	assert_string_equal(res.text, "Error: the user rejected escalating this command to "
				      "\"workspace-write\"");
	dsb_call_result_done(&res);

	/* Allowed once: the job runs in the wider mode. */
	a = (answerer){.outcome = DSB_OUTCOME_ALLOWED_ONCE};
	start_as(f, NULL, &req, answer, &a, &res);
	assert_int_equal(a.asked, 1);
	assert_false(res.is_error);
	assert_string_equal(res.text, "started background job bash-1");
	dsb_call_result_done(&res);
	assert_read(f, "bash-1", true, "(no new output)\n[status: completed, exit code: 0]");
	_cleanup_free_ char *written = dsb_test_read_file(target, NULL);
	assert_string_equal(written, "yes\n");
	/* Both turns the starts opened were closed when they returned. */
	_cleanup_free_ char *events = dsb_test_read_file(log, NULL);
	assert_non_null(strstr(events, "\"outcome\":\"rejected\""));
	assert_non_null(strstr(events, "\"outcome\":\"allowed-once\""));
	assert_non_null(
		strstr(events, "\"data\":{\"turn\":2,\"reason\":{\"kind\":\"completed\"}}"));
}

static void test_errors(void **state)
{
	fixture *f = *state;
	dsb_job_reply reply = {0};
	static const struct {
		const char *id;
		dsb_code code;
		const char *text;
	} cases[] = {
		{"bash-99", DSB_E_JOB_NOT_FOUND, "Error: unknown job bash-99"},
		{"", DSB_E_INVALID_ARGS,
		 "Error: invalid job_id: expected a non-empty string, got \"\""},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(
			dsb_jobs_read(f->jobs, cases[i].id, false, NULL, NULL, &reply, NULL), 0);
		assert_true(reply.is_error);
		assert_int_equal(reply.error.code, cases[i].code);
		assert_string_equal(reply.text, cases[i].text);
		dsb_job_reply_done(&reply);
		assert_int_equal(dsb_jobs_kill(f->jobs, cases[i].id, &reply, NULL), 0);
		assert_true(reply.is_error);
		assert_string_equal(reply.text, cases[i].text);
		dsb_job_reply_done(&reply);
	}
	/* An unknown job is named before its wait's timeout is looked at (DSH's order). */
	double zero = 0;
	assert_int_equal(dsb_jobs_read(f->jobs, "bash-1", true, &zero, NULL, &reply, NULL), 0);
	assert_string_equal(reply.text, "Error: unknown job bash-1");
	dsb_job_reply_done(&reply);

	start_ok(f, "sleep 30", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, "bash-1");
	static const struct {
		double timeout;
		const char *text;
	} timeouts[] = {
		{0,
		 "Error: invalid wait timeout: expected a positive number of milliseconds, got 0"},
		{-1.5,
		 "Error: invalid wait timeout: expected a positive number of milliseconds, got "
		 "-1.5"},
		{-1e21,
		 "Error: invalid wait timeout: expected a positive number of milliseconds, got "
		 "-1e+21"},
	};
	for (size_t i = 0; i < sizeof(timeouts) / sizeof(timeouts[0]); i++) {
		assert_int_equal(dsb_jobs_read(f->jobs, "bash-1", true, &timeouts[i].timeout, NULL,
					       &reply, NULL),
				 0);
		assert_true(reply.is_error);
		assert_int_equal(reply.error.code, DSB_E_INVALID_ARGS);
		assert_string_equal(reply.text, timeouts[i].text);
		dsb_job_reply_done(&reply);
		/* Without wait the timeout means nothing and is not checked. */
		assert_int_equal(dsb_jobs_read(f->jobs, "bash-1", false, &timeouts[i].timeout, NULL,
					       &reply, NULL),
				 0);
		assert_false(reply.is_error);
		assert_string_equal(reply.text, "(no new output)\n[status: running]");
		dsb_job_reply_done(&reply);
	}
	/* Misuse is no result. */
	assert_int_equal(dsb_jobs_read(f->jobs, NULL, false, NULL, NULL, &reply, NULL),
			 -DSB_E_INVALID_ARGS);
	assert_int_equal(dsb_jobs_list(NULL, &reply, NULL), -DSB_E_INVALID_ARGS);
	dsb_jobs_setup bad = {.wait_timeout_ms = 700000};
	dsb_jobs *jobs = NULL;
	dsb_error err = {0};
	assert_int_equal(dsb_jobs_new(&bad, &jobs, &err), -DSB_E_INVALID_ARGS);
	assert_string_equal(err.message,
			    "tool-jobs: waitTimeoutMs (700000) exceeds maxWaitTimeoutMs (600000)");
}

static void test_limit(void **state)
{
	fixture *f = *state;
	char id[32];
	for (int i = 1; i <= DSB_JOBS_MAX_ACTIVE; i++)
		start_ok(f, "sleep 30", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, job_id(id, i));
	dsb_call_request req = request(f, "echo over", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK);
	dsb_call_result res;
	start_as(f, NULL, &req, NULL, NULL, &res);
	assert_true(res.is_error);
	assert_true(res.prepared);
	assert_int_equal(res.error.code, DSB_E_JOB_LIMIT);
	assert_string_equal(res.text,
			    "Error: background job limit reached for this owner (limit: 10); use "
			    "job_kill to stop an unneeded job, wait for it to finish, then retry");
	dsb_call_result_done(&res);
	/* A job that stopped no longer counts; the refused start took no id. */
	free(kill_job(f, "bash-4"));
	free(read_done(f, "bash-4"));
	start_ok(f, "echo in", DSB_MODE_READ_ONLY, DSB_BACKEND_BWRAP, "bash-11");
	assert_read(f, "bash-11", true, "in\n[status: completed, exit code: 0]");
}

static void test_output_dropped_from_memory(void **state)
{
	fixture *f = *state;
	dsb_call_setup small = f->setup;
	small.config_path = f->small;
	/* 5000 bytes of stdout against a tail of 1000: the read is lossy, the spill has it all. */
	dsb_call_request req = request(f, "head -c 5000 /dev/zero | tr '\\0' a; echo",
				       DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK);
	dsb_call_result res;
	start_as(f, &small, &req, NULL, NULL, &res);
	assert_string_equal(res.text, "started background job bash-1");
	dsb_call_result_done(&res);
	_cleanup_free_ char *text = read_done(f, "bash-1");
	static const char mark[] = "[some output was dropped from memory; full output: ";
	char *notice = strstr(text, mark);
	assert_non_null(notice);
	/* The whole tail: the last 1000 bytes of the stream, newline included. */
	assert_int_equal(notice - text, 1000);
	assert_int_equal(text[999], '\n');
	char *path = notice + strlen(mark);
	char *end = strstr(path, "]\n[status: completed, exit code: 0]");
	assert_non_null(end);
	*end = '\0';
	size_t len = 0;
	_cleanup_free_ char *spilled = dsb_test_read_file(path, &len);
	assert_non_null(spilled);
	assert_int_equal(len, 5001);
	(void)unlink(path);
}

/* Whether a process whose command line holds @needle (@len bytes, NULs included) runs. */
static bool process_with(const char *needle, size_t len)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	bool found = false;
	assert_non_null(d);
	while (!found && (e = readdir(d))) {
		char path[300], buf[4096];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		FILE *fp = fopen(path, "re");
		if (!fp)
			continue;
		size_t n = fread(buf, 1, sizeof(buf), fp);
		(void)fclose(fp);
		for (size_t i = 0; n >= len && i <= n - len && !found; i++)
			found = memcmp(buf + i, needle, len) == 0;
	}
	(void)closedir(d);
	return found;
}

static void test_free_leaves_no_process(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *pid_file = join(f->ws, "pid");
	/* A sleep of a length nobody else uses, to be found in /proc. */
	char marker[64];
	int marker_len = snprintf(marker, sizeof(marker), "sleep%c600.%d", '\0', (int)getpid());
	_cleanup_free_ char *command = NULL, *unconfined = NULL;
	assert_true(asprintf(&command, "sleep 600.%d & sleep 600.%d", (int)getpid(),
			     (int)getpid()) > 0);
	assert_true(asprintf(&unconfined, "echo $$ > '%s'; sleep 600.%d & sleep 600.%d", pid_file,
			     (int)getpid(), (int)getpid()) > 0);
	char id[32];
	int n = 0;
	for (dsb_backend b = 0; b < _DSB_BACKEND_MAX; b++)
		start_ok(f, command, DSB_MODE_WORKSPACE_WRITE, b, job_id(id, ++n));
	start_ok(f, unconfined, DSB_MODE_DANGER_FULL_ACCESS, _DSB_BACKEND_INVALID, job_id(id, ++n));
	/* Everything started: the sleeps run. */
	for (int i = 0; i < 500 && access(pid_file, F_OK) < 0; i++)
		(void)usleep(10000);
	(void)usleep(200000);
	assert_true(process_with(marker, (size_t)marker_len));
	_cleanup_free_ char *pid_text = dsb_test_read_file(pid_file, NULL);
	assert_non_null(pid_text);
	pid_t pid = (pid_t)atoi(pid_text);
	assert_true(pid > 0);
	assert_int_equal(kill(pid, 0), 0);

	f->jobs = dsb_jobs_free(f->jobs);
	assert_false(process_with(marker, (size_t)marker_len));
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_int_equal(dsb_jobs_new(NULL, &f->jobs, NULL), 0);
}

/*
 * DSH's fixture missing-sandbox-runner: the start succeeds, the spawn of the runner fails, and
 * the job's read says so once, with the runner notice, killed before exit.
 */
static void test_missing_runner(void **state)
{
	fixture *f = *state;
	_cleanup_free_ char *runner = join(f->dir, "missing-runner");
	_cleanup_free_ char *config = join(f->dir, "runner.yaml");
	_cleanup_free_ char *yaml = NULL;
	assert_true(asprintf(&yaml,
			     "sandbox-local: { runnerCommand: [%s], runnerFailureSignatures: "
			     "[\"x: \"] }\n",
			     runner) > 0);
	dsb_test_write_file(config, yaml, strlen(yaml));
	dsb_call_setup with_runner = f->setup;
	with_runner.config_path = config;
	dsb_call_request req = request(f, "touch marker", DSB_MODE_READ_ONLY, _DSB_BACKEND_INVALID);
	dsb_call_result res;
	start_as(f, &with_runner, &req, NULL, NULL, &res);
	assert_false(res.is_error);
	assert_string_equal(res.text, "started background job bash-1");
	dsb_call_result_done(&res);
	_cleanup_free_ char *want = NULL;
	assert_true(
		asprintf(&want,
			 "[stderr]\nspawn failed: Error: spawn %s ENOENT\n[sandbox: the sandbox "
			 "runner itself failed under read-only mode \xE2\x80\x94 the command "
			 "did not run; this is a sandbox problem, not a command failure]\n"
			 "[status: killed, killed before exit]",
			 runner) > 0);
	assert_read(f, "bash-1", true, want);
	/* The note comes once; the settled notice on every read. */
	assert_read(f, "bash-1", false,
		    "[sandbox: the sandbox runner itself failed under read-only mode \xE2\x80\x94 "
		    "the command did not run; this is a sandbox problem, not a command failure]\n"
		    "[status: killed, killed before exit]");

	/*
	 * A runner that cannot be trusted (it lies where others, or the command, may write) is the
	 * start's own error, before anything was spawned, and takes no id (DSH's confine throws).
	 */
	_cleanup_free_ char *in_ws = join(f->ws, "runner");
	dsb_test_write_file(in_ws, "#!/bin/sh\n", strlen("#!/bin/sh\n"));
	assert_int_equal(chmod(in_ws, 0755), 0);
	free(yaml);
	yaml = NULL;
	assert_true(asprintf(&yaml,
			     "sandbox-local: { runnerCommand: [%s], runnerFailureSignatures: "
			     "[\"x: \"] }\n",
			     in_ws) > 0);
	dsb_test_write_file(config, yaml, strlen(yaml));
	start_as(f, &with_runner, &req, NULL, NULL, &res);
	assert_true(res.is_error);
	assert_true(res.prepared);
	assert_int_equal(res.error.code, DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(res.text, "Runner failure: "));
	assert_null(strstr(res.text, "Runner failure: Error: spawn"));
	dsb_call_result_done(&res);
	start_ok(f, "echo next", DSB_MODE_READ_ONLY, DSB_BACKEND_LANDLOCK, "bash-2");
	assert_read(f, "bash-2", true, "next\n[status: completed, exit code: 0]");
}

typedef struct concurrent {
	fixture *f;
	int n;
	char id[32];
	char *text;
} concurrent;

static void *start_and_read(void *arg)
{
	concurrent *c = arg;
	char command[64];
	(void)snprintf(command, sizeof(command), "sleep 0.1; echo %d", c->n);
	dsb_call_request req = request(c->f, command, DSB_MODE_READ_ONLY,
				       c->n % 2 ? DSB_BACKEND_BWRAP : DSB_BACKEND_LANDLOCK);
	dsb_call *call = NULL;
	dsb_call_result res = {0};
	if (dsb_call_new(&c->f->setup, &call, NULL) < 0 ||
	    dsb_jobs_start(c->f->jobs, call, &req, &res, NULL) < 0 || res.is_error)
		return NULL;
	dsb_call_free(call);
	(void)sscanf(res.text, "started background job %31s", c->id);
	dsb_call_result_done(&res);
	double t = 20000;
	dsb_job_reply reply = {0};
	if (dsb_jobs_read(c->f->jobs, c->id, true, &t, NULL, &reply, NULL) == 0 && !reply.is_error)
		c->text = reply.text;
	return NULL;
}

static void test_many_jobs_from_many_threads(void **state)
{
	fixture *f = *state;
	enum {
		N = 10
	};
	concurrent c[N];
	pthread_t t[N];
	for (int i = 0; i < N; i++) {
		c[i] = (concurrent){.f = f, .n = i};
		assert_int_equal(pthread_create(&t[i], NULL, start_and_read, &c[i]), 0);
	}
	bool seen[N + 1] = {false};
	for (int i = 0; i < N; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_non_null(c[i].text);
		char want[64];
		(void)snprintf(want, sizeof(want), "%d\n[status: completed, exit code: 0]", i);
		assert_string_equal(c[i].text, want);
		free(c[i].text);
		/* Every id given once, bash-1 to bash-N. */
		int k = atoi(c[i].id + strlen("bash-"));
		assert_true(k >= 1 && k <= N);
		assert_false(seen[k]);
		seen[k] = true;
	}
	_cleanup_free_ char *list = list_jobs(f);
	size_t lines = 1;
	for (const char *p = list; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, N);
}

typedef struct aborted_read {
	const fixture *f;
	dsb_jobs_waiter waiter;
	dsb_job_reply reply;
	int r;
} aborted_read;

static void *wait_long(void *arg)
{
	aborted_read *a = arg;
	double t = 600000;
	a->r = dsb_jobs_read(a->f->jobs, "bash-1", true, &t, &a->waiter, &a->reply, NULL);
	return NULL;
}

/* A wait of ten minutes ends at once when aborted, reads nothing, and does not report. */
static void test_abort_wait(void **state)
{
	fixture *f = *state;
	start_ok(f, "echo kept; sleep 100", DSB_MODE_READ_ONLY, DSB_BACKEND_BWRAP, "bash-1");
	aborted_read a = {.f = f};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, wait_long, &a), 0);
	(void)usleep(200 * 1000);
	time_t t0 = time(NULL);
	dsb_jobs_abort_wait(f->jobs, &a.waiter);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(time(NULL) - t0 < 10);
	assert_int_equal(a.r, 0);
	assert_true(a.reply.is_error);
	assert_int_equal(a.reply.error.code, DSB_E_ABORTED);
	assert_string_equal(a.reply.text, "Error: wait aborted");
	dsb_job_reply_done(&a.reply);

	/* Aborted before it begins: no wait at all. The job runs on, its output unread. */
	dsb_jobs_waiter early = {0};
	dsb_jobs_abort_wait(f->jobs, &early);
	double ten_min = 600000;
	dsb_job_reply reply = {0};
	assert_int_equal(dsb_jobs_read(f->jobs, "bash-1", true, &ten_min, &early, &reply, NULL), 0);
	assert_string_equal(reply.text, "Error: wait aborted");
	dsb_job_reply_done(&reply);
	_cleanup_free_ char *text = read_job(f, "bash-1", false, -1);
	assert_true(strstr(text, "[status: running]") != NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ids_and_failed_starts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reads_return_only_new_output, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_lines_and_the_newline_rule, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wait_times_out_and_waits_for_the_end, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kill_stops_and_settles_killed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_completion_notices, setup, teardown),
		cmocka_unit_test_setup_teardown(test_denial_inside_a_job, setup, teardown),
		cmocka_unit_test_setup_teardown(test_escalation_before_the_start, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_output_dropped_from_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_leaves_no_process, setup, teardown),
		cmocka_unit_test_setup_teardown(test_many_jobs_from_many_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_runner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_wait, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
