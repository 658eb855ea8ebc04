/* SPDX-License-Identifier: MIT */
/*
 * The configuration file: one YAML document read with libyaml's event parser into a dsb_config
 * over its defaults. A small recursive descent pulls one event at a time and dispatches mapping
 * keys through a table per section, so every unknown key, wrong type and invalid value is refused
 * where it appears, with its line, column and dotted key path. The event parser never expands
 * aliases and we stop pulling events at the first error, so hostile input (alias bombs, deep
 * nesting, huge collections) costs no more than reading it once.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "policy.h"

#define TABLE_MAX_FIELDS 8

struct parser {
	yaml_parser_t yaml;
	bool initialized;
	yaml_event_t event; /* the current event; a node parser starts at its first event and
			       returns at its last one */
	const char *buf;    /* the input, to place reader errors (which carry an offset only) */
	size_t len;
	const char *origin;
	dsb_error *reterr;
	unsigned depth;
	char path[sizeof(((dsb_error *)0)->subject)]; /* dotted key path of the current node */
	char shown[256];			      /* scratch for one value in a message */
};

struct field;

/* The keys of one mapping, and an optional check run once the whole mapping is read. */
struct table {
	const struct field *fields;
	size_t n_fields;
	int (*check)(struct parser *p, void *base, const yaml_mark_t *mark,
		     const yaml_mark_t *marks);
};

struct field {
	const char *key;
	int (*parse)(struct parser *p, const struct field *f, void *base);
	size_t offset;		   /* of the target in base */
	uint64_t max;		   /* numbers: the largest value; strings: a size limit; 0 = none */
	bool nonempty;		   /* strings and string lists: "" is refused */
	bool required;		   /* a mapping without it is refused */
	const struct table *table; /* sections: their keys */
};

/* --- errors ---------------------------------------------------------------------------------- */

/* Copies @s for display: quotes, backslashes and control bytes escaped, cut with "..." if long. */
static const char *escape(char *buf, size_t size, const char *s)
{
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char tmp[8] = {(char)c, '\0'};
		if (c == '"' || c == '\\')
			(void)snprintf(tmp, sizeof(tmp), "\\%c", c);
		else if (c == '\n')
			(void)snprintf(tmp, sizeof(tmp), "\\n");
		else if (c < 0x20 || c == 0x7f)
			(void)snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		size_t n = strlen(tmp);
		if (o + n + sizeof("...") > size) {
			/* Never leave half a UTF-8 sequence before the ellipsis. */
			while (o > 0 && ((unsigned char)buf[o - 1] & 0x80))
				o--;
			memcpy(buf + o, "...", sizeof("..."));
			return buf;
		}
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o] = '\0';
	return buf;
}

static const char *show(struct parser *p, const char *s)
{
	return escape(p->shown, sizeof(p->shown), s);
}

static const yaml_mark_t *here(const struct parser *p)
{
	return &p->event.start_mark;
}

/* `ORIGIN:LINE:COLUMN: KEYPATH: reason`, the key path left out at the top level. */
static int fail_at(struct parser *p, const yaml_mark_t *mark, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_at(struct parser *p, const yaml_mark_t *mark, const char *fmt, ...)
{
	char reason[sizeof(((dsb_error *)0)->message)];
	char path[sizeof(p->path)];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	escape(path, sizeof(path), p->path);

	int r = dsb_fail(p->reterr, DSB_E_CONFIG_INVALID, "%s:%zu:%zu: %s%s%s", p->origin,
			 mark->line + 1, mark->column + 1, path, path[0] ? ": " : "", reason);
	dsb_error_set_subject(p->reterr, p->path);
	return r;
}

/*
 * `ORIGIN:LINE:COLUMN: TEXT` for DSH's own validation texts (dsh-compat §1.4, §8.6), which already
 * begin with the section they belong to; the key path stays the subject.
 */
static int fail_spec_at(struct parser *p, const yaml_mark_t *mark, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_spec_at(struct parser *p, const yaml_mark_t *mark, const char *fmt, ...)
{
	char text[sizeof(((dsb_error *)0)->message)];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);

	int r = dsb_fail(p->reterr, DSB_E_CONFIG_INVALID, "%s:%zu:%zu: %s", p->origin,
			 mark->line + 1, mark->column + 1, text);
	dsb_error_set_subject(p->reterr, p->path);
	return r;
}

static int fail_oom(struct parser *p)
{
	return dsb_fail(p->reterr, DSB_E_NO_MEMORY, "%s: out of memory", p->origin);
}

/* The reader reports a byte offset, not a mark: count lines and characters as libyaml does. */
static yaml_mark_t mark_at(const char *buf, size_t len, size_t offset)
{
	yaml_mark_t mark = {.index = offset};

	for (size_t i = 0; i < offset && i < len; i++) {
		if (buf[i] == '\n' || (buf[i] == '\r' && (i + 1 == len || buf[i + 1] != '\n'))) {
			mark.line++;
			mark.column = 0;
		} else if (((unsigned char)buf[i] & 0xc0) != 0x80) {
			mark.column++;
		}
	}
	return mark;
}

/* Whether the line holding byte @at of @buf is indented with a tab: YAML forbids it. */
static bool indented_with_tab(const char *buf, size_t len, size_t at)
{
	size_t start = at < len ? at : len;
	while (start > 0 && buf[start - 1] != '\n')
		start--;
	for (size_t i = start; i < len && (buf[i] == ' ' || buf[i] == '\t'); i++)
		if (buf[i] == '\t')
			return true;
	return false;
}

static int fail_syntax(struct parser *p)
{
	const yaml_parser_t *y = &p->yaml;

	if (y->error == YAML_MEMORY_ERROR)
		return fail_oom(p);
	yaml_mark_t mark = y->problem_mark;
	if (y->error == YAML_READER_ERROR)
		mark = mark_at(p->buf, p->len, y->problem_offset);
	return dsb_fail(p->reterr, DSB_E_CONFIG_INVALID,
			"%s:%zu:%zu: YAML syntax error: %s%s%s%s%s", p->origin, mark.line + 1,
			mark.column + 1, y->problem ? y->problem : "unknown error",
			y->context ? " (" : "", y->context ? y->context : "", y->context ? ")" : "",
			indented_with_tab(p->buf, p->len, mark.index)
				? "; YAML indents with spaces, and this line starts with a tab"
				: "");
}

/* --- the event stream ------------------------------------------------------------------------ */

enum scalar_kind {
	SCALAR_NULL,
	SCALAR_STRING, /* quoted, block or !!str: text only */
	SCALAR_PLAIN,  /* plain or !!int: text, or a number where one is expected */
};

static const char *scalar(const struct parser *p)
{
	return (const char *)p->event.data.scalar.value;
}

static enum scalar_kind scalar_kind(const yaml_event_t *ev)
{
	const char *tag = (const char *)ev->data.scalar.tag;
	const char *v = (const char *)ev->data.scalar.value;

	if (tag && strcmp(tag, YAML_NULL_TAG) == 0)
		return SCALAR_NULL;
	if (tag && strcmp(tag, YAML_STR_TAG) == 0)
		return SCALAR_STRING;
	if (tag)
		return SCALAR_PLAIN;
	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return SCALAR_STRING;
	/* The null spellings of the YAML 1.2 core schema, which DSH's js-yaml also uses. */
	if (!*v || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
	    strcmp(v, "NULL") == 0)
		return SCALAR_NULL;
	return SCALAR_PLAIN;
}

static bool is_null(const yaml_event_t *ev)
{
	return ev->type == YAML_SCALAR_EVENT && scalar_kind(ev) == SCALAR_NULL;
}

static const char *describe(const yaml_event_t *ev)
{
	if (ev->type == YAML_MAPPING_START_EVENT)
		return "a mapping";
	if (ev->type == YAML_SEQUENCE_START_EVENT)
		return "a list";
	return is_null(ev) ? "null" : "a string";
}

static int fail_type(struct parser *p, const char *expected)
{
	return fail_at(p, here(p), "expected %s, got %s", expected, describe(&p->event));
}

/*
 * Only the standard tags of the nodes we read are accepted; anything else, DSH's `!!js` first of
 * all, would mean a value computed by something we do not run.
 */
static int check_tag(struct parser *p, const char *tag)
{
	/* The tags we accept, each with the only kind of node it may annotate. */
	/* clang-format off */
	static const struct {
		const char *tag;
		yaml_event_type_t type;
	} standard[] = {
		{YAML_STR_TAG,  YAML_SCALAR_EVENT},
		{YAML_INT_TAG,  YAML_SCALAR_EVENT},
		{YAML_NULL_TAG, YAML_SCALAR_EVENT},
		{YAML_SEQ_TAG,  YAML_SEQUENCE_START_EVENT},
		{YAML_MAP_TAG,  YAML_MAPPING_START_EVENT},
	};
	/* clang-format on */
	static const char prefix[] = "tag:yaml.org,2002:";
	char shorthand[sizeof(p->shown)];
	const char *written = tag;

	/* Name the tag as the user most likely wrote it: "!!js", not its expansion. */
	if (strncmp(tag, prefix, sizeof(prefix) - 1) == 0) {
		(void)snprintf(shorthand, sizeof(shorthand), "!!%s", tag + sizeof(prefix) - 1);
		written = shorthand;
	}
	for (size_t i = 0; i < ELEMENTSOF(standard); i++) {
		if (strcmp(tag, standard[i].tag) != 0)
			continue;
		if (standard[i].type == p->event.type)
			return 0;
		return fail_at(p, here(p), "unsupported tag \"%s\" on %s", show(p, written),
			       describe(&p->event));
	}
	return fail_at(p, here(p), "unsupported tag \"%s\"", show(p, written));
}

/* Checks that hold for every event, wherever it appears. */
static int check_event(struct parser *p)
{
	const yaml_event_t *ev = &p->event;
	const yaml_char_t *anchor = NULL, *tag = NULL;

	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		return fail_at(p, here(p), "YAML aliases and anchors are not supported");
	case YAML_SCALAR_EVENT:
		/* A "\0" escape would silently cut the C string we store. */
		if (strlen(scalar(p)) != ev->data.scalar.length)
			return fail_at(p, here(p), "contains a NUL byte");
		anchor = ev->data.scalar.anchor;
		tag = ev->data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		tag = ev->data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		tag = ev->data.mapping_start.tag;
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		p->depth--;
		return 0;
	case YAML_NO_EVENT:
	case YAML_STREAM_START_EVENT:
	case YAML_STREAM_END_EVENT:
	case YAML_DOCUMENT_START_EVENT:
	case YAML_DOCUMENT_END_EVENT:
		return 0;
	}

	if (anchor)
		return fail_at(p, here(p), "YAML aliases and anchors are not supported");
	if (tag) {
		int r = check_tag(p, (const char *)tag);
		if (r < 0)
			return r;
	}
	/*
	 * The schema refuses a collection wherever it does not expect one, so today no valid
	 * prefix nests deeper than four levels; the limit guards values that may someday be free.
	 */
	if (ev->type != YAML_SCALAR_EVENT && ++p->depth > DSB_CONFIG_MAX_DEPTH)
		return fail_at(p, here(p), "nesting deeper than %d levels", DSB_CONFIG_MAX_DEPTH);
	return 0;
}

static int next(struct parser *p)
{
	yaml_event_delete(&p->event);
	if (!yaml_parser_parse(&p->yaml, &p->event))
		return fail_syntax(p);
	return check_event(p);
}

/* Steps to the next entry of the current list or mapping: 1 there, 0 at the collection's end. */
static int next_entry(struct parser *p, size_t *n_entries)
{
	int r = next(p);
	if (r < 0)
		return r;
	if (p->event.type == YAML_SEQUENCE_END_EVENT || p->event.type == YAML_MAPPING_END_EVENT)
		return 0;
	if (++*n_entries > DSB_CONFIG_MAX_ITEMS)
		return fail_at(p, here(p), "more than %d entries", DSB_CONFIG_MAX_ITEMS);
	return 1;
}

static int check_key(struct parser *p)
{
	if (p->event.type != YAML_SCALAR_EVENT || is_null(&p->event))
		return fail_type(p, "a string key");
	return 0;
}

/* The current node as text. A number field refuses quoted text: it is a string in DSH too. */
static int expect_scalar(struct parser *p, bool number, const char **ret)
{
	const char *expected = number ? "a number" : "a string";

	if (p->event.type != YAML_SCALAR_EVENT)
		return fail_type(p, expected);
	enum scalar_kind kind = scalar_kind(&p->event);
	if (kind == SCALAR_NULL || (number && kind == SCALAR_STRING))
		return fail_type(p, expected);
	*ret = scalar(p);
	return 0;
}

static size_t path_push(struct parser *p, const char *key)
{
	size_t len = strlen(p->path);
	(void)snprintf(p->path + len, sizeof(p->path) - len, "%s%s", len ? "." : "", key);
	return len;
}

static void path_pop(struct parser *p, size_t len)
{
	p->path[len] = '\0';
}

/* --- values ---------------------------------------------------------------------------------- */

static void *target(const struct field *f, void *base)
{
	return (char *)base + f->offset;
}

static int parse_string(struct parser *p, const struct field *f, void *base)
{
	const char *s;
	int r = expect_scalar(p, false, &s);
	if (r < 0)
		return r;
	if (f->nonempty && !*s)
		return fail_at(p, here(p), "must be a non-empty string");
	if (f->max && strlen(s) >= f->max)
		return fail_at(p, here(p), "longer than %" PRIu64 " bytes", f->max - 1);

	char *copy = strdup(s);
	if (!copy)
		return fail_oom(p);
	char **t = target(f, base);
	free(*t);
	*t = copy;
	return 0;
}

/* Only "1" to "18446744073709551615" as written: no sign, leading zero, fraction or suffix. */
static bool parse_decimal(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	if (*s < '1' || *s > '9')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
			return false;
	}
	*ret = v;
	return true;
}

/*
 * DSH takes any positive finite number here, fractions included; we take whole milliseconds and
 * bytes, the unit every consumer rounds to anyway.
 */
static int parse_u64(struct parser *p, const struct field *f, void *base)
{
	const char *s;
	uint64_t v;
	int r = expect_scalar(p, true, &s);
	if (r < 0)
		return r;
	if (!parse_decimal(s, &v))
		return fail_at(p, here(p), "invalid value \"%s\": expected a positive whole number",
			       show(p, s));
	if (f->max && v > f->max)
		return fail_at(p, here(p),
			       "invalid value \"%s\": expected a whole number from 1 to %" PRIu64,
			       show(p, s), f->max);
	*(uint64_t *)target(f, base) = v;
	return 0;
}

/*
 * The closed vocabularies' dsb_*_from_string() (mode.c) with one type, for parse_word(): the
 * value, or -1 (every _..._INVALID) for a word that is none of them.
 */
static int mode_word(const char *s)
{
	return dsb_mode_from_string(s);
}

static int approval_word(const char *s)
{
	return dsb_approval_policy_from_string(s);
}

static int backend_word(const char *s)
{
	return dsb_backend_from_string(s);
}

static int network_access_word(const char *s)
{
	return dsb_network_access_from_string(s);
}

/*
 * A scalar that must be a word of a closed vocabulary: 0 with @from_string's value of it in
 * *@ret. A word @from_string does not know fails with the spec's message, `invalid WHAT "WORD"`
 * followed by @accepted as it is (" (accepted: ...)", or ": " and a sentence).
 */
static int parse_word(struct parser *p, int (*from_string)(const char *s), const char *what,
		      const char *accepted, int *ret)
{
	const char *s;
	int r = expect_scalar(p, false, &s);
	if (r < 0)
		return r;
	int v = from_string(s);
	if (v < 0)
		return fail_at(p, here(p), "invalid %s \"%s\"%s", what, show(p, s), accepted);
	*ret = v;
	return 0;
}

static int parse_mode(struct parser *p, const struct field *f, void *base)
{
	int v;
	int r = parse_word(p, mode_word, "mode", " " POLICY_MODES_ACCEPTED, &v);
	if (r >= 0)
		*(dsb_mode *)target(f, base) = (dsb_mode)v;
	return r;
}

static int parse_approval(struct parser *p, const struct field *f, void *base)
{
	int v;
	int r = parse_word(p, approval_word, "value",
			   ": approval policy must be one of \"ask\" or \"never\"", &v);
	if (r >= 0)
		*(dsb_approval_policy *)target(f, base) = (dsb_approval_policy)v;
	return r;
}

/* landlockScope (beyond DSH): what else a Landlock sandbox scopes; [] turns scoping off. */
static int parse_scope(struct parser *p, const struct field *f, void *base)
{
	static const struct {
		const char *name;
		unsigned bit;
	} scopes[] = {
		{"signal", DSB_SCOPE_SIGNAL},
		{"abstract-unix-socket", DSB_SCOPE_ABSTRACT_UNIX_SOCKET},
	};
	dsb_config *cfg = base;
	unsigned scope = 0;
	size_t n_entries = 0;
	int r;

	if (p->event.type != YAML_SEQUENCE_START_EVENT)
		return fail_type(p, "a list of strings");
	while ((r = next_entry(p, &n_entries)) > 0) {
		const char *s;
		if ((r = expect_scalar(p, false, &s)) < 0)
			return r;
		size_t i = 0;
		while (i < ELEMENTSOF(scopes) && strcmp(scopes[i].name, s) != 0)
			i++;
		if (i == ELEMENTSOF(scopes))
			return fail_at(
				p, here(p),
				"invalid scope \"%s\" (accepted: signal, abstract-unix-socket)",
				show(p, s));
		scope |= scopes[i].bit;
	}
	if (r < 0)
		return r;
	cfg->landlock_scope = scope;
	return 0;
}

/* Refuses one entry of a string list (failing at its own mark), or accepts it: 0. */
typedef int (*entry_check)(struct parser *p, const char *s);

/*
 * A list of strings (an argv, signatures), replacing the target strv as a whole. @check, when
 * given, vets each entry while it is the current event, so that an error names its place.
 */
static int parse_strv_checked(struct parser *p, const struct field *f, void *base,
			      entry_check check)
{
	_cleanup_strv_free_ char **strv = NULL;
	size_t n = 0;
	int r;

	if (p->event.type != YAML_SEQUENCE_START_EVENT)
		return fail_type(p, "a list of strings");
	while ((r = next_entry(p, &n)) > 0) {
		const char *s;
		if ((r = expect_scalar(p, false, &s)) < 0)
			return r;
		if (f->nonempty && !*s)
			return fail_at(p, here(p), "entries must be non-empty strings");
		if (check && (r = check(p, s)) < 0)
			return r;
		if (strv_push(&strv, s) < 0)
			return fail_oom(p);
	}
	if (r < 0)
		return r;
	if (!strv && !(strv = calloc(1, sizeof(char *))))
		return fail_oom(p);

	char ***t = target(f, base);
	strv_free(*t);
	*t = TAKE_PTR(strv);
	return 0;
}

static int parse_strv(struct parser *p, const struct field *f, void *base)
{
	return parse_strv_checked(p, f, base, NULL);
}

/* A boolean: true or false as YAML 1.2's core schema spells them, plain. */
static int parse_bool(struct parser *p, const struct field *f, void *base)
{
	const char *s;
	if (p->event.type != YAML_SCALAR_EVENT || scalar_kind(&p->event) != SCALAR_PLAIN)
		return fail_type(p, "true or false");
	s = scalar(p);
	bool *t = target(f, base);
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
		*t = true;
	else if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
		*t = false;
	else
		return fail_type(p, "true or false");
	return 0;
}

/* Whether @s has a ".." component. */
static bool has_dotdot(const char *s)
{
	for (const char *c = s; (c = strstr(c, "..")); c += 2)
		if ((c == s || c[-1] == '/') && (c[2] == '\0' || c[2] == '/'))
			return true;
	return false;
}

/*
 * sandbox-policy.protectedPaths (beyond DSH): glob patterns relative to each writable root,
 * never climbing out of it.
 */
static int check_protected_path(struct parser *p, const char *s)
{
	if (s[0] == '/' || s[0] == '~' || has_dotdot(s))
		return fail_at(p, here(p),
			       "\"%s\": entries are relative to each writable root and stay "
			       "inside it (no leading / or ~, no ..)",
			       show(p, s));
	if (strlen(s) >= DSB_PATH_MAX)
		return fail_at(p, here(p), "longer than %d bytes", DSB_PATH_MAX - 1);
	return 0;
}

static int parse_protected_paths(struct parser *p, const struct field *f, void *base)
{
	return parse_strv_checked(p, f, base, check_protected_path);
}

/* sandbox-policy.denyRead (beyond DSH): absolute paths, or ~ and ~/... for the home. */
static int check_deny_read(struct parser *p, const char *s)
{
	bool home = s[0] == '~' && (s[1] == '\0' || s[1] == '/');
	if (s[0] != '/' && !home)
		return fail_at(p, here(p), "\"%s\": entries are absolute paths or start with ~/",
			       show(p, s));
	if (strlen(s) >= DSB_PATH_MAX)
		return fail_at(p, here(p), "longer than %d bytes", DSB_PATH_MAX - 1);
	return 0;
}

static int parse_deny_read(struct parser *p, const struct field *f, void *base)
{
	return parse_strv_checked(p, f, base, check_deny_read);
}

/*
 * sandbox-policy.writableRoots (beyond DSH): absolute paths, or ~ and ~/... for the home, as
 * denyRead's; whether each is a directory a root may be is decided per call (roots.c).
 */
static int parse_writable_roots(struct parser *p, const struct field *f, void *base)
{
	return parse_strv_checked(p, f, base, check_deny_read);
}

struct scrub_rules {
	scrub_rule *v;
	size_t n;
};

static void scrub_rules_done(struct scrub_rules *t)
{
	scrub_rules_free(t->v, t->n);
}

/*
 * bash.scrubEnv (beyond DSH): extended regular expressions, compiled here once, replacing the
 * default list as a whole; [] leaves DSH's rule alone, which no configuration can lift.
 */
static int parse_scrub_env(struct parser *p, const struct field *f, void *base)
{
	_cleanup_(scrub_rules_done) struct scrub_rules t = {NULL, 0};
	dsb_config *cfg = base;
	size_t n_entries = 0;
	char why[128];
	int r;

	if (p->event.type != YAML_SEQUENCE_START_EVENT)
		return fail_type(p, "a list of strings");
	while ((r = next_entry(p, &n_entries)) > 0) {
		const char *s;
		if ((r = expect_scalar(p, false, &s)) < 0)
			return r;
		if (!*s)
			return fail_at(p, here(p), "entries must be non-empty strings");

		scrub_rule *grown = reallocarray(t.v, t.n + 1, sizeof(*grown));
		if (!grown)
			return fail_oom(p);
		t.v = grown;
		r = scrub_rule_compile(s, &t.v[t.n], why, sizeof(why));
		if (r == -ENOMEM)
			return fail_oom(p);
		if (r < 0) {
			/* Shown short, so that the message keeps the reason after it. */
			char shown[64];
			return fail_at(p, here(p), "invalid regular expression \"%s\": %s",
				       escape(shown, sizeof(shown), s), why);
		}
		t.n++;
	}
	if (r < 0)
		return r;

	scrub_rules_free(cfg->scrub_env, cfg->n_scrub_env);
	cfg->n_scrub_env = t.n;
	cfg->scrub_env = TAKE_PTR(t.v);
	t.n = 0;
	return 0;
}

static int parse_backends(struct parser *p, const struct field *f, void *base)
{
	dsb_config *cfg = base;
	dsb_backend chain[_DSB_BACKEND_MAX];
	yaml_mark_t mark = *here(p);
	size_t n = 0, n_entries = 0;
	char accepted[128];
	int r;

	if (p->event.type != YAML_SEQUENCE_START_EVENT)
		return fail_type(p, "a list of strings");
	(void)snprintf(accepted, sizeof(accepted), " (accepted: %s)", policy_backends_accepted());
	while ((r = next_entry(p, &n_entries)) > 0) {
		int v;
		if ((r = parse_word(p, backend_word, "backend", accepted, &v)) < 0)
			return r;
		dsb_backend b = (dsb_backend)v;
		/*
		 * Distinct valid backends cannot overflow the chain: a third entry repeats one.
		 * A word is spelled exactly as its name, so the name is the scalar shown.
		 */
		for (size_t i = 0; i < n; i++)
			if (chain[i] == b)
				return fail_at(p, here(p), "backend \"%s\" listed twice",
					       show(p, dsb_backend_to_string(b)));
		chain[n++] = b;
	}
	if (r < 0)
		return r;
	if (n == 0)
		return fail_at(p, &mark, "must list at least one backend (accepted: %s)",
			       policy_backends_accepted());

	memcpy(cfg->backends, chain, n * sizeof(chain[0]));
	cfg->n_backends = n;
	return 0;
}

/* network.access: full, none or allowlist. */
static int parse_network_access(struct parser *p, const struct field *f, void *base)
{
	int v;
	int r = parse_word(p, network_access_word, "access", " " POLICY_NETWORK_ACCESS_ACCEPTED,
			   &v);
	if (r >= 0)
		*(dsb_network_access *)target(f, base) = (dsb_network_access)v;
	return r;
}

/*
 * A list of strings each stored as @canonical writes it (into a buffer of NETWORK_RULE_MAX
 * bytes), so that every consumer compares one spelling; each refused where it stands, named:
 * "invalid @what "S": WHY@hint"; with @hosts, a URL is told which part of it to write.
 */
static int parse_canonical_list(struct parser *p, const struct field *f, void *base,
				int (*canonical)(const char *s, char *buf, const char **why),
				const char *what, const char *hint, bool hosts)
{
	_cleanup_strv_free_ char **strv = NULL;
	size_t n = 0;
	int r;

	if (p->event.type != YAML_SEQUENCE_START_EVENT)
		return fail_type(p, "a list of strings");
	while ((r = next_entry(p, &n)) > 0) {
		const char *s, *why = NULL;
		char buf[NETWORK_RULE_MAX];
		if ((r = expect_scalar(p, false, &s)) < 0)
			return r;
		if (canonical(s, buf, &why) < 0) {
			/* A URL pasted where its host was meant: say which part to keep. */
			const char *scheme_end = strstr(s, "://");
			if (hosts && scheme_end) {
				const char *host = scheme_end + 3;
				size_t path = strcspn(host, "/?#");
				const char *at = memchr(host, '@', path);
				if (at) {
					path -= (size_t)(at + 1 - host);
					host = at + 1;
				}
				return fail_at(
					p, here(p),
					"invalid %s \"%s\": a host pattern, not a URL: write "
					"%.*s",
					what, show(p, s), (int)path, host);
			}
			return fail_at(p, here(p), "invalid %s \"%s\": %s%s", what, show(p, s), why,
				       hint);
		}
		if (strv_push(&strv, buf) < 0)
			return fail_oom(p);
	}
	if (r < 0)
		return r;
	if (!strv && !(strv = calloc(1, sizeof(char *))))
		return fail_oom(p);

	char ***t = target(f, base);
	strv_free(*t);
	*t = TAKE_PTR(strv);
	return 0;
}

/* network.allow and network.deny: host patterns with an optional port (network.c). */
static int parse_host_patterns(struct parser *p, const struct field *f, void *base)
{
	return parse_canonical_list(p, f, base, network_rule_canonical, "host pattern",
				    " (a host name, \"*.\" and a domain, or an IP address, and "
				    "optionally \":PORT\")",
				    true);
}

/* network.allowPrivate: address ranges. */
static int parse_address_ranges(struct parser *p, const struct field *f, void *base)
{
	_Static_assert(NETWORK_CIDR_MAX <= NETWORK_RULE_MAX, "a range fits the list's buffer");
	return parse_canonical_list(p, f, base, network_cidr_canonical, "address range", "", false);
}

/* network.proxyPort: 0 (dsh-sandbox picks a free port) or a TCP port. */
static int parse_port(struct parser *p, const struct field *f, void *base)
{
	const char *s;
	uint64_t v = 0;
	int r = expect_scalar(p, true, &s);
	if (r < 0)
		return r;
	if (strcmp(s, "0") != 0 && (!parse_decimal(s, &v) || v > 65535))
		return fail_at(p, here(p),
			       "invalid value \"%s\": expected 0 (any free port) or a port "
			       "number from 1 to 65535",
			       show(p, s));
	*(unsigned *)target(f, base) = (unsigned)v;
	return 0;
}

/*
 * network.hosts: a mapping of exact host names to the IP addresses the proxy's resolver gives
 * them (as curl's --resolve), stored as "name=address" in the file's order.
 */
static int parse_network_hosts(struct parser *p, const struct field *f, void *base)
{
	_cleanup_strv_free_ char **strv = NULL;
	size_t n_items = 0, n = 0;
	int r;

	if (p->event.type != YAML_MAPPING_START_EVENT)
		return fail_type(p, "a mapping of host names to IP addresses");
	while ((r = next_entry(p, &n_items)) > 0) {
		const char *why = NULL, *s;
		char name[NETWORK_PATTERN_MAX], address[NETWORK_PATTERN_MAX];
		if ((r = check_key(p)) < 0)
			return r;
		if (network_pattern_canonical(scalar(p), false, false, name, &why) < 0)
			return fail_at(p, here(p), "invalid host name \"%s\": %s",
				       show(p, scalar(p)), why);
		size_t len = strlen(name);
		for (size_t i = 0; i < n; i++)
			if (strncmp(strv[i], name, len) == 0 && strv[i][len] == '=')
				return fail_at(p, here(p), "duplicate host \"%s\"", name);

		if ((r = next(p)) < 0 || (r = expect_scalar(p, false, &s)) < 0)
			return r;
		if (network_ip_canonical(s, address) < 0)
			return fail_at(p, here(p),
				       "invalid address \"%s\" for \"%s\": an IPv4 or IPv6 "
				       "address is expected",
				       show(p, s), name);
		_cleanup_free_ char *entry = NULL;
		if (asprintf(&entry, "%s=%s", name, address) < 0)
			return fail_oom(p);
		if (strv_push(&strv, entry) < 0)
			return fail_oom(p);
		n++;
	}
	if (r < 0)
		return r;
	if (!strv && !(strv = calloc(1, sizeof(char *))))
		return fail_oom(p);

	char ***t = target(f, base);
	strv_free(*t);
	*t = TAKE_PTR(strv);
	return 0;
}

/* --- mappings -------------------------------------------------------------------------------- */

static int fail_unknown_key(struct parser *p, const struct table *t, const char *key)
{
	char accepted[256] = "";

	for (size_t i = 0; i < t->n_fields; i++) {
		size_t n = strlen(accepted);
		(void)snprintf(accepted + n, sizeof(accepted) - n, "%s%s", i ? ", " : "",
			       t->fields[i].key);
	}
	return fail_at(p, here(p), "unknown key \"%s\" (accepted: %s)", show(p, key), accepted);
}

/* A mapping whose keys are those of @t, each at most once, read into @base. */
static int parse_table(struct parser *p, const struct table *t, void *base)
{
	yaml_mark_t mark = *here(p), marks[TABLE_MAX_FIELDS] = {0};
	unsigned seen = 0;
	size_t n_items = 0;
	int r;

	assert(t->n_fields <= TABLE_MAX_FIELDS);
	if (p->event.type != YAML_MAPPING_START_EVENT)
		return fail_type(p, "a mapping");
	while ((r = next_entry(p, &n_items)) > 0) {
		if ((r = check_key(p)) < 0)
			return r;

		size_t i = 0;
		while (i < t->n_fields && strcmp(t->fields[i].key, scalar(p)) != 0)
			i++;
		if (i == t->n_fields)
			return fail_unknown_key(p, t, scalar(p));
		if (seen & (1u << i))
			return fail_at(p, here(p), "duplicate key \"%s\"", t->fields[i].key);
		seen |= 1u << i;

		size_t saved = path_push(p, t->fields[i].key);
		if ((r = next(p)) < 0)
			return r;
		marks[i] = *here(p);
		if ((r = t->fields[i].parse(p, &t->fields[i], base)) < 0)
			return r;
		path_pop(p, saved);
	}
	if (r < 0)
		return r;

	for (size_t i = 0; i < t->n_fields; i++)
		if (t->fields[i].required && !(seen & (1u << i)))
			return fail_at(p, &mark, "missing key \"%s\"", t->fields[i].key);
	return t->check ? t->check(p, base, &mark, marks) : 0;
}

/* A top-level section: null (`bash:` alone) keeps every default. */
static int parse_section(struct parser *p, const struct field *f, void *base)
{
	return is_null(&p->event) ? 0 : parse_table(p, f->table, base);
}

static const struct table preset_table;

struct presets {
	dsb_preset *v;
	size_t n;
};

static void presets_done(struct presets *t)
{
	config_presets_free(t->v, t->n);
}

/* permission.presets: a new table replacing the defaults as a whole, in declaration order. */
static int parse_presets(struct parser *p, const struct field *f, void *base)
{
	_cleanup_(presets_done) struct presets t = {NULL, 0};
	dsb_config *cfg = base;
	yaml_mark_t mark = *here(p);
	size_t n_items = 0;
	int r;

	if (p->event.type != YAML_MAPPING_START_EVENT)
		return fail_type(p, "a mapping");
	while ((r = next_entry(p, &n_items)) > 0) {
		if ((r = check_key(p)) < 0)
			return r;

		const char *key = scalar(p);
		if (!*key)
			return fail_at(p, here(p), "preset names must be non-empty");
		if (strcmp(key, "custom") == 0)
			return fail_spec_at(p, here(p),
					    "permission: \"custom\" is reserved for the derived "
					    "not-a-preset state and cannot name a table entry");
		for (size_t i = 0; i < t.n; i++)
			if (strcmp(t.v[i].key, key) == 0)
				return fail_at(p, here(p), "duplicate key \"%s\"", show(p, key));

		dsb_preset *grown = reallocarray(t.v, t.n + 1, sizeof(*grown));
		if (!grown)
			return fail_oom(p);
		t.v = grown;
		dsb_preset *e = &t.v[t.n++];
		*e = (dsb_preset){.key = strdup(key)};
		if (!e->key)
			return fail_oom(p);

		size_t saved = path_push(p, e->key);
		if ((r = next(p)) < 0 || (r = parse_table(p, &preset_table, e)) < 0)
			return r;
		path_pop(p, saved);
	}
	if (r < 0)
		return r;
	if (t.n == 0)
		return fail_at(p, &mark, "must define at least one preset");

	config_presets_free(cfg->presets, cfg->n_presets);
	cfg->n_presets = t.n;
	cfg->presets = TAKE_PTR(t.v);
	t.n = 0;
	return 0;
}

/* The runner cross-checks of dsh-compat §1.4, once the whole sandbox-local section is known. */
static int check_local(struct parser *p, void *base, const yaml_mark_t *mark,
		       const yaml_mark_t *marks)
{
	const dsb_config *cfg = base;
	bool runner = cfg->runner_command[0], signatures = cfg->runner_failure_signatures[0];

	if (signatures && !runner)
		return fail_spec_at(
			p, mark, "sandbox-local: runnerFailureSignatures requires runnerCommand");
	if (runner && !signatures)
		return fail_spec_at(p, mark,
				    "sandbox-local: runnerCommand requires at least one "
				    "runnerFailureSignatures entry");
	/* DSH trims with String.prototype.trim(); ASCII whitespace is what occurs in practice. */
	for (char **s = cfg->runner_failure_signatures; *s; s++)
		if ((*s)[strspn(*s, " \t\n\v\f\r")] == '\0' || strpbrk(*s, "\r\n"))
			return fail_spec_at(
				p, mark,
				"sandbox-local: runnerFailureSignatures entries must be "
				"non-empty single-line strings");
	return 0;
}

enum {
	PERMISSION_PRESETS,
	PERMISSION_DEFAULT_PRESET,
};

/* defaultPreset names an entry of the final table: the one read just now, or the defaults. */
static int check_permission(struct parser *p, void *base, const yaml_mark_t *mark,
			    const yaml_mark_t *marks)
{
	const dsb_config *cfg = base;
	char known[1024] = "";

	if (!cfg->default_preset)
		return 0;
	for (size_t i = 0; i < cfg->n_presets; i++) {
		if (strcmp(cfg->presets[i].key, cfg->default_preset) == 0)
			return 0;
		size_t n = strlen(known);
		(void)snprintf(known + n, sizeof(known) - n, "%s%s", i ? ", " : "",
			       cfg->presets[i].key);
	}
	(void)path_push(p, "defaultPreset");
	return fail_spec_at(p, &marks[PERMISSION_DEFAULT_PRESET],
			    "permission: unknown preset \"%s\" (known: %s)",
			    show(p, cfg->default_preset), known);
}

enum {
	NETWORK_ACCESS,
	NETWORK_ALLOW,
	NETWORK_DENY,
	NETWORK_PROXY_PORT,
	NETWORK_HOSTS,
	NETWORK_ALLOW_PRIVATE,
};

/* An allowlist that allows nothing is a mistake, not a policy: refused with where it is set. */
static int check_network(struct parser *p, void *base, const yaml_mark_t *mark,
			 const yaml_mark_t *marks)
{
	const dsb_config *cfg = base;

	if (cfg->network_access != DSB_NETWORK_ALLOWLIST || cfg->network_allow[0])
		return 0;
	(void)path_push(p, "access");
	return fail_at(p, &marks[NETWORK_ACCESS],
		       "allowlist needs at least one allowed host (network.allow is empty)");
}

/* limits.KEY: a count, or a size (512M, 2G); 0 for none. Set explicitly either way. */
static int parse_limit(struct parser *p, const struct field *f, void *base)
{
	dsb_config *cfg = base;
	dsb_limit l = dsb_limit_from_string(f->key);
	const char *s;
	uint64_t v;
	int r = expect_scalar(p, !dsb_limit_is_size(l), &s); /* 2G is a string to YAML */
	if (r < 0)
		return r;
	if (dsb_limit_parse(l, s, f->key, &v, NULL) < 0)
		return fail_at(
			p, here(p),
			dsb_limit_is_size(l)
				? "invalid value \"%s\" (a number of bytes, or one with K, M, "
				  "G or T: 512M, 2G; 0 for none)"
				: "invalid value \"%s\" (a whole number; 0 for none)",
			show(p, s));
	cfg->limits.value[l] = v;
	cfg->limits.set |= 1u << l;
	return 0;
}

/* --- the schema: every key of the document, in the order error messages list them ----------- */

/* One key per line reads as the document it describes. */
/* clang-format off */
#define TABLE(fields, check) {fields, ELEMENTSOF(fields), check}
#define NUMBER(k, member, limit) \
	{.key = (k), .parse = parse_u64, .offset = offsetof(dsb_config, member), .max = (limit)}

static const struct field policy_fields[] = {
	{.key = "mode",          .parse = parse_mode,   .offset = offsetof(dsb_config, mode)},
	{.key = "workspaceRoot", .parse = parse_string, .offset = offsetof(dsb_config, workspace_root),
	 .nonempty = true, .max = DSB_PATH_MAX},
	{.key = "protectedPaths", .parse = parse_protected_paths,
	 .offset = offsetof(dsb_config, protected_paths), .nonempty = true},
	{.key = "protectGit",    .parse = parse_bool,   .offset = offsetof(dsb_config, protect_git)},
	{.key = "denyRead",      .parse = parse_deny_read, .offset = offsetof(dsb_config, deny_read),
	 .nonempty = true},
	{.key = "writableRoots", .parse = parse_writable_roots,
	 .offset = offsetof(dsb_config, writable_roots), .nonempty = true},
	{.key = "protectDefaults", .parse = parse_bool,
	 .offset = offsetof(dsb_config, protect_defaults)},
};

static const struct field local_fields[] = {
	{.key = "backends", .parse = parse_backends},
	NUMBER("probeTimeoutMs", probe_timeout_ms, 0),
	{.key = "runnerCommand", .parse = parse_strv, .offset = offsetof(dsb_config, runner_command),
	 .nonempty = true},
	{.key = "runnerFailureSignatures", .parse = parse_strv,
	 .offset = offsetof(dsb_config, runner_failure_signatures)},
	{.key = "landlockScope", .parse = parse_scope},
	NUMBER("landlockAbiMax", landlock_abi_max, 7),
	{.key = "evidence", .parse = parse_bool, .offset = offsetof(dsb_config, evidence)},
};

static const struct field bash_fields[] = {
	NUMBER("timeoutMs",      timeout_ms,       0),
	NUMBER("maxTimeoutMs",   max_timeout_ms,   0),
	NUMBER("maxOutputBytes", max_output_bytes, 0),
	NUMBER("maxSpillBytes",  max_spill_bytes,  0),
	NUMBER("graceMs",        grace_ms,         DSB_MAX_GRACE_MS),
	{.key = "scrubEnv", .parse = parse_scrub_env},
};

static const struct field approval_fields[] = {
	{.key = "policy",   .parse = parse_approval, .offset = offsetof(dsb_config, approval_policy)},
	{.key = "answerer", .parse = parse_strv,     .offset = offsetof(dsb_config, answerer),
	 .nonempty = true},
	NUMBER("timeoutMs", approval_timeout_ms, 0),
	{.key = "sessionGrants", .parse = parse_bool, .offset = offsetof(dsb_config, session_grants)},
};

static const struct field permission_fields[] = {
	[PERMISSION_PRESETS]        = {.key = "presets",       .parse = parse_presets},
	[PERMISSION_DEFAULT_PRESET] = {.key = "defaultPreset", .parse = parse_string,
				       .offset = offsetof(dsb_config, default_preset)},
};

static const struct field preset_fields[] = {
	{.key = "sandbox",     .parse = parse_mode,     .offset = offsetof(dsb_preset, sandbox),
	 .required = true},
	{.key = "approval",    .parse = parse_approval, .offset = offsetof(dsb_preset, approval),
	 .required = true},
	{.key = "name",        .parse = parse_string,   .offset = offsetof(dsb_preset, name)},
	{.key = "description", .parse = parse_string,   .offset = offsetof(dsb_preset, description)},
};

static const struct field network_fields[] = {
	[NETWORK_ACCESS]     = {.key = "access", .parse = parse_network_access,
				.offset = offsetof(dsb_config, network_access)},
	[NETWORK_ALLOW]      = {.key = "allow", .parse = parse_host_patterns,
				.offset = offsetof(dsb_config, network_allow)},
	[NETWORK_DENY]       = {.key = "deny", .parse = parse_host_patterns,
				.offset = offsetof(dsb_config, network_deny)},
	[NETWORK_PROXY_PORT] = {.key = "proxyPort", .parse = parse_port,
				.offset = offsetof(dsb_config, network_proxy_port)},
	[NETWORK_HOSTS]      = {.key = "hosts", .parse = parse_network_hosts,
				.offset = offsetof(dsb_config, network_hosts)},
	[NETWORK_ALLOW_PRIVATE] = {.key = "allowPrivate", .parse = parse_address_ranges,
				.offset = offsetof(dsb_config, network_allow_private)},
};

static const struct field limits_fields[] = {
	{.key = "processes",   .parse = parse_limit},
	{.key = "memoryBytes", .parse = parse_limit},
	{.key = "cpuSeconds",  .parse = parse_limit},
	{.key = "tmpBytes",    .parse = parse_limit},
	{.key = "fileBytes",   .parse = parse_limit},
};

static const struct table policy_table     = TABLE(policy_fields, NULL);
static const struct table local_table      = TABLE(local_fields, check_local);
static const struct table bash_table       = TABLE(bash_fields, NULL);
static const struct table approval_table   = TABLE(approval_fields, NULL);
static const struct table permission_table = TABLE(permission_fields, check_permission);
static const struct table preset_table     = TABLE(preset_fields, NULL);
static const struct table network_table    = TABLE(network_fields, check_network);
static const struct table limits_table     = TABLE(limits_fields, NULL);

static const struct field top_fields[] = {
	{.key = "sandbox-policy", .parse = parse_section, .table = &policy_table},
	{.key = "sandbox-local",  .parse = parse_section, .table = &local_table},
	{.key = "bash",           .parse = parse_section, .table = &bash_table},
	{.key = "approval",       .parse = parse_section, .table = &approval_table},
	{.key = "permission",     .parse = parse_section, .table = &permission_table},
	{.key = "network",        .parse = parse_section, .table = &network_table},
	{.key = "limits",         .parse = parse_section, .table = &limits_table},
};

static const struct table top_table = TABLE(top_fields, NULL);
/* clang-format on */

/* --- documents ------------------------------------------------------------------------------- */

/* STREAM-START, then no document or one whose root is null or a mapping, then STREAM-END. */
static int parse_stream(struct parser *p, dsb_config *cfg)
{
	int r = next(p); /* STREAM-START */
	if (r < 0)
		return r;
	if ((r = next(p)) < 0) /* DOCUMENT-START or STREAM-END */
		return r;
	if (p->event.type == YAML_STREAM_END_EVENT)
		return 0;

	if ((r = next(p)) < 0) /* the root node */
		return r;
	if (p->event.type == YAML_MAPPING_START_EVENT)
		r = parse_table(p, &top_table, cfg);
	else if (!is_null(&p->event))
		r = fail_at(p, here(p), "expected a mapping at the top level, got %s",
			    describe(&p->event));
	if (r < 0)
		return r;

	if ((r = next(p)) < 0) /* DOCUMENT-END */
		return r;
	/* Anything but STREAM-END now starts a second document. */
	if ((r = next(p)) < 0)
		return r;
	if (p->event.type != YAML_STREAM_END_EVENT)
		return fail_at(p, here(p), "only one YAML document is allowed");
	return 0;
}

static void parser_done(struct parser *p)
{
	yaml_event_delete(&p->event);
	if (p->initialized)
		yaml_parser_delete(&p->yaml);
}

static void config_freep(dsb_config **cfg)
{
	*cfg = dsb_config_free(*cfg);
}

int dsb_config_parse(const char *buf, size_t len, const char *origin, dsb_config **ret_cfg,
		     dsb_error *reterr)
{
	_cleanup_(parser_done) struct parser p = {
		.buf = buf ? buf : "",
		.len = len,
		.origin = origin ? origin : "<config>",
		.reterr = reterr,
	};
	_cleanup_(config_freep) dsb_config *cfg = NULL;
	int r;

	if (!ret_cfg || (!buf && len))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"no configuration buffer or result given");
	if (len > (size_t)DSB_CONFIG_MAX_BYTES)
		return dsb_fail(reterr, DSB_E_CONFIG_INVALID, "%s: larger than %d bytes", p.origin,
				DSB_CONFIG_MAX_BYTES);

	cfg = dsb_config_new();
	if (!cfg || !yaml_parser_initialize(&p.yaml))
		return fail_oom(&p);
	p.initialized = true;
	yaml_parser_set_input_string(&p.yaml, (const unsigned char *)p.buf, len);
	/* DSH reads its files as UTF-8; no guessing UTF-16 from a byte-order mark. */
	yaml_parser_set_encoding(&p.yaml, YAML_UTF8_ENCODING);

	if ((r = parse_stream(&p, cfg)) < 0)
		return r;
	*ret_cfg = TAKE_PTR(cfg);
	return 0;
}

static int fail_file(dsb_error *reterr, const char *path, int errnum, const char *what)
{
	/* A configuration that cannot be read is as wrong as one that does not parse. */
	int r = errnum ? dsb_fail_errno(reterr, DSB_E_CONFIG_INVALID, errnum, "%s: %s", path, what)
		       : dsb_fail(reterr, DSB_E_CONFIG_INVALID, "%s: %s", path, what);
	dsb_error_set_subject(reterr, path);
	return r;
}

int dsb_config_load_file(const char *path, dsb_config **ret_cfg, dsb_error *reterr)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	const size_t cap = (size_t)DSB_CONFIG_MAX_BYTES + 1;
	struct stat st;
	size_t len = 0;

	if (!path || !ret_cfg)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"no configuration path or result given");

	/* O_NONBLOCK: opening a FIFO must not hang before fstat() gets to refuse it. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return fail_file(reterr, path, errno, "cannot open");
	if (fstat(fd, &st) < 0)
		return fail_file(reterr, path, errno, "cannot stat");
	if (!S_ISREG(st.st_mode))
		return fail_file(reterr, path, 0, "not a regular file");

	/* One byte past the limit lets dsb_config_parse() tell an overlarge file. */
	buf = malloc(cap);
	if (!buf)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "%s: out of memory", path);
	while (len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fail_file(reterr, path, errno, "cannot read");
		if (n == 0)
			break;
		len += (size_t)n;
	}
	dsb_config *cfg = NULL;
	int r = dsb_config_parse(buf, len, path, &cfg, reterr);
	if (r < 0)
		return r;
	/* The file that sets the policy is protected from the commands it confines. */
	cfg->file = realpath(path, NULL);
	if (!cfg->file) {
		dsb_config_free(cfg);
		return fail_file(reterr, path, errno, "cannot resolve");
	}
	*ret_cfg = cfg;
	return 0;
}
