/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel's HTTP/2 records into exchanges and events
 * (daemon/capture/h2-pair.c): records built as bpf/http.bpf.c writes them
 * (bpf/include/termline-http.h: per call, segments of copied bytes and
 * bytes skipped; frame headers and the payloads the agent reads copied,
 * DATA skipped) from the recorded connections of tests/capture/h2, and by
 * hand for the cases a capture does not hold. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2-pair.h"
#include "h2-replay.h"
#include "h2-test-util.h"
#include "termline-http.h"
#include "../check-run.h"

static const struct tl_http_want want = {.names = {"x-request-id"}, .n = 1};

struct xchg {
	struct tl_h2_stream s;
	char error[16];
	bool inbound, direction_known, response_unknown;
};

struct pev {
	struct tl_h2_pair_event e;
	char end[16];
	char debug[TL_H2_DEBUG_KEEP + 1];
	bool has_stream;
	struct tl_h2_stream s;
};

struct out {
	struct xchg x[512];
	size_t nx;
	struct pev e[64];
	size_t ne;
};

static void on_stream(void *ud, const struct tl_h2_pair_stream *st)
{
	struct out *o = ud;
	struct xchg *x;

	ck_assert_uint_lt(o->nx, 512);
	x = &o->x[o->nx++];
	x->s = *st->s;
	snprintf(x->error, sizeof(x->error), "%s", st->s->error ? st->s->error : "");
	x->s.error = NULL;
	x->inbound = st->inbound;
	x->direction_known = st->direction_known;
	x->response_unknown = st->response_unknown;
}

static void on_event(void *ud, const struct tl_h2_pair_event *ev)
{
	struct out *o = ud;
	struct pev *p;

	ck_assert_uint_lt(o->ne, 64);
	p = &o->e[o->ne++];
	memset(p, 0, sizeof(*p));
	p->e = *ev;
	if (ev->end)
		snprintf(p->end, sizeof(p->end), "%s", ev->end);
	p->e.end = NULL;
	ck_assert_uint_le(ev->debug_len, TL_H2_DEBUG_KEEP);
	if (ev->debug_len)
		memcpy(p->debug, ev->debug, ev->debug_len);
	p->e.debug = NULL;
	if (ev->stream) {
		p->has_stream = true;
		p->s = *ev->stream;
		p->s.error = NULL;
	}
	p->e.stream = NULL;
}

static const struct tl_h2_pair_ops ops = {on_stream, on_event};

static const struct pev *find_event(const struct out *o, enum tl_h2_pair_event_kind k, size_t nth)
{
	for (size_t i = 0; i < o->ne; i++)
		if (o->e[i].e.kind == k && nth-- == 0)
			return &o->e[i];
	return NULL;
}

static const struct xchg *find_x(const struct out *o, uint32_t id)
{
	for (size_t i = 0; i < o->nx; i++)
		if (o->x[i].s.id == id)
			return &o->x[i];
	return NULL;
}

/* ---- records as the kernel writes them ---- */

struct rec {
	uint8_t b[1 << 16];
	size_t n;
};

/* Segments are closed by their skip: a skip ends the open one. */
struct builder {
	struct rec r;
	size_t seg_at;        /* offset of the open segment's header */
	uint32_t seg_skip;
	uint16_t seg_copy;
	bool seg_open;
	uint8_t seg_flags;
};

static void b_close(struct builder *b)
{
	struct tl_h2_seg g = {.skip = b->seg_skip, .copy = b->seg_copy, .flags = b->seg_flags};

	if (!b->seg_open)
		return;
	memcpy(b->r.b + b->seg_at, &g, sizeof(g));
	b->seg_open = false;
}

static void b_open(struct builder *b, uint8_t flags)
{
	b_close(b);
	b->seg_at = b->r.n;
	b->r.n += sizeof(struct tl_h2_seg);
	b->seg_skip = 0;
	b->seg_copy = 0;
	b->seg_flags = flags;
	b->seg_open = true;
}

static void b_copy(struct builder *b, const uint8_t *p, size_t n, uint8_t flags)
{
	if (!n)
		return;
	if (!b->seg_open || b->seg_skip || flags)
		b_open(b, flags);
	ck_assert_uint_le(b->r.n + n, sizeof(b->r.b));
	ck_assert_uint_le((size_t)b->seg_copy + n, UINT16_MAX);
	memcpy(b->r.b + b->r.n, p, n);
	b->r.n += n;
	b->seg_copy = (uint16_t)(b->seg_copy + n);
}

static void b_skip(struct builder *b, uint32_t n)
{
	if (!n)
		return;
	if (!b->seg_open)
		b_open(b, 0);
	b->seg_skip += n;
}

static void b_reset(struct builder *b)
{
	b->r.n = 0;
	b->seg_open = false;
}

/* One direction as http.bpf.c follows it: where the next frame header
 * is, what of the current payload is still to copy. */
struct follow {
	bool started;
	bool on;              /* following (mid-stream: from a call of whole frames) */
	bool sync;            /* the next frame header starts a SYNC segment */
	uint8_t hdr[9];
	unsigned hn;
	uint32_t left, copy;
};

static uint32_t copy_of(uint8_t type, uint32_t len)
{
	uint32_t cap;

	switch (type) {
	case TL_H2_HEADERS:
	case TL_H2_PUSH_PROMISE:
	case TL_H2_CONTINUATION:
		cap = 16384;
		break;
	case TL_H2_RST_STREAM:
		cap = 4;
		break;
	case TL_H2_SETTINGS:
		cap = 256;
		break;
	case TL_H2_GOAWAY:
		cap = 8 + 64;
		break;
	default:
		return 0;
	}
	return len < cap ? len : cap;
}

/* A call's bytes into the record in b. */
static void follow_call(struct follow *f, struct builder *b, const uint8_t *p, size_t n)
{
	size_t i = 0;

	if (!f->started) {
		f->started = true;
		if (n >= 4 && memcmp(p, "PRI ", 4) == 0)
			f->left = f->copy = TL_H2_PREFACE_LEN;
	}
	while (i < n) {
		if (f->left == 0) {
			size_t k = 9 - f->hn < n - i ? 9 - f->hn : n - i;

			b_copy(b, p + i, k, f->hn == 0 && f->sync ? TL_H2_SEG_SYNC : 0);
			if (f->hn == 0)
				f->sync = false;
			memcpy(f->hdr + f->hn, p + i, k);
			f->hn += (unsigned)k;
			i += k;
			if (f->hn == 9) {
				uint32_t len = (uint32_t)f->hdr[0] << 16 | (uint32_t)f->hdr[1] << 8 | f->hdr[2];

				f->left = len;
				f->copy = copy_of(f->hdr[3], len);
				f->hn = 0;
			}
			continue;
		}
		{
			size_t k = f->left < n - i ? f->left : n - i;

			if (f->copy) {
				if (k > f->copy)
					k = f->copy;
				b_copy(b, p + i, k, 0);
				f->copy -= (uint32_t)k;
			} else {
				b_skip(b, (uint32_t)k);
			}
			f->left -= (uint32_t)k;
			i += k;
		}
	}
	b_close(b);
}

/* What http.bpf.c's check takes as the start of a direction it follows:
 * a call of whole frames, every header plausible (DATA bounded too). */
static bool whole_frames(const uint8_t *p, size_t n)
{
	size_t at = 0;

	while (at + 9 <= n) {
		struct tl_h2_frame f;

		tl_h2_frame_parse_header(p + at, &f);
		if (!tl_h2_frame_plausible(&f) || f.length > 16384)
			return false;
		at += 9 + f.length;
	}
	return at == n && n > 0;
}

/* A capture through the pairing, as the side `tracked_server` (or the
 * client) would see it: dir 0 chunks are what the server read. from: the
 * first chunk seen (the kernel then starts with a checked call: SYNC). */
static void replay_records(const char *name, bool tracked_server, size_t from, bool hint,
			   struct out *o, const char *end_how)
{
	const char *root = getenv("TERMLINE_SOURCE_ROOT");
	char path[4096];
	struct h2_capture cap;
	struct tl_h2_pair *p;
	struct follow f[2] = {{0}};
	static struct builder b;
	int64_t last = 0;

	snprintf(path, sizeof(path), "%s/tests/capture/h2/%s", root ? root : ".", name);
	ck_assert_msg(h2_capture_load(path, &cap) == 0, "cannot load %s", path);
	memset(o, 0, sizeof(*o));
	ck_assert_int_eq(tl_h2_pair_new(&want, &ops, o, &p), 0);
	if (hint)
		tl_h2_pair_set_server(p, tracked_server);
	f[0].on = f[1].on = from == 0;
	if (from) {
		f[0].started = f[1].started = true;
		f[0].sync = f[1].sync = true;
	}
	for (size_t i = from; i < cap.n; i++) {
		const struct h2_chunk *ch = &cap.c[i];
		bool read;

		if (ch->dir > 1)
			continue;
		/* mid-stream: a direction is followed from a call of whole
		 * plausible frames (the kernel's check); calls before it are
		 * not seen */
		if (!f[ch->dir].on) {
			if (!whole_frames(ch->data, ch->len))
				continue;
			f[ch->dir].on = true;
		}
		read = (ch->dir == 0) == tracked_server;
		b_reset(&b);
		follow_call(&f[ch->dir], &b, ch->data, ch->len);
		tl_h2_pair_record(p, read ? TL_HTTP_RF_READ : 0, ch->ts, b.r.b, b.r.n);
		last = ch->ts;
	}
	tl_h2_pair_end(p, last + 1, end_how);
	tl_h2_pair_free(p);
	h2_capture_free(&cap);
}

START_TEST(test_h2load_records)
{
	static struct out o;

	for (int server = 1; server >= 0; server--) {
		const struct pev *g, *end;

		replay_records("h2load.cap", server, 0, false, &o, "closed");
		ck_assert_uint_eq(o.nx, 200);
		for (unsigned i = 0; i < 200; i++) {
			const struct xchg *x = find_x(&o, 2 * i + 1);
			char path[16];

			snprintf(path, sizeof(path), "/r/%03u", i);
			ck_assert_ptr_nonnull(x);
			ck_assert_int_eq(x->inbound, server);
			ck_assert(x->direction_known);
			ck_assert(!x->response_unknown);
			ck_assert(x->s.request_known && x->s.response_known);
			ck_assert_str_eq(x->s.method, "GET");
			ck_assert_str_eq(x->s.path, path);
			ck_assert_str_eq(x->s.request_id, "h2load-7f3a");
			ck_assert_int_eq(x->s.request_id_header, 0);
			ck_assert_uint_eq(x->s.status, i % 20 == 19 ? 404 : 200);
			ck_assert_str_eq(x->error, "");
		}
		ck_assert_uint_eq(o.ne, 2);
		g = find_event(&o, TL_H2_PAIR_GOAWAY, 0);
		ck_assert_ptr_nonnull(g);
		/* the client sent it: the server read it */
		ck_assert_int_eq(g->e.sent, !server);
		ck_assert_uint_eq(g->e.last_stream_id, 0);
		ck_assert_uint_eq(g->e.error_code, 0);
		ck_assert(!g->e.payload_lost);
		end = find_event(&o, TL_H2_PAIR_END, 0);
		ck_assert_ptr_nonnull(end);
		ck_assert_ptr_eq(end, &o.e[1]);
		ck_assert_str_eq(end->end, "closed");
		ck_assert_int_eq(end->e.inbound, server);
		ck_assert(end->e.direction_known && end->e.decoded);
		ck_assert_uint_eq(end->e.streams, 200);
		ck_assert_uint_eq(end->e.streams_unknown, 0);
		ck_assert_uint_eq(end->e.streams_open, 0);
		ck_assert_uint_eq(end->e.streams_after_goaway, 0);
		ck_assert_uint_eq(end->e.goaways_received, server ? 1 : 0);
		ck_assert_uint_eq(end->e.goaways_sent, server ? 0 : 1);
		ck_assert_uint_eq(end->e.rsts_sent + end->e.rsts_received, 0);
	}
}
END_TEST

START_TEST(test_grpc_records)
{
	static struct out o;
	static const int status[] = {0, 0, 5, 0, 13};
	const struct pev *end;

	replay_records("grpc.cap", true, 0, true, &o, "closed");
	ck_assert_uint_eq(o.nx, 5);
	for (unsigned i = 0; i < 5; i++) {
		const struct xchg *x = find_x(&o, 2 * i + 1);
		char id[16];

		snprintf(id, sizeof(id), "grpc-%u", i + 1);
		ck_assert_ptr_nonnull(x);
		ck_assert(x->inbound && x->direction_known);
		ck_assert_str_eq(x->s.request_id, id);
		ck_assert_str_eq(x->s.content_type, "application/grpc");
		ck_assert_uint_eq(x->s.status, 200);
		ck_assert_int_eq(x->s.grpc_status, status[i]);
	}
	ck_assert_str_eq(find_x(&o, 5)->s.grpc_message, "no such item: 42");
	end = find_event(&o, TL_H2_PAIR_END, 0);
	ck_assert_ptr_nonnull(end);
	ck_assert(end->e.decoded);
	ck_assert_uint_eq(end->e.streams, 5);
	ck_assert_uint_eq(end->e.streams_unknown, 0);
}
END_TEST

/* First seen mid-stream: the kernel starts at a call it checked (a SYNC
 * segment); streams are counted with their headers unknown, none comes
 * out as an exchange. */
START_TEST(test_mid_stream_records)
{
	static struct out o;
	const struct pev *end;

	for (int hint = 0; hint < 2; hint++) {
		replay_records("h2load.cap", true, 4, hint, &o, "closed");
		ck_assert_uint_eq(o.nx, 0);
		end = find_event(&o, TL_H2_PAIR_END, 0);
		ck_assert_ptr_nonnull(end);
		ck_assert(!end->e.decoded);
		ck_assert_uint_gt(end->e.streams, 100);
		ck_assert_uint_eq(end->e.streams_unknown, end->e.streams);
		ck_assert_int_eq(end->e.direction_known, hint);
		ck_assert_int_eq(end->e.inbound, hint);
		/* the client's GOAWAY is still reported */
		ck_assert_ptr_nonnull(find_event(&o, TL_H2_PAIR_GOAWAY, 0));
		ck_assert_uint_eq(end->e.goaways_received, 1);
	}
}
END_TEST

/* ---- records by hand ---- */

struct conn {
	struct tl_h2_pair *p;
	struct out *o;
	struct follow f[2];
	struct builder b;
	struct wbuf w;
	int64_t t;
};

static struct conn *c_new(bool hint_server)
{
	struct conn *c = calloc(1, sizeof(*c));

	c->o = calloc(1, sizeof(*c->o));
	ck_assert_int_eq(tl_h2_pair_new(&want, &ops, c->o, &c->p), 0);
	if (hint_server)
		tl_h2_pair_set_server(c->p, true);
	return c;
}

static void c_free(struct conn *c)
{
	tl_h2_pair_free(c->p);
	free(c->o);
	free(c);
}

/* The tracked process is the server: what it read is the client's (dir 0). */
static void c_call(struct conn *c, bool read, uint16_t extra)
{
	b_reset(&c->b);
	follow_call(&c->f[read ? 0 : 1], &c->b, c->w.b, c->w.n);
	c->t += 1000;
	tl_h2_pair_record(c->p, (uint16_t)((read ? TL_HTTP_RF_READ : 0) | extra), c->t, c->b.r.b, c->b.r.n);
	c->w.n = 0;
}

static void c_start(struct conn *c)
{
	w_preface(&c->w);
	w_settings(&c->w, 0, NULL, NULL);
	c_call(c, true, 0);
	w_settings(&c->w, 0, NULL, NULL);
	w_frame(&c->w, TL_H2_SETTINGS, TL_H2_FLAG_ACK, 0, NULL, 0);
	c_call(c, false, 0);
}

static void c_request(struct conn *c, uint32_t sid, const char *path, const char *id)
{
	struct blk b = {0};

	b_request(&b, "GET", path, id);
	w_headers(&c->w, sid, true, &b);
	c_call(c, true, 0);
}

static void c_response(struct conn *c, uint32_t sid, const char *status, size_t body)
{
	struct blk b = {0};
	static uint8_t data[4096];

	b_status(&b, status);
	w_headers(&c->w, sid, body == 0, &b);
	if (body)
		w_frame(&c->w, TL_H2_DATA, TL_H2_FLAG_END_STREAM, sid, data, body);
	c_call(c, false, 0);
}

START_TEST(test_goaway_rst_events)
{
	struct conn *c = c_new(false);
	const struct pev *e;

	c_start(c);
	c_request(c, 1, "/a", "p-1");
	c_request(c, 3, "/b", "p-3");
	c_request(c, 5, "/c", "p-5");
	c_response(c, 1, "200", 3000);
	ck_assert_uint_eq(c->o->nx, 1);
	/* the server resets 3 and goes away above 3 */
	w_rst(&c->w, 3, 2);
	w_goaway(&c->w, 3, 0, "shutting down");
	c_call(c, false, 0);
	ck_assert_uint_eq(c->o->ne, 2);
	e = &c->o->e[0];
	ck_assert_int_eq(e->e.kind, TL_H2_PAIR_RST_STREAM);
	ck_assert(e->e.sent);
	ck_assert_uint_eq(e->e.stream_id, 3);
	ck_assert_uint_eq(e->e.error_code, 2);
	ck_assert(e->has_stream);
	ck_assert_str_eq(e->s.path, "/b");
	ck_assert_str_eq(e->s.request_id, "p-3");
	e = &c->o->e[1];
	ck_assert_int_eq(e->e.kind, TL_H2_PAIR_GOAWAY);
	ck_assert(e->e.sent);
	ck_assert_uint_eq(e->e.last_stream_id, 3);
	ck_assert_str_eq(e->debug, "shutting down");
	ck_assert_uint_eq(c->o->nx, 3);
	ck_assert_str_eq(find_x(c->o, 3)->error, "reset");
	ck_assert_str_eq(find_x(c->o, 5)->error, "refused");
	ck_assert(find_x(c->o, 5)->inbound);
	/* one more from the client after the GOAWAY */
	c_request(c, 7, "/late", "p-7");
	tl_h2_pair_end(c->p, c->t + 1, "reset");
	ck_assert_uint_eq(c->o->nx, 4);
	ck_assert_str_eq(find_x(c->o, 7)->error, "reset");
	ck_assert(find_x(c->o, 7)->s.after_goaway);
	e = find_event(c->o, TL_H2_PAIR_END, 0);
	ck_assert_str_eq(e->end, "reset");
	ck_assert(e->e.inbound && e->e.decoded);
	ck_assert_uint_eq(e->e.streams, 4);
	ck_assert_uint_eq(e->e.streams_open, 1);
	ck_assert_uint_eq(e->e.streams_after_goaway, 1);
	ck_assert_uint_eq(e->e.goaways_sent, 1);
	ck_assert_uint_eq(e->e.rsts_sent, 1);
	ck_assert_uint_eq(e->e.goaways_received + e->e.rsts_received, 0);
	c_free(c);
}
END_TEST

/* A response header block the kernel did not copy whole (past its
 * 16 KiB, or lost here by hand): the exchange says its response was not
 * decoded. */
START_TEST(test_response_unknown)
{
	struct conn *c = c_new(false);
	struct blk b = {0};
	const struct xchg *x;

	c_start(c);
	c_request(c, 1, "/a", "u-1");
	b_status(&b, "200");
	b_lit(&b, "server", "termline-test", false);
	w_headers(&c->w, 1, true, &b);
	b_reset(&c->b);
	b_copy(&c->b, c->w.b, 9 + 3, 0);
	b_skip(&c->b, (uint32_t)(b.n - 3));
	b_close(&c->b);
	c->w.n = 0;
	tl_h2_pair_record(c->p, 0, ++c->t, c->b.r.b, c->b.r.n);
	ck_assert_uint_eq(c->o->nx, 1);
	x = &c->o->x[0];
	ck_assert(x->s.request_known && !x->s.response_known);
	ck_assert(x->response_unknown);
	ck_assert_uint_eq(x->s.status, 0);
	ck_assert_str_eq(x->s.request_id, "u-1");
	c_free(c);
}
END_TEST

/* Malformed segments lose the direction, never read past the record;
 * RF_LOST and RF_H2_OFF say what the kernel could not deliver. */
START_TEST(test_bad_records)
{
	for (int kind = 0; kind < 4; kind++) {
		struct conn *c = c_new(false);
		const struct pev *end;
		uint8_t *rec;
		size_t n;

		c_start(c);
		c_request(c, 1, "/a", "b-1");
		switch (kind) {
		case 0: /* a record shorter than a segment header */
			n = sizeof(struct tl_h2_seg) - 1;
			rec = calloc(1, n);
			tl_h2_pair_record(c->p, 0, ++c->t, rec, n);
			free(rec);
			break;
		case 1: /* a segment copying more than the record holds */
		{
			struct tl_h2_seg g = {.copy = 100};

			n = sizeof(g) + 10;
			rec = calloc(1, n);
			memcpy(rec, &g, sizeof(g));
			tl_h2_pair_record(c->p, 0, ++c->t, rec, n);
			free(rec);
			break;
		}
		case 2: /* a record of the server's after lost ones */
			tl_h2_pair_record(c->p, TL_HTTP_RF_LOST, ++c->t, NULL, 0);
			break;
		case 3: /* the kernel stopped following what the server writes */
			tl_h2_pair_record(c->p, TL_HTTP_RF_H2_OFF, ++c->t, NULL, 0);
			break;
		}
		/* the open stream ended "lost" at once, and came out (its
		 * request was decoded) */
		ck_assert_msg(c->o->nx == 1, "kind %d: %zu exchanges", kind, c->o->nx);
		ck_assert_str_eq(c->o->x[0].error, "lost");
		ck_assert_str_eq(c->o->x[0].s.request_id, "b-1");
		/* the client's side goes on; the server's headers are unknown */
		c_request(c, 3, "/b", "b-3");
		/* the kernel follows the server again from a checked call */
		c->f[1].sync = true;
		c->f[1].left = c->f[1].copy = 0;
		c->f[1].hn = 0;
		c_response(c, 3, "200", 0);
		ck_assert_uint_eq(c->o->nx, 2);
		ck_assert(c->o->x[1].s.request_known && !c->o->x[1].s.response_known);
		ck_assert(c->o->x[1].response_unknown);
		tl_h2_pair_end(c->p, c->t + 1, "closed");
		end = find_event(c->o, TL_H2_PAIR_END, 0);
		ck_assert(end->e.decoded);
		ck_assert_uint_eq(end->e.streams, 2);
		c_free(c);
	}
}
END_TEST

/* tl_h2_pair_lost: both directions; then "expired". */
START_TEST(test_pair_lost)
{
	struct conn *c = c_new(true);
	const struct pev *end;

	c_start(c);
	c_request(c, 1, "/a", "l-1");
	c_request(c, 3, "/b", "l-3");
	tl_h2_pair_lost(c->p, ++c->t);
	ck_assert_uint_eq(c->o->nx, 2);
	ck_assert_str_eq(find_x(c->o, 1)->error, "lost");
	ck_assert_str_eq(find_x(c->o, 3)->error, "lost");
	tl_h2_pair_end(c->p, c->t + 1, "expired");
	end = find_event(c->o, TL_H2_PAIR_END, 0);
	ck_assert_str_eq(end->end, "expired");
	ck_assert_uint_eq(end->e.streams_open, 0);
	ck_assert(end->e.inbound && end->e.direction_known);
	ck_assert_ptr_nonnull(tl_h2_pair_conn(c->p));
	c_free(c);
	tl_h2_pair_free(NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("h2-pair");
	TCase *tc = tcase_create("pair");

	tcase_add_test(tc, test_h2load_records);
	tcase_add_test(tc, test_grpc_records);
	tcase_add_test(tc, test_mid_stream_records);
	tcase_add_test(tc, test_goaway_rst_events);
	tcase_add_test(tc, test_response_unknown);
	tcase_add_test(tc, test_bad_records);
	tcase_add_test(tc, test_pair_lost);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
