/* SPDX-License-Identifier: MIT */
/*
 * A call's result as the model sees it (spec §6.8, §7.4): the write and edit confirmations, a
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

static int put_output(strbuf *sb, const char *key, const dsb_output *o)
{
	int r = strbuf_printf(sb, ",\"%s\":{\"text\":", key);
	if (r >= 0)
		r = json_quote_append(sb, o->text, o->len);
	if (r >= 0)
		r = strbuf_printf(
			sb, ",\"truncated\":%s,\"spillPath\":", o->truncated ? "true" : "false");
	if (r >= 0)
		r = o->spill_path ? json_quote_append(sb, o->spill_path, strlen(o->spill_path))
				  : strbuf_puts(sb, "null");
	if (r >= 0)
		r = strbuf_putc(sb, '}');
	return r;
}

/* The bash tool's structured result (ShellRunResult with its sandbox facts) and its text. */
static int render_run(strbuf *sb, const dsb_call_result *res)
{
	const dsb_run_result *run = &res->run;
	const char *sig = render_signal_name(run->signal);
	int r = run->exit_code >= 0 ? strbuf_printf(sb, "{\"exitCode\":%d", run->exit_code)
				    : strbuf_puts(sb, "{\"exitCode\":null");
	if (r >= 0)
		r = sig		  ? strbuf_printf(sb, ",\"signal\":\"%s\"", sig)
		    : run->signal ? strbuf_printf(sb, ",\"signal\":%d", run->signal)
				  : strbuf_puts(sb, ",\"signal\":null");
	if (r >= 0)
		r = strbuf_printf(sb, ",\"timedOut\":%s,\"timeoutMs\":%llu",
				  run->timed_out ? "true" : "false",
				  (unsigned long long)run->timeout_ms);
	if (r >= 0)
		r = put_output(sb, "stdout", &run->out);
	if (r >= 0)
		r = put_output(sb, "stderr", &run->err);
	if (r >= 0)
		r = strbuf_printf(sb, ",\"sandbox\":{\"mode\":\"%s\",\"denied\":%s",
				  dsb_mode_to_string(run->mode), run->denied ? "true" : "false");
	if (r >= 0 && run->has_enforcement)
		r = strbuf_printf(sb, ",\"enforcement\":\"%s\"",
				  dsb_enforcement_to_string(run->enforcement));
	if (r >= 0)
		r = strbuf_puts(sb, "},\"text\":");
	if (r >= 0)
		r = json_quote_append(sb, res->text, res->text_len);
	if (r >= 0)
		r = strbuf_putc(sb, '}');
	return r;
}

/* {"error":{"name":DSH's class or "Error","code":NAME,"message":the mapped message}}. */
static int render_error(strbuf *sb, const dsb_call_result *res)
{
	static const char prefix[] = "Error: ";
	const char *name = dsb_code_dsh_error(res->error.code);
	int r = strbuf_printf(sb, "{\"error\":{\"name\":\"%s\",\"code\":\"%s\",\"message\":",
			      name ? name : "Error", dsb_code_name(res->error.code));
	/* The message the text carries, after the "Error: " it was given for the model. */
	if (r >= 0)
		r = json_quote_append(sb, res->text + strlen(prefix),
				      res->text_len - strlen(prefix));
	if (r >= 0)
		r = strbuf_puts(sb, "}}");
	return r;
}

/* {"path":DISPLAY, then @key and the rest as given. */
static int render_path(strbuf *sb, const dsb_call_result *res, const char *key)
{
	int r = strbuf_puts(sb, "{\"path\":");
	if (r >= 0)
		r = json_quote_append(sb, res->path, strlen(res->path));
	if (r >= 0)
		r = strbuf_printf(sb, ",\"%s\":", key);
	return r;
}

int dsb_call_render_json(const dsb_call_result *res, char **ret_json, dsb_error *reterr)
{
	if (!res || !ret_json || (res->is_error ? !res->text : !res->text && !res->path))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_call_render_json: no result");
	strbuf sb = STRBUF_INIT;
	int r;
	if (res->is_error)
		r = render_error(&sb, res);
	else
		switch (res->tool) {
		case DSB_TOOL_BASH:
			r = render_run(&sb, res);
			break;
		case DSB_TOOL_WRITE:
			r = render_path(&sb, res, "operation");
			if (r >= 0)
				r = strbuf_printf(&sb, "\"%s\"}",
						  res->created ? "create" : "update");
			break;
		case DSB_TOOL_EDIT:
			r = render_path(&sb, res, "replacements");
			if (r >= 0)
				r = strbuf_printf(&sb, "%zu}", res->replacements);
			break;
		case DSB_TOOL_READ:
			r = render_path(&sb, res, "content");
			if (r >= 0)
				r = json_quote_append(&sb, res->text, res->text_len);
			if (r >= 0)
				r = strbuf_putc(&sb, '}');
			break;
		case DSB_TOOL_EXEC:
		case _DSB_TOOL_MAX:
		case _DSB_TOOL_INVALID:
		default:
			strbuf_done(&sb);
			return dsb_fail(reterr, DSB_E_INVALID_ARGS,
					"dsb_call_render_json: %s has no JSON result",
					dsb_tool_to_string(res->tool)
						? dsb_tool_to_string(res->tool)
						: "this tool");
		}
	if (r < 0) {
		strbuf_done(&sb);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	}
	*ret_json = strbuf_take(&sb);
	return 0;
}
