/* SPDX-License-Identifier: MIT */
/*
 * The runtime-context snapshot (dsh-compat §9.3) as the server shows it: decided and logged under
 * the session log's lock by dsb_context_project_append(), in the instructions at initialize and in
 * a tool result after a policy change.
 */
#include <stdlib.h>
#include <string.h>

#include <dsb/context.h>
#include <dsb/policy.h>
#include <dsb/session.h>

#include "../context/context.h"
#include "server.h"

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
	char *text = NULL;
	dsb_error err = {0};
	if (server_snapshot_text(srv, false, &text, &err) < 0)
		server_log(srv, LEVEL_WARNING, "runtime-context snapshot: %s", err.message);
	return text;
}
