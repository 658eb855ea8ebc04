/* SPDX-License-Identifier: MIT */
/*
 * What a backend hands the spawner (confine.h): a dsb_confined whose plan says what the child
 * does to itself before exec (its steps) and what the run's supervisor is told. The plan's
 * record types are declared once in confine.h; their tables are made here, so that the plan
 * travels to a monitor (spawner.c) and is freed by the same walk over its fields.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "confine.h"

/* Enums travel as ints (FIELD_I32). */
_Static_assert(sizeof(protect_op) == sizeof(int), "protect_op is an int");
_Static_assert(sizeof(dsb_protect_kind) == sizeof(int), "dsb_protect_kind is an int");
/* protect_ops is a record_vec of mounts. */
_Static_assert(offsetof(protect_ops, v) == offsetof(record_vec, v) &&
		       offsetof(protect_ops, n) == offsetof(record_vec, n) &&
		       sizeof(protect_ops) == sizeof(record_vec),
	       "protect_ops has a record_vec's layout");

#define RECORD protect_mount
static const record_field protect_mount_fields[] = {PROTECT_MOUNT_FIELDS(RECORD_FIELD)};
const record_type protect_mount_record = RECORD_TYPE(protect_mount_fields);
#undef RECORD

#define RECORD landlock_plan
static const record_field landlock_plan_fields[] = {LANDLOCK_PLAN_FIELDS(RECORD_FIELD)};
const record_type landlock_plan_record = RECORD_TYPE(landlock_plan_fields);
#undef RECORD

#define RECORD confine_limits
static const record_field confine_limits_fields[] = {CONFINE_LIMITS_FIELDS(RECORD_FIELD)};
const record_type confine_limits_record = RECORD_TYPE(confine_limits_fields);
#undef RECORD

#define RECORD confine_plan
static const record_field confine_plan_fields[] = {CONFINE_PLAN_FIELDS(RECORD_FIELD)};
const record_type confine_plan_record = RECORD_TYPE(confine_plan_fields);
#undef RECORD

int plan_new(dsb_confined *c, confine_plan **ret)
{
	confine_plan *plan = calloc(1, sizeof(*plan));
	if (!plan)
		return -ENOMEM;
	plan->filter_fd = -1;
	c->plan = plan;
	*ret = plan;
	return 0;
}

const confine_plan *confined_plan(const dsb_confined *c)
{
	return c->plan;
}

static bool has(const confine_plan *plan, confine_step step)
{
	return plan && (plan->steps & STEP(step));
}

bool plan_net_restricted(const confine_plan *plan)
{
	return plan_supervises(plan, SECCOMP_NET_NOTIFY);
}

bool plan_own_network(const confine_plan *plan)
{
	return has(plan, STEP_LOOPBACK);
}

bool plan_sends_proxy(const confine_plan *plan)
{
	return has(plan, STEP_LOOPBACK) && plan->proxy_port;
}

bool plan_sends_listener(const confine_plan *plan)
{
	return has(plan, STEP_LISTENER) ||
	       (has(plan, STEP_FILTER) &&
		(plan->filter_flags & (SECCOMP_METADATA_NOTIFY | SECCOMP_NET_NOTIFY)));
}

int plan_allowlist(confine_plan *plan, const dsb_provider *p)
{
	plan->proxy_port = p->network.proxy_port;
	plan->net_allow = strv_copy(p->network.allow);
	plan->net_deny = strv_copy(p->network.deny);
	plan->net_hosts = strv_copy(p->network.hosts);
	plan->net_private = strv_copy(p->network.allow_private);
	return plan->net_allow && plan->net_deny && plan->net_hosts && plan->net_private ? 0
											 : -ENOMEM;
}

char **strv_of(const char *const *words)
{
	char **v = calloc(1, sizeof(char *));
	for (size_t i = 0; v && words[i]; i++)
		if (strv_push(&v, words[i]) < 0)
			return strv_free(v);
	return v;
}

int push_command(char ***io, char *const *argv)
{
	int r = strv_push(io, "--");
	for (size_t i = 0; r >= 0 && argv[i]; i++)
		r = strv_push(io, argv[i]);
	return r;
}

int confined_add_rule(dsb_confined *c, const char *const *fatal)
{
	static const char *const none[] = {NULL};
	dsb_runner_rule *rules = reallocarray(c->rules, c->n_rules + 1, sizeof(*rules));
	if (!rules)
		return -ENOMEM;
	c->rules = rules;
	dsb_runner_rule *rule = &rules[c->n_rules++];
	*rule = (dsb_runner_rule){
		.fatal_signatures = strv_of(fatal),
		.informational_lines = strv_of(none),
	};
	return rule->fatal_signatures && rule->informational_lines ? 0 : -ENOMEM;
}

void dsb_confined_done(dsb_confined *c)
{
	if (!c)
		return;
	strv_free(c->argv);
	strv_free(c->denial_signatures);
	for (size_t i = 0; i < c->n_rules; i++) {
		strv_free(c->rules[i].fatal_signatures);
		strv_free(c->rules[i].informational_lines);
	}
	free(c->rules);
	free(c->backend);
	if (c->plan) {
		record_free(&confine_plan_record, c->plan);
		free(c->plan);
	}
	*c = (dsb_confined){0};
}

void explain_line(const explain_sink *x, const char *fmt, ...)
{
	if (!x || !x->line)
		return;
	char *line = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	/* Out of memory: the line is lost, never the call (it is only being told). */
	if (n < 0)
		return;
	x->line(x->userdata, line);
	free(line);
}

void explain_pair(const explain_sink *x, const char *key, const char *k1, const char *v1,
		  const char *k2, const char *v2)
{
	if (!x || !x->json)
		return;
	jw_key(x->json, key);
	jw_object_begin(x->json);
	jw_member_string(x->json, k1, v1);
	jw_member_string(x->json, k2, v2);
	jw_object_end(x->json);
}

/* Whether @s reads back from a shell as itself, unquoted. */
static bool shell_plain(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "@%+=:,./-_",
			    *s))
			return false;
	return true;
}

void explain_words(strbuf *sb, char *const *words)
{
	for (size_t i = 0; words && words[i]; i++) {
		if (i > 0)
			(void)strbuf_puts(sb, " ");
		if (shell_plain(words[i])) {
			(void)strbuf_puts(sb, words[i]);
			continue;
		}
		/* Single quotes hold anything but a single quote: that one is '\''. */
		(void)strbuf_puts(sb, "'");
		for (const char *s = words[i]; *s; s++)
			(void)(*s == '\'' ? strbuf_puts(sb, "'\\''") : strbuf_append(sb, s, 1));
		(void)strbuf_puts(sb, "'");
	}
}
