/* SPDX-License-Identifier: MIT */
/* What `bash` and `exec` share: their options, the working directory and the DSH_* variables. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/core.h"
#include "../policy/policy.h"
#include "../approval/approval.h"
#include "answer.h"
#include "run-common.h"

int run_parse_option(int c, const char *arg, cli_global *global, run_args *args)
{
	switch (c) {
	case 's':
		args->policy.session = arg;
		return 1;
	case 'm':
		args->policy.mode = arg;
		return 1;
	case 'w':
		args->policy.workspace = arg;
		return 1;
	case 'd':
		args->workdir = arg;
		return 1;
	case 't':
		args->timeout = arg;
		return 1;
	case 'b':
		args->backend = arg;
		return 1;
	case 'c':
		global->config_path = arg;
		return 1;
	case 'p':
		args->sandbox_permissions = arg;
		return 1;
	case 'J':
		args->justification = arg;
		return 1;
	case 'i':
		args->call_id = arg;
		return 1;
	default:
		return 0;
	}
}

const struct option run_options[] = {
	{"session", required_argument, NULL, 's'},
	{"mode", required_argument, NULL, 'm'},
	{"workspace", required_argument, NULL, 'w'},
	{"workdir", required_argument, NULL, 'd'},
	{"timeout", required_argument, NULL, 't'},
	{"backend", required_argument, NULL, 'b'},
	{"config", required_argument, NULL, 'c'},
	{"json", no_argument, NULL, 'j'},
	{"sandbox-permissions", required_argument, NULL, 'p'},
	{"justification", required_argument, NULL, 'J'},
	{"call-id", required_argument, NULL, 'i'},
	{"help", no_argument, NULL, 'h'},
	{0},
};

int run_parse_timeout(const char *s, uint64_t *ret_ms, dsb_error *err)
{
	char *end = NULL;
	errno = 0;
	unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
	if (!end || *end || errno || v == 0) {
		/* The tool's text: the value as JSON, a number when it reads as one (spec §6.7). */
		char *num_end = NULL;
		(void)strtod(s, &num_end);
		bool numeric = *s && num_end && !*num_end;
		_cleanup_free_ char *quoted = NULL;
		if (!numeric && json_quote(s, strlen(s), &quoted) < 0)
			return dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
		return dsb_fail(err, DSB_E_INVALID_ARGS,
				"invalid timeoutMs: expected a positive number, got %s",
				numeric ? s : quoted);
	}
	*ret_ms = v;
	return 0;
}

int run_workdir(const char *base, const char *workdir, char **ret_dir)
{
	/* Absent: the workspace root; relative: against it; absolute: as given (spec §6.7). */
	if (!workdir)
		workdir = ".";
	if (workdir[0] == '/') {
		*ret_dir = strdup(workdir);
		return *ret_dir ? 0 : -ENOMEM;
	}
	return path_lexical_resolve(base, workdir, ret_dir);
}

int run_check_dir(const char *what, const char *path, dsb_error *err)
{
	struct stat st;
	if (!path)
		return 0;
	if (stat(path, &st) < 0)
		return dsb_fail_errno(err, DSB_E_INVALID_ARGS, errno, "%s %s", what, path);
	if (!S_ISDIR(st.st_mode))
		return dsb_fail_errno(err, DSB_E_INVALID_ARGS, ENOTDIR, "%s %s", what, path);
	return 0;
}

int run_dsh_env(dsb_session *session, char ***ret_env)
{
	/* DSH_HOME: $DSH_HOME, else ~/.dsh, made absolute (spec §1.4 shell-env). */
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

/* Appends turn/start or turn/end for @turn (a CLI call on an idle session is its own turn). */
static int append_turn(dsb_session *s, bool start, int64_t turn, dsb_error *err)
{
	char data[96];
	if (start)
		(void)snprintf(data, sizeof(data), "{\"turn\":%lld}", (long long)turn);
	else
		(void)snprintf(data, sizeof(data),
			       "{\"turn\":%lld,\"reason\":{\"kind\":\"completed\"}}",
			       (long long)turn);
	return dsb_session_append(s, start ? "turn/start" : "turn/end", data, NULL, err);
}

/*
 * Steps 3-4 of spec §6.7: approve the escalation (before anything runs), then run this one
 * call under the granted mode, keeping the standing root.
 */
static int escalate(const run_args *args, run_context *ctx, dsb_error *err)
{
	dsb_escalation e = {
		.requested = dsb_mode_from_string(args->sandbox_permissions),
		.justification = args->justification,
		.effective = ctx->policy.mode,
		.subject = args->escalation_subject ? args->escalation_subject : "command",
		.tool_name = args->tool_name,
		.call_id = args->call_id,
		.subject_text = args->subject,
	};
	bool open = true;
	int64_t last = 0;
	int r = 0;
	/* Fail closed on the wider-check first, before any turn or audit event. */
	if (ctx->session && dsb_escalation_is_wider(e.effective, e.requested)) {
		r = approval_turn_state(ctx->session, &open, &last, err);
		if (r >= 0 && !open) {
			r = append_turn(ctx->session, true, last + 1, err);
			if (r >= 0)
				ctx->opened_turn = last + 1;
		}
	}
	if (r < 0)
		return r;
	cli_answerer a = {
		.argv = ctx->cfg->answerer,
		.timeout_ms = ctx->timeout_ms ? ctx->timeout_ms : ctx->cfg->timeout_ms,
	};
	dsb_mode granted;
	r = approval_escalate(ctx->session, ctx->cfg, &e, cli_answer, &a, &granted, err);
	if (r < 0)
		return r;
	ctx->policy.mode = granted;
	return 0;
}

int run_prepare(cli_global *global, const run_args *args, run_context *ctx, dsb_error *err)
{
	*ctx = (run_context){0};
	/*
	 * Our memory and environment hold what the command must not see (the scrubbed variables,
	 * the session): not dumpable, /proc/PID/{environ,mem,fd} and ptrace need CAP_SYS_PTRACE,
	 * which no confined command has. (Landlock and bwrap's PID namespace refuse them too.)
	 */
	(void)prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);
	if (args->timeout && run_parse_timeout(args->timeout, &ctx->timeout_ms, err) < 0)
		return -DSB_E_INVALID_ARGS;
	dsb_backend backend = _DSB_BACKEND_INVALID;
	if (args->backend && (backend = dsb_backend_from_string(args->backend)) < 0)
		return dsb_fail(err, DSB_E_INVALID_ARGS,
				"--backend: invalid backend \"%s\" (accepted: %s)", args->backend,
				policy_backends_accepted());

	/* The bash tool's order (spec §6.7 step 1): the escalation pairing after the timeout. */
	int r = dsb_escalation_validate(args->sandbox_permissions, args->justification, err);
	if (r < 0)
		return r;
	r = cli_resolve_policy(global, &args->policy, &ctx->cfg, &ctx->policy, &ctx->store,
			       &ctx->session, err);
	if (r < 0)
		return r;
	if (backend >= 0) {
		/* One backend, as asked: the chain is that backend alone. */
		ctx->cfg->backends[0] = backend;
		ctx->cfg->n_backends = 1;
	}
	if (args->sandbox_permissions) {
		r = escalate(args, ctx, err);
		if (r < 0)
			return r;
	}
	if (run_workdir(ctx->policy.workspace_root, args->workdir, &ctx->workdir) < 0 ||
	    run_dsh_env(ctx->session, &ctx->dsh_env) < 0)
		return dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
	/*
	 * Where nothing can run is the caller's mistake, named, before any sandbox is tried: the
	 * workspace whenever it plays a part (a confined mode binds or grants it; without
	 * --workdir the command starts there), and the workdir given. danger-full-access with a
	 * workdir has no use for the workspace (a replayed log's cwd may be a placeholder).
	 */
	r = 0;
	if (ctx->policy.mode != DSB_MODE_DANGER_FULL_ACCESS || !args->workdir)
		r = run_check_dir("workspace", ctx->policy.workspace_root, err);
	if (r >= 0 && args->workdir)
		r = run_check_dir("workdir", ctx->workdir, err);
	if (r < 0)
		return r;
	if (ctx->policy.mode != DSB_MODE_DANGER_FULL_ACCESS) {
		_cleanup_free_ char *cache = cli_cache_dir(global);
		r = dsb_provider_new(ctx->cfg, cache, &ctx->provider, err);
	}
	return r;
}

void run_context_done(run_context *ctx)
{
	if (ctx->opened_turn > 0 && ctx->session)
		(void)append_turn(ctx->session, false, ctx->opened_turn, NULL);
	dsb_provider_free(ctx->provider);
	dsb_session_free(ctx->session);
	dsb_store_free(ctx->store);
	dsb_exec_policy_done(&ctx->policy);
	dsb_config_free(ctx->cfg);
	strv_free(ctx->dsh_env);
	free(ctx->workdir);
	*ctx = (run_context){0};
}
