/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the network half of the supervisor (src/confine/handler-network.c). A forked child
 * installs a filter that hands connect() and sendto() with an address over
 * (SECCOMP_NET_NOTIFY), sends the listener to this process, and tries: a pathname socket
 * beneath the writable root is reached and data flows, one outside (by its path, by a symlink
 * inside, by a path swapped under a connect in a loop) is EACCES and never sees a connection or
 * a datagram; loopback addresses are reached and others refused, or with a proxy port only that
 * port. Each case is first done unconfined, the control. This process supervises the child and
 * then looks at the listeners themselves.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/confine/confine.h"
#include "src/confine/seccomp.h"
#include "src/core/core.h"
#include "helpers.h"

#define EXPECT(cond)                                                                           \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "%s:%d: expected %s (errno %s)\n", __FILE__, __LINE__, \
				#cond, strerrorname_np(errno));                                \
			_exit(1);                                                              \
		}                                                                              \
	} while (0)

#define ERRNO_OF(call) ((call) < 0 ? errno : 0)

/* ws/ is the writable root, ot/ is not; ws/link leads to ot/s. */
typedef struct fixture {
	char *top;
	char ws[PATH_MAX], in_sock[PATH_MAX + 16], in_dgram[PATH_MAX + 16];
	char out_sock[PATH_MAX + 16], out_dgram[PATH_MAX + 16], link[PATH_MAX + 16];
	int in_l, out_l, in_d, out_d; /* the listeners and datagram sockets, ours */
	int tcp_l, proxy_l;	      /* 127.0.0.1 listeners */
	uint16_t tcp_port, proxy_port;
	/* What the acceptor saw on in_l and tcp_l. */
	pthread_t acceptor;
	atomic_int accepted, pings;
	int stop[2];
} fixture;

static int unix_socket(const char *path, int type)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	assert_true(strlen(path) < sizeof(a.sun_path));
	strcpy(a.sun_path, path);
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	/* Anyone may connect: the child runs as this user, but the test may run as nobody too. */
	assert_int_equal(chmod(path, 0777), 0);
	if (type == SOCK_STREAM)
		assert_int_equal(listen(fd, 4096), 0);
	return fd;
}

static int tcp_listener(uint16_t *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 4096), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

/* Accepts on the inside listeners for the whole test, reading what each connection sends. */
static void *acceptor_main(void *arg)
{
	fixture *f = arg;
	for (;;) {
		struct pollfd p[4] = {{.fd = f->in_l, .events = POLLIN},
				      {.fd = f->tcp_l, .events = POLLIN},
				      {.fd = f->proxy_l, .events = POLLIN},
				      {.fd = f->stop[0], .events = POLLIN}};
		if (poll(p, 4, -1) < 0 || p[3].revents)
			return NULL;
		for (int i = 0; i < 3; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			int c = accept4(p[i].fd, NULL, NULL, SOCK_CLOEXEC);
			if (c < 0)
				continue;
			atomic_fetch_add(&f->accepted, 1);
			char buf[16] = "";
			struct pollfd r = {.fd = c, .events = POLLIN};
			if (poll(&r, 1, 200) > 0 && read(c, buf, sizeof(buf) - 1) == 4 &&
			    memcmp(buf, "ping", 4) == 0) {
				atomic_fetch_add(&f->pings, 1);
				(void)write(c, "pong", 4);
			}
			close(c);
		}
	}
}

static void fixture_up(fixture *f)
{
	*f = (fixture){.top = dsb_test_mkdtemp()};
	char *top = realpath(f->top, NULL);
	assert_non_null(top);
	char out[PATH_MAX + 8];
	(void)snprintf(f->ws, sizeof(f->ws), "%s/ws", top);
	(void)snprintf(out, sizeof(out), "%s/ot", top); /* as long as "ws" */
	assert_int_equal(mkdir(f->ws, 0777), 0);
	assert_int_equal(mkdir(out, 0777), 0);
	(void)snprintf(f->in_sock, sizeof(f->in_sock), "%s/s", f->ws);
	(void)snprintf(f->in_dgram, sizeof(f->in_dgram), "%s/d", f->ws);
	(void)snprintf(f->out_sock, sizeof(f->out_sock), "%s/s", out);
	(void)snprintf(f->out_dgram, sizeof(f->out_dgram), "%s/d", out);
	(void)snprintf(f->link, sizeof(f->link), "%s/link", f->ws);
	free(top);
	f->in_l = unix_socket(f->in_sock, SOCK_STREAM);
	f->out_l = unix_socket(f->out_sock, SOCK_STREAM);
	f->in_d = unix_socket(f->in_dgram, SOCK_DGRAM);
	f->out_d = unix_socket(f->out_dgram, SOCK_DGRAM);
	assert_int_equal(symlink(f->out_sock, f->link), 0);
	f->tcp_l = tcp_listener(&f->tcp_port);
	f->proxy_l = tcp_listener(&f->proxy_port);
	assert_int_equal(pipe2(f->stop, O_CLOEXEC), 0);
	assert_int_equal(pthread_create(&f->acceptor, NULL, acceptor_main, f), 0);
}

/* Connections waiting on @fd (never accepted), and datagrams waiting on a datagram socket. */
static int pending(int fd, bool stream)
{
	int n = 0;
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
	for (;;) {
		char buf[64];
		int r = stream ? accept4(fd, NULL, NULL, SOCK_CLOEXEC)
			       : (int)recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r < 0)
			return n;
		if (stream)
			close(r);
		n++;
	}
}

static void fixture_down(fixture *f)
{
	close(f->stop[1]);
	assert_int_equal(pthread_join(f->acceptor, NULL), 0);
	close(f->stop[0]);
	close(f->in_l);
	close(f->out_l);
	close(f->in_d);
	close(f->out_d);
	close(f->tcp_l);
	close(f->proxy_l);
	dsb_test_rm_rf(f->top);
	free(f->top);
}

/* Supervises @pid through the listener that comes on @sock until it ends; its exit status. */
static int supervise(supervisor *s, int sock, pid_t pid)
{
	int listener = fd_receive(sock, 0);
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	assert_true(pidfd >= 0);
	while (listener >= 0) {
		struct pollfd p[2] = {{.fd = listener, .events = POLLIN},
				      {.fd = pidfd, .events = POLLIN}};
		assert_true(poll(p, 2, 20000) > 0);
		if (p[0].revents & POLLIN)
			assert_true(supervisor_handle(s, listener) >= 0);
		else if (p[1].revents & POLLIN)
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
 * Runs @child(@f) under @prog with a supervisor of root ws/ and a network handler of @net
 * (its state in *@ret_net); its exit status.
 */
static int run_supervised(supervisor *s, void **ret_net, const seccomp_program *prog,
			  const net_supervision *net, void (*child)(const fixture *),
			  const fixture *f)
{
	static char *roots[2];
	roots[0] = (char *)f->ws;
	roots[1] = NULL;
	supervisor_init(s, roots, NULL);
	assert_int_equal(network_handler_new(net, ret_net), 0);
	assert_int_equal(supervisor_add(s, &handler_network, *ret_net), 0);
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	(void)fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The filter hands sendmsg() over: a helper sends its listener. */
		EXPECT(listener_install_send(prog, sp[1], true) == 0);
		child(f);
		_exit(0);
	}
	close(sp[1]);
	int status = supervise(s, sp[0], pid);
	close(sp[0]);
	return status;
}

/* How many network calls the handler @state refused. */
static unsigned refused_count(void *state)
{
	unsigned count = 0;
	strv_free(network_refused(state, &count));
	return count;
}

static const seccomp_program *landlock_program(void)
{
	return seccomp_program_for(SECCOMP_DENY_NAMESPACES | SECCOMP_DENY_PROCESS_TARGETS |
				   SECCOMP_METADATA_NOTIFY | SECCOMP_NET_NOTIFY);
}

/* --- the child's side ----------------------------------------------------------------------- */

static socklen_t unix_addr(struct sockaddr_un *a, const char *path)
{
	*a = (struct sockaddr_un){.sun_family = AF_UNIX};
	size_t n = strnlen(path, sizeof(a->sun_path) - 1); /* the tests' paths are short */
	memcpy(a->sun_path, path, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

/* connect()'s errno to the stream socket at @path, 0 when connected; then ping-pong. */
static int connect_unix(const char *path, bool ping)
{
	struct sockaddr_un a;
	socklen_t len = unix_addr(&a, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT(fd >= 0);
	int r = ERRNO_OF(connect(fd, (struct sockaddr *)&a, len));
	if (r == 0 && ping) {
		char buf[4];
		EXPECT(write(fd, "ping", 4) == 4);
		EXPECT(read(fd, buf, 4) == 4 && memcmp(buf, "pong", 4) == 0);
	}
	close(fd);
	return r;
}

static int sendto_unix(const char *path, const char *data)
{
	struct sockaddr_un a;
	socklen_t len = unix_addr(&a, path);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	EXPECT(fd >= 0);
	ssize_t n = sendto(fd, data, strlen(data), 0, (struct sockaddr *)&a, len);
	int r = n < 0 ? errno : n == (ssize_t)strlen(data) ? 0 : -1;
	close(fd);
	return r;
}

static int connect_tcp(const char *ip, uint16_t port, bool ping)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	EXPECT(inet_pton(AF_INET, ip, &a.sin_addr) == 1);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT(fd >= 0);
	int r = ERRNO_OF(connect(fd, (struct sockaddr *)&a, sizeof(a)));
	if (r == 0 && ping) {
		char buf[4];
		EXPECT(write(fd, "ping", 4) == 4);
		EXPECT(read(fd, buf, 4) == 4 && memcmp(buf, "pong", 4) == 0);
	}
	close(fd);
	return r;
}

static void *thread_connects(void *arg)
{
	const fixture *f = arg;
	EXPECT(connect_unix(f->in_sock, true) == 0);
	EXPECT(connect_unix(f->out_sock, false) == EACCES);
	return NULL;
}

/* Under the filter: inside lands, outside is EACCES, by every road. */
static void attack(const fixture *f)
{
	/* Beneath the root: a stream socket (data flows), a datagram, a second thread. */
	EXPECT(connect_unix(f->in_sock, true) == 0);
	EXPECT(sendto_unix(f->in_dgram, "inside") == 0);
	pthread_t t;
	EXPECT(pthread_create(&t, NULL, thread_connects, (void *)f) == 0);
	EXPECT(pthread_join(t, NULL) == 0);
	/* Relative to the working directory, as the kernel resolves it. */
	EXPECT(chdir(f->ws) == 0);
	EXPECT(connect_unix("s", true) == 0);
	EXPECT(connect_unix("missing", false) == ENOENT);

	/* Outside: by its path, by a symlink inside, by ".." out of the root. */
	EXPECT(connect_unix(f->out_sock, false) == EACCES);
	EXPECT(connect_unix("link", false) == EACCES);
	EXPECT(connect_unix("../ot/s", false) == EACCES);
	EXPECT(sendto_unix(f->out_dgram, "outside") == EACCES);

	/* IP: the loopback is the command's own namespace; anything else is refused unsent. */
	EXPECT(connect_tcp("127.0.0.1", f->tcp_port, true) == 0);
	EXPECT(connect_tcp("192.0.2.1", 80, false) == EACCES);

	/* A non-blocking connect: EINPROGRESS or done, and the socket then works. */
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(f->tcp_port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	EXPECT(fd >= 0);
	int r = ERRNO_OF(connect(fd, (struct sockaddr *)&a, sizeof(a)));
	EXPECT(r == 0 || r == EINPROGRESS);
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	EXPECT(poll(&p, 1, 5000) == 1);
	int err = -1;
	socklen_t el = sizeof(err);
	EXPECT(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0);
	EXPECT(write(fd, "ping", 4) == 4);
	p.events = POLLIN;
	char buf[4];
	EXPECT(poll(&p, 1, 5000) == 1 && read(fd, buf, 4) == 4 && memcmp(buf, "pong", 4) == 0);
	close(fd);

	/* A malformed length, as the kernel answers it; a descriptor that is no socket. */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT(ERRNO_OF(connect(fd, (struct sockaddr *)&a, 4)) == EINVAL);
	EXPECT(ERRNO_OF(connect(fd, (struct sockaddr *)&a, 4096)) == EINVAL);
	close(fd);
	EXPECT(ERRNO_OF(connect(0 + 1000, (struct sockaddr *)&a, sizeof(a))) == EBADF);
	int pfd[2];
	EXPECT(pipe2(pfd, O_CLOEXEC) == 0);
	EXPECT(ERRNO_OF(connect(pfd[0], (struct sockaddr *)&a, sizeof(a))) == ENOTSOCK);

	/* A send on a connected datagram socket is not the supervisor's. */
	struct sockaddr_un d;
	socklen_t dl = unix_addr(&d, f->in_dgram);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	EXPECT(connect(fd, (struct sockaddr *)&d, dl) == 0);
	EXPECT(send(fd, "again", 5, 0) == 5);
	close(fd);
}

/* The controls: unconfined, the outside sockets are reached (once each). */
static void controls(const fixture *f)
{
	if (connect_unix(f->out_sock, false) != 0 || sendto_unix(f->out_dgram, "control") != 0 ||
	    connect_tcp("127.0.0.1", f->tcp_port, true) != 0)
		fail_msg("the controls failed: errno %s", strerrorname_np(errno));
}

static bool listed(char **list, const char *what)
{
	for (size_t i = 0; list && list[i]; i++)
		if (strcmp(list[i], what) == 0)
			return true;
	return false;
}

static void test_unix_and_loopback(void **state)
{
	(void)state;
	fixture f;
	fixture_up(&f);
	controls(&f);
	assert_int_equal(pending(f.out_l, true), 1);
	assert_int_equal(pending(f.out_d, false), 1);

	supervisor s;
	void *ns;
	net_supervision net = {.supervised = true};
	assert_int_equal(run_supervised(&s, &ns, landlock_program(), &net, attack, &f), 0);

	/* Nothing reached outside; inside got the datagrams. */
	assert_int_equal(pending(f.out_l, true), 0);
	assert_int_equal(pending(f.out_d, false), 0);
	char buf[16] = "";
	assert_int_equal(recv(f.in_d, buf, sizeof(buf), MSG_DONTWAIT), 6);
	assert_memory_equal(buf, "inside", 6);
	assert_int_equal(recv(f.in_d, buf, sizeof(buf), MSG_DONTWAIT), 5);
	/* Six refusals: the thread's, the path, the link, "..", the datagram, TEST-NET. */
	assert_int_equal(refused_count(ns), 6);
	unsigned count;
	char **list = network_refused(ns, &count);
	assert_non_null(list);
	assert_true(listed(list, f.out_sock));
	assert_true(listed(list, "link"));
	assert_true(listed(list, "../ot/s"));
	assert_true(listed(list, f.out_dgram));
	assert_true(listed(list, "192.0.2.1:80"));
	assert_null(list[5]);
	strv_free(list);
	supervisor_done(&s);
	fixture_down(&f);
}

/* With a proxy port (no namespace of its own): that port alone, no other loopback. */
static void attack_proxy(const fixture *f)
{
	EXPECT(connect_tcp("127.0.0.1", f->proxy_port, false) == 0);
	EXPECT(connect_tcp("127.0.0.1", f->tcp_port, false) == EACCES);
	EXPECT(connect_tcp("127.0.0.2", f->proxy_port, false) == EACCES);
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons(f->proxy_port)};
	EXPECT(inet_pton(AF_INET6, "::ffff:127.0.0.1", &a6.sin6_addr) == 1);
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT(fd >= 0);
	EXPECT(connect(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0);
	close(fd);
	/* An abstract socket is the host's here. */
	struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "\0dsb-test"};
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT(ERRNO_OF(connect(fd, (struct sockaddr *)&a,
				offsetof(struct sockaddr_un, sun_path) + 9)) == EACCES);
	close(fd);
	/* A datagram to AF_UNSPEC: IPv4 UDP reads the address anyway, so it is checked. */
	struct sockaddr_in u = {.sin_family = AF_UNSPEC, .sin_port = htons(9)};
	EXPECT(inet_pton(AF_INET, "192.0.2.1", &u.sin_addr) == 1);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	EXPECT(ERRNO_OF(sendto(fd, "x", 1, 0, (struct sockaddr *)&u, sizeof(u))) == EACCES);
	close(fd);
	EXPECT(connect_unix(f->in_sock, false) == 0);
}

static void test_proxy_port(void **state)
{
	(void)state;
	fixture f;
	fixture_up(&f);
	/* The control: the other loopback port is reachable unconfined. */
	if (connect_tcp("127.0.0.1", f.tcp_port, false) != 0)
		fail_msg("the control failed");
	supervisor s;
	void *ns;
	net_supervision net = {.supervised = true, .proxy_port = f.proxy_port};
	assert_int_equal(
		run_supervised(&s, &ns, seccomp_net_only_program(), &net, attack_proxy, &f), 0);
	char tcp[32], other[32];
	(void)snprintf(tcp, sizeof(tcp), "127.0.0.1:%u", f.tcp_port);
	(void)snprintf(other, sizeof(other), "127.0.0.2:%u", f.proxy_port);
	unsigned count;
	char **list = network_refused(ns, &count);
	assert_non_null(list);
	assert_true(listed(list, tcp));
	assert_true(listed(list, other));
	assert_true(listed(list, "@dsb-test"));
	assert_true(listed(list, "192.0.2.1:9"));
	assert_int_equal(refused_count(ns), 4);
	strv_free(list);
	supervisor_done(&s);
	fixture_down(&f);
}

/* --- the race: the address changes under a connect in a loop -------------------------------- */

#define RACE_ROUNDS 3000

typedef struct race {
	struct sockaddr_un addr;
	const fixture *f;
	atomic_bool done;
} race;

static void *flipper(void *arg)
{
	race *r = arg;
	/* Both paths have the same length: only the bytes change, never the length given. */
	while (!atomic_load(&r->done)) {
		memcpy(r->addr.sun_path, r->f->out_sock, strlen(r->f->out_sock));
		memcpy(r->addr.sun_path, r->f->in_sock, strlen(r->f->in_sock));
	}
	return NULL;
}

static void attack_race(const fixture *f)
{
	static race r;
	r.f = f;
	socklen_t len = unix_addr(&r.addr, f->in_sock);
	EXPECT(strlen(f->in_sock) == strlen(f->out_sock));
	pthread_t t;
	EXPECT(pthread_create(&t, NULL, flipper, &r) == 0);
	int in = 0, refused = 0;
	for (int i = 0; i < RACE_ROUNDS; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		EXPECT(fd >= 0);
		int e = ERRNO_OF(connect(fd, (struct sockaddr *)&r.addr, len));
		/* ENOENT: the address was read halfway through a flip ("ws" and "ot" mixed), a
		 * path that names nothing, as the kernel would answer it unconfined. */
		EXPECT(e == 0 || e == EACCES || e == EAGAIN || e == ENOENT);
		in += e == 0;
		refused += e == EACCES;
		close(fd);
	}
	atomic_store(&r.done, true);
	EXPECT(pthread_join(t, NULL) == 0);
	/* Both sides were taken, or the race tested nothing. */
	EXPECT(in > 0 && refused > 0);
}

static void test_race(void **state)
{
	(void)state;
	fixture f;
	fixture_up(&f);
	/* The control: unconfined, the outside listener is reached. */
	controls(&f);
	assert_int_equal(pending(f.out_l, true), 1);
	(void)pending(f.out_d, false);
	supervisor s;
	void *ns;
	net_supervision net = {.supervised = true};
	assert_int_equal(run_supervised(&s, &ns, landlock_program(), &net, attack_race, &f), 0);
	/* Not one connection reached the outside listener. */
	assert_int_equal(pending(f.out_l, true), 0);
	assert_true(refused_count(ns) > 0);
	supervisor_done(&s);
	fixture_down(&f);
}

/* Without rules (net_supervision.supervised) nothing is let through. */
static void attack_unset(const fixture *f)
{
	EXPECT(connect_unix(f->in_sock, false) == EACCES);
}

static void test_unset_refuses(void **state)
{
	(void)state;
	fixture f;
	fixture_up(&f);
	supervisor s;
	void *ns;
	net_supervision net = {0};
	assert_int_equal(
		run_supervised(&s, &ns, seccomp_net_only_program(), &net, attack_unset, &f), 0);
	assert_int_equal(refused_count(ns), 1);
	supervisor_done(&s);
	fixture_down(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unix_and_loopback),
		cmocka_unit_test(test_proxy_port),
		cmocka_unit_test(test_race),
		cmocka_unit_test(test_unset_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
