/* SPDX-License-Identifier: Apache-2.0 */
/* The live path's journal writes (jwrite.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jwrite.h"

/* A failed write: the file lacks what the timeline holds from now on. */
static int failed(struct jwrite *w, int r)
{
	if (r < 0 && !w->behind) {
		w->behind = true;
		/* a chmod needs no free block: a stop before the repair
		 * leaves the mark for the replay to count */
		tl_journal_mark(w->j, true);
	}
	return r;
}

int jwrite_open(struct jwrite *w, struct tl_jpool *pool, const char *dir, const char *uid)
{
	memset(w, 0, sizeof(*w));
	w->compact_at = JWRITE_COMPACT_MIN;
	return failed(w, tl_journal_open(pool, dir, uid, &w->j));
}

int jwrite_repair(struct jwrite *w, struct tl_jpool *pool, const char *dir, const char *uid,
		  const struct tl_state *s)
{
	int r;

	if (!w->behind)
		return 0;
	if (!w->j) {
		r = tl_journal_open(pool, dir, uid, &w->j);
		if (r < 0)
			return r;
	}
	w->behind = false;
	r = jwrite_compact(w, s);
	if (r == 0)
		w->unjournaled = 0;
	return r;
}

static void jwrite_reset(struct jwrite *w)
{
	free(w->aggs);
	memset(w, 0, sizeof(*w));
}

void jwrite_close(struct jwrite *w)
{
	tl_journal_close(w->j);
	jwrite_reset(w);
}

void jwrite_discard(struct jwrite *w, char *path, size_t len)
{
	path[0] = '\0';
	if (w->j && strlen(tl_journal_path(w->j)) < len)
		memcpy(path, tl_journal_path(w->j), strlen(tl_journal_path(w->j)) + 1);
	tl_journal_discard(w->j);
	jwrite_reset(w);
}

static int aggs_reserve(struct jwrite *w, size_t n)
{
	size_t ncap;
	struct jwrite_agg *a;

	if (n <= w->cap_aggs)
		return 0;
	ncap = w->cap_aggs ? w->cap_aggs : 16;
	while (ncap < n)
		ncap *= 2;
	a = realloc(w->aggs, ncap * sizeof(*a));
	if (!a)
		return -ENOMEM;
	memset(a + w->cap_aggs, 0, (ncap - w->cap_aggs) * sizeof(*a));
	w->aggs = a;
	w->cap_aggs = ncap;
	return 0;
}

static void agg_said(struct jwrite *w, const struct tl_state *s, size_t i)
{
	const struct state_agg *a = &s->aggs[i];

	w->aggs[i] = (struct jwrite_agg){ a->count, a->failed, a->interval_ms };
}

int jwrite_synced(struct jwrite *w, const struct tl_state *s)
{
	if (aggs_reserve(w, s->n_aggs) < 0)
		return -ENOMEM;
	w->strings = tl_strtab_count(s->strs);
	w->ctrs = s->n_ctrs;
	w->loss = s->loss;
	for (size_t i = 0; i < s->n_aggs; i++)
		agg_said(w, s, i);
	w->aggs_dirty = false;
	return 0;
}

/* Nothing is appended to a journal behind: its frames would name
 * strings and entries the file lacks; the repair writes it all. */
static int append(struct jwrite *w, const void *body, size_t len)
{
	return w->j && !w->behind ? failed(w, tl_journal_append(w->j, body, len)) : 0;
}

/* Strings and containers new since the last write go first: an event
 * frame only names ids the journal already defines. */
static int defs(struct jwrite *w, const struct tl_state *s)
{
	uint32_t n = tl_strtab_count(s->strs);
	int r = 0, q;

	if (!w->j || w->behind)
		return 0;
	for (; w->strings < n; w->strings++) {
		size_t len;
		const char *str = tl_strtab_get(s->strs, w->strings, &len);
		uint8_t stack[256];
		struct tl_buf b;

		/* most strings are short, and paths can be new per event */
		if (len < sizeof(stack)) {
			stack[0] = FRAME_STRING;
			memcpy(stack + 1, str, len);
			q = append(w, stack, len + 1);
		} else {
			tl_buf_init(&b, 0);
			frame_string(&b, str, len);
			q = b.err ? b.err : append(w, b.p, b.len);
			tl_buf_free(&b);
		}
		if (q < 0 && r == 0)
			r = q;
	}
	for (; w->ctrs < s->n_ctrs; w->ctrs++) {
		struct frame f;

		frame_ctr(&f, &s->ctrs[w->ctrs]);
		q = append(w, f.b, f.n);
		if (q < 0 && r == 0)
			r = q;
	}
	return r;
}

static int maybe_compact(struct jwrite *w, const struct tl_state *s)
{
	if (!w->j || w->behind || tl_journal_bytes(w->j) <= w->compact_at)
		return 0;
	return jwrite_compact(w, s);
}

/* defs, the body, then a rewrite if the journal outgrew its timeline. */
static int write_body(struct jwrite *w, const struct tl_state *s, const void *body, size_t len)
{
	int r = defs(w, s), q;

	if (!w->j)
		return 0;
	q = append(w, body, len);
	r = r ?: q;
	q = maybe_compact(w, s);
	return r ?: q;
}

int jwrite_frame(struct jwrite *w, const struct tl_state *s, const struct frame *f)
{
	return write_body(w, s, f->b, f->n);
}

int jwrite_event(struct jwrite *w, const struct tl_state *s, int64_t time_ns,
		 const struct state_hdr *h, const uint8_t *payload)
{
	struct frame f;
	int r;

	if (w->behind || !w->j) {
		w->unjournaled++;
		return 0;
	}
	frame_event(&f, false, time_ns, h, payload);
	r = write_body(w, s, f.b, f.n);
	if (r < 0)
		w->unjournaled++;
	return r;
}

/* D for entry i, when its counts differ from what the journal says. */
static int agg_set(struct jwrite *w, const struct tl_state *s, size_t i)
{
	const struct state_agg *a = &s->aggs[i];
	const struct jwrite_agg *j = &w->aggs[i];
	struct frame f;

	if (a->count == j->count && a->failed == j->failed && a->interval_ms == j->interval_ms)
		return 0;
	agg_said(w, s, i);
	frame_agg_set(&f, i, a);
	return write_body(w, s, f.b, f.n);
}

int jwrite_folded(struct jwrite *w, const struct tl_state *s, const struct state_change *c)
{
	struct frame f;
	int r = 0;

	w->aggs_dirty = true;
	if (w->behind || !w->j)
		w->unjournaled++;
	if (!w->j || w->behind || !c->agg_made)
		return 0;
	if (aggs_reserve(w, s->n_aggs) < 0)
		return -ENOMEM;
	/* The entry leaving the recent ones takes no more events: what the
	 * journal does not say of it yet, it says now. */
	if (c->agg_retired)
		r = agg_set(w, s, c->retired);
	/* A new entry is journaled as it is made, in the order of the frames
	 * around it (a replay makes the same entries at the same indices);
	 * its later counts by jwrite_aggs(). */
	agg_said(w, s, c->agg);
	frame_agg(&f, &s->aggs[c->agg]);
	return r ?: write_body(w, s, f.b, f.n);
}

int jwrite_meta(struct jwrite *w, const struct tl_state *s)
{
	struct tl_buf b;
	int r;

	if (!w->j)
		return 0;
	tl_buf_init(&b, TL_JOURNAL_FRAME_MAX);
	r = frame_meta(&b, s->meta);
	if (r == 0)
		r = write_body(w, s, b.p, b.len);
	tl_buf_free(&b);
	return r;
}

int jwrite_loss(struct jwrite *w, const struct tl_state *s)
{
	struct frame f;

	if (memcmp(&s->loss, &w->loss, sizeof(s->loss)) == 0)
		return 0;
	w->loss = s->loss;
	frame_loss(&f, &s->loss);
	return write_body(w, s, f.b, f.n);
}

/* Events folded past the cap are not journaled one by one: the entries
 * they changed are, with their counts, once per loop iteration, and the
 * loss that counts them. Only the recent entries take events. */
int jwrite_aggs(struct jwrite *w, const struct tl_state *s)
{
	size_t have = s->n_recent < STATE_AGG_RECENT ? s->n_recent : STATE_AGG_RECENT;
	int r = 0, q;

	w->aggs_dirty = false;
	if (!w->j)
		return 0;
	if (aggs_reserve(w, s->n_aggs) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < have; k++) {
		q = agg_set(w, s, s->recent[(s->n_recent - 1 - k) % STATE_AGG_RECENT]);
		r = r ?: q;
	}
	q = jwrite_loss(w, s);
	return r ?: q;
}

/* Rewrites the journal from memory: what the budget folded or dropped and
 * superseded metadata leave the file, so it stays near the size of the
 * timeline however long the Pod lives. */
int jwrite_compact(struct jwrite *w, const struct tl_state *s)
{
	struct tl_buf b;
	int r;

	if (!w->j || w->behind)
		return 0;
	tl_buf_init(&b, 0);
	r = frame_state(s, &b);
	if (r == 0)
		r = tl_journal_rewrite(w->j, b.p, b.len);
	if (r == 0)
		r = jwrite_synced(w, s);
	if (r == 0)
		w->compact_at = 2 * (uint64_t)b.len > JWRITE_COMPACT_MIN ? 2 * (uint64_t)b.len
									: JWRITE_COMPACT_MIN;
	else /* not again until the journal has grown as much once more */
		w->compact_at = tl_journal_bytes(w->j) * 2;
	tl_buf_free(&b);
	return failed(w, r);
}

int jwrite_flush(struct jwrite *w)
{
	return failed(w, tl_journal_flush(w->j));
}

/* An fsync that failed may have lost written pages: behind too. */
int jwrite_sync(struct jwrite *w)
{
	return failed(w, tl_journal_sync(w->j));
}

bool jwrite_pending(const struct jwrite *w)
{
	return tl_journal_pending(w->j);
}

uint64_t jwrite_bytes(const struct jwrite *w)
{
	return tl_journal_bytes(w->j);
}
