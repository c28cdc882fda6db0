/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* A growable byte buffer for text the agent writes (JSON documents, event
 * lines, journal frames). Appends never fail visibly: the first allocation
 * failure (or passing max) sets err and later appends do nothing, so a
 * writer checks once at the end. */
#include <stddef.h>
#include <stdint.h>

struct tl_buf {
	char *p;
	size_t len, cap;
	size_t max; /* 0 = no limit */
	int err;    /* 0 or -ENOMEM / -E2BIG */
};

void tl_buf_init(struct tl_buf *b, size_t max);
void tl_buf_free(struct tl_buf *b); /* accepts a zeroed buffer */
void tl_buf_reset(struct tl_buf *b); /* len = 0, err = 0, memory kept */
int tl_buf_reserve(struct tl_buf *b, size_t more);
void tl_buf_add(struct tl_buf *b, const void *p, size_t n);
void tl_buf_adds(struct tl_buf *b, const char *s);
void tl_buf_addc(struct tl_buf *b, char c);
void tl_buf_printf(struct tl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string literal (quotes included): ", \ and control characters
 * escaped, everything else (UTF-8) as is. */
void tl_buf_add_json_str(struct tl_buf *b, const char *s, size_t n);
/* Takes the bytes (NUL-terminated) and leaves b empty; NULL on error. */
char *tl_buf_steal(struct tl_buf *b, size_t *ret_len);
