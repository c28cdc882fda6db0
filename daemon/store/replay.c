/* SPDX-License-Identifier: Apache-2.0 */
/* Replay of the journals at start (replay.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <json-c/json.h>

#include "clock.h"
#include "export-json.h"
#include "frames.h"
#include "journal.h"
#include "replay.h"

#define NS_PER_S 1000000000LL

struct replay {
	struct tl_state *s;
	uint64_t bad; /* records that were no usable record */
};

/* An E or R frame's event: unpacked (the admission reads its fields) and
 * kept or admitted. */
static int apply_event(struct replay *rp, const struct frame_rec *f)
{
	static struct tl_event ev;
	struct tl_state *s = rp->s;
	const struct state_hdr *h = &f->event.h;
	struct state_change c;
	int r;

	if (h->ctr != STATE_NO_CTR && h->ctr >= s->n_ctrs)
		return -EINVAL;
	if (tl_event_init_kind(&ev, (enum tl_kind)h->kind, (enum tl_source)h->source,
			       f->event.time_ns) < 0 ||
	    tl_event_unpack(&ev, f->event.payload, h->len, h->flags, s->strs) < 0)
		return -EINVAL;
	if (f->type == FRAME_RAW)
		r = state_insert(s, f->event.time_ns, h, f->event.payload);
	else
		r = state_admit(s, &ev, h, f->event.payload, &c);
	tl_event_clear(&ev);
	return r;
}

/* A decoded frame applied to the state: 0, -EINVAL (it does not fit the
 * state: counted), or -ENOMEM / -E2BIG (the replay stops). */
static int apply(struct replay *rp, const struct frame_rec *f)
{
	struct tl_state *s = rp->s;

	switch (f->type) {
	case FRAME_OPEN:
		s->opened_ns = f->open.opened_ns;
		s->recording_since_ns = f->open.recording_since_ns;
		return 0;
	case FRAME_STRING:
		return state_add_string(s, f->str.s, f->str.len);
	case FRAME_CTR:
		return state_add_ctr(s, &f->ctr);
	case FRAME_EVENT:
	case FRAME_RAW:
		return apply_event(rp, f);
	case FRAME_AGG:
		return state_add_agg(s, &f->agg);
	case FRAME_AGG_SET:
		return state_set_agg(s, f->agg_set.index, f->agg_set.count, f->agg_set.failed,
				     f->agg_set.interval_ms);
	case FRAME_META:
		state_set_meta(s, f->meta);
		return 0;
	case FRAME_LOSS:
		state_max_loss(s, &f->loss);
		return 0;
	case FRAME_GONE:
		state_set_gone(s, f->gone_ns);
		state_set_close_reason(s, f->reason);
		return 0;
	case FRAME_GAP:
		return state_add_gap(s, f->gap.from_ns, f->gap.to_ns);
	case FRAME_TERM:
		if (state_set_budget(s, f->term.terminating, f->term.at) < 0)
			return -EINVAL;
		if (f->term.gone)
			state_set_gone(s, f->term.gone_ns);
		state_set_close_reason(s, f->reason);
		return 0;
	default:
		return -EINVAL;
	}
}

static int replay_frame(void *userdata, const uint8_t *body, size_t len)
{
	struct replay *rp = userdata;
	struct frame_rec f;
	int r = frame_decode(body, len, rp->s->uid, &f);

	if (r == 0)
		r = apply(rp, &f);
	frame_rec_clear(&f);
	if (r == -EINVAL || r == -E2BIG) {
		rp->bad++;
		return 0;
	}
	return r;
}

/* ---- the previous format (JSON lines), replayed once after an upgrade ---- */

static const char *obj_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static int record_event(struct replay *rp, struct json_object *rec)
{
	static struct tl_event ev;
	struct json_object *v;
	struct state_hdr h;
	struct state_change c;
	uint8_t payload[TL_PAYLOAD_MAX];
	int r;

	if (!json_object_object_get_ex(rec, "e", &v) || tl_event_from_json(v, &ev) < 0)
		return -EINVAL;
	if (json_object_object_get_ex(rec, "cg", &v))
		ev.cgroup_id = (uint64_t)json_object_get_int64(v);
	r = state_pack(rp->s, &ev, &h, payload);
	if (r == 0)
		r = state_admit(rp->s, &ev, &h, payload, &c);
	tl_event_clear(&ev);
	return r;
}

static int record_meta(struct replay *rp, struct json_object *rec)
{
	struct tl_pod_meta *pm = NULL;
	struct json_object *v;
	int r;

	if (!json_object_object_get_ex(rec, "m", &v) || !json_object_is_type(v, json_type_object))
		return 0;
	r = tl_pod_meta_from_json(v, rp->s->uid, &pm);
	if (r < 0)
		return r == -EINVAL ? 0 : r;
	state_set_meta(rp->s, pm);
	tl_pod_meta_unref(pm);
	return 0;
}

static int replay_record(void *userdata, struct json_object *rec)
{
	struct replay *rp = userdata;
	struct tl_state *s = rp->s;
	const char *k = obj_str(rec, "k");
	struct json_object *v;
	int64_t ns, ns2;
	int r;

	if (!k)
		return 0;
	if (strcmp(k, "ev") == 0) {
		r = record_event(rp, rec);
		if (r == -EINVAL || r == -E2BIG) {
			rp->bad++;
			return 0;
		}
		return r;
	}
	if (strcmp(k, "meta") == 0)
		return record_meta(rp, rec);
	if (strcmp(k, "loss") == 0) {
		struct state_loss l = { 0 };
#define GET(field, key) \
		if (json_object_object_get_ex(rec, #field, &v) && json_object_get_int64(v) > 0) \
			l.field = (uint64_t)json_object_get_int64(v);
		STATE_LOSS_FIELDS(GET)
#undef GET
		state_max_loss(s, &l);
		return 0;
	}
	if (strcmp(k, "gone") == 0) {
		if (tl_time_parse(obj_str(rec, "t"), &ns) == 0)
			state_set_gone(s, ns);
		return 0;
	}
	if (strcmp(k, "open") == 0) {
		if (tl_time_parse(obj_str(rec, "opened"), &ns) == 0)
			s->opened_ns = ns;
		if (tl_time_parse(obj_str(rec, "since"), &ns) == 0)
			s->recording_since_ns = ns;
		return 0;
	}
	if (strcmp(k, "gap") == 0) {
		if (tl_time_parse(obj_str(rec, "from"), &ns) == 0 &&
		    tl_time_parse(obj_str(rec, "to"), &ns2) == 0)
			return state_add_gap(s, ns, ns2);
		return 0;
	}
	return 0;
}

int replay_journal(const char *dir, const char *uid, bool legacy, struct tl_state *s,
		   uint64_t *ret_bad)
{
	struct replay rp = { .s = s };
	uint64_t bad = 0;
	int r;

	if (legacy)
		r = tl_journal_replay_jsonl(dir, uid, replay_record, &rp, &bad);
	else
		r = tl_journal_replay(dir, uid, replay_frame, &rp, &bad);
	*ret_bad = bad + rp.bad;
	return r;
}

uint64_t replay_count_bad(struct tl_state *s, uint64_t bad, bool torn, bool legacy)
{
	uint64_t fresh = bad > s->loss.unreadable ? bad - s->loss.unreadable : 0;

	s->loss.disk += fresh;
	s->loss.unreadable = legacy ? 0 : bad - torn;
	return fresh;
}

static bool uid_ok(const char *uid)
{
	return strlen(uid) < TL_UID_MAX && tl_export_name_ok(uid);
}

int replay_scan(const char *dir, int (*cb)(void *ud, const char *uid, bool legacy, int64_t mtime_ns),
		void *ud)
{
	static const char *const exts[] = { TL_JOURNAL_LEGACY_EXT, TL_JOURNAL_EXT };

	for (size_t e = 0; e < 2; e++) {
		DIR *d = opendir(dir);
		struct dirent *de;
		size_t xl = strlen(exts[e]);

		if (!d)
			return -errno;
		while ((de = readdir(d))) {
			char uid[TL_UID_MAX], path[PATH_MAX];
			size_t n = strlen(de->d_name);
			struct stat st;
			int q;

			if (n <= xl || strcmp(de->d_name + n - xl, exts[e]) != 0 || n - xl >= sizeof(uid))
				continue;
			memcpy(uid, de->d_name, n - xl);
			uid[n - xl] = '\0';
			if (!uid_ok(uid))
				continue;
			q = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			if (q < 0 || (size_t)q >= sizeof(path) || stat(path, &st) < 0)
				continue;
			cb(ud, uid, e == 0, (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec);
		}
		closedir(d);
	}
	return 0;
}
