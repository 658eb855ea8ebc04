#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Session logs under concurrency (issue 13): many `context --append` calls at once append one
# snapshot per distinct state, never several, because each decides under the append's lock.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"

snapshots_in_log() {
	"$DSB" session log "$1" | grep -c '"plugin":"@deepseek-ai/dsh-system-prompt"' || true
}

# race N ARGS...: N copies of `dsh-sandbox ARGS` started together; each one's status in rc.N.
race() {
	local n=$1 i
	shift
	rm -f rc.* go
	for i in $(seq 1 "$n"); do
		(
			while [ ! -e go ]; do sleep 0.01; done
			rc=0
			"$DSB" "$@" >"out.$i" 2>"err.$i" || rc=$?
			echo "$rc" >"rc.$i"
		) &
	done
	sleep 0.2
	touch go
	wait
}

# all_ok N: every one of the N racers exited 0 and printed nothing on stderr.
all_ok() {
	local i
	for i in $(seq 1 "$1"); do
		[ "$(cat "rc.$i")" = 0 ] || fail "racer $i: exit $(cat "rc.$i"): $(cat "err.$i")"
		[ ! -s "err.$i" ] || fail "racer $i: stderr: $(cat "err.$i")"
	done
}

# printed N: how many racers printed a snapshot (each that appended one prints it).
printed() {
	local i k=0
	for i in $(seq 1 "$1"); do
		[ ! -s "out.$i" ] || k=$((k + 1))
	done
	echo "$k"
}

test_concurrent_context_append() {
	local id n=12 want=0 round mode
	id=$("$DSB" session new --cwd "$PWD")
	for round in 1 2 3 4 5 6 7 8; do
		case $round in
		3) mode=danger-full-access ;;
		5) mode=read-only ;;
		7) mode=danger-full-access ;;
		*) mode= ;;
		esac
		[ -z "$mode" ] || "$DSB" session mode "$id" "$mode"
		race "$n" context --session "$id" --append
		all_ok "$n"
		# Rounds 1, 3, 5, 7 see a new state: exactly one snapshot; the others see none.
		[ $((round % 2)) = 1 ] && want=$((want + 1))
		assert_streq "$(snapshots_in_log "$id")" "$want"
		assert_streq "$(printed "$n")" $((round % 2))
	done
	# The log is still valid: every seq once, in order.
	run session log "$id"
	assert_rc 0
}

t "concurrent context --append: one snapshot per distinct state" test_concurrent_context_append

done_testing
