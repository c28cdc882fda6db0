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
 * Each kind's fields are slots 0..n-1 in the order of its field list in the
 * kind table (kinds.h); the TL_F_* constants name them. A slot left unset
 * is absent from the JSON. Every field is set by its slot: a misspelt one
 * does not compile. The decoder (tl_event_from_json) finds slots by name,
 * and keeps a name the kind does not list (a document or journal of
 * another version) as an open-ended extra field.
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

#include "kinds.h"
#include "signals.h"
#include "tl-buf.h"

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
/* By the kind's name, for decoders of text: -EINVAL for an unknown type. */
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

/* A slot from its JSON text form, parsed for the slot's type: "SIGTERM",
 * "ignored", "10.1.2.3", "[fd00::1]:80", an RFC 3339 time, or a string as
 * is. 0, -EINVAL (not text of that type), -E2BIG. */
int tl_event_set_text(struct tl_event *ev, unsigned slot, const char *text);

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
/* The fields of extra the kind lists now (written by an agent before they
 * had a slot: alsoSeenBy, preRoll) move to their slots; a set slot wins.
 * 0, -EINVAL, -ENOMEM. */
int tl_event_extra_to_slots(struct tl_event *ev);

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
#define TL_PAYLOAD_MAX 640
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
