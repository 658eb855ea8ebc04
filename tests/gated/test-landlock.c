/* SPDX-License-Identifier: MIT */
/*
 * Landlock, against the running kernel (dsh-compat §5.6): what landlock_restrict() really denies,
 * with the errno the kernel gives, and what it does not. Gated: when the kernel has no Landlock the
 * binary prints why and exits 77 (meson: SKIP); it never skips when the kernel has it. Every
 * restriction is irreversible, so it runs in a forked child (dsb_test_run_in_child()); the child
 * reports through its exit status and a line on stderr, never through cmocka asserts. The
 * negotiation table is pure and runs in the parent.
 *
 * Fixture tree made per test under a private temp dir T (TMPDIR, else /tmp):
 *
 *   T/
 *   |-- ws/                        WS: the --rw grant
 *   |   |-- inside                 regular file
 *   |   |-- sub/                   directory
 *   |   |-- out-link -> T/outside/file
 *   |   `-- hard                   hard link to T/outside/hard-src, made before restriction
 *   `-- outside/                   readable only, through --ro /
 *       |-- file                   regular file "outside\n", mode 0644
 *       |-- hard-src               regular file
 *       `-- dir/                   empty directory
 *
 * The plan of most cases is DSH's read-only grant plus a workspace:
 * ro = [/], rw = [/dev/null, WS].
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/confine/confine.h"
#include "tests/unit/helpers.h"

/* The kernel's ABI, probed once in main(). */
static int kernel_abi;

typedef struct fixture {
	char *t;
	char ws[PATH_MAX];
	char outside[PATH_MAX];
} fixture;

/* --- running in a child -------------------------------------------------------------------- */

static const char *errname(int e)
{
	const char *name;

	if (e == 0)
		return "OK";
	name = strerrorname_np(e);
	return name ? name : "E?";
}

/* In a child: fails it with a line naming the call, what it gave and what was expected. */
#define EXPECT(expr, want)                                                                      \
	do {                                                                                    \
		int got_ = (expr), want_ = (want);                                              \
		if (got_ != want_) {                                                            \
			fprintf(stderr, "%s:%d: %s: got %s, expected %s\n", __FILE__, __LINE__, \
				#expr, errname(got_), errname(want_));                          \
			return 1;                                                               \
		}                                                                               \
	} while (0)

/* In a child, for values that are not errnos (statuses, ABI numbers). */
#define EXPECT_INT(expr, want)                                                            \
	do {                                                                              \
		long long got_ = (expr), want_ = (want);                                  \
		if (got_ != want_) {                                                      \
			fprintf(stderr, "%s:%d: %s: got %lld, expected %lld\n", __FILE__, \
				__LINE__, #expr, got_, want_);                            \
			return 1;                                                         \
		}                                                                         \
	} while (0)

/* T/@rel, in one of a few rotating buffers (a child is single-threaded). */
static const char *at(const fixture *fx, const char *rel)
{
	static char bufs[8][PATH_MAX];
	static unsigned next;
	char *b = bufs[next++ % 8];

	(void)snprintf(b, PATH_MAX, "%s/%s", fx->t, rel);
	return b;
}

/* --- probes: 0 or the errno ---------------------------------------------------------------- */

static int probe_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd < 0)
		return errno;
	(void)close(fd);
	return 0;
}

static int probe_create(const char *path)
{
	return probe_open(path, O_WRONLY | O_CREAT);
}

/* Opens an existing file for writing and writes one byte. */
static int probe_write(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	int err;

	if (fd < 0)
		return errno;
	err = write(fd, "x", 1) == 1 ? 0 : errno;
	(void)close(fd);
	return err;
}

static int probe_rc(int r)
{
	return r < 0 ? errno : 0;
}

static int probe_bind_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	err = probe_rc(bind(fd, (const struct sockaddr *)&sa, sizeof(sa)));
	(void)close(fd);
	return err;
}

/* An abstract socket's address: sun_path[0] = '\0', then @name. */
static socklen_t abstract_addr(struct sockaddr_un *sa, const char *name)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path + 1, name, strlen(name));
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
}

static int probe_connect_abstract(const char *name)
{
	struct sockaddr_un sa;
	socklen_t len = abstract_addr(&sa, name);
	int fd, err;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	err = probe_rc(connect(fd, (const struct sockaddr *)&sa, len));
	(void)close(fd);
	return err;
}

static int probe_ioctl_tcgets(const char *path)
{
	struct termios tio;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return errno;
	err = probe_rc(ioctl(fd, TCGETS, &tio));
	(void)close(fd);
	return err;
}

/* Runs @path in a grandchild; its exit status, or -errno-ish 255 when it could not. */
static int probe_exec_status(const char *path)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 255;
	if (pid == 0) {
		execl(path, path, (char *)NULL);
		_exit(errno == EACCES ? 126 : 127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 255;
	return WEXITSTATUS(status);
}

/* --- restriction in the child -------------------------------------------------------------- */

/* Restricts the child to ro=@ro, rw=@rw, @scope; 100 (with the message) when that fails. */
static int restrict_to(char **ro, char **rw, uint64_t scope)
{
	landlock_plan plan = {.ro = ro, .rw = rw, .scope = scope};
	landlock_status st;
	char msg[512];
	int r = landlock_restrict(&plan, &st, msg, sizeof(msg));

	if (r < 0) {
		fprintf(stderr, "landlock_restrict: %d: %s\n", r, msg);
		return 100;
	}
	return 0;
}

/* ro = [/], rw = [/dev/null, WS], with @scope. */
static int restrict_ws(const fixture *fx, uint64_t scope)
{
	char root[] = "/", dev_null[] = "/dev/null";
	char ws[PATH_MAX];
	char *ro[] = {root, NULL};
	char *rw[] = {dev_null, ws, NULL};

	(void)snprintf(ws, sizeof(ws), "%s", fx->ws);
	return restrict_to(ro, rw, scope);
}

#define RESTRICT_WS(fx, scope)                       \
	do {                                         \
		int r_ = restrict_ws((fx), (scope)); \
		if (r_ != 0)                         \
			return r_;                   \
	} while (0)

/* --- fixture -------------------------------------------------------------------------------- */

static void mkdir_at(const fixture *fx, const char *rel)
{
	assert_int_equal(mkdir(at(fx, rel), 0755), 0);
}

static int setup(void **state)
{
	fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	fx->t = dsb_test_mkdtemp();
	(void)snprintf(fx->ws, sizeof(fx->ws), "%s/ws", fx->t);
	(void)snprintf(fx->outside, sizeof(fx->outside), "%s/outside", fx->t);
	mkdir_at(fx, "ws");
	mkdir_at(fx, "ws/sub");
	mkdir_at(fx, "outside");
	mkdir_at(fx, "outside/dir");
	dsb_test_write_file(at(fx, "ws/inside"), "inside\n", 7);
	dsb_test_write_file(at(fx, "outside/file"), "outside\n", 8);
	dsb_test_write_file(at(fx, "outside/hard-src"), "hard\n", 5);
	assert_int_equal(symlink(at(fx, "outside/file"), at(fx, "ws/out-link")), 0);
	assert_int_equal(link(at(fx, "outside/hard-src"), at(fx, "ws/hard")), 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	fixture *fx = *state;

	dsb_test_rm_rf(fx->t);
	free(fx->t);
	free(fx);
	return 0;
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static char *slurp(const char *path)
{
	return dsb_test_read_file(path, NULL);
}

/* --- cases ---------------------------------------------------------------------------------- */

static int child_ws_write_lands(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	EXPECT(probe_create(at(fx, "ws/new")), 0);
	EXPECT(probe_write(at(fx, "ws/inside")), 0);
	EXPECT(probe_rc(mkdir(at(fx, "ws/sub/d"), 0755)), 0);
	EXPECT(probe_rc(symlink("x", at(fx, "ws/sub/s"))), 0);
	EXPECT(probe_rc(unlink(at(fx, "ws/sub/s"))), 0);
	EXPECT(probe_rc(rmdir(at(fx, "ws/sub/d"))), 0);
	EXPECT(probe_open("/dev/null", O_WRONLY), 0);
	return 0;
}

static void test_ws_write_lands(void **state)
{
	fixture *fx = *state;
	char *s;

	assert_int_equal(dsb_test_run_in_child(child_ws_write_lands, (void *)fx), 0);
	assert_true(exists(at(fx, "ws/new")));
	s = slurp(at(fx, "ws/inside"));
	assert_string_equal(s, "inside\nx");
	free(s);
}

static int child_outside_denied(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	EXPECT(probe_create(at(fx, "outside/new")), EACCES);
	EXPECT(probe_write(at(fx, "outside/file")), EACCES);
	EXPECT(probe_open(at(fx, "outside/file"), O_RDWR), EACCES);
	EXPECT(probe_rc(mkdir(at(fx, "outside/d"), 0755)), EACCES);
	EXPECT(probe_rc(unlink(at(fx, "outside/file"))), EACCES);
	EXPECT(probe_rc(rmdir(at(fx, "outside/dir"))), EACCES);
	EXPECT(probe_rc(symlink("x", at(fx, "outside/s"))), EACCES);
	/* The grant is exactly WS: its parent T is as outside as anything. */
	EXPECT(probe_create(at(fx, "beside")), EACCES);
	/* Reading stays allowed everywhere (--ro /). */
	EXPECT(probe_open(at(fx, "outside/file"), O_RDONLY), 0);
	EXPECT(probe_open(at(fx, "outside/dir"), O_RDONLY | O_DIRECTORY), 0);
	return 0;
}

static void test_create_outside_denied(void **state)
{
	fixture *fx = *state;
	char *s;

	assert_int_equal(dsb_test_run_in_child(child_outside_denied, (void *)fx), 0);
	assert_false(exists(at(fx, "outside/new")));
	assert_false(exists(at(fx, "beside")));
	assert_true(exists(at(fx, "outside/dir")));
	s = slurp(at(fx, "outside/file"));
	assert_string_equal(s, "outside\n");
	free(s);
}

static int child_dotdot(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	EXPECT(probe_create(at(fx, "ws/../outside/new")), EACCES);
	EXPECT(probe_create(at(fx, "ws/sub/../../outside/new")), EACCES);
	EXPECT(probe_create(at(fx, "ws/../new")), EACCES);
	/* From inside WS as cwd, a relative escape is no different. */
	EXPECT(probe_rc(chdir(fx->ws)), 0);
	EXPECT(probe_create("../outside/new"), EACCES);
	EXPECT(probe_create("sub/../new-rel"), 0);
	return 0;
}

static void test_dotdot_traversal_out_of_ws_denied(void **state)
{
	fixture *fx = *state;

	assert_int_equal(dsb_test_run_in_child(child_dotdot, (void *)fx), 0);
	assert_false(exists(at(fx, "outside/new")));
	assert_false(exists(at(fx, "new")));
	assert_true(exists(at(fx, "ws/new-rel")));
}

static int child_symlink(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	/* Landlock checks the path the lookup ends on, not the one spelled. */
	EXPECT(probe_write(at(fx, "ws/out-link")), EACCES);
	EXPECT(probe_open(at(fx, "ws/out-link"), O_WRONLY | O_CREAT), EACCES);
	/* Making a new link that points out is a write inside WS, so allowed; using it is not. */
	EXPECT(probe_rc(symlink(fx->outside, at(fx, "ws/new-link"))), 0);
	EXPECT(probe_create(at(fx, "ws/new-link/new")), EACCES);
	EXPECT(probe_open(at(fx, "ws/out-link"), O_RDONLY), 0);
	return 0;
}

static void test_symlink_out_of_ws_denied(void **state)
{
	fixture *fx = *state;
	char *s;

	assert_int_equal(dsb_test_run_in_child(child_symlink, (void *)fx), 0);
	assert_false(exists(at(fx, "outside/new")));
	s = slurp(at(fx, "outside/file"));
	assert_string_equal(s, "outside\n");
	free(s);
}

static int child_hard_link(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	/*
	 * Linking an outside file into WS would reparent it: the source hierarchy lacks REFER, so
	 * the kernel refuses with EXDEV (at ABI 1, REFER is unknown and every cross-directory link
	 * is EXDEV). Either way the outside file stays unwritable.
	 */
	EXPECT(probe_rc(link(at(fx, "outside/file"), at(fx, "ws/new-hard"))), EXDEV);
	EXPECT(probe_write(at(fx, "outside/file")), EACCES);
	/* A link in the other direction needs MAKE_REG outside: EACCES beats EXDEV. */
	EXPECT(probe_rc(link(at(fx, "ws/inside"), at(fx, "outside/new-hard"))),
	       kernel_abi >= 2 ? EACCES : EXDEV);
	return 0;
}

static void test_hard_link_from_ws_to_outside_denied(void **state)
{
	fixture *fx = *state;

	assert_int_equal(dsb_test_run_in_child(child_hard_link, (void *)fx), 0);
	assert_false(exists(at(fx, "ws/new-hard")));
	assert_false(exists(at(fx, "outside/new-hard")));
}

static int child_preexisting_hard_link(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	EXPECT(probe_write(at(fx, "outside/hard-src")), EACCES);
	EXPECT(probe_write(at(fx, "ws/hard")), 0);
	return 0;
}

/*
 * Kernel behaviour, asserted so that a change is noticed: Landlock rules are about paths, so a
 * hard link that already existed inside WS before the restriction makes its inode writable,
 * outside name and all. DSH's workspace-write has the same property.
 */
static void test_preexisting_hard_link_in_ws_is_writable_kernel_behaviour(void **state)
{
	fixture *fx = *state;
	char *s;

	assert_int_equal(dsb_test_run_in_child(child_preexisting_hard_link, (void *)fx), 0);
	s = slurp(at(fx, "outside/hard-src"));
	assert_string_equal(s, "hard\nx");
	free(s);
}

static int child_rename(void *arg)
{
	const fixture *fx = arg;
	/* Below ABI 2 every cross-directory rename is EXDEV; from 2 on, the missing REMOVE_FILE
	 * (into WS) or MAKE_REG (out of it) is EACCES, which the kernel reports before EXDEV. */
	int want = kernel_abi >= 2 ? EACCES : EXDEV;

	RESTRICT_WS(fx, 0);
	EXPECT(probe_rc(rename(at(fx, "outside/file"), at(fx, "ws/moved-in"))), want);
	EXPECT(probe_rc(rename(at(fx, "ws/inside"), at(fx, "outside/moved-out"))), want);
	EXPECT(probe_rc(rename(at(fx, "outside/dir"), at(fx, "ws/dir-in"))), want);
	EXPECT(probe_rc(rename(at(fx, "ws/sub"), at(fx, "outside/sub-out"))), want);
	/* Inside WS, REFER is granted: moving between its directories works from ABI 2. */
	EXPECT(probe_rc(rename(at(fx, "ws/inside"), at(fx, "ws/sub/inside"))),
	       kernel_abi >= 2 ? 0 : EXDEV);
	return 0;
}

static void test_rename_into_or_out_of_ws_denied(void **state)
{
	fixture *fx = *state;

	assert_int_equal(dsb_test_run_in_child(child_rename, (void *)fx), 0);
	assert_true(exists(at(fx, "outside/file")));
	assert_true(exists(at(fx, "outside/dir")));
	assert_false(exists(at(fx, "ws/moved-in")));
	assert_false(exists(at(fx, "outside/moved-out")));
	assert_false(exists(at(fx, "outside/sub-out")));
}

static int child_truncate(void *arg)
{
	const fixture *fx = arg;
	/* TRUNCATE exists from ABI 3; below it truncate(2) is not restricted at all. */
	int want = kernel_abi >= 3 ? EACCES : 0;

	RESTRICT_WS(fx, 0);
	EXPECT(probe_rc(truncate(at(fx, "outside/file"), 0)), want);
	/* O_TRUNC on a file opened for reading only needs TRUNCATE as well. */
	EXPECT(probe_open(at(fx, "outside/file"), O_RDONLY | O_TRUNC), want);
	EXPECT(probe_rc(truncate(at(fx, "ws/inside"), 0)), 0);
	return 0;
}

static void test_truncate_outside_denied(void **state)
{
	fixture *fx = *state;
	char *s;

	if (kernel_abi < 3)
		print_message("ABI %d has no TRUNCATE right: asserting it is not restricted\n",
			      kernel_abi);
	assert_int_equal(dsb_test_run_in_child(child_truncate, (void *)fx), 0);
	if (kernel_abi >= 3) {
		s = slurp(at(fx, "outside/file"));
		assert_string_equal(s, "outside\n");
		free(s);
	}
}

static int child_special_files(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	EXPECT(probe_rc(mkfifo(at(fx, "outside/fifo"), 0644)), EACCES);
	/* The Landlock hook runs before the CAP_MKNOD check: EACCES, even unprivileged. */
	EXPECT(probe_rc(mknod(at(fx, "outside/chr"), S_IFCHR | 0644, makedev(1, 3))), EACCES);
	EXPECT(probe_rc(mknod(at(fx, "outside/reg"), S_IFREG | 0644, 0)), EACCES);
	EXPECT(probe_bind_unix(at(fx, "outside/sock")), EACCES);
	/* The same inside WS: MAKE_FIFO, MAKE_REG and MAKE_SOCK are granted there. */
	EXPECT(probe_rc(mkfifo(at(fx, "ws/fifo"), 0644)), 0);
	EXPECT(probe_rc(mknod(at(fx, "ws/reg"), S_IFREG | 0644, 0)), 0);
	EXPECT(probe_bind_unix(at(fx, "ws/sock")), 0);
	return 0;
}

static void test_mkfifo_mknod_bind_outside_denied(void **state)
{
	fixture *fx = *state;

	assert_int_equal(dsb_test_run_in_child(child_special_files, (void *)fx), 0);
	assert_false(exists(at(fx, "outside/fifo")));
	assert_false(exists(at(fx, "outside/chr")));
	assert_false(exists(at(fx, "outside/reg")));
	assert_false(exists(at(fx, "outside/sock")));
	assert_true(exists(at(fx, "ws/sock")));
}

static int child_proc_magic(void *arg)
{
	const fixture *fx = arg;
	char path[PATH_MAX + 32];
	int dirfd = open(fx->outside, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dirfd < 0)
		return 99;
	RESTRICT_WS(fx, 0);
	(void)snprintf(path, sizeof(path), "/proc/self/root%s/new", fx->outside);
	EXPECT(probe_create(path), EACCES);
	/* A descriptor opened before the restriction is no way round it either. */
	(void)snprintf(path, sizeof(path), "/proc/self/fd/%d/new", dirfd);
	EXPECT(probe_create(path), EACCES);
	EXPECT(probe_rc(openat(dirfd, "new", O_WRONLY | O_CREAT | O_CLOEXEC, 0644)), EACCES);
	(void)close(dirfd);
	return 0;
}

static void test_proc_self_root_write_outside_denied(void **state)
{
	fixture *fx = *state;

	assert_int_equal(dsb_test_run_in_child(child_proc_magic, (void *)fx), 0);
	assert_false(exists(at(fx, "outside/new")));
}

static int child_dev_shm(void *arg)
{
	const fixture *fx = arg;
	char path[64];

	RESTRICT_WS(fx, 0);
	(void)snprintf(path, sizeof(path), "/dev/shm/dsb-gated-%d", (int)getpid());
	EXPECT(probe_create(path), EACCES);
	EXPECT(probe_open("/dev/null", O_WRONLY), 0);
	EXPECT(probe_open("/dev/zero", O_WRONLY), EACCES);
	return 0;
}

static void test_dev_shm_write_denied(void **state)
{
	fixture *fx = *state;
	struct stat st;

	if (stat("/dev/shm", &st) < 0 || !S_ISDIR(st.st_mode))
		skip(); /* no /dev/shm on this machine: nothing to prove */
	assert_int_equal(dsb_test_run_in_child(child_dev_shm, (void *)fx), 0);
}

static int child_metadata(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	EXPECT(probe_rc(chmod(at(fx, "outside/file"), 0600)), 0);
	EXPECT(probe_rc(utimensat(AT_FDCWD, at(fx, "outside/file"), NULL, 0)), 0);
	EXPECT(probe_rc(chown(at(fx, "outside/file"), getuid(), getgid())), 0);
	return 0;
}

/*
 * Kernel behaviour, asserted so that a change is noticed: Landlock's filesystem rights do not
 * govern metadata, so chmod, utimes and chown succeed on files outside the grants (dsh-compat §5.6
 * caveat; bwrap's read-only bind gives EROFS instead).
 */
static void test_chmod_outside_succeeds_landlock_ignores_metadata(void **state)
{
	fixture *fx = *state;
	struct stat st;

	assert_int_equal(dsb_test_run_in_child(child_metadata, (void *)fx), 0);
	assert_int_equal(stat(at(fx, "outside/file"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
}

static int grandchild_write(const fixture *fx)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 99;
	if (pid == 0)
		_exit(probe_create(at(fx, "outside/new")) == EACCES ? 0 : 1);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 98;
	return WEXITSTATUS(status);
}

static int child_inherited(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	EXPECT_INT(grandchild_write(fx), 0);
	/* --ro / keeps execution: an exec'd program runs, still confined (see the e2e tests). */
	EXPECT_INT(probe_exec_status("/bin/true"), 0);
	return 0;
}

static void test_descendants_are_confined_and_can_exec(void **state)
{
	fixture *fx = *state;

	assert_int_equal(dsb_test_run_in_child(child_inherited, (void *)fx), 0);
	assert_false(exists(at(fx, "outside/new")));
}

static int child_ioctl_dev(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	/* /dev/zero is read-only through --ro /, without IOCTL_DEV (ABI 5); /dev/null is --rw. */
	EXPECT(probe_ioctl_tcgets("/dev/zero"), kernel_abi >= 5 ? EACCES : ENOTTY);
	EXPECT(probe_ioctl_tcgets("/dev/null"), ENOTTY);
	return 0;
}

static void test_ioctl_on_read_only_device_denied(void **state)
{
	assert_int_equal(dsb_test_run_in_child(child_ioctl_dev, (void *)*state), 0);
}

static int child_empty_plan(void *arg)
{
	const fixture *fx = arg;
	int r = restrict_to(NULL, NULL, 0);

	if (r != 0)
		return r;
	EXPECT(probe_open("/", O_RDONLY | O_DIRECTORY), EACCES);
	EXPECT(probe_open(at(fx, "outside/file"), O_RDONLY), EACCES);
	EXPECT(probe_create(at(fx, "ws/new")), EACCES);
	EXPECT_INT(probe_exec_status("/bin/true"), 126);
	return 0;
}

static void test_empty_plan_denies_everything(void **state)
{
	assert_int_equal(dsb_test_run_in_child(child_empty_plan, (void *)*state), 0);
}

static int child_file_rules(void *arg)
{
	const fixture *fx = arg;
	char ro_file[PATH_MAX], rw_file[PATH_MAX];
	char *ro[] = {ro_file, NULL};
	char *rw[] = {rw_file, NULL};
	int r;

	/* Rules on files: without the non-directory mask the kernel would refuse them (EINVAL). */
	(void)snprintf(ro_file, sizeof(ro_file), "%s", at(fx, "outside/file"));
	(void)snprintf(rw_file, sizeof(rw_file), "%s", at(fx, "ws/inside"));
	r = restrict_to(ro, rw, 0);
	if (r != 0)
		return r;
	EXPECT(probe_open(ro_file, O_RDONLY), 0);
	EXPECT(probe_write(ro_file), EACCES);
	EXPECT(probe_write(rw_file), 0);
	EXPECT(probe_open(at(fx, "outside/hard-src"), O_RDONLY), EACCES);
	EXPECT(probe_create(at(fx, "ws/new")), EACCES);
	return 0;
}

static void test_rules_on_files(void **state)
{
	assert_int_equal(dsb_test_run_in_child(child_file_rules, (void *)*state), 0);
}

static int child_scope_signal(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, LL_SCOPE_SIGNAL);
	/* The parent is outside the child's domain: signalling it needs the scope's leave. */
	EXPECT(probe_rc(kill(getppid(), 0)), kernel_abi >= 6 ? EPERM : 0);
	EXPECT(probe_rc(kill(getpid(), 0)), 0);
	return 0;
}

static int child_no_scope_signal(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	EXPECT(probe_rc(kill(getppid(), 0)), 0);
	return 0;
}

static void test_scope_signal(void **state)
{
	if (kernel_abi < 6)
		print_message("ABI %d has no scopes: asserting signals stay unrestricted\n",
			      kernel_abi);
	assert_int_equal(dsb_test_run_in_child(child_scope_signal, (void *)*state), 0);
	assert_int_equal(dsb_test_run_in_child(child_no_scope_signal, (void *)*state), 0);
}

static char abstract_name[64];

static int child_scope_abstract(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, LL_SCOPE_ABSTRACT_UNIX_SOCKET);
	EXPECT(probe_connect_abstract(abstract_name), kernel_abi >= 6 ? EPERM : 0);
	return 0;
}

static int child_no_scope_abstract(void *arg)
{
	const fixture *fx = arg;
	RESTRICT_WS(fx, 0);
	EXPECT(probe_connect_abstract(abstract_name), 0);
	return 0;
}

static void test_scope_abstract_unix_socket(void **state)
{
	struct sockaddr_un sa;
	socklen_t len;
	int fd;

	(void)snprintf(abstract_name, sizeof(abstract_name), "dsb-gated-%d", (int)getpid());
	len = abstract_addr(&sa, abstract_name);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (const struct sockaddr *)&sa, len), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(dsb_test_run_in_child(child_scope_abstract, (void *)*state), 0);
	assert_int_equal(dsb_test_run_in_child(child_no_scope_abstract, (void *)*state), 0);
	(void)close(fd);
}

static int child_missing_path(void *arg)
{
	const fixture *fx = arg;
	char root[] = "/", missing[PATH_MAX], ws[PATH_MAX], want[PATH_MAX + 128];
	char *ro[] = {root, missing, NULL};
	char *rw[] = {ws, NULL};
	landlock_plan plan = {.ro = ro, .rw = rw, .scope = LL_SCOPE_SIGNAL};
	landlock_status st = {.abi = -12345};
	char msg[PATH_MAX + 128];
	int nnp_before = prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L);

	(void)snprintf(missing, sizeof(missing), "%s/no/such", fx->t);
	(void)snprintf(ws, sizeof(ws), "%s", fx->ws);
	(void)snprintf(want, sizeof(want),
		       "landlock-run: cannot open rule path: %s: No such file or directory",
		       missing);
	EXPECT_INT(landlock_restrict(&plan, &st, msg, sizeof(msg)), -ENOENT);
	if (strcmp(msg, want) != 0) {
		fprintf(stderr, "message [%s], expected [%s]\n", msg, want);
		return 1;
	}
	/* Failure never touches the status, and nothing was restricted. */
	EXPECT_INT(st.abi, -12345);
	EXPECT_INT(prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L), nnp_before);
	EXPECT(probe_create(at(fx, "outside/new")), 0);
	EXPECT(probe_rc(kill(getppid(), 0)), 0);

	/* The same for a missing --rw path, after the --ro ones went in. */
	ro[1] = NULL;
	rw[0] = missing;
	EXPECT_INT(landlock_restrict(&plan, &st, msg, sizeof(msg)), -ENOENT);
	if (strcmp(msg, want) != 0) {
		fprintf(stderr, "message [%s], expected [%s]\n", msg, want);
		return 1;
	}
	EXPECT(probe_create(at(fx, "outside/new2")), 0);
	return 0;
}

static void test_restrict_missing_path_fails_closed_unrestricted(void **state)
{
	fixture *fx = *state;

	assert_int_equal(dsb_test_run_in_child(child_missing_path, (void *)fx), 0);
	assert_true(exists(at(fx, "outside/new")));
	assert_true(exists(at(fx, "outside/new2")));
}

static int child_status(void *arg)
{
	const fixture *fx = arg;
	char root[] = "/";
	char *ro[] = {root, NULL};
	landlock_plan plan = {.ro = ro, .rw = NULL, .scope = LL_SCOPE_SIGNAL};
	landlock_status st, want;
	char msg[256] = "untouched";

	(void)fx;
	landlock_negotiate(&plan, kernel_abi, &want);
	EXPECT_INT(landlock_restrict(&plan, &st, msg, sizeof(msg)), 0);
	EXPECT_INT(st.abi, kernel_abi);
	EXPECT_INT(st.partial, want.partial);
	EXPECT_INT(st.handled_fs, want.handled_fs);
	EXPECT_INT(st.scoped, want.scoped);
	EXPECT_INT(strlen(msg), 0);
	EXPECT_INT(prctl(PR_GET_NO_NEW_PRIVS, 0L, 0L, 0L, 0L), 1);
	return 0;
}

static void test_restrict_reports_negotiated_status(void **state)
{
	assert_int_equal(dsb_test_run_in_child(child_status, (void *)*state), 0);
}

static int child_abi_max(void *arg)
{
	const fixture *fx = arg;
	char root[] = "/", dev_null[] = "/dev/null", ws[PATH_MAX];
	char *ro[] = {root, NULL};
	char *rw[] = {dev_null, ws, NULL};
	landlock_plan plan = {.ro = ro, .rw = rw, .scope = 0, .abi_max = 2};
	int abi = kernel_abi < 2 ? kernel_abi : 2;
	landlock_status st;
	char msg[512];

	(void)snprintf(ws, sizeof(ws), "%s", fx->ws);
	EXPECT_INT(landlock_restrict(&plan, &st, msg, sizeof(msg)), 0);
	EXPECT_INT(st.abi, abi);
	EXPECT_INT(st.partial, 1);
	/* The degrade is real: TRUNCATE and IOCTL_DEV are no longer handled... */
	EXPECT(probe_rc(truncate(at(fx, "outside/file"), 0)), 0);
	EXPECT(probe_ioctl_tcgets("/dev/zero"), ENOTTY);
	/* ...while what ABI 1 and 2 handle stays denied. */
	EXPECT(probe_create(at(fx, "outside/new")), EACCES);
	return 0;
}

/* An explicit degrade (landlockAbiMax = 2) builds the rule set at that ABI, reported partial. */
static void test_restrict_abi_max_degrades_explicitly(void **state)
{
	assert_int_equal(dsb_test_run_in_child(child_abi_max, (void *)*state), 0);
}

/* --- negotiation: pure ---------------------------------------------------------------------- */

#define ABI1_FS ((1ULL << 13) - 1)
#define SCOPES	(LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET)

static void test_negotiate_table(void **state)
{
	/* clang-format off: one ABI per row */
	static const struct {
		int abi;
		uint64_t handled;
		bool partial;
		uint64_t scoped; /* for a plan asking for both scopes */
	} rows[] = {
		{-ENOSYS, 0, true, 0},
		{-EOPNOTSUPP, 0, true, 0},
		{1, ABI1_FS, true, 0},
		{2, ABI1_FS | LL_REFER, true, 0},
		{3, ABI1_FS | LL_REFER | LL_TRUNCATE, true, 0},
		{4, ABI1_FS | LL_REFER | LL_TRUNCATE, true, 0},
		{5, ABI1_FS | LL_REFER | LL_TRUNCATE | LL_IOCTL_DEV, false, 0},
		{6, ABI1_FS | LL_REFER | LL_TRUNCATE | LL_IOCTL_DEV, false, SCOPES},
		{7, ABI1_FS | LL_REFER | LL_TRUNCATE | LL_IOCTL_DEV, false, SCOPES},
		{8, ABI1_FS | LL_REFER | LL_TRUNCATE | LL_IOCTL_DEV, false, SCOPES},
	};
	/* clang-format on */
	landlock_plan both = {.ro = NULL, .rw = NULL, .scope = SCOPES | (1ULL << 7)};
	landlock_plan signal_only = {.ro = NULL, .rw = NULL, .scope = LL_SCOPE_SIGNAL};
	landlock_plan none = {0};
	landlock_status st;

	(void)state;
	assert_int_equal(ABI1_FS, 0x1fff);
	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		print_message("abi %d\n", rows[i].abi);
		landlock_negotiate(&both, rows[i].abi, &st);
		assert_int_equal(st.abi, rows[i].abi);
		assert_int_equal(st.handled_fs, rows[i].handled);
		assert_int_equal(st.partial, rows[i].partial);
		assert_int_equal(st.scoped, rows[i].scoped);

		landlock_negotiate(&signal_only, rows[i].abi, &st);
		assert_int_equal(st.scoped, rows[i].scoped & LL_SCOPE_SIGNAL);
		landlock_negotiate(&none, rows[i].abi, &st);
		assert_int_equal(st.scoped, 0);
		assert_int_equal(st.handled_fs, rows[i].handled);
		landlock_negotiate(NULL, rows[i].abi, &st);
		assert_int_equal(st.scoped, 0);
	}
}

static void test_negotiate_abi_max_caps(void **state)
{
	landlock_plan capped = {.ro = NULL, .rw = NULL, .scope = SCOPES, .abi_max = 3};
	landlock_status st;

	(void)state;
	landlock_negotiate(&capped, 7, &st);
	assert_int_equal(st.abi, 3);
	assert_true(st.partial);
	assert_int_equal(st.handled_fs, ABI1_FS | LL_REFER | LL_TRUNCATE);
	assert_int_equal(st.scoped, 0);

	capped.abi_max = 6;
	landlock_negotiate(&capped, 5, &st); /* a cap above the kernel changes nothing */
	assert_int_equal(st.abi, 5);
	assert_false(st.partial);
	assert_int_equal(st.scoped, 0);
	landlock_negotiate(&capped, 7, &st);
	assert_int_equal(st.abi, 6);
	assert_int_equal(st.scoped, SCOPES);

	landlock_negotiate(&capped, -ENOSYS, &st);
	assert_int_equal(st.abi, -ENOSYS);
	assert_int_equal(st.handled_fs, 0);
}

static void test_abi_is_positive(void **state)
{
	(void)state;
	assert_true(kernel_abi >= 1);
	assert_int_equal(landlock_abi(), kernel_abi);
}

int main(void)
{
	const char *unpriv = getenv("DSB_GATED_UNPRIVILEGED");

	kernel_abi = landlock_abi();
	if (kernel_abi < 0) {
		printf("SKIP: landlock unavailable: landlock_create_ruleset(VERSION): %s\n",
		       strerrordesc_np(-kernel_abi));
		return 77;
	}
	/* The unprivileged variant must really have dropped root, or it proves nothing. */
	if (unpriv && strcmp(unpriv, "1") == 0 && getuid() == 0) {
		fprintf(stderr, "expected to run unprivileged, but uid is 0\n");
		return 1;
	}
	printf("# landlock ABI %d, uid %d\n", kernel_abi, (int)getuid());

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_negotiate_table),
		cmocka_unit_test(test_negotiate_abi_max_caps),
		cmocka_unit_test(test_abi_is_positive),
		T(test_ws_write_lands),
		T(test_create_outside_denied),
		T(test_dotdot_traversal_out_of_ws_denied),
		T(test_symlink_out_of_ws_denied),
		T(test_hard_link_from_ws_to_outside_denied),
		T(test_preexisting_hard_link_in_ws_is_writable_kernel_behaviour),
		T(test_rename_into_or_out_of_ws_denied),
		T(test_truncate_outside_denied),
		T(test_mkfifo_mknod_bind_outside_denied),
		T(test_proc_self_root_write_outside_denied),
		T(test_dev_shm_write_denied),
		T(test_chmod_outside_succeeds_landlock_ignores_metadata),
		T(test_descendants_are_confined_and_can_exec),
		T(test_ioctl_on_read_only_device_denied),
		T(test_empty_plan_denies_everything),
		T(test_rules_on_files),
		T(test_scope_signal),
		T(test_scope_abstract_unix_socket),
		T(test_restrict_missing_path_fails_closed_unrestricted),
		T(test_restrict_reports_negotiated_status),
		T(test_restrict_abi_max_degrades_explicitly),
	};
#undef T
	return cmocka_run_group_tests_name("landlock", tests, NULL, NULL);
}
