#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every message tells the truth (issue 32, items 1-4 and the terminal's newline), golden: an
# interrupted call keeps what its command said and says it was interrupted; a timeout says so;
# an over-long command is the caller's error, never "no sandbox"; a refused escalation that
# nobody decided says why on stderr while the model reads DSH's words; --timeout takes units and
# names itself; the configuration's errors name the user's keys; `session show` and
# `permission` agree; every documented exit status (docs/error-codes.md) is produced here; and
# every command's --help names only options it takes. Runs as root and as nobody.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
# Only searchable directories: execvp reports EACCES when a PATH entry denied the search.
export PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
CLIENT="$(dirname "$0")/mcp-client.py"
PTY_RUN="$(dirname "$0")/pty-run.py"

for b in bwrap landlock; do
	"$DSB" probe --fresh --json | grep -q "{\"name\":\"$b\",\"usable\":true" ||
		fail "backend $b is not usable here: $("$DSB" probe --fresh)"
done

# signal_number NAME: INT -> 2.
signal_number() {
	kill -l "$1"
}

# interrupt SIG ARGS...: runs dsh-sandbox ARGS in the background, whose command touches
# $PWD/started first; once it has, sends SIG to dsh-sandbox alone. $out $err $rc.
interrupt() {
	local sig=$1
	shift
	rm -f started
	"$DSB" "$@" >"$PWD/.out" 2>"$PWD/.err" &
	local pid=$! tries=0
	while [ ! -e started ] && [ $((tries += 1)) -le 200 ]; do
		sleep 0.05
	done
	[ -e started ] || fail "the command never started"
	kill "-$sig" "$pid"
	rc=0
	wait "$pid" || rc=$?
	out=$(cat "$PWD/.out")
	err=$(cat "$PWD/.err")
}

# A command with a mark no other process has: whether it still runs after the call.
SLEEPER="sleep 30.$$"
assert_no_sleeper() {
	! pgrep -f "$SLEEPER" >/dev/null || fail "the interrupted command still runs"
}

# --- item 1: interrupted calls ----------------------------------------------------------------

test_bash_interrupted() {
	local b=$1 sig n
	for sig in INT TERM HUP; do
		n=$(signal_number "$sig")
		interrupt "$sig" bash --backend "$b" --mode workspace-write --workspace "$PWD" \
			"echo start; echo err >&2; touch started; $SLEEPER"
		assert_rc $((128 + n))
		assert_streq "$out" "start
[stderr]
err
[killed by signal: SIGTERM]"
		assert_streq "$err" "dsh-sandbox: interrupted by SIG$sig: the command was stopped"
		assert_no_sleeper
	done
}

test_bash_interrupted_json() {
	local b=$1
	interrupt TERM bash --json --backend "$b" --mode workspace-write --workspace "$PWD" \
		"echo start; touch started; $SLEEPER"
	assert_rc 143
	assert_streq "$err" "dsh-sandbox: interrupted by SIGTERM: the command was stopped"
	printf '%s' "$out" | python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["error"] == {"name": "AbortError", "code": "ABORTED", "message": "tool call aborted"}, r
assert r["aborted"] is True and r["timedOut"] is False and r["exitCode"] is None, r
assert r["signal"] == "SIGTERM", r
assert r["stdout"]["text"] == "start\n", r
assert r["sandbox"]["mode"] == "workspace-write", r
' || fail "bash --json after SIGTERM: $out"
	assert_no_sleeper
}

test_exec_interrupted() {
	local b=$1
	interrupt TERM exec --backend "$b" --mode workspace-write --workspace "$PWD" -- \
		sh -c "echo start; touch started; exec $SLEEPER"
	assert_rc 143
	assert_streq "$out" "start"
	assert_streq "$err" "dsh-sandbox: interrupted by SIGTERM: the command was stopped"
	assert_no_sleeper
	# SIGINT sent by a process (kill, timeout(1)) reached dsh-sandbox alone: it stops the
	# command too, where before it was ignored and the command ran on.
	interrupt INT exec --backend "$b" --mode workspace-write --workspace "$PWD" -- \
		sh -c "touch started; exec $SLEEPER"
	assert_rc 130
	assert_streq "$err" "dsh-sandbox: interrupted by SIGINT: the command was stopped"
	assert_no_sleeper
}

# The control: unconfined, the same SIGTERM to a plain parent leaves its child running; what
# stopped it above is the interruption, not the signal.
test_interrupt_control() {
	sh -c "touch started; $SLEEPER" &
	local child=$! tries=0
	while [ ! -e started ] && [ $((tries += 1)) -le 100 ]; do
		sleep 0.05
	done
	pgrep -f "$SLEEPER" >/dev/null || fail "the control's command is not running"
	kill "$child"
	wait "$child" || true
	pkill -f "$SLEEPER" || true
}

test_exec_timeout_says_so() {
	local b=$1
	run exec --backend "$b" --mode read-only --workspace "$PWD" --timeout 300ms -- sleep 5
	assert_rc 124
	assert_streq "$err" "dsh-sandbox: timed out after 300ms: the command was stopped"
	run exec --backend "$b" --mode read-only --workspace "$PWD" --timeout 0 -- echo none
	assert_rc 0
	assert_streq "$out" "none"
	assert_streq "$err" ""
}

# --- item 2: errors that name the real cause --------------------------------------------------

test_overlong_command_is_the_callers() {
	mkdir ws
	local most
	most=$(($(getconf PAGESIZE) * 32 - 1))
	python3 -c 'import json; print(json.dumps({"command": "echo " + "a" * 300000, "description": "long"}))' >long.json
	out=$(python3 "$CLIENT" call "$PWD/ws" "" bash "@$PWD/long.json")
	assert_streq "$out" "isError=true
Error: invalid command: 300005 bytes, more than the $most one argument may hold (the kernel's MAX_ARG_STRLEN); write the script to a file and run the file"
	assert_not_contains "$out" "no sandbox backend"
	# At the limit it runs.
	python3 -c 'import json, sys; print(json.dumps({"command": "printf %s " + "a" * (int(sys.argv[1]) - 20) + " | wc -c", "description": "long"}))' "$most" >edge.json
	out=$(python3 "$CLIENT" call "$PWD/ws" "" bash "@$PWD/edge.json")
	assert_streq "$out" "isError=false
$((most - 20))"
}

# An argument list dsh-sandbox itself was given, that bwrap's own arguments push past the kernel's
# ARG_MAX: the caller's to shorten (125, as every exec failure of ours), not "no sandbox".
test_argument_list_too_long() {
	python3 - "$DSB" "$PWD" <<'EOF'
import os, subprocess, sys
dsb, ws = sys.argv[1], sys.argv[2]
env = {k: v for k, v in os.environ.items()
       if k in ("PATH", "HOME", "DSH_SANDBOX_STORE", "LD_LIBRARY_PATH", "ASAN_OPTIONS")}
base = [dsb, "exec", "--backend", "bwrap", "--mode", "read-only", "--workspace", ws, "--", "true"]
def size(argv):  # what execve() counts: each string and its pointer, both lists' NULLs
    return (sum(len(a) + 9 for a in argv) + sum(len(k) + len(v) + 10 for k, v in env.items())
            + 16)
room = os.sysconf("SC_ARG_MAX") - size(base) - 100
args = []
while room > 0:
    n = min(100000, room - 9)
    args.append("a" * max(n, 1))
    room -= n + 9
p = subprocess.run(base + args, env=env, capture_output=True, text=True)
want = ("dsh-sandbox: argument list too long: the command's arguments and environment are more "
        "than the kernel takes (ARG_MAX, %d bytes here)\n" % os.sysconf("SC_ARG_MAX"))
assert (p.returncode, p.stderr) == (125, want), (p.returncode, p.stderr[:500])
EOF
}

# escalate CONFIG: an escalation from a read-only session, asked of whoever CONFIG names.
escalate() {
	local config=$1
	run ${config:+--config "$config"} bash --session "$SESSION" --sandbox-permissions workspace-write \
		--justification 'it needs to write' 'touch escalated'
}

test_refusals_say_why() {
	mkdir ws
	SESSION=$("$DSB" session new --cwd "$PWD/ws")
	local unavailable='Error: sandbox escalation to "workspace-write" requires approval, but no approval channel is available'
	# No terminal, no answerer.
	rc=0
	setsid -w "$DSB" bash --session "$SESSION" --sandbox-permissions workspace-write \
		--justification 'it needs to write' 'touch escalated' >.out 2>.err </dev/null || rc=$?
	assert_rc 8
	assert_streq "$(cat .out)" "$unavailable"
	assert_streq "$(cat .err)" "dsh-sandbox: approval: no terminal to ask on, and the configuration names no approval.answerer"
	# answer PROGRAM...: the configuration whose answerer is PROGRAM.
	answer() {
		printf 'approval:\n  answerer: [%s]\n' "$(printf '"%s", ' "$@" | sed 's/, $//')" >answer.yaml
	}
	answer "$PWD/no-such-answerer"
	escalate answer.yaml
	assert_rc 8
	assert_streq "$out" "$unavailable"
	assert_streq "$err" "dsh-sandbox: approval: the approval answerer $PWD/no-such-answerer could not be started: No such file or directory"
	answer sh -c 'echo the answerer broke >&2; exit 3'
	escalate answer.yaml
	assert_rc 8
	assert_streq "$out" "$unavailable"
	assert_streq "$err" "the answerer broke
dsh-sandbox: approval: the approval answerer sh exited with status 3"
	answer sh -c 'kill -KILL $$'
	escalate answer.yaml
	assert_streq "$err" "dsh-sandbox: approval: the approval answerer sh was killed by signal SIGKILL"
	answer sh -c 'echo maybe'
	escalate answer.yaml
	assert_rc 8
	assert_streq "$out" "$unavailable"
	assert_streq "$err" 'dsh-sandbox: approval: the approval answerer sh answered "maybe", which is none of allowed-once, rejected, cancelled, unavailable'
	# The control: an answerer that allows, and the same call runs.
	answer sh -c 'echo allowed-once'
	escalate answer.yaml
	assert_rc 0
	assert_streq "$err" ""
	[ -e ws/escalated ] || fail "the allowed escalation did not run"
	# The server: the model reads DSH's words; the operator's log says why.
	answer sh -c 'exit 3'
	out=$(MCP_CALL_STDERR=1 python3 "$CLIENT" call "$PWD/ws" "$PWD/answer.yaml" bash \
		'{"command":"touch escalated","description":"d","sandbox_permissions":"workspace-write","justification":"it needs to write"}')
	assert_contains "$out" "isError=true
$unavailable
[server stderr]"
	assert_contains "$out" "
dsh-sandbox serve: approval: the approval answerer sh exited with status 3"
	# `never`: DSH's words for the model, ours for the person.
	"$DSB" session approval "$SESSION" never >/dev/null
	escalate ""
	assert_rc 8
	assert_streq "$out" 'Error: the user rejected escalating this command to "workspace-write"'
	assert_streq "$err" "dsh-sandbox: approval: the approval policy is never: the escalation was refused without asking anyone"
}

# --- item 3: units and numbers ----------------------------------------------------------------

test_timeout_units() {
	local t
	for t in 3000 3000ms 3s 1m; do
		run bash --mode read-only --workspace "$PWD" --timeout "$t" 'sleep 0.2; echo ran'
		assert_rc 0
		assert_streq "$out" "ran"
	done
	run bash --mode read-only --workspace "$PWD" --timeout 1s 'sleep 5'
	assert_streq "$out" "(no output)
[timed out after 1000ms]
[killed by signal: SIGTERM]"
	for t in 5x 1.5s -5 0 s ''; do
		run bash --mode read-only --workspace "$PWD" --timeout "$t" 'true'
		assert_rc 2
		assert_streq "$out" "Error: invalid --timeout: expected a positive duration (milliseconds, or with a unit: 500ms, 30s, 2m), got \"$t\""
	done
	run exec --mode read-only --workspace "$PWD" --timeout 5x -- true
	assert_rc 125
	assert_streq "$err" 'dsh-sandbox: invalid --timeout: expected a duration (milliseconds, or with a unit: 500ms, 30s, 2m; 0 for none), got "5x"'
}

# config_error YAML MESSAGE: a file holding YAML is refused with MESSAGE (after "dsh-sandbox: ").
config_error() {
	printf "%b" "$1" >c.yaml
	run --config c.yaml policy
	assert_rc 3
	assert_streq "$err" "dsh-sandbox: c.yaml:$2"
}

test_config_errors_name_the_users_keys() {
	config_error 'bash:\n  timeoutMs: 0\n' \
		'2:14: bash.timeoutMs: invalid value "0": expected a positive whole number'
	config_error 'bash:\n\ttimeoutMs: 5\n' \
		'2:1: YAML syntax error: found character that cannot start any token (while scanning for the next token); YAML indents with spaces, and this line starts with a tab'
	config_error 'network:\n  allow: ["https://pypi.org/simple"]\n' \
		'2:11: network.allow: invalid host pattern "https://pypi.org/simple": a host pattern, not a URL: write pypi.org'
	run --config missing.yaml policy
	assert_rc 3
	assert_streq "$err" "dsh-sandbox: missing.yaml: cannot open: No such file or directory"
}

# --- item 4: one answer to one question -------------------------------------------------------

test_show_and_permission_agree() {
	local s preset
	s=$("$DSB" session new --cwd "$PWD")
	for step in "mode workspace-write" "approval never" "mode read-only" "approval ask"; do
		"$DSB" session "${step%% *}" "$s" "${step#* }" >/dev/null
		preset=$("$DSB" session show "$s" | sed -n 's/^preset: //p')
		assert_streq "$("$DSB" permission --session "$s")" \
			"current preset $preset (available: read-only, workspace-write, danger-full-access)"
		assert_streq "$("$DSB" session show "$s" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["preset"])')" "$preset"
	done
	"$DSB" session mode "$s" workspace-write >/dev/null
	assert_streq "$("$DSB" session show "$s" | sed -n 's/^preset: //p')" workspace-write
	# A call has a session or a mode; `policy` shows a session's under another mode.
	run bash --session "$s" --mode danger-full-access true
	assert_rc 2
	assert_contains "$err" "dsh-sandbox: bash: --session and --mode do not go together"
	run exec --session "$s" --mode danger-full-access -- true
	assert_rc 125
	assert_contains "$err" "dsh-sandbox: exec: --session and --mode do not go together"
	run fs read --session "$s" --mode danger-full-access x
	assert_rc 2
	assert_contains "$err" "dsh-sandbox: fs: --session and --mode do not go together"
	run policy --session "$s" --mode danger-full-access
	assert_rc 0
	assert_contains "$out" "mode: danger-full-access"
	run bash --help
	assert_contains "$out" "the sandbox mode of a call without a session"
}

# --- item 6: a terminal gets a final newline, a pipe DSH's bytes ------------------------------

test_terminal_newline() {
	python3 "$PTY_RUN" -- "$DSB" bash --workspace "$PWD" --mode read-only 'printf done' >tty.bin
	assert_streq "$(od -An -c tty.bin | tr -s ' ')" " d o n e \n"
	"$DSB" bash --workspace "$PWD" --mode read-only 'printf done' >pipe.bin
	assert_streq "$(od -An -c pipe.bin | tr -s ' ')" " d o n e"
}

# --- every documented exit status -------------------------------------------------------------

# status WANT ARGS...: dsh-sandbox ARGS exits WANT.
status() {
	local want=$1
	shift
	run "$@"
	assert_rc "$want"
}

test_exit_statuses() {
	mkdir ws
	local s
	s=$("$DSB" session new --cwd "$PWD/ws")
	printf 'sandbox-local: { runnerCommand: [%s/missing-runner], runnerFailureSignatures: ["x: "] }\n' \
		"$PWD" >runner.yaml
	status 0 bash --mode read-only --workspace ws 'exit 3'
	status 1 --store /proc/dsb-no-store session new
	status 2 bash --mode bogus true
	status 2 sesion
	status 3 --config missing.yaml policy
	status 4 fs write --mode workspace-write --workspace ws /etc/dsb-nope </dev/null
	status 5 fs write --mode danger-full-access /sys/kernel/dsb-nope </dev/null
	mkdir bad && printf 'not json\n' >bad/session.jsonl
	status 6 session show "$PWD/bad/session.jsonl"
	status 7 session show 00000000-0000-4000-8000-000000000000
	printf 'approval: { answerer: [sh, -c, "echo rejected"] }\n' >reject.yaml
	status 8 --config reject.yaml bash --session "$s" --sandbox-permissions workspace-write \
		--justification why 'true'
	status 9 fs read --mode read-only --workspace ws ws/missing
	status 125 --config runner.yaml bash --mode read-only --workspace ws true
	interrupt HUP bash --mode workspace-write --workspace "$PWD" "touch started; $SLEEPER"
	assert_rc 129
	# exec: the command's, and 124 to 127 and 128+N.
	status 0 exec --mode read-only --workspace ws -- true
	status 123 exec --mode read-only --workspace ws -- sh -c 'exit 123'
	status 124 exec --mode read-only --workspace ws --timeout 100 -- sleep 5
	status 125 exec --mode bogus -- true
	status 125 exec --bogus -- true
	status 125 --config missing.yaml exec --mode read-only --workspace ws -- true
	status 125 --config runner.yaml exec --mode read-only --workspace ws -- true
	printf 'echo never\n' >ws/noexec
	status 126 exec --mode read-only --workspace ws -- "$PWD/ws/noexec"
	status 127 exec --mode read-only --workspace ws -- dsb-no-such-command
	status 138 exec --mode read-only --workspace ws -- sh -c 'kill -USR1 $$'
	interrupt TERM exec --mode workspace-write --workspace "$PWD" -- sh -c "touch started; $SLEEPER"
	assert_rc 143
	# landlock-run: the command's, 125 for its own failures, 0 for --help.
	status 0 landlock-run --help
	status 125 landlock-run --bogus
	status 7 landlock-run --ro / -- sh -c 'exit 7'
}

# Every option a command's --help names, it takes: none is refused as unknown.
test_help_names_only_accepted_options() {
	local cmd opt
	for cmd in $("$DSB" --help | sed -n 's/^  \([a-z-]*\) .*/\1/p' | sort -u); do
		[ "$cmd" = landlock-run ] && continue
		run "$cmd" --help
		assert_rc 0
		for opt in $(printf '%s\n' "$out" | grep -o -- '--[a-z][a-z-]*' | sort -u); do
			run "$cmd" "$opt"
			assert_not_contains "$err" "unknown option '$opt'"
		done
	done
}

for b in bwrap landlock; do
	t "$b: an interrupted bash prints what it captured, says so, 128+N" test_bash_interrupted "$b"
	t "$b: an interrupted bash --json carries the aborted run" test_bash_interrupted_json "$b"
	t "$b: an interrupted exec stops its command and says so" test_exec_interrupted "$b"
	t "$b: exec --timeout says so; --timeout 0 is none" test_exec_timeout_says_so "$b"
done
t "control: a plain parent's SIGTERM leaves its child running" test_interrupt_control
t "an over-long command is the caller's error, not an unavailable sandbox" test_overlong_command_is_the_callers
t "an argument list past ARG_MAX is the caller's error" test_argument_list_too_long
t "a refused escalation nobody decided says why; the model's text stays DSH's" test_refusals_say_why
t "--timeout takes ms, s and m and names itself" test_timeout_units
t "configuration errors name the user's keys, tabs and URLs" test_config_errors_name_the_users_keys
t "session show and permission give one preset; --session and --mode" test_show_and_permission_agree
t "a terminal gets a final newline, a pipe DSH's bytes" test_terminal_newline
t "every documented exit status" test_exit_statuses
t "every --help names only options its command takes" test_help_names_only_accepted_options
done_testing
