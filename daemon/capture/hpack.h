/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "hpack-huffman.h"

/* HPACK header-block decoding (RFC 7541) for one direction of an HTTP/2
 * connection, streaming: a block arrives as fragments of any size (HEADERS,
 * CONTINUATION, however the socket split them) and each field is handed
 * over as soon as it is complete. The dynamic table follows the encoder's
 * size updates, bounded by the limit the decoding side advertised
 * (SETTINGS_HEADER_TABLE_SIZE) and by a hard cap of the agent's.
 *
 * Peer-controlled bytes: indices past the tables, integers past 32 bits,
 * size updates beyond the limit or after the block's first field, bad
 * Huffman strings and blocks that end inside a field are errors; after an
 * error the table is unknown and every later call fails (-EPROTO), never
 * guesses. Memory: the table (at most its size) and one field of at most
 * the cap, both allocated as needed. */

#define TL_HPACK_DEFAULT_TABLE 4096       /* SETTINGS_HEADER_TABLE_SIZE's default */
#define TL_HPACK_CAP_DEFAULT 16384        /* the largest table followed */
#define TL_HPACK_LIST_BYTES_DEFAULT 65536 /* a header list's size, as SETTINGS_MAX_HEADER_LIST_SIZE counts */
#define TL_HPACK_LIST_COUNT_DEFAULT 256

struct tl_hpack_field {
	const char *name;    /* not NUL-terminated */
	size_t name_len;
	const char *value;
	size_t value_len;
	bool cut;            /* name or value longer than the agent keeps: the bytes are a prefix */
};

/* Called for each field of a block while the list is within its bounds;
 * a negative return stops the block (returned by tl_hpack_feed). */
typedef int (*tl_hpack_field_cb)(void *userdata, const struct tl_hpack_field *f);

struct tl_hpack_limits {
	uint32_t cap;          /* hard cap on the dynamic table, at least 4096; 0 = TL_HPACK_CAP_DEFAULT */
	uint32_t list_bytes;   /* 0 = TL_HPACK_LIST_BYTES_DEFAULT */
	uint32_t list_count;   /* 0 = TL_HPACK_LIST_COUNT_DEFAULT */
};

struct tl_hpack_entry;

struct tl_hpack {
	struct tl_hpack_limits lim;
	/* dynamic table: a ring of entries, newest at head */
	struct tl_hpack_entry **ring;
	uint32_t ring_cap, tail, count; /* oldest at tail */
	uint32_t size;         /* RFC 7541 section 4.1 */
	uint32_t max_size;     /* the encoder's, from size updates */
	uint32_t limit;        /* SETTINGS_HEADER_TABLE_SIZE of the decoding side */
	/* the representation in progress */
	uint8_t state, kind, stage, ibits;
	bool failed, at_start, in_block, huff, list_cut;
	uint32_t ival, str_left;
	struct tl_huff_state hs;
	char *fbuf;            /* the field: name then value, at most lim.cap bytes */
	uint32_t fcap;
	uint64_t name_len, value_len; /* decoded lengths */
	uint32_t name_kept, value_kept; /* bytes of them in fbuf */
	uint64_t list_bytes;
	uint32_t list_count;
};

void tl_hpack_init(struct tl_hpack *h, const struct tl_hpack_limits *lim);
/* Frees the table (the struct itself is the caller's); accepts NULL. */
void tl_hpack_free(struct tl_hpack *h);

/* The decoding side advertised SETTINGS_HEADER_TABLE_SIZE = v. A limit
 * below the table's size shrinks it now (the encoder must then signal a
 * size update at its next block). */
void tl_hpack_set_limit(struct tl_hpack *h, uint32_t v);

void tl_hpack_block_begin(struct tl_hpack *h);
/* A fragment of the current block. 0, -EPROTO (malformed or hostile),
 * -E2BIG (a table larger than the cap: not followed), -ENOMEM, or the
 * callback's negative return. After any error the decoder is failed. */
int tl_hpack_feed(struct tl_hpack *h, const uint8_t *buf, size_t len, tl_hpack_field_cb cb,
		  void *userdata);
/* The block ended (END_HEADERS): -EPROTO when it ended inside a field. */
int tl_hpack_block_end(struct tl_hpack *h);
/* The current (or last) block's list went past its bounds: fields after
 * that point were decoded into the table but not handed over. */
static inline bool tl_hpack_list_cut(const struct tl_hpack *h)
{
	return h->list_cut;
}
static inline bool tl_hpack_failed(const struct tl_hpack *h)
{
	return h->failed;
}
/* Marks the decoder failed: its table can no longer be known (bytes of a
 * block were not seen). */
void tl_hpack_fail(struct tl_hpack *h);

/* Encoding helpers for tests and benchmarks: an integer with an n-bit
 * prefix (first byte's high bits from flags) and a string literal. Both
 * return the bytes written, 0 when cap is too small. */
size_t tl_hpack_put_int(uint8_t *out, size_t cap, uint8_t flags, unsigned prefix_bits, uint32_t v);
size_t tl_hpack_put_str(uint8_t *out, size_t cap, const char *s, size_t n, bool huffman);
