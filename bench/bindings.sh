#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The language bindings' cost per call, as ratios measured in one run (medians of paired,
# interleaved runs): each binding's run of `true` against its language's own way to run `true`
# unconfined. One section per binding; each is a function, called at the end (a new binding
# adds its function and its call).
#
# Python (bindings/python): Sandbox.run(["true"]) against subprocess.run(["true"]) (target
# <= 1.10x), with the rows that say where the time goes: the bash that run() starts the argv
# through (the bash tool's call: see Sandbox.run), the binding over the library with no
# confinement (danger-full-access), confined by each backend, and the CLI a harness without the
# binding would start per call.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench dsh-sandbox libdshsandbox.so.0 >/dev/null 2>&1 || ninja -C build-bench >/dev/null
scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/dsb-bench.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
export DSH_SANDBOX_STORE=$scratch/store
D=$top/build-bench/dsh-sandbox
"$D" exec --backend landlock --mode read-only -- true # cache both verdicts
"$D" exec --backend bwrap --mode read-only -- true

python_section() {
	local python=python3
	[ ! -x /usr/bin/python3 ] || python=/usr/bin/python3
	echo "Python, ${ROUNDS:-201} interleaved rounds, medians (ratio against subprocess.run):"
	mkdir -p "$scratch/ws"
	DSH_SANDBOX_LIBRARY=$top/build-bench/libdshsandbox.so.0 \
		PYTHONPATH=$top/bindings/python "$python" - "${ROUNDS:-201}" "$scratch/ws" "$D" <<'PY'
import statistics, subprocess, sys, time
from dsh_sandbox import Sandbox

rounds, ws, cli = int(sys.argv[1]), sys.argv[2], sys.argv[3]
full = Sandbox(mode="danger-full-access", workspace=ws)
bwrap = Sandbox(mode="workspace-write", workspace=ws, backend="bwrap")
landlock = Sandbox(mode="workspace-write", workspace=ws, backend="landlock")
cases = {
    "subprocess.run(['true'])": lambda: subprocess.run(["true"]),
    "subprocess.run(['bash', '-c', 'exec true'])": lambda: subprocess.run(
        ["bash", "-c", "exec true"]),
    "Sandbox.run, danger-full-access": lambda: full.run(["true"]),
    "Sandbox.run, workspace-write, landlock": lambda: landlock.run(["true"]),
    "Sandbox.run, workspace-write, bwrap": lambda: bwrap.run(["true"]),
    "subprocess.run(dsh-sandbox exec, landlock)": lambda: subprocess.run(
        [cli, "exec", "--backend", "landlock", "--mode", "workspace-write", "--workspace", ws,
         "--", "true"]),
}
times = {name: [] for name in cases}
for fn in cases.values():  # warm up: imports, the probe verdict, page cache
    fn()
for i in range(rounds):
    # Each round runs every case once, in an order that rotates, so drift hits all alike.
    names = list(cases)
    names = names[i % len(names):] + names[:i % len(names)]
    for name in names:
        t0 = time.perf_counter_ns()
        cases[name]()
        times[name].append(time.perf_counter_ns() - t0)
base = statistics.median(times["subprocess.run(['true'])"])
for name, ts in times.items():
    m = statistics.median(ts)
    print(f"  {name:45s} {m / 1e6:8.3f} ms  {m / base:6.2f}x")
PY
}

python_section
