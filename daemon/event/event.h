/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The event model: one table of event kinds, typed events, and the one JSON
 * encoder every output uses (the timeline document, the HTTP API, the
 * journal's readers and --emit-events). docs/timeline-format.md lists every
 * kind and its fields; docs/journal-format.md the binary form.
 *
 * How to use it:
 *
 *   struct tl_event ev;
 *   tl_event_init_kind(&ev, TL_KIND_HTTP_REQUEST, TL_SRC_KERNEL, time_ns);
 *   tl_event_set_i(&ev, TL_F_HTTP_STATUS, 503);            // typed, by slot
 *   tl_event_set_s(&ev, TL_F_HTTP_PATH, path, path_len);   // copied into ev
 *   tl_event_set_addr(&ev, ...) for addresses (bytes, never "ip:port" text)
 *   ev.cgroup_id = cgroup;  (or pod_uid / container_id when known)
 *   tl_emit(emitter, &ev);   // the sink attributes, records and clears it
 *
 * Each kind's fields are slots 0..n-1 in the order of its row in the table
 * (tl_kinds[kind].fields); the TL_F_* constants name them. A slot left unset
 * is absent from the JSON. Setting by name (tl_event_set_str/int/bool) is
 * for producers that decode text (the API side, journal readers): a name
 * the kind does not list is kept as an open-ended extra field.
 *
 * A struct tl_event is an in-flight value: it lives on the producer's stack,
 * owns its strings (in sbuf) and at most one json-c object (extra, NULL for
 * every kernel event). The store keeps events in a compact binary form
 * (tl_event_pack: a small header plus per-kind payload, strings interned per
 * timeline) and turns them back with tl_event_unpack. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "signals.h"
#include "tl-buf.h"

enum tl_source { TL_SRC_API = 0, TL_SRC_KERNEL = 1, TL_SRC_LOG = 2, TL_SRC_MAX = 3 };

/* Every kind the agent records. Numbers are stored in journals: append new
 * kinds before TL_KIND_MAX, never renumber. */
enum tl_kind {
	TL_KIND_NONE = 0,
	TL_KIND_POD_DELETION_REQUESTED = 1,
	TL_KIND_POD_CONDITION = 2,
	TL_KIND_CONTAINER_TERMINATED = 3,
	TL_KIND_POD_DELETED = 4,
	TL_KIND_ENDPOINT_CONDITION = 5,
	TL_KIND_ENDPOINT_REMOVED = 6,
	TL_KIND_PROCESS_SIGNAL = 7,
	TL_KIND_PROCESS_SIGNAL_DELIVERED = 8,
	TL_KIND_PROCESS_EXEC = 9,
	TL_KIND_PROCESS_EXIT = 10,
	TL_KIND_SOCKET_LISTEN = 11,
	TL_KIND_SOCKET_LISTEN_CLOSED = 12,
	TL_KIND_TCP_RESET_SENT = 13,
	TL_KIND_TCP_RESET_RECEIVED = 14,
	TL_KIND_POD_CGROUPS_REMOVED = 15,
	TL_KIND_HTTP_REQUEST = 16,
	TL_KIND_EVENTS_AGGREGATED = 17,
	/* The preStop gate's wait on GET /v1/pods/{uid}/drained (docs/drain.md). */
	TL_KIND_DRAIN_WAIT_STARTED = 18,
	TL_KIND_DRAIN_WAIT_ENDED = 19,
	/* When HTTP capture on a Pod's sockets was on (docs/http-capture.md). */
	TL_KIND_HTTP_CAPTURE = 20,
	/* --http-capture always, outside a Pod's windows: requests per second. */
	TL_KIND_HTTP_SUMMARY = 21,
	/* Connections accepted by a Pod in its termination window, per peer
	 * address and second (docs/http-capture.md). */
	TL_KIND_TCP_ACCEPTED = 22,
	/* 23..: kinds added later. */
	TL_KIND_MAX = 23,
};

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

#define TL_FIELDS_MAX 16

struct tl_field_info {
	const char *name; /* JSON key */
	enum tl_ftype type;
};

struct tl_kind_info {
	const char *name;          /* "process.signal" */
	enum tl_source source;     /* the usual source (http.request: kernel or log) */
	uint32_t flags;            /* TL_KF_* */
	uint8_t n_fields;
	struct tl_field_info fields[TL_FIELDS_MAX];
};

/* Indexed by enum tl_kind; row 0 (TL_KIND_NONE) has a NULL name. */
extern const struct tl_kind_info tl_kinds[TL_KIND_MAX];

/* Slots per kind (index into tl_kinds[kind].fields and tl_event.v). */
enum { TL_F_DELREQ_GRACE = 0, TL_F_DELREQ_DELETION_TS };
enum { TL_F_COND_CONDITION = 0, TL_F_COND_STATUS, TL_F_COND_REASON, TL_F_COND_LAST_TRANSITION };
enum { TL_F_TERM_EXIT_CODE = 0, TL_F_TERM_REASON, TL_F_TERM_SIGNAL, TL_F_TERM_STARTED,
       TL_F_TERM_FINISHED };
enum { TL_F_DELETED_OBSERVED_BY = 0 };
enum { TL_F_EP_SERVICE = 0, TL_F_EP_SLICE, TL_F_EP_READY, TL_F_EP_SERVING, TL_F_EP_TERMINATING,
       TL_F_EP_ADDRESS };
/* process.signal and process.signal_delivered share their first four slots. */
enum { TL_F_SIG_SIGNAL = 0, TL_F_SIG_SIGNO, TL_F_SIG_PID, TL_F_SIG_COMM, TL_F_SIG_SENDER_PID,
       TL_F_SIG_SENDER_COMM, TL_F_SIG_RESULT };
enum { TL_F_EXEC_PID = 0, TL_F_EXEC_COMM, TL_F_EXEC_FILENAME };
enum { TL_F_EXIT_PID = 0, TL_F_EXIT_COMM, TL_F_EXIT_CODE, TL_F_EXIT_SIGNAL };
enum { TL_F_LISTEN_ADDRESS = 0, TL_F_LISTEN_PORT };
enum { TL_F_RESET_LOCAL = 0, TL_F_RESET_REMOTE };
enum { TL_F_CGREMOVED_CGROUP = 0 };
/* The design contract's http.request; error: why no response (capture side);
 * peer, connStart, conn: the connection it came on (its remote end, when it
 * was established, its number in the timeline); connClose: the response
 * said "Connection: close". */
enum { TL_F_HTTP_REQUEST_ID = 0, TL_F_HTTP_METHOD, TL_F_HTTP_PATH, TL_F_HTTP_STATUS,
       TL_F_HTTP_START, TL_F_HTTP_DURATION_MS, TL_F_HTTP_DIRECTION, TL_F_HTTP_RESPONSE_FLAGS,
       TL_F_HTTP_ERROR, TL_F_HTTP_PEER, TL_F_HTTP_CONN_START, TL_F_HTTP_CONN,
       TL_F_HTTP_CONN_CLOSE };
/* tcp.accepted: count connections from peer (the first one's port) to the
 * local port, the first at the event's time and the last at last. */
enum { TL_F_ACC_PEER = 0, TL_F_ACC_PORT, TL_F_ACC_COUNT, TL_F_ACC_LAST };
enum { TL_F_CAPTURE_STATE = 0, TL_F_CAPTURE_WINDOW };
enum { TL_F_HSUM_INTERVAL_MS = 0, TL_F_HSUM_COUNT, TL_F_HSUM_FAILED, TL_F_HSUM_DIRECTION };
enum { TL_F_AGG_TYPE = 0, TL_F_AGG_INTERVAL_MS, TL_F_AGG_COUNT, TL_F_AGG_FAILED };
enum { TL_F_DRAIN_QUIET_MS = 0, TL_F_DRAIN_TIMEOUT_MS };
/* outcome: drained|timeout|abandoned|agent_stopping; heldBy: the condition
 * that held the gate last (deletion|endpoint|traffic|quiet). */
enum { TL_F_DRAIN_OUTCOME = 0, TL_F_DRAIN_HELD_BY, TL_F_DRAIN_HELD_MS, TL_F_DRAIN_CONNECTIONS,
       TL_F_DRAIN_REQUESTS, TL_F_DRAIN_OUT_OF_ROTATION, TL_F_DRAIN_LAST_TRAFFIC };

const char *tl_kind_name(enum tl_kind k); /* "unknown" out of range */
/* The decoder's name lookup: the one place a kind is found by its name.
 * TL_KIND_NONE when unknown. */
enum tl_kind tl_kind_parse(const char *name);
static inline bool tl_kind_has(enum tl_kind k, uint32_t flag)
{
	return (unsigned)k < TL_KIND_MAX && (tl_kinds[k].flags & flag);
}
/* Slot of the field called name in kind k, or -1. */
int tl_kind_field(enum tl_kind k, const char *name);

const char *tl_source_name(enum tl_source s);
int tl_source_parse(const char *s, enum tl_source *ret);

/* tl_signal_name(): signals.h, the one table of signal names. */
/* enum trace_signal_result: "delivered", "ignored", ..., "unknown". */
const char *tl_signal_result_name(uint32_t result);

/* A container id as the API writes it, "containerd://abc" -> "abc" (the
 * form cgroup paths and events carry); a bare id as is. */
const char *tl_container_id_bare(const char *id);

#define TL_UID_MAX 64
#define TL_CONTAINER_ID_MAX 96
#define TL_NAME_MAX 254
/* Longest kind name, with its NUL. */
#define TL_TYPE_MAX 40
/* Room for an event's own strings; a string that does not fit is refused
 * (-E2BIG) rather than cut. */
#define TL_EVENT_SBUF 4096

/* tl_event.flags (stored with the event) */
#define TL_EF_SANDBOX 0x1 /* happened in the Pod's sandbox (pause) container: "sandbox": true */

struct tl_value {
	uint8_t set;
	uint8_t owned;    /* STR/ID: in the event's sbuf at soff (a struct copy stays valid) */
	uint8_t family;   /* ADDR/ENDPOINT: AF_INET or AF_INET6 */
	uint16_t port;    /* ENDPOINT */
	uint32_t slen;    /* STR */
	uint32_t soff;    /* STR, owned */
	union {
		int64_t i;        /* INT, BOOL, SIGNAME, SIGRESULT, TIME */
		const char *s;    /* STR/ID, not owned: borrowed (unpacked events) */
		uint8_t addr[16]; /* ADDR, ENDPOINT: network order; IPv4 in the first 4 */
	};
};

struct tl_event {
	int64_t time_ns;          /* UTC, ns since the epoch */
	enum tl_kind kind;
	enum tl_source source;
	const char *type;         /* tl_kind_name(kind): static, for logs and tests */
	uint32_t flags;           /* TL_EF_* */
	uint64_t cgroup_id;       /* kernel events: the cgroup v2 inode; else 0 */
	char pod_uid[TL_UID_MAX];              /* "" when unknown */
	char container_id[TL_CONTAINER_ID_MAX]; /* bare runtime id (hex), "" when unknown */
	char container[TL_NAME_MAX];           /* container name, "" when unknown */
	struct tl_value v[TL_FIELDS_MAX];
	/* Fields the kind does not list (open-ended API fields); NULL mostly. */
	struct json_object *extra;
	size_t sused;
	char sbuf[TL_EVENT_SBUF];
};

/* Sets up ev for kind k (strings empty, no field set). Cheap: the string
 * buffer is not cleared. 0 or -EINVAL for an unknown kind. */
int tl_event_init_kind(struct tl_event *ev, enum tl_kind k, enum tl_source source, int64_t time_ns);
/* By name, for text producers: -EINVAL for an unknown type. */
int tl_event_init(struct tl_event *ev, enum tl_source source, const char *type, int64_t time_ns);
/* Releases extra; accepts a zeroed event. The event may be reused after
 * another init. */
void tl_event_clear(struct tl_event *ev);
/* Copy into *ret (strings re-homed into ret's buffer). 0 or -ENOMEM. */
int tl_event_copy(const struct tl_event *src, struct tl_event *ret);

/* Typed setters by slot; -EINVAL when the slot's type differs, -E2BIG when
 * a string does not fit. */
int tl_event_set_i(struct tl_event *ev, unsigned slot, int64_t val);
int tl_event_set_s(struct tl_event *ev, unsigned slot, const char *s, size_t len);
int tl_event_set_addr(struct tl_event *ev, unsigned slot, uint16_t family, const uint8_t addr[16],
		      uint16_t port);
/* Comm and exec file names are whatever bytes a container chose (and comm
 * is cut at 15 bytes, maybe inside a character): every byte that is not
 * part of well-formed UTF-8 becomes U+FFFD. src ends at its first NUL or
 * at srclen. */
int tl_event_set_bytes_utf8(struct tl_event *ev, unsigned slot, const uint8_t *src, size_t srclen);

/* By field name: the kind's slot when it lists the name (converted to the
 * slot's type: an int for SIGNAME/SIGRESULT/TIME slots is taken as is, a
 * string is parsed), else an extra field. A NULL string stores JSON null in
 * extra. 0, -EINVAL (wrong type), -ENOMEM, -E2BIG. */
int tl_event_set_str(struct tl_event *ev, const char *key, const char *val);
int tl_event_set_int(struct tl_event *ev, const char *key, int64_t val);
int tl_event_set_bool(struct tl_event *ev, const char *key, bool val);

/* Reads a slot: the int (INT, BOOL, SIGNAME, SIGRESULT, TIME) or string
 * (NUL-terminated; tl_value.slen is its length). false / NULL when unset. */
bool tl_event_get_i(const struct tl_event *ev, unsigned slot, int64_t *ret);
const char *tl_event_get_s(const struct tl_event *ev, unsigned slot);

/* The one encoder: appends the contract's event object
 * {"time","source","type","container", fields...}; with_ids adds "podUid"
 * and "containerId" (null when unknown), as in --emit-events and journals. */
void tl_event_append_json(const struct tl_event *ev, bool with_ids, struct tl_buf *out);
/* The same as a json-c object (tests, slow paths). New reference or NULL. */
struct json_object *tl_event_to_json(const struct tl_event *ev, bool with_ids);
/* The decoder: a JSON event object (with or without ids) -> ev. Known
 * fields of the wrong type and unknown types are -EINVAL. */
int tl_event_from_json(struct json_object *obj, struct tl_event *ret);

/* ---- compact form (store, journal) ----
 *
 * payload := present-mask (varint, bit per slot) [extra-id (varint) when
 *            TL_EF_EXTRA_BLOB] then each present slot in order:
 *   INT                zigzag varint
 *   TIME               zigzag varint of (value - the event's time)
 *   BOOL, SIGRESULT    1 byte
 *   SIGNAME            zigzag varint (the signo)
 *   STR                varint string id
 *   ID                 varint 0 and 16 bytes for a UUID-shaped ID (8-4-4-4-12
 *                      lowercase hex); else varint (len << 1 | 1), len
 *                      bytes, NUL; or, past TL_ID_INLINE_MAX bytes,
 *                      varint (string id << 2 | 2)
 *   ADDR               1 byte (4 or 6) + 4 or 16 address bytes
 *   ENDPOINT           as ADDR, then 2 bytes port (big endian)
 * Strings are ids in a per-timeline table (struct tl_strtab). The envelope
 * (time, kind, source, container, flags) is the caller's. */
#define TL_PAYLOAD_MAX 512
#define TL_ID_INLINE_MAX 128

struct tl_strtab;

/* Internal flag of the packed form: the payload carries extra as a JSON
 * text string id. Not an event flag producers set. */
#define TL_EF_EXTRA_BLOB 0x8000

/* Packs ev's fields into buf (TL_PAYLOAD_MAX bytes), interning strings in
 * tab. *ret_flags: ev->flags plus TL_EF_EXTRA_BLOB when needed. Returns the
 * length or -ENOMEM / -E2BIG. */
int tl_event_pack(const struct tl_event *ev, struct tl_strtab *tab, uint8_t *buf,
		  uint32_t *ret_flags);
/* Unpacks a payload into ev (already tl_event_init_kind'ed): strings point
 * into tab (valid while tab lives and is not freed). extra is parsed when
 * flags has TL_EF_EXTRA_BLOB. 0 or -EINVAL for a payload that does not fit
 * the kind (corrupt journal). */
int tl_event_unpack(struct tl_event *ev, const uint8_t *p, size_t len, uint32_t flags,
		    const struct tl_strtab *tab);

/* Varints (LEB128) and zigzag, shared with the journal. put returns bytes
 * written (<= 10); get returns bytes read or 0 when malformed/short. */
size_t tl_varint_put(uint8_t *p, uint64_t v);
size_t tl_varint_get(const uint8_t *p, size_t len, uint64_t *ret);
static inline uint64_t tl_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}
static inline int64_t tl_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Producers emit through this; the callee clears ev when done. */
struct tl_emitter {
	void (*emit)(void *userdata, struct tl_event *ev);
	void *userdata;
};
static inline void tl_emit(const struct tl_emitter *e, struct tl_event *ev)
{
	e->emit(e->userdata, ev);
}
