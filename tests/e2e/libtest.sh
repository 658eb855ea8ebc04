# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# A small TAP library for end-to-end tests through the dsh-sandbox CLI (after bubblewrap's
# tests/libtest.sh). Each test is a function run in its own subshell under `set -e`, so a failed
# assertion fails that test only; the plan is printed at the end by done_testing.

set -euo pipefail

: "${DSH_SANDBOX:?DSH_SANDBOX must name the dsh-sandbox binary}"
DSB=$DSH_SANDBOX

TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/dsb-e2e.XXXXXX")
cleanup() {
	rm -rf "$TEST_TMP"
}
trap cleanup EXIT

_tap_count=0
_tap_failed=0

# t NAME FUNCTION [ARGS...]: runs FUNCTION in a subshell in a fresh directory; prints ok/not ok.
t() {
	local name=$1
	shift
	local dir="$TEST_TMP/t$((_tap_count + 1))"
	mkdir -p "$dir"
	local rc=0
	set +e
	(
		set -euo pipefail
		cd "$dir"
		"$@"
	) >"$dir.log" 2>&1
	rc=$?
	set -e
	_tap_count=$((_tap_count + 1))
	if [ "$rc" -eq 0 ]; then
		echo "ok $_tap_count - $name"
	else
		_tap_failed=$((_tap_failed + 1))
		echo "not ok $_tap_count - $name"
		sed 's/^/# /' "$dir.log"
	fi
}

# ok_skip NAME REASON: a test that cannot run here (only for a feature the kernel lacks).
ok_skip() {
	_tap_count=$((_tap_count + 1))
	echo "ok $_tap_count - $1 # SKIP $2"
}

# The unprivileged variant (as-user.sh) must really have dropped root: a run that silently kept
# it would prove nothing about users.
identity_test() {
	if [ "${DSB_E2E_UNPRIVILEGED:-0}" = 1 ]; then
		[ "$(id -u)" -ne 0 ] || fail "expected to run unprivileged, but uid is 0"
		[ "$(grep '^CapEff:' /proc/self/status | awk '{ print $2 }')" = 0000000000000000 ] ||
			fail "expected no effective capabilities"
	fi
}

done_testing() {
	echo "1..$_tap_count"
	[ "$_tap_failed" -eq 0 ]
}

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# run ARGS...: runs dsh-sandbox, capturing stdout, stderr and the exit status in $out, $err, $rc.
run() {
	rc=0
	"$DSB" "$@" >"$PWD/.out" 2>"$PWD/.err" || rc=$?
	out=$(cat "$PWD/.out")
	err=$(cat "$PWD/.err")
}

# without_limits JSON: `policy --json` without its last member, "limits", whose values are this
# host's (tests/e2e/t-harm-limits.sh checks them); the rest byte for byte.
without_limits() {
	printf '%s' "$1" | sed -E 's/,"limits":\{.*"budgets":"[a-z-]+"\}\}$/}/'
}

assert_rc() {
	[ "$rc" -eq "$1" ] || fail "exit status $rc, expected $1 (stdout: $out) (stderr: $err)"
}

assert_streq() {
	[ "$1" == "$2" ] || fail "got [$1], expected [$2]"
}

assert_contains() {
	case "$1" in
	*"$2"*) ;;
	*) fail "[$1] does not contain [$2]" ;;
	esac
}

assert_not_contains() {
	case "$1" in
	*"$2"*) fail "[$1] contains [$2]" ;;
	*) ;;
	esac
}

assert_file_has_content() {
	grep -q -e "$2" "$1" || fail "file $1 does not match /$2/"
}

t "runs as uid $(id -u)${DSB_E2E_UNPRIVILEGED:+ (unprivileged variant)}" identity_test
