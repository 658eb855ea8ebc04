#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Attacks on metadata (issue 16): Landlock has no rights for permissions, owners, times or
# extended attributes, so without the supervisor a confined command changes them on any file its
# uid owns, root on every file. Each attack runs first as a control (it must work unconfined),
# then on both backends in both confined modes, where it must fail and change nothing. Inside the
# workspace the same calls must land in workspace-write (the workflows of an ordinary tool chain:
# chmod +x, touch, cp -p, tar x) and fail in read-only, with the same answer on both backends.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

mode_of() {
	stat -c %a "$1"
}

mtime_of() {
	stat -c %Y "$1"
}

# --- outside every grant: refused, nothing changed ----------------------------------------------

case_chmod_outside() {
	chmod 0644 "$OUT/victim"
	attempt "$1" "chmod 0600 '$OUT/victim'"
	if [ "$1" = control ]; then
		assert_rc 0
		assert_streq "$(mode_of "$OUT/victim")" 600
		return
	fi
	refused "chmod of an outside file"
	assert_streq "$(mode_of "$OUT/victim")" 644
}

case_touch_outside() {
	attempt "$1" "touch -d 2001-01-01 '$OUT/victim'"
	if [ "$1" = control ]; then
		assert_rc 0
		assert_streq "$(mtime_of "$OUT/victim")" "$(date -d 2001-01-01 +%s)"
		return
	fi
	refused "touch -d of an outside file"
	[ "$(mtime_of "$OUT/victim")" != "$(date -d 2001-01-01 +%s)" ] || fail "the time changed"
}

case_xattr_outside() {
	attempt "$1" "$PYTHON -c 'import os, sys; os.setxattr(sys.argv[1], \"user.dsb\", b\"x\")' '$OUT/victim'"
	if [ "$1" = control ]; then
		assert_rc 0
		getfattr -n user.dsb "$OUT/victim" >/dev/null 2>&1 ||
			$PYTHON -c 'import os, sys; os.getxattr(sys.argv[1], "user.dsb")' "$OUT/victim" ||
			fail "the control set no attribute"
		return
	fi
	refused "setxattr of an outside file"
	if $PYTHON -c 'import os, sys; os.getxattr(sys.argv[1], "user.dsb")' "$OUT/victim" 2>/dev/null; then
		fail "the attribute was set"
	fi
}

# As root: give an outside file away (another user may not, and the control says so).
case_chown_outside() {
	attempt "$1" "chown 12345 '$OUT/victim'"
	if [ "$1" = control ]; then
		control_needs_root "$NOT_PERMITTED"
		! is_root || assert_streq "$(stat -c %u "$OUT/victim")" 12345
		return
	fi
	refused "chown of an outside file"
	assert_streq "$(stat -c %u "$OUT/victim")" "$(id -u)"
}

# As root: the host's /tmp is every user's (its sticky bit guards their files from one
# another). The attack sets the mode /tmp already has, so that the control changes nothing of
# the host. In workspace-write the command's /tmp is one of its own on both backends
# (docs/design/paths.md): the call lands there; in read-only it is refused. The host's is
# untouched either way.
case_tmp_itself() {
	local mode
	mode=$(stat -c %a /tmp)
	attempt "$1" "chmod $mode /tmp && touch -c /tmp"
	if [ "$1" = control ]; then
		control_needs_root "$NOT_PERMITTED"
		return
	fi
	if [ "${1#*/}" = workspace-write ]; then
		assert_rc 0
	else
		refused "chmod of the host's /tmp"
	fi
	assert_streq "$(stat -c %a /tmp)" "$mode"
}

# As root: the supervisor performs calls on the caller's behalf, never with its own
# capabilities. trusted.* needs CAP_SYS_ADMIN and security.capability (file capabilities, which
# an unconfined run of the file would gain) CAP_SETFCAP: the control sets them as root; from
# inside, on a file of the workspace, they are refused on both backends.
case_privileged_xattr() {
	mkdir -p ws
	: >ws/tool
	local set="import os, sys
os.setxattr(sys.argv[1], 'trusted.dsb', b'x')
os.setxattr(sys.argv[1], 'security.capability', bytes([1, 0, 0, 2]) + bytes(16))"
	attempt "$1" "$PYTHON -c \"$set\" '$PWD/ws/tool'"
	if [ "$1" = control ]; then
		control_needs_root "$NOT_PERMITTED"
		rm -f ws/tool
		: >ws/tool
		return
	fi
	refused "a privileged extended attribute set from inside"
	if $PYTHON -c 'import os, sys; os.getxattr(sys.argv[1], "security.capability")' \
		"$PWD/ws/tool" 2>/dev/null; then
		fail "the file capability was set"
	fi
}

# A symlink in the workspace that leads outside is no way out.
case_chmod_through_link() {
	chmod 0644 "$OUT/victim"
	mkdir -p ws
	ln -sfn "$OUT/victim" ws/link
	attempt "$1" "chmod 0600 ws/link"
	if [ "$1" = control ]; then
		assert_rc 0
		assert_streq "$(mode_of "$OUT/victim")" 600
		return
	fi
	refused "chmod through a symlink out of the workspace"
	assert_streq "$(mode_of "$OUT/victim")" 644
}

# .git's hooks and config are protected inside the workspace (read-only binds): their metadata
# too. Only the workspace-write runs reach them writable at all.
case_protected_git() {
	local where=$1
	setup
	git init -q ws
	chmod 0644 ws/.git/config
	attempt "$where" "chmod 0666 '$PWD/ws/.git/config'; chmod 0777 '$PWD/ws/.git/hooks'"
	refused "chmod of .git/config and .git/hooks"
	assert_streq "$(mode_of ws/.git/config)" 644
	[ "$(mode_of ws/.git/hooks)" != 777 ] || fail ".git/hooks became 777"
}

# The race of issue 16: one thread swaps ws/d between a real directory and a symlink to the
# outside while another chmods ws/d/victim, thousands of times. The supervisor resolves each call
# once and acts on what it opened, so no swap can make it act on the outside file. The control
# (unconfined) reaches the outside file through the symlink.
RACE='
import os, sys, threading
sys.setswitchinterval(1e-6)
os.chdir(sys.argv[1])
rounds = int(sys.argv[2])
done = False
def swap():
    while not done:
        for a, b in (("real", "d"), ("d", "real"), ("link", "d"), ("d", "link")):
            try:
                os.rename(a, b)
            except OSError:
                pass
t = threading.Thread(target=swap)
t.start()
for i in range(rounds):
    try:
        os.chmod("d/victim", 0o600 if i % 2 else 0o640)
    except OSError:
        pass
done = True
t.join()
'

case_race() {
	chmod 0644 "$OUT/victim"
	mkdir -p ws/real
	: >ws/real/victim
	ln -sfn "$OUT" ws/link
	if [ "$1" = control ]; then
		# The swapping thread may get no processor time while the chmods run on a loaded
		# machine: the control tries a few times before it says the race is not real here.
		local try
		for try in 1 2 3 4 5; do
			attempt control "$PYTHON -c '$RACE' '$PWD/ws' 20000"
			assert_rc 0
			[ "$(mode_of "$OUT/victim")" = 644 ] || return 0
		done
		fail "the control never reached the outside file in $try tries"
	fi
	attempt "$1" "$PYTHON -c '$RACE' '$PWD/ws' 20000"
	assert_rc 0
	assert_streq "$(mode_of "$OUT/victim")" 644
}

# The model is told as bwrap's read-only mounts tell it: DSH's denial marker, on both backends.
case_model_told() {
	local where=$1
	setup
	run bash --backend "${where%/*}" --mode "${where#*/}" --workspace "$PWD/ws" \
		"chmod 0600 '$OUT/victim'"
	assert_rc 0
	assert_contains "$out" "[sandbox: file access denied under ${where#*/} mode]"
	assert_contains "$out" "[exit code: 1]"
}

# Where no listener can be had (a container runtime's filter holds one: the shim's --listener),
# the calls are refused everywhere rather than allowed everywhere, and probe says so.
case_fallback_refuses() {
	setup
	chmod 0644 "$OUT/victim"
	: >ws/in
	chmod 0644 ws/in
	local shim=${DSB_SECCOMP_SHIM:?}
	"$shim" --listener -- "$DSB" probe --fresh >probe.txt
	grep -q '^  hardening: .*metadata-refused' probe.txt || fail "probe: $(cat probe.txt)"
	rc=0
	"$shim" --listener -- "$DSB" exec --backend landlock --mode workspace-write \
		--workspace "$PWD/ws" -- sh -c "chmod 0600 '$PWD/ws/in'; chmod 0600 '$OUT/victim'" \
		2>err.txt || rc=$?
	assert_rc 1
	assert_streq "$(mode_of ws/in)" 644
	assert_streq "$(mode_of "$OUT/victim")" 644
	# landlock-run likewise, its status still the command's.
	rc=0
	"$shim" --listener -- "${DSB_LANDLOCK_RUN:?}" --ro / --rw "$PWD/ws" -- \
		sh -c "chmod 0600 '$PWD/ws/in' || exit 4" 2>err.txt || rc=$?
	assert_rc 4
	assert_streq "$(mode_of ws/in)" 644
	# Without the shim the same call lands inside: the fallback is what refused it.
	run exec --backend landlock --mode workspace-write --workspace "$PWD/ws" -- chmod 0600 "$PWD/ws/in"
	assert_rc 0
	assert_streq "$(mode_of ws/in)" 600
}

attack() {
	local fn=$1 where=$2
	setup
	"$fn" control
	# The control changed the victim: a fresh one for the attack.
	rm -f "$OUT/victim"
	echo orig >"$OUT/victim"
	"$fn" "$where"
}

# --- inside the workspace: lands in workspace-write, refused in read-only ------------------------

case_workflows_inside() {
	local where=$1
	setup
	mkdir -p ws/src
	printf '#!/bin/sh\necho ran\n' >ws/run.sh
	echo data >ws/src/file
	chmod 0640 ws/src/file
	touch -d 2002-02-02 ws/src/file
	tar -C ws -cf "$OUT/tree.tar" src
	attempt "$where" "cd '$PWD/ws' && chmod +x run.sh && ./run.sh &&
		touch -d 2003-03-03 run.sh && cp -p src/file copy && mkdir x && tar -C x -xpf '$OUT/tree.tar'"
	if [ "${where#*/}" = read-only ]; then
		refused "chmod +x in a read-only workspace"
		[ ! -x ws/run.sh ] || fail "run.sh became executable"
		return
	fi
	assert_rc 0
	assert_streq "$out" ran
	assert_streq "$(mtime_of ws/run.sh)" "$(date -d 2003-03-03 +%s)"
	assert_streq "$(mode_of ws/copy)" 640
	assert_streq "$(mtime_of ws/copy)" "$(date -d 2002-02-02 +%s)"
	assert_streq "$(mode_of ws/x/src/file)" 640
	assert_streq "$(mtime_of ws/x/src/file)" "$(date -d 2002-02-02 +%s)"
}

t "$(if is_root; then echo root; else id -un; fi): the controls change what the attacks aim at" true
for spec in \
	"chmod an outside file|case_chmod_outside" \
	"touch -d an outside file|case_touch_outside" \
	"set an extended attribute on an outside file|case_xattr_outside" \
	"chown an outside file (root)|case_chown_outside" \
	"chmod the host's /tmp itself (root)|case_tmp_itself" \
	"set trusted.* and security.capability in the workspace (root)|case_privileged_xattr" \
	"chmod through a symlink out of the workspace|case_chmod_through_link" \
	"20000 chmods racing a directory swapped with a symlink out|case_race"; do
	each_confined "${spec%%|*}" attack "${spec#*|}"
done
each_confined "chmod +x, touch -d, cp -p, tar x inside the workspace" case_workflows_inside
each_confined "chmod of the protected .git/config and .git/hooks" case_protected_git
each_confined "a refused chmod outside is told to the model as a denial" case_model_told
t "landlock and landlock-run, no listener to be had: metadata refused everywhere, probe says so" \
	case_fallback_refuses

done_testing
