/* SPDX-License-Identifier: MIT */
/*
 * dsb-probe: runs inside a sandbox, attempts one named operation and prints what the kernel
 * said: "OK" or the errno's name ("EACCES", "EROFS", "EPERM", ...), one line on stdout (the
 * try-syscall idea of bubblewrap's tests). The exit status is 0 whatever the outcome, so a test
 * reads the answer rather than guessing from a status; 2 is a usage error.
 *
 *   dsb-probe write PATH [TEXT]   open(O_WRONLY|O_CREAT|O_APPEND, 0644), write TEXT ("probe\n")
 *   dsb-probe read PATH           open(O_RDONLY), read
 *   dsb-probe open-rw PATH        open(O_RDWR), no creation
 *   dsb-probe mkdir PATH          rmdir PATH      unlink PATH
 *   dsb-probe rename OLD NEW      link OLD NEW    symlink TARGET PATH
 *   dsb-probe truncate PATH       truncate(2) to 0 bytes
 *   dsb-probe mkfifo PATH
 *   dsb-probe mknod PATH [reg|chr|blk|fifo|sock]   (chr: 1:3, the numbers of /dev/null)
 *   dsb-probe bind-unix PATH      bind an AF_UNIX socket to PATH
 *   dsb-probe chmod PATH [MODE]   octal, default 644
 *   dsb-probe kill PID [SIG]      default 0: only the permission check
 *   dsb-probe exec PATH [ARG...]  execv; prints only when it fails
 *
 * Privilege and the kernel's attack surface (the t-escape-*.sh suites). A call that succeeds
 * changes nothing beyond the probe itself, except vhangup and tiocsti, which act on a terminal
 * (the tests give them one of their own, or none). Where it can, a call passes arguments the
 * kernel rejects with something other than EPERM before any privilege check, so that "EPERM"
 * can only come from a filter:
 *   dsb-probe caps                CapInh..CapAmb, NoNewPrivs and Seccomp lines of
 *                                 /proc/self/status, as they are (instead of "OK")
 *   dsb-probe list-fds            the probe's open fds, "0 1 2", ascending on one line (instead
 *                                 of "OK"; the directory it lists them through is left out)
 *   dsb-probe keyctl              keyctl(KEYCTL_GET_KEYRING_ID) of the user keyring
 *   dsb-probe add_key             a "user" key in the probe's own process keyring
 *   dsb-probe request_key         a key that does not exist: ENOKEY when the call is reachable
 *   dsb-probe fsopen              fsopen("tmpfs"): needs CAP_SYS_ADMIN over the mount namespace
 *   dsb-probe open_tree           open_tree("/") without OPEN_TREE_CLONE: needs no privilege
 *   dsb-probe mount_setattr-bad   a size below MOUNT_ATTR_SIZE_VER0: EINVAL when reachable
 *   dsb-probe bpf-map             BPF_MAP_CREATE, a one-entry array (needs CAP_BPF here)
 *   dsb-probe bpf-bad             an unknown bpf command: EINVAL when reachable
 *   dsb-probe perf-open           a software counter on the probe itself, user space only
 *   dsb-probe userfaultfd         userfaultfd(UFFD_USER_MODE_ONLY), allowed to any user
 *   dsb-probe io_uring_setup      a one-entry ring
 *   dsb-probe init_module-bad     init_module(NULL, 0, ""): EFAULT, or ENOSYS without modules;
 *                                 EPERM without CAP_SYS_MODULE
 *   dsb-probe unshare FLAGS       unshare(2); FLAGS: user,mount,uts,ipc,net,pid,cgroup,time
 *   dsb-probe clone3              clone3 of a child that exits at once, waited for
 *   dsb-probe setns PATH          setns(2) into the namespace file PATH
 *   dsb-probe vhangup             vhangup(2): hangs up the controlling terminal, if any (run
 *                                 it without one: setsid)
 *   dsb-probe tiocsti FD [TEXT]   pushes TEXT ("dsb-injected\n") into FD's terminal input
 *   dsb-probe tioclinux FD        TIOCLINUX TIOCL_GETSHIFTSTATE (ENOTTY on a non-console)
 *   dsb-probe chattr-i PATH       FS_IOC_SETFLAGS adding FS_IMMUTABLE_FL
 *   dsb-probe chattr-a PATH       FS_IOC_SETFLAGS adding FS_APPEND_FL
 *   dsb-probe setpriority PID N   setpriority(PRIO_PROCESS, PID, N)
 *   dsb-probe prlimit PID         RLIMIT_NOFILE of PID set to 64:64
 *   dsb-probe sched_setaffinity PID   PID pinned to CPU 0
 *   dsb-probe connect-abstract NAME   connect an AF_UNIX stream socket to "\0NAME"
 *   dsb-probe read-environ PID    open and read /proc/PID/environ
 *   dsb-probe read-mem PID        open /proc/PID/mem, read a byte of PID's first readable mapping
 *   dsb-probe mq-open NAME [create]   mq_open(NAME), O_CREAT (mode 0600) with "create"
 *   dsb-probe mq-unlink NAME
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/bpf.h>
#include <linux/fs.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/mount.h>
#include <linux/perf_event.h>
#include <linux/tiocl.h>
#include <linux/userfaultfd.h>

typedef int (*probe_fn)(char **args);

/* An operation that printed its own answer (caps, list-fds): main prints nothing more. */
#define ANSWERED (-2)

/*
 * The leak checker of a sanitized build stops the world with ptrace, which a sandbox may
 * forbid; the probe is short-lived and has nothing to leak, so its answer is all that counts.
 */
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return 1;
}

static int ret_errno(long r)
{
	return r < 0 ? errno : 0;
}

/* Closes a descriptor a successful call returned: the probe only reports that it got one. */
static int ret_fd(long fd)
{
	if (fd < 0)
		return errno;
	(void)close((int)fd);
	return 0;
}

/* A decimal argument in [min, max], or -1 (a usage error) in *@err. */
static long parse_long(const char *s, long min, long max, int *err)
{
	char *end = NULL;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		*err = -1;
	return v;
}

static int do_write(char **args)
{
	const char *text = args[1] ? args[1] : "probe\n";
	size_t len = strlen(text);
	int fd = open(args[0], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	ssize_t n;

	if (fd < 0)
		return errno;
	n = write(fd, text, len);
	int err = n < 0 ? errno : 0;
	if (close(fd) < 0 && err == 0)
		err = errno;
	if (err == 0 && (size_t)n != len)
		err = EIO;
	return err;
}

static int do_read(char **args)
{
	char buf[64];
	int fd = open(args[0], O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno;
	int err = read(fd, buf, sizeof(buf)) < 0 ? errno : 0;
	(void)close(fd);
	return err;
}

static int do_open_rw(char **args)
{
	int fd = open(args[0], O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return errno;
	(void)close(fd);
	return 0;
}

static int do_mkdir(char **args)
{
	return ret_errno(mkdir(args[0], 0755));
}

static int do_rmdir(char **args)
{
	return ret_errno(rmdir(args[0]));
}

static int do_unlink(char **args)
{
	return ret_errno(unlink(args[0]));
}

static int do_rename(char **args)
{
	return ret_errno(rename(args[0], args[1]));
}

static int do_link(char **args)
{
	return ret_errno(link(args[0], args[1]));
}

static int do_symlink(char **args)
{
	return ret_errno(symlink(args[0], args[1]));
}

static int do_truncate(char **args)
{
	return ret_errno(truncate(args[0], 0));
}

static int do_mkfifo(char **args)
{
	return ret_errno(mkfifo(args[0], 0644));
}

static int do_mknod(char **args)
{
	/* clang-format off: a lookup table reads best one entry per line */
	static const struct {
		const char *name;
		mode_t type;
	} types[] = {
		{"reg", S_IFREG},  {"chr", S_IFCHR},   {"blk", S_IFBLK},
		{"fifo", S_IFIFO}, {"sock", S_IFSOCK},
	};
	/* clang-format on */
	const char *want = args[1] ? args[1] : "chr";

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(types[i].name, want) == 0)
			return ret_errno(mknod(args[0], types[i].type | 0644, makedev(1, 3)));
	return -1;
}

static int do_bind_unix(char **args)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, err;

	if (strlen(args[0]) >= sizeof(sa.sun_path))
		return ENAMETOOLONG;
	memcpy(sa.sun_path, args[0], strlen(args[0]) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	err = ret_errno(bind(fd, (const struct sockaddr *)&sa, sizeof(sa)));
	(void)close(fd);
	return err;
}

static int do_chmod(char **args)
{
	char *end = NULL;
	unsigned long mode = args[1] ? strtoul(args[1], &end, 8) : 0644;

	if (args[1] && (*end || mode > 07777))
		return -1;
	return ret_errno(chmod(args[0], (mode_t)mode));
}

static int do_kill(char **args)
{
	char *end = NULL;
	long pid = strtol(args[0], &end, 10);
	long sig = 0;

	if (*end || end == args[0])
		return -1;
	if (args[1]) {
		sig = strtol(args[1], &end, 10);
		if (*end || end == args[1] || sig < 0 || sig >= NSIG)
			return -1;
	}
	return ret_errno(kill((pid_t)pid, (int)sig));
}

static int do_exec(char **args)
{
	execv(args[0], args);
	return errno;
}

static int do_caps(char **args)
{
	static const char *const keys[] = {
		"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:"};
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return errno;
	while (fgets(line, sizeof(line), f))
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (strncmp(line, keys[i], strlen(keys[i])) == 0)
				fputs(line, stdout);
	(void)fclose(f);
	return ANSWERED;
}

static int compare_longs(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static int do_list_fds(char **args)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long *fds = NULL;
	size_t n = 0, cap = 0;

	if (!d)
		return errno;
	while ((e = readdir(d))) {
		int err = 0;
		long fd = parse_long(e->d_name, 0, 0x7fffffffL, &err);

		if (err || fd == dirfd(d))
			continue;
		if (n == cap) {
			long *more = realloc(fds, (cap = cap ? 2 * cap : 64) * sizeof(*fds));

			if (!more) {
				free(fds);
				(void)closedir(d);
				return ENOMEM;
			}
			fds = more;
		}
		fds[n++] = fd;
	}
	(void)closedir(d);
	if (n)
		qsort(fds, n, sizeof(*fds), compare_longs);
	for (size_t i = 0; i < n; i++)
		printf("%s%ld", i ? " " : "", fds[i]);
	putchar('\n');
	free(fds);
	return ANSWERED;
}

static int do_keyctl(char **args)
{
	return ret_errno(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0));
}

static int do_add_key(char **args)
{
	return ret_errno(syscall(SYS_add_key, "user", "dsb-probe", "x", (size_t)1,
				 KEY_SPEC_PROCESS_KEYRING));
}

static int do_request_key(char **args)
{
	return ret_errno(syscall(SYS_request_key, "user", "dsb-probe-absent", NULL,
				 KEY_SPEC_PROCESS_KEYRING));
}

static int do_fsopen(char **args)
{
	return ret_fd(syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC));
}

static int do_open_tree(char **args)
{
	return ret_fd(syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLOEXEC));
}

static int do_mount_setattr_bad(char **args)
{
	struct mount_attr attr = {0};

	return ret_errno(syscall(SYS_mount_setattr, -1, "", AT_EMPTY_PATH, &attr, (size_t)1));
}

static int do_bpf_map(char **args)
{
	union bpf_attr attr = {
		.map_type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 4, .max_entries = 1};

	return ret_fd(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)));
}

static int do_bpf_bad(char **args)
{
	union bpf_attr attr = {0};

	return ret_errno(syscall(SYS_bpf, 0x7fff, &attr, sizeof(attr)));
}

static int do_perf_open(char **args)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_TASK_CLOCK,
		.disabled = 1,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};

	return ret_fd(syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
}

static int do_userfaultfd(char **args)
{
	return ret_fd(syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
}

static int do_io_uring_setup(char **args)
{
	struct io_uring_params params = {0};

	return ret_fd(syscall(SYS_io_uring_setup, 1, &params));
}

static int do_init_module_bad(char **args)
{
	return ret_errno(syscall(SYS_init_module, NULL, 0UL, ""));
}

static int do_unshare(char **args)
{
	static const struct {
		const char *name;
		int flag;
	} names[] = {
		{"user", CLONE_NEWUSER},     {"mount", CLONE_NEWNS},  {"uts", CLONE_NEWUTS},
		{"ipc", CLONE_NEWIPC},	     {"net", CLONE_NEWNET},   {"pid", CLONE_NEWPID},
		{"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
	};
	char *list = strdup(args[0]), *save = NULL;
	int flags = 0;

	if (!list)
		return errno;
	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i = 0;

		while (i < sizeof(names) / sizeof(names[0]) && strcmp(names[i].name, tok) != 0)
			i++;
		if (i == sizeof(names) / sizeof(names[0])) {
			free(list);
			return -1;
		}
		flags |= names[i].flag;
	}
	free(list);
	return flags ? ret_errno(unshare(flags)) : -1;
}

/* The kernel's struct clone_args (v0), which glibc does not declare. */
struct probe_clone_args {
	__u64 flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

static int do_clone3(char **args)
{
	struct probe_clone_args ca = {.exit_signal = SIGCHLD};
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));

	if (pid < 0)
		return errno;
	if (pid == 0)
		_exit(0);
	return ret_errno(waitpid((pid_t)pid, NULL, 0));
}

static int do_setns(char **args)
{
	int fd = open(args[0], O_RDONLY | O_CLOEXEC);
	int err;

	if (fd < 0)
		return errno;
	err = ret_errno(setns(fd, 0));
	(void)close(fd);
	return err;
}

static int do_vhangup(char **args)
{
	return ret_errno(vhangup());
}

static int do_tiocsti(char **args)
{
	int err = 0;
	int fd = (int)parse_long(args[0], 0, 1 << 20, &err);
	const char *text = args[1] ? args[1] : "dsb-injected\n";

	if (err)
		return err;
	for (const char *c = text; *c; c++)
		if (ioctl(fd, TIOCSTI, c) < 0)
			return errno;
	return 0;
}

static int do_tioclinux(char **args)
{
	int err = 0;
	int fd = (int)parse_long(args[0], 0, 1 << 20, &err);
	char sub = TIOCL_GETSHIFTSTATE;

	if (err)
		return err;
	return ret_errno(ioctl(fd, TIOCLINUX, &sub));
}

static int set_inode_flag(const char *path, int flag)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	int flags = 0, err;

	if (fd < 0)
		return errno;
	err = ret_errno(ioctl(fd, FS_IOC_GETFLAGS, &flags));
	if (err == 0) {
		flags |= flag;
		err = ret_errno(ioctl(fd, FS_IOC_SETFLAGS, &flags));
	}
	(void)close(fd);
	return err;
}

static int do_chattr_i(char **args)
{
	return set_inode_flag(args[0], FS_IMMUTABLE_FL);
}

static int do_chattr_a(char **args)
{
	return set_inode_flag(args[0], FS_APPEND_FL);
}

static int do_setpriority(char **args)
{
	int err = 0;
	long pid = parse_long(args[0], 1, 1L << 30, &err);
	long prio = parse_long(args[1], -20, 19, &err);

	if (err)
		return err;
	return ret_errno(setpriority(PRIO_PROCESS, (id_t)pid, (int)prio));
}

static int do_prlimit(char **args)
{
	int err = 0;
	long pid = parse_long(args[0], 1, 1L << 30, &err);
	const struct rlimit lim = {.rlim_cur = 64, .rlim_max = 64};

	if (err)
		return err;
	return ret_errno(prlimit((pid_t)pid, RLIMIT_NOFILE, &lim, NULL));
}

static int do_sched_setaffinity(char **args)
{
	int err = 0;
	long pid = parse_long(args[0], 1, 1L << 30, &err);
	cpu_set_t set;

	if (err)
		return err;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	return ret_errno(sched_setaffinity((pid_t)pid, sizeof(set), &set));
}

static int do_connect_abstract(char **args)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len = strlen(args[0]);
	int fd, err;

	if (len + 1 > sizeof(sa.sun_path))
		return ENAMETOOLONG;
	memcpy(sa.sun_path + 1, args[0], len); /* sun_path[0] stays '\0': the abstract namespace */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	err = ret_errno(connect(fd, (const struct sockaddr *)&sa,
				(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)));
	(void)close(fd);
	return err;
}

/* Opens /proc/PID/NAME (PID a number) with @flags. */
static int open_proc(const char *pid, const char *name, int flags, int *err)
{
	char path[64];

	(void)parse_long(pid, 1, 1L << 30, err);
	if (*err)
		return -1;
	snprintf(path, sizeof(path), "/proc/%s/%s", pid, name);
	return open(path, flags | O_CLOEXEC);
}

static int do_read_environ(char **args)
{
	char buf[256];
	int err = 0;
	int fd = open_proc(args[0], "environ", O_RDONLY, &err);

	if (err)
		return err;
	if (fd < 0)
		return errno;
	err = read(fd, buf, sizeof(buf)) < 0 ? errno : 0;
	(void)close(fd);
	return err;
}

static int do_read_mem(char **args)
{
	char line[512], byte;
	unsigned long start = 0;
	int err = 0, mem, fd;
	FILE *maps;

	mem = open_proc(args[0], "mem", O_RDONLY, &err);
	if (err)
		return err;
	if (mem < 0)
		return errno;
	fd = open_proc(args[0], "maps", O_RDONLY, &err);
	maps = fd < 0 ? NULL : fdopen(fd, "r");
	if (!maps) {
		err = errno;
		if (fd >= 0)
			(void)close(fd);
		(void)close(mem);
		return err;
	}
	while (start == 0 && fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;
		char perms[8];

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && perms[0] == 'r')
			start = lo;
	}
	(void)fclose(maps);
	if (start == 0)
		err = ENODATA;
	else
		err = pread(mem, &byte, 1, (off_t)start) < 0 ? errno : 0;
	(void)close(mem);
	return err;
}

static int do_mq_open(char **args)
{
	int create = args[1] && strcmp(args[1], "create") == 0;
	mqd_t q;

	if (args[1] && !create)
		return -1;
	q = create ? mq_open(args[0], O_RDWR | O_CREAT | O_CLOEXEC, 0600, NULL)
		   : mq_open(args[0], O_RDWR | O_CLOEXEC);
	if (q == (mqd_t)-1)
		return errno;
	(void)mq_close(q);
	return 0;
}

static int do_mq_unlink(char **args)
{
	return ret_errno(mq_unlink(args[0]));
}

/* clang-format off: one operation per line, with its argument counts */
static const struct probe {
	const char *name;
	int min_args, max_args; /* max -1: any */
	probe_fn fn;
} probes[] = {
	{"write", 1, 2, do_write},
	{"read", 1, 1, do_read},
	{"open-rw", 1, 1, do_open_rw},
	{"mkdir", 1, 1, do_mkdir},
	{"rmdir", 1, 1, do_rmdir},
	{"unlink", 1, 1, do_unlink},
	{"rename", 2, 2, do_rename},
	{"link", 2, 2, do_link},
	{"symlink", 2, 2, do_symlink},
	{"truncate", 1, 1, do_truncate},
	{"mkfifo", 1, 1, do_mkfifo},
	{"mknod", 1, 2, do_mknod},
	{"bind-unix", 1, 1, do_bind_unix},
	{"chmod", 1, 2, do_chmod},
	{"kill", 1, 2, do_kill},
	{"exec", 1, -1, do_exec},
	{"caps", 0, 0, do_caps},
	{"list-fds", 0, 0, do_list_fds},
	{"keyctl", 0, 0, do_keyctl},
	{"add_key", 0, 0, do_add_key},
	{"request_key", 0, 0, do_request_key},
	{"fsopen", 0, 0, do_fsopen},
	{"open_tree", 0, 0, do_open_tree},
	{"mount_setattr-bad", 0, 0, do_mount_setattr_bad},
	{"bpf-map", 0, 0, do_bpf_map},
	{"bpf-bad", 0, 0, do_bpf_bad},
	{"perf-open", 0, 0, do_perf_open},
	{"userfaultfd", 0, 0, do_userfaultfd},
	{"io_uring_setup", 0, 0, do_io_uring_setup},
	{"init_module-bad", 0, 0, do_init_module_bad},
	{"unshare", 1, 1, do_unshare},
	{"clone3", 0, 0, do_clone3},
	{"setns", 1, 1, do_setns},
	{"vhangup", 0, 0, do_vhangup},
	{"tiocsti", 1, 2, do_tiocsti},
	{"tioclinux", 1, 1, do_tioclinux},
	{"chattr-i", 1, 1, do_chattr_i},
	{"chattr-a", 1, 1, do_chattr_a},
	{"setpriority", 2, 2, do_setpriority},
	{"prlimit", 1, 1, do_prlimit},
	{"sched_setaffinity", 1, 1, do_sched_setaffinity},
	{"connect-abstract", 1, 1, do_connect_abstract},
	{"read-environ", 1, 1, do_read_environ},
	{"read-mem", 1, 1, do_read_mem},
	{"mq-open", 1, 2, do_mq_open},
	{"mq-unlink", 1, 1, do_mq_unlink},
};
/* clang-format on */

static int usage(void)
{
	fputs("usage: dsb-probe OPERATION ARGS...\noperations:", stderr);
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		fprintf(stderr, " %s", probes[i].name);
	fputc('\n', stderr);
	return 2;
}

int main(int argc, char **argv)
{
	const struct probe *p = NULL;
	int nargs, err;

	if (argc < 2)
		return usage();
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		if (strcmp(probes[i].name, argv[1]) == 0)
			p = &probes[i];
	nargs = argc - 2;
	if (!p || nargs < p->min_args || (p->max_args >= 0 && nargs > p->max_args))
		return usage();

	err = p->fn(argv + 2);
	if (err == ANSWERED)
		return fflush(stdout) == 0 ? 0 : 1;
	if (err < 0)
		return usage();
	if (err == 0) {
		puts("OK");
	} else {
		const char *name = strerrorname_np(err);

		if (name)
			puts(name);
		else
			printf("E%d\n", err);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
