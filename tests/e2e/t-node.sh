#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The npm package dsh-sandbox (bindings/node): built with tsc from a copy of its source, its
# node --test suite against this build's server (one TAP line per test), and its npm pack
# tarball installed offline into a fresh project where the README's example runs.
# Its npm packages come from scripts/install-mcp-clients.sh (run by scripts/install-deps.sh).
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
# npm writes its logs and cache under HOME: the test's own.
export npm_config_cache="$TEST_TMP/npm-cache" npm_config_update_notifier=false

src=${DSB_SOURCE_ROOT:?}
pkg=$TEST_TMP/node

if [ ! -d "$src/bindings/node/node_modules/@modelcontextprotocol/sdk" ] ||
	[ ! -d "$src/bindings/node/.npm-cache" ]; then
	t "bindings/node's npm packages are installed" \
		fail "run scripts/install-mcp-clients.sh"
	done_testing
	exit
fi

# A copy to build in (the checkout may be read-only to this user); node_modules as it is.
mkdir -p "$pkg"
tar -C "$src/bindings/node" --exclude=node_modules --exclude=dist --exclude=.npm-cache \
	--exclude='*.tgz' -cf - . | tar -C "$pkg" -xf -
ln -s "$src/bindings/node/node_modules" "$pkg/node_modules"
tsc=$pkg/node_modules/typescript/bin/tsc

test_typecheck() {
	node "$tsc" -p "$pkg/tsconfig.json" --noEmit
}

t "tsc --noEmit is clean" test_typecheck
node "$tsc" -p "$pkg/tsconfig.json" || fail "tsc failed"

# node --test: each of its tests one line of ours.
rc=0
(cd "$pkg" && node --test --test-reporter=./test/flat-reporter.mjs test/*.test.mjs) >"$TEST_TMP/node-test.log" \
	2>&1 || rc=$?
seen=0
while IFS= read -r line; do
	case $line in
	"ok - "*)
		_tap_count=$((_tap_count + 1))
		seen=$((seen + 1))
		echo "ok $_tap_count - node: ${line#ok - }"
		;;
	"not ok - "*)
		_tap_count=$((_tap_count + 1))
		_tap_failed=$((_tap_failed + 1))
		seen=$((seen + 1))
		echo "not ok $_tap_count - node: ${line#not ok - }"
		;;
	*) echo "# $line" ;;
	esac
done <"$TEST_TMP/node-test.log"
# The runner itself failing (a file that does not load) shows as its status alone.
test_runner_status() {
	[ "$rc" -eq 0 ] || fail "node --test exited $rc"
	[ "$seen" -gt 0 ] || fail "node --test reported no test"
}
t "node --test ran its tests and passed" test_runner_status

# The tarball, installed from the package cache alone into a fresh project, runs the README's
# example (written out of bindings/node/README.md, so the README is what is tested).
test_pack_install() {
	cp -r "$src/bindings/node/.npm-cache" "$TEST_TMP/pack-cache"
	local here=$PWD
	(cd "$pkg" && npm pack --silent --cache "$TEST_TMP/pack-cache" --pack-destination "$here") \
		>pack.log 2>&1 || fail "$(cat pack.log)"
	tarball=$(ls "$here"/dsh-sandbox-*.tgz)
	mkdir app ws
	(cd app && npm init -y >/dev/null &&
		npm install --offline --no-audit --no-fund --cache "$TEST_TMP/pack-cache" "$tarball" >../install.log 2>&1) ||
		fail "$(cat install.log)"
	[ -f app/node_modules/dsh-sandbox/dist/index.d.ts ] || fail "no typings in the tarball"
	# Its typings serve a strict TypeScript consumer, with the library checks on.
	cat >app/check.mts <<'END'
import { Sandbox, type CodeName, type RunResult } from "dsh-sandbox";
const sb: Sandbox = await Sandbox.open({ mode: "read-only", network: "none" });
const r: RunResult = await sb.run(["true"], { timeout: 1000, signal: AbortSignal.timeout(5000) });
const code: CodeName = "FS_SANDBOX_DENIED";
console.log(r.exitCode, code);
END
	node "$tsc" --noEmit --strict --module nodenext --moduleResolution nodenext --target es2022 \
		--typeRoots "$pkg/node_modules/@types" --types node app/check.mts >tsc.log 2>&1 ||
		fail "$(cat tsc.log)"
	[ ! -e app/node_modules/dsh-sandbox/src ] || fail "the tarball ships src/"
	# shellcheck disable=SC2016 # backquotes of Markdown, not of the shell
	sed -n '/^```js example$/,/^```$/p' "$src/bindings/node/README.md" | sed '1d;$d' >app/example.mjs
	[ -s app/example.mjs ] || fail "no example in bindings/node/README.md"
	(cd app && DSB_EXAMPLE_WORKSPACE="$PWD/../ws" node example.mjs) >out 2>&1 || fail "$(cat out)"
	assert_file_has_content out 'exit code 0: hello'
	assert_file_has_content out 'denied: true'
}
t "npm pack's tarball installs offline and the README example runs" test_pack_install

done_testing
