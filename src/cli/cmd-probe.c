/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox probe: which backends work here, with what enforcement, the runner each executes,
 * what Landlock governs on this kernel, the hardening each gives a command on this host and what
 * it leaves ungoverned, which backend a confined call would use, and whether that came from the
 * cache.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../confine/confine.h"
#include "cli.h"

/* A bit and the name `probe` prints for it. */
typedef struct named_bit {
	uint64_t bit;
	const char *name;
} named_bit;

static const named_bit fs_rights[] = {
	{LL_EXECUTE, "execute"},     {LL_WRITE_FILE, "write_file"}, {LL_READ_FILE, "read_file"},
	{LL_READ_DIR, "read_dir"},   {LL_REMOVE_DIR, "remove_dir"}, {LL_REMOVE_FILE, "remove_file"},
	{LL_MAKE_CHAR, "make_char"}, {LL_MAKE_DIR, "make_dir"},	    {LL_MAKE_REG, "make_reg"},
	{LL_MAKE_SOCK, "make_sock"}, {LL_MAKE_FIFO, "make_fifo"},   {LL_MAKE_BLOCK, "make_block"},
	{LL_MAKE_SYM, "make_sym"},   {LL_REFER, "refer"},	    {LL_TRUNCATE, "truncate"},
	{LL_IOCTL_DEV, "ioctl_dev"},
};

static const named_bit scopes[] = {
	{LL_SCOPE_SIGNAL, "signal"},
	{LL_SCOPE_ABSTRACT_UNIX_SOCKET, "abstract-unix-socket"},
};

/* What a backend leaves alone. Landlock's filesystem rights never cover metadata, whatever the
 * ABI (dsh-compat §5.6 caveats): those four names, where no supervisor or refusal closes them. */
static const named_bit ungoverned[] = {
	{DSB_UNGOVERNED_METADATA, "chmod"},
	{DSB_UNGOVERNED_METADATA, "chown"},
	{DSB_UNGOVERNED_METADATA, "utimes"},
	{DSB_UNGOVERNED_METADATA, "xattr"},
	{DSB_UNGOVERNED_NETWORK, "network"},
	{DSB_UNGOVERNED_ABSTRACT_UNIX, "abstract-unix-socket"},
	{DSB_UNGOVERNED_SIGNALS, "signals"},
	{DSB_UNGOVERNED_SURVIVORS, "survivors"},
	{DSB_UNGOVERNED_PROTECTED_PATHS, "protected-paths"},
};

/* The hardening bits' names, the library's (shared with `explain`), in bit order. */
static size_t hardening_names(named_bit ret[32])
{
	size_t n = 0;
	for (unsigned i = 0; i < 32; i++) {
		const char *name = dsb_hardening_to_string((dsb_hardening)(1u << i));
		if (name)
			ret[n++] = (named_bit){1u << i, name};
	}
	return n;
}

/* Appends the names of the bits of @mask in @table as a comma list. */
static void put_names(strbuf *sb, const named_bit *table, size_t n, uint64_t mask)
{
	bool first = true;
	for (size_t i = 0; i < n; i++) {
		if (!(mask & table[i].bit))
			continue;
		(void)strbuf_printf(sb, "%s%s", first ? "" : ", ", table[i].name);
		first = false;
	}
	if (first)
		(void)strbuf_puts(sb, "none");
}

#define PUT_NAMES(sb, table, mask) put_names(sb, table, ELEMENTSOF(table), mask)

/* Writes member @key: the names of the bits of @mask in @table, as an array. */
static void json_names(jw *w, const char *key, const named_bit *table, size_t n, uint64_t mask)
{
	jw_key(w, key);
	jw_array_begin(w);
	for (size_t i = 0; i < n; i++)
		if (mask & table[i].bit)
			jw_string(w, table[i].name);
	jw_array_end(w);
}

#define JSON_NAMES(w, key, table, mask) json_names(w, key, table, ELEMENTSOF(table), mask)

/* dsb_probe_tmp() in words. */
static const char *tmp_text(const char *source)
{
	if (strcmp(source, "session") == 0)
		return "a session's own, kept between its calls; a fresh one for a call of no "
		       "session";
	if (strcmp(source, "call") == 0)
		return "a fresh one per call (the runner's)";
	if (strcmp(source, "host") == 0)
		return "the host's (no mount namespace here)";
	return "none";
}

static void render_text(strbuf *sb, const dsb_probe_report *rep, dsb_network_access access,
			const cli_limits *lim)
{
	for (size_t i = 0; i < rep->n_backends; i++) {
		const dsb_probe_backend *b = &rep->backends[i];
		if (b->usable)
			(void)strbuf_printf(sb, "%s: usable, %s enforcement\n", b->name,
					    dsb_enforcement_to_string(b->enforcement));
		else if (!b->probed)
			(void)strbuf_printf(
				sb, "%s: not probed (a cached verdict selects another)\n", b->name);
		else
			(void)strbuf_printf(sb, "%s: unusable: %s\n", b->name, b->reason);
		if (b->program[0])
			(void)strbuf_printf(sb, "  program: %s\n", b->program);
		if (b->landlock_abi == 0)
			; /* not a Landlock backend */
		else if (b->landlock_abi > 0) {
			if (b->landlock_abi_used != b->landlock_abi)
				(void)strbuf_printf(
					sb, "  ABI: %d (the kernel has %d; landlockAbiMax)\n",
					b->landlock_abi_used, b->landlock_abi);
			else
				(void)strbuf_printf(sb, "  ABI: %d\n", b->landlock_abi);
			(void)strbuf_puts(sb, "  governs: ");
			PUT_NAMES(sb, fs_rights, b->handled_fs);
			(void)strbuf_puts(sb, "\n  scoped: ");
			PUT_NAMES(sb, scopes, b->scoped);
			(void)strbuf_puts(sb, "\n");
		} else
			(void)strbuf_printf(sb, "  ABI: none (%s)\n", strerror(-b->landlock_abi));
		if (b->usable) {
			(void)strbuf_puts(sb, "  hardening: ");
			named_bit hardening[32];
			put_names(sb, hardening, hardening_names(hardening), b->hardening);
			(void)strbuf_puts(sb, "\n");
		}
		(void)strbuf_puts(sb, "  not governed: ");
		PUT_NAMES(sb, ungoverned, b->not_governed);
		(void)strbuf_puts(sb, "\n");
		if (b->usable)
			(void)strbuf_printf(
				sb, "  network none: %s; allowlist: %s\n",
				dsb_probe_network_enforcement(b, DSB_NETWORK_NONE),
				dsb_probe_network_enforcement(b, DSB_NETWORK_ALLOWLIST));
	}
	if (rep->selected >= 0)
		(void)strbuf_printf(sb, "selected: %s (%s)\n", rep->backends[rep->selected].name,
				    rep->from_cache ? "cached verdict" : "probed now");
	else
		(void)strbuf_puts(sb,
				  "selected: none: confined modes fail with SANDBOX_UNAVAILABLE\n");
	(void)strbuf_printf(sb, "/tmp: %s\n", tmp_text(dsb_probe_tmp(rep)));
	(void)strbuf_printf(
		sb, "network: %s, %s\n", dsb_network_access_to_string(access),
		dsb_probe_network_enforcement(
			rep->selected >= 0 ? &rep->backends[rep->selected] : NULL, access));
	cli_limits_text(sb, lim);
}

static void render_json(jw *w, const dsb_probe_report *rep, dsb_network_access access,
			const cli_limits *lim)
{
	jw_object_begin(w);
	jw_member_string(w, "selected",
			 rep->selected >= 0 ? rep->backends[rep->selected].name : NULL);
	jw_member_bool(w, "cached", rep->from_cache);
	jw_key(w, "backends");
	jw_array_begin(w);
	for (size_t i = 0; i < rep->n_backends; i++) {
		const dsb_probe_backend *b = &rep->backends[i];
		jw_object_begin(w);
		jw_member_string(w, "name", b->name);
		jw_key(w, "usable");
		if (b->usable || b->probed)
			jw_bool(w, b->usable);
		else
			jw_null(w);
		if (b->usable) {
			jw_member_string(w, "enforcement",
					 dsb_enforcement_to_string(b->enforcement));
		} else if (b->probed) {
			jw_member_string(w, "reason", b->reason);
		}
		if (b->program[0]) {
			jw_member_string(w, "program", b->program);
		}
		if (b->landlock_abi != 0) { /* a Landlock backend */
			jw_member_int(w, "abi", b->landlock_abi > 0 ? b->landlock_abi : 0);
			jw_member_int(w, "abiUsed",
				      b->landlock_abi_used > 0 ? b->landlock_abi_used : 0);
			JSON_NAMES(w, "governs", fs_rights, b->handled_fs);
			JSON_NAMES(w, "scoped", scopes, b->scoped);
		}
		named_bit hardening[32];
		if (b->usable)
			json_names(w, "hardening", hardening, hardening_names(hardening),
				   b->hardening);
		JSON_NAMES(w, "notGoverned", ungoverned, b->not_governed);
		if (b->usable) {
			jw_key(w, "network");
			jw_object_begin(w);
			jw_member_string(w, "none",
					 dsb_probe_network_enforcement(b, DSB_NETWORK_NONE));
			jw_member_string(w, "allowlist",
					 dsb_probe_network_enforcement(b, DSB_NETWORK_ALLOWLIST));
			jw_object_end(w);
		}
		jw_object_end(w);
	}
	jw_array_end(w);
	jw_member_string(w, "tmp", dsb_probe_tmp(rep));
	/* The configured access level, and how the selected backend enforces it. */
	jw_key(w, "network");
	jw_object_begin(w);
	jw_member_string(w, "access", dsb_network_access_to_string(access));
	jw_member_string(
		w, "enforcement",
		dsb_probe_network_enforcement(
			rep->selected >= 0 ? &rep->backends[rep->selected] : NULL, access));
	jw_object_end(w);
	cli_limits_json(w, lim);
	jw_object_end(w);
}

/* The CLI keeps its probe verdict under the store root, when there is one. */
char *cli_cache_dir(const cli_global *global)
{
	dsb_store *store = NULL;
	if (dsb_store_open(global->store_path, &store, NULL) < 0)
		return NULL;
	char *dir = NULL;
	if (asprintf(&dir, "%s/cache", dsb_store_root(store)) < 0)
		dir = NULL;
	dsb_store_free(store);
	return dir;
}

int cmd_probe(const cli_args *args)
{
	const cli_global *global = &args->global;
	bool fresh = args->opt[CLI_OPT_FRESH] != NULL, json = args->opt[CLI_OPT_JSON] != NULL;
	if (args->argc > 0)
		return cli_usage_error(args->cmd, "unexpected argument '%s'", args->argv[0]);

	dsb_error err = {0};
	dsb_config *cfg = NULL;
	dsb_provider *provider = NULL;
	dsb_probe_report rep;
	_cleanup_free_ char *cache = cli_cache_dir(global);
	int r = cli_load_config(global, &cfg, &err);
	if (r >= 0)
		r = cli_apply_network(args, cfg, &err);
	if (r >= 0)
		r = dsb_provider_new(cfg, cache, &provider, &err);
	if (r >= 0)
		r = dsb_provider_probe(provider, fresh, &rep, &err);
	/* What a workspace-write call would get (the mode with a /tmp of its own). */
	cli_limits lim = {0};
	if (r >= 0 && rep.selected >= 0)
		cli_limits_of(provider, DSB_MODE_WORKSPACE_WRITE, &lim);
	dsb_provider_free(provider);
	dsb_network_access access = cfg ? dsb_config_network_access(cfg) : DSB_NETWORK_FULL;
	dsb_config_free(cfg);
	if (r < 0)
		return cli_report(&err);

	if (json) {
		jw w = JW_INIT;
		if (rep.custom_runner) {
			jw_object_begin(&w);
			jw_member_string(&w, "selected", "runner");
			jw_member_bool(&w, "cached", false);
			jw_key(&w, "backends");
			jw_array_begin(&w);
			jw_array_end(&w);
			jw_object_end(&w);
		} else
			render_json(&w, &rep, access, &lim);
		if (jw_print(&w) < 0)
			return cli_out_of_memory();
		return cli_flush_stdout();
	}

	strbuf sb = STRBUF_INIT;
	if (rep.custom_runner)
		(void)strbuf_puts(&sb,
				  "selected: runner (sandbox-local.runnerCommand; no probe)\n");
	else
		render_text(&sb, &rep, access, &lim);
	if (!sb.buf)
		return cli_out_of_memory();
	fputs(sb.buf, stdout);
	strbuf_done(&sb);
	return cli_flush_stdout();
}
