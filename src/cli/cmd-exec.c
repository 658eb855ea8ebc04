/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox exec: run ARGV under the resolved policy, confined, with stdin, stdout and stderr
 * passed straight through. Exit status: the command's; 125 when dsh-sandbox failed or no
 * sandbox can enforce the mode (then nothing ran).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../confine/confine.h"
#include "../core/core.h"
#include "../policy/policy.h"
#include "cli.h"

/* dsh-sandbox's own failures: the command's statuses take everything else (DESIGN.md). */
#define EXEC_FAILED 125

typedef struct exec_args {
	const char *session;
	const char *mode;
	const char *workspace;
	const char *backend;
	char **argv;
} exec_args;

static int parse_args(cli_global *global, const cli_command *cmd, int argc, char **argv,
		      exec_args *args)
{
	static const struct option options[] = {
		{"session", required_argument, NULL, 's'},
		{"mode", required_argument, NULL, 'm'},
		{"workspace", required_argument, NULL, 'w'},
		{"backend", required_argument, NULL, 'b'},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	opterr = 0;
	/* '+': the command's own options are not ours. */
	while ((c = getopt_long(argc, argv, "+:h", options, NULL)) != -1) {
		switch (c) {
		case 's':
			args->session = optarg;
			break;
		case 'm':
			args->mode = optarg;
			break;
		case 'w':
			args->workspace = optarg;
			break;
		case 'b':
			args->backend = optarg;
			break;
		case 'c':
			global->config_path = optarg;
			break;
		case 'h':
			cli_print_usage(stdout, cmd);
			return 1;
		case ':':
			return -cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
		default:
			return -cli_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (args->session && args->mode)
		return -cli_usage_error(cmd, "--session and --mode do not go together");
	if (optind >= argc)
		return -cli_usage_error(cmd,
					"no command given (dsh-sandbox exec [OPTIONS] -- ARGV...)");
	args->argv = argv + optind;
	return 0;
}

int cmd_exec(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("exec");
	exec_args args = {0};
	int r = parse_args(global, cmd, argc, argv, &args);
	if (r != 0)
		return r > 0 ? 0 : -r;

	dsb_error err = {0};
	dsb_backend backend = _DSB_BACKEND_INVALID;
	if (args.backend && (backend = dsb_backend_from_string(args.backend)) < 0)
		return cli_usage_error(cmd,
				       "--backend: invalid backend \"%s\" (accepted: bwrap, "
				       "landlock)",
				       args.backend);

	dsb_config *cfg = NULL;
	dsb_provider *provider = NULL;
	dsb_exec_policy resolved = {0};
	dsb_confined confined = {0};
	_cleanup_free_ char *cache = NULL;
	pid_t pid = -1;

	cli_policy_args pa = {args.session, args.mode, args.workspace};
	r = cli_resolve_policy(global, &pa, &cfg, &resolved, &err);
	if (r == -DSB_E_INVALID_ARGS) {
		cli_report(&err);
		return CLI_EXIT_USAGE;
	}
	if (r >= 0 && backend >= 0) {
		/* One backend, as the user asked: the chain is that backend alone. */
		cfg->backends[0] = backend;
		cfg->n_backends = 1;
	}

	if (r >= 0 && resolved.mode == DSB_MODE_DANGER_FULL_ACCESS) {
		/* danger-full-access never reaches the provider (spec §1.1). */
		confined.argv = strv_copy(args.argv);
		if (!confined.argv)
			r = dsb_fail(&err, DSB_E_NO_MEMORY, "out of memory");
	} else if (r >= 0) {
		cache = cli_cache_dir(global);
		r = dsb_provider_new(cfg, cache, &provider, &err);
		if (r >= 0)
			r = dsb_provider_confine(provider, &resolved, args.argv, &confined, &err);
	}
	if (r >= 0)
		r = dsb_confined_spawn(&confined, resolved.mode, NULL, &pid, &err);

	int status = EXEC_FAILED;
	if (r < 0)
		fprintf(stderr, "dsh-sandbox: %s\n", err.message);
	else {
		/* The child owns the terminal's signals; we only wait and pass its status on. */
		signal(SIGINT, SIG_IGN);
		signal(SIGQUIT, SIG_IGN);
		int ws;
		if (spawn_wait(pid, 0, &ws) < 0)
			fprintf(stderr, "dsh-sandbox: cannot wait for the command\n");
		else if (WIFEXITED(ws))
			status = WEXITSTATUS(ws);
		else if (WIFSIGNALED(ws))
			status = 128 + WTERMSIG(ws);
	}
	dsb_confined_done(&confined);
	dsb_exec_policy_done(&resolved);
	dsb_provider_free(provider);
	dsb_config_free(cfg);
	return status;
}
