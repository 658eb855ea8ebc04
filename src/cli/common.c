/* SPDX-License-Identifier: MIT */
/* What every subcommand shares: error reporting, configuration loading, the policy JSON, printing
 * a --json document. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/core.h"
#include "cli.h"

int cli_report(const dsb_error *err)
{
	cli_error("%s", err->message);
	return dsb_code_exit_status(err->code);
}

void cli_debug_line(void *userdata, const char *line)
{
	(void)userdata;
	fprintf(stderr, "dsh-sandbox: %s\n", line);
}

int cli_out_of_memory(void)
{
	cli_error("out of memory");
	return dsb_code_exit_status(DSB_E_NO_MEMORY);
}

cli_policy_args cli_policy_args_of(const cli_args *args)
{
	return (cli_policy_args){args->opt[CLI_OPT_SESSION], args->opt[CLI_OPT_MODE],
				 args->opt[CLI_OPT_WORKSPACE]};
}

dsb_call_setup cli_setup(const cli_global *global)
{
	return (dsb_call_setup){.config_path = global->config_path,
				.store_path = global->store_path,
				.limits = global->limits.set ? &global->limits : NULL,
				.writable_roots = global->writable[0] ? global->writable : NULL};
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

void cli_policy_json(jw *w, const dsb_exec_policy *p, char *const *roots)
{
	jw_member_string(w, "mode", dsb_mode_to_string(p->mode));
	jw_member_string(w, "workspaceRoot", p->workspace_root);
	if (p->session_id) {
		jw_member_string(w, "sessionId", p->session_id);
	}
	jw_key(w, "writableRoots");
	jw_array_begin(w);
	for (size_t i = 0; roots[i]; i++)
		jw_string(w, roots[i]);
	jw_array_end(w);
}

int jw_print(jw *w)
{
	_cleanup_free_ char *json = NULL;
	int r = jw_take(w, &json);
	if (r >= 0)
		puts(json);
	return r;
}

int cli_flush_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		cli_error("writing the output: %s", strerror(errno));
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

int cli_parse_network(const char *s, dsb_network_access *ret_access, dsb_error *reterr)
{
	dsb_network_access access = dsb_network_access_from_string(s);
	if (access == _DSB_NETWORK_ACCESS_INVALID) {
		int r = dsb_fail(
			reterr, DSB_E_INVALID_ARGS,
			"--network: invalid access \"%s\" (accepted: full, none, allowlist)",
			s ? s : "");
		dsb_error_set_subject(reterr, "--network");
		return r;
	}
	*ret_access = access;
	return 0;
}

int cli_apply_network(const cli_args *args, dsb_config *cfg, dsb_error *reterr)
{
	dsb_network_access access;
	const char *s = args->opt[CLI_OPT_NETWORK];
	if (!s)
		return 0;
	int r = cli_parse_network(s, &access, reterr);
	return r < 0 ? r : dsb_config_set_network_access(cfg, access, reterr);
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

void cli_limits_of(dsb_provider *provider, dsb_mode mode, cli_limits *ret)
{
	*ret = (cli_limits){.known = true};
	for (int l = 0; l < _DSB_LIMIT_MAX; l++)
		ret->mechanism[l] =
			dsb_provider_limit(provider, mode, (dsb_limit)l, &ret->value[l]);
	ret->budgets = dsb_provider_budgets(provider);
}

/* A limit's value as people write it: 2048, 512M, 11G; sizes in powers of 1024. */
static void limit_value_text(strbuf *sb, dsb_limit l, uint64_t v)
{
	static const char units[] = "KMGT";
	int u = -1;
	while (dsb_limit_is_size(l) && v && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		(void)strbuf_printf(sb, "%llu", (unsigned long long)v);
	else
		(void)strbuf_printf(sb, "%llu%c", (unsigned long long)v, units[u]);
}

void cli_limits_text(strbuf *sb, const cli_limits *l)
{
	if (!l->known)
		return;
	(void)strbuf_puts(sb, "limits:\n");
	for (int i = 0; i < _DSB_LIMIT_MAX; i++) {
		(void)strbuf_printf(sb, "  %s: ", dsb_limit_to_string((dsb_limit)i));
		if (l->value[i]) {
			limit_value_text(sb, (dsb_limit)i, l->value[i]);
			(void)strbuf_printf(sb, " (%s)\n", l->mechanism[i]);
		} else
			(void)strbuf_puts(sb, "none\n");
	}
	(void)strbuf_printf(sb, "  per-user budgets: %s\n", l->budgets);
}

void cli_limits_json(jw *w, const cli_limits *l)
{
	if (!l->known)
		return;
	jw_key(w, "limits");
	jw_object_begin(w);
	for (int i = 0; i < _DSB_LIMIT_MAX; i++) {
		jw_key(w, dsb_limit_to_string((dsb_limit)i));
		jw_object_begin(w);
		jw_key(w, "value");
		if (l->value[i])
			jw_uint(w, l->value[i]);
		else
			jw_null(w);
		jw_member_string(w, "mechanism", l->value[i] ? l->mechanism[i] : "none");
		jw_object_end(w);
	}
	jw_member_string(w, "budgets", l->budgets);
	jw_object_end(w);
}
