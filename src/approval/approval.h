/* SPDX-License-Identifier: MIT */
/*
 * Internals of the approval piece.
 *
 *   escalation.c  WIDER_MODES, validateEscalationArgs, approveEscalation (dsh-compat §8.1-8.2)
 *   answer.c      the external answerer program of approval.answerer (dsh-compat §8.3)
 *   service.c     the approval service: turn enclosure, the audit pair, the policy gate, the
 *                 answerers, the live policy switch (dsh-compat §8.3-8.5)
 *   presets.c     permission presets and the /permission command (dsh-compat §8.6-8.7)
 */
#ifndef DSB_APPROVAL_APPROVAL_H
#define DSB_APPROVAL_APPROVAL_H

#include <dsb/approval.h>

#include "../core/core.h"
#include "../policy/policy.h"

/* --- service.c ------------------------------------------------------------------------------ */

/* The session's effective approval policy: its last approval/policy, else @cfg's. */
int approval_effective_policy(dsb_session *s, const dsb_config *cfg,
			      dsb_approval_policy *ret_policy, dsb_error *reterr);

/*
 * The live switch (dsh-compat §8.5): nothing when @policy is already effective; else appends
 * approval/policy and the user/message notice `The approval policy changed from "A" to "B"
 * (changed by the user).` with source {"kind":"plugin","plugin":"user-approval"}.
 * Returns 1 when it switched, 0 when it was a no-op.
 */
int approval_set_policy(dsb_session *s, const dsb_config *cfg, dsb_approval_policy policy,
			dsb_error *reterr);

/*
 * approval.request() (dsh-compat §8.3): inside an open turn only (else DSB_E_INVALID_ARGS with
 * DSH's text, nothing appended); appends approval/asked, decides (policy never: rejected; else
 * @answer, where NULL, a failure or an off-vocabulary outcome mean unavailable), appends
 * approval/decided, and returns the outcome. Sets req->id and req->session_id for @answer.
 */
int approval_request(dsb_session *s, const dsb_config *cfg, dsb_approval_request *req,
		     dsb_answerer_fn answer, void *userdata, dsb_approval_outcome *ret_outcome,
		     dsb_error *reterr);

/* Whether the session's log sits inside an open turn; *@ret_last_turn: the last turn number. */
int approval_turn_state(dsb_session *s, bool *ret_open, int64_t *ret_last_turn, dsb_error *reterr);

/* --- escalation.c --------------------------------------------------------------------------- */

/* One escalation request (dsh-compat §8.2). Strings borrowed. */
typedef struct dsb_escalation {
	dsb_mode requested;
	const char *justification;
	dsb_mode effective;	    /* the call's standing mode */
	const char *subject;	    /* "command" (bash) or "operation" (fs) */
	const char *tool_name;	    /* "bash", "write", "edit" */
	const char *call_id;	    /* NULL when none */
	const char *subject_text;   /* the command or path, for the person asked */
	uint64_t answer_timeout_ms; /* how long the answerer may take */
	const char *refused;	    /* what the retried call was refused, or NULL */
} dsb_escalation;

/*
 * approveEscalation (dsh-compat §8.2), in order and fail-closed: not strictly wider; no agent (@s
 * NULL); then the approval service. Every refusal is DSB_E_ESCALATION_REFUSED with DSH's text;
 * a grant sets *@ret_granted to the requested mode.
 */
int approval_escalate(dsb_session *s, const dsb_config *cfg, const dsb_escalation *e,
		      dsb_answerer_fn answer, void *userdata, dsb_mode *ret_granted,
		      dsb_error *reterr);

/*
 * Before an escalation is asked of the call's answerer callback: @defer(request, @userdata) may
 * take the question outside the call (dsb_call_set_deferral()). Nothing is logged: a refusal
 * the checks or the `never` policy decide is left to approval_escalate(). 0 when the call goes
 * on to ask; DSB_E_APPROVAL_DEFERRED when @defer took it.
 */
int approval_defer(dsb_session *s, const dsb_config *cfg, const dsb_escalation *e,
		   dsb_deferral_fn defer, void *userdata, dsb_error *reterr);

/* --- answer.c ------------------------------------------------------------------------------- */

/*
 * Asks the external answerer @argv (approval.answerer): @req as one JSON line on its stdin, the
 * outcome word on its stdout. An answer not given within @timeout_ms, or before @cancel_fd (-1:
 * none) polls readable, is cancelled (the program is killed, a late answer discarded). A program
 * that cannot start or exits non-zero returns -1, which the service counts as unavailable. What
 * went wrong (that, a word outside the outcomes, no answer in time) is put in *@ret_why (may be
 * NULL), a new string for the person to read, else NULL.
 */
int approval_answer_command(char *const *argv, const dsb_approval_request *req, uint64_t timeout_ms,
			    int cancel_fd, dsb_approval_outcome *ret_outcome, char **ret_why);

/* --- presets.c ------------------------------------------------------------------------------ */

/*
 * The preset new sessions are pinned to (dsh-compat §8.6): permission.defaultPreset, else the first
 * table entry whose bundle matches the composed defaults (the configured mode and approval
 * policy), else DSB_E_CONFIG_INVALID with `permission: composed sandbox and approval defaults
 * match no preset; configure defaultPreset explicitly`. *@ret points into @cfg.
 */
int presets_default(const dsb_config *cfg, const dsb_preset **ret, dsb_error *reterr);

/* current(events): the derived preset name, "custom" when none matches. New string. */
int presets_current(dsb_session *s, const dsb_config *cfg, char **ret_name, dsb_error *reterr);

/*
 * The /permission command's apply (dsh-compat §8.6 steps 1-4): appends permission/preset when the
 * current preset differs, sandbox/mode when the bundle's mode differs from the effective one,
 * and switches the approval policy through approval_set_policy() (with its notice) when it
 * differs. An unknown name is DSB_E_INVALID_ARGS `unknown preset "X" (available: A, B)` and
 * appends nothing.
 */
int presets_apply(dsb_session *s, const dsb_config *cfg, const char *name, dsb_error *reterr);

/* Pinning at session creation (dsh-compat §8.6): a fresh session gets the three events in order. */
int presets_pin(dsb_session *s, const dsb_config *cfg, dsb_error *reterr);

#endif
