/* SPDX-License-Identifier: MIT */
/* The server's diagnostics: to the front end's log, and to the client as it asked for them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server.h"

static const char *const level_names[_LEVEL_MAX] = {
	[LEVEL_DEBUG] = "debug",     [LEVEL_INFO] = "info",	      [LEVEL_NOTICE] = "notice",
	[LEVEL_WARNING] = "warning", [LEVEL_ERROR] = "error",	      [LEVEL_CRITICAL] = "critical",
	[LEVEL_ALERT] = "alert",     [LEVEL_EMERGENCY] = "emergency",
};

/* The message to the front end, and to the client when @wanted (a server_level) lets it through. */
__attribute__((format(printf, 4, 0))) static void vlog(server *srv, int wanted, server_level level,
						       const char *fmt, va_list ap)
{
	char message[1024];
	(void)vsnprintf(message, sizeof(message), fmt, ap);
	if (srv->options->log)
		srv->options->log(srv->options->log_userdata, message);
	if (wanted == _LEVEL_NONE || (int)level < wanted)
		return;
	json_t *data = rpc_string(message, strlen(message));
	json_t *params = data ? json_pack("{s:s, s:s, s:o}", "level", level_names[level], "logger",
					  "dsh-sandbox", "data", data)
			      : NULL;
	if (params)
		(void)rpc_write_notification(&srv->out, "notifications/message", params);
}

void server_log(server *srv, server_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	/* To the client only at the level it asked for (logging/setLevel); never before. */
	vlog(srv, atomic_load(&srv->level), level, fmt, ap);
	va_end(ap);
}

void server_call_log(server_call *sc, server_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	/* A 2026 request asks in its own _meta (and only before its response is written). */
	vlog(sc->srv, sc->modern ? sc->log_level : atomic_load(&sc->srv->level), level, fmt, ap);
	va_end(ap);
}

server_level server_level_from_string(const char *s)
{
	for (int i = 0; s && i < _LEVEL_MAX; i++)
		if (strcmp(s, level_names[i]) == 0)
			return (server_level)i;
	return _LEVEL_NONE;
}
