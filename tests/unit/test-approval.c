/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of escalation and the approval service (dsh-compat §8.1-8.5, §11.1, §11.25): the wider
 * ladder, argument validation, approveEscalation's ordered refusals with DSH's texts, and the
 * service's turn enclosure, audit pair, policy gate and answerer containment.
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
#include "src/call/call.h"
#include "src/exec/exec.h"
#include "src/session/session.h"
#include "helpers.h"

typedef struct fixture {
	char *dir;
	dsb_store *store;
	dsb_session *s;
	dsb_config *cfg;
} fixture;

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = dsb_test_mkdtemp();
	assert_int_equal(dsb_store_open(f->dir, &f->store, NULL), 0);
	dsb_store_set_fsync(f->store, false);
	assert_int_equal(dsb_session_create(f->store, "/p", &f->s, NULL), 0);
	f->cfg = dsb_config_new();
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	dsb_session_free(f->s);
	dsb_store_free(f->store);
	dsb_config_free(f->cfg);
	dsb_test_rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* The session's events as "type data" lines, seq/time/ids dropped. */
static int collect(const log_record *rec, void *userdata, dsb_error *reterr)
{
	strbuf *sb = userdata;
	json_t *data = json_deep_copy(json_object_get(rec->json, "data"));
	json_object_del(data, "id");
	char *d = json_dumps(data, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
	(void)strbuf_printf(sb, "%s %s\n", rec->type, d ? d : "");
	free(d);
	json_decref(data);
	return 0;
}

static char *events(fixture *f)
{
	strbuf sb = STRBUF_INIT;
	assert_int_equal(session_scan(f->s, collect, &sb, NULL, NULL), 0);
	return strbuf_take(&sb);
}

static int answered;

static int answer_allowed(const dsb_approval_request *req, void *userdata,
			  dsb_approval_outcome *ret)
{
	answered++;
	*ret = *(dsb_approval_outcome *)userdata;
	return 0;
}

static int answer_throws(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
{
	answered++;
	return -1;
}

static void open_turn(fixture *f)
{
	assert_int_equal(dsb_session_append(f->s, "turn/start", "{\"turn\":1}", NULL, NULL), 0);
}

/* --- §11.1 ---------------------------------------------------------------------------------- */

static void test_wider_ladder(void **state)
{
	(void)state;
	assert_true(dsb_escalation_is_wider(DSB_MODE_READ_ONLY, DSB_MODE_WORKSPACE_WRITE));
	assert_true(dsb_escalation_is_wider(DSB_MODE_READ_ONLY, DSB_MODE_DANGER_FULL_ACCESS));
	assert_true(dsb_escalation_is_wider(DSB_MODE_WORKSPACE_WRITE, DSB_MODE_DANGER_FULL_ACCESS));
	assert_false(dsb_escalation_is_wider(DSB_MODE_WORKSPACE_WRITE, DSB_MODE_WORKSPACE_WRITE));
	assert_false(dsb_escalation_is_wider(DSB_MODE_READ_ONLY, DSB_MODE_READ_ONLY));
	assert_false(
		dsb_escalation_is_wider(DSB_MODE_DANGER_FULL_ACCESS, DSB_MODE_DANGER_FULL_ACCESS));
	assert_false(dsb_escalation_is_wider(_DSB_MODE_INVALID, DSB_MODE_DANGER_FULL_ACCESS));
}

static void test_validate_escalation_args(void **state)
{
	(void)state;
	dsb_error err = {0};
	assert_int_equal(dsb_escalation_validate(NULL, NULL, &err), 0);
	assert_int_equal(dsb_escalation_validate("workspace-write", "a sentence", &err), 0);
	static const struct {
		const char *perm, *just, *text;
	} bad[] = {
		{"workspace-write", NULL,
		 "invalid escalation: sandbox_permissions requires a justification"},
		{NULL, "why",
		 "invalid escalation: justification is only valid together with "
		 "sandbox_permissions"},
		{"danger-full-access", " \t ",
		 "invalid justification: expected a non-empty sentence"},
		{"read-only", "why",
		 "invalid arguments: \"sandbox_permissions\" must be one of "
		 "[\"workspace-write\",\"danger-full-access\"]"},
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		assert_int_equal(dsb_escalation_validate(bad[i].perm, bad[i].just, &err),
				 -DSB_E_INVALID_ARGS);
		assert_string_equal(err.message, bad[i].text);
	}
}

static void test_markers(void **state)
{
	(void)state;
	char *m = render_denial_marker(DSB_MODE_READ_ONLY);
	assert_string_equal(m, "[sandbox: file access denied under read-only mode]");
	free(m);
	m = render_escalation_hint("operation");
	assert_non_null(strstr(m, "retry this exact operation once with sandbox_permissions"));
	free(m);
}

static dsb_escalation escalation(dsb_mode effective, dsb_mode requested)
{
	return (dsb_escalation){
		.requested = requested,
		.justification = "the user asked to write in the workspace",
		.effective = effective,
		.subject = "operation",
		.tool_name = "write",
	};
}

static void test_grant_asks_with_the_audit_reason(void **state)
{
	fixture *f = *state;
	open_turn(f);
	dsb_approval_outcome allow = DSB_OUTCOME_ALLOWED_ONCE;
	dsb_escalation e = escalation(DSB_MODE_READ_ONLY, DSB_MODE_WORKSPACE_WRITE);
	dsb_mode granted = DSB_MODE_READ_ONLY;
	assert_int_equal(
		approval_escalate(f->s, f->cfg, &e, answer_allowed, &allow, &granted, NULL), 0);
	assert_int_equal(granted, DSB_MODE_WORKSPACE_WRITE);
	char *ev = events(f);
	assert_string_equal(
		ev, "turn/start {\"turn\":1}\n"
		    "approval/asked {\"toolName\":\"write\",\"reason\":\"escalate sandbox to "
		    "workspace-write: the user asked to write in the workspace\"}\n"
		    "approval/decided {\"outcome\":\"allowed-once\"}\n");
	free(ev);
}

static void test_non_widening_and_agentless_fail_closed_without_asking(void **state)
{
	fixture *f = *state;
	open_turn(f);
	answered = 0;
	dsb_approval_outcome allow = DSB_OUTCOME_ALLOWED_ONCE;
	dsb_error err = {0};
	dsb_mode granted;
	dsb_escalation e = escalation(DSB_MODE_READ_ONLY, DSB_MODE_READ_ONLY);
	assert_int_equal(
		approval_escalate(f->s, f->cfg, &e, answer_allowed, &allow, &granted, &err),
		-DSB_E_ESCALATION_REFUSED);
	assert_string_equal(err.message,
			    "sandbox escalation to \"read-only\" is not strictly wider "
			    "than this call's current \"read-only\" mode");
	e = escalation(DSB_MODE_DANGER_FULL_ACCESS, DSB_MODE_DANGER_FULL_ACCESS);
	assert_int_equal(
		approval_escalate(f->s, f->cfg, &e, answer_allowed, &allow, &granted, &err),
		-DSB_E_ESCALATION_REFUSED);
	assert_non_null(strstr(err.message, "not strictly wider"));
	e = escalation(DSB_MODE_READ_ONLY, DSB_MODE_WORKSPACE_WRITE);
	assert_int_equal(
		approval_escalate(NULL, f->cfg, &e, answer_allowed, &allow, &granted, &err),
		-DSB_E_ESCALATION_REFUSED);
	assert_string_equal(err.message, "sandbox escalation to \"workspace-write\" requires "
					 "approval, but the call has no agent to route it through");
	assert_int_equal(answered, 0);
	char *ev = events(f);
	assert_string_equal(ev, "turn/start {\"turn\":1}\n"); /* no audit events */
	free(ev);
}

static void test_each_outcome_has_its_text(void **state)
{
	fixture *f = *state;
	open_turn(f);
	static const struct {
		dsb_approval_outcome o;
		const char *text;
	} cases[] = {
		{DSB_OUTCOME_REJECTED,
		 "the user rejected escalating this operation to \"workspace-write\""},
		{DSB_OUTCOME_CANCELLED,
		 "approval for escalating to \"workspace-write\" was cancelled"},
		{DSB_OUTCOME_UNAVAILABLE,
		 "sandbox escalation to \"workspace-write\" requires approval, "
		 "but no approval channel is available"},
		{(dsb_approval_outcome)42, "sandbox escalation to \"workspace-write\" requires "
					   "approval, but no approval channel is available"},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		dsb_error err = {0};
		dsb_mode granted;
		dsb_escalation e = escalation(DSB_MODE_READ_ONLY, DSB_MODE_WORKSPACE_WRITE);
		assert_int_equal(approval_escalate(f->s, f->cfg, &e, answer_allowed,
						   (void *)&cases[i].o, &granted, &err),
				 -DSB_E_ESCALATION_REFUSED);
		assert_string_equal(err.message, cases[i].text);
	}
}

/* --- §11.25 --------------------------------------------------------------------------------- */

static void test_outside_an_open_turn_appends_nothing(void **state)
{
	fixture *f = *state;
	dsb_approval_request req = {.tool_name = "bash"};
	dsb_approval_outcome o;
	dsb_error err = {0};
	assert_int_equal(approval_request(f->s, f->cfg, &req, NULL, NULL, &o, &err),
			 -DSB_E_INVALID_ARGS);
	assert_non_null(strstr(err.message, "approval.request() outside an open turn"));
	open_turn(f);
	assert_int_equal(dsb_session_append(f->s, "turn/end", "{\"turn\":1}", NULL, NULL), 0);
	assert_int_equal(approval_request(f->s, f->cfg, &req, NULL, NULL, &o, &err),
			 -DSB_E_INVALID_ARGS);
	char *ev = events(f);
	assert_string_equal(ev, "turn/start {\"turn\":1}\nturn/end {\"turn\":1}\n");
	free(ev);
}

static void test_nobody_listening_is_unavailable_with_the_pair(void **state)
{
	fixture *f = *state;
	open_turn(f);
	dsb_approval_request req = {.tool_name = "bash", .call_id = "call-1", .reason = "why"};
	dsb_approval_outcome o;
	assert_int_equal(approval_request(f->s, f->cfg, &req, NULL, NULL, &o, NULL), 0);
	assert_int_equal(o, DSB_OUTCOME_UNAVAILABLE);
	dsb_approval_request bare = {.tool_name = "bash"};
	assert_int_equal(approval_request(f->s, f->cfg, &bare, answer_throws, NULL, &o, NULL), 0);
	assert_int_equal(o, DSB_OUTCOME_UNAVAILABLE); /* a throwing answerer is contained */
	char *ev = events(f);
	assert_string_equal(ev, "turn/start {\"turn\":1}\n"
				"approval/asked {\"toolName\":\"bash\",\"callId\":\"call-1\","
				"\"reason\":\"why\"}\n"
				"approval/decided {\"outcome\":\"unavailable\"}\n"
				"approval/asked {\"toolName\":\"bash\"}\n"
				"approval/decided {\"outcome\":\"unavailable\"}\n");
	free(ev);
}

static void test_never_rejects_without_consulting(void **state)
{
	fixture *f = *state;
	open_turn(f);
	answered = 0;
	dsb_approval_outcome allow = DSB_OUTCOME_ALLOWED_ONCE, o;
	dsb_approval_request req = {.tool_name = "bash"};
	f->cfg->approval_policy = DSB_APPROVAL_NEVER;
	assert_int_equal(approval_request(f->s, f->cfg, &req, answer_allowed, &allow, &o, NULL), 0);
	assert_int_equal(o, DSB_OUTCOME_REJECTED);
	assert_int_equal(answered, 0);

	/* A session override outranks the configured default, in both directions. */
	assert_int_equal(dsb_session_set_approval(f->s, "ask", NULL), 0);
	assert_int_equal(approval_request(f->s, f->cfg, &req, answer_allowed, &allow, &o, NULL), 0);
	assert_int_equal(o, DSB_OUTCOME_ALLOWED_ONCE);
	f->cfg->approval_policy = DSB_APPROVAL_ASK;
	assert_int_equal(dsb_session_set_approval(f->s, "never", NULL), 0);
	assert_int_equal(approval_request(f->s, f->cfg, &req, answer_allowed, &allow, &o, NULL), 0);
	assert_int_equal(o, DSB_OUTCOME_REJECTED);
}

static char *last_id;

static int remember_id(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
{
	if (last_id && strcmp(last_id, req->id) == 0)
		fail_msg("an id was reused");
	free(last_id);
	last_id = strdup(req->id);
	*ret = DSB_OUTCOME_ALLOWED_ONCE;
	return 0;
}

static void test_fresh_id_per_request(void **state)
{
	fixture *f = *state;
	open_turn(f);
	dsb_approval_request req = {.tool_name = "bash"};
	dsb_approval_outcome o;
	for (int i = 0; i < 3; i++)
		assert_int_equal(approval_request(f->s, f->cfg, &req, remember_id, NULL, &o, NULL),
				 0);
	free(last_id);
	last_id = NULL;
}

static void test_live_switch_once_with_notice(void **state)
{
	fixture *f = *state;
	assert_int_equal(approval_set_policy(f->s, f->cfg, DSB_APPROVAL_ASK, NULL), 0);
	assert_int_equal(approval_set_policy(f->s, f->cfg, DSB_APPROVAL_NEVER, NULL), 1);
	assert_int_equal(approval_set_policy(f->s, f->cfg, DSB_APPROVAL_NEVER, NULL), 0);
	char *ev = events(f);
	assert_string_equal(ev,
			    "approval/policy {\"policy\":\"never\"}\n"
			    "user/message {\"content\":[{\"type\":\"text\",\"text\":\"The approval "
			    "policy changed from \\\"ask\\\" to \\\"never\\\" (changed by the "
			    "user).\"}],\"source\":{\"kind\":\"plugin\",\"plugin\":"
			    "\"user-approval\"},\"role\":\"user\"}\n");
	free(ev);
}

/* --- what the retried call was refused (issue 34) ------------------------------------------ */

static char refused_seen[512];

static int answer_keeps_refused(const dsb_approval_request *req, void *userdata,
				dsb_approval_outcome *ret)
{
	(void)snprintf(refused_seen, sizeof(refused_seen), "%s",
		       req->refused ? req->refused : "(none)");
	*ret = DSB_OUTCOME_REJECTED;
	return 0;
}

/* The escalation's refused lines reach whoever is asked, as they are. */
static void test_refused_reaches_the_answerer(void **state)
{
	fixture *f = *state;
	open_turn(f);
	dsb_escalation e = escalation(DSB_MODE_READ_ONLY, DSB_MODE_WORKSPACE_WRITE);
	e.refused = "[sandbox: write to /p/x denied (read-only mode)]";
	dsb_mode granted;
	assert_int_equal(
		approval_escalate(f->s, f->cfg, &e, answer_keeps_refused, NULL, &granted, NULL),
		-DSB_E_ESCALATION_REFUSED);
	assert_string_equal(refused_seen, e.refused);
	e.refused = NULL;
	assert_int_equal(
		approval_escalate(f->s, f->cfg, &e, answer_keeps_refused, NULL, &granted, NULL),
		-DSB_E_ESCALATION_REFUSED);
	assert_string_equal(refused_seen, "(none)");
}

/* A run that was refused something, as call_log_refusals() takes it. */
static dsb_run_result refused_run(void)
{
	static char op[] = "write", path[] = "/etc/nope", named[] = "../etc/nope",
		    why[] = "outside";
	static char note[] = "[sandbox: write to /etc/nope denied (outside the writable roots)]\n"
			     "[sandbox: 3 file operations refused in all]";
	static dsb_refusal one = {
		.op = op, .path = path, .named = named, .sys_errno = EACCES, .why = why};
	return (dsb_run_result){
		.evidence = true,
		.n_refused = 3,
		.refused = &one,
		.n_refused_named = 1,
		.refusal_note = note,
	};
}

/* The session records a refused call (ignorable, for DSH's readers), and an escalation of the
 * same command finds it; another command's, or a later call's record, does not. */
static void test_refusals_logged_and_found_for_the_retry(void **state)
{
	fixture *f = *state;
	dsb_run_result run = refused_run();
	dsb_call_request req = {
		.tool = DSB_TOOL_BASH, .command = "echo x > ../etc/nope", .call_id = "c1"};
	assert_int_equal(call_log_refusals(f->s, &req, req.command, &run, NULL), 0);
	char *ev = events(f);
	assert_string_equal(
		ev,
		"sandbox/refusals {\"tool\":\"bash\",\"callId\":\"c1\",\"subject\":\"echo x > "
		"../etc/nope\",\"count\":3,\"refusals\":[{\"op\":\"write\",\"path\":\"/etc/"
		"nope\",\"named\":\"../etc/nope\",\"errno\":\"EACCES\",\"reason\":\"outside\"}],"
		"\"note\":\"[sandbox: write to /etc/nope denied (outside the writable roots)]\\n"
		"[sandbox: 3 file operations refused in all]\"}\n");
	free(ev);
	char *log = dsb_test_read_file(dsb_session_path(f->s), NULL);
	assert_non_null(strstr(log, "\"ignorable\":true}\n"));
	free(log);

	char *note = NULL;
	assert_int_equal(call_refused_before(f->s, "bash", req.command, &note, NULL), 1);
	assert_string_equal(note, run.refusal_note);
	free(note);
	assert_int_equal(call_refused_before(f->s, "bash", "echo y", &note, NULL), 0);
	assert_null(note);
	assert_int_equal(call_refused_before(f->s, "exec", req.command, &note, NULL), 0);

	/* Nothing refused, or no evidence: nothing logged. */
	dsb_run_result clean = {.evidence = true};
	assert_int_equal(call_log_refusals(f->s, &req, req.command, &clean, NULL), 0);
	dsb_run_result guessed = {.denied = true, .n_refused = 0};
	assert_int_equal(call_log_refusals(f->s, &req, req.command, &guessed, NULL), 0);
	ev = events(f);
	assert_null(strstr(strchr(ev, '\n') + 1, "sandbox/refusals"));
	free(ev);

	/* Another command refused since: the retry of the first finds nothing. */
	dsb_call_request other = {.tool = DSB_TOOL_BASH, .command = "touch /etc/y"};
	assert_int_equal(call_log_refusals(f->s, &other, other.command, &run, NULL), 0);
	assert_int_equal(call_refused_before(f->s, "bash", req.command, &note, NULL), 0);
	assert_int_equal(call_refused_before(f->s, "bash", other.command, &note, NULL), 1);
	free(note);
	/* No session: nothing to record, nothing found. */
	assert_int_equal(call_log_refusals(NULL, &req, req.command, &run, NULL), 0);
	assert_int_equal(call_refused_before(NULL, "bash", req.command, &note, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wider_ladder),
		cmocka_unit_test(test_validate_escalation_args),
		cmocka_unit_test(test_markers),
		cmocka_unit_test_setup_teardown(test_grant_asks_with_the_audit_reason, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_non_widening_and_agentless_fail_closed_without_asking, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_each_outcome_has_its_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_outside_an_open_turn_appends_nothing, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_nobody_listening_is_unavailable_with_the_pair,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_never_rejects_without_consulting, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_fresh_id_per_request, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_switch_once_with_notice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_reaches_the_answerer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals_logged_and_found_for_the_retry, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
