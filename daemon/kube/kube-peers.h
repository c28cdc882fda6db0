/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdint.h>

/* A timeline's peers (the remote addresses of its requests and accepted
 * connections) resolved to what they were: a Pod (namespace, name, and the
 * workload that owns it: Deployment through its ReplicaSet, DaemonSet,
 * StatefulSet, ...), a Node (one of its status.addresses: traffic that
 * came through a node: kube-proxy's SNAT, a NodePort, host-network Pods),
 * or external. Asked of the API server at investigation time, so an
 * address may since belong to another Pod: a Pod created after the
 * address's first traffic is said so (createdAfterTraffic).
 *
 * Bounded API calls for a set of D distinct addresses: one LIST of Nodes
 * (once per resolver), then one LIST of Pods per address with the field
 * selector status.podIP=ADDR while D <= per_ip_max, else one LIST of all
 * Pods in pages of 500; one GET per distinct ReplicaSet (its Deployment),
 * at most rs_max. Every answer is cached for the resolver's life (a
 * rollout resolves many timelines with one resolver). docs/cli.md.
 *
 * Library code: no logging; the API is reached through the caller's get. */

struct json_object;

/* GET an API path ("/api/v1/nodes", query included): 0 with *ret a new
 * reference to the parsed answer, or -errno (-ENOENT for a 404). */
typedef int (*tl_peers_get_fn)(void *userdata, const char *path, struct json_object **ret);

struct tl_peers_config {
	tl_peers_get_fn get;
	void *userdata;
	unsigned per_ip_max; /* 0 = TL_PEERS_PER_IP_MAX */
	unsigned rs_max;     /* 0 = TL_PEERS_RS_MAX */
	int64_t now_ns;      /* resolvedAt; 0 = the wall clock */
};

#define TL_PEERS_PER_IP_MAX 32
#define TL_PEERS_RS_MAX 256
/* Distinct addresses one document may ask for; the rest stay unresolved. */
#define TL_PEERS_ADDR_MAX 65536

struct tl_peers;

int tl_peers_new(const struct tl_peers_config *cfg, struct tl_peers **ret);
void tl_peers_free(struct tl_peers *p);

/* Resolves the distinct peer addresses of doc's events ("peer" of
 * http.request and tcp.accepted) and sets doc's "peers": an object keyed
 * by address, {"kind": "Pod"|"Node"|"external"|"self"|"unknown",
 * "namespace", "name", "workload": {"kind", "name"} or null, "createdAfterTraffic",
 * "resolvedAt"}. "self" is the Pod's own address and loopback (a sidecar
 * forwarding to its app); "unknown" an address whose API call failed.
 * Returns the number of addresses or -ENOMEM / -EINVAL (not a timeline
 * document). An API call that fails is not an error of the call. */
int tl_peers_annotate(struct tl_peers *p, struct json_object *doc);

/* API calls made so far. */
unsigned tl_peers_api_calls(const struct tl_peers *p);

/* "10.1.2.3:80" -> "10.1.2.3", "[fd00::1]:80" -> "fd00::1"; -EINVAL when
 * s is not such an endpoint. */
int tl_peer_address(const char *endpoint, char *buf, unsigned len);
