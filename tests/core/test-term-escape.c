/* SPDX-License-Identifier: Apache-2.0 */
/* tl_term_escape: peer text printed on a terminal. Whatever the input,
 * the output holds no control character and only valid UTF-8, shows what
 * was escaped, and is cut only between whole escapes. */
#include <check.h>
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <wctype.h>

#include "term-escape.h"
#include "../check-run.h"

static char *esc(const char *s, size_t len)
{
	static char buf[4096];
	size_t n = tl_term_escape(buf, sizeof(buf), s, len);

	ck_assert_uint_lt(n, sizeof(buf));
	ck_assert_uint_eq(strlen(buf), n);
	return buf;
}

#define ESC_IS(in, want) ck_assert_str_eq(esc(in, sizeof(in) - 1), want)

START_TEST(plain_text_unchanged)
{
	ESC_IS("", "");
	ESC_IS("web-7d9f/GET /api/v1/orders?id=42 200", "web-7d9f/GET /api/v1/orders?id=42 200");
	ESC_IS("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
	       "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
}
END_TEST

START_TEST(terminal_sequences_visible)
{
	/* retitle the window, clear the screen, an OSC 8 link */
	ESC_IS("\x1b]0;pwned\x07", "\\x1b]0;pwned\\x07");
	ESC_IS("a\x1b[2J\x1b[Hb", "a\\x1b[2J\\x1b[Hb");
	ESC_IS("\x1b]8;;http://x/\x1b\\here\x1b]8;;\x1b\\",
	       "\\x1b]8;;http://x/\\x1b\\\\here\\x1b]8;;\\x1b\\\\");
	ESC_IS("a\tb\nc\rd", "a\\tb\\nc\\rd");
	ESC_IS("\x7f\x01\x1f", "\\x7f\\x01\\x1f");
	ESC_IS("a\\x1b", "a\\\\x1b"); /* a literal backslash cannot pose as an escape */
	ck_assert_str_eq(esc("a\0b", 3), "a\\x00b");
}
END_TEST

START_TEST(c1_and_bidi_escaped)
{
	ESC_IS("\xc2\x9b" "31m", "\\u009b31m"); /* 8-bit CSI, as UTF-8 */
	ESC_IS("\xc2\x85", "\\u0085");
	ESC_IS("\xc2\xa0", "\xc2\xa0"); /* U+00A0, the first after C1 */
	ESC_IS("x\xe2\x80\xaey", "x\\u202ey"); /* right-to-left override */
	ESC_IS("\xe2\x81\xa6\xe2\x81\xa9", "\\u2066\\u2069");
	ESC_IS("\xe2\x80\xa8\xe2\x80\xa9", "\\u2028\\u2029");
	ESC_IS("\xe2\x80\xa7\xe2\x80\xaf", "\xe2\x80\xa7\xe2\x80\xaf"); /* neighbours stay */
}
END_TEST

START_TEST(invalid_utf8_as_bytes)
{
	ESC_IS("\x9b", "\\x9b");                      /* a lone C1 byte */
	ESC_IS("\xc0\xaf", "\\xc0\\xaf");             /* overlong '/' */
	ESC_IS("\xe0\x80\xaf", "\\xe0\\x80\\xaf");    /* overlong, 3 bytes */
	ESC_IS("\xed\xa0\x80", "\\xed\\xa0\\x80");    /* a surrogate */
	ESC_IS("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
	ESC_IS("\xf5\x80", "\\xf5\\x80");
	ESC_IS("\xff", "\\xff");
	ESC_IS("\xe6\x97", "\\xe6\\x97");             /* cut at the end */
	ESC_IS("\xe6\x97x", "\\xe6\\x97x");           /* cut before ASCII */
	ESC_IS("\xf0\x9f\x98", "\\xf0\\x9f\\x98");
	ESC_IS("\xc3\xa9\xc3", "\xc3\xa9\\xc3");
	ESC_IS("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"); /* U+10FFFF itself */
}
END_TEST

/* Offsets in an escaped string where a whole escape or character ends. */
static size_t boundaries(const char *s, size_t *at, size_t max)
{
	size_t n = 0, i = 0, len = strlen(s);

	at[n++] = 0;
	while (i < len) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\')
			i += s[i + 1] == 'x' ? 4 : s[i + 1] == 'u' ? 6 : 2;
		else if (c < 0x80)
			i += 1;
		else if (c < 0xe0)
			i += 2;
		else if (c < 0xf0)
			i += 3;
		else
			i += 4;
		ck_assert_uint_lt(n, max);
		at[n++] = i;
	}
	ck_assert_uint_eq(i, len);
	return n;
}

START_TEST(cut_between_escapes_only)
{
	static const char in[] = "a\x1b]0;\xe6\x97\xa5\\\xc2\x9b\xff\n\xf0\x9f\x98\x80z";
	char full[256], cut[256];
	size_t at[256], nb, want = tl_term_escape(full, sizeof(full), in, sizeof(in) - 1);

	ck_assert_uint_eq(tl_term_escape(NULL, 0, in, sizeof(in) - 1), want);
	nb = boundaries(full, at, 256);
	for (size_t cap = 0; cap <= want + 2; cap++) {
		size_t n, longest = 0;

		memset(cut, 'Z', sizeof(cut));
		n = tl_term_escape(cut, cap, in, sizeof(in) - 1);
		ck_assert_uint_eq(n, want);
		if (cap == 0) {
			ck_assert_int_eq(cut[0], 'Z'); /* nothing written */
			continue;
		}
		for (size_t k = 0; k < nb; k++)
			if (at[k] < cap)
				longest = at[k];
		ck_assert_uint_eq(strlen(cut), longest);
		ck_assert_int_eq(memcmp(cut, full, longest), 0);
	}
}
END_TEST

/* The output, decoded by the C library's own UTF-8 decoder, holds no
 * control character: checked on every single byte, every byte pair and
 * random strings. */
static const char *unsafe_at(const char *s)
{
	mbstate_t st;
	size_t len = strlen(s);

	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < len;) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s + i, len - i, &st);

		if (n == (size_t)-1 || n == (size_t)-2 || n == 0 || iswcntrl((wint_t)wc) ||
		    (wc >= 0x202a && wc <= 0x202e) || (wc >= 0x2066 && wc <= 0x2069))
			return s + i;
		i += n;
	}
	return NULL;
}

/* (Check's assertions cost a pipe write each: once per input here.) */
#define assert_safe(s)                                                                    \
	do {                                                                              \
		const char *bad_ = unsafe_at(s);                                          \
		if (bad_)                                                                 \
			ck_abort_msg("invalid UTF-8 or a control in \"%s\" at %td", s,    \
				     bad_ - (s));                                         \
	} while (0)

START_TEST(output_always_safe)
{
	char in[16], out[256];
	uint32_t x = 0x2545f491;

	ck_assert_ptr_nonnull(setlocale(LC_CTYPE, "C.UTF-8"));
	for (unsigned a = 0; a < 256; a++) {
		for (unsigned b = 0; b < 256; b++) {
			in[0] = (char)a;
			in[1] = (char)b;
			tl_term_escape(out, sizeof(out), in, 2);
			assert_safe(out);
		}
	}
	for (int round = 0; round < 20000; round++) {
		size_t n = round % 15 + 1;

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			/* mostly bytes near UTF-8 boundaries and controls */
			in[i] = (char)((x & 0x100) ? (0x80 | (x & 0x7f)) : (x & 0xff));
		}
		for (size_t cap = 1; cap < sizeof(out); cap += 37) {
			tl_term_escape(out, cap, in, n);
			assert_safe(out);
		}
	}
}
END_TEST

START_TEST(dup)
{
	char *s = tl_term_escape_dup("pod\x1b[31m");

	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "pod\\x1b[31m");
	free(s);
	s = tl_term_escape_dup(NULL);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	free(s);
}
END_TEST

static Suite *term_escape_suite(void)
{
	Suite *s = suite_create("term-escape");
	TCase *tc = tcase_create("term-escape");

	tcase_add_test(tc, plain_text_unchanged);
	tcase_add_test(tc, terminal_sequences_visible);
	tcase_add_test(tc, c1_and_bidi_escaped);
	tcase_add_test(tc, invalid_utf8_as_bytes);
	tcase_add_test(tc, cut_between_escapes_only);
	tcase_add_test(tc, output_always_safe);
	tcase_add_test(tc, dup);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int failed = tl_check_run(term_escape_suite());

	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
