/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the system-call filter (src/confine/seccomp.h). A small classic-BPF interpreter
 * runs every generated program on synthetic seccomp_data, table-driven: each denied call is
 * refused with its errno in exactly the variants that deny it, on the native ABI and, on
 * x86_64, on the i386 and x32 ones; ordinary calls pass everywhere; an unknown architecture is
 * refused. Then the programs go to the kernel for real, in forked children (installing is
 * irreversible): the kernel accepts them, refused calls see EPERM, ordinary programs run, and
 * bwrap takes the memfd form through --seccomp.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/confine/confine.h"
#include "src/confine/seccomp.h"
#include "helpers.h"

/* --- a classic-BPF interpreter, the subset a seccomp filter may use --------------------------
 */

/* Runs @prog on @d as the kernel would; fails the test on anything the kernel would reject. */
static uint32_t bpf_run(const seccomp_program *prog, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};

	for (size_t pc = 0; pc < prog->len; pc++) {
		const struct sock_filter *f = &prog->insns[pc];
		uint32_t k = f->k, operand = BPF_SRC(f->code) == BPF_X ? x : f->k;
		bool taken = false;

		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
		case BPF_LDX: {
			uint32_t v = 0;
			if (BPF_MODE(f->code) == BPF_ABS && BPF_SIZE(f->code) == BPF_W) {
				if (k % 4 != 0 || k + 4 > sizeof(*d))
					fail_msg("pc %zu: load at %u", pc, k);
				memcpy(&v, (const char *)d + k, 4);
			} else if (BPF_MODE(f->code) == BPF_IMM) {
				v = k;
			} else if (BPF_MODE(f->code) == BPF_MEM && k < BPF_MEMWORDS) {
				v = mem[k];
			} else if (BPF_MODE(f->code) == BPF_LEN) {
				v = sizeof(*d);
			} else {
				fail_msg("pc %zu: load opcode %#x", pc, f->code);
			}
			if (BPF_CLASS(f->code) == BPF_LD)
				a = v;
			else
				x = v;
			break;
		}
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				fail_msg("pc %zu: store at %u", pc, k);
			mem[k] = BPF_CLASS(f->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD:
				a += operand;
				break;
			case BPF_SUB:
				a -= operand;
				break;
			case BPF_MUL:
				a *= operand;
				break;
			case BPF_DIV:
				if (operand == 0)
					return 0; /* the kernel's verdict for a division by zero */
				a /= operand;
				break;
			case BPF_MOD:
				if (operand == 0)
					return 0;
				a %= operand;
				break;
			case BPF_AND:
				a &= operand;
				break;
			case BPF_OR:
				a |= operand;
				break;
			case BPF_XOR:
				a ^= operand;
				break;
			case BPF_LSH:
				a = operand < 32 ? a << operand : 0;
				break;
			case BPF_RSH:
				a = operand < 32 ? a >> operand : 0;
				break;
			case BPF_NEG:
				a = -a;
				break;
			default:
				fail_msg("pc %zu: alu opcode %#x", pc, f->code);
			}
			break;
		case BPF_JMP:
			switch (BPF_OP(f->code)) {
			case BPF_JA:
				pc += k;
				continue;
			case BPF_JEQ:
				taken = a == operand;
				break;
			case BPF_JGT:
				taken = a > operand;
				break;
			case BPF_JGE:
				taken = a >= operand;
				break;
			case BPF_JSET:
				taken = (a & operand) != 0;
				break;
			default:
				fail_msg("pc %zu: jump opcode %#x", pc, f->code);
			}
			pc += taken ? f->jt : f->jf;
			break;
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? a : k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			fail_msg("pc %zu: opcode %#x", pc, f->code);
		}
	}
	fail_msg("the program ran off its end");
	return 0;
}

/* --- the rules, case by case ------------------------------------------------------------------
 */

#if defined(__x86_64__)
#define NATIVE	AUDIT_ARCH_X86_64
#define FOREIGN AUDIT_ARCH_AARCH64
#elif defined(__aarch64__)
#define NATIVE	AUDIT_ARCH_AARCH64
#define FOREIGN AUDIT_ARCH_X86_64
#endif

#define ALWAYS 0u	  /* denied in every variant */
#define NEVER  (1u << 31) /* allowed in every variant */
#define NS     SECCOMP_DENY_NAMESPACES
#define PT     SECCOMP_DENY_PROCESS_TARGETS
#define IPC    SECCOMP_DENY_IPC
#define META   (1u << 30) /* a metadata call: notified, refused or allowed by the metadata flag */
#define FILES  (1u << 29) /* a write-class file call: notified with FILES_NOTIFY, else allowed */
#define FREAD  (1u << 28) /* a read-only open: notified with FILES_READ_NOTIFY, else allowed */

#define X32_BIT		 0x40000000u
#define HIGH		 (1ULL << 32) /* a bit the kernel reads but a 32-bit compare would miss */
#define IPC_SHMDT	 22	      /* ipc(2) call numbers, linux/ipc.h */
#define IPC_SHMGET	 23
#define IPC_SEMOP	 1
#define IOPRIO_PGRP	 2 /* IOPRIO_WHO_PGRP */
#define IOPRIO_PROC	 1 /* IOPRIO_WHO_PROCESS */
#define SIGCHLD_ONLY	 17
#define FS_SETFLAGS	 0x40086602u /* FS_IOC_SETFLAGS, 64-bit */
#define FS_SETFLAGS32	 0x40046602u /* FS_IOC32_SETFLAGS */
#define FS_FSSETXATTR	 0x401c5820u /* FS_IOC_FSSETXATTR */
#define FS_GETFLAGS	 0x80086601u /* FS_IOC_GETFLAGS: reading is not a change */
#define NR_SETXATTRAT	 463	     /* newer than Debian 12's libseccomp: the prefix's rules */
#define NR_GETXATTRAT	 464
#define NR_REMOVEXATTRAT 466
#define NR_FILE_GETATTR	 468
#define NR_FILE_SETATTR	 469
#define THREAD_FLAGS                                                                        \
	(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | \
	 CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID)

typedef struct filter_case {
	const char *what;
	uint32_t arch;
	uint32_t nr;
	uint64_t a0, a1;
	unsigned denied_by; /* ALWAYS, NEVER, or the SECCOMP_DENY_* bits that deny it */
	int err;
} filter_case;

/* Each macro names the case itself: '#' does not expand its operand (SYS_keyctl stays a name). */
#define ENTRY(arch, nr, a0, a1, by, err, what)                  \
	{                                                       \
		what, arch, (uint32_t)(nr), (a0), (a1), by, err \
	}
#define CASE(arch, nr, a0, a1, by, err) \
	ENTRY(arch, nr, a0, a1, by, err, #arch " " #nr "(" #a0 ", " #a1 ")")
#define DENY(arch, nr, a0, a1, by) \
	ENTRY(arch, nr, a0, a1, by, EPERM, #arch " " #nr "(" #a0 ", " #a1 ")")
#define PASS(arch, nr, a0, a1) ENTRY(arch, nr, a0, a1, NEVER, 0, #arch " " #nr "(" #a0 ", " #a1 ")")

/* One case per line reads as a table. */
/* clang-format off */
#ifdef NATIVE
static const filter_case cases[] = {
	/* ordinary tools: never refused */
	PASS(NATIVE, SYS_read, 0, 0),
	PASS(NATIVE, SYS_write, 1, 0),
	CASE(NATIVE, SYS_openat, AT_FDCWD, 0, FREAD, 0),
	PASS(NATIVE, SYS_execve, 0, 0),
	PASS(NATIVE, SYS_getpid, 0, 0),
	PASS(NATIVE, SYS_ptrace, 0, 0),
	PASS(NATIVE, SYS_personality, 0xffffffff, 0),
	PASS(NATIVE, SYS_seccomp, 1, 0),
	PASS(NATIVE, SYS_landlock_restrict_self, 3, 0),
	PASS(NATIVE, SYS_shmdt, 0, 0),
	PASS(NATIVE, SYS_kill, 1, 0),
	PASS(NATIVE, SYS_getpriority, PRIO_PGRP, 1),
	PASS(NATIVE, SYS_ioctl, 0, TCGETS),
	PASS(NATIVE, SYS_ioctl, 0, FIONREAD),
	PASS(NATIVE, SYS_ioctl, TIOCSTI, TCGETS),
	PASS(NATIVE, SYS_clone, SIGCHLD_ONLY, 0),
	PASS(NATIVE, SYS_clone, THREAD_FLAGS, 0),
	PASS(NATIVE, SYS_unshare, CLONE_FILES | CLONE_FS, 0),
	PASS(NATIVE, SYS_setpriority, PRIO_PROCESS, 0),
	PASS(NATIVE, SYS_ioprio_set, IOPRIO_PROC, 0),
	PASS(NATIVE, SYS_prlimit64, 0, RLIMIT_NOFILE),
	PASS(NATIVE, SYS_sched_setaffinity, 0, 8),
	PASS(NATIVE, SYS_sched_setscheduler, 0, 0),
	PASS(NATIVE, SYS_move_pages, 0, 1),

	/* terminal input injection, with the request masked to 32 bits */
	DENY(NATIVE, SYS_ioctl, 0, TIOCSTI, ALWAYS),
	DENY(NATIVE, SYS_ioctl, 2, TIOCLINUX, ALWAYS),
	DENY(NATIVE, SYS_ioctl, 0, HIGH | TIOCSTI, ALWAYS),
	DENY(NATIVE, SYS_ioctl, 0, 0xffffffff00000000ULL | TIOCSTI, ALWAYS),
	DENY(NATIVE, SYS_ioctl, 0, HIGH | TIOCLINUX, ALWAYS),

	/* keyrings, mounts, kernel code and configuration, system-wide state */
	DENY(NATIVE, SYS_add_key, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_keyctl, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_request_key, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_mount, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_umount2, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_pivot_root, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_chroot, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_open_tree, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_move_mount, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_fsopen, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_fsconfig, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_fsmount, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_fspick, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_mount_setattr, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_init_module, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_finit_module, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_delete_module, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_kexec_load, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_kexec_file_load, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_bpf, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_perf_event_open, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_userfaultfd, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_io_uring_setup, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_io_uring_enter, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_io_uring_register, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_swapon, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_swapoff, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_reboot, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_acct, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_syslog, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_quotactl, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_quotactl_fd, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_lookup_dcookie, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_nfsservctl, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_vhangup, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_sethostname, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_setdomainname, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_settimeofday, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_clock_settime, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_open_by_handle_at, 0, 0, ALWAYS),

	/* SECCOMP_DENY_NAMESPACES */
	DENY(NATIVE, SYS_unshare, CLONE_NEWNS, 0, NS),
	DENY(NATIVE, SYS_unshare, CLONE_NEWUSER, 0, NS),
	DENY(NATIVE, SYS_unshare, CLONE_NEWPID, 0, NS),
	DENY(NATIVE, SYS_unshare, CLONE_NEWNET, 0, NS),
	DENY(NATIVE, SYS_unshare, CLONE_NEWIPC, 0, NS),
	DENY(NATIVE, SYS_unshare, CLONE_NEWUTS, 0, NS),
	DENY(NATIVE, SYS_unshare, CLONE_NEWCGROUP, 0, NS),
	DENY(NATIVE, SYS_unshare, CLONE_NEWTIME, 0, NS),
	DENY(NATIVE, SYS_unshare, CLONE_FS | CLONE_NEWNS | CLONE_NEWUSER, 0, NS),
	DENY(NATIVE, SYS_clone, SIGCHLD_ONLY | CLONE_NEWUSER, 0, NS),
	DENY(NATIVE, SYS_clone, SIGCHLD_ONLY | CLONE_NEWPID, 0, NS),
	DENY(NATIVE, SYS_clone, SIGCHLD_ONLY | CLONE_NEWNET, 0, NS),
	DENY(NATIVE, SYS_clone, THREAD_FLAGS | CLONE_NEWNS, 0, NS),
	DENY(NATIVE, SYS_clone, CLONE_NEWIPC, 0, NS),
	DENY(NATIVE, SYS_clone, CLONE_NEWUTS, 0, NS),
	DENY(NATIVE, SYS_clone, CLONE_NEWCGROUP, 0, NS),
	PASS(NATIVE, SYS_clone, SIGCHLD_ONLY, CLONE_NEWUSER), /* the flags are not in a1 */
	DENY(NATIVE, SYS_setns, 3, 0, NS),
	DENY(NATIVE, SYS_setns, 3, CLONE_NEWNET, NS),
	CASE(NATIVE, SYS_clone3, 0, 88, NS, ENOSYS),

	/* SECCOMP_DENY_PROCESS_TARGETS: anything but the caller itself, all 64 bits compared */
	DENY(NATIVE, SYS_setpriority, PRIO_PROCESS, 1234, PT),
	DENY(NATIVE, SYS_setpriority, PRIO_PGRP, 0, PT),
	DENY(NATIVE, SYS_setpriority, PRIO_USER, 0, PT),
	DENY(NATIVE, SYS_setpriority, PRIO_PROCESS, HIGH, PT),
	DENY(NATIVE, SYS_setpriority, HIGH | PRIO_PROCESS, 0, PT),
	DENY(NATIVE, SYS_ioprio_set, IOPRIO_PROC, 42, PT),
	DENY(NATIVE, SYS_ioprio_set, IOPRIO_PGRP, 0, PT),
	DENY(NATIVE, SYS_ioprio_set, IOPRIO_PROC, HIGH, PT),
	DENY(NATIVE, SYS_prlimit64, 1234, RLIMIT_NOFILE, PT),
	DENY(NATIVE, SYS_prlimit64, HIGH, RLIMIT_NOFILE, PT),
	DENY(NATIVE, SYS_sched_setaffinity, 1, 8, PT),
	DENY(NATIVE, SYS_sched_setscheduler, 5, 0, PT),
	DENY(NATIVE, SYS_sched_setparam, 5, 0, PT),
	DENY(NATIVE, SYS_sched_setattr, 5, 0, PT),
	DENY(NATIVE, SYS_migrate_pages, 5, 0, PT),
	DENY(NATIVE, SYS_move_pages, 5, 0, PT),

	/* SECCOMP_DENY_IPC */
	DENY(NATIVE, SYS_shmget, 0, 0, IPC),
	DENY(NATIVE, SYS_shmat, 0, 0, IPC),
	DENY(NATIVE, SYS_shmctl, 0, 0, IPC),
	DENY(NATIVE, SYS_msgget, 0, 0, IPC),
	DENY(NATIVE, SYS_msgsnd, 0, 0, IPC),
	DENY(NATIVE, SYS_msgrcv, 0, 0, IPC),
	DENY(NATIVE, SYS_msgctl, 0, 0, IPC),
	DENY(NATIVE, SYS_semget, 0, 0, IPC),
	DENY(NATIVE, SYS_semop, 0, 0, IPC),
	DENY(NATIVE, SYS_semtimedop, 0, 0, IPC),
	DENY(NATIVE, SYS_semctl, 0, 0, IPC),
	DENY(NATIVE, SYS_mq_open, 0, 0, IPC),
	DENY(NATIVE, SYS_mq_unlink, 0, 0, IPC),
	DENY(NATIVE, SYS_mq_timedsend, 0, 0, IPC),
	DENY(NATIVE, SYS_mq_timedreceive, 0, 0, IPC),
	DENY(NATIVE, SYS_mq_notify, 0, 0, IPC),
	DENY(NATIVE, SYS_mq_getsetattr, 0, 0, IPC),

	/* metadata changes Landlock does not govern (SECCOMP_METADATA_*) */
	DENY(NATIVE, SYS_chmod, 0, 0, META),
	DENY(NATIVE, SYS_fchmod, 3, 0755, META),
	DENY(NATIVE, SYS_fchmodat, AT_FDCWD, 0, META),
	DENY(NATIVE, 452 /* fchmodat2 */, AT_FDCWD, 0, META),
	DENY(NATIVE, SYS_chown, 0, 0, META),
	DENY(NATIVE, SYS_fchown, 3, 0, META),
	DENY(NATIVE, SYS_lchown, 0, 0, META),
	DENY(NATIVE, SYS_fchownat, AT_FDCWD, 0, META),
	DENY(NATIVE, SYS_utimensat, AT_FDCWD, 0, META),
	DENY(NATIVE, SYS_setxattr, 0, 0, META),
	DENY(NATIVE, SYS_lsetxattr, 0, 0, META),
	DENY(NATIVE, SYS_fsetxattr, 3, 0, META),
	DENY(NATIVE, SYS_removexattr, 0, 0, META),
	DENY(NATIVE, SYS_lremovexattr, 0, 0, META),
	DENY(NATIVE, SYS_fremovexattr, 3, 0, META),
	DENY(NATIVE, NR_SETXATTRAT, AT_FDCWD, 0, META),
	DENY(NATIVE, NR_REMOVEXATTRAT, AT_FDCWD, 0, META),
	DENY(NATIVE, NR_FILE_SETATTR, AT_FDCWD, 0, META),
	DENY(NATIVE, SYS_ioctl, 3, FS_SETFLAGS, META),
	DENY(NATIVE, SYS_ioctl, 3, HIGH | FS_SETFLAGS, META),
	DENY(NATIVE, SYS_ioctl, 3, FS_SETFLAGS32, META),
	DENY(NATIVE, SYS_ioctl, 3, FS_FSSETXATTR, META),
	PASS(NATIVE, SYS_ioctl, 3, FS_GETFLAGS),
	PASS(NATIVE, SYS_getxattr, 0, 0),
	PASS(NATIVE, SYS_fstat, 3, 0),
	PASS(NATIVE, NR_GETXATTRAT, AT_FDCWD, 0),
	PASS(NATIVE, NR_FILE_GETATTR, AT_FDCWD, 0),

	/* an architecture the filter does not list */
	DENY(FOREIGN, 0, 0, 0, ALWAYS),
	DENY(FOREIGN, SYS_getpid, 0, 0, ALWAYS),

#ifdef __x86_64__
	/* x86_64 only */
	DENY(NATIVE, SYS_iopl, 3, 0, ALWAYS),
	DENY(NATIVE, SYS_ioperm, 0, 0, ALWAYS),
	DENY(NATIVE, SYS_uselib, 0, 0, ALWAYS),
	DENY(NATIVE, SYS__sysctl, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_ARM, 3, 0, 0, ALWAYS),

	/* write-class file calls (FILES_NOTIFY): open with an intent to write, create or
	 * truncate, the others always; reads never; the other ABIs' run unsupervised */
	CASE(NATIVE, SYS_open, 0, O_WRONLY, FILES, 0),
	CASE(NATIVE, SYS_open, 0, O_RDWR | O_CLOEXEC, FILES, 0),
	CASE(NATIVE, SYS_open, 0, O_RDONLY | O_CREAT, FILES, 0),
	CASE(NATIVE, SYS_open, 0, O_RDONLY | O_TRUNC, FILES, 0),
	CASE(NATIVE, SYS_open, 0, O_RDONLY | O_CLOEXEC | O_DIRECTORY, FREAD, 0),
	CASE(NATIVE, SYS_open, 0, O_PATH, FREAD, 0),
	CASE(NATIVE, SYS_creat, 0, 0644, FILES, 0),
	CASE(NATIVE, SYS_openat2, AT_FDCWD, 0, FILES, 0),
	CASE(NATIVE, SYS_mkdir, 0, 0755, FILES, 0),
	CASE(NATIVE, SYS_mkdirat, AT_FDCWD, 0, FILES, 0),
	CASE(NATIVE, SYS_unlinkat, AT_FDCWD, 0, FILES, 0),
	CASE(NATIVE, SYS_renameat2, AT_FDCWD, 0, FILES, 0),
	CASE(NATIVE, SYS_linkat, AT_FDCWD, 0, FILES, 0),
	CASE(NATIVE, SYS_symlinkat, 0, AT_FDCWD, FILES, 0),
	CASE(NATIVE, SYS_truncate, 0, 0, FILES, 0),
	PASS(NATIVE, SYS_ftruncate, 3, 0),
	PASS(AUDIT_ARCH_I386, 5 /* open */, 0, O_WRONLY | O_CREAT),
	PASS(AUDIT_ARCH_I386, 39 /* mkdir */, 0, 0755),
	PASS(AUDIT_ARCH_I386, 10 /* unlink */, 0, 0),
	PASS(AUDIT_ARCH_X86_64, X32_BIT | 2 /* open */, 0, O_WRONLY),
	PASS(AUDIT_ARCH_X86_64, X32_BIT | 83 /* mkdir */, 0, 0755),

	/* the i386 ABI on the same kernel (numbers of asm/unistd_32.h) */
	PASS(AUDIT_ARCH_I386, 3 /* read */, 0, 0),
	PASS(AUDIT_ARCH_I386, 20 /* getpid */, 0, 0),
	PASS(AUDIT_ARCH_I386, 11 /* execve */, 0, 0),
	PASS(AUDIT_ARCH_I386, 54 /* ioctl */, 0, TCGETS),
	PASS(AUDIT_ARCH_I386, 120 /* clone */, SIGCHLD_ONLY, 0),
	PASS(AUDIT_ARCH_I386, 97 /* setpriority */, PRIO_PROCESS, 0),
	PASS(AUDIT_ARCH_I386, 398 /* shmdt */, 0, 0),
	DENY(AUDIT_ARCH_I386, 54 /* ioctl */, 0, TIOCSTI, ALWAYS),
	DENY(AUDIT_ARCH_I386, 54 /* ioctl */, 0, TIOCLINUX, ALWAYS),
	DENY(AUDIT_ARCH_I386, 288 /* keyctl */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 286 /* add_key */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 21 /* mount */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 22 /* umount */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 52 /* umount2 */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 357 /* bpf */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 425 /* io_uring_setup */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 110 /* iopl */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 101 /* ioperm */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 166 /* vm86 */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 113 /* vm86old */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 25 /* stime */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 404 /* clock_settime64 */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 342 /* open_by_handle_at */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_I386, 120 /* clone */, SIGCHLD_ONLY | CLONE_NEWUSER, 0, NS),
	DENY(AUDIT_ARCH_I386, 310 /* unshare */, CLONE_NEWNET, 0, NS),
	DENY(AUDIT_ARCH_I386, 346 /* setns */, 3, 0, NS),
	CASE(AUDIT_ARCH_I386, 435 /* clone3 */, 0, 88, NS, ENOSYS),
	DENY(AUDIT_ARCH_I386, 97 /* setpriority */, PRIO_PROCESS, 99, PT),
	DENY(AUDIT_ARCH_I386, 340 /* prlimit64 */, 7, 0, PT),
	DENY(AUDIT_ARCH_I386, 395 /* shmget */, 0, 0, IPC),
	DENY(AUDIT_ARCH_I386, 393 /* semget */, 0, 0, IPC),
	DENY(AUDIT_ARCH_I386, 420 /* semtimedop_time64 */, 0, 0, IPC),
	DENY(AUDIT_ARCH_I386, 277 /* mq_open */, 0, 0, IPC),
	DENY(AUDIT_ARCH_I386, 418 /* mq_timedsend_time64 */, 0, 0, IPC),
	DENY(AUDIT_ARCH_I386, 419 /* mq_timedreceive_time64 */, 0, 0, IPC),
	DENY(AUDIT_ARCH_I386, 117 /* ipc */, IPC_SHMGET, 0, IPC),
	DENY(AUDIT_ARCH_I386, 117 /* ipc */, IPC_SEMOP, 0, IPC),
	DENY(AUDIT_ARCH_I386, 117 /* ipc */, IPC_SHMGET | 1 << 16, 0, IPC),
	DENY(AUDIT_ARCH_I386, 117 /* ipc */, IPC_SHMDT, 0, IPC),
	DENY(AUDIT_ARCH_I386, 15 /* chmod */, 0, 0, META),
	DENY(AUDIT_ARCH_I386, 16 /* lchown, 16-bit ids */, 0, 0, META),
	DENY(AUDIT_ARCH_I386, 212 /* chown32 */, 0, 0, META),
	DENY(AUDIT_ARCH_I386, 306 /* fchmodat */, 0, 0, META),
	DENY(AUDIT_ARCH_I386, 412 /* utimensat_time64 */, 0, 0, META),
	DENY(AUDIT_ARCH_I386, 226 /* setxattr */, 0, 0, META),
	DENY(AUDIT_ARCH_I386, 54 /* ioctl */, 3, FS_SETFLAGS32, META),
	DENY(AUDIT_ARCH_I386, NR_SETXATTRAT, 0, 0, META),
	DENY(AUDIT_ARCH_I386, NR_REMOVEXATTRAT, 0, 0, META),
	DENY(AUDIT_ARCH_I386, NR_FILE_SETATTR, 0, 0, META),
	PASS(AUDIT_ARCH_I386, NR_GETXATTRAT, 0, 0),

	/* the x32 ABI: the x86_64 arch with bit 30 in the number (asm/unistd_x32.h) */
	PASS(AUDIT_ARCH_X86_64, X32_BIT | 0 /* read */, 0, 0),
	PASS(AUDIT_ARCH_X86_64, X32_BIT | 520 /* execve */, 0, 0),
	PASS(AUDIT_ARCH_X86_64, X32_BIT | 514 /* ioctl */, 0, TCGETS),
	PASS(AUDIT_ARCH_X86_64, X32_BIT | 56 /* clone */, SIGCHLD_ONLY, 0),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 514 /* ioctl */, 0, TIOCSTI, ALWAYS),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 250 /* keyctl */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 165 /* mount */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 321 /* bpf */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 272 /* unshare */, CLONE_NEWUSER, 0, NS),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 56 /* clone */, CLONE_NEWNS, 0, NS),
	CASE(AUDIT_ARCH_X86_64, X32_BIT | 435 /* clone3 */, 0, 88, NS, ENOSYS),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 141 /* setpriority */, PRIO_PROCESS, 5, PT),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 29 /* shmget */, 0, 0, IPC),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 90 /* chmod */, 0, 0, META),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | 188 /* setxattr */, 0, 0, META),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | NR_SETXATTRAT, 0, 0, META),
	DENY(AUDIT_ARCH_X86_64, X32_BIT | NR_FILE_SETATTR, 0, 0, META),
#endif

#ifdef __aarch64__
	/* the 32-bit Arm ABI on the same kernel (EABI numbers) */
	PASS(AUDIT_ARCH_ARM, 3 /* read */, 0, 0),
	PASS(AUDIT_ARCH_ARM, 54 /* ioctl */, 0, TCGETS),
	DENY(AUDIT_ARCH_ARM, 54 /* ioctl */, 0, TIOCSTI, ALWAYS),
	DENY(AUDIT_ARCH_ARM, 311 /* keyctl */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_ARM, 21 /* mount */, 0, 0, ALWAYS),
	DENY(AUDIT_ARCH_ARM, 120 /* clone */, CLONE_NEWUSER, 0, NS),
	DENY(AUDIT_ARCH_ARM, 337 /* unshare */, CLONE_NEWNET, 0, NS),
#endif
};
#endif
/* clang-format on */

static uint32_t expected(const filter_case *c, unsigned flags)
{
	if (c->denied_by == NEVER)
		return SECCOMP_RET_ALLOW;
	if (c->denied_by == FREAD)
		return flags & SECCOMP_FILES_READ_NOTIFY ? SECCOMP_RET_USER_NOTIF
							 : SECCOMP_RET_ALLOW;
	if (c->denied_by == FILES)
		return flags & SECCOMP_FILES_NOTIFY ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW;
	if (c->denied_by == META)
		return flags & SECCOMP_METADATA_DENY	 ? SECCOMP_RET_ERRNO | EPERM
		       : flags & SECCOMP_METADATA_NOTIFY ? SECCOMP_RET_USER_NOTIF
							 : SECCOMP_RET_ALLOW;
	if (c->denied_by == ALWAYS || (flags & c->denied_by))
		return SECCOMP_RET_ERRNO | (uint32_t)c->err;
	return SECCOMP_RET_ALLOW;
}

/* The slots that hold a program (seccomp_flags_built(), restated here). */
static bool valid_flags(unsigned flags)
{
	const unsigned both = SECCOMP_METADATA_NOTIFY | SECCOMP_METADATA_DENY;
	const unsigned net = SECCOMP_NET_NOTIFY | SECCOMP_DENY_SOCKETS;
	return (flags & both) != both && (!(flags & net) || (flags & (NS | PT)) == (NS | PT)) &&
	       (!(flags & SECCOMP_FILES_NOTIFY) || (flags & SECCOMP_METADATA_NOTIFY)) &&
	       (!(flags & SECCOMP_FILES_READ_NOTIFY) || (flags & SECCOMP_FILES_NOTIFY));
}

static void test_cases(void **state)
{
	(void)state;
#ifdef NATIVE
	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++) {
		const seccomp_program *prog = seccomp_program_for(flags);
		if (!valid_flags(flags))
			continue;
		assert_non_null(prog);
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			const filter_case *c = &cases[i];
			struct seccomp_data d = {.nr = (int)c->nr, .arch = c->arch};
			d.args[0] = c->a0;
			d.args[1] = c->a1;
			uint32_t got = bpf_run(prog, &d), want = expected(c, flags);
			if (got != want)
				fail_msg("flags %#x: %s: got %#x, expected %#x", flags, c->what,
					 got, want);
		}
	}
#else
	skip();
#endif
}

/* The arguments other than the one a rule reads never change the verdict. */
static void test_other_args_ignored(void **state)
{
	(void)state;
#ifdef NATIVE
	const seccomp_program *prog = seccomp_program_for(SECCOMP_DENY_ALL);
	struct seccomp_data d = {.nr = SYS_keyctl, .arch = NATIVE};
	for (int i = 0; i < 6; i++)
		d.args[i] = ~0ULL;
	d.instruction_pointer = ~0ULL;
	assert_int_equal(bpf_run(prog, &d), SECCOMP_RET_ERRNO | EPERM);
	d.nr = SYS_read;
	assert_int_equal(bpf_run(prog, &d), SECCOMP_RET_ALLOW);
#else
	skip();
#endif
}

/* Refused means an errno, never a kill: every number, every ABI, a few argument patterns. */
static void assert_errno_or_allow(unsigned flags, uint32_t arch, uint32_t nr)
{
	static const uint64_t patterns[] = {0, 1, ~0ULL, HIGH, CLONE_NEWUSER | SIGCHLD_ONLY};

	for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
		struct seccomp_data d = {.nr = (int)nr, .arch = arch};
		for (int i = 0; i < 6; i++)
			d.args[i] = patterns[p];
		uint32_t r = bpf_run(seccomp_program_for(flags), &d);
		bool notify = (flags & (SECCOMP_METADATA_NOTIFY | SECCOMP_NET_NOTIFY)) &&
			      r == SECCOMP_RET_USER_NOTIF;
		bool family =
			(flags & SECCOMP_DENY_SOCKETS) && r == (SECCOMP_RET_ERRNO | EAFNOSUPPORT);
		if (r != SECCOMP_RET_ALLOW && r != (SECCOMP_RET_ERRNO | EPERM) &&
		    r != (SECCOMP_RET_ERRNO | ENOSYS) && !notify && !family)
			fail_msg("flags %#x arch %#x nr %#x: %#x", flags, arch, nr, r);
	}
}

static void test_never_kills(void **state)
{
	(void)state;
	static const uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64,
					  AUDIT_ARCH_ARM};
	static const uint32_t bases[] = {0, X32_BIT, 0xfffff000u};

	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++)
		for (size_t a = 0; valid_flags(flags) && a < sizeof(arches) / sizeof(arches[0]);
		     a++)
			for (size_t b = 0; b < sizeof(bases) / sizeof(bases[0]); b++)
				for (uint32_t nr = 0; nr < 1024; nr++)
					assert_errno_or_allow(flags, arches[a], bases[b] + nr);
}

/* --- the network rules (SECCOMP_NET_NOTIFY, SECCOMP_DENY_SOCKETS) ---------------------------
 */

#define NET   1 /* a case of SECCOMP_NET_NOTIFY */
#define SOCKS 2 /* a case of SECCOMP_DENY_SOCKETS */

typedef struct net_case {
	const char *what;
	int kind; /* NET, SOCKS */
	uint32_t arch, nr;
	uint64_t a0, a4;
	uint32_t want; /* under the flag; without it every case is allowed */
} net_case;

#define NOTIF		    SECCOMP_RET_USER_NOTIF
#define EPERMS		    (SECCOMP_RET_ERRNO | EPERM)
#define EAFNO		    (SECCOMP_RET_ERRNO | EAFNOSUPPORT)
#define SYS_SOCKETCALL_I386 102 /* and its calls, linux/net.h */
#define SOCKOP_SOCKET	    1
#define SOCKOP_CONNECT	    3
#define SOCKOP_SEND	    9
#define SOCKOP_SENDTO	    11
#define SOCKOP_SENDMSG	    16
#define SOCKOP_SENDMMSG	    20
#define SOCKOP_SOCKETPAIR   8
#define SOCKOP_RECVFROM	    12

/* clang-format off */
#ifdef NATIVE
static const net_case net_cases[] = {
	{"connect", NET, NATIVE, SYS_connect, 3, 0, NOTIF},
	{"sendto with an address", NET, NATIVE, SYS_sendto, 3, 0x7ffc1000, NOTIF},
	{"sendto with an address above 4 GiB", NET, NATIVE, SYS_sendto, 3, HIGH, NOTIF},
	{"sendto on a connected socket", NET, NATIVE, SYS_sendto, 3, 0, SECCOMP_RET_ALLOW},
	{"sendmsg (its destination is in memory)", NET, NATIVE, SYS_sendmsg, 3, 0, NOTIF},
	{"sendmmsg", NET, NATIVE, SYS_sendmmsg, 3, 0, NOTIF},
	{"send (no destination)", NET, NATIVE, SYS_sendto, 3, 0, SECCOMP_RET_ALLOW},
	{"write", NET, NATIVE, SYS_write, 3, 0, SECCOMP_RET_ALLOW},
	{"bind", NET, NATIVE, SYS_bind, 3, 0, SECCOMP_RET_ALLOW},
	{"accept4", NET, NATIVE, SYS_accept4, 3, 0, SECCOMP_RET_ALLOW},
	{"socket(AF_INET)", SOCKS, NATIVE, SYS_socket, AF_INET, 0, EAFNO},
	{"socket(AF_INET6)", SOCKS, NATIVE, SYS_socket, AF_INET6, 0, EAFNO},
	{"socket(AF_NETLINK)", SOCKS, NATIVE, SYS_socket, AF_NETLINK, 0, EAFNO},
	{"socket(AF_UNIX)", SOCKS, NATIVE, SYS_socket, AF_UNIX, 0, SECCOMP_RET_ALLOW},
	{"socket(AF_UNIX | high bits)", SOCKS, NATIVE, SYS_socket, HIGH | AF_UNIX, 0, EAFNO},
	{"socketpair(AF_INET)", SOCKS, NATIVE, SYS_socketpair, AF_INET, 0, EAFNO},
	{"socketpair(AF_UNIX)", SOCKS, NATIVE, SYS_socketpair, AF_UNIX, 0, SECCOMP_RET_ALLOW},
#ifdef __x86_64__
	{"i386 socketcall(CONNECT)", NET, AUDIT_ARCH_I386, SYS_SOCKETCALL_I386, SOCKOP_CONNECT, 0, EPERMS},
	{"i386 socketcall(SENDTO)", NET, AUDIT_ARCH_I386, SYS_SOCKETCALL_I386, SOCKOP_SENDTO, 0, EPERMS},
	{"i386 socketcall(SENDTO), a4 set", NET, AUDIT_ARCH_I386, SYS_SOCKETCALL_I386, SOCKOP_SENDTO, 1, EPERMS},
	{"i386 socketcall(SENDMSG)", NET, AUDIT_ARCH_I386, SYS_SOCKETCALL_I386, SOCKOP_SENDMSG, 0, EPERMS},
	{"i386 socketcall(SENDMMSG)", NET, AUDIT_ARCH_I386, SYS_SOCKETCALL_I386, SOCKOP_SENDMMSG, 0, EPERMS},
	{"i386 socketcall(SEND)", NET, AUDIT_ARCH_I386, SYS_SOCKETCALL_I386, SOCKOP_SEND, 0, SECCOMP_RET_ALLOW},
	{"i386 socketcall(RECVFROM)", NET, AUDIT_ARCH_I386, SYS_SOCKETCALL_I386, SOCKOP_RECVFROM, 0, SECCOMP_RET_ALLOW},
	{"i386 connect", NET, AUDIT_ARCH_I386, 362, 3, 0, EPERMS},
	{"i386 sendto", NET, AUDIT_ARCH_I386, 369, 3, 0, EPERMS},
	{"i386 sendto with an address", NET, AUDIT_ARCH_I386, 369, 3, 0x1000, EPERMS},
	{"i386 sendmsg", NET, AUDIT_ARCH_I386, 370, 3, 0, EPERMS},
	{"i386 sendmmsg", NET, AUDIT_ARCH_I386, 345, 3, 0, EPERMS},
	{"x32 connect", NET, AUDIT_ARCH_X86_64, X32_BIT | 42, 3, 0, EPERMS},
	{"x32 sendto", NET, AUDIT_ARCH_X86_64, X32_BIT | 44, 3, 0x1000, EPERMS},
	{"x32 sendmsg", NET, AUDIT_ARCH_X86_64, X32_BIT | 518, 3, 0, EPERMS},
	{"x32 sendmmsg", NET, AUDIT_ARCH_X86_64, X32_BIT | 538, 3, 0, EPERMS},
	{"i386 socketcall(SOCKET)", SOCKS, AUDIT_ARCH_I386, SYS_SOCKETCALL_I386, SOCKOP_SOCKET, 0, EPERMS},
	{"i386 socketcall(SOCKETPAIR)", SOCKS, AUDIT_ARCH_I386, SYS_SOCKETCALL_I386, SOCKOP_SOCKETPAIR, 0, EPERMS},
	{"i386 socket(AF_INET)", SOCKS, AUDIT_ARCH_I386, 359, AF_INET, 0, EAFNO},
	{"i386 socket(AF_UNIX)", SOCKS, AUDIT_ARCH_I386, 359, AF_UNIX, 0, SECCOMP_RET_ALLOW},
	{"i386 socketpair(AF_INET)", SOCKS, AUDIT_ARCH_I386, 360, AF_INET, 0, EAFNO},
	{"x32 socket(AF_INET6)", SOCKS, AUDIT_ARCH_X86_64, X32_BIT | 41, AF_INET6, 0, EAFNO},
	{"x32 socket(AF_UNIX)", SOCKS, AUDIT_ARCH_X86_64, X32_BIT | 41, AF_UNIX, 0, SECCOMP_RET_ALLOW},
#endif
};
#endif
/* clang-format on */

static uint32_t run_net_case(const seccomp_program *prog, const net_case *c)
{
	struct seccomp_data d = {.nr = (int)c->nr, .arch = c->arch};
	d.args[0] = c->a0;
	d.args[4] = c->a4;
	return bpf_run(prog, &d);
}

/* Each variant: the network cases under their flag, allowed without it; the rest unchanged. */
static void test_net_cases(void **state)
{
	(void)state;
#ifdef NATIVE
	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++) {
		if (!valid_flags(flags))
			continue;
		for (size_t i = 0; i < sizeof(net_cases) / sizeof(net_cases[0]); i++) {
			const net_case *c = &net_cases[i];
			bool on = c->kind == NET ? flags & SECCOMP_NET_NOTIFY
						 : flags & SECCOMP_DENY_SOCKETS;
			uint32_t got = run_net_case(seccomp_program_for(flags), c);
			uint32_t want = on ? c->want : SECCOMP_RET_ALLOW;
			if (got != want)
				fail_msg("flags %#x: %s: got %#x, expected %#x", flags, c->what,
					 got, want);
		}
	}
	/* The network flags are built only beside the Landlock backend's two. */
	assert_null(seccomp_program_for(SECCOMP_NET_NOTIFY));
	assert_null(seccomp_program_for(SECCOMP_DENY_SOCKETS | SECCOMP_DENY_IPC));
	assert_non_null(seccomp_program_for(NS | PT | SECCOMP_NET_NOTIFY | SECCOMP_DENY_SOCKETS |
					    SECCOMP_METADATA_NOTIFY | IPC));
#else
	skip();
#endif
}

/* The standalone program: the network rules and nothing else, default ALLOW. */
static void test_net_only_program(void **state)
{
	(void)state;
	const seccomp_program *prog = seccomp_net_only_program();
	assert_non_null(prog);
	assert_true(prog->len > 0 && prog->len < seccomp_programs[0].len);
	assert_int_equal(prog->insns[0].code, BPF_LD | BPF_W | BPF_ABS);
	assert_int_equal(prog->insns[0].k, offsetof(struct seccomp_data, arch));
#ifdef NATIVE
	for (size_t i = 0; i < sizeof(net_cases) / sizeof(net_cases[0]); i++) {
		const net_case *c = &net_cases[i];
		uint32_t want = c->kind == NET ? c->want : SECCOMP_RET_ALLOW;
		uint32_t got = run_net_case(prog, c);
		if (got != want)
			fail_msg("net-only: %s: got %#x, expected %#x", c->what, got, want);
	}
	/* No base rule: bwrap installs those itself. */
	struct seccomp_data d = {.nr = SYS_keyctl, .arch = NATIVE};
	assert_int_equal(bpf_run(prog, &d), SECCOMP_RET_ALLOW);
	d.nr = SYS_chmod;
	assert_int_equal(bpf_run(prog, &d), SECCOMP_RET_ALLOW);
	d.arch = FOREIGN;
	assert_int_equal(bpf_run(prog, &d), SECCOMP_RET_ERRNO | EPERM);
	for (uint32_t nr = 0; nr < 1024; nr++) {
		d = (struct seccomp_data){.nr = (int)nr, .arch = NATIVE};
		for (int k = 0; k < 6; k++)
			d.args[k] = ~0ULL;
		uint32_t r = bpf_run(prog, &d);
		assert_true(r == SECCOMP_RET_ALLOW || r == NOTIF || r == EPERMS);
	}
#endif
}

/* The runner programs: their groups alone, default ALLOW, one for each combination built. */
static void test_runner_programs(void **state)
{
	(void)state;
	size_t built = 0;
	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++) {
		const seccomp_program *prog = seccomp_runner_program(flags);
		assert_true((prog != NULL) == seccomp_runner_built(flags));
		if (!prog)
			continue;
		built++;
		assert_true(prog->len > 0 && prog->len <= BPF_MAXINSNS);
#ifdef NATIVE
		bool files = flags & SECCOMP_FILES_NOTIFY,
		     reads = flags & SECCOMP_FILES_READ_NOTIFY;
		struct seccomp_data d = {
			.nr = SYS_openat, .arch = NATIVE, .args = {AT_FDCWD, 0, O_WRONLY}};
		assert_int_equal(bpf_run(prog, &d), files ? NOTIF : SECCOMP_RET_ALLOW);
		d.args[2] = O_RDONLY;
		assert_int_equal(bpf_run(prog, &d), reads ? NOTIF : SECCOMP_RET_ALLOW);
		d = (struct seccomp_data){.nr = SYS_mkdirat, .arch = NATIVE};
		assert_int_equal(bpf_run(prog, &d), files ? NOTIF : SECCOMP_RET_ALLOW);
		d = (struct seccomp_data){.nr = SYS_fchmodat, .arch = NATIVE};
		assert_int_equal(bpf_run(prog, &d), files ? NOTIF : SECCOMP_RET_ALLOW);
		d = (struct seccomp_data){.nr = SYS_ioctl, .arch = NATIVE, .args = {0, 0x40086602}};
		assert_int_equal(bpf_run(prog, &d), files ? NOTIF : SECCOMP_RET_ALLOW);
		d = (struct seccomp_data){.nr = SYS_connect, .arch = NATIVE};
		assert_int_equal(bpf_run(prog, &d),
				 flags & SECCOMP_NET_NOTIFY ? NOTIF : SECCOMP_RET_ALLOW);
		/* No base rule (bwrap installs those): TIOCSTI and keyctl are not ours here. */
		d = (struct seccomp_data){.nr = SYS_ioctl, .arch = NATIVE, .args = {0, TIOCSTI}};
		assert_int_equal(bpf_run(prog, &d), SECCOMP_RET_ALLOW);
		d = (struct seccomp_data){.nr = SYS_keyctl, .arch = NATIVE};
		assert_int_equal(bpf_run(prog, &d), SECCOMP_RET_ALLOW);
		d.arch = FOREIGN;
		assert_int_equal(bpf_run(prog, &d), EPERMS);
		for (uint32_t nr = 0; nr < 1024; nr++) {
			d = (struct seccomp_data){.nr = (int)nr, .arch = NATIVE};
			for (int k = 0; k < 6; k++)
				d.args[k] = ~0ULL;
			uint32_t r = bpf_run(prog, &d);
			assert_true(r == SECCOMP_RET_ALLOW || r == NOTIF);
		}
#endif
	}
	assert_int_equal(built, 5);
	assert_ptr_equal(seccomp_net_only_program(), seccomp_runner_program(SECCOMP_NET_NOTIFY));
	assert_null(seccomp_runner_program(SECCOMP_FILES_NOTIFY)); /* never without metadata */
	assert_null(seccomp_runner_program(SECCOMP_DENY_IPC));
}

static void test_programs(void **state)
{
	(void)state;
	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++) {
		const seccomp_program *prog = seccomp_program_for(flags);
		if (!valid_flags(flags)) {
			assert_null(prog);
			continue;
		}
		assert_ptr_equal(prog, &seccomp_programs[flags]);
		assert_true(prog->len > 0 && prog->len <= BPF_MAXINSNS);
		/* The number means nothing before the arch is known: the arch is read first. */
		assert_int_equal(prog->insns[0].code, BPF_LD | BPF_W | BPF_ABS);
		assert_int_equal(prog->insns[0].k, offsetof(struct seccomp_data, arch));
		/* More flags, more rules. */
		if (flags)
			assert_true(prog->len > seccomp_programs[0].len);
	}
	assert_null(seccomp_program_for(SECCOMP_FLAGS_ALL + 1));
	assert_null(seccomp_program_for(1u << 31));
}

/* --- the kernel takes them: forked children, since installing is irreversible ----------------
 */

#define CHILD_EXPECT(cond)                                                                     \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fprintf(stderr, "%s:%d: expected %s (errno %s)\n", __FILE__, __LINE__, \
				#cond, strerrorname_np(errno));                                \
			return 1;                                                              \
		}                                                                              \
	} while (0)

/* The errno of a system call that failed, 0 when it succeeded. */
#define ERRNO_OF(call) ((call) < 0 ? errno : 0)

static void *thread_main(void *arg)
{
	return arg;
}

static int child_all(void *arg)
{
	(void)arg;
	int fds[2];
	pthread_t t;
	void *res = NULL;

	CHILD_EXPECT(pipe(fds) == 0);
	CHILD_EXPECT(seccomp_install(seccomp_program_for(SECCOMP_DENY_ALL)) == 0);

	/* Refused: the base rules and each variant's. */
	CHILD_EXPECT(ERRNO_OF(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(ioctl(fds[0], TIOCSTI, "x")) == EPERM); /* ENOTTY without */
	CHILD_EXPECT(ERRNO_OF(syscall(SYS_io_uring_setup, 1, NULL)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(unshare(CLONE_NEWUTS)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(unshare(CLONE_NEWUSER)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(syscall(SYS_clone3, NULL, 0)) == ENOSYS);
	CHILD_EXPECT(ERRNO_OF(setpriority(PRIO_PROCESS, (id_t)getppid(), 0)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(shmget(IPC_PRIVATE, 4096, 0600)) == EPERM);

	/* Allowed: the caller itself, threads (clone3 falls back to clone), fork. */
	CHILD_EXPECT(getpid() > 1);
	CHILD_EXPECT(setpriority(PRIO_PROCESS, 0, getpriority(PRIO_PROCESS, 0)) == 0);
	CHILD_EXPECT(pthread_create(&t, NULL, thread_main, fds) == 0);
	CHILD_EXPECT(pthread_join(t, &res) == 0 && res == fds);
	pid_t pid = fork();
	CHILD_EXPECT(pid >= 0);
	if (pid == 0)
		_exit(0);
	int status;
	CHILD_EXPECT(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
	return 0;
}

static void test_install_all(void **state)
{
	(void)state;
	assert_int_equal(dsb_test_run_in_child(child_all, NULL), 0);
}

/* The base program alone: keyrings refused, SysV IPC and clone3 left to the kernel. */
static int child_base(void *arg)
{
	(void)arg;
	CHILD_EXPECT(seccomp_install(seccomp_program_for(0)) == 0);
	CHILD_EXPECT(ERRNO_OF(syscall(SYS_keyctl, 0, -3, 0)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(syscall(SYS_clone3, NULL, 0)) != ENOSYS);
	int id = shmget(IPC_PRIVATE, 4096, 0600);
	CHILD_EXPECT(id >= 0);
	CHILD_EXPECT(shmctl(id, IPC_RMID, NULL) == 0);
	return 0;
}

static void test_install_base(void **state)
{
	(void)state;
	assert_int_equal(dsb_test_run_in_child(child_base, NULL), 0);
}

/* Ordinary tools run under the strictest variant, and the filter survives execve. */
static int child_exec(void *arg)
{
	(void)arg;
	static char *const argv[] = {
		(char *)"bash", (char *)"-c",
		(char *)"grep -q '^Seccomp:[[:space:]]*2' /proc/self/status && ls / >/dev/null && "
			"sort </dev/null && x=$(echo hi | tr a-z A-Z) && [ \"$x\" = HI ] && "
			"nice -n 1 true && exit 7",
		NULL};

	CHILD_EXPECT(seccomp_install(seccomp_program_for(SECCOMP_DENY_ALL)) == 0);
	execvp(argv[0], argv);
	return 2;
}

static void test_install_exec(void **state)
{
	(void)state;
	assert_int_equal(dsb_test_run_in_child(child_exec, NULL), 7);
}

/*
 * SECCOMP_METADATA_DENY, for real: with no supervisor, every metadata change fails with EPERM,
 * the calls newer than libseccomp included, and the file is unchanged; reading passes. The
 * control, before the filter, changes the mode.
 */
static int child_metadata_deny(void *arg)
{
	const char *path = arg;
	struct stat st;

	/* The controls: unfiltered, the calls reach the kernel, which does not say EPERM. */
	CHILD_EXPECT(chmod(path, 0600) == 0);
	CHILD_EXPECT(ERRNO_OF(syscall(NR_SETXATTRAT, AT_FDCWD, path, 0, "user.dsb", NULL, 0)) !=
		     EPERM);
	CHILD_EXPECT(ERRNO_OF(syscall(NR_FILE_SETATTR, AT_FDCWD, path, NULL, 0, 0)) != EPERM);
	CHILD_EXPECT(seccomp_install(
			     seccomp_program_for(SECCOMP_DENY_ALL | SECCOMP_METADATA_DENY)) == 0);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	CHILD_EXPECT(fd >= 0);
	CHILD_EXPECT(ERRNO_OF(chmod(path, 0644)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(fchmod(fd, 0644)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(fchmodat(AT_FDCWD, path, 0644, 0)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(syscall(452 /* fchmodat2 */, AT_FDCWD, path, 0644, 0)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(chown(path, getuid(), getgid())) == EPERM);
	CHILD_EXPECT(ERRNO_OF(utimensat(AT_FDCWD, path, NULL, 0)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(setxattr(path, "user.dsb", "x", 1, 0)) == EPERM);
	CHILD_EXPECT(ERRNO_OF(syscall(NR_SETXATTRAT, AT_FDCWD, path, 0, "user.dsb", NULL, 0)) ==
		     EPERM);
	CHILD_EXPECT(ERRNO_OF(syscall(NR_REMOVEXATTRAT, AT_FDCWD, path, 0, "user.dsb")) == EPERM);
	CHILD_EXPECT(ERRNO_OF(syscall(NR_FILE_SETATTR, AT_FDCWD, path, NULL, 0, 0)) == EPERM);
	long flags = 0;
	CHILD_EXPECT(ERRNO_OF(ioctl(fd, FS_SETFLAGS, &flags)) == EPERM);
	CHILD_EXPECT(stat(path, &st) == 0 && (st.st_mode & 07777) == 0600);
	CHILD_EXPECT(fstat(fd, &st) == 0);
	return 0;
}

static void test_install_metadata_deny(void **state)
{
	(void)state;
	char dir[] = "/tmp/dsb-seccomp.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char path[64];
	(void)snprintf(path, sizeof(path), "%s/f", dir);
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(dsb_test_run_in_child(child_metadata_deny, path), 0);
	unlink(path);
	rmdir(dir);
}

/*
 * SECCOMP_METADATA_NOTIFY, for real: the listener reaches another process over a socket (as it
 * will reach the supervisor), which sees the call and answers it; the caller gets that answer.
 */
static int child_metadata_notify(void *arg)
{
	int sock = *(int *)arg;
	int listener = seccomp_install_listener(
		seccomp_program_for(SECCOMP_DENY_ALL | SECCOMP_METADATA_NOTIFY));
	CHILD_EXPECT(listener >= 0);
	CHILD_EXPECT((fcntl(listener, F_GETFD) & FD_CLOEXEC) != 0);
	CHILD_EXPECT(fd_send(sock, listener) == 0);
	close(listener);
	/* The supervisor below answers EACCES: a refusal that is not the filter's own EPERM. */
	CHILD_EXPECT(ERRNO_OF(chmod("/nonexistent/dsb", 0600)) == EACCES);
	return 0;
}

static void *answer_one(void *arg)
{
	int sock = *(int *)arg;
	int listener = fd_receive(sock, 0);
	if (listener < 0)
		return (void *)"no listener";
	struct seccomp_notif req;
	memset(&req, 0, sizeof(req));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return (void *)"no notification";
	if (req.data.nr != SYS_chmod)
		return (void *)"not chmod";
	struct seccomp_notif_resp resp = {.id = req.id, .error = -EACCES};
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
		return (void *)"no answer";
	close(listener);
	return NULL;
}

static void test_install_metadata_notify(void **state)
{
	(void)state;
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	pthread_t t;
	void *why = NULL;
	assert_int_equal(pthread_create(&t, NULL, answer_one, &sp[0]), 0);
	assert_int_equal(dsb_test_run_in_child(child_metadata_notify, &sp[1]), 0);
	assert_int_equal(pthread_join(t, &why), 0);
	if (why)
		fail_msg("the supervisor's side: %s", (const char *)why);
	close(sp[0]);
	close(sp[1]);
}

/*
 * The net-only program for real (as a child that then execs bwrap would install it): connect
 * reaches the supervisor, whose answer the caller gets; a send on a connected socket does not;
 * no base rule is in force (TIOCSTI on a pipe is the kernel's ENOTTY, not EPERM).
 */
static int child_net_only(void *arg)
{
	int sock = *(int *)arg;
	int sp[2], fds[2];
	CHILD_EXPECT(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp) == 0);
	CHILD_EXPECT(pipe(fds) == 0);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHILD_EXPECT(s >= 0);
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons(9),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	/* The control: unfiltered, the kernel answers (nothing listens on port 9). */
	CHILD_EXPECT(ERRNO_OF(connect(s, (struct sockaddr *)&to, sizeof(to))) == ECONNREFUSED);
	CHILD_EXPECT(listener_install_send(seccomp_net_only_program(), sock, true) == 0);
	CHILD_EXPECT(send(sp[0], "x", 1, 0) == 1);
	CHILD_EXPECT(sendto(sp[0], "y", 1, 0, NULL, 0) == 1);
	CHILD_EXPECT(ERRNO_OF(ioctl(fds[0], TIOCSTI, "x")) == ENOTTY);
	/* The supervisor below answers ECONNABORTED, which the kernel would not. */
	CHILD_EXPECT(ERRNO_OF(connect(s, (struct sockaddr *)&to, sizeof(to))) == ECONNABORTED);
	return 0;
}

static void *answer_connect(void *arg)
{
	int sock = *(int *)arg;
	int listener = fd_receive(sock, 0);
	if (listener < 0)
		return (void *)"no listener";
	struct seccomp_notif req;
	memset(&req, 0, sizeof(req));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return (void *)"no notification";
	if (req.data.nr != SYS_connect)
		return (void *)"not connect";
	struct seccomp_notif_resp resp = {.id = req.id, .error = -ECONNABORTED};
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0)
		return (void *)"no answer";
	close(listener);
	return NULL;
}

static void test_install_net_only(void **state)
{
	(void)state;
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	pthread_t t;
	void *why = NULL;
	assert_int_equal(pthread_create(&t, NULL, answer_connect, &sp[0]), 0);
	assert_int_equal(dsb_test_run_in_child(child_net_only, &sp[1]), 0);
	assert_int_equal(pthread_join(t, &why), 0);
	if (why)
		fail_msg("the supervisor's side: %s", (const char *)why);
	close(sp[0]);
	close(sp[1]);
}

/* SECCOMP_DENY_SOCKETS for real: an IP socket is EAFNOSUPPORT, a unix one is made. */
static int child_deny_sockets(void *arg)
{
	(void)arg;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHILD_EXPECT(s >= 0); /* the control */
	close(s);
	CHILD_EXPECT(seccomp_install(seccomp_program_for(NS | PT | SECCOMP_DENY_SOCKETS)) == 0);
	CHILD_EXPECT(ERRNO_OF(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == EAFNOSUPPORT);
	CHILD_EXPECT(ERRNO_OF(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) == EAFNOSUPPORT);
	CHILD_EXPECT(ERRNO_OF(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0)) == EAFNOSUPPORT);
	int sp[2];
	CHILD_EXPECT(ERRNO_OF(socketpair(AF_INET, SOCK_STREAM, 0, sp)) == EAFNOSUPPORT);
	CHILD_EXPECT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == 0);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHILD_EXPECT(s >= 0);
	return 0;
}

static void test_install_deny_sockets(void **state)
{
	(void)state;
	assert_int_equal(dsb_test_run_in_child(child_deny_sockets, NULL), 0);
}

static void test_install_invalid(void **state)
{
	(void)state;
	seccomp_program empty = {NULL, 0};
	assert_int_equal(seccomp_install(NULL), -EINVAL);
	assert_int_equal(seccomp_install(&empty), -EINVAL);
	assert_int_equal(seccomp_program_memfd(&empty), -EINVAL);
}

/*
 * Run as `test-seccomp --probe` inside bwrap: 0 when keyctl and TIOCSTI meet the filter's EPERM
 * (without it keyctl succeeds and TIOCSTI on a pipe is ENOTTY), else the step that differed.
 */
static int probe_main(void)
{
	int fds[2];

	if (pipe(fds) < 0)
		return 10;
	if (ERRNO_OF(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0)) != EPERM)
		return 11;
	if (ERRNO_OF(ioctl(fds[0], TIOCSTI, "x")) != EPERM)
		return 12;
	if (ERRNO_OF(syscall(SYS_clone3, NULL, 0)) != ENOSYS)
		return 13;
	return 0;
}

/* bwrap --seccomp FD: the memfd holds exactly the program, sealed, and bwrap installs it. */
static void test_bwrap_memfd(void **state)
{
	(void)state;
	const seccomp_program *prog = seccomp_program_for(SECCOMP_DENY_ALL);
	int fd = seccomp_program_memfd(prog);
	assert_true(fd >= 0);

	size_t size = prog->len * sizeof(prog->insns[0]);
	char *buf = malloc(size + 1);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, size + 1), (ssize_t)size);
	assert_memory_equal(buf, prog->insns, size);
	free(buf);
	assert_int_equal(ERRNO_OF(write(fd, "x", 1)), EPERM);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);

	/* The profile's shape (bwrap.c) plus the filter; the command is this binary's probe. */
	char self[4096], fdnum[16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = '\0';
	(void)snprintf(fdnum, sizeof(fdnum), "%d", fd);
	(void)fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int flags = fcntl(fd, F_GETFD);
		if (flags < 0 || fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
			_exit(126);
		execlp("bwrap", "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid",
		       "--proc", "/proc", "--die-with-parent", "--seccomp", fdnum, "--", self,
		       "--probe", (char *)NULL);
		_exit(127);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(fd);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--probe") == 0)
		return probe_main();

	/* One test a line (clang-format would pack the short names into columns). */
	/* clang-format off */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_programs),
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_other_args_ignored),
		cmocka_unit_test(test_never_kills),
		cmocka_unit_test(test_install_invalid),
		cmocka_unit_test(test_install_all),
		cmocka_unit_test(test_install_base),
		cmocka_unit_test(test_install_exec),
		cmocka_unit_test(test_install_metadata_deny),
		cmocka_unit_test(test_install_metadata_notify),
		cmocka_unit_test(test_net_cases),
		cmocka_unit_test(test_net_only_program),
		cmocka_unit_test(test_runner_programs),
		cmocka_unit_test(test_install_net_only),
		cmocka_unit_test(test_install_deny_sockets),
		cmocka_unit_test(test_bwrap_memfd),
	};
	/* clang-format on */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
