/* SPDX-License-Identifier: MIT */
/*
 * The spawner: a small, single-threaded process forked once, while its parent is still small
 * and has no thread, that forks each call's monitor (tree.c) on request.
 *
 * Why: a threaded caller (the MCP server) cannot be a call's subreaper, so every call of its
 * gets a monitor process, and forking the server itself for it costs about 4 ms a call on a
 * small VM: the copy of a threaded process's page tables, copy-on-write faults on both sides
 * while the server's threads keep writing, the teardown (docs/design/server.md). A fork of the
 * spawner costs a fraction: it is a copy of the parent from before the threads and the heap.
 * The monitor is the same code with the same guarantees (monitor.c); only its parent changes.
 *
 * A request is one header message, carrying the monitor's descriptors (SCM_RIGHTS: its status
 * pipe's write end, its control pipe's read end, then the command's stdin, stdout and stderr
 * when given), followed by the spawn as a record (spawn_request: the dsb_confined with its
 * plan, the mode, the options; record.c). The
 * caller then reads the monitor's first message from the status pipe, as with a monitor it
 * forked; a request the spawner cannot serve closes that pipe unanswered, which the caller reads
 * as a failed monitor. Senders take a lock, so requests never interleave.
 *
 * The spawner holds no call's control pipe write end: a caller that dies (even by SIGKILL)
 * still closes every control pipe, so every monitor kills its tree. The spawner itself dies with
 * its parent (PR_SET_PDEATHSIG) or when the socket closes; its monitors then live on, watching
 * their control pipes, until their trees are gone.
 *
 * Warm monitors. Even the spawner's fork costs a call about a millisecond on a small VM, and
 * each process a request passes through costs a wakeup, so the spawner forks monitors ahead of
 * need and hands the caller a socket to each (SPAWNER_WARM of them): a request goes straight to
 * a warm monitor, in the same header, descriptors and record, and the spawner is not woken. A
 * warm monitor is a fresh fork that has served nobody, holding only its socket; it serves one
 * request and is gone with its tree, as any monitor, and idle it ends when its socket closes
 * (the caller gone or ending). The spawner replaces one when it has ended, so that no fork
 * competes with a call for the CPUs (on two, that cost the monitor half a millisecond). With
 * none warm (a burst of calls), a request goes to the spawner, which forks its monitor.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "confine.h"

#define REQUEST_MAGIC 0x53425344u /* "DSBS" */
#define WARM_MAGIC    0x57425344u /* "DSBW": the spawner hands the caller a warm monitor */
/* A command line and environment fit ARG_MAX; the rest of a plan is small. */
#define REQUEST_MAX ((size_t)64 << 20)
/* The monitor's two pipe ends, then stdin, stdout, stderr. */
#define REQUEST_FDS 5
/* Monitors forked ahead of need, waiting for a request each. */
#define SPAWNER_WARM 2

typedef struct request_header {
	uint32_t magic;
	uint32_t fd_mask; /* bit i: the i-th of stdin, stdout, stderr was sent */
	uint64_t len;	  /* of the encoded spawn that follows */
} request_header;

static struct {
	pthread_mutex_t lock;
	int fd;			/* our end of the socket; -1: no spawner */
	pid_t pid;		/* 0: none */
	int warm[SPAWNER_WARM]; /* sockets to warm monitors the spawner handed us */
	size_t n_warm;
} spawner = {PTHREAD_MUTEX_INITIALIZER, -1, 0, {0}, 0};

/* --- the request ------------------------------------------------------------------------------ */

#define FIELD_C_PLAN confine_plan *
#define FIELD_K_PLAN FIELD_PTR
#define FIELD_T_PLAN (&confine_plan_record)

/* What a monitor is asked to spawn: monitor_run()'s arguments but the descriptors. */
#define SPAWN_REQUEST_FIELDS(X) \
	X(I32, mode)            \
	X(STRV, argv)           \
	X(BOOL, landlock)       \
	X(STR, backend)         \
	X(PLAN, plan)           \
	X(STR, cwd)             \
	X(STRV, envp)           \
	X(BOOL, new_session)

typedef struct spawn_request {
	RECORD_MEMBERS(SPAWN_REQUEST_FIELDS)
} spawn_request;

#define RECORD spawn_request
/* The plan's entry measures a pointer, as every field's entry measures the field. */
/* NOLINTNEXTLINE(bugprone-sizeof-expression) */
static const record_field spawn_request_fields[] = {SPAWN_REQUEST_FIELDS(RECORD_FIELD)};
static const record_type spawn_request_record = RECORD_TYPE(spawn_request_fields);
#undef RECORD

/* --- the spawner process --------------------------------------------------------------------- */

/*
 * One request: its header and descriptors into @fds (-1 where none), its spawn into a new
 * buffer. 1 with a request, 0 at the end of the socket, -1 on a malformed one (its
 * descriptors are closed: the caller reads a failed monitor).
 */
static int receive(int sock, int fds[REQUEST_FDS], char **ret_buf, size_t *ret_len)
{
	request_header h = {0};
	char control[CMSG_SPACE(REQUEST_FDS * sizeof(int))];
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control,
			     .msg_controllen = sizeof(control)};
	for (int i = 0; i < REQUEST_FDS; i++)
		fds[i] = -1;
	ssize_t k;
	while ((k = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL)) < 0 && errno == EINTR)
		;
	if (k <= 0)
		return 0;
	size_t n_fds = 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			n_fds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			if (n_fds > REQUEST_FDS)
				n_fds = REQUEST_FDS;
			memcpy(fds, CMSG_DATA(cm), n_fds * sizeof(int));
		}
	/* The descriptors in order: status, control, then the stdio the mask names. */
	int given[REQUEST_FDS] = {fds[0], fds[1], -1, -1, -1};
	size_t next = 2;
	for (int i = 0; i < 3; i++)
		if (h.fd_mask & (1u << i))
			given[2 + i] = next < n_fds ? fds[next++] : -1;
	memcpy(fds, given, sizeof(given));

	*ret_buf = NULL;
	if ((size_t)k != sizeof(h) || h.magic != REQUEST_MAGIC || h.len > REQUEST_MAX ||
	    n_fds < 2 || !(*ret_buf = malloc(h.len ? h.len : 1)) ||
	    fd_read_all(sock, *ret_buf, h.len) < 0) {
		free(*ret_buf);
		*ret_buf = NULL;
		for (int i = 0; i < REQUEST_FDS; i++)
			if (fds[i] >= 0)
				(void)close(fds[i]);
		return (size_t)k == sizeof(h) && h.magic == REQUEST_MAGIC ? -1 : 0;
	}
	*ret_len = h.len;
	return 1;
}

/*
 * Sends a request (fds as receive() returns them: status, control, stdin, stdout, stderr; -1
 * where none) and its record on @sock. 0, or -errno.
 */
static int send_request(int sock, const int fds[REQUEST_FDS], const char *buf, size_t len)
{
	request_header h = {.magic = REQUEST_MAGIC, .len = len};
	int sent[REQUEST_FDS] = {fds[0], fds[1]};
	size_t n_fds = 2;
	for (int i = 0; i < 3; i++)
		if (fds[2 + i] >= 0) {
			h.fd_mask |= 1u << i;
			sent[n_fds++] = fds[2 + i];
		}
	char control[CMSG_SPACE(REQUEST_FDS * sizeof(int))];
	memset(control, 0, sizeof(control));
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control,
			     .msg_controllen = CMSG_SPACE(n_fds * sizeof(int))};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
	memcpy(CMSG_DATA(cm), sent, n_fds * sizeof(int));
	ssize_t k;
	while ((k = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (k < 0)
		return -errno;
	if ((size_t)k != sizeof(h))
		return -EIO;
	/* A peer gone is an error, never a SIGPIPE: the spawner takes no signal's default. */
	for (size_t off = 0; off < len;) {
		ssize_t n = send(sock, buf + off, len - off, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		off += (size_t)n;
	}
	return 0;
}

/* Serves one request in this new process, which becomes its monitor. */
static _Noreturn void serve_request(const int fds[REQUEST_FDS], const char *buf, size_t len)
{
	spawn_request q = {0};
	if (record_decode(&spawn_request_record, buf, len, &q) < 0 || !q.argv || !q.argv[0])
		_exit(125); /* the caller reads a failed monitor */
	dsb_confined c = {
		.argv = q.argv, .landlock = q.landlock, .backend = q.backend, .plan = q.plan};
	dsb_spawn_options o = {.stdin_fd = fds[2],
			       .stdout_fd = fds[3],
			       .stderr_fd = fds[4],
			       .cwd = q.cwd,
			       .envp = q.envp,
			       .new_session = q.new_session};
	monitor_run(&c, (dsb_mode)q.mode, &o, fds[0], fds[1]);
}

/* The largest mapping prefault() populates. */
#define PREFAULT_MAX ((unsigned long)8 << 20)

/*
 * A fresh fork shares every page with its parent until it writes one, and each first write
 * is a copy; a request's decoding writes a few dozen. They are copied here, while waiting, not
 * on the call's path: every private writable mapping of up to PREFAULT_MAX is populated for
 * writing (Linux 5.14; before it, nothing happens and the copies come later, as before).
 */
static void prefault(void)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return;
	char line[512];
	while (fgets(line, sizeof(line), maps)) {
		/*
		 * START-END PERMS ...: an address the kernel listed; not a reservation (a
		 * sanitizer's shadow is terabytes).
		 */
		char *at;
		unsigned long start = strtoul(line, &at, 16), end = 0;
		if (*at == '-')
			end = strtoul(at + 1, &at, 16);
		bool writable = *at == ' ' && strncmp(at + 1, "rw-p", 4) == 0;
		if (!writable || end <= start || end - start > PREFAULT_MAX)
			continue;
		/* NOLINTNEXTLINE(performance-no-int-to-ptr) */
		(void)madvise((void *)(uintptr_t)start, end - start, MADV_POPULATE_WRITE);
	}
	(void)fclose(maps);
}

/* A warm monitor: the spawner's fresh fork, waiting on @link (fd 4) for the one request. */
static _Noreturn void warm_main(void)
{
	prefault();
	int fds[REQUEST_FDS];
	char *buf = NULL;
	size_t len = 0;
	int r;
	/* A signal is nobody's business here (the spawner blocks none): only the request. */
	while ((r = receive(4, fds, &buf, &len)) < 0)
		;
	if (r == 0)
		_exit(0); /* the spawner is gone or ending: nothing to serve */
	(void)close(4);
	serve_request(fds, buf, len);
}

/* The warm monitors handed to the caller and not yet ended: a pidfd of each; -1: a free slot. */
typedef struct warm_pool {
	int pidfd[SPAWNER_WARM];
} warm_pool;

/* Sends the caller @link, a socket to a warm monitor. 0, or -errno. */
static int send_link(int sock, int link)
{
	request_header h = {.magic = WARM_MAGIC};
	char control[CMSG_SPACE(sizeof(int))];
	memset(control, 0, sizeof(control));
	struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = control,
			     .msg_controllen = sizeof(control)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &link, sizeof(int));
	ssize_t k;
	while ((k = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return k < 0 ? -errno : (size_t)k != sizeof(h) ? -EIO : 0;
}

/* Forks a warm monitor into a free slot of @pool and hands the caller its socket: whether one
 * was. Without pidfds (Linux 5.3) a monitor's end cannot be watched, and there is no pool. */
static bool warm_up(warm_pool *pool, int sock)
{
	int slot = -1;
	for (int i = 0; i < SPAWNER_WARM && slot < 0; i++)
		if (pool->pidfd[i] < 0)
			slot = i;
	int sv[2];
	if (slot < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		/* Only its own socket, at 4: not the caller's socket, nor another's. */
		if (dup3(sv[1], 4, O_CLOEXEC) < 0)
			_exit(0);
		(void)close(sock);
#ifdef SYS_close_range
		if (syscall(SYS_close_range, 5U, ~0U, 0U) < 0)
#endif
			for (int fd = 5; fd < 65536; fd++)
				(void)close(fd);
		warm_main();
	}
	(void)close(sv[1]);
	int pidfd = pid > 0 ? pidfd_open_raw(pid) : -1;
	/* Not handed over, its socket closes here and the monitor ends, having served nobody. */
	if (pidfd < 0 || send_link(sock, sv[0]) < 0) {
		(void)close(sv[0]);
		if (pidfd >= 0)
			(void)close(pidfd);
		return false;
	}
	(void)close(sv[0]);
	pool->pidfd[slot] = pidfd;
	return true;
}

static _Noreturn void spawner_main(int sock, pid_t parent)
{
	/* Gone with its parent, whatever killed it; and a copy of it nobody may read. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0L, 0L, 0L) < 0 || getppid() != parent)
		_exit(0);
	(void)prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L);
	/* Nothing of the parent's but the socket: not its stdin or stdout (a client's pipes). */
	int high = fcntl(sock, F_DUPFD_CLOEXEC, 10);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (high < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup3(high, 3, O_CLOEXEC) < 0)
		_exit(0);
	sock = 3;
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 4U, ~0U, 0U) < 0)
#endif
		for (int fd = 4; fd < 65536; fd++)
			(void)close(fd);

	warm_pool pool;
	for (int i = 0; i < SPAWNER_WARM; i++)
		pool.pidfd[i] = -1;
	for (;;) {
		/* Monitors that ended are reaped at least once a second. */
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		/* The pool is refilled between requests, never before one that is waiting. */
		struct pollfd p[1 + SPAWNER_WARM] = {{.fd = sock, .events = POLLIN}};
		int ready;
		while ((ready = poll(p, 1, 0)) == 0 && warm_up(&pool, sock))
			;
		for (int i = 0; i < SPAWNER_WARM; i++)
			p[1 + i] = (struct pollfd){.fd = pool.pidfd[i], .events = POLLIN};
		if (ready == 0)
			ready = poll(p, 1 + SPAWNER_WARM, 1000);
		/* A warm monitor that ended (its call over): its slot is free to fill. */
		for (int i = 0; ready > 0 && i < SPAWNER_WARM; i++)
			if (p[1 + i].revents) {
				(void)close(pool.pidfd[i]);
				pool.pidfd[i] = -1;
			}
		if (ready <= 0 || !(p[0].revents & (POLLIN | POLLHUP)))
			continue;
		/* A request for a monitor of its own: the caller had no warm one. */
		int fds[REQUEST_FDS];
		char *buf;
		size_t len = 0;
		int r = receive(sock, fds, &buf, &len);
		if (r == 0)
			break;
		if (r > 0 && fork() == 0) {
			(void)close(sock);
			for (int i = 0; i < SPAWNER_WARM; i++)
				if (pool.pidfd[i] >= 0)
					(void)close(pool.pidfd[i]);
			serve_request(fds, buf, len);
		}
		if (r > 0) {
			free(buf);
			for (int i = 0; i < REQUEST_FDS; i++)
				if (fds[i] >= 0)
					(void)close(fds[i]);
		}
	}
	for (int i = 0; i < SPAWNER_WARM; i++)
		if (pool.pidfd[i] >= 0)
			(void)close(pool.pidfd[i]);
	/* Asked to end once every tree is done: its monitors are ending too; reap them all. */
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	_exit(0);
}

/* --- the caller's side ------------------------------------------------------------------------ */

int spawner_start(void)
{
	/* A fork of a threaded process may only exec: the spawner's loop allocates. */
	if (!reap_single_threaded())
		return -EBUSY;
	(void)pthread_mutex_lock(&spawner.lock);
	int r = 0;
	if (spawner.fd < 0) {
		int sv[2];
		pid_t parent = getpid();
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
			r = -errno;
		} else {
			pid_t pid = fork();
			if (pid == 0) {
				(void)close(sv[0]);
				spawner_main(sv[1], parent);
			}
			r = pid < 0 ? -errno : 0;
			(void)close(sv[1]);
			if (pid < 0) {
				(void)close(sv[0]);
			} else {
				spawner.fd = sv[0];
				spawner.pid = pid;
			}
		}
	}
	(void)pthread_mutex_unlock(&spawner.lock);
	return r;
}

/* Takes the warm monitors' sockets the spawner has sent. Under the lock. */
static void collect_warm(void)
{
	for (;;) {
		request_header h = {0};
		char control[CMSG_SPACE(sizeof(int))];
		struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = control,
				     .msg_controllen = sizeof(control)};
		ssize_t k = recvmsg(spawner.fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		int fd = -1;
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
		if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(cm), sizeof(int));
		if (fd >= 0 && ((size_t)k != sizeof(h) || h.magic != WARM_MAGIC ||
				spawner.n_warm == SPAWNER_WARM))
			(void)close(fd);
		else if (fd >= 0)
			spawner.warm[spawner.n_warm++] = fd;
	}
}

static void drop_warm(void)
{
	while (spawner.n_warm > 0)
		(void)close(spawner.warm[--spawner.n_warm]);
}

void spawner_stop(void)
{
	(void)pthread_mutex_lock(&spawner.lock);
	/* The warm monitors see their sockets close and end, having served nobody. */
	collect_warm();
	drop_warm();
	if (spawner.fd >= 0) {
		/* The end of the socket is its cue; its monitors outlive it as they must. */
		(void)close(spawner.fd);
		while (waitpid(spawner.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	spawner.fd = -1;
	spawner.pid = 0;
	(void)pthread_mutex_unlock(&spawner.lock);
}

int spawner_request(const dsb_confined *c, dsb_mode mode, const dsb_spawn_options *o, int status_w,
		    int ctl_r)
{
	/* Borrowed for the encoding: nothing here is freed. */
	spawn_request q = {.mode = (int)mode,
			   .argv = c->argv,
			   .landlock = c->landlock,
			   .backend = c->backend,
			   .plan = c->plan,
			   .cwd = (char *)o->cwd,
			   .envp = (char **)o->envp,
			   .new_session = o->new_session};
	strbuf sb = STRBUF_INIT;
	int r = record_encode(&sb, &spawn_request_record, &q);
	if (r < 0) {
		strbuf_done(&sb);
		return r;
	}
	const int fds[REQUEST_FDS] = {status_w, ctl_r, o->stdin_fd, o->stdout_fd, o->stderr_fd};

	(void)pthread_mutex_lock(&spawner.lock);
	if (spawner.fd < 0) {
		r = -ENOTCONN;
	} else {
		/* A warm monitor, when there is one: nothing is forked, the spawner not woken. */
		collect_warm();
		r = -EAGAIN;
		while (r < 0 && spawner.n_warm > 0) {
			int link = spawner.warm[--spawner.n_warm];
			r = send_request(link, fds, sb.buf, sb.len); /* dead: the next one */
			(void)close(link);
		}
		if (r < 0)
			r = send_request(spawner.fd, fds, sb.buf, sb.len);
		if (r < 0 && r != -ENOTCONN) {
			/* Gone (or broken mid-request): no more requests; callers fork their own.
			 */
			drop_warm();
			(void)close(spawner.fd);
			spawner.fd = -1;
			while (waitpid(spawner.pid, NULL, 0) < 0 && errno == EINTR)
				;
			spawner.pid = 0;
		}
	}
	(void)pthread_mutex_unlock(&spawner.lock);
	strbuf_done(&sb);
	return r;
}
