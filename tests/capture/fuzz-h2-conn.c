/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: one HTTP/2 connection's bytes as the passive decoder
 * (daemon/capture/h2-conn.c) sees them, from both peers.
 *
 *     byte 0: configuration (max_streams, roles, how it closes)
 *     then operations: a byte (bit 0: direction; bits 1-2: 0 data,
 *     1 data the caller says starts a frame, 2 bytes not delivered,
 *     3 bytes lost; bit 3: the data starts a read or write), then for
 *     data a 2-byte length and the bytes (clamped to what is left), for
 *     bytes not delivered a 2-byte count
 *
 * The seeds (corpus/h2) are the recorded connections of
 * tests/capture/h2 in this form. Every event is checked for what the
 * decoder promises: ids in range, strings terminated, known errors. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "h2-conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t cap)
{
	if (strnlen(s, cap) >= cap)
		__builtin_trap();
}

/* ended: a stream's event (an open one, RST_STREAM's, has no end yet) */
static void check_stream(const struct tl_h2_stream *s, bool ended)
{
	static const char *const errors[] = {"reset", "refused", "closed", "lost", "evicted"};
	bool known = s->error == NULL;

	if (s->id == 0 || s->id > TL_H2_MAX_STREAM_ID || (ended && s->end_ns < s->start_ns) ||
	    s->open_dir > 1 || (!ended && s->error))
		__builtin_trap();
	check_str(s->method, sizeof(s->method));
	check_str(s->path, sizeof(s->path));
	check_str(s->authority, sizeof(s->authority));
	check_str(s->content_type, sizeof(s->content_type));
	check_str(s->request_id, sizeof(s->request_id));
	check_str(s->grpc_message, sizeof(s->grpc_message));
	for (size_t i = 0; s->error && i < sizeof(errors) / sizeof(errors[0]); i++)
		known |= strcmp(s->error, errors[i]) == 0;
	if (!known)
		__builtin_trap();
}

static void on_ev(void *ud, const struct tl_h2_event *ev)
{
	unsigned *n = ud;

	(*n)++;
	switch (ev->kind) {
	case TL_H2_EV_STREAM:
		if (!ev->stream)
			__builtin_trap();
		check_stream(ev->stream, true);
		break;
	case TL_H2_EV_RST_STREAM:
		if (ev->reset_stream) {
			check_stream(ev->reset_stream, false);
			if (ev->reset_stream->id != ev->stream_id)
				__builtin_trap();
		}
		break;
	case TL_H2_EV_GOAWAY:
		if (ev->debug_len > TL_H2_DEBUG_KEEP || ev->debug_len > ev->debug_total ||
		    ev->last_stream_id > TL_H2_MAX_STREAM_ID)
			__builtin_trap();
		if (ev->debug_len)
			(void)memchr(ev->debug, 0, ev->debug_len);
		break;
	default:
		__builtin_trap();
	}
	if (ev->dir > 1)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct tl_http_want want = {.names = {"x-request-id", "traceparent"}, .n = 2};
	struct tl_h2_config cfg = {.want = want};
	struct tl_h2_conn *c;
	struct tl_h2_conn_stats st;
	unsigned events = 0;
	size_t off = 1;
	int64_t ts = 1000;
	uint8_t ctl;

	if (size < 1)
		return 0;
	ctl = data[0];
	cfg.max_streams = ctl & 0x1 ? 3 : 0;
	if (ctl & 0x2)
		cfg.hpack.cap = 4096;
	if (tl_h2_conn_new(&cfg, on_ev, &events, &c) < 0)
		return 0;
	if (ctl & 0x4) {
		tl_h2_conn_set_role(c, 0, TL_H2_ROLE_CLIENT);
		tl_h2_conn_set_role(c, 1, TL_H2_ROLE_SERVER);
	}
	while (off < size) {
		uint8_t op = data[off++];
		unsigned dir = op & 1, kind = (op >> 1) & 3;
		size_t n = 0;

		ts += op;
		if (kind != 3) {
			if (size - off < 2)
				break;
			n = (size_t)data[off] << 8 | data[off + 1];
			off += 2;
		}
		switch (kind) {
		case 0:
		case 1:
			if (n > size - off)
				n = size - off;
			tl_h2_conn_data(c, dir, data + off, n, ts,
					(op & 0x8 ? TL_H2_CHUNK_START : 0) | (kind == 1 ? TL_H2_CHUNK_FRAME : 0));
			off += n;
			break;
		case 2:
			tl_h2_conn_skip(c, dir, n, ts);
			break;
		case 3:
			tl_h2_conn_lost(c, dir, ts);
			break;
		}
	}
	tl_h2_conn_stats(c, &st);
	if (st.streams_evicted > st.streams || (st.client_dir >= 0 && !st.from_start))
		__builtin_trap();
	tl_h2_conn_close(c, ts + 1, ctl & 0x8);
	tl_h2_conn_free(c);
	return 0;
}
