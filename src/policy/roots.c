/* SPDX-License-Identifier: MIT */
/*
 * The writable roots (dsh-compat §4.1, and docs/design/paths.md): the one list that bwrap's
 * binds, Landlock's rules, the fs fence, the metadata supervisor and the network wall all grant,
 * and that `policy` prints. The workspace, the sandbox's own /tmp, and the extra roots a
 * deployment gives its toolchains' caches (sandbox-policy.writableRoots, --writable).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy.h"

char *policy_expand_home(const char *path)
{
	if (path[0] != '~')
		return strdup(path);
	const char *home = getenv("HOME");
	char *out = NULL;
	if (!home || home[0] != '/')
		return NULL;
	return asprintf(&out, "%s%s", home, path + 1) < 0 ? NULL : out;
}

/* Whether @root (canonical) is, or lies inside, a path the policy itself rests on. */
static const policy_source *source_holding(const dsb_policy *policy, const char *root)
{
	for (size_t i = 0; i < policy->n_sources; i++) {
		const policy_source *s = &policy->sources[i];
		_cleanup_free_ char *canon = NULL;
		if (!dsb_protect_kind_required(s->kind) || path_canonical(s->path, &canon) < 0)
			continue;
		if (path_is_under(root, canon))
			return s;
	}
	return NULL;
}

static const char *deny_read_holding(const dsb_policy *policy, const char *root)
{
	for (char **e = policy->deny_read; e && *e; e++) {
		_cleanup_free_ char *full = policy_expand_home(*e), *canon = NULL;
		if (full && path_canonical(full, &canon) >= 0 && path_is_under(root, canon))
			return *e;
	}
	return NULL;
}

/* One configured root, checked and canonical in *@ret (NULL: inside the workspace, dropped). */
static int extra_root(const dsb_policy *policy, const dsb_exec_policy *p, const char *spelled,
		      char **ret, dsb_error *reterr)
{
	_cleanup_free_ char *full = policy_expand_home(spelled), *lexical = NULL, *canon = NULL;
	if (!full)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"writable root \"%s\": no absolute HOME to expand ~ with", spelled);
	if (path_lexical_resolve("/", full, &lexical) < 0 || path_canonical(lexical, &canon) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "writable roots: out of memory");
	struct stat st;
	if (stat(canon, &st) < 0)
		return dsb_fail_errno(reterr, DSB_E_INVALID_ARGS, errno,
				      "writable root \"%s\" (%s): it must be an existing directory",
				      spelled, lexical);
	if (!S_ISDIR(st.st_mode))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"writable root \"%s\" (%s): not a directory", spelled, canon);
	if (strcmp(canon, "/") == 0)
		return dsb_fail(
			reterr, DSB_E_INVALID_ARGS,
			"writable root \"%s\": \"/\" would make every file writable, which is "
			"danger-full-access, not a sandbox; name the directories instead",
			spelled);
	char detail[2 * DSB_PATH_MAX + 200];
	const policy_source *s = source_holding(policy, canon);
	const char *hidden = s ? NULL : deny_read_holding(policy, canon);
	if (s)
		(void)snprintf(detail, sizeof(detail),
			       "the writable root %s is or lies inside the %s %s, which the policy "
			       "rests on",
			       canon, dsb_protect_kind_to_string(s->kind), s->path);
	else if (hidden)
		(void)snprintf(detail, sizeof(detail),
			       "the writable root %s is or lies inside %s, which "
			       "sandbox-policy.denyRead hides",
			       canon, hidden);
	if (s || hidden)
		return policy_fail_unavailable(reterr, p->mode, detail);
	*ret = path_is_under(canon, p->workspace_root) ? NULL : TAKE_PTR(canon);
	return 0;
}

/*
 * A root spelled through a symlink that lies in a writable root: this call gets the target, but
 * the command could point the link at "/" or at the store for the next call.
 */
static int check_spelling(const dsb_exec_policy *p, char *const *roots, const char *spelled,
			  dsb_error *reterr)
{
	_cleanup_free_ char *full = policy_expand_home(spelled), *lexical = NULL, *link = NULL;
	if (!full || path_lexical_resolve("/", full, &lexical) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "writable roots: out of memory");
	int r = path_link_within(lexical, roots, &link);
	if (r < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "writable roots: out of memory");
	if (r == 0)
		return 0;
	char detail[2 * DSB_PATH_MAX + 200];
	(void)snprintf(detail, sizeof(detail),
		       "the writable root %s leads through the symlink %s in a writable root, "
		       "which a command could repoint; give its real path",
		       spelled, link);
	return policy_fail_unavailable(reterr, p->mode, detail);
}

int policy_extra_roots_resolve(const dsb_policy *policy, dsb_exec_policy *p, dsb_error *reterr)
{
	if (p->mode != DSB_MODE_WORKSPACE_WRITE)
		return 0;
	_cleanup_strv_free_ char **extras = calloc(1, sizeof(char *));
	if (!extras)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "writable roots: out of memory");
	for (char **e = policy->writable_roots; e && *e; e++) {
		char *canon = NULL;
		int r = extra_root(policy, p, *e, &canon, reterr);
		if (r < 0)
			return r;
		if (!canon || strv_contains(extras, canon)) {
			free(canon);
			continue;
		}
		if (strv_consume(&extras, canon) < 0)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "writable roots: out of memory");
	}
	p->extra_roots = TAKE_PTR(extras);

	_cleanup_strv_free_ char **roots = NULL;
	if (dsb_policy_writable_roots(p, &roots, reterr) < 0)
		return -DSB_E_NO_MEMORY;
	for (char **e = policy->writable_roots; e && *e; e++) {
		int r = check_spelling(p, roots, *e, reterr);
		if (r < 0)
			return r;
	}
	return 0;
}

int dsb_policy_writable_roots(const dsb_exec_policy *p, char ***ret_roots, dsb_error *reterr)
{
	if (!p || !ret_roots || !p->workspace_root)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_policy_writable_roots: missing argument");

	_cleanup_strv_free_ char **roots = calloc(1, sizeof(char *));
	int r = roots ? 0 : -ENOMEM;
	if (r >= 0 && p->mode == DSB_MODE_WORKSPACE_WRITE) {
		r = strv_push(&roots, p->workspace_root);
		if (r >= 0 && strcmp(p->workspace_root, "/tmp") != 0)
			r = strv_push(&roots, "/tmp");
		for (char **e = p->extra_roots; r >= 0 && e && *e; e++)
			if (!strv_contains(roots, *e))
				r = strv_push(&roots, *e);
	}
	if (r < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "writable roots: out of memory");
	int n = (int)strv_length(roots);
	*ret_roots = TAKE_PTR(roots);
	return n;
}
