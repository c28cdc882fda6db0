/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tl-buf.h"

void tl_buf_init(struct tl_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void tl_buf_free(struct tl_buf *b)
{
	if (!b)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void tl_buf_reset(struct tl_buf *b)
{
	b->len = 0;
	b->err = 0;
}

int tl_buf_reserve(struct tl_buf *b, size_t more)
{
	size_t need, ncap;
	char *n;

	if (b->err)
		return b->err;
	if (more > SIZE_MAX / 2 - b->len - 1) {
		b->err = -E2BIG;
		return b->err;
	}
	need = b->len + more + 1;
	if (b->max && need > b->max + 1) {
		b->err = -E2BIG;
		return b->err;
	}
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 256;
	while (ncap < need)
		ncap *= 2;
	n = realloc(b->p, ncap);
	if (!n) {
		b->err = -ENOMEM;
		return b->err;
	}
	b->p = n;
	b->cap = ncap;
	return 0;
}

void tl_buf_add(struct tl_buf *b, const void *p, size_t n)
{
	if (tl_buf_reserve(b, n) < 0)
		return;
	if (n)		/* p may be NULL with nothing to copy */
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void tl_buf_adds(struct tl_buf *b, const char *s)
{
	tl_buf_add(b, s, strlen(s));
}

void tl_buf_addc(struct tl_buf *b, char c)
{
	if (tl_buf_reserve(b, 1) < 0)
		return;
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
}

void tl_buf_printf(struct tl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (tl_buf_reserve(b, 64) < 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->err = -EINVAL;
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		if (tl_buf_reserve(b, (size_t)n) < 0)
			return;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void tl_buf_add_json_str(struct tl_buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, run = 0;

	/* Worst case 6 bytes per input byte: reserve once for the common case. */
	if (tl_buf_reserve(b, n + 2) < 0)
		return;
	tl_buf_addc(b, '"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[6];

		if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f)
			continue;
		tl_buf_add(b, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"': tl_buf_add(b, "\\\"", 2); break;
		case '\\': tl_buf_add(b, "\\\\", 2); break;
		case '\n': tl_buf_add(b, "\\n", 2); break;
		case '\r': tl_buf_add(b, "\\r", 2); break;
		case '\t': tl_buf_add(b, "\\t", 2); break;
		case '\b': tl_buf_add(b, "\\b", 2); break;
		case '\f': tl_buf_add(b, "\\f", 2); break;
		default:
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			tl_buf_add(b, esc, 6);
		}
	}
	tl_buf_add(b, s + run, n - run);
	tl_buf_addc(b, '"');
}

char *tl_buf_steal(struct tl_buf *b, size_t *ret_len)
{
	char *p;

	if (b->err || tl_buf_reserve(b, 0) < 0) {
		tl_buf_free(b);
		return NULL;
	}
	p = b->p;
	p[b->len] = '\0';
	if (ret_len)
		*ret_len = b->len;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}
