/* SPDX-License-Identifier: MIT */
/*
 * Classifying a confined run from its exit code and stderr tail (DSH's bash-sandbox helpers):
 * did the sandbox runner itself fail (dsh-compat §5.8: nothing useful ran, the caller fails
 * closed), or did the sandbox deny a file operation of the command (§6.5: a result, told to the
 * model)? Both are case-insensitive substring tests against the selected backend's own dialect
 * only.
 *
 * DSH lower-cases with String.prototype.toLowerCase(); every signature and informational line a
 * backend ships is ASCII, so ASCII folding gives the same answers. Other bytes compare as they
 * are. Matching needs no allocation, and every ASCII byte (so every '\r', '\n' and signature
 * byte) survives UTF-8 decoding unchanged, so working on the raw bytes decides exactly as DSH
 * does on the decoded text; only the detail returned is decoded, as DSH's would be.
 */
#include <ctype.h>
#include <string.h>
#include <unistd.h>

#include "exec.h"

static unsigned char fold(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static bool equal_folded(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fold((unsigned char)a[i]) != fold((unsigned char)b[i]))
			return false;
	return true;
}

/* Whether @hay contains @needle, ASCII case-insensitively. An empty needle is found (JS). */
static bool contains_folded(const char *hay, size_t hay_len, const char *needle, size_t needle_len)
{
	if (needle_len > hay_len)
		return false;
	for (size_t i = 0; i + needle_len <= hay_len; i++)
		if (equal_folded(hay + i, needle, needle_len))
			return true;
	return false;
}

static bool allows_exit_code(const dsb_runner_rule *rule, int exit_code)
{
	if (!rule->allowed_exit_codes)
		return true;
	for (size_t i = 0; i < rule->n_allowed_exit_codes; i++)
		if (rule->allowed_exit_codes[i] == exit_code)
			return true;
	return false;
}

static bool is_informational(const dsb_runner_rule *rule, const char *line, size_t len)
{
	for (char **l = rule->informational_lines; l && *l; l++)
		if (strlen(*l) == len && equal_folded(line, *l, len))
			return true;
	return false;
}

static bool has_fatal_signature(const dsb_runner_rule *rule, const char *line, size_t len)
{
	for (char **s = rule->fatal_signatures; s && *s; s++)
		/* A blank signature would match any line: DSH drops it, keeping the others. */
		if (!js_blank(*s) && contains_folded(line, len, *s, strlen(*s)))
			return true;
	return false;
}

/* Returns the matching line of @rule in @text, or NULL; the line's length in *@ret_len. */
static const char *find_fatal_line(const dsb_runner_rule *rule, const char *text, size_t len,
				   size_t *ret_len)
{
	/* JS stderr.split(/\r?\n/): the '\r' of a "\r\n" belongs to the separator. */
	for (size_t start = 0;;) {
		const char *nl = memchr(text + start, '\n', len - start);
		size_t end = nl ? (size_t)(nl - text) : len;
		size_t line_end = nl && end > start && text[end - 1] == '\r' ? end - 1 : end;
		const char *line = text + start;
		size_t line_len = line_end - start;

		if (!is_informational(rule, line, line_len) &&
		    has_fatal_signature(rule, line, line_len)) {
			*ret_len = line_len;
			return line;
		}
		if (!nl)
			return NULL;
		start = end + 1;
	}
}

char *classify_runner_failure(int exit_code, const char *stderr_text, size_t stderr_len,
			      const dsb_runner_rule *rules, size_t n_rules)
{
	/* A signal death (< 0) or a clean exit is never runner evidence. */
	if (exit_code <= 0 || !rules)
		return NULL;
	if (!stderr_text) {
		stderr_text = "";
		stderr_len = 0;
	}

	for (size_t i = 0; i < n_rules; i++) {
		if (!allows_exit_code(&rules[i], exit_code))
			continue;
		size_t line_len = 0;
		const char *line = find_fatal_line(&rules[i], stderr_text, stderr_len, &line_len);
		if (!line)
			continue;

		/* The detail is text (it joins a model-facing error): decode it as DSH did. */
		char *detail = NULL;
		size_t detail_len = 0;
		if (utf8_sanitize(line, line_len, &detail, &detail_len) < 0)
			return NULL;
		return detail;
	}
	return NULL;
}

bool classify_denial(int exit_code, const char *stderr_text, size_t stderr_len,
		     char *const *signatures)
{
	/*
	 * A clean exit or a signal death (< 0) is never a denial: a command killed on timeout may
	 * have printed "Permission denied" on the way, but the sandbox did not end it.
	 */
	if (exit_code <= 0 || !signatures)
		return false;
	if (!stderr_text) {
		stderr_text = "";
		stderr_len = 0;
	}

	for (char *const *s = signatures; *s; s++)
		if (contains_folded(stderr_text, stderr_len, *s, strlen(*s)))
			return true;
	return false;
}

/* Whether @hay (@n bytes) holds @needle as a path: not inside a longer name on either side. */
static bool names_path(const char *hay, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (const char *p = hay; k > 0 && (size_t)(p - hay) + k <= n;) {
		const char *hit = memmem(p, n - (size_t)(p - hay), needle, k);
		if (!hit)
			return false;
		char before = hit > hay ? hit[-1] : ' ';
		char after = (size_t)(hit - hay) + k < n ? hit[k] : ' ';
		if (before != '/' && !isalnum((unsigned char)before) && before != '.' &&
		    before != '_' && before != '-' &&
		    (after == '/' || !(isalnum((unsigned char)after) || after == '.' ||
				       after == '_' || after == '-')))
			return true;
		p = hit + 1;
	}
	return false;
}

int classify_protected(const char *stderr_text, size_t stderr_len, const dsb_exec_policy *p,
		       const char *workdir, char **ret_note)
{
	*ret_note = NULL;
	if (!stderr_text || !p || p->n_protected == 0)
		return 0;
	_cleanup_free_ char *cwd = workdir ? NULL : getcwd(NULL, 0);
	_cleanup_free_ char *base = NULL;
	if ((workdir || cwd) && path_canonical(workdir ? workdir : cwd, &base) < 0)
		return -ENOMEM;

	_cleanup_(strbuf_done) strbuf sb = STRBUF_INIT;
	for (size_t i = 0; i < p->n_protected; i++) {
		const dsb_protected *e = &p->protected[i];
		/* As spelled from the working directory too: "cannot create .git/hooks/x". */
		const char *rel = NULL;
		size_t n = base ? strlen(base) : 0;
		if (base && path_is_under(e->path, base) && e->path[n])
			rel = e->path + n + (n > 1);
		if (!names_path(stderr_text, stderr_len, e->path) &&
		    !(rel && names_path(stderr_text, stderr_len, rel)))
			continue;
		if (strbuf_printf(&sb, "%s[sandbox: %s is protected: %s]", sb.len ? "\n" : "",
				  e->path, dsb_protect_kind_reason(e->kind)) < 0)
			return -ENOMEM;
	}
	if (sb.len && !(*ret_note = strbuf_take(&sb)))
		return -ENOMEM;
	return 0;
}

int network_note(bool allowlist, bool failed, unsigned refused, char *const *named, char **ret_note)
{
	_cleanup_(strbuf_done) strbuf sb = STRBUF_INIT;
	int r = 0;
	*ret_note = NULL;
	for (size_t i = 0; allowlist && r >= 0 && named && named[i]; i++) {
		if (named[i][0] == '/')
			continue;
		/* "HOST" when no rule allows it; "HOST[:PORT]\tWHY" when the proxy said why. */
		const char *tab = strchr(named[i], '\t');
		if (sb.len > 0)
			r = strbuf_putc(&sb, '\n');
		if (r >= 0)
			r = strbuf_printf(&sb, "[sandbox: network access to %.*s denied (%s)]",
					  tab ? (int)(tab - named[i]) : (int)strlen(named[i]),
					  named[i], tab ? tab + 1 : "not in the allow-list");
	}
	if (r >= 0 && sb.len == 0 && failed && refused > 0)
		r = strbuf_puts(&sb, "[sandbox: network access is disabled under this policy]");
	if (r < 0)
		return -ENOMEM;
	if (sb.len > 0 && !(*ret_note = strdup(sb.buf)))
		return -ENOMEM;
	return 0;
}

/* A size as people write it: 256M, 2G, 1536K; bytes when no unit divides it. */
static void size_text(uint64_t v, char *buf, size_t size)
{
	static const char units[] = "KMGT";
	int u = -1;
	while (v && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		(void)snprintf(buf, size, "%llu bytes", (unsigned long long)v);
	else
		(void)snprintf(buf, size, "%llu%c", (unsigned long long)v, units[u]);
}

int limit_note(unsigned hits, uint64_t processes, uint64_t memory, char **ret_note)
{
	_cleanup_(strbuf_done) strbuf sb = STRBUF_INIT;
	int r = 0;
	*ret_note = NULL;
	if (hits & (1u << DSB_LIMIT_PROCESSES))
		r = strbuf_printf(&sb, "[sandbox: process limit (%llu) reached]",
				  (unsigned long long)processes);
	if (r >= 0 && (hits & (1u << DSB_LIMIT_MEMORY))) {
		char size[48];
		size_text(memory, size, sizeof(size));
		r = strbuf_printf(&sb,
				  "%s[sandbox: memory limit (%s) reached; the command was killed]",
				  sb.len ? "\n" : "", size);
	}
	if (r < 0)
		return -ENOMEM;
	if (sb.len > 0 && !(*ret_note = strbuf_take(&sb)))
		return -ENOMEM;
	return 0;
}
