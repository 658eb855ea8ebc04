/* SPDX-License-Identifier: MIT */
/*
 * The session piece: DSH-compatible session logs (dsh-compat §3). A session's policy state is its
 * append-only JSONL log: every mode switch, approval policy and preset is an event, and the
 * effective value is the last one (a fold read from the end of the file).
 *
 * Lifecycle: dsb_store_open() a store root; dsb_session_create() or dsb_session_open() a
 * session in it (or any DSH log by path); fold, append, resolve; dsb_session_free(). A
 * dsb_session holds no file open between calls, so any number of processes may use the same
 * log: appends take an exclusive flock(2) while they pick the next seq and write.
 *
 * Thread-safety: one dsb_session per thread; different objects on the same log are safe.
 */
#ifndef DSB_SESSION_H
#define DSB_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include <dsb/error.h>
#include <dsb/policy.h>

typedef struct dsb_store dsb_store;
typedef struct dsb_session dsb_session;

/*
 * Opens the store at @root, or when NULL at $DSH_SANDBOX_STORE, else
 * $XDG_STATE_HOME/dsh-sandbox, else ~/.local/state/dsh-sandbox. The directory is created
 * (0700) only when a session is created. Borrows @root.
 */
DSB_API int dsb_store_open(const char *root, dsb_store **ret_store, dsb_error *reterr);

/* Frees @store (NULL is fine); sessions opened from it stay valid. Returns NULL. */
DSB_API dsb_store *dsb_store_free(dsb_store *store);

/* The store's absolute root directory. Owned by @store. */
DSB_API const char *dsb_store_root(const dsb_store *store);

/*
 * Whether appends fsync before they report success (default true). Turning it off trades
 * durability against power loss for speed; a process crash still loses nothing written.
 */
DSB_API void dsb_store_set_fsync(dsb_store *store, bool fsync);

/* What dsb_store_list() reports of each session. All strings borrowed for the call. */
typedef struct dsb_session_info {
	const char *id;
	const char *cwd; /* NULL when the header has none */
	const char *path;
	uint64_t created_at; /* epoch ms */
} dsb_session_info;

/*
 * Calls @fn for each session log under the store (headers only; unreadable or foreign logs are
 * skipped), in no particular order. @fn returns < 0 to stop with that error. Returns the count.
 */
DSB_API int dsb_store_list(dsb_store *store,
			   int (*fn)(const dsb_session_info *info, void *userdata), void *userdata,
			   dsb_error *reterr);

/*
 * Creates a new session with a random id and @cwd (absolute; NULL for none) as DSH does: the
 * header line (delegationDepth 0) written to a 0600 temp file, fsynced and published with
 * link(2) under --projectKey--/encodedId/session.jsonl, directories 0700. Borrows @cwd.
 */
DSB_API int dsb_session_create(dsb_store *store, const char *cwd, dsb_session **ret_session,
			       dsb_error *reterr);

/*
 * Opens the session named @name: a session id in @store, or the path of a log file (anything
 * containing '/'), so DSH's own logs can be used where they are. Reads and validates the
 * header only. DSB_E_SESSION_NOT_FOUND when there is no such log. Borrows @name.
 */
DSB_API int dsb_session_open(dsb_store *store, const char *name, dsb_session **ret_session,
			     dsb_error *reterr);

/* Frees @session (NULL is fine). Returns NULL. */
DSB_API dsb_session *dsb_session_free(dsb_session *session);

/* Header facts, owned by @session. */
DSB_API const char *dsb_session_id(const dsb_session *session);
DSB_API const char *dsb_session_cwd(const dsb_session *session); /* NULL when none */
DSB_API const char *dsb_session_path(const dsb_session *session);
DSB_API uint64_t dsb_session_created_at(const dsb_session *session);

/*
 * Beyond DSH (docs/design/paths.md): the directory that is /tmp to every confined call of
 * @session, private to it: STORE/.tmp/HASH, HASH naming the log's canonical path. Made (0700,
 * STORE/.tmp too) when @make. *@ret_dir is a new string; free with free().
 */
DSB_API int dsb_session_tmp_dir(const dsb_store *store, const dsb_session *session, bool make,
				char **ret_dir, dsb_error *reterr);

/*
 * Empties and removes @session's private /tmp (dsb_session_tmp_dir()), keeping its log: what a
 * front end that made the session for its own lifetime does at its end. Nothing in it is
 * followed through a symlink. 0 when there is none.
 */
DSB_API int dsb_session_tmp_remove(const dsb_store *store, const dsb_session *session,
				   dsb_error *reterr);

/* STORE/.tmp, which holds every session's private /tmp. *@ret_dir: free with free(). -errno. */
DSB_API int dsb_store_tmp_root(const dsb_store *store, char **ret_dir);

/*
 * Removes the session named @name (as dsb_session_open() takes it) and its private /tmp: a
 * log of the store with its directory, one named by a path elsewhere alone. Nothing of the
 * private /tmp is followed through a symlink.
 */
DSB_API int dsb_session_remove(dsb_store *store, const char *name, dsb_error *reterr);

/*
 * Removes every session of the store whose log was last written more than @older_than_ms ago
 * (dsb_session_remove()), and every private /tmp untouched that long that no remaining
 * session of the store owns. Returns how many went.
 */
DSB_API int dsb_store_prune(dsb_store *store, uint64_t older_than_ms, dsb_error *reterr);

/*
 * The folds of dsh-compat §3.4, read backwards from the end of a plain log (cost grows with the
 * distance to the last matching event, not with the log). Each returns 1 and sets the value
 * when the log has such an event, 0 when it has none. An unknown mode or policy in the last
 * matching event is DSB_E_INVARIANT (fail closed).
 */
DSB_API int dsb_session_fold_mode(dsb_session *session, dsb_mode *ret_mode, dsb_error *reterr);
DSB_API int dsb_session_fold_approval(dsb_session *session, dsb_approval_policy *ret_policy,
				      dsb_error *reterr);
/* *@ret_preset is a new string; free with free(). */
DSB_API int dsb_session_fold_preset(dsb_session *session, char **ret_preset, dsb_error *reterr);

/*
 * Appends one event {"type":@type,"seq":N,"time":T,"data":@data_json} with the next seq, under
 * an exclusive lock, in one write(2), fsynced unless turned off. A torn tail left by a crash is
 * cut back first and its bytes kept in a side file next to the log ("session.jsonl.torn-T").
 * @data_json must be one compact JSON value (checked). Borrows both; *@ret_seq may be NULL.
 */
DSB_API int dsb_session_append(dsb_session *session, const char *type, const char *data_json,
			       uint64_t *ret_seq, dsb_error *reterr);

/* setSandboxMode(): appends exactly one {"type":"sandbox/mode","data":{"mode":M}}. */
DSB_API int dsb_session_set_mode(dsb_session *session, dsb_mode mode, dsb_error *reterr);

/*
 * setApprovalPolicy(): validates @policy first (DSB_E_INVALID_ARGS, `approval policy must be one
 * of "ask" or "never"`, nothing appended), then appends one approval/policy event.
 */
DSB_API int dsb_session_set_approval(dsb_session *session, const char *policy, dsb_error *reterr);

/*
 * resolve({session, mode}) of dsh-compat §2.2: @mode (an approved grant, or _DSB_MODE_INVALID) >
 * the session's sandbox/mode fold > the deployment default; the header cwd > the configured
 * root. Fills *@ret_policy (release with dsb_exec_policy_done()).
 */
DSB_API int dsb_session_resolve(dsb_session *session, const dsb_policy *policy, dsb_mode mode,
				dsb_exec_policy *ret_policy, dsb_error *reterr);

#endif
