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

/* A path, in bytes including the NUL (the kernel's own limit). */
#define DSB_PATH_MAX PATH_MAX

#endif
