#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Exact denials (issue 34, docs/design/evidence.md): with sandbox-local.evidence on, the model is
# told which path was refused, from the supervisor's evidence, not from the command's stderr.
# Each write-class operation outside the writable roots is named with its path and operation,
# its effect absent afterwards; a refusal the command silenced is still a denial, words that
# only look like one are not; a protected path and a symlink out are named resolved; a thousand
# refusals stay capped and counted; the session records them and the escalation that retries the
# call shows them to the person asked. Each attack works unconfined first (the control).
#
#   $PWD/ws/     the workspace
#   $OUT/        outside every writable root (/var/tmp), writable by the test's user
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME DSH_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
HINT='[sandbox: escalation available — retry this exact command once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]'
MARK_WW='[sandbox: file access denied under workspace-write mode]'
PYTHON=python3
[ ! -x /usr/bin/python3 ] || PYTHON=/usr/bin/python3
PTY_RUN="$(dirname "$0")/pty-run.py"
SHIM=${DSB_SECCOMP_SHIM:?}
MCP_CLIENT="$(dirname "$0")/mcp-client.py"

# The backends whose runs are watched, as probe says (both must be usable here: a suite that
# skipped them would prove nothing).
EVIDENCE_CFG="$TEST_TMP/evidence.yaml"
printf 'sandbox-local:\n  evidence: true\n' >"$EVIDENCE_CFG"

setup() {
	mkdir -p ws
	OUT=$(mktemp -d /var/tmp/dsb-evidence.XXXXXX)
	trap 'rm -rf "$OUT"' EXIT
	echo orig >"$OUT/victim"
	mkdir "$OUT/dir"
}

# ev BACKEND MODE ARGS...: the bash tool with the evidence on, in $PWD/ws.
ev() {
	local b=$1 m=$2
	shift 2
	run --config "$EVIDENCE_CFG" bash --backend "$b" --mode "$m" --workspace "$PWD/ws" "$@"
}

# The errno a refusal outside the roots gets: Landlock's EACCES, a read-only mount's EROFS.
errno_of() {
	case $1 in
	landlock) echo EACCES ;;
	*) echo EROFS ;;
	esac
}

# json_get EXPR: evaluates EXPR (Python, over the JSON result `r`) on $out.
json_get() {
	printf '%s' "$out" | "$PYTHON" -c "import json, sys; r = json.load(sys.stdin); print($1)"
}

# has_evidence BACKEND: True or False, as probe --json says of BACKEND with the evidence on.
has_evidence() {
	run --config "$EVIDENCE_CFG" probe --json
	printf '%s' "$out" | "$PYTHON" -c '
import json, sys
p = json.load(sys.stdin)
b = [x for x in p["backends"] if x["name"] == sys.argv[1]][0]
print("file-evidence" in b.get("hardening", []))' "$1"
}

test_probe_says_which() {
	assert_streq "$(has_evidence landlock)" True
	assert_streq "$(has_evidence bwrap)" True
	# Off (the default): not in force, and not claimed.
	run probe
	assert_not_contains "$out" file-evidence
}

# Words that only look like a refusal are not one; a refusal the command silenced is.
test_false_positive_and_silenced() {
	setup
	local b=$1
	ev "$b" workspace-write 'echo "Read-only file system" >&2; echo "Permission denied" >&2; exit 1'
	assert_streq "$out" "[stderr]
Read-only file system
Permission denied
[exit code: 1]"
	ev "$b" workspace-write --json 'echo "Read-only file system" >&2; exit 1'
	assert_streq "$(json_get 'r["sandbox"]["denied"], r["sandbox"]["refusals"], r["sandbox"]["refusalCount"]')" \
		"False [] 0"

	# The control: unconfined, the write lands.
	run bash --mode danger-full-access --workspace "$PWD/ws" "touch '$OUT/x' 2>/dev/null || true"
	[ -e "$OUT/x" ] || fail "the control's touch did not land"
	rm "$OUT/x"
	ev "$b" workspace-write "touch '$OUT/x' 2>/dev/null || true"
	assert_streq "$out" "(no output)
$MARK_WW
$HINT
[sandbox: create $OUT/x denied (outside the writable roots)]"
	[ ! -e "$OUT/x" ] || fail "the write landed"
	ev "$b" workspace-write --json "touch '$OUT/x' 2>/dev/null || true"
	assert_streq "$(json_get 'r["sandbox"]["denied"], r["sandbox"]["refusalCount"], r["sandbox"]["refusals"]')" \
		"True 1 [{'op': 'create', 'path': '$OUT/x', 'named': '$OUT/x', 'errno': '$(errno_of "$b")', 'reason': 'outside'}]"
}

# refused_op BACKEND SCRIPT LINE: SCRIPT's refusal is named by LINE (after DSH's markers).
refused_op() {
	ev "$1" workspace-write "$2"
	assert_contains "$out" "$MARK_WW
$HINT"
	assert_contains "$out" "$3"
}

# Each write-class operation outside the roots: named, and without effect.
test_each_operation() {
	setup
	local b=$1
	# The controls: every one of them works unconfined.
	run bash --mode danger-full-access --workspace "$PWD/ws" "
		cd '$OUT' && cp victim v && printf x >>v && : >v && mkdir d && rmdir d && mv v w &&
		ln w l && ln -s w s && mkfifo p && truncate -s 0 w && chmod 600 w && rm w l s p"
	assert_rc 0
	assert_streq "$out" "(no output)"

	refused_op "$b" "printf x >>'$OUT/victim'" \
		"[sandbox: write to $OUT/victim denied (outside the writable roots)]"
	refused_op "$b" ": >'$OUT/victim'" \
		"[sandbox: write to $OUT/victim denied (outside the writable roots)]"
	refused_op "$b" "truncate -s 0 '$OUT/victim'" \
		"[sandbox: write to $OUT/victim denied (outside the writable roots)]"
	refused_op "$b" "$PYTHON -c 'import os, sys; os.truncate(sys.argv[1], 0)' '$OUT/victim'" \
		"[sandbox: truncate $OUT/victim denied (outside the writable roots)]"
	refused_op "$b" "touch '$OUT/new'" \
		"[sandbox: create $OUT/new denied (outside the writable roots)]"
	refused_op "$b" "mkfifo '$OUT/fifo'" \
		"[sandbox: create $OUT/fifo denied (outside the writable roots)]"
	refused_op "$b" "mkdir '$OUT/d'" \
		"[sandbox: create directory $OUT/d denied (outside the writable roots)]"
	refused_op "$b" "rm -f '$OUT/victim'" \
		"[sandbox: remove $OUT/victim denied (outside the writable roots)]"
	refused_op "$b" "rmdir '$OUT/dir'" \
		"[sandbox: remove directory $OUT/dir denied (outside the writable roots)]"
	refused_op "$b" "mv '$OUT/victim' '$OUT/moved'" \
		"[sandbox: rename $OUT/victim denied (outside the writable roots)]"
	refused_op "$b" "ln '$OUT/victim' '$OUT/hard'" \
		"[sandbox: hard link $OUT/hard denied (outside the writable roots)]"
	refused_op "$b" "ln -s victim '$OUT/soft'" \
		"[sandbox: symlink $OUT/soft denied (outside the writable roots)]"
	# A move out of the workspace: another mount, so mv(1) copies (the rename is EXDEV, the
	# kernel's answer, not a refusal), and the copy's first change outside is refused: its
	# create under Landlock; under bwrap the removal of the target that mv tries first (a
	# read-only mount refuses a removal before it looks the name up).
	echo mine >ws/mine
	local first=create
	[ "$b" = landlock ] || first=remove
	refused_op "$b" "mv mine '$OUT/mine'" \
		"[sandbox: $first $OUT/mine denied (outside the writable roots)]"
	[ -e ws/mine ] || fail "the workspace's file went"

	assert_streq "$(cat "$OUT/victim")" orig
	[ -d "$OUT/dir" ] || fail "the directory went"
	for f in new fifo d moved hard soft mine; do
		if [ -e "$OUT/$f" ] || [ -L "$OUT/$f" ]; then fail "$f was made outside"; fi
	done
}

# The metadata calls refused are named too (Landlock: the supervisor's own answer, EPERM; bwrap:
# its read-only mount's, EROFS, which the supervisor only looks at).
test_metadata() {
	setup
	local b=$1
	ev "$b" workspace-write --json "chmod 600 '$OUT/victim'"
	assert_streq "$(json_get 'r["sandbox"]["denied"], [(x["op"], x["path"]) for x in r["sandbox"]["refusals"]]')" \
		"True [('chmod', '$OUT/victim')]"
	assert_streq "$(stat -c %a "$OUT/victim")" "$(umask -S >/dev/null; stat -c %a "$OUT/victim")"
}

# Inside the roots nothing is refused, nothing is said, and everything lands.
test_inside_untouched() {
	setup
	ev "$1" workspace-write --json 'touch a && mkdir d && mv a d/b && ln -s b d/c && ln d/b e &&
		printf x >>e && : >e && truncate -s 1 e && rm d/c && mkfifo p && echo ok'
	assert_streq "$(json_get 'r["text"], r["sandbox"]["denied"], r["sandbox"]["refusals"]')" \
		"ok
 False []"
	if [ ! -e ws/d/b ] || [ ! -p ws/p ]; then fail "the calls inside did not land"; fi
	# /dev/null and the command's /tmp are writable too.
	ev "$1" workspace-write 'echo x >/dev/null && echo y >/tmp/t && cat /tmp/t'
	assert_streq "$out" y
}

# In read-only mode nothing is writable, the workspace neither: said so.
test_read_only_mode() {
	setup
	ev "$1" read-only 'touch f 2>/dev/null; true'
	assert_streq "$out" "(no output)
[sandbox: file access denied under read-only mode]
$HINT
[sandbox: create $PWD/ws/f denied (read-only mode)]"
	[ ! -e ws/f ] || fail "the write landed"
}

# A protected path is named as the fence names it; a symlink out by where it leads.
test_protected_and_symlink() {
	setup
	local b=$1
	git -C ws init -q
	ev "$b" workspace-write 'echo "exit 0" > .git/hooks/pre-commit'
	assert_contains "$out" "[sandbox: $PWD/ws/.git/hooks/pre-commit is protected: git runs hooks and reads its config outside the sandbox]"
	[ ! -e ws/.git/hooks/pre-commit ] || fail "the hook was written"
	ln -s "$OUT" ws/out
	ev "$b" workspace-write --json 'echo x > out/f'
	assert_streq "$(json_get '[(x["op"], x["path"], x["named"]) for x in r["sandbox"]["refusals"]]')" \
		"[('create', '$OUT/f', 'out/f')]"
	assert_contains "$(json_get 'r["text"]')" "[sandbox: create $OUT/f denied (outside the writable roots)]"
	[ ! -e "$OUT/f" ] || fail "the write through the symlink landed"
}

# A thousand refusals: sixteen paths named, all of them counted.
test_a_thousand() {
	setup
	ev "$1" workspace-write --json "for i in \$(seq 1000); do : >'$OUT/f'\$i; done 2>/dev/null; true"
	assert_streq "$(json_get 'r["sandbox"]["refusalCount"], len(r["sandbox"]["refusals"]), r["sandbox"]["refusals"][15]["path"]')" \
		"1000 16 $OUT/f16"
	local text
	text=$(json_get 'r["text"]')
	assert_streq "$(printf '%s\n' "$text" | grep -c 'denied (outside the writable roots)')" 16
	assert_streq "$(printf '%s\n' "$text" | tail -n 1)" "[sandbox: 1000 file operations refused in all]"
	if compgen -G "$OUT/f*" >/dev/null; then fail "files were made outside"; fi
}

# The session records the refusals (ignorable for DSH's readers); the escalation that retries
# the call shows them to the person asked.
test_session_and_prompt() {
	setup
	local b=$1 id
	cat >answer.sh <<-SCRIPT
		#!/bin/sh
		cat > "$PWD/request.json"
		echo rejected
	SCRIPT
	chmod +x answer.sh
	printf 'sandbox-local:\n  evidence: true\napproval: { answerer: [%s/answer.sh] }\n' "$PWD" >cfg.yaml
	id=$("$DSB" session new --cwd "$PWD/ws")
	"$DSB" session mode "$id" workspace-write >/dev/null
	run --config cfg.yaml bash --backend "$b" --session "$id" "touch '$OUT/x'"
	assert_contains "$out" "[sandbox: create $OUT/x denied (outside the writable roots)]"
	local log
	log=$("$DSB" session log "$id")
	printf '%s\n' "$log" | grep -q '"type":"sandbox/refusals".*"subject":"touch '"'$OUT/x'"'".*"ignorable":true}$' ||
		fail "no sandbox/refusals event: $log"
	run --config cfg.yaml bash --backend "$b" --session "$id" --sandbox-permissions danger-full-access \
		--justification "the user asked for it" "touch '$OUT/x'"
	assert_contains "$out" 'the user rejected escalating this command to "danger-full-access"'
	[ ! -e "$OUT/x" ] || fail "ran although rejected"
	assert_streq "$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["refused"])' request.json)" \
		"[sandbox: create $OUT/x denied (outside the writable roots)]"
	# Another command's retry is shown nothing.
	run --config cfg.yaml bash --backend "$b" --session "$id" --sandbox-permissions danger-full-access \
		--justification "the user asked for it" "touch '$OUT/y'"
	assert_streq "$("$PYTHON" -c 'import json, sys; print("refused" in json.load(open(sys.argv[1])))' request.json)" False
}

# The terminal's question shows the refused path too, one line a refusal, nothing raw.
test_terminal_prompt() {
	setup
	local b=$1 id
	printf 'sandbox-local:\n  evidence: true\n' >cfg.yaml
	id=$("$DSB" session new --cwd "$PWD/ws")
	"$DSB" session mode "$id" workspace-write >/dev/null
	# A name with a newline and an ESC: the command's, which must draw nothing.
	run --config cfg.yaml bash --backend "$b" --session "$id" "touch '$OUT/x'\$'\\n\\e[2K'"
	# (The record keeps each name one line: a control character is a "?".)
	assert_contains "$out" "[sandbox: create $OUT/x??[2K denied (outside the writable roots)]"
	rc=0
	"$PYTHON" "$PTY_RUN" --answer "Allow once?" 'n\n' -- "$DSB" --config cfg.yaml bash \
		--backend "$b" --session "$id" --sandbox-permissions danger-full-access \
		--justification "the user asked for it" "touch '$OUT/x'\$'\\n\\e[2K'" >tty.bin || rc=$?
	grep -qxF "  refused:       [sandbox: create $OUT/x??[2K denied (outside the writable roots)]" tty.bin ||
		fail "no refused line: $(cat -A tty.bin)"
	! LC_ALL=C grep -q $'\e' tty.bin || fail "a raw ESC reached the terminal: $(cat -A tty.bin)"
	if compgen -G "$OUT/x*" >/dev/null; then fail "ran although refused"; fi
}

# Through the server, whose calls run under a monitor process: the same lines, the structured
# result's refusals, and the retry's question through the client.
test_server() {
	setup
	printf 'sandbox-local:\n  evidence: true\n  backends: [%s]\n' "$1" >cfg.yaml
	local id
	id=$("$DSB" session new --cwd "$PWD/ws")
	"$DSB" session mode "$id" workspace-write >/dev/null
	out=$(MCP_CALL_STRUCTURED=1 "$PYTHON" "$MCP_CLIENT" call "$PWD/ws" "$PWD/cfg.yaml" bash \
		'{"command":"touch '"$OUT"'/x 2>/dev/null; true","description":"Write outside"}' "$id")
	assert_streq "$(printf '%s\n' "$out" | sed -n '1,5p')" "isError=false
(no output)
$MARK_WW
$HINT
[sandbox: create $OUT/x denied (outside the writable roots)]"
	assert_streq "$(printf '%s\n' "$out" | sed -n '/^\[structured\]$/{n;p}' |
		"$PYTHON" -c 'import json, sys; r = json.load(sys.stdin)["sandbox"]; print(r["denied"], r["refusalCount"], r["refusals"][0]["path"])')" \
		"True 1 $OUT/x"
	[ ! -e "$OUT/x" ] || fail "the write landed"
	# The retry's question, through the client's elicitation, shows the refusal.
	out=$(DSB_ELICIT_MESSAGE="$PWD/question.txt" "$PYTHON" "$MCP_CLIENT" elicit "$PWD/ws" \
		"$PWD/cfg.yaml" "$id" deny '{"command":"touch '"$OUT"'/x 2>/dev/null; true","description":"Write outside","sandbox_permissions":"danger-full-access","justification":"the user asked for it"}')
	assert_contains "$out" 'the user rejected escalating this command to "danger-full-access"'
	grep -qxF "refused: [sandbox: create $OUT/x denied (outside the writable roots)]" question.txt ||
		fail "no refused line in the question: $(cat question.txt)"
	[ ! -e "$OUT/x" ] || fail "ran although denied"
}

# exec, for a person: the marker and the lines on stderr, the command's status kept.
test_exec() {
	setup
	run --config "$EVIDENCE_CFG" exec --backend "$1" --mode workspace-write --workspace "$PWD/ws" \
		-- sh -c "touch '$OUT/x' 2>/dev/null; exit 3"
	assert_rc 3
	assert_streq "$err" "$MARK_WW
[sandbox: create $OUT/x denied (outside the writable roots)]"
	[ ! -e "$OUT/x" ] || fail "the write landed"
}

# A denyRead path that bash reads, or writes into, is named as the fence names it: a hidden
# file reads as nothing (Landlock: an empty stand-in) or is refused (bwrap's stand-in is a device
# on a nodev mount), a hidden directory is refused, a file made in it too.
test_deny_read() {
	setup
	local b=$1
	mkdir "$OUT/secret-dir"
	echo DIR-SECRET >"$OUT/secret-dir/key"
	echo FILE-SECRET >"$OUT/secret-file"
	printf 'sandbox-local:\n  evidence: true\nsandbox-policy: {denyRead: ["%s/secret-dir", "%s/secret-file"]}\n' \
		"$OUT" "$OUT" >deny.yaml
	local script="cat '$OUT/secret-file'; cat '$OUT/secret-dir/key'; echo x >'$OUT/secret-dir/new'; true"
	# The control: unconfined, both are read and the file is made.
	run bash --mode danger-full-access --workspace "$PWD/ws" "$script"
	assert_contains "$out" FILE-SECRET
	assert_contains "$out" DIR-SECRET
	rm "$OUT/secret-dir/new"
	run --config deny.yaml bash --backend "$b" --mode workspace-write --workspace "$PWD/ws" --json "$script"
	local reason='sandbox-policy.denyRead hides it' file_errno=None
	[ "$b" = landlock ] || file_errno="'EACCES'"
	assert_not_contains "$out" SECRET
	assert_contains "$(json_get 'r["text"]')" "$MARK_WW
$HINT
[sandbox: $OUT/secret-file is protected: $reason]
[sandbox: $OUT/secret-dir/key is protected: $reason]
[sandbox: $OUT/secret-dir/new is protected: $reason]"
	assert_streq "$(json_get '[(x["op"], x["errno"], x["reason"]) for x in r["sandbox"]["refusals"]]')" \
		"[('read', $file_errno, 'hidden'), ('read', 'EACCES', 'hidden'), ('create', 'EACCES', 'hidden')]"
	[ ! -e "$OUT/secret-dir/new" ] || fail "a file was made in the hidden directory"
}

# Where no listener can be had (a filter above holds one, as a container runtime's supervisor
# does), probe claims no evidence and the runs keep DSH's rule, byte for byte, on both backends.
test_no_listener() {
	setup
	local b=$1
	export DSH_SANDBOX_STORE=$PWD/shim-store
	out=$("$SHIM" --listener -- "$DSB" --config "$EVIDENCE_CFG" probe --fresh 2>&1)
	assert_not_contains "$out" file-evidence
	# DSH's words for each backend's refusal.
	local words="Read-only file system"
	[ "$b" != landlock ] || words="Permission denied"
	out=$("$SHIM" --listener -- "$DSB" --config "$EVIDENCE_CFG" bash --backend "$b" \
		--mode workspace-write --workspace "$PWD/ws" "echo '$words' >&2; exit 1" 2>&1)
	assert_streq "$out" "[stderr]
$words
$MARK_WW
$HINT
[exit code: 1]"
	out=$("$SHIM" --listener -- "$DSB" --config "$EVIDENCE_CFG" bash --backend "$b" \
		--mode workspace-write --workspace "$PWD/ws" --json "touch '$OUT/x' 2>/dev/null || true" 2>&1)
	assert_streq "$(json_get 'r["sandbox"]["denied"], "refusals" in r["sandbox"]')" "False False"
	[ ! -e "$OUT/x" ] || fail "the write landed"
}

# Off (the default): DSH's rule, as before.
test_off_is_dsh() {
	setup
	run bash --backend "$1" --mode workspace-write --workspace "$PWD/ws" --json "touch '$OUT/x' 2>/dev/null || true"
	assert_streq "$(json_get 'r["sandbox"]["denied"], "refusals" in r["sandbox"]')" "False False"
}

t "probe reports file-evidence where it is in force, nothing when off" test_probe_says_which
for b in landlock bwrap; do
	t "$b: words are no denial, a silenced refusal is, named with its path" test_false_positive_and_silenced "$b"
	t "$b: every write-class operation outside is named and has no effect" test_each_operation "$b"
	t "$b: inside the roots nothing is refused or said" test_inside_untouched "$b"
	t "$b: read-only mode says so" test_read_only_mode "$b"
	t "$b: a protected path, a symlink out (named resolved)" test_protected_and_symlink "$b"
	t "$b: a thousand refusals: sixteen named, all counted" test_a_thousand "$b"
	t "$b: the session records them; the retry's approval shows them" test_session_and_prompt "$b"
	t "$b: the terminal's question shows the refused path, nothing raw" test_terminal_prompt "$b"
	t "$b: through the server: the lines, the structured result, the retry's question" test_server "$b"
	t "$b: exec says it on stderr" test_exec "$b"
	t "$b: a metadata change outside is named" test_metadata "$b"
	t "$b: a denyRead path read or written through bash is named" test_deny_read "$b"
	t "$b: no listener to be had: nothing claimed, DSH's rule" test_no_listener "$b"
	t "$b: off, DSH's rule" test_off_is_dsh "$b"
done
done_testing
