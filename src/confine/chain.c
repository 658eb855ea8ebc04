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
 * Probes are functional, as DSH's: bwrap runs `true` under the real read-only profile (a host
 * without PID namespaces fails here, not later); Landlock restricts a forked child to `--ro /`
 * and execs `true`. Both are bounded by probeTimeoutMs.
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

typedef struct verdict {
	bool known;
	int selected; /* index into chain, -1: unavailable */
	dsb_enforcement enforcement;
	bool from_cache;
} verdict;

struct dsb_provider {
	dsb_backend chain[_DSB_BACKEND_MAX];
	size_t n_chain;
	uint64_t probe_timeout_ms;
	char **runner_command;
	char **runner_failure_signatures;
	uint64_t scope; /* LL_SCOPE_* */
	int abi_max;	/* 0: the kernel's */
	char *cache_dir;
	verdict v;
	dsb_probe_report last; /* what the last probe found, for `probe` */
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
	if (!p->runner_command || !p->runner_failure_signatures || (cache_dir && !p->cache_dir)) {
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
		free(p->cache_dir);
		free(p);
	}
	return NULL;
}

/* The ABI the provider uses: the kernel's, capped by landlockAbiMax (an explicit degrade). */
static int effective_abi(const dsb_provider *p)
{
	int abi = landlock_abi();
	if (abi > 0 && p->abi_max > 0 && abi > p->abi_max)
		abi = p->abi_max;
	return abi;
}

/* --- probes --------------------------------------------------------------------------------- */

/* Copies as much of @src as fits: a reason is for people, a cut one still says enough. */
static void copy_truncated(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/*
 * Runs @c within the probe timeout, stdin and stdout on /dev/null and stderr kept: 0 when it
 * exited 0, else why not (the runner's first stderr line when it said something).
 */
static int run_probe(const dsb_provider *p, const dsb_confined *c, char *reason, size_t size)
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
	int r = dsb_confined_spawn(c, DSB_MODE_READ_ONLY, &o, &pid, &err);
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

static void probe_bwrap(const dsb_provider *p, dsb_probe_backend *out)
{
	/* The real read-only profile with workspaceRoot "/", as DSH probes it. */
	char **argv = NULL;
	confine_plan plan = {.filter_fd = BWRAP_FILTER_FD, .contained = true};
	int r = strv_push(&argv, bwrap_program());
	if (r >= 0)
		r = bwrap_profile(DSB_MODE_READ_ONLY, "/", &argv);
	if (r >= 0)
		r = bwrap_hardening(plan.filter_fd, &argv);
	if (r >= 0)
		r = strv_push(&argv, "--");
	if (r >= 0)
		r = strv_push(&argv, "true");
	if (r < 0) {
		(void)snprintf(out->reason, sizeof(out->reason), "out of memory");
		strv_free(argv);
		return;
	}
	dsb_confined c = {.argv = argv, .backend = (char *)"bwrap", .plan = &plan};
	if (run_probe(p, &c, out->reason, sizeof(out->reason)) == 0) {
		out->usable = true;
		out->enforcement = DSB_ENFORCEMENT_FULL;
	}
	strv_free(argv);
}

static void probe_landlock(const dsb_provider *p, dsb_probe_backend *out)
{
	landlock_status st;
	char *ro[] = {(char *)"/", NULL}, *rw[] = {NULL};
	confine_plan plan = {
		.landlock = {.ro = ro, .rw = rw, .scope = p->scope, .abi_max = p->abi_max},
		.harden = true,
		.filter_flags = LANDLOCK_FILTER,
		.filter_fd = -1,
	};
	out->landlock_abi = landlock_abi();
	int abi = effective_abi(p);
	out->landlock_abi_used = abi;
	landlock_negotiate(&plan.landlock, abi, &st);
	out->handled_fs = abi > 0 ? st.handled_fs : 0;
	out->scoped = abi > 0 ? st.scoped : 0;
	if (abi < 0) {
		(void)snprintf(out->reason, sizeof(out->reason),
			       "landlock-run: landlock is not enforced by this kernel (ABI "
			       "unsupported or disabled)");
		return;
	}
	char *argv[] = {(char *)"true", NULL};
	dsb_confined c = {
		.argv = argv, .landlock = true, .backend = (char *)"landlock", .plan = &plan};
	if (run_probe(p, &c, out->reason, sizeof(out->reason)) == 0) {
		out->usable = true;
		out->enforcement = st.partial ? DSB_ENFORCEMENT_PARTIAL : DSB_ENFORCEMENT_FULL;
	}
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
		if (p->chain[i] == DSB_BACKEND_BWRAP)
			probe_bwrap(p, b);
		else
			probe_landlock(p, b);
		if (b->usable && rep->selected < 0)
			rep->selected = (int)i;
		if (rep->selected >= 0 && !all)
			break;
	}
	p->v = (verdict){
		.known = true,
		.selected = rep->selected,
		.enforcement = rep->selected >= 0 ? rep->backends[rep->selected].enforcement
						  : DSB_ENFORCEMENT_FULL,
	};
}

/* --- the verdict cache on disk -------------------------------------------------------------- */

/* What the verdict depends on. A change to any of it is a different key. */
static char *cache_key(const dsb_provider *p)
{
	struct utsname u;
	if (uname(&u) < 0)
		return NULL;

	/* bwrap's identity: the file PATH finds, by device, inode, size and change time. */
	char bwrap_id[4096 + 128] = "none";
	const char *path = getenv("PATH");
	const char *prog = bwrap_program();
	struct stat st;
	if (strchr(prog, '/')) {
		if (stat(prog, &st) == 0)
			(void)snprintf(bwrap_id, sizeof(bwrap_id), "%s:%lu:%lu:%lld:%lld", prog,
				       (unsigned long)st.st_dev, (unsigned long)st.st_ino,
				       (long long)st.st_size, (long long)st.st_ctime);
	} else {
		_cleanup_free_ char *dirs = strdup(path ? path : "/usr/bin:/bin");
		for (char *save = NULL, *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d;
		     d = strtok_r(NULL, ":", &save)) {
			char candidate[4096];
			(void)snprintf(candidate, sizeof(candidate), "%s/%s", d, prog);
			if (stat(candidate, &st) == 0 && S_ISREG(st.st_mode)) {
				(void)snprintf(bwrap_id, sizeof(bwrap_id), "%s:%lu:%lu:%lld:%lld",
					       candidate, (unsigned long)st.st_dev,
					       (unsigned long)st.st_ino, (long long)st.st_size,
					       (long long)st.st_ctime);
				break;
			}
		}
	}

	strbuf sb = STRBUF_INIT;
	int r = strbuf_printf(&sb, "kernel=%s %s|bwrap=%s|uid=%u|chain=", u.release, u.version,
			      bwrap_id, (unsigned)geteuid());
	for (size_t i = 0; r >= 0 && i < p->n_chain; i++)
		r = strbuf_printf(&sb, "%s,", dsb_backend_to_string(p->chain[i]));
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
	json_error_t error;
	json_t *j = json_load_file(path, 0, &error);
	if (!j)
		return false;
	const char *k = json_string_value(json_object_get(j, "key"));
	const char *backend = json_string_value(json_object_get(j, "backend"));
	const char *enforcement = json_string_value(json_object_get(j, "enforcement"));
	int selected = -1;
	for (size_t i = 0; backend && i < p->n_chain; i++)
		if (strcmp(dsb_backend_to_string(p->chain[i]), backend) == 0)
			selected = (int)i;
	bool hit = k && strcmp(k, key) == 0 && selected >= 0 && enforcement &&
		   (!strcmp(enforcement, "full") || !strcmp(enforcement, "partial"));
	if (hit)
		p->v = (verdict){
			.known = true,
			.selected = selected,
			.enforcement = strcmp(enforcement, "full") == 0 ? DSB_ENFORCEMENT_FULL
									: DSB_ENFORCEMENT_PARTIAL,
			.from_cache = true,
		};
	json_decref(j);
	return hit;
}

/* Best effort: a verdict that cannot be saved is probed again next time. */
static void cache_write(const dsb_provider *p)
{
	if (!p->cache_dir || p->v.selected < 0)
		return;
	_cleanup_free_ char *key = cache_key(p), *path = cache_path(p), *tmp = NULL;
	if (!key || !path || asprintf(&tmp, "%s.%d.tmp", path, (int)getpid()) < 0)
		return;
	if (mkdir_p(p->cache_dir, 0700, false) < 0)
		return;
	json_t *j = json_pack("{s:s, s:s, s:s}", "key", key, "backend",
			      dsb_backend_to_string(p->chain[p->v.selected]), "enforcement",
			      dsb_enforcement_to_string(p->v.enforcement));
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
			if (p->chain[i] == DSB_BACKEND_LANDLOCK) {
				char *ro[] = {(char *)"/", NULL}, *rw[] = {NULL};
				landlock_plan plan = {.ro = ro, .rw = rw, .scope = p->scope};
				landlock_status st;
				b->landlock_abi = landlock_abi();
				b->landlock_abi_used = effective_abi(p);
				landlock_negotiate(&plan, b->landlock_abi_used, &st);
				b->handled_fs = b->landlock_abi > 0 ? st.handled_fs : 0;
				b->scoped = b->landlock_abi > 0 ? st.scoped : 0;
			}
			if ((int)i == p->v.selected) {
				b->usable = true;
				b->enforcement = p->v.enforcement;
			}
		}
	} else {
		probe_chain(p, true);
		cache_write(p);
	}
	*ret_report = p->last;
	return 0;
}

/* --- confine() ------------------------------------------------------------------------------ */

static char **strv_of(const char *const *words)
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
		free(plan);
	}
	*c = (dsb_confined){0};
}

/* Appends "--" and @argv. */
static int push_command(char ***io, char *const *argv)
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

static int confine_into(dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
			dsb_confined *c)
{
	static const char *const none[] = {NULL};
	int r;

	if (p->runner_command[0]) {
		/* runnerCommand: the operator's runner with bwrap's profile, asserted full. */
		static const char *const denial[] = {"read-only file system", "permission denied",
						     NULL};
		c->backend = strdup("runner");
		c->argv = strv_copy(p->runner_command);
		c->denial_signatures = strv_of(denial);
		if (!c->backend || !c->argv || !c->denial_signatures)
			return -ENOMEM;
		r = bwrap_profile(policy->mode, policy->workspace_root, &c->argv);
		if (r >= 0)
			r = push_command(&c->argv, argv);
		if (r >= 0)
			r = add_rule(c, (const char *const *)p->runner_failure_signatures, none,
				     NULL, 0);
		c->enforcement = DSB_ENFORCEMENT_FULL;
		return r < 0 ? r : 0;
	}

	dsb_backend b = p->chain[p->v.selected];
	c->enforcement = p->v.enforcement;
	c->backend = strdup(dsb_backend_to_string(b));
	if (!c->backend)
		return -ENOMEM;
	confine_plan *plan = calloc(1, sizeof(*plan));
	if (!plan)
		return -ENOMEM;
	c->plan = plan;
	plan->filter_fd = -1;
	if (b == DSB_BACKEND_BWRAP) {
		static const char *const denial[] = {"read-only file system", NULL};
		static const char *const fatal[] = {"bwrap: ", NULL};
		plan->filter_fd = BWRAP_FILTER_FD;
		plan->contained = true;
		c->denial_signatures = strv_of(denial);
		r = c->denial_signatures ? strv_push(&c->argv, bwrap_program()) : -ENOMEM;
		if (r >= 0)
			r = bwrap_profile(policy->mode, policy->workspace_root, &c->argv);
		if (r >= 0)
			r = bwrap_hardening(plan->filter_fd, &c->argv);
		if (r >= 0)
			r = push_command(&c->argv, argv);
		if (r >= 0)
			r = add_rule(c, fatal, none, NULL, 0);
		return r < 0 ? r : 0;
	}

	/*
	 * Landlock, in-process: the command itself, restricted in the forked child. Its failures
	 * come back out of band, so no stderr rule is needed to recognise them.
	 */
	static const char *const denial[] = {"permission denied", NULL};
	landlock_plan *ll = &plan->landlock;
	c->landlock = true;
	plan->harden = true;
	plan->filter_flags = LANDLOCK_FILTER;
	ll->scope = p->scope;
	ll->abi_max = p->abi_max;
	r = strv_push(&ll->ro, "/");
	if (r >= 0)
		r = strv_push(&ll->rw, "/dev/null");
	if (r >= 0 && policy->mode == DSB_MODE_WORKSPACE_WRITE) {
		r = strv_push(&ll->rw, "/tmp");
		if (r >= 0)
			r = strv_push(&ll->rw, policy->workspace_root);
	}
	c->argv = strv_copy(argv);
	c->denial_signatures = strv_of(denial);
	if (r < 0 || !c->argv || !c->denial_signatures)
		return -ENOMEM;
	return 0;
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
	if (confine_into(p, policy, argv, &c) < 0) {
		dsb_confined_done(&c);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "confine: out of memory");
	}
	*ret = c;
	return 0;
}
