/* SPDX-License-Identifier: MIT */
/*
 * Where a front end's calls find their configuration (the file named, else
 * $DSH_SANDBOX_CONFIG, else the XDG default when it exists, else the defaults), and one call's
 * policy resolved from it (dsh-compat §2.2) with the protected paths a front end adds: the store it
 * uses and the configuration as spelled, and, when no file was loaded, the directory one would
 * be looked for in, so that a command cannot plant one there for the next call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "call.h"

dsb_call_setup call_setup(const dsb_call *call)
{
	return (dsb_call_setup){
		.config_path = call->config_path,
		.store_path = call->store_path,
		.cache_dir = call->cache_dir,
		.limits = call->limits.set ? &call->limits : NULL,
		.writable_roots = call->writable_roots,
	};
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
	_cleanup_free_ char *dir = default_config_dir();
	char *path = NULL;
	if (!dir || asprintf(&path, "%s/config.yaml", dir) < 0)
		return NULL;
	if (access(path, F_OK) < 0 && errno == ENOENT) {
		free(path);
		return NULL;
	}
	return path;
}

int call_config_file(const dsb_call_setup *setup, char **ret_path)
{
	const char *explicit_path = setup->config_path;
	/* An empty path names no file (DSH_SANDBOX_CONFIG="" is unset). */
	if (explicit_path && !*explicit_path)
		return -EINVAL;
	if (!explicit_path)
		explicit_path = getenv("DSH_SANDBOX_CONFIG");
	if (explicit_path && *explicit_path)
		*ret_path = strdup(explicit_path);
	else if (!(*ret_path = default_config_path()))
		return 0;
	return *ret_path ? 0 : -ENOMEM;
}

int dsb_call_load_config(const dsb_call_setup *setup, dsb_config **ret_cfg, dsb_error *reterr)
{
	if (!setup || !ret_cfg)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_call_load_config: missing argument");
	_cleanup_free_ char *path = NULL;
	int e = call_config_file(setup, &path);
	if (e == -EINVAL)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"config_path: expected a file path, got an empty string");
	if (e < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "configuration: out of memory");

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
	if (r >= 0 && setup->limits)
		r = dsb_config_set_limits(cfg, setup->limits, reterr);
	if (r >= 0 && setup->writable_roots)
		r = dsb_config_add_writable_roots(cfg, setup->writable_roots, reterr);
	if (r < 0) {
		dsb_config_free(cfg);
		return r;
	}
	*ret_cfg = cfg;
	return 0;
}

/* What a front end adds to the policy's protected paths (see the top of this file). */
static int protect_front_end(const dsb_call_setup *setup, dsb_policy *policy, const dsb_config *cfg,
			     const dsb_store *store, dsb_error *reterr)
{
	int r = dsb_policy_protect(policy, DSB_PROTECT_STORE, dsb_store_root(store), reterr);
	/* Every session's private /tmp, hidden from every call but through its own /tmp. */
	_cleanup_free_ char *tmp_root = NULL;
	if (r >= 0 && dsb_store_tmp_root(store, &tmp_root) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	if (r >= 0)
		r = dsb_policy_protect(policy, DSB_PROTECT_PRIVATE_TMP, tmp_root, reterr);
	/*
	 * As spelled too: the store and the configuration are opened by that path on every
	 * call, so a symlink on it inside a writable root must be refused (policy/protect.c),
	 * not only its target protected.
	 */
	const char *spelled[][2] = {
		{setup->store_path ? setup->store_path : getenv("DSH_SANDBOX_STORE"), "store"},
		{setup->config_path ? setup->config_path : getenv("DSH_SANDBOX_CONFIG"), "config"},
	};
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(spelled); i++) {
		_cleanup_free_ char *absolute = NULL;
		if (!spelled[i][0] || !spelled[i][0][0])
			continue;
		_cleanup_free_ char *cwd = spelled[i][0][0] == '/' ? NULL : getcwd(NULL, 0);
		if (spelled[i][0][0] != '/' && !cwd)
			continue;
		if (path_lexical_resolve(cwd ? cwd : "/", spelled[i][0], &absolute) < 0)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
		r = dsb_policy_protect(policy, i == 0 ? DSB_PROTECT_STORE : DSB_PROTECT_CONFIG,
				       absolute, reterr);
	}
	if (r < 0 || dsb_config_file(cfg))
		return r;
	_cleanup_free_ char *dir = default_config_dir();
	return dir ? dsb_policy_protect(policy, DSB_PROTECT_CONFIG, dir, reterr) : 0;
}

int call_resolve(const dsb_call_setup *setup, const char *session_name, dsb_mode mode,
		 const char *workspace, dsb_config **ret_cfg, dsb_exec_policy *ret_policy,
		 dsb_store **ret_store, dsb_session **ret_session, dsb_error *reterr)
{
	dsb_config *cfg = NULL;
	dsb_policy *policy = NULL;
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	int r = dsb_call_load_config(setup, &cfg, reterr);
	if (r >= 0 && workspace)
		r = dsb_config_set_workspace_root(cfg, workspace, reterr);
	if (r >= 0)
		r = dsb_policy_new(cfg, &policy, reterr);
	if (r >= 0)
		r = dsb_store_open(setup->store_path, &store, reterr);
	if (r >= 0)
		r = protect_front_end(setup, policy, cfg, store, reterr);
	if (r >= 0 && session_name) {
		r = dsb_session_open(store, session_name, &session, reterr);
		/*
		 * The log bears the session's mode: one named by a path may lie in a writable root,
		 * where a command could append its own mode switch for the next call.
		 */
		if (r >= 0)
			r = dsb_policy_protect(policy, DSB_PROTECT_STORE, dsb_session_path(session),
					       reterr);
		if (r >= 0)
			r = dsb_session_resolve(session, policy, mode, ret_policy, reterr);
	} else if (r >= 0) {
		dsb_resolve_request req = DSB_RESOLVE_REQUEST_INIT;
		req.mode = mode;
		r = dsb_policy_resolve(policy, &req, ret_policy, reterr);
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

int dsb_call_resolve(const dsb_call_setup *setup, const char *session, dsb_mode mode,
		     const char *workspace, dsb_config **ret_cfg, dsb_exec_policy *ret_policy,
		     dsb_error *reterr)
{
	if (!setup || !ret_cfg || !ret_policy)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_call_resolve: missing argument");
	if (mode < _DSB_MODE_INVALID || mode >= _DSB_MODE_MAX)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_call_resolve: invalid mode %d",
				(int)mode);
	return call_resolve(setup, session, mode, workspace, ret_cfg, ret_policy, NULL, NULL,
			    reterr);
}
