/* SPDX-License-Identifier: Apache-2.0 */
/* What the HTTP/2 decoder's tests share: frames and header blocks built
 * byte by byte (HPACK's encoding helpers), and the decoder's events kept
 * as copies and as one line of text each (to compare two replays). */
#pragma once
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2-conn.h"
#include "hpack.h"

/* ---- bytes ---- */

struct wbuf {
	uint8_t b[1 << 16];
	size_t n;
};

static inline void w_raw(struct wbuf *w, const void *p, size_t n)
{
	ck_assert_uint_le(w->n + n, sizeof(w->b));
	if (n)
		memcpy(w->b + w->n, p, n);
	w->n += n;
}

static inline void w_preface(struct wbuf *w)
{
	w_raw(w, TL_H2_PREFACE, TL_H2_PREFACE_LEN);
}

static inline void w_frame(struct wbuf *w, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
			   size_t len)
{
	uint8_t h[9] = {(uint8_t)(len >> 16), (uint8_t)(len >> 8), (uint8_t)len, type, flags,
			(uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid};

	w_raw(w, h, 9);
	w_raw(w, p, len);
}

static inline void w_settings(struct wbuf *w, int n, const uint16_t *ids, const uint32_t *vals)
{
	uint8_t p[60];

	for (int i = 0; i < n; i++) {
		p[i * 6] = (uint8_t)(ids[i] >> 8);
		p[i * 6 + 1] = (uint8_t)ids[i];
		p[i * 6 + 2] = (uint8_t)(vals[i] >> 24);
		p[i * 6 + 3] = (uint8_t)(vals[i] >> 16);
		p[i * 6 + 4] = (uint8_t)(vals[i] >> 8);
		p[i * 6 + 5] = (uint8_t)vals[i];
	}
	w_frame(w, TL_H2_SETTINGS, 0, 0, p, (size_t)n * 6);
}

static inline void w_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void w_goaway(struct wbuf *w, uint32_t last, uint32_t code, const char *debug)
{
	uint8_t p[256];
	size_t dl = debug ? strlen(debug) : 0;

	w_be32(p, last);
	w_be32(p + 4, code);
	memcpy(p + 8, debug ? debug : "", dl);
	w_frame(w, TL_H2_GOAWAY, 0, 0, p, 8 + dl);
}

static inline void w_rst(struct wbuf *w, uint32_t sid, uint32_t code)
{
	uint8_t p[4];

	w_be32(p, code);
	w_frame(w, TL_H2_RST_STREAM, 0, sid, p, 4);
}

/* A header block: literal fields without indexing (no table state) or
 * with incremental indexing, static indices, raw bytes. */
struct blk {
	uint8_t b[8192];
	size_t n;
};

static inline void b_lit(struct blk *b, const char *name, const char *value, bool huff)
{
	size_t k;

	ck_assert_uint_lt(b->n, sizeof(b->b));
	b->b[b->n++] = 0x00;
	k = tl_hpack_put_str(b->b + b->n, sizeof(b->b) - b->n, name, strlen(name), huff);
	ck_assert_uint_gt(k, 0);
	b->n += k;
	k = tl_hpack_put_str(b->b + b->n, sizeof(b->b) - b->n, value, strlen(value), huff);
	ck_assert_uint_gt(k, 0);
	b->n += k;
}

static inline void b_inc(struct blk *b, const char *name, const char *value)
{
	size_t k;

	b->b[b->n++] = 0x40;
	k = tl_hpack_put_str(b->b + b->n, sizeof(b->b) - b->n, name, strlen(name), true);
	b->n += k;
	k = tl_hpack_put_str(b->b + b->n, sizeof(b->b) - b->n, value, strlen(value), true);
	b->n += k;
}

static inline void b_index(struct blk *b, uint32_t i)
{
	b->n += tl_hpack_put_int(b->b + b->n, sizeof(b->b) - b->n, 0x80, 7, i);
}

static inline void b_size(struct blk *b, uint32_t v)
{
	b->n += tl_hpack_put_int(b->b + b->n, sizeof(b->b) - b->n, 0x20, 5, v);
}

static inline void b_request(struct blk *b, const char *method, const char *path, const char *id)
{
	b_lit(b, ":method", method, false);
	b_lit(b, ":scheme", "http", false);
	b_lit(b, ":path", path, true);
	b_lit(b, ":authority", "svc.test:8080", true);
	if (id)
		b_lit(b, "x-request-id", id, false);
}

static inline void b_status(struct blk *b, const char *status)
{
	b_lit(b, ":status", status, false);
}

/* HEADERS (with END_HEADERS) carrying the block. */
static inline void w_headers(struct wbuf *w, uint32_t sid, bool end_stream, const struct blk *b)
{
	w_frame(w, TL_H2_HEADERS, (uint8_t)(TL_H2_FLAG_END_HEADERS | (end_stream ? TL_H2_FLAG_END_STREAM : 0)),
		sid, b->b, b->n);
}

/* ---- events ---- */

struct ev_rec {
	enum tl_h2_event_kind kind;
	int64_t ts;
	bool mid_stream;
	bool has_stream;       /* s: the stream (STREAM) or the reset one (RST_STREAM) */
	struct tl_h2_stream s;
	char error[16];
	unsigned dir;
	enum tl_h2_role by;
	uint32_t stream_id, last_stream_id, error_code;
	bool payload_lost;
	char debug[TL_H2_DEBUG_KEEP + 1];
	size_t debug_len;
	uint32_t debug_total;
};

struct evlog {
	struct ev_rec *e;
	size_t n, cap;
	char *text;            /* one line per event */
	size_t text_len, text_cap;
};

static inline void log_text(struct evlog *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static inline void log_text(struct evlog *L, const char *fmt, ...)
{
	va_list ap;
	int k;

	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(L->text ? L->text + L->text_len : NULL,
			      L->text ? L->text_cap - L->text_len : 0, fmt, ap);
		va_end(ap);
		if (L->text && (size_t)k < L->text_cap - L->text_len)
			break;
		L->text_cap = L->text_cap ? L->text_cap * 2 + (size_t)k : 4096 + (size_t)k;
		L->text = realloc(L->text, L->text_cap);
		ck_assert_ptr_nonnull(L->text);
	}
	L->text_len += (size_t)k;
}

static inline void on_ev(void *ud, const struct tl_h2_event *ev)
{
	struct evlog *L = ud;
	struct ev_rec *r;
	const struct tl_h2_stream *s = ev->kind == TL_H2_EV_STREAM ? ev->stream : ev->reset_stream;

	if (L->n == L->cap) {
		L->cap = L->cap ? L->cap * 2 : 64;
		L->e = realloc(L->e, L->cap * sizeof(*L->e));
		ck_assert_ptr_nonnull(L->e);
	}
	r = &L->e[L->n++];
	memset(r, 0, sizeof(*r));
	r->kind = ev->kind;
	r->ts = ev->ts_ns;
	r->mid_stream = ev->mid_stream;
	r->dir = ev->dir;
	r->by = ev->by;
	r->stream_id = ev->stream_id;
	r->last_stream_id = ev->last_stream_id;
	r->error_code = ev->error_code;
	r->payload_lost = ev->payload_lost;
	r->debug_len = ev->debug_len;
	r->debug_total = ev->debug_total;
	ck_assert_uint_le(ev->debug_len, TL_H2_DEBUG_KEEP);
	if (ev->debug_len)
		memcpy(r->debug, ev->debug, ev->debug_len);
	if (s) {
		r->has_stream = true;
		r->s = *s;
		r->s.error = NULL;
		snprintf(r->error, sizeof(r->error), "%s", s->error ? s->error : "");
	}
	switch (ev->kind) {
	case TL_H2_EV_STREAM:
		log_text(L,
			 "stream %u t=%" PRId64 "..%" PRId64 " mid=%d req=%d resp=%d cut=%d %s %s %s ct=%s id=%s/%d "
			 "status=%u grpc=%d/%s ended=%d%d reset=%d/%u/%u/%d goaway=%d open=%u err=%s\n",
			 s->id, s->start_ns, s->end_ns, ev->mid_stream, s->request_known, s->response_known,
			 s->headers_cut, s->method, s->path, s->authority, s->content_type, s->request_id,
			 s->request_id_header, s->status, s->grpc_status, s->grpc_message, s->request_ended,
			 s->response_ended, s->reset, s->reset_code, s->reset_dir, s->reset_by,
			 s->after_goaway, s->open_dir, r->error);
		break;
	case TL_H2_EV_GOAWAY:
		log_text(L, "goaway t=%" PRId64 " dir=%u by=%d last=%u code=%u lost=%d debug=%zu/%u\n",
			 ev->ts_ns, ev->dir, ev->by, ev->last_stream_id, ev->error_code, ev->payload_lost,
			 ev->debug_len, ev->debug_total);
		break;
	case TL_H2_EV_RST_STREAM:
		log_text(L, "rst t=%" PRId64 " dir=%u by=%d stream=%u code=%u lost=%d followed=%d\n",
			 ev->ts_ns, ev->dir, ev->by, ev->stream_id, ev->error_code, ev->payload_lost,
			 s != NULL);
		break;
	}
}

static inline void log_free(struct evlog *L)
{
	free(L->e);
	free(L->text);
	memset(L, 0, sizeof(*L));
}

/* The events of one kind, in order. */
static inline size_t log_count(const struct evlog *L, enum tl_h2_event_kind kind)
{
	size_t n = 0;

	for (size_t i = 0; i < L->n; i++)
		n += L->e[i].kind == kind;
	return n;
}

static inline const struct ev_rec *log_stream(const struct evlog *L, uint32_t id)
{
	for (size_t i = 0; i < L->n; i++)
		if (L->e[i].kind == TL_H2_EV_STREAM && L->e[i].s.id == id)
			return &L->e[i];
	return NULL;
}

static inline const struct ev_rec *log_nth(const struct evlog *L, enum tl_h2_event_kind kind, size_t k)
{
	for (size_t i = 0; i < L->n; i++)
		if (L->e[i].kind == kind && k-- == 0)
			return &L->e[i];
	return NULL;
}
