#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Attacks with privilege (DESIGN.md "Threat model": it holds no capability and cannot gain one,
# nor reconfigure the hostname or processes outside): a confined command has no capability, no
# way to gain one (no_new_privs) and a syscall filter (Seccomp: 2), on both backends in both
# confined modes. So, even as root, it cannot mount, remount the tree writable, unmount /proc,
# set the domain or host name, configure the network, make a device node, renice, limit or pin
# an outside process of its own uid, set an outside file's immutable or append-only flag, or
# hang up a terminal. Each attack runs first as a control (libescape.sh); the mount, name and
# network attacks run in private namespaces as root, so the host never changes.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

# --- capabilities, no_new_privs, seccomp ----------------------------------------------------------

status_field() {
	awk -v k="$1:" '$1 == k { print $2 }' <<<"$out"
}

case_caps() {
	probe_at "$1" caps
	if [ "$1" = control ]; then
		# The control shows what a confinement must take away: root's capabilities (another
		# user has none left after as-user.sh) and no filter at all.
		! is_root || [ "$(status_field CapEff)" != 0000000000000000 ] ||
			fail "root without capabilities: the control proves nothing ($out)"
		assert_streq "$(status_field Seccomp)" 0
		return
	fi
	local k
	for k in CapInh CapPrm CapEff CapBnd CapAmb; do
		[ "$(status_field "$k")" = 0000000000000000 ] || fail "$k is $(status_field "$k") ($out)"
	done
	assert_streq "$(status_field NoNewPrivs)" 1
	assert_streq "$(status_field Seccomp)" 2
}

# --- mounts (as root in a private mount namespace) ------------------------------------------------

case_mount_tmpfs() {
	mkdir -p "$OUT/mnt"
	attempt "$1" "mount -t tmpfs none '$OUT/mnt' && mountpoint -q '$OUT/mnt' && echo MOUNTED"
	if [ "$1" = control ]; then
		control_needs_root "$NOT_PERMITTED"
		! is_root || assert_streq "$out" MOUNTED
		return
	fi
	refused "mount -t tmpfs"
	assert_not_contains "$out" MOUNTED
	! mountpoint -q "$OUT/mnt" || fail "a tmpfs is mounted on $OUT/mnt"
}

# `remount,bind`: the per-mount flag a read-only bind carries. A plain `remount,rw /` would
# reconfigure the superblock of the host's root filesystem, which a leaky sandbox would let
# through; the bind form is as good an escape and touches nothing but the mount itself.
case_remount_rw() {
	attempt "$1" "mount -o remount,bind,rw / && echo escaped >> '$OUT/victim'"
	if [ "$1" = control ]; then
		control_needs_root "$NOT_PERMITTED"
		! is_root || assert_streq "$(tail -n 1 "$OUT/victim")" escaped
		return
	fi
	refused "mount -o remount,bind,rw / and a write outside"
	assert_streq "$(cat "$OUT/victim")" orig
}

# Lazily (-l) when plain umount fails: a sandbox may have mounted more beneath /proc.
case_umount_proc() {
	attempt "$1" "{ umount /proc 2>/dev/null || umount -l /proc; } &&
		! test -e /proc/self/status && echo UNMOUNTED"
	if [ "$1" = control ]; then
		control_needs_root "$NOT_PERMITTED"
		! is_root || assert_streq "$out" UNMOUNTED
		return
	fi
	refused "umount /proc"
	assert_not_contains "$out" UNMOUNTED
	[ -e /proc/self/status ] || fail "/proc is gone outside"
}

# --- names and network (as root in private UTS and network namespaces) ----------------------------

case_domainname() {
	local before
	before=$(cat /proc/sys/kernel/domainname)
	attempt "$1" "sysctl -w kernel.domainname=dsb-e2e-evil"
	if [ "$1" = control ]; then
		control_needs_root "$NOT_PERMITTED"
		! is_root || assert_streq "$(cat /proc/sys/kernel/domainname)" dsb-e2e-evil
		return
	fi
	refused "sysctl -w kernel.domainname"
	assert_streq "$(cat /proc/sys/kernel/domainname)" "$before"
}

case_hostname() {
	local before
	before=$(hostname)
	attempt "$1" "hostname dsb-e2e-evil"
	if [ "$1" = control ]; then
		control_needs_root "$NOT_PERMITTED|you must be root"
		! is_root || assert_streq "$(hostname)" dsb-e2e-evil
		return
	fi
	refused "hostname"
	assert_streq "$(hostname)" "$before"
}

case_ip_addr() {
	attempt "$1" "ip addr add 127.0.0.77/32 dev lo"
	if [ "$1" = control ]; then
		control_needs_root "$NOT_PERMITTED"
		! is_root || assert_contains "$(ip -o addr show dev lo)" 127.0.0.77/32
		return
	fi
	refused "ip addr add"
	assert_not_contains "$(ip -o addr show dev lo)" 127.0.0.77
}

# --- a device node in the writable workspace ------------------------------------------------------

case_mknod() {
	if [ "$1" = control ]; then
		attempt control "mknod '$OUT/null' c 1 3"
		control_needs_root "$NOT_PERMITTED"
		! is_root || [ -c "$OUT/null" ] || fail "no device node after the control"
		return
	fi
	attempt "$1" "mknod '$PWD/ws/null' c 1 3"
	refused "mknod in the workspace"
	[ ! -e ws/null ] || fail "a node exists in the workspace: $(ls -l ws/null)"
}

# --- an outside process of the same uid (no privilege needed: the controls pass as nobody) --------

nice_of() {
	awk '{ print $19 }' "/proc/$1/stat"
}

nofile_of() {
	awk '/^Max open files/ { print $4, $5 }' "/proc/$1/limits"
}

cpus_of() {
	awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$1/status"
}

# case_process WHAT COMMAND READER WHERE: COMMAND (with P for the pid) against an outside
# sleeper changes what READER reads unconfined, and neither works nor changes it confined.
case_process() {
	local what=$1 command=$2 reader=$3 where=$4 before
	sleeper
	before=$("$reader" "$SLEEPER")
	attempt "$where" "${command//P/$SLEEPER}"
	if [ "$where" = control ]; then
		assert_rc 0
		# Allowed on CPU 0 only, a pin to CPU 0 cannot show: the status must do.
		[ "$what:$before" != affinity:0 ] || return 0
		[ "$("$reader" "$SLEEPER")" != "$before" ] || fail "the control left $what at $before"
		return
	fi
	refused "$what of an outside process"
	assert_streq "$("$reader" "$SLEEPER")" "$before"
}

case_renice() {
	case_process nice "renice -n 5 -p P" nice_of "$1"
}

case_prlimit() {
	case_process RLIMIT_NOFILE "prlimit --pid P --nofile=64:64" nofile_of "$1"
}

case_taskset() {
	case_process affinity "taskset -p 1 P" cpus_of "$1"
}

# --- inode flags on an outside file ---------------------------------------------------------------

attrs_of() {
	lsattr "$1" | cut -d' ' -f1
}

case_chattr() {
	local op=$1 where=$2 before
	is_root && defer chattr -i -a "$OUT/victim"
	before=$(attrs_of "$OUT/victim") || fail "$OUT: no inode flags on this filesystem"
	probe_at "$where" "$op" "$OUT/victim"
	if [ "$where" = control ]; then
		if is_root; then
			assert_streq "$out" OK
			[ "$(attrs_of "$OUT/victim")" != "$before" ] || fail "$op did not land"
		else
			assert_streq "$out" EPERM
		fi
		return
	fi
	[ "$out" != OK ] || fail "$op succeeded"
	assert_streq "$(attrs_of "$OUT/victim")" "$before"
}

case_chattr_i() {
	case_chattr chattr-i "$1"
}

case_chattr_a() {
	case_chattr chattr-a "$1"
}

# --- vhangup, from a new session: no controlling terminal a leaky sandbox could hang up -----------

case_vhangup() {
	if [ "$1" = control ]; then
		out=$(setsid -w "$PROBE" vhangup </dev/null)
		if is_root; then assert_streq "$out" OK; else assert_streq "$out" EPERM; fi
		return
	fi
	out=$(setsid -w "$DSB" exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" -- \
		"$PROBE" vhangup </dev/null)
	assert_streq "$out" EPERM
}

# --- the table ------------------------------------------------------------------------------------

# attack | the privilege its control needs | function (called with "control" or BACKEND/MODE) |
# unshare options (the private namespaces it runs in as root)

cases=(
	"mount -t tmpfs over an outside directory|CAP_SYS_ADMIN|case_mount_tmpfs|-m --propagation private"
	"mount -o remount,bind,rw / and a write outside|CAP_SYS_ADMIN|case_remount_rw|-m --propagation private"
	"umount /proc|CAP_SYS_ADMIN|case_umount_proc|-m --propagation private"
	"sysctl -w kernel.domainname|CAP_SYS_ADMIN|case_domainname|-u"
	"hostname|CAP_SYS_ADMIN|case_hostname|-u"
	"ip addr add 127.0.0.77/32 dev lo|CAP_NET_ADMIN|case_ip_addr|-n"
	"mknod c 1 3|CAP_MKNOD|case_mknod|"
	"renice -n 5 an outside sleep of the same uid||case_renice|"
	"prlimit --nofile=64:64 an outside sleep of the same uid||case_prlimit|"
	"taskset -p 1 an outside sleep of the same uid||case_taskset|"
	"chattr +i an outside file|CAP_LINUX_IMMUTABLE|case_chattr_i|"
	"chattr +a an outside file|CAP_LINUX_IMMUTABLE|case_chattr_a|"
	"vhangup|CAP_SYS_TTY_CONFIG|case_vhangup|"
)

# run_case UNSHARE-OPTIONS FUNCTION WHERE: the outside directory, then FUNCTION, in private
# namespaces when UNSHARE-OPTIONS is not empty (the directory is made and removed outside them).
run_case() {
	setup
	if [ -n "$1" ]; then
		private "$1" "$2" "$3"
	else
		"$2" "$3"
	fi
}

# How a control needing PRIVILEGE ends for the user running the tests.
verdict() {
	if [ -z "$1" ] || is_root; then
		echo works
	else
		echo "is refused ($(id -un) lacks $1)"
	fi
}

if is_root; then
	t "control: unconfined, root holds capabilities; no seccomp filter" run_case "" case_caps control
else
	t "control: unconfined, no seccomp filter (as-user.sh dropped every capability)" \
		run_case "" case_caps control
fi
each_confined "no capability, no_new_privs, Seccomp: 2" run_case "" case_caps
for c in "${cases[@]}"; do
	IFS='|' read -r name privilege fn opts <<<"$c"
	t "control: unconfined, $name $(verdict "$privilege")" run_case "$opts" "$fn" control
	each_confined "$name fails, no effect" run_case "$opts" "$fn"
done
done_testing
