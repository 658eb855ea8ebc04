# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Shared by the t-escape-*.sh suites, which attack the confinement as DESIGN.md's threat model
# describes the attacker: a hostile command with the caller's uid, root or not. Every attack runs
# first as a control, unconfined, and the control must succeed: that proves the attack is real
# here. Where it needs a privilege the caller lacks (nobody cannot mount), the control must fail
# for that reason instead, and the test's name says so. Then the attack runs confined, on both
# backends in both confined modes, and must fail AND leave no effect: the tests check the state
# afterwards, not only an exit status.
#
# Nothing here changes the host. Attacks on mounts, names or the network run, as root, in private
# namespaces made by unshare(1) (see private()): the control, and the confined attempt too, whose
# dsh-sandbox then sees the private namespace as its host, so a sandbox that let the attack
# through changes only that namespace, where the test looks for the effect.
#
#   $PWD/ws/       the workspace of every confined run (under $TMPDIR)
#   $OUT/          a directory outside every grant, writable by the test user (/var/tmp)
#   $OUT/victim    an outside file ("orig") that attacks try to change
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME DSH_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
# The probe runs inside every sandbox, and bwrap's workspace-write mode mounts a fresh /tmp over
# the one where as-user.sh (or a build tree under /tmp) keeps it: a copy in /var/tmp is seen by all.
PROBE_DIR=$(mktemp -d /var/tmp/dsb-probe.XXXXXX)
trap 'rm -rf "$PROBE_DIR"; cleanup' EXIT
chmod 0755 "$PROBE_DIR"
cp "${DSB_PROBE:?DSB_PROBE must name the dsb-probe binary}" "$PROBE_DIR/dsb-probe"
PROBE=$PROBE_DIR/dsb-probe
export DSB PROBE
# The system's python starts in milliseconds; a version manager's shim (pyenv) takes seconds.
PYTHON=python3
[ ! -x /usr/bin/python3 ] || PYTHON=/usr/bin/python3
export PYTHON
BACKENDS=(bwrap landlock)
MODES=(read-only workspace-write)

# Both backends must work on this machine: a suite that skipped them here would prove nothing.
for _b in "${BACKENDS[@]}"; do
	"$DSB" probe --fresh --json | grep -q "{\"name\":\"$_b\",\"usable\":true" ||
		fail "backend $_b is not usable here: $("$DSB" probe --fresh)"
done

is_root() {
	[ "$(id -u)" -eq 0 ]
}

# defer COMMAND ARGS...: run at the exit of the test's subshell, last deferred first.
_deferred=()
defer() {
	_deferred+=("$(printf '%q ' "$@")")
	trap _run_deferred EXIT
}
_run_deferred() {
	local i
	for ((i = ${#_deferred[@]} - 1; i >= 0; i--)); do
		eval "${_deferred[i]}" || true
	done
}

# quietly COMMAND...: for cleanups that may find their object already gone.
quietly() {
	"$@" >/dev/null 2>&1
}

setup() {
	mkdir -p ws
	OUT=$(mktemp -d /var/tmp/dsb-escape.XXXXXX)
	export OUT
	echo orig >"$OUT/victim"
	defer rm -rf "$OUT"
}

# attempt WHERE SCRIPT: runs `bash -c SCRIPT` unconfined (WHERE is "control") or confined (WHERE
# is BACKEND/MODE, the workspace $PWD/ws) through `dsh-sandbox exec`; $out $err $rc as run().
attempt() {
	local where=$1 script=$2
	if [ "$where" = control ]; then
		rc=0
		bash -c "$script" >"$PWD/.out" 2>"$PWD/.err" || rc=$?
		out=$(cat "$PWD/.out")
		err=$(cat "$PWD/.err")
	else
		mkdir -p ws
		run exec --backend "${where%/*}" --mode "${where#*/}" --workspace "$PWD/ws" -- \
			bash -c "$script"
	fi
}

# probe_at WHERE OP ARGS...: dsb-probe OP unconfined or confined; its answer in $out.
probe_at() {
	local where=$1
	shift
	if [ "$where" = control ]; then
		rc=0
		"$PROBE" "$@" >"$PWD/.out" 2>"$PWD/.err" </dev/null || rc=$?
		out=$(cat "$PWD/.out")
		err=$(cat "$PWD/.err")
	else
		mkdir -p ws
		run exec --backend "${where%/*}" --mode "${where#*/}" --workspace "$PWD/ws" -- \
			"$PROBE" "$@" </dev/null
	fi
}

# refused WHAT: the attempt just made must have failed.
refused() {
	[ "$rc" -ne 0 ] || fail "$1 succeeded (stdout: $out) (stderr: $err)"
}

# control_needs_root PATTERN: a privileged control must succeed as root; as another user it
# must fail, with a message matching PATTERN (the kernel's or the tool's refusal).
control_needs_root() {
	if is_root; then
		[ "$rc" -eq 0 ] || fail "the control failed as root: status $rc (stdout: $out) (stderr: $err)"
	else
		[ "$rc" -ne 0 ] || fail "the control succeeded as $(id -un): $out"
		[[ "$err" =~ $1 ]] || fail "the control failed, but not for want of privilege: $err"
	fi
}
export NOT_PERMITTED='Operation not permitted|must be superuser|[Pp]ermission denied'

# private UNSHARE-OPTIONS FUNCTION ARGS...: as root, FUNCTION in new namespaces (e.g. "-u", "-n",
# "-m --propagation private"); every function and $DSB $PROBE $OUT are exported to it. Another
# user cannot change the host's mounts, names or network at all, so FUNCTION runs where it is.
private() {
	local opts=$1
	shift
	if ! is_root; then
		"$@"
		return
	fi
	local fns
	mapfile -t fns < <(compgen -A function)
	export -f "${fns[@]}"
	# shellcheck disable=SC2086 # $opts is a list of unshare options
	unshare $opts -- bash -c 'set -euo pipefail; "$@"' private "$@"
}

# each_confined NAME FUNCTION ARGS...: one test per backend and confined mode, FUNCTION called
# with BACKEND/MODE first; NAME is the rest of the test's name.
each_confined() {
	local name=$1 b m
	shift
	for b in "${BACKENDS[@]}"; do
		for m in "${MODES[@]}"; do
			t "$b/$m: $name" "$@" "$b/$m"
		done
	done
}

# An outside process of the test user for the attacks on other processes; killed by the test.
sleeper() {
	sleep 300 &
	SLEEPER=$!
	defer kill "$SLEEPER"
}
