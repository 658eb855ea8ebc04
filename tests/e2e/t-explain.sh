#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of `dsh-sandbox explain` and of -v (DSH_SANDBOX_DEBUG): the decisions a call
# makes, told without running anything (explain) or on stderr as a run makes them (-v), from the
# same plan, so that what explain says is what exec does.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG DSH_SANDBOX_DEBUG TMP TEMP
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
export TMPDIR=/tmp

# ws: a workspace of this test's own, canonical.
make_ws() {
	mkdir -p ws
	ws=$(cd ws && pwd -P)
}

test_text_lines() {
	make_ws
	cd ws
	run explain --mode read-only -- touch X
	assert_rc 0
	assert_streq "$err" ""
	assert_streq "$(printf '%s\n' "$out" | sed -n 1,5p)" "config: none (the built-in defaults)
mode: read-only (--mode)
workspace: $ws (the current directory)
workdir: $ws (the current directory)
writable: nothing"
	assert_contains "$out" "
backend: "
	assert_contains "$out" "
enforcement: full
"
	assert_contains "$out" "
hardening: "
	assert_contains "$out" "
network: full (unrestricted)
limits: processes "
	# The command comes last in what is executed, quoted as a shell reads it back.
	run explain --mode read-only -- sh -c 'echo "a b"; exit 3'
	assert_rc 0
	assert_contains "$out" " sh -c 'echo \"a b\"; exit 3'
hardening: "
}

test_sources() {
	make_ws
	cd ws
	run explain --workspace "$ws" --workdir "$ws" --mode workspace-write -- true
	assert_streq "$(printf '%s\n' "$out" | sed -n 2,5p)" "mode: workspace-write (--mode)
workspace: $ws (--workspace)
workdir: $ws (--workdir)
writable: $ws /tmp"
	DSH_PERMISSION_MODE=workspace-write run explain -- true
	assert_contains "$out" "
mode: workspace-write (DSH_PERMISSION_MODE, over the configuration)
"
	printf 'sandbox-policy:\n  mode: workspace-write\n' >../cfg.yaml
	local cfg
	cfg=$(cd .. && pwd -P)/cfg.yaml
	run explain --config ../cfg.yaml -- true
	assert_streq "$(printf '%s\n' "$out" | sed -n 1,2p)" "config: $cfg (--config)
mode: workspace-write (the deployment default: sandbox-policy.mode of the configuration, read-only when it sets none)"
	DSH_SANDBOX_CONFIG=../cfg.yaml run explain -- true
	assert_contains "$out" "config: $cfg (DSH_SANDBOX_CONFIG)"
	run explain --mode danger-full-access -- true
	assert_contains "$out" "
writable: everything (danger-full-access)
backend: none (danger-full-access: the command runs unconfined)
command argv: true"
	# A session's log decides its mode, and its directory is the workspace.
	run session new --cwd "$ws"
	local s=$out
	run session mode "$s" workspace-write
	run explain --session "$s" -- true
	assert_streq "$(printf '%s\n' "$out" | sed -n 2,3p)" "mode: workspace-write (the session's last mode switch, in its log)
workspace: $ws (the session's directory)"
	assert_contains "$out" "
session: $s
"
	run explain --session "$s" --backend landlock -- true
	if [ "$rc" -eq 0 ]; then
		assert_contains "$out" "
backend: landlock (--backend)
"
		assert_contains "$out" "
command argv: true
landlock read-only: /
landlock read-write: /dev/null /tmp $ws
hardening: "
	fi
}

# Nothing runs and nothing is made: not the command's file, not the protected paths a run makes
# empty beforehand, not the session's /tmp.
test_nothing_runs() {
	make_ws
	mkdir ws/.git
	cd ws
	run explain --mode workspace-write -- touch X
	assert_rc 0
	[ ! -e X ] || fail "explain ran the command"
	[ ! -e .git/hooks ] || fail "explain made .git/hooks"
	assert_contains "$out" "
protected: $ws/.git/hooks (git, read-only, made empty before the call)
"
	run session new --cwd "$ws"
	local s=$out
	run session mode "$s" workspace-write
	run explain --session "$s" -- touch X
	assert_rc 0
	[ ! -e X ] || fail "explain ran the command"
	[ ! -e "$DSH_SANDBOX_STORE/.tmp" ] || fail "explain made the session's /tmp"
	run explain --json --mode workspace-write -- touch X
	assert_rc 0
	[ ! -e X ] || fail "explain --json ran the command"
	# A run does what explain left undone.
	run exec --mode workspace-write -- touch X
	assert_rc 0
	[ -e X ] || fail "exec did not run the command"
	[ -e .git/hooks ] || fail "exec did not protect .git/hooks"
}

# What explain says is what runs: its lines are -v's for the same call, and its verdicts hold.
test_explain_is_what_runs() {
	make_ws
	cd ws
	# Probed once beforehand, so that both read the same cached verdict.
	run explain --mode workspace-write -- true
	local mode
	for mode in read-only workspace-write; do
		run explain --mode "$mode" -- true
		assert_rc 0
		local explained=$out
		run exec -v --mode "$mode" -- true
		assert_rc 0
		assert_streq "$out" ""
		assert_streq "$(printf '%s\n' "$err" | sed 's/^dsh-sandbox: //')" "$explained"
	done
	run explain --mode read-only -- touch X
	assert_contains "$out" "
writable: nothing
"
	run exec --mode read-only -- touch X
	[ "$rc" -ne 0 ] || fail "a write explain calls read-only was allowed"
	[ ! -e X ] || fail "a write explain calls read-only was made"
	run explain --mode workspace-write -- touch X
	assert_contains "$out" "
writable: $ws /tmp
"
	run exec --mode workspace-write -- touch X
	assert_rc 0
	[ -e X ] || fail "a write explain calls writable was refused"
}

# The hardening a call gets: a network namespace only where its network is restricted.
test_hardening_is_the_calls() {
	local b
	for b in bwrap landlock; do
		run explain --backend "$b" --mode workspace-write --workspace "$PWD" -- true
		assert_contains "$out" "hardening: capabilities, "
		assert_not_contains "$out" "network-namespace"
		assert_contains "$out" "network: full (unrestricted)"
		run explain --backend "$b" --network none --mode workspace-write --workspace "$PWD" -- true
		assert_contains "$out" "network-namespace"
		assert_contains "$out" "network: none (namespace)"
	done
}

test_json() {
	make_ws
	cd ws
	run explain --json --mode workspace-write --network none -- touch 'a b'
	assert_rc 0
	assert_streq "$err" ""
	printf '%s' "$out" | python3 -c '
import json, sys
ws = sys.argv[1]
e = json.load(sys.stdin)
for k in ("config", "mode", "modeSource", "modeReason", "workspaceRoot", "workspaceSource",
          "workdir", "sessionId", "writableRoots", "backend", "backendReason", "enforcement",
          "argv", "rules", "hardening", "network", "limits", "protectedPaths"):
    assert k in e, k
assert e["config"] == {"file": None, "source": None}, e["config"]
assert e["mode"] == "workspace-write" and e["modeSource"] == "explicit", e
assert e["workspaceRoot"] == ws and e["writableRoots"] == [ws, "/tmp"], e
assert e["sessionId"] is None
assert e["backend"] in ("bwrap", "landlock"), e["backend"]
assert e["argv"][-2:] == ["touch", "a b"], e["argv"]
assert e["network"] == {"access": "none", "enforcement": "namespace"} or \
       e["network"] == {"access": "none", "enforcement": "filter"}, e["network"]
assert (e["rules"] is None) == (e["backend"] == "bwrap"), e["rules"]
assert "seccomp" in e["hardening"], e["hardening"]
assert set(e["limits"]) == {"processes", "memoryBytes", "cpuSeconds", "tmpBytes", "fileBytes"}
' "$ws" || fail "explain --json: $out"
	run explain --json --mode danger-full-access -- true
	assert_rc 0
	assert_contains "$out" '"backend":null,"backendReason":"danger-full-access: the command runs unconfined","enforcement":null,"argv":["true"],"rules":null,"hardening":[],"network":{"access":"full","enforcement":"unrestricted"},"limits":null,"protectedPaths":[]}'
}

test_usage_errors() {
	run explain
	assert_rc 2
	assert_streq "$out" ""
	assert_contains "$err" "dsh-sandbox: explain: no command given (dsh-sandbox explain [OPTIONS] -- ARGV...)
usage: dsh-sandbox [--config FILE] explain "
	run explain --session x --mode read-only -- true
	assert_rc 2
	assert_contains "$err" "dsh-sandbox: explain: --session and --mode do not go together
"
	run explain --backend nope -- true
	assert_rc 2
	assert_streq "$err" 'dsh-sandbox: --backend: invalid backend "nope" (accepted: bwrap, landlock)'
	run explain --json --mode nope -- true
	assert_rc 2
	assert_streq "$out" ""
	assert_streq "$err" 'dsh-sandbox: --mode: invalid mode "nope" (accepted: read-only, workspace-write, danger-full-access)'
}

# -v tells on stderr and never touches stdout: the model's bytes and the command's are the same.
test_verbose_stderr_only() {
	make_ws
	cd ws
	local cmd='echo out; echo err >&2; ls /nonexistent-dsb'
	run bash --mode read-only "$cmd"
	local plain_out=$out plain_err=$err
	run -v bash --mode read-only "$cmd"
	assert_streq "$out" "$plain_out"
	assert_streq "$plain_err" ""
	assert_contains "$err" "dsh-sandbox: config: none (the built-in defaults)
dsh-sandbox: mode: read-only (--mode)
"
	# Every line on stderr is ours: the command's output stays in the tool's result.
	if printf '%s\n' "$err" | grep -v '^dsh-sandbox: '; then
		fail "-v put something else on stderr: $err"
	fi
	run bash -v --json --mode read-only "$cmd"
	assert_streq "$(printf '%s' "$out" | python3 -c 'import json,sys; json.load(sys.stdin); print("json")')" json
	run exec --mode read-only -- sh -c "$cmd"
	plain_out=$out
	assert_streq "$err" "err
ls: cannot access '/nonexistent-dsb': No such file or directory"
	run exec -v --mode read-only -- sh -c "$cmd"
	assert_streq "$out" "$plain_out"
	assert_contains "$err" "dsh-sandbox: mode: read-only (--mode)
"
	assert_contains "$err" "
err
ls: cannot access '/nonexistent-dsb': No such file or directory"
	# Byte for byte, trailing newlines included.
	"$DSB" bash --mode read-only "$cmd" >plain.out 2>/dev/null
	DSH_SANDBOX_DEBUG=1 "$DSB" bash --mode read-only "$cmd" >debug.out 2>debug.err
	cmp plain.out debug.out || fail "DSH_SANDBOX_DEBUG changed bash's stdout"
	assert_file_has_content debug.err '^dsh-sandbox: backend: '
	"$DSB" exec --mode read-only -- sh -c "$cmd" >plain.out 2>/dev/null || true
	"$DSB" --verbose exec --mode read-only -- sh -c "$cmd" >debug.out 2>debug.err || true
	cmp plain.out debug.out || fail "--verbose changed exec's stdout"
	assert_file_has_content debug.err '^dsh-sandbox: enforcement: '
	DSH_SANDBOX_DEBUG=0 run bash --mode read-only "$cmd"
	assert_streq "$err" ""
	# A file operation: the policy told, no sandbox claimed; the model's text the same.
	run fs read --mode read-only debug.err
	plain_out=$out
	DSH_SANDBOX_DEBUG=1 run fs read --mode read-only debug.err
	assert_streq "$out" "$plain_out"
	assert_contains "$out" "dsh-sandbox: enforcement: "
	assert_contains "$err" "
dsh-sandbox: backend: none (a file operation is fenced by the policy, not sandboxed)"
}

t "explain tells each decision, one line each" test_text_lines
t "explain names where the config, mode and workspace came from" test_sources
t "explain runs nothing and makes nothing" test_nothing_runs
t "explain's lines are -v's, and its verdicts hold when run" test_explain_is_what_runs
t "explain's hardening is the call's: no network namespace under full" test_hardening_is_the_calls
t "explain --json has the decisions' fields" test_json
t "explain's usage errors" test_usage_errors
t "-v and DSH_SANDBOX_DEBUG tell on stderr, stdout unchanged" test_verbose_stderr_only
done_testing
