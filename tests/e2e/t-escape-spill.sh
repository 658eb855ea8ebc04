#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: the confined command cannot redirect the spill files (spec §6.3, docs/design/
# spill.md). The spill directory is made by the unconfined caller while the command runs, in a
# TMPDIR the command can write; the command swaps TMPDIR, or the fresh spill directory, for a
# symlink to a directory outside every grant, then prints past maxOutputBytes (64000). Nothing
# may land outside; each test first checks that the swap really happened. Both backends, with
# openat2 and without it (tests/shims --no-openat2: the walk). Runs as root and as nobody.
#
#   $PWD/ws/           the workspace
#   $PWD/ws/tmp/       TMPDIR for the run: a writable root (spec §4.1)
#   $OUT/              outside every grant, writable by the test user (/var/tmp): must stay empty
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME DSH_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
SHIM=${DSB_SECCOMP_SHIM:?}
SPILL_NAME='dsh-subprocess-[A-Za-z0-9]{6}/dsh-subprocess-[0-9]+-[0-9]+-[0-9a-f]{12}'

# Both backends must work on this machine: a suite that skipped them here would prove nothing.
for b in bwrap landlock; do
	"$DSB" probe --fresh --json | grep -q "{\"name\":\"$b\",\"usable\":true" ||
		fail "backend $b is not usable here: $("$DSB" probe --fresh)"
done

setup() {
	mkdir -p ws/tmp
	OUT=$(mktemp -d /var/tmp/dsb-out.XXXXXX)
	trap 'rm -rf "$OUT"' EXIT
}

# spill_bash SHIM_ARGS BACKEND SCRIPT: the bash tool, confined, with TMPDIR=ws/tmp; results in
# $out $err $rc. SHIM_ARGS "" runs without the shim.
spill_bash() {
	local shim=$1 backend=$2
	local -a pre=()
	[ -z "$shim" ] || pre=("$SHIM" "$shim" --)
	rc=0
	TMPDIR=$PWD/ws/tmp "${pre[@]}" "$DSB" bash --backend "$backend" --mode workspace-write \
		--workspace "$PWD/ws" "$3" >"$PWD/.out" 2>"$PWD/.err" || rc=$?
	out=$(cat "$PWD/.out")
	err=$(cat "$PWD/.err")
}

assert_out_empty() {
	[ -z "$(ls -A "$OUT")" ] || fail "files landed outside: $(ls -lAR "$OUT")"
}

# The command replaces TMPDIR by a symlink outside before anything spills: no spill.
test_tmpdir_swapped_for_symlink() {
	local shim=$1 b=$2
	setup
	spill_bash "$shim" "$b" "rm -rf '$PWD/ws/tmp'; ln -s '$OUT' '$PWD/ws/tmp'; head -c 200000 /dev/zero | tr '\\0' a"
	assert_rc 0
	# The control: the swap really happened, to a directory outside.
	[ -L ws/tmp ] || fail "ws/tmp is no symlink: the attack was not attempted ($out)"
	assert_streq "$(readlink ws/tmp)" "$OUT"
	assert_out_empty
	assert_contains "$out" "aaaa"
	assert_contains "$out" "[output truncated; full output: (unavailable)]"
	assert_not_contains "$out" "dsh-subprocess-"
}

# A legitimate run in the same setting spills where TMPDIR really is.
test_spill_without_attack() {
	local shim=$1 b=$2
	setup
	spill_bash "$shim" "$b" "head -c 200000 /dev/zero | tr '\\0' a"
	assert_rc 0
	[[ "$out" =~ \[output\ truncated\;\ full\ output:\ ($PWD/ws/tmp/$SPILL_NAME-stdout\.log)\]$ ]] ||
		fail "no spill path in: ${out: -300}"
	[ -f "${BASH_REMATCH[1]}" ] || fail "the reported spill file does not exist"
	assert_streq "$(wc -c <"${BASH_REMATCH[1]}")" 200000
	assert_out_empty
}

# The command overflows stdout, waits (up to 10 s) for the spill directory, renames it (within
# TMPDIR) and puts a symlink outside in its place, then overflows stderr: stderr's spill must
# not follow the symlink.
test_spill_dir_swapped_for_symlink() {
	local shim=$1 b=$2
	setup
	spill_bash "$shim" "$b" "head -c 70000 /dev/zero | tr '\\0' a
for i in \$(seq 100); do d=\$(ls -d '$PWD/ws/tmp'/dsh-subprocess-* 2>/dev/null) && break; sleep 0.1; done
[ -d \"\$d\" ] || exit 9
mv \"\$d\" '$PWD/ws/tmp/moved' && ln -s '$OUT' \"\$d\" || exit 10
head -c 70000 /dev/zero | tr '\\0' b >&2"
	assert_rc 0
	assert_not_contains "$out" "[exit code:"
	# The control: the spill directory was moved, and a symlink outside put in its place.
	local entries
	entries=(ws/tmp/dsh-subprocess-*)
	if [ "${#entries[@]}" -ne 1 ] || [ ! -L "${entries[0]}" ] || [ ! -d ws/tmp/moved ]; then
		fail "the spill directory was not swapped: $(ls -lA ws/tmp) ($out)"
	fi
	assert_streq "$(readlink "${entries[0]}")" "$OUT"
	assert_out_empty
	# stdout's spill was open before the swap: complete, in the directory that was moved.
	[[ "$out" =~ full\ output:\ $PWD/ws/tmp/dsh-subprocess-[A-Za-z0-9]{6}/(dsh-subprocess-[0-9]+-[0-9]+-[0-9a-f]{12}-stdout\.log)\] ]] ||
		fail "no stdout spill path in: ${out: -400}"
	assert_streq "$(wc -c <"ws/tmp/moved/${BASH_REMATCH[1]}")" 70000
	# stderr's spill could no longer be made where its path would say: none.
	assert_contains "$out" "bbbb
[output truncated; full output: (unavailable)]"
}

for shim in "" --no-openat2; do
	for b in bwrap landlock; do
		label="$b${shim:+ ($shim)}"
		t "$label: TMPDIR swapped for a symlink outside: no spill, nothing outside" test_tmpdir_swapped_for_symlink "$shim" "$b"
		t "$label: without the swap the spill is made in TMPDIR" test_spill_without_attack "$shim" "$b"
		t "$label: spill dir swapped for a symlink outside mid-run: nothing outside" test_spill_dir_swapped_for_symlink "$shim" "$b"
	done
done
done_testing
