/* SPDX-License-Identifier: MIT */
/* PLACEHOLDER: YAML loading, being written. */
#include "policy.h"

int dsb_config_parse(const char *buf, size_t len, const char *origin, dsb_config **ret_cfg,
		     dsb_error *reterr)
{
	(void)buf;
	(void)len;
	(void)origin;
	(void)ret_cfg;
	return dsb_fail(reterr, DSB_E_CONFIG_INVALID, "not yet");
}

int dsb_config_load_file(const char *path, dsb_config **ret_cfg, dsb_error *reterr)
{
	return dsb_config_parse("", 0, path, ret_cfg, reterr);
}
