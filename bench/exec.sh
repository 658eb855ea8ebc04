#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The executor's overhead, as ratios measured in one run (medians of interleaved runs):
# the library path against plain fork/exec; what the hardening of a Landlock child costs a
# spawn; the CLI against the floor of any CLI wrapper (a program that only execs its arguments)
# and against the raw bwrap profile; `bash`, reported; the dsh-sandbox process's peak RSS; and
# what protecting a git workspace's .git costs a call (means of paired, interleaved runs).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench dsh-sandbox bench/cmdbench bench/execwrap bench/exec-bench \
	bench/harden-bench >/dev/null
store=$(mktemp -d "${TMPDIR:-/tmp}/dsb-bench.XXXXXX")
trap 'rm -rf "$store" "${pdir:-}"' EXIT
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

# Protected paths, per call: confined `true` in a git workspace with protectGit (the default)
# against protectGit: false, each backend. Store, configurations and workspace lie outside
# /tmp and TMPDIR (writable roots), so the control has nothing to protect: no bind under bwrap,
# no mount namespace under Landlock.
pdir=$(mktemp -d "$top/build-bench/protect.XXXXXX")
case $pdir/ in
/tmp/* | "${TMPDIR:-/tmp}"/*) echo "bench/exec.sh: $pdir is in a temp dir, the control protects its store" >&2 ;;
esac
ws=$pdir/ws
git init -q "$ws"
git -C "$ws" -c user.name=bench -c user.email=bench@localhost commit -q --allow-empty -m bench
printf 'sandbox-policy: { protectGit: true }\n' >"$pdir/git.yaml"
printf 'sandbox-policy: { protectGit: false }\n' >"$pdir/nogit.yaml"
ps=$pdir/store
"$D" --store "$ps" exec --backend landlock --mode read-only -- true # cache both verdicts
"$D" --store "$ps" exec --backend bwrap --mode read-only -- true
run="exec --mode workspace-write --workspace $ws"
echo "protection of a git workspace (target <= +0.1 ms a call), CLI, ${ROUNDS_PROTECT:-2001}" \
	"paired rounds, means (difference +- 95 % interval):"
build-bench/bench/cmdbench --pairs "${ROUNDS_PROTECT:-2001}" \
	"bwrap, protectGit: false=$D --config $pdir/nogit.yaml --store $ps $run --backend bwrap -- true" \
	"bwrap, protectGit: true=$D --config $pdir/git.yaml --store $ps $run --backend bwrap -- true" \
	"landlock, protectGit: false=$D --config $pdir/nogit.yaml --store $ps $run --backend landlock -- true" \
	"landlock, protectGit: true=$D --config $pdir/git.yaml --store $ps $run --backend landlock -- true"
