/* SPDX-License-Identifier: Apache-2.0 */
/* HPACK decoding (daemon/capture/hpack.c, hpack-huffman.c): the examples of
 * RFC 7541 Appendix C with the dynamic table after each block, each block
 * also split at every byte offset and fed a byte at a time; integers at
 * their edges; hostile blocks (size updates, indices, Huffman padding,
 * oversized fields and lists). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpack.h"
#include "../check-run.h"

#define MAX_FIELDS 400
#define KEEP 256

struct got_field {
	char name[KEEP], value[KEEP];
	size_t name_len, value_len;
	bool cut;
};

struct got {
	struct got_field f[MAX_FIELDS];
	unsigned n;
	int stop_at; /* callback returns -EINTR at this field; -1 never */
};

static int on_field(void *ud, const struct tl_hpack_field *f)
{
	struct got *g = ud;
	struct got_field *x;

	if (g->stop_at >= 0 && g->n == (unsigned)g->stop_at)
		return -EINTR;
	ck_assert_uint_lt(g->n, MAX_FIELDS);
	x = &g->f[g->n++];
	x->name_len = f->name_len;
	x->value_len = f->value_len;
	x->cut = f->cut;
	memcpy(x->name, f->name, f->name_len < KEEP - 1 ? f->name_len : KEEP - 1);
	x->name[f->name_len < KEEP - 1 ? f->name_len : KEEP - 1] = 0;
	memcpy(x->value, f->value, f->value_len < KEEP - 1 ? f->value_len : KEEP - 1);
	x->value[f->value_len < KEEP - 1 ? f->value_len : KEEP - 1] = 0;
	return 0;
}

static void got_init(struct got *g)
{
	memset(g, 0, sizeof(*g));
	g->stop_at = -1;
}

/* "8286 84be ..." -> bytes; returns the length. */
static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;

	for (; *s; s++) {
		int v;

		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else
			continue;
		if (hi < 0) {
			hi = v;
			continue;
		}
		ck_assert_uint_lt(n, cap);
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	ck_assert_int_eq(hi, -1);
	return n;
}

/* One block in pieces: split points (ascending, 0..len), n of them. */
static int decode_split(struct tl_hpack *h, const uint8_t *b, size_t len, const size_t *cuts,
			size_t ncuts, struct got *g)
{
	size_t at = 0;
	int r;

	tl_hpack_block_begin(h);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		r = tl_hpack_feed(h, b + at, end - at, on_field, g);
		if (r < 0)
			return r;
		at = end;
	}
	return tl_hpack_block_end(h);
}

static int decode(struct tl_hpack *h, const uint8_t *b, size_t len, struct got *g)
{
	return decode_split(h, b, len, NULL, 0, g);
}

/* ---- RFC 7541 Appendix C ---- */

struct entry {
	const char *name, *value;
};

struct block {
	const char *hex;
	struct entry fields[8];
	struct entry table[8]; /* newest first */
	uint32_t size;
};

struct sequence {
	const char *name;
	uint32_t limit; /* SETTINGS_HEADER_TABLE_SIZE; 0: the default */
	struct block b[3];
	int n;
};

#define DATE1 "Mon, 21 Oct 2013 20:13:21 GMT"
#define DATE2 "Mon, 21 Oct 2013 20:13:22 GMT"
#define COOKIE "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
#define REQ1 {":method", "GET"}, {":scheme", "http"}, {":path", "/"}, {":authority", "www.example.com"}
#define REQ2 REQ1, {"cache-control", "no-cache"}
#define REQ3                                                                              \
	{":method", "GET"}, {":scheme", "https"}, {":path", "/index.html"},              \
		{":authority", "www.example.com"}, {"custom-key", "custom-value"}
#define REQ_T1 {{":authority", "www.example.com"}}
#define REQ_T2 {{"cache-control", "no-cache"}, {":authority", "www.example.com"}}
#define REQ_T3 {{"custom-key", "custom-value"}, {"cache-control", "no-cache"}, {":authority", "www.example.com"}}
#define RESP1 {":status", "302"}, {"cache-control", "private"}, {"date", DATE1}, {"location", "https://www.example.com"}
#define RESP2 {":status", "307"}, {"cache-control", "private"}, {"date", DATE1}, {"location", "https://www.example.com"}
#define RESP3                                                                              \
	{":status", "200"}, {"cache-control", "private"}, {"date", DATE2},                \
		{"location", "https://www.example.com"}, {"content-encoding", "gzip"},     \
		{"set-cookie", COOKIE}
#define RESP_T1 {{"location", "https://www.example.com"}, {"date", DATE1}, {"cache-control", "private"}, {":status", "302"}}
#define RESP_T2 {{":status", "307"}, {"location", "https://www.example.com"}, {"date", DATE1}, {"cache-control", "private"}}
#define RESP_T3 {{"set-cookie", COOKIE}, {"content-encoding", "gzip"}, {"date", DATE2}}

static const struct sequence seqs[] = {
	{"C.2.1 literal with indexing", 0,
	 {{"400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572",
	   {{"custom-key", "custom-header"}}, {{"custom-key", "custom-header"}}, 55}}, 1},
	{"C.2.2 literal without indexing", 0,
	 {{"040c 2f73 616d 706c 652f 7061 7468", {{":path", "/sample/path"}}, {{0}}, 0}}, 1},
	{"C.2.3 literal never indexed", 0,
	 {{"1008 7061 7373 776f 7264 0673 6563 7265 74", {{"password", "secret"}}, {{0}}, 0}}, 1},
	{"C.2.4 indexed", 0, {{"82", {{":method", "GET"}}, {{0}}, 0}}, 1},
	{"C.3 requests", 0,
	 {{"8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d", {REQ1}, REQ_T1, 57},
	  {"8286 84be 5808 6e6f 2d63 6163 6865", {REQ2}, REQ_T2, 110},
	  {"8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65", {REQ3},
	   REQ_T3, 164}},
	 3},
	{"C.4 requests, Huffman", 0,
	 {{"8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff", {REQ1}, REQ_T1, 57},
	  {"8286 84be 5886 a8eb 1064 9cbf", {REQ2}, REQ_T2, 110},
	  {"8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf", {REQ3}, REQ_T3, 164}},
	 3},
	{"C.5 responses, table 256", 256,
	 {{"4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 "
	   "303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 "
	   "6f6d",
	   {RESP1}, RESP_T1, 222},
	  {"4803 3330 37c1 c0bf", {RESP2}, RESP_T2, 222},
	  {"88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 "
	   "5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 "
	   "5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31",
	   {RESP3}, RESP_T3, 215}},
	 3},
	{"C.6 responses, Huffman, table 256", 256,
	 {{"4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b "
	   "ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
	   {RESP1}, RESP_T1, 222},
	  {"4883 640e ffc1 c0bf", {RESP2}, RESP_T2, 222},
	  {"88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad "
	   "94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 "
	   "65c0 03ed 4ee5 b106 3d50 07",
	   {RESP3}, RESP_T3, 215}},
	 3},
};

static unsigned count_entries(const struct entry *e, unsigned max)
{
	unsigned n = 0;

	while (n < max && e[n].name)
		n++;
	return n;
}

static void check_fields(const struct got *g, const struct entry *want, const char *what)
{
	unsigned n = count_entries(want, 8);

	ck_assert_msg(g->n == n, "%s: %u fields, want %u", what, g->n, n);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_msg(strcmp(g->f[i].name, want[i].name) == 0 &&
				      strcmp(g->f[i].value, want[i].value) == 0 && !g->f[i].cut,
			      "%s: field %u is %s: %s, want %s: %s", what, i, g->f[i].name,
			      g->f[i].value, want[i].name, want[i].value);
	}
}

/* The dynamic table, read back through indexed fields 62.. (which change
 * nothing), newest first, and its size. */
static void check_table(struct tl_hpack *h, const struct entry *want, uint32_t size,
			const char *what)
{
	unsigned n = count_entries(want, 8);
	uint8_t b[8];
	static struct got g;

	ck_assert_msg(h->count == n, "%s: %u entries, want %u", what, h->count, n);
	ck_assert_msg(h->size == size, "%s: table size %u, want %u", what, h->size, size);
	for (unsigned i = 0; i < n; i++) {
		size_t k = tl_hpack_put_int(b, sizeof(b), 0x80, 7, 62 + i);

		got_init(&g);
		ck_assert_int_eq(decode(h, b, k, &g), 0);
		ck_assert_uint_eq(g.n, 1);
		ck_assert_msg(strcmp(g.f[0].name, want[i].name) == 0 &&
				      strcmp(g.f[0].value, want[i].value) == 0,
			      "%s: entry %u is %s: %s, want %s: %s", what, 62 + i, g.f[0].name,
			      g.f[0].value, want[i].name, want[i].value);
	}
}

/* mode 0: whole blocks; 1: every block split at offset `cut` (when
 * inside it); 2: a byte at a time */
static void run_sequence(const struct sequence *s, int mode, size_t cut)
{
	struct tl_hpack h;
	static struct got g;

	tl_hpack_init(&h, NULL);
	if (s->limit)
		tl_hpack_set_limit(&h, s->limit);
	for (int i = 0; i < s->n; i++) {
		uint8_t b[256];
		size_t len = unhex(s->b[i].hex, b, sizeof(b)), cuts[256];
		size_t ncuts = 0;
		char what[128];

		if (mode == 1 && cut < len)
			cuts[ncuts++] = cut;
		if (mode == 2)
			for (size_t k = 1; k < len; k++)
				cuts[ncuts++] = k;
		snprintf(what, sizeof(what), "%s, block %d, mode %d cut %zu", s->name, i + 1, mode, cut);
		got_init(&g);
		ck_assert_msg(decode_split(&h, b, len, cuts, ncuts, &g) == 0, "%s: error", what);
		check_fields(&g, s->b[i].fields, what);
		check_table(&h, s->b[i].table, s->b[i].size, what);
	}
	ck_assert(!tl_hpack_failed(&h));
	tl_hpack_free(&h);
}

START_TEST(test_rfc_examples)
{
	const struct sequence *s = &seqs[_i];

	run_sequence(s, 0, 0);
	run_sequence(s, 2, 0);
	for (size_t cut = 0; cut <= 120; cut++)
		run_sequence(s, 1, cut);
}
END_TEST

/* ---- integers (RFC 7541 section 5.1, Appendix C.1) ---- */

START_TEST(test_integers)
{
	uint8_t b[16];
	size_t k;
	struct tl_hpack h;
	static struct got g;

	/* C.1.1, C.1.2, C.1.3 */
	ck_assert_uint_eq(tl_hpack_put_int(b, sizeof(b), 0, 5, 10), 1);
	ck_assert_uint_eq(b[0], 0x0a);
	ck_assert_uint_eq(tl_hpack_put_int(b, sizeof(b), 0, 5, 1337), 3);
	ck_assert(b[0] == 0x1f && b[1] == 0x9a && b[2] == 0x0a);
	ck_assert_uint_eq(tl_hpack_put_int(b, sizeof(b), 0, 8, 42), 1);
	ck_assert_uint_eq(b[0], 42);
	/* the prefix's all-ones value takes a zero continuation byte */
	ck_assert_uint_eq(tl_hpack_put_int(b, sizeof(b), 0x80, 7, 127), 2);
	ck_assert(b[0] == 0xff && b[1] == 0x00);
	ck_assert_uint_eq(tl_hpack_put_int(b, 1, 0, 5, 1337), 0);

	/* a name of 300 bytes: a length past the 7-bit prefix */
	{
		uint8_t blk[400];
		char name[300];

		memset(name, 'n', sizeof(name));
		blk[0] = 0x00;
		k = 1 + tl_hpack_put_str(blk + 1, sizeof(blk) - 1, name, sizeof(name), false);
		ck_assert(blk[1] == 0x7f && blk[2] == 0xad && blk[3] == 0x01);
		k += tl_hpack_put_str(blk + k, sizeof(blk) - k, "v", 1, false);
		tl_hpack_init(&h, NULL);
		got_init(&g);
		ck_assert_int_eq(decode(&h, blk, k, &g), 0);
		ck_assert_uint_eq(g.n, 1);
		ck_assert_uint_eq(g.f[0].name_len, 300);
		ck_assert_str_eq(g.f[0].value, "v");
		tl_hpack_free(&h);
	}
	/* a size update of 4096 as 3 bytes, and with zero continuation
	 * bytes up to five (35 bits: accepted), six refused */
	{
		static const char *const ok[] = {"3fe11f", "3fe19f8080 00", "20", "3f00"};
		static const uint32_t ok_v[] = {4096, 4096, 0, 31};

		for (unsigned i = 0; i < 4; i++) {
			size_t n = unhex(ok[i], b, sizeof(b));

			tl_hpack_init(&h, NULL);
			got_init(&g);
			ck_assert_msg(decode(&h, b, n, &g) == 0, "size update %s", ok[i]);
			ck_assert_uint_eq(h.max_size, ok_v[i]);
			ck_assert_uint_eq(g.n, 0);
			tl_hpack_free(&h);
		}
		k = unhex("3fe19f80808000", b, sizeof(b));
		tl_hpack_init(&h, NULL);
		ck_assert_int_eq(decode(&h, b, k, &g), -EPROTO);
		ck_assert(tl_hpack_failed(&h));
		tl_hpack_free(&h);
	}
	/* past 32 bits: 31 + 2^32 - 1 */
	k = unhex("3fffffffff0f", b, sizeof(b));
	tl_hpack_init(&h, NULL);
	tl_hpack_set_limit(&h, UINT32_MAX);
	ck_assert_int_eq(decode(&h, b, k, &g), -EPROTO);
	tl_hpack_free(&h);
	/* exactly 2^32 - 1 is an integer; as a size update beyond the cap
	 * it is not followed (-E2BIG), not a protocol error */
	k = unhex("3fe0ffffff0f", b, sizeof(b));
	tl_hpack_init(&h, NULL);
	tl_hpack_set_limit(&h, UINT32_MAX);
	ck_assert_int_eq(decode(&h, b, k, &g), -E2BIG);
	ck_assert(tl_hpack_failed(&h));
	tl_hpack_free(&h);
	/* an index given as 2^32 - 1 is past every table */
	k = unhex("ff80ffffff0f", b, sizeof(b));
	tl_hpack_init(&h, NULL);
	ck_assert_int_eq(decode(&h, b, k, &g), -EPROTO);
	tl_hpack_free(&h);
}
END_TEST

/* ---- hostile blocks ---- */

struct bad {
	const char *name, *hex;
	int ret;
	unsigned fields; /* handed over before the error */
};

static const struct bad bads[] = {
	{"size update beyond the default limit", "3fe21f", -EPROTO, 0},
	{"size update after a field", "8220", -EPROTO, 1},
	{"index 0", "80", -EPROTO, 0},
	{"index past the static table, empty dynamic", "be", -EPROTO, 0},
	{"name index past the table", "7e0161", -EPROTO, 0},
	{"name index past the table (without indexing)", "0f2f0161", -EPROTO, 0},
	{"Huffman EOS inside a string", "0084ffffffff0161", -EPROTO, 0},
	{"Huffman padding longer than 7 bits ('a', 11 ones)", "00821fff0161", -EPROTO, 0},
	{"Huffman padding of zeros ('a', 000)", "0081180161", -EPROTO, 0},
	{"Huffman padding mixed ('a', 101)", "00811d0161", -EPROTO, 0},
	{"Huffman a whole byte of padding, empty string", "0081ff0161", -EPROTO, 0},
	{"block ends inside a name", "400a6375", -EPROTO, 0},
	{"block ends inside an integer", "3fe1", -EPROTO, 0},
	{"block ends after a name", "0001610a", -EPROTO, 0},
};

START_TEST(test_hostile)
{
	const struct bad *x = &bads[_i];
	uint8_t b[64];
	size_t n = unhex(x->hex, b, sizeof(b));

	for (size_t cut = 0; cut <= n; cut++) {
		struct tl_hpack h;
		static struct got g;
		int r;

		tl_hpack_init(&h, NULL);
		got_init(&g);
		r = decode_split(&h, b, n, &cut, cut < n ? 1 : 0, &g);
		ck_assert_msg(r == x->ret, "%s (cut %zu): %d, want %d", x->name, cut, r, x->ret);
		ck_assert_msg(g.n == x->fields, "%s: %u fields", x->name, g.n);
		ck_assert(tl_hpack_failed(&h));
		/* failed for good: even a valid block is refused */
		tl_hpack_block_begin(&h);
		ck_assert_int_eq(tl_hpack_feed(&h, (const uint8_t *)"\x82", 1, on_field, &g), -EPROTO);
		ck_assert_int_eq(tl_hpack_block_end(&h), -EPROTO);
		ck_assert_uint_eq(h.count, 0);
		tl_hpack_free(&h);
	}
}
END_TEST

START_TEST(test_huffman_padding_valid)
{
	/* "aaaaa": 25 bits, 7 bits of padding (the most allowed); "a": 3 */
	uint8_t b[16], blk[32];
	size_t n = tl_huff_encode((const uint8_t *)"aaaaa", 5, b, sizeof(b)), k;
	struct tl_hpack h;
	static struct got g;

	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(b[3] & 0x7f, 0x7f);
	blk[0] = 0x00;
	k = 1 + tl_hpack_put_str(blk + 1, sizeof(blk) - 1, "aaaaa", 5, true);
	k += tl_hpack_put_str(blk + k, sizeof(blk) - k, "a", 1, true);
	ck_assert_uint_eq(blk[k - 1], 0x1f);
	tl_hpack_init(&h, NULL);
	got_init(&g);
	ck_assert_int_eq(decode(&h, blk, k, &g), 0);
	ck_assert_uint_eq(g.n, 1);
	ck_assert_str_eq(g.f[0].name, "aaaaa");
	ck_assert_str_eq(g.f[0].value, "a");
	tl_hpack_free(&h);
}
END_TEST

START_TEST(test_huffman_all_symbols)
{
	/* every byte value, encoded and decoded in pieces of every size */
	uint8_t in[256], enc[1024], out[256];

	for (int i = 0; i < 256; i++)
		in[i] = (uint8_t)(255 - i);
	size_t n = tl_huff_encode(in, sizeof(in), enc, sizeof(enc));

	ck_assert_uint_eq(n, tl_huff_encoded_len(in, sizeof(in)));
	ck_assert_uint_eq(tl_huff_encode(in, sizeof(in), enc, n - 1), 0);
	for (size_t piece = 1; piece <= 13; piece++) {
		struct tl_huff_state s;
		size_t len = 0;

		tl_huff_init(&s);
		for (size_t at = 0; at < n; at += piece)
			ck_assert_int_eq(tl_huff_decode(&s, enc + at, n - at < piece ? n - at : piece,
							out, sizeof(out), &len),
					 0);
		ck_assert_int_eq(tl_huff_finish(&s), 0);
		ck_assert_uint_eq(len, 256);
		ck_assert_mem_eq(out, in, 256);
	}
	/* past cap: counted, not written */
	{
		struct tl_huff_state s;
		size_t len = 0;

		memset(out, 0, sizeof(out));
		tl_huff_init(&s);
		ck_assert_int_eq(tl_huff_decode(&s, enc, n, out, 10, &len), 0);
		ck_assert_uint_eq(len, 256);
		ck_assert_mem_eq(out, in, 10);
		ck_assert_uint_eq(out[10], 0);
	}
	/* the RFC's "www.example.com" */
	n = tl_huff_encode((const uint8_t *)"www.example.com", 15, enc, sizeof(enc));
	ck_assert_uint_eq(n, 12);
	ck_assert_mem_eq(enc, "\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90\xf4\xff", 12);
}
END_TEST

START_TEST(test_size_updates)
{
	struct tl_hpack h;
	static struct got g;
	uint8_t b[256];
	size_t n;

	/* C.3's table, then the decoding side lowers its limit to 100:
	 * the oldest entries go at once */
	tl_hpack_init(&h, NULL);
	for (int i = 0; i < 3; i++) {
		n = unhex(seqs[4].b[i].hex, b, sizeof(b));
		got_init(&g);
		ck_assert_int_eq(decode(&h, b, n, &g), 0);
	}
	ck_assert_uint_eq(h.size, 164);
	tl_hpack_set_limit(&h, 100);
	ck_assert_uint_eq(h.count, 1);
	ck_assert_uint_eq(h.size, 54);
	check_table(&h, (const struct entry[]){{"custom-key", "custom-value"}, {0}}, 54, "limit 100");
	/* the encoder's update to 100 is now the most it may say */
	n = unhex("3f45", b, sizeof(b)); /* 31 + 69 = 100 */
	got_init(&g);
	ck_assert_int_eq(decode(&h, b, n, &g), 0);
	ck_assert_uint_eq(h.max_size, 100);
	/* two updates in a row (0 then 60) empty the table first */
	n = unhex("20 3f1d 82", b, sizeof(b)); /* 0, 31 + 29 = 60, :method GET */
	got_init(&g);
	ck_assert_int_eq(decode(&h, b, n, &g), 0);
	ck_assert_uint_eq(h.count, 0);
	ck_assert_uint_eq(h.max_size, 60);
	ck_assert_uint_eq(g.n, 1);
	/* an entry larger than the table empties it and is not added */
	n = unhex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572", b, sizeof(b));
	got_init(&g);
	ck_assert_int_eq(decode(&h, b, n, &g), 0);
	ck_assert_uint_eq(h.count, 1); /* 55 <= 60 */
	n = unhex("4003 6162 6314 3031 3233 3435 3637 3839 3031 3233 3435 3637 3839", b, sizeof(b));
	got_init(&g);
	ck_assert_int_eq(decode(&h, b, n, &g), 0); /* 3 + 20 + 32 = 55: fits, evicts the first */
	check_table(&h, (const struct entry[]){{"abc", "01234567890123456789"}, {0}}, 55, "evict");
	n = unhex("4004 6162 6364 1430 3132 3334 3536 3738 3930 3132 3334 3536 3738 39", b, sizeof(b));
	got_init(&g);
	ck_assert_int_eq(decode(&h, b, n, &g), 0); /* 4 + 20 + 32 = 56: evicts "abc" */
	ck_assert_uint_eq(h.count, 1);
	ck_assert_uint_eq(h.size, 56);
	/* 26 + 1 + 32 = 59 fits; 27 + 2 + 32 = 61 is larger than the table:
	 * it empties it and is not added */
	{
		uint8_t blk[64];
		size_t k;

		blk[0] = 0x40;
		k = 1 + tl_hpack_put_str(blk + 1, 63, "abcdefghijklmnopqrstuvwxyz", 26, false);
		k += tl_hpack_put_str(blk + k, sizeof(blk) - k, "1", 1, false);
		got_init(&g);
		ck_assert_int_eq(decode(&h, blk, k, &g), 0);
		check_table(&h, (const struct entry[]){{"abcdefghijklmnopqrstuvwxyz", "1"}, {0}}, 59, "59");
		blk[0] = 0x40;
		k = 1 + tl_hpack_put_str(blk + 1, 63, "abcdefghijklmnopqrstuvwxyz0", 27, false);
		k += tl_hpack_put_str(blk + k, sizeof(blk) - k, "12", 2, false);
		got_init(&g);
		ck_assert_int_eq(decode(&h, blk, k, &g), 0);
		ck_assert_uint_eq(g.n, 1);
		ck_assert_str_eq(g.f[0].name, "abcdefghijklmnopqrstuvwxyz0");
		ck_assert_uint_eq(h.count, 0);
		ck_assert_uint_eq(h.size, 0);
	}
	tl_hpack_free(&h);

	/* a limit above the default, raised before the encoder uses it;
	 * beyond the cap the table is not followed */
	tl_hpack_init(&h, &(struct tl_hpack_limits){.cap = 8192});
	tl_hpack_set_limit(&h, 65536);
	n = unhex("3fe13f", b, sizeof(b)); /* 31 + 0x61 + (0x3f << 7) = 8192 */
	got_init(&g);
	ck_assert_int_eq(decode(&h, b, n, &g), 0);
	ck_assert_uint_eq(h.max_size, 8192);
	n = unhex("3fe23f", b, sizeof(b)); /* 8193 */
	ck_assert_int_eq(decode(&h, b, n, &g), -E2BIG);
	ck_assert(tl_hpack_failed(&h));
	tl_hpack_free(&h);

	/* a cap below the protocol's default is raised to it */
	tl_hpack_init(&h, &(struct tl_hpack_limits){.cap = 100});
	ck_assert_uint_eq(h.lim.cap, TL_HPACK_DEFAULT_TABLE);
	ck_assert_uint_eq(h.lim.list_bytes, TL_HPACK_LIST_BYTES_DEFAULT);
	ck_assert_uint_eq(h.lim.list_count, TL_HPACK_LIST_COUNT_DEFAULT);
	tl_hpack_free(&h);
}
END_TEST

/* A field longer than the cap is handed over cut to it, and as an
 * incremental entry it empties the table. */
START_TEST(test_field_bounds)
{
	static uint8_t blk[TL_HPACK_CAP_DEFAULT * 2 + 64];
	static char big[TL_HPACK_CAP_DEFAULT + 4000];
	struct tl_hpack h;
	static struct got g;
	size_t k;

	memset(big, 'v', sizeof(big));
	tl_hpack_init(&h, NULL);
	/* one small entry first */
	k = unhex("400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572", blk, 64);
	got_init(&g);
	ck_assert_int_eq(decode(&h, blk, k, &g), 0);
	ck_assert_uint_eq(h.count, 1);
	for (int huff = 0; huff < 2; huff++) {
		blk[0] = 0x40;
		k = 1 + tl_hpack_put_str(blk + 1, sizeof(blk) - 1, "x-big", 5, false);
		k += tl_hpack_put_str(blk + k, sizeof(blk) - k, big, sizeof(big), huff);
		ck_assert_uint_gt(k, 100);
		got_init(&g);
		/* in pieces of 1000: the field buffer grows as it goes */
		{
			size_t cuts[64], nc = 0;

			for (size_t at = 1000; at < k; at += 1000)
				cuts[nc++] = at;
			ck_assert_int_eq(decode_split(&h, blk, k, cuts, nc, &g), 0);
		}
		ck_assert_uint_eq(g.n, 1);
		ck_assert(g.f[0].cut);
		ck_assert_str_eq(g.f[0].name, "x-big");
		ck_assert_uint_eq(g.f[0].value_len, TL_HPACK_CAP_DEFAULT - 5);
		ck_assert_uint_eq(g.f[0].value[0], 'v');
		ck_assert_uint_eq(h.count, 0);
		ck_assert_uint_eq(h.size, 0);
		ck_assert(!tl_hpack_failed(&h));
	}
	/* the decoder goes on: an indexed static field */
	got_init(&g);
	ck_assert_int_eq(decode(&h, (const uint8_t *)"\x82", 1, &g), 0);
	ck_assert_str_eq(g.f[0].value, "GET");
	tl_hpack_free(&h);
}
END_TEST

START_TEST(test_list_bounds)
{
	static uint8_t blk[8192];
	static char v[4000];
	struct tl_hpack h;
	static struct got g;
	size_t k = 0;

	/* more fields than list_count: the first 256 are handed over, the
	 * rest still decoded (the table follows) */
	tl_hpack_init(&h, NULL);
	for (int i = 0; i < 300; i++)
		blk[k++] = 0x82;
	/* then an entry added past the bound: in the table all the same */
	blk[k++] = 0x40;
	k += tl_hpack_put_str(blk + k, sizeof(blk) - k, "late", 4, false);
	k += tl_hpack_put_str(blk + k, sizeof(blk) - k, "1", 1, false);
	got_init(&g);
	ck_assert_int_eq(decode(&h, blk, k, &g), 0);
	ck_assert_uint_eq(g.n, TL_HPACK_LIST_COUNT_DEFAULT);
	ck_assert(tl_hpack_list_cut(&h));
	check_table(&h, (const struct entry[]){{"late", "1"}, {0}}, 4 + 1 + 32, "past list_count");
	/* the next block starts a new list */
	got_init(&g);
	ck_assert_int_eq(decode(&h, (const uint8_t *)"\x82\xbe", 2, &g), 0);
	ck_assert_uint_eq(g.n, 2);
	ck_assert(!tl_hpack_list_cut(&h));
	tl_hpack_free(&h);

	/* list_bytes: one entry of 1 + 4000 + 32 = 4033, then 19 references
	 * to it: 65536 / 4033 = 16 fields fit */
	memset(v, 'v', sizeof(v));
	tl_hpack_init(&h, NULL);
	k = 0;
	blk[k++] = 0x40;
	k += tl_hpack_put_str(blk + k, sizeof(blk) - k, "x", 1, false);
	k += tl_hpack_put_str(blk + k, sizeof(blk) - k, v, sizeof(v), false);
	for (int i = 0; i < 19; i++)
		blk[k++] = 0xbe;
	got_init(&g);
	ck_assert_int_eq(decode(&h, blk, k, &g), 0);
	ck_assert_uint_eq(g.n, 16);
	ck_assert(tl_hpack_list_cut(&h));
	tl_hpack_free(&h);

	/* limits of the caller's */
	tl_hpack_init(&h, &(struct tl_hpack_limits){.list_count = 3, .list_bytes = 1000});
	got_init(&g);
	ck_assert_int_eq(decode(&h, (const uint8_t *)"\x82\x84\x86\x87\x88", 5, &g), 0);
	ck_assert_uint_eq(g.n, 3);
	ck_assert(tl_hpack_list_cut(&h));
	tl_hpack_free(&h);
}
END_TEST

START_TEST(test_callback_stops)
{
	uint8_t b[64];
	size_t n = unhex(seqs[4].b[0].hex, b, sizeof(b));
	struct tl_hpack h;
	static struct got g;

	tl_hpack_init(&h, NULL);
	got_init(&g);
	g.stop_at = 2;
	tl_hpack_block_begin(&h);
	ck_assert_int_eq(tl_hpack_feed(&h, b, n, on_field, &g), -EINTR);
	ck_assert_uint_eq(g.n, 2);
	ck_assert(tl_hpack_failed(&h));
	tl_hpack_free(&h);

	/* without a callback the table is still followed */
	tl_hpack_init(&h, NULL);
	tl_hpack_block_begin(&h);
	ck_assert_int_eq(tl_hpack_feed(&h, b, n, NULL, NULL), 0);
	ck_assert_int_eq(tl_hpack_block_end(&h), 0);
	check_table(&h, seqs[4].b[0].table, 57, "no callback");
	/* tl_hpack_fail: the table is gone, every later call fails */
	tl_hpack_fail(&h);
	ck_assert_uint_eq(h.count, 0);
	got_init(&g);
	ck_assert_int_eq(decode(&h, (const uint8_t *)"\x82", 1, &g), -EPROTO);
	ck_assert_uint_eq(g.n, 0);
	tl_hpack_free(&h);
	tl_hpack_free(NULL);
}
END_TEST

/* Empty strings: a zero-length name or value completes as soon as its
 * length is read, in any piece. */
START_TEST(test_empty_strings)
{
	static const char *const hex[] = {"0000 00", "4000 00", "0080 80", "4001 6180", "0f00 00"};
	static const char *const name[] = {"", "", "", "a", "accept-charset"};

	for (unsigned i = 0; i < 5; i++) {
		uint8_t b[16];
		size_t n = unhex(hex[i], b, sizeof(b));

		for (size_t cut = 0; cut <= n; cut++) {
			struct tl_hpack h;
			static struct got g;

			tl_hpack_init(&h, NULL);
			got_init(&g);
			ck_assert_msg(decode_split(&h, b, n, &cut, 1, &g) == 0, "%s cut %zu", hex[i], cut);
			ck_assert_uint_eq(g.n, 1);
			ck_assert_str_eq(g.f[0].name, name[i]);
			ck_assert_str_eq(g.f[0].value, "");
			tl_hpack_free(&h);
		}
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hpack");
	TCase *tc = tcase_create("hpack");

	tcase_add_loop_test(tc, test_rfc_examples, 0, sizeof(seqs) / sizeof(seqs[0]));
	tcase_add_test(tc, test_integers);
	tcase_add_loop_test(tc, test_hostile, 0, sizeof(bads) / sizeof(bads[0]));
	tcase_add_test(tc, test_huffman_padding_valid);
	tcase_add_test(tc, test_huffman_all_symbols);
	tcase_add_test(tc, test_size_updates);
	tcase_add_test(tc, test_field_bounds);
	tcase_add_test(tc, test_list_bounds);
	tcase_add_test(tc, test_callback_stops);
	tcase_add_test(tc, test_empty_strings);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
