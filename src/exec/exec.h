/* SPDX-License-Identifier: MIT */
/*
 * Internals of the executor piece (dsh-compat §6).
 *
 *   capture.c   per-stream output collectors: byte-exact tails and spill files (§6.3)
 *   classify.c  runner failures (§5.8) and denials (§6.5)
 *   render.c    the bash tool's model-facing text (§6.8)
 *   env.c       the child's environment (§6.2, §6.9)
 *   run.c       spawn, pump the pipes, time out, kill the group, reap (§6.2, §6.4, §6.5)
 *   live.c      a background run's output, read as it comes (§6.5 readOutput)
 *   term.c      the terminal a person's confined command is given: foreground, stop, restore
 */
#ifndef DSB_EXEC_EXEC_H
#define DSB_EXEC_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>
#include <termios.h>

#include <dsb/exec.h>

#include "../core/core.h"
#include "../policy/policy.h"

/* --- term.c --------------------------------------------------------------------------------- */

typedef struct exec_term {
	int fd;		      /* the controlling terminal while we may give it; -1: not given */
	pid_t ours, theirs;   /* the process groups: this process's, the command's (0: none) */
	struct termios modes; /* the terminal's settings, ours, to restore */
	bool have_modes;
	sigset_t mask; /* this thread's signal mask before SIGTTOU was blocked */
} exec_term;

/*
 * Before the spawn: opens this process's controlling terminal when this process is its
 * foreground, keeping its settings, and blocks SIGTTOU in this thread. Returns whether the
 * command can be given the terminal (then spawn it with TREE_FOREGROUND); fills *@t either way,
 * to be released with term_take_back().
 */
bool term_open(exec_term *t);

/* After the spawn: process group @pgid the terminal's foreground, unless its child made it so. */
void term_give(exec_term *t, pid_t pgid);

/*
 * Call it while the command runs: when its @leader (our child) has stopped, takes the terminal
 * back, stops this process's group (SIGTSTP, as the terminal does), and once continued gives the
 * terminal back and continues the command's group. Returns whether it had stopped.
 */
bool term_watch(exec_term *t, pid_t leader);

/* The foreground and the terminal's settings ours again, SIGTTOU as it was; releases @t. */
void term_take_back(exec_term *t);

/* --- run.c ---------------------------------------------------------------------------------- */

/* Told each piece of the command's output as it comes: @stream 1 (stdout) or 2 (stderr). */
typedef void (*exec_output_fn)(void *userdata, int stream, const char *buf, size_t n);

/*
 * A command's output as it comes, readable from other threads while the command runs (a
 * background job's): the run's two collectors, handed over to it once made, and the read
 * offsets of the one reader. Locked, since the running thread writes while another reads.
 */
typedef struct exec_live exec_live;
typedef struct collector collector; /* capture.c */

/* A new, empty exec_live; NULL on OOM. */
exec_live *exec_live_new(void);

/* Frees @l and its collectors (NULL is fine), once the run it was given to has returned. */
exec_live *exec_live_free(exec_live *l);

/* What one read of an exec_live gives (DSH's readFrom() of each stream). */
typedef struct exec_delta {
	char *out, *err; /* the new bytes since the last read, decoded as UTF-8 (NUL-terminated) */
	size_t out_len, err_len;
	bool lossy; /* some new bytes were already dropped from memory: a whole tail instead */
	char *out_spill, *err_spill; /* each stream's spill file, NULL when none */
} exec_delta;

/* Releases what @d holds and zeroes it. */
void exec_delta_done(exec_delta *d);

/*
 * The output since the previous read of @l (consuming), also before the run began (nothing) and
 * after it ended. 0 or -ENOMEM. Thread-safe against the run that writes it.
 */
int exec_live_read(exec_live *l, exec_delta *ret);

/* The run's side. Hands @out and @err (either may be NULL) over to @l, which then owns them. */
void live_attach(exec_live *l, collector *out, collector *err);

/* collector_write() of @c, one of @l's, under @l's lock. */
int live_write(exec_live *l, collector *c, const char *buf, size_t n);

/*
 * The command is done: seals @l's collectors and copies each stream's tail into *@ret_out and
 * *@ret_err (each may be NULL), as collector_finish() would give them. -ENOMEM.
 */
int live_seal(exec_live *l, dsb_output *ret_out, dsb_output *ret_err);

/* How exec_run() runs beyond the request: cancellation, live output, and what it reports. */
typedef struct exec_opts {
	/*
	 * Once @cancel_fd (-1: none) polls readable, the command's tree gets SIGTERM, then
	 * SIGKILL after graceMs, and the run fails with DSB_E_ABORTED, `tool call aborted`
	 * (unless the deadline came first: then it is a timeout, as ever); with @keep_aborted it
	 * is a result with `aborted` set, what the command said before it was stopped kept.
	 */
	int cancel_fd;
	bool keep_aborted;
	/* NULL: nobody. Called in the running thread, before the bytes are collected. */
	exec_output_fn on_output;
	/*
	 * A background run (dsh-compat §6.4, §6.5 start()): its output goes to @live as it comes,
	 * it has no timeout, and its end is a result whatever it was: a cancellation sets @aborted,
	 * a runner failure sets @runner_failed (and no denial), instead of failing the run. bwrap's
	 * execvp line stays the command's output (a foreground run makes it EXEC_FAILED).
	 */
	exec_live *live;
	/*
	 * Called once, in the running thread, when the spawn was attempted: @r 0 (the command
	 * runs) or the spawn's failure in @err. Not called when the run fails before (no
	 * sandbox, no memory, no pipes).
	 */
	void (*on_spawn)(void *userdata, int r, const dsb_error *err);
	void *userdata; /* given to @on_output and @on_spawn */
	/*
	 * NULL: nobody. Told the confinement once it is made, before anything is spawned, with the
	 * policy it was made for (the call's, its spill directory protected): what a front end's
	 * debug output shows of the run, from the run's own plan.
	 */
	void (*on_confined)(void *userdata, const dsb_exec_policy *policy, const dsb_confined *c);
	void *confined_userdata;

	bool aborted;	    /* out, with @live */
	bool runner_failed; /* out, with @live */
} exec_opts;

#define EXEC_OPTS_INIT          \
	{                       \
		.cancel_fd = -1 \
	}

/* dsb_exec_run() as @opts (NULL: none) extends it. */
int exec_run(dsb_provider *provider, const dsb_config *cfg, const dsb_exec_policy *policy,
	     const dsb_run_request *req, exec_opts *opts, dsb_run_result *ret, dsb_error *reterr);

/* --- capture.c ------------------------------------------------------------------------------ */

/*
 * One stream's collector (DSH's OutputCollector): an in-memory tail of at most max_bytes, and,
 * from the first byte dropped from memory on, a spill file holding every byte of the stream,
 * until the stream passes max_spill_bytes (then the spill is closed and unlinked and the result
 * has no spill path). The spill directory is created lazily, once per collector set, as
 * TMPDIR/dsh-subprocess-XXXXXX with mode 0700 (mkdtemp's name and mode); files are named
 * dsh-subprocess-PID-COUNTER-HEX12-STREAM.log and opened O_CREAT|O_EXCL, mode 0600.
 *
 * The confined command may be able to rename entries in TMPDIR while it runs, so the directory
 * and the files are reached only through descriptors (docs/design/spill.md): TMPDIR is opened
 * with no symlink on its path (else no spill), the spill directory with O_NOFOLLOW below it,
 * and each file with openat() below that.
 */
typedef struct collector collector;

/*
 * The spill directory shared by the collectors of one run (and its counter). Caller-owned:
 * zero it, optionally set tmpdir, and end with spill_dir_done() after its collectors are
 * freed. The descriptors and the identity are valid only while path is set, so a zeroed
 * struct holds no descriptor. All descriptors are O_CLOEXEC.
 */
typedef struct spill_dir {
	char *path;	  /* TMPDIR/dsh-subprocess-XXXXXX as reported; NULL before a spill */
	unsigned counter; /* file counter, as DSH's per-process counter */
	char *tmpdir;	  /* where to create it (owned); NULL: os.tmpdir() */
	char *shown;	  /* what the model is told in its place ("/tmp" for a session's) */
	char *host_path;  /* tmpdir/dsh-subprocess-XXXXXX, where it really lies */

	/* The spill directory's entry in TMPDIR, and its identity (to remove only our own). */
	char name[sizeof("dsh-subprocess-XXXXXX")];
	dev_t dev;
	ino_t ino;
	int base_fd;	      /* TMPDIR: O_PATH, opened with no symlink on its path */
	int fd;		      /* the spill directory */
	bool off;	      /* no spill in this run: it could not be protected */
	char *protected_path; /* path, canonical, as the confinement protects it; or NULL */
} spill_dir;

/*
 * Makes the spill directory now (the collectors make it on the first spill otherwise). 0, or
 * -errno (then there is no spill in this run); -EPERM when @d->off.
 */
int spill_dir_ensure(spill_dir *d);

/*
 * Removes the spill directory if it is still empty and still ours at its name, closes its
 * descriptors and frees the strings; @d is zeroed. Completed spill files stay (dsh-compat §6.3).
 */
void spill_dir_done(spill_dir *d);

/*
 * A collector for @stream ("stdout" or "stderr") keeping @max_bytes in memory, spilling into
 * @dir up to @max_spill_bytes (0: never spill). Borrows @dir, which must outlive it. NULL on
 * OOM.
 */
collector *collector_new(const char *stream, size_t max_bytes, uint64_t max_spill_bytes,
			 spill_dir *dir);
collector *collector_free(collector *c);

/* Takes @n bytes of the stream. Spill I/O errors disable spilling (no path), never fail. -ENOMEM.
 */
int collector_write(collector *c, const char *buf, size_t n);

/*
 * Finishes the stream into *@ret: the tail (the raw bytes; the renderer decodes), whether any
 * byte was dropped, and the spill path when the spill is complete. The collector is spent.
 */
int collector_finish(collector *c, dsb_output *ret);

/* One incremental read of a collector, in whole-stream byte offsets. */
typedef struct collector_read {
	char *text; /* raw bytes, NUL-terminated */
	size_t len;
	uint64_t next;	  /* the offset to read from next: every byte taken so far */
	bool lossy;	  /* the offset had left the tail: text is the whole tail */
	char *spill_path; /* the spill file while there is one (also while it is written) */
} collector_read;

/*
 * DSH's readFrom(@from): a copy of what the stream took from byte @from on, or, when that has
 * already been dropped from memory, the whole tail with lossy set. Does not change @c. -ENOMEM.
 */
int collector_read_from(const collector *c, uint64_t from, collector_read *ret);

/*
 * The stream ended, but its collector stays readable: the spill file is closed (a failed close
 * discards it) and kept, even when the collector is freed.
 */
void collector_seal(collector *c);

/* collector_finish()'s result as a copy, the collector unchanged. -ENOMEM. */
int collector_snapshot(const collector *c, dsb_output *ret);

/* --- classify.c ----------------------------------------------------------------------------- */

/*
 * classifyRunnerFailure (dsh-compat §5.8): NULL, or a new string with the first stderr line
 * matching a rule's fatal signature (the original line). @exit_code < 0 means "no exit code" (a
 * signal).
 */
char *classify_runner_failure(int exit_code, const char *stderr_text, size_t stderr_len,
			      const dsb_runner_rule *rules, size_t n_rules);

/* matchesSignature (dsh-compat §6.5): non-zero exit and the whole stderr contains a signature. */
bool classify_denial(int exit_code, const char *stderr_text, size_t stderr_len,
		     char *const *signatures);

/*
 * After a denial: one "[sandbox: PATH is protected: REASON]" line for each protected path of
 * @p that @stderr_text names, absolute or relative to @workdir (NULL: the process's), in
 * *@ret_note; NULL when none. -ENOMEM.
 */
int classify_protected(const char *stderr_text, size_t stderr_len, const dsb_exec_policy *p,
		       const char *workdir, char **ret_note);

/*
 * What the model is told of a run's refused network calls (dsb_run_result.network_note):
 * under the allow-list (@allowlist) one line per host or address of @named (a socket's path is
 * not a host: counted, not named), with the reason an entry "HOST\tWHY" gives (else "not in
 * the allow-list"); then, when the command @failed after @refused calls were
 * refused and no host was named, that network access is disabled. *@ret_note is NULL when
 * there is nothing to say. -ENOMEM.
 */
int network_note(bool allowlist, bool failed, unsigned refused, char *const *named,
		 char **ret_note);

/* Releases what @f holds and zeroes it. NULL is fine. */
void refusal_done(dsb_refusal *f);

/*
 * The refusals of a run's evidence (confine_refusals.files_named: "OP\tERRNO\tPATH\tNAMED\tWHY"
 * entries, at most DSB_REFUSED_NAMED taken) into a new *@ret of *@ret_n; a malformed entry is
 * left out. -ENOMEM.
 */
int refusals_parse(char *const *named, dsb_refusal **ret, size_t *ret_n);

/*
 * What the model is told of them (dsb_run_result.refusal_note): a line for each of @v (@n),
 * a protected or hidden one as the fence says it ("[sandbox: PATH is protected: REASON]", the
 * reason of @p's protected path that holds it), the rest "[sandbox: write to PATH denied
 * (outside the writable roots)]" ("(read-only mode)" when @p's mode is); then how many there
 * were in all when @total is more. *@ret_note is NULL when there is nothing to say. -ENOMEM.
 */
int refusal_note(const dsb_refusal *v, size_t n, unsigned total, const dsb_exec_policy *p,
		 char **ret_note);

/*
 * What the model is told of the limits a run reached (dsb_run_result.limits_hit, @hits, the values
 * from
 * @processes and @memory): *@ret_note is NULL when none was. -ENOMEM.
 */
int limit_note(unsigned hits, uint64_t processes, uint64_t memory, char **ret_note);

/* --- render.c ------------------------------------------------------------------------------ */

/* dsb_render_result() with the text's length (output may hold NUL bytes). 0, -EINVAL, -ENOMEM. */
int render_result(const dsb_run_result *r, bool confines, char **ret_text, size_t *ret_len);

/* "[sandbox: file access denied under MODE mode]", new; NULL on OOM or a bad mode (§8.1). */
char *render_denial_marker(dsb_mode mode);

/* ESCALATION_HINT(@subject) of dsh-compat §6.8 ("command", "operation"), new; NULL on OOM. */
char *render_escalation_hint(const char *subject);

/* The signal's name as Node reports it ("SIGTERM"), or NULL when Node has none. */
const char *render_signal_name(int sig);

/* --- env.c ---------------------------------------------------------------------------------- */

/*
 * The child's environment (dsh-compat §6.2): @parent (envp form) with every name matching
 * /KEY|PASSWORD|SECRET|TOKEN/i or starting with DSH_ (any case) removed, and every entry one of
 * @rules (bash.scrubEnv) matches, then NO_COLOR=1, TERM=dumb, PAGER=cat, GIT_PAGER=cat, then
 * @extra, then @dsh (later wins; these are never scrubbed). Borrows everything. Returns a new
 * NULL-terminated array (free with strv_free()) or NULL on OOM.
 */
char **env_build(char *const *parent, const scrub_rule *rules, size_t n_rules, char *const *extra,
		 char *const *dsh);

/* Sets NAME=VALUE @entry in *@env, replacing an entry of the same name in place. -ENOMEM. */
int env_put(char ***env, const char *entry);

/*
 * Points the command's proxy variables (http_proxy, https_proxy, all_proxy, each in both
 * cases) at the allow-list's proxy, 127.0.0.1:@port in its network namespace, and keeps the
 * namespace's loopback out of it (no_proxy). -ENOMEM.
 */
int env_proxy(char ***env, uint16_t port);

#endif
