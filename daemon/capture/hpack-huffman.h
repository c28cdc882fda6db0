/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* HPACK's static Huffman code (RFC 7541 section 5.2 and Appendix B). The
 * decoder is streaming: a string literal may arrive in any number of
 * pieces, its state is two bytes. Peer-controlled input: EOS inside a
 * string, padding longer than 7 bits, or padding that is not the most
 * significant bits of EOS (all ones) are errors (-EPROTO). */

struct tl_huff_state {
	uint8_t node;   /* the code tree's node reached by the pending bits */
	uint8_t accept; /* those bits may end the string (all ones, at most 7) */
	uint8_t failed;
};

static inline void tl_huff_init(struct tl_huff_state *s)
{
	s->node = 0;
	s->accept = 1;
	s->failed = 0;
}

/* Decodes n bytes of a Huffman-coded string. Symbols go to out[*len ...]
 * while *len < cap; past cap they are counted in *len, not written (a
 * caller keeps a bounded prefix and learns the whole decoded length).
 * 0, or -EPROTO (EOS in the string; the state stays failed). */
int tl_huff_decode(struct tl_huff_state *s, const uint8_t *in, size_t n, uint8_t *out, size_t cap,
		   size_t *len);
/* The string ends here: 0 when its padding is valid, else -EPROTO. */
int tl_huff_finish(const struct tl_huff_state *s);

/* Bytes the code of in[0..n) takes. */
size_t tl_huff_encoded_len(const uint8_t *in, size_t n);
/* Encodes in[0..n) into out (cap bytes, at least tl_huff_encoded_len()):
 * the length written, or 0 when cap is too small. Tests and benchmarks
 * build header blocks with it. */
size_t tl_huff_encode(const uint8_t *in, size_t n, uint8_t *out, size_t cap);
