/* SPDX-License-Identifier: MIT */
/*
 * One-shot escalation (dsh-compat §8.1-8.2): a call may ask, once, for a mode strictly wider than
 * its own, with a justification. The checks run in DSH's order and fail closed before anything
 * runs; a grant is the requested mode for this call only, and only the audit pair is written.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "approval.h"

bool dsb_escalation_is_wider(dsb_mode effective, dsb_mode requested)
{
	/* WIDER_MODES: read-only → both; workspace-write → full access; nothing is wider than it.
	 */
	switch (effective) {
	case DSB_MODE_READ_ONLY:
		return requested == DSB_MODE_WORKSPACE_WRITE ||
		       requested == DSB_MODE_DANGER_FULL_ACCESS;
	case DSB_MODE_WORKSPACE_WRITE:
		return requested == DSB_MODE_DANGER_FULL_ACCESS;
	case DSB_MODE_DANGER_FULL_ACCESS:
	case _DSB_MODE_MAX:
	case _DSB_MODE_INVALID:
		break;
	}
	return false;
}

int dsb_escalation_validate(const char *perm, const char *just, dsb_error *reterr)
{
	/* The schema's enum first: ESCALATION_TARGETS, read-only being the floor. */
	if (perm && strcmp(perm, "workspace-write") != 0 && strcmp(perm, "danger-full-access") != 0)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"invalid arguments: \"sandbox_permissions\" must be one of "
				"[\"workspace-write\",\"danger-full-access\"]");
	if (perm && !just)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"invalid escalation: sandbox_permissions requires a justification");
	if (just && !perm)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"invalid escalation: justification is only valid together with "
				"sandbox_permissions");
	if (just && js_blank(just))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"invalid justification: expected a non-empty sentence");
	return 0;
}

/* The two checks before anyone is asked: strictly wider, and an agent to route it through. */
static int check_escalation(dsb_session *s, const dsb_escalation *e, dsb_error *reterr)
{
	const char *want = dsb_mode_to_string(e->requested);
	const char *have = dsb_mode_to_string(e->effective);
	if (!dsb_escalation_is_wider(e->effective, e->requested))
		return dsb_fail(
			reterr, DSB_E_ESCALATION_REFUSED,
			"sandbox escalation to \"%s\" is not strictly wider than this call's "
			"current \"%s\" mode",
			want ? want : "", have ? have : "");
	/* Our executor always composes an approval service; an agentless call has no route. */
	if (!s)
		return dsb_fail(
			reterr, DSB_E_ESCALATION_REFUSED,
			"sandbox escalation to \"%s\" requires approval, but the call has no "
			"agent to route it through",
			want);
	return 0;
}

/* What the answerer is shown of @e; *@ret_reason is the new string it borrows. */
static int request_of(const dsb_escalation *e, char **ret_reason, dsb_approval_request *ret)
{
	const char *want = dsb_mode_to_string(e->requested);
	if (asprintf(ret_reason, "escalate sandbox to %s: %s", want, e->justification) < 0)
		return -ENOMEM;
	*ret = (dsb_approval_request){
		.tool_name = e->tool_name,
		.call_id = e->call_id,
		.reason = *ret_reason,
		.subject = e->subject_text,
		.timeout_ms = e->answer_timeout_ms,
		.mode = want,
		.justification = e->justification,
		.refused = e->refused,
	};
	return 0;
}

int approval_defer(dsb_session *s, const dsb_config *cfg, const dsb_escalation *e,
		   dsb_deferral_fn defer, void *userdata, dsb_error *reterr)
{
	/* A refusal the checks or the policy decide is the call's own, made and logged as ever. */
	if (check_escalation(s, e, NULL) < 0)
		return 0;
	dsb_approval_policy policy;
	int r = approval_effective_policy(s, cfg, &policy, reterr);
	if (r < 0 || policy == DSB_APPROVAL_NEVER)
		return r;
	_cleanup_free_ char *reason = NULL;
	dsb_approval_request req;
	if (request_of(e, &reason, &req) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	req.session_id = dsb_session_id(s);
	if (!defer(&req, userdata))
		return 0;
	return dsb_fail(reterr, DSB_E_APPROVAL_DEFERRED,
			"sandbox escalation to \"%s\" awaits an approval asked outside the call",
			req.mode);
}

int approval_escalate(dsb_session *s, const dsb_config *cfg, const dsb_escalation *e,
		      dsb_answerer_fn answer, void *userdata, dsb_mode *ret_granted,
		      dsb_error *reterr)
{
	const char *want = dsb_mode_to_string(e->requested);
	int r = check_escalation(s, e, reterr);
	if (r < 0)
		return r;
	_cleanup_free_ char *reason = NULL;
	dsb_approval_request req;
	if (request_of(e, &reason, &req) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	dsb_approval_outcome outcome;
	r = approval_request(s, cfg, &req, answer, userdata, &outcome, reterr);
	if (r < 0)
		return r;

	switch (outcome) {
	case DSB_OUTCOME_ALLOWED_ONCE:
		*ret_granted = e->requested;
		return 0;
	case DSB_OUTCOME_REJECTED:
		return dsb_fail(reterr, DSB_E_ESCALATION_REFUSED,
				"the user rejected escalating this %s to \"%s\"", e->subject, want);
	case DSB_OUTCOME_CANCELLED:
		return dsb_fail(reterr, DSB_E_ESCALATION_REFUSED,
				"approval for escalating to \"%s\" was cancelled", want);
	case DSB_OUTCOME_UNAVAILABLE:
	case _DSB_OUTCOME_MAX:
	case _DSB_OUTCOME_INVALID:
		break;
	}
	return dsb_fail(
		reterr, DSB_E_ESCALATION_REFUSED,
		"sandbox escalation to \"%s\" requires approval, but no approval channel is "
		"available",
		want);
}
