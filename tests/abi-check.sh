#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The shared library exports exactly the symbols libdshsandbox.map lists (jansson's
# check-exports idea): nothing internal leaks, nothing listed is missing.
set -euo pipefail

build=${1:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$(find "$build" -maxdepth 1 -name 'libdshsandbox.so.*.*' | head -n 1)
[ -n "$lib" ] || {
	echo "no libdshsandbox.so in $build" >&2
	exit 1
}

exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ { print $3 }' | sed 's/@.*//' |
	grep -v '^DSB_' | sort -u)
listed=$(sed -n 's/^[[:space:]]*\(dsb_[a-z0-9_]*\);$/\1/p' "$top/libdshsandbox.map" | sort -u)

if [ "$exported" != "$listed" ]; then
	echo "exported symbols differ from libdshsandbox.map (< exported, > listed):" >&2
	diff <(echo "$exported") <(echo "$listed") >&2 || true
	exit 1
fi
# ...and the map lists exactly the functions the public headers declare DSB_API.
declared=$(grep -hv -e "^#define DSB_API" -e "^#ifndef DSB_API" "$top"/include/dsb/*.h | tr '\n' ' ' | grep -o 'DSB_API [^;(]*(' |
	sed 's/($//; s/.*[ *]//' | sort -u)
if [ "$declared" != "$listed" ]; then
	echo "DSB_API declarations differ from libdshsandbox.map (< declared, > listed):" >&2
	diff <(echo "$declared") <(echo "$listed") >&2 || true
	exit 1
fi
echo "$(echo "$exported" | wc -l) symbols exported, as listed and declared"
