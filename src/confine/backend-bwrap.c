/* SPDX-License-Identifier: MIT */
/*
 * The bubblewrap backend. DSH's profile (spec §5.5), byte for byte: the whole host read-only, a
 * fresh /dev (so /dev/null works), a private PID namespace with its own /proc (so procfs magic
 * links such as /proc/1/root cannot reach around the read-only bind, and every process ends
 * with the command), death with the parent; for workspace-write an ephemeral /tmp and the
 * workspace bound writable after it (so a workspace under /tmp still works). That profile
 * stays the contract of an operator's runnerCommand. The built-in backend adds user, IPC and
 * UTS namespaces, drops every capability and hands bwrap the system-call filter; and it runs
 * only a bwrap found where nobody but root or the user could have put it.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

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

int bwrap_find(char *out, size_t size, char *why, size_t why_size)
{
	return trusted_program(DSB_BWRAP_PATH, out, size, why, why_size) < 0 ? -ENOENT : 0;
}

static int bwrap_identity(dsb_provider *p, strbuf *sb)
{
	char why[512];
	struct stat st;
	if (!p->bwrap[0] && bwrap_find(p->bwrap, sizeof(p->bwrap), why, sizeof(why)) < 0)
		return strbuf_puts(sb, "=none");
	if (stat(p->bwrap, &st) < 0)
		return strbuf_puts(sb, "=gone");
	return strbuf_printf(sb, "=%s:%lu:%lu:%lld:%lld", p->bwrap, (unsigned long)st.st_dev,
			     (unsigned long)st.st_ino, (long long)st.st_size,
			     (long long)st.st_ctime);
}

/* bwrap and its arguments for @mode and @root, up to and including "--". */
static int bwrap_argv(const dsb_provider *p, dsb_mode mode, const char *root, char ***io_argv)
{
	int r = strv_push(io_argv, p->bwrap);
	if (r >= 0)
		r = bwrap_profile(mode, root, io_argv);
	if (r >= 0)
		r = bwrap_hardening(BWRAP_FILTER_FD, io_argv);
	return r;
}

static void bwrap_report(const dsb_provider *p, dsb_probe_backend *out)
{
	(void)snprintf(out->program, sizeof(out->program), "%s", p->bwrap);
	out->hardening = DSB_HARDEN_CAPABILITIES | DSB_HARDEN_BOUNDING_SET |
			 DSB_HARDEN_NO_NEW_PRIVS | DSB_HARDEN_SECCOMP | DSB_HARDEN_STDIO_ONLY |
			 DSB_HARDEN_REAPED | DSB_HARDEN_PID_NAMESPACE | DSB_HARDEN_MOUNT_NAMESPACE |
			 DSB_HARDEN_USER_NAMESPACE | DSB_HARDEN_IPC_NAMESPACE |
			 DSB_HARDEN_UTS_NAMESPACE | DSB_HARDEN_SIGNAL_SCOPE |
			 DSB_HARDEN_NET_NAMESPACE;
	/* The host's network, unless a network policy gives the command a namespace. */
	if (p->network.access == DSB_NETWORK_FULL)
		out->not_governed = DSB_UNGOVERNED_NETWORK | DSB_UNGOVERNED_ABSTRACT_UNIX;
}

static void bwrap_probe(dsb_provider *p, dsb_probe_backend *out)
{
	/*
	 * The real read-only profile with workspaceRoot "/", as DSH probes it, plus ours; the
	 * command is PROBE_COMMAND, not DSH's `true`, which PATH may not reach.
	 */
	static const char *const probe_command[] = {PROBE_COMMAND};
	char why[512];
	if (!p->bwrap[0] && bwrap_find(p->bwrap, sizeof(p->bwrap), why, sizeof(why)) < 0) {
		(void)snprintf(out->reason, sizeof(out->reason), "%s", why);
		return;
	}
	(void)snprintf(out->program, sizeof(out->program), "%s", p->bwrap);
	char **argv = NULL;
	confine_plan plan = {.filter_fd = BWRAP_FILTER_FD, .contained = true};
	int r = bwrap_argv(p, DSB_MODE_READ_ONLY, "/", &argv);
	if (r >= 0)
		r = strv_push(&argv, "--");
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(probe_command); i++)
		r = strv_push(&argv, probe_command[i]);
	if (r < 0) {
		(void)snprintf(out->reason, sizeof(out->reason), "out of memory");
		strv_free(argv);
		return;
	}
	dsb_confined c = {.argv = argv, .backend = (char *)"bwrap", .plan = &plan};
	if (chain_run_probe(p, &c, NULL, out->reason, sizeof(out->reason)) == 0) {
		out->usable = true;
		out->enforcement = DSB_ENFORCEMENT_FULL;
	}
	strv_free(argv);
}

/*
 * Protected paths as binds after the writable ones. Only the workspace is the host's and
 * writable here; the host's /tmp is not even shown in workspace-write (a private tmpfs).
 */
static int bwrap_protect(const dsb_exec_policy *policy, confine_plan *plan, char ***io_argv,
			 char *why, size_t why_size)
{
	char *ws[] = {policy->workspace_root, NULL}, *tmp[] = {(char *)"/tmp", NULL};
	bool writable = policy->mode == DSB_MODE_WORKSPACE_WRITE;
	_cleanup_(protect_ops_done) protect_ops o = {0};
	int r = protect_ops_build(policy, writable ? ws : NULL, writable ? tmp : NULL, &o);
	if (r >= 0 && o.n > 0 && writable)
		r = protect_make_missing(policy, ws, why, why_size);
	if (r < 0 || o.n == 0)
		return r;
	/*
	 * bwrap re-reads the whole mount table for every bind it makes (about 0.15 ms each
	 * here). Root (CAP_SYS_ADMIN) can make the same mounts itself, in a mount namespace of the
	 * child's own before it execs bwrap: bwrap's recursive binds of / and of the workspace
	 * carry them into the sandbox, read-only ones staying read-only. Anyone else passes them to
	 * bwrap.
	 */
	if (harden_can_mount()) {
		plan->mounts = o;
		plan->mounts_required = true;
		o = (protect_ops){0};
		return 0;
	}
	return protect_bwrap_args(&o, io_argv);
}

static int bwrap_confine(const dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
			 dsb_confined *c, char *why, size_t why_size)
{
	/* A bwrap the command could have replaced is no sandbox (the verdict may predate it). */
	if (path_is_under(p->bwrap, policy->workspace_root)) {
		(void)snprintf(why, why_size, "bwrap at %s lies in the workspace", p->bwrap);
		return -EPERM;
	}
	confine_plan *plan;
	int r = plan_new(c, &plan);
	if (r < 0)
		return r;
	plan->filter_fd = BWRAP_FILTER_FD;
	plan->contained = true;
	r = bwrap_argv(p, policy->mode, policy->workspace_root, &c->argv);
	if (r >= 0)
		r = bwrap_protect(policy, plan, &c->argv, why, why_size);
	if (r >= 0)
		r = push_command(&c->argv, argv);
	return r;
}

const backend_ops backend_bwrap = {
	.name = "bwrap",
	.denials = (const char *const[]){"read-only file system", NULL},
	.fatal = (const char *const[]){"bwrap: ", NULL},
	.identity = bwrap_identity,
	.probe = bwrap_probe,
	.report = bwrap_report,
	.confine = bwrap_confine,
};

int bwrap_hardening(int filter_fd, char ***io_argv)
{
	char fd[16];
	(void)snprintf(fd, sizeof(fd), "%d", filter_fd);
	/*
	 * --unshare-user: as root, bwrap keeps the bounding set full otherwise, and a uid 0
	 * command could regain every capability at its next execve(); unprivileged callers get a
	 * user namespace from bwrap anyway. /proc/sys read-only: inside that user namespace root
	 * could write the sysctls of its own UTS and IPC namespaces (no effect outside, but a
	 * sysctl write must simply fail).
	 */
	const char *more[] = {
		"--ro-bind",	 "/proc/sys",  "/proc/sys", "--unshare-user", "--unshare-ipc",
		"--unshare-uts", "--cap-drop", "ALL",	    "--seccomp",      fd,
	};
	int r = 0;
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(more); i++)
		r = strv_push(io_argv, more[i]);
	return r;
}
