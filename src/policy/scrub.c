/* SPDX-License-Identifier: MIT */
/*
 * The environment scrub: which of the caller's variables a command never sees. DSH's rule
 * (dsh-compat §6.2) is the floor and always applies; bash.scrubEnv adds rules, each a POSIX
 * extended regular expression over the name (or, written "value:...", over the value), compiled
 * once when the config loads. The default list is matched by hand-written equivalents of its
 * expressions: the CLI loads the config and builds an environment on every tool call, and in a
 * fresh process the first regcomp() alone costs more than the whole scrub's budget of about 20 µs
 * (docs/design/environment.md has the measurements). A unit test checks every equivalent against
 * its expression.
 *
 * Names and values are matched where they lie in the NAME=VALUE entry, whatever their length:
 * nothing is copied, nothing allocated.
 */
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

/* --- matching without copying ----------------------------------------------------------------- */

/* ASCII only, as the C locale we run in and JavaScript's /i without the u flag both fold. */
static char upper(char c)
{
	return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

/* Whether @s (@n bytes) holds @word (upper case, @len bytes) at @i, ignoring case. */
static bool at_ci(const char *s, size_t n, size_t i, const char *word, size_t len)
{
	if (i > n || n - i < len)
		return false;
	for (size_t k = 0; k < len; k++)
		if (upper(s[i + k]) != word[k])
			return false;
	return true;
}

#define AT(s, n, i, word) at_ci(s, n, i, word, sizeof(word) - 1)

static bool has_ci(const char *s, size_t n, const char *word, size_t len)
{
	for (size_t i = 0; i + len <= n; i++)
		if (upper(s[i]) == word[0] && at_ci(s, n, i + 1, word + 1, len - 1))
			return true;
	return false;
}

#define HAS(s, n, word) has_ci(s, n, word, sizeof(word) - 1)

/* (^|_) before @i, and (_|$) at @i. */
static bool word_starts(const char *s, size_t i)
{
	return i == 0 || s[i - 1] == '_';
}

static bool word_ends(const char *s, size_t n, size_t i)
{
	return i == n || s[i] == '_';
}

/* --- DSH's rule: the floor -------------------------------------------------------------------- */

/*
 * name.toUpperCase().startsWith('DSH_'). The one non-ASCII character JavaScript upper-cases into
 * one of these is U+017F LATIN SMALL LETTER LONG S ("ſ" -> "S"); Node reads names as UTF-8.
 */
static bool dsh_prefix(const char *s, size_t n)
{
	size_t i = 1;

	if (n < 4 || upper(s[0]) != 'D')
		return false;
	if (upper(s[i]) == 'S')
		i++;
	else if (n >= 5 && s[i] == '\xc5' && s[i + 1] == '\xbf')
		i += 2;
	else
		return false;
	return upper(s[i]) == 'H' && s[i + 1] == '_';
}

/* /KEY|PASSWORD|SECRET|TOKEN/i over the whole name, or the DSH_ prefix. */
static bool dsh_rule(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		switch (upper(s[i])) {
		case 'K':
			if (AT(s, n, i, "KEY"))
				return true;
			break;
		case 'P':
			if (AT(s, n, i, "PASSWORD"))
				return true;
			break;
		case 'S':
			if (AT(s, n, i, "SECRET"))
				return true;
			break;
		case 'T':
			if (AT(s, n, i, "TOKEN"))
				return true;
			break;
		default:
			break;
		}
	}
	return dsh_prefix(s, n);
}

/* --- the default list, each entry with its hand-written equivalent ---------------------------- */

/* (^|_)PAT$: personal access tokens (GITHUB_PAT, AZURE_DEVOPS_EXT_PAT). */
static bool match_pat(const char *s, size_t n)
{
	return n >= 3 && AT(s, n, n - 3, "PAT") && word_starts(s, n - 3);
}

/* (^|_)O?AUTH([NZ]|ORIZATION|ENTICATION)?(_|$): the words AUTH, OAUTH, AUTHZ..., not AUTHOR. */
static bool match_auth(const char *s, size_t n)
{
	static const struct {
		const char *text;
		size_t len;
	} tails[] = {{"", 0}, {"N", 1}, {"Z", 1}, {"ORIZATION", 9}, {"ENTICATION", 10}};

	for (size_t i = 0; i + 4 <= n; i++) {
		if (!AT(s, n, i, "AUTH"))
			continue;
		if (!word_starts(s, i) &&
		    !(i > 0 && upper(s[i - 1]) == 'O' && word_starts(s, i - 1)))
			continue;
		for (size_t t = 0; t < ELEMENTSOF(tails); t++)
			if (at_ci(s, n, i + 4, tails[t].text, tails[t].len) &&
			    word_ends(s, n, i + 4 + tails[t].len))
				return true;
	}
	return false;
}

static bool match_credential(const char *s, size_t n)
{
	return HAS(s, n, "CREDENTIAL");
}

static bool match_private(const char *s, size_t n)
{
	return HAS(s, n, "PRIVATE");
}

static bool match_cookie(const char *s, size_t n)
{
	return HAS(s, n, "COOKIE");
}

static bool match_passwd(const char *s, size_t n)
{
	return HAS(s, n, "PASSWD");
}

static bool match_passphrase(const char *s, size_t n)
{
	return HAS(s, n, "PASSPHRASE");
}

/* (^|_)PASS(_|$): DB_PASS, SMTP_PASS; not GIT_ASKPASS (a program) or BYPASS. */
static bool match_pass(const char *s, size_t n)
{
	for (size_t i = 0; i + 4 <= n; i++)
		if (AT(s, n, i, "PASS") && word_starts(s, i) && word_ends(s, n, i + 4))
			return true;
	return false;
}

/* _PWD$: MYSQL_PWD; not PWD or OLDPWD, the shell's. */
static bool match_pwd(const char *s, size_t n)
{
	return n >= 4 && AT(s, n, n - 4, "_PWD");
}

/* (^|_)DSN$: SENTRY_DSN, DATABASE_DSN. */
static bool match_dsn(const char *s, size_t n)
{
	return n >= 3 && AT(s, n, n - 3, "DSN") && word_starts(s, n - 3);
}

static bool match_webhook(const char *s, size_t n)
{
	return HAS(s, n, "WEBHOOK");
}

/* CONNECTION_?STRING: AZURE_STORAGE_CONNECTION_STRING, ConnectionStrings__Default. */
static bool match_connection_string(const char *s, size_t n)
{
	return HAS(s, n, "CONNECTIONSTRING") || HAS(s, n, "CONNECTION_STRING");
}

static bool is_scheme_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '.' || c == '-';
}

static bool is_letter(char c)
{
	return upper(c) >= 'A' && upper(c) <= 'Z';
}

static bool is_one_of(char c, const char *set)
{
	return c != '\0' && strchr(set, c);
}

/*
 * value:[a-z][a-z0-9+.-]*://[^/?#@:]*:[^/?#@]*@ — a URL anywhere in the value whose userinfo
 * holds a password: postgres://app:pw@db/x, jdbc:mysql://u:pw@h, https://:tok@host.
 */
static bool match_url_password(const char *s, size_t n)
{
	const char *end = s + n;

	for (const char *p = memmem(s, n, "://", 3); p;
	     p = memmem(p + 1, (size_t)(end - p - 1), "://", 3)) {
		/* [a-z][a-z0-9+.-]* up to "://": a letter in the run of scheme characters. */
		bool scheme = false;
		for (const char *q = p; q > s && is_scheme_char(q[-1]) && !scheme; q--)
			scheme = is_letter(q[-1]);
		if (!scheme)
			continue;

		const char *q = p + 3;
		while (q < end && !is_one_of(*q, "/?#@:"))
			q++;
		if (q == end || *q != ':')
			continue;
		for (q++; q < end && !is_one_of(*q, "/?#@"); q++)
			;
		if (q < end && *q == '@')
			return true;
	}
	return false;
}

/*
 * The default list, in the order docs/design/environment.md explains it, each entry with the
 * letters every name it matches contains: most names lack one, and a mask test rejects them.
 */
/* clang-format off */
static const struct {
	const char *text;
	bool (*literal)(const char *s, size_t n);
	const char *letters;
} defaults[] = {
	{"(^|_)PAT$",                                     match_pat,               "PAT"},
	{"(^|_)O?AUTH([NZ]|ORIZATION|ENTICATION)?(_|$)",   match_auth,              "AUTH"},
	{"CREDENTIAL",                                    match_credential,        "CREDENTIAL"},
	{"PRIVATE",                                       match_private,           "PRIVATE"},
	{"COOKIE",                                        match_cookie,            "COOKIE"},
	{"PASSWD",                                        match_passwd,            "PASSWD"},
	{"PASSPHRASE",                                    match_passphrase,        "PASSPHRASE"},
	{"(^|_)PASS(_|$)",                                match_pass,              "PASS"},
	{"_PWD$",                                         match_pwd,               "PWD"},
	{"(^|_)DSN$",                                     match_dsn,               "DSN"},
	{"WEBHOOK",                                       match_webhook,           "WEBHOOK"},
	{"CONNECTION_?STRING",                            match_connection_string, "CONNECTIONSTRING"},
	{"value:[a-z][a-z0-9+.-]*://[^/?#@:]*:[^/?#@]*@", match_url_password,      ""},
};
/* clang-format on */

/* The set of ASCII letters in @s, ignoring case: bit 0 for A, 25 for Z. */
static uint32_t letter_set(const char *s, size_t n)
{
	uint32_t set = 0;

	for (size_t i = 0; i < n; i++) {
		char c = upper(s[i]);
		if (c >= 'A' && c <= 'Z')
			set |= 1u << (c - 'A');
	}
	return set;
}

/* --- compiling configured rules --------------------------------------------------------------- */

/* The ']' closing the bracket expression opening at @p, or the character before the NUL. */
static const char *bracket_end(const char *p)
{
	const char *q = p + 1;

	if (*q == '^')
		q++;
	if (*q == ']')
		q++;
	for (; *q && *q != ']'; q++) {
		if (*q != '[' || (q[1] != ':' && q[1] != '.' && q[1] != '='))
			continue;
		char close = q[1];
		const char *e = q + 2;
		while (*e && !(e[0] == close && e[1] == ']'))
			e++;
		if (!*e)
			return e - 1;
		q = e + 1;
	}
	return *q ? q : q - 1;
}

static size_t add_sat(size_t a, size_t b)
{
	size_t r;
	return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

static size_t mul_sat(size_t a, size_t b)
{
	size_t r;
	return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* "{m}", "{m,}" or "{m,n}" at @p: the copies regcomp() makes, with *@ret_end set at the '}'. */
static size_t interval(const char *p, const char **ret_end)
{
	size_t m = 0, n = 0;
	bool comma = false, upper_bound = false;
	const char *q = p + 1;

	if (*q < '0' || *q > '9')
		return 0;
	for (; *q >= '0' && *q <= '9'; q++)
		m = add_sat(mul_sat(m, 10), (size_t)(*q - '0'));
	if (*q == ',') {
		comma = true;
		for (q++; *q >= '0' && *q <= '9'; q++) {
			n = add_sat(mul_sat(n, 10), (size_t)(*q - '0'));
			upper_bound = true;
		}
	}
	if (*q != '}')
		return 0;
	*ret_end = q;
	/* x{m,} is m copies and a starred one; x{m,n} n copies, n - m of them optional. */
	if (upper_bound)
		return n > m ? n : m;
	return comma ? add_sat(m, 1) : m;
}

/*
 * An estimate, from above, of the atoms of @expr once regcomp() has unrolled its repetitions:
 * a character, an escape or a bracket expression counts 1, a group the sum of its contents;
 * x{m,n} counts as n copies of x and x+ as two (glibc copies the subtree for both), x* and
 * x? as one. Saturates at SIZE_MAX.
 */
static size_t unrolled_atoms(const char *expr)
{
	size_t enclosing[DSB_SCRUB_PATTERN_MAX_BYTES]; /* the sums of the open groups */
	size_t depth = 0, sum = 0, last = 0;

	for (const char *p = expr; *p; p++) {
		const char *end = NULL;
		size_t copies;

		switch (*p) {
		case '(':
			if (depth == ELEMENTSOF(enclosing))
				return SIZE_MAX;
			enclosing[depth++] = sum;
			sum = last = 0;
			continue;
		case ')':
			if (depth == 0) {
				last = 1;
				break;
			}
			last = sum;
			sum = enclosing[--depth];
			break;
		case '|':
			last = 0;
			continue;
		case '*':
		case '?':
			continue;
		case '+':
			sum = add_sat(sum, last);
			last = mul_sat(last, 2);
			continue;
		case '{':
			copies = interval(p, &end);
			if (!end) { /* not an interval: a literal '{' */
				last = 1;
				break;
			}
			/* x is counted once already. */
			sum = add_sat(sum, mul_sat(last, copies ? copies - 1 : 0));
			last = mul_sat(last, copies);
			p = end;
			continue;
		case '[':
			p = bracket_end(p);
			last = 1;
			break;
		case '\\':
			if (p[1])
				p++;
			last = 1;
			break;
		default:
			last = 1;
			break;
		}
		sum = add_sat(sum, last);
	}
	while (depth > 0)
		sum = add_sat(enclosing[--depth], sum);
	return sum;
}

static int fail_why(char *why, size_t why_size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_why(char *why, size_t why_size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, why_size, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int scrub_rule_compile(const char *text, scrub_rule *ret, char *why, size_t why_size)
{
	static const char prefix[] = "value:";
	scrub_rule rule = {.on_value = strncmp(text, prefix, sizeof(prefix) - 1) == 0};
	const char *expr = rule.on_value ? text + sizeof(prefix) - 1 : text;

	if (!*expr)
		return fail_why(why, why_size, "no expression after \"value:\"");
	if (strlen(expr) >= DSB_SCRUB_PATTERN_MAX_BYTES)
		return fail_why(why, why_size, "longer than %d bytes",
				DSB_SCRUB_PATTERN_MAX_BYTES - 1);

	for (size_t i = 0; i < ELEMENTSOF(defaults) && !rule.literal; i++) {
		if (strcmp(text, defaults[i].text) != 0)
			continue;
		rule.literal = defaults[i].literal;
		rule.letters = letter_set(defaults[i].letters, strlen(defaults[i].letters));
	}
	if (!rule.literal) {
		/* Before regcomp(), which spends seconds and gigabytes on "((a{255}){255}){255}".
		 */
		if (unrolled_atoms(expr) > DSB_SCRUB_PATTERN_MAX_ATOMS)
			return fail_why(why, why_size, "repetitions unroll to more than %d atoms",
					DSB_SCRUB_PATTERN_MAX_ATOMS);
		int r = regcomp(&rule.re, expr, REG_EXTENDED | REG_ICASE | REG_NOSUB);
		if (r == REG_ESPACE)
			return -ENOMEM;
		if (r != 0) {
			(void)regerror(r, &rule.re, why, why_size);
			return -EINVAL;
		}
	}

	rule.source = strdup(text);
	if (!rule.source) {
		if (!rule.literal)
			regfree(&rule.re);
		return -ENOMEM;
	}
	*ret = rule;
	return 0;
}

void scrub_rules_free(scrub_rule *rules, size_t n)
{
	for (size_t i = 0; rules && i < n; i++) {
		if (!rules[i].literal)
			regfree(&rules[i].re);
		free(rules[i].source);
	}
	free(rules);
}

int scrub_rules_default(scrub_rule **ret_rules, size_t *ret_n)
{
	scrub_rule *rules = calloc(ELEMENTSOF(defaults), sizeof(*rules));
	size_t n = 0;
	char why[8];

	if (!rules)
		return -ENOMEM;
	for (; n < ELEMENTSOF(defaults); n++) {
		/* Known expressions: only the copy of the text can fail. */
		if (scrub_rule_compile(defaults[n].text, &rules[n], why, sizeof(why)) < 0) {
			scrub_rules_free(rules, n);
			return -ENOMEM;
		}
	}
	*ret_rules = rules;
	*ret_n = n;
	return 0;
}

/* --- the check -------------------------------------------------------------------------------- */

/* @set: letter_set(@s, @n), or all letters when not worth computing (values). */
static bool rule_matches(const scrub_rule *rule, const char *s, size_t n, uint32_t set)
{
	if (rule->literal)
		return (rule->letters & set) == rule->letters && rule->literal(s, n);
	/* REG_STARTEND: the name ends at its '=', not at a NUL; glibc and the BSDs have it. */
	regmatch_t range = {.rm_so = 0, .rm_eo = (regoff_t)n};
	return regexec(&rule->re, s, 1, &range, REG_STARTEND) == 0;
}

bool scrub_check(const scrub_rule *rules, size_t n_rules, const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t name_len = eq ? (size_t)(eq - entry) : strlen(entry);
	const char *value = eq ? eq + 1 : "";
	size_t value_len = (size_t)-1;

	if (dsh_rule(entry, name_len))
		return true;
	uint32_t set = n_rules ? letter_set(entry, name_len) : 0;
	for (size_t i = 0; i < n_rules; i++) {
		if (!rules[i].on_value) {
			if (rule_matches(&rules[i], entry, name_len, set))
				return true;
			continue;
		}
		if (value_len == (size_t)-1)
			value_len = strlen(value);
		if (rule_matches(&rules[i], value, value_len, UINT32_MAX))
			return true;
	}
	return false;
}
