/* SPDX-License-Identifier: MIT */
/*
 * Approvals in the client: an escalation (dsh-compat §8.2) asks the human through MCP elicitation
 * when the client declared it. The question names the tool, the command or path, the mode and
 * the justification, each escaped to one line of what its bytes are (visible_escape()), and the
 * form has one field:
 *
 *   {"decision": "allow" | "deny"}                 ("allow-session" too with
 * approval.sessionGrants)
 *
 * accept + allow is allowed (once); accept + deny, and decline, are rejected; cancel is
 * cancelled; an error answer, or no answer within approval.timeoutMs (else the call's timeout),
 * is unavailable, and the server withdraws its request (notifications/cancelled). A call
 * cancelled while its question is open ends the wait at once. "allow-session" (ours, not DSH's)
 * allows the mode asked for, and every narrower one, for the rest of the server's life: later
 * escalations are allowed without a question. The grant is kept in memory and logged
 * (approval/session-grant), and each call it allows still gets its audit pair.
 *
 * The question goes out from the call's thread and the answer comes in on the reader thread,
 * which hands it over under the server's lock (elicit_response()).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dsb/session.h>

#include "server.h"

/* One request of ours in flight. */
struct server_request {
	server_request *next;
	json_int_t id;
	json_t *response; /* the client's whole answer, once it came */
};

bool elicit_supported(const json_t *capabilities)
{
	/* An empty object is form mode (2025-06-18); 2025-11-25 may list "form" and "url". */
	const json_t *e = json_object_get(capabilities, "elicitation");
	return json_is_object(e) && (json_object_size(e) == 0 || json_object_get(e, "form"));
}

void elicit_response(server *srv, const json_t *id, json_t *message)
{
	if (!json_is_integer(id))
		return;
	(void)pthread_mutex_lock(&srv->lock);
	for (server_request *q = srv->requests; q; q = q->next)
		if (q->id == json_integer_value(id) && !q->response) {
			q->response = json_incref(message);
			(void)pthread_cond_broadcast(&srv->changed);
			break;
		}
	(void)pthread_mutex_unlock(&srv->lock);
}

/* "\nNAME: VALUE", the value escaped (visible_escape()): one line, whatever its bytes. */
static int put_line(strbuf *sb, const char *name, const char *value)
{
	int r = strbuf_printf(sb, "\n%s: ", name);
	return r < 0 ? r
		     : visible_escape_append(sb, value ? value : "", value ? strlen(value) : 0, 0);
}

/*
 * The question, as a person reads it. Its values are the model's and may be hostile: a newline
 * in the justification would forge a "command:" or "mode:" line of ours, a carriage return or a
 * bidi override would hide part of the command. So each value is escaped to one line of what
 * its bytes are, the whole command shown. Only this text changes; the form and what the model
 * sees keep the raw values. A new string, or NULL.
 */
static char *question(const dsb_approval_request *req)
{
	const char *subject = req->subject ? req->subject : "";
	strbuf sb = STRBUF_INIT;
	int r = strbuf_puts(&sb, "The agent asks to run a tool with a wider sandbox.");
	if (r >= 0)
		r = put_line(&sb, "tool", req->tool_name);
	if (r >= 0)
		r = put_line(&sb, subject[0] == '/' ? "path" : "command", subject);
	if (r >= 0)
		r = put_line(&sb, "mode", req->mode);
	if (r >= 0)
		r = put_line(&sb, "justification", req->justification);
	/* What the retried call was refused: what the wider mode is for. */
	for (const char *p = req->refused; r >= 0 && p && *p;) {
		size_t n = strcspn(p, "\n");
		_cleanup_free_ char *line = strndup(p, n);
		r = line ? put_line(&sb, "refused", line) : -ENOMEM;
		p += n + (p[n] == '\n');
	}
	if (r < 0) {
		strbuf_done(&sb);
		return NULL;
	}
	return strbuf_take(&sb);
}

static json_t *form(bool session_grants)
{
	json_t *choices = session_grants ? json_pack("[s,s,s]", "allow", "allow-session", "deny")
					 : json_pack("[s,s]", "allow", "deny");
	const char *description =
		session_grants ? "allow: this call only; allow-session: this mode for the rest of "
				 "the session; deny: refuse it"
			       : "allow: this call only; deny: refuse it";
	return json_pack("{s:s, s:{s:{s:s, s:s, s:s, s:o}}, s:[s]}", "type", "object", "properties",
			 "decision", "type", "string", "title", "Decision", "description",
			 description, "enum", choices, "required", "decision");
}

/* Whether the session's grant covers @wanted: the mode granted, or one narrower. */
static bool covered(dsb_mode granted, dsb_mode wanted)
{
	return granted != _DSB_MODE_INVALID && wanted != _DSB_MODE_INVALID &&
	       (wanted == granted || dsb_escalation_is_wider(wanted, granted));
}

/* Logs a session grant as an event of ours (DSH's readers skip types they do not know). */
static void log_grant(server *srv, const dsb_approval_request *req)
{
	dsb_store *store = NULL;
	dsb_session *s = NULL;
	dsb_error err = {0};
	json_t *data = json_pack("{s:s, s:s, s:s?}", "mode", req->mode, "tool",
				 req->tool_name ? req->tool_name : "", "auditId", req->id);
	char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
	int r = text ? 0 : -ENOMEM;
	if (r >= 0)
		r = dsb_store_open(srv->setup.store_path, &store, &err);
	if (r >= 0)
		r = dsb_session_open(store, srv->session, &s, &err);
	if (r >= 0)
		r = dsb_session_append(s, "approval/session-grant", text, NULL, &err);
	if (r < 0)
		server_log(srv, LEVEL_WARNING, "logging the session grant: %s",
			   err.message[0] ? err.message : "out of memory");
	dsb_session_free(s);
	dsb_store_free(store);
	free(text);
	json_decref(data);
}

/* Waits for @q's answer until @deadline_ms (monotonic), the call's cancellation, or shutdown. */
static json_t *await(server *srv, server_call *sc, server_request *q, uint64_t deadline_ms)
{
	for (;;) {
		if (q->response || sc->cancelled || srv->stopping)
			break;
		uint64_t now = monotonic_ms();
		if (now >= deadline_ms)
			break;
		/* The condition variable runs on CLOCK_REALTIME: wait a slice, then look again. */
		uint64_t slice = deadline_ms - now < 1000 ? deadline_ms - now : 1000;
		struct timespec until;
		(void)clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += (time_t)(slice / 1000);
		until.tv_nsec += (long)(slice % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&srv->changed, &srv->lock, &until);
	}
	for (server_request **p = &srv->requests; *p; p = &(*p)->next)
		if (*p == q) {
			*p = q->next;
			break;
		}
	return q->response;
}

/* What the client answered (an ElicitResult; NULL for none), as an outcome. */
static dsb_approval_outcome outcome_of(const json_t *result, bool session_grants, bool *ret_session)
{
	*ret_session = false;
	const char *action = json_string_value(json_object_get(result, "action"));
	if (!action)
		return DSB_OUTCOME_UNAVAILABLE; /* an error, or no result at all */
	if (strcmp(action, "decline") == 0)
		return DSB_OUTCOME_REJECTED;
	if (strcmp(action, "cancel") == 0)
		return DSB_OUTCOME_CANCELLED;
	if (strcmp(action, "accept") != 0)
		return DSB_OUTCOME_UNAVAILABLE;
	const char *decision =
		json_string_value(json_object_get(json_object_get(result, "content"), "decision"));
	if (!decision)
		return DSB_OUTCOME_UNAVAILABLE;
	if (strcmp(decision, "allow") == 0)
		return DSB_OUTCOME_ALLOWED_ONCE;
	if (session_grants && strcmp(decision, "allow-session") == 0) {
		*ret_session = true;
		return DSB_OUTCOME_ALLOWED_ONCE;
	}
	if (strcmp(decision, "deny") == 0)
		return DSB_OUTCOME_REJECTED;
	return DSB_OUTCOME_UNAVAILABLE;
}

/* The deployment's approval settings, as the call itself read them. -1 when they cannot be. */
static int settings(server_call *sc, const dsb_approval_request *req, bool *ret_session_grants,
		    uint64_t *ret_timeout_ms)
{
	dsb_config *cfg = NULL;
	dsb_error err = {0};
	if (dsb_call_load_config(&sc->srv->setup, &cfg, &err) < 0) {
		server_call_log(sc, LEVEL_ERROR, "approval: %s", err.message);
		return -1;
	}
	*ret_session_grants = dsb_config_session_grants(cfg);
	*ret_timeout_ms = dsb_config_approval_timeout_ms(cfg);
	dsb_config_free(cfg);
	if (!*ret_timeout_ms)
		*ret_timeout_ms = req->timeout_ms;
	return 0;
}

/* Whether this server's session grant already allows @req: then nobody is asked. */
static bool granted(server_call *sc, const dsb_approval_request *req)
{
	dsb_mode wanted = req->mode ? dsb_mode_from_string(req->mode) : _DSB_MODE_INVALID;
	(void)pthread_mutex_lock(&sc->srv->lock);
	bool yes = covered(sc->srv->granted, wanted);
	(void)pthread_mutex_unlock(&sc->srv->lock);
	if (yes)
		server_call_log(sc, LEVEL_INFO, "%s to %s: allowed for this session",
				req->tool_name, req->mode);
	return yes;
}

/*
 * The elicitation/create params of the question: its text and the one-field form; with @mode,
 * "mode": "form" too (2025-06-18 had no modes: a 2025 client is asked as it always was).
 */
static json_t *question_params(const dsb_approval_request *req, bool session_grants, bool mode)
{
	_cleanup_free_ char *message = question(req);
	json_t *params = message ? json_pack("{s:s, s:o}", "message", message, "requestedSchema",
					     form(session_grants))
				 : NULL;
	if (params && mode && json_object_set_new(params, "mode", json_string("form")) < 0) {
		json_decref(params);
		return NULL;
	}
	return params;
}

/* An answer counted: an allow-session keeps its grant (and logs it). */
static dsb_approval_outcome count(server_call *sc, const dsb_approval_request *req,
				  const json_t *result, bool session_grants)
{
	bool for_session = false;
	dsb_approval_outcome outcome = outcome_of(result, session_grants, &for_session);
	if (for_session) {
		dsb_mode wanted = dsb_mode_from_string(req->mode);
		(void)pthread_mutex_lock(&sc->srv->lock);
		if (!covered(sc->srv->granted, wanted))
			sc->srv->granted = wanted;
		(void)pthread_mutex_unlock(&sc->srv->lock);
		log_grant(sc->srv, req);
	}
	return outcome;
}

/*
 * 2026-07-28 (MRTR): the first round of a call that escalates ends with the question as an
 * input_required result, nothing logged or run; its requestState is good for the retry of this
 * very call (state.c).
 */
static bool defer(const dsb_approval_request *req, void *userdata)
{
	server_call *sc = userdata;
	bool session_grants;
	uint64_t timeout_ms;
	if (settings(sc, req, &session_grants, &timeout_ms) < 0 || granted(sc, req))
		return false;
	char state[STATE_HANDLE_MAX];
	const char *tool = json_string_value(json_object_get(sc->params, "name"));
	json_t *params = question_params(req, session_grants, true);
	if (!params || state_issue(sc->srv, tool, json_object_get(sc->params, "arguments"),
				   timeout_ms, state) < 0) {
		json_decref(params);
		server_call_log(sc, LEVEL_ERROR, "approval: cannot ask through input_required");
		return false;
	}
	sc->input_required =
		json_pack("{s:s, s:{s:{s:s, s:o}}, s:s}", "resultType", "input_required",
			  "inputRequests", "approval", "method", "elicitation/create", "params",
			  params, "requestState", state);
	return sc->input_required != NULL;
}

/* 2026-07-28: the retry's answer (inputResponses.approval), counted at once. */
static int answer_retry(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
{
	server_call *sc = userdata;
	bool session_grants;
	uint64_t timeout_ms;
	*ret = DSB_OUTCOME_UNAVAILABLE;
	if (granted(sc, req))
		*ret = DSB_OUTCOME_ALLOWED_ONCE;
	else if (settings(sc, req, &session_grants, &timeout_ms) >= 0)
		*ret = count(sc, req, sc->approval, session_grants);
	return 0;
}

int elicit_answer(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
{
	server_call *sc = userdata;
	server *srv = sc->srv;
	bool session_grants;
	uint64_t timeout_ms;
	*ret = DSB_OUTCOME_UNAVAILABLE;
	if (settings(sc, req, &session_grants, &timeout_ms) < 0)
		return 0;
	if (granted(sc, req)) {
		*ret = DSB_OUTCOME_ALLOWED_ONCE;
		return 0;
	}
	json_t *params = question_params(req, session_grants, false);
	if (!params)
		return -ENOMEM;

	server_request q = {0};
	(void)pthread_mutex_lock(&srv->lock);
	if (sc->cancelled || srv->stopping) {
		(void)pthread_mutex_unlock(&srv->lock);
		json_decref(params);
		*ret = DSB_OUTCOME_CANCELLED;
		return 0;
	}
	q.id = ++srv->last_request_id;
	q.next = srv->requests;
	srv->requests = &q;
	(void)pthread_mutex_unlock(&srv->lock);

	json_t *request = json_pack("{s:s, s:I, s:s, s:o}", "jsonrpc", "2.0", "id", q.id, "method",
				    "elicitation/create", "params", params);
	int r = request ? rpc_write(&srv->out, request) : -ENOMEM;
	json_decref(request);

	uint64_t now = monotonic_ms();
	uint64_t deadline = timeout_ms > UINT64_MAX - now ? UINT64_MAX : now + timeout_ms;
	(void)pthread_mutex_lock(&srv->lock);
	json_t *response = await(srv, sc, &q, r < 0 ? now : deadline);
	bool cancelled = sc->cancelled || srv->stopping;
	(void)pthread_mutex_unlock(&srv->lock);

	if (!response) {
		/* Withdrawn: the person's dialog may close (MCP cancellation works both ways). */
		json_t *withdraw =
			json_pack("{s:I, s:s}", "requestId", q.id, "reason",
				  cancelled ? "the tool call was cancelled" : "no answer in time");
		if (withdraw)
			(void)rpc_write_notification(&srv->out, "notifications/cancelled",
						     withdraw);
		*ret = cancelled ? DSB_OUTCOME_CANCELLED : DSB_OUTCOME_UNAVAILABLE;
		return 0;
	}
	*ret = count(sc, req, json_object_get(response, "result"), session_grants);
	json_decref(response);
	return 0;
}

void elicit_route(server *srv, server_call *sc, dsb_call *call)
{
	if (!sc->modern) {
		if (srv->client_elicits)
			dsb_call_set_answerer(call, elicit_answer, sc);
	} else if (sc->approval) {
		/* A retry carries the answer: it is counted, never asked again. */
		dsb_call_set_answerer(call, answer_retry, sc);
	} else if (sc->elicits) {
		/* Asked through input_required; answer_retry() only counts a session grant. */
		dsb_call_set_deferral(call, defer, sc);
		dsb_call_set_answerer(call, answer_retry, sc);
	}
}
