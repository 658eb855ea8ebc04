#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs an e2e script as an unprivileged user. As root it copies the binary and the scripts to a
# directory nobody can read, gives nobody its own HOME and TMPDIR, and drops every privilege
# with setpriv; as any other user it runs the script as it is (already unprivileged).
set -euo pipefail

script=$1
if [ "$(id -u)" -ne 0 ]; then
	exec bash "$script"
fi

uid=65534
gid=65534
stage=$(mktemp -d "${TMPDIR:-/tmp}/dsb-as-user.XXXXXX")
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/e2e" "$stage/home" "$stage/tmp"
cp "$DSH_SANDBOX" "$stage/bin/dsh-sandbox"
[ -z "${DSB_SECCOMP_SHIM:-}" ] || cp "$DSB_SECCOMP_SHIM" "$stage/bin/seccomp-shim"
[ -z "${DSB_NETNS_SHIM:-}" ] || cp "$DSB_NETNS_SHIM" "$stage/bin/netns-shim"
[ -z "${DSB_PROBE:-}" ] || cp "$DSB_PROBE" "$stage/bin/dsb-probe"
cp "$(dirname "$script")"/*.sh "$(dirname "$script")"/*.py "$stage/e2e/"
# DSH's session logs, where the scripts look for them.
mkdir -p "$stage/src/tests/fixtures"
cp -r "$DSB_SOURCE_ROOT/tests/fixtures/dsh" "$stage/src/tests/fixtures/"
# The server's golden files, which t-serve.sh compares with.
mkdir -p "$stage/src/tests/data"
cp -r "$DSB_SOURCE_ROOT/tests/data/server" "$stage/src/tests/data/"
# The committed shell completions, which t-completions.sh compares with.
cp -r "$DSB_SOURCE_ROOT/completions" "$stage/src/"
# The fuzz corpora, which t-log-agree.sh replays.
mkdir -p "$stage/src/fuzz"
cp -r "$DSB_SOURCE_ROOT/fuzz/corpus" "$stage/src/fuzz/"
# The MCP client examples and the npm clients (hundreds of MB), which t-serve-clients.sh runs:
# linked, not copied; the source tree must be readable by the user.
ln -s "$DSB_SOURCE_ROOT/examples" "$stage/src/examples"
ln -s "$DSB_SOURCE_ROOT/tests/clients" "$stage/src/tests/clients"
chown "$uid:$gid" "$stage/home" "$stage/tmp"
chmod -R a+rX "$stage/bin" "$stage/e2e" "$stage/src"

env DSB_E2E_UNPRIVILEGED=1 HOME="$stage/home" DSB_SOURCE_ROOT="$stage/src" TMPDIR="$stage/tmp" DSH_SANDBOX="$stage/bin/dsh-sandbox" \
	DSB_SECCOMP_SHIM="$stage/bin/seccomp-shim" DSB_NETNS_SHIM="$stage/bin/netns-shim" \
	DSB_PROBE="$stage/bin/dsb-probe" \
	setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all \
	--bounding-set=-all --no-new-privs \
	bash "$stage/e2e/$(basename "$script")"
