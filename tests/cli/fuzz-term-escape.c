// SPDX-License-Identifier: Apache-2.0
/* libFuzzer: any bytes through the terminal escaper (they come from
 * documents, agents' answers and HTTP clients of a Pod). What comes out is
 * inert (no C0 but none, no DEL, no C1, UTF-8), its length is the one
 * announced, and a cut copy is a prefix of it ending between two units. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "term-escape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out = tl_term_escape_dup((const char *)data, size), cut[64];
	size_t need = tl_term_escape(NULL, 0, (const char *)data, size), n;

	if (!out)
		return 0;
	n = strlen(out);
	if (n != need || tl_term_needs_escape(out, n))
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f ||
		    ((unsigned char)out[i] == 0xc2 && (unsigned char)out[i + 1] >= 0x80 &&
		     (unsigned char)out[i + 1] <= 0x9f))
			abort();
	tl_term_escape(cut, sizeof(cut), (const char *)data, size);
	if (strncmp(cut, out, strlen(cut)) != 0 || (out[strlen(cut)] & 0xc0) == 0x80)
		abort();
	free(out);
	return 0;
}
