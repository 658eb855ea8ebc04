/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes the pure part of canonicalisation, path_lexical_resolve(). The input is "CWD\0PATH"
 * (no NUL: the whole input is the path, the cwd is "/"). Properties: the result is absolute and
 * normal (no empty, "." or ".." component, no trailing '/' except the root itself), resolving it
 * again changes nothing, and it never grows past what the inputs hold.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_normal(const char *p)
{
	if (p[0] != '/')
		abort();
	if (strcmp(p, "/") == 0)
		return;
	for (const char *c = p; *c;) {
		const char *end = strchrnul(c + 1, '/');
		size_t n = (size_t)(end - c - 1); /* the component after this '/' */
		if (n == 0 || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))
			abort();
		c = end;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 3 * DSB_PATH_MAX)
		return 0;

	char *buf = malloc(size + 2);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	buf[size + 1] = '\0';

	const char *cwd = "/";
	const char *path = buf;
	size_t first = strlen(buf);
	if (first < size) {
		cwd = buf;
		path = buf + first + 1;
	}

	char *out = NULL;
	int r = path_lexical_resolve(cwd, path, &out);
	if (r == 0) {
		check_normal(out);
		if (strlen(out) > strlen(cwd) + strlen(path) + 1)
			abort();
		char *again = NULL;
		if (path_lexical_resolve("/unused", out, &again) != 0 || strcmp(again, out) != 0)
			abort();
		free(again);
	} else if (r != -EINVAL && r != -ENAMETOOLONG && r != -ENOMEM)
		abort();
	else if (r == -EINVAL && (cwd[0] == '/' || path[0] == '/'))
		abort();

	free(out);
	free(buf);
	return 0;
}
