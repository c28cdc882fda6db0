/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "cgroup-path.h"

/* cgroup id -> pod/container, for attributing kernel events.
 * bpf_get_current_cgroup_id() is the cgroup v2 directory's inode number, so
 * the map walks the cgroup2 mount once, stats every directory, parses its
 * path (cgroup-path.h) and keeps itself current with inotify on every
 * directory, driven by the event loop. On IN_Q_OVERFLOW it rescans.
 *
 * Every directory is tracked (so lookups of host cgroups answer "other");
 * the callbacks fire only for container leaves (TL_CGROUP_CONTAINER,
 * including the sandbox's leaf and cgroups nested below a leaf), which is
 * what the BPF cgroup filter needs. Directories whose names look like the
 * kubelet's but do not parse are ignored with everything below them (their
 * descendants could not parse either) and counted
 * (termline_cgroup_unparsable_total); termline_cgroups_tracked is the number
 * of tracked directories with a pod UID. */
struct tl_loop;
struct tl_cgroup_map;

/* Bounds on what the node's cgroup tree can make us hold. */
#define TL_CGROUP_MAP_MAX_DEPTH 32
#define TL_CGROUP_MAP_MAX_ENTRIES 65536

struct tl_cgroup_info {
	uint64_t cgroup_id;          /* the directory's inode number */
	struct tl_cgroup_path parsed; /* kind is TL_CGROUP_SANDBOX once marked */
	const char *path;            /* relative to the root, "" for the root itself */
};

/* Called from the loop (or from attach/scan). The info pointer is valid only
 * during the call. removed() gets the last known info. */
struct tl_cgroup_map_callbacks {
	void (*added)(void *userdata, const struct tl_cgroup_info *info);
	void (*removed)(void *userdata, const struct tl_cgroup_info *info);
	void *userdata;
};

struct tl_cgroup_map_stats {
	uint64_t tracked;      /* directories in the map */
	uint64_t pod_related;  /* of those, with a pod UID */
	uint64_t unparsable;   /* names seen that did not parse (cumulative) */
	uint64_t rescans;      /* full rescans after the first walk */
	uint64_t dropped;      /* directories not tracked: depth or entry limit, stat/watch failures */
};

/* Finds the cgroup2 mount point in a mountinfo file ("/proc/self/mountinfo").
 * Prefers a mount of the hierarchy's root ("/"), as on a node
 * (/sys/fs/cgroup) or a hybrid host (/sys/fs/cgroup/unified); decodes the
 * kernel's octal escapes (\040 ...). Returns 0, -ENOENT (no cgroup2 mount),
 * -ENAMETOOLONG (len too small) or -errno reading the file. */
int tl_cgroup_find_mount(const char *mountinfo, char *buf, size_t len);

/* The directory to walk for --cgroup-root DIR. DIR itself when it is a
 * cgroup2 mount, or not a mount at all (a directory tree standing for one,
 * as in tests); when DIR is another filesystem with a cgroup2 mount at or
 * below it (a hybrid host's /sys/fs/cgroup, a tmpfs holding the v1
 * hierarchies and unified/, mounted into a container as a hostPath), that
 * mount, chosen as tl_cgroup_find_mount() chooses. Returns 0 (DIR), 1 (the
 * mount below it), -ENAMETOOLONG or -errno reading mountinfo. */
int tl_cgroup_resolve_root(const char *mountinfo, const char *root, char *buf, size_t len);

/* root: the directory standing for the cgroup2 mount (--cgroup-root), or
 * NULL to find it in /proc/self/mountinfo. cb may be NULL. Does no walk yet. */
int tl_cgroup_map_new(const char *root, const struct tl_cgroup_map_callbacks *cb,
		      struct tl_cgroup_map **ret);
void tl_cgroup_map_free(struct tl_cgroup_map *map);

const char *tl_cgroup_map_root(const struct tl_cgroup_map *map);

/* Initial walk (added() for each container leaf) and the inotify fd on loop.
 * Once only. 0 or -errno. */
int tl_cgroup_map_attach(struct tl_cgroup_map *map, struct tl_loop *loop);
/* Walks again: adds what is new, removes what is gone (with callbacks).
 * Works attached or not (unattached: no watches). 0 or -errno. */
int tl_cgroup_map_scan(struct tl_cgroup_map *map);
/* Handles pending inotify events without waiting; the loop calls it. */
int tl_cgroup_map_process(struct tl_cgroup_map *map);

/* NULL when unknown. Valid until the next loop iteration/scan. */
const struct tl_cgroup_info *tl_cgroup_map_lookup(const struct tl_cgroup_map *map, uint64_t cgroup_id);
/* The container's own leaf (not a nested cgroup, not conmon); bare id or
 * "<runtime>://<id>" as in containerStatuses (any runtime name, e.g.
 * "containerd://", "cri-o://", "docker://"); NULL for NULL or an empty id. */
const struct tl_cgroup_info *tl_cgroup_map_lookup_container(const struct tl_cgroup_map *map,
							    const char *container_id);
/* The API side found the pod's sandbox (the leaf whose id is in no
 * containerStatuses): marks that leaf and the cgroups below it SANDBOX.
 * 0, or -ENOENT when no such leaf is tracked. */
int tl_cgroup_map_mark_sandbox(struct tl_cgroup_map *map, const char *container_id);

/* Calls fn for every tracked directory; stops when fn returns non-zero and
 * returns that value. fn must not change the map. */
int tl_cgroup_map_foreach(const struct tl_cgroup_map *map,
			  int (*fn)(void *userdata, const struct tl_cgroup_info *info), void *userdata);

void tl_cgroup_map_get_stats(const struct tl_cgroup_map *map, struct tl_cgroup_map_stats *ret);
