#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of `dsh-sandbox policy`: the resolved mode, workspace root and writable roots
# (dsh-compat §2, §4.1), their sources (flag, DSH_PERMISSION_MODE, config file), and usage errors.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

# Every test starts from a known environment: no config, no env mode, TMPDIR=/tmp, and a store
# of its own (a session's private /tmp in the caller's store is a protected path).
unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export DSH_SANDBOX_STORE="$TEST_TMP/store"
export TMPDIR=/tmp
SRC=${DSB_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
EXAMPLE_CONFIG=$SRC/examples/dsh-sandbox.yaml
MODES='(accepted: read-only, workspace-write, danger-full-access)'

test_spec_roots_json() {
	run policy --mode workspace-write --workspace /some/dir --json
	assert_rc 0
	# The directory a default configuration would be looked for in lies in /tmp here: a
	# workspace-write command could plant one there, so it is protected (bwrap's /tmp is private).
	local cfgdir="$XDG_CONFIG_HOME/dsh-sandbox"
	# (The store too, where HOME lies in /tmp, as for the unprivileged run.)
	assert_contains "$out" '{"mode":"workspace-write","workspaceRoot":"/some/dir","writableRoots":["/some/dir","/tmp"],"protectedPaths":['
	assert_contains "$out" '{"path":"'"$cfgdir"'","kind":"config","exists":false,"enforcement":"private-tmp"}],"tmp":"call","network":'
	assert_streq "$err" ""
}

test_default_is_read_only_under_cwd() {
	mkdir ws
	cd ws
	run policy --json
	assert_rc 0
	out=$(without_limits "$out")
	assert_streq "$out" "{\"mode\":\"read-only\",\"workspaceRoot\":\"$(pwd -P)\",\"writableRoots\":[],\"protectedPaths\":[],\"tmp\":\"host\",\"network\":{\"access\":\"full\",\"allow\":[],\"deny\":[],\"allowPrivate\":[],\"proxyPort\":null,\"enforcement\":\"unrestricted\"}}"
}

test_text_output() {
	run policy --mode workspace-write --workspace /w
	assert_rc 0
	assert_contains "$out" "mode: workspace-write
workspaceRoot: /w
writableRoots:
  /w
  /tmp
protectedPaths:
"
	assert_contains "$out" "
  $XDG_CONFIG_HOME/dsh-sandbox (config, private-tmp)"
	run policy --mode danger-full-access --workspace /w
	assert_streq "$out" "mode: danger-full-access
workspaceRoot: /w
writableRoots: (none)
/tmp: the host's
network: full (unrestricted)"
	# danger-full-access is never restricted, whatever the network access asked.
	run policy --mode danger-full-access --workspace /w --network none
	assert_contains "$out" "network: full (unrestricted)"
	run policy --mode read-only --workspace /w --network none
	assert_contains "$out" "network: none (namespace)"
}

test_invalid_mode_flag() {
	run policy --mode yolo
	assert_rc 2
	assert_streq "$out" ""
	assert_streq "$err" "dsh-sandbox: --mode: invalid mode \"yolo\" $MODES"
}

test_invalid_env_mode() {
	DSH_PERMISSION_MODE=yolo run policy
	assert_rc 3
	assert_streq "$out" ""
	assert_streq "$err" "dsh-sandbox: DSH_PERMISSION_MODE: invalid mode \"yolo\" $MODES"
	DSH_PERMISSION_MODE='' run policy
	assert_rc 3
	assert_contains "$err" 'DSH_PERMISSION_MODE: invalid mode ""'
}

test_invalid_config_mode() {
	printf 'sandbox-policy:\n  mode: yolo\n' >cfg.yaml
	run --config cfg.yaml policy
	assert_rc 3
	assert_streq "$out" ""
	assert_contains "$err" "cfg.yaml:2:9: sandbox-policy.mode: invalid mode \"yolo\" $MODES"
}

test_invalid_config_network() {
	printf 'network:\n  access: some\n' >cfg.yaml
	run --config cfg.yaml policy
	assert_rc 3
	assert_streq "$out" ""
	assert_contains "$err" 'cfg.yaml:2:11: network.access: invalid access "some" (accepted: full, none, allowlist)'
	printf 'network:\n  allow: [ok.test, "*foo"]\n' >cfg.yaml
	run --config cfg.yaml policy
	assert_rc 3
	assert_contains "$err" 'cfg.yaml:2:20: network.allow: invalid host pattern "*foo"'
	printf 'network:\n  access: allowlist\n' >cfg.yaml
	run --config cfg.yaml policy
	assert_rc 3
	assert_contains "$err" 'cfg.yaml:2:11: network.access: allowlist needs at least one allowed host'
	# The control: the same file with a host allowed loads.
	printf 'network:\n  access: allowlist\n  allow: [ok.test]\n' >cfg.yaml
	run --config cfg.yaml policy
	assert_rc 0
}

test_precedence_flag_env_config() {
	printf 'sandbox-policy: { mode: workspace-write, workspaceRoot: /from/config }\n' >cfg.yaml
	run policy --config cfg.yaml --json
	assert_rc 0
	assert_contains "$out" '"mode":"workspace-write","workspaceRoot":"/from/config"'
	DSH_PERMISSION_MODE=danger-full-access run policy --config cfg.yaml --json
	assert_contains "$out" '"mode":"danger-full-access","workspaceRoot":"/from/config"'
	DSH_PERMISSION_MODE=danger-full-access run policy --config cfg.yaml --mode read-only \
		--workspace /from/flag --json
	out=$(without_limits "$out")
	assert_streq "$out" '{"mode":"read-only","workspaceRoot":"/from/flag","writableRoots":[],"protectedPaths":[],"tmp":"host","network":{"access":"full","allow":[],"deny":[],"allowPrivate":[],"proxyPort":null,"enforcement":"unrestricted"}}'
}

test_config_from_env_and_xdg() {
	mkdir -p xdg/dsh-sandbox
	printf 'sandbox-policy: { mode: danger-full-access }\n' >xdg/dsh-sandbox/config.yaml
	XDG_CONFIG_HOME=$PWD/xdg run policy --json
	assert_contains "$out" '"mode":"danger-full-access"'
	printf 'sandbox-policy: { mode: workspace-write }\n' >other.yaml
	XDG_CONFIG_HOME=$PWD/xdg DSH_SANDBOX_CONFIG=$PWD/other.yaml run policy --json
	assert_contains "$out" '"mode":"workspace-write"'
	# --config wins over both.
	printf 'sandbox-policy: { mode: read-only }\n' >flag.yaml
	XDG_CONFIG_HOME=$PWD/xdg DSH_SANDBOX_CONFIG=$PWD/other.yaml run --config flag.yaml policy --json
	assert_contains "$out" '"mode":"read-only"'
}

test_missing_config_file() {
	run --config does-not-exist.yaml policy
	assert_rc 3
	assert_contains "$err" "does-not-exist.yaml"
	assert_contains "$err" "No such file or directory"
	assert_streq "$out" ""
}

test_workspace_symlink_dotdot_is_physical() {
	mkdir -p physical/child lexical
	ln -s "$PWD/physical/child" lexical/link
	run policy --workspace lexical/link/.. --json
	assert_rc 0
	assert_contains "$out" "\"workspaceRoot\":\"$(pwd -P)/physical\""
}

test_workspace_missing_is_lexical() {
	run policy --mode workspace-write --workspace ./gone/../still-gone/./x/ --json
	assert_rc 0
	assert_contains "$out" "\"workspaceRoot\":\"$(pwd -P)/still-gone/x\""
	assert_contains "$out" "\"writableRoots\":[\"$(pwd -P)/still-gone/x\",\"/tmp\"]"
}

test_empty_workspace_is_an_error() {
	run policy --workspace ''
	assert_rc 2
	assert_contains "$err" "workspace root: empty path"
}

# TMPDIR is no writable root (docs/design/paths.md): a confined command's TMPDIR is /tmp.
test_tmpdir_is_no_root() {
	mkdir mytmp ws cache
	TMPDIR=$PWD/mytmp/ TMP=$PWD/mytmp run policy --mode workspace-write --workspace ws --json
	assert_rc 0
	assert_contains "$out" "\"writableRoots\":[\"$(pwd -P)/ws\",\"/tmp\"]"
	# Extra roots follow, canonical and once each.
	run policy --mode workspace-write --workspace ws --writable "$PWD/cache/" \
		--writable "$PWD/./cache" --json
	assert_rc 0
	assert_contains "$out" "\"writableRoots\":[\"$(pwd -P)/ws\",\"/tmp\",\"$(pwd -P)/cache\"]"
	# Spelled through a symlink a command could repoint (here under /tmp): refused.
	ln -s "$PWD/cache" ws/cache-link
	run policy --mode workspace-write --workspace ws --writable "$PWD/ws/cache-link" --json
	assert_rc 125
	assert_contains "$err" "the writable root $PWD/ws/cache-link leads through the symlink"
	# shellcheck disable=SC2016 # the confined shell expands it
	TMPDIR=$PWD/mytmp run exec --mode workspace-write --workspace ws -- sh -c 'echo "$TMPDIR"'
	assert_rc 0
	assert_streq "$out" /tmp
}

test_json_escapes_awkward_paths() {
	run policy --workspace "/a\"b\\c
d	e" --json
	assert_rc 0
	out=$(without_limits "$out")
	assert_streq "$out" '{"mode":"read-only","workspaceRoot":"/a\"b\\c\nd\te","writableRoots":[],"protectedPaths":[],"tmp":"host","network":{"access":"full","allow":[],"deny":[],"allowPrivate":[],"proxyPort":null,"enforcement":"unrestricted"}}'
	run policy --workspace "$(printf '/caf\xc3\xa9/\x01/\xff')" --json
	out=$(without_limits "$out")
	assert_streq "$out" "$(printf '{"mode":"read-only","workspaceRoot":"/caf\xc3\xa9/\\u0001/\xef\xbf\xbd","writableRoots":[],"protectedPaths":[],"tmp":"host","network":{"access":"full","allow":[],"deny":[],"allowPrivate":[],"proxyPort":null,"enforcement":"unrestricted"}}')"
}

test_usage_errors() {
	run policy --bogus
	assert_rc 2
	assert_contains "$err" "dsh-sandbox: policy: unknown option '--bogus'"
	assert_contains "$err" "usage: dsh-sandbox [--config FILE] policy"
	run policy --mode
	assert_rc 2
	assert_contains "$err" "option '--mode' needs a value"
	run policy extra
	assert_rc 2
	assert_contains "$err" "unexpected argument 'extra'"
	run frobnicate
	assert_rc 2
	assert_contains "$err" "unknown command 'frobnicate'"
	run
	assert_rc 2
	assert_contains "$err" "no command given"
	run --nope policy
	assert_rc 2
	assert_contains "$err" "unknown option '--nope'"
}

test_help_and_version() {
	run --help
	assert_rc 0
	assert_contains "$out" "usage: dsh-sandbox"
	assert_contains "$out" "policy [--session ID|PATH] [--mode MODE]"
	run policy --help
	assert_rc 0
	assert_contains "$out" "usage: dsh-sandbox [--config FILE] policy"
	run --version
	assert_rc 0
	assert_streq "$out" "dsh-sandbox 0.1.0"
}

test_write_error_is_reported() {
	rc=0
	"$DSB" policy --json >/dev/full 2>err.txt || rc=$?
	[ "$rc" -eq 1 ] || fail "exit status $rc, expected 1"
	assert_file_has_content err.txt "No space left on device"
}

# examples/dsh-sandbox.yaml, installed as the documented example, sets every key to its default:
# it loads, and the policy, the presets and the environment scrub come out as with no file.
test_example_config_is_the_defaults() {
	local example=$EXAMPLE_CONFIG
	mkdir ws
	cd ws
	run policy --json
	local want=$out
	run --config "$example" policy --json
	assert_rc 0
	assert_streq "$out" "$want"
	run permission
	want=$out
	run permission --config "$example"
	assert_rc 0
	assert_streq "$out" "$want"
	# Names each default scrubEnv entry withholds, one kept, and a URL with a password.
	local script='env | grep -E "^(GH_PAT|OAUTH_X|MY_CREDENTIAL|A_PRIVATE|COOKIE_JAR|DB_PASSWD|KEY_PASSPHRASE|X_PASS|DB_PWD|SENTRY_DSN|SLACK_WEBHOOK|CONNECTIONSTRING|URLV|KEPT)=" | sort'
	export GH_PAT=1 OAUTH_X=1 MY_CREDENTIAL=1 A_PRIVATE=1 COOKIE_JAR=1 DB_PASSWD=1 \
		KEY_PASSPHRASE=1 X_PASS=1 DB_PWD=1 SENTRY_DSN=1 SLACK_WEBHOOK=1 CONNECTIONSTRING=1 \
		URLV=https://u:p@example.org KEPT=1
	run bash --mode danger-full-access "$script"
	assert_streq "$out" "KEPT=1"
	run --config "$example" bash --mode danger-full-access "$script"
	assert_rc 0
	assert_streq "$out" "KEPT=1"
	# workspace-write, where the start-up files (protectDefaults) and the writable roots show:
	# the same file name both times, as the configuration itself is a protected path.
	touch .bashrc
	: >../config.yaml
	run --config ../config.yaml policy --mode workspace-write --json
	assert_rc 0
	want=$out
	cp "$example" ../config.yaml
	run --config ../config.yaml policy --mode workspace-write --json
	assert_rc 0
	assert_streq "$out" "$want"
}

# Every key dsh-sandbox.yaml(5) documents is in the example, set or shown commented out.
test_example_config_has_every_key() {
	local key keys
	keys=$(sed -n 's/^\*\([a-zA-Z]*\)\* (.*/\1/p' "$SRC/man/dsh-sandbox.yaml.5.scd")
	[ "$(wc -l <<<"$keys")" -gt 20 ] || fail "too few keys read from the man page: $keys"
	for key in $keys processes memoryBytes cpuSeconds tmpBytes fileBytes; do
		grep -qE "^ *(# )?$key:" "$EXAMPLE_CONFIG" || fail "$key is not in the example"
	done
}

# docs/operations.md shows the example as it is (scripts/sync-docs.sh copies it), so the
# outline a reader copies loads and holds the defaults.
test_operations_outline_is_the_example() {
	awk '/^<!-- examples\/dsh-sandbox.yaml, copied by scripts\/sync-docs.sh -->$/ { mark = 1; next }
		mark && /^```yaml$/ { inside = 1; next }
		inside && /^```$/ { exit }
		inside' "$SRC/docs/operations.md" >outline.yaml
	cmp -s outline.yaml "$EXAMPLE_CONFIG" ||
		fail "docs/operations.md's outline is not examples/dsh-sandbox.yaml: run scripts/sync-docs.sh"
	run policy --json
	local want=$out
	run --config outline.yaml policy --json
	assert_rc 0
	assert_streq "$out" "$want"
}

t "policy --mode workspace-write --workspace /some/dir --json prints the spec's roots" test_spec_roots_json
t "the default is read-only under the physical cwd" test_default_is_read_only_under_cwd
t "text output lists the roots" test_text_output
t "an invalid --mode names the three modes, exit 2" test_invalid_mode_flag
t "an invalid DSH_PERMISSION_MODE names the three modes, exit 3" test_invalid_env_mode
t "an invalid config mode names file, line, column and the three modes" test_invalid_config_mode
t "invalid network keys name file, line and column; an allowlist needs a host" test_invalid_config_network
t "--mode beats DSH_PERMISSION_MODE beats the config" test_precedence_flag_env_config
t "config from DSH_SANDBOX_CONFIG and XDG_CONFIG_HOME, --config first" test_config_from_env_and_xdg
t "a missing --config file is an error naming it" test_missing_config_file
t "--workspace link/.. resolves where chdir lands" test_workspace_symlink_dotdot_is_physical
t "a missing --workspace keeps its lexical spelling" test_workspace_missing_is_lexical
t "an empty --workspace is a usage error" test_empty_workspace_is_an_error
t "TMPDIR is no root; extra roots follow, canonical" test_tmpdir_is_no_root
t "JSON output escapes as JSON.stringify" test_json_escapes_awkward_paths
t "usage errors print a reason and the usage, exit 2" test_usage_errors
t "--help and --version" test_help_and_version
t "a failed write to stdout is an error" test_write_error_is_reported
t "the example configuration loads and holds the defaults" test_example_config_is_the_defaults
t "the example configuration has every key of dsh-sandbox.yaml(5)" test_example_config_has_every_key
t "docs/operations.md's outline is the example configuration, and loads" \
	test_operations_outline_is_the_example
done_testing
