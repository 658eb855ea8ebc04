/* SPDX-License-Identifier: MIT */
/*
 * A planted repository's config, kept to what cannot make git run anything. git reads dozens
 * of keys that name a program (core.fsmonitor, core.hooksPath, core.pager, core.editor,
 * core.sshCommand, filter.*, diff.*.textconv, credential.helper, alias.*, include.path, ...)
 * and new ones come with new versions, so the keys kept are listed, not the ones removed: what
 * `git init` and `git clone` write, and a few settings that only shape data.
 *
 * The text is read line by line. A line git might read otherwise than we do (a key continued
 * with a backslash, a header we cannot parse, anything after a header's "]") is dropped
 * rather than guessed at: dropping a key is always safe.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "repos.h"

/* section, subsection ("*": any, NULL: none), key ("*": any); all lower case but names. */
static const struct {
	const char *section, *subsection, *key;
} inert[] = {
	{"core", NULL, "repositoryformatversion"},
	{"core", NULL, "filemode"},
	{"core", NULL, "bare"},
	{"core", NULL, "logallrefupdates"},
	{"core", NULL, "ignorecase"},
	{"core", NULL, "precomposeunicode"},
	{"core", NULL, "symlinks"},
	{"core", NULL, "autocrlf"},
	{"core", NULL, "eol"},
	{"core", NULL, "safecrlf"},
	{"core", NULL, "quotepath"},
	{"core", NULL, "worktree"},
	{"core", NULL, "sparsecheckout"},
	{"core", NULL, "sparsecheckoutcone"},
	{"core", NULL, "compression"},
	{"core", NULL, "bigfilethreshold"},
	{"core", NULL, "untrackedcache"},
	{"core", NULL, "splitindex"},
	{"core", NULL, "checkstat"},
	{"core", NULL, "trustctime"},
	{"core", NULL, "abbrev"},
	{"extensions", NULL, "*"},
	{"remote", "*", "url"},
	{"remote", "*", "pushurl"},
	{"remote", "*", "fetch"},
	{"remote", "*", "push"},
	{"remote", "*", "tagopt"},
	{"remote", "*", "mirror"},
	{"remote", "*", "prune"},
	{"remote", "*", "promisor"},
	{"remote", "*", "partialclonefilter"},
	{"branch", "*", "remote"},
	{"branch", "*", "merge"},
	{"branch", "*", "rebase"},
	{"branch", "*", "pushremote"},
	{"branch", "*", "description"},
	{"submodule", "*", "url"},
	{"submodule", "*", "path"},
	{"submodule", "*", "active"},
	{"submodule", "*", "branch"},
	{"user", NULL, "name"},
	{"user", NULL, "email"},
	{"init", NULL, "defaultbranch"},
	{"pull", NULL, "rebase"},
	{"pull", NULL, "ff"},
	{"push", NULL, "default"},
	{"fetch", NULL, "prune"},
	{"gc", NULL, "auto"},
	{"index", NULL, "version"},
};

typedef struct header {
	bool valid;
	char section[64];
	bool has_subsection;
} header;

static bool is_inert(const header *h, const char *key)
{
	for (size_t i = 0; h->valid && i < ELEMENTSOF(inert); i++) {
		if (strcmp(inert[i].section, h->section) != 0 ||
		    (inert[i].subsection != NULL) != h->has_subsection)
			continue;
		if (strcmp(inert[i].key, "*") == 0 || strcmp(inert[i].key, key) == 0)
			return true;
	}
	return false;
}

/*
 * Parses the header at @p ("[section]", "[section \"sub\"]", "[section.sub]") into @h; returns
 * the first character after its "]", or NULL for one we cannot read.
 */
static const char *parse_header(const char *p, const char *end, header *h)
{
	*h = (header){0};
	size_t n = 0;
	for (p++; p < end && (isalnum((unsigned char)*p) || *p == '-' || *p == '.'); p++) {
		if (*p == '.' && !h->has_subsection) {
			h->has_subsection = true; /* [section.sub]: the rest is the subsection */
			continue;
		}
		if (!h->has_subsection) {
			if (n + 1 >= sizeof(h->section))
				return NULL;
			h->section[n++] = (char)tolower((unsigned char)*p);
		}
	}
	h->section[n] = '\0';
	if (n == 0 || p >= end)
		return NULL;
	if (*p == ' ' || *p == '\t') {
		if (h->has_subsection)
			return NULL;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= end || *p != '"')
			return NULL;
		for (p++; p < end && *p != '"'; p++)
			if (*p == '\\' && ++p >= end)
				return NULL;
		if (p >= end)
			return NULL;
		p++; /* the closing quote */
		h->has_subsection = true;
	}
	if (p >= end || *p != ']')
		return NULL;
	h->valid = true;
	return p + 1;
}

/* Whether the rest of a line, from @p, is blank or a comment. */
static bool blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	return p >= end || *p == '#' || *p == ';';
}

/*
 * Whether the value part of a key line, from @p, ends in a backslash that continues it on the
 * next line, outside a comment (git's parse_value()). @in_quote carries over.
 */
static bool continues(const char *p, const char *end, bool *in_quote)
{
	for (; p < end; p++) {
		if (*p == '\\') {
			if (p + 1 >= end || (p + 2 == end && p[1] == '\r'))
				return true;
			p++;
		} else if (*p == '"')
			*in_quote = !*in_quote;
		else if ((*p == '#' || *p == ';') && !*in_quote)
			return false;
	}
	return false;
}

static int note_dropped(char ***dropped, const header *h, const char *key)
{
	char name[160];
	bool named = h->valid && key[0] != '(';
	(void)snprintf(name, sizeof(name), "%s%s%s", named ? h->section : "", named ? "." : "",
		       key);
	return strv_contains(*dropped, name) ? 0 : strv_push(dropped, name);
}

int config_filter(const char *in, size_t len, strbuf *out, char ***dropped)
{
	header h = {0};
	bool continuing = false, in_quote = false;
	const char *end_of_text = in + len;
	int r = 0;
	for (const char *line = in; r >= 0 && line < end_of_text;) {
		const char *nl = memchr(line, '\n', (size_t)(end_of_text - line));
		const char *end = nl ? nl : end_of_text, *next = nl ? nl + 1 : end_of_text;
		const char *p = line, *from = line; /* what a kept line keeps */
		if (continuing) {
			/* The rest of a dropped key's value. */
			continuing = continues(p, end, &in_quote);
			line = next;
			continue;
		}
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (blank(p, end)) {
			r = strbuf_append(out, line, (size_t)(next - line));
			line = next;
			continue;
		}
		if (*p == '[') {
			const char *after = parse_header(p, end, &h);
			if (after && blank(after, end)) {
				r = strbuf_append(out, line, (size_t)(next - line));
				line = next;
				continue;
			}
			if (!after) {
				r = note_dropped(dropped, &h, "(an unreadable header)");
				line = next;
				continue;
			}
			/* A key after the "]": the header alone is kept, the key judged below. */
			r = strbuf_append(out, line, (size_t)(after - line));
			if (r < 0 || (r = strbuf_putc(out, '\n')) < 0)
				break;
			for (p = after; *p == ' ' || *p == '\t';)
				p++;
			from = p;
		}
		char key[96];
		size_t n = 0;
		bool name_ok = isalpha((unsigned char)*p);
		for (; p < end && (isalnum((unsigned char)*p) || *p == '-'); p++)
			if (n + 1 < sizeof(key))
				key[n++] = (char)tolower((unsigned char)*p);
			else
				name_ok = false;
		key[n] = '\0';
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		name_ok = name_ok && (p >= end || *p == '=' || blank(p, end));
		in_quote = false;
		bool more = name_ok && p < end && *p == '=' && continues(p + 1, end, &in_quote);
		if (name_ok && !more && is_inert(&h, key)) {
			r = strbuf_append(out, from, (size_t)(next - from));
		} else {
			r = note_dropped(dropped, &h, name_ok ? key : "(an unreadable line)");
			continuing = more;
		}
		line = next;
	}
	return r;
}
