/* SPDX-License-Identifier: MIT */
/*
 * DSH's `landlock-run` launcher contract (dsh-compat §5.6), shared by `dsh-sandbox landlock-run`
 * and the static `landlock-run` program (main.c), which is built from this piece and the
 * confinement's self-restriction alone: no JSON, no YAML, no allocation beyond the argument
 * lists.
 */
#ifndef DSB_LAUNCHER_LAUNCHER_H
#define DSB_LAUNCHER_LAUNCHER_H

/*
 * Runs the launcher on @argv (@argv[0] is its name, @argc its length): restricts this process
 * and execs the command, or prints the probe's verdict or a usage error. Returns the exit
 * status when it does not exec (125 for every launcher failure); a failure once the process is
 * restricted does not return but _exit()s with 125. Borrows @argv.
 */
int launcher_run(int argc, char **argv);

#endif
