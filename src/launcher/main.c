/* SPDX-License-Identifier: MIT */
/*
 * The `landlock-run` program: DSH's launcher as a small static binary (musl where musl-gcc
 * exists, else static glibc), so that confining a command costs one short process start and
 * one exec (bench/exec.sh). The contract is launcher.c's, as `dsh-sandbox landlock-run` runs it.
 */
#include "launcher.h"

int main(int argc, char **argv)
{
	return launcher_run(argc, argv);
}
