#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of `dsh-sandbox context`: the runtime-context snapshot a harness sends the
# model each step (dsh-compat §9) — printed exactly, appended once with --append, nothing while the
# policy in force is unchanged, a new one after a mode or approval switch, and the same bytes
# whatever TMPDIR says.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export TMPDIR=/tmp
export DSH_SANDBOX_STORE="$TEST_TMP/store"
FIXTURES=${DSB_SOURCE_ROOT:?}/tests/fixtures/dsh

HEADER='Current runtime context. This snapshot supersedes earlier runtime-context snapshots.'
RO='Current DSH file policy: read-only. Any available operation enforced by the DSH file sandbox cannot modify files in the standing mode. Do not refuse a required modification from this policy alone: try an available tool normally and follow any denial and escalation guidance it returns.'
DFA='Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict file modifications by available operations.'
ASK='Approval policy: ask. Operations that require approval may ask through the configured answerers; without an available answerer, the request fails closed.'
# shellcheck disable=SC2016 # the backquotes are part of DSH's text
NEVER='Approval prompts are disabled in this session: actions that require approval are rejected automatically — do not request sandbox escalation (do not set `sandbox_permissions`).'

# ww_text JSON: the workspace-write text for a root already spelled as a JSON string.
ww_text() {
	printf 'Current DSH file policy: workspace-write. Any available operation enforced by the DSH file sandbox may modify files under the session workspace: %s. Some platform temporary areas may also be writable.' "$1"
}

snapshot() {
	printf '%s\n\n%s\n\n%s' "$HEADER" "$1" "$2"
}

# expect_output TEXT: stdout was exactly TEXT and one newline.
expect_output() {
	printf '%s\n' "$1" >"$PWD/.want"
	cmp -s "$PWD/.out" "$PWD/.want" || fail "stdout differs: got [$(cat "$PWD/.out")], expected [$1]"
}

expect_silence() {
	assert_rc 0
	[ ! -s "$PWD/.out" ] || fail "expected no output, got [$(cat "$PWD/.out")]"
	[ ! -s "$PWD/.err" ] || fail "expected nothing on stderr, got [$(cat "$PWD/.err")]"
}

new_session() {
	"$DSB" session new --cwd "${1:-$PWD}"
}

snapshots_in_log() {
	"$DSB" session log "$1" | grep -c '"plugin":"@deepseek-ai/dsh-system-prompt"' || true
}

test_new_session_states_read_only_and_ask() {
	local id
	id=$(new_session)
	run context --session "$id"
	assert_rc 0
	expect_output "$(snapshot "$RO" "$ASK")"
	[ -z "$err" ] || fail "stderr: $err"
	# Printing appends nothing: the next call prints the same.
	run context --session "$id"
	expect_output "$(snapshot "$RO" "$ASK")"
	assert_streq "$(snapshots_in_log "$id")" 0
}

test_append_once_then_nothing() {
	local id
	id=$(new_session)
	run context --session "$id" --append
	assert_rc 0
	expect_output "$(snapshot "$RO" "$ASK")"
	assert_streq "$(snapshots_in_log "$id")" 1
	"$DSB" session log "$id" | tail -n 1 | grep -q '^{"type":"user/message","seq":3,"time":[0-9]*,"data":{"content":\[{"type":"text","text":"Current runtime context. .*"role":"user","id":"[0-9a-f-]*"},"surfaceOp":"append"}$' ||
		fail "last line is not the snapshot: $("$DSB" session log "$id" | tail -n 1)"
	for _ in 1 2 3; do
		run context --session "$id"
		expect_silence
		run context --session "$id" --append
		expect_silence
	done
	run context --session "$id" --json
	expect_silence
	assert_streq "$(snapshots_in_log "$id")" 1
}

test_mode_switch_and_back() {
	local id root
	id=$(new_session)
	root=$(pwd -P)
	run context --session "$id" --append
	run session mode "$id" workspace-write
	assert_rc 0
	run context --session "$id" --append
	assert_rc 0
	expect_output "$(snapshot "$(ww_text "\"$root\"")" "$ASK")"
	run context --session "$id"
	expect_silence
	run session mode "$id" danger-full-access
	run context --session "$id" --append
	expect_output "$(snapshot "$DFA" "$ASK")"
	# Switching back states it again, even though an earlier snapshot said the same.
	run session mode "$id" read-only
	run context --session "$id" --append
	expect_output "$(snapshot "$RO" "$ASK")"
	run context --session "$id"
	expect_silence
	assert_streq "$(snapshots_in_log "$id")" 4
}

test_approval_never() {
	local id
	id=$(new_session)
	run context --session "$id" --append
	run session approval "$id" never
	assert_rc 0
	run context --session "$id" --append
	assert_rc 0
	expect_output "$(snapshot "$RO" "$NEVER")"
	run context --session "$id"
	expect_silence
	run session approval "$id" ask
	run context --session "$id"
	expect_output "$(snapshot "$RO" "$ASK")"
}

test_json_is_the_logged_message() {
	local id
	id=$(new_session)
	run context --session "$id" --json --append
	assert_rc 0
	[ "$(wc -l <.out)" -eq 1 ] || fail "expected one line"
	[[ "$out" =~ ^\{\"content\":\[\{\"type\":\"text\",\"text\":\"Current\ runtime\ context\.\ .*\"\}\],\"source\":\{\"kind\":\"plugin\",\"plugin\":\"@deepseek-ai/dsh-system-prompt\",\"form\":\"snapshot\",\"sections\":\[\{\"name\":\"sandbox:policy\",\"text\":\"Current\ DSH\ file\ policy:\ read-only\..*\"\},\{\"name\":\"approval:policy\",\"text\":\"Approval\ policy:\ ask\..*\"\}\]\},\"role\":\"user\",\"id\":\"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\"\}$ ]] ||
		fail "not the message: $out"
	# The logged data is exactly what was printed.
	local line
	line=$("$DSB" session log "$id" | tail -n 1)
	assert_streq "$(printf '%s' "$line" | sed 's/^{"type":"user\/message","seq":[0-9]*,"time":[0-9]*,"data"://; s/,"surfaceOp":"append"}$//')" "$out"
}

test_byte_stable_across_tmpdir() {
	local id
	id=$(new_session)
	run session mode "$id" workspace-write
	run context --session "$id"
	cp .out reference
	local v
	for v in /var/tmp /nonexistent relative ""; do
		TMPDIR=$v TMP=/x TEMP=/y run context --session "$id"
		assert_rc 0
		cmp -s .out reference || fail "TMPDIR=$v changed the text: $(cat .out)"
	done
	TMPDIR=/var/tmp run context --session "$id" --append
	cmp -s .out reference || fail "the appended text differs"
	for v in /tmp /nonexistent ""; do
		TMPDIR=$v TMP=$v TEMP=$v run context --session "$id"
		expect_silence
	done
}

test_awkward_workspace_is_json_quoted() {
	local dir='a "q" \b ünï'
	mkdir "$dir"
	local id
	id=$(new_session "$PWD/$dir")
	run session mode "$id" workspace-write
	run context --session "$id"
	assert_rc 0
	expect_output "$(snapshot "$(ww_text "\"$(pwd -P)/a \\\"q\\\" \\\\b ünï\"")" "$ASK")"
}

test_configured_defaults() {
	cat >dfa.yaml <<'EOF'
sandbox-policy: {mode: danger-full-access}
approval: {policy: never}
EOF
	local id
	id=$("$DSB" --config dfa.yaml session new --cwd "$PWD")
	run context --config dfa.yaml --session "$id"
	assert_rc 0
	expect_output "$(snapshot "$DFA" "$NEVER")"
	# DSH_PERMISSION_MODE sets the default; the session's pinned events still win.
	DSH_PERMISSION_MODE=workspace-write run context --session "$id"
	expect_output "$(snapshot "$DFA" "$NEVER")"
}

# A DSH log by path: the fixture's own snapshot, reproduced from the log before it.
test_fixture_log_by_path() {
	local src="$FIXTURES/escalation-approved.session.jsonl"
	[ -f "$src" ] || fail "DSH fixtures missing: $FIXTURES"
	local root
	root=$(pwd -P)
	sed "s#{{cwd}}#$root#g" "$src" >full.jsonl
	local n
	n=$(grep -n '"plugin":"@deepseek-ai/dsh-system-prompt"' full.jsonl | head -n 1 | cut -d: -f1)
	head -n $((n - 1)) full.jsonl >log.jsonl
	cat >ww.yaml <<'EOF'
sandbox-policy: {mode: workspace-write}
EOF
	run context --config ww.yaml --session "$PWD/log.jsonl"
	assert_rc 0
	expect_output "$(snapshot "$(ww_text "\"$root\"")" "$ASK")"
	head -n "$n" full.jsonl >log.jsonl
	run context --config ww.yaml --session "$PWD/log.jsonl"
	expect_silence
	run context --config ww.yaml --session "$PWD/full.jsonl"
	expect_silence
}

test_usage_and_errors() {
	run context
	assert_rc 2
	assert_contains "$err" "--session is required"
	run context --session
	assert_rc 2
	run context --session x extra
	assert_rc 2
	run context --session 00000000-0000-4000-8000-000000000000
	assert_rc 7
	assert_contains "$err" 'no session "00000000-0000-4000-8000-000000000000"'
	[ ! -s .out ] || fail "printed something on error"
	run context --help
	assert_rc 0
	assert_contains "$out" "usage: dsh-sandbox [--config FILE] context --session ID|PATH"
}

t "a new session states read-only and ask" test_new_session_states_read_only_and_ask
t "--append appends once; then nothing is printed or appended" test_append_once_then_nothing
t "a mode switch states the new mode; switching back states it again" test_mode_switch_and_back
t "approval never is stated" test_approval_never
t "--json prints the message that is logged" test_json_is_the_logged_message
t "the text is byte-stable across TMPDIR, TMP and TEMP" test_byte_stable_across_tmpdir
t "the workspace path is JSON-quoted" test_awkward_workspace_is_json_quoted
t "configured defaults and pinned sessions" test_configured_defaults
t "a DSH fixture log by path reproduces its snapshot" test_fixture_log_by_path
t "usage errors and unknown sessions" test_usage_and_errors
done_testing
