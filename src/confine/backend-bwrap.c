/* SPDX-License-Identifier: MIT */
/*
 * The bubblewrap backend: DSH's profile (profile.c) and our hardening on top: user, IPC and UTS
 * namespaces, every capability dropped, the system-call filter handed to bwrap. It runs only a
 * bwrap found where nobody but root or the user could have put it. A restricted network gets
 * the command a network namespace of its own, made by the child before it execs bwrap (the
 * proxy's listener is made in there and sent out), with the connect/send listener installed
 * below bwrap's filter; protected paths are binds after the writable ones, or, for root, mounts
 * the child makes in a mount namespace of its own before bwrap starts. Evidence of the file
 * operations its read-only mounts refuse comes through the same listener below it.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"

#include "../policy/policy.h"
#include "confine.h"

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

/* What a child installing a runner program with a listener got: 0, or 1 when it got none. */
static int try_listener(void *prog)
{
	return seccomp_install_listener(prog) < 0 ? 1 : 0;
}

/*
 * Whether a listener can be had below bwrap here: none where a filter above us holds one
 * already (a container runtime's supervisor: EBUSY), or before Linux 5.0. Tried in a child of
 * our memory that nothing else reaps (no exit signal: waited for with __WCLONE), which installs
 * the network's runner program and exits.
 */
static bool listener_available(void)
{
	_Alignas(16) char stack[16384];
	pid_t pid = clone(try_listener, stack + sizeof(stack), CLONE_VM | CLONE_VFORK,
			  (void *)seccomp_net_only_program());
	int status = 0;
	while (pid > 0 && waitpid(pid, &status, __WCLONE) < 0)
		if (errno != EINTR)
			return false;
	return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
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
	confine_plan plan = {.filter_fd = BWRAP_FILTER_FD, .wraps = true, .contained = true};
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
	if (spawn_probe(&c, p->probe_timeout_ms, NULL, out->reason, sizeof(out->reason)) == 0) {
		out->usable = true;
		out->enforcement = DSB_ENFORCEMENT_FULL;
		/* Evidence: a supervisor that can let each call go on, and its listener. */
		if (p->evidence && seccomp_continue_available() && listener_available())
			out->hardening |= DSB_HARDEN_FILE_EVIDENCE;
	}
	strv_free(argv);
}

/*
 * The writable roots that are the host's own directories here: the workspace and the extra
 * roots (the sandbox's /tmp is a private tmpfs), bound writable after DSH's profile.
 */
static int host_roots(const dsb_exec_policy *policy, char ***ret)
{
	int r = strv_push(ret, policy->workspace_root);
	for (char **e = policy->extra_roots; r >= 0 && e && *e; e++)
		r = strv_push(ret, *e);
	return r;
}

static int bwrap_extra_roots(const dsb_exec_policy *policy, char ***io_argv)
{
	int r = 0;
	for (char **e = policy->extra_roots; r >= 0 && e && *e; e++) {
		const char *bind[] = {"--bind", *e, *e};
		for (size_t i = 0; r >= 0 && i < ELEMENTSOF(bind); i++)
			r = strv_push(io_argv, bind[i]);
	}
	return r;
}

/*
 * A session's calls see its private directory as /tmp (docs/design/paths.md): bound where
 * DSH's profile puts a fresh tmpfs in workspace-write, read-only over the host's otherwise.
 */
static int bwrap_private_tmp(const dsb_exec_policy *policy, char ***io_argv)
{
	if (!policy->tmp_dir)
		return 0;
	if (policy->mode != DSB_MODE_WORKSPACE_WRITE) {
		/* A workspace beneath /tmp is shown again over it, on the directory made for it. */
		const char *ws = policy->workspace_root;
		bool under = strcmp(ws, "/tmp") != 0 && path_is_under(ws, "/tmp");
		const char *a[] = {"--ro-bind", policy->tmp_dir, "/tmp", "--ro-bind", ws, ws};
		int r = 0;
		for (size_t i = 0; r >= 0 && i < (under ? 6 : 3); i++)
			r = strv_push(io_argv, a[i]);
		return r;
	}
	char **v = *io_argv;
	for (size_t i = 0; v[i] && v[i + 1]; i++)
		if (strcmp(v[i], "--tmpfs") == 0 && strcmp(v[i + 1], "/tmp") == 0) {
			/* --tmpfs /tmp becomes --bind DIR /tmp: one word more. */
			size_t n = i + 2;
			while (v[n])
				n++;
			char **grown = reallocarray(v, n + 2, sizeof(char *));
			char *bind = strdup("--bind"), *dir = strdup(policy->tmp_dir);
			if (!grown || !bind || !dir) {
				if (grown)
					*io_argv = grown;
				free(bind);
				free(dir);
				return -ENOMEM;
			}
			memmove(grown + i + 2, grown + i + 1, (n - i) * sizeof(char *));
			free(grown[i]);
			grown[i] = bind;
			grown[i + 1] = dir;
			*io_argv = grown;
			return 0;
		}
	return 0;
}

/*
 * Protected paths as binds after the writable ones. Only the workspace and the extra roots
 * are the host's and writable here; the host's /tmp is not even shown in workspace-write (a
 * tmpfs, or the session's private /tmp), nor in read-only under a session.
 */
static int bwrap_protect(const dsb_provider *p, const dsb_exec_policy *policy, confine_plan *plan,
			 char ***io_argv, confine_failure *why)
{
	char *tmp[] = {(char *)"/tmp", NULL};
	bool writable = policy->mode == DSB_MODE_WORKSPACE_WRITE;
	_cleanup_strv_free_ char **host = NULL;
	int r = host_roots(policy, &host);
	_cleanup_(protect_ops_done) protect_ops o = {0};
	if (r >= 0)
		r = protect_ops_build(policy, writable ? host : NULL,
				      writable || policy->tmp_dir ? tmp : NULL, &o);
	if (r >= 0 && o.n > 0 && writable && !p->dry)
		r = protect_make_missing(policy, host, why->detail, sizeof(why->detail));
	/* Evidence names a refusal there by the path's reason (bwrap_evidence()). */
	for (size_t i = 0; r >= 0 && p->evidence && i < o.n; i++) {
		protect_op op = o.v[i].op;
		if (op == PROTECT_READ_ONLY)
			r = strv_push(&plan->ro_paths, o.v[i].path);
		else if (op == PROTECT_HIDE_DIR || op == PROTECT_HIDE_FILE)
			r = strv_push(&plan->hidden_paths, o.v[i].path);
	}
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
		/*
		 * Not what lies in the private /tmp, which bwrap binds later, nor the hidden
		 * STORE/.tmp, which would hide that bind's source from bwrap: those stay
		 * bwrap's.
		 */
		protect_ops late = {0};
		size_t k = 0;
		for (size_t i = 0; i < o.n; i++) {
			protect_ops *to = o.v[i].source || o.v[i].kind == DSB_PROTECT_PRIVATE_TMP
						  ? &late
						  : NULL;
			if (!to) {
				o.v[k++] = o.v[i];
				continue;
			}
			protect_mount *v = reallocarray(late.v, late.n + 1, sizeof(*v));
			if (!v) {
				protect_ops_done(&late);
				return -ENOMEM;
			}
			late.v = v;
			late.v[late.n++] = o.v[i];
		}
		o.n = k;
		r = protect_bwrap_args(&late, io_argv);
		protect_ops_done(&late);
		if (r < 0)
			return r;
		plan->steps |= STEP(STEP_MOUNT_NAMESPACE) | STEP(STEP_MOUNTS);
		plan->mounts = o;
		plan->mounts_required = true;
		o = (protect_ops){0};
		return 0;
	}
	return protect_bwrap_args(&o, io_argv);
}

/*
 * A network policy other than full (docs/design/network.md): a network namespace with a
 * loopback alone, where the proxy's listener waits for the allow-list; the command's connect
 * and send calls go to the supervisor, whose roots are where the command's own sockets lie as
 * it sees them: the writable roots (its /tmp a tmpfs of the sandbox's own). No metadata call
 * comes to it here.
 */
static int bwrap_network(const dsb_provider *p, const dsb_exec_policy *policy, confine_plan *plan)
{
	if (p->network.access == DSB_NETWORK_FULL)
		return 0;
	plan->steps |= STEP(STEP_NET_NAMESPACE) | STEP(STEP_LOOPBACK) | STEP(STEP_LISTENER);
	plan->runner_flags |= SECCOMP_NET_NOTIFY;
	int r = 0;
	if (policy->mode == DSB_MODE_WORKSPACE_WRITE)
		r = dsb_policy_writable_roots(policy, &plan->meta_roots, NULL) < 0 ? -ENOMEM : 0;
	if (r >= 0 && p->network.access == DSB_NETWORK_ALLOWLIST)
		r = plan_allowlist(plan, p);
	return r;
}

/*
 * Evidence of the file operations bwrap's read-only mounts refuse (docs/design/evidence.md): a
 * listener below bwrap for the write-class file calls and the metadata changes, which the
 * supervisor only looks at (bwrap's own setup's calls come first, and go on). A kernel that
 * cannot let a call go on from the supervisor (before 5.5) has none.
 */
static int bwrap_evidence(const dsb_provider *p, const dsb_exec_policy *policy, confine_plan *plan)
{
	if (!p->evidence || !seccomp_continue_available())
		return 0;
	plan->steps |= STEP(STEP_LISTENER);
	plan->runner_flags |= SECCOMP_METADATA_NOTIFY | SECCOMP_FILES_NOTIFY;
	if (plan->hidden_paths)
		plan->runner_flags |= SECCOMP_FILES_READ_NOTIFY;
	/* Where it may write, as it sees them: a refusal elsewhere is "outside". */
	if (policy->mode == DSB_MODE_WORKSPACE_WRITE && !plan->meta_roots)
		return dsb_policy_writable_roots(policy, &plan->meta_roots, NULL) < 0 ? -ENOMEM : 0;
	return 0;
}

static int bwrap_confine(const dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
			 dsb_confined *c, confine_failure *why)
{
	/* A bwrap the command could have replaced is no sandbox (the verdict may predate it). */
	if (path_is_under(p->bwrap, policy->workspace_root)) {
		(void)snprintf(why->detail, sizeof(why->detail),
			       "bwrap at %s lies in the workspace", p->bwrap);
		return -EPERM;
	}
	confine_plan *plan;
	int r = plan_new(c, &plan);
	if (r < 0)
		return r;
	plan->filter_fd = BWRAP_FILTER_FD;
	plan->wraps = true;
	plan->contained = true;
	r = bwrap_argv(p, policy->mode, policy->workspace_root, &c->argv);
	if (r >= 0)
		r = bwrap_private_tmp(policy, &c->argv);
	if (r >= 0)
		r = bwrap_extra_roots(policy, &c->argv);
	if (r >= 0)
		r = bwrap_protect(p, policy, plan, &c->argv, why);
	if (r >= 0)
		r = push_command(&c->argv, argv);
	if (r >= 0)
		r = bwrap_network(p, policy, plan);
	if (r >= 0)
		r = bwrap_evidence(p, policy, plan);
	return r;
}

static bool bwrap_protects(unsigned hardening)
{
	(void)hardening;
	return true; /* its own mount namespace, always */
}

static const char *bwrap_network_enforcement(const dsb_probe_backend *b, dsb_network_access access)
{
	(void)b;
	(void)access;
	return "namespace";
}

#define BWRAP_EXECVP "bwrap: execvp "

int bwrap_exec_errno(int exit_code, const char *text, size_t len, const char *argv0)
{
	/* bwrap's die_with_error("execvp %s", argv0): its whole stderr, then exit 1. */
	size_t p = sizeof(BWRAP_EXECVP) - 1, a = strlen(argv0);
	if (exit_code != 1 || !text || len < p + a + 4 || memcmp(text, BWRAP_EXECVP, p) != 0 ||
	    memcmp(text + p, argv0, a) != 0 || memcmp(text + p + a, ": ", 2) != 0 ||
	    text[len - 1] != '\n')
		return 0;
	const char *desc = text + p + a + 2;
	size_t desc_len = len - 1 - (p + a + 2);
	for (int e = 1; e < 4096; e++) {
		const char *d = strerrordesc_np(e);
		if (d && strlen(d) == desc_len && memcmp(d, desc, desc_len) == 0)
			return e;
	}
	return 0;
}

/* DSH's profile gives workspace-write a tmpfs at /tmp: sized with bwrap's --size before it. */
static int bwrap_tmp_cap(dsb_confined *c, uint64_t bytes)
{
	size_t n = 0, at = 0;
	while (c->argv[n])
		n++;
	for (size_t i = 0; i + 1 < n && !at; i++)
		if (strcmp(c->argv[i], "--tmpfs") == 0 && strcmp(c->argv[i + 1], "/tmp") == 0)
			at = i + 1; /* + 1: never 0 */
	if (!at)
		return 0; /* no /tmp of its own (read-only): nothing to cap */
	char size[32];
	(void)snprintf(size, sizeof(size), "%llu", (unsigned long long)bytes);
	char **v = reallocarray(c->argv, n + 3, sizeof(char *));
	if (!v)
		return -ENOMEM;
	c->argv = v;
	char *flag = strdup("--size"), *value = strdup(size);
	if (!flag || !value) {
		free(flag);
		free(value);
		return -ENOMEM;
	}
	memmove(&v[at + 1], &v[at - 1], (n - (at - 1) + 1) * sizeof(char *));
	v[at - 1] = flag;
	v[at] = value;
	return 0;
}

const backend_ops backend_bwrap = {
	.name = "bwrap",
	.denials = (const char *const[]){"read-only file system", NULL},
	.fatal = (const char *const[]){"bwrap: ", NULL},
	.identity = bwrap_identity,
	.probe = bwrap_probe,
	.report = bwrap_report,
	.confine = bwrap_confine,
	.protects = bwrap_protects,
	.private_tmp = true,
	.session_tmp = bwrap_protects,
	.own_userns = true,
	.tmp_cap = bwrap_tmp_cap,
	.network = bwrap_network_enforcement,
	.exec_prefix = BWRAP_EXECVP,
	.exec_errno = bwrap_exec_errno,
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
