/* SPDX-License-Identifier: MIT */
/*
 * The bubblewrap profile (spec §5.5), byte for byte: the whole host read-only, a fresh /dev (so
 * /dev/null works), a private PID namespace with its own /proc (so procfs magic links such as
 * /proc/1/root cannot reach around the read-only bind), death with the parent; for
 * workspace-write an ephemeral /tmp and the workspace bound writable after it (so a workspace
 * under /tmp still works). Network, IPC and users are not unshared.
 */
#include <stdio.h>

#include "config.h"

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

const char *bwrap_program(void)
{
	return DSB_BWRAP_PATH;
}

int bwrap_hardening(int filter_fd, char ***io_argv)
{
	char fd[16];
	(void)snprintf(fd, sizeof(fd), "%d", filter_fd);
	/*
	 * --unshare-user: as root, bwrap keeps the bounding set full otherwise, and a uid 0
	 * command could regain every capability at its next execve(); unprivileged callers get a
	 * user namespace from bwrap anyway.
	 */
	const char *more[] = {"--unshare-user",
			      "--unshare-ipc",
			      "--unshare-uts",
			      "--cap-drop",
			      "ALL",
			      "--seccomp",
			      fd};
	int r = 0;
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(more); i++)
		r = strv_push(io_argv, more[i]);
	return r;
}
