/* SPDX-License-Identifier: MIT */
/*
 * The runtime-context snapshot (spec §9.3): DSH's RuntimeContextProjection, rebuilt from the log
 * on every call. The model sees the policy only through owned user/messages appended after the
 * conversation; a new one is appended exactly when the rendered text differs from the one the
 * model can still see, so an unchanged policy never costs the provider's prompt cache anything,
 * and a changed one is never left unstated.
 *
 * What the model can still see is the surface (spec §3.1): append-marked messages, with the
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

#define JS_MAX_SAFE_INTEGER 9007199254740991.0

struct dsb_context_message {
	char *text;
	char *json;
};

/* One owned user/message of the log. */
typedef struct owned {
	uint64_t seq;
	char *text; /* textOf(), NULL when malformed */
	size_t text_len;
	bool cited; /* by the sourceEventSeqs of a later replacement */
} owned;

/* The forward fold of a log: the surface and the owned messages, both in log order. */
typedef struct fold_state {
	const char *path;
	uint64_t *nodes; /* surface seqs in model-visible order */
	size_t n_nodes;
	size_t cap_nodes;
	owned *owned;
	size_t n_owned;
	size_t cap_owned;
} fold_state;

static void fold_state_done(fold_state *f)
{
	free(f->nodes);
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

/* isEventSeq(): a non-negative safe integer (a JSON real like 5.0 is the JS number 5). */
static bool event_seq(const json_t *v, uint64_t *ret)
{
	double d;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < 0 || (double)i > JS_MAX_SAFE_INTEGER)
			return false;
		*ret = (uint64_t)i;
		return true;
	}
	if (!json_is_real(v))
		return false;
	d = json_real_value(v);
	if (!(d >= 0 && d <= JS_MAX_SAFE_INTEGER) || d != (double)(uint64_t)d)
		return false;
	*ret = (uint64_t)d;
	return true;
}

static bool surface_type(const char *type)
{
	return strcmp(type, "user/message") == 0 || strcmp(type, "assistant/message") == 0 ||
	       strcmp(type, "tool/result") == 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int fold_fail(const fold_state *f, const log_record *rec, dsb_error *reterr, const char *fmt,
		     ...) __attribute__((format(printf, 4, 5)));

static int fold_fail(const fold_state *f, const log_record *rec, dsb_error *reterr, const char *fmt,
		     ...)
{
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return dsb_fail(reterr, DSB_E_SESSION_INVALID, "%s:%zu: %s", f->path, rec->line, text);
}

/*
 * assertProvenance(): the sourceEventSeqs of @rec, when present, are a non-empty (except on
 * assistant/message) array of distinct earlier seqs, which must include every @shadowed node.
 * On success *@ret_sorted (may be NULL) is the sorted set, *@ret_n its size.
 */
static int check_provenance(const fold_state *f, const log_record *rec, const uint64_t *shadowed,
			    size_t n_shadowed, uint64_t **ret_sorted, size_t *ret_n,
			    dsb_error *reterr)
{
	const json_t *raw = json_object_get(rec->json, "sourceEventSeqs");
	_cleanup_free_ uint64_t *sorted = NULL;
	size_t n = 0;

	if (raw) {
		if (!json_is_array(raw))
			return fold_fail(f, rec, reterr,
					 "sourceEventSeqs on event at seq %" PRIu64
					 " must be an array when present",
					 rec->seq);
		n = json_array_size(raw);
		if (n == 0 && strcmp(rec->type, "assistant/message") != 0)
			return fold_fail(f, rec, reterr,
					 "sourceEventSeqs must not be empty except on "
					 "assistant/message");
		sorted = calloc(n ? n : 1, sizeof(*sorted));
		if (!sorted)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
		bool late = false;
		uint64_t first_late = 0;
		for (size_t i = 0; i < n; i++) {
			if (!event_seq(json_array_get(raw, i), &sorted[i]))
				return fold_fail(
					f, rec, reterr,
					"session event \"%s\" sourceEventSeqs must densely "
					"contain non-negative safe integers",
					rec->type);
			if (!late && sorted[i] >= rec->seq) {
				late = true;
				first_late = sorted[i];
			}
		}
		if (n > 0)
			qsort(sorted, n, sizeof(*sorted), cmp_u64);
		for (size_t i = 1; i < n; i++)
			if (sorted[i] == sorted[i - 1])
				return fold_fail(f, rec, reterr,
						 "sourceEventSeqs must not contain duplicates");
		if (late)
			return fold_fail(f, rec, reterr,
					 "sourceEventSeqs must reference earlier events: %" PRIu64
					 " >= current seq %" PRIu64,
					 first_late, rec->seq);
	}

	strbuf missing = STRBUF_INIT;
	int r = 0;
	for (size_t i = 0; r >= 0 && i < n_shadowed; i++)
		if (!n || !bsearch(&shadowed[i], sorted, n, sizeof(*sorted), cmp_u64))
			r = strbuf_printf(&missing, "%s%" PRIu64, missing.len ? ", " : "",
					  shadowed[i]);
	if (r < 0 || missing.len) {
		r = r < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory")
			  : fold_fail(f, rec, reterr,
				      "surface replace: sourceEventSeqs must include every "
				      "shadowed surface node; missing %s",
				      missing.buf);
		strbuf_done(&missing);
		return r;
	}
	strbuf_done(&missing);
	if (ret_sorted)
		*ret_sorted = TAKE_PTR(sorted);
	*ret_n = n;
	return 0;
}

/* The index of @seq in the surface, or -1. */
static ssize_t node_index(const fold_state *f, uint64_t seq)
{
	for (size_t i = 0; i < f->n_nodes; i++)
		if (f->nodes[i] == seq)
			return (ssize_t)i;
	return -1;
}

static int push_node(fold_state *f, uint64_t seq)
{
	if (f->n_nodes == f->cap_nodes) {
		size_t cap = f->cap_nodes ? f->cap_nodes * 2 : 64;
		uint64_t *grown = reallocarray(f->nodes, cap, sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		f->nodes = grown;
		f->cap_nodes = cap;
	}
	f->nodes[f->n_nodes++] = seq;
	return 0;
}

/* Whether @op is exactly {"op":"replace","start":S,"end":E} with event seqs S and E. */
static bool replace_op(const json_t *op, uint64_t *ret_start, uint64_t *ret_end)
{
	const json_t *kind = json_object_get(op, "op");
	return json_object_size(op) == 3 && json_is_string(kind) &&
	       strcmp(json_string_value(kind), "replace") == 0 &&
	       event_seq(json_object_get(op, "start"), ret_start) &&
	       event_seq(json_object_get(op, "end"), ret_end);
}

/* A replacement: the surface range start..end becomes the event itself (foldSurface()). */
static int fold_replace(fold_state *f, const log_record *rec, uint64_t start, uint64_t end,
			dsb_error *reterr)
{
	ssize_t si = node_index(f, start);
	if (si < 0)
		return fold_fail(f, rec, reterr,
				 "surface replace: start seq %" PRIu64 " not found in surface",
				 start);
	ssize_t ei = node_index(f, end);
	if (ei < 0)
		return fold_fail(f, rec, reterr,
				 "surface replace: end seq %" PRIu64 " not found in surface", end);
	if (si > ei)
		return fold_fail(f, rec, reterr,
				 "surface replace: start seq %" PRIu64
				 " (index %zd) is after end seq "
				 "%" PRIu64 " (index %zd)",
				 start, si, end, ei);

	_cleanup_free_ uint64_t *sources = NULL;
	size_t n_sources = 0;
	int r = check_provenance(f, rec, f->nodes + si, (size_t)(ei - si + 1), &sources, &n_sources,
				 reterr);
	if (r < 0)
		return r;

	/* Every owned message the replacement cites is gone from what the model sees. */
	for (size_t i = 0; i < f->n_owned; i++)
		if (n_sources &&
		    bsearch(&f->owned[i].seq, sources, n_sources, sizeof(*sources), cmp_u64))
			f->owned[i].cited = true;

	f->nodes[si] = rec->seq;
	memmove(f->nodes + si + 1, f->nodes + ei + 1,
		(f->n_nodes - (size_t)ei - 1) * sizeof(*f->nodes));
	f->n_nodes -= (size_t)(ei - si);
	return 0;
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

/* surfaceOpOf() and the surface transition of one record, then the owned-message bookkeeping. */
static int fold_record(const log_record *rec, void *userdata, dsb_error *reterr)
{
	fold_state *f = userdata;
	const json_t *op = json_object_get(rec->json, "surfaceOp");

	if (!surface_type(rec->type)) {
		if (op)
			return fold_fail(f, rec, reterr,
					 "session event \"%s\" is not surface-eligible and cannot "
					 "carry surfaceOp",
					 rec->type);
		if (json_object_get(rec->json, "sourceEventSeqs"))
			return fold_fail(f, rec, reterr,
					 "session event \"%s\" is not surface-eligible and cannot "
					 "carry sourceEventSeqs",
					 rec->type);
		return 0;
	}
	if (!op)
		return fold_fail(
			f, rec, reterr,
			"session event \"%s\" is surface-eligible and requires a surfaceOp "
			"marker",
			rec->type);

	int r;
	uint64_t start, end;
	size_t n;
	if (json_is_string(op) && strcmp(json_string_value(op), "append") == 0) {
		r = check_provenance(f, rec, NULL, 0, NULL, &n, reterr);
		if (r >= 0 && push_node(f, rec->seq) < 0)
			r = dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	} else if (!json_is_object(op))
		return fold_fail(f, rec, reterr,
				 "session event \"%s\" carries an invalid surfaceOp", rec->type);
	else if (!replace_op(op, &start, &end))
		return fold_fail(f, rec, reterr,
				 "session event \"%s\" carries an invalid replace surfaceOp",
				 rec->type);
	else
		r = fold_replace(f, rec, start, end, reterr);
	if (r < 0)
		return r;

	const json_t *data = json_object_get(rec->json, "data");
	if (strcmp(rec->type, "user/message") == 0 && context_is_owned(data) &&
	    push_owned(f, rec, data) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return 0;
}

int context_retained_load(int fd, const char *path, context_retained *ret, log_header *ret_header,
			  dsb_error *reterr)
{
	fold_state f = {.path = path};
	int r = log_scan(fd, path, ret_header, fold_record, &f, NULL, reterr);
	if (r < 0) {
		fold_state_done(&f);
		return r;
	}

	/* The surface as a sorted set, to ask membership of each owned message. */
	context_retained out = {.state = RETAINED_NEVER};
	if (f.n_nodes > 0)
		qsort(f.nodes, f.n_nodes, sizeof(*f.nodes), cmp_u64);
	for (size_t i = f.n_owned; i-- > 0;) {
		owned *o = &f.owned[i];
		out.state = RETAINED_NONE;
		if (o->cited || !f.n_nodes ||
		    !bsearch(&o->seq, f.nodes, f.n_nodes, sizeof(*f.nodes), cmp_u64))
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
	strbuf sb = STRBUF_INIT;
	int r = strbuf_puts(&sb, "{\"content\":[{\"type\":\"text\",\"text\":");
	if (r >= 0)
		r = json_quote_append(&sb, text, strlen(text));
	if (r >= 0)
		r = strbuf_puts(
			&sb,
			"}],\"source\":{\"kind\":\"plugin\",\"plugin\":\"" DSB_CONTEXT_SOURCE "\"");
	/* The cleared marker has no contributions left to attribute. */
	if (r >= 0 && sections && sections->n > 0) {
		r = strbuf_puts(&sb, ",\"form\":\"snapshot\",\"sections\":[");
		for (size_t i = 0; r >= 0 && i < sections->n; i++) {
			const context_section *s = &sections->items[i];
			r = strbuf_puts(&sb, i ? ",{\"name\":" : "{\"name\":");
			if (r >= 0)
				r = json_quote_append(&sb, s->name, strlen(s->name));
			if (r >= 0)
				r = strbuf_puts(&sb, ",\"text\":");
			if (r >= 0)
				r = json_quote_append(&sb, s->text, strlen(s->text));
			if (r >= 0)
				r = strbuf_putc(&sb, '}');
		}
		if (r >= 0)
			r = strbuf_putc(&sb, ']');
	}
	if (r >= 0)
		r = strbuf_puts(&sb, "},\"role\":\"user\",\"id\":");
	if (r >= 0)
		r = json_quote_append(&sb, id, strlen(id));
	if (r >= 0)
		r = strbuf_putc(&sb, '}');
	char *out = r >= 0 ? strbuf_take(&sb) : NULL;
	strbuf_done(&sb);
	if (!out)
		return -ENOMEM;
	*ret_json = out;
	return 0;
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

int dsb_context_project(dsb_session *session, const dsb_policy *policy, const dsb_config *cfg,
			dsb_context_message **ret_message, dsb_error *reterr)
{
	if (!session || !policy || !cfg || !ret_message)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_context_project: missing argument");

	const char *path = dsb_session_path(session);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s: cannot open", path);

	_cleanup_(log_header_done) log_header header = {0};
	_cleanup_(context_retained_done) context_retained retained = {0};
	_cleanup_(context_sections_done) context_sections sections = {0};
	int r = context_retained_load(fd, path, &retained, &header, reterr);
	if (r >= 0)
		r = render_session(session, &header, policy, cfg, &sections, reterr);
	if (r >= 0)
		r = context_project(&retained, &sections, ret_message, reterr);
	return r;
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
