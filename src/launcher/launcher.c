/* SPDX-License-Identifier: MIT */
/*
 * `landlock-run`: DSH's Landlock launcher, byte for byte (spec §5.6). It restricts itself to
 * the --ro and --rw grants and execs the command, which inherits the domain, as do all its
 * descendants. `--probe` restricts itself to `--ro /` and reports full or partial enforcement.
 * Every launcher failure exits 125 with one `landlock-run: ` line on stderr; once the command
 * runs, its status is the launcher's. Reached as the static `landlock-run` program (main.c), as
 * `dsh-sandbox landlock-run ...` or through a link to dsh-sandbox named landlock-run. No scopes
 * here: the contract is DSH's. Beyond DSH the command also gets the hardening of our own Landlock
 * backend (namespaces, no capabilities, the filter, no descriptor but stdio); none of it changes
 * a byte DSH sees.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../confine/confine.h"
#include "launcher.h"

/* LAUNCHER_FAILURE_EXIT: usage errors, kernel refusals, exec failures. */
#define LANDLOCK_RUN_EXIT 125

typedef enum landlock_run_action {
	LANDLOCK_RUN_EXEC,
	LANDLOCK_RUN_PROBE,
	LANDLOCK_RUN_USAGE,
	LANDLOCK_RUN_NO_MEMORY,
} landlock_run_action;

/*
 * Grants of each kind held without the heap: more than any call of DSH's makes. The first
 * malloc() of a static musl program sets its heap up (brk, two mmaps, their page faults),
 * measured at 0.18 ms of a launch whose whole budget is about 0.4 ms. More grants go to the
 * heap: no limit of our own, as DSH has none.
 */
#define LANDLOCK_RUN_STACK_GRANTS 64

typedef struct landlock_run_args {
	landlock_run_action action;
	const char *usage;  /* LANDLOCK_RUN_USAGE: the text after "usage error: " */
	const char *detail; /* appended to @usage: the offending argument, or "" */
	char **ro;	    /* NULL-terminated; borrows the strings of argv */
	char **rw;
	char **command; /* LANDLOCK_RUN_EXEC: points into argv */
	char *ro_few[LANDLOCK_RUN_STACK_GRANTS + 1];
	char *rw_few[LANDLOCK_RUN_STACK_GRANTS + 1];
} landlock_run_args;

static void landlock_run_args_done(landlock_run_args *a)
{
	if (a->ro != a->ro_few)
		free(a->ro);
	if (a->rw != a->rw_few)
		free(a->rw);
	a->ro = a->rw = NULL;
}

static void usage(landlock_run_args *a, const char *text, const char *detail)
{
	a->action = LANDLOCK_RUN_USAGE;
	a->usage = text;
	a->detail = detail;
}

/*
 * Parses the launcher's argv (@argv[0] is its name) into @a, left to right as DSH does. Borrows
 * @argv. On return a->action says what to do; release @a with landlock_run_args_done().
 */
static void landlock_run_parse(int argc, char **argv, landlock_run_args *a)
{
	size_t n_ro = 0, n_rw = 0;
	int i;

	a->action = LANDLOCK_RUN_EXEC;
	a->ro = a->ro_few;
	a->rw = a->rw_few;
	a->ro[0] = a->rw[0] = NULL;
	if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
		a->action = LANDLOCK_RUN_PROBE;
		return;
	}

	/* At most argc / 2 grants in all, plus the terminator: no growth, one failure point. */
	size_t most = (size_t)argc / 2 + 1;
	if (most > LANDLOCK_RUN_STACK_GRANTS + 1) {
		a->ro = calloc(most, sizeof(char *));
		a->rw = calloc(most, sizeof(char *));
		if (!a->ro || !a->rw) {
			a->action = LANDLOCK_RUN_NO_MEMORY;
			return;
		}
	}

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(arg, "--probe") == 0) {
			usage(a, "--probe takes no other arguments", "");
			return;
		}
		if (strcmp(arg, "--ro") == 0 || strcmp(arg, "--rw") == 0) {
			bool ro = arg[3] == 'o';

			if (i + 1 >= argc) {
				usage(a, ro ? "--ro requires a path" : "--rw requires a path", "");
				return;
			}
			char **list = ro ? a->ro : a->rw;
			size_t *n = ro ? &n_ro : &n_rw;
			list[(*n)++] = argv[++i];
			list[*n] = NULL;
			continue;
		}
		usage(a, "unknown argument: ", arg);
		return;
	}
	if (i >= argc) {
		usage(a, "missing `-- <argv>...` command", "");
		return;
	}
	a->command = argv + i;
}

static int fail(const char *what, int errnum)
{
	const char *desc = errno_desc(errnum);

	if (desc)
		fprintf(stderr, "landlock-run: %s: %s\n", what, desc);
	else
		fprintf(stderr, "landlock-run: %s: Unknown error %d\n", what, errnum);
	return LANDLOCK_RUN_EXIT;
}

static int run_probe(void)
{
	/* The probe restricts this very process, which then only prints and exits. */
	char root[] = "/";
	char *ro[] = {root, NULL};
	landlock_plan plan = {.ro = ro, .rw = NULL, .scope = 0};
	landlock_status st;
	char msg[512];

	if (landlock_restrict(&plan, &st, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "%s\n", msg);
		return LANDLOCK_RUN_EXIT;
	}
	printf("%s\n", st.partial ? "landlock: partially enforced (older ABI)"
				  : "landlock: fully enforced");
	return fflush(stdout) == 0 ? 0 : LANDLOCK_RUN_EXIT;
}

/*
 * Leaves a process that restricted itself, with @status and nothing else: no exit handlers.
 * A sanitized build's leak checker runs at exit() and needs /proc/self/task and ptrace, which
 * the grants may not give (`--ro /usr`): it then dies with its own status instead of the
 * contract's. Nothing is left to flush but stdio.
 */
static _Noreturn void restricted_exit(int status)
{
	(void)fflush(stdout);
	(void)fflush(stderr);
	_exit(status);
}

static int run_exec(const landlock_run_args *a)
{
	/*
	 * DSH's grants, plus what every confined command of ours gets (beyond DSH, no visible
	 * byte changes): namespaces, no capabilities, the system-call filter, stdio only.
	 */
	confine_plan plan = {
		.landlock = {.ro = a->ro, .rw = a->rw, .scope = 0},
		.harden = true,
		.filter_flags = LANDLOCK_FILTER,
		.filter_fd = -1,
	};
	unsigned achieved;
	bool partial = false;
	char msg[512];

	if (confine_self(&plan, -1, &achieved, &partial, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "%s\n", msg);
		restricted_exit(LANDLOCK_RUN_EXIT);
	}
	/* Informational, never fatal: DSH's classifier knows this exact line (spec §5.8). */
	if (partial)
		fprintf(stderr, "%s\n", LL_PARTIAL_NOTICE);
	(void)fflush(stdout);
	confine_cloexec_from(3);
	execvp(a->command[0], a->command);
	restricted_exit(fail("exec failed", errno));
}

int launcher_run(int argc, char **argv)
{
	landlock_run_args a;
	int r = LANDLOCK_RUN_EXIT;

	landlock_run_parse(argc, argv, &a);
	switch (a.action) {
	case LANDLOCK_RUN_PROBE:
		r = run_probe();
		break;
	case LANDLOCK_RUN_EXEC:
		r = run_exec(&a);
		break;
	case LANDLOCK_RUN_USAGE:
		fprintf(stderr, "landlock-run: usage error: %s%s\n", a.usage, a.detail);
		r = LANDLOCK_RUN_EXIT;
		break;
	case LANDLOCK_RUN_NO_MEMORY:
		fputs("landlock-run: out of memory\n", stderr);
		r = LANDLOCK_RUN_EXIT;
		break;
	}
	landlock_run_args_done(&a);
	return r;
}
