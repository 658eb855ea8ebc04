/* SPDX-License-Identifier: MIT */
/*
 * A background run's output, read while it comes (dsh-compat §6.5, DSH's readOutput() over the
 * subprocess collectors' readFrom()): the run hands its two collectors over once made, writes
 * them under the lock as the pipes deliver, and seals them when the command is done; a reader in
 * another thread gets what each stream took since its previous read. The collectors bound the
 * memory exactly as in a foreground run (a tail of maxOutputBytes per stream, the rest in the
 * spill file), so a reader that falls behind gets the whole tail and is told that output was
 * dropped from memory (lossy), with the spill files that hold all of it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

struct exec_live {
	pthread_mutex_t lock;
	collector *out, *err;	     /* owned once handed over (live_attach()) */
	uint64_t out_next, err_next; /* the reader's offsets */
};

exec_live *exec_live_new(void)
{
	exec_live *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	if (pthread_mutex_init(&l->lock, NULL) != 0) {
		free(l);
		return NULL;
	}
	return l;
}

exec_live *exec_live_free(exec_live *l)
{
	if (!l)
		return NULL;
	collector_free(l->out);
	collector_free(l->err);
	(void)pthread_mutex_destroy(&l->lock);
	free(l);
	return NULL;
}

void live_attach(exec_live *l, collector *out, collector *err)
{
	(void)pthread_mutex_lock(&l->lock);
	l->out = out;
	l->err = err;
	(void)pthread_mutex_unlock(&l->lock);
}

int live_write(exec_live *l, collector *c, const char *buf, size_t n)
{
	(void)pthread_mutex_lock(&l->lock);
	int r = collector_write(c, buf, n);
	(void)pthread_mutex_unlock(&l->lock);
	return r;
}

int live_seal(exec_live *l, dsb_output *ret_out, dsb_output *ret_err)
{
	int r = 0;
	(void)pthread_mutex_lock(&l->lock);
	collector_seal(l->out);
	collector_seal(l->err);
	if (ret_out && l->out)
		r = collector_snapshot(l->out, ret_out);
	if (r >= 0 && ret_err && l->err)
		r = collector_snapshot(l->err, ret_err);
	(void)pthread_mutex_unlock(&l->lock);
	return r;
}

void exec_delta_done(exec_delta *d)
{
	if (!d)
		return;
	free(d->out);
	free(d->err);
	free(d->out_spill);
	free(d->err_spill);
	*d = (exec_delta){0};
}

/* One stream's new bytes, decoded as DSH decodes each read (Buffer.toString('utf8')). */
static int read_stream(const collector *c, uint64_t *next, char **ret_text, size_t *ret_len,
		       bool *lossy, char **ret_spill)
{
	collector_read rd = {0};
	if (c) {
		int r = collector_read_from(c, *next, &rd);
		if (r < 0)
			return r;
	}
	_cleanup_free_ char *raw = rd.text;
	_cleanup_free_ char *spill = rd.spill_path;
	int r = utf8_sanitize(raw ? raw : "", rd.len, ret_text, ret_len);
	if (r < 0)
		return r;
	if (c)
		*next = rd.next;
	*lossy = *lossy || rd.lossy;
	*ret_spill = TAKE_PTR(spill);
	return 0;
}

int exec_live_read(exec_live *l, exec_delta *ret)
{
	exec_delta d = {0};
	(void)pthread_mutex_lock(&l->lock);
	/* The offsets move only once both reads are made, so -ENOMEM loses no output. */
	uint64_t out_next = l->out_next, err_next = l->err_next;
	int r = read_stream(l->out, &out_next, &d.out, &d.out_len, &d.lossy, &d.out_spill);
	if (r >= 0)
		r = read_stream(l->err, &err_next, &d.err, &d.err_len, &d.lossy, &d.err_spill);
	if (r >= 0) {
		l->out_next = out_next;
		l->err_next = err_next;
	}
	(void)pthread_mutex_unlock(&l->lock);
	if (r < 0) {
		exec_delta_done(&d);
		return r;
	}
	*ret = d;
	return 0;
}
