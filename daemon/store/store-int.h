/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The store's inside, shared by its files: timeline.c (index, admission,
 * journal records, replay, closing, queries) and document.c (the document;
 * its findings are written by termline-findings). docs/journal-format.md describes what is kept. */
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "event.h"
#include "strtab.h"
#include "timeline.h"
#include "tl-buf.h"

#define NO_CTR 0xffffu
#define MAX_CTRS 1024
/* entry.ref: an offset into the record arena, or with AGG_REF an index into
 * the aggregate array. */
#define AGG_REF 0x80000000u

/* A stored event: 8 bytes, then its packed payload (tl_event_pack). */
struct rec_hdr {
	uint8_t kind;
	uint8_t source;
	uint16_t flags;
	uint16_t ctr;   /* index into the timeline's container table, NO_CTR */
	uint16_t len;   /* payload bytes */
};

/* 12 bytes, not 16: one per event, and x86 and arm64 read the unaligned
 * time at no cost. */
struct __attribute__((packed, aligned(4))) entry {
	int64_t time_ns;
	uint32_t ref;
};

/* An "events.aggregated" entry: mutable, so kept apart from the arena. */
struct agg {
	int64_t bucket_ns;
	int64_t interval_ms;
	uint64_t count, failed;
	uint16_t ctr;
	uint8_t source;
	uint8_t kind; /* the folded kind */
};

/* Who an event happened to: a (container id, container name) pair as the
 * producer knew it, both string ids (UINT32_MAX = unknown). */
struct ctr_ent {
	uint32_t id_s, name_s;
	uint64_t cgroup_id;
};

/* The loss counters, in one list: the struct, the journal's L frame (in
 * this order), the previous format's "loss" record (by field name) and the
 * document's "loss" object (by its key; NULL: not in the document).
 * unreadable: records still in the journal, already counted in disk: the
 * next replay meets them again and must not count them twice. */
#define LOSS_FIELDS(X) \
	X(kernel, "kernelEventsDropped") \
	X(aggregated, "eventsAggregated") \
	X(dropped, "eventsDropped") \
	X(disk, "diskErrors") \
	X(restarts, "agentRestarts") \
	X(unreadable, NULL)

struct loss {
#define LOSS_MEMBER(f, key) uint64_t f;
	LOSS_FIELDS(LOSS_MEMBER)
#undef LOSS_MEMBER
};

/* The recorded state of one timeline: what the document is made of. A
 * snapshot (for a GET) is a copy of it. */
struct tl_state {
	char uid[TL_UID_MAX];
	struct json_object *meta;
	struct tl_strtab *strs;
	struct ctr_ent *ctrs;
	uint32_t n_ctrs, cap_ctrs;
	uint8_t *arena;
	size_t alen, acap;
	struct entry *ev;
	size_t n, cap;
	struct agg *aggs;
	size_t n_aggs, cap_aggs;
	struct loss loss;
	int64_t opened_ns, recording_since_ns;
	struct json_object *gaps; /* [{"from","to"}] or NULL */
};

/* Recorder provenance, shared by every document of a store. */
struct recorder_info {
	char *agent_version, *node, *kernel, *config_digest;
	char **probes;
	size_t n_probes;
};

/* The record arena is shared, not copied, by snapshots: records are never
 * changed once written, so a snapshot's index stays valid in the arena it
 * was taken from. The arena carries a reference count in front of it;
 * growing a shared arena moves the timeline to a copy and leaves the old
 * one to the snapshots. */
int arena_reserve(struct tl_state *s, size_t need);
uint8_t *arena_ref(uint8_t *arena);
void arena_unref(uint8_t *arena);

/* Unpacks entry i of s into ev (strings borrowed from s->strs). 0 or
 * -EINVAL (a damaged record). */
int state_event(const struct tl_state *s, size_t i, struct tl_event *ev);
int state_copy(const struct tl_state *s, struct tl_state *ret);
void state_release(struct tl_state *s);
const char *state_meta_str(const struct tl_state *s, const char *key);

/* Where a document being written stands (zeroed = at the start). */
struct doc_cursor {
	int phase; /* 0 head, 1 events, 2 tail, 3 done */
	size_t i;  /* next event */
};

/* Appends the document from cur on to out until out holds chunk bytes or
 * more (0: all of it). Returns 1 while more remains, 0 when done, or a
 * negative errno. */
/* No loss of any kind: the document's "complete". */
bool state_complete(const struct tl_state *s);
int document_write(const struct tl_state *s, const struct recorder_info *rec,
		   struct doc_cursor *cur, struct tl_buf *out, size_t chunk);
