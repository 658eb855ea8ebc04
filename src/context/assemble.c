/* SPDX-License-Identifier: MIT */
/*
 * Assembly of the runtime contexts (dsh-compat §9.2), as DSH's system-prompt service does it:
 * contexts registered by name with an order, sorted stably by order, each text interpolated
 * strictly
 * ({{name}} references to registered variables; malformed or unknown references fail, a lone
 * "{{" is prose), empty texts dropped, the rest joined under one fixed header. Any deviation
 * changes the snapshot's bytes, and with them the provider's cache and when a snapshot is sent.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

/* How DSH prints VARIABLE_NAME in its messages. */
#define VARIABLE_PATTERN "/^[a-z][a-z0-9_]*$/"

/* How many UTF-16 code units of the text a malformed-reference message quotes. */
#define MALFORMED_QUOTE_UNITS 16

void context_assembly_done(context_assembly *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n_entries; i++) {
		free(a->entries[i].name);
		free(a->entries[i].text);
	}
	free(a->entries);
	for (size_t i = 0; i < a->n_variables; i++) {
		free(a->variables[i].name);
		free(a->variables[i].value);
	}
	free(a->variables);
	*a = (context_assembly){0};
}

void context_sections_done(context_sections *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->items[i].name);
		free(s->items[i].text);
	}
	free(s->items);
	*s = (context_sections){0};
}

int context_assembly_add(context_assembly *a, const char *name, double order, const char *text,
			 dsb_error *reterr)
{
	if (!a || !name || !text)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"context_assembly_add: missing argument");
	if (!isfinite(order))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"prompt context \"%s\" order must be a finite number", name);
	if (!*name)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"prompt context name must be non-empty");
	for (size_t i = 0; i < a->n_entries; i++)
		if (strcmp(a->entries[i].name, name) == 0)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS,
					"prompt context \"%s\" is already registered (for a "
					"per-agent override, register through that agent's "
					"`agent.ctx` instead)",
					name);

	context_entry *grown = reallocarray(a->entries, a->n_entries + 1, sizeof(*grown));
	if (!grown)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	a->entries = grown;
	context_entry e = {.name = strdup(name), .order = order, .text = strdup(text)};
	if (!e.name || !e.text) {
		free(e.name);
		free(e.text);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	}
	a->entries[a->n_entries++] = e;
	return 0;
}

/* VARIABLE_NAME: [a-z][a-z0-9_]*, @len bytes. */
static bool variable_name_valid(const char *s, size_t len)
{
	if (len == 0 || s[0] < 'a' || s[0] > 'z')
		return false;
	for (size_t i = 1; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

static const context_variable *find_variable(const context_assembly *a, const char *name,
					     size_t len)
{
	for (size_t i = 0; i < a->n_variables; i++)
		if (strlen(a->variables[i].name) == len &&
		    memcmp(a->variables[i].name, name, len) == 0)
			return &a->variables[i];
	return NULL;
}

int context_assembly_set_variable(context_assembly *a, const char *name, const char *value,
				  dsb_error *reterr)
{
	if (!a || !name)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"context_assembly_set_variable: missing argument");
	if (!variable_name_valid(name, strlen(name)))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"invalid prompt variable name \"%s\" (must match " VARIABLE_PATTERN
				")",
				name);
	if (find_variable(a, name, strlen(name)))
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"prompt variable \"%s\" is already registered (for a per-agent "
				"value, register through that agent's `agent.ctx` instead)",
				name);

	context_variable *grown = reallocarray(a->variables, a->n_variables + 1, sizeof(*grown));
	if (!grown)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	a->variables = grown;
	context_variable v = {.name = strdup(name), .value = value ? strdup(value) : NULL};
	if (!v.name || (value && !v.value)) {
		free(v.name);
		free(v.value);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	}
	a->variables[a->n_variables++] = v;
	return 0;
}

/* The bytes of @s (@len) that String.prototype.slice(0, @units) keeps, whole code points only. */
static size_t utf16_prefix(const char *s, size_t len, size_t units)
{
	size_t i = 0, used = 0;
	while (i < len) {
		size_t next = i;
		uint32_t cp = utf8_next(s, len, &next);
		size_t w = cp > 0xFFFF ? 2 : 1;
		if (used + w > units)
			break;
		used += w;
		i = next;
	}
	return i;
}

/* The "{{...}}" group at @p (which starts with "{{"): its length, or 0 when there is none. */
static size_t group_at(const char *p)
{
	const char *q = p + 2;
	while (*q && *q != '{' && *q != '}')
		q++;
	return q[0] == '}' && q[1] == '}' ? (size_t)(q + 2 - p) : 0;
}

int context_interpolate(const context_assembly *a, const char *owner, const char *text,
			char **ret_text, dsb_error *reterr)
{
	strbuf sb = STRBUF_INIT;
	size_t len = strlen(text), last = 0;
	int r = 0;

	for (const char *open = strstr(text, "{{"); r >= 0 && open;
	     open = strstr(text + last, "{{")) {
		size_t at = (size_t)(open - text);
		size_t glen = group_at(open);
		if (glen == 0) {
			/* A later "}}" makes this a broken reference; otherwise it is prose. */
			if (strstr(open + 2, "}}")) {
				size_t n = utf16_prefix(open, len - at, MALFORMED_QUOTE_UNITS);
				strbuf_done(&sb);
				return dsb_fail(
					reterr, DSB_E_INVALID_ARGS,
					"malformed prompt variable reference at "
					"\"%.*s\xE2\x80\xA6\" in context \"%s\" (references are "
					"complete simple {{name}} groups)",
					(int)n, open, owner);
			}
			r = strbuf_append(&sb, text + last, at + 2 - last);
			last = at + 2;
			continue;
		}
		const char *name = open + 2;
		size_t nlen = glen - 4;
		if (!variable_name_valid(name, nlen)) {
			strbuf_done(&sb);
			return dsb_fail(
				reterr, DSB_E_INVALID_ARGS,
				"malformed prompt variable reference \"{{%.*s}}\" in context "
				"\"%s\" (variable names match " VARIABLE_PATTERN ")",
				(int)nlen, name, owner);
		}
		const context_variable *v = find_variable(a, name, nlen);
		if (!v) {
			strbuf known = STRBUF_INIT;
			for (size_t i = 0; i < a->n_variables; i++)
				(void)strbuf_printf(&known, "%s%s", i ? ", " : "",
						    a->variables[i].name);
			strbuf_done(&sb);
			r = dsb_fail(reterr, DSB_E_INVALID_ARGS,
				     "unknown prompt variable \"{{%.*s}}\" in context \"%s\"; "
				     "registered variables: %s",
				     (int)nlen, name, owner, known.len ? known.buf : "(none)");
			strbuf_done(&known);
			return r;
		}
		if (!v->value) {
			strbuf_done(&sb);
			return dsb_fail(
				reterr, DSB_E_INVALID_ARGS,
				"prompt variable \"{{%.*s}}\" has no value for this assembly "
				"(context \"%s\")",
				(int)nlen, name, owner);
		}
		/* The value is inserted as it is and never scanned again. */
		r = strbuf_append(&sb, text + last, at - last);
		if (r >= 0)
			r = strbuf_puts(&sb, v->value);
		last = at + glen;
	}
	if (r >= 0)
		r = strbuf_append(&sb, text + last, len - last);
	char *out = r >= 0 ? strbuf_take(&sb) : NULL;
	strbuf_done(&sb);
	if (!out)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	*ret_text = out;
	return 0;
}

int context_render_sections(const context_assembly *a, context_sections *ret, dsb_error *reterr)
{
	/* Array.prototype.sort by order is stable: an insertion sort of the indices keeps ties. */
	_cleanup_free_ size_t *idx = calloc(a->n_entries ? a->n_entries : 1, sizeof(*idx));
	if (!idx)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	for (size_t i = 0; i < a->n_entries; i++) {
		size_t j = i;
		while (j > 0 && a->entries[idx[j - 1]].order > a->entries[i].order) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}

	context_sections out = {0};
	out.items = calloc(a->n_entries ? a->n_entries : 1, sizeof(*out.items));
	if (!out.items)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	for (size_t k = 0; k < a->n_entries; k++) {
		const context_entry *e = &a->entries[idx[k]];
		_cleanup_free_ char *text = NULL;
		int r = context_interpolate(a, e->name, e->text, &text, reterr);
		if (r < 0) {
			context_sections_done(&out);
			return r;
		}
		if (!*text)
			continue;
		char *name = strdup(e->name);
		if (!name) {
			context_sections_done(&out);
			return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
		}
		out.items[out.n++] = (context_section){.name = name, .text = TAKE_PTR(text)};
	}
	*ret = out;
	return 0;
}

int context_join(const context_sections *s, char **ret_text)
{
	strbuf body = STRBUF_INIT;
	int r = 0;
	for (size_t i = 0; r >= 0 && i < s->n; i++) {
		if (i > 0)
			r = strbuf_puts(&body, "\n\n");
		if (r >= 0)
			r = strbuf_puts(&body, s->items[i].text);
	}
	strbuf sb = STRBUF_INIT;
	if (r >= 0 && body.len > 0)
		r = strbuf_printf(&sb, "%s\n\n%s", DSB_CONTEXT_HEADER, body.buf);
	char *out = r >= 0 ? strbuf_take(&sb) : NULL;
	strbuf_done(&sb);
	strbuf_done(&body);
	if (!out)
		return -ENOMEM;
	*ret_text = out;
	return 0;
}
