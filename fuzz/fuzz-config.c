/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target for the configuration loader: any bytes either fail with CONFIG_INVALID (or
 * NO_MEMORY) and a located message, or give a config whose every value is one the loader promises
 * (src/policy/policy.h: "values here are always valid"). A broken promise aborts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dsb/policy.h>

#include "../src/policy/policy.h"

#define CHECK(x)                 \
	do {                     \
		if (!(x))        \
			abort(); \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_strv(char *const *strv, bool nonempty)
{
	CHECK(strv);
	for (; *strv; strv++)
		CHECK(!nonempty || **strv);
}

static void check_config(const dsb_config *cfg)
{
	CHECK(dsb_mode_to_string(cfg->mode));
	CHECK(!cfg->workspace_root ||
	      (cfg->workspace_root[0] && strlen(cfg->workspace_root) < DSB_PATH_MAX));

	CHECK(cfg->n_backends >= 1 && cfg->n_backends <= _DSB_BACKEND_MAX);
	for (size_t i = 0; i < cfg->n_backends; i++) {
		CHECK(dsb_backend_to_string(cfg->backends[i]));
		for (size_t j = 0; j < i; j++)
			CHECK(cfg->backends[i] != cfg->backends[j]);
	}
	CHECK(cfg->probe_timeout_ms > 0);
	check_strv(cfg->runner_command, true);
	check_strv(cfg->runner_failure_signatures, false);
	CHECK(!cfg->runner_command[0] == !cfg->runner_failure_signatures[0]);
	for (char **s = cfg->runner_failure_signatures; *s; s++)
		CHECK((*s)[strspn(*s, " \t\n\v\f\r")] && !strpbrk(*s, "\r\n"));

	CHECK(cfg->timeout_ms > 0 && cfg->max_timeout_ms > 0 && cfg->max_output_bytes > 0 &&
	      cfg->max_spill_bytes > 0);
	CHECK(cfg->grace_ms > 0 && cfg->grace_ms <= DSB_MAX_GRACE_MS);

	/* Every scrub rule is usable, and DSH's rule holds whatever the configured ones say. */
	CHECK(cfg->scrub_env || cfg->n_scrub_env == 0);
	for (size_t i = 0; i < cfg->n_scrub_env; i++)
		CHECK(cfg->scrub_env[i].source && cfg->scrub_env[i].source[0]);
	CHECK(scrub_check(cfg->scrub_env, cfg->n_scrub_env, "GITHUB_TOKEN=x"));
	CHECK(scrub_check(cfg->scrub_env, cfg->n_scrub_env, "dsh_home=/h"));
	(void)scrub_check(cfg->scrub_env, cfg->n_scrub_env, "DATABASE_URL=postgres://u:p@h/d");

	CHECK(dsb_approval_policy_to_string(cfg->approval_policy));
	check_strv(cfg->answerer, true);

	bool default_found = !cfg->default_preset;
	CHECK(cfg->presets && cfg->n_presets >= 1);
	for (size_t i = 0; i < cfg->n_presets; i++) {
		const dsb_preset *p = &cfg->presets[i];
		CHECK(p->key && p->key[0] && strcmp(p->key, "custom") != 0);
		CHECK(dsb_mode_to_string(p->sandbox));
		CHECK(dsb_approval_policy_to_string(p->approval));
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(p->key, cfg->presets[j].key) != 0);
		if (cfg->default_preset && strcmp(p->key, cfg->default_preset) == 0)
			default_found = true;
	}
	CHECK(default_found);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dsb_config *cfg = NULL;
	dsb_error err = {0};

	int r = dsb_config_parse((const char *)data, size, "fuzz.yaml", &cfg, &err);
	if (r < 0) {
		CHECK(!cfg);
		CHECK(err.code == DSB_E_CONFIG_INVALID || err.code == DSB_E_NO_MEMORY);
		CHECK(r == -(int)err.code);
		CHECK(strncmp(err.message, "fuzz.yaml:", strlen("fuzz.yaml:")) == 0);
		return 0;
	}
	CHECK(r == 0 && cfg);
	check_config(cfg);
	dsb_config_free(cfg);
	return 0;
}
