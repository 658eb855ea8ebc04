/* SPDX-License-Identifier: MIT */
/*
 * The code table generated from codes.def, and the helpers that fill a dsb_error. Messages live
 * in the caller's fixed-size struct: no allocation on an error path, truncation is safe.
 */
#include <stdio.h>
#include <string.h>

#include "core.h"

struct code_info {
	const char *name;
	const char *dsh_error;
	int rpc_code;
	int exit_status;
	const char *summary;
};

static const struct code_info codes[] = {
#define DSB_CODE(sym, name, dsh_error, rpc_code, exit_status, summary) \
	[sym] = {name, dsh_error, rpc_code, exit_status, summary},
#include <dsb/codes.def>
#undef DSB_CODE
};

static const struct code_info *code_info(dsb_code code)
{
	if (code < 0 || code >= _DSB_CODE_MAX)
		return NULL;
	return &codes[code];
}

const char *dsb_code_name(dsb_code code)
{
	const struct code_info *c = code_info(code);
	return c ? c->name : NULL;
}

const char *dsb_code_dsh_error(dsb_code code)
{
	const struct code_info *c = code_info(code);
	return c ? c->dsh_error : NULL;
}

const char *dsb_code_summary(dsb_code code)
{
	const struct code_info *c = code_info(code);
	return c ? c->summary : NULL;
}

int dsb_code_rpc(dsb_code code)
{
	const struct code_info *c = code_info(code);
	return c ? c->rpc_code : -32603;
}

int dsb_code_exit_status(dsb_code code)
{
	const struct code_info *c = code_info(code);
	return c ? c->exit_status : 1;
}

dsb_code dsb_code_from_name(const char *name)
{
	if (!name)
		return _DSB_CODE_INVALID;
	for (size_t i = 0; i < ELEMENTSOF(codes); i++)
		if (strcmp(codes[i].name, name) == 0)
			return (dsb_code)i;
	return _DSB_CODE_INVALID;
}

dsb_code dsb_code_from_return(int r)
{
	if (r >= 0)
		return DSB_OK;
	if (-r >= _DSB_CODE_MAX)
		return _DSB_CODE_INVALID;
	return (dsb_code)-r;
}

__attribute__((format(printf, 4, 0))) static int fail_va(dsb_error *reterr, dsb_code code,
							 int errnum, const char *fmt, va_list ap)
{
	if (reterr) {
		reterr->code = code;
		reterr->sys_errno = errnum;
		reterr->subject[0] = '\0';
		(void)vsnprintf(reterr->message, sizeof(reterr->message), fmt, ap);
		if (errnum > 0) {
			size_t n = strlen(reterr->message);
			(void)snprintf(reterr->message + n, sizeof(reterr->message) - n, ": %s",
				       strerror(errnum));
		}
	}
	return -(int)code;
}

int dsb_fail(dsb_error *reterr, dsb_code code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = fail_va(reterr, code, 0, fmt, ap);
	va_end(ap);
	return r;
}

int dsb_fail_errno(dsb_error *reterr, dsb_code code, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = fail_va(reterr, code, errnum, fmt, ap);
	va_end(ap);
	return r;
}

void dsb_error_set_subject(dsb_error *reterr, const char *subject)
{
	if (reterr)
		(void)snprintf(reterr->subject, sizeof(reterr->subject), "%s",
			       subject ? subject : "");
}

void dsb_error_prefix(dsb_error *reterr, const char *fmt, ...)
{
	if (!reterr)
		return;

	char prefix[sizeof(reterr->message)];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(prefix, sizeof(prefix) - 2, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;

	size_t plen = strnlen(prefix, sizeof(prefix) - 3);
	memcpy(prefix + plen, ": ", 3);
	plen += 2;

	/* Shift the old message right, keeping the terminating NUL inside the buffer. */
	size_t cap = sizeof(reterr->message);
	size_t old = strnlen(reterr->message, cap - 1);
	if (plen >= cap - 1)
		plen = cap - 1;
	if (old > cap - 1 - plen)
		old = cap - 1 - plen;
	memmove(reterr->message + plen, reterr->message, old);
	memcpy(reterr->message, prefix, plen);
	reterr->message[plen + old] = '\0';
}
