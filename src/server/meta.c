/* SPDX-License-Identifier: MIT */
/*
 * The eras of MCP. A 2026-07-28 request carries its protocol version and the client's
 * capabilities in its own _meta and is served on its own, whatever came before it on the
 * connection; a 2025 client opens with initialize and is served as that handshake decided. A
 * dual-era server tells them apart by the request (MCP 2026-07-28, versioning: "a request
 * carrying modern per-request _meta is served statelessly"), so both may share one process.
 *
 * Here: what a request's envelope says, its errors (-32602 for a malformed envelope, -32022
 * with the versions served for a version that is not), and what every 2026 result carries
 * (resultType, the server's identity in _meta).
 */
#include <errno.h>
#include <string.h>

#include <dsb/dsb.h>

#include "server.h"

#define META_VERSION	  "io.modelcontextprotocol/protocolVersion"
#define META_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define META_CLIENT_INFO  "io.modelcontextprotocol/clientInfo"
#define META_LOG_LEVEL	  "io.modelcontextprotocol/logLevel"
#define META_SERVER_INFO  "io.modelcontextprotocol/serverInfo"

const char *const server_versions[] = {SERVER_MODERN_VERSION, "2025-11-25", "2025-06-18", NULL};

json_t *meta_supported(void)
{
	json_t *list = json_array();
	for (size_t i = 0; list && server_versions[i]; i++)
		if (json_array_append_new(list, json_string(server_versions[i])) < 0) {
			json_decref(list);
			return NULL;
		}
	return list;
}

bool meta_claimed(const json_t *params)
{
	const json_t *meta = json_object_get(params, "_meta");
	return json_object_get(meta, META_VERSION) || json_object_get(meta, META_CAPABILITIES);
}

/* A malformed envelope (-32602), answered: 1, or -ENOMEM. */
static int invalid(server *srv, json_t *id, const char *message)
{
	int r = rpc_write_error(&srv->out, id, RPC_INVALID_PARAMS, message);
	return r == -ENOMEM ? r : 1;
}

/* -32022, naming what we serve and what was asked, answered: 1, or -ENOMEM. */
static int unsupported(server *srv, json_t *id, const json_t *requested)
{
	json_t *data = json_pack("{s:o, s:O}", "supported", meta_supported(), "requested",
				 (json_t *)requested);
	if (!data)
		return -ENOMEM;
	int r = rpc_write_error_data(&srv->out, id, RPC_UNSUPPORTED_VERSION,
				     "Unsupported protocol version", data);
	return r == -ENOMEM ? r : 1;
}

int meta_read(server *srv, json_t *id, const json_t *params, request_meta *ret)
{
	*ret = (request_meta){.modern = true, .log_level = _LEVEL_NONE};
	const json_t *meta = json_object_get(params, "_meta");
	if (meta && !json_is_object(meta))
		return invalid(srv, id, "Invalid params: _meta must be an object");
	const json_t *version = json_object_get(meta, META_VERSION);
	const json_t *caps = json_object_get(meta, META_CAPABILITIES);
	if (!version || !caps)
		return invalid(srv, id,
			       "Invalid params: _meta must carry " META_VERSION
			       " and " META_CAPABILITIES);
	if (!json_is_string(version))
		return invalid(srv, id, "Invalid params: " META_VERSION " must be a string");
	/* Only 2026-07-28 is served this way; a 2025 version is asked for with initialize. */
	if (strcmp(json_string_value(version), SERVER_MODERN_VERSION) != 0)
		return unsupported(srv, id, version);
	if (!json_is_object(caps))
		return invalid(srv, id, "Invalid params: " META_CAPABILITIES " must be an object");
	const json_t *info = json_object_get(meta, META_CLIENT_INFO);
	if (info && !json_is_object(info))
		return invalid(srv, id, "Invalid params: " META_CLIENT_INFO " must be an object");
	const json_t *level = json_object_get(meta, META_LOG_LEVEL);
	if (level) {
		ret->log_level = server_level_from_string(json_string_value(level));
		if (ret->log_level == _LEVEL_NONE)
			return invalid(srv, id,
				       "Invalid params: " META_LOG_LEVEL
				       " must be one of debug, info, notice, warning, "
				       "error, critical, alert, emergency");
	}
	ret->elicits = elicit_supported(caps);
	return 0;
}

json_t *meta_result(json_t *result)
{
	if (!result)
		return NULL;
	if (!json_object_get(result, "resultType") &&
	    json_object_set_new(result, "resultType", json_string("complete")) < 0) {
		json_decref(result);
		return NULL;
	}
	/* Beside what the result's _meta already holds (a tool error's code). */
	json_t *meta = json_object_get(result, "_meta");
	if (!meta && json_object_set_new(result, "_meta", meta = json_object()) < 0)
		meta = NULL;
	if (!meta || json_object_set_new(meta, META_SERVER_INFO,
					 json_pack("{s:s, s:s}", "name", "dsh-sandbox", "version",
						   dsb_version())) < 0) {
		json_decref(result);
		return NULL;
	}
	return result;
}
