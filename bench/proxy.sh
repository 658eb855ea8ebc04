#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The allow-list proxy's throughput (src/net/, run on its own by tests/net/dsb-proxy.c), as
# ratios against the direct download measured in the same run: curl fetching a 100 MB file from
# a local server over 127.0.0.1, directly and through the proxy as plain HTTP, as a CONNECT
# tunnel and as SOCKS5. The server sends with sendfile(2), so the proxy's copies are what is
# measured, not the server's. Medians of interleaved runs; target >= 0.8x.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -f build-bench/build.ninja ] || meson setup build-bench -Dbuildtype=release -Dtests=false >/dev/null
ninja -C build-bench bench/dsb-proxy >/dev/null
dir=$(mktemp -d "${TMPDIR:-/tmp}/dsb-proxy-bench.XXXXXX")
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$dir"
}
trap cleanup EXIT

size_mb=${SIZE_MB:-100}
head -c "$((size_mb * 1024 * 1024))" /dev/urandom >"$dir/file"


# Starts "$@" in the background (in this shell, so that cleanup knows its pid) with its stdout
# in $dir/$name.out; first_line waits for the port it prints.
start() {
	local name=$1
	shift
	"$@" >"$dir/$name.out" &
	pids+=($!)
}
first_line() {
	for _ in $(seq 100); do
		[ -s "$dir/$1.out" ] && break
		sleep 0.05
	done
	head -n1 "$dir/$1.out"
}
start server python3 bench/sendfile-server.py "$dir/file"
start proxy build-bench/bench/dsb-proxy --allow "bench.test:*" --host bench.test=127.0.0.1
server_port=$(first_line server)
proxy_port=$(first_line proxy)
url=http://bench.test:$server_port/file
# The direct download resolves the same name to the same address, without a proxy.
direct=(--resolve "bench.test:$server_port:127.0.0.1")

# Seconds for one download through curl's arguments "$@"; fails when the size is wrong.
fetch() {
	local out
	out=$(curl -sS --noproxy '' -o /dev/null -w '%{size_download} %{time_total}' "$@" "$url")
	[ "${out% *}" = "$((size_mb * 1024 * 1024))" ] || {
		echo "bench/proxy.sh: short download ($out) with $*" >&2
		exit 1
	}
	echo "${out#* }"
}

rounds=${ROUNDS:-7}
declare -A times
kinds=(direct "plain HTTP" CONNECT SOCKS5)
fetch "${direct[@]}" >/dev/null # warm the page cache
for _ in $(seq "$rounds"); do
	times[direct]+="$(fetch "${direct[@]}") "
	times[plain HTTP]+="$(fetch -x "http://127.0.0.1:$proxy_port") "
	times[CONNECT]+="$(fetch -p -x "http://127.0.0.1:$proxy_port") "
	times[SOCKS5]+="$(fetch -x "socks5h://127.0.0.1:$proxy_port") "
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(median <<<"${times[direct]}")
echo "== a ${size_mb} MB download over 127.0.0.1 ($rounds interleaved rounds; medians)"
for k in "${kinds[@]}"; do
	t=$(median <<<"${times[$k]}")
	awk -v k="$k" -v t="$t" -v b="$base" -v mb="$size_mb" \
		'BEGIN { printf "%-12s %7.3f s  %7.0f MB/s  throughput %.2fx direct\n", k, t, mb / t, b / t }'
done
