/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "h2-pair.h"
#include "http-pair.h"
#include "termline-http.h"

#define BUCKETS 4096
/* Pending requests a connection has room for at first. */
#define Q_FIRST 2

struct pending {
	char method[TL_HTTP_METHOD_MAX];
	char path[TL_HTTP_PATH_MAX];
	char id[TL_HTTP_ID_MAX];
	int id_header;
	bool head_cut;
	int64_t ts_ns;
	struct tl_http_peer peer; /* the connection's when the request came */
};

/* A head split across reads or writes, per side (0 = read, 1 = written). */
struct head_buf {
	uint8_t *buf;
	uint32_t len;
	int64_t ts_ns;    /* of its first piece: the message started then */
	bool active;
};

struct conn {
	uint64_t key;
	uint32_t tgid;
	uint64_t cgroup_id;
	enum tl_http_direction dir;
	bool not_http;    /* TLS or HTTP/2: nothing more to see */
	bool upgraded;    /* 101: the bytes that follow are another protocol */
	bool was_reset;
	int64_t last_ns;
	int64_t open_ns;  /* the OPEN record's time; 0 when not seen */
	uint32_t no;      /* the consumer's number for it (tl_http_exchange.conn_no) */
	struct tl_http_peer peer;
	struct head_buf head[2];
	/* HTTP/2: the connection's decoder, made at its first HTTP/2 record
	 * (the HTTP/1 side sees nothing of it then) */
	struct tl_h2_pair *h2;
	struct tl_http_tracker *t;
	/* Ring of q_cap pending requests, grown by doubling up to max_pending:
	 * most connections never hold more than one or two, and a connection
	 * per request would otherwise clear max_pending entries each time. */
	struct pending *q;
	uint32_t q_head, q_len, q_cap;
	struct conn *hnext;              /* hash chain */
	struct conn *lru_prev, *lru_next; /* most recent at lru_head */
};

struct tl_http_tracker {
	struct tl_http_tracker_config cfg;
	tl_http_exchange_cb cb;
	void *ud;
	tl_http_h2_cb h2_cb;
	void *h2_ud;
	struct conn *buckets[BUCKETS];
	struct conn *lru_head, *lru_tail;
	struct tl_http_tracker_stats st;
};

static unsigned bucket(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (unsigned)(key % BUCKETS);
}

int tl_http_tracker_new(const struct tl_http_tracker_config *cfg, tl_http_exchange_cb cb,
			void *userdata, struct tl_http_tracker **ret)
{
	struct tl_http_tracker *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->cfg = *cfg;
	if (!t->cfg.max_conns)
		t->cfg.max_conns = 16384;
	if (!t->cfg.max_pending)
		t->cfg.max_pending = 64;
	if (!t->cfg.head_max)
		t->cfg.head_max = 8192;
	if (t->cfg.head_max > TL_HTTP_HEAD_MAX)
		t->cfg.head_max = TL_HTTP_HEAD_MAX;
	t->cb = cb;
	t->ud = userdata;
	*ret = t;
	return 0;
}

static void lru_unlink(struct tl_http_tracker *t, struct conn *c)
{
	if (c->lru_prev)
		c->lru_prev->lru_next = c->lru_next;
	else
		t->lru_head = c->lru_next;
	if (c->lru_next)
		c->lru_next->lru_prev = c->lru_prev;
	else
		t->lru_tail = c->lru_prev;
	c->lru_prev = c->lru_next = NULL;
}

static void lru_front(struct tl_http_tracker *t, struct conn *c)
{
	c->lru_next = t->lru_head;
	c->lru_prev = NULL;
	if (t->lru_head)
		t->lru_head->lru_prev = c;
	t->lru_head = c;
	if (!t->lru_tail)
		t->lru_tail = c;
}

static void conn_free(struct conn *c)
{
	if (!c)
		return;
	free(c->head[0].buf);
	free(c->head[1].buf);
	free(c->q);
	tl_h2_pair_free(c->h2);
	free(c);
}

/* Unlinks c from the table and the LRU list and frees it. */
static void conn_remove(struct tl_http_tracker *t, struct conn *c)
{
	struct conn **pp = &t->buckets[bucket(c->key)];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
	lru_unlink(t, c);
	t->st.conns--;
	conn_free(c);
}

void tl_http_tracker_free(struct tl_http_tracker *t)
{
	if (!t)
		return;
	while (t->lru_head)
		conn_remove(t, t->lru_head);
	free(t);
}

static struct conn *conn_find(struct tl_http_tracker *t, uint64_t key)
{
	for (struct conn *c = t->buckets[bucket(key)]; c; c = c->hnext)
		if (c->key == key)
			return c;
	return NULL;
}

static void report(struct tl_http_tracker *t, struct conn *c, const struct pending *p,
		   uint16_t status, const char *error, int64_t end_ns, bool conn_close)
{
	/* Field by field: an initializer would zero the ~400 bytes of
	 * strings first, which the copies below fill anyway. */
	struct tl_http_exchange x;

	x.conn = c->key;
	x.tgid = c->tgid;
	x.cgroup_id = c->cgroup_id;
	x.direction = c->dir;
	x.id_header = p->id_header;
	x.status = status;
	x.error = error;
	x.head_cut = p->head_cut;
	x.start_ns = p->ts_ns;
	x.end_ns = end_ns < p->ts_ns ? p->ts_ns : end_ns;
	x.peer = p->peer.family ? p->peer : c->peer;
	x.conn_start_ns = c->open_ns;
	x.conn_close = conn_close;
	x.conn_no = &c->no;
	x.conn_seq = c->no;
	x.protocol = TL_HTTP_PROTO_H1;
	x.stream_id = 0;
	x.grpc_status = -1;
	x.response_unknown = false;
	x.after_goaway = false;
	x.grpc_message[0] = '\0';
	memcpy(x.method, p->method, sizeof(x.method));
	memcpy(x.path, p->path, sizeof(x.path));
	memcpy(x.id, p->id, sizeof(x.id));
	t->st.exchanges++;
	t->cb(t->ud, &x);
}

static void fail_pending(struct tl_http_tracker *t, struct conn *c, const char *error, int64_t ts)
{
	while (c->q_len) {
		const struct pending *p = &c->q[c->q_head];

		c->q_head = (c->q_head + 1) % c->q_cap;
		c->q_len--;
		report(t, c, p, 0, error, ts, false);
	}
}

static struct conn *conn_get(struct tl_http_tracker *t, uint64_t key, uint32_t tgid,
			     uint64_t cgroup_id)
{
	struct conn *c = conn_find(t, key);
	unsigned b;

	if (c) {
		lru_unlink(t, c);
		lru_front(t, c);
		return c;
	}
	/* Full: the least recently active connection goes, and says so. */
	if (t->st.conns >= t->cfg.max_conns && t->lru_tail) {
		struct conn *old = t->lru_tail;

		fail_pending(t, old, "evicted", old->last_ns);
		if (old->h2)
			tl_h2_pair_end(old->h2, old->last_ns, "evicted");
		conn_remove(t, old);
		t->st.evicted++;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->q_cap = t->cfg.max_pending < Q_FIRST ? t->cfg.max_pending : Q_FIRST;
	c->q = malloc(c->q_cap * sizeof(*c->q));
	if (!c->q) {
		free(c);
		return NULL;
	}
	c->key = key;
	c->t = t;
	c->tgid = tgid;
	c->cgroup_id = cgroup_id;
	b = bucket(key);
	c->hnext = t->buckets[b];
	t->buckets[b] = c;
	lru_front(t, c);
	t->st.conns++;
	return c;
}

/* Twice the room (up to max_pending), the ring laid out from index 0. */
static int q_grow(struct tl_http_tracker *t, struct conn *c)
{
	uint32_t cap = c->q_cap * 2 < t->cfg.max_pending ? c->q_cap * 2 : t->cfg.max_pending;
	struct pending *q = malloc(cap * sizeof(*q));

	if (!q)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->q_len; i++)
		q[i] = c->q[(c->q_head + i) % c->q_cap];
	free(c->q);
	c->q = q;
	c->q_cap = cap;
	c->q_head = 0;
	return 0;
}

static void on_request(struct tl_http_tracker *t, struct conn *c, int side,
		       const struct tl_http_head *h, bool cut, int64_t ts)
{
	struct pending *p;

	if (c->dir == TL_HTTP_DIR_UNKNOWN)
		c->dir = side == 0 ? TL_HTTP_DIR_INBOUND : TL_HTTP_DIR_OUTBOUND;
	else if ((c->dir == TL_HTTP_DIR_INBOUND) != (side == 0))
		return; /* a request going the wrong way: not ours to pair */
	/* Without room to grow, the oldest goes (below). */
	if (c->q_len == c->q_cap && c->q_cap < t->cfg.max_pending)
		(void)q_grow(t, c);
	if (c->q_len == c->q_cap) {
		/* A peer pipelining without end: the oldest goes unreported. */
		c->q_head = (c->q_head + 1) % c->q_cap;
		c->q_len--;
		t->st.pending_overflow++;
	}
	p = &c->q[(c->q_head + c->q_len) % c->q_cap];
	c->q_len++;
	memcpy(p->method, h->method, sizeof(p->method));
	memcpy(p->path, h->path, sizeof(p->path));
	memcpy(p->id, h->id, sizeof(p->id));
	p->id_header = h->id_header;
	p->head_cut = cut || h->path_cut || h->id_cut;
	p->ts_ns = ts;
	p->peer = c->peer;
}

static void on_response(struct tl_http_tracker *t, struct conn *c, int side,
			const struct tl_http_head *h, int64_t ts)
{
	const struct pending *p;

	/* Responses travel against requests: written by a server, read by a
	 * client. A connection first seen at a response is told by it. */
	if (c->dir == TL_HTTP_DIR_UNKNOWN)
		c->dir = side == 1 ? TL_HTTP_DIR_INBOUND : TL_HTTP_DIR_OUTBOUND;
	else if ((c->dir == TL_HTTP_DIR_INBOUND) != (side == 1))
		return;
	/* 1xx other than 101 are interim: the final response follows. */
	if (h->status < 200 && h->status != 101)
		return;
	if (c->q_len == 0) {
		t->st.unmatched_responses++;
		return;
	}
	/* The slot stays as it is until a request is added: report() does
	 * not add one. */
	p = &c->q[c->q_head];
	c->q_head = (c->q_head + 1) % c->q_cap;
	c->q_len--;
	report(t, c, p, h->status, NULL, ts, h->conn_close);
	if (h->status == 101) {
		c->upgraded = true;
		fail_pending(t, c, "closed", ts);
	}
}

/* How many body bytes follow a complete head inside this same buffer can be
 * skipped; -1 when unknown (chunked, close-delimited): stop looking. */
static long body_len(const struct tl_http_head *h)
{
	if (h->kind == TL_HTTP_REQUEST) {
		if (h->chunked || (h->has_length && h->content_length > (1UL << 30)))
			return -1;
		return h->has_length ? (long)h->content_length : 0;
	}
	if (h->status < 200 || h->status == 204 || h->status == 304)
		return 0;
	if (h->chunked || !h->has_length || h->content_length > (1UL << 30))
		return -1;
	return (long)h->content_length;
}

static void on_head(struct tl_http_tracker *t, struct conn *c, int side,
		    const struct tl_http_head *h, bool cut, int64_t ts)
{
	if (h->kind == TL_HTTP_REQUEST)
		on_request(t, c, side, h, cut, ts);
	else
		on_response(t, c, side, h, ts);
}

/* Heads in buf, one after the other as long as their bodies can be
 * skipped (pipelined requests in one write). more = bytes beyond len that
 * were not copied. */
static void scan(struct tl_http_tracker *t, struct conn *c, int side, const uint8_t *buf,
		 size_t len, bool more, int64_t ts)
{
	struct head_buf *hb = &c->head[side];
	size_t off = 0;

	while (off < len && !c->not_http && !c->upgraded) {
		struct tl_http_head h;
		enum tl_http_kind k = tl_http_classify(buf + off, len - off);
		int r;
		long body;

		if (k == TL_HTTP_TLS || k == TL_HTTP_H2) {
			if (off == 0 && c->q_len == 0) {
				c->not_http = true;
				t->st.not_http++;
			}
			return;
		}
		if (k == TL_HTTP_NONE)
			return; /* a body, or bytes we do not follow */
		r = tl_http_parse_head(buf + off, len - off, &t->cfg.want, &h);
		if (r == -EAGAIN) {
			if (more || len - off >= t->cfg.head_max) {
				/* No more of this head will come: use what it said. */
				if (h.kind == TL_HTTP_REQUEST || h.kind == TL_HTTP_RESPONSE)
					on_head(t, c, side, &h, true, ts);
				return;
			}
			/* Keep it for the next read or write on this side. */
			if (!hb->buf && !(hb->buf = malloc(t->cfg.head_max)))
				return;
			memcpy(hb->buf, buf + off, len - off);
			hb->len = (uint32_t)(len - off);
			hb->ts_ns = ts;
			hb->active = true;
			return;
		}
		if (r < 0)
			return;
		/* A HEAD response has no body: look at the request it answers. */
		if (h.kind == TL_HTTP_RESPONSE && c->q_len && strcmp(c->q[c->q_head].method, "HEAD") == 0)
			body = 0;
		else
			body = body_len(&h);
		on_head(t, c, side, &h, false, ts);
		if (body < 0)
			return;
		off += h.head_len + (size_t)body;
	}
}

int tl_http_tracker_data(struct tl_http_tracker *t, uint64_t conn, uint32_t tgid,
			 uint64_t cgroup_id, bool by_reader, const uint8_t *buf, size_t len,
			 size_t total, int64_t ts_ns)
{
	int side = by_reader ? 0 : 1;
	struct conn *c = conn_get(t, conn, tgid, cgroup_id);
	struct head_buf *hb;

	if (!c)
		return -ENOMEM;
	c->last_ns = ts_ns;
	if (c->not_http || c->upgraded)
		return 0;
	/* The request is answered by whoever holds the socket now (a worker
	 * thread or process): the latest writer names the process. */
	if (by_reader == (c->dir != TL_HTTP_DIR_OUTBOUND)) {
		c->tgid = tgid;
		c->cgroup_id = cgroup_id;
	}
	hb = &c->head[side];
	if (hb->active) {
		/* The rest of a head: join and parse again from its start. */
		size_t room = t->cfg.head_max - hb->len, k = len < room ? len : room;
		int64_t first = hb->ts_ns;
		uint32_t n;

		memcpy(hb->buf + hb->len, buf, k);
		hb->len += (uint32_t)k;
		hb->active = false;
		n = hb->len;
		hb->len = 0;
		/* scan() may start a new partial head in hb->buf: work on a copy. */
		{
			uint8_t *tmp = malloc(n);

			if (!tmp)
				return -ENOMEM;
			memcpy(tmp, hb->buf, n);
			scan(t, c, side, tmp, n, k < len || total > len, first);
			free(tmp);
		}
		return 0;
	}
	scan(t, c, side, buf, len, total > len, ts_ns);
	return 0;
}

void tl_http_tracker_reset(struct tl_http_tracker *t, uint64_t conn, int64_t ts_ns)
{
	struct conn *c = conn_find(t, conn);

	if (!c)
		return;
	c->was_reset = true;
	fail_pending(t, c, "reset", ts_ns);
}

void tl_http_tracker_lost(struct tl_http_tracker *t, uint64_t conn)
{
	struct conn *c = conn_find(t, conn);

	if (!c)
		return;
	t->st.lost_requests += c->q_len;
	c->q_len = 0;
	if (c->h2)
		tl_h2_pair_lost(c->h2, c->last_ns);
	c->head[0].active = c->head[1].active = false;
	c->head[0].len = c->head[1].len = 0;
}

void tl_http_tracker_close(struct tl_http_tracker *t, uint64_t conn, int64_t ts_ns)
{
	struct conn *c = conn_find(t, conn);

	if (!c)
		return;
	fail_pending(t, c, c->was_reset ? "reset" : "closed", ts_ns);
	if (c->h2)
		tl_h2_pair_end(c->h2, ts_ns, c->was_reset ? "reset" : "closed");
	conn_remove(t, c);
}

int tl_http_tracker_open(struct tl_http_tracker *t, uint64_t conn, uint64_t cgroup_id, bool accepted,
			 const struct tl_http_peer *peer, int64_t ts_ns)
{
	struct conn *c = conn_find(t, conn);

	if (c)
		tl_http_tracker_close(t, conn, ts_ns);
	c = conn_get(t, conn, 0, cgroup_id);
	if (!c)
		return -ENOMEM;
	c->last_ns = ts_ns;
	c->open_ns = ts_ns;
	c->dir = accepted ? TL_HTTP_DIR_INBOUND : TL_HTTP_DIR_OUTBOUND;
	if (peer)
		c->peer = *peer;
	t->st.opened++;
	return 0;
}

void tl_http_tracker_peer(struct tl_http_tracker *t, uint64_t conn, const struct tl_http_peer *peer)
{
	struct conn *c = conn_find(t, conn);

	if (c)
		c->peer = *peer;
}

bool tl_http_rec_peer(const struct tl_http_rec *r, struct tl_http_peer *ret)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!(r->flags & TL_HTTP_RF_PEER) ||
	    (r->family != TL_HTTP_AF_INET && r->family != TL_HTTP_AF_INET6))
		return false;
	memset(ret, 0, sizeof(*ret));
	ret->port = r->peer_port;
	ret->local_port = r->local_port;
	if (r->family == TL_HTTP_AF_INET6 && memcmp(r->peer_addr, mapped, sizeof(mapped)) != 0) {
		ret->family = TL_HTTP_AF_INET6;
		memcpy(ret->addr, r->peer_addr, 16);
		return true;
	}
	ret->family = TL_HTTP_AF_INET;
	memcpy(ret->addr, r->family == TL_HTTP_AF_INET6 ? r->peer_addr + 12 : r->peer_addr, 4);
	return true;
}

/* ---- HTTP/2 (h2-pair.c decodes; the connection's facts are added here) ---- */

void tl_http_tracker_on_h2(struct tl_http_tracker *t, tl_http_h2_cb cb, void *userdata)
{
	t->h2_cb = cb;
	t->h2_ud = userdata;
}

static void h2_stream(void *ud, const struct tl_h2_pair_stream *st)
{
	struct conn *c = ud;
	struct tl_http_tracker *t = c->t;
	const struct tl_h2_stream *s = st->s;
	struct tl_http_exchange x;

	memset(&x, 0, sizeof(x));
	x.conn = c->key;
	x.tgid = c->tgid;
	x.cgroup_id = c->cgroup_id;
	x.direction = st->direction_known ? (st->inbound ? TL_HTTP_DIR_INBOUND : TL_HTTP_DIR_OUTBOUND)
					  : c->dir;
	memcpy(x.method, s->method, sizeof(x.method));
	memcpy(x.path, s->path, sizeof(x.path));
	memcpy(x.id, s->request_id, sizeof(x.id));
	x.id_header = s->request_id_header;
	x.status = s->status;
	x.error = s->error;
	x.head_cut = s->headers_cut;
	x.start_ns = s->start_ns;
	x.end_ns = s->end_ns < s->start_ns ? s->start_ns : s->end_ns;
	x.peer = c->peer;
	x.conn_start_ns = c->open_ns;
	x.conn_no = &c->no;
	x.conn_seq = c->no;
	x.protocol = TL_HTTP_PROTO_H2;
	x.stream_id = s->id;
	x.grpc_status = s->grpc_status;
	x.response_unknown = st->response_unknown;
	x.after_goaway = s->after_goaway;
	_Static_assert(sizeof(x.grpc_message) >= sizeof(s->grpc_message), "grpc-message fits");
	memcpy(x.grpc_message, s->grpc_message, sizeof(s->grpc_message));
	t->st.exchanges++;
	t->cb(t->ud, &x);
}

static void h2_event(void *ud, const struct tl_h2_pair_event *ev)
{
	struct conn *c = ud;
	struct tl_http_tracker *t = c->t;
	struct tl_http_h2_event out;

	if (!t->h2_cb)
		return;
	memset(&out, 0, sizeof(out));
	out.conn = c->key;
	out.tgid = c->tgid;
	out.cgroup_id = c->cgroup_id;
	out.ts_ns = ev->ts_ns;
	out.peer = c->peer;
	out.conn_start_ns = c->open_ns;
	out.conn_no = &c->no;
	out.sent = ev->sent;
	out.error_code = ev->error_code;
	out.payload_lost = ev->payload_lost;
	out.request_id = out.path = "";
	switch (ev->kind) {
	case TL_H2_PAIR_GOAWAY:
		out.kind = TL_HTTP_H2_GOAWAY;
		out.last_stream_id = ev->last_stream_id;
		out.debug = ev->debug;
		out.debug_len = ev->debug_len;
		break;
	case TL_H2_PAIR_RST_STREAM:
		out.kind = TL_HTTP_H2_RST_STREAM;
		out.stream_id = ev->stream_id;
		if (ev->stream && ev->stream->request_known) {
			out.request_id = ev->stream->request_id;
			out.path = ev->stream->path;
		}
		break;
	case TL_H2_PAIR_END:
		out.kind = TL_HTTP_H2_END;
		out.end = ev->end;
		out.decoded = ev->decoded;
		out.streams = ev->streams;
		out.streams_unknown = ev->streams_unknown;
		out.streams_open = ev->streams_open;
		out.streams_after_goaway = ev->streams_after_goaway;
		out.goaways_sent = ev->goaways_sent;
		out.goaways_received = ev->goaways_received;
		out.rsts_sent = ev->rsts_sent;
		out.rsts_received = ev->rsts_received;
		break;
	}
	if (ev->kind == TL_H2_PAIR_END)
		out.direction = ev->direction_known ? (ev->inbound ? TL_HTTP_DIR_INBOUND : TL_HTTP_DIR_OUTBOUND)
						    : c->dir;
	else
		out.direction = c->dir;
	t->h2_cb(t->h2_ud, &out);
}

static const struct tl_h2_pair_ops h2_ops = {.stream = h2_stream, .event = h2_event};

/* An HTTP/2 record: its connection's decoder (made at the first), fed. */
static void h2_record(struct tl_http_tracker *t, const struct tl_http_rec *r, const uint8_t *data)
{
	struct conn *c = conn_get(t, r->sock, r->tgid, r->cgroup_id);
	struct tl_http_peer peer;

	if (!c)
		return;
	c->last_ns = (int64_t)r->ktime_ns;
	c->tgid = r->tgid;
	c->cgroup_id = r->cgroup_id;
	if (tl_http_rec_peer(r, &peer))
		c->peer = peer;
	if (!c->h2) {
		if (tl_h2_pair_new(&t->cfg.want, &h2_ops, c, &c->h2) < 0)
			return;
		/* what it held of HTTP/1 (nothing, or a misread) is not paired */
		c->not_http = true;
		t->st.h2++;
		if (c->dir != TL_HTTP_DIR_UNKNOWN && c->open_ns)
			tl_h2_pair_set_server(c->h2, c->dir == TL_HTTP_DIR_INBOUND);
	}
	tl_h2_pair_record(c->h2, r->flags, (int64_t)r->ktime_ns, data, r->len);
}

void tl_http_tracker_record(struct tl_http_tracker *t, const struct tl_http_rec *r,
			    const uint8_t *data)
{
	int64_t ts = (int64_t)r->ktime_ns;
	struct tl_http_peer peer;

	/* (an HTTP/2 record's loss is its direction's: h2-pair.c) */
	if ((r->flags & TL_HTTP_RF_LOST) && r->kind != TL_HTTP_REC_H2)
		tl_http_tracker_lost(t, r->sock);
	switch (r->kind) {
	case TL_HTTP_REC_OPEN:
		tl_http_tracker_open(t, r->sock, r->cgroup_id, r->flags & TL_HTTP_RF_ACCEPTED,
				     tl_http_rec_peer(r, &peer) ? &peer : NULL, ts);
		break;
	case TL_HTTP_REC_DATA:
		/* (before the data: the request it starts takes the peer) */
		if (tl_http_rec_peer(r, &peer)) {
			struct conn *c = conn_get(t, r->sock, r->tgid, r->cgroup_id);

			if (c)
				c->peer = peer;
		}
		tl_http_tracker_data(t, r->sock, r->tgid, r->cgroup_id, r->flags & TL_HTTP_RF_READ, data,
				     r->len, r->total, ts);
		break;
	case TL_HTTP_REC_H2:
		h2_record(t, r, data);
		break;
	case TL_HTTP_REC_ERROR:
		tl_http_tracker_reset(t, r->sock, ts);
		break;
	case TL_HTTP_REC_CLOSE:
		/* The socket's end that carries a reset the process never
		 * read (the sock variant) */
		if (r->err == -ECONNRESET)
			tl_http_tracker_reset(t, r->sock, ts);
		tl_http_tracker_close(t, r->sock, ts);
		break;
	case TL_HTTP_REC_EOF:
		tl_http_tracker_close(t, r->sock, ts);
		break;
	}
}

void tl_http_tracker_expire(struct tl_http_tracker *t, int64_t before_ns)
{
	while (t->lru_tail && t->lru_tail->last_ns < before_ns) {
		struct conn *c = t->lru_tail;

		fail_pending(t, c, "closed", c->last_ns);
		if (c->h2)
			tl_h2_pair_end(c->h2, c->last_ns, "expired");
		conn_remove(t, c);
	}
}

void tl_http_tracker_stats(const struct tl_http_tracker *t, struct tl_http_tracker_stats *ret)
{
	*ret = t->st;
}
