/* SPDX-License-Identifier: MIT */
/*
 * Internals of the confinement piece.
 *
 *   landlock.c  the kernel interface: ABI negotiation, the rule set of spec §5.6, restrict
 *   bwrap.c     the bwrap profile of spec §5.5
 *   chain.c     the provider: chain, probes, verdict caches, confine()
 *   spawn.c     fork, restrict in-process, exec, with failures reported out of band
 *
 * DSH's `landlock-run` launcher contract is CLI behaviour and lives in src/cli/.
 */
#ifndef DSB_CONFINE_CONFINE_H
#define DSB_CONFINE_CONFINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dsb/confine.h>

#include "../core/core.h"

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
	char **ro;	/* NULL-terminated: EXECUTE | READ_FILE | READ_DIR */
	char **rw;	/* NULL-terminated: every handled right (masked for non-directories) */
	uint64_t scope; /* LL_SCOPE_* wanted; applied only as far as the ABI has them */
	int abi_max;	/* 0, or the highest ABI to use (landlockAbiMax: an explicit degrade) */
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

/* --- bwrap.c -------------------------------------------------------------------------------- */

/* Appends the profile arguments for @mode (and @root) to *@io_argv. -ENOMEM. */
int bwrap_profile(dsb_mode mode, const char *root, char ***io_argv);

/* The bwrap program: the bare name "bwrap" (PATH lookup, as DSH spawns it) unless built
 * with -Dbwrap_path. */
const char *bwrap_program(void);

/* --- spawn.c -------------------------------------------------------------------------------- */

/*
 * Waits for @pid up to @timeout_ms (0: forever); kills and reaps it on timeout. Returns 0 with
 * the wait status, -ETIMEDOUT, or -errno.
 */
int spawn_wait(pid_t pid, uint64_t timeout_ms, int *ret_status);

/* --- chain.c -------------------------------------------------------------------------------- */

/* The Landlock plan of @c (NULL when it has none). */
const landlock_plan *confined_plan(const dsb_confined *c);

#endif
