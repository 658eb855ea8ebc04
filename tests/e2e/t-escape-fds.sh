#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Nothing inherited but stdio (DESIGN.md "Threat model"): descriptors the caller left open
# without close-on-exec — here fd 7 read-write on an outside file and fd 8 on an outside
# directory — never reach a confined command, through `exec` or `bash`, on both backends in both
# confined modes: it cannot write through them, and dsb-probe list-fds sees only 0 1 2. The
# control shows both descriptors reach a plain child, which writes through fd 7.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

# with_fds COMMAND...: COMMAND with fd 7 open read-write on $OUT/victim and fd 8 on $OUT.
with_fds() {
	"$@" 7<>"$OUT/victim" 8<"$OUT"
}

# through TOOL WHERE SCRIPT: `bash -c SCRIPT` unconfined (WHERE control), or confined through
# TOOL (exec, or the bash tool), with the two descriptors open; $out $err $rc as run().
through() {
	local tool=$1 where=$2 script=$3
	mkdir -p ws
	if [ "$where" = control ]; then
		with_fds attempt control "$script"
	elif [ "$tool" = exec ]; then
		with_fds attempt "$where" "$script"
	else
		with_fds run bash --backend "${where%/*}" --mode "${where#*/}" --workspace "$PWD/ws" \
			"$script"
	fi
}

case_write_through_fd() {
	local tool=$1 where=$2
	setup
	through "$tool" "$where" "echo escaped >&7 && echo WROTE"
	if [ "$where" = control ]; then
		assert_rc 0
		assert_streq "$(tail -n 1 "$OUT/victim")" escaped
		return
	fi
	assert_not_contains "$out" WROTE
	assert_streq "$(cat "$OUT/victim")" orig
}

case_write_through_dir_fd() {
	local tool=$1 where=$2
	setup
	through "$tool" "$where" "echo planted > /proc/self/fd/8/planted && echo WROTE"
	if [ "$where" = control ]; then
		assert_rc 0
		[ -e "$OUT/planted" ] || fail "the control planted nothing"
		return
	fi
	assert_not_contains "$out" WROTE
	[ ! -e "$OUT/planted" ] || fail "a file was planted through fd 8"
}

# The probe lists its own descriptors, leaving out the directory it reads them through.
case_list_fds() {
	local tool=$1 where=$2
	setup
	through "$tool" "$where" "exec '$PROBE' list-fds"
	if [ "$where" = control ]; then
		assert_rc 0
		[[ " $out " == *" 7 8 "* ]] || fail "fds 7 and 8 did not reach the control: [$out]"
		return
	fi
	if [ "$tool" = exec ]; then
		assert_rc 0
		assert_streq "$out" "0 1 2"
	else
		# The bash tool renders the command's output: the line is its first.
		assert_rc 0
		assert_streq "$(head -n 1 <<<"$out")" "0 1 2"
	fi
}

# control name | confined name | function
cases=(
	"a plain child writes through inherited fd 7|a write through inherited fd 7 fails, the outside file unchanged|case_write_through_fd"
	"a plain child plants a file through inherited fd 8|a write through inherited fd 8 (a directory) plants nothing|case_write_through_dir_fd"
	"fds 7 and 8 reach a plain child|only 0 1 2 are open|case_list_fds"
)
for c in "${cases[@]}"; do
	IFS='|' read -r control_name name fn <<<"$c"
	t "control: $control_name" "$fn" exec control
	for tool in exec bash; do
		each_confined "$tool: $name" "$fn" "$tool"
	done
done
done_testing
