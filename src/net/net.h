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

/* The hosts a proxy lets through; all NULL-terminated string arrays, borrowed by net_proxy_new
 * (it copies them). */
typedef struct net_rules {
	char *const *allow; /* patterns: "exact.name", "*.suffix.name" (subdomains only, not the
			       bare name), IPv4/IPv6 literals */
	char *const *deny;  /* same forms; deny wins */
	char *const *hosts; /* "name=address": the resolver's fixed answers (tests map names to
			       127.0.0.1) */
} net_rules;

/* --- proxy.c -------------------------------------------------------------------------------- */

/*
 * Whether @host may be reached under @r: dsb_network_host_allowed() of @r's allow and deny
 * lists, the configuration's own check (src/policy/network.c), so the proxy and the
 * configuration give one answer. False for a NULL @r. Pure. Borrows everything.
 */
bool net_host_allowed(const net_rules *r, const char *host);

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
 * first refused; free with strv_free(). NULL on OOM. */
char **net_proxy_refused(net_proxy *p);

/* Stops promptly (clients stuck mid-request or mid-relay included), closes every socket, joins
 * every thread, frees. A name lookup in progress (getaddrinfo cannot be interrupted) is waited
 * for. NULL is fine. */
void net_proxy_free(net_proxy *p);

#endif
