/* SPDX-License-Identifier: MIT */
/*
 * The runtime-context snapshot (dsh-compat §9.3): DSH's RuntimeContextProjection, rebuilt from the
 * log on every call. The model sees the policy only through owned user/messages appended after the
 * conversation; a new one is appended exactly when the rendered text differs from the one the
 * model can still see, so an unchanged policy never costs the provider's prompt cache anything,
 * and a changed one is never left unstated.
 *
 * What the model can still see is the surface (dsh-compat §3.1): append-marked messages, with the
 * ranges a compaction replaced shadowed. The retained snapshot is the newest owned message on
 * it (DSH's restart recovery) that no later replacement cites in its sourceEventSeqs (DSH's
 * live rule, which the two agree on for every log DSH itself writes).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "context.h"

struct dsb_context_message {
	char *text;
	char *json;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* One owned user/message of the log. */
typedef struct owned {
	uint64_t seq;
	char *text; /* textOf(), NULL when malformed */
	size_t text_len;
	bool cited; /* by the sourceEventSeqs of a later replacement */
} owned;

/* The forward fold of a log: its owned messages, in log order. */
typedef struct fold_state {
	owned *owned;
	size_t n_owned;
	size_t cap_owned;
} fold_state;

static void fold_state_done(fold_state *f)
{
	for (size_t i = 0; i < f->n_owned; i++)
		free(f->owned[i].text);
	free(f->owned);
}

void context_retained_done(context_retained *r)
{
	if (!r)
		return;
	free(r->text);
	*r = (context_retained){0};
}

bool context_is_owned(const json_t *data)
{
	const json_t *source = json_object_get(data, "source");
	const json_t *kind = json_object_get(source, "kind");
	const json_t *plugin = json_object_get(source, "plugin");
	return json_is_string(kind) && strcmp(json_string_value(kind), "plugin") == 0 &&
	       json_is_string(plugin) && strcmp(json_string_value(plugin), DSB_CONTEXT_SOURCE) == 0;
}

/* textOf(): the text iff content is exactly one block of type text (a string text). */
static const json_t *text_of(const json_t *data)
{
	const json_t *content = json_object_get(data, "content");
	if (!json_is_array(content) || json_array_size(content) != 1)
		return NULL;
	const json_t *block = json_array_get(content, 0);
	const json_t *type = json_object_get(block, "type");
	const json_t *text = json_object_get(block, "text");
	if (!json_is_string(type) || strcmp(json_string_value(type), "text") != 0)
		return NULL;
	/* A text that is not a string never equals a rendered snapshot: malformed, like none. */
	return json_is_string(text) ? text : NULL;
}

static int push_owned(fold_state *f, const log_record *rec, const json_t *data)
{
	if (f->n_owned == f->cap_owned) {
		size_t cap = f->cap_owned ? f->cap_owned * 2 : 8;
		owned *grown = reallocarray(f->owned, cap, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		f->owned = grown;
		f->cap_owned = cap;
	}
	owned o = {.seq = rec->seq};
	const json_t *text = text_of(data);
	if (text) {
		o.text_len = json_string_length(text);
		o.text = malloc(o.text_len + 1);
		if (!o.text)
			return -ENOMEM;
		memcpy(o.text, json_string_value(text), o.text_len + 1);
	}
	f->owned[f->n_owned++] = o;
	return 0;
}

/*
 * The owned-message bookkeeping of one record. The scanner has already applied the surface rule
 * (session/surface.c) and hands over a replacement's sorted sourceEventSeqs.
 */
static int fold_record(const log_record *rec, void *userdata, dsb_error *reterr)
{
	fold_state *f = userdata;
	/* Every owned message a replacement cites is gone from what the model sees. */
	for (size_t i = 0; rec->n_sources && i < f->n_owned; i++)
		if (bsearch(&f->owned[i].seq, rec->sources, rec->n_sources, sizeof(*rec->sources),
			    cmp_u64))
			f->owned[i].cited = true;

	const json_t *data = json_object_get(rec->json, "data");
	if (strcmp(rec->type, "user/message") == 0 && context_is_owned(data) &&
	    push_owned(f, rec, data) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return 0;
}

int context_retained_load(int fd, const char *path, context_retained *ret, log_header *ret_header,
			  dsb_error *reterr)
{
	fold_state f = {0};
	int r = log_scan(fd, path, ret_header, fold_record, &f, NULL, reterr);
	if (r < 0) {
		fold_state_done(&f);
		return r;
	}

	/*
	 * The newest owned message still on the surface and cited by no replacement. The scan
	 * checked that a replacement's sourceEventSeqs include every node it shadows, so a message
	 * that left the surface is cited: "not cited" says both.
	 */
	context_retained out = {.state = RETAINED_NEVER};
	for (size_t i = f.n_owned; i-- > 0;) {
		owned *o = &f.owned[i];
		out.state = RETAINED_NONE;
		if (o->cited)
			continue;
		out.state = RETAINED_SOME;
		out.seq = o->seq;
		out.text = TAKE_PTR(o->text);
		out.text_len = o->text_len;
		break;
	}
	fold_state_done(&f);
	*ret = out;
	return 0;
}

int context_message_format(const char *text, const context_sections *sections, const char *id,
			   char **ret_json)
{
	jw w = JW_INIT;
	session_message_begin(&w, text, DSB_CONTEXT_SOURCE);
	/* The cleared marker has no contributions left to attribute. */
	if (sections && sections->n > 0) {
		jw_member_string(&w, "form", "snapshot");
		jw_key(&w, "sections");
		jw_array_begin(&w);
		for (size_t i = 0; i < sections->n; i++) {
			jw_object_begin(&w);
			jw_member_string(&w, "name", sections->items[i].name);
			jw_member_string(&w, "text", sections->items[i].text);
			jw_object_end(&w);
		}
		jw_array_end(&w);
	}
	session_message_end(&w, id);
	return jw_take(&w, ret_json);
}

int context_project(const context_retained *retained, const context_sections *sections,
		    dsb_context_message **ret_message, dsb_error *reterr)
{
	_cleanup_free_ char *current = NULL;
	if (context_join(sections, &current) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");

	/* Never had context, still none: nothing to say, nothing to withdraw. */
	if (retained->state == RETAINED_NEVER && !*current) {
		*ret_message = NULL;
		return 0;
	}
	const char *snapshot = *current ? current : DSB_CONTEXT_CLEARED;
	size_t len = strlen(snapshot);
	/* Unchanged, byte for byte: the model already sees it, and the cache stays warm. */
	if (retained->state == RETAINED_SOME && retained->text && retained->text_len == len &&
	    memcmp(retained->text, snapshot, len) == 0) {
		*ret_message = NULL;
		return 0;
	}

	char id[UUID_STRING_MAX];
	int r = uuid_random(id);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r, "cannot draw random bytes");
	dsb_context_message *m = calloc(1, sizeof(*m));
	if (!m || !(m->text = strdup(snapshot)) ||
	    context_message_format(snapshot, *current ? sections : NULL, id, &m->json) < 0) {
		dsb_context_message_free(m);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	}
	*ret_message = m;
	return 1;
}

/* The contexts in force for @session, rendered (the registrations of DSH's composition). */
static int render_session(dsb_session *session, const log_header *header, const dsb_policy *policy,
			  const dsb_config *cfg, context_sections *ret, dsb_error *reterr)
{
	_cleanup_(context_assembly_done) context_assembly a = {0};
	_cleanup_(dsb_exec_policy_done) dsb_exec_policy resolved = {0};
	_cleanup_free_ char *sandbox = NULL;

	int r = dsb_session_resolve(session, policy, _DSB_MODE_INVALID, &resolved, reterr);
	if (r >= 0)
		r = dsb_context_render_sandbox(resolved.mode, resolved.workspace_root, &sandbox,
					       reterr);
	/* Beyond DSH, only with extra roots or a network policy: DSH's bytes otherwise. */
	if (r >= 0 && context_roots_append(resolved.extra_roots, &sandbox) < 0)
		r = dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (r >= 0 && resolved.mode != DSB_MODE_DANGER_FULL_ACCESS &&
	    dsb_config_network_access(cfg) != DSB_NETWORK_FULL &&
	    context_network_append(dsb_config_network_access(cfg), dsb_config_network_allow(cfg),
				   &sandbox) < 0)
		r = dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (r >= 0)
		r = context_assembly_add(&a, CONTEXT_SANDBOX_POLICY, CONTEXT_ORDER_SANDBOX, sandbox,
					 reterr);
	if (r < 0)
		return r;

	/* Effective approval = the session's last approval/policy ?? the configured one. */
	dsb_approval_policy approval = dsb_config_approval_policy(cfg);
	r = dsb_session_fold_approval(session, &approval, reterr);
	if (r >= 0)
		r = context_assembly_add(&a, CONTEXT_APPROVAL_POLICY, CONTEXT_ORDER_APPROVAL,
					 dsb_context_approval_text(approval), reterr);
	/* A delegated child's scope is fixed at its start: it must say so instead of asking. */
	if (r >= 0 && (header->origin_subagent || header->delegation_depth > 0))
		r = context_assembly_add(&a, CONTEXT_SUBAGENT_DELEGATION, CONTEXT_ORDER_DELEGATION,
					 dsb_context_delegation_text(), reterr);

	/*
	 * The agent loop's variables. The provider and model are the agent's, which a sandbox
	 * does not know: a text referring to them fails as it would in DSH without a value.
	 */
	if (r >= 0)
		r = context_assembly_set_variable(&a, "provider", NULL, reterr);
	if (r >= 0)
		r = context_assembly_set_variable(&a, "model", NULL, reterr);
	if (r >= 0)
		r = context_assembly_set_variable(&a, "cwd", header->cwd, reterr);
	if (r < 0)
		return r;
	return context_render_sections(&a, ret, reterr);
}

/* The log's retained snapshot and the sections @session's policy renders now. */
static int session_sections(dsb_session *session, const dsb_policy *policy, const dsb_config *cfg,
			    context_retained *retained, context_sections *sections,
			    dsb_error *reterr)
{
	const char *path = dsb_session_path(session);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot open", path);
	_cleanup_(log_header_done) log_header header = {0};
	int r = context_retained_load(fd, path, retained, &header, reterr);
	return r < 0 ? r : render_session(session, &header, policy, cfg, sections, reterr);
}

int dsb_context_project(dsb_session *session, const dsb_policy *policy, const dsb_config *cfg,
			dsb_context_message **ret_message, dsb_error *reterr)
{
	if (!session || !policy || !cfg || !ret_message)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_context_project: missing argument");

	_cleanup_(context_retained_done) context_retained retained = {0};
	_cleanup_(context_sections_done) context_sections sections = {0};
	int r = session_sections(session, policy, cfg, &retained, &sections, reterr);
	if (r >= 0)
		r = context_project(&retained, &sections, ret_message, reterr);
	return r;
}

int context_snapshot_text(dsb_session *session, const dsb_policy *policy, const dsb_config *cfg,
			  char **ret_text, dsb_error *reterr)
{
	_cleanup_(context_retained_done) context_retained retained = {0};
	_cleanup_(context_sections_done) context_sections sections = {0};
	_cleanup_free_ char *current = NULL;
	int r = session_sections(session, policy, cfg, &retained, &sections, reterr);
	if (r >= 0 && context_join(&sections, &current) < 0)
		r = dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (r < 0)
		return r;
	char *text = strdup(*current ? current : DSB_CONTEXT_CLEARED);
	if (!text)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	*ret_text = text;
	return 0;
}

const char *dsb_context_message_text(const dsb_context_message *message)
{
	return message ? message->text : NULL;
}

const char *dsb_context_message_json(const dsb_context_message *message)
{
	return message ? message->json : NULL;
}

int dsb_context_message_append(dsb_session *session, const dsb_context_message *message,
			       uint64_t *ret_seq, dsb_error *reterr)
{
	if (!session || !message)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_context_message_append: missing argument");
	return session_append_extra(session, "user/message", message->json,
				    ",\"surfaceOp\":\"append\"", ret_seq, reterr);
}

/* What the locked decision of dsb_context_project_append() needs and leaves. */
struct project_decision {
	dsb_session *session;
	const dsb_policy *policy;
	const dsb_config *cfg;
	dsb_context_message *message;
};

static int decide_snapshot(void *userdata, log_event *ret_event, dsb_error *reterr)
{
	struct project_decision *d = userdata;
	d->message = dsb_context_message_free(d->message);
	int r = dsb_context_project(d->session, d->policy, d->cfg, &d->message, reterr);
	if (r <= 0)
		return r;
	*ret_event = (log_event){
		.type = "user/message",
		.data_json = d->message->json,
		.extra = ",\"surfaceOp\":\"append\"",
	};
	return 1;
}

int dsb_context_project_append(dsb_session *session, const dsb_policy *policy,
			       const dsb_config *cfg, dsb_context_message **ret_message,
			       uint64_t *ret_seq, dsb_error *reterr)
{
	if (!session || !policy || !cfg || !ret_message)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_context_project_append: missing argument");
	struct project_decision d = {.session = session, .policy = policy, .cfg = cfg};
	int r = session_append_decide(session, decide_snapshot, &d, ret_seq, reterr);
	if (r <= 0)
		d.message = dsb_context_message_free(d.message);
	*ret_message = d.message;
	return r;
}

dsb_context_message *dsb_context_message_free(dsb_context_message *message)
{
	if (message) {
		free(message->text);
		free(message->json);
		free(message);
	}
	return NULL;
}
