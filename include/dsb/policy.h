/* SPDX-License-Identifier: MIT */
/*
 * The policy piece: the three sandbox modes, the configuration (YAML), the deployment default with
 * its DSH_PERMISSION_MODE override, resolve() and the writable roots (dsh-compat §1, §2, §4).
 *
 * Lifecycle: load a dsb_config (dsb_config_new() for the defaults, or dsb_config_load_file()),
 * optionally dsb_config_apply_env(), then build a dsb_policy from it with dsb_policy_new(). The
 * dsb_policy copies what it needs, so the config may be freed afterwards. dsb_policy_resolve()
 * fills a caller-owned dsb_exec_policy per call; release it with dsb_exec_policy_done().
 *
 * Thread-safety: a dsb_config or dsb_policy may be read from several threads at once; nothing
 * here mutates shared state except the *_set_* and *_apply_* functions on their own object.
 */
#ifndef DSB_POLICY_H
#define DSB_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dsb/backends.h>
#include <dsb/error.h>

/* The file-effect policy. The order is SANDBOX_MODES' (dsh-compat §1.1): it is the advertised
 * order. */
typedef enum dsb_mode {
	DSB_MODE_READ_ONLY,
	DSB_MODE_WORKSPACE_WRITE,
	DSB_MODE_DANGER_FULL_ACCESS,
	_DSB_MODE_MAX,
	_DSB_MODE_INVALID = -1,
} dsb_mode;

typedef enum dsb_approval_policy {
	DSB_APPROVAL_ASK,
	DSB_APPROVAL_NEVER,
	_DSB_APPROVAL_MAX,
	_DSB_APPROVAL_INVALID = -1,
} dsb_approval_policy;

/* The sandbox backends of this build (DSB_BACKENDS: DSB_BACKEND_BWRAP, DSB_BACKEND_LANDLOCK). */
typedef enum dsb_backend {
#define DSB_BACKEND_ENUM_(name, NAME) DSB_BACKEND_##NAME,
	DSB_BACKENDS(DSB_BACKEND_ENUM_)
#undef DSB_BACKEND_ENUM_
	_DSB_BACKEND_MAX,
	_DSB_BACKEND_INVALID = -1,
} dsb_backend;

/*
 * Why a path is protected (beyond DSH; docs/design/protected-paths.md). The kinds before
 * DSB_PROTECT_GIT bear the policy itself: where one cannot be enforced, the call fails closed.
 * The others are enforced wherever the backend can, and reported where it cannot.
 */
typedef enum dsb_protect_kind {
	DSB_PROTECT_STORE,	 /* the session store */
	DSB_PROTECT_CONFIG,	 /* the configuration file, or the directory it is looked for in */
	DSB_PROTECT_ANSWERER,	 /* the approval answerer's program and script */
	DSB_PROTECT_RUNNER,	 /* the runnerCommand program */
	DSB_PROTECT_SPILL,	 /* the call's spill directory */
	DSB_PROTECT_GIT,	 /* a checkout's .git hooks, config and info (protectGit) */
	DSB_PROTECT_LISTED,	 /* sandbox-policy.protectedPaths */
	DSB_PROTECT_DENY_READ,	 /* sandbox-policy.denyRead: hidden, not just read-only */
	DSB_PROTECT_STARTUP,	 /* a start-up file other programs run or read (protectDefaults) */
	DSB_PROTECT_PRIVATE_TMP, /* STORE/.tmp, every session's private /tmp: hidden */
	_DSB_PROTECT_MAX,
	_DSB_PROTECT_INVALID = -1,
} dsb_protect_kind;

/*
 * What a confined command may reach over the network (network.access; issue 17). The sandbox
 * enforces it for read-only and workspace-write; danger-full-access is never restricted.
 */
typedef enum dsb_network_access {
	DSB_NETWORK_FULL,      /* DSH's behaviour: unrestricted */
	DSB_NETWORK_NONE,      /* nothing leaves the sandbox: a network namespace with a loopback */
	DSB_NETWORK_ALLOWLIST, /* only the allowed hosts, through dsh-sandbox's proxy */
	_DSB_NETWORK_ACCESS_MAX,
	_DSB_NETWORK_ACCESS_INVALID = -1,
} dsb_network_access;

/* "store", "config", "answerer", "runner", "spill", "git", "listed", "deny-read", "startup";
 * else NULL. */
DSB_API const char *dsb_protect_kind_to_string(dsb_protect_kind kind);

/* Why a path of @kind is protected, one sentence without a final period, for the model. */
DSB_API const char *dsb_protect_kind_reason(dsb_protect_kind kind);

/* Whether a path of @kind must be enforced or the call fails closed (store .. spill). */
DSB_API bool dsb_protect_kind_required(dsb_protect_kind kind);

/* Whether a path of @kind is hidden (unreadable), not just read-only: denyRead, private-tmp. */
DSB_API bool dsb_protect_kind_hides(dsb_protect_kind kind);

/* "read-only", "workspace-write", "danger-full-access"; NULL outside the enum. */
DSB_API const char *dsb_mode_to_string(dsb_mode mode);

/* The mode spelled exactly @s, or _DSB_MODE_INVALID (also for NULL). Borrows @s. */
DSB_API dsb_mode dsb_mode_from_string(const char *s);

/*
 * Parses @s as a mode. On failure returns -@code with the message
 * `ORIGIN: invalid mode "S" (accepted: read-only, workspace-write, danger-full-access)`, where
 * @origin names where the value came from ("--mode", "DSH_PERMISSION_MODE"). Borrows both.
 */
DSB_API int dsb_mode_parse(const char *s, const char *origin, dsb_code code, dsb_mode *ret_mode,
			   dsb_error *reterr);

/* "ask", "never"; NULL outside the enum. */
DSB_API const char *dsb_approval_policy_to_string(dsb_approval_policy policy);
DSB_API dsb_approval_policy dsb_approval_policy_from_string(const char *s);

/* "bwrap", "landlock"; NULL outside the enum. */
DSB_API const char *dsb_backend_to_string(dsb_backend backend);
DSB_API dsb_backend dsb_backend_from_string(const char *s);

/* "full", "none", "allowlist"; NULL outside the enum. */
DSB_API const char *dsb_network_access_to_string(dsb_network_access access);

/* The access level spelled exactly @s, or _DSB_NETWORK_ACCESS_INVALID (also for NULL). */
DSB_API dsb_network_access dsb_network_access_from_string(const char *s);

/*
 * Whether @host may be reached under the host patterns @allow and @deny (NULL-terminated; NULL
 * is an empty list), as network.allow and network.deny hold them. The confinement's proxy
 * decides with this same check. @host is a DNS name (any case, one trailing dot allowed;
 * letters, digits and "-", no "_") or an IP literal (IPv4 dotted quad, IPv6 with or without
 * brackets). A deny pattern that matches wins over every allow pattern. An IP literal matches
 * only a pattern that is the same address; a name matches a pattern equal to it, or a
 * "*.SUFFIX" pattern when it ends in ".SUFFIX" (so "*.debian.org" matches "deb.debian.org", not
 * "debian.org"). A host that is neither a valid name nor an IP literal is never allowed: numeric
 * shorthands such as "127.1", a name whose last label is all digits ("example.123"), a dotted
 * quad with a trailing dot ("10.1.2.3.") or two trailing dots included. Patterns that do not
 * validate are ignored. Borrows everything; no allocation.
 *
 * A rule may name a port: "registry.npmjs.org:443", "*.debian.org:80", "[2001:db8::1]:22", or
 * ":*" for every port. An allow rule without one allows ports 80 and 443; a deny rule without
 * one denies every port. This function answers whether some port of @host is allowed;
 * dsb_network_host_port_allowed() answers for one.
 */
DSB_API bool dsb_network_host_allowed(char *const *allow, char *const *deny, const char *host);

/* Whether @host may be reached on @port (1..65535) under @allow and @deny, as above. */
DSB_API bool dsb_network_host_port_allowed(char *const *allow, char *const *deny, const char *host,
					   unsigned port);

/* --- configuration ------------------------------------------------------------------------ */

typedef struct dsb_config dsb_config;

/* A configuration holding every default of DESIGN.md. Returns NULL only on OOM. */
DSB_API dsb_config *dsb_config_new(void);

/* Frees @cfg (NULL is fine). Returns NULL. */
DSB_API dsb_config *dsb_config_free(dsb_config *cfg);

/*
 * Parses the YAML document in @buf (@len bytes, no NUL needed) over the defaults. Every unknown
 * key and invalid value fails with DSB_E_CONFIG_INVALID and a message of the form
 * `ORIGIN:LINE:COLUMN: KEY: reason`; @origin (usually the file name) is borrowed.
 * On success *@ret_cfg is a new config; free it with dsb_config_free().
 */
DSB_API int dsb_config_parse(const char *buf, size_t len, const char *origin, dsb_config **ret_cfg,
			     dsb_error *reterr);

/* dsb_config_parse() of the file at @path (at most DSB_CONFIG_MAX_BYTES). Borrows @path. */
DSB_API int dsb_config_load_file(const char *path, dsb_config **ret_cfg, dsb_error *reterr);

/*
 * Applies the environment's DSH_PERMISSION_MODE, passed as @permission_mode (NULL when unset),
 * which overrides the configured mode; danger-full-access also sets the approval policy to
 * never, as DSH's shipped bundle does. A value outside the three modes (the empty string too)
 * fails with DSB_E_CONFIG_INVALID naming DSH_PERMISSION_MODE; @cfg is then unchanged.
 */
DSB_API int dsb_config_apply_env(dsb_config *cfg, const char *permission_mode, dsb_error *reterr);

/* Sets the configured (fallback) workspace root. Copies @path; an empty one is INVALID_ARGS. */
DSB_API int dsb_config_set_workspace_root(dsb_config *cfg, const char *path, dsb_error *reterr);

/* The deployment default mode. */
DSB_API dsb_mode dsb_config_mode(const dsb_config *cfg);

/* The configured approval policy (approval.policy; ask by default). */
DSB_API dsb_approval_policy dsb_config_approval_policy(const dsb_config *cfg);

/*
 * approval.timeoutMs: how long a person asked through the client (MCP elicitation) may take
 * before the escalation counts as unavailable; 0 (the default): the call's own timeout.
 */
DSB_API uint64_t dsb_config_approval_timeout_ms(const dsb_config *cfg);

/* approval.sessionGrants (default false): the client's question also offers "allow for the
 * rest of this session" (the server's memory, logged); ours, not DSH's. */
DSB_API bool dsb_config_session_grants(const dsb_config *cfg);

/* The file the configuration was loaded from, canonical, or NULL. */
DSB_API const char *dsb_config_file(const dsb_config *cfg);

/* The configured workspace root as spelled, or NULL (then the process cwd). */
DSB_API const char *dsb_config_workspace_root(const dsb_config *cfg);

/* network.access: full (DSH's behaviour) by default. */
DSB_API dsb_network_access dsb_config_network_access(const dsb_config *cfg);

/*
 * network.allow and network.deny: host rules, validated and canonical (lower case, no
 * trailing dot, IP literals as inet_ntop() writes them, IPv6 without brackets unless a port
 * follows; ":PORT" or ":*" when one was given). Never NULL, NULL-terminated; owned by @cfg.
 */
DSB_API char *const *dsb_config_network_allow(const dsb_config *cfg);
DSB_API char *const *dsb_config_network_deny(const dsb_config *cfg);

/*
 * network.hosts: "NAME=ADDRESS" strings, NAME a lower-case DNS name and ADDRESS an IP literal
 * (canonical, IPv6 without brackets), in the file's order: the names the proxy's resolver maps
 * to fixed addresses. Never NULL, NULL-terminated; owned by @cfg.
 */
DSB_API char *const *dsb_config_network_hosts(const dsb_config *cfg);

/*
 * network.allowPrivate: address ranges ("ADDRESS/PREFIX", canonical) the proxy may connect to
 * although they are this machine's, private, link-local or reserved: by default a name that
 * resolves into one is refused. Never NULL, NULL-terminated; owned by @cfg.
 */
DSB_API char *const *dsb_config_network_allow_private(const dsb_config *cfg);

/*
 * sandbox-policy.writableRoots and dsb_config_add_writable_roots(): extra directories a
 * workspace-write call may write (beyond DSH), absolute or "~/..." as given. Never NULL,
 * NULL-terminated; owned by @cfg.
 */
DSB_API char *const *dsb_config_writable_roots(const dsb_config *cfg);

/*
 * Adds @roots (NULL-terminated; absolute, or "~" and "~/..." for $HOME) to the configuration's
 * writable roots (the --writable option). Anything else fails with DSB_E_INVALID_ARGS naming
 * it; @cfg is unchanged on failure. Each is checked when a call resolves its policy.
 */
DSB_API int dsb_config_add_writable_roots(dsb_config *cfg, char *const *roots, dsb_error *reterr);

/* network.proxyPort: the loopback port of the allowlist proxy; 0 (the default): any free one. */
DSB_API unsigned dsb_config_network_proxy_port(const dsb_config *cfg);

/*
 * Overrides network.access (the --network option). @access outside the enum fails with
 * DSB_E_INVALID_ARGS; allowlist while network.allow is empty with DSB_E_CONFIG_INVALID (nothing
 * would be reachable: a configuration mistake, not a policy). @cfg is unchanged on failure.
 */
DSB_API int dsb_config_set_network_access(dsb_config *cfg, dsb_network_access access,
					  dsb_error *reterr);

/* --- limits: what one call may take of the host (beyond DSH) ------------------------------ */

/*
 * The limits of one confined call (the configuration's `limits` section, docs/design/limits.md),
 * each over the whole tree of processes the call starts.
 */
typedef enum dsb_limit {
	DSB_LIMIT_PROCESSES,   /* processes and threads at once */
	DSB_LIMIT_MEMORY,      /* bytes of memory (and swap), tmpfs pages included */
	DSB_LIMIT_CPU_SECONDS, /* CPU seconds of each process (RLIMIT_CPU) */
	DSB_LIMIT_TMP_BYTES,   /* the size of a /tmp the sandbox mounts */
	DSB_LIMIT_FILE_BYTES,  /* the largest file a process may write (RLIMIT_FSIZE) */
	_DSB_LIMIT_MAX,
	_DSB_LIMIT_INVALID = -1,
} dsb_limit;

typedef struct dsb_limits {
	uint64_t value[_DSB_LIMIT_MAX]; /* 0: no limit (unless not set: then the default) */
	unsigned set;			/* bit (1u << limit): set explicitly, by a file or a flag */
} dsb_limits;

/* The configuration's key ("processes", "memoryBytes", "cpuSeconds", "tmpBytes", "fileBytes"),
 * or NULL. */
DSB_API const char *dsb_limit_to_string(dsb_limit limit);
DSB_API dsb_limit dsb_limit_from_string(const char *s);

/* Whether @limit is a size in bytes (written 512M, 2G, ...) rather than a count. */
DSB_API bool dsb_limit_is_size(dsb_limit limit);

/*
 * Parses @text as a value of @limit: a decimal count; a size may end in K, M, G or T (powers of
 * 1024, optionally followed by "iB" or "B"). "0" is no limit. -DSB_E_INVALID_ARGS (with @origin,
 * e.g. "--memory", in the message) for anything else, or a value beyond 2^62.
 */
DSB_API int dsb_limit_parse(dsb_limit limit, const char *text, const char *origin,
			    uint64_t *ret_value, dsb_error *reterr);

/* The configuration's limits: values and which were set explicitly. */
DSB_API void dsb_config_limits(const dsb_config *cfg, dsb_limits *ret_limits);

/* Sets each limit @limits sets explicitly over @cfg's (--max-processes, --memory). */
DSB_API int dsb_config_set_limits(dsb_config *cfg, const dsb_limits *limits, dsb_error *reterr);

/* --- the policy service ------------------------------------------------------------------- */

typedef struct dsb_policy dsb_policy;

/*
 * The policy service of dsh-compat §2.1: the default mode of @cfg and its workspace root (the
 * configured one, else the process cwd), canonicalised once (§2.3). Borrows @cfg.
 */
DSB_API int dsb_policy_new(const dsb_config *cfg, dsb_policy **ret_policy, dsb_error *reterr);

/* Frees @policy (NULL is fine). Returns NULL. */
DSB_API dsb_policy *dsb_policy_free(dsb_policy *policy);

DSB_API dsb_mode dsb_policy_default_mode(const dsb_policy *policy);

/* The canonical fallback workspace root. Owned by @policy. */
DSB_API const char *dsb_policy_workspace_root(const dsb_policy *policy);

/*
 * Adds @path (absolute; it need not exist yet) as protected for every call resolved from now
 * on, as @kind (store, config, answerer, runner, spill or listed). The configuration already
 * protects itself when loaded from a file, its answerer and its runner; a caller adds the store
 * it opens and, when it loaded no file, the directory a configuration would be looked for in.
 * Copies @path.
 */
DSB_API int dsb_policy_protect(dsb_policy *policy, dsb_protect_kind kind, const char *path,
			       dsb_error *reterr);

/* What one call knows when it asks for its policy (dsh-compat §2.2). */
typedef struct dsb_resolve_request {
	dsb_mode mode;		 /* an explicit (approved) mode, or _DSB_MODE_INVALID */
	const char *session_id;	 /* the session's id; NULL for an agentless call */
	dsb_mode session_mode;	 /* the session's sandbox/mode fold, or _DSB_MODE_INVALID */
	const char *session_cwd; /* the session header's cwd, or NULL */
} dsb_resolve_request;

#define DSB_RESOLVE_REQUEST_INIT                                                                  \
	{                                                                                         \
		.mode = _DSB_MODE_INVALID, .session_id = NULL, .session_mode = _DSB_MODE_INVALID, \
		.session_cwd = NULL,                                                              \
	}

/* One protected path of a call. */
typedef struct dsb_protected {
	char *path; /* canonical, absolute */
	dsb_protect_kind kind;
	bool directory; /* a directory (or one to be made: a missing hooks or store directory) */
	bool exists;	/* false: made empty before the call so that it cannot be created inside */
	bool absent;	/* must not exist (no empty stand-in would do): removed after the call
			 * if the command made it, a directory with what it holds; never bound
			 * (a gitdir's missing commondir, a missing ~/.bashrc) */
	/*
	 * Beyond DSH: with @absent, @path is a symlink in a writable root that leads to a
	 * protected path (~/.bashrc -> dotfiles/bashrc): no mount can hold a symlink's name, so
	 * after the call it is made this symlink again, with this target, if it changed.
	 */
	char *link;
} dsb_protected;

/* The complete per-call policy (SandboxExecutionPolicy). Caller-owned: init with {0}. */
typedef struct dsb_exec_policy {
	dsb_mode mode;
	char *workspace_root; /* canonical, absolute */
	char *session_id;     /* NULL for an agentless call */
	/* Beyond DSH: what no confined command nor the fence may change, in resolve() order. */
	dsb_protected *protected;
	size_t n_protected;
	/*
	 * Beyond DSH: sandbox-policy.writableRoots and --writable, canonical, deduplicated, none
	 * equal to or inside the workspace; NULL unless workspace-write (then NULL-terminated).
	 */
	char **extra_roots;
	/*
	 * Beyond DSH (docs/design/paths.md): the host directory that is the command's /tmp, the
	 * session's private one (dsb_session_tmp_dir()), which the fs tools read and write for
	 * /tmp/...; NULL for an agentless call (a fresh /tmp for each command) or where the
	 * backend can show no /tmp of its own. Set by the caller after resolving.
	 */
	char *tmp_dir;
	/*
	 * Beyond DSH (docs/design/paths.md): in workspace-write with protectGit, the repositories
	 * found below the writable roots before the call (a sorted, NULL-terminated array of
	 * markers: DIR/.git, or a bare repository's directory), protected during it; any other
	 * the call makes is disarmed after it. NULL otherwise.
	 */
	char **repos;
} dsb_exec_policy;

/*
 * Resolves one call's policy: mode = explicit > session fold > default; root = the session cwd
 * (canonicalised) > the service's root. Borrows @req; fills *@ret_policy, which the caller
 * releases with dsb_exec_policy_done().
 */
DSB_API int dsb_policy_resolve(const dsb_policy *policy, const dsb_resolve_request *req,
			       dsb_exec_policy *ret_policy, dsb_error *reterr);

/* Releases what @p holds and zeroes it (mode becomes read-only). NULL is fine. */
DSB_API void dsb_exec_policy_done(dsb_exec_policy *p);

/*
 * Adds one protected path to a resolved policy (the executor adds the call's spill directory).
 * Copies @path, which must be canonical and absolute.
 */
DSB_API int dsb_exec_policy_protect(dsb_exec_policy *p, dsb_protect_kind kind, const char *path,
				    bool directory, dsb_error *reterr);

/*
 * The protected path that @path (canonical, absolute) lies in or is, for a write (any kind) or
 * a read (deny-read only); NULL when none. Borrows both.
 */
DSB_API const dsb_protected *dsb_exec_policy_protected_at(const dsb_exec_policy *p,
							  const char *path, bool write);

/*
 * The writable roots, the one list every enforcer grants (docs/design/paths.md): empty unless
 * workspace-write, else the canonical workspace root, "/tmp" (the sandbox's own /tmp, whichever
 * host directory backs it) and the extra roots, deduplicated in order. DSH's §4.1 list also
 * names the platform temp dir: the confined command's TMPDIR is "/tmp" instead. On success
 * *@ret_roots is a new NULL-terminated array (free with dsb_strv_free()) and the return value
 * is its length.
 */
DSB_API int dsb_policy_writable_roots(const dsb_exec_policy *p, char ***ret_roots,
				      dsb_error *reterr);

/* Frees a NULL-terminated string array and its strings (NULL is fine). Returns NULL. */
DSB_API char **dsb_strv_free(char **strv);

#endif
