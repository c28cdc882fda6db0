/* SPDX-License-Identifier: Apache-2.0 */
/* One timeline's state and budget (state.h): the record arena and its
 * sorted index, the aggregate entries, the container and string tables,
 * admission with duplicates and the budget, snapshots.
 *
 * Memory: an event is a 4-byte header plus its packed payload in the
 * arena and a 12-byte index entry; bench-timeline measures ~40-70 bytes
 * per event. Nothing is freed per event, so freeing a timeline is a few
 * free() calls. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "mem.h"
#include "state.h"
#include "findings-model.h"

/* ---- the record arena ---- */

/* In front of the arena: who shares it, and the size of its buffer
 * (mem_grow's cap, this header included). */
struct arena_hdr {
	uint32_t refs;
	uint32_t _pad;
	size_t cap;
};

static struct arena_hdr *arena_hdr(uint8_t *arena)
{
	return (struct arena_hdr *)(void *)(arena - sizeof(struct arena_hdr));
}

static uint8_t *arena_ref(uint8_t *arena)
{
	if (arena)
		arena_hdr(arena)->refs++;
	return arena;
}

static void arena_unref(uint8_t *arena)
{
	struct arena_hdr *h = arena ? arena_hdr(arena) : NULL;

	if (h && --h->refs == 0)
		mem_free(h, h->cap);
}

static int arena_reserve(struct tl_state *s, size_t need)
{
	struct arena_hdr *h;
	size_t cap;

	if (need <= s->acap)
		return 0;
	if (s->arena && arena_hdr(s->arena)->refs == 1) {
		h = arena_hdr(s->arena);
		cap = h->cap;
		h = mem_grow(h, &cap, sizeof(*h) + s->alen, sizeof(*h) + need);
		if (!h)
			return -ENOMEM;
	} else {
		/* Shared with a snapshot (or new): a copy of our own. */
		cap = 0;
		h = mem_grow(NULL, &cap, 0, sizeof(*h) + need);
		if (!h)
			return -ENOMEM;
		h->refs = 1;
		if (s->arena) {
			memcpy(h + 1, s->arena, s->alen);
			arena_unref(s->arena);
		}
	}
	h->cap = cap;
	s->arena = (uint8_t *)(h + 1);
	s->acap = cap - sizeof(*h);
	return 0;
}

/* ---- lifetime ---- */

int state_init(struct tl_state *s, const char *uid, uint32_t max_events, int64_t opened_ns,
	       int64_t recording_since_ns)
{
	memset(s, 0, sizeof(*s));
	if (tl_strtab_new(&s->strs) < 0)
		return -ENOMEM;
	tl_copy_str(s->uid, sizeof(s->uid), uid);
	s->max_events = max_events;
	s->opened_ns = opened_ns;
	s->recording_since_ns = recording_since_ns;
	s->last_ctr = -1;
	return 0;
}

void state_release(struct tl_state *s)
{
	if (!s)
		return;
	tl_pod_meta_unref(s->meta);
	free(s->gaps);
	tl_strtab_free(s->strs);
	free(s->ctrs);
	arena_unref(s->arena);
	mem_free(s->ev, s->cap * sizeof(*s->ev));
	free(s->aggs);
	memset(s, 0, sizeof(*s));
}

static void *dup_mem(const void *p, size_t n)
{
	void *c = malloc(n ? n : 1);

	if (c && n)
		memcpy(c, p, n);
	return c;
}

int state_copy(const struct tl_state *s, struct tl_state *ret)
{
	size_t bytes;

	*ret = *s;
	ret->meta = tl_pod_meta_ref(s->meta);
	ret->strs = NULL;
	ret->ctrs = dup_mem(s->ctrs, s->n_ctrs * sizeof(*s->ctrs));
	ret->cap_ctrs = s->n_ctrs;
	/* shared: a reference, not a copy (see arena_reserve) */
	ret->arena = arena_ref(s->arena);
	ret->acap = s->alen;
	ret->ev = mem_dup(s->ev, s->n * sizeof(*s->ev), &bytes);
	ret->cap = bytes / sizeof(*s->ev);
	ret->aggs = dup_mem(s->aggs, s->n_aggs * sizeof(*s->aggs));
	ret->cap_aggs = s->n_aggs;
	ret->gaps = dup_mem(s->gaps, s->n_gaps * sizeof(*s->gaps));
	if (!ret->ctrs || !ret->ev || !ret->aggs || !ret->gaps ||
	    tl_strtab_clone(s->strs, &ret->strs) < 0) {
		if (!ret->ev)
			ret->cap = 0;
		state_release(ret);
		return -ENOMEM;
	}
	return 0;
}

size_t state_memory(const struct tl_state *s)
{
	return s->acap + s->cap * sizeof(*s->ev) + s->cap_aggs * sizeof(*s->aggs) +
	       s->cap_ctrs * sizeof(*s->ctrs) + s->n_gaps * sizeof(*s->gaps) +
	       tl_strtab_memory(s->strs);
}

/* ---- the index ---- */

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

static int insert_ref(struct tl_state *s, int64_t t, uint32_t ref)
{
	size_t pos;

	if (s->n == s->cap) {
		size_t bytes = s->cap * sizeof(*s->ev);
		struct state_entry *n = mem_grow(s->ev, &bytes, s->n * sizeof(*n), (s->n + 1) * sizeof(*n));

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

int state_insert(struct tl_state *s, int64_t t, const struct state_hdr *h, const uint8_t *payload)
{
	size_t off = s->alen, n;

	if (off + STATE_HDR_MAX + h->len >= STATE_AGG_REF)
		return -E2BIG;
	if (arena_reserve(s, off + STATE_HDR_MAX + h->len) < 0)
		return -ENOMEM;
	n = state_hdr_put(s->arena + off, h);
	memcpy(s->arena + off + n, payload, h->len);
	if (insert_ref(s, t, (uint32_t)off) < 0)
		return -ENOMEM;
	s->alen = off + n + h->len;
	return 0;
}

/* ---- duplicates ---- */

static bool same_record(const struct tl_state *s, size_t i, const struct state_hdr *h,
			const uint8_t *payload)
{
	struct state_hdr a;
	const uint8_t *ap = state_record(s, i, &a);

	return ap && a.kind == h->kind && a.source == h->source && a.flags == h->flags &&
	       a.ctr == h->ctr && a.len == h->len && memcmp(ap, payload, h->len) == 0;
}

static bool is_duplicate(const struct tl_state *s, int64_t t, const struct state_hdr *h,
			 const uint8_t *payload)
{
	size_t i;

	/* Events mostly arrive in time order: nothing held at t yet. */
	if (s->n == 0 || s->ev[s->n - 1].time_ns < t)
		return false;
	i = upper_bound(s, t);

	for (size_t k = 0; i > 0 && k < STATE_DEDUPE_SCAN_MAX; i--, k++) {
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
static bool is_restated(const struct tl_state *s, const struct state_hdr *h, const uint8_t *payload)
{
	if (!s->loss.restarts || h->source != TL_SRC_API ||
	    (h->kind != TL_KIND_POD_DELETION_REQUESTED && h->kind != TL_KIND_CONTAINER_TERMINATED))
		return false;
	for (size_t i = 0; i < s->n; i++)
		if (same_record(s, i, h, payload))
			return true;
	return false;
}

/* ---- aggregate entries ---- */

/* Appends entry a; *retired tells which entry stopped taking events to
 * make room for it among the recent ones (SIZE_MAX: none). */
static int agg_append(struct tl_state *s, const struct state_agg *a, size_t *retired)
{
	if (s->n_aggs == s->cap_aggs) {
		size_t ncap = s->cap_aggs ? s->cap_aggs * 2 : 16;
		struct state_agg *n = realloc(s->aggs, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		s->aggs = n;
		s->cap_aggs = ncap;
	}
	if (insert_ref(s, a->bucket_ns, STATE_AGG_REF | (uint32_t)s->n_aggs) < 0)
		return -ENOMEM;
	*retired = s->n_recent >= STATE_AGG_RECENT ? s->recent[s->n_recent % STATE_AGG_RECENT]
						   : SIZE_MAX;
	s->aggs[s->n_aggs] = *a;
	s->recent[s->n_recent % STATE_AGG_RECENT] = s->n_aggs;
	s->n_recent++;
	s->n_aggs++;
	return 0;
}

int state_add_agg(struct tl_state *s, const struct state_agg *a)
{
	size_t retired;

	if (a->ctr != STATE_NO_CTR && a->ctr >= s->n_ctrs)
		return -EINVAL;
	if (a->kind >= TL_KIND_MAX || a->source >= TL_SRC_MAX)
		return -EINVAL;
	return agg_append(s, a, &retired);
}

int state_set_agg(struct tl_state *s, size_t i, uint64_t count, uint64_t failed, int64_t interval_ms)
{
	if (i >= s->n_aggs || failed > count || interval_ms < 0)
		return -EINVAL;
	s->aggs[i].count = count;
	s->aggs[i].failed = failed;
	s->aggs[i].interval_ms = interval_ms;
	return 0;
}

/* Past the cap: fold the event into its per-second bucket. 1 folded (c
 * says where), 0 dropped. */
static int aggregate(struct tl_state *s, int64_t t, const struct state_hdr *h, bool failed,
		     size_t hard, struct state_change *c)
{
	int64_t bucket = t - (((t % STATE_AGG_INTERVAL_NS) + STATE_AGG_INTERVAL_NS) % STATE_AGG_INTERVAL_NS);
	size_t have = s->n_recent < STATE_AGG_RECENT ? s->n_recent : STATE_AGG_RECENT;
	size_t idx = SIZE_MAX;

	for (size_t k = 0; k < have; k++) {
		size_t i = s->recent[(s->n_recent - 1 - k) % STATE_AGG_RECENT];
		const struct state_agg *a = &s->aggs[i];

		if (a->bucket_ns == bucket && a->source == h->source && a->kind == h->kind &&
		    a->ctr == h->ctr) {
			idx = i;
			break;
		}
	}
	/* No room for a new bucket: widen the latest bucket of the same kind
	 * to reach this event instead of losing it (sparse events, such as a
	 * long-lived Pod's probes, would otherwise each need one). */
	for (size_t k = 0; idx == SIZE_MAX && s->n >= hard && k < have; k++) {
		size_t i = s->recent[(s->n_recent - 1 - k) % STATE_AGG_RECENT];
		struct state_agg *a = &s->aggs[i];
		int64_t span_ms;

		if (a->bucket_ns > t || a->source != h->source || a->kind != h->kind || a->ctr != h->ctr)
			continue;
		idx = i;
		span_ms = (t - a->bucket_ns) / 1000000 + 1;
		if (a->interval_ms < span_ms)
			a->interval_ms = span_ms;
	}
	if (idx == SIZE_MAX) {
		struct state_agg n = { .bucket_ns = bucket, .interval_ms = STATE_AGG_INTERVAL_NS / 1000000,
				       .count = 1, .failed = failed, .ctr = h->ctr,
				       .source = h->source, .kind = h->kind };

		if (s->n >= hard)
			return 0;
		if (agg_append(s, &n, &c->retired) < 0)
			return -ENOMEM;
		c->agg_retired = c->retired != SIZE_MAX;
		c->agg = s->n_aggs - 1;
		c->agg_made = true;
		return 1;
	}
	s->aggs[idx].count++;
	if (failed)
		s->aggs[idx].failed++;
	c->agg = idx;
	return 1;
}

/* ---- admission ---- */

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

/* The findings' one rule (tl_http_failed): a proxy's failure flag, a
 * non-OK gRPC status over HTTP 200, no response, a 5xx, an error. */
static bool http_failed(const struct tl_event *ev)
{
	int64_t status = 0, grpc = -1;

	if (ev->kind != TL_KIND_HTTP_REQUEST)
		return false;
	if (!tl_event_get_i(ev, TL_F_HTTP_STATUS, &status) || status < 0 || status >= 1000)
		status = 0;
	if (!tl_event_get_i(ev, TL_F_HTTP_GRPC_STATUS, &grpc) || grpc < 0 || grpc > INT32_MAX)
		grpc = -1;
	return tl_http_failed((int)status, (int)grpc, tl_event_get_s(ev, TL_F_HTTP_RESPONSE_FLAGS),
			      tl_event_get_s(ev, TL_F_HTTP_ERROR));
}

int state_admit(struct tl_state *s, const struct tl_event *ev, const struct state_hdr *h,
		const uint8_t *payload, struct state_change *ret)
{
	size_t soft = s->max_events, hard = 2 * (size_t)s->max_events;
	bool lifecycle = tl_kind_has(ev->kind, TL_KF_LIFECYCLE), keep_lifecycle;
	struct state_change c = { .outcome = STATE_DUPLICATE, .retired = SIZE_MAX };
	size_t base, used;
	int r;

	if (is_duplicate(s, ev->time_ns, h, payload) || is_restated(s, h, payload)) {
		*ret = c;
		return 0;
	}
	if (!s->terminating && starts_termination(ev)) {
		s->terminating = true;
		s->n_at_termination = s->n;
	}
	base = s->terminating ? s->n_at_termination : 0;
	used = s->n - base;
	keep_lifecycle = s->terminating ? lifecycle : (lifecycle && ev->source == TL_SRC_API);
	/* The first pod.deleted is kept past every limit: it ends the timeline,
	 * and a replay must see it too. */
	if (used < soft || (keep_lifecycle && used < hard) ||
	    (!s->gone && ev->kind == TL_KIND_POD_DELETED)) {
		r = state_insert(s, ev->time_ns, h, payload);
		if (r < 0)
			return r;
		c.outcome = STATE_KEPT;
		if (ev->kind == TL_KIND_POD_DELETION_REQUESTED &&
		    (!s->deletion_ns || ev->time_ns < s->deletion_ns))
			s->deletion_ns = ev->time_ns;
	} else if (keep_lifecycle) {
		s->loss.dropped++;
		c.outcome = STATE_DROPPED;
	} else {
		r = aggregate(s, ev->time_ns, h, http_failed(ev), base + hard, &c);
		if (r < 0)
			return r;
		if (r > 0) {
			s->loss.aggregated++;
			c.outcome = STATE_FOLDED;
		} else {
			s->loss.dropped++;
			c.outcome = STATE_DROPPED;
		}
	}
	/* Without the API server (--no-api) the removal of the Pod's last
	 * container cgroup is the only sign that it is gone. */
	if ((c.outcome == STATE_KEPT || c.outcome == STATE_FOLDED) &&
	    tl_kind_has(ev->kind, TL_KF_ENDS_POD) && (ev->kind == TL_KIND_POD_DELETED || !s->meta))
		c.gone = state_set_gone(s, ev->time_ns);
	*ret = c;
	return 0;
}

/* ---- containers ---- */

static int64_t intern_opt(struct tl_strtab *tab, const char *str)
{
	return str && *str ? tl_strtab_intern(tab, str, strlen(str)) : (int64_t)UINT32_MAX;
}

static void remember_ctr(struct tl_state *s, const struct tl_event *ev, uint32_t i)
{
	s->last_ctr = (int)i;
	memcpy(s->last_cid, ev->container_id, sizeof(s->last_cid));
	memcpy(s->last_cname, ev->container, sizeof(s->last_cname));
}

static int ctrs_reserve(struct tl_state *s)
{
	uint32_t ncap;
	struct state_ctr *n;

	if (s->n_ctrs < s->cap_ctrs)
		return 0;
	ncap = s->cap_ctrs ? s->cap_ctrs * 2 : 8;
	n = realloc(s->ctrs, ncap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	s->ctrs = n;
	s->cap_ctrs = ncap;
	return 0;
}

/* The container table index of ev's (id, name) pair, added if new. */
static uint16_t container_index(struct tl_state *s, const struct tl_event *ev)
{
	int64_t id, name;

	if (!ev->container_id[0] && !ev->container[0])
		return STATE_NO_CTR;
	if (s->last_ctr >= 0 && strcmp(ev->container_id, s->last_cid) == 0 &&
	    strcmp(ev->container, s->last_cname) == 0 &&
	    (!ev->cgroup_id || s->ctrs[s->last_ctr].cgroup_id))
		return (uint16_t)s->last_ctr;
	id = intern_opt(s->strs, ev->container_id);
	name = intern_opt(s->strs, ev->container);
	if (id < 0 || name < 0)
		return STATE_NO_CTR;
	for (uint32_t i = 0; i < s->n_ctrs; i++) {
		struct state_ctr *c = &s->ctrs[i];

		if (c->id_s == (uint32_t)id && c->name_s == (uint32_t)name) {
			if (!c->cgroup_id && ev->cgroup_id)
				c->cgroup_id = ev->cgroup_id; /* rare: not journaled again */
			remember_ctr(s, ev, i);
			return (uint16_t)i;
		}
	}
	if (s->n_ctrs >= STATE_MAX_CTRS || ctrs_reserve(s) < 0)
		return STATE_NO_CTR;
	s->ctrs[s->n_ctrs] = (struct state_ctr){ .id_s = (uint32_t)id, .name_s = (uint32_t)name,
						 .cgroup_id = ev->cgroup_id };
	remember_ctr(s, ev, s->n_ctrs);
	return (uint16_t)s->n_ctrs++;
}

int state_pack(struct tl_state *s, const struct tl_event *ev, struct state_hdr *h,
	       uint8_t payload[TL_PAYLOAD_MAX])
{
	uint32_t flags;
	int n = tl_event_pack(ev, s->strs, payload, &flags);

	if (n < 0)
		return n;
	h->kind = (uint8_t)ev->kind;
	h->source = (uint8_t)ev->source;
	h->flags = (uint16_t)flags;
	h->ctr = container_index(s, ev);
	h->len = (uint16_t)n;
	return 0;
}

int state_add_string(struct tl_state *s, const char *str, size_t len)
{
	int64_t id = tl_strtab_intern(s->strs, str, len);

	/* A repeat (never in a journal this store wrote) takes no new id. */
	return id < 0 ? (int)id : 0;
}

int state_add_ctr(struct tl_state *s, const struct state_ctr *c)
{
	if (s->n_ctrs >= STATE_MAX_CTRS)
		return -EINVAL;
	if (ctrs_reserve(s) < 0)
		return -ENOMEM;
	s->ctrs[s->n_ctrs++] = *c;
	return 0;
}

/* ---- other facts ---- */

bool state_set_meta(struct tl_state *s, const struct tl_pod_meta *meta)
{
	/* the API side repeats itself (resyncs, status changes of no
	 * interest here): only a changed field is a change */
	if (tl_pod_meta_equal(s->meta, meta))
		return false;
	tl_pod_meta_unref(s->meta);
	s->meta = tl_pod_meta_ref(meta);
	return true;
}

bool state_set_gone(struct tl_state *s, int64_t at_ns)
{
	if (s->gone)
		return false;
	s->gone = true;
	s->gone_ns = at_ns;
	return true;
}

bool state_set_close_reason(struct tl_state *s, unsigned reason)
{
	if (s->close_reason || reason == STATE_CLOSE_NONE || reason >= STATE_CLOSE_REASON_MAX)
		return false;
	s->close_reason = (uint8_t)reason;
	return true;
}

const char *state_close_reason_name(unsigned reason)
{
	static const char *const names[STATE_CLOSE_REASON_MAX] = {
		[STATE_CLOSE_LOGS_REMOVED] = "logsRemoved",
		[STATE_CLOSE_CGROUPS_REMOVED] = "cgroupsRemoved",
		[STATE_CLOSE_UNKNOWN_TO_API] = "unknownToApi",
		[STATE_CLOSE_IDLE] = "idle",
		[STATE_CLOSE_OPEN_LIMIT] = "openLimit",
	};

	return reason < STATE_CLOSE_REASON_MAX ? names[reason] : NULL;
}

int state_add_gap(struct tl_state *s, int64_t from_ns, int64_t to_ns)
{
	struct state_gap *n = realloc(s->gaps, (s->n_gaps + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	s->gaps = n;
	s->gaps[s->n_gaps++] = (struct state_gap){ from_ns, to_ns };
	return 0;
}

void state_max_loss(struct tl_state *s, const struct state_loss *l)
{
#define MAXOF(f, key) if (l->f > s->loss.f) s->loss.f = l->f;
	STATE_LOSS_FIELDS(MAXOF)
#undef MAXOF
}

int state_set_budget(struct tl_state *s, bool terminating, size_t at)
{
	if (at > s->n)
		return -EINVAL;
	s->terminating = terminating;
	s->n_at_termination = at;
	return 0;
}

/* ---- reading ---- */

static void ctr_strings(const struct tl_state *s, uint16_t ctr, struct tl_event *ev)
{
	const char *id, *name;

	ev->container_id[0] = '\0';
	ev->container[0] = '\0';
	if (ctr == STATE_NO_CTR || ctr >= s->n_ctrs)
		return;
	id = tl_strtab_get(s->strs, s->ctrs[ctr].id_s, NULL);
	name = tl_strtab_get(s->strs, s->ctrs[ctr].name_s, NULL);
	if (id)
		tl_copy_str(ev->container_id, sizeof(ev->container_id), id);
	if (name)
		tl_copy_str(ev->container, sizeof(ev->container), name);
	ev->cgroup_id = s->ctrs[ctr].cgroup_id;
}

int state_event(const struct tl_state *s, size_t i, struct tl_event *ev)
{
	const struct state_entry *e = &s->ev[i];
	struct state_hdr h;
	const uint8_t *payload;

	if (e->ref & STATE_AGG_REF) {
		const struct state_agg *a = &s->aggs[e->ref & ~STATE_AGG_REF];
		const char *type = tl_kind_name((enum tl_kind)a->kind);

		tl_event_init_kind(ev, TL_KIND_EVENTS_AGGREGATED, (enum tl_source)a->source, e->time_ns);
		ctr_strings(s, a->ctr, ev);
		tl_event_set_s(ev, TL_F_AGG_TYPE, type, strlen(type));
		tl_event_set_i(ev, TL_F_AGG_INTERVAL_MS, a->interval_ms);
		tl_event_set_i(ev, TL_F_AGG_COUNT, (int64_t)a->count);
		if (a->kind == TL_KIND_HTTP_REQUEST)
			tl_event_set_i(ev, TL_F_AGG_FAILED, (int64_t)a->failed);
		return 0;
	}
	payload = state_hdr_get(s->arena + e->ref, &h);
	if (tl_event_init_kind(ev, (enum tl_kind)h.kind, (enum tl_source)h.source, e->time_ns) < 0)
		return -EINVAL;
	ctr_strings(s, h.ctr, ev);
	return tl_event_unpack(ev, payload, h.len, h.flags, s->strs);
}

bool state_complete(const struct tl_state *s)
{
	bool any = false;

	/* unreadable is already in disk */
#define ANY(field, key) any |= (key) != NULL && s->loss.field != 0;
	STATE_LOSS_FIELDS(ANY)
#undef ANY
	return !any;
}

int64_t state_started(const struct tl_state *s)
{
	return s->n ? s->ev[0].time_ns : s->opened_ns;
}

const char *state_ns(const struct tl_state *s)
{
	return s->meta && s->meta->ns[0] ? s->meta->ns : NULL;
}

const char *state_name(const struct tl_state *s)
{
	return s->meta && s->meta->name[0] ? s->meta->name : NULL;
}
