#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of the environment scrub (dsh-compat §6.2 and bash.scrubEnv,
# docs/design/environment.md): a secret in the caller's environment never reaches a command,
# whatever the mode. Each case first shows, as a control, that a plain child outside
# dsh-sandbox does see the variable; then `exec` in danger-full-access and in workspace-write
# must not. DSH's own rule holds whatever the configuration says.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"

LONG_TOKEN=$(printf 'A%.0s' {1..300})_TOKEN

# printenv_in MODE NAME [CONFIG]: `exec -- printenv NAME` under MODE; sets $out, $err, $rc.
printenv_in() {
	local config=()
	[ -z "${3:-}" ] || config=(--config "$3")
	if [ "$1" = danger-full-access ]; then
		run "${config[@]}" exec --mode "$1" -- printenv "$2"
	else
		run "${config[@]}" exec --mode "$1" --workspace "$PWD" -- printenv "$2"
	fi
}

# scrubbed NAME VALUE [CONFIG]: NAME=VALUE reaches a plain child, and no command under dsh-sandbox.
scrubbed() {
	export "$1=$2"
	assert_streq "$(bash -c 'printenv "$1"' _ "$1")" "$2"
	for mode in danger-full-access workspace-write; do
		printenv_in "$mode" "$1" "${3:-}"
		[ "$rc" -eq 1 ] || fail "$1 reached the command under $mode (exit status $rc, stdout: $out, stderr: $err)"
		assert_streq "$out" ""
	done
	unset "$1"
}

# kept NAME VALUE [CONFIG]: NAME=VALUE reaches commands under dsh-sandbox unchanged.
kept() {
	export "$1=$2"
	for mode in danger-full-access workspace-write; do
		printenv_in "$mode" "$1" "${3:-}"
		assert_rc 0
		assert_streq "$out" "$2"
	done
	unset "$1"
}

test_dsh_rule() {
	scrubbed API_KEY k
	scrubbed my_password p
	scrubbed Client_Secret s
	scrubbed GH_TOKEN t
	scrubbed dsh_private x
	# Past the 256 bytes the scrub once copied names into.
	scrubbed "$LONG_TOKEN" long
}

test_default_list() {
	scrubbed GITHUB_PAT ghp_x
	scrubbed NPM_CONFIG__AUTH x
	scrubbed SSH_AUTH_SOCK /tmp/ssh-agent.sock
	scrubbed HTTP_AUTHORIZATION 'Basic x'
	scrubbed GOOGLE_APPLICATION_CREDENTIALS /k.json
	scrubbed SIGNING_PRIVATE_PEM x
	scrubbed SESSION_COOKIE x
	scrubbed HTPASSWD_FILE x
	scrubbed GPG_PASSPHRASE x
	scrubbed DB_PASS x
	scrubbed MYSQL_PWD x
	scrubbed SENTRY_DSN https://k@sentry.example/1
	scrubbed SLACK_WEBHOOK_URL https://hooks.example/x
	scrubbed AZURE_STORAGE_CONNECTION_STRING 'AccountName=a;AccountKey=x'
	scrubbed DATABASE_URL postgres://app:hunter2@db:5432/app
	scrubbed JDBC_URL jdbc:mysql://u:p@h/d
}

test_ordinary_variables_survive() {
	kept GIT_AUTHOR_NAME 'Dev Eloper'
	kept GIT_AUTHOR_EMAIL dev@example.org
	kept OLDPWD /somewhere
	kept DBUS_SESSION_BUS_ADDRESS unix:path=/run/user/0/bus
	kept HTTP_PROXY http://proxy.example:3128
	kept GIT_ASKPASS /usr/bin/true
	kept PGPASSFILE /p
	kept XAUTHORITY /x
	kept LANG C.UTF-8
	kept REPO_URL https://user@host/x
}

test_custom_list_replaces_the_defaults() {
	printf '%s\n' "bash:" "  scrubEnv: ['^STRIPE_', 'ACCOUNT\$', 'value:^sk_live_']" >custom.yaml
	scrubbed STRIPE_ACCOUNT acct custom.yaml
	scrubbed MY_ACCOUNT a custom.yaml
	scrubbed PAYMENT sk_live_abc custom.yaml
	kept ACCOUNT_ID ACCOUNT custom.yaml
	kept GITHUB_PAT ghp_x custom.yaml
	kept DATABASE_URL postgres://app:hunter2@db/app custom.yaml
	# DSH's rule stays.
	scrubbed STRIPE_SECRET s custom.yaml
	scrubbed GH_TOKEN t custom.yaml
	scrubbed "$LONG_TOKEN" long custom.yaml
}

test_empty_list_leaves_dsh_rule() {
	printf 'bash: { scrubEnv: [] }\n' >floor.yaml
	kept GITHUB_PAT ghp_x floor.yaml
	kept SSH_AUTH_SOCK /tmp/ssh-agent.sock floor.yaml
	scrubbed API_KEY k floor.yaml
	scrubbed dsh_private x floor.yaml
	scrubbed "$LONG_TOKEN" long floor.yaml
}

test_invalid_expression() {
	printf 'bash:\n  scrubEnv: ["(^|_)PAT$", "(^|_PAT"]\n' >bad.yaml
	local msg='bad.yaml:2:27: bash.scrubEnv: invalid regular expression "(^|_PAT": Unmatched ( or \('
	run --config bad.yaml policy
	assert_rc 3
	assert_streq "$out" ""
	assert_streq "$err" "dsh-sandbox: $msg"
	# exec keeps every status but 124 and 125 for the command: its own failures are 125.
	run --config bad.yaml exec --mode danger-full-access -- true
	assert_rc 125
	assert_streq "$err" "dsh-sandbox: $msg"
	run --config bad.yaml bash --mode read-only --workspace "$PWD" true
	assert_rc 3
	assert_streq "$out" "Error: $msg"
}

t "DSH's rule: KEY, PASSWORD, SECRET, TOKEN, DSH_*, names of any length" test_dsh_rule
t "the default list scrubs each of its kinds" test_default_list
t "ordinary variables survive the default list" test_ordinary_variables_survive
t "bash.scrubEnv replaces the default list; DSH's rule stays" test_custom_list_replaces_the_defaults
t "scrubEnv: [] leaves DSH's rule alone" test_empty_list_leaves_dsh_rule
t "an invalid expression is a config error with its place and regerror's reason" test_invalid_expression
done_testing
