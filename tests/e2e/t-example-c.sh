#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The C example of the user guide (examples/c/agent.c), built against the shared library: a
# read-only session's bash call is denied with DSH's hint, the escalated retry is approved by
# the program's answerer and writes, the log keeps the audit pair, and a write is refused.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
AGENT=${DSB_EXAMPLE_AGENT:?DSB_EXAMPLE_AGENT must name the built examples/c/agent.c}

test_agent_example() {
	mkdir ws
	rc=0
	"$AGENT" "$PWD/store" "$PWD/ws" >out 2>err || rc=$?
	assert_rc 0
	local denied
	denied=$(sed -n '/^--- bash$/,/^--- bash$/p' out)
	assert_contains "$denied" "[sandbox: file access denied under read-only mode]"
	assert_contains "$denied" "[sandbox: escalation available — retry this exact command once"
	assert_contains "$(cat out)" $'--- bash\nbuilt\n'
	assert_contains "$(cat out)" $'--- write (error)\nError: [sandbox: file access denied under read-only mode]'
	assert_streq "$(cat ws/out.txt)" built
	[ ! -e ws/notes.txt ] || fail "the fenced write landed"
	assert_contains "$(cat err)" "approval asked: escalate sandbox to workspace-write: write the build output"
	local log
	log=$(cat store/*/*/session.jsonl)
	assert_contains "$log" '"type":"approval/asked"'
	assert_contains "$log" '"outcome":"allowed-once"'
}

t "the C example: denied, escalated with its answerer, written; a fenced write refused" \
	test_agent_example

done_testing
