/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The journal's frame bodies (docs/journal-format.md): each type's writer
 * beside its reader. A writer builds the body of one frame from the
 * state's types; frame_decode() turns a body back into a typed record and
 * applies nothing: what a record means for a timeline is its reader's
 * business (replay.c). The envelope (length, CRC) is journal.c's. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pod-meta.h"
#include "state.h"
#include "tl-buf.h"

enum frame_type {
	FRAME_OPEN = 'O',    /* opened, recording since */
	FRAME_STRING = 'S',  /* the next string id */
	FRAME_CTR = 'C',     /* the next container table entry */
	FRAME_EVENT = 'E',   /* an event: through admission on replay */
	FRAME_RAW = 'R',     /* a kept event, as is (compaction) */
	FRAME_AGG = 'A',     /* an aggregate entry: made (or compaction) */
	FRAME_AGG_SET = 'D', /* an aggregate entry's counts now, by index */
	FRAME_META = 'M',    /* Pod metadata */
	FRAME_LOSS = 'L',
	FRAME_GONE = 'G',    /* the Pod is gone (no pod.deleted seen) */
	FRAME_GAP = 'P',     /* the agent was not recording */
	FRAME_TERM = 'T',    /* the budget's state (compaction) */
};

/* The byte after an M that says its fields follow typed ('{' starts the
 * JSON text of agents before it). */
#define FRAME_META_TYPED 1

/* A body of bounded size being built (every type but S and M). */
struct frame {
	uint8_t b[TL_PAYLOAD_MAX + 64];
	size_t n;
};

void frame_open(struct frame *f, int64_t opened_ns, int64_t recording_since_ns);
void frame_ctr(struct frame *f, const struct state_ctr *c);
/* E (raw false) or R. */
void frame_event(struct frame *f, bool raw, int64_t time_ns, const struct state_hdr *h,
		 const uint8_t *payload);
void frame_agg(struct frame *f, const struct state_agg *a);
void frame_agg_set(struct frame *f, size_t i, const struct state_agg *a);
void frame_loss(struct frame *f, const struct state_loss *l);
/* reason: enum state_close_reason, written only when set (a byte after
 * the time: agents before it read the time and ignore the rest). */
void frame_gone(struct frame *f, int64_t at_ns, unsigned reason);
void frame_gap(struct frame *f, const struct state_gap *g);
/* The budget: terminating, the entry it started at, gone and when (and
 * the close reason, when set, as a last byte). */
void frame_term(struct frame *f, const struct tl_state *s);
/* Bodies of any size, appended to out (out->err on failure). */
void frame_string(struct tl_buf *out, const char *s, size_t len);
int frame_meta(struct tl_buf *out, const struct tl_pod_meta *meta);

/* Everything a replay needs to rebuild s exactly, framed
 * (tl_journal_frame): compaction. 0 or -ENOMEM. */
int frame_state(const struct tl_state *s, struct tl_buf *out);

/* A decoded body. Pointers borrow the body, but for meta (a reference of
 * its own: frame_rec_clear). Indexes are as written: a container or
 * aggregate index is checked against the state by whoever applies it. */
struct frame_rec {
	uint8_t type;
	uint8_t reason; /* G and T: enum state_close_reason, 0 when the frame has none */
	union {
		struct {
			int64_t opened_ns, recording_since_ns;
		} open;
		struct {
			const char *s;
			size_t len;
		} str;
		struct state_ctr ctr;
		struct {
			int64_t time_ns;
			struct state_hdr h;
			const uint8_t *payload;
		} event;               /* E and R */
		struct state_agg agg;
		struct {
			uint64_t index, count, failed;
			int64_t interval_ms;
		} agg_set;
		struct tl_pod_meta *meta;
		struct state_loss loss;
		int64_t gone_ns;
		struct state_gap gap;
		struct {
			bool terminating, gone;
			uint64_t at;
			int64_t gone_ns;
		} term;
	};
};

/* body (len bytes) of a timeline of uid as a record. 0, -EINVAL (not a
 * well-formed body of a known type: a damaged or foreign journal),
 * -ENOMEM. */
int frame_decode(const uint8_t *body, size_t len, const char *uid, struct frame_rec *ret);
void frame_rec_clear(struct frame_rec *r);
