#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Paths (docs/design/paths.md): one list of writable roots that every enforcer grants and
# `policy` prints; extra roots for toolchains' caches (sandbox-policy.writableRoots,
# --writable) and their refusals; TMPDIR is /tmp inside; the start-up files of a root that is
# someone's home cannot be planted (protectDefaults); an escalated call keeps its protections.
# Both backends, as root and as nobody (as-user.sh).
#
#   $PWD/ws/      the workspace (under $TMPDIR)
#   $OUT/         outside every grant (/var/tmp): the extra roots, a home, the toolchains' caches
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=dsb GIT_AUTHOR_EMAIL=dsb@example.invalid
export GIT_COMMITTER_NAME=dsb GIT_COMMITTER_EMAIL=dsb@example.invalid

each_backend() {
	local name=$1 b
	shift
	for b in "${BACKENDS[@]}"; do
		t "$b: $name" "$@" "$b"
	done
}

# roots_of JSON: the writableRoots `policy --json` printed, one a line.
roots_of() {
	"$PYTHON" -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])["writableRoots"]))' "$1"
}

# Item 1: every root policy lists takes a write through bash and through fs write; a path
# outside each takes none, through all three.
test_one_list() {
	local b=$1 root n=0
	setup
	mkdir -p "$OUT/cache" "$OUT/outside"
	run policy --mode workspace-write --workspace "$PWD/ws" --writable "$OUT/cache" --json
	assert_rc 0
	mapfile -t roots < <(roots_of "$out")
	[ "${#roots[@]}" -eq 3 ] || fail "expected 3 roots: ${roots[*]}"
	for root in "${roots[@]}"; do
		n=$((n + 1))
		run bash --backend "$b" --mode workspace-write --workspace "$PWD/ws" \
			--writable "$OUT/cache" "echo bash > '$root/dsb-bash-$n' && cat '$root/dsb-bash-$n'"
		assert_rc 0
		assert_streq "$out" bash
		run fs write --mode workspace-write --workspace "$PWD/ws" \
			--writable "$OUT/cache" "$root/dsb-fs-$n" <<<fs
		assert_rc 0
		[ -f "$root/dsb-fs-$n" ] || fail "fs write did not land in $root"
		rm -f "$root/dsb-fs-$n" "$root/dsb-bash-$n"
	done
	# Outside: denied by both enforcers and the fence, nothing left.
	run exec --backend "$b" --mode workspace-write --workspace "$PWD/ws" --writable "$OUT/cache" \
		-- sh -c "echo x > '$OUT/outside/f'"
	refused "a write outside the roots"
	run fs write --mode workspace-write --workspace "$PWD/ws" --writable "$OUT/cache" \
		"$OUT/outside/f" <<<x
	refused "an fs write outside the roots"
	assert_contains "$out" "file access denied under workspace-write mode"
	[ ! -e "$OUT/outside/f" ] || fail "a write outside landed"
	# Read-only lists nothing and grants nothing, extra roots included.
	run policy --mode read-only --workspace "$PWD/ws" --writable "$OUT/cache" --json
	assert_contains "$out" '"writableRoots":[]'
	run exec --backend "$b" --mode read-only --workspace "$PWD/ws" --writable "$OUT/cache" \
		-- sh -c "echo x > '$OUT/cache/f'"
	refused "a read-only write to an extra root"
	[ ! -e "$OUT/cache/f" ] || fail "read-only wrote an extra root"
}

# The command's TMPDIR is the sandbox's /tmp, whatever the caller's.
test_tmpdir_is_tmp() {
	local b=$1
	mkdir -p ws
	# shellcheck disable=SC2016 # the confined shell expands it
	TMPDIR=$PWD/elsewhere run exec --backend "$b" --mode workspace-write --workspace "$PWD/ws" \
		-- sh -c 'echo "$TMPDIR"; mktemp >/dev/null && echo made'
	assert_rc 0
	assert_streq "$out" "/tmp
made"
}

# Item 2's refusals, each with its message, before anything runs.
test_extra_root_refusals() {
	setup
	mkdir -p "$OUT/dir" "$OUT/store/inner"
	echo file >"$OUT/file"
	run exec --mode workspace-write --workspace "$PWD/ws" --writable / -- touch "$OUT/marker"
	assert_rc 125 # exec: its usage errors are 125, as env(1)'s
	assert_contains "$err" 'writable root "/": "/" would make every file writable, which is danger-full-access, not a sandbox; name the directories instead'
	run exec --mode workspace-write --workspace "$PWD/ws" --writable "$OUT/none" -- true
	assert_rc 125
	assert_contains "$err" "writable root \"$OUT/none\" ($OUT/none): it must be an existing directory: No such file or directory"
	run exec --mode workspace-write --workspace "$PWD/ws" --writable "$OUT/file" -- true
	assert_rc 125
	assert_contains "$err" "writable root \"$OUT/file\" ($OUT/file): not a directory"
	run exec --mode workspace-write --workspace "$PWD/ws" --writable relative/dir -- true
	assert_rc 125
	assert_contains "$err" '--writable "relative/dir": a writable root is an absolute path or starts with ~/'
	printf 'sandbox-policy:\n  writableRoots: [rel]\n' >bad.yaml
	run --config bad.yaml exec --mode workspace-write --workspace "$PWD/ws" -- true
	refused "a relative writableRoots entry"
	assert_contains "$err" 'entries are absolute paths or start with ~/'
	# Inside the store: the policy's own files would be writable. Fails closed.
	run --store "$OUT/store" exec --mode workspace-write --workspace "$PWD/ws" \
		--writable "$OUT/store/inner" -- touch "$OUT/marker"
	assert_rc 125
	assert_contains "$err" "the writable root $OUT/store/inner is or lies inside the store $OUT/store, which the policy rests on"
	# A store inside an extra root is protected there, as in the workspace.
	for b in "${BACKENDS[@]}"; do
		run --store "$OUT/dir/store" exec --backend "$b" --mode workspace-write \
			--workspace "$PWD/ws" --writable "$OUT/dir" -- \
			sh -c "touch '$OUT/dir/ok' && touch '$OUT/dir/store/planted'"
		refused "$b: a write into the store inside an extra root"
		[ -e "$OUT/dir/ok" ] || fail "$b: the extra root was not writable"
		[ ! -e "$OUT/dir/store/planted" ] || fail "$b: the store inside an extra root was written"
		rm -f "$OUT/dir/ok"
	done
	[ ! -e "$OUT/marker" ] || fail "a refused call ran"
}

# sandbox:policy names the extra roots, and only when there are any (DSH's bytes otherwise).
test_context_names_extra_roots() {
	setup
	mkdir -p "$OUT/cache"
	ID=$("$DSB" session new --cwd "$PWD/ws")
	"$DSB" session mode "$ID" workspace-write >/dev/null
	run context --session "$ID"
	assert_rc 0
	assert_contains "$out" "under the session workspace: \"$(cd ws && pwd -P)\". Some platform temporary areas may also be writable."
	assert_not_contains "$out" "writable roots"
	printf 'sandbox-policy:\n  writableRoots: ["%s"]\n' "$OUT/cache" >cfg.yaml
	run --config cfg.yaml context --session "$ID"
	assert_rc 0
	assert_contains "$out" "Some platform temporary areas may also be writable. Such operations may also modify files under these writable roots: \"$OUT/cache\"."
}

# home_for B: a home outside /tmp (bwrap's /tmp is the sandbox's own), with the toolchains'
# caches made, as a user would before granting them.
home_for() {
	HOME=$OUT/home
	# Debian's toolchains (scripts/install-deps.sh), not a version manager's shims.
	PATH=/usr/bin:/bin:$PATH
	export HOME PATH
	mkdir -p "$HOME/.cargo" "$HOME/.cache" "$HOME/go" "$HOME/.npm" "$HOME/.local"
	WS=$OUT/ws
	mkdir -p "$WS"
}

# in_tc B WORKDIR [--writable DIR...] -- ARGV: confined in the toolchains' workspace.
in_tc() {
	local b=$1 workdir=$2
	shift 2
	local opts=()
	while [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	shift
	run exec --backend "$b" --mode workspace-write --workspace "$WS" --workdir "$workdir" \
		"${opts[@]}" -- "$@"
}

# Item 2's examples (docs/user-guide.md): each fails without its cache granted, builds with it.
# Offline: local paths, a local tarball, a local package; nothing leaves the machine.
test_cargo() {
	local b=$1
	setup
	home_for
	(cd "$WS" && /usr/bin/cargo new -q --bin tool)
	in_tc "$b" "$WS/tool" -- /usr/bin/cargo install --offline --path .
	refused "cargo install without ~/.cargo"
	in_tc "$b" "$WS/tool" --writable "$HOME/.cargo" -- /usr/bin/cargo install --offline --path .
	assert_rc 0
	[ -x "$HOME/.cargo/bin/tool" ] || fail "cargo install left no ~/.cargo/bin/tool"
}

test_go() {
	local b=$1
	setup
	home_for
	mkdir -p "$WS/hello"
	printf 'module example.com/hello\n\ngo 1.19\n' >"$WS/hello/go.mod"
	printf 'package main\n\nfunc main() { println("hello") }\n' >"$WS/hello/main.go"
	in_tc "$b" "$WS/hello" -- /usr/bin/go build .
	refused "go build without ~/.cache"
	in_tc "$b" "$WS/hello" --writable "$HOME/.cache" --writable "$HOME/go" -- /usr/bin/go build .
	assert_rc 0
	[ -x "$WS/hello/hello" ] || fail "go build made no binary"
	[ -d "$HOME/.cache/go-build" ] || fail "go build left no cache"
}

test_npm() {
	local b=$1
	setup
	home_for
	mkdir -p "$WS/dep" "$WS/app"
	printf '{"name":"dsbdep","version":"1.0.0"}\n' >"$WS/dep/package.json"
	(cd "$WS/dep" && /usr/bin/npm pack --silent >/dev/null 2>&1)
	printf '{"name":"app","version":"1.0.0"}\n' >"$WS/app/package.json"
	in_tc "$b" "$WS/app" -- /usr/bin/npm install --offline --no-audit --no-fund ../dep/dsbdep-1.0.0.tgz
	refused "npm install without ~/.npm"
	in_tc "$b" "$WS/app" --writable "$HOME/.npm" -- \
		/usr/bin/npm install --offline --no-audit --no-fund ../dep/dsbdep-1.0.0.tgz
	assert_rc 0
	[ -f "$WS/app/node_modules/dsbdep/package.json" ] || fail "npm installed nothing"
}

test_pip() {
	local b=$1
	setup
	home_for
	mkdir -p "$WS/pkg/dsbdemo"
	printf 'from setuptools import setup\nsetup(name="dsbdemo", version="1.0", packages=["dsbdemo"])\n' \
		>"$WS/pkg/setup.py"
	: >"$WS/pkg/dsbdemo/__init__.py"
	local pip=(/usr/bin/python3 -m pip install --user --no-index --no-build-isolation
		--break-system-packages --no-cache-dir .)
	in_tc "$b" "$WS/pkg" -- "${pip[@]}"
	refused "pip install --user without ~/.local"
	in_tc "$b" "$WS/pkg" --writable "$HOME/.local" -- "${pip[@]}"
	assert_rc 0
	HOME=$OUT/home /usr/bin/python3 -c 'import dsbdemo' || fail "dsbdemo is not importable"
}

# A start-up file that is a symlink into the home (a dotfiles manager's): its target is kept
# read-only, and the symlink itself, which no mount can hold, is made again after the call if
# the command replaced it; .git/config as a symlink likewise.
test_symlinked_startup_file() {
	local b=$1
	setup
	local home=$OUT/home
	mkdir -p "$home/dotfiles"
	echo orig >"$home/dotfiles/bashrc"
	ln -s dotfiles/bashrc "$home/.bashrc"
	local plant='rm -f .bashrc && echo "touch /tmp/pwned" >.bashrc && echo replaced'
	# The control: unconfined, the link is replaced by the command's file.
	(cd "$home" && bash -c "$plant") >/dev/null || fail "the control failed"
	[ ! -L "$home/.bashrc" ] || fail "the control did not replace the link"
	rm -f "$home/.bashrc" && ln -s dotfiles/bashrc "$home/.bashrc"
	run policy --mode workspace-write --workspace "$home"
	assert_contains "$out" "$home/.bashrc (startup, restored-after)"
	run bash --backend "$b" --mode workspace-write --workspace "$home" "$plant"
	assert_contains "$out" "[sandbox: $home/.bashrc was restored after the call: it is protected (other programs run it or read it as configuration outside the sandbox, without asking)]"
	[ "$(readlink "$home/.bashrc")" = dotfiles/bashrc ] || fail "the link was not restored"
	assert_streq "$(cat "$home/.bashrc")" orig
	# git's config as a symlink: restored too, so git reads no planted config.
	git init -q "$home/repo"
	mv "$home/repo/.git/config" "$home/repo/config.real"
	ln -s ../config.real "$home/repo/.git/config"
	run bash --backend "$b" --mode workspace-write --workspace "$home/repo" \
		'rm -f .git/config && printf "[core]\n\tfsmonitor = touch /tmp/pwned\n" >.git/config'
	[ "$(readlink "$home/repo/.git/config")" = ../config.real ] ||
		fail "the config link was not restored"
}

# Item 4: with the workspace at a home, no start-up file can be planted; existing ones stay,
# missing ones stay missing (removed after the call, said in the result); git and the rest of
# the home keep working.
test_startup_files() {
	local b=$1 f
	setup
	local home=$OUT/home
	mkdir -p "$home/.ssh"
	echo orig >"$home/.bashrc"
	echo orig >"$home/.ssh/config"
	# shellcheck disable=SC2016 # the planting shell expands it
	local plant='for f in .bashrc .bash_profile .profile .zshrc .gitconfig .envrc .npmrc \
		.mcp.json; do echo "touch /tmp/pwned" >>"$f"; done
		mkdir -p .ssh .claude .codex .vscode .config/git
		echo key >>.ssh/authorized_keys; echo x >.claude/settings.json
		echo x >.codex/config.toml; echo x >.vscode/tasks.json; echo x >.config/git/config
		echo ok >project.txt'
	# The control: unconfined, every one lands.
	(cd "$home" && bash -c "$plant") || fail "the control failed"
	if ! [ -s "$home/.ssh/authorized_keys" ] || ! [ -s "$home/.profile" ]; then
		fail "the control planted nothing"
	fi
	rm -rf "$home" && mkdir -p "$home/.ssh"
	echo orig >"$home/.bashrc"
	echo orig >"$home/.ssh/config"
	run bash --backend "$b" --mode workspace-write --workspace "$home" "$plant"
	assert_contains "$out" "[sandbox: $home/.profile was removed after the call: it is protected (other programs run it or read it as configuration outside the sandbox, without asking)]"
	assert_streq "$(cat "$home/.bashrc")" orig
	assert_streq "$(cat "$home/.ssh/config")" orig
	for f in .bash_profile .profile .zshrc .gitconfig .envrc .npmrc .mcp.json .ssh/authorized_keys \
		.claude .codex .vscode/tasks.json .config/git; do
		[ ! -e "$home/$f" ] || fail "$f was planted"
	done
	[ "$(cat "$home/project.txt")" = ok ] || fail "an ordinary file was not written"
	# git keeps working in such a home.
	run exec --backend "$b" --mode workspace-write --workspace "$home" --workdir "$home" -- sh -c \
		'git init -q repo && cd repo && echo a >a && git add a && git commit -qm a && git log --oneline | wc -l'
	assert_rc 0
	assert_streq "$out" 1
	# fs write is refused too; protectDefaults: false lifts it.
	run fs write --mode workspace-write --workspace "$home" "$home/.profile" <<<x
	refused "fs write of .profile"
	assert_contains "$out" "[sandbox: $home/.profile is protected: other programs run it"
	printf 'sandbox-policy:\n  protectDefaults: false\n' >cfg.yaml
	run --config cfg.yaml exec --backend "$b" --mode workspace-write --workspace "$home" \
		--workdir "$home" -- sh -c 'echo mine >>.profile'
	assert_rc 0
	assert_streq "$(cat "$home/.profile")" mine
}

# An escalation from read-only to workspace-write resolves the granted mode's protections: the
# store inside the workspace stays read-only for the escalated call.
test_escalated_call_keeps_protections() {
	local b=$1
	setup
	printf '#!/bin/sh\ncat >/dev/null\necho allowed-once\n' >answer.sh
	chmod +x answer.sh
	printf 'approval: { answerer: [%s/answer.sh] }\n' "$PWD" >cfg.yaml
	ID=$("$DSB" --store "$PWD/ws/store" session new --cwd "$PWD/ws")
	local log
	log=$(find ws/store -name session.jsonl -path "*/$ID/*")
	[ -f "$log" ] || fail "no log for $ID"
	run --store "$PWD/ws/store" --config cfg.yaml bash --backend "$b" --session "$ID" \
		--sandbox-permissions workspace-write --justification "needs to write" \
		"touch ok.txt; echo '{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"danger-full-access\"}}' >> '${log#ws/}'"
	[ -e ws/ok.txt ] || fail "the escalated call did not write (stdout: $out) (stderr: $err)"
	! grep -q danger-full-access "$log" || fail "the escalated call appended to its own log"
	assert_contains "$out" "Read-only file system"
}

each_backend "one list: every listed root is written through bash and fs write" test_one_list
each_backend "the command's TMPDIR is /tmp" test_tmpdir_is_tmp
t "extra roots: each refusal with its message" test_extra_root_refusals
t "sandbox:policy names the extra roots only when there are any" test_context_names_extra_roots
each_backend "cargo install --path with ~/.cargo granted" test_cargo
each_backend "go build with ~/.cache and ~/go granted" test_go
each_backend "npm install of a tarball with ~/.npm granted" test_npm
each_backend "pip install --user with ~/.local granted" test_pip
each_backend "start-up files of a home workspace cannot be planted" test_startup_files
each_backend "a symlinked start-up file (and .git/config) is restored after the call" \
	test_symlinked_startup_file
each_backend "an escalated call keeps the granted mode's protections" test_escalated_call_keeps_protections
done_testing
