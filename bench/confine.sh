#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Confinement costs, as ratios against plain `bash -c true` measured in the same run:
# the landlock-run launcher path (DSH's contract), our in-process Landlock exec, bwrap through
# us and raw, and the CLI's probe cold (fresh) vs cached. Medians of interleaved runs.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench dsh-sandbox bench/cmdbench >/dev/null
store=$(mktemp -d "${TMPDIR:-/tmp}/dsb-bench.XXXXXX")
trap 'rm -rf "$store"' EXIT
export DSH_SANDBOX_STORE=$store
D=$top/build-bench/dsh-sandbox
B=$top/build-bench/bench/cmdbench
BWRAP=$(command -v bwrap)
"$D" probe >/dev/null                                  # cache the default chain's verdict
"$D" exec --backend landlock --mode read-only -- true  # and the landlock-only one
"$D" exec --backend bwrap --mode read-only -- true

rounds=${ROUNDS:-101}
echo "== one confined command ($rounds interleaved rounds; medians)"
"$B" "$rounds" plain \
	"plain=bash -c true" \
	"landlock-run (launcher contract)=$D landlock-run --ro / --rw /dev/null -- bash -c true" \
	"exec --backend landlock=$D exec --backend landlock --mode read-only -- bash -c true" \
	"raw bwrap profile=$BWRAP --ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent -- bash -c true" \
	"exec --backend bwrap=$D exec --backend bwrap --mode read-only -- bash -c true"
echo "== the CLI's probe"
"$B" "${ROUNDS_PROBE:-31}" "probe (cached)" \
	"probe (cached)=$D probe" \
	"probe --fresh (cold)=$D probe --fresh"
