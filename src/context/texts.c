/* SPDX-License-Identifier: MIT */
/*
 * The model-facing statements of the policy in force (dsh-compat §9.4, §8.4, §8.9), byte for byte
 * as DSH words them. They are phrased so the model tries and follows the tools' denial guidance
 * instead of refusing up front (§9.1), and they name nothing that varies outside the policy:
 * temp paths are left out on purpose, so the bytes (and the provider's prompt cache) survive a
 * change of TMPDIR or of the mounted tools.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "context.h"

static const char read_only_text[] =
	"Current DSH file policy: read-only. Any available operation enforced by the DSH file "
	"sandbox cannot modify files in the standing mode. Do not refuse a required modification "
	"from this policy alone: try an available tool normally and follow any denial and "
	"escalation guidance it returns.";

static const char workspace_write_head[] =
	"Current DSH file policy: workspace-write. Any available operation enforced by the DSH "
	"file sandbox may modify files under the session workspace: ";

static const char workspace_write_tail[] = ". Some platform temporary areas may also be writable.";

static const char danger_full_access_text[] =
	"Current DSH file policy: danger-full-access. The DSH file sandbox does not restrict file "
	"modifications by available operations.";

static const char *const approval_texts[_DSB_APPROVAL_MAX] = {
	[DSB_APPROVAL_ASK] = "Approval policy: ask. Operations that require approval may ask "
			     "through the configured answerers; without an available answerer, "
			     "the request fails closed.",
	[DSB_APPROVAL_NEVER] = "Approval prompts are disabled in this session: actions that "
			       "require approval are rejected automatically \xE2\x80\x94 do not "
			       "request sandbox escalation (do not set `sandbox_permissions`).",
};

static const char delegation_text[] =
	"You are a delegated subagent: your permission scope was fixed when you were started and "
	"cannot be widened from inside this session \xE2\x80\x94 operations that require approval "
	"are rejected automatically. When the task needs access beyond that scope, do not retry "
	"the denied operation; state the limitation in your reply so the delegating agent can "
	"handle it.";

int dsb_context_render_sandbox(dsb_mode mode, const char *workspace_root, char **ret_text,
			       dsb_error *reterr)
{
	if (!ret_text)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS,
				"dsb_context_render_sandbox: missing argument");

	const char *fixed = NULL;
	switch (mode) {
	case DSB_MODE_READ_ONLY:
		fixed = read_only_text;
		break;
	case DSB_MODE_DANGER_FULL_ACCESS:
		fixed = danger_full_access_text;
		break;
	case DSB_MODE_WORKSPACE_WRITE:
		break;
	case _DSB_MODE_MAX:
	case _DSB_MODE_INVALID:
	default:
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "sandbox:policy: unknown mode %d",
				(int)mode);
	}

	char *text = NULL;
	if (fixed)
		text = strdup(fixed);
	else {
		if (!workspace_root)
			return dsb_fail(reterr, DSB_E_INVALID_ARGS,
					"sandbox:policy: workspace-write needs a workspace root");
		/* JSON.stringify(root): the model reads exactly where the boundary is. */
		strbuf sb = STRBUF_INIT;
		int r = strbuf_puts(&sb, workspace_write_head);
		if (r >= 0)
			r = json_quote_append(&sb, workspace_root, strlen(workspace_root));
		if (r >= 0)
			r = strbuf_puts(&sb, workspace_write_tail);
		text = r >= 0 ? strbuf_take(&sb) : NULL;
		strbuf_done(&sb);
	}
	if (!text)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "sandbox:policy: out of memory");
	*ret_text = text;
	return 0;
}

const char *dsb_context_approval_text(dsb_approval_policy policy)
{
	return policy >= 0 && policy < _DSB_APPROVAL_MAX ? approval_texts[policy] : NULL;
}

const char *dsb_context_delegation_text(void)
{
	return delegation_text;
}

int context_network_append(dsb_network_access access, char *const *allow, char **io_text)
{
	_cleanup_(strbuf_done) strbuf sb = STRBUF_INIT;
	int r = strbuf_puts(&sb, *io_text);
	if (r >= 0 && access == DSB_NETWORK_NONE)
		r = strbuf_puts(&sb, " Network access is disabled: commands cannot reach any host, "
				     "nor services of the machine outside the sandbox.");
	if (r >= 0 && access == DSB_NETWORK_ALLOWLIST) {
		r = strbuf_puts(&sb, " Network access is limited to these hosts, through a proxy "
				     "the sandbox sets for commands: ");
		for (size_t i = 0; r >= 0 && allow && allow[i]; i++)
			r = strbuf_printf(&sb, "%s%s", i ? ", " : "", allow[i]);
		if (r >= 0)
			r = strbuf_puts(&sb, " (ports 80 and 443 where no port is given). Other "
					     "hosts and ports are refused.");
	}
	if (r < 0)
		return -ENOMEM;
	free(*io_text);
	*io_text = strbuf_take(&sb);
	return 0;
}

int context_roots_append(char *const *extra_roots, char **io_text)
{
	if (!extra_roots || !extra_roots[0])
		return 0;
	_cleanup_(strbuf_done) strbuf sb = STRBUF_INIT;
	int r = strbuf_puts(&sb, *io_text);
	if (r >= 0)
		r = strbuf_puts(&sb, " Such operations may also modify files under these writable "
				     "roots: ");
	for (size_t i = 0; r >= 0 && extra_roots[i]; i++) {
		if (i)
			r = strbuf_puts(&sb, ", ");
		if (r >= 0)
			r = json_quote_append(&sb, extra_roots[i], strlen(extra_roots[i]));
	}
	if (r >= 0)
		r = strbuf_puts(&sb, ".");
	if (r < 0)
		return -ENOMEM;
	free(*io_text);
	*io_text = strbuf_take(&sb);
	return 0;
}
