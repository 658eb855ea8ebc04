#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end confinement through `dsh-sandbox exec` on both backends (dsh-compat §4.2, §5, §11.5,
# §11.6): writes land only where the mode grants, each backend's denial dialect, /tmp per
# backend, nested children, exit statuses, escape attempts, the fail-closed matrix, a degraded
# Landlock ABI, `probe` and a configured runner. Runs as root and as nobody.
#
#   $PWD/ws/         the workspace (under $TMPDIR)
#   $OUT/            a directory outside every grant, writable by the test user (/var/tmp)
#   $OUT/victim      an outside file ("orig") that escapes try to change
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
SHIM=${DSB_SECCOMP_SHIM:?}
NOTICE='landlock-run: partial enforcement (older Landlock ABI)'

# Both backends must work on this machine: a suite that skipped them here would prove nothing.
for b in bwrap landlock; do
	"$DSB" probe --fresh --json | grep -q "{\"name\":\"$b\",\"usable\":true" ||
		fail "backend $b is not usable here: $("$DSB" probe --fresh)"
done

setup() {
	mkdir ws
	OUT=$(mktemp -d /var/tmp/dsb-out.XXXXXX)
	echo orig >"$OUT/victim"
	trap 'rm -rf "$OUT"' EXIT
}

# sbx BACKEND MODE SCRIPT: bash -c SCRIPT confined, in ws/, results in $out $err $rc.
sbx() {
	local backend=$1 mode=$2
	shift 2
	run exec --backend "$backend" --mode "$mode" --workspace "$PWD/ws" -- bash -c "$1"
}

denial() {
	case "$1" in
	bwrap) echo "Read-only file system" ;;
	landlock) echo "Permission denied" ;;
	esac
}

test_read_only_denies_writes() {
	local b=$1
	setup
	sbx "$b" read-only "echo x > '$OUT/f'"
	[ "$rc" -ne 0 ] || fail "write outside succeeded"
	assert_contains "$err" "$(denial "$b")"
	[ ! -e "$OUT/f" ] || fail "file exists outside"
	sbx "$b" read-only "echo x > '$PWD/ws/f'"
	[ "$rc" -ne 0 ] || fail "write inside succeeded under read-only"
	[ ! -e ws/f ] || fail "file exists in the workspace"
}

test_read_only_tree_readable_dev_null_writable() {
	local b=$1
	setup
	sbx "$b" read-only "ls / > /dev/null && echo dev-ok"
	assert_rc 0
	assert_streq "$out" "dev-ok"
}

test_workspace_write_inside_lands_beside_denied() {
	local b=$1
	setup
	sbx "$b" workspace-write "echo $b-ok > '$PWD/ws/inside' && cat '$PWD/ws/inside'"
	assert_rc 0
	assert_streq "$out" "$b-ok"
	assert_streq "$(cat ws/inside)" "$b-ok"
	sbx "$b" workspace-write "echo x > '$OUT/beside'"
	[ "$rc" -ne 0 ] || fail "write beside the workspace succeeded"
	assert_contains "$err" "$(denial "$b")"
	[ ! -e "$OUT/beside" ] || fail "file exists beside"
}

test_tmp_per_backend() {
	local b=$1 name
	setup
	name=/tmp/dsb-e2e-tmp.$$.$b
	sbx "$b" workspace-write "echo tmp-ok > $name && cat $name"
	assert_rc 0
	assert_streq "$out" "tmp-ok"
	# A /tmp of the call's own on both backends (docs/design/paths.md; Landlock makes a
	# mount namespace for it, which this host allows): the host's never sees it.
	[ ! -e "$name" ] || fail "the $b call's /tmp write reached the host"
}

test_nested_children_are_confined() {
	local b=$1
	setup
	sbx "$b" workspace-write "bash -c 'sh -c \"echo x > $OUT/nested\"'"
	[ "$rc" -ne 0 ] || fail "a grandchild escaped"
	[ ! -e "$OUT/nested" ] || fail "nested write landed"
}

test_exit_statuses_pass_through() {
	local b=$1
	setup
	sbx "$b" read-only "exit 7"
	assert_rc 7
	sbx "$b" read-only "exit 125"
	assert_rc 125
	sbx "$b" read-only "kill -TERM \$\$"
	assert_rc 143
}

test_escapes_fail() {
	local b=$1
	setup
	local ws=$PWD/ws dotdots
	dotdots=$(printf '../%.0s' {1..30})
	ln -s "$OUT" ws/link
	echo mine >ws/own
	local attempts=(
		"echo x > '$ws/link/via-symlink'"
		"echo x > '$ws/${dotdots}${OUT#/}/via-dotdot'"
		"ln '$OUT/victim' '$ws/hard' && echo x >> '$ws/hard'"
		"mv '$OUT/victim' '$ws/stolen'"
		"mv '$ws/own' '$OUT/moved'"
		"echo x > /proc/self/root$OUT/via-proc-root"
		"cd '$OUT' && { sleep 5 & p=\$!; echo x > /proc/\$p/cwd/via-proc-cwd; r=\$?; kill \$p; exit \$r; }"
		"exec 3<'$OUT'; echo x > /proc/self/fd/3/via-proc-fd"
		"echo x > /proc/1/root$OUT/via-pid1-root"
		"mkfifo '$OUT/fifo'"
		"python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind(\"$OUT/sock\")'"
		"truncate -s 0 '$OUT/victim'"
		"echo x >> '$OUT/victim'"
	)
	for a in "${attempts[@]}"; do
		sbx "$b" workspace-write "$a"
		[ "$rc" -ne 0 ] || fail "escape succeeded: $a"
	done
	assert_streq "$(cat "$OUT/victim")" "orig"
	assert_streq "$(ls "$OUT")" "victim"
	[ -e ws/own ] || fail "a file left the workspace"

	# /dev/shm: Landlock refuses it; bwrap's fresh /dev has a private one. The host's is
	# untouched either way.
	sbx "$b" workspace-write "echo x > /dev/shm/dsb-e2e-$$"
	[ "$b" = bwrap ] || [ "$rc" -ne 0 ] || fail "Landlock let /dev/shm be written"
	[ ! -e "/dev/shm/dsb-e2e-$$" ] || fail "the host's /dev/shm was written"

	# Metadata: bwrap's read-only bind refuses chmod; Landlock does not govern it (dsh-compat §5.6),
	# so its calls go to our supervisor, which refuses them outside the writable roots
	# (t-escape-metadata.sh has the whole family).
	sbx "$b" workspace-write "chmod 600 '$OUT/victim'"
	[ "$rc" -ne 0 ] || fail "$b let chmod through"
	[ "$(stat -c %a "$OUT/victim")" != 600 ] || fail "mode changed under $b"
}

test_signals_stay_inside() {
	local b=$1
	setup
	sleep 30 &
	local outside=$!
	sbx "$b" read-only "kill -0 $outside"
	kill "$outside"
	[ "$rc" -ne 0 ] || fail "a confined command could signal pid $outside outside its sandbox"
}

test_danger_full_access_is_not_confined() {
	setup
	run exec --mode danger-full-access -- bash -c "echo x > '$OUT/free'"
	assert_rc 0
	[ -e "$OUT/free" ] || fail "danger-full-access write did not land"
}

# A PATH with the tools the tests use but no bwrap.
path_without_bwrap() {
	mkdir -p nobwrap
	local tool
	for tool in bash sh true touch cat ls; do
		ln -sf "$(type -P "$tool")" "nobwrap/$tool"
	done
	echo "$PWD/nobwrap"
}

test_fail_closed_matrix() {
	setup
	export DSH_SANDBOX_STORE=$PWD/own-store # no verdict cached by other tests
	local p
	p=$(path_without_bwrap)

	# Each failure alone falls back to the other backend...
	PATH=$p run exec --mode read-only -- touch "$OUT/m1"
	[ "$rc" -ne 0 ] || fail "read-only write outside landed"
	PATH=$p run probe --fresh
	assert_contains "$out" "selected: landlock"
	run probe --fresh --json
	"$SHIM" --no-landlock -- "$DSB" probe --fresh >probe.txt
	assert_file_has_content probe.txt "selected: bwrap"
	"$SHIM" --no-namespaces -- "$DSB" probe --fresh >probe.txt
	assert_file_has_content probe.txt "selected: landlock"
	assert_file_has_content probe.txt "bwrap: unusable: the probe exited with status 1: bwrap: "
	# Without namespaces Landlock still runs, and says how it keeps host IPC out of reach: the
	# filter. A host message queue made outside cannot be removed from inside.
	assert_file_has_content probe.txt "  hardening: .*no-new-privs, seccomp, stdio-only, reaped, ipc-filtered"
	local q
	q=$(ipcmk -Q | grep -o '[0-9]*$')
	rc=0
	"$SHIM" --no-namespaces -- "$DSB" exec --backend landlock --mode read-only -- \
		ipcrm -q "$q" 2>err.txt || rc=$?
	ipcs -q -i "$q" >/dev/null 2>&1 || fail "the filter let a host queue be removed"
	ipcrm -q "$q"
	[ "$rc" -ne 0 ] || fail "ipcrm succeeded inside"

	# ...and both together fail closed: nothing runs.
	local combos=("--no-landlock --no-namespaces" "--no-landlock")
	local i=0
	for c in "${combos[@]}"; do
		i=$((i + 1))
		rm -rf own-store
		rc=0
		# shellcheck disable=SC2086 # $c is a list of shim options
		PATH=$p "$SHIM" $c -- "$DSB" exec --mode workspace-write --workspace "$PWD/ws" -- \
			touch "$PWD/ws/marker$i" 2>err.txt || rc=$?
		[ "$rc" -eq 125 ] || fail "[$c] exit $rc, expected 125"
		assert_file_has_content err.txt 'sandbox mode "workspace-write" is requested but no sandbox backend is usable on this host; refusing to run the command unconfined.'
		[ ! -e "ws/marker$i" ] || fail "[$c] the command ran"
	done

	# Without a system-call filter neither backend gives what "confined" promises: with bwrap
	# on PATH and Landlock in the kernel, that is still no backend at all.
	rm -rf own-store
	rc=0
	"$SHIM" --no-seccomp -- "$DSB" exec --mode workspace-write --workspace "$PWD/ws" -- \
		touch "$PWD/ws/marker-no-seccomp" 2>err.txt || rc=$?
	[ "$rc" -eq 125 ] || fail "[--no-seccomp] exit $rc, expected 125"
	assert_file_has_content err.txt 'no sandbox backend is usable on this host; refusing to run the command unconfined.'
	[ ! -e ws/marker-no-seccomp ] || fail "[--no-seccomp] the command ran"
	"$SHIM" --no-seccomp -- "$DSB" probe --fresh >probe.txt
	assert_file_has_content probe.txt "^bwrap: unusable: the probe exited with status 1: bwrap: "
	assert_file_has_content probe.txt "^landlock: unusable: landlock-run: cannot install the system-call filter"
	assert_file_has_content probe.txt "selected: none"

	# A cached verdict that went stale can only fail closed: Landlock's in-process failure
	# comes back out of band as SANDBOX_UNAVAILABLE; bwrap refuses to start the command.
	rm -rf own-store
	"$DSB" exec --backend landlock --mode read-only -- true
	"$DSB" exec --backend bwrap --mode read-only -- true
	rc=0
	"$SHIM" --no-landlock -- "$DSB" exec --backend landlock --mode read-only -- \
		touch "$PWD/ws/m3" 2>err.txt || rc=$?
	[ "$rc" -eq 125 ] || fail "stale Landlock verdict: exit $rc"
	assert_file_has_content err.txt "Runner failure: landlock-run: landlock is not enforced by this kernel"
	[ ! -e ws/m3 ] || fail "stale Landlock verdict: the command ran"
	rc=0
	"$SHIM" --no-namespaces -- "$DSB" exec --backend bwrap --mode read-only -- \
		touch "$PWD/ws/m4" 2>err.txt || rc=$?
	[ "$rc" -ne 0 ] || fail "stale bwrap verdict: exit 0"
	assert_file_has_content err.txt "^bwrap: "
	[ ! -e ws/m4 ] || fail "stale bwrap verdict: the command ran"
}

test_older_abi_is_partial_with_notice() {
	setup
	printf 'sandbox-local: { backends: [landlock], landlockAbiMax: 3 }\n' >old.yaml
	run --config old.yaml probe --fresh
	assert_contains "$out" "landlock: usable, partial enforcement"
	assert_contains "$out" "ABI: 3 (the kernel has"
	[[ "$out" != *ioctl_dev* ]] || fail "ABI 3 must not govern ioctl_dev"
	# No scopes below ABI 6: probe says what that leaves open.
	assert_contains "$out" "  not governed: network, abstract-unix-socket, signals, survivors"
	assert_contains "$out" "  scoped: none"
	run --config old.yaml exec --mode workspace-write --workspace "$PWD/ws" -- bash -c 'echo hi'
	assert_rc 0
	assert_streq "$out" "hi"
	assert_streq "$err" "$NOTICE"
	run exec --backend landlock --mode read-only -- bash -c 'echo hi'
	assert_streq "$err" ""
}

test_probe_caches_and_reports() {
	export DSH_SANDBOX_STORE=$PWD/own-store
	run probe
	assert_contains "$out" "selected: bwrap (probed now)"
	run probe
	assert_contains "$out" "selected: bwrap (cached verdict)"
	run probe --json
	assert_contains "$out" '{"selected":"bwrap","cached":true,"backends":[{"name":"bwrap","usable":true,"enforcement":"full","program":"/'
	assert_contains "$out" '{"name":"landlock","usable":null'
	run probe --fresh --json
	assert_contains "$out" '"cached":false'
	# What each backend gives a command here, and what it leaves alone (the truth, per host).
	assert_contains "$out" '"hardening":["capabilities","bounding-set","no-new-privs","seccomp","stdio-only","reaped","pid-namespace","mount-namespace","user-namespace","ipc-namespace","uts-namespace","signal-scope","network-namespace"],"notGoverned":["network","abstract-unix-socket"],"network":{"none":"namespace","allowlist":"namespace"}}'
	assert_contains "$out" '"metadata-supervised","network-namespace"],"notGoverned":["network"],"network":{"none":"namespace","allowlist":"namespace"}}'
	assert_contains "$out" '"scoped":["signal","abstract-unix-socket"]'
	assert_contains "$out" '"seccomp","stdio-only","reaped",'
	assert_contains "$out" '"ipc-namespace","uts-namespace","signal-scope","abstract-unix-scope",'
	run probe --fresh
	assert_contains "$out" "  hardening: capabilities, bounding-set, no-new-privs, seccomp, stdio-only, reaped"
	assert_contains "$out" "abstract-unix-scope, metadata-supervised, network-namespace
  not governed: network
  network none: namespace; allowlist: namespace"
}

test_custom_runner() {
	setup
	# Outside any temp dir and the workspace, or it is not trusted (a command could replace it).
	local runner=$OUT/fake-runner
	cat >"$runner" <<-'RUNNER'
		#!/bin/sh
		printf '%s\n' "$@" > "$(dirname "$0")/runner-argv"
		exit 0
	RUNNER
	chmod +x "$runner"
	printf 'sandbox-local: { runnerCommand: [%s], runnerFailureSignatures: ["fake-runner: "] }\n' \
		"$runner" >runner.yaml
	run --config runner.yaml exec --mode workspace-write --workspace "$PWD/ws" -- echo hi
	assert_rc 0
	assert_streq "$(tr '\n' ' ' <"$OUT/runner-argv")" "--ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent --tmpfs /tmp --bind $PWD/ws $PWD/ws -- echo hi "
	# The same runner inside the workspace is refused: nothing runs.
	cp "$runner" ws/fake-runner
	printf 'sandbox-local: { runnerCommand: [%s] }\n' "$PWD/ws/fake-runner" >ws-runner.yaml
	run --config ws-runner.yaml exec --mode workspace-write --workspace "$PWD/ws" -- touch "$PWD/ws/ran"
	assert_rc 125
	[ ! -e ws/ran ] || fail "an untrusted runner ran"
	run --config runner.yaml probe
	assert_contains "$out" "selected: runner"
}

for b in bwrap landlock; do
	t "$b: read-only denies writes, in its own dialect" test_read_only_denies_writes "$b"
	t "$b: read-only keeps the tree readable and /dev/null writable" test_read_only_tree_readable_dev_null_writable "$b"
	t "$b: workspace-write lands inside, denies beside" test_workspace_write_inside_lands_beside_denied "$b"
	t "$b: /tmp as dsh-compat §4.2 says" test_tmp_per_backend "$b"
	t "$b: nested children are confined" test_nested_children_are_confined "$b"
	t "$b: exit statuses pass through (7, 125, signals)" test_exit_statuses_pass_through "$b"
	t "$b: escape attempts fail (symlink, .., links, renames, /proc magic links, /dev/shm, fifo, socket, truncate)" test_escapes_fail "$b"
	t "$b: a confined command cannot signal outside" test_signals_stay_inside "$b"
done
# Evidence of file refusals (docs/design/evidence.md): probe says where it is in force
# (sandbox-local.evidence: true; off by default), the refusals themselves unchanged.
test_probe_file_evidence() {
	export DSH_SANDBOX_STORE=$PWD/own-store
	printf 'sandbox-local:\n  evidence: true\n' >on.yaml
	run --config on.yaml probe --fresh
	assert_contains "$out" "metadata-supervised, network-namespace, file-evidence"
	run --config on.yaml probe --fresh --json
	assert_contains "$out" '"metadata-supervised","network-namespace","file-evidence"],'
	run probe --fresh --json
	assert_not_contains "$out" "file-evidence"
	mkdir ws
	run exec --backend landlock --mode workspace-write --workspace "$PWD/ws" --workdir "$PWD/ws" -- \
		bash -c 'echo x > /etc/dsb-nope; touch in'
	assert_rc 0
	assert_contains "$err" "/etc/dsb-nope: Permission denied"
	[ -e ws/in ] || fail "the write inside did not land"
	run --config on.yaml exec --backend landlock --mode workspace-write --workspace "$PWD/ws" \
		--workdir "$PWD/ws" -- bash -c 'echo x > /etc/dsb-nope; mkdir -p /etc ws2; touch in2'
	assert_rc 0
	assert_contains "$err" "/etc/dsb-nope: Permission denied"
	[ -e ws/in2 ] || fail "the write inside did not land"
	[ -d ws/ws2 ] || fail "mkdir -p inside did not land"
}

t "danger-full-access runs unconfined" test_danger_full_access_is_not_confined
t "fail-closed matrix: no bwrap, no namespaces, no Landlock, stale cache" test_fail_closed_matrix
t "an older Landlock ABI is partial and prints DSH's notice" test_older_abi_is_partial_with_notice
t "probe reports, caches and refreshes its verdict" test_probe_caches_and_reports
t "probe reports file evidence; sandbox-local.evidence turns it on" test_probe_file_evidence
t "a configured runner wraps the bwrap profile without probing" test_custom_runner
done_testing
