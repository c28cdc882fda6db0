/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The store's inside, shared by its files: timeline.c (index, admission,
 * journal records, public calls), closed.c, close.c, replay.c, query.c and
 * document.c (the document; its findings are written by termline-findings). docs/journal-format.md describes what is kept. */
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

/* A stored event's envelope; in the arena it is packed by rec_put. */
struct rec_hdr {
	uint8_t kind;
	uint8_t source;
	uint16_t flags;
	uint16_t ctr;   /* index into the timeline's container table, NO_CTR */
	uint16_t len;   /* payload bytes */
};

/* A record in the arena: kind (1 byte); a byte with the source (bits 0-1),
 * "flags follow" (bit 2) and "container follows" (bit 3); then the flags
 * and container index as varints when they follow, the payload length as a
 * varint, and the payload (tl_event_pack). 4 bytes for most events, where
 * the struct took 8 and its alignment 1 more on average. */
#define REC_HDR_MAX (2 + 3 + 3 + 3)

static inline size_t rec_put(uint8_t *p, const struct rec_hdr *h)
{
	size_t n = 2;

	p[0] = h->kind;
	p[1] = (uint8_t)(h->source | (h->flags ? 4 : 0) | (h->ctr != NO_CTR ? 8 : 0));
	if (h->flags)
		n += tl_varint_put(p + n, h->flags);
	if (h->ctr != NO_CTR)
		n += tl_varint_put(p + n, h->ctr);
	n += tl_varint_put(p + n, h->len);
	return n;
}

/* The arena holds only what rec_put wrote: no bounds to check. */
static inline uint16_t rec_varint16(const uint8_t **pp)
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
static inline const uint8_t *rec_get(const uint8_t *p, struct rec_hdr *h)
{
	uint8_t b = p[1];

	h->kind = p[0];
	h->source = b & 3;
	p += 2;
	h->flags = (b & 4) ? rec_varint16(&p) : 0;
	h->ctr = (b & 8) ? rec_varint16(&p) : NO_CTR;
	h->len = rec_varint16(&p);
	return p;
}

/* Large growable buffers (mem.c): malloc'd up to BIG_MIN bytes, an
 * anonymous mapping grown with mremap past it. big_grow returns p grown to
 * hold need bytes (its first used bytes kept) and updates *cap, or NULL
 * with p untouched; big_free takes the cap big_grow gave (or less, by less
 * than one element); big_dup copies n bytes into a new buffer. */
#define BIG_MIN (64u * 1024)
void *big_grow(void *p, size_t *cap, size_t used, size_t need);
void big_free(void *p, size_t cap);
void *big_dup(const void *p, size_t n, size_t *cap);

/* The close's blocking file-system calls, run by a worker thread
 * (fsworker.c); done runs on the loop thread and frees the job. */
enum { FSJOB_COMMIT, FSJOB_UNLINK, FSJOB_CLOSE, FSJOB_WRITE };
struct fsjob {
	struct fsjob *next;
	int type;
	int fd;        /* COMMIT, CLOSE: the worker closes it */
	/* WRITE: len bytes at off (then their writeback started); data is
	 * the job's. chain (WRITE, COMMIT): the first error of the jobs of
	 * one document, set and read by the worker only: a commit after a
	 * failed write fails with it instead of renaming a partial file. */
	char *data;
	size_t len, cap;
	uint64_t off;
	int *chain;
	char tmp[PATH_MAX], path[PATH_MAX], dir[PATH_MAX];
	bool renamed;  /* COMMIT: tmp is now path */
	int result;    /* 0 or -errno */
	void (*done)(struct fsjob *job);
	void *ud;
};
struct tl_loop;
struct tl_fsworker;
int tl_fsworker_new(struct tl_loop *loop, struct tl_fsworker **ret);
/* Drains (every done callback run), then stops the thread. Accepts NULL. */
void tl_fsworker_free(struct tl_fsworker *w);
/* Queues job; -errno when the thread cannot start (run it inline then). */
int tl_fsworker_submit(struct tl_fsworker *w, struct fsjob *job);
/* Waits for every queued job and runs their done callbacks (shutdown). */
void tl_fsworker_drain(struct tl_fsworker *w);
bool tl_fsworker_busy(struct tl_fsworker *w);
/* Runs a job on the calling thread (its result is also returned). */
int doc_commit(int fd, const char *tmp, const char *path, const char *dir, bool *renamed);
int fsjob_run(struct fsjob *job);

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
	/* what the journal says of it (FR_AGG, FR_AGG_SET): a folded event
	 * is not journaled; the changed entries are, once per loop
	 * iteration (journal_aggs) */
	uint64_t j_count, j_failed;
	int64_t j_interval_ms;
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
	struct tl_pod_meta *meta; /* shared, never changed; NULL until the API side says */
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

/* ---- the store's parts (timeline.c: index, admission and budget, journal
 * records, compaction, timers, the public calls; closed.c: closed documents
 * and retention; close.c: closing, the document writer and its findings;
 * replay.c: replay of journals; query.c: serving documents) ---- */

#define DEFAULT_MAX_EVENTS 20000
#define DEFAULT_MAX_OPEN 1024
#define DEFAULT_FSYNC_MS 200
#define JOURNAL_FDS 128
#define AGG_INTERVAL_NS 1000000000LL
#define AGG_RECENT 32
#define DEDUPE_SCAN_MAX 256
#define HASH_BUCKETS 1024
#define RETENTION_PERIOD_MS (60 * 1000)
#define CLOSE_RETRY_MAX_MS (10 * 1000)
#define NS_PER_S 1000000000LL
/* A journal is rewritten from memory once it passes twice the size of what
 * it must hold (and this floor): its size follows the timeline's, which
 * the event budget bounds, not the Pod's age. */
#define COMPACT_MIN_BYTES (256u * 1024)
/* Documents served at once; each holds a copy of a timeline's compact
 * state (~1-3 MB at the cap) while its client reads. */
#define MAX_READERS 16
#define READ_CHUNK (64u * 1024)
#define DEFAULT_CLOSE_WAIT_MS 5000

#define M_OPEN "termline_timelines_open"
#define M_CLOSED "termline_timelines_closed_total"
#define M_REFUSED "termline_timelines_refused_total"
#define M_JOURNAL "termline_journal_bytes"
#define M_JOURNAL_FDS "termline_journal_open_files"
#define M_DISK "termline_disk_bytes"
#define M_DISK_ERR "termline_disk_errors_total"
#define M_LATE "termline_timeline_late_events_total"
/* Events dropped as exact repeats (same time, kind, container and payload:
 * a relist, a re-read log): counted, so no drop is silent. */
#define M_DUPLICATE "termline_timeline_duplicate_events_total"

/* Journal frame types (docs/journal-format.md). */
enum {
	FR_OPEN = 'O',   /* opened, recording since */
	FR_STRING = 'S', /* the next string id */
	FR_CTR = 'C',    /* the next container table entry */
	FR_EVENT = 'E',  /* an event, through admission on replay */
	FR_RAW = 'R',    /* a kept event, as is (compaction) */
	FR_AGG = 'A',    /* an aggregate entry: made (or compaction) */
	FR_AGG_SET = 'D', /* an aggregate entry's counts now, by index */
	FR_META = 'M',   /* Pod metadata, JSON (tl_pod_meta_to_json) */
	FR_LOSS = 'L',
	FR_GONE = 'G',   /* the Pod is gone (no pod.deleted seen) */
	FR_GAP = 'P',    /* the agent was not recording */
	FR_TERM = 'T',   /* budget state (compaction) */
};

/* A document being written (the timeline is closing): from a snapshot of
 * the timeline, one chunk per loop iteration into a temp file, then fsync
 * and rename. A forked writer did this before; on this kind of machine a
 * fork of the agent and the copy-on-write faults that follow cost the
 * loop more than writing the document itself (bench/README.md). */
/* Chunks of a document queued to the worker at most (64 KiB each). */
#define WRITER_INFLIGHT_MAX 4

struct writer {
	struct tl_state snap;
	struct doc_cursor cur;
	struct tl_buf buf;
	struct tl_timer *timer;
	int fd;                /* the temp file, -1 once closed */
	char tmp[PATH_MAX];    /* "" once renamed */
	struct fsjob *job;     /* the commit, while the worker runs it */
	/* Chunks queued to the worker and not back yet; the first error
	 * one came back with; the worker's own error of this document. */
	unsigned inflight;
	int werr, chain;
	/* Chunk buffers back from the worker, reused: a new 64-128 KiB
	 * buffer per chunk cost its page faults on the loop every time. */
	char *spare[WRITER_INFLIGHT_MAX];
	size_t spare_cap[WRITER_INFLIGHT_MAX];
	unsigned n_spare;
	char dir[PATH_MAX];
	uint64_t bytes;
	size_t findings;
	int64_t failed; /* failed requests the helper counted, -1 */
	char *ns, *name, *path;
	/* termline-findings, run on the written temp file: -1 when none. */
	pid_t pid;
	int pid_fd, out_fd;
	/* Journal frames of what arrived while closing: late if the document
	 * is written, replayed into the timeline if not. */
	struct tl_buf held;
	uint64_t n_held, late, held_dropped;
	uint64_t held_kernel, held_disk;
};

struct timeline {
	struct tl_timelines *store;
	struct timeline *hnext;
	struct tl_state s;
	size_t recent[AGG_RECENT]; /* agg indices, a ring */
	size_t n_recent;
	bool aggs_dirty; /* an entry changed since journal_aggs() */
	struct loss loss_journaled;
	bool deleted;
	int64_t deleted_ns;
	int64_t deletion_ns; /* first pod.deletion_requested kept, 0 = none */
	/* Termination began (deletion requested, or a SIGTERM/SIGKILL seen):
	 * from entry n_at_termination on, the event budget starts afresh. */
	bool terminating;
	size_t n_at_termination;
	struct tl_timer *close_timer;
	struct tl_journal *journal;
	uint32_t j_strings, j_ctrs; /* how many are in the journal already */
	uint64_t compact_at;
	bool replaying;
	bool write_warned;
	/* The container of the last event added: most events of a Pod come
	 * from the container that sent the one before. */
	int last_ctr;
	char last_cid[TL_CONTAINER_ID_MAX], last_cname[TL_NAME_MAX];
	uint64_t replay_bad; /* whole frames that were no usable record */
	struct writer *writer; /* non-NULL while closing */
};

/* What a list entry says of a timeline besides its name (docs/http-api.md). */
struct summary {
	const char *owner_kind, *owner_name; /* NULL: unknown */
	int64_t deletion_ns;                 /* 0: none */
	bool complete;
	int64_t failed; /* failed requests; -1: not known (open, or no helper) */
};

struct closed {
	char *ns, *name;
	char uid[TL_UID_MAX];
	char *path;
	uint64_t bytes;
	int64_t mtime_ns, started_ns;
	size_t events, findings;
	char *owner_kind, *owner_name;
	int64_t deletion_ns, failed;
	bool complete;
};

struct tl_timelines {
	struct tl_loop *loop;
	char *timelines_dir, *journal_dir;
	uint32_t linger_s, max_events, retention_hours, fsync_ms, close_wait_ms, max_open;
	uint64_t retention_bytes;
	bool (*writer_hook)(void *ud);
	void *writer_hook_ud;
	void (*before_close)(void *ud, const char *uid);
	void *before_close_ud;
	char *findings_helper; /* NULL: documents keep empty findings */
	struct recorder_info rec;
	int64_t recording_since_ns;
	struct timeline *buckets[HASH_BUCKETS];
	struct timeline *last; /* found last (find_open) */
	size_t n_open;
	struct closed *closed;
	size_t n_closed, cap_closed;
	uint64_t closed_bytes;
	struct tl_timer *fsync_timer, *retention_timer;
	size_t fsync_next; /* the bucket the next fsync tick starts at */
	/* Journal frames are queued and written once per loop iteration (a
	 * 1 ms timer armed by the first queued frame): one write(2) per ring
	 * drain instead of one per event. */
	struct tl_timer *flush_timer;
	bool flush_armed;
	struct tl_jpool *jpool;
	/* The close's fdatasync, rename, directory fsync and unlink run here,
	 * off the loop; sync_fs: inline instead (shutdown). */
	struct tl_fsworker *fsw;
	bool sync_fs;
	unsigned n_readers;
	uint64_t refused;
	bool refused_warned;
};

/* close.c */
int64_t timeline_started(const struct timeline *tl);
const char *meta_str(const struct timeline *tl, const char *key);
void timeline_summary(const struct timeline *tl, struct summary *sm);
void writer_free(struct tl_loop *loop, struct writer *w);
int findings_helper_find(const char *configured, char **ret);
void hold_frame(struct timeline *tl, const void *body, size_t len);
void close_cb(struct tl_loop *loop, struct tl_timer *timer, void *userdata);
void writers_wait(struct tl_timelines *t);
/* closed.c */
void closed_clear(struct closed *c);
int closed_add(struct tl_timelines *t, const char *ns, const char *name, const char *uid,
		      const char *path, uint64_t bytes, int64_t mtime_ns, int64_t started_ns,
		      size_t events, size_t findings, const struct summary *sm);
void update_disk_metrics(struct tl_timelines *t);
const char *obj_str(struct json_object *o, const char *key);
int scan_closed(struct tl_timelines *t);
/* replay.c */
int replay_frame(void *userdata, const uint8_t *body, size_t len);
int replay_all(struct tl_timelines *t);
/* A journal frame being built (timeline.c, close.c, replay.c). */
struct frame {
	uint8_t b[TL_PAYLOAD_MAX + 64];
	size_t n;
};

/* A frame being read. */
struct rd {
	const uint8_t *p;
	size_t len, o;
	bool bad;
};

/* timeline.c */
bool uid_ok(const char *uid);
struct timeline *find_open(struct tl_timelines *t, const char *uid);
struct closed *find_closed(struct tl_timelines *t, const char *uid);
int join_path(char *buf, size_t len, const char *a, const char *b);
void note_disk_error(struct timeline *tl);
void fr_start(struct frame *f, uint8_t type);
void fr_i(struct frame *f, int64_t v);
uint64_t rd_u(struct rd *r);
int64_t rd_i(struct rd *r);
uint8_t rd_byte(struct rd *r);
void journal_raw(struct timeline *tl, const void *body, size_t len);
void journal_defs(struct timeline *tl);
void journal_frame(struct timeline *tl, const struct frame *f);
void journal_loss(struct timeline *tl);
void journal_aggs(struct timeline *tl);
void timeline_free(struct timeline *tl);
struct timeline *timeline_alloc(struct tl_timelines *t, const char *uid);
void timeline_unlink(struct timeline *tl);
int insert_record(struct tl_state *s, int64_t t, const struct rec_hdr *h,
			 const uint8_t *payload);
int new_agg(struct timeline *tl, const struct agg *a, struct agg **ret);
void start_linger(struct timeline *tl, int64_t deleted_ns);
int timeline_admit(struct timeline *tl, const struct tl_event *ev, const struct rec_hdr *h,
			  const uint8_t *payload);
int pack_event(struct timeline *tl, const struct tl_event *ev, struct rec_hdr *h,
		      uint8_t *payload);
int timeline_set_meta(struct timeline *tl, const struct tl_pod_meta *meta);
void compact(struct timeline *tl);
bool name_matches(const char *ns, const char *name, const char *uid, const char *want_ns,
			 const char *want_name);
