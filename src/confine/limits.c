/* SPDX-License-Identifier: MIT */
/*
 * What one confined call may take of the host (docs/design/limits.md): processes, memory, CPU
 * time, file and /tmp sizes, and the kernel's per-user budgets. Each is enforced by the best
 * mechanism this host gives, found once per process (limits_host()):
 *
 *  - a cgroup of the call's own, made beneath the cgroup this process already runs in: v2 where
 *    that cgroup is writable and delegates the pids and memory controllers, else v1's pids and
 *    memory hierarchies where they are writable (root on most v1 hosts). The child joins it
 *    before anything else (limits_apply()); it is removed when the call has ended, and a
 *    crashed process's are swept at the next start (limits_host()).
 *  - else rlimits: RLIMIT_NPROC, which counts a uid's processes in one user namespace (Linux
 *    5.14): in a namespace of the sandbox's own it counts the call's processes alone
 *    ("rlimit-userns"), else all of the user's ("rlimit"). Real root is exempt from it.
 *  - CPU seconds and file sizes are rlimits of each process everywhere; /tmp is capped where
 *    the backend mounts its own (bwrap's tmpfs).
 *
 * The per-user budgets (inotify instances and watches, fanotify groups and marks) are counted
 * per uid per user namespace, and what a namespace takes counts against its parent's too: in a
 * namespace of its own whose budgets are a quarter of the caller's, a command can take at most
 * that quarter from every other process of the same uid.
 *
 * The child's part is a step of its own (steps.c, step_limits()): it joins the cgroup first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../policy/policy.h"
#include "confine.h"

const char *limit_mech_name(limit_mech m)
{
	static const char *const names[_LIMIT_BY_MAX] = {
		[LIMIT_BY_NONE] = "none",
		[LIMIT_BY_CGROUP2] = "cgroup2",
		[LIMIT_BY_CGROUP1] = "cgroup1",
		[LIMIT_BY_RLIMIT_USERNS] = "rlimit-userns",
		[LIMIT_BY_RLIMIT] = "rlimit",
		[LIMIT_BY_TMPFS] = "tmpfs",
		[LIMIT_BY_USERNS] = "user-namespace",
	};
	return m >= 0 && m < _LIMIT_BY_MAX ? names[m] : "none";
}

/* --- the host ---------------------------------------------------------------------------- */

/* The per-user budgets a namespace of the sandbox's own gets a share of (/proc/sys/user). */
static const char *const budget_names[] = {
	"max_inotify_instances",
	"max_inotify_watches",
	"max_fanotify_groups",
	"max_fanotify_marks",
};

/* Whether the space-separated @list holds @word. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *s = list; (s = strstr(s, word)); s += n)
		if ((s == list || s[-1] == ' ') && (s[n] == '\0' || s[n] == ' ' || s[n] == '\n'))
			return true;
	return false;
}

/* The number in the line "@key N" of @dir/@name, or 0. */
static uint64_t event_count(int dir, const char *name, const char *key)
{
	char buf[1024];
	if (dir < 0 || file_read_at(dir, name, buf, sizeof(buf)) < 0)
		return 0;
	size_t n = strlen(key);
	for (char *s = buf; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
		if (strncmp(s, key, n) == 0 && s[n] == ' ')
			return strtoull(s + n + 1, NULL, 10);
	return 0;
}

/*
 * Where cgroup @hierarchy (a v1 controller, or "" for v2) is mounted and where this process
 * runs in it: @out gets the directory. -ENOENT when it is not mounted.
 */
static int own_cgroup_dir(const char *controller, char *out, size_t size)
{
	char mount_point[PATH_MAX] = "", mount_root[PATH_MAX] = "", path[PATH_MAX] = "";
	char line[4096], *save = NULL;
	bool v2 = !*controller;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (!mount_point[0] && fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPEROPTIONS */
		char root[PATH_MAX], mp[PATH_MAX], fstype[64], super[1024];
		const char *dash = strstr(line, " - ");
		if (!dash || sscanf(line, "%*s %*s %*s %4095s %4095s", root, mp) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fstype, super) != 2)
			continue;
		if (v2 ? strcmp(fstype, "cgroup2") != 0 : strcmp(fstype, "cgroup") != 0)
			continue;
		if (!v2) {
			/* v1: the super options name the controllers, comma-separated. */
			bool found = false;
			for (char *tok = strtok_r(super, ",", &save); tok && !found;
			     tok = strtok_r(NULL, ",", &save))
				found = strcmp(tok, controller) == 0;
			if (!found)
				continue;
		}
		(void)snprintf(mount_point, sizeof(mount_point), "%s", mp);
		(void)snprintf(mount_root, sizeof(mount_root), "%s", root);
	}
	(void)fclose(f);
	if (!mount_point[0])
		return -ENOENT;

	if (!(f = fopen("/proc/self/cgroup", "re")))
		return -errno;
	while (!path[0] && fgets(line, sizeof(line), f)) {
		/* ID:CONTROLLERS:PATH, v2's "0::PATH" */
		char *a = strchr(line, ':'), *b = a ? strchr(a + 1, ':') : NULL;
		if (!b)
			continue;
		*b = '\0';
		line[strcspn(line, "\n")] = '\0';
		b[1 + strcspn(b + 1, "\n")] = '\0';
		bool match = false;
		if (v2)
			match = a[1] == '\0' && strcmp(line, "0") == 0;
		else
			for (char *tok = strtok_r(a + 1, ",", &save); tok && !match;
			     tok = strtok_r(NULL, ",", &save))
				match = strcmp(tok, controller) == 0;
		if (match)
			(void)snprintf(path, sizeof(path), "%s", b + 1);
	}
	(void)fclose(f);
	if (!path[0])
		return -ENOENT;
	/* A mount of a subtree (a container's) shows it at its mount point. */
	const char *below = path;
	size_t rn = strlen(mount_root);
	if (strcmp(mount_root, "/") != 0) {
		if (strncmp(path, mount_root, rn) != 0 || (path[rn] && path[rn] != '/'))
			return -ENOENT;
		below = path + rn;
	}
	int n = snprintf(out, size, "%s%s", mount_point, strcmp(below, "/") ? below : "");
	return n > 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}

/* Whether this process may make cgroups in @dir that control @controller (v2). */
static bool v2_delegates(const char *dir, const char *controller)
{
	char buf[1024], plus[64];
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = faccessat(fd, "cgroup.procs", W_OK, AT_EACCESS) == 0 &&
		  faccessat(fd, ".", W_OK, AT_EACCESS) == 0 &&
		  file_read_at(fd, "cgroup.controllers", buf, sizeof(buf)) >= 0 &&
		  has_word(buf, controller);
	if (ok && (file_read_at(fd, "cgroup.subtree_control", buf, sizeof(buf)) < 0 ||
		   !has_word(buf, controller))) {
		/* Refused (EBUSY) while processes live in @dir itself: "no internal processes". */
		(void)snprintf(plus, sizeof(plus), "+%s", controller);
		ok = file_write_at(fd, "cgroup.subtree_control", plus) == 0;
	}
	(void)close(fd);
	return ok;
}

static bool v1_writable(const char *dir)
{
	return access(dir, W_OK) == 0;
}

/* Whether a user namespace of the sandbox's own can be made and mapped here. */
static bool userns_possible(void)
{
	char buf[64];
	int proc = open("/proc/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (proc < 0)
		return false;
	bool ok = file_read_at(proc, "user/max_user_namespaces", buf, sizeof(buf)) >= 0 &&
		  strtoull(buf, NULL, 10) > 1;
	/* Debian's switch, and Ubuntu's AppArmor rule (a namespace without capabilities). */
	if (ok && geteuid() != 0 &&
	    file_read_at(proc, "kernel/unprivileged_userns_clone", buf, sizeof(buf)) >= 0)
		ok = buf[0] != '0';
	if (ok && geteuid() != 0 &&
	    file_read_at(proc, "kernel/apparmor_restrict_unprivileged_userns", buf, sizeof(buf)) >=
		    0)
		ok = buf[0] == '0';
	(void)close(proc);
	return ok;
}

/* A cgroup named by this file's scheme whose maker is gone: its processes killed, removed. */
static void sweep_stale(const char *base)
{
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		const size_t prefix = sizeof(CGROUP_PREFIX) - 1;
		char *end = NULL;
		if (strncmp(e->d_name, CGROUP_PREFIX, prefix) != 0 ||
		    strlen(e->d_name) >= sizeof(((call_cgroup *)0)->name))
			continue;
		long maker = strtol(e->d_name + prefix, &end, 10);
		if (!end || *end != '.' || maker <= 0 || maker == getpid() ||
		    kill((pid_t)maker, 0) == 0 || errno != ESRCH)
			continue;
		call_cgroup cg = CALL_CGROUP_INIT;
		cg.parent[0] = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		cg.dir[0] = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		memcpy(cg.name, e->d_name, strlen(e->d_name) + 1);
		cg.n = cg.dir[0] >= 0 && cg.parent[0] >= 0 ? 1 : 0;
		call_cgroup_remove(&cg);
		if (cg.parent[0] >= 0)
			(void)close(cg.parent[0]);
	}
	(void)closedir(d);
}

static limits_host host;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void host_probe(void)
{
	char dir[PATH_MAX];
	if (own_cgroup_dir("", dir, sizeof(dir)) == 0) {
		if (v2_delegates(dir, "pids")) {
			host.pids_version = 2;
			(void)snprintf(host.pids_dir, sizeof(host.pids_dir), "%s", dir);
		}
		if (v2_delegates(dir, "memory")) {
			host.memory_version = 2;
			(void)snprintf(host.memory_dir, sizeof(host.memory_dir), "%s", dir);
		}
	}
	if (!host.pids_version && own_cgroup_dir("pids", dir, sizeof(dir)) == 0 &&
	    v1_writable(dir)) {
		host.pids_version = 1;
		(void)snprintf(host.pids_dir, sizeof(host.pids_dir), "%s", dir);
	}
	if (!host.memory_version && own_cgroup_dir("memory", dir, sizeof(dir)) == 0 &&
	    v1_writable(dir)) {
		host.memory_version = 1;
		(void)snprintf(host.memory_dir, sizeof(host.memory_dir), "%s", dir);
	}
	if (host.pids_version)
		sweep_stale(host.pids_dir);
	if (host.memory_version && strcmp(host.memory_dir, host.pids_dir) != 0)
		sweep_stale(host.memory_dir);

	host.userns = userns_possible();
	host.root = geteuid() == 0;
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	host.memory_total = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
	int user = open("/proc/sys/user", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; i < ELEMENTSOF(budget_names); i++) {
		char buf[64];
		if (user >= 0 && file_read_at(user, budget_names[i], buf, sizeof(buf)) >= 0)
			host.budgets[i] = strtoull(buf, NULL, 10);
	}
	if (user >= 0)
		(void)close(user);
}

const limits_host *limits_host_get(void)
{
	(void)pthread_once(&host_once, host_probe);
	return &host;
}

/* --- a call's plan --------------------------------------------------------------------------- */

/* Processes: enough for make -j, a JVM's threads or a browser under test, few enough that a
 * fork bomb ends there and sixteen calls at once stay within a default pid_max of 32768. */
#define DEFAULT_PROCESSES 2048
/* CPU: a confined command yields to its harness and to everything interactive. */
#define DEFAULT_NICE 10

limit_mech limits_mech(const limits_host *h, const backend_ops *ops, dsb_mode mode, dsb_limit l)
{
	(void)mode;
	if (l == DSB_LIMIT_PROCESSES) {
		if (h->pids_version)
			return h->pids_version == 2 ? LIMIT_BY_CGROUP2 : LIMIT_BY_CGROUP1;
		if (h->root)
			return LIMIT_BY_NONE; /* real root is exempt from RLIMIT_NPROC */
		return ops->own_userns && h->userns ? LIMIT_BY_RLIMIT_USERNS : LIMIT_BY_RLIMIT;
	}
	if (l == DSB_LIMIT_MEMORY)
		return h->memory_version == 2	? LIMIT_BY_CGROUP2
		       : h->memory_version == 1 ? LIMIT_BY_CGROUP1
						: LIMIT_BY_NONE;
	if (l == DSB_LIMIT_TMP_BYTES)
		return ops->tmp_cap ? LIMIT_BY_TMPFS : LIMIT_BY_NONE;
	return LIMIT_BY_RLIMIT; /* CPU seconds, file sizes: every process's own */
}

limit_mech limits_budget_mech(const limits_host *h, const backend_ops *ops)
{
	return ops->own_userns && h->userns ? LIMIT_BY_USERNS : LIMIT_BY_NONE;
}

uint64_t limits_value(const limits_host *h, const dsb_limits *cfg, dsb_limit l, limit_mech m)
{
	if (cfg->set & (1u << l))
		return cfg->value[l];
	if (l == DSB_LIMIT_PROCESSES)
		return DEFAULT_PROCESSES;
	/* Where a cgroup holds it: half the machine, so that the OOM killer it wakes picks from
	 * the call's tree, never the harness or another session. */
	if (l == DSB_LIMIT_MEMORY && (m == LIMIT_BY_CGROUP1 || m == LIMIT_BY_CGROUP2))
		return h->memory_total / 2 / (1u << 20) * (1u << 20); /* whole MiB */
	return 0;
}

/* What the key (and flag) of @l are called in a message. */
static const char *limit_spelling(dsb_limit l)
{
	static const char *const spelled[_DSB_LIMIT_MAX] = {
		[DSB_LIMIT_PROCESSES] = "limits.processes (--max-processes)",
		[DSB_LIMIT_MEMORY] = "limits.memoryBytes (--memory)",
		[DSB_LIMIT_CPU_SECONDS] = "limits.cpuSeconds",
		[DSB_LIMIT_TMP_BYTES] = "limits.tmpBytes",
		[DSB_LIMIT_FILE_BYTES] = "limits.fileBytes",
	};
	return spelled[l];
}

/* What @l needs that this host or backend lacks. */
static const char *limit_missing(const limits_host *h, dsb_limit l)
{
	if (l == DSB_LIMIT_PROCESSES)
		return h->root ? "a writable cgroup with the pids controller (a cgroup v2 "
				 "subtree delegated to this process, or cgroup v1's pids "
				 "hierarchy); root is exempt from RLIMIT_NPROC"
			       : "a writable cgroup with the pids controller";
	if (l == DSB_LIMIT_MEMORY)
		return "a writable cgroup with the memory controller (a cgroup v2 subtree "
		       "delegated to this process, or cgroup v1's memory hierarchy)";
	return "a fresh /tmp of the call's own (bwrap's tmpfs, or Landlock's in a mount "
	       "namespace; this backend shows the host's here)";
}

int limits_plan(const dsb_limits *cfg, const backend_ops *ops, const dsb_exec_policy *policy,
		dsb_confined *c, confine_plan *plan, confine_failure *why)
{
	const limits_host *h = limits_host_get();
	confine_limits *L = &plan->limits;
	uint64_t v[_DSB_LIMIT_MAX];
	limit_mech m[_DSB_LIMIT_MAX];
	for (int l = 0; l < _DSB_LIMIT_MAX; l++) {
		m[l] = limits_mech(h, ops, policy->mode, (dsb_limit)l);
		v[l] = limits_value(h, cfg, (dsb_limit)l, m[l]);
		/* Plain RLIMIT_NPROC counts every process of the uid, the caller's too: a
		 * default would fail a user who runs many; only one set explicitly is held so. */
		if (m[l] == LIMIT_BY_RLIMIT && l == DSB_LIMIT_PROCESSES && !(cfg->set & (1u << l)))
			m[l] = LIMIT_BY_NONE;
		/* A session's /tmp is a directory of the store, kept from call to call. */
		bool session_tmp = l == DSB_LIMIT_TMP_BYTES && policy->tmp_dir;
		if (session_tmp)
			m[l] = LIMIT_BY_NONE;
		if (v[l] && m[l] == LIMIT_BY_NONE) {
			if (!(cfg->set & (1u << l)))
				continue; /* a default this host cannot hold: `probe` says so */
			(void)snprintf(why->detail, sizeof(why->detail),
				       "%s cannot be enforced here: it needs %s",
				       limit_spelling((dsb_limit)l),
				       session_tmp ? "a /tmp of the call's own (a session's is its "
						     "private directory in the store, which no "
						     "size limit holds)"
						   : limit_missing(h, (dsb_limit)l));
			return -EPERM;
		}
	}
	plan->steps |= STEP(STEP_LIMITS);
	L->nice = DEFAULT_NICE;
	if (m[DSB_LIMIT_PROCESSES] != LIMIT_BY_NONE)
		L->processes = v[DSB_LIMIT_PROCESSES];
	if (m[DSB_LIMIT_MEMORY] != LIMIT_BY_NONE)
		L->memory = v[DSB_LIMIT_MEMORY];
	L->cpu_seconds = v[DSB_LIMIT_CPU_SECONDS];
	L->file_bytes = v[DSB_LIMIT_FILE_BYTES];
	L->nproc = L->processes && (m[DSB_LIMIT_PROCESSES] == LIMIT_BY_RLIMIT_USERNS ||
				    m[DSB_LIMIT_PROCESSES] == LIMIT_BY_RLIMIT);
	bool pids = L->processes && !L->nproc, memory = L->memory != 0;
	if (pids)
		L->pids_dir = strdup(h->pids_dir);
	if (memory)
		L->memory_dir = strdup(h->memory_dir);
	L->cgroup = pids ? h->pids_version : memory ? h->memory_version : 0;
	L->cgroup_required = (pids && (cfg->set & (1u << DSB_LIMIT_PROCESSES))) ||
			     (memory && (cfg->set & (1u << DSB_LIMIT_MEMORY)));
	if ((pids && !L->pids_dir) || (memory && !L->memory_dir))
		return -ENOMEM;
	if (limits_budget_mech(h, ops) == LIMIT_BY_USERNS) {
		L->own_userns = true;
		/* A quarter of each budget the caller has, at least one. */
		for (size_t i = 0; i < ELEMENTSOF(budget_names); i++) {
			char entry[96];
			if (!h->budgets[i])
				continue;
			uint64_t share = h->budgets[i] / 4 ? h->budgets[i] / 4 : 1;
			(void)snprintf(entry, sizeof(entry), "%s=%llu", budget_names[i],
				       (unsigned long long)share);
			if (strv_push(&L->budgets, entry) < 0)
				return -ENOMEM;
		}
	}
	/*
	 * A process that confines itself, and no cgroup to end its tree at once: its children go
	 * to a PID namespace of their own, which the kernel ends at once (STEP_PID_NAMESPACE).
	 * Made in the user namespace above, or by root.
	 */
	if (!pids && (plan->steps & STEP(STEP_LANDLOCK)) && (L->own_userns || h->root))
		plan->steps |= STEP(STEP_PID_NAMESPACE);
	int r = 0;
	if (v[DSB_LIMIT_TMP_BYTES] && m[DSB_LIMIT_TMP_BYTES] == LIMIT_BY_TMPFS &&
	    policy->mode == DSB_MODE_WORKSPACE_WRITE)
		r = ops->tmp_cap(c, v[DSB_LIMIT_TMP_BYTES]);
	if (r == -EPERM)
		(void)snprintf(
			why->detail, sizeof(why->detail), "%s cannot be enforced here: it needs %s",
			limit_spelling(DSB_LIMIT_TMP_BYTES), limit_missing(h, DSB_LIMIT_TMP_BYTES));
	return r;
}

/* --- a call's cgroup ------------------------------------------------------------------------- */

/* Writes @v as decimal to @dir/@name. */
static int write_number_at(int dir, const char *name, uint64_t v)
{
	char buf[32];
	(void)snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return file_write_at(dir, name, buf);
}

/* Makes the cgroup @cg->name in @base (its slot @i), for @controls. -errno. */
static int make_one(call_cgroup *cg, int i, const char *base)
{
	cg->parent[i] = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->parent[i] < 0)
		return -errno;
	if (mkdirat(cg->parent[i], cg->name, 0755) < 0)
		return -errno;
	cg->n = i + 1;
	cg->dir[i] = openat(cg->parent[i], cg->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->dir[i] < 0)
		return -errno;
	cg->procs[i] = openat(cg->dir[i], "cgroup.procs", O_WRONLY | O_CLOEXEC);
	return cg->procs[i] < 0 ? -errno : 0;
}

int call_cgroup_make(const confine_limits *L, call_cgroup *cg, char *why, size_t size)
{
	static atomic_uint seq;
	*cg = (call_cgroup)CALL_CGROUP_INIT;
	if (!L->cgroup)
		return 0;
	cg->version = L->cgroup;
	(void)snprintf(cg->name, sizeof(cg->name), CGROUP_PREFIX "%d.%u", (int)getpid(),
		       atomic_fetch_add(&seq, 1));
	bool pids = L->pids_dir != NULL, memory = L->memory_dir != NULL;
	bool one = !pids || !memory || strcmp(L->pids_dir, L->memory_dir) == 0;
	int r = make_one(cg, 0, pids ? L->pids_dir : L->memory_dir);
	if (r >= 0 && !one)
		r = make_one(cg, 1, L->memory_dir);
	int pdir = pids ? cg->dir[0] : -1, mdir = memory ? cg->dir[one ? 0 : 1] : -1;
	if (r >= 0 && pids)
		r = write_number_at(pdir, "pids.max", L->processes);
	if (r >= 0 && memory && cg->version == 2) {
		r = write_number_at(mdir, "memory.max", L->memory);
		/* Swap is memory too; a tree killed whole, never one process of it. */
		if (r >= 0)
			(void)file_write_at(mdir, "memory.swap.max", "0");
		if (r >= 0)
			(void)file_write_at(mdir, "memory.oom.group", "1");
	} else if (r >= 0 && memory) {
		r = write_number_at(mdir, "memory.limit_in_bytes", L->memory);
		/* Where swap is accounted, memory and swap together (set after the former). */
		if (r >= 0)
			(void)write_number_at(mdir, "memory.memsw.limit_in_bytes", L->memory);
	}
	cg->pids_dir = pdir;
	cg->memory_dir = mdir;
	if (r < 0) {
		(void)snprintf(why, size, "cannot make the call's cgroup %s: %s", cg->name,
			       strerror(-r));
		call_cgroup_remove(cg);
	}
	return r;
}

/* The call's cgroups, made by the process that reaps it (this one, or its monitor). */
int call_cgroup_for(const dsb_confined *c, dsb_mode mode, call_cgroup *cg, dsb_error *reterr)
{
	const confine_plan *plan = confined_plan(c);
	char why[512];
	*cg = (call_cgroup)CALL_CGROUP_INIT;
	if (!plan || !(plan->steps & STEP(STEP_LIMITS)) ||
	    call_cgroup_make(&plan->limits, cg, why, sizeof(why)) >= 0)
		return 0;
	return policy_fail_unavailable(reterr, mode, why);
}

unsigned call_cgroup_hits(const call_cgroup *cg)
{
	unsigned hits = 0;
	if (cg->pids_dir >= 0 && event_count(cg->pids_dir, "pids.events", "max") > 0)
		hits |= LIMIT_HIT_PROCESSES;
	if (cg->memory_dir >= 0 &&
	    event_count(cg->memory_dir, cg->version == 2 ? "memory.events" : "memory.oom_control",
			"oom_kill") > 0)
		hits |= LIMIT_HIT_MEMORY;
	return hits;
}

/* Sends @sig to every process listed in @dir's cgroup.procs; how many took it. */
static int signal_listed(int dir, int sig)
{
	char buf[16384];
	int fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int sent = 0;
	ssize_t n;
	size_t keep = 0;
	while ((n = read(fd, buf + keep, sizeof(buf) - 1 - keep)) > 0) {
		buf[keep + (size_t)n] = '\0';
		char *s = buf, *end;
		for (;; s = end) {
			long pid = strtol(s, &end, 10);
			if (end == s || *end != '\n')
				break; /* the rest of a number comes with the next read */
			end++;
			if (pid > 0 && kill((pid_t)pid, sig) == 0)
				sent++;
		}
		keep = strlen(s);
		memmove(buf, s, keep);
	}
	(void)close(fd);
	return sent;
}

void call_cgroup_kill(call_cgroup *cg)
{
	int dir = cg->pids_dir >= 0 ? cg->pids_dir : cg->memory_dir;
	if (dir < 0)
		return;
	if (cg->version == 2 && file_write_at(dir, "cgroup.kill", "1") == 0)
		return;
	/*
	 * v1 has no kill: a fork bomb regrows faster than kills end it, so everything is stopped
	 * first (a stopped process forks no more) until a reading finds nothing new to stop,
	 * then killed. A pid listed is a process of the cgroup: the tree's own.
	 */
	int last = -1;
	for (int round = 0; round < 64; round++) {
		int n = signal_listed(dir, SIGSTOP);
		if (n == 0 || n == last)
			break;
		last = n;
	}
	(void)signal_listed(dir, SIGKILL);
}

void call_cgroup_remove(call_cgroup *cg)
{
	for (int i = cg->n - 1; i >= 0; i--) {
		/*
		 * The tree's sweep has ended every process it could see; one that left it (a
		 * process of the cgroup re-parented elsewhere) is ended here. A cgroup is
		 * removable once its last process has exited, before it is reaped.
		 */
		for (int round = 0; round < 200; round++) {
			if (unlinkat(cg->parent[i], cg->name, AT_REMOVEDIR) == 0 || errno != EBUSY)
				break;
			if (cg->version != 2 || file_write_at(cg->dir[i], "cgroup.kill", "1") < 0)
				(void)signal_listed(cg->dir[i], SIGKILL);
			struct timespec ts = {0, 1000000};
			(void)nanosleep(&ts, NULL);
		}
	}
	for (int i = 0; i < 2; i++) {
		if (cg->procs[i] >= 0)
			(void)close(cg->procs[i]);
		if (cg->dir[i] >= 0)
			(void)close(cg->dir[i]);
		if (cg->parent[i] >= 0)
			(void)close(cg->parent[i]);
	}
	*cg = (call_cgroup)CALL_CGROUP_INIT;
}
