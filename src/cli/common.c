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

dsb_call_setup cli_setup(const cli_global *global)
{
	return (dsb_call_setup){.config_path = global->config_path,
				.store_path = global->store_path};
}

int cli_check_config_option(const cli_global *global, dsb_error *reterr)
{
	/* An empty --config names no file: a usage error (DSH_SANDBOX_CONFIG="" is unset). */
	if (global->config_path && !*global->config_path)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"--config: expected a file path, got an empty string");
	return 0;
}

int cli_load_config(const cli_global *global, dsb_config **ret_cfg, dsb_error *reterr)
{
	int r = cli_check_config_option(global, reterr);
	if (r < 0)
		return r;
	dsb_call_setup setup = cli_setup(global);
	return dsb_call_load_config(&setup, ret_cfg, reterr);
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

int cli_parse_mode(const cli_policy_args *args, dsb_mode *ret_mode, dsb_error *reterr)
{
	*ret_mode = _DSB_MODE_INVALID;
	if (args->mode &&
	    dsb_mode_parse(args->mode, "--mode", DSB_E_INVALID_ARGS, ret_mode, reterr) < 0)
		return -DSB_E_INVALID_ARGS;
	return 0;
}

int cli_resolve_policy(const cli_global *global, const cli_policy_args *args, dsb_config **ret_cfg,
		       dsb_exec_policy *ret_policy, dsb_error *err)
{
	dsb_mode mode;
	int r = cli_parse_mode(args, &mode, err);
	if (r >= 0)
		r = cli_check_config_option(global, err);
	if (r < 0)
		return r;
	dsb_call_setup setup = cli_setup(global);
	return dsb_call_resolve(&setup, args->session, mode, args->workspace, ret_cfg, ret_policy,
				err);
}
