/* SPDX-License-Identifier: MIT */
/*
 * A session's record of what the sandbox refused a call (docs/design/evidence.md): after a
 * bash or exec call that was refused something, an event of ours,
 *
 *   {"type":"sandbox/refusals", ..., "data":{"tool":"bash","callId":"c1","subject":COMMAND,
 *    "count":N,"refusals":[{"op","path","named","errno","reason"}, ...],"note":LINES},
 *    "ignorable":true}
 *
 * marked ignorable, so that DSH's readers skip it (dsh-compat §3.1); and, when the model
 * escalates, the refusals of the call it retries (the session's last such event, when it is of
 * the same tool and command), so that the person asked sees what the wider mode is for.
 */
#include <errno.h>
#include <string.h>

#include <jansson.h>

#include "../session/session.h"
#include "call.h"

/* The refusals of @run as an array of objects. NULL on OOM. */
static json_t *refusals_json(const dsb_run_result *run)
{
	json_t *list = json_array();
	for (size_t i = 0; list && i < run->n_refused_named; i++) {
		const dsb_refusal *f = &run->refused[i];
		const char *name = f->sys_errno ? strerrorname_np(f->sys_errno) : NULL;
		/* None: a hidden file's read, which opened a stand-in. */
		json_t *errno_name = name ? json_string(name) : json_null();
		if (json_array_append_new(list, json_pack("{s:s, s:s, s:s, s:o, s:s}", "op", f->op,
							  "path", f->path, "named", f->named,
							  "errno", errno_name, "reason", f->why)) <
		    0) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

int call_log_refusals(dsb_session *session, const dsb_call_request *req, const char *subject,
		      const dsb_run_result *run, dsb_error *reterr)
{
	if (!session || !run->evidence || run->n_refused == 0)
		return 0;
	json_t *data = json_pack("{s:s, s:s?, s:s, s:I, s:o, s:s?}", "tool",
				 dsb_tool_to_string(req->tool), "callId", req->call_id, "subject",
				 subject, "count", (json_int_t)run->n_refused, "refusals",
				 refusals_json(run), "note", run->refusal_note);
	_cleanup_free_ char *text = data ? json_dumps(data, JSON_COMPACT) : NULL;
	json_decref(data);
	if (!text)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return session_append_extra(session, "sandbox/refusals", text, ",\"ignorable\":true", NULL,
				    reterr);
}

int call_refused_before(dsb_session *session, const char *tool, const char *subject,
			char **ret_note, dsb_error *reterr)
{
	static const char *const type = "sandbox/refusals";
	*ret_note = NULL;
	if (!session || !subject)
		return 0;
	_cleanup_(json_decrefp) json_t *rec = NULL;
	int r = session_find_last(session, &type, 1, NULL, &rec, reterr);
	if (r <= 0)
		return r;
	const json_t *data = json_object_get(rec, "data");
	const char *was_tool = json_string_value(json_object_get(data, "tool"));
	const char *was_subject = json_string_value(json_object_get(data, "subject"));
	const char *note = json_string_value(json_object_get(data, "note"));
	/* Only the call this one retries: the same tool, the same command. */
	if (!was_tool || !was_subject || !note || strcmp(was_tool, tool) != 0 ||
	    strcmp(was_subject, subject) != 0)
		return 0;
	if (!(*ret_note = strdup(note)))
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return 1;
}
