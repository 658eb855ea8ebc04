/* SPDX-License-Identifier: MIT */
/*
 * A configured runnerCommand (dsh-compat §5.5, §5.8): the operator's runner with DSH's exact bwrap
 * profile (profile.c) and the command after "--", asserted full enforcement, with the
 * configured failure signatures as its runner-failure rule. It is no member of the chain and
 * is never probed: with a runnerCommand, it is what every confined call runs. Its contract is
 * DSH's profile and nothing else, so it cannot be told to protect a path or to restrict the
 * network: a call that needs either is refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confine.h"

/*
 * What it shows the command writable is the workspace (its /tmp is private): a policy-bearing
 * path in there refuses the call.
 */
static int runner_refuse_protected(const dsb_exec_policy *policy, confine_failure *why)
{
	char *ws[] = {policy->workspace_root, NULL}, *tmp[] = {(char *)"/tmp", NULL};
	bool writable = policy->mode == DSB_MODE_WORKSPACE_WRITE;
	protect_ops o = {0};
	if (protect_ops_build(policy, writable ? ws : NULL, writable ? tmp : NULL, &o) < 0)
		return -ENOMEM;
	int r = protect_refuse(&o, "runnerCommand cannot protect it", why->detail,
			       sizeof(why->detail));
	protect_ops_done(&o);
	return r;
}

static int runner_confine(const dsb_provider *p, const dsb_exec_policy *policy, char *const *argv,
			  dsb_confined *c, confine_failure *why)
{
	/* DSH's profile is the runner's contract: it has no network namespace. */
	if (p->network.access != DSB_NETWORK_FULL) {
		(void)snprintf(why->detail, sizeof(why->detail),
			       "runnerCommand cannot enforce network access %s",
			       dsb_network_access_to_string(p->network.access));
		return -EPERM;
	}
	/* Nor can it be told to bind more than the workspace writable. */
	if (policy->extra_roots && policy->extra_roots[0]) {
		(void)snprintf(why->detail, sizeof(why->detail),
			       "runnerCommand cannot grant the writable root %s",
			       policy->extra_roots[0]);
		return -EPERM;
	}
	confine_plan *plan;
	int r = plan_new(c, &plan);
	if (r < 0 || !(c->argv = strv_copy(p->runner_command)))
		return -ENOMEM;
	plan->wraps = true;
	/*
	 * Only a runner the command cannot have replaced (trust.c), by its absolute path. None at
	 * all reads as DSH's spawn failure would.
	 */
	char path[4096], untrusted[512];
	r = trusted_program(c->argv[0], path, sizeof(path), untrusted, sizeof(untrusted));
	if (r == -ENOENT) {
		why->kind = CONFINE_RUNNER_SPAWN;
		why->sys_errno = ENOENT;
		(void)snprintf(why->detail, sizeof(why->detail), "Error: spawn %s ENOENT",
			       c->argv[0]);
	} else if (r < 0)
		(void)snprintf(why->detail, sizeof(why->detail), "%s", untrusted);
	else if (path_is_under(path, policy->workspace_root))
		(void)snprintf(why->detail, sizeof(why->detail),
			       "the runner %s lies in the workspace", path);
	if (r < 0 || why->detail[0])
		return r == -ENOMEM ? r : -EPERM;
	free(c->argv[0]);
	if (!(c->argv[0] = strdup(path)))
		return -ENOMEM;
	r = runner_refuse_protected(policy, why);
	if (r >= 0)
		r = bwrap_profile(policy->mode, policy->workspace_root, &c->argv);
	if (r >= 0)
		r = push_command(&c->argv, argv);
	if (r >= 0)
		r = confined_add_rule(c, (const char *const *)p->runner_failure_signatures);
	c->enforcement = DSB_ENFORCEMENT_FULL;
	return r;
}

static bool runner_protects(unsigned hardening)
{
	(void)hardening;
	return false;
}

static const char *runner_network_enforcement(const dsb_probe_backend *b, dsb_network_access access)
{
	(void)b;
	(void)access;
	return "unavailable";
}

const backend_ops backend_runner = {
	.name = "runner",
	.denials = (const char *const[]){"read-only file system", "permission denied", NULL},
	.fatal = NULL, /* the configured signatures: runner_confine() */
	.confine = runner_confine,
	.protects = runner_protects,
	.private_tmp = true,
	.network = runner_network_enforcement,
};
