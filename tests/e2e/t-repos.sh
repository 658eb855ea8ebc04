#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# No planted repository (docs/design/paths.md): a confined command writes an executable hook and
# program-running config keys (core.fsmonitor, an alias) into a repository it made with git init,
# into one nested below the workspace before the call, and into one it cloned; then the user
# runs `git commit` and `git status` there, unconfined. Each attack first runs unconfined, the
# control, where the planted code must run; confined, on both backends, none of it may. git
# init, clone, commit and worktree keep working inside. As root and as nobody (as-user.sh).
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@example.invalid GIT_CONFIG_NOSYSTEM=1 HOME=$TEST_TMP/home
mkdir -p "$HOME"

# plant DIR MARK: the attack, as a script run with bash -c: an executable pre-commit hook and an
# fsmonitor that leave MARK.hook and MARK.fsmonitor behind, and an alias.
# shellcheck disable=SC2016 # expanded by the bash -c that runs it
PLANT='printf "#!/bin/sh\ntouch %s.hook\n" "$2" > "$1/.git/hooks/pre-commit" &&
	chmod +x "$1/.git/hooks/pre-commit" &&
	git -C "$1" config core.fsmonitor "touch $2.fsmonitor; false" &&
	git -C "$1" config alias.st "!touch $2.alias"'

# user_git DIR: what the user does there afterwards, unconfined.
user_git() {
	git -C "$1" commit -q --allow-empty -m user >/dev/null 2>&1 || true
	git -C "$1" status >/dev/null 2>&1 || true
	git -C "$1" st >/dev/null 2>&1 || true
}

# ran MARK: which of the planted programs ran.
ran() {
	local m=$1 what=""
	[ ! -e "$m.hook" ] || what+=" hook"
	[ ! -e "$m.fsmonitor" ] || what+=" fsmonitor"
	[ ! -e "$m.alias" ] || what+=" alias"
	echo "${what# }"
}

confined() {
	local b=$1
	shift
	run exec --backend "$b" --mode workspace-write --workspace "$PWD/ws" -- "$@"
}

test_control() {
	setup
	local mark="$OUT/control"
	git init -q ws
	bash -c "$PLANT" _ "$PWD/ws" "$mark" || fail "the control could not plant"
	user_git "$PWD/ws"
	assert_streq "$(ran "$mark")" "hook fsmonitor alias"
}

test_fresh_init() {
	local b=$1
	setup
	local mark="$OUT/init-$b"
	# Through the bash tool: the model reads the note with the output.
	local script
	script="set -- '$PWD/ws' '$mark'; git init -q \"\$1\" && $PLANT"
	run bash --backend "$b" --mode workspace-write --workspace "$PWD/ws" "$script"
	assert_rc 0
	assert_contains "$out" "[sandbox: $PWD/ws/.git is a repository this call made; disarmed so that git outside the sandbox runs none of its code; hooks made inert: pre-commit; config keys removed: core.fsmonitor, alias.st]"
	user_git "$PWD/ws"
	assert_streq "$(ran "$mark")" ""
	# The repository works: the user's commit landed, and the next call sees it protected.
	[ "$(git -C ws rev-list --count HEAD)" -eq 1 ] || fail "the user's commit did not land"
	confined "$b" bash -c "$PLANT" _ "$PWD/ws" "$mark"
	[ "$rc" -ne 0 ] || fail "a protected hook was planted"
	user_git "$PWD/ws"
	assert_streq "$(ran "$mark")" ""
}

test_nested_at_start() {
	local b=$1
	setup
	local mark="$OUT/nested-$b"
	mkdir -p ws/vendor/lib
	git init -q ws/vendor/lib
	confined "$b" bash -c "$PLANT" _ "$PWD/ws/vendor/lib" "$mark"
	[ "$rc" -ne 0 ] || fail "the planting succeeded"
	user_git "$PWD/ws/vendor/lib"
	assert_streq "$(ran "$mark")" ""
	[ ! -x ws/vendor/lib/.git/hooks/pre-commit ] || fail "the hook is there"
}

test_cloned_in_call() {
	local b=$1
	setup
	local mark="$OUT/clone-$b"
	git init -q "$OUT/upstream-$b"
	git -C "$OUT/upstream-$b" commit -q --allow-empty -m first
	confined "$b" bash -c "git clone -q \"\$3\" \"\$1\" && $PLANT" _ "$PWD/ws/dep" "$mark" \
		"$OUT/upstream-$b"
	assert_rc 0
	# exec tells the caller on stderr.
	assert_contains "$err" "[sandbox: $PWD/ws/dep/.git is a repository this call made"
	user_git "$PWD/ws/dep"
	assert_streq "$(ran "$mark")" ""
	# What clone wrote is kept: the remote, the branch's upstream.
	assert_streq "$(git -C ws/dep config remote.origin.url)" "$OUT/upstream-$b"
	git -C ws/dep pull -q || fail "pull from the kept remote failed"
}

# read-only: nothing is made, nothing written, in the workspace's repository or beside it.
test_read_only() {
	local b=$1
	setup
	local mark="$OUT/ro-$b"
	git init -q ws/lib
	run exec --backend "$b" --mode read-only --workspace "$PWD/ws" -- \
		bash -c "git init -q \"\$1/new\"; $PLANT" _ "$PWD/ws/lib" "$mark"
	[ "$rc" -ne 0 ] || fail "the planting succeeded"
	[ ! -e ws/new ] || fail "a repository was made"
	user_git "$PWD/ws/lib"
	assert_streq "$(ran "$mark")" ""
}

# The fs tools plant a config too: in a gitdir the call makes, it is disarmed at once; in
# one an earlier call made (HEAD, objects/, refs/ and no config yet), it is refused.
test_fs_tools() {
	setup
	local mark="$OUT/fs"
	local evil
	evil=$(printf '[core]\n\tbare = false\n\tfsmonitor = touch %s.fsmonitor; false\n' "$mark")
	run fs write --mode workspace-write --workspace "$PWD/ws" a/.git/config <<<"$evil"
	assert_rc 0
	assert_contains "$out" "Created file
</content>
[sandbox: $PWD/ws/a/.git is a repository this call made; disarmed so that git outside the sandbox runs none of its code; config keys removed: core.fsmonitor]"
	assert_streq "$(cat ws/a/.git/config)" "[core]
	bare = false"
	local f
	for f in HEAD objects/k refs/k; do
		run fs write --mode workspace-write --workspace "$PWD/ws" "b/.git/$f" <<<"ref: refs/heads/main"
		assert_rc 0
	done
	run fs write --mode workspace-write --workspace "$PWD/ws" b/.git/config <<<"$evil"
	[ "$rc" -ne 0 ] || fail "a config was planted in a repository of an earlier call"
	assert_contains "$out" "b/.git/config is protected"
	user_git "$PWD/ws/a"
	user_git "$PWD/ws/b"
	assert_streq "$(ran "$mark")" ""
}

test_workflows() {
	local b=$1
	setup
	git init -q ws
	git -C ws commit -q --allow-empty -m base
	# shellcheck disable=SC2016 # expanded by the bash -c that runs it
	confined "$b" bash -c 'set -e; cd "$1"; echo a > a; git add a; git commit -q -m a
		git worktree add -q wt -b topic
		echo b > wt/b; git -C wt add b; git -C wt commit -q -m b
		git init -q sub; git -C sub commit -q --allow-empty -m s; echo ok' _ "$PWD/ws"
	assert_rc 0
	assert_contains "$out" ok
	assert_not_contains "$out" "is a repository this call made"
	[ "$(git -C ws rev-list --count HEAD)" -eq 2 ] || fail "the commit in the call did not land"
	[ "$(git -C ws rev-list --count topic)" -eq 3 ] || fail "the worktree's commit did not land"
}

t "control: unconfined, the planted hook, fsmonitor and alias run" test_control
t "fs write: a config planted in a new gitdir is disarmed, in an earlier call's refused" \
	test_fs_tools
for b in "${BACKENDS[@]}"; do
	t "$b: git init in the call: disarmed, said in one line; nothing planted runs" \
		test_fresh_init "$b"
	t "$b: a repository nested below the workspace before the call is protected" \
		test_nested_at_start "$b"
	t "$b: a clone made in the call: disarmed, its remote kept" test_cloned_in_call "$b"
	t "$b: init, commit, worktree add and a nested init work inside" test_workflows "$b"
	t "$b: read-only: no repository is made, none is written" test_read_only "$b"
done
done_testing
