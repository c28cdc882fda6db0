/* SPDX-License-Identifier: Apache-2.0 */
/* A recorded HTTP/2 connection, replayed through the decoder by the unit
 * tests and bench-h2. The file (tests/capture/h2/README.md) is
 *
 *     termline-h2-capture 1\n
 *     then per chunk: "<dir> <ts_ns> <len>\n", len raw bytes, "\n"
 *
 * dir 0: what the server read (the client's bytes), 1: what it wrote;
 * 2: a note (len bytes of text, not connection data). A chunk is one read
 * or write as the recorder saw it. Header-only: the tests and the bench
 * link nothing more for it. */
#pragma once
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct h2_chunk {
	int dir;
	int64_t ts;
	const uint8_t *data;
	size_t len;
};

struct h2_capture {
	struct h2_chunk *c;
	size_t n;
	size_t bytes; /* connection bytes, both directions (notes left out) */
	uint8_t *buf;
};

static inline void h2_capture_free(struct h2_capture *cap)
{
	free(cap->c);
	free(cap->buf);
	memset(cap, 0, sizeof(*cap));
}

/* 0, or -errno with cap empty (-EINVAL: not a capture file). */
static inline int h2_capture_load(const char *path, struct h2_capture *cap)
{
	FILE *f = fopen(path, "rb");
	long size;
	size_t at, cap_n = 0;
	static const char magic[] = "termline-h2-capture 1\n";

	memset(cap, 0, sizeof(*cap));
	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
		fclose(f);
		return -EIO;
	}
	cap->buf = malloc((size_t)size + 1);
	if (!cap->buf || fread(cap->buf, 1, (size_t)size, f) != (size_t)size) {
		fclose(f);
		h2_capture_free(cap);
		return -EIO;
	}
	fclose(f);
	cap->buf[size] = 0;
	if ((size_t)size < sizeof(magic) - 1 || memcmp(cap->buf, magic, sizeof(magic) - 1)) {
		h2_capture_free(cap);
		return -EINVAL;
	}
	at = sizeof(magic) - 1;
	while (at < (size_t)size) {
		int dir;
		int64_t ts;
		size_t len;
		int used = 0;
		const char *nl = memchr(cap->buf + at, '\n', (size_t)size - at);

		if (!nl || sscanf((const char *)cap->buf + at, "%d %" SCNd64 " %zu%n", &dir, &ts, &len, &used) != 3 ||
		    (const char *)cap->buf + at + used != nl || dir < 0 || dir > 2)
			goto bad;
		at = (size_t)((const uint8_t *)nl - cap->buf) + 1;
		if (len > (size_t)size - at || (size_t)size - at - len < 1 || cap->buf[at + len] != '\n')
			goto bad;
		if (cap->n == cap_n) {
			struct h2_chunk *c = realloc(cap->c, (cap_n ? cap_n * 2 : 64) * sizeof(*c));

			if (!c)
				goto bad;
			cap->c = c;
			cap_n = cap_n ? cap_n * 2 : 64;
		}
		cap->c[cap->n++] = (struct h2_chunk){.dir = dir, .ts = ts, .data = cap->buf + at, .len = len};
		if (dir < 2)
			cap->bytes += len;
		at += len + 1;
	}
	return 0;
bad:
	h2_capture_free(cap);
	return -EINVAL;
}
