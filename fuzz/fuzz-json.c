/* SPDX-License-Identifier: MIT */
/*
 * Fuzzes json_quote() over arbitrary bytes. Properties: the output is one JSON string literal
 * (quotes at both ends, no raw control character, no unescaped quote), it is valid UTF-8, and
 * jansson decodes it back to a string, equal to the input when the input was valid UTF-8.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/core.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out = NULL;
	if (json_quote((const char *)data, size, &out) < 0)
		return 0;

	size_t n = strlen(out);
	if (n < 2 || out[0] != '"' || out[n - 1] != '"')
		abort();
	for (size_t i = 1; i + 1 < n; i++) {
		unsigned char c = (unsigned char)out[i];
		if (c < 0x20)
			abort();
		if (c == '\\')
			i++; /* skip the escaped character */
		else if (c == '"')
			abort();
	}

	json_error_t error;
	json_t *decoded = json_loadb(out, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &error);
	if (!decoded || !json_is_string(decoded))
		abort();
	/* Valid UTF-8 (jansson agrees with WHATWG on what that is) goes through unchanged. */
	json_t *original = json_stringn((const char *)data, size);
	if (original && !json_equal(original, decoded))
		abort();
	json_decref(original);
	json_decref(decoded);
	free(out);
	return 0;
}
