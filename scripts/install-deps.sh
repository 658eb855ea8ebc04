#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages dsh-sandbox needs to build, test and lint, and only those that
# are missing, then the npm packages of the MCP client tests (scripts/install-mcp-clients.sh).
# Needs root when a package is missing (it says which command to run otherwise).
set -euo pipefail

packages=(
	build-essential meson ninja-build pkg-config python3
	libjansson-dev libyaml-dev libzstd-dev zstd
	libseccomp-dev libcmocka-dev bubblewrap util-linux
	musl-tools # the static landlock-run (without it: static glibc)
	iproute2 procps e2fsprogs git curl # git: t-metadata-workflows; curl: t-network
	cargo golang-go python3-pip python3-setuptools # t-paths: the toolchains' caches
	python3-wheel dh-python # tests/python: pip install offline; python3-dsh-sandbox
	clang clang-format clang-tidy cppcheck shellcheck
	scdoc man-db zsh
	debhelper dpkg-dev fakeroot lintian
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
		missing+=("$p")
	fi
done
# Node.js and npm from wherever they came (Debian's packages, or NodeSource's nodejs, which
# carries its own npm and conflicts with Debian's).
command -v npm >/dev/null || missing+=(nodejs npm)
if [ "${#missing[@]}" -eq 0 ]; then
	exec "$(dirname "$0")/install-mcp-clients.sh"
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "missing packages: ${missing[*]}" >&2
	echo "run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
	exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
"$(dirname "$0")/install-mcp-clients.sh"
