/* SPDX-License-Identifier: MIT */
/* The tools a call runs, by name: the vocabulary every file of the piece shares. */
#include <string.h>

#include "call.h"

static const char *const tool_names[_DSB_TOOL_MAX] = {
	[DSB_TOOL_BASH] = "bash", [DSB_TOOL_EXEC] = "exec", [DSB_TOOL_WRITE] = "write",
	[DSB_TOOL_EDIT] = "edit", [DSB_TOOL_READ] = "read",
};

const char *dsb_tool_to_string(dsb_tool tool)
{
	return tool >= 0 && tool < _DSB_TOOL_MAX ? tool_names[tool] : NULL;
}

dsb_tool dsb_tool_from_string(const char *s)
{
	for (int i = 0; s && i < _DSB_TOOL_MAX; i++)
		if (strcmp(tool_names[i], s) == 0)
			return (dsb_tool)i;
	return _DSB_TOOL_INVALID;
}
