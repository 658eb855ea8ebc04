#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of `dsh-sandbox bash` (DSH's bash tool: the model-facing text byte for byte,
# dsh-compat §6.7-6.8) and `dsh-sandbox exec` (for people: passthrough, 124, 125, the denial marker).
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME DSH_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
HINT='[sandbox: escalation available — retry this exact command once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]'

bashtool() {
	run bash --workspace "$PWD" "$@"
}

test_plain_outputs() {
	bashtool --mode read-only 'echo hello'
	assert_rc 0
	assert_streq "$out" "hello"
	[ "$(cat .out)" = "hello" ] || fail "text"
	[ "$(od -An -c .out | tr -d ' ')" = 'hello\n' ] || fail "hello\\n expected exactly"
	bashtool --mode read-only 'true'
	assert_streq "$out" "(no output)"
	bashtool --mode read-only 'echo out; echo err >&2'
	assert_streq "$out" "out
[stderr]
err"
	bashtool --mode read-only 'echo failing; exit 3'
	assert_rc 0
	assert_streq "$out" "failing
[exit code: 3]"
}

test_denial_markers_both_backends() {
	for b in bwrap landlock; do
		bashtool --backend "$b" --mode read-only "echo x > '$PWD/f'"
		assert_rc 0
		assert_contains "$out" "[sandbox: file access denied under read-only mode]
$HINT
[exit code: 1]"
		[ ! -e f ] || fail "$b: the write landed"
	done
}

# The marker is DSH's guess from stderr (docs/user-guide.md shows both): the backend's words
# from the command itself are marked, a refused write whose error went nowhere is not.
test_denial_marker_is_read_from_stderr() {
	bashtool --backend bwrap --mode workspace-write 'echo "Read-only file system" >&2; exit 1'
	assert_streq "$out" "[stderr]
Read-only file system
[sandbox: file access denied under workspace-write mode]
$HINT
[exit code: 1]"
	# Each backend its own words: Landlock's are EACCES's.
	bashtool --backend landlock --mode workspace-write 'echo "Read-only file system" >&2; exit 1'
	assert_not_contains "$out" "[sandbox: file access denied"
	for b in bwrap landlock; do
		bashtool --backend "$b" --mode workspace-write --json 'touch /etc/dsb-x 2>/dev/null || true'
		assert_contains "$out" '"sandbox":{"mode":"workspace-write","denied":false,'
		bashtool --backend "$b" --mode workspace-write 'touch /etc/dsb-x 2>/dev/null || true'
		assert_streq "$out" "(no output)"
		[ ! -e /etc/dsb-x ] || fail "$b: the write to /etc landed"
	done
}

test_timeout_markers() {
	bashtool --mode read-only --timeout 100 'sleep 5'
	assert_rc 0
	assert_streq "$out" "(no output)
[timed out after 100ms]
[killed by signal: SIGTERM]"
	# The command itself leads the group under in-process Landlock, so its trap decides; under
	# bwrap the leader is bwrap, which dies of the TERM, as in DSH.
	bashtool --backend landlock --mode read-only --timeout 300 "trap 'exit 0' TERM; sleep 5 & wait"
	assert_streq "$out" "(no output)
[timed out after 300ms]"
}

test_truncation_note() {
	printf 'bash: { maxOutputBytes: 4, maxSpillBytes: 6 }\n' >small.yaml
	run --config small.yaml bash --workspace "$PWD" --mode read-only 'printf 1234567890'
	assert_streq "$out" "7890
[output truncated; full output: (unavailable)]"
	printf 'bash: { maxOutputBytes: 4 }\n' >spill.yaml
	TMPDIR=$PWD run --config spill.yaml bash --workspace "$PWD" --mode read-only 'printf 1234567890'
	[[ "$out" =~ ^7890$'\n'\[output\ truncated\;\ full\ output:\ ($PWD/dsh-subprocess-[A-Za-z0-9]{6}/dsh-subprocess-[0-9]+-[0-9]+-[0-9a-f]{12}-stdout.log)\]$ ]] ||
		fail "unexpected: $out"
	assert_streq "$(cat "${BASH_REMATCH[1]}")" "1234567890"
}

test_json_result() {
	bashtool --mode workspace-write --backend landlock --json "echo hi; echo x > /etc/nope"
	assert_rc 0
	assert_contains "$out" '{"exitCode":1,"signal":null,"timedOut":false,"timeoutMs":120000,"stdout":{"text":"hi\n","truncated":false,"spillPath":null},"stderr":{"text":"bash: line 1: /etc/nope: Permission denied\n","truncated":false,"spillPath":null},"sandbox":{"mode":"workspace-write","denied":true,"enforcement":"full"},"text":"hi\n[stderr]\n'
	bashtool --mode danger-full-access --json "true"
	assert_contains "$out" '"sandbox":{"mode":"danger-full-access","denied":false},'
}

test_validation_texts() {
	bashtool --mode read-only '   '
	assert_rc 2
	assert_streq "$out" "Error: invalid command: expected a non-empty string"
	# --timeout is ours, not the tool's timeoutMs: its error names the option (t-messages.sh).
	bashtool --mode read-only --timeout abc 'true'
	assert_rc 2
	assert_streq "$out" 'Error: invalid --timeout: expected a positive duration (milliseconds, or with a unit: 500ms, 30s, 2m), got "abc"'
	run bash --mode read-only
	assert_rc 2
	assert_contains "$err" "expected exactly one COMMAND"
}

test_unavailable_is_an_error_result() {
	mkdir bin
	ln -s "$(type -P bash)" bin/bash
	printf 'sandbox-local: { runnerCommand: [%s/missing-runner], runnerFailureSignatures: ["x: "] }\n' \
		"$PWD" >runner.yaml
	run --config runner.yaml bash --workspace "$PWD" --mode read-only 'touch marker'
	assert_rc 125
	assert_contains "$out" 'Error: sandbox mode "read-only" is requested but no sandbox backend is usable on this host; refusing to run the command unconfined.'
	assert_contains "$out" "Runner failure: Error: spawn $PWD/missing-runner ENOENT"
	[ ! -e marker ] || fail "the command ran"
	run --config runner.yaml bash --workspace "$PWD" --mode read-only --json 'true'
	assert_contains "$out" '{"error":{"name":"SandboxUnavailableError","code":"SANDBOX_UNAVAILABLE","message":"sandbox mode'
}

test_workdir_and_dsh_env() {
	mkdir -p sub
	local id
	id=$("$DSB" session new --cwd "$PWD")
	run bash --session "$id" --workdir sub 'pwd; env | grep ^DSH_ | sort'
	assert_rc 0
	local log
	log=$("$DSB" session show "$id" --json | sed 's/.*"path":"\([^"]*\)".*/\1/')
	assert_streq "$out" "$(pwd -P)/sub
DSH_HOME=$HOME/.dsh
DSH_SESSION_ID=$id
DSH_SESSION_JSONL=$log
DSH_SHELL=1"
	DSH_HOME=rel run bash --mode read-only --workspace "$PWD" --workdir / 'pwd; echo $DSH_HOME'
	assert_streq "$out" "/
$PWD/rel"
}

test_concurrent_calls_on_one_session() {
	local id
	id=$("$DSB" session new --cwd "$PWD")
	"$DSB" session mode "$id" workspace-write
	for i in $(seq 1 12); do
		"$DSB" bash --session "$id" "echo $i > '$PWD/c$i'; cat '$PWD/c$i'" >"r$i" &
	done
	wait
	for i in $(seq 1 12); do
		assert_streq "$(cat "r$i")" "$i"
	done
}

test_exec_passthrough_and_statuses() {
	rc=0
	echo from-stdin | "$DSB" exec --mode read-only -- cat >o.txt 2>e.txt || rc=$?
	[ "$rc" -eq 0 ] || fail "exit $rc"
	assert_streq "$(cat o.txt)" "from-stdin"
	rc=0
	"$DSB" exec --mode read-only -- bash -c 'echo out; echo x > /etc/nope' >o.txt 2>e.txt || rc=$?
	[ "$rc" -eq 1 ] || fail "exit $rc"
	assert_streq "$(cat o.txt)" "out"
	assert_streq "$(tail -n 1 e.txt)" "[sandbox: file access denied under read-only mode]"
	rc=0
	"$DSB" exec --mode read-only --timeout 200 -- sleep 5 || rc=$?
	[ "$rc" -eq 124 ] || fail "timeout exit $rc"
	rc=0
	"$DSB" exec --mode read-only -- sh -c 'exit 42' || rc=$?
	[ "$rc" -eq 42 ] || fail "exit $rc"
	rc=0
	"$DSB" exec --mode read-only --workdir / -- pwd >o.txt || rc=$?
	assert_streq "$(cat o.txt)" "/"
}

# --network: a value outside the three, or an allowlist with nothing allowed, is refused before
# anything runs (the control: a valid value runs the same command).
test_network_flag() {
	bashtool --mode workspace-write --network full "echo ran > '$PWD/m0'"
	assert_rc 0
	[ -e m0 ] || fail "the control did not run"
	bashtool --mode workspace-write --network bogus "echo ran > '$PWD/m1'"
	assert_rc 2
	assert_streq "$out" 'Error: --network: invalid access "bogus" (accepted: full, none, allowlist)'
	[ ! -e m1 ] || fail "bash --network bogus ran the command"
	run exec --workspace "$PWD" --mode workspace-write --network Full -- sh -c "echo ran > '$PWD/m2'"
	assert_rc 125
	assert_contains "$err" 'dsh-sandbox: --network: invalid access "Full" (accepted: full, none, allowlist)'
	[ ! -e m2 ] || fail "exec --network Full ran the command"
	# allowlist needs network.allow: refused without it, even where nothing is restricted.
	run exec --workspace "$PWD" --mode danger-full-access --network allowlist -- sh -c "echo ran > '$PWD/m3'"
	assert_rc 125
	assert_contains "$err" "network access allowlist needs at least one allowed host"
	[ ! -e m3 ] || fail "exec --network allowlist without network.allow ran the command"
	printf 'network: { allow: [registry.test] }\n' >net.yaml
	run --config net.yaml exec --workspace "$PWD" --mode danger-full-access --network allowlist -- sh -c "echo ran > '$PWD/m3'"
	assert_rc 0
	[ -e m3 ] || fail "exec --network allowlist with network.allow did not run"
	# serve: refused before it makes a session.
	local before
	before=$("$DSB" session list | wc -l)
	run serve --network none,full </dev/null
	assert_rc 2
	assert_contains "$err" 'serve: --network: invalid access "none,full"'
	run serve --network allowlist </dev/null
	assert_rc 3
	assert_contains "$err" "network access allowlist needs at least one allowed host"
	assert_streq "$("$DSB" session list | wc -l)" "$before"
}

# What a command prints cannot drive the caller's terminal: OSC 52 (the clipboard), OSC 0 (the
# title), an erase-line and a bidi override reach a terminal as visible text; a pipe, a file
# and --json get DSH's bytes exactly (the control: the bytes really are in the output).
OSC_CMD="printf 'a\\tb\\\\c\\033]52;c;cHduZWQ=\\007\\033]0;pwned\\007\\r\\033[2Kdone\\342\\200\\256\\n'"
OSC_RAW=$'a\tb\\c\e]52;c;cHduZWQ=\a\e]0;pwned\a\r\e[2Kdone\xe2\x80\xae\n'
OSC_SHOWN=$'a\tb\\c\\x1b]52;c;cHduZWQ=\\x07\\x1b]0;pwned\\x07\\r\\x1b[2Kdone\\u{202e}\n'

test_output_to_a_terminal_is_visible() {
	python3 "$(dirname "$0")/pty-run.py" -- "$DSB" bash --workspace "$PWD" --mode read-only "$OSC_CMD" >tty.bin
	! LC_ALL=C grep -qF $'\e]52' tty.bin || fail "OSC 52 reached the terminal: $(cat -A tty.bin)"
	! LC_ALL=C grep -qF $'\e]0' tty.bin || fail "OSC 0 reached the terminal: $(cat -A tty.bin)"
	! LC_ALL=C grep -q $'[\e\a\r]' tty.bin || fail "a raw control reached the terminal: $(cat -A tty.bin)"
	# Newline and tab stay, a backslash stays single, the rest is shown.
	cmp -s tty.bin <(printf %s "$OSC_SHOWN") || fail "the terminal got [$(cat -A tty.bin)]"

	"$DSB" bash --workspace "$PWD" --mode read-only "$OSC_CMD" >pipe.bin
	cmp -s pipe.bin <(printf %s "$OSC_RAW") || fail "the pipe got [$(cat -A pipe.bin)]"
	"$DSB" bash --workspace "$PWD" --mode read-only "$OSC_CMD" | cat >cat.bin
	cmp -s cat.bin pipe.bin || fail "a pipe through cat got [$(cat -A cat.bin)]"
	# --json on a terminal: JSON, exact (its escapes are JSON's).
	python3 "$(dirname "$0")/pty-run.py" -- "$DSB" bash --json --workspace "$PWD" --mode read-only "$OSC_CMD" >json.bin
	grep -qF '"a\tb\\c\u001b]52;c;cHduZWQ=\u0007\u001b]0;pwned\u0007\r\u001b[2Kdone'$'\xe2\x80\xae''\n"' json.bin ||
		fail "--json changed: $(cat -A json.bin)"
}

t "plain outputs render as DSH renders them" test_plain_outputs
t "denials render the marker and the escalation hint, on both backends" test_denial_markers_both_backends
t "the denial marker is read from stderr: words marked, a hidden refusal not" \
	test_denial_marker_is_read_from_stderr
t "timeout markers" test_timeout_markers
t "truncation notes, with and without a spill file" test_truncation_note
t "--json gives the structured result" test_json_result
t "the bash tool's validation texts" test_validation_texts
t "SANDBOX_UNAVAILABLE is an error result and nothing runs" test_unavailable_is_an_error_result
t "workdir rules and the managed DSH_* variables" test_workdir_and_dsh_env
t "many concurrent bash calls on one session" test_concurrent_calls_on_one_session
t "exec: passthrough, denial marker, 124, statuses, workdir" test_exec_passthrough_and_statuses
t "--network: invalid values and an empty allowlist are refused before anything runs" test_network_flag
t "output to a terminal: OSC 52, OSC 0, CSI and RLO shown, not obeyed; a pipe and --json exact" test_output_to_a_terminal_is_visible
done_testing
