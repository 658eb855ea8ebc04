#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds an optimised tree (build-bench/) and runs the session-store benchmark in a scratch dir.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench bench/session-bench >/dev/null
scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/dsb-bench.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
build-bench/bench/session-bench "$scratch"
