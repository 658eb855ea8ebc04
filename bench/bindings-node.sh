#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The TypeScript half of the bindings' cost: the npm package dsh-sandbox's sb.run(["true"]) over
# a warm `dsh-sandbox serve` against child_process.spawnSync("true"), paired medians in one run
# and their ratio (no target). bench/bindings.sh is the Python half's.
#
#   bench/bindings-node.sh   (ROUNDS=N to change the 201 pairs; BENCH_MODE=read-only; the
#                            server is build-bench's release build unless DSH_SANDBOX names one)
# Needs bindings/node's packages: scripts/install-mcp-clients.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -d bindings/node/node_modules/typescript ] ||
	{ echo "bench/bindings-node.sh: run scripts/install-mcp-clients.sh first" >&2; exit 1; }
if [ -z "${DSH_SANDBOX:-}" ]; then
	[ -f build-bench/build.ninja ] ||
		meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
	ninja -C build-bench dsh-sandbox >/dev/null
	export DSH_SANDBOX=$top/build-bench/dsh-sandbox
fi
mkdir -p build-bench
dir=$(mktemp -d "$top/build-bench/bindings-node.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# Store, configuration and workspace outside the writable temp dirs, as bench/server.sh keeps
# them; the package built from its source into the run's directory.
export DSH_SANDBOX_STORE=$dir/store XDG_CONFIG_HOME=$dir/xdg
unset DSH_PERMISSION_MODE DSH_SANDBOX_CONFIG
mkdir -p "$dir/ws" "$dir/pkg"
cp -r bindings/node/src bindings/node/tsconfig.json bindings/node/package.json "$dir/pkg/"
ln -s "$top/bindings/node/node_modules" "$dir/pkg/node_modules"
node bindings/node/node_modules/typescript/bin/tsc -p "$dir/pkg/tsconfig.json"
"$DSH_SANDBOX" probe | head -3
node bench/bindings-node.mjs "$dir/pkg" "$dir/ws" "${ROUNDS:-201}"
