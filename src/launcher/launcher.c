/* SPDX-License-Identifier: MIT */
/*
 * `landlock-run`: DSH's Landlock launcher, byte for byte (dsh-compat §5.6). It restricts itself to
 * the --ro and --rw grants and execs the command, which inherits the domain, as do all its
 * descendants. `--probe` restricts itself to `--ro /` and reports full or partial enforcement;
 * `--help` alone (ours) prints the synopsis. Every launcher failure exits 125 with one
 * `landlock-run: ` line on stderr; once the command runs, its status is the launcher's. Reached as
 * the static `landlock-run` program (main.c), as `dsh-sandbox landlock-run ...` or through a link
 * to dsh-sandbox named landlock-run. Beyond DSH the command also gets the hardening of our own
 * Landlock backend (namespaces, no capabilities, the filter, no descriptor but stdio, the signal
 * scope); none of it changes a byte DSH sees.
 *
 * Signals: the command is the caller's own child, in its process group and session, and stays
 * there (a person's shell runs it as a job; DSH kills its detached group with it). So nothing
 * but Landlock's signal scope (ABI 6) keeps its kill(0), kill(-1), a kill of the caller's group,
 * tgkill, pidfd_send_signal and SIGIO from reaching the caller, its parent and the rest of the
 * group: the command may signal only processes of its own domain. Below ABI 6 there is no
 * scope; like every Landlock feature beyond DSH's, that is not announced (the partial notice is
 * DSH's filesystem notion, and its bytes are DSH's), and `dsh-sandbox probe` tells it
 * (`not governed: signals`).
 *
 * Landlock has no rights for metadata (chmod, chown, times, xattrs): with --rw grants the
 * launcher stays behind as the command's parent and supervises those calls
 * (handler-metadata.c),
 * performing them beneath the grants and refusing them elsewhere; without any, or where it
 * cannot stay, the filter refuses them everywhere. The parent passes the command's status on
 * as its own, dying of the same signal, and forwards what signals it is sent.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../confine/confine.h"
#include "launcher.h"

/* LAUNCHER_FAILURE_EXIT: usage errors, kernel refusals, exec failures. */
#define LANDLOCK_RUN_EXIT 125

typedef enum landlock_run_action {
	LANDLOCK_RUN_EXEC,
	LANDLOCK_RUN_PROBE,
	LANDLOCK_RUN_HELP,
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
	/*
	 * Beyond DSH, whose launcher calls it an unknown argument: a person asking. Only as the
	 * sole argument, as --probe, so that no argv DSH's runner builds means anything new.
	 */
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		a->action = LANDLOCK_RUN_HELP;
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

/* Ends this process as @status says the command ended: the same exit code, or the same signal. */
static _Noreturn void exit_like(int status)
{
	if (WIFEXITED(status))
		restricted_exit(WEXITSTATUS(status));
	int sig = WTERMSIG(status);
	struct rlimit no_core = {0, 0};
	(void)setrlimit(RLIMIT_CORE, &no_core); /* the command's core, if it left one, is its own */
	(void)signal(sig, SIG_DFL);
	sigset_t only;
	(void)sigemptyset(&only);
	(void)sigaddset(&only, sig);
	(void)fflush(stdout);
	(void)fflush(stderr);
	(void)sigprocmask(SIG_UNBLOCK, &only, NULL);
	(void)raise(sig);
	_exit(128 + sig);
}

/*
 * The parent's part: answers the command's metadata calls beneath @roots until it ends,
 * forwards every signal sent to this process (but those the terminal sends its whole process
 * group, which the command got too), then ends as the command did.
 */
static _Noreturn void supervise(pid_t child, int sock, int sigfd, char *const *roots)
{
	int listener = fd_receive(sock, 0); /* < 0: the child failed before its filter */
	(void)close(sock);
	/* The host's /tmp (DSH grants it beside the workspace) keeps its own mode and owner. */
	char *tmp = realpath("/tmp", NULL);
	char *fixed[] = {tmp, NULL};
	supervisor s;
	supervisor_init(&s, roots, fixed);
	/* Without a handler (no memory) every call is refused: EPERM, never a pass. */
	void *state = NULL;
	if (metadata_handler_new(&state) >= 0)
		(void)supervisor_add(&s, &handler_metadata, state);
	(void)sup_clear_caps();
	for (;;) {
		int status;
		pid_t w = waitpid(child, &status, WNOHANG);
		if (w == child)
			exit_like(status);
		if (w < 0 && errno == ECHILD)
			restricted_exit(LANDLOCK_RUN_EXIT); /* reaped by someone else: no status */
		struct pollfd p[2] = {{.fd = listener, .events = POLLIN},
				      {.fd = sigfd, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			p[1].revents = POLLIN; /* cannot wait: look at the child again */
		if (listener >= 0 && p[0].revents &&
		    (!(p[0].revents & POLLIN) || supervisor_handle(&s, listener) < 0)) {
			(void)close(listener); /* no caller left, or failed: ENOSYS for any */
			listener = -1;
		}
		struct signalfd_siginfo si;
		while ((p[1].revents & POLLIN) && read(sigfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo != SIGCHLD && si.ssi_code != SI_KERNEL)
				(void)kill(child, (int)si.ssi_signo);
	}
}

/*
 * The metadata roots: the --rw grants as the kernel resolves them, but /dev/null. NULL when
 * there is none (nothing to supervise: the filter refuses the calls), or on failure.
 */
static char **metadata_roots(char *const *rw)
{
	size_t n = 0, others = 0;
	for (; rw[n]; n++)
		others += strcmp(rw[n], "/dev/null") != 0;
	if (others == 0)
		return NULL; /* and no heap set up for nothing (see LANDLOCK_RUN_STACK_GRANTS) */
	char **roots = calloc(n + 1, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; roots && i < n; i++) {
		if (strcmp(rw[i], "/dev/null") == 0)
			continue;
		char *real = realpath(rw[i], NULL);
		if (real)
			roots[k++] = real;
	}
	if (roots && k == 0) {
		free(roots);
		roots = NULL;
	}
	return roots;
}

/*
 * SIGCHLD as this process got it, which the command gets back: the supervisor waits for its
 * child with the default action, since an inherited SIG_IGN would reap the child unseen.
 */
static struct sigaction inherited_sigchld;
static bool sigchld_changed;

/*
 * Confines this process to @plan (its metadata calls sent over @meta_sock, or refused with -1)
 * and execs the command with the signal mask @mask. Never returns.
 */
static _Noreturn void confine_and_exec(const landlock_run_args *a, const confine_plan *plan,
				       int meta_sock, const sigset_t *mask)
{
	unsigned achieved;
	bool partial = false;
	char msg[512];

	if (confine_self(plan, meta_sock, NULL, NULL, &achieved, &partial, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "%s\n", msg);
		restricted_exit(LANDLOCK_RUN_EXIT);
	}
	/* Informational, never fatal: DSH's classifier knows this exact line (dsh-compat §5.8). */
	if (partial)
		fprintf(stderr, "%s\n", LL_PARTIAL_NOTICE);
	(void)fflush(stdout);
	confine_cloexec_from(3);
	if (sigchld_changed)
		(void)sigaction(SIGCHLD, &inherited_sigchld, NULL);
	(void)sigprocmask(SIG_SETMASK, mask, NULL);
	execvp(a->command[0], a->command);
	restricted_exit(fail("exec failed", errno));
}

/*
 * The command's process, vforked (a fork's copy of the page tables is most of its cost): it
 * dies with this one, confines itself and execs, sending its listener over @sock first.
 * Returns its pid, or -1. Never inlined: the child runs in this frame alone.
 */
static __attribute__((noinline)) pid_t
spawn_command(const landlock_run_args *a, const confine_plan *plan, int sock, const sigset_t *mask)
{
	pid_t parent = getpid();
	pid_t pid = vfork();
	if (pid == 0) {
		/* The command dies with its supervisor: nothing answers its calls after. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0L, 0L, 0L) < 0 || getppid() != parent)
			_exit(LANDLOCK_RUN_EXIT);
		confine_and_exec(a, plan, sock, mask);
	}
	return pid;
}

static int run_exec(const landlock_run_args *a)
{
	/*
	 * DSH's grants, plus what every confined command of ours gets (beyond DSH, no visible
	 * byte changes): namespaces, no capabilities, the system-call filter, stdio only, no
	 * signal outside its domain. The metadata calls go to this process, or are refused where
	 * it cannot take them; the command cannot signal this process either, which it never
	 * needs (its signals to us would only come back to it).
	 */
	confine_plan plan = {
		.steps = STEPS_SELF,
		.landlock = {.ro = a->ro, .rw = a->rw, .scope = LL_SCOPE_SIGNAL},
		.filter_flags = LANDLOCK_FILTER | SECCOMP_METADATA_NOTIFY,
		.filter_fd = -1,
	};

	/* Every signal waits in a signalfd from here: none is lost before the parent reads. */
	sigset_t all, old;
	(void)sigfillset(&all);
	(void)sigprocmask(SIG_SETMASK, &all, &old);
	char **roots = metadata_roots(a->rw);
	int sp[2], sigfd = -1;
	if (roots && (sigfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK)) >= 0 &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0) {
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigchld_changed = sigaction(SIGCHLD, &dfl, &inherited_sigchld) == 0;
		pid_t child = spawn_command(a, &plan, sp[1], &old);
		(void)close(sp[1]);
		if (child > 0)
			supervise(child, sp[0], sigfd, roots);
		(void)close(sp[0]);
	}
	/* Nothing to supervise, or no way to: the filter refuses the metadata calls. */
	confine_and_exec(a, &plan, -1, &old);
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
	case LANDLOCK_RUN_HELP:
		fputs("usage: landlock-run [--ro PATH]... [--rw PATH]... -- ARGV...\n"
		      "       landlock-run --probe\n"
		      "\n"
		      "Runs ARGV restricted by Landlock to reading the --ro paths and\n"
		      "reading and writing the --rw paths (DSH's launcher contract).\n"
		      "--probe reports whether this kernel enforces that fully or in\n"
		      "part. Every failure of the launcher itself exits 125 with one\n"
		      "\"landlock-run: \" line on stderr; otherwise the status is the\n"
		      "command's.\n",
		      stdout);
		r = fflush(stdout) == 0 ? 0 : LANDLOCK_RUN_EXIT;
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
