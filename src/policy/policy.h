/* SPDX-License-Identifier: MIT */
/*
 * Internals of the policy piece: the configuration struct behind the opaque dsb_config, shared
 * with later pieces (confinement reads sandbox-local, the executor reads bash, approval reads
 * approval and permission). Values here are always valid: the loader refuses anything else.
 */
#ifndef DSB_POLICY_POLICY_H
#define DSB_POLICY_POLICY_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dsb/policy.h>

#include "../core/core.h"

/* Defaults of DESIGN.md / dsh-compat §1.4. */
#define DSB_DEFAULT_PROBE_TIMEOUT_MS 5000
#define DSB_DEFAULT_TIMEOUT_MS	     120000
#define DSB_DEFAULT_MAX_TIMEOUT_MS   600000
#define DSB_DEFAULT_MAX_OUTPUT_BYTES 64000
#define DSB_DEFAULT_MAX_SPILL_BYTES  67108864
#define DSB_DEFAULT_GRACE_MS	     3000
#define DSB_MAX_GRACE_MS	     2147483647 /* what a Node timer can carry (dsh-compat §1.4) */

/* sandbox-local.landlockScope (beyond DSH): signals, and abstract unix sockets. */
#define DSB_SCOPE_SIGNAL	       (1u << 0)
#define DSB_SCOPE_ABSTRACT_UNIX_SOCKET (1u << 1)

/* How every invalid-mode message lists the vocabulary, in SANDBOX_MODES order. */
#define POLICY_MODES_ACCEPTED "(accepted: read-only, workspace-write, danger-full-access)"

/* "bwrap, landlock": the backends of this build, in chain order (generated, see backends.h). */
const char *policy_backends_accepted(void);

/* One permission preset (dsh-compat §8.6): a sandbox mode bundled with an approval policy. */
typedef struct dsb_preset {
	char *key; /* the table key, as the user types it */
	dsb_mode sandbox;
	dsb_approval_policy approval;
	char *name;	   /* display name, NULL = the key */
	char *description; /* NULL if none */
} dsb_preset;

/*
 * One rule of bash.scrubEnv (beyond DSH; docs/design/environment.md): a POSIX extended regular
 * expression matched, ignoring case, against a variable's name, or against its value when written
 * with the prefix "value:". A rule whose text is one of the default list's is matched by that
 * entry's hand-written equivalent instead, so the defaults cost neither regcomp() nor regexec().
 */
typedef struct scrub_rule {
	char *source;  /* as configured, "value:" included */
	bool on_value; /* matched against the value, not the name */
	/* A default's equivalent, or NULL, and the letters (bit 0: A) of every name it matches. */
	bool (*literal)(const char *s, size_t n);
	uint32_t letters;
	regex_t re; /* compiled when literal is NULL */
} scrub_rule;

struct dsb_config {
	/* sandbox-policy */
	dsb_mode mode;
	char *workspace_root;	/* as configured; NULL = the process cwd */
	char **protected_paths; /* never NULL: patterns relative to each writable root */
	bool protect_git;	/* .git hooks, config and info of each writable root */
	char **deny_read;	/* never NULL: absolute, or ~/... */
	char **writable_roots;	/* never NULL: absolute, or ~/...; checked per call (roots.c) */
	bool protect_defaults;	/* the start-up files of every writable root (protect.c) */
	char *file;		/* the file loaded, canonical; NULL for none */

	/* sandbox-local */
	dsb_backend backends[_DSB_BACKEND_MAX]; /* the chain, in order, no repeats */
	size_t n_backends;
	uint64_t probe_timeout_ms;
	char **runner_command;		  /* never NULL; empty = not configured */
	char **runner_failure_signatures; /* never NULL */
	unsigned landlock_scope;	  /* DSB_SCOPE_*: what Landlock also scopes (ABI >= 6) */
	uint64_t landlock_abi_max;	  /* 0, or the highest Landlock ABI to use (degrade) */
	bool evidence; /* file refusals supervised and recorded (docs/design/evidence.md) */

	/* bash */
	uint64_t timeout_ms;
	uint64_t max_timeout_ms;
	uint64_t max_output_bytes;
	uint64_t max_spill_bytes;
	uint64_t grace_ms;
	scrub_rule *scrub_env; /* what is scrubbed besides DSH's rule, which always applies */
	size_t n_scrub_env;

	/* approval */
	dsb_approval_policy approval_policy;
	char **answerer;	      /* never NULL; empty = no external answerer */
	uint64_t approval_timeout_ms; /* how long a person may take; 0: the call's timeout */
	bool session_grants;	      /* "allow for this session" offered (ours, not DSH's) */

	/* permission */
	dsb_preset *presets; /* in declaration order */
	size_t n_presets;
	char *default_preset; /* NULL = inferred from the composed defaults (dsh-compat §8.6) */

	/* network (issue 17) */
	dsb_network_access network_access;
	char **network_allow;	      /* never NULL: canonical host patterns (network.c) */
	char **network_deny;	      /* never NULL: canonical host patterns */
	char **network_hosts;	      /* never NULL: "name=address", both canonical */
	char **network_allow_private; /* never NULL: canonical address ranges */
	unsigned network_proxy_port;  /* 0: any free port */

	/* limits (issue 28): values, and which the file or a flag set (the rest are defaults) */
	dsb_limits limits;
};

/* A path the service protects in every call (dsb_policy_protect(), or the configuration's). */
typedef struct policy_source {
	dsb_protect_kind kind;
	char *path; /* absolute */
} policy_source;

struct dsb_policy {
	dsb_mode default_mode;
	char *workspace_root; /* canonical: resolveWorkspaceRoot(configured root ?? cwd) */
	policy_source *sources;
	size_t n_sources;
	char **protected_paths; /* sandbox-policy.protectedPaths */
	bool protect_git;
	bool protect_defaults;
	char **deny_read;
	char **writable_roots; /* as configured: absolute or ~/... (roots.c checks them per call) */
};

/* protect.c: the service's sources and each call's protected paths. */
int policy_source_add(dsb_policy *policy, dsb_protect_kind kind, const char *path);
int policy_source_add_argv(dsb_policy *policy, dsb_protect_kind kind, char *const *argv);
/* Fills p->protected for @p's mode and roots. -DSB_E_NO_MEMORY. */
int policy_protect_resolve(const dsb_policy *policy, dsb_exec_policy *p, dsb_error *reterr);
void policy_protected_free(dsb_protected *v, size_t n);

/* config.c: preset tables, deep-copied and freed as a whole. */
dsb_preset *config_presets_copy(const dsb_preset *presets, size_t n);
void config_presets_free(dsb_preset *presets, size_t n);

/* scrub.c: the environment scrub (dsh-compat §6.2 and bash.scrubEnv). */

/*
 * Compiles @text (a bash.scrubEnv entry, non-empty) into *@ret. 0; -EINVAL with the reason
 * (regerror()'s text, or the limit passed) in @why; -ENOMEM. Copies @text.
 */
int scrub_rule_compile(const char *text, scrub_rule *ret, char *why, size_t why_size);
void scrub_rules_free(scrub_rule *rules, size_t n);

/* The default list (what an absent bash.scrubEnv means), as a new array of rules. -ENOMEM. */
int scrub_rules_default(scrub_rule **ret_rules, size_t *ret_n);

/*
 * Whether the parent's NAME=VALUE @entry is withheld from a command: DSH's rule (the name
 * matches /KEY|PASSWORD|SECRET|TOKEN/i or its upper-case form starts with DSH_), whatever
 * @rules say, then @rules. Any length; no allocation.
 */
bool scrub_check(const scrub_rule *rules, size_t n_rules, const char *entry);

/*
 * protect.c: after a call of @p that could write (p->repos, docs/design/paths.md): the
 * repositories it made below the writable roots, or the one @path lies in (an fs write or
 * edit; NULL: all), disarmed, a line in @notes for each. 0 or -ENOMEM.
 */
int policy_check_repos(const dsb_exec_policy *p, const char *path, strbuf *notes);

/*
 * unavailable.c: fails with DSB_E_SANDBOX_UNAVAILABLE and the exact message of dsh-compat §1.2 for
 * @mode, with " Runner failure: DETAIL" appended when @runner_detail is non-NULL.
 */
int policy_fail_unavailable(dsb_error *reterr, dsb_mode mode, const char *runner_detail);

/*
 * network.c: host patterns and names. The longest DNS name, and a buffer that holds any
 * canonical pattern ("*." and a name, or an IPv6 literal) with its NUL.
 */
#define NETWORK_NAME_MAX    253
#define NETWORK_PATTERN_MAX (NETWORK_NAME_MAX + 3)

/* A rule's pattern and port (":65535", or brackets around an IPv6 address and ":*"). */
#define NETWORK_RULE_MAX (NETWORK_PATTERN_MAX + 8)
/* A rule's port when it names none (80 and 443 for allow, every port for deny), or "*". */
#define NETWORK_PORT_DEFAULT 0
#define NETWORK_PORT_ANY     (-1)

/* How every invalid-access message lists the vocabulary. */
#define POLICY_NETWORK_ACCESS_ACCEPTED "(accepted: full, none, allowlist)"

/*
 * Writes the canonical form of the host pattern @s into @buf: an exact DNS name, "*." and a
 * name, or an IP literal (@allow_wildcard false: no "*." form, for network.hosts' names;
 * @allow_ip false: no IP literal). 0; -EINVAL with the reason in @why (a phrase, no period).
 */
int network_pattern_canonical(const char *s, bool allow_wildcard, bool allow_ip,
			      char buf[NETWORK_PATTERN_MAX], const char **why);

/*
 * The canonical form of the allow or deny rule @s into @buf: a host pattern as
 * network_pattern_canonical() takes it (wildcards and IP literals allowed), optionally followed
 * by ":PORT" or ":*" (an IPv6 literal then in brackets). 0; -EINVAL with @why.
 */
int network_rule_canonical(const char *s, char buf[NETWORK_RULE_MAX], const char **why);

/* How the rules answer a host and port. */
typedef enum network_verdict {
	NETWORK_ALLOWED,
	NETWORK_HOST_REFUSED, /* no allow rule names the host, or a deny rule names all its ports */
	NETWORK_PORT_REFUSED, /* the host is named, but not with this port */
} network_verdict;

/*
 * The rules' answer for the host @host (any spelling dsb_network_host_allowed() takes) on
 * @port; when allowed, *@ret_wildcard (may be NULL) says whether only "*." rules allow it.
 */
network_verdict network_check(char *const *allow, char *const *deny, const char *host, int port,
			      bool *ret_wildcard);

/* An address range's canonical text ("ADDRESS/PREFIX") with its NUL. */
#define NETWORK_CIDR_MAX 64

/*
 * The canonical form of the address range @s ("10.0.0.0/8", "fd00::/8", or one address, which
 * is /32 or /128) into @buf: "ADDRESS/PREFIX", the address as inet_ntop() writes it. Bits set
 * past the prefix are refused. 0; -EINVAL with @why.
 */
int network_cidr_canonical(const char *s, char buf[NETWORK_CIDR_MAX], const char **why);

/* Whether the canonical range @cidr holds the address @addr (4 bytes for AF_INET, 16 for
 * AF_INET6) of @family. */
bool network_cidr_contains(const char *cidr, int family, const void *addr);

/* The canonical text of the IP literal @s (IPv6 with or without brackets) into @buf; -EINVAL. */
int network_ip_canonical(const char *s, char buf[NETWORK_PATTERN_MAX]);

/*
 * The canonical spelling of @host, a host a client asks for (a DNS name or an IP literal, as
 * dsb_network_host_allowed() takes it), into @buf: what the proxy matches, resolves, records
 * and compares with the names of its fixed answers. 0; -EINVAL for a host that is neither
 * (NULL included), where dsb_network_host_allowed() refuses. Borrows @host; @buf must not be it.
 */
int network_host_canonical(const char *host, char buf[NETWORK_PATTERN_MAX]);

/*
 * roots.c: fills p->extra_roots from @policy's configured ones for @p's mode and workspace root:
 * each canonical, an existing directory, not "/", not a symlink's spelling that a writable root
 * could repoint; duplicates and those inside the workspace dropped. The errors name the entry.
 */
int policy_extra_roots_resolve(const dsb_policy *policy, dsb_exec_policy *p, dsb_error *reterr);
/* "~" and "~/..." with $HOME, anything else copied; NULL on OOM or without an absolute HOME. */
char *policy_expand_home(const char *path);

#endif
