/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: the watch stream splitter with peer-controlled bytes, fed whole
 * and then in pieces whose sizes come from the input's first byte; both must
 * yield the same values and malformed count. */
#include <stdlib.h>
#include <string.h>

#include "kube-stream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct acc {
	unsigned long n;
	unsigned long hash;
};

static int cb(void *userdata, struct json_object *obj)
{
	struct acc *a = userdata;
	const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);

	a->n++;
	while (*s)
		a->hash = a->hash * 31 + (unsigned char)*s++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_kstream_limits lim = { .max_object = 4096, .max_depth = 16 };
	struct acc whole = { 0 }, pieces = { 0 };
	struct tl_kstream *a, *b;
	size_t step;

	if (size < 1)
		return 0;
	step = (size_t)data[0] % 17 + 1;
	/* half the inputs meet a memory bound a few objects in */
	lim.max_cost = data[0] & 0x80 ? 8192 : 0;
	data++;
	size--;
	if (tl_kstream_new(&lim, cb, &whole, &a) < 0)
		return 0;
	if (tl_kstream_new(&lim, cb, &pieces, &b) < 0) {
		tl_kstream_free(a);
		return 0;
	}
	tl_kstream_feed(a, (const char *)data, size);
	for (size_t off = 0; off < size; off += step)
		tl_kstream_feed(b, (const char *)data + off, size - off < step ? size - off : step);
	if (whole.n != pieces.n || whole.hash != pieces.hash ||
	    tl_kstream_malformed(a) != tl_kstream_malformed(b))
		abort();
	tl_kstream_free(a);
	tl_kstream_free(b);
	return 0;
}
