/* SPDX-License-Identifier: MIT */
/*
 * The `limits` section (beyond DSH): its names, its values as people write them (2G, 512M), and
 * the explicit settings of a flag over the file's. What a limit means and how it is enforced is
 * the confinement piece's (src/confine/limits.c); a limit not set here gets its default there,
 * since the defaults depend on the host.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "policy.h"

static const char *const limit_names[_DSB_LIMIT_MAX] = {
	[DSB_LIMIT_PROCESSES] = "processes",	[DSB_LIMIT_MEMORY] = "memoryBytes",
	[DSB_LIMIT_CPU_SECONDS] = "cpuSeconds", [DSB_LIMIT_TMP_BYTES] = "tmpBytes",
	[DSB_LIMIT_FILE_BYTES] = "fileBytes",
};

/* Beyond it a size in bytes stops meaning anything (and 2^62 still fits every counter). */
#define LIMIT_VALUE_MAX ((uint64_t)1 << 62)

const char *dsb_limit_to_string(dsb_limit limit)
{
	return limit >= 0 && limit < _DSB_LIMIT_MAX ? limit_names[limit] : NULL;
}

dsb_limit dsb_limit_from_string(const char *s)
{
	for (int l = 0; s && l < _DSB_LIMIT_MAX; l++)
		if (strcmp(s, limit_names[l]) == 0)
			return (dsb_limit)l;
	return _DSB_LIMIT_INVALID;
}

bool dsb_limit_is_size(dsb_limit limit)
{
	return limit == DSB_LIMIT_MEMORY || limit == DSB_LIMIT_TMP_BYTES ||
	       limit == DSB_LIMIT_FILE_BYTES;
}

/* The power of 1024 a size's suffix names ("", K, M, G, T, each with "iB" or "B" or alone),
 * or -1. */
static int suffix_power(const char *s)
{
	static const char units[] = "KMGT";
	if (!*s)
		return 0;
	const char *u = strchr(units, s[0] >= 'a' && s[0] <= 'z' ? s[0] - 'a' + 'A' : s[0]);
	if (!u || !*u)
		return -1;
	const char *rest = s + 1;
	if (*rest && strcmp(rest, "iB") != 0 && strcmp(rest, "B") != 0)
		return -1;
	return (int)(u - units) + 1;
}

int dsb_limit_parse(dsb_limit limit, const char *text, const char *origin, uint64_t *ret_value,
		    dsb_error *reterr)
{
	const char *name = dsb_limit_to_string(limit);
	if (!name || !ret_value)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "dsb_limit_parse: invalid limit");
	if (!origin)
		origin = name;
	bool size = dsb_limit_is_size(limit);
	uint64_t v = 0;
	const char *s = text ? text : "";
	size_t digits = strspn(s, "0123456789");
	int power = digits ? (size ? suffix_power(s + digits) : s[digits] ? -1 : 0) : -1;
	for (size_t i = 0; power >= 0 && i < digits; i++) {
		if (v > (LIMIT_VALUE_MAX - (uint64_t)(s[i] - '0')) / 10)
			power = -1;
		else
			v = v * 10 + (uint64_t)(s[i] - '0');
	}
	for (int i = 0; power > 0 && i < power; i++) {
		if (v > LIMIT_VALUE_MAX / 1024)
			power = -1;
		else
			v *= 1024;
	}
	if (power < 0) {
		int r = dsb_fail(reterr, DSB_E_INVALID_ARGS,
				 size ? "%s: invalid size \"%s\" (a number of bytes, or one with "
					"K, M, G or T: 512M, 2G; 0 for no limit)"
				      : "%s: invalid value \"%s\" (a whole number; 0 for no limit)",
				 origin, s);
		dsb_error_set_subject(reterr, origin);
		return r;
	}
	*ret_value = v;
	return 0;
}

void dsb_config_limits(const dsb_config *cfg, dsb_limits *ret_limits)
{
	*ret_limits = cfg ? cfg->limits : (dsb_limits){0};
}

int dsb_config_set_limits(dsb_config *cfg, const dsb_limits *limits, dsb_error *reterr)
{
	if (!cfg || !limits)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_config_set_limits: missing argument");
	/* All or nothing: @cfg is unchanged on failure. */
	for (int l = 0; l < _DSB_LIMIT_MAX; l++)
		if ((limits->set & (1u << l)) && limits->value[l] > LIMIT_VALUE_MAX)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS, "%s: %llu is too large",
					limit_names[l], (unsigned long long)limits->value[l]);
	for (int l = 0; l < _DSB_LIMIT_MAX; l++)
		if (limits->set & (1u << l)) {
			cfg->limits.value[l] = limits->value[l];
			cfg->limits.set |= 1u << l;
		}
	return 0;
}
