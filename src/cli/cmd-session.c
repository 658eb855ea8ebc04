/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox session: create a session, list and inspect them, print a log, and switch a
 * session's mode or approval policy by appending the event DSH appends (dsh-compat §3.4).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../core/core.h"
#include "../approval/approval.h"
#include "../session/session.h"
#include "cli.h"

typedef struct session_args {
	const char *verb;
	const char *cwd;
	const char *older_than; /* session prune --older-than DAYS */
	bool json;
	char **positional; /* after the verb and options */
} session_args;

static size_t arity(const cli_verb *verb)
{
	size_t n = 0;
	while (n < CLI_MAX_OPERANDS && verb->operands[n] != CLI_KIND_NONE)
		n++;
	return n;
}

static int check_args(const cli_args *a, session_args *args)
{
	const cli_command *cmd = a->cmd;
	*args = (session_args){
		.verb = a->verb->name,
		.cwd = a->opt[CLI_OPT_CWD],
		.json = a->opt[CLI_OPT_JSON] != NULL,
		.positional = a->argv,
	};
	if (args->cwd && strcmp(args->verb, "new") != 0)
		return -cli_usage_error(cmd, "--cwd goes with 'session new'");
	args->older_than = a->opt[CLI_OPT_OLDER_THAN];
	if (args->older_than && strcmp(args->verb, "prune") != 0)
		return -cli_usage_error(cmd, "--older-than goes with 'session prune'");
	if (!args->older_than && strcmp(args->verb, "prune") == 0)
		return -cli_usage_error(cmd, "'session prune' needs --older-than DAYS");
	/* An empty path names no directory: a usage error, not the current one. */
	if (args->cwd && !*args->cwd)
		return -cli_usage_error(cmd, "--cwd: empty path");
	size_t n = arity(a->verb);
	if ((size_t)a->argc != n)
		return -cli_usage_error(cmd, "'session %s' takes %zu argument%s, got %d",
					args->verb, n, n == 1 ? "" : "s", a->argc);
	return 0;
}

static int open_session(const cli_global *global, const char *name, dsb_store **ret_store,
			dsb_session **ret_session, dsb_error *err)
{
	int r = dsb_store_open(global->store_path, ret_store, err);
	if (r >= 0)
		r = dsb_session_open(*ret_store, name, ret_session, err);
	return r;
}

/* The directory a new session works in: canonical, and it must exist. */
static int session_cwd(const char *given, char **ret_cwd, dsb_error *err)
{
	_cleanup_free_ char *resolved = NULL;
	int r = path_resolve_root(given ? given : ".", &resolved);
	if (r < 0)
		return dsb_fail_errno(err, DSB_E_INVALID_ARGS, -r, "--cwd '%s'",
				      given ? given : ".");
	struct stat st;
	if (stat(resolved, &st) < 0)
		return dsb_fail_errno(err, DSB_E_INVALID_ARGS, errno, "--cwd '%s'", resolved);
	if (!S_ISDIR(st.st_mode))
		return dsb_fail_errno(err, DSB_E_INVALID_ARGS, ENOTDIR, "--cwd '%s'", resolved);
	*ret_cwd = TAKE_PTR(resolved);
	return 0;
}

int cli_session_new(const cli_global *global, const char *cwd_arg, dsb_store **ret_store,
		    dsb_session **ret_session, dsb_error *err)
{
	_cleanup_free_ char *cwd = NULL;
	dsb_config *cfg = NULL;
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	const dsb_preset *def = NULL;
	int r = session_cwd(cwd_arg, &cwd, err);
	/* A configuration with no preset to pin fails before any session exists. */
	if (r >= 0)
		r = cli_load_config(global, &cfg, err);
	if (r >= 0)
		r = presets_default(cfg, &def, err);
	if (r >= 0)
		r = dsb_store_open(global->store_path, &store, err);
	if (r >= 0)
		r = dsb_session_create(store, cwd, &session, err);
	/* Pinned before the id is shown (dsh-compat §8.6); a failure here leaves the log behind. */
	if (r >= 0 && (r = presets_pin(session, cfg, err)) < 0)
		dsb_error_prefix(err, "session %s: pinning the default preset",
				 dsb_session_id(session));
	dsb_config_free(cfg);
	if (r < 0) {
		dsb_session_free(session);
		dsb_store_free(store);
		return r;
	}
	*ret_store = store;
	*ret_session = session;
	return 0;
}

static int cmd_new(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	int r = cli_session_new(global, args->cwd, &store, &session, err);
	if (r >= 0 && args->json) {
		jw w = JW_INIT;
		jw_object_begin(&w);
		jw_member_string(&w, "id", dsb_session_id(session));
		/* The cwd as the header records it (canonical). */
		jw_member_string(&w, "cwd", dsb_session_cwd(session));
		jw_member_string(&w, "path", dsb_session_path(session));
		jw_object_end(&w);
		if (jw_print(&w) < 0)
			r = dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
	} else if (r >= 0)
		puts(dsb_session_id(session));
	dsb_session_free(session);
	dsb_store_free(store);
	return r;
}

typedef struct listed {
	char *id, *cwd, *path;
	uint64_t created_at;
} listed;

typedef struct listing {
	listed *v;
	size_t n;
} listing;

static int collect(const dsb_session_info *info, void *userdata)
{
	listing *l = userdata;
	listed *grown = reallocarray(l->v, l->n + 1, sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	l->v = grown;
	listed *e = &l->v[l->n++];
	*e = (listed){
		.id = strdup(info->id),
		.cwd = info->cwd ? strdup(info->cwd) : NULL,
		.path = strdup(info->path),
		.created_at = info->created_at,
	};
	return e->id && e->path && (!info->cwd || e->cwd) ? 0 : -ENOMEM;
}

static int by_creation(const void *a, const void *b)
{
	const listed *x = a, *y = b;
	if (x->created_at != y->created_at)
		return x->created_at < y->created_at ? -1 : 1;
	return strcmp(x->id, y->id);
}

static int print_list_json(const listing *l)
{
	jw w = JW_INIT;
	jw_array_begin(&w);
	for (size_t i = 0; i < l->n; i++) {
		const listed *e = &l->v[i];
		jw_object_begin(&w);
		jw_member_string(&w, "id", e->id);
		jw_member_string(&w, "cwd", e->cwd);
		jw_member_uint(&w, "createdAt", e->created_at);
		jw_member_string(&w, "path", e->path);
		jw_object_end(&w);
	}
	jw_array_end(&w);
	return jw_print(&w);
}

static int cmd_list(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_store *store = NULL;
	listing l = {0};
	int r = dsb_store_open(global->store_path, &store, err);
	if (r >= 0)
		r = dsb_store_list(store, collect, &l, err);
	if (r >= 0) {
		if (l.n)
			qsort(l.v, l.n, sizeof(*l.v), by_creation);
		if (args->json && print_list_json(&l) < 0)
			r = dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
		for (size_t i = 0; !args->json && i < l.n; i++)
			printf("%s\t%s\n", l.v[i].id, l.v[i].cwd ? l.v[i].cwd : "-");
	}
	for (size_t i = 0; i < l.n; i++) {
		free(l.v[i].id);
		free(l.v[i].cwd);
		free(l.v[i].path);
	}
	free(l.v);
	dsb_store_free(store);
	return r;
}

/* What `session show` reports: each knob with where its value came from. */
typedef struct shown {
	dsb_mode mode;
	bool mode_from_session;
	dsb_approval_policy approval;
	bool approval_from_session;
	char *preset;
	dsb_exec_policy policy;
	char **roots;
} shown;

static int gather(const cli_global *global, dsb_session *session, shown *s, dsb_error *err)
{
	dsb_config *cfg = NULL;
	dsb_policy *policy = NULL;
	dsb_mode folded = _DSB_MODE_INVALID;
	int r = cli_load_config(global, &cfg, err);
	if (r >= 0)
		r = dsb_policy_new(cfg, &policy, err);
	if (r >= 0)
		r = dsb_session_fold_mode(session, &folded, err);
	if (r >= 0) {
		s->mode_from_session = r > 0;
		r = dsb_session_fold_approval(session, &s->approval, err);
	}
	if (r >= 0) {
		s->approval_from_session = r > 0;
		/* fold ?? config ?? ask (dsh-compat §3.4); the config's default is ask. */
		if (!s->approval_from_session)
			s->approval = dsb_config_approval_policy(cfg);
		/* What `permission` calls current (dsh-compat §8.6 derive): one answer to one
		 * question, whatever the last switch was. */
		r = presets_current(session, cfg, &s->preset, err);
	}
	if (r >= 0)
		r = dsb_session_resolve(session, policy, _DSB_MODE_INVALID, &s->policy, err);
	if (r >= 0) {
		s->mode = s->policy.mode;
		r = dsb_policy_writable_roots(&s->policy, &s->roots, err);
	}
	dsb_policy_free(policy);
	dsb_config_free(cfg);
	return r;
}

static int print_show_json(dsb_session *session, const shown *s)
{
	jw w = JW_INIT;
	jw_object_begin(&w);
	jw_member_string(&w, "id", dsb_session_id(session));
	jw_member_string(&w, "path", dsb_session_path(session));
	jw_member_string(&w, "cwd", dsb_session_cwd(session));
	jw_member_uint(&w, "createdAt", dsb_session_created_at(session));
	jw_member_string(&w, "mode", dsb_mode_to_string(s->mode));
	jw_member_string(&w, "modeSource", s->mode_from_session ? "session" : "default");
	jw_member_string(&w, "approvalPolicy", dsb_approval_policy_to_string(s->approval));
	jw_member_string(&w, "approvalSource", s->approval_from_session ? "session" : "default");
	jw_member_string(&w, "preset", s->preset);
	jw_key(&w, "policy");
	jw_object_begin(&w);
	cli_policy_json(&w, &s->policy, s->roots);
	jw_object_end(&w);
	jw_object_end(&w);
	return jw_print(&w);
}

static void print_show_text(dsb_session *session, const shown *s)
{
	const char *cwd = dsb_session_cwd(session);
	printf("id: %s\n", dsb_session_id(session));
	printf("path: %s\n", dsb_session_path(session));
	printf("cwd: %s\n", cwd ? cwd : "(none)");
	/* A person reads a date: ISO 8601 in UTC (--json keeps the epoch milliseconds). */
	time_t created = (time_t)(dsb_session_created_at(session) / 1000);
	struct tm tm;
	char when[32] = "?";
	if (gmtime_r(&created, &tm))
		(void)strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("createdAt: %s\n", when);
	printf("mode: %s (%s)\n", dsb_mode_to_string(s->mode),
	       s->mode_from_session ? "session" : "default");
	printf("approvalPolicy: %s (%s)\n", dsb_approval_policy_to_string(s->approval),
	       s->approval_from_session ? "session" : "default");
	printf("preset: %s\n", s->preset ? s->preset : "(none)");
	printf("workspaceRoot: %s\n", s->policy.workspace_root);
	if (!s->roots[0])
		printf("writableRoots: (none)\n");
	else {
		printf("writableRoots:\n");
		for (size_t i = 0; s->roots[i]; i++)
			printf("  %s\n", s->roots[i]);
	}
}

static int cmd_show(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	shown s = {0};
	int r = open_session(global, args->positional[0], &store, &session, err);
	if (r >= 0)
		r = gather(global, session, &s, err);
	if (r >= 0 && args->json) {
		if (print_show_json(session, &s) < 0)
			r = dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
	} else if (r >= 0)
		print_show_text(session, &s);
	free(s.preset);
	dsb_strv_free(s.roots);
	dsb_exec_policy_done(&s.policy);
	dsb_session_free(session);
	dsb_store_free(store);
	return r;
}

/*
 * One record as stored, or, on a terminal (*@userdata, a bool), made visible: the values in it
 * are a model's commands, paths and justifications, and JSON leaves DEL, C1 controls and bidi
 * overrides raw. The JSON's own backslashes stay single (its escapes already read as one), so
 * only those bytes change. A pipe gets the bytes exactly.
 */
static int print_record(const log_record *rec, void *userdata, dsb_error *reterr)
{
	const char *text = rec->text;
	size_t len = rec->text_len;
	_cleanup_free_ char *visible = NULL;
	if (*(const bool *)userdata) {
		if (visible_escape(rec->text, rec->text_len, VISIBLE_KEEP_BACKSLASH, &visible) < 0)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
		text = visible;
		len = strlen(visible);
	}
	if (fwrite(text, 1, len, stdout) != len || putchar('\n') == EOF)
		return dsb_fail_errno(reterr, DSB_E_IO, errno ? errno : EIO, "writing the log");
	return 0;
}

static int cmd_log(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	bool terminal = isatty(STDOUT_FILENO);
	int r = open_session(global, args->positional[0], &store, &session, err);
	if (r >= 0)
		r = session_scan(session, print_record, &terminal, NULL, err);
	dsb_session_free(session);
	dsb_store_free(store);
	return r;
}

/* "session ID: WHAT OLD -> NEW", or "(unchanged)": what a switch did, on stdout. */
static void print_switch(dsb_session *session, const char *what, const char *old, const char *new)
{
	if (strcmp(old, new) == 0)
		printf("session %s: %s %s (unchanged)\n", dsb_session_id(session), what, new);
	else
		printf("session %s: %s %s -> %s\n", dsb_session_id(session), what, old, new);
}

/* The mode @session is in: its log's last switch, else the configured default. */
static int session_mode(const cli_global *global, dsb_session *session, dsb_mode *ret_mode,
			dsb_error *err)
{
	int r = dsb_session_fold_mode(session, ret_mode, err);
	if (r != 0)
		return r < 0 ? r : 0;
	dsb_config *cfg = NULL;
	r = cli_load_config(global, &cfg, err);
	if (r >= 0)
		*ret_mode = dsb_config_mode(cfg);
	dsb_config_free(cfg);
	return r;
}

static int cmd_mode(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_mode mode, old = _DSB_MODE_INVALID;
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	/* Validated before anything is opened or appended. */
	int r = dsb_mode_parse(args->positional[1], "mode", DSB_E_INVALID_ARGS, &mode, err);
	if (r >= 0)
		r = open_session(global, args->positional[0], &store, &session, err);
	if (r >= 0)
		r = session_mode(global, session, &old, err);
	if (r >= 0)
		r = dsb_session_set_mode(session, mode, err);
	if (r >= 0)
		print_switch(session, "mode", dsb_mode_to_string(old), dsb_mode_to_string(mode));
	dsb_session_free(session);
	dsb_store_free(store);
	return r;
}

static int cmd_approval(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	dsb_config *cfg = NULL;
	/* Validated before anything is opened or appended (dsh-compat §3.4). */
	dsb_approval_policy policy = dsb_approval_policy_from_string(args->positional[1]);
	int r = 0;
	if (policy == _DSB_APPROVAL_INVALID)
		r = dsb_fail(err, DSB_E_INVALID_ARGS,
			     "approval policy must be one of \"ask\" or \"never\"");
	if (r >= 0)
		r = cli_load_config(global, &cfg, err);
	if (r >= 0)
		r = open_session(global, args->positional[0], &store, &session, err);
	/* What it is now: the log's last switch, else the configuration's (dsh-compat §3.4). */
	dsb_approval_policy old = _DSB_APPROVAL_INVALID;
	if (r >= 0)
		r = dsb_session_fold_approval(session, &old, err);
	if (r == 0)
		old = dsb_config_approval_policy(cfg);
	/* The live switch: a no-op when unchanged, else the event and the model's notice. */
	if (r >= 0)
		r = approval_set_policy(session, cfg, policy, err);
	if (r >= 0)
		print_switch(session, "approval", dsb_approval_policy_to_string(old),
			     dsb_approval_policy_to_string(policy));
	dsb_session_free(session);
	dsb_store_free(store);
	dsb_config_free(cfg);
	return r;
}

/* Removes the session and its private /tmp (docs/design/paths.md). */
static int cmd_rm(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_store *store = NULL;
	int r = dsb_store_open(global->store_path, &store, err);
	if (r >= 0)
		r = dsb_session_remove(store, args->positional[0], err);
	dsb_store_free(store);
	return r;
}

/* Removes every session idle for more than DAYS days, and orphaned private /tmp dirs. */
static int cmd_prune(const cli_global *global, const session_args *args, dsb_error *err)
{
	char *end = NULL;
	errno = 0;
	unsigned long long days = strtoull(args->older_than, &end, 10);
	if (!args->older_than[0] || *end || errno || args->older_than[0] == '-' || days > 100000)
		return dsb_fail(err, DSB_E_INVALID_ARGS,
				"--older-than: expected a whole number of days, got '%s'",
				args->older_than);
	dsb_store *store = NULL;
	int r = dsb_store_open(global->store_path, &store, err);
	if (r >= 0)
		r = dsb_store_prune(store, (uint64_t)days * 86400000ULL, err);
	dsb_store_free(store);
	if (r >= 0)
		(void)printf("%d removed\n", r);
	return r;
}

int cmd_session(const cli_args *a)
{
	const cli_global *global = &a->global;
	session_args args;
	int r = check_args(a, &args);
	if (r < 0)
		return -r;

	static const struct {
		const char *verb;
		int (*run)(const cli_global *, const session_args *, dsb_error *);
	} runs[] = {
		{"new", cmd_new}, {"list", cmd_list},	{"show", cmd_show},
		{"log", cmd_log}, {"mode", cmd_mode},	{"approval", cmd_approval},
		{"rm", cmd_rm},	  {"prune", cmd_prune},
	};
	dsb_error err = {0};
	for (size_t i = 0; i < ELEMENTSOF(runs); i++)
		if (strcmp(runs[i].verb, args.verb) == 0)
			r = runs[i].run(global, &args, &err);
	if (r < 0)
		return cli_report(&err);
	return cli_flush_stdout();
}
