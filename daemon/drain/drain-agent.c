/* SPDX-License-Identifier: Apache-2.0 */
/* The drained condition's waits on the loop (docs/drain.md): no thread and
 * no blocking call. A timer re-evaluates the pending waits every
 * TL_DRAIN_TICK_MS while there are any. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/linkhash.h>

#include "clock.h"
#include "drain-agent.h"
#include "drain.h"
#include "metrics.h"
#include "macro.h"

struct dpod {
	char uid[TL_UID_MAX];
	struct tl_drain_state st;
	int64_t touched_ns;
	unsigned waiters;
	bool seeded;
};

struct tl_drain_wait {
	struct tl_drain_agent *d;
	struct tl_drain_wait *prev, *next; /* pending list */
	char uid[TL_UID_MAX];
	int64_t quiet_ms, timeout_ms;
	int64_t started_ns;      /* UTC */
	uint64_t deadline_mono;  /* ms, CLOCK_MONOTONIC */
	bool pending;
	bool counted;            /* in its dpod's waiters */
	tl_drain_answer_fn answer;
	void *ud;
};

struct tl_drain_agent {
	struct tl_drain_agent_config cfg;
	struct tl_loop *loop;
	struct tl_timer *tick;
	struct lh_table *pods; /* uid -> struct dpod */
	/* The Pod found last: requests come in runs of one Pod's, and a
	 * UID's hash is dearer than a compare (NULL after any delete). */
	struct dpod *last;
	struct tl_drain_wait *pending;
	unsigned npending;
	bool tick_armed;
	struct {
		struct tl_metric *evicted, *slices_ignored, *refused;
		struct tl_metric *outcome[TL_DRAIN_ABANDONED + 1];
	} m;
};

static void dpod_free_entry(struct lh_entry *e)
{
	free(lh_entry_v(e));
}

static struct dpod *pod_get(struct tl_drain_agent *d, const char *uid, bool create)
{
	struct dpod *p;
	void *v;

	if (!uid || !uid[0] || strlen(uid) >= TL_UID_MAX)
		return NULL;
	if (d->last && strcmp(d->last->uid, uid) == 0)
		return d->last;
	if (lh_table_lookup_ex(d->pods, uid, &v))
		return d->last = v;
	if (!create)
		return NULL;
	if (d->pods->count >= TL_DRAIN_MAX_PODS) {
		struct lh_entry *e, *oldest = NULL;

		lh_foreach(d->pods, e) {
			const struct dpod *q = lh_entry_v(e);

			if (!q->waiters && (!oldest ||
					    q->touched_ns < ((const struct dpod *)lh_entry_v(oldest))->touched_ns))
				oldest = e;
		}
		if (!oldest)
			return NULL;
		d->last = NULL;
		lh_table_delete_entry(d->pods, oldest);
		tl_metric_inc(d->m.evicted, 1);
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	memcpy(p->uid, uid, strlen(uid) + 1);
	tl_drain_state_init(&p->st);
	if (lh_table_insert(d->pods, p->uid, p) < 0) {
		free(p);
		return NULL;
	}
	return d->last = p;
}

static void arm_tick(struct tl_drain_agent *d)
{
	if (!d->tick_armed && tl_timer_arm(d->tick, TL_DRAIN_TICK_MS, TL_DRAIN_TICK_MS) == 0)
		d->tick_armed = true;
}

void tl_drain_agent_observe(struct tl_drain_agent *d, const struct tl_event *ev)
{
	struct dpod *p;
	int64_t v;

	if (!d || !ev->pod_uid[0])
		return;
	switch (ev->kind) {
	case TL_KIND_POD_DELETION_REQUESTED:
	case TL_KIND_ENDPOINT_CONDITION:
	case TL_KIND_ENDPOINT_REMOVED:
	case TL_KIND_HTTP_REQUEST:
	case TL_KIND_POD_DELETED:
	case TL_KIND_POD_CGROUPS_REMOVED:
		break;
	default:
		return;
	}
	if (tl_kind_has(ev->kind, TL_KF_ENDS_POD)) {
		/* Nothing routes to a Pod that is gone (deleted, or its cgroups
		 * removed: the only end a Pod has without the API); keep it
		 * only while someone waits for it. */
		p = pod_get(d, ev->pod_uid, false);
		if (p && !p->waiters) {
			d->last = NULL;
			lh_table_delete(d->pods, ev->pod_uid);
		}
		return;
	}
	if (ev->kind == TL_KIND_HTTP_REQUEST) {
		const char *dir = tl_event_get_s(ev, TL_F_HTTP_DIRECTION);

		if (!dir || strcmp(dir, "inbound") != 0)
			return;
	}
	/* State (8 KiB a Pod) is kept for the Pods a wait can be answered
	 * for: a Pod the API does not know gets 404, and without the API
	 * every Pod does. */
	p = pod_get(d, ev->pod_uid, false);
	if (!p && (!d->cfg.pod_known || d->cfg.pod_known(d->cfg.ud, ev->pod_uid)))
		p = pod_get(d, ev->pod_uid, true);
	if (!p)
		return;
	p->touched_ns = ev->time_ns;
	switch (ev->kind) {
	case TL_KIND_POD_DELETION_REQUESTED:
		tl_drain_fact_deletion(&p->st, ev->time_ns);
		break;
	case TL_KIND_ENDPOINT_CONDITION: {
		int64_t ready = 1, serving = 1, terminating = 0;

		tl_event_get_i(ev, TL_F_EP_READY, &ready);
		tl_event_get_i(ev, TL_F_EP_SERVING, &serving);
		tl_event_get_i(ev, TL_F_EP_TERMINATING, &terminating);
		if (tl_drain_fact_endpoint(&p->st, tl_event_get_s(ev, TL_F_EP_SLICE),
					   tl_event_get_s(ev, TL_F_EP_SERVICE), ready, serving,
					   terminating, ev->time_ns) == -ENOSPC)
			tl_metric_inc(d->m.slices_ignored, 1);
		break;
	}
	case TL_KIND_ENDPOINT_REMOVED:
		tl_drain_fact_endpoint_removed(&p->st, tl_event_get_s(ev, TL_F_EP_SLICE), ev->time_ns);
		break;
	case TL_KIND_HTTP_REQUEST:
		/* The request's own start: a log line arrives after the fact. */
		if (!tl_event_get_i(ev, TL_F_HTTP_START, &v) || v <= 0)
			v = ev->time_ns;
		tl_drain_fact_request(&p->st, v);
		break;
	default:
		break;
	}
}

void tl_drain_agent_connection(struct tl_drain_agent *d, const char *uid, uint64_t count,
			       int64_t last_ns)
{
	struct dpod *p = d ? pod_get(d, uid, true) : NULL;

	if (!p)
		return;
	tl_drain_fact_connection(&p->st, count, last_ns);
	if (last_ns > p->touched_ns)
		p->touched_ns = last_ns;
}

void tl_drain_agent_endpoint(struct tl_drain_agent *d, const char *uid, const char *slice,
			     const char *service, bool ready, bool serving, bool terminating, int64_t t)
{
	struct dpod *p = d ? pod_get(d, uid, true) : NULL;

	if (p && tl_drain_fact_endpoint(&p->st, slice, service, ready, serving, terminating, t) == -ENOSPC)
		tl_metric_inc(d->m.slices_ignored, 1);
}

unsigned tl_drain_agent_waiters(const struct tl_drain_agent *d)
{
	return d ? d->npending : 0;
}

unsigned tl_drain_agent_pods(const struct tl_drain_agent *d)
{
	return d ? (unsigned)d->pods->count : 0;
}

/* ---- answers ---- */

static double rel_s(int64_t t, int64_t base)
{
	return (double)(t - base) / 1e9;
}

/* Which condition held the gate last: what the timeline's explain shows as
 * the reason the preStop took as long as it did. */
static const char *held_by(const struct tl_drain_state *st, const struct tl_drain_verdict *v)
{
	int64_t traffic = st->last_connection_ns > st->last_request_ns ? st->last_connection_ns
								       : st->last_request_ns;

	if (v->unmet != TL_DRAIN_MET)
		return tl_drain_cond_name(v->unmet);
	if (traffic >= v->out_of_rotation_ns)
		return "traffic";
	if (v->out_of_rotation_ns > st->deletion_ns)
		return "endpoint";
	return "quiet";
}

static void summarize(const struct tl_drain_state *st, const struct tl_drain_verdict *v, char *buf,
		      size_t len)
{
	size_t listed = 0, out = 0;
	int n = 0;

	for (size_t i = 0; i < st->nslices; i++) {
		listed++;
		out += !tl_drain_slice_in_rotation(&st->slices[i]);
	}
	if (!st->deletion_ns) {
		snprintf(buf, len, "no deletion requested yet; %zu slice(s) list the Pod", listed);
		return;
	}
	if (listed == 0)
		n = snprintf(buf, len, "no EndpointSlice lists the Pod");
	else
		n = snprintf(buf, len, "endpoint out of rotation in %zu of %zu slice(s)%s", out, listed,
			     v->out_of_rotation_ns ? "" : " (still routed by ");
	if (n < 0 || (size_t)n >= len)
		return;
	if (listed && !v->out_of_rotation_ns)
		n += snprintf(buf + n, len - (size_t)n, "%s)", v->slice ? v->slice : "more slices");
	else if (listed)
		n += snprintf(buf + n, len - (size_t)n, " at +%.1fs", rel_s(v->out_of_rotation_ns, st->deletion_ns));
	if (n < 0 || (size_t)n >= len)
		return;
	if (st->last_connection_ns > st->deletion_ns)
		n += snprintf(buf + n, len - (size_t)n, "; last connection at +%.1fs",
			      rel_s(st->last_connection_ns, st->deletion_ns));
	else
		n += snprintf(buf + n, len - (size_t)n, "; no connection after the deletion");
	if (n < 0 || (size_t)n >= len)
		return;
	if (st->requests && st->last_request_ns > st->deletion_ns)
		snprintf(buf + n, len - (size_t)n, "; last request at +%.1fs",
			 rel_s(st->last_request_ns, st->deletion_ns));
}

static void emit_wait(struct tl_drain_agent *d, const struct tl_drain_wait *w, const char *outcome,
		      const struct tl_drain_state *st, const struct tl_drain_verdict *v, int64_t now_ns)
{
	struct tl_event ev;

	if (!d->cfg.emit.emit ||
	    tl_event_init_kind(&ev, outcome ? TL_KIND_DRAIN_WAIT_ENDED : TL_KIND_DRAIN_WAIT_STARTED,
			       TL_SRC_API, outcome ? now_ns : w->started_ns) < 0)
		return;
	memcpy(ev.pod_uid, w->uid, strlen(w->uid) + 1);
	if (!outcome) {
		tl_event_set_i(&ev, TL_F_DRAIN_QUIET_MS, w->quiet_ms);
		tl_event_set_i(&ev, TL_F_DRAIN_TIMEOUT_MS, w->timeout_ms);
	} else {
		int64_t traffic = st->last_connection_ns > st->last_request_ns ? st->last_connection_ns
									       : st->last_request_ns;
		const char *by = held_by(st, v);

		tl_event_set_s(&ev, TL_F_DRAIN_OUTCOME, outcome, strlen(outcome));
		tl_event_set_s(&ev, TL_F_DRAIN_HELD_BY, by, strlen(by));
		tl_event_set_i(&ev, TL_F_DRAIN_HELD_MS, (now_ns - w->started_ns) / 1000000);
		tl_event_set_i(&ev, TL_F_DRAIN_CONNECTIONS, (int64_t)st->connections);
		tl_event_set_i(&ev, TL_F_DRAIN_REQUESTS, (int64_t)st->requests);
		if (v->out_of_rotation_ns)
			tl_event_set_i(&ev, TL_F_DRAIN_OUT_OF_ROTATION, v->out_of_rotation_ns);
		if (traffic)
			tl_event_set_i(&ev, TL_F_DRAIN_LAST_TRAFFIC, traffic);
	}
	tl_emit(&d->cfg.emit, &ev);
}

/* ---- pending waits ---- */

static const char *const outcome_names[] = {
	[TL_DRAIN_DRAINED] = "drained",
	[TL_DRAIN_TIMEOUT] = "timeout",
	[TL_DRAIN_STOPPING] = "agent_stopping",
	[TL_DRAIN_ABANDONED] = "abandoned",
};

static void unlink_wait(struct tl_drain_wait *w)
{
	struct tl_drain_agent *d = w->d;
	struct dpod *p;

	if (!w->pending)
		return;
	if (w->prev)
		w->prev->next = w->next;
	else
		d->pending = w->next;
	if (w->next)
		w->next->prev = w->prev;
	w->prev = w->next = NULL;
	w->pending = false;
	d->npending--;
	p = w->counted ? pod_get(d, w->uid, false) : NULL;
	if (p && p->waiters)
		p->waiters--;
	w->counted = false;
	if (!d->npending && d->tick_armed) {
		tl_timer_disarm(d->tick);
		d->tick_armed = false;
	}
}

/* Ends a wait: its answer (but for an abandoned one), its event, its
 * count; w is freed. */
static void finish(struct tl_drain_wait *w, enum tl_drain_outcome outcome)
{
	struct tl_drain_agent *d = w->d;
	const struct dpod *p = pod_get(d, w->uid, false);
	struct tl_drain_state empty;
	struct tl_drain_answer a = {
		.outcome = outcome,
		.uid = w->uid,
		.quiet_ms = w->quiet_ms,
		.started_ns = w->started_ns,
		.answered_ns = tl_now_real_ns(),
	};

	if (!p)
		tl_drain_state_init(&empty);
	a.st = p ? &p->st : &empty;
	tl_drain_evaluate(a.st, a.answered_ns, w->quiet_ms * 1000000LL, &a.v);
	a.held_by = held_by(a.st, &a.v);
	summarize(a.st, &a.v, a.summary, sizeof(a.summary));
	unlink_wait(w);
	emit_wait(d, w, outcome_names[outcome], a.st, &a.v, a.answered_ns);
	tl_metric_inc(d->m.outcome[outcome], 1);
	if (outcome != TL_DRAIN_ABANDONED)
		w->answer(w->ud, &a);
	free(w);
}

void tl_drain_wait_abandon(struct tl_drain_wait *w)
{
	if (w)
		finish(w, TL_DRAIN_ABANDONED);
}

static void on_tick(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *userdata)
{
	struct tl_drain_agent *d = userdata;
	uint64_t mono = tl_now_mono_ms();
	int64_t now = tl_now_real_ns();
	struct tl_drain_wait *w, *next;

	if (d->npending && d->cfg.poll)
		d->cfg.poll(d->cfg.ud);
	for (w = d->pending; w; w = next) {
		const struct dpod *p = pod_get(d, w->uid, false);
		struct tl_drain_verdict v;

		next = w->next;
		if (p) {
			tl_drain_evaluate(&p->st, now, w->quiet_ms * 1000000LL, &v);
			if (v.unmet == TL_DRAIN_MET) {
				finish(w, TL_DRAIN_DRAINED);
				continue;
			}
		}
		if (mono >= w->deadline_mono)
			finish(w, TL_DRAIN_TIMEOUT);
	}
}

static bool uid_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n >= TL_UID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F') || s[i] == '-'))
			return false;
	return true;
}

int tl_drain_agent_wait(struct tl_drain_agent *d, const char *uid, int64_t quiet_ms,
			int64_t timeout_ms, tl_drain_answer_fn answer, void *ud,
			struct tl_drain_wait **ret)
{
	struct tl_drain_verdict v;
	struct tl_drain_wait *w;
	struct dpod *p;
	int64_t now;

	if (!uid_ok(uid) || quiet_ms < 0 || quiet_ms > TL_DRAIN_MAX_TIMEOUT_MS || timeout_ms < 1 ||
	    timeout_ms > TL_DRAIN_MAX_TIMEOUT_MS)
		return -EINVAL;
	if (d->cfg.synced && !d->cfg.synced(d->cfg.ud))
		return -EAGAIN;
	if (d->cfg.pod_known && !d->cfg.pod_known(d->cfg.ud, uid))
		return -ENOENT;
	if (d->npending >= d->cfg.max_waiters) {
		tl_metric_inc(d->m.refused, 1);
		return -EBUSY;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	now = tl_now_real_ns();
	w->d = d;
	memcpy(w->uid, uid, strlen(uid) + 1);
	w->quiet_ms = quiet_ms;
	w->timeout_ms = timeout_ms;
	w->started_ns = now;
	w->deadline_mono = tl_now_mono_ms() + (uint64_t)timeout_ms;
	w->answer = answer;
	w->ud = ud;
	emit_wait(d, w, NULL, NULL, NULL, now);
	/* Facts the kernel counted before this request (traffic that arrived
	 * just now must hold the gate). */
	if (d->cfg.poll)
		d->cfg.poll(d->cfg.ud);
	p = pod_get(d, uid, true);
	if (p && !p->st.nslices && !p->seeded && d->cfg.seed) {
		/* once per Pod: a Pod no slice lists stays without slices */
		p->seeded = true;
		d->cfg.seed(d->cfg.ud, uid);
	}
	if (p) {
		tl_drain_evaluate(&p->st, now, quiet_ms * 1000000LL, &v);
		if (v.unmet == TL_DRAIN_MET) {
			finish(w, TL_DRAIN_DRAINED);
			return 0;
		}
		p->waiters++;
		w->counted = true;
	}
	w->pending = true;
	w->next = d->pending;
	if (d->pending)
		d->pending->prev = w;
	d->pending = w;
	d->npending++;
	arm_tick(d);
	*ret = w;
	return 1;
}

void tl_drain_agent_release_all(struct tl_drain_agent *d)
{
	if (!d)
		return;
	while (d->pending)
		finish(d->pending, TL_DRAIN_STOPPING);
}

int tl_drain_agent_new(const struct tl_drain_agent_config *cfg, struct tl_loop *loop,
		       struct tl_drain_agent **ret)
{
	struct tl_drain_agent *d = calloc(1, sizeof(*d));
	int r;

	if (!d)
		return -ENOMEM;
	d->cfg = *cfg;
	if (!d->cfg.max_waiters)
		d->cfg.max_waiters = TL_DRAIN_DEFAULT_WAITERS;
	d->loop = loop;
	d->pods = lh_kchar_table_new(64, dpod_free_entry);
	if (!d->pods) {
		free(d);
		return -ENOMEM;
	}
	r = tl_loop_add_timer(loop, 0, 0, on_tick, d, &d->tick);
	if (r < 0) {
		lh_table_free(d->pods);
		free(d);
		return r;
	}
	d->m.evicted = tl_metric_new("termline_drain_pods_evicted_total", NULL, TL_METRIC_COUNTER,
				     "Pods whose drain facts were forgotten, past 512 with no wait.");
	d->m.slices_ignored = tl_metric_new("termline_drain_slices_ignored_total", NULL,
					    TL_METRIC_COUNTER,
					    "EndpointSlices past 16 listing one Pod (held in rotation).");
	d->m.refused = tl_metric_new("termline_drain_waits_refused_total", NULL, TL_METRIC_COUNTER,
				     "Drained waits refused with 429: too many pending.");
	for (size_t i = 0; i < sizeof(d->m.outcome) / sizeof(d->m.outcome[0]); i++) {
		char labels[64];

		snprintf(labels, sizeof(labels), "outcome=\"%s\"", outcome_names[i]);
		d->m.outcome[i] = tl_metric_new("termline_drain_waits_total", labels, TL_METRIC_COUNTER,
						"Drained waits (preStop gates) ended, by outcome.");
	}
	*ret = d;
	return 0;
}

void tl_drain_agent_free(struct tl_drain_agent *d)
{
	if (!d)
		return;
	/* Waits still pending here were never released (their server is
	 * gone): forgotten, not answered. */
	while (d->pending) {
		struct tl_drain_wait *w = d->pending;

		unlink_wait(w);
		free(w);
	}
	tl_timer_free(d->tick);
	lh_table_free(d->pods);
	free(d);
}
