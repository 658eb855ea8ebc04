#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The syscall filter (DESIGN.md "Threat model": no capability to gain, no keyring, no input
# injected into a terminal): a confined command gets EPERM from the kernel's wide attack surface
# — keyrings, the new mount API, bpf, perf, userfaultfd, io_uring, module loading, terminal
# injection — on both backends in both confined modes; under Landlock, which has no namespaces
# of its own, also from unshare(CLONE_NEWUSER|...), and ENOSYS from clone3 (so that libc falls
# back to clone, whose flags a filter can read). Each row's control runs the same dsb-probe
# operation unconfined and must reach the kernel: its answer is OK or an errno the kernel gives
# before any privilege check, so a confined EPERM can only be the filter's. Last, terminal
# injection end to end: TIOCSTI through `exec` from a pseudo-terminal never reaches its input.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

# For test names: what a control needing PRIVILEGE shows as a user without it.
needs() {
	is_root || echo " (as $(id -un): refused, no $1)"
}

# label; command (P is dsb-probe); control as root; control as another user[ PRIVILEGE it lacks];
# confined; backends. Answers are anchored regular expressions; a command that prints nothing
# (unshare(1) refused) answers "".
rows=(
	"keyctl;P keyctl;OK;OK;EPERM;both"
	"add_key;P add_key;OK;OK;EPERM;both"
	"request_key;P request_key;ENOKEY;ENOKEY;EPERM;both"
	"fsopen;P fsopen;OK;EPERM CAP_SYS_ADMIN;EPERM;both"
	"fsopen in a new user namespace;unshare -Urm P fsopen;OK;OK;(EPERM)?;both"
	"open_tree;P open_tree;OK;OK;EPERM;both"
	"mount_setattr (bad size: EINVAL);P mount_setattr-bad;EINVAL;EINVAL;EPERM;both"
	"bpf BPF_MAP_CREATE;P bpf-map;OK;EPERM CAP_BPF;EPERM;both"
	"bpf (bad command: EINVAL);P bpf-bad;EINVAL;EINVAL;EPERM;both"
	"perf_event_open;P perf-open;OK;OK;EPERM;both"
	"userfaultfd;P userfaultfd;OK;OK;EPERM;both"
	"io_uring_setup;P io_uring_setup;OK;OK;EPERM;both"
	"init_module (bad arguments);P init_module-bad;EFAULT|EINVAL|ENOEXEC|ENOSYS;EPERM|ENOSYS CAP_SYS_MODULE;EPERM;both"
	"TIOCSTI (on /dev/null: ENOTTY);P tiocsti 0;ENOTTY;ENOTTY;EPERM;both"
	"TIOCLINUX (on /dev/null: ENOTTY);P tioclinux 0;ENOTTY;ENOTTY;EPERM;both"
	"setns into its own UTS namespace;P setns /proc/self/ns/uts;OK;EPERM CAP_SYS_ADMIN;EPERM;both"
	"unshare(CLONE_NEWUSER);P unshare user;OK;OK;EPERM;landlock"
	"unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWNET);P unshare user,mount,net;OK;OK;EPERM;landlock"
	"clone3;P clone3;OK;OK;ENOSYS;landlock"
)

parse_row() {
	local nobody_field
	IFS=';' read -r label command root_control nobody_field confined backends <<<"$1"
	nobody_control=${nobody_field%% *}
	privilege=
	[ "$nobody_field" = "$nobody_control" ] || privilege=${nobody_field#* }
}

# The command line of a row, with the probe's path.
command_of() {
	echo "${1//P /$PROBE }"
}

answers_file() {
	echo "$TEST_TMP/answers.${1//\//.}"
}

# collect_answers WHERE: runs every row's command in one shell (unconfined, or confined through
# `exec`) and keeps "LABEL=ANSWER" lines in answers_file WHERE, which check_row reads.
collect_answers() {
	local where=$1 script="" row
	for row in "${rows[@]}"; do
		parse_row "$row"
		script+="printf '%s=%s\\n' '$label' \"\$($(command_of "$command") </dev/null 2>/dev/null)\"; "
	done
	attempt "$where" "$script"
	assert_rc 0
	printf '%s\n' "$out" >"$(answers_file "$where")"
	[ "$(wc -l <"$(answers_file "$where")")" -eq "${#rows[@]}" ] || fail "not every row answered: $out"
}

check_row() {
	local row=$1 where=$2 want got
	parse_row "$row"
	got=$(answer_of "$label" "$where")
	if [ "$where" = control ]; then
		if is_root; then want=$root_control; else want=$nobody_control; fi
	else
		want=$confined
	fi
	[[ "$got" =~ ^($want)$ ]] || fail "$(command_of "$command"): got [$got], expected /^($want)$/"
}

answer_of() {
	local line
	while IFS= read -r line; do
		if [ "${line%%=*}" = "$1" ]; then
			echo "${line#*=}"
			return
		fi
	done <"$(answers_file "$2")"
	fail "no answer for $1 ($2)"
}

# --- terminal injection through exec, from a pseudo-terminal --------------------------------------

# pty-run COMMAND...: runs COMMAND on a new pseudo-terminal (its controlling terminal, stdin,
# stdout and stderr), drains what it prints and exits with its status.
cat >"$TEST_TMP/pty-run.py" <<'PY'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    if select.select([fd], [], [], 0.5)[0]:
        try:
            if not os.read(fd, 4096):
                break
        except OSError:  # EIO: every slave descriptor is closed
            break
    else:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            sys.exit(os.waitstatus_to_exitcode(status))
else:
    os.kill(pid, 9)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
PY

# The terminal's shell runs the probe (straight, or through `exec`) with the terminal as its
# stdin and controlling terminal, then reads one line from the terminal: an injected line is
# there; otherwise the read times out. The probe's answer and the line land in files.
case_tiocsti_pty() {
	local where=$1 cmd
	if [ "$where" = control ]; then
		cmd=("$PROBE" tiocsti 0)
	else
		cmd=("$DSB" exec --backend "${where%/*}" --mode "${where#*/}" --workspace "$PWD/ws" --
			"$PROBE" tiocsti 0)
	fi
	mkdir -p ws
	# shellcheck disable=SC2016 # the terminal's shell expands them
	"$PYTHON" "$TEST_TMP/pty-run.py" bash -c \
		'"$@" >answer 2>probe.err; IFS= read -r -t 1 line; printf "%s" "$line" >read' \
		pty "${cmd[@]}"
	[ -f read ] || fail "the terminal's shell did not finish"
	if [ "$where" = control ]; then
		assert_streq "$(cat answer)" OK
		assert_streq "$(cat read)" dsb-injected
		return
	fi
	[ "$(cat answer)" != OK ] || fail "TIOCSTI succeeded: $(cat probe.err)"
	assert_streq "$(cat read)" ""
}

# --- the tests ------------------------------------------------------------------------------------

t "control: every probe runs unconfined" collect_answers control
for row in "${rows[@]}"; do
	parse_row "$row"
	note=
	[ -z "$privilege" ] || note=$(needs "$privilege")
	t "control: $label reaches the kernel$note" check_row "$row" control
done
for b in "${BACKENDS[@]}"; do
	for m in "${MODES[@]}"; do
		t "$b/$m: every probe runs confined" collect_answers "$b/$m"
		for row in "${rows[@]}"; do
			parse_row "$row"
			[ "$backends" = both ] || [ "$backends" = "$b" ] || continue
			t "$b/$m: $label is refused ($confined)" check_row "$row" "$b/$m"
		done
	done
done

t "control: TIOCSTI on its controlling terminal injects a line" case_tiocsti_pty control
each_confined "TIOCSTI through exec from a terminal injects nothing" case_tiocsti_pty
done_testing
