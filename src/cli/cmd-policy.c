/* SPDX-License-Identifier: MIT */
/* dsh-sandbox policy: the resolved policy of one call (agentless or a session's) and its roots. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "cli.h"

typedef struct policy_args {
	const char *session;
	const char *mode;
	const char *workspace;
	bool json;
} policy_args;

static int parse_args(cli_global *global, const cli_command *cmd, int argc, char **argv,
		      policy_args *args)
{
	static const struct option options[] = {
		{"session", required_argument, NULL, 's'},
		{"mode", required_argument, NULL, 'm'},
		{"workspace", required_argument, NULL, 'w'},
		{"config", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (c) {
		case 's':
			args->session = optarg;
			break;
		case 'm':
			args->mode = optarg;
			break;
		case 'w':
			args->workspace = optarg;
			break;
		case 'c':
			global->config_path = optarg;
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
	if (optind < argc)
		return -cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	return 0;
}

/*
 * How the backend a call would get enforces each protected path: from the provider's verdict
 * (cached, else probed now), so that `policy` tells what a run would do.
 */
typedef struct enforcer {
	const char *backend; /* "bwrap", "landlock", "runner", or NULL: none usable */
	bool mount_ns;	     /* landlock: a mount namespace can be made */
} enforcer;

static void find_enforcer(const cli_global *global, const dsb_config *cfg, enforcer *ret)
{
	*ret = (enforcer){0};
	dsb_error err = {0};
	dsb_provider *provider = NULL;
	dsb_probe_report rep;
	_cleanup_free_ char *cache = cli_cache_dir(global);
	if (dsb_provider_new(cfg, cache, &provider, &err) >= 0 &&
	    dsb_provider_probe(provider, false, &rep, &err) >= 0) {
		if (rep.custom_runner)
			ret->backend = "runner";
		else if (rep.selected >= 0) {
			const dsb_probe_backend *b = &rep.backends[rep.selected];
			ret->backend = dsb_backend_to_string(dsb_backend_from_string(b->name));
			ret->mount_ns = b->hardening & DSB_HARDEN_MOUNT_NAMESPACE;
		}
	}
	dsb_provider_free(provider);
}

/*
 * "read-only", "hidden" (denyRead), "private-tmp" (bwrap shows its own /tmp, not the host's),
 * "removed-after" (must stay absent: removed after the call if the command made it),
 * "fails-closed" (a policy-bearing path nothing can protect: every call refuses), or
 * "not-enforced" (.git and listed paths where no mount namespace can be made).
 */
static const char *enforcement_of(const dsb_exec_policy *p, const dsb_protected *e,
				  const enforcer *en)
{
	bool hide = e->kind == DSB_PROTECT_DENY_READ;
	const char *done = hide ? "hidden" : "read-only";
	if (!en->backend)
		return "unavailable";
	if (e->absent)
		return "removed-after";
	if (strcmp(en->backend, "bwrap") == 0 || strcmp(en->backend, "runner") == 0) {
		bool private_tmp = p->mode == DSB_MODE_WORKSPACE_WRITE &&
				   !path_is_under(e->path, p->workspace_root) &&
				   path_is_under(e->path, "/tmp");
		if (private_tmp)
			return "private-tmp";
		if (strcmp(en->backend, "bwrap") == 0)
			return done;
	} else if (strcmp(en->backend, "landlock") == 0 && en->mount_ns)
		return done;
	return dsb_protect_kind_required(e->kind) ? "fails-closed" : "not-enforced";
}

static int protected_json(strbuf *sb, const dsb_exec_policy *p, const enforcer *en)
{
	int r = strbuf_puts(sb, ",\"protectedPaths\":[");
	for (size_t i = 0; r >= 0 && i < p->n_protected; i++) {
		const dsb_protected *e = &p->protected[i];
		_cleanup_free_ char *path = NULL;
		if (json_quote(e->path, strlen(e->path), &path) < 0)
			return -ENOMEM;
		r = strbuf_printf(sb,
				  "%s{\"path\":%s,\"kind\":\"%s\",\"exists\":%s,"
				  "\"enforcement\":\"%s\"}",
				  i ? "," : "", path, dsb_protect_kind_to_string(e->kind),
				  e->exists ? "true" : "false", enforcement_of(p, e, en));
	}
	return r < 0 ? r : strbuf_puts(sb, "]");
}

static void print_protected(const dsb_exec_policy *p, const enforcer *en)
{
	if (p->n_protected == 0)
		return;
	printf("protectedPaths:\n");
	for (size_t i = 0; i < p->n_protected; i++) {
		const dsb_protected *e = &p->protected[i];
		const char *how = enforcement_of(p, e, en);
		bool made = !e->exists && (strcmp(how, "read-only") == 0);
		printf("  %s (%s, %s%s)\n", e->path, dsb_protect_kind_to_string(e->kind), how,
		       made ? ", made empty before the call" : "");
	}
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

int cmd_policy(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("policy");
	policy_args args = {0};
	int r = parse_args(global, cmd, argc, argv, &args);
	if (r != 0)
		return r > 0 ? 0 : -r;

	dsb_error err = {0};
	dsb_exec_policy resolved = {0};
	dsb_config *cfg = NULL;
	char **roots = NULL;
	cli_policy_args pa = {args.session, args.mode, args.workspace};
	r = cli_resolve_policy(global, &pa, &cfg, &resolved, &err);
	enforcer en = {0};
	if (r >= 0 && resolved.n_protected > 0)
		find_enforcer(global, cfg, &en);
	dsb_config_free(cfg);
	if (r >= 0)
		r = dsb_policy_writable_roots(&resolved, &roots, &err);
	if (r < 0) {
		dsb_exec_policy_done(&resolved);
		return cli_report(&err);
	}

	int status = 0;
	if (args.json) {
		strbuf sb = STRBUF_INIT;
		/* The shared policy object, with the protected paths before its closing brace. */
		int k = cli_policy_json(&sb, &resolved, roots);
		if (k >= 0) {
			sb.buf[--sb.len] = '\0';
			k = protected_json(&sb, &resolved, &en);
		}
		if (k >= 0)
			k = strbuf_putc(&sb, '}');
		if (k < 0) {
			fputs("dsh-sandbox: out of memory\n", stderr);
			status = 1;
		} else
			puts(sb.buf);
		strbuf_done(&sb);
	} else
		print_text(&resolved, roots, &en);
	if (status == 0)
		status = cli_flush_stdout();
	dsb_strv_free(roots);
	dsb_exec_policy_done(&resolved);
	return status;
}
