/* SPDX-License-Identifier: MIT */
/*
 * The system-call filter that every confined command gets, on both backends: bwrap receives it
 * through `--seccomp FD`, the Landlock backend installs it in the forked child right before
 * execve. It is a deny-list (default ALLOW, refused calls fail with EPERM, never kill) in the
 * spirit of Flatpak's and Docker's profiles; docs/design/seccomp.md gives every rule its reason.
 *
 * The programs are generated at build time by seccomp-gen.c with libseccomp, for the target's
 * architectures, one per combination of the flags that can occur, and compiled in as constant
 * arrays: the library does not link libseccomp and builds nothing at run time.
 */
#ifndef DSB_CONFINE_SECCOMP_H
#define DSB_CONFINE_SECCOMP_H

#include <linux/filter.h>
#include <stdbool.h>

/*
 * What to deny beyond the base rules. Each flag stands for an isolation the backend could not
 * give, so the filter takes its place:
 *   NAMESPACES        Landlock: no new namespaces (a user namespace hands the command
 *                     capabilities over kernel code otherwise reserved to root)
 *   PROCESS_TARGETS   Landlock, no PID namespace: no reconfiguring other processes by pid
 *   IPC               no IPC namespace could be made: no SysV IPC, no POSIX message queues
 */
#define SECCOMP_DENY_NAMESPACES	     (1u << 0)
#define SECCOMP_DENY_PROCESS_TARGETS (1u << 1)
#define SECCOMP_DENY_IPC	     (1u << 2)
#define SECCOMP_DENY_ALL	     (SECCOMP_DENY_NAMESPACES | SECCOMP_DENY_PROCESS_TARGETS | SECCOMP_DENY_IPC)

/*
 * Metadata changes Landlock does not govern (chmod, chown, times, extended attributes, inode
 * flags; docs/design/metadata.md), one of the two or neither:
 *   METADATA_NOTIFY   the calls go to the supervisor (SECCOMP_RET_USER_NOTIF), which performs
 *                     them beneath the writable roots and refuses them elsewhere
 *   METADATA_DENY     no supervisor can be had: the calls fail with EPERM everywhere
 */
#define SECCOMP_METADATA_NOTIFY (1u << 3)
#define SECCOMP_METADATA_DENY	(1u << 4)

/*
 * The network (docs/design/seccomp.md, docs/design/metadata.md):
 *   NET_NOTIFY        connect, sendto with a destination address, and every sendmsg and
 *                     sendmmsg (their destination is in memory) go to the supervisor, which
 *                     checks the address and performs the call on the caller's socket
 *                     (a pathname unix socket of the host is reachable through the file system
 *                     from any network namespace); the other ABIs' forms (i386 socketcall and
 *                     direct calls, x32) are refused with EPERM
 *   DENY_SOCKETS      socket and socketpair of any family but AF_UNIX fail with EAFNOSUPPORT
 *                     (no network namespace could be made); i386's socketcall forms with EPERM
 */
#define SECCOMP_NET_NOTIFY   (1u << 5)
#define SECCOMP_DENY_SOCKETS (1u << 6)

/*
 * Evidence of file refusals (docs/design/evidence.md), only beside METADATA_NOTIFY (the same
 * listener):
 *   FILES_NOTIFY      the native ABI's write-class file calls go to the supervisor, which lets
 *                     each through (SECCOMP_USER_NOTIF_FLAG_CONTINUE: Landlock and the
 *                     read-only mounts still enforce) or, where the kernel would refuse it,
 *                     answers that refusal itself and records it: open, openat and creat
 *                     with write, create or truncate intent, every openat2 (its flags are in
 *                     memory), mkdir, mknod, unlink, rmdir, rename, link, symlink (and their
 *                     *at forms) and truncate. The other ABIs' forms run unsupervised.
 */
#define SECCOMP_FILES_NOTIFY (1u << 7)
/*
 *   FILES_READ_NOTIFY with FILES_NOTIFY, for a plan with hidden paths (denyRead): every open
 *                     and openat too, reads included, so that a read of a hidden path is
 *                     recorded (every open then pays the round trip: only where it can matter)
 */
#define SECCOMP_FILES_READ_NOTIFY (1u << 8)
#define SECCOMP_FLAGS_ALL                                                                          \
	(SECCOMP_DENY_ALL | SECCOMP_METADATA_NOTIFY | SECCOMP_METADATA_DENY | SECCOMP_NET_NOTIFY | \
	 SECCOMP_DENY_SOCKETS | SECCOMP_FILES_NOTIFY | SECCOMP_FILES_READ_NOTIFY)

/* Programs are indexed by their flags; seccomp_flags_built() says which slots hold one. */
#define SECCOMP_PROGRAMS (SECCOMP_FLAGS_ALL + 1)

/*
 * Whether a program is built for @flags: not for both metadata flags (contradictory), and the
 * network flags only with the Landlock backend's two (SECCOMP_DENY_NAMESPACES and
 * SECCOMP_DENY_PROCESS_TARGETS): bwrap makes a network namespace and gets the network rules
 * from seccomp_net_only_program(), so the other combinations cannot occur, and building them
 * all would more than double the programs' size (docs/design/seccomp.md). FILES_NOTIFY only
 * with METADATA_NOTIFY: it needs the listener, and without one the file calls run unsupervised.
 */
static inline bool seccomp_flags_built(unsigned flags)
{
	const unsigned both = SECCOMP_METADATA_NOTIFY | SECCOMP_METADATA_DENY;
	const unsigned landlock = SECCOMP_DENY_NAMESPACES | SECCOMP_DENY_PROCESS_TARGETS;
	if ((flags & ~SECCOMP_FLAGS_ALL) || (flags & both) == both)
		return false;
	if ((flags & SECCOMP_FILES_NOTIFY) && !(flags & SECCOMP_METADATA_NOTIFY))
		return false;
	if ((flags & SECCOMP_FILES_READ_NOTIFY) && !(flags & SECCOMP_FILES_NOTIFY))
		return false;
	return !(flags & (SECCOMP_NET_NOTIFY | SECCOMP_DENY_SOCKETS)) ||
	       (flags & landlock) == landlock;
}

/* A classic-BPF program in the kernel's form (struct sock_fprog, but const). */
typedef struct seccomp_program {
	const struct sock_filter *insns;
	unsigned short len;
} seccomp_program;

/* The generated programs (seccomp-filters.c in the build tree), indexed by flags. */
extern const seccomp_program seccomp_programs[SECCOMP_PROGRAMS];

/*
 * The programs installed below a runner (bwrap), which installs the main filter itself with no
 * listener for us: the supervised groups alone, default ALLOW, with a listener. The kernel runs
 * both filters, and a notification comes to the listener of the filter that asked for it.
 *   NET_NOTIFY        a network policy's connect and send calls
 *   METADATA_NOTIFY   with FILES_NOTIFY and never alone: evidence (docs/design/evidence.md);
 *   FILES_NOTIFY      the supervisor only looks, and lets each call through unless a read-only
 *   FILES_READ_NOTIFY mount is about to refuse it (nothing of ours enforces there)
 */
#define SECCOMP_RUNNER_FLAGS                                                   \
	(SECCOMP_NET_NOTIFY | SECCOMP_METADATA_NOTIFY | SECCOMP_FILES_NOTIFY | \
	 SECCOMP_FILES_READ_NOTIFY)

static inline bool seccomp_runner_built(unsigned flags)
{
	const unsigned evidence = SECCOMP_METADATA_NOTIFY | SECCOMP_FILES_NOTIFY;
	if (!flags || (flags & ~SECCOMP_RUNNER_FLAGS))
		return false;
	if ((flags & SECCOMP_FILES_READ_NOTIFY) && !(flags & SECCOMP_FILES_NOTIFY))
		return false;
	return (flags & evidence) == 0 || (flags & evidence) == evidence;
}

/* The generated runner programs (seccomp-filters.c), indexed by flags (SECCOMP_RUNNER_FLAGS). */
extern const seccomp_program seccomp_runner_programs[SECCOMP_PROGRAMS];

/*
 * The generated program for @flags (SECCOMP_DENY_*, SECCOMP_METADATA_*, SECCOMP_NET_NOTIFY);
 * NULL when none is built for them (seccomp_flags_built()).
 */
const seccomp_program *seccomp_program_for(unsigned flags);

/* The runner program for @flags; NULL when none is built for them (seccomp_runner_built()). */
const seccomp_program *seccomp_runner_program(unsigned flags);

/* The runner program of the SECCOMP_NET_NOTIFY rules alone. */
const seccomp_program *seccomp_net_only_program(void);

/*
 * Whether the kernel lets a supervisor answer "go on" (SECCOMP_USER_NOTIF_FLAG_CONTINUE, Linux
 * 5.5), which evidence below a runner needs for every call it does not refuse.
 */
bool seccomp_continue_available(void);

/* Whether the running kernel's release is @major.@minor or later (false when unreadable). */
bool kernel_at_least(unsigned long major, unsigned long minor);

/*
 * Installs @prog on the calling thread, irreversibly: PR_SET_NO_NEW_PRIVS (the kernel refuses a
 * filter from an unprivileged process without it), then seccomp(SECCOMP_SET_MODE_FILTER), or
 * prctl(PR_SET_SECCOMP) where the seccomp() system call is missing (before Linux 3.17). Returns
 * 0 or -errno. Allocates nothing and touches no lock, so it is safe in a child forked or
 * vfork'ed from a threaded parent. Borrows @prog.
 */
int seccomp_install(const seccomp_program *prog);

/*
 * Installs @prog as seccomp_install() does, with a listener for its SECCOMP_RET_USER_NOTIF
 * rules (SECCOMP_FILTER_FLAG_NEW_LISTENER): returns the listener, close-on-exec, or -errno
 * (-EBUSY: a filter already stacked has a listener of its own; -EINVAL or -ENOSYS: a kernel
 * before 5.0). The caller hands the listener to the supervisor before it execs.
 */
int seccomp_install_listener(const seccomp_program *prog);

/*
 * A new sealed memfd holding @prog's instructions at offset 0, for `bwrap --seccomp FD`. The fd
 * is close-on-exec: the spawner makes it inheritable in the child (dup2 to another number, or
 * clear FD_CLOEXEC). bwrap reads it from the current offset to the end, so use one fd per spawn.
 * Returns the fd or -errno. Borrows @prog.
 */
int seccomp_program_memfd(const seccomp_program *prog);

#endif
