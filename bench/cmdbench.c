/* SPDX-License-Identifier: MIT */
/*
 * cmdbench ROUNDS BASELINE_LABEL LABEL=COMMAND... — times whole commands (not a test).
 *
 * Each COMMAND is split on spaces and run with fork + execvp, stdio on /dev/null. All commands
 * run interleaved, round after round, after 5 warm-up rounds, so machine noise hits them alike.
 * Prints each command's median wall time and its ratio to BASELINE_LABEL's median.
 *
 * cmdbench --pairs ROUNDS CONTROL=COMMAND TREATMENT=COMMAND... — the small difference a
 * feature makes per call. Commands come in pairs; all of them run interleaved as above, in
 * reverse order every other round (so neither side of a pair always goes first). Prints each
 * command's mean wall time and, for each treatment, the mean of its per-round difference to its
 * control with a 95 % interval (1.96 standard errors of those differences) and the ratio of
 * the means.
 */
#include <fcntl.h>
#include <math.h>
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

/* Splits "LABEL=COMMAND" into *@label and the words of *@cmd. */
static int parse_spec(const char *arg, char **label, char ***cmd)
{
	char *spec = strdup(arg);
	char *eq = spec ? strchr(spec, '=') : NULL;
	if (!eq)
		return -1;
	*eq = '\0';
	*label = spec;
	*cmd = calloc(64, sizeof(char *));
	int k = 0;
	for (char *save = NULL, *w = strtok_r(eq + 1, " ", &save); w && k < 63;
	     w = strtok_r(NULL, " ", &save))
		(*cmd)[k++] = w;
	return 0;
}

/* Parses the @n LABEL=COMMAND @specs, makes room for @rounds timings each, and warms up. */
static int load(int n, char **specs, int rounds, char **labels, char ***cmds, double **times)
{
	for (int i = 0; i < n; i++) {
		if (parse_spec(specs[i], &labels[i], &cmds[i]) < 0)
			return -1;
		times[i] = calloc((size_t)rounds, sizeof(double));
		if (!times[i])
			return -1;
	}
	for (int warm = 0; warm < 5; warm++)
		for (int i = 0; i < n; i++)
			run_once(cmds[i]);
	return 0;
}

static int pairs_main(int argc, char **argv)
{
	if (argc < 4 || (argc - 2) % 2 != 0) {
		fprintf(stderr, "usage: cmdbench --pairs ROUNDS CONTROL=COMMAND "
				"TREATMENT=COMMAND...\n");
		return 2;
	}
	int rounds = atoi(argv[1]);
	int n = argc - 2;
	char *labels[32];
	char **cmds[32];
	double *times[32];
	if (n > 32 || rounds < 2)
		return 2;
	if (load(n, argv + 2, rounds, labels, cmds, times) < 0)
		return 2;
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < n; k++) {
			int i = r % 2 ? n - 1 - k : k;
			times[i][r] = run_once(cmds[i]);
		}

	for (int c = 0; c < n; c += 2) {
		int t = c + 1;
		double sum_c = 0, sum_t = 0, sum_d = 0, sum_dd = 0;
		for (int r = 0; r < rounds; r++) {
			double d = times[t][r] - times[c][r];
			sum_c += times[c][r];
			sum_t += times[t][r];
			sum_d += d;
			sum_dd += d * d;
		}
		double mean_c = sum_c / rounds, mean_t = sum_t / rounds, mean_d = sum_d / rounds;
		double var = (sum_dd - rounds * mean_d * mean_d) / (rounds - 1);
		double half = 1.96 * sqrt(var > 0 ? var / rounds : 0);
		printf("%-34s %8.3f ms   %5.3fx %s\n", labels[c], mean_c * 1e3, 1.0, labels[c]);
		printf("%-34s %8.3f ms   %5.3fx %s  (%+.3f ms +-%.3f)\n", labels[t], mean_t * 1e3,
		       mean_t / mean_c, labels[c], mean_d * 1e3, half * 1e3);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--pairs") == 0)
		return pairs_main(argc - 1, argv + 1);
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
	if (load(n, argv + 3, rounds, labels, cmds, times) < 0)
		return 2;
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
