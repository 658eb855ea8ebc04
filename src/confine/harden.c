/* SPDX-License-Identifier: MIT */
/*
 * What a confined child does to itself before exec, beyond Landlock: new IPC and UTS namespaces
 * (and, for a user who is not root, a user namespace that makes them possible and lets the
 * bounding set be emptied), then every capability dropped. Everything here is a system call on
 * the calling thread and allocates nothing: it runs in a vfork'ed child that shares its
 * parent's memory, and in `landlock-run` before it execs.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"

unsigned harden_user_namespace(int flags)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	if (unshare(CLONE_NEWUSER | flags) < 0)
		return 0;
	char map[64];
	(void)snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	int r = file_write_at(AT_FDCWD, "/proc/self/uid_map", map);
	/* An unprivileged gid_map needs setgroups(2) disabled first. */
	if (r >= 0)
		r = file_write_at(AT_FDCWD, "/proc/self/setgroups", "deny\n");
	if (r >= 0) {
		(void)snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
		r = file_write_at(AT_FDCWD, "/proc/self/gid_map", map);
	}
	/* Unmapped, the process would run as the overflow uid: better without the namespaces
	 * (the caller cannot tell which half failed, so this cannot be undone; fail). */
	return r < 0 ? HARDEN_FAILED : HARDEN_USER_NS;
}

/* The namespaces of harden_namespaces(), each with @extra (CLONE_NEWNET or 0) too. */
static unsigned namespaces(bool mounts, int extra)
{
	/*
	 * Root (in its own user namespace) may make them directly. Anyone else needs a user
	 * namespace first; the kernel owns the new namespaces by it. The identity is mapped to
	 * itself, so files keep their owners and the command its uid and gid. A mount namespace
	 * is wanted only for protected paths (copying the mount table costs); where it cannot be
	 * made the others still are, and the caller decides.
	 */
	const int base = CLONE_NEWIPC | CLONE_NEWUTS | extra;
	const unsigned made = HARDEN_IPC_NS | HARDEN_UTS_NS;
	if (mounts && unshare(base | CLONE_NEWNS) == 0)
		return made | HARDEN_MNT_NS;
	if (!mounts && unshare(base) == 0)
		return made;
	unsigned user = mounts ? harden_user_namespace(base | CLONE_NEWNS) : 0;
	if (user)
		return user & HARDEN_FAILED ? user : user | made | HARDEN_MNT_NS;
	if (mounts && unshare(base) == 0)
		return made;
	user = harden_user_namespace(base);
	if (!user)
		return 0; /* no namespaces here (disabled, or a container's filter): the seccomp
			   * filter then refuses IPC, see harden_filter_flags() */
	return user & HARDEN_FAILED ? user : user | made;
}

unsigned harden_namespaces(bool mounts, bool net)
{
	/* A network namespace where one can be made; the caller tells whether it needed it. */
	if (net) {
		unsigned ns = namespaces(mounts, CLONE_NEWNET);
		if (ns)
			return ns & HARDEN_FAILED ? ns : ns | HARDEN_NET_NS;
	}
	return namespaces(mounts, 0);
}

unsigned harden_net_namespace(void)
{
	if (unshare(CLONE_NEWNET) == 0)
		return HARDEN_NET_NS;
	unsigned user = harden_user_namespace(CLONE_NEWNET);
	return user & HARDEN_FAILED ? user : user ? user | HARDEN_NET_NS : 0;
}

int harden_loopback(uint16_t proxy_port)
{
	/*
	 * A new network namespace has one interface, the loopback, and it is down: the
	 * command's own local services (a test server) need it, and so does the proxy's
	 * listener. CAP_NET_ADMIN over the namespace is ours until the capabilities go.
	 */
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	int r = ioctl(fd, SIOCGIFFLAGS, &ifr);
	if (r == 0) {
		ifr.ifr_flags |= IFF_UP;
		r = ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	int e = errno;
	(void)close(fd);
	if (r < 0)
		return -e;
	if (!proxy_port)
		return 0;
	/* The proxy's door in here: the supervisor accepts on it from outside (net/proxy.c). */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct sockaddr_in sin = {.sin_family = AF_INET,
				  .sin_port = htons(proxy_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 256) < 0) {
		e = errno;
		(void)close(fd);
		return -e;
	}
	return fd;
}

unsigned harden_drop_caps(void)
{
	unsigned done = 0;

	/*
	 * The bounding set first: dropping from it needs CAP_SETPCAP, which the capset() below
	 * takes away. An empty bounding set is what keeps a uid 0 command from regaining every
	 * capability at its next execve(). Without CAP_SETPCAP (an unprivileged user outside a
	 * user namespace) it cannot be emptied; no_new_privs still stops any gain.
	 */
	bool bounding = true;
	for (int cap = 0; cap < 64; cap++) {
		/* Each drop commits new credentials (measured: most of this function's cost). */
		if (prctl(PR_CAPBSET_DROP, (unsigned long)cap, 0L, 0L, 0L) == 0)
			continue;
		if (errno == EINVAL)
			break; /* past the kernel's last capability */
		bounding = false;
	}
	if (bounding)
		done |= HARDEN_BOUNDING;

	(void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0L, 0L, 0L);
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return HARDEN_FAILED;
	return done | HARDEN_CAPS;
}

bool harden_can_mount(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32));
}

const char *dsb_hardening_to_string(dsb_hardening bit)
{
	/* One table for `probe` and `explain`: the names are what people grep their output for. */
	static const struct {
		dsb_hardening bit;
		const char *name;
	} names[] = {
		{DSB_HARDEN_CAPABILITIES, "capabilities"},
		{DSB_HARDEN_BOUNDING_SET, "bounding-set"},
		{DSB_HARDEN_NO_NEW_PRIVS, "no-new-privs"},
		{DSB_HARDEN_SECCOMP, "seccomp"},
		{DSB_HARDEN_STDIO_ONLY, "stdio-only"},
		{DSB_HARDEN_REAPED, "reaped"},
		{DSB_HARDEN_PID_NAMESPACE, "pid-namespace"},
		{DSB_HARDEN_MOUNT_NAMESPACE, "mount-namespace"},
		{DSB_HARDEN_USER_NAMESPACE, "user-namespace"},
		{DSB_HARDEN_IPC_NAMESPACE, "ipc-namespace"},
		{DSB_HARDEN_UTS_NAMESPACE, "uts-namespace"},
		{DSB_HARDEN_IPC_FILTERED, "ipc-filtered"},
		{DSB_HARDEN_SIGNAL_SCOPE, "signal-scope"},
		{DSB_HARDEN_ABSTRACT_UNIX_SCOPE, "abstract-unix-scope"},
		{DSB_HARDEN_METADATA_SUPERVISED, "metadata-supervised"},
		{DSB_HARDEN_METADATA_REFUSED, "metadata-refused"},
		{DSB_HARDEN_NET_NAMESPACE, "network-namespace"},
		{DSB_HARDEN_FILE_EVIDENCE, "file-evidence"},
	};
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (names[i].bit == bit)
			return names[i].name;
	return NULL;
}
