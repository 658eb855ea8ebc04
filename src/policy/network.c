/* SPDX-License-Identifier: MIT */
/*
 * The network policy's configuration (issue 17): host patterns, their canonical form and how a
 * host is matched against them, and the accessors of the network section. Enforcement lives
 * elsewhere (the confined child's namespace, the proxy in src/net); the proxy matches and spells
 * hosts with the functions here, so that what the configuration accepts and what the proxy lets
 * through cannot disagree.
 *
 * A pattern is an exact DNS name, "*." and a name (every name below it, not the name itself),
 * or an IP literal. Everything is compared in one canonical spelling: names in lower case
 * without a trailing dot, addresses as inet_ntop() writes them (an IPv4-mapped IPv6 address as
 * its IPv4 address, since that is where a connection to it goes).
 *
 * A name has letters, digits and '-' in labels of 1 to 63 characters (no '_': no host name
 * has one, RFC 952/1123), at most 253 characters, and may end in one dot (the root's). One whose
 * last label is all digits, or that inet_aton() reads as an address ("127.1", "0x7f000001"),
 * is neither a name nor a canonical address, and is refused: the resolver would take it for an
 * address that no address pattern names. So is "10.1.2.3." (a dotted quad with the root's dot).
 * Brackets hold an IPv6 literal only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define NETWORK_LABEL_MAX 63

int network_ip_canonical(const char *s, char buf[NETWORK_PATTERN_MAX])
{
	char inner[NETWORK_PATTERN_MAX];
	size_t n = strlen(s);
	bool bracketed = n >= 2 && s[0] == '[' && s[n - 1] == ']';

	if (bracketed) {
		s++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(inner))
		return -EINVAL;
	memcpy(inner, s, n);
	inner[n] = '\0';

	struct in_addr a4;
	struct in6_addr a6;
	if (!bracketed && inet_pton(AF_INET, inner, &a4) == 1)
		return inet_ntop(AF_INET, &a4, buf, NETWORK_PATTERN_MAX) ? 0 : -EINVAL;
	if (inet_pton(AF_INET6, inner, &a6) != 1)
		return -EINVAL;
	if (IN6_IS_ADDR_V4MAPPED(&a6)) {
		memcpy(&a4, &a6.s6_addr[12], sizeof(a4));
		return inet_ntop(AF_INET, &a4, buf, NETWORK_PATTERN_MAX) ? 0 : -EINVAL;
	}
	return inet_ntop(AF_INET6, &a6, buf, NETWORK_PATTERN_MAX) ? 0 : -EINVAL;
}

static bool is_digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

/* The @n bytes of @s as a canonical DNS name into @out (NETWORK_NAME_MAX + 1 bytes at least). */
static int name_canonical(const char *s, size_t n, char *out, const char **why)
{
	/* The root's dot ends a fully qualified name; it names the same host. */
	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n == 0) {
		*why = "empty host name";
		return -EINVAL;
	}
	if (n > NETWORK_NAME_MAX) {
		*why = "host name longer than 253 characters";
		return -EINVAL;
	}

	size_t label = 0, last = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '.') {
			if (label == 0) {
				*why = "empty label (\"..\" or a leading dot)";
				return -EINVAL;
			}
			label = 0;
			last = i + 1;
			out[i] = c;
			continue;
		}
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) {
			*why = "a host name has only letters, digits, \"-\" and \".\" (no port, "
			       "no URL; a wildcard only as a leading \"*.\")";
			return -EINVAL;
		}
		if (++label > NETWORK_LABEL_MAX) {
			*why = "label longer than 63 characters";
			return -EINVAL;
		}
		out[i] = c;
	}
	if (label == 0) {
		*why = "empty label (\"..\" or a leading dot)";
		return -EINVAL;
	}
	out[n] = '\0';

	/*
	 * What reads as a number is an address to the resolver: inet_aton() takes "127.1",
	 * "0x7f000001" and "2130706433" for 127.0.0.1, so such a "name" would reach an address
	 * no address pattern names. No top-level domain is all digits either.
	 */
	struct in_addr a4;
	if (is_digits(out + last, n - last) || inet_aton(out, &a4)) {
		*why = "not a valid IPv4 address";
		return -EINVAL;
	}
	return 0;
}

int network_pattern_canonical(const char *s, bool allow_wildcard, bool allow_ip,
			      char buf[NETWORK_PATTERN_MAX], const char **why)
{
	size_t n = strlen(s);

	if (n == 0) {
		*why = "empty";
		return -EINVAL;
	}
	/* A colon or a bracket is only ever an IPv6 address (a port is no part of a pattern). */
	if (s[0] == '[' || strchr(s, ':')) {
		if (!allow_ip) {
			*why = "an address where a host name is expected";
			return -EINVAL;
		}
		if (network_ip_canonical(s, buf) < 0) {
			*why = "not a valid IPv6 address (and a pattern has no port)";
			return -EINVAL;
		}
		return 0;
	}
	if (allow_wildcard && s[0] == '*' && s[1] == '.') {
		if (strchr(s + 2, '*')) {
			*why = "a wildcard only as a leading \"*.\"";
			return -EINVAL;
		}
		buf[0] = '*';
		buf[1] = '.';
		return name_canonical(s + 2, n - 2, buf + 2, why);
	}
	if (strchr(s, '*')) {
		*why = allow_wildcard ? "a wildcard only as a leading \"*.\""
				      : "an exact host name, no wildcard";
		return -EINVAL;
	}
	struct in_addr a4;
	if (inet_pton(AF_INET, s, &a4) == 1) {
		if (!allow_ip) {
			*why = "an address where a host name is expected";
			return -EINVAL;
		}
		return network_ip_canonical(s, buf);
	}
	return name_canonical(s, n, buf, why);
}

/* Whether the canonical host @host is matched by @pattern (canonicalised here). */
static bool pattern_matches(const char *pattern, const char *host)
{
	char p[NETWORK_PATTERN_MAX];
	const char *why;

	if (!pattern || network_pattern_canonical(pattern, true, true, p, &why) < 0)
		return false;
	if (p[0] == '*') {
		/* ".debian.org": something before it, so never the bare domain. */
		const char *suffix = p + 1;
		size_t hn = strlen(host), sn = strlen(suffix);
		return hn > sn && strcmp(host + hn - sn, suffix) == 0;
	}
	return strcmp(p, host) == 0;
}

static bool matches_any(char *const *patterns, const char *host)
{
	for (size_t i = 0; patterns && patterns[i]; i++)
		if (pattern_matches(patterns[i], host))
			return true;
	return false;
}

int network_host_canonical(const char *host, char buf[NETWORK_PATTERN_MAX])
{
	const char *why;

	return host ? network_pattern_canonical(host, false, true, buf, &why) : -EINVAL;
}

bool dsb_network_host_allowed(char *const *allow, char *const *deny, const char *host)
{
	char h[NETWORK_PATTERN_MAX];

	if (network_host_canonical(host, h) < 0)
		return false;
	return !matches_any(deny, h) && matches_any(allow, h);
}

/* --- the configuration's network section ---------------------------------------------------- */

static char *const no_strings[] = {NULL};

dsb_network_access dsb_config_network_access(const dsb_config *cfg)
{
	return cfg ? cfg->network_access : _DSB_NETWORK_ACCESS_INVALID;
}

char *const *dsb_config_network_allow(const dsb_config *cfg)
{
	return cfg && cfg->network_allow ? cfg->network_allow : no_strings;
}

char *const *dsb_config_network_deny(const dsb_config *cfg)
{
	return cfg && cfg->network_deny ? cfg->network_deny : no_strings;
}

char *const *dsb_config_network_hosts(const dsb_config *cfg)
{
	return cfg && cfg->network_hosts ? cfg->network_hosts : no_strings;
}

unsigned dsb_config_network_proxy_port(const dsb_config *cfg)
{
	return cfg ? cfg->network_proxy_port : 0;
}

int dsb_config_set_network_access(dsb_config *cfg, dsb_network_access access, dsb_error *reterr)
{
	if (!cfg)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "no configuration given");
	if (access < 0 || access >= _DSB_NETWORK_ACCESS_MAX)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"invalid network access %d " POLICY_NETWORK_ACCESS_ACCEPTED,
				(int)access);
	if (access == DSB_NETWORK_ALLOWLIST && !cfg->network_allow[0]) {
		int r = dsb_fail(reterr, DSB_E_CONFIG_INVALID,
				 "network access allowlist needs at least one allowed host "
				 "(network.allow in the configuration)");
		dsb_error_set_subject(reterr, "network.allow");
		return r;
	}
	cfg->network_access = access;
	return 0;
}
