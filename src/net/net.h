/* SPDX-License-Identifier: MIT */
/*
 * Internals of the network piece (issue 17): the allow-list proxy that a supervising process
 * (the CLI's exec parent, a server's monitor) runs for a confined command whose network
 * namespace holds no route out. The command sees the proxy as 127.0.0.1:PORT: its listening
 * socket is made inside the command's namespace and handed over here (a socket keeps the
 * namespace it was made in), while the proxy connects out from the host's namespace. It speaks
 * HTTP CONNECT, plain HTTP with absolute-form URIs, and SOCKS5 on the same port, checks every
 * host against allow/deny patterns, and resolves names itself: the command never does DNS.
 *
 * Nothing here prints, exits or raises a signal.
 */
#ifndef DSB_NET_NET_H
#define DSB_NET_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* The hosts a proxy lets through; all NULL-terminated string arrays, borrowed by net_proxy_new
 * (it copies them). */
typedef struct net_rules {
	char *const *allow; /* patterns: "exact.name", "*.suffix.name" (subdomains only, not the
			       bare name), IPv4/IPv6 literals */
	char *const *deny;  /* same forms; deny wins */
	char *const *hosts; /* "name=address": the resolver's fixed answers (tests map names to
			       127.0.0.1) */
	char *const *allow_private; /* "ADDRESS/PREFIX": ranges a name may resolve into although
				       they are this machine's, private or reserved; NULL: none */
	/* The name server: fills @out with at most @max addresses of @name (ports 0), their
	 * number; 0 when it has none. NULL: getaddrinfo(). Tests give one of their own. */
	size_t (*lookup)(const char *name, struct sockaddr_storage *out, size_t max);
} net_rules;

/* What an address a name resolves to is, for the proxy. */
typedef enum net_address_kind {
	NET_ADDRESS_PUBLIC,   /* globally reachable: connected to */
	NET_ADDRESS_LOCAL,    /* this machine: loopback, unspecified, one of its interfaces' */
	NET_ADDRESS_PRIVATE,  /* RFC 1918, CGNAT, ULA, link-local (cloud metadata), site-local */
	NET_ADDRESS_RESERVED, /* multicast, broadcast, documentation, benchmarking, unassigned */
} net_address_kind;

/*
 * The kind of @a (AF_INET or AF_INET6; an IPv4-mapped, NAT64 or 6to4 address as the IPv4
 * address it carries) by its range alone (RFC 6890 and IANA's special-purpose registries):
 * NET_ADDRESS_LOCAL only for loopback and unspecified; net_proxy checks the interfaces too.
 */
net_address_kind net_address_classify(const struct sockaddr *a);

/* --- proxy.c -------------------------------------------------------------------------------- */

/*
 * Whether @host may be reached on @port under @r: dsb_network_host_port_allowed() of @r's allow
 * and deny lists, the configuration's own check (src/policy/network.c), so the proxy and the
 * configuration give one answer. False for a NULL @r. Pure. Borrows everything.
 */
bool net_host_allowed(const net_rules *r, const char *host, unsigned port);

/* At most this many distinct names that only a "*." rule allows are resolved in one proxy's
 * life (one call): a command cannot stream data out as name server queries beyond it. */
#define NET_WILDCARD_NAMES_MAX 64

typedef struct net_proxy net_proxy;

/* A stopped proxy with copies of @rules. -ENOMEM, -EINVAL (NULL @rules or @ret). */
int net_proxy_new(const net_rules *rules, net_proxy **ret);

/*
 * Adds a listening socket (SOCK_STREAM, listen() already called), owned by @p from now on, even
 * on failure. At most 4, before net_proxy_start(). -EINVAL (a bad fd), -EBUSY (started),
 * -E2BIG (a fifth).
 */
int net_proxy_listen(net_proxy *p, int listen_fd);

/* How long a client may take to send its whole request header (or SOCKS5 negotiation), and how
 * long one upstream connect() may take, in milliseconds (both 10000 by default; 0 keeps the
 * current value). Before net_proxy_start(). */
void net_proxy_set_timeouts(net_proxy *p, unsigned header_ms, unsigned connect_ms);

/* Starts serving on the proxy's own threads. 0, -EINVAL (no listener), -EBUSY (started), or
 * -errno of making the threads or the wake-up descriptor. */
int net_proxy_start(net_proxy *p);

/* A new NULL-terminated copy of the distinct hosts refused so far (canonical), in the order
 * first refused: "HOST" when no rule allows it, else "HOST[:PORT]\tWHY" (a phrase: "port not
 * in the allow-list", "resolves to a private address", ...); free with strv_free(). NULL on
 * OOM. */
char **net_proxy_refused(net_proxy *p);

/* Stops promptly (clients stuck mid-request or mid-relay included), closes every socket, joins
 * every thread, frees. A name lookup in progress (getaddrinfo cannot be interrupted) is waited
 * for. NULL is fine. */
void net_proxy_free(net_proxy *p);

#endif
