/* SPDX-License-Identifier: MIT */
/*
 * DSH's background-job texts, byte for byte (dsh-compat §6.10). Their sources in DSH: the status
 * line, job_output's, job_kill's and job_list's renderings and the completion notice are tool-jobs'
 * (packages/jobs/tool-jobs/src/index.ts); a bash job's read body is bash-local's readOutput()
 * (the stdout and stderr deltas) and tool-bash's renderProcessRead() (the notices), and the
 * status details are tool-bash's processOutcome() (background.ts).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/exec.h"
#include "jobs.h"

static const char *const status_names[_JOB_STATUS_MAX] = {
	[JOB_RUNNING] = "running", [JOB_STOPPING] = "stopping", [JOB_COMPLETED] = "completed",
	[JOB_KILLED] = "killed",   [JOB_FAILED] = "failed",
};

const char *job_status_to_string(job_status s)
{
	return s >= 0 && s < _JOB_STATUS_MAX ? status_names[s] : NULL;
}

bool job_status_terminal(job_status s)
{
	return s == JOB_COMPLETED || s == JOB_KILLED || s == JOB_FAILED;
}

int job_status_line_append(strbuf *sb, job_status s, const char *detail)
{
	const char *name = job_status_to_string(s);
	if (!name)
		return -EINVAL;
	return detail ? strbuf_printf(sb, "[status: %s, %s]", name, detail)
		      : strbuf_printf(sb, "[status: %s]", name);
}

static bool ends_with_newline(const char *s, size_t len)
{
	return len > 0 && s[len - 1] == '\n';
}

/* Adds @notice (owned; NULL is OOM) to @notices, one a line. */
static int add_notice(strbuf *notices, char *notice)
{
	_cleanup_free_ char *n = notice;
	if (!n)
		return -ENOMEM;
	int r = notices->len > 0 ? strbuf_putc(notices, '\n') : 0;
	return r < 0 ? r : strbuf_puts(notices, n);
}

/* renderProcessRead()'s notices, joined by newlines. */
static int append_notices(strbuf *notices, const job_read *rd, const job_facts *facts)
{
	int r = 0;
	if (rd->lossy) {
		/* The spill paths of both streams, whichever of them lost bytes. */
		r = strbuf_puts(notices, "[some output was dropped from memory; full output: ");
		if (r >= 0 && !rd->out_spill && !rd->err_spill)
			r = strbuf_puts(notices, "(unavailable)");
		if (r >= 0 && rd->out_spill)
			r = strbuf_puts(notices, rd->out_spill);
		if (r >= 0 && rd->out_spill && rd->err_spill)
			r = strbuf_puts(notices, ", ");
		if (r >= 0 && rd->err_spill)
			r = strbuf_puts(notices, rd->err_spill);
		if (r >= 0)
			r = strbuf_putc(notices, ']');
	}
	if (r < 0 || !facts || !facts->sandboxed)
		return r;
	if (facts->runner_failed) {
		const char *mode = dsb_mode_to_string(facts->mode);
		char *notice = NULL;
		if (!mode)
			return -EINVAL;
		if (asprintf(
			    &notice,
			    "[sandbox: the sandbox runner itself failed under %s mode \xE2\x80\x94 "
			    "the command did not run; this is a sandbox problem, not a command "
			    "failure]",
			    mode) < 0)
			notice = NULL;
		return add_notice(notices, notice);
	}
	if (!facts->denied) {
		r = facts->network_note ? add_notice(notices, strdup(facts->network_note)) : 0;
		if (r >= 0 && facts->limit_note)
			r = add_notice(notices, strdup(facts->limit_note));
		if (r >= 0 && facts->undone_note)
			r = add_notice(notices, strdup(facts->undone_note));
		return r;
	}
	/* Ours is a confining executor: the escalation hint follows the marker (dsh-compat §6.8).
	 */
	r = add_notice(notices, render_denial_marker(facts->mode));
	if (r >= 0)
		r = add_notice(notices, render_escalation_hint("command"));
	/* Beyond DSH, after all of its markers, as in a foreground result. */
	if (r >= 0 && facts->protected_note)
		r = add_notice(notices, strdup(facts->protected_note));
	if (r >= 0 && facts->network_note)
		r = add_notice(notices, strdup(facts->network_note));
	if (r >= 0 && facts->limit_note)
		r = add_notice(notices, strdup(facts->limit_note));
	if (r >= 0 && facts->undone_note)
		r = add_notice(notices, strdup(facts->undone_note));
	return r;
}

int job_read_body_append(strbuf *sb, const job_read *rd, const job_facts *facts)
{
	_cleanup_(strbuf_done) strbuf notices = STRBUF_INIT;
	size_t start = sb->len;

	/* readOutput(): one newline between the sections, added only when stdout lacks it. */
	int r = strbuf_append(sb, rd->out ? rd->out : "", rd->out_len);
	if (r >= 0 && rd->err_len > 0) {
		if (rd->out_len > 0 && !ends_with_newline(rd->out, rd->out_len))
			r = strbuf_putc(sb, '\n');
		if (r >= 0)
			r = strbuf_puts(sb, "[stderr]\n");
		if (r >= 0)
			r = strbuf_append(sb, rd->err, rd->err_len);
	}
	if (r >= 0)
		r = append_notices(&notices, rd, facts);
	if (r < 0 || notices.len == 0)
		return r;
	size_t delta = sb->len - start;
	if (delta > 0 && !ends_with_newline(sb->buf + start, delta))
		r = strbuf_putc(sb, '\n');
	return r < 0 ? r : strbuf_append(sb, notices.buf, notices.len);
}

int job_output_append(strbuf *sb, const char *body, size_t len, job_status s, const char *detail)
{
	int r;
	if (len == 0) {
		body = "(no new output)";
		len = strlen(body);
	}
	r = strbuf_append(sb, body, len);
	/* The line follows the body's own newline: never an empty line between them. */
	if (r >= 0 && !ends_with_newline(body, len))
		r = strbuf_putc(sb, '\n');
	return r < 0 ? r : job_status_line_append(sb, s, detail);
}

int job_list_line_append(strbuf *sb, const char *id, const char *kind, job_status s,
			 const char *label)
{
	const char *name = job_status_to_string(s);
	if (!name)
		return -EINVAL;
	return strbuf_printf(sb, "%s [%s] %s \xE2\x80\x94 %s", id, kind, name, label);
}

int job_notice_append(strbuf *sb, const char *id, const char *kind, const char *label, job_status s,
		      const char *detail)
{
	int r = strbuf_printf(sb, "background job %s (%s: %s) finished ", id, kind, label);
	if (r >= 0)
		r = job_status_line_append(sb, s, detail);
	return r < 0 ? r : strbuf_puts(sb, ". Read its output with job_output.");
}
