/* SPDX-License-Identifier: MIT */
/*
 * The fail-closed error (dsh-compat §1.2): a confined mode that no backend can enforce refuses to
 * run the command at all. Its message is model-facing and byte-exact.
 */
#include "policy.h"

int policy_fail_unavailable(dsb_error *reterr, dsb_mode mode, const char *runner_detail)
{
	static const char text[] =
		"sandbox mode \"%s\" is requested but no sandbox backend is usable on this host; "
		"refusing to run the command unconfined. Install bubblewrap or run a "
		"Landlock-enforcing kernel (Linux), ensure sandbox-exec is usable (macOS), or "
		"ensure "
		"the ACL restricted-token runner can start (Windows) \xE2\x80\x94 otherwise switch "
		"the "
		"consumer to danger-full-access.%s%s";
	const char *name = dsb_mode_to_string(mode);

	int r = dsb_fail(reterr, DSB_E_SANDBOX_UNAVAILABLE, text, name ? name : "",
			 runner_detail ? " Runner failure: " : "",
			 runner_detail ? runner_detail : "");
	dsb_error_set_subject(reterr, name);
	return r;
}
