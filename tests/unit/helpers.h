/* SPDX-License-Identifier: MIT */
/* Helpers shared by the cmocka unit tests: temp-dir fixtures, file helpers, golden files. */
#ifndef DSB_TESTS_HELPERS_H
#define DSB_TESTS_HELPERS_H

#include <stdbool.h>
#include <stddef.h>

/* A new private directory under the test's TMPDIR (or /tmp); aborts the test on failure. */
char *dsb_test_mkdtemp(void);

/* Removes @path recursively (best effort). */
void dsb_test_rm_rf(const char *path);

/* Writes @len bytes of @data to @path (created 0644, truncated); aborts the test on failure. */
void dsb_test_write_file(const char *path, const char *data, size_t len);

/* Reads the whole file at @path into a new NUL-terminated buffer; NULL if it does not exist. */
char *dsb_test_read_file(const char *path, size_t *ret_len);

/* The absolute path of @rel under tests/data/ of the source tree. Returns a new string. */
char *dsb_test_data_path(const char *rel);

/*
 * The absolute path of DSH's own session log @name under tests/fixtures/dsh/ (NULL: the
 * directory), which must exist: a missing fixture fails the test, never skips it.
 */
char *dsb_test_dsh_fixture(const char *name);

/* True when DSB_UPDATE_GOLDEN=1: golden tests rewrite their expected files instead of comparing. */
bool dsb_test_update_golden(void);

/*
 * Compares @actual with the golden file tests/data/@rel, or rewrites it under DSB_UPDATE_GOLDEN.
 * Fails the test with both texts on a mismatch.
 */
void dsb_test_assert_golden(const char *rel, const char *actual);

/*
 * Forks, runs @fn(@arg) in the child and returns its exit status (128 + N for death by signal
 * N). For irreversible steps (a seccomp filter, setuid); the child reports with its exit status
 * and on stderr, never with cmocka assertions, which would unwind into the parent's test.
 */
int dsb_test_run_in_child(int (*fn)(void *), void *arg);

/*
 * Installs a seccomp filter that makes openat2(2) fail with @err (ENOSYS: a kernel before 5.6;
 * EPERM: an old Docker profile). Irreversible: only inside dsb_test_run_in_child(). 0 or -1.
 */
int dsb_test_hide_openat2(int err);

#endif
