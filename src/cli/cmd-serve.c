/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox serve: DSH's tools as an MCP server on stdin and stdout (include/dsb/server.h),
 * in a session named with --session or made now as `session new` makes one. stdout carries
 * the protocol and nothing else; diagnostics go to stderr. SIGINT, SIGTERM and SIGHUP end the
 * server as the end of its input does: every call cancelled, then exit 0.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <dsb/server.h>

#include "../core/core.h"
#include "cli.h"

static void log_line(void *userdata, const char *message)
{
	(void)userdata;
	(void)fprintf(stderr, "dsh-sandbox serve: %s\n", message);
}

/* A session made for this server: its private /tmp goes at the end, its log stays. */
typedef struct own_session {
	dsb_store *store;
	dsb_session *session;
} own_session;

static void own_session_end(own_session *o)
{
	dsb_error err = {0};
	if (o->session && dsb_session_tmp_remove(o->store, o->session, &err) < 0)
		(void)fprintf(stderr, "dsh-sandbox serve: %s\n", err.message);
	dsb_session_free(o->session);
	dsb_store_free(o->store);
}

int cmd_serve(const cli_args *args)
{
	const cli_global *global = &args->global;
	const char *session_arg = args->opt[CLI_OPT_SESSION], *cwd = args->opt[CLI_OPT_CWD];
	dsb_error err = {0};
	if (cwd && !*cwd)
		return cli_usage_error(args->cmd, "--cwd: empty path");
	if (args->argc > 0)
		return cli_usage_error(args->cmd, "unexpected argument '%s'", args->argv[0]);
	if (session_arg && cwd)
		return cli_usage_error(args->cmd, "--session and --cwd do not go together");
	dsb_network_access network = _DSB_NETWORK_ACCESS_INVALID;
	const char *network_arg = args->opt[CLI_OPT_NETWORK];
	if (network_arg && cli_parse_network(network_arg, &network, &err) < 0)
		return cli_usage_error(args->cmd, "%s", err.message);
	if (cli_check_config_option(global, &err) < 0)
		return cli_report(&err);
	if (network != _DSB_NETWORK_ACCESS_INVALID) {
		/* An allowlist with no allowed host fails now, before a session is made for it. */
		dsb_config *cfg = NULL;
		int r = cli_load_config(global, &cfg, &err);
		if (r >= 0)
			r = dsb_config_set_network_access(cfg, network, &err);
		dsb_config_free(cfg);
		if (r < 0)
			return cli_report(&err);
	}

	/* A session of our own unless one is named, pinned as `session new` pins it. */
	_cleanup_(own_session_end) own_session own = {0};
	if (!session_arg) {
		if (cli_session_new(global, cwd, &own.store, &own.session, &err) < 0)
			return cli_report(&err);
		(void)fprintf(stderr, "dsh-sandbox serve: session %s (%s)\n",
			      dsb_session_id(own.session), dsb_session_path(own.session));
	}

	/*
	 * The signals that end a stdio server (a client sends SIGINT, then SIGTERM, then
	 * SIGKILL) are taken through a descriptor the server polls: blocked here, before any
	 * thread exists, so every thread inherits the mask and none dies of them. Commands get
	 * a clean mask and dispositions when they start (src/confine/spawn.c). A client gone
	 * is EPIPE on a write, never SIGPIPE.
	 */
	sigset_t stop;
	(void)sigemptyset(&stop);
	(void)sigaddset(&stop, SIGINT);
	(void)sigaddset(&stop, SIGTERM);
	(void)sigaddset(&stop, SIGHUP);
	(void)signal(SIGPIPE, SIG_IGN);
	_cleanup_close_ int stop_fd = -1;
	if (pthread_sigmask(SIG_BLOCK, &stop, NULL) != 0 ||
	    (stop_fd = signalfd(-1, &stop, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		(void)dsb_fail_errno(&err, DSB_E_IO, errno, "cannot take the stop signals");
		return cli_report(&err);
	}

	/*
	 * A thread per call would get a malloc arena each (up to eight per core), kept resident
	 * after the call: calls mostly wait on their command, so two arenas hold them all.
	 */
	(void)mallopt(M_ARENA_MAX, 2);

	_cleanup_free_ char *cache = cli_cache_dir(global);
	dsb_call_setup setup = cli_setup(global);
	setup.cache_dir = cache;
	dsb_server_options opts = DSB_SERVER_OPTIONS_INIT;
	opts.session = session_arg ? session_arg : dsb_session_id(own.session);
	opts.stop_fd = stop_fd;
	opts.log = log_line;
	opts.network = network;
	/*
	 * A session made for this server ends with it (own_session_end): its log stays, the
	 * record of what it decided; its private /tmp goes. A named session keeps its own for
	 * the next front end.
	 */
	int r = dsb_server_run(&setup, &opts, STDIN_FILENO, STDOUT_FILENO, &err);
	if (r < 0)
		return cli_report(&err);
	return 0;
}
