/* SPDX-License-Identifier: MIT */
/*
 * Internals of the jobs piece.
 *
 *   texts.c     DSH's texts: the status line, a bash job's read body, job_output, job_kill,
 *               job_list and the completion notice (dsh-compat §6.10; tool-jobs, tool-bash
 * render.ts) registry.c  the registry: ids, starts and the job threads, reads, waits, kills,
 * settling, notices, the end
 */
#ifndef DSB_JOBS_JOBS_H
#define DSB_JOBS_JOBS_H

#include <stdbool.h>
#include <stddef.h>

#include <dsb/jobs.h>
#include <dsb/policy.h>

#include "../core/core.h"

/* A job's status (DSH's JobStatus); the last three are terminal. */
typedef enum job_status {
	JOB_RUNNING,
	JOB_STOPPING,
	JOB_COMPLETED,
	JOB_KILLED,
	JOB_FAILED,
	_JOB_STATUS_MAX,
	_JOB_STATUS_INVALID = -1,
} job_status;

/* "running", "stopping", "completed", "killed", "failed". */
const char *job_status_to_string(job_status s);

bool job_status_terminal(job_status s);

/* statusLine(): "[status: STATUS]", or "[status: STATUS, DETAIL]" with @detail. -ENOMEM. */
int job_status_line_append(strbuf *sb, job_status s, const char *detail);

/* What a settled bash job adds to every read (ShellSandboxInfo, DSH's settled facts). */
typedef struct job_facts {
	bool sandboxed; /* a confined mode ran it; none of the rest is set otherwise */
	dsb_mode mode;
	bool runner_failed;
	bool denied;
	const char *protected_note; /* beyond DSH, after the denial's markers: the evidence's
				     * refusals, else the protected path stderr named; or NULL */
	const char *network_note;   /* beyond DSH: the network refusals; or NULL */
	const char *limit_note;	    /* beyond DSH: the limits the job reached; or NULL */
	const char *undone_note;    /* beyond DSH, last: what the sandbox undid after it; or NULL */
} job_facts;

/* One read of a bash job's process (DSH's ShellProcessRead, with the spawn failure's note). */
typedef struct job_read {
	const char *out, *err; /* the new output of each stream, UTF-8 */
	size_t out_len, err_len;
	bool lossy;
	const char *out_spill, *err_spill; /* NULL: none */
} job_read;

/*
 * A bash job's read body (bash-local readOutput() + tool-bash renderProcessRead()): the new
 * stdout, then "[stderr]\n" and the new stderr on a line of their own, then the notices, one a
 * line: output dropped from memory, and, settled (@facts non-NULL), the runner failure or the
 * denial with its escalation hint. Appends to @sb. -ENOMEM.
 */
int job_read_body_append(strbuf *sb, const job_read *rd, const job_facts *facts);

/*
 * job_output's text: @body (@len bytes) or "(no new output)" when empty, then the status line,
 * after a newline unless the body ends with one. Appends to @sb. -ENOMEM.
 */
int job_output_append(strbuf *sb, const char *body, size_t len, job_status s, const char *detail);

/* job_list's line for one job, no newline: "ID [KIND] STATUS — LABEL". -ENOMEM. */
int job_list_line_append(strbuf *sb, const char *id, const char *kind, job_status s,
			 const char *label);

/* The completion notice (tool-jobs fitCompletionNotice(), untruncated as bash never limits it). */
int job_notice_append(strbuf *sb, const char *id, const char *kind, const char *label, job_status s,
		      const char *detail);

#endif
