#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages, built and used as a user gets them: `dpkg-buildpackage -b -us -uc` in a
# copy of the tree (it writes beside and inside the tree it builds); lintian without errors
# (its warnings are printed); each package holds what it should; unpacked into a scratch root,
# the command probes, confines the demo of `make run`, and a C program builds against the -dev
# package through pkg-config. As root with CI=true (a disposable machine), the packages are
# also installed with dpkg, used the same way, and purged, leaving nothing behind.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

fail() {
	echo "package-check: $*" >&2
	exit 1
}

for tool in dpkg-buildpackage dh lintian pkg-config cc; do
	command -v "$tool" >/dev/null || fail "no $tool: run scripts/install-deps.sh"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version=$(dpkg-parsechangelog -l debian/changelog -S Version)
src=$tmp/build/dsh-sandbox-$version

# The sources as git sees them (untracked files too, not ignored ones: no build directories, no
# npm clients); without git, the tree less its build directories and npm clients.
mkdir -p "$src"
if [ -e .git ]; then
	git ls-files -z -co --exclude-standard |
		while IFS= read -r -d '' f; do
			if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
		done |
		tar --null -T - -cf - | tar -C "$src" -xf -
else
	tar --exclude='./build*' --exclude='./obj-*' --exclude=node_modules -cf - . |
		tar -C "$src" -xf -
fi

start=$(date +%s)
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -b -us -uc) >"$tmp/build.log" 2>&1 ||
	fail "dpkg-buildpackage failed: $(tail -n 30 "$tmp/build.log")"
echo "package-check: built in $(($(date +%s) - start))s"

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb() {
	local f=$tmp/build/${1}_${version}_$arch.deb
	[ -f "$f" ] || fail "no $1 package"
	echo "$f"
}
cli_deb=$(deb dsh-sandbox)
lib_deb=$(deb libdshsandbox0)
dev_deb=$(deb libdshsandbox-dev)
py_deb=$tmp/build/python3-dsh-sandbox_${version}_all.deb
[ -f "$py_deb" ] || fail "no python3-dsh-sandbox package"

# Errors fail the step; warnings and the rest are shown. (Lintian says so when run as root.)
lintian --fail-on error --display-info "$tmp/build/dsh-sandbox_${version}_$arch.changes" \
	>"$tmp/lintian.log" 2>&1 || {
	cat "$tmp/lintian.log"
	fail "lintian found errors"
}
if [ -s "$tmp/lintian.log" ]; then
	sed 's/^/lintian: /' "$tmp/lintian.log"
fi

# has DEB PATH...: the package holds each path (as `dpkg -c` lists it, without the leading .).
has() {
	local deb=$1 list
	shift
	list=$(dpkg -c "$deb" | awk '{print $6}' | sed 's|^\.||')
	for p in "$@"; do
		grep -qx "$p" <<<"$list" || fail "$(basename "$deb") lacks $p"
	done
}
# lacks DEB PREFIX...: no file of the package lies under each prefix.
lacks() {
	local deb=$1 list
	shift
	list=$(dpkg -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\.||')
	for p in "$@"; do
		! grep -q "^$p" <<<"$list" || fail "$(basename "$deb") holds $(grep "^$p" <<<"$list")"
	done
}
has "$cli_deb" /usr/bin/dsh-sandbox /usr/bin/landlock-run \
	/usr/share/man/man1/dsh-sandbox.1.gz /usr/share/man/man1/landlock-run.1.gz \
	/usr/share/man/man5/dsh-sandbox.yaml.5.gz \
	/usr/share/doc/dsh-sandbox/examples/dsh-sandbox.yaml /usr/share/doc/dsh-sandbox/copyright
lacks "$cli_deb" /usr/lib /usr/include /usr/share/man/man3
has "$lib_deb" "/usr/lib/$multiarch/libdshsandbox.so.0"
lib_files=$(dpkg -c "$lib_deb" | awk '$1 ~ /^-/ {print $6}')
grep -q "^\./usr/lib/$multiarch/libdshsandbox\.so\.0\.[0-9.]*$" <<<"$lib_files" ||
	fail "$(basename "$lib_deb") lacks libdshsandbox.so.0.MINOR.PATCH"
lacks "$lib_deb" /usr/bin /usr/include /usr/share/man "/usr/lib/$multiarch/libdshsandbox.so$" \
	"/usr/lib/$multiarch/pkgconfig"
has "$dev_deb" /usr/include/dsb/dsb.h /usr/include/dsb/backends.h \
	"/usr/lib/$multiarch/libdshsandbox.so" "/usr/lib/$multiarch/pkgconfig/libdshsandbox.pc" \
	/usr/share/man/man3/libdshsandbox.3.gz
lacks "$dev_deb" /usr/bin "/usr/lib/$multiarch/libdshsandbox.so."
pydir=/usr/lib/python3/dist-packages/dsh_sandbox
has "$py_deb" "$pydir/__init__.py" "$pydir/_lib.py" "$pydir/errors.py" "$pydir/py.typed"
lacks "$py_deb" /usr/bin "/usr/lib/$multiarch" /usr/include

# demo PREFIX: what `make run` shows, with PREFIX/bin's programs, in a store and
# configuration of its own: the probe; a write in the workspace lands; one to /etc is denied,
# by exec and by the bash tool; landlock-run confines.
demo() {
	local bin=$1/bin ws=$tmp/demo out
	rm -rf "${ws:?}" "${tmp:?}/home"
	mkdir -p "$ws" "$tmp/home"
	[ ! -e /etc/dsh-sandbox-demo ] || fail "/etc/dsh-sandbox-demo exists before the demo"
	export HOME=$tmp/home DSH_SANDBOX_STORE=$tmp/home/store XDG_CONFIG_HOME=$tmp/home/config
	unset DSH_SANDBOX_CONFIG DSH_PERMISSION_MODE
	out=$("$bin/dsh-sandbox" probe) || fail "$bin/dsh-sandbox probe failed"
	grep -q '^selected: ' <<<"$out" || fail "probe selected nothing: $out"
	out=$("$bin/dsh-sandbox" exec --mode workspace-write --workspace "$ws" -- \
		sh -c "echo landed > '$ws/inside.txt' && cat '$ws/inside.txt'") ||
		fail "exec of a write in the workspace failed"
	[ "$out" = landed ] || fail "exec printed '$out'"
	if "$bin/dsh-sandbox" exec --mode workspace-write --workspace "$ws" -- \
		sh -c 'echo escaped > /etc/dsh-sandbox-demo' 2>"$tmp/err"; then
		fail "exec let a write to /etc through"
	fi
	grep -qF '[sandbox: file access denied under workspace-write mode]' "$tmp/err" ||
		fail "no denial marker: $(cat "$tmp/err")"
	out=$("$bin/dsh-sandbox" bash --mode workspace-write --workspace "$ws" \
		'echo landed > inside.txt && cat inside.txt; echo escaped > /etc/dsh-sandbox-demo') ||
		fail "the bash tool failed"
	if ! grep -qx landed <<<"$out" || ! grep -qF '[sandbox: file access denied' <<<"$out"; then
		fail "the bash tool printed: $out"
	fi
	"$bin/landlock-run" --ro / --rw "$ws" -- sh -c "echo in > '$ws/ll'" ||
		fail "landlock-run did not run the command"
	if "$bin/landlock-run" --ro / --rw "$ws" -- sh -c "echo out > '$tmp/ll-outside'" 2>/dev/null; then
		fail "landlock-run let a write outside its rules through"
	fi
	[ ! -e /etc/dsh-sandbox-demo ] || fail "/etc/dsh-sandbox-demo was written"
}

# python_binding PYTHONPATH: the Python binding imported from there and run through whatever
# library the loader finds: a command's output captured, a write outside the workspace denied.
python_binding() {
	local out
	out=$(cd "$tmp" && PYTHONPATH=$1 /usr/bin/python3 -c '
import os, sys
from dsh_sandbox import Sandbox, FsSandboxDenied
assert sys.argv[1] == os.path.dirname(os.path.dirname(__import__("dsh_sandbox").__file__))
os.makedirs("pyws", exist_ok=True)
sb = Sandbox(mode="workspace-write", workspace="pyws")
print(sb.run(["sh", "-c", "echo landed > in.txt; cat in.txt"]).stdout.decode(), end="")
try:
    sb.write("/etc/dsh-sandbox-demo", "x")
except FsSandboxDenied as e:
    print(e.code)
' "$1") || fail "the Python binding failed: $out"
	[ "$out" = "landed
FS_SANDBOX_DENIED" ] || fail "the Python binding printed: $out"
}

# user BIN PKG_CONFIG_ARGS...: a library user's program, built with pkg-config's flags, runs
# and agrees with BIN/dsh-sandbox on the version.
user() {
	local bin=$1 flags
	shift
	flags=$(pkg-config "$@" --cflags --libs libdshsandbox) ||
		fail "pkg-config does not find libdshsandbox"
	# shellcheck disable=SC2086 # the flags are words
	cc -o "$tmp/user" "$top/tests/data/install/user.c" $flags ||
		fail "cannot build against the package"
	[ "$("$tmp/user")" = "$("$bin/dsh-sandbox" --version | awk '{print $NF}')" ] ||
		fail "the library says $("$tmp/user"), the command $("$bin/dsh-sandbox" --version)"
}

# A scratch root: the three packages unpacked, as dpkg would lay them out.
root=$tmp/root
for f in "$cli_deb" "$lib_deb" "$dev_deb" "$py_deb"; do
	dpkg -x "$f" "$root"
done
export LD_LIBRARY_PATH=$root/usr/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
(demo "$root/usr")
# The .pc file says prefix=/usr; its files are in the scratch root.
(PKG_CONFIG_PATH=$root/usr/lib/$multiarch/pkgconfig user "$root/usr/bin" \
	--define-variable=prefix="$root/usr")
(python_binding "$root/usr/lib/python3/dist-packages")
unset LD_LIBRARY_PATH
echo "package-check: scratch root: probe, demo, landlock-run, a program built with pkg-config," \
	"the Python binding"

# On the machine itself, only where it is disposable.
if [ "$(id -u)" -ne 0 ] || [ "${CI:-}" != true ]; then
	echo "package-check: not installed on this machine (needs root and CI=true)"
	exit 0
fi
packages=(dsh-sandbox libdshsandbox0 libdshsandbox-dev python3-dsh-sandbox)
for p in "${packages[@]}"; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q ' installed$'; then
		fail "$p is installed already: not touching it"
	fi
done
dpkg -i "$cli_deb" "$lib_deb" "$dev_deb" "$py_deb" >"$tmp/dpkg.log" 2>&1 ||
	fail "dpkg -i failed: $(cat "$tmp/dpkg.log")"
trap 'dpkg --purge "${packages[@]}" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
mapfile -t files < <(dpkg -L "${packages[@]}" | sort -u)
(demo /usr)
[ "$(command -v dsh-sandbox)" = /usr/bin/dsh-sandbox ] || fail "dsh-sandbox is not /usr/bin's"
# (A container's dpkg may be told to leave man pages out: path-exclude.)
if command -v man >/dev/null && [ -e /usr/share/man/man1/dsh-sandbox.1.gz ]; then
	man -w dsh-sandbox >/dev/null || fail "man does not find dsh-sandbox(1)"
fi
(user /usr/bin)
(python_binding /usr/lib/python3/dist-packages)
dpkg --purge "${packages[@]}" >"$tmp/dpkg.log" 2>&1 || fail "dpkg --purge failed: $(cat "$tmp/dpkg.log")"
trap 'rm -rf "$tmp"' EXIT
for p in "${packages[@]}"; do
	! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'installed' ||
		fail "$p is still installed after the purge"
done
left=()
for f in "${files[@]}"; do
	# Directories the system shares (/usr/bin, /usr/share/man/man1, ...) stay.
	if [ -L "$f" ] || { [ -e "$f" ] && [ ! -d "$f" ]; }; then left+=("$f"); fi
done
[ -d /usr/include/dsb ] && left+=(/usr/include/dsb)
[ -d /usr/share/doc/dsh-sandbox ] && left+=(/usr/share/doc/dsh-sandbox)
[ "${#left[@]}" -eq 0 ] || fail "left after the purge: ${left[*]}"
echo "package-check: installed with dpkg: probe, demo, a program built with pkg-config; purged"
