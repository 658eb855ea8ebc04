/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's network calls (docs/design/metadata.md, docs/design/network.md): under
 * SECCOMP_NET_NOTIFY the filter hands connect(), sendto() with a destination, and every
 * sendmsg() and sendmmsg() (whose destination lies in memory it cannot read) to the supervisor,
 * which routes them here. A network namespace keeps IP traffic in, but not a
 * pathname unix socket of the host (a daemon's socket under /run): the file system reaches it
 * from any namespace, and neither Landlock (ABI 7) nor a read-only bind governs connect. So the
 * destination is checked here, and the call is performed by us on the caller's own socket
 * (pidfd_getfd), never let through: the kernel would re-read an address the caller can change
 * after we checked it.
 *
 * Each call is answered from one reading: the address, and a send's payload and control data
 * (its SCM_RIGHTS descriptors fetched as ours), are copied once from the caller's memory; a
 * pathname is resolved once, in the caller's view, to an O_PATH descriptor beneath a writable root,
 * and we connect to that very object through /proc/self/fd/N, so no rename or symlink swapped in
 * afterwards changes what is reached.
 *
 * The handler also keeps the run's allow-list proxy (src/net/), which starts serving at the
 * run's first supervised call, and what the proxy and the checks here refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "../net/net.h"
#include "confine.h"

/* The handler's state: its rules, its proxy, what it refused. */
typedef struct network_state {
	net_supervision rules;
	net_proxy *proxy; /* the allow-list's, serving from the first call on; NULL: none */
	/* Refusals so far, counted before each answer; the distinct destinations, in order. */
	_Atomic unsigned refused;
	pthread_mutex_t lock;
	char **named;
	size_t n_named;
} network_state;

/*
 * The most payload copied from the caller for one send: a datagram beyond is EMSGSIZE, a
 * stream is sent this much and answered with the count sent, which stream semantics allow.
 */
#define SEND_MAX ((size_t)256 * 1024)

/* The most control data (msg_control) copied for one message: ENOBUFS beyond, as the kernel
 * answers beyond its optmem_max (20 to 128 KiB). */
#define CONTROL_MAX ((size_t)64 * 1024)

/* The kernel's own limits: iovecs in a message and messages in a sendmmsg() (UIO_MAXIOV);
 * descriptors in one message's SCM_RIGHTS (SCM_MAX_FD). */
#define MSG_IOV_MAX 1024
#define MSG_FDS_MAX 253

/* What one connect() or one message sent asks, once copied. */
typedef struct net_call {
	bool send; /* sendto(), sendmsg(), sendmmsg(); else connect() */
	struct sockaddr_storage addr;
	socklen_t len; /* 0: no destination (a send on a connected socket) */
	/* a send: the payload gathered, its control data with our own descriptors in place of
	 * the caller's (@fds, closed after the send), its flags */
	void *buf;
	size_t n;
	void *control;
	size_t control_len;
	int fds[MSG_FDS_MAX];
	size_t n_fds;
	int flags;
} net_call;

static void net_call_done(net_call *c)
{
	free(c->buf);
	free(c->control);
	for (size_t i = 0; i < c->n_fds; i++)
		(void)close(c->fds[i]);
}

/* The descriptor of ours that the operation uses, and the address it goes to. */
typedef struct net_op {
	int sock;
	const struct sockaddr *addr;
	socklen_t len;
	const net_call *c;
	sup_call *call; /* the notification it answers */
} net_op;

/* Records @what as refused, once (the first NETWORK_NAMED_MAX); the count is every refusal. */
static void record(network_state *s, const char *what)
{
	atomic_fetch_add(&s->refused, 1);
	(void)pthread_mutex_lock(&s->lock);
	if (s->n_named < NETWORK_NAMED_MAX && !strv_contains(s->named, what) &&
	    strv_push(&s->named, what) == 0)
		s->n_named++; /* on failure only the list loses it; the count and the answer stand
			       */
	(void)pthread_mutex_unlock(&s->lock);
}

char **network_refused(void *state, unsigned *ret_count)
{
	network_state *s = state;
	(void)pthread_mutex_lock(&s->lock);
	char **copy = strv_copy(s->named);
	*ret_count = atomic_load(&s->refused);
	(void)pthread_mutex_unlock(&s->lock);
	return copy;
}

/* Whether IPv4 @addr:@port (host order) may be reached; "A.B.C.D:PORT" into @what. */
static bool ipv4_allowed(const network_state *s, uint32_t addr, uint16_t port, char *what,
			 size_t size)
{
	struct in_addr in = {.s_addr = htonl(addr)};
	char text[INET_ADDRSTRLEN];
	(void)inet_ntop(AF_INET, &in, text, sizeof(text));
	(void)snprintf(what, size, "%s:%u", text, port);
	if (s->rules.host_network)
		return false;
	if (s->rules.proxy_port)
		return addr == INADDR_LOOPBACK && port == s->rules.proxy_port;
	/* The command's own namespace: its loopback, and 0.0.0.0 (which means this host). */
	return addr >> 24 == 127 || addr == INADDR_ANY;
}

static bool ipv6_allowed(const network_state *s, const struct sockaddr_in6 *sin6, char *what,
			 size_t size)
{
	const struct in6_addr *a = &sin6->sin6_addr;
	uint16_t port = ntohs(sin6->sin6_port);
	if (IN6_IS_ADDR_V4MAPPED(a)) {
		uint32_t v4;
		memcpy(&v4, &a->s6_addr[12], 4);
		bool ok = ipv4_allowed(s, ntohl(v4), port, what, size);
		char text[INET6_ADDRSTRLEN];
		(void)inet_ntop(AF_INET6, a, text, sizeof(text));
		(void)snprintf(what, size, "[%s]:%u", text, port);
		return ok;
	}
	char text[INET6_ADDRSTRLEN];
	(void)inet_ntop(AF_INET6, a, text, sizeof(text));
	(void)snprintf(what, size, "[%s]:%u", text, port);
	if (s->rules.proxy_port || s->rules.host_network)
		return false; /* the proxy listens on 127.0.0.1 alone */
	return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a);
}

/*
 * Whether the object @fd (found beneath a supervisor's root) also lies beneath one of the
 * network's own roots. Only for a command that shares our view of the filesystem (Landlock):
 * the descriptor's path is then the one the command sees.
 */
static bool beneath_net_roots(const network_state *s, int fd)
{
	char link[64], path[PATH_MAX];
	(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return false;
	path[n] = '\0';
	for (char *const *r = s->rules.roots; *r; r++) {
		size_t k = strlen(*r);
		if (strncmp(path, *r, k) == 0 &&
		    (path[k] == '\0' || path[k] == '/' || (k > 0 && (*r)[k - 1] == '/')))
			return true;
	}
	return false;
}

/* An abstract name as text: "@" and its bytes, anything unprintable as '?'. */
static void abstract_text(const struct sockaddr_un *sun, socklen_t len, char *what, size_t size)
{
	size_t n = len - offsetof(struct sockaddr_un, sun_path) - 1, w = 0;
	if (size < 2)
		return;
	what[w++] = '@';
	for (size_t i = 0; i < n && w + 1 < size; i++) {
		unsigned char ch = (unsigned char)sun->sun_path[1 + i];
		what[w++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	what[w] = '\0';
}

static int op_net(int unused, const void *arg)
{
	(void)unused;
	const net_op *o = arg;
	if (!o->c->send)
		return connect(o->sock, o->addr, o->len) < 0 ? -errno : 0;
	struct iovec iov = {.iov_base = o->c->buf, .iov_len = o->c->n};
	struct msghdr m = {.msg_name = o->len ? (void *)o->addr : NULL,
			   .msg_namelen = o->len,
			   .msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = o->c->control,
			   .msg_controllen = o->c->control_len};
	/* Never our SIGPIPE (it would end the supervisor): the caller gets it below. */
	int flags = o->c->flags | MSG_NOSIGNAL;
	int fl = fcntl(o->sock, F_GETFL);
	bool blocking = !(flags & MSG_DONTWAIT) && fl >= 0 && !(fl & O_NONBLOCK);
	ssize_t n;
	/*
	 * One worker answers every supervised call of the run, so a send that waits for its peer
	 * to read must not hold the others: a peer blocked in a supervised call of its own would
	 * never read. Sent without waiting; when it would block, the worker waits for room, for
	 * the caller's end, or for another call, which it yields to by answering EINTR, as a
	 * signal would before any byte went (the caller's libc or runtime sends again).
	 */
	while ((n = sendmsg(o->sock, &m, flags | MSG_DONTWAIT)) < 0 && blocking &&
	       (errno == EAGAIN || errno == EWOULDBLOCK)) {
		struct pollfd p[2] = {{.fd = o->sock, .events = POLLOUT},
				      {.fd = o->call->listener, .events = POLLIN}};
		int k = poll(p, 2, 1000);
		if (k < 0 && errno != EINTR)
			return -errno;
		if (p[1].revents)
			return -EINTR;
		if (k == 0 && !sup_call_valid(o->call))
			return -ESRCH; /* the caller is gone: nobody waits for the answer */
	}
	if (n < 0)
		return -errno;
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

/*
 * The caller's descriptors in @c's SCM_RIGHTS replaced by our own copies of them, which the
 * send then passes. The control data is walked as the kernel walks it (__scm_send()): a
 * header it would refuse is refused here first, so no caller's number is left for the kernel
 * to read as one of ours.
 */
static int take_rights(int pidfd, net_call *c)
{
	unsigned char *ctl = c->control;
	size_t off = 0;
	while (off + sizeof(struct cmsghdr) <= c->control_len) {
		struct cmsghdr *h = (struct cmsghdr *)(ctl + off);
		if (h->cmsg_len < sizeof(*h) || h->cmsg_len > c->control_len - off)
			return -EINVAL;
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
			size_t k = (h->cmsg_len - sizeof(*h)) / sizeof(int);
			unsigned char *data = CMSG_DATA(h);
			if (c->n_fds + k > MSG_FDS_MAX)
				return -EINVAL;
			for (size_t i = 0; i < k; i++) {
				int fd;
				memcpy(&fd, data + i * sizeof(int), sizeof(int));
				int ours = sup_pidfd_getfd(pidfd, fd);
				if (ours < 0)
					return ours;
				c->fds[c->n_fds++] = ours;
				memcpy(data + i * sizeof(int), &ours, sizeof(int));
			}
		}
		off += CMSG_ALIGN(h->cmsg_len);
	}
	return 0;
}

/*
 * Copies what @m asks (the caller's message: its name, its iovecs' bytes, its control data,
 * at the caller's addresses; its iovec array ours) into @c, once, on our copy @sock of the
 * caller's socket; @exact_len: the name's length is connect()'s or sendto()'s, not a
 * msghdr's. -errno as the kernel would answer.
 */
static int read_call(pid_t tid, int pidfd, int sock, const struct msghdr *m, bool exact_len,
		     net_call *c)
{
	int len = (int)m->msg_namelen;
	int r;

	/* move_addr_to_kernel(): a length beyond sockaddr_storage, or negative, is EINVAL; a
	 * msghdr's (__copy_msghdr()) is cut to it, and without a name is none. */
	if (!exact_len && !m->msg_name)
		len = 0;
	if (!exact_len && len > (int)sizeof(c->addr))
		len = (int)sizeof(c->addr);
	if (len < 0 || (size_t)len > sizeof(c->addr))
		return -EINVAL;
	c->len = (socklen_t)len;
	if (len > 0 && (r = sup_peek(tid, (uintptr_t)m->msg_name, &c->addr, (size_t)len)) < 0)
		return r;
	if (!c->send)
		return 0;

	/* The payload, gathered into one buffer: the send is one datagram, as the caller's. */
	size_t total = 0, n_iov = 0;
	struct iovec remote[MSG_IOV_MAX];
	for (size_t i = 0; i < m->msg_iovlen; i++) {
		size_t want = m->msg_iov[i].iov_len;
		if ((ssize_t)want < 0)
			return -EINVAL; /* as import_iovec() answers */
		if (total > SEND_MAX || !want)
			continue;
		if (want > SEND_MAX + 1 - total)
			want = SEND_MAX + 1 - total; /* one byte over tells that there is more */
		remote[n_iov++] =
			(struct iovec){.iov_base = m->msg_iov[i].iov_base, .iov_len = want};
		total += want;
	}
	if (total > SEND_MAX) {
		int type = 0;
		socklen_t tl = sizeof(type);
		if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &tl) < 0)
			return -errno;
		if (type != SOCK_STREAM)
			return -EMSGSIZE;
		remote[n_iov - 1].iov_len -= total - SEND_MAX;
		total = SEND_MAX;
	}
	c->n = total;
	c->buf = malloc(total ? total : 1);
	if (!c->buf)
		return -ENOMEM;
	if (total) {
		struct iovec local = {.iov_base = c->buf, .iov_len = total};
		ssize_t got = process_vm_readv(tid, &local, 1, remote, n_iov, 0);
		if (got < 0)
			return -errno;
		if ((size_t)got != total)
			return -EFAULT;
	}

	/* ____sys_sendmsg(): control data beyond what a socket may allocate is ENOBUFS. */
	if (m->msg_controllen > CONTROL_MAX)
		return -ENOBUFS;
	if (!m->msg_controllen)
		return 0;
	c->control_len = m->msg_controllen;
	c->control = malloc(c->control_len);
	if (!c->control)
		return -ENOMEM;
	r = sup_peek(tid, (uintptr_t)m->msg_control, c->control, c->control_len);
	return r < 0 ? r : take_rights(pidfd, c);
}

/* Verdicts of check(), besides an errno to answer without performing. */
#define PERFORM 0
#define REFUSE	1

/*
 * Decides @c on our copy @sock of the caller's socket: PERFORM (with *@path_fd set, >= 0, when
 * the destination is a checked pathname), REFUSE (with @what filled), or -errno. Resolving a
 * pathname reads /proc/TID: the caller checks the notification's id afterwards.
 */
static int check(const supervisor *sup, const network_state *s, pid_t tid, int sock,
		 const net_call *c, int *path_fd, char *what, size_t size)
{
	int domain = 0;
	socklen_t dl = sizeof(domain);
	if (getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &dl) < 0)
		return -errno; /* ENOTSOCK: not a socket, as connect() answers */
	sa_family_t family = c->len >= sizeof(sa_family_t) ? c->addr.ss_family : AF_UNSPEC;

	if (domain == AF_INET || domain == AF_INET6) {
		if (c->len < sizeof(sa_family_t))
			return PERFORM; /* no destination: the kernel answers (EINVAL; TCP ignores)
					 */
		if (family == AF_UNSPEC && !c->send)
			return PERFORM; /* dissolves the association */
		/* sendto() with AF_UNSPEC: IPv4 UDP and raw sockets take the address anyway. */
		if (family == AF_UNSPEC)
			family = (sa_family_t)domain;
		if (family == AF_INET) {
			if (c->len < sizeof(struct sockaddr_in))
				return -EINVAL;
			const struct sockaddr_in *sin = (const struct sockaddr_in *)&c->addr;
			return ipv4_allowed(s, ntohl(sin->sin_addr.s_addr), ntohs(sin->sin_port),
					    what, size)
				       ? PERFORM
				       : REFUSE;
		}
		if (family == AF_INET6) {
			if (c->len < 24 /* SIN6_LEN_RFC2133 */)
				return -EINVAL;
			return ipv6_allowed(s, (const struct sockaddr_in6 *)&c->addr, what, size)
				       ? PERFORM
				       : REFUSE;
		}
		return -EAFNOSUPPORT;
	}

	if (domain == AF_VSOCK) {
		/* Not confined to a network namespace: it reaches the host. */
		const struct sockaddr_vm *vm = (const struct sockaddr_vm *)&c->addr;
		if (c->len >= sizeof(*vm))
			(void)snprintf(what, size, "vsock:%u:%u", vm->svm_cid, vm->svm_port);
		else
			(void)snprintf(what, size, "vsock");
		return REFUSE;
	}

	if (domain != AF_UNIX || family != AF_UNIX ||
	    c->len <= offsetof(struct sockaddr_un, sun_path))
		return PERFORM; /* the command's own namespace, or what the kernel refuses */

	const struct sockaddr_un *sun = (const struct sockaddr_un *)&c->addr;
	if (sun->sun_path[0] == '\0') {
		/* Abstract: the namespace's own, unless there is none (then the host's). */
		if (!s->rules.proxy_port && !s->rules.host_network)
			return PERFORM;
		abstract_text(sun, c->len, what, size);
		return REFUSE;
	}
	/* The kernel's reading (unix_mkname_bsd): the bytes given, up to a NUL. */
	char path[sizeof(sun->sun_path) + 1];
	size_t plen = c->len - offsetof(struct sockaddr_un, sun_path);
	memcpy(path, sun->sun_path, plen);
	path[plen] = '\0';
	(void)snprintf(what, size, "%s", path);
	int fd = sup_open_path(sup, tid, AT_FDCWD, path, true);
	if (fd == SUP_OUTSIDE)
		return REFUSE;
	if (fd < 0)
		return fd;
	*path_fd = fd;
	return s->rules.roots && !beneath_net_roots(s, fd) ? REFUSE : PERFORM;
}

/*
 * Answers one connect(), or one message sent, described by @m (see read_call()) on our copy
 * @sock of the caller's socket, with @flags: read once, checked, performed. The bytes sent (0
 * for connect), or -errno; a refusal is recorded, sets *@refused and is -EACCES.
 */
static int answer_one(network_state *s, sup_call *call, int pidfd, int sock, const struct msghdr *m,
		      bool exact_len, int flags, bool *refused)
{
	pid_t tid = (pid_t)call->n->pid;
	net_call c = {.send = call->n->data.nr != SYS_connect, .flags = flags};
	_cleanup_close_ int path_fd = -1;
	char what[256] = "";
	int verdict = read_call(tid, pidfd, sock, m, exact_len, &c);
	if (verdict == 0)
		verdict = c.send && c.len == 0 ? PERFORM /* a connected socket's own peer */
					       : check(call->sup, s, tid, sock, &c, &path_fd, what,
						       sizeof(what));
	/*
	 * All that was read of the caller (its memory, /proc/TID) was the caller's: it is still
	 * the one blocked in this call, so its thread id was not reused meanwhile.
	 */
	if (!sup_call_valid(call))
		verdict = -ESRCH;
	if (!s->rules.supervised && verdict == PERFORM) {
		(void)snprintf(what, sizeof(what), "%s", what[0] ? what : "network");
		verdict = REFUSE; /* no rules were given: nothing is let through */
	}
	if (verdict == REFUSE) {
		record(s, what); /* before the answer, which may end the caller and the run */
		*refused = true;
		verdict = -EACCES;
	}
	if (verdict < 0) {
		net_call_done(&c);
		return verdict;
	}

	struct sockaddr_un proc = {.sun_family = AF_UNIX};
	net_op op = {.sock = sock,
		     .addr = (const struct sockaddr *)&c.addr,
		     .len = c.len,
		     .c = &c,
		     .call = call};
	if (path_fd >= 0) {
		/* That very object, whatever its path has become since. */
		(void)snprintf(proc.sun_path, sizeof(proc.sun_path), "/proc/self/fd/%d", path_fd);
		op.addr = (const struct sockaddr *)&proc;
		op.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				     strlen(proc.sun_path) + 1);
	}
	int r = sup_as_caller(op_net, -1, &op);
	if (r == -EPIPE && c.send && !(flags & MSG_NOSIGNAL)) {
		/* What the kernel would have sent the caller's thread with the error. */
		pid_t tgid = sup_tgid(tid);
		if (tgid > 0)
			(void)syscall(SYS_tgkill, tgid, tid, SIGPIPE);
	}
	net_call_done(&c);
	return r;
}

/* @m's iovec array, the caller's, copied into @iov (room for MSG_IOV_MAX); @m then points at it. */
static int peek_iov(pid_t tid, struct msghdr *m, struct iovec *iov)
{
	if (m->msg_iovlen > MSG_IOV_MAX)
		return -EMSGSIZE; /* as __copy_msghdr() answers */
	int r = m->msg_iovlen
			? sup_peek(tid, (uintptr_t)m->msg_iov, iov, m->msg_iovlen * sizeof(*iov))
			: 0;
	m->msg_iov = iov;
	return r;
}

/* The bytes @m asks to send, up to SIZE_MAX. */
static size_t iov_total(const struct msghdr *m)
{
	size_t total = 0;
	for (size_t i = 0; i < m->msg_iovlen; i++)
		total = m->msg_iov[i].iov_len > SIZE_MAX - total ? SIZE_MAX
								 : total + m->msg_iov[i].iov_len;
	return total;
}

/*
 * sendmmsg(): each message in turn, as the kernel sends them: the vector is copied once, each
 * message sent has its msg_len written back, and the answer is the count sent, or the first
 * message's error. It stops at the first message that fails, is refused, or is sent in part.
 */
static int answer_many(network_state *s, sup_call *call, int pidfd, int sock, bool *refused)
{
	const __u64 *a = call->n->data.args;
	pid_t tid = (pid_t)call->n->pid;
	unsigned vlen = (unsigned)a[2];
	int flags = (int)a[3];
	if (vlen > MSG_IOV_MAX)
		vlen = MSG_IOV_MAX; /* the kernel's own cap */
	if (vlen == 0)
		return 0;
	_cleanup_free_ struct mmsghdr *v = calloc(vlen, sizeof(*v));
	if (!v)
		return -ENOMEM;
	int r = sup_peek(tid, a[1], v, vlen * sizeof(*v));
	unsigned sent = 0;
	struct iovec iov[MSG_IOV_MAX];
	while (r >= 0 && sent < vlen) {
		struct msghdr *m = &v[sent].msg_hdr;
		r = peek_iov(tid, m, iov);
		if (r < 0)
			break;
		size_t want = iov_total(m);
		/* A message's own msg_flags count for MSG_EOR alone, as in the kernel. */
		r = answer_one(s, call, pidfd, sock, m, false, flags | (m->msg_flags & MSG_EOR),
			       refused);
		if (r < 0)
			break;
		unsigned len = (unsigned)r;
		uint64_t at = a[1] + sent * sizeof(*v) + offsetof(struct mmsghdr, msg_len);
		if ((r = sup_poke(tid, at, &len, sizeof(len))) < 0)
			break;
		sent++;
		if (len < want)
			break; /* the rest of a stream waits for the caller's next call */
	}
	return sent ? (int)sent : r;
}

/*
 * An address in the caller's memory, as a msghdr of ours holds it: never dereferenced here, only
 * read through sup_peek(), so the integer-to-pointer cast loses nothing.
 */
static void *caller_address(uint64_t a)
{
	/* NOLINTNEXTLINE(performance-no-int-to-ptr): the caller's, not ours to optimise */
	return (void *)(uintptr_t)a;
}

/* Answers the call @call names on our copy @sock of the caller's socket; see answer_one(). */
static int answer_call(network_state *s, sup_call *call, int pidfd, int sock, bool *refused)
{
	const __u64 *a = call->n->data.args;
	pid_t tid = (pid_t)call->n->pid;
	struct iovec iov[MSG_IOV_MAX];
	struct msghdr m = {0};
	int r;

	switch (call->n->data.nr) {
	case SYS_connect:
		m.msg_name = caller_address(a[1]);
		m.msg_namelen = (socklen_t)a[2];
		return answer_one(s, call, pidfd, sock, &m, true, 0, refused);
	case SYS_sendto:
		/* __sys_sendto(): a length beyond INT_MAX is INT_MAX. */
		iov[0] = (struct iovec){.iov_base = caller_address(a[1]),
					.iov_len = a[2] > INT_MAX ? INT_MAX : (size_t)a[2]};
		m = (struct msghdr){.msg_name = caller_address(a[4]),
				    .msg_namelen = (socklen_t)a[5],
				    .msg_iov = iov,
				    .msg_iovlen = 1};
		return answer_one(s, call, pidfd, sock, &m, true, (int)a[3], refused);
	case SYS_sendmsg:
		r = sup_peek(tid, a[1], &m, sizeof(m));
		if (r >= 0)
			r = peek_iov(tid, &m, iov);
		return r < 0 ? r : answer_one(s, call, pidfd, sock, &m, false, (int)a[2], refused);
	default:
		return answer_many(s, call, pidfd, sock, refused);
	}
}

static int network_answer(void *state, sup_call *call, struct seccomp_notif_resp *resp)
{
	pid_t tid = (pid_t)call->n->pid;
	bool refused = false;
	_cleanup_close_ int pidfd = sup_caller_pidfd(tid);
	_cleanup_close_ int sock =
		pidfd < 0 ? pidfd : sup_pidfd_getfd(pidfd, (int)call->n->data.args[0]);
	int r = sock < 0 ? sock : answer_call(state, call, pidfd, sock, &refused);
	if (call->gone)
		r = -ESRCH;
	if (r < 0) {
		resp->error = r;
	} else {
		resp->error = 0;
		resp->val = r;
	}
	return refused ? SUP_REFUSED : SUP_ANSWERED;
}

/* --- the handler -------------------------------------------------------------------------------
 */

static const int network_calls[] = {SYS_connect, SYS_sendto, SYS_sendmsg, SYS_sendmmsg, -1};

int network_handler_new(const net_supervision *rules, void **ret_state)
{
	network_state *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->rules = *rules;
	(void)pthread_mutex_init(&s->lock, NULL);
	*ret_state = s;
	return 0;
}

static bool network_wanted(const confine_plan *plan)
{
	return plan_net_restricted(plan);
}

/*
 * A run's state: the command's network is its own namespace's (else the host's, reached
 * through nothing but unix sockets), its sockets lie beneath the plan's network roots, and
 * with the proxy's listener (taken from @in) comes the allow-list's proxy. A proxy that cannot
 * be made leaves its listener closed: connections to it are refused, never let through.
 */
static int network_new(const confine_plan *plan, spawn_handoff *in, void **ret_state)
{
	net_supervision rules = {.supervised = true,
				 .host_network = !plan_own_network(plan),
				 .roots = plan->net_roots};
	int r = network_handler_new(&rules, ret_state);
	int fd = in->proxy;
	in->proxy = -1;
	if (r < 0 || fd < 0) {
		if (fd >= 0)
			(void)close(fd);
		return r;
	}
	network_state *s = *ret_state;
	net_rules proxy_rules = {.allow = plan->net_allow,
				 .deny = plan->net_deny,
				 .hosts = plan->net_hosts,
				 .allow_private = plan->net_private};
	if (net_proxy_new(&proxy_rules, &s->proxy) < 0) {
		(void)close(fd);
		return 0;
	}
	if (net_proxy_listen(s->proxy, fd) < 0) {
		net_proxy_free(s->proxy);
		s->proxy = NULL;
	}
	return 0;
}

/*
 * The proxy starts serving at the command's first supervised call: every connect() is one,
 * that to the proxy included (it waits in the listener's backlog meanwhile), and a command
 * that never calls one costs no thread. A proxy that cannot start is closed, so connections to
 * it are refused rather than left waiting.
 */
static void network_start(void *state)
{
	network_state *s = state;
	int r = s->proxy ? net_proxy_start(s->proxy) : 0;
	if (r < 0 && r != -EBUSY) {
		net_proxy_free(s->proxy);
		s->proxy = NULL;
	}
}

/* Adds @name to @io's named, unless it is there already. -ENOMEM. */
static int refusals_name(confine_refusals *io, const char *name)
{
	return strv_contains(io->named, name) ? 0 : strv_push(&io->named, name);
}

/* The hosts the proxy refused, then the addresses refused here, each once. */
static int network_refusals(void *state, confine_refusals *io)
{
	network_state *s = state;
	unsigned count = 0;
	_cleanup_strv_free_ char **hosts = s->proxy ? net_proxy_refused(s->proxy) : NULL;
	_cleanup_strv_free_ char **addrs = network_refused(s, &count);
	if ((s->proxy && !hosts) || !addrs)
		return -ENOMEM;
	io->network += count + (unsigned)strv_length(hosts);
	int r = 0;
	for (size_t i = 0; r >= 0 && hosts && hosts[i]; i++)
		r = refusals_name(io, hosts[i]);
	for (size_t i = 0; r >= 0 && addrs[i]; i++)
		r = refusals_name(io, addrs[i]);
	return r;
}

/* After the run: nothing is left to connect through the proxy. */
static void network_free(void *state)
{
	network_state *s = state;
	if (!s)
		return;
	net_proxy_free(s->proxy);
	strv_free(s->named);
	(void)pthread_mutex_destroy(&s->lock);
	free(s);
}

const sup_handler handler_network = {
	.name = "network",
	.calls = network_calls,
	.answer = network_answer,
	.start = network_start,
	.refusals = network_refusals,
	.free = network_free,
	.wanted = network_wanted,
	.new = network_new,
};
