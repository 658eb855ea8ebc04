#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Host IPC stays out of reach (DESIGN.md "Threat model": it cannot touch host IPC objects): System
# V shared memory, message queues and semaphore sets made outside with ipcmk(1), and a POSIX
# message queue made outside, are neither visible (ipcs, mq_open) nor removable (ipcrm,
# mq_unlink) from a confined command, on both backends in both confined modes, and all still
# exist afterwards. The controls see and remove them unconfined. Under Landlock, an abstract
# unix socket listening outside cannot be connected to either (Landlock's scoping); bwrap shares
# the host's network namespace, where abstract sockets live, so that case is Landlock's only.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

# --- System V objects -----------------------------------------------------------------------------

# sysv_object KIND: makes one with ipcmk (KIND m: shared memory, q: message queue, s: semaphore
# set), removed at the end of the test; its id in $ID.
sysv_object() {
	local made
	case $1 in
	m) made=$(ipcmk -M 4096) ;;
	q) made=$(ipcmk -Q) ;;
	s) made=$(ipcmk -S 1) ;;
	esac
	ID=${made##*: }
	[[ "$ID" =~ ^[0-9]+$ ]] || fail "ipcmk said: $made"
	defer quietly ipcrm "-$1" "$ID"
}

# A script that lists the object, looks it up by id (ipcs -i exits 0 either way: its text says)
# and removes it, printing what worked.
sysv_script() {
	local kind=$1 id=$2
	cat <<-SCRIPT
		ipcs -$kind | awk '{ print \$2 }' | grep -qx $id && echo LISTED
		ipcs -$kind -i $id 2>/dev/null | grep -q 'id=$id\$' && echo FOUND
		ipcrm -$kind $id 2>/dev/null && echo REMOVED
		true
	SCRIPT
}

case_sysv() {
	local kind=$1 where=$2
	sysv_object "$kind"
	attempt "$where" "$(sysv_script "$kind" "$ID")"
	assert_rc 0
	if [ "$where" = control ]; then
		assert_streq "$(echo "$out" | tr '\n' ' ')" "LISTED FOUND REMOVED "
		assert_streq "$(bash -c "$(sysv_script "$kind" "$ID")")" ""
		return
	fi
	assert_streq "$out" ""
	assert_streq "$(bash -c "$(sysv_script "$kind" "$ID")" | tr '\n' ' ')" "LISTED FOUND REMOVED "
}

# --- a POSIX message queue ------------------------------------------------------------------------

case_mqueue() {
	local where=$1 name
	name=/dsb-e2e-$$-$BASHPID
	[ "$("$PROBE" mq-open "$name" create)" = OK ] || fail "cannot make the queue $name"
	defer quietly "$PROBE" mq-unlink "$name"
	attempt "$where" "echo open=\$('$PROBE' mq-open $name) unlink=\$('$PROBE' mq-unlink $name)"
	assert_rc 0
	if [ "$where" = control ]; then
		assert_streq "$out" "open=OK unlink=OK"
		assert_streq "$("$PROBE" mq-open "$name")" ENOENT
		return
	fi
	[[ "$out" =~ ^open=E[A-Z]+\ unlink=E[A-Z]+$ ]] || fail "the queue was reached: $out"
	assert_streq "$("$PROBE" mq-open "$name")" OK
}

# --- an abstract unix socket (Landlock) -----------------------------------------------------------

case_abstract_socket() {
	local where=$1 name i
	name=dsb-e2e-$$-$BASHPID
	"$PYTHON" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + sys.argv[1])
s.listen(16)
open(sys.argv[2], "w").close()
while True:
    s.accept()[0].close()
' "$name" "$PWD/listening" &
	defer kill "$!"
	for i in $(seq 100); do
		[ ! -e listening ] || break
		sleep 0.05
	done
	[ -e listening ] || fail "the listener did not start in $i tries"
	probe_at "$where" connect-abstract "$name"
	if [ "$where" = control ]; then
		assert_streq "$out" OK
		return
	fi
	[[ "$out" =~ ^E[A-Z]+$ ]] || fail "connected to @$name: [$out] $err"
}

# --- the tests ------------------------------------------------------------------------------------

sysv_shm() { case_sysv m "$1"; }
sysv_msg() { case_sysv q "$1"; }
sysv_sem() { case_sysv s "$1"; }

# control name | confined name | function
cases=(
	"ipcmk -M shared memory is listed, found and removed|ipcmk -M shared memory is not listed, found or removed|sysv_shm"
	"ipcmk -Q message queue is listed, found and removed|ipcmk -Q message queue is not listed, found or removed|sysv_msg"
	"ipcmk -S semaphore set is listed, found and removed|ipcmk -S semaphore set is not listed, found or removed|sysv_sem"
	"a POSIX message queue opens and unlinks|a POSIX message queue neither opens nor unlinks|case_mqueue"
)
for c in "${cases[@]}"; do
	IFS='|' read -r control_name name fn <<<"$c"
	t "control: $control_name" "$fn" control
	each_confined "$name, and still exists" "$fn"
done

t "control: an abstract unix socket listening outside accepts" case_abstract_socket control
for m in "${MODES[@]}"; do
	t "landlock/$m: an abstract unix socket listening outside refuses" \
		case_abstract_socket "landlock/$m"
done
done_testing
