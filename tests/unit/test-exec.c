/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the executor (dsh-compat §6.2-6.5, §11.14-11.17) through dsb_exec_run(): outcomes,
 * timeouts and process-group kills, the post-exit pipe drain bound, output limits and spill
 * files, the environment, stdin, and classification (runner failure > denial > ordinary) on
 * both backends. Real processes; both backends must be usable here (never skipped). The
 * environment scrub (env_build() with src/policy/scrub.c: DSH's rule and bash.scrubEnv) is
 * tested table by table without processes, its built-in matchers against their expressions.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/confine/confine.h"
#include "src/exec/exec.h"
#include "src/policy/policy.h"
#include "helpers.h"

typedef struct fixture {
	char *dir;
	dsb_config *cfg;
	dsb_provider *bwrap, *landlock;
} fixture;

static dsb_provider *provider_for(dsb_config *cfg, dsb_backend b)
{
	cfg->backends[0] = b;
	cfg->n_backends = 1;
	dsb_provider *p = NULL;
	assert_int_equal(dsb_provider_new(cfg, NULL, &p, NULL), 0);
	return p;
}

static int setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	f->dir = dsb_test_mkdtemp();
	f->cfg = dsb_config_new();
	f->cfg->grace_ms = 300; /* keep the kill tests short */
	f->bwrap = provider_for(f->cfg, DSB_BACKEND_BWRAP);
	f->landlock = provider_for(f->cfg, DSB_BACKEND_LANDLOCK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture *f = *state;
	dsb_provider_free(f->bwrap);
	dsb_provider_free(f->landlock);
	dsb_config_free(f->cfg);
	dsb_test_rm_rf(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs @command under @mode (with @p for confined modes) in the fixture dir as workspace. */
static int run_cmd(fixture *f, dsb_provider *p, dsb_mode mode, const char *command,
		   uint64_t timeout_ms, dsb_run_result *res, dsb_error *err)
{
	dsb_exec_policy pol = {.mode = mode, .workspace_root = f->dir};
	dsb_run_request req = {.command = command, .workdir = f->dir, .timeout_ms = timeout_ms};
	*res = (dsb_run_result){0};
	return dsb_exec_run(p, f->cfg, &pol, &req, res, err);
}

static void test_outcomes_and_streams(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	assert_int_equal(run_cmd(f, NULL, DSB_MODE_DANGER_FULL_ACCESS,
				 "echo out; echo err >&2; exit 3", 0, &r, NULL),
			 0);
	assert_int_equal(r.exit_code, 3);
	assert_int_equal(r.signal, 0);
	assert_string_equal(r.out.text, "out\n");
	assert_string_equal(r.err.text, "err\n");
	assert_false(r.timed_out);
	assert_true(r.sandboxed);
	assert_int_equal(r.mode, DSB_MODE_DANGER_FULL_ACCESS);
	assert_false(r.has_enforcement); /* no enforcement key for full access */
	assert_int_equal(r.timeout_ms, DSB_DEFAULT_TIMEOUT_MS);
	dsb_run_result_done(&r);

	/* 126 and 127 from a launched child are ordinary outcomes. */
	assert_int_equal(
		run_cmd(f, f->landlock, DSB_MODE_READ_ONLY, "no-such-command-xyz", 0, &r, NULL), 0);
	assert_int_equal(r.exit_code, 127);
	assert_false(r.denied);
	dsb_run_result_done(&r);
}

static void test_timeout_kills_the_group(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	double t0 = now();
	assert_int_equal(run_cmd(f, f->bwrap, DSB_MODE_READ_ONLY, "sleep 30", 200, &r, NULL), 0);
	assert_true(r.timed_out);
	assert_int_equal(r.timeout_ms, 200);
	assert_true(r.exit_code != 0 || r.signal != 0);
	assert_true(now() - t0 < 5);
	dsb_run_result_done(&r);
}

static void test_term_trapping_descendant_still_dies(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	char *marker = NULL;
	assert_true(asprintf(&marker, "%s/survivor", f->dir) > 0);
	/* The leader and a grandchild ignore TERM; after graceMs the group gets SIGKILL. */
	char *cmd = NULL;
	assert_true(asprintf(&cmd, "trap '' TERM; (trap '' TERM; sleep 3; touch %s) & sleep 30",
			     marker) > 0);
	double t0 = now();
	assert_int_equal(run_cmd(f, NULL, DSB_MODE_DANGER_FULL_ACCESS, cmd, 200, &r, NULL), 0);
	assert_true(r.timed_out);
	assert_int_equal(r.signal, SIGKILL);
	assert_true(now() - t0 < 3);
	sleep(4);
	assert_int_equal(access(marker, F_OK), -1); /* the grandchild died with the group */
	dsb_run_result_done(&r);
	free(cmd);
	free(marker);
}

static void test_trapped_term_with_exit_zero(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	assert_int_equal(run_cmd(f, NULL, DSB_MODE_DANGER_FULL_ACCESS,
				 "trap 'exit 0' TERM; sleep 30 & wait", 200, &r, NULL),
			 0);
	assert_true(r.timed_out);
	assert_int_equal(r.exit_code, 0);
	dsb_run_result_done(&r);
}

static void test_background_grandchild_cannot_hold_the_result(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	double t0 = now();
	/* The leader exits at once; a detached grandchild keeps stdout open for 30 s. */
	assert_int_equal(run_cmd(f, NULL, DSB_MODE_DANGER_FULL_ACCESS,
				 "echo early; (setsid sleep 30 &) ; exit 0", 0, &r, NULL),
			 0);
	assert_int_equal(r.exit_code, 0);
	assert_string_equal(r.out.text, "early\n");
	assert_false(r.timed_out);
	assert_true(now() - t0 < 3); /* bounded by graceMs (300 ms here), not by the sleep */
	dsb_run_result_done(&r);
}

/* How many processes have @marker in their command line (survivors); sends them @sig if not 0. */
static int count_marked(const char *marker, int sig)
{
	int n = 0;
	DIR *d = opendir("/proc");
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		char path[300], buf[4096];
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		FILE *fp = fopen(path, "r");
		if (!fp)
			continue;
		size_t k = fread(buf, 1, sizeof(buf) - 1, fp);
		fclose(fp);
		for (size_t i = 0; i < k; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[k] = '\0';
		if (strstr(buf, marker)) {
			n++;
			if (sig)
				(void)kill(atoi(e->d_name), sig);
		}
	}
	closedir(d);
	return n;
}

/* A second thread makes the library use a monitor process instead of reaping in-process. */
static void *idle_thread(void *arg)
{
	int fd = *(int *)arg;
	char c;
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

typedef struct second_thread {
	pthread_t t;
	int fds[2];
} second_thread;

static void second_thread_start(second_thread *st)
{
	assert_int_equal(pipe(st->fds), 0);
	assert_int_equal(pthread_create(&st->t, NULL, idle_thread, &st->fds[0]), 0);
}

static void second_thread_stop(second_thread *st)
{
	close(st->fds[1]);
	pthread_join(st->t, NULL);
	close(st->fds[0]);
}

/*
 * Every way a command keeps a process alive after it returns: setsid, a double fork, nohup.
 * None may survive the call, in any mode, on either backend, whether this process reaps or a
 * monitor does; the control (a plain fork) shows the script really leaves them behind.
 */
/* The script that leaves three processes marked @marker behind, into @script. */
static void survivor_script(char *script, size_t size, const char *marker)
{
	(void)snprintf(script, size,
		       "setsid bash -c 'exec -a %s-1 sleep 300' & "
		       "(bash -c 'exec -a %s-2 sleep 300' &) ; "
		       "nohup bash -c 'exec -a %s-3 sleep 300' >/dev/null 2>&1 & "
		       "sleep 0.3; echo \"$PPID\"",
		       marker, marker, marker);
}

static void check_nothing_survives(fixture *f, bool monitor)
{
	char marker[64], script[512];

	/* The control: without us, all three outlive their shell (its own marker: processes
	 * being killed may linger a moment under load, and must not count below). */
	(void)snprintf(marker, sizeof(marker), "dsb-control-%d-%d", (int)getpid(), monitor);
	survivor_script(script, sizeof(script), marker);
	pid_t pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		execl("/bin/bash", "bash", "-c", script, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	usleep(200000);
	assert_int_equal(count_marked(marker, SIGKILL), 3);

	struct {
		dsb_provider *p;
		dsb_mode mode;
	} runs[] = {
		{NULL, DSB_MODE_DANGER_FULL_ACCESS},
		{f->landlock, DSB_MODE_WORKSPACE_WRITE},
		{f->landlock, DSB_MODE_READ_ONLY},
		{f->bwrap, DSB_MODE_WORKSPACE_WRITE},
	};
	for (size_t i = 0; i < ELEMENTSOF(runs); i++) {
		dsb_run_result r;
		(void)snprintf(marker, sizeof(marker), "dsb-survivor-%d-%d-%zu", (int)getpid(),
			       monitor, i);
		survivor_script(script, sizeof(script), marker);
		assert_int_equal(run_cmd(f, runs[i].p, runs[i].mode, script, 0, &r, NULL), 0);
		assert_int_equal(r.exit_code, 0);
		/* Who was the command's parent: us, or (multi-threaded caller) a monitor. */
		if (runs[i].p != f->bwrap) {
			pid_t parent = (pid_t)atoi(r.out.text);
			if (monitor)
				assert_int_not_equal(parent, getpid());
			else
				assert_int_equal(parent, getpid());
		}
		dsb_run_result_done(&r);
		assert_int_equal(count_marked(marker, SIGKILL), 0);
	}
	/* Reaping in-process leaves this process as it was: no longer a subreaper. */
	int sub = -1;
	assert_int_equal(prctl(PR_GET_CHILD_SUBREAPER, &sub, 0L, 0L, 0L), 0);
	assert_int_equal(sub, 0);
}

static void test_nothing_outlives_the_call(void **state)
{
	check_nothing_survives(*state, false);
}

static void test_nothing_outlives_the_call_of_a_threaded_caller(void **state)
{
	second_thread st;
	second_thread_start(&st);
	check_nothing_survives(*state, true);
	second_thread_stop(&st);
}

/* The same with the monitors forked by a spawner (the MCP server's way): the spawner is this
 * process's only child while a command runs, and it survives no call of ours either. */
static void test_nothing_outlives_the_call_of_a_spawner(void **state)
{
	assert_int_equal(spawner_start(), 0);
	second_thread st;
	second_thread_start(&st);
	check_nothing_survives(*state, true);
	second_thread_stop(&st);
	/* Started only while single-threaded: the spawner's loop allocates. */
	second_thread_start(&st);
	spawner_stop();
	assert_int_equal(spawner_start(), -EBUSY);
	second_thread_stop(&st);
}

/* A timeout holds even when a setsid'd child keeps the pipes open, and that child dies too. */
static void test_timeout_holds_against_a_pipe_holder(void **state)
{
	fixture *f = *state;
	char marker[64], script[256];
	(void)snprintf(marker, sizeof(marker), "dsb-holder-%d", (int)getpid());
	(void)snprintf(script, sizeof(script), "setsid bash -c 'exec -a %s sleep 300' & sleep 300",
		       marker);
	dsb_provider *providers[] = {NULL, f->landlock, f->bwrap};
	for (size_t i = 0; i < ELEMENTSOF(providers); i++) {
		dsb_run_result r;
		double t0 = now();
		dsb_mode mode = providers[i] ? DSB_MODE_READ_ONLY : DSB_MODE_DANGER_FULL_ACCESS;
		assert_int_equal(run_cmd(f, providers[i], mode, script, 300, &r, NULL), 0);
		assert_true(r.timed_out);
		/* timeout + graceMs (300) + slack, not the sleep */
		assert_true(now() - t0 < 3);
		dsb_run_result_done(&r);
		assert_int_equal(count_marked(marker, SIGKILL), 0);
	}
}

/* Nothing but stdio reaches the command, whatever this process left open. */
static void test_only_stdio_is_inherited(void **state)
{
	fixture *f = *state;
	int leaked = open("/dev/null", O_RDONLY); /* deliberately without O_CLOEXEC */
	assert_true(leaked > 2);
	char script[128];
	(void)snprintf(script, sizeof(script), "ls /proc/self/fd/%d 2>/dev/null; echo done",
		       leaked);
	struct {
		dsb_provider *p;
		dsb_mode mode;
	} runs[] = {
		{NULL, DSB_MODE_DANGER_FULL_ACCESS},
		{f->landlock, DSB_MODE_READ_ONLY},
		{f->bwrap, DSB_MODE_READ_ONLY},
	};
	for (size_t i = 0; i < ELEMENTSOF(runs); i++) {
		dsb_run_result r;
		assert_int_equal(run_cmd(f, runs[i].p, runs[i].mode, script, 0, &r, NULL), 0);
		assert_string_equal(r.out.text, "done\n");
		dsb_run_result_done(&r);
	}
	close(leaked);
}

/*
 * A library caller's environment (and memory, and descriptors) stays unreadable through /proc,
 * whether the command's parent is the caller or a monitor holding a copy of it. PATH stands
 * for the secrets: /proc/PID/environ shows the environment a process started with.
 */
static void check_environ_unreadable(fixture *f)
{
	char script[512];
	/* Under bwrap the parent is bwrap's own init (pid 1), and we are not even visible. */
	int me = (int)getpid();
	(void)snprintf(script, sizeof(script),
		       "p=$PPID; [ $p = 1 ] && p=%d; "
		       "cat /proc/%d/environ /proc/$p/environ 2>/dev/null | tr '\\0' '\\n' | "
		       "grep -c ^PATH=; head -c 1 /proc/$p/mem >/dev/null 2>&1 && echo mem-read; "
		       "readlink /proc/%d/fd/1 /proc/$p/fd/1 >/dev/null 2>&1 && echo fd-read; true",
		       me, me, me);

	/* The control: unconfined, both are right there. */
	dsb_run_result r;
	assert_int_equal(run_cmd(f, NULL, DSB_MODE_DANGER_FULL_ACCESS, script, 0, &r, NULL), 0);
	assert_non_null(strstr(r.out.text, "2\n"));
	dsb_run_result_done(&r);

	dsb_mode modes[] = {DSB_MODE_READ_ONLY, DSB_MODE_WORKSPACE_WRITE};
	dsb_provider *providers[] = {f->landlock, f->bwrap};
	for (size_t i = 0; i < ELEMENTSOF(providers); i++)
		for (size_t m = 0; m < ELEMENTSOF(modes); m++) {
			assert_int_equal(run_cmd(f, providers[i], modes[m], script, 0, &r, NULL),
					 0);
			assert_string_equal(r.out.text, "0\n");
			dsb_run_result_done(&r);
		}
}

static void test_caller_environment_is_unreadable(void **state)
{
	check_environ_unreadable(*state);
}

static void test_caller_environment_is_unreadable_with_a_monitor(void **state)
{
	second_thread st;
	second_thread_start(&st);
	check_environ_unreadable(*state);
	second_thread_stop(&st);
}

static void test_signal_death(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	assert_int_equal(run_cmd(f, f->landlock, DSB_MODE_READ_ONLY, "kill -TERM $$", 0, &r, NULL),
			 0);
	assert_int_equal(r.exit_code, -1);
	assert_int_equal(r.signal, SIGTERM);
	assert_false(r.denied); /* a signal death is never a denial */
	dsb_run_result_done(&r);
}

static void test_hundred_megabytes(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	struct rusage before, after;
	getrusage(RUSAGE_SELF, &before);
	f->cfg->max_spill_bytes = 200u * 1024 * 1024;
	assert_int_equal(run_cmd(f, NULL, DSB_MODE_DANGER_FULL_ACCESS,
				 "head -c 100000000 /dev/zero | tr '\\0' x; printf END", 0, &r,
				 NULL),
			 0);
	getrusage(RUSAGE_SELF, &after);
	assert_true(r.out.truncated);
	assert_int_equal(r.out.len, DSB_DEFAULT_MAX_OUTPUT_BYTES);
	assert_memory_equal(r.out.text + r.out.len - 4, "xEND", 4);
	assert_non_null(r.out.spill_path);
	struct stat st;
	assert_int_equal(stat(r.out.spill_path, &st), 0);
	assert_int_equal(st.st_size, 100000003);
	assert_int_equal(st.st_mode & 0777, 0600);
	/* Memory stays bounded: the tail, not the stream (ASan's own overhead aside). */
	assert_true(after.ru_maxrss - before.ru_maxrss < 64 * 1024);
	unlink(r.out.spill_path);
	dsb_run_result_done(&r);

	/* Past maxSpillBytes the spill is dropped: no path. */
	f->cfg->max_spill_bytes = 1000000;
	assert_int_equal(run_cmd(f, NULL, DSB_MODE_DANGER_FULL_ACCESS, "head -c 2000000 /dev/zero",
				 0, &r, NULL),
			 0);
	assert_true(r.out.truncated);
	assert_null(r.out.spill_path);
	dsb_run_result_done(&r);
}

static void test_binary_output_and_early_close(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	assert_int_equal(run_cmd(f, NULL, DSB_MODE_DANGER_FULL_ACCESS,
				 "printf 'a\\000b\\377c'; exec 1>&-; sleep 0.2; echo late >&2", 0,
				 &r, NULL),
			 0);
	assert_int_equal(r.out.len, 5);
	assert_memory_equal(r.out.text, "a\0b\377c", 5);
	assert_string_equal(r.err.text, "late\n");
	dsb_run_result_done(&r);
}

static void test_environment_is_scrubbed_and_managed(void **state)
{
	fixture *f = *state;
	setenv("MY_API_KEY", "leak", 1);
	setenv("dsh_private", "leak", 1);
	setenv("PLAIN_VAR", "kept", 1);
	char *dsh[] = {(char *)"DSH_HOME=/h", (char *)"DSH_SHELL=1", NULL};
	char *extra[] = {(char *)"TERM=xterm", NULL};
	dsb_exec_policy pol = {.mode = DSB_MODE_DANGER_FULL_ACCESS, .workspace_root = f->dir};
	dsb_run_request req = {
		.command = "env | sort | grep -E "
			   "'^(MY_|dsh_|DSH_|PLAIN|TERM|NO_COLOR|PAGER|GIT_PAGER)'",
		.env = extra,
		.dsh_env = dsh,
	};
	dsb_run_result r = {0};
	assert_int_equal(dsb_exec_run(NULL, f->cfg, &pol, &req, &r, NULL), 0);
	assert_string_equal(r.out.text, "DSH_HOME=/h\nDSH_SHELL=1\nGIT_PAGER=cat\nNO_COLOR=1\n"
					"PAGER=cat\nPLAIN_VAR=kept\nTERM=xterm\n");
	dsb_run_result_done(&r);
	unsetenv("MY_API_KEY");
	unsetenv("dsh_private");
	unsetenv("PLAIN_VAR");
}

static void test_stdin_and_workdir(void **state)
{
	fixture *f = *state;
	dsb_exec_policy pol = {.mode = DSB_MODE_WORKSPACE_WRITE, .workspace_root = f->dir};
	dsb_run_request req = {
		.command = "cat; pwd",
		.stdin_text = "from stdin\n",
		.stdin_len = 11,
		.workdir = "/",
	};
	dsb_run_result r = {0};
	assert_int_equal(dsb_exec_run(f->landlock, f->cfg, &pol, &req, &r, NULL), 0);
	assert_string_equal(r.out.text, "from stdin\n/\n");
	dsb_run_result_done(&r);

	/* No stdin given: /dev/null. */
	req.stdin_text = NULL;
	req.command = "cat; echo done";
	assert_int_equal(dsb_exec_run(f->landlock, f->cfg, &pol, &req, &r, NULL), 0);
	assert_string_equal(r.out.text, "done\n");
	dsb_run_result_done(&r);

	/* A workdir that does not exist is an ordinary failure, not SANDBOX_UNAVAILABLE. */
	dsb_error err;
	req.workdir = "/no/such/workdir";
	assert_int_equal(dsb_exec_run(f->landlock, f->cfg, &pol, &req, &r, &err), -DSB_E_IO);
}

static void test_stdin_the_command_never_reads(void **state)
{
	fixture *f = *state;
	/* A command that exits without reading: the rest of stdin must not kill us (SIGPIPE). */
	size_t n = 4 * 1024 * 1024;
	char *big = malloc(n);
	memset(big, 'i', n);
	dsb_exec_policy pol = {.mode = DSB_MODE_DANGER_FULL_ACCESS, .workspace_root = f->dir};
	dsb_run_request req = {.command = "exit 3", .stdin_text = big, .stdin_len = n};
	dsb_run_result r = {0};
	assert_int_equal(dsb_exec_run(NULL, f->cfg, &pol, &req, &r, NULL), 0);
	assert_int_equal(r.exit_code, 3);
	dsb_run_result_done(&r);
	free(big);
}

static void test_denials_in_each_dialect(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	/* bwrap: EROFS is its dialect; the enforcement is reported. */
	assert_int_equal(
		run_cmd(f, f->bwrap, DSB_MODE_READ_ONLY, "echo x > /etc/dsb-denied", 0, &r, NULL),
		0);
	assert_true(r.denied);
	assert_true(r.has_enforcement);
	assert_int_equal(r.enforcement, DSB_ENFORCEMENT_FULL);
	dsb_run_result_done(&r);

	/* Under bwrap "Permission denied" is ordinary DAC, not the sandbox (dsh-compat §5.7). */
	assert_int_equal(run_cmd(f, f->bwrap, DSB_MODE_READ_ONLY,
				 "echo 'cat: x: Permission denied' >&2; exit 1", 0, &r, NULL),
			 0);
	assert_false(r.denied);
	dsb_run_result_done(&r);

	/* Landlock: EACCES. */
	assert_int_equal(run_cmd(f, f->landlock, DSB_MODE_WORKSPACE_WRITE,
				 "echo x > /etc/dsb-denied", 0, &r, NULL),
			 0);
	assert_true(r.denied);
	assert_int_equal(r.mode, DSB_MODE_WORKSPACE_WRITE);
	dsb_run_result_done(&r);

	/* A denial needs a non-zero exit. */
	assert_int_equal(run_cmd(f, f->landlock, DSB_MODE_READ_ONLY,
				 "echo x > /etc/dsb-denied; exit 0", 0, &r, NULL),
			 0);
	assert_false(r.denied);
	dsb_run_result_done(&r);
}

static void test_runner_failures_outrank_denials(void **state)
{
	fixture *f = *state;
	dsb_run_result r = {0};
	dsb_error err = {0};
	dsb_exec_policy pol = {.mode = DSB_MODE_READ_ONLY, .workspace_root = f->dir};
	dsb_run_request req = {.command = "echo x > /etc/y"};

	/* A configured runner that is missing: Node's spawn error, as DSH words it. */
	dsb_config *cfg = dsb_config_new();
	assert_int_equal(strv_push(&cfg->runner_command, "dsb-missing-runner"), 0);
	assert_int_equal(strv_push(&cfg->runner_failure_signatures, "fake-runner: "), 0);
	dsb_provider *p = NULL;
	assert_int_equal(dsb_provider_new(cfg, NULL, &p, NULL), 0);
	assert_int_equal(dsb_exec_run(p, cfg, &pol, &req, &r, &err), -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "Runner failure: Error: spawn dsb-missing-runner "
					    "ENOENT"));
	dsb_provider_free(p);

	/*
	 * A runner whose fatal line shows up: SANDBOX_UNAVAILABLE with that line, not a denial.
	 * It lives outside any temp dir, where a runner must be to be trusted.
	 */
	char dir[] = "/var/tmp/dsb-runner.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *runner = NULL;
	assert_true(asprintf(&runner, "%s/fake-runner", dir) > 0);
	const char script[] = "#!/bin/sh\necho 'Read-only file system' >&2\n"
			      "echo 'fake-runner: profile rejected' >&2\nexit 1\n";
	dsb_test_write_file(runner, script, sizeof(script) - 1);
	assert_int_equal(chmod(runner, 0755), 0);
	free(cfg->runner_command[0]);
	cfg->runner_command[0] = runner;
	assert_int_equal(dsb_provider_new(cfg, NULL, &p, NULL), 0);
	assert_int_equal(dsb_exec_run(p, cfg, &pol, &req, &r, &err), -DSB_E_SANDBOX_UNAVAILABLE);
	assert_non_null(strstr(err.message, "Runner failure: fake-runner: profile rejected"));
	dsb_provider_free(p);
	(void)unlink(runner);
	(void)rmdir(dir);
	dsb_config_free(cfg);
}

static void test_exit_125_from_the_command_is_ordinary(void **state)
{
	fixture *f = *state;
	dsb_run_result r;
	/* In-process Landlock has no stderr rule: a command cannot fake a runner failure. */
	assert_int_equal(run_cmd(f, f->landlock, DSB_MODE_READ_ONLY,
				 "echo 'landlock-run: fake' >&2; exit 125", 0, &r, NULL),
			 0);
	assert_int_equal(r.exit_code, 125);
	dsb_run_result_done(&r);
}

/* --- the environment scrub ------------------------------------------------------------------- */

typedef struct scrub_case {
	const char *entry;
	bool scrubbed;
} scrub_case;

/* Whether env_build() passes the parent's @entry through under @rules; overrides still apply. */
static bool kept(const scrub_rule *rules, size_t n, const char *entry)
{
	char *parent[] = {(char *)entry, NULL};
	char **env = env_build(parent, rules, n, NULL, NULL);
	assert_non_null(env);
	assert_true(strv_contains(env, "NO_COLOR=1") && strv_contains(env, "TERM=dumb") &&
		    strv_contains(env, "PAGER=cat") && strv_contains(env, "GIT_PAGER=cat"));
	bool found = strv_contains(env, entry);
	strv_free(env);
	return found;
}

static void check_cases(const scrub_rule *rules, size_t n, const scrub_case *cases, size_t n_cases,
			const char *what)
{
	for (size_t i = 0; i < n_cases; i++)
		if (kept(rules, n, cases[i].entry) == cases[i].scrubbed)
			fail_msg("%s: %.80s%s should be %s", what, cases[i].entry,
				 strlen(cases[i].entry) > 80 ? "..." : "",
				 cases[i].scrubbed ? "scrubbed" : "kept");
}

static dsb_config *config_with(const char *yaml)
{
	dsb_config *cfg = NULL;
	dsb_error err = {0};
	if (dsb_config_parse(yaml, strlen(yaml), "test.yaml", &cfg, &err) < 0)
		fail_msg("%s", err.message);
	return cfg;
}

/* A NAME=VALUE entry whose name is @pad_len copies of @pad followed by @tail. */
static char *long_entry(char pad, size_t pad_len, const char *tail)
{
	char *e = NULL;
	assert_true(asprintf(&e, "%*s%s=value", (int)pad_len, "", tail) > 0);
	memset(e, pad, pad_len);
	return e;
}

/* DSH's rule whatever the configuration: the default list, a custom one, and none at all. */
static void test_scrub_floor(void **state)
{
	static const scrub_case cases[] = {
		{"API_KEY=x", true},
		{"my_password=x", true},
		{"Client_Secret=x", true},
		{"GH_TOKEN=x", true},
		{"keyring=x", true},
		{"DSH_HOME=/h", true},
		{"dsh_private=x", true},
		{"Dsh_=x", true},
		{"D\xc5\xbfH_X=x", true}, /* "DſH_X".toUpperCase() is "DSH_X" */
		{"DSH=x", false},
		{"XDSH_Y=x", false},
		{"DS_H=x", false},
		{"PLAIN=has KEY and TOKEN in the value", false},
		{"PATH=/usr/bin:/bin", false},
		{"=empty name", false},
	};
	char *longs[] = {
		/* Past the 256 bytes the scrub once copied names into. */
		long_entry('A', 300, "TOKEN"),
		long_entry('a', 299, "key"),
		long_entry('x', 255, "_SECRET"),
		long_entry('Q', 4096, "PassWord"),
	};
	char *long_plain = long_entry('A', 400, "");
	const char *configs[] = {NULL, "bash: {scrubEnv: []}", "bash: {scrubEnv: ['^NOTHING$']}"};

	for (size_t c = 0; c < ELEMENTSOF(configs); c++) {
		dsb_config *cfg = configs[c] ? config_with(configs[c]) : dsb_config_new();
		check_cases(cfg->scrub_env, cfg->n_scrub_env, cases, ELEMENTSOF(cases),
			    configs[c] ? configs[c] : "defaults");
		for (size_t i = 0; i < ELEMENTSOF(longs); i++)
			assert_false(kept(cfg->scrub_env, cfg->n_scrub_env, longs[i]));
		assert_true(kept(cfg->scrub_env, cfg->n_scrub_env, long_plain));
		dsb_config_free(cfg);
	}
	for (size_t i = 0; i < ELEMENTSOF(longs); i++)
		free(longs[i]);
	free(long_plain);
}

/* Each default rule with what it catches and its near misses; ordinary variables survive. */
static void test_scrub_defaults(void **state)
{
	static const scrub_case cases[] = {
		/* (^|_)PAT$ */
		{"GITHUB_PAT=ghp_x", true},
		{"AZURE_DEVOPS_EXT_PAT=x", true},
		{"pat=x", true},
		{"PATH=/bin", false},
		{"GITHUB_PATH=/p", false},
		{"SPAT=x", false},
		/* (^|_)O?AUTH([NZ]|ORIZATION|ENTICATION)?(_|$) */
		{"NPM_CONFIG__AUTH=x", true},
		{"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", true},
		{"HTTP_AUTHORIZATION=Basic x", true},
		{"OAuth_Client_Id=x", true},
		{"AUTHZ_URL=x", true},
		{"KRB_AUTHN=x", true},
		{"AUTHENTICATION_MODE=x", true},
		{"DOCKER_AUTH_CONFIG={}", true},
		{"GIT_AUTHOR_NAME=A", false},
		{"GIT_AUTHOR_EMAIL=a@b", false},
		{"XAUTHORITY=/run/user/0/xauth", false},
		{"AUTHORS=x", false},
		{"GOAUTH=netrc", false},
		{"AUTHORIZATIONS=x", false},
		/* CREDENTIAL */
		{"GOOGLE_APPLICATION_CREDENTIALS=/k.json", true},
		{"AWS_SHARED_CREDENTIALS_FILE=/c", true},
		{"CRED=x", false},
		/* PRIVATE */
		{"SIGNING_PRIVATE_PEM=x", true},
		{"JWT_PRIVATE=x", true},
		{"PRIV=x", false},
		/* COOKIE */
		{"SESSION_COOKIE=x", true},
		{"COOKIE_JAR=/j", true},
		{"COOKIECUTTER_CONFIG=/c", true}, /* a known false positive */
		{"COOK=x", false},
		/* PASSWD, PASSPHRASE */
		{"HTPASSWD_FILE=x", true},
		{"LDAP_BIND_PASSWD=x", true},
		{"GPG_PASSPHRASE=x", true},
		/* (^|_)PASS(_|$) */
		{"DB_PASS=x", true},
		{"SMTP_PASS=x", true},
		{"RABBITMQ_DEFAULT_PASS=x", true},
		{"PASS_FILE=x", true},
		{"GIT_ASKPASS=/usr/bin/ask", false},
		{"BYPASS_CACHE=1", false},
		{"PASSTHROUGH=1", false},
		{"PGPASSFILE=/p", false},
		/* _PWD$ */
		{"MYSQL_PWD=x", true},
		{"DB_PWD=x", true},
		{"PWD=/w", false},
		{"OLDPWD=/w", false},
		/* (^|_)DSN$ */
		{"SENTRY_DSN=https://k@sentry.io/1", true},
		{"DSN=x", true},
		{"DATABASE_DSN=x", true},
		{"DSNAME=x", false},
		{"ODSN=x", false},
		/* WEBHOOK */
		{"SLACK_WEBHOOK_URL=https://hooks.slack.com/x", true},
		{"WEB_HOOK=x", false},
		/* CONNECTION_?STRING */
		{"AZURE_STORAGE_CONNECTION_STRING=AccountKey=x", true},
		{"ConnectionStrings__Default=x", true},
		{"CONNECTION_TIMEOUT=5", false},
		/* value:[a-z][a-z0-9+.-]*://[^/?#@:]*:[^/?#@]*@ */
		{"DATABASE_URL=postgres://app:pw@db:5432/x", true},
		{"REDIS_URL=redis://:pw@cache:6379", true},
		{"JDBC=jdbc:mysql://u:p@h/d", true},
		{"HTTPS_PROXY=HTTP://u:p@proxy:3128", true},
		{"MIRRORS=a b git+ssh://u:p@h/r", true},
		{"HTTP_PROXY=http://proxy:3128", false},
		{"GIT_URL=ssh://git@github.com/x", false},
		{"REPO=https://user@host/x", false},
		{"DOC=https://example.org/a:b@c", false},
		{"ODD=1://u:p@h", false},
		{"IPV6=http://[::1]:8080/", false},
		/* Ordinary variables. */
		{"HOME=/root", false},
		{"LANG=C.UTF-8", false},
		{"LC_ALL=C", false},
		{"USER=root", false},
		{"SHELL=/bin/bash", false},
		{"HOSTNAME=box", false},
		{"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus", false},
		{"XDG_RUNTIME_DIR=/run/user/0", false},
		{"DISPLAY=:0", false},
		{"WAYLAND_DISPLAY=wayland-0", false},
		{"LOGNAME=root", false},
		{"PWD=/w", false},
		{"GIT_COMMITTER_NAME=C", false},
		{"AWS_REGION=eu-west-1", false},
		{"NO_PROXY=localhost", false},
		{"EDITOR=vi", false},
		{"KUBECONFIG=/k", false},
		{"AWS_PROFILE=dev", false},
		{"SSH_ASKPASS=/usr/bin/ask", false},
		{"LS_COLORS=rs=0:di=01;34:ln=01;36", false},
	};
	dsb_config *cfg = dsb_config_new();
	check_cases(cfg->scrub_env, cfg->n_scrub_env, cases, ELEMENTSOF(cases), "defaults");
	dsb_config_free(cfg);

	/* With no extension (scrubEnv: []), each of those is DSH's business alone. */
	cfg = config_with("bash: {scrubEnv: []}");
	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		assert_true(kept(cfg->scrub_env, cfg->n_scrub_env, cases[i].entry));
	dsb_config_free(cfg);
}

/* A configured list replaces the defaults; name rules see the name only, value rules the value. */
static void test_scrub_configured(void **state)
{
	static const scrub_case cases[] = {
		{"STRIPE_ACCOUNT=x", true},
		{"stripe_=x", true},
		{"MY_STRIPE_X=x", false},
		{"NOTE=STRIPE_x", false},
		{"MY_ACCOUNT=1", true},
		{"ACCOUNT_ID=ACCOUNT", false}, /* $ is the end of the name, not of the entry */
		{"PAYMENT=sk_live_abc", true},
		{"PAYMENT=test sk_live_abc", false},
		{"GITHUB_PAT=x", false},		    /* the default list is gone */
		{"DATABASE_URL=postgres://a:b@h/d", false}, /* ... its value rule too */
		{"SENTRY_DSN=x", true},			    /* a default spelled out stays */
		{"API_KEY=x", true},			    /* DSH's rule stays */
		{"DSH_X=x", true},
	};
	dsb_config *cfg = config_with("bash:\n"
				      "  scrubEnv: ['^STRIPE_', 'ACCOUNT$', 'value:^sk_live_',\n"
				      "             '(^|_)DSN$']\n");
	check_cases(cfg->scrub_env, cfg->n_scrub_env, cases, ELEMENTSOF(cases), "configured");

	/* Names and values past any fixed buffer, matched by regexec() in place. */
	char *name = long_entry('x', 300, "_ACCOUNT");
	assert_false(kept(cfg->scrub_env, cfg->n_scrub_env, name));
	free(name);
	char *value = NULL;
	assert_true(asprintf(&value, "V=%0300d", 0) > 0);
	assert_true(kept(cfg->scrub_env, cfg->n_scrub_env, value));
	free(value);
	dsb_config_free(cfg);
}

/* Only the parent is scrubbed: overrides, the request's env and DSH_* env pass, later winning. */
static void test_scrub_order(void **state)
{
	char *parent[] = {(char *)"TERM=xterm", (char *)"GITHUB_PAT=parent", (char *)"A=1", NULL};
	char *extra[] = {(char *)"GITHUB_PAT=given", (char *)"A=2", NULL};
	char *dsh[] = {(char *)"DSH_HOME=/h", (char *)"A=3", NULL};
	dsb_config *cfg = dsb_config_new();
	char **env = env_build(parent, cfg->scrub_env, cfg->n_scrub_env, extra, dsh);
	static const char *const expected[] = {"TERM=dumb",  "A=3",	      "NO_COLOR=1",
					       "PAGER=cat",  "GIT_PAGER=cat", "GITHUB_PAT=given",
					       "DSH_HOME=/h"};
	assert_non_null(env);
	assert_int_equal(strv_length(env), ELEMENTSOF(expected));
	for (size_t i = 0; i < ELEMENTSOF(expected); i++)
		assert_string_equal(env[i], expected[i]);
	strv_free(env);
	dsb_config_free(cfg);
}

/*
 * Each default's built-in matcher agrees with its expression, compiled as a configured rule
 * would be, on every string of up to three pieces and on 200000 random ones of up to eight.
 */
static const char *const pieces[] = {
	"",	   "_",		 "A",	   "o",		"O",	      "PAT",  "AUTH",
	"auth",	   "N",		 "z",	   "ORIZATION", "ENTICATION", "OR",   "CREDENTIAL",
	"PRIVATE", "cookie",	 "PASS",   "WD",	"PHRASE",     "PWD",  "DSN",
	"WEBHOOK", "CONNECTION", "STRING", "x",		"://",	      "/",    ":",
	"@",	   "?",		 "#",	   "1",		"+",	      "http", "\xc5",
};

/* Through scrub_check() with the one rule, so its letter prefilter counts too. */
static void agree(const dsb_config *cfg, const regex_t *re, const char *s)
{
	char name_entry[600], value_entry[600];
	size_t n = strlen(s);
	(void)snprintf(name_entry, sizeof(name_entry), "%s=v", s);
	(void)snprintf(value_entry, sizeof(value_entry), "V=%s", s);
	bool floor = scrub_check(NULL, 0, name_entry);

	for (size_t r = 0; r < cfg->n_scrub_env; r++) {
		const scrub_rule *rule = &cfg->scrub_env[r];
		if (floor && !rule->on_value)
			continue; /* DSH's rule takes the name whatever this one says */
		regmatch_t range = {.rm_so = 0, .rm_eo = (regoff_t)n};
		bool expected = regexec(&re[r], s, 1, &range, REG_STARTEND) == 0;
		bool got = scrub_check(rule, 1, rule->on_value ? value_entry : name_entry);
		if (got != expected)
			fail_msg("%s on \"%s\": the built-in says %d, the expression %d",
				 rule->source, s, got, expected);
	}
}

static void test_scrub_builtins_match_their_expressions(void **state)
{
	dsb_config *cfg = dsb_config_new();
	regex_t *re = calloc(cfg->n_scrub_env, sizeof(*re));
	char buf[512];

	assert_non_null(re);
	for (size_t r = 0; r < cfg->n_scrub_env; r++) {
		const char *text = cfg->scrub_env[r].source;
		if (cfg->scrub_env[r].on_value)
			text += strlen("value:");
		assert_int_equal(regcomp(&re[r], text, REG_EXTENDED | REG_ICASE | REG_NOSUB), 0);
	}

	const size_t np = ELEMENTSOF(pieces);
	for (size_t a = 0; a < np; a++)
		for (size_t b = 0; b < np; b++)
			for (size_t c = 0; c < np; c++) {
				(void)snprintf(buf, sizeof(buf), "%s%s%s", pieces[a], pieces[b],
					       pieces[c]);
				agree(cfg, re, buf);
			}
	uint32_t seed = 42;
	for (int i = 0; i < 200000; i++) {
		size_t len = 0;
		buf[0] = '\0';
		seed = seed * 1103515245u + 12345u;
		for (uint32_t k = (seed >> 16) % 9; k > 0; k--) {
			seed = seed * 1103515245u + 12345u;
			const char *p = pieces[(seed >> 16) % np];
			memcpy(buf + len, p, strlen(p) + 1);
			len += strlen(p);
		}
		agree(cfg, re, buf);
	}

	for (size_t r = 0; r < cfg->n_scrub_env; r++)
		regfree(&re[r]);
	free(re);
	dsb_config_free(cfg);
}

/*
 * Protected paths end to end on both backends: a workspace-write call cannot write a
 * checkout's hooks (made before the call when missing) nor rename them away, may write the rest
 * of .git, and the denial names the protected path after DSH's markers.
 */
static void test_protected_paths_end_to_end(void **state)
{
	fixture *f = *state;
	char *real = realpath(f->dir, NULL);
	char *ws = NULL, *hooks = NULL, *objects = NULL, *note = NULL;
	assert_non_null(real);
	assert_true(asprintf(&ws, "%s/ws", real) > 0);
	assert_true(asprintf(&hooks, "%s/.git/hooks", ws) > 0);
	assert_true(asprintf(&objects, "%s/.git/objects", ws) > 0);
	assert_true(asprintf(&note,
			     "[sandbox: %s is protected: git runs hooks and reads its config "
			     "outside the sandbox]",
			     hooks) > 0);
	assert_int_equal(mkdir(ws, 0755), 0);
	char *git = NULL;
	assert_true(asprintf(&git, "%s/.git", ws) > 0);
	assert_int_equal(mkdir(git, 0755), 0);
	assert_int_equal(mkdir(objects, 0755), 0);

	dsb_config *cfg = dsb_config_new();
	cfg->mode = DSB_MODE_WORKSPACE_WRITE;
	assert_int_equal(dsb_config_set_workspace_root(cfg, ws, NULL), 0);
	dsb_policy *service = NULL;
	assert_int_equal(dsb_policy_new(cfg, &service, NULL), 0);
	dsb_config_free(cfg);

	dsb_provider *providers[] = {f->bwrap, f->landlock};
	for (size_t i = 0; i < ELEMENTSOF(providers); i++) {
		print_message("backend %zu\n", i);
		dsb_test_rm_rf(hooks);
		dsb_resolve_request rq = DSB_RESOLVE_REQUEST_INIT;
		dsb_exec_policy pol = {0};
		assert_int_equal(dsb_policy_resolve(service, &rq, &pol, NULL), 0);
		const dsb_protected *e = dsb_exec_policy_protected_at(&pol, hooks, true);
		assert_non_null(e);
		assert_false(e->exists);

		dsb_run_result r = {0};
		dsb_error err = {0};
		dsb_run_request req = {.command = "echo x > .git/hooks/pre-commit", .workdir = ws};
		if (dsb_exec_run(providers[i], f->cfg, &pol, &req, &r, &err) < 0)
			fail_msg("%s", err.message);
		assert_true(r.denied);
		assert_int_not_equal(r.exit_code, 0);
		assert_non_null(strstr(r.err.text, "Read-only file system"));
		assert_non_null(r.protected_note);
		assert_string_equal(r.protected_note, note);
		char *text = NULL;
		assert_int_equal(dsb_render_result(&r, true, &text, NULL, NULL), 0);
		size_t tl = strlen(text), nl = strlen(note);
		assert_true(tl > nl);
		assert_string_equal(text + tl - nl, note);
		assert_non_null(strstr(text, "[exit code: 1]\n"));
		free(text);
		dsb_run_result_done(&r);
		/* Made, empty, before the call; nothing written into it. */
		struct stat st;
		assert_int_equal(stat(hooks, &st), 0);
		assert_true(S_ISDIR(st.st_mode));
		char *pre = NULL;
		assert_true(asprintf(&pre, "%s/pre-commit", hooks) > 0);
		assert_int_equal(access(pre, F_OK), -1);
		free(pre);

		/* Nor renamed away and replaced. */
		req.command = "mv .git/hooks .git/hooks.old && mkdir .git/hooks";
		assert_int_equal(dsb_exec_run(providers[i], f->cfg, &pol, &req, &r, NULL), 0);
		assert_int_not_equal(r.exit_code, 0);
		dsb_run_result_done(&r);
		char *old = NULL;
		assert_true(asprintf(&old, "%s/.git/hooks.old", ws) > 0);
		assert_int_equal(access(old, F_OK), -1);
		free(old);

		/* The rest of .git and of the workspace stays writable. */
		req.command = "echo x > .git/objects/o && echo y > file && mkdir -p .git/refs";
		assert_int_equal(dsb_exec_run(providers[i], f->cfg, &pol, &req, &r, NULL), 0);
		if (r.exit_code != 0)
			fail_msg("exit %d: %.*s", r.exit_code, (int)r.err.len, r.err.text);
		assert_false(r.denied);
		assert_null(r.protected_note);
		dsb_run_result_done(&r);
		dsb_exec_policy_done(&pol);
	}

	dsb_policy_free(service);
	free(git);
	free(note);
	free(objects);
	free(hooks);
	free(ws);
	free(real);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scrub_floor),
		cmocka_unit_test(test_scrub_defaults),
		cmocka_unit_test(test_scrub_configured),
		cmocka_unit_test(test_scrub_order),
		cmocka_unit_test(test_scrub_builtins_match_their_expressions),
		cmocka_unit_test_setup_teardown(test_outcomes_and_streams, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_kills_the_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_term_trapping_descendant_still_dies, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_trapped_term_with_exit_zero, setup, teardown),
		cmocka_unit_test_setup_teardown(test_background_grandchild_cannot_hold_the_result,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_outlives_the_call, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_outlives_the_call_of_a_threaded_caller,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_nothing_outlives_the_call_of_a_spawner, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_timeout_holds_against_a_pipe_holder, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_only_stdio_is_inherited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_caller_environment_is_unreadable, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_caller_environment_is_unreadable_with_a_monitor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signal_death, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hundred_megabytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_binary_output_and_early_close, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_environment_is_scrubbed_and_managed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_stdin_and_workdir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stdin_the_command_never_reads, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_denials_in_each_dialect, setup, teardown),
		cmocka_unit_test_setup_teardown(test_protected_paths_end_to_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_runner_failures_outrank_denials, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exit_125_from_the_command_is_ordinary, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
