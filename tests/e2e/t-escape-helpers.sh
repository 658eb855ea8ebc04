#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Trusted helpers (DESIGN.md "Threat model": it cannot plant what later runs outside the sandbox;
# the runner programs are never writable from inside). A confined command in workspace-write mode
# can write a program named `bwrap` into the workspace. When the next call starts there with a
# PATH that reaches the current directory — ".", an empty entry ("::", or a leading ":"), or a
# relative entry — the planted program must not be the bwrap that dsh-sandbox runs: `probe`
# reports the system's bwrap as its program and `exec --backend bwrap` works, in both confined
# modes, without the impostor ever running. The control: with that PATH, the shell finds and
# runs the impostor first.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

REAL_BWRAP=$(PATH=/usr/local/bin:/usr/bin:/bin command -v bwrap) ||
	fail "no bwrap on the system PATH"

# The impostor leaves a mark, then passes for the real thing.
plant() {
	mkdir -p ws
	cat >ws/bwrap <<-FAKE
		#!/bin/sh
		touch '$PWD/impostor-ran'
		exec '$REAL_BWRAP' "\$@"
	FAKE
	chmod 755 ws/bwrap
	# Own store: no verdict cached by another test (or by an earlier impostor).
	export DSH_SANDBOX_STORE=$PWD/store
}

# with_path VARIANT COMMAND...: COMMAND from the directory and with the PATH of VARIANT.
with_path() {
	local variant=$1
	shift
	case $variant in
	dot) (cd ws && PATH=".:$PATH" "$@") ;;
	empty) (cd ws && PATH="/nonexistent-dsb::$PATH" "$@") ;;
	leading-empty) (cd ws && PATH=":$PATH" "$@") ;;
	relative) PATH="ws:$PATH" "$@" ;;
	esac
}

assert_impostor_never_ran() {
	[ ! -e impostor-ran ] || fail "the planted bwrap ran"
}

test_control() {
	local found
	plant
	found=$(with_path "$1" bash -c 'command -v bwrap')
	[ "$found" != "$REAL_BWRAP" ] || fail "the shell found $found"
	with_path "$1" bwrap --version >/dev/null
	[ -e impostor-ran ] || fail "the shell did not run the planted bwrap ($found)"
}

test_probe_program() {
	plant
	rc=0
	out=$(with_path "$1" "$DSB" probe --fresh --json) || rc=$?
	assert_rc 0
	assert_impostor_never_ran
	assert_contains "$out" "{\"name\":\"bwrap\",\"usable\":true"
	# The member of the bwrap backend's object.
	assert_streq "$("$PYTHON" -c '
import json, sys
print([b for b in json.load(sys.stdin)["backends"] if b["name"] == "bwrap"][0].get("program"))
' <<<"$out")" "$REAL_BWRAP"
}

test_exec() {
	local mode
	plant
	for mode in "${MODES[@]}"; do
		rc=0
		out=$(with_path "$1" "$DSB" exec --backend bwrap --mode "$mode" --workspace "$PWD/ws" -- \
			echo confined-ran) || rc=$?
		assert_rc 0
		assert_streq "$out" confined-ran
		assert_impostor_never_ran
	done
}

# variant | what it is
variants=(
	"dot|. in PATH, started in the workspace"
	"empty|an empty PATH entry (::), started in the workspace"
	"leading-empty|a leading empty PATH entry (:), started in the workspace"
	"relative|a relative PATH entry naming the workspace"
)
for v in "${variants[@]}"; do
	IFS='|' read -r variant what <<<"$v"
	t "control: $what: the shell runs the planted bwrap" test_control "$variant"
	t "$what: probe reports $REAL_BWRAP as bwrap's program" test_probe_program "$variant"
	t "$what: exec --backend bwrap (read-only, workspace-write) runs, the planted one never" \
		test_exec "$variant"
done
done_testing
