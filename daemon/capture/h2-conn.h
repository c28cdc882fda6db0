/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "h2-frame.h"
#include "hpack.h"
#include "http-parse.h"

/* One HTTP/2 connection as a passive observer sees it: the bytes of each
 * direction in order, fed in chunks split anywhere, with explicit calls for
 * bytes that were not delivered (docs/http-capture.md, "HTTP/2").
 *
 * Directions are the caller's: 0 and 1 (e.g. what the tracked process read
 * and what it wrote). The side that sends the client preface is the client.
 * Header blocks are decoded only for a direction whose HPACK state is known
 * from its start: the client's when its first bytes are the preface, the
 * server's when its first frame is its SETTINGS and the client's preface was
 * seen before any of its header blocks. A connection first seen mid-stream,
 * or a direction that lost bytes inside a header block, is never decoded:
 * its frames and streams are still counted, RST_STREAM and GOAWAY still
 * reported, its streams reported with their headers unknown.
 *
 * Out come typed records: a stream when it ends (both END_STREAMs, a
 * RST_STREAM, a GOAWAY that refused it, the connection's close or a loss),
 * and every GOAWAY and RST_STREAM when it is read. Only the configured
 * header values are kept; never bodies. Bounded: the streams followed at
 * once, each direction's HPACK table, field and header list. */

#define TL_H2_AUTHORITY_MAX 128
#define TL_H2_CONTENT_TYPE_MAX 64
#define TL_H2_GRPC_MESSAGE_MAX 128
#define TL_H2_MAX_STREAMS_DEFAULT 256

enum tl_h2_role { TL_H2_ROLE_UNKNOWN = 0, TL_H2_ROLE_CLIENT = 1, TL_H2_ROLE_SERVER = 2 };

struct tl_h2_config {
	struct tl_http_want want;     /* request-ID headers, in priority order (lower case) */
	struct tl_hpack_limits hpack; /* table cap, header-list bounds; 0s = defaults */
	uint32_t max_streams;         /* open streams followed per connection; 0 = 256 */
};

struct tl_h2_stream {
	uint32_t id;
	bool request_known;           /* the request's header block was decoded */
	bool response_known;          /* a response header block was decoded */
	bool headers_cut;             /* a value was cut or a list past its bounds */
	char method[TL_HTTP_METHOD_MAX];
	char path[TL_HTTP_PATH_MAX];
	char authority[TL_H2_AUTHORITY_MAX];
	char content_type[TL_H2_CONTENT_TYPE_MAX]; /* the request's */
	char request_id[TL_HTTP_ID_MAX]; /* the first wanted header by the want order; "" none */
	int request_id_header;        /* index into want, -1 none */
	uint16_t status;              /* the final :status; 0 none */
	int32_t grpc_status;          /* -1 none */
	char grpc_message[TL_H2_GRPC_MESSAGE_MAX];
	bool request_ended, response_ended; /* END_STREAM from each side */
	bool reset;
	uint32_t reset_code;
	unsigned reset_dir;           /* who sent the RST_STREAM */
	enum tl_h2_role reset_by;
	bool after_goaway;            /* opened above a last-stream-id the server had sent */
	unsigned open_dir;            /* the direction whose HEADERS opened it */
	/* NULL (ended), "reset", "refused" (above a GOAWAY's last-stream-id),
	 * "closed" (the connection closed first), "lost" (bytes lost),
	 * "evicted" (more open streams than followed) */
	const char *error;
	int64_t start_ns, end_ns;     /* the caller's clock, from the chunks */
};

enum tl_h2_event_kind { TL_H2_EV_STREAM, TL_H2_EV_GOAWAY, TL_H2_EV_RST_STREAM };

struct tl_h2_event {
	enum tl_h2_event_kind kind;
	int64_t ts_ns;
	bool mid_stream;              /* the connection was first seen mid-stream */
	const struct tl_h2_stream *stream; /* TL_H2_EV_STREAM */
	/* GOAWAY, RST_STREAM: who sent it */
	unsigned dir;
	enum tl_h2_role by;
	uint32_t stream_id;           /* RST_STREAM */
	/* RST_STREAM: the stream it ends, when followed (its headers as far as
	 * known); NULL otherwise */
	const struct tl_h2_stream *reset_stream;
	uint32_t last_stream_id;      /* GOAWAY */
	uint32_t error_code;
	bool payload_lost;            /* its fields were not delivered (codes are 0) */
	const uint8_t *debug;         /* GOAWAY: debug_len bytes of debug_total */
	size_t debug_len;
	uint32_t debug_total;
};

typedef void (*tl_h2_event_cb)(void *userdata, const struct tl_h2_event *ev);

struct tl_h2_conn;

/* cfg is copied; its want names must outlive the connection. */
int tl_h2_conn_new(const struct tl_h2_config *cfg, tl_h2_event_cb cb, void *userdata,
		   struct tl_h2_conn **ret);
/* Frees without reporting open streams; accepts NULL. */
void tl_h2_conn_free(struct tl_h2_conn *c);

/* A chunk starts a read or write (the caller's record boundary): a
 * direction that lost sync looks for a frame start only there. */
#define TL_H2_CHUNK_START 0x1
/* The chunk starts with a frame header: the caller followed the frames
 * itself (the kernel side, whose records say where it began to follow a
 * direction). A direction at its start or without sync takes it as is; one
 * whose reader is inside a frame there loses its sync first (the two views
 * differ) and its headers are unknown from then on. */
#define TL_H2_CHUNK_FRAME 0x2

/* Bytes of direction dir (0 or 1), in order, seen at ts_ns. 0 or -ENOMEM
 * (the direction's headers are then unknown; the connection goes on). */
int tl_h2_conn_data(struct tl_h2_conn *c, unsigned dir, const uint8_t *buf, size_t len,
		    int64_t ts_ns, unsigned flags);
/* n bytes of direction dir at this point were not delivered (the kernel
 * side copies no DATA payload). Inside the current frame's payload the
 * frame sync is kept (header-block bytes among them make the direction's
 * headers unknown from then on); across a frame header it is lost. */
void tl_h2_conn_skip(struct tl_h2_conn *c, unsigned dir, uint64_t n, int64_t ts_ns);
/* Bytes of direction dir were lost, how many unknown (a full ring): sync
 * and that direction's headers are lost; its open streams are reported
 * with error "lost". */
void tl_h2_conn_lost(struct tl_h2_conn *c, unsigned dir, int64_t ts_ns);
/* What the caller knows of a direction's sender (e.g. the tracked process
 * accepted the connection: what it writes is the server's). The preface
 * overrides it. */
void tl_h2_conn_set_role(struct tl_h2_conn *c, unsigned dir, enum tl_h2_role role);
/* The connection closed (reset: by a RST): open streams are reported with
 * error "closed" (or "reset"; "lost" while a direction that was seen has
 * no frame sync: they may have ended in what was not seen). The
 * connection stays usable only for free. */
void tl_h2_conn_close(struct tl_h2_conn *c, int64_t ts_ns, bool reset);

struct tl_h2_conn_stats {
	bool is_h2;                   /* the preface or a plausible frame was seen */
	bool from_start;              /* the client preface was seen */
	int client_dir;               /* -1 unknown */
	bool decodable[2];            /* that direction's header blocks are decoded now */
	uint64_t frames[2];
	uint64_t header_blocks[2];
	uint64_t streams;             /* streams opened (HEADERS on a new stream) */
	uint64_t streams_evicted;
	uint64_t hpack_errors;        /* header blocks that failed a decoder */
	uint64_t desyncs;             /* times a direction lost frame sync */
	uint64_t goaways, rst_streams;
	int64_t last_ns;              /* the last data's time */
};
void tl_h2_conn_stats(const struct tl_h2_conn *c, struct tl_h2_conn_stats *ret);

const char *tl_h2_role_name(enum tl_h2_role r);
