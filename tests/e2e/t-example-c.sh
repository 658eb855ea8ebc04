#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The C example of the user guide (examples/c/agent.c), built against the shared library: a
# read-only session's bash call is denied with DSH's hint, the escalated retry is approved by
# the program's answerer and writes, the log keeps the audit pair, and a write is refused. Once
# as meson builds it, once built and run by the user guide's own from-source commands.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
AGENT=${DSB_EXAMPLE_AGENT:?DSB_EXAMPLE_AGENT must name the built examples/c/agent.c}
SRC=${DSB_SOURCE_ROOT:?}
BUILD=${DSB_BUILD_ROOT:?}
GUIDE=$SRC/docs/user-guide.md

# assert_agent_output FILE: what the example prints for its four calls.
assert_agent_output() {
	local denied
	denied=$(sed -n '/^--- bash$/,/^--- bash$/p' "$1")
	assert_contains "$denied" "[sandbox: file access denied under read-only mode]"
	assert_contains "$denied" "[sandbox: escalation available — retry this exact command once"
	assert_contains "$(cat "$1")" $'--- bash\nbuilt\n'
	assert_contains "$(cat "$1")" $'--- write (error)\nError: [sandbox: file access denied under read-only mode]'
}

# check_agent PROGRAM: runs it on a store and a workspace of its own and checks what it did.
check_agent() {
	mkdir ws
	rc=0
	"$1" "$PWD/store" "$PWD/ws" >out 2>err || rc=$?
	assert_rc 0
	assert_agent_output out
	assert_streq "$(cat ws/out.txt)" built
	[ ! -e ws/notes.txt ] || fail "the fenced write landed"
	assert_contains "$(cat err)" "approval asked: escalate sandbox to workspace-write: write the build output"
	local log
	log=$(cat store/*/*/session.jsonl)
	assert_contains "$log" '"type":"approval/asked"'
	assert_contains "$log" '"outcome":"allowed-once"'
}

test_agent_example() {
	check_agent "$AGENT"
}

# The guide's block after its marker, run as written in a checkout whose build/ is this build.
test_guide_from_source() {
	local block
	block=$(awk '/^<!-- t-example-c.sh runs this block as written -->$/ { mark = 1; next }
		mark && /^```sh$/ { inside = 1; next }
		inside && /^```$/ { exit }
		inside' "$GUIDE")
	assert_contains "$block" "cc examples/c/agent.c"
	mkdir checkout
	ln -s "$SRC/examples" checkout/examples
	ln -s "$BUILD" checkout/build
	(cd checkout && bash -euo pipefail -c "$block") >out 2>err ||
		fail "the guide's commands failed: $(cat err)"
	assert_agent_output out
	# The program it built, once more, where this test can look at what it wrote.
	check_agent "$PWD/checkout/agent"
}

t "the C example: denied, escalated with its answerer, written; a fenced write refused" \
	test_agent_example
t "the C example built and run from a source tree as docs/user-guide.md says" \
	test_guide_from_source

done_testing
