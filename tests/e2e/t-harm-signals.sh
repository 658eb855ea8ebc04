#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No signal leaves the sandbox (issue 28): a confined command's kill(0), its kill of the
# caller's process group and its kill(-1) reach neither the caller, nor the caller's parent, nor
# a sibling of the caller in its group, on every path: `exec`, `bash`, a call of `serve`, a
# background job of `serve`, and `landlock-run`; on both backends, in both confined modes. Each
# attack is first shown to do harm unconfined. Then a degraded Landlock (ABI 5: no signal
# scope) is shown to be reported as such, and `exec` on a terminal (pty-exec.py) gives the
# command the terminal: Ctrl-C reaches it, it reads the terminal, Ctrl-Z and `fg` work, and the
# terminal is the session's again afterwards. Runs as root and as nobody.
#
#   harness (setsid: its own session and group, pgid = its pid)   the caller's parent
#     +- sibling (sh, same group)                                 traps URG
#     +- CALLER (same group): exec, bash, the MCP client + serve, landlock-run, or plain sh
#          +- the confined command: the attack
#   $PWD/r.N/   one run: got (traps that fired), alive (who outlived it), caller.rc
#
# kill(0) and the group kill use SIGKILL, on our own throwaway group. kill(-1) uses SIGURG
# (ignored by default, trapped by the sentinels): should the confinement fail, every process
# of the user would get it, and as root that is the whole machine. Its control therefore runs
# in a PID namespace of its own, never unconfined on the host.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME DSH_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
export DSH_SANDBOX="$DSB"
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=python3
[ ! -x /usr/bin/python3 ] || PYTHON=/usr/bin/python3

for b in bwrap landlock; do
	"$DSB" probe --fresh --json | grep -q "{\"name\":\"$b\",\"usable\":true" ||
		fail "backend $b is not usable here: $("$DSB" probe --fresh)"
done

# The harness: the caller's parent and a sibling in its group, each recording a SIGURG; the
# caller's status; who is alive after. @PGID@ in the caller's argv becomes the group's id.
cat >"$TEST_TMP/harness.sh" <<'EOF'
#!/bin/bash
cd "$1" || exit 1
shift
trap 'echo parent >>got' URG
sh -c 'trap "echo sibling >>got" URG; : >sibling.ready; while :; do sleep 0.05; done' &
sib=$!
# Its trap set before anything is sent: an ignored SIGURG would pass for a refused one.
while [ ! -e sibling.ready ]; do sleep 0.01; done
"${@//@PGID@/$$}" >caller.out 2>caller.err
echo "$?" >caller.rc
sleep 0.3
kill -0 "$sib" 2>/dev/null && echo sibling >>alive
echo parent >>alive
kill "$sib"
EOF
chmod 0755 "$TEST_TMP/harness.sh"

# attack CALLER...: runs the harness with CALLER; its results in $dir/.
attack() {
	dir=$(mktemp -d "$PWD/r.XXXXXX")
	chmod 0777 "$dir"
	setsid -w "$TEST_TMP/harness.sh" "$dir" "$@" >/dev/null 2>&1 || true
}

# The caller, its parent and the sibling all outlived the attack; no trap fired.
assert_survived() {
	local what=$1
	[ -f "$dir/caller.rc" ] || fail "$what: the caller's parent was killed"
	assert_streq "$(tr '\n' ' ' <"$dir/alive")" "sibling parent "
	[ ! -s "$dir/got" ] || fail "$what: a signal reached $(tr '\n' ' ' <"$dir/got")"
}

# The caller and its parent were killed (nobody was left to write their lines).
assert_harmed() {
	if [ -f "$dir/caller.rc" ] || [ -s "$dir/alive" ]; then
		fail "control: $1 did no harm"
	fi
}

assert_rc_of_caller() {
	assert_streq "$(cat "$dir/caller.rc")" "$1"
}

# The three attacks, as a shell's command line.
KILL0='kill -KILL 0'
KILLPG='kill -KILL -@PGID@'
KILLALL='kill -URG -1'

test_controls() {
	attack sh -c "$KILL0"
	assert_harmed "kill 0"
	attack sh -c "$KILLPG"
	assert_harmed "the group kill"
	# Unconfined, exec's command shares the caller's group.
	attack "$DSB" exec --mode danger-full-access -- sh -c "$KILL0"
	assert_harmed "exec's unconfined kill 0"
}

# kill(-1) unconfined, in a throwaway PID namespace (of a user namespace, so that nobody can make
# one too): there it reaches all but the namespace's init, which runs the harness.
test_control_kill_all() {
	local top got
	top=$(mktemp -d /tmp/dsb-harm.XXXXXX) # the test's own directory may be closed to the map
	chmod 0755 "$top"
	cp "$TEST_TMP/harness.sh" "$top/"
	dir="$top/r"
	mkdir "$dir"
	chmod 0777 "$dir"
	# shellcheck disable=SC2016 # the inner shell expands them
	unshare --user --map-root-user --pid --fork \
		sh -c 'setsid -w "$1/harness.sh" "$1/r" sh -c "$2"; true' sh "$top" "$KILLALL" \
		>/dev/null 2>&1 || true
	got=$(sort "$dir/got" 2>/dev/null | tr '\n' ' ')
	rm -rf "$top"
	assert_streq "$got" "parent sibling "
}

# confined_attacks CALLER-FUNCTION BACKEND: the three attacks through CALLER in both modes.
confined_attacks() {
	local caller=$1 b=$2 mode
	for mode in read-only workspace-write; do
		"$caller" "$b" "$mode" "$KILL0"
		assert_survived "$b $mode kill 0"
		[ "$caller" != via_exec ] || assert_rc_of_caller 137 # it killed itself
		"$caller" "$b" "$mode" "$KILLPG"
		assert_survived "$b $mode the group kill"
		[ "$caller" != via_exec ] || assert_rc_of_caller 1 # EPERM, or ESRCH in a PID namespace
		"$caller" "$b" "$mode" "$KILLALL"
		assert_survived "$b $mode kill -1"
	done
}

via_exec() {
	attack "$DSB" exec --backend "$1" --mode "$2" --workspace "$PWD/ws" -- sh -c "$3"
}

via_bash() {
	attack "$DSB" bash --backend "$1" --mode "$2" --workspace "$PWD/ws" "$3"
	assert_rc_of_caller 0
}

via_serve() {
	printf 'sandbox-local: { backends: [%s] }\n' "$1" >"$PWD/$1.yaml"
	attack "$PYTHON" "$HERE/mcp-client.py" signals "$PWD/ws" "$PWD/$1.yaml" "$2" "$3"
	assert_rc_of_caller 0
}

via_job() {
	printf 'sandbox-local: { backends: [%s] }\n' "$1" >"$PWD/$1.yaml"
	attack "$PYTHON" "$HERE/mcp-client.py" signals "$PWD/ws" "$PWD/$1.yaml" "$2" "$3" job
	assert_rc_of_caller 0
}

# landlock-run has no backend: "read-only" runs it in place (no --rw grant but /dev/null),
# "workspace-write" as the command's supervising parent (--rw grants).
via_landlock_run() {
	local grants=(--ro / --rw /dev/null)
	[ "$2" = read-only ] || grants+=(--rw "$PWD/ws" --rw /tmp)
	attack "$DSB" landlock-run "${grants[@]}" -- sh -c "$3"
}

test_path() {
	mkdir -p ws
	chmod 0777 ws
	confined_attacks "$1" "$2"
}

# ABI 5 has no signal scope, and no PID namespace stands in for it under Landlock: the caller's
# group can be signalled. Degraded only by an explicit landlockAbiMax, and reported.
test_degraded_abi_reported() {
	mkdir -p ws
	printf 'sandbox-local: { backends: [landlock], landlockAbiMax: 5 }\n' >abi5.yaml
	run --config "$PWD/abi5.yaml" probe --fresh
	assert_contains "$out" "scoped: none"
	assert_contains "$out" "signals, survivors"
	assert_not_contains "$out" "signal-scope"
	attack "$DSB" --config "$PWD/abi5.yaml" exec --backend landlock --mode read-only \
		--workspace "$PWD/ws" -- sh -c 'kill -URG -@PGID@'
	# Where no cgroup holds the call, the command runs in a PID namespace of its own, where
	# no pid outside names anything (docs/design/limits.md): the scope is not needed there.
	if "$DSB" probe --json | "$PYTHON" -c \
		'import json,sys; sys.exit(json.load(sys.stdin)["limits"]["processes"]["mechanism"].startswith("cgroup"))'; then
		assert_survived "ABI 5 group kill from a PID namespace"
	else
		assert_streq "$(sort "$dir/got" | tr '\n' ' ')" "parent sibling "
	fi
	# The full ABI in the same place: nothing reaches them.
	attack "$DSB" exec --backend landlock --mode read-only --workspace "$PWD/ws" -- \
		sh -c 'kill -URG -@PGID@'
	assert_survived "ABI 6 group kill"
}

# The other ways to send a signal, each at the caller's parent (the harness): tgkill, a pidfd
# of it (pidfd_open works on any visible pid; pidfd_send_signal is then refused) and SIGIO
# through F_SETOWN of a pipe. Python from the host, inside the sandbox.
OTHER_WAYS=$(
	cat <<'EOF'
import ctypes, fcntl, os, signal, sys
target = int(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
SYS_TGKILL = {"x86_64": 234, "aarch64": 131}[os.uname().machine]
F_SETSIG = 10
def attempt(name, fn):
    try:
        fn()
        print(name, "sent")
    except OSError as e:
        print(name, "refused", e.errno)
def tgkill():
    if libc.syscall(SYS_TGKILL, target, target, int(signal.SIGURG)) < 0:
        raise OSError(ctypes.get_errno(), "tgkill")
attempt("tgkill", tgkill)
def pidfd():
    fd = os.pidfd_open(target)
    signal.pidfd_send_signal(fd, signal.SIGURG)
attempt("pidfd", pidfd)
def sigio():
    # SIGURG instead of SIGIO, whose default would end the group: the delivery is the same.
    r, w = os.pipe()
    fcntl.fcntl(r, fcntl.F_SETOWN, -target)
    fcntl.fcntl(r, F_SETSIG, int(signal.SIGURG))
    fcntl.fcntl(r, fcntl.F_SETFL, os.O_ASYNC | os.O_NONBLOCK)
    os.write(w, b"x")
    print("sigio armed")
try:
    sigio()
except OSError as e:
    print("sigio refused", e.errno)
EOF
)

test_other_ways() {
	mkdir -p ws
	chmod 0777 ws
	printf '%s\n' "$OTHER_WAYS" >ws/ways.py
	local b mode
	# The control: unconfined, each one reaches the harness (and SIGIO its whole group).
	attack "$PYTHON" "$PWD/ws/ways.py" @PGID@
	assert_contains "$(cat "$dir/caller.out")" "tgkill sent"
	assert_contains "$(cat "$dir/caller.out")" "pidfd sent"
	assert_contains "$(sort -u "$dir/got" | tr '\n' ' ')" "parent sibling "
	for b in bwrap landlock; do
		for mode in read-only workspace-write; do
			attack "$DSB" exec --backend "$b" --mode "$mode" --workspace "$PWD/ws" -- \
				"$PYTHON" "$PWD/ws/ways.py" @PGID@
			assert_survived "$b $mode tgkill, pidfd, SIGIO"
			assert_contains "$(cat "$dir/caller.out")" "tgkill refused"
			assert_contains "$(cat "$dir/caller.out")" "pidfd refused"
			assert_contains "$(cat "$dir/caller.out")" "sigio"
		done
	done
}

pty() {
	"$PYTHON" "$HERE/pty-exec.py" "$@"
}

# Under bwrap the terminal's Ctrl-C reaches bwrap too, which leads the command's group (it is
# its parent's child, and a process group spans PID namespaces): bwrap dies of it (130) and
# takes the command along (--die-with-parent), its INT trap run or not. As before the command
# had a group of its own.
test_pty_ctrl_c() {
	if [ "$1" = landlock ]; then
		pty ctrl-c "$1" read-only 3 trap
		pty ctrl-c "$1" workspace-write 3 trap
	else
		pty ctrl-c "$1" read-only 130
		pty ctrl-c "$1" workspace-write 130
	fi
}

test_pty_read() {
	pty read "$1" read-only
	pty read "$1" workspace-write
}

test_pty_ctrl_z() {
	pty ctrl-z "$1" workspace-write
}

t "unconfined, each attack kills the caller, its parent and its sibling" test_controls
t "unconfined, kill -1 (in a PID namespace of its own) reaches the caller's parent and sibling" \
	test_control_kill_all
for b in bwrap landlock; do
	t "$b: exec: kill 0, the caller's group, kill -1 reach nobody outside" test_path via_exec "$b"
	t "$b: bash: kill 0, the caller's group, kill -1 reach nobody outside" test_path via_bash "$b"
	t "$b: a served call: kill 0, the caller's group, kill -1 reach nobody outside" \
		test_path via_serve "$b"
	t "$b: a background job: kill 0, the caller's group, kill -1 reach nobody outside" \
		test_path via_job "$b"
done
t "landlock-run, in place and supervising: kill 0, the caller's group, kill -1 reach nobody" \
	test_path via_landlock_run -
t "tgkill, pidfd_send_signal and SIGIO reach nobody outside, on both backends" test_other_ways
t "Landlock ABI 5 (no signal scope): reported by probe, and the group kill reaches" \
	test_degraded_abi_reported
for b in bwrap landlock; do
	t "$b: exec on a terminal: Ctrl-C reaches the command; the terminal is ours again" \
		test_pty_ctrl_c "$b"
	t "$b: exec on a terminal: the command reads the terminal" test_pty_read "$b"
	t "$b: exec on a terminal: Ctrl-Z stops the job, fg continues it" test_pty_ctrl_z "$b"
done
done_testing
