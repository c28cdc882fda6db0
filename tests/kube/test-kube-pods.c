/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
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

static int n_listed;
static int64_t listed_at;
static size_t events_when_listed;

static void on_listed(void *ud _unused_, int64_t started_ns)
{
	n_listed++;
	listed_at = started_ns;
	events_when_listed = json_object_array_length(events);
}

/* Every completed Pod LIST (the first and each relist) is told, with when
 * it began and after the Pods it lacks were reported deleted: the store
 * closes the timelines of UIDs it does not hold (docs/hostile-peers.md). */
START_TEST(test_pods_listed_told_after_each_list)
{
	struct tl_kpods_callbacks cb = { .pods_listed = on_listed };
	struct json_object *l[2] = { pod(UID1, "", READY_T, RUNNING, RUNNING),
				     pod(UID2, "", READY_T, RUNNING, RUNNING) };
	struct json_object *r1[1];
	int64_t before = tl_now_real_ns(), mid;

	n_listed = 0;
	tl_kpods_set_callbacks(m, &cb);
	json_object_object_add(json_object_object_get(l[1], "metadata"), "name",
			       json_object_new_string("web-2"));
	list(l, 2, true);
	ck_assert_int_eq(n_listed, 1);
	ck_assert_int_ge(listed_at, before);
	ck_assert_int_le(listed_at, tl_now_real_ns());
	mid = tl_now_real_ns();
	r1[0] = pod(UID1, "", READY_T, RUNNING, RUNNING);
	list(r1, 1, false);
	ck_assert_int_eq(n_listed, 2);
	ck_assert_int_ge(listed_at, mid);
	/* UID2's pod.deleted came first */
	ck_assert_uint_eq(events_when_listed, json_object_array_length(events));
	ck_assert_str_eq(ev_str(events_when_listed - 1, "type"), "pod.deleted");
	ck_assert_str_eq(ev_str(events_when_listed - 1, "podUid"), UID2);
	/* a watch event is no LIST */
	apply("MODIFIED", pod(UID1, "", READY_F, RUNNING, RUNNING));
	ck_assert_int_eq(n_listed, 2);
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
	struct tl_pod_meta *meta;
	struct json_object *pj;
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
	ck_assert_str_eq(meta->ns, "shop");
	ck_assert_str_eq(meta->name, "web-1");
	ck_assert_str_eq(meta->uid, UID1);
	ck_assert_str_eq(meta->node, "node-a");
	ck_assert_str_eq(meta->ip, "10.1.2.3");
	ck_assert_str_eq(meta->owner_kind, "ReplicaSet");
	ck_assert_str_eq(meta->owner_name, "web-5d9");
	ck_assert_int_eq(meta->grace_s, 45);
	ck_assert_ptr_null(meta->istio);
	ck_assert_uint_eq(meta->containers_dropped, 0);
	ck_assert_uint_eq(meta->n_containers, 4);
	/* init containers first, in the spec's order */
	ck_assert_str_eq(meta->containers[0].name, "init");
	ck_assert_str_eq(meta->containers[0].container_id, "containerd://1111");
	ck_assert_int_eq(meta->containers[0].role, TL_ROLE_INIT);
	ck_assert_str_eq(meta->containers[1].name, "shipper");
	ck_assert_str_eq(meta->containers[1].container_id, "containerd://" CID_SIDE);
	ck_assert_int_eq(meta->containers[1].role, TL_ROLE_SIDECAR);
	ck_assert_int_eq(meta->containers[1].prestop, TL_PRESTOP_SLEEP);
	ck_assert_int_eq(meta->containers[2].role, TL_ROLE_MAIN);
	ck_assert_int_eq(meta->containers[2].prestop, TL_PRESTOP_EXEC);
	ck_assert_str_eq(meta->containers[3].name, "istio-proxy");
	ck_assert_int_eq(meta->containers[3].role, TL_ROLE_SIDECAR);
	ck_assert_int_eq(meta->containers[3].prestop, TL_PRESTOP_NONE);
	for (uint32_t i = 0; i < meta->n_containers; i++)
		ck_assert_uint_eq(meta->containers[i].cgroup_id, 0);
	/* through the one encoder: the document's "pod" */
	pj = tl_pod_meta_pod_json(meta, NULL);
	snprintf(expect, sizeof(expect),
		 "{\"namespace\":\"shop\",\"name\":\"web-1\",\"node\":\"node-a\",\"ip\":\"10.1.2.3\",\"uid\":\"%s\","
		 "\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"web-5d9\"},\"terminationGracePeriodSeconds\":45}", UID1);
	ck_assert_str_eq(json_object_to_json_string_ext(pj, JSON_C_TO_STRING_PLAIN), expect);
	json_object_put(pj);
	tl_pod_meta_unref(meta);
	/* kept after deletion, until forgotten */
	apply("DELETED", pod(UID1, DELETING, READY_T, RUNNING, RUNNING));
	meta = tl_kpods_pod_meta(m, UID1);
	ck_assert_ptr_nonnull(meta);
	tl_pod_meta_unref(meta);
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

/* A Pod object put together by the test: metadata and spec extras, the
 * containers and their statuses as JSON text. */
static struct json_object *raw_pod(const char *ns, const char *name, const char *uid,
				   const char *md_extra, const char *spec_extra, const char *ctrs,
				   const char *statuses)
{
	size_t n = strlen(ns) + strlen(name) + strlen(md_extra) + strlen(spec_extra) + strlen(ctrs) +
		   strlen(statuses) + 512;
	char *buf = malloc(n);
	struct json_object *o;

	ck_assert_ptr_nonnull(buf);
	snprintf(buf, n,
		 "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\",\"uid\":\"%s\"%s},"
		 "\"spec\":{\"nodeName\":\"node-a\"%s,\"containers\":[%s]},"
		 "\"status\":{\"podIP\":\"10.3.0.1\",\"containerStatuses\":[%s]}}",
		 name, ns, uid, md_extra, spec_extra, ctrs, statuses);
	o = json_tokener_parse(buf);
	free(buf);
	ck_assert_msg(o, "bad test JSON");
	return o;
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	ck_assert_ptr_nonnull(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

#define DROPPED(f) tl_metric_get("termline_kube_pod_fields_dropped_total", "field=\"" f "\"")

/* What an API server may send that no valid Pod has: fields missing or of
 * the wrong type read as absent, over-long ones are dropped (never cut),
 * the container table is bounded; every drop is counted. */
START_TEST(test_meta_hostile_fields)
{
	char *long_owner = repeat('o', 300), *long_id = repeat('f', 120), *long_ctr = repeat('c', 300);
	char md[512], st[512], ctrs[512];
	int64_t owner0 = DROPPED("owner"), id0 = DROPPED("containerID"), c0 = DROPPED("containers");
	struct tl_pod_meta *meta;
	struct json_object *pj;

	/* owner past the limit; grace of the wrong type (the API default
	 * then); a container whose name is a number, one whose name is
	 * too long, one whose id is too long; no ownerReferences array */
	snprintf(md, sizeof(md), ",\"ownerReferences\":[{\"kind\":\"ReplicaSet\",\"name\":\"%s\"}]", long_owner);
	snprintf(ctrs, sizeof(ctrs), "{\"name\":5},{\"name\":\"%s\"},{\"name\":\"ok\"}", long_ctr);
	snprintf(st, sizeof(st), "{\"name\":\"ok\",\"containerID\":\"containerd://%s\"}", long_id);
	apply("ADDED", raw_pod("ns", "p", UID1, md, ",\"terminationGracePeriodSeconds\":\"45\"", ctrs, st));
	meta = tl_kpods_pod_meta(m, UID1);
	ck_assert_ptr_nonnull(meta);
	ck_assert_str_eq(meta->owner_kind, "");
	ck_assert_str_eq(meta->owner_name, "");
	ck_assert_int_eq(meta->grace_s, 30);
	ck_assert_uint_eq(meta->n_containers, 1);
	ck_assert_uint_eq(meta->containers_dropped, 2);
	ck_assert_str_eq(meta->containers[0].name, "ok");
	ck_assert_str_eq(meta->containers[0].container_id, "");
	ck_assert_int_eq(DROPPED("owner") - owner0, 1);
	ck_assert_int_eq(DROPPED("containerID") - id0, 1);
	ck_assert_int_eq(DROPPED("containers") - c0, 2);
	pj = tl_pod_meta_pod_json(meta, NULL);
	ck_assert_str_eq(json_object_to_json_string_ext(pj, JSON_C_TO_STRING_PLAIN),
			 "{\"namespace\":\"ns\",\"name\":\"p\",\"node\":\"node-a\",\"ip\":\"10.3.0.1\",\"uid\":\"" UID1
			 "\",\"owner\":null,\"terminationGracePeriodSeconds\":30}");
	json_object_put(pj);
	tl_pod_meta_unref(meta);

	/* ownerReferences of the wrong type, a negative grace (null), the
	 * owner's kind missing */
	apply("MODIFIED", raw_pod("ns", "p", UID1, ",\"ownerReferences\":{\"kind\":\"Job\",\"name\":\"j\"}",
				  ",\"terminationGracePeriodSeconds\":-5", "{\"name\":\"ok\"}", ""));
	meta = tl_kpods_pod_meta(m, UID1);
	ck_assert_str_eq(meta->owner_kind, "");
	ck_assert_int_eq(meta->grace_s, -1);
	pj = tl_pod_meta_pod_json(meta, NULL);
	ck_assert_ptr_null(json_object_object_get(pj, "terminationGracePeriodSeconds"));
	ck_assert_ptr_null(json_object_object_get(pj, "owner"));
	json_object_put(pj);
	tl_pod_meta_unref(meta);
	apply("MODIFIED", raw_pod("ns", "p", UID1, ",\"ownerReferences\":[{\"name\":\"j\"}]", "",
				  "{\"name\":\"ok\"}", ""));
	meta = tl_kpods_pod_meta(m, UID1);
	ck_assert_str_eq(meta->owner_kind, "");
	ck_assert_str_eq(meta->owner_name, "");
	tl_pod_meta_unref(meta);
	free(long_owner);
	free(long_id);
	free(long_ctr);
}
END_TEST

/* A Pod with more containers than the table holds: the first 256 (init
 * containers first), the rest counted. */
START_TEST(test_meta_containers_bounded)
{
	size_t n = 300, cap = n * 24 + 16, len = 0;
	char *ctrs = malloc(cap);
	int64_t c0 = DROPPED("containers");
	struct tl_pod_meta *meta;
	const char *uid = NULL, *name = NULL;

	ck_assert_ptr_nonnull(ctrs);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(ctrs + len, cap - len, "%s{\"name\":\"c%zu\"}", i ? "," : "", i);
	apply("ADDED", raw_pod("ns", "many", UID2, "", "", ctrs,
			       "{\"name\":\"c255\",\"containerID\":\"containerd://" CID_APP "\"},"
			       "{\"name\":\"c256\",\"containerID\":\"containerd://" CID_PROXY "\"}"));
	free(ctrs);
	meta = tl_kpods_pod_meta(m, UID2);
	ck_assert_ptr_nonnull(meta);
	ck_assert_uint_eq(meta->n_containers, TL_POD_CONTAINERS_MAX);
	ck_assert_uint_eq(meta->containers_dropped, n - TL_POD_CONTAINERS_MAX);
	ck_assert_str_eq(meta->containers[255].name, "c255");
	ck_assert_int_eq(DROPPED("containers") - c0, (int64_t)(n - TL_POD_CONTAINERS_MAX));
	tl_pod_meta_unref(meta);
	/* the last kept container is found by its id, the first dropped not */
	ck_assert_int_eq(tl_kpods_lookup_container(m, CID_APP, &uid, &name), 0);
	ck_assert_str_eq(name, "c255");
	ck_assert_int_eq(tl_kpods_lookup_container(m, CID_PROXY, &uid, &name), -ENOENT);
}
END_TEST

/* Namespaces and names past Kubernetes' limits are no Pod a kubelet runs:
 * not tracked (a cut name would be another Pod's), counted. */
START_TEST(test_meta_overlong_names_ignored)
{
	char *ns64 = repeat('n', 64), *name254 = repeat('a', 254), *name253 = repeat('a', 253);
	int64_t before = tl_metric_get("termline_kube_pods_ignored_total", "reason=\"invalid\"");
	struct tl_pod_meta *meta;

	apply("ADDED", raw_pod(ns64, "p", UID1, "", "", "{\"name\":\"c\"}", ""));
	apply("ADDED", raw_pod("ns", name254, UID2, "", "", "{\"name\":\"c\"}", ""));
	ck_assert_ptr_null(tl_kpods_pod_meta(m, UID1));
	ck_assert_ptr_null(tl_kpods_pod_meta(m, UID2));
	ck_assert_int_eq(tl_metric_get("termline_kube_pods_ignored_total", "reason=\"invalid\"") - before, 2);
	/* the longest valid name is kept whole */
	apply("ADDED", raw_pod("ns", name253, UID2, "", "", "{\"name\":\"c\"}", ""));
	meta = tl_kpods_pod_meta(m, UID2);
	ck_assert_ptr_nonnull(meta);
	ck_assert_str_eq(meta->name, name253);
	tl_pod_meta_unref(meta);
	free(ns64);
	free(name254);
	free(name253);
}
END_TEST

static int n_changed;

static void on_changed(void *ud _unused_, const char *uid)
{
	ck_assert_str_eq(uid, UID1);
	n_changed++;
}

/* pod_changed only when a field of the metadata changed; a reference held
 * across a change still says what it said. */
START_TEST(test_meta_changed_only_on_change)
{
	struct tl_kpods_callbacks cb = { .pod_changed = on_changed };
	struct tl_pod_meta *before, *after;

	n_changed = 0;
	tl_kpods_set_callbacks(m, &cb);
	apply("ADDED", pod(UID1, "", READY_T, RUNNING, RUNNING));
	ck_assert_int_eq(n_changed, 1);
	apply("MODIFIED", pod(UID1, "", READY_T, RUNNING, RUNNING));
	/* a condition is an event, not metadata */
	apply("MODIFIED", pod(UID1, "", READY_F, RUNNING, RUNNING));
	ck_assert_int_eq(n_changed, 1);
	before = tl_kpods_pod_meta(m, UID1);
	apply("MODIFIED", pod(UID1, ",\"annotations\":{\"sidecar.istio.io/inject\":\"true\"}", READY_F,
			      RUNNING, RUNNING));
	ck_assert_int_eq(n_changed, 2);
	after = tl_kpods_pod_meta(m, UID1);
	ck_assert_ptr_null(before->istio);
	ck_assert_ptr_nonnull(after->istio);
	ck_assert(!tl_pod_meta_equal(before, after));
	apply("MODIFIED", pod(UID1, ",\"annotations\":{\"sidecar.istio.io/inject\":\"true\"}", READY_F,
			      RUNNING, RUNNING));
	ck_assert_int_eq(n_changed, 2);
	tl_pod_meta_unref(before);
	tl_pod_meta_unref(after);
	tl_kpods_set_callbacks(m, NULL);
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
	tcase_add_test(tc, test_pods_listed_told_after_each_list);
	tcase_add_test(tc, test_new_pod_during_watch_reports_conditions);
	tcase_add_test(tc, test_lookups_and_meta);
	tcase_add_test(tc, test_endpoints);
	tcase_add_test(tc, test_endpoint_by_uid_and_defaults);
	tcase_add_test(tc, test_other_nodes_ignored);
	tcase_add_test(tc, test_tracked_pods_capped);
	tcase_add_test(tc, test_meta_hostile_fields);
	tcase_add_test(tc, test_meta_containers_bounded);
	tcase_add_test(tc, test_meta_overlong_names_ignored);
	tcase_add_test(tc, test_meta_changed_only_on_change);
	suite_add_tcase(s, tc);
	failed = tl_check_run(s);
	return failed ? 1 : 0;
}
