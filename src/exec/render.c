/* SPDX-License-Identifier: MIT */
/*
 * The bash tool's model-facing text for one foreground run (dsh-compat §6.8, DSH's tool-bash
 * renderResult): the stdout tail and its truncation note, a marked stderr section with its own
 * note, "(no output)" for silence, then one marker a line: the sandbox denial and the escalation
 * hint (§8.1), the timeout, and last the signal or non-zero exit, where DSH's parseExitStatus
 * anchors. The text is byte-exact: the model and DSH's presentation layer both parse it.
 *
 * The tails are raw bytes; DSH decodes them as UTF-8 with replacement before rendering, so every
 * piece of output text goes through utf8_sanitize(). A NUL byte is kept, as a JS string keeps
 * it: render_result() returns the length too.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

/*
 * Signal names as Node's signo_string() gives them on Linux, where the ChildProcess 'exit'
 * event gets them. Not sigabbrev_np(): glibc names 29 "POLL", Node "SIGIO".
 */
/* clang-format off: a table, one signal a line */
static const char *const signal_names[] = {
	[SIGHUP] = "SIGHUP",	   [SIGINT] = "SIGINT",	      [SIGQUIT] = "SIGQUIT",
	[SIGILL] = "SIGILL",	   [SIGTRAP] = "SIGTRAP",     [SIGABRT] = "SIGABRT",
	[SIGBUS] = "SIGBUS",	   [SIGFPE] = "SIGFPE",	      [SIGKILL] = "SIGKILL",
	[SIGUSR1] = "SIGUSR1",	   [SIGSEGV] = "SIGSEGV",     [SIGUSR2] = "SIGUSR2",
	[SIGPIPE] = "SIGPIPE",	   [SIGALRM] = "SIGALRM",     [SIGTERM] = "SIGTERM",
	[SIGSTKFLT] = "SIGSTKFLT", [SIGCHLD] = "SIGCHLD",     [SIGCONT] = "SIGCONT",
	[SIGSTOP] = "SIGSTOP",	   [SIGTSTP] = "SIGTSTP",     [SIGTTIN] = "SIGTTIN",
	[SIGTTOU] = "SIGTTOU",	   [SIGURG] = "SIGURG",	      [SIGXCPU] = "SIGXCPU",
	[SIGXFSZ] = "SIGXFSZ",	   [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
	[SIGWINCH] = "SIGWINCH",   [SIGIO] = "SIGIO",	      [SIGPWR] = "SIGPWR",
	[SIGSYS] = "SIGSYS",
};
/* clang-format on */

char *render_denial_marker(dsb_mode mode)
{
	const char *name = dsb_mode_to_string(mode);
	char *s = NULL;

	if (!name || asprintf(&s, "[sandbox: file access denied under %s mode]", name) < 0)
		return NULL;
	return s;
}

char *render_escalation_hint(const char *subject)
{
	char *s = NULL;

	if (!subject || asprintf(&s,
				 "[sandbox: escalation available \xE2\x80\x94 retry this exact %s "
				 "once with sandbox_permissions (the narrowest wider mode that "
				 "suffices) + justification; the approval prompt asks the user]",
				 subject) < 0)
		return NULL;
	return s;
}

/* Appends @s (@len raw bytes) decoded as UTF-8 with replacement. */
static int append_text(strbuf *sb, const char *s, size_t len)
{
	_cleanup_free_ char *text = NULL;
	size_t text_len = 0;

	int r = utf8_sanitize(s ? s : "", s ? len : 0, &text, &text_len);
	if (r < 0)
		return r;
	return strbuf_append(sb, text, text_len);
}

/* DSH's streamText(): the tail, then the note on its own line when bytes were dropped. */
static int append_stream(strbuf *sb, const dsb_output *o)
{
	int r = append_text(sb, o->text, o->len);
	if (r < 0 || !o->truncated)
		return r;
	r = strbuf_puts(sb, "\n[output truncated; full output: ");
	if (r >= 0)
		r = o->spill_path ? append_text(sb, o->spill_path, strlen(o->spill_path))
				  : strbuf_puts(sb, "(unavailable)");
	if (r >= 0)
		r = strbuf_putc(sb, ']');
	return r;
}

static bool ends_with_newline(const strbuf *sb)
{
	return sb->len > 0 && sb->buf[sb->len - 1] == '\n';
}

/* Adds one marker line to @markers. Takes ownership of @marker; NULL means OOM. */
static int add_marker(strbuf *markers, char *marker)
{
	_cleanup_free_ char *m = marker;

	if (!m)
		return -ENOMEM;
	int r = markers->len > 0 ? strbuf_putc(markers, '\n') : 0;
	if (r >= 0)
		r = strbuf_puts(markers, m);
	return r;
}

static char *format_timeout_marker(uint64_t timeout_ms)
{
	char *s = NULL;
	return asprintf(&s, "[timed out after %" PRIu64 "ms]", timeout_ms) < 0 ? NULL : s;
}

const char *render_signal_name(int sig)
{
	return sig > 0 && (size_t)sig < ELEMENTSOF(signal_names) ? signal_names[sig] : NULL;
}

static char *format_exit_marker(const dsb_run_result *r)
{
	char *s = NULL;
	int n;

	if (render_signal_name(r->signal))
		n = asprintf(&s, "[killed by signal: %s]", render_signal_name(r->signal));
	else if (r->signal != 0)
		/* Node has no name for it (a real-time signal); say which one it was. */
		n = asprintf(&s, "[killed by signal: %d]", r->signal);
	else
		n = asprintf(&s, "[exit code: %d]", r->exit_code);
	return n < 0 ? NULL : s;
}

static int render_markers(const dsb_run_result *r, bool confines, strbuf *markers)
{
	int k = 0;

	/* The denial first, then its escalation hint, so the exit status stays last. */
	if (r->sandboxed && r->denied) {
		k = add_marker(markers, render_denial_marker(r->mode));
		if (k >= 0 && confines)
			k = add_marker(markers, render_escalation_hint("command"));
	}
	/* A command may trap SIGTERM and exit 0 after the timeout: still report it. */
	if (k >= 0 && r->timed_out)
		k = add_marker(markers, format_timeout_marker(r->timeout_ms));
	if (k >= 0 && (r->signal != 0 || r->exit_code != 0))
		k = add_marker(markers, format_exit_marker(r));
	/* Beyond DSH, after all of its markers: what the sandbox refused, from its evidence,
	 * else which protected path the denial was about, from the command's words. */
	if (k >= 0 && r->sandboxed && r->refusal_note)
		k = add_marker(markers, strdup(r->refusal_note));
	else if (k >= 0 && r->sandboxed && r->denied && r->protected_note)
		k = add_marker(markers, strdup(r->protected_note));
	/* Then what the network policy refused (docs/design/network.md). */
	if (k >= 0 && r->sandboxed && r->network_note)
		k = add_marker(markers, strdup(r->network_note));
	/* Then the limits the call reached (docs/design/limits.md). */
	if (k >= 0 && r->sandboxed && r->limit_note)
		k = add_marker(markers, strdup(r->limit_note));
	/* Last, what the sandbox undid once the command had ended (docs/design/paths.md). */
	if (k >= 0 && r->sandboxed && r->undone_note)
		k = add_marker(markers, strdup(r->undone_note));
	return k;
}

int render_result(const dsb_run_result *r, bool confines, char **ret_text, size_t *ret_len)
{
	_cleanup_(strbuf_done) strbuf body = STRBUF_INIT;
	_cleanup_(strbuf_done) strbuf err = STRBUF_INIT;
	_cleanup_(strbuf_done) strbuf markers = STRBUF_INIT;

	if (!r || !ret_text || (!r->out.text && r->out.len > 0) || (!r->err.text && r->err.len > 0))
		return -EINVAL;
	if (r->sandboxed && r->denied && !dsb_mode_to_string(r->mode))
		return -EINVAL;

	int k = append_stream(&body, &r->out);
	if (k >= 0)
		k = append_stream(&err, &r->err);
	if (k >= 0 && err.len > 0) {
		/* One newline between the sections; stdout usually ends with one already. */
		if (body.len > 0 && !ends_with_newline(&body))
			k = strbuf_putc(&body, '\n');
		if (k >= 0)
			k = strbuf_puts(&body, "[stderr]\n");
		if (k >= 0)
			k = strbuf_append(&body, err.buf, err.len);
	}
	if (k >= 0 && body.len == 0)
		k = strbuf_puts(&body, "(no output)");
	if (k >= 0)
		k = render_markers(r, confines, &markers);
	if (k >= 0 && markers.len > 0) {
		if (!ends_with_newline(&body))
			k = strbuf_putc(&body, '\n');
		if (k >= 0)
			k = strbuf_append(&body, markers.buf, markers.len);
	}
	if (k < 0)
		return k;

	size_t len = body.len;
	char *text = strbuf_take(&body);
	if (!text)
		return -ENOMEM;
	*ret_text = text;
	if (ret_len)
		*ret_len = len;
	return 0;
}

int dsb_render_result(const dsb_run_result *r, bool confines, char **ret_text, size_t *ret_len,
		      dsb_error *reterr)
{
	int k = render_result(r, confines, ret_text, ret_len);

	if (k == -EINVAL)
		return dsb_fail(
			reterr, DSB_E_INVALID_ARGS,
			"render: a result with output text and a known sandbox mode is needed");
	if (k < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "render: out of memory");
	return 0;
}
