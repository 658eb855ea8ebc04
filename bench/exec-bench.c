/* SPDX-License-Identifier: MIT */
/*
 * exec-bench ROUNDS — the library path (not a test): confined `bash -c true` through
 * dsb_exec_run() in one process, against the same process fork/exec'ing plain `bash -c true`,
 * interleaved, medians. Target: Landlock <= 1.10x plain. Also reports bwrap.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "timing.h"

#include <dsb/dsb.h>

static char *const bash_true[] = {(char *)"bash", (char *)"-c", (char *)"true", NULL};

static double plain(void)
{
	double t = now();
	pid_t pid = fork();
	if (pid == 0) {
		execvp(bash_true[0], bash_true);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	return now() - t;
}

static double confined(dsb_provider *p, dsb_config *cfg, const dsb_exec_policy *pol)
{
	dsb_run_request req = {.argv = bash_true, .no_spill = true};
	dsb_run_result r = {0};
	dsb_error err;
	double t = now();
	if (dsb_exec_run(p, cfg, pol, &req, &r, &err) < 0 || r.exit_code != 0) {
		fprintf(stderr, "exec-bench: %s\n", err.message);
		exit(1);
	}
	t = now() - t;
	dsb_run_result_done(&r);
	return t;
}

static dsb_provider *provider(const char *yaml, dsb_config **ret_cfg)
{
	dsb_error err;
	if (dsb_config_parse(yaml, __builtin_strlen(yaml), "bench", ret_cfg, &err) < 0) {
		fprintf(stderr, "exec-bench: %s\n", err.message);
		exit(1);
	}
	dsb_provider *p = NULL;
	if (dsb_provider_new(*ret_cfg, NULL, &p, &err) < 0)
		exit(1);
	return p;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 201;
	dsb_config *lcfg, *bcfg;
	dsb_provider *ll = provider("sandbox-local: { backends: [landlock] }", &lcfg);
	dsb_provider *bw = provider("sandbox-local: { backends: [bwrap] }", &bcfg);
	dsb_exec_policy pol = {.mode = DSB_MODE_READ_ONLY, .workspace_root = (char *)"/tmp"};
	double *tp = calloc((size_t)rounds, sizeof(double));
	double *tl = calloc((size_t)rounds, sizeof(double));
	double *tb = calloc((size_t)rounds, sizeof(double));

	for (int i = 0; i < 10; i++) {
		plain();
		confined(ll, lcfg, &pol);
		confined(bw, bcfg, &pol);
	}
	for (int i = 0; i < rounds; i++) {
		tp[i] = plain();
		tl[i] = confined(ll, lcfg, &pol);
		tb[i] = confined(bw, bcfg, &pol);
	}
	qsort(tp, (size_t)rounds, sizeof(double), cmp_double);
	qsort(tl, (size_t)rounds, sizeof(double), cmp_double);
	qsort(tb, (size_t)rounds, sizeof(double), cmp_double);
	double p = tp[rounds / 2], l = tl[rounds / 2], b = tb[rounds / 2];
	printf("library path, %d interleaved rounds, medians:\n", rounds);
	printf("  plain fork/exec bash -c true     %7.2f ms  1.00x\n", p * 1e3);
	printf("  dsb_exec_run, Landlock           %7.2f ms  %.2fx  (target <= 1.10)\n", l * 1e3,
	       l / p);
	printf("  dsb_exec_run, bwrap              %7.2f ms  %.2fx\n", b * 1e3, b / p);
	dsb_provider_free(ll);
	dsb_provider_free(bw);
	dsb_config_free(lcfg);
	dsb_config_free(bcfg);
	return 0;
}
