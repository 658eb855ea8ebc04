/* SPDX-License-Identifier: MIT */
/*
 * The kinds of protected path (docs/design/protected-paths.md): the name `policy --json`
 * prints, the reason a denial and an after-call note give, and which ones the service cannot
 * run without.
 */
#include "policy.h"

/* One literal: the table below would read a wrapped one as two missing a comma. */
#define STARTUP_REASON \
	"other programs run it or read it as configuration outside the sandbox, without asking"

static const char *const kind_names[_DSB_PROTECT_MAX] = {
	[DSB_PROTECT_STORE] = "store",	     [DSB_PROTECT_CONFIG] = "config",
	[DSB_PROTECT_ANSWERER] = "answerer", [DSB_PROTECT_RUNNER] = "runner",
	[DSB_PROTECT_SPILL] = "spill",	     [DSB_PROTECT_GIT] = "git",
	[DSB_PROTECT_LISTED] = "listed",     [DSB_PROTECT_DENY_READ] = "deny-read",
	[DSB_PROTECT_STARTUP] = "startup",   [DSB_PROTECT_PRIVATE_TMP] = "private-tmp",
};

static const char *const kind_reasons[_DSB_PROTECT_MAX] = {
	[DSB_PROTECT_STORE] = "the session store holds this session's mode and approvals",
	[DSB_PROTECT_CONFIG] = "the configuration sets the sandbox policy",
	[DSB_PROTECT_ANSWERER] = "the approval answerer decides escalations",
	[DSB_PROTECT_RUNNER] = "the runner confines every command",
	[DSB_PROTECT_SPILL] = "the spill directory holds the output the model is shown",
	[DSB_PROTECT_GIT] = "git runs hooks and reads its config outside the sandbox",
	[DSB_PROTECT_LISTED] = "sandbox-policy.protectedPaths lists it",
	[DSB_PROTECT_DENY_READ] = "sandbox-policy.denyRead hides it",
	[DSB_PROTECT_STARTUP] = STARTUP_REASON,
	[DSB_PROTECT_PRIVATE_TMP] = "it holds every session's private /tmp",
};

const char *dsb_protect_kind_to_string(dsb_protect_kind kind)
{
	return kind >= 0 && kind < _DSB_PROTECT_MAX ? kind_names[kind] : NULL;
}

const char *dsb_protect_kind_reason(dsb_protect_kind kind)
{
	return kind >= 0 && kind < _DSB_PROTECT_MAX ? kind_reasons[kind] : NULL;
}

bool dsb_protect_kind_required(dsb_protect_kind kind)
{
	return kind >= DSB_PROTECT_STORE && kind <= DSB_PROTECT_SPILL;
}

bool dsb_protect_kind_hides(dsb_protect_kind kind)
{
	return kind == DSB_PROTECT_DENY_READ || kind == DSB_PROTECT_PRIVATE_TMP;
}
