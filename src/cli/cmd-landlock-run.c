/* SPDX-License-Identifier: MIT */
/*
 * `dsh-sandbox landlock-run` (and dsh-sandbox run through a link named landlock-run): DSH's
 * launcher contract, run in this process from src/launcher/, the code the static `landlock-run`
 * program is built from. Not an exec of that program: its path would be one more thing to find
 * and trust, and a second exec would cost what it saves.
 */
#include "../launcher/launcher.h"
#include "cli.h"

int cmd_landlock_run(const cli_global *global, int argc, char **argv)
{
	(void)global;
	return launcher_run(argc, argv);
}
