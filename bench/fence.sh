#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The fs fence's cost against a plain atomic write in the same run, and decisions per second.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench bench/fence-bench >/dev/null
scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/dsb-fence-bench.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
build-bench/bench/fence-bench "$scratch" "${ROUNDS:-301}"
