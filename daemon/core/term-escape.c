// SPDX-License-Identifier: Apache-2.0
/* Visible escapes for bytes a terminal would act on (term-escape.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "term-escape.h"

/* Length of the valid UTF-8 sequence at s (at most n bytes) and its code
 * point, or 0 when the bytes there are not one (RFC 3629: no overlongs, no
 * surrogates, nothing past U+10FFFF). */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c, min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		c = s[0] & 0x1f;
		min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		c = s[0] & 0x0f;
		min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		c = s[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Code points a terminal acts on or that change what the reader sees
 * without being seen: C1 controls, bidi embeddings, overrides and
 * isolates (CVE-2021-42574), LRM/RLM/ALM, zero-width space and joiners,
 * line and paragraph separators, the BOM. */
static bool cp_hidden(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || (c >= 0x200b && c <= 0x200f) ||
	       (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x061c ||
	       c == 0xfeff;
}

/* The escape of one unit into out (at least 7 bytes): its length. */
static size_t escape_unit(const unsigned char *s, size_t n, char *out, size_t *consumed)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t cp = 0;
	size_t len = utf8_seq(s, n, &cp);

	if (len == 0) { /* not UTF-8: this byte, then resynchronise */
		*consumed = 1;
		out[0] = '\\';
		out[1] = 'x';
		out[2] = hex[s[0] >> 4];
		out[3] = hex[s[0] & 15];
		return 4;
	}
	*consumed = len;
	if (cp < 0x20 || cp == 0x7f) {
		out[0] = '\\';
		if (cp == '\t' || cp == '\n' || cp == '\r') {
			out[1] = cp == '\t' ? 't' : cp == '\n' ? 'n' : 'r';
			return 2;
		}
		out[1] = 'x';
		out[2] = hex[cp >> 4];
		out[3] = hex[cp & 15];
		return 4;
	}
	if (cp_hidden(cp)) {
		out[0] = '\\';
		out[1] = 'u';
		out[2] = hex[(cp >> 12) & 15];
		out[3] = hex[(cp >> 8) & 15];
		out[4] = hex[(cp >> 4) & 15];
		out[5] = hex[cp & 15];
		return 6;
	}
	memcpy(out, s, len);
	return len;
}

size_t tl_term_escape(char *dst, size_t dstlen, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t need = 0, o = 0, i = 0;
	bool full = false;

	while (s && i < n) {
		char unit[8];
		size_t used, k = escape_unit(p + i, n - i, unit, &used);

		i += used;
		need += k;
		if (!full && dst && o + k < dstlen) {
			memcpy(dst + o, unit, k);
			o += k;
		} else {
			full = true; /* no partial escape, nothing after a cut */
		}
	}
	if (dst && dstlen)
		dst[o] = '\0';
	return need;
}

bool tl_term_needs_escape(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; s && i < n;) {
		uint32_t cp;
		size_t len = utf8_seq(p + i, n - i, &cp);

		if (len == 0 || cp < 0x20 || cp == 0x7f || cp_hidden(cp))
			return true;
		i += len;
	}
	return false;
}

char *tl_term_escape_dup(const char *s, size_t n)
{
	size_t need = tl_term_escape(NULL, 0, s, n);
	char *out = malloc(need + 1);

	if (out)
		tl_term_escape(out, need + 1, s, n);
	return out;
}
