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

#include "../core/core.h"

/* Exit status of a usage error (and of DSB_E_INVALID_ARGS). */
#define CLI_EXIT_USAGE 2
/* A command whose status is its command's: every failure of its own (env(1), timeout(1)). */
#define CLI_EXIT_OWN_FAILURE 125

/* How many --writable options one command line may give. */
#define CLI_MAX_WRITABLE 64

/* Options that come before the subcommand (--config may also follow it). */
typedef struct cli_global {
	const char *config_path; /* --config FILE, or NULL */
	const char *store_path;	 /* --store DIR, or NULL */
	dsb_limits limits;	 /* --max-processes, --memory: over the configuration's */
	/* --writable DIR, repeatable: NULL-terminated, pointing into argv */
	char *writable[CLI_MAX_WRITABLE + 1];
	bool verbose; /* -v, --verbose or DSH_SANDBOX_DEBUG: each decision told on stderr */
} cli_global;

/* What an option's value or an operand is: what the completions offer for it. */
typedef enum cli_kind {
	CLI_KIND_NONE,	   /* no value (a flag); ends a list of operands */
	CLI_KIND_TEXT,	   /* free text: nothing to offer */
	CLI_KIND_FILE,	   /* a path */
	CLI_KIND_DIR,	   /* a directory */
	CLI_KIND_MODE,	   /* read-only, workspace-write, danger-full-access */
	CLI_KIND_BACKEND,  /* bwrap, landlock */
	CLI_KIND_NETWORK,  /* full, none, allowlist */
	CLI_KIND_APPROVAL, /* ask, never */
	CLI_KIND_PRESET,   /* a permission preset */
	CLI_KIND_SESSION,  /* a session's id or its log's path */
	CLI_KIND_COMMAND,  /* a program and its arguments */
	CLI_KIND_SHELL,	   /* bash, zsh */
	_CLI_KIND_MAX,
} cli_kind;

/* Every option of the tool, each declared once in cli_options[] (options.c). */
typedef enum cli_opt {
	CLI_OPT_CONFIG,
	CLI_OPT_STORE,
	CLI_OPT_HELP,
	CLI_OPT_VERSION,
	CLI_OPT_SESSION,
	CLI_OPT_MODE,
	CLI_OPT_WORKSPACE,
	CLI_OPT_WORKDIR,
	CLI_OPT_CWD,
	CLI_OPT_TIMEOUT,
	CLI_OPT_BACKEND,
	CLI_OPT_NETWORK,
	CLI_OPT_SANDBOX_PERMISSIONS,
	CLI_OPT_JUSTIFICATION,
	CLI_OPT_CALL_ID,
	CLI_OPT_JSON,
	CLI_OPT_APPEND,
	CLI_OPT_FRESH,
	CLI_OPT_OLD,
	CLI_OPT_NEW,
	CLI_OPT_ALL,
	CLI_OPT_RO,
	CLI_OPT_RW,
	CLI_OPT_PROBE,
	CLI_OPT_MAX_PROCESSES,
	CLI_OPT_MEMORY,
	CLI_OPT_WRITABLE,
	CLI_OPT_OLDER_THAN,
	CLI_OPT_VERBOSE,
	_CLI_OPT_MAX,
	_CLI_OPT_INVALID = -1,
} cli_opt;

typedef struct cli_option {
	const char *name; /* --NAME */
	const char *arg;  /* its value in the usage ("FILE"), NULL for a flag */
	cli_kind kind;	  /* what its value is */
	const char *help; /* one line */
} cli_option;

extern const cli_option cli_options[_CLI_OPT_MAX];

/* A subcommand (`session mode`, `fs write`) and what its operands are. */
#define CLI_MAX_OPERANDS 2
typedef struct cli_verb {
	const char *name;
	cli_kind operands[CLI_MAX_OPERANDS + 1]; /* ended by CLI_KIND_NONE: the arity */
} cli_verb;

typedef enum cli_command_flags {
	CLI_IN_ORDER = 1 << 0, /* options end at the first operand: the rest is ARGV's (exec) */
	CLI_OWN_ARGV = 1 << 1, /* parses its own argv, no --help (landlock-run: DSH's contract) */
	CLI_HIDDEN = 1 << 2,   /* neither in --help nor completed */
	/* its status is its command's: its own failures, usage errors too, are 125 (env(1)) */
	CLI_STATUS_IS_THE_COMMANDS = 1 << 3,
} cli_command_flags;

typedef struct cli_args cli_args;

typedef struct cli_command {
	const char *name;
	/*
	 * The synopsis after "dsh-sandbox NAME", each option spelled --NAME alone: the usage
	 * gets its value's name from cli_options[], and the options the command takes are
	 * exactly those it names (and --help).
	 */
	const char *synopsis;
	const char *summary;
	const cli_verb *verbs; /* its subcommands, ended by a NULL name; or NULL */
	cli_kind operand;      /* without subcommands: what its operands are */
	unsigned flags;	       /* cli_command_flags */
	int (*run)(const cli_args *args);
} cli_command;

extern const cli_command cli_commands[];

/* One command line, parsed: what the commands read, never write. */
struct cli_args {
	const cli_command *cmd; /* NULL: the tool's own options */
	cli_global global;	/* the tool's options, a --config after the command over them */
	const cli_verb *verb;	/* a command with subcommands: the one given */
	const char *opt[_CLI_OPT_MAX]; /* each option's last value ("" for a flag), or NULL */
	int argc;		       /* the operands; CLI_OWN_ARGV: the command's whole argv */
	char **argv;
};

/* The options @cmd (NULL: the tool before its command) takes, in its synopsis's order, then
 * --help: their number. */
size_t cli_command_options(const cli_command *cmd, cli_opt ret[_CLI_OPT_MAX]);

/*
 * Parses @argv, argv[0] being @cmd's name (NULL: the tool's own options, up to the command),
 * over @global (NULL: none) into *@ret, which borrows @argv. 0; 1 when --help was printed; or
 * -2 after a usage error was printed.
 */
int cli_parse(const cli_command *cmd, const cli_global *global, int argc, char **argv,
	      cli_args *ret);

/* Prints "dsh-sandbox: MESSAGE" (printf's @fmt) and a newline to stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * A call's decision (dsb_call_set_debug()) on stderr, as "dsh-sandbox: LINE": never on stdout,
 * which is the command's or the model's.
 */
void cli_debug_line(void *userdata, const char *line);

/* Prints "dsh-sandbox: @err's message" to stderr and returns the exit status of its code. */
int cli_report(const dsb_error *err);

/* cli_report() of DSB_E_NO_MEMORY, "out of memory". */
int cli_out_of_memory(void);

/* Prints "dsh-sandbox: REASON" and the usage of @cmd (or of the tool) to stderr; returns 2. */
int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * An unknown command @name: "dsh-sandbox: unknown command 'NAME'" with "; did you mean
 * 'COMMAND'?" when one is near, and a line pointing to --help, on stderr. Returns 2.
 */
int cli_unknown_command(const char *name);

/* Prints the usage of @cmd (or of the whole tool) to @f. */
void cli_print_usage(FILE *f, const cli_command *cmd);

/* --help: the usage of @cmd (or of the tool), what it does and its options, on stdout. */
void cli_print_help(const cli_command *cmd);

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

/* --session, --mode and --workspace of @args. */
cli_policy_args cli_policy_args_of(const cli_args *args);

/* --mode MODE parsed into *@ret_mode (_DSB_MODE_INVALID when not given): INVALID_ARGS. */
int cli_parse_mode(const cli_policy_args *args, dsb_mode *ret_mode, dsb_error *reterr);

/* --network ACCESS parsed into *@ret_access: INVALID_ARGS naming the accepted values. */
int cli_parse_network(const char *s, dsb_network_access *ret_access, dsb_error *reterr);

/* The command's --network, when given, over @cfg's network.access. INVALID_ARGS, CONFIG_INVALID. */
int cli_apply_network(const cli_args *args, dsb_config *cfg, dsb_error *reterr);

/*
 * Resolves one call's policy with dsb_call_resolve(): the session's when one is named, else
 * agentless (dsh-compat §2.2). On success *@ret_cfg is the configuration used (free it with
 * dsb_config_free()) and *@ret_policy the policy.
 */
int cli_resolve_policy(const cli_global *global, const cli_policy_args *args, dsb_config **ret_cfg,
		       dsb_exec_policy *ret_policy, dsb_error *err);

/*
 * The --json outputs' check (jw_take(), core/jw.c): prints the document and a newline on stdout,
 * or nothing. Empties @w; 0 or -ENOMEM.
 */
int jw_print(jw *w);

/* The members of the policy object of `policy --json` (the object's braces are the caller's). */
void cli_policy_json(jw *w, const dsb_exec_policy *p, char *const *roots);

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
int cmd_policy(const cli_args *args);
int cmd_session(const cli_args *args);
int cmd_permission(const cli_args *args);
int cmd_probe(const cli_args *args);
int cmd_exec(const cli_args *args);
int cmd_bash(const cli_args *args);
int cmd_context(const cli_args *args);
int cmd_fs(const cli_args *args);
int cmd_serve(const cli_args *args);
int cmd_explain(const cli_args *args);

/* `completions bash|zsh`: the shell's completion script, generated from the tables. */
int cmd_completions(const cli_args *args);

/* DSH's landlock-run launcher contract (dsh-compat §5.6); also the binary run as `landlock-run`. */
int cmd_landlock_run(const cli_global *global, int argc, char **argv);

/*
 * The limits a confined call in @mode would get from @provider, as `probe` and `policy` show
 * them: each limit's value and mechanism, and how the per-user budgets are shared.
 */
typedef struct cli_limits {
	bool known;
	uint64_t value[_DSB_LIMIT_MAX];
	const char *mechanism[_DSB_LIMIT_MAX];
	const char *budgets;
} cli_limits;

void cli_limits_of(dsb_provider *provider, dsb_mode mode, cli_limits *ret);
/* "limits:" and a line per limit ("  processes: 2048 (cgroup1)"), then the budgets. */
void cli_limits_text(strbuf *sb, const cli_limits *l);
/* Member "limits": {"processes": {"value": 2048, "mechanism": "cgroup1"}, ..., "budgets"}. */
void cli_limits_json(jw *w, const cli_limits *l);

#endif
