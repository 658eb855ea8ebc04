/* SPDX-License-Identifier: MIT */
/*
 * A call's preparation, in DSH's order (dsh-compat §6.7 steps 1-6, §7.4): the tool's argument
 * checks and the escalation pairing; the policy; a one-shot escalation approved (before anything
 * runs, inside a turn of the session); the working directory and the DSH_* variables; the
 * directories checked; the provider that will confine the command.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../approval/approval.h"
#include "call.h"

/*
 * The most bytes one argument of execve() may hold, its NUL included: the kernel's MAX_ARG_STRLEN,
 * 32 pages. A longer one is refused with E2BIG whoever runs it (bwrap, or bash -c under Landlock),
 * which says nothing of the sandbox: it is the caller's argument that cannot be passed.
 */
static size_t max_argument_bytes(void)
{
	long page = sysconf(_SC_PAGESIZE);
	return (size_t)(page > 0 ? page : 4096) * 32;
}

int call_check_arguments(const dsb_call_request *req, dsb_error *reterr)
{
	size_t most = max_argument_bytes() - 1, len;
	switch (req->tool) {
	case DSB_TOOL_BASH:
		if (!req->command || js_blank(req->command))
			return dsb_fail(reterr, DSB_E_INVALID_ARGS,
					"invalid command: expected a non-empty string");
		/* Beyond DSH, whose spawn fails as a runner failure: a hint the model can use. */
		if ((len = strlen(req->command)) > most)
			return dsb_fail(
				reterr, DSB_E_INVALID_ARGS,
				"invalid command: %zu bytes, more than the %zu one argument "
				"may hold (the kernel's MAX_ARG_STRLEN); write the script to a "
				"file and run the file",
				len, most);
		return 0;
	case DSB_TOOL_EXEC:
		/* An empty argv[0] is the executor's to refuse, as for any argv it is given. */
		if (!req->argv || !req->argv[0])
			return dsb_fail(
				reterr, DSB_E_INVALID_ARGS,
				"invalid argv: expected a non-empty program name at argv[0]");
		for (size_t i = 0; req->argv[i]; i++)
			if ((len = strlen(req->argv[i])) > most)
				return dsb_fail(
					reterr, DSB_E_INVALID_ARGS,
					"invalid argv: argument %zu is %zu bytes, more than "
					"the %zu one argument may hold (the kernel's "
					"MAX_ARG_STRLEN)",
					i, len, most);
		return 0;
	case DSB_TOOL_WRITE:
	case DSB_TOOL_EDIT:
	case DSB_TOOL_READ:
		break;
	case _DSB_TOOL_MAX:
	case _DSB_TOOL_INVALID:
	default:
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "invalid tool %d", (int)req->tool);
	}
	if (!req->path || js_blank(req->path))
		return dsb_fail(reterr, DSB_E_FS_NOT_FOUND, "file_path must be a non-empty string");
	if (req->tool == DSB_TOOL_WRITE && !req->content && req->content_fd < 0)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "content must be a string");
	if (req->tool == DSB_TOOL_EDIT) {
		if (!req->old_string || !*req->old_string)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS,
					"old_string must be a non-empty string");
		if (!req->new_string)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS, "new_string must be a string");
		if (strcmp(req->old_string, req->new_string) == 0)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS,
					"old_string and new_string must differ");
	}
	/* DSH's read tool takes no escalation: one given here would be silently ineffective. */
	if (req->tool == DSB_TOOL_READ && (req->sandbox_permissions || req->justification))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"reads are not escalated: nothing to approve");
	return 0;
}

/* The command's working directory (dsh-compat §6.7 step 5). -ENOMEM. */
static int resolve_workdir(const char *base, const char *workdir, char **ret_dir)
{
	/* Absent: the workspace root; relative: against it; absolute: as given (dsh-compat §6.7).
	 */
	if (!workdir)
		workdir = ".";
	if (workdir[0] == '/') {
		*ret_dir = strdup(workdir);
		return *ret_dir ? 0 : -ENOMEM;
	}
	return path_lexical_resolve(base, workdir, ret_dir);
}

/* DSB_E_INVALID_ARGS naming @what and @path unless @path is a directory (NULL is fine). */
static int check_dir(const char *what, const char *path, dsb_error *reterr)
{
	struct stat st;
	if (!path)
		return 0;
	if (stat(path, &st) < 0)
		return dsb_fail_errno(reterr, DSB_E_INVALID_ARGS, errno, "%s %s", what, path);
	if (!S_ISDIR(st.st_mode))
		return dsb_fail_errno(reterr, DSB_E_INVALID_ARGS, ENOTDIR, "%s %s", what, path);
	return 0;
}

/* The managed DSH_* variables (dsh-compat §6.9), key-sorted. -errno. */
static int dsh_env(dsb_session *session, char ***ret_env)
{
	/* DSH_HOME: $DSH_HOME, else ~/.dsh, made absolute (dsh-compat §1.4 shell-env). */
	const char *home = getenv("DSH_HOME");
	_cleanup_free_ char *fallback = NULL, *cwd = NULL, *dsh_home = NULL;
	if (!home || !*home) {
		const char *h = getenv("HOME");
		if (asprintf(&fallback, "%s/.dsh", h && *h ? h : "") < 0)
			return -ENOMEM;
		home = fallback;
	}
	if (home[0] != '/' && !(cwd = getcwd(NULL, 0)))
		return -errno;
	int r = path_lexical_resolve(cwd ? cwd : "/", home, &dsh_home);
	if (r < 0)
		return r;

	/* Key-sorted, as DSH hands them over. */
	char **env = NULL;
	char *entry = NULL;
	r = asprintf(&entry, "DSH_HOME=%s", dsh_home) < 0 ? -ENOMEM : strv_consume(&env, entry);
	if (r >= 0 && session) {
		r = asprintf(&entry, "DSH_SESSION_ID=%s", dsb_session_id(session)) < 0
			    ? -ENOMEM
			    : strv_consume(&env, entry);
		if (r >= 0)
			r = asprintf(&entry, "DSH_SESSION_JSONL=%s", dsb_session_path(session)) < 0
				    ? -ENOMEM
				    : strv_consume(&env, entry);
	}
	if (r >= 0)
		r = strv_push(&env, "DSH_SHELL=1");
	if (r < 0) {
		strv_free(env);
		return r;
	}
	/* DSH_HOME < DSH_SESSION_ID < DSH_SESSION_JSONL < DSH_SHELL: already in order. */
	*ret_env = env;
	return 0;
}

/* Appends turn/start or turn/end for @turn (a call on an idle session is its own turn). */
static int append_turn(dsb_session *s, bool start, int64_t turn, dsb_error *reterr)
{
	_cleanup_free_ char *data = NULL;
	jw w = JW_INIT;
	jw_object_begin(&w);
	jw_member_int(&w, "turn", turn);
	if (!start) {
		jw_key(&w, "reason");
		jw_object_begin(&w);
		jw_member_string(&w, "kind", "completed");
		jw_object_end(&w);
	}
	jw_object_end(&w);
	if (jw_take(&w, &data) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return dsb_session_append(s, start ? "turn/start" : "turn/end", data, NULL, reterr);
}

/* Who is asked: approval.answerer's program when configured, else the call's callback. */
typedef struct answer_route {
	char *const *program;
	int cancel_fd;
	dsb_answerer_fn callback;
	void *userdata;
	bool asked; /* out: the policy let the question through to someone */
	char *why;  /* out: what went wrong with the program, for the person */
} answer_route;

static int answer(const dsb_approval_request *req, void *userdata, dsb_approval_outcome *ret)
{
	answer_route *a = userdata;
	a->asked = true;
	if (a->program && a->program[0])
		return approval_answer_command(a->program, req, req->timeout_ms, a->cancel_fd, ret,
					       &a->why);
	if (a->callback)
		return a->callback(req, a->userdata, ret);
	*ret = DSB_OUTCOME_UNAVAILABLE;
	return 0;
}

/*
 * Why an escalation @route took was refused without anyone deciding it, for the person (the
 * model reads DSH's words, which under `never` are "the user rejected ..."): a new string in
 * *@ret_note, or NULL.
 */
static void note_refusal(answer_route *route, const dsb_escalation *e, dsb_session *session,
			 const dsb_error *err, char **ret_note)
{
	if (err->code != DSB_E_ESCALATION_REFUSED)
		return;
	if (route->why) {
		*ret_note = route->why;
		route->why = NULL;
	} else if (!route->asked && session && dsb_escalation_is_wider(e->effective, e->requested))
		/* Past the checks, only the gate answers without asking (dsh-compat §8.3 3b). */
		*ret_note = strdup("the approval policy is never: the escalation was refused "
				   "without asking anyone");
}

char *call_shown_argv(char *const *argv)
{
	strbuf shown = STRBUF_INIT;
	for (size_t i = 0; argv[i]; i++)
		(void)strbuf_printf(&shown, i > 0 ? " %s" : "%s", argv[i]);
	return shown.buf ? strbuf_take(&shown) : strdup(argv[0]);
}

/*
 * Steps 3-4 of dsh-compat §6.7: approve the escalation (before anything runs), then run this one
 * call under the granted mode, keeping the standing root.
 */
static int escalate(dsb_call *call, const dsb_call_request *req, call_context *ctx,
		    dsb_error *reterr)
{
	bool fs = req->tool != DSB_TOOL_BASH && req->tool != DSB_TOOL_EXEC;
	_cleanup_free_ char *shown = req->tool == DSB_TOOL_EXEC ? call_shown_argv(req->argv) : NULL;
	if (req->tool == DSB_TOOL_EXEC && !shown)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	dsb_escalation e = {
		.requested = dsb_mode_from_string(req->sandbox_permissions),
		.justification = req->justification,
		.effective = ctx->policy.mode,
		.subject = fs ? "operation" : "command",
		.tool_name = dsb_tool_to_string(req->tool),
		.call_id = req->call_id,
		.subject_text = fs	? req->path
				: shown ? shown
					: req->command,
		.answer_timeout_ms = req->timeout_ms ? req->timeout_ms : ctx->cfg->timeout_ms,
	};
	/* What the call this one retries was refused, for the person asked (not for fs tools:
	 * the fence names its refusal in the model's text). */
	_cleanup_free_ char *refused = NULL;
	if (!fs &&
	    call_refused_before(ctx->session, e.tool_name, e.subject_text, &refused, NULL) < 0)
		refused = NULL;
	e.refused = refused;
	bool open = true;
	int64_t last = 0;
	int r = 0;
	/* The caller asks outside the call, when it would be the one asked: nothing is logged. */
	if (call->defer && !(ctx->cfg->answerer && ctx->cfg->answerer[0])) {
		r = approval_defer(ctx->session, ctx->cfg, &e, call->defer, call->defer_userdata,
				   reterr);
		if (r < 0)
			return r;
	}
	/* Fail closed on the wider-check first, before any turn or audit event. */
	if (ctx->session && dsb_escalation_is_wider(e.effective, e.requested)) {
		r = approval_turn_state(ctx->session, &open, &last, reterr);
		if (r >= 0 && !open) {
			r = append_turn(ctx->session, true, last + 1, reterr);
			if (r >= 0)
				ctx->opened_turn = last + 1;
		}
	}
	if (r < 0)
		return r;
	answer_route route = {
		.program = ctx->cfg->answerer,
		.cancel_fd = call->cancel_fd,
		.callback = call->answer,
		.userdata = call->answer_userdata,
	};
	dsb_mode granted;
	r = approval_escalate(ctx->session, ctx->cfg, &e, answer, &route, &granted, reterr);
	if (r < 0 && reterr)
		note_refusal(&route, &e, ctx->session, reterr, &call->approval_note);
	free(route.why);
	if (r < 0 || granted == ctx->policy.mode)
		return r;
	/*
	 * The granted mode's own policy, from the same root: what is protected and which extra
	 * roots are writable depend on the mode (a read-only session protects nothing writable).
	 */
	dsb_call_setup setup = call_setup(call);
	dsb_config *cfg = NULL;
	dsb_exec_policy granted_policy = {0};
	r = call_resolve(&setup, req->session, granted, req->workspace, &cfg, &granted_policy, NULL,
			 NULL, reterr);
	dsb_config_free(cfg);
	if (r < 0)
		return r;
	dsb_exec_policy_done(&ctx->policy);
	ctx->policy = granted_policy;
	return 0;
}

/*
 * A root beneath the host's /tmp (a workspace there) is bound over the session's /tmp, on a
 * directory of the same name in it. We make those directories, refusing a symlink or a file a
 * command left in their place: followed, it would put the root, and its protected paths,
 * somewhere else in the sandbox.
 */
static int tmp_mountpoints(const char *dir, char **roots, const char **ret_root)
{
	_cleanup_close_ int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (char **root = roots; *root; root++) {
		if (strcmp(*root, "/tmp") == 0 || !path_is_under(*root, "/tmp"))
			continue;
		int r = mkdir_beneath(fd, *root + strlen("/tmp/"), 0755);
		if (r < 0) {
			*ret_root = *root;
			return r;
		}
	}
	return 0;
}

/*
 * The session's private /tmp, unless it lies in a writable root (a store in the workspace,
 * read-only there): then each call gets a fresh one, as an agentless call does. @dry: named,
 * not made.
 */
static int session_tmp(call_context *ctx, bool dry, dsb_error *reterr)
{
	_cleanup_free_ char *dir = NULL;
	int r = dsb_session_tmp_dir(ctx->store, ctx->session, false, &dir, reterr);
	if (r < 0)
		return r;
	_cleanup_strv_free_ char **roots = NULL;
	if (dsb_policy_writable_roots(&ctx->policy, &roots, reterr) < 0)
		return -DSB_E_NO_MEMORY;
	for (char **root = roots; *root; root++)
		if (strcmp(*root, "/tmp") != 0 && path_is_under(dir, *root))
			return 0;
	/* Explained, not run: the directory is named as the run would use it, and not made. */
	if (dry) {
		ctx->policy.tmp_dir = TAKE_PTR(dir);
		return 0;
	}
	free(dir);
	dir = NULL;
	r = dsb_session_tmp_dir(ctx->store, ctx->session, true, &dir, reterr);
	if (r < 0)
		return r;
	/* The workspace is shown in read-only too. */
	if (strv_push(&roots, ctx->policy.workspace_root) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	const char *root = "/tmp";
	r = tmp_mountpoints(dir, roots, &root);
	if (r < 0) {
		/* A command of the session left something in the way: nothing runs past it. */
		char detail[PATH_MAX + 128];
		(void)snprintf(detail, sizeof(detail),
			       "the session's /tmp has no directory for %s to be shown at: %s",
			       root, strerror(-r));
		return policy_fail_unavailable(reterr, ctx->policy.mode, detail);
	}
	ctx->policy.tmp_dir = TAKE_PTR(dir);
	return 0;
}

int call_prepare(dsb_call *call, const dsb_call_request *req, call_context *ctx, dsb_error *reterr)
{
	*ctx = (call_context){0};
	/*
	 * Our memory and environment hold what the command must not see (the scrubbed variables,
	 * the session): not dumpable, /proc/PID/{environ,mem,fd} and ptrace need CAP_SYS_PTRACE,
	 * which no confined command has. (Landlock and bwrap's PID namespace refuse them too.)
	 */
	(void)prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);
	if (atomic_load(&call->cancelled))
		return dsb_fail(reterr, DSB_E_ABORTED, "tool call aborted");
	int r = call_check_arguments(req, reterr);
	if (r < 0)
		return r;
	if (req->mode < _DSB_MODE_INVALID || req->mode >= _DSB_MODE_MAX ||
	    req->backend < _DSB_BACKEND_INVALID || req->backend >= _DSB_BACKEND_MAX ||
	    req->network < _DSB_NETWORK_ACCESS_INVALID || req->network >= _DSB_NETWORK_ACCESS_MAX)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"invalid mode, backend or network access");
	/* The bash tool's order (dsh-compat §6.7 step 1): the escalation pairing after the timeout.
	 */
	r = dsb_escalation_validate(req->sandbox_permissions, req->justification, reterr);
	if (r < 0)
		return r;
	dsb_call_setup setup = call_setup(call);
	r = call_resolve(&setup, req->session, req->mode, req->workspace, &ctx->cfg, &ctx->policy,
			 &ctx->store, &ctx->session, reterr);
	if (r < 0)
		return r;
	if (req->backend >= 0) {
		/* One backend, as asked: the chain is that backend alone. */
		ctx->cfg->backends[0] = req->backend;
		ctx->cfg->n_backends = 1;
	}
	/* The caller's access level (--network) over the configuration's. */
	if (req->network != _DSB_NETWORK_ACCESS_INVALID) {
		r = dsb_config_set_network_access(ctx->cfg, req->network, reterr);
		if (r < 0)
			return r;
	}
	dsb_mode resolved = ctx->policy.mode;
	if (req->sandbox_permissions)
		r = escalate(call, req, ctx, reterr);
	/* A cancellation while the answer was awaited wins over the answer (dsh-compat §6.5). */
	if (atomic_load(&call->cancelled))
		return dsb_fail(reterr, DSB_E_ABORTED, "tool call aborted");
	if (r < 0)
		return r;
	if (resolve_workdir(ctx->policy.workspace_root, req->workdir, &ctx->workdir) < 0 ||
	    dsh_env(ctx->session, &ctx->dsh_env) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	call_explain_policy(call, req, ctx, ctx->policy.mode != resolved);
	/*
	 * Where nothing can run is the caller's mistake, named, before any sandbox is tried: the
	 * workspace whenever it plays a part (a confined mode binds or grants it; without a
	 * workdir the command starts there), and the workdir given. danger-full-access with a
	 * workdir has no use for the workspace (a replayed log's cwd may be a placeholder).
	 */
	r = 0;
	if (ctx->policy.mode != DSB_MODE_DANGER_FULL_ACCESS || !req->workdir)
		r = check_dir("workspace", ctx->policy.workspace_root, reterr);
	if (r >= 0 && req->workdir)
		r = check_dir("workdir", ctx->workdir, reterr);
	if (r < 0)
		return r;
	if (ctx->policy.mode != DSB_MODE_DANGER_FULL_ACCESS)
		r = dsb_provider_new(ctx->cfg, call->cache_dir, &ctx->provider, reterr);
	if (r >= 0 && ctx->provider && call->dry)
		provider_set_dry(ctx->provider);
	if (r >= 0)
		call_explain_backend(call, req, ctx);
	/*
	 * A session's calls share its private /tmp (docs/design/paths.md), where the backend
	 * can show one; a workspace that is /tmp keeps the host's.
	 */
	if (r >= 0 && ctx->provider && ctx->session &&
	    strcmp(ctx->policy.workspace_root, "/tmp") != 0 &&
	    dsb_provider_session_tmp(ctx->provider))
		r = session_tmp(ctx, call->dry, reterr);
	return r;
}

void call_context_end_turn(call_context *ctx)
{
	if (ctx->opened_turn > 0 && ctx->session)
		(void)append_turn(ctx->session, false, ctx->opened_turn, NULL);
	ctx->opened_turn = 0;
}

void call_context_done(call_context *ctx)
{
	call_context_end_turn(ctx);
	dsb_provider_free(ctx->provider);
	dsb_session_free(ctx->session);
	dsb_store_free(ctx->store);
	dsb_exec_policy_done(&ctx->policy);
	dsb_config_free(ctx->cfg);
	strv_free(ctx->dsh_env);
	free(ctx->workdir);
	*ctx = (call_context){0};
}
