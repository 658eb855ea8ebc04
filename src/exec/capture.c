/* SPDX-License-Identifier: MIT */
/*
 * Per-stream output collectors (spec §6.3, DSH's OutputCollector): an in-memory ring holding the
 * last max_bytes bytes of the stream, byte-exact whatever the chunking, and a spill file that
 * holds every byte of the stream from the first overflow on, until the stream passes
 * max_spill_bytes. Memory stays bounded by max_bytes whatever the stream size: the ring grows
 * with the data up to max_bytes and then wraps; chunks are copied with at most two memcpy()s.
 *
 * The spill is best effort: any I/O error (no temp dir, a full disk, a failed close) disables
 * it and removes what was written, and the run goes on with its tail. Only OOM fails a write.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exec.h"

/* The ring's first allocation; it then doubles until max_bytes. */
#define RING_MIN_CAP 4096

struct collector {
	char *stream; /* "stdout" / "stderr": the file name's label */
	size_t max_bytes;
	uint64_t max_spill_bytes; /* 0: never spill */
	spill_dir *dir;		  /* borrowed; shared by the collectors of one run */

	/*
	 * The tail: len bytes starting at ring[start], wrapping at cap. While cap < max_bytes the
	 * ring has never dropped a byte, so start is 0 and the data is linear (realloc keeps it).
	 */
	char *ring;
	size_t cap;
	size_t start;
	size_t len;

	uint64_t total; /* every byte ever taken, not only the retained ones */
	bool truncated;

	bool spill_off; /* disabled: never enabled, over the cap, or after an I/O error */
	int spill_fd;
	char *spill_path;

	bool finished;
};

void spill_dir_done(spill_dir *d)
{
	if (!d)
		return;
	/*
	 * Completed spill files are never deleted (§6.3), so their directory stays; one left
	 * empty by discarded spills goes (rmdir refuses a directory that is not empty).
	 */
	if (d->path)
		(void)rmdir(d->path);
	free(d->path);
	free(d->tmpdir);
	d->path = d->tmpdir = NULL;
	d->counter = 0;
}

collector *collector_new(const char *stream, size_t max_bytes, uint64_t max_spill_bytes,
			 spill_dir *dir)
{
	collector *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->stream = strdup(stream ? stream : "stdout");
	if (!c->stream) {
		free(c);
		return NULL;
	}
	c->max_bytes = max_bytes;
	c->max_spill_bytes = max_spill_bytes;
	c->dir = dir;
	c->spill_fd = -1;
	c->spill_off = max_spill_bytes == 0 || !dir;
	return c;
}

/* Stops spilling for good and removes the partial file: nobody will be told its path. */
static void spill_discard(collector *c)
{
	c->spill_off = true;
	if (c->spill_fd >= 0) {
		(void)close(c->spill_fd);
		c->spill_fd = -1;
	}
	if (c->spill_path) {
		/* A failed unlink leaves at most max_spill_bytes behind, never an unbounded file.
		 */
		(void)unlink(c->spill_path);
		free(c->spill_path);
		c->spill_path = NULL;
	}
}

collector *collector_free(collector *c)
{
	if (!c)
		return NULL;
	/* An unfinished spill is incomplete and its path is never reported: remove it. */
	spill_discard(c);
	free(c->ring);
	free(c->stream);
	free(c);
	return NULL;
}

static int write_all(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, buf, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		buf += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * The shared spill directory, created on the first spill of the run: a fresh mkdtemp() directory
 * (mode 0700) rather than the shared temp dir itself, so other local users can neither read the
 * output nor plant symlinks at predictable names.
 */
static int spill_dir_ensure(spill_dir *d)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_free_ char *tmpl = NULL;
	const char *base = d->tmpdir;
	int r;

	if (d->path)
		return 0;
	if (!base) {
		r = tmpdir_get(&tmp);
		if (r < 0)
			return r;
		base = tmp;
	}
	/* path.join(): no doubled '/' when the temp dir is the root. */
	size_t n = strlen(base);
	if (asprintf(&tmpl, "%s%sdsh-subprocess-XXXXXX", base,
		     n > 0 && base[n - 1] == '/' ? "" : "/") < 0) {
		tmpl = NULL;
		return -ENOMEM;
	}
	if (!mkdtemp(tmpl))
		return -errno;
	d->path = TAKE_PTR(tmpl);
	return 0;
}

/* Creates the spill file and writes the bytes seen so far (the whole ring: nothing dropped yet). */
static int spill_open(collector *c)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char rnd[6];
	char suffix[2 * sizeof(rnd) + 1];
	unsigned counter;
	int r;

	r = spill_dir_ensure(c->dir);
	if (r < 0)
		return r;

	/* As DSH: the counter moves once per spill file attempted, before the random part. */
	counter = ++c->dir->counter;
	for (size_t got = 0; got < sizeof(rnd);) {
		ssize_t k = getrandom(rnd + got, sizeof(rnd) - got, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)k;
	}
	for (size_t i = 0; i < sizeof(rnd); i++) {
		suffix[2 * i] = hex[rnd[i] >> 4];
		suffix[2 * i + 1] = hex[rnd[i] & 0xf];
	}
	suffix[2 * sizeof(rnd)] = '\0';

	if (asprintf(&c->spill_path, "%s/dsh-subprocess-%ld-%u-%s-%s.log", c->dir->path,
		     (long)getpid(), counter, suffix, c->stream) < 0) {
		c->spill_path = NULL;
		return -ENOMEM;
	}
	/* O_EXCL fails on any existing entry, a symlink included; 0600 keeps the output private. */
	c->spill_fd = open(c->spill_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (c->spill_fd < 0) {
		r = -errno;
		/* Not ours: never unlink what O_EXCL found there. */
		free(c->spill_path);
		c->spill_path = NULL;
		return r;
	}

	size_t first = c->len;
	if (first > c->cap - c->start)
		first = c->cap - c->start;
	r = write_all(c->spill_fd, c->ring + c->start, first);
	if (r < 0)
		return r;
	return write_all(c->spill_fd, c->ring, c->len - first);
}

/* DSH's spillAll(): the cap is checked against the whole stream, this chunk included. */
static void spill_chunk(collector *c, const char *buf, size_t n)
{
	int r;

	if (c->total > c->max_spill_bytes) {
		spill_discard(c);
		return;
	}
	if (c->spill_fd < 0) {
		r = spill_open(c);
		if (r < 0) {
			spill_discard(c);
			return;
		}
	}
	r = write_all(c->spill_fd, buf, n);
	if (r < 0)
		spill_discard(c);
}

/* Grows the ring to hold @need bytes (≤ max_bytes), geometrically so growth stays amortised. */
static int ring_reserve(collector *c, size_t need)
{
	if (need <= c->cap)
		return 0;
	size_t cap = c->cap < RING_MIN_CAP ? RING_MIN_CAP : c->cap;
	while (cap < need && cap <= SIZE_MAX / 2)
		cap *= 2;
	if (cap < need || cap > c->max_bytes)
		cap = c->max_bytes;
	/* Before the ring is at full size it has never wrapped: a plain realloc keeps the data. */
	char *p = realloc(c->ring, cap);
	if (!p)
		return -ENOMEM;
	c->ring = p;
	c->cap = cap;
	return 0;
}

static void ring_push(collector *c, const char *buf, size_t n)
{
	size_t max = c->max_bytes;

	if (n >= max) {
		/* The chunk alone fills the tail: keep its last max bytes. */
		if (c->len > 0 || n > max)
			c->truncated = true;
		if (max > 0)
			memcpy(c->ring, buf + (n - max), max);
		c->start = 0;
		c->len = max;
		return;
	}
	if (n > max - c->len) {
		size_t drop = n - (max - c->len);
		c->start = (c->start + drop) % max;
		c->len -= drop;
		c->truncated = true;
	}
	size_t pos = c->start + c->len;
	if (pos >= c->cap)
		pos -= c->cap;
	size_t first = n;
	if (first > c->cap - pos)
		first = c->cap - pos;
	memcpy(c->ring + pos, buf, first);
	memcpy(c->ring, buf + first, n - first);
	c->len += n;
}

int collector_write(collector *c, const char *buf, size_t n)
{
	if (!c || c->finished || (n > 0 && !buf))
		return -EINVAL;
	if (n == 0)
		return 0;

	bool overflows = n > c->max_bytes - c->len;
	/* Allocate before anything else changes, so -ENOMEM leaves the collector as it was. */
	int r = ring_reserve(c, overflows ? c->max_bytes : c->len + n);
	if (r < 0)
		return r;

	c->total += n;
	/*
	 * The first overflow opens the spill (the ring still holds every byte so far, since none
	 * was dropped yet); from then on every chunk goes there, until the stream passes the cap.
	 */
	if (!c->spill_off && (overflows || c->spill_fd >= 0))
		spill_chunk(c, buf, n);
	ring_push(c, buf, n);
	return 0;
}

int collector_finish(collector *c, dsb_output *ret)
{
	char *text;

	if (!c || !ret || c->finished)
		return -EINVAL;

	if (c->start == 0 && c->ring) {
		/* Linear already: hand out the ring itself, with room for the NUL. */
		text = realloc(c->ring, c->len + 1);
		if (!text)
			return -ENOMEM;
		c->ring = NULL;
	} else {
		text = malloc(c->len + 1);
		if (!text)
			return -ENOMEM;
		size_t first = c->len;
		if (first > c->cap - c->start)
			first = c->cap - c->start;
		if (first > 0)
			memcpy(text, c->ring + c->start, first);
		if (c->len > first)
			memcpy(text + first, c->ring, c->len - first);
		free(c->ring);
		c->ring = NULL;
	}
	text[c->len] = '\0';

	if (c->spill_fd >= 0) {
		int fd = c->spill_fd;
		c->spill_fd = -1;
		/*
		 * A failed close (a delayed write-back error) means the file may miss part of the
		 * stream: it is no complete spill, so it goes and no path is reported.
		 */
		if (close(fd) < 0)
			spill_discard(c);
	}

	ret->text = text;
	ret->len = c->len;
	ret->truncated = c->truncated;
	ret->spill_path = TAKE_PTR(c->spill_path);

	c->cap = c->start = c->len = 0;
	c->spill_off = true;
	c->finished = true;
	return 0;
}
