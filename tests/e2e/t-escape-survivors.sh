#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Nothing survives (DESIGN.md "Threat model": when it returns, nothing it started is still
# running). A command that leaves daemons behind — setsid, a double fork, nohup, one that ignores
# TERM and HUP, one that starts late — returns, and none of them is left: through the bash tool
# and through exec, on both backends in both confined modes, and through the bash tool in
# danger-full-access too (no confinement, but the same guarantee). With --timeout, a setsid'd
# child holding the output pipes neither outlives the call nor holds it past timeout + graceMs.
# The control: the same script in a plain bash leaves them all running.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

GRACE_MS=3000 # bash.graceMs, the default
SLACK_MS=2000

# Each daemon runs `sleep 300` under a name with the test's marker, which pgrep -f finds.
spawn_script() {
	cat <<-SCRIPT
		setsid bash -c 'exec -a $1-setsid sleep 300' >/dev/null 2>&1 &
		(bash -c 'exec -a $1-double-fork sleep 300' >/dev/null 2>&1 &)
		nohup bash -c 'exec -a $1-nohup sleep 300' >/dev/null 2>&1 &
		setsid bash -c 'trap "" TERM HUP; exec -a $1-ignores-term sleep 300' >/dev/null 2>&1 &
		setsid bash -c 'sleep 0.5; exec -a $1-late sleep 300' >/dev/null 2>&1 &
		echo started
	SCRIPT
}
DAEMONS=(setsid double-fork nohup ignores-term late)

marker() {
	echo "dsb-e2e-$$-$BASHPID"
}

# survivors MARKER: the pids of live processes whose command line holds MARKER.
survivors() {
	pgrep -f -- "$1" | tr '\n' ' ' || true
}

kill_marked() {
	local p
	for p in $(survivors "$1"); do
		kill -KILL "$p" 2>/dev/null || true
	done
}

describe() {
	local p
	for p in $1; do
		ps -o pid=,args= -p "$p" || true
	done
}

# assert_none_left MARKER: nothing is left now, nor a second later (a late starter).
assert_none_left() {
	local left
	left=$(survivors "$1")
	[ -z "$left" ] || fail "still running: $(describe "$left")"
	sleep 1
	left=$(survivors "$1")
	[ -z "$left" ] || fail "running a second later: $(describe "$left")"
}

# sbx_timed TIMEOUT-S ARGS...: dsh-sandbox ARGS under a hard bound (a leaky sandbox must fail
# the test, not hang it); $out $err $rc, and the call's duration in $elapsed_ms.
sbx_timed() {
	local bound=$1 t0
	shift
	t0=$(date +%s%N)
	rc=0
	timeout -k 5 "$bound" "$DSB" "$@" >"$PWD/.out" 2>"$PWD/.err" || rc=$?
	elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
	out=$(cat "$PWD/.out")
	err=$(cat "$PWD/.err")
}

test_control_leaves_daemons() {
	local mark d i
	mark=$(marker)
	defer kill_marked "$mark"
	bash -c "$(spawn_script "$mark")" >/dev/null
	for d in "${DAEMONS[@]}"; do
		for i in $(seq 40); do
			! pgrep -f -- "$mark-$d" >/dev/null || break
			sleep 0.05
		done
		pgrep -f -- "$mark-$d" >/dev/null || fail "the control left no $d daemon"
	done
	# They are still there a second later: the double check of assert_none_left means something.
	sleep 1
	assert_streq "$(survivors "$mark" | wc -w)" "${#DAEMONS[@]}"
}

# case_daemons TOOL WHERE: the daemons through TOOL (bash or exec); WHERE is BACKEND/MODE or
# danger-full-access.
case_daemons() {
	local tool=$1 where=$2 mark mode_args
	mark=$(marker)
	defer kill_marked "$mark"
	mkdir -p ws
	if [ "$where" = danger-full-access ]; then
		mode_args=(--mode danger-full-access)
	else
		mode_args=(--backend "${where%/*}" --mode "${where#*/}")
	fi
	if [ "$tool" = bash ]; then
		sbx_timed 60 bash "${mode_args[@]}" --workspace "$PWD/ws" "$(spawn_script "$mark")"
	else
		sbx_timed 60 exec "${mode_args[@]}" --workspace "$PWD/ws" -- bash -c "$(spawn_script "$mark")"
	fi
	[ "$rc" -ne 124 ] || fail "the call did not return within 60 s"
	assert_rc 0
	assert_contains "$out" started
	assert_none_left "$mark"
}

# A setsid'd child keeps the pipes open while the leader sleeps past --timeout.
case_timeout() {
	local where=$1 mark
	mark=$(marker)
	defer kill_marked "$mark"
	mkdir -p ws
	sbx_timed 60 bash --timeout 1000 --backend "${where%/*}" --mode "${where#*/}" \
		--workspace "$PWD/ws" "setsid bash -c 'exec -a $mark-setsid sleep 300' & sleep 300"
	[ "$elapsed_ms" -le $((1000 + GRACE_MS + SLACK_MS)) ] ||
		fail "returned after $elapsed_ms ms (bound $((1000 + GRACE_MS + SLACK_MS)) ms)"
	assert_contains "$out" "[timed out after 1000ms]"
	assert_none_left "$mark"
}

t "control: a plain bash leaves setsid, double-fork, nohup, TERM-ignoring, late daemons running" \
	test_control_leaves_daemons
for tool in bash exec; do
	each_confined "$tool: no daemon survives the call" case_daemons "$tool"
done
t "danger-full-access: bash: no daemon survives the call" case_daemons bash danger-full-access
each_confined "bash --timeout 1000, a setsid'd child holding the pipes: back in time, nothing left" \
	case_timeout
done_testing
