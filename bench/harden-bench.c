/* SPDX-License-Identifier: MIT */
/*
 * harden-bench [ROUNDS] — what the hardening of a Landlock child costs a call (not a test):
 * confined_spawn() + wait of `true` restricted to DSH's read-only grants, without and with the
 * hardening (IPC/UTS namespaces, every capability dropped, the system-call filter), interleaved,
 * medians. The difference is what a call pays for it, the filter's release at reap included.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"
#include "src/confine/confine.h"

static double spawn_true(bool harden)
{
	char *ro[] = {(char *)"/", NULL}, *rw[] = {(char *)"/dev/null", NULL};
	char *argv[] = {(char *)"/bin/true", NULL};
	confine_plan plan = {
		.steps = harden ? STEPS_SELF : STEP(STEP_LANDLOCK),
		.landlock = {.ro = ro, .rw = rw, .scope = LL_SCOPE_SIGNAL},
		.filter_flags = LANDLOCK_FILTER,
		.filter_fd = -1,
	};
	dsb_confined c = {.argv = argv, .landlock = true, .plan = &plan};
	dsb_error err;
	pid_t pid;
	int status;
	double t = now();
	if (confined_spawn(&c, DSB_MODE_READ_ONLY, NULL, 0, NULL, &pid, NULL, NULL, &err) < 0) {
		fprintf(stderr, "harden-bench: %s\n", err.message);
		exit(1);
	}
	(void)waitpid(pid, &status, 0);
	return now() - t;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 501;
	double *off = calloc((size_t)rounds, sizeof(double));
	double *on = calloc((size_t)rounds, sizeof(double));
	for (int i = 0; i < 20; i++) {
		spawn_true(false);
		spawn_true(true);
	}
	for (int i = 0; i < rounds; i++) {
		off[i] = spawn_true(false);
		on[i] = spawn_true(true);
	}
	qsort(off, (size_t)rounds, sizeof(double), cmp_double);
	qsort(on, (size_t)rounds, sizeof(double), cmp_double);
	double a = off[rounds / 2], b = on[rounds / 2];
	printf("Landlock child, %d interleaved rounds, medians:\n", rounds);
	printf("  spawn + wait of /bin/true, Landlock only      %7.3f ms  1.00x\n", a * 1e3);
	printf("  the same + namespaces, capabilities, filter   %7.3f ms  %.2fx  (+%.3f ms)\n",
	       b * 1e3, b / a, (b - a) * 1e3);
	free(off);
	free(on);
	return 0;
}
