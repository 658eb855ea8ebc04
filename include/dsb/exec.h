/* SPDX-License-Identifier: MIT */
/*
 * The executor piece (dsh-compat §6): runs a command (DSH's bash tool runs `bash -c COMMAND`) under
 * a resolved policy, confined through a dsb_provider, with the output captured into bounded
 * tails and spill files, a timeout that kills the whole process group, and the outcome
 * classified (runner failure outranks denial) and rendered exactly as DSH tells the model.
 *
 * Thread-safety: dsb_exec_run() may run concurrently on different providers; a provider is
 * used by one thread at a time.
 */
#ifndef DSB_EXEC_H
#define DSB_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dsb/confine.h>
#include <dsb/error.h>
#include <dsb/policy.h>

/* One stream's outcome (CollectedOutput). */
typedef struct dsb_output {
	char *text; /* the tail: raw bytes, NUL-terminated, maybe not UTF-8 */
	size_t len;
	bool truncated;	  /* bytes were dropped from the tail */
	char *spill_path; /* the full output, or NULL (never spilled, or over maxSpillBytes) */
} dsb_output;

/* How many refused paths a result names (dsb_run_result.refused); the rest are counted. */
#define DSB_REFUSED_NAMED 16

/* One file operation the sandbox refused, from its evidence (docs/design/evidence.md). */
typedef struct dsb_refusal {
	/* "write", "create", "truncate", "mkdir", "remove", "rmdir", "rename", "link",
	 * "symlink", "read", "chmod", "chown", "utimes", "xattr", "setflags" */
	char *op;
	char *path;    /* resolved, absolute, as the command's view has it */
	char *named;   /* as the command named it (maybe relative) */
	int sys_errno; /* what the command got: EACCES, EROFS, EPERM */
	/* "outside" the writable roots (all of them in read-only mode), a "protected" path, a
	 * "hidden" one (sandbox-policy.denyRead) */
	char *why;
} dsb_refusal;

/* ShellRunResult, plus the sandbox facts (ShellSandboxInfo). Caller-owned: init with {0}. */
typedef struct dsb_run_result {
	int exit_code; /* -1 when the command died of a signal */
	int signal;    /* the signal that killed it, 0 if none */
	bool timed_out;
	uint64_t timeout_ms;
	dsb_output out, err;
	bool sandboxed; /* a sandboxing executor ran it (sandbox facts below are set) */
	dsb_mode mode;
	bool denied;
	bool has_enforcement; /* false for danger-full-access */
	dsb_enforcement enforcement;
	/*
	 * Beyond DSH: after a denial, one "[sandbox: PATH is protected: REASON]" line per
	 * protected path the command's stderr names (newline-separated), else NULL. Rendered
	 * after DSH's markers, never instead of them.
	 */
	char *protected_note;
	/*
	 * Beyond DSH, under a network policy other than full: one "[sandbox: network access to
	 * HOST denied (WHY)]" line per host refused (WHY: "not in the allow-list", or with
	 * HOST:PORT "port not in the allow-list", "resolves to this machine", "resolves to a
	 * private address", "resolves to a reserved address", "more than 64 names under a
	 * wildcard"), or, when the command failed after a network call was refused,
	 * "[sandbox: network access is disabled under this policy]" (newline-separated), else
	 * NULL. Rendered last.
	 */
	char *network_note;
	/*
	 * Beyond DSH: the limits the call's tree reached (DSB_LIMIT_* bits, 1u << limit), as its
	 * cgroup counted them, and the lines that say so, "[sandbox: process limit (N) reached]"
	 * and "[sandbox: memory limit (SIZE) reached; the command was killed]", else NULL.
	 * Rendered after the network's.
	 */
	unsigned limits_hit;
	char *limit_note;
	/*
	 * Beyond DSH: what the sandbox undid after the call, one "[sandbox: PATH was removed after
	 * the call: it is protected (REASON)]" line per start-up file the command made
	 * (protectDefaults), else NULL. Rendered last, denial or not.
	 */
	char *undone_note;
	/*
	 * Beyond DSH's foreground result, which a cancellation turns into an error: the command
	 * was stopped by a cancellation (dsb_call_cancel()), and the rest is what it did until
	 * then. Set only where the call's error is DSB_E_ABORTED (dsb_call_result).
	 */
	bool aborted;
	/*
	 * Beyond DSH, where the sandbox watched the command's file operations (@evidence;
	 * docs/design/evidence.md): @denied then follows what was refused, not the stderr
	 * wording. @n_refused counts every refused operation, @refused names the first
	 * DSB_REFUSED_NAMED distinct paths (@n_refused_named), and @refusal_note has their lines,
	 * "[sandbox: write to PATH denied (outside the writable roots)]", "[sandbox: PATH is
	 * protected: REASON]", then "[sandbox: N file operations refused in all]" when there
	 * were more than the lines, else NULL. Rendered after DSH's markers, in place of
	 * @protected_note.
	 */
	bool evidence;
	unsigned n_refused;
	dsb_refusal *refused;
	size_t n_refused_named;
	char *refusal_note;
} dsb_run_result;

/* Releases what @r holds and zeroes it. NULL is fine. */
DSB_API void dsb_run_result_done(dsb_run_result *r);

/* What to run and how (ShellExecRequest after resolve()). Zero-initialise. */
typedef struct dsb_run_request {
	const char *command;	   /* run as bash -c COMMAND; or */
	char *const *argv;	   /* run this argv (exactly one of command/argv) */
	const char *workdir;	   /* NULL: the process cwd */
	uint64_t timeout_ms;	   /* 0: the configured default; capped at maxTimeoutMs */
	uint64_t stdout_max_bytes; /* 0: maxOutputBytes */
	const char *stdin_text;	   /* NULL: /dev/null */
	size_t stdin_len;
	char *const *env;     /* extra NAME=VALUE entries, after the fixed overrides */
	char *const *dsh_env; /* the managed DSH_* entries, last */
	bool no_spill;	      /* keep tails only */
	bool passthrough;     /* for people: stdin and stdout are the caller's; stderr is copied
			       * to the caller's as it comes, and kept for classification */
} dsb_run_request;

/*
 * Runs @req under @policy. danger-full-access runs unconfined with facts {mode, denied:false};
 * a confined mode goes through @provider (DSB_E_SANDBOX_UNAVAILABLE when nothing can enforce
 * it, or when the runner failed: " Runner failure: DETAIL", nothing useful ran). Non-zero exits,
 * timeouts and denials are results, not errors. @cfg gives the bash limits (timeoutMs,
 * maxTimeoutMs, maxOutputBytes, maxSpillBytes, graceMs). Fills *@ret (release with
 * dsb_run_result_done()).
 */
DSB_API int dsb_exec_run(dsb_provider *provider, const dsb_config *cfg,
			 const dsb_exec_policy *policy, const dsb_run_request *req,
			 dsb_run_result *ret, dsb_error *reterr);

/*
 * The bash tool's text for @r (dsh-compat §6.8), byte for byte; @confines adds the escalation hint
 * after a denial marker. Returns a new NUL-terminated string in *@ret_text and its length in
 * *@ret_len (may be NULL; the text itself may hold NUL bytes from the command's output).
 */
DSB_API int dsb_render_result(const dsb_run_result *r, bool confines, char **ret_text,
			      size_t *ret_len, dsb_error *reterr);

#endif
