/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel's HTTP/2 records of one connection into the decoder, and its
 * streams and frames out as the capture's exchanges and events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "h2-pair.h"
#include "termline-http.h"

struct tl_h2_pair {
	struct tl_h2_conn *c;
	struct tl_h2_pair_ops ops;
	void *ud;
	int server_hint; /* -1 unknown, 0 the tracked process is the client, 1 the server */
	bool ending;
	uint64_t streams_unknown, streams_open, streams_after_goaway;
	uint64_t goaways[2], rsts[2]; /* by direction: [0] received, [1] sent */
};

/* Direction 0 is what the tracked process read: it is the server when the
 * client's preface came that way. */
static void roles(const struct tl_h2_pair *p, bool *inbound, bool *known)
{
	struct tl_h2_conn_stats st;

	tl_h2_conn_stats(p->c, &st);
	if (st.client_dir >= 0) {
		*inbound = st.client_dir == 0;
		*known = true;
	} else {
		*inbound = p->server_hint == 1;
		*known = p->server_hint >= 0;
	}
}

static void on_h2(void *ud, const struct tl_h2_event *ev)
{
	struct tl_h2_pair *p = ud;
	struct tl_h2_pair_event out;

	if (ev->kind == TL_H2_EV_STREAM) {
		const struct tl_h2_stream *s = ev->stream;
		struct tl_h2_pair_stream st = {.s = s};

		p->streams_after_goaway += s->after_goaway;
		/* Cut by the connection's end: one whose response had not
		 * ended. A response that ended (the server's END_STREAM) was
		 * whole whatever the client's side: on a connection first seen
		 * mid-stream its END_STREAM came before the capture, on a
		 * bidirectional call it may never come. */
		if (p->ending && s->error && !s->response_ended &&
		    (strcmp(s->error, "closed") == 0 || strcmp(s->error, "reset") == 0))
			p->streams_open++;
		/* Without its request's headers a stream is only counted:
		 * nothing of it is guessed. */
		if (!s->request_known) {
			p->streams_unknown++;
			return;
		}
		roles(p, &st.inbound, &st.direction_known);
		st.response_unknown = !s->response_known && s->response_ended;
		if (p->ops.stream)
			p->ops.stream(p->ud, &st);
		return;
	}
	memset(&out, 0, sizeof(out));
	out.ts_ns = ev->ts_ns;
	out.sent = ev->dir == 1;
	out.error_code = ev->error_code;
	out.payload_lost = ev->payload_lost;
	if (ev->kind == TL_H2_EV_GOAWAY) {
		out.kind = TL_H2_PAIR_GOAWAY;
		out.last_stream_id = ev->last_stream_id;
		out.debug = ev->debug;
		out.debug_len = ev->debug_len;
		p->goaways[out.sent]++;
	} else {
		out.kind = TL_H2_PAIR_RST_STREAM;
		out.stream_id = ev->stream_id;
		out.stream = ev->reset_stream;
		p->rsts[out.sent]++;
	}
	if (p->ops.event)
		p->ops.event(p->ud, &out);
}

int tl_h2_pair_new(const struct tl_http_want *want, const struct tl_h2_pair_ops *ops,
		   void *userdata, struct tl_h2_pair **ret)
{
	struct tl_h2_config cfg = {0};
	struct tl_h2_pair *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	if (want)
		cfg.want = *want;
	p->ops = *ops;
	p->ud = userdata;
	p->server_hint = -1;
	r = tl_h2_conn_new(&cfg, on_h2, p, &p->c);
	if (r < 0) {
		free(p);
		return r;
	}
	*ret = p;
	return 0;
}

void tl_h2_pair_free(struct tl_h2_pair *p)
{
	if (!p)
		return;
	tl_h2_conn_free(p->c);
	free(p);
}

void tl_h2_pair_set_server(struct tl_h2_pair *p, bool tracked_is_server)
{
	p->server_hint = tracked_is_server;
	tl_h2_conn_set_role(p->c, 0, tracked_is_server ? TL_H2_ROLE_CLIENT : TL_H2_ROLE_SERVER);
	tl_h2_conn_set_role(p->c, 1, tracked_is_server ? TL_H2_ROLE_SERVER : TL_H2_ROLE_CLIENT);
}

void tl_h2_pair_record(struct tl_h2_pair *p, uint16_t flags, int64_t ts_ns, const uint8_t *data,
		       size_t len)
{
	unsigned dir = flags & TL_HTTP_RF_READ ? 0 : 1;
	size_t off = 0;

	if (flags & TL_HTTP_RF_LOST)
		tl_h2_conn_lost(p->c, dir, ts_ns);
	while (off < len) {
		struct tl_h2_seg g;

		if (len - off < sizeof(g)) {
			tl_h2_conn_lost(p->c, dir, ts_ns);
			return;
		}
		memcpy(&g, data + off, sizeof(g));
		off += sizeof(g);
		if (g.copy > len - off) {
			tl_h2_conn_lost(p->c, dir, ts_ns);
			return;
		}
		/* (-ENOMEM leaves the direction's headers unknown; the
		 * connection goes on) */
		if (g.copy)
			(void)tl_h2_conn_data(p->c, dir, data + off, g.copy, ts_ns,
					      g.flags & TL_H2_SEG_SYNC ? TL_H2_CHUNK_FRAME : 0);
		off += g.copy;
		if (g.skip)
			tl_h2_conn_skip(p->c, dir, g.skip, ts_ns);
	}
	if (flags & TL_HTTP_RF_H2_OFF)
		tl_h2_conn_lost(p->c, dir, ts_ns);
}

void tl_h2_pair_lost(struct tl_h2_pair *p, int64_t ts_ns)
{
	tl_h2_conn_lost(p->c, 0, ts_ns);
	tl_h2_conn_lost(p->c, 1, ts_ns);
}

void tl_h2_pair_end(struct tl_h2_pair *p, int64_t ts_ns, const char *how)
{
	struct tl_h2_pair_event out = {.kind = TL_H2_PAIR_END, .ts_ns = ts_ns, .end = how};
	struct tl_h2_conn_stats st;

	p->ending = true;
	tl_h2_conn_close(p->c, ts_ns, strcmp(how, "reset") == 0);
	tl_h2_conn_stats(p->c, &st);
	roles(p, &out.inbound, &out.direction_known);
	out.decoded = st.from_start;
	out.streams = st.streams;
	out.streams_unknown = p->streams_unknown;
	out.streams_open = p->streams_open;
	out.streams_after_goaway = p->streams_after_goaway;
	out.goaways_received = p->goaways[0];
	out.goaways_sent = p->goaways[1];
	out.rsts_received = p->rsts[0];
	out.rsts_sent = p->rsts[1];
	if (p->ops.event)
		p->ops.event(p->ud, &out);
}

const struct tl_h2_conn *tl_h2_pair_conn(const struct tl_h2_pair *p)
{
	return p->c;
}
