/* SPDX-License-Identifier: MIT */
/*
 * DSH's bubblewrap profile (dsh-compat §5.5), byte for byte: the whole host read-only, a fresh /dev
 * (so /dev/null works), a private PID namespace with its own /proc (so procfs magic links such
 * as /proc/1/root cannot reach around the read-only bind, and every process ends with the
 * command), death with the parent; for workspace-write an ephemeral /tmp and the workspace
 * bound writable after it (so a workspace under /tmp still works). It is the contract of an
 * operator's runnerCommand (backend-runner.c) and the base of the bwrap backend's arguments.
 */
#include "../policy/policy.h"
#include "confine.h"

int bwrap_profile(dsb_mode mode, const char *root, char ***io_argv)
{
	static const char *const common[] = {
		"--ro-bind",	     "/", "/", "--dev", "/dev", "--unshare-pid", "--proc", "/proc",
		"--die-with-parent",
	};
	int r = 0;
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(common); i++)
		r = strv_push(io_argv, common[i]);
	if (r >= 0 && mode == DSB_MODE_WORKSPACE_WRITE) {
		const char *more[] = {"--tmpfs", "/tmp", "--bind", root, root};
		for (size_t i = 0; r >= 0 && i < ELEMENTSOF(more); i++)
			r = strv_push(io_argv, more[i]);
	}
	return r;
}
