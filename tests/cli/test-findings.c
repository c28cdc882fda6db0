// SPDX-License-Identifier: Apache-2.0
/* The finding rules on hand-built timelines, including the boundaries: a
 * request that ended exactly when the listener closed, no deletion event,
 * an incomplete timeline (docs/findings.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include "check-run.h"
#include "clock.h"
#include "findings.h"

/* 2026-12-01T03:00:00Z */
#define BASE_NS 1796094000000000000LL

static struct json_object *doc_new(bool complete)
{
	struct json_object *d =
	    json_tokener_parse("{\"apiVersion\":\"termline/v1\","
			       "\"pod\":{\"namespace\":\"shop\",\"name\":\"web-1\",\"uid\":\"u1\","
			       "\"node\":\"n1\",\"ip\":\"10.0.0.5\","
			       "\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"web-5d9c7\"},"
			       "\"terminationGracePeriodSeconds\":6},"
			       "\"containers\":[{\"name\":\"app\",\"containerID\":\"containerd://"
			       "a\",\"role\":\"main\",\"cgroupId\":1},"
			       "{\"name\":\"istio-proxy\",\"containerID\":\"containerd://"
			       "b\",\"role\":\"sidecar\",\"cgroupId\":2}],"
			       "\"events\":[],\"findings\":[],\"complete\":true,"
			       "\"loss\":{\"kernelEventsDropped\":0,\"eventsAggregated\":0,"
			       "\"eventsDropped\":0,\"diskErrors\":0,\"agentRestarts\":0},"
			       "\"recorder\":{}}");

	ck_assert_ptr_nonnull(d);
	if (!complete) {
		json_object_object_add(d, "complete", json_object_new_boolean(0));
		json_object_object_add(json_object_object_get(d, "loss"), "kernelEventsDropped",
				       json_object_new_int(3));
	}
	return d;
}

/* An event at BASE + ms; extra is a JSON object merged in. Events must be
 * added in time order, as the agent writes them. */
static void ev(struct json_object *d, double ms, const char *type, const char *container,
	       const char *extra)
{
	struct json_object *e = extra ? json_tokener_parse(extra) : json_object_new_object();
	char t[TL_TIME_STRLEN];

	ck_assert_ptr_nonnull(e);
	tl_time_format(BASE_NS + (int64_t)(ms * 1e6), t);
	json_object_object_add(e, "time", json_object_new_string(t));
	json_object_object_add(e, "type", json_object_new_string(type));
	json_object_object_add(e, "container",
			       container ? json_object_new_string(container) : NULL);
	json_object_array_add(json_object_object_get(d, "events"), e);
}

static void req(struct json_object *d, double start_ms, double dur_ms, const char *id, int status,
		const char *flags, const char *container, const char *direction, const char *source)
{
	char extra[512], t[TL_TIME_STRLEN];

	tl_time_format(BASE_NS + (int64_t)(start_ms * 1e6), t);
	snprintf(
	    extra, sizeof(extra),
	    "{\"source\":\"%s\",\"requestId\":\"%s\",\"method\":\"GET\",\"path\":\"/"
	    "orders\",\"status\":%d,"
	    "\"start\":\"%s\",\"durationMs\":%g,\"direction\":\"%s\",\"responseFlags\":\"%s\"}",
	    source, id, status, t, dur_ms, direction, flags);
	ev(d, start_ms + dur_ms, "http.request", container, extra);
}

static void deletion(struct json_object *d, double ms)
{
	ev(d, ms, "pod.deletion_requested", NULL, "{\"source\":\"api\",\"gracePeriodSeconds\":6}");
}

static void sig(struct json_object *d, double ms, const char *c, int pid, const char *signal,
		const char *result)
{
	char extra[256];

	snprintf(extra, sizeof(extra),
		 "{\"source\":\"kernel\",\"signal\":\"%s\",\"signo\":%d,\"pid\":%d,\"comm\":\"%s\","
		 "\"senderPid\":9,"
		 "\"senderComm\":\"containerd-shim\",\"result\":\"%s\"}",
		 signal, strcmp(signal, "SIGKILL") == 0 ? 9 : 15, pid, c, result);
	ev(d, ms, "process.signal", c, extra);
}

static void ex(struct json_object *d, double ms, const char *c, int pid, int code, int signo)
{
	char extra[200];

	snprintf(
	    extra, sizeof(extra),
	    "{\"source\":\"kernel\",\"pid\":%d,\"comm\":\"%s\",\"exitCode\":%d,\"exitSignal\":%d}",
	    pid, c, code, signo);
	ev(d, ms, "process.exit", c, extra);
}

static void listen_ev(struct json_object *d, double ms, const char *c, int port, bool closed)
{
	char extra[128];

	snprintf(extra, sizeof(extra),
		 "{\"source\":\"kernel\",\"address\":\"0.0.0.0\",\"port\":%d}", port);
	ev(d, ms, closed ? "socket.listen_closed" : "socket.listen", c, extra);
}

static void endpoint(struct json_object *d, double ms, bool ready, bool serving)
{
	char extra[200];

	snprintf(extra, sizeof(extra),
		 "{\"source\":\"api\",\"service\":\"web\",\"endpointSlice\":\"web-x\",\"ready\":%s,"
		 "\"serving\":%s,"
		 "\"terminating\":true}",
		 ready ? "true" : "false", serving ? "true" : "false");
	ev(d, ms, "endpoint.condition", NULL, extra);
}

static void removed(struct json_object *d, double ms)
{
	ev(d, ms, "endpoint.removed", NULL,
	   "{\"source\":\"api\",\"service\":\"web\",\"endpointSlice\":\"web-x\"}");
}

static struct json_object *compute(struct json_object *d)
{
	struct json_object *f = NULL;

	ck_assert_int_eq(tl_findings_compute(d, &f), 0);
	ck_assert_ptr_nonnull(f);
	return f;
}

static struct json_object *find(struct json_object *fs, const char *rule)
{
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);

		if (strcmp(json_object_get_string(json_object_object_get(f, "rule")), rule) == 0)
			return f;
	}
	return NULL;
}

static const char *ids_of(struct json_object *f)
{
	static char buf[1024];
	struct json_object *ids = json_object_object_get(f, "requestIds");

	buf[0] = 0;
	for (size_t i = 0; i < json_object_array_length(ids); i++) {
		if (i)
			strcat(buf, ",");
		strcat(buf, json_object_get_string(json_object_array_get_idx(ids, i)));
	}
	return buf;
}

static int64_t reco_value(struct json_object *f)
{
	struct json_object *r = json_object_object_get(f, "recommendation");

	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_nonnull(json_object_object_get(r, "setting"));
	ck_assert_ptr_nonnull(json_object_object_get(r, "formula"));
	return json_object_get_int64(json_object_object_get(r, "value"));
}

static double num(struct json_object *f, const char *key)
{
	struct json_object *v = json_object_object_get(json_object_object_get(f, "numbers"), key);

	ck_assert_msg(v != NULL, "no number %s", key);
	return json_object_get_double(v);
}

/* The sidecar race: both containers get SIGTERM at once, the app closes
 * its listener, the proxy keeps accepting and forwarding until the
 * endpoint is gone. */
static struct json_object *sidecar_race_ex(bool with_deletion, bool complete, double proxy_exit)
{
	struct json_object *d = doc_new(complete);

	req(d, -500, 20, "before-ok", 200, "-", "istio-proxy", "inbound", "log");
	if (with_deletion)
		deletion(d, 0);
	endpoint(d, 10, false, true);
	sig(d, 50, "app", 100, "SIGTERM", "delivered");
	sig(d, 50, "istio-proxy", 200, "SIGTERM", "delivered");
	/* ends exactly when the listener closes, failed: not after it */
	req(d, 80, 20, "edge-end", 503, "-", "istio-proxy", "inbound", "kernel");
	/* an access log line's times are milliseconds: one that ends 2 ms
	 * before the close (its resolution) is not after it, one that says it
	 * ended 1 ms before may have been in flight then */
	req(d, 97, 1, "log-edge", 503, "UF", "istio-proxy", "inbound", "log");
	req(d, 99, 0, "log-ms", 503, "UF", "istio-proxy", "inbound", "log");
	/* ends exactly then and answered: fine */
	req(d, 90, 10, "edge-ok", 200, "-", "istio-proxy", "inbound", "log");
	listen_ev(d, 100, "app", 8080, true);
	/* starts exactly at the close */
	req(d, 100, 2, "at-close", 503, "UF", "istio-proxy", "inbound", "log");
	/* in flight across the close, reset: after it */
	req(d, 95, 30, "inflight", 503, "UC", "istio-proxy", "inbound", "log");
	req(d, 300, 2, "r-300", 503, "UF", "istio-proxy", "inbound", "log");
	/* the same request on the proxy's socket too: one request */
	req(d, 300, 2, "r-300", 503, "-", "istio-proxy", "inbound", "kernel");
	req(d, 700, 2, "r-700", 503, "UF", "istio-proxy", "inbound", "log");
	endpoint(d, 800, false, false);
	ex(d, 1100, "app", 100, 0, 0);
	removed(d, 1600);
	ex(d, proxy_exit, "istio-proxy", 200, 0, 0);
	ev(d, 4500, "pod.deleted", NULL, "{\"source\":\"api\"}");
	return d;
}

static struct json_object *sidecar_race(bool with_deletion, bool complete)
{
	return sidecar_race_ex(with_deletion, complete, 4050);
}

START_TEST(listener_closed_boundaries)
{
	struct json_object *d = sidecar_race(true, true), *fs = compute(d), *f;

	f = find(fs, "requests_after_listener_closed");
	ck_assert_ptr_nonnull(f);
	/* most severe first */
	ck_assert_ptr_eq(json_object_array_get_idx(fs, 0), f);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "severity")), "error");
	ck_assert_str_eq(ids_of(f), "inflight,log-ms,at-close,r-300,r-700");
	ck_assert_int_eq((int)num(f, "failedRequests"), 5);
	ck_assert_double_eq_tol(num(f, "listenerClosedS"), 0.1, 1e-9);
	ck_assert_double_eq_tol(num(f, "endpointRemovedS"), 1.6, 1e-9);
	ck_assert_int_eq(
	    json_object_get_int(json_object_object_get(
		json_object_object_get(json_object_object_get(f, "numbers"), "forwardedBy"),
		"istio-proxy")),
	    5);
	/* ceil(1.6 s to the removal + 1 s margin) */
	ck_assert_int_eq(reco_value(f), 3);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(
			     json_object_object_get(f, "recommendation"), "setting")),
			 "spec.containers[app].lifecycle.preStop.sleep.seconds");
	{
		/* the preStop gate offered next to the 3 s sleep: a timeout of
		 * max(2 x 3, 3 + 10) = 13 s */
		struct json_object *g = json_object_object_get(
		    json_object_object_get(f, "recommendation"), "gate");

		ck_assert_ptr_nonnull(g);
		ck_assert_str_eq(json_object_get_string(json_object_object_get(g, "setting")),
				 "spec.containers[app].lifecycle.preStop.exec.command");
		ck_assert_str_eq(json_object_get_string(json_object_object_get(g, "value")),
				 "termline-wait --quiet 1s --timeout 13s");
		ck_assert_ptr_nonnull(strstr(
		    json_object_get_string(json_object_object_get(g, "formula")), "= 13 s"));
	}
	ck_assert_ptr_null(json_object_object_get(f, "incomplete"));
	/* the lag rule: the app stopped serving 1.5 s before the removal */
	f = find(fs, "endpoint_removal_lag");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "severity")), "warning");
	ck_assert_double_eq_tol(num(f, "lagS"), 1.5, 1e-9);
	ck_assert_double_eq_tol(num(f, "readyFalseS"), 0.01, 1e-9);
	ck_assert_double_eq_tol(num(f, "servingFalseS"), 0.8, 1e-9);
	{
		struct json_object *g =
		    json_object_object_get(json_object_object_get(f, "numbers"), "gaps");

		ck_assert_double_eq_tol(
		    json_object_get_double(json_object_object_get(g, "deletionToReadyFalseS")),
		    0.01, 1e-9);
		ck_assert_double_eq_tol(
		    json_object_get_double(json_object_object_get(g, "readyFalseToServingFalseS")),
		    0.79, 1e-9);
		ck_assert_double_eq_tol(
		    json_object_get_double(json_object_object_get(g, "servingFalseToRemovedS")),
		    0.8, 1e-9);
	}
	ck_assert_int_eq(reco_value(f), 3);
	/* the proxy's 4 s drain outlasts the 3 s sleep and the 0.05 s the app
	 * then serves by more than the slack: nothing to say of the sidecar */
	ck_assert_ptr_null(json_object_object_get(
	    json_object_object_get(find(fs, "requests_after_listener_closed"), "recommendation"),
	    "sidecar"));
	/* nothing else fired: no SIGKILL, the proxy outlived the app */
	ck_assert_ptr_null(find(fs, "sigkill_after_grace"));
	ck_assert_ptr_null(find(fs, "exit_order"));
	ck_assert_ptr_null(find(fs, "requests_after_sidecar_exit"));
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

/* The proxy drains 3.4 s after its SIGTERM: with the recommended 3 s
 * sleep and the 0.05 s the app then serves, less than half a second of
 * slack is left, so the sleep alone would leave the app serving without
 * its proxy; the recommendation says what keeps the proxy long enough. */
START_TEST(prestop_outlives_sidecar)
{
	struct json_object *d = sidecar_race_ex(true, true, 3450), *fs = compute(d), *f, *sc;

	f = find(fs, "requests_after_listener_closed");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(reco_value(f), 3);
	sc = json_object_object_get(json_object_object_get(f, "recommendation"), "sidecar");
	ck_assert_ptr_nonnull(sc);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(sc, "container")),
			 "istio-proxy");
	/* ceil(3 s + 0.05 s + 1 s margin) = 5; the grace: max(6, 5 + 1) */
	ck_assert_int_eq(json_object_get_int(json_object_object_get(sc, "value")), 5);
	ck_assert_int_eq(json_object_get_int(json_object_object_get(sc, "terminationGracePeriodSeconds")),
			 6);
	ck_assert_ptr_nonnull(strstr(json_object_get_string(json_object_object_get(sc, "formula")),
				     "istio-proxy stopped accepting 3.400 s after its SIGTERM"));
	ck_assert_ptr_nonnull(strstr(json_object_get_string(json_object_object_get(sc, "setting")),
				     "terminationDrainDuration"));
	/* every rule whose fix is this sleep carries it */
	ck_assert_ptr_nonnull(json_object_object_get(
	    json_object_object_get(find(fs, "endpoint_removal_lag"), "recommendation"), "sidecar"));
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(listener_closed_no_failures)
{
	struct json_object *d = doc_new(true), *fs;

	deletion(d, 0);
	sig(d, 3000, "app", 100, "SIGTERM", "delivered");
	listen_ev(d, 3000, "app", 8080, true);
	req(d, 1000, 5, "ok-1", 200, "-", "istio-proxy", "inbound", "log");
	/* a failure before the close is not this rule's */
	req(d, 2000, 5, "fail-before", 503, "UF", "istio-proxy", "inbound", "log");
	fs = compute(d);
	ck_assert_ptr_null(find(fs, "requests_after_listener_closed"));
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(no_deletion_event)
{
	struct json_object *d = sidecar_race(false, true), *fs = compute(d), *f;

	f = find(fs, "requests_after_listener_closed");
	ck_assert_ptr_nonnull(f);
	/* times from the first SIGTERM (50 ms) instead */
	ck_assert_double_eq_tol(num(f, "listenerClosedS"), 0.05, 1e-9);
	ck_assert_ptr_nonnull(strstr(json_object_get_string(json_object_object_get(f, "summary")),
				     "no deletion recorded"));
	ck_assert_str_eq(ids_of(f), "inflight,log-ms,at-close,r-300,r-700");
	/* ceil(1.55 + 1) */
	ck_assert_int_eq(reco_value(f), 3);
	/* the lag rule needs the deletion */
	ck_assert_ptr_null(find(fs, "endpoint_removal_lag"));
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

/* A document's times go from year 1 to 2262: differences of two of them in
 * nanoseconds overflow int64 (found by fuzz-findings). Times outside
 * 1970..2200 read as absent, so the rules see only the sane events. */
START_TEST(times_out_of_range)
{
	struct json_object *d = doc_new(true), *evs, *sane, *fs, *f, *e;
	char extra[512];

	/* a deletion in year 1, before everything: ignored */
	e = json_tokener_parse("{\"source\":\"api\",\"gracePeriodSeconds\":6}");
	json_object_object_add(e, "time", json_object_new_string("0001-01-01T00:00:00Z"));
	json_object_object_add(e, "type", json_object_new_string("pod.deletion_requested"));
	json_object_array_add(json_object_object_get(d, "events"), e);
	sane = sidecar_race(true, true);
	evs = json_object_object_get(sane, "events");
	for (size_t i = 0; i < json_object_array_length(evs); i++)
		json_object_array_add(json_object_object_get(d, "events"),
				      json_object_get(json_object_array_get_idx(evs, i)));
	json_object_put(sane);
	/* a failed request whose start is in 2261: its start
	 * is ignored, its event time (300 ms) stands */
	snprintf(extra, sizeof(extra),
		 "{\"source\":\"log\",\"requestId\":\"far\",\"status\":503,"
		 "\"start\":\"2261-12-31T23:59:59.999Z\",\"durationMs\":2,"
		 "\"direction\":\"inbound\",\"responseFlags\":\"UF\"}");
	ev(d, 300, "http.request", "istio-proxy", extra);
	/* and an event from after 2200 */
	e = json_tokener_parse("{\"source\":\"kernel\",\"address\":\"0.0.0.0\",\"port\":8080}");
	json_object_object_add(e, "time", json_object_new_string("2250-01-01T00:00:00Z"));
	json_object_object_add(e, "type", json_object_new_string("socket.listen_closed"));
	json_object_object_add(e, "container", json_object_new_string("app"));
	json_object_array_add(json_object_object_get(d, "events"), e);

	fs = compute(d);
	f = find(fs, "requests_after_listener_closed");
	ck_assert_ptr_nonnull(f);
	ck_assert_double_eq_tol(num(f, "listenerClosedS"), 0.1, 1e-9);
	ck_assert_double_eq_tol(num(f, "firstFailedS"), 0.095, 1e-9);
	ck_assert_double_eq_tol(num(f, "lastFailedS"), 0.702, 1e-9);
	ck_assert_str_eq(ids_of(f), "inflight,log-ms,at-close,r-300,far,r-700");
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(incomplete_in_every_finding)
{
	struct json_object *d = sidecar_race(true, false), *fs = compute(d);

	ck_assert_int_ge((int)json_object_array_length(fs), 2);
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);

		ck_assert(json_object_get_boolean(json_object_object_get(f, "incomplete")));
		ck_assert_ptr_nonnull(
		    strstr(json_object_get_string(json_object_object_get(f, "summary")),
			   "Timeline incomplete (kernelEventsDropped 3)"));
	}
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(sidecar_exit)
{
	struct json_object *d = doc_new(true), *fs, *f;

	deletion(d, 0);
	sig(d, 0, "app", 100, "SIGTERM", "delivered");
	sig(d, 0, "istio-proxy", 200, "SIGTERM", "delivered");
	req(d, 100, 10, "out-ok", 200, "-", "app", "outbound", "kernel");
	listen_ev(d, 400, "istio-proxy", 15001, true);
	ex(d, 500, "istio-proxy", 200, 0, 0);
	req(d, 399, 5, "out-inflight", 0, "-", "app", "outbound", "kernel");
	req(d, 600, 5, "out-1", 0, "-", "app", "outbound", "kernel");
	req(d, 900, 5, "out-2", 503, "-", "app", "outbound", "kernel");
	/* inbound failures are not this rule's */
	req(d, 950, 5, "in-1", 503, "UF", "app", "inbound", "kernel");
	listen_ev(d, 1500, "app", 8080, true);
	ex(d, 2000, "app", 100, 0, 0);
	fs = compute(d);
	f = find(fs, "requests_after_sidecar_exit");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(ids_of(f), "out-inflight,out-1,out-2");
	ck_assert_double_eq_tol(num(f, "sidecarStoppedS"), 0.4, 1e-9);
	/* the proxy must outlive the app's stop (2 s) + 1 s */
	ck_assert_int_eq(reco_value(f), 3);
	/* and the proxy left while the app still served */
	f = find(fs, "exit_order");
	ck_assert_ptr_nonnull(f);
	ck_assert_double_eq_tol(num(f, "gapS"), 1.1, 1e-9);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(
			     json_object_object_get(f, "recommendation"), "value")),
			 "Always");
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(traffic_before_ready)
{
	struct json_object *d = doc_new(true), *fs, *f;

	listen_ev(d, 0, "istio-proxy", 15006, false);
	req(d, 100, 2, "early-1", 503, "UF", "istio-proxy", "inbound", "log");
	req(d, 400, 2, "early-2", 503, "UF", "istio-proxy", "inbound", "log");
	listen_ev(d, 1200, "app", 8080, false);
	req(d, 1300, 2, "late-ok", 200, "-", "istio-proxy", "inbound", "log");
	fs = compute(d);
	f = find(fs, "traffic_before_ready");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(ids_of(f), "early-1,early-2");
	/* the app listened 1.1 s after the first request */
	ck_assert_int_eq(reco_value(f), 2);
	ck_assert_ptr_null(find(fs, "requests_after_listener_closed"));
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(sigkill_and_ignored)
{
	struct json_object *d = doc_new(true), *fs, *f;

	deletion(d, 0);
	sig(d, 0, "app", 1, "SIGTERM", "ignored");
	sig(d, 0, "istio-proxy", 200, "SIGTERM", "delivered");
	ex(d, 4000, "istio-proxy", 200, 0, 0);
	req(d, 5500, 1000, "slow", 0, "-", "app", "inbound", "kernel");
	sig(d, 6000, "app", 1, "SIGKILL", "delivered");
	ex(d, 6001, "app", 1, 0, 9);
	fs = compute(d);
	f = find(fs, "sigterm_ignored");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "severity")), "error");
	ck_assert_double_eq_tol(num(f, "wastedS"), 6.0, 1e-9);
	f = find(fs, "sigkill_after_grace");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(ids_of(f), "slow");
	ck_assert_int_eq((int)num(f, "inFlightAtKill"), 1);
	/* busy until 6.5 s: ceil(6.5 + 1) = 8, more than the 6 s grace */
	ck_assert_int_eq(reco_value(f), 8);
	/* errors before warnings */
	ck_assert_str_eq(json_object_get_string(
			     json_object_object_get(json_object_array_get_idx(fs, 0), "severity")),
			 "error");
	for (size_t i = 1; i < json_object_array_length(fs); i++)
		ck_assert_int_le(
		    tl_finding_severity_rank(json_object_get_string(
			json_object_object_get(json_object_array_get_idx(fs, i), "severity"))),
		    tl_finding_severity_rank(json_object_get_string(
			json_object_object_get(json_object_array_get_idx(fs, i - 1), "severity"))));
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(resets_and_quiet_lag)
{
	struct json_object *d = doc_new(true), *fs, *f;

	deletion(d, 0);
	endpoint(d, 5, false, true);
	removed(d, 300);
	sig(d, 2000, "app", 100, "SIGTERM", "delivered");
	listen_ev(d, 2010, "app", 8080, true);
	ev(d, 2020, "tcp.reset_sent", "app",
	   "{\"source\":\"kernel\",\"local\":\"10.0.0.5:8080\",\"remote\":\"10.0.0.9:4000\"}");
	ex(d, 2100, "app", 100, 0, 0);
	fs = compute(d);
	f = find(fs, "resets_during_drain");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq((int)num(f, "resets"), 1);
	/* the endpoint left 1.71 s before the app stopped: info, no change */
	f = find(fs, "endpoint_removal_lag");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "severity")), "info");
	ck_assert_double_eq_tol(num(f, "lagS"), -1.71, 1e-9);
	ck_assert_ptr_eq(json_object_array_get_idx(fs, json_object_array_length(fs) - 1), f);
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(not_a_document)
{
	struct json_object *d = json_tokener_parse("{\"apiVersion\":\"termline/v1\"}"), *f = NULL;

	ck_assert_int_eq(tl_findings_compute(d, &f), -EINVAL);
	ck_assert_ptr_null(f);
	ck_assert_int_eq(tl_findings_compute(NULL, &f), -EINVAL);
	json_object_put(d);
}
END_TEST

START_TEST(attach_replaces)
{
	struct json_object *d = sidecar_race(true, true);

	ck_assert_int_eq(tl_findings_attach(d), 0);
	ck_assert_int_ge((int)json_object_array_length(json_object_object_get(d, "findings")), 2);
	json_object_put(d);
}
END_TEST

START_TEST(from_text)
{
	struct json_object *d = sidecar_race(true, true), *f = NULL, *g = NULL;
	const char *text = json_object_to_json_string(d);

	ck_assert_int_eq(tl_findings_from_text(text, strlen(text), &f), 0);
	ck_assert_int_eq(tl_findings_compute(d, &g), 0);
	ck_assert_str_eq(json_object_to_json_string(f), json_object_to_json_string(g));
	json_object_put(f);
	f = NULL;
	/* cut short: not JSON */
	ck_assert_int_eq(tl_findings_from_text(text, strlen(text) / 2, &f), -EBADMSG);
	ck_assert_ptr_null(f);
	json_object_put(g);
	json_object_put(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("findings");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, listener_closed_boundaries);
	tcase_add_test(tc, prestop_outlives_sidecar);
	tcase_add_test(tc, listener_closed_no_failures);
	tcase_add_test(tc, no_deletion_event);
	tcase_add_test(tc, incomplete_in_every_finding);
	tcase_add_test(tc, times_out_of_range);
	tcase_add_test(tc, sidecar_exit);
	tcase_add_test(tc, traffic_before_ready);
	tcase_add_test(tc, sigkill_and_ignored);
	tcase_add_test(tc, resets_and_quiet_lag);
	tcase_add_test(tc, not_a_document);
	tcase_add_test(tc, attach_replaces);
	tcase_add_test(tc, from_text);
	suite_add_tcase(s, tc);
	return tl_check_run(s) ? 1 : 0;
}
