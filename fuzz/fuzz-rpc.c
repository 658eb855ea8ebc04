/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the server's message handling without spawning anything: one line classified as the
 * server classifies it (rpc_parse()), a tools/call's arguments checked and planned for each tool
 * (tools_plan()), and the bytes read as a text file and windowed (read_render()). Properties:
 * no crash, no leak; a classified message has the fields its kind promises; the read window is
 * an envelope or an out-of-range error, never both.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/server/server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	rpc_message m;
	if (rpc_parse((const char *)data, size, &m) < 0)
		return 0;
	if ((m.kind == RPC_REQUEST && (!m.id || !m.method)) ||
	    (m.kind == RPC_NOTIFICATION && (m.id || !m.method)) ||
	    (m.kind == RPC_INVALID && m.error_code == 0))
		abort();
	json_t *args = m.kind == RPC_REQUEST ? json_object_get(m.params, "arguments") : NULL;
	for (server_tool t = 0; m.kind == RPC_REQUEST && t < _TOOL_MAX; t++) {
		tool_plan plan;
		char *message = NULL;
		int r = tools_plan(t, args, &plan, &message);
		if ((r == 1) != (message != NULL))
			abort();
		free(message);
	}
	rpc_message_done(&m);

	/* The bytes as a file the fence read (valid UTF-8 only, as the fence guarantees). */
	char *text = NULL;
	size_t len = 0;
	if (utf8_sanitize((const char *)data, size, &text, &len) < 0)
		return 0;
	uint64_t offset = size > 0 ? (uint64_t)data[0] % 8 + 1 : 1;
	uint64_t limit = size > 1 ? (uint64_t)data[1] % 5 + 1 : TOOL_READ_LIMIT;
	read_view v;
	if (read_render(text, len, "/w/f", offset, limit, &v) == 0) {
		if (!!v.text == !!v.error || (v.text && !v.value))
			abort();
		read_view_done(&v);
	}
	free(text);
	return 0;
}
