#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end escalation and approval (dsh-compat §8.1-8.5, §6.7 steps 1-4): a denied command retried
# once with --sandbox-permissions and a justification runs wider only when approved, with the
# audit pair in the log; every refusal has DSH's text and runs nothing. Answerers: a script
# (approval.answerer), the terminal (driven through a pseudo-terminal), none.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME DSH_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
FIXTURES=${DSB_SOURCE_ROOT:?}/tests/fixtures/dsh
JUST='the user asked to write a file outside the workspace'

# answerer OUTCOME: a config whose external answerer records the request and answers OUTCOME.
answerer() {
	cat >answer.sh <<-SCRIPT
		#!/bin/sh
		cat > "$PWD/request.json"
		touch "$PWD/answerer-ran"
		$1
	SCRIPT
	chmod +x answer.sh
	printf 'approval: { answerer: [%s/answer.sh] }\n' "$PWD" >cfg.yaml
}

# A session in read-only, and a target outside every grant.
setup() {
	ID=$("$DSB" session new --cwd "$PWD")
	"$DSB" session mode "$ID" read-only
	OUT=$(mktemp -d /var/tmp/dsb-esc.XXXXXX)
	trap 'rm -rf "$OUT"' EXIT
}

escalate() {
	run --config cfg.yaml bash --session "$ID" --sandbox-permissions "$1" --justification "$JUST" "$2"
}

events() {
	"$DSB" session log "$ID" | sed 's/"time":[0-9]*,//; s/"id":"[0-9a-f-]*"/"id":ID/g'
}

test_denied_then_approved_retry_runs_wider() {
	setup
	answerer 'echo allowed-once'
	run bash --session "$ID" "echo x > '$OUT/f'"
	assert_contains "$out" "[sandbox: file access denied under read-only mode]"
	local n
	n=$(events | wc -l)
	escalate danger-full-access "echo escalated > '$OUT/f' && cat '$OUT/f'"
	assert_rc 0
	assert_streq "$out" "escalated"
	assert_streq "$(events | tail -n 4)" '{"type":"turn/start","seq":'"$n"',"data":{"turn":1}}
{"type":"approval/asked","seq":'$((n + 1))',"data":{"id":ID,"toolName":"bash","reason":"escalate sandbox to danger-full-access: '"$JUST"'"}}
{"type":"approval/decided","seq":'$((n + 2))',"data":{"id":ID,"outcome":"allowed-once"}}
{"type":"turn/end","seq":'$((n + 3))',"data":{"turn":1,"reason":{"kind":"completed"}}}'
	assert_file_has_content request.json '"toolName":"bash","reason":"escalate sandbox to danger-full-access: '
	# The grant was for that call only: the next one is read-only again.
	run bash --session "$ID" "echo again > '$OUT/g'"
	assert_contains "$out" "denied under read-only mode"
}

test_refusals_run_nothing() {
	setup
	local outcome text
	for pair in "rejected|the user rejected escalating this command to \"workspace-write\"" \
		"cancelled|approval for escalating to \"workspace-write\" was cancelled" \
		"unavailable|sandbox escalation to \"workspace-write\" requires approval, but no approval channel is available" \
		"maybe|sandbox escalation to \"workspace-write\" requires approval, but no approval channel is available" \
		"exit 1|sandbox escalation to \"workspace-write\" requires approval, but no approval channel is available"; do
		outcome=${pair%%|*}
		text=${pair#*|}
		case "$outcome" in
		exit*) answerer "$outcome" ;;
		*) answerer "echo $outcome" ;;
		esac
		escalate workspace-write "touch '$PWD/ran-$RANDOM'"
		assert_rc 8
		assert_streq "$out" "Error: $text"
	done
	[ -z "$(ls ran-* 2>/dev/null)" ] || fail "a refused command ran"
}

test_hung_answerer_is_cancelled_at_the_timeout() {
	setup
	answerer 'sleep 30; echo allowed-once'
	run --config cfg.yaml bash --session "$ID" --timeout 400 --sandbox-permissions workspace-write \
		--justification "$JUST" "touch '$PWD/late'"
	assert_streq "$out" 'Error: approval for escalating to "workspace-write" was cancelled'
	[ ! -e late ] || fail "ran after a cancelled approval"
}

test_policy_never_rejects_without_asking() {
	setup
	answerer 'echo allowed-once'
	"$DSB" session approval "$ID" never
	escalate workspace-write "touch '$PWD/never'"
	assert_streq "$out" 'Error: the user rejected escalating this command to "workspace-write"'
	[ ! -e answerer-ran ] || fail "an answerer was consulted under never"
	[ ! -e never ] || fail "ran"
	assert_contains "$(events | tail -n 2 | head -n 1)" '"outcome":"rejected"'
}

test_checks_before_any_event() {
	setup
	answerer 'echo allowed-once'
	local before
	before=$("$DSB" session log "$ID" | wc -l)
	escalate read-only "true"
	assert_streq "$out" 'Error: invalid arguments: "sandbox_permissions" must be one of ["workspace-write","danger-full-access"]'
	"$DSB" session mode "$ID" workspace-write
	before=$("$DSB" session log "$ID" | wc -l)
	escalate workspace-write "true"
	assert_rc 8
	assert_streq "$out" 'Error: sandbox escalation to "workspace-write" is not strictly wider than this call'"'"'s current "workspace-write" mode'
	run --config cfg.yaml bash --session "$ID" --sandbox-permissions danger-full-access "true"
	assert_streq "$out" "Error: invalid escalation: sandbox_permissions requires a justification"
	run --config cfg.yaml bash --session "$ID" --justification "$JUST" "true"
	assert_streq "$out" "Error: invalid escalation: justification is only valid together with sandbox_permissions"
	run --config cfg.yaml bash --session "$ID" --sandbox-permissions danger-full-access --justification "  " "true"
	assert_streq "$out" "Error: invalid justification: expected a non-empty sentence"
	[ "$("$DSB" session log "$ID" | wc -l)" -eq "$before" ] || fail "events were appended"
	[ ! -e answerer-ran ] || fail "asked anyway"
	run --config cfg.yaml bash --mode read-only --sandbox-permissions workspace-write --justification "$JUST" "true"
	assert_streq "$out" 'Error: sandbox escalation to "workspace-write" requires approval, but the call has no agent to route it through'
}

test_inside_an_open_turn_no_new_turn() {
	setup
	answerer 'echo allowed-once'
	"$DSB" session log "$ID" >/dev/null
	# A harness that already opened turn 4 for this call.
	local log
	log=$("$DSB" session show "$ID" --json | sed 's/.*"path":"\([^"]*\)".*/\1/')
	"$DSB" session mode "$ID" read-only
	printf '{"type":"turn/start","seq":%d,"time":1,"data":{"turn":4}}\n' \
		"$(($("$DSB" session log "$ID" | wc -l)))" >>"$log"
	escalate workspace-write "true"
	assert_rc 0
	assert_streq "$(events | tail -n 3 | cut -d, -f1)" '{"type":"turn/start"
{"type":"approval/asked"
{"type":"approval/decided"'
}

# Replays DSH's escalation fixtures: from the log prefix before the tool/call, our flow appends
# the same approval/asked (toolName, callId, reason) and the same decided outcome.
replay() {
	local name=$1 outcome=$2
	head -n "$(grep -n '"type":"tool/call"' "$FIXTURES/$name" | head -n 1 | cut -d: -f1)" \
		"$FIXTURES/$name" >prefix.jsonl
	local call
	call=$(grep -o '"tool/call","data":{"turn":1,"step":1,"callId":"[^"]*"' prefix.jsonl | sed 's/.*"callId":"//; s/"$//')
	answerer "echo $outcome"
	# The fixture's cwd is a placeholder: run in this directory.
	run --config cfg.yaml bash --session "$PWD/prefix.jsonl" --workdir "$PWD" --call-id "$call" \
		--sandbox-permissions danger-full-access --justification "$JUST" "true"
	local want got
	want=$(grep -E '"approval/(asked|decided)"' "$FIXTURES/$name" | sed 's/"id":"[0-9a-f-]*"/"id":ID/')
	got=$(tail -n 2 prefix.jsonl | sed 's/,"seq":[0-9]*,"time":[0-9]*//; s/"id":"[0-9a-f-]*"/"id":ID/')
	assert_streq "$got" "$want"
}

test_replays_approved_fixture() {
	replay escalation-approved.session.jsonl allowed-once
	assert_rc 0
}

test_replays_rejected_fixture() {
	replay escalation-rejected.session.jsonl rejected
	assert_streq "$out" 'Error: the user rejected escalating this command to "danger-full-access"'
}

# The terminal prompt, through a pseudo-terminal: y allows once, n rejects, Ctrl-C cancels.
prompt() {
	python3 - "$DSB" "$ID" "$1" "$2" <<-'PY'
		import os, pty, sys, time
		dsb, sid, keys, target = sys.argv[1:5]
		pid, fd = pty.fork()
		if pid == 0:
		    os.execv(dsb, [dsb, "bash", "--session", sid, "--sandbox-permissions",
		                   "workspace-write", "--justification", "needed for the test",
		                   "touch " + target])
		seen = b""
		while b"Allow once?" not in seen:
		    seen += os.read(fd, 1024)
		os.write(fd, keys.encode().decode("unicode_escape").encode())
		while True:
		    try:
		        chunk = os.read(fd, 1024)
		    except OSError:
		        break
		    if not chunk:
		        break
		    seen += chunk
		os.waitpid(pid, 0)
		sys.stdout.write(seen.decode("utf-8", "replace"))
	PY
}

test_terminal_prompt() {
	setup
	out=$(prompt 'y\n' "$PWD/yes")
	assert_contains "$out" "tool:          bash"
	assert_contains "$out" "mode:          workspace-write"
	assert_contains "$out" "justification: needed for the test"
	[ -e yes ] || fail "allowed once, yet nothing ran: $out"
	out=$(prompt 'n\n' "$PWD/no")
	assert_contains "$out" 'Error: the user rejected escalating this command to "workspace-write"'
	[ ! -e no ] || fail "rejected, yet it ran"
	out=$(prompt '\x03' "$PWD/cancel")
	assert_contains "$out" 'Error: approval for escalating to "workspace-write" was cancelled'
	[ ! -e cancel ] || fail "cancelled, yet it ran"
}

# --- the person sees what will run ----------------------------------------------------------------
# A hostile model's command: on a raw terminal the CR, erase-line and cursor-up would wipe its
# first line (the part that really does something) and the RLO would reverse what follows; the
# newline starts the harmless-looking line a person would read. Its first line records the
# string bash was given (BASH_EXECUTION_STRING), the control that these very bytes ran.
SPOOF=$'printf %s "$BASH_EXECUTION_STRING" > ran.txt #\r\e[2K\e[1A\xe2\x80\xae\necho shown'
# shellcheck disable=SC2016 # the text bash is shown, not expanded
SPOOF_SHOWN='printf %s "$BASH_EXECUTION_STRING" > ran.txt #\r\x1b[2K\x1b[1A\u{202e}\necho shown'
# A justification that forges a line of the prompt.
SPOOF_JUST=$'needed\n  mode:           read-only'
SPOOF_JUST_SHOWN='needed\n  mode:           read-only'
PTY_RUN="$(dirname "$0")/pty-run.py"

# raw_free FILE: FILE holds no ESC, no CR and no raw U+202E.
raw_free() {
	! LC_ALL=C grep -q $'\e' "$1" || fail "a raw ESC reached $1: $(cat -A "$1")"
	! LC_ALL=C grep -q $'\r' "$1" || fail "a raw CR reached $1: $(cat -A "$1")"
	! LC_ALL=C grep -qF $'\xe2\x80\xae' "$1" || fail "a raw U+202E reached $1: $(cat -A "$1")"
}

# The control: what ran is the spoof itself, every byte of it.
ran_the_spoof() {
	[ -e ran.txt ] || fail "the hidden part did not run"
	cmp -s ran.txt <(printf %s "$SPOOF") || fail "ran [$(cat -A ran.txt)], not the spoof"
}

test_terminal_prompt_shows_the_hidden_part() {
	setup
	rc=0
	python3 "$PTY_RUN" --answer "Allow once?" 'y\n' -- "$DSB" bash --session "$ID" \
		--sandbox-permissions workspace-write --justification "$SPOOF_JUST" "$SPOOF" >tty.bin || rc=$?
	assert_rc 0
	raw_free tty.bin
	grep -qxF "  command:       $SPOOF_SHOWN" tty.bin || fail "no command line: $(cat -A tty.bin)"
	grep -qxF "  justification: $SPOOF_JUST_SHOWN" tty.bin || fail "no justification line: $(cat -A tty.bin)"
	# One line each: the newlines forged none of the prompt's own.
	assert_streq "$(grep -c '^  command:' tty.bin)" 1
	assert_streq "$(grep '^  mode:' tty.bin)" "  mode:          workspace-write"
	ran_the_spoof
	# The control for raw_free: the same bytes printed by a command do carry ESC and CR.
	printf %s "$SPOOF" >raw.bin
	! (raw_free raw.bin) 2>/dev/null || fail "raw_free passes raw bytes"
}

test_answerer_request_is_json_escaped() {
	setup
	answerer 'echo allowed-once'
	run --config cfg.yaml bash --session "$ID" --sandbox-permissions workspace-write \
		--justification "$SPOOF_JUST" "$SPOOF"
	assert_rc 0
	assert_streq "$out" "shown"
	# One JSON line: its escapes hide nothing (\r, \u001b) and it decodes to the exact command.
	assert_streq "$(wc -l <request.json)" 1
	! LC_ALL=C grep -q $'[\e\r]' request.json || fail "a raw control in $(cat -A request.json)"
	grep -qF '#\r\u001b[2K\u001b[1A' request.json || fail "the hidden part not escaped: $(cat -A request.json)"
	python3 -c 'import json, sys; r = json.load(open("request.json", encoding="utf-8"))
sys.stdout.buffer.write(r["subject"].encode())' >subject.bin
	cmp -s subject.bin <(printf %s "$SPOOF") || fail "the answerer was told [$(cat -A subject.bin)]"
	ran_the_spoof
}

test_session_log_on_a_terminal_is_visible() {
	setup
	answerer 'echo rejected'
	# JSON escapes the quotes and C0 controls but leaves DEL, C1 (U+009B, CSI to some
	# terminals) and RLO raw.
	local just=$'why "so"\nnext\xe2\x80\xae\xc2\x9b2J\x7f'
	run --config cfg.yaml bash --session "$ID" --sandbox-permissions workspace-write \
		--justification "$just" true
	python3 "$PTY_RUN" -- "$DSB" session log "$ID" >log-tty.bin
	raw_free log-tty.bin
	! LC_ALL=C grep -qF $'\xc2\x9b' log-tty.bin || fail "a raw C1 CSI reached the terminal"
	! LC_ALL=C grep -qF $'\x7f' log-tty.bin || fail "a raw DEL reached the terminal"
	# Escaped, and JSON's own escapes (\" and \n) stay single.
	grep -qF 'workspace-write: why \"so\"\nnext\u{202e}\u{009b}2J\x7f"' log-tty.bin ||
		fail "not escaped: $(cat -A log-tty.bin)"
	# To a pipe: the bytes as stored (the control: the raw characters are in the log).
	"$DSB" session log "$ID" >log-pipe.txt
	grep -qF 'workspace-write: why \"so\"\nnext'$'\xe2\x80\xae\xc2\x9b2J\x7f"' log-pipe.txt ||
		fail "the pipe's log changed: $(cat -A log-pipe.txt)"
	assert_streq "$(wc -l <log-tty.bin)" "$(wc -l <log-pipe.txt)"
}

test_no_answerer_no_terminal_is_unavailable() {
	setup
	rc=0
	setsid -w "$DSB" bash --session "$ID" --sandbox-permissions workspace-write \
		--justification "$JUST" "touch '$PWD/x'" >o.txt </dev/null || rc=$?
	assert_streq "$(cat o.txt)" 'Error: sandbox escalation to "workspace-write" requires approval, but no approval channel is available'
	[ ! -e x ] || fail "ran"
}

test_exec_escalates_too() {
	setup
	answerer 'echo allowed-once'
	rc=0
	"$DSB" --config cfg.yaml exec --session "$ID" --sandbox-permissions danger-full-access \
		--justification "$JUST" -- sh -c "echo ok > '$OUT/e'" || rc=$?
	[ "$rc" -eq 0 ] || fail "exec exit $rc"
	assert_streq "$(cat "$OUT/e")" "ok"
}

test_approval_switch_notice() {
	setup
	local before
	before=$(events | wc -l)
	run session approval "$ID" ask
	assert_rc 0
	[ "$(events | wc -l)" -eq "$before" ] || fail "an unchanged policy appended"
	local n
	n=$(events | wc -l)
	run session approval "$ID" never
	assert_streq "$(events | tail -n 2)" '{"type":"approval/policy","seq":'"$n"',"data":{"policy":"never"}}
{"type":"user/message","seq":'$((n + 1))',"data":{"content":[{"type":"text","text":"The approval policy changed from \"ask\" to \"never\" (changed by the user)."}],"source":{"kind":"plugin","plugin":"user-approval"},"role":"user","id":ID},"surfaceOp":"append"}'
}

t "a denied command retried with approval runs wider, once, with the audit pair" test_denied_then_approved_retry_runs_wider
t "rejected, cancelled, unavailable, garbled and failing answers refuse with DSH's texts" test_refusals_run_nothing
t "a hung answerer is cancelled at the call's timeout" test_hung_answerer_is_cancelled_at_the_timeout
t "policy never rejects without consulting any answerer" test_policy_never_rejects_without_asking
t "validation and the wider-check come first and append nothing" test_checks_before_any_event
t "inside an open turn the call opens no turn of its own" test_inside_an_open_turn_no_new_turn
t "replaying escalation-approved appends DSH's audit pair" test_replays_approved_fixture
t "replaying escalation-rejected appends DSH's audit pair" test_replays_rejected_fixture
t "the terminal prompt: y, n, Ctrl-C" test_terminal_prompt
t "the terminal prompt shows a spoofing command's hidden part, escaped, one line a value" test_terminal_prompt_shows_the_hidden_part
t "the answerer's request is JSON: the spoof escaped, decoding to the bytes that run" test_answerer_request_is_json_escaped
t "session log to a terminal escapes what JSON leaves raw; to a pipe it is exact" test_session_log_on_a_terminal_is_visible
t "no answerer and no terminal: unavailable" test_no_answerer_no_terminal_is_unavailable
t "exec escalates the same way" test_exec_escalates_too
t "session approval appends the switch and its notice, once" test_approval_switch_notice
done_testing
