/* SPDX-License-Identifier: MIT */
/*
 * Where logs live (dsh-compat §3.6): ROOT/--projectKey(cwd)--/encodeSegment(id)/session.jsonl, or
 * ROOT/_no-cwd/... for a header without cwd. Both encodings work on UTF-16 code units, as DSH's
 * JavaScript does, so a non-ASCII id or path lands in the very directory DSH would use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* [A-Za-z0-9._-] stays literal; '~' is the escape character, so it never does. */
static bool safe_unit(uint32_t u)
{
	return (u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') ||
	       u == '.' || u == '_' || u == '-';
}

/* Appends @cp as DSH would see it, one UTF-16 code unit at a time: literal or ~XXXX. */
static int append_units(strbuf *sb, uint32_t cp)
{
	if (cp < 0x10000)
		return safe_unit(cp) ? strbuf_putc(sb, (char)cp) : strbuf_printf(sb, "~%04X", cp);
	cp -= 0x10000;
	return strbuf_printf(sb, "~%04X~%04X", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
}

static bool is_separator(uint32_t cp)
{
	return cp == '/' || cp == '\\' || cp == ':';
}

int layout_encode_segment(const char *raw, char **ret_segment)
{
	if (!*raw)
		return -EINVAL;
	if (strcmp(raw, ".") == 0 || strcmp(raw, "..") == 0) {
		*ret_segment = strdup(raw[1] ? "~002E~002E" : "~002E");
		return *ret_segment ? 0 : -ENOMEM;
	}

	strbuf sb = STRBUF_INIT;
	size_t len = strlen(raw);
	int r = 0;
	for (size_t i = 0; r >= 0 && i < len;)
		r = append_units(&sb, utf8_next(raw, len, &i));
	if (r < 0) {
		strbuf_done(&sb);
		return r;
	}
	*ret_segment = strbuf_take(&sb);
	return *ret_segment ? 0 : -ENOMEM;
}

int layout_project_key(const char *cwd, char **ret_key)
{
	if (!*cwd)
		return -EINVAL;

	strbuf sb = STRBUF_INIT;
	size_t len = strlen(cwd);
	bool in_separators = false;
	int r = 0;
	for (size_t i = 0; r >= 0 && i < len;) {
		uint32_t cp = utf8_next(cwd, len, &i);
		if (is_separator(cp)) {
			if (!in_separators)
				r = strbuf_putc(&sb, '-');
			in_separators = true;
		} else {
			r = append_units(&sb, cp);
			in_separators = false;
		}
	}
	if (r < 0) {
		strbuf_done(&sb);
		return r;
	}

	/* Leading '-' go (every absolute path starts with one); the slug keeps 251 units, all
	 * ASCII by now, so bytes and units agree. */
	const char *slug = sb.buf ? sb.buf : "";
	slug += strspn(slug, "-");
	if (!*slug)
		slug = "root";
	char *key = NULL;
	r = asprintf(&key, "--%.251s--", slug) < 0 ? -ENOMEM : 0;
	strbuf_done(&sb);
	if (r < 0)
		return r;
	*ret_key = key;
	return 0;
}

int layout_session_dir(const char *root, const char *cwd, const char *id, char **ret_dir)
{
	_cleanup_free_ char *project = NULL, *segment = NULL;
	int r = cwd ? layout_project_key(cwd, &project) : 0;
	if (r >= 0)
		r = layout_encode_segment(id, &segment);
	if (r < 0)
		return r;
	if (asprintf(ret_dir, "%s/%s/%s", root, project ? project : "_no-cwd", segment) < 0)
		return -ENOMEM;
	return 0;
}

int layout_default_root(char **ret_root)
{
	const char *store = secure_getenv("DSH_SANDBOX_STORE");
	const char *state = secure_getenv("XDG_STATE_HOME");
	const char *home = secure_getenv("HOME");
	int n;

	/* XDG: a relative XDG_STATE_HOME is invalid and ignored. */
	if (store && *store)
		n = asprintf(ret_root, "%s", store);
	else if (state && state[0] == '/')
		n = asprintf(ret_root, "%s/dsh-sandbox", state);
	else if (home && home[0] == '/')
		n = asprintf(ret_root, "%s/.local/state/dsh-sandbox", home);
	else
		return -ENOENT;
	return n < 0 ? -ENOMEM : 0;
}
