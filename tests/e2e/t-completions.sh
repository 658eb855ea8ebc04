#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The shell completions: the committed scripts (completions/) are what `dsh-sandbox completions`
# makes from the option table (DSB_UPDATE_GOLDEN=1 rewrites them); the bash one, sourced,
# completes commands, each command's options, subcommands, the values of modes, backends,
# approval policies and presets, directories and programs; zsh parses the zsh one.
set -euo pipefail
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

src=${DSB_SOURCE_ROOT:?}/completions

# golden SHELL FILE: the committed script is the one the table makes.
golden() {
	local made
	made=$("$DSB" completions "$1")
	if [ "${DSB_UPDATE_GOLDEN:-0}" = 1 ]; then
		printf '%s\n' "$made" >"$src/$2"
	fi
	[ -f "$src/$2" ] || fail "$src/$2 is missing: run DSB_UPDATE_GOLDEN=1 meson test t-completions"
	[ "$made" == "$(cat "$src/$2")" ] ||
		fail "$src/$2 is stale: run DSB_UPDATE_GOLDEN=1 meson test t-completions"
}

test_scripts_are_the_tables() {
	golden bash dsh-sandbox.bash
	golden zsh _dsh-sandbox
	run completions fish
	assert_rc 2
	assert_contains "$err" "expected bash or zsh"
}

# offers LINE: what bash completes at the end of LINE (a trailing space starts a new word),
# one a line, sorted.
offers() {
	(
		# shellcheck source=completions/dsh-sandbox.bash
		. "$src/dsh-sandbox.bash"
		read -ra COMP_WORDS <<<"$1"
		[[ $1 != *' ' ]] || COMP_WORDS+=('')
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMPREPLY=()
		_dsh_sandbox
		[ "${#COMPREPLY[@]}" -eq 0 ] || printf '%s\n' "${COMPREPLY[@]}" | sort
	)
}

expect_offers() {
	assert_streq "$(offers "$1")" "$(printf '%s\n' "${@:2}" | sort)"
}

test_bash_commands_and_values() {
	expect_offers 'dsh-sandbox pol' policy
	expect_offers 'dsh-sandbox --config c.yaml p' policy permission probe
	expect_offers 'dsh-sandbox --v' '--verbose
--version'
	# Not `completions`: it is no command of the help's.
	assert_not_contains "$(offers 'dsh-sandbox ')" completions
	expect_offers 'dsh-sandbox policy --mo' --mode
	expect_offers 'dsh-sandbox exec --mode ' read-only workspace-write danger-full-access
	expect_offers 'dsh-sandbox bash --sandbox-permissions d' danger-full-access
	expect_offers 'dsh-sandbox bash --backend l' landlock
	expect_offers 'dsh-sandbox exec --network ' full none allowlist
	expect_offers 'dsh-sandbox serve --network a' allowlist
	expect_offers 'dsh-sandbox session ' new list show log mode approval rm prune
	expect_offers 'dsh-sandbox session mode /tmp/x.jsonl w' workspace-write
	expect_offers 'dsh-sandbox session approval --json x ' ask never
	expect_offers 'dsh-sandbox permission --session x ' read-only workspace-write danger-full-access
	expect_offers 'dsh-sandbox fs e' edit
	expect_offers 'dsh-sandbox fs edit --a' --all
	expect_offers 'dsh-sandbox landlock-run --r' --ro --rw
	expect_offers 'dsh-sandbox completions ' ''
}

test_bash_paths_and_programs() {
	mkdir dir1
	touch dfile
	expect_offers 'dsh-sandbox policy --workspace d' dir1
	expect_offers 'dsh-sandbox --config d' dfile dir1
	expect_offers 'dsh-sandbox fs write d' dfile dir1
	assert_contains "$(offers 'dsh-sandbox exec --mode read-only -- bas')" bash
	# After the program, its arguments are paths.
	expect_offers 'dsh-sandbox exec -- cat d' dfile dir1
}

# --session and a session operand offer the ids of the store the line names (session list,
# quietly), then paths (a log's path is a session too).
test_bash_sessions() {
	mkdir bin st other empty
	ln -s "$DSB" bin/dsh-sandbox
	local id
	id=$("$DSB" --store st session new)
	export PATH="$PWD/bin:$PATH" DSH_SANDBOX_STORE="$PWD/other"
	cd empty
	expect_offers "dsh-sandbox --store ../st exec --session " "$id"
	expect_offers "dsh-sandbox --store ../st exec --session ${id:0:4}" "$id"
	expect_offers "dsh-sandbox --store ../st session show " "$id"
	# bash splits --store=DIR at "=" (COMP_WORDBREAKS).
	expect_offers "dsh-sandbox --store = ../st permission --session " "$id"
	# Without --store: the default store's sessions, here none; a store that is no store: none,
	# and nothing on the terminal.
	expect_offers 'dsh-sandbox exec --session ' ''
	assert_streq "$(offers 'dsh-sandbox --store /nonexistent bash --session ' 2>&1)" ""
	# Paths still, for a log named by its path.
	expect_offers "dsh-sandbox --store ../st exec --session ../s" ../st
}

# Every option a command's --help lists is offered after `--`, and no other.
test_bash_options_are_the_help() {
	local cmd listed
	for cmd in policy session permission context exec bash fs serve probe; do
		listed=$("$DSB" "$cmd" --help | sed -n 's/^  \(--[a-z-]*\).*/\1/p' | sort)
		[ -n "$listed" ] || fail "$cmd --help lists no option"
		case $cmd in
		session) assert_streq "$(offers "dsh-sandbox $cmd new --")" "$listed" ;;
		fs) assert_streq "$(offers "dsh-sandbox $cmd write --")" "$listed" ;;
		*) assert_streq "$(offers "dsh-sandbox $cmd --")" "$listed" ;;
		esac
	done
}

test_zsh_parses() {
	zsh -n "$src/_dsh-sandbox"
}

t "the committed scripts are what the tables make" test_scripts_are_the_tables
t "bash: commands, options and their values" test_bash_commands_and_values
t "bash: directories, files and programs" test_bash_paths_and_programs
t "bash: --session offers the sessions of the store on the line" test_bash_sessions
t "bash: each command's options are those its --help lists" test_bash_options_are_the_help
# zsh is one of the project's test dependencies (scripts/install-deps.sh): missing, this fails.
t "zsh parses the zsh script" test_zsh_parses
done_testing
