#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every test of the project: the meson suites (unit, e2e as root and unprivileged,
# fuzz-replay) in the sanitizer build, a clang build, the ABI check and the linters. Prints
# each step, then one closing line "N passed, N failed, N skipped" counting single test cases.
# Exits non-zero when anything failed.
# step() runs the functions below indirectly, which shellcheck cannot see.
# shellcheck disable=SC2317
set -uo pipefail

build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
results=$(mktemp)
trap 'rm -f "$results"' EXIT

# step NAME COMMAND...: one pass/fail line in the summary.
step() {
	local name=$1
	shift
	echo "=== $name"
	if "$@"; then
		echo "pass $name" >>"$results"
	else
		echo "fail $name" >>"$results"
		echo "=== $name FAILED"
	fi
}

# A git checkout (.git is a file in a worktree) lints what git tracks; a tree without git skips
# the npm clients' node_modules.
sources() {
	if [ -e .git ]; then
		git ls-files '*.c' '*.h'
	else
		find src include tests fuzz bench -name node_modules -prune -o -name '*.[ch]' -print \
			2>/dev/null
	fi
}

shell_scripts() {
	if [ -e .git ]; then
		git ls-files '*.sh' .ci/run
	else
		find . -name node_modules -prune -o -name '*.sh' -not -path './build*' -print
	fi
}

# The meson suites; their cases are counted from the test log, not as one step.
meson test -C "$build" --print-errorlogs --num-processes 2
cp "$build/meson-logs/testlog.json" "$results.testlog"

mapfile -t c_files < <(sources)
mapfile -t sh_files < <(shell_scripts)
mapfile -t lib_files < <(printf '%s\n' "${c_files[@]}" | grep '^src/.*\.c$')

clang_build() {
	{ [ -f build-clang/build.ninja ] ||
		CC=clang meson setup build-clang -Dwerror=true -Dbuildtype=debugoptimized \
			>/dev/null; } && ninja -C build-clang >/dev/null
}

# clang-tidy prints its findings as "file:line:col: warning: ..."; any one fails the step.
tidy() {
	local findings
	findings=$(clang-tidy --quiet -p build-clang "${lib_files[@]}" 2>/dev/null |
		grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):')
	[ -z "$findings" ] || {
		echo "$findings"
		return 1
	}
}

step "build with clang, -Werror" clang_build
step "the house: backend names only in their backends, no circles between files or pieces" \
	python3 tests/house-check.py . "$build"
step "exported symbols match libdshsandbox.map" tests/abi-check.sh "$build"
step "clang-format" clang-format --dry-run --Werror "${c_files[@]}"
step "shellcheck" shellcheck -x "${sh_files[@]}"
# cppcheck cannot see __attribute__((cleanup)), so every _cleanup_ local reads as a leak to it;
# leaks are LeakSanitizer's job in every test run.
step "cppcheck" cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
	--inline-suppr --suppress=missingIncludeSystem --suppress=memleak -D_GNU_SOURCE \
	-I include -I "$build/include" -I "$build" src
step "clang-tidy" tidy
step "make install into a DESTDIR, a program built with pkg-config, make uninstall" \
	tests/install-check.sh
step "the Debian packages: built, lintian-clean, installed, probe and demo, purged" \
	tests/package-check.sh

# Where bwrap and Landlock both work, a skipped test is a failure.
if DSH_SANDBOX_STORE=$(mktemp -d) "$build/dsh-sandbox" probe --fresh --json 2>/dev/null |
	grep -q '"name":"bwrap","usable":true.*"name":"landlock","usable":true'; then
	export DSB_REQUIRE_NO_SKIPS=1
fi
python3 tests/summary.py "$results.testlog" "$results"
status=$?
rm -f "$results.testlog"
exit $status
