/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* A Pod's metadata as the timeline needs it: what the document's "pod" and
 * "containers" say (docs/timeline-format.md, schema/timeline.schema.json).
 * The kube Pod model fills it from the API object (kube-pods.c), main adds
 * the cgroup ids the cgroup map knows, attribution reads the container ids
 * to find the sandbox, and the store keeps it per timeline, writes it into
 * the document and, typed, into the journal (daemon/store/frames.c). One
 * encoder writes its JSON; one decoder reads JSON records back (the
 * journal's of agents before the typed form, docs/journal-format.md).
 *
 * Strings are bounded copies, NUL-terminated; "" means unknown (null in the
 * document). A filled metadata is shared by reference count and never
 * changed once shared: change a tl_pod_meta_dup(). */
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "event.h"

/* Kubernetes' own limits (a namespace is a DNS label, a Pod or owner name a
 * DNS subdomain), with the NUL. An API object past them is not a valid one:
 * the Pod model ignores the Pod (ns/name) or drops the field (owner). */
#define TL_POD_NS_MAX 64
#define TL_POD_NAME_MAX 254
#define TL_POD_NODE_MAX 254
#define TL_POD_IP_MAX 64
#define TL_POD_KIND_MAX 64
/* Containers of one Pod kept (init + app containers); beyond, counted in
 * containers_dropped. A kubelet has no such limit, the API server's object
 * size (1.5 MiB) is the only one. */
#define TL_POD_CONTAINERS_MAX 256

enum tl_pod_role {
	TL_ROLE_NONE = 0, /* unknown: null */
	TL_ROLE_MAIN,
	TL_ROLE_SIDECAR, /* an init container with restartPolicy Always, or istio-proxy */
	TL_ROLE_INIT,
};

/* The kind of a container's preStop hook (lifecycle.preStop.*). Kept for
 * the journal only: the document does not carry it. */
enum tl_pod_prestop {
	TL_PRESTOP_NONE = 0,
	TL_PRESTOP_EXEC,
	TL_PRESTOP_HTTP_GET,
	TL_PRESTOP_SLEEP,
	TL_PRESTOP_TCP_SOCKET,
};

struct tl_pod_container {
	char name[TL_NAME_MAX];                 /* spec name; "" unknown */
	char container_id[TL_CONTAINER_ID_MAX]; /* "containerd://..." from the status; "" not yet */
	uint64_t cgroup_id;                     /* cgroup v2 inode; 0 unknown (the API does not know it) */
	uint8_t role;                           /* enum tl_pod_role */
	uint8_t prestop;                        /* enum tl_pod_prestop */
};

struct tl_pod_meta {
	unsigned refs; /* atomic: tl_pod_meta_ref/unref */
	char ns[TL_POD_NS_MAX];
	char name[TL_POD_NAME_MAX];
	char uid[TL_UID_MAX];
	char node[TL_POD_NODE_MAX];    /* spec.nodeName */
	char ip[TL_POD_IP_MAX];        /* the first of status.podIPs (or status.podIP) */
	char owner_kind[TL_POD_KIND_MAX]; /* the controller owner, else the first; */
	char owner_name[TL_POD_NAME_MAX]; /* both "" when there is none */
	int64_t grace_s;               /* spec.terminationGracePeriodSeconds; -1 unknown */
	/* pod.istio as written (kube-istio.c: bounded there), NULL when the
	 * Pod has no Istio settings: an open-ended object, kept as JSON. */
	struct json_object *istio;
	uint32_t containers_dropped; /* past TL_POD_CONTAINERS_MAX or unusable */
	uint32_t n_containers;
	uint32_t cap_containers;
	struct tl_pod_container containers[];
};

/* Room for cap containers, none used; grace_s -1; one reference. NULL when
 * out of memory (or cap > TL_POD_CONTAINERS_MAX). */
struct tl_pod_meta *tl_pod_meta_new(uint32_t cap);
struct tl_pod_meta *tl_pod_meta_ref(const struct tl_pod_meta *m);
void tl_pod_meta_unref(struct tl_pod_meta *m); /* accepts NULL */
/* A copy of its own (one reference, same capacity), or NULL. */
struct tl_pod_meta *tl_pod_meta_dup(const struct tl_pod_meta *m);
/* Same facts (every field, containers in order, istio by value); two NULLs
 * are equal. */
bool tl_pod_meta_equal(const struct tl_pod_meta *a, const struct tl_pod_meta *b);

/* Copies s into dst[size]: 0, or -ENAMETOOLONG with dst "" when it does not
 * fit (NULL s: ""). Nothing is ever cut: a cut name is another name. */
int tl_pod_meta_set(char *dst, size_t size, const char *s);
#define TL_POD_META_SET(field, s) tl_pod_meta_set((field), sizeof(field), (s))

/* "main", "sidecar", "init" or NULL; and back (TL_ROLE_NONE otherwise). */
const char *tl_pod_role_name(unsigned role);
enum tl_pod_role tl_pod_role_parse(const char *s);
/* "exec", "httpGet", "sleep", "tcpSocket" or NULL; and back. */
const char *tl_pod_prestop_name(unsigned prestop);
enum tl_pod_prestop tl_pod_prestop_parse(const char *s);

/* ---- the one encoder ---- */

/* The document's "pod" object: namespace, name, node, ip, uid, owner,
 * terminationGracePeriodSeconds, istio (when any); null where unknown. uid
 * is the timeline's (NULL: m's own). m may be NULL (--no-api): every field
 * null but uid. New object or NULL (out of memory). */
struct json_object *tl_pod_meta_pod_json(const struct tl_pod_meta *m, const char *uid);
/* One entry of the document's "containers": name, containerID, role,
 * cgroupId (cgroup_id, the caller's: the document fills in what the
 * kernel side saw); with_prestop adds the journal's "preStop". */
struct json_object *tl_pod_meta_container_json(const struct tl_pod_container *c, uint64_t cgroup_id,
					       bool with_prestop);
/* The journal's Pod-metadata record: {"pod": ..., "containers": [...]} (the
 * contract's objects, containers with "preStop"). New object or NULL. */
struct json_object *tl_pod_meta_to_json(const struct tl_pod_meta *m);

/* ---- the decoder ---- */

/* Reads a Pod-metadata record back: this encoder's, and the previous one's
 * (the API model's JSON, "" where unknown; docs/journal-format.md). The
 * record is input (a damaged journal): wrong types read as absent, strings
 * that do not fit are dropped, containers past the bound or without a
 * usable name are counted in containers_dropped. uid fills m->uid when the
 * record has none. 0 (*ret: one reference), -EINVAL (not an object) or
 * -ENOMEM. */
int tl_pod_meta_from_json(struct json_object *o, const char *uid, struct tl_pod_meta **ret);
