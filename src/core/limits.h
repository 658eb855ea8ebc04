/* SPDX-License-Identifier: MIT */
/*
 * Limits on every input the library accepts. A value past a limit is refused with a clear
 * error, never truncated silently.
 */
#ifndef DSB_CORE_LIMITS_H
#define DSB_CORE_LIMITS_H

#include <limits.h>

/* A configuration file, in bytes. */
#define DSB_CONFIG_MAX_BYTES (1024 * 1024)

/* Nesting of YAML collections in a configuration document. */
#define DSB_CONFIG_MAX_DEPTH 16

/* Entries of any one list or mapping in a configuration document. */
#define DSB_CONFIG_MAX_ITEMS 1024

/*
 * One bash.scrubEnv regular expression, in bytes, and its size once glibc's regcomp() has
 * unrolled counted repetitions ("(a{255}){255}" is 13 bytes but 65025 copies of "a"; a few such
 * levels exhaust memory): the estimate of scrub.c, in atoms. Within these, one compiles in about
 * a millisecond.
 */
#define DSB_SCRUB_PATTERN_MAX_BYTES 1024
#define DSB_SCRUB_PATTERN_MAX_ATOMS 1024

/* A path, in bytes including the NUL (the kernel's own limit). */
#define DSB_PATH_MAX PATH_MAX

#endif
