/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "export-json.h"
#include "fileio.h"
#include "journal.h"
#include "metrics.h"
#include "timeline.h"
#include "macro.h"

#define DEFAULT_MAX_EVENTS 20000
#define DEFAULT_FSYNC_MS 200
#define AGG_INTERVAL_NS 1000000000LL
#define AGG_RECENT 32
#define DEDUPE_SCAN_MAX 256
#define MAX_SEEN_CONTAINERS 32
#define MAX_FINDING_REQUEST_IDS 100
#define HASH_BUCKETS 1024
#define RETENTION_PERIOD_MS (60 * 1000)
#define CLOSE_RETRY_MAX_MS (10 * 1000)
#define DOC_READ_MAX (256u * 1024 * 1024)
#define NS_PER_S 1000000000LL
/* Without a pidfd (kernel < 5.3) a writer's exit is polled this often. */
#define WRITER_POLL_MS 10
#define DEFAULT_CLOSE_WAIT_MS 5000
/* A closed timeline's events are freed a slice per loop iteration: freeing
 * 20k events at once took ~150 ms. */
#define FREE_SLICE_NS 2000000

#define M_OPEN "termline_timelines_open"
#define M_CLOSED "termline_timelines_closed_total"
#define M_JOURNAL "termline_journal_bytes"
#define M_DISK "termline_disk_bytes"
#define M_DISK_ERR "termline_disk_errors_total"
#define M_LATE "termline_timeline_late_events_total"

/* DESIGN.md's required lifecycle types other than http.request: never
 * aggregated, kept up to the hard limit. */
static const char *const lifecycle_types[] = {
	"pod.deletion_requested", "pod.condition", "container.terminated", "pod.deleted",
	"endpoint.condition", "endpoint.removed", "process.signal", "process.exec",
	"process.exit", "socket.listen", "socket.listen_closed", "tcp.reset_sent",
	"tcp.reset_received",
};

struct entry {
	int64_t time_ns;
	struct json_object *obj; /* the document's event object */
};

struct agg {
	int64_t bucket_ns;
	enum tl_source source;
	char type[TL_TYPE_MAX];
	char container[TL_NAME_MAX];
	struct json_object *obj; /* owned by the entry array */
};

struct seen_container {
	char id[TL_CONTAINER_ID_MAX];
	char name[TL_NAME_MAX];
	uint64_t cgroup_id;
};

struct loss {
	uint64_t kernel, aggregated, dropped, disk, restarts;
	/* Unreadable records still in the journal, already counted in disk:
	 * the next replay meets them again and must not count them twice. */
	uint64_t unreadable;
};

/* What the writer process reports, in a shared page read once it exited. */
struct writer_result {
	uint64_t bytes, findings;
	int32_t err; /* errno, 0 = written */
	uint32_t done;
};

/* A document being written by a forked process (the timeline is closing). */
struct writer {
	pid_t pid;  /* > 0 until reaped */
	int pidfd;  /* -1: the exit is polled by poll_timer */
	bool pidfd_on_loop;
	struct tl_timer *poll_timer;
	struct writer_result *res; /* MAP_SHARED */
	/* Where the document goes, fixed when the writer started. */
	char *ns, *name, *path;
	/* Journal records of what arrived while closing: late if the document
	 * is written, replayed into the timeline if not. */
	struct json_object *held;
	uint64_t late, held_dropped;
	/* Kernel drops and disk errors while closing; the document being
	 * written (and served) does not show them. */
	uint64_t held_kernel, held_disk;
};

struct timeline {
	struct tl_timelines *store;
	struct timeline *hnext;
	char uid[TL_UID_MAX];
	struct json_object *meta;
	struct entry *ev;
	size_t n, cap;
	struct agg recent[AGG_RECENT];
	size_t n_recent;
	struct seen_container ctrs[MAX_SEEN_CONTAINERS];
	size_t n_ctrs;
	struct loss loss, loss_journaled;
	int64_t opened_ns, recording_since_ns;
	struct json_object *gaps; /* [{"from","to"}] or NULL */
	bool deleted;
	int64_t deleted_ns;
	/* Termination began (deletion requested, or a SIGTERM/SIGKILL seen):
	 * from entry n_at_termination on, the event budget starts afresh. */
	bool terminating;
	size_t n_at_termination;
	struct tl_timer *close_timer;
	struct tl_journal *journal;
	bool replaying;
	uint64_t replay_bad; /* well-formed lines that were no usable record */
	struct writer *writer; /* non-NULL while closing */
};

struct closed {
	char *ns, *name;
	char uid[TL_UID_MAX];
	char *path;
	uint64_t bytes;
	int64_t mtime_ns, started_ns;
	size_t events, findings;
};

struct tl_timelines {
	struct tl_loop *loop;
	char *timelines_dir, *journal_dir;
	uint32_t linger_s, max_events, retention_hours, fsync_ms, close_wait_ms;
	uint64_t retention_bytes;
	void (*writer_hook)(void *ud);
	void *writer_hook_ud;
	char *agent_version, *node, *kernel, *config_digest;
	char **probes;
	size_t n_probes;
	int64_t recording_since_ns;
	struct timeline *buckets[HASH_BUCKETS];
	size_t n_open;
	struct closed *closed;
	size_t n_closed, cap_closed;
	uint64_t closed_bytes;
	struct tl_timer *fsync_timer, *retention_timer;
	/* Closed timelines whose events are still being freed (via hnext). */
	struct timeline *dying;
	struct tl_timer *reap_timer;
};

static bool is_lifecycle(const char *type)
{
	for (size_t i = 0; i < sizeof(lifecycle_types) / sizeof(lifecycle_types[0]); i++)
		if (strcmp(type, lifecycle_types[i]) == 0)
			return true;
	return false;
}

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
		if (strcmp(tl->uid, uid) == 0)
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
		tl->loss.disk++;
}

/* ---- journal records ---- */

static void journal_write(struct timeline *tl, struct json_object *rec)
{
	int r;

	if (!rec)
		return;
	if (!tl->replaying && tl->journal) {
		r = tl_journal_append(tl->journal, rec);
		if (r < 0)
			note_disk_error(tl);
	}
	json_object_put(rec);
}

static struct json_object *loss_record(const struct loss *l)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "k", json_object_new_string("loss"));
	json_object_object_add(o, "kernel", json_object_new_int64((int64_t)l->kernel));
	json_object_object_add(o, "aggregated", json_object_new_int64((int64_t)l->aggregated));
	json_object_object_add(o, "dropped", json_object_new_int64((int64_t)l->dropped));
	json_object_object_add(o, "disk", json_object_new_int64((int64_t)l->disk));
	json_object_object_add(o, "restarts", json_object_new_int64((int64_t)l->restarts));
	json_object_object_add(o, "unreadable", json_object_new_int64((int64_t)l->unreadable));
	return o;
}

/* The loss as a replay must see it: what is held aside while closing
 * included (replay redoes the close with it). */
static void journal_loss(struct timeline *tl)
{
	struct loss l = tl->loss;

	if (tl->writer) {
		l.kernel += tl->writer->held_kernel;
		l.disk += tl->writer->held_disk;
	}
	if (memcmp(&l, &tl->loss_journaled, sizeof(l)) == 0)
		return;
	tl->loss_journaled = l;
	journal_write(tl, loss_record(&l));
}

/* ---- timeline model ---- */

static void writer_free(struct tl_loop *loop, struct writer *w);

/* Everything but the events. */
static void timeline_release(struct timeline *tl)
{
	writer_free(tl->store->loop, tl->writer);
	tl->writer = NULL;
	json_object_put(tl->meta);
	tl->meta = NULL;
	json_object_put(tl->gaps);
	tl->gaps = NULL;
	tl_timer_free(tl->close_timer);
	tl->close_timer = NULL;
	tl_journal_close(tl->journal);
	tl->journal = NULL;
}

static void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	timeline_release(tl);
	for (size_t i = 0; i < tl->n; i++)
		json_object_put(tl->ev[i].obj);
	free(tl->ev);
	free(tl);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* Frees dying timelines' events for at most FREE_SLICE_NS, then yields. */
static void reap_cb(struct tl_loop *loop _unused_, struct tl_timer *timer, void *userdata)
{
	struct tl_timelines *t = userdata;
	uint64_t deadline = mono_ns() + FREE_SLICE_NS;

	while (t->dying) {
		struct timeline *tl = t->dying;

		while (tl->n > 0) {
			json_object_put(tl->ev[--tl->n].obj);
			if ((tl->n & 63) == 0 && mono_ns() > deadline) {
				tl_timer_arm(timer, 1, 0); /* failing: the fsync tick re-arms */
				return;
			}
		}
		t->dying = tl->hnext;
		free(tl->ev);
		free(tl);
	}
}

/* An unlinked timeline: released now, its events freed in slices. */
static void timeline_bury(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;

	timeline_release(tl);
	tl->hnext = t->dying;
	t->dying = tl;
	tl_timer_arm(t->reap_timer, 1, 0); /* failing: the fsync tick re-arms */
}

static struct timeline *timeline_alloc(struct tl_timelines *t, const char *uid)
{
	struct timeline *tl = calloc(1, sizeof(*tl));
	unsigned h;

	if (!tl)
		return NULL;
	tl->store = t;
	snprintf(tl->uid, sizeof(tl->uid), "%s", uid);
	tl->opened_ns = tl_now_real_ns();
	tl->recording_since_ns = t->recording_since_ns;
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

	for (struct timeline **pp = &t->buckets[hash_uid(tl->uid)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == tl) {
			*pp = tl->hnext;
			t->n_open--;
			break;
		}
	}
	tl_metric_set(M_OPEN, NULL, (int64_t)t->n_open);
}

static int timeline_open(struct tl_timelines *t, const char *uid, struct timeline **ret)
{
	struct timeline *tl = timeline_alloc(t, uid);
	struct json_object *rec;
	char tbuf[TL_TIME_STRLEN];
	int r;

	if (!tl)
		return -ENOMEM;
	r = tl_journal_open(t->journal_dir, uid, &tl->journal);
	if (r < 0)
		note_disk_error(tl); /* keep recording in memory */
	rec = json_object_new_object();
	if (rec) {
		json_object_object_add(rec, "k", json_object_new_string("open"));
		json_object_object_add(rec, "uid", json_object_new_string(uid));
		json_object_object_add(rec, "opened",
				       json_object_new_string(tl_time_format(tl->opened_ns, tbuf)));
		json_object_object_add(rec, "since",
				       json_object_new_string(tl_time_format(tl->recording_since_ns, tbuf)));
	}
	journal_write(tl, rec);
	*ret = tl;
	return 0;
}

static size_t upper_bound(const struct timeline *tl, int64_t t)
{
	size_t lo = 0, hi = tl->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tl->ev[mid].time_ns <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool is_duplicate(const struct timeline *tl, int64_t t, struct json_object *obj)
{
	size_t i = upper_bound(tl, t);

	for (size_t k = 0; i > 0 && k < DEDUPE_SCAN_MAX; i--, k++) {
		if (tl->ev[i - 1].time_ns != t)
			break;
		if (json_object_equal(tl->ev[i - 1].obj, obj))
			return true;
	}
	return false;
}

static int insert_entry(struct timeline *tl, int64_t t, struct json_object *obj)
{
	size_t pos;

	if (tl->n == tl->cap) {
		size_t ncap = tl->cap ? tl->cap * 2 : 64;
		struct entry *n = realloc(tl->ev, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tl->ev = n;
		tl->cap = ncap;
	}
	/* Equal times keep arrival order. */
	pos = upper_bound(tl, t);
	memmove(&tl->ev[pos + 1], &tl->ev[pos], (tl->n - pos) * sizeof(*tl->ev));
	tl->ev[pos].time_ns = t;
	tl->ev[pos].obj = obj;
	tl->n++;
	return 0;
}

static bool http_failed(const struct tl_event *ev)
{
	int64_t status;

	if (ev->kind != TL_KIND_HTTP_REQUEST || !tl_event_get_i(ev, TL_F_HTTP_STATUS, &status))
		return false;
	return status == 0 || status >= 500;
}

static struct json_object *new_agg_object(const struct tl_event *ev, int64_t bucket)
{
	struct json_object *o;
	struct tl_event tmp;

	/* Build through tl_event_to_json so the envelope matches other events. */
	if (tl_event_init(&tmp, ev->source, "events.aggregated", bucket) < 0)
		return NULL;
	snprintf(tmp.container, sizeof(tmp.container), "%s", ev->container);
	if (tl_event_set_str(&tmp, "aggregatedType", ev->type) < 0 ||
	    tl_event_set_int(&tmp, "intervalMs", AGG_INTERVAL_NS / 1000000) < 0 ||
	    tl_event_set_int(&tmp, "count", 0) < 0 ||
	    (strcmp(ev->type, "http.request") == 0 && tl_event_set_int(&tmp, "failed", 0) < 0)) {
		tl_event_clear(&tmp);
		return NULL;
	}
	o = tl_event_to_json(&tmp, false);
	tl_event_clear(&tmp);
	return o;
}

static void obj_inc(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (json_object_object_get_ex(o, key, &v))
		json_object_int_inc(v, 1);
}

/* Past the cap: fold ev into its per-second bucket. 1 folded, 0 dropped. */
static int aggregate(struct timeline *tl, const struct tl_event *ev, size_t hard)
{
	int64_t bucket = ev->time_ns - (((ev->time_ns % AGG_INTERVAL_NS) + AGG_INTERVAL_NS) % AGG_INTERVAL_NS);
	struct agg *a = NULL;
	size_t have = tl->n_recent < AGG_RECENT ? tl->n_recent : AGG_RECENT;

	for (size_t k = 0; k < have; k++) {
		struct agg *c = &tl->recent[(tl->n_recent - 1 - k) % AGG_RECENT];

		if (c->bucket_ns == bucket && c->source == ev->source &&
		    strcmp(c->type, ev->type) == 0 && strcmp(c->container, ev->container) == 0) {
			a = c;
			break;
		}
	}
	/* No room for a new bucket: widen the latest bucket of the same kind
	 * to reach this event instead of losing it (sparse events, such as a
	 * long-lived Pod's probes, would otherwise each need one). */
	for (size_t k = 0; !a && tl->n >= hard && k < have; k++) {
		struct agg *c = &tl->recent[(tl->n_recent - 1 - k) % AGG_RECENT];
		struct json_object *iv;
		int64_t span_ms;

		if (c->bucket_ns > ev->time_ns || c->source != ev->source ||
		    strcmp(c->type, ev->type) != 0 || strcmp(c->container, ev->container) != 0)
			continue;
		a = c;
		span_ms = (ev->time_ns - c->bucket_ns) / 1000000 + 1;
		if (json_object_object_get_ex(c->obj, "intervalMs", &iv) &&
		    json_object_get_int64(iv) < span_ms)
			json_object_set_int64(iv, span_ms);
	}
	if (!a) {
		struct json_object *o;

		if (tl->n >= hard)
			return 0;
		o = new_agg_object(ev, bucket);
		if (!o || insert_entry(tl, bucket, o) < 0) {
			json_object_put(o);
			return -ENOMEM;
		}
		a = &tl->recent[tl->n_recent % AGG_RECENT];
		tl->n_recent++;
		a->bucket_ns = bucket;
		a->source = ev->source;
		snprintf(a->type, sizeof(a->type), "%s", ev->type);
		snprintf(a->container, sizeof(a->container), "%s", ev->container);
		a->obj = o;
	}
	obj_inc(a->obj, "count");
	if (http_failed(ev))
		obj_inc(a->obj, "failed");
	return 1;
}

static void note_container(struct timeline *tl, const struct tl_event *ev)
{
	struct seen_container *c = NULL;

	if (!ev->container_id[0])
		return;
	for (size_t i = 0; i < tl->n_ctrs; i++)
		if (strcmp(tl->ctrs[i].id, ev->container_id) == 0)
			c = &tl->ctrs[i];
	if (!c) {
		if (tl->n_ctrs == MAX_SEEN_CONTAINERS)
			return;
		c = &tl->ctrs[tl->n_ctrs++];
		snprintf(c->id, sizeof(c->id), "%s", ev->container_id);
	}
	if (ev->container[0] && !c->name[0])
		snprintf(c->name, sizeof(c->name), "%s", ev->container);
	if (ev->cgroup_id && !c->cgroup_id)
		c->cgroup_id = ev->cgroup_id;
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

static bool equal_but_time(struct json_object *a, struct json_object *b)
{
	struct json_object *v;
	size_t n = 0;

	json_object_object_foreach(a, k, va) {
		if (strcmp(k, "time") == 0)
			continue;
		if (!json_object_object_get_ex(b, k, &v) || !json_object_equal(va, v))
			return false;
		n++;
	}
	if (json_object_object_get_ex(b, "time", &v))
		n++;
	return (size_t)json_object_object_length(b) == n;
}

/* A restarted agent's first LIST restates the deletion and the terminated
 * containers of a Pod that was already terminating. Both carry the API's
 * own timestamps (deletionTimestamp, startedAt/finishedAt), so the same
 * fields observed at another time are the fact the journal already holds;
 * within one agent run the API side reports each of them once. */
static bool is_restated(const struct timeline *tl, const struct tl_event *ev,
			struct json_object *obj)
{
	if (!tl->loss.restarts || ev->source != TL_SRC_API ||
	    (strcmp(ev->type, "pod.deletion_requested") != 0 &&
	     strcmp(ev->type, "container.terminated") != 0))
		return false;
	for (size_t i = 0; i < tl->n; i++)
		if (equal_but_time(tl->ev[i].obj, obj))
			return true;
	return false;
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

static bool is_api_lifecycle(const struct tl_event *ev)
{
	return ev->source == TL_SRC_API && is_lifecycle(ev->type);
}

/* 1 when kept or folded (journal it), 0 when a duplicate or dropped.
 * Before termination: up to max_events everything is kept; past it API
 * lifecycle facts (rare) are kept up to 2 x max_events and everything else,
 * kernel lifecycle events included, is folded per second. From termination
 * on, counted from its start: up to max_events everything is kept, lifecycle
 * events up to 2 x max_events, the rest folded; past that, dropped. */
static int timeline_add(struct timeline *tl, const struct tl_event *ev)
{
	size_t soft = tl->store->max_events, hard = 2 * (size_t)tl->store->max_events;
	size_t base, used;
	bool keep_lifecycle;
	struct json_object *obj;
	int r;

	obj = tl_event_to_json(ev, false);
	if (!obj)
		return -ENOMEM;
	if (is_duplicate(tl, ev->time_ns, obj) || is_restated(tl, ev, obj)) {
		json_object_put(obj);
		return 0;
	}
	note_container(tl, ev);
	if (!tl->terminating && starts_termination(ev)) {
		tl->terminating = true;
		tl->n_at_termination = tl->n;
	}
	base = tl->terminating ? tl->n_at_termination : 0;
	used = tl->n - base;
	keep_lifecycle = tl->terminating ? is_lifecycle(ev->type) : is_api_lifecycle(ev);
	/* The first pod.deleted is kept past every limit: it ends the timeline,
	 * and a replay must see it too. */
	if (used < soft || (keep_lifecycle && used < hard) ||
	    (!tl->deleted && strcmp(ev->type, "pod.deleted") == 0)) {
		r = insert_entry(tl, ev->time_ns, obj);
		if (r < 0) {
			json_object_put(obj);
			return r;
		}
		r = 1;
	} else {
		json_object_put(obj);
		if (keep_lifecycle) {
			tl->loss.dropped++;
			r = 0;
		} else {
			r = aggregate(tl, ev, base + hard);
			if (r < 0)
				return r;
			if (r > 0)
				tl->loss.aggregated++;
			else
				tl->loss.dropped++;
		}
	}
	if (r > 0 && !tl->deleted &&
	    (strcmp(ev->type, "pod.deleted") == 0 ||
	     /* Without the API server (--no-api) the removal of the Pod's last
	      * container cgroup is the only sign that it is gone. */
	     (!tl->meta && strcmp(ev->type, "pod.cgroups_removed") == 0)))
		start_linger(tl, ev->time_ns);
	return r;
}

/* {"k":"meta","m":m}; takes the reference to m. */
static struct json_object *meta_record(struct json_object *m)
{
	struct json_object *rec = json_object_new_object();

	if (!rec) {
		json_object_put(m);
		return NULL;
	}
	json_object_object_add(rec, "k", json_object_new_string("meta"));
	json_object_object_add(rec, "m", m);
	return rec;
}

static int timeline_set_meta(struct timeline *tl, struct json_object *meta)
{
	struct json_object *copy = NULL;

	if (tl->meta && json_object_equal(tl->meta, meta))
		return 0;
	if (json_object_deep_copy(meta, &copy, NULL) < 0)
		return -ENOMEM;
	json_object_put(tl->meta);
	tl->meta = copy;
	journal_write(tl, meta_record(json_object_get(copy)));
	return 0;
}

/* ---- document ---- */

static const char *meta_str(const struct timeline *tl, const char *key)
{
	struct json_object *p, *v;

	if (!tl->meta || !json_object_object_get_ex(tl->meta, "pod", &p) ||
	    !json_object_is_type(p, json_type_object) || !json_object_object_get_ex(p, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *str_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

static bool container_id_matches(const char *full, const char *bare)
{
	const char *p = strstr(full, "://");

	return strcmp(p ? p + 3 : full, bare) == 0;
}

static struct json_object *build_containers(const struct timeline *tl)
{
	struct json_object *arr = json_object_new_array(), *mc = NULL;
	bool used[MAX_SEEN_CONTAINERS] = { false };

	if (!arr)
		return NULL;
	if (tl->meta && json_object_object_get_ex(tl->meta, "containers", &mc) &&
	    json_object_is_type(mc, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(mc); i++) {
			struct json_object *c = json_object_array_get_idx(mc, i), *o, *v;
			const char *id = NULL, *role = NULL;
			int64_t cg = 0;

			if (!json_object_is_type(c, json_type_object))
				continue;
			o = json_object_new_object();
			if (!o)
				break;
			v = NULL;
			json_object_object_get_ex(c, "name", &v);
			json_object_object_add(o, "name", json_object_is_type(v, json_type_string) ?
								  str_or_null(json_object_get_string(v)) : NULL);
			if (json_object_object_get_ex(c, "containerID", &v) &&
			    json_object_is_type(v, json_type_string))
				id = json_object_get_string(v);
			json_object_object_add(o, "containerID", str_or_null(id));
			if (json_object_object_get_ex(c, "role", &v) && json_object_is_type(v, json_type_string)) {
				role = json_object_get_string(v);
				if (strcmp(role, "main") != 0 && strcmp(role, "sidecar") != 0 &&
				    strcmp(role, "init") != 0)
					role = NULL;
			}
			json_object_object_add(o, "role", str_or_null(role));
			if (json_object_object_get_ex(c, "cgroupId", &v) && json_object_is_type(v, json_type_int) &&
			    json_object_get_int64(v) > 0)
				cg = json_object_get_int64(v);
			for (size_t k = 0; id && *id && k < tl->n_ctrs; k++) {
				if (container_id_matches(id, tl->ctrs[k].id)) {
					used[k] = true;
					if (!cg)
						cg = (int64_t)tl->ctrs[k].cgroup_id;
				}
			}
			json_object_object_add(o, "cgroupId", json_object_new_int64(cg));
			json_object_array_add(arr, o);
		}
	}
	/* Containers only the kernel side knows (--no-api, or metadata late). */
	for (size_t k = 0; k < tl->n_ctrs; k++) {
		struct json_object *o;

		if (used[k])
			continue;
		o = json_object_new_object();
		if (!o)
			break;
		json_object_object_add(o, "name", str_or_null(tl->ctrs[k].name));
		json_object_object_add(o, "containerID", json_object_new_string(tl->ctrs[k].id));
		json_object_object_add(o, "role", NULL);
		json_object_object_add(o, "cgroupId", json_object_new_int64((int64_t)tl->ctrs[k].cgroup_id));
		json_object_array_add(arr, o);
	}
	return arr;
}

static const char *obj_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int64_t obj_int(struct json_object *o, const char *key, int64_t def)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return def;
	return json_object_get_int64(v);
}

static struct json_object *new_finding(const char *rule, const char *severity, const char *summary,
				       struct json_object *ids)
{
	struct json_object *f = json_object_new_object();

	if (!f) {
		json_object_put(ids);
		return NULL;
	}
	json_object_object_add(f, "rule", json_object_new_string(rule));
	json_object_object_add(f, "severity", json_object_new_string(severity));
	json_object_object_add(f, "summary", json_object_new_string(summary));
	json_object_object_add(f, "requestIds", ids ? ids : json_object_new_array());
	return f;
}

/* Two rules that need nothing but the timeline itself:
 * - sigterm-ignored: a stop signal the target dropped (PID 1 without a
 *   handler), so the container only ends at SIGKILL after the grace period;
 * - requests-failed-during-termination: HTTP requests without a response or
 *   with a 5xx after the deletion was requested. */
static struct json_object *build_findings(const struct timeline *tl)
{
	struct json_object *arr = json_object_new_array(), *ids = NULL;
	int64_t deletion_ns = INT64_MAX;
	uint64_t failed = 0;
	char summary[512];

	if (!arr)
		return NULL;
	for (size_t i = 0; i < tl->n; i++) {
		struct json_object *e = tl->ev[i].obj;
		const char *type = obj_str(e, "type");

		if (!type)
			continue;
		if (strcmp(type, "pod.deletion_requested") == 0 && deletion_ns == INT64_MAX)
			deletion_ns = tl->ev[i].time_ns;
		if (strcmp(type, "process.signal") == 0) {
			const char *sig = obj_str(e, "signal"), *res = obj_str(e, "result");
			const char *comm = obj_str(e, "comm"), *ctr = obj_str(e, "container");

			if (sig && res && strcmp(sig, "SIGTERM") == 0 && strcmp(res, "ignored") == 0) {
				snprintf(summary, sizeof(summary),
					 "SIGTERM to %s (pid %lld) in container %s was ignored: it only stops at SIGKILL when the grace period ends",
					 comm ? comm : "?", (long long)obj_int(e, "pid", 0), ctr ? ctr : "?");
				json_object_array_add(arr, new_finding("sigterm-ignored", "warning", summary, NULL));
			}
		} else if (tl->ev[i].time_ns >= deletion_ns && strcmp(type, "http.request") == 0) {
			int64_t status = obj_int(e, "status", -1);
			const char *rid = obj_str(e, "requestId");

			if (status != 0 && status < 500)
				continue;
			failed++;
			if (!ids)
				ids = json_object_new_array();
			if (ids && rid && *rid && json_object_array_length(ids) < MAX_FINDING_REQUEST_IDS)
				json_object_array_add(ids, json_object_new_string(rid));
		} else if (tl->ev[i].time_ns >= deletion_ns && strcmp(type, "events.aggregated") == 0) {
			failed += (uint64_t)obj_int(e, "failed", 0);
		}
	}
	if (failed) {
		snprintf(summary, sizeof(summary),
			 "%llu HTTP request(s) failed (no response or 5xx) after the Pod's deletion was requested",
			 (unsigned long long)failed);
		json_object_array_add(arr, new_finding("requests-failed-during-termination", "error",
						       summary, ids));
	} else {
		json_object_put(ids);
	}
	return arr;
}

static bool timeline_complete(const struct timeline *tl)
{
	const struct loss *l = &tl->loss;

	return !(l->kernel || l->aggregated || l->dropped || l->disk || l->restarts);
}

static struct json_object *build_recorder(const struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	struct json_object *r = json_object_new_object(), *probes;
	char tbuf[TL_TIME_STRLEN];

	if (!r)
		return NULL;
	json_object_object_add(r, "agentVersion", json_object_new_string(t->agent_version));
	json_object_object_add(r, "node", json_object_new_string(t->node));
	json_object_object_add(r, "kernel", json_object_new_string(t->kernel));
	probes = json_object_new_array();
	for (size_t i = 0; probes && i < t->n_probes; i++)
		json_object_array_add(probes, json_object_new_string(t->probes[i]));
	json_object_object_add(r, "probes", probes);
	json_object_object_add(r, "configDigest", json_object_new_string(t->config_digest));
	json_object_object_add(r, "recordingSince",
			       json_object_new_string(tl_time_format(tl->recording_since_ns, tbuf)));
	if (tl->gaps)
		json_object_object_add(r, "gaps", json_object_get(tl->gaps));
	return r;
}

static struct json_object *build_loss(const struct loss *l)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "kernelEventsDropped", json_object_new_int64((int64_t)l->kernel));
	json_object_object_add(o, "eventsAggregated", json_object_new_int64((int64_t)l->aggregated));
	json_object_object_add(o, "eventsDropped", json_object_new_int64((int64_t)l->dropped));
	json_object_object_add(o, "diskErrors", json_object_new_int64((int64_t)l->disk));
	json_object_object_add(o, "agentRestarts", json_object_new_int64((int64_t)l->restarts));
	return o;
}

/* borrow: the events array does not take references to the events (the
 * writer process must not write to the pages it shares with the agent, and
 * never frees the document). */
static int build_document(const struct timeline *tl, bool borrow, struct json_object **ret)
{
	struct json_object *doc = json_object_new_object(), *events, *parts[6];
	static const char *const keys[] = { "pod", "containers", "findings", "loss", "recorder" };

	if (!doc)
		return -ENOMEM;
	events = json_object_new_array_ext((int)(tl->n ? tl->n : 1));
	parts[0] = tl_export_pod(tl->uid, tl->meta);
	parts[1] = build_containers(tl);
	parts[2] = build_findings(tl);
	parts[3] = build_loss(&tl->loss);
	parts[4] = build_recorder(tl);
	json_object_object_add(doc, "apiVersion", json_object_new_string(TL_API_VERSION));
	json_object_object_add(doc, keys[0], parts[0]);
	json_object_object_add(doc, keys[1], parts[1]);
	for (size_t i = 0; events && i < tl->n; i++)
		json_object_array_add(events, borrow ? tl->ev[i].obj : json_object_get(tl->ev[i].obj));
	json_object_object_add(doc, "events", events);
	json_object_object_add(doc, keys[2], parts[2]);
	json_object_object_add(doc, "complete", json_object_new_boolean(timeline_complete(tl)));
	json_object_object_add(doc, keys[3], parts[3]);
	json_object_object_add(doc, keys[4], parts[4]);
	if (!events || !parts[0] || !parts[1] || !parts[2] || !parts[3] || !parts[4]) {
		json_object_put(doc);
		return -ENOMEM;
	}
	*ret = doc;
	return 0;
}

static int serialize(struct json_object *doc, char **ret, size_t *ret_len)
{
	size_t len;
	const char *s = json_object_to_json_string_length(
		doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	char *copy;

	if (!s)
		return -ENOMEM;
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len + 1);
	*ret = copy;
	*ret_len = len;
	return 0;
}

/* ---- closed documents ---- */

static void closed_clear(struct closed *c)
{
	free(c->ns);
	free(c->name);
	free(c->path);
}

static int closed_add(struct tl_timelines *t, const char *ns, const char *name, const char *uid,
		      const char *path, uint64_t bytes, int64_t mtime_ns, int64_t started_ns,
		      size_t events, size_t findings)
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
	if ((ns && !c->ns) || (name && !c->name) || !c->path) {
		closed_clear(c);
		return -ENOMEM;
	}
	snprintf(c->uid, sizeof(c->uid), "%s", uid ? uid : "");
	c->bytes = bytes;
	c->mtime_ns = mtime_ns;
	c->started_ns = started_ns;
	c->events = events;
	c->findings = findings;
	t->n_closed++;
	t->closed_bytes += bytes;
	return 0;
}

static void update_disk_metrics(struct tl_timelines *t)
{
	uint64_t journal = 0;

	for (size_t b = 0; b < HASH_BUCKETS; b++)
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext)
			journal += tl_journal_bytes(tl->journal);
	tl_metric_set(M_JOURNAL, NULL, (int64_t)journal);
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

	/* Closed in order, so the array is (nearly) oldest first already. */
	qsort(t->closed, t->n_closed, sizeof(*t->closed), cmp_closed_mtime);
	while (t->n_closed > 0) {
		struct closed *c = &t->closed[0];
		bool too_old = t->retention_hours &&
			       c->mtime_ns < now - (int64_t)t->retention_hours * 3600 * NS_PER_S;
		bool too_big = t->retention_bytes && t->closed_bytes > t->retention_bytes;

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

static size_t array_len(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
		return 0;
	return json_object_array_length(v);
}

static void scan_closed_file(struct tl_timelines *t, const char *dir, const char *file)
{
	char path[PATH_MAX];
	struct json_object *doc, *pod = NULL, *events, *first;
	struct stat st;
	int64_t started = 0;

	if (join_path(path, sizeof(path), dir, file) < 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (file[0] == '.') {
		/* A temp file left by a crash inside tl_export_write_atomic. */
		unlink(path);
		return;
	}
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
	}
	/* Unreadable documents still count against retention. */
	closed_add(t, pod ? obj_str(pod, "namespace") : NULL, pod ? obj_str(pod, "name") : NULL,
		   pod ? obj_str(pod, "uid") : NULL, path, (uint64_t)st.st_size,
		   (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec, started,
		   doc ? array_len(doc, "events") : 0, doc ? array_len(doc, "findings") : 0);
	json_object_put(doc);
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
		if (de->d_name[0] == '.')
			continue;
		if (join_path(dir, sizeof(dir), t->timelines_dir, de->d_name) < 0)
			continue;
		sub = opendir(dir);
		if (!sub)
			continue;
		while ((fe = readdir(sub)))
			if (strcmp(fe->d_name, ".") != 0 && strcmp(fe->d_name, "..") != 0)
				scan_closed_file(t, dir, fe->d_name);
		closedir(sub);
	}
	closedir(top);
	return 0;
}

/* ---- closing ---- */

static int64_t timeline_started(const struct timeline *tl)
{
	return tl->n ? tl->ev[0].time_ns : tl->opened_ns;
}

/* DIR (STATE/timelines/NS), FILE and DIR/FILE of tl's document. */
static int doc_location(const struct timeline *tl, char *dir, size_t dirlen, char *file,
			size_t filelen, char *path, size_t pathlen)
{
	char reldir[300];
	int r;

	r = tl_export_doc_location(meta_str(tl, "namespace"), meta_str(tl, "name"), tl->uid, reldir,
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

/* Writes the document on the loop: only when no writer process can be had. */
static int timeline_write(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	char file[400], dir[PATH_MAX], path[PATH_MAX];
	struct json_object *doc = NULL;
	char *data = NULL;
	size_t len = 0, n_findings;
	int r;

	r = doc_location(tl, dir, sizeof(dir), file, sizeof(file), path, sizeof(path));
	if (r < 0)
		return r;
	r = build_document(tl, false, &doc);
	if (r < 0)
		return r;
	n_findings = array_len(doc, "findings");
	r = serialize(doc, &data, &len);
	json_object_put(doc);
	if (r < 0)
		return r;
	r = tl_export_write_atomic(dir, file, data, len);
	free(data);
	if (r < 0)
		return r;
	return closed_add(t, meta_name_ok(tl, "namespace"), meta_name_ok(tl, "name"), tl->uid, path,
			  len, tl_now_real_ns(), timeline_started(tl), tl->n, n_findings);
}

static void close_cb(struct tl_loop *loop, struct tl_timer *timer, void *userdata);
static int replay_record(void *userdata, struct json_object *rec);

/* Disk full or unwritable: count it, keep the timeline open (it is
 * journaled) and try again later. */
static void close_failed(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	uint64_t retry_ms = (uint64_t)t->linger_s * 1000;

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

/* The document is on disk and indexed: the timeline is gone. */
static void close_done(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;

	tl_metric_add(M_CLOSED, NULL, 1);
	timeline_unlink(tl);
	if (tl_journal_remove(tl->journal) < 0)
		note_disk_error(NULL);
	tl->journal = NULL;
	timeline_bury(tl); /* frees timers and fds: allowed inside their callbacks */
	tl_timelines_retention_run(t);
}

/* ---- the writer process ---- */

static void writer_free(struct tl_loop *loop, struct writer *w)
{
	int status;

	if (!w)
		return;
	if (w->pidfd_on_loop)
		tl_loop_del_io(loop, w->pidfd);
	if (w->pidfd >= 0)
		close(w->pidfd);
	tl_timer_free(w->poll_timer);
	/* Only a writer given up on (shutdown past close_wait_ms) still runs:
	 * its timeline stays journaled and the next start closes it again. */
	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	if (w->res)
		munmap(w->res, sizeof(*w->res));
	json_object_put(w->held);
	free(w->ns);
	free(w->name);
	free(w->path);
	free(w);
}

/* Inherited descriptors are the agent's (epoll, BPF, sockets, journals,
 * other writers' pidfds). Holding copies would keep connections and the
 * listening port open past the agent's close of them. */
static void close_inherited_fds(void)
{
	long max;

	if (close_range(3, ~0U, 0) == 0)
		return;
	max = sysconf(_SC_OPEN_MAX);
	for (long fd = 3; fd < (max > 0 ? max : 1024); fd++)
		close((int)fd);
}

/* The forked writer: serializes the copy-on-write snapshot of tl and
 * writes it atomically. It touches nothing of the agent but that memory
 * (no loop, BPF, curl, stdio) and leaves by _exit: no atexit handlers, no
 * stdio buffers flushed twice. */
static _Noreturn void writer_main(const struct timeline *tl, struct writer_result *res,
				  const char *dir, const char *file, const char *journal)
{
	struct tl_timelines *t = tl->store;
	struct json_object *doc = NULL;
	const char *s = NULL;
	size_t len = 0;
	int r;

	close_inherited_fds();
	if (t->writer_hook)
		t->writer_hook(t->writer_hook_ud);
	r = build_document(tl, true, &doc);
	if (r == 0) {
		s = json_object_to_json_string_length(
			doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
		r = s ? tl_export_write_atomic(dir, file, s, len) : -ENOMEM;
	}
	if (r == 0) {
		res->bytes = len;
		res->findings = array_len(doc, "findings");
		/* The document is durable, so the journal is redundant (a restart
		 * that finds both drops the journal). Emptying it here spares the
		 * agent's loop the freeing of its blocks at the unlink: ~15 ms
		 * per 10 MB on ext4. Failing, the unlink frees them. */
		int q = truncate(journal, 0);

		(void)q;
	}
	res->err = -r;
	res->done = 1;
	/* The document borrows the snapshot's events: it is never freed. */
	_exit(r == 0 ? 0 : (-r > 0 && -r < 256 ? -r : EIO));
}

/* 1 once reaped (*ret_err: 0 or the errno the writer failed with), 0 while
 * it runs. */
static int writer_reap(struct writer *w, int *ret_err)
{
	int status;
	pid_t p;

	do
		p = waitpid(w->pid, &status, WNOHANG);
	while (p < 0 && errno == EINTR);
	if (p == 0)
		return 0;
	if (p < 0) {
		/* Reaped by someone else (SIGCHLD ignored): the page still says
		 * how it ended. */
		*ret_err = w->res->done ? w->res->err : errno;
	} else if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && w->res->done && w->res->err == 0) {
		*ret_err = 0;
	} else {
		*ret_err = WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : EIO;
	}
	w->pid = -1;
	return 1;
}

static void writer_finish(struct timeline *tl, int err)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	int r = -err;

	if (r == 0)
		r = closed_add(t, w->ns, w->name, tl->uid, w->path, w->res->bytes, tl_now_real_ns(),
			       timeline_started(tl), tl->n, (size_t)w->res->findings);
	if (r == 0) {
		tl_metric_add(M_LATE, NULL, w->late);
		close_done(tl);
		return;
	}
	/* Not written: what was held aside joins the timeline (already
	 * journaled, hence replaying), and the close is retried. */
	tl->writer = NULL;
	tl->loss.kernel += w->held_kernel;
	tl->loss.disk += w->held_disk;
	tl->loss.dropped += w->held_dropped;
	tl->replaying = true;
	for (size_t i = 0; i < json_object_array_length(w->held); i++)
		replay_record(tl, json_object_array_get_idx(w->held, i));
	tl->replaying = false;
	writer_free(t->loop, w);
	close_failed(tl);
}

/* 1 when the writer is done (tl may be freed), 0 while it runs. */
static int writer_check(struct timeline *tl)
{
	int err = 0;

	if (writer_reap(tl->writer, &err) == 0)
		return 0;
	writer_finish(tl, err);
	return 1;
}

static int writer_pidfd_cb(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
			   void *userdata)
{
	writer_check(userdata);
	return 0;
}

static void writer_poll_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_,
			   void *userdata)
{
	writer_check(userdata);
}

/* Forks the writer of tl's document. The loop's share is the fork (page
 * tables copied, memory shared copy-on-write) and a few syscalls,
 * whatever the size of the document. */
static int writer_start(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	char file[400], dir[PATH_MAX], path[PATH_MAX], journal[PATH_MAX];
	const char *ns = meta_name_ok(tl, "namespace"), *name = meta_name_ok(tl, "name");
	struct writer *w;
	int r;

	r = doc_location(tl, dir, sizeof(dir), file, sizeof(file), path, sizeof(path));
	if (r < 0)
		return r;
	r = snprintf(journal, sizeof(journal), "%s/%s.jsonl", t->journal_dir, tl->uid);
	if (r < 0 || (size_t)r >= sizeof(journal))
		return -ENAMETOOLONG;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->pid = -1;
	w->pidfd = -1;
	w->ns = ns ? strdup(ns) : NULL;
	w->name = name ? strdup(name) : NULL;
	w->path = strdup(path);
	w->held = json_object_new_array();
	if ((ns && !w->ns) || (name && !w->name) || !w->path || !w->held) {
		r = -ENOMEM;
		goto fail;
	}
	w->res = mmap(NULL, sizeof(*w->res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (w->res == MAP_FAILED) {
		w->res = NULL;
		r = -errno;
		goto fail;
	}
	w->pid = fork();
	if (w->pid < 0) {
		r = -errno;
		goto fail;
	}
	if (w->pid == 0)
		writer_main(tl, w->res, dir, file, journal);
	/* The child is ours and not reaped until we do: no pid reuse. */
	w->pidfd = (int)syscall(SYS_pidfd_open, w->pid, 0);
	if (w->pidfd >= 0) {
		r = tl_loop_add_io(t->loop, w->pidfd, EPOLLIN, writer_pidfd_cb, tl);
		if (r == 0)
			w->pidfd_on_loop = true;
	}
	if (!w->pidfd_on_loop) {
		r = tl_loop_add_timer(t->loop, WRITER_POLL_MS, WRITER_POLL_MS, writer_poll_cb, tl,
				      &w->poll_timer);
		if (r < 0)
			goto fail;
	}
	tl->writer = w;
	return 0;
fail:
	writer_free(t->loop, w);
	return r;
}

/* Held aside while closing (see timeline.h); takes rec. */
static void hold_record(struct timeline *tl, struct json_object *rec)
{
	struct writer *w = tl->writer;

	w->late++;
	if (!rec || json_object_array_length(w->held) >= tl->store->max_events) {
		w->held_dropped++;
		json_object_put(rec);
		return;
	}
	if (json_object_array_add(w->held, json_object_get(rec)) < 0) {
		json_object_put(rec);
		json_object_put(rec);
		w->held_dropped++;
		return;
	}
	journal_write(tl, rec);
}

static void close_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct timeline *tl = userdata;

	if (tl->writer)
		return;
	if (writer_start(tl) == 0)
		return;
	/* No writer process (process or memory limits): write on the loop
	 * rather than not at all. */
	if (timeline_write(tl) < 0) {
		close_failed(tl);
		return;
	}
	close_done(tl);
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
				/* a negative fd (no pidfd) makes poll a sleep */
				struct pollfd p = { .fd = tl->writer->pidfd, .events = POLLIN };
				uint64_t now = tl_now_mono_ms();
				uint64_t left = deadline > now ? deadline - now : 0;

				if (writer_check(tl) || left == 0)
					break;
				if (left > (p.fd < 0 ? WRITER_POLL_MS : INT_MAX))
					left = p.fd < 0 ? WRITER_POLL_MS : INT_MAX;
				if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
					break;
			}
			tl = next;
		}
	}
}

/* ---- replay ---- */

static int replay_record(void *userdata, struct json_object *rec)
{
	struct timeline *tl = userdata;
	const char *k = obj_str(rec, "k");
	struct json_object *v;
	int64_t ns;

	if (!k)
		return 0;
	if (strcmp(k, "ev") == 0) {
		struct tl_event ev;
		int r;

		if (!json_object_object_get_ex(rec, "e", &v) || tl_event_from_json(v, &ev) < 0) {
			tl->replay_bad++;
			return 0;
		}
		ev.cgroup_id = (uint64_t)obj_int(rec, "cg", 0);
		r = timeline_add(tl, &ev);
		tl_event_clear(&ev);
		return r < 0 ? r : 0;
	}
	if (strcmp(k, "meta") == 0) {
		if (json_object_object_get_ex(rec, "m", &v) && json_object_is_type(v, json_type_object))
			return timeline_set_meta(tl, v);
		return 0;
	}
	if (strcmp(k, "loss") == 0) {
#define MAXOF(field, key) do { \
		int64_t x = obj_int(rec, key, 0); \
		if (x > 0 && (uint64_t)x > tl->loss.field) \
			tl->loss.field = (uint64_t)x; \
	} while (0)
		MAXOF(kernel, "kernel");
		MAXOF(aggregated, "aggregated");
		MAXOF(dropped, "dropped");
		MAXOF(disk, "disk");
		MAXOF(restarts, "restarts");
		MAXOF(unreadable, "unreadable");
#undef MAXOF
		return 0;
	}
	if (strcmp(k, "gone") == 0) {
		if (!tl->deleted && tl_time_parse(obj_str(rec, "t"), &ns) == 0)
			start_linger(tl, ns);
		return 0;
	}
	if (strcmp(k, "open") == 0) {
		if (tl_time_parse(obj_str(rec, "opened"), &ns) == 0)
			tl->opened_ns = ns;
		if (tl_time_parse(obj_str(rec, "since"), &ns) == 0)
			tl->recording_since_ns = ns;
		return 0;
	}
	if (strcmp(k, "gap") == 0) {
		if (!tl->gaps)
			tl->gaps = json_object_new_array();
		if (tl->gaps) {
			struct json_object *g = json_object_new_object();

			if (g && obj_str(rec, "from") && obj_str(rec, "to")) {
				json_object_object_add(g, "from", json_object_new_string(obj_str(rec, "from")));
				json_object_object_add(g, "to", json_object_new_string(obj_str(rec, "to")));
				json_object_array_add(tl->gaps, g);
			} else {
				json_object_put(g);
			}
		}
		return 0;
	}
	return 0;
}

static int replay_one(struct tl_timelines *t, const char *uid)
{
	char path[PATH_MAX], from[TL_TIME_STRLEN], to[TL_TIME_STRLEN];
	struct timeline *tl;
	struct json_object *gap;
	struct stat st;
	uint64_t bad = 0, torn;
	int64_t last_ns;
	int r;

	r = join_path(path, sizeof(path), t->journal_dir, uid);
	if (r < 0)
		return r;
	if (strlen(path) + 7 > sizeof(path))
		return -ENAMETOOLONG;
	strcat(path, ".jsonl");
	if (stat(path, &st) < 0)
		return -errno;
	if (find_closed(t, uid)) {
		/* Crashed between writing the document and removing the journal. */
		return unlink(path) < 0 ? -errno : 0;
	}
	last_ns = (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec;
	tl = timeline_alloc(t, uid);
	if (!tl)
		return -ENOMEM;
	tl->replaying = true;
	r = tl_journal_replay(t->journal_dir, uid, replay_record, tl, &bad);
	tl->replaying = false;
	if (r < 0)
		note_disk_error(tl);
	r = tl_journal_open(t->journal_dir, uid, &tl->journal);
	if (r < 0)
		note_disk_error(tl);
	/* Records that could not be read back are lost events: count each
	 * once. A torn last line (cut off by the open just now) is gone from
	 * the file; the others stay and are met again at the next replay. */
	bad += tl->replay_bad;
	torn = tl->journal && tl_journal_bytes(tl->journal) < (uint64_t)st.st_size && bad > 0;
	if (bad > tl->loss.unreadable) {
		tl_metric_add(M_DISK_ERR, NULL, bad - tl->loss.unreadable);
		tl->loss.disk += bad - tl->loss.unreadable;
	}
	tl->loss.unreadable = bad - torn;
	/* The agent was not recording between its last journal write and now:
	 * whatever happened then is unknown, so say so. */
	tl->loss.restarts++;
	tl->loss_journaled = (struct loss){ 0 };
	/* The file's mtime comes from the kernel's coarse clock, up to a tick
	 * behind the time of the last event written: no recorded event may
	 * fall inside the gap. */
	if (tl->n > 0 && tl->ev[tl->n - 1].time_ns > last_ns)
		last_ns = tl->ev[tl->n - 1].time_ns;
	gap = json_object_new_object();
	if (gap) {
		json_object_object_add(gap, "k", json_object_new_string("gap"));
		json_object_object_add(gap, "from", json_object_new_string(tl_time_format(last_ns, from)));
		json_object_object_add(gap, "to",
				       json_object_new_string(tl_time_format(t->recording_since_ns, to)));
		replay_record(tl, gap);
		journal_write(tl, gap);
	}
	journal_loss(tl);
	if (tl->deleted) {
		int64_t left_ms = (tl->deleted_ns + (int64_t)t->linger_s * NS_PER_S - tl_now_real_ns()) / 1000000;

		if (left_ms < 1)
			left_ms = 1;
		if (tl_loop_add_timer(t->loop, (uint64_t)left_ms, 0, close_cb, tl, &tl->close_timer) < 0)
			tl->close_timer = NULL;
	}
	return 0;
}

static int replay_all(struct tl_timelines *t)
{
	DIR *d = opendir(t->journal_dir);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char uid[TL_UID_MAX];
		size_t n = strlen(de->d_name);

		if (n <= 6 || strcmp(de->d_name + n - 6, ".jsonl") != 0 || n - 6 >= sizeof(uid))
			continue;
		memcpy(uid, de->d_name, n - 6);
		uid[n - 6] = '\0';
		if (!uid_ok(uid) || find_open(t, uid))
			continue;
		if (replay_one(t, uid) < 0)
			note_disk_error(NULL);
	}
	closedir(d);
	return 0;
}

/* ---- timers ---- */

static void fsync_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct tl_timelines *t = userdata;

	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			journal_loss(tl);
			if (tl_journal_sync(tl->journal) < 0)
				note_disk_error(tl);
			/* A linger timer that could not be created: retry here. */
			if (tl->deleted && !tl->close_timer)
				tl_loop_add_timer(t->loop, 1, 0, close_cb, tl, &tl->close_timer);
		}
	}
	if (t->dying)
		tl_timer_arm(t->reap_timer, 1, 0);
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
	t->fsync_ms = cfg->fsync_ms ? cfg->fsync_ms : DEFAULT_FSYNC_MS;
	t->retention_bytes = cfg->retention_bytes;
	t->retention_hours = cfg->retention_hours;
	t->close_wait_ms = cfg->close_wait_ms ? cfg->close_wait_ms : DEFAULT_CLOSE_WAIT_MS;
	t->writer_hook = cfg->writer_hook;
	t->writer_hook_ud = cfg->writer_hook_ud;
	t->recording_since_ns = cfg->recorder.recording_since_ns ? cfg->recorder.recording_since_ns
								  : tl_now_real_ns();
	t->agent_version = dup_or_empty(cfg->recorder.agent_version);
	t->node = dup_or_empty(cfg->recorder.node);
	t->kernel = dup_or_empty(cfg->recorder.kernel);
	t->config_digest = dup_or_empty(cfg->recorder.config_digest);
	if (!t->agent_version || !t->node || !t->kernel || !t->config_digest) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; cfg->recorder.probes && cfg->recorder.probes[i]; i++) {
		char **n = realloc(t->probes, (t->n_probes + 1) * sizeof(*n));

		if (!n) {
			r = -ENOMEM;
			goto fail;
		}
		t->probes = n;
		t->probes[t->n_probes] = strdup(cfg->recorder.probes[i]);
		if (!t->probes[t->n_probes]) {
			r = -ENOMEM;
			goto fail;
		}
		t->n_probes++;
	}

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
	tl_metric_describe(M_JOURNAL, TL_METRIC_GAUGE, "Bytes in the journals of open timelines.");
	tl_metric_describe(M_DISK, TL_METRIC_GAUGE, "Bytes on disk: closed documents plus journals.");
	tl_metric_describe(M_DISK_ERR, TL_METRIC_COUNTER,
			   "Failed writes, fsyncs or deletions in the state directory.");
	tl_metric_describe(M_LATE, TL_METRIC_COUNTER,
			   "Events for a Pod whose timeline had already closed (ignored).");
	tl_metric_set(M_OPEN, NULL, 0);
	tl_metric_add(M_CLOSED, NULL, 0);
	tl_metric_add(M_DISK_ERR, NULL, 0);

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
	r = tl_loop_add_timer(loop, 0, 0, reap_cb, t, &t->reap_timer);
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
	while (t->dying) {
		struct timeline *next = t->dying->hnext;

		timeline_free(t->dying);
		t->dying = next;
	}
	for (size_t i = 0; i < t->n_closed; i++)
		closed_clear(&t->closed[i]);
	free(t->closed);
	tl_timer_free(t->reap_timer);
	tl_timer_free(t->fsync_timer);
	tl_timer_free(t->retention_timer);
	for (size_t i = 0; i < t->n_probes; i++)
		free(t->probes[i]);
	free(t->probes);
	free(t->agent_version);
	free(t->node);
	free(t->kernel);
	free(t->config_digest);
	free(t->timelines_dir);
	free(t->journal_dir);
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
	return timeline_open(t, uid, ret);
}

static struct json_object *event_record(const struct tl_event *ev)
{
	struct json_object *rec = json_object_new_object(), *e = tl_event_to_json(ev, true);

	if (!rec || !e) {
		json_object_put(rec);
		json_object_put(e);
		return NULL;
	}
	json_object_object_add(rec, "k", json_object_new_string("ev"));
	json_object_object_add(rec, "e", e);
	if (ev->cgroup_id)
		json_object_object_add(rec, "cg", json_object_new_int64((int64_t)ev->cgroup_id));
	return rec;
}

int tl_timelines_add(struct tl_timelines *t, const struct tl_event *ev)
{
	struct timeline *tl;
	struct json_object *rec;
	int r;

	if (!ev->pod_uid[0])
		return 0;
	r = get_or_open(t, ev->pod_uid, &tl);
	if (r == -ESTALE)
		return 0;
	if (r < 0)
		return r;
	if (tl->writer) {
		hold_record(tl, event_record(ev));
		return 0;
	}
	r = timeline_add(tl, ev);
	if (r <= 0)
		return r;
	rec = event_record(ev);
	if (!rec) {
		note_disk_error(tl); /* not journaled: a restart would lose it */
		return 0;
	}
	journal_write(tl, rec);
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
		struct json_object *copy = NULL;

		hold_record(tl, json_object_deep_copy(meta, &copy, NULL) < 0 ? NULL : meta_record(copy));
		return 0;
	}
	return timeline_set_meta(tl, meta);
}

int tl_timelines_close_missing(struct tl_timelines *t, bool (*exists)(void *ud, const char *uid),
			       void *ud)
{
	char tbuf[TL_TIME_STRLEN];
	int n = 0;

	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			struct json_object *rec;
			int64_t now;

			if (tl->deleted || exists(ud, tl->uid))
				continue;
			now = tl_now_real_ns();
			rec = json_object_new_object();
			if (rec) {
				json_object_object_add(rec, "k", json_object_new_string("gone"));
				json_object_object_add(rec, "t", json_object_new_string(tl_time_format(now, tbuf)));
			}
			journal_write(tl, rec);
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
				tl->loss.kernel += dropped;
			journal_loss(tl);
		}
	}
}

size_t tl_timelines_open_count(const struct tl_timelines *t)
{
	return t->n_open;
}

static struct json_object *list_item(const char *ns, const char *name, const char *uid,
				     const char *state, size_t events, size_t findings)
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
	return o;
}

int tl_timelines_list(struct tl_timelines *t, struct json_object **ret)
{
	struct json_object *root = json_object_new_object(), *arr = json_object_new_array();

	if (!root || !arr) {
		json_object_put(root);
		json_object_put(arr);
		return -ENOMEM;
	}
	json_object_object_add(root, "timelines", arr);
	for (size_t i = 0; i < t->n_closed; i++) {
		struct closed *c = &t->closed[i];
		struct json_object *o;

		if (!c->uid[0])
			continue;
		o = list_item(c->ns, c->name, c->uid, "closed", c->events, c->findings);
		if (!o || json_object_array_add(arr, o) < 0) {
			json_object_put(o);
			json_object_put(root);
			return -ENOMEM;
		}
	}
	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			struct json_object *f = build_findings(tl), *o;

			o = list_item(meta_str(tl, "namespace"), meta_str(tl, "name"), tl->uid, "open", tl->n,
				      f ? json_object_array_length(f) : 0);
			json_object_put(f);
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

int tl_timelines_get(struct tl_timelines *t, const char *ns, const char *name, const char *uid,
		     char **ret, size_t *ret_len)
{
	struct timeline *best_open = NULL;
	struct closed *best_closed = NULL;
	int64_t best = INT64_MIN;
	struct json_object *doc;
	int r;

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
			if (!name_matches(meta_str(tl, "namespace"), meta_str(tl, "name"), tl->uid, ns, name))
				continue;
			if (uid && strcmp(uid, tl->uid) != 0)
				continue;
			if ((!best_open && !best_closed) || timeline_started(tl) >= best) {
				best_open = tl;
				best = timeline_started(tl);
			}
		}
	}
	if (best_open) {
		r = build_document(best_open, false, &doc);
		if (r < 0)
			return r;
		r = serialize(doc, ret, ret_len);
		json_object_put(doc);
		return r;
	}
	if (best_closed)
		return tl_read_file(best_closed->path, DOC_READ_MAX, ret, ret_len);
	return -ENOENT;
}
