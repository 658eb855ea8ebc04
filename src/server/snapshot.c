/* SPDX-License-Identifier: MIT */
/*
 * The runtime-context snapshot (dsh-compat §9.3) as the server shows it: decided and logged under
 * the session log's lock by dsb_context_project_append(), in the instructions at initialize and in
 * a tool result after a policy change.
 *
 * After every tool call the server asks whether the policy changed, and almost always it did
 * not. What the answer rests on is the session's log (a mode switch is an event in it) and the
 * configuration (its one file, the environment and the setup, which are the process's): so a
 * check that found nothing new keeps what those two files were just before it looked (device,
 * inode, size, modification and change times), and while both stay so, the next check has
 * nothing to read. Taken before the look, the record can only be older than what the look saw:
 * a change during the look makes the next check look again.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <dsb/context.h>
#include <dsb/policy.h>
#include <dsb/session.h>

#include "../call/call.h"
#include "../context/context.h"
#include "server.h"

/* What a file is now, as far as a change to it shows: absent is a state too. */
static void identify(const char *path, server_file_id *ret)
{
	struct stat st;
	*ret = (server_file_id){.present = path && stat(path, &st) == 0};
	if (ret->present) {
		ret->dev = st.st_dev;
		ret->ino = st.st_ino;
		ret->size = st.st_size;
		ret->mtime = st.st_mtim;
		ret->ctime = st.st_ctim;
	}
}

static bool same_file(const server_file_id *a, const server_file_id *b)
{
	return a->present == b->present && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec && a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* The log's and the configuration's state now; false when it cannot be known. */
static bool inputs_now(server *srv, server_snapshot_inputs *ret)
{
	_cleanup_free_ char *cfg = NULL;
	(void)pthread_mutex_lock(&srv->lock);
	const char *log = srv->log_path; /* set once, then kept to the end */
	(void)pthread_mutex_unlock(&srv->lock);
	if (!log || call_config_file(&srv->setup, &cfg) < 0)
		return false;
	identify(log, &ret->log);
	identify(cfg, &ret->config);
	return ret->log.present;
}

int server_snapshot_text(server *srv, bool always, char **ret_text, dsb_error *reterr)
{
	dsb_config *cfg = NULL;
	dsb_policy *policy = NULL;
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	dsb_context_message *message = NULL;
	*ret_text = NULL;

	int r = dsb_call_load_config(&srv->setup, &cfg, reterr);
	if (r >= 0)
		r = dsb_policy_new(cfg, &policy, reterr);
	if (r >= 0)
		r = dsb_store_open(srv->setup.store_path, &store, reterr);
	if (r >= 0)
		r = dsb_session_open(store, srv->session, &session, reterr);
	/* Where the next checks look first (server_snapshot()); without it, they always read. */
	if (r >= 0) {
		(void)pthread_mutex_lock(&srv->lock);
		if (!srv->log_path)
			srv->log_path = strdup(dsb_session_path(session));
		(void)pthread_mutex_unlock(&srv->lock);
	}
	if (r >= 0)
		r = dsb_context_project_append(session, policy, cfg, &message, NULL, reterr);
	if (r > 0 && !(*ret_text = strdup(dsb_context_message_text(message))))
		r = dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	else if (r == 0 && always)
		r = context_snapshot_text(session, policy, cfg, ret_text, reterr);
	dsb_context_message_free(message);
	dsb_session_free(session);
	dsb_store_free(store);
	dsb_policy_free(policy);
	dsb_config_free(cfg);
	return r;
}

char *server_snapshot(server *srv)
{
	server_snapshot_inputs now;
	bool known = inputs_now(srv, &now);
	(void)pthread_mutex_lock(&srv->lock);
	bool unchanged = known && srv->seen_valid && same_file(&now.log, &srv->seen.log) &&
			 same_file(&now.config, &srv->seen.config);
	(void)pthread_mutex_unlock(&srv->lock);
	if (unchanged)
		return NULL;

	char *text = NULL;
	dsb_error err = {0};
	int r = server_snapshot_text(srv, false, &text, &err);
	if (r < 0)
		server_log(srv, LEVEL_WARNING, "runtime-context snapshot: %s", err.message);
	/* Nothing new from these inputs: nothing while they stay (one shown changed the log). */
	(void)pthread_mutex_lock(&srv->lock);
	srv->seen_valid = known && r == 0;
	srv->seen = now;
	(void)pthread_mutex_unlock(&srv->lock);
	return text;
}
