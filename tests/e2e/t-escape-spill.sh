#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end: the confined command cannot redirect the spill files (dsh-compat §6.3, docs/design/
# spill.md) nor write them (docs/design/protected-paths.md). The spill directory is made by the
# unconfined caller before the command starts, in a TMPDIR the command can write, and kept
# read-only inside; the command tries to swap TMPDIR, or the spill directory, for a symlink to a
# directory outside every grant, then prints past maxOutputBytes (64000). Nothing may land
# outside, and the spill stays where its path says. Both backends, with openat2 and without it
# (tests/shims --no-openat2: the walk). Runs as root and as nobody.
#
#   $PWD/ws/           the workspace
#   $PWD/ws/tmp/       TMPDIR for the run: a writable root (dsh-compat §4.1)
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

# The command tries to replace TMPDIR by a symlink outside before anything spills. TMPDIR holds
# the protected spill directory, so it is a mount point inside and cannot go: the spill is made
# where TMPDIR really is, complete.
test_tmpdir_swapped_for_symlink() {
	local shim=$1 b=$2
	setup
	# The control: unconfined, the swap works.
	mkdir -p ctl/tmp
	bash -c "rm -rf '$PWD/ctl/tmp' && ln -s '$OUT' '$PWD/ctl/tmp'" || fail "the control swap failed"
	[ -L ctl/tmp ] || fail "the control did not swap ctl/tmp"
	rm ctl/tmp
	spill_bash "$shim" "$b" "rm -rf '$PWD/ws/tmp'; ln -s '$OUT' '$PWD/ws/tmp'; head -c 200000 /dev/zero | tr '\\0' a"
	assert_rc 0
	if [ ! -d ws/tmp ] || [ -L ws/tmp ]; then fail "ws/tmp was swapped: $(ls -lA ws)"; fi
	assert_contains "$out" "Device or resource busy"
	assert_out_empty
	[[ "$out" =~ full\ output:\ ($PWD/ws/tmp/$SPILL_NAME-stdout\.log)\] ]] ||
		fail "no spill path in: ${out: -300}"
	assert_streq "$(wc -c <"${BASH_REMATCH[1]}")" 200000
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

# The command overflows stdout, finds the spill directory (made before it started), tries to
# rename it (within TMPDIR) and put a symlink outside in its place, then overflows stderr. The
# directory is protected: neither works, and both spills land in it, complete.
test_spill_dir_swapped_for_symlink() {
	local shim=$1 b=$2
	setup
	spill_bash "$shim" "$b" "head -c 70000 /dev/zero | tr '\\0' a
d=\$(ls -d '$PWD/ws/tmp'/dsh-subprocess-* 2>/dev/null)
[ -d \"\$d\" ] || exit 9
mv \"\$d\" '$PWD/ws/tmp/moved' 2>/dev/null || echo mv refused
ln -s '$OUT' \"\$d\" 2>/dev/null || echo ln refused
touch \"\$d/planted\" 2>/dev/null || echo write refused
head -c 70000 /dev/zero | tr '\\0' b >&2"
	assert_rc 0
	assert_not_contains "$out" "[exit code:"
	assert_contains "$out" "mv refused"
	assert_contains "$out" "write refused"
	local entries
	entries=(ws/tmp/dsh-subprocess-*)
	if [ "${#entries[@]}" -ne 1 ] || [ -L "${entries[0]}" ] || [ -e ws/tmp/moved ] ||
		[ -e "${entries[0]}/planted" ]; then
		fail "the spill directory was changed: $(ls -lAR ws/tmp) ($out)"
	fi
	assert_out_empty
	[[ "$out" =~ full\ output:\ $PWD/(ws/tmp/dsh-subprocess-[A-Za-z0-9]{6}/dsh-subprocess-[0-9]+-[0-9]+-[0-9a-f]{12}-stdout\.log)\] ]] ||
		fail "no stdout spill path in: ${out: -400}"
	# 70000 a, then "mv refused", "ln refused", "write refused", each with its newline.
	assert_streq "$(wc -c <"${BASH_REMATCH[1]}")" 70036
	[[ "$out" =~ full\ output:\ $PWD/(ws/tmp/dsh-subprocess-[A-Za-z0-9]{6}/dsh-subprocess-[0-9]+-[0-9]+-[0-9a-f]{12}-stderr\.log)\] ]] ||
		fail "no stderr spill path in: ${out: -400}"
	assert_streq "$(wc -c <"${BASH_REMATCH[1]}")" 70000
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
