/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The store's top: what timeline.c (a timeline's life, the public calls)
 * and query.c (serving documents and lists) share. The units below them
 * (state, frames, jwrite, document, close, closed, replay, index, journal,
 * fsworker, mem) each have a header of their own and know nothing of
 * these structs. Fields are private to those two files. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "close.h"
#include "closed.h"
#include "document.h"
#include "index.h"
#include "jwrite.h"
#include "state.h"
#include "timeline.h"

#define STORE_DEFAULT_MAX_EVENTS 20000
#define STORE_DEFAULT_MAX_OPEN 1024
#define STORE_DEFAULT_FSYNC_MS 200
#define STORE_DEFAULT_CLOSE_WAIT_MS 5000
#define STORE_JOURNAL_FDS 128
#define STORE_RETENTION_PERIOD_MS (60 * 1000)
#define STORE_CLOSE_RETRY_MAX_MS (10 * 1000)
/* Documents served at once; each holds a copy of a timeline's compact
 * state (~1-3 MB at the cap) while its client reads. */
#define STORE_MAX_READERS 16
#define STORE_READ_CHUNK (64u * 1024)
#define STORE_NS_PER_S 1000000000LL
/* Timelines closing to make room at the cap at once: the larger of this
 * and a quarter of max_open. Past it, new Pods are refused again (a disk
 * that fails every close, or a burst of new Pods within one loop
 * iteration, must not let the timelines in memory grow past max_open +
 * this). */
#define STORE_EVICT_INFLIGHT_MIN 64
/* A journal behind (a failed write) is rewritten from memory after 1 s,
 * then at doubling intervals up to this while it keeps failing. */
#define STORE_REPAIR_MAX_MS (30 * 1000)

/* A timeline's phase. A closed timeline is freed: its UID is then in the
 * closed index. */
enum tl_phase {
	TL_PHASE_OPEN,    /* recording */
	TL_PHASE_LINGER,  /* the Pod is gone: still recording until close_timer */
	TL_PHASE_CLOSING, /* its document is being written (closing) */
	TL_PHASE_CLOSED,  /* written: the timeline is freed as it enters it */
};

struct timeline {
	struct tl_timelines *store;
	struct index_node node; /* in store->open, by s.uid */
	struct tl_state s;
	enum tl_phase phase; /* changed by timeline_phase() only */
	/* LINGER: when it closes; also a close retry after a failed write.
	 * NULL when the loop could not arm one: the fsync tick retries. */
	struct tl_timer *close_timer;
	struct close_job *closing; /* CLOSING */
	uint64_t late;             /* events and metadata that came while CLOSING */
	struct jwrite jw;
	bool write_warned;
	/* The store's clock (tl_timelines.now_ms) at the last event or
	 * metadata: the idle close and the choice at the cap. */
	uint64_t active_ms;
	bool evicting;            /* closing to make room at the cap */
	uint64_t repair_at_ms;    /* jw behind: when the repair is tried next */
	uint64_t repair_delay_ms;
};

static inline struct timeline *tl_of(struct index_node *n)
{
	return n ? (struct timeline *)(void *)((char *)n - offsetof(struct timeline, node)) : NULL;
}

struct store_metrics {
	struct tl_metric *open, *closed, *refused, *journal, *journal_fds, *disk, *disk_errors, *late,
		*duplicate;
	/* termline_timelines_evicted_total{reason}, by enum state_close_reason */
	struct tl_metric *evicted[STATE_CLOSE_REASON_MAX];
};

struct tl_timelines {
	struct tl_loop *loop;
	char *timelines_dir, *journal_dir, *closed_cache;
	uint32_t linger_s, max_events, retention_hours, fsync_ms, close_wait_ms, max_open;
	uint64_t retention_bytes;
	void (*before_close)(void *ud, const char *uid);
	void *before_close_ud;
	void (*closed_cb)(void *ud, const struct tl_closed_info *info);
	void *closed_ud;
	bool export_marks;
	char *findings_helper;
	struct doc_recorder rec;
	struct close_ctx close;
	int64_t recording_since_ns;
	struct store_index open;
	struct closed_index closed;
	struct tl_timer *fsync_timer, *retention_timer;
	size_t fsync_next; /* the bucket the next fsync tick starts at */
	/* Journal frames are queued and written once per loop iteration (a
	 * deferred call, or a 1 ms timer armed by the first queued frame
	 * outside a dispatch): one write(2) per ring drain instead of one per
	 * event. */
	struct tl_timer *flush_timer;
	bool flush_armed;
	struct tl_jpool *jpool;
	/* The close's fdatasync, rename, directory fsync and unlink run here,
	 * off the loop. */
	struct tl_fsworker *fsw;
	unsigned n_readers;
	uint64_t refused;
	bool refused_warned, evict_warned;
	/* The idle close (idle_ms 0: never) and who vouches for a Pod. */
	uint64_t idle_ms;
	bool (*vouched)(void *ud, const char *uid);
	void *vouched_ud;
	struct tl_timer *idle_timer;
	/* Monotonic ms, sampled at each fsync tick and timer: an event's
	 * activity time without a clock read per event. */
	uint64_t now_ms;
	unsigned n_evicting; /* timelines with evicting set */
	struct store_metrics m;
};
