/* SPDX-License-Identifier: MIT */
/*
 * Session-store benchmark (not a test): how a fold's cost grows with the log, the memory a fold
 * needs, and append throughput. Prints ratios against baselines measured in the same run.
 *
 *   session-bench DIR     (DIR: scratch space; needs ~200 MB free)
 *
 * Folds: logs of 1k, 100k and 1M events whose last sandbox/mode sits 10 events from the end;
 * median of 21 warm runs each (open + fold, as a CLI call does). Target: 1M / 1k <= 2. Every
 * fold first validates the whole log; the first one of a log does it by a full scan (reported
 * as "first"), later ones resume from the checkpoint it left. An append to the 1M log is timed
 * the same way: its validation, too, costs the new bytes only.
 * Peak RSS of a child process that opens and folds the 1M log. Target: <= 8 MB.
 * Appends: events per second with fsync, without, and with 4 writer processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

#include <dsb/dsb.h>

static void die(const char *what, const dsb_error *err)
{
	fprintf(stderr, "session-bench: %s: %s\n", what, err ? err->message : strerror(errno));
	exit(1);
}

/* A log of @n events shaped like a real session: mostly chunks and messages. */
static void make_log(const char *path, long n)
{
	FILE *f = fopen(path, "we");
	if (!f)
		die(path, NULL);
	fprintf(f,
		"{\"type\":\"session\",\"version\":0,\"id\":\"bench-%ld\",\"createdAt\":1,"
		"\"cwd\":\"/bench\",\"delegationDepth\":0}\n",
		n);
	for (long i = 0; i < n; i++) {
		if (i == n - 10)
			fprintf(f,
				"{\"type\":\"sandbox/mode\",\"seq\":%ld,\"time\":%ld,"
				"\"data\":{\"mode\":\"workspace-write\"}}\n",
				i, 1000 + i);
		else if (i % 50 == 0)
			fprintf(f,
				"{\"type\":\"user/message\",\"seq\":%ld,\"time\":%ld,\"data\":{"
				"\"content\":[{\"type\":\"text\",\"text\":\"please run the tests "
				"and fix what fails\"}],\"source\":{\"kind\":\"user\"},\"role\":"
				"\"user\",\"id\":\"c8597dbb-3765-4c91-9315-2a5704ab60de\"},"
				"\"surfaceOp\":\"append\"}\n",
				i, 1000 + i);
		else
			fprintf(f,
				"{\"type\":\"assistant/chunk\",\"seq\":%ld,\"time\":%ld,\"data\":{"
				"\"turn\":1,\"step\":1,\"chunk\":{\"type\":\"text-delta\","
				"\"index\":0,"
				"\"text\":\" token\"}}}\n",
				i, 1000 + i);
	}
	if (fclose(f) != 0)
		die(path, NULL);
}

/* Seconds of one open + fold of @path. */
static double fold_once(dsb_store *store, const char *path)
{
	dsb_error err;
	dsb_session *s = NULL;
	dsb_mode mode;
	double start = now();
	if (dsb_session_open(store, path, &s, &err) < 0 ||
	    dsb_session_fold_mode(s, &mode, &err) != 1)
		die("fold", &err);
	double t = now() - start;
	dsb_session_free(s);
	return t;
}

/* Median seconds of one open + fold of @path. */
static double fold_median(dsb_store *store, const char *path)
{
	double t[21];
	for (size_t i = 0; i < 21; i++)
		t[i] = fold_once(store, path);
	qsort(t, 21, sizeof(t[0]), cmp_double);
	return t[10];
}

/* Median seconds of one open + append (no fsync) to @path. */
static double append_median(dsb_store *store, const char *path)
{
	double t[21];
	dsb_store_set_fsync(store, false);
	for (size_t i = 0; i < 21; i++) {
		dsb_error err;
		dsb_session *s = NULL;
		double start = now();
		if (dsb_session_open(store, path, &s, &err) < 0 ||
		    dsb_session_set_mode(s, DSB_MODE_WORKSPACE_WRITE, &err) < 0)
			die("append", &err);
		t[i] = now() - start;
		dsb_session_free(s);
	}
	dsb_store_set_fsync(store, true);
	qsort(t, 21, sizeof(t[0]), cmp_double);
	return t[10];
}

static long fold_peak_rss_kb(dsb_store *store, const char *path)
{
	pid_t pid = fork();
	if (pid == 0) {
		dsb_session *s = NULL;
		dsb_mode mode;
		_exit(dsb_session_open(store, path, &s, NULL) < 0 ||
		      dsb_session_fold_mode(s, &mode, NULL) != 1);
	}
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("rss child", NULL);
	return ru.ru_maxrss;
}

/* RSS of a child that does nothing but exist: the baseline a fold adds to. */
static long idle_peak_rss_kb(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	int status;
	struct rusage ru;
	if (wait4(pid, &status, 0, &ru) != pid)
		die("rss child", NULL);
	return ru.ru_maxrss;
}

static double appends_per_second(dsb_store *store, const char *path, int writers, int each)
{
	double start = now();
	for (int w = 0; w < writers; w++) {
		pid_t pid = fork();
		if (pid == 0) {
			dsb_session *s = NULL;
			if (dsb_session_open(store, path, &s, NULL) < 0)
				_exit(2);
			for (int i = 0; i < each; i++)
				if (dsb_session_set_mode(s, DSB_MODE_WORKSPACE_WRITE, NULL) < 0)
					_exit(3);
			_exit(0);
		}
	}
	for (int w = 0; w < writers; w++) {
		int status;
		if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			die("append writer", NULL);
	}
	return writers * each / (now() - start);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: session-bench DIR\n");
		return 2;
	}
	dsb_store *store = NULL;
	dsb_error err;
	char root[4096];
	snprintf(root, sizeof(root), "%s/store", argv[1]);
	if (dsb_store_open(root, &store, &err) < 0)
		die("store", &err);

	static const long sizes[] = {1000, 100000, 1000000};
	double t[3];
	char path[3][4096];
	for (size_t i = 0; i < 3; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/fold-%ld.jsonl", argv[1], sizes[i]);
		make_log(path[i], sizes[i]);
		struct stat st;
		stat(path[i], &st);
		double first = fold_once(store, path[i]);
		t[i] = fold_median(store, path[i]);
		printf("fold %8ld events (%6.1f MB): %8.1f us   (first: %8.1f us)\n", sizes[i],
		       st.st_size / 1e6, t[i] * 1e6, first * 1e6);
	}
	printf("fold ratio 100k/1k: %.2f\n", t[1] / t[0]);
	printf("fold ratio 1M/1k:   %.2f   (target <= 2)\n", t[2] / t[0]);
	double small = append_median(store, path[0]), big = append_median(store, path[2]);
	printf("append (no fsync) to the 1k log: %8.1f us, to the 1M log: %8.1f us (ratio %.2f)\n",
	       small * 1e6, big * 1e6, big / small);
	long idle = idle_peak_rss_kb(), folded = fold_peak_rss_kb(store, path[2]);
	printf("peak RSS folding the 1M log: %.1f MB (a process doing nothing: %.1f MB; target "
	       "<= 8 MB)\n",
	       folded / 1024.0, idle / 1024.0);

	dsb_session *s = NULL;
	if (dsb_session_create(store, "/bench", &s, &err) < 0)
		die("create", &err);
	const char *log = dsb_session_path(s);
	double synced = appends_per_second(store, log, 1, 300);
	dsb_store_set_fsync(store, false);
	double unsynced = appends_per_second(store, log, 1, 3000);
	double four = appends_per_second(store, log, 4, 1500);
	dsb_store_set_fsync(store, true);
	double four_synced = appends_per_second(store, log, 4, 150);
	printf("appends/s, 1 writer, fsync:      %8.0f\n", synced);
	printf("appends/s, 1 writer, no fsync:   %8.0f\n", unsynced);
	printf("appends/s, 4 writers, no fsync:  %8.0f  (%.2f x one writer)\n", four,
	       four / unsynced);
	printf("appends/s, 4 writers, fsync:     %8.0f  (%.2f x one writer)\n", four_synced,
	       four_synced / synced);
	dsb_session_free(s);
	dsb_store_free(store);
	return 0;
}
