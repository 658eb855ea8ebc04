/* SPDX-License-Identifier: MIT */
/*
 * The metadata supervisor (metadata.c, docs/design/metadata.md): answers the calls a Landlock
 * command's filter hands over (SECCOMP_METADATA_NOTIFY) by performing them beneath the writable
 * roots and refusing them elsewhere.
 */
#ifndef DSB_CONFINE_METADATA_H
#define DSB_CONFINE_METADATA_H

#include <stdbool.h>
#include <stdint.h>

typedef struct meta_supervisor {
	/*
	 * The call's writable roots, canonical, NULL-terminated (the policy's: read-only mode
	 * has none, so every change is refused). Borrowed.
	 */
	char **roots;
	/* The AUDIT_ARCH of the calls it decodes (meta_native_arch()); others are refused. */
	uint32_t native_arch;
} meta_supervisor;

/* The AUDIT_ARCH_* value of this build's own system calls, 0 when the supervisor has none. */
uint32_t meta_native_arch(void);

/*
 * Receives one notification from @listener and answers it: performed (0 or the operation's
 * -errno) when its object lies beneath a root of @s, EPERM otherwise, and EPERM for a call it
 * does not decode. Blocks until a notification comes: call it when @listener is readable.
 * Returns 1 when it refused a change outside the roots (a denial the model is told of), 0 for
 * any other answer, or -errno when the listener itself failed (the caller stops polling it).
 * Runs the operation with the calling thread's effective capabilities cleared.
 */
int meta_handle(const meta_supervisor *s, int listener);

#endif
