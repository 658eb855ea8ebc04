/* SPDX-License-Identifier: MIT */
/*
 * The metadata supervisor (metadata.c, docs/design/metadata.md): answers the calls a Landlock
 * command's filter hands over (SECCOMP_METADATA_NOTIFY) by performing them beneath the writable
 * roots and refusing them elsewhere.
 */
#ifndef DSB_CONFINE_METADATA_H
#define DSB_CONFINE_METADATA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>

typedef struct meta_supervisor {
	/*
	 * The call's writable roots, canonical, NULL-terminated (the policy's: read-only mode
	 * has none, so every change is refused). Borrowed.
	 */
	char *const *roots;
	/* Of @roots, those whose own directory is refused, changes beneath them performed. */
	char *const *fixed;
	/*
	 * Opened at the first call and kept for the run: the callers' root, and each root as
	 * they see it (-1 where it could not be opened).
	 */
	bool opened;
	int caller_root;
	int *root_fds;
	struct stat *fixed_ids; /* the fixed roots' own inodes (device and number) */
	size_t n_fixed;
	/* Changes refused outside the roots so far, counted before each answer. */
	_Atomic unsigned refused;
} meta_supervisor;

/*
 * Readies @s to supervise a run whose writable roots are @roots, of which @fixed keep their own
 * directory as it is (both borrowed, NULL-terminated; NULL: none).
 */
void meta_supervisor_init(meta_supervisor *s, char *const *roots, char *const *fixed);

/* Closes what @s opened; it may serve another run of the same roots afterwards. */
void meta_supervisor_done(meta_supervisor *s);

/*
 * Asks the kernel to hand each call of @listener's filter to the supervisor on the caller's own
 * CPU, and the answer back likewise (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP, Linux 6.6): a call
 * then costs no cross-CPU wake-up either way. Older kernels keep the ordinary wake-ups.
 */
void meta_listener_tune(int listener);

/*
 * Receives one notification from @listener and answers it: performed (0 or the operation's
 * -errno) when its object lies beneath a root of @s, EPERM otherwise, and EPERM for a call it
 * does not decode. Blocks until a notification comes: call it when @listener is readable.
 * Returns 1 when it refused a change outside the roots (a denial the model is told of), 0 for
 * any other answer, or -errno when the listener itself failed (the caller stops polling it).
 * Runs the operation with the calling thread's effective capabilities cleared.
 */
int meta_handle(meta_supervisor *s, int listener);

/*
 * Clears the calling thread's effective capabilities for good (its permitted ones stay), so
 * that meta_handle() performs each call as the caller without clearing them around it.
 * Returns whether they are clear now.
 */
bool meta_clear_caps(void);

/*
 * A thread that answers @listener's calls with @s (borrowed) until meta_worker_stop(), or
 * until no process of the run is left to call. It takes @listener once started (on failure
 * the caller keeps it and may answer inline with meta_handle()). 0 or -errno.
 */
typedef struct meta_worker meta_worker;
int meta_worker_start(meta_worker **ret, meta_supervisor *s, int listener);

/* Ends the worker (its listener closed: later calls fail ENOSYS) and frees it; NULL: none. */
void meta_worker_stop(meta_worker *w);

#endif
