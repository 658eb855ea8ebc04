/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox permission: DSH's /permission command (dsh-compat §8.7) on a session. Without a
 * PRESET it reports the current preset; with one it switches the session to that preset's sandbox
 * mode and approval policy (dsh-compat §8.6). Each run is logged as DSH's command runtime logs a
 * command: command/run before the handler, command/done with its outcome after. Without --session
 * it prints the configured table and the preset new sessions are pinned to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../approval/approval.h"
#include "cli.h"

/* The white space String.prototype.trim() removes (ECMAScript WhiteSpace and LineTerminator). */
static bool is_js_space(uint32_t cp)
{
	switch (cp) {
	case 0x09:
	case 0x0a:
	case 0x0b:
	case 0x0c:
	case 0x0d:
	case 0x20:
	case 0xa0:
	case 0x1680:
	case 0x2028:
	case 0x2029:
	case 0x202f:
	case 0x205f:
	case 0x3000:
	case 0xfeff:
		return true;
	default:
		return cp >= 0x2000 && cp <= 0x200a;
	}
}

/* rawInput.trim() as a new string. NULL on OOM. */
static char *js_trim(const char *s)
{
	size_t len = strlen(s), i = 0, start = len, end = 0;
	while (i < len) {
		size_t at = i;
		if (!is_js_space(utf8_next(s, len, &i))) {
			if (start == len)
				start = at;
			end = i;
		}
	}
	return start < end ? strndup(s + start, end - start) : strdup("");
}

/* The table's keys joined by ", ", as every listing of the command shows them. */
static int put_names(strbuf *sb, const dsb_config *cfg)
{
	int r = 0;
	for (size_t i = 0; r >= 0 && i < cfg->n_presets; i++)
		r = strbuf_printf(sb, "%s%s", i ? ", " : "", cfg->presets[i].key);
	return r;
}

/* Appends one command lifecycle event: {commandId, then what @w holds (its members)}. */
static int append_lifecycle(dsb_session *s, const char *type, jw *w, dsb_error *err)
{
	jw_object_end(w);
	_cleanup_free_ char *json = NULL;
	if (jw_take(w, &json) < 0)
		return dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
	return dsb_session_append(s, type, json, NULL, err);
}

/* A lifecycle event's writer, with its object begun and its commandId written. */
static jw lifecycle(const char *command_id)
{
	jw w = JW_INIT;
	jw_object_begin(&w);
	jw_member_string(&w, "commandId", command_id);
	return w;
}

/* command/run {commandId, name, args, source:{kind:"user"}}: args is the raw input, verbatim. */
static int log_run(dsb_session *s, const char *command_id, const char *raw_input, dsb_error *err)
{
	jw w = lifecycle(command_id);
	jw_member_string(&w, "name", "permission");
	jw_member_string(&w, "args", raw_input);
	jw_key(&w, "source");
	jw_object_begin(&w);
	jw_member_string(&w, "kind", "user");
	jw_object_end(&w);
	return append_lifecycle(s, "command/run", &w, err);
}

/* command/done {commandId, kind, text}. */
static int log_done(dsb_session *s, const char *command_id, bool success, const char *text,
		    dsb_error *err)
{
	jw w = lifecycle(command_id);
	jw_member_string(&w, "kind", success ? "success" : "error");
	jw_member_string(&w, "text", text);
	return append_lifecycle(s, "command/done", &w, err);
}

/*
 * The handler (dsh-compat §8.7) on the trimmed input: fills @text and *@ret_success. A failure to
 * read or write the log is returned in @err (a thrown handler, in DSH's terms).
 */
static int handle(dsb_session *s, const dsb_config *cfg, const char *name, strbuf *text,
		  bool *ret_success, dsb_error *err)
{
	int r;
	if (name[0] == '\0') {
		_cleanup_free_ char *current = NULL;
		if ((r = presets_current(s, cfg, &current, err)) < 0)
			return r;
		r = strbuf_printf(text, "current preset %s (available: ", current);
		if (r >= 0)
			r = put_names(text, cfg);
		if (r >= 0)
			r = strbuf_putc(text, ')');
		*ret_success = true;
	} else {
		bool known = false;
		for (size_t i = 0; i < cfg->n_presets; i++)
			known = known || strcmp(cfg->presets[i].key, name) == 0;
		if (!known) {
			/* Checked here, as DSH's handler does, so nothing of the switch runs. */
			r = strbuf_printf(text, "unknown preset \"%s\" (available: ", name);
			if (r >= 0)
				r = put_names(text, cfg);
			if (r >= 0)
				r = strbuf_putc(text, ')');
			*ret_success = false;
		} else {
			if ((r = presets_apply(s, cfg, name, err)) < 0)
				return r;
			r = strbuf_printf(text, "preset %s", name);
			*ret_success = true;
		}
	}
	return r < 0 ? dsb_fail(err, DSB_E_NO_MEMORY, "out of memory") : 0;
}

/*
 * One run of the command on an open session. The commandId takes DSH's shape,
 * cmd-<first 8 of a random UUID>-<per-process counter>; a process here runs one command.
 */
static int run_command(dsb_session *s, const dsb_config *cfg, const char *preset, dsb_error *err)
{
	char uuid[UUID_STRING_MAX];
	int r = uuid_random(uuid);
	if (r < 0) {
		(void)dsb_fail_errno(err, DSB_E_IO, -r, "commandId");
		return cli_report(err);
	}

	char command_id[32];
	(void)snprintf(command_id, sizeof(command_id), "cmd-%.8s-1", uuid);

	/* parseCommand()'s rawInput: everything after the name, separator included. */
	_cleanup_free_ char *raw_input = NULL;
	_cleanup_free_ char *name = NULL;
	if (asprintf(&raw_input, "%s%s", preset ? " " : "", preset ? preset : "") < 0)
		raw_input = NULL;
	if (raw_input)
		name = js_trim(raw_input);
	if (!name) {
		(void)dsb_fail(err, DSB_E_NO_MEMORY, "out of memory");
		return cli_report(err);
	}

	if ((r = log_run(s, command_id, raw_input, err)) < 0)
		return cli_report(err);

	strbuf text = STRBUF_INIT;
	bool success = false;
	r = handle(s, cfg, name, &text, &success, err);
	if (r < 0) {
		/* A thrown handler settles as an error; its own failure is what is reported. */
		dsb_error ignored = {0};
		(void)log_done(s, command_id, false, err->message, &ignored);
		strbuf_done(&text);
		return cli_report(err);
	}
	r = log_done(s, command_id, success, text.buf, err);
	if (r < 0) {
		strbuf_done(&text);
		return cli_report(err);
	}

	int status = 0;
	if (success)
		puts(text.buf);
	else {
		cli_error("%s", text.buf);
		status = CLI_EXIT_USAGE;
	}
	strbuf_done(&text);
	int flushed = cli_flush_stdout();
	return status ? status : flushed;
}

/* The table, in declaration order, and the preset new sessions are pinned to. */
static int print_table(const dsb_config *cfg, const dsb_preset *def)
{
	for (size_t i = 0; i < cfg->n_presets; i++) {
		const dsb_preset *p = &cfg->presets[i];
		printf("%s: sandbox %s, approval %s", p->key, dsb_mode_to_string(p->sandbox),
		       dsb_approval_policy_to_string(p->approval));
		if (p->name && strcmp(p->name, p->key) != 0)
			printf(", name \"%s\"", p->name);
		putchar('\n');
		if (p->description)
			printf("  %s\n", p->description);
	}
	printf("default preset %s\n", def->key);
	return cli_flush_stdout();
}

int cmd_permission(const cli_args *args)
{
	const cli_global *global = &args->global;
	const char *session_arg = args->opt[CLI_OPT_SESSION];
	/* NULL: none given (a bare /permission) */
	const char *preset = args->argc > 0 ? args->argv[0] : NULL;
	if (args->argc > 1)
		return cli_usage_error(args->cmd, "unexpected argument '%s'", args->argv[1]);
	if (preset && !session_arg)
		return cli_usage_error(args->cmd, "switching to a preset needs --session");

	dsb_error err = {0};
	dsb_config *cfg = NULL;
	dsb_store *store = NULL;
	dsb_session *session = NULL;
	const dsb_preset *def = NULL;
	int status;

	/* DSH's service refuses to load without a usable default: then there is no command. */
	int r = cli_load_config(global, &cfg, &err);
	if (r >= 0)
		r = presets_default(cfg, &def, &err);
	if (r >= 0 && session_arg) {
		r = dsb_store_open(global->store_path, &store, &err);
		if (r >= 0)
			r = dsb_session_open(store, session_arg, &session, &err);
	}
	if (r < 0)
		status = cli_report(&err);
	else if (!session)
		status = print_table(cfg, def);
	else
		status = run_command(session, cfg, preset, &err);

	dsb_session_free(session);
	dsb_store_free(store);
	dsb_config_free(cfg);
	return status;
}
