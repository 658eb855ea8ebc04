#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs an e2e script as an unprivileged user. As root it stages everything the script runs or
# reads in a directory of its own that the user nobody can reach, gives nobody its own HOME and
# TMPDIR, and drops every privilege with setpriv; as any other user it runs the script as it is
# (already unprivileged).
#
# Nothing is used in place: the checkout may lie in a directory closed to the user nobody
# (/root, a 0700 home, a mktemp -d), so the programs, the library and the files the scripts read
# are copied, and the npm clients' node_modules (hundreds of MB) are bind-mounted into the stage
# in a mount namespace of the script's own. .ci/run runs the tests from such a checkout.
set -euo pipefail

script=$1
if [ "$(id -u)" -ne 0 ]; then
	exec bash "$script"
fi

uid=65534
gid=65534
src=${DSB_SOURCE_ROOT:?}
build=${DSB_BUILD_ROOT:-$(dirname "$DSH_SANDBOX")}
stage=$(mktemp -d "${TMPDIR:-/tmp}/dsb-as-user.XXXXXX")
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"
mkdir -p "$stage/bin" "$stage/e2e" "$stage/home" "$stage/tmp" "$stage/build/tests"
cp "$DSH_SANDBOX" "$stage/bin/dsh-sandbox"
[ -z "${DSB_SECCOMP_SHIM:-}" ] || cp "$DSB_SECCOMP_SHIM" "$stage/bin/seccomp-shim"
[ -z "${DSB_NETNS_SHIM:-}" ] || cp "$DSB_NETNS_SHIM" "$stage/bin/netns-shim"
[ -z "${DSB_PROBE:-}" ] || cp "$DSB_PROBE" "$stage/bin/dsb-probe"
[ -z "${DSB_LANDLOCK_RUN:-}" ] || cp "$DSB_LANDLOCK_RUN" "$stage/bin/landlock-run"
[ -z "${DSB_PY_LAYOUT:-}" ] || cp "$DSB_PY_LAYOUT" "$stage/bin/py-layout"
[ -z "${DSB_PY_LIBRARY:-}" ] || cp "$DSB_PY_LIBRARY" "$stage/build/tests/"
cp "$(dirname "$script")"/*.sh "$(dirname "$script")"/*.py "$stage/e2e/"

# The shared library where the C example finds it (its RUNPATH is $ORIGIN/..), the generated
# header, and the -uninstalled.pc that t-example-c.sh builds the example with, pointed at the
# stage.
cp -r "$build/include" "$stage/build/"
find "$build" -maxdepth 1 -name "libdshsandbox.so*" ! -type d -exec cp -P -t "$stage/build/" {} +
[ -z "${DSB_EXAMPLE_AGENT:-}" ] || cp "$DSB_EXAMPLE_AGENT" "$stage/build/tests/example-agent"
if [ -d "$build/meson-uninstalled" ]; then
	mkdir -p "$stage/build/meson-uninstalled"
	sed -e "s|^prefix=.*|prefix=$stage/build|" -e "s|^srcdir=.*|srcdir=$stage/src|" \
		"$build/meson-uninstalled/libdshsandbox-uninstalled.pc" \
		>"$stage/build/meson-uninstalled/libdshsandbox-uninstalled.pc"
fi

# What the scripts read from the source tree: DSH's session logs, the server's golden files, the
# committed shell completions, the fuzz corpora (t-log-agree.sh), the documentation, the man
# pages, the public headers and the examples (t-policy.sh, t-example-c.sh, t-serve-clients.sh),
# the bindings (tests/python).
mkdir -p "$stage/src/tests/fixtures" "$stage/src/tests/data" "$stage/src/fuzz"
cp -r "$src/tests/fixtures/dsh" "$stage/src/tests/fixtures/"
cp -r "$src/tests/data/server" "$stage/src/tests/data/"
cp -r "$src/completions" "$src/docs" "$src/man" "$src/include" "$stage/src/"
cp -r "$src/fuzz/corpus" "$stage/src/fuzz/"
tar -C "$src" --exclude=node_modules -cf - examples | tar -C "$stage/src" -xf -
# The language bindings' sources (t-node.sh builds a copy of bindings/node), without what npm,
# tsc and setuptools made, and the README whose Python example tests/python runs.
tar -C "$src" --exclude=node_modules --exclude=.npm-cache --exclude=dist --exclude='*.tgz' \
	--exclude=__pycache__ --exclude='*.egg-info' --exclude=build \
	-cf - bindings README.md | tar -C "$stage/src" -xf -
chown "$uid:$gid" "$stage/home" "$stage/tmp"
chmod -R a+rX "$stage/bin" "$stage/e2e" "$stage/src" "$stage/build"

# node_modules: each one bind-mounted where the script looks for it, when it is there at all
# (scripts/install-mcp-clients.sh); nobody needs only its own directories' permissions then.
# bindings/node/.npm-cache is the package cache t-node.sh installs the npm pack tarball from.
binds=()
for dir in examples/node/node_modules tests/clients/node_modules bindings/node/node_modules \
	bindings/node/.npm-cache; do
	[ -d "$src/$dir" ] || continue
	mkdir -p "$stage/src/$dir"
	binds+=("$src/$dir" "$stage/src/$dir")
done

staged=(DSB_E2E_UNPRIVILEGED=1 HOME="$stage/home" TMPDIR="$stage/tmp"
	DSB_SOURCE_ROOT="$stage/src" DSB_BUILD_ROOT="$stage/build" LD_LIBRARY_PATH="$stage/build"
	DSH_SANDBOX="$stage/bin/dsh-sandbox" DSB_SECCOMP_SHIM="$stage/bin/seccomp-shim"
	DSB_NETNS_SHIM="$stage/bin/netns-shim" DSB_PROBE="$stage/bin/dsb-probe")
# Unset stays unset: a script skips what it was not given.
[ -z "${DSB_LANDLOCK_RUN:-}" ] || staged+=(DSB_LANDLOCK_RUN="$stage/bin/landlock-run")
[ -z "${DSB_EXAMPLE_AGENT:-}" ] || staged+=(DSB_EXAMPLE_AGENT="$stage/build/tests/example-agent")
[ -z "${DSB_PY_LAYOUT:-}" ] || staged+=(DSB_PY_LAYOUT="$stage/bin/py-layout")
[ -z "${DSB_PY_LIBRARY:-}" ] ||
	staged+=(DSB_PY_LIBRARY="$stage/build/tests/$(basename "$DSB_PY_LIBRARY")")
run=(env "${staged[@]}"
	setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all
	--bounding-set=-all --no-new-privs
	bash "$stage/e2e/$(basename "$script")")
if [ ${#binds[@]} -eq 0 ]; then
	"${run[@]}"
else
	# The mounts go with the namespace when the script ends; nothing to undo.
	# shellcheck disable=SC2016 # expanded by the inner bash
	unshare --mount --propagation private bash -c '
		set -e
		n=$1
		shift
		while [ "$n" -gt 0 ]; do
			mount --bind "$1" "$2"
			shift 2
			n=$((n - 2))
		done
		exec "$@"' as-user "${#binds[@]}" "${binds[@]}" "${run[@]}"
fi
