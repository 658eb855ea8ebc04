/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka unit tests. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"

#ifndef __NR_openat2
#define __NR_openat2 437
#endif

#if defined(__x86_64__)
#define TEST_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_ARCH AUDIT_ARCH_AARCH64
#endif

char *dsb_test_mkdtemp(void)
{
	const char *base = getenv("TMPDIR");
	char *tmpl = NULL;
	assert_true(asprintf(&tmpl, "%s/dsb-test.XXXXXX", base && *base ? base : "/tmp") > 0);
	assert_non_null(mkdtemp(tmpl));
	return tmpl;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return 0;
}

void dsb_test_rm_rf(const char *path)
{
	if (path)
		(void)nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void dsb_test_write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	while (len > 0) {
		ssize_t n = write(fd, data, len);
		assert_true(n > 0);
		data += n;
		len -= (size_t)n;
	}
	assert_int_equal(close(fd), 0);
}

char *dsb_test_read_file(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	assert_non_null(mem);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		assert_int_equal(fwrite(chunk, 1, n, mem), n);
	fclose(f);
	assert_int_equal(fclose(mem), 0);
	if (ret_len)
		*ret_len = len;
	return buf;
}

char *dsb_test_data_path(const char *rel)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", DSB_TEST_DATA_DIR, rel) > 0);
	return p;
}

char *dsb_test_dsh_fixture(const char *name)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", DSB_DSH_FIXTURES_DIR, name ? name : ".") > 0);
	if (access(p, R_OK) != 0)
		fail_msg("DSH fixture missing: %s", p);
	return p;
}

bool dsb_test_update_golden(void)
{
	const char *v = getenv("DSB_UPDATE_GOLDEN");
	return v && strcmp(v, "1") == 0;
}

void dsb_test_assert_golden(const char *rel, const char *actual)
{
	char *path = dsb_test_data_path(rel);
	if (dsb_test_update_golden()) {
		dsb_test_write_file(path, actual, strlen(actual));
		free(path);
		return;
	}
	char *expected = dsb_test_read_file(path, NULL);
	if (!expected)
		fail_msg("golden file %s is missing (DSB_UPDATE_GOLDEN=1 writes it)", path);
	if (strcmp(expected, actual) != 0)
		fail_msg("golden mismatch for %s\n--- expected\n%s\n--- actual\n%s", path, expected,
			 actual);
	free(expected);
	free(path);
}

int dsb_test_run_in_child(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	(void)fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn(arg) & 0xff);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

int dsb_test_hide_openat2(int err)
{
#ifdef TEST_ARCH
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(insns) / sizeof(insns[0]), .filter = insns};
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	       prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
#else
	(void)err;
	return -1;
#endif
}
