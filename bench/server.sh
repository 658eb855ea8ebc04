#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The MCP server's cost as a client on its pipes sees it, as ratios measured in one run: a bash
# call of `true` through `dsh-sandbox serve` against the same client fork/exec'ing `bash -c true`
# (Landlock; target <= 1.15x) or the raw bwrap profile (bwrap; target <= 1.1x); 32 concurrent
# calls against 32 concurrent spawns; the server's RSS idle and under load (target <= 8 MB).
# Then the same Landlock calls without the cgroup limits, where the command runs in a PID
# namespace of its own instead (docs/design/limits.md): as root, the two Landlock lines'
# difference is the cgroups' cost against that namespace's.
#
#   bench/server.sh [OLD_DSH_SANDBOX...]   (ROUNDS=N to change the 201 rounds)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench dsh-sandbox bench/server-bench >/dev/null
dir=$(mktemp -d "$top/build-bench/server.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# Store, configuration and workspace outside the writable temp dirs: nothing to protect but
# what a real deployment protects.
export DSH_SANDBOX_STORE=$dir/store XDG_CONFIG_HOME=$dir/xdg
mkdir -p "$dir/ws"
BWRAP=$(command -v bwrap)
for b in landlock bwrap; do
	printf 'sandbox-local: { backends: [%s] }\n' "$b" >"$dir/$b.yaml"
	"$top/build-bench/dsh-sandbox" --config "$dir/$b.yaml" exec --mode read-only -- true # cache the verdict
done
printf 'sandbox-local: { backends: [landlock] }\nlimits: { processes: 0, memoryBytes: 0 }\n' \
	>"$dir/landlock-unlimited.yaml"
# Each line for this build, then for each older dsh-sandbox named as an argument (a before/after
# in one run: the same machine, the same minutes).
for D in "$top/build-bench/dsh-sandbox" "$@"; do
	[ $# -eq 0 ] || echo "== $D"
	echo "Landlock (baseline: bash -c true):"
	build-bench/bench/server-bench "${ROUNDS:-201}" "$D" "$dir/landlock.yaml" "$dir/ws" bash -c true
	echo "bwrap (baseline: the raw bwrap profile):"
	build-bench/bench/server-bench "${ROUNDS:-201}" "$D" "$dir/bwrap.yaml" "$dir/ws" \
		"$BWRAP" --ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent -- bash -c true
	echo "Landlock without cgroup limits (baseline: bash -c true):"
	build-bench/bench/server-bench "${ROUNDS:-201}" "$D" "$dir/landlock-unlimited.yaml" "$dir/ws" \
		bash -c true
done
