#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of DSH's Landlock launcher contract (dsh-compat §5.6, §11.10), reached as the static
# landlock-run program ($DSB_LANDLOCK_RUN, the one installed), as `dsh-sandbox landlock-run` and
# through a link to dsh-sandbox named landlock-run: usage errors, the probe,
# exit codes passing through, what the kernel really denies (world proofs) and failing closed.
# When the kernel does not enforce Landlock, the world proofs are skipped and the launcher must
# fail closed instead.
# The commands run under the launcher are single-quoted on purpose: they expand their own "$1".
# shellcheck disable=SC2016
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

NOTICE='landlock-run: partial enforcement (older Landlock ABI)'
NOT_ENFORCED='landlock-run: landlock is not enforced by this kernel (ABI unsupported or disabled)'

# The kernel's verdict, once: full, partial or none (the launcher refused).
probe_out=$(cd "$TEST_TMP" && "$DSB" landlock-run --probe 2>/dev/null) || true
case $probe_out in
'landlock: fully enforced') ENFORCEMENT=full ;;
'landlock: partially enforced (older ABI)') ENFORCEMENT=partial ;;
*) ENFORCEMENT=none ;;
esac
# What the launcher says on stderr before running the command.
if [ "$ENFORCEMENT" = partial ]; then
	PRELUDE="$NOTICE"
else
	PRELUDE=""
fi

# lr HOW ARGS...: runs the launcher as the static program (HOW=static), as `dsh-sandbox
# landlock-run` (HOW=sub) or through a link to dsh-sandbox named landlock-run (HOW=link); $out,
# $err and $rc as run() gives them, plus $raw_out, the stdout bytes with a '.' appended so
# trailing newlines count.
lr() {
	local how=$1
	shift
	rc=0
	if [ "$how" = static ]; then
		"$DSB_LANDLOCK_RUN" "$@" >"$PWD/.out" 2>"$PWD/.err" || rc=$?
	elif [ "$how" = link ]; then
		ln -sfn "$DSB" "$PWD/landlock-run"
		"$PWD/landlock-run" "$@" >"$PWD/.out" 2>"$PWD/.err" || rc=$?
	else
		"$DSB" landlock-run "$@" >"$PWD/.out" 2>"$PWD/.err" || rc=$?
	fi
	out=$(cat "$PWD/.out")
	err=$(cat "$PWD/.err")
	raw_out=$(cat "$PWD/.out" && echo .)
}

# The stderr of a command that wrote @1 itself, after the launcher's own prelude.
with_prelude() {
	if [ -n "$PRELUDE" ]; then
		printf '%s\n%s' "$PRELUDE" "$1"
	else
		printf '%s' "$1"
	fi
}

assert_absent() {
	if [ -e "$1" ] || [ -L "$1" ]; then
		fail "$1 exists"
	fi
}

usage_error() {
	local how=$1 msg=$2
	shift 2
	lr "$how" "$@"
	assert_rc 125
	assert_streq "$out" ""
	assert_streq "$err" "landlock-run: usage error: $msg"
}

test_usage_errors() {
	local how=$1
	usage_error "$how" 'missing `-- <argv>...` command'
	usage_error "$how" 'unknown argument: --bogus' --bogus
	usage_error "$how" '--ro requires a path' --ro
	usage_error "$how" '--rw requires a path' --rw
	usage_error "$how" '--rw requires a path' --ro / --rw
	usage_error "$how" '--probe takes no other arguments' --probe x
	usage_error "$how" '--probe takes no other arguments' --ro / --probe
	usage_error "$how" '--probe takes no other arguments' --probe -- true
	usage_error "$how" 'unknown argument: x' x --probe
	usage_error "$how" 'unknown argument: -h' -h
	# --help is ours only alone, as --probe is: a usage error anywhere else.
	usage_error "$how" 'unknown argument: --help' --help -- true
	usage_error "$how" 'unknown argument: --help' --ro / --help
	lr "$how" --help
	assert_rc 0
	assert_contains "$out" "usage: landlock-run [--ro PATH]... [--rw PATH]... -- ARGV..."
	assert_streq "$err" ""
	usage_error "$how" 'missing `-- <argv>...` command' --ro /
	usage_error "$how" 'missing `-- <argv>...` command' --ro / --rw /dev/null --
	# Nothing runs after a usage error.
	usage_error "$how" 'unknown argument: --bogus' --bogus -- touch "$PWD/marker"
	assert_absent "$PWD/marker"
}

test_probe() {
	local how=$1
	lr "$how" --probe
	if [ "$ENFORCEMENT" = none ]; then
		assert_rc 125
		assert_streq "$out" ""
		assert_streq "$err" "$NOT_ENFORCED"
		return
	fi
	assert_rc 0
	assert_streq "$err" ""
	[[ $raw_out =~ ^landlock:\ (fully\ enforced|partially\ enforced\ \(older\ ABI\))$'\n'\.$ ]] ||
		fail "probe printed [$raw_out]"
}

test_exit_codes_pass_through() {
	local how=$1
	lr "$how" --ro / -- bash -c 'exit 7'
	assert_rc 7
	assert_streq "$out" ""
	assert_streq "$err" "$PRELUDE"
	# 125 from the command is the command's: status alone never proves a launcher failure.
	lr "$how" --ro / -- bash -c 'exit 125'
	assert_rc 125
	assert_streq "$err" "$PRELUDE"
	lr "$how" --ro / --rw /dev/null -- bash -c 'echo out; echo err >&2'
	assert_rc 0
	assert_streq "$out" "out"
	assert_streq "$err" "$(with_prelude err)"
}

test_exec_failure() {
	local how=$1
	lr "$how" --ro / -- /no/such/command
	assert_rc 125
	assert_streq "$err" "$(with_prelude 'landlock-run: exec failed: No such file or directory')"
	# PATH lookup, as execvp does (over a PATH of searchable directories: execvp reports
	# EACCES when any PATH entry denied the search).
	PATH=/usr/bin:/bin lr "$how" --ro / -- dsb-no-such-command-anywhere
	assert_rc 125
	assert_streq "$err" "$(with_prelude 'landlock-run: exec failed: No such file or directory')"
	# Grants that hide /proc: the launcher still leaves with the contract's status and line
	# (a sanitized build's leak checker cannot run there and must not decide the status).
	lr "$how" --ro /usr -- /no/such/command
	assert_rc 125
	assert_streq "$err" "$(with_prelude 'landlock-run: exec failed: No such file or directory')"
	lr "$how" --rw /dev/null -- /no/such/command
	assert_rc 125
	assert_streq "$err" "$(with_prelude 'landlock-run: exec failed: No such file or directory')"
}

test_environment_unchanged() {
	local how=$1
	DSB_E2E_MARK='a b=c' lr "$how" --ro / -- bash -c 'printf "%s|%s" "$DSB_E2E_MARK" "$HOME"'
	assert_rc 0
	assert_streq "$out" "a b=c|$HOME"
}

test_write_outside_denied() {
	local how=$1
	mkdir outside
	lr "$how" --ro / --rw /dev/null -- bash -c 'echo x > "$1"' _ "$PWD/outside/f"
	[ "$rc" -ne 0 ] || fail "the write outside the grants succeeded"
	assert_contains "$err" "Permission denied"
	assert_absent "$PWD/outside/f"
	# Reading and running stay allowed under --ro /.
	echo content >outside/r
	lr "$how" --ro / --rw /dev/null -- cat "$PWD/outside/r"
	assert_rc 0
	assert_streq "$out" "content"
}

test_rw_dir_write_lands() {
	local how=$1
	mkdir ws
	lr "$how" --ro / --rw /dev/null --rw "$PWD/ws" -- bash -c 'echo landlock-ok > "$1/f"' _ "$PWD/ws"
	assert_rc 0
	assert_streq "$err" "$PRELUDE"
	assert_file_has_content ws/f '^landlock-ok$'
	# Beside the grant is outside it.
	lr "$how" --ro / --rw /dev/null --rw "$PWD/ws" -- bash -c 'echo x > "$1"' _ "$PWD/beside"
	[ "$rc" -ne 0 ] || fail "the write beside the grant succeeded"
	assert_contains "$err" "Permission denied"
	assert_absent "$PWD/beside"
}

# Landlock has no rights for metadata: the launcher supervises those calls (issue 16). Each
# attack first changes the file unconfined (the control), then is refused under the launcher
# and leaves it as it was, while the same calls beneath a --rw grant land; with no --rw grant
# they are refused everywhere.
test_metadata_governed() {
	local how=$1
	mkdir ws outside
	: >ws/in
	: >outside/victim
	chmod 0644 ws/in outside/victim
	chmod 0600 outside/victim
	assert_streq "$(stat -c %a outside/victim)" 600
	chmod 0644 outside/victim
	local script='chmod 0600 "$1/ws/in" || exit 10
		touch -d 2001-01-01 "$1/ws/in" || exit 11
		chmod 0600 "$1/outside/victim" 2>/dev/null && exit 20
		touch -d 2001-01-01 "$1/outside/victim" 2>/dev/null && exit 21
		[ "$(id -u)" -ne 0 ] || ! chown 12345 "$1/outside/victim" 2>/dev/null || exit 22
		exit 0'
	lr "$how" --ro / --rw /dev/null --rw "$PWD/ws" -- sh -c "$script" _ "$PWD"
	assert_rc 0
	assert_streq "$(stat -c %a ws/in)" 600
	assert_streq "$(stat -c %Y ws/in)" "$(date -d 2001-01-01 +%s)"
	assert_streq "$(stat -c '%a %u' outside/victim)" "644 $(id -u)"
	[ "$(stat -c %Y outside/victim)" != "$(date -d 2001-01-01 +%s)" ] || fail "the time changed"
	# No --rw grant: nowhere to change metadata.
	lr "$how" --ro / --rw /dev/null -- chmod 0640 "$PWD/ws/in"
	assert_rc 1
	assert_contains "$err" "Operation not permitted"
	assert_streq "$(stat -c %a ws/in)" 600
}

# With a supervising parent, the command's end is still the launcher's: its exit code, its
# death by a signal, and a signal sent to the launcher reaches the command.
test_supervised_status_and_signals() {
	local how=$1
	mkdir ws
	lr "$how" --ro / --rw "$PWD/ws" -- bash -c 'exit 7'
	assert_rc 7
	lr "$how" --ro / --rw "$PWD/ws" -- bash -c 'kill -TERM $$'
	assert_rc 143
	lr "$how" --ro / --rw "$PWD/ws" -- bash -c 'kill -KILL $$'
	assert_rc 137
	# Started with SIGCHLD ignored (inherited across exec): the status still comes through,
	# and the command inherits the ignored SIGCHLD as it would without the supervisor.
	local ignore='import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])'
	local launcher=("$DSB_LANDLOCK_RUN")
	[ "$how" = static ] || launcher=("$DSB" landlock-run)
	rc=0
	python3 -c "$ignore" "${launcher[@]}" --ro / --rw "$PWD/ws" -- sh -c 'exit 7' || rc=$?
	assert_rc 7
	out=$(python3 -c "$ignore" "${launcher[@]}" --ro / --rw "$PWD/ws" -- \
		grep ^SigIgn: /proc/self/status)
	# SIGCHLD is signal 17: bit 16 of the mask, in its fifth hex digit from the right.
	local ign=${out##*[[:space:]]}
	(((16#${ign: -5:1} & 1) == 1)) || fail "SIGCHLD not ignored in the command: $out"
	local pid
	case $how in
	static) "$DSB_LANDLOCK_RUN" --ro / --rw "$PWD/ws" -- bash -c \
		'trap "echo got TERM; exit 3" TERM; : >"$1/ready"; sleep 30 & wait' _ "$PWD/ws" \
		>"$PWD/.out" &
		;;
	*) "$DSB" landlock-run --ro / --rw "$PWD/ws" -- bash -c \
		'trap "echo got TERM; exit 3" TERM; : >"$1/ready"; sleep 30 & wait' _ "$PWD/ws" \
		>"$PWD/.out" &
		;;
	esac
	pid=$!
	for _ in $(seq 100); do
		[ ! -e ws/ready ] || break
		sleep 0.05
	done
	[ -e ws/ready ] || fail "the command never started"
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	assert_rc 3
	assert_streq "$(cat "$PWD/.out")" "got TERM"
}

test_nested_child_confined() {
	local how=$1
	mkdir ws outside
	lr "$how" --ro / --rw /dev/null --rw "$PWD/ws" -- bash -c \
		'bash -c "echo nested > \"\$1/in\"; echo x > \"\$2/f\"" _ "$@"' _ "$PWD/ws" "$PWD/outside"
	[ "$rc" -ne 0 ] || fail "the nested child's write outside succeeded"
	assert_contains "$err" "Permission denied"
	assert_file_has_content ws/in '^nested$'
	assert_absent "$PWD/outside/f"
	# A grandchild in its own session, started in the background, is confined as well.
	lr "$how" --ro / --rw /dev/null --rw "$PWD/ws" -- bash -c \
		'setsid bash -c "echo x > \"\$1/g\" 2>/dev/null; echo \$? > \"\$2/g-status\"" _ "$@" & wait' \
		_ "$PWD/outside" "$PWD/ws"
	assert_rc 0
	assert_absent "$PWD/outside/g"
	assert_file_has_content ws/g-status '^1$'
}

test_fail_closed_missing_grant() {
	local how=$1
	lr "$how" --ro /no/such/grant/root --rw /dev/null -- bash -c 'touch "$1"' _ "$PWD/marker"
	assert_rc 125
	assert_streq "$out" ""
	[[ $err == "landlock-run: "* ]] || fail "stderr [$err] does not start with landlock-run: "
	assert_contains "$err" "cannot open rule path"
	assert_streq "$err" 'landlock-run: cannot open rule path: /no/such/grant/root: No such file or directory'
	assert_absent "$PWD/marker"
	lr "$how" --ro / --rw "$PWD/no-such-ws" -- bash -c 'touch "$1"' _ "$PWD/marker"
	assert_rc 125
	assert_streq "$err" "landlock-run: cannot open rule path: $PWD/no-such-ws: No such file or directory"
	assert_absent "$PWD/marker"
}

test_fail_closed_not_enforced() {
	local how=$1
	lr "$how" --ro / --rw /dev/null -- bash -c 'touch "$1"' _ "$PWD/marker"
	assert_rc 125
	assert_streq "$err" "$NOT_ENFORCED"
	assert_absent "$PWD/marker"
}

test_dev_null_writable() {
	local how=$1
	lr "$how" --ro / --rw /dev/null -- bash -c 'echo x > /dev/null && echo dev-ok'
	assert_rc 0
	assert_streq "$out" "dev-ok"
	assert_streq "$err" "$PRELUDE"
}

test_dev_shm_not_writable() {
	local how=$1 f
	[ -d /dev/shm ] || fail "no /dev/shm on this machine"
	f=/dev/shm/dsb-landlock-e2e-$$-$RANDOM
	lr "$how" --ro / --rw /dev/null -- bash -c 'echo x > "$1"' _ "$f"
	local status=$rc
	rm -f "$f"
	[ "$status" -ne 0 ] || fail "the write to $f succeeded"
	assert_contains "$err" "Permission denied"
}

# More grants than the launcher holds without the heap (64 of each kind): the same contract.
test_many_grants() {
	local how=$1 n
	local -a grants=()
	mkdir ws
	for ((n = 0; n < 100; n++)); do
		grants+=(--ro / --rw "$PWD/ws")
	done
	lr "$how" "${grants[@]}" -- bash -c 'echo many > "$1/f" && echo x > "$2"' _ "$PWD/ws" "$PWD/outside"
	[ "$rc" -ne 0 ] || fail "the write outside the grants succeeded"
	assert_file_has_content ws/f '^many$'
	assert_absent "$PWD/outside"
	lr "$how" "${grants[@]}" --ro /no/such/grant -- true
	assert_rc 125
	assert_streq "$err" 'landlock-run: cannot open rule path: /no/such/grant: No such file or directory'
}

# DSH's workspace-write grant, with the host /tmp (dsh-compat §5.6, §11.6 #4 and #5).
test_workspace_write_grant() {
	local how=$1 scratch
	mkdir ws
	scratch=$(mktemp /tmp/dsb-landlock-e2e.XXXXXX)
	lr "$how" --ro / --rw /dev/null --rw /tmp --rw "$PWD/ws" -- bash -c \
		'echo landlock-ok > "$1/f" && echo tmp-ok > "$2" && cat "$1/f" "$2"' _ "$PWD/ws" "$scratch"
	local status=$rc
	rm -f "$scratch"
	rc=$status
	assert_rc 0
	assert_streq "$out" "landlock-ok
tmp-ok"
}

# What the command under the launcher can see of its own privileges: the capability sets, the
# no_new_privs and seccomp states, whether descriptor 7 (held open by the caller, no
# close-on-exec) reached it, its IPC and UTS namespaces, and whether it may make a user namespace.
# shellcheck disable=SC2016
PROBE_SELF='grep -E "^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):" /proc/self/status
[ -e /proc/$$/fd/7 ] && echo "fd 7: inherited" || echo "fd 7: closed"
echo "ipc: $(readlink /proc/self/ns/ipc) uts: $(readlink /proc/self/ns/uts)"
unshare -U true 2>/dev/null && echo "userns: made" || echo "userns: refused"'

# Beyond DSH, the launcher's command gets the hardening of our Landlock backend (the issue's
# attacker is root): no capability in any set, the bounding set included, no_new_privs, the
# system-call filter (no new namespaces), nothing inherited but stdio, its own IPC and UTS
# namespaces. The control, the same probe run plainly, must show the opposite where the caller
# has it to lose.
test_hardened() {
	local how=$1 ns_possible=true
	[ "$(id -u)" -eq 0 ] || unshare -U true 2>/dev/null || ns_possible=false
	exec 7</dev/null
	local plain
	plain=$(sh -c "$PROBE_SELF")
	assert_contains "$plain" "Seccomp:	0"
	assert_contains "$plain" "fd 7: inherited"
	if [ "$(id -u)" -eq 0 ]; then
		assert_not_contains "$plain" "CapEff:	0000000000000000"
		assert_contains "$plain" "userns: made"
	fi

	lr "$how" --ro / --rw /dev/null -- sh -c "$PROBE_SELF"
	exec 7<&-
	assert_rc 0
	local set
	for set in CapInh CapPrm CapEff CapAmb; do
		assert_contains "$out" "$set:	0000000000000000"
	done
	assert_contains "$out" "NoNewPrivs:	1"
	assert_contains "$out" "Seccomp:	2"
	assert_contains "$out" "fd 7: closed"
	assert_contains "$out" "userns: refused"
	if $ns_possible; then
		assert_contains "$out" "CapBnd:	0000000000000000"
		local ns
		ns=$(grep '^ipc: ' <<<"$plain")
		assert_not_contains "$out" "${ns%% uts:*}"
		assert_not_contains "$out" "uts: ${ns##* uts: }"
	fi
}

# The static program carries the contract and the confinement, nothing of the CLI: no JSON, YAML
# or compression library, linked or built in.
test_static_alone() {
	local needed
	needed=$(readelf -d "$DSB_LANDLOCK_RUN" 2>/dev/null | grep NEEDED || true)
	if [[ $needed =~ jansson|yaml|zstd ]]; then
		fail "landlock-run links $needed"
	fi
	if grep -q -a -e json_object -e yaml_parser "$DSB_LANDLOCK_RUN"; then
		fail "landlock-run holds JSON or YAML code"
	fi
}

# The static program is a separate binary; the contract's tests run against it first.
hows="sub link"
if [ -n "${DSB_LANDLOCK_RUN:-}" ]; then
	hows="static $hows"
	t "the static landlock-run holds no JSON or YAML code" test_static_alone
else
	ok_skip "the static landlock-run" "DSB_LANDLOCK_RUN names no static landlock-run (meson test sets it)"
fi
for how in $hows; do
	t "usage errors exit 125 ($how)" test_usage_errors "$how"
	t "--probe reports the kernel's enforcement ($how)" test_probe "$how"
	if [ "$ENFORCEMENT" = none ]; then
		t "fails closed when the kernel does not enforce ($how)" test_fail_closed_not_enforced "$how"
		for name in "exit codes pass through" "exec failure exits 125" "environment unchanged" \
			"write outside the grants denied" "--rw dir write lands" \
			"nested child confined" "missing grant fails closed" "/dev/null writable" \
			"/dev/shm not writable" "workspace-write grant" "many grants" "hardened" \
			"metadata governed" "supervised status and signals"; do
			ok_skip "$name ($how)" "landlock is not enforced by this kernel"
		done
		continue
	fi
	t "exit codes pass through, stderr only the notice ($how)" test_exit_codes_pass_through "$how"
	t "exec failure exits 125 ($how)" test_exec_failure "$how"
	t "environment passes through unchanged ($how)" test_environment_unchanged "$how"
	t "write outside the grants is denied ($how)" test_write_outside_denied "$how"
	t "--rw dir: the write lands, beside it is denied ($how)" test_rw_dir_write_lands "$how"
	t "a nested child is confined too ($how)" test_nested_child_confined "$how"
	t "a missing grant path fails closed, nothing runs ($how)" test_fail_closed_missing_grant "$how"
	t "/dev/null writable with --rw /dev/null ($how)" test_dev_null_writable "$how"
	t "/dev/shm not writable under --ro / --rw /dev/null ($how)" test_dev_shm_not_writable "$how"
	t "workspace-write grant: workspace and /tmp writable ($how)" test_workspace_write_grant "$how"
	t "200 grants work as a few do ($how)" test_many_grants "$how"
	t "the command holds no capability, runs filtered, inherits stdio only, own IPC/UTS ($how)" \
		test_hardened "$how"
	t "metadata: changes beneath --rw land, outside are refused, none without --rw ($how)" \
		test_metadata_governed "$how"
	t "supervised: exit code, death by signal, a signal sent to the launcher ($how)" \
		test_supervised_status_and_signals "$how"
done

done_testing
