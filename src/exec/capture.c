/* SPDX-License-Identifier: MIT */
/*
 * Per-stream output collectors (dsh-compat §6.3, DSH's OutputCollector): an in-memory ring holding
 * the last max_bytes bytes of the stream, byte-exact whatever the chunking, and a spill file that
 * holds every byte of the stream from the first overflow on, until the stream passes
 * max_spill_bytes. Memory stays bounded by max_bytes whatever the stream size: the ring grows
 * with the data up to max_bytes and then wraps; chunks are copied with at most two memcpy()s.
 *
 * The spill is best effort: any I/O error (no temp dir, a full disk, a failed close) disables
 * it and removes what was written, and the run goes on with its tail. Only OOM fails a write.
 *
 * The spill is written by the unconfined caller while the confined command runs, and the command
 * may be able to write TMPDIR (a writable root) or the workspace TMPDIR lies in. So nothing here
 * is reached by path: TMPDIR is opened once with no symlink on its path, the spill directory is
 * created and opened below that descriptor, and files are created, and discarded, below the
 * directory's descriptor (docs/design/spill.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "exec.h"

/* The ring's first allocation; it then doubles until max_bytes. */
#define RING_MIN_CAP 4096

/* Names tried for the spill directory before giving up (62^6 names: a clash is already rare). */
#define SPILL_DIR_ATTEMPTS 100

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
	size_t spill_name; /* offset of the file's name in spill_path, below dir->fd */

	bool finished;
	bool sealed; /* the stream ended: the spill is complete, its file stays */
};

/* Whether the entry @d->name in TMPDIR is still the directory we made. */
static bool spill_dir_in_place(const spill_dir *d)
{
	struct stat st;

	if (fstatat(d->base_fd, d->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	return st.st_dev == d->dev && st.st_ino == d->ino;
}

void spill_dir_done(spill_dir *d)
{
	if (!d)
		return;
	if (d->path) {
		/*
		 * Completed spill files are never deleted (§6.3), so their directory stays; one
		 * left empty by discarded spills goes (AT_REMOVEDIR refuses a directory that is
		 * not empty, and a symlink). The name is removed only while it still names our
		 * directory: the command may have moved it away and put its own there.
		 */
		if (spill_dir_in_place(d))
			(void)unlinkat(d->base_fd, d->name, AT_REMOVEDIR);
		(void)close(d->fd);
		(void)close(d->base_fd);
	}
	free(d->path);
	free(d->tmpdir);
	free(d->shown);
	free(d->host_path);
	free(d->protected_path);
	*d = (spill_dir){0};
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
		/*
		 * Below the directory's descriptor, never by path: the path may lead elsewhere by
		 * now. A failed unlink leaves at most max_spill_bytes behind, never an unbounded
		 * file.
		 */
		if (c->dir->path)
			(void)unlinkat(c->dir->fd, c->spill_path + c->spill_name, 0);
		free(c->spill_path);
		c->spill_path = NULL;
	}
}

collector *collector_free(collector *c)
{
	if (!c)
		return NULL;
	/*
	 * An unfinished spill is incomplete and its path is never reported: remove it. A sealed
	 * one is complete, and its path may have been reported already: it stays (dsh-compat §6.3).
	 */
	if (!c->sealed)
		spill_discard(c);
	else
		free(c->spill_path);
	free(c->ring);
	free(c->stream);
	free(c);
	return NULL;
}

/* Fills @buf with @n bytes from getrandom(2). -errno. */
static int random_fill(unsigned char *buf, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t k = getrandom(buf + got, n - got, 0);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)k;
	}
	return 0;
}

/* "dsh-subprocess-" and six random characters of [A-Za-z0-9], as mkdtemp() spells them. */
static int random_dir_name(char name[sizeof("dsh-subprocess-XXXXXX")])
{
	static const char chars[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	const size_t n_chars = sizeof(chars) - 1;
	const size_t prefix = strlen("dsh-subprocess-");
	unsigned char rnd[16];
	size_t len = 0;

	memcpy(name, "dsh-subprocess-", prefix);
	while (len < 6) {
		int r = random_fill(rnd, sizeof(rnd));
		if (r < 0)
			return r;
		/* Only bytes below 4 * 62 = 248, so every character is equally likely. */
		for (size_t i = 0; i < sizeof(rnd) && len < 6; i++)
			if (rnd[i] < 256 - 256 % n_chars)
				name[prefix + len++] = chars[rnd[i] % n_chars];
	}
	name[prefix + len] = '\0';
	return 0;
}

/*
 * The shared spill directory, created on the first spill of the run: a fresh directory of mode
 * 0700 with a random name (what mkdtemp() makes) rather than the shared temp dir itself, so
 * other local users can neither read the output nor plant symlinks at predictable names.
 *
 * It is made and opened through descriptors, because the confined command runs meanwhile and
 * may write TMPDIR or the directories above it (TMPDIR in the workspace, or /tmp under
 * Landlock's workspace-write): a path the caller resolved again and again would go wherever
 * the command last pointed it.
 */
int spill_dir_ensure(spill_dir *d)
{
	_cleanup_free_ char *tmp = NULL;
	_cleanup_free_ char *path = NULL;
	_cleanup_close_ int base_fd = -1;
	_cleanup_close_ int fd = -1;
	char name[sizeof(d->name)];
	const char *base = d->tmpdir;
	struct stat st;
	int r;

	if (d->path)
		return 0;
	if (d->off)
		return -EPERM;
	if (!base) {
		r = tmpdir_get(&tmp);
		if (r < 0)
			return r;
		base = tmp;
	}

	/*
	 * A symlink anywhere on TMPDIR's path means no spill. The command may have planted it
	 * (replacing ws/tmp by a link to ~/.config, say), and following it would have this
	 * unconfined process create directories and files wherever it points. Without
	 * symlinks, the path can only lead through real directories; the command can rearrange
	 * those only inside its writable roots (a rename cannot cross into a tree it may not
	 * write), which moves the spill around where the command could write anyway: harmless.
	 * A TMPDIR that legitimately goes through a symlink just loses the spill file (the
	 * result says "(unavailable)"), never the run.
	 */
	base_fd = open_dir_no_symlinks(base);
	if (base_fd < 0)
		return base_fd;

	for (unsigned attempt = 1;; attempt++) {
		r = random_dir_name(name);
		if (r < 0)
			return r;
		if (mkdirat(base_fd, name, 0700) == 0)
			break;
		if (errno != EEXIST || attempt == SPILL_DIR_ATTEMPTS)
			return -errno;
	}

	/*
	 * The command may swap the new entry between mkdirat and openat: O_NOFOLLOW refuses a
	 * symlink, and what it may put there otherwise is a directory of its own writable tree.
	 * The checks keep the output private: a directory of ours, that nobody else can read.
	 */
	fd = openat(base_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700)
		r = -EPERM;
	else {
		/* path.join(): no doubled '/' when the temp dir is the root. */
		const char *shown = d->shown ? d->shown : base;
		size_t n = strlen(shown), k = strlen(base);
		if (asprintf(&path, "%s%s%s", shown, n > 0 && shown[n - 1] == '/' ? "" : "/",
			     name) < 0) {
			path = NULL;
			r = -ENOMEM;
		} else if (asprintf(&d->host_path, "%s%s%s", base,
				    k > 0 && base[k - 1] == '/' ? "" : "/", name) < 0) {
			d->host_path = NULL;
			r = -ENOMEM;
		}
	}
	if (r < 0) {
		/* Only an empty directory can go, so this never removes anything of substance. */
		(void)unlinkat(base_fd, name, AT_REMOVEDIR);
		return r;
	}

	d->path = TAKE_PTR(path);
	d->base_fd = TAKE_FD(base_fd);
	d->fd = TAKE_FD(fd);
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	memcpy(d->name, name, sizeof(name));
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
	r = random_fill(rnd, sizeof(rnd));
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(rnd); i++) {
		suffix[2 * i] = hex[rnd[i] >> 4];
		suffix[2 * i + 1] = hex[rnd[i] & 0xf];
	}
	suffix[2 * sizeof(rnd)] = '\0';

	/*
	 * The reported path should lead to the file. Once the command has moved our directory
	 * away (and perhaps put a symlink in its place), the file would still land in our
	 * directory, wherever that went, but its path would name something else: no spill. (A
	 * swap of TMPDIR itself, or a later one, can still make a path stale, never move a file.)
	 */
	if (!spill_dir_in_place(c->dir))
		return -ESTALE;

	if (asprintf(&c->spill_path, "%s/dsh-subprocess-%ld-%u-%s-%s.log", c->dir->path,
		     (long)getpid(), counter, suffix, c->stream) < 0) {
		c->spill_path = NULL;
		return -ENOMEM;
	}
	c->spill_name = strlen(c->dir->path) + 1;
	/*
	 * Below the directory's descriptor, never by path. O_EXCL fails on any existing entry,
	 * a symlink included (O_NOFOLLOW only makes that explicit); 0600 keeps the output
	 * private.
	 */
	c->spill_fd = openat(c->dir->fd, c->spill_path + c->spill_name,
			     O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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
	r = fd_write_all(c->spill_fd, c->ring + c->start, first);
	if (r < 0)
		return r;
	return fd_write_all(c->spill_fd, c->ring, c->len - first);
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
	r = fd_write_all(c->spill_fd, buf, n);
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
	if (!c || c->finished || c->sealed || (n > 0 && !buf))
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

/* Copies @n bytes of the ring from @skip bytes past its start into @dst. */
static void ring_copy(const collector *c, size_t skip, size_t n, char *dst)
{
	if (n == 0)
		return;
	size_t pos = c->start + skip;
	if (pos >= c->cap)
		pos -= c->cap;
	size_t first = n;
	if (first > c->cap - pos)
		first = c->cap - pos;
	memcpy(dst, c->ring + pos, first);
	memcpy(dst + first, c->ring, n - first);
}

int collector_read_from(const collector *c, uint64_t from, collector_read *ret)
{
	if (!c || !ret || c->finished)
		return -EINVAL;
	/* DSH's readFrom(): the window holds the stream's last len bytes, from total - len on. */
	uint64_t window = c->total - c->len;
	bool lossy = from < window;
	size_t skip = lossy ? 0 : (size_t)((from > c->total ? c->total : from) - window);
	size_t n = c->len - skip;
	_cleanup_free_ char *text = malloc(n + 1);
	_cleanup_free_ char *spill = c->spill_path ? strdup(c->spill_path) : NULL;
	if (!text || (c->spill_path && !spill))
		return -ENOMEM;
	ring_copy(c, skip, n, text);
	text[n] = '\0';
	*ret = (collector_read){
		.text = TAKE_PTR(text),
		.len = n,
		.next = c->total,
		.lossy = lossy,
		.spill_path = TAKE_PTR(spill),
	};
	return 0;
}

void collector_seal(collector *c)
{
	if (!c || c->finished || c->sealed)
		return;
	if (c->spill_fd >= 0) {
		int fd = c->spill_fd;
		c->spill_fd = -1;
		/* As collector_finish(): a failed close leaves no complete spill to report. */
		if (close(fd) < 0)
			spill_discard(c);
	}
	c->spill_off = true;
	c->sealed = true;
}

int collector_snapshot(const collector *c, dsb_output *ret)
{
	collector_read all = {0};
	int r = collector_read_from(c, 0, &all);
	if (r < 0)
		return r;
	/* Only a sealed spill is complete: a file still written to is no full output yet. */
	if (!c->sealed) {
		free(all.spill_path);
		all.spill_path = NULL;
	}
	*ret = (dsb_output){
		.text = all.text,
		.len = all.len,
		.truncated = c->truncated,
		.spill_path = all.spill_path,
	};
	return 0;
}
