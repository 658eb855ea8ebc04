/* SPDX-License-Identifier: MIT */
/*
 * The proxy's host check: allow/deny patterns against the host a client asked for. Pure
 * functions, no allocation, so that it can be fuzzed and reconciled with the configuration's
 * own check later.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "net.h"

/* A DNS name is at most 253 characters; brackets and a trailing dot fit in what remains. */
#define HOST_MAX 256

typedef struct ip_addr {
	int family; /* AF_INET or AF_INET6; an IPv4-mapped IPv6 address is stored as AF_INET */
	uint8_t bytes[16];
} ip_addr;

/*
 * Whether @s (already without brackets) is an IP literal, into @ret. Only the canonical textual
 * forms of inet_pton(): IPv4 dotted quads, IPv6 without a zone.
 */
static bool parse_ip(const char *s, ip_addr *ret)
{
	struct in6_addr a6;
	struct in_addr a4;

	if (inet_pton(AF_INET, s, &a4) == 1) {
		ret->family = AF_INET;
		memcpy(ret->bytes, &a4, 4);
		return true;
	}
	if (inet_pton(AF_INET6, s, &a6) == 1) {
		/* ::ffff:a.b.c.d reaches a.b.c.d: one address, one spelling for the rules. */
		if (IN6_IS_ADDR_V4MAPPED(&a6)) {
			ret->family = AF_INET;
			memcpy(ret->bytes, &a6.s6_addr[12], 4);
		} else {
			ret->family = AF_INET6;
			memcpy(ret->bytes, &a6, 16);
		}
		return true;
	}
	return false;
}

static bool ip_equal(const ip_addr *a, const ip_addr *b)
{
	return a->family == b->family &&
	       memcmp(a->bytes, b->bytes, a->family == AF_INET ? 4 : 16) == 0;
}

/*
 * Whether @s is a DNS name we accept: letters, digits, '-' and '_' in non-empty labels of at
 * most 63 characters, separated by single dots. A name made only of digits and dots, or one that
 * inet_aton() reads as an address ("127.1", "0x7f.1", "2130706433"), is refused: getaddrinfo()
 * would take it as that address, so a rule on names could be passed with an address no rule
 * names.
 */
static bool valid_name(const char *s)
{
	size_t label = 0;
	bool only_digits = true;
	struct in_addr a4;

	if (!*s)
		return false;
	for (const char *c = s; *c; c++) {
		if (*c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_'))
			return false;
		if (!(*c >= '0' && *c <= '9'))
			only_digits = false;
		if (++label > 63)
			return false;
	}
	if (label == 0) /* a trailing dot is removed before; two are not a name */
		return false;
	return !only_digits && inet_aton(s, &a4) == 0;
}

bool net_host_normalize(const char *host, char *buf, size_t size)
{
	size_t n;
	ip_addr ip;
	bool bracketed = false;

	if (!host || size == 0)
		return false;
	n = strlen(host);
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
		bracketed = true;
		if (memchr(host, '[', n) || memchr(host, ']', n))
			return false;
	} else if (n > 0 && host[n - 1] == '.') {
		n--;
	}
	if (n == 0 || n >= size || n >= HOST_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = host[i];
		buf[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
	}
	buf[n] = '\0';
	if (parse_ip(buf, &ip))
		return !bracketed || strchr(buf, ':'); /* brackets hold IPv6 only */
	/* Brackets are for IPv6 literals only. */
	if (bracketed)
		return false;
	return valid_name(buf);
}

/* Whether the normalised @host (an IP literal when @host_ip is non-NULL) matches @pattern. */
static bool match_pattern(const char *pattern, const char *host, const ip_addr *host_ip)
{
	char pat[HOST_MAX];
	ip_addr pat_ip;
	size_t hl, sl;

	if (pattern[0] == '*' && pattern[1] == '.') {
		/* "*.example.com": any name that ends in ".example.com" with at least one label
		 * before it; never the bare name, never an address. */
		if (host_ip || !net_host_normalize(pattern + 2, pat, sizeof(pat)) ||
		    parse_ip(pat, &pat_ip))
			return false;
		hl = strlen(host);
		sl = strlen(pat);
		return hl > sl + 1 && host[hl - sl - 1] == '.' && strcmp(host + hl - sl, pat) == 0;
	}
	if (!net_host_normalize(pattern, pat, sizeof(pat)))
		return false;
	if (parse_ip(pat, &pat_ip))
		return host_ip && ip_equal(host_ip, &pat_ip);
	return !host_ip && strcmp(host, pat) == 0;
}

static bool match_any(char *const *patterns, const char *host, const ip_addr *host_ip)
{
	for (char *const *p = patterns; p && *p; p++)
		if (match_pattern(*p, host, host_ip))
			return true;
	return false;
}

bool net_host_allowed(const net_rules *r, const char *host)
{
	char h[HOST_MAX];
	ip_addr ip;
	const ip_addr *host_ip;

	if (!r || !net_host_normalize(host, h, sizeof(h)))
		return false;
	host_ip = parse_ip(h, &ip) ? &ip : NULL;
	return match_any(r->allow, h, host_ip) && !match_any(r->deny, h, host_ip);
}
