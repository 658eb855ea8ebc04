/* SPDX-License-Identifier: MIT */
/*
 * Internals of the context piece (dsh-compat §9).
 *
 *   texts.c     the three model-facing statements (§9.4, §8.4, §8.9)
 *   assemble.c  an assembly of named, ordered contexts: registration, the stable order sort,
 *               strict {{variable}} interpolation, dropping empty texts, the join (§9.2)
 *   snapshot.c  the retained snapshot rebuilt from a log, project() and the owned message
 *               (§9.3), and the session-level step that ties them to the policy in force
 */
#ifndef DSB_CONTEXT_CONTEXT_H
#define DSB_CONTEXT_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <dsb/context.h>

#include "../core/core.h"
#include "../session/session.h"

#define CONTEXT_SANDBOX_POLICY	    "sandbox:policy"
#define CONTEXT_APPROVAL_POLICY	    "approval:policy"
#define CONTEXT_SUBAGENT_DELEGATION "subagent:delegation"

#define CONTEXT_ORDER_SANDBOX	 110
#define CONTEXT_ORDER_APPROVAL	 115
#define CONTEXT_ORDER_DELEGATION 120

/* --- assemble.c --------------------------------------------------------------------------- */

/* One registered context: its name, order and text (already evaluated for this assembly). */
typedef struct context_entry {
	char *name;
	double order;
	char *text;
} context_entry;

/* One prompt variable: registered by name; a NULL value has none for this assembly. */
typedef struct context_variable {
	char *name;
	char *value;
} context_variable;

/* The contexts and variables of one assembly, in registration order. Init with {0}. */
typedef struct context_assembly {
	context_entry *entries;
	size_t n_entries;
	context_variable *variables;
	size_t n_variables;
} context_assembly;

void context_assembly_done(context_assembly *a);

/*
 * systemPrompt.context(): registers @name at @order with @text (copied). A name registered
 * twice is DSB_E_INVALID_ARGS `prompt context "NAME" is already registered (...)`, a
 * non-finite order `prompt context "NAME" order must be a finite number`; @a is then unchanged.
 */
int context_assembly_add(context_assembly *a, const char *name, double order, const char *text,
			 dsb_error *reterr);

/*
 * systemPrompt.variable(): registers @name ([a-z][a-z0-9_]*) with @value (copied; NULL: no
 * value in this assembly). DSB_E_INVALID_ARGS for an invalid or repeated name.
 */
int context_assembly_set_variable(context_assembly *a, const char *name, const char *value,
				  dsb_error *reterr);

/* One rendered context (ContextSnapshotSection). */
typedef struct context_section {
	char *name;
	char *text;
} context_section;

typedef struct context_sections {
	context_section *items;
	size_t n;
} context_sections;

void context_sections_done(context_sections *s);

/*
 * renderContextSections(): the contexts sorted by order (stable: ties keep registration order),
 * each text interpolated strictly, the empty ones dropped. An interpolation failure is
 * DSB_E_INVALID_ARGS with DSH's text naming the context. Fills *@ret (release with
 * context_sections_done()).
 */
int context_render_sections(const context_assembly *a, context_sections *ret, dsb_error *reterr);

/*
 * joinContextSections(): "" for no sections, else DSB_CONTEXT_HEADER, a blank line and the
 * texts joined by blank lines. *@ret_text is a new string. -ENOMEM.
 */
int context_join(const context_sections *s, char **ret_text);

/*
 * Strict {{name}} interpolation of @text (DSH's interpolate()) against @a's variables; @owner
 * names the context in messages. *@ret_text is a new string.
 */
int context_interpolate(const context_assembly *a, const char *owner, const char *text,
			char **ret_text, dsb_error *reterr);

/* --- snapshot.c --------------------------------------------------------------------------- */

typedef enum retained_state {
	RETAINED_NEVER, /* no owned snapshot was ever logged (DSH's undefined) */
	RETAINED_NONE,	/* one was, but none is visible any more (null) */
	RETAINED_SOME,	/* {seq, text} */
} retained_state;

/* The projection's state (§9.3 `retained`). */
typedef struct context_retained {
	retained_state state;
	uint64_t seq;
	char *text; /* textOf(): NULL when the message is not exactly one text block */
	size_t text_len;
} context_retained;

void context_retained_done(context_retained *r);

/*
 * Rebuilds `retained` from the log at @fd (@path names it in messages): the scan applies the
 * one validity rule, the surface rule included (session/surface.c, DSB_E_SESSION_INVALID
 * "PATH:LINE: ..."); this keeps the owned user/messages with their textOf() and marks those a
 * replacement cites. Then, newest first, the first owned message no replacement cites (which
 * also means it is still on the surface). Also hands back the header when @ret_header is
 * non-NULL.
 */
int context_retained_load(int fd, const char *path, context_retained *ret, log_header *ret_header,
			  dsb_error *reterr);

/*
 * project() of §9.3 over the rendered @sections: 0 and NULL for nothing, 1 and a new message
 * (CLEARED when there are no sections but a snapshot once existed). -code on failure.
 */
int context_project(const context_retained *retained, const context_sections *sections,
		    dsb_context_message **ret_message, dsb_error *reterr);

/*
 * The owned message's data object (key order content, source, role, id) for @text with
 * @sections (NULL or empty: the bare CLEARED source) and @id. *@ret_json is new. -ENOMEM.
 */
int context_message_format(const char *text, const context_sections *sections, const char *id,
			   char **ret_json);

/* Whether @data (a user/message's data) is owned by DSB_CONTEXT_SOURCE. */
bool context_is_owned(const json_t *data);

/*
 * The snapshot text in force for @session now, whatever the log already holds: the contexts
 * joined (dsh-compat §9.2), or DSB_CONTEXT_CLEARED when there are none. For a front end that states
 * the policy outside the log (the MCP server's instructions). *@ret_text is new.
 */
int context_snapshot_text(dsb_session *session, const dsb_policy *policy, const dsb_config *cfg,
			  char **ret_text, dsb_error *reterr);

/*
 * Beyond DSH: appends to the sandbox:policy text *@io_text (replaced) the sentence about a
 * network policy other than full: disabled, or the allowed hosts. -ENOMEM.
 */
int context_network_append(dsb_network_access access, char *const *allow, char **io_text);

/*
 * Beyond DSH: appends the sentence naming the extra writable roots (JSON-quoted, as the
 * workspace is) to the workspace-write text *@io_text; nothing when there are none, so DSH's
 * bytes stay as they are. -ENOMEM.
 */
int context_roots_append(char *const *extra_roots, char **io_text);

#endif
