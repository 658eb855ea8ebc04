/* SPDX-License-Identifier: MIT */
/*
 * The policy service (dsh-compat §2): a deployment default mode and a fallback workspace root, and
 * resolve(), which gives each call its complete policy. It holds no per-session state: the
 * session's fold and header cwd arrive in the request, read from the session's log.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy.h"

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
	p->protect_git = cfg->protect_git;
	p->protect_defaults = cfg->protect_defaults;

	int r = resolve_root(cfg->workspace_root ? cfg->workspace_root : ".", "workspace root",
			     &p->workspace_root, reterr);
	if (r < 0) {
		dsb_policy_free(TAKE_PTR(p));
		return r;
	}
	/* The configuration protects itself, its answerer and its runner. */
	p->protected_paths = strv_copy(cfg->protected_paths);
	p->deny_read = strv_copy(cfg->deny_read);
	p->writable_roots = strv_copy(cfg->writable_roots);
	r = p->protected_paths && p->deny_read && p->writable_roots ? 0 : -ENOMEM;
	if (r >= 0 && cfg->file)
		r = policy_source_add(p, DSB_PROTECT_CONFIG, cfg->file);
	if (r >= 0)
		r = policy_source_add_argv(p, DSB_PROTECT_ANSWERER, cfg->answerer);
	if (r >= 0)
		r = policy_source_add_argv(p, DSB_PROTECT_RUNNER, cfg->runner_command);
	if (r < 0) {
		dsb_policy_free(TAKE_PTR(p));
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "policy: out of memory");
	}
	*ret_policy = TAKE_PTR(p);
	return 0;
}

dsb_policy *dsb_policy_free(dsb_policy *policy)
{
	if (policy) {
		free(policy->workspace_root);
		for (size_t i = 0; i < policy->n_sources; i++)
			free(policy->sources[i].path);
		free(policy->sources);
		strv_free(policy->protected_paths);
		strv_free(policy->deny_read);
		strv_free(policy->writable_roots);
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

/*
 * A session's root is the directory its header recorded, canonical then (getcwd). If that path
 * now resolves elsewhere, a symlink was put on it: a confined command that could write a
 * directory on the way (a workspace below another session's, one under a shared temp dir) may
 * have renamed the real directory away and planted the link to widen the next call's root, to
 * "/" say. In workspace-write nothing runs then (an escalation to it resolves again). Read-only
 * writes nothing: it follows the link as DSH does, unless the link lies in a temp dir, where
 * any user's command could have planted it. Full access is not confined. @mode names the mode
 * asked for in the refusal.
 */
static int check_root_identity(const char *recorded, const char *canonical, dsb_mode mode,
			       dsb_error *reterr)
{
	_cleanup_free_ char *lexical = NULL, *tmpdir = NULL, *tmp = NULL, *tmp_real = NULL;
	_cleanup_free_ char *link = NULL;
	if (mode == DSB_MODE_DANGER_FULL_ACCESS)
		return 0;
	if (path_lexical_resolve("/", recorded, &lexical) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "policy: out of memory");
	if (strcmp(lexical, canonical) == 0)
		return 0;
	if (mode == DSB_MODE_READ_ONLY) {
		if (tmpdir_get(&tmpdir) < 0 || path_canonical(tmpdir, &tmp) < 0 ||
		    path_canonical("/tmp", &tmp_real) < 0)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "policy: out of memory");
		char *temp_dirs[] = {tmp, tmp_real, NULL};
		int r = path_link_within(lexical, temp_dirs, &link);
		if (r < 0)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "policy: out of memory");
		if (r == 0)
			return 0;
	}
	char detail[2 * DSB_PATH_MAX + 200];
	(void)snprintf(detail, sizeof(detail),
		       "the session's workspace root %s now resolves to %s (a symlink was put on "
		       "its path): it was moved or swapped, so nothing runs; start a new session "
		       "from the real directory",
		       recorded, canonical);
	return policy_fail_unavailable(reterr, mode, detail);
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

	/* Precedence (dsh-compat §2.2): explicit approved mode > session fold > deployment default.
	 */
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
	if (req->session_id && req->session_cwd && req->session_cwd[0] == '/') {
		r = check_root_identity(req->session_cwd, root, mode, reterr);
		if (r < 0)
			return r;
	}

	_cleanup_free_ char *session_id = NULL;
	if (req->session_id) {
		session_id = strdup(req->session_id);
		if (!session_id)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "policy: out of memory");
	}

	dsb_exec_policy out = {
		.mode = mode,
		.workspace_root = TAKE_PTR(root),
		.session_id = TAKE_PTR(session_id),
	};
	/* Every file writable is danger-full-access's business, never a confined mode's. */
	if (mode == DSB_MODE_WORKSPACE_WRITE && strcmp(out.workspace_root, "/") == 0)
		r = policy_fail_unavailable(
			reterr, mode,
			"the workspace root is \"/\": workspace-write would make "
			"every file writable; start from a project directory");
	if (r >= 0)
		r = policy_extra_roots_resolve(policy, &out, reterr);
	if (r >= 0)
		r = policy_protect_resolve(policy, &out, reterr);
	if (r < 0) {
		dsb_exec_policy_done(&out);
		return r;
	}
	*ret_policy = out;
	return 0;
}

void dsb_exec_policy_done(dsb_exec_policy *p)
{
	if (!p)
		return;
	free(p->workspace_root);
	free(p->session_id);
	strv_free(p->extra_roots);
	free(p->tmp_dir);
	strv_free(p->repos);
	policy_protected_free(p->protected, p->n_protected);
	*p = (dsb_exec_policy){0};
}
