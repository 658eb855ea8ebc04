/* SPDX-License-Identifier: MIT */
/* NULL-terminated arrays of owned strings: argv vectors, root lists, signature lists. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <dsb/policy.h>

#include "core.h"

size_t strv_length(char *const *strv)
{
	size_t n = 0;
	if (strv)
		while (strv[n])
			n++;
	return n;
}

bool strv_contains(char *const *strv, const char *s)
{
	for (size_t i = 0; strv && strv[i]; i++)
		if (strcmp(strv[i], s) == 0)
			return true;
	return false;
}

int strv_consume(char ***strv, char *s)
{
	size_t n = strv_length(*strv);
	char **grown = reallocarray(*strv, n + 2, sizeof(char *));
	if (!grown) {
		free(s);
		return -ENOMEM;
	}
	grown[n] = s;
	grown[n + 1] = NULL;
	*strv = grown;
	return 0;
}

int strv_push(char ***strv, const char *s)
{
	char *copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	return strv_consume(strv, copy);
}

char **strv_copy(char *const *strv)
{
	size_t n = strv_length(strv);
	char **copy = calloc(n + 1, sizeof(char *));
	if (!copy)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		copy[i] = strdup(strv[i]);
		if (!copy[i])
			return strv_free(copy);
	}
	return copy;
}

char **strv_free(char **strv)
{
	for (size_t i = 0; strv && strv[i]; i++)
		free(strv[i]);
	free(strv);
	return NULL;
}

void strv_freep(char ***strv)
{
	*strv = strv_free(*strv);
}

char **dsb_strv_free(char **strv)
{
	return strv_free(strv);
}
