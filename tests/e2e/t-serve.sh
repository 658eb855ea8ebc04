#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of `dsh-sandbox serve`, the MCP server over stdio, driven by a small client
# (mcp-client.py, standard library only): the framing and lifecycle errors, version
# negotiation, the tool list byte for byte as DSH emits it (tests/data/server), DSH's texts
# through the server matching the CLI's for the same call, the observation rule, escalation
# answered by an answerer program, background jobs, 32 calls at once, cancellation racing
# completion, progress, the runtime-context snapshot after an outside mode switch, the
# spawner's waiting monitors, both MCP eras (2025-11-25 and 2026-07-28, approvals as
# input_required with their requestState attacked), and
# nothing left running however the server ends: input closed, the client gone, SIGINT, SIGTERM,
# SIGHUP, SIGKILL and Claude Code's INT-TERM-KILL sequence, on both backends and in
# danger-full-access. The control proves the survivor check: the same daemons under a plain
# parent killed with SIGKILL survive it.
#
#   $PWD/ws/     the workspace of each server's session
#   $OUT/        outside every writable root (/var/tmp)
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME DSH_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
export DSH_SANDBOX="$DSB"
CLIENT="$(dirname "$0")/mcp-client.py"
DATA=${DSB_SOURCE_ROOT:?}/tests/data/server
PYTHON=python3
[ ! -x /usr/bin/python3 ] || PYTHON=/usr/bin/python3
JUST='the user asked to write a file outside the workspace'

client() {
	"$PYTHON" "$CLIENT" "$@"
}

# modern TEST: TEST with a 2026-07-28 client, which mcp-client.py reads from MCP_ERA (no
# initialize; each request carries its own _meta; approvals come back as input_required).
modern() {
	export MCP_ERA=2026-07-28
	"$@"
}

is_modern() {
	[ "${MCP_ERA:-}" = 2026-07-28 ]
}

setup() {
	mkdir -p ws
	OUT=$(mktemp -d /var/tmp/dsb-serve.XXXXXX)
	trap 'rm -rf "$OUT"' EXIT
}

# A script's pipe: the requests, then the end of the input. The call that ends soon is
# answered; the one that would not is cancelled 2 s later, and the server says so and is gone.
test_piped_session() {
	setup
	local t0 t1 responses
	local meta=''
	is_modern && meta=',"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
	t0=$(date +%s%N)
	{
		if is_modern; then
			printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{'"${meta#,}"'}}'
		else
			printf '%s\n' \
				'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
				'{"jsonrpc":"2.0","method":"notifications/initialized"}'
		fi
		printf '%s\n' \
			'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 0.3; echo piped","description":"Soon"}'"$meta"'}}' \
			'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep 60","description":"Never"}'"$meta"'}}'
	} | "$DSB" serve --cwd "$PWD/ws" >out.jsonl 2>err.txt
	t1=$(date +%s%N)
	responses=$("$PYTHON" -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if "id" in m:
        text = m["result"].get("content", [{}])[0].get("text", "") if "result" in m else "error"
        print(m["id"], text.splitlines()[0] if text else "")
' out.jsonl | sort)
	assert_streq "$responses" "1 
2 piped"
	assert_contains "$(cat err.txt)" "input ended: 1 running call(s) answered, 1 cancelled"
	# 2 s of grace, then the cancelled call's own bash.graceMs: wide of the 3 s on a loaded machine.
	[ $(((t1 - t0) / 1000000)) -lt 20000 ] || fail "the server took $(((t1 - t0) / 1000000)) ms to go"
}

test_framing() {
	setup
	client framing ws
}

test_versions() {
	setup
	client versions ws
}

test_warm_monitors() {
	setup
	client warm ws
}

test_framing_modern() {
	setup
	client framing-modern ws
}

test_mrtr() {
	setup
	client mrtr "$PWD/ws" "$OUT"
}

test_tools_list_golden() {
	setup
	client tools-list ws "" "$DATA/tools.json"
}

test_instructions() {
	setup
	local got
	got=$(client instructions ws)
	assert_streq "$got" "$(cat "$DATA/instructions.txt")"
}

test_fs_texts_and_observation() {
	setup
	client fs ws
}

# call TOOL ARGS [CONFIG] [SESSION]: one tools/call through a fresh server; $out is "isError=B"
# and the text.
call() {
	out=$(client call ws "${3:-}" "$1" "$2" ${4:+"$4"})
}

test_bash_denial_matches_the_cli() {
	setup
	local id cli
	id=$("$DSB" session new --cwd "$PWD/ws")
	call bash '{"command":"echo x > '"$OUT"'/f","description":"Write outside"}' "" "$id"
	cli=$("$DSB" bash --session "$id" "echo x > '$OUT/f'" || true)
	assert_streq "$out" "isError=false
$cli"
	assert_contains "$out" "[sandbox: file access denied under read-only mode]
[sandbox: escalation available — retry this exact command once with sandbox_permissions"
	[ ! -e "$OUT/f" ] || fail "the denied write landed"
}

# A server's own session: its private /tmp goes with the server, its log stays; a session
# named with --session keeps its /tmp for the next front end.
test_own_session_tmp() {
	setup
	local mark="dsb-served-$$-$RANDOM" id logs
	mkdir -p "$DSH_SANDBOX_STORE"
	logs=$(find "$DSH_SANDBOX_STORE" -name session.jsonl | wc -l)
	DSH_PERMISSION_MODE=workspace-write call bash \
		'{"command":"echo kept > /tmp/'"$mark"' && cat /tmp/'"$mark"'","description":"d"}'
	assert_contains "$out" kept
	[ -z "$(find "$DSH_SANDBOX_STORE/.tmp" -name "$mark")" ] ||
		fail "the server's own session kept its /tmp"
	[ "$(find "$DSH_SANDBOX_STORE" -name session.jsonl | wc -l)" -eq $((logs + 1)) ] ||
		fail "the server's own session lost its log"
	id=$("$DSB" session new --cwd "$PWD/ws")
	"$DSB" session mode "$id" workspace-write >/dev/null || fail "no mode switch"
	call bash '{"command":"echo kept > /tmp/'"$mark"'","description":"d"}' "" "$id"
	run bash --session "$id" "cat /tmp/$mark"
	assert_streq "$out" kept
}

# answerer OUTCOME: a config whose external answerer records the request and answers OUTCOME.
answerer() {
	cat >answer.sh <<-SCRIPT
		#!/bin/sh
		cat > "$PWD/request.json"
		$1
	SCRIPT
	chmod +x answer.sh
	printf 'approval: { answerer: [%s/answer.sh] }\n' "$PWD" >cfg.yaml
}

events() {
	"$DSB" session log "$1" | sed 's/"time":[0-9]*,//; s/"id":"[0-9a-f-]*"/"id":ID/g'
}

escalate_args() {
	printf '{"command":"echo escalated > %s/f && cat %s/f","description":"Write outside",' "$OUT" "$OUT"
	printf '"sandbox_permissions":"danger-full-access","justification":"%s"}' "$JUST"
}

test_escalation_allowed() {
	setup
	answerer 'echo allowed-once'
	local id n
	id=$("$DSB" session new --cwd "$PWD/ws")
	n=$(events "$id" | wc -l)
	call bash "$(escalate_args)" "$PWD/cfg.yaml" "$id"
	assert_streq "$out" "isError=false
escalated"
	assert_streq "$(events "$id" | grep -v '"user/message"' | tail -n 4)" '{"type":"turn/start","seq":'"$((n + 1))"',"data":{"turn":1}}
{"type":"approval/asked","seq":'$((n + 2))',"data":{"id":ID,"toolName":"bash","callId":"1002","reason":"escalate sandbox to danger-full-access: '"$JUST"'"}}
{"type":"approval/decided","seq":'$((n + 3))',"data":{"id":ID,"outcome":"allowed-once"}}
{"type":"turn/end","seq":'$((n + 4))',"data":{"turn":1,"reason":{"kind":"completed"}}}'
	assert_file_has_content request.json '"toolName":"bash"'
}

test_escalation_rejected_and_unavailable() {
	setup
	answerer 'echo rejected'
	local id
	id=$("$DSB" session new --cwd "$PWD/ws")
	call bash "$(escalate_args)" "$PWD/cfg.yaml" "$id"
	assert_streq "$out" 'isError=true
Error: the user rejected escalating this command to "danger-full-access"'
	events "$id" | grep -q '"outcome":"rejected"' || fail "no rejected decision logged"
	[ ! -e "$OUT/f" ] || fail "ran although rejected"
	# No answerer program: no elicitation yet, so the request fails closed.
	call bash "$(escalate_args)" "" "$id"
	assert_streq "$out" 'isError=true
Error: sandbox escalation to "danger-full-access" requires approval, but no approval channel is available'
	[ ! -e "$OUT/f" ] || fail "ran although unavailable"
}

# elicit SESSION ANSWER [CONFIG] [AGAIN_ARGS]: the escalation asked through elicitation and
# answered ANSWER (mcp-client.py elicit); isError and the text in $out.
elicit() {
	out=$(client elicit ws "${3:-}" "$1" "$2" "$(escalate_args)" ${4:+"$4"})
}

# decided SESSION: the outcome of the session's last approval/decided event.
decided() {
	events "$1" | grep '"approval/decided"' | tail -n 1 | sed 's/.*"outcome":"\([a-z-]*\)".*/\1/'
}

# Every error result names its stable code in _meta, beside DSH's text; a success names none.
test_error_codes() {
	setup
	export MCP_CALL_CODE=1
	local id
	id=$("$DSB" session new --cwd "$PWD/ws")
	call bash '{}'
	assert_streq "$(head -n 2 <<<"$out")" 'code=INVALID_ARGS
isError=true'
	call write '{"file_path":"'"$OUT"'/f","content":"x"}' "" "$id"
	assert_streq "$(head -n 2 <<<"$out")" 'code=FS_SANDBOX_DENIED
isError=true'
	call read '{"file_path":"'"$PWD"'/ws/missing"}' "" "$id"
	assert_streq "$(head -n 2 <<<"$out")" 'code=FS_NOT_FOUND
isError=true'
	call job_output '{"job_id":"job_nope"}' "" "$id"
	assert_streq "$(head -n 2 <<<"$out")" 'code=JOB_NOT_FOUND
isError=true'
	answerer 'echo rejected'
	call bash "$(escalate_args)" "$PWD/cfg.yaml" "$id"
	assert_streq "$out" 'code=ESCALATION_REFUSED
isError=true
Error: the user rejected escalating this command to "danger-full-access"'
	call bash '{"command":"exit 3","description":"Fail"}' "" "$id"
	assert_streq "$(head -n 2 <<<"$out")" 'code=
isError=false'
	unset MCP_CALL_CODE
}

test_elicitation_outcomes() {
	setup
	local id
	id=$("$DSB" session new --cwd "$PWD/ws")
	elicit "$id" allow
	assert_streq "$out" "isError=false
escalated"
	assert_streq "$(decided "$id")" allowed-once
	rm -f "$OUT/f"

	elicit "$id" deny
	assert_streq "$out" 'isError=true
Error: the user rejected escalating this command to "danger-full-access"'
	assert_streq "$(decided "$id")" rejected
	elicit "$id" decline
	assert_streq "$out" 'isError=true
Error: the user rejected escalating this command to "danger-full-access"'
	assert_streq "$(decided "$id")" rejected
	elicit "$id" cancel
	assert_streq "$out" 'isError=true
Error: approval for escalating to "danger-full-access" was cancelled'
	assert_streq "$(decided "$id")" cancelled
	printf 'approval: { timeoutMs: 500 }\n' >quick.yaml
	if is_modern; then
		# The question is a result: nothing waits, and a client that never retries leaves
		# nothing logged (test_mrtr has the late retry, refused).
		local n
		n=$(events "$id" | wc -l)
		elicit "$id" silent "$PWD/quick.yaml"
		assert_streq "$(events "$id" | wc -l)" "$n"
	else
		elicit "$id" error
		assert_streq "$out" 'isError=true
Error: sandbox escalation to "danger-full-access" requires approval, but no approval channel is available'
		assert_streq "$(decided "$id")" unavailable
		# No answer within approval.timeoutMs: the question is withdrawn, the call fails closed.
		elicit "$id" silent "$PWD/quick.yaml"
		assert_streq "$out" 'isError=true
Error: sandbox escalation to "danger-full-access" requires approval, but no approval channel is available'
		assert_streq "$(decided "$id")" unavailable
	fi
	[ ! -e "$OUT/f" ] || fail "ran although not allowed"
}

test_elicitation_session_grant() {
	setup
	local id again
	id=$("$DSB" session new --cwd "$PWD/ws")
	printf 'approval: { sessionGrants: true }\n' >grants.yaml
	again='{"command":"echo again > '"$OUT"'/g && cat '"$OUT"'/g","description":"Again","sandbox_permissions":"workspace-write","justification":"narrower"}'
	elicit "$id" allow-session "$PWD/grants.yaml" "$again"
	# workspace-write cannot write $OUT either: what matters is that nobody was asked.
	assert_streq "$(printf '%s\n' "$out" | grep -c '^isError=false$')" 2
	assert_contains "$out" "escalated"
	events "$id" | grep -q '"type":"approval/session-grant","seq":[0-9]*,"data":{"mode":"danger-full-access","tool":"bash","auditId":' ||
		fail "no session grant logged: $(events "$id" | tail -n 8)"
	assert_streq "$(decided "$id")" allowed-once
	# The grant lived in that server's memory: the next server asks again.
	rm -f "$OUT/f"
	elicit "$id" deny
	assert_contains "$out" "isError=true"
}

test_answerer_program_wins() {
	setup
	answerer 'echo rejected'
	local id
	id=$("$DSB" session new --cwd "$PWD/ws")
	elicit "$id" none "$PWD/cfg.yaml"
	assert_streq "$out" 'isError=true
Error: the user rejected escalating this command to "danger-full-access"'
	assert_file_has_content request.json '"toolName":"bash"'
}

# The person sees what will run: a hostile model's command (CR, erase-line, cursor-up, RLO, a
# newline) and a justification that forges "command:" and "mode:" lines. The question shows
# each value escaped on its one line; the command that runs is the raw one (it records the
# string bash was given, the control).
test_elicitation_shows_the_hidden_part() {
	setup
	local id args
	id=$("$DSB" session new --cwd "$PWD/ws")
	# shellcheck disable=SC2016 # JSON text: the model's command, for bash to expand
	args='{"command":"printf %s \"$BASH_EXECUTION_STRING\" > ran.txt #\r\u001b[2K\u001b[1A\u202e\necho shown","description":"Spoof","sandbox_permissions":"danger-full-access","justification":"needed\ncommand: true\nmode: read-only"}'
	out=$(DSB_ELICIT_MESSAGE="$PWD/message.txt" client elicit ws "" "$id" allow "$args")
	assert_streq "$out" "isError=false
shown"
	! LC_ALL=C grep -q $'[\e\r]' message.txt || fail "a raw control in the question: $(cat -A message.txt)"
	! LC_ALL=C grep -qF $'\xe2\x80\xae' message.txt || fail "a raw RLO in the question"
	# shellcheck disable=SC2016 # the text shown, not expanded
	grep -qxF 'command: printf %s "$BASH_EXECUTION_STRING" > ran.txt #\r\x1b[2K\x1b[1A\u{202e}\necho shown' message.txt ||
		fail "the hidden part is not shown: $(cat -A message.txt)"
	grep -qxF 'justification: needed\ncommand: true\nmode: read-only' message.txt ||
		fail "the justification is not one line: $(cat -A message.txt)"
	assert_streq "$(grep -c '^command:' message.txt)" 1
	assert_streq "$(grep '^mode:' message.txt)" "mode: danger-full-access"
	# The control: these very bytes ran.
	cmp -s ws/ran.txt <(printf '%s' $'printf %s "$BASH_EXECUTION_STRING" > ran.txt #\r\e[2K\e[1A\xe2\x80\xae\necho shown') ||
		fail "ran [$(cat -A ws/ran.txt)]"
}

test_background_jobs() {
	setup
	client background "$PWD/ws" "dsb-serve-bg"
}

test_background_confined() {
	setup
	printf 'sandbox-local: { backends: [bwrap] }\n' >bwrap.yaml
	printf 'sandbox-local: { backends: [landlock] }\n' >landlock.yaml
	client background-confined "$PWD/ws" "$PWD/bwrap.yaml"
	client background-confined "$PWD/ws" "$PWD/landlock.yaml"
}

test_unavailable_fails_closed() {
	setup
	printf 'sandbox-local: { runnerCommand: [%s/missing-runner], runnerFailureSignatures: ["x: "] }\n' \
		"$PWD" >runner.yaml
	client unavailable "$PWD/ws" "$PWD/runner.yaml"
}

test_concurrent_calls() {
	setup
	client concurrent ws
}

test_cancellation() {
	setup
	client cancel ws "" "dsb-serve-cancel"
}

test_progress() {
	setup
	client progress ws
}

test_snapshot_after_outside_switch() {
	setup
	client snapshot ws
}

test_control_leaves_survivors() {
	setup
	client control "dsb-serve-control"
}

# ends CONFIG MODE HOW...: the server ends mid-call each way, and with a background job
# running; nothing survives.
ends() {
	local cfg=$1 mode=$2 how kind
	shift 2
	for how in "$@"; do
		for kind in call job; do
			client ends ws "$cfg" "$mode" "$how" "dsb-serve-$how" "$kind" ||
				fail "$mode $how $kind"
		done
	done
}

test_ends_bwrap() {
	setup
	printf 'sandbox-local: { backends: [bwrap] }\n' >bwrap.yaml
	ends "$PWD/bwrap.yaml" workspace-write eof client-gone INT TERM HUP KILL claude
	ends "$PWD/bwrap.yaml" read-only KILL
}

# The attack on bwrap's own --die-with-parent race: the server ended (its call cancelled, or
# itself killed) the moment bwrap has started, over and over. Before the fix, its PID
# namespace's init survived, running the command and its daemons.
test_storm_bwrap() {
	setup
	printf 'sandbox-local: { backends: [bwrap] }\n' >bwrap.yaml
	client storm ws "$PWD/bwrap.yaml" cancel 15 "dsb-serve-storm-cancel"
	client storm ws "$PWD/bwrap.yaml" KILL 15 "dsb-serve-storm-kill"
}

test_ends_landlock() {
	setup
	printf 'sandbox-local: { backends: [landlock] }\n' >landlock.yaml
	ends "$PWD/landlock.yaml" workspace-write eof KILL claude
	ends "$PWD/landlock.yaml" read-only KILL
}

test_ends_danger_full_access() {
	setup
	ends "" danger-full-access eof client-gone KILL claude
}

# both NAME TEST: TEST with a 2025-11-25 client, then with a 2026-07-28 client.
both() {
	t "$1 (2025-11-25)" "$2"
	t "$1 (2026-07-28)" modern "$2"
}

t "framing and lifecycle errors, the line limit (2025-11-25)" test_framing
t "2026-07-28: discovery with or without initialize, the _meta envelope's errors, both eras in one process" test_framing_modern
both "a piped session: every call that ends soon is answered after the input ends" test_piped_session
t "initialize negotiates 2025-06-18 and 2025-11-25" test_versions
both "tools/list is DSH's tools byte for byte" test_tools_list_golden
both "instructions: DSH's tool sections, then the runtime-context snapshot" test_instructions
both "write, edit, read: DSH's texts, structured values, the observation rule" test_fs_texts_and_observation
both "a read-only bash denial reads as the CLI's, marker and hint" test_bash_denial_matches_the_cli
both "a server's own session takes its /tmp away with it; a named one keeps it" test_own_session_tmp
both "an escalation approved by the answerer runs wider, with the audit pair" test_escalation_allowed
both "a rejected or unavailable escalation runs nothing, DSH's texts" test_escalation_rejected_and_unavailable
both "an error result names its stable code in _meta, a success none" test_error_codes
both "elicitation: allow, deny, decline, cancel, an error, no answer in time; each logged" test_elicitation_outcomes
both "elicitation: allow-session (approval.sessionGrants) allows later escalations, logged" test_elicitation_session_grant
both "elicitation: a configured answerer program is asked instead" test_answerer_program_wins
both "elicitation: the question shows a spoofing command's hidden part, escaped, one line a value" test_elicitation_shows_the_hidden_part
t "input_required: nothing logged or run on the question; forged, replayed, expired, other-call and other-process states refused; asked again; no elicitation declared" modern test_mrtr
both "background jobs: start, output, wait, kill, list, errors, the completion notice, a cancelled wait" test_background_jobs
both "a background job is confined as a call is, on both backends; escalation before the start" test_background_confined
both "no usable backend: a call fails closed, a background job runs nothing" test_unavailable_fails_closed
both "32 calls at once, and a request answered while they run" test_concurrent_calls
t "the spawner's waiting monitors: one a call, replaced after it, gone with the server however it ends" test_warm_monitors
both "cancellation: no response, the command gone; racing completion: one or none" test_cancellation
both "progress: the newest line, at most once a second, never after the result" test_progress
both "the snapshot rides on the first result after an outside mode switch" test_snapshot_after_outside_switch
t "control: daemons under a plain parent survive its SIGKILL" test_control_leaves_survivors
both "bwrap: nothing survives the server's end, however it ends" test_ends_bwrap
both "bwrap: ended as the sandbox starts, over and over: nothing survives" test_storm_bwrap
both "landlock: nothing survives the server's end" test_ends_landlock
both "danger-full-access: nothing survives the server's end" test_ends_danger_full_access
done_testing
