/* SPDX-License-Identifier: Apache-2.0 */
/* HPACK decoding, one byte of state machine at a time (RFC 7541 sections
 * 4-6): nothing of a block is buffered but the field being decoded, so a
 * block split anywhere decodes the same. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hpack.h"

struct tl_hpack_entry {
	uint32_t name_len, value_len;
	char data[]; /* name then value */
};

/* RFC 7541 Appendix A. */
static const struct {
	const char *name, *value;
} static_table[61] = {
	{":authority", ""},
	{":method", "GET"},
	{":method", "POST"},
	{":path", "/"},
	{":path", "/index.html"},
	{":scheme", "http"},
	{":scheme", "https"},
	{":status", "200"},
	{":status", "204"},
	{":status", "206"},
	{":status", "304"},
	{":status", "400"},
	{":status", "404"},
	{":status", "500"},
	{"accept-charset", ""},
	{"accept-encoding", "gzip, deflate"},
	{"accept-language", ""},
	{"accept-ranges", ""},
	{"accept", ""},
	{"access-control-allow-origin", ""},
	{"age", ""},
	{"allow", ""},
	{"authorization", ""},
	{"cache-control", ""},
	{"content-disposition", ""},
	{"content-encoding", ""},
	{"content-language", ""},
	{"content-length", ""},
	{"content-location", ""},
	{"content-range", ""},
	{"content-type", ""},
	{"cookie", ""},
	{"date", ""},
	{"etag", ""},
	{"expect", ""},
	{"expires", ""},
	{"from", ""},
	{"host", ""},
	{"if-match", ""},
	{"if-modified-since", ""},
	{"if-none-match", ""},
	{"if-range", ""},
	{"if-unmodified-since", ""},
	{"last-modified", ""},
	{"link", ""},
	{"location", ""},
	{"max-forwards", ""},
	{"proxy-authenticate", ""},
	{"proxy-authorization", ""},
	{"range", ""},
	{"referer", ""},
	{"refresh", ""},
	{"retry-after", ""},
	{"server", ""},
	{"set-cookie", ""},
	{"strict-transport-security", ""},
	{"transfer-encoding", ""},
	{"user-agent", ""},
	{"vary", ""},
	{"via", ""},
	{"www-authenticate", ""},
};

#define STATIC_COUNT 61
#define ENTRY_OVERHEAD 32 /* RFC 7541 section 4.1 */
/* Continuation bytes of an integer: five carry 35 bits, more than the 32
 * any length or index needs; a sixth is padding with zeros, refused. */
#define INT_MAX_SHIFT 28

enum state { ST_START, ST_INT, ST_STR_LEN, ST_STR };
enum kind { K_INDEXED, K_INCREMENTAL, K_LITERAL, K_SIZE };
/* what the integer being read is */
enum stage { STAGE_INDEX, STAGE_SIZE, STAGE_NAME_INDEX, STAGE_NAME_LEN, STAGE_VALUE_LEN };

void tl_hpack_init(struct tl_hpack *h, const struct tl_hpack_limits *lim)
{
	memset(h, 0, sizeof(*h));
	if (lim)
		h->lim = *lim;
	/* Below the protocol's default the table could not be followed at
	 * all: the encoder may fill 4096 bytes without asking. */
	if (!h->lim.cap)
		h->lim.cap = TL_HPACK_CAP_DEFAULT;
	if (h->lim.cap < TL_HPACK_DEFAULT_TABLE)
		h->lim.cap = TL_HPACK_DEFAULT_TABLE;
	if (!h->lim.list_bytes)
		h->lim.list_bytes = TL_HPACK_LIST_BYTES_DEFAULT;
	if (!h->lim.list_count)
		h->lim.list_count = TL_HPACK_LIST_COUNT_DEFAULT;
	h->limit = TL_HPACK_DEFAULT_TABLE;
	h->max_size = TL_HPACK_DEFAULT_TABLE;
}

static void evict_oldest(struct tl_hpack *h)
{
	struct tl_hpack_entry *e = h->ring[h->tail];

	h->size -= e->name_len + e->value_len + ENTRY_OVERHEAD;
	free(e);
	h->ring[h->tail] = NULL;
	h->tail = (h->tail + 1) % h->ring_cap;
	h->count--;
}

static void evict_to(struct tl_hpack *h, uint64_t max)
{
	while (h->count && h->size > max)
		evict_oldest(h);
}

void tl_hpack_free(struct tl_hpack *h)
{
	if (!h)
		return;
	while (h->count)
		evict_oldest(h);
	free(h->ring);
	free(h->fbuf);
	h->ring = NULL;
	h->fbuf = NULL;
	h->ring_cap = h->fcap = 0;
}

void tl_hpack_fail(struct tl_hpack *h)
{
	h->failed = true;
	/* The table is of no use any more: give its memory back. */
	while (h->count)
		evict_oldest(h);
}

void tl_hpack_set_limit(struct tl_hpack *h, uint32_t v)
{
	h->limit = v;
	if (h->max_size > v) {
		h->max_size = v;
		evict_to(h, v);
	}
}

void tl_hpack_block_begin(struct tl_hpack *h)
{
	h->at_start = true;
	h->in_block = true;
	h->list_cut = false;
	h->list_bytes = 0;
	h->list_count = 0;
	h->state = ST_START;
}

int tl_hpack_block_end(struct tl_hpack *h)
{
	h->in_block = false;
	if (h->failed)
		return -EPROTO;
	if (h->state != ST_START) {
		tl_hpack_fail(h);
		return -EPROTO;
	}
	return 0;
}

/* Dynamic index d (0 = newest). */
static const struct tl_hpack_entry *dyn(const struct tl_hpack *h, uint32_t d)
{
	return h->ring[(h->tail + h->count - 1 - d) % h->ring_cap];
}

static int lookup(const struct tl_hpack *h, uint32_t index, const char **name, size_t *name_len,
		  const char **value, size_t *value_len)
{
	if (index == 0)
		return -EPROTO;
	if (index <= STATIC_COUNT) {
		*name = static_table[index - 1].name;
		*name_len = strlen(*name);
		*value = static_table[index - 1].value;
		*value_len = strlen(*value);
		return 0;
	}
	if (index - STATIC_COUNT - 1 >= h->count)
		return -EPROTO;
	const struct tl_hpack_entry *e = dyn(h, index - STATIC_COUNT - 1);

	*name = e->data;
	*name_len = e->name_len;
	*value = e->data + e->name_len;
	*value_len = e->value_len;
	return 0;
}

/* Room for n more bytes of the field, up to the cap. */
static int reserve(struct tl_hpack *h, uint64_t n)
{
	uint64_t want = (uint64_t)h->name_kept + h->value_kept + n;
	uint32_t c;
	char *p;

	if (want > h->lim.cap)
		want = h->lim.cap;
	if (want <= h->fcap)
		return 0;
	c = h->fcap ? h->fcap : 128;
	while (c < want)
		c *= 2;
	if (c > h->lim.cap)
		c = h->lim.cap;
	p = realloc(h->fbuf, c);
	if (!p)
		return -ENOMEM;
	h->fbuf = p;
	h->fcap = c;
	return 0;
}

/* A list keeps at most list_count fields of list_bytes, counted as
 * SETTINGS_MAX_HEADER_LIST_SIZE counts (name + value + 32). */
static bool list_admit(struct tl_hpack *h, uint64_t name_len, uint64_t value_len)
{
	h->list_bytes += name_len + value_len + ENTRY_OVERHEAD;
	h->list_count++;
	if (h->list_bytes > h->lim.list_bytes || h->list_count > h->lim.list_count)
		h->list_cut = true;
	return !h->list_cut;
}

static int insert(struct tl_hpack *h, const char *name, uint32_t name_len, const char *value,
		  uint32_t value_len)
{
	uint64_t esize = (uint64_t)name_len + value_len + ENTRY_OVERHEAD;
	struct tl_hpack_entry *e;

	/* An entry larger than the table empties it (section 4.4). */
	if (esize > h->max_size) {
		evict_to(h, 0);
		return 0;
	}
	evict_to(h, h->max_size - esize);
	if (h->count == h->ring_cap) {
		uint32_t nc = h->ring_cap ? h->ring_cap * 2 : 16;
		struct tl_hpack_entry **r = calloc(nc, sizeof(*r));

		if (!r)
			return -ENOMEM;
		for (uint32_t i = 0; i < h->count; i++)
			r[i] = h->ring[(h->tail + i) % h->ring_cap];
		free(h->ring);
		h->ring = r;
		h->ring_cap = nc;
		h->tail = 0;
	}
	e = malloc(sizeof(*e) + name_len + value_len);
	if (!e)
		return -ENOMEM;
	e->name_len = name_len;
	e->value_len = value_len;
	memcpy(e->data, name, name_len);
	memcpy(e->data + name_len, value, value_len);
	h->ring[(h->tail + h->count) % h->ring_cap] = e;
	h->count++;
	h->size += (uint32_t)esize;
	return 0;
}

static int emit(struct tl_hpack *h, const struct tl_hpack_field *f, tl_hpack_field_cb cb, void *ud)
{
	if (!list_admit(h, f->name_len, f->value_len) || !cb)
		return 0;
	return cb(ud, f);
}

/* The literal field in fbuf is complete. */
static int field_done(struct tl_hpack *h, tl_hpack_field_cb cb, void *ud)
{
	struct tl_hpack_field f = {
		.name = h->fbuf,
		.name_len = h->name_kept,
		.value = h->fbuf ? h->fbuf + h->name_kept : "",
		.value_len = h->value_kept,
		.cut = h->name_kept < h->name_len || h->value_kept < h->value_len,
	};
	int r;

	if (!f.name)
		f.name = "";
	r = emit(h, &f, cb, ud);
	if (r < 0)
		return r;
	if (h->kind != K_INCREMENTAL)
		return 0;
	if (f.cut) {
		/* Longer than the cap, so longer than the table: it empties it. */
		evict_to(h, 0);
		return 0;
	}
	return insert(h, f.name, (uint32_t)f.name_len, f.value, (uint32_t)f.value_len);
}

static int int_done(struct tl_hpack *h, uint32_t v, tl_hpack_field_cb cb, void *ud)
{
	const char *name, *value;
	size_t nl, vl;
	int r;

	switch (h->stage) {
	case STAGE_INDEX: {
		struct tl_hpack_field f;

		if (lookup(h, v, &name, &nl, &value, &vl) < 0)
			return -EPROTO;
		f = (struct tl_hpack_field){name, nl, value, vl, false};
		h->state = ST_START;
		return emit(h, &f, cb, ud);
	}
	case STAGE_SIZE:
		if (!h->at_start || v > h->limit)
			return -EPROTO;
		if (v > h->lim.cap)
			return -E2BIG;
		h->max_size = v;
		evict_to(h, v);
		h->state = ST_START;
		return 0;
	case STAGE_NAME_INDEX:
		h->name_kept = h->value_kept = 0;
		h->name_len = h->value_len = 0;
		if (v == 0) {
			h->stage = STAGE_NAME_LEN;
			h->state = ST_STR_LEN;
			return 0;
		}
		if (lookup(h, v, &name, &nl, &value, &vl) < 0)
			return -EPROTO;
		r = reserve(h, nl);
		if (r < 0)
			return r;
		h->name_len = nl;
		h->name_kept = (uint32_t)(nl < h->fcap ? nl : h->fcap);
		/* (an entry with an empty name leaves the field's buffer
		 * unallocated: nothing to copy) */
		if (h->name_kept)
			memcpy(h->fbuf, name, h->name_kept);
		h->stage = STAGE_VALUE_LEN;
		h->state = ST_STR_LEN;
		return 0;
	case STAGE_NAME_LEN:
	case STAGE_VALUE_LEN:
		h->str_left = v;
		tl_huff_init(&h->hs);
		h->state = ST_STR;
		return 0;
	}
	return -EPROTO;
}

/* The first byte of an integer with an n-bit prefix. */
static int int_start(struct tl_hpack *h, uint8_t b, unsigned n, tl_hpack_field_cb cb, void *ud)
{
	uint32_t mask = (1u << n) - 1;

	if ((b & mask) < mask)
		return int_done(h, b & mask, cb, ud);
	h->ival = mask;
	h->ibits = 0;
	h->state = ST_INT;
	return 0;
}

static int int_more(struct tl_hpack *h, uint8_t b, tl_hpack_field_cb cb, void *ud)
{
	uint64_t v;

	if (h->ibits > INT_MAX_SHIFT)
		return -EPROTO;
	v = h->ival + ((uint64_t)(b & 0x7f) << h->ibits);
	if (v > UINT32_MAX)
		return -EPROTO;
	h->ival = (uint32_t)v;
	h->ibits += 7;
	if (b & 0x80)
		return 0;
	return int_done(h, h->ival, cb, ud);
}

/* String bytes: up to h->str_left of them from p. Returns the bytes used
 * or a negative errno. */
static long str_bytes(struct tl_hpack *h, const uint8_t *p, size_t n, tl_hpack_field_cb cb,
		      void *ud)
{
	bool is_name = h->stage == STAGE_NAME_LEN;
	uint64_t *full = is_name ? &h->name_len : &h->value_len;
	uint32_t *kept = is_name ? &h->name_kept : &h->value_kept;
	size_t m = n < h->str_left ? n : h->str_left;
	uint32_t base = is_name ? 0 : h->name_kept;
	int r;

	/* Huffman: at most 8 symbols per 5 bits. */
	r = reserve(h, h->huff ? (uint64_t)m * 8 / 5 + 1 : m);
	if (r < 0)
		return r;
	if (h->huff) {
		size_t len = *full;

		r = tl_huff_decode(&h->hs, p, m, (uint8_t *)h->fbuf + base, h->fcap - base, &len);
		if (r < 0)
			return r;
		*full = len;
	} else {
		size_t room = h->fcap - base - *kept, c = m < room ? m : room;

		if (c)
			memcpy(h->fbuf + base + *kept, p, c);
		*full += m;
	}
	*kept = (uint32_t)(*full < h->fcap - base ? *full : h->fcap - base);
	h->str_left -= (uint32_t)m;
	if (h->str_left)
		return (long)m;
	if (h->huff && tl_huff_finish(&h->hs) < 0)
		return -EPROTO;
	if (is_name) {
		h->stage = STAGE_VALUE_LEN;
		h->state = ST_STR_LEN;
		return (long)m;
	}
	h->state = ST_START;
	r = field_done(h, cb, ud);
	return r < 0 ? r : (long)m;
}

static int start(struct tl_hpack *h, uint8_t b, tl_hpack_field_cb cb, void *ud)
{
	if (b & 0x80) {
		h->kind = K_INDEXED;
		h->stage = STAGE_INDEX;
		h->at_start = false;
		return int_start(h, b, 7, cb, ud);
	}
	if ((b & 0xe0) == 0x20) {
		h->kind = K_SIZE;
		h->stage = STAGE_SIZE;
		return int_start(h, b, 5, cb, ud);
	}
	h->at_start = false;
	h->stage = STAGE_NAME_INDEX;
	if (b & 0x40) {
		h->kind = K_INCREMENTAL;
		return int_start(h, b, 6, cb, ud);
	}
	/* without indexing (0000) or never indexed (0001) */
	h->kind = K_LITERAL;
	return int_start(h, b, 4, cb, ud);
}

int tl_hpack_feed(struct tl_hpack *h, const uint8_t *buf, size_t len, tl_hpack_field_cb cb,
		  void *userdata)
{
	size_t i = 0;
	int r = 0;

	if (h->failed)
		return -EPROTO;
	while (i < len && r == 0) {
		uint8_t b = buf[i];

		switch (h->state) {
		case ST_START:
			i++;
			r = start(h, b, cb, userdata);
			break;
		case ST_INT:
			i++;
			r = int_more(h, b, cb, userdata);
			break;
		case ST_STR_LEN:
			i++;
			h->huff = b & 0x80;
			r = int_start(h, b, 7, cb, userdata);
			break;
		case ST_STR: {
			long k = str_bytes(h, buf + i, len - i, cb, userdata);

			if (k < 0)
				r = (int)k;
			else
				i += (size_t)k;
			break;
		}
		default:
			r = -EPROTO;
		}
	}
	/* A zero-length string completes as soon as its length is read. */
	while (r == 0 && h->state == ST_STR && h->str_left == 0) {
		long k = str_bytes(h, buf, 0, cb, userdata);

		if (k < 0)
			r = (int)k;
	}
	if (r < 0)
		tl_hpack_fail(h);
	return r;
}

size_t tl_hpack_put_int(uint8_t *out, size_t cap, uint8_t flags, unsigned prefix_bits, uint32_t v)
{
	uint32_t mask = (1u << prefix_bits) - 1;
	size_t k = 0;

	if (cap == 0)
		return 0;
	if (v < mask) {
		out[0] = (uint8_t)(flags | v);
		return 1;
	}
	out[k++] = (uint8_t)(flags | mask);
	v -= mask;
	while (v >= 0x80) {
		if (k >= cap)
			return 0;
		out[k++] = (uint8_t)(0x80 | (v & 0x7f));
		v >>= 7;
	}
	if (k >= cap)
		return 0;
	out[k++] = (uint8_t)v;
	return k;
}

size_t tl_hpack_put_str(uint8_t *out, size_t cap, const char *s, size_t n, bool huffman)
{
	size_t len = huffman ? tl_huff_encoded_len((const uint8_t *)s, n) : n;
	size_t k = tl_hpack_put_int(out, cap, huffman ? 0x80 : 0, 7, (uint32_t)len);

	if (!k || cap - k < len)
		return 0;
	if (huffman)
		tl_huff_encode((const uint8_t *)s, n, out + k, cap - k);
	else
		memcpy(out + k, s, n);
	return k + len;
}
