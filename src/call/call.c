/* SPDX-License-Identifier: MIT */
/*
 * The dsb_call object and each tool's run. A call is prepared (prepare.c), then runs its bash
 * command or argv through the executor, or its write, edit or read through the fence, and its
 * outcome becomes the result the model sees (result.c). A cancellation reaches a running
 * command through an eventfd the executor polls, so no thread but the caller's ever touches the
 * call's children.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <dsb/fence.h>

#include "../exec/exec.h"
#include "call.h"

int dsb_call_new(const dsb_call_setup *setup, dsb_call **ret_call, dsb_error *reterr)
{
	if (!ret_call)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_call_new: missing argument");
	dsb_call *call = calloc(1, sizeof(*call));
	if (!call)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	atomic_init(&call->cancelled, false);
	call->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (call->cancel_fd < 0) {
		int r = dsb_fail_errno(reterr, DSB_E_IO, errno, "cannot make the call's eventfd");
		dsb_call_free(call);
		return r;
	}
	const char *from[] = {setup ? setup->config_path : NULL, setup ? setup->store_path : NULL,
			      setup ? setup->cache_dir : NULL};
	char **to[] = {&call->config_path, &call->store_path, &call->cache_dir};
	for (size_t i = 0; i < ELEMENTSOF(from); i++)
		if (from[i] && !(*to[i] = strdup(from[i]))) {
			dsb_call_free(call);
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
		}
	if (setup && setup->limits)
		call->limits = *setup->limits;
	if (setup && setup->writable_roots &&
	    !(call->writable_roots = strv_copy(setup->writable_roots))) {
		dsb_call_free(call);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	}
	*ret_call = call;
	return 0;
}

dsb_call *dsb_call_free(dsb_call *call)
{
	if (!call)
		return NULL;
	if (call->cancel_fd >= 0)
		close(call->cancel_fd);
	free(call->approval_note);
	free(call->config_path);
	free(call->store_path);
	free(call->cache_dir);
	strv_free(call->writable_roots);
	free(call);
	return NULL;
}

void dsb_call_set_answerer(dsb_call *call, dsb_answerer_fn answer, void *userdata)
{
	if (!call)
		return;
	call->answer = answer;
	call->answer_userdata = userdata;
}

void dsb_call_set_deferral(dsb_call *call, dsb_deferral_fn defer, void *userdata)
{
	if (!call)
		return;
	call->defer = defer;
	call->defer_userdata = userdata;
}

void dsb_call_set_on_run(dsb_call *call, dsb_call_on_run_fn on_run, void *userdata)
{
	if (!call)
		return;
	call->on_run = on_run;
	call->on_run_userdata = userdata;
}

void dsb_call_set_capture(dsb_call *call, bool capture)
{
	if (call)
		call->capture = capture;
}

void dsb_call_set_on_output(dsb_call *call, dsb_call_on_output_fn on_output, void *userdata)
{
	if (!call)
		return;
	call->on_output = on_output;
	call->on_output_userdata = userdata;
}

void dsb_call_set_observations(dsb_call *call, dsb_observations *obs)
{
	if (call)
		call->observations = obs;
}

const char *dsb_call_approval_note(const dsb_call *call)
{
	return call ? call->approval_note : NULL;
}

void dsb_call_cancel(dsb_call *call)
{
	if (!call)
		return;
	/* Only an atomic store and a write(2): safe from a signal handler, errno kept. */
	int saved = errno;
	atomic_store(&call->cancelled, true);
	uint64_t one = 1;
	ssize_t ignored = write(call->cancel_fd, &one, sizeof(one));
	(void)ignored;
	errno = saved;
}

/*
 * A command the cancellation stopped: the call fails as DSH's does (dsh-compat §6.7 step 8), and
 * the result keeps what the command did until then (run.aborted) for a caller who shows it.
 */
static int fail_aborted(dsb_error *reterr)
{
	return dsb_fail(reterr, DSB_E_ABORTED, "tool call aborted");
}

/*
 * What a bash or exec run is given of @call: its cancellation (a stopped command's output kept),
 * output callback and debug sink.
 */
static void run_options(dsb_call *call, call_explain_run *told, exec_opts *opts)
{
	opts->cancel_fd = call->cancel_fd;
	opts->on_output = call->on_output;
	opts->userdata = call->on_output_userdata;
	opts->keep_aborted = true;
	if (call_explaining(call)) {
		opts->on_confined = call_explain_confined;
		opts->confined_userdata = told;
	}
}

static int run_bash(dsb_call *call, const dsb_call_request *req, call_context *ctx,
		    dsb_call_result *res, dsb_error *reterr)
{
	dsb_run_request run = {
		.command = req->command,
		.workdir = ctx->workdir,
		.timeout_ms = req->timeout_ms,
		.dsh_env = ctx->dsh_env,
	};
	exec_opts opts = EXEC_OPTS_INIT;
	call_explain_run told = {call, ctx->provider};
	run_options(call, &told, &opts);
	int r = exec_run(ctx->provider, ctx->cfg, &ctx->policy, &run, &opts, &res->run, reterr);
	if (r >= 0 && res->run.aborted)
		return fail_aborted(reterr);
	/* After the run, the record is the log's: failing to append it must not lose the
	 * result the model is owed (the lines are in its text either way). */
	if (r >= 0)
		(void)call_log_refusals(ctx->session, req, req->command, &res->run, NULL);
	/* Ours is a confining executor: the escalation hint follows a denial (dsh-compat §6.8). */
	return r < 0 ? r : dsb_render_result(&res->run, true, &res->text, &res->text_len, reterr);
}

static int run_exec(dsb_call *call, const dsb_call_request *req, call_context *ctx,
		    dsb_call_result *res, dsb_error *reterr)
{
	/*
	 * A person's command starts where they are, unless told; it has no default timeout. A
	 * program's (capture) is the bash tool's run of an argv: its output collected, not passed
	 * through, and rendered as the bash tool renders it.
	 */
	dsb_run_request run = {
		.argv = req->argv,
		.workdir = req->workdir ? ctx->workdir : NULL,
		.timeout_ms = req->timeout_ms ? req->timeout_ms : UINT64_MAX,
		.dsh_env = ctx->dsh_env,
		.passthrough = !call->capture,
		.no_spill = true,
	};
	ctx->cfg->max_timeout_ms = UINT64_MAX;
	exec_opts opts = EXEC_OPTS_INIT;
	call_explain_run told = {call, ctx->provider};
	run_options(call, &told, &opts);
	int r = exec_run(ctx->provider, ctx->cfg, &ctx->policy, &run, &opts, &res->run, reterr);
	if (r >= 0 && res->run.aborted)
		return fail_aborted(reterr);
	if (r >= 0 && ctx->session && res->run.n_refused > 0) {
		_cleanup_free_ char *shown = call_shown_argv(req->argv);
		if (shown) /* as for bash: the result first */
			(void)call_log_refusals(ctx->session, req, shown, &res->run, NULL);
	}
	return r < 0 || !call->capture
		       ? r
		       : dsb_render_result(&res->run, true, &res->text, &res->text_len, reterr);
}

/*
 * The write tool's content read from @fd, up to the fence's limit. At most one byte past it is
 * read: *@ret_over says the input is longer, and the rest is never buffered.
 */
static int read_content(int fd, char **ret, size_t *ret_len, bool *ret_over, dsb_error *reterr)
{
	/* On the heap: a 64 KiB frame is probed page by page, resident in every call's thread. */
	const size_t chunk = (size_t)64 * 1024;
	_cleanup_free_ char *buf = malloc(chunk);
	if (!buf)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	strbuf sb = STRBUF_INIT;
	ssize_t n;
	int r = strbuf_append(&sb, "", 0);
	*ret_over = false;
	while (r >= 0) {
		size_t want = DSB_FS_MAX_BYTES + 1 - sb.len;
		n = read(fd, buf, want < chunk ? want : chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			strbuf_done(&sb);
			return dsb_fail_errno(reterr, DSB_E_IO, errno, "%s",
					      fd == STDIN_FILENO ? "reading the content from stdin"
								 : "reading the content");
		}
		if (n == 0)
			break;
		r = strbuf_append(&sb, buf, (size_t)n);
		if (r >= 0 && sb.len > DSB_FS_MAX_BYTES) {
			*ret_over = true;
			break;
		}
	}
	if (r < 0) {
		strbuf_done(&sb);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	}
	*ret_len = sb.len;
	*ret = strbuf_take(&sb);
	return 0;
}

/* FS_TOO_LARGE for an input cut at the limit, in the fence's text, after the fence's check. */
static int fail_input_too_large(const char *path, const call_context *ctx, dsb_error *reterr)
{
	const char *cwd = ctx->policy.workspace_root;
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};

	/* A denied write is denied whatever its size, as the fence decides it first. */
	int r = dsb_fence_check(&ctx->policy, cwd, path, reterr);
	if (r < 0)
		return r;
	r = dsb_fs_resolve_in(&ctx->policy, cwd, path, &t, reterr);
	if (r < 0)
		return r;
	r = dsb_fail(reterr, DSB_E_FS_TOO_LARGE,
		     "cannot write \"%s\": content exceeds the %zu-byte limit", t.display_path,
		     DSB_FS_MAX_BYTES);
	dsb_error_set_subject(reterr, t.display_path);
	return r;
}

/*
 * After an fs write or edit (@r: how it went): the repository the path lies in, if the call
 * made it, is disarmed (docs/design/paths.md), and the note follows DSH's text on a line of
 * its own.
 */
static int check_repo(call_context *ctx, const dsb_call_request *req, dsb_call_result *res, int r,
		      dsb_error *reterr)
{
	if (r < 0 || !ctx->policy.repos)
		return r;
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};
	if (dsb_fs_resolve_in(&ctx->policy, ctx->policy.workspace_root, req->path, &t, NULL) < 0)
		return 0;
	_cleanup_(strbuf_done) strbuf notes = STRBUF_INIT;
	char *text = NULL;
	int n = 0;
	if (policy_check_repos(&ctx->policy, t.target_key, &notes) < 0 ||
	    (notes.len && (n = asprintf(&text, "%s\n%s", res->text, notes.buf)) < 0))
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (text) {
		free(res->text);
		res->text = text;
		res->text_len = (size_t)n;
	}
	return 0;
}

static int run_write(dsb_call *call, const dsb_call_request *req, call_context *ctx,
		     dsb_call_result *res, dsb_error *reterr)
{
	_cleanup_free_ char *read = NULL;
	const char *content = req->content;
	size_t len = req->content_len;
	if (!content) {
		bool over = false;
		int r = read_content(req->content_fd, &read, &len, &over, reterr);
		if (r < 0)
			return r;
		if (over)
			return fail_input_too_large(req->path, ctx, reterr);
		content = read;
	}
	if (call->observations)
		return observe_write(call->observations, req, ctx, content, len, res, reterr);
	dsb_fs_write_result w = {0};
	int r = dsb_fence_write(&ctx->policy, ctx->policy.workspace_root, req->path, content, len,
				&w, reterr);
	if (r < 0)
		return r;
	res->path = TAKE_PTR(w.display_path);
	res->created = w.created;
	return call_result_write(res) < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory") : 0;
}

static int run_edit(dsb_call *call, const dsb_call_request *req, call_context *ctx,
		    dsb_call_result *res, dsb_error *reterr)
{
	if (call->observations)
		return observe_edit(call->observations, req, ctx, res, reterr);
	dsb_fs_edit_result e = {0};
	int r = dsb_fence_edit(&ctx->policy, ctx->policy.workspace_root, req->path, req->old_string,
			       req->new_string, req->replace_all, &e, reterr);
	if (r < 0)
		return r;
	res->path = TAKE_PTR(e.display_path);
	res->replacements = e.replacements;
	res->replaced_all = e.replaced_all;
	return call_result_edit(res) < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory") : 0;
}

static int run_read(dsb_call *call, const dsb_call_request *req, call_context *ctx,
		    dsb_call_result *res, dsb_error *reterr)
{
	if (call->observations)
		return observe_read(call->observations, req, ctx, res, reterr);
	const char *cwd = ctx->policy.workspace_root;
	int r = dsb_fence_read(&ctx->policy, cwd, req->path, &res->text, &res->text_len, reterr);
	if (r < 0)
		return r;
	/* The display path is path.resolve(cwd, path): lexical, as the fence names the file. */
	return path_lexical_resolve(cwd, req->path, &res->path) < 0
		       ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory")
		       : 0;
}

static int run_tool(dsb_call *call, const dsb_call_request *req, call_context *ctx,
		    dsb_call_result *res, dsb_error *reterr)
{
	switch (req->tool) {
	case DSB_TOOL_BASH:
		return run_bash(call, req, ctx, res, reterr);
	case DSB_TOOL_EXEC:
		return run_exec(call, req, ctx, res, reterr);
	case DSB_TOOL_WRITE:
		return check_repo(ctx, req, res, run_write(call, req, ctx, res, reterr), reterr);
	case DSB_TOOL_EDIT:
		return check_repo(ctx, req, res, run_edit(call, req, ctx, res, reterr), reterr);
	case DSB_TOOL_READ:
		return run_read(call, req, ctx, res, reterr);
	case _DSB_TOOL_MAX:
	case _DSB_TOOL_INVALID:
	default:
		break;
	}
	return dsb_fail(reterr, DSB_E_INVALID_ARGS, "invalid tool %d", (int)req->tool);
}

int dsb_call_run(dsb_call *call, const dsb_call_request *req, dsb_call_result *ret,
		 dsb_error *reterr)
{
	if (!call || !req || !ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_call_run: missing argument");
	if (call->ran)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_call_run: a call runs once");
	call->ran = true;

	dsb_call_result res = {.tool = req->tool};
	dsb_error err = {0};
	call_context ctx;
	int r = call_prepare(call, req, &ctx, &err);
	if (r >= 0) {
		res.prepared = true;
		if (call->on_run)
			call->on_run(call->on_run_userdata);
		r = atomic_load(&call->cancelled) ? fail_aborted(&err)
						  : run_tool(call, req, &ctx, &res, &err);
	}
	if (r < 0) {
		/*
		 * A failed call is a result: what the tool made on the way is dropped, but for
		 * what a command said before a cancellation stopped it.
		 */
		bool prepared = res.prepared;
		dsb_run_result stopped = {0};
		if (err.code == DSB_E_ABORTED && res.run.aborted) {
			stopped = res.run;
			res.run = (dsb_run_result){0};
		}
		dsb_call_result_done(&res);
		res = (dsb_call_result){.tool = req->tool, .prepared = prepared, .run = stopped};
		if (call_result_fail(&res, &err, &ctx.policy) < 0) {
			dsb_call_result_done(&res);
			/* No memory for the text: the call's own error is all there is to give. */
			call_context_done(&ctx);
			if (reterr)
				*reterr = err;
			return -(int)err.code;
		}
	}
	call_context_done(&ctx);
	*ret = res;
	return 0;
}

/* What an unconfined (danger-full-access) command gets, in the shape of a confined one's. */
static void explain_unconfined(const dsb_call *call, char *const *argv)
{
	explain_sink x = call_sink(call);
	strbuf sb = STRBUF_INIT;
	explain_words(&sb, argv);
	explain_line(&x, "command argv: %s", sb.buf ? sb.buf : "");
	strbuf_done(&sb);
	jw *w = x.json;
	jw_key(w, "enforcement");
	jw_null(w);
	jw_key(w, "argv");
	jw_array_begin(w);
	for (size_t i = 0; argv[i]; i++)
		jw_string(w, argv[i]);
	jw_array_end(w);
	jw_key(w, "rules");
	jw_null(w);
	jw_key(w, "hardening");
	jw_array_begin(w);
	jw_array_end(w);
	explain_pair(&x, "network", "access", "full", "enforcement", "unrestricted");
	jw_key(w, "limits");
	jw_null(w);
	jw_key(w, "protectedPaths");
	jw_array_begin(w);
	jw_array_end(w);
}

int dsb_call_explain(dsb_call *call, const dsb_call_request *req, char **ret_json,
		     dsb_error *reterr)
{
	if (!call || !req || !ret_json)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_call_explain: missing argument");
	if (req->tool != DSB_TOOL_EXEC)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_call_explain: only an exec call is explained");
	/* Explaining must not ask anyone anything, nor log an approval. */
	if (req->sandbox_permissions)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"an escalation is not explained: explain the wider --mode instead");
	if (call->ran)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_call_explain: a call runs once");
	call->ran = true;

	jw w = JW_INIT;
	jw_object_begin(&w);
	call->explain_json = &w;
	call->dry = true;
	call_context ctx;
	int r = call_prepare(call, req, &ctx, reterr);
	if (r >= 0 && !ctx.provider)
		explain_unconfined(call, req->argv);
	else if (r >= 0) {
		/* What exec_run() makes for an exec: the same provider, policy and argv. */
		dsb_confined c = {0};
		r = provider_confine(ctx.provider, &ctx.policy, req->argv, &c, NULL, reterr);
		if (r >= 0) {
			call_explain_run told = {call, ctx.provider};
			call_explain_confined(&told, &ctx.policy, &c);
		}
		dsb_confined_done(&c);
	}
	call_context_done(&ctx);
	call->explain_json = NULL;
	jw_object_end(&w);
	_cleanup_free_ char *json = NULL;
	if (jw_take(&w, &json) < 0 && r >= 0)
		r = dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (r < 0)
		return r;
	*ret_json = TAKE_PTR(json);
	return 0;
}
