/* SPDX-License-Identifier: MIT */
/*
 * seccomp-gen CPU_FAMILY ENDIAN OUT.c OUT.pfc
 *
 * The build-time half of the system-call filter (seccomp.h): a native build tool that asks
 * libseccomp for the classic-BPF program of every combination of the SECCOMP_DENY_* flags, for
 * the target named by meson's host_machine.cpu_family() and endian(), and writes them as constant
 * C arrays (OUT.c, compiled into the library) plus libseccomp's pseudo code (OUT.pfc, for review).
 * libseccomp knows each architecture's system-call numbers, the x86 compat (i386) and x32 tables,
 * and the i386 ipc() multiplexer; doing this at build time keeps it out of the run time entirely.
 * The rules and their reasons are listed in docs/design/seccomp.md; keep the two in step.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../confine/seccomp.h" /* ours; <seccomp.h> above is libseccomp */

#ifndef CLONE_NEWCGROUP
#define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define IOPRIO_WHO_PROCESS 1 /* linux/ioprio.h, which old headers lack */

/* The largest program the kernel takes (BPF_MAXINSNS). */
#define MAX_INSNS 4096

/*
 * The architectures a target runs system calls of. A 64-bit x86 or Arm kernel also runs the
 * 32-bit (and, on x86, x32) ABI, whose numbers differ: those get the same rules, and anything
 * else meets the bad-architecture action. The terminal ioctl numbers are the target's, not the
 * build machine's (MIPS has its own).
 */
typedef struct target {
	const char *family; /* meson's cpu_family() */
	const char *endian; /* "little", "big", or NULL for either */
	const char *arches[3];
	int clone_flags_arg; /* CONFIG_CLONE_BACKWARDS2 (s390) passes the stack first */
	uint32_t tiocsti, tioclinux;
} target;

/* A table reads better aligned. */
/* clang-format off */
static const target targets[] = {
	{"x86_64",      NULL,     {"x86_64", "x86", "x32"},   0, 0x5412, 0x541c},
	{"x86",         NULL,     {"x86"},                    0, 0x5412, 0x541c},
	{"aarch64",     NULL,     {"aarch64", "arm"},         0, 0x5412, 0x541c},
	{"arm",         NULL,     {"arm"},                    0, 0x5412, 0x541c},
	{"riscv64",     NULL,     {"riscv64"},                0, 0x5412, 0x541c},
	{"loongarch64", NULL,     {"loongarch64"},            0, 0x5412, 0x541c},
	{"ppc64",       "little", {"ppc64le"},                0, 0x5412, 0x541c},
	{"ppc64",       "big",    {"ppc64"},                  0, 0x5412, 0x541c},
	{"ppc",         "big",    {"ppc"},                    0, 0x5412, 0x541c},
	{"s390x",       NULL,     {"s390x"},                  1, 0x5412, 0x541c},
	{"s390",        NULL,     {"s390"},                   1, 0x5412, 0x541c},
	{"mips",        "little", {"mipsel"},                 0, 0x5472, 0x5483},
	{"mips",        "big",    {"mips"},                   0, 0x5472, 0x5483},
	{"mips64",      "little", {"mipsel64"},               0, 0x5472, 0x5483},
	{"mips64",      "big",    {"mips64"},                 0, 0x5472, 0x5483},
};
/* clang-format on */

/* System calls refused outright, with the reason shared by the group. */
typedef struct denial {
	unsigned flags; /* the SECCOMP_DENY_* bit that brings the group in; 0: every variant */
	int err;
	const char *why;
	const char *calls[16];
} denial;

static const denial denials[] = {
	{0,
	 EPERM,
	 "kernel keyrings are not namespaced: the user's keyrings (Kerberos tickets, fscrypt and "
	 "ecryptfs keys) are shared with every process of the user, the harness included",
	 {"add_key", "keyctl", "request_key"}},
	{0,
	 EPERM,
	 "reshaping the file system view: a confined command must see the tree its policy "
	 "describes (Landlock's own mount hooks refuse these too; this is the second wall)",
	 {"mount", "umount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen",
	  "fsconfig", "fsmount", "fspick", "mount_setattr"}},
	{0,
	 EPERM,
	 "loading or replacing kernel code",
	 {"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load"}},
	{0,
	 EPERM,
	 "kernel attack surface with no use in a tool chain: bpf programs (verifier bugs), perf "
	 "events (a long CVE list, and a view of other processes), userfaultfd (stretches kernel "
	 "race windows for exploits)",
	 {"bpf", "perf_event_open", "userfaultfd"}},
	{0,
	 EPERM,
	 "io_uring performs I/O outside seccomp's view, so a refused call could be made "
	 "through it; callers such as libuv fall back to ordinary system calls",
	 {"io_uring_setup", "io_uring_enter", "io_uring_register"}},
	{0, EPERM, "raw hardware I/O ports (x86)", {"iopl", "ioperm"}},
	{0,
	 EPERM,
	 "system-wide state: swap, reboot, process accounting (turning it off hides activity), "
	 "the kernel log (addresses and other users' activity), disk quotas, binary sysctl",
	 {"swapon", "swapoff", "reboot", "acct", "syslog", "quotactl", "quotactl_fd", "_sysctl"}},
	{0,
	 EPERM,
	 "obsolete interfaces nothing uses any more, some with a history of bugs: oprofile's "
	 "lookup_dcookie, nfsservctl (gone since 3.1), a.out's uselib, i386 virtual-8086 mode",
	 {"lookup_dcookie", "nfsservctl", "uselib", "vm86", "vm86old"}},
	{0, EPERM, "hangs up the controlling terminal, which is the user's", {"vhangup"}},
	{0,
	 EPERM,
	 "host and domain names are system-wide: neither backend gives the command a UTS "
	 "namespace",
	 {"sethostname", "setdomainname"}},
	{0,
	 EPERM,
	 "the system clock is not namespaced (time namespaces offset only the monotonic clocks)",
	 {"settimeofday", "stime", "clock_settime", "clock_settime64"}},
	{0,
	 EPERM,
	 "opens a file from a handle without walking a path, so path rules never see one (the "
	 "'shocker' container escape)",
	 {"open_by_handle_at"}},
	{SECCOMP_DENY_NAMESPACES,
	 EPERM,
	 "joining another process's namespaces (the namespaced parts of clone and unshare are "
	 "rules of their own)",
	 {"setns"}},
	{SECCOMP_DENY_NAMESPACES,
	 ENOSYS,
	 "clone3's flags sit in memory seccomp cannot read; ENOSYS makes glibc fall back to "
	 "clone, whose flags the rules see",
	 {"clone3"}},
	{SECCOMP_DENY_IPC,
	 EPERM,
	 "without an IPC namespace SysV IPC objects are the host's, reachable by key",
	 {"shmget", "shmat", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop",
	  "semtimedop", "semtimedop_time64", "semctl"}},
	{SECCOMP_DENY_IPC,
	 EPERM,
	 "the i386 multiplexer as a whole: libseccomp matches its call number exactly, but the "
	 "kernel ignores the version in the upper 16 bits, so 'SHMGET | 1 << 16' would pass",
	 {"ipc"}},
	{SECCOMP_DENY_IPC,
	 EPERM,
	 "without an IPC namespace POSIX message queues are the host's, reachable by name",
	 {"mq_open", "mq_unlink", "mq_timedsend", "mq_timedsend_time64", "mq_timedreceive",
	  "mq_timedreceive_time64", "mq_notify", "mq_getsetattr"}},
};

/*
 * Namespace flags (SECCOMP_DENY_NAMESPACES): a new user namespace hands the command
 * capabilities over kernel code otherwise reserved to root, the usual first step of a kernel
 * exploit; the others escape the host's view only with one. One rule per bit, as each is a
 * masked equality. CLONE_NEWTIME is unshare-only: in clone's flags the bit is part of the exit
 * signal.
 */
static const uint64_t namespace_flags[] = {
	CLONE_NEWNS,  CLONE_NEWUSER, CLONE_NEWPID,    CLONE_NEWNET,
	CLONE_NEWIPC, CLONE_NEWUTS,  CLONE_NEWCGROUP,
};

/*
 * Calls that name their target by pid (SECCOMP_DENY_PROCESS_TARGETS): without a PID namespace
 * that pid can be the harness or any process of the user. Allowed only on the caller itself,
 * pid 0 in the first argument; a thread's own non-zero tid is refused too (the safe direction).
 */
static const char *const pid_targeted[] = {
	"prlimit64",	 "sched_setaffinity", "sched_setscheduler", "sched_setparam",
	"sched_setattr", "migrate_pages",     "move_pages",
};

/*
 * Metadata changes Landlock has no right for (SECCOMP_METADATA_*): permissions, owners, times,
 * extended attributes. The *32 and *_time64 forms are the 32-bit ABI's.
 */
static const char *const metadata_calls[] = {
	"chmod",     "fchmod",	    "fchmodat",	    "fchmodat2",	"chown",    "fchown",
	"lchown",    "fchownat",    "chown32",	    "fchown32",		"lchown32", "utime",
	"utimes",    "futimesat",   "utimensat",    "utimensat_time64", "setxattr", "lsetxattr",
	"fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
};

/*
 * Metadata calls newer than some libseccomp (2.5.4, Debian 12's, knows none of them), by their
 * number in the kernel's generic table, which every arch of ours shares since 5.1 but MIPS (an
 * offset per ABI) and x32 (bit 30 set): a filter that missed them would leave the door open on
 * the kernels that have them. Where libseccomp knows the name, it makes the rule itself.
 */
typedef struct new_call {
	const char *name;
	int nr;
} new_call;

static const new_call metadata_new_calls[] = {
	{"setxattrat", 463},
	{"removexattrat", 466},
	{"file_setattr", 469}, /* the inode flags and project id of FS_IOC_FSSETXATTR */
};

/* The inode-flag ioctls: the kernel reads the request as 32 bits. */
static const uint32_t metadata_ioctls[] = {
	0x40086602, /* FS_IOC_SETFLAGS, _IOW('f', 2, long), 64-bit */
	0x40046602, /* FS_IOC32_SETFLAGS, the 32-bit ABI's */
	0x401c5820, /* FS_IOC_FSSETXATTR, _IOW('X', 32, struct fsxattr) */
};

/*
 * Not a run-time flag: a runner program (seccomp_runner_program(), for a child that execs bwrap,
 * which adds the rest), the supervised groups of SECCOMP_RUNNER_FLAGS alone, no base rules.
 */
#define RUNNER (1u << 31)

/* The socketcall(2) call numbers (linux/net.h), for the ABIs that multiplex through it. */
#define SOCKOP_SOCKET	  1
#define SOCKOP_CONNECT	  3
#define SOCKOP_SOCKETPAIR 8
#define SOCKOP_SENDTO	  11
#define SOCKOP_SENDMSG	  16
#define SOCKOP_SENDMMSG	  20

static uint32_t metadata_action(unsigned flags)
{
	return flags & SECCOMP_METADATA_DENY ? SCMP_ACT_ERRNO(EPERM) : SCMP_ACT_NOTIFY;
}

/* @err is an errno to fail with, or minus a libseccomp action (-SCMP_ACT_NOTIFY). */
static int add_rule(scmp_filter_ctx ctx, int err, const char *name, unsigned n_args,
		    const struct scmp_arg_cmp *args)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR) {
		/* A deny-list must not lose a rule silently: an old libseccomp fails the build. */
		fprintf(stderr, "seccomp-gen: this libseccomp does not know the system call %s\n",
			name);
		return -ENOENT;
	}
	/* Where a system call does not exist on one of the arches, libseccomp skips that arch. */
	int r = seccomp_rule_add_array(
		ctx, err < 0 ? (uint32_t)-err : SCMP_ACT_ERRNO((uint32_t)err), nr, n_args, args);
	if (r < 0)
		fprintf(stderr, "seccomp-gen: rule for %s: %s\n", name, strerror(-r));
	return r;
}

/* Refuses @name unless its argument @arg is exactly @value, comparing all 64 bits. */
static int deny_unless(scmp_filter_ctx ctx, const char *name, unsigned arg, uint64_t value)
{
	struct scmp_arg_cmp cmp = SCMP_CMP(arg, SCMP_CMP_NE, value, 0);
	return add_rule(ctx, EPERM, name, 1, &cmp);
}

/* Refuses @name when @flag is set in its argument @arg. */
static int deny_flag(scmp_filter_ctx ctx, const char *name, unsigned arg, uint64_t flag)
{
	struct scmp_arg_cmp cmp = SCMP_CMP(arg, SCMP_CMP_MASKED_EQ, flag, flag);
	return add_rule(ctx, EPERM, name, 1, &cmp);
}

/*
 * The network rules of the native ABI (SECCOMP_NET_NOTIFY, SECCOMP_DENY_SOCKETS). libseccomp
 * adds them to the other arches too, where the prefix (build_prefix()) shadows what cannot be
 * decoded there: i386's socketcall keeps its arguments in memory (libseccomp would compare
 * socketcall's own argument registers instead), and the supervisor decodes the native ABI only.
 */
static int add_net_rules(scmp_filter_ctx ctx, unsigned flags)
{
	int r = 0;
	if (flags & SECCOMP_NET_NOTIFY) {
		/*
		 * With a NULL destination, sendto is a send on a connected socket: let through.
		 * sendmsg's and sendmmsg's destinations lie in memory the filter cannot read: every
		 * one goes to the supervisor.
		 */
		struct scmp_arg_cmp to = SCMP_CMP(4, SCMP_CMP_NE, 0, 0);
		r = add_rule(ctx, -(int)SCMP_ACT_NOTIFY, "connect", 0, NULL);
		if (r >= 0)
			r = add_rule(ctx, -(int)SCMP_ACT_NOTIFY, "sendto", 1, &to);
		if (r >= 0)
			r = add_rule(ctx, -(int)SCMP_ACT_NOTIFY, "sendmsg", 0, NULL);
		if (r >= 0)
			r = add_rule(ctx, -(int)SCMP_ACT_NOTIFY, "sendmmsg", 0, NULL);
	}
	if (r >= 0 && (flags & SECCOMP_DENY_SOCKETS)) {
		struct scmp_arg_cmp family = SCMP_CMP(0, SCMP_CMP_NE, AF_UNIX, 0);
		r = add_rule(ctx, EAFNOSUPPORT, "socket", 1, &family);
		if (r >= 0)
			r = add_rule(ctx, EAFNOSUPPORT, "socketpair", 1, &family);
	}
	return r;
}

/* The write-class file calls evidence supervises (SECCOMP_FILES_NOTIFY), on the native ABI. */
static const char *const file_calls[] = {
	"open",	   "openat", "creat",	 "openat2",   "mkdir",	  "mkdirat",  "mknod",
	"mknodat", "unlink", "unlinkat", "rmdir",     "rename",	  "renameat", "renameat2",
	"link",	   "linkat", "symlink",	 "symlinkat", "truncate",
};

/*
 * SECCOMP_FILES_NOTIFY: open and openat only with an intent to write, create or truncate
 * (their flags are a register: (flags & O_ACCMODE) is O_WRONLY or O_RDWR, or O_CREAT or
 * O_TRUNC is set), so reads never wait for the supervisor; openat2's flags lie in memory, so
 * every one goes; the others always. The O_* values are the build machine's, which are the
 * generic ones of every target we build for (x86, Arm, RISC-V). libseccomp adds them to the other
 * arches too, where the prefix lets them run first (file_prefix_rules()): the supervisor decodes
 * the native ABI only.
 */
static int add_file_rules(scmp_filter_ctx ctx, bool reads)
{
	const int act = -(int)SCMP_ACT_NOTIFY;
	const struct {
		const char *name;
		unsigned arg;
	} opens[] = {{"open", 1}, {"openat", 2}};
	int r = 0;
	/* FILES_READ_NOTIFY: every open, reads of hidden paths recorded too. */
	for (size_t i = 0; reads && r >= 0 && i < sizeof(opens) / sizeof(opens[0]); i++)
		r = add_rule(ctx, act, opens[i].name, 0, NULL);
	for (size_t i = 0; !reads && r >= 0 && i < sizeof(opens) / sizeof(opens[0]); i++) {
		unsigned a = opens[i].arg;
		struct scmp_arg_cmp wr = SCMP_CMP(a, SCMP_CMP_MASKED_EQ, O_ACCMODE, O_WRONLY);
		struct scmp_arg_cmp rdwr = SCMP_CMP(a, SCMP_CMP_MASKED_EQ, O_ACCMODE, O_RDWR);
		struct scmp_arg_cmp creat = SCMP_CMP(a, SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT);
		struct scmp_arg_cmp trunc = SCMP_CMP(a, SCMP_CMP_MASKED_EQ, O_TRUNC, O_TRUNC);
		r = add_rule(ctx, act, opens[i].name, 1, &wr);
		if (r >= 0)
			r = add_rule(ctx, act, opens[i].name, 1, &rdwr);
		if (r >= 0)
			r = add_rule(ctx, act, opens[i].name, 1, &creat);
		if (r >= 0)
			r = add_rule(ctx, act, opens[i].name, 1, &trunc);
	}
	for (size_t i = 2; r >= 0 && i < sizeof(file_calls) / sizeof(file_calls[0]); i++)
		r = add_rule(ctx, act, file_calls[i], 0, NULL);
	return r;
}

/* The metadata calls and inode-flag ioctls, with @flags's action (metadata_action()). */
static int add_metadata_rules(scmp_filter_ctx ctx, unsigned flags)
{
	int act = -(int)metadata_action(flags);
	int r = 0;
	for (size_t i = 0; r >= 0 && i < sizeof(metadata_calls) / sizeof(metadata_calls[0]); i++)
		r = add_rule(ctx, act, metadata_calls[i], 0, NULL);
	for (size_t i = 0; r >= 0 && i < sizeof(metadata_ioctls) / sizeof(metadata_ioctls[0]);
	     i++) {
		struct scmp_arg_cmp cmp =
			SCMP_CMP(1, SCMP_CMP_MASKED_EQ, 0xffffffffu, metadata_ioctls[i]);
		r = add_rule(ctx, act, "ioctl", 1, &cmp);
	}
	for (size_t i = 0; r >= 0 && i < sizeof(metadata_new_calls) / sizeof(metadata_new_calls[0]);
	     i++) {
		if (seccomp_syscall_resolve_name(metadata_new_calls[i].name) == __NR_SCMP_ERROR)
			continue; /* in the prefix (build_prefix()) */
		r = add_rule(ctx, act, metadata_new_calls[i].name, 0, NULL);
	}
	return r;
}

/* A runner program's rules: its supervised groups alone (SECCOMP_RUNNER_FLAGS). */
static int add_runner_rules(scmp_filter_ctx ctx, unsigned flags)
{
	int r = add_net_rules(ctx, flags & SECCOMP_NET_NOTIFY);
	if (r >= 0 && (flags & SECCOMP_METADATA_NOTIFY))
		r = add_metadata_rules(ctx, flags);
	if (r >= 0 && (flags & SECCOMP_FILES_NOTIFY))
		r = add_file_rules(ctx, flags & SECCOMP_FILES_READ_NOTIFY);
	return r;
}

static int add_rules(scmp_filter_ctx ctx, const target *t, unsigned flags)
{
	int r;

	if (flags & RUNNER)
		return add_runner_rules(ctx, flags & ~RUNNER);
	r = add_net_rules(ctx, flags);
	if (r < 0)
		return r;

	for (size_t i = 0; i < sizeof(denials) / sizeof(denials[0]); i++) {
		const denial *d = &denials[i];
		if (d->flags && !(flags & d->flags))
			continue;
		for (size_t j = 0; j < sizeof(d->calls) / sizeof(d->calls[0]) && d->calls[j]; j++) {
			r = add_rule(ctx, d->err, d->calls[j], 0, NULL);
			if (r < 0)
				return r;
		}
	}

	/*
	 * Terminal input injection: TIOCSTI pushes bytes into the input queue of the terminal the
	 * command shares with the user, who then "types" them after the command ends; TIOCLINUX
	 * does the same through a virtual console's paste buffer (CVE-2017-5226, CVE-2023-28100).
	 * The kernel reads the request as 32 bits, so only those are compared: with the upper
	 * half set the call is still TIOCSTI to the kernel (CVE-2019-10063, Flatpak's fix).
	 */
	const uint32_t ioctls[] = {t->tiocsti, t->tioclinux};
	for (size_t i = 0; i < 2; i++) {
		struct scmp_arg_cmp cmp = SCMP_CMP(1, SCMP_CMP_MASKED_EQ, 0xffffffffu, ioctls[i]);
		r = add_rule(ctx, EPERM, "ioctl", 1, &cmp);
		if (r < 0)
			return r;
	}

	if (flags & (SECCOMP_METADATA_NOTIFY | SECCOMP_METADATA_DENY)) {
		r = add_metadata_rules(ctx, flags);
		if (r < 0)
			return r;
	}

	if (flags & SECCOMP_FILES_NOTIFY) {
		r = add_file_rules(ctx, flags & SECCOMP_FILES_READ_NOTIFY);
		if (r < 0)
			return r;
	}

	if (flags & SECCOMP_DENY_NAMESPACES) {
		for (size_t i = 0; i < sizeof(namespace_flags) / sizeof(namespace_flags[0]); i++) {
			r = deny_flag(ctx, "unshare", 0, namespace_flags[i]);
			if (r >= 0)
				r = deny_flag(ctx, "clone", (unsigned)t->clone_flags_arg,
					      namespace_flags[i]);
			if (r < 0)
				return r;
		}
		r = deny_flag(ctx, "unshare", 0, CLONE_NEWTIME);
		if (r < 0)
			return r;
	}

	if (flags & SECCOMP_DENY_PROCESS_TARGETS) {
		/* Two rules each: refused when either argument is anything but the caller. */
		r = deny_unless(ctx, "setpriority", 0, PRIO_PROCESS);
		if (r >= 0)
			r = deny_unless(ctx, "setpriority", 1, 0);
		if (r >= 0)
			r = deny_unless(ctx, "ioprio_set", 0, IOPRIO_WHO_PROCESS);
		if (r >= 0)
			r = deny_unless(ctx, "ioprio_set", 1, 0);
		for (size_t i = 0; r >= 0 && i < sizeof(pid_targeted) / sizeof(pid_targeted[0]);
		     i++)
			r = deny_unless(ctx, pid_targeted[i], 0, 0);
		if (r < 0)
			return r;
	}
	return 0;
}

static int build_filter(const target *t, unsigned flags, scmp_filter_ctx *ret_ctx)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	bool keep_native = false;
	int r;

	if (!ctx)
		return -ENOMEM;
	/*
	 * seccomp_init() starts with the build machine's arch. A cross build drops it first: a
	 * filter holds arches of one byte order only, the order of the first.
	 */
	for (size_t i = 0; i < 3 && t->arches[i]; i++)
		if (seccomp_arch_resolve_name(t->arches[i]) == seccomp_arch_native())
			keep_native = true;
	if (!keep_native) {
		r = seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE);
		if (r < 0)
			goto fail;
	}
	for (size_t i = 0; i < 3 && t->arches[i]; i++) {
		uint32_t arch = seccomp_arch_resolve_name(t->arches[i]);
		if (arch == 0) {
			fprintf(stderr, "seccomp-gen: this libseccomp does not know the arch %s\n",
				t->arches[i]);
			r = -ENOENT;
			goto fail;
		}
		r = seccomp_arch_add(ctx, arch);
		if (r < 0 && r != -EEXIST)
			goto fail;
	}

	/*
	 * A system call of an ABI the filter does not list (x32 where it was not added, or a
	 * future one) fails rather than runs unchecked, and never kills.
	 */
	r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM));
	if (r < 0)
		goto fail;
	/* A binary tree of system-call numbers: shorter paths (libseccomp >= 2.5; else linear). */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

	r = add_rules(ctx, t, flags);
	if (r < 0)
		goto fail;
	*ret_ctx = ctx;
	return 0;
fail:
	seccomp_release(ctx);
	return r;
}

/* How the generic table's numbers are offset on an arch of ours: MIPS numbers each ABI apart. */
static int generic_offset(const char *arch)
{
	if (strcmp(arch, "mips") == 0 || strcmp(arch, "mipsel") == 0)
		return 4000; /* o32 */
	if (strcmp(arch, "mips64") == 0 || strcmp(arch, "mipsel64") == 0)
		return 5000; /* n64 */
	return 0;
}

#define X32_SYSCALL_BIT 0x40000000u

/* One rule of the prefix: a system-call number, maybe the low half of its first argument. */
typedef enum prefix_arg {
	ARG_ANY,
	ARG_EQ,
	ARG_NE
} prefix_arg;

typedef struct prefix_rule {
	uint32_t nr;
	prefix_arg cmp; /* ARG_EQ, ARG_NE: the first argument's low 32 bits against @value */
	uint32_t value;
	uint32_t action;
} prefix_rule;

#define PREFIX_RULES 64

/* The rules of one AUDIT_ARCH value (x32 shares x86_64's, with bit 30 in its numbers). */
typedef struct prefix_group {
	uint32_t audit;
	prefix_rule rules[PREFIX_RULES];
	size_t n;
} prefix_group;

static int prefix_add(prefix_group *g, uint32_t nr, prefix_arg cmp, uint32_t value, uint32_t action)
{
	if (g->n == PREFIX_RULES)
		return -E2BIG;
	g->rules[g->n++] = (prefix_rule){.nr = nr, .cmp = cmp, .value = value, .action = action};
	return 0;
}

/*
 * The direct number of a socket call on an ABI that also multiplexes it through socketcall
 * (libseccomp names it by a negative pseudo number there): i386's, linux/arch/x86 syscall_32.
 */
static int direct_socket_nr(const char *arch, const char *name)
{
	static const struct {
		const char *arch, *name;
		int nr;
	} known[] = {
		{"x86", "socket", 359}, {"x86", "socketpair", 360}, {"x86", "connect", 362},
		{"x86", "sendto", 369}, {"x86", "sendmsg", 370},    {"x86", "sendmmsg", 345},
	};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(known[i].arch, arch) == 0 && strcmp(known[i].name, name) == 0)
			return known[i].nr;
	return -1;
}

/*
 * The network rules of @arch's ABI that libseccomp's program cannot express (add_net_rules()):
 * on an arch that is not the target's own, the supervised calls (connect, sendto, sendmsg,
 * sendmmsg) are refused with EPERM (the supervisor decodes the native ABI only); wherever
 * socketcall exists, its forms of them (and with DENY_SOCKETS its socket and socketpair) are
 * refused, since their arguments lie in memory the filter cannot read.
 */
static int net_prefix_rules(prefix_group *g, const char *arch, bool native, bool x32,
			    unsigned flags)
{
	const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
	uint32_t token = seccomp_arch_resolve_name(arch);
	int r = 0;

	if (!(flags & (SECCOMP_NET_NOTIFY | SECCOMP_DENY_SOCKETS)))
		return 0;
	if (!native && (flags & SECCOMP_NET_NOTIFY)) {
		static const char *const calls[] = {"connect", "sendto", "sendmsg", "sendmmsg"};
		for (size_t i = 0; r >= 0 && i < sizeof(calls) / sizeof(calls[0]); i++) {
			int nr = seccomp_syscall_resolve_name_arch(token, calls[i]);
			if (nr < 0)
				nr = direct_socket_nr(arch, calls[i]);
			if (nr < 0) {
				fprintf(stderr, "seccomp-gen: no number for %s on %s\n", calls[i],
					arch);
				return -ENOENT;
			}
			r = prefix_add(g, (uint32_t)nr | (x32 ? X32_SYSCALL_BIT : 0), ARG_ANY, 0,
				       eperm);
		}
	}
	int socketcall = seccomp_syscall_resolve_name_arch(token, "socketcall");
	if (socketcall >= 0 && r >= 0 && (flags & SECCOMP_NET_NOTIFY)) {
		static const uint32_t ops[] = {SOCKOP_CONNECT, SOCKOP_SENDTO, SOCKOP_SENDMSG,
					       SOCKOP_SENDMMSG};
		for (size_t i = 0; r >= 0 && i < sizeof(ops) / sizeof(ops[0]); i++)
			r = prefix_add(g, (uint32_t)socketcall, ARG_EQ, ops[i], eperm);
	}
	if (socketcall >= 0 && r >= 0 && (flags & SECCOMP_DENY_SOCKETS)) {
		r = prefix_add(g, (uint32_t)socketcall, ARG_EQ, SOCKOP_SOCKET, eperm);
		if (r >= 0)
			r = prefix_add(g, (uint32_t)socketcall, ARG_EQ, SOCKOP_SOCKETPAIR, eperm);
	}
	return r;
}

/*
 * SECCOMP_FILES_NOTIFY on an arch that is not the target's own: its file calls run, unsupervised
 * (the supervisor decodes the native ABI only and would refuse them; evidence is not worth
 * breaking an i386 program). Calls the arch does not have are skipped.
 */
static int file_prefix_rules(prefix_group *g, const char *arch, bool x32)
{
	uint32_t token = seccomp_arch_resolve_name(arch);
	int r = 0;
	for (size_t i = 0; r >= 0 && i < sizeof(file_calls) / sizeof(file_calls[0]); i++) {
		int nr = seccomp_syscall_resolve_name_arch(token, file_calls[i]);
		if (nr >= 0)
			r = prefix_add(g, (uint32_t)nr | (x32 ? X32_SYSCALL_BIT : 0), ARG_ANY, 0,
				       SCMP_ACT_ALLOW);
	}
	return r;
}

/*
 * The rules libseccomp cannot make, written as classic BPF to run before its program, for each
 * arch of @t: the metadata calls it does not know, by number, with @flags's metadata action,
 * and the network rules of net_prefix_rules(). Jumps are relative and forward, so the program
 * after the prefix is untouched. Fills @insns (room for @max) and returns the count, 0 when
 * nothing is needed, or -errno.
 */
static int build_prefix(const target *t, unsigned flags, bool big, struct sock_filter *insns,
			size_t max)
{
	int unknown[sizeof(metadata_new_calls) / sizeof(metadata_new_calls[0])];
	size_t n_unknown = 0, n = 0;
	bool metadata = flags & (SECCOMP_METADATA_NOTIFY | SECCOMP_METADATA_DENY);
	unsigned net = flags & ~RUNNER;
	int r;

	for (size_t i = 0;
	     metadata && i < sizeof(metadata_new_calls) / sizeof(metadata_new_calls[0]); i++)
		if (seccomp_syscall_resolve_name(metadata_new_calls[i].name) == __NR_SCMP_ERROR)
			unknown[n_unknown++] = metadata_new_calls[i].nr;

	prefix_group groups[3];
	size_t n_groups = 0, n_rules = 0;
	for (size_t i = 0; i < 3 && t->arches[i]; i++) {
		bool x32 = strcmp(t->arches[i], "x32") == 0;
		uint32_t audit = seccomp_arch_resolve_name(x32 ? "x86_64" : t->arches[i]);
		size_t g = 0;
		while (g < n_groups && groups[g].audit != audit)
			g++;
		if (g == n_groups) {
			groups[g].audit = audit;
			groups[g].n = 0;
			n_groups++;
		}
		for (size_t k = 0; k < n_unknown; k++) {
			r = prefix_add(&groups[g],
				       (uint32_t)(unknown[k] + generic_offset(t->arches[i])) |
					       (x32 ? X32_SYSCALL_BIT : 0),
				       ARG_ANY, 0, metadata_action(flags));
			if (r < 0)
				return r;
		}
		r = net_prefix_rules(&groups[g], t->arches[i], i == 0, x32, net);
		if (r >= 0 && (flags & SECCOMP_FILES_NOTIFY) && i > 0)
			r = file_prefix_rules(&groups[g], t->arches[i], x32);
		if (r < 0)
			return r;
	}
	for (size_t g = 0; g < n_groups; g++)
		n_rules += groups[g].n;
	if (n_rules == 0)
		return 0;

	/*
	 * ld arch; per arch: jeq arch (else the next arch), ld nr, its rules, ja END; after the
	 * last arch ja END; END: libseccomp's program, which loads what it needs itself. A rule
	 * on the number alone is "jeq nr (else the next rule); ret action"; one on the first
	 * argument is "jeq nr (else the next rule); ld a0 low; jeq/jne value (else reload);
	 * ret action; ld nr". Only a matching arch enters its body, so the next compare still
	 * finds the arch in the accumulator, and every rule leaves the number there.
	 */
	size_t total = 1 + 1;
	for (size_t g = 0; g < n_groups; g++) {
		total += 3;
		for (size_t k = 0; k < groups[g].n; k++)
			total += groups[g].rules[k].cmp == ARG_ANY ? 2 : 5;
	}
	if (total > max || total > 255)
		return -E2BIG;
	const size_t end_at = total;
	/* struct seccomp_data: nr, arch, ip, then args[0] at 16, in the target's byte order. */
	const uint32_t a0_low = 16 + (big ? 4 : 0);
	insns[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4 /* arch */);
	for (size_t g = 0; g < n_groups; g++) {
		size_t body = 2; /* ld nr, ja END */
		for (size_t k = 0; k < groups[g].n; k++)
			body += groups[g].rules[k].cmp == ARG_ANY ? 2 : 5;
		insns[n] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, groups[g].audit,
							0, (uint8_t)body);
		n++;
		insns[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0 /* nr */);
		for (size_t k = 0; k < groups[g].n; k++) {
			const prefix_rule *p = &groups[g].rules[k];
			if (p->cmp == ARG_ANY) {
				insns[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
									  p->nr, 0, 1);
				insns[n++] =
					(struct sock_filter)BPF_STMT(BPF_RET | BPF_K, p->action);
				continue;
			}
			insns[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, p->nr,
								  0, 4);
			insns[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, a0_low);
			insns[n++] = (struct sock_filter)BPF_JUMP(
				BPF_JMP | BPF_JEQ | BPF_K, p->value, p->cmp == ARG_EQ ? 0 : 1,
				p->cmp == ARG_EQ ? 1 : 0);
			insns[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, p->action);
			insns[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0);
		}
		insns[n] =
			(struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, (uint32_t)(end_at - n - 1));
		n++;
	}
	insns[n] = (struct sock_filter)BPF_STMT(BPF_JMP | BPF_JA, (uint32_t)(end_at - n - 1));
	n++;
	return (int)n;
}

static uint32_t load32(const unsigned char *p, bool big)
{
	return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
		   : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint16_t load16(const unsigned char *p, bool big)
{
	return (uint16_t)(big ? p[0] << 8 | p[1] : p[1] << 8 | p[0]);
}

/*
 * Writes the program of @ctx as C initialisers named program_@flags; returns its length or
 * -errno. libseccomp exports in the target's byte order, so that order is read back.
 */
static int write_program(FILE *out, scmp_filter_ctx ctx, unsigned flags, bool big,
			 const struct sock_filter *prefix, int n_prefix)
{
	unsigned char buf[MAX_INSNS * 8 + 1];
	size_t len = 0;
	FILE *tmp = tmpfile();
	int r;

	if (!tmp)
		return -errno;
	r = seccomp_export_bpf(ctx, fileno(tmp));
	if (r < 0)
		goto out;
	rewind(tmp);
	len = fread(buf, 1, sizeof(buf), tmp);
	if (ferror(tmp)) {
		r = -EIO;
		goto out;
	}
	if (len == 0 || len % 8 != 0 || len / 8 + (size_t)n_prefix > MAX_INSNS) {
		fprintf(stderr, "seccomp-gen: the program for flags %#x has %zu bytes\n", flags,
			len);
		r = -E2BIG;
		goto out;
	}

	if (flags & RUNNER)
		fprintf(out, "static const struct sock_filter program_runner_%u[] = {\n",
			flags & ~RUNNER);
	else
		fprintf(out, "static const struct sock_filter program_%u[] = {\n", flags);
	for (int i = 0; i < n_prefix; i++)
		fprintf(out, "\t{0x%04x, %u, %u, 0x%08x},\n", prefix[i].code, prefix[i].jt,
			prefix[i].jf, prefix[i].k);
	for (size_t i = 0; i < len; i += 8)
		fprintf(out, "\t{0x%04x, %u, %u, 0x%08x},\n", load16(buf + i, big), buf[i + 2],
			buf[i + 3], load32(buf + i + 4, big));
	fprintf(out, "};\n\n");
	r = (int)(len / 8) + n_prefix;
out:
	(void)fclose(tmp);
	return r;
}

static const target *find_target(const char *family, const char *endian)
{
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		if (strcmp(targets[i].family, family) == 0 &&
		    (!targets[i].endian || strcmp(targets[i].endian, endian) == 0))
			return &targets[i];
	return NULL;
}

static void write_header(FILE *out, const target *t, const char *endian)
{
	const struct scmp_version *v = seccomp_version();

	fprintf(out, "/* SPDX-License-Identifier: MIT */\n/*\n");
	fprintf(out,
		" * Generated by src/confine/seccomp-gen.c with libseccomp %u.%u.%u: do not "
		"edit.\n",
		v->major, v->minor, v->micro);
	fprintf(out, " * Target %s (%s endian), arches:", t->family, endian);
	for (size_t i = 0; i < 3 && t->arches[i]; i++)
		fprintf(out, " %s", t->arches[i]);
	fprintf(out, ".\n * The pseudo code of each program is in seccomp-filters.pfc beside this "
		     "file;\n * the reasons are in docs/design/seccomp.md.\n */\n");
	fprintf(out,
		"\n/*\n * Refused outright (the flag that brings a group in, then its reason):\n");
	for (size_t i = 0; i < sizeof(denials) / sizeof(denials[0]); i++) {
		const denial *d = &denials[i];
		fprintf(out, " *\n *  [%s]",
			d->flags == 0				   ? "base"
			: d->flags == SECCOMP_DENY_NAMESPACES	   ? "NAMESPACES"
			: d->flags == SECCOMP_DENY_PROCESS_TARGETS ? "PROCESS_TARGETS"
								   : "IPC");
		for (size_t j = 0; j < sizeof(d->calls) / sizeof(d->calls[0]) && d->calls[j]; j++)
			fprintf(out, " %s", d->calls[j]);
		fprintf(out, " -> %s:\n *    %s\n", d->err == ENOSYS ? "ENOSYS" : "EPERM", d->why);
	}
	fprintf(out,
		" *\n * plus the argument rules of seccomp-gen.c: ioctl TIOCSTI/TIOCLINUX (base), "
		"clone/unshare\n * namespace flags (NAMESPACES), calls naming another process "
		"(PROCESS_TARGETS),\n * the metadata calls and inode-flag ioctls (METADATA_NOTIFY "
		"to the supervisor,\n * METADATA_DENY with EPERM), the calls this libseccomp does "
		"not "
		"know by a prefix.\n */\n");
	fprintf(out, "#include \"src/confine/seccomp.h\"\n\n");
}

/*
 * Builds and writes the program of @flags (with RUNNER: a runner program) to @out,
 * and its pseudo code to @pfc; returns its length or -errno.
 */
static int generate(FILE *out, FILE *pfc, const target *t, unsigned flags, bool big)
{
	scmp_filter_ctx ctx = NULL;
	struct sock_filter prefix[255];
	int n_prefix = build_prefix(t, flags, big, prefix, sizeof(prefix) / sizeof(prefix[0]));
	if (n_prefix < 0)
		return n_prefix;
	int r = build_filter(t, flags, &ctx);
	if (r < 0)
		return r;
	if (flags & RUNNER)
		fprintf(out, "/* runner flags %#x:%s%s%s%s (seccomp_runner_program()) */\n",
			flags & ~RUNNER, flags & SECCOMP_NET_NOTIFY ? " NET_NOTIFY" : "",
			flags & SECCOMP_METADATA_NOTIFY ? " METADATA_NOTIFY" : "",
			flags & SECCOMP_FILES_NOTIFY ? " FILES_NOTIFY" : "",
			flags & SECCOMP_FILES_READ_NOTIFY ? " FILES_READ_NOTIFY" : "");
	else
		fprintf(out, "/* flags %#x:%s%s%s%s%s%s%s%s%s */\n", flags,
			flags & SECCOMP_DENY_NAMESPACES ? " NAMESPACES" : "",
			flags & SECCOMP_DENY_PROCESS_TARGETS ? " PROCESS_TARGETS" : "",
			flags & SECCOMP_DENY_IPC ? " IPC" : "",
			flags & SECCOMP_METADATA_NOTIFY ? " METADATA_NOTIFY"
			: flags & SECCOMP_METADATA_DENY ? " METADATA_DENY"
							: "",
			flags & SECCOMP_NET_NOTIFY ? " NET_NOTIFY" : "",
			flags & SECCOMP_DENY_SOCKETS ? " SOCKETS" : "",
			flags & SECCOMP_FILES_NOTIFY ? " FILES_NOTIFY" : "",
			flags & SECCOMP_FILES_READ_NOTIFY ? " FILES_READ_NOTIFY" : "",
			flags ? "" : " base rules only");
	r = write_program(out, ctx, flags, big, prefix, n_prefix);
	if (r >= 0) {
		int len = r;
		if (flags & RUNNER)
			fprintf(pfc, "# ===== runner flags %#x =====\n", flags & ~RUNNER);
		else
			fprintf(pfc, "# ===== flags %#x =====\n", flags);
		(void)fflush(pfc);
		r = seccomp_export_pfc(ctx, fileno(pfc));
		if (r >= 0)
			r = len;
	}
	seccomp_release(ctx);
	return r;
}

int main(int argc, char **argv)
{
	int lengths[SECCOMP_PROGRAMS], runner_lengths[SECCOMP_PROGRAMS];
	FILE *out = NULL, *pfc = NULL;
	int r = -EINVAL;

	if (argc != 5) {
		fprintf(stderr, "usage: seccomp-gen CPU_FAMILY ENDIAN OUT.c OUT.pfc\n");
		return 2;
	}
	const target *t = find_target(argv[1], argv[2]);
	if (!t) {
		fprintf(stderr, "seccomp-gen: no filter for the cpu family %s (%s endian)\n",
			argv[1], argv[2]);
		return 1;
	}
	/* On a native build, the table's terminal numbers must be the headers' numbers. */
	if (seccomp_arch_resolve_name(t->arches[0]) == seccomp_arch_native() &&
	    (t->tiocsti != TIOCSTI || t->tioclinux != TIOCLINUX)) {
		fprintf(stderr, "seccomp-gen: TIOCSTI/TIOCLINUX in the target table are wrong\n");
		return 1;
	}

	out = fopen(argv[3], "we");
	pfc = fopen(argv[4], "we");
	if (!out || !pfc) {
		perror("seccomp-gen: cannot create the output");
		goto done;
	}
	write_header(out, t, argv[2]);
	bool big = strcmp(argv[2], "big") == 0;
	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++) {
		if (!seccomp_flags_built(flags)) {
			/* An empty slot, which seccomp_program_for() never hands out. */
			lengths[flags] = 0;
			continue;
		}
		r = generate(out, pfc, t, flags, big);
		if (r < 0)
			goto done;
		lengths[flags] = r;
	}
	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++) {
		runner_lengths[flags] = 0;
		if (!seccomp_runner_built(flags))
			continue;
		r = generate(out, pfc, t, RUNNER | flags, big);
		if (r < 0)
			goto done;
		runner_lengths[flags] = r;
	}
	fprintf(out, "const seccomp_program seccomp_programs[SECCOMP_PROGRAMS] = {\n");
	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++)
		if (lengths[flags] > 0)
			fprintf(out, "\t[%u] = {program_%u, %d},\n", flags, flags, lengths[flags]);
	fprintf(out, "};\n\n");
	fprintf(out, "const seccomp_program seccomp_runner_programs[SECCOMP_PROGRAMS] = {\n");
	for (unsigned flags = 0; flags < SECCOMP_PROGRAMS; flags++)
		if (runner_lengths[flags] > 0)
			fprintf(out, "\t[%u] = {program_runner_%u, %d},\n", flags, flags,
				runner_lengths[flags]);
	fprintf(out, "};\n");
	r = 0;
done:
	if (out && fclose(out) != 0 && r == 0)
		r = -errno;
	if (pfc && fclose(pfc) != 0 && r == 0)
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "seccomp-gen: %s\n", strerror(-r));
		(void)unlink(argv[3]);
		(void)unlink(argv[4]);
		return 1;
	}
	return 0;
}
