/* SPDX-License-Identifier: MIT */
/*
 * A harness's tool calls through libdshsandbox: a session in a store of its own, a bash call
 * the read-only session denies, the same call retried with an escalation that this program
 * approves, and a write through the fence. Each result is printed as the model would read it.
 *
 * Build: cc agent.c $(pkg-config --cflags --libs libdshsandbox) -o agent
 * (from a source tree, not installed: docs/user-guide.md, "The C library").
 * Usage: agent STORE WORKSPACE
 */
#include <stdio.h>
#include <stdlib.h>

#include <dsb/dsb.h>

/* The human in the loop: here a program that shows the request and approves it once. */
static int approve_once(const dsb_approval_request *req, void *userdata,
			dsb_approval_outcome *ret_outcome)
{
	(void)userdata;
	fprintf(stderr, "approval asked: %s (%s)\n", req->reason, req->subject);
	*ret_outcome = DSB_OUTCOME_ALLOWED_ONCE;
	return 0;
}

/* One tool call, start to end; prints what the model reads. Returns 0, or 1 with no result. */
static int call(const dsb_call_setup *setup, const dsb_call_request *req)
{
	dsb_call *c = NULL;
	dsb_call_result res = {0};
	dsb_error err = {0};
	int r = dsb_call_new(setup, &c, &err);

	if (r >= 0) {
		dsb_call_set_answerer(c, approve_once, NULL);
		r = dsb_call_run(c, req, &res, &err);
	}
	if (r < 0)
		fprintf(stderr, "agent: %s: %s\n", dsb_code_name(err.code), err.message);
	else
		printf("--- %s%s\n%s\n", dsb_tool_to_string(req->tool),
		       res.is_error ? " (error)" : "", res.text);
	dsb_call_result_done(&res);
	dsb_call_free(c);
	return r < 0;
}

int main(int argc, char **argv)
{
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	dsb_error err = {0};

	if (argc != 3) {
		fprintf(stderr, "usage: agent STORE WORKSPACE\n");
		return 2;
	}
	/* A new session starts read-only; its log is where its decisions are kept. */
	if (dsb_store_open(argv[1], &store, &err) < 0 ||
	    dsb_session_create(store, argv[2], &session, &err) < 0) {
		fprintf(stderr, "agent: %s\n", err.message);
		dsb_store_free(store);
		return 1;
	}

	dsb_call_setup setup = {.store_path = argv[1], .cache_dir = NULL};
	dsb_call_request req = DSB_CALL_REQUEST_INIT;
	int failed = 0;

	req.tool = DSB_TOOL_BASH;
	req.session = dsb_session_id(session);
	req.command = "echo built > out.txt && cat out.txt";
	failed |= call(&setup, &req); /* denied, with DSH's hint to escalate */

	req.sandbox_permissions = "workspace-write";
	req.justification = "write the build output";
	failed |= call(&setup, &req); /* approved by approve_once(), for this call only */

	dsb_call_request write = DSB_CALL_REQUEST_INIT;
	write.tool = DSB_TOOL_WRITE;
	write.session = dsb_session_id(session);
	write.path = "notes.txt";
	write.content = "hello\n";
	write.content_len = 6;
	failed |= call(&setup, &write); /* read-only again: the fence refuses it */

	dsb_session_free(session);
	dsb_store_free(store);
	return failed;
}
