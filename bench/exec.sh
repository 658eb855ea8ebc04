#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The executor's overhead, as ratios measured in one run (medians of interleaved runs):
# the library path against plain fork/exec; what the hardening of a Landlock child costs a
# spawn; the CLI against the floor of any CLI wrapper (a program that only execs its arguments)
# and against the raw bwrap profile; `bash`, reported; and the dsh-sandbox process's peak RSS.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench dsh-sandbox bench/cmdbench bench/execwrap bench/exec-bench \
	bench/harden-bench >/dev/null
store=$(mktemp -d "${TMPDIR:-/tmp}/dsb-bench.XXXXXX")
trap 'rm -rf "$store"' EXIT
export DSH_SANDBOX_STORE=$store
D=$top/build-bench/dsh-sandbox
W=$top/build-bench/bench/execwrap
BWRAP=$(command -v bwrap)
"$D" exec --backend landlock --mode read-only -- true # cache both verdicts
"$D" exec --backend bwrap --mode read-only -- true

build-bench/bench/exec-bench "${ROUNDS:-201}"
build-bench/bench/harden-bench "${ROUNDS:-201}"
echo "CLI, ${ROUNDS:-101} interleaved rounds, medians:"
build-bench/bench/cmdbench "${ROUNDS:-101}" "wrapper" \
	"plain=bash -c true" \
	"wrapper=$W bash -c true" \
	"exec --backend landlock=$D exec --backend landlock --mode read-only -- bash -c true" \
	"bash --backend landlock=$D bash --backend landlock --mode read-only true"
build-bench/bench/cmdbench "${ROUNDS:-101}" "raw bwrap" \
	"raw bwrap=$BWRAP --ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent -- bash -c true" \
	"exec --backend bwrap=$D exec --backend bwrap --mode read-only -- bash -c true" \
	"bash --backend bwrap=$D bash --backend bwrap --mode read-only true"
rss=$( { /usr/bin/time -f %M "$D" exec --backend landlock --mode read-only -- true; } 2>&1 | tail -n 1)
echo "peak RSS of dsh-sandbox exec (landlock): ${rss} KB (target <= 4096 KB)"
