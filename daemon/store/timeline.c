/* SPDX-License-Identifier: Apache-2.0 */
/* The timeline store's top (timeline.h): a timeline's life, through one
 * function that changes its phase (timeline_phase: open, linger, closing,
 * closed), the live path (admit, then journal what changed), the start
 * (the closed index, then the journals replayed), the timers and the
 * public calls. The units below are listed in store-int.h. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "export-json.h"
#include "fsworker.h"
#include "log.h"
#include "metrics.h"
#include "replay.h"
#include "store-int.h"
#include "macro.h"

_Static_assert((int)TL_CLOSE_LOGS_REMOVED == STATE_CLOSE_LOGS_REMOVED &&
		       (int)TL_CLOSE_CGROUPS_REMOVED == STATE_CLOSE_CGROUPS_REMOVED &&
		       (int)TL_CLOSE_UNKNOWN_TO_API == STATE_CLOSE_UNKNOWN_TO_API &&
		       (int)TL_CLOSE_IDLE == STATE_CLOSE_IDLE &&
		       (int)TL_CLOSE_OPEN_LIMIT == STATE_CLOSE_OPEN_LIMIT &&
		       STATE_CLOSE_OPEN_LIMIT + 1 == STATE_CLOSE_REASON_MAX,
	       "timeline.h's close reasons are state.h's");

static void flush_deferred(struct tl_loop *loop, void *userdata);
static void close_timer_cb(struct tl_loop *loop, struct tl_timer *timer, void *userdata);
static void close_done(void *ud, const struct close_result *res);

static bool uid_ok(const char *uid)
{
	return strlen(uid) < TL_UID_MAX && tl_export_name_ok(uid);
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

static struct timeline *find_open(struct tl_timelines *t, const char *uid)
{
	return tl_of(index_find(&t->open, uid));
}

/* ---- disk errors and the journal ---- */

/* A failed write, fsync or rename: counted in termline_disk_errors_total.
 * Not in the timeline's loss: the timeline is in memory, and a write that
 * is retried and succeeds loses nothing. What is lost is counted where it
 * is lost: records a replay cannot read back (replay_count_bad). A journal
 * left behind by a failure is rewritten from memory (repair_journal). */
static void note_disk_error(struct timeline *tl)
{
	tl_metric_inc(tl->store->m.disk_errors, 1);
}

static void schedule_repair(struct timeline *tl)
{
	if (tl->repair_delay_ms)
		return; /* already scheduled */
	tl->repair_delay_ms = 1000;
	tl->repair_at_ms = tl->store->now_ms + tl->repair_delay_ms;
}

/* A journal call's result: a failure is counted (and said once), and the
 * journal, behind the timeline from then on, is repaired later. */
static void journal_result(struct timeline *tl, int r)
{
	if (r >= 0)
		return;
	note_disk_error(tl);
	if (tl->jw.behind)
		schedule_repair(tl);
	if (!tl->write_warned) {
		tl_warn("journal of pod %s: %s (rewritten from memory once writable)", tl->s.uid,
			strerror(-r));
		tl->write_warned = true;
	}
}

/* The journal rewritten whole from memory: what the failed writes left
 * out is on disk again, and nothing was lost. force: now, whatever the
 * backoff (shutdown). */
static void repair_journal(struct timeline *tl, bool force)
{
	struct tl_timelines *t = tl->store;
	int r;

	if (!tl->jw.behind || (!force && t->now_ms < tl->repair_at_ms))
		return;
	r = jwrite_repair(&tl->jw, t->jpool, t->journal_dir, tl->s.uid, &tl->s);
	if (r == 0) {
		tl->repair_delay_ms = 0;
		if (tl->write_warned)
			tl_info("journal of pod %s rewritten: nothing lost", tl->s.uid);
		tl->write_warned = false;
		return;
	}
	note_disk_error(tl);
	tl->repair_delay_ms = tl->repair_delay_ms ? tl->repair_delay_ms * 2 : 1000;
	if (tl->repair_delay_ms > STORE_REPAIR_MAX_MS)
		tl->repair_delay_ms = STORE_REPAIR_MAX_MS;
	tl->repair_at_ms = t->now_ms + tl->repair_delay_ms;
}

/* The journals are written once the loop is done with this iteration (a
 * ring drain's events in one write), or by a timer when asked outside one. */
static void arm_flush(struct tl_timelines *t)
{
	if (!t->flush_armed && (tl_loop_defer(t->loop, flush_deferred, t) == 0 ||
				tl_timer_arm(t->flush_timer, 1, 0) == 0))
		t->flush_armed = true;
}

static void journal_frame(struct timeline *tl, const struct frame *f)
{
	journal_result(tl, jwrite_frame(&tl->jw, &tl->s, f));
	if (jwrite_pending(&tl->jw))
		arm_flush(tl->store);
}

static uint64_t journal_bytes_total(struct tl_timelines *t)
{
	uint64_t bytes = 0;

	for (struct index_node *n = index_next(&t->open, NULL); n; n = index_next(&t->open, n))
		bytes += jwrite_bytes(&tl_of(n)->jw);
	return bytes;
}

static void update_disk_metrics(struct tl_timelines *t)
{
	uint64_t journal = journal_bytes_total(t);

	tl_metric_put(t->m.journal, (int64_t)journal);
	tl_metric_put(t->m.journal_fds, tl_jpool_open_fds(t->jpool));
	tl_metric_put(t->m.disk, (int64_t)(journal + t->closed.bytes));
}

/* ---- a timeline's life ---- */

/* A timeline in memory, indexed, OPEN; no journal yet. */
static struct timeline *timeline_alloc(struct tl_timelines *t, const char *uid)
{
	struct timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return NULL;
	if (state_init(&tl->s, uid, t->max_events, tl_now_real_ns(), t->recording_since_ns) < 0) {
		free(tl);
		return NULL;
	}
	tl->store = t;
	tl->phase = TL_PHASE_OPEN;
	tl->active_ms = t->now_ms;
	tl->node.uid = tl->s.uid;
	index_add(&t->open, &tl->node);
	tl_metric_put(t->m.open, (int64_t)t->open.n);
	return tl;
}

static void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	close_free(tl->closing);
	tl_timer_free(tl->close_timer);
	jwrite_close(&tl->jw);
	state_release(&tl->s);
	free(tl);
}

static int timeline_open(struct tl_timelines *t, const char *uid, struct timeline **ret)
{
	struct timeline *tl = timeline_alloc(t, uid);
	struct frame f;

	if (!tl)
		return -ENOMEM;
	/* on failure the timeline is recorded in memory */
	journal_result(tl, jwrite_open(&tl->jw, t->jpool, t->journal_dir, uid));
	frame_open(&f, tl->s.opened_ns, tl->s.recording_since_ns);
	journal_frame(tl, &f);
	*ret = tl;
	return 0;
}

/* (Re-)arms the close in delay_ms; without a timer the fsync tick retries. */
static void arm_close(struct timeline *tl, uint64_t delay_ms)
{
	if (delay_ms < 1)
		delay_ms = 1;
	if (tl->close_timer && tl_timer_arm(tl->close_timer, delay_ms, 0) == 0)
		return;
	tl_timer_free(tl->close_timer);
	tl->close_timer = NULL;
	if (tl_loop_add_timer(tl->store->loop, delay_ms, 0, close_timer_cb, tl, &tl->close_timer) < 0)
		tl->close_timer = NULL;
}

/* Where tl's document goes: DIR (STATE/timelines/NS) and DIR/FILE. */
static int doc_location(const struct timeline *tl, char *dir, size_t dirlen, char *path,
			size_t pathlen)
{
	char reldir[300], file[400];
	int r;

	r = tl_export_doc_location(state_ns(&tl->s), state_name(&tl->s), tl->s.uid, reldir,
				   sizeof(reldir), file, sizeof(file));
	if (r < 0)
		return r;
	r = join_path(dir, dirlen, tl->store->timelines_dir, reldir);
	if (r < 0)
		return r;
	return join_path(path, pathlen, dir, file);
}

static int start_close(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	char dir[PATH_MAX], path[PATH_MAX];
	int r;

	/* What a source still holds of this Pod comes in first (it lands in
	 * this timeline: it is not closing yet). */
	if (t->before_close)
		t->before_close(t->before_close_ud, tl->s.uid);
	r = doc_location(tl, dir, sizeof(dir), path, sizeof(path));
	if (r < 0)
		return r;
	tl->late = 0;
	return close_start(&t->close, &tl->s, dir, path, close_done, tl, &tl->closing);
}

static void close_failed(struct timeline *tl, int err);

/* The one place a timeline's phase changes (docs/architecture.md):
 * - LINGER: the Pod is gone; the close is armed in delay_ms (a retry after
 *   a failed close comes back here too, its job freed);
 * - CLOSING: its document is being written (close.c): events go on being
 *   recorded and are counted late if the document makes it;
 * - CLOSED: the document is on disk and indexed: the timeline is freed and
 *   its journal removed (by the worker: an unlink frees the file's pages,
 *   milliseconds on the loop). Its UID is then closed: events for it are
 *   late and open no new journal at that path. */
static void timeline_phase(struct timeline *tl, enum tl_phase to, uint64_t delay_ms)
{
	struct tl_timelines *t = tl->store;
	char path[PATH_MAX];
	int r;

	switch (to) {
	case TL_PHASE_OPEN:
		break;
	case TL_PHASE_LINGER:
		close_free(tl->closing);
		tl->closing = NULL;
		arm_close(tl, delay_ms);
		break;
	case TL_PHASE_CLOSING:
		r = start_close(tl);
		if (r < 0) {
			close_failed(tl, r);
			return;
		}
		break;
	case TL_PHASE_CLOSED:
		tl_metric_inc(t->m.closed, 1);
		if (tl->evicting)
			t->n_evicting--;
		tl_metric_inc(t->m.late, tl->late);
		index_remove(&t->open, &tl->node);
		tl_metric_put(t->m.open, (int64_t)t->open.n);
		jwrite_discard(&tl->jw, path, sizeof(path));
		if (path[0])
			tl_fsworker_detached(t->fsw, FSJOB_UNLINK, -1, path, t->m.disk_errors);
		timeline_free(tl);
		tl_timelines_retention_run(t);
		return;
	}
	tl->phase = to;
}

/* Disk full or unwritable: count it, keep the timeline (it is journaled)
 * and try again later. */
static void close_failed(struct timeline *tl, int err)
{
	uint64_t retry_ms = (uint64_t)tl->store->linger_s * 1000;

	if (!tl->write_warned) {
		tl_warn("timeline of pod %s not written: %s (retrying)", tl->s.uid, strerror(-err));
		tl->write_warned = true;
	}
	note_disk_error(tl);
	if (retry_ms < 1000)
		retry_ms = 1000;
	if (retry_ms > STORE_CLOSE_RETRY_MAX_MS)
		retry_ms = STORE_CLOSE_RETRY_MAX_MS;
	timeline_phase(tl, TL_PHASE_LINGER, retry_ms);
}

/* What the closed hook is told, copied out of the close job and the
 * snapshot before the timeline (and they) are freed. */
struct closed_note {
	char uid[TL_UID_MAX], ns[TL_POD_NS_MAX], name[TL_POD_NAME_MAX];
	char owner_kind[TL_POD_KIND_MAX], owner_name[TL_POD_NAME_MAX];
	char path[PATH_MAX];
	struct tl_findings_summary summary;
	struct tl_closed_info info;
};

static void closed_note_take(struct closed_note *n, const struct closed *c,
			     const struct close_result *res)
{
	struct tl_closed_info *i = &n->info;

	memset(i, 0, sizeof(*i));
	tl_copy_str(n->uid, sizeof(n->uid), c->uid);
	i->uid = n->uid;
	/* the metadata's own bounds: nothing is cut */
	if (c->ns) {
		tl_copy_str(n->ns, sizeof(n->ns), c->ns);
		i->ns = n->ns;
	}
	if (c->name) {
		tl_copy_str(n->name, sizeof(n->name), c->name);
		i->name = n->name;
	}
	if (c->owner_kind && c->owner_name) {
		tl_copy_str(n->owner_kind, sizeof(n->owner_kind), c->owner_kind);
		tl_copy_str(n->owner_name, sizeof(n->owner_name), c->owner_name);
		i->owner_kind = n->owner_kind;
		i->owner_name = n->owner_name;
	}
	tl_copy_str(n->path, sizeof(n->path), res->path);
	i->path = n->path;
	i->deletion_ns = c->deletion_ns;
	i->complete = c->complete;
	if (res->summarized) {
		n->summary = res->summary;
		i->summary = &n->summary;
	}
}

/* The close job's report (close.h). */
static void close_done(void *ud, const struct close_result *res)
{
	struct timeline *tl = ud;
	struct tl_timelines *t = tl->store;
	const struct tl_state *snap = res->snap;
	const char *ns = state_ns(snap), *name = state_name(snap);
	struct closed_note *note;
	struct stat st;
	struct closed c = {
		.ns = tl_export_name_ok(ns) ? (char *)ns : NULL,
		.name = tl_export_name_ok(name) ? (char *)name : NULL,
		.path = (char *)res->path,
		.bytes = res->bytes,
		.mtime_ns = tl_now_real_ns(),
		.started_ns = state_started(snap),
		.events = snap->n,
		.findings = res->summarized ? res->summary.findings : 0,
		.deletion_ns = snap->deletion_ns,
		.failed = res->summarized ? (int64_t)res->summary.failed_requests : -1,
		.complete = state_complete(snap),
		.export = t->export_marks ? CLOSED_EXPORT_PENDING : CLOSED_EXPORT_NONE,
	};
	int r = res->err;

	tl_copy_str(c.uid, sizeof(c.uid), snap->uid);
	/* both or neither (pod-meta.h) */
	if (snap->meta && snap->meta->owner_kind[0]) {
		c.owner_kind = snap->meta->owner_kind;
		c.owner_name = snap->meta->owner_name;
	}
	/* the file's own size and time: the closed index's cache is checked
	 * against them at the next start */
	if (r == 0 && stat(res->path, &st) == 0) {
		c.bytes = (uint64_t)st.st_size;
		c.mtime_ns = (int64_t)st.st_mtim.tv_sec * STORE_NS_PER_S + st.st_mtim.tv_nsec;
	}
	if (r == 0)
		r = closed_add(&t->closed, &c);
	if (r < 0) {
		/* Not written: what came meanwhile is in the timeline; the close
		 * is retried. */
		close_failed(tl, r);
		return;
	}
	if (!t->closed_cb) {
		timeline_phase(tl, TL_PHASE_CLOSED, 0);
		return;
	}
	note = malloc(sizeof(*note));
	if (note)
		closed_note_take(note, &c, res);
	timeline_phase(tl, TL_PHASE_CLOSED, 0);
	if (note)
		t->closed_cb(t->closed_ud, &note->info);
	else
		tl_warn("timeline of pod %s closed: out of memory to report it", c.uid);
	free(note);
}

static void close_timer_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_,
			   void *userdata)
{
	struct timeline *tl = userdata;

	if (tl->phase == TL_PHASE_LINGER)
		timeline_phase(tl, TL_PHASE_CLOSING, 0);
}

/* Live: the linger runs from now. */
static void timeline_gone(struct timeline *tl)
{
	if (tl->phase == TL_PHASE_OPEN)
		timeline_phase(tl, TL_PHASE_LINGER, (uint64_t)tl->store->linger_s * 1000);
}

/* The Pod is gone for reason (no event says so): journaled, counted, and
 * the linger starts. false when it had ended already. */
static bool timeline_end(struct timeline *tl, unsigned reason)
{
	struct frame f;
	int64_t now;

	if (tl->s.gone || tl->phase != TL_PHASE_OPEN)
		return false;
	now = tl_now_real_ns();
	state_set_gone(&tl->s, now);
	state_set_close_reason(&tl->s, reason);
	frame_gone(&f, now, tl->s.close_reason);
	journal_frame(tl, &f);
	tl_metric_inc(tl->store->m.evicted[reason], 1);
	timeline_gone(tl);
	return true;
}

/* At the cap: the timeline least recently active closes now, without its
 * linger, to make room (one whose Pod is gone already first). false when
 * none can (every one closing already, or too many such closes in
 * progress). */
static bool evict_one(struct tl_timelines *t)
{
	struct timeline *victim = NULL;
	bool victim_gone = false;

	if (t->n_evicting >= STORE_EVICT_INFLIGHT_MIN && t->n_evicting >= t->max_open / 4)
		return false;
	for (struct index_node *n = index_next(&t->open, NULL); n; n = index_next(&t->open, n)) {
		struct timeline *tl = tl_of(n);
		bool gone = tl->phase == TL_PHASE_LINGER;

		if (tl->evicting || (tl->phase != TL_PHASE_OPEN && !gone))
			continue;
		if (!victim || (gone && !victim_gone) ||
		    (gone == victim_gone && tl->active_ms < victim->active_ms)) {
			victim = tl;
			victim_gone = gone;
		}
	}
	if (!victim)
		return false;
	victim->evicting = true;
	t->n_evicting++;
	if (!victim_gone) {
		timeline_end(victim, STATE_CLOSE_OPEN_LIMIT);
	} else if (state_set_close_reason(&victim->s, STATE_CLOSE_OPEN_LIMIT)) {
		/* its end was recorded, its linger is cut short: said too */
		struct frame f;

		frame_gone(&f, victim->s.gone_ns, victim->s.close_reason);
		journal_frame(victim, &f);
		tl_metric_inc(t->m.evicted[STATE_CLOSE_OPEN_LIMIT], 1);
	}
	if (!t->evict_warned) {
		tl_warn("timelines: %u open, the maximum; the least recently active (pod %s) closes "
			"to make room (termline_timelines_evicted_total)",
			t->max_open, victim->s.uid);
		t->evict_warned = true;
	}
	/* Its close starts on the next loop iteration, not its linger: not
	 * now, as the caller may be inside a source's callback (an access-log
	 * record being read) that the close's before_close would re-enter. */
	timeline_phase(victim, TL_PHASE_LINGER, 1);
	return true;
}

/* Shutdown: give the documents being written close_wait_ms to finish.
 * The worker's jobs finish first (their callbacks may close timelines);
 * from then on the file-system calls run inline. */
static void closes_wait(struct tl_timelines *t)
{
	uint64_t deadline = tl_now_mono_ms() + t->close_wait_ms;
	struct index_node *n, *next;

	tl_fsworker_drain(t->fsw);
	for (n = index_next(&t->open, NULL); n; n = next) {
		struct timeline *tl = tl_of(n);

		next = index_next(&t->open, n);
		while (tl->phase == TL_PHASE_CLOSING) {
			struct close_job *j = tl->closing;

			if (close_step(j) <= 0)
				break; /* done: tl may be gone */
			if (tl_now_mono_ms() >= deadline)
				break; /* given up: freed with its timeline */
			if (close_waiting(j))
				usleep(1000); /* held, or the helper runs: do not spin */
		}
	}
}

/* ---- start: the journals of the open timelines ---- */

/* After a UID's journal is replayed: the restart itself. */
static void replay_finish(struct timeline *tl, int64_t last_ns)
{
	struct tl_timelines *t = tl->store;
	struct state_gap gap;
	struct frame f;

	/* The agent was not recording between its last journal write and now:
	 * whatever happened then is unknown, so say so. */
	tl->s.loss.restarts++;
	/* The file's mtime comes from the kernel's coarse clock, up to a tick
	 * behind the time of the last event written: no recorded event may
	 * fall inside the gap. */
	if (tl->s.n > 0 && tl->s.ev[tl->s.n - 1].time_ns > last_ns)
		last_ns = tl->s.ev[tl->s.n - 1].time_ns;
	gap = (struct state_gap){ last_ns, t->recording_since_ns };
	if (state_add_gap(&tl->s, gap.from_ns, gap.to_ns) == 0) {
		frame_gap(&f, &gap);
		journal_frame(tl, &f);
	}
	journal_result(tl, jwrite_loss(&tl->jw, &tl->s));
	if (tl->s.gone) {
		int64_t left_ms = (tl->s.gone_ns + (int64_t)t->linger_s * STORE_NS_PER_S -
				   tl_now_real_ns()) / 1000000;

		timeline_phase(tl, TL_PHASE_LINGER, left_ms < 1 ? 1 : (uint64_t)left_ms);
	}
}

static int replay_one(void *ud, const char *uid, bool legacy, int64_t mtime_ns)
{
	struct tl_timelines *t = ud;
	char path[PATH_MAX];
	struct timeline *tl;
	struct stat st;
	uint64_t bad = 0, fresh;
	bool torn;
	int r;

	if (snprintf(path, sizeof(path), "%s/%s%s", t->journal_dir, uid,
		     legacy ? TL_JOURNAL_LEGACY_EXT : TL_JOURNAL_EXT) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	if (closed_find(&t->closed, uid))
		/* Crashed between writing the document and removing the journal. */
		return unlink(path) < 0 ? -errno : 0;
	/* A UID the previous format's pass opened was rewritten in the binary
	 * form there: replayed already. */
	if (find_open(t, uid))
		return 0;
	if (stat(path, &st) < 0)
		return -errno;
	tl = timeline_alloc(t, uid);
	if (!tl)
		return -ENOMEM;
	r = replay_journal(t->journal_dir, uid, legacy, &tl->s, &bad);
	if (r < 0) {
		/* the file could not be read at all: what it held is lost */
		note_disk_error(tl);
		tl->s.loss.disk++;
	}
	journal_result(tl, jwrite_open(&tl->jw, t->jpool, t->journal_dir, uid));
	/* Records that could not be read back are lost events: count each
	 * once. A torn tail (cut off by the open just now) is gone from the
	 * file; the others stay and are met again at the next replay. */
	torn = !legacy && tl->jw.j && jwrite_bytes(&tl->jw) < (uint64_t)st.st_size && bad > 0;
	fresh = replay_count_bad(&tl->s, bad, torn, legacy);
	tl_metric_inc(t->m.disk_errors, fresh);
	journal_result(tl, jwrite_synced(&tl->jw, &tl->s));
	/* The previous run stopped with the journal behind its timeline (a
	 * write failed and no rewrite made it whole): what it lacked is
	 * lost. Counted once: the rewrite clears the mark. */
	if (!legacy && (st.st_mode & 0777) == TL_JOURNAL_MODE_BEHIND) {
		tl->s.loss.disk++;
		journal_result(tl, jwrite_compact(&tl->jw, &tl->s));
	}
	if (legacy) {
		/* Upgraded: the timeline is rewritten in the binary form and
		 * the old file goes (docs/journal-format.md). */
		journal_result(tl, jwrite_compact(&tl->jw, &tl->s));
		unlink(path);
	}
	replay_finish(tl, mtime_ns);
	return 0;
}

/* ---- timers ---- */

static void flush_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct tl_timelines *t = userdata;

	t->flush_armed = false;
	for (size_t b = 0; b < INDEX_BUCKETS; b++) {
		for (struct index_node *n = t->open.buckets[b]; n; n = n->next) {
			struct timeline *tl = tl_of(n);

			if (tl->jw.aggs_dirty)
				journal_result(tl, jwrite_aggs(&tl->jw, &tl->s));
			if (jwrite_pending(&tl->jw))
				journal_result(tl, jwrite_flush(&tl->jw));
		}
	}
}

static void flush_deferred(struct tl_loop *loop, void *userdata)
{
	flush_cb(loop, NULL, userdata);
}

/* Each tick syncs journals for at most FSYNC_BUDGET_NS, resuming where
 * the last tick stopped: syncing every journal of a node with a hundred
 * busy Pods in one tick blocks the loop for a hundred fdatasyncs. A
 * journal not reached this tick is reached by a later one. */
#define FSYNC_BUDGET_NS (5 * 1000000LL)

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * STORE_NS_PER_S + ts.tv_nsec;
}

static void fsync_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct tl_timelines *t = userdata;
	int64_t start = mono_ns();

	t->now_ms = tl_now_mono_ms();
	for (size_t k = 0; k < INDEX_BUCKETS; k++) {
		size_t b = (t->fsync_next + k) % INDEX_BUCKETS;

		for (struct index_node *n = t->open.buckets[b]; n; n = n->next) {
			struct timeline *tl = tl_of(n);

			repair_journal(tl, false);
			journal_result(tl, jwrite_loss(&tl->jw, &tl->s));
			journal_result(tl, jwrite_sync(&tl->jw));
			/* A close timer that could not be created: retry here. */
			if (tl->phase == TL_PHASE_LINGER && !tl->close_timer)
				arm_close(tl, 1);
		}
		if (mono_ns() - start > FSYNC_BUDGET_NS) {
			t->fsync_next = (b + 1) % INDEX_BUCKETS;
			break;
		}
	}
	update_disk_metrics(t);
}

static void retention_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_,
			 void *userdata)
{
	tl_timelines_retention_run(userdata);
}

static void idle_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	tl_timelines_idle_run(userdata);
}

int tl_timelines_idle_run(struct tl_timelines *t)
{
	int n = 0;

	t->now_ms = tl_now_mono_ms();
	if (!t->idle_ms)
		return 0;
	for (struct index_node *x = index_next(&t->open, NULL); x; x = index_next(&t->open, x)) {
		struct timeline *tl = tl_of(x);

		if (tl->phase != TL_PHASE_OPEN || tl->s.gone || t->now_ms - tl->active_ms < t->idle_ms)
			continue;
		if (t->vouched && t->vouched(t->vouched_ud, tl->s.uid))
			continue;
		/* timeline_end() starts a linger: the index is not changed */
		n += timeline_end(tl, STATE_CLOSE_IDLE);
	}
	return n;
}

/* ---- public ---- */

static void register_metrics(struct store_metrics *m)
{
	m->open = tl_metric_new("termline_timelines_open", NULL, TL_METRIC_GAUGE,
				"Timelines currently open (recording).");
	m->closed = tl_metric_new("termline_timelines_closed_total", NULL, TL_METRIC_COUNTER,
				  "Timelines closed and written to disk.");
	m->refused = tl_metric_new("termline_timelines_refused_total", NULL, TL_METRIC_COUNTER,
				   "Events and metadata of Pods refused because max open timelines were open.");
	m->journal = tl_metric_new("termline_journal_bytes", NULL, TL_METRIC_GAUGE,
				   "Bytes in the journals of open timelines.");
	m->journal_fds = tl_metric_new("termline_journal_open_files", NULL, TL_METRIC_GAUGE,
				       "Journal files held open (a bounded pool).");
	m->disk = tl_metric_new("termline_disk_bytes", NULL, TL_METRIC_GAUGE,
				"Bytes on disk: closed documents plus journals.");
	m->disk_errors = tl_metric_new("termline_disk_errors_total", NULL, TL_METRIC_COUNTER,
				       "Failed writes, fsyncs or deletions in the state directory.");
	m->late = tl_metric_new("termline_timeline_late_events_total", NULL, TL_METRIC_COUNTER,
				"Events for a Pod whose timeline had already closed (ignored).");
	/* Events dropped as exact repeats (same time, kind, container and
	 * payload: a relist, a re-read log): counted, so no drop is silent. */
	m->duplicate = tl_metric_new("termline_timeline_duplicate_events_total", NULL, TL_METRIC_COUNTER,
				     "Events dropped as exact repeats of one already recorded.");
	for (unsigned r = STATE_CLOSE_NONE + 1; r < STATE_CLOSE_REASON_MAX; r++) {
		char labels[64];

		snprintf(labels, sizeof(labels), "reason=\"%s\"", state_close_reason_name(r));
		m->evicted[r] = tl_metric_new("termline_timelines_evicted_total", labels, TL_METRIC_COUNTER,
					      "Timelines closed though their Pod's end was not recorded, by why (docs/hostile-peers.md).");
	}
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static int recorder_init(struct doc_recorder *rec, const struct tl_recorder *cfg)
{
	rec->agent_version = dup_or_empty(cfg->agent_version);
	rec->node = dup_or_empty(cfg->node);
	rec->kernel = dup_or_empty(cfg->kernel);
	rec->config_digest = dup_or_empty(cfg->config_digest);
	if (!rec->agent_version || !rec->node || !rec->kernel || !rec->config_digest)
		return -ENOMEM;
	for (size_t i = 0; cfg->probes && cfg->probes[i]; i++) {
		char **n = realloc(rec->probes, (rec->n_probes + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		rec->probes = n;
		rec->probes[rec->n_probes] = strdup(cfg->probes[i]);
		if (!rec->probes[rec->n_probes])
			return -ENOMEM;
		rec->n_probes++;
	}
	return 0;
}

static void recorder_free(struct doc_recorder *rec)
{
	for (size_t i = 0; i < rec->n_probes; i++)
		free(rec->probes[i]);
	free(rec->probes);
	free(rec->agent_version);
	free(rec->node);
	free(rec->kernel);
	free(rec->config_digest);
}

static int dirs_init(struct tl_timelines *t, const char *state_dir)
{
	char buf[PATH_MAX];
	int r;

	r = join_path(buf, sizeof(buf), state_dir, "timelines");
	if (r < 0)
		return r;
	t->timelines_dir = strdup(buf);
	r = join_path(buf, sizeof(buf), state_dir, "journal");
	if (r < 0)
		return r;
	t->journal_dir = strdup(buf);
	r = join_path(buf, sizeof(buf), state_dir, "closed.idx");
	if (r < 0)
		return r;
	t->closed_cache = strdup(buf);
	if (!t->timelines_dir || !t->journal_dir || !t->closed_cache)
		return -ENOMEM;
	r = mkdir_p(t->timelines_dir);
	return r < 0 ? r : mkdir_p(t->journal_dir);
}

int tl_timelines_new(const struct tl_timelines_config *cfg, struct tl_loop *loop,
		     struct tl_timelines **ret)
{
	struct tl_timelines *t;
	int r;

	if (!cfg || !cfg->state_dir || !loop)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->loop = loop;
	t->linger_s = cfg->linger_s;
	t->max_events = cfg->max_events ? cfg->max_events : STORE_DEFAULT_MAX_EVENTS;
	t->max_open = cfg->max_open ? cfg->max_open : STORE_DEFAULT_MAX_OPEN;
	t->idle_ms = (uint64_t)cfg->idle_close_s * 1000;
	t->vouched = cfg->vouched;
	t->vouched_ud = cfg->vouched_ud;
	t->now_ms = tl_now_mono_ms();
	t->fsync_ms = cfg->fsync_ms ? cfg->fsync_ms : STORE_DEFAULT_FSYNC_MS;
	t->retention_bytes = cfg->retention_bytes;
	t->retention_hours = cfg->retention_hours;
	t->close_wait_ms = cfg->close_wait_ms ? cfg->close_wait_ms : STORE_DEFAULT_CLOSE_WAIT_MS;
	t->before_close = cfg->before_close;
	t->before_close_ud = cfg->before_close_ud;
	t->closed_cb = cfg->closed;
	t->closed_ud = cfg->closed_ud;
	t->export_marks = cfg->export_marks;
	t->recording_since_ns = cfg->recorder.recording_since_ns ? cfg->recorder.recording_since_ns
								  : tl_now_real_ns();
	register_metrics(&t->m);
	r = close_find_helper(cfg->findings_helper, &t->findings_helper);
	r = r ?: recorder_init(&t->rec, &cfg->recorder);
	r = r ?: tl_jpool_new(cfg->journal_fds ? cfg->journal_fds : STORE_JOURNAL_FDS, &t->jpool);
	r = r ?: dirs_init(t, cfg->state_dir);
	r = r ?: closed_init(&t->closed, t->timelines_dir, t->closed_cache, t->m.disk_errors);
	r = r ?: tl_loop_add_timer(loop, 0, 0, flush_cb, t, &t->flush_timer);
	r = r ?: tl_fsworker_new(loop, &t->fsw);
	if (r < 0)
		goto fail;
	t->close = (struct close_ctx){
		.loop = loop,
		.fsw = t->fsw,
		.rec = &t->rec,
		.findings_helper = t->findings_helper,
		.writer_hook = cfg->writer_hook,
		.writer_hook_ud = cfg->writer_hook_ud,
		.disk_errors = t->m.disk_errors,
	};
	tl_metric_put(t->m.open, 0);
	closed_scan(&t->closed);
	r = replay_scan(t->journal_dir, replay_one, t);
	r = r ?: tl_loop_add_timer(loop, t->fsync_ms, t->fsync_ms, fsync_cb, t, &t->fsync_timer);
	r = r ?: tl_loop_add_timer(loop, STORE_RETENTION_PERIOD_MS, STORE_RETENTION_PERIOD_MS,
				   retention_cb, t, &t->retention_timer);
	if (r == 0 && t->idle_ms) {
		uint64_t every = t->idle_ms / 4;

		every = every < 1000 ? 1000 : every > 60000 ? 60000 : every;
		r = tl_loop_add_timer(loop, every, every, idle_cb, t, &t->idle_timer);
	}
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
	for (struct index_node *n = index_next(&t->open, NULL); n; n = index_next(&t->open, n)) {
		struct timeline *tl = tl_of(n);
		int q;

		repair_journal(tl, true);
		if (tl->jw.behind && tl->jw.unjournaled)
			tl_warn("journal of pod %s: %llu events not on disk: lost if the agent stops now",
				tl->s.uid, (unsigned long long)tl->jw.unjournaled);
		if (tl->jw.aggs_dirty)
			journal_result(tl, jwrite_aggs(&tl->jw, &tl->s));
		journal_result(tl, jwrite_loss(&tl->jw, &tl->s));
		q = jwrite_sync(&tl->jw);
		if (q < 0) {
			journal_result(tl, q);
			if (r == 0)
				r = q;
		}
	}
	update_disk_metrics(t);
	return r;
}

void tl_timelines_free(struct tl_timelines *t)
{
	struct index_node *n, *next;

	if (!t)
		return;
	closes_wait(t);
	tl_timelines_flush(t);
	for (n = index_next(&t->open, NULL); n; n = next) {
		next = index_next(&t->open, n);
		index_remove(&t->open, n);
		timeline_free(tl_of(n));
	}
	tl_fsworker_free(t->fsw);
	closed_free(&t->closed);
	tl_timer_free(t->fsync_timer);
	tl_timer_free(t->retention_timer);
	tl_timer_free(t->idle_timer);
	tl_timer_free(t->flush_timer);
	tl_loop_cancel_defer(t->loop, flush_deferred, t);
	tl_jpool_free(t->jpool);
	recorder_free(&t->rec);
	free(t->timelines_dir);
	free(t->journal_dir);
	free(t->closed_cache);
	free(t->findings_helper);
	free(t);
}

int tl_timelines_exported(struct tl_timelines *t, const char *uid)
{
	return closed_set_export(&t->closed, uid, CLOSED_EXPORT_DONE);
}

int tl_timelines_unexported(struct tl_timelines *t, size_t max,
			    int (*cb)(void *ud, const struct tl_closed_info *info), void *ud)
{
	size_t *at, n;
	int r = 0;

	if (!max)
		return 0;
	at = calloc(max, sizeof(*at));
	if (!at)
		return -ENOMEM;
	n = closed_pending_export(&t->closed, max, at);
	/* cb may mark a document exported (a record appended): the index's
	 * entries stay where they are */
	for (size_t i = 0; i < n && r >= 0; i++) {
		const struct closed *c = &t->closed.v[at[i]];
		struct tl_closed_info info = {
			.uid = c->uid,
			.ns = c->ns,
			.name = c->name,
			.path = c->path,
			.owner_kind = c->owner_kind,
			.owner_name = c->owner_name,
			.deletion_ns = c->deletion_ns,
			.complete = c->complete,
		};

		r = cb(ud, &info);
	}
	free(at);
	return r < 0 ? r : (int)n;
}

int tl_timelines_retention_run(struct tl_timelines *t)
{
	int r = closed_retention(&t->closed, t->retention_hours, t->retention_bytes,
				 journal_bytes_total(t), tl_now_real_ns(), t->m.disk_errors);

	update_disk_metrics(t);
	return r;
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
	if (closed_find(&t->closed, uid)) {
		tl_metric_inc(t->m.late, 1);
		return -ESTALE;
	}
	/* Memory and disk per Pod are bounded; the number of Pods must be
	 * too (a node has ~110; a flood of UIDs is refused and counted). */
	if (t->open.n - t->n_evicting >= t->max_open && !evict_one(t)) {
		t->refused++;
		tl_metric_inc(t->m.refused, 1);
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
	struct state_hdr h;
	struct state_change c;
	uint8_t payload[TL_PAYLOAD_MAX];
	int r;

	if (!ev->pod_uid[0])
		return 0;
	r = get_or_open(t, ev->pod_uid, &tl);
	if (r == -ESTALE)
		return 0;
	if (r < 0)
		return r;
	tl->active_ms = t->now_ms;
	if (tl->phase == TL_PHASE_CLOSING)
		tl->late++;
	r = state_pack(&tl->s, ev, &h, payload);
	r = r ?: state_admit(&tl->s, ev, &h, payload, &c);
	if (r < 0)
		return r;
	switch (c.outcome) {
	case STATE_DUPLICATE:
		tl_metric_inc(t->m.duplicate, 1);
		return 0;
	case STATE_KEPT:
		journal_result(tl, jwrite_event(&tl->jw, &tl->s, ev->time_ns, &h, payload));
		break;
	case STATE_FOLDED:
		/* the entry's counts and the loss follow once per iteration */
		journal_result(tl, jwrite_folded(&tl->jw, &tl->s, &c));
		arm_flush(t);
		break;
	case STATE_DROPPED:
		break;
	}
	if (jwrite_pending(&tl->jw))
		arm_flush(t);
	if (c.gone)
		timeline_gone(tl);
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
	tl->active_ms = t->now_ms;
	if (tl->phase == TL_PHASE_CLOSING)
		tl->late++;
	if (!state_set_meta(&tl->s, meta))
		return 0;
	journal_result(tl, jwrite_meta(&tl->jw, &tl->s));
	if (jwrite_pending(&tl->jw))
		arm_flush(t);
	return 0;
}

int tl_timelines_close_missing(struct tl_timelines *t, bool (*exists)(void *ud, const char *uid),
			       void *ud, int64_t before_ns, enum tl_close_reason reason)
{
	int n = 0;

	if ((unsigned)reason <= STATE_CLOSE_NONE || (unsigned)reason >= STATE_CLOSE_REASON_MAX)
		return -EINVAL;

	for (struct index_node *x = index_next(&t->open, NULL); x; x = index_next(&t->open, x)) {
		struct timeline *tl = tl_of(x);

		/* opened after the LIST began: it may be a Pod the LIST
		 * did not see yet */
		if (tl->s.gone || (before_ns && tl->s.opened_ns >= before_ns) ||
		    exists(ud, tl->s.uid))
			continue;
		n += timeline_end(tl, (unsigned)reason);
	}
	return n;
}

int tl_timelines_end(struct tl_timelines *t, const char *uid, enum tl_close_reason reason)
{
	struct timeline *tl;

	if ((unsigned)reason <= STATE_CLOSE_NONE || (unsigned)reason >= STATE_CLOSE_REASON_MAX)
		return -EINVAL;
	tl = uid ? find_open(t, uid) : NULL;
	return tl && timeline_end(tl, (unsigned)reason) ? 1 : 0;
}

void tl_timelines_note_kernel_loss(struct tl_timelines *t, uint64_t dropped)
{
	if (!dropped)
		return;
	for (struct index_node *n = index_next(&t->open, NULL); n; n = index_next(&t->open, n)) {
		struct timeline *tl = tl_of(n);

		tl->s.loss.kernel += dropped;
		journal_result(tl, jwrite_loss(&tl->jw, &tl->s));
	}
}

size_t tl_timelines_open_count(const struct tl_timelines *t)
{
	return t->open.n;
}

uint64_t tl_timelines_refused(const struct tl_timelines *t)
{
	return t->refused;
}

size_t tl_timelines_memory(const struct tl_timelines *t)
{
	size_t m = 0;

	for (struct index_node *n = index_next(&t->open, NULL); n; n = index_next(&t->open, n))
		m += sizeof(struct timeline) + state_memory(&tl_of(n)->s);
	return m;
}
