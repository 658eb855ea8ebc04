/* SPDX-License-Identifier: MIT */
/*
 * netns-shim [--hosts FILE] [--addr ADDRESS]... -- ARGV...
 *
 * Runs ARGV in a network namespace and a mount namespace of its own, so that a test can give
 * dsh-sandbox's proxy a machine of its choosing without touching the real one: the loopback up
 * with each ADDRESS (IPv4 or IPv6, as a /32 or /128) added to it, FILE over /etc/hosts (names
 * that resolve to those addresses), and every port bindable without privilege (a server on 443
 * as nobody). Nothing it makes leaves the namespace: no packet can reach another machine.
 *
 * As root it stays root. As any other user it first makes a user namespace that maps the user
 * to itself, which owns the other two; the capabilities that namespace gives are gone at the
 * exec, so ARGV runs as the same unprivileged user it was started as.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ipv6.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

static int die(const char *what)
{
	fprintf(stderr, "netns-shim: %s: %s\n", what, strerror(errno));
	return 125;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* A user namespace mapping our uid and gid to themselves. */
static int own_user_namespace(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER) < 0)
		return -1;
	(void)snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0 ||
	    write_file("/proc/self/setgroups", "deny\n") < 0)
		return -1;
	(void)snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_file("/proc/self/gid_map", map);
}

static int loopback_up(void)
{
	struct ifreq ifr = {0};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	(void)snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	int r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (r == 0) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
	return r;
}

/* Adds @text to the loopback: IPv4 as an alias label (lo:N), IPv6 through in6_ifreq. */
static int add_address(const char *text, int n)
{
	struct in_addr a4;
	struct in6_addr a6;
	int r = -1;
	if (inet_pton(AF_INET, text, &a4) == 1) {
		int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct ifreq ifr = {0};
		struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
		if (fd < 0)
			return -1;
		(void)snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo:%d", n);
		sin->sin_family = AF_INET;
		sin->sin_addr = a4;
		r = ioctl(fd, SIOCSIFADDR, &ifr);
		if (r == 0) {
			sin->sin_addr.s_addr = INADDR_NONE; /* a /32: no route to the rest */
			r = ioctl(fd, SIOCSIFNETMASK, &ifr);
		}
		close(fd);
		return r;
	}
	if (inet_pton(AF_INET6, text, &a6) == 1) {
		int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		struct in6_ifreq req = {.ifr6_addr = a6, .ifr6_prefixlen = 128};
		if (fd < 0)
			return -1;
		req.ifr6_ifindex = (int)if_nametoindex("lo");
		r = ioctl(fd, SIOCSIFADDR, &req);
		close(fd);
		return r;
	}
	errno = EINVAL;
	return -1;
}

int main(int argc, char **argv)
{
	const char *hosts = NULL;
	const char *addrs[32];
	int n_addrs = 0, i = 1;

	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--hosts") == 0 && i + 1 < argc)
			hosts = argv[++i];
		else if (strcmp(argv[i], "--addr") == 0 && i + 1 < argc && n_addrs < 32)
			addrs[n_addrs++] = argv[++i];
		else
			break;
	}
	if (i >= argc - 1 || strcmp(argv[i], "--") != 0) {
		fprintf(stderr,
			"usage: netns-shim [--hosts FILE] [--addr ADDRESS]... -- ARGV...\n");
		return 2;
	}
	if (getuid() != 0 && own_user_namespace() < 0)
		return die("cannot make a user namespace");
	if (unshare(CLONE_NEWNS | CLONE_NEWNET) < 0)
		return die("cannot make the namespaces");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return die("cannot make / private");
	if (hosts && mount(hosts, "/etc/hosts", NULL, MS_BIND, NULL) < 0)
		return die("cannot mount the hosts file");
	if (loopback_up() < 0)
		return die("cannot bring the loopback up");
	for (int k = 0; k < n_addrs; k++)
		if (add_address(addrs[k], k + 1) < 0)
			return die(addrs[k]);
	if (write_file("/proc/sys/net/ipv4/ip_unprivileged_port_start", "0\n") < 0)
		return die("cannot open the privileged ports");
	execvp(argv[i + 1], argv + i + 1);
	return die(argv[i + 1]);
}
