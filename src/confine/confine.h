/* SPDX-License-Identifier: MIT */
/*
 * Internals of the confinement piece: one section per file, in the order of their floors. A
 * file uses only files on floors below its own (tests/house-check.py checks there is no circle);
 * docs/architecture.md draws the same map.
 *
 *   0 record.c    records declared once: encoded for another process, decoded, freed
 *   0 landlock.c  the kernel's Landlock interface: ABI negotiation, the rule set (§5.6)
 *   0 harden.c    namespaces and capabilities of a confined child
 *   0 seccomp.c   the system-call filter, generated at build time (seccomp.h, seccomp-gen.c)
 *   0 trust.c     which programs may run outside the sandbox to build it
 *   0 protect.c   protected paths as mounts
 *   0 notify.c    the supervisor's core: notifications in, answers out, routed by call
 *   0 reap.c      a process's children: listed, killed, reaped
 *   0 profile.c   DSH's bwrap profile (§5.5): a runner's contract, bwrap's base
 *   1 plan.c      what a backend hands the spawner: the plan and its steps, dsb_confined
 *   1 limits.c    what one call may take of the host: mechanisms, the plan's limits, cgroups
 *   1 steps.c     confine_self(): the plan's steps, in the only order that works
 *   1 handler-*.c what the supervisor answers: metadata calls, network calls (and the proxy)
 *   2 spawn.c     vfork, the steps in the child, exec; failures out of band
 *   2 backend-*.c one backend each, a backend_ops: bwrap, landlock, runner (runnerCommand)
 *   3 supervise.c one run's supervision: the handlers its plan needs, a worker thread
 *   4 chain.c     the provider: the chain over the backends, the verdict caches, confine()
 *   4 monitor.c   a call's monitor process, and what it reports
 *   5 spawner.c   the process that forks a threaded caller's monitors
 *   6 tree.c      no process a call starts outlives it (subreaper or monitor)
 *
 * Three things grow here, each in one file plus the build: a backend (backend-NAME.c and
 * meson.build's `backends`), a kind of supervised call (handler-NAME.c and `handlers`; the
 * filter that hands its calls over is seccomp-gen.c's), a field of the plan (one line of
 * CONFINE_PLAN_FIELDS, travelling to a monitor and freed with no more code).
 *
 * DSH's `landlock-run` launcher contract lives in src/launcher/: linked into the CLI, and built
 * on its own, statically, from landlock.c, harden.c, seccomp.c, steps.c, notify.c and
 * handler-metadata.c alone (meson.build's launcher_src): nothing there may call a function of
 * core/ (its inline helpers are fine), nor need more of the C library than static musl has.
 */
#ifndef DSB_CONFINE_CONFINE_H
#define DSB_CONFINE_CONFINE_H

#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dsb/confine.h>

#include "../core/core.h"
#include "seccomp.h"

/* --- record.c: records declared once ------------------------------------------------------ */

/*
 * A record that crosses a process boundary (a plan to the spawner, a monitor's report) is
 * declared once, as a list of its fields X(KIND, name). The struct is made from the list
 * (RECORD_MEMBERS), and so is a table of its fields (RECORD_FIELD, in the file that owns the
 * type), from which record.c encodes, decodes and frees any record: a new field is one line.
 *
 * Each KIND has a C type (FIELD_C_KIND), a coding (FIELD_K_KIND) and, for a nested record, its
 * type (FIELD_T_KIND). The scalar and string kinds:
 */
#define FIELD_C_BOOL bool
#define FIELD_C_U16  uint16_t
#define FIELD_C_U32  unsigned
#define FIELD_C_I32  int
#define FIELD_C_U64  uint64_t
#define FIELD_C_STR  char *  /* owned; NULL travels as NULL */
#define FIELD_C_STRV char ** /* owned, NULL-terminated; NULL travels as NULL */
#define FIELD_K_BOOL FIELD_BOOL
#define FIELD_K_U16  FIELD_U16
#define FIELD_K_U32  FIELD_U32
#define FIELD_K_I32  FIELD_I32
#define FIELD_K_U64  FIELD_U64
#define FIELD_K_STR  FIELD_STR
#define FIELD_K_STRV FIELD_STRV
#define FIELD_T_BOOL NULL
#define FIELD_T_U16  NULL
#define FIELD_T_U32  NULL
#define FIELD_T_I32  NULL
#define FIELD_T_U64  NULL
#define FIELD_T_STR  NULL
#define FIELD_T_STRV NULL

typedef enum field_kind {
	FIELD_BOOL,
	FIELD_U16,
	FIELD_U32,
	FIELD_I32, /* an int, or an enum (the same size: checked where the table is made) */
	FIELD_U64,
	FIELD_STR,
	FIELD_STRV,
	FIELD_RECORD, /* an embedded record of the field's type */
	FIELD_VEC,    /* a record_vec of records of the field's type */
	FIELD_PTR,    /* a pointer to a record of the field's type, or NULL */
} field_kind;

typedef struct record_type record_type;

typedef struct record_field {
	field_kind kind;
	size_t offset;
	size_t size;		 /* of the field itself */
	const record_type *type; /* FIELD_RECORD, FIELD_VEC, FIELD_PTR: the record's */
} record_field;

struct record_type {
	size_t size;
	const record_field *fields;
	size_t n_fields;
};

/* A FIELD_VEC: @n records at @v (the layout its users' own vector structs must have). */
typedef struct record_vec {
	void *v;
	size_t n;
} record_vec;

#define RECORD_MEMBER_(K, name) FIELD_C_##K name;
#define RECORD_MEMBERS(FIELDS)	FIELDS(RECORD_MEMBER_)
/* With RECORD defined as the struct's type: one entry of its table. */
#define RECORD_FIELD(K, name) \
	{FIELD_K_##K, offsetof(RECORD, name), sizeof(((RECORD *)0)->name), FIELD_T_##K},
#define RECORD_TYPE(table)                                 \
	{                                                  \
		sizeof(RECORD), (table), ELEMENTSOF(table) \
	}

/*
 * Appends the encoding of @rec (of type @t) to @sb: -ENOMEM, -E2BIG (a string or vector
 * beyond what the encoding counts).
 */
int record_encode(strbuf *sb, const record_type *t, const void *rec);

/*
 * Fills the zeroed @rec from the @len bytes at @buf, which must be exactly one encoding of
 * @t: every length is checked against what is left, and a string with a NUL inside is
 * refused. -EBADMSG (or -ENOMEM); release @rec with record_free() either way.
 */
int record_decode(const record_type *t, const void *buf, size_t len, void *rec);

/* Frees what @rec owns (strings, vectors, nested records), not @rec itself; zeroes it. */
void record_free(const record_type *t, void *rec);

/* The largest framed record record_receive() takes. */
#define RECORD_FRAME_MAX ((size_t)64 << 20)

/*
 * One record on a stream (a pipe, a socket): its length, then its encoding, in one write.
 * No SIGPIPE: a reader gone is -EPIPE. record_receive() fills the zeroed @rec; -EPIPE at the
 * end of the stream before a record, -EBADMSG for a malformed one, -errno.
 */
int record_send(int fd, const record_type *t, const void *rec);
int record_receive(int fd, const record_type *t, void *rec);

/* --- landlock.c ------------------------------------------------------------------------------ */

/* Filesystem rights (dsh-compat §5.6 table; the kernel's LANDLOCK_ACCESS_FS_*). */
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
#define LANDLOCK_PLAN_FIELDS(X)                                                               \
	X(STRV, ro)	     /* EXECUTE | READ_FILE | READ_DIR */                             \
	X(STRV, rw)	     /* every handled right (masked for non-directories) */           \
	X(STRV, rw_in_place) /* as rw, but nothing linked or moved in or out */               \
	X(U64, scope)	     /* LL_SCOPE_* wanted; applied only as far as the ABI has them */ \
	X(I32, abi_max) /* 0, or the highest ABI to use (landlockAbiMax: an explicit degrade) */

typedef struct landlock_plan {
	RECORD_MEMBERS(LANDLOCK_PLAN_FIELDS)
} landlock_plan;

/* What DSH's launcher prints on stderr before exec when enforcement is partial (dsh-compat §5.6).
 */
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

/*
 * What a backend's probe runs inside the sandbox: a program that exits 0 found by no PATH
 * lookup (DSH probes with `true`, which a caller's PATH may not reach, and then a typo'd PATH
 * would read as "no sandbox"). /bin/sh is the one absolute path every POSIX system has
 * (system(3) and popen(3) rely on it; merged-/usr systems keep it as a link), and `:` is its
 * builtin: nothing else is looked up. Not our own binary through /proc/self/exe: inside bwrap
 * that names bwrap, and ours may lie where the sandbox does not show it.
 */
#define PROBE_COMMAND "/bin/sh", "-c", ":"

/* The filter a process that confines itself gets: no new namespaces, and, without a PID
 * namespace, no reconfiguring processes outside by their pid. */
#define LANDLOCK_FILTER (SECCOMP_DENY_NAMESPACES | SECCOMP_DENY_PROCESS_TARGETS)

/* --- harden.c -------------------------------------------------------------------------------- */

/* What a child achieved, reported by harden_*() and the steps (a bit set). */
#define HARDEN_CAPS		(1u << 0) /* effective, permitted, inheritable and ambient sets empty */
#define HARDEN_BOUNDING		(1u << 1)  /* the bounding set empty too */
#define HARDEN_FILTER		(1u << 2)  /* the seccomp filter installed */
#define HARDEN_IPC_NS		(1u << 3)  /* a new IPC namespace */
#define HARDEN_UTS_NS		(1u << 4)  /* a new UTS namespace */
#define HARDEN_USER_NS		(1u << 5)  /* a user namespace (what made the two above possible) */
#define HARDEN_MNT_NS		(1u << 6)  /* a mount namespace (for protected paths) */
#define HARDEN_META_SUPERVISED	(1u << 7)  /* metadata calls go to the supervisor */
#define HARDEN_META_REFUSED	(1u << 8)  /* no supervisor could be had: they fail with EPERM */
#define HARDEN_NET_NS		(1u << 9)  /* a network namespace with a loopback alone */
#define HARDEN_NET_SUPERVISED	(1u << 10) /* connect and the sends go to the supervisor */
#define HARDEN_PID_NS		(1u << 11) /* a PID namespace of the command's, with an init of ours */
#define HARDEN_FILES_SUPERVISED (1u << 12) /* file calls to the supervisor (evidence) */
#define HARDEN_FAILED		(1u << 31)

/*
 * New IPC and UTS namespaces for the calling thread where the kernel allows them: directly when
 * privileged, else inside a new user namespace that maps the caller's uid and gid to
 * themselves; with @mounts a mount namespace too where possible (HARDEN_MNT_NS says whether),
 * with @net a network namespace where possible (HARDEN_NET_NS). Returns the HARDEN_*_NS bits
 * made (0: none; the caller falls back to the filter), or HARDEN_FAILED when a user namespace
 * was made but could not be mapped. No allocation.
 */
unsigned harden_namespaces(bool mounts, bool net);

/*
 * A network namespace alone, in a user namespace of its own where the caller is not
 * privileged: for a child that execs bwrap, which then stays in it. No allocation.
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

/*
 * A new user namespace (with @flags: more namespaces at once) that maps the caller's uid and gid
 * to themselves. HARDEN_USER_NS, 0 when none could be made, HARDEN_FAILED when one was made
 * but not mapped. No allocation.
 */
unsigned harden_user_namespace(int flags);

/* Whether the caller holds CAP_SYS_ADMIN (may make a mount namespace without a user one). */
bool harden_can_mount(void);

/* --- trust.c -----------------------------------------------------------------------------------
 */

/*
 * Finds the program @name (absolute, or searched on PATH) that is safe to run outside the
 * sandbox: see trust.c. Fills @out with its canonical path. -ENOENT: there is none; -EPERM:
 * there are only untrusted ones; both with the reason in @why.
 */
int trusted_program(const char *name, char *out, size_t size, char *why, size_t why_size);

/* --- limits: what one call may take of the host (a record of the plan) ---------------------- */

/* What the child's first step (STEP_LIMITS) does, and what the call's cgroup holds. */
#define CONFINE_LIMITS_FIELDS(X)                                                                \
	X(U64, processes)   /* processes and threads of the call's tree at once; 0: none */     \
	X(U64, memory)	    /* bytes of the tree (its cgroup's); 0: none */                     \
	X(U64, cpu_seconds) /* RLIMIT_CPU of each process; 0: none */                           \
	X(U64, file_bytes)  /* RLIMIT_FSIZE; 0: none */                                         \
	X(I32, nice)	    /* added to the command's niceness */                               \
	X(BOOL, nproc)	    /* processes as RLIMIT_NPROC, not as a cgroup's pids.max */         \
	X(I32, cgroup)	    /* the version of the call's cgroups (0: none), made beneath ... */ \
	X(STR, pids_dir)    /* ... these, this process's own (NULL: not that controller) */     \
	X(STR, memory_dir)                                                                      \
	X(BOOL, cgroup_required) /* a limit set explicitly is held by them: none, no run */     \
	X(BOOL, own_userns)	 /* a user namespace of the sandbox's own, with ... */          \
	X(STRV, budgets)	 /* ... these per-user budgets: "max_inotify_instances=32" */

typedef struct confine_limits {
	RECORD_MEMBERS(CONFINE_LIMITS_FIELDS)
} confine_limits;

/* --- plan.c: what a backend hands the spawner ------------------------------------------------ */

/*
 * What a confined child does to itself before exec, in the only order that works: namespaces
 * while every capability is still held (a user namespace maps us and makes the others
 * possible); in a new network namespace, its loopback and the proxy's listener; protected
 * paths mounted before Landlock forbids mounting; a runner's listener after them (its rules
 * may send file calls of ours to a supervisor that cannot answer before we exec); the Landlock
 * domain before the capabilities go; the system-call filter
 * last, since it refuses what the steps before it use. A plan names the steps it takes
 * (STEP() bits); steps.c runs them in this order and no other.
 */
typedef enum confine_step {
	STEP_LIMITS,	      /* first: the call's cgroup joined, niceness, own user namespace,
			       * rlimits (after the namespace, which keeps its creator's) */
	STEP_NAMESPACES,      /* user where needed, IPC, UTS; mount_ns and net_ns where possible */
	STEP_PID_NAMESPACE,   /* the command in a PID namespace whose init is ours (spawned
			       * under a subreaper only; where no cgroup holds the call) */
	STEP_NET_NAMESPACE,   /* a network namespace alone (a runner then stays in it) */
	STEP_LOOPBACK,	      /* needs the network namespace: lo up, the proxy's listener sent */
	STEP_MOUNT_NAMESPACE, /* a mount namespace alone (root: a runner's protected paths) */
	STEP_MOUNTS,	      /* the protected paths mounted, in a mount namespace made before */
	STEP_LISTENER,	      /* a runner's supervised rules alone (runner_flags), their listener
			       * sent (the runner installs the main filter, with no listener for
			       * us); after every step that makes a file call of its own */
	STEP_LANDLOCK,	      /* the Landlock domain */
	STEP_DROP_CAPS,	      /* every capability */
	STEP_FILTER,	      /* the system-call filter; its listener sent to a supervisor */
	_STEP_MAX,
} confine_step;

#define STEP(s) (1u << (s))

/* A process that confines itself (the Landlock backend, its probe, landlock-run). */
#define STEPS_SELF \
	(STEP(STEP_NAMESPACES) | STEP(STEP_LANDLOCK) | STEP(STEP_DROP_CAPS) | STEP(STEP_FILTER))

typedef enum protect_op {
	PROTECT_PIN,	   /* bound onto itself, writable: cannot be renamed or replaced */
	PROTECT_READ_ONLY, /* bound onto itself, read-only */
	PROTECT_HIDE_DIR,  /* an empty, mode 000, read-only tmpfs over it */
	PROTECT_HIDE_FILE, /* /dev/null over it */
} protect_op;

#define FIELD_C_PROTECT_OP   protect_op
#define FIELD_K_PROTECT_OP   FIELD_I32
#define FIELD_T_PROTECT_OP   NULL
#define FIELD_C_PROTECT_KIND dsb_protect_kind
#define FIELD_K_PROTECT_KIND FIELD_I32
#define FIELD_T_PROTECT_KIND NULL

#define PROTECT_MOUNT_FIELDS(X)                                                                  \
	X(PROTECT_OP, op)                                                                        \
	X(STR, path)   /* as the command sees it */                                              \
	X(STR, source) /* bwrap: the host's path where it differs (the private /tmp), or NULL */ \
	X(PROTECT_KIND, kind) /* of the protected path (pins: meaningless) */                    \
	X(BOOL, late)	      /* Landlock: mounted in the command's own /tmp, after it is made */

typedef struct protect_mount {
	RECORD_MEMBERS(PROTECT_MOUNT_FIELDS)
} protect_mount;

/* A record_vec of mounts: pins first, then the rest; parents first in each. */
typedef struct protect_ops {
	protect_mount *v;
	size_t n;
} protect_ops;

extern const record_type protect_mount_record, landlock_plan_record, confine_limits_record,
	confine_plan_record;

#define FIELD_C_MOUNTS	 protect_ops
#define FIELD_K_MOUNTS	 FIELD_VEC
#define FIELD_T_MOUNTS	 (&protect_mount_record)
#define FIELD_C_LIMITS	 confine_limits
#define FIELD_K_LIMITS	 FIELD_RECORD
#define FIELD_T_LIMITS	 (&confine_limits_record)
#define FIELD_C_LANDLOCK landlock_plan
#define FIELD_K_LANDLOCK FIELD_RECORD
#define FIELD_T_LANDLOCK (&landlock_plan_record)

/*
 * The plan: what the spawner does in the child beyond exec'ing c->argv (dsb_confined.plan),
 * and what the supervisor of the run is told.
 */
#define CONFINE_PLAN_FIELDS(X)                                                                     \
	X(U32, steps)	   /* STEP() bits */                                                       \
	X(BOOL, mount_ns)  /* STEP_NAMESPACES: a mount namespace too, where one can be made */     \
	X(BOOL, net_ns)	   /* STEP_NAMESPACES: a network namespace too, where one can be made */   \
	X(U16, proxy_port) /* STEP_LOOPBACK: the proxy's listener on 127.0.0.1:PORT, sent */       \
	X(MOUNTS, mounts)  /* STEP_MOUNTS */                                                       \
	/* STEP_MOUNTS, first: /tmp is the command's own, tmp_source bound there, else a tmpfs */  \
	X(BOOL, tmp_own)                                                                           \
	X(STR, tmp_source)                                                                         \
	X(U64, tmp_bytes) /* the tmpfs's size, 0: the kernel's */                                  \
	X(STRV, tmp_keep) /* writable roots beneath the host's /tmp, carried over the new one */   \
	/* STEP_MOUNTS: they hold a policy-bearing path, so no mount namespace is no run. */       \
	X(BOOL, mounts_required)                                                                   \
	X(LANDLOCK, landlock) /* STEP_LANDLOCK */                                                  \
	X(U32, filter_flags)  /* STEP_FILTER's variant, or the runner's: SECCOMP_* */              \
	X(U32, runner_flags)  /* STEP_LISTENER's program: SECCOMP_RUNNER_FLAGS */                  \
	X(I32, filter_fd)     /* >= 0: the runner reads the filter from this descriptor */         \
	X(BOOL, wraps)	      /* argv[0] is a runner: its failed exec is the sandbox's */          \
	X(BOOL, contained)    /* the runner ends every process when the command ends */            \
	/* The supervisor's roots, canonical: where metadata changes land (the writable grants but \
	 * /dev/null), where pathname sockets may be reached (NULL: nowhere) ... */                \
	X(STRV, meta_roots)                                                                        \
	/* ... and of those, the ones whose own directory stays as it is (the host's /tmp). */     \
	X(STRV, meta_fixed)                                                                        \
	/* Of the roots, where the command's own pathname sockets lie when not in all of them      \
	 * (Landlock: never the host's /tmp, every user's); NULL: all of them. */                  \
	X(STRV, net_roots)                                                                         \
	X(STRV, net_allow) /* the allow-list's proxy: its rules */                                 \
	X(STRV, net_deny)                                                                          \
	X(STRV, net_hosts)                                                                         \
	X(STRV, net_private)                                                                       \
	/* Evidence: the protected read-only paths and the hidden ones (denyRead) as the command   \
	 * sees them, where a runner's binds make them rather than mounts (which list their own)   \
	 */                                                                                        \
	X(STRV, ro_paths)                                                                          \
	X(STRV, hidden_paths)                                                                      \
	X(LIMITS, limits) /* STEP_LIMITS */

typedef struct confine_plan {
	RECORD_MEMBERS(CONFINE_PLAN_FIELDS)
} confine_plan;

/* A new plan for @c, zeroed but for no filter descriptor (-1). -ENOMEM. */
int plan_new(dsb_confined *c, confine_plan **ret);

/* The plan of @c, or NULL (danger-full-access, or a caller's own dsb_confined). */
const confine_plan *confined_plan(const dsb_confined *c);

/*
 * Whether the calls of @flag (SECCOMP_NET_NOTIFY, SECCOMP_METADATA_NOTIFY, SECCOMP_FILES_NOTIFY)
 * go to a supervisor: through the command's filter, or through a runner's listener (which
 * only looks at metadata and file calls: nothing of ours enforces there).
 */
static inline bool plan_supervises(const confine_plan *plan, unsigned flag)
{
	return plan && (((plan->steps & STEP(STEP_FILTER)) && (plan->filter_flags & flag)) ||
			((plan->steps & STEP(STEP_LISTENER)) && (plan->runner_flags & flag)));
}

/* Whether @plan (may be NULL) restricts the network: connect and sends supervised. */
bool plan_net_restricted(const confine_plan *plan);

/* Whether the command has a network namespace of its own (its loopback is brought up). */
bool plan_own_network(const confine_plan *plan);

/* What the child of @plan sends its supervisor before exec: the proxy's listener, then its
 * listener for the supervised calls (in that order). */
bool plan_sends_proxy(const confine_plan *plan);
bool plan_sends_listener(const confine_plan *plan);

/* Sets the allow-list's proxy of @plan: its port and its rules, @p's (copied). -ENOMEM. */
int plan_allowlist(confine_plan *plan, const dsb_provider *p);

/* A new NULL-terminated copy of @words; NULL on OOM. */
char **strv_of(const char *const *words);

/* Appends "--" and @argv to *@io. -ENOMEM. */
int push_command(char ***io, char *const *argv);

/* Adds a runner-failure rule to @c: any non-zero exit whose stderr holds one of @fatal. */
int confined_add_rule(dsb_confined *c, const char *const *fatal);

/*
 * Where a call's decisions are told, for `explain` and a front end's debug output: each as one
 * line for a person, and, when @json is set, as members of the explanation's object. The lines
 * and the members come from the same place, so that neither can tell another story.
 */
typedef struct explain_sink {
	void (*line)(void *userdata, const char *line); /* NULL: no lines */
	void *userdata;
	jw *json; /* NULL: no JSON */
} explain_sink;

/* Tells @x's line callback one line (printf's @fmt; no newline). Nothing without one. */
void explain_line(const explain_sink *x, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Member @key of @x's JSON (none: nothing), an object of two strings: {@k1: @v1, @k2: @v2}. */
void explain_pair(const explain_sink *x, const char *key, const char *k1, const char *v1,
		  const char *k2, const char *v2);

/* Appends @words to @sb as a shell would read them back: each quoted where it needs it. */
void explain_words(strbuf *sb, char *const *words);

/* --- protect.c: protected paths as mounts ------------------------------------------------------
 */

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
 * must stay absent (dsb_protected.absent) if the command made it, a directory with all it
 * holds. Best effort; for each start-up file it found, a line "[sandbox: PATH was removed after
 * the call: it is protected (REASON)]" goes to @notes (NULL: none). -ENOMEM.
 */
int protect_remove_absent(const dsb_exec_policy *policy, strbuf *notes);

/* Appends @o as bwrap arguments. -ENOMEM. */
int protect_bwrap_args(const protect_ops *o, char ***io_argv);

/* --- steps.c ------------------------------------------------------------------------------------
 */

/*
 * For what runs in a PID namespace's first process, on a stack that AddressSanitizer did not
 * make: its calls of functions that never return would warn on the command's stderr.
 */
#define NO_ASAN_STACK __attribute__((no_sanitize("address")))

/* How confine_self() goes on in a PID namespace of the command's own (STEP_PID_NAMESPACE). */
typedef struct confine_pid_fork {
	/* In the namespace's first process: before its steps, then after them with their
	 * outcome (0, or -errno with the line in the message buffer). @then does not return. */
	void (*enter)(void *arg);
	void (*then)(void *arg, int r);
	void *arg;
	pid_t init;   /* set: the namespace's init */
	pid_t leader; /* set: its first process, which went on with @then */
} confine_pid_fork;

/*
 * Confines the calling thread to @plan, irreversibly: its steps, in confine_step order. Fills
 * *@ret_achieved (HARDEN_*) and *@ret_partial (an older Landlock ABI). On failure returns
 * -errno with the launcher's line in @msg. Allocates nothing: runs in vfork'ed children and
 * in `landlock-run`.
 *
 * What the steps hand the supervisor goes over @sock: the proxy's listener (STEP_LOOPBACK with
 * a proxy port), then the supervised calls' listener. With @sock -1, or where the kernel gives
 * no listener, the filter refuses the metadata calls instead (HARDEN_META_REFUSED): never
 * lets them through. @cgroup_procs (NULL: none) are the call's cgroups' cgroup.procs, two or
 * -1 (call_cgroup.procs), which STEP_LIMITS joins.
 *
 * STEP_PID_NAMESPACE is taken only with @fork (NULL: a caller that reaps nothing). Its init
 * and the namespace's first process are children of our parent; the first process calls
 * fork->enter, takes the steps that are left and goes on with fork->then, while we wait
 * (vfork-like) until it has exec'd or died, and return 1. Whoever reaps the call SIGKILLs the
 * init at the end, which ends every process in the namespace at once.
 */
int confine_self(const confine_plan *plan, int sock, const int *cgroup_procs,
		 confine_pid_fork *fork, unsigned *ret_achieved, bool *ret_partial, char *msg,
		 size_t size);

/*
 * Sends @fd over the unix socket @sock (SCM_RIGHTS, with one byte): 0 or -errno. Receives one so
 * sent: the descriptor (close-on-exec), or -1 when none came (@flags: MSG_DONTWAIT, 0). No
 * allocation: the child side runs vfork'ed.
 */
int fd_send(int sock, int fd);
int fd_receive(int sock, int flags);

/*
 * Installs @prog with a listener (seccomp_install_listener()) and sends the listener over
 * @sock, ours closed: 0, the install's -errno (EBUSY, EINVAL, ENOSYS: no listener here), or
 * -EPIPE when it could not be sent. @covers_sendmsg: @prog hands sendmsg() to the supervisor,
 * so the send is made by a helper the filter does not cover.
 */
int listener_install_send(const seccomp_program *prog, int sock, bool covers_sendmsg);

/* Every descriptor from @from up becomes close-on-exec (close_range, else one by one). */
void confine_cloexec_from(int from);

/* --- spawn.c ------------------------------------------------------------------------------------
 */

/* Why a spawn (or, for a runner that cannot be found, the confinement) failed. */
typedef enum confine_failure_kind {
	CONFINE_SETUP_FAILED = 1, /* the spawn itself: streams, session, working directory */
	CONFINE_SANDBOX_FAILED,	  /* the sandbox could not be set up (a runner failure) */
	CONFINE_RUNNER_SPAWN,	  /* the runner program could not be started (DSH's spawn error) */
	CONFINE_EXEC_FAILED,	  /* the command's own exec, the confinement in place (126/127) */
} confine_failure_kind;

typedef struct confine_failure {
	int kind; /* confine_failure_kind, 0 for none */
	int sys_errno;
	char detail[8192]; /* DSH's runner-failure detail, Node's spawn error, ... */
} confine_failure;

/* No failure (yet): the header alone, since the detail is long and written before it is read. */
static inline void failure_clear(confine_failure *f)
{
	f->kind = 0;
	f->sys_errno = 0;
	f->detail[0] = '\0';
}

/* How confined_spawn() treats the child beyond dsb_spawn_options. */
#define SPAWN_DIE_WITH_PARENT (1u << 0) /* SIGKILL when the spawning thread dies */
/* A command of its own process group (confined, no new session) takes the caller's controlling
 * terminal as its foreground before exec (exec/term.c). */
#define SPAWN_FOREGROUND (1u << 1)

/* What the child of a plan hands its supervisor before exec (plan_sends_*()). */
typedef struct spawn_handoff {
	int listener; /* the supervised calls' listener, or -1 (none: the child refuses them) */
	int proxy;    /* the proxy's listener in the command's network namespace, or -1 */
	unsigned achieved; /* the HARDEN_* bits the child achieved before exec */
	pid_t init;	   /* our child, the init of the command's PID namespace, or 0 */
} spawn_handoff;

#define SPAWN_HANDOFF_INIT                  \
	{                                   \
		.listener = -1, .proxy = -1 \
	}

/*
 * dsb_confined_spawn() that hands the caller, in *@ret_handoff (NULL: it cannot supervise),
 * what the child sent for the supervisor; the caller owns those descriptors. A plan whose
 * network policy needs a supervisor is SANDBOX_UNAVAILABLE without one. The child joins
 * @cgroup_procs (NULL: none; see confine_self()). On failure *@ret_failure (may be NULL) says
 * why, as the error does.
 */
int confined_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts,
		   unsigned flags, const int *cgroup_procs, pid_t *ret_pid,
		   spawn_handoff *ret_handoff, confine_failure *ret_failure, dsb_error *reterr);

/*
 * Waits for @pid up to @timeout_ms (0: forever); kills and reaps it on timeout. Returns 0 with
 * the wait status, -ETIMEDOUT, or -errno.
 */
int spawn_wait(pid_t pid, uint64_t timeout_ms, int *ret_status);

/*
 * A backend's probe: runs @c within @timeout_ms, stdin and stdout on /dev/null and stderr
 * kept: 0 when it exited 0, else -1 with why not in @reason (the runner's failure detail, or
 * its first stderr line). *@ret_achieved (may be NULL) gets the child's HARDEN_* bits.
 */
int spawn_probe(const dsb_confined *c, uint64_t timeout_ms, unsigned *ret_achieved, char *reason,
		size_t size);

/* --- notify.c: the supervisor's core ------------------------------------------------------------
 */

/*
 * The supervisor (docs/design/metadata.md) answers the calls a confined command's filter hands
 * over (SECCOMP_RET_USER_NOTIF): each is routed by its system call to the handler that
 * registered it, which answers it from one reading of the caller (its memory and /proc/TID
 * read once, its objects opened once) and never lets it through. A call no handler takes is
 * refused with EPERM.
 */
typedef struct supervisor supervisor;

/* One notification being answered. */
typedef struct sup_call {
	supervisor *sup;
	int listener;
	const struct seccomp_notif *n;
	bool gone; /* the caller left before the answer (sup_call_valid() said so) */
} sup_call;

/* What a handler's answer() returns besides -errno. */
#define SUP_ANSWERED 0 /* the answer is in the response */
#define SUP_REFUSED  1 /* refused: a denial the model is told of (counted before the answer) */
#define SUP_PASS     2 /* not this handler's after all: the next handler of the call is asked */

/* The most handlers one supervisor takes, and the most calls they register in all. */
#define SUP_HANDLERS_MAX 4
#define SUP_ROUTES_MAX	 64

/* What a run's supervisor refused, for the classification (exec) and its report (monitor). */
#define CONFINE_REFUSALS_FIELDS(X)                                                            \
	X(U32, metadata)   /* metadata changes refused outside the roots */                   \
	X(U32, network)	   /* network calls refused (by the proxy and the supervisor) */      \
	X(U32, limits_hit) /* LIMIT_HIT_*: the limits the call's tree reached (its cgroup) */ \
	/* What the network refusals named, each once: the hosts the proxy refused, then the  \
	 * addresses and paths the supervisor refused (NULL: none). */                        \
	X(STRV, named)                                                                        \
	/* 1: this run's file operations were supervised (the evidence is complete); 0: none  \
	 * could be had (docs/design/evidence.md) */                                          \
	X(U32, evidence)                                                                      \
	/* file operations refused, all of them (writes outside the roots or on protected     \
	 * paths, reads of hidden paths, metadata changes) */                                 \
	X(U32, files)                                                                         \
	/* the first FILES_NAMED_MAX distinct refused paths (distinct by resolved path), in   \
	 * order, each "OP\tERRNO\tPATH\tNAMED\tWHY" (NULL: none) */                          \
	X(STRV, files_named)

typedef struct confine_refusals {
	RECORD_MEMBERS(CONFINE_REFUSALS_FIELDS)
} confine_refusals;

extern const record_type confine_refusals_record;

#define FIELD_C_REFUSALS confine_refusals
#define FIELD_K_REFUSALS FIELD_RECORD
#define FIELD_T_REFUSALS (&confine_refusals_record)

typedef struct sup_handler {
	const char *name;
	const int *calls; /* the system calls it answers (native numbers), -1 at the end */
	/*
	 * Answers @c into @resp, whose error is -EPERM until it says otherwise. Reads what it
	 * needs of the caller, checks sup_call_valid(), then acts.
	 */
	int (*answer)(void *state, sup_call *c, struct seccomp_notif_resp *resp);
	void (*start)(void *state); /* the run's first call has come (NULL: nothing to do) */
	/* Whether it only looks (evidence: every call it does not refuse goes on), so that a call
	 * it cannot be asked (no view of the caller's) goes on too (NULL: it enforces). */
	bool (*looks_only)(const void *state);
	/* Adds what it refused so far to @io (NULL: it keeps no count). -ENOMEM. */
	int (*refusals)(void *state, confine_refusals *io);
	void (*free)(void *state);
	/* For a run (supervise.c): whether @plan's calls come to it, and its state for them,
	 * taking what it needs of @in (the proxy's listener). -ENOMEM. */
	bool (*wanted)(const confine_plan *plan);
	int (*new)(const confine_plan *plan, spawn_handoff *in, void **ret_state);
} sup_handler;

typedef struct sup_route {
	int nr;
	unsigned slot;
} sup_route;

struct supervisor {
	/* The run's roots (borrowed, canonical, NULL-terminated; NULL: none), of which @fixed
	 * keep their own directory as it is. */
	char *const *roots;
	char *const *fixed;
	/*
	 * The calls come from below a runner (bwrap): its own setup's first, in the host's root
	 * and then in its own, then the command's. Each call's view is the caller's root of the
	 * moment, and a call of another ABI goes on (nothing of ours enforces there).
	 */
	bool runner;
	/* Opened at the first call and kept for the run (below a runner, while the callers'
	 * root stays the same): the callers' root, and each root as they see it (-1 where it
	 * could not be opened). */
	bool opened;
	int caller_root;
	uint64_t view[3]; /* below a runner: the callers' mount namespace, root's device, inode */
	int *root_fds;
	struct stat *fixed_ids; /* the fixed roots' own inodes */
	size_t n_fixed;
	bool started; /* the first call has come */
	struct {
		const sup_handler *h;
		void *state;
	} slots[SUP_HANDLERS_MAX];
	size_t n_slots;
	sup_route routes[SUP_ROUTES_MAX];
	size_t n_routes;
	/* The evidence of file refusals every handler adds to (sup_record()), under its lock. */
	pthread_mutex_t ev_lock;
	unsigned ev_files;
	char **ev_named; /* FILES_NAMED_MAX at most, NULL-terminated (NULL: none yet) */
	size_t ev_n;
	unsigned ev_unseen; /* calls of a live caller let through with no view of its to look in */
};

/* The most distinct refused paths a run's evidence names (its count goes on). */
#define FILES_NAMED_MAX 16

/* Readies @s for a run whose roots are @roots, of which @fixed keep their own directory (both
 * borrowed, NULL-terminated; NULL: none). */
void supervisor_init(supervisor *s, char *const *roots, char *const *fixed);

/* Registers @h with its @state (taken: freed with @s, or here on failure). -ENOSPC, -EEXIST
 * for a call another handler has. */
int supervisor_add(supervisor *s, const sup_handler *h, void *state);

/* The state @h was registered with in @s, or NULL. */
void *supervisor_state(const supervisor *s, const sup_handler *h);

/*
 * Receives one notification from @listener and answers it. Blocks until one comes: call it
 * when @listener is readable. Returns 1 when it was refused (a denial), 0 for any other
 * answer, or -errno when the listener itself failed (stop polling it). Runs each operation
 * with the calling thread's effective capabilities cleared.
 */
int supervisor_handle(supervisor *s, int listener);

/* Tells each handler the run's first call has come, once. */
void supervisor_start(supervisor *s);

/* Adds every handler's refusals to @io. -ENOMEM. */
int supervisor_refusals(supervisor *s, confine_refusals *io);

/* Frees the handlers' states and closes what @s opened. */
void supervisor_done(supervisor *s);

/*
 * Asks the kernel to hand each call of @listener's filter to the supervisor on the caller's own
 * CPU, and the answer back likewise (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6).
 */
void sup_listener_tune(int listener);

/*
 * Clears the calling thread's effective capabilities for good (its permitted ones stay), so
 * that each call runs as the caller without clearing them around it. Whether they are clear.
 */
bool sup_clear_caps(void);

/*
 * A thread that answers @listener's calls with @s (borrowed) until sup_worker_stop(), or until
 * no process of the run is left to call. It takes @listener once started (on failure the
 * caller keeps it and may answer inline with supervisor_handle()). 0 or -errno.
 */
typedef struct sup_worker sup_worker;
int sup_worker_start(sup_worker **ret, supervisor *s, int listener);

/* Ends the worker (its listener closed: later calls fail ENOSYS) and frees it; NULL: none. */
void sup_worker_stop(sup_worker *w);

/* What the handlers use: */

/* Whether the caller of @c still waits in its call (SECCOMP_IOCTL_NOTIF_ID_VALID): what was
 * read of /proc/TID and its memory was its own. Sets c->gone when not. */
bool sup_call_valid(sup_call *c);

/* Copies @len bytes at @addr of process @pid into @buf; -errno (-EFAULT when short). */
int sup_peek(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Copies @len bytes of @buf to @addr of process @pid (an output the call returns there, such
 * as sendmmsg()'s msg_len); -errno (-EFAULT when short). */
int sup_poke(pid_t pid, uint64_t addr, const void *buf, size_t len);

/* The NUL-terminated string at @addr of @pid into @buf (@size with its NUL): -ENAMETOOLONG
 * when it does not fit, -EFAULT when it cannot be read. */
int sup_peek_string(pid_t pid, uint64_t addr, char *buf, size_t size);

/* sup_open_*()'s answer for an object outside every root. */
#define SUP_OUTSIDE (-4096)

/*
 * The object @path names (relative to the caller's @dirfd, AT_FDCWD: its working directory),
 * resolved once in the caller's view (of thread @tid) and found beneath a root of @s. Returns
 * it O_PATH, SUP_OUTSIDE when it lies outside every root, or the caller's -errno.
 */
int sup_open_path(const supervisor *s, pid_t tid, int dirfd, const char *path, bool follow);

/* The object of the caller's descriptor @fd found beneath a root: O_PATH, SUP_OUTSIDE, or
 * -errno (EBADF: no such descriptor). */
int sup_open_fd(const supervisor *s, pid_t tid, int fd);

/*
 * The object @path names for the caller, resolved in its view as sup_open_path() resolves it,
 * whether or not it lies beneath a root: O_PATH, or the walk's -errno (-ELOOP for a descriptor
 * named through /proc, which is not resolved here). *@ret_inside: it lies beneath a root.
 */
int sup_resolve(const supervisor *s, pid_t tid, int dirfd, const char *path, bool follow,
		bool *ret_inside);

/*
 * The absolute spelling of @path for the caller (thread @tid; relative to its @dirfd, AT_FDCWD:
 * its working directory), in its view, unresolved, into @full (@size, 4096 at least); -errno.
 */
int sup_absolute(pid_t tid, int dirfd, const char *path, char *full, size_t size);

/* The path of our descriptor @fd (/proc/self/fd/N): 0, or -errno (-ENOENT: no path). */
int sup_fd_path(int fd, char *buf, size_t size);

/* Whether the canonical @path is, or lies beneath, the canonical @dir. */
bool sup_beneath(const char *path, const char *dir);

/* Whether @obj's mount is read-only, in *@ret_ro; false when that cannot be told. */
bool sup_mount_readonly(int obj, bool *ret_ro);

/*
 * Records a refused file operation in @s's evidence (docs/design/evidence.md): @calls more
 * refused calls counted (0: another name of a call already counted), and
 * its "OP\tERRNO\tPATH\tNAMED\tWHY" kept when @path is new and fewer than FILES_NAMED_MAX are.
 * @err is the errno answered (0: "-", the call succeeded but showed nothing). Control
 * characters in the paths become '?'. Safe from any thread.
 */
void sup_record(supervisor *s, unsigned calls, const char *op, int err, const char *path,
		const char *named, const char *why);

/* Whether @obj is the very directory of a root that keeps its own metadata. */
bool sup_is_fixed_root(const supervisor *s, int obj);

/* Our own copy of the caller's (thread @tid's) descriptor @fd; -errno. */
int sup_caller_fd(pid_t tid, int fd);

/* A pidfd of the process of thread @tid (its leader's), for sup_pidfd_getfd(); -errno. */
int sup_caller_pidfd(pid_t tid);

/* Our own copy of descriptor @fd of the process @pidfd names; -errno (EBADF: none). */
int sup_pidfd_getfd(int pidfd, int fd);

/* The thread-group leader of thread @tid, or -errno. */
pid_t sup_tgid(pid_t tid);

/* Runs @op(@obj, @arg) with this thread's effective capabilities cleared; what @op returns. */
int sup_as_caller(int (*op)(int obj, const void *arg), int obj, const void *arg);

/* The AUDIT_ARCH_* value of this build's own system calls, 0 when none is decoded. */
uint32_t sup_native_arch(void);

/* --- handler-metadata.c, handler-network.c -------------------------------------------------------
 */

/*
 * Metadata calls (chmod, chown, times, xattrs, inode flags; SECCOMP_METADATA_NOTIFY): performed
 * on their object when it lies beneath a root, refused (EPERM) elsewhere. Its state counts the
 * refusals; metadata_handler_new() makes one outside a run (landlock-run).
 */
extern const sup_handler handler_metadata;
int metadata_handler_new(void **ret_state);

/*
 * connect(), sendto() with an address, sendmsg() and sendmmsg() (SECCOMP_NET_NOTIFY), performed
 * by us on the caller's own socket when the destination is allowed, refused with EACCES and
 * recorded otherwise: a pathname unix socket beneath the network roots; sockets of the
 * command's own network namespace; and of IP destinations, as below.
 */
typedef struct net_supervision {
	bool supervised;     /* rules were given: without them nothing is let through */
	uint16_t proxy_port; /* 0: the command has a network namespace of its own: any loopback
			      * address is its own and allowed. Else (no namespace): only
			      * 127.0.0.1:proxy_port is. */
	bool host_network;   /* no namespace and no proxy: no IP address, no abstract socket */
	char *const *roots;  /* borrowed; as the plan's net_roots (NULL: the supervisor's) */
} net_supervision;

extern const sup_handler handler_network;

/*
 * Write-class file calls (SECCOMP_FILES_NOTIFY; docs/design/evidence.md): let through
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE: Landlock and the read-only mounts still enforce) unless
 * the kernel would surely refuse them, then refused here with the kernel's errno and recorded
 * (sup_record()). The rules of a state made outside a run (tests, a caller of its own).
 */
typedef struct files_rules {
	bool complete; /* the child's filter sends every such call (the evidence) */
	/* Landlock's ABI in force: truncate needs 3, rename and link 2; 0: no Landlock domain,
	 * a runner's read-only mounts alone refuse (EROFS) */
	int abi;
	/* Borrowed: the protected read-only paths, as the command sees them, and the hidden ones
	 * (denyRead), whose reads are recorded (FILES_READ_NOTIFY). */
	char *const *readonly;
	char *const *hidden;
} files_rules;

extern const sup_handler handler_files;
int files_handler_new(const files_rules *rules, void **ret_state);

/* A network handler's state for @rules (copied; the roots borrowed), with no proxy. */
int network_handler_new(const net_supervision *rules, void **ret_state);

/* The distinct destinations refused so far, in order ("10.1.2.3:443", "/run/x.sock",
 * "@abstract", "vsock:2:1234"), at most NETWORK_NAMED_MAX, a new vector; the count of every
 * refusal in *@ret_count. NULL on OOM. */
#define NETWORK_NAMED_MAX 1024 /* as many as the proxy keeps of its hosts */
char **network_refused(void *state, unsigned *ret_count);

/* --- supervise.c: one run's supervision ----------------------------------------------------------
 */

typedef struct supervision {
	supervisor sup;
	sup_worker *worker; /* the thread answering from the first call on, or NULL */
	int listener;	    /* polled by the caller until the worker takes it; -1 */
} supervision;

#define SUPERVISION_INIT       \
	{                      \
		.listener = -1 \
	}

/*
 * Readies @sv to supervise a run of @plan (borrowed for the run): each handler of the build
 * that @plan needs, given what it takes of @in; @sv takes @in's listener. A handler that cannot
 * be made is left out: its calls are refused. Release with supervision_done(), always.
 */
void supervision_start(supervision *sv, const confine_plan *plan, spawn_handoff *in);

/*
 * Call it with what polling sv->listener returned. Readable: at the first call every handler
 * is told and a worker thread takes the listener, so sv->listener is -1 afterwards; without a
 * thread, this call is answered here. Hung up (no process of the run left to call): it is
 * closed, and the calls of any process left get ENOSYS, never a pass.
 */
void supervision_ready(supervision *sv, short revents);

/* What the run's handlers refused so far, into the zeroed @ret (record_free()). -ENOMEM. */
int supervision_refusals(supervision *sv, confine_refusals *ret);

void supervision_done(supervision *sv);

/* --- limits.c: what one call may take of the host ----------------------------------------------
 */

typedef enum limit_mech {
	LIMIT_BY_NONE,
	LIMIT_BY_CGROUP2,
	LIMIT_BY_CGROUP1,
	LIMIT_BY_RLIMIT_USERNS, /* RLIMIT_NPROC in a user namespace of the sandbox's own */
	LIMIT_BY_RLIMIT,
	LIMIT_BY_TMPFS,	 /* the size of the backend's own /tmp */
	LIMIT_BY_USERNS, /* the per-user budgets: a user namespace of the sandbox's own */
	_LIMIT_BY_MAX,
} limit_mech;

/* "none", "cgroup2", "cgroup1", "rlimit-userns", "rlimit", "tmpfs", "user-namespace". */
const char *limit_mech_name(limit_mech m);

#define LIMIT_BUDGETS_MAX 4

/* What this host gives, found once per process (and the cgroups of a crashed one swept). */
typedef struct limits_host {
	int pids_version, memory_version;      /* 2, 1, 0: no writable cgroup of this controller */
	char pids_dir[4096], memory_dir[4096]; /* this process's own cgroups */
	bool userns;			       /* a user namespace of its own can be made */
	bool root;			       /* exempt from RLIMIT_NPROC */
	uint64_t memory_total;
	uint64_t budgets[LIMIT_BUDGETS_MAX]; /* the caller's per-user budgets (0: unknown) */
} limits_host;

const limits_host *limits_host_get(void);

typedef struct backend_ops backend_ops;

/* How @l is enforced by @ops on host @h. */
limit_mech limits_mech(const limits_host *h, const backend_ops *ops, dsb_mode mode, dsb_limit l);

/* How the per-user budgets are bounded by @ops on @h: LIMIT_BY_USERNS or LIMIT_BY_NONE. */
limit_mech limits_budget_mech(const limits_host *h, const backend_ops *ops);

/* The value of @l in force: the configured one when set explicitly, else the default (which
 * for memory depends on @m). 0: none. */
uint64_t limits_value(const limits_host *h, const dsb_limits *cfg, dsb_limit l, limit_mech m);

/*
 * Fills @plan's limits (and STEP_LIMITS) for a call of @policy through @ops, confining @c. A
 * limit set explicitly that cannot be enforced here is -EPERM with what is missing in @why; a
 * default that cannot be is left out. -ENOMEM.
 */
int limits_plan(const dsb_limits *cfg, const backend_ops *ops, const dsb_exec_policy *policy,
		dsb_confined *c, confine_plan *plan, confine_failure *why);

/* A call's cgroups, named CGROUP_PREFIX "MAKER-PID.N" beneath this process's own. */
#define CGROUP_PREFIX "dsh-sandbox."

typedef struct call_cgroup {
	int version; /* 0: none made */
	int n;	     /* made: one (v2, or a single v1 controller) or two */
	int parent[2], dir[2], procs[2];
	int pids_dir, memory_dir; /* of dir[], or -1 */
	char name[64];
} call_cgroup;

#define CALL_CGROUP_INIT                                                                \
	{                                                                               \
		.parent = {-1, -1}, .dir = {-1, -1}, .procs = {-1, -1}, .pids_dir = -1, \
		.memory_dir = -1                                                        \
	}

/* The limits a call's tree reached (confine_refusals.limits_hit). */
#define LIMIT_HIT_PROCESSES (1u << 0)
#define LIMIT_HIT_MEMORY    (1u << 1)

/*
 * Makes the cgroups of a call under @L (none when L->cgroup is 0) with its limits written:
 * their cgroup.procs are what the child joins. -errno with why in @why, nothing left made.
 */
int call_cgroup_make(const confine_limits *L, call_cgroup *cg, char *why, size_t size);

/* The cgroups of a call of @c, when its plan has any (-SANDBOX_UNAVAILABLE when they cannot be
 * made); release with call_cgroup_remove(). */
int call_cgroup_for(const dsb_confined *c, dsb_mode mode, call_cgroup *cg, dsb_error *reterr);

/* What the tree of @cg reached so far: LIMIT_HIT_*. */
unsigned call_cgroup_hits(const call_cgroup *cg);

/* Ends every process in @cg at once (cgroup.kill; v1: all stopped, then killed). */
void call_cgroup_kill(call_cgroup *cg);

/* Once the call's tree is gone: kills whatever is still in @cg, removes it, releases @cg. */
void call_cgroup_remove(call_cgroup *cg);

/* --- reap.c: a process's children ----------------------------------------------------------------
 */

/* Whether this process has one thread (/proc/self/stat). */
bool reap_single_threaded(void);

/* Whether nothing but a command it spawns can become this process's child meanwhile: it has
 * one thread and no child. */
bool reap_alone(void);

/*
 * Kills every child of this process (first @leader's process group, when > 0) and every
 * process that becomes one as their parents die, until none is left; reaps them all.
 */
void reap_kill_children(pid_t leader);

/*
 * For the reaper of a call that runs in a PID namespace (@init: its init, 0: none): SIGKILLs
 * and reaps the @leader (0: reaped already) and @init, which ends every process in there.
 */
void reap_kill_init(pid_t leader, pid_t init);

/* --- monitor.c
 * ------------------------------------------------------------------------------------ */

/* What a monitor tells its caller: its command started, failed to, or ended. */
enum {
	MONITOR_STARTED = 1,
	MONITOR_FAILED,
	MONITOR_ENDED
};

/* The error a failed start carries travels as its parts (the strings only when there is one). */
#define MONITOR_REPORT_FIELDS(X)                                                  \
	X(I32, kind)	      /* MONITOR_* */                                     \
	X(I32, pid)	      /* STARTED, ENDED: the command (the leader) */      \
	X(U32, achieved)      /* STARTED: the HARDEN_* bits it achieved */        \
	X(I32, init)	      /* STARTED: its PID namespace's init, or 0 */       \
	X(I32, status)	      /* ENDED: its wait status */                        \
	X(REFUSALS, refusals) /* ENDED: what the supervisor refused in the run */ \
	X(I32, err_code)      /* FAILED: the dsb_error */                         \
	X(I32, err_errno)                                                         \
	X(STR, err_subject)                                                       \
	X(STR, err_message)

typedef struct monitor_report {
	RECORD_MEMBERS(MONITOR_REPORT_FIELDS)
} monitor_report;

extern const record_type monitor_report_record;

/*
 * The monitor (in a child of this process or of the spawner): keeps only @status_w, @ctl_r
 * and @o's descriptors, spawns @c, reports its start and end on @status_w, supervises its
 * calls, reaps orphans, and kills what is left when @ctl_r ends.
 */
_Noreturn void monitor_run(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *o,
			   int status_w, int ctl_r);

/* --- spawner.c
 * ------------------------------------------------------------------------------------ */

/*
 * Forks the spawner, which forks every later monitor of this process (tree.c) instead of this
 * process. Only while this process is small and single-threaded: a server at its start. 0, or
 * -errno (monitors are then forked here, as without it). Process-wide; idempotent.
 */
int spawner_start(void);

/* Ends the spawner (its monitors run on until their trees are gone). */
void spawner_stop(void);

/*
 * Asks the spawner for a monitor of @c (monitor_run() with these arguments; the descriptors
 * are passed, the caller keeps its own). 0 when sent; -ENOTCONN with no spawner, -errno when
 * it is gone (then none is asked again).
 */
int spawner_request(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *o, int status_w,
		    int ctl_r);

/* --- tree.c -------------------------------------------------------------------------------------
 */

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
	int status;		  /* the leader's wait status, once ended */
	unsigned achieved;	  /* the HARDEN_* bits the command started with */
	supervision sv;		  /* this process supervises the run (sv.listener: poll it) */
	confine_refusals refused; /* what a monitor reported with the end */
	call_cgroup cg;		  /* this process made the call's cgroups */
	pid_t init;		  /* our child, the init of the command's PID namespace (0: none) */
	int init_fd;		  /* a pidfd of that init, ours or a monitor's child (-1: none) */
} proc_tree;

#define PROC_TREE_INIT                                                               \
	{                                                                            \
		.event_fd = -1, .ctl_fd = -1, .init_fd = -1, .sv = SUPERVISION_INIT, \
		.cg = CALL_CGROUP_INIT                                               \
	}

/* How tree_spawn() runs the command. */
#define TREE_REAP (1u << 0) /* no process the command starts outlives the call */
#define TREE_FOREGROUND                                                        \
	(1u << 1) /* its group takes our terminal (SPAWN_FOREGROUND), where it \
		   * is our child: a monitor's child does not */

/*
 * Spawns @c like confined_spawn(). With TREE_REAP in @flags, no process the command starts may
 * outlive the call: this process becomes a subreaper when nothing else can become its child
 * meanwhile, else a monitor process does (t->monitor). Release with tree_done(), always.
 */
int tree_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts, unsigned flags,
	       proc_tree *t, dsb_error *reterr);

/* Call it with what polling t->sv.listener returned (supervision_ready()). */
void tree_supervise(proc_tree *t, short revents);

/* What the run's supervisor refused so far, into the zeroed @ret (record_free()). -ENOMEM. */
int tree_refusals(proc_tree *t, confine_refusals *ret);

/* 1 with the leader's wait status once it has ended (reaping ended orphans meanwhile), 0 while
 * it runs, -errno. */
int tree_check(proc_tree *t, int *ret_status);

/* Signals the leader's process group (else the leader) while the leader runs. */
void tree_signal(const proc_tree *t, int sig);

/* Kills every process left (with @reap), reaps them and the leader, releases @t. */
void tree_done(proc_tree *t);

/* --- profile.c -----------------------------------------------------------------------------------
 */

/* Appends DSH's bwrap profile arguments for @mode (and @root) to *@io_argv (dsh-compat §5.5).
 * -ENOMEM. */
int bwrap_profile(dsb_mode mode, const char *root, char ***io_argv);

/* --- backend-*.c, chain.c: the provider and the backends' interface -----------------------------
 */

/*
 * The port of the proxy's listener inside the command's network namespace, where every port
 * is free: the one proxies conventionally use, unless network.proxyPort says otherwise.
 */
#define NET_PROXY_PORT 3128

struct dsb_provider {
	dsb_limits limits; /* the configuration's */
	dsb_backend chain[_DSB_BACKEND_MAX];
	size_t n_chain;
	uint64_t probe_timeout_ms;
	char **runner_command;
	char **runner_failure_signatures;
	uint64_t scope; /* LL_SCOPE_* */
	int abi_max;	/* 0: the kernel's */
	bool evidence;	/* sandbox-local.evidence: file refusals supervised (evidence.md) */
	char *cache_dir;
	char bwrap[4096]; /* the trusted bwrap found (backend-bwrap.c), "" before */
	struct {
		dsb_network_access access;
		char **allow, **deny, **hosts; /* NULL-terminated */
		char **allow_private;	       /* address ranges, NULL-terminated */
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
	bool dry;	       /* explain: confine() plans and makes nothing on the host */
};

/*
 * One backend: everything the provider needs from it. The provider only calls these; the chain's
 * registry is generated from the build's backend list (backends.h), and a configured
 * runnerCommand is backend_runner.
 */
typedef struct backend_ops {
	const char *name;
	const char *const
		*denials;	  /* the dialect (dsh-compat §5.7): lower-case stderr signatures */
	const char *const *fatal; /* runner-failure signatures (§5.8); NULL: none of its own */
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
	/*
	 * What a call under @policy runs: c->argv, c->plan, more denials or rules; the network
	 * policy and the protected paths enforced. -errno; a refusal (an untrusted runner, what it
	 * cannot enforce) returns -EPERM with the reason in @why (its kind CONFINE_RUNNER_SPAWN
	 * when the runner is nowhere to be found).
	 */
	int (*confine)(const dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
		       dsb_confined *c, confine_failure *why);
	/* Whether it can mount protected paths for a command, with the probe's DSB_HARDEN_*. */
	bool (*protects)(unsigned hardening);
	/* In workspace-write the command's /tmp is one of its own, not the host's. */
	bool private_tmp;
	/* Whether it can show a session's private directory as /tmp, with the probe's
	 * DSB_HARDEN_* (docs/design/paths.md). */
	bool (*session_tmp)(unsigned hardening);
	/* The command may get a user namespace of the sandbox's own (its per-user budgets). */
	bool own_userns;
	/* Caps the size of its own /tmp at @bytes in @c (NULL: it has none of its own). */
	int (*tmp_cap)(dsb_confined *c, uint64_t bytes);
	/* How a network policy of @access (not full) is enforced here, as @b probed: a
	 * dsb_probe_network_enforcement() answer. */
	const char *(*network)(const dsb_probe_backend *b, dsb_network_access access);
	/*
	 * The runner's own line when it could not execute the command (exit 1, the line alone on
	 * stderr), which starts with @exec_prefix: the errno it names, else 0.
	 */
	const char *exec_prefix;
	int (*exec_errno)(int exit_code, const char *text, size_t len, const char *argv0);
} backend_ops;

#define BACKEND_DECLARE_(name, NAME) extern const backend_ops backend_##name;
DSB_BACKENDS(BACKEND_DECLARE_)
#undef BACKEND_DECLARE_
extern const backend_ops backend_runner;

/*
 * Whether the backend @p confines with can enforce protected paths (a mount namespace): bwrap,
 * Landlock where the probe made one; never a runnerCommand. Probes on first use.
 */
bool provider_protects(dsb_provider *p);

/*
 * dsb_provider_confine() that says, in *@ret_failure (may be NULL), why a confinement it
 * refused was refused (CONFINE_RUNNER_SPAWN: a runner nowhere to be found).
 */
int provider_confine(dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
		     dsb_confined *ret, confine_failure *ret_failure, dsb_error *reterr);

/* The line @c's runner starts with when it could not execute the command, or NULL. */
const char *confined_exec_prefix(const dsb_confined *c);

/*
 * Makes @p's confinements plans only, for `explain`: a missing protected path the run would
 * make empty beforehand is left missing (the plan is the same; nothing on the host changes).
 */
void provider_set_dry(dsb_provider *p);

/*
 * The backend @p confines with ("bwrap", "landlock", "runner"; NULL: none is usable), probing
 * the chain on first use as confine() would, and why, for a person, appended to @why.
 */
const char *provider_choice(dsb_provider *p, strbuf *why);

/*
 * Tells @x how @c (made by @p's confine() under @policy) confines its command: the enforcement,
 * the argv that is executed (bwrap's, or the command itself with its Landlock rules), the
 * hardening, the network, the limits and the protected paths.
 */
void provider_explain(dsb_provider *p, const dsb_exec_policy *policy, const dsb_confined *c,
		      const explain_sink *x);

/* With @text (@len bytes) as the whole stderr of @c's runner and @exit_code its status: the
 * errno the command's exec failed with when it is the runner's own line saying so, else 0. */
int confined_exec_errno(const dsb_confined *c, int exit_code, const char *text, size_t len,
			const char *argv0);

/* backend-landlock.c: the Landlock ABI @p confines with: the kernel's, capped by
 * landlockAbiMax; -errno: none. */
int landlock_effective_abi(const dsb_provider *p);

/* backend-bwrap.c: where bwrap reads the system-call filter from (`--seccomp 3`). */
#define BWRAP_FILTER_FD 3

/* The bwrap to trust (trusted_program() of -Dbwrap_path, "bwrap" by default): 0 or -ENOENT. */
int bwrap_find(char *out, size_t size, char *why, size_t why_size);

/*
 * Appends our hardening to DSH's profile: user, IPC and UTS namespaces, every capability
 * dropped (root keeps them under bwrap otherwise), and the filter read from @filter_fd.
 */
int bwrap_hardening(int filter_fd, char ***io_argv);

/*
 * The errno of bwrap's own "bwrap: execvp ARGV0: STRERROR" line when it is the whole of
 * @text and bwrap exited 1 (it had set the sandbox up and the command could not be executed),
 * else 0. bwrap prints it in the C locale's words, unless the command's locale translates it:
 * then nothing matches and it stays a runner failure (fail closed).
 */
int bwrap_exec_errno(int exit_code, const char *text, size_t len, const char *argv0);

#endif
