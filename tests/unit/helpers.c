/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka unit tests. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "helpers.h"

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
