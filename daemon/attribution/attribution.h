/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Attribution: completes each event's Pod and container before it is
 * recorded (docs/architecture.md).
 *
 * - by cgroup id, through the cgroup map (kernel events);
 * - by tombstone: a container's last events (its exit, a reset) sit in the
 *   ring buffer for up to one drain period after its cgroup is removed, and
 *   inotify may be read first, so removed cgroups stay attributable for a
 *   minute;
 * - by Pod IP: resets of refused connections have no socket, hence no
 *   cgroup, only addresses;
 * - container names from the API side, by container id;
 * - the sandbox (pause) container: its leaf is the one whose id is in no
 *   container status, marked in the cgroup map once that is decidable.
 *
 * Pod IPs stay in the kernel's reset filter for the linger after a Pod's
 * deletion, then are taken out unless a new Pod of this node has the IP.
 *
 * No BPF, no API server: lookups that need them are callbacks, so the
 * module is unit-tested on a directory tree (tests/attribution). */
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "cgroup-map.h"
#include "event.h"
#include "pod-meta.h"

#define TL_ATTR_TOMBSTONES 512
#define TL_ATTR_TOMBSTONE_TTL_NS (60LL * 1000000000LL)
#define TL_ATTR_IP_EXPIRIES 256

struct tl_attr_ops {
	/* Pod UID of a Pod IP of this node, NULL unknown. NULL op: no API. */
	const char *(*pod_by_ip)(void *ud, const char *ip);
	/* Container name of a bare container id, NULL unknown. */
	const char *(*container_name)(void *ud, const char *bare_id);
	/* Takes an IP out of the kernel's reset filter. */
	void (*untrack_ip)(void *ud, const char *ip);
	void *ud;
};

struct tl_attr_tombstone {
	uint64_t cgroup_id;
	int64_t removed_ns;
	char pod_uid[TL_UID_MAX];
	char container_id[TL_CONTAINER_ID_MAX];
};

struct tl_attr;

/* cgroups may be NULL (nothing attributes by cgroup then). */
int tl_attr_new(struct tl_cgroup_map *cgroups, const struct tl_attr_ops *ops, struct tl_attr **ret);
void tl_attr_free(struct tl_attr *a); /* accepts NULL */

/* Fills ev's pod_uid, container_id, container and the sandbox flag where
 * they are empty and known. now_ns: the tombstones' clock (realtime);
 * TL_ATTR_NOW reads it only when a tombstone is looked at (most events are
 * of a live cgroup: no clock read on their path). */
#define TL_ATTR_NOW 0
void tl_attr_event(struct tl_attr *a, struct tl_event *ev, int64_t now_ns);

/* A container cgroup went away: remembered for TL_ATTR_TOMBSTONE_TTL_NS. */
void tl_attr_cgroup_removed(struct tl_attr *a, const struct tl_cgroup_info *info, int64_t now_ns);
const struct tl_attr_tombstone *tl_attr_find_tombstone(const struct tl_attr *a, uint64_t cgroup_id,
						       int64_t now_ns);

/* ip of Pod uid leaves the reset filter at at_ns (a slot per IP; with all
 * slots busy the soonest due goes now). */
void tl_attr_ip_expire_at(struct tl_attr *a, const char *ip, const char *uid, int64_t at_ns);
/* Takes out every IP due by now_ns, unless it now belongs to another Pod. */
void tl_attr_ip_expire(struct tl_attr *a, int64_t now_ns);

/* The Pod's containers (meta's table, every one with its id): marks the
 * sandbox leaf when exactly one leaf of the Pod has an id in none of them
 * and every container has an id. Returns 1 when marked. */
int tl_attr_mark_sandbox(struct tl_attr *a, const char *uid, const struct tl_pod_meta *meta);
