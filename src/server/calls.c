/* SPDX-License-Identifier: MIT */
/*
 * Tool calls, each on a thread of its own, so that a slow command never holds up a ping or
 * another call. The calls in flight are kept in one list under the server's lock, which also
 * decides the race between a result and a cancellation: whoever takes the lock first wins,
 * so a cancelled call gets no response at all and a call that answered is never cancelled
 * (MCP cancellation: the receiver SHOULD NOT respond to a cancelled request). Progress
 * notifications are written under the same lock, before the call is marked done, so none
 * follows its response.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

/* At most one progress notification a second per call. */
#define PROGRESS_INTERVAL_MS 1000

static void call_free(server_call *sc)
{
	if (!sc)
		return;
	json_decref(sc->id);
	json_decref(sc->params);
	json_decref(sc->approval);
	json_decref(sc->input_required);
	free(sc);
}

/* Takes @sc off the list (under the lock) and wakes whoever waits for calls to end. */
static void call_leave(server_call *sc)
{
	server *srv = sc->srv;
	(void)pthread_mutex_lock(&srv->lock);
	for (server_call **p = &srv->calls; *p; p = &(*p)->next)
		if (*p == sc) {
			*p = sc->next;
			break;
		}
	srv->n_calls--;
	(void)pthread_cond_broadcast(&srv->changed);
	(void)pthread_mutex_unlock(&srv->lock);
	call_free(sc);
}

/* The call's output, as it comes: the newest whole line (a "\r" ends one too, for bars). */
static void on_output(void *userdata, int stream, const char *buf, size_t n)
{
	server_call *sc = userdata;
	int s = stream == 2 ? 1 : 0;
	(void)pthread_mutex_lock(&sc->srv->lock);
	for (size_t i = 0; i < n; i++) {
		if (buf[i] == '\n' || buf[i] == '\r') {
			if (sc->partial_len[s] > 0) {
				memcpy(sc->newest, sc->partial[s], sc->partial_len[s]);
				sc->newest_len = sc->partial_len[s];
				sc->partial_len[s] = 0;
				sc->pending = true;
			}
		} else if (sc->partial_len[s] < PROGRESS_LINE_MAX) {
			sc->partial[s][sc->partial_len[s]++] = buf[i];
		}
	}
	(void)pthread_mutex_unlock(&sc->srv->lock);
}

/*
 * {"content":[{"type":"text","text":TEXT}, SNAPSHOT?],"structuredContent"?,"isError"}; an error
 * adds "_meta":{"dsh-sandbox/code":NAME}, the stable name of @code, so that a client need not
 * read the code back from DSH's text (which is the model's, and says it for a person).
 */
static json_t *tool_result(server *srv, const char *text, size_t len, bool is_error, dsb_code code,
			   json_t *structured)
{
	json_t *content = json_array();
	json_t *block = rpc_string(text, len);
	if (!content || !block ||
	    json_array_append_new(content, json_pack("{s:s, s:o}", "type", "text", "text", block)) <
		    0) {
		json_decref(content);
		json_decref(structured);
		return NULL;
	}
	/* The policy changed since the model last saw it: the snapshot rides along (dsh-compat §9).
	 */
	_cleanup_free_ char *snapshot = server_snapshot(srv);
	if (snapshot)
		(void)json_array_append_new(
			content, json_pack("{s:s, s:s}", "type", "text", "text", snapshot));
	json_t *result = json_pack("{s:o}", "content", content);
	if (result && structured)
		(void)json_object_set_new(result, "structuredContent", structured);
	else
		json_decref(structured);
	if (result)
		(void)json_object_set_new(result, "isError", json_boolean(is_error));
	/* An error must name a failure: one without its code (none should be) is IO. */
	const char *name = code != DSB_OK ? dsb_code_name(code) : NULL;
	if (result && is_error)
		(void)json_object_set_new(
			result, "_meta",
			json_pack("{s:s}", "dsh-sandbox/code", name ? name : "IO"));
	return result;
}

/* A tool error the call never ran for: "Error: MESSAGE", as DSH's toolErrorResult(). */
static json_t *error_result(server *srv, dsb_code code, const char *message)
{
	_cleanup_free_ char *text = NULL;
	int n = asprintf(&text, "Error: %s", message);
	return n < 0 ? NULL : tool_result(srv, text, (size_t)n, true, code, NULL);
}

/* The request's id as the audit pair's callId: a string as it is, a number in decimal. */
static char *call_id_of(const json_t *id)
{
	if (json_is_string(id))
		return strdup(json_string_value(id));
	char *s = NULL;
	return asprintf(&s, "%" JSON_INTEGER_FORMAT, json_integer_value(id)) < 0 ? NULL : s;
}

/* The successful call's structured value, where it is safe to ship (server.md). */
static json_t *structured_of(const dsb_call_result *res)
{
	_cleanup_free_ char *json = NULL;
	if (res->is_error || dsb_call_render_json(res, &json, NULL) < 0)
		return NULL;
	return json_loads(json, 0, NULL);
}

/* Drops the queued notices of job @job_id (a read or kill reported it). */
static void drop_notices_of(server *srv, const char *job_id)
{
	(void)pthread_mutex_lock(&srv->lock);
	for (server_notice **p = &srv->notices; *p;) {
		server_notice *n = *p;
		if (strcmp(n->job_id, job_id) == 0) {
			*p = n->next;
			free(n->job_id);
			free(n->text);
			free(n);
		} else {
			p = &n->next;
		}
	}
	(void)pthread_mutex_unlock(&srv->lock);
}

/* job_output, job_kill, job_list: the registry's texts, as DSH's tool-jobs returns them. */
static json_t *run_job_tool(server_call *sc, const tool_plan *plan, dsb_error *ret_err)
{
	server *srv = sc->srv;
	dsb_job_reply reply = {0};
	int r;
	switch (plan->tool) {
	case TOOL_JOB_OUTPUT: {
		double t = plan->job_timeout_ms;
		r = dsb_jobs_read(srv->jobs, plan->job_id, plan->wait, isnan(t) ? NULL : &t,
				  &sc->waiter, &reply, ret_err);
		break;
	}
	case TOOL_JOB_KILL:
		r = dsb_jobs_kill(srv->jobs, plan->job_id, &reply, ret_err);
		break;
	case TOOL_JOB_LIST:
		r = dsb_jobs_list(srv->jobs, &reply, ret_err);
		break;
	case TOOL_BASH:
	case TOOL_EDIT:
	case TOOL_READ:
	case TOOL_WRITE:
	case _TOOL_MAX:
	case _TOOL_INVALID:
	default:
		r = dsb_fail(ret_err, DSB_E_INVALID_ARGS, "not a job tool");
		break;
	}
	if (r < 0)
		return NULL;
	/* What the model reads now reports the job: a notice still queued for it is stale. */
	if (plan->job_id && !reply.is_error)
		drop_notices_of(srv, plan->job_id);
	json_t *result = tool_result(srv, reply.text, reply.text_len, reply.is_error,
				     reply.error.code, NULL);
	dsb_job_reply_done(&reply);
	if (!result)
		dsb_fail(ret_err, DSB_E_NO_MEMORY, "out of memory");
	return result;
}

void calls_notice(const char *job_id, const char *text, void *userdata)
{
	server *srv = userdata;
	server_notice *n = calloc(1, sizeof(*n));
	if (!n || !(n->job_id = strdup(job_id)) || !(n->text = strdup(text))) {
		if (n)
			free(n->job_id);
		free(n);
		server_log(srv, LEVEL_ERROR, "out of memory: a completion notice was lost: %s",
			   text);
		return;
	}
	(void)pthread_mutex_lock(&srv->lock);
	server_notice **p = &srv->notices;
	while (*p)
		p = &(*p)->next;
	*p = n;
	(void)pthread_mutex_unlock(&srv->lock);
	/* A client that asked for log messages hears of it at once, without a tool call. */
	server_log(srv, LEVEL_NOTICE, "%s", text);
}

void calls_drop_notices(server *srv)
{
	for (server_notice *n = srv->notices, *next; n; n = next) {
		next = n->next;
		free(n->job_id);
		free(n->text);
		free(n);
	}
	srv->notices = NULL;
}

/*
 * DSH tells the model of a finished job in a message of its own; here the next tool result
 * carries each notice as a text block after its own text (before a snapshot, which stays
 * last). Taken under the lock by the call whose response is sure to be written.
 */
static void attach_notices(server *srv, json_t *result)
{
	json_t *content = json_object_get(result, "content");
	size_t at = 1;
	while (srv->notices) {
		server_notice *n = srv->notices;
		json_t *block = json_pack("{s:s, s:s}", "type", "text", "text", n->text);
		if (!block || json_array_insert_new(content, at++, block) < 0)
			break;
		srv->notices = n->next;
		free(n->job_id);
		free(n->text);
		free(n);
	}
}

/* The id a successful background start names: its fixed text ends with it. */
static const char *started_job_id(const dsb_call_result *res)
{
	const char *space = strrchr(res->text, ' ');
	return space ? space + 1 : "";
}

/* Runs the call; its result, or NULL with *@ret_err for a JSON-RPC error. */
static json_t *run(server_call *sc, dsb_error *ret_err)
{
	server *srv = sc->srv;
	json_t *args = json_object_get(sc->params, "arguments");
	server_tool tool = tools_find(json_string_value(json_object_get(sc->params, "name")));
	tool_plan plan;
	_cleanup_free_ char *message = NULL;

	int r = tools_plan(tool, args, &plan, &message);
	if (r < 0) {
		dsb_fail(ret_err, DSB_E_NO_MEMORY, "out of memory");
		return NULL;
	}
	if (r > 0)
		return error_result(srv, DSB_E_INVALID_ARGS, message);
	if (plan.req.tool == _DSB_TOOL_INVALID)
		return run_job_tool(sc, &plan, ret_err);

	_cleanup_free_ char *call_id = call_id_of(sc->id);
	dsb_call *call = NULL;
	if (!call_id || dsb_call_new(&srv->setup, &call, ret_err) < 0) {
		if (!call_id)
			dsb_fail(ret_err, DSB_E_NO_MEMORY, "out of memory");
		return NULL;
	}
	elicit_route(srv, sc, call);
	dsb_call_set_observations(call, srv->observations);
	if (sc->progress)
		dsb_call_set_on_output(call, on_output, sc);

	/* Cancellable from here on; a cancellation that came first applies now. */
	(void)pthread_mutex_lock(&srv->lock);
	sc->call = call;
	if (sc->cancelled)
		dsb_call_cancel(call);
	(void)pthread_mutex_unlock(&srv->lock);

	plan.req.session = srv->session;
	plan.req.call_id = call_id;
	plan.req.network = srv->options->network;
	dsb_call_result res = {0};
	/* A background start is prepared as a call (its approval too), then runs as a job. */
	r = plan.background ? dsb_jobs_start(srv->jobs, call, &plan.req, &res, ret_err)
			    : dsb_call_run(call, &plan.req, &res, ret_err);
	if (r >= 0 && plan.background && !res.is_error)
		(void)snprintf(sc->started, sizeof(sc->started), "%s", started_job_id(&res));

	(void)pthread_mutex_lock(&srv->lock);
	sc->call = NULL;
	bool cancelled = sc->cancelled;
	(void)pthread_mutex_unlock(&srv->lock);
	/* Why nobody decided a refused escalation, for the operator: the model reads DSH's. */
	const char *note = dsb_call_approval_note(call);
	if (note)
		server_call_log(sc, LEVEL_WARNING, "approval: %s", note);
	dsb_call_free(call);
	if (r < 0)
		return NULL;
	if (cancelled) {
		/* No response will carry it: not even the snapshot is taken (and logged). */
		dsb_call_result_done(&res);
		return json_object();
	}
	if (res.is_error && res.error.code == DSB_E_APPROVAL_DEFERRED && sc->input_required) {
		/* Nothing ran or was logged: the person is asked through the client (elicit.c). */
		dsb_call_result_done(&res);
		return TAKE_PTR(sc->input_required);
	}

	json_t *result;
	if (tool == TOOL_READ && !res.is_error) {
		/* DSH's read tool shows a window of the file, not the file. */
		read_view view;
		if (read_render(res.text, res.text_len, res.path, plan.read_offset, plan.read_limit,
				&view) < 0)
			result = NULL;
		else if (view.error)
			result = error_result(srv, DSB_E_INVALID_ARGS, view.error);
		else
			result = tool_result(srv, view.text, strlen(view.text), false, DSB_OK,
					     json_incref(view.value));
		read_view_done(&view);
	} else if (plan.background && !res.is_error) {
		/* DSH's background value. */
		result = tool_result(srv, res.text, res.text_len, false, DSB_OK,
				     json_pack("{s:s, s:s}", "kind", "background", "jobId",
					       started_job_id(&res)));
	} else {
		result = tool_result(srv, res.text ? res.text : "", res.text_len, res.is_error,
				     res.error.code, structured_of(&res));
	}
	dsb_call_result_done(&res);
	if (!result)
		dsb_fail(ret_err, DSB_E_NO_MEMORY, "out of memory");
	return result;
}

static void *call_main(void *userdata)
{
	server_call *sc = userdata;
	server *srv = sc->srv;
	dsb_error err = {0};

	json_t *result = run(sc, &err);

	/* Its diagnostic comes before its response (a 2026 request's log ends with it). */
	if (!result)
		server_call_log(sc, LEVEL_ERROR, "tools/call failed: %s", err.message);

	/* The one answer, unless a cancellation won: then none at all. */
	(void)pthread_mutex_lock(&srv->lock);
	bool answer = !sc->cancelled;
	sc->done = answer;
	/* A question (input_required) is no tool result: the notices wait for one. */
	if (answer && result && json_object_get(result, "content"))
		attach_notices(srv, result);
	(void)pthread_mutex_unlock(&srv->lock);
	/*
	 * A background start that gets no response never tells the model its job's id: the job
	 * is stopped rather than left running unseen.
	 */
	if (!answer && sc->started[0]) {
		dsb_job_reply reply = {0};
		(void)dsb_jobs_kill(srv->jobs, sc->started, &reply, NULL);
		dsb_job_reply_done(&reply);
	}
	if (answer && result && sc->modern)
		result = meta_result(result);
	if (answer && result)
		(void)rpc_write_result(&srv->out, sc->id, result);
	else if (answer)
		(void)rpc_write_error(&srv->out, sc->id, RPC_INTERNAL_ERROR,
				      err.message[0] ? err.message
						     : "Internal error: out of memory");
	else if (result)
		json_decref(result);
	call_leave(sc);
	return NULL;
}

int calls_start(server *srv, json_t *id, json_t *params, const request_meta *meta, json_t *approval)
{
	server_call *sc = calloc(1, sizeof(*sc));
	if (!sc)
		return -ENOMEM;
	*sc = (server_call){
		.srv = srv,
		.id = json_incref(id),
		.params = json_incref(params),
		.modern = meta->modern,
		.elicits = meta->elicits,
		.log_level = meta->log_level,
		.approval = json_incref(approval),
	};
	sc->progress = json_object_get(json_object_get(params, "_meta"), "progressToken");
	if (sc->progress && !json_is_string(sc->progress) && !json_is_integer(sc->progress))
		sc->progress = NULL;

	(void)pthread_mutex_lock(&srv->lock);
	int r = srv->stopping ? -ESHUTDOWN : srv->n_calls >= SERVER_MAX_CALLS ? -EBUSY : 0;
	if (r == 0) {
		sc->next = srv->calls;
		srv->calls = sc;
		srv->n_calls++;
	}
	(void)pthread_mutex_unlock(&srv->lock);
	if (r < 0) {
		call_free(sc);
		return r;
	}

	pthread_attr_t attr;
	pthread_t thread;
	int e = pthread_attr_init(&attr);
	if (e == 0) {
		(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		e = pthread_create(&thread, &attr, call_main, sc);
		(void)pthread_attr_destroy(&attr);
	}
	if (e != 0) {
		call_leave(sc);
		return -e;
	}
	return 0;
}

/* Cancels @sc: its command, its approval, its job_output wait. Under the lock. */
static void cancel_one(server *srv, server_call *sc)
{
	sc->cancelled = true;
	if (sc->call)
		dsb_call_cancel(sc->call);
	dsb_jobs_abort_wait(srv->jobs, &sc->waiter);
}

void calls_cancel(server *srv, const json_t *id)
{
	(void)pthread_mutex_lock(&srv->lock);
	for (server_call *sc = srv->calls; sc; sc = sc->next)
		if (!sc->done && json_equal(sc->id, (json_t *)id))
			cancel_one(srv, sc);
	/* A question the call waits on is over (elicit.c). */
	(void)pthread_cond_broadcast(&srv->changed);
	(void)pthread_mutex_unlock(&srv->lock);
}

size_t calls_finish(server *srv, uint64_t grace_ms, size_t *ret_left)
{
	struct timespec until;
	(void)clock_gettime(CLOCK_REALTIME, &until); /* the condition's clock */
	until.tv_sec += (time_t)(grace_ms / 1000);
	until.tv_nsec += (long)(grace_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	(void)pthread_mutex_lock(&srv->lock);
	size_t running = srv->n_calls;
	while (srv->n_calls > 0 &&
	       pthread_cond_timedwait(&srv->changed, &srv->lock, &until) != ETIMEDOUT)
		;
	*ret_left = srv->n_calls;
	(void)pthread_mutex_unlock(&srv->lock);
	return running - *ret_left;
}

void calls_cancel_all(server *srv)
{
	(void)pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	for (server_call *sc = srv->calls; sc; sc = sc->next)
		if (!sc->done)
			cancel_one(srv, sc);
	(void)pthread_cond_broadcast(&srv->changed);
	/* Each ends within its bash.graceMs: the command's tree is killed by then. */
	while (srv->n_calls > 0)
		(void)pthread_cond_wait(&srv->changed, &srv->lock);
	(void)pthread_cond_broadcast(&srv->changed);
	(void)pthread_mutex_unlock(&srv->lock);
}

/* Sends what progress is due, under the lock (so never after a response). */
static void send_progress(server *srv)
{
	uint64_t now = monotonic_ms();
	for (server_call *sc = srv->calls; sc; sc = sc->next) {
		if (!sc->progress || !sc->pending || sc->done || sc->cancelled ||
		    (sc->sent > 0 && now - sc->last_sent_ms < PROGRESS_INTERVAL_MS))
			continue;
		json_t *message = rpc_string(sc->newest, sc->newest_len);
		json_t *params = message ? json_pack("{s:O, s:I, s:o}", "progressToken",
						     sc->progress, "progress",
						     (json_int_t)sc->sent + 1, "message", message)
					 : NULL;
		if (!params)
			continue;
		(void)rpc_write_notification(&srv->out, "notifications/progress", params);
		sc->sent++;
		sc->last_sent_ms = now;
		sc->pending = false;
	}
}

static void *progress_main(void *userdata)
{
	server *srv = userdata;
	(void)pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		struct timespec until;
		(void)clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		(void)pthread_cond_timedwait(&srv->changed, &srv->lock, &until);
		if (!srv->stopping)
			send_progress(srv);
	}
	(void)pthread_mutex_unlock(&srv->lock);
	return NULL;
}

int calls_start_progress(server *srv)
{
	int e = pthread_create(&srv->progress, NULL, progress_main, srv);
	if (e != 0)
		return -e;
	srv->progress_started = true;
	return 0;
}

void calls_stop_progress(server *srv)
{
	if (!srv->progress_started)
		return;
	(void)pthread_mutex_lock(&srv->lock);
	srv->stopping = true;
	(void)pthread_cond_broadcast(&srv->changed);
	(void)pthread_mutex_unlock(&srv->lock);
	(void)pthread_join(srv->progress, NULL);
	srv->progress_started = false;
}
