/* SPDX-License-Identifier: MIT */
/*
 * libdshsandbox: the sandbox-policy layer of DeepSeek Harness for Linux. This umbrella header
 * includes every public header; see docs/architecture.md for the pieces and their floors.
 */
#ifndef DSB_DSB_H
#define DSB_DSB_H

#define DSB_VERSION_MAJOR  0
#define DSB_VERSION_MINOR  1
#define DSB_VERSION_PATCH  0
#define DSB_VERSION_STRING "0.1.0"

#include <dsb/approval.h>
#include <dsb/call.h>
#include <dsb/confine.h>
#include <dsb/context.h>
#include <dsb/error.h>
#include <dsb/exec.h>
#include <dsb/fence.h>
#include <dsb/jobs.h>
#include <dsb/policy.h>
#include <dsb/server.h>
#include <dsb/session.h>

/* The library's version string, which may differ from DSB_VERSION_STRING of the headers. */
DSB_API const char *dsb_version(void);

#endif
