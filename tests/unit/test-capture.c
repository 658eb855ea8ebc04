/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the output collectors (dsh-compat §6.3; DSH's OutputCollector cases in
 * subprocess-local/tests/spawn.spec.ts): byte-exact tails whatever the chunking, the spill file's
 * life (created on the first overflow only, whole stream, 0700 dir, 0600 file, exact name,
 * shared counter), the max_spill_bytes cut-off (">": exactly the cap is kept), best-effort spill
 * I/O, bounded memory over a 100 MiB stream, and a spill the confined command cannot redirect
 * (docs/design/spill.md): a TMPDIR with a symlink on its path gets no spill, with or without
 * openat2, and a spill directory swapped for a symlink or another directory mid-run receives
 * nothing more, while what was written lands nowhere else.
 *
 * The redirection fixtures, under a private temp dir T:
 *
 *   T/real/            a real directory: the control, where a spill is made
 *   T/link -> real     a symlink to it: even a harmless link on TMPDIR's path means no spill
 *   T/out/             "outside": where a planted symlink points; must stay untouched
 *   T/out/sub/
 *   T/hop -> out       TMPDIR, or a component of it, replaced by a link outside
 *   T/moved/           where a swapped spill directory is renamed to
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "src/exec/exec.h"
#include "helpers.h"

/* --- helpers --------------------------------------------------------------------------------- */

/* A private temp dir and a spill_dir creating its directory there. */
struct fixture {
	char *tmp;
	spill_dir dir;
};

static void fixture_init(struct fixture *f)
{
	f->tmp = dsb_test_mkdtemp();
	f->dir = (spill_dir){0};
	f->dir.tmpdir = strdup(f->tmp);
	assert_non_null(f->dir.tmpdir);
}

static void fixture_done(struct fixture *f)
{
	dsb_test_rm_rf(f->tmp);
	free(f->tmp);
	spill_dir_done(&f->dir);
}

/* Entries of @path other than . and ..; -1 when it cannot be opened. */
static int count_entries(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void output_done(dsb_output *o)
{
	free(o->text);
	free(o->spill_path);
	*o = (dsb_output){0};
}

static bool matches(const char *pattern, const char *s)
{
	regex_t re;
	assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
	bool ok = regexec(&re, s, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static void assert_mode(const char *path, mode_t type, mode_t perm)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & S_IFMT, type);
	assert_int_equal(st.st_mode & 07777, perm);
}

/* xorshift64*: deterministic bytes, NULs and high bytes included. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

static void rng_fill(uint64_t *s, char *buf, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = rng_next(s);
		memcpy(buf + i, &v, n - i < 8 ? n - i : 8);
	}
}

/* --- the DSH cases and the edges, table-driven ------------------------------------------------ */

struct chunk_case {
	const char *name;
	size_t max_bytes;
	uint64_t max_spill;
	const char *chunks[6]; /* NULL-terminated */
	const char *text;
	bool truncated;
	const char *spill; /* the spill file's content; NULL: no spill path */
	bool dir_made;	   /* the spill directory was created */
};

/* clang-format off: a table reads best one case a line */
static const struct chunk_case chunk_cases[] = {
	{"DSH: tail of a single oversized chunk",
	 10,
	 100,
	 {"0123456789abcdef"},
	 "6789abcdef",
	 true,
	 "0123456789abcdef",
	 true},
	{"DSH: byte-exact tail across uneven chunks",
	 10,
	 0,
	 {"aaaa", "bbbbbb", "cc"},
	 "aabbbbbbcc",
	 true,
	 NULL,
	 false},
	{"exactly max_bytes in two chunks", 5, 100, {"ab", "cde"}, "abcde", false, NULL, false},
	{"exactly max_bytes in one chunk", 5, 100, {"abcde"}, "abcde", false, NULL, false},
	{"max_bytes + 1 in two chunks", 5, 100, {"abc", "def"}, "bcdef", true, "abcdef", true},
	{"max_bytes + 1 in one chunk", 5, 100, {"abcdef"}, "bcdef", true, "abcdef", true},
	{"full tail, then one byte", 5, 100, {"abcde", "f"}, "bcdef", true, "abcdef", true},
	{"chunks after the first overflow",
	 3,
	 100,
	 {"ab", "cd", "ef", "g"},
	 "efg",
	 true,
	 "abcdefg",
	 true},
	{"exactly max_spill bytes is kept", 4, 8, {"aaaa", "bbbb"}, "bbbb", true, "aaaabbbb", true},
	{"max_spill + 1 bytes discards the spill",
	 4,
	 8,
	 {"aaaa", "bbbb", "c"},
	 "bbbc",
	 true,
	 NULL,
	 true},
	{"DSH: discards a spill that exceeds its cap",
	 4,
	 8,
	 {"aaaa", "bbbb", "c", "dddd"},
	 "dddd",
	 true,
	 NULL,
	 true},
	{"DSH: no spill when the first overflow is past the cap",
	 4,
	 4,
	 {"abcdefgh"},
	 "efgh",
	 true,
	 NULL,
	 false},
	{"first overflow exactly at the cap", 4, 8, {"abcdefgh"}, "efgh", true, "abcdefgh", true},
	{"max_bytes 1", 1, 100, {"a", "b", "c"}, "c", true, "abc", true},
	{"max_bytes 1, one byte", 1, 100, {"a"}, "a", false, NULL, false},
	{"max_bytes 1, one long chunk", 1, 100, {"xyz"}, "z", true, "xyz", true},
	{"max_spill 0 keeps the tail only", 4, 0, {"abcdefgh", "ij"}, "ghij", true, NULL, false},
	{"empty stream", 4, 100, {NULL}, "", false, NULL, false},
	{"empty chunks", 4, 100, {"", "ab", "", ""}, "ab", false, NULL, false},
	{"max_bytes 0", 0, 100, {"ab"}, "", true, "ab", true},
};
/* clang-format on */

static void test_chunk_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(chunk_cases); i++) {
		const struct chunk_case *t = &chunk_cases[i];
		struct fixture f;
		dsb_output out = {0};

		print_message("case: %s\n", t->name);
		fixture_init(&f);
		collector *c = collector_new("stdout", t->max_bytes, t->max_spill, &f.dir);
		assert_non_null(c);
		for (size_t k = 0; k < ELEMENTSOF(t->chunks) && t->chunks[k]; k++)
			assert_int_equal(collector_write(c, t->chunks[k], strlen(t->chunks[k])), 0);
		assert_int_equal(collector_finish(c, &out), 0);
		c = collector_free(c);

		assert_int_equal(out.len, strlen(t->text));
		assert_memory_equal(out.text, t->text, out.len + 1);
		assert_int_equal(out.truncated, t->truncated);
		assert_int_equal(f.dir.path != NULL, t->dir_made);
		if (t->spill) {
			size_t len = 0;
			assert_non_null(out.spill_path);
			char *full = dsb_test_read_file(out.spill_path, &len);
			assert_non_null(full);
			assert_int_equal(len, strlen(t->spill));
			assert_memory_equal(full, t->spill, len);
			free(full);
			assert_int_equal(count_entries(f.dir.path), 1);
		} else {
			assert_null(out.spill_path);
			/* A discarded spill leaves nothing behind. */
			if (f.dir.path)
				assert_int_equal(count_entries(f.dir.path), 0);
		}
		output_done(&out);
		fixture_done(&f);
	}
}

/* --- random chunking against a naive reference ----------------------------------------------- */

enum spill_cap {
	CAP_NONE,      /* max_spill 0 */
	CAP_HUGE,      /* far above the stream */
	CAP_EXACT,     /* exactly the stream's size: kept */
	CAP_ONE_SHORT, /* one byte short of the stream: discarded */
};

struct random_case {
	size_t max_bytes;
	size_t max_chunk; /* chunk sizes are uniform in [0, max_chunk] */
	size_t total;
	enum spill_cap cap;
	uint64_t seed;
};

/* clang-format off */
static const struct random_case random_cases[] = {
	{ 1, 5, 2000, CAP_HUGE, 1 },
	{ 7, 3, 5000, CAP_EXACT, 2 },
	{ 7, 40, 5000, CAP_ONE_SHORT, 3 },
	{ 64, 64, 20000, CAP_HUGE, 4 },
	{ 64, 200, 20000, CAP_NONE, 5 },
	{ 1000, 999, 300000, CAP_EXACT, 6 },
	{ 1000, 3001, 300000, CAP_HUGE, 7 },
	{ 4096, 4096, 300000, CAP_ONE_SHORT, 8 },
	{ 4097, 9000, 300000, CAP_HUGE, 9 },
	{ 65536, 70000, 1 << 20, CAP_HUGE, 10 },
	{ 65536, 1000, 1 << 20, CAP_EXACT, 11 },
	{ 300000, 50000, 300000, CAP_HUGE, 12 },  /* exactly max_bytes: never truncated */
	{ 300001, 50000, 300000, CAP_HUGE, 13 },
	{ 299999, 50000, 300000, CAP_HUGE, 14 },  /* max_bytes + 1 */
};
/* clang-format on */

static void test_random_chunks(void **state)
{
	(void)state;
	for (size_t i = 0; i < ELEMENTSOF(random_cases); i++) {
		const struct random_case *t = &random_cases[i];
		uint64_t s = t->seed * 0x9E3779B97F4A7C15ULL;
		struct fixture f;
		dsb_output out = {0};
		uint64_t max_spill = 0;

		switch (t->cap) {
		case CAP_NONE:
			max_spill = 0;
			break;
		case CAP_HUGE:
			max_spill = UINT64_MAX;
			break;
		case CAP_EXACT:
			max_spill = t->total;
			break;
		case CAP_ONE_SHORT:
			max_spill = t->total - 1;
			break;
		}

		print_message("case: max_bytes %zu, chunks <= %zu, %zu bytes, cap %d\n",
			      t->max_bytes, t->max_chunk, t->total, (int)t->cap);
		char *data = malloc(t->total);
		assert_non_null(data);
		rng_fill(&s, data, t->total);

		fixture_init(&f);
		collector *c = collector_new("stderr", t->max_bytes, max_spill, &f.dir);
		assert_non_null(c);
		for (size_t off = 0; off < t->total;) {
			size_t n = (size_t)(rng_next(&s) % (t->max_chunk + 1));
			if (n > t->total - off)
				n = t->total - off;
			assert_int_equal(collector_write(c, data + off, n), 0);
			off += n;
		}
		assert_int_equal(collector_finish(c, &out), 0);
		c = collector_free(c);

		/* The reference: the last max_bytes bytes of the whole stream. */
		size_t keep = t->total < t->max_bytes ? t->total : t->max_bytes;
		assert_int_equal(out.len, keep);
		assert_memory_equal(out.text, data + (t->total - keep), keep);
		assert_int_equal(out.text[out.len], '\0');
		assert_int_equal(out.truncated, t->total > t->max_bytes);

		bool spilled = t->total > t->max_bytes && max_spill > 0 && t->total <= max_spill;
		assert_int_equal(out.spill_path != NULL, spilled);
		if (spilled) {
			size_t len = 0;
			char *full = dsb_test_read_file(out.spill_path, &len);
			assert_non_null(full);
			assert_int_equal(len, t->total);
			assert_memory_equal(full, data, len);
			free(full);
		} else if (f.dir.path) {
			assert_int_equal(count_entries(f.dir.path), 0);
		}
		output_done(&out);
		fixture_done(&f);
		free(data);
	}
}

/* --- the spill file's life, modes and name --------------------------------------------------- */

static char *only_entry(const char *dir)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	char *path = NULL;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		assert_null(path);
		assert_true(asprintf(&path, "%s/%s", dir, e->d_name) > 0);
	}
	closedir(d);
	assert_non_null(path);
	return path;
}

static void assert_spill_name(const spill_dir *d, const char *path, unsigned counter,
			      const char *stream)
{
	char *pattern = NULL;
	size_t n = strlen(d->path);

	assert_int_equal(strncmp(path, d->path, n), 0);
	assert_int_equal(path[n], '/');
	assert_true(asprintf(&pattern, "^dsh-subprocess-%ld-%u-[0-9a-f]{12}-%s\\.log$",
			     (long)getpid(), counter, stream) > 0);
	if (!matches(pattern, path + n + 1))
		fail_msg("spill name '%s' does not match %s", path + n + 1, pattern);
	free(pattern);
}

static void assert_spill_dir(const spill_dir *d, const char *tmp)
{
	size_t n = strlen(tmp);
	assert_non_null(d->path);
	assert_int_equal(strncmp(d->path, tmp, n), 0);
	assert_int_equal(d->path[n], '/');
	assert_true(matches("^dsh-subprocess-[A-Za-z0-9]{6}$", d->path + n + 1));
	assert_mode(d->path, S_IFDIR, 0700);
}

static void assert_file_content(const char *path, const char *expected)
{
	size_t len = 0;
	char *s = dsb_test_read_file(path, &len);
	assert_non_null(s);
	assert_int_equal(len, strlen(expected));
	assert_memory_equal(s, expected, len);
	free(s);
}

static void test_spill_lifecycle(void **state)
{
	(void)state;
	struct fixture f;
	dsb_output out = {0};

	fixture_init(&f);
	collector *c = collector_new("stdout", 8, 100, &f.dir);
	assert_non_null(c);

	/* Up to max_bytes nothing touches the disk, not even the directory. */
	assert_int_equal(collector_write(c, "abcd", 4), 0);
	assert_null(f.dir.path);
	assert_int_equal(collector_write(c, "efgh", 4), 0);
	assert_null(f.dir.path);
	assert_int_equal(count_entries(f.tmp), 0);

	/* The first overflow: the directory, the file, and every byte so far. */
	assert_int_equal(collector_write(c, "i", 1), 0);
	assert_spill_dir(&f.dir, f.tmp);
	assert_int_equal(count_entries(f.tmp), 1);
	char *path = only_entry(f.dir.path);
	assert_spill_name(&f.dir, path, 1, "stdout");
	assert_mode(path, S_IFREG, 0600);
	assert_file_content(path, "abcdefghi");

	/* Later chunks go straight to the file, NULs and all. */
	assert_int_equal(collector_write(c, "jk\0l", 4), 0);
	size_t len = 0;
	char *full = dsb_test_read_file(path, &len);
	assert_int_equal(len, 13);
	assert_memory_equal(full, "abcdefghijk\0l", 13);
	free(full);
	assert_int_equal(collector_finish(c, &out), 0);

	assert_string_equal(out.spill_path, path);
	assert_int_equal(out.len, 8);
	assert_memory_equal(out.text, "fghijk\0l", 9);
	assert_true(out.truncated);
	full = dsb_test_read_file(path, &len);
	assert_int_equal(len, 13);
	assert_memory_equal(full, "abcdefghijk\0l", 13);
	free(full);

	/* The collector is spent. */
	dsb_output again = {0};
	assert_int_equal(collector_write(c, "x", 1), -EINVAL);
	assert_int_equal(collector_finish(c, &again), -EINVAL);
	assert_null(again.text);
	c = collector_free(c);
	assert_null(c);

	/* A completed spill survives the collector and the spill_dir. */
	spill_dir_done(&f.dir);
	assert_mode(path, S_IFREG, 0600);

	free(path);
	output_done(&out);
	fixture_done(&f);
}

/*
 * A background job's reads (DSH's readFrom()): each read returns what came since the offset it
 * got last; once the offset left the tail, the whole tail and lossy, with the spill file's path
 * while it is written. Sealed, the collector stays readable and its spill survives it.
 */
static void test_incremental_reads(void **state)
{
	(void)state;
	struct fixture f;
	collector_read rd = {0};

	fixture_init(&f);
	collector *c = collector_new("stdout", 8, 100, &f.dir);
	assert_non_null(c);

	assert_int_equal(collector_read_from(c, 0, &rd), 0);
	assert_int_equal(rd.len, 0);
	assert_int_equal(rd.next, 0);
	assert_false(rd.lossy);
	assert_null(rd.spill_path);
	free(rd.text);

	assert_int_equal(collector_write(c, "abc", 3), 0);
	assert_int_equal(collector_read_from(c, 0, &rd), 0);
	assert_memory_equal(rd.text, "abc", 4);
	assert_int_equal(rd.next, 3);
	free(rd.text);
	assert_int_equal(collector_write(c, "de", 2), 0);
	assert_int_equal(collector_read_from(c, 3, &rd), 0);
	assert_memory_equal(rd.text, "de", 3);
	assert_int_equal(rd.next, 5);
	assert_false(rd.lossy);
	free(rd.text);
	/* A read never consumes: the same offset reads the same bytes. */
	assert_int_equal(collector_read_from(c, 3, &rd), 0);
	assert_memory_equal(rd.text, "de", 3);
	free(rd.text);

	/* 8 more: the tail lost only bytes already read, so offset 5 is its start, not lossy. */
	assert_int_equal(collector_write(c, "fghijklm", 8), 0);
	assert_int_equal(collector_read_from(c, 5, &rd), 0);
	assert_false(rd.lossy);
	assert_memory_equal(rd.text, "fghijklm", 9);
	free(rd.text);
	free(rd.spill_path);
	/* One more: offset 5 has left the tail, so the whole tail, lossy. */
	assert_int_equal(collector_write(c, "n", 1), 0);
	assert_int_equal(collector_read_from(c, 5, &rd), 0);
	assert_true(rd.lossy);
	assert_int_equal(rd.len, 8);
	assert_memory_equal(rd.text, "ghijklmn", 9);
	assert_int_equal(rd.next, 14);
	assert_non_null(rd.spill_path);
	char *path = only_entry(f.dir.path);
	assert_string_equal(rd.spill_path, path);
	free(rd.text);
	free(rd.spill_path);
	/* Within the tail again: only the new bytes. */
	assert_int_equal(collector_write(c, "o", 1), 0);
	assert_int_equal(collector_read_from(c, 14, &rd), 0);
	assert_false(rd.lossy);
	assert_memory_equal(rd.text, "o", 2);
	free(rd.text);
	free(rd.spill_path);

	/* Sealed: no more writes, still readable, the snapshot has the complete spill. */
	collector_seal(c);
	assert_int_equal(collector_write(c, "x", 1), -EINVAL);
	dsb_output out = {0};
	assert_int_equal(collector_snapshot(c, &out), 0);
	assert_int_equal(out.len, 8);
	assert_memory_equal(out.text, "hijklmno", 9);
	assert_true(out.truncated);
	assert_string_equal(out.spill_path, path);
	assert_int_equal(collector_read_from(c, 15, &rd), 0);
	assert_int_equal(rd.len, 0);
	free(rd.text);
	free(rd.spill_path);
	c = collector_free(c);
	spill_dir_done(&f.dir);
	/* The sealed spill is complete: it outlives the collector. */
	assert_file_content(path, "abcdefghijklmno");
	assert_int_equal(unlink(path), 0);
	free(path);
	output_done(&out);
	fixture_done(&f);
}

static void test_two_collectors_share_dir(void **state)
{
	(void)state;
	struct fixture f;
	dsb_output o = {0}, e = {0};

	fixture_init(&f);
	collector *out = collector_new("stdout", 4, 100, &f.dir);
	collector *err = collector_new("stderr", 4, 100, &f.dir);
	assert_non_null(out);
	assert_non_null(err);

	/* stderr overflows first, so it takes counter 1. */
	assert_int_equal(collector_write(out, "1234", 4), 0);
	assert_int_equal(collector_write(err, "abcde", 5), 0);
	assert_int_equal(collector_write(out, "56", 2), 0);
	assert_int_equal(collector_write(err, "f", 1), 0);
	assert_int_equal(collector_finish(out, &o), 0);
	assert_int_equal(collector_finish(err, &e), 0);
	out = collector_free(out);
	err = collector_free(err);

	assert_spill_dir(&f.dir, f.tmp);
	assert_int_equal(count_entries(f.tmp), 1);
	assert_int_equal(count_entries(f.dir.path), 2);
	assert_non_null(o.spill_path);
	assert_non_null(e.spill_path);
	assert_spill_name(&f.dir, e.spill_path, 1, "stderr");
	assert_spill_name(&f.dir, o.spill_path, 2, "stdout");
	assert_int_equal(f.dir.counter, 2);
	assert_mode(o.spill_path, S_IFREG, 0600);
	assert_mode(e.spill_path, S_IFREG, 0600);
	assert_file_content(o.spill_path, "123456");
	assert_file_content(e.spill_path, "abcdef");
	assert_string_equal(o.text, "3456");
	assert_string_equal(e.text, "cdef");

	/* The random parts differ even though everything else is alike. */
	const char *ob = base_name(o.spill_path), *eb = base_name(e.spill_path);
	size_t prefix =
		strlen("dsh-subprocess-") + (size_t)snprintf(NULL, 0, "%ld-1-", (long)getpid());
	assert_memory_not_equal(ob + prefix, eb + prefix, 12);

	output_done(&o);
	output_done(&e);
	fixture_done(&f);
}

/* A NULL spill_dir.tmpdir means os.tmpdir(): TMPDIR, with one trailing '/' dropped. */
static void test_default_tmpdir(void **state)
{
	(void)state;
	char *tmp = dsb_test_mkdtemp();
	char *saved = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	char *with_slash = NULL;
	spill_dir d = {0};
	dsb_output out = {0};

	assert_true(asprintf(&with_slash, "%s/", tmp) > 0);
	assert_int_equal(setenv("TMPDIR", with_slash, 1), 0);
	collector *c = collector_new("stdout", 2, 100, &d);
	assert_non_null(c);
	assert_int_equal(collector_write(c, "abc", 3), 0);
	assert_int_equal(collector_finish(c, &out), 0);
	c = collector_free(c);
	if (saved)
		assert_int_equal(setenv("TMPDIR", saved, 1), 0);
	else
		assert_int_equal(unsetenv("TMPDIR"), 0);

	assert_spill_dir(&d, tmp);
	assert_non_null(out.spill_path);
	assert_spill_name(&d, out.spill_path, 1, "stdout");
	assert_file_content(out.spill_path, "abc");

	output_done(&out);
	spill_dir_done(&d);
	dsb_test_rm_rf(tmp);
	free(tmp);
	free(saved);
	free(with_slash);
}

/* --- spill I/O failures never fail the run --------------------------------------------------- */

enum io_failure {
	FAIL_MISSING_TMPDIR, /* the temp dir does not exist */
	FAIL_TMPDIR_IS_FILE, /* the temp dir is a regular file */
	FAIL_DIR_REMOVED,    /* the shared spill dir was removed after an earlier spill */
	FAIL_NAME_TOO_LONG,  /* the spill file's name cannot be created */
};

static void test_spill_io_failure(void **state)
{
	(void)state;
	static const enum io_failure cases[] = {FAIL_MISSING_TMPDIR, FAIL_TMPDIR_IS_FILE,
						FAIL_DIR_REMOVED, FAIL_NAME_TOO_LONG};
	char stream[256];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		struct fixture f;
		dsb_output out = {0};
		const char *label = "stdout";

		fixture_init(&f);
		free(f.dir.tmpdir);
		f.dir.tmpdir = NULL;
		switch (cases[i]) {
		case FAIL_MISSING_TMPDIR:
			assert_true(asprintf(&f.dir.tmpdir, "%s/missing/deeper", f.tmp) > 0);
			break;
		case FAIL_TMPDIR_IS_FILE:
			assert_true(asprintf(&f.dir.tmpdir, "%s/file", f.tmp) > 0);
			dsb_test_write_file(f.dir.tmpdir, "x", 1);
			break;
		case FAIL_DIR_REMOVED: {
			f.dir.tmpdir = strdup(f.tmp);
			collector *first = collector_new("stderr", 1, 100, &f.dir);
			assert_non_null(first);
			assert_int_equal(collector_write(first, "ab", 2), 0);
			assert_int_equal(collector_finish(first, &out), 0);
			first = collector_free(first);
			assert_non_null(out.spill_path);
			output_done(&out);
			dsb_test_rm_rf(f.dir.path);
			break;
		}
		case FAIL_NAME_TOO_LONG:
			f.dir.tmpdir = strdup(f.tmp);
			memset(stream, 'x', sizeof(stream) - 1);
			stream[sizeof(stream) - 1] = '\0';
			label = stream;
			break;
		}
		print_message("case: %d\n", (int)cases[i]);

		collector *c = collector_new(label, 100, 1 << 20, &f.dir);
		assert_non_null(c);
		char chunk[1000];
		for (int k = 0; k < 10; k++) {
			memset(chunk, 'a' + k, sizeof(chunk));
			assert_int_equal(collector_write(c, chunk, sizeof(chunk)), 0);
		}
		assert_int_equal(collector_finish(c, &out), 0);
		c = collector_free(c);

		assert_int_equal(out.len, 100);
		assert_memory_equal(out.text, chunk, 100);
		assert_true(out.truncated);
		assert_null(out.spill_path);
		if (cases[i] == FAIL_NAME_TOO_LONG)
			assert_int_equal(count_entries(f.dir.path), 0);
		output_done(&out);
		fixture_done(&f);
	}
}

/*
 * A write error in the middle of the stream (EFBIG past RLIMIT_FSIZE, in a child so the limit
 * stays there): spilling stops, the partial file goes, the tail is intact.
 */
static int efbig_child(const char *tmp)
{
	spill_dir d = {0};
	dsb_output out = {0};
	char chunk[1000];

	if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR)
		return 10;
	struct rlimit rl = {.rlim_cur = 4096, .rlim_max = 4096};
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		return 11;
	d.tmpdir = strdup(tmp);
	collector *c = collector_new("stderr", 100, 1 << 20, &d);
	if (!d.tmpdir || !c)
		return 12;
	for (int k = 0; k < 10; k++) {
		memset(chunk, 'a' + k, sizeof(chunk));
		if (collector_write(c, chunk, sizeof(chunk)) != 0)
			return 13;
	}
	if (collector_finish(c, &out) != 0)
		return 14;
	c = collector_free(c);
	if (out.len != 100 || memcmp(out.text, chunk, 100) != 0 || !out.truncated)
		return 15;
	if (out.spill_path)
		return 16;
	if (!d.path || count_entries(d.path) != 0)
		return 17;
	output_done(&out);
	spill_dir_done(&d);
	return 0;
}

static void test_spill_write_failure(void **state)
{
	(void)state;
	char *tmp = dsb_test_mkdtemp();
	int status = 0;

	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(efbig_child(tmp));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	dsb_test_rm_rf(tmp);
	free(tmp);
}

/* Freeing an unfinished collector removes its incomplete spill. */
static void test_free_unfinished(void **state)
{
	(void)state;
	struct fixture f;

	fixture_init(&f);
	collector *c = collector_new("stdout", 2, 100, &f.dir);
	assert_non_null(c);
	assert_int_equal(collector_write(c, "abcdef", 6), 0);
	assert_int_equal(count_entries(f.dir.path), 1);
	c = collector_free(c);
	assert_int_equal(count_entries(f.dir.path), 0);
	assert_null(collector_free(NULL));
	fixture_done(&f);
}

/* --- a spill the confined command cannot redirect -------------------------------------------- */

/* In a forked child cmocka must not assert: report the line and fail with a status instead. */
#define CHECK(cond)                                                                         \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
			return 1;                                                           \
		}                                                                           \
	} while (0)

static char *tpath(const char *t, const char *rel)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", t, rel) > 0);
	return p;
}

/* Builds the tree of the file comment under @t (realpath(T)). */
static void make_redirect_tree(const char *t)
{
	static const char *dirs[] = {"real", "out", "out/sub", "moved"};
	static const char *links[][2] = {{"link", "real"}, {"hop", "out"}};

	for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
		char *p = tpath(t, dirs[i]);
		assert_int_equal(mkdir(p, 0755), 0);
		free(p);
	}
	for (size_t i = 0; i < ELEMENTSOF(links); i++) {
		char *p = tpath(t, links[i][0]);
		assert_int_equal(symlink(links[i][1], p), 0);
		free(p);
	}
}

/* One case a line, aligned: clang-format would spread each over several. */
/* clang-format off */
static const struct {
	const char *tmpdir; /* under T */
	bool spills;
} symlink_cases[] = {
	{ "real",	    true },  /* the control: no symlink, a spill */
	{ "real/",	    true },
	{ "out/../real",    true },  /* ".." is no symlink */
	{ "link",	    false }, /* TMPDIR itself a symlink, even to a harmless place */
	{ "link/",	    false },
	{ "hop",	    false }, /* TMPDIR replaced by a link outside */
	{ "hop/",	    false },
	{ "hop/sub",	    false }, /* a component of TMPDIR replaced by a link outside */
	{ "link/../out",    false },
};
/* clang-format on */

/* Entries of T/out and T/out/sub together; T/out holds only sub at the start. */
static int outside_entries(const char *t)
{
	char *out = tpath(t, "out"), *sub = tpath(t, "out/sub");
	int n = count_entries(out) + count_entries(sub);
	free(out);
	free(sub);
	return n;
}

/* One case of symlink_cases: 0, or 1 with a line on stderr. Runs in the parent or a child. */
static int symlink_case(const char *t, size_t i)
{
	spill_dir d = {0};
	dsb_output out = {0};
	int r = 0;

	if (asprintf(&d.tmpdir, "%s/%s", t, symlink_cases[i].tmpdir) < 0)
		return 1;
	collector *c = collector_new("stdout", 4, 1000, &d);
	CHECK(c);
	CHECK(collector_write(c, "0123456789", 10) == 0);
	CHECK(collector_finish(c, &out) == 0);
	c = collector_free(c);

	CHECK(out.len == 4 && memcmp(out.text, "6789", 5) == 0 && out.truncated);
	if (symlink_cases[i].spills) {
		CHECK(out.spill_path && d.path);
		size_t len = 0;
		char *full = dsb_test_read_file(out.spill_path, &len);
		CHECK(full && len == 10 && memcmp(full, "0123456789", 10) == 0);
		free(full);
		/* The control spills where TMPDIR really is, T/real. */
		char *real = tpath(t, "real");
		CHECK(count_entries(real) == 1);
		CHECK(unlink(out.spill_path) == 0);
		free(real);
	} else {
		if (out.spill_path || d.path) {
			fprintf(stderr, "TMPDIR \"%s\": spilled to %s\n", d.tmpdir,
				out.spill_path ? out.spill_path : d.path);
			r = 1;
		}
	}
	/* Nothing was made outside, nor in the real directory behind a link. */
	CHECK(outside_entries(t) == 1);
	output_done(&out);
	spill_dir_done(&d);
	char *real = tpath(t, "real");
	CHECK(count_entries(real) == 0);
	free(real);
	return r;
}

static int symlink_table(const char *t)
{
	int failed = 0;
	for (size_t i = 0; i < ELEMENTSOF(symlink_cases); i++)
		if (symlink_case(t, i) != 0) {
			fprintf(stderr, "case TMPDIR=T/%s failed\n", symlink_cases[i].tmpdir);
			failed++;
		}
	return failed;
}

/* A TMPDIR with a symlink anywhere on its path gets no spill, and nothing lands behind it. */
static void test_tmpdir_symlink_no_spill(void **state)
{
	(void)state;
	char *tmp = dsb_test_mkdtemp();
	char *t = realpath(tmp, NULL);

	assert_non_null(t);
	make_redirect_tree(t);
	assert_int_equal(symlink_table(t), 0);
	dsb_test_rm_rf(tmp);
	free(tmp);
	free(t);
}

static int symlink_table_without_openat2(void *arg, int err)
{
	if (dsb_test_hide_openat2(err) != 0)
		return 2;
	return symlink_table(arg) ? 1 : 0;
}

static int symlink_table_enosys(void *arg)
{
	return symlink_table_without_openat2(arg, ENOSYS);
}

static int symlink_table_eperm(void *arg)
{
	return symlink_table_without_openat2(arg, EPERM);
}

/* The same without openat2: an old kernel (ENOSYS) or a seccomp profile's EPERM. */
static void test_tmpdir_symlink_no_spill_without_openat2(void **state)
{
	(void)state;
	char *tmp = dsb_test_mkdtemp();
	char *t = realpath(tmp, NULL);

	assert_non_null(t);
	make_redirect_tree(t);
	assert_int_equal(dsb_test_run_in_child(symlink_table_enosys, t), 0);
	assert_int_equal(dsb_test_run_in_child(symlink_table_eperm, t), 0);
	dsb_test_rm_rf(tmp);
	free(tmp);
	free(t);
}

/* What the command puts where the spill directory was, after moving it to T/moved/NAME. */
enum swap {
	SWAP_SYMLINK_OUT, /* a symlink to T/out */
	SWAP_DIRECTORY,	  /* an empty directory of its own */
};

struct swapped {
	char *t;       /* realpath(T) */
	char *tmp;     /* T as made */
	char *dirpath; /* the spill directory's path as reported */
	char *moved;   /* where the real spill directory went */
	spill_dir dir;
};

/* Makes the tree and the spill_dir, and spills "abcdef" from @c so the directory exists. */
static void swapped_init(struct swapped *s, collector **c, uint64_t max_spill)
{
	s->tmp = dsb_test_mkdtemp();
	s->t = realpath(s->tmp, NULL);
	assert_non_null(s->t);
	make_redirect_tree(s->t);
	s->dir = (spill_dir){0};
	s->dir.tmpdir = strdup(s->t);
	*c = collector_new("stdout", 4, max_spill, &s->dir);
	assert_non_null(*c);
	assert_int_equal(collector_write(*c, "abcdef", 6), 0);
	assert_non_null(s->dir.path);
	s->dirpath = strdup(s->dir.path);
	assert_true(asprintf(&s->moved, "%s/moved/%s", s->t, base_name(s->dirpath)) > 0);
}

/* The command's move: rename the spill directory away and put @how in its place. */
static void swap_dir(struct swapped *s, enum swap how)
{
	assert_int_equal(rename(s->dirpath, s->moved), 0);
	switch (how) {
	case SWAP_SYMLINK_OUT: {
		char *out = tpath(s->t, "out");
		assert_int_equal(symlink(out, s->dirpath), 0);
		free(out);
		break;
	}
	case SWAP_DIRECTORY:
		assert_int_equal(mkdir(s->dirpath, 0700), 0);
		break;
	}
}

static void swapped_done(struct swapped *s)
{
	spill_dir_done(&s->dir);
	dsb_test_rm_rf(s->tmp);
	free(s->tmp);
	free(s->t);
	free(s->dirpath);
	free(s->moved);
}

/* A file path with its directory replaced: @dir/basename(@path). */
static char *rebase(const char *dir, const char *path)
{
	char *p = NULL;
	assert_true(asprintf(&p, "%s/%s", dir, base_name(path)) > 0);
	return p;
}

/*
 * Between stdout's spill and stderr's, the command renames the spill directory away and puts a
 * symlink to T/out (or a directory of its own) in its place. stderr gets no spill (its path
 * would name something else) and nothing appears in T/out; stdout's open spill goes on in the
 * real directory, wherever it went; at the end the replacement is left alone.
 */
static void test_spill_dir_swapped(void **state)
{
	(void)state;
	static const enum swap swaps[] = {SWAP_SYMLINK_OUT, SWAP_DIRECTORY};

	for (size_t i = 0; i < ELEMENTSOF(swaps); i++) {
		struct swapped s;
		collector *out = NULL;
		dsb_output o = {0}, e = {0};

		print_message("case: swapped for %s\n",
			      swaps[i] == SWAP_SYMLINK_OUT ? "a symlink outside" : "a directory");
		swapped_init(&s, &out, 100);
		collector *err = collector_new("stderr", 4, 100, &s.dir);
		assert_non_null(err);
		swap_dir(&s, swaps[i]);

		assert_int_equal(collector_write(err, "ABCDEF", 6), 0);
		assert_int_equal(collector_write(out, "gh", 2), 0);
		assert_int_equal(collector_finish(out, &o), 0);
		assert_int_equal(collector_finish(err, &e), 0);
		out = collector_free(out);
		err = collector_free(err);

		assert_string_equal(e.text, "CDEF");
		assert_true(e.truncated);
		assert_null(e.spill_path);
		assert_int_equal(outside_entries(s.t), 1);
		if (swaps[i] == SWAP_DIRECTORY)
			assert_int_equal(count_entries(s.dirpath), 0);

		/* stdout's spill was open before the swap: complete, in the real directory. */
		assert_non_null(o.spill_path);
		assert_spill_name(&s.dir, o.spill_path, 1, "stdout");
		assert_int_equal(count_entries(s.moved), 1);
		char *real_file = rebase(s.moved, o.spill_path);
		assert_file_content(real_file, "abcdefgh");
		assert_mode(real_file, S_IFREG, 0600);
		free(real_file);

		/* The end leaves the command's replacement where it is. */
		spill_dir_done(&s.dir);
		struct stat st;
		assert_int_equal(lstat(s.dirpath, &st), 0);
		assert_int_equal(st.st_mode & S_IFMT,
				 swaps[i] == SWAP_SYMLINK_OUT ? S_IFLNK : S_IFDIR);
		assert_int_equal(outside_entries(s.t), 1);

		output_done(&o);
		output_done(&e);
		swapped_done(&s);
	}
}

/*
 * A spill discarded after the swap (the stream passed max_spill_bytes) is unlinked in the real
 * directory, never by path: a file of the same name behind the symlink survives.
 */
static void test_spill_discard_after_swap(void **state)
{
	(void)state;
	struct swapped s;
	collector *out = NULL;
	dsb_output o = {0};

	swapped_init(&s, &out, 8);
	char *file = only_entry(s.dirpath);
	swap_dir(&s, SWAP_SYMLINK_OUT);
	char *decoy = rebase(s.dirpath, file); /* through the symlink: T/out/NAME */
	dsb_test_write_file(decoy, "decoy", 5);

	assert_int_equal(collector_write(out, "ghi", 3), 0); /* 9 > 8: discarded */
	assert_int_equal(collector_finish(out, &o), 0);
	out = collector_free(out);

	assert_null(o.spill_path);
	assert_string_equal(o.text, "fghi");
	assert_file_content(decoy, "decoy");
	assert_int_equal(count_entries(s.moved), 0);
	assert_int_equal(outside_entries(s.t), 2);

	free(file);
	free(decoy);
	output_done(&o);
	swapped_done(&s);
}

/* Whether descriptor @fd has FD_CLOEXEC. */
static bool cloexec(int fd)
{
	int flags = fcntl(fd, F_GETFD);
	return flags >= 0 && (flags & FD_CLOEXEC);
}

/*
 * Every descriptor of the spill (TMPDIR, the directory, the file) is close-on-exec, so none can
 * reach a command spawned later, and the directory ones are the directories the paths name.
 */
static void test_spill_descriptors(void **state)
{
	(void)state;
	struct fixture f;
	struct stat a, b;
	char target[PATH_MAX];
	int n_file_fds = 0;

	fixture_init(&f);
	collector *c = collector_new("stdout", 2, 100, &f.dir);
	assert_non_null(c);
	assert_int_equal(collector_write(c, "abc", 3), 0);
	assert_non_null(f.dir.path);

	assert_true(cloexec(f.dir.base_fd));
	assert_true(cloexec(f.dir.fd));
	assert_true(fcntl(f.dir.base_fd, F_GETFL) & O_PATH);
	assert_int_equal(fstat(f.dir.base_fd, &a), 0);
	assert_int_equal(stat(f.tmp, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	assert_int_equal(fstat(f.dir.fd, &a), 0);
	assert_int_equal(stat(f.dir.path, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	assert_true(a.st_dev == f.dir.dev && a.st_ino == f.dir.ino);
	assert_string_equal(f.dir.name, base_name(f.dir.path));

	/* The open spill file: found through /proc/self/fd, since the collector is opaque. */
	char *file = only_entry(f.dir.path);
	char *real_file = realpath(file, NULL);
	assert_non_null(real_file);
	DIR *fds = opendir("/proc/self/fd");
	assert_non_null(fds);
	struct dirent *ent;
	while ((ent = readdir(fds))) {
		if (ent->d_name[0] == '.')
			continue;
		ssize_t k = readlinkat(dirfd(fds), ent->d_name, target, sizeof(target) - 1);
		if (k < 0)
			continue;
		target[k] = '\0';
		if (strcmp(target, real_file) == 0) {
			assert_true(cloexec(atoi(ent->d_name)));
			n_file_fds++;
		}
	}
	closedir(fds);
	assert_int_equal(n_file_fds, 1);

	c = collector_free(c);
	/* The discarded spill's directory was empty, so it went; its descriptors are closed. */
	int base_fd = f.dir.base_fd, dir_fd = f.dir.fd;
	char *dirpath = strdup(f.dir.path);
	spill_dir_done(&f.dir);
	assert_int_equal(access(dirpath, F_OK), -1);
	assert_int_equal(fcntl(base_fd, F_GETFD), -1);
	assert_int_equal(fcntl(dir_fd, F_GETFD), -1);
	assert_null(f.dir.path);

	free(dirpath);
	free(file);
	free(real_file);
	fixture_done(&f);
}

/* --- 100 MiB: bounded memory, the whole stream on disk --------------------------------------- */

#define BIG_CHUNK  (64 * 1024)
#define BIG_CHUNKS 1600 /* 100 MiB */
#define BIG_TAIL   64000

/* Chunk @i: a fixed random block stamped with its index, so a shifted copy would not match. */
static void big_chunk(const char *block, size_t i, char *chunk)
{
	uint64_t v = i;
	memcpy(chunk, block, BIG_CHUNK);
	memcpy(chunk, &v, sizeof(v));
	memcpy(chunk + BIG_CHUNK - sizeof(v), &v, sizeof(v));
}

static long max_rss_kib(void)
{
	struct rusage ru;
	assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
	return ru.ru_maxrss;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_100mib(void **state)
{
	(void)state;
	struct fixture f;
	dsb_output out = {0};
	uint64_t s = 42;
	char *block = malloc(BIG_CHUNK), *chunk = malloc(BIG_CHUNK), *back = malloc(BIG_CHUNK);

	assert_non_null(block);
	assert_non_null(chunk);
	assert_non_null(back);
	rng_fill(&s, block, BIG_CHUNK);
	fixture_init(&f);

	long rss_before = max_rss_kib();
	double t0 = now_s();
	collector *c = collector_new("stdout", BIG_TAIL, 128ULL << 20, &f.dir);
	assert_non_null(c);
	for (size_t i = 0; i < BIG_CHUNKS; i++) {
		big_chunk(block, i, chunk);
		assert_int_equal(collector_write(c, chunk, BIG_CHUNK), 0);
	}
	assert_int_equal(collector_finish(c, &out), 0);
	c = collector_free(c);
	double elapsed = now_s() - t0;
	long rss_growth = max_rss_kib() - rss_before;
	print_message("100 MiB through the collector in %.3f s, peak RSS growth %ld KiB\n", elapsed,
		      rss_growth);

	/* Memory: the ring is BIG_TAIL bytes whatever the stream; allow allocator slack. */
	assert_true(rss_growth < 16 * 1024);
	/* Generous: sanitizers and debug builds are slow; a release build takes a fraction. */
	assert_true(elapsed < 20.0);

	big_chunk(block, BIG_CHUNKS - 1, chunk);
	assert_int_equal(out.len, BIG_TAIL);
	assert_memory_equal(out.text, chunk + (BIG_CHUNK - BIG_TAIL), BIG_TAIL);
	assert_true(out.truncated);

	assert_non_null(out.spill_path);
	struct stat st;
	assert_int_equal(stat(out.spill_path, &st), 0);
	assert_int_equal(st.st_size, (off_t)BIG_CHUNK * BIG_CHUNKS);
	int fd = open(out.spill_path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (size_t i = 0; i < BIG_CHUNKS; i++) {
		size_t got = 0;
		while (got < BIG_CHUNK) {
			ssize_t k = read(fd, back + got, BIG_CHUNK - got);
			assert_true(k > 0);
			got += (size_t)k;
		}
		big_chunk(block, i, chunk);
		if (memcmp(back, chunk, BIG_CHUNK) != 0)
			fail_msg("spill chunk %zu differs", i);
	}
	assert_int_equal(read(fd, back, 1), 0);
	close(fd);
	assert_int_equal(unlink(out.spill_path), 0);

	output_done(&out);
	fixture_done(&f);
	free(block);
	free(chunk);
	free(back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First, so the RSS peak it measures is its own. */
		cmocka_unit_test(test_100mib),
		cmocka_unit_test(test_chunk_cases),
		cmocka_unit_test(test_random_chunks),
		cmocka_unit_test(test_spill_lifecycle),
		cmocka_unit_test(test_incremental_reads),
		cmocka_unit_test(test_two_collectors_share_dir),
		cmocka_unit_test(test_default_tmpdir),
		cmocka_unit_test(test_spill_io_failure),
		cmocka_unit_test(test_spill_write_failure),
		cmocka_unit_test(test_free_unfinished),
		cmocka_unit_test(test_tmpdir_symlink_no_spill),
		cmocka_unit_test(test_tmpdir_symlink_no_spill_without_openat2),
		cmocka_unit_test(test_spill_dir_swapped),
		cmocka_unit_test(test_spill_discard_after_swap),
		cmocka_unit_test(test_spill_descriptors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
