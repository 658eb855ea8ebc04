/* SPDX-License-Identifier: MIT */
/* Placeholder until the generated filter lands (same interface). */
#ifndef DSB_CONFINE_SECCOMP_H
#define DSB_CONFINE_SECCOMP_H

#include <linux/filter.h>

#define SECCOMP_DENY_NAMESPACES	     (1u << 0)
#define SECCOMP_DENY_PROCESS_TARGETS (1u << 1)
#define SECCOMP_DENY_IPC	     (1u << 2)

typedef struct seccomp_program {
	const struct sock_filter *insns;
	unsigned short len;
} seccomp_program;

const seccomp_program *seccomp_program_for(unsigned flags);
int seccomp_install(const seccomp_program *prog);

#endif
