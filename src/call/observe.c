/* SPDX-License-Identifier: MIT */
/*
 * DSH's read-before-write observation rule (packages/fs/fs-observation-policy, dsh-compat §7.4) for
 * the calls of one agent session: what the session read (or found absent) is recorded by the
 * target's canonical key, and a write or edit is conditional on it, so the model never replaces
 * a file it has not seen, or has seen in another version. The condition is decided by the
 * fence, under the target's lock (src/fence/fence.c fence_write_expect()), as DSH's provider
 * decides it in-lock; this file keeps the record and picks the condition.
 *
 * DSH keys the record by the agent session; a front end gives each session its own
 * dsb_observations. It lives in memory only, as DSH's WeakMap does.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../fence/fence.h"
#include "call.h"

typedef struct observation {
	char *key;    /* the target's canonical key (dsb_fs_target.target_key) */
	bool present; /* false: seen absent */
	fence_version version;
} observation;

struct dsb_observations {
	pthread_mutex_t lock;
	observation *v;
	size_t n, cap;
};

int dsb_observations_new(dsb_observations **ret, dsb_error *reterr)
{
	if (!ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_observations_new: missing argument");
	dsb_observations *obs = calloc(1, sizeof(*obs));
	if (!obs)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	int e = pthread_mutex_init(&obs->lock, NULL);
	if (e != 0) {
		free(obs);
		return dsb_fail_errno(reterr, DSB_E_NO_MEMORY, e, "cannot make a lock");
	}
	*ret = obs;
	return 0;
}

dsb_observations *dsb_observations_free(dsb_observations *obs)
{
	if (!obs)
		return NULL;
	for (size_t i = 0; i < obs->n; i++)
		free(obs->v[i].key);
	free(obs->v);
	(void)pthread_mutex_destroy(&obs->lock);
	free(obs);
	return NULL;
}

/* The record for @key: 1 with *@ret, 0 when the session never observed it. */
static int lookup(dsb_observations *obs, const char *key, observation *ret)
{
	int found = 0;
	(void)pthread_mutex_lock(&obs->lock);
	for (size_t i = 0; i < obs->n && !found; i++)
		if (strcmp(obs->v[i].key, key) == 0) {
			*ret = (observation){.present = obs->v[i].present,
					     .version = obs->v[i].version};
			found = 1;
		}
	(void)pthread_mutex_unlock(&obs->lock);
	return found;
}

/*
 * Records @key as seen present at @version, or absent. A record that cannot be kept (no memory)
 * is dropped: the next mutation then asks for a read, which fails closed.
 */
static void record(dsb_observations *obs, const char *key, bool present,
		   const fence_version *version)
{
	(void)pthread_mutex_lock(&obs->lock);
	observation *o = NULL;
	for (size_t i = 0; i < obs->n && !o; i++)
		if (strcmp(obs->v[i].key, key) == 0)
			o = &obs->v[i];
	if (!o && obs->n == obs->cap) {
		size_t cap = obs->cap ? obs->cap * 2 : 16;
		observation *grown = reallocarray(obs->v, cap, sizeof(*grown));
		if (grown) {
			obs->v = grown;
			obs->cap = cap;
		}
	}
	if (!o && obs->n < obs->cap) {
		char *copy = strdup(key);
		if (copy) {
			o = &obs->v[obs->n++];
			*o = (observation){.key = copy};
		}
	}
	if (o) {
		o->present = present;
		o->version = present ? *version : (fence_version){0};
	}
	(void)pthread_mutex_unlock(&obs->lock);
}

int observe_write(dsb_observations *obs, const dsb_call_request *req, call_context *ctx,
		  const char *content, size_t len, dsb_call_result *res, dsb_error *reterr)
{
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};
	const char *cwd = ctx->policy.workspace_root;

	int r = dsb_fs_resolve_in(&ctx->policy, cwd, req->path, &t, reterr);
	if (r < 0)
		return r;
	/* Unseen or seen absent: createIfAbsent; seen present: replaceIfVersion (DSH). */
	observation seen;
	fence_expect expect = {.kind = FENCE_EXPECT_ABSENT};
	if (lookup(obs, t.target_key, &seen) && seen.present)
		expect = (fence_expect){.kind = FENCE_EXPECT_VERSION, .version = seen.version};

	dsb_fs_write_result w = {0};
	fence_version published = {0};
	r = fence_write_expect(&ctx->policy, cwd, req->path, content, len, &expect, &w, &published,
			       reterr);
	if (r < 0)
		return r;
	record(obs, t.target_key, true, &published);
	res->path = TAKE_PTR(w.display_path);
	res->created = w.created;
	return call_result_write(res) < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory") : 0;
}

int observe_edit(dsb_observations *obs, const dsb_call_request *req, call_context *ctx,
		 dsb_call_result *res, dsb_error *reterr)
{
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};
	const char *cwd = ctx->policy.workspace_root;

	int r = dsb_fs_resolve_in(&ctx->policy, cwd, req->path, &t, reterr);
	if (r < 0)
		return r;
	/* DSH's edit intent, before the fence is consulted (dsh-compat §7.4). */
	observation seen;
	if (!lookup(obs, t.target_key, &seen)) {
		r = dsb_fail(reterr, DSB_E_FS_NOT_OBSERVED, "edit requires reading \"%s\" first",
			     t.display_path);
		dsb_error_set_subject(reterr, t.display_path);
		return r;
	}
	if (!seen.present) {
		r = dsb_fail(reterr, DSB_E_FS_NOT_FOUND, "cannot edit \"%s\": not found",
			     t.display_path);
		dsb_error_set_subject(reterr, t.display_path);
		return r;
	}
	const fence_expect expect = {.kind = FENCE_EXPECT_VERSION, .version = seen.version};
	dsb_fs_edit_result e = {0};
	fence_version published = {0};
	r = fence_edit_expect(&ctx->policy, cwd, req->path, req->old_string, req->new_string,
			      req->replace_all, &expect, &e, &published, reterr);
	if (r < 0)
		return r;
	record(obs, t.target_key, true, &published);
	res->path = TAKE_PTR(e.display_path);
	res->replacements = e.replacements;
	res->replaced_all = e.replaced_all;
	return call_result_edit(res) < 0 ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory") : 0;
}

int observe_read(dsb_observations *obs, const dsb_call_request *req, call_context *ctx,
		 dsb_call_result *res, dsb_error *reterr)
{
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};
	const char *cwd = ctx->policy.workspace_root;

	int r = dsb_fs_resolve_in(&ctx->policy, cwd, req->path, &t, reterr);
	if (r < 0)
		return r;
	fence_version version = {0};
	bool absent = false;
	r = fence_read_version(&ctx->policy, cwd, req->path, &res->text, &res->text_len, &version,
			       &absent, reterr);
	if (r < 0) {
		/* DSH records an absence it saw (read-target.ts), then fails the read. */
		if (absent)
			record(obs, t.target_key, false, NULL);
		return r;
	}
	record(obs, t.target_key, true, &version);
	return path_lexical_resolve(cwd, req->path, &res->path) < 0
		       ? dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory")
		       : 0;
}
