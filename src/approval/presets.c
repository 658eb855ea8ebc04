/* SPDX-License-Identifier: MIT */
/*
 * Permission presets (dsh-compat §8.6): named bundles of a sandbox mode and an approval policy over
 * the two independent knobs. A preset is never state of its own that execution reads: a switch
 * records the chosen name (permission/preset), then writes each changed knob through its own
 * setter, and everything else keeps folding sandbox/mode and approval/policy. The recorded name
 * only breaks ties between presets that share a bundle. Knob values matching no entry derive
 * "custom", a state and never a switch target.
 */
#include <stdlib.h>
#include <string.h>

#include "../session/session.h"
#include "approval.h"

/* The derived not-a-preset state; reserved, so no table entry carries it (dsh-compat §8.6). */
#define CUSTOM_PRESET "custom"

/* What the three folds of a session hold: the last value of each knob event, if any. */
typedef struct knobs {
	char *preset; /* NULL: no permission/preset */
	bool has_sandbox;
	dsb_mode sandbox;
	bool has_approval;
	dsb_approval_policy approval;
} knobs;

static void knobs_done(knobs *k)
{
	free(k->preset);
}

static const dsb_preset *find_preset(const dsb_config *cfg, const char *name)
{
	for (size_t i = 0; i < cfg->n_presets; i++)
		if (strcmp(cfg->presets[i].key, name) == 0)
			return &cfg->presets[i];
	return NULL;
}

/* Fails with @code and `PREFIX"NAME" (LABEL: A, B)`, the keys in declaration order. */
static int fail_unknown(dsb_error *reterr, dsb_code code, const char *prefix, const char *label,
			const dsb_config *cfg, const char *name)
{
	strbuf sb = STRBUF_INIT;
	int r = strbuf_printf(&sb, "%s\"%s\" (%s: ", prefix, name, label);
	for (size_t i = 0; r >= 0 && i < cfg->n_presets; i++)
		r = strbuf_printf(&sb, "%s%s", i ? ", " : "", cfg->presets[i].key);
	if (r >= 0)
		r = strbuf_putc(&sb, ')');
	if (r < 0) {
		strbuf_done(&sb);
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	}
	r = dsb_fail(reterr, code, "%s", sb.buf);
	strbuf_done(&sb);
	return r;
}

/*
 * derive(state): the last recorded preset when its bundle still matches the effective knobs,
 * else the first entry in declaration order that matches, else "custom". Points into @cfg or
 * at a literal.
 */
static const char *derive(const dsb_config *cfg, const char *recorded, dsb_mode sandbox,
			  dsb_approval_policy approval)
{
	if (recorded) {
		const dsb_preset *p = find_preset(cfg, recorded);
		if (p && p->sandbox == sandbox && p->approval == approval)
			return p->key;
	}
	for (size_t i = 0; i < cfg->n_presets; i++)
		if (cfg->presets[i].sandbox == sandbox && cfg->presets[i].approval == approval)
			return cfg->presets[i].key;
	return CUSTOM_PRESET;
}

static int fold_knobs(dsb_session *s, knobs *ret, dsb_error *reterr)
{
	int r = dsb_session_fold_preset(s, &ret->preset, reterr);
	if (r >= 0)
		r = dsb_session_fold_mode(s, &ret->sandbox, reterr);
	if (r >= 0) {
		ret->has_sandbox = r > 0;
		r = dsb_session_fold_approval(s, &ret->approval, reterr);
	}
	if (r >= 0)
		ret->has_approval = r > 0;
	return r < 0 ? r : 0;
}

/* The effective sandbox mode: the session's fold, else the configured default mode. */
static int effective_mode(dsb_session *s, const dsb_config *cfg, dsb_mode *ret_mode,
			  dsb_error *reterr)
{
	dsb_mode mode;
	int r = dsb_session_fold_mode(s, &mode, reterr);
	if (r < 0)
		return r;
	*ret_mode = r > 0 ? mode : cfg->mode;
	return 0;
}

/* current(events), pointing into @cfg or at "custom". */
static int current_preset(dsb_session *s, const dsb_config *cfg, const char **ret_name,
			  dsb_error *reterr)
{
	_cleanup_free_ char *recorded = NULL;
	dsb_mode sandbox;
	dsb_approval_policy approval;
	int r = dsb_session_fold_preset(s, &recorded, reterr);
	if (r >= 0)
		r = effective_mode(s, cfg, &sandbox, reterr);
	if (r >= 0)
		r = approval_effective_policy(s, cfg, &approval, reterr);
	if (r < 0)
		return r;
	*ret_name = derive(cfg, recorded, sandbox, approval);
	return 0;
}

/* Appends permission/preset {"preset":NAME}, the name quoted as JSON.stringify() does. */
static int append_preset(dsb_session *s, const char *name, dsb_error *reterr)
{
	_cleanup_free_ char *data = NULL;
	jw w = JW_INIT;
	jw_object_begin(&w);
	jw_member_string(&w, "preset", name);
	jw_object_end(&w);
	if (jw_take(&w, &data) < 0)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	return dsb_session_append(s, "permission/preset", data, NULL, reterr);
}

static int set_approval(dsb_session *s, dsb_approval_policy policy, dsb_error *reterr)
{
	return dsb_session_set_approval(s, dsb_approval_policy_to_string(policy), reterr);
}

int presets_default(const dsb_config *cfg, const dsb_preset **ret, dsb_error *reterr)
{
	if (!cfg || !ret)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "presets_default: missing argument");
	/* The loader refuses such a table; a configuration built in code must not sneak one in. */
	if (find_preset(cfg, CUSTOM_PRESET))
		return dsb_fail(reterr, DSB_E_CONFIG_INVALID,
				"permission: \"custom\" is reserved for the derived not-a-preset "
				"state and cannot name a table entry");

	const char *name = cfg->default_preset;
	if (!name)
		name = derive(cfg, NULL, cfg->mode, cfg->approval_policy);
	/* DSH checks this before resolving, so an explicit "custom" reads the same. */
	if (strcmp(name, CUSTOM_PRESET) == 0)
		return dsb_fail(
			reterr, DSB_E_CONFIG_INVALID,
			"permission: composed sandbox and approval defaults match no preset; "
			"configure defaultPreset explicitly");

	const dsb_preset *p = find_preset(cfg, name);
	if (!p)
		return fail_unknown(reterr, DSB_E_CONFIG_INVALID, "permission: unknown preset ",
				    "known", cfg, name);
	*ret = p;
	return 0;
}

int presets_current(dsb_session *s, const dsb_config *cfg, char **ret_name, dsb_error *reterr)
{
	if (!s || !cfg || !ret_name)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "presets_current: missing argument");

	const char *name;
	int r = current_preset(s, cfg, &name, reterr);
	if (r < 0)
		return r;
	char *copy = strdup(name);
	if (!copy)
		return dsb_fail(reterr, DSB_E_NO_MEMORY, "out of memory");
	*ret_name = copy;
	return 0;
}

int presets_apply(dsb_session *s, const dsb_config *cfg, const char *name, dsb_error *reterr)
{
	if (!s || !cfg || !name)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "presets_apply: missing argument");

	/* 1. resolve: an unknown name (also "custom") appends nothing. */
	const dsb_preset *p = find_preset(cfg, name);
	if (!p)
		return fail_unknown(reterr, DSB_E_INVALID_ARGS, "unknown preset ", "available", cfg,
				    name);

	/* 2. Record the choice unless it is what the knobs already derive. */
	const char *current;
	int r = current_preset(s, cfg, &current, reterr);
	if (r < 0)
		return r;
	if (strcmp(current, p->key) != 0 && (r = append_preset(s, p->key, reterr)) < 0)
		return r;

	/* 3. The sandbox knob, against fold ?? the configured default. */
	dsb_mode mode;
	if ((r = effective_mode(s, cfg, &mode, reterr)) < 0)
		return r;
	if (p->sandbox != mode && (r = dsb_session_set_mode(s, p->sandbox, reterr)) < 0)
		return r;

	/* 4. The approval knob through the live switch, which also leaves its notice. */
	dsb_approval_policy policy;
	if ((r = approval_effective_policy(s, cfg, &policy, reterr)) < 0)
		return r;
	if (p->approval != policy && (r = approval_set_policy(s, cfg, p->approval, reterr)) < 0)
		return r;
	return 0;
}

/* Whether the log holds a session/end-seed: the session was seeded (resumed or forked). */
static int is_seed_end(const log_record *rec, void *userdata, dsb_error *reterr)
{
	(void)reterr;
	if (strcmp(rec->type, "session/end-seed") != 0)
		return 0;
	*(bool *)userdata = true;
	return 1;
}

int presets_pin(dsb_session *s, const dsb_config *cfg, dsb_error *reterr)
{
	if (!s || !cfg)
		return dsb_fail(reterr, DSB_E_INVALID_ARGS, "presets_pin: missing argument");

	/* Without a usable default DSH's service never mounts; nothing is pinned then. */
	const dsb_preset *def;
	int r = presets_default(cfg, &def, reterr);
	if (r < 0)
		return r;

	_cleanup_(knobs_done) knobs k = {0};
	if ((r = fold_knobs(s, &k, reterr)) < 0)
		return r;

	bool seeded = false;
	if (!k.preset && !k.has_sandbox && !k.has_approval) {
		r = session_scan(s, is_seed_end, &seeded, NULL, reterr);
		if (r < 0)
			return r;
	}

	/* A fresh session takes the default preset whole: three events, in this order. */
	if (!k.preset && !k.has_sandbox && !k.has_approval && !seeded) {
		r = append_preset(s, def->key, reterr);
		if (r >= 0)
			r = dsb_session_set_mode(s, def->sandbox, reterr);
		if (r >= 0)
			r = set_approval(s, def->approval, reterr);
		return r < 0 ? r : 0;
	}

	/*
	 * A seeded or partial session keeps its effective knobs and only gains the facts it lacks,
	 * all derived before anything is appended: a seed that matches no entry stays custom.
	 */
	const char *derived = derive(cfg, k.preset, k.has_sandbox ? k.sandbox : cfg->mode,
				     k.has_approval ? k.approval : cfg->approval_policy);
	if (!k.preset && strcmp(derived, CUSTOM_PRESET) != 0 &&
	    (r = append_preset(s, derived, reterr)) < 0)
		return r;
	if (!k.has_sandbox && (r = dsb_session_set_mode(s, cfg->mode, reterr)) < 0)
		return r;
	if (!k.has_approval && (r = set_approval(s, cfg->approval_policy, reterr)) < 0)
		return r;
	return 0;
}
