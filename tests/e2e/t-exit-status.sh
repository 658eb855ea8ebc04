#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Exit statuses and messages that say what happened (issue 13, items 5 and 7), golden, on both
# backends: a command that does not exist is 127 and one that cannot be executed 126, in env(1)'s
# words (the sandbox ran; the command did not); a missing workspace or workdir and an empty
# --config are usage errors naming them; the probe needs no `true` on PATH. Runs as root and as
# nobody.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
# Only searchable directories: execvp reports EACCES when a PATH entry denied the search.
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin

for b in bwrap landlock; do
	"$DSB" probe --fresh --json | grep -q "{\"name\":\"$b\",\"usable\":true" ||
		fail "backend $b is not usable here: $("$DSB" probe --fresh)"
done

# x BACKEND MODE ARGV...: `exec` in ws/ as the workspace; $out $err $rc.
x() {
	local backend=$1 mode=$2
	shift 2
	run exec --backend "$backend" --mode "$mode" --workspace "$PWD/ws" -- "$@"
}

assert_no_sandbox_blame() {
	assert_not_contains "$err" "no sandbox backend"
	assert_not_contains "$err" "danger-full-access"
	assert_not_contains "$err" "bwrap: "
}

test_command_not_found() {
	local b=$1 mode
	mkdir ws
	for mode in read-only workspace-write; do
		x "$b" "$mode" dsb-no-such-command
		assert_rc 127
		assert_streq "$out" ""
		assert_streq "$err" "dsh-sandbox: dsb-no-such-command: No such file or directory"
		x "$b" "$mode" /no/such/dir/cmd arg
		assert_rc 127
		assert_streq "$err" "dsh-sandbox: /no/such/dir/cmd: No such file or directory"
		assert_no_sandbox_blame
	done
}

test_command_cannot_execute() {
	local b=$1 mode
	mkdir ws
	printf 'echo never\n' >ws/noexec
	chmod 0644 ws/noexec
	for mode in read-only workspace-write; do
		x "$b" "$mode" "$PWD/ws/noexec"
		assert_rc 126
		assert_streq "$out" ""
		assert_streq "$err" "dsh-sandbox: $PWD/ws/noexec: Permission denied"
		x "$b" "$mode" "$PWD/ws"
		assert_rc 126
		assert_streq "$err" "dsh-sandbox: $PWD/ws: Permission denied"
		assert_no_sandbox_blame
	done
}

# The command's own 126/127 and its own stderr are untouched; held-back stderr still arrives.
test_command_statuses_untouched() {
	local b=$1
	mkdir ws
	x "$b" read-only bash -c 'exit 127'
	assert_rc 127
	assert_streq "$err" ""
	x "$b" read-only bash -c 'exit 126'
	assert_rc 126
	assert_streq "$err" ""
	x "$b" read-only bash -c 'dsb-no-such-command'
	assert_rc 127
	assert_streq "$err" "bash: line 1: dsb-no-such-command: command not found"
	# A prefix of bwrap's execvp line from the command itself is shown, whole.
	x "$b" read-only bash -c 'printf "bwrap: exec" >&2'
	assert_rc 0
	assert_streq "$err" "bwrap: exec"
	x "$b" read-only bash -c 'echo "bwrap: execvp nope: No such file or directory" >&2'
	assert_rc 0
	assert_streq "$err" "bwrap: execvp nope: No such file or directory"
}

# The bash tool runs `bash -c`: bash reports the missing command, DSH's rendering stays.
test_bash_tool_keeps_dsh_rendering() {
	local b=$1
	mkdir ws
	run bash --backend "$b" --mode read-only --workspace "$PWD/ws" 'dsb-no-such-command'
	assert_rc 0
	assert_streq "$out" $'[stderr]\nbash: line 1: dsb-no-such-command: command not found\n[exit code: 127]'
}

# bash itself cannot be started: Node's spawn error under DSH's "Error: ", never doubled.
test_bash_tool_without_bash() {
	local b=$1
	mkdir ws
	local rc=0 out
	# A PATH with bwrap (the runner must be found) and no bash.
	mkdir pbin
	ln -s "$(command -v bwrap)" pbin/bwrap
	out=$(env PATH="$PWD/pbin" "$DSB" bash --backend "$b" --mode read-only --workspace "$PWD/ws" 'true') || rc=$?
	assert_streq "$rc $out" "126 Error: spawn bash ENOENT"
	rc=0
	out=$(env PATH="$PWD/pbin" "$DSB" bash --json --backend "$b" --mode read-only --workspace "$PWD/ws" 'true') || rc=$?
	assert_streq "$rc $out" '126 {"error":{"name":"Error","code":"EXEC_FAILED","message":"spawn bash ENOENT"}}'
}

test_missing_workspace_or_workdir() {
	local b=$1
	mkdir ws
	touch ws/file
	# exec: a usage error of its own is 125, as env(1)'s and timeout(1)'s, never a status of
	# the command's.
	run exec --backend "$b" --mode read-only --workspace "$PWD/no-such-ws" -- true
	assert_rc 125
	assert_streq "$err" "dsh-sandbox: workspace $PWD/no-such-ws: No such file or directory"
	run exec --backend "$b" --mode read-only --workspace "$PWD/ws" --workdir sub -- true
	assert_rc 125
	assert_streq "$err" "dsh-sandbox: workdir $PWD/ws/sub: No such file or directory"
	run exec --backend "$b" --mode read-only --workspace "$PWD/ws" --workdir file -- true
	assert_rc 125
	assert_streq "$err" "dsh-sandbox: workdir $PWD/ws/file: Not a directory"
	# The bash tool: its error text, the same usage status.
	run bash --backend "$b" --mode read-only --workspace "$PWD/ws" --workdir sub 'true'
	assert_rc 2
	assert_streq "$out" "Error: workdir $PWD/ws/sub: No such file or directory"
	run bash --backend "$b" --mode read-only --workspace "$PWD/no-such-ws" 'true'
	assert_rc 2
	assert_streq "$out" "Error: workspace $PWD/no-such-ws: No such file or directory"
}

test_danger_full_access_not_found() {
	mkdir ws
	run exec --mode danger-full-access --workspace "$PWD/ws" -- dsb-no-such-command
	assert_rc 127
	assert_streq "$err" "dsh-sandbox: dsb-no-such-command: No such file or directory"
	run exec --mode danger-full-access --workspace "$PWD/ws" -- "$PWD/ws"
	assert_rc 126
	assert_streq "$err" "dsh-sandbox: $PWD/ws: Permission denied"
}

test_empty_config_is_a_usage_error() {
	mkdir ws
	run --config "" exec --mode read-only --workspace "$PWD/ws" -- true
	assert_rc 125
	assert_streq "$err" "dsh-sandbox: --config: expected a file path, got an empty string"
	run exec --config "" --mode read-only --workspace "$PWD/ws" -- true
	assert_rc 125
	assert_streq "$err" "dsh-sandbox: --config: expected a file path, got an empty string"
	run bash --config "" --mode read-only --workspace "$PWD/ws" 'true'
	assert_rc 2
	assert_streq "$out" "Error: --config: expected a file path, got an empty string"
}

# DSH probes with `true`; ours runs /bin/sh -c : and looks nothing up on PATH.
test_probe_needs_no_true_on_path() {
	rc=0
	env PATH=/nonexistent "$DSB" probe --fresh >probe.txt 2>&1 || rc=$?
	assert_rc 0
	assert_file_has_content probe.txt '^landlock: usable'
	# bwrap itself is found on PATH (as DSH finds it): a PATH with bwrap and no `true`.
	mkdir bin
	ln -s "$(command -v bwrap)" bin/bwrap
	env PATH="$PWD/bin" "$DSB" probe --fresh >probe.txt 2>&1 || rc=$?
	assert_rc 0
	assert_file_has_content probe.txt '^bwrap: usable'
	assert_file_has_content probe.txt '^landlock: usable'
	[ ! -e bin/true ] || fail "bin/true exists"
}

for b in bwrap landlock; do
	t "$b: a command that does not exist is 127, env(1)'s words" test_command_not_found "$b"
	t "$b: a command that cannot be executed is 126" test_command_cannot_execute "$b"
	t "$b: the command's own 126/127 and stderr pass untouched" test_command_statuses_untouched "$b"
	t "$b: the bash tool keeps DSH's rendering of bash's 127" test_bash_tool_keeps_dsh_rendering "$b"
	t "$b: a missing workspace or workdir is a usage error naming it" test_missing_workspace_or_workdir "$b"
	t "$b: the bash tool without bash: one \"Error: \", Node's message" test_bash_tool_without_bash "$b"
done
t "danger-full-access: 127 and 126 as well" test_danger_full_access_not_found
t "--config \"\" is a usage error (exec: 125)" test_empty_config_is_a_usage_error
t "the probe needs no true on PATH" test_probe_needs_no_true_on_path
done_testing
