/* SPDX-License-Identifier: MIT */
/*
 * The kernel's Landlock interface as DSH's launcher uses it (dsh-compat §5.6): the ABI version, the
 * rights a plan gets at that version (one table, reported as full or partial), and the
 * irreversible restriction of the calling process. Raw system calls through syscall(2), with
 * our own copies of the UAPI numbers and structs so the code builds against old headers (the
 * bookworm headers stop at ABI 3). Nothing here allocates: landlock_restrict() runs in children
 * forked from threaded parents.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"

#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_RULE_PATH_BENEATH
#define LANDLOCK_RULE_PATH_BENEATH 1
#endif

/*
 * struct landlock_ruleset_attr as of ABI 6. The kernel accepts any prefix it knows, and
 * rejects a size it does not know (E2BIG) or non-zero bytes past it, so we pass the size of the
 * fields the running kernel has: see ruleset_attr_size().
 */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;  /* ABI 1 */
	uint64_t handled_access_net; /* ABI 4 */
	uint64_t scoped;	     /* ABI 6 */
};

struct ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

/* The rights that make sense on a non-directory: the kernel refuses directory-only rights in
 * a rule whose parent_fd is a file (EINVAL). This is how `--rw /dev/null` works. */
#define LL_FILE_ACCESS (LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV)

#define LL_RO_ACCESS (LL_EXECUTE | LL_READ_FILE | LL_READ_DIR)

static int ll_create_ruleset(const struct ll_ruleset_attr *attr, size_t size, uint32_t flags)
{
	long r = syscall(__NR_landlock_create_ruleset, attr, size, flags);
	return r < 0 ? -errno : (int)r;
}

static int ll_add_rule(int ruleset_fd, const struct ll_path_beneath_attr *attr)
{
	long r = syscall(__NR_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH, attr, 0U);
	return r < 0 ? -errno : 0;
}

static int ll_restrict_self(int ruleset_fd)
{
	long r = syscall(__NR_landlock_restrict_self, ruleset_fd, 0U);
	return r < 0 ? -errno : 0;
}

int landlock_abi(void)
{
	return ll_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
}

/* The filesystem rights the kernel knows at @abi (already capped at LL_FULL_ABI). */
static uint64_t fs_mask(int abi)
{
	uint64_t mask = 0;

	/*
	 * Degradation, one ABI at a time (the kernel sampler's switch, read upwards): each older
	 * ABI lacks the rights added after it, and handling a right the kernel does not know is
	 * EINVAL, so those rights stay unrestricted. That is why everything below LL_FULL_ABI is
	 * reported as partial.
	 */
	if (abi >= 1)
		mask |= (LL_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */
	/* ABI 1 lacks REFER: the kernel refuses every cross-directory link or rename (EXDEV). */
	if (abi >= 2)
		mask |= LL_REFER;
	/* ABI 2 lacks TRUNCATE: truncate(2) and O_TRUNC of a readable file are not restricted. */
	if (abi >= 3)
		mask |= LL_TRUNCATE;
	/*
	 * ABI 4 added only TCP rights, which the launcher does not handle: the same mask as 3,
	 * still partial. ABI 4 lacks IOCTL_DEV: ioctl(2) on device files is not restricted.
	 */
	if (abi >= 5)
		mask |= LL_IOCTL_DEV;
	return mask;
}

/* @abi as far as @plan lets us use it: an explicit degrade (landlockAbiMax) caps it. */
static int effective_abi(const landlock_plan *plan, int abi)
{
	if (plan && plan->abi_max > 0 && abi > plan->abi_max)
		return plan->abi_max;
	return abi;
}

void landlock_negotiate(const landlock_plan *plan, int abi, landlock_status *ret_status)
{
	abi = effective_abi(plan, abi);

	landlock_status st = {
		.abi = abi,
		.partial = abi < LL_FULL_ABI,
		.handled_fs = fs_mask(abi < LL_FULL_ABI ? abi : LL_FULL_ABI),
		.scoped = 0,
	};

	/* ABI 5 lacks scopes (beyond DSH, DESIGN.md): a plan's scopes are then not applied. They do
	 * not count towards partial, which is DSH's filesystem notion. */
	if (plan && abi >= 6)
		st.scoped = plan->scope & (LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET);
	*ret_status = st;
}

/* The size of struct ll_ruleset_attr that the kernel at @abi knows. */
static size_t ruleset_attr_size(int abi)
{
	if (abi >= 6)
		return offsetof(struct ll_ruleset_attr, scoped) + sizeof(uint64_t);
	if (abi >= 4)
		return offsetof(struct ll_ruleset_attr, handled_access_net) + sizeof(uint64_t);
	return sizeof(uint64_t);
}

/* strerror(3) text without allocating (glibc allocates for unknown numbers). */
static void format_errno(char *buf, size_t size, int errnum)
{
	const char *desc = errno_desc(errnum);

	if (desc)
		(void)snprintf(buf, size, "%s", desc);
	else
		(void)snprintf(buf, size, "Unknown error %d", errnum);
}

static int ruleset_error(char *msg, size_t msg_size, int r)
{
	char err[128];

	format_errno(err, sizeof(err), -r);
	if (msg && msg_size > 0)
		(void)snprintf(msg, msg_size, "landlock-run: landlock ruleset error: %s", err);
	return r;
}

/* Adds one path-beneath rule for @path with @access (already masked by the handled rights). */
static int add_path_rule(int ruleset_fd, const char *path, uint64_t access, char *msg,
			 size_t msg_size)
{
	struct ll_path_beneath_attr attr = {.allowed_access = access, .parent_fd = -1};
	struct stat st;
	char err[128];
	int r;

	/* O_PATH: we need the inode, not the right to read it; the caller may not have that. */
	attr.parent_fd = open(path, O_PATH | O_CLOEXEC);
	if (attr.parent_fd < 0) {
		r = -errno;
		format_errno(err, sizeof(err), -r);
		if (msg && msg_size > 0)
			(void)snprintf(msg, msg_size, "landlock-run: cannot open rule path: %s: %s",
				       path, err);
		return r;
	}
	if (fstat(attr.parent_fd, &st) < 0) {
		r = -errno;
		(void)close(attr.parent_fd);
		return ruleset_error(msg, msg_size, r);
	}
	if (!S_ISDIR(st.st_mode))
		attr.allowed_access &= LL_FILE_ACCESS;

	r = ll_add_rule(ruleset_fd, &attr);
	(void)close(attr.parent_fd);
	if (r < 0)
		return ruleset_error(msg, msg_size, r);
	return 0;
}

int landlock_restrict(const landlock_plan *plan, landlock_status *ret_status, char *msg,
		      size_t msg_size)
{
	struct ll_ruleset_attr attr = {0};
	landlock_status st;
	int abi, fd, r;

	if (msg && msg_size > 0)
		msg[0] = '\0';

	abi = landlock_abi();
	if (abi < 0) {
		/*
		 * ENOSYS (not built), EOPNOTSUPP (disabled at boot): we fail closed. Running the
		 * command unconfined is never a fallback; the caller decides what else to try.
		 */
		if (msg && msg_size > 0)
			(void)snprintf(msg, msg_size,
				       "landlock-run: landlock is not enforced by "
				       "this kernel (ABI unsupported or disabled)");
		return abi;
	}
	landlock_negotiate(plan, abi, &st);

	/* st.abi is the ABI we build for (the kernel's, or lower by an explicit degrade). */
	attr.handled_access_fs = st.handled_fs;
	attr.scoped = st.scoped;
	fd = ll_create_ruleset(&attr, ruleset_attr_size(st.abi), 0);
	if (fd < 0)
		return ruleset_error(msg, msg_size, fd);

	/*
	 * Every rule path must exist: a missing grant fails the whole launch rather than silently
	 * narrowing what the command may do (the caller asked for that path to be usable).
	 */
	for (char **p = plan ? plan->ro : NULL; p && *p; p++) {
		r = add_path_rule(fd, *p, LL_RO_ACCESS & st.handled_fs, msg, msg_size);
		if (r < 0)
			goto fail;
	}
	/*
	 * Read-write grants make no device nodes (beyond DSH's launcher): a writable root is for
	 * files, and a device node planted there would outlive the sandbox.
	 */
	for (char **p = plan ? plan->rw : NULL; p && *p; p++) {
		r = add_path_rule(fd, *p, st.handled_fs & ~(LL_MAKE_CHAR | LL_MAKE_BLOCK), msg,
				  msg_size);
		if (r < 0)
			goto fail;
	}
	/*
	 * Without REFER nothing crosses into or out of these roots by link or rename: the kernel
	 * answers EXDEV, and mv(1) copies instead: a copied socket is a new one, bound to nothing.
	 */
	for (char **p = plan ? plan->rw_in_place : NULL; p && *p; p++) {
		r = add_path_rule(fd, *p,
				  st.handled_fs & ~(LL_MAKE_CHAR | LL_MAKE_BLOCK | LL_REFER), msg,
				  msg_size);
		if (r < 0)
			goto fail;
	}

	/* Unprivileged callers need no_new_privs to restrict themselves; root gets it too, so a
	 * set-uid program started later can never shed the domain's intent. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1L, 0L, 0L, 0L) < 0) {
		r = ruleset_error(msg, msg_size, -errno);
		goto fail;
	}
	r = ll_restrict_self(fd);
	if (r < 0) {
		(void)ruleset_error(msg, msg_size, r);
		goto fail;
	}
	(void)close(fd);
	if (ret_status)
		*ret_status = st;
	return 0;

fail:
	(void)close(fd);
	return r;
}
