/* SPDX-License-Identifier: MIT */
/*
 * The approval service (dsh-compat §8.3-8.5): every request is audited in the session's log as an
 * approval/asked + approval/decided pair inside an open turn. The policy gate decides first:
 * under `never` the service itself rejects, so no answerer can bypass it; otherwise the
 * answerer decides, and a missing, failing or off-vocabulary answerer is `unavailable`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../session/session.h"
#include "approval.h"

static const char *const outcome_names[_DSB_OUTCOME_MAX] = {
	[DSB_OUTCOME_ALLOWED_ONCE] = "allowed-once",
	[DSB_OUTCOME_REJECTED] = "rejected",
	[DSB_OUTCOME_CANCELLED] = "cancelled",
	[DSB_OUTCOME_UNAVAILABLE] = "unavailable",
};

const char *dsb_approval_outcome_to_string(dsb_approval_outcome o)
{
	return o >= 0 && o < _DSB_OUTCOME_MAX ? outcome_names[o] : NULL;
}

dsb_approval_outcome dsb_approval_outcome_from_string(const char *s)
{
	for (int i = 0; s && i < _DSB_OUTCOME_MAX; i++)
		if (strcmp(outcome_names[i], s) == 0)
			return (dsb_approval_outcome)i;
	return _DSB_OUTCOME_INVALID;
}

int approval_effective_policy(dsb_session *s, const dsb_config *cfg,
			      dsb_approval_policy *ret_policy, dsb_error *reterr)
{
	/* fold ?? config ?? ask (dsh-compat §3.4); the config's own default is ask. */
	int r = dsb_session_fold_approval(s, ret_policy, reterr);
	if (r == 0)
		*ret_policy = cfg->approval_policy;
	return r < 0 ? r : 0;
}

int approval_set_policy(dsb_session *s, const dsb_config *cfg, dsb_approval_policy policy,
			dsb_error *reterr)
{
	dsb_approval_policy previous;
	int r = approval_effective_policy(s, cfg, &previous, reterr);
	if (r < 0)
		return r;
	if (previous == policy)
		return 0;
	r = dsb_session_set_approval(s, dsb_approval_policy_to_string(policy), reterr);
	if (r < 0)
		return r;

	/* The notice the model reads at its next step (a createUserMessage, key order §3.3). */
	char id[UUID_STRING_MAX], text[160];
	r = uuid_random(id);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "cannot draw random bytes");
	(void)snprintf(text, sizeof(text),
		       "The approval policy changed from \"%s\" to \"%s\" (changed by the user).",
		       dsb_approval_policy_to_string(previous),
		       dsb_approval_policy_to_string(policy));
	_cleanup_free_ char *notice = NULL;
	jw w = JW_INIT;
	session_message_begin(&w, text, "user-approval");
	session_message_end(&w, id);
	if (jw_take(&w, &notice) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	r = session_append_extra(s, "user/message", notice, ",\"surfaceOp\":\"append\"", NULL,
				 reterr);
	return r < 0 ? r : 1;
}

int approval_turn_state(dsb_session *s, bool *ret_open, int64_t *ret_last_turn, dsb_error *reterr)
{
	static const char *const turns[] = {"turn/start", "turn/end"};
	_cleanup_(json_decrefp) json_t *rec = NULL;
	size_t which = 0;
	int r = session_find_last(s, turns, ELEMENTSOF(turns), &which, &rec, reterr);
	if (r < 0)
		return r;
	json_t *turn = rec ? json_object_get(json_object_get(rec, "data"), "turn") : NULL;
	*ret_open = r > 0 && which == 0;
	*ret_last_turn = json_is_integer(turn) ? json_integer_value(turn) : 0;
	return 0;
}

/* Appends {"id":..,"toolName":..,"callId":..,"reason":..}, absent optionals omitted (§3.2). */
static int append_asked(dsb_session *s, const dsb_approval_request *req, dsb_error *reterr)
{
	_cleanup_free_ char *data = NULL;
	jw w = JW_INIT;
	jw_object_begin(&w);
	jw_member_string(&w, "id", req->id);
	jw_member_string(&w, "toolName", req->tool_name);
	if (req->call_id)
		jw_member_string(&w, "callId", req->call_id);
	if (req->reason)
		jw_member_string(&w, "reason", req->reason);
	jw_object_end(&w);
	if (jw_take(&w, &data) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return dsb_session_append(s, "approval/asked", data, NULL, reterr);
}

int approval_request(dsb_session *s, const dsb_config *cfg, dsb_approval_request *req,
		     dsb_answerer_fn answer, void *userdata, dsb_approval_outcome *ret_outcome,
		     dsb_error *reterr)
{
	bool open;
	int64_t last;
	int r = approval_turn_state(s, &open, &last, reterr);
	if (r < 0)
		return r;
	if (!open)
		return dsb_fail(
			reterr, DSB_E_INVALID_ARGS,
			"approval.request() outside an open turn: the approval/asked + "
			"approval/decided audit pair must be turn-enclosed (a bare event "
			"between turns is crash-tail garbage on reload). Ask from inside the "
			"turn that needs the decision.");

	char id[UUID_STRING_MAX];
	r = uuid_random(id);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "cannot draw random bytes");
	req->id = id;
	req->session_id = dsb_session_id(s);
	r = append_asked(s, req, reterr);
	if (r < 0)
		return r;

	/* The gate decides first: under `never` no answerer is asked at all. */
	dsb_approval_policy policy;
	dsb_approval_outcome outcome = DSB_OUTCOME_UNAVAILABLE;
	r = approval_effective_policy(s, cfg, &policy, reterr);
	if (r < 0)
		return r;
	if (policy == DSB_APPROVAL_NEVER)
		outcome = DSB_OUTCOME_REJECTED;
	else if (answer && (answer(req, userdata, &outcome) < 0 || outcome < 0 ||
			    outcome >= _DSB_OUTCOME_MAX))
		outcome = DSB_OUTCOME_UNAVAILABLE;

	_cleanup_free_ char *data = NULL;
	jw w = JW_INIT;
	jw_object_begin(&w);
	jw_member_string(&w, "id", id);
	jw_member_string(&w, "outcome", outcome_names[outcome]);
	jw_object_end(&w);
	r = jw_take(&w, &data) < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory")
				   : dsb_session_append(s, "approval/decided", data, NULL, reterr);
	req->id = NULL;
	if (r < 0)
		return r;
	*ret_outcome = outcome;
	return 0;
}
