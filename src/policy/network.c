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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

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
			*why = "not a valid IPv6 address (a port follows one in brackets: "
			       "[::1]:443)";
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

/*
 * Splits the rule @s ("PATTERN", "PATTERN:PORT", "PATTERN:*"; an IPv6 pattern with a port in
 * brackets) into its pattern, copied to @pattern, and its port: NETWORK_PORT_DEFAULT when none
 * is written, NETWORK_PORT_ANY for "*", else 1..65535. -EINVAL with @why for a bad port.
 */
static int rule_split(const char *s, char pattern[NETWORK_PATTERN_MAX], int *port, const char **why)
{
	const char *colon = NULL;
	size_t n = strlen(s);

	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close && close[1] == ':')
			colon = close + 1;
	} else {
		colon = strchr(s, ':');
		if (colon && strchr(colon + 1, ':'))
			colon = NULL; /* IPv6 without brackets: no port */
	}
	*port = NETWORK_PORT_DEFAULT;
	if (colon) {
		const char *p = colon + 1;
		unsigned long v = 0;
		if (strcmp(p, "*") == 0) {
			*port = NETWORK_PORT_ANY;
		} else {
			size_t k = strspn(p, "0123456789");
			if (k == 0 || k > 5 || p[k] || (v = strtoul(p, NULL, 10)) == 0 ||
			    v > 65535) {
				*why = "a port is a number from 1 to 65535, or \"*\" for any";
				return -EINVAL;
			}
			*port = (int)v;
		}
		n = (size_t)(colon - s);
	}
	if (n >= NETWORK_PATTERN_MAX) {
		*why = "host name longer than 253 characters";
		return -EINVAL;
	}
	memcpy(pattern, s, n);
	pattern[n] = '\0';
	return 0;
}

int network_rule_canonical(const char *s, char buf[NETWORK_RULE_MAX], const char **why)
{
	char pattern[NETWORK_PATTERN_MAX], canonical[NETWORK_PATTERN_MAX];
	int port;

	if (rule_split(s, pattern, &port, why) < 0 ||
	    network_pattern_canonical(pattern, true, true, canonical, why) < 0)
		return -EINVAL;
	bool v6 = strchr(canonical, ':') != NULL;
	if (port == NETWORK_PORT_DEFAULT)
		(void)snprintf(buf, NETWORK_RULE_MAX, "%s", canonical);
	else if (port == NETWORK_PORT_ANY)
		(void)snprintf(buf, NETWORK_RULE_MAX, "%s%s%s:*", v6 ? "[" : "", canonical,
			       v6 ? "]" : "");
	else
		(void)snprintf(buf, NETWORK_RULE_MAX, "%s%s%s:%d", v6 ? "[" : "", canonical,
			       v6 ? "]" : "", port);
	return 0;
}

/* Whether the canonical host @host is matched by the pattern of @rule (canonicalised here);
 * the rule's port into @port. */
static bool pattern_matches(const char *rule, const char *host, int *port)
{
	char pattern[NETWORK_PATTERN_MAX], p[NETWORK_PATTERN_MAX];
	const char *why;

	if (!rule || rule_split(rule, pattern, port, &why) < 0 ||
	    network_pattern_canonical(pattern, true, true, p, &why) < 0)
		return false;
	if (p[0] == '*') {
		/* ".debian.org": something before it, so never the bare domain. */
		const char *suffix = p + 1;
		size_t hn = strlen(host), sn = strlen(suffix);
		return hn > sn && strcmp(host + hn - sn, suffix) == 0;
	}
	return strcmp(p, host) == 0;
}

/* Whether an allow rule's port covers @port: the one it names, any, or else 80 and 443 (what
 * a registry, a package mirror or a git host over HTTPS needs, and nothing else). */
static bool allow_port_covers(int rule_port, int port)
{
	if (rule_port == NETWORK_PORT_DEFAULT)
		return port == 80 || port == 443;
	return rule_port == NETWORK_PORT_ANY || rule_port == port;
}

/* A deny rule without a port covers every port. */
static bool deny_port_covers(int rule_port, int port)
{
	return rule_port == NETWORK_PORT_DEFAULT || rule_port == NETWORK_PORT_ANY ||
	       rule_port == port;
}

network_verdict network_check(char *const *allow, char *const *deny, const char *host, int port,
			      bool *ret_wildcard)
{
	char h[NETWORK_PATTERN_MAX];
	bool host_named = false, port_allowed = false, exact = false;
	bool host_denied = false, port_denied = false;
	int rp;

	if (ret_wildcard)
		*ret_wildcard = false;
	if (!host || network_host_canonical(host, h) < 0)
		return NETWORK_HOST_REFUSED;
	for (size_t i = 0; deny && deny[i]; i++)
		if (pattern_matches(deny[i], h, &rp)) {
			if (rp == NETWORK_PORT_DEFAULT || rp == NETWORK_PORT_ANY)
				host_denied = true;
			else
				port_denied |= deny_port_covers(rp, port);
		}
	if (host_denied)
		return NETWORK_HOST_REFUSED;
	for (size_t i = 0; allow && allow[i]; i++)
		if (pattern_matches(allow[i], h, &rp)) {
			host_named = true;
			if (allow_port_covers(rp, port)) {
				port_allowed = true;
				exact |= allow[i][0] != '*';
			}
		}
	if (!host_named)
		return NETWORK_HOST_REFUSED;
	if (!port_allowed || port_denied)
		return NETWORK_PORT_REFUSED;
	if (ret_wildcard)
		*ret_wildcard = !exact;
	return NETWORK_ALLOWED;
}

int network_host_canonical(const char *host, char buf[NETWORK_PATTERN_MAX])
{
	const char *why;

	return host ? network_pattern_canonical(host, false, true, buf, &why) : -EINVAL;
}

bool dsb_network_host_port_allowed(char *const *allow, char *const *deny, const char *host,
				   unsigned port)
{
	return port >= 1 && port <= 65535 &&
	       network_check(allow, deny, host, (int)port, NULL) == NETWORK_ALLOWED;
}

bool dsb_network_host_allowed(char *const *allow, char *const *deny, const char *host)
{
	/* Some port: the defaults, each one a rule names, and for "*" one no deny rule names. */
	int candidates[2] = {80, 443};
	for (size_t i = 0; i < ELEMENTSOF(candidates); i++)
		if (network_check(allow, deny, host, candidates[i], NULL) == NETWORK_ALLOWED)
			return true;
	char pattern[NETWORK_PATTERN_MAX];
	const char *why;
	int port;
	for (size_t i = 0; allow && allow[i]; i++) {
		if (rule_split(allow[i], pattern, &port, &why) < 0 || port == NETWORK_PORT_DEFAULT)
			continue;
		if (port > 0) {
			if (network_check(allow, deny, host, port, NULL) == NETWORK_ALLOWED)
				return true;
			continue;
		}
		/* Any port: the deny rules name finitely many, so one of the first few is free. */
		size_t n_deny = 0;
		while (deny && deny[n_deny])
			n_deny++;
		for (int p = 1; p <= (int)n_deny + 1; p++)
			if (network_check(allow, deny, host, p, NULL) == NETWORK_ALLOWED)
				return true;
	}
	return false;
}

/* --- address ranges (network.allowPrivate) ---------------------------------------------------- */

/* @s as an address of either family into @addr (16 bytes; IPv4 in its first 4), its family. */
static int parse_address(const char *s, uint8_t addr[16])
{
	struct in_addr a4;
	if (inet_pton(AF_INET, s, &a4) == 1) {
		memcpy(addr, &a4, 4);
		return AF_INET;
	}
	return inet_pton(AF_INET6, s, addr) == 1 ? AF_INET6 : -1;
}

int network_cidr_canonical(const char *s, char buf[NETWORK_CIDR_MAX], const char **why)
{
	char text[INET6_ADDRSTRLEN];
	uint8_t addr[16] = {0};
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n == 0 || n >= sizeof(text)) {
		*why = "an address range is ADDRESS/PREFIX (10.0.0.0/8, fd00::/8) or one address";
		return -EINVAL;
	}
	memcpy(text, s, n);
	text[n] = '\0';
	int family = parse_address(text, addr);
	if (family < 0) {
		*why = "an address range is ADDRESS/PREFIX (10.0.0.0/8, fd00::/8) or one address";
		return -EINVAL;
	}
	unsigned bits = family == AF_INET ? 32 : 128, prefix = bits;
	if (slash) {
		const char *p = slash + 1;
		size_t k = strspn(p, "0123456789");
		if (k == 0 || k > 3 || p[k] || (prefix = (unsigned)strtoul(p, NULL, 10)) > bits) {
			*why = family == AF_INET ? "an IPv4 prefix length is 0 to 32"
						 : "an IPv6 prefix length is 0 to 128";
			return -EINVAL;
		}
	}
	/* Bits past the prefix say the writer meant another range than the one written. */
	for (unsigned b = prefix; b < bits; b++)
		if (addr[b / 8] & (0x80u >> (b % 8))) {
			*why = "the address has bits set past the prefix length";
			return -EINVAL;
		}
	if (!inet_ntop(family, addr, text, sizeof(text)))
		return -EINVAL;
	(void)snprintf(buf, NETWORK_CIDR_MAX, "%s/%u", text, prefix);
	return 0;
}

bool network_cidr_contains(const char *cidr, int family, const void *addr)
{
	char text[INET6_ADDRSTRLEN];
	uint8_t net[16] = {0};
	const char *slash = cidr ? strchr(cidr, '/') : NULL;
	size_t n = slash ? (size_t)(slash - cidr) : 0;

	if (!slash || n >= sizeof(text))
		return false;
	memcpy(text, cidr, n);
	text[n] = '\0';
	if (parse_address(text, net) != family)
		return false;
	unsigned prefix = (unsigned)strtoul(slash + 1, NULL, 10);
	const uint8_t *a = addr;
	for (unsigned b = 0; b < prefix; b++)
		if ((a[b / 8] ^ net[b / 8]) & (0x80u >> (b % 8)))
			return false;
	return true;
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

char *const *dsb_config_network_allow_private(const dsb_config *cfg)
{
	return cfg && cfg->network_allow_private ? cfg->network_allow_private : no_strings;
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
