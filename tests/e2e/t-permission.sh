#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end tests of permission presets through the CLI: `session new` pins the default preset
# (dsh-compat §8.6), and `permission` is DSH's /permission command (§8.7, §11.28), logged as DSH's
# command runtime logs it: command/run, the knob events, command/done.
# shellcheck source=tests/e2e/libtest.sh
. "$(dirname "$0")/libtest.sh"

unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG TMP TEMP XDG_STATE_HOME
export XDG_CONFIG_HOME="$TEST_TMP/no-xdg-config"
export TMPDIR=/tmp
export DSH_SANDBOX_STORE="$TEST_TMP/store"
NAMES='read-only, workspace-write, danger-full-access'

new_session() {
	"$DSB" session new --cwd "$PWD"
}

# The session's events with time, commandId and random ids made comparable.
events() {
	"$DSB" session log "$1" | sed -E 's/"time":[0-9]+/"time":T/;
		s/"commandId":"cmd-[0-9a-f]{8}-1"/"commandId":"C"/;
		s/"id":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"/"id":"U"/'
}

# events from index $2 on.
events_from() {
	events "$1" | tail -n +"$(($2 + 1))"
}

ev() { # ev SEQ TYPE DATA
	printf '{"type":"%s","seq":%s,"time":T,"data":%s}' "$2" "$1" "$3"
}

pinned() { # pinned SEQ PRESET MODE POLICY
	ev "$1" permission/preset "{\"preset\":\"$2\"}"
	echo
	ev $(($1 + 1)) sandbox/mode "{\"mode\":\"$3\"}"
	echo
	ev $(($1 + 2)) approval/policy "{\"policy\":\"$4\"}"
}

run_event() { # run_event SEQ ARGS
	ev "$1" command/run "{\"commandId\":\"C\",\"name\":\"permission\",\"args\":\"$2\",\"source\":{\"kind\":\"user\"}}"
}

done_event() { # done_event SEQ KIND TEXT (TEXT already JSON-escaped)
	ev "$1" command/done "{\"commandId\":\"C\",\"kind\":\"$2\",\"text\":\"$3\"}"
}

notice() { # notice SEQ FROM TO
	printf '{"type":"user/message","seq":%s,"time":T,"data":{"content":[{"type":"text","text":"The approval policy changed from \\"%s\\" to \\"%s\\" (changed by the user)."}],"source":{"kind":"plugin","plugin":"user-approval"},"role":"user","id":"U"},"surfaceOp":"append"}' "$1" "$2" "$3"
}

test_new_pins_the_default() {
	local id
	id=$(new_session)
	assert_streq "$(events "$id")" "$(pinned 0 read-only read-only ask)"
	run session show "$id"
	assert_contains "$out" "mode: read-only (session)"
	assert_contains "$out" "approvalPolicy: ask (session)"
	assert_contains "$out" "preset: read-only"
}

test_bare_reports_current() {
	local id
	id=$(new_session)
	run permission --session "$id"
	assert_rc 0
	assert_streq "$out" "current preset read-only (available: $NAMES)"
	assert_streq "$err" ""
	# A bare command logs args "" (parseCommand's rawInput), and nothing else changes.
	assert_streq "$(events_from "$id" 3)" "$(run_event 3 "")
$(done_event 4 success "current preset read-only (available: $NAMES)")"
	# Both halves carry the same DSH-shaped commandId.
	local ids
	ids=$("$DSB" session log "$id" | grep -o '"commandId":"[^"]*"' | sort -u)
	[[ "$ids" =~ ^\"commandId\":\"cmd-[0-9a-f]{8}-1\"$ ]] || fail "commandIds: $ids"
}

test_switch_logs_the_knobs_between_the_pair() {
	local id
	id=$(new_session)
	run permission --session "$id" danger-full-access
	assert_rc 0
	assert_streq "$out" "preset danger-full-access"
	assert_streq "$(events_from "$id" 3)" "$(run_event 3 " danger-full-access")
$(pinned 4 danger-full-access danger-full-access never)
$(notice 7 ask never)
$(done_event 8 success "preset danger-full-access")"
	run permission --session "$id"
	assert_streq "$out" "current preset danger-full-access (available: $NAMES)"
	run policy --session "$id" --json
	assert_rc 0
	assert_contains "$out" '"mode":"danger-full-access"'
	run session show "$id"
	assert_contains "$out" "approvalPolicy: never (session)"
}

test_switch_repairs_only_what_differs() {
	local id
	id=$(new_session)
	run permission --session "$id" workspace-write
	assert_rc 0
	# Same approval policy: no approval event and no notice.
	assert_streq "$(events_from "$id" 3)" "$(run_event 3 " workspace-write")
$(ev 4 permission/preset '{"preset":"workspace-write"}')
$(ev 5 sandbox/mode '{"mode":"workspace-write"}')
$(done_event 6 success "preset workspace-write")"
}

test_selecting_current_appends_only_the_pair() {
	local id
	id=$(new_session)
	run permission --session "$id" read-only
	assert_rc 0
	assert_streq "$out" "preset read-only"
	assert_streq "$(events_from "$id" 3)" "$(run_event 3 " read-only")
$(done_event 4 success "preset read-only")"
}

test_unknown_preset() {
	local id
	id=$(new_session)
	run permission --session "$id" yolo
	assert_rc 2
	assert_streq "$out" ""
	assert_streq "$err" "dsh-sandbox: unknown preset \"yolo\" (available: $NAMES)"
	assert_streq "$(events_from "$id" 3)" "$(run_event 3 " yolo")
$(done_event 4 error "unknown preset \\\"yolo\\\" (available: $NAMES)")"
	# "custom" is a derived state, never a target.
	run permission --session "$id" custom
	assert_rc 2
	assert_contains "$err" 'unknown preset "custom"'
	run policy --session "$id" --json
	assert_contains "$out" '"mode":"read-only"'
}

test_input_is_trimmed_but_logged_verbatim() {
	local id
	id=$(new_session)
	run permission --session "$id" " workspace-write	"
	assert_rc 0
	assert_streq "$out" "preset workspace-write"
	assert_streq "$(events_from "$id" 3 | head -n 1)" "$(run_event 3 "  workspace-write\\t")"
}

test_table_without_session() {
	run permission
	assert_rc 0
	assert_streq "$out" "read-only: sandbox read-only, approval ask
workspace-write: sandbox workspace-write, approval ask
  Write inside the workspace and permitted temporary directories; wider retries require approval.
danger-full-access: sandbox danger-full-access, approval never
  Full file access without approval prompts.
default preset read-only"
	DSH_PERMISSION_MODE=workspace-write run permission
	assert_contains "$out" "default preset workspace-write"
}

# The package's own two-entry table, with the executor default it matches.
package_config() {
	cat >package.yaml <<'EOF'
sandbox-policy: {mode: workspace-write}
permission:
  presets:
    workspace-write: {sandbox: workspace-write, approval: ask, name: Workspace}
    danger-full-access: {sandbox: danger-full-access, approval: never}
EOF
}

test_configured_table() {
	package_config
	run permission --config package.yaml
	assert_rc 0
	assert_streq "$out" 'workspace-write: sandbox workspace-write, approval ask, name "Workspace"
danger-full-access: sandbox danger-full-access, approval never
default preset workspace-write'
	local id
	id=$("$DSB" --config package.yaml session new --cwd "$PWD")
	assert_streq "$(events "$id")" "$(pinned 0 workspace-write workspace-write ask)"
	run permission --config package.yaml --session "$id"
	assert_streq "$out" "current preset workspace-write (available: workspace-write, danger-full-access)"
	run permission --config package.yaml --session "$id" yolo
	assert_rc 2
	assert_streq "$err" 'dsh-sandbox: unknown preset "yolo" (available: workspace-write, danger-full-access)'
	# Under the deployment's table the same log derives from its knobs: the bundle matches.
	run permission --session "$id"
	assert_streq "$out" "current preset workspace-write (available: $NAMES)"
}

test_no_default_preset_creates_nothing() {
	export DSH_SANDBOX_STORE=$PWD/own-store
	cat >never.yaml <<'EOF'
approval: {policy: never}
EOF
	run --config never.yaml session new --cwd "$PWD"
	assert_rc 3
	assert_streq "$err" "dsh-sandbox: permission: composed sandbox and approval defaults match no preset; configure defaultPreset explicitly"
	run session list
	assert_streq "$out" ""
	run permission --config never.yaml
	assert_rc 3
	assert_contains "$err" "configure defaultPreset explicitly"
	# An explicit default makes it valid: the session is pinned to it.
	printf 'approval: {policy: never}\npermission: {defaultPreset: danger-full-access}\n' >explicit.yaml
	local id
	id=$("$DSB" --config explicit.yaml session new --cwd "$PWD")
	assert_streq "$(events "$id")" "$(pinned 0 danger-full-access danger-full-access never)"
}

test_usage_errors() {
	run permission workspace-write
	assert_rc 2
	assert_contains "$err" "switching to a preset needs --session"
	local id
	id=$(new_session)
	run permission --session "$id" read-only extra
	assert_rc 2
	assert_contains "$err" "unexpected argument 'extra'"
	run permission --session
	assert_rc 2
	assert_contains "$err" "option '--session' needs a value"
	run permission --session no-such-session
	assert_rc 7
	assert_contains "$err" 'no session "no-such-session"'
	# None of them logged a command.
	assert_streq "$(events "$id")" "$(pinned 0 read-only read-only ask)"
}

t "session new pins the default preset: three events, in order" test_new_pins_the_default
t "permission without a preset reports the current one" test_bare_reports_current
t "permission PRESET: command/run, the knob events and notice, command/done" test_switch_logs_the_knobs_between_the_pair
t "a switch writes only the knobs that differ" test_switch_repairs_only_what_differs
t "selecting the current preset appends only the command pair" test_selecting_current_appends_only_the_pair
t "an unknown preset is an error, exit 2, no knob events" test_unknown_preset
t "the input is trimmed, and logged as typed" test_input_is_trimmed_but_logged_verbatim
t "without --session: the table and the default preset" test_table_without_session
t "a configured table: pinning, listing and errors use it" test_configured_table
t "no default preset: session new fails before creating anything" test_no_default_preset_creates_nothing
t "permission usage errors log nothing" test_usage_errors
done_testing
