/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "macro.h"
#include "attribution.h"

struct ip_expiry {
	char ip[64];
	char uid[TL_UID_MAX];
	int64_t at_ns;
};

struct tl_attr {
	struct tl_cgroup_map *cgroups;
	struct tl_attr_ops ops;
	struct tl_attr_tombstone tombstones[TL_ATTR_TOMBSTONES];
	unsigned next_tombstone;
	struct ip_expiry ips[TL_ATTR_IP_EXPIRIES];
};

int tl_attr_new(struct tl_cgroup_map *cgroups, const struct tl_attr_ops *ops, struct tl_attr **ret)
{
	struct tl_attr *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->cgroups = cgroups;
	if (ops)
		a->ops = *ops;
	*ret = a;
	return 0;
}

void tl_attr_free(struct tl_attr *a)
{
	free(a);
}

const struct tl_attr_tombstone *tl_attr_find_tombstone(const struct tl_attr *a, uint64_t cgroup_id,
						       int64_t now_ns)
{
	for (unsigned i = 0; cgroup_id && i < TL_ATTR_TOMBSTONES; i++) {
		const struct tl_attr_tombstone *t = &a->tombstones[i];

		if (t->cgroup_id == cgroup_id && now_ns - t->removed_ns < TL_ATTR_TOMBSTONE_TTL_NS)
			return t;
	}
	return NULL;
}

void tl_attr_cgroup_removed(struct tl_attr *a, const struct tl_cgroup_info *info, int64_t now_ns)
{
	struct tl_attr_tombstone *t = &a->tombstones[a->next_tombstone++ % TL_ATTR_TOMBSTONES];

	t->cgroup_id = info->cgroup_id;
	t->removed_ns = now_ns;
	tl_copy_str(t->pod_uid, sizeof(t->pod_uid), info->parsed.pod_uid);
	tl_copy_str(t->container_id, sizeof(t->container_id), info->parsed.container_id);
}

/* Resets of refused connections have no socket, so no cgroup: the only
 * link to a Pod is its IP. Addresses are bytes in the event; text only for
 * the lookup. */
static void attribute_by_ip(struct tl_attr *a, struct tl_event *ev)
{
	static const unsigned slots[] = { TL_F_RESET_LOCAL, TL_F_RESET_REMOTE };
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (!a->ops.pod_by_ip ||
	    (ev->kind != TL_KIND_TCP_RESET_SENT && ev->kind != TL_KIND_TCP_RESET_RECEIVED))
		return;
	for (size_t i = 0; i < 2 && !ev->pod_uid[0]; i++) {
		const struct tl_value *v = &ev->v[slots[i]];
		const uint8_t *addr = v->addr;
		int family = v->family;
		char ip[INET6_ADDRSTRLEN];
		const char *uid;

		if (!v->set)
			continue;
		if (family == AF_INET6 && memcmp(addr, mapped, sizeof(mapped)) == 0)
			family = AF_INET, addr += 12;
		if (!inet_ntop(family, addr, ip, sizeof(ip)))
			continue;
		uid = a->ops.pod_by_ip(a->ops.ud, ip);
		if (uid)
			tl_copy_str(ev->pod_uid, sizeof(ev->pod_uid), uid);
	}
}

void tl_attr_event(struct tl_attr *a, struct tl_event *ev, int64_t now_ns)
{
	if (ev->cgroup_id && !ev->pod_uid[0]) {
		const struct tl_cgroup_info *info =
			a->cgroups ? tl_cgroup_map_lookup(a->cgroups, ev->cgroup_id) : NULL;
		const struct tl_attr_tombstone *t;

		if (info && info->parsed.pod_uid[0]) {
			tl_copy_str(ev->pod_uid, sizeof(ev->pod_uid), info->parsed.pod_uid);
			tl_copy_str(ev->container_id, sizeof(ev->container_id),
				    info->parsed.container_id);
			/* The pause container has no name in the Pod spec. */
			if (info->parsed.kind == TL_CGROUP_SANDBOX)
				ev->flags |= TL_EF_SANDBOX;
		} else if ((t = tl_attr_find_tombstone(a, ev->cgroup_id,
							now_ns == TL_ATTR_NOW ? tl_now_real_ns() : now_ns))) {
			tl_copy_str(ev->pod_uid, sizeof(ev->pod_uid), t->pod_uid);
			tl_copy_str(ev->container_id, sizeof(ev->container_id), t->container_id);
		}
	}
	if (!ev->pod_uid[0])
		attribute_by_ip(a, ev);
	if (a->ops.container_name && ev->container_id[0] && !ev->container[0]) {
		const char *name = a->ops.container_name(a->ops.ud, ev->container_id);

		if (name)
			tl_copy_str(ev->container, sizeof(ev->container), name);
	}
}

void tl_attr_ip_expire_at(struct tl_attr *a, const char *ip, const char *uid, int64_t at_ns)
{
	struct ip_expiry *slot = NULL;

	if (!ip || !*ip || strlen(ip) >= sizeof(slot->ip))
		return;
	for (size_t i = 0; i < TL_ATTR_IP_EXPIRIES; i++) {
		struct ip_expiry *e = &a->ips[i];

		if (!e->ip[0] || strcmp(e->ip, ip) == 0) {
			slot = e;
			break;
		}
		if (!slot || e->at_ns < slot->at_ns)
			slot = e;
	}
	/* All slots busy: the soonest-due one goes now. */
	if (slot->ip[0] && strcmp(slot->ip, ip) != 0 && a->ops.untrack_ip)
		a->ops.untrack_ip(a->ops.ud, slot->ip);
	tl_copy_str(slot->ip, sizeof(slot->ip), ip);
	tl_copy_str(slot->uid, sizeof(slot->uid), uid ? uid : "");
	slot->at_ns = at_ns;
}

void tl_attr_ip_expire(struct tl_attr *a, int64_t now_ns)
{
	for (size_t i = 0; i < TL_ATTR_IP_EXPIRIES; i++) {
		struct ip_expiry *e = &a->ips[i];
		const char *owner;

		if (!e->ip[0] || e->at_ns > now_ns)
			continue;
		/* The IP may already belong to a new Pod of this node. */
		owner = a->ops.pod_by_ip ? a->ops.pod_by_ip(a->ops.ud, e->ip) : NULL;
		if ((!owner || strcmp(owner, e->uid) == 0) && a->ops.untrack_ip)
			a->ops.untrack_ip(a->ops.ud, e->ip);
		e->ip[0] = '\0';
	}
}

struct sandbox_search {
	const char *uid;
	const struct tl_pod_meta *meta;
	char found[4][TL_CONTAINER_ID_MAX];
	int n;
};

static bool meta_has_container(const struct tl_pod_meta *meta, const char *bare_id)
{
	for (uint32_t i = 0; i < meta->n_containers; i++)
		if (strcmp(tl_container_id_bare(meta->containers[i].container_id), bare_id) == 0)
			return true;
	return false;
}

static int find_sandbox_leaf(void *userdata, const struct tl_cgroup_info *info)
{
	struct sandbox_search *ss = userdata;

	if (info->parsed.kind != TL_CGROUP_CONTAINER || info->parsed.nested || info->parsed.conmon ||
	    strcmp(info->parsed.pod_uid, ss->uid) != 0 ||
	    meta_has_container(ss->meta, info->parsed.container_id))
		return 0;
	if (ss->n < 4)
		snprintf(ss->found[ss->n++], TL_CONTAINER_ID_MAX, "%s", info->parsed.container_id);
	return 0;
}

int tl_attr_mark_sandbox(struct tl_attr *a, const char *uid, const struct tl_pod_meta *meta)
{
	struct sandbox_search ss = { .uid = uid, .meta = meta };

	if (!a->cgroups || !uid || !meta)
		return 0;
	/* Only decidable once every container of the Pod has an id, and
	 * when the table holds every container the Pod has. */
	if (meta->containers_dropped)
		return 0;
	for (uint32_t i = 0; i < meta->n_containers; i++)
		if (!meta->containers[i].container_id[0])
			return 0;
	tl_cgroup_map_foreach(a->cgroups, find_sandbox_leaf, &ss);
	/* More than one unknown leaf means something else is going on (a
	 * container not in the status yet): mark nothing. */
	if (ss.n == 1 && tl_cgroup_map_mark_sandbox(a->cgroups, ss.found[0]) == 0)
		return 1;
	return 0;
}
