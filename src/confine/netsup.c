/* SPDX-License-Identifier: MIT */
/*
 * The network half of the supervisor (docs/design/metadata.md): under SECCOMP_NET_NOTIFY the
 * filter hands connect() and sendto() with a destination to meta_handle(), which comes here.
 * A network namespace keeps IP traffic in, but not a pathname unix socket of the host (a
 * daemon's socket under /run): the file system reaches it from any namespace, and neither
 * Landlock (ABI 7) nor a read-only bind governs connect. So the destination is checked here,
 * and the call is performed by us on the caller's own socket (pidfd_getfd), never let through:
 * the kernel would re-read an address the caller can change after we checked it.
 *
 * Each call is answered from one reading: the address (and a datagram's payload) is copied
 * once from the caller's memory; a pathname is resolved once, in the caller's view, to an
 * O_PATH descriptor beneath a writable root, and we connect to that very object through
 * /proc/self/fd/N, so no rename or symlink swapped in afterwards changes what is reached.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "../core/cleanup.h"
#include "metadata-int.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

/* The largest datagram copied from the caller for sendto(): EMSGSIZE beyond. */
#define SEND_MAX ((size_t)256 * 1024)

/* What one connect() or sendto() asks, once copied. */
typedef struct net_call {
	bool sendto;
	int fd; /* the caller's descriptor number */
	struct sockaddr_storage addr;
	socklen_t len;
	/* sendto(): the payload, its flags */
	void *buf;
	size_t n;
	int flags;
} net_call;

/* The descriptor of ours that the operation uses, and the address it goes to. */
typedef struct net_op {
	int sock;
	const struct sockaddr *addr;
	socklen_t len;
	const net_call *c;
} net_op;

/* The thread-group leader of thread @tid (a pidfd of another thread needs Linux 6.9). */
static pid_t tgid_of(pid_t tid)
{
	char path[64], buf[512];
	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t len = read(fd, buf, sizeof(buf) - 1);
	if (len <= 0)
		return -ESRCH;
	buf[len] = '\0';
	const char *t = strstr(buf, "\nTgid:");
	if (!t)
		return -ESRCH;
	long tgid = strtol(t + 6, NULL, 10);
	return tgid > 0 ? (pid_t)tgid : -ESRCH;
}

/* Our own copy of descriptor @fd of the caller @tid (the same open socket); -errno. */
static int fetch_fd(pid_t tid, int fd)
{
	pid_t tgid = tgid_of(tid);
	if (tgid < 0)
		return tgid;
	_cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, tgid, 0);
	if (pidfd < 0)
		return -errno;
	int ours = (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
	return ours < 0 ? -errno : ours;
}

/* Records @what as refused, once; the count is the caller's (every refusal). */
static void record(meta_supervisor *s, const char *what)
{
	atomic_fetch_add(&s->net_refused, 1);
	(void)pthread_mutex_lock(&s->net_lock);
	bool known = false;
	for (size_t i = 0; !known && i < s->n_net_refused; i++)
		known = strcmp(s->net_refused_list[i], what) == 0;
	if (!known) {
		char *copy = strdup(what);
		char **list =
			copy ? realloc(s->net_refused_list, (s->n_net_refused + 2) * sizeof(*list))
			     : NULL;
		if (list) {
			list[s->n_net_refused++] = copy;
			list[s->n_net_refused] = NULL;
			s->net_refused_list = list;
		} else {
			free(copy); /* only the list loses it; the count and the answer stand */
		}
	}
	(void)pthread_mutex_unlock(&s->net_lock);
}

char **meta_net_refused(meta_supervisor *s)
{
	(void)pthread_mutex_lock(&s->net_lock);
	char **copy = calloc(s->n_net_refused + 1, sizeof(*copy));
	for (size_t i = 0; copy && i < s->n_net_refused; i++) {
		copy[i] = strdup(s->net_refused_list[i]);
		if (!copy[i]) {
			for (size_t k = 0; k < i; k++)
				free(copy[k]);
			free(copy);
			copy = NULL;
		}
	}
	(void)pthread_mutex_unlock(&s->net_lock);
	return copy;
}

/* Whether IPv4 @addr:@port (host order) may be reached; "A.B.C.D:PORT" into @what. */
static bool ipv4_allowed(const meta_supervisor *s, uint32_t addr, uint16_t port, char *what,
			 size_t size)
{
	struct in_addr in = {.s_addr = htonl(addr)};
	char text[INET_ADDRSTRLEN];
	(void)inet_ntop(AF_INET, &in, text, sizeof(text));
	(void)snprintf(what, size, "%s:%u", text, port);
	if (s->net.host_network)
		return false;
	if (s->net.proxy_port)
		return addr == INADDR_LOOPBACK && port == s->net.proxy_port;
	/* The command's own namespace: its loopback, and 0.0.0.0 (which means this host). */
	return addr >> 24 == 127 || addr == INADDR_ANY;
}

static bool ipv6_allowed(const meta_supervisor *s, const struct sockaddr_in6 *sin6, char *what,
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
	if (s->net.proxy_port || s->net.host_network)
		return false; /* the proxy listens on 127.0.0.1 alone */
	return IN6_IS_ADDR_LOOPBACK(a) || IN6_IS_ADDR_UNSPECIFIED(a);
}

/*
 * Whether the object @fd (found beneath a supervisor's root) also lies beneath one of the
 * network's own roots. Only for a command that shares our view of the filesystem (Landlock):
 * the descriptor's path is then the one the command sees.
 */
static bool beneath_net_roots(const meta_supervisor *s, int fd)
{
	char link[64], path[PATH_MAX];
	(void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return false;
	path[n] = '\0';
	for (char *const *r = s->net.roots; *r; r++) {
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
	if (!o->c->sendto)
		return connect(o->sock, o->addr, o->len) < 0 ? -errno : 0;
	/* Never our SIGPIPE (it would end the supervisor): the caller gets it below. */
	ssize_t n =
		sendto(o->sock, o->c->buf, o->c->n, o->c->flags | MSG_NOSIGNAL, o->addr, o->len);
	if (n < 0)
		return -errno;
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

/* Copies the call's address and payload from the caller; -errno as the kernel would answer. */
static int read_call(const struct seccomp_notif *n, net_call *c)
{
	const __u64 *a = n->data.args;
	pid_t tid = (pid_t)n->pid;
	uint64_t addr = c->sendto ? a[4] : a[1];
	int len = (int)(c->sendto ? a[5] : a[2]);
	int r;

	c->fd = (int)a[0];
	/* move_addr_to_kernel(): a length beyond sockaddr_storage, or negative, is EINVAL. */
	if (len < 0 || (size_t)len > sizeof(c->addr))
		return -EINVAL;
	c->len = (socklen_t)len;
	if (len > 0 && (r = meta_peek(tid, addr, &c->addr, (size_t)len)) < 0)
		return r;
	if (c->sendto) {
		c->n = (size_t)a[2];
		c->flags = (int)a[3];
		if (c->n > SEND_MAX)
			return -EMSGSIZE;
		c->buf = malloc(c->n ? c->n : 1);
		if (!c->buf)
			return -ENOMEM;
		if (c->n && (r = meta_peek(tid, a[1], c->buf, c->n)) < 0)
			return r;
	}
	return 0;
}

/* Verdicts of check(), besides an errno to answer without performing. */
#define PERFORM 0
#define REFUSE	1

/*
 * Decides @c on our copy @sock of the caller's socket: PERFORM (with *@path_fd set, >= 0, when
 * the destination is a checked pathname), REFUSE (with @what filled), or -errno. Resolving a
 * pathname reads /proc/TID: the caller checks the notification's id afterwards.
 */
static int check(const meta_supervisor *s, pid_t tid, int sock, const net_call *c, int *path_fd,
		 char *what, size_t size)
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
		if (family == AF_UNSPEC && !c->sendto)
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
		if (!s->net.proxy_port && !s->net.host_network)
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
	int fd = meta_open_path(s, tid, AT_FDCWD, path, true);
	if (fd == META_OUTSIDE)
		return REFUSE;
	if (fd < 0)
		return fd;
	*path_fd = fd;
	return s->net.roots && !beneath_net_roots(s, fd) ? REFUSE : PERFORM;
}

int meta_net_answer(meta_supervisor *s, int listener, const struct seccomp_notif *n,
		    struct seccomp_notif_resp *resp)
{
	pid_t tid = (pid_t)n->pid;
	net_call c = {.sendto = n->data.nr == SYS_sendto};
	_cleanup_close_ int sock = -1, path_fd = -1;
	char what[256] = "";
	int verdict = read_call(n, &c);
	if (verdict == 0) {
		sock = fetch_fd(tid, c.fd);
		verdict = sock < 0 ? sock : check(s, tid, sock, &c, &path_fd, what, sizeof(what));
	}
	/*
	 * All that was read of the caller (its memory, /proc/TID) was the caller's: it is still
	 * the one blocked in this call, so its thread id was not reused meanwhile.
	 */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) < 0) {
		free(c.buf);
		resp->error = -ESRCH;
		return 0;
	}
	if (!s->net.supervised && verdict == PERFORM) {
		(void)snprintf(what, sizeof(what), "%s", what[0] ? what : "network");
		verdict = REFUSE; /* no rules were given: nothing is let through */
	}
	if (verdict == REFUSE) {
		free(c.buf);
		record(s, what); /* before the answer, which may end the caller and the run */
		resp->error = -EACCES;
		return 1;
	}
	if (verdict < 0) {
		free(c.buf);
		resp->error = verdict;
		return 0;
	}

	struct sockaddr_un proc = {.sun_family = AF_UNIX};
	net_op op = {.sock = sock, .addr = (const struct sockaddr *)&c.addr, .len = c.len, .c = &c};
	if (path_fd >= 0) {
		/* That very object, whatever its path has become since. */
		(void)snprintf(proc.sun_path, sizeof(proc.sun_path), "/proc/self/fd/%d", path_fd);
		op.addr = (const struct sockaddr *)&proc;
		op.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
				     strlen(proc.sun_path) + 1);
	}
	int r = meta_as_caller(op_net, -1, &op);
	if (r == -EPIPE && c.sendto && !(c.flags & MSG_NOSIGNAL)) {
		/* What the kernel would have sent the caller's thread with the error. */
		pid_t tgid = tgid_of(tid);
		if (tgid > 0)
			(void)syscall(SYS_tgkill, tgid, tid, SIGPIPE);
	}
	free(c.buf);
	if (r < 0) {
		resp->error = r;
	} else {
		resp->error = 0;
		resp->val = r;
	}
	return 0;
}
