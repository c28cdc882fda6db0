/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube-pods.h"
#include "macro.h"
#include "metrics.h"
#include "../check-run.h"

#define UID1 "11111111-1111-4111-8111-111111111111"
#define UID2 "22222222-2222-4222-8222-222222222222"
#define CID_APP "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define CID_PROXY "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define CID_SIDE "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static struct json_object *events; /* array of emitted events, as JSON */

static void emit_cb(void *userdata _unused_, struct tl_event *ev)
{
	json_object_array_add(events, tl_event_to_json(ev, true));
	tl_event_clear(ev);
}

static struct tl_kpods *m;

static void setup(void)
{
	struct tl_emitter e = { .emit = emit_cb };

	events = json_object_new_array();
	ck_assert_int_eq(tl_kpods_new("node-a", &e, &m), 0);
}

static void teardown(void)
{
	tl_kpods_free(m);
	json_object_put(events);
}

static struct json_object *pod(const char *uid, const char *extra_md, const char *conds,
			       const char *app_state, const char *proxy_state)
{
	char buf[8192];
	struct json_object *o;

	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"web-1\",\"namespace\":\"shop\",\"uid\":\"%s\","
		 "\"resourceVersion\":\"1\",\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"web-5d9\","
		 "\"controller\":true}]%s},"
		 "\"spec\":{\"nodeName\":\"node-a\",\"terminationGracePeriodSeconds\":45,"
		 "\"initContainers\":[{\"name\":\"init\"},{\"name\":\"shipper\",\"restartPolicy\":\"Always\","
		 "\"lifecycle\":{\"preStop\":{\"sleep\":{\"seconds\":5}}}}],"
		 "\"containers\":[{\"name\":\"app\",\"lifecycle\":{\"preStop\":{\"exec\":{\"command\":[\"sh\"]}}}},"
		 "{\"name\":\"istio-proxy\"}]},"
		 "\"status\":{\"podIP\":\"10.1.2.3\",\"podIPs\":[{\"ip\":\"10.1.2.3\"}],\"conditions\":[%s],"
		 "\"initContainerStatuses\":[{\"name\":\"init\",\"containerID\":\"containerd://1111\","
		 "\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\",\"containerID\":\"containerd://1111\"}}},"
		 "{\"name\":\"shipper\",\"containerID\":\"containerd://" CID_SIDE "\",\"state\":{\"running\":{}}}],"
		 "\"containerStatuses\":[{\"name\":\"app\",\"containerID\":\"containerd://" CID_APP "\",\"state\":{%s}},"
		 "{\"name\":\"istio-proxy\",\"containerID\":\"containerd://" CID_PROXY "\",\"state\":{%s}}]}}",
		 uid, extra_md, conds, app_state, proxy_state);
	o = json_tokener_parse(buf);
	ck_assert_msg(o, "bad test JSON");
	return o;
}

#define READY_T "{\"type\":\"Ready\",\"status\":\"True\"},{\"type\":\"PodScheduled\",\"status\":\"True\"}"
#define READY_F "{\"type\":\"Ready\",\"status\":\"False\"},{\"type\":\"PodScheduled\",\"status\":\"True\"}"
#define RUNNING "\"running\":{}"
#define TERM0 "\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\",\"finishedAt\":\"2026-11-29T21:00:05Z\"}"
#define TERM137 "\"terminated\":{\"exitCode\":137,\"reason\":\"Error\",\"signal\":9}"
#define DELETING ",\"deletionTimestamp\":\"2026-11-29T21:00:45Z\",\"deletionGracePeriodSeconds\":45"

static void apply(const char *type, struct json_object *o)
{
	tl_kpods_pod_ops.event(m, type, o);
	json_object_put(o);
}

static void list(struct json_object **items, size_t n, bool initial)
{
	tl_kpods_pod_ops.list_begin(m, initial);
	for (size_t i = 0; i < n; i++) {
		tl_kpods_pod_ops.list_item(m, items[i], initial);
		json_object_put(items[i]);
	}
	tl_kpods_pod_ops.list_end(m, initial);
}

static const char *ev_str(size_t i, const char *k)
{
	struct json_object *v;

	ck_assert_uint_lt(i, json_object_array_length(events));
	if (!json_object_object_get_ex(json_object_array_get_idx(events, i), k, &v) ||
	    json_object_is_type(v, json_type_null))
		return "";
	return json_object_get_string(v);
}

START_TEST(test_termination_sequence_once)
{
	struct json_object *l[1] = { pod(UID1, "", READY_T, RUNNING, RUNNING) };

	list(l, 1, true);
	ck_assert_uint_eq(json_object_array_length(events), 0); /* baseline is silent */
	apply("MODIFIED", pod(UID1, DELETING, READY_T, RUNNING, RUNNING));
	apply("MODIFIED", pod(UID1, DELETING, READY_T, RUNNING, RUNNING)); /* repeated */
	apply("MODIFIED", pod(UID1, DELETING, READY_F, RUNNING, RUNNING));
	apply("MODIFIED", pod(UID1, DELETING, READY_F, TERM0, RUNNING));
	apply("MODIFIED", pod(UID1, DELETING, READY_F, TERM0, TERM137));
	apply("DELETED", pod(UID1, DELETING, READY_F, TERM0, TERM137));
	apply("DELETED", pod(UID1, DELETING, READY_F, TERM0, TERM137)); /* repeated */
	ck_assert_uint_eq(json_object_array_length(events), 5);
	ck_assert_str_eq(ev_str(0, "type"), "pod.deletion_requested");
	ck_assert_str_eq(ev_str(0, "gracePeriodSeconds"), "45");
	ck_assert_str_eq(ev_str(0, "podUid"), UID1);
	ck_assert_str_eq(ev_str(0, "deletionTimestamp"), "2026-11-29T21:00:45Z");
	ck_assert_str_eq(ev_str(1, "type"), "pod.condition");
	ck_assert_str_eq(ev_str(1, "condition"), "Ready");
	ck_assert_str_eq(ev_str(1, "status"), "False");
	ck_assert_str_eq(ev_str(2, "type"), "container.terminated");
	ck_assert_str_eq(ev_str(2, "container"), "app");
	ck_assert_str_eq(ev_str(2, "containerId"), CID_APP);
	ck_assert_str_eq(ev_str(2, "exitCode"), "0");
	ck_assert_str_eq(ev_str(2, "finishedAt"), "2026-11-29T21:00:05Z");
	ck_assert_str_eq(ev_str(3, "container"), "istio-proxy");
	ck_assert_str_eq(ev_str(3, "exitCode"), "137");
	ck_assert_str_eq(ev_str(3, "signal"), "9");
	ck_assert_str_eq(ev_str(4, "type"), "pod.deleted");
	ck_assert_str_eq(ev_str(4, "source"), "api");
}
END_TEST

START_TEST(test_relist_emits_gap_once)
{
	struct json_object *l[2] = { pod(UID1, "", READY_T, RUNNING, RUNNING),
				     pod(UID2, "", READY_T, RUNNING, RUNNING) };
	struct json_object *r1[1], *r2[1];

	json_object_object_add(json_object_object_get(l[1], "metadata"), "name",
			       json_object_new_string("web-2"));
	list(l, 2, true);
	/* in the gap: UID1 started terminating and UID2 vanished */
	r1[0] = pod(UID1, DELETING, READY_F, TERM0, RUNNING);
	list(r1, 1, false);
	ck_assert_uint_eq(json_object_array_length(events), 4);
	ck_assert_str_eq(ev_str(0, "type"), "pod.deletion_requested");
	ck_assert_str_eq(ev_str(1, "type"), "pod.condition");
	ck_assert_str_eq(ev_str(2, "type"), "container.terminated");
	ck_assert_str_eq(ev_str(3, "type"), "pod.deleted");
	ck_assert_str_eq(ev_str(3, "podUid"), UID2);
	ck_assert_str_eq(ev_str(3, "observedBy"), "relist");
	/* the same state listed again: nothing new */
	r2[0] = pod(UID1, DELETING, READY_F, TERM0, RUNNING);
	list(r2, 1, false);
	ck_assert_uint_eq(json_object_array_length(events), 4);
}
END_TEST

START_TEST(test_new_pod_during_watch_reports_conditions)
{
	apply("ADDED", pod(UID1, "", "{\"type\":\"PodScheduled\",\"status\":\"True\"}", RUNNING, RUNNING));
	/* the completed init container is a fact seen live: reported once */
	ck_assert_uint_eq(json_object_array_length(events), 2);
	ck_assert_str_eq(ev_str(0, "condition"), "PodScheduled");
	ck_assert_str_eq(ev_str(1, "container"), "init");
	apply("MODIFIED", pod(UID1, "", "{\"type\":\"PodScheduled\",\"status\":\"True\"}", RUNNING, RUNNING));
	ck_assert_uint_eq(json_object_array_length(events), 2);
}
END_TEST

START_TEST(test_lookups_and_meta)
{
	struct json_object *l[1] = { pod(UID1, "", READY_T, RUNNING, RUNNING) };
	const char *uid = NULL, *name = NULL;
	struct json_object *meta, *ctrs;
	char expect[512];

	list(l, 1, true);
	ck_assert_int_eq(tl_kpods_lookup_container(m, CID_PROXY, &uid, &name), 0);
	ck_assert_str_eq(uid, UID1);
	ck_assert_str_eq(name, "istio-proxy");
	ck_assert_int_eq(tl_kpods_lookup_container(m, "containerd://" CID_PROXY, &uid, &name), -ENOENT);
	ck_assert_str_eq(tl_kpods_pod_by_ip(m, "10.1.2.3"), UID1);
	ck_assert_ptr_null(tl_kpods_pod_by_ip(m, "10.1.2.4"));
	meta = tl_kpods_pod_meta(m, UID1);
	ck_assert_ptr_nonnull(meta);
	snprintf(expect, sizeof(expect),
		 "{\"namespace\":\"shop\",\"name\":\"web-1\",\"uid\":\"%s\",\"node\":\"node-a\",\"ip\":\"10.1.2.3\","
		 "\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"web-5d9\"},\"terminationGracePeriodSeconds\":45}", UID1);
	ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(meta, "pod"),
							JSON_C_TO_STRING_PLAIN), expect);
	ctrs = json_object_object_get(meta, "containers");
	ck_assert_uint_eq(json_object_array_length(ctrs), 4);
	ck_assert_str_eq(json_object_to_json_string_ext(json_object_array_get_idx(ctrs, 1), JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
			 "{\"name\":\"shipper\",\"containerID\":\"containerd://" CID_SIDE "\",\"role\":\"sidecar\","
			 "\"cgroupId\":0,\"preStop\":\"sleep\"}");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(json_object_array_get_idx(ctrs, 0), "role")), "init");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(json_object_array_get_idx(ctrs, 2), "role")), "main");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(json_object_array_get_idx(ctrs, 2), "preStop")), "exec");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(json_object_array_get_idx(ctrs, 3), "role")), "sidecar");
	json_object_put(meta);
	/* kept after deletion, until forgotten */
	apply("DELETED", pod(UID1, DELETING, READY_T, RUNNING, RUNNING));
	meta = tl_kpods_pod_meta(m, UID1);
	ck_assert_ptr_nonnull(meta);
	json_object_put(meta);
	ck_assert_int_eq(tl_kpods_lookup_container(m, CID_APP, &uid, &name), 0);
	tl_kpods_forget(m, UID1);
	ck_assert_ptr_null(tl_kpods_pod_meta(m, UID1));
	ck_assert_int_eq(tl_kpods_lookup_container(m, CID_APP, &uid, &name), -ENOENT);
	ck_assert_ptr_null(tl_kpods_pod_by_ip(m, "10.1.2.3"));
}
END_TEST

static struct json_object *slice(const char *eps)
{
	char buf[4096];
	struct json_object *o;

	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"web-x7k2p\",\"namespace\":\"shop\",\"uid\":\"s-1\",\"resourceVersion\":\"5\","
		 "\"labels\":{\"kubernetes.io/service-name\":\"web\"}},\"addressType\":\"IPv4\",\"endpoints\":[%s]}",
		 eps);
	o = json_tokener_parse(buf);
	ck_assert_msg(o, "bad slice JSON");
	return o;
}

#define EP(ip, node, uid, cond) \
	"{\"addresses\":[\"" ip "\"],\"nodeName\":\"" node "\",\"targetRef\":{\"kind\":\"Pod\",\"uid\":\"" uid "\"}," \
	"\"conditions\":{" cond "}}"
#define MINE(cond) EP("10.1.2.3", "node-a", UID1, cond)
#define OTHER(cond) EP("10.9.9.9", "node-b", UID2, cond)

START_TEST(test_endpoints)
{
	struct json_object *s;

	tl_kpods_slice_ops.list_begin(m, true);
	s = slice(MINE("\"ready\":true") "," OTHER("\"ready\":true"));
	tl_kpods_slice_ops.list_item(m, s, true);
	json_object_put(s);
	tl_kpods_slice_ops.list_end(m, true);
	ck_assert_uint_eq(json_object_array_length(events), 0);
	/* the other node's endpoint changes: not ours */
	s = slice(MINE("\"ready\":true") "," OTHER("\"ready\":false"));
	tl_kpods_slice_ops.event(m, "MODIFIED", s);
	json_object_put(s);
	ck_assert_uint_eq(json_object_array_length(events), 0);
	s = slice(MINE("\"ready\":false,\"serving\":true,\"terminating\":true"));
	tl_kpods_slice_ops.event(m, "MODIFIED", s);
	tl_kpods_slice_ops.event(m, "MODIFIED", s); /* repeated */
	json_object_put(s);
	ck_assert_uint_eq(json_object_array_length(events), 1);
	ck_assert_str_eq(ev_str(0, "type"), "endpoint.condition");
	ck_assert_str_eq(ev_str(0, "podUid"), UID1);
	ck_assert_str_eq(ev_str(0, "service"), "web");
	ck_assert_str_eq(ev_str(0, "endpointSlice"), "web-x7k2p");
	ck_assert_str_eq(ev_str(0, "ready"), "false");
	ck_assert_str_eq(ev_str(0, "serving"), "true");
	ck_assert_str_eq(ev_str(0, "terminating"), "true");
	/* relist after a gap in which the endpoint left the slice */
	tl_kpods_slice_ops.list_begin(m, false);
	s = slice(OTHER("\"ready\":true"));
	tl_kpods_slice_ops.list_item(m, s, false);
	json_object_put(s);
	tl_kpods_slice_ops.list_end(m, false);
	ck_assert_uint_eq(json_object_array_length(events), 2);
	ck_assert_str_eq(ev_str(1, "type"), "endpoint.removed");
	ck_assert_str_eq(ev_str(1, "podUid"), UID1);
	s = slice(OTHER("\"ready\":true"));
	tl_kpods_slice_ops.event(m, "DELETED", s);
	json_object_put(s);
	ck_assert_uint_eq(json_object_array_length(events), 2);
}
END_TEST

/* An endpoint that names no node (older controllers, mirrored slices) is
 * ours by its targetRef's uid alone; absent conditions have the API's
 * defaults: ready and serving true, terminating false. */
#define NONODE(ip, uid, cond) \
	"{\"addresses\":[\"" ip "\"],\"targetRef\":{\"kind\":\"Pod\",\"uid\":\"" uid "\"}," \
	"\"conditions\":{" cond "}}"

static void slice_event(const char *type, const char *eps)
{
	struct json_object *s = slice(eps);

	tl_kpods_slice_ops.event(m, type, s);
	json_object_put(s);
}

START_TEST(test_endpoint_by_uid_and_defaults)
{
	struct json_object *l[1] = { pod(UID1, "", READY_T, RUNNING, RUNNING) };
	struct json_object *s;

	list(l, 1, true);
	tl_kpods_slice_ops.list_begin(m, true);
	s = slice(NONODE("10.1.2.3", UID1, "") "," NONODE("10.9.9.9", UID2, ""));
	tl_kpods_slice_ops.list_item(m, s, true);
	json_object_put(s);
	tl_kpods_slice_ops.list_end(m, true);
	/* the defaults spelled out are no change */
	slice_event("MODIFIED", NONODE("10.1.2.3", UID1, "\"ready\":true,\"serving\":true,\"terminating\":false")
		    "," NONODE("10.9.9.9", UID2, ""));
	ck_assert_uint_eq(json_object_array_length(events), 0);
	/* a Pod this node does not run, named only by uid: not ours */
	slice_event("MODIFIED", NONODE("10.1.2.3", UID1, "") "," NONODE("10.9.9.9", UID2, "\"ready\":false"));
	ck_assert_uint_eq(json_object_array_length(events), 0);
	slice_event("MODIFIED", NONODE("10.1.2.3", UID1, "\"ready\":false,\"terminating\":true")
		    "," NONODE("10.9.9.9", UID2, "\"ready\":false"));
	ck_assert_uint_eq(json_object_array_length(events), 1);
	ck_assert_str_eq(ev_str(0, "type"), "endpoint.condition");
	ck_assert_str_eq(ev_str(0, "podUid"), UID1);
	ck_assert_str_eq(ev_str(0, "ready"), "false");
	ck_assert_str_eq(ev_str(0, "serving"), "true");
	ck_assert_str_eq(ev_str(0, "terminating"), "true");
	slice_event("MODIFIED", NONODE("10.9.9.9", UID2, ""));
	ck_assert_uint_eq(json_object_array_length(events), 2);
	ck_assert_str_eq(ev_str(1, "type"), "endpoint.removed");
	ck_assert_str_eq(ev_str(1, "podUid"), UID1);
}
END_TEST

static struct json_object *small_pod(unsigned i, const char *node)
{
	char buf[512];
	struct json_object *o;

	snprintf(buf, sizeof(buf),
		 "{\"metadata\":{\"name\":\"p-%u\",\"namespace\":\"ns\",\"uid\":\"uid-%u\"},"
		 "\"spec\":{%s%s%s\"containers\":[{\"name\":\"c\"}]},"
		 "\"status\":{\"podIP\":\"10.9.%u.%u\",\"containerStatuses\":[{\"name\":\"c\","
		 "\"containerID\":\"containerd://%064u\",\"state\":{\"running\":{}}}]}}",
		 i, i, node ? "\"nodeName\":\"" : "", node ? node : "", node ? "\"," : "",
		 (i >> 8) & 255, i & 255, i);
	o = json_tokener_parse(buf);
	ck_assert_msg(o, "bad test JSON");
	return o;
}

/* The watch asks for this node's Pods; an API server that sends others
 * (or unscheduled ones) must not make the agent track them. */
START_TEST(test_other_nodes_ignored)
{
	struct json_object *l[3] = { small_pod(1, "node-b"), small_pod(2, NULL), small_pod(3, "node-a") };
	int64_t before = tl_metric_get("termline_kube_pods_ignored_total", "reason=\"other-node\"");
	const char *uid, *name;
	char id[80];

	list(l, 3, true);
	ck_assert_ptr_null(tl_kpods_pod_meta(m, "uid-1"));
	ck_assert_ptr_null(tl_kpods_pod_meta(m, "uid-2"));
	ck_assert_ptr_null(tl_kpods_pod_by_ip(m, "10.9.0.1"));
	snprintf(id, sizeof(id), "%064u", 1u);
	ck_assert_int_eq(tl_kpods_lookup_container(m, id, &uid, &name), -ENOENT);
	ck_assert_str_eq(tl_kpods_pod_by_ip(m, "10.9.0.3"), "uid-3");
	ck_assert_int_eq(tl_metric_get("termline_kube_pods_ignored_total", "reason=\"other-node\"") - before, 2);
	apply("ADDED", small_pod(4, "node-c"));
	ck_assert_ptr_null(tl_kpods_pod_by_ip(m, "10.9.0.4"));
}
END_TEST

/* A LIST of more Pods than a node runs: the first 1024 are tracked, the
 * rest counted; deleted ones make room. */
START_TEST(test_tracked_pods_capped)
{
	const unsigned n = 1500;
	int64_t before = tl_metric_get("termline_kube_pods_ignored_total", "reason=\"limit\"");
	unsigned tracked = 0;

	tl_kpods_pod_ops.list_begin(m, true);
	for (unsigned i = 0; i < n; i++) {
		struct json_object *o = small_pod(i, "node-a");

		tl_kpods_pod_ops.list_item(m, o, true);
		json_object_put(o);
	}
	tl_kpods_pod_ops.list_end(m, true);
	for (unsigned i = 0; i < n; i++) {
		char ip[32];

		snprintf(ip, sizeof(ip), "10.9.%u.%u", (i >> 8) & 255, i & 255);
		tracked += tl_kpods_pod_by_ip(m, ip) != NULL;
	}
	ck_assert_uint_eq(tracked, 1024);
	ck_assert_int_eq(tl_metric_get("termline_kube_pods_ignored_total", "reason=\"limit\"") - before,
			 n - 1024);
	apply("DELETED", small_pod(0, "node-a"));
	apply("ADDED", small_pod(1400, "node-a"));
	ck_assert_ptr_nonnull(tl_kpods_pod_by_ip(m, "10.9.5.120"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kube-pods");
	TCase *tc = tcase_create("core");
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_termination_sequence_once);
	tcase_add_test(tc, test_relist_emits_gap_once);
	tcase_add_test(tc, test_new_pod_during_watch_reports_conditions);
	tcase_add_test(tc, test_lookups_and_meta);
	tcase_add_test(tc, test_endpoints);
	tcase_add_test(tc, test_endpoint_by_uid_and_defaults);
	tcase_add_test(tc, test_other_nodes_ignored);
	tcase_add_test(tc, test_tracked_pods_capped);
	suite_add_tcase(s, tc);
	failed = tl_check_run(s);
	return failed ? 1 : 0;
}
