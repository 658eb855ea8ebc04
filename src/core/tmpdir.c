/* SPDX-License-Identifier: MIT */
/*
 * The platform temp dir as Node's os.tmpdir() computes it on POSIX (dsh-compat §4.1), because the
 * writable roots DSH grants include it. secure_getenv() mirrors Node's safeGetenv(): in a
 * set-user-ID process the environment is not trusted to pick a writable root.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

static bool nonempty(const char *s)
{
	return s && *s;
}

char *tmpdir_pick(const char *tmpdir, const char *tmp, const char *temp)
{
	const char *v = nonempty(tmpdir) ? tmpdir
			: nonempty(tmp)	 ? tmp
			: nonempty(temp) ? temp
					 : "/tmp";
	size_t n = strlen(v);

	/* Exactly one trailing '/' goes, as in Node; "/" itself stays. */
	if (n > 1 && v[n - 1] == '/')
		n--;
	return strndup(v, n);
}

int tmpdir_get(char **ret_path)
{
	char *p = tmpdir_pick(secure_getenv("TMPDIR"), secure_getenv("TMP"), secure_getenv("TEMP"));
	if (!p)
		return -ENOMEM;
	*ret_path = p;
	return 0;
}
