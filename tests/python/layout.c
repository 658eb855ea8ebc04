/* SPDX-License-Identifier: MIT */
/*
 * Prints the sizes and member offsets of the structures dsh_sandbox mirrors in ctypes, as JSON
 * (test_layout.py compares them with bindings/python/dsh_sandbox/_lib.py): a header change that
 * moves a member fails that test instead of silently corrupting the Python binding's calls, and a
 * renamed member fails this program's build. Also the enum values the binding passes as numbers.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <dsb/dsb.h>

struct member {
	const char *type, *name;
	size_t offset, size; /* the member's offset, the whole structure's size */
};

#define M(type, member)                                              \
	{                                                            \
#type, #member, offsetof(type, member), sizeof(type) \
	}

/* Grouped by structure, in the order of their declarations. */
static const struct member members[] = {
	M(dsb_error, code),
	M(dsb_error, sys_errno),
	M(dsb_error, subject),
	M(dsb_error, message),
	M(dsb_call_setup, config_path),
	M(dsb_call_setup, store_path),
	M(dsb_call_setup, cache_dir),
	M(dsb_call_setup, limits),
	M(dsb_call_setup, writable_roots),
	M(dsb_call_request, tool),
	M(dsb_call_request, session),
	M(dsb_call_request, mode),
	M(dsb_call_request, workspace),
	M(dsb_call_request, backend),
	M(dsb_call_request, command),
	M(dsb_call_request, argv),
	M(dsb_call_request, workdir),
	M(dsb_call_request, timeout_ms),
	M(dsb_call_request, path),
	M(dsb_call_request, content),
	M(dsb_call_request, content_len),
	M(dsb_call_request, content_fd),
	M(dsb_call_request, old_string),
	M(dsb_call_request, new_string),
	M(dsb_call_request, replace_all),
	M(dsb_call_request, sandbox_permissions),
	M(dsb_call_request, justification),
	M(dsb_call_request, call_id),
	M(dsb_call_request, network),
	M(dsb_output, text),
	M(dsb_output, len),
	M(dsb_output, truncated),
	M(dsb_output, spill_path),
	M(dsb_run_result, exit_code),
	M(dsb_run_result, signal),
	M(dsb_run_result, timed_out),
	M(dsb_run_result, timeout_ms),
	M(dsb_run_result, out),
	M(dsb_run_result, err),
	M(dsb_run_result, sandboxed),
	M(dsb_run_result, mode),
	M(dsb_run_result, denied),
	M(dsb_run_result, has_enforcement),
	M(dsb_run_result, enforcement),
	M(dsb_run_result, protected_note),
	M(dsb_run_result, network_note),
	M(dsb_run_result, limits_hit),
	M(dsb_run_result, limit_note),
	M(dsb_run_result, undone_note),
	M(dsb_run_result, aborted),
	M(dsb_run_result, evidence),
	M(dsb_run_result, n_refused),
	M(dsb_run_result, refused),
	M(dsb_run_result, n_refused_named),
	M(dsb_run_result, refusal_note),
	M(dsb_call_result, tool),
	M(dsb_call_result, is_error),
	M(dsb_call_result, error),
	M(dsb_call_result, prepared),
	M(dsb_call_result, text),
	M(dsb_call_result, text_len),
	M(dsb_call_result, run),
	M(dsb_call_result, path),
	M(dsb_call_result, created),
	M(dsb_call_result, replacements),
	M(dsb_call_result, replaced_all),
	M(dsb_approval_request, id),
	M(dsb_approval_request, tool_name),
	M(dsb_approval_request, call_id),
	M(dsb_approval_request, reason),
	M(dsb_approval_request, subject),
	M(dsb_approval_request, session_id),
	M(dsb_approval_request, timeout_ms),
	M(dsb_approval_request, mode),
	M(dsb_approval_request, justification),
	M(dsb_approval_request, refused),
};

int main(void)
{
	printf("{\"structs\": {");
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		const struct member *m = &members[i];
		bool first = i == 0 || strcmp(m[-1].type, m->type) != 0;
		if (first)
			printf("%s\"%s\": {\"size\": %zu, \"fields\": {", i ? "}}, " : "", m->type,
			       m->size);
		printf("%s\"%s\": %zu", first ? "" : ", ", m->name, m->offset);
	}
	/* The enum members the binding spells as numbers, and the width of every enum it passes. */
	printf("}}}, \"tools\": {\"bash\": %d, \"exec\": %d, \"write\": %d, \"edit\": %d, "
	       "\"read\": %d}, \"invalid\": [%d, %d, %d, %d, %d], \"enum_size\": %zu}\n",
	       DSB_TOOL_BASH, DSB_TOOL_EXEC, DSB_TOOL_WRITE, DSB_TOOL_EDIT, DSB_TOOL_READ,
	       _DSB_TOOL_INVALID, _DSB_MODE_INVALID, _DSB_BACKEND_INVALID,
	       _DSB_NETWORK_ACCESS_INVALID, _DSB_CODE_INVALID, sizeof(dsb_tool));
	return 0;
}
