/* SPDX-License-Identifier: MIT */
/*
 * cmdbench ROUNDS BASELINE_LABEL LABEL=COMMAND... — times whole commands (not a test).
 *
 * Each COMMAND is split on spaces and run with fork + execvp, stdio on /dev/null. All commands
 * run interleaved, round after round, after 5 warm-up rounds, so machine noise hits them alike.
 * Prints each command's median wall time and its ratio to BASELINE_LABEL's median.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

static double run_once(char **argv)
{
	double start = now();
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "cmdbench: %s failed (status %d)\n", argv[0], status);
		exit(1);
	}
	return now() - start;
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: cmdbench ROUNDS BASELINE LABEL=COMMAND...\n");
		return 2;
	}
	int rounds = atoi(argv[1]);
	const char *baseline = argv[2];
	int n = argc - 3;
	char *labels[32];
	char **cmds[32];
	double *times[32];
	if (n > 32 || rounds < 1)
		return 2;
	for (int i = 0; i < n; i++) {
		char *spec = strdup(argv[3 + i]);
		char *eq = strchr(spec, '=');
		if (!eq)
			return 2;
		*eq = '\0';
		labels[i] = spec;
		cmds[i] = calloc(64, sizeof(char *));
		int k = 0;
		for (char *save = NULL, *w = strtok_r(eq + 1, " ", &save); w && k < 63;
		     w = strtok_r(NULL, " ", &save))
			cmds[i][k++] = w;
		times[i] = calloc((size_t)rounds, sizeof(double));
	}
	for (int warm = 0; warm < 5; warm++)
		for (int i = 0; i < n; i++)
			run_once(cmds[i]);
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < n; i++)
			times[i][r] = run_once(cmds[i]);

	double base = 0, median[32];
	for (int i = 0; i < n; i++) {
		qsort(times[i], (size_t)rounds, sizeof(double), cmp_double);
		median[i] = times[i][rounds / 2];
		if (strcmp(labels[i], baseline) == 0)
			base = median[i];
	}
	for (int i = 0; i < n; i++)
		printf("%-34s %8.2f ms   %5.2fx %s\n", labels[i], median[i] * 1e3,
		       base > 0 ? median[i] / base : 0, baseline);
	return 0;
}
