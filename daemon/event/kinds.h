/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The table of event kinds: every kind the agent records, its usual
 * source, its flags and its fields, in one list. A kind is a row of
 * TL_KINDS, a field a line of its field list: each line makes the slot
 * constant producers set (TL_F_<NAME>), its JSON key and its type, so a
 * misspelt field is a compile error. docs/timeline-format.md lists the
 * same kinds and fields; schema/timeline.schema.json constrains them (the
 * unit test event checks that every field the schema names has a slot).
 *
 * Kind numbers and the order of a kind's fields are stored in journals:
 * append new kinds and new fields at the end, never renumber or reorder. */
#include <stdbool.h>
#include <stdint.h>

enum tl_source { TL_SRC_API = 0, TL_SRC_KERNEL = 1, TL_SRC_LOG = 2, TL_SRC_MAX = 3 };

/* How a field is held in the event and written in JSON. */
enum tl_ftype {
	TL_FT_INT = 1,    /* int64 -> number */
	TL_FT_BOOL,       /* -> true/false */
	TL_FT_STR,        /* string -> "..." (interned in the store) */
	TL_FT_SIGNAME,    /* int signo -> "SIGTERM" (from the same slot's value) */
	TL_FT_SIGRESULT,  /* enum trace_signal_result -> "delivered", "ignored", ... */
	TL_FT_ADDR,       /* family + 16 bytes -> "10.1.2.3" / "fd00::1" */
	TL_FT_ENDPOINT,   /* family + 16 bytes + port -> "10.1.2.3:80" / "[fd00::1]:80" */
	TL_FT_TIME,       /* int64 ns since the epoch -> RFC 3339 string */
	TL_FT_ID,         /* string unique per event (request IDs): like STR, but kept
			   * in the event's own bytes, not interned; encoded as null
			   * when unset */
};

/* tl_kind_info.flags */
#define TL_KF_LIFECYCLE 0x1   /* the contract's required facts: kept up to the hard cap */
#define TL_KF_TERMINATION 0x2 /* may start termination (deletion; signal: SIGTERM/SIGKILL) */
#define TL_KF_HIGH_RATE 0x4   /* can arrive at kernel rates; folded first past the cap */
#define TL_KF_ENDS_POD 0x8    /* the Pod is gone: starts the timeline's linger */

/* ---- field lists: F(slot, "jsonKey", TYPE), in slot order ---- */

#define TL_FIELDS_DELREQ(F) \
	F(DELREQ_GRACE, "gracePeriodSeconds", INT) \
	F(DELREQ_DELETION_TS, "deletionTimestamp", STR)
#define TL_FIELDS_COND(F) \
	F(COND_CONDITION, "condition", STR) \
	F(COND_STATUS, "status", STR) \
	F(COND_REASON, "reason", STR) \
	F(COND_LAST_TRANSITION, "lastTransitionTime", STR)
#define TL_FIELDS_TERM(F) \
	F(TERM_EXIT_CODE, "exitCode", INT) \
	F(TERM_REASON, "reason", STR) \
	F(TERM_SIGNAL, "signal", INT) \
	F(TERM_STARTED, "startedAt", STR) \
	F(TERM_FINISHED, "finishedAt", STR)
#define TL_FIELDS_DELETED(F) \
	F(DELETED_OBSERVED_BY, "observedBy", STR)
/* endpoint.condition and endpoint.removed (whose booleans stay unset) */
#define TL_FIELDS_EP(F) \
	F(EP_SERVICE, "service", STR) \
	F(EP_SLICE, "endpointSlice", STR) \
	F(EP_READY, "ready", BOOL) \
	F(EP_SERVING, "serving", BOOL) \
	F(EP_TERMINATING, "terminating", BOOL) \
	F(EP_ADDRESS, "address", STR)
/* process.signal; process.signal_delivered has the first four */
#define TL_FIELDS_SIG_DELIVERED(F) \
	F(SIG_SIGNAL, "signal", SIGNAME) \
	F(SIG_SIGNO, "signo", INT) \
	F(SIG_PID, "pid", INT) \
	F(SIG_COMM, "comm", STR)
#define TL_FIELDS_SIG(F) \
	TL_FIELDS_SIG_DELIVERED(F) \
	F(SIG_SENDER_PID, "senderPid", INT) \
	F(SIG_SENDER_COMM, "senderComm", STR) \
	F(SIG_RESULT, "result", SIGRESULT)
#define TL_FIELDS_EXEC(F) \
	F(EXEC_PID, "pid", INT) \
	F(EXEC_COMM, "comm", STR) \
	F(EXEC_FILENAME, "filename", STR)
#define TL_FIELDS_EXIT(F) \
	F(EXIT_PID, "pid", INT) \
	F(EXIT_COMM, "comm", STR) \
	F(EXIT_CODE, "exitCode", INT) \
	F(EXIT_SIGNAL, "exitSignal", INT)
/* socket.listen and socket.listen_closed */
#define TL_FIELDS_LISTEN(F) \
	F(LISTEN_ADDRESS, "address", ADDR) \
	F(LISTEN_PORT, "port", INT)
/* tcp.reset_sent and tcp.reset_received */
#define TL_FIELDS_RESET(F) \
	F(RESET_LOCAL, "local", ENDPOINT) \
	F(RESET_REMOTE, "remote", ENDPOINT)
#define TL_FIELDS_CGREMOVED(F) \
	F(CGREMOVED_CGROUP, "cgroup", STR)
/* The design contract's http.request; error: why no response (capture
 * side); alsoSeenBy: the log record's request was also seen on the
 * proxy's socket ("kernel": start and durationMs are the socket's);
 * preRoll: --http-capture always, a request from before the termination
 * window kept while it was summarized (docs/http-capture.md); peer,
 * connStart, conn: the connection it came on (its remote end, when it was
 * established, its number in the timeline); connClose: the response said
 * "Connection: close"; protocol ("http/1.1", "h2"), and HTTP/2's stream,
 * gRPC status and message, a response whose headers could not be decoded,
 * a stream opened above a GOAWAY's last-stream-id. */
#define TL_FIELDS_HTTP(F) \
	F(HTTP_REQUEST_ID, "requestId", ID) \
	F(HTTP_METHOD, "method", STR) \
	F(HTTP_PATH, "path", STR) \
	F(HTTP_STATUS, "status", INT) \
	F(HTTP_START, "start", TIME) \
	F(HTTP_DURATION_MS, "durationMs", INT) \
	F(HTTP_DIRECTION, "direction", STR) \
	F(HTTP_RESPONSE_FLAGS, "responseFlags", STR) \
	F(HTTP_ERROR, "error", STR) \
	F(HTTP_ALSO_SEEN_BY, "alsoSeenBy", STR) \
	F(HTTP_PRE_ROLL, "preRoll", BOOL) \
	F(HTTP_PEER, "peer", ENDPOINT) \
	F(HTTP_CONN_START, "connStart", TIME) \
	F(HTTP_CONN, "conn", INT) \
	F(HTTP_CONN_CLOSE, "connClose", BOOL) \
	F(HTTP_PROTOCOL, "protocol", STR) \
	F(HTTP_STREAM_ID, "streamId", INT) \
	F(HTTP_GRPC_STATUS, "grpcStatus", INT) \
	F(HTTP_GRPC_MESSAGE, "grpcMessage", STR) \
	F(HTTP_RESPONSE_UNKNOWN, "responseUnknown", BOOL) \
	F(HTTP_AFTER_GOAWAY, "afterGoaway", BOOL)
#define TL_FIELDS_AGG(F) \
	F(AGG_TYPE, "aggregatedType", STR) \
	F(AGG_INTERVAL_MS, "intervalMs", INT) \
	F(AGG_COUNT, "count", INT) \
	F(AGG_FAILED, "failed", INT)
/* The preStop gate's wait on GET /v1/pods/{uid}/drained (docs/drain.md). */
#define TL_FIELDS_DRAIN_START(F) \
	F(DRAIN_QUIET_MS, "quietMs", INT) \
	F(DRAIN_TIMEOUT_MS, "timeoutMs", INT)
/* outcome: drained|timeout|abandoned|agent_stopping; heldBy: the condition
 * that held the gate last (deletion|endpoint|traffic|quiet). */
#define TL_FIELDS_DRAIN_END(F) \
	F(DRAIN_OUTCOME, "outcome", STR) \
	F(DRAIN_HELD_BY, "heldBy", STR) \
	F(DRAIN_HELD_MS, "heldMs", INT) \
	F(DRAIN_CONNECTIONS, "connections", INT) \
	F(DRAIN_REQUESTS, "requests", INT) \
	F(DRAIN_OUT_OF_ROTATION, "outOfRotation", TIME) \
	F(DRAIN_LAST_TRAFFIC, "lastTraffic", TIME)
/* When HTTP capture on a Pod's sockets was on (docs/http-capture.md). */
#define TL_FIELDS_CAPTURE(F) \
	F(CAPTURE_STATE, "state", STR) \
	F(CAPTURE_WINDOW, "window", STR)
/* --http-capture always, outside a Pod's windows: requests per second. */
#define TL_FIELDS_HSUM(F) \
	F(HSUM_INTERVAL_MS, "intervalMs", INT) \
	F(HSUM_COUNT, "count", INT) \
	F(HSUM_FAILED, "failed", INT) \
	F(HSUM_DIRECTION, "direction", STR)
/* Connections accepted by a Pod in its termination window: count from
 * peer (the first one's port) to the local port, the first at the event's
 * time and the last at last (docs/http-capture.md). */
#define TL_FIELDS_ACC(F) \
	F(ACC_PEER, "peer", ENDPOINT) \
	F(ACC_PORT, "port", INT) \
	F(ACC_COUNT, "count", INT) \
	F(ACC_LAST, "last", TIME)
/* HTTP/2 on a Pod's sockets (docs/http-capture.md, "HTTP/2"). http2.goaway,
 * from the Pod's side: direction sent|received; conn, peer, connStart: the
 * connection's, as http.request's. */
#define TL_FIELDS_GOAWAY(F) \
	F(GOAWAY_DIRECTION, "direction", STR) \
	F(GOAWAY_LAST_STREAM_ID, "lastStreamId", INT) \
	F(GOAWAY_ERROR_CODE, "errorCode", INT) \
	F(GOAWAY_ERROR_NAME, "errorName", STR) \
	F(GOAWAY_PEER, "peer", ENDPOINT) \
	F(GOAWAY_CONN, "conn", INT) \
	F(GOAWAY_CONN_START, "connStart", TIME) \
	F(GOAWAY_DEBUG, "debug", STR) \
	F(GOAWAY_PAYLOAD_LOST, "payloadLost", BOOL) \
	F(GOAWAY_CONN_DIRECTION, "connDirection", STR)
/* http2.rst_stream: requestId and path of the stream when its headers
 * were decoded, absent otherwise (a STR, not an ID: an unset ID is
 * written as null, which the schema refuses here). */
#define TL_FIELDS_RST(F) \
	F(RST_DIRECTION, "direction", STR) \
	F(RST_STREAM_ID, "streamId", INT) \
	F(RST_ERROR_CODE, "errorCode", INT) \
	F(RST_ERROR_NAME, "errorName", STR) \
	F(RST_PEER, "peer", ENDPOINT) \
	F(RST_CONN, "conn", INT) \
	F(RST_REQUEST_ID, "requestId", STR) \
	F(RST_PATH, "path", STR) \
	F(RST_PAYLOAD_LOST, "payloadLost", BOOL) \
	F(RST_CONN_DIRECTION, "connDirection", STR)
/* http2.connection: a followed HTTP/2 connection ended (the event's time);
 * direction inbound|outbound (absent: unknown). */
#define TL_FIELDS_H2C(F) \
	F(H2C_DIRECTION, "direction", STR) \
	F(H2C_PEER, "peer", ENDPOINT) \
	F(H2C_CONN, "conn", INT) \
	F(H2C_CONN_START, "connStart", TIME) \
	F(H2C_LOCAL_PORT, "localPort", INT) \
	F(H2C_END, "end", STR) \
	F(H2C_DECODED, "decoded", BOOL) \
	F(H2C_STREAMS, "streams", INT) \
	F(H2C_STREAMS_UNKNOWN, "streamsHeadersUnknown", INT) \
	F(H2C_STREAMS_OPEN, "streamsOpenAtEnd", INT) \
	F(H2C_GOAWAYS_SENT, "goawaysSent", INT) \
	F(H2C_GOAWAYS_RECEIVED, "goawaysReceived", INT) \
	F(H2C_RSTS_SENT, "rstStreamsSent", INT) \
	F(H2C_RSTS_RECEIVED, "rstStreamsReceived", INT) \
	F(H2C_STREAMS_AFTER_GOAWAY, "streamsAfterGoaway", INT)
#define TL_FIELDS_NONE(F)

/* ---- the kinds: K(ENUM, number, "name", SOURCE, flags, field list) ---- */

#define TL_LIFE TL_KF_LIFECYCLE
#define TL_KINDS(K) \
	K(POD_DELETION_REQUESTED, 1, "pod.deletion_requested", API, TL_LIFE | TL_KF_TERMINATION, DELREQ) \
	K(POD_CONDITION, 2, "pod.condition", API, TL_LIFE, COND) \
	K(CONTAINER_TERMINATED, 3, "container.terminated", API, TL_LIFE, TERM) \
	K(POD_DELETED, 4, "pod.deleted", API, TL_LIFE | TL_KF_ENDS_POD, DELETED) \
	K(ENDPOINT_CONDITION, 5, "endpoint.condition", API, TL_LIFE, EP) \
	K(ENDPOINT_REMOVED, 6, "endpoint.removed", API, TL_LIFE, EP) \
	K(PROCESS_SIGNAL, 7, "process.signal", KERNEL, \
	  TL_LIFE | TL_KF_TERMINATION | TL_KF_HIGH_RATE, SIG) \
	K(PROCESS_SIGNAL_DELIVERED, 8, "process.signal_delivered", KERNEL, TL_KF_HIGH_RATE, \
	  SIG_DELIVERED) \
	K(PROCESS_EXEC, 9, "process.exec", KERNEL, TL_LIFE | TL_KF_HIGH_RATE, EXEC) \
	K(PROCESS_EXIT, 10, "process.exit", KERNEL, TL_LIFE | TL_KF_HIGH_RATE, EXIT) \
	K(SOCKET_LISTEN, 11, "socket.listen", KERNEL, TL_LIFE | TL_KF_HIGH_RATE, LISTEN) \
	K(SOCKET_LISTEN_CLOSED, 12, "socket.listen_closed", KERNEL, TL_LIFE | TL_KF_HIGH_RATE, LISTEN) \
	K(TCP_RESET_SENT, 13, "tcp.reset_sent", KERNEL, TL_LIFE | TL_KF_HIGH_RATE, RESET) \
	K(TCP_RESET_RECEIVED, 14, "tcp.reset_received", KERNEL, TL_LIFE | TL_KF_HIGH_RATE, RESET) \
	K(POD_CGROUPS_REMOVED, 15, "pod.cgroups_removed", KERNEL, TL_KF_ENDS_POD, CGREMOVED) \
	K(HTTP_REQUEST, 16, "http.request", KERNEL, TL_KF_HIGH_RATE, HTTP) \
	K(EVENTS_AGGREGATED, 17, "events.aggregated", KERNEL, 0, AGG) \
	K(DRAIN_WAIT_STARTED, 18, "drain.wait_started", API, 0, DRAIN_START) \
	K(DRAIN_WAIT_ENDED, 19, "drain.wait_ended", API, 0, DRAIN_END) \
	K(HTTP_CAPTURE, 20, "http.capture", KERNEL, 0, CAPTURE) \
	K(HTTP_SUMMARY, 21, "http.summary", KERNEL, TL_KF_HIGH_RATE, HSUM) \
	K(TCP_ACCEPTED, 22, "tcp.accepted", KERNEL, TL_KF_HIGH_RATE, ACC) \
	K(HTTP2_GOAWAY, 23, "http2.goaway", KERNEL, 0, GOAWAY) \
	K(HTTP2_RST_STREAM, 24, "http2.rst_stream", KERNEL, TL_KF_HIGH_RATE, RST) \
	K(HTTP2_CONNECTION, 25, "http2.connection", KERNEL, TL_KF_HIGH_RATE, H2C)

/* Every kind the agent records. */
enum tl_kind {
	TL_KIND_NONE = 0,
#define TL_KIND_ENUM_(e, n, name, src, flags, fields) TL_KIND_##e = n,
	TL_KINDS(TL_KIND_ENUM_)
#undef TL_KIND_ENUM_
	/* one past the highest number: a new kind takes it */
	TL_KIND_MAX = 26,
};

/* The slots of each field list: TL_F_<NAME>, 0 up, and TL_NF_<LIST>. */
#define TL_SLOT_ENUM_(slot, key, type) TL_F_##slot,
#define TL_FIELD_LIST_ENUM_(list) enum { TL_FIELDS_##list(TL_SLOT_ENUM_) TL_NF_##list };
TL_FIELD_LIST_ENUM_(DELREQ)
TL_FIELD_LIST_ENUM_(COND)
TL_FIELD_LIST_ENUM_(TERM)
TL_FIELD_LIST_ENUM_(DELETED)
TL_FIELD_LIST_ENUM_(EP)
TL_FIELD_LIST_ENUM_(SIG)
TL_FIELD_LIST_ENUM_(EXEC)
TL_FIELD_LIST_ENUM_(EXIT)
TL_FIELD_LIST_ENUM_(LISTEN)
TL_FIELD_LIST_ENUM_(RESET)
TL_FIELD_LIST_ENUM_(CGREMOVED)
TL_FIELD_LIST_ENUM_(HTTP)
TL_FIELD_LIST_ENUM_(AGG)
TL_FIELD_LIST_ENUM_(DRAIN_START)
TL_FIELD_LIST_ENUM_(DRAIN_END)
TL_FIELD_LIST_ENUM_(CAPTURE)
TL_FIELD_LIST_ENUM_(HSUM)
TL_FIELD_LIST_ENUM_(ACC)
TL_FIELD_LIST_ENUM_(GOAWAY)
TL_FIELD_LIST_ENUM_(RST)
TL_FIELD_LIST_ENUM_(H2C)
#undef TL_FIELD_LIST_ENUM_
#undef TL_SLOT_ENUM_
/* process.signal_delivered's slots are process.signal's first four */
#define TL_NF_SIG_DELIVERED (TL_F_SIG_COMM + 1)

/* Slots per event at most (tl_event.v); a kind's fields fit it. */
#define TL_FIELDS_MAX 24

struct tl_field_info {
	const char *name; /* JSON key */
	enum tl_ftype type;
};

struct tl_kind_info {
	const char *name;      /* "process.signal" */
	enum tl_source source; /* the usual source (http.request: kernel or log) */
	uint32_t flags;        /* TL_KF_* */
	uint8_t n_fields;
	struct tl_field_info fields[TL_FIELDS_MAX];
};

/* Indexed by enum tl_kind; row 0 (TL_KIND_NONE) has a NULL name. */
extern const struct tl_kind_info tl_kinds[TL_KIND_MAX];

const char *tl_kind_name(enum tl_kind k); /* "unknown" out of range */
/* The decoder's name lookup: the one place a kind is found by its name.
 * TL_KIND_NONE when unknown. */
enum tl_kind tl_kind_parse(const char *name);
static inline bool tl_kind_has(enum tl_kind k, uint32_t flag)
{
	return (unsigned)k < TL_KIND_MAX && (tl_kinds[k].flags & flag);
}
/* Slot of the field called name in kind k, or -1 (decoders of text). */
int tl_kind_field(enum tl_kind k, const char *name);

const char *tl_source_name(enum tl_source s);
int tl_source_parse(const char *s, enum tl_source *ret);

/* enum trace_signal_result: "delivered", "ignored", ..., "unknown". */
const char *tl_signal_result_name(uint32_t result);

/* A container id as the API writes it, "containerd://abc" -> "abc" (the
 * form cgroup paths and events carry); a bare id as is. */
const char *tl_container_id_bare(const char *id);
