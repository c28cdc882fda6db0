/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "http-parse.h"

/* Requests paired with their responses, per connection and in order (HTTP/1.1
 * keep-alive and pipelining answer in request order, RFC 9112 section 9.3.2).
 * Fed what the kernel saw on a socket: the prefix of each read or write that
 * starts an HTTP/1.x message (or continues a head split across writes),
 * resets and closes. A connection's direction comes from the data, so a
 * connection first seen mid-stream needs no accept/connect: the side that
 * reads requests is the server (inbound), the side that writes them the
 * client (outbound). Bounded: connections, pending requests per connection
 * and head bytes; everything of a connection is freed at its close.
 * docs/http-capture.md. */

enum tl_http_direction { TL_HTTP_DIR_UNKNOWN = 0, TL_HTTP_DIR_INBOUND = 1, TL_HTTP_DIR_OUTBOUND = 2 };

/* The remote end of a connection, as the socket says it. An IPv4 peer of
 * an IPv6 socket (::ffff:a.b.c.d) is kept as IPv4. */
struct tl_http_peer {
	uint16_t family;               /* AF_INET, AF_INET6; 0 when not known */
	uint16_t port;
	uint16_t local_port;
	uint8_t addr[16];              /* network order; IPv4 in the first 4 */
};

enum tl_http_protocol { TL_HTTP_PROTO_H1 = 0, TL_HTTP_PROTO_H2 = 1 };

/* gRPC's grpc-message kept per exchange (a prefix). */
#define TL_HTTP_GRPC_MESSAGE_MAX 128

struct tl_http_exchange {
	uint64_t conn;                 /* the caller's connection key */
	uint32_t tgid;                 /* process that read or wrote the request */
	uint64_t cgroup_id;
	enum tl_http_direction direction;
	char method[TL_HTTP_METHOD_MAX];
	char path[TL_HTTP_PATH_MAX];
	char id[TL_HTTP_ID_MAX];       /* "" when none of the wanted headers was seen */
	int id_header;                 /* index into the tracker's want list, -1 none */
	uint16_t status;               /* 0: no response */
	const char *error;             /* NULL, "reset", "closed", "evicted" */
	bool head_cut;                 /* the request head was longer than what was copied */
	int64_t start_ns;              /* the request's read/write, the caller's clock */
	int64_t end_ns;                /* the response's read/write or the error; = start when none */
	struct tl_http_peer peer;      /* family 0: not known (no OPEN, no request head seen) */
	/* When the connection was accepted or connected, the caller's clock;
	 * 0 when that was before the programs were attached. */
	int64_t conn_start_ns;
	bool conn_close;               /* the response carried "Connection: close" */
	/* The connection's number for the consumer to give (0 until it does);
	 * points into the tracker's connection, valid during the callback. */
	uint32_t *conn_no;
	uint32_t conn_seq;             /* the consumer's own copy of that number */
	/* HTTP/2 (protocol TL_HTTP_PROTO_H2): the stream, gRPC's status (-1
	 * none) and message ("" none) from its trailers, and whether its
	 * response came with headers that could not be decoded (status 0
	 * then says nothing). HTTP/1: 0, -1, "", false. */
	enum tl_http_protocol protocol;
	uint32_t stream_id;
	int32_t grpc_status;
	bool response_unknown;
	bool after_goaway;             /* opened above a last-stream-id the server had sent */
	char grpc_message[TL_HTTP_GRPC_MESSAGE_MAX];
};

typedef void (*tl_http_exchange_cb)(void *userdata, const struct tl_http_exchange *x);

/* An HTTP/2 connection's GOAWAY, RST_STREAM, or its end (docs/http-capture.md,
 * "HTTP/2"), with what the tracker knows of the connection. */
enum tl_http_h2_kind { TL_HTTP_H2_GOAWAY, TL_HTTP_H2_RST_STREAM, TL_HTTP_H2_END };

struct tl_http_h2_event {
	enum tl_http_h2_kind kind;
	uint64_t conn;                 /* the caller's connection key */
	uint32_t tgid;
	uint64_t cgroup_id;
	int64_t ts_ns;                 /* the caller's clock */
	struct tl_http_peer peer;
	int64_t conn_start_ns;         /* 0: before the programs were attached */
	uint32_t *conn_no;             /* as tl_http_exchange's */
	/* The connection: inbound (the tracked process is the server) or
	 * outbound; TL_HTTP_DIR_UNKNOWN when nothing said which. */
	enum tl_http_direction direction;
	bool sent;                     /* GOAWAY, RST_STREAM: written by the tracked process */
	uint32_t stream_id;            /* RST_STREAM */
	uint32_t last_stream_id;       /* GOAWAY */
	uint32_t error_code;
	bool payload_lost;             /* the frame's fields were not delivered */
	const uint8_t *debug;          /* GOAWAY: a prefix of its debug data */
	size_t debug_len;
	/* RST_STREAM: the stream's request, "" when not known */
	const char *request_id, *path;
	/* END */
	const char *end;               /* "closed", "reset", "expired", "evicted" */
	bool decoded;                  /* followed from its preface */
	uint64_t streams, streams_unknown, streams_open, streams_after_goaway;
	uint64_t goaways_sent, goaways_received, rsts_sent, rsts_received;
};

typedef void (*tl_http_h2_cb)(void *userdata, const struct tl_http_h2_event *ev);

struct tl_http_tracker_config {
	struct tl_http_want want;      /* request-id headers, in priority order */
	uint32_t max_conns;            /* 0 = 16384 */
	uint32_t max_pending;          /* per connection; 0 = 64 */
	uint32_t head_max;             /* bytes of one head kept across reads; 0 = 8192 */
};

struct tl_http_tracker;

int tl_http_tracker_new(const struct tl_http_tracker_config *cfg, tl_http_exchange_cb cb,
			void *userdata, struct tl_http_tracker **ret);
/* Where HTTP/2 connections' GOAWAY, RST_STREAM and ends go (none by
 * default: their streams still come out as exchanges). */
void tl_http_tracker_on_h2(struct tl_http_tracker *t, tl_http_h2_cb cb, void *userdata);
/* Frees every connection without reporting its pending requests; accepts NULL. */
void tl_http_tracker_free(struct tl_http_tracker *t);

/* Bytes seen on a connection: by_reader = the tracked process read them (else
 * wrote them); buf holds the first len of total bytes of that read/write.
 * Returns 0, or -ENOMEM (the data is dropped). */
int tl_http_tracker_data(struct tl_http_tracker *t, uint64_t conn, uint32_t tgid,
			 uint64_t cgroup_id, bool by_reader, const uint8_t *buf, size_t len,
			 size_t total, int64_t ts_ns);
/* The connection failed (a read or write returned -ECONNRESET or -EPIPE):
 * its pending requests are reported with status 0 and error "reset". The
 * connection state stays until its close. */
void tl_http_tracker_reset(struct tl_http_tracker *t, uint64_t conn, int64_t ts_ns);
/* Records of the connection were lost (the ring was full): what it holds
 * can no longer be paired in order. Its pending requests are dropped
 * unreported (counted in lost_requests; the timeline says records were
 * lost) and a partial head is forgotten; pairing starts over. */
void tl_http_tracker_lost(struct tl_http_tracker *t, uint64_t conn);
/* The connection closed: pending requests get status 0, error "closed"
 * (or "reset" after a reset); its state is freed. */
void tl_http_tracker_close(struct tl_http_tracker *t, uint64_t conn, int64_t ts_ns);
/* The connection was established (accepted: by the listening side) at
 * ts_ns: its start and its peer. A connection known under the same key is
 * another one whose end was not seen (a socket address reused): it is
 * closed first. Returns 0 or -ENOMEM. */
int tl_http_tracker_open(struct tl_http_tracker *t, uint64_t conn, uint64_t cgroup_id, bool accepted,
			 const struct tl_http_peer *peer, int64_t ts_ns);
/* The peer of a connection from a record that carries it. */
void tl_http_tracker_peer(struct tl_http_tracker *t, uint64_t conn, const struct tl_http_peer *peer);
struct tl_http_rec;
/* The peer a ring record carries (TL_HTTP_RF_PEER), IPv4-mapped IPv6 made
 * IPv4; false when it carries none. */
bool tl_http_rec_peer(const struct tl_http_rec *rec, struct tl_http_peer *ret);
/* One record of the kernel's ring (bpf/include/termline-http.h; data: its
 * rec->len bytes), handed to the calls above. */
void tl_http_tracker_record(struct tl_http_tracker *t, const struct tl_http_rec *rec,
			    const uint8_t *data);
/* Connections without data since before ts_ns are closed ("closed"). */
void tl_http_tracker_expire(struct tl_http_tracker *t, int64_t before_ns);

struct tl_http_tracker_stats {
	uint64_t conns;                /* now */
	uint64_t exchanges;            /* reported */
	uint64_t unmatched_responses;  /* a response with no pending request (seen mid-stream) */
	uint64_t evicted;              /* connections dropped at max_conns */
	uint64_t pending_overflow;     /* requests dropped at max_pending */
	uint64_t not_http;             /* connections marked TLS (or HTTP/2 by a head's first bytes) */
	uint64_t h2;                   /* connections followed as HTTP/2 */
	uint64_t lost_requests;        /* pending requests dropped after a loss */
	uint64_t opened;               /* connections announced by an OPEN record */
};
void tl_http_tracker_stats(const struct tl_http_tracker *t, struct tl_http_tracker_stats *ret);
