/* SPDX-License-Identifier: MIT */
/*
 * dsb_server_run(): MCP over a pair of descriptors (the stdio transport). One thread reads,
 * parses and answers everything but tools/call itself, so the lifecycle and discovery are
 * always prompt; each tools/call runs on its own thread (calls.c).
 *
 * Two eras are served side by side (meta.c). A 2026-07-28 request carries its version and the
 * client's capabilities in its _meta and is answered on its own: server/discover, tools/list,
 * tools/call, whether or not anything came before it. A 2025 client opens with initialize
 * (2025-06-18 or 2025-11-25: the client's version when we serve it, else our newest of the two)
 * and is then served as that handshake said; before it only ping is answered.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dsb/context.h>
#include <dsb/dsb.h>
#include <dsb/policy.h>
#include <dsb/session.h>

#include "../confine/confine.h"
#include "../context/context.h"
#include "server.h"

/*
 * DSH puts its tools' sections in the system prompt and the policy in a snapshot after them:
 * the instructions carry both, the snapshot logged as shown (dsh-compat §9.3). 0 with
 * *@ret_text; 1 when the snapshot failed, answered to @id; -ENOMEM.
 */
static int instructions_of(server *srv, json_t *id, const char *method, char **ret_text)
{
	_cleanup_free_ char *snap = NULL;
	dsb_error err = {0};
	if (server_snapshot_text(srv, true, &snap, &err) < 0) {
		server_log(srv, LEVEL_ERROR, "%s: %s", method, err.message);
		int r = rpc_write_error(&srv->out, id, RPC_INTERNAL_ERROR, err.message);
		return r == -ENOMEM ? r : 1;
	}
	return asprintf(ret_text, "%s\n\n%s", tools_prompt_sections(), snap) < 0 ? -ENOMEM : 0;
}

static int on_initialize(server *srv, json_t *id, const json_t *params)
{
	const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
	if (!asked)
		return rpc_write_error(&srv->out, id, RPC_INVALID_PARAMS,
				       "Invalid params: protocolVersion must be a string");
	/*
	 * The client's version when we speak it, else our newest (MCP lifecycle): of the 2025
	 * versions, since initialize is how that era opens (2026-07-28 has no handshake).
	 */
	const char *version = server_versions[1];
	for (size_t i = 1; server_versions[i]; i++)
		if (strcmp(asked, server_versions[i]) == 0)
			version = server_versions[i];

	_cleanup_free_ char *instructions = NULL;
	int r = instructions_of(srv, id, "initialize", &instructions);
	if (r != 0)
		return r < 0 ? r : 0;
	json_t *result =
		json_pack("{s:s, s:{s:{}, s:{}}, s:{s:s, s:s}, s:s}", "protocolVersion", version,
			  "capabilities", "tools", "logging", "serverInfo", "name", "dsh-sandbox",
			  "version", dsb_version(), "instructions", instructions);
	if (!result)
		return -ENOMEM;
	srv->initialized = true;
	srv->client_elicits = elicit_supported(json_object_get(params, "capabilities"));
	return rpc_write_result(&srv->out, id, result);
}

/* server/discover (2026-07-28): the versions, capabilities and instructions, at any time. */
static int on_discover(server *srv, json_t *id)
{
	_cleanup_free_ char *instructions = NULL;
	int r = instructions_of(srv, id, "server/discover", &instructions);
	if (r != 0)
		return r < 0 ? r : 0;
	/*
	 * The instructions end with the session's policy, which another process may switch at
	 * any time: never cached, and not shared beyond this client.
	 */
	json_t *result = meta_result(json_pack("{s:o, s:{s:{}, s:{}}, s:s, s:i, s:s}",
					       "supportedVersions", meta_supported(),
					       "capabilities", "tools", "logging", "instructions",
					       instructions, "ttlMs", 0, "cacheScope", "private"));
	return result ? rpc_write_result(&srv->out, id, result) : -ENOMEM;
}

/* tools/list; in 2026-07-28, with how long it may be cached: the tools never change. */
static int on_tools_list(server *srv, json_t *id, bool modern)
{
	json_t *result =
		modern ? meta_result(json_pack("{s:o, s:i, s:s}", "tools", tools_list(), "ttlMs",
					       SERVER_TOOLS_TTL_MS, "cacheScope", "public"))
		       : json_pack("{s:o}", "tools", tools_list());
	return result ? rpc_write_result(&srv->out, id, result) : -ENOMEM;
}

/*
 * A 2026 retry's requestState and inputResponses: 0 with *@ret_approval (borrowed; NULL when
 * this is no retry or the answer is missing, which asks again); 1 when they are refused,
 * answered to @id; -ENOMEM.
 */
static int redeem(server *srv, json_t *id, const char *name, json_t *params, json_t **ret_approval)
{
	*ret_approval = NULL;
	json_t *responses = json_object_get(params, "inputResponses");
	const json_t *state = json_object_get(params, "requestState");
	const char *why = NULL;
	if (responses && !json_is_object(responses))
		why = "Invalid params: inputResponses must be an object";
	else if (state && !json_is_string(state))
		why = "Invalid params: requestState must be a string";
	else if (responses && !state)
		why = "Invalid params: inputResponses must come with the requestState they answer";
	else if (state) {
		int r = state_redeem(srv, json_string_value(state), name,
				     json_object_get(params, "arguments"), &why);
		if (r < 0)
			return r;
	}
	if (why) {
		int r = rpc_write_error(&srv->out, id, RPC_INVALID_PARAMS, why);
		return r == -ENOMEM ? r : 1;
	}
	*ret_approval = json_object_get(responses, "approval");
	return 0;
}

static int on_tools_call(server *srv, json_t *id, json_t *params, const request_meta *meta)
{
	const char *name = json_string_value(json_object_get(params, "name"));
	if (!name)
		return rpc_write_error(&srv->out, id, RPC_INVALID_PARAMS,
				       "Invalid params: name must be a string");
	/* An unknown tool is a protocol error in MCP (DSH's model would read UNKNOWN_TOOL). */
	if (tools_find(name) == _TOOL_INVALID) {
		_cleanup_free_ char *message = NULL;
		if (asprintf(&message, "Unknown tool: %s", name) < 0)
			return -ENOMEM;
		return rpc_write_error(&srv->out, id, RPC_INVALID_PARAMS, message);
	}
	json_t *approval = NULL;
	if (meta->modern) {
		int r = redeem(srv, id, name, params, &approval);
		if (r != 0)
			return r < 0 ? r : 0;
	}
	int r = calls_start(srv, id, params, meta, approval);
	if (r == -EBUSY)
		return rpc_write_error(&srv->out, id, RPC_INTERNAL_ERROR,
				       "Internal error: too many tool calls at once");
	if (r < 0) {
		server_log(srv, LEVEL_ERROR, "tools/call: cannot start a thread: %s", strerror(-r));
		return rpc_write_error(&srv->out, id, RPC_INTERNAL_ERROR,
				       "Internal error: cannot start the call");
	}
	return 0;
}

static int on_set_level(server *srv, json_t *id, const json_t *params)
{
	server_level level =
		server_level_from_string(json_string_value(json_object_get(params, "level")));
	if (level != _LEVEL_NONE) {
		atomic_store(&srv->level, (int)level);
		return rpc_write_result(&srv->out, id, json_object());
	}
	return rpc_write_error(&srv->out, id, RPC_INVALID_PARAMS,
			       "Invalid params: level must be one of debug, info, notice, warning, "
			       "error, critical, alert, emergency");
}

/* A request of the 2026 era, its envelope read: answered on its own. */
static int on_modern_request(server *srv, const rpc_message *m, const request_meta *meta)
{
	if (strcmp(m->method, "server/discover") == 0)
		return on_discover(srv, m->id);
	if (strcmp(m->method, "tools/list") == 0)
		return on_tools_list(srv, m->id, true);
	if (strcmp(m->method, "tools/call") == 0)
		return on_tools_call(srv, m->id, m->params, meta);
	/* ping and logging/setLevel are gone from 2026-07-28, with the handshake. */
	return rpc_write_error(&srv->out, m->id, RPC_METHOD_NOT_FOUND, "Method not found");
}

static int on_request(server *srv, const rpc_message *m)
{
	json_t *id = m->id;
	const char *method = m->method;
	if (m->params && !json_is_object(m->params))
		return rpc_write_error(&srv->out, id, RPC_INVALID_PARAMS,
				       "Invalid params: params must be an object");
	/*
	 * The request's own _meta decides its era; server/discover is the 2026 era's alone, and
	 * initialize the 2025 era's, whatever their _meta holds.
	 */
	if (strcmp(method, "initialize") != 0 &&
	    (strcmp(method, "server/discover") == 0 || meta_claimed(m->params))) {
		request_meta meta;
		int r = meta_read(srv, id, m->params, &meta);
		if (r != 0)
			return r < 0 ? r : 0;
		return on_modern_request(srv, m, &meta);
	}
	if (strcmp(method, "ping") == 0)
		return rpc_write_result(&srv->out, id, json_object());
	if (strcmp(method, "initialize") == 0) {
		if (srv->initialized)
			return rpc_write_error(&srv->out, id, RPC_INVALID_REQUEST,
					       "Invalid Request: already initialized");
		return on_initialize(srv, id, m->params);
	}
	bool known = strcmp(method, "tools/list") == 0 || strcmp(method, "tools/call") == 0 ||
		     strcmp(method, "logging/setLevel") == 0;
	if (!known)
		return rpc_write_error(&srv->out, id, RPC_METHOD_NOT_FOUND, "Method not found");
	if (!srv->initialized)
		return rpc_write_error(&srv->out, id, RPC_INVALID_REQUEST,
				       "Invalid Request: not initialized (send initialize first)");
	if (strcmp(method, "tools/list") == 0)
		return on_tools_list(srv, id, false);
	if (strcmp(method, "tools/call") == 0) {
		const request_meta legacy = {.log_level = _LEVEL_NONE};
		return on_tools_call(srv, id, m->params, &legacy);
	}
	return on_set_level(srv, id, m->params);
}

static void on_notification(server *srv, const rpc_message *m)
{
	/* Never answered, whatever they hold. */
	if (strcmp(m->method, "notifications/cancelled") == 0) {
		const json_t *request = json_object_get(m->params, "requestId");
		if (json_is_string(request) || json_is_integer(request))
			calls_cancel(srv, request);
	}
}

static int on_line(server *srv, const char *line, size_t len)
{
	/* Blank lines carry nothing; they are not messages. */
	size_t i = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t'))
		i++;
	if (i == len)
		return 0;
	rpc_message m;
	int r = rpc_parse(line, len, &m);
	if (r < 0)
		return r;
	switch (m.kind) {
	case RPC_INVALID:
		r = rpc_write_error(&srv->out, m.id, m.error_code, m.error_message);
		break;
	case RPC_REQUEST:
		r = on_request(srv, &m);
		break;
	case RPC_NOTIFICATION:
		on_notification(srv, &m);
		break;
	case RPC_RESPONSE:
		/* An answer to a question of ours (elicitation); one to none is dropped. */
		elicit_response(srv, m.id, m.json);
		break;
	default:
		break;
	}
	rpc_message_done(&m);
	/* The client gone is the input's business: it ends, and so do we. */
	return r == -EPIPE ? 0 : r;
}

/* Reads and answers until the input ends (*@ret_ended) or the stop descriptor fires. */
static int serve(server *srv, int in_fd, size_t max, bool *ret_ended, dsb_error *reterr)
{
	frame_reader f;
	if (frame_init(&f, max) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	int r = 0;
	for (bool end = false; !end && r >= 0;) {
		struct pollfd p[2] = {{.fd = in_fd, .events = POLLIN},
				      {.fd = srv->options->stop_fd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = dsb_fail_errno(reterr, DSB_E_IO, errno, "poll");
			break;
		}
		if (p[1].revents)
			break;
		if (!p[0].revents)
			continue;
		int n = frame_fill(&f, in_fd);
		if (n < 0) {
			r = dsb_fail_errno(reterr, DSB_E_IO, -n, "reading the input");
			break;
		}
		for (;;) {
			const char *line;
			size_t len;
			frame_result fr = frame_next(&f, &line, &len);
			if (fr == FRAME_NEED_MORE)
				break;
			if (fr == FRAME_END) {
				end = *ret_ended = true;
				break;
			}
			if (fr == FRAME_TOO_LONG) {
				char message[128];
				(void)snprintf(message, sizeof(message),
					       "Invalid Request: message longer than %zu bytes",
					       max);
				(void)rpc_write_error(&srv->out, NULL, RPC_INVALID_REQUEST,
						      message);
				continue;
			}
			if (on_line(srv, line, len) < 0) {
				r = dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
				break;
			}
		}
	}
	frame_done(&f);
	return r;
}

/*
 * The session and the configuration load now, with the network access level over it, so that
 * a wrong one fails at the start rather than in every call.
 */
static int check_setup(server *srv, dsb_error *reterr)
{
	dsb_config *cfg = NULL;
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	int r = dsb_call_load_config(&srv->setup, &cfg, reterr);
	if (r >= 0 && srv->options->network != _DSB_NETWORK_ACCESS_INVALID)
		r = dsb_config_set_network_access(cfg, srv->options->network, reterr);
	if (r >= 0)
		r = dsb_store_open(srv->setup.store_path, &store, reterr);
	if (r >= 0)
		r = dsb_session_open(store, srv->session, &session, reterr);
	dsb_session_free(session);
	dsb_store_free(store);
	dsb_config_free(cfg);
	return r;
}

/* dsb_server_run() with its arguments checked. */
static int serve_session(const dsb_call_setup *setup, const dsb_server_options *options, int in_fd,
			 int out_fd, dsb_error *reterr)
{
	server srv = {
		.setup = setup ? *setup : (dsb_call_setup){0},
		.session = options->session,
		.options = options,
		.out = {.fd = out_fd},
		.granted = _DSB_MODE_INVALID,
	};
	atomic_init(&srv.level, _LEVEL_NONE);
	bool input_ended = false;
	int r = check_setup(&srv, reterr);
	if (r < 0)
		return r;
	r = dsb_observations_new(&srv.observations, reterr);
	if (r < 0)
		return r;
	r = dsb_jobs_new(NULL, &srv.jobs, reterr);
	if (r < 0) {
		dsb_observations_free(srv.observations);
		return r;
	}
	dsb_jobs_set_notice(srv.jobs, calls_notice, &srv);
	int e = pthread_mutex_init(&srv.out.lock, NULL);
	if (e == 0 && (e = pthread_mutex_init(&srv.lock, NULL)) != 0)
		(void)pthread_mutex_destroy(&srv.out.lock);
	if (e == 0 && (e = pthread_cond_init(&srv.changed, NULL)) != 0) {
		(void)pthread_mutex_destroy(&srv.lock);
		(void)pthread_mutex_destroy(&srv.out.lock);
	}
	if (e != 0) {
		dsb_jobs_free(srv.jobs);
		dsb_observations_free(srv.observations);
		return dsb_fail_errno(reterr, DSB_E_NO_MEMORY, e, "cannot make a lock");
	}
	e = -calls_start_progress(&srv);
	if (e != 0) {
		r = dsb_fail_errno(reterr, DSB_E_NO_MEMORY, e, "cannot start a thread");
	} else {
		size_t max = options->max_message_bytes ? options->max_message_bytes
							: DSB_SERVER_MAX_MESSAGE_BYTES;
		r = serve(&srv, in_fd, max, &input_ended, reterr);
	}
	/*
	 * The input ended: a client that wrote its last request and closed it (a script's pipe,
	 * the MCP stdio shutdown) still reads the answers of calls that end soon.
	 */
	if (input_ended && r >= 0) {
		size_t left, finished = calls_finish(&srv, SERVER_INPUT_END_GRACE_MS, &left);
		if (finished || left)
			server_log(&srv, LEVEL_INFO,
				   "input ended: %zu running call(s) answered, %zu cancelled",
				   finished, left);
	}
	/* Input ended, or told to stop: every call is cancelled and waited for, then every job
	 * is killed and waited for (its whole process tree). */
	calls_cancel_all(&srv);
	dsb_jobs_free(srv.jobs);
	calls_stop_progress(&srv);
	calls_drop_notices(&srv);
	state_drop_all(&srv);
	free(srv.log_path);
	(void)pthread_cond_destroy(&srv.changed);
	(void)pthread_mutex_destroy(&srv.lock);
	(void)pthread_mutex_destroy(&srv.out.lock);
	dsb_observations_free(srv.observations);
	return r;
}

int dsb_server_run(const dsb_call_setup *setup, const dsb_server_options *options, int in_fd,
		   int out_fd, dsb_error *reterr)
{
	if (!options || !options->session || in_fd < 0 || out_fd < 0)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_server_run: missing argument");
	/*
	 * Before any thread and while small: every call's monitor is then forked from this
	 * spawner rather than from the threaded server (src/confine/spawner.c). Without one,
	 * each call forks its own, as any threaded caller does.
	 */
	if (spawner_start() < 0 && options->log)
		options->log(options->log_userdata,
			     "no spawner: each call forks its monitor from the server");
	int r = serve_session(setup, options, in_fd, out_fd, reterr);
	spawner_stop();
	return r;
}
