/* SPDX-License-Identifier: MIT */
/* dsh-sandbox policy: the resolved policy of one call (agentless or a session's) and its roots. */
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "cli.h"

/*
 * How the backend a call would get enforces each protected path and the network: from the
 * provider's verdict (cached, else probed now), so that `policy` tells what a run would do.
 */
typedef struct enforcer {
	bool known; /* @rep holds the verdict; else nothing is usable */
	dsb_probe_report rep;
	const char *network; /* dsb_probe_network_enforcement() of the configured access */
	cli_limits limits;   /* what a call of the mode gets */
} enforcer;

static void find_enforcer(const cli_global *global, const dsb_config *cfg, dsb_mode mode,
			  enforcer *ret)
{
	dsb_network_access access = dsb_config_network_access(cfg);
	*ret = (enforcer){.network = dsb_probe_network_enforcement(NULL, access)};
	dsb_error err = {0};
	dsb_provider *provider = NULL;
	_cleanup_free_ char *cache = cli_cache_dir(global);
	if (dsb_provider_new(cfg, cache, &provider, &err) >= 0 &&
	    dsb_provider_probe(provider, false, &ret->rep, &err) >= 0) {
		ret->known = true;
		if (ret->rep.selected >= 0)
			ret->network = dsb_probe_network_enforcement(
				&ret->rep.backends[ret->rep.selected], access);
		if (ret->rep.selected >= 0 || ret->rep.custom_runner)
			cli_limits_of(provider, mode, &ret->limits);
	}
	dsb_provider_free(provider);
}

static const char *enforcement_of(const dsb_exec_policy *p, const dsb_protected *e,
				  const enforcer *en)
{
	return dsb_probe_protect_enforcement(en->known ? &en->rep : NULL, p, e);
}

/*
 * Whether @e is shown: a start-up file that does not exist is one of a fixed list in every root
 * (protectDefaults), removed after the call if made; listing each would bury the rest.
 */
static bool shown(const dsb_protected *e)
{
	return !(e->kind == DSB_PROTECT_STARTUP && e->absent && !e->link);
}

static void protected_json(jw *w, const dsb_exec_policy *p, const enforcer *en)
{
	jw_key(w, "protectedPaths");
	jw_array_begin(w);
	for (size_t i = 0; i < p->n_protected; i++) {
		const dsb_protected *e = &p->protected[i];
		if (!shown(e))
			continue;
		jw_object_begin(w);
		jw_member_string(w, "path", e->path);
		jw_member_string(w, "kind", dsb_protect_kind_to_string(e->kind));
		jw_member_bool(w, "exists", e->exists);
		jw_member_string(w, "enforcement", enforcement_of(p, e, en));
		jw_object_end(w);
	}
	jw_array_end(w);
}

static void print_protected(const dsb_exec_policy *p, const enforcer *en)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_protected; i++)
		n += shown(&p->protected[i]);
	if (n == 0)
		return;
	printf("protectedPaths:\n");
	for (size_t i = 0; i < p->n_protected; i++) {
		const dsb_protected *e = &p->protected[i];
		if (!shown(e))
			continue;
		const char *how = enforcement_of(p, e, en);
		bool made = !e->exists && (strcmp(how, "read-only") == 0);
		printf("  %s (%s, %s%s)\n", e->path, dsb_protect_kind_to_string(e->kind), how,
		       made ? ", made empty before the call" : "");
	}
}

/*
 * The network policy a call gets: the configured access (danger-full-access: never
 * restricted), its host lists and how it would be enforced.
 */
static void network_json(jw *w, const dsb_exec_policy *p, const dsb_config *cfg, const enforcer *en)
{
	bool full = p->mode == DSB_MODE_DANGER_FULL_ACCESS ||
		    dsb_config_network_access(cfg) == DSB_NETWORK_FULL;
	dsb_network_access access = full ? DSB_NETWORK_FULL : dsb_config_network_access(cfg);
	jw_key(w, "network");
	jw_object_begin(w);
	jw_member_string(w, "access", dsb_network_access_to_string(access));
	const char *lists[] = {"allow", "deny", "allowPrivate"};
	char *const *values[] = {dsb_config_network_allow(cfg), dsb_config_network_deny(cfg),
				 dsb_config_network_allow_private(cfg)};
	for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
		jw_key(w, lists[i]);
		jw_array_begin(w);
		for (size_t k = 0; values[i][k]; k++)
			jw_string(w, values[i][k]);
		jw_array_end(w);
	}
	jw_key(w, "proxyPort");
	if (access == DSB_NETWORK_ALLOWLIST)
		jw_int(w, dsb_config_network_proxy_port(cfg) ? dsb_config_network_proxy_port(cfg)
							     : 3128);
	else
		jw_null(w);
	jw_member_string(w, "enforcement", full ? "unrestricted" : en->network);
	jw_object_end(w);
}

/* Whether the canonical rule @rule names its port: "HOST:PORT", "[V6]:PORT", ":*". */
static bool rule_has_port(const char *rule)
{
	const char *colon = strrchr(rule, ':');
	return rule[0] == '[' || (colon && colon == strchr(rule, ':'));
}

static void print_network(const dsb_exec_policy *p, const dsb_config *cfg, const enforcer *en)
{
	bool full = p->mode == DSB_MODE_DANGER_FULL_ACCESS ||
		    dsb_config_network_access(cfg) == DSB_NETWORK_FULL;
	if (full) {
		printf("network: full (unrestricted)\n");
		return;
	}
	printf("network: %s (%s)\n", dsb_network_access_to_string(dsb_config_network_access(cfg)),
	       en->network);
	char *const *allow = dsb_config_network_allow(cfg), *const *deny =
								    dsb_config_network_deny(cfg);
	for (size_t i = 0; allow[i]; i++)
		printf("  allow %s%s\n", allow[i],
		       rule_has_port(allow[i]) ? "" : " (ports 80, 443)");
	for (size_t i = 0; deny[i]; i++)
		printf("  deny %s%s\n", deny[i], rule_has_port(deny[i]) ? "" : " (every port)");
	char *const *ranges = dsb_config_network_allow_private(cfg);
	for (size_t i = 0; ranges[i]; i++)
		printf("  allow private %s\n", ranges[i]);
}

/*
 * Where the call's /tmp comes from: "session" (the session's private directory), "call" (a
 * fresh one for this call alone) or "host" (danger-full-access, a workspace that is /tmp, a
 * read-only call of no session, Landlock without a mount namespace).
 */
static const char *tmp_of(const dsb_exec_policy *p, const enforcer *en)
{
	if (p->mode == DSB_MODE_DANGER_FULL_ACCESS || !en->known ||
	    strcmp(p->workspace_root, "/tmp") == 0)
		return "host";
	const char *source = dsb_probe_tmp(&en->rep);
	bool writable = p->mode == DSB_MODE_WORKSPACE_WRITE;
	if (strcmp(source, "session") == 0 && p->session_id)
		return "session";
	if (strcmp(source, "session") == 0 || strcmp(source, "call") == 0)
		return writable ? "call" : "host";
	return "host";
}

static void print_text(const dsb_exec_policy *p, char *const *roots, const enforcer *en)
{
	printf("mode: %s\n", dsb_mode_to_string(p->mode));
	printf("workspaceRoot: %s\n", p->workspace_root);
	if (p->session_id)
		printf("sessionId: %s\n", p->session_id);
	if (!roots[0]) {
		printf("writableRoots: (none)\n");
		print_protected(p, en);
		return;
	}
	printf("writableRoots:\n");
	for (size_t i = 0; roots[i]; i++)
		printf("  %s\n", roots[i]);
	print_protected(p, en);
}

static void print_tmp(const dsb_exec_policy *p, const enforcer *en)
{
	const char *source = tmp_of(p, en);
	const char *text = strcmp(source, "session") == 0
				   ? "the session's own, kept between its calls"
			   : strcmp(source, "call") == 0 ? "a fresh one for this call"
							 : "the host's";
	printf("/tmp: %s\n", text);
}

int cmd_policy(const cli_args *args)
{
	if (args->argc > 0)
		return cli_usage_error(args->cmd, "unexpected argument '%s'", args->argv[0]);

	dsb_error err = {0};
	dsb_exec_policy resolved = {0};
	dsb_config *cfg = NULL;
	char **roots = NULL;
	cli_policy_args pa = cli_policy_args_of(args);
	int r = cli_resolve_policy(&args->global, &pa, &cfg, &resolved, &err);
	if (r >= 0)
		r = cli_apply_network(args, cfg, &err);
	enforcer en = {0};
	/* A confined call has limits: what it gets needs the verdict (cached, or probed now). */
	if (r >= 0 && (resolved.n_protected > 0 || resolved.mode != DSB_MODE_DANGER_FULL_ACCESS))
		find_enforcer(&args->global, cfg, resolved.mode, &en);
	if (r >= 0)
		r = dsb_policy_writable_roots(&resolved, &roots, &err);
	if (r < 0) {
		dsb_config_free(cfg);
		dsb_exec_policy_done(&resolved);
		return cli_report(&err);
	}

	int status = 0;
	if (args->opt[CLI_OPT_JSON]) {
		jw w = JW_INIT;
		/* The shared policy object, with the protected paths before its closing brace. */
		jw_object_begin(&w);
		cli_policy_json(&w, &resolved, roots);
		protected_json(&w, &resolved, &en);
		jw_member_string(&w, "tmp", tmp_of(&resolved, &en));
		network_json(&w, &resolved, cfg, &en);
		cli_limits_json(&w, &en.limits);
		jw_object_end(&w);
		if (jw_print(&w) < 0)
			status = cli_out_of_memory();
	} else {
		print_text(&resolved, roots, &en);
		print_tmp(&resolved, &en);
		print_network(&resolved, cfg, &en);
		strbuf sb = STRBUF_INIT;
		cli_limits_text(&sb, &en.limits);
		if (sb.buf)
			fputs(sb.buf, stdout);
		strbuf_done(&sb);
	}
	dsb_config_free(cfg);
	if (status == 0)
		status = cli_flush_stdout();
	dsb_strv_free(roots);
	dsb_exec_policy_done(&resolved);
	return status;
}
