/* SPDX-License-Identifier: MIT */
/*
 * The policy service (spec §2): a deployment default mode and a fallback workspace root, and
 * resolve(), which gives each call its complete policy. It holds no per-session state: the
 * session's fold and header cwd arrive in the request, read from the session's log.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

struct dsb_policy {
	dsb_mode default_mode;
	char *workspace_root; /* canonical: resolveWorkspaceRoot(configured root ?? cwd) */
};

/* resolveWorkspaceRoot() with its errors named after @what. */
static int resolve_root(const char *path, const char *what, char **ret_root, dsb_error *reterr)
{
	int r = path_resolve_root(path, ret_root);
	if (r == -ENOMEM)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", what);
	if (r == -ENAMETOOLONG)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "%s '%s': path longer than %d bytes",
				what, path, DSB_PATH_MAX - 1);
	if (r < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, -r,
				      "%s '%s': cannot resolve against the working directory", what,
				      path);
	return 0;
}

int dsb_policy_new(const dsb_config *cfg, dsb_policy **ret_policy, dsb_error *reterr)
{
	if (!cfg || !ret_policy)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_policy_new: missing argument");

	_cleanup_free_ dsb_policy *p = calloc(1, sizeof(*p));
	if (!p)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "policy: out of memory");
	p->default_mode = cfg->mode;

	int r = resolve_root(cfg->workspace_root ? cfg->workspace_root : ".", "workspace root",
			     &p->workspace_root, reterr);
	if (r < 0)
		return r;
	*ret_policy = TAKE_PTR(p);
	return 0;
}

dsb_policy *dsb_policy_free(dsb_policy *policy)
{
	if (policy) {
		free(policy->workspace_root);
		free(policy);
	}
	return NULL;
}

dsb_mode dsb_policy_default_mode(const dsb_policy *policy)
{
	return policy ? policy->default_mode : _DSB_MODE_INVALID;
}

const char *dsb_policy_workspace_root(const dsb_policy *policy)
{
	return policy ? policy->workspace_root : NULL;
}

static bool mode_valid_or_unset(dsb_mode m)
{
	return m == _DSB_MODE_INVALID || (m >= 0 && m < _DSB_MODE_MAX);
}

int dsb_policy_resolve(const dsb_policy *policy, const dsb_resolve_request *req,
		       dsb_exec_policy *ret_policy, dsb_error *reterr)
{
	if (!policy || !req || !ret_policy)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_policy_resolve: missing argument");
	if (!mode_valid_or_unset(req->mode) || !mode_valid_or_unset(req->session_mode))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_policy_resolve: mode out of range");

	/* Precedence (spec §2.2): explicit approved mode > session fold > deployment default. */
	dsb_mode mode = req->mode;
	if (mode == _DSB_MODE_INVALID && req->session_id)
		mode = req->session_mode;
	if (mode == _DSB_MODE_INVALID)
		mode = policy->default_mode;

	/* The session header's cwd, else the service's root; canonicalised per call. */
	_cleanup_free_ char *root = NULL;
	int r = resolve_root(req->session_id && req->session_cwd ? req->session_cwd
								 : policy->workspace_root,
			     "workspace root", &root, reterr);
	if (r < 0)
		return r;

	_cleanup_free_ char *session_id = NULL;
	if (req->session_id) {
		session_id = strdup(req->session_id);
		if (!session_id)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "policy: out of memory");
	}

	*ret_policy = (dsb_exec_policy){
		.mode = mode,
		.workspace_root = TAKE_PTR(root),
		.session_id = TAKE_PTR(session_id),
	};
	return 0;
}

void dsb_exec_policy_done(dsb_exec_policy *p)
{
	if (!p)
		return;
	free(p->workspace_root);
	free(p->session_id);
	*p = (dsb_exec_policy){0};
}
