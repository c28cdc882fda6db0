/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "h2-conn.h"
#include "http-parse.h"

/* One HTTP/2 connection of a tracked socket, fed with the kernel's HTTP/2
 * records (bpf/include/termline-http.h, TL_HTTP_REC_H2: frame headers and
 * the payloads the agent reads, DATA only counted) and decoded by
 * tl_h2_conn: each stream whose request headers were decoded comes out as
 * an exchange, each GOAWAY and RST_STREAM as an event, and the connection's
 * end as an event that counts its streams, those with headers unknown (a
 * connection first seen mid-stream) among them. Directions are the
 * records': 0 what the tracked process read, 1 what it wrote.
 * docs/http-capture.md, "HTTP/2". */

struct tl_h2_pair;

/* A stream's request as the pairing hands it over (the caller adds what
 * it knows of the connection). */
struct tl_h2_pair_stream {
	const struct tl_h2_stream *s;
	bool inbound; /* the tracked process was the server */
	bool direction_known;
	bool response_unknown; /* a response came, its headers could not be decoded */
};

enum tl_h2_pair_event_kind { TL_H2_PAIR_GOAWAY, TL_H2_PAIR_RST_STREAM, TL_H2_PAIR_END };

struct tl_h2_pair_event {
	enum tl_h2_pair_event_kind kind;
	int64_t ts_ns;
	bool sent;		 /* GOAWAY, RST_STREAM: the tracked process wrote it */
	uint32_t stream_id;	 /* RST_STREAM */
	uint32_t last_stream_id; /* GOAWAY */
	uint32_t error_code;
	bool payload_lost;    /* its fields were not delivered (codes 0) */
	const uint8_t *debug; /* GOAWAY */
	size_t debug_len;
	const struct tl_h2_stream *stream; /* RST_STREAM: the stream, when followed */
	/* END: the connection as a whole */
	const char *end; /* "closed", "reset", "expired", "evicted" */
	bool inbound, direction_known;
	bool decoded; /* followed from its preface */
	uint64_t streams, streams_unknown, streams_open, streams_after_goaway;
	uint64_t goaways_sent, goaways_received, rsts_sent, rsts_received;
};

struct tl_h2_pair_ops {
	void (*stream)(void *userdata, const struct tl_h2_pair_stream *st);
	void (*event)(void *userdata, const struct tl_h2_pair_event *ev);
};

/* want: the request-ID headers (names must outlive the pairing). */
int tl_h2_pair_new(const struct tl_http_want *want, const struct tl_h2_pair_ops *ops,
		   void *userdata, struct tl_h2_pair **ret);
/* Frees without reporting anything; accepts NULL. */
void tl_h2_pair_free(struct tl_h2_pair *p);
/* What the caller knows of the connection's roles (an OPEN record: the
 * tracked process accepted it, so it is the server). The preface wins. */
void tl_h2_pair_set_server(struct tl_h2_pair *p, bool tracked_is_server);
/* One TL_HTTP_REC_H2 record: flags, time and data as the kernel wrote
 * them (data holds len bytes of segments). Malformed segments lose the
 * direction (never read past len). */
void tl_h2_pair_record(struct tl_h2_pair *p, uint16_t flags, int64_t ts_ns, const uint8_t *data,
		       size_t len);
/* Bytes of both directions were lost (a record of the connection that
 * was not HTTP/2-specific did not fit in the ring). */
void tl_h2_pair_lost(struct tl_h2_pair *p, int64_t ts_ns);
/* The connection ended (how: "closed", "reset", "expired", "evicted"):
 * its open streams come out, then the END event. Usable only for free. */
void tl_h2_pair_end(struct tl_h2_pair *p, int64_t ts_ns, const char *how);

/* For tests: the decoder. */
const struct tl_h2_conn *tl_h2_pair_conn(const struct tl_h2_pair *p);
