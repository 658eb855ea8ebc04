#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One validity rule for every reader and writer of a session log (issue 13): whatever
# `session log` calls corrupt, `session show`, `policy`, `context` and `permission` refuse with
# the same message and status, and every append refuses too, leaving the file byte for byte
# as it was. A torn last line is the one documented exception: readers skip it, appends cut it
# off into a side file. Checked over the fuzz corpora and DSH's fixtures, and over logs damaged
# after appends left a validity checkpoint behind.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"

src=${DSB_SOURCE_ROOT:?}

# outcome ARGS...: "RC STDERR" of one call, stdout dropped.
outcome() {
	local rc=0
	"$DSB" "$@" >/dev/null 2>err || rc=$?
	printf '%s %s' "$rc" "$(cat err)"
}

# agree LOG: the readers agree with `session log` on LOG; an append changes a refused LOG not at
# all. Prints "valid" or "refused".
agree() {
	local log=$1 want got c
	want=$(outcome session log "$log")
	local readers=("session show $log" "policy --session $log" "context --session $log"
		"permission --session $log")
	local writers=("session mode $log read-only" "session approval $log never"
		"context --session $log --append")
	if [ "${want%% *}" = 0 ]; then
		# A valid log: whatever else a reader or writer says, it is not about the log's validity.
		for c in "${readers[@]}" "${writers[@]}"; do
			# shellcheck disable=SC2086 # the command words split on purpose
			got=$(outcome $c)
			case ${got%% *} in
			6 | 7) fail "$c: $log is valid for session log, not here: $got" ;;
			esac
		done
		echo valid
		return
	fi
	cp "$log" before
	for c in "${readers[@]}" "${writers[@]}"; do
		# shellcheck disable=SC2086
		got=$(outcome $c)
		[ "$got" = "$want" ] || fail "$c disagrees with session log on $log:
  session log: $want
  $c: $got"
		cmp -s before "$log" || fail "$c changed the refused log $log"
	done
	echo refused
}

test_corpora_agree() {
	local f n=0 refused=0 verdict
	for f in "$src"/fuzz/corpus/scan/* "$src"/fuzz/corpus/fold/* "$src"/tests/fixtures/dsh/*.jsonl; do
		[ -f "$f" ] || continue
		cp "$f" "log.$n"
		verdict=$(agree "$PWD/log.$n")
		[ "$verdict" = valid ] || refused=$((refused + 1))
		n=$((n + 1))
	done
	echo "# $n logs, $refused refused"
	# Both kinds were exercised: the corpora hold valid logs and corrupt ones.
	if [ "$n" -lt 20 ] || [ "$refused" -lt 5 ] || [ "$refused" -ge "$n" ]; then
		fail "expected a mix of valid and refused logs: $n logs, $refused refused"
	fi
}

# session_log: a session with some history, as appends (which leave a checkpoint) made it.
session_log() {
	local id
	id=$("$DSB" session new --cwd "$PWD")
	# What the switches say of themselves is not the log's path this prints.
	"$DSB" session mode "$id" read-only >/dev/null
	"$DSB" session approval "$id" never >/dev/null
	"$DSB" context --session "$id" --append >/dev/null
	"$DSB" session mode "$id" workspace-write >/dev/null
	"$DSB" session mode "$id" danger-full-access >/dev/null
	echo "$DSH_SANDBOX_STORE"/*/"$id"/session.jsonl
}

# overwrite LOG OLD NEW: replaces the first OLD with NEW (same length) in place, same inode.
overwrite() {
	local off
	[ "${#2}" = "${#3}" ] || fail "overwrite: not the same length"
	off=$(grep -bo -m1 -F -- "$2" "$1" | head -n1 | cut -d: -f1)
	[ -n "$off" ] || fail "overwrite: $2 not in $1"
	printf '%s' "$3" | dd of="$1" bs=1 seek="$off" conv=notrunc status=none
}

test_damage_after_checkpoint() {
	local log next
	log=$(session_log)
	# The appends left a checkpoint, so what follows tests resuming from one.
	python3 -c 'import os,sys; os.getxattr(sys.argv[1], "user.dsh-sandbox.checked")' "$log" ||
		fail "no checkpoint on $log"
	assert_streq "$(agree "$log")" valid
	cp "$log" pristine
	next=$(($(wc -l <pristine) - 1)) # the seq the next event takes

	# A line repeated: its seq repeats (the issue's own example).
	sed -n 3p pristine >>"$log"
	assert_streq "$(agree "$log")" refused
	assert_contains "$(outcome session log "$log")" "seq gap in committed region at line"

	# A seq changed in place, same size: only the mtime tells.
	cp pristine "$log"
	overwrite "$log" '"seq":2,' '"seq":7,'
	assert_streq "$(agree "$log")" refused

	# A mode spelled wrong in place, below the newest lines.
	cp pristine "$log"
	overwrite "$log" '"mode":"read-only"' '"mode":"read-onlx"'
	assert_streq "$(agree "$log")" refused
	assert_contains "$(outcome policy --session "$log")" 'sandbox/mode carries unknown mode "read-onlx"'

	# Garbage appended by another writer.
	cp pristine "$log"
	printf '{"type":\n' >>"$log"
	assert_streq "$(agree "$log")" refused

	# A surface event without its surfaceOp: once only `context` refused it.
	cp pristine "$log"
	printf '{"type":"user/message","seq":%s,"time":1,"data":{}}\n' "$next" >>"$log"
	assert_streq "$(agree "$log")" refused
	assert_contains "$(outcome session mode "$log" read-only)" \
		'session event "user/message" is surface-eligible and requires a surfaceOp marker'

	# The file cut short mid-history, then grown past its old size with valid-looking lines.
	cp pristine "$log"
	head -n 3 pristine >short
	{
		cat short
		for s in 2 3 4 5 6 7 8; do
			printf '{"type":"sandbox/mode","seq":%s,"time":1,"data":{"mode":"read-only"}}\n' $((s + 1))
		done
	} >"$log"
	assert_streq "$(agree "$log")" refused

	# A valid line appended by another writer (as DSH appends) is read, not refused.
	cp pristine "$log"
	printf '{"type":"sandbox/mode","seq":%s,"time":1,"data":{"mode":"read-only"}}\n' "$next" >>"$log"
	assert_streq "$(agree "$log")" valid
	assert_contains "$("$DSB" session show "$log")" read-only
}

test_torn_tail_is_the_exception() {
	local log
	log=$(session_log)
	printf '{"type":"sandbox/mode","seq":99,"ti' >>"$log"
	assert_streq "$(agree "$log")" valid
	# The append cut the torn bytes into a side file and went on.
	ls "$log".torn-* >/dev/null || fail "no side file for the torn tail"
	run session log "$log"
	assert_rc 0
}

test_concurrent_appends_to_a_corrupt_log() {
	local log line want i n=12
	log=$(session_log)
	line=$(sed -n 2p "$log")
	printf '%s\n' "$line" >>"$log"
	cp "$log" before
	want=$(outcome session log "$log")
	rm -f go
	for i in $(seq 1 "$n"); do
		(
			while [ ! -e go ]; do sleep 0.01; done
			rc=0
			case $((i % 3)) in
			0) "$DSB" session mode "$log" read-only 2>"err.$i" || rc=$? ;;
			1) "$DSB" session approval "$log" ask 2>"err.$i" || rc=$? ;;
			2) "$DSB" context --session "$log" --append >/dev/null 2>"err.$i" || rc=$? ;;
			esac
			echo "$rc" >"rc.$i"
		) &
	done
	sleep 0.2
	touch go
	wait
	for i in $(seq 1 "$n"); do
		assert_streq "$(cat "rc.$i") $(cat "err.$i")" "$want"
	done
	cmp before "$log" || fail "a racer changed the corrupt log"
}

# The library refuses to write what its readers would refuse (a raw append of a bad mode).
test_append_never_writes_what_readers_refuse() {
	local log
	log=$(session_log)
	cp "$log" before
	run session mode "$log" host-root
	assert_rc 2
	cmp before "$log"
}

t "fuzz corpora and fixtures: readers and writers agree with session log" test_corpora_agree
t "logs damaged after a checkpoint: all refuse alike, nothing appended" test_damage_after_checkpoint
t "a torn last line: read past, cut off by the next append" test_torn_tail_is_the_exception
t "concurrent appends to a corrupt log: all refused, file unchanged" test_concurrent_appends_to_a_corrupt_log
t "an invalid mode is refused before anything is written" test_append_never_writes_what_readers_refuse

done_testing
