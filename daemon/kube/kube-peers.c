/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "clock.h"
#include "json-util.h"
#include "kube-peers.h"

#define PAGE 500
/* Pages of the LIST of every Pod, at most (a cluster of 5 million Pods
 * is not one this walks through). */
#define PAGES_MAX 10000

struct tl_peers {
	struct tl_peers_config cfg;
	unsigned calls;
	bool nodes_done;
	/* address -> node name */
	struct json_object *nodes;
	/* address -> array of candidate Pods ({ns, name, created, owner
	 * kind/name}) or an "unknown" marker, for addresses asked */
	struct json_object *pods;
	/* "ns/name" of a ReplicaSet -> its workload object ({kind,name}) */
	struct json_object *rs;
	unsigned rs_asked;
};

int tl_peers_new(const struct tl_peers_config *cfg, struct tl_peers **ret)
{
	struct tl_peers *p;

	if (!cfg || !cfg->get)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cfg = *cfg;
	if (!p->cfg.per_ip_max)
		p->cfg.per_ip_max = TL_PEERS_PER_IP_MAX;
	if (!p->cfg.rs_max)
		p->cfg.rs_max = TL_PEERS_RS_MAX;
	p->nodes = json_object_new_object();
	p->pods = json_object_new_object();
	p->rs = json_object_new_object();
	if (!p->nodes || !p->pods || !p->rs) {
		tl_peers_free(p);
		return -ENOMEM;
	}
	*ret = p;
	return 0;
}

void tl_peers_free(struct tl_peers *p)
{
	if (!p)
		return;
	json_object_put(p->nodes);
	json_object_put(p->pods);
	json_object_put(p->rs);
	free(p);
}

unsigned tl_peers_api_calls(const struct tl_peers *p)
{
	return p ? p->calls : 0;
}

static int api_get(struct tl_peers *p, const char *path, struct json_object **ret)
{
	p->calls++;
	return p->cfg.get(p->cfg.userdata, path, ret);
}

int tl_peer_address(const char *ep, char *buf, unsigned len)
{
	const char *end;
	size_t n;

	if (!ep)
		return -EINVAL;
	if (ep[0] == '[') {
		end = strchr(ep, ']');
		if (!end || end[1] != ':')
			return -EINVAL;
		ep++;
	} else {
		end = strrchr(ep, ':');
		if (!end)
			return -EINVAL;
	}
	n = (size_t)(end - ep);
	if (n == 0 || n >= len)
		return -EINVAL;
	memcpy(buf, ep, n);
	buf[n] = '\0';
	return 0;
}

/* The address in its canonical text (inet_ntop's), so that "::ffff:10.0.0.1"
 * and "10.0.0.1", or two spellings of one IPv6 address, are one key.
 * false when it is not an address. */
static bool canonical(const char *in, char *out, size_t len, bool *loopback)
{
	unsigned char a[16];

	if (inet_pton(AF_INET, in, a) == 1) {
		*loopback = a[0] == 127;
		return inet_ntop(AF_INET, a, out, (socklen_t)len) != NULL;
	}
	if (inet_pton(AF_INET6, in, a) != 1)
		return false;
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const unsigned char one[16] = { [15] = 1 };

	if (memcmp(a, mapped, 12) == 0) {
		*loopback = a[12] == 127;
		return inet_ntop(AF_INET, a + 12, out, (socklen_t)len) != NULL;
	}
	*loopback = memcmp(a, one, 16) == 0;
	return inet_ntop(AF_INET6, a, out, (socklen_t)len) != NULL;
}

static int put_str(struct json_object *o, const char *k, const char *v)
{
	struct json_object *s = v ? json_object_new_string(v) : NULL;

	if (v && !s)
		return -ENOMEM;
	if (json_object_object_add(o, k, s) < 0) {
		json_object_put(s);
		return -ENOMEM;
	}
	return 0;
}

/* ---- nodes ---- */

static int load_nodes(struct tl_peers *p)
{
	struct json_object *list = NULL, *items;

	if (p->nodes_done)
		return 0;
	p->nodes_done = true;
	if (api_get(p, "/api/v1/nodes", &list) < 0)
		return 0; /* not allowed or not there: no Node is known */
	items = tl_json_array(list, "items");
	for (size_t i = 0; items && i < json_object_array_length(items); i++) {
		struct json_object *n = json_object_array_get_idx(items, i);
		struct json_object *addrs = tl_json_array(tl_json_object(n, "status"), "addresses");
		const char *name = tl_json_str(tl_json_object(n, "metadata"), "name");

		for (size_t k = 0; name && addrs && k < json_object_array_length(addrs); k++) {
			struct json_object *a = json_object_array_get_idx(addrs, k);
			const char *type = tl_json_str(a, "type"), *addr = tl_json_str(a, "address");
			char c[64];
			bool lo;

			if (!type || !addr ||
			    (strcmp(type, "InternalIP") != 0 && strcmp(type, "ExternalIP") != 0) ||
			    !canonical(addr, c, sizeof(c), &lo))
				continue;
			if (put_str(p->nodes, c, name) < 0) {
				json_object_put(list);
				return -ENOMEM;
			}
		}
	}
	json_object_put(list);
	return 0;
}

/* ---- Pods ---- */

/* The Pod's addresses: status.podIP and every status.podIPs[].ip. */
static bool pod_has_ip(struct json_object *pod, const char *ip)
{
	struct json_object *st = tl_json_object(pod, "status"), *ips = tl_json_array(st, "podIPs");
	char c[64];
	bool lo;

	if (tl_json_str(st, "podIP") && canonical(tl_json_str(st, "podIP"), c, sizeof(c), &lo) &&
	    strcmp(c, ip) == 0)
		return true;
	for (size_t i = 0; ips && i < json_object_array_length(ips); i++) {
		const char *s = tl_json_str(json_object_array_get_idx(ips, i), "ip");

		if (s && canonical(s, c, sizeof(c), &lo) && strcmp(c, ip) == 0)
			return true;
	}
	return false;
}

/* What is kept of a Pod: {namespace, name, created, ownerKind, ownerName}. */
static struct json_object *pod_summary(struct json_object *pod)
{
	struct json_object *md = tl_json_object(pod, "metadata"), *o = json_object_new_object();
	struct json_object *owners = tl_json_array(md, "ownerReferences");
	const char *okind = NULL, *oname = NULL;

	if (!o)
		return NULL;
	for (size_t i = 0; owners && i < json_object_array_length(owners); i++) {
		struct json_object *r = json_object_array_get_idx(owners, i);

		if (tl_json_bool(r, "controller", false) || !okind) {
			okind = tl_json_str(r, "kind");
			oname = tl_json_str(r, "name");
		}
	}
	if (put_str(o, "namespace", tl_json_str(md, "namespace")) < 0 ||
	    put_str(o, "name", tl_json_str(md, "name")) < 0 ||
	    put_str(o, "created", tl_json_str(md, "creationTimestamp")) < 0 ||
	    put_str(o, "ownerKind", okind) < 0 || put_str(o, "ownerName", oname) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* Adds the Pods of list that have the address ip (or, ip NULL, any wanted
 * address) to the candidates. Host-network Pods have their node's address:
 * that is the node's traffic. */
static int add_candidates(struct tl_peers *p, struct json_object *list, const char *ip,
			  struct json_object *wanted)
{
	struct json_object *items = tl_json_array(list, "items");

	for (size_t i = 0; items && i < json_object_array_length(items); i++) {
		struct json_object *pod = json_object_array_get_idx(items, i), *arr, *s;
		struct json_object *spec = tl_json_object(pod, "spec");
		const char *key = ip;
		char c[64];
		bool lo;

		if (tl_json_bool(spec, "hostNetwork", false))
			continue;
		if (!key) {
			const char *pip = tl_json_str(tl_json_object(pod, "status"), "podIP");

			if (!pip || !canonical(pip, c, sizeof(c), &lo) ||
			    !json_object_object_get_ex(wanted, c, NULL))
				continue;
			key = c;
		} else if (!pod_has_ip(pod, key)) {
			continue;
		}
		arr = tl_json_array(p->pods, key);
		if (!arr) {
			arr = json_object_new_array();
			if (!arr || json_object_object_add(p->pods, key, arr) < 0) {
				json_object_put(arr);
				return -ENOMEM;
			}
		}
		s = pod_summary(pod);
		if (!s || json_object_array_add(arr, s) < 0) {
			json_object_put(s);
			return -ENOMEM;
		}
	}
	return 0;
}

static int mark_asked(struct tl_peers *p, const char *ip, bool failed)
{
	struct json_object *v;

	if (json_object_object_get_ex(p->pods, ip, NULL))
		return 0;
	v = failed ? json_object_new_string("unknown") : json_object_new_array();
	if (!v || json_object_object_add(p->pods, ip, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static void url_escape(const char *in, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t j = 0;

	for (; *in && j + 4 < len; in++) {
		unsigned char ch = (unsigned char)*in;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			out[j++] = (char)ch;
		} else {
			out[j++] = '%';
			out[j++] = hex[ch >> 4];
			out[j++] = hex[ch & 15];
		}
	}
	out[j] = '\0';
}

/* One LIST per address, by the field selector on status.podIP. */
static int ask_one(struct tl_peers *p, const char *ip)
{
	char path[256], esc[128];
	struct json_object *list = NULL;
	int r;

	url_escape(ip, esc, sizeof(esc));
	snprintf(path, sizeof(path), "/api/v1/pods?fieldSelector=status.podIP%%3D%s", esc);
	if (api_get(p, path, &list) < 0)
		return mark_asked(p, ip, true);
	r = add_candidates(p, list, ip, NULL);
	json_object_put(list);
	return r < 0 ? r : mark_asked(p, ip, false);
}

/* One LIST of every Pod, in pages: for many addresses at once. */
static int ask_all(struct tl_peers *p, struct json_object *wanted)
{
	char path[1024], esc[768];
	const char *cont = NULL;
	struct json_object *list = NULL;
	bool failed = false;
	int r = 0;

	for (unsigned page = 0; page < PAGES_MAX; page++) {
		struct json_object *next = NULL;

		if (cont) {
			url_escape(cont, esc, sizeof(esc));
			snprintf(path, sizeof(path), "/api/v1/pods?limit=%d&continue=%s", PAGE, esc);
		} else {
			snprintf(path, sizeof(path), "/api/v1/pods?limit=%d", PAGE);
		}
		if (api_get(p, path, &next) < 0) {
			failed = true;
			break;
		}
		json_object_put(list);
		list = next;
		r = add_candidates(p, list, NULL, wanted);
		if (r < 0)
			break;
		cont = tl_json_str(tl_json_object(list, "metadata"), "continue");
		if (!cont || !cont[0])
			break;
	}
	json_object_put(list);
	if (r < 0)
		return r;
	json_object_object_foreach(wanted, ip, v)
	{
		(void)v;
		r = mark_asked(p, ip, failed);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The workload that owns a Pod: a ReplicaSet's own controller (a
 * Deployment) asked once per ReplicaSet; any other controller is the
 * workload itself. */
static struct json_object *workload(struct tl_peers *p, const char *ns, const char *okind,
				    const char *oname)
{
	struct json_object *w, *rs = NULL;
	char key[600], path[700];

	if (!okind || !oname)
		return NULL;
	if (strcmp(okind, "ReplicaSet") != 0 || !ns) {
		w = json_object_new_object();
		if (w && (put_str(w, "kind", okind) < 0 || put_str(w, "name", oname) < 0)) {
			json_object_put(w);
			return NULL;
		}
		return w;
	}
	snprintf(key, sizeof(key), "%s/%s", ns, oname);
	w = tl_json_get(p->rs, key);
	if (w)
		return json_object_get(w);
	w = json_object_new_object();
	if (!w)
		return NULL;
	if (put_str(w, "kind", "ReplicaSet") < 0 || put_str(w, "name", oname) < 0)
		goto fail;
	if (p->rs_asked < p->cfg.rs_max) {
		char e1[300], e2[300];

		p->rs_asked++;
		url_escape(ns, e1, sizeof(e1));
		url_escape(oname, e2, sizeof(e2));
		snprintf(path, sizeof(path), "/apis/apps/v1/namespaces/%s/replicasets/%s", e1, e2);
		if (api_get(p, path, &rs) == 0) {
			struct json_object *owners = tl_json_array(tl_json_object(rs, "metadata"), "ownerReferences");

			for (size_t i = 0; owners && i < json_object_array_length(owners); i++) {
				struct json_object *o = json_object_array_get_idx(owners, i);

				if (tl_json_bool(o, "controller", false) && tl_json_str(o, "kind") &&
				    tl_json_str(o, "name")) {
					if (put_str(w, "kind", tl_json_str(o, "kind")) < 0 ||
					    put_str(w, "name", tl_json_str(o, "name")) < 0)
						goto fail;
					break;
				}
			}
			json_object_put(rs);
			rs = NULL;
		}
	}
	if (json_object_object_add(p->rs, key, json_object_get(w)) < 0) {
		json_object_put(w);
		goto fail;
	}
	return w;
fail:
	json_object_put(rs);
	json_object_put(w);
	return NULL;
}

/* ---- one document ---- */

/* Every peer address of doc, canonical, with the time it was first seen:
 * wanted[address] = first time (ns). */
static int collect(struct json_object *doc, struct json_object *seen)
{
	struct json_object *events = tl_json_array(doc, "events");
	size_t n = events ? json_object_array_length(events) : 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i), *t;
		const char *peer = tl_json_str(ev, "peer");
		char a[64], c[64];
		int64_t ns = 0;
		bool lo;

		if (!peer || tl_peer_address(peer, a, sizeof(a)) < 0 || !canonical(a, c, sizeof(c), &lo))
			continue;
		if (tl_json_str(ev, "time"))
			(void)tl_time_parse(tl_json_str(ev, "time"), &ns);
		t = tl_json_get(seen, c);
		if (t) {
			if (ns && ns < json_object_get_int64(t))
				json_object_set_int64(t, ns);
			continue;
		}
		if (json_object_object_length(seen) >= TL_PEERS_ADDR_MAX)
			continue;
		t = json_object_new_int64(ns);
		if (!t || json_object_object_add(seen, c, t) < 0) {
			json_object_put(t);
			return -ENOMEM;
		}
	}
	return 0;
}

/* The entry of address ip for a document whose traffic from it started at
 * first_ns. */
static struct json_object *entry(struct tl_peers *p, const char *ip, int64_t first_ns,
				 const char *pod_ip, const char *resolved_at)
{
	struct json_object *e = json_object_new_object(), *c, *best = NULL, *w = NULL;
	const char *node;
	bool lo, after = false;
	char own[64];
	int64_t best_t = 0;

	if (!e)
		return NULL;
	(void)canonical(ip, own, sizeof(own), &lo);
	if (lo || (pod_ip && canonical(pod_ip, own, sizeof(own), &lo) && strcmp(own, ip) == 0)) {
		if (put_str(e, "kind", "self") < 0)
			goto fail;
		return e;
	}
	if ((node = tl_json_str(p->nodes, ip))) {
		if (put_str(e, "kind", "Node") < 0 || put_str(e, "name", node) < 0 ||
		    put_str(e, "resolvedAt", resolved_at) < 0)
			goto fail;
		return e;
	}
	c = tl_json_get(p->pods, ip);
	if (!c || !json_object_is_type(c, json_type_array)) {
		if (put_str(e, "kind", "unknown") < 0)
			goto fail;
		return e;
	}
	/* Of the Pods that have had the address, the newest created before
	 * the traffic; else (only later ones) the oldest of those, said. */
	for (size_t i = 0; i < json_object_array_length(c); i++) {
		struct json_object *s = json_object_array_get_idx(c, i);
		int64_t t = 0;
		bool before;

		(void)tl_time_parse(tl_json_str(s, "created") ? tl_json_str(s, "created") : "", &t);
		before = !first_ns || !t || t <= first_ns;
		if (!best || (before && (after || t > best_t)) || (!before && after && t < best_t)) {
			best = s;
			best_t = t;
			after = !before;
		}
	}
	if (!best) {
		if (put_str(e, "kind", "external") < 0 || put_str(e, "resolvedAt", resolved_at) < 0)
			goto fail;
		return e;
	}
	w = workload(p, tl_json_str(best, "namespace"), tl_json_str(best, "ownerKind"),
		     tl_json_str(best, "ownerName"));
	if (put_str(e, "kind", "Pod") < 0 ||
	    put_str(e, "namespace", tl_json_str(best, "namespace")) < 0 ||
	    put_str(e, "name", tl_json_str(best, "name")) < 0)
		goto fail;
	if (json_object_object_add(e, "workload", w) < 0) {
		json_object_put(w);
		goto fail;
	}
	if (json_object_object_add(e, "createdAfterTraffic", json_object_new_boolean(after)) < 0 ||
	    put_str(e, "resolvedAt", resolved_at) < 0)
		goto fail;
	return e;
fail:
	json_object_put(e);
	return NULL;
}

int tl_peers_annotate(struct tl_peers *p, struct json_object *doc)
{
	struct json_object *seen = NULL, *ask = NULL, *out = NULL;
	const char *pod_ip = tl_json_str(tl_json_object(doc, "pod"), "ip");
	char at[TL_TIME_STRLEN];
	int r, n = 0;

	if (!p || !tl_json_array(doc, "events"))
		return -EINVAL;
	tl_time_format(p->cfg.now_ns ? p->cfg.now_ns : tl_now_real_ns(), at);
	seen = json_object_new_object();
	ask = json_object_new_object();
	out = json_object_new_object();
	if (!seen || !ask || !out) {
		r = -ENOMEM;
		goto done;
	}
	r = collect(doc, seen);
	if (r < 0)
		goto done;
	/* Nodes first, once: a host-network Pod has its node's address. */
	if (json_object_object_length(seen) && (r = load_nodes(p)) < 0)
		goto done;
	json_object_object_foreach(seen, ip, t)
	{
		bool lo;
		char own[64];

		(void)t;
		(void)canonical(ip, own, sizeof(own), &lo);
		if (lo || tl_json_get(p->nodes, ip) || json_object_object_get_ex(p->pods, ip, NULL) ||
		    (pod_ip && canonical(pod_ip, own, sizeof(own), &lo) && strcmp(own, ip) == 0))
			continue;
		if (json_object_object_add(ask, ip, NULL) < 0) {
			r = -ENOMEM;
			goto done;
		}
	}
	if (json_object_object_length(ask) > (int)p->cfg.per_ip_max) {
		r = ask_all(p, ask);
		if (r < 0)
			goto done;
	} else {
		json_object_object_foreach(ask, ip2, v)
		{
			(void)v;
			r = ask_one(p, ip2);
			if (r < 0)
				goto done;
		}
	}
	{
		json_object_object_foreach(seen, ip3, t3)
		{
			struct json_object *e = entry(p, ip3, json_object_get_int64(t3), pod_ip, at);

			if (!e || json_object_object_add(out, ip3, e) < 0) {
				json_object_put(e);
				r = -ENOMEM;
				goto done;
			}
			n++;
		}
	}
	r = json_object_object_add(doc, "peers", out) < 0 ? -ENOMEM : n;
	if (r >= 0)
		out = NULL;
done:
	json_object_put(seen);
	json_object_put(ask);
	json_object_put(out);
	return r;
}
