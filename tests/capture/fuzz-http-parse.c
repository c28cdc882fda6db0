/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: HTTP heads from captured socket bytes. The first byte picks how
 * the rest is cut into reads and writes for the pairing tracker; the whole
 * rest is also parsed as one head. */
#include <stddef.h>
#include <stdint.h>

#include "http-pair.h"
#include "http-parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_x(void *ud, const struct tl_http_exchange *x)
{
	(void)ud;
	(void)x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct tl_http_want want = { .names = { "x-request-id", "traceparent" }, .n = 2 };
	struct tl_http_tracker_config cfg = { .want = want, .max_conns = 4, .max_pending = 4,
					      .head_max = 512 };
	struct tl_http_tracker *t;
	struct tl_http_head h;
	size_t off = 1;
	uint8_t ctl;

	if (size < 1)
		return 0;
	ctl = data[0];
	tl_http_parse_head(data + 1, size - 1, &want, &h);
	if (tl_http_tracker_new(&cfg, on_x, NULL, &t) < 0)
		return 0;
	for (unsigned i = 0; off < size; i++) {
		size_t n = (size_t)((ctl >> (i % 8)) & 0x7) * 9 + 1;
		bool rd = ((ctl + i) & 1) != 0;

		if (n > size - off)
			n = size - off;
		tl_http_tracker_data(t, i % 3, 1, 1, rd, data + off, n, n + (i % 5 == 4), (int64_t)i);
		if (i % 11 == 10)
			tl_http_tracker_reset(t, i % 3, (int64_t)i);
		if (i % 13 == 12)
			tl_http_tracker_close(t, i % 3, (int64_t)i);
		if (i % 17 == 16)
			tl_http_tracker_lost(t, i % 3);
		off += n;
	}
	tl_http_tracker_free(t);
	return 0;
}
