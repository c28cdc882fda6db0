/* SPDX-License-Identifier: Apache-2.0 */
/* The passive HTTP/2 decoder (daemon/capture/h2-conn.c): recorded
 * connections (tests/capture/h2/README.md) replayed whole, split at every
 * byte offset, a byte at a time, with DATA payloads not delivered and
 * first seen mid-stream; connections built frame by frame for GOAWAY,
 * RST_STREAM, CONTINUATION, table size changes, losses, the close and
 * the bound on open streams. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2-conn.h"
#include "h2-replay.h"
#include "h2-test-util.h"
#include "../check-run.h"

#define C 0 /* the client's direction */
#define S 1 /* the server's */

static const struct tl_h2_config cfg = {.want = {.names = {"traceparent", "x-request-id"}, .n = 2}};

static void load(const char *name, struct h2_capture *cap)
{
	const char *root = getenv("TERMLINE_SOURCE_ROOT");
	char path[4096];
	int r;

	snprintf(path, sizeof(path), "%s/tests/capture/h2/%s", root ? root : ".", name);
	r = h2_capture_load(path, cap);
	ck_assert_msg(r == 0, "cannot load %s: %s", path, strerror(-r));
}

/* ---- replays ---- */

enum feed_mode {
	FEED_WHOLE,     /* each chunk as one call */
	FEED_SPLIT,     /* chunk `chunk` in two calls at `at` */
	FEED_BYTES,     /* every chunk a byte at a time */
	FEED_SKIP_DATA, /* DATA payloads not delivered (tl_h2_conn_skip), as the kernel side */
};

/* Feeds a direction's chunk, DATA payloads skipped: walks the frames of
 * the direction's byte stream itself (state across chunks in *left,
 * *hdr). */
struct skipper {
	uint8_t hdr[9];
	unsigned hn;
	uint32_t left;
	bool data;
	bool preface_done;
	unsigned pn;
};

static void feed_skipping(struct tl_h2_conn *c, unsigned dir, struct skipper *k, const uint8_t *p,
			  size_t n, int64_t ts)
{
	size_t i = 0, run = 0; /* bytes [run, i) not yet fed */
	bool first = true;

	while (i < n) {
		if (!k->preface_done && dir == C) {
			size_t m = TL_H2_PREFACE_LEN - k->pn < n - i ? TL_H2_PREFACE_LEN - k->pn : n - i;

			k->pn += (unsigned)m;
			i += m;
			if (k->pn == TL_H2_PREFACE_LEN)
				k->preface_done = true;
			continue;
		}
		k->preface_done = true;
		if (k->left == 0 && k->hn < 9) {
			k->hdr[k->hn++] = p[i++];
			if (k->hn == 9) {
				k->left = (uint32_t)k->hdr[0] << 16 | (uint32_t)k->hdr[1] << 8 | k->hdr[2];
				k->data = k->hdr[3] == TL_H2_DATA;
				k->hn = 0;
			}
			continue;
		}
		{
			size_t m = k->left < n - i ? k->left : n - i;

			if (k->data && m) {
				tl_h2_conn_data(c, dir, p + run, i - run, ts, first ? TL_H2_CHUNK_START : 0);
				first = false;
				tl_h2_conn_skip(c, dir, m, ts);
				run = i + m;
			}
			k->left -= (uint32_t)m;
			i += m;
		}
	}
	if (run < n || first)
		tl_h2_conn_data(c, dir, p + run, n - run, ts, first ? TL_H2_CHUNK_START : 0);
}

static void replay(const struct h2_capture *cap, const struct tl_h2_config *cf, size_t from,
		   enum feed_mode mode, size_t chunk, size_t at, struct evlog *L,
		   struct tl_h2_conn_stats *st)
{
	struct tl_h2_conn *c;
	struct skipper sk[2] = {0};
	int64_t last = 0;

	/* (the log's memory is kept from one replay to the next) */
	L->n = 0;
	L->text_len = 0;
	ck_assert_int_eq(tl_h2_conn_new(cf, on_ev, L, &c), 0);
	for (size_t i = from; i < cap->n; i++) {
		const struct h2_chunk *ch = &cap->c[i];
		unsigned dir = (unsigned)ch->dir;

		if (ch->dir > 1)
			continue;
		last = ch->ts;
		switch (mode) {
		case FEED_WHOLE:
			ck_assert_int_eq(tl_h2_conn_data(c, dir, ch->data, ch->len, ch->ts, TL_H2_CHUNK_START), 0);
			break;
		case FEED_SPLIT:
			if (i == chunk) {
				tl_h2_conn_data(c, dir, ch->data, at, ch->ts, TL_H2_CHUNK_START);
				tl_h2_conn_data(c, dir, ch->data + at, ch->len - at, ch->ts, 0);
			} else {
				tl_h2_conn_data(c, dir, ch->data, ch->len, ch->ts, TL_H2_CHUNK_START);
			}
			break;
		case FEED_BYTES:
			for (size_t k = 0; k < ch->len; k++)
				tl_h2_conn_data(c, dir, ch->data + k, 1, ch->ts, k ? 0 : TL_H2_CHUNK_START);
			break;
		case FEED_SKIP_DATA:
			feed_skipping(c, dir, &sk[dir], ch->data, ch->len, ch->ts);
			break;
		}
	}
	if (st)
		tl_h2_conn_stats(c, st);
	tl_h2_conn_close(c, last + 1, false);
	tl_h2_conn_free(c);
}

START_TEST(test_h2load_whole)
{
	struct h2_capture cap;
	struct evlog L = {0};
	struct tl_h2_conn_stats st;
	const struct ev_rec *g;

	load("h2load.cap", &cap);
	replay(&cap, &cfg, 0, FEED_WHOLE, 0, 0, &L, &st);
	ck_assert(st.is_h2 && st.from_start);
	ck_assert_int_eq(st.client_dir, C);
	ck_assert(st.decodable[C] && st.decodable[S]);
	ck_assert_uint_eq(st.streams, 200);
	ck_assert_uint_eq(st.header_blocks[C], 200);
	ck_assert_uint_eq(st.header_blocks[S], 200);
	ck_assert_uint_eq(st.frames[C], 204); /* 2 SETTINGS, WINDOW_UPDATE, 200 HEADERS, GOAWAY */
	ck_assert_uint_eq(st.frames[S], 402); /* 2 SETTINGS, 200 HEADERS, 200 DATA */
	ck_assert_uint_eq(st.hpack_errors, 0);
	ck_assert_uint_eq(st.desyncs, 0);
	ck_assert_uint_eq(st.goaways, 1);
	ck_assert_uint_eq(st.rst_streams, 0);
	ck_assert_uint_eq(st.streams_evicted, 0);
	ck_assert_uint_eq(log_count(&L, TL_H2_EV_STREAM), 200);
	for (unsigned i = 0; i < 200; i++) {
		const struct ev_rec *e = log_stream(&L, 2 * i + 1);
		char path[16];

		ck_assert_msg(e != NULL, "stream %u missing", 2 * i + 1);
		snprintf(path, sizeof(path), "/r/%03u", i);
		ck_assert(e->s.request_known && e->s.response_known && !e->s.headers_cut);
		ck_assert_str_eq(e->s.method, "GET");
		ck_assert_str_eq(e->s.path, path);
		ck_assert_str_eq(e->s.authority, "127.0.0.1:18081");
		ck_assert_str_eq(e->s.request_id, "h2load-7f3a");
		ck_assert_int_eq(e->s.request_id_header, 1);
		ck_assert_uint_eq(e->s.status, i % 20 == 19 ? 404 : 200);
		ck_assert_int_eq(e->s.grpc_status, -1);
		ck_assert(e->s.request_ended && e->s.response_ended && !e->s.reset && !e->s.after_goaway);
		ck_assert_str_eq(e->error, "");
		ck_assert_uint_eq(e->s.open_dir, C);
		ck_assert(!e->mid_stream);
		ck_assert_int_le(e->s.start_ns, e->s.end_ns);
	}
	/* the client's GOAWAY at the end: nothing above stream 0 of the
	 * server's (it opened none) */
	ck_assert_uint_eq(log_count(&L, TL_H2_EV_GOAWAY), 1);
	g = log_nth(&L, TL_H2_EV_GOAWAY, 0);
	ck_assert_uint_eq(g->dir, C);
	ck_assert_int_eq(g->by, TL_H2_ROLE_CLIENT);
	ck_assert_uint_eq(g->last_stream_id, 0);
	ck_assert_uint_eq(g->error_code, 0);
	ck_assert(!g->payload_lost);
	ck_assert_uint_eq(g->debug_total, 0);
	/* the GOAWAY came after every stream ended */
	ck_assert_int_eq(L.e[L.n - 1].kind, TL_H2_EV_GOAWAY);
	log_free(&L);
	h2_capture_free(&cap);
}
END_TEST

static const char *const grpc_paths[] = {"/termline.test.Echo/Say", "/termline.test.Echo/Say",
					 "/termline.test.Echo/Fail", "/termline.test.Echo/Count",
					 "/termline.test.Echo/FailLate"};
static const int grpc_status[] = {0, 0, 5, 0, 13};
static const char *const grpc_message[] = {"", "", "no such item: 42", "", "broke after after-data"};

START_TEST(test_grpc_whole)
{
	struct h2_capture cap;
	struct evlog L = {0};
	struct tl_h2_conn_stats st;

	load("grpc.cap", &cap);
	replay(&cap, &cfg, 0, FEED_WHOLE, 0, 0, &L, &st);
	ck_assert(st.from_start && st.decodable[C] && st.decodable[S]);
	ck_assert_uint_eq(st.streams, 5);
	ck_assert_uint_eq(st.header_blocks[C], 5);
	ck_assert_uint_eq(st.header_blocks[S], 9); /* call 3 is trailers only */
	ck_assert_uint_eq(st.hpack_errors, 0);
	ck_assert_uint_eq(log_count(&L, TL_H2_EV_STREAM), 5);
	for (unsigned i = 0; i < 5; i++) {
		const struct ev_rec *e = log_stream(&L, 2 * i + 1);
		char id[16];

		ck_assert_msg(e != NULL, "stream %u missing", 2 * i + 1);
		snprintf(id, sizeof(id), "grpc-%u", i + 1);
		ck_assert(e->s.request_known && e->s.response_known);
		ck_assert_str_eq(e->s.method, "POST");
		ck_assert_str_eq(e->s.path, grpc_paths[i]);
		ck_assert_str_eq(e->s.content_type, "application/grpc");
		ck_assert_str_eq(e->s.request_id, id);
		ck_assert_int_eq(e->s.request_id_header, 1);
		ck_assert_uint_eq(e->s.status, 200);
		ck_assert_int_eq(e->s.grpc_status, grpc_status[i]);
		ck_assert_str_eq(e->s.grpc_message, grpc_message[i]);
		ck_assert(e->s.request_ended && e->s.response_ended && !e->s.reset);
		ck_assert_str_eq(e->error, "");
	}
	log_free(&L);
	h2_capture_free(&cap);
}
END_TEST

/* Every way of cutting the chunks gives the same events, times included. */
static void split_everywhere(const char *name)
{
	struct h2_capture cap;
	struct evlog ref = {0}, L = {0};
	size_t replays = 0;

	load(name, &cap);
	replay(&cap, &cfg, 0, FEED_WHOLE, 0, 0, &ref, NULL);
	ck_assert_uint_gt(ref.n, 0);
	for (size_t i = 0; i < cap.n; i++) {
		if (cap.c[i].dir > 1)
			continue;
		for (size_t at = 0; at <= cap.c[i].len; at++) {
			replay(&cap, &cfg, 0, FEED_SPLIT, i, at, &L, NULL);
			ck_assert_msg(L.text_len == ref.text_len && memcmp(L.text, ref.text, ref.text_len) == 0,
				      "%s: chunk %zu split at %zu differs:\n%.400s\nwant\n%.400s", name, i, at,
				      L.text, ref.text);
			replays++;
		}
	}
	ck_assert_uint_eq(replays, cap.bytes + (size_t)(cap.n - 1)); /* one note */
	replay(&cap, &cfg, 0, FEED_BYTES, 0, 0, &L, NULL);
	ck_assert_msg(L.text_len == ref.text_len && memcmp(L.text, ref.text, ref.text_len) == 0,
		      "%s: a byte at a time differs", name);
	/* DATA payloads not delivered (the kernel side never copies them):
	 * the same streams */
	replay(&cap, &cfg, 0, FEED_SKIP_DATA, 0, 0, &L, NULL);
	ck_assert_msg(L.text_len == ref.text_len && memcmp(L.text, ref.text, ref.text_len) == 0,
		      "%s: DATA skipped differs:\n%.400s\nwant\n%.400s", name, L.text, ref.text);
	log_free(&L);
	log_free(&ref);
	h2_capture_free(&cap);
}

START_TEST(test_h2load_split)
{
	split_everywhere("h2load.cap");
}
END_TEST

START_TEST(test_grpc_split)
{
	split_everywhere("grpc.cap");
}
END_TEST

/* A connection first seen after its start: its streams are counted,
 * their headers never decoded nor guessed. */
static void mid_stream(const char *name, size_t min_streams)
{
	struct h2_capture cap;

	load(name, &cap);
	for (size_t from = 2; from < cap.n; from++) {
		struct evlog L = {0};
		struct tl_h2_conn_stats st;

		replay(&cap, &cfg, from, FEED_WHOLE, 0, 0, &L, &st);
		ck_assert(!st.from_start);
		ck_assert_int_eq(st.client_dir, -1);
		ck_assert(!st.decodable[C] && !st.decodable[S]);
		if (from < 6)
			ck_assert_msg(st.streams >= min_streams, "%s from chunk %zu: %" PRIu64 " streams",
				      name, from, st.streams);
		for (size_t i = 0; i < L.n; i++) {
			const struct ev_rec *e = &L.e[i];

			ck_assert(e->mid_stream);
			if (e->kind != TL_H2_EV_STREAM)
				continue;
			ck_assert(!e->s.request_known && !e->s.response_known);
			ck_assert_str_eq(e->s.method, "");
			ck_assert_str_eq(e->s.path, "");
			ck_assert_str_eq(e->s.authority, "");
			ck_assert_str_eq(e->s.request_id, "");
			ck_assert_uint_eq(e->s.status, 0);
			ck_assert_int_eq(e->s.grpc_status, -1);
			ck_assert_str_eq(e->s.grpc_message, "");
		}
		ck_assert_uint_eq(log_count(&L, TL_H2_EV_STREAM), st.streams);
		log_free(&L);
	}
	h2_capture_free(&cap);
}

START_TEST(test_mid_stream)
{
	mid_stream("h2load.cap", 100);
	mid_stream("grpc.cap", 1);
}
END_TEST

/* ---- built connections ---- */

struct sess {
	struct tl_h2_conn *c;
	struct evlog L;
	int64_t t;
	struct wbuf w;
};

static struct sess *s_new(const struct tl_h2_config *cf)
{
	struct sess *s = calloc(1, sizeof(*s));

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(tl_h2_conn_new(cf ? cf : &cfg, on_ev, &s->L, &s->c), 0);
	return s;
}

/* What was written into s->w goes as one chunk of dir. */
static void s_send(struct sess *s, unsigned dir)
{
	s->t += 1000;
	ck_assert_int_eq(tl_h2_conn_data(s->c, dir, s->w.b, s->w.n, s->t, TL_H2_CHUNK_START), 0);
	s->w.n = 0;
}

static void s_free(struct sess *s)
{
	tl_h2_conn_free(s->c);
	log_free(&s->L);
	free(s);
}

/* Preface and SETTINGS both ways, acknowledged. */
static void s_start(struct sess *s)
{
	w_preface(&s->w);
	w_settings(&s->w, 0, NULL, NULL);
	s_send(s, C);
	w_settings(&s->w, 0, NULL, NULL);
	w_frame(&s->w, TL_H2_SETTINGS, TL_H2_FLAG_ACK, 0, NULL, 0);
	s_send(s, S);
	w_frame(&s->w, TL_H2_SETTINGS, TL_H2_FLAG_ACK, 0, NULL, 0);
	s_send(s, C);
}

static void s_request(struct sess *s, uint32_t sid, const char *path, const char *id, bool end)
{
	struct blk b = {0};

	b_request(&b, end ? "GET" : "POST", path, id);
	w_headers(&s->w, sid, end, &b);
	s_send(s, C);
}

static void s_response(struct sess *s, uint32_t sid, const char *status, bool end)
{
	struct blk b = {0};

	b_status(&b, status);
	w_headers(&s->w, sid, end, &b);
	s_send(s, S);
}

static struct tl_h2_conn_stats s_stats(struct sess *s)
{
	struct tl_h2_conn_stats st;

	tl_h2_conn_stats(s->c, &st);
	return st;
}

START_TEST(test_goaway_server)
{
	struct sess *s = s_new(NULL);
	const struct ev_rec *e;
	char debug[100];

	s_start(s);
	s_request(s, 1, "/a", "r-1", true);
	s_request(s, 3, "/b", "r-3", true);
	s_request(s, 5, "/c", "r-5", true);
	s_response(s, 1, "200", true);
	ck_assert_uint_eq(log_count(&s->L, TL_H2_EV_STREAM), 1);
	/* the server: streams up to 3 are processed; 100 bytes of debug
	 * data, 64 kept */
	memset(debug, 'd', 99);
	debug[99] = 0;
	memcpy(debug, "going away", 10);
	w_goaway(&s->w, 3, 0, debug);
	s_send(s, S);
	ck_assert_uint_eq(log_count(&s->L, TL_H2_EV_GOAWAY), 1);
	e = log_nth(&s->L, TL_H2_EV_GOAWAY, 0);
	ck_assert_uint_eq(e->dir, S);
	ck_assert_int_eq(e->by, TL_H2_ROLE_SERVER);
	ck_assert_uint_eq(e->last_stream_id, 3);
	ck_assert_uint_eq(e->error_code, 0);
	ck_assert(!e->payload_lost);
	ck_assert_uint_eq(e->debug_len, TL_H2_DEBUG_KEEP);
	ck_assert_uint_eq(e->debug_total, 99);
	ck_assert_mem_eq(e->debug, "going awayddd", 13);
	ck_assert_int_eq(e->ts, s->t);
	/* stream 5 was refused at that moment; 3 goes on */
	e = log_stream(&s->L, 5);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->error, "refused");
	ck_assert_str_eq(e->s.path, "/c");
	ck_assert(!e->s.after_goaway);
	ck_assert_int_eq(e->s.end_ns, s->t);
	ck_assert_ptr_null(log_stream(&s->L, 3));
	s_response(s, 3, "503", true);
	e = log_stream(&s->L, 3);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->error, "");
	ck_assert_uint_eq(e->s.status, 503);
	/* the client opens one more after the GOAWAY: marked, never
	 * answered, cut by the close */
	s_request(s, 7, "/late", "r-7", true);
	tl_h2_conn_close(s->c, s->t + 5, false);
	e = log_stream(&s->L, 7);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->s.after_goaway);
	ck_assert(e->s.request_known);
	ck_assert_str_eq(e->s.request_id, "r-7");
	ck_assert_str_eq(e->error, "closed");
	ck_assert_int_eq(e->s.end_ns, s->t + 5);
	ck_assert_uint_eq(s_stats(s).goaways, 1);
	s_free(s);
}
END_TEST

/* Graceful shutdown: a GOAWAY with the largest id, then the real one; a
 * GOAWAY whose payload is malformed says so and refuses nothing. */
START_TEST(test_goaway_twice)
{
	struct sess *s = s_new(NULL);
	const struct ev_rec *e;

	s_start(s);
	s_request(s, 1, "/a", NULL, true);
	w_goaway(&s->w, TL_H2_MAX_STREAM_ID, 0, NULL);
	s_send(s, S);
	ck_assert_uint_eq(log_count(&s->L, TL_H2_EV_STREAM), 0);
	s_request(s, 3, "/b", NULL, true);
	/* GOAWAY of 7 bytes: malformed */
	w_frame(&s->w, TL_H2_GOAWAY, 0, 0, "\0\0\0\1\0\0\0", 7);
	s_send(s, S);
	e = log_nth(&s->L, TL_H2_EV_GOAWAY, 1);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->payload_lost);
	ck_assert_uint_eq(e->last_stream_id, 0);
	ck_assert_uint_eq(log_count(&s->L, TL_H2_EV_STREAM), 0);
	/* the real one: last 1, ENHANCE_YOUR_CALM */
	w_goaway(&s->w, 1, 11, "calm");
	s_send(s, S);
	e = log_nth(&s->L, TL_H2_EV_GOAWAY, 2);
	ck_assert_uint_eq(e->last_stream_id, 1);
	ck_assert_uint_eq(e->error_code, 11);
	ck_assert_uint_eq(e->debug_len, 4);
	ck_assert_str_eq(e->debug, "calm");
	e = log_stream(&s->L, 3);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->error, "refused");
	ck_assert(!e->s.after_goaway);
	/* opened above the lowest last-stream-id */
	s_request(s, 5, "/c", NULL, true);
	s_response(s, 1, "200", true);
	s_response(s, 5, "200", true);
	e = log_stream(&s->L, 5);
	ck_assert(e->s.after_goaway);
	ck_assert_str_eq(e->error, "");
	e = log_stream(&s->L, 1);
	ck_assert(!e->s.after_goaway);
	ck_assert_uint_eq(s_stats(s).goaways, 3);
	s_free(s);
}
END_TEST

START_TEST(test_rst_stream)
{
	struct sess *s = s_new(NULL);
	const struct ev_rec *e;

	s_start(s);
	s_request(s, 1, "/watch", "w-1", false);
	s_request(s, 3, "/other", "o-3", false);
	/* the client cancels stream 1 */
	w_rst(&s->w, 1, 8);
	s_send(s, C);
	ck_assert_uint_eq(s->L.n, 2);
	e = &s->L.e[0];
	ck_assert_int_eq(e->kind, TL_H2_EV_RST_STREAM);
	ck_assert_uint_eq(e->dir, C);
	ck_assert_int_eq(e->by, TL_H2_ROLE_CLIENT);
	ck_assert_uint_eq(e->stream_id, 1);
	ck_assert_uint_eq(e->error_code, 8);
	ck_assert(!e->payload_lost);
	ck_assert(e->has_stream);
	ck_assert_str_eq(e->s.path, "/watch");
	ck_assert_str_eq(e->s.request_id, "w-1");
	e = &s->L.e[1];
	ck_assert_int_eq(e->kind, TL_H2_EV_STREAM);
	ck_assert_uint_eq(e->s.id, 1);
	ck_assert_str_eq(e->error, "reset");
	ck_assert(e->s.reset);
	ck_assert_uint_eq(e->s.reset_code, 8);
	ck_assert_uint_eq(e->s.reset_dir, C);
	ck_assert_int_eq(e->s.reset_by, TL_H2_ROLE_CLIENT);
	ck_assert(!e->s.response_known);
	/* the server refuses stream 3 after its response headers */
	s_response(s, 3, "200", false);
	w_rst(&s->w, 3, 7);
	s_send(s, S);
	e = log_stream(&s->L, 3);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->s.response_known);
	ck_assert_uint_eq(e->s.status, 200);
	ck_assert_uint_eq(e->s.reset_code, 7);
	ck_assert_int_eq(e->s.reset_by, TL_H2_ROLE_SERVER);
	ck_assert_uint_eq(e->s.reset_dir, S);
	/* one on a stream not followed: reported, no stream */
	w_rst(&s->w, 99, 2);
	s_send(s, S);
	e = &s->L.e[s->L.n - 1];
	ck_assert_int_eq(e->kind, TL_H2_EV_RST_STREAM);
	ck_assert_uint_eq(e->stream_id, 99);
	ck_assert(!e->has_stream);
	/* a RST_STREAM of 5 bytes: its code is not known */
	s_request(s, 5, "/x", NULL, false);
	w_frame(&s->w, TL_H2_RST_STREAM, 0, 5, "\0\0\0\x08\0", 5);
	s_send(s, C);
	e = log_nth(&s->L, TL_H2_EV_RST_STREAM, 3);
	ck_assert(e->payload_lost);
	ck_assert_uint_eq(e->error_code, 0);
	e = log_stream(&s->L, 5);
	ck_assert_str_eq(e->error, "reset");
	ck_assert_uint_eq(s_stats(s).rst_streams, 4);
	s_free(s);
}
END_TEST

/* A request's header block in a HEADERS (padded, with priority) and two
 * CONTINUATIONs, cut inside a string; then HEADERS interrupted by another
 * frame: the direction's table is lost. */
START_TEST(test_continuation)
{
	struct sess *s = s_new(NULL);
	struct blk b = {0};
	uint8_t p[512];
	size_t a, k;
	const struct ev_rec *e;
	struct tl_h2_conn_stats st;

	s_start(s);
	b_request(&b, "GET", "/continued/path/long/enough", "cont-1");
	b_inc(&b, "x-extra", "indexed for later");
	ck_assert_uint_gt(b.n, 40);
	a = 17;
	/* HEADERS: PADDED | PRIORITY, pad 3, 5 priority bytes, a bytes */
	p[0] = 3;
	memset(p + 1, 0, 5);
	memcpy(p + 6, b.b, a);
	memset(p + 6 + a, 0, 3);
	w_frame(&s->w, TL_H2_HEADERS, TL_H2_FLAG_PADDED | TL_H2_FLAG_PRIORITY, 1, p, 1 + 5 + a + 3);
	s_send(s, C);
	w_frame(&s->w, TL_H2_CONTINUATION, 0, 1, b.b + a, 10);
	k = a + 10;
	w_frame(&s->w, TL_H2_CONTINUATION, TL_H2_FLAG_END_HEADERS, 1, b.b + k, b.n - k);
	s_send(s, C);
	w_frame(&s->w, TL_H2_DATA, TL_H2_FLAG_END_STREAM, 1, NULL, 0);
	s_send(s, C);
	s_response(s, 1, "204", true);
	e = log_stream(&s->L, 1);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->s.request_known);
	ck_assert_str_eq(e->s.path, "/continued/path/long/enough");
	ck_assert_str_eq(e->s.request_id, "cont-1");
	ck_assert_uint_eq(e->s.status, 204);
	ck_assert_str_eq(e->error, "");
	/* the entry is in the client's table: index 62 */
	b.n = 0;
	b_request(&b, "GET", "/again", "cont-3");
	b_index(&b, 62);
	w_headers(&s->w, 3, true, &b);
	s_send(s, C);
	st = s_stats(s);
	ck_assert(st.decodable[C]);
	ck_assert_uint_eq(st.hpack_errors, 0);
	/* HEADERS without END_HEADERS, then a PING: a protocol error, the
	 * client's table is unknown from then on */
	b.n = 0;
	b_request(&b, "GET", "/broken", "cont-5");
	w_frame(&s->w, TL_H2_HEADERS, 0, 5, b.b, 8);
	w_frame(&s->w, TL_H2_PING, 0, 0, "12345678", 8);
	w_frame(&s->w, TL_H2_CONTINUATION, TL_H2_FLAG_END_HEADERS, 5, b.b + 8, b.n - 8);
	s_send(s, C);
	st = s_stats(s);
	ck_assert(!st.decodable[C]);
	ck_assert_uint_eq(st.hpack_errors, 1);
	s_request(s, 7, "/after", "cont-7", true);
	s_response(s, 3, "200", true);
	s_response(s, 5, "200", true);
	s_response(s, 7, "200", true);
	e = log_stream(&s->L, 3);
	ck_assert(e->s.request_known);
	ck_assert_str_eq(e->s.request_id, "cont-3");
	e = log_stream(&s->L, 7);
	ck_assert_ptr_nonnull(e);
	ck_assert(!e->s.request_known);
	ck_assert(e->s.response_known); /* the server's table is intact */
	ck_assert_uint_eq(e->s.status, 200);
	ck_assert_str_eq(e->s.path, "");
	ck_assert_uint_eq(s_stats(s).streams, 4);
	/* a CONTINUATION with no block open breaks the server's side */
	w_frame(&s->w, TL_H2_CONTINUATION, TL_H2_FLAG_END_HEADERS, 7, "\x88", 1);
	s_send(s, S);
	st = s_stats(s);
	ck_assert(!st.decodable[S]);
	ck_assert_uint_eq(st.hpack_errors, 2);
	s_free(s);
}
END_TEST

/* 124 bytes: an entry of 3 + 124 + 32 = 159 fits a table of 256, two
 * do not */
static const char *long_value(char c)
{
	static char v[2][125];
	char *p = v[c == 'b'];

	memset(p, c, 124);
	p[124] = 0;
	return p;
}

/* SETTINGS_HEADER_TABLE_SIZE: the client limits the server's encoder; a
 * size update is checked against the limit in force, raised at once,
 * lowered once acknowledged. */
START_TEST(test_table_size)
{
	static const uint16_t hts_id[] = {TL_H2_SETTINGS_HEADER_TABLE_SIZE};
	struct tl_h2_conn_stats st;
	const struct ev_rec *e;

	/* lowered to 256: the server acknowledges, then says 256 and fills
	 * its table; an entry is evicted by the next */
	{
		struct sess *s = s_new(NULL);
		struct blk b = {0};
		static const uint32_t v[] = {256};

		w_preface(&s->w);
		w_settings(&s->w, 1, hts_id, v);
		s_send(s, C);
		w_settings(&s->w, 0, NULL, NULL);
		s_send(s, S);
		s_request(s, 1, "/t", "t-1", true);
		/* before its ACK the server may still use 4096 */
		b_size(&b, 4096);
		b_status(&b, "200");
		b_inc(&b, "x-a", long_value('a'));
		w_headers(&s->w, 1, true, &b);
		s_send(s, S);
		ck_assert(s_stats(s).decodable[S]);
		w_frame(&s->w, TL_H2_SETTINGS, TL_H2_FLAG_ACK, 0, NULL, 0);
		s_send(s, S);
		s_request(s, 3, "/t", "t-3", true);
		b.n = 0;
		b_size(&b, 256);
		b_status(&b, "201");
		b_index(&b, 62);
		b_inc(&b, "x-b", long_value('b'));
		w_headers(&s->w, 3, true, &b);
		s_send(s, S);
		st = s_stats(s);
		ck_assert(st.decodable[S]);
		ck_assert_uint_eq(st.hpack_errors, 0);
		e = log_stream(&s->L, 3);
		ck_assert(e->s.response_known);
		ck_assert_uint_eq(e->s.status, 201);
		/* 62 is x-b now; x-a (3 + 124 + 32) was evicted by it */
		s_request(s, 5, "/t", "t-5", true);
		b.n = 0;
		b_status(&b, "202");
		b_index(&b, 62);
		b_index(&b, 63);
		w_headers(&s->w, 5, true, &b);
		s_send(s, S);
		st = s_stats(s);
		ck_assert(!st.decodable[S]);
		ck_assert_uint_eq(st.hpack_errors, 1);
		e = log_stream(&s->L, 5);
		ck_assert(!e->s.response_known);
		s_free(s);
	}
	/* after the ACK of 256, a size update of 4096 is beyond the limit */
	{
		struct sess *s = s_new(NULL);
		struct blk b = {0};
		static const uint32_t v[] = {256};

		w_preface(&s->w);
		w_settings(&s->w, 1, hts_id, v);
		s_send(s, C);
		w_settings(&s->w, 0, NULL, NULL);
		w_frame(&s->w, TL_H2_SETTINGS, TL_H2_FLAG_ACK, 0, NULL, 0);
		s_send(s, S);
		s_request(s, 1, "/t", NULL, true);
		b_size(&b, 4096);
		b_status(&b, "200");
		w_headers(&s->w, 1, true, &b);
		s_send(s, S);
		st = s_stats(s);
		ck_assert(!st.decodable[S]);
		ck_assert_uint_eq(st.hpack_errors, 1);
		e = log_stream(&s->L, 1);
		ck_assert(e->s.request_known && !e->s.response_known);
		s_free(s);
	}
	/* raised to 8192 by the client: the server may use it before its
	 * ACK; 8193 is beyond it */
	for (int over = 0; over < 2; over++) {
		struct sess *s = s_new(NULL);
		struct blk b = {0};
		static const uint32_t v[] = {8192};

		w_preface(&s->w);
		w_settings(&s->w, 1, hts_id, v);
		s_send(s, C);
		w_settings(&s->w, 0, NULL, NULL);
		s_send(s, S);
		s_request(s, 1, "/t", NULL, true);
		b_size(&b, 8192 + (uint32_t)over);
		b_status(&b, "200");
		w_headers(&s->w, 1, true, &b);
		s_send(s, S);
		st = s_stats(s);
		ck_assert_int_eq(st.decodable[S], !over);
		ck_assert_uint_eq(st.hpack_errors, (uint64_t)over);
		s_free(s);
	}
}
END_TEST

/* A SETTINGS whose parameters were not all delivered: its table size is
 * unknown, the server's encoder may use up to the cap, and the server's
 * ACK of it does not apply the next SETTINGS' size early. */
START_TEST(test_settings_lost)
{
	static const uint16_t ids[] = {0x3, TL_H2_SETTINGS_HEADER_TABLE_SIZE};
	static const uint32_t v1[] = {100, 8192}, v2[] = {100, 1024};
	struct sess *s = s_new(NULL);
	struct blk b = {0};
	struct tl_h2_conn_stats st;
	const struct ev_rec *e;

	w_preface(&s->w);
	w_settings(&s->w, 2, ids, v1);
	/* the preface, the frame header and the first parameter; the
	 * second (HEADER_TABLE_SIZE 8192) is not delivered */
	tl_h2_conn_data(s->c, C, s->w.b, TL_H2_PREFACE_LEN + 9 + 6, ++s->t, TL_H2_CHUNK_START);
	tl_h2_conn_skip(s->c, C, 6, s->t);
	s->w.n = 0;
	w_settings(&s->w, 2, ids, v2);
	s_send(s, C);
	w_settings(&s->w, 0, NULL, NULL);
	s_send(s, S);
	s_request(s, 1, "/a", NULL, true);
	/* the server took the first: 8192 is its table now */
	w_frame(&s->w, TL_H2_SETTINGS, TL_H2_FLAG_ACK, 0, NULL, 0);
	b_size(&b, 8192);
	b_status(&b, "200");
	b_inc(&b, "x-a", long_value('a'));
	w_headers(&s->w, 1, true, &b);
	s_send(s, S);
	st = s_stats(s);
	ck_assert_msg(st.decodable[S], "a size update within the unknown limit refused");
	e = log_stream(&s->L, 1);
	ck_assert(e->s.response_known);
	/* the ACK of the second: 1024 from now on */
	s_request(s, 3, "/b", NULL, true);
	w_frame(&s->w, TL_H2_SETTINGS, TL_H2_FLAG_ACK, 0, NULL, 0);
	b.n = 0;
	b_size(&b, 1024);
	b_status(&b, "200");
	b_index(&b, 62);
	w_headers(&s->w, 3, true, &b);
	s_send(s, S);
	st = s_stats(s);
	ck_assert(st.decodable[S]);
	e = log_stream(&s->L, 3);
	ck_assert(e->s.response_known);
	/* beyond 1024 now */
	s_request(s, 5, "/c", NULL, true);
	b.n = 0;
	b_size(&b, 1025);
	b_status(&b, "200");
	w_headers(&s->w, 5, true, &b);
	s_send(s, S);
	ck_assert(!s_stats(s).decodable[S]);
	s_free(s);
}
END_TEST

/* tl_h2_conn_skip: inside a payload the frames go on; inside a header
 * block the direction's headers are unknown from then on; across a frame
 * header the sync is lost until a chunk starts with frames again. */
START_TEST(test_skip)
{
	struct sess *s = s_new(NULL);
	struct blk b = {0};
	struct tl_h2_conn_stats st;
	const struct ev_rec *e;
	uint8_t body[100] = {0};

	s_start(s);
	s_request(s, 1, "/upload", "u-1", false);
	/* a DATA frame: its header delivered, its 100 bytes not */
	w_frame(&s->w, TL_H2_DATA, TL_H2_FLAG_END_STREAM, 1, body, 100);
	tl_h2_conn_data(s->c, C, s->w.b, 9, ++s->t, TL_H2_CHUNK_START);
	tl_h2_conn_skip(s->c, C, 100, s->t);
	s->w.n = 0;
	s_response(s, 1, "200", true);
	e = log_stream(&s->L, 1);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->s.request_ended && e->s.response_ended);
	ck_assert_str_eq(e->error, "");
	st = s_stats(s);
	ck_assert(st.decodable[C] && st.desyncs == 0);
	/* 0 bytes: nothing */
	tl_h2_conn_skip(s->c, C, 0, s->t);
	/* a header block whose first field is not delivered: what follows
	 * the gap is never decoded (it would make a path up) */
	{
		size_t f1;

		b_lit(&b, ":method", "GET", false);
		f1 = b.n;
		b_lit(&b, ":path", "/guessed", false);
		w_headers(&s->w, 3, true, &b);
		tl_h2_conn_data(s->c, C, s->w.b, 9, ++s->t, TL_H2_CHUNK_START);
		tl_h2_conn_skip(s->c, C, f1, s->t);
		tl_h2_conn_data(s->c, C, s->w.b + 9 + f1, b.n - f1, s->t, 0);
		s->w.n = 0;
	}
	st = s_stats(s);
	ck_assert(!st.decodable[C]);
	ck_assert_uint_eq(st.desyncs, 0);
	ck_assert_uint_eq(st.hpack_errors, 0);
	s_response(s, 3, "200", true);
	e = log_stream(&s->L, 3);
	ck_assert_ptr_nonnull(e);
	ck_assert(!e->s.request_known && e->s.response_known);
	ck_assert_str_eq(e->s.method, "");
	ck_assert_str_eq(e->s.path, "");
	ck_assert(e->s.request_ended);
	ck_assert_str_eq(e->error, "");
	/* a skip past the frame's end: sync lost; the next chunk that is not
	 * plausible frames is ignored, the one that is picks it up again */
	s_request(s, 5, "/x", NULL, false);
	w_frame(&s->w, TL_H2_DATA, 0, 5, body, 10);
	tl_h2_conn_data(s->c, C, s->w.b, 9, ++s->t, TL_H2_CHUNK_START);
	tl_h2_conn_skip(s->c, C, 50, s->t);
	s->w.n = 0;
	st = s_stats(s);
	ck_assert_uint_eq(st.desyncs, 1);
	w_raw(&s->w, "garbage that is not frames", 26);
	s_send(s, C);
	ck_assert_uint_eq(s_stats(s).frames[C], st.frames[C]);
	/* ... frames again, but in the middle of a chunk: not taken */
	w_frame(&s->w, TL_H2_DATA, TL_H2_FLAG_END_STREAM, 5, NULL, 0);
	tl_h2_conn_data(s->c, C, s->w.b, s->w.n, ++s->t, 0);
	ck_assert_uint_eq(s_stats(s).frames[C], st.frames[C]);
	/* at a chunk's start: taken */
	tl_h2_conn_data(s->c, C, s->w.b, s->w.n, ++s->t, TL_H2_CHUNK_START);
	s->w.n = 0;
	ck_assert_uint_eq(s_stats(s).frames[C], st.frames[C] + 1);
	s_response(s, 5, "200", true);
	e = log_stream(&s->L, 5);
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->error, "");
	/* the client's streams still come, headers unknown */
	s_request(s, 7, "/y", "u-7", true);
	s_response(s, 7, "200", true);
	e = log_stream(&s->L, 7);
	ck_assert_ptr_nonnull(e);
	ck_assert(!e->s.request_known && e->s.response_known);
	ck_assert_uint_eq(s_stats(s).streams, 4);
	s_free(s);
}
END_TEST

/* A chunk the caller says starts a frame (the kernel's SYNC segment):
 * taken as is by a reader at its start or unsynced; a reader inside a
 * frame there loses its sync first. */
START_TEST(test_chunk_frame)
{
	struct sess *s = s_new(NULL);
	struct tl_h2_conn_stats st;

	/* the server side first seen at a frame the caller vouches for */
	w_frame(&s->w, TL_H2_WINDOW_UPDATE, 0, 0, "\0\0\x10\0", 4);
	tl_h2_conn_data(s->c, S, s->w.b, s->w.n, ++s->t, TL_H2_CHUNK_FRAME);
	s->w.n = 0;
	st = s_stats(s);
	ck_assert(st.is_h2);
	ck_assert_uint_eq(st.frames[S], 1);
	ck_assert_uint_eq(st.desyncs, 0);
	/* a frame cut in the middle, then a chunk flagged as a frame start */
	w_frame(&s->w, TL_H2_PING, 0, 0, "12345678", 8);
	tl_h2_conn_data(s->c, S, s->w.b, 12, ++s->t, TL_H2_CHUNK_START);
	s->w.n = 0;
	w_rst(&s->w, 1, 8);
	tl_h2_conn_data(s->c, S, s->w.b, s->w.n, ++s->t, TL_H2_CHUNK_FRAME);
	s->w.n = 0;
	st = s_stats(s);
	ck_assert_uint_eq(st.desyncs, 1);
	ck_assert_uint_eq(st.frames[S], 3);
	ck_assert_uint_eq(st.rst_streams, 1);
	ck_assert(!st.decodable[S]);
	/* without the flag, a first chunk that is not plausible frames is
	 * not HTTP/2 */
	{
		struct sess *t = s_new(NULL);

		w_raw(&t->w, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
		s_send(t, C);
		st = s_stats(t);
		ck_assert(!st.is_h2);
		ck_assert_uint_eq(st.frames[C], 0);
		ck_assert_uint_eq(st.desyncs, 1);
		s_free(t);
	}
	s_free(s);
}
END_TEST

/* tl_h2_conn_lost: the open streams end "lost"; the direction's headers
 * are unknown; frames are followed again from a plausible chunk start. */
START_TEST(test_lost)
{
	struct sess *s = s_new(NULL);
	const struct ev_rec *e;
	struct tl_h2_conn_stats st;

	s_start(s);
	s_request(s, 1, "/a", "l-1", true);
	s_request(s, 3, "/b", "l-3", true);
	s_response(s, 1, "200", false);
	tl_h2_conn_lost(s->c, S, s->t + 1);
	ck_assert_uint_eq(log_count(&s->L, TL_H2_EV_STREAM), 2);
	e = log_stream(&s->L, 1);
	ck_assert_str_eq(e->error, "lost");
	ck_assert(e->s.response_known);
	ck_assert_uint_eq(e->s.status, 200);
	ck_assert_int_eq(e->s.end_ns, s->t + 1);
	e = log_stream(&s->L, 3);
	ck_assert_str_eq(e->error, "lost");
	ck_assert_str_eq(e->s.request_id, "l-3");
	st = s_stats(s);
	ck_assert(!st.decodable[S] && st.decodable[C]);
	ck_assert_uint_eq(st.desyncs, 1);
	/* the client's side goes on; the server's picks up at a chunk
	 * start, headers unknown */
	s_request(s, 5, "/c", "l-5", true);
	s_response(s, 5, "200", true);
	e = log_stream(&s->L, 5);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->s.request_known && !e->s.response_known);
	ck_assert(e->s.response_ended);
	ck_assert_str_eq(e->error, "");
	s_free(s);
}
END_TEST

/* tl_h2_conn_close: open streams "closed", "reset" on a reset, "lost"
 * while a seen direction has no sync. */
START_TEST(test_close)
{
	for (int how = 0; how < 3; how++) {
		struct sess *s = s_new(NULL);
		const struct ev_rec *e;
		static const char *const want[] = {"closed", "reset", "lost"};

		s_start(s);
		s_request(s, 1, "/a", "c-1", true);
		s_request(s, 3, "/b", "c-3", false);
		s_response(s, 1, "200", false);
		if (how == 2) {
			/* bytes not delivered across a frame header: no sync */
			tl_h2_conn_skip(s->c, S, 5, ++s->t);
			ck_assert_uint_eq(s_stats(s).desyncs, 1);
		}
		ck_assert_uint_eq(log_count(&s->L, TL_H2_EV_STREAM), 0);
		tl_h2_conn_close(s->c, s->t + 7, how == 1);
		ck_assert_uint_eq(log_count(&s->L, TL_H2_EV_STREAM), 2);
		for (uint32_t id = 1; id <= 3; id += 2) {
			e = log_stream(&s->L, id);
			ck_assert_ptr_nonnull(e);
			ck_assert_str_eq(e->error, want[how]);
			ck_assert_int_eq(e->s.end_ns, s->t + 7);
			ck_assert(e->s.request_known);
		}
		e = log_stream(&s->L, 1);
		ck_assert_uint_eq(e->s.status, 200);
		ck_assert(e->s.request_ended && !e->s.response_ended);
		s_free(s);
	}
	tl_h2_conn_free(NULL);
}
END_TEST

/* At most max_streams open: the oldest is evicted for a new one. */
START_TEST(test_max_streams)
{
	struct tl_h2_config cf = cfg;
	struct sess *s;
	const struct ev_rec *e;

	cf.max_streams = 4;
	s = s_new(&cf);
	s_start(s);
	for (uint32_t id = 1; id <= 11; id += 2) {
		char path[16];

		snprintf(path, sizeof(path), "/s%u", id);
		s_request(s, id, path, NULL, true);
	}
	ck_assert_uint_eq(s_stats(s).streams, 6);
	ck_assert_uint_eq(s_stats(s).streams_evicted, 2);
	ck_assert_uint_eq(log_count(&s->L, TL_H2_EV_STREAM), 2);
	e = log_nth(&s->L, TL_H2_EV_STREAM, 0);
	ck_assert_uint_eq(e->s.id, 1);
	ck_assert_str_eq(e->error, "evicted");
	ck_assert_str_eq(e->s.path, "/s1");
	e = log_nth(&s->L, TL_H2_EV_STREAM, 1);
	ck_assert_uint_eq(e->s.id, 3);
	ck_assert_str_eq(e->error, "evicted");
	/* a response on an evicted stream opens nothing */
	s_response(s, 1, "200", true);
	ck_assert_uint_eq(s_stats(s).streams, 6);
	/* the others end normally */
	for (uint32_t id = 5; id <= 11; id += 2)
		s_response(s, id, "200", true);
	ck_assert_uint_eq(log_count(&s->L, TL_H2_EV_STREAM), 6);
	e = log_stream(&s->L, 11);
	ck_assert_str_eq(e->error, "");
	ck_assert_str_eq(e->s.path, "/s11");
	s_free(s);
}
END_TEST

/* Roles the caller knows (the kernel: who accepted) on a connection seen
 * mid-stream: a response on a client's stream opened before the capture is
 * counted as that stream, its request unknown, ended by the server's
 * END_STREAM (never taken for a request of its own); streams the client
 * opens later are counted as they come. */
START_TEST(test_roles_mid_stream)
{
	struct sess *s = s_new(NULL);
	struct tl_h2_conn_stats st;
	const struct ev_rec *e;

	tl_h2_conn_set_role(s->c, C, TL_H2_ROLE_CLIENT);
	tl_h2_conn_set_role(s->c, S, TL_H2_ROLE_SERVER);
	ck_assert_str_eq(tl_h2_role_name(TL_H2_ROLE_CLIENT), "client");
	ck_assert_str_eq(tl_h2_role_name(TL_H2_ROLE_SERVER), "server");
	ck_assert_str_eq(tl_h2_role_name(TL_H2_ROLE_UNKNOWN), "unknown");
	/* a response on stream 41, opened before the capture: that stream,
	 * its request unknown, ended with the response */
	s_response(s, 41, "200", true);
	ck_assert_uint_eq(s_stats(s).streams, 1);
	e = log_stream(&s->L, 41);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->mid_stream);
	ck_assert(!e->s.request_known && !e->s.response_known);
	ck_assert(e->s.response_ended);
	ck_assert_str_eq(e->s.path, "");
	ck_assert_uint_eq(e->s.status, 0);
	/* a request on 43 and its response */
	s_request(s, 43, "/x", "m-43", true);
	s_response(s, 43, "200", true);
	st = s_stats(s);
	ck_assert_uint_eq(st.streams, 2);
	ck_assert(!st.from_start && !st.decodable[C] && !st.decodable[S]);
	e = log_stream(&s->L, 43);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->mid_stream);
	ck_assert(!e->s.request_known && !e->s.response_known);
	ck_assert_str_eq(e->s.request_id, "");
	ck_assert(e->s.request_ended && e->s.response_ended);
	ck_assert_str_eq(e->error, "");
	/* a GOAWAY of the server's refuses the client's streams above it */
	s_request(s, 45, "/y", NULL, true);
	w_goaway(&s->w, 43, 0, NULL);
	s_send(s, S);
	e = log_stream(&s->L, 45);
	ck_assert_str_eq(e->error, "refused");
	e = log_nth(&s->L, TL_H2_EV_GOAWAY, 0);
	ck_assert_int_eq(e->by, TL_H2_ROLE_SERVER);
	ck_assert(e->mid_stream);
	s_free(s);
}
END_TEST

/* A connection first seen mid-stream with no roles told: the sender of a
 * GOAWAY whose last-stream-id is odd (a client's stream) is the server,
 * the other side the client (RFC 9113 section 6.8). */
START_TEST(test_goaway_names_server_mid_stream)
{
	struct sess *s = s_new(NULL);
	const struct ev_rec *e;
	struct tl_h2_conn_stats st;

	w_goaway(&s->w, 7, 0, NULL);
	s_send(s, S);
	e = log_nth(&s->L, TL_H2_EV_GOAWAY, 0);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->mid_stream);
	ck_assert_int_eq(e->by, TL_H2_ROLE_SERVER);
	tl_h2_conn_stats(s->c, &st);
	ck_assert(!st.from_start);
	s_free(s);
}
END_TEST

/* PUSH_PROMISE: its header block feeds the server's table (a later
 * response refers to its entry); the pushed stream is the server's, its
 * request never known. */
START_TEST(test_push_promise)
{
	struct sess *s = s_new(NULL);
	struct blk b = {0};
	uint8_t p[512];
	const struct ev_rec *e;
	struct tl_h2_conn_stats st;

	s_start(s);
	s_request(s, 1, "/page", "pp-1", true);
	/* PADDED: pad length 2, promised stream 2, the block, 2 bytes */
	b_lit(&b, ":method", "GET", false);
	b_lit(&b, ":path", "/style.css", false);
	b_inc(&b, "x-pushed", "yes");
	p[0] = 2;
	w_be32(p + 1, 2);
	memcpy(p + 5, b.b, b.n);
	memset(p + 5 + b.n, 0, 2);
	w_frame(&s->w, TL_H2_PUSH_PROMISE, TL_H2_FLAG_END_HEADERS | TL_H2_FLAG_PADDED, 1, p, 5 + b.n + 2);
	s_send(s, S);
	/* the response to 1 refers to the entry the promise added */
	b.n = 0;
	b_status(&b, "200");
	b_index(&b, 62);
	w_headers(&s->w, 1, true, &b);
	s_send(s, S);
	e = log_stream(&s->L, 1);
	ck_assert_ptr_nonnull(e);
	ck_assert(e->s.response_known);
	ck_assert_uint_eq(e->s.status, 200);
	/* the pushed response on stream 2 */
	s_response(s, 2, "200", true);
	e = log_stream(&s->L, 2);
	ck_assert_ptr_nonnull(e);
	ck_assert(!e->s.request_known && e->s.response_known);
	ck_assert_uint_eq(e->s.open_dir, S);
	ck_assert_str_eq(e->s.path, "");
	ck_assert_str_eq(e->error, "");
	st = s_stats(s);
	ck_assert(st.decodable[S]);
	ck_assert_uint_eq(st.hpack_errors, 0);
	ck_assert_uint_eq(st.streams, 2);
	ck_assert_uint_eq(st.header_blocks[S], 3);
	s_free(s);
}
END_TEST

/* 1xx responses are interim: the final status is the last one. */
START_TEST(test_interim_status)
{
	struct sess *s = s_new(NULL);
	const struct ev_rec *e;

	s_start(s);
	s_request(s, 1, "/upload", "i-1", false);
	s_response(s, 1, "100", false);
	w_frame(&s->w, TL_H2_DATA, TL_H2_FLAG_END_STREAM, 1, "body", 4);
	s_send(s, C);
	ck_assert_ptr_null(log_stream(&s->L, 1));
	s_response(s, 1, "201", true);
	e = log_stream(&s->L, 1);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->s.status, 201);
	ck_assert(e->s.request_ended && e->s.response_ended);
	s_free(s);
}
END_TEST

/* The frame layer's tables: names, and what may start a direction. */
START_TEST(test_frame_helpers)
{
	static const struct {
		struct tl_h2_frame f;
		bool ok;
	} cases[] = {
		{{0, TL_H2_DATA, 0x1, 1}, true},
		{{100000, TL_H2_DATA, 0x8, 1}, true},    /* DATA: any length */
		{{0, TL_H2_DATA, 0x1, 0}, false},        /* on stream 0 */
		{{0, TL_H2_DATA, 0x4, 1}, false},        /* END_HEADERS on DATA */
		{{10, TL_H2_HEADERS, 0x2d, 3}, true},
		{{16385, TL_H2_HEADERS, 0x4, 3}, false}, /* past 16384 */
		{{5, TL_H2_PRIORITY, 0, 3}, true},
		{{4, TL_H2_PRIORITY, 0, 3}, false},
		{{4, TL_H2_RST_STREAM, 0, 3}, true},
		{{4, TL_H2_RST_STREAM, 0, 0}, false},
		{{12, TL_H2_SETTINGS, 0, 0}, true},
		{{0, TL_H2_SETTINGS, 0x1, 0}, true},
		{{6, TL_H2_SETTINGS, 0x1, 0}, false},    /* an ACK with a payload */
		{{7, TL_H2_SETTINGS, 0, 0}, false},
		{{6, TL_H2_SETTINGS, 0, 1}, false},
		{{4, TL_H2_PUSH_PROMISE, 0x4, 1}, true},
		{{3, TL_H2_PUSH_PROMISE, 0x4, 1}, false},
		{{8, TL_H2_PING, 0x1, 0}, true},
		{{9, TL_H2_PING, 0, 0}, false},
		{{8, TL_H2_GOAWAY, 0, 0}, true},
		{{7, TL_H2_GOAWAY, 0, 0}, false},
		{{8, TL_H2_GOAWAY, 0, 1}, false},
		{{4, TL_H2_WINDOW_UPDATE, 0, 0}, true},
		{{4, TL_H2_WINDOW_UPDATE, 0, 5}, true},
		{{5, TL_H2_WINDOW_UPDATE, 0, 5}, false},
		{{1, TL_H2_CONTINUATION, 0x4, 1}, true},
		{{1, TL_H2_CONTINUATION, 0x1, 1}, false},
		{{0, 0x0a, 0, 0}, false},                /* unknown types */
		{{0, 0xff, 0, 1}, false},
	};
	uint8_t h[9];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_msg(tl_h2_frame_plausible(&cases[i].f) == cases[i].ok, "case %zu", i);
	ck_assert_str_eq(tl_h2_frame_type_name(TL_H2_GOAWAY), "GOAWAY");
	ck_assert_str_eq(tl_h2_frame_type_name(TL_H2_CONTINUATION), "CONTINUATION");
	ck_assert_str_eq(tl_h2_frame_type_name(0x0a), "UNKNOWN");
	ck_assert_str_eq(tl_h2_error_name(0), "NO_ERROR");
	ck_assert_str_eq(tl_h2_error_name(7), "REFUSED_STREAM");
	ck_assert_str_eq(tl_h2_error_name(8), "CANCEL");
	ck_assert_str_eq(tl_h2_error_name(13), "HTTP_1_1_REQUIRED");
	ck_assert_ptr_null(tl_h2_error_name(14));
	/* the reserved bit of the stream id is dropped */
	memcpy(h, "\x00\x00\x04\x03\x00\xff\xff\xff\xff", 9);
	{
		struct tl_h2_frame f;

		tl_h2_frame_parse_header(h, &f);
		ck_assert_uint_eq(f.length, 4);
		ck_assert_uint_eq(f.type, TL_H2_RST_STREAM);
		ck_assert_uint_eq(f.stream_id, TL_H2_MAX_STREAM_ID);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("h2-conn");
	TCase *tc = tcase_create("captures");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_h2load_whole);
	tcase_add_test(tc, test_grpc_whole);
	tcase_add_test(tc, test_h2load_split);
	tcase_add_test(tc, test_grpc_split);
	tcase_add_test(tc, test_mid_stream);
	suite_add_tcase(s, tc);
	tc = tcase_create("built");
	tcase_add_test(tc, test_goaway_server);
	tcase_add_test(tc, test_goaway_twice);
	tcase_add_test(tc, test_rst_stream);
	tcase_add_test(tc, test_continuation);
	tcase_add_test(tc, test_table_size);
	tcase_add_test(tc, test_settings_lost);
	tcase_add_test(tc, test_skip);
	tcase_add_test(tc, test_chunk_frame);
	tcase_add_test(tc, test_lost);
	tcase_add_test(tc, test_close);
	tcase_add_test(tc, test_max_streams);
	tcase_add_test(tc, test_roles_mid_stream);
	tcase_add_test(tc, test_goaway_names_server_mid_stream);
	tcase_add_test(tc, test_push_promise);
	tcase_add_test(tc, test_interim_status);
	tcase_add_test(tc, test_frame_helpers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
