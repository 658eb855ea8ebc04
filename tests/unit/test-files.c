/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the evidence of file refusals (src/confine/handler-files.c,
 * docs/design/evidence.md). A forked child confines itself as the Landlock backend does
 * (confine_self(): a mount namespace with a protected path bound read-only, the Landlock domain,
 * no capabilities, the filter) and makes each write-class file call of a table, keeping the
 * errno of each. It runs twice, with the evidence off (the filter without FILES_NOTIFY) and on
 * (with it, this process supervising): the test is differential, every call must get the same
 * errno both times. With the evidence on, each refusal the sandbox caused must be recorded (its
 * operation, errno, resolved path, the path as named, why) and nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/confine/confine.h"
#include "src/confine/seccomp.h"
#include "helpers.h"

/* The errno of a system call that failed, 0 when it succeeded. */
#define ERRNO_OF(call) ((call) < 0 ? errno : 0)

/* top/ws is the writable root (workspace-write), top/ws/prot a protected path in it, top/out
 * lies outside; ws/lnk is a symlink to out/f. */
typedef struct fixture {
	char top[PATH_MAX];
	char ws[PATH_MAX + 8], out[PATH_MAX + 8], prot[2 * PATH_MAX];
	bool readonly_mode; /* no writable root: read-only mode */
} fixture;

static fixture fx;

/* --- the calls ------------------------------------------------------------------------------- */

static int open_errno(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

static char *out_path(const char *name)
{
	static char buf[4][2 * PATH_MAX];
	static int next;
	char *p = buf[next++ % 4];
	(void)snprintf(p, sizeof(buf[0]), "%s/%s", fx.out, name);
	return p;
}

static int c_write_out(void)
{
	return open_errno(out_path("f"), O_WRONLY);
}
static int c_rdwr_out(void)
{
	return open_errno(out_path("f"), O_RDWR | O_APPEND);
}
static int c_create_out(void)
{
	return open_errno(out_path("new"), O_CREAT | O_WRONLY);
}
static int c_trunc_out(void)
{
	return open_errno(out_path("f"), O_RDONLY | O_TRUNC);
}
static int c_creat_out(void)
{
	int fd = creat(out_path("new2"), 0644);
	return fd < 0 ? errno : (close(fd), 0);
}
static int c_openat2_out(void)
{
	struct open_how how = {.flags = O_WRONLY | O_CLOEXEC};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, out_path("f"), &how, sizeof(how));
	return fd < 0 ? errno : (close(fd), 0);
}
static int c_openat2_read(void)
{
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, out_path("f"), &how, sizeof(how));
	return fd < 0 ? errno : (close(fd), 0);
}
static int c_excl_existing(void)
{
	return open_errno(out_path("f"), O_CREAT | O_EXCL | O_WRONLY);
}
static int c_mkdir_out(void)
{
	return ERRNO_OF(mkdir(out_path("d"), 0755));
}
static int c_mkdir_existing(void)
{
	return ERRNO_OF(mkdir(fx.out, 0755));
}
static int c_mkdir_root(void)
{
	return ERRNO_OF(mkdir("/", 0755));
}
static int c_mkdir_missing_parent(void)
{
	return ERRNO_OF(mkdir(out_path("missing/x"), 0755));
}
static int c_mkdir_dotdot(void)
{
	return ERRNO_OF(mkdir("..", 0755));
}
static int c_mknod_out(void)
{
	return ERRNO_OF(mknod(out_path("fifo"), S_IFIFO | 0644, 0));
}
static int c_unlink_out(void)
{
	return ERRNO_OF(unlink(out_path("f")));
}
static int c_unlink_missing(void)
{
	return ERRNO_OF(unlink(out_path("missing")));
}
static int c_rmdir_out(void)
{
	return ERRNO_OF(rmdir(out_path("sub")));
}
static int c_rename_from_out(void)
{
	return ERRNO_OF(rename(out_path("f"), "g"));
}
static int c_rename_to_out(void)
{
	return ERRNO_OF(rename("a", out_path("a")));
}
static int c_rename_both_out(void)
{
	return ERRNO_OF(rename(out_path("f"), out_path("h")));
}
static int c_link_out(void)
{
	return ERRNO_OF(link("a", out_path("l")));
}
static int c_symlink_out(void)
{
	return ERRNO_OF(symlink("x", out_path("s")));
}
static int c_truncate_out(void)
{
	return ERRNO_OF(truncate(out_path("f"), 0));
}
static int c_symlink_leads_out(void)
{
	return open_errno("lnk", O_WRONLY);
}
static int c_dotdot_out(void)
{
	return open_errno("../out/f", O_WRONLY);
}
static int c_dirfd_out(void)
{
	int dir = open(fx.out, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = openat(dir, "f", O_WRONLY | O_CLOEXEC);
	int e = fd < 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	close(dir);
	return e;
}
static int c_dir_for_writing(void)
{
	return open_errno(fx.out, O_WRONLY);
}
static int c_dev_null(void)
{
	return open_errno("/dev/null", O_WRONLY);
}
static int c_proc_fd_pipe(void)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	char path[64];
	(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", p[1]);
	int e = open_errno(path, O_WRONLY);
	close(p[0]);
	close(p[1]);
	return e;
}
static void *thread_write(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)c_write_out();
}
static int c_second_thread(void)
{
	pthread_t t;
	void *ret = NULL;
	if (pthread_create(&t, NULL, thread_write, NULL) != 0)
		return -1;
	(void)pthread_join(t, &ret);
	return (int)(intptr_t)ret;
}

/* Inside the root. */
static int c_in_write(void)
{
	return open_errno("a", O_WRONLY);
}
static int c_in_create(void)
{
	return open_errno("n", O_CREAT | O_WRONLY | O_TRUNC);
}
static int c_in_mkdir(void)
{
	return ERRNO_OF(mkdir("d", 0755));
}
static int c_in_symlink(void)
{
	return ERRNO_OF(symlink("a", "sl"));
}
static int c_in_link(void)
{
	return ERRNO_OF(link("a", "hl"));
}
static int c_in_rename(void)
{
	return ERRNO_OF(rename("n", "n2"));
}
static int c_in_truncate(void)
{
	return ERRNO_OF(truncate("a", 0));
}
static int c_in_unlink(void)
{
	return ERRNO_OF(unlink("n2"));
}
static int c_in_rmdir(void)
{
	return ERRNO_OF(rmdir("d"));
}
static int c_in_mkdir_p(void)
{
	return ERRNO_OF(mkdir(".", 0755));
}

/* The protected path, a read-only bind inside the root. */
static int c_prot_write(void)
{
	return open_errno("prot/f", O_WRONLY);
}
static int c_prot_trunc(void)
{
	return open_errno("prot/f", O_WRONLY | O_TRUNC);
}
static int c_prot_create(void)
{
	return open_errno("prot/new", O_CREAT | O_WRONLY);
}
static int c_prot_mkdir(void)
{
	return ERRNO_OF(mkdir("prot/d", 0755));
}
static int c_prot_mkdir_existing(void)
{
	return ERRNO_OF(mkdir("prot", 0755));
}
static int c_prot_unlink(void)
{
	return ERRNO_OF(unlink("prot/f"));
}
static int c_prot_unlink_missing(void)
{
	return ERRNO_OF(unlink("prot/missing"));
}
static int c_prot_fifo(void)
{
	return open_errno("prot/fifo", O_WRONLY | O_NONBLOCK); /* no reader: ENXIO */
}
static int c_prot_rename(void)
{
	return ERRNO_OF(rename("prot/f", "prot/g"));
}

typedef struct call_case {
	const char *name;
	int (*fn)(void);
} call_case;

#define CASE(fn)        \
	{               \
#fn, fn \
	}
static const call_case cases[] = {
	CASE(c_write_out),
	CASE(c_rdwr_out),
	CASE(c_create_out),
	CASE(c_trunc_out),
	CASE(c_creat_out),
	CASE(c_openat2_out),
	CASE(c_openat2_read),
	CASE(c_excl_existing),
	CASE(c_mkdir_out),
	CASE(c_mkdir_existing),
	CASE(c_mkdir_root),
	CASE(c_mkdir_missing_parent),
	CASE(c_mkdir_dotdot),
	CASE(c_mknod_out),
	CASE(c_unlink_out),
	CASE(c_unlink_missing),
	CASE(c_rmdir_out),
	CASE(c_rename_from_out),
	CASE(c_rename_to_out),
	CASE(c_rename_both_out),
	CASE(c_link_out),
	CASE(c_symlink_out),
	CASE(c_truncate_out),
	CASE(c_symlink_leads_out),
	CASE(c_dotdot_out),
	CASE(c_dirfd_out),
	CASE(c_dir_for_writing),
	CASE(c_dev_null),
	CASE(c_proc_fd_pipe),
	CASE(c_second_thread),
	CASE(c_in_write),
	CASE(c_in_create),
	CASE(c_in_mkdir),
	CASE(c_in_symlink),
	CASE(c_in_link),
	CASE(c_in_rename),
	CASE(c_in_truncate),
	CASE(c_in_unlink),
	CASE(c_in_rmdir),
	CASE(c_in_mkdir_p),
	CASE(c_prot_write),
	CASE(c_prot_trunc),
	CASE(c_prot_create),
	CASE(c_prot_mkdir),
	CASE(c_prot_mkdir_existing),
	CASE(c_prot_unlink),
	CASE(c_prot_unlink_missing),
	CASE(c_prot_fifo),
	CASE(c_prot_rename),
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* --- the fixture and the runs ----------------------------------------------------------------- */

static void put_file(const char *dir, const char *name)
{
	char p[3 * PATH_MAX];
	(void)snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "data\n", 5), 5);
	close(fd);
}

/* A fresh tree: every run starts from the same files. */
static void make_tree(void)
{
	char p[3 * PATH_MAX];
	dsb_test_rm_rf(fx.top);
	assert_int_equal(mkdir(fx.top, 0755), 0);
	assert_int_equal(mkdir(fx.ws, 0755), 0);
	assert_int_equal(mkdir(fx.out, 0755), 0);
	assert_int_equal(mkdir(fx.prot, 0755), 0);
	put_file(fx.ws, "a");
	put_file(fx.out, "f");
	put_file(fx.prot, "f");
	(void)snprintf(p, sizeof(p), "%s/sub", fx.out);
	assert_int_equal(mkdir(p, 0755), 0);
	(void)snprintf(p, sizeof(p), "%s/fifo", fx.prot);
	assert_int_equal(mkfifo(p, 0644), 0);
	char target[2 * PATH_MAX];
	(void)snprintf(target, sizeof(target), "%s/f", fx.out);
	(void)snprintf(p, sizeof(p), "%s/lnk", fx.ws);
	assert_int_equal(symlink(target, p), 0);
}

/* The plan the Landlock backend makes for fx, with the evidence on or off. */
static void make_plan(confine_plan *plan, char **roots, protect_mount *m, bool evidence)
{
	static char *ro[] = {(char *)"/", NULL};
	static char *rw[3];
	rw[0] = (char *)"/dev/null";
	rw[1] = fx.readonly_mode ? NULL : fx.ws;
	rw[2] = NULL;
	*m = (protect_mount){.op = PROTECT_READ_ONLY, .path = fx.prot};
	*plan = (confine_plan){
		.steps = STEPS_SELF | STEP(STEP_MOUNTS),
		.mount_ns = true,
		.mounts = {.v = m, .n = 1},
		.landlock = {.ro = ro, .rw = rw},
		.filter_flags = LANDLOCK_FILTER | SECCOMP_METADATA_NOTIFY |
				(evidence ? SECCOMP_FILES_NOTIFY : 0),
		.filter_fd = -1,
		.meta_roots = roots,
	};
}

typedef struct run_result {
	int errnos[N_CASES];
	int extra; /* the work of the run's own test (a count, a flag), 0 when it passed */
	unsigned achieved;
} run_result;

/*
 * Runs @work in a child confined by @plan, supervising it when the plan hands calls over, and
 * returns the supervisor's refusals in *@ret_refused (zeroed, record_free()).
 */
static void run_confined(const confine_plan *plan, void (*work)(run_result *), run_result *out,
			 confine_refusals *ret_refused)
{
	run_result *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(shared != MAP_FAILED);
	memset(shared, 0xff, sizeof(*shared));
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	(void)fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sp[0]);
		unsigned achieved = 0;
		bool partial = false;
		char msg[512];
		int r = confine_self(plan, sp[1], NULL, NULL, &achieved, &partial, msg,
				     sizeof(msg));
		if (r < 0) {
			fprintf(stderr, "confine_self: %s\n", msg);
			_exit(2);
		}
		shared->achieved = achieved;
		close(sp[1]);
		if (chdir(fx.ws) < 0)
			_exit(3);
		work(shared);
		_exit(0);
	}
	close(sp[1]);
	spawn_handoff in = SPAWN_HANDOFF_INIT;
	in.listener = fd_receive(sp[0], 0);
	supervision sv = SUPERVISION_INIT;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	in.achieved = in.listener >= 0 && plan_supervises(plan, SECCOMP_FILES_NOTIFY)
			      ? HARDEN_FILES_SUPERVISED
			      : 0;
	supervision_start(&sv, plan, &in);
	for (;;) {
		struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN},
				      {.fd = sv.listener, .events = POLLIN}};
		int n = poll(p, sv.listener >= 0 ? 2 : 1, 30000);
		assert_true(n > 0);
		if (sv.listener >= 0 && p[1].revents)
			supervision_ready(&sv, p[1].revents);
		if (p[0].revents & POLLIN)
			break;
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	*ret_refused = (confine_refusals){0};
	assert_int_equal(supervision_refusals(&sv, ret_refused), 0);
	supervision_done(&sv);
	close(pidfd);
	close(sp[0]);
	*out = *shared;
	(void)munmap(shared, sizeof(*shared));
}

static void run_cases(run_result *r)
{
	for (size_t i = 0; i < N_CASES; i++)
		r->errnos[i] = cases[i].fn();
	r->extra = 0;
}

static void setup_fixture(bool readonly_mode)
{
	char *t = dsb_test_mkdtemp();
	assert_non_null(t);
	char *real = realpath(t, NULL);
	assert_non_null(real);
	(void)snprintf(fx.top, sizeof(fx.top), "%s", real);
	(void)snprintf(fx.ws, sizeof(fx.ws), "%s/ws", real);
	(void)snprintf(fx.out, sizeof(fx.out), "%s/out", real);
	(void)snprintf(fx.prot, sizeof(fx.prot), "%s/ws/prot", real);
	fx.readonly_mode = readonly_mode;
	free(real);
	free(t);
}

/* The record of @path in @named, or NULL. */
static const char *record_of(char **named, const char *path)
{
	for (size_t i = 0; named && named[i]; i++) {
		const char *p = strchr(named[i], '\t');
		p = p ? strchr(p + 1, '\t') : NULL;
		if (p && strncmp(p + 1, path, strlen(path)) == 0 && p[1 + strlen(path)] == '\t')
			return named[i];
	}
	return NULL;
}

static void expect_record(char **named, const char *want)
{
	for (size_t i = 0; named && named[i]; i++)
		if (strcmp(named[i], want) == 0)
			return;
	fprintf(stderr, "no record \"%s\" among:\n", want);
	for (size_t i = 0; named && named[i]; i++)
		fprintf(stderr, "  %s\n", named[i]);
	fail();
}

static bool landlock_here(void)
{
	if (landlock_abi() < 3) {
		fprintf(stderr, "# no Landlock ABI 3 here: skipped\n");
		return false;
	}
	return true;
}

/*
 * Differential: each call's errno with the evidence on equals its errno with it off, and each
 * refusal the sandbox made is recorded. Returns the refusals of the run with the evidence on.
 */
static void differential(bool readonly_mode, confine_refusals *ret_on, run_result *ret_res)
{
	setup_fixture(readonly_mode);
	char *roots[] = {fx.ws, NULL};
	protect_mount m;
	confine_plan plan;
	run_result off, on;
	confine_refusals r_off, r_on;

	make_tree();
	make_plan(&plan, readonly_mode ? NULL : roots, &m, false);
	run_confined(&plan, run_cases, &off, &r_off);
	make_tree();
	make_plan(&plan, readonly_mode ? NULL : roots, &m, true);
	run_confined(&plan, run_cases, &on, &r_on);

	bool same = true;
	for (size_t i = 0; i < N_CASES; i++) {
		if (off.errnos[i] != on.errnos[i]) {
			fprintf(stderr, "%s: %s with the evidence off, %s on\n", cases[i].name,
				strerrorname_np(off.errnos[i]), strerrorname_np(on.errnos[i]));
			same = false;
		}
	}
	assert_true(same);
	assert_int_equal(r_off.evidence, 0);
	assert_int_equal(r_off.files, 0);
	assert_int_equal(r_on.evidence, 1);
	assert_true(on.achieved & HARDEN_FILES_SUPERVISED);
	assert_false(off.achieved & HARDEN_FILES_SUPERVISED);
	record_free(&confine_refusals_record, &r_off);
	*ret_on = r_on;
	*ret_res = on;
}

static int index_of(const char *name)
{
	for (size_t i = 0; i < N_CASES; i++)
		if (strcmp(cases[i].name, name) == 0)
			return (int)i;
	return -1;
}

#define EXPECT_ERRNO(res, fn, e) assert_int_equal((res).errnos[index_of(#fn)], (e))

static void test_workspace_write(void **state)
{
	(void)state;
	if (!landlock_here())
		skip();
	confine_refusals r;
	run_result res;
	differential(false, &r, &res);

	/* What the kernel answers, the evidence on or off. */
	EXPECT_ERRNO(res, c_write_out, EACCES);
	EXPECT_ERRNO(res, c_create_out, EACCES);
	EXPECT_ERRNO(res, c_trunc_out, EACCES);
	EXPECT_ERRNO(res, c_openat2_read, 0);
	EXPECT_ERRNO(res, c_excl_existing, EEXIST);
	EXPECT_ERRNO(res, c_mkdir_existing, EEXIST);
	EXPECT_ERRNO(res, c_mkdir_root, EEXIST);
	EXPECT_ERRNO(res, c_mkdir_missing_parent, ENOENT);
	EXPECT_ERRNO(res, c_unlink_missing, ENOENT);
	EXPECT_ERRNO(res, c_dir_for_writing, EISDIR);
	EXPECT_ERRNO(res, c_dev_null, 0);
	EXPECT_ERRNO(res, c_proc_fd_pipe, 0);
	EXPECT_ERRNO(res, c_in_write, 0);
	EXPECT_ERRNO(res, c_in_create, 0);
	EXPECT_ERRNO(res, c_in_mkdir, 0);
	EXPECT_ERRNO(res, c_in_rename, 0);
	EXPECT_ERRNO(res, c_in_link, 0);
	EXPECT_ERRNO(res, c_in_unlink, 0);
	EXPECT_ERRNO(res, c_prot_write, EROFS);
	EXPECT_ERRNO(res, c_prot_create, EROFS);
	EXPECT_ERRNO(res, c_prot_mkdir_existing, EEXIST);
	EXPECT_ERRNO(res, c_prot_fifo, ENXIO);

	/* What was recorded: each refused call once, the first 16 distinct paths. */
	unsigned refused = 0;
	for (size_t i = 0; i < N_CASES; i++)
		refused += res.errnos[i] == EACCES || res.errnos[i] == EROFS;
	assert_int_equal(r.files, refused);
	char want[4 * PATH_MAX];
	(void)snprintf(want, sizeof(want), "write\tEACCES\t%s/f\t%s/f\toutside", fx.out, fx.out);
	expect_record(r.files_named, want);
	(void)snprintf(want, sizeof(want), "create\tEACCES\t%s/new\t%s/new\toutside", fx.out,
		       fx.out);
	expect_record(r.files_named, want);
	(void)snprintf(want, sizeof(want), "mkdir\tEACCES\t%s/d\t%s/d\toutside", fx.out, fx.out);
	expect_record(r.files_named, want);
	size_t n = 0;
	while (r.files_named && r.files_named[n])
		n++;
	assert_true(n >= 12 && n <= FILES_NAMED_MAX);
	record_free(&confine_refusals_record, &r);
	dsb_test_rm_rf(fx.top);
}

static void test_read_only_mode(void **state)
{
	(void)state;
	if (!landlock_here())
		skip();
	confine_refusals r;
	run_result res;
	differential(true, &r, &res);
	EXPECT_ERRNO(res, c_in_write, EACCES);
	EXPECT_ERRNO(res, c_in_mkdir_p, EEXIST);
	EXPECT_ERRNO(res, c_dev_null, 0);
	assert_true(r.files > 0);
	record_free(&confine_refusals_record, &r);
	dsb_test_rm_rf(fx.top);
}

/* One operation of each kind alone, so that its record is among the first sixteen. */
static void one_each(run_result *r)
{
	r->errnos[0] = c_mknod_out();
	r->errnos[1] = c_unlink_out();
	r->errnos[2] = c_rmdir_out();
	r->errnos[3] = c_rename_to_out();
	r->errnos[4] = c_link_out();
	r->errnos[5] = c_symlink_out();
	r->errnos[6] = c_truncate_out();
	r->errnos[7] = c_symlink_leads_out();
	r->errnos[8] = c_prot_trunc();
	r->errnos[9] = c_prot_unlink();
	r->errnos[10] = c_rename_both_out();
	r->errnos[11] = c_dotdot_out();
	r->extra = 0;
}

static void test_each_operation_recorded(void **state)
{
	(void)state;
	if (!landlock_here())
		skip();
	setup_fixture(false);
	char *roots[] = {fx.ws, NULL};
	protect_mount m;
	confine_plan plan;
	run_result res;
	confine_refusals r;
	make_tree();
	make_plan(&plan, roots, &m, true);
	run_confined(&plan, one_each, &res, &r);
	static const int want_errno[] = {EACCES, EACCES, EACCES, EACCES, EACCES, EACCES,
					 EACCES, EACCES, EROFS,	 EROFS,	 EACCES, EACCES};
	for (size_t i = 0; i < sizeof(want_errno) / sizeof(want_errno[0]); i++)
		assert_int_equal(res.errnos[i], want_errno[i]);
	assert_int_equal(r.files, 12);
	char want[4 * PATH_MAX];
#define WANT(fmt, ...)                                                \
	do {                                                          \
		(void)snprintf(want, sizeof(want), fmt, __VA_ARGS__); \
		expect_record(r.files_named, want);                   \
	} while (0)
	WANT("create\tEACCES\t%s/fifo\t%s/fifo\toutside", fx.out, fx.out);
	WANT("remove\tEACCES\t%s/f\t%s/f\toutside", fx.out, fx.out);
	WANT("rmdir\tEACCES\t%s/sub\t%s/sub\toutside", fx.out, fx.out);
	WANT("rename\tEACCES\t%s/a\t%s/a\toutside", fx.out, fx.out);
	WANT("link\tEACCES\t%s/l\t%s/l\toutside", fx.out, fx.out);
	WANT("symlink\tEACCES\t%s/s\t%s/s\toutside", fx.out, fx.out);
	WANT("write\tEROFS\t%s/f\tprot/f\tprotected", fx.prot); /* O_TRUNC: a write */
	/* Distinct by path: prot/f's unlink, the symlink's and ..'s writes to out/f are counted,
	 * not named again; rename's two outside names are both named. */
	assert_non_null(record_of(r.files_named, out_path("h")));
	size_t n = 0;
	while (r.files_named && r.files_named[n])
		n++;
	assert_int_equal(n, 8);
	record_free(&confine_refusals_record, &r);
	dsb_test_rm_rf(fx.top);
}

static void many_writes(run_result *r)
{
	int e = 0;
	for (int i = 0; i < 1000; i++)
		e |= c_write_out() != EACCES;
	for (int i = 0; i < 40; i++) {
		char name[32];
		(void)snprintf(name, sizeof(name), "new%d", i);
		e |= open_errno(out_path(name), O_CREAT | O_WRONLY) != EACCES;
	}
	r->extra = e;
}

static void test_thousand_refusals(void **state)
{
	(void)state;
	if (!landlock_here())
		skip();
	setup_fixture(false);
	char *roots[] = {fx.ws, NULL};
	protect_mount m;
	confine_plan plan;
	run_result res;
	confine_refusals r;
	make_tree();
	make_plan(&plan, roots, &m, true);
	run_confined(&plan, many_writes, &res, &r);
	assert_int_equal(res.extra, 0);
	/* Every call counted; the first sixteen distinct paths named, out/f once. */
	assert_int_equal(r.files, 1040);
	size_t n = 0;
	while (r.files_named && r.files_named[n])
		n++;
	assert_int_equal(n, FILES_NAMED_MAX);
	assert_non_null(record_of(r.files_named, out_path("f")));
	assert_non_null(record_of(r.files_named, out_path("new14")));
	assert_null(record_of(r.files_named, out_path("new15")));
	record_free(&confine_refusals_record, &r);
	dsb_test_rm_rf(fx.top);
}

/* A thread swaps ws/flip between a directory (inside) and a symlink to out/ (outside). */
static atomic_bool racing;

static void *flipper(void *arg)
{
	(void)arg;
	char tmp[2 * PATH_MAX];
	(void)snprintf(tmp, sizeof(tmp), "%s/flip.tmp", fx.ws);
	while (atomic_load(&racing)) {
		(void)unlink(tmp);
		(void)symlink(fx.out, tmp);
		(void)renameat2(AT_FDCWD, tmp, AT_FDCWD, "flip", RENAME_EXCHANGE);
	}
	return NULL;
}

static void race(run_result *r)
{
	if (mkdir("flip", 0755) < 0) {
		r->extra = 1;
		return;
	}
	atomic_store(&racing, true);
	pthread_t t;
	if (pthread_create(&t, NULL, flipper, NULL) != 0) {
		r->extra = 1;
		return;
	}
	for (int i = 0; i < 2000; i++) {
		int fd = open("flip/x", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd >= 0)
			close(fd);
		(void)mkdir("flip/y", 0755);
	}
	atomic_store(&racing, false);
	(void)pthread_join(t, NULL);
	r->extra = 0;
}

static void test_race(void **state)
{
	(void)state;
	if (!landlock_here())
		skip();
	setup_fixture(false);
	char *roots[] = {fx.ws, NULL};
	protect_mount m;
	confine_plan plan;
	run_result res;
	confine_refusals r;
	make_tree();
	make_plan(&plan, roots, &m, true);
	run_confined(&plan, race, &res, &r);
	assert_int_equal(res.extra, 0);
	/* Nothing outside changed. */
	struct stat st;
	assert_int_equal(lstat(out_path("x"), &st), -1);
	assert_int_equal(lstat(out_path("y"), &st), -1);
	record_free(&confine_refusals_record, &r);
	dsb_test_rm_rf(fx.top);
}

/* Without a supervisor to send to, the calls run unsupervised, never refused by it. */
static void test_fallback_no_listener(void **state)
{
	(void)state;
	if (!landlock_here())
		skip();
	setup_fixture(false);
	char *roots[] = {fx.ws, NULL};
	protect_mount m;
	confine_plan plan;
	make_tree();
	make_plan(&plan, roots, &m, true);
	run_result *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(shared != MAP_FAILED);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned achieved = 0;
		bool partial = false;
		char msg[512];
		if (confine_self(&plan, -1, NULL, NULL, &achieved, &partial, msg, sizeof(msg)) < 0)
			_exit(2);
		shared->achieved = achieved;
		if (chdir(fx.ws) < 0)
			_exit(3);
		run_cases(shared);
		_exit(0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_false(shared->achieved & HARDEN_FILES_SUPERVISED);
	assert_true(shared->achieved & HARDEN_META_REFUSED);
	assert_int_equal(shared->errnos[index_of("c_in_create")], 0);
	assert_int_equal(shared->errnos[index_of("c_write_out")], EACCES);
	assert_int_equal(shared->errnos[index_of("c_prot_write")], EROFS);
	(void)munmap(shared, sizeof(*shared));
	dsb_test_rm_rf(fx.top);
}

/* --- reads of hidden paths (denyRead) --------------------------------------------------------- */

static char secret_dir[2 * PATH_MAX], secret_file[2 * PATH_MAX];

static int r_hidden_beneath(void)
{
	char p[3 * PATH_MAX];
	(void)snprintf(p, sizeof(p), "%s/x", secret_dir);
	return open_errno(p, O_RDONLY);
}
static int r_hidden_dir(void)
{
	return open_errno(secret_dir, O_RDONLY | O_DIRECTORY);
}
static int r_hidden_file(void)
{
	int fd = open(secret_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	char c;
	ssize_t n = read(fd, &c, 1);
	close(fd);
	return n == 0 ? 0 : -2; /* it reads as empty */
}
static int r_plain(void)
{
	return open_errno(out_path("f"), O_RDONLY);
}

static void reads(run_result *r)
{
	r->errnos[0] = r_hidden_beneath();
	r->errnos[1] = r_hidden_dir();
	r->errnos[2] = r_hidden_file();
	r->errnos[3] = r_plain();
	r->errnos[4] = c_write_out();
	r->extra = 0;
}

static void test_hidden_reads(void **state)
{
	(void)state;
	if (!landlock_here())
		skip();
	setup_fixture(false);
	(void)snprintf(secret_dir, sizeof(secret_dir), "%s/secret", fx.top);
	(void)snprintf(secret_file, sizeof(secret_file), "%s/secret.txt", fx.top);
	char *roots[] = {fx.ws, NULL};
	protect_mount m[3];
	confine_plan plan;
	run_result off, on;
	confine_refusals r_off, r_on;
	for (int pass = 0; pass < 2; pass++) {
		make_tree();
		assert_int_equal(mkdir(secret_dir, 0755), 0);
		put_file(fx.top, "secret.txt");
		make_plan(&plan, roots, &m[0], pass == 1);
		m[1] = (protect_mount){.op = PROTECT_HIDE_DIR, .path = secret_dir};
		m[2] = (protect_mount){.op = PROTECT_HIDE_FILE, .path = secret_file};
		plan.mounts.n = 3;
		if (pass == 1)
			plan.filter_flags |= SECCOMP_FILES_READ_NOTIFY;
		run_confined(&plan, reads, pass ? &on : &off, pass ? &r_on : &r_off);
	}
	for (int i = 0; i < 5; i++)
		assert_int_equal(off.errnos[i], on.errnos[i]);
	assert_int_equal(on.errnos[0], EACCES);
	assert_int_equal(on.errnos[1], EACCES);
	assert_int_equal(on.errnos[2], 0);
	assert_int_equal(on.errnos[3], 0);
	assert_int_equal(on.errnos[4], EACCES);
	assert_int_equal(r_off.files, 0);
	/* Three hidden reads and the write outside; the plain read is nothing. */
	assert_int_equal(r_on.files, 4);
	char want[6 * PATH_MAX];
	(void)snprintf(want, sizeof(want), "read\tEACCES\t%s/x\t%s/x\thidden", secret_dir,
		       secret_dir);
	expect_record(r_on.files_named, want);
	(void)snprintf(want, sizeof(want), "read\tEACCES\t%s\t%s\thidden", secret_dir, secret_dir);
	expect_record(r_on.files_named, want);
	(void)snprintf(want, sizeof(want), "read\t-\t%s\t%s\thidden", secret_file, secret_file);
	expect_record(r_on.files_named, want);
	record_free(&confine_refusals_record, &r_off);
	record_free(&confine_refusals_record, &r_on);
	dsb_test_rm_rf(fx.top);
}

/* --- below a runner (bwrap): the supervisor only looks ----------------------------------- */

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* @path bound onto itself read-only, keeping the flags a user namespace may not drop. */
static int bind_read_only(const char *path)
{
	struct statvfs v;
	if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) < 0 || statvfs(path, &v) < 0)
		return -1;
	unsigned long keep =
		(v.f_flag & ST_NOSUID ? MS_NOSUID : 0) | (v.f_flag & ST_NODEV ? MS_NODEV : 0) |
		(v.f_flag & ST_NOEXEC ? MS_NOEXEC : 0) | (v.f_flag & ST_NOATIME ? MS_NOATIME : 0) |
		(v.f_flag & ST_NODIRATIME ? MS_NODIRATIME : 0) |
		(v.f_flag & ST_RELATIME ? MS_RELATIME : 0);
	return mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | keep, NULL);
}

/*
 * What the CLI and bwrap do before the command runs, in short: a user namespace of the call's
 * own (its uid_map written), a file call there, in the host's mount namespace (the supervisor
 * sees it in that view), then a mount namespace of bwrap's, "out" and the protected path bound
 * read-only, and every capability dropped. The supervisor must follow the view.
 */
static int act_as_runner(void)
{
	char p[3 * PATH_MAX], map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER) < 0)
		return -1;
	(void)snprintf(map, sizeof(map), "%u %u 1", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/setgroups", "deny") < 0 ||
	    write_file("/proc/self/uid_map", map) < 0)
		return -1;
	(void)snprintf(map, sizeof(map), "%u %u 1", (unsigned)gid, (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) < 0)
		return -1;
	(void)snprintf(p, sizeof(p), "%s/before", fx.ws);
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 || close(fd) < 0 || unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || bind_read_only(fx.out) < 0 ||
	    bind_read_only(fx.prot) < 0 || (harden_drop_caps() & HARDEN_FAILED))
		return -1;
	return 0;
}

static void runner_cases(run_result *r)
{
	if (act_as_runner() < 0) {
		r->extra = 1;
		return;
	}
	run_cases(r);
	r->extra = 0;
}

/* The plan of a bwrap run with the evidence on or off (the runner's mounts are its own). */
static void make_runner_plan(confine_plan *plan, char **roots, char **ro_paths, bool evidence)
{
	*plan = (confine_plan){
		.steps = evidence ? STEP(STEP_LISTENER) : 0,
		.runner_flags = SECCOMP_METADATA_NOTIFY | SECCOMP_FILES_NOTIFY,
		.filter_fd = -1,
		.wraps = true,
		.meta_roots = roots,
		.ro_paths = ro_paths,
	};
}

static bool userns_here(void)
{
	if (!seccomp_continue_available() || access("/proc/self/ns/user", F_OK) < 0) {
		fprintf(stderr,
			"# no user namespaces or no SECCOMP_USER_NOTIF_FLAG_CONTINUE here\n");
		return false;
	}
	return true;
}

/*
 * @work below a runner, the evidence off then on: each of its first @n calls gets the same
 * errno both times. The run with the evidence on and its refusals are returned.
 */
static void runner_differential(void (*work)(run_result *), size_t n, run_result *ret_on,
				confine_refusals *ret_refused)
{
	setup_fixture(false);
	char *roots[] = {fx.ws, NULL}, *ro_paths[] = {fx.prot, NULL};
	confine_plan plan;
	run_result off;
	confine_refusals r_off;
	make_tree();
	make_runner_plan(&plan, roots, ro_paths, false);
	run_confined(&plan, work, &off, &r_off);
	make_tree();
	make_runner_plan(&plan, roots, ro_paths, true);
	run_confined(&plan, work, ret_on, ret_refused);
	assert_int_equal(off.extra, 0);
	assert_int_equal(ret_on->extra, 0);
	bool same = true;
	for (size_t i = 0; i < n; i++)
		if (off.errnos[i] != ret_on->errnos[i]) {
			fprintf(stderr, "call %zu: %s with the evidence off, %s on\n", i,
				strerrorname_np(off.errnos[i]), strerrorname_np(ret_on->errnos[i]));
			same = false;
		}
	assert_true(same);
	assert_int_equal(r_off.evidence, 0);
	assert_int_equal(r_off.files, 0);
	assert_int_equal(ret_refused->evidence, 1);
	assert_true(ret_on->achieved & HARDEN_FILES_SUPERVISED);
	record_free(&confine_refusals_record, &r_off);
}

static void test_runner(void **state)
{
	(void)state;
	if (!userns_here())
		skip();
	run_result on;
	confine_refusals r_on;
	runner_differential(runner_cases, N_CASES, &on, &r_on);

	/* Only the read-only mounts refuse here: EROFS, never EACCES. */
	static const struct {
		const char *name;
		int err;
	} want_errno[] = {
		{"c_write_out", EROFS},	     {"c_create_out", EROFS},
		{"c_mkdir_out", EROFS},	     {"c_unlink_missing", EROFS},
		{"c_excl_existing", EEXIST}, {"c_mkdir_existing", EEXIST},
		{"c_dev_null", 0},	     {"c_proc_fd_pipe", 0},
		{"c_in_create", 0},	     {"c_in_rename", 0},
		{"c_prot_create", EROFS},    {"c_prot_fifo", ENXIO},
	};
	for (size_t i = 0; i < sizeof(want_errno) / sizeof(want_errno[0]); i++)
		assert_int_equal(on.errnos[index_of(want_errno[i].name)], want_errno[i].err);
	unsigned refused = 0;
	for (size_t i = 0; i < N_CASES; i++) {
		assert_int_not_equal(on.errnos[i], EACCES);
		refused += on.errnos[i] == EROFS;
	}
	/* Every refusal, and the open for writing recorded despite the view it was made in. */
	assert_int_equal(r_on.files, refused);
	char want[4 * PATH_MAX];
	(void)snprintf(want, sizeof(want), "write\tEROFS\t%s/f\t%s/f\toutside", fx.out, fx.out);
	expect_record(r_on.files_named, want);
	(void)snprintf(want, sizeof(want), "create\tEROFS\t%s/new\t%s/new\toutside", fx.out,
		       fx.out);
	expect_record(r_on.files_named, want);
	record_free(&confine_refusals_record, &r_on);
	dsb_test_rm_rf(fx.top);
}

/* The metadata changes below a runner, each against the kernel's own answer. */
static int m_chmod_out(void)
{
	return ERRNO_OF(chmod(out_path("f"), 0600));
}
static int m_chown_out(void)
{
	return ERRNO_OF(chown(out_path("f"), geteuid(), (gid_t)-1));
}
static int m_utimes_out(void)
{
	return ERRNO_OF(utimensat(AT_FDCWD, out_path("f"), NULL, 0));
}
static int m_utimes_omit(void)
{
	struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};
	return ERRNO_OF(utimensat(AT_FDCWD, out_path("f"), ts, 0));
}
static int m_utimes_bad(void)
{
	struct timespec ts[2] = {{.tv_nsec = 2000000000L}, {.tv_nsec = 0}};
	return ERRNO_OF(utimensat(AT_FDCWD, out_path("f"), ts, 0));
}
static int m_xattr_out(void)
{
	return ERRNO_OF(setxattr(out_path("f"), "user.x", "1", 1, 0));
}
static int m_xattr_bad_name(void)
{
	return ERRNO_OF(setxattr(out_path("f"), "", "1", 1, 0));
}
static int m_fchmod_out(void)
{
	int fd = open(out_path("f"), O_RDONLY | O_CLOEXEC);
	int e = ERRNO_OF(fchmod(fd, 0600));
	close(fd);
	return e;
}
static int m_fchmod_opath(void)
{
	int fd = open(out_path("f"), O_PATH | O_CLOEXEC);
	int e = ERRNO_OF(fchmod(fd, 0600));
	close(fd);
	return e;
}
static int m_chmod_in(void)
{
	char p[2 * PATH_MAX];
	(void)snprintf(p, sizeof(p), "%s/a", fx.ws);
	return ERRNO_OF(chmod(p, 0600));
}
static int m_chmod_prot(void)
{
	char p[3 * PATH_MAX];
	(void)snprintf(p, sizeof(p), "%s/f", fx.prot);
	return ERRNO_OF(chmod(p, 0600));
}

static int (*const meta_cases[])(void) = {
	m_chmod_out,	  m_chown_out,	m_utimes_out,	m_utimes_omit, m_utimes_bad, m_xattr_out,
	m_xattr_bad_name, m_fchmod_out, m_fchmod_opath, m_chmod_in,    m_chmod_prot,
};
#define N_META (sizeof(meta_cases) / sizeof(meta_cases[0]))

static void runner_meta(run_result *r)
{
	if (act_as_runner() < 0) {
		r->extra = 1;
		return;
	}
	for (size_t i = 0; i < N_META; i++)
		r->errnos[i] = meta_cases[i]();
	r->extra = 0;
}

static void test_runner_metadata(void **state)
{
	(void)state;
	if (!userns_here())
		skip();
	run_result on;
	confine_refusals r_on;
	runner_differential(runner_meta, N_META, &on, &r_on);
	static const int want[N_META] = {EROFS,	 EROFS, EROFS, 0, EINVAL, EROFS,
					 ERANGE, EROFS, EBADF, 0, EROFS};
	for (size_t i = 0; i < N_META; i++)
		assert_int_equal(on.errnos[i], want[i]);
	/* Each EROFS recorded (the path outside once, counted each time), nothing else. */
	assert_int_equal(r_on.files, 6);
	char w[6 * PATH_MAX];
	(void)snprintf(w, sizeof(w), "chmod\tEROFS\t%s/f\t%s/f\toutside", fx.out, fx.out);
	expect_record(r_on.files_named, w);
	(void)snprintf(w, sizeof(w), "chmod\tEROFS\t%s/f\t%s/f\tprotected", fx.prot, fx.prot);
	expect_record(r_on.files_named, w);
	record_free(&confine_refusals_record, &r_on);
	dsb_test_rm_rf(fx.top);
}

/* A call made with every capability of ours (the runner's, before its user namespace). */
static void capable_call(run_result *r)
{
	char p[3 * PATH_MAX];
	(void)snprintf(p, sizeof(p), "%s/made", fx.ws);
	int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	r->errnos[0] = fd < 0 ? errno : (close(fd), 0);
	r->extra = 0;
}

/*
 * A call the supervisor cannot look at (its caller holds capabilities our worker thread has
 * dropped: ptrace's rules keep its /proc/TID/root from us) goes on, and the evidence is no
 * longer whole: the run falls back to the signature rule. Only root's callers hold any.
 */
static void test_runner_unseen(void **state)
{
	(void)state;
	if (!userns_here())
		skip();
	setup_fixture(false);
	char *roots[] = {fx.ws, NULL}, *ro_paths[] = {fx.prot, NULL};
	confine_plan plan;
	run_result res;
	confine_refusals r;
	make_tree();
	make_runner_plan(&plan, roots, ro_paths, true);
	run_confined(&plan, capable_call, &res, &r);
	assert_int_equal(res.errnos[0], 0);
	assert_int_equal(r.evidence, geteuid() == 0 ? 0 : 1);
	assert_int_equal(r.files, 0);
	record_free(&confine_refusals_record, &r);
	dsb_test_rm_rf(fx.top);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_workspace_write),
		cmocka_unit_test(test_read_only_mode),
		cmocka_unit_test(test_each_operation_recorded),
		cmocka_unit_test(test_thousand_refusals),
		cmocka_unit_test(test_race),
		cmocka_unit_test(test_fallback_no_listener),
		cmocka_unit_test(test_hidden_reads),
		cmocka_unit_test(test_runner),
		cmocka_unit_test(test_runner_metadata),
		cmocka_unit_test(test_runner_unseen),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
