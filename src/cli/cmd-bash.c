/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox bash: DSH's bash tool from the command line. Runs `bash -c COMMAND` under the
 * resolved policy and prints the model-facing text byte for byte (spec §6.8), or the structured
 * result with --json. Exit 0 whenever the tool call succeeded, whatever the command's exit;
 * non-zero only for infrastructure failures, printed as "Error: MESSAGE".
 */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core.h"
#include "../exec/exec.h"
#include "run-common.h"

static int put_output(strbuf *sb, const char *key, const dsb_output *o)
{
	int r = strbuf_printf(sb, ",\"%s\":{\"text\":", key);
	if (r >= 0)
		r = json_quote_append(sb, o->text, o->len);
	if (r >= 0)
		r = strbuf_printf(
			sb, ",\"truncated\":%s,\"spillPath\":", o->truncated ? "true" : "false");
	if (r >= 0)
		r = o->spill_path ? json_quote_append(sb, o->spill_path, strlen(o->spill_path))
				  : strbuf_puts(sb, "null");
	if (r >= 0)
		r = strbuf_putc(sb, '}');
	return r;
}

static int render_json(strbuf *sb, const dsb_run_result *res, const char *text, size_t text_len)
{
	const char *sig = render_signal_name(res->signal);
	int r = res->exit_code >= 0 ? strbuf_printf(sb, "{\"exitCode\":%d", res->exit_code)
				    : strbuf_puts(sb, "{\"exitCode\":null");
	if (r >= 0)
		r = sig		  ? strbuf_printf(sb, ",\"signal\":\"%s\"", sig)
		    : res->signal ? strbuf_printf(sb, ",\"signal\":%d", res->signal)
				  : strbuf_puts(sb, ",\"signal\":null");
	if (r >= 0)
		r = strbuf_printf(sb, ",\"timedOut\":%s,\"timeoutMs\":%llu",
				  res->timed_out ? "true" : "false",
				  (unsigned long long)res->timeout_ms);
	if (r >= 0)
		r = put_output(sb, "stdout", &res->out);
	if (r >= 0)
		r = put_output(sb, "stderr", &res->err);
	if (r >= 0)
		r = strbuf_printf(sb, ",\"sandbox\":{\"mode\":\"%s\",\"denied\":%s",
				  dsb_mode_to_string(res->mode), res->denied ? "true" : "false");
	if (r >= 0 && res->has_enforcement)
		r = strbuf_printf(sb, ",\"enforcement\":\"%s\"",
				  dsb_enforcement_to_string(res->enforcement));
	if (r >= 0)
		r = strbuf_puts(sb, "},\"text\":");
	if (r >= 0)
		r = json_quote_append(sb, text, text_len);
	if (r >= 0)
		r = strbuf_puts(sb, "}\n");
	return r;
}

/* An infrastructure failure: what the model sees, "Error: MESSAGE", or its JSON. */
static int report(const dsb_error *err, bool json)
{
	if (json) {
		strbuf sb = STRBUF_INIT;
		const char *name = dsb_code_dsh_error(err->code);
		int r = strbuf_printf(&sb,
				      "{\"error\":{\"name\":\"%s\",\"code\":\"%s\",\"message\":",
				      name ? name : "Error", dsb_code_name(err->code));
		if (r >= 0)
			r = json_quote_append(&sb, err->message, strlen(err->message));
		if (r >= 0 && strbuf_puts(&sb, "}}\n") >= 0)
			fputs(sb.buf, stdout);
		strbuf_done(&sb);
	} else
		printf("Error: %s", err->message);
	(void)cli_flush_stdout();
	return dsb_code_exit_status(err->code);
}

int cmd_bash(cli_global *global, int argc, char **argv)
{
	const cli_command *cmd = cli_find_command("bash");
	run_args args = {.tool_name = "bash"};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", run_options, NULL)) != -1) {
		if (run_parse_option(c, optarg, global, &args))
			continue;
		if (c == 'j')
			args.json = true;
		else if (c == 'h') {
			cli_print_usage(stdout, cmd);
			return 0;
		} else
			return cli_option_error(cmd, c, argv);
	}
	if (args.policy.session && args.policy.mode)
		return cli_usage_error(cmd, "--session and --mode do not go together");
	if (argc - optind != 1)
		return cli_usage_error(cmd, "expected exactly one COMMAND, got %d", argc - optind);
	const char *command = argv[optind];
	args.subject = command;

	dsb_error err = {0};
	if (js_blank(command)) {
		dsb_fail(&err, DSB_E_INVALID_ARGS, "invalid command: expected a non-empty string");
		return report(&err, args.json);
	}

	run_context ctx;
	dsb_run_result res = {0};
	int r = run_prepare(global, &args, &ctx, &err);
	if (r >= 0) {
		dsb_run_request req = {
			.command = command,
			.workdir = ctx.workdir,
			.timeout_ms = ctx.timeout_ms,
			.dsh_env = ctx.dsh_env,
		};
		r = dsb_exec_run(ctx.provider, ctx.cfg, &ctx.policy, &req, &res, &err);
	}
	run_context_done(&ctx);
	if (r < 0)
		return report(&err, args.json);

	_cleanup_free_ char *text = NULL;
	size_t text_len = 0;
	strbuf sb = STRBUF_INIT;
	/* Ours is a confining executor: the escalation hint follows a denial (spec §6.8). */
	r = dsb_render_result(&res, true, &text, &text_len, &err);
	if (r >= 0 && args.json)
		r = render_json(&sb, &res, text, text_len) < 0
			    ? dsb_fail(&err, DSB_E_NO_MEMORY, "out of memory")
			    : 0;
	dsb_run_result_done(&res);
	if (r < 0) {
		strbuf_done(&sb);
		return report(&err, args.json);
	}
	if (args.json)
		fputs(sb.buf, stdout);
	else
		(void)fwrite(text, 1, text_len, stdout); /* the output may hold NUL bytes */
	strbuf_done(&sb);
	return cli_flush_stdout();
}
