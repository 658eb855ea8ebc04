/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the bash tool's text (dsh-compat §6.8, §8.1; DSH's tool-bash renderResult tests and
 * the parseExitStatus texts of §11.13) and of the run classifiers (dsh-compat §5.8, §6.5; the
 * classifyRunnerFailure/classifyDenial cases of §11.16 and §11.17).
 *
 * Every render case has a golden file tests/data/render/<case>/expected.txt (DSB_UPDATE_GOLDEN=1
 * rewrites them); a case DSH pins exactly also carries that text here, so a golden can never drift
 * from the spec unnoticed.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "src/exec/exec.h"
#include "helpers.h"

/* Defined in src/exec/render.c; to be declared in exec.h. */

/* The tables hold literals; the library's structs take char *. */
#define S(s) ((char *)(s))

#define HINT                                                                                 \
	"[sandbox: escalation available \xE2\x80\x94 retry this exact command once with "    \
	"sandbox_permissions (the narrowest wider mode that suffices) + justification; the " \
	"approval prompt asks the user]"
#define NOTICE	"landlock-run: partial enforcement (older Landlock ABI)"
#define FFFD	"\xEF\xBF\xBD"
#define SPILL_1 "/tmp/dsh-subprocess-Ab12Cd/dsh-subprocess-4242-1-0123456789ab-stdout.log"
#define SPILL_2 "/tmp/dsh-subprocess-Ab12Cd/dsh-subprocess-4242-2-ba9876543210-stderr.log"

/* --- rendering ------------------------------------------------------------------------------ */

typedef struct render_case {
	const char *name; /* tests/data/render/<name>/expected.txt */
	const char *out, *err;
	size_t out_len, err_len; /* 0: strlen() */
	bool out_truncated, err_truncated;
	const char *out_spill, *err_spill;
	int exit_code, signal;
	bool timed_out;
	uint64_t timeout_ms;
	bool sandboxed, denied;
	dsb_mode mode;
	dsb_enforcement enforcement;
	bool confines;
	const char *expect; /* the text DSH's tests pin exactly, or NULL (golden only) */
} render_case;

/* clang-format off: a table, one case a block */
static const render_case render_cases[] = {
	/* §6.8 examples and §11.19 #1-7 (tools.spec: the bash tool end to end). */
	{.name = "hello", .out = "hello\n", .expect = "hello\n"},
	{.name = "no-output", .expect = "(no output)"},
	{.name = "stderr-section",
	 .out = "out\n",
	 .err = "err\n",
	 .expect = "out\n[stderr]\nerr\n"},
	{.name = "exit-code",
	 .out = "failing\n",
	 .exit_code = 3,
	 .expect = "failing\n[exit code: 3]"},
	{.name = "timeout-killed",
	 .exit_code = -1,
	 .signal = SIGTERM,
	 .timed_out = true,
	 .timeout_ms = 100,
	 .expect = "(no output)\n[timed out after 100ms]\n[killed by signal: SIGTERM]"},
	{.name = "timeout-trapped",
	 .timed_out = true,
	 .timeout_ms = 1000,
	 .expect = "(no output)\n[timed out after 1000ms]"},
	{.name = "timeout-trapped-terminated",
	 .err = "bash: line 1:  4242 Terminated              sleep 60\n",
	 .timed_out = true,
	 .timeout_ms = 100},
	{.name = "truncated-spill",
	 .out = "line-0092\nline-0093\nline-0094\nline-0095\nline-0096\nline-0097\nline-0098\n"
		"line-0099\nline-0100\n",
	 .out_truncated = true,
	 .out_spill = SPILL_1},
	{.name = "truncated-unavailable",
	 .out = "tail",
	 .out_truncated = true,
	 .expect = "tail\n[output truncated; full output: (unavailable)]"},
	/* §11.19 #61-68 (renderResult). */
	{.name = "stderr-only", .err = "err\n", .timeout_ms = 1000, .expect = "[stderr]\nerr\n"},
	{.name = "stderr-separator",
	 .out = "out",
	 .err = "err",
	 .timeout_ms = 1000,
	 .expect = "out\n[stderr]\nerr"},
	{.name = "exit-unterminated",
	 .out = "x",
	 .exit_code = 7,
	 .timeout_ms = 1000,
	 .expect = "x\n[exit code: 7]"},
	{.name = "signal-without-timeout",
	 .exit_code = -1,
	 .signal = SIGKILL,
	 .timeout_ms = 1000,
	 .expect = "(no output)\n[killed by signal: SIGKILL]"},
	{.name = "timeout-before-kill",
	 .exit_code = -1,
	 .signal = SIGTERM,
	 .timed_out = true,
	 .timeout_ms = 1000,
	 .expect = "(no output)\n[timed out after 1000ms]\n[killed by signal: SIGTERM]"},
	{.name = "denied",
	 .err = "denied",
	 .exit_code = 1,
	 .timeout_ms = 1000,
	 .sandboxed = true,
	 .denied = true,
	 .mode = DSB_MODE_READ_ONLY,
	 .expect = "[stderr]\ndenied\n[sandbox: file access denied under read-only mode]\n"
		   "[exit code: 1]"},
	{.name = "denied-hint",
	 .err = "denied",
	 .exit_code = 1,
	 .timeout_ms = 1000,
	 .sandboxed = true,
	 .denied = true,
	 .mode = DSB_MODE_READ_ONLY,
	 .confines = true,
	 .expect = "[stderr]\ndenied\n[sandbox: file access denied under read-only mode]\n" HINT
		   "\n[exit code: 1]"},
	{.name = "not-denied-confines",
	 .err = "denied",
	 .exit_code = 1,
	 .timeout_ms = 1000,
	 .sandboxed = true,
	 .mode = DSB_MODE_READ_ONLY,
	 .confines = true,
	 .expect = "[stderr]\ndenied\n[exit code: 1]"},
	/* §6.8: partial enforcement is not rendered; only the launcher's notice shows. */
	{.name = "partial-notice",
	 .err = NOTICE "\n",
	 .exit_code = 1,
	 .sandboxed = true,
	 .mode = DSB_MODE_READ_ONLY,
	 .enforcement = DSB_ENFORCEMENT_PARTIAL,
	 .confines = true,
	 .expect = "[stderr]\n" NOTICE "\n[exit code: 1]"},
	/* §11.13 (render.spec, parseExitStatus) and the §11.19 round trip: the texts it parses. */
	{.name = "parse-clean-verbatim", .out = "hi\n\n", .expect = "hi\n\n"},
	{.name = "parse-exit", .out = "oops", .exit_code = 3, .expect = "oops\n[exit code: 3]"},
	{.name = "parse-fake-exit-marker", .out = "[exit code: 5]", .expect = "[exit code: 5]"},
	{.name = "parse-signal",
	 .out = "gone",
	 .exit_code = -1,
	 .signal = SIGKILL,
	 .expect = "gone\n[killed by signal: SIGKILL]"},
	{.name = "parse-fake-signal-marker",
	 .out = "[killed by signal: SIGKILL]",
	 .expect = "[killed by signal: SIGKILL]"},
	{.name = "parse-timeout-exit",
	 .out = "slow",
	 .exit_code = 143,
	 .timed_out = true,
	 .timeout_ms = 100,
	 .expect = "slow\n[timed out after 100ms]\n[exit code: 143]"},
	{.name = "roundtrip-exit-0", .out = "out", .timeout_ms = 1000, .expect = "out"},
	{.name = "roundtrip-exit-7",
	 .out = "out",
	 .exit_code = 7,
	 .timeout_ms = 1000,
	 .expect = "out\n[exit code: 7]"},
	{.name = "roundtrip-sigterm",
	 .out = "out",
	 .exit_code = -1,
	 .signal = SIGTERM,
	 .timeout_ms = 1000,
	 .expect = "out\n[killed by signal: SIGTERM]"},
	{.name = "roundtrip-trapped-timeout",
	 .out = "out",
	 .timed_out = true,
	 .timeout_ms = 1000,
	 .expect = "out\n[timed out after 1000ms]"},
	/* Marker combinations, in the fixed order: denial, hint, timeout, signal or exit. */
	{.name = "all-markers-signal",
	 .err = "touch: cannot touch 'x': Read-only file system\n",
	 .exit_code = -1,
	 .signal = SIGKILL,
	 .timed_out = true,
	 .timeout_ms = 250,
	 .sandboxed = true,
	 .denied = true,
	 .mode = DSB_MODE_WORKSPACE_WRITE,
	 .confines = true},
	{.name = "all-markers-exit",
	 .out = "partial\n",
	 .err = "touch: cannot touch '/etc/x': Permission denied\n",
	 .exit_code = 1,
	 .timed_out = true,
	 .timeout_ms = 250,
	 .sandboxed = true,
	 .denied = true,
	 .mode = DSB_MODE_READ_ONLY,
	 .confines = true},
	{.name = "denied-timeout-no-hint",
	 .err = "Permission denied",
	 .exit_code = 2,
	 .timed_out = true,
	 .timeout_ms = 5000,
	 .sandboxed = true,
	 .denied = true,
	 .mode = DSB_MODE_READ_ONLY},
	{.name = "denied-workspace-write",
	 .out = "wrote inside\n",
	 .err = "bash: ../beside: Read-only file system\n",
	 .exit_code = 1,
	 .sandboxed = true,
	 .denied = true,
	 .mode = DSB_MODE_WORKSPACE_WRITE,
	 .confines = true},
	{.name = "denied-danger-full-access",
	 .err = "x: Permission denied\n",
	 .exit_code = 1,
	 .sandboxed = true,
	 .denied = true,
	 .mode = DSB_MODE_DANGER_FULL_ACCESS},
	{.name = "denied-clean-exit",
	 .out = "ok\n",
	 .sandboxed = true,
	 .denied = true,
	 .mode = DSB_MODE_READ_ONLY,
	 .expect = "ok\n[sandbox: file access denied under read-only mode]"},
	{.name = "denied-unsandboxed",
	 .err = "x: Permission denied\n",
	 .exit_code = 1,
	 .denied = true,
	 .confines = true,
	 .expect = "[stderr]\nx: Permission denied\n[exit code: 1]"},
	{.name = "exit-terminated-output",
	 .out = "done\n",
	 .err = "warn\n",
	 .exit_code = 126,
	 .expect = "done\n[stderr]\nwarn\n[exit code: 126]"},
	{.name = "exit-127", .err = "bash: line 1: nope: command not found\n", .exit_code = 127},
	{.name = "exit-255-no-output", .exit_code = 255, .expect = "(no output)\n[exit code: 255]"},
	{.name = "signal-sigint", .out = "^C", .exit_code = -1, .signal = SIGINT},
	{.name = "signal-sigabrt",
	 .exit_code = -1,
	 .signal = SIGABRT,
	 .expect = "(no output)\n[killed by signal: SIGABRT]"},
	{.name = "signal-sigio",
	 .exit_code = -1,
	 .signal = SIGIO,
	 .expect = "(no output)\n[killed by signal: SIGIO]"},
	{.name = "signal-sigsys",
	 .exit_code = -1,
	 .signal = SIGSYS,
	 .expect = "(no output)\n[killed by signal: SIGSYS]"},
	{.name = "signal-realtime",
	 .exit_code = -1,
	 .signal = 34,
	 .expect = "(no output)\n[killed by signal: 34]"},
	/* Truncation notes: stdout's ends stdout, stderr's ends the stderr section. */
	{.name = "stderr-truncated-spill",
	 .out = "out\n",
	 .err = "...err tail\n",
	 .err_truncated = true,
	 .err_spill = SPILL_2,
	 .exit_code = 1},
	{.name = "stderr-truncated-unavailable",
	 .err = "err tail",
	 .err_truncated = true,
	 .expect = "[stderr]\nerr tail\n[output truncated; full output: (unavailable)]"},
	{.name = "both-truncated",
	 .out = "out tail",
	 .out_truncated = true,
	 .out_spill = SPILL_1,
	 .err = "err tail\n",
	 .err_truncated = true,
	 .exit_code = -1,
	 .signal = SIGTERM,
	 .timed_out = true,
	 .timeout_ms = 30000},
	{.name = "truncated-empty-tail",
	 .out = "",
	 .out_truncated = true,
	 .expect = "\n[output truncated; full output: (unavailable)]"},
	{.name = "truncated-empty-stderr-tail",
	 .err = "",
	 .err_truncated = true,
	 .expect = "[stderr]\n\n[output truncated; full output: (unavailable)]"},
	/* Raw bytes: each maximal invalid UTF-8 subpart becomes U+FFFD, as DSH's decoder does. */
	{.name = "invalid-utf8",
	 .out = "a\xFF"
		"b\xE2\x82\n",
	 .err = "\xC3(\xF0\x9F\x98\x80\n",
	 .exit_code = 1,
	 .expect = "a" FFFD "b" FFFD "\n[stderr]\n" FFFD "(\xF0\x9F\x98\x80\n[exit code: 1]"},
	{.name = "invalid-utf8-split-tail",
	 .out = "\x80\x80xyz \xE2\x80",
	 .out_truncated = true,
	 .out_spill = "/tmp/spill-\xFF.log",
	 .expect = FFFD FFFD "xyz " FFFD "\n[output truncated; full output: /tmp/spill-" FFFD
			     ".log]"},
	{.name = "utf8-passthrough",
	 .out = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\n",
	 .expect = "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\n"},
	{.name = "crlf-kept",
	 .out = "a\r\nb\r",
	 .err = "c\r\n",
	 .exit_code = 1,
	 .expect = "a\r\nb\r\n[stderr]\nc\r\n[exit code: 1]"},
};
/* clang-format on */

static dsb_run_result build_result(const render_case *c)
{
	dsb_run_result r = {0};

	r.out.text = S(c->out);
	r.out.len = c->out_len ? c->out_len : c->out ? strlen(c->out) : 0;
	r.out.truncated = c->out_truncated;
	r.out.spill_path = S(c->out_spill);
	r.err.text = S(c->err);
	r.err.len = c->err_len ? c->err_len : c->err ? strlen(c->err) : 0;
	r.err.truncated = c->err_truncated;
	r.err.spill_path = S(c->err_spill);
	r.exit_code = c->exit_code;
	r.signal = c->signal;
	r.timed_out = c->timed_out;
	r.timeout_ms = c->timeout_ms;
	r.sandboxed = c->sandboxed;
	r.denied = c->denied;
	r.mode = c->mode;
	r.has_enforcement = c->sandboxed && c->mode != DSB_MODE_DANGER_FULL_ACCESS;
	r.enforcement = c->enforcement;
	return r;
}

static void ensure_golden_dir(const char *name)
{
	if (!dsb_test_update_golden())
		return;
	char *rel = NULL;
	assert_true(asprintf(&rel, "render/%s", name) > 0);
	char *dir = dsb_test_data_path(rel);
	assert_int_equal(mkdir_p(dir, 0755, false), 0);
	free(dir);
	free(rel);
}

static void test_render_cases(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(render_cases); i++) {
		const render_case *c = &render_cases[i];
		dsb_run_result r = build_result(c);
		char *text = NULL;
		dsb_error err = {0};

		print_message("render: %s\n", c->name);
		assert_int_equal(dsb_render_result(&r, c->confines, &text, NULL, &err), 0);
		assert_non_null(text);
		if (c->expect)
			assert_string_equal(text, c->expect);

		char *rel = NULL;
		assert_true(asprintf(&rel, "render/%s/expected.txt", c->name) > 0);
		ensure_golden_dir(c->name);
		dsb_test_assert_golden(rel, text);
		free(rel);
		free(text);
	}
}

/* Every golden directory belongs to a case: no stale golden outlives its case. */
static void test_render_goldens_have_cases(void **state)
{
	char *dir = dsb_test_data_path("render");
	DIR *d = opendir(dir);
	assert_non_null(d);

	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		bool found = false;
		for (size_t i = 0; i < ELEMENTSOF(render_cases) && !found; i++)
			found = strcmp(render_cases[i].name, e->d_name) == 0;
		if (!found)
			fail_msg("tests/data/render/%s has no case", e->d_name);
		n++;
	}
	closedir(d);
	free(dir);
	assert_int_equal(n, ELEMENTSOF(render_cases));
}

/* A JS string keeps NUL: the text carries it, with its length. */
static void test_render_keeps_nul(void **state)
{
	static const char expect[] = "a\0b\n[stderr]\n\0" FFFD "\n[exit code: 1]";
	dsb_run_result r = {0};
	char *text = NULL;
	size_t len = 0;

	r.out.text = S("a\0b");
	r.out.len = 3;
	r.err.text = S("\0\xFF");
	r.err.len = 2;
	r.exit_code = 1;
	assert_int_equal(render_result(&r, false, &text, &len), 0);
	assert_int_equal(len, sizeof(expect) - 1);
	assert_memory_equal(text, expect, len);
	assert_int_equal(text[len], '\0');
	free(text);

	/* A lone NUL is output, not silence. */
	r = (dsb_run_result){0};
	r.out.text = S("");
	r.out.len = 1;
	assert_int_equal(render_result(&r, false, &text, &len), 0);
	assert_int_equal(len, 1);
	assert_int_equal(text[0], '\0');
	free(text);
}

static void test_render_markers(void **state)
{
	static const struct {
		dsb_mode mode;
		const char *expect;
	} modes[] = {
		{DSB_MODE_READ_ONLY, "[sandbox: file access denied under read-only mode]"},
		{DSB_MODE_WORKSPACE_WRITE,
		 "[sandbox: file access denied under workspace-write mode]"},
		{DSB_MODE_DANGER_FULL_ACCESS,
		 "[sandbox: file access denied under danger-full-access mode]"},
	};

	for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
		char *m = render_denial_marker(modes[i].mode);
		assert_string_equal(m, modes[i].expect);
		free(m);
	}
	assert_null(render_denial_marker(_DSB_MODE_INVALID));
	assert_null(render_denial_marker(_DSB_MODE_MAX));

	char *h = render_escalation_hint("command");
	assert_string_equal(h, HINT);
	free(h);
	h = render_escalation_hint("operation");
	assert_string_equal(h,
			    "[sandbox: escalation available \xE2\x80\x94 retry this exact "
			    "operation once with sandbox_permissions (the narrowest wider mode "
			    "that suffices) + justification; the approval prompt asks the user]");
	free(h);
	assert_null(render_escalation_hint(NULL));
}

static void test_render_invalid(void **state)
{
	dsb_run_result r = {0};
	dsb_error err = {0};
	char *text = S("untouched");

	assert_int_equal(dsb_render_result(NULL, false, &text, NULL, &err),
			 -(int)DSB_E_INVALID_ARGS);
	assert_int_equal(err.code, DSB_E_INVALID_ARGS);
	assert_string_equal(text, "untouched");
	assert_int_equal(dsb_render_result(&r, false, NULL, NULL, NULL), -(int)DSB_E_INVALID_ARGS);

	r.out.len = 3; /* no text */
	assert_int_equal(dsb_render_result(&r, false, &text, NULL, NULL), -(int)DSB_E_INVALID_ARGS);
	r = (dsb_run_result){0};
	r.err.len = 1;
	assert_int_equal(dsb_render_result(&r, false, &text, NULL, NULL), -(int)DSB_E_INVALID_ARGS);

	/* A denial needs a mode to name. */
	r = (dsb_run_result){0};
	r.sandboxed = r.denied = true;
	r.mode = _DSB_MODE_INVALID;
	r.exit_code = 1;
	err = (dsb_error){0};
	assert_int_equal(dsb_render_result(&r, true, &text, NULL, &err), -(int)DSB_E_INVALID_ARGS);
	assert_int_equal(err.code, DSB_E_INVALID_ARGS);
	assert_string_equal(text, "untouched");

	/* ... but an undenied result does not. */
	r.denied = false;
	assert_int_equal(dsb_render_result(&r, true, &text, NULL, NULL), 0);
	assert_string_equal(text, "(no output)\n[exit code: 1]");
	free(text);
}

/* --- classifyRunnerFailure (§5.8) ---------------------------------------------------------- */

static const int exit_125[] = {125};
static const int exit_125_127[] = {125, 127};
static const int exit_none[] = {0};

static char *landlock_fatal[] = {S("landlock-run: "), NULL};
static char *landlock_info[] = {S(NOTICE), NULL};
static char *blank_fatal[] = {S(""), S(" "), S("\t"), NULL};
static char *blank_and_landlock_fatal[] = {S(""), S(" "), S("landlock-run: "), NULL};
/* Unicode spaces JS's trim() strips: NBSP, ideographic space, BOM, line separator, thin space */
static char *unicode_blank_fatal[] = {S("\xC2\xA0"),	 S("\xE3\x80\x80 "),	S("\xEF\xBB\xBF"),
				      S("\xE2\x80\xA8"), S("\t\xE2\x80\x89\n"), NULL};
static char *not_blank_fatal[] = {S("\xE2\x80\x8B"), NULL}; /* zero-width space: not trimmed */
static char *bwrap_fatal[] = {S("bwrap: "), NULL};
static char *fake_fatal[] = {S("fake-runner: "), NULL};
static char *configured_fatal[] = {S("configured-runner: fatal"), NULL};
static char *child_fatal[] = {S("fatal: "), NULL};

static const dsb_runner_rule landlock_rules[] = {
	{exit_125, 1, landlock_fatal, landlock_info},
};
static const dsb_runner_rule blank_rules[] = {
	{exit_125, 1, blank_fatal, NULL},
};
static const dsb_runner_rule mixed_rules[] = {
	{exit_125, 1, blank_and_landlock_fatal, landlock_info},
};
static const dsb_runner_rule unicode_blank_rules[] = {
	{NULL, 0, unicode_blank_fatal, NULL},
};
static const dsb_runner_rule not_blank_rules[] = {
	{NULL, 0, not_blank_fatal, NULL},
};
static const dsb_runner_rule bwrap_rules[] = {
	{NULL, 0, bwrap_fatal, NULL},
};
static const dsb_runner_rule fake_rules[] = {
	{NULL, 0, fake_fatal, NULL},
};
static const dsb_runner_rule configured_rules[] = {
	{NULL, 0, configured_fatal, NULL},
};
static const dsb_runner_rule no_exit_allowed_rules[] = {
	{exit_none, 0, bwrap_fatal, NULL},
};
/* Two rules: the first gated to 125/127, the second for any exit; rules are tried in order. */
static const dsb_runner_rule two_rules[] = {
	{exit_125_127, 2, landlock_fatal, landlock_info},
	{NULL, 0, child_fatal, NULL},
};

typedef struct runner_case {
	const char *name;
	int exit_code;
	const char *stderr_text;
	size_t stderr_len; /* 0: strlen() */
	const dsb_runner_rule *rules;
	size_t n_rules;
	const char *expect; /* the detail, or NULL: not a runner failure */
} runner_case;

#define RULES(r) r, ELEMENTSOF(r)

/* clang-format off: a table, one case a block */
static const runner_case runner_cases[] = {
	/* §11.16 #35: blank signatures are no evidence, whatever the exit. */
	{"blank signatures, empty stderr", 125, "", 0, RULES(blank_rules), NULL},
	{"blank signatures, notice", 125, NOTICE, 0, RULES(blank_rules), NULL},
	{"unicode-blank signatures", 1, "anything at all\n\xC2\xA0\n", 0,
	 RULES(unicode_blank_rules), NULL},
	{"zero-width space is a signature", 1,
	 "a\xE2\x80\x8B"
	 "b\n",
	 0, RULES(not_blank_rules),
	 "a\xE2\x80\x8B"
	 "b"},
	/* §11.16 #36: valid signatures stay active beside ignored blank ones. */
	{"blank beside valid", 125,
	 NOTICE "\nchild diagnostic\nlandlock-run: ruleset creation failed", 0, RULES(mixed_rules),
	 "landlock-run: ruleset creation failed"},
	/* §11.16 #37: Landlock needs exit 125 plus a non-notice fatal line. */
	{"notice alone, exit 1", 1, NOTICE, 0, RULES(landlock_rules), NULL},
	{"notice alone, exit 2", 2, NOTICE, 0, RULES(landlock_rules), NULL},
	{"notice alone, exit 125", 125, NOTICE, 0, RULES(landlock_rules), NULL},
	{"notice upper-cased", 125, "LANDLOCK-RUN: PARTIAL ENFORCEMENT (OLDER LANDLOCK ABI)", 0,
	 RULES(landlock_rules), NULL},
	{"notice with extra detail", 125, NOTICE ": extra detail", 0, RULES(landlock_rules),
	 NOTICE ": extra detail"},
	{"fatal after notice", 125, NOTICE "\nlandlock-run: exec failed: No such file or directory",
	 0, RULES(landlock_rules), "landlock-run: exec failed: No such file or directory"},
	{"notice with a leading space is not the notice", 125, " " NOTICE, 0, RULES(landlock_rules),
	 " " NOTICE},
	/* §11.16 #38-44: known and future Landlock diagnostics fail closed. */
	{"usage error", 125, "landlock-run: usage error: missing `-- <argv>...` command", 0,
	 RULES(landlock_rules), "landlock-run: usage error: missing `-- <argv>...` command"},
	{"not enforced", 125,
	 "landlock-run: landlock is not enforced by this kernel (ABI unsupported or disabled)", 0,
	 RULES(landlock_rules),
	 "landlock-run: landlock is not enforced by this kernel (ABI unsupported or disabled)"},
	{"cannot open rule path", 125,
	 "landlock-run: cannot open rule path: /gone: No such file or directory", 0,
	 RULES(landlock_rules),
	 "landlock-run: cannot open rule path: /gone: No such file or directory"},
	{"ruleset error", 125, "landlock-run: landlock ruleset error: Invalid argument", 0,
	 RULES(landlock_rules), "landlock-run: landlock ruleset error: Invalid argument"},
	{"exec failed", 125, "landlock-run: exec failed: Permission denied", 0,
	 RULES(landlock_rules), "landlock-run: exec failed: Permission denied"},
	{"out of memory", 125, "landlock-run: out of memory", 0, RULES(landlock_rules),
	 "landlock-run: out of memory"},
	{"future diagnostic", 125, "landlock-run: future fatal diagnostic", 0,
	 RULES(landlock_rules), "landlock-run: future fatal diagnostic"},
	/* §11.17 #7-14: notice-only and gated exits stay ordinary. */
	{"notice line, exit 0", 0, NOTICE "\n", 0, RULES(landlock_rules), NULL},
	{"notice line, exit 126", 126, NOTICE "\n", 0, RULES(landlock_rules), NULL},
	{"notice line, exit 127", 127, NOTICE "\n", 0, RULES(landlock_rules), NULL},
	{"fatal at exit 1", 1, NOTICE "\nlandlock-run: landlock ruleset error: Invalid argument\n",
	 0, RULES(landlock_rules), NULL},
	{"fatal at exit 2", 2, NOTICE "\nlandlock-run: landlock ruleset error: Invalid argument\n",
	 0, RULES(landlock_rules), NULL},
	/* §11.17 #15, #16. */
	{"fatal after notice line", 125,
	 NOTICE "\nlandlock-run: landlock ruleset error: Invalid argument\n", 0,
	 RULES(landlock_rules), "landlock-run: landlock ruleset error: Invalid argument"},
	{"notice plus child Permission denied", 1, NOTICE "\nchild: Permission denied\n", 0,
	 RULES(landlock_rules), NULL},
	/* A clean exit or a signal death is never runner evidence. */
	{"exit 0", 0, "bwrap: Can't mount proc", 0, RULES(bwrap_rules), NULL},
	{"signal death", -1, "bwrap: Can't mount proc", 0, RULES(bwrap_rules), NULL},
	/* §5.8 bwrap: any non-zero exit; the original line comes back with its case. */
	{"bwrap any exit", 1, "bwrap: setting up uid map: Permission denied\n", 0,
	 RULES(bwrap_rules), "bwrap: setting up uid map: Permission denied"},
	{"case-insensitive, original case kept", 1,
	 "child\nBWRAP: Can't Mount Proc On /newroot/proc\n", 0, RULES(bwrap_rules),
	 "BWRAP: Can't Mount Proc On /newroot/proc"},
	{"first matching line wins", 1, "bwrap: first\nbwrap: second\n", 0, RULES(bwrap_rules),
	 "bwrap: first"},
	{"signature mid-line", 1, "[pid 7] bwrap: execvp bash: No such file\n", 0,
	 RULES(bwrap_rules), "[pid 7] bwrap: execvp bash: No such file"},
	{"signature across lines is no match", 1, "bwrap:\n x\n", 0, RULES(bwrap_rules), NULL},
	/* split(/\r?\n/): "\r\n" is one separator; a lone "\r" stays in the line. */
	{"crlf lines", 1, "child\r\nbwrap: Can't bind mount /x\r\ntrailing\r\n", 0,
	 RULES(bwrap_rules), "bwrap: Can't bind mount /x"},
	{"lone cr stays", 1, "a\rbwrap: b\r\r\nc", 0, RULES(bwrap_rules), "a\rbwrap: b\r"},
	{"crlf notice is informational", 125, NOTICE "\r\n", 0, RULES(landlock_rules), NULL},
	{"notice with cr before cr-lf is not the notice", 125, NOTICE "\r\r\n", 0,
	 RULES(landlock_rules), NOTICE "\r"},
	/* §11.16 #54-55 (fake runner): a fatal line holding "Permission denied" still matches. */
	{"fake runner", 125, "fake-runner: ruleset rejected\n", 0, RULES(fake_rules),
	 "fake-runner: ruleset rejected"},
	{"fake runner with Permission denied", 125,
	 "fake-runner: cannot open rule path: /x: Permission denied\n", 0, RULES(fake_rules),
	 "fake-runner: cannot open rule path: /x: Permission denied"},
	{"configured runner", 3, "configured-runner: FATAL: no policy\n", 0,
	 RULES(configured_rules), "configured-runner: FATAL: no policy"},
	{"configured runner, other prefix", 3, "configured-runner: warning\n", 0,
	 RULES(configured_rules), NULL},
	/* An allowedExitCodes present but empty never matches. */
	{"empty exit gate", 1, "bwrap: x\n", 0, RULES(no_exit_allowed_rules), NULL},
	/* Rules in order: a gated rule skipped by its exit code, the next one tried. */
	{"second rule at exit 1", 1, "landlock-run: x\nfatal: y\n", 0, RULES(two_rules),
	 "fatal: y"},
	{"first rule at exit 127", 127, "fatal: y\nlandlock-run: x\n", 0, RULES(two_rules),
	 "landlock-run: x"},
	{"second rule after first finds nothing", 125, NOTICE "\nfatal: y\n", 0, RULES(two_rules),
	 "fatal: y"},
	/* Raw bytes: the match works on them; the detail is decoded as DSH's would be. */
	{"invalid utf-8 detail", 1, "\xFF\nbwrap: \xC3\xA9\xE2\x82 x\n", 0, RULES(bwrap_rules),
	 "bwrap: \xC3\xA9" FFFD " x"},
	{"nul before the fatal line", 1, "a\0b\nbwrap: z", 12, RULES(bwrap_rules), "bwrap: z"},
	{"nul splits no line", 1, "bwr\0ap: z", 9, RULES(bwrap_rules), NULL},
	{"no stderr", 1, "", 0, RULES(bwrap_rules), NULL},
	{"no rules", 1, "bwrap: x", 0, NULL, 0, NULL},
};
/* clang-format on */

static void test_runner_failure_cases(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(runner_cases); i++) {
		const runner_case *c = &runner_cases[i];
		size_t len = c->stderr_len ? c->stderr_len : strlen(c->stderr_text);

		print_message("runner failure: %s\n", c->name);
		char *detail = classify_runner_failure(c->exit_code, c->stderr_text, len, c->rules,
						       c->n_rules);
		if (c->expect)
			assert_string_equal(detail, c->expect);
		else
			assert_null(detail);
		free(detail);
	}
	assert_null(classify_runner_failure(1, NULL, 0, bwrap_rules, 1));
}

/* --- classifyDenial / matchesSignature (§6.5) ---------------------------------------------- */

static char *unix_sigs[] = {S("read-only file system"), S("permission denied"), NULL};
static char *bwrap_sigs[] = {S("read-only file system"), NULL};
static char *landlock_sigs[] = {S("permission denied"), NULL};
static char *seatbelt_sigs[] = {S("operation not permitted"), NULL};
static char *upper_sigs[] = {S("PERMISSION DENIED"), NULL};
static char *empty_sig[] = {S(""), NULL};
static char *no_sigs[] = {NULL};

typedef struct denial_case {
	const char *name;
	int exit_code;
	const char *stderr_text;
	size_t stderr_len; /* 0: strlen() */
	char *const *signatures;
	bool expect;
} denial_case;

/* clang-format off: a table, one case a line */
static const denial_case denial_cases[] = {
	/* §11.16 #24: never a clean exit or a signal kill (#58). */
	{"clean exit", 0, "Permission denied", 0, unix_sigs, false},
	{"signal death", -1, "Permission denied", 0, unix_sigs, false},
	{"signal death, EROFS", -1, "touch: cannot touch /x: Read-only file system", 0, unix_sigs,
	 false},
	/* §11.16 #25: the wrap's own dialect, conservatively. */
	{"EROFS", 1, "touch: cannot touch /x: Read-only file system", 0, unix_sigs, true},
	{"EACCES", 1, "sh: /x: Permission denied", 0, unix_sigs, true},
	{"bare EPERM", 1, "mount: Operation not permitted", 0, unix_sigs, false},
	{"ENOENT", 1, "No such file or directory", 0, unix_sigs, false},
	/* §11.16 #26: exactly the active backend's dialect. */
	{"EPERM under seatbelt", 1, "bash: /etc/x: Operation not permitted", 0, seatbelt_sigs,
	 true},
	{"EACCES under bwrap", 1, "sh: /x: Permission denied", 0, bwrap_sigs, false},
	{"EROFS under bwrap", 2, "cp: cannot create regular file 'x': Read-only file system\n", 0,
	 bwrap_sigs, true},
	{"EROFS under landlock", 1, "x: Read-only file system", 0, landlock_sigs, false},
	/* §11.17 #16: a notice plus a child's EACCES is a denial under Landlock. */
	{"notice plus child EACCES", 1, NOTICE "\nchild: Permission denied\n", 0, landlock_sigs,
	 true},
	{"notice alone, exit 125", 125, NOTICE "\n", 0, landlock_sigs, false},
	{"notice alone, exit 126", 126, NOTICE "\n", 0, landlock_sigs, false},
	{"notice alone, exit 127", 127, NOTICE "\n", 0, landlock_sigs, false},
	/* Case-insensitive both ways; the whole stderr, any line. */
	{"upper-case stderr", 1, "PERMISSION DENIED", 0, landlock_sigs, true},
	{"upper-case signature", 1, "x: permission denied", 0, upper_sigs, true},
	{"later line", 1, "first\r\nsecond\r\nthird: Permission Denied\r\n", 0, unix_sigs, true},
	{"split across lines", 1, "permission\ndenied", 0, unix_sigs, false},
	{"nul before the signature", 1, "x\0y: Permission denied", 22, unix_sigs, true},
	{"invalid utf-8 around it", 1, "\xFF\xFEpermission denied\xE2", 0, unix_sigs, true},
	{"non-zero high exit", 255, "Permission denied", 0, unix_sigs, true},
	{"no signatures", 1, "Permission denied", 0, no_sigs, false},
	{"NULL signatures", 1, "Permission denied", 0, NULL, false},
	/* JS's "".includes("") is true: an empty signature matches any failed run. */
	{"empty signature", 1, "", 0, empty_sig, true},
	{"empty signature, clean exit", 0, "", 0, empty_sig, false},
	{"empty stderr", 1, "", 0, unix_sigs, false},
};
/* clang-format on */

static void test_denial_cases(void **state)
{
	for (size_t i = 0; i < ELEMENTSOF(denial_cases); i++) {
		const denial_case *c = &denial_cases[i];
		size_t len = c->stderr_len ? c->stderr_len : strlen(c->stderr_text);

		print_message("denial: %s\n", c->name);
		assert_int_equal(classify_denial(c->exit_code, c->stderr_text, len, c->signatures),
				 c->expect);
	}
	assert_false(classify_denial(1, NULL, 0, unix_sigs));
}

/*
 * §11.16 #55 / §11.17 #19: the same stderr can be both runner evidence and a denial; both
 * classifiers say so, and the executor lets the runner failure win.
 */
static void test_runner_failure_and_denial_overlap(void **state)
{
	static const char text[] = NOTICE "\nlandlock-run: exec failed: Permission denied\n";
	char *detail = classify_runner_failure(125, text, strlen(text), RULES(landlock_rules));

	assert_string_equal(detail, "landlock-run: exec failed: Permission denied");
	assert_true(classify_denial(125, text, strlen(text), landlock_sigs));
	free(detail);
}

/* --- protected paths named by a denial (beyond DSH) ---------------------------------------- */

#define GIT_REASON    "git runs hooks and reads its config outside the sandbox"
#define LISTED_REASON "sandbox-policy.protectedPaths lists it"
#define HOOKS_NOTE    "[sandbox: /ws/.git/hooks is protected: " GIT_REASON "]"
#define ENVRC_NOTE    "[sandbox: /ws/.envrc is protected: " LISTED_REASON "]"

static dsb_protected ws_protected[] = {
	{.path = S("/ws/.git/hooks"), .kind = DSB_PROTECT_GIT, .directory = true, .exists = true},
	{.path = S("/ws/.envrc"), .kind = DSB_PROTECT_LISTED, .exists = true},
	{.path = S("/home/u/.ssh"),
	 .kind = DSB_PROTECT_DENY_READ,
	 .directory = true,
	 .exists = true},
};

static const dsb_exec_policy ws_policy = {
	.mode = DSB_MODE_WORKSPACE_WRITE,
	.workspace_root = S("/ws"),
	.protected = ws_protected,
	.n_protected = ELEMENTSOF(ws_protected),
};

/* classify_protected() of @err with @workdir: the note, or NULL. */
static char *note_for(const dsb_exec_policy *p, const char *err, const char *workdir)
{
	char *note = S("untouched");
	assert_int_equal(classify_protected(err, err ? strlen(err) : 0, p, workdir, &note), 0);
	return note;
}

static void test_classify_protected_cases(void **state)
{
	static const struct {
		const char *name;
		const char *err;
		const char *workdir;
		const char *note; /* NULL: none */
	} cases[] = {
		{"relative to the workdir", "bash: line 1: .git/hooks/x: Read-only file system\n",
		 "/ws", HOOKS_NOTE},
		{"the directory itself", "mkdir: cannot create directory '.git/hooks': File exists",
		 "/ws", HOOKS_NOTE},
		{"from a subdirectory, absolute",
		 "cp: cannot create regular file '/ws/.git/hooks/pre-commit': Read-only file "
		 "system",
		 "/ws/src", HOOKS_NOTE},
		{"absolute, any workdir",
		 "touch: cannot touch '/ws/.git/hooks/pre-commit': Read-only file system\n",
		 "/elsewhere", HOOKS_NOTE},
		{"absolute at the very end", "Read-only file system: /ws/.git/hooks", "/elsewhere",
		 HOOKS_NOTE},
		{"workdir /", "ws/.git/hooks/x: Read-only file system", "/", HOOKS_NOTE},
		{"a longer name after", "bash: .git/hooksX: Read-only file system", "/ws", NULL},
		{"a longer name before", "bash: x.git/hooks/y: Read-only file system", "/ws", NULL},
		{"a dash before", "bash: my-.git/hooks/y: Read-only file system", "/ws", NULL},
		{"another directory's", "bash: sub/.git/hooks/y: Read-only file system", "/ws",
		 NULL},
		{"absolute, longer", "touch: '/ws/.git/hooks.d/x': Read-only file system", "/ws",
		 NULL},
		{"absolute, deeper root", "touch: '/a/ws/.git/hooks/x': Read-only file system",
		 "/ws", NULL},
		{"relative, other workdir", "bash: .git/hooks/x: Read-only file system", "/other",
		 NULL},
		{"nothing named", "bash: /etc/passwd: Permission denied", "/ws", NULL},
		{"a file", "bash: .envrc: Read-only file system", "/ws", ENVRC_NOTE},
		{"a file, longer", "bash: .envrc.bak: Read-only file system", "/ws", NULL},
		/* One line per path named, in the policy's order. */
		{"two", "cp: '.envrc': Read-only\nln: '/ws/.git/hooks/x': Read-only\n", "/ws",
		 HOOKS_NOTE "\n" ENVRC_NOTE},
		{"hidden", "cat: /home/u/.ssh/id_ed25519: Permission denied", "/ws",
		 "[sandbox: /home/u/.ssh is protected: sandbox-policy.denyRead hides it]"},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *note = note_for(&ws_policy, cases[i].err, cases[i].workdir);
		if (!cases[i].note && note)
			fail_msg("%s: got [%s], expected none", cases[i].name, note);
		if (cases[i].note && (!note || strcmp(note, cases[i].note) != 0))
			fail_msg("%s: got [%s], expected [%s]", cases[i].name,
				 note ? note : "(none)", cases[i].note);
		free(note);
	}

	/* Nothing to name: no stderr, no policy, no protected paths. */
	assert_null(note_for(&ws_policy, NULL, "/ws"));
	assert_null(note_for(NULL, ".git/hooks/x: Read-only file system", "/ws"));
	dsb_exec_policy none = {.mode = DSB_MODE_WORKSPACE_WRITE, .workspace_root = S("/ws")};
	assert_null(note_for(&none, ".git/hooks/x: Read-only file system", "/ws"));
	assert_null(note_for(&ws_policy, "", "/ws"));

	/* Only the given length is looked at. */
	static const char text[] = "bash: x: error\n.envrc: Read-only file system";
	char *note = S("untouched");
	assert_int_equal(classify_protected(text, 15, &ws_policy, "/ws", &note), 0);
	assert_null(note);
	assert_int_equal(classify_protected(text, sizeof(text) - 1, &ws_policy, "/ws", &note), 0);
	assert_string_equal(note, ENVRC_NOTE);
	free(note);
}

/* With no workdir, the relative spelling is read against the process's own directory. */
static void test_classify_protected_process_cwd(void **state)
{
	char *cwd = getcwd(NULL, 0);
	char *real = realpath(cwd, NULL);
	char *path = NULL, *expected = NULL;
	assert_non_null(real);
	assert_true(asprintf(&path, "%s%szz-protected", real, strcmp(real, "/") ? "/" : "") > 0);
	assert_true(asprintf(&expected, "[sandbox: %s is protected: " LISTED_REASON "]", path) > 0);
	dsb_protected list[] = {{.path = path, .kind = DSB_PROTECT_LISTED, .exists = true}};
	dsb_exec_policy p = {.mode = DSB_MODE_WORKSPACE_WRITE,
			     .workspace_root = real,
			     .protected = list,
			     .n_protected = 1};

	char *note = note_for(&p, "bash: zz-protected: Read-only file system", NULL);
	assert_non_null(note);
	assert_string_equal(note, expected);
	free(note);
	assert_null(note_for(&p, "bash: zz-protected: Read-only file system", "/nonexistent-dsb"));

	free(expected);
	free(path);
	free(real);
	free(cwd);
}

/* The note comes after all of DSH's markers, and only when the run was denied. */
static void test_render_protected_note(void **state)
{
	static const char err[] = "bash: line 1: .git/hooks/x: Read-only file system\n";
	dsb_run_result r = {0};
	r.err.text = S(err);
	r.err.len = sizeof(err) - 1;
	r.exit_code = 1;
	r.sandboxed = true;
	r.denied = true;
	r.mode = DSB_MODE_WORKSPACE_WRITE;
	r.has_enforcement = true;
	r.protected_note = S(HOOKS_NOTE "\n" ENVRC_NOTE);

	char *text = NULL;
	size_t len = 0;
	assert_int_equal(dsb_render_result(&r, true, &text, &len, NULL), 0);
	assert_string_equal(text,
			    "[stderr]\n"
			    "bash: line 1: .git/hooks/x: Read-only file system\n"
			    "[sandbox: file access denied under workspace-write mode]\n" HINT "\n"
			    "[exit code: 1]\n" HOOKS_NOTE "\n" ENVRC_NOTE);
	assert_int_equal(len, strlen(text));
	free(text);

	/* After the timeout and the signal too; without the hint when nothing confines. */
	r.timed_out = true;
	r.timeout_ms = 50;
	r.exit_code = -1;
	r.signal = SIGKILL;
	r.protected_note = S(HOOKS_NOTE);
	assert_int_equal(dsb_render_result(&r, false, &text, NULL, NULL), 0);
	assert_string_equal(text, "[stderr]\n"
				  "bash: line 1: .git/hooks/x: Read-only file system\n"
				  "[sandbox: file access denied under workspace-write mode]\n"
				  "[timed out after 50ms]\n"
				  "[killed by signal: SIGKILL]\n" HOOKS_NOTE);
	free(text);

	/* Not denied, or not sandboxed: no note, whatever the result carries. */
	r.timed_out = false;
	r.exit_code = 1;
	r.signal = 0;
	r.denied = false;
	assert_int_equal(dsb_render_result(&r, true, &text, NULL, NULL), 0);
	assert_string_equal(text, "[stderr]\nbash: line 1: .git/hooks/x: Read-only file system\n"
				  "[exit code: 1]");
	free(text);
	r.denied = true;
	r.sandboxed = false;
	assert_int_equal(dsb_render_result(&r, true, &text, NULL, NULL), 0);
	assert_string_equal(text, "[stderr]\nbash: line 1: .git/hooks/x: Read-only file system\n"
				  "[exit code: 1]");
	free(text);

	/* Denied with no note: DSH's text alone. */
	r.sandboxed = true;
	r.protected_note = NULL;
	assert_int_equal(dsb_render_result(&r, false, &text, NULL, NULL), 0);
	assert_string_equal(text, "[stderr]\nbash: line 1: .git/hooks/x: Read-only file system\n"
				  "[sandbox: file access denied under workspace-write mode]\n"
				  "[exit code: 1]");
	free(text);
}

/* --- refusals from the supervisor's evidence (beyond DSH) ------------------------------------ */

/* refusals_parse() then refusal_note() of @entries (NULL-terminated) under @p. */
static char *evidence_note(char *const *entries, unsigned total, const dsb_exec_policy *p,
			   size_t *ret_n)
{
	dsb_refusal *v = NULL;
	size_t n = 0;
	char *note = S("untouched");
	assert_int_equal(refusals_parse(entries, &v, &n), 0);
	assert_int_equal(refusal_note(v, n, total, p, &note), 0);
	for (size_t i = 0; i < n; i++)
		refusal_done(&v[i]);
	free(v);
	if (ret_n)
		*ret_n = n;
	return note;
}

static void test_refusal_note_cases(void **state)
{
	static const struct {
		const char *name;
		const char *entry;
		const dsb_exec_policy *policy;
		const char *line; /* NULL: the entry is malformed, left out (but counted) */
	} cases[] = {
		{"a write outside", "write\tEACCES\t/etc/nope\t/etc/nope\toutside", &ws_policy,
		 "[sandbox: write to /etc/nope denied (outside the writable roots)]"},
		{"a directory", "mkdir\tEROFS\t/usr/x\t../usr/x\toutside", &ws_policy,
		 "[sandbox: create directory /usr/x denied (outside the writable roots)]"},
		{"a removal", "remove\tEACCES\t/etc/a\ta\toutside", &ws_policy,
		 "[sandbox: remove /etc/a denied (outside the writable roots)]"},
		{"metadata", "chmod\tEPERM\t/etc/a\t/etc/a\toutside", &ws_policy,
		 "[sandbox: chmod /etc/a denied (outside the writable roots)]"},
		{"an op this build does not know", "frob\tEPERM\t/etc/a\t/etc/a\toutside",
		 &ws_policy, "[sandbox: frob /etc/a denied (outside the writable roots)]"},
		{"protected, beneath",
		 "create\tEROFS\t/ws/.git/hooks/pre-commit\t.git/hooks/"
		 "pre-commit\tprotected",
		 &ws_policy, "[sandbox: /ws/.git/hooks/pre-commit is protected: " GIT_REASON "]"},
		{"protected, itself", "write\tEROFS\t/ws/.envrc\t.envrc\tprotected", &ws_policy,
		 ENVRC_NOTE},
		{"hidden", "read\tEACCES\t/home/u/.ssh/id\t~/.ssh/id\thidden", &ws_policy,
		 "[sandbox: /home/u/.ssh/id is protected: sandbox-policy.denyRead hides it]"},
		{"protected, but no such path in the policy",
		 "write\tEROFS\t/srv/x\t/srv/x\tprotected", &ws_policy,
		 "[sandbox: write to /srv/x denied (outside the writable roots)]"},
		{"a name that would make a line",
		 "create\tEACCES\t/etc/a\n[sandbox: b]\tx\toutside", &ws_policy,
		 "[sandbox: create /etc/a\\n[sandbox: b] denied (outside the writable roots)]"},
		{"short", "write\tEACCES\t/etc/nope", &ws_policy, NULL},
		{"long", "write\tEACCES\t/etc/nope\tx\toutside\tmore", &ws_policy, NULL},
		{"relative", "write\tEACCES\tetc/nope\tx\toutside", &ws_policy, NULL},
		{"no op", "\tEACCES\t/etc/nope\tx\toutside", &ws_policy, NULL},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		char *entries[] = {S(cases[i].entry), NULL};
		size_t n = 0;
		char *note = evidence_note(entries, 1, cases[i].policy, &n);
		const char *line = cases[i].line ? cases[i].line
						 : "[sandbox: 1 file operation refused in all]";
		if (!note || strcmp(note, line) != 0 || n != (cases[i].line != NULL))
			fail_msg("%s: got [%s] of %zu, expected [%s]", cases[i].name,
				 note ? note : "(none)", n, line);
		free(note);
	}

	/* In read-only mode nothing is writable: said so. */
	dsb_exec_policy ro = {.mode = DSB_MODE_READ_ONLY, .workspace_root = S("/ws")};
	char *entries[] = {S("create\tEACCES\t/ws/f\tf\toutside"), NULL};
	char *note = evidence_note(entries, 1, &ro, NULL);
	assert_string_equal(note, "[sandbox: create /ws/f denied (read-only mode)]");
	free(note);

	/* Nothing refused: nothing said. */
	char *none[] = {NULL};
	assert_null(evidence_note(none, 0, &ws_policy, NULL));
	assert_null(evidence_note(NULL, 0, &ws_policy, NULL));
}

/* At most DSB_REFUSED_NAMED lines, then how many in all; the errno as a number. */
static void test_refusal_note_cap(void **state)
{
	char *entries[DSB_REFUSED_NAMED + 3] = {0};
	for (int i = 0; i < DSB_REFUSED_NAMED + 2; i++)
		assert_true(asprintf(&entries[i], "create\tEACCES\t/etc/f%d\tf%d\toutside", i, i) >
			    0);
	dsb_refusal *v = NULL;
	size_t n = 0;
	assert_int_equal(refusals_parse(entries, &v, &n), 0);
	assert_int_equal(n, DSB_REFUSED_NAMED);
	assert_int_equal(v[0].sys_errno, EACCES);
	assert_string_equal(v[3].path, "/etc/f3");
	assert_string_equal(v[3].named, "f3");
	assert_string_equal(v[3].op, "create");
	assert_string_equal(v[3].why, "outside");
	char *note = NULL;
	assert_int_equal(refusal_note(v, n, 1000, &ws_policy, &note), 0);
	const char *last = strrchr(note, '\n');
	assert_non_null(last);
	assert_string_equal(last + 1, "[sandbox: 1000 file operations refused in all]");
	size_t lines = 1;
	for (const char *c = note; *c; c++)
		lines += *c == '\n';
	assert_int_equal(lines, DSB_REFUSED_NAMED + 1);
	free(note);
	/* The same path refused three times: one line, and the count. */
	assert_int_equal(refusal_note(v, 1, 3, &ws_policy, &note), 0);
	assert_string_equal(note, "[sandbox: create /etc/f0 denied (outside the writable roots)]\n"
				  "[sandbox: 3 file operations refused in all]");
	free(note);
	for (size_t i = 0; i < n; i++)
		refusal_done(&v[i]);
	free(v);
	for (int i = 0; i < DSB_REFUSED_NAMED + 2; i++)
		free(entries[i]);
}

/* With evidence its lines follow DSH's markers, in place of the stderr's protected path. */
static void test_render_refusal_note(void **state)
{
	dsb_run_result r = {0};
	r.exit_code = 0;
	r.sandboxed = true;
	r.denied = true;
	r.evidence = true;
	r.n_refused = 1;
	r.mode = DSB_MODE_READ_ONLY;
	r.refusal_note = S("[sandbox: create /etc/x denied (read-only mode)]");
	r.protected_note = S(HOOKS_NOTE);
	char *text = NULL;
	assert_int_equal(dsb_render_result(&r, true, &text, NULL, NULL), 0);
	assert_string_equal(text, "(no output)\n"
				  "[sandbox: file access denied under read-only mode]\n" HINT "\n"
				  "[sandbox: create /etc/x denied (read-only mode)]");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_cases),
		cmocka_unit_test(test_render_goldens_have_cases),
		cmocka_unit_test(test_render_keeps_nul),
		cmocka_unit_test(test_render_markers),
		cmocka_unit_test(test_render_invalid),
		cmocka_unit_test(test_runner_failure_cases),
		cmocka_unit_test(test_denial_cases),
		cmocka_unit_test(test_runner_failure_and_denial_overlap),
		cmocka_unit_test(test_classify_protected_cases),
		cmocka_unit_test(test_classify_protected_process_cwd),
		cmocka_unit_test(test_render_protected_note),
		cmocka_unit_test(test_refusal_note_cases),
		cmocka_unit_test(test_refusal_note_cap),
		cmocka_unit_test(test_render_refusal_note),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
