/* SPDX-License-Identifier: MIT */
/*
 * The command line's one description: every option once, every command with the synopsis that
 * names its options. getopt's tables, the usage texts, --help and the shell completions
 * (completions.c) are all made from it, so that none of them can disagree with another.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* One option, one command a line or a few: read as tables, so not reflowed. */
/* clang-format off */
const cli_option cli_options[_CLI_OPT_MAX] = {
	[CLI_OPT_CONFIG] = {"config", "FILE", CLI_KIND_FILE, "the configuration file"},
	[CLI_OPT_STORE] = {"store", "DIR", CLI_KIND_DIR, "the session store's directory"},
	[CLI_OPT_HELP] = {"help", NULL, CLI_KIND_NONE, "print this help"},
	[CLI_OPT_VERSION] = {"version", NULL, CLI_KIND_NONE, "print the version"},
	[CLI_OPT_SESSION] = {"session", "ID|PATH", CLI_KIND_SESSION,
			     "the session, by id or by its log's path"},
	[CLI_OPT_MODE] = {"mode", "MODE", CLI_KIND_MODE,
			  "the sandbox mode of a call without a session (policy: over the "
			  "session's)"},
	[CLI_OPT_WORKSPACE] = {"workspace", "DIR", CLI_KIND_DIR,
			       "the workspace root of a call without a session"},
	[CLI_OPT_WORKDIR] = {"workdir", "DIR", CLI_KIND_DIR, "the directory the command starts in"},
	[CLI_OPT_CWD] = {"cwd", "DIR", CLI_KIND_DIR, "the new session's directory"},
	[CLI_OPT_TIMEOUT] = {"timeout", "DURATION", CLI_KIND_TEXT,
			     "the command's timeout: milliseconds, or 500ms, 30s, 2m (exec: 0 for "
			     "none)"},
	[CLI_OPT_BACKEND] = {"backend", "bwrap|landlock", CLI_KIND_BACKEND,
			     "the sandbox backend to use"},
	[CLI_OPT_NETWORK] = {"network", "full|none|allowlist", CLI_KIND_NETWORK,
			     "the network access, over network.access"},
	[CLI_OPT_SANDBOX_PERMISSIONS] = {"sandbox-permissions", "MODE", CLI_KIND_MODE,
					 "a wider mode for this call, if approved"},
	[CLI_OPT_JUSTIFICATION] = {"justification", "TEXT", CLI_KIND_TEXT,
				   "why the wider mode is needed"},
	[CLI_OPT_CALL_ID] = {"call-id", "ID", CLI_KIND_TEXT, "the tool call's id"},
	[CLI_OPT_JSON] = {"json", NULL, CLI_KIND_NONE, "print JSON"},
	[CLI_OPT_APPEND] = {"append", NULL, CLI_KIND_NONE, "log the snapshot that is printed"},
	[CLI_OPT_FRESH] = {"fresh", NULL, CLI_KIND_NONE, "probe again, not the cached verdict"},
	[CLI_OPT_OLD] = {"old", "TEXT", CLI_KIND_TEXT, "edit: the text to replace"},
	[CLI_OPT_NEW] = {"new", "TEXT", CLI_KIND_TEXT, "edit: its replacement"},
	[CLI_OPT_ALL] = {"all", NULL, CLI_KIND_NONE, "edit: replace every occurrence"},
	[CLI_OPT_RO] = {"ro", "PATH", CLI_KIND_FILE, "grant reading PATH"},
	[CLI_OPT_RW] = {"rw", "PATH", CLI_KIND_FILE, "grant reading and writing PATH"},
	[CLI_OPT_PROBE] = {"probe", NULL, CLI_KIND_NONE, "report how fully Landlock enforces"},
	[CLI_OPT_MAX_PROCESSES] = {"max-processes", "N", CLI_KIND_TEXT,
				   "the most processes and threads a call may have, over "
				   "limits.processes (0: none)"},
	[CLI_OPT_MEMORY] = {"memory", "SIZE", CLI_KIND_TEXT,
			    "the most memory a call's processes may use (512M, 2G; 0: none), over "
			    "limits.memoryBytes"},
	[CLI_OPT_WRITABLE] = {"writable", "DIR", CLI_KIND_DIR,
			      "workspace-write may also write DIR (repeatable), beside "
			      "sandbox-policy.writableRoots"},
	[CLI_OPT_OLDER_THAN] = {"older-than", "DAYS", CLI_KIND_TEXT,
				"sessions whose log was last written more than DAYS days ago"},
	[CLI_OPT_VERBOSE] = {"verbose", NULL, CLI_KIND_NONE,
			     "tell each decision on stderr, one line each (-v; DSH_SANDBOX_DEBUG=1)"},
};

static const cli_verb session_verbs[] = {
	{"new", {CLI_KIND_NONE}},
	{"list", {CLI_KIND_NONE}},
	{"show", {CLI_KIND_SESSION}},
	{"log", {CLI_KIND_SESSION}},
	{"mode", {CLI_KIND_SESSION, CLI_KIND_MODE}},
	{"approval", {CLI_KIND_SESSION, CLI_KIND_APPROVAL}},
	{"rm", {CLI_KIND_SESSION}},
	{"prune", {CLI_KIND_NONE}},
	{NULL, {CLI_KIND_NONE}},
};

static const cli_verb fs_verbs[] = {
	{"write", {CLI_KIND_FILE}},
	{"edit", {CLI_KIND_FILE}},
	{"read", {CLI_KIND_FILE}},
	{NULL, {CLI_KIND_NONE}},
};

static int run_landlock_run(const cli_args *args)
{
	return cmd_landlock_run(&args->global, args->argc, args->argv);
}

const cli_command cli_commands[] = {
	{"policy",
	 "[--session] [--mode] [--workspace] [--writable]... [--network] [--max-processes]\n"
	 "          [--memory] [--config] [--json]",
	 "show the resolved policy and its writable roots",
	 NULL, CLI_KIND_NONE, 0, cmd_policy},
	{"session",
	 "new [--cwd] [--json] | list [--json] | show ID [--json] | log ID |\n"
	 "          mode ID MODE | approval ID ask|never | rm ID | prune --older-than",
	 "create, inspect and switch sessions (ID may be a log file's path)",
	 session_verbs, CLI_KIND_NONE, 0, cmd_session},
	{"permission", "[--session] [--config] [PRESET]",
	 "show or switch a session's permission preset (sandbox mode + approval policy)",
	 NULL, CLI_KIND_PRESET, 0, cmd_permission},
	{"context", "--session [--json] [--append] [--config]",
	 "the runtime-context snapshot to send the model now (nothing when unchanged)",
	 NULL, CLI_KIND_NONE, 0, cmd_context},
	{"exec",
	 "[--session | --mode] [--workspace] [--workdir] [--writable]...\n"
	 "          [--timeout] [--backend] [--network] [--max-processes] [--memory]\n"
	 "          [--config] [--verbose] [--sandbox-permissions --justification [--call-id]]\n"
	 "          -- ARGV...",
	 "run ARGV confined; its status, 124 on timeout, 125 when nothing could run",
	 NULL, CLI_KIND_COMMAND, CLI_IN_ORDER | CLI_STATUS_IS_THE_COMMANDS, cmd_exec},
	{"bash",
	 "[--session | --mode] [--workspace] [--workdir] [--writable]...\n"
	 "          [--timeout] [--backend] [--network] [--max-processes] [--memory]\n"
	 "          [--config] [--json] [--verbose]\n"
	 "          [--sandbox-permissions --justification [--call-id]] COMMAND",
	 "DSH's bash tool: bash -c COMMAND, printed exactly as the model sees it",
	 NULL, CLI_KIND_TEXT, 0, cmd_bash},
	{"explain",
	 "[--session | --mode] [--workspace] [--workdir] [--writable]...\n"
	 "          [--backend] [--network] [--max-processes] [--memory] [--config] [--json]\n"
	 "          -- ARGV...",
	 "how exec would confine ARGV and why, without running anything",
	 NULL, CLI_KIND_COMMAND, CLI_IN_ORDER, cmd_explain},
	{"fs",
	 "write|edit|read [--session | --mode] [--workspace] [--writable]... [--json]\n"
	 "          [--sandbox-permissions --justification [--call-id]] [--config]\n"
	 "          [--old --new [--all]] PATH     (write: the content on stdin)",
	 "DSH's write and edit tools (and read), fenced by the policy",
	 fs_verbs, CLI_KIND_NONE, 0, cmd_fs},
	{"serve",
	 "[--session | --cwd] [--writable]... [--network] [--max-processes] [--memory]\n"
	 "          [--config]",
	 "DSH's tools as an MCP server on stdin/stdout (a new session unless --session)",
	 NULL, CLI_KIND_NONE, 0, cmd_serve},
	{"probe", "[--fresh] [--json] [--network] [--max-processes] [--memory] [--config]",
	 "which backends confine here, with what enforcement, and which one is used",
	 NULL, CLI_KIND_NONE, 0, cmd_probe},
	{"landlock-run", "[--ro]... [--rw]... -- ARGV... | --probe",
	 "DSH's Landlock launcher contract, byte for byte",
	 NULL, CLI_KIND_COMMAND, CLI_OWN_ARGV, run_landlock_run},
	{"completions", "bash|zsh", "the shell's completion script",
	 NULL, CLI_KIND_SHELL, CLI_HIDDEN, cmd_completions},
	{NULL, NULL, NULL, NULL, CLI_KIND_NONE, 0, NULL},
};
/* clang-format on */

/* The tool before its command: its options are those its synopsis names, as a command's. */
static const cli_command tool = {
	"dsh-sandbox",
	"[--config] [--store] [--verbose] COMMAND [ARGS...]\n"
	"       dsh-sandbox --help | --version",
	NULL,
	NULL,
	CLI_KIND_NONE,
	CLI_IN_ORDER,
	NULL,
};

/* getopt's value for an option: above every character, so none is taken for a short option. */
#define OPT_VAL(opt) (0x100 + (int)(opt))

const cli_command *cli_find_command(const char *name)
{
	for (const cli_command *c = cli_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

/* The option @s spells ("--NAME", then anything but a name's letter), with its length. */
static cli_opt option_at(const char *s, size_t *ret_len)
{
	if (s[0] != '-' || s[1] != '-')
		return _CLI_OPT_INVALID;
	size_t n = 2;
	while (s[n] == '-' || (s[n] >= 'a' && s[n] <= 'z'))
		n++;
	for (int o = 0; o < _CLI_OPT_MAX; o++)
		if (strlen(cli_options[o].name) == n - 2 &&
		    strncmp(s + 2, cli_options[o].name, n - 2) == 0) {
			*ret_len = n;
			return (cli_opt)o;
		}
	return _CLI_OPT_INVALID;
}

size_t cli_command_options(const cli_command *cmd, cli_opt ret[_CLI_OPT_MAX])
{
	bool seen[_CLI_OPT_MAX] = {false};
	size_t n = 0;
	if (!cmd)
		cmd = &tool;
	for (const char *s = strstr(cmd->synopsis, "--"); s; s = strstr(s + 2, "--")) {
		size_t len;
		cli_opt o = option_at(s, &len);
		if (o != _CLI_OPT_INVALID && !seen[o]) {
			seen[o] = true;
			ret[n++] = o;
		}
	}
	if (!(cmd->flags & CLI_OWN_ARGV) && !seen[CLI_OPT_HELP])
		ret[n++] = CLI_OPT_HELP;
	return n;
}

/* @synopsis with each option followed by its value's name. */
static void print_synopsis(FILE *f, const char *synopsis)
{
	for (const char *s = synopsis; *s;) {
		size_t len;
		cli_opt o = option_at(s, &len);
		if (o == _CLI_OPT_INVALID) {
			fputc(*s++, f);
			continue;
		}
		fprintf(f, "--%s%s%s", cli_options[o].name, cli_options[o].arg ? " " : "",
			cli_options[o].arg ? cli_options[o].arg : "");
		s += len;
	}
}

void cli_print_usage(FILE *f, const cli_command *cmd)
{
	fputs("usage: dsh-sandbox ", f);
	if (cmd) {
		print_synopsis(f, "[--config] ");
		fprintf(f, "%s ", cmd->name);
		print_synopsis(f, cmd->synopsis);
		fputc('\n', f);
		return;
	}
	print_synopsis(f, tool.synopsis);
	fputs("\n\ncommands:\n", f);
	for (const cli_command *c = cli_commands; c->name; c++) {
		if (c->flags & CLI_HIDDEN)
			continue;
		fprintf(f, "  %s ", c->name);
		print_synopsis(f, c->synopsis);
		fprintf(f, "\n      %s\n", c->summary);
	}
	fprintf(f, "\n"
		   "MODE is one of read-only, workspace-write, danger-full-access.\n"
		   "The configuration is --config FILE, else $DSH_SANDBOX_CONFIG, else\n"
		   "$XDG_CONFIG_HOME/dsh-sandbox/config.yaml when it exists; DSH_PERMISSION_MODE\n"
		   "overrides its mode.\n");
}

void cli_print_help(const cli_command *cmd)
{
	cli_print_usage(stdout, cmd);
	if (!cmd)
		return;
	printf("\n%s\n\noptions:\n", cmd->summary);
	cli_opt opts[_CLI_OPT_MAX];
	size_t n = cli_command_options(cmd, opts);
	for (size_t i = 0; i < n; i++) {
		const cli_option *opt = &cli_options[opts[i]];
		int w = printf("  --%s%s%s", opt->name, opt->arg ? " " : "",
			       opt->arg ? opt->arg : "");
		printf("%*s%s\n", w < 30 ? 30 - w : 1, "", opt->help);
	}
}

__attribute__((format(printf, 2, 0))) static void vreport(const cli_command *cmd, const char *fmt,
							  va_list ap)
{
	fputs("dsh-sandbox: ", stderr);
	if (cmd)
		fprintf(stderr, "%s: ", cmd->name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(NULL, fmt, ap);
	va_end(ap);
}

int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(cmd, fmt, ap);
	va_end(ap);
	cli_print_usage(stderr, cmd);
	return cmd && (cmd->flags & CLI_STATUS_IS_THE_COMMANDS) ? CLI_EXIT_OWN_FAILURE
								: CLI_EXIT_USAGE;
}

/*
 * The edit distance of @a and @b: insertions, deletions, substitutions and transpositions of
 * two neighbours (optimal string alignment), at most CLI_NAME_MAX; a longer word is far.
 */
#define CLI_NAME_MAX 32
static size_t edit_distance(const char *a, const char *b)
{
	size_t m = strlen(a), n = strlen(b);
	if (m >= CLI_NAME_MAX || n >= CLI_NAME_MAX)
		return SIZE_MAX;
	size_t d[CLI_NAME_MAX + 1][CLI_NAME_MAX + 1];
	for (size_t i = 0; i <= m; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= n; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= m; i++)
		for (size_t j = 1; j <= n; j++) {
			size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[m][n];
}

/*
 * The name of @names (@n of them) that @given most likely meant: the one name it begins (a
 * word cut short), else the nearest within two edits (fewer than @given has letters, so that a
 * short word is not "near" everything); NULL when there is none.
 */
static const char *nearest(const char *given, const char *const *names, size_t n)
{
	const char *best = NULL, *prefixed = NULL;
	size_t best_d = 3, n_prefixed = 0, len = strlen(given);
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(given, names[i]);
		if (d < best_d && d < len) {
			best = names[i];
			best_d = d;
		}
		if (len > 0 && strncmp(names[i], given, len) == 0) {
			prefixed = names[i];
			n_prefixed++;
		}
	}
	return n_prefixed == 1 ? prefixed : best;
}

/* What follows a mistake before any command, instead of the whole usage. */
#define HELP_HINT "Run 'dsh-sandbox --help' for the commands and their options.\n"

/*
 * A mistake before any command: "dsh-sandbox: unknown WHAT 'GIVEN'", with "; did you mean
 * '@prefix@meant'?" when @meant, then one line to go on, not the whole usage: the typo is what
 * the person needs to see. Returns 2.
 */
static int unknown_hinted(const char *what, const char *given, const char *prefix,
			  const char *meant)
{
	if (meant)
		cli_error("unknown %s '%s'; did you mean '%s%s'?", what, given, prefix, meant);
	else
		cli_error("unknown %s '%s'", what, given);
	fputs(HELP_HINT, stderr);
	return CLI_EXIT_USAGE;
}

int cli_unknown_command(const char *name)
{
	const char *names[64];
	size_t n = 0;
	for (const cli_command *c = cli_commands; c->name && n < ELEMENTSOF(names); c++)
		if (!(c->flags & CLI_HIDDEN))
			names[n++] = c->name;
	return unknown_hinted("command", name, "", nearest(name, names, n));
}

/* The usage error of the unknown option @arg ("--NAME" or "--NAME=VALUE") of @cmd. */
static int unknown_option(const cli_command *cmd, const char *arg)
{
	const char *names[_CLI_OPT_MAX];
	cli_opt opts[_CLI_OPT_MAX];
	size_t n = cli_command_options(cmd, opts);
	for (size_t i = 0; i < n; i++)
		names[i] = cli_options[opts[i]].name;
	char given[CLI_NAME_MAX] = "";
	const char *meant = NULL;
	if (strncmp(arg, "--", 2) == 0) {
		(void)snprintf(given, sizeof(given), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
		meant = nearest(given, names, n);
	}
	if (cmd && meant)
		return cli_usage_error(cmd, "unknown option '%s'; did you mean '--%s'?", arg,
				       meant);
	if (cmd)
		return cli_usage_error(cmd, "unknown option '%s'", arg);
	/* Before any command: a command's option given too early, most likely. */
	return unknown_hinted("option", arg, "--", meant);
}

/* The subcommand @argv[1] names, the usage error when there is none; 1 after --help. */
static int parse_verb(const cli_command *cmd, int argc, char **argv, const cli_verb **ret)
{
	if (argc < 2)
		return -cli_usage_error(cmd, "no subcommand given");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		cli_print_help(cmd);
		return 1;
	}
	const char *names[16];
	size_t n = 0;
	for (const cli_verb *v = cmd->verbs; v->name; v++) {
		if (strcmp(argv[1], v->name) == 0) {
			*ret = v;
			return 0;
		}
		if (n < ELEMENTSOF(names))
			names[n++] = v->name;
	}
	const char *meant = nearest(argv[1], names, n);
	if (meant)
		return -cli_usage_error(cmd, "unknown subcommand '%s'; did you mean '%s'?", argv[1],
					meant);
	return -cli_usage_error(cmd, "unknown subcommand '%s'", argv[1]);
}

int cli_parse(const cli_command *cmd, const cli_global *global, int argc, char **argv,
	      cli_args *ret)
{
	const cli_command *c = cmd ? cmd : &tool;
	*ret = (cli_args){.cmd = cmd, .argc = argc, .argv = argv};
	if (global)
		ret->global = *global;
	if (c->flags & CLI_OWN_ARGV)
		return 0;
	if (c->verbs) {
		int r = parse_verb(cmd, argc, argv, &ret->verb);
		if (r != 0)
			return r;
		/* The subcommand is argv[0] of its own option parse. */
		argc--;
		argv++;
	}

	struct option longopts[_CLI_OPT_MAX + 1] = {0};
	cli_opt opts[_CLI_OPT_MAX];
	size_t n = cli_command_options(cmd, opts);
	for (size_t i = 0; i < n; i++) {
		const cli_option *o = &cli_options[opts[i]];
		longopts[i] = (struct option){o->name, o->arg ? required_argument : no_argument,
					      NULL, OPT_VAL(opts[i])};
	}
	/*
	 * ':' tells a missing value from an unknown option; '+' stops at the first operand; -v
	 * where --verbose is taken.
	 */
	bool verbose = false;
	for (size_t i = 0; i < n; i++)
		verbose |= opts[i] == CLI_OPT_VERBOSE;
	const char *shortopts =
		c->flags & CLI_IN_ORDER ? (verbose ? "+:hv" : "+:h") : (verbose ? ":hv" : ":h");
	optind = 0;
	opterr = 0;
	int k;
	while ((k = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		if (k == 'h' || k == OPT_VAL(CLI_OPT_HELP)) {
			cli_print_help(cmd);
			return 1;
		}
		if (k == 'v')
			k = OPT_VAL(CLI_OPT_VERBOSE);
		if (k == ':')
			return -cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		if (k < OPT_VAL(0) || k >= OPT_VAL(_CLI_OPT_MAX))
			return -unknown_option(cmd, argv[optind - 1]);
		ret->opt[k - OPT_VAL(0)] = optarg ? optarg : "";
		if (k == OPT_VAL(CLI_OPT_WRITABLE)) {
			size_t w = 0;
			while (ret->global.writable[w])
				w++;
			if (w == CLI_MAX_WRITABLE)
				return -cli_usage_error(cmd, "more than %d --writable options",
							CLI_MAX_WRITABLE);
			ret->global.writable[w] = optarg;
		}
	}
	if (ret->opt[CLI_OPT_CONFIG])
		ret->global.config_path = ret->opt[CLI_OPT_CONFIG];
	if (ret->opt[CLI_OPT_STORE])
		ret->global.store_path = ret->opt[CLI_OPT_STORE];
	/* DSH_SANDBOX_DEBUG set (to anything but "" and "0") is -v for every command. */
	const char *debug = getenv("DSH_SANDBOX_DEBUG");
	if (ret->opt[CLI_OPT_VERBOSE] || (debug && *debug && strcmp(debug, "0") != 0))
		ret->global.verbose = true;
	static const struct {
		cli_opt opt;
		dsb_limit limit;
	} limit_flags[] = {{CLI_OPT_MAX_PROCESSES, DSB_LIMIT_PROCESSES},
			   {CLI_OPT_MEMORY, DSB_LIMIT_MEMORY}};
	for (size_t i = 0; i < ELEMENTSOF(limit_flags); i++) {
		const char *v = ret->opt[limit_flags[i].opt];
		char origin[32];
		dsb_error err = {0};
		if (!v)
			continue;
		(void)snprintf(origin, sizeof(origin), "--%s",
			       cli_options[limit_flags[i].opt].name);
		dsb_limit l = limit_flags[i].limit;
		if (dsb_limit_parse(l, v, origin, &ret->global.limits.value[l], &err) < 0)
			return -cli_usage_error(cmd, "%s", err.message);
		ret->global.limits.set |= 1u << l;
	}
	ret->argc = argc - optind;
	ret->argv = argv + optind;
	return 0;
}
