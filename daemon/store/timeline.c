/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline store: per-Pod index, admission and budget, journal
 * records, compaction, timers and the public calls (listing included). Its
 * other parts, sharing store-int.h: closed.c (closed index and retention),
 * close.c (the document writer and its findings), replay.c (journals at
 * start), query.c (serving documents). The document itself is document.c;
 * the journal file format journal.c (docs/journal-format.md).
 *
 * Memory: an event is kept as an 8-byte header plus its packed payload
 * (strings are ids into the timeline's string table) in one arena, and a
 * 16-byte index entry (time, reference) kept sorted. bench-timeline
 * measures ~40-70 bytes per event against ~2.6 KB for the json-c objects
 * this replaced; nothing is freed per event, so closing and freeing a
 * timeline is a few free() calls. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "export-json.h"
#include "fileio.h"
#include "findings.h"
#include "journal.h"
#include "log.h"
#include "metrics.h"
#include "store-int.h"
#include "timeline.h"
#include "macro.h"

bool uid_ok(const char *uid)
{
	return strlen(uid) < TL_UID_MAX && tl_export_name_ok(uid);
}

/* Eight bytes per step: every event's uid is hashed (a byte per step was
 * 5 % of the store's instructions per event). */
static unsigned hash_uid(const char *s)
{
	const uint64_t m = 0xff51afd7ed558ccdull;
	size_t n = strlen(s);
	uint64_t h = n, w;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * m;
		h ^= h >> 32;
	}
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * m;
	h ^= h >> 29;
	return (unsigned)(h % HASH_BUCKETS);
}

struct timeline *find_open(struct tl_timelines *t, const char *uid)
{
	/* Events come in bursts from one Pod (a ring drain). */
	if (t->last && strcmp(t->last->s.uid, uid) == 0)
		return t->last;
	for (struct timeline *tl = t->buckets[hash_uid(uid)]; tl; tl = tl->hnext) {
		if (strcmp(tl->s.uid, uid) == 0) {
			t->last = tl;
			return tl;
		}
	}
	return NULL;
}

struct closed *find_closed(struct tl_timelines *t, const char *uid)
{
	for (size_t i = 0; i < t->n_closed; i++)
		if (strcmp(t->closed[i].uid, uid) == 0)
			return &t->closed[i];
	return NULL;
}

int join_path(char *buf, size_t len, const char *a, const char *b)
{
	int n = snprintf(buf, len, "%s/%s", a, b);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

void note_disk_error(struct timeline *tl)
{
	tl_metric_add(M_DISK_ERR, NULL, 1);
	if (tl && tl->writer)
		tl->writer->held_disk++;
	else if (tl)
		tl->s.loss.disk++;
}

/* ---- frame building ---- */

void fr_start(struct frame *f, uint8_t type)
{
	f->b[0] = type;
	f->n = 1;
}

static void fr_u(struct frame *f, uint64_t v)
{
	f->n += tl_varint_put(f->b + f->n, v);
}

void fr_i(struct frame *f, int64_t v)
{
	fr_u(f, tl_zigzag(v));
}

static void fr_byte(struct frame *f, uint8_t v)
{
	f->b[f->n++] = v;
}

static void fr_bytes(struct frame *f, const void *p, size_t n)
{
	memcpy(f->b + f->n, p, n);
	f->n += n;
}

uint64_t rd_u(struct rd *r)
{
	uint64_t v = 0;
	size_t n = r->bad ? 0 : tl_varint_get(r->p + r->o, r->len - r->o, &v);

	if (!n)
		r->bad = true;
	r->o += n;
	return v;
}

int64_t rd_i(struct rd *r)
{
	return tl_unzigzag(rd_u(r));
}

uint8_t rd_byte(struct rd *r)
{
	if (r->bad || r->o >= r->len) {
		r->bad = true;
		return 0;
	}
	return r->p[r->o++];
}

/* ---- journal records ---- */

static void flush_deferred(struct tl_loop *loop, void *userdata);

/* The journals are written once the loop is done with this iteration (a
 * ring drain's events in one write), or by a timer when asked outside one. */
static void arm_flush(struct tl_timelines *t)
{
	if (!t->flush_armed && (tl_loop_defer(t->loop, flush_deferred, t) == 0 ||
				tl_timer_arm(t->flush_timer, 1, 0) == 0))
		t->flush_armed = true;
}

void journal_raw(struct timeline *tl, const void *body, size_t len)
{
	int r;

	if (tl->replaying || !tl->journal)
		return;
	r = tl_journal_append(tl->journal, body, len);
	if (r == 0 && tl_journal_pending(tl->journal))
		arm_flush(tl->store);
	if (r < 0) {
		note_disk_error(tl);
		if (!tl->write_warned) {
			tl_warn("journal of pod %s: %s", tl->s.uid, strerror(-r));
			tl->write_warned = true;
		}
	}
}

/* Strings and containers new since the last journal write go first: an
 * event frame only names ids the journal already defines. */
void journal_defs(struct timeline *tl)
{
	uint32_t n = tl_strtab_count(tl->s.strs);

	if (tl->replaying)
		return;
	for (; tl->j_strings < n; tl->j_strings++) {
		size_t len;
		const char *s = tl_strtab_get(tl->s.strs, tl->j_strings, &len);
		uint8_t stack[256], *body = len + 1 <= sizeof(stack) ? stack : malloc(len + 1);

		if (!body) {
			note_disk_error(tl);
			continue;
		}
		body[0] = FR_STRING;
		memcpy(body + 1, s, len);
		journal_raw(tl, body, len + 1);
		if (body != stack)
			free(body);
	}
	for (; tl->j_ctrs < tl->s.n_ctrs; tl->j_ctrs++) {
		const struct ctr_ent *c = &tl->s.ctrs[tl->j_ctrs];
		struct frame f;

		fr_start(&f, FR_CTR);
		fr_u(&f, (uint64_t)c->id_s + 1);
		fr_u(&f, (uint64_t)c->name_s + 1);
		fr_u(&f, c->cgroup_id);
		journal_raw(tl, f.b, f.n);
	}
}

void journal_frame(struct timeline *tl, const struct frame *f)
{
	journal_defs(tl);
	journal_raw(tl, f->b, f->n);
	if (!tl->replaying && !tl->writer && tl->journal &&
	    tl_journal_bytes(tl->journal) > tl->compact_at)
		compact(tl);
}

static void loss_frame(const struct loss *l, struct frame *f)
{
	fr_start(f, FR_LOSS);
#define PUT(field, key) fr_u(f, l->field);
	LOSS_FIELDS(PUT)
#undef PUT
}

/* The loss as a replay must see it: what is held aside while closing
 * included (replay redoes the close with it). */
void journal_loss(struct timeline *tl)
{
	struct loss l = tl->s.loss;
	struct frame f;

	if (tl->writer) {
		l.kernel += tl->writer->held_kernel;
		l.disk += tl->writer->held_disk;
	}
	if (memcmp(&l, &tl->loss_journaled, sizeof(l)) == 0)
		return;
	tl->loss_journaled = l;
	loss_frame(&l, &f);
	journal_frame(tl, &f);
}

static void agg_frame(const struct agg *a, struct frame *f)
{
	fr_start(f, FR_AGG);
	fr_i(f, a->bucket_ns);
	fr_i(f, a->interval_ms);
	fr_u(f, a->count);
	fr_u(f, a->failed);
	fr_u(f, a->ctr == NO_CTR ? 0 : (uint64_t)a->ctr + 1);
	fr_byte(f, a->source);
	fr_byte(f, a->kind);
}

static void agg_journaled(struct agg *a)
{
	a->j_count = a->count;
	a->j_failed = a->failed;
	a->j_interval_ms = a->interval_ms;
}

/* Aggregate entry i's counts, when they changed since the journal last
 * said them. */
static void journal_agg_set(struct timeline *tl, size_t i)
{
	struct agg *a = &tl->s.aggs[i];
	struct frame f;

	if (a->count == a->j_count && a->failed == a->j_failed && a->interval_ms == a->j_interval_ms)
		return;
	agg_journaled(a);
	fr_start(&f, FR_AGG_SET);
	fr_u(&f, i);
	fr_u(&f, a->count);
	fr_u(&f, a->failed);
	fr_i(&f, a->interval_ms);
	journal_frame(tl, &f);
}

/* Events folded past the cap are not journaled one by one: the entries
 * they changed are, with their counts, once per loop iteration, and the
 * loss that counts them. Only the recent entries take events; one that
 * leaves them is journaled as it leaves (new_agg). */
void journal_aggs(struct timeline *tl)
{
	size_t have = tl->n_recent < AGG_RECENT ? tl->n_recent : AGG_RECENT;

	tl->aggs_dirty = false;
	if (tl->replaying || !tl->journal)
		return;
	for (size_t k = 0; k < have; k++)
		journal_agg_set(tl, tl->recent[(tl->n_recent - 1 - k) % AGG_RECENT]);
	journal_loss(tl);
}

/* The Pod-metadata frame: its JSON through the one encoder (pod-meta.c),
 * read back by tl_pod_meta_from_json(). */
static int meta_body(const struct tl_pod_meta *meta, struct tl_buf *b)
{
	struct json_object *o = tl_pod_meta_to_json(meta);
	size_t n;
	const char *s = o ? json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE, &n) : NULL;

	if (s) {
		tl_buf_addc(b, FR_META);
		tl_buf_add(b, s, n);
	}
	json_object_put(o);
	return s ? b->err : -ENOMEM;
}

static void event_frame(struct frame *f, uint8_t type, int64_t time_ns, const struct rec_hdr *h,
			const uint8_t *payload)
{
	fr_start(f, type);
	fr_i(f, time_ns);
	fr_byte(f, h->kind);
	fr_byte(f, h->source);
	fr_u(f, h->flags);
	fr_u(f, h->ctr == NO_CTR ? 0 : (uint64_t)h->ctr + 1);
	fr_bytes(f, payload, h->len);
}

/* ---- timeline model ---- */


void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	writer_free(tl->store->loop, tl->writer);
	tl_timer_free(tl->close_timer);
	tl_journal_close(tl->journal);
	state_release(&tl->s);
	free(tl);
}

struct timeline *timeline_alloc(struct tl_timelines *t, const char *uid)
{
	struct timeline *tl = calloc(1, sizeof(*tl));
	unsigned h;

	if (!tl)
		return NULL;
	if (tl_strtab_new(&tl->s.strs) < 0) {
		free(tl);
		return NULL;
	}
	tl->store = t;
	snprintf(tl->s.uid, sizeof(tl->s.uid), "%s", uid);
	tl->s.opened_ns = tl_now_real_ns();
	tl->s.recording_since_ns = t->recording_since_ns;
	tl->compact_at = COMPACT_MIN_BYTES;
	tl->last_ctr = -1;
	h = hash_uid(uid);
	tl->hnext = t->buckets[h];
	t->buckets[h] = tl;
	t->n_open++;
	tl_metric_set(M_OPEN, NULL, (int64_t)t->n_open);
	return tl;
}

void timeline_unlink(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;

	if (t->last == tl)
		t->last = NULL;
	for (struct timeline **pp = &t->buckets[hash_uid(tl->s.uid)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == tl) {
			*pp = tl->hnext;
			t->n_open--;
			break;
		}
	}
	tl_metric_set(M_OPEN, NULL, (int64_t)t->n_open);
}

static void open_frame(const struct timeline *tl, struct frame *f)
{
	fr_start(f, FR_OPEN);
	fr_i(f, tl->s.opened_ns);
	fr_i(f, tl->s.recording_since_ns);
}

static int timeline_open(struct tl_timelines *t, const char *uid, struct timeline **ret)
{
	struct timeline *tl = timeline_alloc(t, uid);
	struct frame f;
	int r;

	if (!tl)
		return -ENOMEM;
	r = tl_journal_open(t->jpool, t->journal_dir, uid, &tl->journal);
	if (r < 0)
		note_disk_error(tl); /* keep recording in memory */
	open_frame(tl, &f);
	journal_frame(tl, &f);
	*ret = tl;
	return 0;
}

static size_t upper_bound(const struct tl_state *s, int64_t t)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->ev[mid].time_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Entry i's header into h and its payload, or NULL for an aggregate. */
static const uint8_t *rec_at(const struct tl_state *s, size_t i, struct rec_hdr *h)
{
	if (s->ev[i].ref & AGG_REF)
		return NULL;
	return rec_get(s->arena + s->ev[i].ref, h);
}

static bool same_record(const struct tl_state *s, size_t i, const struct rec_hdr *h,
			const uint8_t *payload)
{
	struct rec_hdr a;
	const uint8_t *ap = rec_at(s, i, &a);

	return ap && a.kind == h->kind && a.source == h->source && a.flags == h->flags &&
	       a.ctr == h->ctr && a.len == h->len && memcmp(ap, payload, h->len) == 0;
}

static bool is_duplicate(const struct tl_state *s, int64_t t, const struct rec_hdr *h,
			 const uint8_t *payload)
{
	size_t i;

	/* Events mostly arrive in time order: nothing held at t yet. */
	if (s->n == 0 || s->ev[s->n - 1].time_ns < t)
		return false;
	i = upper_bound(s, t);

	for (size_t k = 0; i > 0 && k < DEDUPE_SCAN_MAX; i--, k++) {
		if (s->ev[i - 1].time_ns != t)
			break;
		if (same_record(s, i - 1, h, payload))
			return true;
	}
	return false;
}

/* A restarted agent's first LIST restates the deletion and the terminated
 * containers of a Pod that was already terminating. Both carry the API's
 * own timestamps (deletionTimestamp, startedAt/finishedAt), so the same
 * fields observed at another time are the fact the journal already holds;
 * within one agent run the API side reports each of them once. */
static bool is_restated(const struct timeline *tl, const struct rec_hdr *h, const uint8_t *payload)
{
	if (!tl->s.loss.restarts || h->source != TL_SRC_API ||
	    (h->kind != TL_KIND_POD_DELETION_REQUESTED && h->kind != TL_KIND_CONTAINER_TERMINATED))
		return false;
	for (size_t i = 0; i < tl->s.n; i++)
		if (same_record(&tl->s, i, h, payload))
			return true;
	return false;
}

static int insert_ref(struct tl_state *s, int64_t t, uint32_t ref)
{
	size_t pos;

	if (s->n == s->cap) {
		size_t bytes = s->cap * sizeof(*s->ev);
		struct entry *n = big_grow(s->ev, &bytes, s->n * sizeof(*n), (s->n + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->ev = n;
		s->cap = bytes / sizeof(*n);
	}
	/* Equal times keep arrival order; in time order (the usual case)
	 * the end, without a search. */
	pos = s->n == 0 || s->ev[s->n - 1].time_ns <= t ? s->n : upper_bound(s, t);
	memmove(&s->ev[pos + 1], &s->ev[pos], (s->n - pos) * sizeof(*s->ev));
	s->ev[pos].time_ns = t;
	s->ev[pos].ref = ref;
	s->n++;
	return 0;
}

int insert_record(struct tl_state *s, int64_t t, const struct rec_hdr *h,
			 const uint8_t *payload)
{
	size_t off = s->alen, n;

	if (off + REC_HDR_MAX + h->len >= AGG_REF)
		return -E2BIG;
	if (arena_reserve(s, off + REC_HDR_MAX + h->len) < 0)
		return -ENOMEM;
	n = rec_put(s->arena + off, h);
	memcpy(s->arena + off + n, payload, h->len);
	if (insert_ref(s, t, (uint32_t)off) < 0)
		return -ENOMEM;
	s->alen = off + n + h->len;
	return 0;
}

int new_agg(struct timeline *tl, const struct agg *a, struct agg **ret)
{
	struct tl_state *s = &tl->s;

	if (s->n_aggs == s->cap_aggs) {
		size_t ncap = s->cap_aggs ? s->cap_aggs * 2 : 16;
		struct agg *n = realloc(s->aggs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->aggs = n;
		s->cap_aggs = ncap;
	}
	/* The entry leaving the recent ones takes no more events: what the
	 * journal does not say of it yet, it says now. */
	if (!tl->replaying && tl->n_recent >= AGG_RECENT)
		journal_agg_set(tl, tl->recent[tl->n_recent % AGG_RECENT]);
	if (insert_ref(s, a->bucket_ns, AGG_REF | (uint32_t)s->n_aggs) < 0)
		return -ENOMEM;
	s->aggs[s->n_aggs] = *a;
	tl->recent[tl->n_recent % AGG_RECENT] = s->n_aggs;
	tl->n_recent++;
	*ret = &s->aggs[s->n_aggs++];
	return 0;
}

/* Past the cap: fold the event into its per-second bucket. 1 folded, 0
 * dropped. */
static int aggregate(struct timeline *tl, int64_t t, const struct rec_hdr *h, bool failed,
		     size_t hard)
{
	int64_t bucket = t - (((t % AGG_INTERVAL_NS) + AGG_INTERVAL_NS) % AGG_INTERVAL_NS);
	size_t have = tl->n_recent < AGG_RECENT ? tl->n_recent : AGG_RECENT;
	struct agg *a = NULL;

	for (size_t k = 0; k < have; k++) {
		struct agg *c = &tl->s.aggs[tl->recent[(tl->n_recent - 1 - k) % AGG_RECENT]];

		if (c->bucket_ns == bucket && c->source == h->source && c->kind == h->kind &&
		    c->ctr == h->ctr) {
			a = c;
			break;
		}
	}
	/* No room for a new bucket: widen the latest bucket of the same kind
	 * to reach this event instead of losing it (sparse events, such as a
	 * long-lived Pod's probes, would otherwise each need one). */
	for (size_t k = 0; !a && tl->s.n >= hard && k < have; k++) {
		struct agg *c = &tl->s.aggs[tl->recent[(tl->n_recent - 1 - k) % AGG_RECENT]];
		int64_t span_ms;

		if (c->bucket_ns > t || c->source != h->source || c->kind != h->kind ||
		    c->ctr != h->ctr)
			continue;
		a = c;
		span_ms = (t - c->bucket_ns) / 1000000 + 1;
		if (c->interval_ms < span_ms)
			c->interval_ms = span_ms;
	}
	if (!a) {
		struct agg n = { .bucket_ns = bucket, .interval_ms = AGG_INTERVAL_NS / 1000000,
				 .ctr = h->ctr, .source = h->source, .kind = h->kind };
		struct frame f;

		if (tl->s.n >= hard)
			return 0;
		if (new_agg(tl, &n, &a) < 0)
			return -ENOMEM;
		a->count = 1;
		a->failed = failed;
		/* A new entry is journaled as it is made, in the order of the
		 * frames around it (a replay makes the same entries at the
		 * same indices); its later counts by journal_aggs(). */
		agg_journaled(a);
		agg_frame(a, &f);
		journal_frame(tl, &f);
		/* the loss that counts it, with this iteration's entries */
		if (!tl->replaying) {
			tl->aggs_dirty = true;
			arm_flush(tl->store);
		}
		return 1;
	}
	a->count++;
	if (failed)
		a->failed++;
	if (!tl->replaying) {
		tl->aggs_dirty = true;
		arm_flush(tl->store);
	}
	return 1;
}


void start_linger(struct timeline *tl, int64_t deleted_ns)
{
	struct tl_timelines *t = tl->store;
	int64_t remaining_ms = (int64_t)t->linger_s * 1000;

	tl->deleted = true;
	tl->deleted_ns = deleted_ns;
	if (tl->replaying)
		return; /* armed after the replay, from the deletion time */
	if (remaining_ms < 1)
		remaining_ms = 1;
	if (tl_loop_add_timer(t->loop, (uint64_t)remaining_ms, 0, close_cb, tl, &tl->close_timer) < 0)
		tl->close_timer = NULL; /* retried by the fsync tick */
}

/* Termination is what the timeline is for: whatever a long-lived Pod
 * accumulated before (exec probes alone make two events every few seconds),
 * its termination gets a whole event budget of its own. */
static bool starts_termination(const struct tl_event *ev)
{
	int64_t signo;

	if (!tl_kind_has(ev->kind, TL_KF_TERMINATION))
		return false;
	if (ev->kind != TL_KIND_PROCESS_SIGNAL)
		return true;
	return tl_event_get_i(ev, TL_F_SIG_SIGNO, &signo) && (signo == SIGTERM || signo == SIGKILL);
}

static bool http_failed(const struct tl_event *ev)
{
	int64_t status;

	if (ev->kind != TL_KIND_HTTP_REQUEST || !tl_event_get_i(ev, TL_F_HTTP_STATUS, &status))
		return false;
	return status == 0 || status >= 500;
}

/* 1 when kept (journal it), 2 when folded into an aggregate entry (which
 * the store journals itself), 0 when a duplicate or dropped.
 * Before termination: up to max_events everything is kept; past it API
 * lifecycle facts (rare) are kept up to 2 x max_events and everything else,
 * kernel lifecycle events included, is folded per second. From termination
 * on, counted from its start: up to max_events everything is kept, lifecycle
 * events up to 2 x max_events, the rest folded; past that, dropped. */
int timeline_admit(struct timeline *tl, const struct tl_event *ev, const struct rec_hdr *h,
			  const uint8_t *payload)
{
	size_t soft = tl->store->max_events, hard = 2 * (size_t)tl->store->max_events;
	bool lifecycle = tl_kind_has(ev->kind, TL_KF_LIFECYCLE), keep_lifecycle;
	size_t base, used;
	int r;

	if (is_duplicate(&tl->s, ev->time_ns, h, payload) || is_restated(tl, h, payload)) {
		tl_metric_add(M_DUPLICATE, NULL, 1);
		return 0;
	}
	if (!tl->terminating && starts_termination(ev)) {
		tl->terminating = true;
		tl->n_at_termination = tl->s.n;
	}
	base = tl->terminating ? tl->n_at_termination : 0;
	used = tl->s.n - base;
	keep_lifecycle = tl->terminating ? lifecycle : (lifecycle && ev->source == TL_SRC_API);
	/* The first pod.deleted is kept past every limit: it ends the timeline,
	 * and a replay must see it too. */
	if (used < soft || (keep_lifecycle && used < hard) ||
	    (!tl->deleted && ev->kind == TL_KIND_POD_DELETED)) {
		r = insert_record(&tl->s, ev->time_ns, h, payload);
		if (r < 0)
			return r;
		r = 1;
		if (ev->kind == TL_KIND_POD_DELETION_REQUESTED &&
		    (!tl->deletion_ns || ev->time_ns < tl->deletion_ns))
			tl->deletion_ns = ev->time_ns;
	} else if (keep_lifecycle) {
		tl->s.loss.dropped++;
		r = 0;
	} else {
		r = aggregate(tl, ev->time_ns, h, http_failed(ev), base + hard);
		if (r < 0)
			return r;
		if (r > 0) {
			tl->s.loss.aggregated++;
			r = 2;
		} else {
			tl->s.loss.dropped++;
		}
	}
	if (r > 0 && !tl->deleted && tl_kind_has(ev->kind, TL_KF_ENDS_POD) &&
	    /* Without the API server (--no-api) the removal of the Pod's last
	     * container cgroup is the only sign that it is gone. */
	    (ev->kind == TL_KIND_POD_DELETED || !tl->s.meta))
		start_linger(tl, ev->time_ns);
	return r;
}

static int64_t intern_opt(struct tl_strtab *tab, const char *s)
{
	return s && *s ? tl_strtab_intern(tab, s, strlen(s)) : (int64_t)UINT32_MAX;
}

static void remember_ctr(struct timeline *tl, const struct tl_event *ev, uint32_t i)
{
	tl->last_ctr = (int)i;
	memcpy(tl->last_cid, ev->container_id, sizeof(tl->last_cid));
	memcpy(tl->last_cname, ev->container, sizeof(tl->last_cname));
}

/* The container table index of ev's (id, name) pair, added if new. */
static uint16_t container_index(struct timeline *tl, const struct tl_event *ev)
{
	struct tl_state *s = &tl->s;
	int64_t id, name;

	if (!ev->container_id[0] && !ev->container[0])
		return NO_CTR;
	if (tl->last_ctr >= 0 && strcmp(ev->container_id, tl->last_cid) == 0 &&
	    strcmp(ev->container, tl->last_cname) == 0 &&
	    (!ev->cgroup_id || s->ctrs[tl->last_ctr].cgroup_id))
		return (uint16_t)tl->last_ctr;
	id = intern_opt(s->strs, ev->container_id);
	name = intern_opt(s->strs, ev->container);
	if (id < 0 || name < 0)
		return NO_CTR;
	for (uint32_t i = 0; i < s->n_ctrs; i++) {
		struct ctr_ent *c = &s->ctrs[i];

		if (c->id_s == (uint32_t)id && c->name_s == (uint32_t)name) {
			if (!c->cgroup_id && ev->cgroup_id)
				c->cgroup_id = ev->cgroup_id; /* rare: not journaled again */
			remember_ctr(tl, ev, i);
			return (uint16_t)i;
		}
	}
	if (s->n_ctrs >= MAX_CTRS)
		return NO_CTR;
	if (s->n_ctrs == s->cap_ctrs) {
		uint32_t ncap = s->cap_ctrs ? s->cap_ctrs * 2 : 8;
		struct ctr_ent *n = realloc(s->ctrs, ncap * sizeof(*n));

		if (!n)
			return NO_CTR;
		s->ctrs = n;
		s->cap_ctrs = ncap;
	}
	s->ctrs[s->n_ctrs] = (struct ctr_ent){ .id_s = (uint32_t)id, .name_s = (uint32_t)name,
					       .cgroup_id = ev->cgroup_id };
	remember_ctr(tl, ev, s->n_ctrs);
	return (uint16_t)s->n_ctrs++;
}

/* ev -> header + payload for tl. */
int pack_event(struct timeline *tl, const struct tl_event *ev, struct rec_hdr *h,
		      uint8_t *payload)
{
	uint32_t flags;
	int n = tl_event_pack(ev, tl->s.strs, payload, &flags);

	if (n < 0)
		return n;
	h->kind = (uint8_t)ev->kind;
	h->source = (uint8_t)ev->source;
	h->flags = (uint16_t)flags;
	h->ctr = container_index(tl, ev);
	h->len = (uint16_t)n;
	return 0;
}

int timeline_set_meta(struct timeline *tl, const struct tl_pod_meta *meta)
{
	struct tl_buf b;

	/* the API side repeats itself (resyncs, status changes of no
	 * interest here): only a changed field is a change */
	if (tl_pod_meta_equal(tl->s.meta, meta))
		return 0;
	tl_pod_meta_unref(tl->s.meta);
	tl->s.meta = tl_pod_meta_ref(meta);
	if (tl->replaying)
		return 0;
	tl_buf_init(&b, TL_JOURNAL_FRAME_MAX);
	if (meta_body(meta, &b) == 0) {
		journal_defs(tl);
		journal_raw(tl, b.p, b.len);
	} else {
		note_disk_error(tl);
	}
	tl_buf_free(&b);
	if (!tl->writer && tl->journal && tl_journal_bytes(tl->journal) > tl->compact_at)
		compact(tl);
	return 0;
}

/* ---- compaction ---- */

/* Everything a replay needs to rebuild tl exactly, as frames. */
static int state_frames(struct timeline *tl, struct tl_buf *out)
{
	struct tl_state *s = &tl->s;
	uint32_t n_str = tl_strtab_count(s->strs);
	struct frame f;
	struct tl_buf mb;

	open_frame(tl, &f);
	tl_journal_frame(out, f.b, f.n);
	for (uint32_t i = 0; i < n_str; i++) {
		size_t len;
		const char *str = tl_strtab_get(s->strs, i, &len);
		struct tl_buf sb;

		tl_buf_init(&sb, 0);
		tl_buf_addc(&sb, FR_STRING);
		tl_buf_add(&sb, str, len);
		if (!sb.err)
			tl_journal_frame(out, sb.p, sb.len);
		tl_buf_free(&sb);
	}
	for (uint32_t i = 0; i < s->n_ctrs; i++) {
		fr_start(&f, FR_CTR);
		fr_u(&f, (uint64_t)s->ctrs[i].id_s + 1);
		fr_u(&f, (uint64_t)s->ctrs[i].name_s + 1);
		fr_u(&f, s->ctrs[i].cgroup_id);
		tl_journal_frame(out, f.b, f.n);
	}
	if (s->meta) {
		tl_buf_init(&mb, TL_JOURNAL_FRAME_MAX);
		if (meta_body(s->meta, &mb) == 0)
			tl_journal_frame(out, mb.p, mb.len);
		tl_buf_free(&mb);
	}
	for (size_t i = 0; s->gaps && i < json_object_array_length(s->gaps); i++) {
		struct json_object *g = json_object_array_get_idx(s->gaps, i), *v;
		int64_t from = 0, to = 0;

		if (json_object_object_get_ex(g, "from", &v))
			tl_time_parse(json_object_get_string(v), &from);
		if (json_object_object_get_ex(g, "to", &v))
			tl_time_parse(json_object_get_string(v), &to);
		fr_start(&f, FR_GAP);
		fr_i(&f, from);
		fr_i(&f, to);
		tl_journal_frame(out, f.b, f.n);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct rec_hdr h;
		const uint8_t *payload = rec_at(s, i, &h);

		if (!payload)
			continue;
		event_frame(&f, FR_RAW, s->ev[i].time_ns, &h, payload);
		tl_journal_frame(out, f.b, f.n);
	}
	/* In index order: later FR_AGG_SET frames name them by index (a
	 * replay puts each at its time all the same). */
	for (size_t i = 0; i < s->n_aggs; i++) {
		agg_frame(&s->aggs[i], &f);
		tl_journal_frame(out, f.b, f.n);
	}
	fr_start(&f, FR_TERM);
	fr_byte(&f, tl->terminating);
	fr_u(&f, tl->n_at_termination);
	fr_byte(&f, tl->deleted);
	fr_i(&f, tl->deleted_ns);
	tl_journal_frame(out, f.b, f.n);
	loss_frame(&s->loss, &f);
	tl_journal_frame(out, f.b, f.n);
	return out->err;
}

/* Rewrites tl's journal from memory: what the budget folded or dropped and
 * superseded metadata leave the file, so it stays near the size of the
 * timeline however long the Pod lives (docs/journal-format.md). */
void compact(struct timeline *tl)
{
	struct tl_buf b;
	int r;

	tl_buf_init(&b, 0);
	r = state_frames(tl, &b);
	if (r == 0)
		r = tl_journal_rewrite(tl->journal, b.p, b.len);
	if (r == 0) {
		tl->j_strings = tl_strtab_count(tl->s.strs);
		tl->j_ctrs = tl->s.n_ctrs;
		tl->loss_journaled = tl->s.loss;
		for (size_t i = 0; i < tl->s.n_aggs; i++)
			agg_journaled(&tl->s.aggs[i]);
		tl->aggs_dirty = false;
		tl->compact_at = 2 * (uint64_t)b.len > COMPACT_MIN_BYTES ? 2 * (uint64_t)b.len
									: COMPACT_MIN_BYTES;
	} else {
		note_disk_error(tl);
		/* Not again until the journal has grown as much once more. */
		tl->compact_at = tl_journal_bytes(tl->journal) * 2;
	}
	tl_buf_free(&b);
}

/* ---- timers ---- */

static void flush_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct tl_timelines *t = userdata;

	t->flush_armed = false;
	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			int r;

			if (tl->aggs_dirty)
				journal_aggs(tl);
			if (!tl_journal_pending(tl->journal))
				continue;
			r = tl_journal_flush(tl->journal);
			if (r < 0) {
				note_disk_error(tl);
				if (!tl->write_warned) {
					tl_warn("journal of pod %s: %s", tl->s.uid, strerror(-r));
					tl->write_warned = true;
				}
			}
		}
	}
}

static void flush_deferred(struct tl_loop *loop, void *userdata)
{
	flush_cb(loop, NULL, userdata);
}

/* Each tick syncs journals for at most FSYNC_BUDGET_NS, resuming where
 * the last tick stopped: on a node with a hundred busy Pods, syncing every
 * journal in one tick blocked the loop for a hundred fdatasyncs. A journal
 * not reached this tick is reached by a later one. */
#define FSYNC_BUDGET_NS (5 * 1000000LL)

static void fsync_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct tl_timelines *t = userdata;
	struct timespec ts;
	int64_t start, now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	start = (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
	for (size_t k = 0; k < HASH_BUCKETS; k++) {
		size_t b = (t->fsync_next + k) % HASH_BUCKETS;

		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			journal_loss(tl);
			if (tl_journal_sync(tl->journal) < 0)
				note_disk_error(tl);
			/* A linger timer that could not be created: retry here. */
			if (tl->deleted && !tl->close_timer)
				tl_loop_add_timer(t->loop, 1, 0, close_cb, tl, &tl->close_timer);
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
		if (now - start > FSYNC_BUDGET_NS) {
			t->fsync_next = (b + 1) % HASH_BUCKETS;
			update_disk_metrics(t);
			return;
		}
	}
	update_disk_metrics(t);
}

static void retention_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_,
			 void *userdata)
{
	tl_timelines_retention_run(userdata);
}

/* ---- public ---- */

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

int tl_timelines_new(const struct tl_timelines_config *cfg, struct tl_loop *loop,
		     struct tl_timelines **ret)
{
	struct tl_timelines *t;
	char buf[PATH_MAX];
	int r;

	if (!cfg || !cfg->state_dir || !loop)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->loop = loop;
	t->linger_s = cfg->linger_s;
	t->max_events = cfg->max_events ? cfg->max_events : DEFAULT_MAX_EVENTS;
	t->max_open = cfg->max_open ? cfg->max_open : DEFAULT_MAX_OPEN;
	t->fsync_ms = cfg->fsync_ms ? cfg->fsync_ms : DEFAULT_FSYNC_MS;
	t->retention_bytes = cfg->retention_bytes;
	t->retention_hours = cfg->retention_hours;
	t->close_wait_ms = cfg->close_wait_ms ? cfg->close_wait_ms : DEFAULT_CLOSE_WAIT_MS;
	t->writer_hook = cfg->writer_hook;
	t->writer_hook_ud = cfg->writer_hook_ud;
	t->before_close = cfg->before_close;
	t->before_close_ud = cfg->before_close_ud;
	r = findings_helper_find(cfg->findings_helper, &t->findings_helper);
	if (r < 0) {
		free(t);
		return r;
	}
	t->recording_since_ns = cfg->recorder.recording_since_ns ? cfg->recorder.recording_since_ns
								  : tl_now_real_ns();
	t->rec.agent_version = dup_or_empty(cfg->recorder.agent_version);
	t->rec.node = dup_or_empty(cfg->recorder.node);
	t->rec.kernel = dup_or_empty(cfg->recorder.kernel);
	t->rec.config_digest = dup_or_empty(cfg->recorder.config_digest);
	if (!t->rec.agent_version || !t->rec.node || !t->rec.kernel || !t->rec.config_digest) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; cfg->recorder.probes && cfg->recorder.probes[i]; i++) {
		char **n = realloc(t->rec.probes, (t->rec.n_probes + 1) * sizeof(*n));

		if (!n) {
			r = -ENOMEM;
			goto fail;
		}
		t->rec.probes = n;
		t->rec.probes[t->rec.n_probes] = strdup(cfg->recorder.probes[i]);
		if (!t->rec.probes[t->rec.n_probes]) {
			r = -ENOMEM;
			goto fail;
		}
		t->rec.n_probes++;
	}
	r = tl_jpool_new(cfg->journal_fds ? cfg->journal_fds : JOURNAL_FDS, &t->jpool);
	if (r < 0)
		goto fail;

	r = join_path(buf, sizeof(buf), cfg->state_dir, "timelines");
	if (r < 0)
		goto fail;
	t->timelines_dir = strdup(buf);
	r = join_path(buf, sizeof(buf), cfg->state_dir, "journal");
	if (r < 0)
		goto fail;
	t->journal_dir = strdup(buf);
	if (!t->timelines_dir || !t->journal_dir) {
		r = -ENOMEM;
		goto fail;
	}
	r = mkdir_p(t->timelines_dir);
	if (r < 0)
		goto fail;
	r = mkdir_p(t->journal_dir);
	if (r < 0)
		goto fail;

	tl_metric_describe(M_OPEN, TL_METRIC_GAUGE, "Timelines currently open (recording).");
	tl_metric_describe(M_CLOSED, TL_METRIC_COUNTER, "Timelines closed and written to disk.");
	tl_metric_describe(M_REFUSED, TL_METRIC_COUNTER,
			   "Events and metadata of Pods refused because max open timelines were open.");
	tl_metric_describe(M_JOURNAL, TL_METRIC_GAUGE, "Bytes in the journals of open timelines.");
	tl_metric_describe(M_JOURNAL_FDS, TL_METRIC_GAUGE, "Journal files held open (a bounded pool).");
	tl_metric_describe(M_DISK, TL_METRIC_GAUGE, "Bytes on disk: closed documents plus journals.");
	tl_metric_describe(M_DISK_ERR, TL_METRIC_COUNTER,
			   "Failed writes, fsyncs or deletions in the state directory.");
	tl_metric_describe(M_LATE, TL_METRIC_COUNTER,
			   "Events for a Pod whose timeline had already closed (ignored).");
	tl_metric_set(M_OPEN, NULL, 0);
	tl_metric_add(M_CLOSED, NULL, 0);
	tl_metric_add(M_REFUSED, NULL, 0);
	tl_metric_add(M_DISK_ERR, NULL, 0);

	r = tl_loop_add_timer(loop, 0, 0, flush_cb, t, &t->flush_timer);
	if (r < 0)
		goto fail;
	r = tl_fsworker_new(loop, &t->fsw);
	if (r < 0)
		goto fail;
	scan_closed(t);
	r = replay_all(t);
	if (r < 0)
		goto fail;
	r = tl_loop_add_timer(loop, t->fsync_ms, t->fsync_ms, fsync_cb, t, &t->fsync_timer);
	if (r < 0)
		goto fail;
	r = tl_loop_add_timer(loop, RETENTION_PERIOD_MS, RETENTION_PERIOD_MS, retention_cb, t,
			      &t->retention_timer);
	if (r < 0)
		goto fail;
	tl_timelines_retention_run(t);
	*ret = t;
	return 0;
fail:
	tl_timelines_free(t);
	return r;
}

int tl_timelines_flush(struct tl_timelines *t)
{
	int r = 0;

	if (!t)
		return 0;
	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			int q;

			if (tl->aggs_dirty)
				journal_aggs(tl);
			journal_loss(tl);
			q = tl_journal_sync(tl->journal);
			if (q < 0) {
				note_disk_error(tl);
				if (r == 0)
					r = q;
			}
		}
	}
	update_disk_metrics(t);
	return r;
}

void tl_timelines_free(struct tl_timelines *t)
{
	if (!t)
		return;
	writers_wait(t);
	tl_timelines_flush(t);
	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		struct timeline *tl = t->buckets[b];

		while (tl) {
			struct timeline *next = tl->hnext;

			timeline_free(tl);
			tl = next;
		}
	}
	tl_fsworker_free(t->fsw);
	for (size_t i = 0; i < t->n_closed; i++)
		closed_clear(&t->closed[i]);
	free(t->closed);
	tl_timer_free(t->fsync_timer);
	tl_timer_free(t->retention_timer);
	tl_timer_free(t->flush_timer);
	tl_loop_cancel_defer(t->loop, flush_deferred, t);
	tl_jpool_free(t->jpool);
	for (size_t i = 0; i < t->rec.n_probes; i++)
		free(t->rec.probes[i]);
	free(t->rec.probes);
	free(t->rec.agent_version);
	free(t->rec.node);
	free(t->rec.kernel);
	free(t->rec.config_digest);
	free(t->timelines_dir);
	free(t->journal_dir);
	free(t->findings_helper);
	free(t);
}

static int get_or_open(struct tl_timelines *t, const char *uid, struct timeline **ret)
{
	struct timeline *tl;

	/* An open timeline's uid was checked when it opened: a lookup first
	 * (every event comes here; the check walks the uid twice). A uid
	 * that is not a valid name is never found, so it still reaches the
	 * check below. */
	tl = find_open(t, uid);
	if (tl) {
		*ret = tl;
		return 0;
	}
	if (!uid_ok(uid))
		return -EINVAL;
	if (find_closed(t, uid)) {
		tl_metric_add(M_LATE, NULL, 1);
		return -ESTALE;
	}
	/* Memory and disk per Pod are bounded; the number of Pods must be
	 * too (a node has ~110; a flood of UIDs is refused and counted). */
	if (t->n_open >= t->max_open) {
		t->refused++;
		tl_metric_add(M_REFUSED, NULL, 1);
		if (!t->refused_warned) {
			tl_warn("timelines: %u open, the maximum; Pod %s not recorded", t->max_open, uid);
			t->refused_warned = true;
		}
		return -ENOSPC;
	}
	return timeline_open(t, uid, ret);
}

int tl_timelines_add(struct tl_timelines *t, const struct tl_event *ev)
{
	struct timeline *tl;
	struct rec_hdr h;
	uint8_t payload[TL_PAYLOAD_MAX];
	struct frame f;
	int r;

	if (!ev->pod_uid[0])
		return 0;
	r = get_or_open(t, ev->pod_uid, &tl);
	if (r == -ESTALE)
		return 0;
	if (r < 0)
		return r;
	r = pack_event(tl, ev, &h, payload);
	if (r < 0)
		return r;
	if (tl->writer) {
		event_frame(&f, FR_EVENT, ev->time_ns, &h, payload);
		hold_frame(tl, f.b, f.n);
		return 0;
	}
	r = timeline_admit(tl, ev, &h, payload);
	if (r <= 0 || r == 2)
		return r < 0 ? r : 0;
	event_frame(&f, FR_EVENT, ev->time_ns, &h, payload);
	journal_frame(tl, &f);
	return 0;
}

int tl_timelines_set_pod_meta(struct tl_timelines *t, const char *uid, const struct tl_pod_meta *meta)
{
	struct timeline *tl;
	int r;

	if (!uid || !meta)
		return -EINVAL;
	r = get_or_open(t, uid, &tl);
	if (r == -ESTALE)
		return 0;
	if (r < 0)
		return r;
	if (tl->writer) {
		struct tl_buf b;

		tl_buf_init(&b, TL_JOURNAL_FRAME_MAX);
		if (meta_body(meta, &b) == 0)
			hold_frame(tl, b.p, b.len);
		else
			tl->writer->held_dropped++;
		tl_buf_free(&b);
		return 0;
	}
	return timeline_set_meta(tl, meta);
}

int tl_timelines_close_missing(struct tl_timelines *t, bool (*exists)(void *ud, const char *uid),
			       void *ud)
{
	int n = 0;

	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			struct frame f;
			int64_t now;

			if (tl->deleted || exists(ud, tl->s.uid))
				continue;
			now = tl_now_real_ns();
			fr_start(&f, FR_GONE);
			fr_i(&f, now);
			journal_frame(tl, &f);
			start_linger(tl, now);
			n++;
		}
	}
	return n;
}

void tl_timelines_note_kernel_loss(struct tl_timelines *t, uint64_t dropped)
{
	if (!dropped)
		return;
	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			if (tl->writer)
				tl->writer->held_kernel += dropped;
			else
				tl->s.loss.kernel += dropped;
			journal_loss(tl);
		}
	}
}

size_t tl_timelines_open_count(const struct tl_timelines *t)
{
	return t->n_open;
}

uint64_t tl_timelines_refused(const struct tl_timelines *t)
{
	return t->refused;
}

size_t tl_timelines_memory(const struct tl_timelines *t)
{
	size_t m = 0;

	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			const struct tl_state *s = &tl->s;

			m += sizeof(*tl) + s->acap + s->cap * sizeof(*s->ev) +
			     s->cap_aggs * sizeof(*s->aggs) + s->cap_ctrs * sizeof(*s->ctrs) +
			     tl_strtab_memory(s->strs);
		}
	}
	return m;
}

static struct json_object *str_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

static bool list_match(const struct tl_list_filter *f, const char *ns, int64_t started_ns,
		       const struct summary *sm)
{
	int64_t at = sm->deletion_ns ? sm->deletion_ns : started_ns;

	if (!f)
		return true;
	if (f->ns && (!ns || strcmp(f->ns, ns) != 0))
		return false;
	if (f->owner_kind && (!sm->owner_kind || strcmp(f->owner_kind, sm->owner_kind) != 0))
		return false;
	if (f->owner_name && (!sm->owner_name || strcmp(f->owner_name, sm->owner_name) != 0))
		return false;
	if (f->since_ns && at < f->since_ns)
		return false;
	if (f->until_ns && at > f->until_ns)
		return false;
	return true;
}

static struct json_object *list_item(const char *ns, const char *name, const char *uid,
				     const char *state, size_t events, size_t findings,
				     const struct summary *sm, bool detail)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "namespace", str_or_null(ns));
	json_object_object_add(o, "name", str_or_null(name));
	json_object_object_add(o, "uid", json_object_new_string(uid));
	json_object_object_add(o, "state", json_object_new_string(state));
	json_object_object_add(o, "events", json_object_new_int64((int64_t)events));
	json_object_object_add(o, "findings", json_object_new_int64((int64_t)findings));
	if (detail) {
		struct json_object *owner = NULL;
		char tbuf[TL_TIME_STRLEN];

		if (sm->owner_kind || sm->owner_name) {
			owner = json_object_new_object();
			if (!owner) {
				json_object_put(o);
				return NULL;
			}
			json_object_object_add(owner, "kind", str_or_null(sm->owner_kind));
			json_object_object_add(owner, "name", str_or_null(sm->owner_name));
		}
		json_object_object_add(o, "owner", owner);
		json_object_object_add(o, "deletion",
				       sm->deletion_ns ? json_object_new_string(tl_time_format(sm->deletion_ns, tbuf))
						       : NULL);
		json_object_object_add(o, "complete", json_object_new_boolean(sm->complete));
		json_object_object_add(o, "failedRequests",
				       sm->failed >= 0 ? json_object_new_int64(sm->failed) : NULL);
	}
	return o;
}

int tl_timelines_list(struct tl_timelines *t, struct json_object **ret)
{
	return tl_timelines_list_filtered(t, NULL, ret);
}

int tl_timelines_list_filtered(struct tl_timelines *t, const struct tl_list_filter *f,
			       struct json_object **ret)
{
	struct json_object *root = json_object_new_object(), *arr = json_object_new_array();
	bool detail = f && f->detail;

	if (!root || !arr) {
		json_object_put(root);
		json_object_put(arr);
		return -ENOMEM;
	}
	json_object_object_add(root, "timelines", arr);
	for (size_t i = 0; i < t->n_closed; i++) {
		struct closed *c = &t->closed[i];
		struct summary sm = { c->owner_kind, c->owner_name, c->deletion_ns, c->complete, c->failed };
		struct json_object *o;

		if (!c->uid[0] || !list_match(f, c->ns, c->started_ns, &sm))
			continue;
		o = list_item(c->ns, c->name, c->uid, "closed", c->events, c->findings, &sm, detail);
		if (!o || json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			json_object_put(root);
			return -ENOMEM;
		}
	}
	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			struct json_object *o;
			struct summary sm;

			timeline_summary(tl, &sm);
			sm.complete = state_complete(&tl->s);
			if (!list_match(f, meta_str(tl, "namespace"), timeline_started(tl), &sm))
				continue;
			/* Findings and failed requests are computed when a
			 * timeline closes. */
			o = list_item(meta_str(tl, "namespace"), meta_str(tl, "name"), tl->s.uid, "open",
				      tl->s.n, 0, &sm, detail);
			if (!o || json_object_array_add(arr, o) < 0) {
				json_object_put(o);
				json_object_put(root);
				return -ENOMEM;
			}
		}
	}
	*ret = root;
	return 0;
}

bool name_matches(const char *ns, const char *name, const char *uid, const char *want_ns,
			 const char *want_name)
{
	if (tl_export_name_ok(ns) && tl_export_name_ok(name))
		return strcmp(ns, want_ns) == 0 && strcmp(name, want_name) == 0;
	/* Unnamed Pods are addressed as _unknown/UID, like their files. */
	return strcmp(want_ns, TL_UNKNOWN_NS) == 0 && strcmp(want_name, uid) == 0;
}
