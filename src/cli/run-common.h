/* SPDX-License-Identifier: MIT */
/* What `bash` and `exec` share. */
#ifndef DSB_CLI_RUN_COMMON_H
#define DSB_CLI_RUN_COMMON_H

#include <getopt.h>
#include <stdint.h>

#include "cli.h"

typedef struct run_args {
	cli_policy_args policy;
	const char *workdir;
	const char *timeout;
	const char *backend;
	const char *sandbox_permissions; /* --sandbox-permissions MODE: a one-shot escalation */
	const char *justification;
	const char *call_id;
	const char *subject;		/* what the approval prompt shows: the command */
	const char *tool_name;		/* "bash", "exec", "write", "edit" */
	const char *escalation_subject; /* "command" (bash, exec) or "operation" (fs) */
	bool json;
} run_args;

/* The long options both take; getopt's return values map onto run_parse_option(). */
extern const struct option run_options[];

/* Takes getopt's @c for one of the shared options: 1 when it was one, else 0. */
int run_parse_option(int c, const char *arg, cli_global *global, run_args *args);

/* --timeout MS: a positive whole number, else the bash tool's validation text. */
int run_parse_timeout(const char *s, uint64_t *ret_ms, dsb_error *err);

/* The command's working directory (spec §6.7 step 5). -ENOMEM. */
int run_workdir(const char *base, const char *workdir, char **ret_dir);

/* The managed DSH_* variables (spec §6.9), key-sorted. -ENOMEM. */
/* DSB_E_INVALID_ARGS naming @what and @path unless @path is a directory (NULL is fine). */
int run_check_dir(const char *what, const char *path, dsb_error *err);

int run_dsh_env(dsb_session *session, char ***ret_env);

/* Everything one run needs, resolved from the options. */
typedef struct run_context {
	dsb_config *cfg;
	dsb_exec_policy policy;
	dsb_store *store;
	dsb_session *session;
	dsb_provider *provider; /* NULL for danger-full-access */
	char *workdir;
	char **dsh_env;
	uint64_t timeout_ms; /* 0: the configured default */
	int64_t opened_turn; /* > 0: the turn this call opened, to close when done */
} run_context;

/*
 * Resolves everything for one run: the policy (and a one-shot escalation: validated, then
 * approved through the session before anything runs, the call opening its own turn when the
 * session has none open), the working directory, the DSH_* variables and the provider.
 */
int run_prepare(cli_global *global, const run_args *args, run_context *ctx, dsb_error *err);

/* Closes the turn run_prepare() opened (turn/end, reason completed) and releases @ctx. */
void run_context_done(run_context *ctx);

#endif
