/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the forward scanner of session logs (dsh-compat §3.6): DSH's snapshot fixtures load
 * with their packed chunk rows expanded, plain and re-encoded as zstd frames; the header is
 * refused with DSH's exact texts; seq numbers, torn tails, line limits, invalid UTF-8, the
 * policy invariants of §3.5 and the callback contract.
 *
 * Files used:
 *
 *   tests/fixtures/dsh/   DSH's snapshot logs (NAME.session.jsonl)
 *   tests/data/session/                              hand-written logs (see its README.md)
 *   T/                                               logs written per test
 */
#include <errno.h>
#include <fcntl.h>
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
#include <zstd.h>

#include "src/session/session.h"
#include "helpers.h"

/* --- helpers ------------------------------------------------------------------------------- */

static char *tmp_file(const char *dir, const char *name, const void *data, size_t len)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
	dsb_test_write_file(p, data, len);
	return p;
}

/* What the callback saw: counts, the folds of §3.4 (the last value wins) and seq→type. */
typedef struct collect {
	size_t records;
	uint64_t events;
	char *mode, *policy, *preset;
	char **types; /* by seq, packed rows expanded to assistant/chunk */
	size_t sources_checked;
	size_t stop_after; /* return 1 after this many records; 0: never */
	bool fail;	   /* return an error from the first record */
	char *first_text;  /* data.text of the first record, if any */
} collect;

static void collect_done(collect *c)
{
	free(c->mode);
	free(c->policy);
	free(c->preset);
	for (uint64_t i = 0; i < c->events; i++)
		free(c->types[i]);
	free(c->types);
	free(c->first_text);
	*c = (collect){0};
}

static void fold(char **slot, const json_t *rec, const char *key)
{
	const char *v = json_string_value(json_object_get(json_object_get(rec, "data"), key));
	assert_non_null(v);
	free(*slot);
	*slot = strdup(v);
}

static int on_record(const log_record *rec, void *userdata, dsb_error *reterr)
{
	collect *c = userdata;
	if (c->fail)
		return dsb_fail(reterr, DSB_E_IO, "callback says no");

	/* Records come in order and account for every event. */
	assert_int_equal(rec->seq, c->events);
	assert_true(rec->count >= 1);
	assert_string_equal(rec->type, json_string_value(json_object_get(rec->json, "type")));
	bool row = strstr(rec->type, "-chunks") != NULL;
	c->types = realloc(c->types, (c->events + rec->count) * sizeof(char *));
	for (size_t i = 0; i < rec->count; i++)
		c->types[c->events + i] = strdup(row ? "assistant/chunk" : rec->type);

	/*
	 * sourceEventSeqs name earlier events by seq: a message's chunks end right before it, a
	 * tool result names its call. This holds only if packed rows expand to the right counts.
	 */
	const json_t *src = json_object_get(rec->json, "sourceEventSeqs");
	for (size_t i = 0; i < json_array_size(src); i++) {
		json_int_t s = json_integer_value(json_array_get(src, i));
		assert_true(s >= 0 && (uint64_t)s < rec->seq);
		const char *want =
			strcmp(rec->type, "tool/result") == 0 ? "tool/call" : "assistant/chunk";
		assert_string_equal(c->types[s], want);
		if (strcmp(rec->type, "assistant/message") == 0 && i + 1 == json_array_size(src))
			assert_int_equal(s, rec->seq - 1);
		c->sources_checked++;
	}

	if (strcmp(rec->type, "sandbox/mode") == 0)
		fold(&c->mode, rec->json, "mode");
	else if (strcmp(rec->type, "approval/policy") == 0)
		fold(&c->policy, rec->json, "policy");
	else if (strcmp(rec->type, "permission/preset") == 0)
		fold(&c->preset, rec->json, "preset");
	if (c->records == 0) {
		const char *t = json_string_value(
			json_object_get(json_object_get(rec->json, "data"), "text"));
		c->first_text = t ? strdup(t) : NULL;
	}

	c->records++;
	c->events += rec->count;
	return c->stop_after && c->records == c->stop_after;
}

static int scan_path(const char *path, collect *c, log_scan_result *res, log_header *hdr,
		     dsb_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	*res = (log_scan_result){0};
	*err = (dsb_error){0};
	int r = log_scan(fd, path, hdr, on_record, c, res, err);
	close(fd);
	return r;
}

static char *message_for(const char *path, const char *suffix)
{
	char *m = NULL;
	assert_true(asprintf(&m, "%s%s", path, suffix) > 0);
	return m;
}

static void assert_error(int r, dsb_code code, const dsb_error *err, const char *path,
			 const char *suffix)
{
	char *want = message_for(path, suffix);
	if (r != -(int)code || strcmp(err->message, want) != 0)
		fail_msg("want %d \"%s\"\n got %d \"%s\"", -(int)code, want, r, err->message);
	assert_int_equal(err->code, code);
	free(want);
}

/* --- zstd encodings ------------------------------------------------------------------------ */

static void append_frame(FILE *out, const char *text, size_t len)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	assert_non_null(cctx);
	assert_false(ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1)));
	size_t cap = ZSTD_compressBound(len);
	char *frame = malloc(cap);
	size_t n = ZSTD_compress2(cctx, frame, cap, text, len);
	assert_false(ZSTD_isError(n));
	assert_int_equal(fwrite(frame, 1, n, out), n);
	free(frame);
	ZSTD_freeCCtx(cctx);
}

enum split {
	SPLIT_ONE,	/* the header frame, then one frame for the rest */
	SPLIT_PER_LINE, /* a frame per line, as per-batch appends with one event do */
	SPLIT_BYTES,	/* frames of 700 bytes, cutting lines in two */
};

/* DSH's layout: the header alone in a checksummed frame, then the events as @split says. */
static char *zstd_encode(const char *text, size_t len, enum split split, size_t *ret_len)
{
	char *out = NULL;
	size_t out_len = 0;
	FILE *f = open_memstream(&out, &out_len);
	assert_non_null(f);
	const char *nl = memchr(text, '\n', len);
	assert_non_null(nl);
	size_t header = (size_t)(nl - text) + 1;
	append_frame(f, text, header);
	for (size_t pos = header; pos < len;) {
		size_t n = len - pos;
		if (split == SPLIT_PER_LINE)
			n = (size_t)((const char *)memchr(text + pos, '\n', len - pos) -
				     (text + pos)) +
			    1;
		else if (split == SPLIT_BYTES && n > 700)
			n = 700;
		append_frame(f, text + pos, n);
		pos += n;
	}
	assert_int_equal(fclose(f), 0);
	*ret_len = out_len;
	return out;
}

/* --- fixtures ------------------------------------------------------------------------------ */

typedef struct pinned {
	const char *name;
	bool data; /* tests/data/session, else DSH's fixtures */
	uint64_t events;
	size_t records;
	const char *mode, *policy, *preset; /* the folds; NULL when no such event */
	const char *id;
	uint64_t created_at;
	bool torn;
	size_t sources; /* sourceEventSeqs entries, all checked against the expanded seqs */
} pinned;

/*
 * Counted by hand (grep -c, and each row's dt length + 1): e.g. escalation-approved has 36
 * records, three of them rows of 28, 89 and 39 members: 33 + 156 = 189 events.
 */
static const pinned logs[] = {
	{"escalation-approved.session.jsonl", false, 189, 36, NULL, NULL, NULL,
	 "f3cbd087-fb45-4b32-b0f2-3082d65bfcb4", 1783860675270, false, 171},
	{"escalation-rejected.session.jsonl", false, 216, 35, NULL, NULL, NULL,
	 "d692fe7f-7079-4ee4-8b06-f44fd026d4ea", 1783860679475, false, 198},
	{"missing-sandbox-runner.session.jsonl", false, 50, 50, NULL, NULL, NULL,
	 "55555555-5555-4555-8555-555555555555", 1785304900000, false, 23},
	{"packed-chunks.session.jsonl", false, 124, 35, NULL, NULL, NULL,
	 "ff1c1e99-3bd4-4ef8-a954-80d607d628ba", 1783352165190, false, 106},
	{"subagent-continuable-inheritance.session.jsonl", false, 41, 41, "read-only", NULL, NULL,
	 "11111111-1111-4111-8111-111111111111", 1789000000000, false, 16},
	{"session/delegated-child.jsonl", true, 18, 15, "workspace-write", "ask", "explore",
	 "33333333-3333-4333-8333-333333333333", 1789000000500, false, 6},
	{"session/tool-call-row.jsonl", true, 11, 9, "danger-full-access", NULL, "full",
	 "44444444-4444-4444-8444-444444444444", 1789000001000, false, 0},
	{"session/torn-tail.jsonl", true, 1, 1, "read-only", NULL, NULL,
	 "55555555-5555-4555-8555-555555555555", 1, true, 0},
};

static void assert_fold(const char *want, const char *got)
{
	if (want)
		assert_string_equal(got, want);
	else
		assert_null(got);
}

static void check_pinned(const pinned *p, const char *path, const char *text, size_t text_len,
			 bool zstd, off_t file_len)
{
	collect c = {0};
	log_scan_result res;
	log_header hdr = {0};
	dsb_error err;
	int r = scan_path(path, &c, &res, &hdr, &err);
	if (r != 0)
		fail_msg("%s: %s", path, err.message);

	assert_int_equal(res.n_events, p->events);
	assert_int_equal(c.events, p->events);
	assert_int_equal(c.records, p->records);
	assert_int_equal(res.last_seq, p->events - 1);
	assert_int_equal(res.zstd, zstd);
	assert_int_equal(res.torn, p->torn);
	assert_int_equal(res.file_bytes, file_len);
	if (p->torn) {
		/* The committed region is the text up to the last newline. */
		const char *last = text + text_len;
		while (last > text && last[-1] != '\n')
			last--;
		if (!zstd)
			assert_int_equal(res.committed_bytes, last - text);
	} else
		assert_int_equal(res.committed_bytes, file_len);
	assert_int_equal(c.sources_checked, p->sources);
	assert_fold(p->mode, c.mode);
	assert_fold(p->policy, c.policy);
	assert_fold(p->preset, c.preset);
	assert_string_equal(hdr.id, p->id);
	assert_int_equal(hdr.created_at, p->created_at);
	log_header_done(&hdr);
	collect_done(&c);
}

static char *pinned_path(const pinned *p)
{
	return p->data ? dsb_test_data_path(p->name) : dsb_test_dsh_fixture(p->name);
}

static void test_fixtures_plain(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(logs); i++) {
		char *path = pinned_path(&logs[i]);
		size_t len;
		char *text = dsb_test_read_file(path, &len);
		assert_non_null(text);
		check_pinned(&logs[i], path, text, len, false, (off_t)len);
		free(text);
		free(path);
	}
}

static void test_fixtures_zstd(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	for (size_t i = 0; i < ELEMENTSOF(logs); i++) {
		if (logs[i].torn)
			continue; /* a torn plain line is not a torn frame: see test_zstd_torn */
		char *path = pinned_path(&logs[i]);
		size_t len;
		char *text = dsb_test_read_file(path, &len);
		assert_non_null(text);
		for (enum split s = SPLIT_ONE; s <= SPLIT_BYTES; s++) {
			size_t zlen;
			char *z = zstd_encode(text, len, s, &zlen);
			char *zpath = tmp_file(dir, "session.jsonl.zstd", z, zlen);
			check_pinned(&logs[i], zpath, text, len, true, (off_t)zlen);
			free(zpath);
			free(z);
		}
		free(text);
		free(path);
	}
	dsb_test_rm_rf(dir);
	free(dir);
}

/* One pair checked by hand: escalation-approved's tool/result names seq 133, its tool/call. */
static int find_133(const log_record *rec, void *userdata, dsb_error *reterr)
{
	(void)reterr;
	char **type = userdata;
	if (rec->seq <= 133 && 133 < rec->seq + rec->count)
		*type = strdup(rec->type);
	if (strcmp(rec->type, "tool/result") == 0) {
		const json_t *src = json_object_get(rec->json, "sourceEventSeqs");
		assert_int_equal(json_integer_value(json_array_get(src, 0)), 133);
		assert_int_equal(rec->line, 23);
		return 1;
	}
	return 0;
}

static void test_fixture_known_pair(void **state)
{
	(void)state;
	char *path = dsb_test_dsh_fixture("escalation-approved.session.jsonl");
	char *type = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	log_scan_result res;
	assert_int_equal(log_scan(fd, path, NULL, find_133, &type, &res, NULL), 1);
	assert_string_equal(type, "tool/call");
	assert_int_equal(res.n_events, 137); /* stopped after the result: seq 136 */
	assert_false(res.torn);
	close(fd);
	free(type);
	free(path);
}

/* format(parse(line)) == line for every real header. */
static void test_header_round_trip(void **state)
{
	(void)state;
	static const char *const extra[] = {
		"{\"type\":\"session\",\"version\":0,\"id\":\"x\",\"createdAt\":0,\"cwd\":\"/a "
		"\\\"b\\\" "
		"\\u001f\xc3\xa9\",\"parentSession\":\"p\",\"seedLength\":3,\"origin\":"
		"\"subagent\","
		"\"delegationDepth\":2,\"agentPreset\":\"plan\"}",
		"{\"type\":\"session\",\"version\":0,\"id\":\"\",\"createdAt\":9007199254740991,"
		"\"delegationDepth\":0}",
	};
	for (size_t i = 0; i < ELEMENTSOF(logs) + ELEMENTSOF(extra); i++) {
		char *text;
		if (i < ELEMENTSOF(logs)) {
			char *path = pinned_path(&logs[i]);
			text = dsb_test_read_file(path, NULL);
			free(path);
			*strchr(text, '\n') = '\0';
		} else
			text = strdup(extra[i - ELEMENTSOF(logs)]);
		log_header h = {0};
		dsb_error err;
		if (log_header_parse(text, strlen(text), "p", &h, &err) != 0)
			fail_msg("%s: %s", text, err.message);
		char *line = NULL;
		assert_int_equal(log_header_format(&h, &line), 0);
		assert_string_equal(line, text);
		free(line);
		log_header_done(&h);
		free(text);
	}
}

static void test_header_format_order(void **state)
{
	(void)state;
	const char *in = "{\"agentPreset\":\"a\",\"delegationDepth\":1,\"origin\":\"subagent\","
			 "\"createdAt\":5.0,\"id\":\"i\",\"version\":0,\"type\":\"session\"}";
	log_header h = {0};
	assert_int_equal(log_header_parse(in, strlen(in), "p", &h, NULL), 0);
	char *line = NULL;
	assert_int_equal(log_header_format(&h, &line), 0);
	assert_string_equal(line,
			    "{\"type\":\"session\",\"version\":0,\"id\":\"i\",\"createdAt\":5,"
			    "\"origin\":\"subagent\",\"delegationDepth\":1,"
			    "\"agentPreset\":\"a\"}");
	free(line);
	log_header_done(&h);
}

#define H(rest) "{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":1" rest "}"
#define HDR	H(",\"delegationDepth\":0")
#define NEWER(id, v)                                     \
	": session \"" id "\" uses log format v" v       \
	", but this harness reads only v0: the log was " \
	"written by a newer harness \xe2\x80\x94 upgrade the harness to open it"
#define OLDER(id, v)                                                                          \
	": session \"" id "\" uses log format v" v ", older than the supported v0, and this " \
	"build ships no upgrade path for it"
#define NOT_JSON ": corrupt session log: header line is not valid JSON"
#define NOT_HDR	 ": corrupt session log: first line is not a session header"
/* The field at fault is named (issue 13 item 7). */
#define MISSING(field) NOT_HDR " (missing required field \"" field "\")"
#define INVALID(field) NOT_HDR " (invalid field \"" field "\")"
#define RETIRED	       ": session header uses retired policy baseline fields"
#define HEADLESS       ": empty or header-less session log"

static void test_header_table(void **state)
{
	(void)state;
	static const struct {
		const char *line;
		const char *error; /* NULL: accepted */
	} cases[] = {
		{HDR, NULL},
		{"", HEADLESS},
		{"{", NOT_JSON},
		{"{\"type\":\"session\"} x", NOT_JSON},
		{"\xef\xbb\xbf" HDR, NOT_JSON}, /* a BOM: JSON.parse refuses it as well */
		/* The version is refused before anything else is looked at. */
		{"{\"type\":\"session\",\"version\":1,\"id\":\"abc\"}", NEWER("abc", "1")},
		{"{\"version\":2,\"id\":5}", NEWER("5", "2")},
		{"{\"version\":1}", NEWER("undefined", "1")},
		{"{\"version\":1,\"id\":null}", NEWER("null", "1")},
		{"{\"version\":1,\"id\":[1,null,\"a\"]}", NEWER("1,,a", "1")},
		{"{\"version\":1,\"id\":{}}", NEWER("[object Object]", "1")},
		{"{\"version\":1.5,\"id\":\"a\"}", NEWER("a", "1.5")},
		{"{\"version\":1e21,\"id\":\"a\"}", NEWER("a", "1e+21")},
		{"{\"version\":0.0000001,\"id\":\"a\"}", NEWER("a", "1e-7")},
		{"{\"version\":0.000001,\"id\":\"a\"}", NEWER("a", "0.000001")},
		{"{\"version\":100,\"id\":\"a\"}", NEWER("a", "100")},
		{"{\"version\":-1,\"id\":\"a\"}", OLDER("a", "-1")},
		{"{\"version\":-0.5,\"id\":\"a\"}", OLDER("a", "-0.5")},
		{H(",\"delegationDepth\":0,\"version\":1"),
		 NEWER("s", "1")}, /* the last key wins */
		{"{\"type\":\"session\",\"version\":1,\"version\":0,\"id\":\"s\",\"createdAt\":1,"
		 "\"delegationDepth\":0}",
		 NULL},
		{H(",\"delegationDepth\":0,\"version\":0.0"), NULL},
		/* isHeaderLine() */
		{"[]", NOT_HDR},
		{"\"session\"", NOT_HDR},
		{"null", NOT_HDR},
		{"{\"type\":\"sessionx\",\"version\":0,\"id\":\"s\",\"createdAt\":1,"
		 "\"delegationDepth\":0}",
		 NOT_HDR},
		{"{\"version\":0,\"id\":\"s\",\"createdAt\":1,\"delegationDepth\":0}",
		 MISSING("type")},
		{"{\"type\":\"session\",\"version\":\"1\",\"id\":\"s\",\"createdAt\":1,"
		 "\"delegationDepth\":0}",
		 INVALID("version")},
		{"{\"type\":\"session\",\"id\":\"s\",\"createdAt\":1,\"delegationDepth\":0}",
		 MISSING("version")},
		{"{\"type\":\"session\",\"version\":0,\"id\":7,\"createdAt\":1,"
		 "\"delegationDepth\":0}",
		 INVALID("id")},
		{"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"delegationDepth\":0}",
		 MISSING("createdAt")},
		{"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":-1,"
		 "\"delegationDepth\":0}",
		 INVALID("createdAt")},
		{"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":1.5,"
		 "\"delegationDepth\":0}",
		 INVALID("createdAt")},
		{"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":-0.0,"
		 "\"delegationDepth\":0}",
		 INVALID("createdAt")},
		{"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":9007199254740992,"
		 "\"delegationDepth\":0}",
		 INVALID("createdAt")},
		{"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":1e400,"
		 "\"delegationDepth\":0}",
		 NOT_JSON}, /* JSON.parse reads Infinity and isHeaderLine() refuses: jansson earlier
			     */
		{"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":"
		 "123456789012345678901234567890,\"delegationDepth\":0}",
		 INVALID("createdAt")},
		{"{\"type\":\"session\",\"version\":0,\"id\":\"s\",\"createdAt\":\"1\","
		 "\"delegationDepth\":0}",
		 INVALID("createdAt")},
		{H(""), MISSING("delegationDepth")},
		{H(",\"delegationDepth\":-1"), INVALID("delegationDepth")},
		{H(",\"delegationDepth\":null"), INVALID("delegationDepth")},
		{H(",\"delegationDepth\":0,\"origin\":\"user\""), INVALID("origin")},
		{H(",\"delegationDepth\":0,\"origin\":null"), INVALID("origin")},
		{H(",\"delegationDepth\":0,\"origin\":\"subagent\""), NULL},
		{H(",\"delegationDepth\":0,\"agentPreset\":5"), INVALID("agentPreset")},
		{H(",\"delegationDepth\":0,\"agentPreset\":null"), INVALID("agentPreset")},
		{H(",\"delegationDepth\":0,\"cwd\":5"), INVALID("cwd")},
		{H(",\"delegationDepth\":0,\"parentSession\":[]"), INVALID("parentSession")},
		{H(",\"delegationDepth\":0,\"seedLength\":-1"), INVALID("seedLength")},
		{H(",\"delegationDepth\":0,\"seedLength\":\"3\""), INVALID("seedLength")},
		{H(",\"delegationDepth\":0,\"seedLength\":3"), NULL},
		{H(",\"delegationDepth\":0,\"unknown\":{\"x\":1}"), NULL},
		/* fromHeaderLine(): after the shape */
		{H(",\"delegationDepth\":0,\"sandboxMode\":\"read-only\""), RETIRED},
		{H(",\"delegationDepth\":0,\"approvalPolicy\":null"), RETIRED},
		{H(",\"sandboxMode\":\"read-only\""), MISSING("delegationDepth")},
		{H(",\"delegationDepth\":0,\"cwd\":\"a\\u0000b\""),
		 ": session header holds a NUL character, which this build cannot represent"},
		/* Node reads bytes that are not UTF-8 as U+FFFD. */
		{H(",\"delegationDepth\":0,\"cwd\":\"/h\xff\""), NULL},
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		log_header h = {0};
		dsb_error err = {0};
		int r = log_header_parse(cases[i].line, strlen(cases[i].line), "P", &h, &err);
		if (!cases[i].error) {
			if (r != 0)
				fail_msg("case %zu %s: %s", i, cases[i].line, err.message);
			log_header_done(&h);
			continue;
		}
		char *want = message_for("P", cases[i].error);
		if (r != -DSB_E_SESSION_INVALID || strcmp(err.message, want) != 0)
			fail_msg("case %zu %s\nwant \"%s\"\n got %d \"%s\"", i, cases[i].line, want,
				 r, err.message);
		assert_null(h.id);
		free(want);
	}
}

static void test_header_values(void **state)
{
	(void)state;
	const char *line = H(",\"cwd\":\"/h\xff\",\"seedLength\":3,\"delegationDepth\":2,"
			     "\"parentSession\":\"par\",\"origin\":\"subagent\",\"agentPreset\":"
			     "\"x\"");
	log_header h = {0};
	assert_int_equal(log_header_parse(line, strlen(line), "p", &h, NULL), 0);
	assert_string_equal(h.id, "s");
	assert_int_equal(h.created_at, 1);
	assert_string_equal(h.cwd, "/h\xef\xbf\xbd");
	assert_string_equal(h.parent_session, "par");
	assert_true(h.has_seed_length);
	assert_int_equal(h.seed_length, 3);
	assert_true(h.origin_subagent);
	assert_int_equal(h.delegation_depth, 2);
	assert_string_equal(h.agent_preset, "x");
	log_header_done(&h);
	log_header_done(&h); /* idempotent */
}

/* --- whole logs ---------------------------------------------------------------------------- */

typedef struct log_case {
	const char *name;
	const char *text; /* NUL-free; the header HDR is prepended unless it starts with '!' */
	int code;	  /* 0, or the dsb_code of the error */
	const char *error;
	uint64_t events;
	size_t records;
	bool torn;
	const char *mode; /* the fold, when pinned */
} log_case;

#define ROW(seq0, dt, texts)                                                             \
	"{\"type\":\"text-chunks\",\"seq0\":" seq0 ",\"time0\":10,\"data\":{\"turn\":1," \
	"\"step\":1,\"index\":0,\"dt\":" dt ",\"texts\":" texts "}}\n"
#define SEQ_GAP(line, x, y)                                                         \
	":" line ": corrupt session log: seq gap in committed region at line " line \
	" (expected " x ", got " y ")"
#define UNPARSABLE(line) ":" line ": corrupt session log: unparsable committed event at line " line

static const log_case log_cases[] = {
	{"header only", "", 0, NULL, 0, 0, false, NULL},
	{"empty file", "!", DSB_E_SESSION_INVALID, HEADLESS, 0, 0, false, NULL},
	{"header without newline", "!" HDR, DSB_E_SESSION_INVALID, HEADLESS, 0, 0, false, NULL},
	{"blank first line", "!\n" HDR "\n", DSB_E_SESSION_INVALID, HEADLESS, 0, 0, false, NULL},
	{"bad header", "!{\"type\":\"session\"}\n", DSB_E_SESSION_INVALID, MISSING("version"), 0, 0,
	 false, NULL},
	{"newer header", "!{\"version\":3,\"id\":\"z\"}\n{\"type\":\"a\"}\n", DSB_E_SESSION_INVALID,
	 NEWER("z", "3"), 0, 0, false, NULL},
	{"seq contiguous", "{\"type\":\"a\",\"seq\":0}\n{\"type\":\"b\",\"seq\":1}\n", 0, NULL, 2,
	 2, false, NULL},
	{"seq gap", "{\"type\":\"a\",\"seq\":0}\n{\"type\":\"b\",\"seq\":2}\n",
	 DSB_E_SESSION_INVALID, SEQ_GAP("3", "1", "2"), 0, 0, false, NULL},
	{"seq duplicate", "{\"type\":\"a\",\"seq\":0}\n{\"type\":\"b\",\"seq\":0}\n",
	 DSB_E_SESSION_INVALID, SEQ_GAP("3", "1", "0"), 0, 0, false, NULL},
	{"seq first not 0", "{\"type\":\"a\",\"seq\":1}\n", DSB_E_SESSION_INVALID,
	 SEQ_GAP("2", "0", "1"), 0, 0, false, NULL},
	{"seq mixed",
	 "{\"type\":\"a\"}\n{\"type\":\"b\"}\n{\"type\":\"c\",\"seq\":2}\n{\"type\":\"d\"}\n"
	 "{\"type\":\"e\",\"seq\":4}\n",
	 0, NULL, 5, 5, false, NULL},
	{"seq mixed wrong", "{\"type\":\"a\"}\n{\"type\":\"b\",\"seq\":0}\n", DSB_E_SESSION_INVALID,
	 SEQ_GAP("3", "1", "0"), 0, 0, false, NULL},
	{"seq as real", "{\"type\":\"a\",\"seq\":0.0}\n{\"type\":\"b\",\"seq\":1e0}\n", 0, NULL, 2,
	 2, false, NULL},
	{"seq as string", "{\"type\":\"a\",\"seq\":\"0\"}\n", DSB_E_SESSION_INVALID,
	 SEQ_GAP("2", "0", "0"), 0, 0, false, NULL},
	{"seq negative", "{\"type\":\"a\",\"seq\":-1}\n", DSB_E_SESSION_INVALID,
	 SEQ_GAP("2", "0", "-1"), 0, 0, false, NULL},
	{"seq null", "{\"type\":\"a\",\"seq\":null}\n", DSB_E_SESSION_INVALID,
	 SEQ_GAP("2", "0", "null"), 0, 0, false, NULL},
	{"seq fractional", "{\"type\":\"a\",\"seq\":0.5}\n", DSB_E_SESSION_INVALID,
	 SEQ_GAP("2", "0", "0.5"), 0, 0, false, NULL},
	/* 64-bit seqs are printed exactly, not as the nearest double (issue 13 item 7). */
	{"seq beyond 2^53", "{\"type\":\"a\",\"seq\":9007199254740993}\n", DSB_E_SESSION_INVALID,
	 SEQ_GAP("2", "0", "9007199254740993"), 0, 0, false, NULL},
	{"seq int64 max", "{\"type\":\"a\",\"seq\":9223372036854775807}\n", DSB_E_SESSION_INVALID,
	 SEQ_GAP("2", "0", "9223372036854775807"), 0, 0, false, NULL},
	{"packed row with seq0",
	 "{\"type\":\"a\",\"seq\":0}\n" ROW("1", "[1,2]", "[\"a\",\"b\",\"c\"]") "{\"type\":\"b\","
										 "\"seq\":4}\n",
	 0, NULL, 5, 3, false, NULL},
	{"packed row without seq0",
	 "{\"type\":\"text-chunks\",\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[],"
	 "\"texts\":[\"x\"]}}\n{\"type\":\"b\",\"seq\":1}\n",
	 0, NULL, 2, 2, false, NULL},
	{"packed row seq0 gap", "{\"type\":\"a\",\"seq\":0}\n" ROW("2", "[1]", "[\"a\",\"b\"]"),
	 DSB_E_SESSION_INVALID, SEQ_GAP("3", "1", "2"), 0, 0, false, NULL},
	{"packed row then gap", ROW("0", "[1]", "[\"a\",\"b\"]") "{\"type\":\"b\",\"seq\":3}\n",
	 DSB_E_SESSION_INVALID, SEQ_GAP("3", "2", "3"), 0, 0, false, NULL},
	{"packed row dt length", ROW("0", "[1,2]", "[\"a\",\"b\"]"), DSB_E_SESSION_INVALID,
	 UNPARSABLE("2"), 0, 0, false, NULL},
	{"packed row empty", ROW("0", "[]", "[]"), DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0,
	 false, NULL},
	{"packed row text not string", ROW("0", "[1]", "[\"a\",2]"), DSB_E_SESSION_INVALID,
	 UNPARSABLE("2"), 0, 0, false, NULL},
	{"packed row dt fractional", ROW("0", "[1.5]", "[\"a\",\"b\"]"), DSB_E_SESSION_INVALID,
	 UNPARSABLE("2"), 0, 0, false, NULL},
	{"packed row seq0 negative", ROW("-1", "[1]", "[\"a\",\"b\"]"), DSB_E_SESSION_INVALID,
	 UNPARSABLE("2"), 0, 0, false, NULL},
	{"packed row time out of range",
	 "{\"type\":\"text-chunks\",\"time0\":9007199254740990,\"data\":{\"turn\":1,\"step\":1,"
	 "\"index\":0,\"dt\":[1,1],\"texts\":[\"a\",\"b\",\"c\"]}}\n",
	 DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false, NULL},
	{"packed row with seq",
	 "{\"type\":\"text-chunks\",\"seq\":0,\"data\":{\"turn\":1,"
	 "\"step\":1,\"index\":0,\"dt\":[],\"texts\":[\"a\"]}}\n",
	 DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false, NULL},
	{"packed row extra data key",
	 "{\"type\":\"reasoning-chunks\",\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[],"
	 "\"texts\":[\"a\"],\"x\":1}}\n",
	 DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false, NULL},
	{"packed row turn not number",
	 "{\"type\":\"reasoning-chunks\",\"data\":{\"turn\":\"1\",\"step\":1,\"index\":0,"
	 "\"dt\":[],\"texts\":[\"a\"]}}\n",
	 DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false, NULL},
	{"tool-call row name not string",
	 "{\"type\":\"tool-call-chunks\",\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"id\":\"c\","
	 "\"name\":1,\"dt\":[],\"args\":[\"a\"]}}\n",
	 DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false, NULL},
	{"tool-call row with texts",
	 "{\"type\":\"tool-call-chunks\",\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"id\":\"c\","
	 "\"dt\":[],\"texts\":[\"a\"]}}\n",
	 DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false, NULL},
	{"invalid JSON in the middle", "{\"type\":\"a\"}\n{\"type\":\n{\"type\":\"c\"}\n",
	 DSB_E_SESSION_INVALID, UNPARSABLE("3"), 0, 0, false, NULL},
	{"blank line", "{\"type\":\"a\"}\n\n{\"type\":\"c\"}\n", DSB_E_SESSION_INVALID,
	 UNPARSABLE("3"), 0, 0, false, NULL},
	{"not an object", "5\n", DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false, NULL},
	{"no type", "{\"data\":{}}\n", DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false, NULL},
	{"type not string", "{\"type\":5}\n", DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false,
	 NULL},
	{"type with NUL", "{\"type\":\"sandbox/mode\\u0000x\",\"data\":{\"mode\":\"x\"}}\n",
	 DSB_E_SESSION_INVALID, UNPARSABLE("2"), 0, 0, false, NULL},
	{"unknown types and odd values",
	 "{\"type\":\"someone/else\",\"data\":{\"big\":123456789012345678901234567890,"
	 "\"nul\":\"\\u0000\"}}\n{\"type\":\"x\",\"type\":\"y\"}\n",
	 0, NULL, 2, 2, false, NULL},
	{"CRLF", "{\"type\":\"a\"}\r\n{\"type\":\"b\"}\r\n", 0, NULL, 2, 2, false, NULL},
	{"torn tail", "{\"type\":\"a\"}\n{\"type\":\"b\"", 0, NULL, 1, 1, true, NULL},
	{"torn tail of garbage", "{\"type\":\"a\"}\n\x01\x02", 0, NULL, 1, 1, true, NULL},
	{"modes",
	 "{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"read-only\"}}\n"
	 "{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"danger-full-access\"}}\n"
	 "{\"type\":\"approval/policy\",\"data\":{\"policy\":\"never\"}}\n"
	 "{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"workspace-write\","
	 "\"source\":\"delegation\"}}\n"
	 "{\"type\":\"approval/policy\",\"data\":{\"policy\":\"ask\"}}\n",
	 0, NULL, 5, 5, false, "workspace-write"},
	{"unknown mode", "{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"host-root\"}}\n",
	 DSB_E_INVARIANT, ":2: sandbox/mode carries unknown mode \"host-root\"", 0, 0, false, NULL},
	{"mode number", "{\"type\":\"a\"}\n{\"type\":\"sandbox/mode\",\"data\":{\"mode\":5}}\n",
	 DSB_E_INVARIANT, ":3: sandbox/mode carries unknown mode 5", 0, 0, false, NULL},
	{"mode absent", "{\"type\":\"sandbox/mode\",\"data\":{}}\n", DSB_E_INVARIANT,
	 ":2: sandbox/mode carries unknown mode undefined", 0, 0, false, NULL},
	{"mode without data", "{\"type\":\"sandbox/mode\"}\n", DSB_E_INVARIANT,
	 ":2: sandbox/mode carries unknown mode undefined", 0, 0, false, NULL},
	{"mode object",
	 "{\"type\":\"sandbox/mode\",\"data\":{\"mode\":{\"b\":null,\"a\":[1.5,\"\\u001f\"]}}}\n",
	 DSB_E_INVARIANT,
	 ":2: sandbox/mode carries unknown mode {\"b\":null,\"a\":[1.5,\"\\u001f\"]}", 0, 0, false,
	 NULL},
	{"mode case", "{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"Read-Only\"}}\n",
	 DSB_E_INVARIANT, ":2: sandbox/mode carries unknown mode \"Read-Only\"", 0, 0, false, NULL},
	{"mode with NUL", "{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"read-only\\u0000\"}}\n",
	 DSB_E_INVARIANT, ":2: sandbox/mode carries unknown mode \"read-only\\u0000\"", 0, 0, false,
	 NULL},
	{"unknown policy", "{\"type\":\"approval/policy\",\"data\":{\"policy\":\"always\"}}\n",
	 DSB_E_INVARIANT, ":2: approval/policy carries unknown policy \"always\"", 0, 0, false,
	 NULL},
	{"policy null", "{\"type\":\"approval/policy\",\"data\":{\"policy\":null}}\n",
	 DSB_E_INVARIANT, ":2: approval/policy carries unknown policy null", 0, 0, false, NULL},
};

static void test_log_table(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	for (size_t i = 0; i < ELEMENTSOF(log_cases); i++) {
		const log_case *lc = &log_cases[i];
		char *text = NULL;
		if (lc->text[0] == '!')
			text = strdup(lc->text + 1);
		else
			assert_true(asprintf(&text, "%s\n%s", HDR, lc->text) > 0);
		char *path = tmp_file(dir, "session.jsonl", text, strlen(text));
		collect c = {0};
		log_scan_result res;
		dsb_error err;
		int r = scan_path(path, &c, &res, NULL, &err);
		if (lc->code) {
			char *want = message_for(path, lc->error);
			if (r != -lc->code || strcmp(err.message, want) != 0)
				fail_msg("%s\nwant %d \"%s\"\n got %d \"%s\"", lc->name, -lc->code,
					 want, r, err.message);
			assert_int_equal(err.code, lc->code);
			free(want);
		} else {
			if (r != 0)
				fail_msg("%s: %s", lc->name, err.message);
			assert_int_equal(res.n_events, lc->events);
			assert_int_equal(c.records, lc->records);
			assert_int_equal(res.torn, lc->torn);
			assert_int_equal(res.file_bytes, strlen(text));
			const char *end = text + strlen(text);
			while (lc->torn && end[-1] != '\n')
				end--;
			assert_int_equal(res.committed_bytes, end - text);
			if (lc->mode)
				assert_string_equal(c.mode, lc->mode);
		}
		collect_done(&c);
		free(path);
		free(text);
	}
	dsb_test_rm_rf(dir);
	free(dir);
}

/* Bytes that are not UTF-8 inside a string read as U+FFFD, as Node decodes the file. */
static void test_invalid_utf8(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	const char text[] = HDR "\n{\"type\":\"note\",\"data\":{\"text\":\"a\xff\xc3(b\"}}\n";
	char *path = tmp_file(dir, "s.jsonl", text, sizeof(text) - 1);
	collect c = {0};
	log_scan_result res;
	dsb_error err;
	assert_int_equal(scan_path(path, &c, &res, NULL, &err), 0);
	assert_int_equal(res.n_events, 1);
	assert_string_equal(c.first_text, "a\xef\xbf\xbd\xef\xbf\xbd(b");
	collect_done(&c);
	free(path);
	dsb_test_rm_rf(dir);
	free(dir);
}

/* A 10 MB tool result is a real line: it loads, and the buffer grows only that far. */
static void test_long_line(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	size_t n = (size_t)10 * 1000 * 1000;
	const char *pre = HDR "\n{\"type\":\"tool/output\",\"data\":{\"text\":\"";
	const char *post = "\"}}\n{\"type\":\"sandbox/mode\",\"data\":{\"mode\":\"read-only\"}}\n";
	size_t len = strlen(pre) + n + strlen(post);
	char *text = malloc(len);
	memcpy(text, pre, strlen(pre));
	memset(text + strlen(pre), 'x', n);
	memcpy(text + strlen(pre) + n, post, strlen(post));
	char *path = tmp_file(dir, "s.jsonl", text, len);
	collect c = {0};
	log_scan_result res;
	dsb_error err;
	assert_int_equal(scan_path(path, &c, &res, NULL, &err), 0);
	assert_int_equal(res.n_events, 2);
	assert_int_equal(strlen(c.first_text), n);
	assert_string_equal(c.mode, "read-only");
	assert_int_equal(res.committed_bytes, len);
	collect_done(&c);
	free(path);
	free(text);
	dsb_test_rm_rf(dir);
	free(dir);
}

/*
 * LOG_LINE_MAX, with a sparse file so nothing big is written: a line of exactly the limit is
 * read (and refused as JSON, being zeros); one byte more is refused as too long, and memory
 * stays at the limit.
 */
static void test_line_limit(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	const char header[] = HDR "\n";
	for (int over = 0; over <= 1; over++) {
		char *path = tmp_file(dir, "s.jsonl", header, sizeof(header) - 1);
		int fd = open(path, O_WRONLY | O_CLOEXEC);
		assert_true(fd >= 0);
		off_t end = (off_t)(sizeof(header) - 1) + (off_t)LOG_LINE_MAX + over;
		assert_int_equal(pwrite(fd, "\n", 1, end), 1);
		close(fd);

		collect c = {0};
		log_scan_result res;
		dsb_error err;
		int r = scan_path(path, &c, &res, NULL, &err);
		char suffix[128];
		if (over)
			(void)snprintf(suffix, sizeof(suffix),
				       ":2: corrupt session log: line longer than %zu bytes",
				       LOG_LINE_MAX);
		else
			(void)snprintf(suffix, sizeof(suffix), "%s", UNPARSABLE("2"));
		assert_error(r, DSB_E_SESSION_INVALID, &err, path, suffix);
		collect_done(&c);
		free(path);
	}
	dsb_test_rm_rf(dir);
	free(dir);
}

/* --- zstd ---------------------------------------------------------------------------------- */

static const char zlog[] =
	HDR "\n"
	    "{\"type\":\"sandbox/mode\",\"seq\":0,\"data\":{\"mode\":\"read-only\"}}\n"
	    "{\"type\":\"approval/policy\",\"seq\":1,\"data\":{\"policy\":\"ask\"}}\n";

/* The three lines of zlog, each in its own frame; the frame ends in *@ret_ends. */
static char *zlog_frames(size_t *ret_len, size_t ret_ends[3])
{
	char *out = zstd_encode(zlog, sizeof(zlog) - 1, SPLIT_PER_LINE, ret_len);
	size_t pos = 0;
	for (int i = 0; i < 3; i++) {
		pos += ZSTD_findFrameCompressedSize(out + pos, *ret_len - pos);
		ret_ends[i] = pos;
	}
	assert_int_equal(pos, *ret_len);
	return out;
}

static void test_zstd_torn(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	size_t len, ends[3];
	char *z = zlog_frames(&len, ends);

	/* Every cut inside the last frame: torn, the two complete frames committed. */
	for (size_t cut = ends[1] + 1; cut < ends[2]; cut++) {
		char *path = tmp_file(dir, "s.zst", z, cut);
		collect c = {0};
		log_scan_result res;
		dsb_error err;
		if (scan_path(path, &c, &res, NULL, &err) != 0)
			fail_msg("cut %zu: %s", cut, err.message);
		assert_true(res.zstd);
		assert_true(res.torn);
		assert_int_equal(res.n_events, 1);
		assert_int_equal(res.committed_bytes, ends[1]);
		assert_int_equal(res.file_bytes, cut);
		assert_string_equal(c.mode, "read-only");
		assert_null(c.policy); /* nothing of a torn frame is handed over */
		collect_done(&c);
		free(path);
	}
	/* Cut inside the header frame: no header. */
	for (size_t cut = 4; cut < ends[0]; cut += 3) {
		char *path = tmp_file(dir, "s.zst", z, cut);
		collect c = {0};
		log_scan_result res;
		dsb_error err;
		assert_error(scan_path(path, &c, &res, NULL, &err), DSB_E_SESSION_INVALID, &err,
			     path, ": empty or header-less Zstandard session log");
		free(path);
	}
	free(z);
	dsb_test_rm_rf(dir);
	free(dir);
}

static void test_zstd_refusals(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	size_t len, ends[3];
	char *z = zlog_frames(&len, ends);
	collect c = {0};
	log_scan_result res;
	dsb_error err;
	char suffix[160];

	/* A foreign frame after the header (a skippable frame too: DSH refuses it). */
	char *bad = malloc(len + 12);
	memcpy(bad, z, ends[0]);
	memcpy(bad + ends[0],
	       "\x50\x2a\x4d\x18\x04\x00\x00\x00"
	       "abcd",
	       12);
	memcpy(bad + ends[0] + 12, z + ends[0], len - ends[0]);
	char *path = tmp_file(dir, "s.zst", bad, len + 12);
	(void)snprintf(suffix, sizeof(suffix),
		       ": corrupt Zstandard session log: invalid frame magic at byte %zu", ends[0]);
	assert_error(scan_path(path, &c, &res, NULL, &err), DSB_E_SESSION_INVALID, &err, path,
		     suffix);
	free(path);

	/* A damaged checksum: libzstd's verdict, with the frame's offset. */
	memcpy(bad, z, len);
	bad[ends[1] - 1] ^= 0x55;
	path = tmp_file(dir, "s.zst", bad, len);
	(void)snprintf(suffix, sizeof(suffix),
		       ": corrupt Zstandard session log: frame at byte %zu: ", ends[0]);
	assert_int_equal(scan_path(path, &c, &res, NULL, &err), -DSB_E_SESSION_INVALID);
	char *want = message_for(path, suffix);
	assert_memory_equal(err.message, want, strlen(want));
	free(want);
	free(path);
	free(bad);

	/* The header shares its frame with events. */
	size_t n;
	char *one = NULL;
	FILE *f = open_memstream(&one, &n);
	append_frame(f, zlog, sizeof(zlog) - 1);
	fclose(f);
	path = tmp_file(dir, "s.zst", one, n);
	assert_error(scan_path(path, &c, &res, NULL, &err), DSB_E_SESSION_INVALID, &err, path,
		     ": corrupt Zstandard session log: first frame is not exactly one header line");
	free(path);
	free(one);

	/* The header split over two frames. */
	f = open_memstream(&one, &n);
	append_frame(f, zlog, 10);
	append_frame(f, zlog + 10, sizeof(HDR) - 10);
	fclose(f);
	path = tmp_file(dir, "s.zst", one, n);
	assert_error(scan_path(path, &c, &res, NULL, &err), DSB_E_SESSION_INVALID, &err, path,
		     ": corrupt Zstandard session log: first frame is not exactly one header line");
	free(path);
	free(one);

	/* The complete frames end inside a line: DSH refuses, it is no torn tail. */
	f = open_memstream(&one, &n);
	append_frame(f, zlog, sizeof(HDR));
	append_frame(f, zlog + sizeof(HDR), 20);
	fclose(f);
	path = tmp_file(dir, "s.zst", one, n);
	assert_error(
		scan_path(path, &c, &res, NULL, &err), DSB_E_SESSION_INVALID, &err, path,
		": corrupt Zstandard session log: complete frame contains a torn JSONL record");
	free(path);
	free(one);

	/* ... and so is a line that a torn frame would have completed. */
	f = open_memstream(&one, &n);
	append_frame(f, zlog, sizeof(HDR));
	append_frame(f, zlog + sizeof(HDR), 20);
	fclose(f);
	one = realloc(one, n + 3);
	memcpy(one + n, "\x28\xb5\x2f", 3);
	path = tmp_file(dir, "s.zst", one, n + 3);
	assert_error(
		scan_path(path, &c, &res, NULL, &err), DSB_E_SESSION_INVALID, &err, path,
		": corrupt Zstandard session log: complete frame contains a torn JSONL record");
	free(path);
	free(one);

	/* Errors in events name the line of the decompressed text. */
	const char gap[] = HDR "\n{\"type\":\"a\",\"seq\":0}\n{\"type\":\"a\",\"seq\":5}\n";
	one = zstd_encode(gap, sizeof(gap) - 1, SPLIT_BYTES, &n);
	path = tmp_file(dir, "s.zst", one, n);
	assert_error(scan_path(path, &c, &res, NULL, &err), DSB_E_SESSION_INVALID, &err, path,
		     SEQ_GAP("3", "1", "5"));
	free(path);
	free(one);

	collect_done(&c);
	free(z);
	dsb_test_rm_rf(dir);
	free(dir);
}

/* A line split over frames is fine when a later complete frame ends it. */
static void test_zstd_split_line(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	char *one = NULL;
	size_t n;
	FILE *f = open_memstream(&one, &n);
	size_t h = sizeof(HDR);
	append_frame(f, zlog, h);
	append_frame(f, zlog + h, 10);
	append_frame(f, zlog + h + 10, 0); /* an empty frame in between */
	append_frame(f, zlog + h + 10, sizeof(zlog) - 1 - h - 10);
	fclose(f);
	char *path = tmp_file(dir, "s.zst", one, n);
	collect c = {0};
	log_scan_result res;
	dsb_error err;
	assert_int_equal(scan_path(path, &c, &res, NULL, &err), 0);
	assert_int_equal(res.n_events, 2);
	assert_false(res.torn);
	assert_int_equal(res.committed_bytes, n);
	assert_string_equal(c.policy, "ask");
	collect_done(&c);
	free(path);
	free(one);
	dsb_test_rm_rf(dir);
	free(dir);
}

/* --- the callback -------------------------------------------------------------------------- */

static void test_callback(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	size_t zlen, ends[3];
	char *z = zlog_frames(&zlen, ends);
	char *paths[2] = {tmp_file(dir, "s.jsonl", zlog, sizeof(zlog) - 1),
			  tmp_file(dir, "s.zst", z, zlen)};
	for (int i = 0; i < 2; i++) {
		collect c = {.stop_after = 1};
		log_scan_result res;
		dsb_error err;
		assert_int_equal(scan_path(paths[i], &c, &res, NULL, &err), 1);
		assert_int_equal(c.records, 1);
		assert_int_equal(res.n_events, 1);
		assert_int_equal(res.last_seq, 0);
		assert_false(res.torn);
		assert_int_equal(res.committed_bytes,
				 i == 0 ? strchr(strchr(zlog, '\n') + 1, '\n') + 1 - zlog
					: (long)ends[1]);
		collect_done(&c);

		c = (collect){.fail = true};
		assert_int_equal(scan_path(paths[i], &c, &res, NULL, &err), -DSB_E_IO);
		assert_string_equal(err.message, "callback says no");
		collect_done(&c);

		/* No callback, no outputs: still a full check. */
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC);
		assert_int_equal(log_scan(fd, paths[i], NULL, NULL, NULL, NULL, NULL), 0);
		close(fd);
		free(paths[i]);
	}
	free(z);
	dsb_test_rm_rf(dir);
	free(dir);
}

/* Failure never touches the outputs; records are offsets into the text. */
static void test_outputs(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	const char bad[] = HDR "\n{\"type\":\"a\",\"seq\":3}\n";
	char *path = tmp_file(dir, "s.jsonl", bad, sizeof(bad) - 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	log_header h = {.id = NULL, .created_at = 77};
	log_scan_result res = {.n_events = 99};
	assert_int_equal(log_scan(fd, path, &h, NULL, NULL, &res, NULL), -DSB_E_SESSION_INVALID);
	assert_int_equal(h.created_at, 77);
	assert_int_equal(res.n_events, 99);
	assert_int_equal(log_scan(-1, path, &h, NULL, NULL, &res, NULL), -DSB_E_INVALID_ARGS);
	close(fd);
	free(path);

	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dsb_error err;
	assert_int_equal(log_scan(dfd, dir, NULL, NULL, NULL, NULL, &err), -DSB_E_IO);
	close(dfd);

	dsb_test_rm_rf(dir);
	free(dir);
}

static int check_offsets(const log_record *rec, void *userdata, dsb_error *reterr)
{
	(void)reterr;
	const char *text = userdata;
	const char *line = text + rec->offset;
	assert_true(line == text || line[-1] == '\n');
	char *dump = json_dumps(rec->json, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_memory_equal(line, dump, strlen(dump));
	free(dump);
	size_t no = 1;
	for (const char *p = text; p < line; p++)
		no += *p == '\n';
	assert_int_equal(rec->line, no);
	return 0;
}

static void test_record_offsets(void **state)
{
	(void)state;
	char *dir = dsb_test_mkdtemp();
	char *path = tmp_file(dir, "s.jsonl", zlog, sizeof(zlog) - 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_int_equal(log_scan(fd, path, NULL, check_offsets, (void *)zlog, NULL, NULL), 0);
	close(fd);
	free(path);
	dsb_test_rm_rf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures_plain),
		cmocka_unit_test(test_fixtures_zstd),
		cmocka_unit_test(test_fixture_known_pair),
		cmocka_unit_test(test_header_round_trip),
		cmocka_unit_test(test_header_format_order),
		cmocka_unit_test(test_header_table),
		cmocka_unit_test(test_header_values),
		cmocka_unit_test(test_log_table),
		cmocka_unit_test(test_invalid_utf8),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_line_limit),
		cmocka_unit_test(test_zstd_torn),
		cmocka_unit_test(test_zstd_refusals),
		cmocka_unit_test(test_zstd_split_line),
		cmocka_unit_test(test_callback),
		cmocka_unit_test(test_outputs),
		cmocka_unit_test(test_record_offsets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
