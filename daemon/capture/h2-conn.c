/* SPDX-License-Identifier: Apache-2.0 */
/* An HTTP/2 connection observed from the side: two frame readers, two HPACK
 * decoders (one per direction: each side encodes its own blocks), the open
 * streams, and the facts that end them. RFC 9113, RFC 7541. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "h2-conn.h"

/* SETTINGS frames a side sent and its peer has not acknowledged yet; past
 * this many the oldest is forgotten (the limit stays the larger). */
#define ACK_QUEUE 4
#define NO_TABLE_SIZE UINT32_MAX

struct dir_state {
	struct tl_h2_reader rd;
	struct tl_hpack hp;
	enum tl_h2_role hint;
	bool seen;
	bool decodable;         /* header blocks are decoded */
	bool broken;            /* never decodable again */
	bool server_start;      /* began with a SETTINGS frame: the server, from its start */
	bool blocks_seen;
	/* the header block in progress (HEADERS or PUSH_PROMISE + CONTINUATIONs) */
	bool in_block, block_decode, block_request, block_end_stream;
	uint32_t block_stream;  /* 0: no stream record (PUSH_PROMISE) */
	/* SETTINGS being read, and the ones sent but not acknowledged */
	uint32_t settings_hts;
	uint32_t ack_queue[ACK_QUEUE];
	uint8_t n_ack;
	bool goaway_sent;
	uint32_t goaway_last;   /* the lowest last-stream-id sent */
	int64_t ts;
	uint64_t frames, blocks;
};

struct slot {
	struct tl_h2_stream s;
	uint8_t end_mask;       /* bit per direction: END_STREAM seen */
	int8_t opener;          /* the direction whose HEADERS opened it */
};

struct tl_h2_conn {
	struct tl_h2_config cfg;
	tl_h2_event_cb cb;
	void *ud;
	struct dir_state d[2];
	int client_dir;
	bool from_start, mid_stream, is_h2;
	struct slot *slots;
	uint32_t n_slots, cap_slots;
	uint32_t max_opened[2]; /* by parity */
	uint64_t streams, evicted, hpack_errors, desyncs, goaways, rsts;
	int64_t last_ns;
};

const char *tl_h2_role_name(enum tl_h2_role r)
{
	return r == TL_H2_ROLE_CLIENT ? "client" : r == TL_H2_ROLE_SERVER ? "server" : "unknown";
}

int tl_h2_conn_new(const struct tl_h2_config *cfg, tl_h2_event_cb cb, void *userdata,
		   struct tl_h2_conn **ret)
{
	struct tl_h2_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	if (cfg)
		c->cfg = *cfg;
	if (!c->cfg.max_streams)
		c->cfg.max_streams = TL_H2_MAX_STREAMS_DEFAULT;
	c->cb = cb;
	c->ud = userdata;
	c->client_dir = -1;
	for (int i = 0; i < 2; i++) {
		tl_h2_reader_init(&c->d[i].rd);
		tl_hpack_init(&c->d[i].hp, &c->cfg.hpack);
	}
	*ret = c;
	return 0;
}

void tl_h2_conn_free(struct tl_h2_conn *c)
{
	if (!c)
		return;
	for (int i = 0; i < 2; i++)
		tl_hpack_free(&c->d[i].hp);
	free(c->slots);
	free(c);
}

static enum tl_h2_role role_of(const struct tl_h2_conn *c, unsigned dir)
{
	if (c->client_dir >= 0)
		return (int)dir == c->client_dir ? TL_H2_ROLE_CLIENT : TL_H2_ROLE_SERVER;
	return c->d[dir].hint;
}

void tl_h2_conn_set_role(struct tl_h2_conn *c, unsigned dir, enum tl_h2_role role)
{
	if (dir < 2)
		c->d[dir].hint = role;
}

/* A direction whose HPACK state can no longer be known. */
static void break_dir(struct tl_h2_conn *c, unsigned dir)
{
	struct dir_state *d = &c->d[dir];

	d->decodable = false;
	d->broken = true;
	d->server_start = false;
	d->block_decode = false;
	tl_hpack_fail(&d->hp);
}

/* ---- streams ---- */

static struct slot *find(struct tl_h2_conn *c, uint32_t id)
{
	for (uint32_t i = 0; i < c->n_slots; i++)
		if (c->slots[i].s.id == id)
			return &c->slots[i];
	return NULL;
}

static void emit_stream(struct tl_h2_conn *c, struct slot *sl, const char *error, int64_t ts)
{
	struct tl_h2_event ev = {
		.kind = TL_H2_EV_STREAM,
		.ts_ns = ts,
		.mid_stream = c->mid_stream,
		.stream = &sl->s,
	};

	sl->s.error = error;
	sl->s.end_ns = ts > sl->s.start_ns ? ts : sl->s.start_ns;
	if (c->cb)
		c->cb(c->ud, &ev);
}

static void drop(struct tl_h2_conn *c, struct slot *sl)
{
	uint32_t i = (uint32_t)(sl - c->slots);

	c->slots[i] = c->slots[--c->n_slots];
}

static void close_stream(struct tl_h2_conn *c, struct slot *sl, const char *error, int64_t ts)
{
	emit_stream(c, sl, error, ts);
	drop(c, sl);
}

static bool in_block_of(const struct tl_h2_conn *c, uint32_t id)
{
	return (c->d[0].in_block && c->d[0].block_stream == id) ||
	       (c->d[1].in_block && c->d[1].block_stream == id);
}

static struct slot *open_stream(struct tl_h2_conn *c, uint32_t id, unsigned dir, int64_t ts)
{
	struct slot *sl;

	if (c->n_slots >= c->cfg.max_streams) {
		struct slot *old = NULL;

		/* The oldest that no header block is being decoded into. */
		for (uint32_t i = 0; i < c->n_slots; i++)
			if (!in_block_of(c, c->slots[i].s.id) &&
			    (!old || c->slots[i].s.start_ns < old->s.start_ns))
				old = &c->slots[i];
		if (!old)
			return NULL;
		c->evicted++;
		close_stream(c, old, "evicted", ts);
	}
	if (c->n_slots == c->cap_slots) {
		uint32_t nc = c->cap_slots ? c->cap_slots * 2 : 4;
		struct slot *p;

		if (nc > c->cfg.max_streams)
			nc = c->cfg.max_streams;
		p = realloc(c->slots, nc * sizeof(*p));
		if (!p)
			return NULL;
		c->slots = p;
		c->cap_slots = nc;
	}
	sl = &c->slots[c->n_slots++];
	memset(sl, 0, sizeof(*sl));
	sl->s.id = id;
	sl->s.request_id_header = -1;
	sl->s.grpc_status = -1;
	sl->s.start_ns = ts;
	sl->s.open_dir = dir;
	sl->opener = (int8_t)dir;
	c->streams++;
	return sl;
}

/* A stream ends when both sides ended it, or when its response ended and
 * its request was never seen (opened before the capture). */
static void maybe_done(struct tl_h2_conn *c, struct slot *sl, int64_t ts)
{
	int resp = -1;

	if (sl->end_mask == 3) {
		close_stream(c, sl, NULL, ts);
		return;
	}
	if (c->client_dir >= 0)
		resp = !c->client_dir;
	else if (c->d[0].hint == TL_H2_ROLE_SERVER || c->d[1].hint == TL_H2_ROLE_SERVER)
		resp = c->d[0].hint == TL_H2_ROLE_SERVER ? 0 : 1;
	if (resp >= 0 && sl->opener == resp && (sl->end_mask & (1u << resp)))
		close_stream(c, sl, NULL, ts);
}

/* ---- header fields ---- */

struct field_ctx {
	struct tl_h2_conn *c;
	struct slot *sl;
	bool request;
};

static bool name_is(const struct tl_hpack_field *f, const char *n, size_t len)
{
	return f->name_len == len && memcmp(f->name, n, len) == 0;
}
#define NAME_IS(f, lit) name_is(f, lit, sizeof(lit) - 1)

/* Peer bytes into a fixed field: cut to fit, control bytes as '?'. */
static bool put(char *dst, size_t cap, const char *src, size_t n)
{
	size_t k = n < cap - 1 ? n : cap - 1;

	for (size_t i = 0; i < k; i++)
		dst[i] = ((unsigned char)src[i] < 0x20 || src[i] == 0x7f) ? '?' : src[i];
	dst[k] = '\0';
	return k < n;
}

static int parse_uint(const char *p, size_t n, int digits_max)
{
	int v = 0;

	if (n == 0 || n > (size_t)digits_max)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

static int on_field(void *ud, const struct tl_hpack_field *f)
{
	struct field_ctx *x = ud;
	struct tl_h2_stream *s;
	bool cut = f->cut;

	if (!x->sl)
		return 0;
	s = &x->sl->s;
	if (x->request) {
		if (NAME_IS(f, ":method")) {
			cut |= put(s->method, sizeof(s->method), f->value, f->value_len);
		} else if (NAME_IS(f, ":path")) {
			cut |= put(s->path, sizeof(s->path), f->value, f->value_len);
		} else if (NAME_IS(f, ":authority") || (NAME_IS(f, "host") && !s->authority[0])) {
			cut |= put(s->authority, sizeof(s->authority), f->value, f->value_len);
		} else if (NAME_IS(f, "content-type")) {
			cut |= put(s->content_type, sizeof(s->content_type), f->value, f->value_len);
		} else {
			const struct tl_http_want *w = &x->c->cfg.want;

			for (int i = 0; i < w->n && (s->request_id_header < 0 || i < s->request_id_header); i++) {
				if (name_is(f, w->names[i], strlen(w->names[i]))) {
					cut |= put(s->request_id, sizeof(s->request_id), f->value, f->value_len);
					s->request_id_header = i;
					break;
				}
			}
		}
	} else if (NAME_IS(f, ":status")) {
		int v = parse_uint(f->value, f->value_len, 3);

		/* 1xx are interim; the final status is the last one. */
		if (v >= 200)
			s->status = (uint16_t)v;
	} else if (NAME_IS(f, "grpc-status")) {
		s->grpc_status = parse_uint(f->value, f->value_len, 4);
	} else if (NAME_IS(f, "grpc-message")) {
		cut |= put(s->grpc_message, sizeof(s->grpc_message), f->value, f->value_len);
	}
	s->headers_cut |= cut;
	return 0;
}

/* ---- frames ---- */

static void block_begin(struct tl_h2_conn *c, unsigned dir, const struct tl_h2_frame *f)
{
	struct dir_state *d = &c->d[dir];
	struct slot *sl = NULL;
	uint32_t id = f->stream_id;
	enum tl_h2_role role = role_of(c, dir);

	d->in_block = true;
	d->blocks_seen = true;
	d->blocks++;
	d->block_stream = 0;
	d->block_end_stream = f->type == TL_H2_HEADERS && (f->flags & TL_H2_FLAG_END_STREAM);
	d->block_request = false;
	if (f->type == TL_H2_HEADERS) {
		unsigned par = id & 1;

		sl = find(c, id);
		/* A new stream: its initiator's HEADERS (odd: the client's,
		 * even: the server's pushes), above every id opened before. */
		if (!sl && id > c->max_opened[par] &&
		    (role == TL_H2_ROLE_UNKNOWN || (role == TL_H2_ROLE_CLIENT) == (par == 1))) {
			c->max_opened[par] = id;
			sl = open_stream(c, id, dir, d->ts);
			if (sl) {
				struct dir_state *peer = &c->d[!dir];

				sl->s.after_goaway = peer->goaway_sent && id > peer->goaway_last;
			}
		} else if (!sl && c->mid_stream && role == TL_H2_ROLE_SERVER && par == 1) {
			/* A response on a client's stream of a connection first
			 * seen mid-stream: its request came before the capture.
			 * Counted, its headers unknown, whole once the server
			 * ends it (maybe_done). */
			sl = open_stream(c, id, dir, d->ts);
		}
		if (sl) {
			d->block_stream = id;
			d->block_request = role == TL_H2_ROLE_CLIENT ||
					   (role == TL_H2_ROLE_UNKNOWN && sl->opener == (int8_t)dir);
		}
	}
	d->block_decode = d->decodable;
	if (d->block_decode)
		tl_hpack_block_begin(&d->hp);
}

static void block_fragment(struct tl_h2_conn *c, unsigned dir, const uint8_t *p, size_t n)
{
	struct dir_state *d = &c->d[dir];
	struct field_ctx x = {c, NULL, d->block_request};

	if (!d->in_block || !d->block_decode)
		return;
	if (d->block_stream)
		x.sl = find(c, d->block_stream);
	if (tl_hpack_feed(&d->hp, p, n, on_field, &x) < 0) {
		c->hpack_errors++;
		break_dir(c, dir);
	}
}

static void block_end(struct tl_h2_conn *c, unsigned dir)
{
	struct dir_state *d = &c->d[dir];
	struct slot *sl = d->block_stream ? find(c, d->block_stream) : NULL;
	bool ok = false;

	if (d->block_decode) {
		if (tl_hpack_block_end(&d->hp) == 0) {
			ok = true;
		} else {
			c->hpack_errors++;
			break_dir(c, dir);
		}
	}
	d->in_block = false;
	if (!sl)
		return;
	if (ok) {
		if (d->block_request)
			sl->s.request_known = true;
		else
			sl->s.response_known = true;
		sl->s.headers_cut |= tl_hpack_list_cut(&d->hp);
	}
	if (d->block_end_stream) {
		sl->end_mask |= (uint8_t)(1u << dir);
		if (d->block_request)
			sl->s.request_ended = true;
		else
			sl->s.response_ended = true;
		maybe_done(c, sl, d->ts);
	}
}

static void on_settings_end(struct tl_h2_conn *c, unsigned dir, const struct tl_h2_read *ev)
{
	struct dir_state *d = &c->d[dir], *peer = &c->d[!dir];

	if ((ev->malformed || ev->lost) && (ev->f.flags & TL_H2_FLAG_ACK))
		return;
	if (ev->malformed || ev->lost) {
		/* Parameters were not seen: its HEADER_TABLE_SIZE is unknown.
		 * It still takes its place among those the peer acknowledges
		 * (or the peer's next ACK would apply a later one early), and
		 * the peer's encoder may use any size up to the cap. */
		if (d->n_ack == ACK_QUEUE)
			memmove(d->ack_queue, d->ack_queue + 1, --d->n_ack * sizeof(d->ack_queue[0]));
		d->ack_queue[d->n_ack++] = NO_TABLE_SIZE;
		if (peer->hp.limit < peer->hp.lim.cap)
			tl_hpack_set_limit(&peer->hp, peer->hp.lim.cap);
		return;
	}
	if (ev->f.flags & TL_H2_FLAG_ACK) {
		/* dir acknowledges the peer's oldest SETTINGS: from now on
		 * dir's encoder is bound by it exactly. */
		if (peer->n_ack) {
			uint32_t v = peer->ack_queue[0];

			memmove(peer->ack_queue, peer->ack_queue + 1,
				--peer->n_ack * sizeof(peer->ack_queue[0]));
			if (v != NO_TABLE_SIZE)
				tl_hpack_set_limit(&d->hp, v);
		}
		return;
	}
	if (d->n_ack == ACK_QUEUE) {
		memmove(d->ack_queue, d->ack_queue + 1, --d->n_ack * sizeof(d->ack_queue[0]));
	}
	d->ack_queue[d->n_ack++] = d->settings_hts;
	/* Until the peer acknowledges, its encoder may use the larger of the
	 * old and the new limit. */
	if (d->settings_hts != NO_TABLE_SIZE && d->settings_hts > peer->hp.limit)
		tl_hpack_set_limit(&peer->hp, d->settings_hts);
}

static void on_rst(struct tl_h2_conn *c, unsigned dir, const struct tl_h2_read *ev)
{
	struct tl_h2_event out = {
		.kind = TL_H2_EV_RST_STREAM,
		.ts_ns = c->d[dir].ts,
		.mid_stream = c->mid_stream,
		.dir = dir,
		.by = role_of(c, dir),
		.stream_id = ev->f.stream_id,
		.error_code = ev->lost || ev->malformed ? 0 : ev->error_code,
		.payload_lost = ev->lost || ev->malformed,
	};
	struct slot *sl = find(c, ev->f.stream_id);

	c->rsts++;
	out.reset_stream = sl ? &sl->s : NULL;
	if (c->cb)
		c->cb(c->ud, &out);
	if (!sl || in_block_of(c, sl->s.id))
		return;
	sl->s.reset = true;
	sl->s.reset_code = out.error_code;
	sl->s.reset_dir = dir;
	sl->s.reset_by = out.by;
	close_stream(c, sl, "reset", out.ts_ns);
}

static void on_goaway(struct tl_h2_conn *c, unsigned dir, const struct tl_h2_read *ev)
{
	struct dir_state *d = &c->d[dir];
	bool lost = ev->lost || ev->malformed;
	struct tl_h2_event out;

	/* Who is the server of a connection nothing else said it of (first
	 * seen mid-stream, opened before the capture): the sender of a
	 * GOAWAY whose last-stream-id is odd, a stream clients open (RFC
	 * 9113 section 6.8: a client's names the server's pushes, even). */
	if (!lost && c->client_dir < 0 && (ev->last_stream_id & 1) &&
	    c->d[0].hint == TL_H2_ROLE_UNKNOWN && c->d[1].hint == TL_H2_ROLE_UNKNOWN) {
		d->hint = TL_H2_ROLE_SERVER;
		c->d[!dir].hint = TL_H2_ROLE_CLIENT;
	}
	out = (struct tl_h2_event){
		.kind = TL_H2_EV_GOAWAY,
		.ts_ns = d->ts,
		.mid_stream = c->mid_stream,
		.dir = dir,
		.by = role_of(c, dir),
		.last_stream_id = lost ? 0 : ev->last_stream_id,
		.error_code = lost ? 0 : ev->error_code,
		.payload_lost = lost,
		.debug = ev->debug,
		.debug_len = ev->debug_len,
		.debug_total = ev->debug_total,
	};

	c->goaways++;
	if (c->cb)
		c->cb(c->ud, &out);
	if (lost)
		return;
	if (!d->goaway_sent || ev->last_stream_id < d->goaway_last)
		d->goaway_last = ev->last_stream_id;
	d->goaway_sent = true;
	/* Streams the receiver opened above last-stream-id were not and will
	 * not be processed (RFC 9113 section 6.8): they end here. */
	if (out.by == TL_H2_ROLE_UNKNOWN)
		return;
	for (uint32_t i = 0; i < c->n_slots;) {
		struct slot *sl = &c->slots[i];
		bool theirs = (sl->s.id & 1) == (out.by == TL_H2_ROLE_SERVER ? 1u : 0u);

		if (theirs && sl->s.id > d->goaway_last && !in_block_of(c, sl->s.id)) {
			close_stream(c, sl, "refused", d->ts);
			continue;
		}
		i++;
	}
}

static void on_end(struct tl_h2_conn *c, unsigned dir, const struct tl_h2_read *ev)
{
	struct dir_state *d = &c->d[dir];

	switch (ev->f.type) {
	case TL_H2_HEADERS:
	case TL_H2_PUSH_PROMISE:
	case TL_H2_CONTINUATION:
		if (!d->in_block)
			return;
		if ((ev->lost || ev->malformed) && !d->broken)
			break_dir(c, dir);
		if (ev->f.flags & TL_H2_FLAG_END_HEADERS)
			block_end(c, dir);
		return;
	case TL_H2_DATA:
		if (ev->f.flags & TL_H2_FLAG_END_STREAM) {
			struct slot *sl = find(c, ev->f.stream_id);

			if (!sl)
				return;
			sl->end_mask |= (uint8_t)(1u << dir);
			if (role_of(c, dir) == TL_H2_ROLE_CLIENT)
				sl->s.request_ended = true;
			else if (role_of(c, dir) == TL_H2_ROLE_SERVER)
				sl->s.response_ended = true;
			maybe_done(c, sl, d->ts);
		}
		return;
	case TL_H2_SETTINGS:
		on_settings_end(c, dir, ev);
		return;
	case TL_H2_RST_STREAM:
		on_rst(c, dir, ev);
		return;
	case TL_H2_GOAWAY:
		on_goaway(c, dir, ev);
		return;
	default:
		return;
	}
}

static void on_preface(struct tl_h2_conn *c, unsigned dir)
{
	struct dir_state *peer = &c->d[!dir];

	c->is_h2 = true;
	c->client_dir = (int)dir;
	c->from_start = true;
	if (!c->d[dir].broken)
		c->d[dir].decodable = true;
	/* The server's first frame was its SETTINGS and it sent no header
	 * block before this preface: its table is known too. */
	if (peer->server_start && !peer->blocks_seen && !peer->broken)
		peer->decodable = true;
}

static void on_frame(struct tl_h2_conn *c, unsigned dir, const struct tl_h2_read *ev)
{
	struct dir_state *d = &c->d[dir];

	c->is_h2 = true;
	d->frames++;
	if (d->frames == 1 && c->client_dir != (int)dir) {
		if (ev->f.type == TL_H2_SETTINGS && !(ev->f.flags & TL_H2_FLAG_ACK) && !d->broken) {
			d->server_start = true;
			if (c->client_dir >= 0)
				d->decodable = true;
		} else {
			c->mid_stream = true;
		}
	}
	/* A header block admits only its CONTINUATIONs in between. */
	if (d->in_block && ev->f.type != TL_H2_CONTINUATION) {
		if (!d->broken) {
			c->hpack_errors++;
			break_dir(c, dir);
		}
		d->in_block = false;
	}
	switch (ev->f.type) {
	case TL_H2_HEADERS:
	case TL_H2_PUSH_PROMISE:
		block_begin(c, dir, &ev->f);
		break;
	case TL_H2_CONTINUATION:
		if (!d->in_block || ev->f.stream_id != (d->block_stream ? d->block_stream
								      : ev->f.stream_id)) {
			if (!d->broken) {
				c->hpack_errors++;
				break_dir(c, dir);
			}
		}
		break;
	case TL_H2_SETTINGS:
		d->settings_hts = NO_TABLE_SIZE;
		break;
	default:
		break;
	}
}

static void desync(struct tl_h2_conn *c, unsigned dir)
{
	c->desyncs++;
	c->d[dir].in_block = false;
	if (!c->d[dir].broken)
		break_dir(c, dir);
}

static void handle(struct tl_h2_conn *c, unsigned dir, const struct tl_h2_read *ev)
{
	switch (ev->kind) {
	case TL_H2R_PREFACE:
		on_preface(c, dir);
		break;
	case TL_H2R_FRAME:
		on_frame(c, dir, ev);
		break;
	case TL_H2R_FRAGMENT:
		block_fragment(c, dir, ev->p, ev->n);
		break;
	case TL_H2R_SETTING:
		if (ev->setting_id == TL_H2_SETTINGS_HEADER_TABLE_SIZE)
			c->d[dir].settings_hts = ev->setting_value;
		break;
	case TL_H2R_END:
		on_end(c, dir, ev);
		break;
	case TL_H2R_DESYNC:
		desync(c, dir);
		break;
	case TL_H2R_NONE:
		break;
	}
}

static void run(struct tl_h2_conn *c, unsigned dir, const uint8_t *buf, size_t len)
{
	struct tl_h2_reader *r = &c->d[dir].rd;
	size_t i = 0;

	for (;;) {
		struct tl_h2_read ev;
		size_t k = tl_h2_reader_step(r, buf + i, len - i, &ev);

		i += k;
		if (ev.kind == TL_H2R_NONE && (i >= len || k == 0))
			break;
		handle(c, dir, &ev);
	}
}

int tl_h2_conn_data(struct tl_h2_conn *c, unsigned dir, const uint8_t *buf, size_t len,
		    int64_t ts_ns, unsigned flags)
{
	struct dir_state *d;

	if (dir > 1)
		return -EINVAL;
	d = &c->d[dir];
	d->ts = ts_ns;
	d->seen = true;
	c->last_ns = ts_ns;
	if (flags & TL_H2_CHUNK_FRAME) {
		if (!tl_h2_reader_at_frame(&d->rd)) {
			desync(c, dir);
			tl_h2_reader_desync(&d->rd);
			tl_h2_reader_at_frame(&d->rd);
		}
		c->is_h2 = true;
	} else if (!tl_h2_reader_synced(&d->rd)) {
		if (!(flags & TL_H2_CHUNK_START) || !tl_h2_reader_resync(&d->rd, buf, len))
			return 0;
		c->is_h2 = true;
	}
	run(c, dir, buf, len);
	return 0;
}

void tl_h2_conn_skip(struct tl_h2_conn *c, unsigned dir, uint64_t n, int64_t ts_ns)
{
	struct dir_state *d;

	if (dir > 1 || n == 0)
		return;
	d = &c->d[dir];
	d->ts = ts_ns;
	c->last_ns = ts_ns;
	if (!tl_h2_reader_synced(&d->rd))
		return;
	if (tl_h2_reader_skip(&d->rd, n) < 0) {
		desync(c, dir);
		return;
	}
	/* Bytes of a header block (or of its frame's fixed fields) went by:
	 * what follows the gap is never decoded. */
	if (d->rd.lost && d->in_block && !d->broken)
		break_dir(c, dir);
	/* The skip may have completed the frame. */
	run(c, dir, (const uint8_t *)"", 0);
}

void tl_h2_conn_lost(struct tl_h2_conn *c, unsigned dir, int64_t ts_ns)
{
	if (dir > 1)
		return;
	c->d[dir].ts = ts_ns;
	tl_h2_reader_desync(&c->d[dir].rd);
	desync(c, dir);
	/* What became of the open streams in the lost bytes is unknown. */
	while (c->n_slots)
		close_stream(c, &c->slots[c->n_slots - 1], "lost", ts_ns);
}

void tl_h2_conn_close(struct tl_h2_conn *c, int64_t ts_ns, bool reset)
{
	/* A direction that lost its frames (and found none again) may have
	 * ended its streams in what was not seen: they are lost, not cut by
	 * the close. */
	bool blind = (c->d[0].seen && !tl_h2_reader_synced(&c->d[0].rd)) ||
		     (c->d[1].seen && !tl_h2_reader_synced(&c->d[1].rd));

	while (c->n_slots)
		close_stream(c, &c->slots[0], blind ? "lost" : reset ? "reset" : "closed", ts_ns);
}

void tl_h2_conn_stats(const struct tl_h2_conn *c, struct tl_h2_conn_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->is_h2 = c->is_h2;
	ret->from_start = c->from_start;
	ret->client_dir = c->client_dir;
	for (int i = 0; i < 2; i++) {
		ret->decodable[i] = c->d[i].decodable;
		ret->frames[i] = c->d[i].frames;
		ret->header_blocks[i] = c->d[i].blocks;
	}
	ret->streams = c->streams;
	ret->streams_evicted = c->evicted;
	ret->hpack_errors = c->hpack_errors;
	ret->desyncs = c->desyncs;
	ret->goaways = c->goaways;
	ret->rst_streams = c->rsts;
	ret->last_ns = c->last_ns;
}
