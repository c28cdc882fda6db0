/* SPDX-License-Identifier: Apache-2.0 */
/* Replay of the journals at start (docs/journal-format.md): binary frames
 * and the previous JSON-lines format. */
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

int replay_frame(void *userdata, const uint8_t *body, size_t len)
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
		a.j_count = a.count;
		a.j_failed = a.failed;
		a.j_interval_ms = a.interval_ms;
		return new_agg(tl, &a, &na);
	}
	case FR_AGG_SET: {
		uint64_t i = rd_u(&r), count = rd_u(&r), failed = rd_u(&r);
		int64_t interval_ms = rd_i(&r);
		struct agg *a;

		if (r.bad || i >= tl->s.n_aggs || failed > count || interval_ms < 0)
			goto bad;
		a = &tl->s.aggs[i];
		a->count = a->j_count = count;
		a->failed = a->j_failed = failed;
		a->interval_ms = a->j_interval_ms = interval_ms;
		return 0;
	}
	case FR_META: {
		struct json_tokener *tok = json_tokener_new();
		struct json_object *m = NULL;
		struct tl_pod_meta *pm = NULL;

		if (!tok)
			return -ENOMEM;
		m = json_tokener_parse_ex(tok, (const char *)body + 1, (int)(len - 1));
		json_tokener_free(tok);
		/* this agent's records and the ones before the typed metadata
		 * (the API model's JSON): one decoder reads both */
		q = tl_pod_meta_from_json(m, tl->s.uid, &pm);
		json_object_put(m);
		if (q == -EINVAL)
			goto bad;
		if (q < 0)
			return q;
		q = timeline_set_meta(tl, pm);
		tl_pod_meta_unref(pm);
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
		struct tl_pod_meta *pm = NULL;
		int r;

		if (!json_object_object_get_ex(rec, "m", &v) ||
		    !json_object_is_type(v, json_type_object))
			return 0;
		r = tl_pod_meta_from_json(v, tl->s.uid, &pm);
		if (r < 0)
			return r == -EINVAL ? 0 : r;
		r = timeline_set_meta(tl, pm);
		tl_pod_meta_unref(pm);
		return r;
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

int replay_all(struct tl_timelines *t)
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
