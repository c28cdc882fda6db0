/* SPDX-License-Identifier: Apache-2.0 */
/* A Pod's metadata (pod-meta.h): lifetime, equality, the one JSON encoder
 * and the journal record's decoder. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "pod-meta.h"

struct tl_pod_meta *tl_pod_meta_new(uint32_t cap)
{
	struct tl_pod_meta *m;

	if (cap > TL_POD_CONTAINERS_MAX)
		return NULL;
	m = calloc(1, sizeof(*m) + (size_t)cap * sizeof(m->containers[0]));
	if (!m)
		return NULL;
	m->refs = 1;
	m->grace_s = -1;
	m->cap_containers = cap;
	return m;
}

struct tl_pod_meta *tl_pod_meta_ref(const struct tl_pod_meta *m)
{
	/* shared metadata is never changed: the count is the one mutable
	 * part, atomic because a snapshot of a timeline may be let go off the
	 * loop's thread */
	struct tl_pod_meta *w = (struct tl_pod_meta *)m;

	if (w)
		__atomic_add_fetch(&w->refs, 1, __ATOMIC_RELAXED);
	return w;
}

void tl_pod_meta_unref(struct tl_pod_meta *m)
{
	if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	json_object_put(m->istio);
	free(m);
}

struct tl_pod_meta *tl_pod_meta_dup(const struct tl_pod_meta *m)
{
	struct tl_pod_meta *c;

	if (!m)
		return NULL;
	c = tl_pod_meta_new(m->cap_containers);
	if (!c)
		return NULL;
	memcpy(c, m, sizeof(*m) + (size_t)m->n_containers * sizeof(m->containers[0]));
	c->refs = 1;
	/* the istio object is never changed either: shared */
	c->istio = json_object_get(m->istio);
	return c;
}

bool tl_pod_meta_equal(const struct tl_pod_meta *a, const struct tl_pod_meta *b)
{
	if (!a || !b)
		return a == b;
	if (strcmp(a->ns, b->ns) != 0 || strcmp(a->name, b->name) != 0 ||
	    strcmp(a->uid, b->uid) != 0 || strcmp(a->node, b->node) != 0 ||
	    strcmp(a->ip, b->ip) != 0 || strcmp(a->owner_kind, b->owner_kind) != 0 ||
	    strcmp(a->owner_name, b->owner_name) != 0 || a->grace_s != b->grace_s ||
	    a->containers_dropped != b->containers_dropped || a->n_containers != b->n_containers)
		return false;
	if (!a->istio != !b->istio || (a->istio && !json_object_equal(a->istio, b->istio)))
		return false;
	for (uint32_t i = 0; i < a->n_containers; i++) {
		const struct tl_pod_container *x = &a->containers[i], *y = &b->containers[i];

		if (strcmp(x->name, y->name) != 0 || strcmp(x->container_id, y->container_id) != 0 ||
		    x->cgroup_id != y->cgroup_id || x->role != y->role || x->prestop != y->prestop)
			return false;
	}
	return true;
}

int tl_pod_meta_set(char *dst, size_t size, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n >= size) {
		dst[0] = '\0';
		return -ENAMETOOLONG;
	}
	memcpy(dst, s ? s : "", n + 1);
	return 0;
}

static const char *const role_names[] = {
	[TL_ROLE_MAIN] = "main", [TL_ROLE_SIDECAR] = "sidecar", [TL_ROLE_INIT] = "init",
};
static const char *const prestop_names[] = {
	[TL_PRESTOP_EXEC] = "exec", [TL_PRESTOP_HTTP_GET] = "httpGet",
	[TL_PRESTOP_SLEEP] = "sleep", [TL_PRESTOP_TCP_SOCKET] = "tcpSocket",
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const char *tl_pod_role_name(unsigned role)
{
	return role < N_OF(role_names) ? role_names[role] : NULL;
}

enum tl_pod_role tl_pod_role_parse(const char *s)
{
	for (unsigned i = 1; s && i < N_OF(role_names); i++)
		if (strcmp(s, role_names[i]) == 0)
			return (enum tl_pod_role)i;
	return TL_ROLE_NONE;
}

const char *tl_pod_prestop_name(unsigned prestop)
{
	return prestop < N_OF(prestop_names) ? prestop_names[prestop] : NULL;
}

enum tl_pod_prestop tl_pod_prestop_parse(const char *s)
{
	for (unsigned i = 1; s && i < N_OF(prestop_names); i++)
		if (strcmp(s, prestop_names[i]) == 0)
			return (enum tl_pod_prestop)i;
	return TL_PRESTOP_NONE;
}

/* ---- encoder ---- */

static struct json_object *str_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

struct json_object *tl_pod_meta_pod_json(const struct tl_pod_meta *m, const char *uid)
{
	struct json_object *pod = json_object_new_object(), *owner = NULL;

	if (!pod)
		return NULL;
	if (!uid)
		uid = m ? m->uid : "";
	/* the order of the documents written so far */
	json_object_object_add(pod, "namespace", str_or_null(m ? m->ns : NULL));
	json_object_object_add(pod, "name", str_or_null(m ? m->name : NULL));
	json_object_object_add(pod, "node", str_or_null(m ? m->node : NULL));
	json_object_object_add(pod, "ip", str_or_null(m ? m->ip : NULL));
	json_object_object_add(pod, "uid", str_or_null(uid));
	if (m && m->owner_kind[0] && m->owner_name[0]) {
		owner = json_object_new_object();
		if (!owner) {
			json_object_put(pod);
			return NULL;
		}
		json_object_object_add(owner, "kind", json_object_new_string(m->owner_kind));
		json_object_object_add(owner, "name", json_object_new_string(m->owner_name));
	}
	json_object_object_add(pod, "owner", owner);
	json_object_object_add(pod, "terminationGracePeriodSeconds",
			       m && m->grace_s >= 0 ? json_object_new_int64(m->grace_s) : NULL);
	if (m && m->istio)
		json_object_object_add(pod, "istio", json_object_get(m->istio));
	return pod;
}

struct json_object *tl_pod_meta_container_json(const struct tl_pod_container *c, uint64_t cgroup_id,
					       bool with_prestop)
{
	struct json_object *o = json_object_new_object();
	const char *role = tl_pod_role_name(c->role);

	if (!o)
		return NULL;
	json_object_object_add(o, "name", str_or_null(c->name));
	json_object_object_add(o, "containerID", str_or_null(c->container_id));
	json_object_object_add(o, "role", role ? json_object_new_string(role) : NULL);
	json_object_object_add(o, "cgroupId", json_object_new_int64((int64_t)cgroup_id));
	if (with_prestop)
		json_object_object_add(o, "preStop", str_or_null(tl_pod_prestop_name(c->prestop)));
	return o;
}

struct json_object *tl_pod_meta_to_json(const struct tl_pod_meta *m)
{
	struct json_object *o = json_object_new_object(), *pod = tl_pod_meta_pod_json(m, NULL);
	struct json_object *arr = json_object_new_array();

	if (!o || !pod || !arr)
		goto fail;
	json_object_object_add(o, "pod", pod);
	pod = NULL;
	json_object_object_add(o, "containers", arr);
	/* What the table could not hold: a replay must not take the
	 * containers it has for all the Pod's (attribution's sandbox search
	 * waits for them all). Only when there were some. */
	if (m && m->containers_dropped)
		json_object_object_add(o, "containersDropped", json_object_new_int64(m->containers_dropped));
	for (uint32_t i = 0; m && i < m->n_containers; i++) {
		struct json_object *c = tl_pod_meta_container_json(&m->containers[i],
								   m->containers[i].cgroup_id, true);

		if (!c || json_object_array_add(arr, c) < 0) {
			json_object_put(c);
			json_object_put(o);
			return NULL;
		}
	}
	return o;
fail:
	json_object_put(o);
	json_object_put(pod);
	json_object_put(arr);
	return NULL;
}

/* ---- decoder ---- */

int tl_pod_meta_from_json(struct json_object *o, const char *uid, struct tl_pod_meta **ret)
{
	struct json_object *pod = tl_json_object(o, "pod"), *owner = tl_json_object(pod, "owner");
	struct json_object *ctrs = tl_json_array(o, "containers"), *istio = tl_json_object(pod, "istio");
	size_t n = ctrs ? json_object_array_length(ctrs) : 0;
	struct tl_pod_meta *m;
	int64_t g;

	if (!o || !json_object_is_type(o, json_type_object))
		return -EINVAL;
	m = tl_pod_meta_new(n > TL_POD_CONTAINERS_MAX ? TL_POD_CONTAINERS_MAX : (uint32_t)n);
	if (!m)
		return -ENOMEM;
	/* a field that does not fit is dropped: the record is input */
	TL_POD_META_SET(m->ns, tl_json_str(pod, "namespace"));
	TL_POD_META_SET(m->name, tl_json_str(pod, "name"));
	if (TL_POD_META_SET(m->uid, tl_json_str(pod, "uid")) < 0 || !m->uid[0])
		TL_POD_META_SET(m->uid, uid);
	TL_POD_META_SET(m->node, tl_json_str(pod, "node"));
	TL_POD_META_SET(m->ip, tl_json_str(pod, "ip"));
	if (TL_POD_META_SET(m->owner_kind, tl_json_str(owner, "kind")) < 0 ||
	    TL_POD_META_SET(m->owner_name, tl_json_str(owner, "name")) < 0 ||
	    !m->owner_kind[0] || !m->owner_name[0])
		m->owner_kind[0] = m->owner_name[0] = '\0';
	if (tl_json_int(pod, "terminationGracePeriodSeconds", &g) && g >= 0)
		m->grace_s = g;
	if (istio)
		m->istio = json_object_get(istio);
	for (size_t i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(ctrs, i);
		struct tl_pod_container *k;
		int64_t cg;

		if (m->n_containers == m->cap_containers || !json_object_is_type(c, json_type_object)) {
			m->containers_dropped++;
			continue;
		}
		k = &m->containers[m->n_containers];
		if (TL_POD_META_SET(k->name, tl_json_str(c, "name")) < 0) {
			m->containers_dropped++;
			continue;
		}
		TL_POD_META_SET(k->container_id, tl_json_str(c, "containerID"));
		k->role = (uint8_t)tl_pod_role_parse(tl_json_str(c, "role"));
		k->prestop = (uint8_t)tl_pod_prestop_parse(tl_json_str(c, "preStop"));
		k->cgroup_id = tl_json_int(c, "cgroupId", &cg) && cg > 0 ? (uint64_t)cg : 0;
		m->n_containers++;
	}
	/* (the record's own count of what an earlier decoder dropped) */
	if (tl_json_int(o, "containersDropped", &g) && g > 0)
		m->containers_dropped += g > UINT32_MAX - m->containers_dropped ? UINT32_MAX - m->containers_dropped
										: (uint32_t)g;
	*ret = m;
	return 0;
}
