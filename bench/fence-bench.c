/* SPDX-License-Identifier: MIT */
/*
 * fence-bench DIR [ROUNDS] — the fs fence's cost (not a test): a fenced write of a small file
 * (check, openat2 beneath the root, temp file, fsync, rename) against the same plain
 * open/write/fsync/rename in the same directory, interleaved, medians (target <= 1.5x); and
 * decision-only checks per second.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

#include <dsb/dsb.h>

static const char content[] = "a small file, as an agent writes many of them\n";

static double plain(const char *dir)
{
	char tmp[4096], dst[4096];
	snprintf(tmp, sizeof(tmp), "%s/plain.tmp", dir);
	snprintf(dst, sizeof(dst), "%s/plain.txt", dir);
	double t = now();
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, content, sizeof(content) - 1) < 0 || fsync(fd) < 0 ||
	    close(fd) < 0 || rename(tmp, dst) < 0) {
		perror("fence-bench: plain write");
		exit(1);
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fsync(dfd);
	close(dfd);
	return now() - t;
}

static double fenced(const dsb_exec_policy *pol, const char *dir)
{
	dsb_fs_write_result r = {0};
	dsb_error err;
	double t = now();
	if (dsb_fence_write(pol, dir, "fenced.txt", content, sizeof(content) - 1, &r, &err) < 0) {
		fprintf(stderr, "fence-bench: %s\n", err.message);
		exit(1);
	}
	t = now() - t;
	dsb_fs_write_result_done(&r);
	return t;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fence-bench DIR [ROUNDS]\n");
		return 2;
	}
	char *dir = realpath(argv[1], NULL);
	int rounds = argc > 2 ? atoi(argv[2]) : 301;
	dsb_exec_policy pol = {.mode = DSB_MODE_WORKSPACE_WRITE, .workspace_root = dir};
	double *tp = calloc((size_t)rounds, sizeof(double));
	double *tf = calloc((size_t)rounds, sizeof(double));
	for (int i = 0; i < 10; i++) {
		plain(dir);
		fenced(&pol, dir);
	}
	for (int i = 0; i < rounds; i++) {
		tp[i] = plain(dir);
		tf[i] = fenced(&pol, dir);
	}
	qsort(tp, (size_t)rounds, sizeof(double), cmp_double);
	qsort(tf, (size_t)rounds, sizeof(double), cmp_double);
	double p = tp[rounds / 2], f = tf[rounds / 2];
	printf("small-file write, %d interleaved rounds, medians (both fsync and rename):\n",
	       rounds);
	printf("  plain open/write/fsync/rename  %8.1f us  1.00x\n", p * 1e6);
	printf("  dsb_fence_write                %8.1f us  %.2fx  (target <= 1.5)\n", f * 1e6,
	       f / p);

	int n = 0;
	double start = now();
	while (now() - start < 1.0) {
		for (int i = 0; i < 100; i++)
			if (dsb_fence_check(&pol, dir, "sub/dir/file.txt", NULL) < 0)
				return 1;
		n += 100;
	}
	printf("decision-only checks (dsb_fence_check): %.0f per second\n", n / (now() - start));
	free(dir);
	return 0;
}
