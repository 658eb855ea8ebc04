/* SPDX-License-Identifier: MIT */
/*
 * The header line of a session log (dsh-compat §3.6): parsed and checked as DSH's
 * parseHeaderRecord() and isHeaderLine() do, with DSH's refusals (a foreign format version before
 * any shape check, retired policy fields), and written as its toHeaderLine() and JSON.stringify()
 * write it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

void log_header_done(log_header *h)
{
	if (!h)
		return;
	free(h->id);
	free(h->cwd);
	free(h->parent_session);
	free(h->agent_preset);
	*h = (log_header){0};
}

/*
 * sessionFormatVersionRefusal(): a numeric version other than ours is refused before the shape
 * is checked, so the user of a newer log sees "upgrade the harness", never "corrupt".
 */
static int refuse_foreign_version(const json_t *v, const char *path, dsb_error *reterr)
{
	const json_t *version = json_object_get(v, "version");
	if (!json_is_number(version) || json_number_value(version) == LOG_FORMAT_VERSION)
		return 0;

	bool newer = json_number_value(version) > LOG_FORMAT_VERSION;
	strbuf sb = STRBUF_INIT;
	int r = strbuf_puts(&sb, "session \"");
	if (r >= 0)
		r = js_string_append(&sb, json_object_get(v, "id"));
	if (r >= 0)
		r = strbuf_puts(&sb, "\" uses log format v");
	if (r >= 0)
		r = js_string_append(&sb, version);
	if (r >= 0 && newer)
		r = strbuf_printf(&sb,
				  ", but this harness reads only v%d: the log was written by a "
				  "newer harness \u2014 upgrade the harness to open it",
				  LOG_FORMAT_VERSION);
	else if (r >= 0)
		r = strbuf_printf(&sb,
				  ", older than the supported v%d, and this build ships no upgrade "
				  "path for it",
				  LOG_FORMAT_VERSION);
	_cleanup_free_ char *text = r >= 0 ? strbuf_take(&sb) : NULL;
	strbuf_done(&sb);
	if (!text)
		return log_no_memory(reterr, path);
	return log_invalid(reterr, path, text);
}

/* An optional key: absent, or a string. */
static bool optional_string(const json_t *v, const char *key)
{
	const json_t *s = json_object_get(v, key);
	return !s || json_is_string(s);
}

/* Why a line is not a header: the field at fault, or none when it is no header at all. */
typedef struct header_fault {
	const char *field; /* NULL: not an object, or a "type" other than "session" */
	bool missing;	   /* absent, rather than present with a value of the wrong kind */
} header_fault;

static bool header_refuse(header_fault *fault, const json_t *v, const char *field)
{
	*fault = (header_fault){.field = field, .missing = !json_object_get(v, field)};
	return false;
}

/*
 * isHeaderLine(), plus what a C struct needs: cwd and parentSession strings and seedLength a
 * count where present (DSH trusts those three, but nothing it writes breaks them). When it is
 * not a header, *@fault names the first field at fault (the required ones in DSH's order).
 */
static bool is_header_line(const json_t *v, log_header *h, header_fault *fault)
{
	const json_t *type = json_object_get(v, "type");
	const json_t *origin = json_object_get(v, "origin");
	const json_t *seed = json_object_get(v, "seedLength");

	*fault = (header_fault){0};
	if (!json_is_object(v))
		return false;
	if (!type)
		return header_refuse(fault, v, "type");
	if (!json_is_string(type) || strcmp(json_string_value(type), "session") != 0 ||
	    json_string_length(type) != strlen("session"))
		return false;
	if (!json_is_number(json_object_get(v, "version")))
		return header_refuse(fault, v, "version");
	if (!json_is_string(json_object_get(v, "id")))
		return header_refuse(fault, v, "id");
	if (!js_count(json_object_get(v, "createdAt"), &h->created_at))
		return header_refuse(fault, v, "createdAt");
	if (!js_count(json_object_get(v, "delegationDepth"), &h->delegation_depth))
		return header_refuse(fault, v, "delegationDepth");
	if (origin &&
	    !(json_is_string(origin) && json_string_length(origin) == strlen("subagent") &&
	      strcmp(json_string_value(origin), "subagent") == 0))
		return header_refuse(fault, v, "origin");
	if (seed && !js_count(seed, &h->seed_length))
		return header_refuse(fault, v, "seedLength");
	h->has_seed_length = seed != NULL;
	h->origin_subagent = origin != NULL;
	static const char *const optional[] = {"agentPreset", "cwd", "parentSession"};
	for (size_t i = 0; i < ELEMENTSOF(optional); i++)
		if (!optional_string(v, optional[i]))
			return header_refuse(fault, v, optional[i]);
	return true;
}

/* A copy of the string at @key (NULL when absent); -EINVAL for one holding a NUL. */
static int copy_string(const json_t *v, const char *key, char **ret)
{
	const json_t *s = json_object_get(v, key);
	if (!s)
		return 0;
	if (strlen(json_string_value(s)) != json_string_length(s))
		return -EINVAL;
	*ret = strdup(json_string_value(s));
	return *ret ? 0 : -ENOMEM;
}

int log_header_parse(const char *line, size_t len, const char *path, log_header *ret_header,
		     dsb_error *reterr)
{
	if (len == 0)
		return log_invalid(reterr, path, "empty or header-less session log");

	_cleanup_(json_decrefp) json_t *v = NULL;
	int r = log_parse_json(line, len, &v);
	if (r == -ENOMEM)
		return log_no_memory(reterr, path);
	if (r < 0)
		return log_invalid(reterr, path,
				   "corrupt session log: header line is not valid JSON");
	if (json_is_object(v)) {
		r = refuse_foreign_version(v, path, reterr);
		if (r < 0)
			return r;
	}

	_cleanup_(log_header_done) log_header h = {0};
	header_fault fault;
	if (!is_header_line(v, &h, &fault)) {
		static const char not_header[] =
			"corrupt session log: first line is not a session header";
		if (!fault.field)
			return log_invalid(reterr, path, not_header);
		return dsb_fail(reterr, DSB_E_SESSION_INVALID, "%s: %s (%s field \"%s\")", path,
				not_header, fault.missing ? "missing required" : "invalid",
				fault.field);
	}
	if (json_object_get(v, "sandboxMode") || json_object_get(v, "approvalPolicy"))
		return log_invalid(reterr, path,
				   "session header uses retired policy baseline fields");

	r = copy_string(v, "id", &h.id);
	if (r >= 0)
		r = copy_string(v, "cwd", &h.cwd);
	if (r >= 0)
		r = copy_string(v, "parentSession", &h.parent_session);
	if (r >= 0)
		r = copy_string(v, "agentPreset", &h.agent_preset);
	if (r == -ENOMEM)
		return log_no_memory(reterr, path);
	/* JSON.parse() takes "\u0000"; a C string cannot hold it. Refuse rather than cut. */
	if (r < 0)
		return log_invalid(reterr, path,
				   "session header holds a NUL character, which this build cannot "
				   "represent");

	if (ret_header) {
		*ret_header = h;
		h = (log_header){0};
	}
	return 0;
}

int log_header_format(const log_header *h, char **ret_line)
{
	if (!h || !h->id)
		return -EINVAL;

	/* toHeaderLine() then JSON.stringify(): this key order, absent optional keys omitted. */
	jw w = JW_INIT;
	jw_object_begin(&w);
	jw_member_string(&w, "type", "session");
	jw_member_int(&w, "version", LOG_FORMAT_VERSION);
	jw_member_string(&w, "id", h->id);
	jw_member_uint(&w, "createdAt", h->created_at);
	if (h->cwd)
		jw_member_string(&w, "cwd", h->cwd);
	if (h->parent_session)
		jw_member_string(&w, "parentSession", h->parent_session);
	if (h->has_seed_length)
		jw_member_uint(&w, "seedLength", h->seed_length);
	if (h->origin_subagent)
		jw_member_string(&w, "origin", "subagent");
	jw_member_uint(&w, "delegationDepth", h->delegation_depth);
	if (h->agent_preset)
		jw_member_string(&w, "agentPreset", h->agent_preset);
	jw_object_end(&w);
	return jw_take(&w, ret_line);
}
