#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make install` into a temporary DESTDIR, as a packager runs it: the files land where they
# belong (dsh-sandbox, the landlock-run link, the versioned library, the headers, the pkg-config
# file, the bash and zsh completions); a C program built against the installed library through pkg-config runs; the installed
# landlock-run confines; `make uninstall` removes every file again. Prints what failed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
release=$tmp/build
root=$tmp/root
prefix=/usr

fail() {
	echo "install-check: $*" >&2
	exit 1
}

make --no-print-directory install RELEASE="$release" PREFIX="$prefix" DESTDIR="$root" >"$tmp/log" 2>&1 ||
	fail "make install failed: $(tail -n 20 "$tmp/log")"

libdir=$(meson introspect --buildoptions "$release" |
	python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
[ -x "$root$prefix/bin/dsh-sandbox" ] || fail "no $prefix/bin/dsh-sandbox"
[ "$(readlink "$root$prefix/bin/landlock-run")" = dsh-sandbox ] || fail "no landlock-run link"
[ -f "$root$prefix/include/dsb/dsb.h" ] || fail "no headers"
[ -f "$root$prefix/$libdir/pkgconfig/libdshsandbox.pc" ] || fail "no pkg-config file"
cmp -s completions/dsh-sandbox.bash "$root$prefix/share/bash-completion/completions/dsh-sandbox" ||
	fail "no bash completion"
cmp -s completions/_dsh-sandbox "$root$prefix/share/zsh/site-functions/_dsh-sandbox" ||
	fail "no zsh completion"
soname=$(readelf -d "$root$prefix/$libdir/libdshsandbox.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libdshsandbox.so.0 ] || fail "soname is '$soname'"

# A program of a library user, built the way the README says, against the installed files.
cat >"$tmp/user.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <dsb/dsb.h>

int main(void)
{
	if (dsb_mode_from_string("workspace-write") != DSB_MODE_WORKSPACE_WRITE)
		return 1;
	printf("%s\n", dsb_version());
	return 0;
}
C
# The .pc file says prefix=/usr; the files are under the DESTDIR (as a package's, unpacked).
flags=$(PKG_CONFIG_PATH=$root$prefix/$libdir/pkgconfig \
	pkg-config --define-variable=prefix="$root$prefix" --cflags --libs libdshsandbox) ||
	fail "pkg-config does not find libdshsandbox"
# shellcheck disable=SC2086 # the flags are words
cc -o "$tmp/user" "$tmp/user.c" $flags ||
	fail "cannot build against the installed library"
version=$(LD_LIBRARY_PATH=$root$prefix/$libdir "$tmp/user") || fail "the program failed"
[ "$version" = "$("$root$prefix/bin/dsh-sandbox" --version | awk '{print $NF}')" ] ||
	fail "the library says '$version'"

# The installed launcher confines: DSH's contract, a write outside its rules is denied.
mkdir -p "$tmp/ws"
"$root$prefix/bin/landlock-run" --ro / --rw "$tmp/ws" -- sh -c "echo in > '$tmp/ws/f'" ||
	fail "landlock-run did not run the command"
if "$root$prefix/bin/landlock-run" --ro / --rw "$tmp/ws" -- sh -c "echo out > '$tmp/outside'" 2>/dev/null; then
	fail "landlock-run let a write outside its rules through"
fi

make --no-print-directory uninstall RELEASE="$release" >"$tmp/log" 2>&1 ||
	fail "make uninstall failed: $(tail -n 20 "$tmp/log")"
left=
[ ! -d "$root" ] || left=$(find "$root" -type f -o -type l)
[ -z "$left" ] || fail "left after uninstall: $left"
echo "install-check: installed, built against, confined, uninstalled"
