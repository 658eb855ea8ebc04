/* SPDX-License-Identifier: MIT */
/*
 * The requestState of MCP 2026-07-28's input_required results (the approvals of elicit.c). The
 * specification asks a server to treat the state a client echoes as hostile input, to bind it to
 * the request it was issued for, to give it an expiry and, when it may be used once, to enforce
 * that itself.
 *
 * Here the state is a handle and nothing else: 128 random bits naming an entry in this server's
 * memory that holds what it was issued for (the tool and its arguments as canonical JSON; the
 * server serves one session) and when it expires. It carries no data, so there is nothing to
 * forge or alter: a handle this process did not issue names nothing. A redeemed entry stays,
 * marked used, until some time after it expires, so that a late or replayed retry is told which
 * it is. (A signed state would need the
 * same table to be used once, so a key would add nothing.) At most STATE_MAX entries and
 * STATE_MAX_BYTES of arguments are held; past either, the oldest goes first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "server.h"

#define STATE_MAX	256
#define STATE_MAX_BYTES ((size_t)4 << 20)
/* How long past its expiry an entry is remembered, so that its retry is told it expired. */
#define STATE_REMEMBER_MS ((uint64_t)10 * 60 * 1000)

struct server_state {
	server_state *next; /* newer first */
	char handle[STATE_HANDLE_MAX];
	char *tool;
	char *args; /* the arguments as canonical JSON; NULL once used */
	size_t bytes;
	uint64_t expires_ms; /* monotonic */
	bool used;
};

static void state_free(server_state *st)
{
	free(st->tool);
	free(st->args);
	free(st);
}

/* The arguments as one canonical text: keys sorted, no spaces; absent is "null". */
static char *canonical(const json_t *args)
{
	return args ? json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)
		    : strdup("null");
}

/* Drops the entries long expired, and the oldest past the limits. Under the lock. */
static void prune(server *srv, uint64_t now, size_t room)
{
	size_t n = 0, bytes = 0;
	for (server_state **p = &srv->states; *p;) {
		server_state *st = *p;
		if (st->expires_ms + STATE_REMEMBER_MS <= now || n + 1 > STATE_MAX - room ||
		    bytes + st->bytes > STATE_MAX_BYTES) {
			*p = st->next;
			state_free(st);
			continue;
		}
		n++;
		bytes += st->bytes;
		p = &st->next;
	}
}

int state_issue(server *srv, const char *tool, const json_t *args, uint64_t ttl_ms,
		char ret_handle[STATE_HANDLE_MAX])
{
	unsigned char raw[16];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	server_state *st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (size_t i = 0; i < sizeof(raw); i++)
		(void)snprintf(st->handle + 2 * i, 3, "%02x", raw[i]);
	st->tool = strdup(tool);
	st->args = canonical(args);
	if (!st->tool || !st->args) {
		state_free(st);
		return -ENOMEM;
	}
	st->bytes = strlen(st->args);
	uint64_t now = monotonic_ms();
	uint64_t most = UINT64_MAX - STATE_REMEMBER_MS - now;
	st->expires_ms = now + (ttl_ms > most ? most : ttl_ms);
	memcpy(ret_handle, st->handle, STATE_HANDLE_MAX);

	(void)pthread_mutex_lock(&srv->lock);
	prune(srv, now, 1);
	st->next = srv->states;
	srv->states = st;
	(void)pthread_mutex_unlock(&srv->lock);
	return 0;
}

int state_redeem(server *srv, const char *handle, const char *tool, const json_t *args,
		 const char **ret_why)
{
	_cleanup_free_ char *text = canonical(args);
	if (!text)
		return -ENOMEM;
	uint64_t now = monotonic_ms();
	server_state *st = NULL;
	(void)pthread_mutex_lock(&srv->lock);
	for (server_state *s = srv->states; s; s = s->next)
		if (strcmp(s->handle, handle) == 0) {
			st = s;
			break;
		}
	bool expired = st && st->expires_ms <= now;
	bool used = st && st->used;
	bool same = st && !expired && !used && strcmp(st->tool, tool) == 0 &&
		    strcmp(st->args, text) == 0;
	if (st && !expired && !used) {
		/* One use, whatever it was for: a state tried on another call is spent too. */
		st->used = true;
		free(st->args);
		st->args = NULL;
		st->bytes = 0;
	}
	prune(srv, now, 0);
	(void)pthread_mutex_unlock(&srv->lock);

	*ret_why = !st	     ? "Invalid params: requestState was not issued by this server"
		   : expired ? "Invalid params: requestState has expired"
		   : used    ? "Invalid params: requestState was already used"
		   : !same   ? "Invalid params: requestState was issued for another tool call"
			     : NULL;
	return *ret_why ? 1 : 0;
}

void state_drop_all(server *srv)
{
	for (server_state *st = srv->states, *next; st; st = next) {
		next = st->next;
		state_free(st);
	}
	srv->states = NULL;
}
