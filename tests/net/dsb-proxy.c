/* SPDX-License-Identifier: MIT */
/*
 * dsb-proxy: the allow-list proxy of src/net/ on its own, for benchmarks and manual checks
 * (curl -x http://127.0.0.1:PORT ...). Never installed.
 *
 *	dsb-proxy [--port N] [--allow PATTERN]... [--deny PATTERN]... [--host NAME=ADDR]...
 *
 * Listens on 127.0.0.1:N (0, the default: any free port), prints the port on a line of its own
 * once it serves, and serves until SIGINT or SIGTERM; then prints the refused hosts, one a line
 * on stderr.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "src/core/core.h"
#include "src/net/net.h"

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{"port", required_argument, NULL, 'p'},
		{"allow", required_argument, NULL, 'a'},
		{"deny", required_argument, NULL, 'd'},
		{"host", required_argument, NULL, 'H'},
		{NULL, 0, NULL, 0},
	};
	_cleanup_strv_free_ char **allow = NULL, **deny = NULL, **hosts = NULL;
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sin);
	net_proxy *p = NULL;
	unsigned long port = 0;
	sigset_t set;
	int c, fd, sig, r = 0, one = 1;

	while ((c = getopt_long(argc, argv, "", options, NULL)) != -1) {
		switch (c) {
		case 'p':
			port = strtoul(optarg, NULL, 10);
			break;
		case 'a':
			r = strv_push(&allow, optarg);
			break;
		case 'd':
			r = strv_push(&deny, optarg);
			break;
		case 'H':
			r = strv_push(&hosts, optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [--port N] [--allow P]... [--deny P]... "
				"[--host NAME=ADDR]...\n",
				argv[0]);
			return 2;
		}
		if (r < 0) {
			fprintf(stderr, "dsb-proxy: out of memory\n");
			return 1;
		}
	}
	if (port > 65535) {
		fprintf(stderr, "dsb-proxy: bad port\n");
		return 2;
	}
	r = net_proxy_new(&(net_rules){.allow = allow, .deny = deny, .hosts = hosts}, &p);
	if (r < 0) {
		fprintf(stderr, "dsb-proxy: %s\n", strerror(-r));
		return 1;
	}
	sin.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 512) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) < 0) {
		fprintf(stderr, "dsb-proxy: listening socket: %s\n", strerror(errno));
		return 1;
	}
	/* Blocked before the proxy's threads start, so they inherit the mask and sigwait() alone
	 * takes the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	r = net_proxy_listen(p, fd);
	if (r >= 0)
		r = net_proxy_start(p);
	if (r < 0) {
		fprintf(stderr, "dsb-proxy: %s\n", strerror(-r));
		net_proxy_free(p);
		return 1;
	}
	printf("%u\n", (unsigned)ntohs(sin.sin_port));
	fflush(stdout);
	(void)sigwait(&set, &sig);
	{
		_cleanup_strv_free_ char **refused = net_proxy_refused(p);
		for (char **h = refused; h && *h; h++)
			fprintf(stderr, "refused: %s\n", *h);
	}
	net_proxy_free(p);
	return 0;
}
