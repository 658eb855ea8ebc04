#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The environment scrub's cost per tool call (bench/env-bench.c), on an optimised build: DSH's
# rule alone against the shipped default list and the other ways of matching it, and the
# config-side work, warm and in a fresh process.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench bench/env-bench >/dev/null
build-bench/bench/env-bench "${ROUNDS:-201}"
