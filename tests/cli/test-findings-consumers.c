// SPDX-License-Identifier: Apache-2.0
/* The consumer rules (daemon/findings/findings-consumers.c) on hand-built
 * timelines: consumers named by the document's resolved peers or by their
 * address (IPv4, IPv6), the lag behind the endpoint's removal, failed
 * request IDs per consumer, connections accepted after the removal, the
 * Pod's own legs left out, keep-alive connections across the drain, the
 * preStop recommendation set by the slowest consumer, the rollout
 * aggregate, and a document without peers (written before them). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include "check-run.h"
#include "clock.h"
#include "findings.h"
#include "findings-consumers.h"

/* 2026-12-01T03:00:00Z */
#define BASE_NS 1796094000000000000LL

static struct json_object *doc_new(void)
{
	struct json_object *d = json_tokener_parse(
	    "{\"apiVersion\":\"termline/v1\","
	    "\"pod\":{\"namespace\":\"shop\",\"name\":\"web-1\",\"uid\":\"u1\",\"node\":\"n1\","
	    "\"ip\":\"10.0.0.5\",\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"web-5d9c7\"},"
	    "\"terminationGracePeriodSeconds\":30},"
	    "\"containers\":[{\"name\":\"app\",\"containerID\":\"containerd://a\",\"role\":\"main\","
	    "\"cgroupId\":1},{\"name\":\"istio-proxy\",\"containerID\":\"containerd://b\","
	    "\"role\":\"sidecar\",\"cgroupId\":2}],"
	    "\"events\":[],\"findings\":[],\"complete\":true,"
	    "\"loss\":{\"kernelEventsDropped\":0,\"eventsAggregated\":0,\"eventsDropped\":0,"
	    "\"diskErrors\":0,\"agentRestarts\":0},\"recorder\":{}}");

	ck_assert_ptr_nonnull(d);
	return d;
}

static void ev(struct json_object *d, double ms, const char *type, const char *container,
	       const char *extra)
{
	struct json_object *e = extra ? json_tokener_parse(extra) : json_object_new_object();
	char t[TL_TIME_STRLEN];

	ck_assert_msg(e != NULL, "bad extra %s", extra);
	tl_time_format(BASE_NS + (int64_t)(ms * 1e6), t);
	json_object_object_add(e, "time", json_object_new_string(t));
	json_object_object_add(e, "type", json_object_new_string(type));
	json_object_object_add(e, "container", container ? json_object_new_string(container) : NULL);
	json_object_array_add(json_object_object_get(d, "events"), e);
}

/* An inbound request to the proxy at ms from peer on connection conn (0:
 * none), its connection established at conn_ms (< 0: before the capture). */
static void req(struct json_object *d, double ms, const char *id, int status, const char *peer,
		int conn, double conn_ms, bool close)
{
	char extra[768], t[TL_TIME_STRLEN], cs[TL_TIME_STRLEN + 32] = "", pe[96] = "", cn[48] = "";

	tl_time_format(BASE_NS + (int64_t)(ms * 1e6), t);
	if (peer)
		snprintf(pe, sizeof(pe), ",\"peer\":\"%s\"", peer);
	if (conn)
		snprintf(cn, sizeof(cn), ",\"conn\":%d", conn);
	if (conn && conn_ms >= 0) {
		char c[TL_TIME_STRLEN];

		tl_time_format(BASE_NS + (int64_t)(conn_ms * 1e6), c);
		snprintf(cs, sizeof(cs), ",\"connStart\":\"%s\"", c);
	}
	snprintf(extra, sizeof(extra),
		 "{\"source\":\"kernel\",\"requestId\":\"%s\",\"method\":\"GET\",\"path\":\"/\","
		 "\"status\":%d,\"start\":\"%s\",\"durationMs\":2,\"direction\":\"inbound\"%s%s%s%s}",
		 id, status, t, pe, cn, cs, close ? ",\"connClose\":true" : "");
	ev(d, ms, "http.request", "istio-proxy", extra);
}

static const char PEERS[] =
    "{\"10.1.0.5\":{\"kind\":\"Pod\",\"namespace\":\"ingress\",\"name\":\"ing-1\","
    "\"workload\":{\"kind\":\"Deployment\",\"name\":\"ingress\"},\"createdAfterTraffic\":false,"
    "\"resolvedAt\":\"2026-12-02T00:00:00Z\"},"
    "\"10.1.0.9\":{\"kind\":\"Node\",\"name\":\"node-b\",\"resolvedAt\":\"2026-12-02T00:00:00Z\"},"
    "\"fd00::7\":{\"kind\":\"external\",\"resolvedAt\":\"2026-12-02T00:00:00Z\"},"
    "\"127.0.0.6\":{\"kind\":\"self\"}}";

/* The story: deletion at 0, not ready at 100, SIGTERM at 200, the app's
 * listener closed at 300, the endpoint removed at 1000. with_peers: the
 * requests carry peers; resolved: the document has "peers". */
static struct json_object *story(bool with_peers, bool resolved)
{
	struct json_object *d = doc_new();
	const char *a = with_peers ? "10.1.0.5:40001" : NULL;
	const char *a2 = with_peers ? "[::ffff:10.1.0.5]:40002" : NULL;

	ev(d, 0, "pod.deletion_requested", NULL, "{\"source\":\"api\",\"gracePeriodSeconds\":30}");
	ev(d, 100, "endpoint.condition", NULL,
	   "{\"source\":\"api\",\"service\":\"web\",\"endpointSlice\":\"web-abc\",\"ready\":false,"
	   "\"serving\":true,\"terminating\":true}");
	req(d, 150, "a-150", 200, a, 1, 140, false);
	ev(d, 200, "process.signal", "app",
	   "{\"source\":\"kernel\",\"signal\":\"SIGTERM\",\"signo\":15,\"pid\":10,\"result\":\"delivered\"}");
	ev(d, 200, "process.signal", "istio-proxy",
	   "{\"source\":\"kernel\",\"signal\":\"SIGTERM\",\"signo\":15,\"pid\":11,\"result\":\"delivered\"}");
	ev(d, 300, "socket.listen_closed", "app", "{\"source\":\"kernel\",\"address\":\"0.0.0.0\",\"port\":8080}");
	req(d, 400, "b-400", 200, with_peers ? "[fd00::7]:5000" : NULL, 2, 390, false);
	req(d, 500, "a-500", 503, a, 3, 495, false);
	/* the proxy's own leg to the app: the Pod itself, never a consumer */
	req(d, 501, "a-500-app", 503, with_peers ? "127.0.0.6:7000" : NULL, 4, 499, false);
	req(d, 900, "a-900", 503, a2, 5, 895, false);
	req(d, 950, "b-950", 200, with_peers ? "[fd00::7]:5001" : NULL, 6, 945, false);
	ev(d, 1000, "endpoint.removed", NULL,
	   "{\"source\":\"api\",\"service\":\"web\",\"endpointSlice\":\"web-abc\"}");
	/* a keep-alive connection of before the capture */
	req(d, 1200, "c-1200", 200, with_peers ? "10.1.0.9:4000" : NULL, 7, -1, false);
	req(d, 1500, "a-1500", 503, a, 8, 1490, false);
	req(d, 1600, "c-1600", 503, with_peers ? "10.1.0.9:4000" : NULL, 7, -1, true);
	if (with_peers)
		ev(d, 2000, "tcp.accepted", "istio-proxy",
		   "{\"source\":\"kernel\",\"peer\":\"10.1.0.5:40100\",\"port\":15006,\"count\":2,"
		   "\"last\":\"2026-12-01T03:00:02.900000000Z\"}");
	req(d, 2800, "a-2800", 503, a, 9, 2790, false);
	if (resolved)
		json_object_object_add(d, "peers", json_tokener_parse(PEERS));
	return d;
}

static struct json_object *finding(struct json_object *fs, const char *rule)
{
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		struct json_object *f = json_object_array_get_idx(fs, i), *r;

		if (json_object_object_get_ex(f, "rule", &r) &&
		    strcmp(json_object_get_string(r), rule) == 0)
			return f;
	}
	return NULL;
}

static struct json_object *get(struct json_object *o, const char *path)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && o; k = strtok_r(NULL, ".", &save))
		if (!json_object_object_get_ex(o, k, &o))
			return NULL;
	return o;
}

/* f's preStop sleep is set by the slowest consumer, ingress/ing-1: its
 * name in numbers and in the formula (as text says it), the value. */
static void assert_set_by_slowest(struct json_object *f, int value, const char *text)
{
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(json_object_get_string(get(f, "numbers.slowestConsumer")), "ingress/ing-1");
	ck_assert_int_eq(json_object_get_int(get(f, "recommendation.value")), value);
	ck_assert_ptr_nonnull(strstr(json_object_get_string(get(f, "recommendation.formula")), text));
}

static struct json_object *consumer(struct json_object *f, const char *name)
{
	struct json_object *list = get(f, "consumers");

	ck_assert_ptr_nonnull(list);
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		struct json_object *c = json_object_array_get_idx(list, i);

		if (strcmp(json_object_get_string(get(c, "consumer")), name) == 0)
			return c;
	}
	ck_abort_msg("no consumer %s in %s", name, json_object_to_json_string(list));
	return NULL;
}

static void ids_are(struct json_object *c, const char *const *want, size_t n)
{
	struct json_object *ids = get(c, "failedRequestIds");

	ck_assert_uint_eq(json_object_array_length(ids), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(ids, i)), want[i]);
}

static double num(struct json_object *o, const char *path)
{
	struct json_object *v = get(o, path);

	ck_assert_msg(v && !json_object_is_type(v, json_type_null), "%s missing", path);
	return json_object_get_double(v);
}

START_TEST(test_resolved_consumers)
{
	struct json_object *d = story(true, true), *fs, *f, *c;
	static const char *const a_ids[] = {"a-500", "a-900", "a-1500", "a-2800"};
	static const char *const c_ids[] = {"c-1600"};
	const char *s;

	ck_assert_int_eq(tl_findings_compute(d, &fs), 0);
	f = finding(fs, "traffic_after_endpoint_removed");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(json_object_get_string(get(f, "severity")), "error");
	s = json_object_get_string(get(f, "summary"));
	ck_assert_msg(strstr(s, "ingress/ing-1 kept sending 1.9 s after the endpoint was removed: "
				"2 requests, 2 failed"),
		      "%s", s);
	/* the slowest first; its IPv4-mapped address is the same consumer */
	c = json_object_array_get_idx(get(f, "consumers"), 0);
	ck_assert_str_eq(json_object_get_string(get(c, "consumer")), "ingress/ing-1");
	ck_assert_str_eq(json_object_get_string(get(c, "workload.kind")), "Deployment");
	ck_assert_str_eq(json_object_get_string(get(c, "workload.name")), "ingress");
	ck_assert_str_eq(json_object_get_string(get(c, "resolvedAt")), "2026-12-02T00:00:00Z");
	/* the last connection (2.9 s) came after the last request (2.8 s) */
	ck_assert_double_eq_tol(num(c, "lagSeconds"), 1.9, 1e-6);
	ck_assert_double_eq_tol(num(c, "lastAfterRemovalS"), 2.8, 1e-6);
	ck_assert_double_eq_tol(num(c, "firstAfterNotReadyS"), 0.15, 1e-6);
	ck_assert_double_eq_tol(num(c, "lastConnectionAfterRemovalS"), 2.9, 1e-6);
	ck_assert_int_eq(json_object_get_int(get(c, "requests")), 5);
	ck_assert_int_eq(json_object_get_int(get(c, "failed")), 4);
	ck_assert_int_eq(json_object_get_int(get(c, "connectionsAccepted")), 2);
	ids_are(c, a_ids, 4);
	c = consumer(f, "node/node-b");
	ck_assert_str_eq(json_object_get_string(get(c, "kind")), "Node");
	ck_assert_double_eq_tol(num(c, "lagSeconds"), 0.6, 1e-6);
	ids_are(c, c_ids, 1);
	/* IPv6, stopped before the removal: a negative lag */
	c = consumer(f, "fd00::7");
	ck_assert_double_eq_tol(num(c, "lagSeconds"), -0.05, 1e-6);
	ck_assert_int_eq(json_object_get_int(get(c, "failed")), 0);
	ck_assert_int_eq(json_object_array_length(get(f, "consumers")), 3);
	ck_assert_int_eq(json_object_get_int(get(f, "numbers.consumersAfterRemoval")), 2);
	ck_assert_int_eq(json_object_array_length(get(f, "requestIds")), 5);

	/* the keep-alive connection of before SIGTERM */
	f = finding(fs, "keepalive_across_drain");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(json_object_get_string(get(f, "severity")), "error");
	ck_assert_int_eq(json_object_get_int(get(f, "numbers.connections")), 1);
	c = json_object_array_get_idx(get(f, "connections"), 0);
	ck_assert_str_eq(json_object_get_string(get(c, "peer")), "10.1.0.9:4000");
	ck_assert_int_eq(json_object_get_int(get(c, "requests")), 2);
	ck_assert(json_object_is_type(get(c, "connStartS"), json_type_null));
	/* it said Connection: close only with its last answer, after the app
	 * had stopped accepting */
	ck_assert(json_object_get_boolean(get(c, "toldToClose")));
	ck_assert_int_eq(json_object_get_int(get(f, "numbers.toldToClose")), 0);
	ck_assert_ptr_nonnull(strstr(json_object_get_string(get(f, "recommendation.formula")),
				     "Connection: close"));

	/* the preStop recommendation is set by the slowest consumer */
	assert_set_by_slowest(finding(fs, "endpoint_removal_lag"), 4, "ingress/ing-1");
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

/* The proxy's log has the keep-alive connection's failed request too, and
 * its record sorts first (it starts a little earlier): the socket's record,
 * the only one with the connection, is the duplicate, and the connection
 * still counts the failure once. */
START_TEST(test_keepalive_failure_logged_first)
{
	struct json_object *d = story(true, true), *fs, *f, *c;

	ev(d, 1599.5, "http.request", "istio-proxy",
	   "{\"source\":\"log\",\"requestId\":\"c-1600\",\"method\":\"GET\",\"path\":\"/\","
	   "\"status\":503,\"start\":\"2026-12-01T03:00:01.599500000Z\",\"durationMs\":2,"
	   "\"direction\":\"inbound\",\"peer\":\"10.1.0.9:4000\"}");
	ck_assert_int_eq(tl_findings_compute(d, &fs), 0);
	f = finding(fs, "keepalive_across_drain");
	ck_assert_ptr_nonnull(f);
	c = json_object_array_get_idx(get(f, "connections"), 0);
	ck_assert_str_eq(json_object_get_string(get(c, "peer")), "10.1.0.9:4000");
	ck_assert_int_eq(json_object_get_int(get(c, "requests")), 2);
	ck_assert_int_eq(json_object_get_int(get(c, "failed")), 1);
	ck_assert_uint_eq(json_object_array_length(get(c, "failedRequestIds")), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(get(c, "failedRequestIds"), 0)),
			 "c-1600");
	ck_assert_int_eq(json_object_get_int(get(f, "numbers.failedRequests")), 1);
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

/* The slowest consumer's last request is the last failed request (no
 * later connection): the consumer still sets the preStop and is named. */
START_TEST(test_slowest_consumer_is_last_failure)
{
	struct json_object *d = story(true, true), *fs, *f, *evs, *kept;

	evs = get(d, "events");
	kept = json_object_new_array();
	for (size_t i = 0; i < json_object_array_length(evs); i++) {
		struct json_object *e = json_object_array_get_idx(evs, i);

		if (strcmp(json_object_get_string(get(e, "type")), "tcp.accepted"))
			json_object_array_add(kept, json_object_get(e));
	}
	ck_assert_uint_eq(json_object_array_length(kept) + 1, json_object_array_length(evs));
	json_object_object_add(d, "events", kept);
	ck_assert_int_eq(tl_findings_compute(d, &fs), 0);
	/* the listener's rule covers every failed request, a-2800 the last */
	f = finding(fs, "requests_after_listener_closed");
	/* a-2800 at +2.800 s: ceil(2.8 + 1) */
	assert_set_by_slowest(f, 4, "the last request of ingress/ing-1, the slowest consumer");
	ck_assert_double_eq_tol(json_object_get_double(get(f, "numbers.coverUntilS")), 2.8, 1e-6);
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(test_unresolved_by_address)
{
	struct json_object *d = story(true, false), *fs, *f, *c;

	ck_assert_int_eq(tl_findings_compute(d, &fs), 0);
	f = finding(fs, "traffic_after_endpoint_removed");
	ck_assert_ptr_nonnull(f);
	/* no names: one consumer per address, v4-mapped folded into IPv4 */
	c = json_object_array_get_idx(get(f, "consumers"), 0);
	ck_assert_str_eq(json_object_get_string(get(c, "consumer")), "10.1.0.5");
	ck_assert(json_object_is_type(get(c, "kind"), json_type_null));
	ck_assert_int_eq(json_object_get_int(get(c, "failed")), 4);
	c = consumer(f, "10.1.0.9");
	ck_assert_double_eq_tol(num(c, "lagSeconds"), 0.6, 1e-6);
	c = consumer(f, "fd00::7");
	ck_assert_int_eq(json_object_array_length(get(f, "consumers")), 3);
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(test_document_without_peers)
{
	struct json_object *d = story(false, false), *fs;

	ck_assert_int_eq(tl_findings_compute(d, &fs), 0);
	ck_assert_ptr_null(finding(fs, "traffic_after_endpoint_removed"));
	ck_assert_ptr_null(finding(fs, "keepalive_across_drain"));
	/* the other rules still answer, the preStop from the removal alone */
	ck_assert_ptr_nonnull(finding(fs, "requests_after_listener_closed"));
	ck_assert_ptr_null(get(finding(fs, "endpoint_removal_lag"), "numbers.slowestConsumer"));
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

START_TEST(test_rollout_aggregate)
{
	struct json_object *agg = json_object_new_object(), *out, *x = NULL;

	for (int i = 0; i < 3; i++) {
		struct json_object *d = story(true, true), *fs;

		ck_assert_int_eq(tl_findings_compute(d, &fs), 0);
		ck_assert_int_eq(tl_consumers_rollout_add(agg, fs), 0);
		json_object_put(fs);
		json_object_put(d);
	}
	out = tl_consumers_rollout_done(agg);
	ck_assert_ptr_nonnull(out);
	for (size_t i = 0; i < json_object_array_length(out); i++)
		if (strcmp(json_object_get_string(get(json_object_array_get_idx(out, i), "consumer")),
			   "ingress/Deployment/ingress") == 0)
			x = json_object_array_get_idx(out, i);
	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(json_object_get_int(get(x, "timelines")), 3);
	ck_assert_int_eq(json_object_get_int(get(x, "pods")), 1);
	ck_assert_int_eq(json_object_get_int(get(x, "failed")), 12);
	ck_assert_double_eq_tol(num(x, "lagP50Seconds"), 1.9, 1e-6);
	ck_assert_double_eq_tol(num(x, "lagMaxSeconds"), 1.9, 1e-6);
	json_object_put(out);
	json_object_put(agg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("findings-consumers");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_resolved_consumers);
	tcase_add_test(tc, test_keepalive_failure_logged_first);
	tcase_add_test(tc, test_slowest_consumer_is_last_failure);
	tcase_add_test(tc, test_unresolved_by_address);
	tcase_add_test(tc, test_document_without_peers);
	tcase_add_test(tc, test_rollout_aggregate);
	suite_add_tcase(s, tc);
	return tl_check_run(s) ? 1 : 0;
}
