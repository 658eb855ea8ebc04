#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The executor's overhead, as ratios measured in one run (medians of interleaved runs): the
# library path against plain fork/exec; what the hardening of a Landlock child costs a spawn,
# and each of its steps alone; the static landlock-run side by side with DSH's launcher, built
# from DSH's source as DSH builds it; the start-up breakdown (a static musl program that does
# nothing, dsh-sandbox's own start); the CLI against the floor of any CLI wrapper (a program
# that only execs its arguments) and against the raw bwrap profile; `bash` against `exec`; the
# dsh-sandbox process's peak RSS; and what protecting a git workspace's .git costs a call
# (means of paired, interleaved runs).
#
# DSH's launcher source: $DSH_LAUNCHER_SRC (its main.c), else $DSH_SRC (a DeepSeek Harness
# checkout), else downloaded at the commit below; without it (offline) or without musl-gcc
# (DSH builds it with nothing else) its rows are skipped, and the script says why.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench dsh-sandbox landlock-run bench/cmdbench bench/execwrap bench/exec-bench \
	bench/harden-bench bench/harden-steps >/dev/null
store=$(mktemp -d "${TMPDIR:-/tmp}/dsb-bench.XXXXXX")
trap 'rm -rf "$store" "${pdir:-}"' EXIT
export DSH_SANDBOX_STORE=$store
D=$top/build-bench/dsh-sandbox
W=$top/build-bench/bench/execwrap
L=$top/build-bench/landlock-run
BWRAP=$(command -v bwrap)
"$D" exec --backend landlock --mode read-only -- true # cache both verdicts
"$D" exec --backend bwrap --mode read-only -- true

# DSH's launcher (native/landlock-run), compiled as its scripts/build.ts does: static musl.
dsh_commit=b150a551b8d465e31e418e1b2eaf5e79bbb7d28e
dsh_path=native/landlock-run/packages/entry/src/main.c
dsh_src=${DSH_LAUNCHER_SRC:-}
[ -n "$dsh_src" ] || [ -z "${DSH_SRC:-}" ] || dsh_src=$DSH_SRC/$dsh_path
if [ -z "$dsh_src" ]; then
	dsh_src=build-bench/dsh-landlock-run.c
	curl -fsSL --max-time 20 -o "$dsh_src" \
		"https://raw.githubusercontent.com/deepseek-ai/deepseek-harness/$dsh_commit/$dsh_path" \
		2>/dev/null || { rm -f "$dsh_src"; dsh_src=; }
fi
DSH_L=
if [ -z "$dsh_src" ] || [ ! -f "$dsh_src" ]; then
	echo "DSH's launcher: skipped (no source: set DSH_LAUNCHER_SRC or DSH_SRC; the download failed)"
elif ! command -v musl-gcc >/dev/null; then
	echo "DSH's launcher: skipped (no musl-gcc, which DSH builds it with: apt-get install musl-tools)"
else
	DSH_L=$top/build-bench/dsh-landlock-run
	musl-gcc -std=c11 -Os -Wall -Wextra -Werror -static -s -o "$DSH_L" "$dsh_src"
	printf 'int main(void) { return 0; }\n' | musl-gcc -static -O2 -x c -o build-bench/musl-true -
fi

build-bench/bench/exec-bench "${ROUNDS:-201}"
build-bench/bench/harden-bench "${ROUNDS:-201}"
build-bench/bench/harden-steps "${ROUNDS:-201}"
if [ -n "$DSH_L" ]; then
	echo "landlock-run against DSH's (target <= 1.00x), ${ROUNDS:-101} interleaved rounds, medians:"
	grants="--ro / --rw /dev/null"
	build-bench/bench/cmdbench "${ROUNDS:-101}" "DSH landlock-run" \
		"plain=bash -c true" \
		"DSH landlock-run=$DSH_L $grants -- bash -c true" \
		"landlock-run=$L $grants -- bash -c true" \
		"dsh-sandbox landlock-run=$D landlock-run $grants -- bash -c true"
	# With a --rw grant landlock-run stays as the command's parent, supervising its metadata
	# calls (docs/design/metadata.md): the cost of one more process, and DSH's for reference.
	echo "with a --rw grant (landlock-run supervises metadata), ${ROUNDS:-101} interleaved rounds, medians:"
	build-bench/bench/cmdbench "${ROUNDS:-101}" "DSH landlock-run" \
		"DSH landlock-run=$DSH_L $grants --rw $store -- bash -c true" \
		"landlock-run=$L $grants --rw $store -- bash -c true"
	echo "start-up, ${ROUNDS:-101} interleaved rounds, medians:"
	build-bench/bench/cmdbench "${ROUNDS:-101}" "static musl true" \
		"static musl true=build-bench/musl-true" \
		"DSH landlock-run=$DSH_L --ro / -- build-bench/musl-true" \
		"landlock-run=$L --ro / -- build-bench/musl-true" \
		"dsh-sandbox --version=$D --version" \
		"exec --backend landlock=$D exec --backend landlock --mode read-only -- build-bench/musl-true"
fi
echo "CLI (targets: exec <= 1.10x; bash within 5 % of exec), ${ROUNDS:-101} interleaved rounds, medians:"
build-bench/bench/cmdbench "${ROUNDS:-101}" "wrapper" \
	"plain=bash -c true" \
	"wrapper=$W bash -c true" \
	"exec --backend landlock=$D exec --backend landlock --mode read-only -- bash -c true" \
	"bash --backend landlock=$D bash --backend landlock --mode read-only true"
# "bwrap, our argv": the raw profile plus the hardening flags the backend adds but the filter
# (`--seccomp` needs a descriptor): what the CLI adds beyond the bwrap it runs.
build-bench/bench/cmdbench "${ROUNDS:-101}" "raw bwrap" \
	"raw bwrap=$BWRAP --ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent -- bash -c true" \
	"bwrap, our argv=$BWRAP --ro-bind / / --dev /dev --unshare-pid --proc /proc --die-with-parent --ro-bind /proc/sys /proc/sys --unshare-user --unshare-ipc --unshare-uts --cap-drop ALL -- bash -c true" \
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

# Limits, per call (docs/design/limits.md): the defaults (the call's cgroups where this host
# gives them, its own user namespace, niceness, rlimits) against no cgroup limit at all. The
# mechanisms in force are `dsh-sandbox probe`'s "limits:" lines, printed first.
"$D" probe | sed -n '/^limits:/,$p'
echo "limits at their defaults (target <= +0.1 ms a call), CLI, ${ROUNDS_PROTECT:-2001}" \
	"paired rounds, means (difference +- 95 % interval):"
build-bench/bench/cmdbench --pairs "${ROUNDS_PROTECT:-2001}" \
	"bwrap, no cgroup limits=$D $run --backend bwrap --max-processes 0 --memory 0 -- true" \
	"bwrap, default limits=$D $run --backend bwrap -- true" \
	"landlock, no cgroup limits=$D $run --backend landlock --max-processes 0 --memory 0 -- true" \
	"landlock, default limits=$D $run --backend landlock -- true"

# Paths, per call (docs/design/paths.md): three extra writable roots against none; and the
# start-up files' protection (protectDefaults, 22 entries looked up in each root) against none.
for i in 1 2 3; do mkdir -p "$pdir/extra$i"; done
extras="--writable $pdir/extra1 --writable $pdir/extra2 --writable $pdir/extra3"
printf 'sandbox-policy: { protectDefaults: false }\n' >"$pdir/nodefaults.yaml"
echo "three extra writable roots (target <= +0.05 ms a call), CLI, ${ROUNDS_PROTECT:-2001}" \
	"paired rounds, means (difference +- 95 % interval):"
build-bench/bench/cmdbench --pairs "${ROUNDS_PROTECT:-2001}" \
	"bwrap, no extra root=$D --store $ps $run --backend bwrap -- true" \
	"bwrap, 3 extra roots=$D --store $ps $run $extras --backend bwrap -- true" \
	"landlock, no extra root=$D --store $ps $run --backend landlock -- true" \
	"landlock, 3 extra roots=$D --store $ps $run $extras --backend landlock -- true"
echo "start-up files protected (protectDefaults), CLI, ${ROUNDS_PROTECT:-2001}" \
	"paired rounds, means (difference +- 95 % interval):"
build-bench/bench/cmdbench --pairs "${ROUNDS_PROTECT:-2001}" \
	"bwrap, protectDefaults: false=$D --config $pdir/nodefaults.yaml --store $ps $run --backend bwrap -- true" \
	"bwrap, protectDefaults: true=$D --store $ps $run --backend bwrap -- true" \
	"landlock, protectDefaults: false=$D --config $pdir/nodefaults.yaml --store $ps $run --backend landlock -- true" \
	"landlock, protectDefaults: true=$D --store $ps $run --backend landlock -- true"

# Repositories below the workspace (docs/design/paths.md "No planted repository"), per call: a
# git workspace of 50,000 files in 550 directories, without and with 20 nested repositories,
# protectGit off against on. The difference is the whole feature: the scan before the call and
# after it, and protecting what it finds (the root's .git and each nested one).
big=$pdir/big
for i in $(seq 0 49); do
	for j in $(seq 0 9); do
		mkdir -p "$big/pkg$i/sub$j"
		(cd "$big/pkg$i/sub$j" && touch $(seq -f 'f%g.c' 1 100))
	done
done
git init -q "$big"
run_big="exec --mode workspace-write --workspace $big"
echo "a 50,000-file git workspace, protectGit (target: the scan <= 0.5 ms a call), CLI," \
	"${ROUNDS_PROTECT:-2001} paired rounds, means (difference +- 95 % interval):"
build-bench/bench/cmdbench --pairs "${ROUNDS_PROTECT:-2001}" \
	"bwrap, protectGit: false=$D --config $pdir/nogit.yaml --store $ps $run_big --backend bwrap -- true" \
	"bwrap, protectGit: true=$D --config $pdir/git.yaml --store $ps $run_big --backend bwrap -- true" \
	"landlock, protectGit: false=$D --config $pdir/nogit.yaml --store $ps $run_big --backend landlock -- true" \
	"landlock, protectGit: true=$D --config $pdir/git.yaml --store $ps $run_big --backend landlock -- true"
for i in $(seq 0 19); do git init -q "$big/pkg$i/sub0"; done
echo "the same with 20 nested repositories, CLI, ${ROUNDS_PROTECT:-2001} paired rounds, means" \
	"(difference +- 95 % interval):"
build-bench/bench/cmdbench --pairs "${ROUNDS_PROTECT:-2001}" \
	"bwrap, protectGit: false=$D --config $pdir/nogit.yaml --store $ps $run_big --backend bwrap -- true" \
	"bwrap, protectGit: true=$D --config $pdir/git.yaml --store $ps $run_big --backend bwrap -- true" \
	"landlock, protectGit: false=$D --config $pdir/nogit.yaml --store $ps $run_big --backend landlock -- true" \
	"landlock, protectGit: true=$D --config $pdir/git.yaml --store $ps $run_big --backend landlock -- true"
