#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Containment of harm (docs/design/limits.md): a hostile command hurts only its own call. A fork
# bomb, a memory hog, a spinner, a /tmp or disk filler, a CPU burner and an inotify hog each
# run first as a control, unconfined, which shows the harm (bounded: the control's fork loop
# stops at 2500, its hog at 1 GiB), then confined, on both backends and both confined modes,
# as the caller (root here) and as nobody (the -unprivileged run): the harm stays inside, the
# model is told, nothing is left. Limits set explicitly that this host cannot hold fail closed.
# The tests whose bodies are eval'ed strings expand when they run, not where they are written.
# shellcheck disable=SC2016
# shellcheck source=tests/e2e/libescape.sh
. "$(dirname "$0")/libescape.sh"

HARM=$(dirname "$0")/harm.py
# Beside the probe: readable inside every sandbox.
cp "$HARM" "$PROBE_DIR/harm.py"
cp "$(dirname "$0")/mcp-client.py" "$PROBE_DIR/mcp-client.py"
HARM=$PROBE_DIR/harm.py

# limit_mech NAME: the mechanism `probe --json` states for limit NAME.
limit_mech() {
	"$DSB" probe --json | "$PYTHON" -c \
		'import json,sys; print(json.load(sys.stdin)["limits"][sys.argv[1]]["mechanism"])' "$1"
}

# The mechanisms this host gives, as the design says they are chosen.
t "probe and policy state each limit, its value and its mechanism" eval '
	run probe --json
	assert_rc 0
	echo "$out" | "$PYTHON" -c "
import json, sys
lim = json.load(sys.stdin)[\"limits\"]
for k in (\"processes\", \"memoryBytes\", \"cpuSeconds\", \"tmpBytes\", \"fileBytes\"):
    assert lim[k][\"mechanism\"] in (\"cgroup2\", \"cgroup1\", \"rlimit-userns\", \"rlimit\", \"tmpfs\", \"none\"), lim
assert lim[\"processes\"][\"value\"] == 2048, lim
assert lim[\"budgets\"] == \"user-namespace\", lim
"
	run probe
	assert_contains "$out" "limits:
  processes: 2048 ("
	assert_contains "$out" "  per-user budgets: user-namespace"
	run policy --mode workspace-write --workspace "$PWD" --max-processes 300 --memory 0
	assert_contains "$out" "  processes: 300 ("
	assert_contains "$out" "  memoryBytes: none"
'

t "as root the processes and memory go to a cgroup; as a user to rlimits in its own namespace" eval '
	if is_root; then
		[ "$(limit_mech processes)" = cgroup1 ] || [ "$(limit_mech processes)" = cgroup2 ] ||
			fail "root here has writable pids cgroups: $(limit_mech processes)"
		[ "$(limit_mech memoryBytes)" != none ] || fail "root here has memory cgroups"
	else
		[ "$(limit_mech processes)" = rlimit-userns ] || fail "$(limit_mech processes)"
		[ "$(limit_mech memoryBytes)" = none ] || fail "$(limit_mech memoryBytes)"
	fi
'

t "bad limits are usage errors naming the flag" eval '
	run exec --memory 2X -- true
	assert_rc 125
	assert_contains "$err" "--memory: invalid size \"2X\""
	run bash --max-processes -3 "true"
	assert_rc 2
	assert_contains "$err" "--max-processes: invalid value \"-3\""
'

# --- processes ------------------------------------------------------------------------------

t "control: unconfined, a fork loop gets all 2500 children it asks for" eval '
	[ "$("$PYTHON" "$HARM" forks 2500)" = 2500 ] || fail "the control was limited"
'

forks_capped() {
	attempt "$1" "$PYTHON $HARM forks 2500"
	assert_rc 0
	if [ "$out" -lt 1500 ] || [ "$out" -gt 2048 ]; then
		fail "got $out children (limit 2048)"
	fi
}
each_confined "a fork loop stops at the default limit (2048)" forks_capped

forks_flag() {
	mkdir -p ws
	run exec --max-processes 64 --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" -- \
		"$PYTHON" "$HARM" forks 500
	assert_rc 0
	if [ "$out" -lt 20 ] || [ "$out" -gt 64 ]; then
		fail "got $out children (--max-processes 64)"
	fi
}
each_confined "--max-processes 64 holds the tree to 64" forks_flag

# descendants PID: how many processes run below PID now.
descendants() {
	ps -eo pid=,ppid= | awk -v root="$1" '
		{ parent[$1] = $2 }
		END {
			n = 0
			for (p in parent) {
				for (q = parent[p]; q > 1; q = parent[q])
					if (q == root) { n++; break }
			}
			print n
		}'
}

# kill_bomb MARK PID: kills the call PID and every process of the bomb MARK, until none is left
# (at most 30 s).
kill_bomb() {
	local i
	kill -9 "$2" 2>/dev/null || true
	for i in $(seq 60); do
		pkill -9 -f -- "$1" 2>/dev/null || return 0
		sleep 0.5
	done
}

# bomb BACKEND [LIMIT]: a bash fork bomb under the default process limit (2048), or LIMIT.
bomb() {
	local backend=$1 limit=${2:-2048} during after mark="dsb-bomb-$$-$BASHPID"
	local flag=()
	[ -z "${2:-}" ] || flag=(--max-processes "$2")
	mkdir -p ws
	# Every fork of the bomb keeps its shell's argv, the mark included.
	"$DSB" exec "${flag[@]}" --backend "$backend" --mode workspace-write \
		--workspace "$PWD/ws" --timeout 10000 -- bash -c ":(){ :|:& };:; sleep 30 # $mark" \
		>bomb.out 2>&1 &
	local bomber=$!
	# A loaded machine may take seconds to start it: from its first forks on, the most seen
	# over two seconds.
	local i n m
	for i in $(seq 60); do
		[ "$(descendants "$bomber")" -lt 64 ] || break
		sleep 0.25
	done
	during=0
	for i in $(seq 8); do
		sleep 0.25
		# ps reads /proc one process at a time while the bomb forks and exits: one
		# snapshot can count a process and its successor both; the smaller of two less so.
		n=$(descendants "$bomber")
		m=$(descendants "$bomber")
		[ "$m" -ge "$n" ] || n=$m
		[ "$n" -le "$during" ] || during=$n
	done
	local t0 t1
	# A bomb the sandbox failed to end would outlive this test and load every later one: it is
	# failed and killed here, whatever happens.
	defer kill_bomb "$mark" "$bomber"
	t0=$(date +%s%N)
	rc=0
	out=$(timeout 60 "$DSB" exec --backend "$backend" --mode workspace-write \
		--workspace "$PWD/ws" -- echo second 2>/dev/null) || rc=$?
	t1=$(date +%s%N)
	assert_rc 0
	assert_streq "$out" second
	[ $(((t1 - t0) / 1000000)) -lt 10000 ] || fail "the second call took $(((t1 - t0) / 1000000)) ms"
	# The call's 10 s timeout ends the bomb; 60 s more is a sandbox that did not.
	for i in $(seq 240); do
		kill -0 "$bomber" 2>/dev/null || break
		sleep 0.25
	done
	! kill -0 "$bomber" 2>/dev/null || fail "the bomb's call did not end 60 s after its timeout"
	wait "$bomber" || true
	sleep 1
	after=$(pgrep -c -f -- "$mark" || true)
	# bwrap and its init besides the bomb's own, and what ps still counts twice.
	[ "$during" -le $((limit + limit / 8 + 4)) ] ||
		fail "the bomb reached $during processes (limit $limit)"
	# That it ran: many at once, or its forks refused at the limit (on a loaded machine the
	# bomb can thin out between two samples).
	[ "$during" -ge $((limit / 8)) ] || grep -q "Resource temporarily unavailable" bomb.out ||
		fail "the bomb did not run: $during processes; it printed: $(sort bomb.out | uniq -c | sort -rn | head -5)"
	[ "$after" -eq 0 ] || fail "left behind: $after of the bomb's processes"
}
t "bwrap: a fork bomb stays under the limit, a second call completes, nothing is left" bomb bwrap
t "landlock: a fork bomb stays under the limit, a second call completes, nothing is left" \
	bomb landlock
t "landlock: a fork bomb under --max-processes 256 stays under it as well" bomb landlock 256

# --- where no cgroup holds the call: a PID namespace ---------------------------------------

# landlock_no_cgroup: the flags of a Landlock call with no cgroup (root's would hold it).
landlock_no_cgroup() {
	printf '%s\n' --backend landlock --mode workspace-write
	if is_root; then printf '%s\n' --max-processes 0 --memory 0; fi
}

# The command and what it starts get pids of their own, after an init of ours that goes with the
# call.
pid_namespace() {
	local flags before after
	mapfile -t flags < <(landlock_no_cgroup)
	mkdir -p ws
	# An init another test left to the host's init to reap (its caller killed) is not ours.
	before=$(pgrep -x dsh-sandbox-ini | sort || true)
	# shellcheck disable=SC2016
	run exec "${flags[@]}" --workspace "$PWD/ws" -- bash -c 'echo "$$"; sh -c '\''echo "$$"'\''; true'
	assert_rc 0
	assert_streq "$out" "2
3"
	after=$(pgrep -x dsh-sandbox-ini | sort || true)
	[ -z "$(comm -13 <(echo "$before") <(echo "$after"))" ] || fail "an init is left: $after"
	if is_root; then
		# The call's cgroup holds a call by default: no namespace, the host's pids.
		run exec --backend landlock --mode workspace-write --workspace "$PWD/ws" -- \
			sh -c 'echo $$'
		assert_rc 0
		[ "$out" -gt 2 ] || fail "under a cgroup the command got pid $out"
	fi
}
t "landlock without a cgroup: the command runs in a PID namespace, which ends with the call" \
	pid_namespace

# caller_killed WHERE: the command leaves a setsid'd sleeper and a loop that forks, then its
# caller is SIGKILLed: nothing of it is left 30 s later (control: unconfined, the sleeper lives).
caller_killed() {
	local mark="dsb-orphan-$$-$BASHPID" flags=() caller i n
	case $1 in
	control) flags=(--mode danger-full-access) ;;
	landlock) mapfile -t flags < <(landlock_no_cgroup) ;;
	bwrap) flags=(--backend bwrap --mode workspace-write) ;;
	esac
	mkdir -p ws
	# Each process carries the mark; a sleep it waits for lasts a second (pkill misses those).
	"$DSB" exec "${flags[@]}" --workspace "$PWD/ws" -- bash -c "
		setsid bash -c 'while :; do sleep 1; done; : $mark' &
		bash -c 'while :; do sleep 0.2 & wait; done; : $mark' &
		while :; do sleep 1; done; : $mark" >/dev/null 2>&1 &
	caller=$!
	defer kill_bomb "$mark" "$caller"
	for i in $(seq 300); do
		[ "$(pgrep -c -f -- "$mark")" -lt 3 ] || break
		sleep 0.1
	done
	[ "$(pgrep -c -f -- "$mark")" -ge 3 ] || fail "the command did not start: $(pgrep -a -f -- "$mark")"
	kill -9 "$caller"
	wait "$caller" 2>/dev/null || true
	for i in $(seq 120); do
		n=$(pgrep -c -f -- "$mark" || true)
		[ "$n" -gt 0 ] || break
		sleep 0.25
	done
	if [ "$1" = control ]; then
		[ "$n" -gt 0 ] || fail "control: the unconfined sleeper did not outlive its caller"
	else
		[ "$n" -eq 0 ] || fail "left behind: $(pgrep -a -f -- "$mark")"
	fi
}
t "control: unconfined, a setsid'd sleeper outlives a caller killed with SIGKILL" caller_killed control
t "bwrap: nothing the command started outlives a caller killed with SIGKILL" caller_killed bwrap
t "landlock without a cgroup: nothing the command started outlives a caller killed with SIGKILL" \
	caller_killed landlock

t "served: a fork bomb, and a second call completes meanwhile" eval '
	mkdir -p ws
	run_py() { "$PYTHON" "$HARM" "$@"; }
	out=$(run_py serve-bomb "$PWD/ws")
	assert_contains "$out" ok
'

t "a background job: a fork bomb, and a second call completes meanwhile" eval '
	mkdir -p ws
	out=$("$PYTHON" "$HARM" job-bomb "$PWD/ws")
	assert_contains "$out" ok
'

limit_line() {
	mkdir -p ws
	run bash --max-processes 40 --mode "${1#*/}" --backend "${1%/*}" --workspace "$PWD/ws" \
		"$PYTHON $HARM forks 100"
	assert_rc 0
	if [ "$(limit_mech processes)" = cgroup1 ] || [ "$(limit_mech processes)" = cgroup2 ]; then
		assert_contains "$out" "[sandbox: process limit (40) reached]"
	else
		# RLIMIT_NPROC counts, but says nothing afterwards: no line (docs/design/limits.md).
		assert_not_contains "$out" "[sandbox: process limit"
	fi
}
each_confined "the model is told the process limit was reached (where a cgroup counted)" limit_line

# --- memory ---------------------------------------------------------------------------------

t "control: unconfined, the hog touches 1 GiB" eval '
	out=$("$PYTHON" "$HARM" hog $((1 << 30)))
	assert_contains "$out" survived
'

memory_hog() {
	mkdir -p ws
	sleeper
	run bash --memory 256M --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" \
		"$PYTHON $HARM hog $((1 << 30))"
	if [ "$(limit_mech memoryBytes)" = none ]; then
		# Nothing here holds it: set explicitly, it fails closed and nothing runs.
		assert_rc 125
		assert_contains "$out" "limits.memoryBytes (--memory) cannot be enforced here"
		return
	fi
	assert_rc 0
	assert_not_contains "$out" survived
	# bwrap reports its child's SIGKILL as 137; bash execs python, which dies of it.
	[[ "$out" == *"[exit code: 137]"* || "$out" == *"[killed by signal: SIGKILL]"* ]] ||
		fail "not killed: $out"
	assert_contains "$out" "[sandbox: memory limit (256M) reached; the command was killed]"
	kill -0 "$SLEEPER" || fail "a process outside was killed"
	run bash --json --memory 256M --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" \
		"$PYTHON $HARM hog $((1 << 30))"
	assert_contains "$out" '"limitsReached":["memoryBytes"]'
}
each_confined "a memory hog over --memory 256M is killed, alone, and the model is told" memory_hog

t "served: a memory hog over --memory 256M is killed, the server lives" eval '
	mkdir -p ws
	expect=killed
	[ "$(limit_mech memoryBytes)" != none ] || expect=fails-closed
	out=$("$PYTHON" "$HARM" serve-memory "$PWD/ws" "$expect")
	assert_streq "$out" ok
'

# --- CPU, /tmp, files -----------------------------------------------------------------------

t "served: pings stay fast while calls spin on every core (confined commands are niced)" eval '
	mkdir -p ws
	out=$("$PYTHON" "$HARM" serve-spinner "$PWD/ws")
	echo "$out"
	med=$(echo "$out" | awk "{ print \$2 }")
	"$PYTHON" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 250 else 1)" "$med" ||
		fail "median ping $med ms under spinners"
'

niced() {
	attempt "$1" 'cat /proc/self/stat'
	assert_rc 0
	local nice
	nice=$(echo "$out" | awk '{ print $19 }')
	[ "$nice" -ge 10 ] || fail "nice $nice"
}
each_confined "a confined command runs at nice 10 or more" niced

limits_config() {
	printf 'limits:\n  %s: %s\n' "$1" "$2" >cfg.yaml
}

cpu_seconds() {
	mkdir -p ws
	limits_config cpuSeconds 1
	run --config cfg.yaml exec --timeout 60000 --backend "${1%/*}" --mode "${1#*/}" \
		--workspace "$PWD/ws" -- sh -c 'while :; do :; done'
	# SIGXCPU (152) at one second of CPU (niced: on a loaded machine many more of wall time),
	# never the 60 s timeout.
	assert_rc 152
}
t "control: without cpuSeconds a spinner runs until its timeout" eval '
	run exec --timeout 1500 --mode read-only --workspace "$PWD" -- sh -c "while :; do :; done"
	assert_rc 124
'
each_confined "limits.cpuSeconds 1 stops a spinner" cpu_seconds

file_bytes() {
	limits_config fileBytes 1M
	mkdir -p ws
	run --config cfg.yaml exec --backend "${1%/*}" --mode workspace-write --workspace "$PWD/ws" \
		-- sh -c 'head -c 3000000 /dev/zero > ws/big'
	[ "$rc" -ne 0 ] || fail "a 3 MB file was written past fileBytes 1M"
	[ "$(stat -c %s ws/big)" -le $((1 << 20)) ] || fail "big is $(stat -c %s ws/big) bytes"
}
t "control: without fileBytes a 3 MB file is written" eval '
	head -c 3000000 /dev/zero >big
	[ "$(stat -c %s big)" = 3000000 ]
'
t "bwrap: limits.fileBytes 1M stops a larger file" file_bytes bwrap/workspace-write
t "landlock: limits.fileBytes 1M stops a larger file" file_bytes landlock/workspace-write

# tmp_bytes BACKEND: limits.tmpBytes caps the fresh /tmp of a call of no session; a session's
# /tmp, a directory of the store, holds no size: its call fails closed, and runs nothing.
tmp_bytes() {
	local b=$1
	mkdir -p ws
	run exec --backend "$b" --mode workspace-write --workspace "$PWD/ws" -- \
		sh -c "head -c 4000000 /dev/zero > /tmp/fill && echo filled"
	assert_streq "$out" filled
	limits_config tmpBytes 1M
	run --config cfg.yaml exec --backend "$b" --mode workspace-write --workspace "$PWD/ws" -- \
		sh -c "head -c 4000000 /dev/zero > /tmp/fill; ls -l /tmp/fill"
	assert_contains "$err" "No space left on device"
	local id
	id=$("$DSB" --config cfg.yaml session new --cwd "$PWD/ws")
	"$DSB" --config cfg.yaml session mode "$id" workspace-write >/dev/null || fail "no mode switch"
	run --config cfg.yaml bash --backend "$b" --session "$id" "touch '$PWD/ws/ran'"
	assert_contains "$out" "limits.tmpBytes cannot be enforced here: it needs a /tmp of the call's own"
	[ ! -e ws/ran ] || fail "the command ran"
}
t "bwrap: limits.tmpBytes 1M caps a call's own /tmp (control: 4 MB fit without it); a session's fails closed" \
	tmp_bytes bwrap
t "landlock: limits.tmpBytes 1M caps a call's own /tmp (control: 4 MB fit without it); a session's fails closed" \
	tmp_bytes landlock

# --- a host without the mechanism -----------------------------------------------------------

# hidden_cgroups COMMAND...: as root, COMMAND in a mount namespace where /sys/fs/cgroup is an
# empty tmpfs (the host has no cgroups to give); another user has none anyway.
hidden_cgroups() {
	if is_root; then
		unshare -m --propagation private -- sh -c 'mount -t tmpfs none /sys/fs/cgroup && exec "$@"' \
			hidden "$@"
	else
		"$@"
	fi
}

t "without cgroups: an explicit --max-processes fails closed as root, degrades to rlimits as a user" eval '
	mkdir -p ws
	rc=0
	hidden_cgroups "$DSB" exec --max-processes 100 --backend bwrap --mode workspace-write \
		--workspace "$PWD/ws" -- touch "$PWD/ws/ran" 2>err.txt || rc=$?
	if is_root; then
		[ "$rc" = 125 ] || fail "status $rc"
		grep -q "limits.processes (--max-processes) cannot be enforced here: it needs a writable cgroup with the pids controller" err.txt ||
			fail "$(cat err.txt)"
		[ ! -e ws/ran ] || fail "the command ran"
		# The default degrades, and probe says so.
		hidden_cgroups "$DSB" probe >probe.txt
		grep -q "  processes: none" probe.txt || fail "$(cat probe.txt)"
		hidden_cgroups "$DSB" exec --backend bwrap --mode workspace-write --workspace "$PWD/ws" \
			-- touch "$PWD/ws/ran"
		[ -e ws/ran ] || fail "a default that cannot be held stopped the call"
	else
		[ "$rc" = 0 ] || fail "status $rc: $(cat err.txt)"
	fi
'

# --- per-user budgets -----------------------------------------------------------------------

t "control: unconfined, an inotify hog leaves the user's other processes none" eval '
	"$PYTHON" "$HARM" inotify 3 >count.txt &
	while [ ! -s count.txt ]; do sleep 0.1; done
	out=$("$PYTHON" "$HARM" inotify-one)
	wait
	assert_contains "$out" failed
'

inotify_hog() {
	mkdir -p ws
	"$DSB" exec --backend "${1%/*}" --mode "${1#*/}" --workspace "$PWD/ws" -- \
		"$PYTHON" "$HARM" inotify 3 >count.txt 2>err.txt &
	local hog=$! i=0
	# It prints how many it took once it holds them.
	while [ ! -s count.txt ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	out=$("$PYTHON" "$HARM" inotify-one)
	wait "$hog" || fail "the hog failed: $(cat err.txt)"
	assert_streq "$out" ok
	[ "$(head -1 count.txt)" -le 32 ] || fail "the hog took $(cat count.txt) (a quarter is 32)"
	[ "$(head -1 count.txt)" -ge 8 ] || fail "the hog got only $(cat count.txt)"
}
each_confined "an inotify hog takes at most a quarter: a host process of the same uid gets one" \
	inotify_hog

# --- nothing left ---------------------------------------------------------------------------

t "no cgroup is left after calls, and a crashed process's are swept at the next start" eval '
	cg=$(awk -F: "\$2 == \"pids\" { print \$3 }" /proc/self/cgroup)
	base=/sys/fs/cgroup/pids${cg%/}
	run exec --mode read-only --workspace "$PWD" -- true
	if ! is_root; then
		# The root run beside this one makes its own there: count only those of this user.
		[ -z "$(find "$base" -maxdepth 1 -name "dsh-sandbox.*" -user "$(id -u)" 2>/dev/null)" ] ||
			fail "a user made cgroups it cannot have"
		return 0
	fi
	# Left: one whose maker (dsh-sandbox.PID.N) is gone. Another run beside this one (meson
	# runs suites at once, and a developer may too) owns its own while it lives.
	left=""
	for d in "$base"/dsh-sandbox.*; do
		pid=${d##*/dsh-sandbox.}
		pid=${pid%%.*}
		[ -d "/proc/$pid" ] || [ ! -e "$d" ] || left="$left ${d##*/}"
	done
	[ -z "$left" ] || fail "left:$left"
	# A dead maker (pid 2^22 - 1 is above pid_max here) with a process inside.
	stale=$base/dsh-sandbox.4194303.0
	mkdir "$stale"
	sh -c "echo \$\$ > $stale/cgroup.procs; exec sleep 300" &
	victim=$!
	sleep 0.3
	run exec --mode read-only --workspace "$PWD" -- true
	sleep 0.3
	[ ! -d "$stale" ] || { kill $victim; rmdir "$stale"; fail "the stale cgroup was not swept"; }
	! kill -0 $victim 2>/dev/null || fail "its process lives"
'

done_testing
