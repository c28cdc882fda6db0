/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <curl/curl.h>

#include "json-util.h"
#include "kube-stream.h"
#include "kube-watch.h"
#include "metrics.h"
#include "macro.h"

#define RF_BACKOFF_BASE_MS 250
#define RF_BACKOFF_CAP_MS 30000
#define RF_RETRY_AFTER_MAX_S 300
#define RF_DEFAULT_LIMIT 500
/* one watch event (an object) and a whole LIST page */
#define RF_MAX_EVENT (8u << 20)
#define RF_MAX_LIST_PAGE (64u << 20)
/* json-c memory one parsed event or page may take (kube-stream.h): an
 * event is one object (etcd keeps at most 1.5 MiB each); a page of 500
 * real Pods with managedFields estimates at ~80 MiB. */
#define RF_MAX_EVENT_COST (32u << 20)
#define RF_MAX_LIST_PAGE_COST (128u << 20)
#define RF_LIST_TIMEOUT_S 120
#define RF_LIST_IDLE_S 30
/* client-go picks 5..10 min; the server ends the watch then (clean EOF) */
#define RF_WATCH_TIMEOUT_MIN_S 300
#define RF_WATCH_TIMEOUT_SPREAD_S 300
#define RF_WATCH_IDLE_EXTRA_S 60
/* A watch that ended sooner than this without delivering anything counts
 * as a failure, so a server that closes at once cannot make us spin. */
#define RF_WATCH_MIN_HEALTHY_MS 1000
#define RF_MAX_RV 128
#define RF_MAX_CONTINUE 4096

/* RF_WAIT_CREDS: an exec plugin is at work; the kubeconfig tells us when
 * it is done. */
enum rf_state { RF_IDLE, RF_LISTING, RF_WATCHING, RF_WAITING, RF_WAIT_CREDS };
enum rf_next { RF_NEXT_LIST, RF_NEXT_WATCH };

struct tl_reflector {
	struct tl_loop *loop;
	struct tl_khttp *http;
	const struct tl_kubeconfig *kc;
	struct tl_kube_auth *auth;
	struct tl_reflector_ops ops;
	void *userdata;
	char *resource, *path, *query;
	unsigned page_limit;

	enum rf_state state;
	enum rf_next next;
	struct tl_khttp_req *req;
	struct tl_timer *timer;
	struct tl_kstream *list_stream, *watch_stream;

	bool synced;
	bool list_in_progress; /* list_begin delivered, list_end not yet */
	bool subscribed;
	uint64_t creds_gen; /* of the credentials the request in flight carries */
	unsigned attempts;
	char rv[RF_MAX_RV];
	char list_rv[RF_MAX_RV];
	char cont[RF_MAX_CONTINUE];
	bool page_ok;

	/* per watch connection */
	uint64_t watch_started_ms;
	bool watch_got_data;
	bool watch_expired;
	bool watch_error;
	char last_error[256];

	struct tl_reflector_stats stats;
	uint64_t rnd_state;
};

uint64_t tl_backoff_delay_ms(unsigned attempt, uint64_t base_ms, uint64_t cap_ms, double rnd)
{
	uint64_t d = base_ms;

	for (unsigned i = 0; i < attempt && d < cap_ms; i++)
		d *= 2;
	if (d > cap_ms)
		d = cap_ms;
	if (rnd < 0 || rnd >= 1)
		rnd = 0;
	return d / 2 + (uint64_t)((double)(d - d / 2) * rnd);
}

static double rf_rand(struct tl_reflector *r)
{
	/* xorshift64*: jitter only needs to decorrelate agents */
	r->rnd_state ^= r->rnd_state >> 12;
	r->rnd_state ^= r->rnd_state << 25;
	r->rnd_state ^= r->rnd_state >> 27;
	return (double)((r->rnd_state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static void rf_metric(struct tl_reflector *r, const char *name, const char *kind)
{
	char labels[128];

	if (kind)
		snprintf(labels, sizeof(labels), "resource=\"%s\",kind=\"%s\"", r->resource, kind);
	else
		snprintf(labels, sizeof(labels), "resource=\"%s\"", r->resource);
	tl_metric_add(name, labels, 1);
}

static void rf_error(struct tl_reflector *r, const char *kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void rf_error(struct tl_reflector *r, const char *kind, const char *fmt, ...)
{
	va_list ap;

	r->stats.errors++;
	rf_metric(r, "termline_api_errors_total", kind);
	va_start(ap, fmt);
	vsnprintf(r->last_error, sizeof(r->last_error), fmt, ap);
	va_end(ap);
}

static void rf_schedule(struct tl_reflector *r, enum rf_next next, uint64_t delay_ms)
{
	r->state = RF_WAITING;
	r->next = next;
	if (delay_ms == 0)
		delay_ms = 1;
	if (tl_timer_arm(r->timer, delay_ms, 0) < 0) {
		/* cannot happen with a valid timerfd; retry later is all we can do */
		r->state = RF_IDLE;
	}
}

static void rf_backoff(struct tl_reflector *r, enum rf_next next, int retry_after_s)
{
	uint64_t d;

	if (retry_after_s >= 0) {
		if (retry_after_s > RF_RETRY_AFTER_MAX_S)
			retry_after_s = RF_RETRY_AFTER_MAX_S;
		d = (uint64_t)retry_after_s * 1000;
	} else
		d = tl_backoff_delay_ms(r->attempts, RF_BACKOFF_BASE_MS, RF_BACKOFF_CAP_MS,
					rf_rand(r));
	if (r->attempts < 32)
		r->attempts++;
	rf_schedule(r, next, d);
}

static const char *status_kind(long status)
{
	switch (status) {
	case 401:
		return "http_401";
	case 403:
		return "http_403";
	case 404:
		return "http_404";
	case 410:
		return "http_410";
	case 429:
		return "http_429";
	default:
		return status >= 500 ? "http_5xx" : "http_other";
	}
}

/* The string at o.a, or at o.a.b when b is given. */
static const char *obj_str(struct json_object *o, const char *a, const char *b)
{
	return b ? tl_json_str(tl_json_get(o, a), b) : tl_json_str(o, a);
}

static void rf_set_str(char *dst, size_t dstlen, const char *src)
{
	if (!src || strlen(src) >= dstlen)
		dst[0] = '\0';
	else
		memcpy(dst, src, strlen(src) + 1);
}

/* ---- LIST ---- */

static void rf_start_list(struct tl_reflector *r);
static void rf_start_watch(struct tl_reflector *r);

static int rf_list_obj(void *userdata, struct json_object *obj)
{
	struct tl_reflector *r = userdata;
	struct json_object *items;
	const char *rv, *cont;
	size_t n;

	if (r->page_ok || !json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, "items", &items) ||
	    !(json_object_is_type(items, json_type_array) || json_object_is_type(items, json_type_null)))
		return -EBADMSG;
	rv = obj_str(obj, "metadata", "resourceVersion");
	cont = obj_str(obj, "metadata", "continue");
	if (!rv || !*rv || strlen(rv) >= RF_MAX_RV || (cont && strlen(cont) >= RF_MAX_CONTINUE))
		return -EBADMSG;
	if (!r->list_in_progress) {
		r->list_in_progress = true;
		r->ops.list_begin(r->userdata, !r->synced);
	}
	n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *it = json_object_array_get_idx(items, i);

		/* an item without a uid cannot be tracked: skip it, not the page */
		if (!json_object_is_type(it, json_type_object) || !obj_str(it, "metadata", "uid")) {
			r->stats.malformed++;
			tl_metric_add("termline_api_malformed_events_total", NULL, 1);
			continue;
		}
		r->ops.list_item(r->userdata, it, !r->synced);
	}
	/* All pages share the first page's snapshot; the watch starts there. */
	if (!r->cont[0])
		rf_set_str(r->list_rv, sizeof(r->list_rv), rv);
	rf_set_str(r->cont, sizeof(r->cont), cont);
	r->page_ok = true;
	return 0;
}

static int rf_list_data(void *userdata, const char *buf, size_t len)
{
	struct tl_reflector *r = userdata;

	return tl_kstream_feed(r->list_stream, buf, len);
}

static void rf_list_done(void *userdata, int res, long status, int retry_after_s, const char *msg)
{
	struct tl_reflector *r = userdata;

	r->req = NULL;
	if (res == 0 && status == 200 && r->page_ok) {
		if (r->cont[0]) {
			rf_start_list(r); /* next page */
			return;
		}
		r->list_in_progress = false;
		r->ops.list_end(r->userdata, !r->synced);
		r->synced = true;
		r->attempts = 0;
		memcpy(r->rv, r->list_rv, sizeof(r->rv));
		rf_start_watch(r);
		return;
	}
	/* a failed page: the whole LIST starts over (a continue token is only
	 * good for the snapshot it came from) */
	r->cont[0] = '\0';
	if (res < 0) {
		rf_error(r, "transport", "LIST %s: %s", r->resource, msg);
		rf_backoff(r, RF_NEXT_LIST, -1);
	} else if (status == 200) {
		rf_error(r, "malformed_list", "LIST %s: malformed response", r->resource);
		rf_backoff(r, RF_NEXT_LIST, -1);
	} else {
		rf_error(r, status_kind(status), "LIST %s: HTTP %ld %.200s", r->resource, status, msg);
		if (status == 401)
			tl_kube_auth_invalidate(r->auth, r->creds_gen, tl_now_mono_ms());
		if (status == 410) /* expired continue token: start over now */
			rf_schedule(r, RF_NEXT_LIST, 0);
		else
			rf_backoff(r, RF_NEXT_LIST, status == 429 || status == 503 ? retry_after_s : -1);
	}
}

/* -EAGAIN: no request without credentials; the kubeconfig calls
 * rf_creds_ready() when its plugin is done. Other errors: back off. */
static int rf_creds(struct tl_reflector *r, enum rf_next next, const struct tl_kube_creds **ret)
{
	char err[512];
	int k = tl_kube_auth_credentials(r->auth, false, tl_now_mono_ms(), ret, err, sizeof(err));

	if (k < 0 && err[0])
		rf_error(r, "credentials", "%s", err);
	if (k == -EAGAIN) {
		r->state = RF_WAIT_CREDS;
		r->next = next;
	}
	if (k < 0)
		return k;
	r->creds_gen = (*ret)->generation;
	return 0;
}

static void rf_creds_ready(void *userdata)
{
	struct tl_reflector *r = userdata;

	/* from the timer, not from inside the kubeconfig's callback */
	if (r->state == RF_WAIT_CREDS)
		rf_schedule(r, r->next, 0);
}

static void rf_start_list(struct tl_reflector *r)
{
	static const struct tl_khttp_ops ops = { .data = rf_list_data, .done = rf_list_done };
	struct tl_khttp_opts o = { .total_timeout_s = RF_LIST_TIMEOUT_S,
				   .idle_timeout_s = RF_LIST_IDLE_S };
	const struct tl_kube_creds *creds;
	char *path = NULL;
	int k;

	k = rf_creds(r, RF_NEXT_LIST, &creds);
	if (k == -EAGAIN)
		return;
	if (!r->cont[0]) {
		/* A LIST that starts over abandons the pages already
		 * delivered: they vouched for objects the new snapshot may
		 * lack, so the consumer must start its diff afresh. */
		r->list_in_progress = false;
		r->stats.lists++;
		if (r->stats.lists > 1) {
			r->stats.relists++;
			rf_metric(r, "termline_relists_total", NULL);
		}
	}
	if (k < 0) {
		r->cont[0] = '\0';
		rf_backoff(r, RF_NEXT_LIST, -1);
		return;
	}
	if (r->cont[0]) {
		char *esc = curl_easy_escape(NULL, r->cont, 0);

		k = esc ? asprintf(&path, "%s?%s%slimit=%u&continue=%s", r->path,
				   r->query ? r->query : "", r->query ? "&" : "", r->page_limit, esc)
			: -1;
		curl_free(esc);
	} else
		k = asprintf(&path, "%s?%s%slimit=%u", r->path, r->query ? r->query : "",
			     r->query ? "&" : "", r->page_limit);
	if (k < 0) {
		path = NULL;
		r->cont[0] = '\0';
		rf_backoff(r, RF_NEXT_LIST, -1);
		return;
	}
	tl_kstream_reset(r->list_stream);
	r->page_ok = false;
	r->state = RF_LISTING;
	k = tl_khttp_get(r->http, r->kc, creds, path, &o, &ops, r, &r->req);
	free(path);
	if (k < 0) {
		r->req = NULL;
		r->cont[0] = '\0';
		rf_error(r, "transport", "LIST %s: cannot start request: %s", r->resource,
			 strerror(-k));
		rf_backoff(r, RF_NEXT_LIST, -1);
	}
}

/* ---- WATCH ---- */

static void rf_malformed(struct tl_reflector *r)
{
	r->stats.malformed++;
	tl_metric_add("termline_api_malformed_events_total", NULL, 1);
}

static int rf_watch_obj(void *userdata, struct json_object *ev)
{
	struct tl_reflector *r = userdata;
	struct json_object *obj;
	const char *type, *rv;

	type = json_object_is_type(ev, json_type_object) ? obj_str(ev, "type", NULL) : NULL;
	if (!type || !json_object_object_get_ex(ev, "object", &obj) ||
	    !json_object_is_type(obj, json_type_object)) {
		rf_malformed(r);
		return 0;
	}
	if (strcmp(type, "ERROR") == 0) {
		struct json_object *code;
		int c = json_object_object_get_ex(obj, "code", &code) ? json_object_get_int(code) : 0;

		/* 410 Gone: our version is older than the server's window
		 * (etcd compaction): the cache must be rebuilt by a LIST. */
		if (c == 410)
			r->watch_expired = true;
		else
			r->watch_error = true;
		rf_error(r, c == 410 ? "expired" : "watch_error", "WATCH %s: ERROR %d %.160s",
			 r->resource, c, obj_str(obj, "message", NULL) ? obj_str(obj, "message", NULL) : "");
		return -ECONNABORTED;
	}
	rv = obj_str(obj, "metadata", "resourceVersion");
	if (!rv || !*rv || strlen(rv) >= RF_MAX_RV) {
		rf_malformed(r);
		return 0;
	}
	if (strcmp(type, "BOOKMARK") == 0) {
		memcpy(r->rv, rv, strlen(rv) + 1);
		r->stats.bookmarks++;
		r->watch_got_data = true;
		return 0;
	}
	if ((strcmp(type, "ADDED") != 0 && strcmp(type, "MODIFIED") != 0 &&
	     strcmp(type, "DELETED") != 0) ||
	    !obj_str(obj, "metadata", "uid")) {
		rf_malformed(r);
		return 0;
	}
	memcpy(r->rv, rv, strlen(rv) + 1);
	r->stats.events++;
	r->watch_got_data = true;
	r->ops.event(r->userdata, type, obj);
	return 0;
}

static int rf_watch_data(void *userdata, const char *buf, size_t len)
{
	struct tl_reflector *r = userdata;
	uint64_t before = tl_kstream_malformed(r->watch_stream);
	int k = tl_kstream_feed(r->watch_stream, buf, len);
	uint64_t after = tl_kstream_malformed(r->watch_stream);

	if (after > before) {
		r->stats.malformed += after - before;
		tl_metric_add("termline_api_malformed_events_total", NULL, after - before);
	}
	return k;
}

static void rf_watch_done(void *userdata, int res, long status, int retry_after_s,
			  const char *msg)
{
	struct tl_reflector *r = userdata;
	bool partial = tl_kstream_partial(r->watch_stream);

	r->req = NULL;
	if (r->watch_got_data)
		r->attempts = 0;
	if (r->watch_expired) {
		rf_schedule(r, RF_NEXT_LIST, 0);
		return;
	}
	if (r->watch_error) {
		rf_backoff(r, RF_NEXT_WATCH, -1);
		return;
	}
	if (status == 410) {
		rf_error(r, "http_410", "WATCH %s: HTTP 410", r->resource);
		rf_schedule(r, RF_NEXT_LIST, 0);
		return;
	}
	if (res < 0 || partial) {
		rf_error(r, partial ? "truncated" : "transport", "WATCH %s: %s", r->resource,
			 partial ? "stream ended inside an object" : msg);
		rf_backoff(r, RF_NEXT_WATCH, -1);
		return;
	}
	if (status != 200) {
		rf_error(r, status_kind(status), "WATCH %s: HTTP %ld %.200s", r->resource, status,
			 msg);
		if (status == 401)
			tl_kube_auth_invalidate(r->auth, r->creds_gen, tl_now_mono_ms());
		rf_backoff(r, RF_NEXT_WATCH, status == 429 || status == 503 ? retry_after_s : -1);
		return;
	}
	/* clean end (the server's timeoutSeconds): continue from where we are */
	if (!r->watch_got_data && tl_now_mono_ms() - r->watch_started_ms < RF_WATCH_MIN_HEALTHY_MS)
		rf_backoff(r, RF_NEXT_WATCH, -1);
	else
		rf_schedule(r, RF_NEXT_WATCH, 0);
}

static void rf_start_watch(struct tl_reflector *r)
{
	static const struct tl_khttp_ops ops = { .data = rf_watch_data, .done = rf_watch_done };
	unsigned timeout = RF_WATCH_TIMEOUT_MIN_S +
			   (unsigned)(rf_rand(r) * RF_WATCH_TIMEOUT_SPREAD_S);
	struct tl_khttp_opts o = { .idle_timeout_s = timeout + RF_WATCH_IDLE_EXTRA_S };
	const struct tl_kube_creds *creds;
	char *path = NULL, *esc;
	int k;

	k = rf_creds(r, RF_NEXT_WATCH, &creds);
	if (k == -EAGAIN)
		return;
	r->stats.watches++;
	if (r->stats.watches > 1) {
		r->stats.restarts++;
		rf_metric(r, "termline_watch_restarts_total", NULL);
	}
	if (k < 0) {
		rf_backoff(r, RF_NEXT_WATCH, -1);
		return;
	}
	esc = curl_easy_escape(NULL, r->rv, 0);
	k = esc ? asprintf(&path,
			   "%s?%s%swatch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=%u",
			   r->path, r->query ? r->query : "", r->query ? "&" : "", esc, timeout)
		: -1;
	curl_free(esc);
	if (k < 0) {
		path = NULL;
		rf_backoff(r, RF_NEXT_WATCH, -1);
		return;
	}
	tl_kstream_reset(r->watch_stream);
	r->watch_started_ms = tl_now_mono_ms();
	r->watch_got_data = false;
	r->watch_expired = false;
	r->watch_error = false;
	r->state = RF_WATCHING;
	k = tl_khttp_get(r->http, r->kc, creds, path, &o, &ops, r, &r->req);
	free(path);
	if (k < 0) {
		r->req = NULL;
		rf_error(r, "transport", "WATCH %s: cannot start request: %s", r->resource,
			 strerror(-k));
		rf_backoff(r, RF_NEXT_WATCH, -1);
	}
}

static void rf_timer(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct tl_reflector *r = userdata;

	if (r->state != RF_WAITING)
		return;
	if (r->next == RF_NEXT_LIST)
		rf_start_list(r);
	else
		rf_start_watch(r);
}

int tl_reflector_new(struct tl_loop *loop, struct tl_khttp *http, const struct tl_kubeconfig *kc,
		     struct tl_kube_auth *auth, const struct tl_reflector_config *cfg,
		     const struct tl_reflector_ops *ops, void *userdata, struct tl_reflector **ret)
{
	struct tl_kstream_limits ll = { .max_object = RF_MAX_LIST_PAGE,
					.max_cost = RF_MAX_LIST_PAGE_COST };
	struct tl_kstream_limits wl = { .max_object = RF_MAX_EVENT, .max_cost = RF_MAX_EVENT_COST };
	struct tl_reflector *r;
	int k = -ENOMEM;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->loop = loop;
	r->http = http;
	r->kc = kc;
	r->auth = auth;
	r->ops = *ops;
	r->userdata = userdata;
	r->page_limit = cfg->page_limit ? cfg->page_limit : RF_DEFAULT_LIMIT;
	r->resource = strdup(cfg->resource);
	r->path = strdup(cfg->path);
	r->query = cfg->query ? strdup(cfg->query) : NULL;
	r->rnd_state = (tl_now_mono_ms() ^ (uint64_t)(uintptr_t)r) | 1;
	if (!r->resource || !r->path || (cfg->query && !r->query))
		goto fail;
	k = tl_kstream_new(&ll, rf_list_obj, r, &r->list_stream);
	if (k < 0)
		goto fail;
	k = tl_kstream_new(&wl, rf_watch_obj, r, &r->watch_stream);
	if (k < 0)
		goto fail;
	k = tl_loop_add_timer(loop, 0, 0, rf_timer, r, &r->timer);
	if (k < 0)
		goto fail;
	k = tl_kube_auth_subscribe(auth, rf_creds_ready, r);
	if (k < 0)
		goto fail;
	r->subscribed = true;
	tl_metric_describe("termline_watch_restarts_total", TL_METRIC_COUNTER,
			   "Watches started again after the first, by resource.");
	tl_metric_describe("termline_relists_total", TL_METRIC_COUNTER,
			   "LISTs after the first (410 Gone, errors), by resource.");
	tl_metric_describe("termline_api_errors_total", TL_METRIC_COUNTER,
			   "API server errors by resource and kind.");
	tl_metric_describe("termline_api_malformed_events_total", TL_METRIC_COUNTER,
			   "Watch events or list items skipped as malformed.");
	*ret = r;
	return 0;
fail:
	tl_reflector_free(r);
	return k;
}

int tl_reflector_start(struct tl_reflector *r)
{
	if (r->state != RF_IDLE)
		return -EBUSY;
	rf_schedule(r, RF_NEXT_LIST, 0);
	return r->state == RF_WAITING ? 0 : -EIO;
}

void tl_reflector_free(struct tl_reflector *r)
{
	if (!r)
		return;
	tl_khttp_cancel(r->req);
	if (r->subscribed)
		tl_kube_auth_unsubscribe(r->auth, rf_creds_ready, r);
	tl_timer_free(r->timer);
	tl_kstream_free(r->list_stream);
	tl_kstream_free(r->watch_stream);
	free(r->resource);
	free(r->path);
	free(r->query);
	free(r);
}

bool tl_reflector_synced(const struct tl_reflector *r)
{
	return r && r->synced;
}

const struct tl_reflector_stats *tl_reflector_stats(const struct tl_reflector *r)
{
	return &r->stats;
}

const char *tl_reflector_last_error(const struct tl_reflector *r)
{
	return r->last_error;
}
