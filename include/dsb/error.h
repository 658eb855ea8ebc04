/* SPDX-License-Identifier: MIT */
/*
 * Errors of libdshsandbox: a stable code plus a message, produced by the library and rendered by
 * its caller. The library never prints and never exits.
 *
 * Every fallible function returns an int: 0 (or a non-negative count) on success, -(int)code on
 * failure. When its last parameter, @reterr, is non-NULL a failure fills it; success never touches
 * it. A dsb_error lives in caller storage and needs no cleanup.
 */
#ifndef DSB_ERROR_H
#define DSB_ERROR_H

#include <stddef.h>

#ifndef DSB_API
#define DSB_API __attribute__((visibility("default")))
#endif

typedef enum dsb_code {
#define DSB_CODE(sym, name, dsh_error, rpc_code, exit_status, summary) sym,
#include <dsb/codes.def>
#undef DSB_CODE
	_DSB_CODE_MAX,
	_DSB_CODE_INVALID = -1,
} dsb_code;

typedef struct dsb_error {
	dsb_code code;	    /* stable; dsb_code_name() gives e.g. "SANDBOX_UNAVAILABLE" */
	int sys_errno;	    /* the underlying errno, 0 if none */
	char subject[1024]; /* the path, key or name concerned; "" if none */
	char message[2048]; /* human text with its context chain, NUL-terminated, maybe truncated */
} dsb_error;

/*
 * The stable name of @code ("CONFIG_INVALID"), or NULL for a value outside the enum.
 * Thread-safe.
 */
DSB_API const char *dsb_code_name(dsb_code code);

/*
 * The error class DSH reports with @code ("SandboxUnavailableError", "FsError"), or NULL where
 * DSH has none. Thread-safe.
 */
DSB_API const char *dsb_code_dsh_error(dsb_code code);

/* The one-line description of @code, or NULL for a value outside the enum. Thread-safe. */
DSB_API const char *dsb_code_summary(dsb_code code);

/* The JSON-RPC error number for @code, or -32603 (internal error) outside the enum. */
DSB_API int dsb_code_rpc(dsb_code code);

/* The dsh-sandbox exit status for @code, or 1 outside the enum. */
DSB_API int dsb_code_exit_status(dsb_code code);

/* The code named @name, or _DSB_CODE_INVALID. Borrows @name. */
DSB_API dsb_code dsb_code_from_name(const char *name);

/* The code of a negative return value @r (-(int)code); DSB_OK for r >= 0. */
DSB_API dsb_code dsb_code_from_return(int r);

#endif
