/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "term-escape.h"

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when the
 * first byte does not start one (RFC 3629, section 4). Its code point in
 * *cp. */
static size_t utf8_seq(const uint8_t *p, size_t n, uint32_t *cp)
{
	uint8_t c = p[0], lo = 0x80, hi = 0xbf;
	size_t want;
	uint32_t v;

	if (c >= 0xc2 && c <= 0xdf) {
		want = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		want = 3;
		v = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		want = 4;
		v = c & 0x07;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* past U+10FFFF */
	} else {
		return 0;
	}
	if (n < want || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 1; i < want; i++) {
		if (i > 1 && (p[i] < 0x80 || p[i] > 0xbf))
			return 0;
		v = (v << 6) | (p[i] & 0x3f);
	}
	*cp = v;
	return want;
}

static int escaped_cp(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

size_t tl_term_escape(char *out, size_t cap, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *p = (const uint8_t *)s;
	size_t total = 0, at = 0;
	int full = cap == 0;

	for (size_t i = 0; i < len;) {
		char piece[8];
		size_t n = 0, adv = 1;
		uint8_t c = p[i];
		uint32_t cp;

		if (c == '\\') {
			piece[n++] = '\\';
			piece[n++] = '\\';
		} else if (c == '\t' || c == '\n' || c == '\r') {
			piece[n++] = '\\';
			piece[n++] = c == '\t' ? 't' : c == '\n' ? 'n' : 'r';
		} else if (c >= 0x20 && c < 0x7f) {
			piece[n++] = (char)c;
		} else if (c < 0x80 || !(adv = utf8_seq(p + i, len - i, &cp))) {
			adv = 1;
			piece[n++] = '\\';
			piece[n++] = 'x';
			piece[n++] = hex[c >> 4];
			piece[n++] = hex[c & 15];
		} else if (escaped_cp(cp)) {
			piece[n++] = '\\';
			piece[n++] = 'u';
			for (int shift = 12; shift >= 0; shift -= 4)
				piece[n++] = hex[(cp >> shift) & 15];
		} else {
			memcpy(piece, p + i, adv);
			n = adv;
		}
		i += adv;
		total += n;
		if (!full && at + n < cap) {
			memcpy(out + at, piece, n);
			at += n;
		} else {
			full = 1;
		}
	}
	if (cap > 0)
		out[at] = '\0';
	return total;
}

char *tl_term_escape_dup(const char *s)
{
	size_t len = s ? strlen(s) : 0, need = tl_term_escape(NULL, 0, s ? s : "", len);
	char *out = malloc(need + 1);

	if (out)
		tl_term_escape(out, need + 1, s ? s : "", len);
	return out;
}
