/* SPDX-License-Identifier: Apache-2.0 */
/* The drained endpoint on the loop (docs/drain.md). A wait is a suspended
 * MHD connection: no thread and no blocking call. A timer re-evaluates the
 * pending waits every TL_DRAIN_TICK_MS while there are any; each wait also
 * watches its socket for the client going away (EPOLLRDHUP in the agent's
 * own loop: MHD stops watching a suspended connection), so an abandoned
 * wait is freed at once rather than at its timeout. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <json-c/json.h>
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

struct waiter {
	struct tl_drain_agent *d;
	struct waiter *prev, *next; /* pending list */
	struct MHD_Connection *conn;
	char uid[TL_UID_MAX];
	int64_t quiet_ms, timeout_ms;
	int64_t started_ns;      /* UTC */
	uint64_t deadline_mono;  /* ms, CLOCK_MONOTONIC */
	int fd;                  /* watched for the client leaving; -1 when not */
	bool pending, gone;
	bool counted;            /* in its dpod's waiters */
	unsigned status;
	char *body;
	size_t len;
};

struct tl_drain_agent {
	struct tl_drain_agent_config cfg;
	struct tl_loop *loop;
	struct tl_timer *tick;
	struct lh_table *pods; /* uid -> struct dpod */
	/* The Pod found last: requests come in runs of one Pod's, and a
	 * UID's hash is dearer than a compare (NULL after any delete). */
	struct dpod *last;
	struct waiter *pending;
	unsigned npending;
	bool tick_armed;
	/* Connections were resumed: MHD must run once they all are (in
	 * external-epoll mode a resume alone does not wake it). */
	bool resumed;
	void (*run)(void *ud);
	void *run_ud;
};

int tl_drain_parse_duration(const char *s, int64_t *ret_ms)
{
	char *end;
	double v, mult;

	if (!s || !*s || strlen(s) > 32)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !isfinite(v) || v < 0)
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		mult = 1;
	else if (strcmp(end, "s") == 0 || *end == '\0')
		mult = 1000;
	else if (strcmp(end, "m") == 0)
		mult = 60000;
	else
		return -EINVAL;
	v *= mult;
	if (v > (double)TL_DRAIN_MAX_TIMEOUT_MS)
		return -EINVAL;
	*ret_ms = (int64_t)(v + 0.5);
	return 0;
}

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
		tl_metric_add("termline_drain_pods_evicted_total", NULL, 1);
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
			tl_metric_add("termline_drain_slices_ignored_total", NULL, 1);
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
		tl_metric_add("termline_drain_slices_ignored_total", NULL, 1);
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

static void add_time(struct json_object *o, const char *key, int64_t ns)
{
	char buf[TL_TIME_STRLEN];

	json_object_object_add(o, key, ns > 0 ? json_object_new_string(tl_time_format(ns, buf)) : NULL);
}

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

static char *answer_body(const char *uid, const struct tl_drain_state *st,
			 const struct tl_drain_verdict *v, int64_t quiet_ms, int64_t started_ns,
			 int64_t now_ns, size_t *ret_len)
{
	struct json_object *o = json_object_new_object(), *eps = json_object_new_array();
	char summary[512];
	const char *s;
	char *body = NULL;
	size_t len;

	if (!o || !eps) {
		json_object_put(o);
		json_object_put(eps);
		return NULL;
	}
	summarize(st, v, summary, sizeof(summary));
	json_object_object_add(o, "uid", json_object_new_string(uid));
	json_object_object_add(o, "drained", json_object_new_boolean(v->unmet == TL_DRAIN_MET));
	json_object_object_add(o, "unmet", json_object_new_string(tl_drain_cond_name(v->unmet)));
	json_object_object_add(o, "heldBy", json_object_new_string(held_by(st, v)));
	json_object_object_add(o, "quietMs", json_object_new_int64(quiet_ms));
	add_time(o, "waitStarted", started_ns);
	add_time(o, "answered", now_ns);
	json_object_object_add(o, "heldMs", json_object_new_int64((now_ns - started_ns) / 1000000));
	add_time(o, "deletionRequested", st->deletion_ns);
	add_time(o, "outOfRotation", v->out_of_rotation_ns);
	for (size_t i = 0; i < st->nslices; i++) {
		const struct tl_drain_slice *sl = &st->slices[i];
		struct json_object *e = json_object_new_object();

		if (!e)
			continue;
		json_object_object_add(e, "endpointSlice", json_object_new_string(sl->name));
		json_object_object_add(e, "service", json_object_new_string(sl->service));
		json_object_object_add(e, "listed", json_object_new_boolean(sl->present));
		json_object_object_add(e, "ready", json_object_new_boolean(sl->ready));
		json_object_object_add(e, "serving", json_object_new_boolean(sl->serving));
		json_object_object_add(e, "terminating", json_object_new_boolean(sl->terminating));
		json_object_object_add(e, "inRotation", json_object_new_boolean(tl_drain_slice_in_rotation(sl)));
		add_time(e, "since", sl->changed_ns);
		json_object_array_add(eps, e);
	}
	json_object_object_add(o, "endpoints", eps);
	json_object_object_add(o, "connections", json_object_new_int64((int64_t)st->connections));
	add_time(o, "lastConnection", st->last_connection_ns);
	json_object_object_add(o, "requests", json_object_new_int64((int64_t)st->requests));
	add_time(o, "lastRequest", st->last_request_ns);
	add_time(o, "quietSince", v->quiet_since_ns);
	add_time(o, "drainedAt", v->unmet == TL_DRAIN_MET ? v->drained_at_ns : 0);
	json_object_object_add(o, "summary", json_object_new_string(summary));
	s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
					      &len);
	if (s) {
		body = malloc(len + 2);
		if (body) {
			memcpy(body, s, len);
			body[len++] = '\n';
			body[len] = '\0';
			*ret_len = len;
		}
	}
	json_object_put(o);
	return body;
}

static void emit_wait(struct tl_drain_agent *d, const struct waiter *w, const char *outcome,
		      const struct tl_drain_state *st, const struct tl_drain_verdict *v, int64_t now_ns)
{
	struct tl_event ev;

	if (!d->cfg.emit.emit ||
	    tl_event_init(&ev, TL_SRC_API, outcome ? "drain.wait_ended" : "drain.wait_started",
			  outcome ? now_ns : w->started_ns) < 0)
		return;
	memcpy(ev.pod_uid, w->uid, strlen(w->uid) + 1);
	if (!outcome) {
		tl_event_set_int(&ev, "quietMs", w->quiet_ms);
		tl_event_set_int(&ev, "timeoutMs", w->timeout_ms);
	} else {
		int64_t traffic = st->last_connection_ns > st->last_request_ns ? st->last_connection_ns
									       : st->last_request_ns;

		tl_event_set_str(&ev, "outcome", outcome);
		tl_event_set_str(&ev, "heldBy", held_by(st, v));
		tl_event_set_int(&ev, "heldMs", (now_ns - w->started_ns) / 1000000);
		tl_event_set_int(&ev, "connections", (int64_t)st->connections);
		tl_event_set_int(&ev, "requests", (int64_t)st->requests);
		if (v->out_of_rotation_ns)
			tl_event_set_int(&ev, "outOfRotation", v->out_of_rotation_ns);
		if (traffic)
			tl_event_set_int(&ev, "lastTraffic", traffic);
	}
	tl_emit(&d->cfg.emit, &ev);
}

static void count_outcome(const char *outcome)
{
	char labels[64];

	snprintf(labels, sizeof(labels), "outcome=\"%s\"", outcome);
	tl_metric_add("termline_drain_waits_total", labels, 1);
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, char *body, size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result r;

	if (!resp) {
		free(body);
		return MHD_NO;
	}
	if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json") == MHD_NO ||
	    MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") == MHD_NO) {
		MHD_destroy_response(resp);
		return MHD_NO;
	}
	r = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

static enum MHD_Result respond_error(struct MHD_Connection *conn, unsigned status, const char *msg)
{
	char *body = NULL;
	int n = asprintf(&body, "{\"error\":\"%s\",\"summary\":\"%s\"}\n", msg, msg);

	if (n < 0)
		return MHD_NO;
	return respond(conn, status, body, (size_t)n);
}

/* ---- pending waits ---- */

static void unwatch(struct waiter *w)
{
	if (w->fd >= 0) {
		tl_loop_del_io(w->d->loop, w->fd);
		w->fd = -1;
	}
}

static void unlink_waiter(struct waiter *w)
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
	unwatch(w);
	if (!d->npending && d->tick_armed) {
		tl_timer_disarm(d->tick);
		d->tick_armed = false;
	}
}

/* Ends a wait: the answer is queued when MHD calls the handler again. */
static void finish(struct waiter *w, unsigned status, const char *outcome)
{
	struct tl_drain_agent *d = w->d;
	const struct dpod *p = pod_get(d, w->uid, false);
	struct tl_drain_state empty;
	const struct tl_drain_state *st = p ? &p->st : &empty;
	struct tl_drain_verdict v;
	int64_t now = tl_now_real_ns();

	if (!p)
		tl_drain_state_init(&empty);
	tl_drain_evaluate(st, now, w->quiet_ms * 1000000LL, &v);
	w->status = status;
	if (status == MHD_HTTP_OK || status == MHD_HTTP_GATEWAY_TIMEOUT)
		w->body = answer_body(w->uid, st, &v, w->quiet_ms, w->started_ns, now, &w->len);
	emit_wait(d, w, outcome, st, &v, now);
	count_outcome(outcome);
	unlink_waiter(w);
	MHD_resume_connection(w->conn);
	d->resumed = true;
}

/* Lets MHD answer the connections just resumed, through the server so it
 * also re-arms its own timer (a resumed connection is ready at once, with
 * no socket event to wake MHD). Never called from inside an MHD callback. */
static void run_resumed(struct tl_drain_agent *d)
{
	bool resumed = d->resumed;

	d->resumed = false;
	if (resumed && d->run)
		d->run(d->run_ud);
}

void tl_drain_agent_set_runner(struct tl_drain_agent *d, void (*run)(void *ud), void *ud)
{
	if (!d)
		return;
	d->run = run;
	d->run_ud = ud;
}

static int client_gone(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
		       void *userdata)
{
	struct waiter *w = userdata;
	struct tl_drain_agent *d = w->d;

	w->gone = true;
	finish(w, 0, "abandoned");
	run_resumed(d); /* frees w */
	return 0;
}

static void on_tick(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *userdata)
{
	struct tl_drain_agent *d = userdata;
	uint64_t mono = tl_now_mono_ms();
	int64_t now = tl_now_real_ns();
	struct waiter *w, *next;

	if (d->npending && d->cfg.poll)
		d->cfg.poll(d->cfg.ud);
	for (w = d->pending; w; w = next) {
		const struct dpod *p = pod_get(d, w->uid, false);
		struct tl_drain_verdict v;

		next = w->next;
		if (p) {
			tl_drain_evaluate(&p->st, now, w->quiet_ms * 1000000LL, &v);
			if (v.unmet == TL_DRAIN_MET) {
				finish(w, MHD_HTTP_OK, "drained");
				continue;
			}
		}
		if (mono >= w->deadline_mono)
			finish(w, MHD_HTTP_GATEWAY_TIMEOUT, "timeout");
	}
	run_resumed(d);
}

static bool uid_ok(const char *s, size_t n)
{
	if (n == 0 || n >= TL_UID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F') || s[i] == '-'))
			return false;
	return true;
}

enum MHD_Result tl_drain_agent_http(struct tl_drain_agent *d, struct MHD_Connection *conn,
				    const char *path, void **con_cls)
{
	const char *slash = strchr(path, '/'), *q, *t;
	const union MHD_ConnectionInfo *ci;
	int64_t quiet_ms = TL_DRAIN_DEFAULT_QUIET_MS, timeout_ms = TL_DRAIN_DEFAULT_TIMEOUT_MS;
	struct tl_drain_verdict v;
	struct dpod *p;
	struct waiter *w = *con_cls;
	char uid[TL_UID_MAX];
	int64_t now;
	size_t n;

	if (w) {
		/* Resumed: the wait ended (or its client left). */
		if (w->gone || !w->body) {
			if (w->gone || !w->status)
				return MHD_NO;
			if (w->status == MHD_HTTP_SERVICE_UNAVAILABLE)
				return respond_error(conn, w->status, "agent stopping");
			return respond_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		}
		n = w->len;
		q = w->body;
		w->body = NULL;
		return respond(conn, w->status, (char *)q, n);
	}
	if (!d)
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "not found");
	n = slash ? (size_t)(slash - path) : 0;
	if (!slash || strcmp(slash, "/drained") != 0)
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "not found");
	if (!uid_ok(path, n))
		return respond_error(conn, MHD_HTTP_BAD_REQUEST, "bad pod uid");
	memcpy(uid, path, n);
	uid[n] = '\0';
	q = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "quiet");
	t = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "timeout");
	if (q && tl_drain_parse_duration(q, &quiet_ms) < 0)
		return respond_error(conn, MHD_HTTP_BAD_REQUEST, "bad quiet (500ms, 1.5s, 2m; at most 1h)");
	if (t && (tl_drain_parse_duration(t, &timeout_ms) < 0 || timeout_ms < 1))
		return respond_error(conn, MHD_HTTP_BAD_REQUEST, "bad timeout (500ms, 1.5s, 2m; at most 1h)");
	if (d->cfg.synced && !d->cfg.synced(d->cfg.ud))
		return respond_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "not synced with the API yet");
	if (d->cfg.pod_known && !d->cfg.pod_known(d->cfg.ud, uid))
		return respond_error(conn, MHD_HTTP_NOT_FOUND, "unknown pod");
	if (d->npending >= d->cfg.max_waiters) {
		tl_metric_add("termline_drain_waits_refused_total", NULL, 1);
		return respond_error(conn, MHD_HTTP_TOO_MANY_REQUESTS, "too many pending waits");
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return respond_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	now = tl_now_real_ns();
	w->d = d;
	w->conn = conn;
	w->fd = -1;
	memcpy(w->uid, uid, n + 1);
	w->quiet_ms = quiet_ms;
	w->timeout_ms = timeout_ms;
	w->started_ns = now;
	w->deadline_mono = tl_now_mono_ms() + (uint64_t)timeout_ms;
	*con_cls = w;
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
			w->status = MHD_HTTP_OK;
			w->body = answer_body(uid, &p->st, &v, quiet_ms, now, now, &w->len);
			emit_wait(d, w, "drained", &p->st, &v, now);
			count_outcome("drained");
			n = w->len;
			q = w->body;
			w->body = NULL;
			if (!q)
				return respond_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
			return respond(conn, MHD_HTTP_OK, (char *)q, n);
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
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci && ci->connect_fd >= 0 && tl_loop_add_io(d->loop, ci->connect_fd, EPOLLRDHUP, client_gone, w) == 0)
		w->fd = ci->connect_fd;
	arm_tick(d);
	MHD_suspend_connection(conn);
	return MHD_YES;
}

void tl_drain_agent_http_completed(struct tl_drain_agent *d _unused_, void **con_cls)
{
	struct waiter *w = con_cls ? *con_cls : NULL;

	if (!w)
		return;
	unlink_waiter(w);
	free(w->body);
	free(w);
	*con_cls = NULL;
}

void tl_drain_agent_release_all(struct tl_drain_agent *d)
{
	if (!d)
		return;
	while (d->pending)
		finish(d->pending, MHD_HTTP_SERVICE_UNAVAILABLE, "agent_stopping");
	run_resumed(d);
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
	tl_metric_describe("termline_drain_waits_total", TL_METRIC_COUNTER,
			   "Drained waits (preStop gates) ended, by outcome.");
	tl_metric_describe("termline_drain_waits_refused_total", TL_METRIC_COUNTER,
			   "Drained waits refused with 429: too many pending.");
	*ret = d;
	return 0;
}

void tl_drain_agent_free(struct tl_drain_agent *d)
{
	if (!d)
		return;
	/* Waits still pending here belong to an MHD that was not stopped
	 * through tl_drain_agent_release_all: forget them, MHD owns the
	 * connections. */
	while (d->pending)
		unlink_waiter(d->pending);
	tl_timer_free(d->tick);
	lh_table_free(d->pods);
	free(d);
}
