/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the metadata supervisor (src/confine/handler-metadata.c, src/confine/notify.c). A
 * forked child installs the filter that hands its metadata calls over (SECCOMP_METADATA_NOTIFY),
 * sends the listener to this process, and attacks: changes inside the writable root must land,
 * changes outside it, by any path (a symlink out, `..`, a descriptor opened outside), must fail
 * with EPERM and change nothing, and the supervisor's own capabilities must never stand in for the
 * caller's. This process runs the supervisor until the child ends, then checks the files
 * themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/confine/confine.h"
#include "src/confine/seccomp.h"
#include "helpers.h"

#define EXPECT(cond)                                                                           \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "%s:%d: expected %s (errno %s)\n", __FILE__, __LINE__, \
				#cond, strerrorname_np(errno));                                \
			_exit(1);                                                              \
		}                                                                              \
	} while (0)

/* The errno of a system call that failed, 0 when it succeeded. */
#define ERRNO_OF(call) ((call) < 0 ? errno : 0)

/* ws/ is the writable root; out/ is not; ws/out is a symlink to out/b. */
typedef struct fixture {
	char *top;
	char ws[PATH_MAX], out_file[2 * PATH_MAX];
} fixture;

static void make_file(const char *dir, const char *name, mode_t mode)
{
	char p[2 * PATH_MAX];
	(void)snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, mode);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(chmod(p, mode), 0);
}

static mode_t mode_of(const char *dir, const char *name)
{
	char p[2 * PATH_MAX];
	struct stat st;
	(void)snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(lstat(p, &st), 0);
	return st.st_mode & 07777;
}

/* The calls of Linux 6.13 and 6.17 libseccomp 2.5 does not name (the filter's prefix does). */
#define NR_SETXATTRAT	 463
#define NR_REMOVEXATTRAT 466
#define NR_FILE_SETATTR	 469

struct xattr_args {
	uint64_t value;
	uint32_t size, flags;
};

struct file_attr {
	uint64_t xflags;
	uint32_t extsize, nextents, projid, cowextsize;
};

/* A thread that is not its process's leader: its calls name it by its own thread id. */
static void *thread_chmods(void *arg)
{
	const fixture *f = arg;
	EXPECT(chmod("d", 0606) == 0);
	EXPECT(ERRNO_OF(chmod(f->out_file, 0600)) == EPERM);
	return NULL;
}

/* What the confined child does: every answer is checked here, the files by the parent. */
static void attack(const void *arg)
{
	const fixture *f = arg;
	EXPECT(chdir(f->ws) == 0);

	/* Inside the root: each kind of call lands. */
	EXPECT(chmod("a", 0600) == 0);
	EXPECT(fchmodat(AT_FDCWD, "../ws/b", 0640, 0) == 0); /* out by .., back in */
	int in = open("c", O_RDONLY | O_CLOEXEC);
	EXPECT(in >= 0);
	EXPECT(fchmod(in, 0604) == 0);
	struct timespec ts[2] = {{.tv_sec = 1000}, {.tv_sec = 2000}};
	EXPECT(utimensat(AT_FDCWD, "a", ts, 0) == 0);
	EXPECT(chown("a", getuid(), getgid()) == 0);
	EXPECT(lchown("out", getuid(), getgid()) == 0); /* the link itself lies in the root */
	int x = ERRNO_OF(setxattr("a", "user.dsb", "v", 1, 0));
	EXPECT(x == 0 || x == ENOTSUP);
	EXPECT(ERRNO_OF(chmod("missing", 0600)) == ENOENT);
	pthread_t thread;
	EXPECT(pthread_create(&thread, NULL, thread_chmods, (void *)f) == 0);
	EXPECT(pthread_join(thread, NULL) == 0);
	struct xattr_args xa = {.value = (uintptr_t) "w", .size = 1};
	x = ERRNO_OF(syscall(NR_SETXATTRAT, AT_FDCWD, "a", 0, "user.dsb2", &xa, sizeof(xa)));
	EXPECT(x == 0 || x == ENOTSUP || x == ENOSYS);
	x = ERRNO_OF(syscall(NR_REMOVEXATTRAT, AT_FDCWD, "a", 0, "user.dsb2"));
	EXPECT(x == 0 || x == ENOTSUP || x == ENOSYS);
	struct file_attr fa = {0};
	x = ERRNO_OF(syscall(NR_FILE_SETATTR, AT_FDCWD, "a", &fa, sizeof(fa), 0));
	EXPECT(x != EPERM);
	/* An extensible argument with bytes we do not know: E2BIG, as the kernel answers. */
	unsigned char big[sizeof(fa) + 8] = {0};
	big[sizeof(fa) + 1] = 1;
	x = ERRNO_OF(syscall(NR_FILE_SETATTR, AT_FDCWD, "a", big, sizeof(big), 0));
	EXPECT(x == E2BIG || x == ENOSYS);

	/* Outside, by every road: refused, whatever the caller could do unconfined. */
	EXPECT(ERRNO_OF(chmod(f->out_file, 0600)) == EPERM);
	EXPECT(ERRNO_OF(chmod("out", 0600)) == EPERM); /* the symlink leads out */
	EXPECT(ERRNO_OF(chmod("../out/b", 0600)) == EPERM);
	EXPECT(ERRNO_OF(syscall(452 /* fchmodat2 */, AT_FDCWD, f->out_file, 0600, 0)) == EPERM);
	int out = open(f->out_file, O_RDONLY | O_CLOEXEC);
	EXPECT(out >= 0);
	EXPECT(ERRNO_OF(fchmod(out, 0600)) == EPERM);
	EXPECT(ERRNO_OF(syscall(SYS_utimensat, out, NULL, ts, 0)) == EPERM);
	EXPECT(ERRNO_OF(chown(f->out_file, getuid(), getgid())) == EPERM);
	EXPECT(ERRNO_OF(setxattr(f->out_file, "user.dsb", "v", 1, 0)) == EPERM);
	EXPECT(ERRNO_OF(removexattr(f->out_file, "user.dsb")) == EPERM);
	int flags = 0;
	EXPECT(ERRNO_OF(ioctl(out, FS_IOC_SETFLAGS, &flags)) == EPERM);
	EXPECT(ERRNO_OF(chmod("/", 0700)) == EPERM);
	EXPECT(ERRNO_OF(syscall(NR_SETXATTRAT, AT_FDCWD, f->out_file, 0, "user.dsb", &xa,
				sizeof(xa))) == EPERM);
	EXPECT(ERRNO_OF(syscall(NR_REMOVEXATTRAT, AT_FDCWD, f->out_file, 0, "user.dsb")) == EPERM);
	EXPECT(ERRNO_OF(syscall(NR_FILE_SETATTR, AT_FDCWD, f->out_file, &fa, sizeof(fa), 0)) ==
	       EPERM);

	/* The supervisor's capabilities are not the caller's: root may not give a file away. */
	if (getuid() == 0)
		EXPECT(ERRNO_OF(chown("a", 12345, (gid_t)-1)) == EPERM);
}

/*
 * Runs the supervisor on @listener until @pid ends; returns its exit status, and in *@refused
 * how many changes it refused outside the roots (what makes a run a denial).
 */
static int supervise(supervisor *s, int sock, pid_t pid, int *refused)
{
	*refused = 0;
	int listener = fd_receive(sock, 0);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	for (;;) {
		struct pollfd p[2] = {{.fd = listener, .events = POLLIN},
				      {.fd = pidfd, .events = POLLIN}};
		assert_true(poll(p, listener >= 0 ? 2 : 1, 10000) > 0 || listener < 0);
		if (listener >= 0 && (p[0].revents & POLLIN)) {
			int r = supervisor_handle(s, listener);
			assert_true(r >= 0);
			*refused += r;
		} else if (p[listener >= 0 ? 1 : 0].revents & POLLIN)
			break;
		if (listener < 0)
			break;
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (listener >= 0)
		close(listener);
	close(pidfd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/*
 * Forks a child that hands its metadata calls to a supervisor of @roots (of which @fixed keep
 * their own directory) and runs @child(@arg), which checks each answer and exits 0; this process
 * supervises it. Returns how many changes were refused outside the roots.
 */
static int run_supervised(char *const *roots, char *const *fixed, void (*child)(const void *),
			  const void *arg)
{
	supervisor s;
	supervisor_init(&s, roots, fixed);
	void *state = NULL;
	assert_int_equal(metadata_handler_new(&state), 0);
	assert_int_equal(supervisor_add(&s, &handler_metadata, state), 0);
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	(void)fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int listener =
			seccomp_install_listener(seccomp_program_for(SECCOMP_METADATA_NOTIFY));
		EXPECT(listener >= 0);
		EXPECT(fd_send(sp[1], listener) == 0);
		close(listener);
		child(arg);
		_exit(0);
	}
	close(sp[1]);
	int refused;
	assert_int_equal(supervise(&s, sp[0], pid, &refused), 0);
	supervisor_done(&s);
	close(sp[0]);
	return refused;
}

static void test_inside_lands_outside_refused(void **state)
{
	(void)state;
	fixture f = {.top = dsb_test_mkdtemp()};
	assert_non_null(f.top);
	char *top = realpath(f.top, NULL);
	assert_non_null(top);
	char outdir[PATH_MAX + 8], link[2 * PATH_MAX];
	(void)snprintf(f.ws, sizeof(f.ws), "%s/ws", top);
	(void)snprintf(outdir, sizeof(outdir), "%s/out", top);
	(void)snprintf(f.out_file, sizeof(f.out_file), "%s/b", outdir);
	assert_int_equal(mkdir(f.ws, 0755), 0);
	assert_int_equal(mkdir(outdir, 0755), 0);
	make_file(f.ws, "a", 0644);
	make_file(f.ws, "b", 0644);
	make_file(f.ws, "c", 0644);
	make_file(f.ws, "d", 0644);
	make_file(outdir, "b", 0644);
	(void)snprintf(link, sizeof(link), "%s/out", f.ws);
	assert_int_equal(symlink(f.out_file, link), 0);

	char *roots[] = {f.ws, NULL};
	/* The fifteen attempts outside, each counted; the failures inside (ENOENT, root's chown
	 * to another uid) are the kernel's answers, not refusals. */
	assert_int_equal(run_supervised(roots, NULL, attack, &f), 15);

	assert_int_equal(mode_of(f.ws, "a"), 0600);
	assert_int_equal(mode_of(f.ws, "b"), 0640);
	assert_int_equal(mode_of(f.ws, "c"), 0604);
	assert_int_equal(mode_of(f.ws, "d"), 0606);
	assert_int_equal(mode_of(outdir, "b"), 0644);
	struct stat st;
	char a[PATH_MAX + 8];
	(void)snprintf(a, sizeof(a), "%s/a", f.ws);
	assert_int_equal(stat(a, &st), 0);
	assert_int_equal(st.st_mtim.tv_sec, 2000);
	assert_int_equal(st.st_uid, getuid());
	free(top);
	dsb_test_rm_rf(f.top);
	free(f.top);
}

static void chmod_refused(const void *dir)
{
	EXPECT(chdir(dir) == 0);
	EXPECT(ERRNO_OF(chmod("a", 0600)) == EPERM);
}

/* Read-only mode has no writable root: the same call inside is refused too. */
static void test_no_roots_refuses_everything(void **state)
{
	(void)state;
	char *top = dsb_test_mkdtemp();
	assert_non_null(top);
	make_file(top, "a", 0644);
	assert_int_equal(run_supervised(NULL, NULL, chmod_refused, top), 1);
	assert_int_equal(mode_of(top, "a"), 0644);
	dsb_test_rm_rf(top);
	free(top);
}

static void attack_fixed_root(const void *arg)
{
	const char *shared = arg;
	EXPECT(chdir(shared) == 0);
	EXPECT(chmod("x", 0600) == 0);
	EXPECT(symlink(".", "self") == 0);
	EXPECT(ERRNO_OF(chmod(shared, 0700)) == EPERM);
	EXPECT(ERRNO_OF(chmod(".", 0700)) == EPERM);
	EXPECT(ERRNO_OF(chmod("self", 0700)) == EPERM);
	EXPECT(ERRNO_OF(chmod("x/..", 0700)) == ENOTDIR);
	int dir = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	EXPECT(dir >= 0);
	EXPECT(ERRNO_OF(fchmod(dir, 0700)) == EPERM);
	EXPECT(ERRNO_OF(syscall(SYS_utimensat, dir, NULL, NULL, 0)) == EPERM);
}

/*
 * A root that keeps its own directory (the host's /tmp under Landlock): what lies beneath it
 * changes, the directory itself does not, by any road to it.
 */
static void test_fixed_root_keeps_itself(void **state)
{
	(void)state;
	char *top = dsb_test_mkdtemp();
	assert_non_null(top);
	char *real = realpath(top, NULL);
	assert_non_null(real);
	char shared[PATH_MAX + 8];
	(void)snprintf(shared, sizeof(shared), "%s/shared", real);
	assert_int_equal(mkdir(shared, 01777), 0);
	assert_int_equal(chmod(shared, 01777), 0);
	make_file(shared, "x", 0644);
	char *roots[] = {shared, NULL};
	assert_int_equal(run_supervised(roots, roots, attack_fixed_root, shared), 5);
	assert_int_equal(mode_of(real, "shared"), 01777);
	assert_int_equal(mode_of(shared, "x"), 0600);
	free(real);
	dsb_test_rm_rf(top);
	free(top);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inside_lands_outside_refused),
		cmocka_unit_test(test_no_roots_refuses_everything),
		cmocka_unit_test(test_fixed_root_keeps_itself),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
