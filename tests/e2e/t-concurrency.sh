#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Concurrency of `dsh-sandbox fs` (issue 13 item 1): many read-modify-writes of one file at
# once. Every edit that reports success is in the file afterwards; an edit that fails says why
# with a conflict (FS_STALE_VERSION), never anything else; writes mixed in never interleave
# with an edit so that one acknowledged is lost without a write to account for it.
#
#   $PWD/ws/f.txt   one line per slot, "slot-I: VALUE"; edit I replaces only its own line
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME DSH_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"

STALE='the file changed since it was read — re-read the file, then retry'

setup() {
	mkdir ws
	WS=$(cd ws && pwd -P)
}

# make_file N: slots 0..N-1, each at value v0; the values are kept in $val.
make_file() {
	local n=$1 i
	val=()
	: >ws/f.txt
	for ((i = 0; i < n; i++)); do
		val[i]="v0-$i"
		echo "slot-$i: ${val[i]}" >>ws/f.txt
	done
}

# edit_one I NEW: edits slot I from its value to NEW; records rc, stdout and start time.
edit_one() {
	local i=$1 new=$2 rc=0
	date +%s%N >"start.$i"
	"$DSB" fs edit --mode workspace-write --workspace "$WS" f.txt \
		--old "slot-$i: ${val[i]}" --new "slot-$i: $new" >"out.$i" 2>"err.$i" || rc=$?
	echo "$rc" >"rc.$i"
}

# write_one J: replaces the whole file with every slot at v0 and a line naming writer J.
write_one() {
	local j=$1 n=$2 rc=0 i
	for ((i = 0; i < n; i++)); do
		echo "slot-$i: v0-$i"
	done >"content.$j"
	echo "writer: $j" >>"content.$j"
	"$DSB" fs write --mode workspace-write --workspace "$WS" f.txt <"content.$j" \
		>"wout.$j" 2>"werr.$j" || rc=$?
	echo "$rc" >"wrc.$j"
	date +%s%N >"wend.$j"
}

# check_edit I NEW: an acknowledged edit is in the file; a failed one is a conflict only.
# Prints "ok" or "conflict"; a write may account for a missing edit when $1 is "mixed".
check_edit() {
	local i=$1 new=$2 rc
	rc=$(cat "rc.$i")
	if [ "$rc" -eq 0 ]; then
		assert_streq "$(cat "out.$i")" "The file $WS/f.txt has been updated successfully."
		if ! grep -qxF "slot-$i: $new" ws/f.txt; then
			[ -n "${mixed:-}" ] || fail "edit $i reported success but is not in the file: $(cat ws/f.txt)"
			# Lost only to a write that published after the edit began.
			local start w erased=
			start=$(cat "start.$i")
			for w in wend.*; do
				[ "$(cat "$w")" -lt "$start" ] || erased=1
			done
			[ -n "$erased" ] || fail "edit $i reported success, is gone, and no write came after it"
			echo erased
			return 0
		fi
		val[i]=$new
		echo ok
	else
		[ "$rc" -eq 9 ] || fail "edit $i: exit status $rc (stdout: $(cat "out.$i")) (stderr: $(cat "err.$i"))"
		if [ -n "${mixed:-}" ] && grep -qxF "slot-$i: v0-$i" ws/f.txt; then
			# A write reset the line first: the edit's old text is gone, or it conflicted.
			case $(cat "out.$i") in
			*"$STALE"* | *"old_string was not found in \"$WS/f.txt\""*) ;;
			*) fail "edit $i: $(cat "out.$i")" ;;
			esac
		else
			assert_contains "$(cat "out.$i")" "$STALE"
			grep -qxF "slot-$i: ${val[i]}" ws/f.txt || fail "edit $i failed but changed its line"
		fi
		echo conflict
	fi
}

# storm N ROUNDS: N concurrent edits of N distinct lines, ROUNDS times.
storm() {
	local n=$1 rounds=$2 round i ok=0 conflicts=0
	make_file "$n"
	for ((round = 1; round <= rounds; round++)); do
		for ((i = 0; i < n; i++)); do
			edit_one "$i" "r$round-$i" &
		done
		wait
		for ((i = 0; i < n; i++)); do
			case $(check_edit "$i" "r$round-$i") in
			ok)
				ok=$((ok + 1))
				val[i]="r$round-$i"
				;;
			conflict) conflicts=$((conflicts + 1)) ;;
			*) fail "edit $i in round $round" ;;
			esac
		done
		[ "$(wc -l <ws/f.txt)" -eq "$n" ] || fail "the file lost or gained lines: $(cat ws/f.txt)"
	done
	echo "# $ok edits applied, $conflicts conflicts, over $rounds rounds of $n" >&2
	[ "$ok" -gt 0 ] || fail "no edit succeeded"
	# nothing left behind
	[ -z "$(find ws -name '.*.tmp')" ] || fail "temp files left: $(ls -a ws)"
}

test_8_edits() {
	setup
	storm 8 6
}

test_32_edits() {
	setup
	storm 32 2
}

# Writes mixed in: each write resets every line; an edit is lost only to a later write.
test_mixed_writes_and_edits() {
	setup
	local n=8 writers=3 rounds=4 round i j
	mixed=1
	make_file "$n"
	for ((round = 1; round <= rounds; round++)); do
		rm -f wend.*
		for ((i = 0; i < n; i++)); do
			edit_one "$i" "r$round-$i" &
			if [ "$i" -lt "$writers" ]; then
				write_one "$i" "$n" &
			fi
		done
		wait
		for ((j = 0; j < writers; j++)); do
			[ "$(cat "wrc.$j")" -eq 0 ] || fail "write $j: $(cat "wout.$j") $(cat "werr.$j")"
		done
		# The file is one writer's, whole, with edits on top: never torn, never mixed.
		[ "$(grep -c '^writer: ' ws/f.txt)" -eq 1 ] || fail "not one writer's file: $(cat ws/f.txt)"
		[ "$(wc -l <ws/f.txt)" -eq $((n + 1)) ] || fail "lines lost: $(cat ws/f.txt)"
		for ((i = 0; i < n; i++)); do
			case $(check_edit "$i" "r$round-$i") in
			ok) val[i]="r$round-$i" ;;
			erased) val[i]="v0-$i" ;;
			conflict) val[i]=$(sed -n "s/^slot-$i: //p" ws/f.txt) ;;
			*) fail "edit $i in round $round" ;;
			esac
			# Each line is its slot's, at a value an edit or a write gave it.
			grep -qxF "slot-$i: ${val[i]}" ws/f.txt || fail "slot $i: $(cat ws/f.txt)"
		done
		# Start the next round from what is in the file.
		for ((i = 0; i < n; i++)); do
			val[i]=$(sed -n "s/^slot-$i: //p" ws/f.txt)
		done
	done
	[ -z "$(find ws -name '.*.tmp')" ] || fail "temp files left: $(ls -a ws)"
}

# replace_all and a mixed-EOL file under the same storm: each edit still changes only its line.
test_edits_keep_other_lines_endings() {
	setup
	local n=8 i
	val=()
	: >ws/f.txt
	for ((i = 0; i < n; i++)); do
		val[i]="v0-$i"
		if [ $((i % 2)) -eq 0 ]; then
			printf 'slot-%d: %s\r\n' "$i" "${val[i]}" >>ws/f.txt
		else
			printf 'slot-%d: %s\n' "$i" "${val[i]}" >>ws/f.txt
		fi
	done
	for ((i = 0; i < n; i++)); do
		edit_one "$i" "e-$i" &
	done
	wait
	for ((i = 0; i < n; i++)); do
		[ "$(cat "rc.$i")" -eq 0 ] || fail "edit $i: $(cat "out.$i")"
	done
	for ((i = 0; i < n; i++)); do
		if [ $((i % 2)) -eq 0 ]; then
			printf 'slot-%d: e-%d\r\n' "$i" "$i"
		else
			printf 'slot-%d: e-%d\n' "$i" "$i"
		fi
	done >want.txt
	cmp -s ws/f.txt want.txt || fail "not only the matched text changed: $(od -c ws/f.txt)"
}

t "8 concurrent edits of one file, 6 rounds: every success is in the file" test_8_edits
t "32 concurrent edits of one file, 2 rounds: every success is in the file" test_32_edits
t "writes and edits mixed: never torn, an edit lost only to a later write" test_mixed_writes_and_edits
t "concurrent edits of a mixed-EOL file change only their own lines" test_edits_keep_other_lines_endings
done_testing
