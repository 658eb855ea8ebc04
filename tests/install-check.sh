#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `make install` into a temporary DESTDIR, at its default prefix (/usr/local): the files land
# where they belong (dsh-sandbox, the static landlock-run program, the versioned library, the
# headers, the pkg-config file, the bash and zsh completions, the man pages, the example
# configuration, which loads and which the man pages name where it is); a C program built
# against the installed library through pkg-config runs; the installed landlock-run confines;
# `make uninstall` removes every file again. Prints what failed. (tests/package-check.sh
# installs at /usr, as Debian does.)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
release=$tmp/build
root=$tmp/root
prefix=/usr/local

fail() {
	echo "install-check: $*" >&2
	exit 1
}

make --no-print-directory install RELEASE="$release" DESTDIR="$root" >"$tmp/log" 2>&1 ||
	fail "make install failed: $(tail -n 20 "$tmp/log")"

libdir=$(meson introspect --buildoptions "$release" |
	python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
[ -x "$root$prefix/bin/dsh-sandbox" ] || fail "no $prefix/bin/dsh-sandbox"
lr=$root$prefix/bin/landlock-run
{ [ -f "$lr" ] && [ ! -L "$lr" ] && [ -x "$lr" ]; } || fail "no landlock-run program"
# Its own small program: static (no loader, no library) wherever the build could link one so.
if readelf -l "$lr" | grep -q 'program interpreter'; then
	grep -q 'landlock-run: dynamic' "$release/meson-logs/meson-log.txt" ||
		fail "landlock-run is not static"
	! readelf -d "$lr" | grep -E 'NEEDED.*(jansson|yaml|zstd)' || fail "landlock-run links the CLI's libraries"
fi
[ -f "$root$prefix/include/dsb/dsb.h" ] || fail "no headers"
[ -f "$root$prefix/$libdir/pkgconfig/libdshsandbox.pc" ] || fail "no pkg-config file"
cmp -s completions/dsh-sandbox.bash "$root$prefix/share/bash-completion/completions/dsh-sandbox" ||
	fail "no bash completion"
cmp -s completions/_dsh-sandbox "$root$prefix/share/zsh/site-functions/_dsh-sandbox" ||
	fail "no zsh completion"
# The man pages, unless the build said -Dman=disabled (scdoc is one of the project's
# dependencies: missing, the build fails rather than this check).
man_option=$(meson introspect --buildoptions "$release" |
	python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "man"))')
if [ "$man_option" != disabled ]; then
	for page in man1/dsh-sandbox.1 man1/landlock-run.1 man5/dsh-sandbox.yaml.5 man3/libdshsandbox.3; do
		f=$root$prefix/share/man/$page
		[ -s "$f" ] || fail "no man page $prefix/share/man/$page"
		# man-db renders it without a warning (groff's -ww): a broken page shows here.
		if command -v man >/dev/null; then
			warnings=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null) ||
				fail "man cannot render $page"
			[ -z "$warnings" ] || fail "man warns about $page: $warnings"
		fi
	done
fi
example=$prefix/share/doc/dsh-sandbox/examples/dsh-sandbox.yaml
[ -f "$root$example" ] || fail "no example configuration"
if [ "$man_option" != disabled ]; then
	# scdoc's roff puts \& after each period.
	for page in man1/dsh-sandbox.1 man5/dsh-sandbox.yaml.5; do
		sed 's/\\&//g' "$root$prefix/share/man/$page" | grep -qF "$example" ||
			fail "$page does not name the example where it is installed, $example"
	done
fi
example=$root$example
"$root$prefix/bin/dsh-sandbox" --config "$example" policy --json >/dev/null ||
	fail "the installed example configuration does not load"
soname=$(readelf -d "$root$prefix/$libdir/libdshsandbox.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = libdshsandbox.so.0 ] || fail "soname is '$soname'"

# A program of a library user, built the way the README says, against the installed files.
# The .pc file says prefix=/usr/local; the files are under the DESTDIR (as a package's, unpacked).
flags=$(PKG_CONFIG_PATH=$root$prefix/$libdir/pkgconfig \
	pkg-config --define-variable=prefix="$root$prefix" --cflags --libs libdshsandbox) ||
	fail "pkg-config does not find libdshsandbox"
# shellcheck disable=SC2086 # the flags are words
cc -o "$tmp/user" tests/data/install/user.c $flags ||
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
