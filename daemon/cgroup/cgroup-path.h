/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>

/* Parser for the cgroup v2 directory names the kubelet and the container
 * runtimes create (docs/architecture.md, "Attribution by cgroup"). Pure: no
 * I/O, no allocation.
 *
 * Accepted layouts, below an optional prefix (a test directory,
 * system.slice, or the kubelet's --cgroup-root, which with the systemd driver
 * also prefixes every slice name, e.g. kubelet.slice/kubelet-kubepods.slice/
 * kubelet-kubepods-burstable.slice/...):
 *
 *   systemd:  kubepods.slice/[kubepods-<qos>.slice/]kubepods[-<qos>]-pod<uid_>.slice/<leaf>.scope
 *             leaf: cri-containerd-<id> | crio-<id> | crio-conmon-<id> | docker-<id>
 *   cgroupfs: kubepods/[<qos>/]pod<uid>/<leaf>
 *             leaf: <id> | crio-<id> | crio-conmon-<id>
 *   runc's cgroupfs driver given a systemd-style cgroupsPath (the kubelet's
 *   driver systemd, the runtime's cgroupfs): one directory, wherever the
 *   runtime's own cgroup is, named after the pod slice, a prefix and the id:
 *             kubepods[-<qos>]-pod<uid_>.slice:<cri-containerd|crio|docker>:<id>
 *             (driver reported as cgroupfs)
 *
 * Guaranteed pods have no QoS level. The systemd driver writes the pod UID
 * with '_' for '-' (a '-' would start a new slice level); the parsed UID is
 * always the API form with dashes. Static (mirror) pods have a 32-hex UID
 * without dashes, which is accepted as is. Container ids are 64 lowercase hex.
 *
 * The pause (sandbox) container's leaf looks exactly like any other
 * container's; only the pod's status tells it apart (its id never appears in
 * containerStatuses). The parser therefore never returns
 * TL_CGROUP_SANDBOX: it reports TL_CGROUP_CONTAINER, and whoever knows the
 * pod's containers marks the sandbox (tl_cgroup_map_mark_sandbox()).
 *
 * With the cgroupfs driver a bare id cannot tell containerd from docker
 * (cri-dockerd): runtime is TL_RUNTIME_UNKNOWN there; the API's
 * containerID ("containerd://...") names it. */

#define TL_CGROUP_UID_MAX 40 /* 36 chars + NUL, rounded */
#define TL_CGROUP_ID_MAX 72  /* 64 hex + NUL, rounded */
#define TL_CGROUP_COMPONENT_MAX 255

enum tl_cgroup_kind {
	TL_CGROUP_OTHER = 0,     /* not a pod's cgroup, or a kubepods/QoS level, or conmon */
	TL_CGROUP_POD,           /* the pod's own level */
	TL_CGROUP_CONTAINER,     /* a container's leaf (or a cgroup below it) */
	TL_CGROUP_SANDBOX,       /* set by the map once the API side knows; never by the parser */
};

enum tl_cgroup_qos {
	TL_QOS_UNKNOWN = 0,
	TL_QOS_GUARANTEED,
	TL_QOS_BURSTABLE,
	TL_QOS_BESTEFFORT,
};

enum tl_cgroup_runtime {
	TL_RUNTIME_UNKNOWN = 0,
	TL_RUNTIME_CONTAINERD,
	TL_RUNTIME_CRIO,
	TL_RUNTIME_DOCKER,
};

enum tl_cgroup_driver {
	TL_DRIVER_UNKNOWN = 0,   /* no kubepods level in the path */
	TL_DRIVER_SYSTEMD,
	TL_DRIVER_CGROUPFS,
};

struct tl_cgroup_path {
	enum tl_cgroup_kind kind;
	enum tl_cgroup_qos qos;         /* set from the QoS level down */
	enum tl_cgroup_runtime runtime; /* set on container and conmon leaves */
	enum tl_cgroup_driver driver;   /* set from the kubepods level down */
	bool conmon;    /* CRI-O's monitor scope: kind OTHER, ids of the container it watches */
	bool nested;    /* below a container (or conmon) leaf: a cgroup the container made itself */
	char pod_uid[TL_CGROUP_UID_MAX];     /* API form with dashes; "" above the pod level */
	char container_id[TL_CGROUP_ID_MAX]; /* bare id; "" above the container level */
};

/* Parses a directory path relative to the cgroup2 mount ("" or "/" is the
 * root; one leading '/' run is allowed, as /proc/PID/cgroup prints it).
 * Paths without a kubepods level parse as kind OTHER.
 * Returns 0 and fills *ret, or -EINVAL (leaving *ret untouched) when a
 * kubelet/runtime level is malformed or truncated, a component is empty,
 * "." or "..", longer than 255 bytes, or the path is PATH_MAX or longer. */
int tl_cgroup_path_parse(const char *path, struct tl_cgroup_path *ret);

const char *tl_cgroup_kind_name(enum tl_cgroup_kind k);
const char *tl_cgroup_qos_name(enum tl_cgroup_qos q);
const char *tl_cgroup_runtime_name(enum tl_cgroup_runtime r);
const char *tl_cgroup_driver_name(enum tl_cgroup_driver d);
