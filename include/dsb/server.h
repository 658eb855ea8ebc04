/* SPDX-License-Identifier: MIT */
/*
 * The server piece: DSH's tools (bash, write, edit, read) as an MCP server over a pair of
 * descriptors, the stdio transport of MCP 2025-06-18 and 2025-11-25: one JSON-RPC 2.0 message
 * per line, nothing else on the output. Every tool call is a dsb_call (include/dsb/call.h) in
 * a session, run on a thread of its own, so a slow command never holds up a ping or another
 * call; a notifications/cancelled request cancels its call, which then gets no response. See
 * docs/design/server.md.
 *
 *	dsb_call_setup setup = {.store_path = store};
 *	dsb_server_options opts = DSB_SERVER_OPTIONS_INIT;
 *	opts.session = session_id;
 *	opts.stop_fd = signal_fd;
 *	r = dsb_server_run(&setup, &opts, STDIN_FILENO, STDOUT_FILENO, &err);
 *
 * Lifecycle: dsb_server_run() serves until the input ends or @stop_fd polls readable, then
 * cancels every call still running, waits for them to end (each within its bash.graceMs) and
 * returns. Every process a call started is ended by the call, and ended too if this process is
 * killed first (src/confine/tree.c, docs/design/server.md).
 *
 * Thread-safety: dsb_server_run() makes threads of its own and returns after they are gone.
 * One server per session: two servers on one session keep apart records of what was read
 * (DSH's observation rule), as two DSH agents would.
 */
#ifndef DSB_SERVER_H
#define DSB_SERVER_H

#include <stddef.h>

#include <dsb/call.h>
#include <dsb/error.h>

/*
 * The longest message the server reads, in bytes, newline excluded: a longer line is refused
 * with a JSON-RPC error (id null) and skipped to its newline without being held in memory.
 */
#define DSB_SERVER_MAX_MESSAGE_BYTES ((size_t)4 * 1024 * 1024)

/* Told each diagnostic line (no newline): where a front end writes its log. */
typedef void (*dsb_server_log_fn)(void *userdata, const char *message);

typedef struct dsb_server_options {
	/* The session the calls run in: an id in the store or a log's path. Required. */
	const char *session;
	/* A descriptor that polls readable when the server must stop (a signalfd); -1: none. */
	int stop_fd;
	/* Diagnostics (NULL: dropped). Never protocol: the output carries only that. */
	dsb_server_log_fn log;
	void *log_userdata;
	/* 0: DSB_SERVER_MAX_MESSAGE_BYTES. */
	size_t max_message_bytes;
	/*
	 * network.access for every call over the configured one (dsb_call_request.network), or
	 * _DSB_NETWORK_ACCESS_INVALID: the configuration's.
	 */
	dsb_network_access network;
} dsb_server_options;

#define DSB_SERVER_OPTIONS_INIT                                        \
	{                                                              \
		.stop_fd = -1, .network = _DSB_NETWORK_ACCESS_INVALID, \
	}

/*
 * Serves MCP on @in_fd (read) and @out_fd (written, one message per line) for the session of
 * @options, with the configuration and store of @setup, until @in_fd ends or @options->stop_fd
 * polls readable. Returns 0 then; -code when the server cannot start (the session does not
 * open, DSB_E_SESSION_NOT_FOUND or DSB_E_SESSION_INVALID; the configuration does not load;
 * no memory or thread) or reading @in_fd fails (DSB_E_IO). A failure to write @out_fd (the
 * client gone) is not an error: the server goes on until its input ends. Borrows everything;
 * the descriptors are not closed. Blocks; see the top of this file for threads.
 */
DSB_API int dsb_server_run(const dsb_call_setup *setup, const dsb_server_options *options,
			   int in_fd, int out_fd, dsb_error *reterr);

#endif
