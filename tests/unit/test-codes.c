/* SPDX-License-Identifier: MIT */
/*
 * The error-code table is API: every name and JSON-RPC number unique, every lookup consistent,
 * and docs/error-codes.md exactly what codes.def generates (DSB_UPDATE_GOLDEN=1 rewrites it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "src/core/core.h"
#include "helpers.h"

static void test_names_and_rpc_codes_are_unique(void **state)
{
	(void)state;
	for (int a = 0; a < _DSB_CODE_MAX; a++) {
		assert_non_null(dsb_code_name((dsb_code)a));
		assert_non_null(dsb_code_summary((dsb_code)a));
		for (int b = a + 1; b < _DSB_CODE_MAX; b++) {
			assert_string_not_equal(dsb_code_name((dsb_code)a),
						dsb_code_name((dsb_code)b));
			assert_int_not_equal(dsb_code_rpc((dsb_code)a), dsb_code_rpc((dsb_code)b));
		}
	}
}

static void test_lookups_round_trip(void **state)
{
	(void)state;
	for (int c = 0; c < _DSB_CODE_MAX; c++) {
		assert_int_equal(dsb_code_from_name(dsb_code_name((dsb_code)c)), c);
		assert_int_equal(dsb_code_from_return(-c), c);
	}
	assert_int_equal(dsb_code_from_name("NOPE"), _DSB_CODE_INVALID);
	assert_int_equal(dsb_code_from_name(NULL), _DSB_CODE_INVALID);
	assert_int_equal(dsb_code_from_return(5), DSB_OK);
	assert_int_equal(dsb_code_from_return(-1000), _DSB_CODE_INVALID);
	assert_null(dsb_code_name(_DSB_CODE_MAX));
	assert_null(dsb_code_name(_DSB_CODE_INVALID));
	assert_int_equal(dsb_code_rpc(_DSB_CODE_INVALID), -32603);
	assert_int_equal(dsb_code_exit_status(_DSB_CODE_INVALID), 1);
}

static void test_spec_names_are_pinned(void **state)
{
	(void)state;
	/* These strings reach models and harnesses; renaming one breaks them. */
	assert_string_equal(dsb_code_name(DSB_E_SANDBOX_UNAVAILABLE), "SANDBOX_UNAVAILABLE");
	assert_string_equal(dsb_code_name(DSB_E_FS_SANDBOX_DENIED), "FS_SANDBOX_DENIED");
	assert_string_equal(dsb_code_name(DSB_E_FS_PERMISSION_DENIED), "FS_PERMISSION_DENIED");
	assert_string_equal(dsb_code_name(DSB_E_CONFIG_INVALID), "CONFIG_INVALID");
	assert_string_equal(dsb_code_name(DSB_E_INVALID_ARGS), "INVALID_ARGS");
	assert_string_equal(dsb_code_dsh_error(DSB_E_SANDBOX_UNAVAILABLE),
			    "SandboxUnavailableError");
	assert_string_equal(dsb_code_dsh_error(DSB_E_FS_SANDBOX_DENIED), "FsError");
	assert_null(dsb_code_dsh_error(DSB_E_CONFIG_INVALID));
	assert_int_equal(dsb_code_exit_status(DSB_OK), 0);
	assert_int_equal(dsb_code_exit_status(DSB_E_INVALID_ARGS), 2);
	/* 125: "dsh-sandbox failed or the sandbox is unavailable, nothing ran" (DESIGN.md). */
	assert_int_equal(dsb_code_exit_status(DSB_E_SANDBOX_UNAVAILABLE), 125);
}

static char *render_doc(void)
{
	strbuf sb = STRBUF_INIT;
	assert_int_equal(strbuf_puts(&sb,
				     "# Error codes\n"
				     "\n"
				     "Generated from `include/dsb/codes.def` and checked by "
				     "`tests/unit/test-codes.c`\n"
				     "(`DSB_UPDATE_GOLDEN=1 meson test codes` rewrites this file). "
				     "Codes are append-only.\n"
				     "\n"
				     "| code | DSH error | JSON-RPC | exit | meaning |\n"
				     "|---|---|---|---|---|\n"),
			 0);
	for (int c = 0; c < _DSB_CODE_MAX; c++) {
		const char *dsh = dsb_code_dsh_error((dsb_code)c);
		assert_int_equal(strbuf_printf(&sb, "| `%s` | %s | %d | %d | %s |\n",
					       dsb_code_name((dsb_code)c), dsh ? dsh : "",
					       dsb_code_rpc((dsb_code)c),
					       dsb_code_exit_status((dsb_code)c),
					       dsb_code_summary((dsb_code)c)),
				 0);
	}
	return strbuf_take(&sb);
}

static void test_docs_table_matches_codes_def(void **state)
{
	(void)state;
	const char *root = getenv("DSB_SOURCE_ROOT");
	assert_non_null(root);
	char *path = NULL;
	assert_true(asprintf(&path, "%s/docs/error-codes.md", root) > 0);
	char *doc = render_doc();
	char *on_disk = dsb_test_read_file(path, NULL);
	/*
	 * The table is the file's start; what follows from its first "## " heading on is written
	 * by hand (the exit statuses of each command, produced by tests/e2e/t-messages.sh).
	 */
	const char *kept = on_disk ? strstr(on_disk, "\n## ") : NULL;
	kept = kept ? kept + 1 : "";

	if (dsb_test_update_golden()) {
		char *whole = NULL;
		assert_true(asprintf(&whole, "%s\n%s", doc, kept) > 0);
		if (!*kept)
			whole[strlen(doc)] = '\0';
		dsb_test_write_file(path, whole, strlen(whole));
		free(whole);
		free(on_disk);
		on_disk = dsb_test_read_file(path, NULL);
		kept = on_disk ? strstr(on_disk, "\n## ") : NULL;
		kept = kept ? kept + 1 : "";
	}
	if (!on_disk)
		fail_msg("%s is missing: run DSB_UPDATE_GOLDEN=1 meson test codes", path);
	size_t table_len = *kept ? (size_t)(kept - on_disk) - 1 : strlen(on_disk);
	if (table_len != strlen(doc) || strncmp(on_disk, doc, table_len) != 0)
		fail_msg("%s is stale: run DSB_UPDATE_GOLDEN=1 meson test codes", path);
	free(on_disk);
	free(doc);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_and_rpc_codes_are_unique),
		cmocka_unit_test(test_lookups_round_trip),
		cmocka_unit_test(test_spec_names_are_pinned),
		cmocka_unit_test(test_docs_table_matches_codes_def),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
