/* SPDX-License-Identifier: MIT */
/*
 * The approval piece (dsh-compat §8): one-shot escalations a person approves, the approval service
 * with its audit pair, the approval-policy switch, and permission presets.
 *
 * An escalation is checked (strictly wider than the call's mode), then asked of the session's
 * approval service, which appends approval/asked, decides (policy never: rejected; else the
 * answerer: an external command, the controlling terminal, or none: unavailable) and appends
 * approval/decided, all before anything runs. A grant applies to that one call; only the audit
 * pair is persisted.
 */
#ifndef DSB_APPROVAL_H
#define DSB_APPROVAL_H

#include <stdbool.h>
#include <stdint.h>

#include <dsb/error.h>
#include <dsb/policy.h>
#include <dsb/session.h>

typedef enum dsb_approval_outcome {
	DSB_OUTCOME_ALLOWED_ONCE,
	DSB_OUTCOME_REJECTED,
	DSB_OUTCOME_CANCELLED,
	DSB_OUTCOME_UNAVAILABLE,
	_DSB_OUTCOME_MAX,
	_DSB_OUTCOME_INVALID = -1,
} dsb_approval_outcome;

/* "allowed-once", "rejected", "cancelled", "unavailable". */
DSB_API const char *dsb_approval_outcome_to_string(dsb_approval_outcome o);
DSB_API dsb_approval_outcome dsb_approval_outcome_from_string(const char *s);

/*
 * validateEscalationArgs (dsh-compat §8.1): NULL means absent. DSB_E_INVALID_ARGS with the first of
 * DSH's three texts that applies; a requested mode outside the two targets is refused too.
 */
DSB_API int dsb_escalation_validate(const char *sandbox_permissions, const char *justification,
				    dsb_error *reterr);

/* WIDER_MODES (dsh-compat §8.1): whether @requested is strictly wider than @effective. */
DSB_API bool dsb_escalation_is_wider(dsb_mode effective, dsb_mode requested);

/* What an answerer is shown and decides on. Strings borrowed. Made by the library only. */
typedef struct dsb_approval_request {
	const char *id;	       /* the audit id (set by the service) */
	const char *tool_name; /* "bash", "write", ... */
	const char *call_id;   /* NULL when none */
	const char *reason;    /* "escalate sandbox to MODE: JUSTIFICATION" */
	const char *subject;   /* what would run or change: the command or path (for people) */
	const char *session_id;
	/* How long the answer may take (the call's timeout); then it counts as cancelled. */
	uint64_t timeout_ms;
	const char *mode; /* the mode asked for: "workspace-write" or "danger-full-access" */
	const char *justification; /* the model's, as given (also inside @reason) */
	/*
	 * What the sandbox refused in the call this one retries (the session's last call of the
	 * same tool and command, from its evidence), as the model read it: one "[sandbox: ...]"
	 * line each, newline-separated; NULL when nothing is known. The paths are the command's
	 * and may be hostile: a front end escapes them as it does @subject.
	 */
	const char *refused;
} dsb_approval_request;

/*
 * An answerer: fills *@ret_outcome. A return < 0 is a throwing answerer, which the service
 * turns into unavailable; so is an outcome outside the vocabulary.
 */
typedef int (*dsb_answerer_fn)(const dsb_approval_request *req, void *userdata,
			       dsb_approval_outcome *ret_outcome);

/*
 * A deferral (dsb_call_set_deferral()): whether the question @req is taken outside the call, to
 * be asked in the caller's own way (an MCP input_required result) before the call is made
 * again. @req->id is NULL: no audit pair exists yet.
 */
typedef bool (*dsb_deferral_fn)(const dsb_approval_request *req, void *userdata);

#endif
