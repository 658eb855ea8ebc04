/* SPDX-License-Identifier: MIT */
/*
 * DSH's tools as the model sees them, byte for byte: names, descriptions and parameter schemas
 * as DSH's schema compiler emits them for a confining executor with background jobs (property
 * order included; docs/design/server-research.md §1), listed in DSH's order (by code unit).
 * Then DSH's argument checks, in its order: the schema (json-schema.ts checkValue(), every
 * violation, `invalid arguments: V1; V2`), then each tool's own (`invalid command: ...`,
 * `offset must be a positive integer`, ...). The texts are DSH's.
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* The emitted JSON, cut into literals: easier to compare with DSH's as it stands. */
/* clang-format off */
/* bash */
static const char bash_description[] =
	"Execute a bash command (`bash -c`) and return its stdout/stderr. Each call runs in a"
	" fresh shell: no state (cwd, variables, functions) persists between calls — pass `"
	"workdir` instead of using `cd`. Non-zero exits are reported as `[exit code: N]`. Cur"
	"rent harness environment facts are exposed through managed `$DSH_*` variables; inspe"
	"ct them when needed. Commands may run under a file sandbox; a blocked file operation"
	" is reported as `[sandbox: file access denied under <mode> mode]` — a policy denia"
	"l, not a bug in the command; do not retry another way. Long output is truncated to i"
	"ts tail; the full output is saved to a file whose path is reported when available. S"
	"et `run_in_background: true` for long-running commands: the call returns a job id im"
	"mediately; read its output with `job_output` and stop it with `job_kill`. Attempting"
	" a command the sandbox may deny is safe and expected: run it and read the marker rat"
	"her than assuming the denial. When a command is denied and a wider mode would let it"
	" succeed, escalate immediately in the same turn — the one sanctioned exception to "
	"a denial: retry the exact same command once with `sandbox_permissions` (the narrowes"
	"t wider mode that suffices) plus a one-sentence `justification`. Do not detour throu"
	"gh chat to ask permission first — the approval prompt raised by that retry is how "
	"the user consents. If the session states approval prompts are disabled, there is no "
	"exception: a denial is final — do not set `sandbox_permissions`. Never escalate sp"
	"eculatively: ground the request in a real denial — normally the one this command j"
	"ust hit; escalating up front is fine only when this session already denied the same "
	"access. A rejected escalation is final for that command — stop and explain, never "
	"work around it — but it does not forbid attempting or escalating other commands la"
	"ter.";
static const char bash_schema[] =
	"{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\",\"description\""
	":\"The bash command to execute.\"},\"description\":{\"type\":\"string\",\"descriptio"
	"n\":\"Clear, concise description of what this command does in active voice, 5-10 wor"
	"ds (shown in the UI). Examples: \\\"ls\\\" → \\\"List files in current directory\\\""
	"; \\\"git status\\\" → \\\"Show working tree status\\\"; \\\"npm install\\\" → \\\""
	"Install package dependencies\\\".\"},\"timeoutMs\":{\"type\":\"number\",\"descriptio"
	"n\":\"Timeout in milliseconds. The executor applies its configured default and cap, "
	"and kills the command on expiry.\"},\"workdir\":{\"type\":\"string\",\"description\""
	":\"Working directory for this command. Defaults to the session workspace; a relative"
	" path is resolved against it.\"},\"run_in_background\":{\"type\":\"boolean\",\"descr"
	"iption\":\"Run in the background and return a job id immediately (collect with job_o"
	"utput, stop with job_kill). No timeout applies.\"},\"sandbox_permissions\":{\"type\""
	":\"string\",\"description\":\"The wider sandbox mode this command needs. Only valid "
	"as a one-shot retry of a command the sandbox just denied; requires justification and"
	" user approval.\",\"enum\":[\"workspace-write\",\"danger-full-access\"]},\"justifica"
	"tion\":{\"type\":\"string\",\"description\":\"Required with sandbox_permissions: one"
	" sentence for the user explaining why this exact command needs the wider access.\"}}"
	",\"required\":[\"command\",\"description\"]}";

/* edit */
static const char edit_description[] =
	"Edit an existing UTF-8 text file by replacing literal text.";
static const char edit_schema[] =
	"{\"type\":\"object\",\"properties\":{\"file_path\":{\"type\":\"string\",\"descriptio"
	"n\":\"Path to edit, resolved by the filesystem backend.\"},\"old_string\":{\"type\":"
	"\"string\",\"description\":\"Literal text to replace. Must match exactly.\"},\"new_s"
	"tring\":{\"type\":\"string\",\"description\":\"Literal replacement text. Use an empt"
	"y string to delete the match.\"},\"replace_all\":{\"type\":\"boolean\",\"description"
	"\":\"Replace all matches. Defaults to false; when false, old_string must appear exac"
	"tly once.\"},\"sandbox_permissions\":{\"type\":\"string\",\"description\":\"The wide"
	"r sandbox mode this file operation needs. Only valid as a one-shot retry of an opera"
	"tion the sandbox just denied; requires justification and user approval.\",\"enum\":["
	"\"workspace-write\",\"danger-full-access\"]},\"justification\":{\"type\":\"string\","
	"\"description\":\"Required with sandbox_permissions: one sentence for the user expla"
	"ining why this exact file operation needs the wider access.\"}},\"required\":[\"file"
	"_path\",\"old_string\",\"new_string\"]}";

/* job_kill, job_list, job_output (tool-jobs) */
static const char job_kill_description[] =
	"Request cancellation of a running background job by job id. Returns immediately; the job"
	" settles as killed once its work actually stops.";
static const char job_kill_schema[] =
	"{\"type\":\"object\",\"properties\":{\"job_id\":{\"type\":\"string\",\"description\":\"J"
	"ob id returned by the tool that started the background work.\"},\"reason\":{\"type\":\"s"
	"tring\",\"description\":\"Optional short reason, recorded in the log and forwarded to th"
	"e job.\"}},\"required\":[\"job_id\"]}";
static const char job_list_description[] =
	"List your background jobs (running and finished) with their ids, kinds, and statuses.";
static const char job_list_schema[] =
	"{\"type\":\"object\",\"properties\":{}}";
static const char job_output_description[] =
	"Read a background job. Stream jobs return only output since the previous read; final-out"
	"put jobs return their result after settlement. Every response ends with `[status: ...]`."
	" Reads are non-blocking unless `wait: true`, which waits up to the configured cap.";
static const char job_output_schema[] =
	"{\"type\":\"object\",\"properties\":{\"job_id\":{\"type\":\"string\",\"description\":\"J"
	"ob id returned by the tool that started the background work.\"},\"wait\":{\"type\":\"boo"
	"lean\",\"description\":\"Block until the job reaches a terminal status or the timeout ex"
	"pires. A timed-out wait returns [status: running] and leaves the job alive.\"},\"timeout"
	"_ms\":{\"type\":\"number\",\"description\":\"Max wait in milliseconds (only meaningful w"
	"ith wait: true). Defaults to the configured wait timeout; capped by the configured maxim"
	"um.\"}},\"required\":[\"job_id\"]}";

/* read */
static const char read_description[] =
	"Read a UTF-8 text file and return line-numbered content.";
static const char read_schema[] =
	"{\"type\":\"object\",\"properties\":{\"file_path\":{\"type\":\"string\",\"descriptio"
	"n\":\"Path to read, resolved by the filesystem backend.\"},\"offset\":{\"type\":\"nu"
	"mber\",\"description\":\"1-based first line to return. Defaults to 1.\"},\"limit\":{"
	"\"type\":\"number\",\"description\":\"Maximum number of lines to return. Defaults to"
	" 2000.\"}},\"required\":[\"file_path\"]}";

/* write */
static const char write_description[] =
	"Create or fully replace a UTF-8 text file.";
static const char write_schema[] =
	"{\"type\":\"object\",\"properties\":{\"file_path\":{\"type\":\"string\",\"descriptio"
	"n\":\"Path to write, resolved by the filesystem backend.\"},\"content\":{\"type\":\""
	"string\",\"description\":\"Full UTF-8 text content to write.\"},\"sandbox_permission"
	"s\":{\"type\":\"string\",\"description\":\"The wider sandbox mode this file operatio"
	"n needs. Only valid as a one-shot retry of an operation the sandbox just denied; req"
	"uires justification and user approval.\",\"enum\":[\"workspace-write\",\"danger-full"
	"-access\"]},\"justification\":{\"type\":\"string\",\"description\":\"Required with s"
	"andbox_permissions: one sentence for the user explaining why this exact file operati"
	"on needs the wider access.\"}},\"required\":[\"file_path\",\"content\"]}";
/* clang-format on */

/* The system-prompt sections DSH's tools register (tool:read 100, tool:write 101, tool:edit
 * 102, tool:bash 105, tool:jobs 106), in their order, joined as DSH joins sections. */
static const char prompt_sections[] =
	"Use the read tool — not shell commands like cat — to inspect text files. Results "
	"include line numbers. Use offset and limit to continue reading large files.\n\n"
	"Use the write tool to create files or completely replace file contents. Existing files "
	"are overwritten, so read an existing file first (the default fs-observation-policy "
	"requires it) and prefer edit for targeted changes.\n\n"
	"Use the edit tool for targeted changes to existing UTF-8 text files. It replaces literal "
	"old_string with new_string; by default old_string must appear exactly once. If "
	"old_string appears multiple times, provide a more specific old_string or set replace_all "
	"to true. Read the file first (the default fs-observation-policy requires it), unless you "
	"just created or edited it in this session.\n\n"
	"Check the [exit code: N] marker on every bash result; investigate failures before moving "
	"on.\n\n"
	"Track every background job id you start. You are notified in-session when a job finishes "
	"— do not busy-poll or sleep on one; keep working on independent steps and do not "
	"duplicate a running job's work. Before giving a final answer, collect every "
	"still-relevant job with job_output (set wait: true only when you are genuinely blocked "
	"on it), and job_kill jobs that stopped mattering.";

typedef struct tool_def {
	const char *name;
	server_tool tool;
	const char *description;
	const char *schema;
} tool_def;

/* DSH's order: by code unit (system-prompt orderTools()). */
static const tool_def defs[] = {
	{"bash", TOOL_BASH, bash_description, bash_schema},
	{"edit", TOOL_EDIT, edit_description, edit_schema},
	{"job_kill", TOOL_JOB_KILL, job_kill_description, job_kill_schema},
	{"job_list", TOOL_JOB_LIST, job_list_description, job_list_schema},
	{"job_output", TOOL_JOB_OUTPUT, job_output_description, job_output_schema},
	{"read", TOOL_READ, read_description, read_schema},
	{"write", TOOL_WRITE, write_description, write_schema},
};

const char *tools_prompt_sections(void)
{
	return prompt_sections;
}

json_t *tools_list(void)
{
	json_t *list = json_array();
	for (size_t i = 0; list && i < ELEMENTSOF(defs); i++) {
		json_t *schema = json_loads(defs[i].schema, 0, NULL);
		json_t *tool =
			schema ? json_pack("{s:s, s:s, s:o}", "name", defs[i].name, "description",
					   defs[i].description, "inputSchema", schema)
			       : NULL;
		if (!tool || json_array_append_new(list, tool) < 0) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

server_tool tools_find(const char *name)
{
	for (size_t i = 0; name && i < ELEMENTSOF(defs); i++)
		if (strcmp(defs[i].name, name) == 0)
			return defs[i].tool;
	return _TOOL_INVALID;
}

static const tool_def *def_of(server_tool tool)
{
	for (size_t i = 0; i < ELEMENTSOF(defs); i++)
		if (defs[i].tool == tool)
			return &defs[i];
	return NULL;
}

char *tools_js_number(double v)
{
	strbuf sb = STRBUF_INIT;
	if (json_number_append(&sb, v) < 0) {
		strbuf_done(&sb);
		return NULL;
	}
	return strbuf_take(&sb);
}

/* One violation, "\"KEY\" WHAT[ MORE]", "; "-separated in the caller's order. -ENOMEM. */
static int violation(strbuf *sb, const char *key, const char *what, const char *more)
{
	int r = sb->len > 0 ? strbuf_puts(sb, "; ") : 0;
	if (r >= 0)
		r = strbuf_printf(sb, "\"%s\" %s%s%s", key, what, more ? " " : "",
				  more ? more : "");
	return r;
}

/* DSH's checkValue() for an object root of scalar properties (all its tools' schemas). */
static int check_schema(const json_t *schema, const json_t *args, strbuf *sb)
{
	if (!json_is_object(args))
		return violation(sb, "arguments", "must be an object", NULL);
	const json_t *props = json_object_get(schema, "properties");
	const json_t *required = json_object_get(schema, "required");
	size_t i;
	const json_t *v;
	int r = 0;

	/* Every missing required property first, in `required` order. */
	json_array_foreach(required, i, v)
	{
		const char *key = json_string_value(v);
		if (r >= 0 && !json_object_get(args, key))
			r = (sb->len > 0 ? strbuf_puts(sb, "; ") : 0) < 0
				    ? -ENOMEM
				    : strbuf_printf(sb, "missing required property \"%s\"", key);
	}
	/* Then each given property, in `properties` order. */
	const char *key;
	json_t *node;
	json_object_foreach((json_t *)props, key, node)
	{
		const json_t *value = json_object_get(args, key);
		const char *type = json_string_value(json_object_get(node, "type"));
		if (r < 0 || !value || !type)
			continue;
		if (strcmp(type, "string") == 0 && !json_is_string(value))
			r = violation(sb, key, "must be a string", NULL);
		else if (strcmp(type, "number") == 0 && !json_is_number(value))
			r = violation(sb, key, "must be a number", NULL);
		else if (strcmp(type, "number") == 0 && json_is_real(value) &&
			 json_real_value(value) == 0 && signbit(json_real_value(value)))
			r = violation(sb, key, "must be a finite JSON number", NULL);
		else if (strcmp(type, "boolean") == 0 && !json_is_boolean(value))
			r = violation(sb, key, "must be a boolean", NULL);
		else if (json_is_string(value) && json_object_get(node, "enum")) {
			const json_t *allowed = json_object_get(node, "enum");
			bool found = false;
			size_t j;
			const json_t *a;
			json_array_foreach(allowed, j, a) found =
				found || json_equal((json_t *)a, (json_t *)value);
			if (!found) {
				_cleanup_free_ char *list = json_dumps(allowed, JSON_COMPACT);
				r = list ? violation(sb, key, "must be one of", list) : -ENOMEM;
			}
		}
	}
	return r;
}

static const char *arg_string(const json_t *args, const char *key)
{
	return json_string_value(json_object_get(args, key));
}

/* A number argument, or NAN when absent (the schema check made it a number). */
static double arg_number(const json_t *args, const char *key)
{
	const json_t *v = json_object_get(args, key);
	return v ? json_number_value(v) : NAN;
}

/* A positive number of milliseconds, rounded up, as a uint64_t (saturated). */
static uint64_t to_u64(double v)
{
	v = ceil(v);
	return v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v;
}

/* parsePositiveInteger() of read.ts: 0 when @v is absent (@fallback then), -1 refused. */
static int positive_integer(double v, uint64_t fallback, uint64_t *ret)
{
	if (isnan(v)) {
		*ret = fallback;
		return 0;
	}
	if (!isfinite(v) || floor(v) != v || v < 1)
		return -1;
	*ret = to_u64(v);
	return 0;
}

/* 1 with *@ret_message a copy of @text (the tool's refusal); -ENOMEM. */
static int fail_message(char **ret_message, const char *text)
{
	*ret_message = strdup(text);
	return *ret_message ? 1 : -ENOMEM;
}

/* The library's tool for a server tool that is a call (not a job tool). */
static dsb_tool call_tool_of(server_tool tool)
{
	switch (tool) {
	case TOOL_BASH:
		return DSB_TOOL_BASH;
	case TOOL_EDIT:
		return DSB_TOOL_EDIT;
	case TOOL_READ:
		return DSB_TOOL_READ;
	case TOOL_WRITE:
		return DSB_TOOL_WRITE;
	case TOOL_JOB_KILL:
	case TOOL_JOB_LIST:
	case TOOL_JOB_OUTPUT:
	case _TOOL_MAX:
	case _TOOL_INVALID:
	default:
		return _DSB_TOOL_INVALID;
	}
}

int tools_plan(server_tool tool, json_t *args, tool_plan *ret, char **ret_message)
{
	const tool_def *def = def_of(tool);
	if (!def)
		return -EINVAL;
	*ret = (tool_plan){.tool = tool, .req = DSB_CALL_REQUEST_INIT};
	ret->req.tool = call_tool_of(tool);

	/* The schema first: every violation, in DSH's walk order. */
	json_t *schema = json_loads(def->schema, 0, NULL);
	if (!schema)
		return -ENOMEM;
	strbuf sb = STRBUF_INIT;
	json_t *empty = args ? NULL : json_object();
	int r = check_schema(schema, args ? args : empty, &sb);
	json_decref(schema);
	json_decref(empty);
	if (r < 0) {
		strbuf_done(&sb);
		return -ENOMEM;
	}
	if (sb.len > 0) {
		r = asprintf(ret_message, "invalid arguments: %s", sb.buf);
		strbuf_done(&sb);
		return r < 0 ? -ENOMEM : 1;
	}
	strbuf_done(&sb);

	/* The job tools: the registry checks the rest itself (an empty id, the wait). */
	if (ret->req.tool == _DSB_TOOL_INVALID) {
		ret->job_id = arg_string(args, "job_id");
		ret->wait = json_is_true(json_object_get(args, "wait"));
		ret->job_timeout_ms = arg_number(args, "timeout_ms");
		return 0;
	}

	dsb_call_request *req = &ret->req;
	req->path = arg_string(args, "file_path");
	/* A read takes no escalation: DSH ignores keys a tool does not declare. */
	if (tool != TOOL_READ) {
		req->sandbox_permissions = arg_string(args, "sandbox_permissions");
		req->justification = arg_string(args, "justification");
	}
	switch (req->tool) {
	case DSB_TOOL_BASH: {
		/* tool-bash validateArgs(), then the escalation pairing (the call's, same texts).
		 */
		req->command = arg_string(args, "command");
		req->workdir = arg_string(args, "workdir");
		if (js_blank(req->command))
			return fail_message(ret_message,
					    "invalid command: expected a non-empty string");
		if (js_blank(arg_string(args, "description")))
			return fail_message(ret_message,
					    "invalid description: expected a non-empty string");
		double t = arg_number(args, "timeoutMs");
		if (!isnan(t) && (!isfinite(t) || t <= 0)) {
			_cleanup_free_ char *got = tools_js_number(t);
			if (!got)
				return -ENOMEM;
			return asprintf(ret_message,
					"invalid timeoutMs: expected a positive number, got %s",
					got) < 0
				       ? -ENOMEM
				       : 1;
		}
		if (!isnan(t))
			req->timeout_ms = to_u64(t);
		ret->background = json_is_true(json_object_get(args, "run_in_background"));
		return 0;
	}
	case DSB_TOOL_WRITE: {
		const json_t *content = json_object_get(args, "content");
		req->content = json_string_value(content);
		req->content_len = json_string_length(content);
		return 0;
	}
	case DSB_TOOL_EDIT:
		req->old_string = arg_string(args, "old_string");
		req->new_string = arg_string(args, "new_string");
		req->replace_all = json_is_true(json_object_get(args, "replace_all"));
		return 0;
	case DSB_TOOL_READ:
		/* parseReadArgs() of read.ts, in its order. */
		if (js_blank(req->path))
			return fail_message(ret_message, "file_path must be a non-empty string");
		if (positive_integer(arg_number(args, "offset"), 1, &ret->read_offset) < 0)
			return fail_message(ret_message, "offset must be a positive integer");
		if (positive_integer(arg_number(args, "limit"), TOOL_READ_LIMIT, &ret->read_limit) <
		    0)
			return fail_message(ret_message, "limit must be a positive integer");
		if (ret->read_limit > TOOL_READ_LIMIT)
			return asprintf(ret_message, "limit must be less than or equal to %d",
					TOOL_READ_LIMIT) < 0
				       ? -ENOMEM
				       : 1;
		return 0;
	case DSB_TOOL_EXEC:
	case _DSB_TOOL_MAX:
	case _DSB_TOOL_INVALID:
	default:
		break;
	}
	return -EINVAL;
}
