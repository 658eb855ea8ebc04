/* SPDX-License-Identifier: MIT */
/*
 * The closed vocabularies of the policy piece: modes (dsh-compat §1.1), approval policies,
 * backends, network access levels.
 */
#include <string.h>

#include "policy.h"

static const char *const mode_names[_DSB_MODE_MAX] = {
	[DSB_MODE_READ_ONLY] = "read-only",
	[DSB_MODE_WORKSPACE_WRITE] = "workspace-write",
	[DSB_MODE_DANGER_FULL_ACCESS] = "danger-full-access",
};

static const char *const approval_names[_DSB_APPROVAL_MAX] = {
	[DSB_APPROVAL_ASK] = "ask",
	[DSB_APPROVAL_NEVER] = "never",
};

static const char *const network_access_names[_DSB_NETWORK_ACCESS_MAX] = {
	[DSB_NETWORK_FULL] = "full",
	[DSB_NETWORK_NONE] = "none",
	[DSB_NETWORK_ALLOWLIST] = "allowlist",
};

static const char *const backend_names[_DSB_BACKEND_MAX] = {
#define BACKEND_NAME_(name, NAME) [DSB_BACKEND_##NAME] = #name,
	DSB_BACKENDS(BACKEND_NAME_)
#undef BACKEND_NAME_
};

/* ", bwrap, landlock" without its first separator. */
#define BACKEND_LISTED_(name, NAME) ", " #name
static const char accepted_backends[] = "" DSB_BACKENDS(BACKEND_LISTED_);
#undef BACKEND_LISTED_

const char *policy_backends_accepted(void)
{
	return accepted_backends + 2;
}

static int lookup(const char *const *names, int n, const char *s)
{
	if (!s)
		return -1;
	for (int i = 0; i < n; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

const char *dsb_mode_to_string(dsb_mode mode)
{
	return mode >= 0 && mode < _DSB_MODE_MAX ? mode_names[mode] : NULL;
}

dsb_mode dsb_mode_from_string(const char *s)
{
	return (dsb_mode)lookup(mode_names, _DSB_MODE_MAX, s);
}

int dsb_mode_parse(const char *s, const char *origin, dsb_code code, dsb_mode *ret_mode,
		   dsb_error *reterr)
{
	dsb_mode mode = dsb_mode_from_string(s);
	if (mode == _DSB_MODE_INVALID) {
		int r = dsb_fail(reterr, code, "%s: invalid mode \"%s\" " POLICY_MODES_ACCEPTED,
				 origin, s ? s : "");
		dsb_error_set_subject(reterr, origin);
		return r;
	}
	*ret_mode = mode;
	return 0;
}

const char *dsb_approval_policy_to_string(dsb_approval_policy policy)
{
	return policy >= 0 && policy < _DSB_APPROVAL_MAX ? approval_names[policy] : NULL;
}

dsb_approval_policy dsb_approval_policy_from_string(const char *s)
{
	return (dsb_approval_policy)lookup(approval_names, _DSB_APPROVAL_MAX, s);
}

const char *dsb_backend_to_string(dsb_backend backend)
{
	return backend >= 0 && backend < _DSB_BACKEND_MAX ? backend_names[backend] : NULL;
}

dsb_backend dsb_backend_from_string(const char *s)
{
	return (dsb_backend)lookup(backend_names, _DSB_BACKEND_MAX, s);
}

const char *dsb_network_access_to_string(dsb_network_access access)
{
	return access >= 0 && access < _DSB_NETWORK_ACCESS_MAX ? network_access_names[access]
							       : NULL;
}

dsb_network_access dsb_network_access_from_string(const char *s)
{
	return (dsb_network_access)lookup(network_access_names, _DSB_NETWORK_ACCESS_MAX, s);
}
