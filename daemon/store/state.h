/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* One timeline's recorded state and its event budget: what its document is
 * made of (docs/journal-format.md, "In memory"). No journal, no loop, no
 * timer: admission reports what it changed (a record kept, an aggregate
 * entry made or counted, the Pod gone) and the caller journals that; a
 * replay rebuilds the same state through the same calls.
 *
 * Events are kept as a packed header and their compact payload
 * (tl_event_pack) in one record arena, and a 12-byte index entry (time,
 * reference) kept sorted by time; strings are ids into the timeline's
 * string table. Past the budget, events are folded into per-second
 * "events.aggregated" entries (timeline.h describes the budget). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"
#include "pod-meta.h"
#include "strtab.h"

#define STATE_NO_CTR 0xffffu
#define STATE_MAX_CTRS 1024
/* state_entry.ref: an offset into the record arena, or with STATE_AGG_REF
 * an index into the aggregate array. */
#define STATE_AGG_REF 0x80000000u
#define STATE_AGG_INTERVAL_NS 1000000000LL
/* Aggregate entries that still take events (the newest ones). */
#define STATE_AGG_RECENT 32
/* Entries at one time compared with a new event for an exact repeat. */
#define STATE_DEDUPE_SCAN_MAX 256

/* A stored event's envelope. */
struct state_hdr {
	uint8_t kind;
	uint8_t source;
	uint16_t flags;
	uint16_t ctr; /* index into the container table, STATE_NO_CTR */
	uint16_t len; /* payload bytes */
};

/* A record in the arena: kind (1 byte); a byte with the source (bits 0-1),
 * "flags follow" (bit 2) and "container follows" (bit 3); then the flags
 * and container index as varints when they follow, the payload length as a
 * varint, and the payload (tl_event_pack): 4 bytes for most events. */
#define STATE_HDR_MAX (2 + 3 + 3 + 3)

static inline size_t state_hdr_put(uint8_t *p, const struct state_hdr *h)
{
	size_t n = 2;

	p[0] = h->kind;
	p[1] = (uint8_t)(h->source | (h->flags ? 4 : 0) | (h->ctr != STATE_NO_CTR ? 8 : 0));
	if (h->flags)
		n += tl_varint_put(p + n, h->flags);
	if (h->ctr != STATE_NO_CTR)
		n += tl_varint_put(p + n, h->ctr);
	n += tl_varint_put(p + n, h->len);
	return n;
}

/* The arena holds only what state_hdr_put wrote: no bounds to check. */
static inline uint16_t state_varint16(const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint32_t v = p[0] & 0x7f;

	if (p[0] & 0x80) {
		v |= (uint32_t)(p[1] & 0x7f) << 7;
		if (p[1] & 0x80) {
			v |= (uint32_t)p[2] << 14;
			*pp = p + 3;
			return (uint16_t)v;
		}
		*pp = p + 2;
		return (uint16_t)v;
	}
	*pp = p + 1;
	return (uint16_t)v;
}

/* Decodes the header at p into h; returns the payload. */
static inline const uint8_t *state_hdr_get(const uint8_t *p, struct state_hdr *h)
{
	uint8_t b = p[1];

	h->kind = p[0];
	h->source = b & 3;
	p += 2;
	h->flags = (b & 4) ? state_varint16(&p) : 0;
	h->ctr = (b & 8) ? state_varint16(&p) : STATE_NO_CTR;
	h->len = state_varint16(&p);
	return p;
}

/* 12 bytes, not 16: one per event, and x86 and arm64 read the unaligned
 * time at no cost. */
struct __attribute__((packed, aligned(4))) state_entry {
	int64_t time_ns;
	uint32_t ref;
};

/* An "events.aggregated" entry: mutable, so kept apart from the arena. */
struct state_agg {
	int64_t bucket_ns;
	int64_t interval_ms;
	uint64_t count, failed;
	uint16_t ctr;
	uint8_t source;
	uint8_t kind; /* the folded kind */
};

/* Who an event happened to: a (container id, container name) pair as the
 * producer knew it, both string ids (UINT32_MAX = unknown). */
struct state_ctr {
	uint32_t id_s, name_s;
	uint64_t cgroup_id;
};

/* The loss counters, in one list: the struct, the journal's L frame (in
 * this order), the previous journal format's "loss" record (by field
 * name) and the document's "loss" object (by its key; NULL: not in the
 * document). unreadable: records still in the journal, already counted in
 * disk: the next replay meets them again and must not count them twice. */
#define STATE_LOSS_FIELDS(X) \
	X(kernel, "kernelEventsDropped") \
	X(aggregated, "eventsAggregated") \
	X(dropped, "eventsDropped") \
	X(disk, "diskErrors") \
	X(restarts, "agentRestarts") \
	X(unreadable, NULL)

struct state_loss {
#define STATE_LOSS_MEMBER(f, key) uint64_t f;
	STATE_LOSS_FIELDS(STATE_LOSS_MEMBER)
#undef STATE_LOSS_MEMBER
};

/* A time the agent was not recording (recorder.gaps). */
struct state_gap {
	int64_t from_ns, to_ns;
};

/* Why a timeline closed when its Pod's end was not recorded (no
 * pod.deleted, no pod.cgroups_removed): the document's "closeReason"
 * (docs/timeline-format.md, docs/hostile-peers.md). Journaled with the G
 * and T frames. */
enum state_close_reason {
	STATE_CLOSE_NONE = 0,       /* the Pod's end was recorded (or still open) */
	STATE_CLOSE_LOGS_REMOVED,   /* its log directory went, nothing else vouched for it */
	STATE_CLOSE_CGROUPS_REMOVED, /* its cgroups went and the API never reported it */
	STATE_CLOSE_UNKNOWN_TO_API, /* a Pod LIST completed without it */
	STATE_CLOSE_IDLE,           /* nothing recorded for the idle bound, nothing vouched */
	STATE_CLOSE_OPEN_LIMIT,     /* closed to make room at the open-timeline cap */
	STATE_CLOSE_REASON_MAX,
};

/* The document's name of a reason, NULL for STATE_CLOSE_NONE (or out of
 * range). */
const char *state_close_reason_name(unsigned reason);

/* The fields are read by the store's units (document, frames, queries);
 * they change only through the functions below. A snapshot (for a GET or
 * a closing document) is a state_copy() of it. */
struct tl_state {
	char uid[TL_UID_MAX];
	uint32_t max_events;      /* the budget (timeline.h) */
	struct tl_pod_meta *meta; /* shared, never changed; NULL until the API side says */
	struct tl_strtab *strs;
	struct state_ctr *ctrs;
	uint32_t n_ctrs, cap_ctrs;
	uint8_t *arena;
	size_t alen, acap;
	struct state_entry *ev;
	size_t n, cap;
	struct state_agg *aggs;
	size_t n_aggs, cap_aggs;
	struct state_loss loss;
	int64_t opened_ns, recording_since_ns;
	struct state_gap *gaps;
	size_t n_gaps;
	/* The budget: termination (the deletion request, or a SIGTERM or
	 * SIGKILL) starts afresh from entry n_at_termination on. */
	bool terminating;
	size_t n_at_termination;
	bool gone;           /* the Pod is gone (pod.deleted, or known otherwise) */
	int64_t gone_ns;
	uint8_t close_reason; /* enum state_close_reason */
	int64_t deletion_ns; /* first pod.deletion_requested kept, 0 = none */
	size_t recent[STATE_AGG_RECENT]; /* aggregate indices, a ring */
	size_t n_recent;
	/* The container of the last event packed: most events of a Pod come
	 * from the container that sent the one before. */
	int last_ctr;
	char last_cid[TL_CONTAINER_ID_MAX], last_cname[TL_NAME_MAX];
};

/* An empty state for uid (at most TL_UID_MAX - 1 bytes). 0 or -ENOMEM. */
int state_init(struct tl_state *s, const char *uid, uint32_t max_events, int64_t opened_ns,
	       int64_t recording_since_ns);
/* Frees what s holds; accepts a zeroed state. */
void state_release(struct tl_state *s);
/* A snapshot: the record arena is shared, not copied (records never change
 * once written; growing a shared arena moves the timeline to a copy of its
 * own), the index and the tables are copied. 0 or -ENOMEM. */
int state_copy(const struct tl_state *s, struct tl_state *ret);
/* Heap bytes held (capacity, not touched pages). */
size_t state_memory(const struct tl_state *s);

/* ---- admission ---- */

/* ev as a header and payload of this timeline: its container goes into
 * the container table and its strings into the string table (both journal
 * definitions). 0, -ENOMEM, -E2BIG. */
int state_pack(struct tl_state *s, const struct tl_event *ev, struct state_hdr *h,
	       uint8_t payload[TL_PAYLOAD_MAX]);

enum state_outcome {
	STATE_DUPLICATE, /* an exact repeat, or an API fact a restart restated: not kept */
	STATE_KEPT,      /* a record: the newest at its time */
	STATE_FOLDED,    /* counted in an events.aggregated entry */
	STATE_DROPPED,   /* past every limit: counted in loss.eventsDropped */
};

/* What one admission changed. */
struct state_change {
	enum state_outcome outcome;
	size_t agg;          /* FOLDED: the entry's index */
	bool agg_made;       /* FOLDED: the entry was made by this event */
	bool agg_retired;    /* an entry stopped taking events to make room for */
	size_t retired;      /* ... this one (its counts are final) */
	bool gone;           /* the Pod is gone from this event on (s->gone_ns) */
};

/* Before termination: up to max_events everything is kept; past it API
 * lifecycle facts are kept up to 2 x max_events and everything else is
 * folded per second. From termination on, counted from its start: up to
 * max_events everything is kept, lifecycle events up to 2 x max_events,
 * the rest folded; past that, dropped (the first pod.deleted is always
 * kept: it ends the timeline). 0 or -ENOMEM, -E2BIG (*ret untouched). */
int state_admit(struct tl_state *s, const struct tl_event *ev, const struct state_hdr *h,
		const uint8_t *payload, struct state_change *ret);
/* A record as is, no budget (a compacted journal's). 0, -E2BIG, -ENOMEM. */
int state_insert(struct tl_state *s, int64_t time_ns, const struct state_hdr *h,
		 const uint8_t *payload);

/* ---- the rest of a timeline's facts (live and replayed alike) ---- */

/* Replaces the metadata when a field differs (the store keeps a
 * reference). true when it changed. */
bool state_set_meta(struct tl_state *s, const struct tl_pod_meta *meta);
/* The Pod is gone at at_ns (known other than by an event). false when it
 * was already. */
bool state_set_gone(struct tl_state *s, int64_t at_ns);
/* Why it closes (enum state_close_reason): the first reason said stays;
 * an unknown value is ignored. true when it changed. */
bool state_set_close_reason(struct tl_state *s, unsigned reason);
int state_add_gap(struct tl_state *s, int64_t from_ns, int64_t to_ns);
/* Each counter becomes the larger of the two. */
void state_max_loss(struct tl_state *s, const struct state_loss *l);

/* Journal definitions in file order (replay). -EINVAL for what does not
 * fit the state (a damaged journal), -ENOMEM, -E2BIG. */
int state_add_string(struct tl_state *s, const char *str, size_t len);
int state_add_ctr(struct tl_state *s, const struct state_ctr *c);
int state_add_agg(struct tl_state *s, const struct state_agg *a);
int state_set_agg(struct tl_state *s, size_t i, uint64_t count, uint64_t failed,
		  int64_t interval_ms);
/* The budget as compaction wrote it. -EINVAL when at is past the entries. */
int state_set_budget(struct tl_state *s, bool terminating, size_t at);

/* ---- reading ---- */

/* Entry i's header and payload, or NULL for an aggregate entry. */
static inline const uint8_t *state_record(const struct tl_state *s, size_t i, struct state_hdr *h)
{
	if (s->ev[i].ref & STATE_AGG_REF)
		return NULL;
	return state_hdr_get(s->arena + s->ev[i].ref, h);
}
/* Unpacks entry i into ev (strings borrowed from s). 0 or -EINVAL (a
 * damaged record). */
int state_event(const struct tl_state *s, size_t i, struct tl_event *ev);
/* No loss of any kind: the document's "complete". */
bool state_complete(const struct tl_state *s);
/* The first event's time, else the opening. */
int64_t state_started(const struct tl_state *s);
/* The Pod's namespace and name, NULL while unknown. */
const char *state_ns(const struct tl_state *s);
const char *state_name(const struct tl_state *s);
