/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: CRI log bytes through the reader, each joined record through
 * the access-log parser; and the whole input as one access-log line. */
#include <stddef.h>
#include <stdint.h>

#include "access-log.h"
#include "cri-log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void on_rec(void *ud, int64_t t, bool is_stderr, const char *text, size_t len, bool cut)
{
	struct tl_access_record r;

	(void)ud;
	(void)t;
	(void)is_stderr;
	(void)cut;
	tl_access_parse(text, len, &r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_cri_reader *r;
	struct tl_access_record rec;
	size_t half = size / 2;

	tl_access_parse((const char *)data, size, &rec);
	if (tl_cri_reader_new(&r) < 0)
		return 0;
	tl_cri_reader_feed(r, (const char *)data, half, on_rec, NULL);
	tl_cri_reader_feed(r, (const char *)data + half, size - half, on_rec, NULL);
	tl_cri_reader_free(r);
	return 0;
}
