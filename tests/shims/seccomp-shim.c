/* SPDX-License-Identifier: MIT */
/*
 * seccomp-shim [--no-landlock] [--no-namespaces] [--no-openat2] [--no-seccomp] [--listener]
 *              -- ARGV...
 *
 * Runs ARGV as if the kernel lacked a feature, to test that dsh-sandbox fails closed (crun's
 * no_openat2 idea): --no-landlock makes the landlock_* system calls fail with ENOSYS, as on a
 * kernel built without Landlock; --no-namespaces makes unshare(2) and clone(2) with namespace
 * flags fail with EPERM, as where user namespaces are refused, so bwrap cannot start (clone3's
 * flags sit in memory seccomp cannot read, so clone3 reports ENOSYS and libc falls back);
 * --no-openat2 makes openat2(2) fail with ENOSYS, as on kernels before 5.6. --no-seccomp makes
 * installing a seccomp filter fail (seccomp(2) ENOSYS, PR_SET_SECCOMP EINVAL), as on a kernel
 * without CONFIG_SECCOMP_FILTER; the shim's own filter is installed before. --listener installs
 * the shim's filter with a user-notification listener of its own, kept open across the exec, as
 * a container runtime's supervisor does: a filter stacked below may then have no listener
 * (EBUSY), so dsh-sandbox's metadata supervisor cannot be had.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define SHIM_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SHIM_ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp-shim: unsupported architecture"
#endif

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule	     445
#define __NR_landlock_restrict_self  446
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif

#define NAMESPACE_FLAGS                                                                            \
	(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | \
	 CLONE_NEWCGROUP)

#define DENY(sys, err)                                    \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (sys), 0, 1), \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err))

/* Refuses @nr with EPERM when its first argument has a namespace flag; reloads the number. */
#define DENY_NAMESPACES(sys)                                                                \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (sys), 0, 4),                                   \
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])), \
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NAMESPACE_FLAGS, 0, 1),                \
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),                       \
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))

static int install(const struct sock_filter *insns, size_t n)
{
	struct sock_fprog prog = {.len = (unsigned short)n, .filter = (struct sock_filter *)insns};
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

int main(int argc, char **argv)
{
	int no_landlock = 0, no_namespaces = 0, no_openat2 = 0, no_seccomp = 0, listener = 0, i = 1;
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--no-landlock") == 0)
			no_landlock = 1;
		else if (strcmp(argv[i], "--no-namespaces") == 0)
			no_namespaces = 1;
		else if (strcmp(argv[i], "--no-openat2") == 0)
			no_openat2 = 1;
		else if (strcmp(argv[i], "--no-seccomp") == 0)
			no_seccomp = 1;
		else if (strcmp(argv[i], "--listener") == 0)
			listener = 1;
		else {
			fprintf(stderr, "seccomp-shim: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr,
			"usage: seccomp-shim [--no-landlock] [--no-namespaces] [--no-openat2] "
			"[--no-seccomp] [--listener] -- ARGV...\n");
		return 2;
	}

	static const struct sock_filter head[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SHIM_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	};
	static const struct sock_filter landlock[] = {
		DENY(__NR_landlock_create_ruleset, ENOSYS),
		DENY(__NR_landlock_add_rule, ENOSYS),
		DENY(__NR_landlock_restrict_self, ENOSYS),
	};
	static const struct sock_filter namespaces[] = {
		DENY(__NR_clone3, ENOSYS),
		DENY_NAMESPACES(__NR_unshare),
		DENY_NAMESPACES(__NR_clone),
	};
	static const struct sock_filter openat2[] = {
		DENY(__NR_openat2, ENOSYS),
	};
	/* As a kernel without CONFIG_SECCOMP_FILTER: seccomp(2) ENOSYS, PR_SET_SECCOMP EINVAL. */
	static const struct sock_filter seccomp[] = {
		DENY(__NR_seccomp, ENOSYS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_SECCOMP, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
	};
	static const struct sock_filter tail[] = {
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	struct sock_filter prog[64];
	size_t n = 0;
#define APPEND(part)                                  \
	do {                                          \
		memcpy(prog + n, part, sizeof(part)); \
		n += sizeof(part) / sizeof(part[0]);  \
	} while (0)
	APPEND(head);
	if (no_landlock)
		APPEND(landlock);
	if (no_namespaces)
		APPEND(namespaces);
	if (no_openat2)
		APPEND(openat2);
	if (no_seccomp)
		APPEND(seccomp);
	APPEND(tail);

	if (listener) {
		/* Its listener must stay open: a closed one no longer counts as the chain's. */
		struct sock_fprog fprog = {.len = (unsigned short)n, .filter = prog};
		int fd = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0
				 ? -1
				 : (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
						SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
		if (fd < 0 || fcntl(fd, F_SETFD, 0) < 0) {
			perror("seccomp-shim: installing the filter with a listener");
			return 2;
		}
	} else if (install(prog, n)) {
		perror("seccomp-shim: installing the filter");
		return 2;
	}
	execvp(argv[i + 1], argv + i + 1);
	perror("seccomp-shim: exec");
	return 127;
}
