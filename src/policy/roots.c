/* SPDX-License-Identifier: MIT */
/*
 * The writable roots (dsh-compat §4.1) that the in-process fs fence grants. bwrap and Landlock
 * spell their own grants; this list is what the fence and `policy` report.
 */
#include <stdlib.h>
#include <string.h>

#include "policy.h"

int policy_writable_roots_with_tmpdir(const dsb_exec_policy *p, const char *tmpdir,
				      char ***ret_roots, dsb_error *reterr)
{
	_cleanup_strv_free_ char **roots = calloc(1, sizeof(char *));
	if (!roots)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "writable roots: out of memory");

	if (p->mode == DSB_MODE_WORKSPACE_WRITE) {
		const char *candidates[] = {p->workspace_root, "/tmp", tmpdir};

		/* Canonicalise first, then deduplicate: /tmp and $TMPDIR usually coincide. */
		for (size_t i = 0; i < ELEMENTSOF(candidates); i++) {
			char *canonical = NULL;
			if (path_canonical(candidates[i], &canonical) < 0)
				return dsb_fail(reterr, DSB_E_NO_MEMORY,
						"writable roots: out of memory");
			if (strv_contains(roots, canonical)) {
				free(canonical);
				continue;
			}
			if (strv_consume(&roots, canonical) < 0)
				return dsb_fail(reterr, DSB_E_NO_MEMORY,
						"writable roots: out of memory");
		}
	}

	int n = (int)strv_length(roots);
	*ret_roots = TAKE_PTR(roots);
	return n;
}

int dsb_policy_writable_roots(const dsb_exec_policy *p, char ***ret_roots, dsb_error *reterr)
{
	if (!p || !ret_roots || !p->workspace_root)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_policy_writable_roots: missing argument");

	_cleanup_free_ char *tmpdir = NULL;
	if (tmpdir_get(&tmpdir) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "writable roots: out of memory");
	return policy_writable_roots_with_tmpdir(p, tmpdir, ret_roots, reterr);
}
