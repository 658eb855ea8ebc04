/* SPDX-License-Identifier: MIT */
/*
 * dsh-sandbox probe: which backends work here, with what enforcement, the runner each executes,
 * what Landlock governs on this kernel, the hardening each gives a command on this host and what
 * it leaves ungoverned, which backend a confined call would use, and whether that came from the
 * cache.
 */
#include <getopt.h>
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

static const named_bit hardening[] = {
	{DSB_HARDEN_CAPABILITIES, "capabilities"},
	{DSB_HARDEN_BOUNDING_SET, "bounding-set"},
	{DSB_HARDEN_NO_NEW_PRIVS, "no-new-privs"},
	{DSB_HARDEN_SECCOMP, "seccomp"},
	{DSB_HARDEN_STDIO_ONLY, "stdio-only"},
	{DSB_HARDEN_REAPED, "reaped"},
	{DSB_HARDEN_PID_NAMESPACE, "pid-namespace"},
	{DSB_HARDEN_MOUNT_NAMESPACE, "mount-namespace"},
	{DSB_HARDEN_USER_NAMESPACE, "user-namespace"},
	{DSB_HARDEN_IPC_NAMESPACE, "ipc-namespace"},
	{DSB_HARDEN_UTS_NAMESPACE, "uts-namespace"},
	{DSB_HARDEN_IPC_FILTERED, "ipc-filtered"},
	{DSB_HARDEN_SIGNAL_SCOPE, "signal-scope"},
	{DSB_HARDEN_ABSTRACT_UNIX_SCOPE, "abstract-unix-scope"},
};

/* What a backend leaves alone. Landlock's filesystem rights never cover metadata, whatever the
 * ABI (spec §5.6 caveats): those four names. */
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

/* Appends the names of the bits of @mask in @table as a JSON array's items or a comma list. */
static void put_names(strbuf *sb, const named_bit *table, size_t n, uint64_t mask, bool json)
{
	bool first = true;
	for (size_t i = 0; i < n; i++) {
		if (!(mask & table[i].bit))
			continue;
		(void)strbuf_printf(sb, json ? "%s\"%s\"" : "%s%s",
				    first  ? ""
				    : json ? ","
					   : ", ",
				    table[i].name);
		first = false;
	}
	if (first && !json)
		(void)strbuf_puts(sb, "none");
}

#define PUT_NAMES(sb, table, mask, json) put_names(sb, table, ELEMENTSOF(table), mask, json)

static void render_text(strbuf *sb, const dsb_probe_report *rep)
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
		if (strcmp(b->name, "landlock") != 0)
			;
		else if (b->landlock_abi > 0) {
			if (b->landlock_abi_used != b->landlock_abi)
				(void)strbuf_printf(
					sb, "  ABI: %d (the kernel has %d; landlockAbiMax)\n",
					b->landlock_abi_used, b->landlock_abi);
			else
				(void)strbuf_printf(sb, "  ABI: %d\n", b->landlock_abi);
			(void)strbuf_puts(sb, "  governs: ");
			PUT_NAMES(sb, fs_rights, b->handled_fs, false);
			(void)strbuf_puts(sb, "\n  scoped: ");
			PUT_NAMES(sb, scopes, b->scoped, false);
			(void)strbuf_puts(sb, "\n");
		} else
			(void)strbuf_printf(sb, "  ABI: none (%s)\n", strerror(-b->landlock_abi));
		if (b->usable) {
			(void)strbuf_puts(sb, "  hardening: ");
			PUT_NAMES(sb, hardening, b->hardening, false);
			(void)strbuf_puts(sb, "\n");
		}
		(void)strbuf_puts(sb, "  not governed: ");
		PUT_NAMES(sb, ungoverned, b->not_governed, false);
		(void)strbuf_puts(sb, "\n");
	}
	if (rep->selected >= 0)
		(void)strbuf_printf(sb, "selected: %s (%s)\n", rep->backends[rep->selected].name,
				    rep->from_cache ? "cached verdict" : "probed now");
	else
		(void)strbuf_puts(sb,
				  "selected: none: confined modes fail with SANDBOX_UNAVAILABLE\n");
}

static void render_json(strbuf *sb, const dsb_probe_report *rep)
{
	(void)strbuf_puts(sb, "{\"selected\":");
	if (rep->selected >= 0)
		(void)strbuf_printf(sb, "\"%s\"", rep->backends[rep->selected].name);
	else
		(void)strbuf_puts(sb, "null");
	(void)strbuf_printf(sb, ",\"cached\":%s,\"backends\":[",
			    rep->from_cache ? "true" : "false");
	for (size_t i = 0; i < rep->n_backends; i++) {
		const dsb_probe_backend *b = &rep->backends[i];
		(void)strbuf_printf(sb, "%s{\"name\":\"%s\",\"usable\":%s", i ? "," : "", b->name,
				    b->usable	? "true"
				    : b->probed ? "false"
						: "null");
		if (!b->usable && !b->probed)
			;
		else if (b->usable)
			(void)strbuf_printf(sb, ",\"enforcement\":\"%s\"",
					    dsb_enforcement_to_string(b->enforcement));
		else {
			(void)strbuf_puts(sb, ",\"reason\":");
			(void)json_quote_append(sb, b->reason, strlen(b->reason));
		}
		if (b->program[0]) {
			(void)strbuf_puts(sb, ",\"program\":");
			(void)json_quote_append(sb, b->program, strlen(b->program));
		}
		if (strcmp(b->name, "landlock") == 0) {
			(void)strbuf_printf(sb, ",\"abi\":%d,\"abiUsed\":%d,\"governs\":[",
					    b->landlock_abi > 0 ? b->landlock_abi : 0,
					    b->landlock_abi_used > 0 ? b->landlock_abi_used : 0);
			PUT_NAMES(sb, fs_rights, b->handled_fs, true);
			(void)strbuf_puts(sb, "],\"scoped\":[");
			PUT_NAMES(sb, scopes, b->scoped, true);
			(void)strbuf_puts(sb, "]");
		}
		if (b->usable) {
			(void)strbuf_puts(sb, ",\"hardening\":[");
			PUT_NAMES(sb, hardening, b->hardening, true);
			(void)strbuf_puts(sb, "]");
		}
		(void)strbuf_puts(sb, ",\"notGoverned\":[");
		PUT_NAMES(sb, ungoverned, b->not_governed, true);
		(void)strbuf_puts(sb, "]}");
	}
	(void)strbuf_puts(sb, "]}\n");
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

int cmd_probe(cli_global *global, int argc, char **argv)
{
	static const struct option options[] = {
		{"fresh", no_argument, NULL, 'f'},
		{"json", no_argument, NULL, 'j'},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	const cli_command *cmd = cli_find_command("probe");
	bool fresh = false, json = false;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", options, NULL)) != -1) {
		switch (c) {
		case 'f':
			fresh = true;
			break;
		case 'j':
			json = true;
			break;
		case 'c':
			global->config_path = optarg;
			break;
		case 'h':
			cli_print_usage(stdout, cmd);
			return 0;
		default:
			return cli_option_error(cmd, c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);

	dsb_error err = {0};
	dsb_config *cfg = NULL;
	dsb_provider *provider = NULL;
	dsb_probe_report rep;
	_cleanup_free_ char *cache = cli_cache_dir(global);
	int r = cli_load_config(global, &cfg, &err);
	if (r >= 0)
		r = dsb_provider_new(cfg, cache, &provider, &err);
	if (r >= 0)
		r = dsb_provider_probe(provider, fresh, &rep, &err);
	dsb_provider_free(provider);
	dsb_config_free(cfg);
	if (r < 0)
		return cli_report(&err);

	strbuf sb = STRBUF_INIT;
	if (rep.custom_runner)
		(void)strbuf_puts(
			&sb, json ? "{\"selected\":\"runner\",\"cached\":false,\"backends\":[]}\n"
				  : "selected: runner (sandbox-local.runnerCommand; no probe)\n");
	else if (json)
		render_json(&sb, &rep);
	else
		render_text(&sb, &rep);
	if (!sb.buf) {
		fputs("dsh-sandbox: out of memory\n", stderr);
		return 1;
	}
	fputs(sb.buf, stdout);
	strbuf_done(&sb);
	return cli_flush_stdout();
}
