/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox fs write|edit|read: DSH's write and edit tools (and read) from the command line,
 * fenced by the resolved policy (spec §7; reads only by its denyRead paths). Results and errors
 * are printed as the model sees them; a fence denial becomes the denial marker plus the
 * escalation hint (§7.4 mapError), and the protected path that refused it, if one did. A
 * one-shot --sandbox-permissions escalation is approved before the path is even resolved.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/core.h"
#include "../exec/exec.h"
#include "run-common.h"

typedef struct fs_args {
	run_args run;
	const char *verb;
	const char *path;
	const char *old_string;
	const char *new_string;
	bool all;
} fs_args;

static const struct option fs_options[] = {
	{"session", required_argument, NULL, 's'},
	{"mode", required_argument, NULL, 'm'},
	{"workspace", required_argument, NULL, 'w'},
	{"config", required_argument, NULL, 'c'},
	{"json", no_argument, NULL, 'j'},
	{"sandbox-permissions", required_argument, NULL, 'p'},
	{"justification", required_argument, NULL, 'J'},
	{"call-id", required_argument, NULL, 'i'},
	{"old", required_argument, NULL, 'O'},
	{"new", required_argument, NULL, 'N'},
	{"all", no_argument, NULL, 'A'},
	{"help", no_argument, NULL, 'h'},
	{0},
};

static int parse_args(cli_global *global, const cli_command *cmd, int argc, char **argv, fs_args *a)
{
	if (argc < 2 || (strcmp(argv[1], "write") != 0 && strcmp(argv[1], "edit") != 0 &&
			 strcmp(argv[1], "read") != 0))
		return -cli_usage_error(
			cmd, argc < 2 ? "no subcommand given" : "unknown subcommand '%s'",
			argc < 2 ? "" : argv[1]);
	a->verb = argv[1];
	argc--;
	argv++;
	optind = 0;
	opterr = 0;
	int c;
	while ((c = getopt_long(argc, argv, ":h", fs_options, NULL)) != -1) {
		if (run_parse_option(c, optarg, global, &a->run))
			continue;
		switch (c) {
		case 'j':
			a->run.json = true;
			break;
		case 'O':
			a->old_string = optarg;
			break;
		case 'N':
			a->new_string = optarg;
			break;
		case 'A':
			a->all = true;
			break;
		case 'h':
			cli_print_usage(stdout, cmd);
			return 1;
		default:
			return -cli_option_error(cmd, c, argv);
		}
	}
	if (argc - optind != 1)
		return -cli_usage_error(cmd, "expected exactly one PATH, got %d", argc - optind);
	a->path = argv[optind];
	if (strcmp(a->verb, "edit") == 0 && (!a->old_string || !a->new_string))
		return -cli_usage_error(cmd, "'fs edit' needs --old TEXT and --new TEXT");
	if (strcmp(a->verb, "edit") != 0 && (a->old_string || a->new_string || a->all))
		return -cli_usage_error(cmd, "--old, --new and --all go with 'fs edit'");
	if (strcmp(a->verb, "read") == 0 && (a->run.sandbox_permissions || a->run.justification))
		return -cli_usage_error(cmd, "reads are not escalated: nothing to approve");
	return 0;
}

/*
 * An infrastructure or fs failure: what the model sees, "Error: MESSAGE", or its JSON. A read
 * has no escalation (the tool takes no sandbox_permissions), so its denial offers none.
 */
static int report(const dsb_error *err, const dsb_exec_policy *policy, bool escalates, bool json)
{
	_cleanup_free_ char *mapped = NULL;
	const char *message = err->message;
	if (err->code == DSB_E_FS_SANDBOX_DENIED && policy && policy->workspace_root) {
		/*
		 * mapError (§7.4): the marker and the hint; a confining fs always advertises. The
		 * fence's lines after DSH's first one (a protected path named) are ours, and the
		 * model needs them to see why a write inside the workspace was refused: kept.
		 */
		const char *extra = strchr(err->message, '\n');
		_cleanup_free_ char *marker = render_denial_marker(policy->mode);
		_cleanup_free_ char *hint = escalates ? render_escalation_hint("operation") : NULL;
		if (marker && (hint || !escalates) &&
		    asprintf(&mapped, "%s%s%s%s", marker, hint ? "\n" : "", hint ? hint : "",
			     extra ? extra : "") > 0)
			message = mapped;
	}
	/* remediateFsError (§7.4): a stale version tells the model what to do next. */
	_cleanup_free_ char *remedied = NULL;
	if (err->code == DSB_E_FS_STALE_VERSION &&
	    asprintf(&remedied, "%s — re-read the file, then retry", message) > 0)
		message = remedied;
	if (json) {
		strbuf sb = STRBUF_INIT;
		const char *name = dsb_code_dsh_error(err->code);
		int r = strbuf_printf(&sb,
				      "{\"error\":{\"name\":\"%s\",\"code\":\"%s\",\"message\":",
				      name ? name : "Error", dsb_code_name(err->code));
		if (r >= 0)
			r = json_quote_append(&sb, message, strlen(message));
		if (r >= 0 && strbuf_puts(&sb, "}}\n") >= 0)
			fputs(sb.buf, stdout);
		strbuf_done(&sb);
	} else
		printf("Error: %s", message);
	(void)cli_flush_stdout();
	return dsb_code_exit_status(err->code);
}

/*
 * The write tool's content: all of stdin, up to the fence's limit. At most one byte past it is
 * read: *@ret_over says the input is longer, and the rest is never buffered.
 */
static int read_stdin(char **ret, size_t *ret_len, bool *ret_over, dsb_error *err)
{
	strbuf sb = STRBUF_INIT;
	char buf[65536];
	ssize_t n;
	int r = strbuf_append(&sb, "", 0);
	*ret_over = false;
	while (r >= 0) {
		size_t want = DSB_FS_MAX_BYTES + 1 - sb.len;
		n = read(STDIN_FILENO, buf, want < sizeof(buf) ? want : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			strbuf_done(&sb);
			return dsb_fail_errno(err, DSB_E_IO, errno,
					      "reading the content from stdin");
		}
		if (n == 0)
			break;
		r = strbuf_append(&sb, buf, (size_t)n);
		if (r >= 0 && sb.len > DSB_FS_MAX_BYTES) {
			*ret_over = true;
			break;
		}
	}
	if (r < 0) {
		strbuf_done(&sb);
		return dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
	}
	*ret_len = sb.len;
	*ret = strbuf_take(&sb);
	return 0;
}

/* FS_TOO_LARGE for an input cut at the limit, in the fence's text, after the fence's check. */
static int fail_input_too_large(const fs_args *a, const run_context *ctx, dsb_error *err)
{
	const char *cwd = ctx->policy.workspace_root;
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};

	/* A denied write is denied whatever its size, as the fence decides it first. */
	int r = dsb_fence_check(&ctx->policy, cwd, a->path, err);
	if (r < 0)
		return r;
	r = dsb_fs_resolve(cwd, a->path, &t, err);
	if (r < 0)
		return r;
	r = dsb_fail(err, DSB_E_FS_TOO_LARGE,
		     "cannot write \"%s\": content exceeds the %zu-byte limit", t.display_path,
		     DSB_FS_MAX_BYTES);
	dsb_error_set_subject(err, t.display_path);
	return r;
}

static int do_write(const fs_args *a, const run_context *ctx, bool json, dsb_error *err)
{
	_cleanup_free_ char *content = NULL;
	size_t len = 0;
	bool over = false;
	dsb_fs_write_result res = {0};
	int r = read_stdin(&content, &len, &over, err);
	if (r >= 0 && over)
		return fail_input_too_large(a, ctx, err);
	if (r >= 0)
		r = dsb_fence_write(&ctx->policy, ctx->policy.workspace_root, a->path, content, len,
				    &res, err);
	if (r < 0)
		return r;
	strbuf sb = STRBUF_INIT;
	if (json) {
		r = strbuf_puts(&sb, "{\"path\":");
		if (r >= 0)
			r = json_quote_append(&sb, res.display_path, strlen(res.display_path));
		if (r >= 0)
			r = strbuf_printf(&sb, ",\"operation\":\"%s\"}\n",
					  res.created ? "create" : "update");
	} else
		r = strbuf_printf(&sb,
				  "<path>%s</path>\n<type>file</type>\n<content>\n%s\n</content>",
				  res.display_path, res.created ? "Created file" : "Updated file");
	if (r >= 0)
		fputs(sb.buf, stdout);
	strbuf_done(&sb);
	dsb_fs_write_result_done(&res);
	return r < 0 ? dsb_fail(err, DSB_E_NO_MEMORY, "out of memory") : 0;
}

static int do_edit(const fs_args *a, const run_context *ctx, bool json, dsb_error *err)
{
	dsb_fs_edit_result res = {0};
	int r = dsb_fence_edit(&ctx->policy, ctx->policy.workspace_root, a->path, a->old_string,
			       a->new_string, a->all, &res, err);
	if (r < 0)
		return r;
	if (json) {
		strbuf sb = STRBUF_INIT;
		r = strbuf_puts(&sb, "{\"path\":");
		if (r >= 0)
			r = json_quote_append(&sb, res.display_path, strlen(res.display_path));
		if (r >= 0)
			r = strbuf_printf(&sb, ",\"replacements\":%zu}\n", res.replacements);
		if (r >= 0)
			fputs(sb.buf, stdout);
		strbuf_done(&sb);
	} else if (res.replaced_all)
		printf("The file %s has been updated. All occurrences were successfully replaced.",
		       res.display_path);
	else
		printf("The file %s has been updated successfully.", res.display_path);
	dsb_fs_edit_result_done(&res);
	return r < 0 ? dsb_fail(err, DSB_E_NO_MEMORY, "out of memory") : 0;
}

/* The text as it is, or with --json {"path":DISPLAY,"content":TEXT}. */
static int do_read(const fs_args *a, const run_context *ctx, bool json, dsb_error *err)
{
	const char *cwd = ctx->policy.workspace_root;
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	int r = dsb_fence_read(&ctx->policy, cwd, a->path, &text, &len, err);
	if (r < 0)
		return r;
	if (!json) {
		(void)fwrite(text, 1, len, stdout);
		return 0;
	}
	_cleanup_(dsb_fs_target_done) dsb_fs_target t = {NULL, NULL};
	r = dsb_fs_resolve(cwd, a->path, &t, err);
	if (r < 0)
		return r;
	strbuf sb = STRBUF_INIT;
	r = strbuf_puts(&sb, "{\"path\":");
	if (r >= 0)
		r = json_quote_append(&sb, t.display_path, strlen(t.display_path));
	if (r >= 0)
		r = strbuf_puts(&sb, ",\"content\":");
	if (r >= 0)
		r = json_quote_append(&sb, text, len);
	if (r >= 0)
		r = strbuf_puts(&sb, "}\n");
	if (r >= 0)
		(void)fwrite(sb.buf, 1, sb.len, stdout);
	strbuf_done(&sb);
	return r < 0 ? dsb_fail(err, DSB_E_NO_MEMORY, "out of memory") : 0;
}

int cmd_fs(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("fs");
	fs_args a = {.run.escalation_subject = "operation"};
	int r = parse_args(global, cmd, argc, argv, &a);
	if (r != 0)
		return r > 0 ? 0 : -r;
	if (a.run.policy.session && a.run.policy.mode)
		return cli_usage_error(cmd, "--session and --mode do not go together");
	a.run.tool_name = a.verb;
	a.run.subject = a.path;

	dsb_error err = {0};
	/* The tool's argument checks come first, before any approval (spec §7.4). */
	if (js_blank(a.path))
		r = dsb_fail(&err, DSB_E_FS_NOT_FOUND, "file_path must be a non-empty string");
	else if (a.old_string && !*a.old_string)
		r = dsb_fail(&err, DSB_E_INVALID_ARGS, "old_string must be a non-empty string");
	else if (a.old_string && strcmp(a.old_string, a.new_string) == 0)
		r = dsb_fail(&err, DSB_E_INVALID_ARGS, "old_string and new_string must differ");
	if (r < 0)
		return report(&err, NULL, false, a.run.json);

	run_context ctx;
	r = run_prepare(global, &a.run, &ctx, &err);
	if (r >= 0) {
		if (strcmp(a.verb, "write") == 0)
			r = do_write(&a, &ctx, a.run.json, &err);
		else if (strcmp(a.verb, "edit") == 0)
			r = do_edit(&a, &ctx, a.run.json, &err);
		else
			r = do_read(&a, &ctx, a.run.json, &err);
	}
	bool escalates = strcmp(a.verb, "read") != 0;
	int status = r < 0 ? report(&err, &ctx.policy, escalates, a.run.json) : cli_flush_stdout();
	run_context_done(&ctx);
	return status;
}
