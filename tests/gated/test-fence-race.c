/* SPDX-License-Identifier: MIT */
/*
 * The fs fence under a live attacker and under SIGKILL, against the running kernel. Gated on
 * openat2 (Linux 5.6): without it the binary prints why and exits 77 (meson: SKIP).
 *
 * Race: a child swaps an ancestor directory of the target with a symlink pointing outside
 * (renameat2 RENAME_EXCHANGE, so the name is always one or the other), as fast as it can, while
 * the parent writes and edits through it. DSH's canonicalise-then-open loses this race
 * (dsh-compat §7.1); here every mutation must either land inside or fail with FS_SANDBOX_DENIED,
 * and nothing may ever appear outside.
 *
 * Crash: a child rewrites a large file through dsb_fence_write() in a loop and is SIGKILLed at a
 * random point, many times. The file must always hold one complete version. A kill between the
 * temp file's creation and the rename leaves that temp file (`.NAME.dsb-*.tmp`) behind, which
 * is the documented residue; the test counts and removes it.
 *
 * Fixture, under a private base B outside /tmp and $TMPDIR (both are writable roots):
 *
 *   B/
 *   |-- ws/                  W: the workspace root
 *   |   |-- a/               the real directory (or, mid-swap, the symlink)
 *   |   |   `-- b/
 *   |   |       `-- target.txt
 *   |   |-- a.lnk -> B/out   the symlink (or, mid-swap, the real directory)
 *   |   `-- big.txt          the crash test's file
 *   |-- out/                 outside every writable root
 *   |   `-- b/               so that W/a/b/target.txt through the symlink would be B/out/b/...
 *   `-- tmpdir/              $TMPDIR during the run
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <dsb/fence.h>

#include "tests/unit/helpers.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* Mutations the race makes at least, and swaps it waits for at least (bounded by time). */
#define RACE_MUTATIONS 1500
#define RACE_SWAPS     20000
#define RACE_SECONDS   40

#define CRASH_ROUNDS  60
#define CRASH_BYTES   ((size_t)4 * 1024 * 1024)
#define CRASH_SECONDS 40

typedef struct fixture {
	char base[PATH_MAX];
	char ws[PATH_MAX];
	char *saved_tmpdir;
} fixture;

static void at(const fixture *fx, const char *rel, char *buf)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", fx->base, rel);
	assert_true(n > 0 && n < PATH_MAX);
}

static double now(void)
{
	struct timespec ts;
	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* True when @path is a writable directory not under /tmp or $TMPDIR. */
static bool usable_base_parent(const char *path)
{
	char real[PATH_MAX], tmp[PATH_MAX];
	const char *grants[] = {"/tmp", getenv("TMPDIR")};

	if (!path || !*path || access(path, W_OK | X_OK) != 0 || !realpath(path, real))
		return false;
	for (size_t i = 0; i < sizeof(grants) / sizeof(grants[0]); i++) {
		if (!grants[i] || !*grants[i] || !realpath(grants[i], tmp))
			continue;
		size_t n = strlen(tmp);
		if (strncmp(real, tmp, n) == 0 && (real[n] == '\0' || real[n] == '/' || n == 1))
			return false;
	}
	return true;
}

static int setup(void **state)
{
	const char *candidates[] = {getenv("DSB_BUILD_ROOT"), "/var/tmp", "/dev/shm",
				    getenv("HOME")};
	const char *parent = NULL;
	char tmpl[PATH_MAX], p[PATH_MAX];
	fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]) && !parent; i++)
		if (usable_base_parent(candidates[i]))
			parent = candidates[i];
	if (!parent)
		fail_msg("no writable directory outside /tmp and $TMPDIR for the fixture");
	(void)snprintf(tmpl, sizeof(tmpl), "%s/dsb-fence-race.XXXXXX", parent);
	assert_non_null(mkdtemp(tmpl));
	assert_non_null(realpath(tmpl, fx->base));
	at(fx, "ws", fx->ws);
	const char *t = getenv("TMPDIR");
	fx->saved_tmpdir = t ? strdup(t) : NULL;

	static const char *dirs[] = {"ws", "ws/a", "ws/a/b", "out", "out/b", "tmpdir"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		at(fx, dirs[i], p);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	char out[PATH_MAX];
	at(fx, "out", out);
	at(fx, "ws/a.lnk", p);
	assert_int_equal(symlink(out, p), 0);
	at(fx, "ws/a/b/target.txt", p);
	dsb_test_write_file(p, "ping\n", 5);
	at(fx, "tmpdir", p);
	assert_int_equal(setenv("TMPDIR", p, 1), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;

	if (fx->saved_tmpdir)
		(void)setenv("TMPDIR", fx->saved_tmpdir, 1);
	else
		(void)unsetenv("TMPDIR");
	dsb_test_rm_rf(fx->base);
	free(fx->saved_tmpdir);
	free(fx);
	return 0;
}

/* Counts regular files (and anything not a directory) below @path. */
static int nondirs;
static int count_nondir(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)path;
	(void)st;
	if (ftw->level > 0 && flag != FTW_D && flag != FTW_DP)
		nondirs++;
	return 0;
}

static int count_files(const char *dir)
{
	nondirs = 0;
	assert_int_equal(nftw(dir, count_nondir, 16, FTW_PHYS), 0);
	return nondirs;
}

static int temp_files;
static int find_temp(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	if (strstr(path + ftw->base, ".dsb-") && strstr(path + ftw->base, ".tmp")) {
		temp_files++;
		(void)unlink(path);
	}
	return 0;
}

/* Removes the temp files a killed write left; returns how many there were. */
static int remove_temp_files(const char *dir)
{
	temp_files = 0;
	assert_int_equal(nftw(dir, find_temp, 16, FTW_PHYS), 0);
	return temp_files;
}

/* --- the race ------------------------------------------------------------------------------ */

static void test_race_ancestor_swap(void **state)
{
	const fixture *fx = *state;
	char a[PATH_MAX], lnk[PATH_MAX], out[PATH_MAX];
	dsb_exec_policy p = {.mode = DSB_MODE_WORKSPACE_WRITE, .workspace_root = (char *)fx->ws};
	unsigned long ok = 0, denied_check = 0, denied_kernel = 0, edit_missed = 0;

	at(fx, "ws/a", a);
	at(fx, "ws/a.lnk", lnk);
	at(fx, "out", out);

	volatile unsigned long *swaps = mmap(NULL, sizeof(*swaps), PROT_READ | PROT_WRITE,
					     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(swaps != MAP_FAILED);
	*swaps = 0;

	(void)fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		for (;;) {
			if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, lnk, RENAME_EXCHANGE) < 0)
				_exit(3);
			__atomic_add_fetch(swaps, 1, __ATOMIC_RELAXED);
		}
	}

	double deadline = now() + RACE_SECONDS;
	unsigned long i = 0;
	while ((i < RACE_MUTATIONS || __atomic_load_n(swaps, __ATOMIC_RELAXED) < RACE_SWAPS) &&
	       now() < deadline) {
		dsb_error err = {0};
		bool edit = i++ % 2 == 1;
		int r = edit ? dsb_fence_edit(&p, fx->ws, "a/b/target.txt", "ping", "pong", false,
					      NULL, &err)
			     : dsb_fence_write(&p, fx->ws, "a/b/target.txt", "ping\n", 5, NULL,
					       &err);
		if (r == 0)
			ok++;
		else if (r == -DSB_E_FS_SANDBOX_DENIED && err.sys_errno == 0)
			denied_check++; /* the check saw the symlink: DSH's own defence */
		else if (r == -DSB_E_FS_SANDBOX_DENIED &&
			 (err.sys_errno == ELOOP || err.sys_errno == EXDEV))
			denied_kernel++; /* only openat2 catches these */
		else if (edit && r == -DSB_E_FS_EDIT_NOT_FOUND)
			edit_missed++; /* the preceding write was denied: still "pong" */
		else
			fail_msg("mutation %lu: unexpected %s: %s", i, dsb_code_name(err.code),
				 err.message);
		/* nothing outside, ever: checked while the race runs, not only after */
		if (i % 64 == 0 && count_files(out) != 0)
			fail_msg("a file appeared outside after %lu mutations", i);
	}

	assert_int_equal(kill(pid, SIGKILL), 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	unsigned long total_swaps = *swaps;
	(void)munmap((void *)swaps, sizeof(*swaps));

	print_message("race: %lu mutations against %lu swaps: %lu landed, %lu denied by the "
		      "check, %lu denied by the kernel (openat2), %lu edits found no \"ping\"\n",
		      i, total_swaps, ok, denied_check, denied_kernel, edit_missed);

	assert_int_equal(count_files(out), 0);
	assert_int_equal(remove_temp_files(fx->base), 0);
	assert_true(total_swaps >= 1000);
	assert_true(ok > 0);

	/* Whichever name the real directory has now, the target is there and whole. */
	struct stat st;
	char target[PATH_MAX];
	int n = snprintf(target, sizeof(target), "%s/b/target.txt",
			 lstat(a, &st) == 0 && S_ISDIR(st.st_mode) ? a : lnk);
	assert_true(n > 0 && n < (int)sizeof(target));
	char *got = dsb_test_read_file(target, NULL);
	assert_non_null(got);
	assert_true(strcmp(got, "ping\n") == 0 || strcmp(got, "pong\n") == 0);
	free(got);
}

/* --- the crash ----------------------------------------------------------------------------- */

/* True when @buf (@len bytes) is one complete version: CRASH_BYTES of one letter. */
static bool one_version(const char *buf, size_t len)
{
	if (len != CRASH_BYTES || buf[0] < 'A' || buf[0] > 'Z')
		return false;
	for (size_t i = 1; i < len; i++)
		if (buf[i] != buf[0])
			return false;
	return true;
}

static void test_crash_mid_write(void **state)
{
	const fixture *fx = *state;
	dsb_exec_policy p = {.mode = DSB_MODE_WORKSPACE_WRITE, .workspace_root = (char *)fx->ws};
	char *content = malloc(CRASH_BYTES);
	char big[PATH_MAX];
	unsigned changed = 0, leftovers = 0, rounds = 0;
	dsb_error err = {0};

	assert_non_null(content);
	at(fx, "ws/big.txt", big);
	memset(content, 'A', CRASH_BYTES);

	/* One write, timed: the kills land anywhere in up to three writes' time. */
	double t0 = now();
	assert_int_equal(dsb_fence_write(&p, fx->ws, "big.txt", content, CRASH_BYTES, NULL, &err),
			 0);
	double write_time = now() - t0;
	unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
	print_message("crash: one %zu-byte write takes %.1f ms; seed %u\n", CRASH_BYTES,
		      write_time * 1e3, seed);
	uint64_t rng = seed | 1;

	double deadline = now() + CRASH_SECONDS;
	char previous = 'A';
	for (; rounds < CRASH_ROUNDS && now() < deadline; rounds++) {
		(void)fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			for (unsigned n = 1;; n++) {
				memset(content, 'A' + (int)(n % 26), CRASH_BYTES);
				if (dsb_fence_write(&p, fx->ws, "big.txt", content, CRASH_BYTES,
						    NULL, &err) < 0)
					_exit(3);
			}
		}
		/* xorshift64: reproducible from the printed seed */
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		useconds_t delay =
			(useconds_t)((double)(rng % 1000000) / 1e6 * 3 * write_time * 1e6);
		(void)usleep(delay);
		assert_int_equal(kill(pid, SIGKILL), 0);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status))
			fail_msg("the writer exited %d before the kill", WEXITSTATUS(status));

		size_t len = 0;
		char *got = dsb_test_read_file(big, &len);
		assert_non_null(got);
		if (!one_version(got, len))
			fail_msg("round %u: a torn file (%zu bytes, starting '%c')", rounds, len,
				 len ? got[0] : '?');
		changed += got[0] != previous;
		previous = got[0];
		free(got);
		leftovers += (unsigned)remove_temp_files(fx->ws);
	}
	print_message("crash: %u kills; the file changed version %u times; %u temp files left "
		      "by kills between create and rename (removed)\n",
		      rounds, changed, leftovers);
	assert_true(rounds >= 10);
	free(content);
}

static bool have_openat2(void)
{
	uint64_t how[3] = {O_PATH | O_CLOEXEC, 0, 0};
	long fd = syscall(437 /* SYS_openat2 */, AT_FDCWD, "/", how, sizeof(how));

	if (fd >= 0)
		(void)close((int)fd);
	return fd >= 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_race_ancestor_swap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_mid_write, setup, teardown),
	};

	if (!have_openat2()) {
		printf("SKIP: openat2 is unavailable (%s): the fence cannot run here\n",
		       strerror(errno));
		return 77;
	}
	(void)umask(022);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
