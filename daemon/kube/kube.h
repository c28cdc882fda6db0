/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "event.h"
#include "kube-pods.h"
#include "loop.h"

/* The agent's view of the API server: this node's Pods and the endpoints
 * that point at them, watched like a client-go reflector on the daemon's
 * loop. API events go out through the emitter; kernel events are attributed
 * through the lookups. */
struct tl_kube;

struct tl_kube_config {
	const char *kubeconfig; /* NULL = in-cluster */
	const char *node;
	const char *sa_dir;     /* in-cluster service account dir; NULL = the standard one */
};

struct tl_kube_callbacks {
	void (*pod_changed)(void *userdata, const char *uid);
	/* A Pod LIST completed, begun at started_ns (realtime): kube-pods.h */
	void (*pods_listed)(void *userdata, int64_t started_ns);
	void *userdata;
};

/* err: one line naming the file and key ("kubeconfig F: key K: ..."); the
 * caller exits 2 on failure. */
int tl_kube_new(const struct tl_kube_config *cfg, struct tl_loop *loop,
		const struct tl_emitter *emit, struct tl_kube **ret, char *err, size_t errlen);
void tl_kube_free(struct tl_kube *k);
void tl_kube_set_callbacks(struct tl_kube *k, const struct tl_kube_callbacks *cb);

/* Both initial LISTs (Pods, EndpointSlices) have been delivered. */
bool tl_kube_synced(const struct tl_kube *k);

/* bare_id: 64 hex, no "containerd://". Strings stay valid until the loop
 * next runs. 0 or -ENOENT. */
int tl_kube_lookup_container(const struct tl_kube *k, const char *bare_id,
			     const char **ret_pod_uid, const char **ret_container_name);
const char *tl_kube_pod_by_ip(const struct tl_kube *k, const char *ip);
/* The Pod's metadata (pod-meta.h): a new reference to the model's, shared
 * and never changed (tl_pod_meta_dup() to change a copy), or NULL when
 * unknown; kept after the Pod is deleted until tl_kube_forget(). */
struct tl_pod_meta *tl_kube_pod_meta(const struct tl_kube *k, const char *uid);
void tl_kube_forget(struct tl_kube *k, const char *uid);
/* The Pod's endpoints in the EndpointSlices held now (tl_kpods_foreach_endpoint). */
size_t tl_kube_foreach_endpoint(const struct tl_kube *k, const char *uid, tl_kpods_endpoint_cb cb,
				void *ud);

/* Last API error, for a log line ("" when none). */
const char *tl_kube_last_error(const struct tl_kube *k);
