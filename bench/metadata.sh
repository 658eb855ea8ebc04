#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What the metadata supervisor costs (docs/design/metadata.md), measured in one run: a chmod
# inside the workspace under Landlock, where the supervisor performs it, against the same chmod
# unconfined (microseconds a call, from a loop of chmods in one process); `tar x` of a
# 5,000-file archive with modes and times kept, under Landlock against unconfined (target
# <= 1.3x); and `bash -c true` under Landlock against bwrap's floor is bench/exec.sh's.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench dsh-sandbox bench/cmdbench >/dev/null
D=$top/build-bench/dsh-sandbox
# The store and the archive outside every writable root; the workspace inside one.
scratch=$(mktemp -d /var/tmp/dsb-metadata-bench.XXXXXX)
ws=$(mktemp -d "${TMPDIR:-/tmp}/dsb-metadata-ws.XXXXXX")
trap 'rm -rf "$scratch" "$ws"' EXIT
export DSH_SANDBOX_STORE=$scratch/store
PYTHON=python3
[ ! -x /usr/bin/python3 ] || PYTHON=/usr/bin/python3

CHMODS=${CHMODS:-20000}
loop="import os, sys, time
p = sys.argv[1]
open(p, 'w').close()
t = time.perf_counter()
for i in range($CHMODS):
    os.chmod(p, 0o600 if i % 2 else 0o644)
print('%.1f' % ((time.perf_counter() - t) / $CHMODS * 1e6))"
plain=$($PYTHON -c "$loop" "$ws/f")
landlock=$("$D" exec --backend landlock --mode workspace-write --workspace "$ws" -- \
	$PYTHON -c "$loop" "$ws/f")
bwrap=$("$D" exec --backend bwrap --mode workspace-write --workspace "$ws" -- \
	$PYTHON -c "$loop" "$ws/f")
echo "chmod inside the workspace, $CHMODS calls, microseconds a call:"
echo "  unconfined      $plain"
echo "  landlock        $landlock   (the supervisor performs it)"
echo "  bwrap           $bwrap   (the kernel, for reference)"

# An archive of 5,000 files in 50 directories, modes and times set, extracted with -p.
mkdir -p "$scratch/tree"
for d in $(seq 50); do
	mkdir "$scratch/tree/d$d"
	for f in $(seq 100); do
		: >"$scratch/tree/d$d/f$f"
	done
done
chmod -R u=rwX,g=rX,o= "$scratch/tree"
tar -C "$scratch" -cf "$scratch/tree.tar" tree
# cmdbench splits its commands on spaces: the extraction is a script of its own.
printf 'rm -rf "%s/x" && mkdir "%s/x" && tar -C "%s/x" -xpf "%s/tree.tar"\n' \
	"$ws" "$ws" "$ws" "$scratch" >"$scratch/x.sh"
echo "tar x of 5,000 files (target: landlock <= 1.3x unconfined), ${ROUNDS:-21} interleaved rounds, medians:"
build-bench/bench/cmdbench "${ROUNDS:-21}" "unconfined" \
	"unconfined=sh $scratch/x.sh" \
	"landlock=$D exec --backend landlock --mode workspace-write --workspace $ws -- sh $scratch/x.sh" \
	"bwrap=$D exec --backend bwrap --mode workspace-write --workspace $ws -- sh $scratch/x.sh"

# As a user, tar makes two metadata calls a file (no chown): where this runs as root, the same
# comparison as nobody, through setpriv.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	user=$(mktemp -d "${TMPDIR:-/tmp}/dsb-metadata-user.XXXXXX")
	trap 'rm -rf "$scratch" "$ws" "$user"' EXIT
	mkdir "$user/ws" "$user/store" "$user/config"
	chown -R nobody "$user"
	chmod 0755 "$user" "$scratch"
	chmod 0644 "$scratch/tree.tar"
	# The script beside the archive: bwrap's workspace-write mounts a fresh /tmp.
	printf 'rm -rf "%s/x" && mkdir "%s/x" && tar -C "%s/x" -xpf "%s/tree.tar"\n' \
		"$user/ws" "$user/ws" "$user/ws" "$scratch" >"$scratch/x-user.sh"
	chmod 0644 "$scratch/x-user.sh"
	as_nobody="setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=$user XDG_CONFIG_HOME=$user/config DSH_SANDBOX_STORE=$user/store"
	echo "the same as nobody, ${ROUNDS:-21} interleaved rounds, medians:"
	build-bench/bench/cmdbench "${ROUNDS:-21}" "unconfined" \
		"unconfined=$as_nobody sh $scratch/x-user.sh" \
		"landlock=$as_nobody $D exec --backend landlock --mode workspace-write --workspace $user/ws -- sh $scratch/x-user.sh" \
		"bwrap=$as_nobody $D exec --backend bwrap --mode workspace-write --workspace $user/ws -- sh $scratch/x-user.sh"
fi

# --- evidence of file refusals (docs/design/evidence.md) --------------------------------------
# What sandbox-local.evidence costs: the same workloads on each backend with the evidence on and
# off (the default), paired in one run (interleaved rounds, medians, the ratio on/off; target
# <= 1.10x): tar x of the 5,000 files, git checkout between two branches of 5,000 files each,
# and an offline npm install of a packed local package; and a run's fixed cost (bash -c true).
printf 'sandbox-local:\n  evidence: false\n' >"$scratch/evidence-off.yaml"
printf 'sandbox-local:\n  evidence: true\n' >"$scratch/evidence-on.yaml"

# A repository of 5,000 files in 50 directories, two branches that differ in every file.
repo=$ws/repo
git init -q -b one "$repo"
for d in $(seq 50); do
	mkdir "$repo/d$d"
	for f in $(seq 100); do
		echo "one $d $f" >"$repo/d$d/f$f"
	done
done
git -C "$repo" add -A
git -C "$repo" -c user.name=b -c user.email=b@b commit -qm one
git -C "$repo" checkout -qb two
for d in $(seq 50); do
	for f in $(seq 100); do
		echo "two $d $f" >"$repo/d$d/f$f"
	done
done
git -C "$repo" -c user.name=b -c user.email=b@b commit -qam two
printf 'git -C "%s" checkout -q one && git -C "%s" checkout -q two\n' "$repo" "$repo" >"$scratch/co.sh"

# npm install --offline of a packed local package with a bin (as t-metadata-workflows.sh does),
# HOME and npm's cache in the workspace, the registry on the discard port: no network.
if command -v npm >/dev/null; then
	mkdir -p "$ws/pkg" "$ws/proj"
	printf '{"name":"dsb-hello","version":"1.0.0","bin":{"dsb-hello":"cli.js"}}\n' >"$ws/pkg/package.json"
	printf '#!/usr/bin/env node\nconsole.log("hello")\n' >"$ws/pkg/cli.js"
	(cd "$ws/pkg" && npm pack --silent --pack-destination .. >/dev/null 2>&1)
	printf '{"name":"proj","version":"1.0.0"}\n' >"$ws/proj/package.json"
	cat >"$scratch/npm.sh" <<EOS
export HOME='$ws' npm_config_cache='$ws/.npm' npm_config_registry=http://127.0.0.1:9/
export npm_config_update_notifier=false npm_config_audit=false npm_config_fund=false
cd '$ws/proj' && rm -rf node_modules package-lock.json &&
	npm install --offline --no-audit --no-fund ../dsb-hello-1.0.0.tgz >/dev/null 2>&1
EOS
fi

for backend in landlock bwrap; do
	on="$D --config $scratch/evidence-on.yaml exec --backend $backend --mode workspace-write --workspace $ws --"
	off="$D --config $scratch/evidence-off.yaml exec --backend $backend --mode workspace-write --workspace $ws --"
	echo "evidence: tar x of 5,000 files under $backend, on against off, ${ROUNDS:-21} rounds, medians:"
	build-bench/bench/cmdbench "${ROUNDS:-21}" "off" "off=$off sh $scratch/x.sh" "on=$on sh $scratch/x.sh"
	echo "evidence: git checkout of 5,000 files there and back under $backend, ${ROUNDS:-21} rounds, medians:"
	build-bench/bench/cmdbench "${ROUNDS:-21}" "off" "off=$off sh $scratch/co.sh" "on=$on sh $scratch/co.sh"
	if [ -e "$scratch/npm.sh" ]; then
		echo "evidence: npm install --offline under $backend, ${ROUNDS:-21} rounds, medians:"
		build-bench/bench/cmdbench "${ROUNDS:-21}" "off" "off=$off sh $scratch/npm.sh" \
			"on=$on sh $scratch/npm.sh"
	fi
	echo "evidence: bash -c true under $backend, $((${ROUNDS:-21} * 3)) rounds, medians:"
	build-bench/bench/cmdbench "$((${ROUNDS:-21} * 3))" "off" "off=$off bash -c true" \
		"on=$on bash -c true"
done
