/* SPDX-License-Identifier: Apache-2.0 */
/* HPACK Huffman decoding four bits at a time: a table of 256 states (the
 * code tree's inner nodes) x 16 nibbles, built once from the code table
 * below. The code's shortest symbol is 5 bits, so a nibble ends at most
 * one symbol; a state also says whether the bits it stands for are a valid
 * end of string (all ones, at most 7: RFC 7541 section 5.2). */
#include <errno.h>
#include <string.h>

#include "hpack-huffman.h"

/* RFC 7541 Appendix B: the code of each symbol 0..255 and of EOS (256),
 * right-aligned, and its length in bits. */
static const struct {
	uint32_t code;
	uint8_t len;
} huff_code[257] = {
	/*   0 */ {0x1ff8, 13}, {0x7fffd8, 23}, {0xfffffe2, 28}, {0xfffffe3, 28},
	/*   4 */ {0xfffffe4, 28}, {0xfffffe5, 28}, {0xfffffe6, 28}, {0xfffffe7, 28},
	/*   8 */ {0xfffffe8, 28}, {0xffffea, 24}, {0x3ffffffc, 30}, {0xfffffe9, 28},
	/*  12 */ {0xfffffea, 28}, {0x3ffffffd, 30}, {0xfffffeb, 28}, {0xfffffec, 28},
	/*  16 */ {0xfffffed, 28}, {0xfffffee, 28}, {0xfffffef, 28}, {0xffffff0, 28},
	/*  20 */ {0xffffff1, 28}, {0xffffff2, 28}, {0x3ffffffe, 30}, {0xffffff3, 28},
	/*  24 */ {0xffffff4, 28}, {0xffffff5, 28}, {0xffffff6, 28}, {0xffffff7, 28},
	/*  28 */ {0xffffff8, 28}, {0xffffff9, 28}, {0xffffffa, 28}, {0xffffffb, 28},
	/*  32 */ {0x14, 6}, {0x3f8, 10}, {0x3f9, 10}, {0xffa, 12},
	/*  36 */ {0x1ff9, 13}, {0x15, 6}, {0xf8, 8}, {0x7fa, 11},
	/*  40 */ {0x3fa, 10}, {0x3fb, 10}, {0xf9, 8}, {0x7fb, 11},
	/*  44 */ {0xfa, 8}, {0x16, 6}, {0x17, 6}, {0x18, 6},
	/*  48 */ {0x0, 5}, {0x1, 5}, {0x2, 5}, {0x19, 6},
	/*  52 */ {0x1a, 6}, {0x1b, 6}, {0x1c, 6}, {0x1d, 6},
	/*  56 */ {0x1e, 6}, {0x1f, 6}, {0x5c, 7}, {0xfb, 8},
	/*  60 */ {0x7ffc, 15}, {0x20, 6}, {0xffb, 12}, {0x3fc, 10},
	/*  64 */ {0x1ffa, 13}, {0x21, 6}, {0x5d, 7}, {0x5e, 7},
	/*  68 */ {0x5f, 7}, {0x60, 7}, {0x61, 7}, {0x62, 7},
	/*  72 */ {0x63, 7}, {0x64, 7}, {0x65, 7}, {0x66, 7},
	/*  76 */ {0x67, 7}, {0x68, 7}, {0x69, 7}, {0x6a, 7},
	/*  80 */ {0x6b, 7}, {0x6c, 7}, {0x6d, 7}, {0x6e, 7},
	/*  84 */ {0x6f, 7}, {0x70, 7}, {0x71, 7}, {0x72, 7},
	/*  88 */ {0xfc, 8}, {0x73, 7}, {0xfd, 8}, {0x1ffb, 13},
	/*  92 */ {0x7fff0, 19}, {0x1ffc, 13}, {0x3ffc, 14}, {0x22, 6},
	/*  96 */ {0x7ffd, 15}, {0x3, 5}, {0x23, 6}, {0x4, 5},
	/* 100 */ {0x24, 6}, {0x5, 5}, {0x25, 6}, {0x26, 6},
	/* 104 */ {0x27, 6}, {0x6, 5}, {0x74, 7}, {0x75, 7},
	/* 108 */ {0x28, 6}, {0x29, 6}, {0x2a, 6}, {0x7, 5},
	/* 112 */ {0x2b, 6}, {0x76, 7}, {0x2c, 6}, {0x8, 5},
	/* 116 */ {0x9, 5}, {0x2d, 6}, {0x77, 7}, {0x78, 7},
	/* 120 */ {0x79, 7}, {0x7a, 7}, {0x7b, 7}, {0x7ffe, 15},
	/* 124 */ {0x7fc, 11}, {0x3ffd, 14}, {0x1ffd, 13}, {0xffffffc, 28},
	/* 128 */ {0xfffe6, 20}, {0x3fffd2, 22}, {0xfffe7, 20}, {0xfffe8, 20},
	/* 132 */ {0x3fffd3, 22}, {0x3fffd4, 22}, {0x3fffd5, 22}, {0x7fffd9, 23},
	/* 136 */ {0x3fffd6, 22}, {0x7fffda, 23}, {0x7fffdb, 23}, {0x7fffdc, 23},
	/* 140 */ {0x7fffdd, 23}, {0x7fffde, 23}, {0xffffeb, 24}, {0x7fffdf, 23},
	/* 144 */ {0xffffec, 24}, {0xffffed, 24}, {0x3fffd7, 22}, {0x7fffe0, 23},
	/* 148 */ {0xffffee, 24}, {0x7fffe1, 23}, {0x7fffe2, 23}, {0x7fffe3, 23},
	/* 152 */ {0x7fffe4, 23}, {0x1fffdc, 21}, {0x3fffd8, 22}, {0x7fffe5, 23},
	/* 156 */ {0x3fffd9, 22}, {0x7fffe6, 23}, {0x7fffe7, 23}, {0xffffef, 24},
	/* 160 */ {0x3fffda, 22}, {0x1fffdd, 21}, {0xfffe9, 20}, {0x3fffdb, 22},
	/* 164 */ {0x3fffdc, 22}, {0x7fffe8, 23}, {0x7fffe9, 23}, {0x1fffde, 21},
	/* 168 */ {0x7fffea, 23}, {0x3fffdd, 22}, {0x3fffde, 22}, {0xfffff0, 24},
	/* 172 */ {0x1fffdf, 21}, {0x3fffdf, 22}, {0x7fffeb, 23}, {0x7fffec, 23},
	/* 176 */ {0x1fffe0, 21}, {0x1fffe1, 21}, {0x3fffe0, 22}, {0x1fffe2, 21},
	/* 180 */ {0x7fffed, 23}, {0x3fffe1, 22}, {0x7fffee, 23}, {0x7fffef, 23},
	/* 184 */ {0xfffea, 20}, {0x3fffe2, 22}, {0x3fffe3, 22}, {0x3fffe4, 22},
	/* 188 */ {0x7ffff0, 23}, {0x3fffe5, 22}, {0x3fffe6, 22}, {0x7ffff1, 23},
	/* 192 */ {0x3ffffe0, 26}, {0x3ffffe1, 26}, {0xfffeb, 20}, {0x7fff1, 19},
	/* 196 */ {0x3fffe7, 22}, {0x7ffff2, 23}, {0x3fffe8, 22}, {0x1ffffec, 25},
	/* 200 */ {0x3ffffe2, 26}, {0x3ffffe3, 26}, {0x3ffffe4, 26}, {0x7ffffde, 27},
	/* 204 */ {0x7ffffdf, 27}, {0x3ffffe5, 26}, {0xfffff1, 24}, {0x1ffffed, 25},
	/* 208 */ {0x7fff2, 19}, {0x1fffe3, 21}, {0x3ffffe6, 26}, {0x7ffffe0, 27},
	/* 212 */ {0x7ffffe1, 27}, {0x3ffffe7, 26}, {0x7ffffe2, 27}, {0xfffff2, 24},
	/* 216 */ {0x1fffe4, 21}, {0x1fffe5, 21}, {0x3ffffe8, 26}, {0x3ffffe9, 26},
	/* 220 */ {0xffffffd, 28}, {0x7ffffe3, 27}, {0x7ffffe4, 27}, {0x7ffffe5, 27},
	/* 224 */ {0xfffec, 20}, {0xfffff3, 24}, {0xfffed, 20}, {0x1fffe6, 21},
	/* 228 */ {0x3fffe9, 22}, {0x1fffe7, 21}, {0x1fffe8, 21}, {0x7ffff3, 23},
	/* 232 */ {0x3fffea, 22}, {0x3fffeb, 22}, {0x1ffffee, 25}, {0x1ffffef, 25},
	/* 236 */ {0xfffff4, 24}, {0xfffff5, 24}, {0x3ffffea, 26}, {0x7ffff4, 23},
	/* 240 */ {0x3ffffeb, 26}, {0x7ffffe6, 27}, {0x3ffffec, 26}, {0x3ffffed, 26},
	/* 244 */ {0x7ffffe7, 27}, {0x7ffffe8, 27}, {0x7ffffe9, 27}, {0x7ffffea, 27},
	/* 248 */ {0x7ffffeb, 27}, {0xffffffe, 28}, {0x7ffffec, 27}, {0x7ffffed, 27},
	/* 252 */ {0x7ffffee, 27}, {0x7ffffef, 27}, {0x7fffff0, 27}, {0x3ffffee, 26},
	/* 256 */ {0x3fffffff, 30},
};

#define EOS 256
#define NODES 256

/* The code tree: inner node i's children; a child >= 0 is an inner node,
 * < 0 is the leaf of symbol -(child + 1). */
static int16_t tree[NODES][2];
/* How many one bits lead from the root to node i along the all-ones path,
 * or -1 when node i is off that path. */
static int8_t ones_depth[NODES];

enum { F_SYM = 1, F_ACCEPT = 2, F_FAIL = 4 };

struct huff_step {
	uint8_t next;
	uint8_t sym;
	uint8_t flags;
};

static struct huff_step step[NODES][16];

static bool built;

static void build_tree(void)
{
	int n = 1;

	memset(tree, 0, sizeof(tree));
	for (int s = 0; s <= EOS; s++) {
		int node = 0;

		for (int b = huff_code[s].len - 1; b >= 0; b--) {
			int bit = (huff_code[s].code >> b) & 1;

			if (b == 0) {
				tree[node][bit] = (int16_t)(-(s + 1));
				break;
			}
			if (tree[node][bit] == 0)
				tree[node][bit] = (int16_t)n++;
			node = tree[node][bit];
		}
	}
	for (int i = 0; i < NODES; i++)
		ones_depth[i] = -1;
	for (int node = 0, d = 0; node >= 0 && d < 32; d++) {
		ones_depth[node] = (int8_t)d;
		node = tree[node][1];
	}
}

static void build(void)
{
	build_tree();
	for (int s = 0; s < NODES; s++) {
		for (int nib = 0; nib < 16; nib++) {
			int node = s, flags = 0, sym = 0;

			for (int b = 3; b >= 0; b--) {
				int c = tree[node][(nib >> b) & 1];

				if (c < 0) {
					if (-c - 1 == EOS) {
						flags |= F_FAIL;
						break;
					}
					sym = -c - 1;
					flags |= F_SYM;
					node = 0;
				} else {
					node = c;
				}
			}
			if (!(flags & F_FAIL) && ones_depth[node] >= 0 && ones_depth[node] <= 7)
				flags |= F_ACCEPT;
			step[s][nib].next = (uint8_t)node;
			step[s][nib].sym = (uint8_t)sym;
			step[s][nib].flags = (uint8_t)flags;
		}
	}
	built = true;
}

int tl_huff_decode(struct tl_huff_state *s, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
		   size_t *len)
{
	size_t k = *len;
	uint8_t node = s->node, flags = s->accept ? F_ACCEPT : 0;

	if (!built)
		build();
	if (s->failed)
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		for (int half = 4; half >= 0; half -= 4) {
			const struct huff_step *t = &step[node][(in[i] >> half) & 0xf];

			flags = t->flags;
			if (flags & F_FAIL) {
				s->failed = 1;
				return -EPROTO;
			}
			if (flags & F_SYM) {
				if (k < cap)
					out[k] = t->sym;
				k++;
			}
			node = t->next;
		}
	}
	s->node = node;
	s->accept = (flags & F_ACCEPT) ? 1 : 0;
	*len = k;
	return 0;
}

int tl_huff_finish(const struct tl_huff_state *s)
{
	return !s->failed && s->accept ? 0 : -EPROTO;
}

size_t tl_huff_encoded_len(const uint8_t *in, size_t n)
{
	uint64_t bits = 0;

	for (size_t i = 0; i < n; i++)
		bits += huff_code[in[i]].len;
	return (size_t)((bits + 7) / 8);
}

size_t tl_huff_encode(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t need = tl_huff_encoded_len(in, n), k = 0;
	uint64_t acc = 0;
	unsigned nbits = 0;

	if (need > cap)
		return 0;
	for (size_t i = 0; i < n; i++) {
		acc = (acc << huff_code[in[i]].len) | huff_code[in[i]].code;
		nbits += huff_code[in[i]].len;
		while (nbits >= 8) {
			nbits -= 8;
			out[k++] = (uint8_t)(acc >> nbits);
		}
	}
	/* Padding: the most significant bits of EOS, all ones. */
	if (nbits)
		out[k++] = (uint8_t)((acc << (8 - nbits)) | (0xffu >> nbits));
	return k;
}
