/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the server piece's pure parts: the framing (limit, overlong lines skipped
 * unread, CRLF, a last line without newline), the JSON-RPC classification, DSH's argument
 * checks and texts, JavaScript's number printing, the read tool's window (read-render.ts), and
 * the requestState table (bound to its call, used once, expiring, bounded).
 * The protocol end to end is tests/e2e/t-serve.sh.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/server/server.h"
#include "helpers.h"

/* Writes @data into a pipe, closes the write end; the read end. */
static int pipe_of(const char *data, size_t len)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], data, len), (ssize_t)len);
	close(p[1]);
	return p[0];
}

static void test_frame_lines(void **state)
{
	(void)state;
	static const char input[] = "one\r\n\ntwo\nlast";
	int fd = pipe_of(input, sizeof(input) - 1);
	frame_reader f;
	assert_int_equal(frame_init(&f, 16), 0);
	const char *want[] = {"one", "", "two", "last"};
	size_t got = 0;
	for (;;) {
		const char *line;
		size_t len;
		frame_result r = frame_next(&f, &line, &len);
		if (r == FRAME_NEED_MORE) {
			assert_true(frame_fill(&f, fd) >= 0);
			continue;
		}
		if (r == FRAME_END)
			break;
		assert_int_equal(r, FRAME_LINE);
		assert_true(got < 4);
		assert_int_equal(len, strlen(want[got]));
		assert_memory_equal(line, want[got], len);
		got++;
	}
	assert_int_equal(got, 4);
	frame_done(&f);
	close(fd);
}

/* A line past the limit is reported once and skipped, however it arrives; the next one reads. */
static void test_frame_overlong(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	frame_reader f;
	assert_int_equal(frame_init(&f, 8), 0);
	char big[100000];
	memset(big, 'x', sizeof(big));
	size_t too_long = 0, lines = 0;
	const char *line;
	size_t len;
	/* In pieces: the reader never holds more than its buffer (limit + one read). */
	for (size_t off = 0; off < sizeof(big); off += 1000) {
		assert_int_equal(write(p[1], big + off, 1000), 1000);
		assert_true(frame_fill(&f, p[0]) > 0);
		frame_result r;
		while ((r = frame_next(&f, &line, &len)) != FRAME_NEED_MORE)
			too_long += r == FRAME_TOO_LONG;
		assert_true(f.len - f.off <= f.max + 1);
	}
	assert_int_equal(write(p[1], "\nok\n", 4), 4);
	/* And whole, in one read, past the limit: refused too. */
	assert_int_equal(write(p[1], "123456789\nyes\n", 14), 14);
	close(p[1]);
	for (;;) {
		frame_result r = frame_next(&f, &line, &len);
		if (r == FRAME_NEED_MORE) {
			assert_true(frame_fill(&f, p[0]) >= 0);
			continue;
		}
		if (r == FRAME_END)
			break;
		if (r == FRAME_TOO_LONG) {
			too_long++;
			continue;
		}
		assert_true(len == 2 || len == 3);
		lines++;
	}
	assert_int_equal(too_long, 2);
	assert_int_equal(lines, 2);
	frame_done(&f);
	close(p[0]);
}

typedef struct parse_case {
	const char *line;
	rpc_kind kind;
	int code;
	bool has_id;
} parse_case;

static void test_rpc_parse(void **state)
{
	(void)state;
	static const parse_case cases[] = {
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", RPC_REQUEST, 0, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}", RPC_REQUEST, 0, true},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}", RPC_NOTIFICATION, 0,
		 false},
		{"{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", RPC_RESPONSE, 0, true},
		{"not json", RPC_INVALID, RPC_PARSE_ERROR, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"}", RPC_INVALID,
		 RPC_PARSE_ERROR, false},
		{"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", RPC_INVALID,
		 RPC_INVALID_REQUEST, false},
		{"42", RPC_INVALID, RPC_INVALID_REQUEST, false},
		{"{\"id\":1,\"method\":\"ping\"}", RPC_INVALID, RPC_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", RPC_INVALID,
		 RPC_INVALID_REQUEST, true},
		{"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", RPC_INVALID,
		 RPC_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", RPC_INVALID,
		 RPC_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", RPC_INVALID,
		 RPC_INVALID_REQUEST, false},
		{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", RPC_INVALID, RPC_INVALID_REQUEST,
		 true},
		{"{\"jsonrpc\":\"2.0\",\"id\":1}", RPC_INVALID, RPC_INVALID_REQUEST, true},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rpc_message m;
		assert_int_equal(rpc_parse(cases[i].line, strlen(cases[i].line), &m), 0);
		if (m.kind != cases[i].kind || m.error_code != cases[i].code ||
		    (m.id != NULL) != cases[i].has_id)
			fail_msg("case %zu (%s): kind %d code %d id %p", i, cases[i].line, m.kind,
				 m.error_code, (void *)m.id);
		rpc_message_done(&m);
	}
}

static void test_js_number(void **state)
{
	(void)state;
	static const struct {
		double v;
		const char *s;
	} cases[] = {
		{0, "0"},	    {-0.0, "0"},
		{-5, "-5"},	    {-0.5, "-0.5"},
		{1e21, "1e+21"},    {123e18, "123000000000000000000"},
		{1.5e-7, "1.5e-7"}, {-1e-6, "-0.000001"},
		{0.1, "0.1"},	    {-120000, "-120000"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = tools_js_number(cases[i].v);
		assert_non_null(s);
		assert_string_equal(s, cases[i].s);
		free(s);
	}
}

/* Plans @args_json for @tool: the refusal text, or NULL when it plans. */
static char *plan(server_tool tool, const char *args_json, tool_plan *ret)
{
	json_t *args = args_json ? json_loads(args_json, JSON_DECODE_ANY, NULL) : NULL;
	char *message = NULL;
	int r = tools_plan(tool, args, ret, &message);
	assert_true(r >= 0);
	json_decref(args);
	return message;
}

static void test_tool_arguments(void **state)
{
	(void)state;
	static const struct {
		server_tool tool;
		const char *args;
		const char *message; /* NULL: accepted */
	} cases[] = {
		{TOOL_BASH, NULL,
		 "invalid arguments: missing required property \"command\"; missing required "
		 "property \"description\""},
		{TOOL_BASH, "[]", "invalid arguments: \"arguments\" must be an object"},
		{TOOL_BASH,
		 "{\"command\":1,\"description\":\"d\",\"timeoutMs\":\"x\",\"run_in_background\":1,"
		 "\"sandbox_permissions\":\"root\"}",
		 "invalid arguments: \"command\" must be a string; \"timeoutMs\" must be a number; "
		 "\"run_in_background\" must be a boolean; \"sandbox_permissions\" must be one of "
		 "[\"workspace-write\",\"danger-full-access\"]"},
		{TOOL_BASH, "{\"command\":\" \",\"description\":\"d\"}",
		 "invalid command: expected a non-empty string"},
		{TOOL_BASH, "{\"command\":\"ls\",\"description\":\"\\n\"}",
		 "invalid description: expected a non-empty string"},
		{TOOL_BASH, "{\"command\":\"ls\",\"description\":\"d\",\"timeoutMs\":0}",
		 "invalid timeoutMs: expected a positive number, got 0"},
		{TOOL_BASH, "{\"command\":\"ls\",\"description\":\"d\",\"extra\":1}", NULL},
		{TOOL_READ, "{\"file_path\":\"a\",\"offset\":0}",
		 "offset must be a positive integer"},
		{TOOL_READ, "{\"file_path\":\"a\",\"limit\":1.5}",
		 "limit must be a positive integer"},
		{TOOL_READ, "{\"file_path\":\"a\",\"limit\":2001}",
		 "limit must be less than or equal to 2000"},
		{TOOL_READ, "{\"file_path\":\" \"}", "file_path must be a non-empty string"},
		{TOOL_EDIT, "{\"file_path\":\"a\",\"old_string\":\"x\"}",
		 "invalid arguments: missing required property \"new_string\""},
		{TOOL_WRITE, "{\"file_path\":\"a\",\"content\":\"\"}", NULL},
		{TOOL_JOB_OUTPUT, "{}", "invalid arguments: missing required property \"job_id\""},
		{TOOL_JOB_OUTPUT, "{\"job_id\":1,\"wait\":\"yes\",\"timeout_ms\":\"1\"}",
		 "invalid arguments: \"job_id\" must be a string; \"wait\" must be a boolean; "
		 "\"timeout_ms\" must be a number"},
		{TOOL_JOB_OUTPUT, "{\"job_id\":\"\",\"timeout_ms\":0}", NULL},
		{TOOL_JOB_KILL, "{\"job_id\":\"bash-1\",\"reason\":2}",
		 "invalid arguments: \"reason\" must be a string"},
		{TOOL_JOB_LIST, "{\"anything\":1}", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tool_plan p;
		char *m = plan(cases[i].tool, cases[i].args, &p);
		if (!cases[i].message)
			assert_null(m);
		else if (!m || strcmp(m, cases[i].message) != 0)
			fail_msg("case %zu: got [%s]", i, m ? m : "(accepted)");
		free(m);
	}
	tool_plan p;
	assert_null(plan(TOOL_READ, "{\"file_path\":\"a\"}", &p));
	assert_int_equal(p.read_offset, 1);
	assert_int_equal(p.read_limit, TOOL_READ_LIMIT);
}

/* The window of @text as the model sees it. */
static char *window(const char *text, uint64_t offset, uint64_t limit)
{
	read_view v;
	assert_int_equal(read_render(text, strlen(text), "/w/f", offset, limit, &v), 0);
	char *out = strdup(v.error ? v.error : v.text);
	read_view_done(&v);
	return out;
}

static void test_read_window(void **state)
{
	(void)state;
	static const char ten[] = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";
	static const struct {
		const char *text;
		uint64_t offset, limit;
		const char *want;
	} cases[] = {
		{"", 1, 2000,
		 "<path>/w/f</path>\n<type>file</type>\n<content>\n(End of file - total 0 lines)\n"
		 "</content>"},
		{"a\r\nb", 1, 2000,
		 "<path>/w/f</path>\n<type>file</type>\n<content>\n1: a\n2: b\n\n(End of file - "
		 "total 2 lines)\n</content>"},
		{ten, 5, 4,
		 "<path>/w/f</path>\n<type>file</type>\n<content>\n5: 5\n6: 6\n7: 7\n8: 8\n\n"
		 "(Showing lines 5-8 of 10. Use offset=9 to continue.)\n</content>"},
		{ten, 11, 2000, "offset 11 is out of range for \"/w/f\" (10 lines)"},
		{"", 2, 2000, "offset 2 is out of range for \"/w/f\" (0 lines)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = window(cases[i].text, cases[i].offset, cases[i].limit);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("case %zu: got [%s]", i, got);
		free(got);
	}

	/* A long line is cut at 2000 UTF-16 units: an astral character counts twice. */
	size_t n = 3000;
	char *line = malloc(n * 4 + 1);
	size_t len = 0;
	for (size_t i = 0; i < 1999; i++)
		line[len++] = 'a';
	memcpy(line + len, "\xf0\x9f\x98\x80", 4); /* U+1F600: units 2000 and 2001 */
	len += 4;
	line[len] = '\0';
	char *got = window(line, 1, 2000);
	assert_non_null(strstr(got, "a\xef\xbf\xbd... (line truncated to 2000 chars)\n"));
	free(got);

	/* The byte cap: 50 KiB of 100-byte lines stops the window, and says so. */
	for (size_t i = 0; i < 99; i++)
		line[i] = 'b';
	line[99] = '\n';
	char *many = malloc(100 * 1000 + 1);
	for (size_t i = 0; i < 1000; i++)
		memcpy(many + i * 100, line, 100);
	many[100 * 1000] = '\0';
	got = window(many, 1, 2000);
	assert_non_null(strstr(got, "\n\n(Output capped. Showing lines 1-512. Use offset=513 to "
				    "continue.)\n</content>"));
	free(got);
	free(many);
	free(line);
}

static void test_request_state(void **state)
{
	(void)state;
	server srv = {0};
	assert_int_equal(pthread_mutex_init(&srv.lock, NULL), 0);
	json_t *args = json_pack("{s:s, s:s}", "command", "make", "description", "Build");
	json_t *same = json_pack("{s:s, s:s}", "description", "Build", "command", "make");
	json_t *other = json_pack("{s:s, s:s}", "command", "make install", "description", "Build");
	char a[STATE_HANDLE_MAX], b[STATE_HANDLE_MAX], c[STATE_HANDLE_MAX];
	const char *why = NULL;

	/* Bound to the tool and the arguments (keys in any order), once. */
	assert_int_equal(state_issue(&srv, "bash", args, 60000, a), 0);
	assert_int_equal(strlen(a), 32);
	assert_int_equal(state_redeem(&srv, a, "bash", same, &why), 0);
	assert_null(why);
	assert_int_equal(state_redeem(&srv, a, "bash", args, &why), 1);
	assert_string_equal(why, "Invalid params: requestState was already used");

	/* Another call's, or another tool's, is refused, and spent by the try. */
	assert_int_equal(state_issue(&srv, "bash", args, 60000, b), 0);
	assert_int_equal(state_redeem(&srv, b, "bash", other, &why), 1);
	assert_string_equal(why, "Invalid params: requestState was issued for another tool call");
	assert_int_equal(state_redeem(&srv, b, "bash", args, &why), 1);
	assert_string_equal(why, "Invalid params: requestState was already used");
	assert_int_equal(state_issue(&srv, "bash", args, 60000, b), 0);
	assert_int_equal(state_redeem(&srv, b, "write", args, &why), 1);
	assert_string_equal(why, "Invalid params: requestState was issued for another tool call");

	/* What this table never issued names nothing; an expired one says so. */
	assert_int_equal(state_redeem(&srv, "0123456789abcdef0123456789abcdef", "bash", args, &why),
			 1);
	assert_string_equal(why, "Invalid params: requestState was not issued by this server");
	assert_int_equal(state_issue(&srv, "bash", NULL, 0, c), 0);
	assert_int_equal(state_redeem(&srv, c, "bash", NULL, &why), 1);
	assert_string_equal(why, "Invalid params: requestState has expired");

	/* Bounded: past 256 states the oldest is forgotten, the newest kept. */
	char first[STATE_HANDLE_MAX], last[STATE_HANDLE_MAX];
	assert_int_equal(state_issue(&srv, "bash", args, 60000, first), 0);
	for (int i = 0; i < 256; i++)
		assert_int_equal(state_issue(&srv, "bash", args, 60000, last), 0);
	assert_int_equal(state_redeem(&srv, first, "bash", args, &why), 1);
	assert_string_equal(why, "Invalid params: requestState was not issued by this server");
	assert_int_equal(state_redeem(&srv, last, "bash", args, &why), 0);

	state_drop_all(&srv);
	json_decref(args);
	json_decref(same);
	json_decref(other);
	(void)pthread_mutex_destroy(&srv.lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frame_lines),    cmocka_unit_test(test_frame_overlong),
		cmocka_unit_test(test_rpc_parse),      cmocka_unit_test(test_js_number),
		cmocka_unit_test(test_tool_arguments), cmocka_unit_test(test_read_window),
		cmocka_unit_test(test_request_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
