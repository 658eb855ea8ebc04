/* SPDX-License-Identifier: MIT */
/*
 * The configuration object: its defaults (DESIGN.md, dsh-compat §1.4), the DSH_PERMISSION_MODE
 * override and the accessors. Parsing YAML into it lives in load.c.
 */
#include <stdlib.h>
#include <string.h>

#include "policy.h"

/*
 * The shipped DSH CLI base bundle's table (dsh-compat §1.4), not the package's two-entry default:
 * our deployment default (read-only + ask) matches only its first entry, and a default that matches
 * no entry would leave new sessions nothing to pin (dsh-compat §8.6). The bundle gives no labels;
 * the two entries the package describes keep its name and description.
 */
static const dsb_preset default_presets[] = {
	{
		.key = (char *)"read-only",
		.sandbox = DSB_MODE_READ_ONLY,
		.approval = DSB_APPROVAL_ASK,
	},
	{
		.key = (char *)"workspace-write",
		.sandbox = DSB_MODE_WORKSPACE_WRITE,
		.approval = DSB_APPROVAL_ASK,
		.name = (char *)"workspace-write",
		.description = (char *)"Write inside the workspace and permitted temporary "
				       "directories; wider retries require approval.",
	},
	{
		.key = (char *)"danger-full-access",
		.sandbox = DSB_MODE_DANGER_FULL_ACCESS,
		.approval = DSB_APPROVAL_NEVER,
		.name = (char *)"danger-full-access",
		.description = (char *)"Full file access without approval prompts.",
	},
};

void config_presets_free(dsb_preset *presets, size_t n)
{
	for (size_t i = 0; presets && i < n; i++) {
		free(presets[i].key);
		free(presets[i].name);
		free(presets[i].description);
	}
	free(presets);
}

static char *strdup_or_null(const char *s, bool *oom)
{
	if (!s)
		return NULL;
	char *copy = strdup(s);
	if (!copy)
		*oom = true;
	return copy;
}

dsb_preset *config_presets_copy(const dsb_preset *presets, size_t n)
{
	dsb_preset *copy = calloc(n ? n : 1, sizeof(*copy));
	if (!copy)
		return NULL;

	bool oom = false;
	for (size_t i = 0; i < n; i++) {
		copy[i].sandbox = presets[i].sandbox;
		copy[i].approval = presets[i].approval;
		copy[i].key = strdup_or_null(presets[i].key, &oom);
		copy[i].name = strdup_or_null(presets[i].name, &oom);
		copy[i].description = strdup_or_null(presets[i].description, &oom);
	}
	if (oom) {
		config_presets_free(copy, n);
		return NULL;
	}
	return copy;
}

dsb_config *dsb_config_new(void)
{
	dsb_config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return NULL;

	/* The "fail-safe default" of sandbox-policy (dsh-compat §1.4). */
	cfg->mode = DSB_MODE_READ_ONLY;
	/* DSH's chain: every backend, in the build's order (bwrap, then Landlock). */
	for (int b = 0; b < _DSB_BACKEND_MAX; b++)
		cfg->backends[cfg->n_backends++] = (dsb_backend)b;
	cfg->probe_timeout_ms = DSB_DEFAULT_PROBE_TIMEOUT_MS;
	/* A confined command cannot signal outside its sandbox, as bwrap's PID namespace gives. */
	cfg->landlock_scope = DSB_SCOPE_SIGNAL | DSB_SCOPE_ABSTRACT_UNIX_SOCKET;
	cfg->timeout_ms = DSB_DEFAULT_TIMEOUT_MS;
	cfg->max_timeout_ms = DSB_DEFAULT_MAX_TIMEOUT_MS;
	cfg->max_output_bytes = DSB_DEFAULT_MAX_OUTPUT_BYTES;
	cfg->max_spill_bytes = DSB_DEFAULT_MAX_SPILL_BYTES;
	cfg->grace_ms = DSB_DEFAULT_GRACE_MS;
	cfg->approval_policy = DSB_APPROVAL_ASK;
	cfg->runner_command = calloc(1, sizeof(char *));
	cfg->runner_failure_signatures = calloc(1, sizeof(char *));
	cfg->answerer = calloc(1, sizeof(char *));
	cfg->protected_paths = calloc(1, sizeof(char *));
	cfg->deny_read = calloc(1, sizeof(char *));
	cfg->writable_roots = calloc(1, sizeof(char *));
	cfg->protect_git = true;
	/* Off by default: every write-class file call pays a notification round trip, 1.3x on
	 * tar x and 1.9x on git checkout here (docs/design/evidence.md). */
	cfg->evidence = false;
	cfg->protect_defaults = true;
	/* DSH's behaviour: the network is not restricted. */
	cfg->network_access = DSB_NETWORK_FULL;
	cfg->network_allow = calloc(1, sizeof(char *));
	cfg->network_deny = calloc(1, sizeof(char *));
	cfg->network_hosts = calloc(1, sizeof(char *));
	cfg->network_allow_private = calloc(1, sizeof(char *));
	cfg->n_presets = ELEMENTSOF(default_presets);
	cfg->presets = config_presets_copy(default_presets, cfg->n_presets);

	if (!cfg->runner_command || !cfg->runner_failure_signatures || !cfg->answerer ||
	    !cfg->protected_paths || !cfg->deny_read || !cfg->writable_roots || !cfg->presets ||
	    !cfg->network_allow || !cfg->network_deny || !cfg->network_hosts ||
	    !cfg->network_allow_private ||
	    scrub_rules_default(&cfg->scrub_env, &cfg->n_scrub_env) < 0)
		return dsb_config_free(cfg);
	return cfg;
}

dsb_config *dsb_config_free(dsb_config *cfg)
{
	if (!cfg)
		return NULL;
	free(cfg->workspace_root);
	strv_free(cfg->protected_paths);
	strv_free(cfg->deny_read);
	strv_free(cfg->writable_roots);
	free(cfg->file);
	strv_free(cfg->runner_command);
	strv_free(cfg->runner_failure_signatures);
	strv_free(cfg->answerer);
	scrub_rules_free(cfg->scrub_env, cfg->n_scrub_env);
	config_presets_free(cfg->presets, cfg->n_presets);
	free(cfg->default_preset);
	strv_free(cfg->network_allow);
	strv_free(cfg->network_deny);
	strv_free(cfg->network_hosts);
	strv_free(cfg->network_allow_private);
	free(cfg);
	return NULL;
}

int dsb_config_apply_env(dsb_config *cfg, const char *permission_mode, dsb_error *reterr)
{
	if (!cfg)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "no configuration given");
	if (!permission_mode)
		return 0;

	/* DSH reads the variable with `??`, so a set-but-empty value is a mode, and invalid. */
	dsb_mode mode;
	int r = dsb_mode_parse(permission_mode, "DSH_PERMISSION_MODE", DSB_E_CONFIG_INVALID, &mode,
			       reterr);
	if (r < 0)
		return r;
	cfg->mode = mode;
	/*
	 * As DSH's shipped bundle composes it: full access comes without approval prompts, so
	 * the defaults still name a preset (danger-full-access + never).
	 */
	if (mode == DSB_MODE_DANGER_FULL_ACCESS)
		cfg->approval_policy = DSB_APPROVAL_NEVER;
	return 0;
}

int dsb_config_set_workspace_root(dsb_config *cfg, const char *path, dsb_error *reterr)
{
	if (!cfg || !path)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "no configuration or path given");
	if (path[0] == '\0')
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "workspace root: empty path");
	if (strlen(path) >= DSB_PATH_MAX)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"workspace root: path longer than %d bytes", DSB_PATH_MAX - 1);

	char *copy = strdup(path);
	if (!copy)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "workspace root: out of memory");
	free(cfg->workspace_root);
	cfg->workspace_root = copy;
	return 0;
}

dsb_mode dsb_config_mode(const dsb_config *cfg)
{
	return cfg ? cfg->mode : _DSB_MODE_INVALID;
}

dsb_approval_policy dsb_config_approval_policy(const dsb_config *cfg)
{
	return cfg ? cfg->approval_policy : _DSB_APPROVAL_INVALID;
}

uint64_t dsb_config_approval_timeout_ms(const dsb_config *cfg)
{
	return cfg ? cfg->approval_timeout_ms : 0;
}

bool dsb_config_session_grants(const dsb_config *cfg)
{
	return cfg && cfg->session_grants;
}

const char *dsb_config_workspace_root(const dsb_config *cfg)
{
	return cfg ? cfg->workspace_root : NULL;
}

const char *dsb_config_file(const dsb_config *cfg)
{
	return cfg ? cfg->file : NULL;
}

char *const *dsb_config_writable_roots(const dsb_config *cfg)
{
	static char *const none[] = {NULL};
	return cfg && cfg->writable_roots ? cfg->writable_roots : none;
}

int dsb_config_add_writable_roots(dsb_config *cfg, char *const *roots, dsb_error *reterr)
{
	if (!cfg)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "no configuration given");
	for (char *const *root = roots; root && *root; root++) {
		const char *s = *root;
		bool home = s[0] == '~' && (s[1] == '\0' || s[1] == '/');
		if (s[0] != '/' && !home)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS,
					"--writable \"%s\": a writable root is an absolute path or "
					"starts with ~/",
					s);
		if (strlen(s) >= DSB_PATH_MAX)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS,
					"--writable: path longer than %d bytes", DSB_PATH_MAX - 1);
	}
	_cleanup_strv_free_ char **all = strv_copy(cfg->writable_roots);
	for (char *const *root = roots; all && root && *root; root++)
		if (strv_push(&all, *root) < 0)
			all = strv_free(all);
	if (!all)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "writable roots: out of memory");
	strv_free(cfg->writable_roots);
	cfg->writable_roots = TAKE_PTR(all);
	return 0;
}
