/* SPDX-License-Identifier: MIT */
/*
 * The dsh-sandbox command line: each subcommand parses its argv into a struct, calls the
 * library and prints. Only this folder prints or chooses exit statuses.
 */
#ifndef DSB_CLI_CLI_H
#define DSB_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include <dsb/dsb.h>

/* Exit status of a usage error (and of DSB_E_INVALID_ARGS). */
#define CLI_EXIT_USAGE 2

/* Options that come before the subcommand (some may also follow it). */
typedef struct cli_global {
	const char *config_path; /* --config FILE, or NULL */
	const char *store_path;	 /* --store DIR, or NULL */
} cli_global;

typedef struct cli_command {
	const char *name;
	const char *usage; /* the synopsis after "dsh-sandbox NAME" */
	const char *summary;
	int (*run)(cli_global *global, int argc, char **argv);
} cli_command;

extern const cli_command cli_commands[];

/* Prints "dsh-sandbox: @err's message" to stderr and returns the exit status of its code. */
int cli_report(const dsb_error *err);

/* Prints "dsh-sandbox: REASON" and the usage of @cmd (or of the tool) to stderr; returns 2. */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* getopt's ':' (a missing value) or '?' (an unknown option) for @cmd: reports it; returns 2. */
int cli_option_error(const cli_command *cmd, int c, char **argv);

/* Prints the usage of @cmd (or of the whole tool) to @f. */
void cli_print_usage(FILE *f, const cli_command *cmd);

const cli_command *cli_find_command(const char *name);

/* The library's view of the global options: --config and --store, no probe cache. */
dsb_call_setup cli_setup(const cli_global *global);

/*
 * Loads the configuration: --config FILE, else $DSH_SANDBOX_CONFIG, else
 * $XDG_CONFIG_HOME/dsh-sandbox/config.yaml (~/.config/...) when it exists, else the defaults;
 * then DSH_PERMISSION_MODE over the mode (dsb_call_load_config(), an empty --config named).
 */
int cli_load_config(const cli_global *global, dsb_config **ret_cfg, dsb_error *reterr);

/*
 * What dsb_call_load_config() does first, in the CLI's words: an empty --config is a usage
 * error, DSB_E_INVALID_ARGS `--config: expected a file path, got an empty string`.
 */
int cli_check_config_option(const cli_global *global, dsb_error *reterr);

/* The options every policy-resolving command takes. */
typedef struct cli_policy_args {
	const char *session;   /* --session ID|PATH */
	const char *mode;      /* --mode MODE: an explicit mode (over the session's) */
	const char *workspace; /* --workspace DIR: the fallback root */
} cli_policy_args;

/* --mode MODE parsed into *@ret_mode (_DSB_MODE_INVALID when not given): INVALID_ARGS. */
int cli_parse_mode(const cli_policy_args *args, dsb_mode *ret_mode, dsb_error *reterr);

/*
 * Resolves one call's policy with dsb_call_resolve(): the session's when one is named, else
 * agentless (spec §2.2). On success *@ret_cfg is the configuration used (free it with
 * dsb_config_free()) and *@ret_policy the policy.
 */
int cli_resolve_policy(const cli_global *global, const cli_policy_args *args, dsb_config **ret_cfg,
		       dsb_exec_policy *ret_policy, dsb_error *err);

/* Appends the policy object of `policy --json` (no newline) to @sb. -ENOMEM. */
struct strbuf;
int cli_policy_json(struct strbuf *sb, const dsb_exec_policy *p, char *const *roots);

/* Flushes stdout; prints the error and returns 1 when the output could not be written. */
int cli_flush_stdout(void);

/* The directory the CLI keeps its probe verdict in (STORE/cache), or NULL. */
char *cli_cache_dir(const cli_global *global);

/*
 * A new session as `session new` makes it (cmd-session.c): its cwd @cwd (NULL: the current
 * directory) canonical and a directory, the default preset pinned before anyone sees its id.
 * *@ret_store and *@ret_session are new.
 */
int cli_session_new(const cli_global *global, const char *cwd, dsb_store **ret_store,
		    dsb_session **ret_session, dsb_error *err);

/* cmd-*.c */
int cmd_policy(cli_global *global, int argc, char **argv);
int cmd_session(cli_global *global, int argc, char **argv);
int cmd_permission(cli_global *global, int argc, char **argv);
int cmd_probe(cli_global *global, int argc, char **argv);
int cmd_exec(cli_global *global, int argc, char **argv);
int cmd_bash(cli_global *global, int argc, char **argv);
int cmd_context(cli_global *global, int argc, char **argv);
int cmd_fs(cli_global *global, int argc, char **argv);
int cmd_serve(cli_global *global, int argc, char **argv);

/* DSH's landlock-run launcher contract (spec §5.6); also the binary run as `landlock-run`. */
int cmd_landlock_run(cli_global *global, int argc, char **argv);

#endif
