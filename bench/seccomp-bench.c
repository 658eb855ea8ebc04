/* SPDX-License-Identifier: MIT */
/*
 * seccomp-bench [ROUNDS] — what the system-call filter costs (not a test). Four numbers:
 *   - fork + install + exit + wait against fork + exit + wait, interleaved, medians: the
 *     install cost as a spawn sees it, the filter's release when the child is reaped included;
 *   - the same with an execve of /bin/true, the shape of a confined command;
 *   - the install alone, timed inside the child, for each variant (the program length
 *     varies with the flags);
 *   - the filter's toll on every later system call: getppid() in a loop, before and after.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"
#include "src/confine/seccomp.h"

/* Forks a child that installs @prog (unless NULL) and execs /bin/true; returns the wall time. */
static double exec_trip(const seccomp_program *prog)
{
	double t = now();
	pid_t pid = fork();
	if (pid < 0) {
		perror("seccomp-bench: fork");
		exit(1);
	}
	if (pid == 0) {
		if (prog && seccomp_install(prog) < 0)
			_exit(1);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "seccomp-bench: /bin/true failed\n");
		exit(1);
	}
	return now() - t;
}

/*
 * Forks a child that installs @prog (unless NULL) and exits; returns the wall time of the
 * whole round and, in *@ret_install, the install as the child timed it.
 */
static double round_trip(const seccomp_program *prog, double *ret_install)
{
	int fds[2];
	double t = now(), inside = 0;

	if (pipe(fds) < 0) {
		perror("seccomp-bench: pipe");
		exit(1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("seccomp-bench: fork");
		exit(1);
	}
	if (pid == 0) {
		if (prog) {
			double s = now();
			if (seccomp_install(prog) < 0)
				_exit(1);
			inside = now() - s;
		}
		_exit(write(fds[1], &inside, sizeof(inside)) == sizeof(inside) ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	t = now() - t;
	if (read(fds[0], &inside, sizeof(inside)) != sizeof(inside) || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		fprintf(stderr, "seccomp-bench: the child failed\n");
		exit(1);
	}
	close(fds[0]);
	close(fds[1]);
	if (ret_install)
		*ret_install = inside;
	return t;
}

/* ns per getppid() over @n calls. */
static double syscall_ns(long n)
{
	double t = now();
	for (long i = 0; i < n; i++)
		(void)syscall(SYS_getppid);
	return (now() - t) / (double)n * 1e9;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 2000;
	if (rounds < 1) {
		fprintf(stderr, "usage: seccomp-bench [ROUNDS]\n");
		return 2;
	}
	double *plain = calloc((size_t)rounds, sizeof(double));
	double *filtered = calloc((size_t)rounds, sizeof(double));
	double *inside = calloc((size_t)rounds, sizeof(double));
	if (!plain || !filtered || !inside)
		return 1;

	const seccomp_program *all = seccomp_program_for(SECCOMP_DENY_ALL);
	for (int i = 0; i < rounds; i++) {
		plain[i] = round_trip(NULL, NULL);
		filtered[i] = round_trip(all, NULL);
	}
	double p = median(plain, (size_t)rounds), f = median(filtered, (size_t)rounds);
	printf("fork+exit+wait            %8.1f us (median of %d)\n", p * 1e6, rounds);
	printf("fork+install+exit+wait    %8.1f us (all flags)\n", f * 1e6);
	printf("install cost              %8.1f us\n", (f - p) * 1e6);

	for (int i = 0; i < rounds; i++) {
		plain[i] = exec_trip(NULL);
		filtered[i] = exec_trip(all);
	}
	p = median(plain, (size_t)rounds);
	f = median(filtered, (size_t)rounds);
	printf("fork+exec true            %8.1f us\n", p * 1e6);
	printf("fork+install+exec true    %8.1f us (+%.1f us, %+.1f%%)\n", f * 1e6, (f - p) * 1e6,
	       (f / p - 1) * 100);

	printf("install alone, in the child, per variant:\n");
	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++) {
		const seccomp_program *prog = seccomp_program_for(flags);
		for (int i = 0; i < rounds; i++)
			(void)round_trip(prog, &inside[i]);
		printf("  flags 0x%x  %3u insns  %6.1f us\n", flags, prog->len,
		       median(inside, (size_t)rounds) * 1e6);
	}

	/* The toll per system call: in a child, so the filter does not stay on this process. */
	(void)fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		long n = 2000000;
		double before = syscall_ns(n);
		if (seccomp_install(all) < 0)
			_exit(1);
		double after = syscall_ns(n);
		printf("getppid()                 %8.1f ns unfiltered, %.1f ns filtered (+%.1f)\n",
		       before, after, after - before);
		(void)fflush(stdout);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	free(plain);
	free(filtered);
	free(inside);
	return 0;
}
