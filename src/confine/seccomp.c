/* SPDX-License-Identifier: MIT */
/*
 * The run-time half of the system-call filter: picks one of the programs seccomp-gen built for
 * this target and hands it to the kernel, either directly (Landlock backend, in the child before
 * execve) or as a memfd for `bwrap --seccomp`. No libseccomp here: the programs are constant
 * arrays, so confining a command costs one system call and no allocation.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../core/cleanup.h"
#include "seccomp.h"

const seccomp_program *seccomp_program_for(unsigned flags)
{
	if (!seccomp_flags_built(flags))
		return NULL;
	return &seccomp_programs[flags];
}

const seccomp_program *seccomp_runner_program(unsigned flags)
{
	if (!seccomp_runner_built(flags))
		return NULL;
	return &seccomp_runner_programs[flags];
}

const seccomp_program *seccomp_net_only_program(void)
{
	return seccomp_runner_program(SECCOMP_NET_NOTIFY);
}

bool seccomp_continue_available(void)
{
	return kernel_at_least(5, 5);
}

bool kernel_at_least(unsigned long major_want, unsigned long minor_want)
{
	struct utsname u;
	if (uname(&u) < 0)
		return false;
	char *dot;
	unsigned long major = strtoul(u.release, &dot, 10);
	if (*dot != '.')
		return false;
	unsigned long minor = strtoul(dot + 1, NULL, 10);
	return major > major_want || (major == major_want && minor >= minor_want);
}

/*
 * @prog in the kernel's form, after no_new_privs: without it an unprivileged process may not
 * install a filter (it could make a set-uid program fail in a way it does not expect); Landlock
 * has set it already. 0 or -errno.
 */
static int prepare(const seccomp_program *prog, struct sock_fprog *ret)
{
	if (!prog || !prog->insns || prog->len == 0)
		return -EINVAL;
	/* The kernel takes a non-const pointer but only copies the instructions. */
	ret->len = prog->len;
	ret->filter = (struct sock_filter *)prog->insns;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
}

int seccomp_install(const seccomp_program *prog)
{
	struct sock_fprog fprog;
	int r = prepare(prog, &fprog);
	if (r < 0)
		return r;
#ifdef SYS_seccomp
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
#endif
	/* Linux 3.5 to 3.16: the same filter through prctl. */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0)
		return -errno;
	return 0;
}

int seccomp_install_listener(const seccomp_program *prog)
{
	struct sock_fprog fprog;
	int r = prepare(prog, &fprog);
	if (r < 0)
		return r;
#if defined(SYS_seccomp) && defined(SECCOMP_FILTER_FLAG_NEW_LISTENER)
	/* The listener comes back close-on-exec: the command never holds it. */
	int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
			      SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
	return fd < 0 ? -errno : fd;
#else
	return -ENOSYS;
#endif
}

int seccomp_program_memfd(const seccomp_program *prog)
{
	_cleanup_close_ int fd = -1;

	if (!prog || !prog->insns || prog->len == 0)
		return -EINVAL;
	fd = memfd_create("dsb-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;

	const char *p = (const char *)prog->insns;
	size_t left = (size_t)prog->len * sizeof(prog->insns[0]);
	while (left > 0) {
		ssize_t n = write(fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		left -= (size_t)n;
	}
	/* Sealed, so nothing that shares the fd (bwrap, before it reads) can change the rules. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		return -errno;
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	return TAKE_FD(fd);
}
