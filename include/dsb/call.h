/* SPDX-License-Identifier: MIT */
/*
 * The call piece: one tool call end to end (dsh-compat §6.7, §7.4). A call loads the configuration,
 * resolves its policy (a session's, or agentless), validates its arguments in DSH's order,
 * approves a one-shot escalation inside a turn of the session, runs its command confined or its
 * file operation fenced, and builds the result exactly as the model sees it. The command line
 * and the server are front ends over these calls, and a C harness drives them the same way:
 *
 *	dsb_call_setup setup = {.store_path = "/var/lib/agent/store"};
 *	dsb_call_request req = DSB_CALL_REQUEST_INIT;
 *	req.tool = DSB_TOOL_BASH;
 *	req.session = session_id;
 *	req.command = "make test";
 *	dsb_call *call = NULL;
 *	dsb_call_result res = {0};
 *	if (dsb_call_new(&setup, &call, &err) < 0 || dsb_call_run(call, &req, &res, &err) < 0)
 *		... err says why no result could be made ...
 *	... res.text is the tool result, res.is_error says whether the call failed ...
 *	dsb_call_result_done(&res);
 *	dsb_call_free(call);
 *
 * Lifecycle: dsb_call_new() one dsb_call per tool call; optionally dsb_call_set_answerer() and
 * dsb_call_set_on_run(); dsb_call_run() it once; dsb_call_free() it. The result lives in caller
 * storage and outlives the call; release it with dsb_call_result_done().
 *
 * Errors: a tool call that fails (bad arguments, a refused escalation, an unavailable sandbox, a
 * fence denial, a cancellation) is a result, not an error: dsb_call_run() returns 0 with
 * is_error set, the code in result.error and "Error: MESSAGE" in result.text, as DSH reports it
 * to the model. dsb_call_run() returns -code only when it cannot make a result at all (a misused
 * API, out of memory).
 *
 * Approval: an escalation is asked of the program configured as approval.answerer when there is
 * one (the operator's choice wins), else of the call's answerer callback, else of nobody, which
 * the approval service records as `unavailable` (the escalation is refused, nothing runs).
 *
 * Thread-safety: a call keeps no global state. Calls on different dsb_call objects may run at
 * once from different threads; their appends to one session are serialised by the log's lock,
 * and each call confines through its own provider (the probe verdict is shared only through
 * @cache_dir). One thread drives a dsb_call; dsb_call_cancel() alone may come from another
 * thread, or from a signal handler. Process-wide effects: dsb_call_run() marks the process not
 * dumpable (PR_SET_DUMPABLE 0), since its memory and environment hold what no confined command
 * may read; a bash or exec call forks, and a single-threaded caller is a child subreaper while
 * the command runs (so that nothing the command starts outlives the call); an exec call's
 * command shares the process's stdin, stdout and stderr.
 */
#ifndef DSB_CALL_H
#define DSB_CALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dsb/approval.h>
#include <dsb/error.h>
#include <dsb/exec.h>
#include <dsb/policy.h>

/* The tools a call can be. */
typedef enum dsb_tool {
	DSB_TOOL_BASH,	/* DSH's bash tool: bash -c COMMAND, output captured, text for the model */
	DSB_TOOL_EXEC,	/* an argv for a person: the process's stdio passed through, no text */
	DSB_TOOL_WRITE, /* DSH's write tool, fenced */
	DSB_TOOL_EDIT,	/* DSH's edit tool, fenced */
	DSB_TOOL_READ,	/* a read: only sandbox-policy.denyRead refuses it */
	_DSB_TOOL_MAX,
	_DSB_TOOL_INVALID = -1,
} dsb_tool;

/* "bash", "exec", "write", "edit", "read" (the approval request's toolName); NULL outside. */
DSB_API const char *dsb_tool_to_string(dsb_tool tool);

/* The tool named exactly @s, or _DSB_TOOL_INVALID (also for NULL). Borrows @s. */
DSB_API dsb_tool dsb_tool_from_string(const char *s);

/*
 * Where a front end's calls find what lies outside any one call: the configuration, the session
 * store and the probe verdict cache (the command line's --config and --store). Zero-initialise.
 */
typedef struct dsb_call_setup {
	/*
	 * The configuration file; NULL: $DSH_SANDBOX_CONFIG when set and not empty, else
	 * $XDG_CONFIG_HOME/dsh-sandbox/config.yaml (~/.config/... without XDG_CONFIG_HOME) when
	 * it exists, else the defaults. DSH_PERMISSION_MODE then overrides its mode.
	 */
	const char *config_path;
	/* The session store; NULL: as dsb_store_open() finds it. */
	const char *store_path;
	/* Where the probe verdict is kept between calls and processes; NULL: no disk cache. */
	const char *cache_dir;
	/* Limits over the configuration's: those it sets explicitly (--max-processes, --memory);
	 * NULL: none. */
	const dsb_limits *limits;
	/* Writable roots beside the configuration's (--writable; dsb_config_add_writable_roots());
	 * NULL: none. */
	char *const *writable_roots;
} dsb_call_setup;

/*
 * Loads the configuration of @setup (see dsb_call_setup) and applies DSH_PERMISSION_MODE. On
 * success *@ret_cfg is a new configuration; free it with dsb_config_free(). An empty
 * config_path is DSB_E_INVALID_ARGS; a file that does not load is its dsb_config_load_file()
 * error. Borrows @setup. Thread-safe (reads the environment).
 */
DSB_API int dsb_call_load_config(const dsb_call_setup *setup, dsb_config **ret_cfg,
				 dsb_error *reterr);

/*
 * Resolves one call's policy as dsb_call_run() does: the configuration of @setup, with
 * @workspace (NULL: none) as the fallback workspace root; then the session named @session (an
 * id in the store, or a log's path), whose log decides (dsh-compat §2.2), or, with @session NULL,
 * an agentless call; @mode (_DSB_MODE_INVALID: none) is an explicit mode over both. The protected
 * paths include what a front end adds to the configuration's: the store, the configuration as
 * spelled, and, when no file was loaded, the directory one would be looked for in. On success
 * *@ret_cfg is the configuration used (free with dsb_config_free()) and *@ret_policy the policy
 * (release with dsb_exec_policy_done()). Borrows everything.
 */
DSB_API int dsb_call_resolve(const dsb_call_setup *setup, const char *session, dsb_mode mode,
			     const char *workspace, dsb_config **ret_cfg,
			     dsb_exec_policy *ret_policy, dsb_error *reterr);

/* One tool call: its tool, whose policy it runs under, and the tool's arguments. */
typedef struct dsb_call_request {
	dsb_tool tool;

	/*
	 * Whose policy: a session's, whose log decides (dsh-compat §2.2), or an agentless call's.
	 * @session is a session id in the store or a log's path (NULL: agentless); @mode an
	 * explicit mode over the session's or the configured one (_DSB_MODE_INVALID: none);
	 * @workspace the fallback workspace root (NULL: sandbox-policy.workspaceRoot, else the
	 * process's working directory); @backend that backend alone instead of the configured
	 * chain (_DSB_BACKEND_INVALID: the chain).
	 */
	const char *session;
	dsb_mode mode;
	const char *workspace;
	dsb_backend backend;

	/*
	 * The tool's arguments; what the tool does not take is ignored.
	 *
	 * bash: @command, run as `bash -c COMMAND`. exec: @argv, NULL-terminated, argv[0]
	 * looked up in PATH. Both: @workdir, absolute or relative to the workspace root (NULL:
	 * the root for bash, the process's working directory for exec); @timeout_ms (0:
	 * bash.timeoutMs for bash, capped at bash.maxTimeoutMs; none for exec).
	 *
	 * write, edit, read: @path, absolute or relative to the workspace root. write: the
	 * @content_len bytes of @content, or, with @content NULL, what @content_fd holds, read
	 * to its end once the call is approved (beyond DSB_FS_MAX_BYTES: FS_TOO_LARGE). edit:
	 * @old_string, @new_string, @replace_all.
	 *
	 * Every tool: @timeout_ms is also how long an approval may take (0: bash.timeoutMs).
	 */
	const char *command;
	char *const *argv;
	const char *workdir;
	uint64_t timeout_ms;
	const char *path;
	const char *content;
	size_t content_len;
	int content_fd;
	const char *old_string;
	const char *new_string;
	bool replace_all;

	/*
	 * A one-shot escalation (dsh-compat §8.1): @sandbox_permissions ("workspace-write" or
	 * "danger-full-access") and @justification, both or neither; a read is never escalated.
	 * @call_id is the harness's id of this tool call for the audit pair, or NULL.
	 */
	const char *sandbox_permissions;
	const char *justification;
	const char *call_id;

	/*
	 * network.access for this call over the configured one (the --network option), or
	 * _DSB_NETWORK_ACCESS_INVALID: the configuration's. allowlist needs network.allow.
	 */
	dsb_network_access network;
} dsb_call_request;

#define DSB_CALL_REQUEST_INIT                                         \
	{                                                             \
		.tool = _DSB_TOOL_INVALID, .mode = _DSB_MODE_INVALID, \
		.backend = _DSB_BACKEND_INVALID, .content_fd = -1,    \
		.network = _DSB_NETWORK_ACCESS_INVALID,               \
	}

/* What a call came to. Caller-owned: init with {0}; release with dsb_call_result_done(). */
typedef struct dsb_call_result {
	dsb_tool tool;
	/*
	 * The tool call failed: @error holds its code (dsb_code_name(), dsb_code_dsh_error()),
	 * errno and subject, and @text is "Error: MESSAGE", the message mapped as DSH maps it
	 * for the model (a fence denial becomes the denial marker and the escalation hint).
	 */
	bool is_error;
	dsb_error error;
	/*
	 * The call got past its preparation (arguments, policy, approval, directories, sandbox
	 * provider) and went on to its command or file operation; an error before that means
	 * nothing was attempted.
	 */
	bool prepared;
	/*
	 * What the model sees, byte for byte, NUL-terminated; bash output may hold NUL bytes,
	 * hence @text_len. bash: the rendered result (dsh-compat §6.8); write, edit: DSH's
	 * confirmation; read: the file's text. NULL for a successful exec, whose output went to the
	 * caller.
	 */
	char *text;
	size_t text_len;
	/*
	 * bash, exec: the command's outcome; with a DSB_E_ABORTED failure whose command ran,
	 * what it did before the cancellation stopped it (run.aborted set), else zero.
	 */
	dsb_run_result run;
	char *path;	     /* write, edit, read: the display path (path.resolve(root, path)) */
	bool created;	     /* write: the file was made, not replaced */
	size_t replacements; /* edit */
	bool replaced_all;   /* edit */
} dsb_call_result;

/* Releases what @r holds and zeroes it. NULL is fine. */
DSB_API void dsb_call_result_done(dsb_call_result *r);

/*
 * @r as one JSON object, no newline: for bash {"exitCode", "signal", "timedOut", "timeoutMs",
 * "stdout", "stderr", "sandbox", "text"}; write {"path", "operation"}; edit {"path",
 * "replacements"}; read {"path", "content"}; an exec that captured (dsb_call_set_capture()) as
 * bash; a failed call {"error": {"name", "code",
 * "message"}}, followed, for a command a cancellation stopped, by the run's members up to
 * "sandbox" with "aborted": true. A successful exec that did not
 * capture has none (DSB_E_INVALID_ARGS). *@ret_json
 * is a new string; free with free(). Thread-safe.
 */
DSB_API int dsb_call_render_json(const dsb_call_result *r, char **ret_json, dsb_error *reterr);

typedef struct dsb_call dsb_call;

/*
 * A new call for @setup, whose strings are copied. DSB_E_NO_MEMORY, or DSB_E_IO when the
 * descriptor that carries a cancellation cannot be made. Free with dsb_call_free().
 */
DSB_API int dsb_call_new(const dsb_call_setup *setup, dsb_call **ret_call, dsb_error *reterr);

/* Frees @call (NULL is fine) once dsb_call_run() has returned, never racing dsb_call_cancel(). */
DSB_API dsb_call *dsb_call_free(dsb_call *call);

/*
 * Sets who is asked to approve an escalation when the configuration names no approval.answerer:
 * @answer(request, @userdata, &outcome), called in the thread that runs the call, with the
 * request's timeout_ms saying how long the answer may take. NULL (the default): nobody, so an
 * escalation is refused as unavailable. Before dsb_call_run() only.
 */
DSB_API void dsb_call_set_answerer(dsb_call *call, dsb_answerer_fn answer, void *userdata);

/*
 * Lets an escalation's approval be asked outside the call, for a caller that cannot wait in it
 * (an MCP server answering input_required): when an escalation would be asked of the answerer
 * callback (no approval.answerer program, the approval policy not `never`, the mode strictly
 * wider), @defer(request, @userdata) is called first, before any turn or audit event. When it
 * returns true the call ends there, with nothing logged and nothing run: its result is the error
 * DSB_E_APPROVAL_DEFERRED. The caller asks, then makes the call again with an answerer that
 * answers at once (and no deferral), which logs the audit pair as any approval. Before
 * dsb_call_run() only.
 */
DSB_API void dsb_call_set_deferral(dsb_call *call, dsb_deferral_fn defer, void *userdata);

/* What dsb_call_set_on_run() installs. */
typedef void (*dsb_call_on_run_fn)(void *userdata);

/*
 * Sets @on_run(@userdata), called once the call is prepared (policy resolved, escalation
 * approved) and about to run its command or file operation, in the thread that runs the call:
 * where a front end for people stops taking the terminal's signals for itself. Before
 * dsb_call_run() only.
 */
DSB_API void dsb_call_set_on_run(dsb_call *call, dsb_call_on_run_fn on_run, void *userdata);

/*
 * Makes @call's exec (DSB_TOOL_EXEC) capture its command's output instead of handing it the
 * caller's stdin, stdout and stderr (a library calling for a program, not a person at a
 * terminal): stdin is /dev/null, the output goes to the dsb_call_set_on_output() callback as it
 * comes and its tails (bash.maxOutputBytes each, no spill file) into the result, and the result
 * has the bash tool's text and JSON. Its timeout stays exec's: none unless the request gives
 * one. Before dsb_call_run() only.
 */
DSB_API void dsb_call_set_capture(dsb_call *call, bool capture);

/* What dsb_call_set_on_output() installs: @stream is 1 (stdout) or 2 (stderr). */
typedef void (*dsb_call_on_output_fn)(void *userdata, int stream, const char *buf, size_t n);

/*
 * Sets @on_output(@userdata, stream, buf, n), told each piece of a bash or exec command's
 * output as it arrives (before it is collected), in the thread that runs the call: where a
 * front end shows progress. @buf is borrowed for the call only; pieces follow the pipe's reads,
 * not lines. It must not block. Before dsb_call_run() only.
 */
DSB_API void dsb_call_set_on_output(dsb_call *call, dsb_call_on_output_fn on_output,
				    void *userdata);

/*
 * DSH's read-before-write observation rule (its fs-observation-policy, dsh-compat §7.4), for the
 * calls of one agent session: a successful read records the file's version (device, inode,
 * size, modification time), a read of nothing there records its absence, and a successful
 * write or edit records the version it published. A write of a file never read (or read as
 * absent) must create it: one that exists is FS_NOT_OBSERVED `cannot overwrite existing "P"
 * without reading it first`; a write of a file read must replace that version: else
 * FS_STALE_VERSION, `cannot write "P": file no longer exists` or `cannot write "P": file changed
 * since it was read`. An edit needs the file read: FS_NOT_OBSERVED `edit requires reading "P"
 * first`, FS_NOT_FOUND `cannot edit "P": not found` when read as absent, FS_STALE_VERSION
 * `cannot edit "P": file changed since it was read`. The model reads them with DSH's remedy
 * appended (` — read the file, then retry`, ` — re-read the file, then retry`). The condition
 * is checked under the file's lock, and a file that appears meanwhile is never replaced.
 *
 * The record lives in memory only, as DSH's does. Thread-safe: calls on several threads may
 * share one.
 */
typedef struct dsb_observations dsb_observations;

/* A new, empty record. DSB_E_NO_MEMORY. Free with dsb_observations_free(). */
DSB_API int dsb_observations_new(dsb_observations **ret, dsb_error *reterr);

/* Frees @obs (NULL is fine) once no call uses it. Returns NULL. */
DSB_API dsb_observations *dsb_observations_free(dsb_observations *obs);

/*
 * Makes @call's write, edit and read follow DSH's observation rule over @obs (borrowed; it must
 * outlive the call). NULL (the default): unconditional, as the command line's `fs`. Before
 * dsb_call_run() only.
 */
DSB_API void dsb_call_set_observations(dsb_call *call, dsb_observations *obs);

/*
 * Runs @req through to its result (see the top of this file), in the calling thread; the
 * session's turn that an escalation opened is closed before it returns. Fills *@ret (release
 * with dsb_call_result_done()) and returns 0. -DSB_E_INVALID_ARGS for a call run twice or a
 * missing argument; when memory runs out before the result is built, -code with the call's own
 * error (DSB_E_NO_MEMORY, or the failure it could not make a result of) in @reterr. Borrows
 * @req (and reads, without closing, its content_fd).
 */
DSB_API int dsb_call_run(dsb_call *call, const dsb_call_request *req, dsb_call_result *ret,
			 dsb_error *reterr);

/* What dsb_call_set_debug() installs: @line is one decision, with no newline. */
typedef void (*dsb_call_debug_fn)(void *userdata, const char *line);

/*
 * Sets @debug(@userdata, line), told each decision the call makes, one line each, as it makes
 * it, in the thread that runs the call: the configuration read and from where, the mode and
 * why, the workspace, the writable roots, the backend and why, and how a bash or exec command is
 * confined (the runner's argv, or the command and its Landlock rules; the hardening, network,
 * limits and protected paths), from the very plan that runs. The lines are for a person (a
 * front end's -v); their words may change. NULL (the default): none. Before dsb_call_run() or
 * dsb_call_explain() only.
 */
DSB_API void dsb_call_set_debug(dsb_call *call, dsb_call_debug_fn debug, void *userdata);

/*
 * Explains the exec call @req (DSB_TOOL_EXEC) without running anything: prepared and confined
 * exactly as dsb_call_run() would (the same configuration, policy, provider and plan), but no
 * command is spawned, no missing protected path is made, no session's /tmp is made and nothing
 * is appended to a session. The debug callback (dsb_call_set_debug()) is told the same lines as
 * during a run. On success *@ret_json is a new JSON object (free with free()): "config" {"file",
 * "source"}, "mode", "modeSource" ("explicit", "session", "environment", "configuration",
 * "default"), "modeReason", "workspaceRoot", "workspaceSource", "workdir", "sessionId",
 * "writableRoots", "backend" (null: unconfined), "backendReason", "enforcement", "argv" (what is
 * executed), "rules" (the Landlock rules: {"ro", "rw"[, "rwInPlace"]}; null for a runner),
 * "hardening", "network" {"access", "enforcement"}, "limits", "protectedPaths". Fails as the run
 * would fail before its command (DSB_E_SANDBOX_UNAVAILABLE, DSB_E_INVALID_ARGS, ...), and with
 * DSB_E_INVALID_ARGS for another tool or an escalation (which a person would be asked to approve).
 * A call explains or runs once. Borrows @req.
 */
DSB_API int dsb_call_explain(dsb_call *call, const dsb_call_request *req, char **ret_json,
			     dsb_error *reterr);

/*
 * Beyond DSH, for the person rather than the model: after dsb_call_run(), why @call's escalation
 * was refused though nobody decided it, else NULL. "the approval policy is never: the escalation
 * was refused without asking anyone" (the model reads DSH's "the user rejected ..."), or what
 * became of approval.answerer's program: "the approval answerer PROG could not be started:
 * REASON", "... exited with status N", "... was killed by signal SIGNAME", "... answered \"WORD\",
 * which is none of allowed-once, rejected, cancelled, unavailable", "... gave no answer within N
 * ms". Valid until dsb_call_free().
 */
DSB_API const char *dsb_call_approval_note(const dsb_call *call);

/*
 * Cancels @call: a command it runs gets SIGTERM, with its whole process tree, then SIGKILL after
 * bash.graceMs; an approval it asks of the approval.answerer program is cancelled (the audit
 * pair records `cancelled`); a call not yet at its command or file operation fails without
 * running it. The result is then the error DSB_E_ABORTED, `tool call aborted` (and a stopped
 * command's output and status in its run, run.aborted set). A file operation
 * already under way completes, and its result stands (it is atomic). An answerer callback is not
 * interrupted: the one who cancels tells it, and whatever it answers, the call then fails as
 * aborted. Idempotent; thread-safe and async-signal-safe.
 */
DSB_API void dsb_call_cancel(dsb_call *call);

#endif
