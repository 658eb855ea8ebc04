/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox session: create a session, list and inspect them, print a log, and switch a
 * session's mode or approval policy by appending the event DSH appends (spec §3.4).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/core.h"
#include "../approval/approval.h"
#include "../session/session.h"
#include "cli.h"

typedef struct session_args {
	const char *verb;
	const char *cwd;
	bool json;
	char **positional; /* after the verb and options */
	int n_positional;
} session_args;

static const char *const verbs[] = {"new", "list", "show", "log", "mode", "approval"};
static const int verb_arity[] = {0, 0, 1, 1, 2, 2};

static int parse_args(const cli_command *cmd, int argc, char **argv, session_args *args)
{
	static const struct option options[] = {
		{"cwd", required_argument, NULL, 'C'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};

	if (argc < 2)
		return -cli_usage_error(cmd, "no subcommand given");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		cli_print_usage(stdout, cmd);
		return 1;
	}
	int verb = -1;
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		if (strcmp(argv[1], verbs[i]) == 0)
			verb = (int)i;
	if (verb < 0)
		return -cli_usage_error(cmd, "unknown subcommand '%s'", argv[1]);
	args->verb = verbs[verb];

	/* The verb is argv[0] of its own option parse. */
	argc--;
	argv++;
	optind = 0;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (c) {
		case 'C':
			if (strcmp(args->verb, "new") != 0)
				return -cli_usage_error(cmd, "--cwd goes with 'session new'");
			/* An empty path names no directory: a usage error, not the current one. */
			if (!*optarg)
				return -cli_usage_error(cmd, "--cwd: empty path");
			args->cwd = optarg;
			break;
		case 'j':
			args->json = true;
			break;
		case 'h':
			cli_print_usage(stdout, cmd);
			return 1;
		default:
			return -cli_option_error(cmd, c, argv);
		}
	}
	args->positional = argv + optind;
	args->n_positional = argc - optind;
	if (args->n_positional != verb_arity[verb])
		return -cli_usage_error(cmd, "'session %s' takes %d argument%s, got %d", args->verb,
					verb_arity[verb], verb_arity[verb] == 1 ? "" : "s",
					args->n_positional);
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
	/* Pinned before the id is shown (spec §8.6); a failure here leaves the log behind. */
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
		strbuf sb = STRBUF_INIT;
		r = strbuf_puts(&sb, "{\"id\":");
		if (r >= 0)
			r = json_quote_append(&sb, dsb_session_id(session),
					      strlen(dsb_session_id(session)));
		/* The cwd as the header records it (canonical). */
		const char *recorded = dsb_session_cwd(session);
		if (r >= 0)
			r = strbuf_puts(&sb, ",\"cwd\":");
		if (r >= 0)
			r = json_quote_append(&sb, recorded, strlen(recorded));
		if (r >= 0)
			r = strbuf_puts(&sb, ",\"path\":");
		if (r >= 0)
			r = json_quote_append(&sb, dsb_session_path(session),
					      strlen(dsb_session_path(session)));
		if (r >= 0)
			r = strbuf_putc(&sb, '}');
		if (r >= 0)
			puts(sb.buf);
		else
			r = dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
		strbuf_done(&sb);
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
		strbuf sb = STRBUF_INIT;
		int w = args->json ? strbuf_putc(&sb, '[') : 0;
		for (size_t i = 0; w >= 0 && i < l.n; i++) {
			const listed *e = &l.v[i];
			if (!args->json) {
				w = strbuf_printf(&sb, "%s\t%s\n", e->id, e->cwd ? e->cwd : "-");
				continue;
			}
			w = strbuf_puts(&sb, i ? ",{\"id\":" : "{\"id\":");
			if (w >= 0)
				w = json_quote_append(&sb, e->id, strlen(e->id));
			if (w >= 0)
				w = strbuf_puts(&sb, ",\"cwd\":");
			if (w >= 0)
				w = e->cwd ? json_quote_append(&sb, e->cwd, strlen(e->cwd))
					   : strbuf_puts(&sb, "null");
			if (w >= 0)
				w = strbuf_printf(&sb, ",\"createdAt\":%llu,\"path\":",
						  (unsigned long long)e->created_at);
			if (w >= 0)
				w = json_quote_append(&sb, e->path, strlen(e->path));
			if (w >= 0)
				w = strbuf_putc(&sb, '}');
		}
		if (w >= 0 && args->json)
			w = strbuf_puts(&sb, "]\n");
		if (w < 0)
			r = dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
		else if (sb.buf)
			fputs(sb.buf, stdout);
		strbuf_done(&sb);
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
		/* fold ?? config ?? ask (spec §3.4); the config's default is ask. */
		if (!s->approval_from_session)
			s->approval = dsb_config_approval_policy(cfg);
		r = dsb_session_fold_preset(session, &s->preset, err);
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
	strbuf sb = STRBUF_INIT;
	const char *cwd = dsb_session_cwd(session);
	int r = strbuf_puts(&sb, "{\"id\":");
	if (r >= 0)
		r = json_quote_append(&sb, dsb_session_id(session),
				      strlen(dsb_session_id(session)));
	if (r >= 0)
		r = strbuf_puts(&sb, ",\"path\":");
	if (r >= 0)
		r = json_quote_append(&sb, dsb_session_path(session),
				      strlen(dsb_session_path(session)));
	if (r >= 0)
		r = strbuf_puts(&sb, ",\"cwd\":");
	if (r >= 0)
		r = cwd ? json_quote_append(&sb, cwd, strlen(cwd)) : strbuf_puts(&sb, "null");
	if (r >= 0)
		r = strbuf_printf(&sb,
				  ",\"createdAt\":%llu,\"mode\":\"%s\",\"modeSource\":\"%s\","
				  "\"approvalPolicy\":\"%s\",\"approvalSource\":\"%s\",\"preset\":",
				  (unsigned long long)dsb_session_created_at(session),
				  dsb_mode_to_string(s->mode),
				  s->mode_from_session ? "session" : "default",
				  dsb_approval_policy_to_string(s->approval),
				  s->approval_from_session ? "session" : "default");
	if (r >= 0)
		r = s->preset ? json_quote_append(&sb, s->preset, strlen(s->preset))
			      : strbuf_puts(&sb, "null");
	if (r >= 0)
		r = strbuf_puts(&sb, ",\"policy\":");
	if (r >= 0)
		r = cli_policy_json(&sb, &s->policy, s->roots);
	if (r >= 0)
		r = strbuf_puts(&sb, "}");
	if (r >= 0)
		puts(sb.buf);
	strbuf_done(&sb);
	return r;
}

static void print_show_text(dsb_session *session, const shown *s)
{
	const char *cwd = dsb_session_cwd(session);
	printf("id: %s\n", dsb_session_id(session));
	printf("path: %s\n", dsb_session_path(session));
	printf("cwd: %s\n", cwd ? cwd : "(none)");
	printf("createdAt: %llu\n", (unsigned long long)dsb_session_created_at(session));
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

static int print_record(const log_record *rec, void *userdata, dsb_error *reterr)
{
	if (fwrite(rec->text, 1, rec->text_len, stdout) != rec->text_len || putchar('\n') == EOF)
		return dsb_fail_errno(reterr, DSB_E_IO, errno ? errno : EIO, "writing the log");
	return 0;
}

static int cmd_log(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	int r = open_session(global, args->positional[0], &store, &session, err);
	if (r >= 0)
		r = session_scan(session, print_record, NULL, NULL, err);
	dsb_session_free(session);
	dsb_store_free(store);
	return r;
}

static int cmd_mode(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_mode mode;
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	/* Validated before anything is opened or appended. */
	int r = dsb_mode_parse(args->positional[1], "mode", DSB_E_INVALID_ARGS, &mode, err);
	if (r >= 0)
		r = open_session(global, args->positional[0], &store, &session, err);
	if (r >= 0)
		r = dsb_session_set_mode(session, mode, err);
	dsb_session_free(session);
	dsb_store_free(store);
	return r;
}

static int cmd_approval(const cli_global *global, const session_args *args, dsb_error *err)
{
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	dsb_config *cfg = NULL;
	/* Validated before anything is opened or appended (spec §3.4). */
	dsb_approval_policy policy = dsb_approval_policy_from_string(args->positional[1]);
	int r = 0;
	if (policy == _DSB_APPROVAL_INVALID)
		r = dsb_fail(err, DSB_E_INVALID_ARGS,
			     "approval policy must be one of \"ask\" or \"never\"");
	if (r >= 0)
		r = cli_load_config(global, &cfg, err);
	if (r >= 0)
		r = open_session(global, args->positional[0], &store, &session, err);
	/* The live switch: a no-op when unchanged, else the event and the model's notice. */
	if (r >= 0)
		r = approval_set_policy(session, cfg, policy, err);
	dsb_session_free(session);
	dsb_store_free(store);
	dsb_config_free(cfg);
	return r;
}

int cmd_session(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("session");
	session_args args = {0};
	int r = parse_args(cmd, argc, argv, &args);
	if (r != 0)
		return r > 0 ? 0 : -r;

	static const struct {
		const char *verb;
		int (*run)(const cli_global *, const session_args *, dsb_error *);
	} runs[] = {
		{"new", cmd_new}, {"list", cmd_list}, {"show", cmd_show},
		{"log", cmd_log}, {"mode", cmd_mode}, {"approval", cmd_approval},
	};
	dsb_error err = {0};
	for (size_t i = 0; i < ELEMENTSOF(runs); i++)
		if (strcmp(runs[i].verb, args.verb) == 0)
			r = runs[i].run(global, &args, &err);
	if (r < 0)
		return cli_report(&err);
	return cli_flush_stdout();
}
