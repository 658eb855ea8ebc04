#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of `dsh-sandbox session` and `policy --session`: sessions in a store, DSH's
# own logs by path, mode and approval switches appended as DSH appends them (dsh-compat §3).
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export TMPDIR=/tmp
export DSH_SANDBOX_STORE="$TEST_TMP/store"
FIXTURES=${DSB_SOURCE_ROOT:?}/tests/fixtures/dsh
MODES='(accepted: read-only, workspace-write, danger-full-access)'

new_session() {
	"$DSB" session new --cwd "${1:-$PWD}"
}

test_new_prints_an_id_and_writes_the_header() {
	mkdir ws
	run session new --cwd ws
	assert_rc 0
	[[ "$out" =~ ^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$ ]] ||
		fail "not a UUID: $out"
	local key
	key=$(pwd -P | sed 's#^/##; s#/#-#g')
	local log="$DSH_SANDBOX_STORE/--$key-ws--/$out/session.jsonl"
	[ -f "$log" ] || fail "no log at $log"
	assert_file_has_content "$log" "^{\"type\":\"session\",\"version\":0,\"id\":\"$out\",\"createdAt\":[0-9]*,\"cwd\":\"$(pwd -P)/ws\",\"delegationDepth\":0}\$"
	[ "$(stat -c %a "$log")" = 600 ] || fail "log mode $(stat -c %a "$log")"
}

# --json: one object; the cwd as the header records it, canonical (a later symlink on the
# recorded path means a swapped root, see policy/resolve.c).
test_new_json_records_the_canonical_cwd() {
	mkdir real
	ln -s real link
	run session new --cwd link --json
	assert_rc 0
	local id cwd path
	id=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])') ||
		fail "not one JSON object: $out"
	cwd=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cwd"])')
	path=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
	assert_streq "$cwd" "$(pwd -P)/real"
	assert_file_has_content "$path" "\"id\":\"$id\",\"createdAt\":[0-9]*,\"cwd\":\"$(pwd -P)/real\""
}

test_new_refuses_missing_cwd() {
	local before
	before=$(find "$DSH_SANDBOX_STORE" -name session.jsonl 2>/dev/null | wc -l)
	run session new --cwd does-not-exist
	assert_rc 2
	assert_contains "$err" "does-not-exist"
	assert_contains "$err" "No such file or directory"
	touch plain-file
	run session new --cwd plain-file
	assert_rc 2
	assert_contains "$err" "Not a directory"
	# An empty --cwd is a usage error, never read as the current directory (issue 13 item 7).
	run session new --cwd ""
	assert_rc 2
	assert_contains "$err" "dsh-sandbox: session: --cwd: empty path"
	assert_contains "$err" "usage: dsh-sandbox"
	[ ! -d "$DSH_SANDBOX_STORE" ] || [ -z "$(ls -A "$DSH_SANDBOX_STORE")" ] ||
		[ "$(find "$DSH_SANDBOX_STORE" -name session.jsonl | wc -l)" = "$before" ] ||
		fail "session new --cwd '' created a session"
}

# Each session error says its errno text once (issue 13 item 7).
test_errno_text_once() {
	local e
	run session new --cwd does-not-exist
	assert_streq "$(grep -o 'No such file or directory' <<<"$err" | wc -l)" 1
	run session show "$PWD/missing/s.jsonl"
	assert_rc 7
	assert_streq "$err" "dsh-sandbox: $PWD/missing/s.jsonl: no such session log"
	mkdir dir.jsonl
	run session log "$PWD/dir.jsonl"
	assert_streq "$err" "dsh-sandbox: $PWD/dir.jsonl: not a regular file"
	touch plain
	run --store "$PWD/plain" session new --cwd "$PWD"
	[ "$rc" -ne 0 ] || fail "a store under a file was accepted"
	for e in "Not a directory" "No such file or directory" "Permission denied"; do
		[ "$(grep -o "$e" <<<"$err" | wc -l)" -le 1 ] || fail "doubled errno text: $err"
	done
	assert_contains "$err" ": cannot create: Not a directory"
}

test_mode_switch_and_policy() {
	local id
	id=$(new_session)
	run policy --session "$id" --json
	assert_rc 0
	out=$(without_limits "$out")
	assert_streq "$out" "{\"mode\":\"read-only\",\"workspaceRoot\":\"$(pwd -P)\",\"sessionId\":\"$id\",\"writableRoots\":[],\"protectedPaths\":[],\"tmp\":\"session\",\"network\":{\"access\":\"full\",\"allow\":[],\"deny\":[],\"allowPrivate\":[],\"proxyPort\":null,\"enforcement\":\"unrestricted\"}}"
	run session mode "$id" workspace-write
	assert_rc 0
	run policy --session "$id" --json
	assert_contains "$out" "{\"mode\":\"workspace-write\",\"workspaceRoot\":\"$(pwd -P)\",\"sessionId\":\"$id\",\"writableRoots\":[\"$(pwd -P)\",\"/tmp\"],\"protectedPaths\":["
	# An explicit --mode outranks the session's switch, keeping its root.
	run policy --session "$id" --mode danger-full-access --json
	assert_contains "$out" "\"mode\":\"danger-full-access\",\"workspaceRoot\":\"$(pwd -P)\""
	# The session's mode beats DSH_PERMISSION_MODE, which only sets the default.
	DSH_PERMISSION_MODE=danger-full-access run policy --session "$id" --json
	assert_contains "$out" '"mode":"workspace-write"'
}

test_new_pins_the_default_preset() {
	local id
	id=$(new_session)
	run session log "$id"
	assert_rc 0
	assert_streq "$(sed 's/"time":[0-9]*,//' .out)" '{"type":"permission/preset","seq":0,"data":{"preset":"read-only"}}
{"type":"sandbox/mode","seq":1,"data":{"mode":"read-only"}}
{"type":"approval/policy","seq":2,"data":{"policy":"ask"}}'
	DSH_PERMISSION_MODE=danger-full-access run session new --cwd "$PWD"
	assert_rc 0
	run session log "$out"
	assert_contains "$out" '"data":{"preset":"danger-full-access"}'
	assert_contains "$out" '"data":{"policy":"never"}'
}

test_mode_appends_exactly_one_event() {
	local id
	id=$(new_session)
	run session mode "$id" danger-full-access
	run session log "$id"
	assert_rc 0
	[ "$(echo "$out" | wc -l)" -eq 4 ] || fail "expected the pinned three and one: $out"
	[[ "$(echo "$out" | tail -n 1)" =~ ^\{\"type\":\"sandbox/mode\",\"seq\":3,\"time\":[0-9]+,\"data\":\{\"mode\":\"danger-full-access\"\}\}$ ]] ||
		fail "unexpected line: $out"
}

test_invalid_mode_and_policy_append_nothing() {
	local id
	id=$(new_session)
	run session mode "$id" yolo
	assert_rc 2
	assert_streq "$err" "dsh-sandbox: mode: invalid mode \"yolo\" $MODES"
	run session approval "$id" sometimes
	assert_rc 2
	assert_streq "$err" 'dsh-sandbox: approval policy must be one of "ask" or "never"'
	[ "$("$DSB" session log "$id" | wc -l)" -eq 3 ] || fail "appended something"
	run session approval "$id" never
	assert_rc 0
	run session show "$id" --json
	assert_contains "$out" '"approvalPolicy":"never","approvalSource":"session"'
}

test_show() {
	local id
	id=$(new_session)
	run session show "$id"
	assert_rc 0
	assert_contains "$out" "id: $id"
	assert_contains "$out" "mode: read-only (session)"
	assert_contains "$out" "approvalPolicy: ask (session)"
	assert_contains "$out" "preset: read-only"
	"$DSB" session mode "$id" workspace-write
	run session show "$id" --json
	assert_contains "$out" "\"id\":\"$id\""
	assert_contains "$out" '"mode":"workspace-write","modeSource":"session"'
	# The preset the knobs now make, as `permission` says (dsh-compat §8.6 derive).
	assert_contains "$out" '"preset":"workspace-write","policy":{"mode":"workspace-write"'
}

test_list() {
	export DSH_SANDBOX_STORE=$PWD/own-store # this test counts every session in its store
	run session list
	assert_rc 0
	assert_streq "$out" ""
	local a b
	a=$(new_session)
	sleep 0.02 # createdAt has millisecond resolution: keep the order unambiguous
	mkdir other
	b=$(new_session other)
	run session list
	assert_streq "$out" "$a	$(pwd -P)
$b	$(pwd -P)/other"
	run session list --json
	assert_contains "$out" "[{\"id\":\"$a\",\"cwd\":\"$(pwd -P)\",\"createdAt\":"
}

test_dsh_fixture_by_path() {
	# The fixture may come without write bits; the copy is ours to append to.
	cp "$FIXTURES/escalation-approved.session.jsonl" copy.jsonl
	chmod u+w copy.jsonl
	run session show "$PWD/copy.jsonl" --json
	assert_rc 0
	assert_contains "$out" '"id":"f3cbd087-fb45-4b32-b0f2-3082d65bfcb4"'
	assert_contains "$out" '"cwd":"{{cwd}}"'
	run session log "$PWD/copy.jsonl"
	assert_rc 0
	# Printed exactly as stored: the events are the file without its header.
	assert_streq "$out" "$(tail -n +2 copy.jsonl)"
	run session mode "$PWD/copy.jsonl" read-only
	assert_rc 0
	# 36 lines hold 189 events: packed chunk rows count one event per member.
	tail -n 1 copy.jsonl | grep -q "^{\"type\":\"sandbox/mode\",\"seq\":189,\"time\":[0-9]*,\"data\":{\"mode\":\"read-only\"}}\$" ||
		fail "appended line: $(tail -n 1 copy.jsonl)"
	run session log "$PWD/copy.jsonl"
	assert_rc 0
}

test_corrupt_and_missing_logs() {
	run session show no-such-session
	assert_rc 7
	assert_contains "$err" 'no session "no-such-session"'
	printf '{"type":"session","version":3,"id":"x","createdAt":1,"delegationDepth":0}\n' >future.jsonl
	run session show "$PWD/future.jsonl"
	assert_rc 6
	assert_contains "$err" 'session "x" uses log format v3, but this harness reads only v0'
	printf '{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0,"sandboxMode":"read-only"}\n' >retired.jsonl
	run session show "$PWD/retired.jsonl"
	assert_rc 6
	assert_contains "$err" "session header uses retired policy baseline fields"
	printf '{"type":"session","version":0,"id":"x","createdAt":1,"delegationDepth":0}\n{"type":"sandbox/mode","data":{"mode":"host-root"}}\n' >unknown.jsonl
	run policy --session "$PWD/unknown.jsonl"
	assert_rc 6
	assert_contains "$err" 'sandbox/mode carries unknown mode "host-root"'
	assert_streq "$out" ""
}

test_session_usage_errors() {
	run session
	assert_rc 2
	assert_contains "$err" "no subcommand given"
	run session frob
	assert_rc 2
	assert_contains "$err" "unknown subcommand 'frob'"
	run session mode only-one
	assert_rc 2
	assert_contains "$err" "'session mode' takes 2 arguments, got 1"
	run session list --cwd x
	assert_rc 2
	assert_contains "$err" "--cwd goes with 'session new'"
}

t "session new prints an id and writes DSH's header, 0600" test_new_prints_an_id_and_writes_the_header
t "session new --json: one object, the canonical cwd as recorded" test_new_json_records_the_canonical_cwd
t "session new refuses a missing or non-directory cwd" test_new_refuses_missing_cwd
t "session errors say their errno text once" test_errno_text_once
t "session mode switches what policy --session resolves" test_mode_switch_and_policy
t "session new pins the default preset, mode and approval, in DSH's order" test_new_pins_the_default_preset
t "session mode appends exactly one sandbox/mode event" test_mode_appends_exactly_one_event
t "invalid mode or approval policy appends nothing" test_invalid_mode_and_policy_append_nothing
t "session show reports each knob and its source" test_show
t "session list, text and JSON, oldest first" test_list
t "a DSH log is used by path: show, log, append" test_dsh_fixture_by_path
t "missing, foreign, retired and unknown-mode logs are errors" test_corrupt_and_missing_logs
t "session usage errors" test_session_usage_errors
done_testing
