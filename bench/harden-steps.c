/* SPDX-License-Identifier: MIT */
/*
 * harden-steps [ROUNDS] — what each step of a Landlock child's confinement costs (not a test):
 * the step alone, timed inside a forked child (the child's own clock, so neither the fork nor
 * the reap counts), medians over ROUNDS children. The steps are those confine_self() takes, the
 * same functions: the IPC and UTS namespaces, Landlock on DSH's read-only grants, every
 * capability dropped (the bounding set is one credential commit per capability), the
 * system-call filter, and, for scale, a one-instruction filter (what any filter costs the
 * kernel to take: conversion and JIT). This is the item-by-item account of what `landlock-run`
 * pays beyond DSH's launcher, which takes the Landlock step alone.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "timing.h"
#include "src/confine/confine.h"
#include "src/confine/seccomp.h"

typedef enum part {
	PART_NAMESPACES,
	PART_LANDLOCK,
	PART_CAPABILITIES,
	PART_FILTER,
	PART_TINY_FILTER,
	_PART_MAX,
} part;

static const char *const part_names[_PART_MAX] = {
	[PART_NAMESPACES] = "IPC and UTS namespaces",
	[PART_LANDLOCK] = "Landlock, DSH's read-only grants",
	[PART_CAPABILITIES] = "capabilities, bounding set included",
	[PART_FILTER] = "the system-call filter",
	[PART_TINY_FILTER] = "  (a one-instruction filter)",
};

static void take(part s)
{
	char root[] = "/", devnull[] = "/dev/null";
	char *ro[] = {root, NULL}, *rw[] = {devnull, NULL};
	landlock_plan plan = {.ro = ro, .rw = rw, .scope = 0};
	landlock_status st;
	char msg[256];
	struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog tiny = {.len = 1, .filter = allow};

	switch (s) {
	case PART_NAMESPACES:
		(void)harden_namespaces(false, false);
		break;
	case PART_LANDLOCK:
		(void)landlock_restrict(&plan, &st, msg, sizeof(msg));
		break;
	case PART_CAPABILITIES:
		(void)harden_drop_caps();
		break;
	case PART_FILTER:
		(void)prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L);
		(void)seccomp_install(seccomp_program_for(LANDLOCK_FILTER));
		break;
	case PART_TINY_FILTER:
		(void)prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L);
		(void)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &tiny);
		break;
	case _PART_MAX:
		break;
	}
}

/* The step's time in one forked child, in seconds; < 0 when the child could not report. */
static double time_part(part s)
{
	int p[2];
	double dt = -1;
	if (pipe(p) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		double t0 = now();
		take(s);
		double took = now() - t0;
		_exit(write(p[1], &took, sizeof(took)) == sizeof(took) ? 0 : 1);
	}
	(void)close(p[1]);
	if (pid > 0 && read(p[0], &dt, sizeof(dt)) != sizeof(dt))
		dt = -1;
	(void)close(p[0]);
	if (pid > 0)
		(void)waitpid(pid, NULL, 0);
	return dt;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 201;
	if (rounds < 1)
		rounds = 1;
	double *t[_PART_MAX];
	for (int s = 0; s < _PART_MAX; s++)
		if (!(t[s] = calloc((size_t)rounds, sizeof(double))))
			return 1;
	/* Interleaved, so that a drift of the machine's speed spreads over every step alike. */
	for (int i = 0; i < rounds; i++)
		for (int s = 0; s < _PART_MAX; s++)
			if ((t[s][i] = time_part((part)s)) < 0)
				return 1;
	printf("each step of a Landlock child's confinement, alone, %d children, medians:\n",
	       rounds);
	for (int s = 0; s < _PART_MAX; s++)
		printf("  %-38s %7.1f us\n", part_names[s], median(t[s], (size_t)rounds) * 1e6);
	for (int s = 0; s < _PART_MAX; s++)
		free(t[s]);
	return 0;
}
