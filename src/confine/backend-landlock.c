/* SPDX-License-Identifier: MIT */
/*
 * The Landlock backend, in-process: the command itself is spawned, and the child restricts
 * itself to DSH's launcher grants (dsh-compat §5.6) before exec — one exec instead of launcher plus
 * command, and failures come back out of band. Read-only: `/` readable, `/dev/null` writable;
 * workspace-write adds the host's /tmp and the workspace. Beyond DSH the child also gets IPC and
 * UTS namespaces where the kernel allows, loses every capability and gets the system-call
 * filter (the steps of STEPS_SELF), metadata calls go to the supervisor, and the call's
 * subreaper ends whatever it leaves (tree.c). A restricted network is a network namespace the
 * child makes, or, where none can be made, the filter's refusal of every socket family but
 * AF_UNIX.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confine.h"

/* The ABI the provider uses: the kernel's, capped by landlockAbiMax (an explicit degrade). */
int landlock_effective_abi(const dsb_provider *p)
{
	int abi = landlock_abi();
	if (abi > 0 && p->abi_max > 0 && abi > p->abi_max)
		abi = p->abi_max;
	return abi;
}

/* What the child's HARDEN_* bits mean for `probe`. */
static unsigned hardening_of(unsigned achieved)
{
	unsigned h = 0;
	if (achieved & HARDEN_CAPS)
		h |= DSB_HARDEN_CAPABILITIES;
	if (achieved & HARDEN_BOUNDING)
		h |= DSB_HARDEN_BOUNDING_SET;
	if (achieved & HARDEN_FILTER)
		h |= DSB_HARDEN_SECCOMP;
	if (achieved & HARDEN_USER_NS)
		h |= DSB_HARDEN_USER_NAMESPACE;
	if (achieved & HARDEN_UTS_NS)
		h |= DSB_HARDEN_UTS_NAMESPACE;
	if (achieved & HARDEN_MNT_NS)
		h |= DSB_HARDEN_MOUNT_NAMESPACE;
	if (achieved & HARDEN_META_SUPERVISED)
		h |= DSB_HARDEN_METADATA_SUPERVISED;
	if (achieved & HARDEN_META_REFUSED)
		h |= DSB_HARDEN_METADATA_REFUSED;
	if (achieved & HARDEN_NET_NS)
		h |= DSB_HARDEN_NET_NAMESPACE;
	if (achieved & HARDEN_FILES_SUPERVISED)
		h |= DSB_HARDEN_FILE_EVIDENCE;
	h |= achieved & HARDEN_IPC_NS ? DSB_HARDEN_IPC_NAMESPACE : DSB_HARDEN_IPC_FILTERED;
	return h;
}

static void landlock_report(const dsb_provider *p, dsb_probe_backend *out)
{
	char *ro[] = {(char *)"/", NULL}, *rw[] = {NULL};
	landlock_plan plan = {.ro = ro, .rw = rw, .scope = p->scope, .abi_max = p->abi_max};
	landlock_status st;
	out->landlock_abi = landlock_abi();
	out->landlock_abi_used = landlock_effective_abi(p);
	landlock_negotiate(&plan, out->landlock_abi_used, &st);
	out->handled_fs = out->landlock_abi > 0 ? st.handled_fs : 0;
	out->scoped = out->landlock_abi > 0 ? st.scoped : 0;

	/* What every Landlock run gets; the probe adds what this host allowed (namespaces). */
	out->hardening |= DSB_HARDEN_NO_NEW_PRIVS | DSB_HARDEN_STDIO_ONLY | DSB_HARDEN_REAPED;
	/*
	 * Landlock's filesystem rights never cover metadata (chmod, chown, ...): every call of
	 * ours, landlock-run's included, sends those to the supervisor, or refuses them where it
	 * cannot (the probe says which).
	 */
	if (p->network.access == DSB_NETWORK_FULL)
		out->not_governed = DSB_UNGOVERNED_NETWORK;
	if (out->scoped & LL_SCOPE_SIGNAL)
		out->hardening |= DSB_HARDEN_SIGNAL_SCOPE;
	else /* it could signal, so kill, the subreaper that would end its leftovers */
		out->not_governed |= DSB_UNGOVERNED_SIGNALS | DSB_UNGOVERNED_SURVIVORS;
	if (out->scoped & LL_SCOPE_ABSTRACT_UNIX_SOCKET)
		out->hardening |= DSB_HARDEN_ABSTRACT_UNIX_SCOPE;
	else
		out->not_governed |= DSB_UNGOVERNED_ABSTRACT_UNIX;
}

static void landlock_probe(dsb_provider *p, dsb_probe_backend *out)
{
	if (out->landlock_abi_used < 0) {
		(void)snprintf(out->reason, sizeof(out->reason),
			       "landlock-run: landlock is not enforced by this kernel (ABI "
			       "unsupported or disabled)");
		return;
	}
	/* `--ro /` and the whole hardening of a real call: what fails here fails every call. */
	char *ro[] = {(char *)"/", NULL}, *rw[] = {NULL};
	confine_plan plan = {
		.steps = STEPS_SELF,
		.landlock = {.ro = ro, .rw = rw, .scope = p->scope, .abi_max = p->abi_max},
		.filter_flags = LANDLOCK_FILTER | SECCOMP_METADATA_NOTIFY |
				(p->evidence ? SECCOMP_FILES_NOTIFY : 0),
		.filter_fd = -1,
		.mount_ns = true, /* can protected paths be enforced here? */
		.net_ns = true,	  /* can a network policy have its own namespace? */
	};
	landlock_status st;
	landlock_negotiate(&plan.landlock, out->landlock_abi_used, &st);
	static const char *const probe_command[] = {PROBE_COMMAND, NULL};
	char **argv = (char **)probe_command;
	dsb_confined c = {
		.argv = argv, .landlock = true, .backend = (char *)"landlock", .plan = &plan};
	unsigned achieved = 0;
	if (spawn_probe(&c, p->probe_timeout_ms, &achieved, out->reason, sizeof(out->reason)) ==
	    0) {
		out->usable = true;
		out->enforcement = st.partial ? DSB_ENFORCEMENT_PARTIAL : DSB_ENFORCEMENT_FULL;
		out->hardening |= hardening_of(achieved);
	}
}

static bool landlock_protects(unsigned hardening)
{
	return hardening & DSB_HARDEN_MOUNT_NAMESPACE;
}

/*
 * Whether @m is mounted in the command's own /tmp (steps.c mount_own_tmp()), after it: what
 * lies in the session's private directory, and what else lies beneath /tmp outside the roots
 * carried into it. The rest is mounted before, on the host's paths: a carried root (a
 * workspace in /tmp/ws) then takes its protections along in one recursive bind from a
 * descriptor, wherever its mount point in the session's /tmp leads by then.
 */
static bool mount_is_late(const confine_plan *plan, const protect_mount *m)
{
	if (m->source)
		return true;
	if (!path_is_under(m->path, "/tmp"))
		return false;
	for (char **k = plan->tmp_keep; k && *k; k++)
		if (path_is_under(m->path, *k))
			return false;
	return true;
}

/*
 * Protected paths inside the writable roots (the workspace, /tmp, the temp dir: all the host's
 * here) become mounts in the child's own mount namespace. Where the probe could make none, the
 * policy-bearing ones refuse the call and the rest go unprotected (reported by `policy`).
 */
static int landlock_protect(const dsb_provider *p, const dsb_exec_policy *policy,
			    confine_plan *plan, confine_failure *why)
{
	_cleanup_strv_free_ char **roots = NULL;
	char *tmp[] = {(char *)"/tmp", NULL};
	if (dsb_policy_writable_roots(policy, &roots, NULL) < 0)
		return -ENOMEM;
	/* The host's /tmp is out of sight under a /tmp of the command's own. */
	if (plan->tmp_own) {
		size_t k = 0;
		for (size_t i = 0; roots[i]; i++) {
			if (strcmp(roots[i], "/tmp") == 0)
				free(roots[i]);
			else
				roots[k++] = roots[i];
		}
		roots[k] = NULL;
	}
	int r = protect_ops_build(policy, roots, plan->tmp_own ? tmp : NULL, &plan->mounts);
	for (size_t i = 0; r >= 0 && plan->tmp_own && i < plan->mounts.n; i++)
		plan->mounts.v[i].late = mount_is_late(plan, &plan->mounts.v[i]);
	if (r < 0 || plan->mounts.n == 0)
		return r;
	if (!(p->v.hardening & DSB_HARDEN_MOUNT_NAMESPACE)) {
		r = protect_refuse(&plan->mounts,
				   "no mount namespace can be made here to protect it", why->detail,
				   sizeof(why->detail));
		protect_ops_done(&plan->mounts);
		return r;
	}
	plan->steps |= STEP(STEP_MOUNTS);
	plan->mount_ns = true;
	plan->mounts_required = protect_ops_required(&plan->mounts);
	return p->dry ? 0 : protect_make_missing(policy, roots, why->detail, sizeof(why->detail));
}

/*
 * /tmp of the command's own where a mount namespace can be made (docs/design/paths.md): in
 * workspace-write the session's private directory or a fresh tmpfs, in read-only the
 * session's alone (an agentless read-only call sees the host's, as under DSH). A workspace
 * that is /tmp keeps the host's.
 */
static int landlock_own_tmp(const dsb_provider *p, const dsb_exec_policy *policy,
			    confine_plan *plan)
{
	bool writable = policy->mode == DSB_MODE_WORKSPACE_WRITE;
	if (!landlock_protects(p->v.hardening) || (!writable && !policy->tmp_dir) ||
	    strcmp(policy->workspace_root, "/tmp") == 0)
		return 0;
	plan->tmp_own = true;
	plan->mount_ns = true;
	plan->steps |= STEP(STEP_MOUNTS);
	if (policy->tmp_dir && !(plan->tmp_source = strdup(policy->tmp_dir)))
		return -ENOMEM;
	int r = 0;
	if (path_is_under(policy->workspace_root, "/tmp"))
		r = strv_push(&plan->tmp_keep, policy->workspace_root);
	for (char **e = policy->extra_roots; r >= 0 && e && *e; e++)
		if (path_is_under(*e, "/tmp"))
			r = strv_push(&plan->tmp_keep, *e);
	return r;
}

/*
 * A socket of the host's /tmp linked or moved into the workspace would pass as the command's
 * own: /tmp keeps its rights but REFER, unless it is the workspace itself.
 */
static int keep_tmp_in_place(landlock_plan *ll, const char *workspace_root)
{
	_cleanup_free_ char *tmp = realpath("/tmp", NULL);
	_cleanup_free_ char *ws = realpath(workspace_root, NULL);
	if (tmp && ws && strcmp(tmp, ws) == 0)
		return 0;
	size_t i = 0, j = 0;
	for (; ll->rw && ll->rw[i]; i++) {
		if (strcmp(ll->rw[i], "/tmp") == 0)
			free(ll->rw[i]);
		else
			ll->rw[j++] = ll->rw[i];
	}
	if (i == j)
		return 0;
	if (ll->rw)
		ll->rw[j] = NULL;
	return strv_push(&ll->rw_in_place, "/tmp");
}

/*
 * A network policy other than full (docs/design/network.md): a network namespace of the
 * command's own where the probe could make one, with the proxy's listener in it for the
 * allow-list; where it could not, the filter refuses every socket family but AF_UNIX and
 * abstract sockets are scoped, and the allow-list, which needs the namespace, refuses the call.
 * Either way connect and the sends go to the supervisor, which lets them reach sockets beneath the
 * workspace alone: the host's /tmp is every user's, its sockets (tmux's, X's) other programs'.
 */
static int landlock_network(const dsb_provider *p, const dsb_exec_policy *policy,
			    confine_plan *plan, confine_failure *why)
{
	if (p->network.access == DSB_NETWORK_FULL)
		return 0;
	bool allowlist = p->network.access == DSB_NETWORK_ALLOWLIST;
	if (p->v.hardening & DSB_HARDEN_NET_NAMESPACE) {
		plan->steps |= STEP(STEP_LOOPBACK);
		plan->net_ns = true;
	} else if (allowlist) {
		(void)snprintf(why->detail, sizeof(why->detail),
			       "no network namespace can be made here for the allow-list's proxy");
		return -EPERM;
	} else if (landlock_effective_abi(p) < 6) { /* the abstract-socket scope */
		(void)snprintf(why->detail, sizeof(why->detail),
			       "no network namespace can be made here, and this kernel's Landlock "
			       "cannot scope abstract unix sockets");
		return -EPERM;
	} else {
		plan->filter_flags |= SECCOMP_DENY_SOCKETS;
		plan->landlock.scope |= LL_SCOPE_ABSTRACT_UNIX_SOCKET;
	}
	plan->filter_flags |= SECCOMP_NET_NOTIFY;
	const char *none[] = {NULL};
	int r = (plan->net_roots = strv_of(none)) ? 0 : -ENOMEM;
	if (r >= 0 && policy->mode == DSB_MODE_WORKSPACE_WRITE)
		r = strv_push(&plan->net_roots, policy->workspace_root);
	for (char **e = policy->extra_roots; r >= 0 && e && *e; e++)
		r = strv_push(&plan->net_roots, *e);
	/* A /tmp of its own holds its own sockets; the host's is every user's. */
	if (r >= 0 && plan->tmp_own && policy->mode == DSB_MODE_WORKSPACE_WRITE)
		r = strv_push(&plan->net_roots, "/tmp");
	else if (r >= 0 && policy->mode == DSB_MODE_WORKSPACE_WRITE)
		r = keep_tmp_in_place(&plan->landlock, policy->workspace_root);
	if (r >= 0 && allowlist)
		r = plan_allowlist(plan, p);
	return r;
}

static const char *landlock_network_enforcement(const dsb_probe_backend *b,
						dsb_network_access access)
{
	/* As landlock_network() decides. */
	if (b->hardening & DSB_HARDEN_NET_NAMESPACE)
		return "namespace";
	if (access == DSB_NETWORK_NONE && b->landlock_abi_used >= 6)
		return "filter";
	return "unavailable";
}

static int landlock_confine(const dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
			    dsb_confined *c, confine_failure *why)
{
	confine_plan *plan;
	int r = plan_new(c, &plan);
	if (r < 0)
		return r;
	landlock_plan *ll = &plan->landlock;
	c->landlock = true;
	plan->steps = STEPS_SELF;
	/* Landlock has no rights for metadata: the supervisor takes those calls (handler-*.c). */
	plan->filter_flags = LANDLOCK_FILTER | SECCOMP_METADATA_NOTIFY;
	/* Evidence of the file calls it refuses (handler-files.c), on the same listener. */
	if (p->evidence)
		plan->filter_flags |= SECCOMP_FILES_NOTIFY;
	ll->scope = p->scope;
	ll->abi_max = p->abi_max;
	r = strv_push(&ll->ro, "/");
	if (r >= 0)
		r = strv_push(&ll->rw, "/dev/null");
	if (r >= 0)
		r = landlock_own_tmp(p, policy, plan);
	if (r >= 0 && policy->mode == DSB_MODE_WORKSPACE_WRITE) {
		r = strv_push(&ll->rw, "/tmp");
		if (r >= 0)
			r = strv_push(&ll->rw, policy->workspace_root);
		for (char **e = policy->extra_roots; r >= 0 && e && *e; e++)
			r = strv_push(&ll->rw, *e);
		/*
		 * Where metadata changes may land: the writable grants but /dev/null (as root,
		 * the host's node), spelled as the kernel resolves them.
		 */
		for (size_t i = 0; r >= 0 && ll->rw[i]; i++) {
			if (strcmp(ll->rw[i], "/dev/null") == 0)
				continue;
			_cleanup_free_ char *real = realpath(ll->rw[i], NULL);
			if (real)
				r = strv_push(&plan->meta_roots, real);
		}
		/*
		 * Where the host's /tmp is granted (no mount namespace here): what is beneath it
		 * is the command's, its own mode and owner are every user's.
		 */
		_cleanup_free_ char *tmp = realpath("/tmp", NULL);
		_cleanup_free_ char *ws = realpath(policy->workspace_root, NULL);
		if (r >= 0 && !plan->tmp_own && tmp && (!ws || strcmp(tmp, ws) != 0))
			r = strv_push(&plan->meta_fixed, tmp);
	}
	if (r >= 0)
		r = landlock_protect(p, policy, plan, why);
	/* With hidden paths, reads too, so that a read of one is recorded (evidence.md). */
	for (size_t i = 0; r >= 0 && p->evidence && i < plan->mounts.n; i++)
		if (plan->mounts.v[i].op == PROTECT_HIDE_DIR ||
		    plan->mounts.v[i].op == PROTECT_HIDE_FILE)
			plan->filter_flags |= SECCOMP_FILES_READ_NOTIFY;
	/* A protected path refuses with EROFS, as under bwrap: that is a denial here too. */
	if (r >= 0 && plan->mounts.n > 0)
		r = strv_push(&c->denial_signatures, "read-only file system");
	if (r >= 0)
		r = landlock_network(p, policy, plan, why);
	if (r >= 0 && !(c->argv = strv_copy(argv)))
		r = -ENOMEM;
	return r;
}

/*
 * limits.tmpBytes: the size of the fresh tmpfs a call of no session gets as its own /tmp. A
 * session's /tmp (a directory) and the host's (no mount namespace) hold none.
 */
static int landlock_tmp_cap(dsb_confined *c, uint64_t bytes)
{
	confine_plan *plan = c->plan;
	if (!plan || !plan->tmp_own || plan->tmp_source)
		return -EPERM;
	plan->tmp_bytes = bytes;
	return 0;
}

const backend_ops backend_landlock = {
	.name = "landlock",
	.denials = (const char *const[]){"permission denied", NULL},
	.fatal = NULL, /* the child's failures come back out of band */
	.identity = NULL,
	.probe = landlock_probe,
	.report = landlock_report,
	.confine = landlock_confine,
	.protects = landlock_protects,
	.private_tmp = false, /* where no mount namespace can be made, the host's, granted */
	.session_tmp = landlock_protects,
	.own_userns = true,
	.network = landlock_network_enforcement,
	.tmp_cap = landlock_tmp_cap,
};
