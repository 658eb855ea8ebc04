/* SPDX-License-Identifier: MIT */
/*
 * The JSON-RPC 2.0 envelope as MCP restricts it: no batches (removed in 2025-06-18), ids that
 * are strings or integers and never null, params an object. A line is classified here and
 * every answer is written here, one compact line each under one lock, so the threads that
 * answer calls never interleave their bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

void rpc_message_done(rpc_message *m)
{
	if (m->json)
		json_decref(m->json);
	*m = (rpc_message){0};
}

static void invalid(rpc_message *m, int code, const char *message)
{
	m->kind = RPC_INVALID;
	m->error_code = code;
	m->error_message = message;
}

int rpc_parse(const char *line, size_t len, rpc_message *ret)
{
	json_error_t jerr;
	*ret = (rpc_message){0};

	/* Any JSON value parses, so that a scalar is an invalid request, not a parse error. */
	ret->json = json_loadb(line, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	if (!ret->json) {
		invalid(ret, RPC_PARSE_ERROR, "Parse error");
		return 0;
	}
	if (json_is_array(ret->json)) {
		invalid(ret, RPC_INVALID_REQUEST, "Invalid Request: batches are not supported");
		return 0;
	}
	if (!json_is_object(ret->json)) {
		invalid(ret, RPC_INVALID_REQUEST, "Invalid Request: expected a JSON object");
		return 0;
	}
	const json_t *version = json_object_get(ret->json, "jsonrpc");
	json_t *id = json_object_get(ret->json, "id");
	const json_t *method = json_object_get(ret->json, "method");
	json_t *params = json_object_get(ret->json, "params");

	/* An id we can echo is echoed, even on an invalid request; anything else is null. */
	if (id && (json_is_string(id) || json_is_integer(id)))
		ret->id = id;
	if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0) {
		invalid(ret, RPC_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"");
		return 0;
	}
	if (id && !ret->id) {
		invalid(ret, RPC_INVALID_REQUEST,
			"Invalid Request: id must be a string or an integer");
		return 0;
	}
	if (!method) {
		/* A response to a request of ours: an id and a result or an error. */
		if (ret->id &&
		    (json_object_get(ret->json, "result") || json_object_get(ret->json, "error"))) {
			ret->kind = RPC_RESPONSE;
			return 0;
		}
		invalid(ret, RPC_INVALID_REQUEST, "Invalid Request: method is missing");
		return 0;
	}
	if (!json_is_string(method)) {
		invalid(ret, RPC_INVALID_REQUEST, "Invalid Request: method must be a string");
		return 0;
	}
	ret->method = json_string_value(method);
	ret->params = params;
	ret->kind = ret->id ? RPC_REQUEST : RPC_NOTIFICATION;
	return 0;
}

int rpc_write(rpc_writer *w, const json_t *msg)
{
	/* Compact: no newline can be inside, so the line is the message (MCP stdio). */
	char *text = json_dumps(msg, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!text)
		return -ENOMEM;
	size_t len = strlen(text);
	text[len] = '\n'; /* the NUL becomes the newline; the length says where it ends */
	int r = 0;
	(void)pthread_mutex_lock(&w->lock);
	if (!w->broken && fd_write_all(w->fd, text, len + 1) < 0)
		w->broken = true;
	if (w->broken)
		r = -EPIPE;
	(void)pthread_mutex_unlock(&w->lock);
	free(text);
	return r;
}

int rpc_write_result(rpc_writer *w, json_t *id, json_t *result)
{
	json_t *msg = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
	if (!msg)
		return -ENOMEM;
	int r = rpc_write(w, msg);
	json_decref(msg);
	return r;
}

int rpc_write_error(rpc_writer *w, json_t *id, int code, const char *message)
{
	json_t *msg = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
				id ? id : json_null(), "error", "code", code, "message", message);
	if (!msg)
		return -ENOMEM;
	int r = rpc_write(w, msg);
	json_decref(msg);
	return r;
}

int rpc_write_error_data(rpc_writer *w, json_t *id, int code, const char *message, json_t *data)
{
	json_t *msg = json_pack("{s:s, s:O, s:{s:i, s:s, s:o}}", "jsonrpc", "2.0", "id",
				id ? id : json_null(), "error", "code", code, "message", message,
				"data", data);
	if (!msg)
		return -ENOMEM;
	int r = rpc_write(w, msg);
	json_decref(msg);
	return r;
}

int rpc_write_notification(rpc_writer *w, const char *method, json_t *params)
{
	json_t *msg =
		json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
	if (!msg)
		return -ENOMEM;
	int r = rpc_write(w, msg);
	json_decref(msg);
	return r;
}

json_t *rpc_string(const char *s, size_t len)
{
	_cleanup_free_ char *clean = NULL;
	size_t clean_len;
	/* jansson takes only well-formed UTF-8; a command's output need not be. */
	if (utf8_sanitize(s, len, &clean, &clean_len) < 0)
		return NULL;
	return json_stringn(clean, clean_len);
}
