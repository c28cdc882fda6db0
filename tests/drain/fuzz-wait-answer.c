/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: termline-wait's reader of the agent's answer. The input is fed
 * in pieces whose sizes come from its first byte; whatever completes is
 * parsed as a verdict, and the same bytes fed whole must give the same
 * result. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tw_reader a, b;

static int run(struct tw_reader *r, const uint8_t *p, size_t n, size_t step)
{
	int res = 0;

	tw_reader_init(r);
	for (size_t at = 0; at < n && res == 0;) {
		size_t k = n - at < step ? n - at : step;

		res = tw_reader_feed(r, p + at, k);
		at += k;
	}
	if (res == 0)
		res = tw_reader_eof(r);
	return res;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tw_verdict v;
	size_t step;
	int ra, rb;

	if (size < 1)
		return 0;
	step = (size_t)data[0] % 64 + 1;
	data++;
	size--;
	ra = run(&a, data, size, step);
	rb = run(&b, data, size, size ? size : 1);
	if (ra != rb && !(ra == -EMSGSIZE || rb == -EMSGSIZE))
		abort();
	if (ra == 1) {
		if (rb != 1 || a.body_len != b.body_len || memcmp(a.body, b.body, a.body_len) != 0 ||
		    a.status != b.status || a.body_len > TW_BODY_MAX)
			abort();
		if (tw_verdict_parse(a.body, a.body_len, "6b1f2c3d-0000-4000-8000-00000000beef", &v) == 0 &&
		    (strlen(v.summary) >= sizeof(v.summary) || strlen(v.unmet) >= sizeof(v.unmet)))
			abort();
	}
	return 0;
}
