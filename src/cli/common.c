/* SPDX-License-Identifier: MIT */
/* What every subcommand shares: error and usage reporting, configuration loading. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/core.h"
#include "cli.h"

int cli_report(const dsb_error *err)
{
	fprintf(stderr, "dsh-sandbox: %s\n", err->message);
	return dsb_code_exit_status(err->code);
}

const cli_command *cli_find_command(const char *name)
{
	for (const cli_command *c = cli_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

void cli_print_usage(FILE *f, const cli_command *cmd)
{
	if (cmd) {
		fprintf(f, "usage: dsh-sandbox [--config FILE] %s %s\n", cmd->name, cmd->usage);
		return;
	}
	fprintf(f, "usage: dsh-sandbox [--config FILE] [--store DIR] COMMAND [ARGS...]\n"
		   "       dsh-sandbox --help | --version\n"
		   "\n"
		   "commands:\n");
	for (const cli_command *c = cli_commands; c->name; c++)
		fprintf(f, "  %s %s\n      %s\n", c->name, c->usage, c->summary);
	fprintf(f, "\n"
		   "MODE is one of read-only, workspace-write, danger-full-access.\n"
		   "The configuration is --config FILE, else $DSH_SANDBOX_CONFIG, else\n"
		   "$XDG_CONFIG_HOME/dsh-sandbox/config.yaml when it exists; DSH_PERMISSION_MODE\n"
		   "overrides its mode.\n");
}

int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
	va_list ap;
	fputs("dsh-sandbox: ", stderr);
	if (cmd)
		fprintf(stderr, "%s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_print_usage(stderr, cmd);
	return CLI_EXIT_USAGE;
}

int cli_option_error(const cli_command *cmd, int c, char **argv)
{
	if (c == ':')
		return cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
	return cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
}

/* The directory a default configuration file is looked for in, or NULL (no HOME). */
static char *default_config_dir(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char *path = NULL;
	if (xdg && xdg[0] == '/')
		return asprintf(&path, "%s/dsh-sandbox", xdg) < 0 ? NULL : path;
	if (home && home[0] == '/')
		return asprintf(&path, "%s/.config/dsh-sandbox", home) < 0 ? NULL : path;
	return NULL;
}

/* The default configuration file, or NULL when there is none to read. */
static char *default_config_path(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char *path = NULL;

	if (xdg && xdg[0] == '/') {
		if (asprintf(&path, "%s/dsh-sandbox/config.yaml", xdg) < 0)
			return NULL;
	} else if (home && home[0] == '/') {
		if (asprintf(&path, "%s/.config/dsh-sandbox/config.yaml", home) < 0)
			return NULL;
	} else
		return NULL;

	if (access(path, F_OK) < 0 && errno == ENOENT) {
		free(path);
		return NULL;
	}
	return path;
}

int cli_load_config(const cli_global *global, dsb_config **ret_cfg, dsb_error *reterr)
{
	const char *explicit_path = global->config_path;
	/* An empty --config names no file: a usage error (DSH_SANDBOX_CONFIG="" is unset). */
	if (explicit_path && !*explicit_path)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"--config: expected a file path, got an empty string");
	if (!explicit_path)
		explicit_path = getenv("DSH_SANDBOX_CONFIG");

	_cleanup_free_ char *found = explicit_path && *explicit_path ? NULL : default_config_path();
	const char *path = found ? found : explicit_path && *explicit_path ? explicit_path : NULL;

	dsb_config *cfg = NULL;
	int r;
	if (path)
		r = dsb_config_load_file(path, &cfg, reterr);
	else {
		cfg = dsb_config_new();
		r = cfg ? 0 : dsb_fail(reterr, DSB_E_NO_MEMORY, "configuration: out of memory");
	}
	if (r < 0)
		return r;

	r = dsb_config_apply_env(cfg, getenv("DSH_PERMISSION_MODE"), reterr);
	if (r < 0) {
		dsb_config_free(cfg);
		return r;
	}
	*ret_cfg = cfg;
	return 0;
}

static int put_string(strbuf *sb, const char *s)
{
	return json_quote_append(sb, s, strlen(s));
}

int cli_policy_json(strbuf *sb, const dsb_exec_policy *p, char *const *roots)
{
	int r = strbuf_puts(sb, "{\"mode\":");
	if (r >= 0)
		r = put_string(sb, dsb_mode_to_string(p->mode));
	if (r >= 0)
		r = strbuf_puts(sb, ",\"workspaceRoot\":");
	if (r >= 0)
		r = put_string(sb, p->workspace_root);
	if (r >= 0 && p->session_id) {
		r = strbuf_puts(sb, ",\"sessionId\":");
		if (r >= 0)
			r = put_string(sb, p->session_id);
	}
	if (r >= 0)
		r = strbuf_puts(sb, ",\"writableRoots\":[");
	for (size_t i = 0; r >= 0 && roots[i]; i++) {
		if (i > 0)
			r = strbuf_putc(sb, ',');
		if (r >= 0)
			r = put_string(sb, roots[i]);
	}
	if (r >= 0)
		r = strbuf_puts(sb, "]}");
	return r;
}

int cli_flush_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "dsh-sandbox: writing the output: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/*
 * What the CLI adds to the policy's protected paths: the store it uses and, when no
 * configuration file was loaded, the directory where one would be found (so that a command
 * cannot plant one there for the next call).
 */
static int cli_protect(const cli_global *global, dsb_policy *policy, const dsb_config *cfg,
		       const dsb_store *store, dsb_error *err)
{
	int r = dsb_policy_protect(policy, DSB_PROTECT_STORE, dsb_store_root(store), err);
	/*
	 * As spelled too: the store and the configuration are opened by that path on every
	 * call, so a symlink on it inside a writable root must be refused (policy/protect.c),
	 * not only its target protected.
	 */
	const char *spelled[][2] = {
		{global->store_path ? global->store_path : getenv("DSH_SANDBOX_STORE"), "store"},
		{global->config_path ? global->config_path : getenv("DSH_SANDBOX_CONFIG"),
		 "config"},
	};
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(spelled); i++) {
		_cleanup_free_ char *absolute = NULL;
		if (!spelled[i][0] || !spelled[i][0][0])
			continue;
		_cleanup_free_ char *cwd = spelled[i][0][0] == '/' ? NULL : getcwd(NULL, 0);
		if (spelled[i][0][0] != '/' && !cwd)
			continue;
		if (path_lexical_resolve(cwd ? cwd : "/", spelled[i][0], &absolute) < 0)
			return dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
		r = dsb_policy_protect(policy, i == 0 ? DSB_PROTECT_STORE : DSB_PROTECT_CONFIG,
				       absolute, err);
	}
	if (r < 0 || dsb_config_file(cfg))
		return r;
	_cleanup_free_ char *dir = default_config_dir();
	return dir ? dsb_policy_protect(policy, DSB_PROTECT_CONFIG, dir, err) : 0;
}

int cli_resolve_policy(const cli_global *global, const cli_policy_args *args, dsb_config **ret_cfg,
		       dsb_exec_policy *ret_policy, dsb_store **ret_store,
		       dsb_session **ret_session, dsb_error *err)
{
	dsb_mode mode = _DSB_MODE_INVALID;
	if (args->mode && dsb_mode_parse(args->mode, "--mode", DSB_E_INVALID_ARGS, &mode, err) < 0)
		return -DSB_E_INVALID_ARGS;

	dsb_config *cfg = NULL;
	dsb_policy *policy = NULL;
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	int r = cli_load_config(global, &cfg, err);
	if (r >= 0 && args->workspace)
		r = dsb_config_set_workspace_root(cfg, args->workspace, err);
	if (r >= 0)
		r = dsb_policy_new(cfg, &policy, err);
	if (r >= 0)
		r = dsb_store_open(global->store_path, &store, err);
	if (r >= 0)
		r = cli_protect(global, policy, cfg, store, err);
	if (r >= 0 && args->session) {
		r = dsb_session_open(store, args->session, &session, err);
		/*
		 * The log bears the session's mode: one named by a path may lie in a writable root,
		 * where a command could append its own mode switch for the next call.
		 */
		if (r >= 0)
			r = dsb_policy_protect(policy, DSB_PROTECT_STORE, dsb_session_path(session),
					       err);
		if (r >= 0)
			r = dsb_session_resolve(session, policy, mode, ret_policy, err);
	} else if (r >= 0) {
		dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
		req.mode = mode;
		r = dsb_policy_resolve(policy, &req, ret_policy, err);
	}
	dsb_policy_free(policy);
	if (r < 0) {
		dsb_session_free(session);
		dsb_store_free(store);
		dsb_config_free(cfg);
		return r;
	}
	if (ret_session && ret_store) {
		*ret_session = TAKE_PTR(session);
		*ret_store = TAKE_PTR(store);
	}
	dsb_session_free(session);
	dsb_store_free(store);
	*ret_cfg = cfg;
	return r;
}
