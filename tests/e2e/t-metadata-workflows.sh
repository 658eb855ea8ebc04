#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Ordinary developer workflows inside the workspace (issue 16): under Landlock the supervisor
# performs their chmod, chown, utimensat and xattr calls, and they must work there exactly as
# they work unconfined and under bwrap. Each workflow runs first as a control (unconfined, it
# must work: the workflow is sound here), then on both backends: in workspace-write it must
# work and leave on disk what it leaves unconfined (modes, times, the files it makes); in
# read-only it must fail, change nothing, and a plain chmod of a workspace file is refused.
#
#   git checkout  a checkout (made unconfined) whose branches differ in content and mode: to
#                 the other branch and back, the modes on disk follow, `git status` is clean
#                 (git makes each changed file anew with its mode: the workspace's .git, whose
#                 hooks, config and info the sandbox protects, must not get in its way)
#   git init      a new repository in a subdirectory: init (which probes core.filemode with two
#                 chmods), chmod +x, add, commit: the index and the tree record 100755
#   npm install   an offline install of a packed local package with a `bin`: npm chmods the
#                 script and links node_modules/.bin to it
#   node's fs     fs.chmodSync on the main thread, fs.promises.chmod and utimes on one of
#                 libuv's worker threads (npm's own chmod is one of these)
#   make          a rule that chmods +x what it generates, install -m 0755, cp -p, touch a
#                 stamp; the second make has nothing to do (the times are right)
#
# Nothing here reaches the network: npm runs --offline with its registry on the loopback's
# discard port, and git has no remote. The workspace ($PWD/ws) holds HOME and npm's cache.
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

command -v npm >/dev/null || fail "npm is not installed (CI installs nodejs and npm)"
command -v node >/dev/null || fail "node is not installed (CI installs nodejs and npm)"
command -v make >/dev/null || fail "make is not installed"

# git, hermetic, with an identity for every commit; safe.directory for a run whose owner looks
# different from inside.
GIT="git -c init.defaultBranch=main -c user.name=dsb -c user.email=dsb@example.invalid -c safe.directory='*'"

mode_of() {
	stat -c %a "$1"
}

mtime_of() {
	stat -c %Y "$1"
}

# in_ws WHERE SCRIPT: SCRIPT under `set -e` in $PWD/ws, unconfined (WHERE is "control") or
# confined (BACKEND/MODE), with HOME and npm's cache in the workspace and no way to the network;
# $out $err $rc as run().
in_ws() {
	mkdir -p ws
	attempt "$1" "set -eu
		export HOME='$PWD/ws/.home' GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
		export npm_config_cache='$PWD/ws/.npm' npm_config_registry=http://127.0.0.1:9/
		export npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false
		umask 022
		cd '$PWD/ws'
		$2"
}

read_only() {
	[ "${1#*/}" = read-only ]
}

# chmod_refused WHERE FILE: a chmod of FILE (in the workspace) is refused and changes nothing.
chmod_refused() {
	local before
	before=$(mode_of "ws/$2")
	in_ws "$1" "chmod 0700 '$2'"
	refused "chmod of ws/$2 in read-only"
	assert_streq "$(mode_of "ws/$2")" "$before"
}

# --- git checkout ---------------------------------------------------------------------------------

# git_branches: ws is a checkout of main; other has run.sh's other text, tool with other text
# and 0755 (0644 on main), flip with the same text and 0755 (0644 on main).
git_branches() {
	mkdir -p ws
	eval "$GIT init -q ws"
	printf '#!/bin/sh\necho main\n' >ws/run.sh
	printf '#!/bin/sh\necho tool one\n' >ws/tool
	echo same >ws/flip
	chmod 0755 ws/run.sh
	chmod 0644 ws/tool ws/flip
	printf '/.home/\n/.npm/\n' >ws/.gitignore
	eval "$GIT -C ws add ." && eval "$GIT -C ws commit -qm main"
	eval "$GIT -C ws checkout -qb other"
	printf '#!/bin/sh\necho other\n' >ws/run.sh
	printf '#!/bin/sh\necho tool two\n' >ws/tool
	chmod 0755 ws/tool ws/flip
	eval "$GIT -C ws commit -qam other" && eval "$GIT -C ws checkout -q main"
	[ "$(mode_of ws/tool)" = 644 ] || fail "the setup left tool $(mode_of ws/tool)"
}

case_git_checkout() {
	local where=$1
	git_branches
	if read_only "$where"; then
		in_ws "$where" "$GIT checkout -q other"
		refused "git checkout in read-only"
		assert_streq "$(git -C ws symbolic-ref --short HEAD)" main
		assert_streq "$(mode_of ws/tool)" 644
		assert_streq "$(cat ws/run.sh)" "$(printf '#!/bin/sh\necho main')"
		chmod_refused "$where" tool
		return
	fi
	in_ws "$where" "$GIT checkout -q other
		./run.sh; ./tool; stat -c '%a %n' run.sh tool flip; $GIT status --porcelain
		echo ---
		$GIT checkout -q main
		./run.sh; stat -c '%a %n' run.sh tool flip; $GIT status --porcelain
		$GIT symbolic-ref --short HEAD"
	assert_rc 0
	assert_streq "$out" "other
tool two
755 run.sh
755 tool
755 flip
---
main
755 run.sh
644 tool
644 flip
main"
	assert_streq "$(mode_of ws/tool)" 644
	assert_streq "$(mode_of ws/flip)" 644
	assert_streq "$(eval "$GIT -C ws status --porcelain")" ""
}

# --- git init, add, commit ------------------------------------------------------------------------

case_git_init() {
	local where=$1
	mkdir -p ws
	printf '#!/bin/sh\necho fresh\n' >ws/hello
	chmod 0644 ws/hello
	if read_only "$where"; then
		in_ws "$where" "mkdir fresh && cd fresh && $GIT init -q"
		refused "git init in read-only"
		[ ! -e ws/fresh ] || fail "ws/fresh was made"
		chmod_refused "$where" hello
		return
	fi
	# git init sets core.filemode to true only when its two chmods of .git/config landed.
	in_ws "$where" "mkdir fresh && cd fresh && $GIT init -q && $GIT config core.filemode
		cp ../hello . && chmod +x hello && ./hello
		$GIT add hello && $GIT commit -qm one && $GIT ls-files -s hello | cut -c1-6
		$GIT status --porcelain"
	assert_rc 0
	assert_streq "$out" "true
fresh
100755"
	[ -x ws/fresh/hello ] || fail "ws/fresh/hello is not executable"
	assert_streq "$(eval "$GIT -C ws/fresh log --format=%s")" one
	assert_streq "$(eval "$GIT -C ws/fresh ls-tree HEAD hello" | cut -c1-6)" 100755
	assert_streq "$(eval "$GIT -C ws/fresh status --porcelain")" ""
}

# --- npm install ----------------------------------------------------------------------------------

# npm_package: ws/dsb-hello-1.0.0.tgz, packed unconfined from ws/pkg (its bin cli.js is 0644 in
# the tree), and the project ws/proj that installs it.
npm_package() {
	mkdir -p ws/pkg ws/proj
	printf '{"name":"dsb-hello","version":"1.0.0","bin":{"dsb-hello":"cli.js"}}\n' >ws/pkg/package.json
	printf '#!/usr/bin/env node\nconsole.log("hello from dsb");\n' >ws/pkg/cli.js
	chmod 0644 ws/pkg/cli.js
	printf '{"name":"proj","version":"1.0.0","private":true}\n' >ws/proj/package.json
	in_ws control "cd pkg && npm pack --silent --pack-destination .. >/dev/null"
	assert_rc 0
	[ -f ws/dsb-hello-1.0.0.tgz ] || fail "npm pack made no tarball: $(ls -A ws)"
}

case_npm_install() {
	local where=$1
	npm_package
	if read_only "$where"; then
		in_ws "$where" "cd proj && npm install --offline --no-audit --no-fund ../dsb-hello-1.0.0.tgz"
		refused "npm install in read-only"
		[ ! -e ws/proj/node_modules ] || fail "node_modules was made: $(ls -AR ws/proj/node_modules)"
		assert_streq "$(cat ws/proj/package.json)" '{"name":"proj","version":"1.0.0","private":true}'
		chmod_refused "$where" pkg/cli.js
		return
	fi
	in_ws "$where" "cd proj && npm install --offline --no-audit --no-fund ../dsb-hello-1.0.0.tgz >&2
		node_modules/.bin/dsb-hello; stat -c %a node_modules/dsb-hello/cli.js"
	assert_rc 0
	assert_streq "$out" "hello from dsb
755"
	local bin=ws/proj/node_modules/.bin/dsb-hello
	[ -L "$bin" ] || fail "$bin is not a symlink: $(ls -lA ws/proj/node_modules/.bin)"
	assert_streq "$(readlink "$bin")" ../dsb-hello/cli.js
	[ -x "$bin" ] || fail "$bin is not executable: $(ls -lL "$bin")"
	assert_streq "$("$bin")" "hello from dsb"
	assert_file_has_content ws/proj/package.json '"dsb-hello": *"file:\.\./dsb-hello-1\.0\.0\.tgz"'
	assert_file_has_content ws/proj/package-lock.json '"resolved": *"file:\.\./dsb-hello-1\.0\.0\.tgz"'
}

# --- node's fs, from libuv's worker threads ------------------------------------------------------

# npm's chmod above is node's fs.promises.chmod, which libuv runs on a worker thread: the call
# reaches the supervisor from a thread that is not its process's leader. The same calls here
# without npm: fs.chmodSync on the main thread, fs.promises.chmod and utimes on a worker.
NODE_FS='
const fs = require("fs");
fs.chmodSync("main.sh", 0o755);
(async () => {
	await fs.promises.chmod("worker.sh", 0o755);
	await fs.promises.utimes("worker.sh", new Date("2002-02-02T00:00:00Z"), new Date("2002-02-02T00:00:00Z"));
	console.log("done");
})().catch((e) => { console.error(e.message); process.exit(1); });
'

case_node_fs() {
	local where=$1
	mkdir -p ws
	: >ws/main.sh
	: >ws/worker.sh
	chmod 0644 ws/main.sh ws/worker.sh
	if read_only "$where"; then
		in_ws "$where" "node -e '$NODE_FS'"
		refused "node's chmod in read-only"
		assert_streq "$(mode_of ws/main.sh)" 644
		assert_streq "$(mode_of ws/worker.sh)" 644
		return
	fi
	in_ws "$where" "node -e '$NODE_FS'"
	assert_rc 0
	assert_streq "$out" "done"
	assert_streq "$(mode_of ws/main.sh)" 755
	assert_streq "$(mode_of ws/worker.sh)" 755
	assert_streq "$(mtime_of ws/worker.sh)" "$(date -d 2002-02-02T00:00:00Z +%s)"
}

# --- make -----------------------------------------------------------------------------------------

# make_project: ws/mk, whose make generates build/hello (chmod +x), installs it (install -m
# 0755), copies it (cp -p: mode, times and owner) and touches a stamp dated 2001 beforehand.
make_project() {
	mkdir -p ws/mk
	cat >ws/mk/Makefile <<'EOF'
all: bin/hello bin/hello.copy stamp

build/hello: hello.sh.in
	mkdir -p build
	sed 's/@WHO@/make/' hello.sh.in >$@
	chmod +x $@

bin/hello: build/hello
	mkdir -p bin
	install -m 0755 build/hello $@

bin/hello.copy: build/hello
	mkdir -p bin
	cp -p build/hello $@

stamp: bin/hello bin/hello.copy
	touch $@
EOF
	printf '#!/bin/sh\necho hello from @WHO@\n' >ws/mk/hello.sh.in
	chmod 0640 ws/mk/hello.sh.in
	touch -d 2001-01-01 ws/mk/stamp
}

case_make() {
	local where=$1
	make_project
	if read_only "$where"; then
		in_ws "$where" "make -C mk"
		refused "make in read-only"
		[ ! -e ws/mk/build ] || fail "build/ was made"
		assert_streq "$(mtime_of ws/mk/stamp)" "$(date -d 2001-01-01 +%s)"
		chmod_refused "$where" mk/hello.sh.in
		return
	fi
	local start
	start=$(date +%s)
	in_ws "$where" "cd mk && make --no-print-directory && echo --- && make --no-print-directory &&
		echo --- && bin/hello && bin/hello.copy && stat -c %a build/hello bin/hello bin/hello.copy"
	assert_rc 0
	local first=${out%%---*} rest=${out#*---}
	local second=${rest%%---*} last=${rest#*---}
	assert_contains "$first" "chmod +x build/hello"
	assert_contains "$first" "install -m 0755 build/hello bin/hello"
	assert_contains "$first" "cp -p build/hello bin/hello.copy"
	assert_contains "$first" "touch stamp"
	assert_contains "$second" "Nothing to be done for 'all'"
	assert_not_contains "$second" "build/hello"
	assert_streq "$last" "
hello from make
hello from make
755
755
755"
	# cp -p kept the time to the nanosecond; touch moved the stamp from 2001 to now.
	assert_streq "$(stat -c %y ws/mk/bin/hello.copy)" "$(stat -c %y ws/mk/build/hello)"
	[ "$(mtime_of ws/mk/stamp)" -ge "$start" ] || fail "the stamp kept $(stat -c %y ws/mk/stamp)"
	# And unconfined, make agrees that everything is up to date.
	make -q -C ws/mk || fail "make -q: ws/mk is not up to date after the confined make"
}

for spec in \
	"git checkout to a branch whose files differ in content and mode, and back|case_git_checkout" \
	"git init, chmod +x, add, commit in a new repository|case_git_init" \
	"npm install --offline of a local package with a bin|case_npm_install" \
	"node: fs.chmodSync, then fs.promises.chmod and utimes (a worker thread)|case_node_fs" \
	"make: chmod +x, install -m 0755, cp -p, touch, then nothing to do|case_make"; do
	t "control: ${spec%%|*}" "${spec#*|}" control
	each_confined "${spec%%|*}" "${spec#*|}"
done

done_testing
