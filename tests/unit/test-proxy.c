/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the network piece's allow-list proxy (src/net/): the host matcher (one with the
 * configuration's dsb_network_host_allowed(), and the spelling the proxy resolves), then the
 * proxy over 127.0.0.1 only, with upstream servers run by this process (an echo server and a
 * fixed HTTP response) and the test names mapped to 127.0.0.1 by the rules' `hosts`:
 * HTTP CONNECT allowed, refused (403, recorded once), to a closed port (502); plain HTTP
 * rewritten to origin form; SOCKS5 allowed and refused; malformed requests (400); the header
 * timeout; 64 concurrent relays; the connection limit; and free() with clients stuck mid-header
 * and mid-relay, which returns at once and leaves no descriptor or thread behind.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/core/core.h"
#include "src/net/net.h"
#include "src/policy/policy.h"

/* The matcher's rules: ports 80 and 443 alone, as a rule without a port allows. */
static char *const allow[] = {(char *)"allowed.test", (char *)"*.wild.test", (char *)"10.1.2.3",
			      (char *)"::1", NULL};
/* The proxy's: every port, since the test's servers listen on free ones. */
static char *const allow_any_port[] = {(char *)"allowed.test:*", (char *)"*.wild.test:*",
				       (char *)"10.1.2.3:*", (char *)"[::1]:*", NULL};
static char *const deny[] = {(char *)"bad.wild.test", NULL};
static char *const hosts[] = {(char *)"allowed.test=127.0.0.1", (char *)"denied.test=127.0.0.1",
			      (char *)"ok.wild.test=127.0.0.1", (char *)"bad.wild.test=127.0.0.1",
			      NULL};
static const net_rules matcher = {.allow = allow, .deny = deny, .hosts = hosts};
static const net_rules rules = {.allow = allow_any_port, .deny = deny, .hosts = hosts};

/* --- helpers -------------------------------------------------------------------------------- */

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* A listening socket on 127.0.0.1 at a free port, into *@ret_port. */
static int make_listener(uint16_t *ret_port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(fd, 512), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	*ret_port = ntohs(sin.sin_port);
	return fd;
}

/* A port on 127.0.0.1 that nothing listens on (bound, then closed). */
static uint16_t closed_port(void)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	close(fd);
	return ntohs(sin.sin_port);
}

/* A blocking client socket connected to 127.0.0.1:@port, with a 10 s receive timeout so that a
 * failing test fails instead of hanging. */
static int connect_to(uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(port)};
	struct timeval tv = {.tv_sec = 10};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

static void send_str(int fd, const void *s, size_t n)
{
	const char *b = s;

	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		assert_true(w > 0);
		b += w;
		n -= (size_t)w;
	}
}

/* Reads exactly @n bytes; false at an early end. */
static bool read_exact(int fd, void *buf, size_t n)
{
	char *b = buf;

	while (n > 0) {
		ssize_t r = recv(fd, b, n, 0);
		if (r <= 0)
			return false;
		b += r;
		n -= (size_t)r;
	}
	return true;
}

/* Reads until the peer's end (or an error, or @size - 1 bytes): the bytes read, NUL-terminated. */
static size_t read_all(int fd, char *buf, size_t size)
{
	size_t len = 0;

	while (len + 1 < size) {
		ssize_t r = recv(fd, buf + len, size - 1 - len, 0);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	return len;
}

/* Reads a response header (to its blank line, byte by byte so that nothing behind it is
 * taken): its status code, or -1. */
static int read_status(int fd)
{
	char buf[4096];
	size_t len = 0;
	int status = -1;

	while (len + 1 < sizeof(buf)) {
		if (recv(fd, buf + len, 1, 0) != 1)
			return -1;
		len++;
		buf[len] = '\0';
		if (len >= 4 && memcmp(buf + len - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		return -1;
	return status;
}

static net_proxy *start_proxy(const net_rules *r, unsigned header_ms, uint16_t *ret_port)
{
	net_proxy *p = NULL;

	assert_int_equal(net_proxy_new(r, &p), 0);
	assert_int_equal(net_proxy_listen(p, make_listener(ret_port)), 0);
	net_proxy_set_timeouts(p, header_ms, 2000);
	assert_int_equal(net_proxy_start(p), 0);
	return p;
}

/* A client through the proxy at @proxy_port, CONNECTed to @authority: the reply's status. */
static int http_connect(uint16_t proxy_port, const char *authority, int *ret_fd)
{
	char req[512];
	int fd = connect_to(proxy_port);

	snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: t\r\n\r\n",
		 authority, authority);
	send_str(fd, req, strlen(req));
	*ret_fd = fd;
	return read_status(fd);
}

/* --- upstream servers, run by this process -----------------------------------------------------
 */

#define UPSTREAM_MAX 300

typedef enum upstream_kind {
	UPSTREAM_ECHO,
	UPSTREAM_HTTP, /* reads one request header, stores it, answers "hello" and closes */
} upstream_kind;

typedef struct upstream {
	upstream_kind kind;
	int fd;
	uint16_t port;
	pthread_t thread;
	pthread_t workers[UPSTREAM_MAX];
	int worker_fds[UPSTREAM_MAX];
	size_t n_workers;
	pthread_mutex_t lock;
	char request[16384]; /* the last request header the HTTP server saw */
} upstream;

typedef struct worker_arg {
	upstream *u;
	int fd;
} worker_arg;

static void *upstream_worker(void *arg)
{
	worker_arg *w = arg;
	char buf[16384];

	if (w->u->kind == UPSTREAM_ECHO) {
		for (;;) {
			ssize_t n = recv(w->fd, buf, sizeof(buf), 0);
			if (n <= 0)
				break;
			if (send(w->fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
				break;
		}
		shutdown(w->fd, SHUT_WR);
	} else {
		static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
					   "Connection: close\r\n\r\nhello";
		size_t len = 0;
		while (len + 1 < sizeof(buf)) {
			ssize_t n = recv(w->fd, buf + len, sizeof(buf) - 1 - len, 0);
			if (n <= 0)
				break;
			len += (size_t)n;
			buf[len] = '\0';
			if (strstr(buf, "\r\n\r\n"))
				break;
		}
		buf[len] = '\0';
		pthread_mutex_lock(&w->u->lock);
		snprintf(w->u->request, sizeof(w->u->request), "%s", buf);
		pthread_mutex_unlock(&w->u->lock);
		(void)send(w->fd, resp, sizeof(resp) - 1, MSG_NOSIGNAL);
		shutdown(w->fd, SHUT_WR);
	}
	free(w);
	return NULL;
}

static void *upstream_main(void *arg)
{
	upstream *u = arg;

	for (;;) {
		int fd = accept4(u->fd, NULL, NULL, SOCK_CLOEXEC);
		worker_arg *w;
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break; /* shut down by upstream_stop() */
		}
		w = malloc(sizeof(*w));
		assert_non_null(w);
		*w = (worker_arg){.u = u, .fd = fd};
		pthread_mutex_lock(&u->lock);
		if (u->n_workers >= UPSTREAM_MAX ||
		    pthread_create(&u->workers[u->n_workers], NULL, upstream_worker, w) != 0) {
			pthread_mutex_unlock(&u->lock);
			free(w);
			close(fd);
			continue;
		}
		u->worker_fds[u->n_workers++] = fd;
		pthread_mutex_unlock(&u->lock);
	}
	return NULL;
}

static upstream *upstream_start(upstream_kind kind)
{
	upstream *u = calloc(1, sizeof(*u));

	assert_non_null(u);
	u->kind = kind;
	pthread_mutex_init(&u->lock, NULL);
	u->fd = make_listener(&u->port);
	assert_int_equal(pthread_create(&u->thread, NULL, upstream_main, u), 0);
	return u;
}

static void upstream_stop(upstream *u)
{
	/* shutdown() of a listening socket wakes its accept() with EINVAL. */
	shutdown(u->fd, SHUT_RDWR);
	pthread_join(u->thread, NULL);
	for (size_t i = 0; i < u->n_workers; i++) {
		shutdown(u->worker_fds[i], SHUT_RDWR);
		pthread_join(u->workers[i], NULL);
		close(u->worker_fds[i]);
	}
	close(u->fd);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/* --- the matcher ----------------------------------------------------------------------------- */

static void test_matcher(void **state)
{
	/* Exact names, case-insensitive, a trailing dot ignored. */
	assert_true(net_host_allowed(&matcher, "allowed.test", 443));
	assert_true(net_host_allowed(&matcher, "ALLOWED.Test", 443));
	assert_true(net_host_allowed(&matcher, "allowed.test.", 443));
	assert_false(net_host_allowed(&matcher, "allowed.test..", 443));
	assert_false(net_host_allowed(&matcher, "xallowed.test", 443));
	assert_false(net_host_allowed(&matcher, "sub.allowed.test", 443));
	assert_false(net_host_allowed(&matcher, "allowed.tes", 443));
	assert_false(net_host_allowed(&matcher, "denied.test", 443));
	/* "*.suffix": subdomains at any depth, never the bare name, never a mere suffix. */
	assert_true(net_host_allowed(&matcher, "a.wild.test", 443));
	assert_true(net_host_allowed(&matcher, "a.b.WILD.test.", 443));
	assert_false(net_host_allowed(&matcher, "wild.test", 443));
	assert_false(net_host_allowed(&matcher, "xwild.test", 443));
	assert_false(net_host_allowed(&matcher, ".wild.test", 443));
	/* Deny wins over a matching allow. */
	assert_true(net_host_allowed(&matcher, "ok.wild.test", 443));
	assert_false(net_host_allowed(&matcher, "bad.wild.test", 443));
	assert_false(net_host_allowed(&matcher, "BAD.wild.test.", 443));
	/* IP literals only when a pattern is that literal; IPv6 with or without brackets. */
	assert_true(net_host_allowed(&matcher, "10.1.2.3", 443));
	assert_false(net_host_allowed(&matcher, "10.1.2.4", 443));
	assert_false(net_host_allowed(&matcher, "127.0.0.1", 443)); /* what allowed.test maps to */
	assert_true(net_host_allowed(&matcher, "::1", 443));
	assert_true(net_host_allowed(&matcher, "[::1]", 443));
	assert_true(net_host_allowed(&matcher, "[0:0::1]", 443));
	assert_false(net_host_allowed(&matcher, "[::2]", 443));
	assert_false(net_host_allowed(&matcher, "[10.1.2.3]", 443)); /* brackets hold IPv6 only */
	assert_true(net_host_allowed(&matcher, "::ffff:10.1.2.3", 443)); /* the same address */
	/* Spellings getaddrinfo() would read as an address are no names. */
	assert_false(net_host_allowed(&matcher, "10.1.515", 443));
	assert_false(net_host_allowed(&matcher, "0x0a.1.2.3", 443));
	assert_false(net_host_allowed(&matcher, "167838211", 443));
	/* Garbage. */
	assert_false(net_host_allowed(&matcher, "", 443));
	assert_false(net_host_allowed(&matcher, ".", 443));
	assert_false(net_host_allowed(&matcher, "allowed.test:80", 443));
	assert_false(net_host_allowed(&matcher, "allowed .test", 443));
	assert_false(net_host_allowed(&matcher, "a.wild.test/x", 443));
	assert_false(net_host_allowed(NULL, "allowed.test", 443));
	assert_false(net_host_allowed(&matcher, NULL, 443));

	{
		/* A "*." pattern never matches an address; deny by literal wins too. */
		char *const a[] = {(char *)"*.0.0.1", (char *)"::1", NULL}, *const d[] = {
										    (char *)"[::1]",
										    NULL};
		net_rules r = {.allow = a, .deny = d};
		assert_false(net_host_allowed(&r, "127.0.0.1", 443));
		assert_false(net_host_allowed(&r, "::1", 443));
	}
	{
		net_rules none = {.allow = NULL};
		assert_false(net_host_allowed(&none, "allowed.test", 443));
	}
}

/*
 * The proxy and the configuration share one matcher: the same answer through
 * dsb_network_host_allowed() and net_host_allowed() on what the two used to disagree on ('_',
 * labels of digits, trailing dots), and the canonical spelling the proxy resolves and records.
 */
static void test_matcher_one_answer(void **state)
{
	(void)state;
	char *const allowed[] = {
		(char *)"*.example.com",
		(char *)"exact.test",
		(char *)"10.1.2.3",
		(char *)"under_score.test",   /* no name: matches nothing */
		(char *)"*.under_score.test", /* likewise */
		(char *)"example.123",	      /* a last label of digits: likewise */
		NULL,
	};
	char *const denied[] = {(char *)"denied.example.com", NULL};
	const net_rules r = {.allow = allowed, .deny = denied};
	static const struct {
		const char *host;
		bool allowed;
	} cases[] = {
		/* '_' is no part of a host name, below a wildcard or as an exact name. */
		{"a_b.example.com", false},
		{"_dmarc.example.com", false},
		{"under_score.test", false},
		{"x.under_score.test", false},
		/* Digits-only labels: a name unless the last label is one. */
		{"123.example.com", true},
		{"a.1.example.com", true},
		{"1.2.example.com", true},
		{"example.123", false},
		{"a.example.123", false},
		/* One trailing dot off a name; never two; a dotted quad with one is neither. */
		{"exact.test.", true},
		{"x.example.com.", true},
		{"exact.test..", false},
		{"x.example.com..", false},
		{"10.1.2.3", true},
		{"10.1.2.3.", false},
		{"10.1.2.3..", false},
		/* The controls. */
		{"exact.test", true},
		{"example.com", false},
		{"denied.example.com.", false},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		bool policy = dsb_network_host_allowed(allowed, denied, cases[i].host);
		bool proxy = net_host_allowed(&r, cases[i].host, 443);
		if (policy != cases[i].allowed || proxy != cases[i].allowed)
			fail_msg("\"%s\": expected %s, dsb_network_host_allowed() %d, "
				 "net_host_allowed() %d",
				 cases[i].host, cases[i].allowed ? "allowed" : "refused", policy,
				 proxy);
	}

	/* What the proxy resolves, records and compares with its fixed answers' names. */
	static const struct {
		const char *host;
		const char *canonical; /* NULL: refused */
	} spellings[] = {
		{"Deb.Debian.ORG.", "deb.debian.org"},
		{"123.Example.com", "123.example.com"},
		{"[::FFFF:10.1.2.3]", "10.1.2.3"},
		{"::ffff:10.1.2.3", "10.1.2.3"},
		{"[0:0::1]", "::1"},
		{"2001:DB8:0:0:0:0:0:1", "2001:db8::1"},
		{"a_b.example.com", NULL},
		{"example.123", NULL},
		{"10.1.2.3.", NULL},
		{"exact.test..", NULL},
		{"[10.1.2.3]", NULL},
		{"127.1", NULL},
	};
	for (size_t i = 0; i < ELEMENTSOF(spellings); i++) {
		char buf[NETWORK_PATTERN_MAX];
		int k = network_host_canonical(spellings[i].host, buf);
		if (!spellings[i].canonical ? k != -EINVAL
					    : k != 0 || strcmp(buf, spellings[i].canonical) != 0)
			fail_msg("\"%s\": %d \"%s\", expected %s", spellings[i].host, k,
				 k == 0 ? buf : "",
				 spellings[i].canonical ? spellings[i].canonical : "refused");
	}
	assert_int_equal(network_host_canonical(NULL, (char[NETWORK_PATTERN_MAX]){0}), -EINVAL);
	assert_false(net_host_allowed(NULL, "exact.test", 443));
}

static void test_api_errors(void **state)
{
	char *const bad_hosts[] = {(char *)"nameonly", NULL}, *const bad_addr[] = {
								      (char *)"a.test=nope", NULL};
	net_proxy *p = NULL;
	uint16_t port;
	int fd;

	assert_int_equal(net_proxy_new(NULL, &p), -EINVAL);
	assert_int_equal(net_proxy_new(&(net_rules){.hosts = bad_hosts}, &p), -EINVAL);
	assert_int_equal(net_proxy_new(&(net_rules){.hosts = bad_addr}, &p), -EINVAL);
	assert_int_equal(net_proxy_new(&rules, &p), 0);
	assert_int_equal(net_proxy_start(p), -EINVAL); /* no listener */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_int_equal(net_proxy_listen(p, fd), -EINVAL); /* not listening; closed */
	for (int i = 0; i < 4; i++)
		assert_int_equal(net_proxy_listen(p, make_listener(&port)), 0);
	assert_int_equal(net_proxy_listen(p, make_listener(&port)), -E2BIG);
	assert_int_equal(net_proxy_start(p), 0);
	assert_int_equal(net_proxy_start(p), -EBUSY);
	assert_int_equal(net_proxy_listen(p, make_listener(&port)), -EBUSY);
	net_proxy_free(p);
	net_proxy_free(NULL);
}

/* --- HTTP CONNECT ------------------------------------------------------------------------------
 */

static void test_connect_allowed(void **state)
{
	upstream *u = upstream_start(UPSTREAM_ECHO);
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 5000, &port);
	char auth[64], buf[64];
	int fd;

	snprintf(auth, sizeof(auth), "allowed.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 200);
	send_str(fd, "ping", 4);
	assert_true(read_exact(fd, buf, 4));
	assert_memory_equal(buf, "ping", 4);
	/* A half-close goes through: the echo server sees its end and ends too. */
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	assert_int_equal(recv(fd, buf, sizeof(buf), 0), 0);
	close(fd);

	/* Bytes sent right behind the request header are not lost. */
	{
		char req[256];
		fd = connect_to(port);
		snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\n\r\nearly", auth);
		send_str(fd, req, strlen(req));
		assert_int_equal(read_status(fd), 200);
		assert_true(read_exact(fd, buf, 5));
		assert_memory_equal(buf, "early", 5);
		close(fd);
	}
	{
		/* The wildcard. */
		snprintf(auth, sizeof(auth), "OK.wild.test.:%u", u->port);
		assert_int_equal(http_connect(port, auth, &fd), 200);
		close(fd);
	}
	{
		_cleanup_strv_free_ char **refused = net_proxy_refused(p);
		assert_non_null(refused);
		assert_null(refused[0]);
	}
	net_proxy_free(p);
	upstream_stop(u);
}

static void test_connect_refused(void **state)
{
	upstream *u = upstream_start(UPSTREAM_ECHO);
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 5000, &port);
	char auth[64], body[1024];
	int fd;

	/* The control: the upstream is reachable through the proxy under an allowed name. */
	snprintf(auth, sizeof(auth), "allowed.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 200);
	close(fd);

	for (int i = 0; i < 2; i++) {
		snprintf(auth, sizeof(auth), i == 0 ? "denied.test:%u" : "DENIED.test.:%u",
			 u->port);
		assert_int_equal(http_connect(port, auth, &fd), 403);
		read_all(fd, body, sizeof(body));
		assert_non_null(strstr(body, "denied.test"));
		assert_non_null(strstr(body, "not in the network allow-list"));
		close(fd);
	}
	snprintf(auth, sizeof(auth), "bad.wild.test:%u", u->port); /* denied over allowed */
	assert_int_equal(http_connect(port, auth, &fd), 403);
	close(fd);
	snprintf(auth, sizeof(auth), "127.0.0.1:%u", u->port); /* the address itself */
	assert_int_equal(http_connect(port, auth, &fd), 403);
	close(fd);
	{
		_cleanup_strv_free_ char **refused = net_proxy_refused(p);
		assert_non_null(refused);
		assert_int_equal(strv_length(refused), 3);
		assert_string_equal(refused[0], "denied.test");
		assert_string_equal(refused[1], "bad.wild.test");
		assert_string_equal(refused[2], "127.0.0.1");
	}
	net_proxy_free(p);
	upstream_stop(u);
}

static void test_connect_upstream_closed(void **state)
{
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 5000, &port);
	char auth[64], body[1024];
	int fd;

	snprintf(auth, sizeof(auth), "allowed.test:%u", closed_port());
	assert_int_equal(http_connect(port, auth, &fd), 502);
	read_all(fd, body, sizeof(body));
	assert_non_null(strstr(body, "allowed.test"));
	close(fd);
	net_proxy_free(p);
}

static int socks_connect(uint16_t proxy_port, const char *name, uint16_t port, int *ret_fd);

/* --- answers that point home ----------------------------------------------------------------- */

/* The test's name server: NAME=ADDRESS[,ADDRESS] entries, and how many questions it was asked. */
static const char *const *fake_zone;
static _Atomic unsigned fake_queries;

static size_t fake_lookup(const char *name, struct sockaddr_storage *out, size_t max)
{
	size_t n = 0, len = strlen(name);
	fake_queries++;
	for (const char *const *z = fake_zone; z && *z; z++) {
		if (strncmp(*z, name, len) != 0 || (*z)[len] != '=')
			continue;
		_cleanup_free_ char *list = strdup(*z + len + 1);
		assert_non_null(list);
		for (char *save = NULL, *a = strtok_r(list, ",", &save); a && n < max;
		     a = strtok_r(NULL, ",", &save)) {
			memset(&out[n], 0, sizeof(out[n]));
			struct sockaddr_in *in4 = (struct sockaddr_in *)&out[n];
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out[n];
			if (inet_pton(AF_INET, a, &in4->sin_addr) == 1)
				in4->sin_family = AF_INET;
			else if (inet_pton(AF_INET6, a, &in6->sin6_addr) == 1)
				in6->sin6_family = AF_INET6;
			else
				fail_msg("bad fake address %s", a);
			n++;
		}
	}
	return n;
}

/* This machine's first IPv4 address that is not loopback, or false when it has none. */
static bool own_address(char buf[INET_ADDRSTRLEN])
{
	struct ifaddrs *list = NULL, *i;
	assert_int_equal(getifaddrs(&list), 0);
	for (i = list; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr != htonl(INADDR_LOOPBACK))
			break;
	bool found = i && inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, buf,
				    INET_ADDRSTRLEN);
	freeifaddrs(list);
	return found;
}

/* Each range by its kind (RFC 6890 and the special-purpose registries). */
static void test_address_kinds(void **state)
{
	static const struct {
		const char *address;
		net_address_kind kind;
	} cases[] = {
		{"127.0.0.1", NET_ADDRESS_LOCAL},
		{"127.255.1.2", NET_ADDRESS_LOCAL},
		{"0.0.0.0", NET_ADDRESS_LOCAL},
		{"0.1.2.3", NET_ADDRESS_LOCAL},
		{"::1", NET_ADDRESS_LOCAL},
		{"::", NET_ADDRESS_LOCAL},
		{"::ffff:127.0.0.1", NET_ADDRESS_LOCAL},
		{"64:ff9b::7f00:1", NET_ADDRESS_LOCAL},
		{"2002:7f00:1::1", NET_ADDRESS_LOCAL},
		{"10.1.2.3", NET_ADDRESS_PRIVATE},
		{"172.16.0.1", NET_ADDRESS_PRIVATE},
		{"172.31.255.255", NET_ADDRESS_PRIVATE},
		{"192.168.1.1", NET_ADDRESS_PRIVATE},
		{"100.64.0.1", NET_ADDRESS_PRIVATE},
		{"100.127.255.254", NET_ADDRESS_PRIVATE},
		{"169.254.169.254", NET_ADDRESS_PRIVATE},
		{"169.254.1.1", NET_ADDRESS_PRIVATE},
		{"fc00::1", NET_ADDRESS_PRIVATE},
		{"fd12:3456::1", NET_ADDRESS_PRIVATE},
		{"fe80::1", NET_ADDRESS_PRIVATE},
		{"febf::1", NET_ADDRESS_PRIVATE},
		{"fec0::1", NET_ADDRESS_PRIVATE},
		{"::ffff:10.0.0.1", NET_ADDRESS_PRIVATE},
		{"64:ff9b::a00:1", NET_ADDRESS_PRIVATE},
		{"64:ff9b:1::1", NET_ADDRESS_PRIVATE},
		{"2002:a00:1::1", NET_ADDRESS_PRIVATE},
		{"224.0.0.1", NET_ADDRESS_RESERVED},
		{"239.255.255.250", NET_ADDRESS_RESERVED},
		{"255.255.255.255", NET_ADDRESS_RESERVED},
		{"240.0.0.1", NET_ADDRESS_RESERVED},
		{"192.0.2.1", NET_ADDRESS_RESERVED},
		{"198.51.100.1", NET_ADDRESS_RESERVED},
		{"203.0.113.1", NET_ADDRESS_RESERVED},
		{"198.18.0.1", NET_ADDRESS_RESERVED},
		{"192.0.0.8", NET_ADDRESS_RESERVED},
		{"ff02::1", NET_ADDRESS_RESERVED},
		{"2001:db8::1", NET_ADDRESS_RESERVED},
		{"100::1", NET_ADDRESS_RESERVED},
		{"::1.2.3.4", NET_ADDRESS_RESERVED},
		{"4000::1", NET_ADDRESS_RESERVED},
		/* The controls: public addresses either side of each range. */
		{"1.1.1.1", NET_ADDRESS_PUBLIC},
		{"9.255.255.255", NET_ADDRESS_PUBLIC},
		{"11.0.0.0", NET_ADDRESS_PUBLIC},
		{"172.15.255.255", NET_ADDRESS_PUBLIC},
		{"172.32.0.0", NET_ADDRESS_PUBLIC},
		{"100.63.255.255", NET_ADDRESS_PUBLIC},
		{"100.128.0.0", NET_ADDRESS_PUBLIC},
		{"192.169.0.1", NET_ADDRESS_PUBLIC},
		{"223.255.255.255", NET_ADDRESS_PUBLIC},
		{"2606:4700::1", NET_ADDRESS_PUBLIC},
		{"::ffff:1.1.1.1", NET_ADDRESS_PUBLIC},
		{"64:ff9b::101:101", NET_ADDRESS_PUBLIC},
		{"2a00:1450::1", NET_ADDRESS_PUBLIC},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct sockaddr_storage ss = {0};
		struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
		if (inet_pton(AF_INET, cases[i].address, &in4->sin_addr) == 1)
			in4->sin_family = AF_INET;
		else if (inet_pton(AF_INET6, cases[i].address, &in6->sin6_addr) == 1)
			in6->sin6_family = AF_INET6;
		else
			fail_msg("bad address %s", cases[i].address);
		net_address_kind k = net_address_classify((struct sockaddr *)&ss);
		if (k != cases[i].kind)
			fail_msg("%s: kind %d, expected %d", cases[i].address, (int)k,
				 (int)cases[i].kind);
	}
}

/*
 * An allowed name whose name server points it at this machine (loopback, an interface's
 * address), a private, link-local or reserved range is refused with why, and the name server's
 * other answers are used; the same address pinned in `hosts`, or listed in allowPrivate, is
 * reached (the controls: the test's server listens on 127.0.0.1).
 */
static void test_answers_pointing_home(void **state)
{
	upstream *u = upstream_start(UPSTREAM_ECHO);
	char own[INET_ADDRSTRLEN], own_entry[64];
	bool has_own = own_address(own);
	(void)snprintf(own_entry, sizeof(own_entry), "own.test=%s", has_own ? own : "127.0.0.1");
	const char *const zone[] = {
		"loop.test=127.0.0.1",
		"zero.test=0.0.0.0",
		"mapped.test=::ffff:127.0.0.1",
		"ten.test=10.1.2.3",
		"cgnat.test=100.64.0.1",
		"ula.test=fc00::1",
		"ll.test=fe80::1",
		"meta.test=169.254.169.254",
		"v6loop.test=::1",
		"multi.test=224.0.0.1",
		"mixed.test=10.0.0.1,127.0.0.1",
		own_entry,
		NULL,
	};
	/* An interface's address is this machine's, said as its range says it where it has one
	 * (this machine's may well be private): the e2e test gives it a public one. */
	struct sockaddr_in own_sin = {.sin_family = AF_INET};
	(void)inet_pton(AF_INET, has_own ? own : "127.0.0.1", &own_sin.sin_addr);
	net_address_kind own_kind = net_address_classify((struct sockaddr *)&own_sin);
	const char *own_why = own_kind == NET_ADDRESS_PRIVATE	 ? "resolves to a private address"
			      : own_kind == NET_ADDRESS_RESERVED ? "resolves to a reserved address"
								 : "resolves to this machine";
	const struct {
		const char *name, *why;
	} refused[] = {
		{"loop.test", "resolves to this machine"},
		{"zero.test", "resolves to this machine"},
		{"mapped.test", "resolves to this machine"},
		{"v6loop.test", "resolves to this machine"},
		{"own.test", own_why},
		{"ten.test", "resolves to a private address"},
		{"cgnat.test", "resolves to a private address"},
		{"ula.test", "resolves to a private address"},
		{"ll.test", "resolves to a private address"},
		{"meta.test", "resolves to a private address"},
		{"multi.test", "resolves to a reserved address"},
		{"mixed.test", "resolves to a private address"},
	};
	char *const home_allow[] = {(char *)"*.test:*", NULL};
	char *const home_hosts[] = {(char *)"pinned.test=127.0.0.1", NULL};
	char *const none[] = {NULL};
	const net_rules r = {
		.allow = home_allow, .deny = none, .hosts = home_hosts, .lookup = fake_lookup};
	uint16_t port;
	char auth[128], body[1024], expect[256];
	int fd;

	fake_zone = zone;
	net_proxy *p = start_proxy(&r, 5000, &port);
	for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
		snprintf(auth, sizeof(auth), "%s:%u", refused[i].name, u->port);
		int status = http_connect(port, auth, &fd);
		read_all(fd, body, sizeof(body));
		close(fd);
		snprintf(expect, sizeof(expect), "'%s' %s", refused[i].name, refused[i].why);
		if (status != 403 || !strstr(body, expect))
			fail_msg("%s: %d %s", refused[i].name, status, body);
	}
	assert_int_equal(socks_connect(port, "ten.test", u->port, &fd), 2);
	close(fd);
	{
		_cleanup_strv_free_ char **named = net_proxy_refused(p);
		assert_int_equal(strv_length(named), ELEMENTSOF(refused));
		for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
			snprintf(expect, sizeof(expect), "%s\t%s", refused[i].name, refused[i].why);
			assert_string_equal(named[i], expect);
		}
	}
	/* The control: pinned, the operator's own answer. */
	snprintf(auth, sizeof(auth), "pinned.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 200);
	close(fd);
	net_proxy_free(p);

	/* Listed ranges are reached; the rest of a name's answers still are not. */
	char *const loopback[] = {(char *)"127.0.0.0/8", NULL};
	const net_rules listed = {.allow = home_allow,
				  .deny = none,
				  .hosts = none,
				  .allow_private = loopback,
				  .lookup = fake_lookup};
	p = start_proxy(&listed, 5000, &port);
	snprintf(auth, sizeof(auth), "loop.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 200);
	send_str(fd, "home", 4);
	assert_true(read_exact(fd, body, 4));
	close(fd);
	snprintf(auth, sizeof(auth), "mixed.test:%u", u->port); /* 10.0.0.1 dropped, 127.0.0.1 */
	assert_int_equal(http_connect(port, auth, &fd), 200);
	close(fd);
	snprintf(auth, sizeof(auth), "ten.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 403);
	close(fd);
	net_proxy_free(p);
	upstream_stop(u);
	fake_zone = NULL;
}

/* A rule's port: 80 and 443 without one; the refusal names the port; SOCKS5 alike. */
static void test_ports(void **state)
{
	upstream *u = upstream_start(UPSTREAM_ECHO);
	char allowed_port[64];
	snprintf(allowed_port, sizeof(allowed_port), "exact.test:%u", u->port);
	char *const port_allow[] = {(char *)"plain.test", allowed_port, NULL};
	char *const port_deny[] = {NULL};
	char *const port_hosts[] = {(char *)"plain.test=127.0.0.1", (char *)"exact.test=127.0.0.1",
				    NULL};
	const net_rules r = {.allow = port_allow, .deny = port_deny, .hosts = port_hosts};
	uint16_t port;
	char auth[128], body[1024], expect[128];
	int fd;
	net_proxy *p = start_proxy(&r, 5000, &port);

	snprintf(auth, sizeof(auth), "exact.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 200);
	close(fd);
	snprintf(auth, sizeof(auth), "plain.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 403);
	read_all(fd, body, sizeof(body));
	close(fd);
	snprintf(expect, sizeof(expect), "port %u of 'plain.test' is not in the network allow-list",
		 u->port);
	assert_non_null(strstr(body, expect));
	assert_int_equal(http_connect(port, "exact.test:22", &fd), 403);
	close(fd);
	assert_int_equal(socks_connect(port, "plain.test", 22, &fd), 2);
	close(fd);
	{
		_cleanup_strv_free_ char **named = net_proxy_refused(p);
		assert_int_equal(strv_length(named), 3);
		snprintf(expect, sizeof(expect), "plain.test:%u\tport not in the allow-list",
			 u->port);
		assert_string_equal(named[0], expect);
		assert_string_equal(named[1], "exact.test:22\tport not in the allow-list");
		assert_string_equal(named[2], "plain.test:22\tport not in the allow-list");
	}
	net_proxy_free(p);
	upstream_stop(u);
}

/*
 * Names that only a wildcard allows are resolved at most NET_WILDCARD_NAMES_MAX distinct times
 * a proxy; the next is refused before the name server hears of it. A name resolved before, an
 * exact rule's and a pinned one still pass.
 */
static void test_wildcard_names_capped(void **state)
{
	upstream *u = upstream_start(UPSTREAM_ECHO);
	char *const cap_allow[] = {(char *)"*.wild.test:*", (char *)"exact.wild.test:*", NULL};
	char *const none[] = {NULL};
	char *const cap_hosts[] = {(char *)"pinned.wild.test=127.0.0.1", NULL};
	char *const loopback[] = {(char *)"127.0.0.0/8", NULL};
	static char entries[NET_WILDCARD_NAMES_MAX + 2][48];
	static const char *zone[NET_WILDCARD_NAMES_MAX + 3];
	for (int i = 0; i <= NET_WILDCARD_NAMES_MAX; i++) {
		snprintf(entries[i], sizeof(entries[i]), "n%d.wild.test=127.0.0.1", i);
		zone[i] = entries[i];
	}
	snprintf(entries[NET_WILDCARD_NAMES_MAX + 1], sizeof(entries[0]),
		 "exact.wild.test=127.0.0.1");
	zone[NET_WILDCARD_NAMES_MAX + 1] = entries[NET_WILDCARD_NAMES_MAX + 1];
	zone[NET_WILDCARD_NAMES_MAX + 2] = NULL;
	fake_zone = zone;
	fake_queries = 0;
	const net_rules r = {.allow = cap_allow,
			     .deny = none,
			     .hosts = cap_hosts,
			     .allow_private = loopback,
			     .lookup = fake_lookup};
	uint16_t port;
	char auth[128], body[1024], expect[128];
	int fd;
	net_proxy *p = start_proxy(&r, 5000, &port);

	/* A name no rule admits is refused before any query: nothing leaves with it. */
	assert_int_equal(http_connect(port, "secret-data.other.test:443", &fd), 403);
	close(fd);
	assert_int_equal(socks_connect(port, "secret-data.other.test", 443, &fd), 2);
	close(fd);
	assert_int_equal(fake_queries, 0);

	for (int i = 0; i < NET_WILDCARD_NAMES_MAX; i++) {
		snprintf(auth, sizeof(auth), "n%d.wild.test:%u", i, u->port);
		assert_int_equal(http_connect(port, auth, &fd), 200);
		close(fd);
	}
	snprintf(auth, sizeof(auth), "n%d.wild.test:%u", NET_WILDCARD_NAMES_MAX, u->port);
	assert_int_equal(http_connect(port, auth, &fd), 403);
	read_all(fd, body, sizeof(body));
	close(fd);
	assert_non_null(strstr(body, "one name too many"));
	assert_int_equal(fake_queries, NET_WILDCARD_NAMES_MAX); /* the refused one was not asked */
	snprintf(auth, sizeof(auth), "n0.wild.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 200);
	close(fd);
	snprintf(auth, sizeof(auth), "exact.wild.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 200);
	close(fd);
	snprintf(auth, sizeof(auth), "pinned.wild.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &fd), 200);
	close(fd);
	{
		_cleanup_strv_free_ char **named = net_proxy_refused(p);
		assert_int_equal(strv_length(named), 2);
		assert_string_equal(named[0], "secret-data.other.test");
		snprintf(expect, sizeof(expect),
			 "n%d.wild.test\tmore than %d names under a wildcard",
			 NET_WILDCARD_NAMES_MAX, NET_WILDCARD_NAMES_MAX);
		assert_string_equal(named[1], expect);
	}
	net_proxy_free(p);
	upstream_stop(u);
	fake_zone = NULL;
}

/* --- plain HTTP --------------------------------------------------------------------------------
 */

static void test_plain_http(void **state)
{
	upstream *u = upstream_start(UPSTREAM_HTTP);
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 5000, &port);
	char req[512], resp[2048];
	int fd = connect_to(port);

	snprintf(req, sizeof(req),
		 "GET http://Allowed.test:%u/path/x?q=1 HTTP/1.1\r\nHost: elsewhere.test\r\n"
		 "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
		 "Connection: keep-alive\r\nAccept: */*\r\n\r\n",
		 u->port);
	send_str(fd, req, strlen(req));
	read_all(fd, resp, sizeof(resp));
	close(fd);
	assert_non_null(strstr(resp, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(resp, "\r\n\r\nhello"));
	pthread_mutex_lock(&u->lock);
	{
		char host[64];
		snprintf(host, sizeof(host), "\r\nHost: allowed.test:%u\r\n", u->port);
		assert_true(strncmp(u->request, "GET /path/x?q=1 HTTP/1.1\r\n", 26) == 0);
		assert_non_null(strstr(u->request, host));
		assert_non_null(strstr(u->request, "\r\nAccept: */*\r\n"));
		assert_non_null(strstr(u->request, "\r\nConnection: close\r\n"));
		assert_null(strstr(u->request, "keep-alive"));
		assert_null(strstr(u->request, "Proxy-"));
		assert_null(strstr(u->request, "elsewhere"));
	}
	pthread_mutex_unlock(&u->lock);

	/* A bare authority gets the path "/". */
	fd = connect_to(port);
	snprintf(req, sizeof(req), "HEAD http://allowed.test:%u HTTP/1.0\r\n\r\n", u->port);
	send_str(fd, req, strlen(req));
	read_all(fd, resp, sizeof(resp));
	close(fd);
	assert_non_null(strstr(resp, "hello"));
	pthread_mutex_lock(&u->lock);
	assert_true(strncmp(u->request, "HEAD / HTTP/1.0\r\n", 17) == 0);
	pthread_mutex_unlock(&u->lock);

	/* Refused as for CONNECT. */
	fd = connect_to(port);
	snprintf(req, sizeof(req), "GET http://denied.test:%u/ HTTP/1.1\r\n\r\n", u->port);
	send_str(fd, req, strlen(req));
	assert_int_equal(read_status(fd), 403);
	close(fd);
	/* https:// without CONNECT, and an origin-form request, are no proxy requests. */
	fd = connect_to(port);
	snprintf(req, sizeof(req), "GET https://allowed.test:%u/ HTTP/1.1\r\n\r\n", u->port);
	send_str(fd, req, strlen(req));
	assert_int_equal(read_status(fd), 400);
	close(fd);
	fd = connect_to(port);
	send_str(fd, "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 38);
	assert_int_equal(read_status(fd), 400);
	close(fd);
	net_proxy_free(p);
	upstream_stop(u);
}

/* --- SOCKS5 ------------------------------------------------------------------------------------
 */

/* SOCKS5 CONNECT to @name:@port without authentication: the reply code (-1: no reply). */
static int socks_connect(uint16_t proxy_port, const char *name, uint16_t port, int *ret_fd)
{
	uint8_t req[300], rep[10];
	size_t n = strlen(name), len = 0;
	int fd = connect_to(proxy_port);

	req[len++] = 5;
	req[len++] = 2;
	req[len++] = 2; /* username/password, which we do not offer to take */
	req[len++] = 0;
	send_str(fd, req, len);
	if (!read_exact(fd, rep, 2) || rep[0] != 5 || rep[1] != 0) {
		close(fd);
		return -1;
	}
	len = 0;
	req[len++] = 5;
	req[len++] = 1;
	req[len++] = 0;
	req[len++] = 3;
	req[len++] = (uint8_t)n;
	memcpy(req + len, name, n);
	len += n;
	req[len++] = (uint8_t)(port >> 8);
	req[len++] = (uint8_t)port;
	send_str(fd, req, len);
	*ret_fd = fd;
	if (!read_exact(fd, rep, 10) || rep[0] != 5 || rep[3] != 1)
		return -1;
	return rep[1];
}

static void test_socks5(void **state)
{
	upstream *u = upstream_start(UPSTREAM_ECHO);
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 5000, &port);
	char buf[16];
	int fd;

	assert_int_equal(socks_connect(port, "allowed.test", u->port, &fd), 0);
	send_str(fd, "socks", 5);
	assert_true(read_exact(fd, buf, 5));
	assert_memory_equal(buf, "socks", 5);
	close(fd);

	assert_int_equal(socks_connect(port, "denied.test", u->port, &fd), 2);
	assert_int_equal(recv(fd, buf, sizeof(buf), 0), 0);
	close(fd);
	assert_int_equal(socks_connect(port, "allowed.test", closed_port(), &fd), 5);
	close(fd);
	{
		_cleanup_strv_free_ char **refused = net_proxy_refused(p);
		assert_int_equal(strv_length(refused), 1);
		assert_string_equal(refused[0], "denied.test");
	}

	/* Only "no authentication"; only CONNECT. */
	fd = connect_to(port);
	send_str(fd, "\x05\x01\x02", 3);
	assert_true(read_exact(fd, buf, 2));
	assert_memory_equal(buf, "\x05\xff", 2);
	close(fd);
	fd = connect_to(port);
	send_str(fd, "\x05\x01\x00\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50", 13); /* BIND */
	assert_true(read_exact(fd, buf, 4));
	assert_memory_equal(buf, "\x05\x00\x05\x07", 4);
	close(fd);
	net_proxy_free(p);
	upstream_stop(u);
}

/* --- malformed requests and the header timeout -------------------------------------------------
 */

static void test_malformed(void **state)
{
	static const char *const requests[] = {
		(char *)"CONNECT allowed.test HTTP/1.1\r\n\r\n",	 /* no port */
		(char *)"CONNECT allowed.test: HTTP/1.1\r\n\r\n",	 /* empty port */
		(char *)"CONNECT allowed.test:0 HTTP/1.1\r\n\r\n",	 /* port 0 */
		(char *)"CONNECT allowed.test:65536 HTTP/1.1\r\n\r\n",	 /* too large */
		(char *)"CONNECT allowed.test:80x HTTP/1.1\r\n\r\n",	 /* not a number */
		(char *)"CONNECT allowed.test:-1 HTTP/1.1\r\n\r\n",	 /* signed */
		(char *)"CONNECT ::1:80 HTTP/1.1\r\n\r\n",		 /* IPv6 without brackets */
		(char *)"CONNECT [::1:80 HTTP/1.1\r\n\r\n",		 /* unclosed bracket */
		(char *)"CONNECT user@allowed.test:80 HTTP/1.1\r\n\r\n", /* userinfo */
		(char *)"CONNECT allowed.test:80\r\n\r\n",		 /* no version */
		(char *)"CONNECT allowed.test:80 HTTP/2.0\r\n\r\n",	 /* not HTTP/1.x */
		(char *)"CONNECT  allowed.test:80 HTTP/1.1\r\n\r\n",	 /* two spaces */
		(char *)"CONNECT allowed test:80 HTTP/1.1\r\n\r\n",	 /* a space in the host */
		(char *)"hello\r\n\r\n",				 /* no request line */
		(char *)"\r\n\r\n",					 /* empty */
		(char *)"GET http://allowed.test:80/ HTTP/1.1\r\n folded\r\n\r\n", /* obs-fold */
		(char *)"GET http:///x HTTP/1.1\r\n\r\n",			   /* no host */
	};
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 5000, &port);

	for (size_t i = 0; i < ELEMENTSOF(requests); i++) {
		int fd = connect_to(port);
		send_str(fd, requests[i], strlen(requests[i]));
		if (read_status(fd) != 400)
			fail_msg("not a 400: %s", requests[i]);
		close(fd);
	}
	{
		/* A header past 16 KiB. */
		_cleanup_free_ char *big = malloc(20000);
		int fd = connect_to(port);
		memset(big, 'a', 20000);
		memcpy(big, "CONNECT allowed.test:80 HTTP/1.1\r\nX: ", 37);
		send_str(fd, big, 20000);
		assert_int_equal(read_status(fd), 400);
		close(fd);
	}
	{
		_cleanup_strv_free_ char **refused = net_proxy_refused(p);
		assert_null(refused[0]); /* malformed is not refused */
	}
	net_proxy_free(p);
}

static void test_header_timeout(void **state)
{
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 300, &port);
	char buf[512];

	for (int partial = 0; partial < 2; partial++) {
		int fd = connect_to(port);
		uint64_t t0 = monotonic_ms(), dt;
		if (partial)
			send_str(fd, "CONNECT allowed.test:80 HTTP/1.1\r\nHost: a", 42);
		read_all(fd, buf, sizeof(buf)); /* until the proxy closes */
		dt = monotonic_ms() - t0;
		assert_true(dt >= 250);
		assert_true(dt < 3000);
		assert_non_null(strstr(buf, "HTTP/1.1 408 "));
		close(fd);
	}
	net_proxy_free(p);
}

/* --- concurrency ---------------------------------------------------------------------------------
 */

#define N_CLIENTS 64
#define CHUNK	  16384
#define CHUNKS	  16

typedef struct client_arg {
	uint16_t proxy_port, upstream_port;
	int id;
	pthread_barrier_t *barrier;
	bool ok;
} client_arg;

static void *client_main(void *arg)
{
	client_arg *c = arg;
	char req[128], status[64], *out = malloc(CHUNK), *in = malloc(CHUNK);
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons(c->proxy_port)};
	struct timeval tv = {.tv_sec = 20};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t len = 0;

	/* No cmocka assertions off the main thread: the result goes back in c->ok. */
	c->ok = false;
	if (fd < 0 || !out || !in)
		goto out;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
		goto out;
	snprintf(req, sizeof(req), "CONNECT allowed.test:%u HTTP/1.1\r\n\r\n", c->upstream_port);
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
		goto out;
	while (len < 39) { /* "HTTP/1.1 200 Connection established\r\n\r\n" */
		ssize_t n = recv(fd, status + len, 39 - len, 0);
		if (n <= 0)
			goto out;
		len += (size_t)n;
	}
	if (memcmp(status, "HTTP/1.1 200 ", 13) != 0)
		goto out;
	/* Everyone connected before anyone pushes: 64 relays at once. */
	pthread_barrier_wait(c->barrier);
	for (int i = 0; i < CHUNKS; i++) {
		for (size_t k = 0; k < CHUNK; k++)
			out[k] = (char)(c->id * 31 + i * 7 + (int)k);
		if (send(fd, out, CHUNK, MSG_NOSIGNAL) != CHUNK)
			goto out;
		if (!read_exact(fd, in, CHUNK) || memcmp(in, out, CHUNK) != 0)
			goto out;
	}
	c->ok = true;
out:
	if (fd >= 0)
		close(fd);
	free(out);
	free(in);
	return NULL;
}

static void test_concurrent_clients(void **state)
{
	upstream *u = upstream_start(UPSTREAM_ECHO);
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 5000, &port);
	pthread_t threads[N_CLIENTS];
	client_arg args[N_CLIENTS];
	pthread_barrier_t barrier;

	pthread_barrier_init(&barrier, NULL, N_CLIENTS);
	for (int i = 0; i < N_CLIENTS; i++) {
		args[i] = (client_arg){
			.proxy_port = port, .upstream_port = u->port, .id = i, .barrier = &barrier};
		assert_int_equal(pthread_create(&threads[i], NULL, client_main, &args[i]), 0);
	}
	for (int i = 0; i < N_CLIENTS; i++)
		pthread_join(threads[i], NULL);
	pthread_barrier_destroy(&barrier);
	for (int i = 0; i < N_CLIENTS; i++)
		if (!args[i].ok)
			fail_msg("client %d failed", i);
	net_proxy_free(p);
	upstream_stop(u);
}

/* Past 256 connections, a new one is closed at once (while the 256 wait for their header). */
static void test_connection_limit(void **state)
{
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 20000, &port);
	int fds[256], extra;
	char c;
	uint64_t t0;

	for (int i = 0; i < 256; i++)
		fds[i] = connect_to(port);
	/* The control: a connection within the limit is kept open (nothing to read yet). */
	{
		struct pollfd pfd = {.fd = fds[255], .events = POLLIN};
		assert_int_equal(poll(&pfd, 1, 300), 0);
	}
	extra = connect_to(port);
	t0 = monotonic_ms();
	assert_true(recv(extra, &c, 1, 0) <= 0);
	assert_true(monotonic_ms() - t0 < 5000);
	close(extra);
	for (int i = 0; i < 256; i++)
		close(fds[i]);
	net_proxy_free(p);
}

/* --- free() -------------------------------------------------------------------------------------
 */

static void test_free_is_prompt_and_clean(void **state)
{
	int fds_before = count_dir("/proc/self/fd"), tasks_before = count_dir("/proc/self/task");
	upstream *u = upstream_start(UPSTREAM_ECHO);
	uint16_t port;
	net_proxy *p = start_proxy(&rules, 60000, &port);
	char auth[64], buf[8];
	int stuck, relaying, silent;
	uint64_t t0, dt;

	stuck = connect_to(port);
	send_str(stuck, "CONNECT allowed.test:80 HTTP/1.1\r\nHost:", 39);
	silent = connect_to(port);
	snprintf(auth, sizeof(auth), "allowed.test:%u", u->port);
	assert_int_equal(http_connect(port, auth, &relaying), 200);
	send_str(relaying, "x", 1);
	assert_true(read_exact(relaying, buf, 1)); /* mid-relay, for sure */
	/* The control: the stuck client is still held (60 s header timeout). */
	{
		struct pollfd pfd = {.fd = stuck, .events = POLLIN};
		assert_int_equal(poll(&pfd, 1, 200), 0);
	}

	t0 = monotonic_ms();
	net_proxy_free(p);
	dt = monotonic_ms() - t0;
	assert_true(dt < 1000);
	/* Every client sees its connection end. */
	assert_true(recv(stuck, buf, sizeof(buf), 0) <= 0);
	assert_true(recv(silent, buf, sizeof(buf), 0) <= 0);
	assert_true(recv(relaying, buf, sizeof(buf), 0) <= 0);
	close(stuck);
	close(silent);
	close(relaying);
	upstream_stop(u);
	assert_int_equal(count_dir("/proc/self/fd"), fds_before);
	assert_int_equal(count_dir("/proc/self/task"), tasks_before);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matcher),
		cmocka_unit_test(test_matcher_one_answer),
		cmocka_unit_test(test_api_errors),
		cmocka_unit_test(test_connect_allowed),
		cmocka_unit_test(test_connect_refused),
		cmocka_unit_test(test_connect_upstream_closed),
		cmocka_unit_test(test_address_kinds),
		cmocka_unit_test(test_answers_pointing_home),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_wildcard_names_capped),
		cmocka_unit_test(test_plain_http),
		cmocka_unit_test(test_socks5),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_header_timeout),
		cmocka_unit_test(test_concurrent_clients),
		cmocka_unit_test(test_connection_limit),
		cmocka_unit_test(test_free_is_prompt_and_clean),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
