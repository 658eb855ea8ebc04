/* SPDX-License-Identifier: MIT */
/*
 * Internals of the confinement piece.
 *
 *   chain.c            the provider: the chain over the backends, verdict caches, confine()
 *   backend-*.c        one backend each: a backend_ops (probe, confine, dialect, report)
 *   landlock.c         the kernel interface: ABI negotiation, the rule set of spec §5.6
 *   harden.c           namespaces and capabilities of a confined child
 *   seccomp*.c         the system-call filter (generated at build time)
 *   self.c             confine_self(): what a child (or `landlock-run`) does to itself
 *   spawn.c            vfork, harden in the child, exec, with failures reported out of band
 *   tree.c             no process a call starts outlives it (subreaper or monitor)
 *
 * DSH's `landlock-run` launcher contract lives in src/launcher/: linked into the CLI, and built
 * on its own, statically, from self.c, landlock.c, harden.c and seccomp.c alone.
 */
#ifndef DSB_CONFINE_CONFINE_H
#define DSB_CONFINE_CONFINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dsb/confine.h>

#include "../core/core.h"
#include "metadata.h"
#include "seccomp.h"

/* --- landlock.c ----------------------------------------------------------------------------- */

/* Filesystem rights (spec §5.6 table; the kernel's LANDLOCK_ACCESS_FS_*). */
#define LL_EXECUTE     (1ULL << 0)
#define LL_WRITE_FILE  (1ULL << 1)
#define LL_READ_FILE   (1ULL << 2)
#define LL_READ_DIR    (1ULL << 3)
#define LL_REMOVE_DIR  (1ULL << 4)
#define LL_REMOVE_FILE (1ULL << 5)
#define LL_MAKE_CHAR   (1ULL << 6)
#define LL_MAKE_DIR    (1ULL << 7)
#define LL_MAKE_REG    (1ULL << 8)
#define LL_MAKE_SOCK   (1ULL << 9)
#define LL_MAKE_FIFO   (1ULL << 10)
#define LL_MAKE_BLOCK  (1ULL << 11)
#define LL_MAKE_SYM    (1ULL << 12)
#define LL_REFER       (1ULL << 13)
#define LL_TRUNCATE    (1ULL << 14)
#define LL_IOCTL_DEV   (1ULL << 15)

/* Scopes (ABI >= 6; the kernel's LANDLOCK_SCOPE_*). Beyond DSH: see DESIGN.md. */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL		      (1ULL << 1)

/* The highest ABI whose filesystem rights DSH's launcher handles; below it is partial. */
#define LL_FULL_ABI 5

/* What to restrict a process to. Paths are opened when the plan is applied. */
typedef struct landlock_plan {
	char **ro;	    /* NULL-terminated: EXECUTE | READ_FILE | READ_DIR */
	char **rw;	    /* NULL-terminated: every handled right (masked for non-directories) */
	char **rw_in_place; /* NULL-terminated: as rw, but nothing linked or moved in or out */
	uint64_t scope;	    /* LL_SCOPE_* wanted; applied only as far as the ABI has them */
	int abi_max;	    /* 0, or the highest ABI to use (landlockAbiMax: an explicit degrade) */
} landlock_plan;

/* What DSH's launcher prints on stderr before exec when enforcement is partial (spec §5.6). */
#define LL_PARTIAL_NOTICE "landlock-run: partial enforcement (older Landlock ABI)"

/* The outcome of negotiating a plan with this kernel. */
typedef struct landlock_status {
	int abi;	     /* >= 1, or -errno when Landlock is unavailable */
	bool partial;	     /* abi < LL_FULL_ABI */
	uint64_t handled_fs; /* rights the rule set governs */
	uint64_t scoped;     /* scopes the rule set applies */
} landlock_status;

/* The kernel's Landlock ABI version, or -errno (ENOSYS, EOPNOTSUPP: not available). */
int landlock_abi(void);

/* The handled rights and scopes @plan gets at @abi (no system call). */
void landlock_negotiate(const landlock_plan *plan, int abi, landlock_status *ret_status);

/*
 * Restricts the calling process to @plan, irreversibly: rule set at the negotiated ABI,
 * PR_SET_NO_NEW_PRIVS, landlock_restrict_self(). Allocates nothing, so it is safe in a child
 * forked from a threaded parent. On failure returns -errno and writes into @msg the launcher's
 * exact line without newline, e.g. "landlock-run: cannot open rule path: /x: No such file or
 * directory" or "landlock-run: landlock is not enforced by this kernel (ABI unsupported or
 * disabled)". On success fills *@ret_status (may be NULL). Prints nothing.
 */
int landlock_restrict(const landlock_plan *plan, landlock_status *ret_status, char *msg,
		      size_t msg_size);

/* The filter a Landlock child gets: no new namespaces, and, without a PID namespace, no
 * reconfiguring processes outside by their pid. */
/*
 * What a backend's probe runs inside the sandbox: a program that exits 0 found by no PATH
 * lookup (DSH probes with `true`, which a caller's PATH may not reach, and then a typo'd PATH
 * would read as "no sandbox"). /bin/sh is the one absolute path every POSIX system has
 * (system(3) and popen(3) rely on it; merged-/usr systems keep it as a link), and `:` is its
 * builtin: nothing else is looked up. Not our own binary through /proc/self/exe: inside bwrap
 * that names bwrap, and ours may lie where the sandbox does not show it.
 */
#define PROBE_COMMAND "/bin/sh", "-c", ":"

#define LANDLOCK_FILTER (SECCOMP_DENY_NAMESPACES | SECCOMP_DENY_PROCESS_TARGETS)

/* --- harden.c ------------------------------------------------------------------------------- */

/* What a child achieved, reported by harden_*() and the spawner (a bit set). */
#define HARDEN_CAPS	       (1u << 0) /* effective, permitted, inheritable and ambient sets empty */
#define HARDEN_BOUNDING	       (1u << 1)  /* the bounding set empty too */
#define HARDEN_FILTER	       (1u << 2)  /* the seccomp filter installed */
#define HARDEN_IPC_NS	       (1u << 3)  /* a new IPC namespace */
#define HARDEN_UTS_NS	       (1u << 4)  /* a new UTS namespace */
#define HARDEN_USER_NS	       (1u << 5)  /* a user namespace (what made the two above possible) */
#define HARDEN_MNT_NS	       (1u << 6)  /* a mount namespace (for protected paths) */
#define HARDEN_META_SUPERVISED (1u << 7)  /* metadata calls go to the supervisor (metadata.c) */
#define HARDEN_META_REFUSED    (1u << 8)  /* no supervisor could be had: they fail with EPERM */
#define HARDEN_NET_NS	       (1u << 9)  /* a network namespace with a loopback alone */
#define HARDEN_NET_SUPERVISED  (1u << 10) /* connect and sendto go to the supervisor */
#define HARDEN_FAILED	       (1u << 31)

/*
 * New IPC and UTS namespaces for the calling thread where the kernel allows them: directly when
 * privileged, else inside a new user namespace that maps the caller's uid and gid to
 * themselves; with @mounts a mount namespace too where possible (HARDEN_MNT_NS says whether).
 * Returns the HARDEN_*_NS bits made (0: none; the caller falls back to the filter),
 * or HARDEN_FAILED when a user namespace was made but could not be mapped. No allocation.
 */
unsigned harden_namespaces(bool mounts, bool net);

/*
 * With @net, harden_namespaces() also tries a network namespace (HARDEN_NET_NS when made; the
 * caller fails where it needed one). harden_net_namespace() makes that one alone, in a user
 * namespace of its own where the caller is not privileged: for a child that execs bwrap, which
 * then stays in it. No allocation.
 */
unsigned harden_net_namespace(void);

/*
 * In a new network namespace: brings its loopback up, and with @proxy_port makes the proxy's
 * listener on 127.0.0.1:@proxy_port (returned, close-on-exec; else 0). -errno.
 */
int harden_loopback(uint16_t proxy_port);

/*
 * Empties every capability set of the calling thread, the bounding set where it may (needs
 * CAP_SETPCAP: root, or inside the user namespace above). Returns HARDEN_CAPS, plus
 * HARDEN_BOUNDING when the bounding set is empty, or HARDEN_FAILED. No allocation.
 */
unsigned harden_drop_caps(void);

/* Whether the caller holds CAP_SYS_ADMIN (may make a mount namespace without a user one). */
bool harden_can_mount(void);

/* --- protect.c: protected paths as mounts ----------------------------------------------------- */

typedef enum protect_op {
	PROTECT_PIN,	   /* bound onto itself, writable: cannot be renamed or replaced */
	PROTECT_READ_ONLY, /* bound onto itself, read-only */
	PROTECT_HIDE_DIR,  /* an empty, mode 000, read-only tmpfs over it */
	PROTECT_HIDE_FILE, /* /dev/null over it */
} protect_op;

typedef struct protect_mount {
	protect_op op;
	char *path;
	dsb_protect_kind kind; /* of the protected path (pins: meaningless) */
} protect_mount;

typedef struct protect_ops {
	protect_mount *v; /* pins first, then the rest; parents first in each */
	size_t n;
} protect_ops;

/*
 * The mounts that enforce @policy's protected paths for a backend whose writable roots are
 * @visible, and which shows the command nothing of the host under @unseen (bwrap's private
 * /tmp). Fills *@ret (release with protect_ops_done()). -ENOMEM.
 */
int protect_ops_build(const dsb_exec_policy *policy, char *const *visible, char *const *unseen,
		      protect_ops *ret);
void protect_ops_done(protect_ops *o);

/* Whether @o holds a policy-bearing path (store .. spill), which must be enforced. */
bool protect_ops_required(const protect_ops *o);

/*
 * -EPERM with "the KIND PATH lies in a writable root and @cannot; FIX" in @why when @o holds a
 * policy-bearing path; else 0.
 */
int protect_refuse(const protect_ops *o, const char *cannot, char *why, size_t why_size);

/*
 * Makes each missing protected path of @policy inside @roots, empty, beneath its root and
 * through no symlink. -EPERM with the reason in @why when a policy-bearing one cannot be made.
 */
int protect_make_missing(const dsb_exec_policy *policy, char *const *roots, char *why,
			 size_t why_size);

/*
 * After a confined call has ended (every process of it): removes each path of @policy that
 * must stay absent (dsb_protected.absent) if the command made it. Best effort.
 */
void protect_remove_absent(const dsb_exec_policy *policy);

/* Appends @o as bwrap arguments. -ENOMEM. */
int protect_bwrap_args(const protect_ops *o, char ***io_argv);

/*
 * In a child in its own mount namespace: makes every mount a slave (nothing propagates back
 * to the host), then applies @v. -errno with the launcher-style line in @msg. No allocation
 * (self.c).
 */
int protect_apply_mounts(const protect_mount *v, size_t n, char *msg, size_t size);

/* --- the plan a backend hands the spawner ---------------------------------------------------- */

/* What the spawner does in the child beyond exec'ing c->argv (dsb_confined.plan). */
typedef struct confine_plan {
	landlock_plan landlock; /* applied when dsb_confined.landlock */
	bool harden;		/* namespaces, capabilities and the filter in the child */
	unsigned filter_flags;	/* SECCOMP_DENY_*: the filter's variant */
	int filter_fd;		/* >= 0: the runner reads the filter from this descriptor */
	bool contained;		/* the backend ends every process when the command ends */
	protect_ops mounts;	/* Landlock: applied in a new mount namespace before restricting */
	bool mounts_required;	/* mounts hold a policy-bearing path: no namespace, no run */
	bool mount_ns;		/* make a mount namespace even without mounts (the probe) */
	/*
	 * With SECCOMP_METADATA_NOTIFY in filter_flags: where the supervisor lets metadata
	 * changes land (Landlock's writable grants but /dev/null, canonical; NULL-terminated,
	 * NULL: nowhere).
	 */
	char **meta_roots;
	/*
	 * Of those, the ones whose own directory stays as it is (the host's /tmp, shared with
	 * every user, unless it is the workspace): changes beneath land, on the root refused.
	 */
	char **meta_fixed;
	/*
	 * A network policy other than full (docs/design/network.md): a network namespace of the
	 * command's own with a loopback alone, made by the child (both backends); with
	 * @proxy_port the proxy's listener on 127.0.0.1:@proxy_port in there, sent to the
	 * supervisor before anything else. Without a namespace (Landlock where none can be made)
	 * the filter refuses every socket family but AF_UNIX instead.
	 */
	bool net_ns;
	bool net_probe; /* try to make one, as net_ns, but run without it too (the probe) */
	uint16_t proxy_port;
	/* bwrap: the child installs the connect/sendto listener (seccomp_net_only_program())
	 * before it execs bwrap, which installs the main filter itself. */
	bool net_notify;
	/*
	 * Where the command's own pathname sockets lie, as it sees them (the workspace, bwrap's
	 * private /tmp; never the host's /tmp, every user's): connect and sendto reach sockets
	 * beneath these alone (NULL-terminated, owned; NULL: none).
	 */
	char **net_roots;
	/* What the proxy lets through (allowlist): NULL-terminated, owned. */
	char **net_allow, **net_deny, **net_hosts;
} confine_plan;

/* The plan of @c, or NULL (danger-full-access, or a configured runner). */
const confine_plan *confined_plan(const dsb_confined *c);

/* Whether @plan (may be NULL) restricts the network: a namespace, or the supervised calls. */
static inline bool plan_net_restricted(const confine_plan *plan)
{
	return plan &&
	       (plan->net_ns || plan->net_notify || (plan->filter_flags & SECCOMP_NET_NOTIFY));
}

/* --- chain.c: the provider and the backends' interface ---------------------------------------- */

/*
 * The port of the proxy's listener inside the command's network namespace, where every port
 * is free: the one proxies conventionally use, unless network.proxyPort says otherwise.
 */
#define NET_PROXY_PORT 3128

struct dsb_provider {
	dsb_backend chain[_DSB_BACKEND_MAX];
	size_t n_chain;
	uint64_t probe_timeout_ms;
	char **runner_command;
	char **runner_failure_signatures;
	uint64_t scope; /* LL_SCOPE_* */
	int abi_max;	/* 0: the kernel's */
	char *cache_dir;
	char bwrap[4096]; /* the trusted bwrap found (backend-bwrap.c), "" before */
	struct {
		dsb_network_access access;
		char **allow, **deny, **hosts; /* NULL-terminated */
		uint16_t proxy_port;	       /* 0: NET_PROXY_PORT */
	} network;
	struct {
		bool known;
		int selected; /* index into chain, -1: unavailable */
		dsb_enforcement enforcement;
		unsigned hardening; /* DSB_HARDEN_* the probe found */
		bool from_cache;
	} v;
	dsb_probe_report last; /* what the last probe found, for `probe` */
};

/*
 * One backend: everything the chain needs from it. The chain only iterates over these; the
 * registry is generated from the build's backend list (backends.h).
 */
typedef struct backend_ops {
	const char *name;
	const char *const *denials; /* the dialect (spec §5.7): lower-case stderr signatures */
	const char *const *fatal;   /* runner-failure signatures (§5.8); NULL: out of band */
	/*
	 * What identifies the backend's own parts for the verdict cache (its runner's path and
	 * identity); may resolve them into @p. Returns -errno, or 0 with @sb appended to.
	 */
	int (*identity)(dsb_provider *p, strbuf *sb);
	/* Probes functionally (runs `true` under the read-only rules): fills @out. */
	void (*probe)(dsb_provider *p, dsb_probe_backend *out);
	/* The facts `probe` reports without running anything: program, rights, what is not
	 * governed, the hardening to expect. */
	void (*report)(const dsb_provider *p, dsb_probe_backend *out);
	/* What a call under @policy runs: c->argv and c->plan. -errno; a refusal (an untrusted
	 * runner) returns -EPERM with the reason in @why. */
	int (*confine)(const dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
		       dsb_confined *c, char *why, size_t why_size);
} backend_ops;

#define BACKEND_DECLARE_(name, NAME) extern const backend_ops backend_##name;
DSB_BACKENDS(BACKEND_DECLARE_)
#undef BACKEND_DECLARE_

/*
 * Runs @c within the probe timeout, stdin and stdout on /dev/null and stderr kept: 0 when it
 * exited 0, else -1 with why not in @reason. *@ret_achieved gets the child's HARDEN_* bits.
 */
int chain_run_probe(const dsb_provider *p, const dsb_confined *c, unsigned *ret_achieved,
		    char *reason, size_t size);

/* A new NULL-terminated copy of @words; NULL on OOM. */
char **strv_of(const char *const *words);

/* Appends "--" and @argv to *@io. -ENOMEM. */
int push_command(char ***io, char *const *argv);

/*
 * Whether the backend @p confines with can enforce protected paths (a mount namespace): bwrap,
 * Landlock where the probe made one; never a runnerCommand. Probes on first use.
 */
bool provider_protects(dsb_provider *p);

/* A new plan for @c (zeroed, no filter descriptor). -ENOMEM. */
int plan_new(dsb_confined *c, confine_plan **ret);

/* --- trust.c ------------------------------------------------------------------------------- */

/*
 * Finds the program @name (absolute, or searched on PATH) that is safe to run outside the
 * sandbox: see trust.c. Fills @out with its canonical path. -ENOENT: there is none; -EPERM:
 * there are only untrusted ones; both with the reason in @why.
 */
int trusted_program(const char *name, char *out, size_t size, char *why, size_t why_size);

/* --- backend-landlock.c --------------------------------------------------------------------- */

/* The Landlock ABI @p confines with: the kernel's, capped by landlockAbiMax; -errno: none. */
int landlock_effective_abi(const dsb_provider *p);

/* --- backend-bwrap.c ------------------------------------------------------------------------ */

/* Appends DSH's profile arguments for @mode (and @root) to *@io_argv. -ENOMEM. */
int bwrap_profile(dsb_mode mode, const char *root, char ***io_argv);

/* Where bwrap reads the system-call filter from (`--seccomp 3`). */
#define BWRAP_FILTER_FD 3

/*
 * Appends our hardening to DSH's profile: user, IPC and UTS namespaces, every capability
 * dropped (root keeps them under bwrap otherwise), and the filter read from @filter_fd.
 */
int bwrap_hardening(int filter_fd, char ***io_argv);

/* The bwrap to trust (trusted_program() of -Dbwrap_path, "bwrap" by default): 0 or -ENOENT. */
int bwrap_find(char *out, size_t size, char *why, size_t why_size);

/* --- self.c --------------------------------------------------------------------------------- */

/*
 * Confines the calling thread to @plan, irreversibly, in the only order that works: namespaces
 * while capabilities remain (plan->harden), the Landlock domain, every capability gone and the
 * filter last. Fills *@ret_achieved (HARDEN_*) and *@ret_partial (an older Landlock ABI). On
 * failure returns -errno with the launcher's line in @msg. Allocates nothing: runs in vfork'ed
 * children and in `landlock-run`.
 *
 * With SECCOMP_METADATA_NOTIFY in the plan's filter, the listener is sent over @meta_sock to the
 * supervisor (HARDEN_META_SUPERVISED); with @meta_sock -1, or where the kernel gives no listener,
 * the metadata calls are refused instead (HARDEN_META_REFUSED): never let through.
 */
int confine_self(const confine_plan *plan, int meta_sock, unsigned *ret_achieved, bool *ret_partial,
		 char *msg, size_t size);

/*
 * In a child whose namespaces @achieved (HARDEN_*) should hold a network namespace: fails
 * without one, brings its loopback up and, with @proxy_port, sends the proxy's listener over
 * @sock. -errno with the reason in @msg. No allocation.
 */
int confine_network(unsigned achieved, uint16_t proxy_port, int sock, char *msg, size_t size);

/*
 * Sends @fd over the unix socket @sock (SCM_RIGHTS, with one byte): 0 or -errno. Receives one so
 * sent: the descriptor (close-on-exec), or -1 when none came (@flags: MSG_DONTWAIT, 0). No
 * allocation: the child side runs vfork'ed.
 */
int fd_send(int sock, int fd);
int fd_receive(int sock, int flags);

/* Every descriptor from @from up becomes close-on-exec (close_range, else one by one). */
void confine_cloexec_from(int from);

/* --- spawn.c -------------------------------------------------------------------------------- */

/* How confined_spawn() treats the child beyond dsb_spawn_options. */
#define SPAWN_DIE_WITH_PARENT (1u << 0) /* SIGKILL when the spawning thread dies */

/*
 * dsb_confined_spawn() that also reports, in *@ret_achieved (may be NULL), the HARDEN_* bits
 * the child achieved before exec, and hands the child's metadata listener to *@ret_meta_fd
 * (-1 when none): the caller supervises it with meta_handle() until it closes it. With
 * @ret_meta_fd NULL the caller cannot supervise, and the child refuses the metadata calls.
 * A plan with a network policy also needs a supervisor, and with a proxy port the proxy's
 * listener goes to *@ret_proxy_fd (inside the command's network namespace; the caller serves
 * it with net_proxy): without them the call is SANDBOX_UNAVAILABLE.
 */
int confined_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts,
		   int *ret_meta_fd, int *ret_proxy_fd, unsigned flags, pid_t *ret_pid,
		   unsigned *ret_achieved, dsb_error *reterr);

/* --- spawner.c ------------------------------------------------------------------------------ */

/*
 * Forks the spawner, which forks every later monitor of this process (tree.c) instead of this
 * process. Only while this process is small and single-threaded: a server at its start. 0, or
 * -errno (monitors are then forked here, as without it). Process-wide; idempotent.
 */
int spawner_start(void);

/* Ends the spawner (its monitors run on until their trees are gone). */
void spawner_stop(void);

/*
 * Asks the spawner for a monitor of @c (tree_monitor_run() with these arguments; the
 * descriptors are passed, the caller keeps its own). 0 when sent; -ENOTCONN with no spawner,
 * -errno when it is gone (then none is asked again).
 */
int spawner_request(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *o, int status_w,
		    int ctl_r);

/* --- tree.c --------------------------------------------------------------------------------- */

/* The processes of one call: the command (the leader) and whatever it starts. */
typedef struct proc_tree {
	pid_t leader;
	pid_t monitor; /* the monitor process, -1 the spawner's, 0 when this process reaps (or
			  nobody must) */
	int event_fd;  /* polls readable when the leader may have ended; -1: poll tree_check() */
	int ctl_fd;    /* to the monitor: closed means "kill what is left" */
	bool reaping;  /* this process is the call's subreaper */
	bool was_subreaper; /* it was one before the call: leave it so */
	bool ended;
	int status; /* the leader's wait status, once ended */
	unsigned achieved;
	int meta_fd;		  /* the metadata listener this process supervises, or -1 */
	meta_supervisor meta;	  /* its supervisor, over the plan's roots */
	meta_worker *meta_worker; /* the thread answering them from the first call on */
	unsigned meta_refused;	  /* refusals a monitor reported (tree_meta_refused()) */
	struct net_proxy *proxy;  /* the allow-list's proxy this process serves, or NULL */
	unsigned net_refused;	  /* network refusals a monitor reported */
	char *net_refused_hosts;  /* and what they named, one a line (NULL: none) */
} proc_tree;

/*
 * Spawns @c like confined_spawn(). With @reap, no process the command starts may outlive the
 * call: this process becomes a subreaper when nothing else can become its child meanwhile,
 * else a monitor process does (bwrap needs neither: its PID namespace ends them). Release with
 * tree_done(), always.
 */
int tree_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts, bool reap,
	       proc_tree *t, dsb_error *reterr);

/*
 * Call it with what polling t->meta_fd returned. Readable: a worker thread takes the listener
 * and answers this and every later metadata call of @t's commands (performed beneath the
 * plan's roots, refused elsewhere), so t->meta_fd is -1 afterwards; without a thread, it
 * answers this one call. Hung up (no process of the run left to call): it is closed.
 */
void tree_supervise(proc_tree *t, short revents);

/* The metadata changes refused outside the roots so far, in @t's run. */
unsigned tree_meta_refused(const proc_tree *t);

/*
 * The network calls refused so far in @t's run (*@ret_count: by the proxy and the supervisor)
 * and what they named, each once (*@ret_named, NULL-terminated, strv_free(); NULL when none):
 * hosts the proxy refused, then addresses ("192.0.2.1:443", a socket's path). -ENOMEM.
 */
int tree_net_refused(proc_tree *t, unsigned *ret_count, char ***ret_named);

/* Whether this process has one thread (/proc/self/stat). */
bool tree_single_threaded(void);

/*
 * The monitor (in a child of this process or of the spawner): keeps only @status_w, @ctl_r
 * and @o's descriptors, spawns @c, reports its start and end on @status_w, reaps orphans, and
 * kills what is left when @ctl_r ends.
 */
_Noreturn void tree_monitor_run(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *o,
				int status_w, int ctl_r);

/* 1 with the leader's wait status once it has ended (reaping ended orphans meanwhile), 0 while
 * it runs, -errno. */
int tree_check(proc_tree *t, int *ret_status);

/* Signals the leader's process group (else the leader) while the leader runs. */
void tree_signal(const proc_tree *t, int sig);

/* Kills every process left (with @reap), reaps them and the leader, releases @t. */
void tree_done(proc_tree *t);

/*
 * Waits for @pid up to @timeout_ms (0: forever); kills and reaps it on timeout. Returns 0 with
 * the wait status, -ETIMEDOUT, or -errno.
 */
int spawn_wait(pid_t pid, uint64_t timeout_ms, int *ret_status);

#endif
