/* SPDX-License-Identifier: MIT */
/*
 * The environment a command sees (dsh-compat §6.2): the caller's, minus anything that looks like a
 * credential (DSH's rule, then bash.scrubEnv: src/policy/scrub.c) and minus every DSH_* variable
 * (only the managed ones may reach the command), then the terminal overrides, the request's
 * variables and the managed DSH_* ones, later winning.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* Sets NAME=VALUE @entry in *@env, replacing an entry of the same name in place. */
int env_put(char ***env, const char *entry)
{
	size_t n = strcspn(entry, "=");
	for (size_t i = 0; *env && (*env)[i]; i++) {
		if (strncmp((*env)[i], entry, n) == 0 && (*env)[i][n] == '=') {
			char *copy = strdup(entry);
			if (!copy)
				return -ENOMEM;
			free((*env)[i]);
			(*env)[i] = copy;
			return 0;
		}
	}
	return strv_push(env, entry);
}

char **env_build(char *const *parent, const scrub_rule *rules, size_t n_rules, char *const *extra,
		 char *const *dsh)
{
	static const char *const overrides[] = {"NO_COLOR=1", "TERM=dumb", "PAGER=cat",
						"GIT_PAGER=cat"};
	char **env = calloc(1, sizeof(char *));
	int r = env ? 0 : -ENOMEM;

	for (size_t i = 0; r >= 0 && parent && parent[i]; i++)
		if (strchr(parent[i], '=') && !scrub_check(rules, n_rules, parent[i]))
			r = strv_push(&env, parent[i]);
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(overrides); i++)
		r = env_put(&env, overrides[i]);
	for (size_t i = 0; r >= 0 && extra && extra[i]; i++)
		r = env_put(&env, extra[i]);
	for (size_t i = 0; r >= 0 && dsh && dsh[i]; i++)
		r = env_put(&env, dsh[i]);
	if (r < 0)
		return strv_free(env);
	return env;
}

int env_proxy(char ***env, uint16_t port)
{
	/*
	 * Both spellings: curl reads only the lower-case http_proxy (the upper-case one could be
	 * set by a CGI request's Proxy: header), most other tools the upper-case ones. The
	 * namespace's own loopback is the command's: never through the proxy.
	 */
	static const char *const names[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
					    "HTTPS_PROXY", "all_proxy",	 "ALL_PROXY"};
	char entry[64];
	int r = 0;
	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(names); i++) {
		(void)snprintf(entry, sizeof(entry), "%s=http://127.0.0.1:%u", names[i],
			       (unsigned)port);
		r = env_put(env, entry);
	}
	if (r >= 0)
		r = env_put(env, "no_proxy=localhost,127.0.0.1,::1");
	if (r >= 0)
		r = env_put(env, "NO_PROXY=localhost,127.0.0.1,::1");
	return r;
}
