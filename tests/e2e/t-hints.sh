#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of what the CLI tells a person who looks for something: the command, verb or
# option a typo meant, what `session mode` and `session approval` did, and when a session was
# made, as a date. Every message byte for byte.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG DSH_SANDBOX_DEBUG
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"

HINT="Run 'dsh-sandbox --help' for the commands and their options."

test_unknown_command() {
	run sesion list
	assert_rc 2
	assert_streq "$out" ""
	assert_streq "$err" "dsh-sandbox: unknown command 'sesion'; did you mean 'session'?
$HINT"
	# A transposition is one edit; a beginning names the one command it begins.
	run exce -- true
	assert_streq "$err" "dsh-sandbox: unknown command 'exce'; did you mean 'exec'?
$HINT"
	run expl -- true
	assert_streq "$err" "dsh-sandbox: unknown command 'expl'; did you mean 'explain'?
$HINT"
	# Nothing near: no guess. A beginning several commands share: no guess either.
	run frobnicate
	assert_rc 2
	assert_streq "$err" "dsh-sandbox: unknown command 'frobnicate'
$HINT"
	run p
	assert_streq "$err" "dsh-sandbox: unknown command 'p'
$HINT"
	# A hidden command is no guess.
	run completion bash
	assert_streq "$err" "dsh-sandbox: unknown command 'completion'
$HINT"
}

test_unknown_verb_and_option() {
	run session shwo x
	assert_rc 2
	assert_streq "$(printf '%s\n' "$err" | head -n 1)" "dsh-sandbox: session: unknown subcommand 'shwo'; did you mean 'show'?"
	assert_contains "$err" "
usage: dsh-sandbox [--config FILE] session new "
	run fs wrtie x
	assert_streq "$(printf '%s\n' "$err" | head -n 1)" "dsh-sandbox: fs: unknown subcommand 'wrtie'; did you mean 'write'?"
	run session frob
	assert_streq "$(printf '%s\n' "$err" | head -n 1)" "dsh-sandbox: session: unknown subcommand 'frob'"
	run policy --mdoe read-only
	assert_rc 2
	assert_streq "$(printf '%s\n' "$err" | head -n 1)" "dsh-sandbox: policy: unknown option '--mdoe'; did you mean '--mode'?"
	assert_contains "$err" "
usage: dsh-sandbox [--config FILE] policy "
	run exec --mdoe=read-only -- true
	assert_rc 125 # exec: its usage errors are 125, as env(1)'s
	assert_streq "$(printf '%s\n' "$err" | head -n 1)" "dsh-sandbox: exec: unknown option '--mdoe=read-only'; did you mean '--mode'?"
	run exec --sesion x -- true
	assert_streq "$(printf '%s\n' "$err" | head -n 1)" "dsh-sandbox: exec: unknown option '--sesion'; did you mean '--session'?"
	run policy --bogus
	assert_streq "$(printf '%s\n' "$err" | head -n 1)" "dsh-sandbox: policy: unknown option '--bogus'"
	# Before the command: the tool's options, and the hint instead of the whole usage.
	run --stroe x policy
	assert_rc 2
	assert_streq "$err" "dsh-sandbox: unknown option '--stroe'; did you mean '--store'?
$HINT"
	run --mode read-only policy
	assert_streq "$err" "dsh-sandbox: unknown option '--mode'
$HINT"
}

test_session_switches_say_what_they_did() {
	mkdir ws
	run session new --cwd ws
	local s=$out
	run session mode "$s" workspace-write
	assert_rc 0
	assert_streq "$out" "session $s: mode read-only -> workspace-write"
	assert_streq "$err" ""
	run session mode "$s" workspace-write
	assert_streq "$out" "session $s: mode workspace-write (unchanged)"
	run session approval "$s" never
	assert_rc 0
	assert_streq "$out" "session $s: approval ask -> never"
	run session approval "$s" never
	assert_streq "$out" "session $s: approval never (unchanged)"
	run session approval "$s" ask
	assert_streq "$out" "session $s: approval never -> ask"
	# Named by its log's path, it is still named by its id.
	local log
	log=$("$DSB" session show "$s" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
	run session mode "$log" read-only
	assert_streq "$out" "session $s: mode workspace-write -> read-only"
	# A refused switch says nothing on stdout.
	run session mode "$s" nope
	assert_rc 2
	assert_streq "$out" ""
}

test_session_show_dates() {
	run session new
	local s=$out ms iso
	run session show "$s" --json
	ms=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["createdAt"])')
	iso=$(date -u -d "@$((ms / 1000))" +%Y-%m-%dT%H:%M:%SZ)
	run session show "$s"
	assert_rc 0
	assert_contains "$out" "
createdAt: $iso
"
	# What a person reads: ISO 8601, UTC, to the second.
	printf '%s\n' "$out" | grep -qxE 'createdAt: [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z' ||
		fail "no ISO date: $out"
}

t "a typo'd command names the nearest, with a hint" test_unknown_command
t "a typo'd subcommand or option names the nearest" test_unknown_verb_and_option
t "session mode and approval say what they did" test_session_switches_say_what_they_did
t "session show dates the session in ISO 8601" test_session_show_dates
done_testing
