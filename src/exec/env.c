/* SPDX-License-Identifier: MIT */
/*
 * The environment a command sees (spec §6.2): the caller's, minus anything that looks like a
 * credential and minus every DSH_* variable (only the managed ones may reach the command), then
 * the terminal overrides, the request's variables and the managed DSH_* ones, later winning.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/* /KEY|PASSWORD|SECRET|TOKEN/i on the name, or an upper-cased name starting with DSH_. */
static bool scrubbed(const char *entry)
{
	static const char *const words[] = {"KEY", "PASSWORD", "SECRET", "TOKEN"};
	size_t n = strcspn(entry, "=");
	char upper[256];
	if (n >= sizeof(upper))
		n = sizeof(upper) - 1; /* the words sit early enough in any real name */
	for (size_t i = 0; i < n; i++)
		upper[i] = (char)toupper((unsigned char)entry[i]);
	upper[n] = '\0';
	if (strncmp(upper, "DSH_", 4) == 0)
		return true;
	for (size_t i = 0; i < ELEMENTSOF(words); i++)
		if (strstr(upper, words[i]))
			return true;
	return false;
}

/* Sets NAME=VALUE @entry in *@env, replacing an entry of the same name in place. */
static int env_put(char ***env, const char *entry)
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

char **env_build(char *const *parent, char *const *extra, char *const *dsh)
{
	static const char *const overrides[] = {"NO_COLOR=1", "TERM=dumb", "PAGER=cat",
						"GIT_PAGER=cat"};
	char **env = calloc(1, sizeof(char *));
	int r = env ? 0 : -ENOMEM;

	for (size_t i = 0; r >= 0 && parent && parent[i]; i++)
		if (strchr(parent[i], '=') && !scrubbed(parent[i]))
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
