/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: HPACK header blocks (daemon/capture/hpack.c) from a peer.
 *
 *     byte 0: limits (cap, SETTINGS_HEADER_TABLE_SIZE, list bounds)
 *     byte 1: where each block is cut in two
 *     then blocks: a length byte, that many bytes (the last one takes
 *     what is left)
 *
 * Two decoders take the same blocks, one whole and one cut in two: the
 * fields they hand over, their tables and their errors must be the same
 * (a block split anywhere decodes the same). The input is also decoded as
 * one Huffman string, and its bytes encoded and decoded back. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct acc {
	uint64_t hash;
	uint32_t n;
};

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static int on_field(void *ud, const struct tl_hpack_field *f)
{
	struct acc *a = ud;
	uint8_t cut = f->cut;

	if (f->name_len > TL_HPACK_CAP_DEFAULT * 4 || f->value_len > TL_HPACK_CAP_DEFAULT * 4)
		__builtin_trap();
	a->hash = mix(a->hash, f->name, f->name_len);
	a->hash = mix(a->hash, "\0", 1);
	a->hash = mix(a->hash, f->value, f->value_len);
	a->hash = mix(a->hash, &cut, 1);
	a->n++;
	return 0;
}

static int block(struct tl_hpack *h, const uint8_t *p, size_t n, size_t cut, struct acc *a)
{
	int r;

	tl_hpack_block_begin(h);
	if (cut > n)
		cut = n;
	r = tl_hpack_feed(h, p, cut, on_field, a);
	if (r == 0)
		r = tl_hpack_feed(h, p + cut, n - cut, on_field, a);
	if (r == 0)
		r = tl_hpack_block_end(h);
	else
		tl_hpack_block_end(h);
	return r;
}

static void huffman(const uint8_t *data, size_t size)
{
	static uint8_t out[4096], enc[4096 * 4];
	struct tl_huff_state s;
	size_t len = 0, n = size < sizeof(out) ? size : sizeof(out), e;

	tl_huff_init(&s);
	if (tl_huff_decode(&s, data, size, out, sizeof(out), &len) == 0)
		(void)tl_huff_finish(&s);
	/* any bytes encode and decode back */
	e = tl_huff_encode(data, n, enc, sizeof(enc));
	if (e != tl_huff_encoded_len(data, n))
		__builtin_trap();
	len = 0;
	tl_huff_init(&s);
	if (tl_huff_decode(&s, enc, e, out, sizeof(out), &len) < 0 || tl_huff_finish(&s) < 0 ||
	    len != n || memcmp(out, data, n))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tl_hpack a, b;
	struct tl_hpack_limits lim = {0};
	struct acc fa = {0xcbf29ce484222325ULL, 0}, fb = fa;
	uint8_t ctl, cutb;
	size_t off = 2;
	static const uint32_t limits[] = {4096, 0, 256, 65536};

	if (size < 2)
		return 0;
	ctl = data[0];
	cutb = data[1];
	huffman(data + 2, size - 2);
	if (ctl & 0x1)
		lim.cap = 4096;
	if (ctl & 0x2)
		lim.list_count = 8;
	if (ctl & 0x4)
		lim.list_bytes = 300;
	tl_hpack_init(&a, &lim);
	tl_hpack_init(&b, &lim);
	tl_hpack_set_limit(&a, limits[(ctl >> 3) & 3]);
	tl_hpack_set_limit(&b, limits[(ctl >> 3) & 3]);
	while (off < size) {
		size_t n = data[off++];
		int ra, rb;

		if (n > size - off || (ctl & 0x80))
			n = size - off;
		ra = block(&a, data + off, n, n, &fa);
		rb = block(&b, data + off, n, cutb % (n + 1), &fb);
		if (ra != rb || fa.hash != fb.hash || fa.n != fb.n || a.count != b.count ||
		    a.size != b.size || a.max_size != b.max_size ||
		    tl_hpack_list_cut(&a) != tl_hpack_list_cut(&b) || a.size > a.max_size ||
		    a.max_size > a.lim.cap)
			__builtin_trap();
		if (ra < 0 && ra != -EPROTO && ra != -E2BIG && ra != -ENOMEM)
			__builtin_trap();
		off += n;
		cutb = (uint8_t)(cutb * 31 + 7);
	}
	tl_hpack_free(&a);
	tl_hpack_free(&b);
	return 0;
}
