/* SPDX-License-Identifier: MIT */
/*
 * What a process does to itself to become confined, and nothing else: the plan's steps
 * (confine.h), run in the one order their enum gives: the call's limits, namespaces, the network
 * namespace's loopback and listeners, protected paths as mounts, the Landlock domain, capabilities
 * and the system-call filter. Runs in vfork'ed children of the spawner (spawn.c) and in
 * `landlock-run`, which is also built on its own as a small static program (src/launcher/): so
 * nothing here allocates, and nothing needs more than the C library and the kernel's headers.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine.h"

/*
 * Every descriptor from @from up becomes close-on-exec: the command inherits stdio and nothing
 * else, whatever the caller left open (its own descriptors without O_CLOEXEC included). Marking
 * rather than closing keeps them usable until the exec itself.
 */
void confine_cloexec_from(int from)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)from, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) == 0)
		return;
#endif
	/* Kernels before 5.11: every possible descriptor, one by one. */
	long max = sysconf(_SC_OPEN_MAX);
	for (long fd = from; fd < (max > 0 ? max : 65536); fd++)
		(void)fcntl((int)fd, F_SETFD, FD_CLOEXEC);
}

/* The mount flags a read-only remount must keep (locked ones may not be dropped in a user
 * namespace). */
static unsigned long kept_flags(const char *path)
{
	struct statfs sfs;
	unsigned long keep = 0;
	if (statfs(path, &sfs) < 0)
		return 0;
	if (sfs.f_flags & ST_NOSUID)
		keep |= MS_NOSUID;
	if (sfs.f_flags & ST_NODEV)
		keep |= MS_NODEV;
	if (sfs.f_flags & ST_NOEXEC)
		keep |= MS_NOEXEC;
	if (sfs.f_flags & ST_NOATIME)
		keep |= MS_NOATIME;
	if (sfs.f_flags & ST_NODIRATIME)
		keep |= MS_NODIRATIME;
	if (sfs.f_flags & ST_RELATIME)
		keep |= MS_RELATIME;
	return keep;
}

/*
 * In a mount namespace of our own: makes every mount a slave (nothing propagates back to the
 * host), then applies @v. -errno with the launcher-style line in @msg.
 */
/*
 * A working directory entered before the mounts would still see under them: entered again by
 * its path. One the new view lacks (the host's /tmp/x under a /tmp of the command's own) is
 * left for $HOME, else "/", as bwrap does.
 */
static int reenter_cwd(char *msg, size_t size)
{
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)) || chdir(cwd) == 0)
		return 0;
	int e = errno;
	const char *home = getenv("HOME");
	if (e == ENOENT && ((home && home[0] == '/' && chdir(home) == 0) || chdir("/") == 0))
		return 0;
	(void)snprintf(msg, size, "landlock-run: cannot re-enter %s: %s", cwd, strerror(e));
	return -e;
}

/* The protections of @plan, those mounted after its own /tmp (@late) or the others. */
static int apply_mounts(const confine_plan *plan, bool late, char *msg, size_t size)
{
	const protect_mount *v = plan->mounts.v;
	/* Nothing done here may reach the host's mount table. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
		(void)snprintf(msg, size, "landlock-run: cannot make the mounts private: %s",
			       strerror(errno));
		return -errno;
	}
	for (size_t i = 0; i < plan->mounts.n; i++) {
		if (v[i].late != late)
			continue;
		const char *p = v[i].path;
		int r = 0;
		switch (v[i].op) {
		case PROTECT_PIN:
			r = mount(p, p, NULL, MS_BIND, NULL);
			break;
		case PROTECT_READ_ONLY:
		case PROTECT_HIDE_FILE: {
			const char *src = v[i].op == PROTECT_HIDE_FILE ? "/dev/null" : p;
			/* Not MS_REC: a pin below stays out of the read-only view. */
			r = mount(src, p, NULL, MS_BIND, NULL);
			if (r == 0)
				r = mount(NULL, p, NULL,
					  MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(p), NULL);
			break;
		}
		case PROTECT_HIDE_DIR:
			r = mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  "mode=000,size=4k");
			break;
		}
		if (r < 0) {
			int e = errno;
			(void)snprintf(msg, size, "landlock-run: cannot protect %s: %s", p,
				       strerror(e));
			return -e;
		}
	}
	return reenter_cwd(msg, size);
}

/* One byte and one descriptor: the control buffer of a single SCM_RIGHTS message. */
typedef union fd_control {
	struct cmsghdr align;
	char buf[CMSG_SPACE(sizeof(int))];
} fd_control;

int fd_send(int sock, int fd)
{
	char byte = 'F';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	fd_control control;
	memset(&control, 0, sizeof(control));
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

/* The helper of listener_install_send(): waits for the listener's number, then sends it. */
typedef struct listener_helper {
	int sock;
	int ready; /* the pipe's read end */
} listener_helper;

static int send_listener(void *arg)
{
	const listener_helper *h = arg;
	int fd;
	if (read(h->ready, &fd, sizeof(fd)) != (ssize_t)sizeof(fd))
		return 1; /* no listener came */
	return fd_send(h->sock, fd) == 0 ? 0 : 1;
}

int listener_install_send(const seccomp_program *prog, int sock, bool covers_sendmsg)
{
	if (!covers_sendmsg) {
		int listener = seccomp_install_listener(prog);
		if (listener < 0)
			return listener;
		int r = fd_send(sock, listener);
		(void)close(listener);
		return r < 0 ? -EPIPE : 0;
	}
	/*
	 * Once a filter that hands sendmsg() to the supervisor is in, our own sendmsg() of its
	 * listener would wait for the supervisor that the listener is for. So the send is made by
	 * a helper started before the filter, which the filter does not cover: it shares our
	 * descriptor table and memory (no copy of the vfork'ed caller's pages), on a stack of its
	 * own, and ends before we go on.
	 */
	int ready[2];
	if (pipe2(ready, O_CLOEXEC) < 0)
		return -errno;
	listener_helper h = {.sock = sock, .ready = ready[0]};
	_Alignas(16) char stack[32768];
	pid_t helper =
		clone(send_listener, stack + sizeof(stack), CLONE_VM | CLONE_FILES | SIGCHLD, &h);
	int listener = helper < 0 ? -errno : seccomp_install_listener(prog);
	if (listener >= 0 && write(ready[1], &listener, sizeof(listener)) != sizeof(listener))
		listener = -EIO;
	(void)close(ready[1]); /* the helper reads end-of-file when no number came */
	int status = 0;
	while (helper > 0 && waitpid(helper, &status, 0) < 0 && errno == EINTR)
		;
	(void)close(ready[0]);
	if (listener < 0)
		return listener;
	(void)close(listener);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EPIPE;
}

int fd_receive(int sock, int flags)
{
	char byte;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	fd_control control;
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control.buf,
			     .msg_controllen = sizeof(control.buf)};
	if (recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC) != 1)
		return -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(sizeof(int)))
		return -1;
	int fd;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/*
 * The filter, last. Metadata calls go to the supervisor over @meta_sock when there is one and
 * the kernel gives a listener; else they are refused. Returns HARDEN_FILTER plus the
 * HARDEN_META_* bit, or -errno.
 */
static int install_filter(unsigned flags, int meta_sock)
{
	if (!(flags & SECCOMP_METADATA_NOTIFY)) {
		int r = seccomp_install(seccomp_program_for(flags));
		return r < 0 ? r
			     : (int)(HARDEN_FILTER |
				     (flags & SECCOMP_METADATA_DENY ? HARDEN_META_REFUSED : 0));
	}
	/* No supervisor to send to, or no listener here (a kernel before 5.0, a filter stacked
	 * with its own): refuse them. The file calls evidence watches then run unsupervised:
	 * Landlock governs them, there is just no evidence (docs/design/evidence.md). */
	unsigned refuse = (flags & ~(SECCOMP_METADATA_NOTIFY | SECCOMP_FILES_NOTIFY |
				     SECCOMP_FILES_READ_NOTIFY)) |
			  SECCOMP_METADATA_DENY;
	/*
	 * Once the filter is in place a supervised call waits for a supervisor. One that cannot be
	 * told gets nothing (the calls then fail with ENOSYS once the listener is gone: closed
	 * either way).
	 */
	int r = meta_sock >= 0 ? listener_install_send(seccomp_program_for(flags), meta_sock,
						       flags & SECCOMP_NET_NOTIFY)
			       : 0;
	if (meta_sock < 0 || r == -EBUSY || r == -EINVAL || r == -ENOSYS) {
		r = seccomp_install(seccomp_program_for(refuse));
		return r < 0 ? r : (int)(HARDEN_FILTER | HARDEN_META_REFUSED);
	}
	return r < 0 ? r
		     : (int)(HARDEN_FILTER | HARDEN_META_SUPERVISED |
			     (flags & SECCOMP_FILES_NOTIFY ? HARDEN_FILES_SUPERVISED : 0));
}

/* --- the steps ------------------------------------------------------------------------------- */

/* What the steps share: the plan, where to send listeners, what was achieved so far. */
typedef struct step_ctx {
	const confine_plan *plan;
	int sock;
	const int *cgroup_procs; /* two, or NULL */
	confine_pid_fork *fork;	 /* STEP_PID_NAMESPACE's; NULL: not taken */
	int parent_fd;		 /* the caller's pidfd, while the namespace is made */
	unsigned *ret_achieved;
	bool *ret_partial;
	unsigned achieved;     /* HARDEN_* */
	unsigned filter_flags; /* the plan's, with what the namespaces could not give */
	bool partial;
	char *msg;
	size_t size;
} step_ctx;

/*
 * A caller that made itself non-dumpable (the CLI does) owns its /proc/self files as root, so
 * a user could not write its new namespace's maps. In a vfork'ed child the flag belongs to the
 * memory shared with the parent, which restores it.
 */
static void make_dumpable(void)
{
	if (prctl(PR_GET_DUMPABLE, 0L, 0L, 0L, 0L) != 1)
		(void)prctl(PR_SET_DUMPABLE, 1L, 0L, 0L, 0L);
}

/* --- the limits (src/confine/limits.c says which mechanism is whose) -------------------- */

/* Lowers @resource to @soft and @hard, never above what the caller had (raising is not ours). */
static int lower_limit(int resource, uint64_t soft, uint64_t hard)
{
	struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard}, old;
	if (getrlimit(resource, &old) == 0) {
		if (old.rlim_max != RLIM_INFINITY && rl.rlim_max > old.rlim_max)
			rl.rlim_max = old.rlim_max;
		if (rl.rlim_cur > rl.rlim_max)
			rl.rlim_cur = rl.rlim_max;
	}
	return setrlimit(resource, &rl) < 0 ? -errno : 0;
}

/* The command's niceness, raised by the plan's (a command cannot lower it again). */
static void lower_priority(const confine_limits *L)
{
	if (!L->nice)
		return;
	errno = 0;
	int now = getpriority(PRIO_PROCESS, 0);
	if (errno == 0)
		(void)setpriority(PRIO_PROCESS, 0, now + L->nice > 19 ? 19 : now + L->nice);
}

/* The sandbox's own user namespace, with its share of the caller's per-user budgets. */
static int own_user_namespace(step_ctx *x, const confine_limits *L)
{
	make_dumpable();
	unsigned ns = harden_user_namespace(0);
	/*
	 * None could be made (nothing changed): the budgets stay shared and RLIMIT_NPROC counts
	 * every process of the uid, as where the host has no user namespaces; what comes next
	 * (bwrap, the Landlock steps) says whether the sandbox itself can be had. One made but
	 * not mapped cannot be left: fail.
	 */
	if (!ns)
		return 0;
	if (ns & HARDEN_FAILED) {
		(void)snprintf(x->msg, x->size,
			       "cannot map the sandbox's own user namespace (for its per-user "
			       "budgets)");
		return -EPERM;
	}
	x->achieved |= ns;
	int user = open("/proc/sys/user", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = user < 0 ? -errno : 0;
	for (size_t i = 0; r >= 0 && L->budgets && L->budgets[i]; i++) {
		char name[64];
		const char *eq = strchr(L->budgets[i], '=');
		size_t n = eq ? (size_t)(eq - L->budgets[i]) : sizeof(name);
		if (n >= sizeof(name))
			continue;
		memcpy(name, L->budgets[i], n);
		name[n] = '\0';
		if ((r = file_write_at(user, name, eq + 1)) < 0)
			(void)snprintf(x->msg, x->size, "cannot set the sandbox's %s: %s", name,
				       strerror(-r));
	}
	if (user >= 0)
		(void)close(user);
	else
		(void)snprintf(x->msg, x->size, "cannot open /proc/sys/user: %s", strerror(-r));
	/* POSIX message queues are counted likewise (RLIMIT_MSGQUEUE): a quarter too. */
	struct rlimit mq;
	if (r >= 0 && getrlimit(RLIMIT_MSGQUEUE, &mq) == 0 && mq.rlim_cur != RLIM_INFINITY)
		r = lower_limit(RLIMIT_MSGQUEUE, mq.rlim_cur / 4, mq.rlim_cur / 4);
	return r;
}

static int step_limits(step_ctx *x)
{
	const confine_limits *L = &x->plan->limits;
	/* First, while nothing else has changed: every process from here on is counted. */
	for (int i = 0; x->cgroup_procs && i < 2; i++)
		if (x->cgroup_procs[i] >= 0 && write(x->cgroup_procs[i], "0", 1) != 1) {
			int e = errno;
			(void)snprintf(x->msg, x->size, "cannot join the call's cgroup: %s",
				       strerror(e));
			return -e;
		}
	/* dsb_confined_spawn() makes none (nothing would remove it): only defaults go without. */
	if (L->cgroup_required && (!x->cgroup_procs || x->cgroup_procs[0] < 0)) {
		(void)snprintf(x->msg, x->size, "the call's cgroup was not made");
		return -EPERM;
	}
	/* The command's, not the init's of its PID namespace: that one is niced there. */
	if (!(x->fork && (x->plan->steps & STEP(STEP_PID_NAMESPACE))))
		lower_priority(L);
	/* Before the rlimits: a namespace keeps its creator's as its own ceiling. */
	int r = L->own_userns ? own_user_namespace(x, L) : 0;
	if (r < 0)
		return r;
	if (L->nproc)
		r = lower_limit(RLIMIT_NPROC, L->processes, L->processes);
	/* SIGXCPU at the soft limit, which a command may catch; SIGKILL a second later. */
	if (r >= 0 && L->cpu_seconds)
		r = lower_limit(RLIMIT_CPU, L->cpu_seconds, L->cpu_seconds + 1);
	if (r >= 0 && L->file_bytes)
		r = lower_limit(RLIMIT_FSIZE, L->file_bytes, L->file_bytes);
	if (r < 0)
		(void)snprintf(x->msg, x->size, "cannot set the call's resource limits: %s",
			       strerror(-r));
	return r;
}

static int step_namespaces(step_ctx *x)
{
	make_dumpable();
	unsigned ns = harden_namespaces(x->plan->mount_ns, x->plan->net_ns);
	if (ns & HARDEN_FAILED) {
		(void)snprintf(x->msg, x->size, "landlock-run: cannot map the user namespace");
		return -EPERM;
	}
	x->achieved |= ns;
	/* No IPC namespace: the filter keeps host IPC objects out of reach instead. */
	if (!(ns & HARDEN_IPC_NS))
		x->filter_flags |= SECCOMP_DENY_IPC;
	return 0;
}

/* The caller's pidfd (a child of it asks whether it lives), or -1 without pidfds. */
static int parent_pidfd(void)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, getppid(), 0U);
#else
	return -1;
#endif
}

/*
 * A child of our parent, made in the PID namespace: it dies with that parent, as we do. Armed
 * for a parent alive now (getppid() says 0 across the namespace: its pidfd tells).
 */
NO_ASAN_STACK static void die_with_parent(int parent_fd)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0L, 0L, 0L);
	struct pollfd gone = {.fd = parent_fd, .events = POLLIN};
	if (parent_fd >= 0 && poll(&gone, 1, 0) != 0)
		_exit(1);
}

/*
 * The init of the command's PID namespace (docs/design/limits.md "Ending the tree"): reaps
 * what is re-parented to it, and nothing else, until it is killed, which kills every process
 * of the namespace at once and lets none be made there again. Made before Landlock and the
 * filter, it is outside the command's domain, which can neither signal nor trace it; it keeps
 * no descriptor and no capability, and its copy of the caller's memory nobody may read.
 */
static _Noreturn void pid_init_run(int parent_fd)
{
	die_with_parent(parent_fd);
	(void)prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);
	(void)prctl(PR_SET_NAME, (unsigned long)"dsh-sandbox-init", 0L, 0L, 0L);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 0U, ~0U, 0U) < 0)
#endif
		for (int fd = 0; fd < 1024; fd++)
			(void)close(fd);
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct none[2];
	memset(none, 0, sizeof(none));
	(void)syscall(SYS_capset, &hdr, none);
	/* Every signal stays blocked (the spawner blocked them): SIGCHLD is waited for. */
	sigset_t chld;
	(void)sigemptyset(&chld);
	(void)sigaddset(&chld, SIGCHLD);
	for (;;) {
		if (waitpid(-1, NULL, __WALL) > 0 || errno != ECHILD)
			continue;
		(void)sigwaitinfo(&chld, NULL); /* no child now: until an orphan comes */
	}
}

static int run_steps(step_ctx *x, int from);

/* The namespace's first process, on a stack of its own: the steps left, then the caller's. */
NO_ASAN_STACK static int pid_leader_run(void *arg)
{
	step_ctx *x = arg;
	confine_pid_fork *f = x->fork;
	die_with_parent(x->parent_fd);
	lower_priority(&x->plan->limits);
	if (f->enter)
		f->enter(f->arg);
	int r = run_steps(x, STEP_PID_NAMESPACE + 1);
	*x->ret_achieved = x->achieved;
	*x->ret_partial = x->partial;
	f->then(f->arg, r);
	_exit(125); /* it does not return */
}

/* Enough for the steps after this one (the listener's helper takes 32 KiB of it). */
#define LEADER_STACK (256u << 10)

/*
 * Where no cgroup holds the call, a fork bomb regrows while its tree is walked and killed one
 * process at a time, and one whose caller was killed with SIGKILL runs on. In a PID namespace
 * the kernel kills all of it at once when its init dies, and refuses every fork there after.
 * unshare() moves our children, not us, and a process whose children go elsewhere cannot make
 * threads: the command runs in the namespace's first process, as bwrap's does. Both it and
 * the init are our parent's children (it reaps them), made vfork-like: the first shares our
 * memory, on a stack of its own, while we wait; we then only report and exit.
 */
static int step_pid_namespace(step_ctx *x)
{
	confine_pid_fork *f = x->fork;
	if (!f)
		return 0; /* nobody to end it: the caller's own reaping holds the tree */
	/*
	 * The init is not niced, unlike the command: when it is killed, the kernel ends the
	 * namespace in its name, and at nice 10 among a bomb's 2048 processes it would wait its
	 * turn behind every one of them.
	 */
	if (unshare(CLONE_NEWPID) < 0) {
		lower_priority(&x->plan->limits);
		return 0; /* no CAP_SYS_ADMIN here (no user namespace): the tree walk ends it */
	}
	x->parent_fd = parent_pidfd();
	/* The first process made from here on is the init; without one, no fork there works. */
	long init = syscall(SYS_clone, (unsigned long)(CLONE_PARENT | SIGCHLD), 0L, 0L, 0L, 0L);
	if (init == 0)
		pid_init_run(x->parent_fd);
	int e = errno;
	void *stack = MAP_FAILED;
	if (init > 0) {
		f->init = (pid_t)init;
		x->achieved |= HARDEN_PID_NS;
		stack = mmap(NULL, LEADER_STACK, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		e = errno;
	}
	pid_t leader = -1;
	if (stack != MAP_FAILED) {
		leader = clone(pid_leader_run, (char *)stack + LEADER_STACK,
			       CLONE_VM | CLONE_VFORK | CLONE_PARENT | SIGCHLD, x);
		e = errno;
		(void)munmap(stack, LEADER_STACK);
	}
	if (x->parent_fd >= 0)
		(void)close(x->parent_fd);
	if (leader < 0) {
		(void)snprintf(x->msg, x->size,
			       "cannot start the command in a PID namespace of its own: %s",
			       strerror(e));
		return -e;
	}
	f->leader = leader;
	return 1;
}

/*
 * A runner's network namespace, made here because bwrap would give the proxy no door into its
 * own (the listener is made in there and sent out).
 */
static int step_net_namespace(step_ctx *x)
{
	make_dumpable();
	unsigned ns = harden_net_namespace();
	if (ns & HARDEN_FAILED) {
		(void)snprintf(x->msg, x->size, "cannot map the user namespace");
		return -EPERM;
	}
	x->achieved |= ns;
	return 0;
}

static int step_loopback(step_ctx *x)
{
	/* The provider asked for it because the probe made one: none now is no run. */
	if (!(x->achieved & HARDEN_NET_NS)) {
		(void)snprintf(x->msg, x->size, "cannot make a network namespace");
		return -EPERM;
	}
	uint16_t port = x->plan->proxy_port;
	int fd = harden_loopback(port);
	if (fd < 0) {
		(void)snprintf(x->msg, x->size,
			       "cannot set up the network namespace's loopback: %s", strerror(-fd));
		return fd;
	}
	if (!port)
		return 0;
	int r = x->sock >= 0 ? fd_send(x->sock, fd) : -ENOTCONN;
	(void)close(fd);
	if (r < 0)
		(void)snprintf(x->msg, x->size, "cannot hand the proxy its listener: %s",
			       strerror(-r));
	return r;
}

/*
 * The listener below the runner's own filter: for the command's connect and send calls, and
 * for evidence of its file calls. Evidence that cannot be had (no listener here: a kernel
 * before 5.0, a filter stacked with its own) leaves the run without it, and no rule in place:
 * the runner's read-only mounts enforce either way.
 */
static int step_listener(step_ctx *x)
{
	unsigned flags = x->plan->runner_flags;
	bool net = flags & SECCOMP_NET_NOTIFY;
	int r = x->sock >= 0 ? listener_install_send(seccomp_runner_program(flags), x->sock, net)
			     : -ENOTCONN;
	/* Nothing was installed (a listener that was, then not sent, is a failure: its calls
	 * would fail with ENOSYS). */
	if (!net && (r == -ENOTCONN || r == -EBUSY || r == -EINVAL || r == -ENOSYS))
		return 0;
	if (r < 0) {
		(void)snprintf(x->msg, x->size,
			       "cannot hand over the connect supervisor's listener");
		return r;
	}
	x->achieved |= (net ? HARDEN_NET_SUPERVISED : 0) |
		       (flags & SECCOMP_FILES_NOTIFY ? HARDEN_FILES_SUPERVISED : 0);
	return 0;
}

static int step_mount_namespace(step_ctx *x)
{
	if (unshare(CLONE_NEWNS) < 0) {
		int e = errno;
		(void)snprintf(x->msg, x->size,
			       "cannot make a mount namespace for protected paths");
		return -e;
	}
	x->achieved |= HARDEN_MNT_NS;
	return 0;
}

/*
 * Protected paths, before Landlock forbids mounting. Without a mount namespace the
 * policy-bearing ones fail the call (the provider refuses earlier when the probe saw none);
 * .git and listed paths then go unprotected, as `policy` and `probe` report.
 */
/* mkdir -p of @path's directories, each 0755 (beneath the new /tmp: the command's own). */
static void make_parents(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n >= sizeof(buf))
		return;
	memcpy(buf, path, n + 1);
	for (char *s = buf + 1;; s++) {
		s = strchr(s, '/');
		if (s)
			*s = '\0';
		(void)mkdir(buf, 0755);
		if (!s)
			return;
		*s = '/';
	}
}

#define TMP_KEEP_MAX 64

/*
 * /tmp of the command's own (docs/design/paths.md): the session's private directory, or a
 * fresh tmpfs, mounted over the host's; a writable root that lay beneath the host's /tmp
 * (a workspace in /tmp/ws) is held by a descriptor opened before and bound back at its path.
 */
static int mount_own_tmp(step_ctx *x, int source)
{
	const confine_plan *plan = x->plan;
	int keep[TMP_KEEP_MAX];
	size_t n = 0;
	int r = 0;
	for (char **k = plan->tmp_keep; k && *k && r >= 0; k++) {
		if (n == TMP_KEEP_MAX)
			r = -E2BIG;
		else if ((keep[n] = open(*k, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			r = -errno;
		else
			n++;
	}
	if (r >= 0 && source >= 0) {
		char from[64];
		(void)snprintf(from, sizeof(from), "/proc/self/fd/%d", source);
		r = mount(from, "/tmp", NULL, MS_BIND | MS_REC, NULL) < 0 ? -errno : 0;
	} else if (r >= 0) {
		char opts[64] = "mode=1777";
		if (plan->tmp_bytes)
			(void)snprintf(opts, sizeof(opts), "mode=1777,size=%llu",
				       (unsigned long long)plan->tmp_bytes);
		r = mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0 ? -errno : 0;
	}
	for (size_t i = 0; r >= 0 && i < n; i++) {
		char from[64];
		(void)snprintf(from, sizeof(from), "/proc/self/fd/%d", keep[i]);
		make_parents(plan->tmp_keep[i]);
		r = mount(from, plan->tmp_keep[i], NULL, MS_BIND | MS_REC, NULL) < 0 ? -errno : 0;
	}
	for (size_t i = 0; i < n; i++)
		(void)close(keep[i]);
	if (r < 0)
		(void)snprintf(x->msg, x->size,
			       "landlock-run: cannot give the command a /tmp of "
			       "its own: %s",
			       strerror(-r));
	return r;
}

static int step_mounts(step_ctx *x)
{
	const protect_ops *m = &x->plan->mounts;
	if (x->plan->tmp_own) {
		if (!(x->achieved & HARDEN_MNT_NS)) {
			(void)snprintf(
				x->msg, x->size,
				"landlock-run: cannot give the command a /tmp of its own: no "
				"mount namespace here");
			return -EPERM;
		}
		/* Nothing done here may reach the host's mount table. */
		if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0) {
			int e = errno;
			(void)snprintf(x->msg, x->size,
				       "landlock-run: cannot make the mounts private: %s",
				       strerror(e));
			return -e;
		}
		/*
		 * The session's directory lies in the store's, which the mounts below hide from
		 * every call: held by a descriptor first, as the workspace beneath /tmp is.
		 */
		int source = -1;
		if (x->plan->tmp_source &&
		    (source = open(x->plan->tmp_source, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
			int e = errno;
			(void)snprintf(
				x->msg, x->size,
				"landlock-run: cannot give the command a /tmp of its own: %s",
				strerror(e));
			return -e;
		}
		int r = apply_mounts(x->plan, false, x->msg, x->size);
		if (r >= 0)
			r = mount_own_tmp(x, source);
		if (source >= 0)
			(void)close(source);
		if (r >= 0)
			r = apply_mounts(x->plan, true, x->msg, x->size);
		return r;
	}
	if (m->n == 0)
		return 0;
	if (x->achieved & HARDEN_MNT_NS)
		return apply_mounts(x->plan, false, x->msg, x->size);
	if (!x->plan->mounts_required)
		return 0;
	(void)snprintf(x->msg, x->size, "landlock-run: cannot protect %s: no mount namespace here",
		       m->v[m->n - 1].path);
	return -EPERM;
}

static int step_landlock(step_ctx *x)
{
	landlock_status st;
	int r = landlock_restrict(&x->plan->landlock, &st, x->msg, x->size);
	if (r >= 0)
		x->partial = st.partial;
	return r;
}

static int step_drop_caps(step_ctx *x)
{
	unsigned caps = harden_drop_caps();
	if (caps & HARDEN_FAILED) {
		(void)snprintf(x->msg, x->size, "landlock-run: cannot drop capabilities");
		return -EPERM;
	}
	x->achieved |= caps;
	return 0;
}

static int step_filter(step_ctx *x)
{
	int r = install_filter(x->filter_flags, x->sock);
	if (r < 0) {
		const char *desc = errno_desc(-r);
		(void)snprintf(x->msg, x->size,
			       "landlock-run: cannot install the system-call filter: %s",
			       desc ? desc : "Unknown error");
		return r;
	}
	x->achieved |= (unsigned)r;
	return 0;
}

/* Each step, by its place in the order (confine_step). */
static int (*const steps[_STEP_MAX])(step_ctx *x) = {
	[STEP_LIMITS] = step_limits,
	[STEP_NAMESPACES] = step_namespaces,
	[STEP_PID_NAMESPACE] = step_pid_namespace,
	[STEP_NET_NAMESPACE] = step_net_namespace,
	[STEP_LOOPBACK] = step_loopback,
	[STEP_MOUNT_NAMESPACE] = step_mount_namespace,
	[STEP_MOUNTS] = step_mounts,
	[STEP_LISTENER] = step_listener,
	[STEP_LANDLOCK] = step_landlock,
	[STEP_DROP_CAPS] = step_drop_caps,
	[STEP_FILTER] = step_filter,
};

/* The plan's steps from @from on: 0, 1 (the rest ran in a PID namespace), or -errno. */
static int run_steps(step_ctx *x, int from)
{
	int r = 0;
	for (int s = from; r == 0 && s < _STEP_MAX; s++)
		if (x->plan->steps & STEP(s))
			r = steps[s](x);
	return r;
}

int confine_self(const confine_plan *plan, int sock, const int *cgroup_procs,
		 confine_pid_fork *fork, unsigned *ret_achieved, bool *ret_partial, char *msg,
		 size_t size)
{
	step_ctx x = {.plan = plan,
		      .sock = sock,
		      .cgroup_procs = cgroup_procs,
		      .fork = fork,
		      .parent_fd = -1,
		      .ret_achieved = ret_achieved,
		      .ret_partial = ret_partial,
		      .filter_flags = plan->filter_flags,
		      .msg = msg,
		      .size = size};
	int r = run_steps(&x, 0);
	if (r == 1)
		return 1; /* the first process of the namespace reported for itself */
	*ret_achieved = x.achieved;
	*ret_partial = x.partial;
	return r;
}
