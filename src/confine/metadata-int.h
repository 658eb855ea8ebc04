/* SPDX-License-Identifier: MIT */
/*
 * What the metadata supervisor (metadata.c) shares with its network half (netsup.c): reading
 * the caller's memory, resolving a path as the caller would and finding it beneath a root, and
 * running an operation as the caller. Not for other users.
 */
#ifndef DSB_CONFINE_METADATA_INT_H
#define DSB_CONFINE_METADATA_INT_H

#include <linux/seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "metadata.h"

/* meta_open_path()'s answer for an object outside every root. */
#define META_OUTSIDE (-4096)

/* Copies @len bytes at @addr of process @pid into @buf; -errno (-EFAULT when short). */
int meta_peek(pid_t pid, uint64_t addr, void *buf, size_t len);

/*
 * The object @path names (relative to the caller's @dirfd, AT_FDCWD: its working directory),
 * resolved once in the caller's view (of thread @tid) and found beneath a root of @s, whose
 * roots are open (the first call opened them). Returns it O_PATH, META_OUTSIDE when it lies
 * outside every root, or the caller's -errno. The caller checks SECCOMP_IOCTL_NOTIF_ID_VALID
 * afterwards: /proc/@tid was read.
 */
int meta_open_path(const meta_supervisor *s, pid_t tid, int dirfd, const char *path, bool follow);

/* Runs @op(@obj, @arg) with this thread's effective capabilities cleared; what @op returns. */
int meta_as_caller(int (*op)(int obj, const void *arg), int obj, const void *arg);

/* The AUDIT_ARCH_* value of this build's own system calls, 0 when none is decoded. */
uint32_t meta_native_arch(void);

/*
 * Answers the network call (connect, sendto) of @n, which came on @listener: fills @resp's
 * error (-errno; -ESRCH when the caller was gone before the answer) or value. Returns 1 when
 * it refused the destination (counted and recorded before the answer), else 0.
 */
int meta_net_answer(meta_supervisor *s, int listener, const struct seccomp_notif *n,
		    struct seccomp_notif_resp *resp);

#endif
