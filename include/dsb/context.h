/* SPDX-License-Identifier: MIT */
/*
 * The context piece: the runtime-context statements of dsh-compat §9 and the cache-safe snapshot
 * that carries them to the model. The policy in force is stated in three contexts,
 * sandbox:policy (order 110), approval:policy (115) and, for delegated sessions only,
 * subagent:delegation (120); they are joined into one text and appended to the session as an
 * owned user/message ("snapshot") only when that text differs from the snapshot the model can
 * still see, so the provider's prompt cache survives every step where nothing changed.
 *
 * Lifecycle: once per model step, dsb_context_project() a session; when it returns a message,
 * hand its text to the model and dsb_context_message_append() it to the log (the append is what
 * makes the next step's projection return nothing); dsb_context_message_free() it. No state is
 * kept between calls: every projection re-reads the log, so separate processes (a harness that
 * runs `dsh-sandbox context` per step) behave as DSH does after a restart.
 *
 * Thread-safety: the functions here share nothing; one dsb_session per thread, as ever.
 */
#ifndef DSB_CONTEXT_H
#define DSB_CONTEXT_H

#include <stdint.h>

#include <dsb/error.h>
#include <dsb/policy.h>
#include <dsb/session.h>

/* The plugin that owns snapshot messages (their source.plugin). */
#define DSB_CONTEXT_SOURCE "@deepseek-ai/dsh-system-prompt"

/* The text of the snapshot that withdraws every earlier one (dsh-compat §9.3, EXACT). */
#define DSB_CONTEXT_CLEARED \
	"Current runtime context: none. Earlier runtime-context snapshots no longer apply."

/* The line that opens a non-empty snapshot (dsh-compat §9.2, EXACT); the contexts follow it. */
#define DSB_CONTEXT_HEADER \
	"Current runtime context. This snapshot supersedes earlier runtime-context snapshots."

/*
 * The sandbox:policy text of dsh-compat §9.4 for @mode. Under workspace-write it names
 * @workspace_root as JSON.stringify() spells it (quotes, escapes; bytes that are not UTF-8 read
 * as U+FFFD); the other modes ignore it (NULL is fine there). Nothing else enters the text: not
 * TMPDIR, not the tools that exist. Borrows @workspace_root; *@ret_text is a new string (free
 * with free()). DSB_E_INVALID_ARGS for a mode outside the three or a missing root.
 */
DSB_API int dsb_context_render_sandbox(dsb_mode mode, const char *workspace_root, char **ret_text,
				       dsb_error *reterr);

/* The approval:policy text of dsh-compat §8.4 for @policy (static), or NULL outside the enum. */
DSB_API const char *dsb_context_approval_text(dsb_approval_policy policy);

/* The subagent:delegation text of dsh-compat §8.9 (static). */
DSB_API const char *dsb_context_delegation_text(void);

/* A snapshot message the projection asks to append. Opaque; owned by the caller. */
typedef struct dsb_context_message dsb_context_message;

/*
 * One pre-step projection (dsh-compat §9.2-9.3) for @session. The contexts are evaluated now:
 * sandbox:policy from dsb_session_resolve() under @policy (the session's mode fold, else the
 * default; the header cwd canonicalised, else the configured root), approval:policy from the
 * session's approval/policy fold, else @cfg's approval.policy, and subagent:delegation when the
 * header says the session is delegated (origin "subagent" or delegationDepth > 0). They are
 * ordered, interpolated ({{cwd}} is the header cwd), stripped of empty texts and joined.
 *
 * The snapshot the model can still see is rebuilt from the log: the newest owned user/message
 * on the current surface (surfaceOp append/replace folded), not cited by the sourceEventSeqs of
 * a later replacement. Returns 1 with *@ret_message when DSH would append one now (the first
 * context, a changed text, a snapshot compacted away, a malformed one, or the CLEARED message
 * once the contexts are gone); 0 with *@ret_message = NULL when it would append nothing.
 * A corrupt log is DSB_E_SESSION_INVALID, an unknown mode or policy DSB_E_INVARIANT.
 * Borrows everything; *@ret_message is new (free with dsb_context_message_free()).
 */
DSB_API int dsb_context_project(dsb_session *session, const dsb_policy *policy,
				const dsb_config *cfg, dsb_context_message **ret_message,
				dsb_error *reterr);

/* The model-facing text of @message (the snapshot, or DSB_CONTEXT_CLEARED). Owned by it. */
DSB_API const char *dsb_context_message_text(const dsb_context_message *message);

/*
 * The message as DSH logs it, the user/message's data, byte for byte as JSON.stringify() writes
 * it: {"content":[{"type":"text","text":T}],"source":{"kind":"plugin","plugin":SOURCE,
 * "form":"snapshot","sections":[{"name":N,"text":X},...]},"role":"user","id":UUID}, where the
 * CLEARED message's source is just {"kind":"plugin","plugin":SOURCE}. Owned by @message.
 */
DSB_API const char *dsb_context_message_json(const dsb_context_message *message);

/*
 * Appends @message to @session as {"type":"user/message",...,"data":JSON,"surfaceOp":"append"}
 * (one locked write, see dsb_session_append()). *@ret_seq (may be NULL) is its seq. Borrows both.
 */
DSB_API int dsb_context_message_append(dsb_session *session, const dsb_context_message *message,
				       uint64_t *ret_seq, dsb_error *reterr);

/*
 * dsb_context_project() and, when it returns a message, dsb_context_message_append() of it, both
 * inside the append's locked section: the projection reads the log no other writer can change
 * before the message is written, so N concurrent callers on one session append at most one
 * identical snapshot (the later ones see it and decide nothing). Returns 1 with *@ret_message
 * (the message appended, at *@ret_seq; may be NULL) or 0 with *@ret_message = NULL when nothing
 * was needed. Errors as dsb_context_project() and the append; on one nothing is appended.
 */
DSB_API int dsb_context_project_append(dsb_session *session, const dsb_policy *policy,
				       const dsb_config *cfg, dsb_context_message **ret_message,
				       uint64_t *ret_seq, dsb_error *reterr);

/* Frees @message (NULL is fine). Returns NULL. */
DSB_API dsb_context_message *dsb_context_message_free(dsb_context_message *message);

#endif
