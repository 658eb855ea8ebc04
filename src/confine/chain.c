/* SPDX-License-Identifier: MIT */
/*
 * The provider (dsh-compat §5.2-5.4, §5.9): a chain of backends, probed in order until one works,
 * with the verdict cached for the provider's life. The CLI also keeps usable verdicts on disk,
 * keyed by what would change them (kernel release, the bwrap binary's identity, uid, chain,
 * options): a one-shot call then costs no probe. A stale verdict can only fail closed: if the
 * cached backend stopped working, its runs fail as runner failures; "unavailable" is never cached
 * on disk, so a fixed host is noticed on the next call. No backend means SANDBOX_UNAVAILABLE and
 * nothing runs.
 *
 * The chain knows backends only through their backend_ops (backend-*.c), registered from the
 * build's list. Probes are functional, as DSH's: each backend runs `true` the way a read-only
 * call would run (a host without the namespaces or the filter fails here, not later), bounded
 * by probeTimeoutMs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
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
	dsb_config_limits(cfg, &p->limits);
	p->scope = (cfg->landlock_scope & DSB_SCOPE_SIGNAL ? LL_SCOPE_SIGNAL : 0) |
		   (cfg->landlock_scope & DSB_SCOPE_ABSTRACT_UNIX_SOCKET
			    ? LL_SCOPE_ABSTRACT_UNIX_SOCKET
			    : 0);
	p->abi_max = (int)cfg->landlock_abi_max;
	p->evidence = cfg->evidence;
	p->runner_command = strv_copy(cfg->runner_command);
	p->runner_failure_signatures = strv_copy(cfg->runner_failure_signatures);
	p->cache_dir = cache_dir ? strdup(cache_dir) : NULL;
	p->network.access = dsb_config_network_access(cfg);
	p->network.allow = strv_copy(dsb_config_network_allow(cfg));
	p->network.deny = strv_copy(dsb_config_network_deny(cfg));
	p->network.hosts = strv_copy(dsb_config_network_hosts(cfg));
	p->network.allow_private = strv_copy(dsb_config_network_allow_private(cfg));
	unsigned port = dsb_config_network_proxy_port(cfg);
	p->network.proxy_port = (uint16_t)(port ? port : NET_PROXY_PORT);
	if (!p->runner_command || !p->runner_failure_signatures || (cache_dir && !p->cache_dir) ||
	    !p->network.allow || !p->network.deny || !p->network.hosts ||
	    !p->network.allow_private) {
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
		strv_free(p->network.allow_private);
		free(p->cache_dir);
		free(p);
	}
	return NULL;
}

/* --- probes --------------------------------------------------------------------------------- */

/* Probes the chain in order; with @all, every backend (for the report), else up to the first
 * usable one (dsh-compat §5.3: each probed at most once, none after the selected). */
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
		r = strbuf_printf(&sb, "|scope=%llu|abimax=%d|timeout=%llu|evidence=%d",
				  (unsigned long long)p->scope, p->abi_max,
				  (unsigned long long)p->probe_timeout_ms, p->evidence);
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
		if (b->usable && !backends[p->chain[i]]->protects(b->hardening))
			b->not_governed |= DSB_UNGOVERNED_PROTECTED_PATHS;
	}
	*ret_report = p->last;
	return 0;
}

/* --- confine() ------------------------------------------------------------------------------ */

/* The backend @p confines with: the runner when one is configured, else the chain's selected. */
static const backend_ops *provider_backend(dsb_provider *p)
{
	if (p->runner_command[0])
		return &backend_runner;
	verdict_get(p);
	return p->v.selected < 0 ? NULL : backends[p->chain[p->v.selected]];
}

bool provider_protects(dsb_provider *p)
{
	const backend_ops *ops = provider_backend(p);
	return ops && ops->protects(p->v.hardening);
}

bool dsb_provider_session_tmp(dsb_provider *p)
{
	const backend_ops *ops = p ? provider_backend(p) : NULL;
	return ops && ops->session_tmp && ops->session_tmp(p->v.hardening);
}

int provider_confine(dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
		     dsb_confined *ret, confine_failure *ret_failure, dsb_error *reterr)
{
	if (!p || !policy || !argv || !argv[0] || !ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_provider_confine: missing argument");
	if (policy->mode != DSB_MODE_READ_ONLY && policy->mode != DSB_MODE_WORKSPACE_WRITE)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"only read-only and workspace-write are confined");

	const backend_ops *ops = provider_backend(p);
	if (!ops)
		return policy_fail_unavailable(reterr, policy->mode, NULL);
	dsb_confined c = {.enforcement = p->v.enforcement};
	confine_failure why;
	failure_clear(&why);
	int r = 0;
	if (!(c.backend = strdup(ops->name)) || !(c.denial_signatures = strv_of(ops->denials)))
		r = -ENOMEM;
	if (r >= 0)
		r = ops->confine(p, policy, argv, &c, &why);
	confine_plan *plan = c.plan;
	if (r >= 0 && !plan)
		r = plan_new(&c, &plan);
	if (r >= 0)
		r = limits_plan(&p->limits, ops, policy, &c, plan, &why);
	if (r >= 0 && ops->fatal)
		r = confined_add_rule(&c, ops->fatal);
	if (r < 0) {
		dsb_confined_done(&c);
		if (r != -EPERM)
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "confine: out of memory");
		if (!why.kind)
			why.kind = CONFINE_SANDBOX_FAILED;
		if (ret_failure)
			*ret_failure = why;
		return policy_fail_unavailable(reterr, policy->mode, why.detail);
	}
	*ret = c;
	return 0;
}

int dsb_provider_confine(dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
			 dsb_confined *ret, dsb_error *reterr)
{
	return provider_confine(p, policy, argv, ret, NULL, reterr);
}

/* The ops of the backend named @name (the chain's, or the runner), or NULL. */
static const backend_ops *backend_named(const char *name)
{
	dsb_backend b = name ? dsb_backend_from_string(name) : _DSB_BACKEND_INVALID;
	if (b >= 0)
		return backends[b];
	return name && strcmp(name, backend_runner.name) == 0 ? &backend_runner : NULL;
}

const char *confined_exec_prefix(const dsb_confined *c)
{
	const backend_ops *ops = backend_named(c->backend);
	return ops ? ops->exec_prefix : NULL;
}

int confined_exec_errno(const dsb_confined *c, int exit_code, const char *text, size_t len,
			const char *argv0)
{
	const backend_ops *ops = backend_named(c->backend);
	return ops && ops->exec_errno ? ops->exec_errno(exit_code, text, len, argv0) : 0;
}

const char *dsb_probe_network_enforcement(const dsb_probe_backend *b, dsb_network_access access)
{
	if (access == DSB_NETWORK_FULL)
		return "unrestricted";
	const backend_ops *ops = b && b->usable ? backend_named(b->name) : NULL;
	return ops ? ops->network(b, access) : "unavailable";
}

const char *dsb_probe_tmp(const dsb_probe_report *rep)
{
	if (rep && rep->custom_runner)
		return "call";
	const dsb_probe_backend *b =
		rep && rep->selected >= 0 ? &rep->backends[rep->selected] : NULL;
	const backend_ops *ops = b && b->usable ? backend_named(b->name) : NULL;
	if (!ops)
		return "unavailable";
	return ops->session_tmp && ops->session_tmp(b->hardening) ? "session" : "host";
}

const char *dsb_probe_protect_enforcement(const dsb_probe_report *rep,
					  const dsb_exec_policy *policy, const dsb_protected *e)
{
	const backend_ops *ops = NULL;
	unsigned hardening = 0;
	if (rep && rep->custom_runner) {
		ops = &backend_runner;
	} else if (rep && rep->selected >= 0) {
		ops = backend_named(rep->backends[rep->selected].name);
		hardening = rep->backends[rep->selected].hardening;
	}
	if (!ops || !policy || !e)
		return "unavailable";
	if (e->link)
		return "restored-after";
	if (e->absent)
		return "removed-after";
	/* Beside the workspace, /tmp is a tmpfs of the sandbox's own: the host's is unseen. */
	if (ops->private_tmp && policy->mode == DSB_MODE_WORKSPACE_WRITE &&
	    !path_is_under(e->path, policy->workspace_root) && path_is_under(e->path, "/tmp"))
		return "private-tmp";
	if (ops->protects(hardening))
		return e->kind == DSB_PROTECT_DENY_READ ? "hidden" : "read-only";
	return dsb_protect_kind_required(e->kind) ? "fails-closed" : "not-enforced";
}

const char *dsb_provider_limit(dsb_provider *p, dsb_mode mode, dsb_limit limit, uint64_t *ret_value)
{
	const backend_ops *ops = p ? provider_backend(p) : NULL;
	if (ret_value)
		*ret_value = 0;
	if (!ops || limit < 0 || limit >= _DSB_LIMIT_MAX)
		return "unavailable";
	const limits_host *h = limits_host_get();
	limit_mech m = limits_mech(h, ops, mode, limit);
	/* As limits_plan(): plain RLIMIT_NPROC holds an explicit limit only. */
	if (m == LIMIT_BY_RLIMIT && limit == DSB_LIMIT_PROCESSES &&
	    !(p->limits.set & (1u << limit)))
		m = LIMIT_BY_NONE;
	/* A tmpfs of the call's own needs a mount namespace (Landlock may have none). */
	if (limit == DSB_LIMIT_TMP_BYTES && m == LIMIT_BY_TMPFS &&
	    !(ops->session_tmp && ops->session_tmp(p->v.hardening)))
		m = LIMIT_BY_NONE;
	uint64_t v = limits_value(h, &p->limits, limit, m);
	if (ret_value)
		*ret_value = m == LIMIT_BY_NONE && !(p->limits.set & (1u << limit)) ? 0 : v;
	/* A value of 0 is no limit, whatever could hold one; one set that none can hold fails
	 * every confined call. */
	if (v && m == LIMIT_BY_NONE && (p->limits.set & (1u << limit)))
		return "fails-closed";
	return v ? limit_mech_name(m) : "none";
}

const char *dsb_provider_budgets(dsb_provider *p)
{
	const backend_ops *ops = p ? provider_backend(p) : NULL;
	return ops ? limit_mech_name(limits_budget_mech(limits_host_get(), ops)) : "unavailable";
}

/* --- explain -------------------------------------------------------------------------------- */

void provider_set_dry(dsb_provider *p)
{
	p->dry = true;
}

const char *provider_choice(dsb_provider *p, strbuf *why)
{
	if (p->runner_command[0]) {
		(void)strbuf_printf(why, "sandbox-local.runnerCommand: %s", p->runner_command[0]);
		return backend_runner.name;
	}
	verdict_get(p);
	(void)strbuf_puts(why, "the first usable of the chain");
	for (size_t i = 0; i < p->n_chain; i++)
		(void)strbuf_printf(why, "%s%s", i ? ", " : " ",
				    dsb_backend_to_string(p->chain[i]));
	if (p->v.from_cache)
		(void)strbuf_puts(why, "; the verdict cached on disk");
	else
		(void)strbuf_puts(why, "; probed now");
	/* Only a probe knows why the ones before it failed; a cached verdict names the winner. */
	for (size_t i = 0; !p->v.from_cache && i < p->last.n_backends; i++)
		if (!p->last.backends[i].usable)
			(void)strbuf_printf(why, "; %s unusable: %s", p->last.backends[i].name,
					    p->last.backends[i].reason);
	return p->v.selected < 0 ? NULL : dsb_backend_to_string(p->chain[p->v.selected]);
}

/* One line "LABEL: WORDS" and the JSON member @key, an array of @words (NULL: empty). */
static void explain_list(const explain_sink *x, const char *label, const char *key,
			 char *const *words)
{
	strbuf sb = STRBUF_INIT;
	explain_words(&sb, words);
	explain_line(x, "%s: %s", label, sb.buf && *sb.buf ? sb.buf : "(none)");
	strbuf_done(&sb);
	if (!x->json)
		return;
	jw_key(x->json, key);
	jw_array_begin(x->json);
	for (size_t i = 0; words && words[i]; i++)
		jw_string(x->json, words[i]);
	jw_array_end(x->json);
}

/*
 * The filesystem rules @c's command restricts itself to (its Landlock domain), per right, as
 * member "rules" (null: none, a runner's argv says it all).
 */
static void explain_rules(const dsb_confined *c, const confine_plan *plan, const explain_sink *x)
{
	bool has = plan && (plan->steps & STEP(STEP_LANDLOCK));
	char label[64];
	if (x->json) {
		jw_key(x->json, "rules");
		if (has)
			jw_object_begin(x->json);
		else
			jw_null(x->json);
	}
	if (!has)
		return;
	(void)snprintf(label, sizeof(label), "%s read-only", c->backend);
	explain_list(x, label, "ro", plan->landlock.ro);
	(void)snprintf(label, sizeof(label), "%s read-write", c->backend);
	explain_list(x, label, "rw", plan->landlock.rw);
	(void)snprintf(label, sizeof(label), "%s read-write in place", c->backend);
	if (plan->landlock.rw_in_place && plan->landlock.rw_in_place[0])
		explain_list(x, label, "rwInPlace", plan->landlock.rw_in_place);
	if (x->json)
		jw_object_end(x->json);
}

static void explain_hardening(unsigned hardening, const explain_sink *x)
{
	strbuf sb = STRBUF_INIT;
	if (x->json) {
		jw_key(x->json, "hardening");
		jw_array_begin(x->json);
	}
	for (unsigned bit = 1; bit; bit <<= 1) {
		const char *name = (hardening & bit) ? dsb_hardening_to_string(bit) : NULL;
		if (!name)
			continue;
		(void)strbuf_printf(&sb, "%s%s", sb.len ? ", " : "", name);
		if (x->json)
			jw_string(x->json, name);
	}
	if (x->json)
		jw_array_end(x->json);
	explain_line(x, "hardening: %s", sb.len ? sb.buf : "none");
	strbuf_done(&sb);
}

/* The network @plan gives the command, in `probe`'s words for how it is held. */
static void explain_network(const dsb_provider *p, const confine_plan *plan, const explain_sink *x)
{
	const char *how = plan_own_network(plan)      ? "namespace"
			  : plan_net_restricted(plan) ? "filter"
						      : "unrestricted";
	const char *access = dsb_network_access_to_string(p->network.access);
	explain_line(x, "network: %s (%s%s)", access, how,
		     plan_sends_proxy(plan) ? ", the allow-list's proxy inside" : "");
	explain_pair(x, "network", "access", access, "enforcement", how);
}

/* The limits of @plan: each value (0: none) and what holds it. */
static void explain_limits(const confine_plan *plan, const explain_sink *x)
{
	const confine_limits *L = plan ? &plan->limits : &(confine_limits){0};
	char cgroup[16];
	(void)snprintf(cgroup, sizeof(cgroup), "cgroup%d", L->cgroup);
	const struct {
		dsb_limit limit;
		uint64_t value;
		const char *how;
	} limits[] = {
		{DSB_LIMIT_PROCESSES, L->processes, L->nproc ? "rlimit" : cgroup},
		{DSB_LIMIT_MEMORY, L->memory, cgroup},
		{DSB_LIMIT_CPU_SECONDS, L->cpu_seconds, "rlimit"},
		{DSB_LIMIT_TMP_BYTES, plan ? plan->tmp_bytes : 0, "tmpfs"},
		{DSB_LIMIT_FILE_BYTES, L->file_bytes, "rlimit"},
	};
	strbuf sb = STRBUF_INIT;
	if (x->json) {
		jw_key(x->json, "limits");
		jw_object_begin(x->json);
	}
	for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
		const char *name = dsb_limit_to_string(limits[i].limit);
		if (limits[i].value)
			(void)strbuf_printf(&sb, "%s%s %llu (%s)", i ? ", " : "", name,
					    (unsigned long long)limits[i].value, limits[i].how);
		else
			(void)strbuf_printf(&sb, "%s%s none", i ? ", " : "", name);
		if (!x->json)
			continue;
		jw_key(x->json, name);
		if (limits[i].value)
			jw_uint(x->json, limits[i].value);
		else
			jw_null(x->json);
	}
	if (x->json)
		jw_object_end(x->json);
	explain_line(x, "limits: %s", sb.buf ? sb.buf : "");
	strbuf_done(&sb);
}

/*
 * The protected paths of @policy and how @p's backend holds each, in `policy`'s words and from
 * the same function (start-up files not there left out, as there).
 */
static void explain_protected(const dsb_provider *p, const dsb_exec_policy *policy,
			      const explain_sink *x)
{
	/* The verdict @p confines with, as the report `policy` reads it from. */
	dsb_probe_report rep = {.selected = -1, .custom_runner = p->runner_command[0] != NULL};
	if (!rep.custom_runner && p->v.selected >= 0) {
		rep.selected = 0;
		rep.n_backends = 1;
		rep.backends[0].usable = true;
		rep.backends[0].hardening = p->v.hardening;
		(void)snprintf(rep.backends[0].name, sizeof(rep.backends[0].name), "%s",
			       dsb_backend_to_string(p->chain[p->v.selected]));
	}
	if (x->json) {
		jw_key(x->json, "protectedPaths");
		jw_array_begin(x->json);
	}
	for (size_t i = 0; i < policy->n_protected; i++) {
		const dsb_protected *e = &policy->protected[i];
		if (e->kind == DSB_PROTECT_STARTUP && e->absent && !e->link)
			continue;
		const char *kind = dsb_protect_kind_to_string(e->kind);
		const char *how = dsb_probe_protect_enforcement(&rep, policy, e);
		/* A missing one the run makes empty first, so that the command cannot make it. */
		bool made = !e->exists && strcmp(how, "read-only") == 0;
		explain_line(x, "protected: %s (%s, %s%s)", e->path, kind, how,
			     made ? ", made empty before the call" : "");
		if (!x->json)
			continue;
		jw_object_begin(x->json);
		jw_member_string(x->json, "path", e->path);
		jw_member_string(x->json, "kind", kind);
		jw_member_bool(x->json, "exists", e->exists);
		jw_member_string(x->json, "enforcement", how);
		jw_object_end(x->json);
	}
	if (x->json)
		jw_array_end(x->json);
}

void provider_explain(dsb_provider *p, const dsb_exec_policy *policy, const dsb_confined *c,
		      const explain_sink *x)
{
	const confine_plan *plan = confined_plan(c);
	const char *enforcement = dsb_enforcement_to_string(c->enforcement);
	explain_line(x, "enforcement: %s", enforcement);
	if (x->json)
		jw_member_string(x->json, "enforcement", enforcement);
	/* What is executed: the runner's whole argv, or the command that restricts itself. */
	strbuf label = STRBUF_INIT;
	(void)strbuf_printf(&label, "%s argv", plan && plan->wraps ? c->backend : "command");
	explain_list(x, label.buf ? label.buf : "argv", "argv", c->argv);
	strbuf_done(&label);
	explain_rules(c, plan, x);
	/* What the backend holds here, less the network namespace this call goes without. */
	unsigned hardening = p->runner_command[0] ? 0 : p->v.hardening;
	if (!plan || !plan_own_network(plan))
		hardening &= ~(unsigned)DSB_HARDEN_NET_NAMESPACE;
	explain_hardening(hardening, x);
	explain_network(p, plan, x);
	explain_limits(plan, x);
	explain_protected(p, policy, x);
}
