/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <json-c/json.h>

#include "event.h"
#include "kube-watch.h"
#include "pod-meta.h"

/* The node's Pods and the EndpointSlice endpoints that point at them, kept
 * as the last state seen. Every change between two states becomes timeline
 * events (pod.deletion_requested, pod.condition, container.terminated,
 * pod.deleted, endpoint.condition, endpoint.removed); since events come
 * from state differences, seeing a state twice (a relist, a repeated watch
 * event) emits nothing twice, and a relist after a gap emits what changed
 * in the gap. The first LIST only sets the baseline (no condition noise at
 * start), except for Pods already terminating. */
struct tl_kpods;

struct tl_kpods_callbacks {
	void (*pod_changed)(void *userdata, const char *uid); /* metadata changed */
	/* A Pod LIST completed (the first and every relist), begun at
	 * started_ns (realtime): a Pod not in it is not on this node. */
	void (*pods_listed)(void *userdata, int64_t started_ns);
	void *userdata;
};

int tl_kpods_new(const char *node, const struct tl_emitter *emit, struct tl_kpods **ret);
void tl_kpods_free(struct tl_kpods *m);
void tl_kpods_set_callbacks(struct tl_kpods *m, const struct tl_kpods_callbacks *cb);

/* Reflector consumers; userdata is the tl_kpods. */
extern const struct tl_reflector_ops tl_kpods_pod_ops;
extern const struct tl_reflector_ops tl_kpods_slice_ops;

/* bare_id: the runtime's id without "containerd://". Strings stay valid
 * until the model next changes. 0 or -ENOENT. */
int tl_kpods_lookup_container(const struct tl_kpods *m, const char *bare_id,
			      const char **ret_pod_uid, const char **ret_container_name);
const char *tl_kpods_pod_by_ip(const struct tl_kpods *m, const char *ip);
/* The Pod's metadata, a new reference (tl_pod_meta_unref), or NULL when
 * unknown. Shared with the model: never changed, a change of the Pod makes
 * a new one (tl_pod_meta_dup() for a copy to change). */
struct tl_pod_meta *tl_kpods_pod_meta(const struct tl_kpods *m, const char *uid);
/* Calls cb for each endpoint of Pod uid in the EndpointSlices held now; the
 * drained gate reads them when its facts start after the first LIST, which
 * reports no change (docs/drain.md). Returns how many. */
typedef void (*tl_kpods_endpoint_cb)(void *ud, const char *slice, const char *service, bool ready,
				     bool serving, bool terminating);
size_t tl_kpods_foreach_endpoint(const struct tl_kpods *m, const char *uid, tl_kpods_endpoint_cb cb,
				 void *ud);
/* Drops a deleted Pod's retained metadata. */
void tl_kpods_forget(struct tl_kpods *m, const char *uid);

/* "containerd://abc" -> "abc"; NULL when there is no "://". */
const char *tl_kpods_bare_id(const char *full);
