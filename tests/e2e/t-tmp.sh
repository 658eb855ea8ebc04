#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One private /tmp per session (docs/design/paths.md): what one call writes there the next call
# reads, on either backend, and `fs read /tmp/...` too; another session, the host's /tmp and an
# agentless call see none of it; `session rm` and `session prune` remove it. Both backends, as
# root and as nobody (as-user.sh).
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

each_backend() {
	local name=$1 b
	shift
	for b in "${BACKENDS[@]}"; do
		t "$b: $name" "$@" "$b"
	done
}

# new_ww_session: a workspace-write session in ws, its id in $ID; the store in $PWD/store.
new_ww_session() {
	ID=$("$DSB" --store "$PWD/store" session new --cwd "$PWD/ws")
	"$DSB" --store "$PWD/store" session mode "$ID" workspace-write >/dev/null ||
		fail "no mode switch"
}

in_session() {
	local b=$1 id=$2
	shift 2
	run --store "$PWD/store" bash --backend "$b" --session "$id" "$@"
}

test_persists() {
	local b=$1
	local mark="dsb-tmp-$$-$b" secret="secret-$$"
	setup
	new_ww_session
	local first=$ID
	in_session "$b" "$first" "echo $secret > /tmp/$mark"
	assert_rc 0
	# The control: the file is not the host's.
	[ ! -e "/tmp/$mark" ] || fail "the write reached the host's /tmp"
	for other in "${BACKENDS[@]}"; do
		in_session "$other" "$first" "cat /tmp/$mark"
		assert_rc 0
		assert_streq "$out" "$secret"
	done
	run --store "$PWD/store" fs read --session "$first" "/tmp/$mark"
	assert_rc 0
	assert_contains "$out" "$secret"
	printf 'from fs\n' | "$DSB" --store "$PWD/store" fs write --session "$first" /tmp/fs.txt \
		>/dev/null || fail "fs write /tmp failed"
	in_session "$b" "$first" "cat /tmp/fs.txt"
	assert_streq "$out" "from fs"

	# Another session: neither its /tmp nor the store's path shows it.
	new_ww_session
	in_session "$b" "$ID" "cat /tmp/$mark $PWD/store/.tmp/*/$mark 2>/dev/null; true"
	assert_rc 0
	assert_not_contains "$out" "$secret"
	run --store "$PWD/store" fs read --session "$ID" "/tmp/$mark"
	assert_contains "$out" "not found"
	# An agentless call: hidden.
	run --store "$PWD/store" fs read --mode read-only --workspace "$PWD/ws" \
		"$(find "$PWD/store/.tmp" -name "$mark")"
	assert_contains "$out" "is protected: it holds every session's private /tmp"

	# Gone with the session.
	run --store "$PWD/store" session rm "$first"
	assert_rc 0
	[ -z "$(find "$PWD/store" -name "$mark")" ] || fail "the private /tmp outlived session rm"
	run --store "$PWD/store" session show "$first"
	[ "$rc" -ne 0 ] || fail "the session outlived session rm"
}

test_agentless_call_is_fresh() {
	local b=$1
	local mark="dsb-tmp-once-$$-$b"
	setup
	run exec --backend "$b" --mode workspace-write --workspace "$PWD/ws" -- \
		sh -c "echo x > /tmp/$mark && cat /tmp/$mark"
	assert_rc 0
	assert_streq "$out" x
	[ ! -e "/tmp/$mark" ] || fail "the write reached the host's /tmp"
	run exec --backend "$b" --mode workspace-write --workspace "$PWD/ws" -- cat "/tmp/$mark"
	[ "$rc" -ne 0 ] || fail "a second agentless call saw the first one's /tmp"
}

# A read-only session sees its /tmp, read-only, and its workspace beneath the host's /tmp.
test_read_only_session() {
	local b=$1
	setup
	echo mine > ws/file
	new_ww_session
	in_session "$b" "$ID" "echo kept > /tmp/note"
	"$DSB" --store "$PWD/store" session mode "$ID" read-only >/dev/null || fail "no mode switch"
	in_session "$b" "$ID" 'pwd; cat file /tmp/note; echo x > /tmp/note || echo refused'
	assert_contains "$out" "$PWD/ws
mine
kept
refused"
	in_session "$b" "$ID" "cat /tmp/note"
	assert_streq "$out" kept
	# DSH's read tool sees what the command sees: the workspace's file, and the session's /tmp.
	run --store "$PWD/store" fs read --session "$ID" "$PWD/ws/file"
	assert_rc 0
	assert_streq "$out" mine
	run --store "$PWD/store" fs read --session "$ID" /tmp/note
	assert_rc 0
	assert_streq "$out" kept
}

# A store and a workspace outside /tmp, as in a home directory: the session's /tmp is bound from
# the store's private directories, which every call hides (it was looked up after the hiding).
test_store_outside_tmp() {
	local b=$1 base id
	base=$(mktemp -d /var/tmp/dsb-tmp.XXXXXX)
	defer rm -rf "$base"
	mkdir -p "$base/ws"
	id=$("$DSB" --store "$base/store" session new --cwd "$base/ws")
	"$DSB" --store "$base/store" session mode "$id" workspace-write >/dev/null ||
		fail "no mode switch"
	run --store "$base/store" bash --backend "$b" --session "$id" "echo kept > /tmp/note"
	assert_rc 0
	"$DSB" --store "$base/store" session mode "$id" read-only >/dev/null || fail "no mode switch"
	run --store "$base/store" bash --backend "$b" --session "$id" "cat /tmp/note; ls -a /tmp | wc -l"
	assert_rc 0
	assert_streq "$out" "kept
3"
}

# A workspace beneath the host's /tmp is shown over the session's /tmp, on a directory there
# that a command can swap for a symlink: the next call refuses to follow it, and runs nothing.
test_swapped_mount_point() {
	local b=$1
	setup
	mkdir -p ws/.git/hooks
	new_ww_session
	local rel=${PWD#/tmp/}
	local first=${rel%%/*}
	in_session "$b" "$ID" "mv /tmp/$first /tmp/moved && mkdir -p /tmp/evil/${rel#*/}/ws &&
		ln -s /tmp/evil /tmp/$first && test -L /tmp/$first && echo swapped"
	assert_rc 0
	# The control: the swap itself worked.
	assert_streq "$out" swapped
	in_session "$b" "$ID" "echo planted > $PWD/ws/.git/hooks/pre-commit"
	[ "$rc" -ne 0 ] || fail "a call ran past the swapped mount point"
	assert_contains "$out" "refusing to run the command unconfined"
	assert_contains "$out" "the session's /tmp has no directory for $PWD/ws to be shown at"
	[ ! -e ws/.git/hooks/pre-commit ] || fail "the hook was planted"
	# Read-only as well.
	"$DSB" --store "$PWD/store" session mode "$ID" read-only >/dev/null || fail "no mode switch"
	in_session "$b" "$ID" "cat $PWD/ws/.git/hooks/pre-commit"
	assert_contains "$out" "refusing to run the command unconfined"
}

# Two sessions with workspaces side by side beneath the host's /tmp: what one's command does to
# the other's workspace path (renamed away, a symlink in its place) lands in its own /tmp.
test_neighbour_workspace() {
	local b=$1
	setup
	mkdir -p a b decoy
	echo mine > b/file
	# shellcheck disable=SC2016 # expanded by the bash -c that runs it
	local attack='mv "$1" "$1.moved" && ln -s / "$1" && echo swapped'
	# The control: unconfined, the attack swaps a directory.
	out=$(bash -c "$attack" _ "$PWD/decoy")
	assert_streq "$out" swapped
	[ -L decoy ] || fail "the control did not swap"
	local a_id
	a_id=$("$DSB" --store "$PWD/store" session new --cwd "$PWD/a")
	"$DSB" --store "$PWD/store" session mode "$a_id" workspace-write >/dev/null ||
		fail "no mode switch"
	in_session "$b" "$a_id" "bash -c '$attack' _ '$PWD/b'; true"
	if [ ! -d b ] || [ -L b ] || [ -e b.moved ]; then
		fail "the neighbour's workspace was swapped"
	fi
	assert_streq "$(cat b/file)" mine
}

# policy and probe say where /tmp comes from.
test_reported() {
	setup
	new_ww_session
	local json
	json=$("$DSB" --store "$PWD/store" policy --session "$ID" --json)
	assert_contains "$json" '"tmp":"session"'
	run --store "$PWD/store" policy --session "$ID"
	assert_contains "$out" "/tmp: the session's own, kept between its calls"
	json=$("$DSB" policy --mode workspace-write --workspace "$PWD/ws" --json)
	assert_contains "$json" '"tmp":"call"'
	json=$("$DSB" policy --mode read-only --workspace "$PWD/ws" --json)
	assert_contains "$json" '"tmp":"host"'
	json=$("$DSB" policy --mode danger-full-access --workspace "$PWD/ws" --json)
	assert_contains "$json" '"tmp":"host"'
	json=$("$DSB" probe --json)
	assert_contains "$json" '"tmp":"session"'
}

test_prune() {
	setup
	new_ww_session
	local old=$ID
	in_session bwrap "$old" "echo x > /tmp/old"
	new_ww_session
	local young=$ID
	in_session bwrap "$young" "echo y > /tmp/young"
	# The old one's log was last written ten days ago.
	touch -d '10 days ago' "$(find "$PWD/store" -path "*/$old/session.jsonl")"
	run --store "$PWD/store" session prune --older-than 7
	assert_rc 0
	assert_streq "$out" "1 removed"
	[ -z "$(find "$PWD/store" -name old)" ] || fail "the old session's /tmp stays"
	[ -n "$(find "$PWD/store" -name young)" ] || fail "the young session's /tmp went"
	run --store "$PWD/store" session prune --older-than -3
	assert_rc 2
	run --store "$PWD/store" session prune
	assert_rc 2
}

each_backend "a session's /tmp persists across calls and backends, is private, goes with session rm" test_persists
each_backend "an agentless call's /tmp is its own" test_agentless_call_is_fresh
each_backend "a read-only session: its /tmp read-only, its workspace beneath /tmp shown" \
	test_read_only_session
each_backend "a mount point swapped for a symlink in the session's /tmp: nothing runs" \
	test_swapped_mount_point
each_backend "a neighbour's workspace beneath /tmp is out of reach" test_neighbour_workspace
each_backend "a store and a workspace outside /tmp: the session's /tmp all the same" \
	test_store_outside_tmp
t "policy and probe say where /tmp comes from" test_reported
t "session prune --older-than removes old sessions and their /tmp only" test_prune
done_testing
