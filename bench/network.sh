#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What a network policy costs (docs/design/network.md), measured in one run: `bash -c true`
# confined under network none and allowlist against the same under full (target <= 1.1x), on
# both backends; and a 100 MB download from a server on 127.0.0.1 through the allow-list's proxy
# from inside the sandbox against the same download unconfined and direct (target >= 0.8x).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench dsh-sandbox bench/cmdbench >/dev/null
D=$top/build-bench/dsh-sandbox
scratch=$(mktemp -d /var/tmp/dsb-network-bench.XXXXXX)
ws=$(mktemp -d "${TMPDIR:-/tmp}/dsb-network-ws.XXXXXX")
server=
trap '[ -z "$server" ] || kill "$server"; rm -rf "$scratch" "$ws"' EXIT
export DSH_SANDBOX_STORE=$scratch/store
PYTHON=python3
[ ! -x /usr/bin/python3 ] || PYTHON=/usr/bin/python3

cat >"$scratch/allow.yaml" <<YAML
network:
  access: allowlist
  allow: ["files.test:*"]
  hosts: {"files.test": "127.0.0.1"}
YAML

ROUNDS=${ROUNDS:-31}
for b in bwrap landlock; do
	echo "bash -c true under $b, workspace-write (target: none and allowlist <= 1.1x full), $ROUNDS interleaved rounds, medians:"
	build-bench/bench/cmdbench "$ROUNDS" "full" \
		"full=$D exec --backend $b --mode workspace-write --workspace $ws -- bash -c true" \
		"none=$D exec --backend $b --mode workspace-write --workspace $ws --network none -- bash -c true" \
		"allowlist=$D --config $scratch/allow.yaml exec --backend $b --mode workspace-write --workspace $ws -- bash -c true"
done

# Against a plain command, and, where SRT names sandbox-runtime's `srt` (npm's
# @anthropic-ai/sandbox-runtime; it needs bwrap, socat and ripgrep), its per-command cost with the
# same allow-list.
rows=("plain=bash -c true"
	"allowlist-bwrap=$D --config $scratch/allow.yaml exec --backend bwrap --mode workspace-write --workspace $ws -- bash -c true"
	"allowlist-landlock=$D --config $scratch/allow.yaml exec --backend landlock --mode workspace-write --workspace $ws -- bash -c true")
if [ -n "${SRT:-}" ]; then
	printf '{"network": {"allowedDomains": ["files.test"], "deniedDomains": []}, "filesystem": {"denyRead": [], "allowWrite": ["%s"], "denyWrite": []}}\n' \
		"$ws" >"$scratch/srt.json"
	rows+=("srt=$SRT --settings $scratch/srt.json bash -c true")
fi
echo "bash -c true under an allow-list, against unconfined, $ROUNDS interleaved rounds, medians:"
build-bench/bench/cmdbench "$ROUNDS" "plain" "${rows[@]}"

# 100 MB on the loopback from bench/sendfile-server.py: the server costs next to nothing, so on
# a small machine the proxy's copies are not measured against the server's (python's
# http.server copies in Python, and curl, server and proxy then share two cores).
MB=${MB:-100}
head -c "$((MB * 1024 * 1024))" /dev/zero >"$scratch/blob"
$PYTHON bench/sendfile-server.py "$scratch/blob" >"$scratch/http.port" &
server=$!
port=
for _ in $(seq 100); do
	port=$(head -n1 "$scratch/http.port")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { echo "the HTTP server did not start" >&2; exit 1; }
fetch=(curl -sS -o /dev/null -w '%{speed_download}')
echo "a ${MB} MB download from 127.0.0.1 (target: through the proxy >= 0.8x direct), bytes/s, best of 3:"
best() {
	local top=0 v
	for _ in 1 2 3; do
		v=$("$@")
		v=${v%.*}
		[ "$v" -gt "$top" ] && top=$v
	done
	echo "$top"
}
direct=$(best "${fetch[@]}" "http://127.0.0.1:$port/blob")
for b in bwrap landlock; do
	proxied=$(best "$D" --config "$scratch/allow.yaml" exec --backend "$b" --mode workspace-write \
		--workspace "$ws" -- "${fetch[@]}" "http://files.test:$port/blob")
	echo "  $b: direct $direct, through the proxy $proxied, ratio $(awk -v a="$proxied" -v b="$direct" 'BEGIN { printf "%.2f", a / b }')"
done
