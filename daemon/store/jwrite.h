/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* What the live path writes to one timeline's journal: the definitions an
 * event frame names (strings, containers) before it, each change admission
 * reports, aggregate counts and loss once per loop iteration, and a
 * rewrite from memory once the journal has grown to twice what it must
 * hold (docs/journal-format.md). The frames are queued (journal.c) and
 * written by jwrite_flush().
 *
 * Every call returns 0 or the first -errno of its writes: the caller
 * counts it. A failed write leaves the journal behind the timeline (the
 * event is in memory, not on disk): nothing more is appended until
 * jwrite_repair() has rewritten the whole journal from memory. A write
 * that failed and was repaired lost nothing; only a journal still behind
 * when the agent stops loses what it lacks (docs/hostile-peers.md). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frames.h"
#include "journal.h"
#include "state.h"

/* A journal is rewritten from memory once it passes twice the size of what
 * it must hold (and this floor): its size follows the timeline's, which
 * the event budget bounds, not the Pod's age. */
#define JWRITE_COMPACT_MIN (256u * 1024)

/* What the journal says of an aggregate entry. */
struct jwrite_agg {
	uint64_t count, failed;
	int64_t interval_ms;
};

struct jwrite {
	struct tl_journal *j;    /* NULL: the timeline is kept in memory only */
	uint32_t strings, ctrs;  /* string and container definitions it holds */
	struct state_loss loss;  /* the loss it says */
	struct jwrite_agg *aggs; /* per aggregate entry it made */
	size_t cap_aggs;
	bool aggs_dirty;         /* an entry changed since jwrite_aggs() */
	uint64_t compact_at;
	/* A write failed: the file lacks frames the timeline holds (or it
	 * could not be opened: j is NULL). Cleared by jwrite_repair(). */
	bool behind;
	/* Events kept or folded while behind: what a stop loses unless
	 * repaired first. */
	uint64_t unjournaled;
};

/* DIR/UID.tlj, created if missing (torn tail cut off). On failure w has no
 * file (the timeline is kept in memory) and -errno is returned. */
int jwrite_open(struct jwrite *w, struct tl_jpool *pool, const char *dir, const char *uid);
/* Writes what is queued and closes; the file stays. Accepts a closed w. */
void jwrite_close(struct jwrite *w);
/* Closes without writing what is queued; path (len bytes) gets the file's
 * path to remove ("" when none). */
void jwrite_discard(struct jwrite *w, char *path, size_t len);
/* The journal holds all of s now (after a replay or a rewrite). */
int jwrite_synced(struct jwrite *w, const struct tl_state *s);

/* A kept event (E). */
int jwrite_event(struct jwrite *w, const struct tl_state *s, int64_t time_ns,
		 const struct state_hdr *h, const uint8_t *payload);
/* A folded event: the entry it made (A) and the one that stopped taking
 * events for it (D); its counts follow with jwrite_aggs(). */
int jwrite_folded(struct jwrite *w, const struct tl_state *s, const struct state_change *c);
/* A frame of a fixed-size type (O, G, P, L, ...). */
int jwrite_frame(struct jwrite *w, const struct tl_state *s, const struct frame *f);
int jwrite_meta(struct jwrite *w, const struct tl_state *s);
/* L, when the loss differs from what the journal says. */
int jwrite_loss(struct jwrite *w, const struct tl_state *s);
/* D for each recent entry whose counts changed, then L. */
int jwrite_aggs(struct jwrite *w, const struct tl_state *s);
/* Rewrites the whole journal from s (temp file, fsync, rename). */
int jwrite_compact(struct jwrite *w, const struct tl_state *s);

/* A journal behind: (re)opens DIR/UID.tlj if it has no file, then
 * rewrites it from s (jwrite_compact). 0 (no longer behind) or -errno. */
int jwrite_repair(struct jwrite *w, struct tl_jpool *pool, const char *dir, const char *uid,
		  const struct tl_state *s);

int jwrite_flush(struct jwrite *w);
/* Flush, then fsync if written since the last sync. */
int jwrite_sync(struct jwrite *w);
bool jwrite_pending(const struct jwrite *w);
/* Bytes in the file plus those queued. */
uint64_t jwrite_bytes(const struct jwrite *w);
