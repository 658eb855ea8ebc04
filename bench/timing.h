/* SPDX-License-Identifier: MIT */
/* What every benchmark program here shares: a monotonic clock in seconds and a median. */
#ifndef DSB_BENCH_TIMING_H
#define DSB_BENCH_TIMING_H

#include <stdlib.h>
#include <time.h>

static inline double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts @v (@n values) and returns its median. */
static inline double median(double *v, size_t n)
{
	qsort(v, n, sizeof(double), cmp_double);
	return v[n / 2];
}

#endif
