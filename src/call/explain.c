/* SPDX-License-Identifier: MIT */
/*
 * A call's decisions told as they are made: for `explain`, which prepares and confines a call
 * without running it, and for a front end's debug output (-v) during a real run. Both are told
 * by the same code from the same prepared call, so what explain says is what a run does. Each
 * decision is one line for a person and, for explain, members of one JSON object.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "call.h"

bool call_explaining(const dsb_call *call)
{
	return call->debug || call->explain_json;
}

explain_sink call_sink(const dsb_call *call)
{
	return (explain_sink){call->debug, call->debug_userdata, call->explain_json};
}

void dsb_call_set_debug(dsb_call *call, dsb_call_debug_fn debug, void *userdata)
{
	if (!call)
		return;
	call->debug = debug;
	call->debug_userdata = userdata;
}

/* The configuration @ctx loaded and who named it. */
static void explain_config(const dsb_call *call, const call_context *ctx, const explain_sink *x)
{
	const char *file = dsb_config_file(ctx->cfg);
	const char *env = getenv("DSH_SANDBOX_CONFIG");
	const char *source = !file		 ? NULL
			     : call->config_path ? "--config"
			     : env && *env	 ? "DSH_SANDBOX_CONFIG"
						 : "XDG_CONFIG_HOME";
	if (file)
		explain_line(x, "config: %s (%s)", file,
			     strcmp(source, "XDG_CONFIG_HOME") == 0 ? "the default place" : source);
	else
		explain_line(x, "config: none (the built-in defaults)");
	explain_pair(x, "config", "file", file, "source", source);
}

/* Why @ctx's mode is the one in force (dsh-compat §2.2: explicit > session > default). */
static const char *mode_source(const dsb_call_request *req, const call_context *ctx, bool escalated,
			       const char **ret_reason)
{
	const char *env = getenv("DSH_PERMISSION_MODE");
	dsb_mode folded = _DSB_MODE_INVALID;
	if (escalated) {
		*ret_reason = "an approved escalation, for this call only";
		return "explicit";
	}
	if (req->mode != _DSB_MODE_INVALID) {
		*ret_reason = "--mode";
		return "explicit";
	}
	/* A fold that fails failed the call already: only a session with a switch gets here. */
	if (ctx->session && dsb_session_fold_mode(ctx->session, &folded, NULL) > 0) {
		*ret_reason = "the session's last mode switch, in its log";
		return "session";
	}
	if (env) {
		*ret_reason = "DSH_PERMISSION_MODE, over the configuration";
		return "environment";
	}
	if (dsb_config_file(ctx->cfg)) {
		*ret_reason = "the deployment default: sandbox-policy.mode of the configuration, "
			      "read-only when it sets none";
		return "configuration";
	}
	*ret_reason = "the built-in default";
	return "default";
}

/* Where @ctx's workspace root came from. */
static const char *workspace_source(const dsb_call_request *req, const call_context *ctx)
{
	if (ctx->session && dsb_session_cwd(ctx->session))
		return "the session's directory";
	if (req->workspace)
		return "--workspace";
	return dsb_config_workspace_root(ctx->cfg) ? "sandbox-policy.workspaceRoot"
						   : "the current directory";
}

void call_explain_policy(const dsb_call *call, const dsb_call_request *req, const call_context *ctx,
			 bool escalated)
{
	if (!call_explaining(call))
		return;
	explain_sink x = call_sink(call);
	explain_config(call, ctx, &x);
	const char *reason = NULL;
	const char *source = mode_source(req, ctx, escalated, &reason);
	const char *mode = dsb_mode_to_string(ctx->policy.mode);
	const char *ws_source = workspace_source(req, ctx);
	explain_line(&x, "mode: %s (%s)", mode, reason);
	explain_line(&x, "workspace: %s (%s)", ctx->policy.workspace_root, ws_source);
	/* A person's exec starts where they are unless told (call.c, run_exec()). */
	bool here = req->tool == DSB_TOOL_EXEC && !req->workdir;
	_cleanup_free_ char *cwd = here ? getcwd(NULL, 0) : NULL;
	const char *workdir = here ? cwd : ctx->workdir;
	explain_line(&x, "workdir: %s (%s)", workdir ? workdir : "?",
		     here	    ? "the current directory"
		     : req->workdir ? "--workdir"
				    : "the workspace");
	if (ctx->policy.session_id)
		explain_line(&x, "session: %s", ctx->policy.session_id);
	_cleanup_strv_free_ char **roots = NULL;
	(void)dsb_policy_writable_roots(&ctx->policy, &roots, NULL);
	strbuf sb = STRBUF_INIT;
	explain_words(&sb, roots);
	explain_line(&x, "writable: %s",
		     sb.buf && *sb.buf ? sb.buf
		     : ctx->policy.mode == DSB_MODE_DANGER_FULL_ACCESS
			     ? "everything (danger-full-access)"
			     : "nothing");
	strbuf_done(&sb);
	if (!x.json)
		return;
	jw_member_string(x.json, "mode", mode);
	jw_member_string(x.json, "modeSource", source);
	jw_member_string(x.json, "modeReason", reason);
	jw_member_string(x.json, "workspaceRoot", ctx->policy.workspace_root);
	jw_member_string(x.json, "workspaceSource", ws_source);
	jw_member_string(x.json, "workdir", workdir);
	jw_member_string(x.json, "sessionId", ctx->policy.session_id);
	jw_key(x.json, "writableRoots");
	jw_array_begin(x.json);
	for (size_t i = 0; roots && roots[i]; i++)
		jw_string(x.json, roots[i]);
	jw_array_end(x.json);
}

void call_explain_backend(const dsb_call *call, const dsb_call_request *req, call_context *ctx)
{
	if (!call_explaining(call))
		return;
	explain_sink x = call_sink(call);
	strbuf why = STRBUF_INIT;
	const char *backend = NULL;
	bool runs = req->tool == DSB_TOOL_BASH || req->tool == DSB_TOOL_EXEC;
	if (!runs)
		(void)strbuf_puts(&why, "a file operation is fenced by the policy, not sandboxed");
	else if (!ctx->provider)
		(void)strbuf_puts(&why, "danger-full-access: the command runs unconfined");
	else {
		backend = provider_choice(ctx->provider, &why);
		/* --backend made the chain that one backend alone. */
		if (req->backend >= 0 && backend) {
			strbuf_done(&why);
			(void)strbuf_puts(&why, "--backend");
		}
	}
	explain_line(&x, "backend: %s (%s)", backend ? backend : "none", why.buf ? why.buf : "");
	if (x.json) {
		jw_member_string(x.json, "backend", backend);
		jw_member_string(x.json, "backendReason", why.buf ? why.buf : "");
	}
	strbuf_done(&why);
}

void call_explain_confined(void *userdata, const dsb_exec_policy *policy, const dsb_confined *c)
{
	const call_explain_run *run = userdata;
	explain_sink x = call_sink(run->call);
	provider_explain(run->provider, policy, c, &x);
}
