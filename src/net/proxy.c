/* SPDX-License-Identifier: MIT */
/*
 * The allow-list proxy: HTTP CONNECT, plain HTTP (absolute-form URIs) and SOCKS5 on the same
 * listening sockets, each host checked with net_host_allowed() and resolved here. Hosts are
 * matched and spelled (canonically: what is resolved, recorded and compared with the rules'
 * `hosts`) by the configuration's own functions in src/policy/network.c.
 *
 * Design: one accept thread, and one thread per client connection. A connection's work is a
 * straight line (read a header, check, resolve, connect, relay), and the one step that cannot be
 * made non-blocking, getaddrinfo(), then stalls only its own client; an epoll state machine would
 * need a resolver pool for that anyway, for a proxy that serves one confined command (tens of
 * connections, not thousands). Every socket is non-blocking and every wait is a poll() that also
 * watches `stop_fd`, an eventfd written once by net_proxy_free(): it stays readable, so every
 * thread, wherever it waits, wakes and unwinds, and free() joins them all. A thread that ends
 * closes its own sockets and wakes the accept thread through `reap_fd`, which joins it, so
 * finished threads do not pile up. Relays splice(2) through a pipe per direction (copying
 * through 64 KiB buffers when no pipe can be had) and pass each end of file on as
 * shutdown(SHUT_WR), so half-closed protocols work.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "src/core/core.h"
#include "src/policy/policy.h"

#include "net.h"

#define MAX_LISTENERS  4
#define MAX_CLIENTS    256 /* beyond, a connection is accepted and closed at once */
#define HEADER_MAX     ((size_t)16 * 1024)
#define RELAY_BUF      ((size_t)64 * 1024)
#define RELAY_PIPE     ((size_t)1024 * 1024) /* the unprivileged pipe-max-size */
#define MAX_REFUSED    1024 /* distinct refused hosts remembered; more are not recorded */
#define MAX_ADDRS      16
#define THREAD_STACK   ((size_t)512 * 1024)
#define LINGER_MS      200 /* how long an error reply waits for the client to read it */
#define HOST_BUF       256 /* a SOCKS5 name (255 bytes) and its NUL */
#define ACCEPT_BACKOFF 100 /* ms to wait when out of descriptors */

_Static_assert(HOST_BUF >= NETWORK_PATTERN_MAX, "a session's host holds any canonical host");

typedef struct conn {
	struct net_proxy *proxy;
	pthread_t thread;
	int fd;
	bool done;
	struct conn *next;
} conn;

struct net_proxy {
	char **allow, **deny, **hosts, **allow_private;
	net_rules rules; /* points at the copies above */
	int listen_fds[MAX_LISTENERS];
	size_t n_listen;
	unsigned header_ms, connect_ms;
	int stop_fd;
	int reap_fd;
	bool started;
	pthread_t accept_thread;

	pthread_mutex_t lock; /* guards the fields below */
	conn *conns;
	size_t n_conns;
	char **refused;
	size_t n_refused;
	char **wildcard_names; /* the distinct names only a "*." rule allowed, resolved so far */
	size_t n_wildcard_names;
};

/* --- waiting --------------------------------------------------------------------------------- */

/* The time left until @deadline (ms on the monotonic clock; 0: none) as a poll() timeout. */
static int time_left(uint64_t deadline)
{
	uint64_t now;

	if (deadline == 0)
		return -1;
	now = monotonic_ms();
	if (now >= deadline)
		return 0;
	return deadline - now > INT32_MAX ? INT32_MAX : (int)(deadline - now);
}

/* Waits for @events on @fd: 1 ready, -ETIMEDOUT past @deadline, -ECANCELED when stopping. */
static int wait_fd(net_proxy *p, int fd, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd pfd[2] = {
			{.fd = p->stop_fd, .events = POLLIN},
			{.fd = fd, .events = events},
		};
		int r = poll(pfd, 2, time_left(deadline));
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (pfd[0].revents)
			return -ECANCELED;
		if (pfd[1].revents)
			return 1;
		if (r == 0)
			return -ETIMEDOUT;
	}
}

/* Sends all of @buf (@n bytes) to the non-blocking @fd, never raising SIGPIPE. 0 or -errno. */
static int send_all(net_proxy *p, int fd, const void *buf, size_t n, uint64_t deadline)
{
	const char *b = buf;

	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return -errno;
			int r = wait_fd(p, fd, POLLOUT, deadline);
			if (r < 0)
				return r;
			continue;
		}
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* --- a client's session ---------------------------------------------------------------------- */

typedef struct session {
	net_proxy *p;
	int cfd;	   /* the client, borrowed */
	uint64_t deadline; /* for the whole request header or SOCKS5 negotiation */
	char *buf;	   /* HEADER_MAX + 1 bytes */
	size_t len;
	char host[HOST_BUF]; /* canonical (network_host_canonical()) */
	uint16_t port;
} session;

/* Reads more of the client's request: the byte count, or -ECONNRESET at its end of file,
 * -E2BIG when the buffer is full, -ETIMEDOUT, -ECANCELED, -errno. */
static int read_more(session *s)
{
	for (;;) {
		ssize_t n;
		int r;

		if (s->len >= HEADER_MAX)
			return -E2BIG;
		n = recv(s->cfd, s->buf + s->len, HEADER_MAX - s->len, 0);
		if (n > 0) {
			s->len += (size_t)n;
			s->buf[s->len] = '\0';
			return (int)n;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		r = wait_fd(s->p, s->cfd, POLLIN, s->deadline);
		if (r < 0)
			return r;
	}
}

/* Reads until the buffer holds at least @n bytes. 0 or as read_more(). */
static int need(session *s, size_t n)
{
	while (s->len < n) {
		int r = read_more(s);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Drops the first @n bytes of the buffer. */
static void consume(session *s, size_t n)
{
	memmove(s->buf, s->buf + n, s->len - n);
	s->len -= n;
	s->buf[s->len] = '\0';
}

/*
 * After an error reply: ends our side and gives the client a moment to read the reply before
 * the close, which would otherwise reset the connection (and lose the reply) while unread
 * request bytes sit in our receive buffer.
 */
static void linger_close(session *s)
{
	uint64_t deadline = monotonic_ms() + LINGER_MS;
	char scratch[4096];

	(void)shutdown(s->cfd, SHUT_WR);
	for (;;) {
		ssize_t n = recv(s->cfd, scratch, sizeof(scratch), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return;
		if (n < 0 && wait_fd(s->p, s->cfd, POLLIN, deadline) < 0)
			return;
	}
}

/* Records @what (a host, or "HOST\tWHY": see net_proxy_refused()) once. */
static void record_refused(net_proxy *p, const char *what)
{
	pthread_mutex_lock(&p->lock);
	if (p->n_refused < MAX_REFUSED && !strv_contains(p->refused, what) &&
	    strv_push(&p->refused, what) == 0)
		p->n_refused++;
	pthread_mutex_unlock(&p->lock);
}

/*
 * Whether one more name that only a wildcard allows may be resolved: every distinct one costs
 * a query that leaves the machine, and its labels are the command's to choose.
 */
static bool wildcard_name_admitted(net_proxy *p, const char *host)
{
	bool ok = true;
	pthread_mutex_lock(&p->lock);
	if (!strv_contains(p->wildcard_names, host)) {
		ok = p->n_wildcard_names < NET_WILDCARD_NAMES_MAX &&
		     strv_push(&p->wildcard_names, host) == 0;
		if (ok)
			p->n_wildcard_names++;
	}
	pthread_mutex_unlock(&p->lock);
	return ok;
}

/* --- resolving and connecting ------------------------------------------------------------------
 */

typedef struct addr_list {
	struct sockaddr_storage a[MAX_ADDRS];
	socklen_t len[MAX_ADDRS];
	size_t n;
} addr_list;

/* Adds the IP literal @s (brackets allowed) with @port. False when it is none. */
static bool add_literal(addr_list *l, const char *s, uint16_t port)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n = strlen(s);
	struct sockaddr_in *in4 = (struct sockaddr_in *)&l->a[l->n];
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&l->a[l->n];

	if (l->n >= MAX_ADDRS)
		return false;
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	memset(&l->a[l->n], 0, sizeof(l->a[l->n]));
	if (inet_pton(AF_INET, buf, &in4->sin_addr) == 1) {
		in4->sin_family = AF_INET;
		in4->sin_port = htons(port);
		l->len[l->n++] = sizeof(*in4);
		return true;
	}
	if (inet_pton(AF_INET6, buf, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		l->len[l->n++] = sizeof(*in6);
		return true;
	}
	return false;
}

/* --- what an answer is ---------------------------------------------------------------------- */

static bool v4_in(uint32_t v, uint32_t net, unsigned prefix)
{
	return prefix == 0 || (v >> (32 - prefix)) == (net >> (32 - prefix));
}

static net_address_kind classify_v4(uint32_t v)
{
	if (v4_in(v, 0x7f000000, 8) || v4_in(v, 0x00000000, 8))
		return NET_ADDRESS_LOCAL; /* loopback; "this network", 0.0.0.0 reaching the host */
	if (v4_in(v, 0x0a000000, 8) || v4_in(v, 0xac100000, 12) || v4_in(v, 0xc0a80000, 16) ||
	    v4_in(v, 0x64400000, 10) || v4_in(v, 0xa9fe0000, 16))
		return NET_ADDRESS_PRIVATE; /* RFC 1918, CGNAT, link-local */
	if (v4_in(v, 0xc0000000, 24) || v4_in(v, 0xc0000200, 24) || v4_in(v, 0xc6336400, 24) ||
	    v4_in(v, 0xcb007100, 24) || v4_in(v, 0xc6120000, 15) || v4_in(v, 0xc0586300, 24) ||
	    v4_in(v, 0xe0000000, 4) || v4_in(v, 0xf0000000, 4))
		return NET_ADDRESS_RESERVED; /* protocol assignments, documentation, benchmarking,
						the 6to4 relay, multicast, class E and broadcast */
	return NET_ADDRESS_PUBLIC;
}

static uint32_t v4_at(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Whether the first @bits bits of @a are those of @prefix. */
static bool v6_in(const uint8_t *a, const uint8_t *prefix, unsigned bits)
{
	for (unsigned b = 0; b < bits; b++)
		if ((a[b / 8] ^ prefix[b / 8]) & (0x80u >> (b % 8)))
			return false;
	return true;
}

/* What each IPv6 range is, the first match winning (each prefix a whole address, so that no
 * test reads past it); the forms that carry an IPv4 address are judged by it, before these. */
static const struct v6_range {
	uint8_t prefix[16];
	unsigned bits;
	net_address_kind kind;
} v6_ranges[] = {
	{{0}, 127, NET_ADDRESS_LOCAL},	 /* :: and ::1 */
	{{0}, 96, NET_ADDRESS_RESERVED}, /* IPv4-compatible, deprecated */
	{{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, NET_ADDRESS_PRIVATE}, /* local-use NAT64 */
	{{0x01}, 64, NET_ADDRESS_RESERVED},				 /* discard-only */
	{{0x20, 0x01, 0x0d, 0xb8}, 32, NET_ADDRESS_RESERVED},		 /* documentation */
	{{0x20, 0x01}, 23, NET_ADDRESS_RESERVED}, /* IETF protocol assignments */
	{{0x3f, 0xff}, 20, NET_ADDRESS_RESERVED}, /* documentation (RFC 9637) */
	{{0x20}, 3, NET_ADDRESS_PUBLIC},	  /* global unicast */
	{{0xfc}, 7, NET_ADDRESS_PRIVATE},	  /* unique-local */
	{{0xfe, 0x80}, 10, NET_ADDRESS_PRIVATE},  /* link-local */
	{{0xfe, 0xc0}, 10, NET_ADDRESS_PRIVATE},  /* site-local, deprecated */
	{{0}, 0, NET_ADDRESS_RESERVED},		  /* multicast, and everything unassigned */
};

static net_address_kind classify_v6(const uint8_t *a)
{
	static const uint8_t mapped[16] = {[10] = 0xff, [11] = 0xff},
			     nat64[16] = {0x00, 0x64, 0xff, 0x9b}, six_to_four[16] = {0x20, 0x02};
	/* Where a connection to one of these goes: the IPv4 address it carries. */
	if (v6_in(a, mapped, 96) || v6_in(a, nat64, 96))
		return classify_v4(v4_at(a + 12));
	if (v6_in(a, six_to_four, 16))
		return classify_v4(v4_at(a + 2));
	for (size_t i = 0;; i++)
		if (v6_in(a, v6_ranges[i].prefix, v6_ranges[i].bits))
			return v6_ranges[i].kind;
}

net_address_kind net_address_classify(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET)
		return classify_v4(ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr));
	if (a->sa_family == AF_INET6)
		return classify_v6(((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr);
	return NET_ADDRESS_RESERVED;
}

/* The address bytes of @a and their family, an IPv4-mapped one as IPv4. */
static int address_bytes(const struct sockaddr *a, const uint8_t **ret)
{
	if (a->sa_family == AF_INET) {
		*ret = (const uint8_t *)&((const struct sockaddr_in *)a)->sin_addr;
		return AF_INET;
	}
	const uint8_t *b = ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr;
	if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)b)) {
		*ret = b + 12;
		return AF_INET;
	}
	*ret = b;
	return AF_INET6;
}

/* Whether @a is an address of one of this machine's interfaces (the host's namespace, where
 * the proxy connects from): any of them reaches the host's own services. */
static bool is_own_address(const struct sockaddr *a)
{
	struct ifaddrs *list = NULL;
	const uint8_t *want, *have;
	int family = address_bytes(a, &want);
	bool found = false;

	if (getifaddrs(&list) < 0)
		return true; /* unknown: fail closed */
	for (struct ifaddrs *i = list; i && !found; i = i->ifa_next)
		if (i->ifa_addr &&
		    (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6) &&
		    address_bytes(i->ifa_addr, &have) == family)
			found = memcmp(want, have, family == AF_INET ? 4 : 16) == 0;
	freeifaddrs(list);
	return found;
}

/* Why the proxy does not connect to the answer @a, or NULL when it does. */
static const char *answer_refusal(const net_proxy *p, const struct sockaddr *a)
{
	const uint8_t *bytes;
	int family = address_bytes(a, &bytes);
	for (char **r = p->allow_private; *r; r++)
		if (network_cidr_contains(*r, family, bytes))
			return NULL; /* the operator's listed range */
	/* By range first; of a public-looking address, whether an interface here has it. */
	switch (net_address_classify(a)) {
	case NET_ADDRESS_LOCAL:
		return "resolves to this machine";
	case NET_ADDRESS_PRIVATE:
		return "resolves to a private address";
	case NET_ADDRESS_RESERVED:
		return "resolves to a reserved address";
	case NET_ADDRESS_PUBLIC:
		break;
	}
	return is_own_address(a) ? "resolves to this machine" : NULL;
}

/* Adds the fixed answers the rules' `hosts` give the session's host to @ret: how many. */
static size_t add_pinned(const session *s, addr_list *ret)
{
	char name[HOST_BUF], canonical[NETWORK_PATTERN_MAX];
	size_t before = ret->n;
	for (char **h = s->p->hosts; h && *h; h++) {
		const char *eq = strchr(*h, '=');
		size_t n = eq ? (size_t)(eq - *h) : sizeof(name);
		if (n >= sizeof(name))
			continue;
		memcpy(name, *h, n);
		name[n] = '\0';
		if (network_host_canonical(name, canonical) == 0 && strcmp(canonical, s->host) == 0)
			(void)add_literal(ret, eq + 1, s->port);
	}
	return ret->n - before;
}

/* Whether the session's host is pinned in `hosts`, answered without a name server. */
static bool is_pinned(const session *s)
{
	addr_list scratch = {.n = 0};
	return add_pinned(s, &scratch) > 0;
}

/* The name server's answers for @name: getaddrinfo(), blocking this client's thread alone. */
static size_t system_lookup(const char *name, struct sockaddr_storage *out, size_t max)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	size_t n = 0;

	if (getaddrinfo(name, NULL, &hints, &res) != 0)
		return 0;
	for (struct addrinfo *ai = res; ai && n < max; ai = ai->ai_next)
		if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
		    ai->ai_addrlen <= sizeof(out[0]))
			memcpy(&out[n++], ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(res);
	return n;
}

/*
 * The addresses of the session's host: the fixed answers of the rules' `hosts` first, then the
 * literal itself (both the operator's own choice), then the name server's, without those that
 * point at this machine, a private or a reserved range (the proxy connects from the host's
 * namespace: an allowed name answering with one would pivot to the host or its network) unless
 * `allowPrivate` lists them. 0; -ENOENT when the name has no address; -EACCES when every
 * address it has was dropped, with the reason of the first in *@why.
 */
static int resolve(session *s, addr_list *ret, const char **why)
{
	struct sockaddr_storage found[MAX_ADDRS];
	const net_proxy *p = s->p;

	ret->n = 0;
	if (add_pinned(s, ret) > 0 || add_literal(ret, s->host, s->port))
		return 0;
	size_t n = (p->rules.lookup ? p->rules.lookup : system_lookup)(s->host, found, MAX_ADDRS);
	*why = NULL;
	for (size_t i = 0; i < n && ret->n < MAX_ADDRS; i++) {
		const struct sockaddr *a = (const struct sockaddr *)&found[i];
		const char *refusal = answer_refusal(p, a);
		if (refusal) {
			if (!*why)
				*why = refusal;
			continue;
		}
		memcpy(&ret->a[ret->n], a, sizeof(found[i]));
		if (a->sa_family == AF_INET) {
			((struct sockaddr_in *)&ret->a[ret->n])->sin_port = htons(s->port);
			ret->len[ret->n++] = sizeof(struct sockaddr_in);
		} else {
			((struct sockaddr_in6 *)&ret->a[ret->n])->sin6_port = htons(s->port);
			ret->len[ret->n++] = sizeof(struct sockaddr_in6);
		}
	}
	if (ret->n > 0)
		return 0;
	return *why ? -EACCES : -ENOENT;
}

static void set_nodelay(int fd)
{
	int one = 1;
	/* Relayed protocols (TLS handshakes, request/response) write small messages; Nagle would
	 * hold each back for the peer's delayed ACK. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Connects to each address in turn, each within connect_ms: the socket, or the -errno of the
 * last attempt (-ECANCELED when stopping). */
static int connect_any(session *s, const addr_list *l)
{
	int r = -EHOSTUNREACH;

	for (size_t i = 0; i < l->n; i++) {
		_cleanup_close_ int fd = -1;
		int err = 0;
		socklen_t elen = sizeof(err);

		fd = socket(l->a[i].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		if (connect(fd, (const struct sockaddr *)&l->a[i], l->len[i]) < 0) {
			if (errno != EINPROGRESS) {
				r = -errno;
				continue;
			}
			r = wait_fd(s->p, fd, POLLOUT, monotonic_ms() + s->p->connect_ms);
			if (r == -ECANCELED)
				return r;
			if (r < 0)
				continue;
			if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
				err = errno;
			if (err != 0) {
				r = -err;
				continue;
			}
		}
		set_nodelay(fd);
		return TAKE_FD(fd);
	}
	return r;
}

/* --- relaying ----------------------------------------------------------------------------------
 */

typedef struct direction {
	int from, to;
	int pipe[2];	 /* splice(2) through it; -1: copy through buf */
	size_t in_pipe;	 /* bytes spliced in and not yet out */
	bool in_blocked; /* splicing in said EAGAIN with bytes in the pipe: it may be full */
	char *buf;	 /* bytes to send before any spliced ones (pre), or the copy buffer */
	size_t off, len;
	bool eof;  /* `from` has ended */
	bool shut; /* and `to` was told so */
} direction;

static bool would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* Sends what is in @d's buffer: 1 when something moved, 0 when it would block, -errno. */
static int send_buf(direction *d)
{
	ssize_t n;

	if (d->len == 0)
		return 0;
	n = send(d->to, d->buf + d->off, d->len, MSG_NOSIGNAL);
	if (n < 0)
		return would_block() ? 0 : -errno;
	d->off += (size_t)n;
	d->len -= (size_t)n;
	return n > 0;
}

/* One step of @d without waiting: 1 when something moved, 0 when it would block, -errno when
 * the relay must end. */
static int step(direction *d)
{
	int moved = 0, r;
	ssize_t n;

	r = send_buf(d);
	if (r < 0)
		return r;
	moved |= r;
	if (d->len > 0)
		return moved; /* the buffer first, in order */

	if (d->pipe[0] >= 0) {
		if (!d->eof && !d->in_blocked) {
			n = splice(d->from, NULL, d->pipe[1], NULL, RELAY_PIPE,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->in_pipe += (size_t)n;
				moved = 1;
			} else if (n == 0) {
				d->eof = true;
				moved = 1;
			} else if (!would_block()) {
				return -errno;
			} else if (d->in_pipe > 0) {
				/* No data, or a full pipe: wait for the other end to drain. */
				d->in_blocked = true;
			}
		}
		if (d->in_pipe > 0) {
			n = splice(d->pipe[0], NULL, d->to, NULL, d->in_pipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->in_pipe -= (size_t)n;
				d->in_blocked = false;
				moved = 1;
			} else if (n < 0 && !would_block()) {
				return -errno;
			}
		}
	} else {
		if (!d->eof) {
			n = recv(d->from, d->buf, RELAY_BUF, 0);
			if (n > 0) {
				d->off = 0;
				d->len = (size_t)n;
				moved = 1;
			} else if (n == 0) {
				d->eof = true;
				moved = 1;
			} else if (!would_block()) {
				return -errno;
			}
		}
		r = send_buf(d);
		if (r < 0)
			return r;
		moved |= r;
	}
	if (d->eof && d->len == 0 && d->in_pipe == 0 && !d->shut) {
		(void)shutdown(d->to, SHUT_WR);
		d->shut = true;
		moved = 1;
	}
	return moved;
}

/* What @d waits for: POLLIN on its source, POLLOUT on its destination, added to @from_ev and
 * @to_ev. */
static void wanted(const direction *d, short *from_ev, short *to_ev)
{
	if (d->len > 0 || d->in_pipe > 0)
		*to_ev |= POLLOUT;
	if (d->len > 0 || d->eof)
		return;
	if (d->pipe[0] < 0 || !d->in_blocked)
		*from_ev |= POLLIN;
}

/* A pipe for splicing, grown to RELAY_PIPE where the per-user pipe budget allows. False when
 * there is none (out of descriptors): the direction then copies. */
static bool make_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
		fds[0] = fds[1] = -1;
		return false;
	}
	(void)fcntl(fds[0], F_SETPIPE_SZ, RELAY_PIPE);
	return true;
}

/*
 * Copies between the client and the upstream until both directions have ended (each end of
 * file passed on as a half-close), either side fails, or the proxy stops. @pre (@pre_len <=
 * RELAY_BUF bytes) goes upstream first: bytes the client sent behind its request. The data
 * moves with splice(2) through a pipe per direction, which on loopback and real NICs alike
 * avoids two copies through user memory (bench/proxy.sh: the copying relay reached 0.5-0.7x
 * of a direct download); without pipes it copies through 64 KiB buffers.
 */
static void relay(net_proxy *p, int cfd, int ufd, const char *pre, size_t pre_len)
{
	_cleanup_free_ char *up_buf = malloc(RELAY_BUF), *down_buf = NULL;
	direction d[2] = {
		{.from = cfd, .to = ufd, .pipe = {-1, -1}},
		{.from = ufd, .to = cfd, .pipe = {-1, -1}},
	};

	if (!up_buf || pre_len > RELAY_BUF)
		return;
	d[0].buf = up_buf;
	memcpy(up_buf, pre, pre_len);
	d[0].len = pre_len;
	if (!make_pipe(d[0].pipe) || !make_pipe(d[1].pipe)) {
		down_buf = malloc(RELAY_BUF);
		if (!down_buf)
			goto out;
		d[1].buf = down_buf;
		for (size_t i = 0; i < 2; i++)
			if (d[i].pipe[0] >= 0) {
				(void)close(d[i].pipe[0]);
				(void)close(d[i].pipe[1]);
				d[i].pipe[0] = d[i].pipe[1] = -1;
			}
	}

	for (;;) {
		struct pollfd pfd[3] = {
			{.fd = p->stop_fd, .events = POLLIN},
			{.fd = cfd},
			{.fd = ufd},
		};
		int moved;

		do {
			int a = step(&d[0]), b = step(&d[1]);
			if (a < 0 || b < 0)
				goto out;
			moved = a | b;
		} while (moved && !(d[0].shut && d[1].shut));
		if (d[0].shut && d[1].shut)
			goto out;

		wanted(&d[0], &pfd[1].events, &pfd[2].events);
		wanted(&d[1], &pfd[2].events, &pfd[1].events);
		/* A socket we wait nothing from must not be polled: its POLLHUP would spin us. */
		for (size_t i = 1; i < 3; i++)
			if (!pfd[i].events)
				pfd[i].fd = -1;
		if (poll(pfd, 3, -1) < 0 && errno != EINTR)
			goto out;
		if (pfd[0].revents)
			goto out;
	}
out:
	for (size_t i = 0; i < 2; i++)
		if (d[i].pipe[0] >= 0) {
			(void)close(d[i].pipe[0]);
			(void)close(d[i].pipe[1]);
		}
}

/* --- HTTP --------------------------------------------------------------------------------------
 */

static void http_reply(session *s, int status, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Sends an error reply with a short text body, then closes our side. */
static void http_reply(session *s, int status, const char *reason, const char *fmt, ...)
{
	char body[512], head[256];
	va_list ap;
	int bl, hl;

	va_start(ap, fmt);
	bl = vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	if (bl < 0)
		bl = 0;
	if ((size_t)bl >= sizeof(body))
		bl = sizeof(body) - 1;
	hl = snprintf(head, sizeof(head),
		      "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
		      "Content-Length: %d\r\nConnection: close\r\n\r\n",
		      status, reason, bl);
	if (hl > 0 && (size_t)hl < sizeof(head) &&
	    send_all(s->p, s->cfd, head, (size_t)hl, monotonic_ms() + s->p->header_ms) == 0 &&
	    send_all(s->p, s->cfd, body, (size_t)bl, monotonic_ms() + s->p->header_ms) == 0)
		linger_close(s);
}

/* The offset just past the blank line that ends the header, or 0 when it is not all here. */
static size_t header_end(const char *buf, size_t len)
{
	size_t pos = 0;

	for (;;) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end;
		if (!nl)
			return 0;
		end = (size_t)(nl - buf);
		if (end == pos || (end == pos + 1 && buf[pos] == '\r'))
			return end + 1;
		pos = end + 1;
	}
}

/* Parses a decimal port 1..65535 of exactly @n characters. */
static bool parse_port(const char *s, size_t n, uint16_t *ret)
{
	unsigned v = 0;

	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v == 0 || v > 65535)
		return false;
	*ret = (uint16_t)v;
	return true;
}

/*
 * Splits the authority @a (@n bytes: host[:port], [v6][:port]) into the session's host and
 * port; @default_port 0 means the port is required. False for a malformed one (userinfo, an
 * IPv6 address without brackets, a bad port, a host that is no name or literal).
 */
static bool parse_authority(session *s, const char *a, size_t n, uint16_t default_port)
{
	char raw[HOST_BUF];
	const char *colon = NULL, *host_end;

	if (n == 0 || memchr(a, '@', n))
		return false;
	if (a[0] == '[') {
		const char *close = memchr(a, ']', n);
		if (!close)
			return false;
		host_end = close + 1;
		if (host_end < a + n) {
			if (*host_end != ':')
				return false;
			colon = host_end;
		}
	} else {
		colon = memchr(a, ':', n);
		if (colon && memchr(colon + 1, ':', (size_t)(a + n - colon - 1)))
			return false;
		host_end = colon ? colon : a + n;
	}
	if (colon) {
		if (!parse_port(colon + 1, (size_t)(a + n - colon - 1), &s->port))
			return false;
	} else if (default_port) {
		s->port = default_port;
	} else {
		return false;
	}
	if ((size_t)(host_end - a) >= sizeof(raw))
		return false;
	memcpy(raw, a, (size_t)(host_end - a));
	raw[host_end - a] = '\0';
	return network_host_canonical(raw, s->host) == 0;
}

/* The host as a client may write it back: brackets around an IPv6 literal. */
static void format_host_port(const session *s, char *buf, size_t size, bool with_port)
{
	bool v6 = strchr(s->host, ':') != NULL;

	if (with_port)
		(void)snprintf(buf, size, "%s%s%s:%u", v6 ? "[" : "", s->host, v6 ? "]" : "",
			       (unsigned)s->port);
	else
		(void)snprintf(buf, size, "%s%s%s", v6 ? "[" : "", s->host, v6 ? "]" : "");
}

/* Checks, resolves and connects the session's host, replying with an HTTP error on failure
 * (@socks: a SOCKS5 reply code instead). The upstream socket, or -1. */
static int open_upstream(session *s, bool socks);

static bool token_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Whether the header line @l (@n bytes, no line end) names @name. */
static bool header_is(const char *l, size_t n, const char *name)
{
	size_t k = strlen(name);
	return n > k && l[k] == ':' && strncasecmp(l, name, k) == 0;
}

/*
 * Rewrites the plain-HTTP request header (request line already parsed: @method, @path, @version)
 * to origin form for the upstream, into @out: Host from the URI, Connection: close, without the
 * hop-by-hop headers. 0, -EINVAL (a malformed header line), -ENOMEM.
 */
static int rewrite_request(session *s, const char *method, const char *path, const char *version,
			   const char *headers, size_t headers_len, strbuf *out)
{
	char authority[HOST_BUF + 8];
	const char *pos = headers, *end = headers + headers_len;
	int r;

	format_host_port(s, authority, sizeof(authority), s->port != 80);
	r = strbuf_printf(out, "%s %s %s\r\nHost: %s\r\n", method, path, version, authority);
	if (r < 0)
		return r;
	while (pos < end) {
		const char *nl = memchr(pos, '\n', (size_t)(end - pos));
		size_t n = nl ? (size_t)(nl - pos) : (size_t)(end - pos);
		if (n > 0 && pos[n - 1] == '\r')
			n--;
		if (n == 0)
			break;
		/* Obsolete line folding and lines without a field name: RFC 9112 §5.2 lets a proxy
		 * reject them, which is simpler than unfolding correctly. */
		if (pos[0] == ' ' || pos[0] == '\t' || !memchr(pos, ':', n))
			return -EINVAL;
		if (!header_is(pos, n, "host") && !header_is(pos, n, "connection") &&
		    !header_is(pos, n, "proxy-connection") &&
		    !header_is(pos, n, "proxy-authorization") && !header_is(pos, n, "keep-alive")) {
			r = strbuf_append(out, pos, n);
			if (r >= 0)
				r = strbuf_puts(out, "\r\n");
			if (r < 0)
				return r;
		}
		pos = nl ? nl + 1 : end;
	}
	return strbuf_puts(out, "Connection: close\r\n\r\n");
}

static void serve_http(session *s)
{
	_cleanup_close_ int ufd = -1;
	strbuf out = STRBUF_INIT;
	size_t end;
	const char *line_end, *sp1, *sp2;
	char method[32], version[16];
	const char *target;
	size_t target_len;
	bool is_connect;
	int r;

	for (;;) {
		end = header_end(s->buf, s->len);
		if (end > 0)
			break;
		r = read_more(s);
		if (r == -ETIMEDOUT) {
			http_reply(
				s, 408, "Request Timeout",
				"dsh-sandbox proxy: the request header did not arrive in time\n");
			return;
		}
		if (r == -E2BIG) {
			http_reply(
				s, 400, "Bad Request",
				"dsh-sandbox proxy: the request header is larger than %zu bytes\n",
				HEADER_MAX);
			return;
		}
		if (r < 0)
			return;
	}

	/* The request line: METHOD SP TARGET SP HTTP/1.x */
	line_end = memchr(s->buf, '\n', end);
	sp1 = memchr(s->buf, ' ', (size_t)(line_end - s->buf));
	sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
	if (!sp1 || !sp2 || (size_t)(sp1 - s->buf) >= sizeof(method) || sp1 == s->buf)
		goto bad;
	memcpy(method, s->buf, (size_t)(sp1 - s->buf));
	method[sp1 - s->buf] = '\0';
	for (const char *c = method; *c; c++)
		if (!token_char(*c))
			goto bad;
	{
		size_t vl = (size_t)(line_end - sp2 - 1);
		if (vl > 0 && sp2[vl] == '\r')
			vl--;
		if (vl != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 || sp2[8] < '0' || sp2[8] > '9')
			goto bad;
		memcpy(version, sp2 + 1, vl);
		version[vl] = '\0';
	}
	target = sp1 + 1;
	target_len = (size_t)(sp2 - target);
	is_connect = strcmp(method, "CONNECT") == 0;

	if (is_connect) {
		if (!parse_authority(s, target, target_len, 0))
			goto bad;
		ufd = open_upstream(s, false);
		if (ufd < 0)
			return;
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		if (send_all(s->p, s->cfd, ok, sizeof(ok) - 1, monotonic_ms() + s->p->header_ms) <
		    0)
			return;
		relay(s->p, s->cfd, ufd, s->buf + end, s->len - end);
		return;
	}

	/* Plain HTTP: an absolute-form http:// URI; the path is the rest, "/" when empty. */
	if (target_len >= 8 && strncasecmp(target, "https://", 8) == 0) {
		http_reply(
			s, 400, "Bad Request",
			"dsh-sandbox proxy: https:// goes through CONNECT, not a plain request\n");
		return;
	}
	if (target_len < 7 || strncasecmp(target, "http://", 7) != 0)
		goto bad;
	{
		const char *auth = target + 7, *tend = target + target_len;
		const char *path = auth;
		_cleanup_free_ char *path_copy = NULL;
		while (path < tend && *path != '/' && *path != '?' && *path != '#')
			path++;
		if (!parse_authority(s, auth, (size_t)(path - auth), 80))
			goto bad;
		if (path == tend || *path == '#')
			path_copy = strdup("/");
		else if (*path == '?' &&
			 asprintf(&path_copy, "/%.*s", (int)(tend - path), path) < 0)
			path_copy = NULL;
		else if (*path != '?')
			path_copy = strndup(path, (size_t)(tend - path));
		if (!path_copy || strpbrk(path_copy, " \t\r"))
			goto bad;
		r = rewrite_request(s, method, path_copy, version, line_end + 1,
				    (size_t)(s->buf + end - line_end - 1), &out);
		if (r == -EINVAL)
			goto bad;
		if (r < 0 || out.len + (s->len - end) > RELAY_BUF)
			goto fail;
		ufd = open_upstream(s, false);
		if (ufd < 0)
			goto fail;
		/* The rewritten header and any body bytes already read go up first. */
		r = strbuf_append(&out, s->buf + end, s->len - end);
		if (r < 0)
			goto fail;
		relay(s->p, s->cfd, ufd, out.buf, out.len);
	}
fail:
	strbuf_done(&out);
	return;
bad:
	strbuf_done(&out);
	http_reply(s, 400, "Bad Request", "dsh-sandbox proxy: malformed proxy request\n");
}

/* --- SOCKS5 (RFC 1928) -------------------------------------------------------------------------
 */

enum {
	SOCKS_OK = 0x00,
	SOCKS_FAILURE = 0x01,
	SOCKS_NOT_ALLOWED = 0x02,
	SOCKS_HOST_UNREACHABLE = 0x04,
	SOCKS_REFUSED = 0x05,
	SOCKS_BAD_COMMAND = 0x07,
	SOCKS_BAD_ADDRESS = 0x08,
};

/* A reply with @code and the bound address of @ufd (zeros without one). */
static int socks_reply(session *s, uint8_t code, int ufd)
{
	uint8_t r[22] = {0x05, code, 0x00, 0x01};
	size_t n = 10;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (ufd >= 0 && getsockname(ufd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			const struct sockaddr_in *in4 = (const struct sockaddr_in *)&ss;
			memcpy(r + 4, &in4->sin_addr, 4);
			memcpy(r + 8, &in4->sin_port, 2);
		} else if (ss.ss_family == AF_INET6) {
			const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
			r[3] = 0x04;
			memcpy(r + 4, &in6->sin6_addr, 16);
			memcpy(r + 20, &in6->sin6_port, 2);
			n = 22;
		}
	}
	return send_all(s->p, s->cfd, r, n, monotonic_ms() + s->p->header_ms);
}

static void serve_socks(session *s)
{
	_cleanup_close_ int ufd = -1;
	size_t nmethods, addr_end;
	uint8_t cmd, atyp;
	char raw[HOST_BUF];
	static const uint8_t no_auth[] = {0x05, 0x00}, no_method[] = {0x05, 0xFF};

	/* The greeting: VER NMETHODS METHODS... We take "no authentication" only. */
	if (need(s, 2) < 0)
		return;
	nmethods = (uint8_t)s->buf[1];
	if (need(s, 2 + nmethods) < 0)
		return;
	if (!memchr(s->buf + 2, 0x00, nmethods)) {
		if (send_all(s->p, s->cfd, no_method, 2, s->deadline) == 0)
			linger_close(s);
		return;
	}
	consume(s, 2 + nmethods);
	if (send_all(s->p, s->cfd, no_auth, 2, s->deadline) < 0)
		return;

	/* The request: VER CMD RSV ATYP DST.ADDR DST.PORT */
	if (need(s, 5) < 0 || s->buf[0] != 0x05)
		return;
	cmd = (uint8_t)s->buf[1];
	atyp = (uint8_t)s->buf[3];
	switch (atyp) {
	case 0x01:
		addr_end = 4 + 4;
		break;
	case 0x03:
		addr_end = 5 + (uint8_t)s->buf[4];
		break;
	case 0x04:
		addr_end = 4 + 16;
		break;
	default:
		if (socks_reply(s, SOCKS_BAD_ADDRESS, -1) == 0)
			linger_close(s);
		return;
	}
	if (need(s, addr_end + 2) < 0)
		return;
	if (cmd != 0x01) { /* CONNECT only: no BIND, no UDP ASSOCIATE */
		if (socks_reply(s, SOCKS_BAD_COMMAND, -1) == 0)
			linger_close(s);
		return;
	}
	if (atyp == 0x03) {
		size_t n = (uint8_t)s->buf[4];
		memcpy(raw, s->buf + 5, n);
		raw[n] = '\0';
		if (strlen(raw) != n)
			raw[0] = '\0'; /* a NUL inside the name: no host */
	} else if (!inet_ntop(atyp == 0x01 ? AF_INET : AF_INET6, s->buf + 4, raw, sizeof(raw))) {
		raw[0] = '\0';
	}
	s->port = (uint16_t)(((uint8_t)s->buf[addr_end] << 8) | (uint8_t)s->buf[addr_end + 1]);
	consume(s, addr_end + 2);
	if (s->port == 0 || network_host_canonical(raw, s->host) < 0) {
		if (socks_reply(s, SOCKS_BAD_ADDRESS, -1) == 0)
			linger_close(s);
		return;
	}
	ufd = open_upstream(s, true);
	if (ufd < 0)
		return;
	if (socks_reply(s, SOCKS_OK, ufd) < 0)
		return;
	relay(s->p, s->cfd, ufd, s->buf, s->len);
}

/* Refuses the session: records @what, answers 403 (or SOCKS5's "not allowed") with @text. */
static void refuse(session *s, bool socks, const char *what, const char *text)
{
	record_refused(s->p, what);
	if (!socks) {
		http_reply(s, 403, "Forbidden", "dsh-sandbox proxy: %s\n", text);
		return;
	}
	if (socks_reply(s, SOCKS_NOT_ALLOWED, -1) == 0)
		linger_close(s);
}

static int open_upstream(session *s, bool socks)
{
	char hp[HOST_BUF + 8], what[HOST_BUF + 80], text[HOST_BUF + 160];
	addr_list addrs;
	const char *why = NULL;
	bool wildcard = false;
	int fd;

	format_host_port(s, hp, sizeof(hp), true);
	network_verdict v = network_check(s->p->allow, s->p->deny, s->host, s->port, &wildcard);
	if (v == NETWORK_HOST_REFUSED) {
		(void)snprintf(text, sizeof(text), "the host '%s' is not in the network allow-list",
			       s->host);
		refuse(s, socks, s->host, text);
		return -1;
	}
	if (v == NETWORK_PORT_REFUSED) {
		(void)snprintf(what, sizeof(what), "%s\tport not in the allow-list", hp);
		(void)snprintf(text, sizeof(text),
			       "port %u of '%s' is not in the network allow-list (a rule without "
			       "a port allows 80 and 443)",
			       (unsigned)s->port, s->host);
		refuse(s, socks, what, text);
		return -1;
	}
	/* Checked before the name server hears of it: a refused name costs no query. */
	if (wildcard && !is_pinned(s) && !wildcard_name_admitted(s->p, s->host)) {
		(void)snprintf(what, sizeof(what), "%s\tmore than %d names under a wildcard",
			       s->host, NET_WILDCARD_NAMES_MAX);
		(void)snprintf(text, sizeof(text),
			       "'%s' is one name too many: a call resolves at most %d names that "
			       "only a wildcard allows",
			       s->host, NET_WILDCARD_NAMES_MAX);
		refuse(s, socks, what, text);
		return -1;
	}
	int r = resolve(s, &addrs, &why);
	if (r == -EACCES) {
		(void)snprintf(what, sizeof(what), "%s\t%s", s->host, why);
		(void)snprintf(text, sizeof(text),
			       "'%s' %s, which the sandbox does not reach (network.allowPrivate "
			       "lists the ranges it may)",
			       s->host, why);
		refuse(s, socks, what, text);
		return -1;
	}
	if (r < 0) {
		if (socks) {
			if (socks_reply(s, SOCKS_HOST_UNREACHABLE, -1) == 0)
				linger_close(s);
		} else {
			http_reply(s, 502, "Bad Gateway",
				   "dsh-sandbox proxy: the host '%s' could not be resolved\n",
				   s->host);
		}
		return -1;
	}
	fd = connect_any(s, &addrs);
	if (fd == -ECANCELED)
		return -1;
	if (fd < 0) {
		if (socks) {
			uint8_t code =
				fd == -ECONNREFUSED ? SOCKS_REFUSED
				: fd == -ETIMEDOUT || fd == -EHOSTUNREACH || fd == -ENETUNREACH
					? SOCKS_HOST_UNREACHABLE
					: SOCKS_FAILURE;
			if (socks_reply(s, code, -1) == 0)
				linger_close(s);
		} else {
			const char *desc = errno_desc(-fd);
			http_reply(s, 502, "Bad Gateway",
				   "dsh-sandbox proxy: could not connect to %s: %s\n", hp,
				   desc ? desc : "error");
		}
		return -1;
	}
	return fd;
}

/* --- threads ------------------------------------------------------------------------------------
 */

static void serve(net_proxy *p, int cfd)
{
	_cleanup_free_ char *buf = malloc(HEADER_MAX + 1);
	session s = {
		.p = p,
		.cfd = cfd,
		.deadline = monotonic_ms() + p->header_ms,
		.buf = buf,
	};
	int r;

	if (!buf)
		return;
	set_nodelay(cfd);
	r = need(&s, 1);
	if (r < 0) {
		/* Nothing at all within the time: the same 408 as for a partial header. */
		if (r == -ETIMEDOUT)
			http_reply(
				&s, 408, "Request Timeout",
				"dsh-sandbox proxy: the request header did not arrive in time\n");
		return;
	}
	if (s.buf[0] == 0x05)
		serve_socks(&s);
	else
		serve_http(&s);
}

static void *conn_main(void *arg)
{
	conn *c = arg;
	net_proxy *p = c->proxy;

	serve(p, c->fd);
	(void)close(c->fd);
	pthread_mutex_lock(&p->lock);
	c->done = true;
	pthread_mutex_unlock(&p->lock);
	(void)eventfd_write(p->reap_fd, 1);
	return NULL;
}

/* Joins the connection threads that have ended (all when @all, waiting for them). */
static void reap(net_proxy *p, bool all)
{
	for (;;) {
		conn *found = NULL;

		pthread_mutex_lock(&p->lock);
		for (conn **c = &p->conns; *c; c = &(*c)->next)
			if (all || (*c)->done) {
				found = *c;
				*c = found->next;
				p->n_conns--;
				break;
			}
		pthread_mutex_unlock(&p->lock);
		if (!found)
			return;
		(void)pthread_join(found->thread, NULL);
		free(found);
	}
}

static void start_conn(net_proxy *p, int fd)
{
	pthread_attr_t attr;
	conn *c;
	bool full;

	pthread_mutex_lock(&p->lock);
	full = p->n_conns >= MAX_CLIENTS;
	pthread_mutex_unlock(&p->lock);
	c = full ? NULL : calloc(1, sizeof(*c));
	if (!c) {
		(void)close(fd);
		return;
	}
	c->proxy = p;
	c->fd = fd;
	if (pthread_attr_init(&attr) != 0) {
		free(c);
		(void)close(fd);
		return;
	}
	(void)pthread_attr_setstacksize(&attr, THREAD_STACK);
	/* Linked in before the thread runs, so its end always finds itself on the list. */
	pthread_mutex_lock(&p->lock);
	c->next = p->conns;
	p->conns = c;
	p->n_conns++;
	if (pthread_create(&c->thread, &attr, conn_main, c) != 0) {
		p->conns = c->next;
		p->n_conns--;
		free(c);
		(void)close(fd);
	}
	pthread_mutex_unlock(&p->lock);
	(void)pthread_attr_destroy(&attr);
}

static void *accept_main(void *arg)
{
	net_proxy *p = arg;
	struct pollfd pfd[MAX_LISTENERS + 2];
	size_t n = 0;

	pfd[n++] = (struct pollfd){.fd = p->stop_fd, .events = POLLIN};
	pfd[n++] = (struct pollfd){.fd = p->reap_fd, .events = POLLIN};
	for (size_t i = 0; i < p->n_listen; i++)
		pfd[n++] = (struct pollfd){.fd = p->listen_fds[i], .events = POLLIN};

	for (;;) {
		int timeout = -1;

		if (poll(pfd, n, -1) < 0 && errno != EINTR)
			break;
		if (pfd[0].revents)
			break;
		if (pfd[1].revents) {
			eventfd_t v;
			(void)eventfd_read(p->reap_fd, &v);
			reap(p, false);
		}
		for (size_t i = 2; i < n; i++) {
			if (!pfd[i].revents)
				continue;
			/* A bounded batch, so that one busy listener does not starve the others. */
			for (int k = 0; k < 64; k++) {
				int fd = accept4(pfd[i].fd, NULL, NULL,
						 SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd >= 0) {
					start_conn(p, fd);
					continue;
				}
				if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
				    errno == ENOMEM)
					timeout = ACCEPT_BACKOFF;
				break;
			}
		}
		if (timeout > 0) {
			/* Out of descriptors: the pending connection stays readable, so wait
			 * rather than spin (while still answering a stop). */
			struct pollfd stop = {.fd = p->stop_fd, .events = POLLIN};
			if (poll(&stop, 1, timeout) > 0)
				break;
		}
	}
	return NULL;
}

/* --- the API -----------------------------------------------------------------------------------
 */

bool net_host_allowed(const net_rules *r, const char *host, unsigned port)
{
	return r && dsb_network_host_port_allowed(r->allow, r->deny, host, port);
}

int net_proxy_new(const net_rules *rules, net_proxy **ret)
{
	net_proxy *p;

	if (!rules || !ret)
		return -EINVAL;
	for (char *const *h = rules->hosts; h && *h; h++) {
		const char *eq = strchr(*h, '=');
		addr_list l = {.n = 0};
		if (!eq || eq == *h || !add_literal(&l, eq + 1, 0))
			return -EINVAL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->stop_fd = p->reap_fd = -1;
	p->header_ms = 10000;
	p->connect_ms = 10000;
	pthread_mutex_init(&p->lock, NULL);
	p->allow = strv_copy(rules->allow);
	p->deny = strv_copy(rules->deny);
	p->hosts = strv_copy(rules->hosts);
	p->allow_private = strv_copy(rules->allow_private);
	if (!p->allow || !p->deny || !p->hosts || !p->allow_private) {
		net_proxy_free(p);
		return -ENOMEM;
	}
	p->rules = (net_rules){.allow = p->allow,
			       .deny = p->deny,
			       .hosts = p->hosts,
			       .allow_private = p->allow_private,
			       .lookup = rules->lookup};
	*ret = p;
	return 0;
}

int net_proxy_listen(net_proxy *p, int listen_fd)
{
	int listening = 0, flags;
	socklen_t len = sizeof(listening);

	if (!p || listen_fd < 0) {
		if (listen_fd >= 0)
			(void)close(listen_fd);
		return -EINVAL;
	}
	if (p->started || p->n_listen >= MAX_LISTENERS) {
		(void)close(listen_fd);
		return p->started ? -EBUSY : -E2BIG;
	}
	if (getsockopt(listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening) {
		(void)close(listen_fd);
		return -EINVAL;
	}
	/* Ours now: non-blocking (a client that goes between poll() and accept() must not block
	 * the loop) and closed on exec, whatever the caller made. */
	flags = fcntl(listen_fd, F_GETFL);
	if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
	    fcntl(listen_fd, F_SETFD, FD_CLOEXEC) < 0) {
		int r = -errno;
		(void)close(listen_fd);
		return r;
	}
	p->listen_fds[p->n_listen++] = listen_fd;
	return 0;
}

void net_proxy_set_timeouts(net_proxy *p, unsigned header_ms, unsigned connect_ms)
{
	if (!p || p->started)
		return;
	if (header_ms)
		p->header_ms = header_ms;
	if (connect_ms)
		p->connect_ms = connect_ms;
}

int net_proxy_start(net_proxy *p)
{
	int r;

	if (!p || p->n_listen == 0)
		return -EINVAL;
	if (p->started)
		return -EBUSY;
	p->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->stop_fd < 0)
		return -errno;
	p->reap_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->reap_fd < 0)
		return -errno;
	r = pthread_create(&p->accept_thread, NULL, accept_main, p);
	if (r != 0)
		return -r;
	p->started = true;
	return 0;
}

char **net_proxy_refused(net_proxy *p)
{
	char **copy;

	if (!p)
		return NULL;
	pthread_mutex_lock(&p->lock);
	copy = strv_copy(p->refused);
	pthread_mutex_unlock(&p->lock);
	return copy;
}

void net_proxy_free(net_proxy *p)
{
	if (!p)
		return;
	if (p->started) {
		/* Stays readable: every poll of every thread returns, now and later. */
		(void)eventfd_write(p->stop_fd, 1);
		(void)pthread_join(p->accept_thread, NULL);
		reap(p, true);
	}
	for (size_t i = 0; i < p->n_listen; i++)
		(void)close(p->listen_fds[i]);
	if (p->stop_fd >= 0)
		(void)close(p->stop_fd);
	if (p->reap_fd >= 0)
		(void)close(p->reap_fd);
	pthread_mutex_destroy(&p->lock);
	strv_free(p->allow);
	strv_free(p->deny);
	strv_free(p->hosts);
	strv_free(p->allow_private);
	strv_free(p->refused);
	strv_free(p->wildcard_names);
	free(p);
}
