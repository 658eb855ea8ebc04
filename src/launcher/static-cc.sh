#!/bin/sh
# SPDX-License-Identifier: MIT
# static-cc.sh HEADERS ASM -- CC ARGS...: runs the compiler command CC ARGS... (meson's build of
# the static landlock-run). With HEADERS non-empty (musl-gcc), first makes HEADERS a directory
# of the kernel's UAPI headers alone: links to /usr/include/linux and asm-generic, and ASM as
# asm. musl-gcc searches musl's headers only, and Debian's musl-dev ships no kernel headers;
# those are libc-independent, the rest of /usr/include (glibc's) must stay out of reach.
set -eu
headers=$1
asm=$2
shift 3
if [ -n "$headers" ]; then
	mkdir -p "$headers"
	ln -sfn /usr/include/linux "$headers/linux"
	ln -sfn /usr/include/asm-generic "$headers/asm-generic"
	ln -sfn "$asm" "$headers/asm"
	exec "$@" -isystem "$headers"
fi
exec "$@"
