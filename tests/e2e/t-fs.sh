#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of `dsh-sandbox fs` (DSH's write and edit tools, dsh-compat §7): result texts,
# the fence per mode with the model-facing denial, escapes through symlinks, `..` and /proc,
# escalation approved before the path is resolved, failing closed without openat2, and (beyond
# DSH) the protected paths: no write into a checkout's hooks, no read of denyRead.
#
#   $PWD/ws/          the workspace
#   $OUT/             outside every writable root (/var/tmp), writable by the test user
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME DSH_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
SHIM=${DSB_SECCOMP_SHIM:?}
HINT='[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]'

setup() {
	mkdir ws
	WS=$(cd ws && pwd -P)
	OUT=$(mktemp -d /var/tmp/dsb-fs.XXXXXX)
	echo orig >"$OUT/victim"
	trap 'rm -rf "$OUT"' EXIT
}

fsw() {
	local mode=$1 path=$2 content=$3
	rc=0
	printf '%s' "$content" | "$DSB" fs write --mode "$mode" --workspace "$WS" "$path" \
		>"$PWD/.out" 2>"$PWD/.err" || rc=$?
	out=$(cat "$PWD/.out")
	err=$(cat "$PWD/.err")
}

test_write_texts() {
	setup
	fsw workspace-write new.txt "hello"
	assert_rc 0
	assert_streq "$out" "<path>$WS/new.txt</path>
<type>file</type>
<content>
Created file
</content>"
	assert_streq "$(cat ws/new.txt)" "hello"
	fsw workspace-write "$WS/new.txt" "again"
	assert_streq "$out" "<path>$WS/new.txt</path>
<type>file</type>
<content>
Updated file
</content>"
	fsw workspace-write deep/er/file.txt "made parents"
	assert_rc 0
	assert_streq "$(cat ws/deep/er/file.txt)" "made parents"
}

test_read_only_denies_with_marker() {
	setup
	fsw read-only new.txt "x"
	assert_rc 4
	assert_streq "$out" "Error: [sandbox: file access denied under read-only mode]
$HINT"
	[ ! -e ws/new.txt ] || fail "a denied write left a file"
	rc=0
	"$DSB" fs write --mode read-only --workspace "$WS" --json new.txt </dev/null >o.json || rc=$?
	assert_file_has_content o.json '{"error":{"name":"FsError","code":"FS_SANDBOX_DENIED","message":"\[sandbox: file access denied under read-only mode\]\\n'
}

test_escapes_are_denied() {
	setup
	ln -s "$OUT" ws/outlink
	ln -s "$OUT/victim" ws/final-link
	local attempts=(
		"$OUT/direct"
		"outlink/via-ancestor-link"
		"final-link"
		"../$(basename "$PWD")/../../../../../../../${OUT#/}/via-dotdot"
		"/proc/self/root$OUT/via-proc"
	)
	for p in "${attempts[@]}"; do
		fsw workspace-write "$p" "escaped"
		[ "$rc" -eq 4 ] || fail "[$p] exit $rc: $out"
		assert_contains "$out" "[sandbox: file access denied under workspace-write mode]"
	done
	assert_streq "$(cat "$OUT/victim")" "orig"
	assert_streq "$(ls "$OUT")" "victim"
}

test_hard_link_never_changes_the_outside_inode() {
	setup
	ln "$OUT/victim" ws/hard 2>/dev/null || {
		# Across file systems (tmpfs /tmp vs /var/tmp) a hard link cannot exist at all.
		echo "# hard links impossible here: $OUT and $WS are on different file systems"
		return 0
	}
	fsw workspace-write hard "replaced"
	assert_rc 0
	assert_streq "$(cat ws/hard)" "replaced"
	assert_streq "$(cat "$OUT/victim")" "orig"
}

test_edit_texts() {
	setup
	printf 'one two two three\n' >ws/e.txt
	run fs edit --mode workspace-write --workspace "$WS" e.txt --old one --new ONE
	assert_rc 0
	assert_streq "$out" "The file $WS/e.txt has been updated successfully."
	run fs edit --mode workspace-write --workspace "$WS" e.txt --old two --new TWO --all
	assert_streq "$out" "The file $WS/e.txt has been updated. All occurrences were successfully replaced."
	assert_streq "$(cat ws/e.txt)" "ONE TWO TWO three"
	run fs edit --mode workspace-write --workspace "$WS" --json e.txt --old nope --new x
	assert_contains "$out" '"code":"FS_EDIT_NOT_FOUND"'
	printf 'a a\n' >ws/amb.txt
	run fs edit --mode workspace-write --workspace "$WS" --json amb.txt --old a --new b
	assert_contains "$out" '"code":"FS_AMBIGUOUS_EDIT"'
	assert_streq "$(cat ws/amb.txt)" "a a"
	run fs edit --mode workspace-write --workspace "$WS" e.txt --old same --new same
	assert_streq "$out" "Error: old_string and new_string must differ"
	run fs edit --mode read-only --workspace "$WS" e.txt --old ONE --new one
	assert_rc 4
	assert_streq "$(cat ws/e.txt)" "ONE TWO TWO three"
}

test_root_itself_is_not_a_regular_file() {
	setup
	fsw workspace-write "$WS" "x"
	[ "$rc" -ne 0 ] || fail "wrote the root itself"
	rc=0
	printf x | "$DSB" fs write --mode workspace-write --workspace "$WS" --json "$WS" >o.json || rc=$?
	assert_file_has_content o.json '"code":"FS_NOT_REGULAR_FILE"'
	fsw workspace-write "   " "x"
	assert_streq "$out" "Error: file_path must be a non-empty string"
}

test_tmp_is_a_writable_root_and_full_access_is_unfenced() {
	setup
	local t=/tmp/dsb-fs-e2e.$$
	fsw workspace-write "$t" "tmp-ok"
	assert_rc 0
	assert_streq "$(cat "$t")" "tmp-ok"
	rm -f "$t"
	fsw danger-full-access "$OUT/free" "free"
	assert_rc 0
	assert_streq "$(cat "$OUT/free")" "free"
}

test_escalation_is_approved_before_the_write() {
	setup
	cat >answer.sh <<-SCRIPT
		#!/bin/sh
		cat > "$PWD/request.json"
		echo allowed-once
	SCRIPT
	chmod +x answer.sh
	printf 'approval: { answerer: [%s/answer.sh] }\n' "$PWD" >cfg.yaml
	local id
	id=$("$DSB" session new --cwd "$WS")
	rc=0
	printf 'escalated' | "$DSB" --config cfg.yaml fs write --session "$id" \
		--sandbox-permissions danger-full-access --justification "the user asked" \
		"$OUT/esc" >o.txt || rc=$?
	[ "$rc" -eq 0 ] || fail "exit $rc: $(cat o.txt)"
	assert_streq "$(cat "$OUT/esc")" "escalated"
	assert_file_has_content request.json '"toolName":"write","reason":"escalate sandbox to danger-full-access: the user asked"'
	printf 'approval: { answerer: [/bin/false] }\n' >no.yaml
	rc=0
	printf 'x' | "$DSB" --config no.yaml fs write --session "$id" \
		--sandbox-permissions danger-full-access --justification "the user asked" \
		"$OUT/esc2" >o.txt || rc=$?
	assert_streq "$(cat o.txt)" 'Error: sandbox escalation to "danger-full-access" requires approval, but no approval channel is available'
	[ ! -e "$OUT/esc2" ] || fail "written without approval"
}

test_without_openat2_fails_closed() {
	setup
	rc=0
	printf 'x' | "$SHIM" --no-openat2 -- "$DSB" fs write --mode workspace-write \
		--workspace "$WS" --json inside.txt >o.json || rc=$?
	[ "$rc" -eq 125 ] || fail "exit $rc: $(cat o.json)"
	assert_file_has_content o.json '"code":"FENCE_UNAVAILABLE"'
	[ ! -e ws/inside.txt ] || fail "written without the kernel fence"
}

test_read_is_never_fenced() {
	setup
	run fs read --mode read-only --workspace "$WS" "$OUT/victim"
	assert_rc 0
	assert_streq "$out" "orig"
}

# Beyond DSH: a checkout's hooks are protected, so no write lands there, by any spelling; DSH's
# marker and hint stay as they are, and one line names the protected path.
test_git_hooks_are_protected() {
	setup
	git -C "$WS" -c init.defaultBranch=main init -q
	[ -d "$WS/.git/hooks" ] || mkdir "$WS/.git/hooks"
	ln -s .git/hooks "$WS/h"
	local why='git runs hooks and reads its config outside the sandbox'
	for p in .git/hooks/x "$WS/.git/hooks/x" h/x; do
		fsw workspace-write "$p" "#!/bin/sh"
		[ "$rc" -eq 4 ] || fail "[$p] exit $rc: $out"
		assert_streq "$out" "Error: [sandbox: file access denied under workspace-write mode]
$HINT
[sandbox: $WS/.git/hooks is protected: $why]"
	done
	[ ! -e "$WS/.git/hooks/x" ] || fail "a refused write left a hook"
	rc=0
	printf x | "$DSB" fs write --mode workspace-write --workspace "$WS" --json .git/config \
		>o.json || rc=$?
	[ "$rc" -eq 4 ] || fail "exit $rc: $(cat o.json)"
	assert_file_has_content o.json '"code":"FS_SANDBOX_DENIED"'
	assert_contains "$(cat o.json)" "\\n[sandbox: $WS/.git/config is protected: $why]"
	run fs edit --mode workspace-write --workspace "$WS" .git/config --old core --new x
	assert_rc 4
	assert_contains "$out" "[sandbox: $WS/.git/config is protected: $why]"
	# the rest of the checkout, and the workspace, are written as ever
	fsw workspace-write .git/description "mine"
	assert_rc 0
	fsw workspace-write hooks.txt "notes"
	assert_rc 0
	assert_streq "$(cat "$WS/hooks.txt")" "notes"
}

# Beyond DSH: what sandbox-policy.denyRead hides is not read by the read tool either.
test_deny_read_is_not_read() {
	setup
	mkdir "$WS/private"
	echo token >"$WS/private/token"
	echo open >"$WS/open.txt"
	ln -s private/token "$WS/via-link"
	printf 'sandbox-policy: {denyRead: ["%s", "%s"]}\n' "$WS/private" "$OUT" >cfg.yaml
	local why='sandbox-policy.denyRead hides it'
	for p in private/token "$WS/private/token" via-link; do
		run --config cfg.yaml fs read --mode workspace-write --workspace "$WS" "$p"
		[ "$rc" -eq 4 ] || fail "[$p] exit $rc: $out"
		assert_streq "$out" "Error: [sandbox: file access denied under workspace-write mode]
[sandbox: $WS/private is protected: $why]"
	done
	run --config cfg.yaml fs read --mode read-only --workspace "$WS" "$OUT/victim"
	assert_rc 4
	assert_streq "$out" "Error: [sandbox: file access denied under read-only mode]
[sandbox: $OUT is protected: $why]"
	run --config cfg.yaml fs read --mode read-only --workspace "$WS" --json "$OUT/victim"
	assert_rc 4
	assert_contains "$out" '"code":"FS_SANDBOX_DENIED"'
	# everything else reads as before, and full access hides nothing
	run --config cfg.yaml fs read --mode workspace-write --workspace "$WS" open.txt
	assert_rc 0
	assert_streq "$out" "open"
	run --config cfg.yaml fs read --mode danger-full-access --workspace "$WS" private/token
	assert_rc 0
	assert_streq "$out" "token"
}

test_read_json() {
	setup
	printf 'a "q"\n\tb\r\n' >ws/r.txt
	run fs read --mode read-only --workspace "$WS" --json r.txt
	assert_rc 0
	assert_streq "$out" "{\"path\":\"$WS/r.txt\",\"content\":\"a \\\"q\\\"\\n\\tb\\r\\n\"}"
	run fs read --mode read-only --workspace "$WS" --json none.txt
	assert_rc 9
	assert_streq "$out" "{\"error\":{\"name\":\"FsError\",\"code\":\"FS_NOT_FOUND\",\"message\":\"cannot read \\\"$WS/none.txt\\\": not found\"}}"
}

test_mixed_eol_edit_changes_only_the_match() {
	setup
	printf 'one\r\ntwo\nthree\r\nfour\n' >ws/m.txt
	run fs edit --mode workspace-write --workspace "$WS" m.txt --old two --new 2
	assert_rc 0
	printf 'one\r\n2\nthree\r\nfour\n' >want
	cmp ws/m.txt want || fail "not only the match changed: $(od -c ws/m.txt)"
}

test_limits() {
	setup
	local limit=67108864
	# over-limit input: refused, nothing made, and stdin not read to its end
	rc=0
	head -c $((limit + 1)) /dev/zero |
		"$DSB" fs write --mode workspace-write --workspace "$WS" big.bin >o.txt || rc=$?
	assert_rc 9
	assert_streq "$(cat o.txt)" "Error: cannot write \"$WS/big.bin\": content exceeds the $limit-byte limit"
	[ ! -e ws/big.bin ] || fail "an over-limit write left a file"
	rc=0
	# an endless input is refused too: read to the limit and no further
	timeout 60 "$DSB" fs write --mode workspace-write --workspace "$WS" big.bin </dev/zero >o.txt || rc=$?
	assert_rc 9
	assert_contains "$(cat o.txt)" "content exceeds the $limit-byte limit"
	# the denial still comes first
	rc=0
	head -c $((limit + 1)) /dev/zero |
		"$DSB" fs write --mode read-only --workspace "$WS" big.bin >o.txt || rc=$?
	assert_rc 4
	# an edit whose result would pass the limit is refused up front
	head -c $((limit / 64 + 1)) /dev/zero | tr '\0' x >ws/grow.txt
	run fs edit --mode workspace-write --workspace "$WS" grow.txt --old x \
		--new "$(printf '%064d' 0)" --all
	assert_rc 9
	assert_streq "$out" "Error: cannot edit \"$WS/grow.txt\": $((limit + 64)) bytes exceeds the $limit-byte limit"
	[ "$(stat -c %s ws/grow.txt)" -eq $((limit / 64 + 1)) ] || fail "the file changed"
}

# Replacing needs what writing in place needs; owner and mode are kept, never re-owned.
test_replace_honours_permissions() {
	setup
	if [ "$(id -u)" -ne 0 ]; then
		printf 'ro' >ws/ro.txt
		chmod 0444 ws/ro.txt
		fsw workspace-write ro.txt "x"
		assert_rc 5
		assert_streq "$out" "Error: cannot write \"$WS/ro.txt\": permission denied"
		run fs edit --mode workspace-write --workspace "$WS" ro.txt --old ro --new rw
		assert_rc 5
		assert_streq "$out" "Error: cannot edit \"$WS/ro.txt\": permission denied"
		assert_streq "$(cat ws/ro.txt)" "ro"
		return 0
	fi
	# as root: nobody's file stays nobody's, with its mode
	printf 'theirs' >ws/theirs.txt
	chown 65534:65534 ws/theirs.txt
	chmod 0644 ws/theirs.txt
	fsw workspace-write theirs.txt "replaced"
	assert_rc 0
	assert_streq "$(stat -c '%u:%g %a' ws/theirs.txt)" "65534:65534 644"
	run fs edit --mode workspace-write --workspace "$WS" theirs.txt --old replaced --new edited
	assert_rc 0
	assert_streq "$(stat -c '%u:%g %a' ws/theirs.txt)" "65534:65534 644"
	assert_streq "$(cat ws/theirs.txt)" "edited"
	# as nobody, in a directory nobody may write: root's 0444 file is refused and unchanged
	local stage
	stage=$(mktemp -d /var/tmp/dsb-fs-perm.XXXXXX)
	chmod 0755 "$stage"
	mkdir "$stage/ws"
	chmod 0777 "$stage/ws"
	cp "$DSB" "$stage/dsh-sandbox"
	printf 'root' >"$stage/ws/root-ro.txt"
	chmod 0444 "$stage/ws/root-ro.txt"
	printf 'root' >"$stage/ws/root-rw.txt"
	chmod 0666 "$stage/ws/root-rw.txt"
	# nobody cannot reach this test's directory: HOME, config and store go to the stage
	local nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups env -C "$stage"
		HOME="$stage" XDG_CONFIG_HOME="$stage/xdg" DSH_SANDBOX_STORE="$stage/store"
		"$stage/dsh-sandbox")
	rc=0
	printf 'mine' | "${nobody[@]}" fs write --mode workspace-write --workspace "$stage/ws" \
		root-ro.txt >o.txt 2>e.txt || rc=$?
	err=$(cat e.txt)
	assert_rc 5
	assert_streq "$(cat o.txt)" "Error: cannot write \"$stage/ws/root-ro.txt\": permission denied"
	rc=0
	"${nobody[@]}" fs edit --mode workspace-write --workspace "$stage/ws" root-ro.txt \
		--old root --new mine >o.txt || rc=$?
	assert_rc 5
	assert_streq "$(cat o.txt)" "Error: cannot edit \"$stage/ws/root-ro.txt\": permission denied"
	# writable by nobody, but root's: refused rather than re-owned
	rc=0
	printf 'mine' | "${nobody[@]}" fs write --mode workspace-write --workspace "$stage/ws" \
		root-rw.txt >o.txt || rc=$?
	assert_rc 5
	assert_streq "$(cat o.txt)" "Error: cannot write \"$stage/ws/root-rw.txt\": permission denied"
	local got
	got="$(cat "$stage/ws/root-ro.txt") $(stat -c '%u %a' "$stage/ws/root-ro.txt")"
	got+=" $(cat "$stage/ws/root-rw.txt") $(stat -c '%u %a' "$stage/ws/root-rw.txt")"
	local left
	left=$(find "$stage/ws" -name '.*.tmp')
	rm -rf "$stage"
	assert_streq "$got" "root 0 444 root 0 666"
	[ -z "$left" ] || fail "temp files left: $left"
}

t "write: created and updated texts, parents made beneath the root" test_write_texts
t "read-only denies every write with the marker and the hint" test_read_only_denies_with_marker
t "escapes: outside path, ancestor and final symlinks, .., /proc/self/root" test_escapes_are_denied
t "a hard link to an outside file is replaced, never written through" test_hard_link_never_changes_the_outside_inode
t "edit: texts, replace_all, not found, ambiguous, denied edits change nothing" test_edit_texts
t "the root itself and a blank path" test_root_itself_is_not_a_regular_file
t "/tmp is a writable root; danger-full-access is unfenced" test_tmp_is_a_writable_root_and_full_access_is_unfenced
t "escalation is approved before the write, and refused without approval" test_escalation_is_approved_before_the_write
t "without openat2 the fence fails closed" test_without_openat2_fails_closed
t "reads pass in every mode outside denyRead" test_read_is_never_fenced
t "a checkout's hooks and config are protected from write and edit" test_git_hooks_are_protected
t "denyRead paths are not read, by any spelling" test_deny_read_is_not_read
t "read --json prints the path and the text as JSON" test_read_json
t "a mixed-EOL edit changes only the matched text" test_mixed_eol_edit_changes_only_the_match
t "size limits: write input, edit result; refused before the work" test_limits
t "replacing honours permissions, keeps owner and mode, never re-owns" test_replace_honours_permissions
done_testing
