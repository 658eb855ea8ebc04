/* SPDX-License-Identifier: MIT */
/*
 * The processes one call starts, and the guarantee that none outlives it: setsid'd,
 * double-forked and nohup'ed children included, whatever mode ran them.
 *
 * The mechanism is a child subreaper (prctl PR_SET_CHILD_SUBREAPER): an orphan is re-parented to
 * the nearest subreaper among its ancestors instead of init, so everything a command starts
 * stays below the subreaper, and once the command is done the subreaper kills its children
 * until none is left. It needs no namespace (the Landlock backend exists for hosts where bwrap
 * and namespaces cannot run), no delegated cgroup, and keeps setsid(), process groups and ptys
 * working for the command. Why not the alternatives: a PID namespace needs an init process of
 * its own on every call and privileges Landlock hosts often lack; cgroup.kill needs a delegated
 * cgroup v2 tree; a process-group kill misses setsid'd children.
 *
 * Who is the subreaper, on both backends (bwrap's PID namespace alone leaves a gap: see
 * tree_spawn()):
 *  - this process, when nothing else can become its child meanwhile: it is single-threaded and
 *    has no child (the CLI; a simple library caller). It becomes a subreaper for the call and
 *    kills and reaps every child it has at the end. No extra process.
 *  - otherwise a monitor: a forked process that is the subreaper, spawns the command, reports
 *    its status through a pipe, and kills what is left when told to or when we go away. A
 *    server forks it through its spawner (spawner.c), a small process forked at its start.
 *
 * A command can only leave the tree by killing its subreaper; Landlock's signal scope (ABI 6)
 * keeps it from signalling anything outside its domain, and `probe` says when that is missing.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine.h"
#include "../net/net.h"
#include "metadata.h"

/* What the monitor tells the caller, one fixed-size record per write (atomic on a pipe). */
typedef struct monitor_msg {
	int kind; /* MSG_* */
	pid_t pid;
	int status;
	unsigned achieved;
	unsigned meta_refused; /* MSG_ENDED: metadata changes refused outside the roots so far */
	unsigned net_refused;  /* MSG_ENDED: network calls refused (tree_net_refused()) */
	char net_refused_hosts[640]; /* MSG_ENDED: what they named, one a line, cut at a line */
	dsb_error err;		     /* MSG_FAILED */
} monitor_msg;

_Static_assert(sizeof(monitor_msg) <= PIPE_BUF, "one monitor message must be written at once");

enum {
	MSG_STARTED = 1,
	MSG_FAILED,
	MSG_ENDED
};

/* Reads up to @size bytes of /proc @path into @buf (NUL-terminated); -errno. */
static ssize_t read_proc(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int e = errno;
	(void)close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return n;
}

/*
 * Field @n (1-based, n >= 4) of a /proc/PID/stat line as a number, -1 if absent. The command
 * name (field 2) may hold anything, spaces and parentheses included: count after its last ')'.
 */
static long stat_field(const char *line, int n)
{
	const char *p = strrchr(line, ')');
	if (!p)
		return -1;
	p++; /* " S ppid ...": field 3 starts after this space */
	for (int field = 3; field < n; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -1;
	}
	char *end;
	long v = strtol(p, &end, 10);
	return end == p ? -1 : v;
}

/*
 * This process's children, into @pids (at most @max); their number, or -errno. From the
 * kernel's per-thread list when it has one (CONFIG_PROC_CHILDREN), else by scanning /proc.
 */
static int list_children(pid_t *pids, int max)
{
	char path[300], buf[4096];
	(void)snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)gettid());
	ssize_t n = read_proc(path, buf, sizeof(buf));
	int count = 0;
	if (n >= 0) {
		for (char *p = buf, *end; count < max && *p; p = end) {
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			pids[count++] = (pid_t)v;
		}
		return count;
	}

	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	pid_t self = getpid();
	for (struct dirent *e; count < max && (e = readdir(d));) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (read_proc(path, buf, sizeof(buf)) < 0)
			continue;
		if (stat_field(buf, 4) == self)
			pids[count++] = (pid_t)strtol(e->d_name, NULL, 10);
	}
	(void)closedir(d);
	return count;
}

/*
 * Kills every child of this process and every process that becomes one as their parents die,
 * until none is left; reaps them all. Our own unreaped children cannot have their pids reused,
 * so kill() by pid is exact. A killed process forks no more, so each round removes a
 * generation and the loop ends; the bound only guards against a /proc that lies.
 */
static void kill_children(pid_t leader)
{
	if (leader > 0)
		(void)kill(-leader, SIGKILL); /* the bulk at once: the command's process group */
	for (int round = 0; round < 100000; round++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		pid_t pids[512];
		int n = list_children(pids, (int)ELEMENTSOF(pids));
		if (n < 0)
			return; /* no /proc to list them: the group kill above is all we can do */
		if (n == 0) {
			/* Nothing listed: done once nothing is left to reap either. */
			if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
				return;
			continue;
		}
		for (int i = 0; i < n; i++)
			(void)kill(pids[i], SIGKILL);
		(void)waitpid(-1, NULL, 0);
	}
}

bool tree_single_threaded(void)
{
	char buf[4096];
	return read_proc("/proc/self/stat", buf, sizeof(buf)) >= 0 &&
	       stat_field(buf, 20) == 1; /* field 20: num_threads */
}

/* True when nothing but the command can become our child while it runs: one thread, no child. */
static bool can_reap_here(void)
{
	if (!tree_single_threaded())
		return false;
	pid_t one;
	return list_children(&one, 1) == 0;
}

static int write_msg(int fd, const monitor_msg *m)
{
	ssize_t k;
	while ((k = write(fd, m, sizeof(*m))) < 0 && errno == EINTR)
		;
	return k == (ssize_t)sizeof(*m) ? 0 : -EIO;
}

static int read_msg(int fd, monitor_msg *m)
{
	size_t got = 0;
	while (got < sizeof(*m)) {
		ssize_t k = read(fd, (char *)m + got, sizeof(*m) - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EPIPE;
		got += (size_t)k;
	}
	return 0;
}

/*
 * The monitor, a forked copy of the caller or of its spawner: keeps only the descriptors it
 * needs (a multi-threaded caller's other pipes must not be held open here), spawns the
 * command, reports its start and end, reaps orphans as they die, and kills what is left when
 * the caller closes @ctl (asked to, or gone).
 */
/*
 * The allow-list's proxy *@proxy starts serving at the command's first supervised call: every
 * connect() is one, that to the proxy included (it waits in the listener's backlog meanwhile),
 * and a command that never calls one costs no thread. A proxy that cannot start is closed, so
 * connections to it are refused rather than left waiting.
 */
static void proxy_wanted(net_proxy **proxy)
{
	int r = *proxy ? net_proxy_start(*proxy) : 0;
	if (r < 0 && r != -EBUSY) {
		net_proxy_free(*proxy);
		*proxy = NULL;
	}
}

/*
 * What polling the metadata listener *@fd returned (the run loop's or the monitor's): at the
 * first call a worker thread (*@worker) takes it, this call included; without a thread the call
 * is answered here. Hung up (no process of the run left to call) or failed, it is closed: its
 * callers then get ENOSYS from the kernel, never a pass.
 */
static void listener_ready(meta_supervisor *s, meta_worker **worker, net_proxy **proxy, int *fd,
			   short revents)
{
	if (*fd < 0 || !revents)
		return;
	if (revents & POLLIN) {
		proxy_wanted(proxy);
		if (!*worker && meta_worker_start(worker, s, *fd) == 0) {
			*fd = -1; /* the worker's now */
			return;
		}
		if (meta_handle(s, *fd) >= 0)
			return;
	}
	(void)close(*fd);
	*fd = -1;
}

/*
 * A proxy for the listener @fd (taken) with @plan's rules, to start at the first supervised call
 * (proxy_wanted()), and tells the supervisor @s what the command's network is. Without a proxy
 * the listener is closed: the command's connections to it are refused, never let through.
 */
static net_proxy *network_prepare(const confine_plan *plan, meta_supervisor *s, int fd)
{
	if (!plan_net_restricted(plan))
		return NULL;
	meta_net net = {
		.supervised = true, .host_network = !plan->net_ns, .roots = plan->net_roots};
	meta_supervisor_set_net(s, &net);
	if (fd < 0)
		return NULL;
	net_rules rules = {
		.allow = plan->net_allow, .deny = plan->net_deny, .hosts = plan->net_hosts};
	net_proxy *proxy = NULL;
	if (net_proxy_new(&rules, &proxy) < 0) {
		(void)close(fd);
		return NULL;
	}
	if (net_proxy_listen(proxy, fd) < 0)
		proxy = (net_proxy_free(proxy), NULL);
	return proxy;
}

/*
 * What the run's network refusals named so far: the proxy's hosts, then the addresses the
 * supervisor refused, each once, appended to *@io (NULL-terminated). -ENOMEM.
 */
static int network_refused(net_proxy *proxy, meta_supervisor *s, unsigned *ret_count, char ***io)
{
	_cleanup_strv_free_ char **hosts = proxy ? net_proxy_refused(proxy) : NULL;
	_cleanup_strv_free_ char **addrs = meta_net_refused(s);
	if ((proxy && !hosts) || !addrs)
		return -ENOMEM;
	*ret_count = atomic_load(&s->net_refused) + (unsigned)strv_length(hosts);
	int r = 0;
	for (size_t i = 0; r >= 0 && hosts && hosts[i]; i++)
		if (!strv_contains(*io, hosts[i]))
			r = strv_push(io, hosts[i]);
	for (size_t i = 0; r >= 0 && addrs[i]; i++)
		if (!strv_contains(*io, addrs[i]))
			r = strv_push(io, addrs[i]);
	return r;
}

/* Packs @v into @buf, one a line, as many whole lines as fit. */
static void pack_lines(char *const *v, char *buf, size_t size)
{
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; v && v[i]; i++) {
		size_t k = strlen(v[i]);
		if (n + k + 2 > size)
			break;
		memcpy(buf + n, v[i], k);
		buf[n + k] = '\n';
		n += k + 1;
		buf[n] = '\0';
	}
}

_Noreturn void tree_monitor_run(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *o,
				int status_w, int ctl_r)
{
	/* The descriptors we keep, moved to 3..7 in that order; everything else closed. */
	int keep[5] = {status_w, ctl_r, o->stdin_fd, o->stdout_fd, o->stderr_fd};
	int high[5];
	for (int i = 0; i < 5; i++)
		high[i] = keep[i] < 0 ? -1 : fcntl(keep[i], F_DUPFD_CLOEXEC, 64);
	for (int i = 0; i < 5; i++)
		if (high[i] >= 0 && dup3(high[i], 3 + i, O_CLOEXEC) < 0)
			_exit(125);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 8U, ~0U, 0U) < 0)
#endif
		for (int fd = 8; fd < 65536; fd++)
			(void)close(fd);

	(void)prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
	/* A copy of the caller's memory, secrets included: nobody may read or trace it. */
	(void)prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);

	dsb_spawn_options so = *o;
	so.stdin_fd = high[2] < 0 ? -1 : 5;
	so.stdout_fd = high[3] < 0 ? -1 : 6;
	so.stderr_fd = high[4] < 0 ? -1 : 7;
	monitor_msg m;
	memset(&m, 0, sizeof(m));
	int meta_fd = -1, proxy_fd = -1;
	int r = confined_spawn(c, mode, &so, &meta_fd, &proxy_fd, SPAWN_DIE_WITH_PARENT, &m.pid,
			       &m.achieved, &m.err);
	m.kind = r < 0 ? MSG_FAILED : MSG_STARTED;
	if (write_msg(3, &m) < 0 || r < 0)
		_exit(r < 0 ? 125 : 1);
	for (int fd = 5; fd <= 7; fd++)
		(void)close(fd);

	pid_t leader = m.pid;
	int pidfd = pidfd_open_raw(leader);
	bool ended = false;
	const confine_plan *plan = confined_plan(c);
	meta_supervisor sup;
	meta_supervisor_init(&sup, plan ? plan->meta_roots : NULL, plan ? plan->meta_fixed : NULL);
	net_proxy *proxy = network_prepare(plan, &sup, proxy_fd); /* ended with this process */
	meta_worker *worker = NULL;				  /* likewise */
	for (;;) {
		/*
		 * Woken by the leader's end, the caller, or the tree's first metadata call (a
		 * worker takes the rest); each second anyway, to reap orphans.
		 */
		struct pollfd p[3] = {{.fd = 4, .events = POLLIN},
				      {.fd = ended ? -1 : pidfd, .events = POLLIN},
				      {.fd = meta_fd, .events = POLLIN}};
		(void)poll(p, 3, 1000);
		listener_ready(&sup, &worker, &proxy, &meta_fd, p[2].revents);
		int status;
		pid_t w;
		while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
			if (w != leader)
				continue; /* an orphan that ended by itself */
			m = (monitor_msg){.kind = MSG_ENDED,
					  .pid = leader,
					  .status = status,
					  .meta_refused = atomic_load(&sup.refused)};
			_cleanup_strv_free_ char **named = NULL;
			if (network_refused(proxy, &sup, &m.net_refused, &named) >= 0)
				pack_lines(named, m.net_refused_hosts, sizeof(m.net_refused_hosts));
			(void)write_msg(3, &m);
			ended = true;
		}
		if (p[0].revents)
			break; /* told to finish, or the caller is gone */
	}
	kill_children(leader);
	_exit(0);
}

int tree_spawn(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *opts, bool reap,
	       proc_tree *t, dsb_error *reterr)
{
	*t = (proc_tree){.event_fd = -1, .ctl_fd = -1, .meta_fd = -1};
	/*
	 * bwrap's PID namespace is not enough on its own: its init dies with bwrap only once it
	 * has armed --die-with-parent, and bwrap killed before that (a call cancelled, or its
	 * caller killed, as the sandbox is being set up) leaves the init orphaned, running the
	 * command with its daemons. Reaped like any other tree, the orphan is re-parented to the
	 * subreaper, which ends it (tests/e2e/t-serve.sh "storm").
	 */
	if (!reap || can_reap_here()) {
		if (reap) {
			int was = 0;
			(void)prctl(PR_GET_CHILD_SUBREAPER, &was, 0L, 0L, 0L);
			t->was_subreaper = was != 0;
			if (!was && prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) < 0)
				return dsb_fail_errno(reterr, DSB_E_IO, errno,
						      "cannot become a child subreaper");
			t->reaping = true;
		}
		int proxy_fd = -1;
		int r = confined_spawn(c, mode, opts, &t->meta_fd, &proxy_fd,
				       reap ? SPAWN_DIE_WITH_PARENT : 0, &t->leader, &t->achieved,
				       reterr);
		const confine_plan *plan = confined_plan(c);
		meta_supervisor_init(&t->meta, plan ? plan->meta_roots : NULL,
				     plan ? plan->meta_fixed : NULL);
		if (r < 0) {
			tree_done(t);
			return r;
		}
		t->proxy = network_prepare(plan, &t->meta, proxy_fd);
		t->event_fd = pidfd_open_raw(t->leader); /* < 0: tree_check() polls instead */
		return 0;
	}

	int status_pipe[2], ctl_pipe[2];
	if (pipe2(status_pipe, O_CLOEXEC) < 0)
		return dsb_fail_errno(reterr, DSB_E_IO, errno, "cannot create a pipe");
	if (pipe2(ctl_pipe, O_CLOEXEC) < 0) {
		int e = errno;
		(void)close(status_pipe[0]);
		(void)close(status_pipe[1]);
		return dsb_fail_errno(reterr, DSB_E_IO, e, "cannot create a pipe");
	}
	/* The spawner's fork is cheap; ours copies a threaded process (spawner.c). */
	bool spawned = spawner_request(c, mode, opts, status_pipe[1], ctl_pipe[0]) == 0;
	pid_t pid = spawned ? -1 : fork();
	if (pid == 0)
		tree_monitor_run(c, mode, opts, status_pipe[1], ctl_pipe[0]);
	int e = errno;
	(void)close(status_pipe[1]);
	(void)close(ctl_pipe[0]);
	t->event_fd = status_pipe[0];
	t->ctl_fd = ctl_pipe[1];
	if (pid < 0 && !spawned) {
		tree_done(t);
		return dsb_fail_errno(reterr, DSB_E_IO, e, "cannot fork");
	}
	t->monitor = pid;

	monitor_msg m;
	int r = read_msg(t->event_fd, &m);
	if (r < 0 || m.kind != MSG_STARTED) {
		tree_done(t);
		if (r >= 0 && m.kind == MSG_FAILED) {
			if (reterr)
				*reterr = m.err;
			return -(int)m.err.code;
		}
		return dsb_fail(reterr, DSB_E_IO, "the monitor process failed");
	}
	t->leader = m.pid;
	t->achieved = m.achieved;
	return 0;
}

int tree_check(proc_tree *t, int *ret_status)
{
	if (t->ended) {
		*ret_status = t->status;
		return 1;
	}
	if (t->monitor) {
		struct pollfd p = {.fd = t->event_fd, .events = POLLIN};
		if (poll(&p, 1, 0) <= 0)
			return 0;
		monitor_msg m;
		memset(&m, 0, sizeof(m));
		if (read_msg(t->event_fd, &m) < 0 || m.kind != MSG_ENDED)
			m.status =
				W_EXITCODE(125, 0); /* the monitor died: nothing left to wait for */
		t->status = m.status;
		t->meta_refused = m.meta_refused;
		t->net_refused = m.net_refused;
		m.net_refused_hosts[sizeof(m.net_refused_hosts) - 1] = '\0';
		t->net_refused_hosts = strdup(m.net_refused_hosts); /* NULL: none named */
	} else {
		int status;
		pid_t w;
		if (t->reaping) {
			/* Every child is the command's: orphans that ended are reaped as we go. */
			bool found = false;
			while (!found && (w = waitpid(-1, &status, WNOHANG)) > 0)
				found = w == t->leader;
			if (!found)
				return 0;
		} else {
			w = waitpid(t->leader, &status, WNOHANG);
			if (w != t->leader)
				return w < 0 && errno != EINTR ? -errno : 0;
		}
		t->status = status;
	}
	t->ended = true;
	*ret_status = t->status;
	return 1;
}

void tree_signal(const proc_tree *t, int sig)
{
	/* Once reaped, the leader's pid may name someone else's process: tree_done() ends the
	 * rest by another route. */
	if (t->ended || t->leader <= 0)
		return;
	if (kill(-t->leader, sig) < 0)
		(void)kill(t->leader, sig);
}

void tree_done(proc_tree *t)
{
	if (t->monitor) {
		/* Closing the control pipe is the monitor's cue to kill what is left and exit. */
		if (t->ctl_fd >= 0)
			(void)close(t->ctl_fd);
		t->ctl_fd = -1;
		if (t->monitor > 0) {
			while (waitpid(t->monitor, NULL, 0) < 0 && errno == EINTR)
				;
		} else {
			/* The spawner's child: its status pipe ends when it has. */
			monitor_msg m;
			while (t->event_fd >= 0 && read_msg(t->event_fd, &m) == 0)
				;
		}
	} else if (t->reaping) {
		kill_children(t->ended ? 0 : t->leader);
		if (!t->was_subreaper)
			(void)prctl(PR_SET_CHILD_SUBREAPER, 0L, 0L, 0L, 0L);
	} else if (t->leader > 0 && !t->ended) {
		/* Not ours to reap beyond the leader (bwrap contains the rest): end and reap it. */
		(void)kill(t->leader, SIGKILL);
		while (waitpid(t->leader, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (t->event_fd >= 0)
		(void)close(t->event_fd);
	if (t->ctl_fd >= 0)
		(void)close(t->ctl_fd);
	/* After the tree: nothing is left to connect through the proxy or call the worker. */
	net_proxy_free(t->proxy);
	meta_worker_stop(t->meta_worker);
	if (t->meta_fd >= 0)
		(void)close(t->meta_fd);
	meta_supervisor_done(&t->meta);
	free(t->net_refused_hosts);
	*t = (proc_tree){.event_fd = -1, .ctl_fd = -1, .meta_fd = -1};
}

void tree_supervise(proc_tree *t, short revents)
{
	listener_ready(&t->meta, &t->meta_worker, &t->proxy, &t->meta_fd, revents);
}

unsigned tree_meta_refused(const proc_tree *t)
{
	return t->meta_refused + atomic_load(&t->meta.refused);
}

int tree_net_refused(proc_tree *t, unsigned *ret_count, char ***ret_named)
{
	*ret_count = 0;
	*ret_named = NULL;
	int r = 0;
	if (t->monitor) {
		*ret_count = t->net_refused;
		for (char *p = t->net_refused_hosts, *nl; r >= 0 && p && (nl = strchr(p, '\n'));
		     p = nl + 1) {
			*nl = '\0';
			r = strv_push(ret_named, p);
			*nl = '\n';
		}
	} else
		r = network_refused(t->proxy, &t->meta, ret_count, ret_named);
	if (r < 0)
		*ret_named = strv_free(*ret_named);
	return r;
}
