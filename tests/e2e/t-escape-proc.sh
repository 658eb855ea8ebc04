#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No window into the harness (DESIGN.md "Threat model": it cannot read the harness's memory or
# environment). dsh-sandbox runs with a credential in its own environment (OPENAI_API_KEY, which
# DSH's rule scrubs from the command's); the confined command, on both backends in both confined
# modes, finds it neither in its parent's /proc/PPID/environ nor in any /proc/*/environ, and can
# neither read its parent's memory nor resolve its descriptors. The control: a plain child of a
# process holding the marker reads all of that.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

# Each attack prints LEAKED when it got through; $1 is the marker.
script_environ() {
	printf '%s\n' "tr '\\0' '\\n' </proc/\$PPID/environ | grep -qF '$1' && echo LEAKED"
}
script_scan() {
	printf '%s\n' "for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' <\"\$f\"; done 2>/dev/null |
		grep -qF '$1' && echo LEAKED"
}
# Under bwrap the parent is bwrap's own init (pid 1 of its PID namespace), not the harness, which
# is not visible at all there: nothing to attack (the /proc/*/environ scan covers visibility).
script_mem() {
	echo "[ \$PPID = 1 ] || { [ \"\$('$PROBE' read-mem \$PPID)\" = OK ] && echo LEAKED; }"
}
# Listing the numbers is allowed to the owner; what each one is and reading through it is not.
script_fd() {
	echo "[ \$PPID = 1 ] || { readlink /proc/\$PPID/fd/0 /proc/\$PPID/fd/1 >/dev/null 2>&1 && echo LEAKED; }"
}

# case_parent TOOL SCRIPT-FUNCTION WHERE: the attack from a child of a process whose environment
# holds the marker: unconfined (a plain bash in between, forking), or through dsh-sandbox TOOL.
case_parent() {
	local tool=$1 what=$2 where=$3 marker script
	marker=dsb-marker-$$-$BASHPID
	script=$("$what" "$marker")
	mkdir -p ws
	if [ "$where" = control ]; then
		rc=0
		out=$(OPENAI_API_KEY=$marker bash -c 'bash -c "$1"; true' parent "$script") || rc=$?
		assert_streq "$out" LEAKED
		return
	fi
	if [ "$tool" = exec ]; then
		OPENAI_API_KEY=$marker run exec --backend "${where%/*}" --mode "${where#*/}" \
			--workspace "$PWD/ws" -- bash -c "$script"
	else
		OPENAI_API_KEY=$marker run bash --backend "${where%/*}" --mode "${where#*/}" \
			--workspace "$PWD/ws" "$script"
	fi
	assert_not_contains "$out" LEAKED
	# DSH's rule scrubbed it from the command's own environment, as it should.
	if [ "$tool" = exec ] && [ "$what" = script_environ ]; then
		OPENAI_API_KEY=$marker run exec --backend "${where%/*}" --mode "${where#*/}" \
			--workspace "$PWD/ws" -- env
		assert_rc 0
		assert_not_contains "$out" "$marker"
	fi
}

# control name | confined name | script function | tools
cases=(
	"a plain child finds the marker in its parent's /proc/PPID/environ|/proc/PPID/environ shows no marker|script_environ|exec bash"
	"a plain child finds the marker scanning /proc/*/environ|no /proc/*/environ shows the marker|script_scan|exec bash"
	"a plain child reads its parent's /proc/PPID/mem|/proc/PPID/mem is not readable|script_mem|exec"
	"a plain child resolves its parent's /proc/PPID/fd entries|/proc/PPID/fd entries do not resolve|script_fd|exec"
)
for c in "${cases[@]}"; do
	IFS='|' read -r control_name name fn tools <<<"$c"
	t "control: $control_name" case_parent exec "$fn" control
	for tool in $tools; do
		each_confined "$tool: $name" case_parent "$tool" "$fn"
	done
done
done_testing
