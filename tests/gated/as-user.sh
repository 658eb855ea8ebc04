#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a gated test binary as an unprivileged user. As root it copies the binary to a private
# 0755 directory, gives nobody its own TMPDIR and drops to uid/gid 65534 with every capability
# gone; as any other user it runs the binary as it is (already unprivileged). No no_new_privs
# here: the code under test must set it itself. The binary's exit status passes through, so 77
# (skip) stays a skip.
set -euo pipefail

test_bin=$1
shift
if [ "$(id -u)" -ne 0 ]; then
	exec env DSB_GATED_UNPRIVILEGED=1 "$test_bin" "$@"
fi

uid=65534
gid=65534
stage=$(mktemp -d "${TMPDIR:-/tmp}/dsb-gated-user.XXXXXX")
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/tmp"
cp "$test_bin" "$stage/bin/"
chmod -R a+rX "$stage/bin"
chown "$uid:$gid" "$stage/tmp"

rc=0
env DSB_GATED_UNPRIVILEGED=1 TMPDIR="$stage/tmp" HOME="$stage/tmp" \
	setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all \
	"$stage/bin/$(basename "$test_bin")" "$@" || rc=$?
exit "$rc"
