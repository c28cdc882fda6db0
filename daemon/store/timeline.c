/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline store: per-Pod index, admission and budget, journal
 * records, replay, closing (forked writer), closed index and retention, and
 * the queries of the HTTP API. The document itself is document.c; the
 * journal file format journal.c (docs/journal-format.md).
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

/* Journal frame types (docs/journal-format.md). */
enum {
	FR_OPEN = 'O',   /* opened, recording since */
	FR_STRING = 'S', /* the next string id */
	FR_CTR = 'C',    /* the next container table entry */
	FR_EVENT = 'E',  /* an event, through admission on replay */
	FR_RAW = 'R',    /* a kept event, as is (compaction) */
	FR_AGG = 'A',    /* an aggregate entry (compaction) */
	FR_META = 'M',   /* Pod metadata, JSON */
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
struct writer {
	struct tl_state snap;
	struct doc_cursor cur;
	struct tl_buf buf;
	struct tl_timer *timer;
	int fd;                /* the temp file, -1 once closed */
	char tmp[PATH_MAX];    /* "" once renamed */
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
	char *findings_helper; /* NULL: documents keep empty findings */
	struct recorder_info rec;
	int64_t recording_since_ns;
	struct timeline *buckets[HASH_BUCKETS];
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
	unsigned n_readers;
	uint64_t refused;
	bool refused_warned;
};

static bool uid_ok(const char *uid)
{
	return strlen(uid) < TL_UID_MAX && tl_export_name_ok(uid);
}

static unsigned hash_uid(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h % HASH_BUCKETS;
}

static struct timeline *find_open(struct tl_timelines *t, const char *uid)
{
	for (struct timeline *tl = t->buckets[hash_uid(uid)]; tl; tl = tl->hnext)
		if (strcmp(tl->s.uid, uid) == 0)
			return tl;
	return NULL;
}

static struct closed *find_closed(struct tl_timelines *t, const char *uid)
{
	for (size_t i = 0; i < t->n_closed; i++)
		if (strcmp(t->closed[i].uid, uid) == 0)
			return &t->closed[i];
	return NULL;
}

static int join_path(char *buf, size_t len, const char *a, const char *b)
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

static void note_disk_error(struct timeline *tl)
{
	tl_metric_add(M_DISK_ERR, NULL, 1);
	if (tl && tl->writer)
		tl->writer->held_disk++;
	else if (tl)
		tl->s.loss.disk++;
}

/* ---- frame building ---- */

struct frame {
	uint8_t b[TL_PAYLOAD_MAX + 64];
	size_t n;
};

static void fr_start(struct frame *f, uint8_t type)
{
	f->b[0] = type;
	f->n = 1;
}

static void fr_u(struct frame *f, uint64_t v)
{
	f->n += tl_varint_put(f->b + f->n, v);
}

static void fr_i(struct frame *f, int64_t v)
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

struct rd {
	const uint8_t *p;
	size_t len, o;
	bool bad;
};

static uint64_t rd_u(struct rd *r)
{
	uint64_t v = 0;
	size_t n = r->bad ? 0 : tl_varint_get(r->p + r->o, r->len - r->o, &v);

	if (!n)
		r->bad = true;
	r->o += n;
	return v;
}

static int64_t rd_i(struct rd *r)
{
	return tl_unzigzag(rd_u(r));
}

static uint8_t rd_byte(struct rd *r)
{
	if (r->bad || r->o >= r->len) {
		r->bad = true;
		return 0;
	}
	return r->p[r->o++];
}

/* ---- journal records ---- */

static void compact(struct timeline *tl);

static void journal_raw(struct timeline *tl, const void *body, size_t len)
{
	int r;

	if (tl->replaying || !tl->journal)
		return;
	r = tl_journal_append(tl->journal, body, len);
	if (r == 0 && !tl->store->flush_armed && tl_journal_pending(tl->journal) &&
	    tl_timer_arm(tl->store->flush_timer, 1, 0) == 0)
		tl->store->flush_armed = true;
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
static void journal_defs(struct timeline *tl)
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

static void journal_frame(struct timeline *tl, const struct frame *f)
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
static void journal_loss(struct timeline *tl)
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

static int meta_body(struct json_object *meta, struct tl_buf *b)
{
	size_t n;
	const char *s = json_object_to_json_string_length(meta, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE, &n);

	if (!s)
		return -ENOMEM;
	tl_buf_addc(b, FR_META);
	tl_buf_add(b, s, n);
	return b->err;
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

static void writer_free(struct tl_loop *loop, struct writer *w);

static void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	writer_free(tl->store->loop, tl->writer);
	tl_timer_free(tl->close_timer);
	tl_journal_close(tl->journal);
	state_release(&tl->s);
	free(tl);
}

static struct timeline *timeline_alloc(struct tl_timelines *t, const char *uid)
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

static void timeline_unlink(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;

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

static const struct rec_hdr *rec_at(const struct tl_state *s, size_t i)
{
	if (s->ev[i].ref & AGG_REF)
		return NULL;
	return (const struct rec_hdr *)(s->arena + s->ev[i].ref);
}

static bool same_record(const struct rec_hdr *a, const struct rec_hdr *h, const uint8_t *payload)
{
	return a->kind == h->kind && a->source == h->source && a->flags == h->flags &&
	       a->ctr == h->ctr && a->len == h->len && memcmp(a + 1, payload, h->len) == 0;
}

static bool is_duplicate(const struct tl_state *s, int64_t t, const struct rec_hdr *h,
			 const uint8_t *payload)
{
	size_t i = upper_bound(s, t);

	for (size_t k = 0; i > 0 && k < DEDUPE_SCAN_MAX; i--, k++) {
		const struct rec_hdr *a;

		if (s->ev[i - 1].time_ns != t)
			break;
		a = rec_at(s, i - 1);
		if (a && same_record(a, h, payload))
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
	for (size_t i = 0; i < tl->s.n; i++) {
		const struct rec_hdr *a = rec_at(&tl->s, i);

		if (a && same_record(a, h, payload))
			return true;
	}
	return false;
}

static int insert_ref(struct tl_state *s, int64_t t, uint32_t ref)
{
	size_t pos;

	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct entry *n = realloc(s->ev, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->ev = n;
		s->cap = ncap;
	}
	/* Equal times keep arrival order. */
	pos = upper_bound(s, t);
	memmove(&s->ev[pos + 1], &s->ev[pos], (s->n - pos) * sizeof(*s->ev));
	s->ev[pos].time_ns = t;
	s->ev[pos].ref = ref;
	s->n++;
	return 0;
}

static int insert_record(struct tl_state *s, int64_t t, const struct rec_hdr *h,
			 const uint8_t *payload)
{
	size_t need = sizeof(*h) + h->len, off = (s->alen + 1) & ~(size_t)1; /* 2-aligned */

	if (off + need >= AGG_REF)
		return -E2BIG;
	if (arena_reserve(s, off + need) < 0)
		return -ENOMEM;
	memcpy(s->arena + off, h, sizeof(*h));
	memcpy(s->arena + off + sizeof(*h), payload, h->len);
	if (insert_ref(s, t, (uint32_t)off) < 0)
		return -ENOMEM;
	s->alen = off + need;
	return 0;
}

static int new_agg(struct timeline *tl, const struct agg *a, struct agg **ret)
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

		if (tl->s.n >= hard)
			return 0;
		if (new_agg(tl, &n, &a) < 0)
			return -ENOMEM;
	}
	a->count++;
	if (failed)
		a->failed++;
	return 1;
}

static void close_cb(struct tl_loop *loop, struct tl_timer *timer, void *userdata);

static void start_linger(struct timeline *tl, int64_t deleted_ns)
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

/* 1 when kept or folded (journal it), 0 when a duplicate or dropped.
 * Before termination: up to max_events everything is kept; past it API
 * lifecycle facts (rare) are kept up to 2 x max_events and everything else,
 * kernel lifecycle events included, is folded per second. From termination
 * on, counted from its start: up to max_events everything is kept, lifecycle
 * events up to 2 x max_events, the rest folded; past that, dropped. */
static int timeline_admit(struct timeline *tl, const struct tl_event *ev, const struct rec_hdr *h,
			  const uint8_t *payload)
{
	size_t soft = tl->store->max_events, hard = 2 * (size_t)tl->store->max_events;
	bool lifecycle = tl_kind_has(ev->kind, TL_KF_LIFECYCLE), keep_lifecycle;
	size_t base, used;
	int r;

	if (is_duplicate(&tl->s, ev->time_ns, h, payload) || is_restated(tl, h, payload))
		return 0;
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
		if (r > 0)
			tl->s.loss.aggregated++;
		else
			tl->s.loss.dropped++;
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
static int pack_event(struct timeline *tl, const struct tl_event *ev, struct rec_hdr *h,
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

static int timeline_set_meta(struct timeline *tl, struct json_object *meta)
{
	struct json_object *copy = NULL;
	struct tl_buf b;

	if (tl->s.meta && json_object_equal(tl->s.meta, meta))
		return 0;
	if (json_object_deep_copy(meta, &copy, NULL) < 0)
		return -ENOMEM;
	json_object_put(tl->s.meta);
	tl->s.meta = copy;
	if (tl->replaying)
		return 0;
	tl_buf_init(&b, TL_JOURNAL_FRAME_MAX);
	if (meta_body(copy, &b) == 0) {
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
		const struct rec_hdr *h = rec_at(s, i);

		if (h) {
			event_frame(&f, FR_RAW, s->ev[i].time_ns, h, (const uint8_t *)(h + 1));
		} else {
			const struct agg *a = &s->aggs[s->ev[i].ref & ~AGG_REF];

			fr_start(&f, FR_AGG);
			fr_i(&f, a->bucket_ns);
			fr_i(&f, a->interval_ms);
			fr_u(&f, a->count);
			fr_u(&f, a->failed);
			fr_u(&f, a->ctr == NO_CTR ? 0 : (uint64_t)a->ctr + 1);
			fr_byte(&f, a->source);
			fr_byte(&f, a->kind);
		}
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
static void compact(struct timeline *tl)
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
		tl->compact_at = 2 * (uint64_t)b.len > COMPACT_MIN_BYTES ? 2 * (uint64_t)b.len
									: COMPACT_MIN_BYTES;
	} else {
		note_disk_error(tl);
		/* Not again until the journal has grown as much once more. */
		tl->compact_at = tl_journal_bytes(tl->journal) * 2;
	}
	tl_buf_free(&b);
}

/* ---- closed documents ---- */

static void closed_clear(struct closed *c)
{
	free(c->ns);
	free(c->name);
	free(c->path);
	free(c->owner_kind);
	free(c->owner_name);
}

static int closed_add(struct tl_timelines *t, const char *ns, const char *name, const char *uid,
		      const char *path, uint64_t bytes, int64_t mtime_ns, int64_t started_ns,
		      size_t events, size_t findings, const struct summary *sm)
{
	struct closed *c;

	if (t->n_closed == t->cap_closed) {
		size_t ncap = t->cap_closed ? t->cap_closed * 2 : 64;
		struct closed *n = realloc(t->closed, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->closed = n;
		t->cap_closed = ncap;
	}
	c = &t->closed[t->n_closed];
	memset(c, 0, sizeof(*c));
	c->ns = ns ? strdup(ns) : NULL;
	c->name = name ? strdup(name) : NULL;
	c->path = strdup(path);
	c->owner_kind = sm->owner_kind ? strdup(sm->owner_kind) : NULL;
	c->owner_name = sm->owner_name ? strdup(sm->owner_name) : NULL;
	if ((ns && !c->ns) || (name && !c->name) || !c->path || (sm->owner_kind && !c->owner_kind) ||
	    (sm->owner_name && !c->owner_name)) {
		closed_clear(c);
		return -ENOMEM;
	}
	snprintf(c->uid, sizeof(c->uid), "%s", uid ? uid : "");
	c->bytes = bytes;
	c->mtime_ns = mtime_ns;
	c->started_ns = started_ns;
	c->events = events;
	c->findings = findings;
	c->deletion_ns = sm->deletion_ns;
	c->failed = sm->failed;
	c->complete = sm->complete;
	t->n_closed++;
	t->closed_bytes += bytes;
	return 0;
}

static uint64_t journal_bytes_total(struct tl_timelines *t)
{
	uint64_t journal = 0;

	for (size_t b = 0; b < HASH_BUCKETS; b++)
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext)
			journal += tl_journal_bytes(tl->journal);
	return journal;
}

static void update_disk_metrics(struct tl_timelines *t)
{
	uint64_t journal = journal_bytes_total(t);

	tl_metric_set(M_JOURNAL, NULL, (int64_t)journal);
	tl_metric_set(M_JOURNAL_FDS, NULL, tl_jpool_open_fds(t->jpool));
	tl_metric_set(M_DISK, NULL, (int64_t)(journal + t->closed_bytes));
}

static void closed_remove_at(struct tl_timelines *t, size_t i)
{
	t->closed_bytes -= t->closed[i].bytes;
	closed_clear(&t->closed[i]);
	memmove(&t->closed[i], &t->closed[i + 1], (t->n_closed - i - 1) * sizeof(*t->closed));
	t->n_closed--;
}

static int cmp_closed_mtime(const void *a, const void *b)
{
	const struct closed *x = a, *y = b;

	return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

int tl_timelines_retention_run(struct tl_timelines *t)
{
	int64_t now = tl_now_real_ns();
	int r = 0;

	/* Open timelines' journals cannot be removed, but they use the same
	 * disk: closed documents make room for them. */
	uint64_t journals = journal_bytes_total(t);

	/* Closed in order, so the array is (nearly) oldest first already.
	 * qsort with a NULL base is undefined even for 0 elements. */
	if (t->n_closed > 1)
		qsort(t->closed, t->n_closed, sizeof(*t->closed), cmp_closed_mtime);
	while (t->n_closed > 0) {
		struct closed *c = &t->closed[0];
		bool too_old = t->retention_hours &&
			       c->mtime_ns < now - (int64_t)t->retention_hours * 3600 * NS_PER_S;
		bool too_big = t->retention_bytes && t->closed_bytes + journals > t->retention_bytes;

		if (!too_old && !too_big)
			break;
		if (unlink(c->path) < 0 && errno != ENOENT) {
			r = -errno;
			note_disk_error(NULL);
			break;
		}
		closed_remove_at(t, 0);
	}
	update_disk_metrics(t);
	return r;
}

/* Failed requests of a document as kubectl-termline counts them: a request
 * seen twice (socket and log) once. */
static int64_t doc_failed_requests(struct json_object *doc)
{
	struct tl_model m;
	int64_t n = -1;

	if (tl_model_build(doc, &m) == 0) {
		n = 0;
		for (size_t i = 0; i < m.n_req; i++)
			n += m.reqs[i].failed && !m.reqs[i].dup;
	}
	tl_model_done(&m);
	return n;
}

static size_t array_len(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
		return 0;
	return json_object_array_length(v);
}

static const char *obj_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static void scan_closed_file(struct tl_timelines *t, const char *dir, const char *file)
{
	char path[PATH_MAX];
	struct json_object *doc, *pod = NULL, *events, *first, *owner = NULL, *v;
	struct summary sm = { .failed = -1 };
	struct stat st;
	int64_t started = 0;

	if (join_path(path, sizeof(path), dir, file) < 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (tl_export_is_temp(file)) {
		/* A temp file left by a crash inside tl_export_write_atomic. */
		unlink(path);
		return;
	}
	/* Any name ending in .json is a document, ".hidden_UID.json" too. */
	if (strlen(file) < 6 || strcmp(file + strlen(file) - 5, ".json") != 0)
		return;
	doc = json_object_from_file(path);
	if (doc && json_object_is_type(doc, json_type_object))
		json_object_object_get_ex(doc, "pod", &pod);
	if (doc && json_object_object_get_ex(doc, "events", &events) &&
	    json_object_is_type(events, json_type_array) && json_object_array_length(events) > 0) {
		first = json_object_array_get_idx(events, 0);
		if (tl_time_parse(obj_str(first, "time"), &started) < 0)
			started = 0;
		for (size_t i = 0; i < json_object_array_length(events); i++) {
			struct json_object *e = json_object_array_get_idx(events, i);
			const char *type = obj_str(e, "type");

			if (type && strcmp(type, "pod.deletion_requested") == 0 &&
			    tl_time_parse(obj_str(e, "time"), &sm.deletion_ns) == 0)
				break;
			sm.deletion_ns = 0;
		}
		sm.failed = doc_failed_requests(doc);
	}
	if (pod && json_object_object_get_ex(pod, "owner", &owner) &&
	    json_object_is_type(owner, json_type_object)) {
		sm.owner_kind = obj_str(owner, "kind");
		sm.owner_name = obj_str(owner, "name");
	}
	sm.complete = doc && json_object_object_get_ex(doc, "complete", &v) &&
		      json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
	/* Unreadable documents still count against retention. */
	closed_add(t, pod ? obj_str(pod, "namespace") : NULL, pod ? obj_str(pod, "name") : NULL,
		   pod ? obj_str(pod, "uid") : NULL, path, (uint64_t)st.st_size,
		   (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec, started,
		   doc ? array_len(doc, "events") : 0, doc ? array_len(doc, "findings") : 0, &sm);
	json_object_put(doc);
}

static bool dot_or_dotdot(const char *s)
{
	return strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

static int scan_closed(struct tl_timelines *t)
{
	DIR *top, *sub;
	struct dirent *de, *fe;
	char dir[PATH_MAX];

	top = opendir(t->timelines_dir);
	if (!top)
		return -errno;
	while ((de = readdir(top))) {
		/* A namespace may start with '.': only . and .. are skipped. */
		if (dot_or_dotdot(de->d_name))
			continue;
		if (join_path(dir, sizeof(dir), t->timelines_dir, de->d_name) < 0)
			continue;
		sub = opendir(dir);
		if (!sub)
			continue;
		while ((fe = readdir(sub)))
			if (!dot_or_dotdot(fe->d_name))
				scan_closed_file(t, dir, fe->d_name);
		closedir(sub);
	}
	closedir(top);
	return 0;
}

/* ---- closing ---- */

static int64_t timeline_started(const struct timeline *tl)
{
	return tl->s.n ? tl->s.ev[0].time_ns : tl->s.opened_ns;
}

static const char *meta_str(const struct timeline *tl, const char *key)
{
	return state_meta_str(&tl->s, key);
}

/* Owner and deletion of tl; complete and failed are the caller's. */
static void timeline_summary(const struct timeline *tl, struct summary *sm)
{
	struct json_object *pod, *owner, *v;

	memset(sm, 0, sizeof(*sm));
	sm->failed = -1;
	sm->deletion_ns = tl->deletion_ns;
	if (tl->s.meta && json_object_object_get_ex(tl->s.meta, "pod", &pod) &&
	    json_object_object_get_ex(pod, "owner", &owner) &&
	    json_object_is_type(owner, json_type_object)) {
		if (json_object_object_get_ex(owner, "kind", &v) && json_object_is_type(v, json_type_string))
			sm->owner_kind = json_object_get_string(v);
		if (json_object_object_get_ex(owner, "name", &v) && json_object_is_type(v, json_type_string))
			sm->owner_name = json_object_get_string(v);
	}
}

/* DIR (STATE/timelines/NS), FILE and DIR/FILE of tl's document. */
static int doc_location(const struct timeline *tl, char *dir, size_t dirlen, char *file,
			size_t filelen, char *path, size_t pathlen)
{
	char reldir[300];
	int r;

	r = tl_export_doc_location(meta_str(tl, "namespace"), meta_str(tl, "name"), tl->s.uid, reldir,
				   sizeof(reldir), file, filelen);
	if (r < 0)
		return r;
	r = join_path(dir, dirlen, tl->store->timelines_dir, reldir);
	if (r < 0)
		return r;
	return join_path(path, pathlen, dir, file);
}

static const char *meta_name_ok(const struct timeline *tl, const char *key)
{
	const char *v = meta_str(tl, key);

	return tl_export_name_ok(v) ? v : NULL;
}

static int replay_frame(void *userdata, const uint8_t *body, size_t len);

/* Disk full or unwritable: count it, keep the timeline open (it is
 * journaled) and try again later. */
static void close_failed(struct timeline *tl, int err)
{
	struct tl_timelines *t = tl->store;
	uint64_t retry_ms = (uint64_t)t->linger_s * 1000;

	if (!tl->write_warned) {
		tl_warn("timeline of pod %s not written: %s (retrying)", tl->s.uid, strerror(err));
		tl->write_warned = true;
	}
	note_disk_error(tl);
	journal_loss(tl);
	if (retry_ms < 1000)
		retry_ms = 1000;
	if (retry_ms > CLOSE_RETRY_MAX_MS)
		retry_ms = CLOSE_RETRY_MAX_MS;
	if (!tl->close_timer) {
		if (tl_loop_add_timer(t->loop, retry_ms, 0, close_cb, tl, &tl->close_timer) < 0)
			tl->close_timer = NULL; /* retried by the fsync tick */
		return;
	}
	if (tl_timer_arm(tl->close_timer, retry_ms, 0) < 0) {
		tl_timer_free(tl->close_timer);
		tl->close_timer = NULL;
	}
}

/* The document is on disk and indexed: the timeline is gone. Freeing is a
 * few free() calls (compact state), fine inside its own timer callback
 * since the loop allows freeing a timer there. */
static void close_done(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;

	tl_metric_add(M_CLOSED, NULL, 1);
	timeline_unlink(tl);
	if (tl_journal_remove(tl->journal) < 0)
		note_disk_error(NULL);
	tl->journal = NULL;
	timeline_free(tl);
	tl_timelines_retention_run(t);
}

/* ---- the document writer ---- */

#define WRITER_CHUNK (64u * 1024)

static void writer_free(struct tl_loop *loop, struct writer *w)
{
	if (!w)
		return;
	tl_timer_free(w->timer);
	if (w->pid > 0) {
		/* Given up (shutdown): its temp file, if any, is removed by
		 * the next start's scan; the timeline stays journaled. */
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (w->pid_fd >= 0) {
		tl_loop_del_io(loop, w->pid_fd);
		close(w->pid_fd);
	}
	if (w->out_fd >= 0)
		close(w->out_fd);
	if (w->fd >= 0)
		close(w->fd);
	/* Only a writer given up on (shutdown past close_wait_ms, or a failed
	 * write) leaves its temp file: its timeline stays journaled. */
	if (w->tmp[0])
		unlink(w->tmp);
	state_release(&w->snap);
	tl_buf_free(&w->buf);
	tl_buf_free(&w->held);
	free(w->ns);
	free(w->name);
	free(w->path);
	free(w);
}

static int write_all_fd(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The end: durable, then in place, then the rename itself durable. */
static int writer_commit(struct writer *w)
{
	int dfd, r = 0;

	if (fchmod(w->fd, 0644) < 0 || fdatasync(w->fd) < 0)
		r = -errno;
	if (close(w->fd) < 0 && r == 0)
		r = -errno;
	w->fd = -1;
	if (r == 0 && rename(w->tmp, w->path) < 0)
		r = -errno;
	if (r < 0)
		return r;
	w->tmp[0] = '\0';
	dfd = open(w->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (fsync(dfd) < 0)
		r = -errno;
	close(dfd);
	return r;
}

/* The temp file, in the document's directory, under a short name of its
 * own (one derived from the document's name passed NAME_MAX: item 5 of the
 * hostile-input audit). */
static int writer_open(struct writer *w)
{
	if (mkdir(w->dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (snprintf(w->tmp, sizeof(w->tmp), "%s/" TL_EXPORT_TMP_PREFIX "XXXXXX" TL_EXPORT_TMP_SUFFIX,
		     w->dir) >= (int)sizeof(w->tmp)) {
		w->tmp[0] = '\0';
		return -ENAMETOOLONG;
	}
	w->fd = mkostemps(w->tmp, (int)strlen(TL_EXPORT_TMP_SUFFIX), O_CLOEXEC);
	if (w->fd < 0) {
		w->tmp[0] = '\0';
		return -errno;
	}
	return 0;
}

/* ---- findings, off the loop ---- */

/* The findings of docs/findings.md need the whole document parsed (~0.2 s
 * for 20k events with json-c): too long for a loop step, and the tree's
 * memory would stay in this process's heap. So once the temp file is
 * written, termline-findings (a small program of its own, started with
 * posix_spawn: no copy of this process's page tables, unlike fork) reads
 * it, writes the document with its findings in place atomically (temp,
 * fsync, rename, fsync of the directory: those syncs leave the loop too),
 * removes the temp file and prints how many findings it wrote. Its exit
 * reaches the loop through a pidfd. Until then the timeline is closing,
 * served from memory as before. If it cannot run or fails, the temp file
 * is committed as it is: a valid document with no findings. */

static int helper_pid_cb(struct tl_loop *loop, int fd, uint32_t events, void *userdata);
static void writer_finish(struct timeline *tl, int err);
static int writer_commit(struct writer *w);

static int helper_start(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	const char *file = strrchr(w->path, '/');
	char *argv[5], *envp[] = { NULL };
	int pfd[2] = { -1, -1 }, r;
	bool fa_ok = false, attr_ok = false;

	if (!file || w->tmp[0] == '\0')
		return -EINVAL;
	argv[0] = t->findings_helper;
	argv[1] = w->tmp;
	argv[2] = w->dir;
	argv[3] = (char *)file + 1;
	argv[4] = NULL;
	/* O_CLOEXEC: only the dup2'd end reaches the child. */
	if (pipe2(pfd, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	r = -posix_spawn_file_actions_init(&fa);
	if (r < 0)
		goto out;
	fa_ok = true;
	r = -posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	if (r == 0)
		r = -posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (r < 0)
		goto out;
	r = -posix_spawnattr_init(&attr);
	if (r < 0)
		goto out;
	attr_ok = true;
	/* The agent blocks the signals it reads through a signalfd; the
	 * child must not inherit that mask nor ignored dispositions. */
	sigemptyset(&none);
	sigfillset(&all);
	r = -posix_spawnattr_setsigmask(&attr, &none);
	if (r == 0)
		r = -posix_spawnattr_setsigdefault(&attr, &all);
	if (r == 0)
		r = -posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	if (r < 0)
		goto out;
	r = -posix_spawn(&w->pid, t->findings_helper, &fa, &attr, argv, envp);
	if (r < 0) {
		w->pid = -1;
		goto out;
	}
	w->out_fd = pfd[0];
	pfd[0] = -1;
	/* Ours and not reaped until it exits: the pid is not reused. Without
	 * a pidfd (kernel < 5.3) the writer's timer polls the exit. */
	w->pid_fd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	if (w->pid_fd >= 0 && fcntl(w->pid_fd, F_SETFD, FD_CLOEXEC) < 0) {
		close(w->pid_fd);
		w->pid_fd = -1;
	}
	if (w->pid_fd >= 0 && tl_loop_add_io(t->loop, w->pid_fd, EPOLLIN, helper_pid_cb, tl) < 0) {
		close(w->pid_fd);
		w->pid_fd = -1;
	}
	if (w->pid_fd >= 0) {
		/* The exit wakes the loop: no more ticks needed. */
		tl_timer_free(w->timer);
		w->timer = NULL;
	}
	r = 0;
out:
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (pfd[0] >= 0)
		close(pfd[0]);
	if (pfd[1] >= 0)
		close(pfd[1]);
	return r;
}

/* > 0 while the helper runs, 0 once the document is in place, -errno. */
static int helper_poll(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	siginfo_t si;
	char out[32];
	ssize_t n = -1;
	unsigned long long count = 0, failed = 0;
	struct stat st;
	bool ok;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOHANG) < 0) {
		if (errno == EINTR)
			return 1;
		si.si_code = 0; /* not ours any more: treat as failed */
	} else if (si.si_pid == 0) {
		return 1;
	}
	w->pid = -1;
	if (w->pid_fd >= 0) {
		tl_loop_del_io(t->loop, w->pid_fd);
		close(w->pid_fd);
		w->pid_fd = -1;
	}
	if (w->out_fd >= 0) {
		n = read(w->out_fd, out, sizeof(out) - 1);
		close(w->out_fd);
		w->out_fd = -1;
	}
	ok = si.si_code == CLD_EXITED && si.si_status == 0 && n > 0;
	if (ok) {
		char *end;

		out[n] = '\0';
		errno = 0;
		count = strtoull(out, &end, 10);
		ok = errno == 0 && end != out;
		/* then the failed requests it counted */
		if (ok && *end == ' ') {
			char *p = end + 1;

			failed = strtoull(p, &end, 10);
			ok = errno == 0 && end != p;
			if (ok)
				w->failed = (int64_t)failed;
		}
		ok = ok && (*end == '\n' || *end == '\0');
	}
	if (ok && stat(w->path, &st) == 0) {
		close(w->fd);
		w->fd = -1;
		w->tmp[0] = '\0'; /* removed by the helper */
		w->bytes = (uint64_t)st.st_size;
		w->findings = (size_t)count;
		return 0;
	}
	tl_warn("timeline %s: %s failed (%s %d): its document is written without findings",
		tl->s.uid, t->findings_helper, si.si_code == CLD_EXITED ? "exit" : "signal",
		si.si_status);
	if (access(w->tmp, F_OK) < 0)
		return -EIO; /* not written: the close is retried */
	return writer_commit(w);
}

static int helper_pid_cb(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
			 void *userdata)
{
	struct timeline *tl = userdata;
	int r = helper_poll(tl);

	if (r <= 0)
		writer_finish(tl, -r);
	return 0;
}

/* The helper: cfg's path ("" turns it off), else next to this program
 * (installed side by side, or termlined in the build tree's daemon/ and
 * the helper in daemon/store/), else the libexec directory it is
 * installed to. */
static int findings_helper_find(const char *configured, char **ret)
{
	static const char *const rel[] = { "termline-findings", "store/termline-findings",
					   "../libexec/termline-findings" };
	char exe[PATH_MAX], cand[PATH_MAX];
	ssize_t n;

	*ret = NULL;
	if (configured) {
		if (!*configured)
			return 0;
		*ret = strdup(configured);
		return *ret ? 0 : -ENOMEM;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		for (size_t i = 0; slash && i < sizeof(rel) / sizeof(rel[0]); i++) {
			if (snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]) >= (int)sizeof(cand))
				continue;
			if (access(cand, X_OK) == 0)
				goto found;
		}
	}
	snprintf(cand, sizeof(cand), "%s/termline-findings", TL_LIBEXECDIR);
	if (access(cand, X_OK) == 0)
		goto found;
	tl_warn("termline-findings not found next to this program nor in %s: closed timelines are written without findings",
		TL_LIBEXECDIR);
	return 0;
found:
	*ret = strdup(cand);
	return *ret ? 0 : -ENOMEM;
}

/* One chunk of the document: > 0 more to do, 0 written and renamed, or
 * -errno. */
static int writer_step(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	int q, r;

	if (w->pid > 0)
		return helper_poll(tl);
	if (t->writer_hook && !t->writer_hook(t->writer_hook_ud))
		return 1; /* held by a test */
	if (w->fd < 0) {
		r = writer_open(w);
		if (r < 0)
			return r;
	}
	tl_buf_reset(&w->buf);
	q = document_write(&w->snap, &t->rec, &w->cur, &w->buf, WRITER_CHUNK);
	if (q < 0)
		return q;
	r = write_all_fd(w->fd, w->buf.p, w->buf.len);
	if (r < 0)
		return r;
	/* Start writeback of this chunk now: the final fdatasync then finds
	 * little left to do, instead of submitting the whole document in one
	 * loop iteration. Advisory: a failure only moves the work there. */
	(void)sync_file_range(w->fd, (off64_t)w->bytes, (off64_t)w->buf.len, SYNC_FILE_RANGE_WRITE);
	w->bytes += w->buf.len;
	if (q > 0)
		return 1;
	if (t->findings_helper) {
		r = helper_start(tl);
		if (r == 0)
			return 1;
		tl_warn("timeline %s: cannot run %s (%s): its document is written without findings",
			tl->s.uid, t->findings_helper, strerror(-r));
	}
	return writer_commit(w);
}

static void writer_finish(struct timeline *tl, int err)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	int r = -err;

	if (r == 0) {
		struct summary sm;

		timeline_summary(tl, &sm);
		sm.complete = state_complete(&w->snap);
		sm.failed = w->failed;
		r = closed_add(t, w->ns, w->name, tl->s.uid, w->path, w->bytes, tl_now_real_ns(),
			       timeline_started(tl), w->snap.n, w->findings, &sm);
	}
	if (r == 0) {
		tl_metric_add(M_LATE, NULL, w->late);
		close_done(tl);
		return;
	}
	/* Not written: what was held aside joins the timeline (already
	 * journaled, hence replaying), and the close is retried. */
	tl->writer = NULL;
	tl->s.loss.kernel += w->held_kernel;
	tl->s.loss.disk += w->held_disk;
	tl->s.loss.dropped += w->held_dropped;
	tl->replaying = true;
	for (size_t o = 0; o + 8 <= w->held.len;) {
		uint32_t len;

		memcpy(&len, w->held.p + o, 4); /* written by tl_journal_frame: LE */
		len = le32toh(len);
		replay_frame(tl, (const uint8_t *)w->held.p + o + 8, len);
		o += 8 + len;
	}
	tl->replaying = false;
	writer_free(t->loop, w);
	close_failed(tl, err);
}

static void writer_timer_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_,
			    void *userdata)
{
	struct timeline *tl = userdata;
	int r = writer_step(tl);

	if (r <= 0)
		writer_finish(tl, -r); /* frees the timer: allowed in its callback */
}

/* Starts writing tl's document: the loop's share per iteration is one
 * 64 KiB chunk (~0.5 ms of CPU here), the final fsync and the rename. */
static int writer_start(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	char file[400];
	const char *ns = meta_name_ok(tl, "namespace"), *name = meta_name_ok(tl, "name");
	struct writer *w;
	int r;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->failed = -1;
	w->pid = -1;
	w->pid_fd = -1;
	w->out_fd = -1;
	tl_buf_init(&w->buf, 0);
	tl_buf_init(&w->held, 0);
	{
		char path[PATH_MAX];

		r = doc_location(tl, w->dir, sizeof(w->dir), file, sizeof(file), path, sizeof(path));
		if (r < 0)
			goto fail;
		w->path = strdup(path);
	}
	w->ns = ns ? strdup(ns) : NULL;
	w->name = name ? strdup(name) : NULL;
	if ((ns && !w->ns) || (name && !w->name) || !w->path) {
		r = -ENOMEM;
		goto fail;
	}
	r = state_copy(&tl->s, &w->snap);
	if (r < 0)
		goto fail;
	r = tl_loop_add_timer(t->loop, 1, 1, writer_timer_cb, tl, &w->timer);
	if (r < 0)
		goto fail;
	tl->writer = w;
	return 0;
fail:
	writer_free(t->loop, w);
	return r;
}

/* Held aside while closing (see timeline.h): journaled, and kept to be
 * replayed into the timeline if the write fails. */
static void hold_frame(struct timeline *tl, const void *body, size_t len)
{
	struct writer *w = tl->writer;

	w->late++;
	if (w->n_held >= tl->store->max_events) {
		w->held_dropped++;
		return;
	}
	journal_defs(tl);
	journal_raw(tl, body, len);
	tl_journal_frame(&w->held, body, len);
	if (w->held.err) {
		w->held_dropped++;
		return;
	}
	w->n_held++;
}

static void close_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct timeline *tl = userdata;
	int r;

	if (tl->writer)
		return;
	r = writer_start(tl);
	if (r < 0)
		close_failed(tl, -r);
}

/* Shutdown: give running writers close_wait_ms to finish. */
static void writers_wait(struct tl_timelines *t)
{
	uint64_t deadline = tl_now_mono_ms() + t->close_wait_ms;

	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		struct timeline *tl = t->buckets[b];

		while (tl) {
			struct timeline *next = tl->hnext;

			while (tl->writer) {
				int r = writer_step(tl);

				if (r <= 0) {
					writer_finish(tl, -r); /* may free tl */
					break;
				}
				if (tl_now_mono_ms() >= deadline)
					break; /* given up: freed with its timeline */
				if (t->writer_hook || tl->writer->pid > 0)
					usleep(1000); /* held, or the helper runs: do not spin */
			}
			tl = next;
		}
	}
}

/* ---- replay ---- */

static void add_gap(struct timeline *tl, int64_t from, int64_t to)
{
	char a[TL_TIME_STRLEN], b[TL_TIME_STRLEN];
	struct json_object *g;

	if (!tl->s.gaps)
		tl->s.gaps = json_object_new_array();
	g = json_object_new_object();
	if (!tl->s.gaps || !g) {
		json_object_put(g);
		return;
	}
	json_object_object_add(g, "from", json_object_new_string(tl_time_format(from, a)));
	json_object_object_add(g, "to", json_object_new_string(tl_time_format(to, b)));
	json_object_array_add(tl->s.gaps, g);
}

static void max_loss(struct loss *l, const struct loss *x)
{
#define MAXOF(f, key) if (x->f > l->f) l->f = x->f;
	LOSS_FIELDS(MAXOF)
#undef MAXOF
}

static int replay_event_frame(struct timeline *tl, struct rd *r, bool raw)
{
	static struct tl_event ev;
	struct rec_hdr h;
	uint64_t ctr;
	int64_t t = rd_i(r);
	int q;

	h.kind = rd_byte(r);
	h.source = rd_byte(r);
	h.flags = (uint16_t)rd_u(r);
	ctr = rd_u(r);
	if (r->bad || h.kind == 0 || h.kind >= TL_KIND_MAX || h.kind == TL_KIND_EVENTS_AGGREGATED ||
	    h.source >= TL_SRC_MAX || ctr > tl->s.n_ctrs || r->len - r->o > TL_PAYLOAD_MAX)
		return -EINVAL;
	h.ctr = ctr ? (uint16_t)(ctr - 1) : NO_CTR;
	h.len = (uint16_t)(r->len - r->o);
	if (tl_event_init_kind(&ev, (enum tl_kind)h.kind, (enum tl_source)h.source, t) < 0 ||
	    tl_event_unpack(&ev, r->p + r->o, h.len, h.flags, tl->s.strs) < 0)
		return -EINVAL;
	if (raw)
		q = insert_record(&tl->s, t, &h, r->p + r->o);
	else
		q = timeline_admit(tl, &ev, &h, r->p + r->o);
	tl_event_clear(&ev);
	return q < 0 ? q : 0;
}

static int replay_frame(void *userdata, const uint8_t *body, size_t len)
{
	struct timeline *tl = userdata;
	struct rd r = { .p = body, .len = len, .o = 1 };
	int q = 0;

	if (len < 1)
		goto bad;
	switch (body[0]) {
	case FR_OPEN: {
		int64_t opened = rd_i(&r), since = rd_i(&r);

		if (r.bad)
			goto bad;
		tl->s.opened_ns = opened;
		tl->s.recording_since_ns = since;
		return 0;
	}
	case FR_STRING:
		q = (int)tl_strtab_intern(tl->s.strs, (const char *)body + 1, len - 1);
		if (q == -ENOMEM)
			return q;
		tl->j_strings = tl_strtab_count(tl->s.strs);
		return 0;
	case FR_CTR: {
		uint64_t id = rd_u(&r), name = rd_u(&r), cg = rd_u(&r);
		struct ctr_ent *n;

		if (r.bad || tl->s.n_ctrs >= MAX_CTRS)
			goto bad;
		n = realloc(tl->s.ctrs, (tl->s.n_ctrs + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		tl->s.ctrs = n;
		tl->s.cap_ctrs = tl->s.n_ctrs + 1;
		n[tl->s.n_ctrs++] = (struct ctr_ent){ .id_s = id ? (uint32_t)(id - 1) : UINT32_MAX,
						      .name_s = name ? (uint32_t)(name - 1) : UINT32_MAX,
						      .cgroup_id = cg };
		tl->j_ctrs = tl->s.n_ctrs;
		return 0;
	}
	case FR_EVENT:
	case FR_RAW:
		q = replay_event_frame(tl, &r, body[0] == FR_RAW);
		if (q == -EINVAL)
			goto bad;
		return q;
	case FR_AGG: {
		struct agg a, *na;
		uint64_t ctr;

		a.bucket_ns = rd_i(&r);
		a.interval_ms = rd_i(&r);
		a.count = rd_u(&r);
		a.failed = rd_u(&r);
		ctr = rd_u(&r);
		a.source = rd_byte(&r);
		a.kind = rd_byte(&r);
		if (r.bad || ctr > tl->s.n_ctrs || a.kind >= TL_KIND_MAX || a.source >= TL_SRC_MAX)
			goto bad;
		a.ctr = ctr ? (uint16_t)(ctr - 1) : NO_CTR;
		return new_agg(tl, &a, &na);
	}
	case FR_META: {
		struct json_tokener *tok = json_tokener_new();
		struct json_object *m = NULL;

		if (!tok)
			return -ENOMEM;
		m = json_tokener_parse_ex(tok, (const char *)body + 1, (int)(len - 1));
		json_tokener_free(tok);
		if (!m || !json_object_is_type(m, json_type_object)) {
			json_object_put(m);
			goto bad;
		}
		q = timeline_set_meta(tl, m);
		json_object_put(m);
		return q;
	}
	case FR_LOSS: {
		struct loss l;

#define GET(field, key) l.field = rd_u(&r);
		LOSS_FIELDS(GET)
#undef GET
		if (r.bad)
			goto bad;
		max_loss(&tl->s.loss, &l);
		return 0;
	}
	case FR_GONE: {
		int64_t t = rd_i(&r);

		if (r.bad)
			goto bad;
		if (!tl->deleted)
			start_linger(tl, t);
		return 0;
	}
	case FR_GAP: {
		int64_t from = rd_i(&r), to = rd_i(&r);

		if (r.bad)
			goto bad;
		add_gap(tl, from, to);
		return 0;
	}
	case FR_TERM: {
		uint8_t term = rd_byte(&r), del;
		uint64_t at = rd_u(&r);
		int64_t del_ns;

		del = rd_byte(&r);
		del_ns = rd_i(&r);
		if (r.bad || at > tl->s.n)
			goto bad;
		tl->terminating = term;
		tl->n_at_termination = at;
		if (del && !tl->deleted)
			start_linger(tl, del_ns);
		return 0;
	}
	default:
		break;
	}
bad:
	tl->replay_bad++;
	return 0;
}

/* The previous journal format (JSON lines), replayed once after an upgrade. */
static int replay_record(void *userdata, struct json_object *rec)
{
	struct timeline *tl = userdata;
	const char *k = obj_str(rec, "k");
	struct json_object *v;
	int64_t ns, ns2;

	if (!k)
		return 0;
	if (strcmp(k, "ev") == 0) {
		static struct tl_event ev;
		struct rec_hdr h;
		uint8_t payload[TL_PAYLOAD_MAX];
		int r;

		if (!json_object_object_get_ex(rec, "e", &v) || tl_event_from_json(v, &ev) < 0) {
			tl->replay_bad++;
			return 0;
		}
		if (json_object_object_get_ex(rec, "cg", &v))
			ev.cgroup_id = (uint64_t)json_object_get_int64(v);
		r = pack_event(tl, &ev, &h, payload);
		if (r == 0)
			r = timeline_admit(tl, &ev, &h, payload);
		tl_event_clear(&ev);
		if (r == -EINVAL || r == -E2BIG) {
			tl->replay_bad++;
			return 0;
		}
		return r < 0 ? r : 0;
	}
	if (strcmp(k, "meta") == 0) {
		if (json_object_object_get_ex(rec, "m", &v) && json_object_is_type(v, json_type_object))
			return timeline_set_meta(tl, v);
		return 0;
	}
	if (strcmp(k, "loss") == 0) {
		struct loss l = { 0 };
#define GET(field, key) \
		if (json_object_object_get_ex(rec, #field, &v) && json_object_get_int64(v) > 0) \
			l.field = (uint64_t)json_object_get_int64(v);
		LOSS_FIELDS(GET)
#undef GET
		max_loss(&tl->s.loss, &l);
		return 0;
	}
	if (strcmp(k, "gone") == 0) {
		if (!tl->deleted && tl_time_parse(obj_str(rec, "t"), &ns) == 0)
			start_linger(tl, ns);
		return 0;
	}
	if (strcmp(k, "open") == 0) {
		if (tl_time_parse(obj_str(rec, "opened"), &ns) == 0)
			tl->s.opened_ns = ns;
		if (tl_time_parse(obj_str(rec, "since"), &ns) == 0)
			tl->s.recording_since_ns = ns;
		return 0;
	}
	if (strcmp(k, "gap") == 0) {
		if (tl_time_parse(obj_str(rec, "from"), &ns) == 0 &&
		    tl_time_parse(obj_str(rec, "to"), &ns2) == 0)
			add_gap(tl, ns, ns2);
		return 0;
	}
	return 0;
}

static int replay_one(struct tl_timelines *t, const char *uid, bool legacy)
{
	char path[PATH_MAX];
	struct timeline *tl;
	struct stat st;
	uint64_t bad = 0, torn;
	int r;

	if (snprintf(path, sizeof(path), "%s/%s%s", t->journal_dir, uid,
		     legacy ? TL_JOURNAL_LEGACY_EXT : TL_JOURNAL_EXT) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (stat(path, &st) < 0)
		return -errno;
	if (find_closed(t, uid)) {
		/* Crashed between writing the document and removing the journal. */
		return unlink(path) < 0 ? -errno : 0;
	}
	tl = find_open(t, uid);
	if (!tl) {
		tl = timeline_alloc(t, uid);
		if (!tl)
			return -ENOMEM;
	}
	tl->replaying = true;
	if (legacy)
		r = tl_journal_replay_jsonl(t->journal_dir, uid, replay_record, tl, &bad);
	else
		r = tl_journal_replay(t->journal_dir, uid, replay_frame, tl, &bad);
	tl->replaying = false;
	if (r < 0)
		note_disk_error(tl);
	if (!tl->journal) {
		r = tl_journal_open(t->jpool, t->journal_dir, uid, &tl->journal);
		if (r < 0)
			note_disk_error(tl);
	}
	/* Records that could not be read back are lost events: count each
	 * once. A torn tail (cut off by the open just now) is gone from the
	 * file; the others stay and are met again at the next replay. */
	bad += tl->replay_bad;
	torn = !legacy && tl->journal && tl_journal_bytes(tl->journal) < (uint64_t)st.st_size &&
	       bad > 0;
	if (bad > tl->s.loss.unreadable) {
		tl_metric_add(M_DISK_ERR, NULL, bad - tl->s.loss.unreadable);
		tl->s.loss.disk += bad - tl->s.loss.unreadable;
	}
	tl->s.loss.unreadable = legacy ? 0 : bad - torn;
	tl->replay_bad = 0;
	if (legacy) {
		/* Upgraded: the timeline is rewritten in the binary form and
		 * the old file goes (docs/journal-format.md). */
		if (tl->journal)
			compact(tl);
		unlink(path);
	}
	return 0;
}

/* After every journal of a UID is replayed: the restart itself. */
static void replay_finish(struct timeline *tl, int64_t last_ns)
{
	struct tl_timelines *t = tl->store;
	struct frame f;

	/* The agent was not recording between its last journal write and now:
	 * whatever happened then is unknown, so say so. */
	tl->s.loss.restarts++;
	tl->loss_journaled = (struct loss){ 0 };
	/* The file's mtime comes from the kernel's coarse clock, up to a tick
	 * behind the time of the last event written: no recorded event may
	 * fall inside the gap. */
	if (tl->s.n > 0 && tl->s.ev[tl->s.n - 1].time_ns > last_ns)
		last_ns = tl->s.ev[tl->s.n - 1].time_ns;
	add_gap(tl, last_ns, t->recording_since_ns);
	fr_start(&f, FR_GAP);
	fr_i(&f, last_ns);
	fr_i(&f, t->recording_since_ns);
	journal_frame(tl, &f);
	journal_loss(tl);
	/* A journal from before compaction existed can be far past its
	 * timeline's size: shrink it now rather than carry it. */
	if (tl->journal && tl_journal_bytes(tl->journal) > tl->compact_at)
		compact(tl);
	if (tl->deleted) {
		int64_t left_ms = (tl->deleted_ns + (int64_t)t->linger_s * NS_PER_S - tl_now_real_ns()) / 1000000;

		if (left_ms < 1)
			left_ms = 1;
		if (tl_loop_add_timer(t->loop, (uint64_t)left_ms, 0, close_cb, tl, &tl->close_timer) < 0)
			tl->close_timer = NULL;
	}
}

static int replay_all(struct tl_timelines *t)
{
	static const char *const exts[] = { TL_JOURNAL_LEGACY_EXT, TL_JOURNAL_EXT };

	/* Legacy files first: a UID with both (an upgrade interrupted after
	 * the rewrite) then ends with the newer binary records. */
	for (size_t e = 0; e < 2; e++) {
		DIR *d = opendir(t->journal_dir);
		struct dirent *de;
		size_t xl = strlen(exts[e]);

		if (!d)
			return -errno;
		while ((de = readdir(d))) {
			char uid[TL_UID_MAX], path[PATH_MAX];
			size_t n = strlen(de->d_name);
			struct timeline *tl;
			struct stat st;

			if (n <= xl || strcmp(de->d_name + n - xl, exts[e]) != 0 || n - xl >= sizeof(uid))
				continue;
			memcpy(uid, de->d_name, n - xl);
			uid[n - xl] = '\0';
			if (!uid_ok(uid))
				continue;
			/* A UID the legacy pass opened was rewritten in the binary
			 * form there: replayed already. */
			if (e == 1 && find_open(t, uid))
				continue;
			if (join_path(path, sizeof(path), t->journal_dir, de->d_name) < 0 ||
			    stat(path, &st) < 0)
				continue;
			if (replay_one(t, uid, e == 0) < 0) {
				note_disk_error(NULL);
				continue;
			}
			tl = find_open(t, uid);
			if (tl)
				replay_finish(tl, (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec);
		}
		closedir(d);
	}
	return 0;
}

/* ---- timers ---- */

static void flush_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct tl_timelines *t = userdata;

	t->flush_armed = false;
	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			int r;

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
	for (size_t i = 0; i < t->n_closed; i++)
		closed_clear(&t->closed[i]);
	free(t->closed);
	tl_timer_free(t->fsync_timer);
	tl_timer_free(t->retention_timer);
	tl_timer_free(t->flush_timer);
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

	if (!uid_ok(uid))
		return -EINVAL;
	tl = find_open(t, uid);
	if (tl) {
		*ret = tl;
		return 0;
	}
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
	if (r <= 0)
		return r;
	event_frame(&f, FR_EVENT, ev->time_ns, &h, payload);
	journal_frame(tl, &f);
	return 0;
}

int tl_timelines_set_pod_meta(struct tl_timelines *t, const char *uid, struct json_object *meta)
{
	struct timeline *tl;
	int r;

	if (!uid || !meta || !json_object_is_type(meta, json_type_object))
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

static bool name_matches(const char *ns, const char *name, const char *uid, const char *want_ns,
			 const char *want_name)
{
	if (tl_export_name_ok(ns) && tl_export_name_ok(name))
		return strcmp(ns, want_ns) == 0 && strcmp(name, want_name) == 0;
	/* Unnamed Pods are addressed as _unknown/UID, like their files. */
	return strcmp(want_ns, TL_UNKNOWN_NS) == 0 && strcmp(want_name, uid) == 0;
}

/* ---- serving documents ---- */

struct tl_doc_reader {
	struct tl_timelines *store;
	bool open;             /* a snapshot of an open timeline, else a file */
	struct tl_state snap;
	struct doc_cursor cur;
	struct tl_buf buf;
	size_t off;            /* served part of buf */
	int fd;
	bool done;
};

int tl_timelines_open_doc(struct tl_timelines *t, const char *ns, const char *name,
			  const char *uid, struct tl_doc_reader **ret)
{
	struct timeline *best_open = NULL;
	struct closed *best_closed = NULL;
	int64_t best = INT64_MIN;
	struct tl_doc_reader *r;

	for (size_t i = 0; i < t->n_closed; i++) {
		struct closed *c = &t->closed[i];

		if (!c->uid[0] || !name_matches(c->ns, c->name, c->uid, ns, name))
			continue;
		if (uid && strcmp(uid, c->uid) != 0)
			continue;
		if (!best_closed || c->started_ns >= best) {
			best_closed = c;
			best = c->started_ns;
		}
	}
	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			if (!name_matches(meta_str(tl, "namespace"), meta_str(tl, "name"), tl->s.uid, ns, name))
				continue;
			if (uid && strcmp(uid, tl->s.uid) != 0)
				continue;
			if ((!best_open && !best_closed) || timeline_started(tl) >= best) {
				best_open = tl;
				best = timeline_started(tl);
			}
		}
	}
	if (!best_open && !best_closed)
		return -ENOENT;
	if (t->n_readers >= MAX_READERS)
		return -EBUSY;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->store = t;
	r->fd = -1;
	tl_buf_init(&r->buf, 0);
	if (best_open) {
		/* A copy of the compact state: ~16 + ~30 bytes per event, a
		 * memcpy of a few MB at most; the client then reads at its own
		 * pace while the timeline goes on. */
		r->open = true;
		if (state_copy(&best_open->s, &r->snap) < 0) {
			free(r);
			return -ENOMEM;
		}
	} else {
		r->fd = open(best_closed->path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0) {
			int e = -errno;

			free(r);
			return e == -ENOENT ? -ENOENT : e;
		}
	}
	t->n_readers++;
	*ret = r;
	return 0;
}

ssize_t tl_doc_read(struct tl_doc_reader *r, char *buf, size_t max)
{
	size_t n;

	if (!r->open) {
		ssize_t k;

		do
			k = read(r->fd, buf, max);
		while (k < 0 && errno == EINTR);
		return k < 0 ? -errno : k;
	}
	if (r->off == r->buf.len) {
		int q;

		if (r->done)
			return 0;
		tl_buf_reset(&r->buf);
		r->off = 0;
		q = document_write(&r->snap, &r->store->rec, &r->cur, &r->buf, READ_CHUNK);
		if (q < 0)
			return q;
		if (q == 0)
			r->done = true;
	}
	n = r->buf.len - r->off;
	if (n > max)
		n = max;
	memcpy(buf, r->buf.p + r->off, n);
	r->off += n;
	return (ssize_t)n;
}

void tl_doc_reader_free(struct tl_doc_reader *r)
{
	if (!r)
		return;
	r->store->n_readers--;
	state_release(&r->snap);
	tl_buf_free(&r->buf);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

int tl_timelines_get(struct tl_timelines *t, const char *ns, const char *name, const char *uid,
		     char **ret, size_t *ret_len)
{
	struct tl_doc_reader *r;
	struct tl_buf b;
	char chunk[READ_CHUNK];
	ssize_t n;
	int q;

	q = tl_timelines_open_doc(t, ns, name, uid, &r);
	if (q < 0)
		return q;
	tl_buf_init(&b, 0);
	while ((n = tl_doc_read(r, chunk, sizeof(chunk))) > 0)
		tl_buf_add(&b, chunk, (size_t)n);
	tl_doc_reader_free(r);
	if (n < 0) {
		tl_buf_free(&b);
		return (int)n;
	}
	*ret = tl_buf_steal(&b, ret_len);
	return *ret ? 0 : -ENOMEM;
}
