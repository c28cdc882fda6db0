/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "cgroup-path.h"

/* A component of the path: not NUL-terminated. */
struct comp {
	const char *s;
	size_t n;
};

#define CONTAINER_ID_LEN 64

static bool comp_eq(struct comp c, const char *lit)
{
	size_t n = strlen(lit);

	return c.n == n && memcmp(c.s, lit, n) == 0;
}

/* Strips lit from the front of *c; false (and *c unchanged) if absent. */
static bool eat_prefix(struct comp *c, const char *lit)
{
	size_t n = strlen(lit);

	if (c->n < n || memcmp(c->s, lit, n) != 0)
		return false;
	c->s += n;
	c->n -= n;
	return true;
}

static bool eat_suffix(struct comp *c, const char *lit)
{
	size_t n = strlen(lit);

	if (c->n < n || memcmp(c->s + c->n - n, lit, n) != 0)
		return false;
	c->n -= n;
	return true;
}

/* Same as eat_prefix but for a counted prefix (the systemd slice prefix). */
static bool eat_prefix_n(struct comp *c, const char *p, size_t n)
{
	if (c->n < n || memcmp(c->s, p, n) != 0)
		return false;
	c->s += n;
	c->n -= n;
	return true;
}

static bool is_lower_hex(char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

static bool all_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

/* A pod UID: 8-4-4-4-12 lowercase hex with sep between groups, or the 32-hex
 * hash a static pod gets. Writes the API form (dashes) into out. */
static int parse_uid(struct comp c, char sep, char out[TL_CGROUP_UID_MAX])
{
	if (c.n == 32) {
		if (!all_lower_hex(c.s, c.n))
			return -EINVAL;
		memcpy(out, c.s, c.n);
		out[c.n] = '\0';
		return 0;
	}
	if (c.n != 36)
		return -EINVAL;
	for (size_t i = 0; i < c.n; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (c.s[i] != sep)
				return -EINVAL;
			out[i] = '-';
		} else {
			if (!is_lower_hex(c.s[i]))
				return -EINVAL;
			out[i] = c.s[i];
		}
	}
	out[c.n] = '\0';
	return 0;
}

static int parse_id(struct comp c, char out[TL_CGROUP_ID_MAX])
{
	if (c.n != CONTAINER_ID_LEN || !all_lower_hex(c.s, c.n))
		return -EINVAL;
	memcpy(out, c.s, c.n);
	out[c.n] = '\0';
	return 0;
}

/* The container level under a pod. Sets runtime, container_id, kind/conmon. */
static int parse_leaf(struct comp c, enum tl_cgroup_driver driver, struct tl_cgroup_path *p)
{
	if (driver == TL_DRIVER_SYSTEMD) {
		if (!eat_suffix(&c, ".scope"))
			return -EINVAL;
		/* crio-conmon- before crio-: the latter is a prefix of the former */
		if (eat_prefix(&c, "crio-conmon-")) {
			p->runtime = TL_RUNTIME_CRIO;
			p->conmon = true;
		} else if (eat_prefix(&c, "cri-containerd-")) {
			p->runtime = TL_RUNTIME_CONTAINERD;
		} else if (eat_prefix(&c, "crio-")) {
			p->runtime = TL_RUNTIME_CRIO;
		} else if (eat_prefix(&c, "docker-")) {
			p->runtime = TL_RUNTIME_DOCKER;
		} else {
			return -EINVAL;
		}
	} else {
		if (eat_prefix(&c, "crio-conmon-")) {
			p->runtime = TL_RUNTIME_CRIO;
			p->conmon = true;
		} else if (eat_prefix(&c, "crio-")) {
			p->runtime = TL_RUNTIME_CRIO;
		} else {
			p->runtime = TL_RUNTIME_UNKNOWN;
		}
	}
	if (parse_id(c, p->container_id) < 0)
		return -EINVAL;
	p->kind = p->conmon ? TL_CGROUP_OTHER : TL_CGROUP_CONTAINER;
	return 0;
}

static const char *const qos_level[] = {
	[TL_QOS_BURSTABLE] = "burstable",
	[TL_QOS_BESTEFFORT] = "besteffort",
};

/* Everything below the kubepods level, systemd driver. pre is the kubepods
 * slice name without ".slice" ("kubepods", or "kubelet-kubepods" under a
 * --cgroup-root): every nested slice repeats it. */
static int parse_systemd(const struct comp *v, size_t n, struct comp pre, struct tl_cgroup_path *p)
{
	size_t i = 0;
	struct comp c;

	if (i == n)
		return 0;
	c = v[i];
	if (!eat_suffix(&c, ".slice") || !eat_prefix_n(&c, pre.s, pre.n) || !eat_prefix(&c, "-"))
		return -EINVAL;
	if (comp_eq(c, "burstable") || comp_eq(c, "besteffort")) {
		p->qos = comp_eq(c, "burstable") ? TL_QOS_BURSTABLE : TL_QOS_BESTEFFORT;
		if (++i == n)
			return 0;
		c = v[i];
		if (!eat_suffix(&c, ".slice") || !eat_prefix_n(&c, pre.s, pre.n) || !eat_prefix(&c, "-") ||
		    !eat_prefix(&c, qos_level[p->qos]) || !eat_prefix(&c, "-"))
			return -EINVAL;
	} else {
		p->qos = TL_QOS_GUARANTEED;
	}
	if (!eat_prefix(&c, "pod") || parse_uid(c, '_', p->pod_uid) < 0)
		return -EINVAL;
	p->kind = TL_CGROUP_POD;
	if (++i == n)
		return 0;
	if (parse_leaf(v[i], TL_DRIVER_SYSTEMD, p) < 0)
		return -EINVAL;
	p->nested = ++i < n;
	return 0;
}

static int parse_cgroupfs(const struct comp *v, size_t n, struct tl_cgroup_path *p)
{
	size_t i = 0;
	struct comp c;

	if (i == n)
		return 0;
	c = v[i];
	if (comp_eq(c, "burstable") || comp_eq(c, "besteffort")) {
		p->qos = comp_eq(c, "burstable") ? TL_QOS_BURSTABLE : TL_QOS_BESTEFFORT;
		if (++i == n)
			return 0;
		c = v[i];
	} else {
		p->qos = TL_QOS_GUARANTEED;
	}
	if (!eat_prefix(&c, "pod") || parse_uid(c, '-', p->pod_uid) < 0)
		return -EINVAL;
	p->kind = TL_CGROUP_POD;
	if (++i == n)
		return 0;
	if (parse_leaf(v[i], TL_DRIVER_CGROUPFS, p) < 0)
		return -EINVAL;
	p->nested = ++i < n;
	return 0;
}

/* A runtime given a .slice parent hands runc a systemd-style cgroupsPath,
 * "<pod slice>:<prefix>:<id>"; runc's cgroupfs driver (the runtime's
 * SystemdCgroup off while the kubelet's driver is systemd, or no systemd to
 * ask) makes it one directory of that very name, below the runtime's own
 * cgroup instead of the pod's slice:
 *   kubepods-besteffort-pod<uid_>.slice:cri-containerd:<id>
 * The pod slice's name carries the QoS and the UID. */
static int parse_colon_leaf(struct comp c, struct tl_cgroup_path *p)
{
	const char *c1 = memchr(c.s, ':', c.n), *c2;
	struct comp slice, prefix, id, uid;
	static const char pod[] = "-pod";

	if (!c1)
		return -EINVAL;
	slice = (struct comp){ c.s, (size_t)(c1 - c.s) };
	c2 = memchr(c1 + 1, ':', c.n - slice.n - 1);
	if (!c2)
		return -EINVAL;
	prefix = (struct comp){ c1 + 1, (size_t)(c2 - c1 - 1) };
	id = (struct comp){ c2 + 1, c.n - (size_t)(c2 + 1 - c.s) };
	if (comp_eq(prefix, "cri-containerd"))
		p->runtime = TL_RUNTIME_CONTAINERD;
	else if (comp_eq(prefix, "crio"))
		p->runtime = TL_RUNTIME_CRIO;
	else if (comp_eq(prefix, "docker"))
		p->runtime = TL_RUNTIME_DOCKER;
	else
		return -EINVAL;
	if (parse_id(id, p->container_id) < 0 || !eat_suffix(&slice, ".slice"))
		return -EINVAL;
	/* <...>kubepods[-<qos>]-pod<uid>: the UID is 36 (or a static pod's 32)
	 * characters after the last "-pod". */
	for (size_t n = 36; n >= 32; n -= 4) {
		if (slice.n < n + sizeof(pod) - 1 ||
		    memcmp(slice.s + slice.n - n - (sizeof(pod) - 1), pod, sizeof(pod) - 1) != 0)
			continue;
		uid = (struct comp){ slice.s + slice.n - n, n };
		slice.n -= n + sizeof(pod) - 1;
		if (parse_uid(uid, '_', p->pod_uid) < 0)
			return -EINVAL;
		if (eat_suffix(&slice, "-burstable"))
			p->qos = TL_QOS_BURSTABLE;
		else if (eat_suffix(&slice, "-besteffort"))
			p->qos = TL_QOS_BESTEFFORT;
		else
			p->qos = TL_QOS_GUARANTEED;
		if (!(comp_eq(slice, "kubepods") || (slice.n > 9 && memcmp(slice.s + slice.n - 9, "-kubepods", 9) == 0)))
			return -EINVAL;
		p->driver = TL_DRIVER_CGROUPFS;
		p->kind = TL_CGROUP_CONTAINER;
		return 0;
	}
	return -EINVAL;
}

/* kubepods (cgroupfs) or kubepods.slice / <root>-kubepods.slice (systemd). */
static enum tl_cgroup_driver anchor_driver(struct comp c, struct comp *ret_pre)
{
	static const char tail[] = "-kubepods";

	if (comp_eq(c, "kubepods"))
		return TL_DRIVER_CGROUPFS;
	if (!eat_suffix(&c, ".slice"))
		return TL_DRIVER_UNKNOWN;
	if (!comp_eq(c, "kubepods") &&
	    !(c.n > sizeof(tail) - 1 && memcmp(c.s + c.n - (sizeof(tail) - 1), tail, sizeof(tail) - 1) == 0))
		return TL_DRIVER_UNKNOWN;
	*ret_pre = c;
	return TL_DRIVER_SYSTEMD;
}

/* Levels below the kubepods anchor that matter: QoS, pod, leaf, and one more
 * to learn that a cgroup is nested below the leaf. */
#define KUBE_LEVELS 4

int tl_cgroup_path_parse(const char *path, struct tl_cgroup_path *ret)
{
	struct comp v[KUBE_LEVELS], pre = { 0 };
	struct tl_cgroup_path p = { 0 }, q = { 0 };
	size_t len, n = 0;
	bool anchored = false, colon = false;
	const char *s, *end;
	int r = 0;

	if (!path || !ret)
		return -EINVAL;
	len = strnlen(path, PATH_MAX);
	if (len >= PATH_MAX)
		return -EINVAL;
	s = path;
	end = path + len;
	while (s < end && *s == '/')
		s++;
	while (s < end) {
		const char *slash = memchr(s, '/', (size_t)(end - s));
		size_t cl = slash ? (size_t)(slash - s) : (size_t)(end - s);
		struct comp c = { s, cl };

		if (cl == 0 || cl > TL_CGROUP_COMPONENT_MAX || comp_eq(c, ".") || comp_eq(c, ".."))
			return -EINVAL;
		if (colon) {
			p.nested = true;
		} else if (anchored) {
			if (n < KUBE_LEVELS)
				v[n++] = c;
		} else if (memchr(c.s, ':', c.n) && parse_colon_leaf(c, &q) == 0) {
			/* any other name with a colon is no kubelet's: OTHER */
			p = q;
			colon = true;
		} else {
			/* The first kubepods level anchors the parse; anything
			 * above it is a prefix. */
			p.driver = anchor_driver(c, &pre);
			anchored = p.driver != TL_DRIVER_UNKNOWN;
		}
		if (!slash)
			break;
		s = slash + 1;
		if (s == end) /* trailing '/' */
			return -EINVAL;
	}

	if (colon)
		;
	else if (p.driver == TL_DRIVER_SYSTEMD)
		r = parse_systemd(v, n, pre, &p);
	else if (p.driver == TL_DRIVER_CGROUPFS)
		r = parse_cgroupfs(v, n, &p);
	if (r < 0)
		return r;
	*ret = p;
	return 0;
}

const char *tl_cgroup_kind_name(enum tl_cgroup_kind k)
{
	switch (k) {
	case TL_CGROUP_POD: return "pod";
	case TL_CGROUP_CONTAINER: return "container";
	case TL_CGROUP_SANDBOX: return "sandbox";
	case TL_CGROUP_OTHER: break;
	}
	return "other";
}

const char *tl_cgroup_qos_name(enum tl_cgroup_qos q)
{
	switch (q) {
	case TL_QOS_GUARANTEED: return "guaranteed";
	case TL_QOS_BURSTABLE: return "burstable";
	case TL_QOS_BESTEFFORT: return "besteffort";
	case TL_QOS_UNKNOWN: break;
	}
	return "unknown";
}

const char *tl_cgroup_runtime_name(enum tl_cgroup_runtime r)
{
	switch (r) {
	case TL_RUNTIME_CONTAINERD: return "containerd";
	case TL_RUNTIME_CRIO: return "crio";
	case TL_RUNTIME_DOCKER: return "docker";
	case TL_RUNTIME_UNKNOWN: break;
	}
	return "unknown";
}

const char *tl_cgroup_driver_name(enum tl_cgroup_driver d)
{
	switch (d) {
	case TL_DRIVER_SYSTEMD: return "systemd";
	case TL_DRIVER_CGROUPFS: return "cgroupfs";
	case TL_DRIVER_UNKNOWN: break;
	}
	return "unknown";
}
