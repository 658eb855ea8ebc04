/* SPDX-License-Identifier: MIT */
/*
 * A call's result as the model sees it (dsh-compat §6.8, §7.4): the write and edit confirmations, a
 * failure as "Error: MESSAGE" with a fence denial mapped to the denial marker and the escalation
 * hint (mapError) and a stale version remedied (remediateFsError), and the result as JSON.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/exec.h"
#include "call.h"

void dsb_call_result_done(dsb_call_result *r)
{
	if (!r)
		return;
	free(r->text);
	free(r->path);
	dsb_run_result_done(&r->run);
	*r = (dsb_call_result){0};
}

static bool is_fs_tool(dsb_tool tool)
{
	return tool == DSB_TOOL_WRITE || tool == DSB_TOOL_EDIT || tool == DSB_TOOL_READ;
}

int call_result_fail(dsb_call_result *res, const dsb_error *err, const dsb_exec_policy *policy)
{
	_cleanup_free_ char *mapped = NULL, *remedied = NULL;
	const char *message = err->message;
	bool fs = is_fs_tool(res->tool);
	if (fs && err->code == DSB_E_FS_SANDBOX_DENIED && policy && policy->workspace_root) {
		/*
		 * mapError (§7.4): the marker and the hint; a confining fs always advertises, but
		 * a read has no escalation (the tool takes no sandbox_permissions), so its denial
		 * offers none. The fence's lines after DSH's first one (a protected path named)
		 * are ours, and the model needs them to see why a write inside the workspace was
		 * refused: kept.
		 */
		bool escalates = res->tool != DSB_TOOL_READ;
		const char *extra = strchr(err->message, '\n');
		_cleanup_free_ char *marker = render_denial_marker(policy->mode);
		_cleanup_free_ char *hint = escalates ? render_escalation_hint("operation") : NULL;
		if (marker && (hint || !escalates) &&
		    asprintf(&mapped, "%s%s%s%s", marker, hint ? "\n" : "", hint ? hint : "",
			     extra ? extra : "") > 0)
			message = mapped;
	}
	/* remediateFsError (§7.4): a stale or unread file tells the model what to do next. */
	const char *remedy = !fs ? NULL
			     : err->code == DSB_E_FS_STALE_VERSION
				     ? " — re-read the file, then retry"
			     : err->code == DSB_E_FS_NOT_OBSERVED ? " — read the file, then retry"
								  : NULL;
	if (remedy && asprintf(&remedied, "%s%s", message, remedy) > 0)
		message = remedied;
	char *text = NULL;
	int n = asprintf(&text, "Error: %s", message);
	if (n < 0)
		return -ENOMEM;
	res->is_error = true;
	res->error = *err;
	res->text = text;
	res->text_len = (size_t)n;
	return 0;
}

int call_result_write(dsb_call_result *res)
{
	char *text = NULL;
	int n = asprintf(&text, "<path>%s</path>\n<type>file</type>\n<content>\n%s\n</content>",
			 res->path, res->created ? "Created file" : "Updated file");
	if (n < 0)
		return -ENOMEM;
	res->text = text;
	res->text_len = (size_t)n;
	return 0;
}

int call_result_edit(dsb_call_result *res)
{
	char *text = NULL;
	int n = res->replaced_all
			? asprintf(&text,
				   "The file %s has been updated. All occurrences were "
				   "successfully replaced.",
				   res->path)
			: asprintf(&text, "The file %s has been updated successfully.", res->path);
	if (n < 0)
		return -ENOMEM;
	res->text = text;
	res->text_len = (size_t)n;
	return 0;
}

static void put_output(jw *w, const char *key, const dsb_output *o)
{
	jw_key(w, key);
	jw_object_begin(w);
	jw_member_string_len(w, "text", o->text, o->len);
	jw_member_bool(w, "truncated", o->truncated);
	jw_member_string(w, "spillPath", o->spill_path);
	jw_object_end(w);
}

/* The command's outcome and the sandbox's facts, without the text. */
static void render_outcome(jw *w, const dsb_run_result *run)
{
	const char *sig = render_signal_name(run->signal);
	jw_key(w, "exitCode");
	if (run->exit_code >= 0)
		jw_int(w, run->exit_code);
	else
		jw_null(w);
	jw_key(w, "signal");
	if (sig)
		jw_string(w, sig);
	else if (run->signal)
		jw_int(w, run->signal);
	else
		jw_null(w);
	jw_member_bool(w, "timedOut", run->timed_out);
	if (run->aborted)
		jw_member_bool(w, "aborted", true);
	jw_member_uint(w, "timeoutMs", run->timeout_ms);
	put_output(w, "stdout", &run->out);
	put_output(w, "stderr", &run->err);
	jw_key(w, "sandbox");
	jw_object_begin(w);
	jw_member_string(w, "mode", dsb_mode_to_string(run->mode));
	jw_member_bool(w, "denied", run->denied);
	if (run->has_enforcement)
		jw_member_string(w, "enforcement", dsb_enforcement_to_string(run->enforcement));
	/* Beyond DSH, only when one was: the limits the call reached. */
	if (run->limits_hit) {
		jw_key(w, "limitsReached");
		jw_array_begin(w);
		for (int l = 0; l < _DSB_LIMIT_MAX; l++)
			if (run->limits_hit & (1u << l))
				jw_string(w, dsb_limit_to_string((dsb_limit)l));
		jw_array_end(w);
	}
	/* Beyond DSH, where the sandbox watched the file operations: what it refused (an
	 * empty list says nothing was), and how many in all. */
	if (run->evidence) {
		jw_key(w, "refusals");
		jw_array_begin(w);
		for (size_t i = 0; i < run->n_refused_named; i++) {
			const dsb_refusal *f = &run->refused[i];
			const char *name = strerrorname_np(f->sys_errno);
			jw_object_begin(w);
			jw_member_string(w, "op", f->op);
			jw_member_string(w, "path", f->path);
			jw_member_string(w, "named", f->named);
			/* None: a hidden file's read, which opened a stand-in. */
			jw_key(w, "errno");
			if (f->sys_errno && name)
				jw_string(w, name);
			else
				jw_null(w);
			jw_member_string(w, "reason", f->why);
			jw_object_end(w);
		}
		jw_array_end(w);
		jw_member_uint(w, "refusalCount", run->n_refused);
	}
	jw_object_end(w);
}

/* The bash tool's structured result (ShellRunResult with its sandbox facts) and its text. */
static void render_run(jw *w, const dsb_call_result *res)
{
	render_outcome(w, &res->run);
	jw_member_string_len(w, "text", res->text, res->text_len);
}

/* "error":{"name":DSH's class or "Error","code":NAME,"message":the mapped message}. */
static void render_error(jw *w, const dsb_call_result *res)
{
	static const char prefix[] = "Error: ";
	const char *name = dsb_code_dsh_error(res->error.code);
	jw_key(w, "error");
	jw_object_begin(w);
	jw_member_string(w, "name", name ? name : "Error");
	jw_member_string(w, "code", dsb_code_name(res->error.code));
	/* The message the text carries, after the "Error: " it was given for the model. */
	jw_member_string_len(w, "message", res->text + strlen(prefix),
			     res->text_len - strlen(prefix));
	jw_object_end(w);
}

/* Whether @res has a structured result: an error, or a tool that makes one. */
static bool has_json(const dsb_call_result *res)
{
	if (res->is_error)
		return true;
	switch (res->tool) {
	case DSB_TOOL_BASH:
	case DSB_TOOL_WRITE:
	case DSB_TOOL_EDIT:
	case DSB_TOOL_READ:
		return true;
	case DSB_TOOL_EXEC:
		return res->text != NULL; /* captured: the bash tool's result of an argv */
	case _DSB_TOOL_MAX:
	case _DSB_TOOL_INVALID:
	default:
		return false;
	}
}

int dsb_call_render_json(const dsb_call_result *res, char **ret_json, dsb_error *reterr)
{
	if (!res || !ret_json || (res->is_error ? !res->text : !res->text && !res->path))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_call_render_json: no result");
	if (!has_json(res))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_call_render_json: %s has no JSON result",
				dsb_tool_to_string(res->tool) ? dsb_tool_to_string(res->tool)
							      : "this tool");

	jw w = JW_INIT;
	jw_object_begin(&w);
	if (res->is_error) {
		render_error(&w, res);
		/* A command a cancellation stopped: what it did until then, beside the error. */
		if (res->run.aborted)
			render_outcome(&w, &res->run);
	} else if (res->tool == DSB_TOOL_BASH || res->tool == DSB_TOOL_EXEC)
		render_run(&w, res);
	else {
		/* "path":DISPLAY, then what the tool did. */
		jw_member_string(&w, "path", res->path);
		if (res->tool == DSB_TOOL_WRITE)
			jw_member_string(&w, "operation", res->created ? "create" : "update");
		else if (res->tool == DSB_TOOL_EDIT)
			jw_member_uint(&w, "replacements", res->replacements);
		else
			jw_member_string_len(&w, "content", res->text, res->text_len);
	}
	jw_object_end(&w);
	if (jw_take(&w, ret_json) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return 0;
}
