/* SPDX-License-Identifier: Apache-2.0 */
/* Peer resolution (daemon/kube/kube-peers.h) against a canned API: Pods
 * with their workload (a ReplicaSet's Deployment, a DaemonSet), a Node's
 * address, an external one, an address reused by a Pod created after the
 * traffic, IPv6 and IPv4-mapped spellings, the Pod's own address and
 * loopback, a failed call, the paginated LIST for many addresses, and the
 * API calls each costs (cached across documents). */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "clock.h"
#include "kube-peers.h"
#include "../check-run.h"

struct api {
	unsigned calls;
	char paths[64][256];
	unsigned n_paths;
	bool fail_pods;
	unsigned n_bulk; /* Pods in the paginated LIST */
};

static const char *pod(char *buf, size_t len, const char *ns, const char *name, const char *ip,
		       const char *created, const char *okind, const char *oname)
{
	snprintf(buf, len,
		 "{\"metadata\":{\"namespace\":\"%s\",\"name\":\"%s\",\"creationTimestamp\":\"%s\","
		 "\"ownerReferences\":[{\"kind\":\"%s\",\"name\":\"%s\",\"controller\":true}]},"
		 "\"spec\":{},\"status\":{\"podIP\":\"%s\",\"podIPs\":[{\"ip\":\"%s\"}]}}",
		 ns, name, created, okind, oname, ip, ip);
	return buf;
}

static int get(void *ud, const char *path, struct json_object **ret)
{
	struct api *a = ud;
	char body[8192], p1[1024], p2[1024];

	a->calls++;
	if (a->n_paths < 64)
		snprintf(a->paths[a->n_paths++], 256, "%s", path);
	body[0] = '\0';
	if (strcmp(path, "/api/v1/nodes") == 0) {
		snprintf(body, sizeof(body),
			 "{\"items\":[{\"metadata\":{\"name\":\"node-a\"},\"status\":{\"addresses\":["
			 "{\"type\":\"InternalIP\",\"address\":\"10.0.0.1\"},"
			 "{\"type\":\"Hostname\",\"address\":\"node-a\"},"
			 "{\"type\":\"InternalIP\",\"address\":\"fd00::a\"}]}}]}");
	} else if (strncmp(path, "/api/v1/pods?fieldSelector=status.podIP%3D", 42) == 0) {
		const char *ip = path + 42;

		if (a->fail_pods)
			return -EIO;
		if (strcmp(ip, "10.244.1.5") == 0)
			snprintf(body, sizeof(body), "{\"items\":[%s]}",
				 pod(p1, sizeof(p1), "ingress-nginx", "ingress-nginx-controller-7d9-x2",
				     "10.244.1.5", "2026-01-01T00:00:00Z", "ReplicaSet",
				     "ingress-nginx-controller-7d9"));
		else if (strcmp(ip, "10.244.1.6") == 0)
			/* the address's old Pod is gone; a new one has it */
			snprintf(body, sizeof(body), "{\"items\":[%s]}",
				 pod(p1, sizeof(p1), "shop", "cart-0", "10.244.1.6",
				     "2026-06-01T00:00:00Z", "StatefulSet", "cart"));
		else if (strcmp(ip, "fd00%3A%3A5") == 0)
			snprintf(body, sizeof(body), "{\"items\":[%s,%s]}",
				 pod(p1, sizeof(p1), "mon", "agent-new", "fd00::5",
				     "2026-06-01T00:00:00Z", "DaemonSet", "agent"),
				 pod(p2, sizeof(p2), "mon", "agent-old", "fd00::5",
				     "2026-01-01T00:00:00Z", "DaemonSet", "agent"));
		else
			snprintf(body, sizeof(body), "{\"items\":[]}");
	} else if (strcmp(path, "/apis/apps/v1/namespaces/ingress-nginx/replicasets/"
			        "ingress-nginx-controller-7d9") == 0) {
		snprintf(body, sizeof(body),
			 "{\"metadata\":{\"name\":\"ingress-nginx-controller-7d9\",\"ownerReferences\":["
			 "{\"kind\":\"Deployment\",\"name\":\"ingress-nginx-controller\",\"controller\":true}]}}");
	} else if (strncmp(path, "/api/v1/pods?limit=500", 22) == 0) {
		/* two pages: the first 500 Pods, then the rest */
		bool second = strstr(path, "continue=") != NULL;
		unsigned from = second ? 500 : 0, to = second ? a->n_bulk : (a->n_bulk < 500 ? a->n_bulk : 500);
		size_t off;
		char *big = malloc(1 << 20);

		ck_assert_ptr_nonnull(big);
		off = (size_t)snprintf(big, 1 << 20, "{\"metadata\":{\"continue\":\"%s\"},\"items\":[",
				       !second && a->n_bulk > 500 ? "tok+/=" : "");
		for (unsigned i = from; i < to; i++) {
			char ip[32], name[32];

			snprintf(ip, sizeof(ip), "10.9.%u.%u", i / 250, i % 250 + 1);
			snprintf(name, sizeof(name), "client-%u", i);
			off += (size_t)snprintf(big + off, (1 << 20) - off, "%s%s", i > from ? "," : "",
						pod(p1, sizeof(p1), "load", name, ip,
						    "2026-01-01T00:00:00Z", "Job", "load"));
		}
		snprintf(big + off, (1 << 20) - off, "]}");
		*ret = json_tokener_parse(big);
		free(big);
		ck_assert_ptr_nonnull(*ret);
		return 0;
	} else {
		return -ENOENT;
	}
	*ret = json_tokener_parse(body);
	ck_assert_ptr_nonnull(*ret);
	return 0;
}

/* A document whose requests came from these peers, at 2026-03-01. */
static struct json_object *doc_with(const char *const *peers, size_t n)
{
	struct json_object *doc = json_object_new_object(), *evs = json_object_new_array();
	struct json_object *podo = json_object_new_object();

	json_object_object_add(podo, "ip", json_object_new_string("10.244.9.9"));
	json_object_object_add(doc, "pod", podo);
	for (size_t i = 0; i < n; i++) {
		struct json_object *e = json_object_new_object();

		json_object_object_add(e, "time", json_object_new_string("2026-03-01T00:00:00.5Z"));
		json_object_object_add(e, "type", json_object_new_string("http.request"));
		json_object_object_add(e, "peer", json_object_new_string(peers[i]));
		json_object_array_add(evs, e);
	}
	/* an event without a peer (an older document's) is no address */
	json_object_array_add(evs, json_object_new_object());
	json_object_object_add(doc, "events", evs);
	return doc;
}

static struct json_object *peer_of(struct json_object *doc, const char *ip)
{
	struct json_object *peers, *e;

	ck_assert(json_object_object_get_ex(doc, "peers", &peers));
	ck_assert_msg(json_object_object_get_ex(peers, ip, &e), "no entry for %s", ip);
	return e;
}

static const char *str(struct json_object *o, const char *path)
{
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
		if (!json_object_object_get_ex(o, k, &o))
			return NULL;
	return json_object_get_string(o);
}

static struct tl_peers *resolver(struct api *a)
{
	struct tl_peers_config cfg = { .get = get, .userdata = a };
	struct tl_peers *p = NULL;

	ck_assert_int_eq(tl_time_parse("2026-12-01T00:00:00Z", &cfg.now_ns), 0);
	ck_assert_int_eq(tl_peers_new(&cfg, &p), 0);
	return p;
}

START_TEST(test_kinds)
{
	static const char *const peers[] = {
		"10.244.1.5:51234",	   /* a Pod of a Deployment, through its ReplicaSet */
		"10.244.1.5:51300",	   /* the same Pod, another connection */
		"[::ffff:10.244.1.5]:9",   /* the same, IPv4-mapped */
		"10.0.0.1:40000",	   /* a Node (kube-proxy's SNAT) */
		"[fd00::a]:1",		   /* the same Node, by its IPv6 address */
		"203.0.113.7:443",	   /* no Pod, no Node */
		"10.244.1.6:1",		   /* reused: its Pod now was created after the traffic */
		"[fd00::5]:80",		   /* IPv6: of two Pods, the one there at the time */
		"127.0.0.6:1",		   /* the sidecar's own leg */
		"10.244.9.9:5",		   /* the Pod's own address */
	};
	struct api a = { 0 };
	struct tl_peers *p = resolver(&a);
	struct json_object *doc = doc_with(peers, sizeof(peers) / sizeof(peers[0])), *e;

	/* 8 distinct addresses (two spellings of one) */
	ck_assert_int_eq(tl_peers_annotate(p, doc), 8);
	e = peer_of(doc, "10.244.1.5");
	ck_assert_str_eq(str(e, "kind"), "Pod");
	ck_assert_str_eq(str(e, "namespace"), "ingress-nginx");
	ck_assert_str_eq(str(e, "name"), "ingress-nginx-controller-7d9-x2");
	ck_assert_str_eq(str(e, "workload.kind"), "Deployment");
	ck_assert_str_eq(str(e, "workload.name"), "ingress-nginx-controller");
	ck_assert_str_eq(str(e, "createdAfterTraffic"), "false");
	ck_assert_str_eq(str(e, "resolvedAt"), "2026-12-01T00:00:00.000000000Z");
	e = peer_of(doc, "10.0.0.1");
	ck_assert_str_eq(str(e, "kind"), "Node");
	ck_assert_str_eq(str(e, "name"), "node-a");
	ck_assert_str_eq(str(peer_of(doc, "fd00::a"), "name"), "node-a");
	ck_assert_str_eq(str(peer_of(doc, "203.0.113.7"), "kind"), "external");
	e = peer_of(doc, "10.244.1.6");
	ck_assert_str_eq(str(e, "name"), "cart-0");
	ck_assert_str_eq(str(e, "workload.kind"), "StatefulSet");
	ck_assert_str_eq(str(e, "createdAfterTraffic"), "true");
	e = peer_of(doc, "fd00::5");
	ck_assert_str_eq(str(e, "name"), "agent-old");
	ck_assert_str_eq(str(e, "workload.kind"), "DaemonSet");
	ck_assert_str_eq(str(e, "createdAfterTraffic"), "false");
	ck_assert_str_eq(str(peer_of(doc, "127.0.0.6"), "kind"), "self");
	ck_assert_str_eq(str(peer_of(doc, "10.244.9.9"), "kind"), "self");
	/* nodes once, a LIST per address that is not a node or self (4), the
	 * ReplicaSet once */
	ck_assert_uint_eq(a.calls, 6);
	ck_assert_uint_eq(tl_peers_api_calls(p), 6);
	ck_assert_str_eq(a.paths[0], "/api/v1/nodes");

	/* a second document from the same peers costs nothing more */
	json_object_put(doc);
	doc = doc_with(peers, 3);
	ck_assert_int_eq(tl_peers_annotate(p, doc), 1);
	ck_assert_uint_eq(a.calls, 6);
	ck_assert_str_eq(str(peer_of(doc, "10.244.1.5"), "workload.name"), "ingress-nginx-controller");
	json_object_put(doc);
	tl_peers_free(p);
}
END_TEST

START_TEST(test_failure_and_old_documents)
{
	static const char *const peers[] = { "10.244.1.5:1", "not an endpoint" };
	struct api a = { .fail_pods = true };
	struct tl_peers *p = resolver(&a);
	struct json_object *doc = doc_with(peers, 2), *noevents = json_object_new_object();

	ck_assert_int_eq(tl_peers_annotate(p, doc), 1);
	ck_assert_str_eq(str(peer_of(doc, "10.244.1.5"), "kind"), "unknown");
	/* a document with no peers at all: an empty map, no call */
	json_object_put(doc);
	doc = doc_with(peers, 0);
	a.calls = 0;
	ck_assert_int_eq(tl_peers_annotate(p, doc), 0);
	ck_assert_uint_eq(a.calls, 0);
	ck_assert_int_eq(tl_peers_annotate(p, noevents), -EINVAL);
	json_object_put(doc);
	json_object_put(noevents);
	tl_peers_free(p);
}
END_TEST

START_TEST(test_many_addresses_one_list)
{
	enum { N = 700 };
	static char bufs[N + 1][32];
	const char *peers[N + 1];
	struct api a = { .n_bulk = N };
	struct tl_peers *p = resolver(&a);
	struct json_object *doc;

	for (unsigned i = 0; i < N; i++) {
		snprintf(bufs[i], sizeof(bufs[i]), "10.9.%u.%u:80", i / 250, i % 250 + 1);
		peers[i] = bufs[i];
	}
	snprintf(bufs[N], sizeof(bufs[N]), "198.51.100.1:1");
	peers[N] = bufs[N];
	doc = doc_with(peers, N + 1);
	ck_assert_int_eq(tl_peers_annotate(p, doc), N + 1);
	/* nodes, two pages of Pods (the continue token escaped); no
	 * ReplicaSet: a Job owns them */
	ck_assert_uint_eq(a.calls, 3);
	ck_assert_str_eq(a.paths[2], "/api/v1/pods?limit=500&continue=tok%2B%2F%3D");
	ck_assert_str_eq(str(peer_of(doc, "10.9.2.200"), "name"), "client-699");
	ck_assert_str_eq(str(peer_of(doc, "10.9.2.200"), "workload.kind"), "Job");
	ck_assert_str_eq(str(peer_of(doc, "198.51.100.1"), "kind"), "external");
	json_object_put(doc);
	tl_peers_free(p);
}
END_TEST

START_TEST(test_address_text)
{
	char b[64];

	ck_assert_int_eq(tl_peer_address("10.1.2.3:51234", b, sizeof(b)), 0);
	ck_assert_str_eq(b, "10.1.2.3");
	ck_assert_int_eq(tl_peer_address("[fd00::1]:443", b, sizeof(b)), 0);
	ck_assert_str_eq(b, "fd00::1");
	ck_assert_int_eq(tl_peer_address("[fd00::1]443", b, sizeof(b)), -EINVAL);
	ck_assert_int_eq(tl_peer_address("nocolon", b, sizeof(b)), -EINVAL);
	ck_assert_int_eq(tl_peer_address(":80", b, sizeof(b)), -EINVAL);
	ck_assert_int_eq(tl_peer_address("10.1.2.3:1", b, 4), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kube-peers");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_kinds);
	tcase_add_test(tc, test_failure_and_old_documents);
	tcase_add_test(tc, test_many_addresses_one_list);
	tcase_add_test(tc, test_address_text);
	suite_add_tcase(s, tc);
	return tl_check_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
