/* SPDX-License-Identifier: MIT */
/*
 * The provider (spec §5.2-5.4, §5.9): a chain of backends, probed in order until one works, with
 * the verdict cached for the provider's life. The CLI also keeps usable verdicts on disk, keyed
 * by what would change them (kernel release, the bwrap binary's identity, uid, chain, options):
 * a one-shot call then costs no probe. A stale verdict can only fail closed: if the cached
 * backend stopped working, its runs fail as runner failures; "unavailable" is never cached on
 * disk, so a fixed host is noticed on the next call. No backend means SANDBOX_UNAVAILABLE and
 * nothing runs.
 *
 * The chain knows backends only through their backend_ops (backend-*.c), registered from the
 * build's list. Probes are functional, as DSH's: each backend runs `true` the way a read-only
 * call would run (a host without the namespaces or the filter fails here, not later), bounded
 * by probeTimeoutMs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "../policy/policy.h"
#include "confine.h"

/* The registry: every backend of the build, by enum (generated from backends.h). */
static const backend_ops *const backends[_DSB_BACKEND_MAX] = {
#define BACKEND_ENTRY_(name, NAME) [DSB_BACKEND_##NAME] = &backend_##name,
	DSB_BACKENDS(BACKEND_ENTRY_)
#undef BACKEND_ENTRY_
};

const char *dsb_enforcement_to_string(dsb_enforcement e)
{
	switch (e) {
	case DSB_ENFORCEMENT_FULL:
		return "full";
	case DSB_ENFORCEMENT_PARTIAL:
		return "partial";
	case _DSB_ENFORCEMENT_MAX:
	case _DSB_ENFORCEMENT_INVALID:
		break;
	}
	return NULL;
}

int dsb_provider_new(const dsb_config *cfg, const char *cache_dir, dsb_provider **ret_provider,
		     dsb_error *reterr)
{
	if (!cfg || !ret_provider)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_provider_new: missing argument");
	dsb_provider *p = calloc(1, sizeof(*p));
	if (!p)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "provider: out of memory");
	memcpy(p->chain, cfg->backends, cfg->n_backends * sizeof(cfg->backends[0]));
	p->n_chain = cfg->n_backends;
	p->probe_timeout_ms = cfg->probe_timeout_ms;
	p->scope = (cfg->landlock_scope & DSB_SCOPE_SIGNAL ? LL_SCOPE_SIGNAL : 0) |
		   (cfg->landlock_scope & DSB_SCOPE_ABSTRACT_UNIX_SOCKET
			    ? LL_SCOPE_ABSTRACT_UNIX_SOCKET
			    : 0);
	p->abi_max = (int)cfg->landlock_abi_max;
	p->runner_command = strv_copy(cfg->runner_command);
	p->runner_failure_signatures = strv_copy(cfg->runner_failure_signatures);
	p->cache_dir = cache_dir ? strdup(cache_dir) : NULL;
	p->network.access = dsb_config_network_access(cfg);
	p->network.allow = strv_copy(dsb_config_network_allow(cfg));
	p->network.deny = strv_copy(dsb_config_network_deny(cfg));
	p->network.hosts = strv_copy(dsb_config_network_hosts(cfg));
	unsigned port = dsb_config_network_proxy_port(cfg);
	p->network.proxy_port = (uint16_t)(port ? port : NET_PROXY_PORT);
	if (!p->runner_command || !p->runner_failure_signatures || (cache_dir && !p->cache_dir) ||
	    !p->network.allow || !p->network.deny || !p->network.hosts) {
		dsb_provider_free(p);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "provider: out of memory");
	}
	*ret_provider = p;
	return 0;
}

dsb_provider *dsb_provider_free(dsb_provider *p)
{
	if (p) {
		strv_free(p->runner_command);
		strv_free(p->runner_failure_signatures);
		strv_free(p->network.allow);
		strv_free(p->network.deny);
		strv_free(p->network.hosts);
		free(p->cache_dir);
		free(p);
	}
	return NULL;
}

/* --- probes --------------------------------------------------------------------------------- */

/* Copies as much of @src as fits: a reason is for people, a cut one still says enough. */
static void copy_truncated(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The runner's first stderr line, when it said something, is the reason it failed. */
int chain_run_probe(const dsb_provider *p, const dsb_confined *c, unsigned *ret_achieved,
		    char *reason, size_t size)
{
	_cleanup_close_ int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) < 0) {
		(void)snprintf(reason, size, "cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	_cleanup_close_ int err_read = errpipe[0];
	dsb_spawn_options o = DSB_SPAWN_OPTIONS_INIT;
	o.stdin_fd = o.stdout_fd = devnull;
	o.stderr_fd = errpipe[1];
	dsb_error err;
	pid_t pid;
	/* A listener taken is what a call gets (the probe's command changes no metadata). */
	_cleanup_close_ int meta_fd = -1;
	int r = confined_spawn(c, DSB_MODE_READ_ONLY, &o, &meta_fd, NULL, 0, &pid, ret_achieved,
			       &err);
	close(errpipe[1]);
	if (r < 0) {
		/* The runner's own words: "Runner failure: DETAIL" ends the message. */
		const char *detail = strstr(err.message, "Runner failure: ");
		copy_truncated(reason, size, detail ? detail + 16 : err.message);
		return -1;
	}
	int status;
	r = spawn_wait(pid, p->probe_timeout_ms, &status);
	if (r == -ETIMEDOUT) {
		(void)snprintf(reason, size, "the probe did not finish within %llu ms",
			       (unsigned long long)p->probe_timeout_ms);
		return -1;
	}
	if (r < 0) {
		(void)snprintf(reason, size, "cannot wait for the probe: %s", strerror(-r));
		return -1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;

	/* Everyone who could write the pipe is gone: this read cannot block. */
	char said[256] = "";
	ssize_t n = read(err_read, said, sizeof(said) - 1);
	said[n > 0 ? n : 0] = '\0';
	said[strcspn(said, "\n")] = '\0';
	if (WIFEXITED(status))
		(void)snprintf(reason, size, "the probe exited with status %d%s%s",
			       WEXITSTATUS(status), said[0] ? ": " : "", said);
	else
		(void)snprintf(reason, size, "the probe was killed by signal %d", WTERMSIG(status));
	return -1;
}

/* Probes the chain in order; with @all, every backend (for the report), else up to the first
 * usable one (spec §5.3: each probed at most once, none after the selected). */
static void probe_chain(dsb_provider *p, bool all)
{
	dsb_probe_report *rep = &p->last;
	*rep = (dsb_probe_report){.selected = -1};
	for (size_t i = 0; i < p->n_chain && i < ELEMENTSOF(rep->backends); i++) {
		dsb_probe_backend *b = &rep->backends[rep->n_backends++];
		*b = (dsb_probe_backend){.probed = true};
		(void)snprintf(b->name, sizeof(b->name), "%s", dsb_backend_to_string(p->chain[i]));
		const backend_ops *ops = backends[p->chain[i]];
		ops->report(p, b);
		ops->probe(p, b);
		if (b->usable && rep->selected < 0)
			rep->selected = (int)i;
		if (rep->selected >= 0 && !all)
			break;
	}
	p->v.known = true;
	p->v.selected = rep->selected;
	p->v.from_cache = false;
	p->v.enforcement = DSB_ENFORCEMENT_FULL;
	p->v.hardening = 0;
	if (rep->selected >= 0) {
		p->v.enforcement = rep->backends[rep->selected].enforcement;
		p->v.hardening = rep->backends[rep->selected].hardening;
	}
}

/* --- the verdict cache on disk -------------------------------------------------------------- */

/* What the verdict depends on. A change to any of it is a different key. */
static char *cache_key(dsb_provider *p)
{
	struct utsname u;
	if (uname(&u) < 0)
		return NULL;

	strbuf sb = STRBUF_INIT;
	/* v2: the probe also tries a mount namespace (protected paths); v3: a network one. */
	int r = strbuf_printf(&sb, "v3|kernel=%s %s|uid=%u|chain=", u.release, u.version,
			      (unsigned)geteuid());
	/* Each backend's own parts (bwrap: which binary, by path and identity). */
	for (size_t i = 0; r >= 0 && i < p->n_chain; i++) {
		const backend_ops *ops = backends[p->chain[i]];
		r = strbuf_printf(&sb, "%s", ops->name);
		if (r >= 0 && ops->identity)
			r = ops->identity(p, &sb);
		if (r >= 0)
			r = strbuf_puts(&sb, ",");
	}
	if (r >= 0)
		r = strbuf_printf(&sb, "|scope=%llu|abimax=%d|timeout=%llu",
				  (unsigned long long)p->scope, p->abi_max,
				  (unsigned long long)p->probe_timeout_ms);
	if (r < 0) {
		strbuf_done(&sb);
		return NULL;
	}
	return strbuf_take(&sb);
}

/* One file per uid and chain, so `--backend landlock` and the default chain keep theirs. */
static char *cache_path(const dsb_provider *p)
{
	strbuf sb = STRBUF_INIT;
	int r = strbuf_printf(&sb, "%s/probe-%u", p->cache_dir, (unsigned)geteuid());
	for (size_t i = 0; r >= 0 && i < p->n_chain; i++)
		r = strbuf_printf(&sb, "-%s", dsb_backend_to_string(p->chain[i]));
	if (r >= 0)
		r = strbuf_puts(&sb, ".json");
	if (r < 0) {
		strbuf_done(&sb);
		return NULL;
	}
	return strbuf_take(&sb);
}

static bool cache_read(dsb_provider *p)
{
	_cleanup_free_ char *key = cache_key(p), *path = cache_path(p);
	if (!key || !path)
		return false;
	json_seed();
	json_error_t error;
	json_t *j = json_load_file(path, 0, &error);
	if (!j)
		return false;
	const char *k = json_string_value(json_object_get(j, "key"));
	const char *backend = json_string_value(json_object_get(j, "backend"));
	const char *enforcement = json_string_value(json_object_get(j, "enforcement"));
	json_t *hardening = json_object_get(j, "hardening");
	int selected = -1;
	for (size_t i = 0; backend && i < p->n_chain; i++)
		if (strcmp(dsb_backend_to_string(p->chain[i]), backend) == 0)
			selected = (int)i;
	bool hit = k && strcmp(k, key) == 0 && selected >= 0 && enforcement &&
		   (!strcmp(enforcement, "full") || !strcmp(enforcement, "partial"));
	if (hit) {
		p->v.known = true;
		p->v.selected = selected;
		p->v.enforcement = strcmp(enforcement, "full") == 0 ? DSB_ENFORCEMENT_FULL
								    : DSB_ENFORCEMENT_PARTIAL;
		p->v.hardening = (unsigned)json_integer_value(hardening);
		p->v.from_cache = true;
	}
	json_decref(j);
	return hit;
}

/* Best effort: a verdict that cannot be saved is probed again next time. */
static void cache_write(dsb_provider *p)
{
	if (!p->cache_dir || p->v.selected < 0)
		return;
	_cleanup_free_ char *key = cache_key(p), *path = cache_path(p), *tmp = NULL;
	if (!key || !path || asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0)
		return;
	if (mkdir_p(p->cache_dir, 0700, false) < 0)
		return;
	json_t *j = json_pack("{s:s, s:s, s:s, s:I}", "key", key, "backend",
			      dsb_backend_to_string(p->chain[p->v.selected]), "enforcement",
			      dsb_enforcement_to_string(p->v.enforcement), "hardening",
			      (json_int_t)p->v.hardening);
	if (j && json_dump_file(j, tmp, JSON_COMPACT) == 0 && rename(tmp, path) < 0)
		(void)unlink(tmp);
	json_decref(j);
}

static void verdict_get(dsb_provider *p)
{
	if (p->v.known)
		return;
	if (p->cache_dir && cache_read(p))
		return;
	probe_chain(p, false);
	cache_write(p);
}

int dsb_provider_probe(dsb_provider *p, bool fresh, dsb_probe_report *ret_report, dsb_error *reterr)
{
	if (!p || !ret_report)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_provider_probe: missing argument");
	if (p->runner_command[0]) {
		*ret_report = (dsb_probe_report){.selected = -1, .custom_runner = true};
		return 0;
	}
	bool cached = !fresh && p->cache_dir && cache_read(p);
	if (cached) {
		/* Report what the cache says, plus the cheap kernel facts; probe nothing. */
		dsb_probe_report *rep = &p->last;
		*rep = (dsb_probe_report){.selected = p->v.selected, .from_cache = true};
		for (size_t i = 0; i < p->n_chain; i++) {
			dsb_probe_backend *b = &rep->backends[rep->n_backends++];
			*b = (dsb_probe_backend){0};
			(void)snprintf(b->name, sizeof(b->name), "%s",
				       dsb_backend_to_string(p->chain[i]));
			backends[p->chain[i]]->report(p, b);
			if ((int)i == p->v.selected) {
				b->usable = true;
				b->enforcement = p->v.enforcement;
				b->hardening = p->v.hardening;
			}
		}
	} else {
		probe_chain(p, true);
		cache_write(p);
	}
	/* Protected paths are mounts in the command's namespace: none, no protection. */
	for (size_t i = 0; i < p->last.n_backends; i++) {
		dsb_probe_backend *b = &p->last.backends[i];
		if (b->usable && !(b->hardening & DSB_HARDEN_MOUNT_NAMESPACE))
			b->not_governed |= DSB_UNGOVERNED_PROTECTED_PATHS;
	}
	*ret_report = p->last;
	return 0;
}

/* --- confine() ------------------------------------------------------------------------------ */

char **strv_of(const char *const *words)
{
	char **v = calloc(1, sizeof(char *));
	for (size_t i = 0; v && words[i]; i++)
		if (strv_push(&v, words[i]) < 0)
			return strv_free(v);
	return v;
}

const confine_plan *confined_plan(const dsb_confined *c)
{
	return c->plan;
}

void dsb_confined_done(dsb_confined *c)
{
	if (!c)
		return;
	strv_free(c->argv);
	strv_free(c->denial_signatures);
	for (size_t i = 0; i < c->n_rules; i++) {
		strv_free(c->rules[i].fatal_signatures);
		strv_free(c->rules[i].informational_lines);
	}
	free(c->rules);
	free(c->backend);
	if (c->plan) {
		confine_plan *plan = c->plan;
		strv_free(plan->landlock.ro);
		strv_free(plan->landlock.rw);
		strv_free(plan->landlock.rw_in_place);
		strv_free(plan->meta_roots);
		strv_free(plan->meta_fixed);
		strv_free(plan->net_roots);
		strv_free(plan->net_allow);
		strv_free(plan->net_deny);
		strv_free(plan->net_hosts);
		protect_ops_done(&plan->mounts);
		free(plan);
	}
	*c = (dsb_confined){0};
}

int push_command(char ***io, char *const *argv)
{
	int r = strv_push(io, "--");
	for (size_t i = 0; r >= 0 && argv[i]; i++)
		r = strv_push(io, argv[i]);
	return r;
}

static int add_rule(dsb_confined *c, const char *const *fatal, const char *const *info,
		    const int *codes, size_t n_codes)
{
	dsb_runner_rule *rules = reallocarray(c->rules, c->n_rules + 1, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	c->rules = rules;
	dsb_runner_rule *rule = &rules[c->n_rules++];
	*rule = (dsb_runner_rule){
		.allowed_exit_codes = codes,
		.n_allowed_exit_codes = n_codes,
		.fatal_signatures = strv_of(fatal),
		.informational_lines = strv_of(info),
	};
	return rule->fatal_signatures && rule->informational_lines ? 0 : -ENOMEM;
}

int plan_new(dsb_confined *c, confine_plan **ret)
{
	confine_plan *plan = calloc(1, sizeof(*plan));
	if (!plan)
		return -ENOMEM;
	plan->filter_fd = -1;
	c->plan = plan;
	*ret = plan;
	return 0;
}

/*
 * A runner gets DSH's bwrap profile and nothing else: it cannot be told to protect a path.
 * What it shows the command writable is the workspace (its /tmp is private): a policy-bearing
 * path in there refuses the call.
 */
static int runner_refuse_protected(const dsb_exec_policy *policy, char *why, size_t why_size)
{
	char *ws[] = {policy->workspace_root, NULL}, *tmp[] = {(char *)"/tmp", NULL};
	bool writable = policy->mode == DSB_MODE_WORKSPACE_WRITE;
	protect_ops o = {0};
	if (protect_ops_build(policy, writable ? ws : NULL, writable ? tmp : NULL, &o) < 0)
		return -ENOMEM;
	int r = protect_refuse(&o, "runnerCommand cannot protect it", why, why_size);
	protect_ops_done(&o);
	return r;
}

bool provider_protects(dsb_provider *p)
{
	if (p->runner_command[0])
		return false;
	verdict_get(p);
	if (p->v.selected < 0)
		return false;
	return p->chain[p->v.selected] != DSB_BACKEND_LANDLOCK ||
	       (p->v.hardening & DSB_HARDEN_MOUNT_NAMESPACE);
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
 * A network policy other than full, on either backend (docs/design/network.md): the child makes
 * a network namespace with a loopback alone, where the proxy's listener waits for the
 * allow-list; the command's connect and sendto calls go to the supervisor, which lets them
 * reach the namespace's own addresses and sockets beneath the command's roots alone. Landlock
 * where no namespace can be made: the filter refuses every socket family but AF_UNIX, and
 * abstract sockets are scoped; the allow-list, which needs the namespace, refuses the call.
 */
static int plan_network(const dsb_provider *p, const dsb_exec_policy *policy, dsb_confined *c,
			char *why, size_t why_size)
{
	if (p->network.access == DSB_NETWORK_FULL)
		return 0;
	confine_plan *plan = c->plan;
	bool allowlist = p->network.access == DSB_NETWORK_ALLOWLIST;
	bool ws = policy->mode == DSB_MODE_WORKSPACE_WRITE;
	int r = 0;
	if (!c->landlock) {
		/*
		 * bwrap: the supervisor's roots, as the command sees them: the workspace, and its
		 * /tmp, a tmpfs of the sandbox's own. No metadata call comes to it here.
		 */
		plan->net_ns = plan->net_notify = true;
		if (ws)
			r = strv_push(&plan->meta_roots, policy->workspace_root);
		if (r >= 0 && ws)
			r = strv_push(&plan->meta_roots, "/tmp");
	} else {
		if (p->v.hardening & DSB_HARDEN_NET_NAMESPACE)
			plan->net_ns = true;
		else if (allowlist) {
			(void)snprintf(why, why_size,
				       "no network namespace can be made here for the allow-list's "
				       "proxy");
			return -EPERM;
		} else if (landlock_effective_abi(p) < 6) { /* the abstract-socket scope */
			(void)snprintf(why, why_size,
				       "no network namespace can be made here, and this kernel's "
				       "Landlock cannot scope abstract unix sockets");
			return -EPERM;
		} else {
			plan->filter_flags |= SECCOMP_DENY_SOCKETS;
			plan->landlock.scope |= LL_SCOPE_ABSTRACT_UNIX_SOCKET;
		}
		plan->filter_flags |= SECCOMP_NET_NOTIFY;
		/*
		 * The host's /tmp is every user's: its sockets (tmux's, X's) are other programs'.
		 * The workspace alone is the command's (net_roots, within the metadata roots).
		 */
		const char *none[] = {NULL};
		plan->net_roots = strv_of(none);
		if (!plan->net_roots)
			r = -ENOMEM;
		if (r >= 0 && ws)
			r = strv_push(&plan->net_roots, policy->workspace_root);
		if (r >= 0 && ws)
			r = keep_tmp_in_place(&plan->landlock, policy->workspace_root);
	}
	if (r >= 0 && allowlist) {
		plan->proxy_port = p->network.proxy_port;
		plan->net_allow = strv_copy(p->network.allow);
		plan->net_deny = strv_copy(p->network.deny);
		plan->net_hosts = strv_copy(p->network.hosts);
		if (!plan->net_allow || !plan->net_deny || !plan->net_hosts)
			r = -ENOMEM;
	}
	return r;
}

static int confine_into(dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
			dsb_confined *c, char *why, size_t why_size)
{
	static const char *const none[] = {NULL};
	int r;

	if (p->runner_command[0]) {
		/* DSH's profile is the runner's contract: it has no network namespace. */
		if (p->network.access != DSB_NETWORK_FULL) {
			(void)snprintf(why, why_size,
				       "runnerCommand cannot enforce network access %s",
				       dsb_network_access_to_string(p->network.access));
			return -EPERM;
		}
		/* runnerCommand: the operator's runner with DSH's exact profile, asserted full. */
		static const char *const denial[] = {"read-only file system", "permission denied",
						     NULL};
		c->backend = strdup("runner");
		c->argv = strv_copy(p->runner_command);
		c->denial_signatures = strv_of(denial);
		if (!c->backend || !c->argv || !c->denial_signatures)
			return -ENOMEM;
		/*
		 * Only a runner the command cannot have replaced (trust.c), by its absolute path.
		 * None at all reads as DSH's spawn failure would.
		 */
		char path[4096], untrusted[512];
		r = trusted_program(c->argv[0], path, sizeof(path), untrusted, sizeof(untrusted));
		if (r == -ENOENT)
			(void)snprintf(why, why_size, "Error: spawn %s ENOENT", c->argv[0]);
		else if (r < 0)
			(void)snprintf(why, why_size, "%s", untrusted);
		else if (path_is_under(path, policy->workspace_root))
			(void)snprintf(why, why_size, "the runner %s lies in the workspace", path);
		if (r < 0 || why[0])
			return r == -ENOMEM ? r : -EPERM;
		free(c->argv[0]);
		if (!(c->argv[0] = strdup(path)))
			return -ENOMEM;
		/* DSH's profile is the runner's contract: it cannot be told what to protect. */
		r = runner_refuse_protected(policy, why, why_size);
		if (r < 0)
			return r;
		r = bwrap_profile(policy->mode, policy->workspace_root, &c->argv);
		if (r >= 0)
			r = push_command(&c->argv, argv);
		if (r >= 0)
			r = add_rule(c, (const char *const *)p->runner_failure_signatures, none,
				     NULL, 0);
		c->enforcement = DSB_ENFORCEMENT_FULL;
		return r < 0 ? r : 0;
	}

	const backend_ops *ops = backends[p->chain[p->v.selected]];
	c->enforcement = p->v.enforcement;
	c->backend = strdup(ops->name);
	c->denial_signatures = strv_of(ops->denials);
	if (!c->backend || !c->denial_signatures)
		return -ENOMEM;
	r = ops->confine(p, policy, argv, c, why, why_size);
	if (r >= 0)
		r = plan_network(p, policy, c, why, why_size);
	/* Failures of an in-process backend come back out of band: no stderr rule. */
	if (r >= 0 && ops->fatal)
		r = add_rule(c, ops->fatal, none, NULL, 0);
	return r < 0 ? r : 0;
}

int dsb_provider_confine(dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
			 dsb_confined *ret, dsb_error *reterr)
{
	if (!p || !policy || !argv || !argv[0] || !ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_provider_confine: missing argument");
	if (policy->mode != DSB_MODE_READ_ONLY && policy->mode != DSB_MODE_WORKSPACE_WRITE)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"only read-only and workspace-write are confined");

	if (!p->runner_command[0]) {
		verdict_get(p);
		if (p->v.selected < 0)
			return policy_fail_unavailable(reterr, policy->mode, NULL);
	}
	dsb_confined c = {0};
	char why[8192] = "";
	int r = confine_into(p, policy, argv, &c, why, sizeof(why));
	if (r < 0) {
		dsb_confined_done(&c);
		if (r == -EPERM)
			return policy_fail_unavailable(reterr, policy->mode, why);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "confine: out of memory");
	}
	*ret = c;
	return 0;
}

const char *dsb_probe_network_enforcement(const dsb_probe_backend *b, dsb_network_access access)
{
	if (access == DSB_NETWORK_FULL)
		return "unrestricted";
	if (!b || !b->usable)
		return "unavailable";
	/* As plan_network() decides. */
	if (strcmp(b->name, "bwrap") == 0 || (b->hardening & DSB_HARDEN_NET_NAMESPACE))
		return "namespace";
	if (access == DSB_NETWORK_NONE && strcmp(b->name, "landlock") == 0 &&
	    b->landlock_abi_used >= 6)
		return "filter";
	return "unavailable";
}
