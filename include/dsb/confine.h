/* SPDX-License-Identifier: MIT */
/*
 * The confinement piece (dsh-compat §5): what a confined policy runs under. A dsb_provider holds
 * the backend chain of the configuration ([bwrap, landlock] by default) and its probed verdict,
 * cached for the provider's life and, when given a cache directory, on disk across processes.
 * dsb_provider_confine() turns a policy and an argv into a dsb_confined: the argv to exec (bwrap
 * or a configured runner wrapped around the command), or the command itself plus a Landlock plan
 * that dsb_confined_spawn() applies in the forked child before exec. No backend: the call fails
 * with DSB_E_SANDBOX_UNAVAILABLE and nothing runs. danger-full-access never reaches a provider.
 *
 * Thread-safety: a dsb_provider may be used by one thread at a time (it caches its verdict).
 */
#ifndef DSB_CONFINE_H
#define DSB_CONFINE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <dsb/error.h>
#include <dsb/policy.h>

typedef enum dsb_enforcement {
	DSB_ENFORCEMENT_FULL,
	DSB_ENFORCEMENT_PARTIAL,
	_DSB_ENFORCEMENT_MAX,
	_DSB_ENFORCEMENT_INVALID = -1,
} dsb_enforcement;

/* "full", "partial". */
DSB_API const char *dsb_enforcement_to_string(dsb_enforcement e);

typedef struct dsb_provider dsb_provider;

/*
 * A provider for @cfg's sandbox-local section. @cache_dir (borrowed; NULL for none) is where
 * the probe verdict is kept between processes, keyed by kernel release, the bwrap binary's
 * identity and the uid; a stale verdict can only fail closed.
 */
DSB_API int dsb_provider_new(const dsb_config *cfg, const char *cache_dir,
			     dsb_provider **ret_provider, dsb_error *reterr);

DSB_API dsb_provider *dsb_provider_free(dsb_provider *provider);

/* Evidence that the runner failed before the command ran (dsh-compat §5.8). */
typedef struct dsb_runner_rule {
	const int *allowed_exit_codes; /* NULL: any non-zero exit */
	size_t n_allowed_exit_codes;
	char **fatal_signatures;    /* NULL-terminated */
	char **informational_lines; /* NULL-terminated, may be empty */
} dsb_runner_rule;

/* What to spawn for one confined call (ConfinedArgv, plus our in-process Landlock plan). */
typedef struct dsb_confined {
	char **argv; /* NULL-terminated; argv[0] is looked up in PATH */
	dsb_enforcement enforcement;
	char **denial_signatures; /* the selected backend's dialect, lower-case, NULL-terminated */
	dsb_runner_rule *rules;
	size_t n_rules;
	bool landlock; /* the child restricts itself in-process before exec (informational) */
	char *backend; /* the backend's name: dsb_backend_to_string(), or "runner" */
	void *plan;    /* what the child does to itself before exec; internal */
} dsb_confined;

/*
 * Confines @argv under @policy (read-only or workspace-write). Probes the chain on first use.
 * Fills *@ret (release with dsb_confined_done()). DSB_E_SANDBOX_UNAVAILABLE when no backend is
 * usable; DSB_E_INVALID_ARGS for danger-full-access (which is never confined).
 */
DSB_API int dsb_provider_confine(dsb_provider *provider, const dsb_exec_policy *policy,
				 char *const *argv, dsb_confined *ret, dsb_error *reterr);

DSB_API void dsb_confined_done(dsb_confined *c);

/* How dsb_confined_spawn() sets up the child. Zero-initialise, then set what you need. */
typedef struct dsb_spawn_options {
	int stdin_fd, stdout_fd, stderr_fd; /* dup2'ed onto 0, 1, 2; -1 inherits */
	const char *cwd;		    /* NULL: the caller's */
	char *const *envp;		    /* NULL: the caller's environment */
	bool new_session;		    /* setsid(): own session and process group; a confined
					     * command gets its own process group either way */
} dsb_spawn_options;

#define DSB_SPAWN_OPTIONS_INIT                                   \
	{                                                        \
		.stdin_fd = -1, .stdout_fd = -1, .stderr_fd = -1 \
	}

/*
 * Forks, applies the Landlock plan when @c has one (the child restricts itself; nothing else
 * runs in between), and execs c->argv. A failure in the child before exec comes back through a
 * close-on-exec pipe, never through the child's output, so a command cannot imitate it: the
 * call then fails with DSB_E_SANDBOX_UNAVAILABLE and " Runner failure: DETAIL" (@mode names the
 * requested mode), and no command ran. On success *@ret_pid is the child, to be waited for.
 */
DSB_API int dsb_confined_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts,
			       pid_t *ret_pid, dsb_error *reterr);

/*
 * What a backend does to a confined command beyond its filesystem rules (dsb_probe_backend's
 * hardening bits), as found on this host.
 */
typedef enum dsb_hardening {
	DSB_HARDEN_CAPABILITIES = 1 << 0,    /* effective, permitted, inheritable, ambient: empty */
	DSB_HARDEN_BOUNDING_SET = 1 << 1,    /* the bounding set empty too (no regain on execve) */
	DSB_HARDEN_NO_NEW_PRIVS = 1 << 2,    /* set-uid and file capabilities give nothing */
	DSB_HARDEN_SECCOMP = 1 << 3,	     /* the system-call filter (docs/design/seccomp.md) */
	DSB_HARDEN_STDIO_ONLY = 1 << 4,	     /* no descriptor but stdio is inherited */
	DSB_HARDEN_REAPED = 1 << 5,	     /* no process it starts outlives the call */
	DSB_HARDEN_PID_NAMESPACE = 1 << 6,   /* outside processes are invisible */
	DSB_HARDEN_MOUNT_NAMESPACE = 1 << 7, /* its own mount table, host mounts read-only */
	DSB_HARDEN_USER_NAMESPACE = 1 << 8,
	DSB_HARDEN_IPC_NAMESPACE = 1 << 9,  /* host SysV IPC and POSIX queues out of reach */
	DSB_HARDEN_UTS_NAMESPACE = 1 << 10, /* the host name cannot be changed from inside */
	DSB_HARDEN_IPC_FILTERED = 1 << 11,  /* no IPC namespace: the filter refuses IPC instead */
	DSB_HARDEN_SIGNAL_SCOPE = 1 << 12,  /* cannot signal processes outside */
	DSB_HARDEN_ABSTRACT_UNIX_SCOPE = 1 << 13, /* cannot reach abstract unix sockets outside */
	/* Landlock: metadata changes (chmod, chown, times, xattrs, inode flags) land beneath the
	 * writable roots only, performed by a supervisor (docs/design/metadata.md) ... */
	DSB_HARDEN_METADATA_SUPERVISED = 1 << 14,
	/* ... or, where the kernel gives it no listener, are refused everywhere */
	DSB_HARDEN_METADATA_REFUSED = 1 << 15,
	/* A network namespace can be made for a restricted network policy (bwrap: always). */
	DSB_HARDEN_NET_NAMESPACE = 1 << 16,
	/* The file operations the sandbox refuses are supervised and recorded, each with its path,
	 * operation and errno (docs/design/evidence.md); absent: a denial is told by its stderr. */
	DSB_HARDEN_FILE_EVIDENCE = 1 << 17,
} dsb_hardening;

/*
 * The name of one hardening bit, as `probe` and `explain` show it ("capabilities",
 * "no-new-privs", "seccomp", "pid-namespace", ...); NULL for anything but one known bit. Static.
 */
DSB_API const char *dsb_hardening_to_string(dsb_hardening bit);

/* What a backend leaves ungoverned on this host (dsb_probe_backend's not_governed bits). */
typedef enum dsb_ungoverned {
	DSB_UNGOVERNED_METADATA = 1 << 0,      /* chmod, chown, utimes, xattr outside the grants */
	DSB_UNGOVERNED_NETWORK = 1 << 1,       /* network access is the host's */
	DSB_UNGOVERNED_ABSTRACT_UNIX = 1 << 2, /* abstract unix sockets of the host are reachable */
	DSB_UNGOVERNED_SIGNALS = 1 << 3,       /* same-uid processes outside can be signalled */
	DSB_UNGOVERNED_SURVIVORS = 1
				   << 4, /* a command that kills its reaper can outlive the call */
	/* No mount namespace: .git and protectedPaths go unprotected, denyRead unenforced, and
	 * a policy-bearing path in a writable root refuses the call. */
	DSB_UNGOVERNED_PROTECTED_PATHS = 1 << 5,
} dsb_ungoverned;

/* One backend's probe outcome, for `dsh-sandbox probe`. */
typedef struct dsb_probe_backend {
	char name[16]; /* "bwrap", "landlock" */
	bool probed;   /* false: a cached verdict made probing it unnecessary */
	bool usable;
	dsb_enforcement enforcement; /* when usable */
	char reason[512];	     /* why not usable, or "" */
	char program[4096];	     /* the runner it executes ("" for an in-process backend) */
	unsigned hardening;	     /* DSB_HARDEN_* in force (when usable) */
	unsigned not_governed;	     /* DSB_UNGOVERNED_* */
	int landlock_abi;	     /* landlock only: the kernel's ABI, or -errno; 0 elsewhere */
	int landlock_abi_used;	     /* landlock only: the ABI used (landlockAbiMax may lower it) */
	uint64_t handled_fs;	     /* landlock only: the filesystem rights governed */
	uint64_t scoped; /* landlock only: the scopes applied (signal, abstract sockets) */
} dsb_probe_backend;

typedef struct dsb_probe_report {
	dsb_probe_backend backends[4];
	size_t n_backends;  /* in chain order; backends after the selected one are not probed */
	int selected;	    /* index into backends, or -1 when none is usable */
	bool from_cache;    /* the verdict was read from the disk cache, nothing was probed */
	bool custom_runner; /* runnerCommand is configured: no chain, no probes */
} dsb_probe_report;

/*
 * What /tmp the backend @rep selected gives a confined command (docs/design/paths.md):
 * "session" (a session's private directory, the same for all its calls; a fresh one for a call
 * of no session), "call" (a runnerCommand: DSH's fresh one per call in workspace-write), "host"
 * (Landlock without a mount namespace: the host's, granted in workspace-write) or "unavailable".
 * Static strings.
 */
DSB_API const char *dsb_probe_tmp(const dsb_probe_report *rep);

/*
 * How backend @b (a probe's outcome) enforces network @access: "unrestricted" (full),
 * "namespace" (a network namespace with a loopback alone; connect and sends supervised; the
 * allow-list's proxy inside), "filter" (Landlock without a namespace, none only: every socket
 * family but AF_UNIX refused, abstract sockets scoped, connect and sends supervised), or
 * "unavailable" (calls under @access fail with SANDBOX_UNAVAILABLE). Static strings.
 */
DSB_API const char *dsb_probe_network_enforcement(const dsb_probe_backend *b,
						  dsb_network_access access);

/*
 * How the backend of report @rep (a probe's outcome, or one with custom_runner) enforces the
 * protected path @e of @policy: "read-only", "hidden" (denyRead), "private-tmp" (the backend
 * shows its own /tmp, not the host's), "removed-after" (must stay absent: removed after the
 * call if the command made it), "fails-closed" (a policy-bearing path nothing can protect:
 * every call refuses), "not-enforced" (.git and listed paths where no mount namespace can be
 * made), or "unavailable" (no usable backend; @rep NULL). Static strings.
 */
DSB_API const char *dsb_probe_protect_enforcement(const dsb_probe_report *rep,
						  const dsb_exec_policy *policy,
						  const dsb_protected *e);

/*
 * The provider's verdict, probing now when @fresh or when nothing is cached. With @fresh the
 * disk cache is ignored and rewritten.
 */
DSB_API int dsb_provider_probe(dsb_provider *provider, bool fresh, dsb_probe_report *ret_report,
			       dsb_error *reterr);

/*
 * How @provider's backend holds @limit for a call in @mode, as `probe` and `policy` report it:
 * "cgroup2", "cgroup1", "rlimit-userns", "rlimit", "tmpfs", "none" (no limit, or a default this
 * host cannot hold), "fails-closed" (set explicitly, and nothing here can hold it: every
 * confined call is SANDBOX_UNAVAILABLE), "unavailable" (no backend). *@ret_value (may be NULL) gets
 * the value in force, 0 for none. Probes on first use.
 */
DSB_API const char *dsb_provider_limit(dsb_provider *provider, dsb_mode mode, dsb_limit limit,
				       uint64_t *ret_value);

/*
 * How the kernel's per-user budgets (inotify, fanotify, message queues) are shared with a
 * command: "user-namespace" (a quarter of each, in a user namespace of the sandbox's own),
 * "none", "unavailable".
 */
DSB_API const char *dsb_provider_budgets(dsb_provider *provider);

/*
 * Whether @provider's backend shows a session's private directory as the command's /tmp
 * (docs/design/paths.md): bwrap always, Landlock where it can make a mount namespace, a
 * runnerCommand never (DSH's profile gives each call a fresh one). Where not, a session's
 * calls leave dsb_exec_policy.tmp_dir NULL.
 */
DSB_API bool dsb_provider_session_tmp(dsb_provider *provider);

#endif
