// SPDX-License-Identifier: Apache-2.0
/* Who sent the Pod its requests, for people: each request's peer named as
 * the consumer findings name it (docs/findings.md: "namespace/name" of a
 * Pod, "node/NAME", else the address; the Pod itself is "self"), the
 * consumers of a document with their requests, failures and reused
 * keep-alive connections (explain's table, show's column, the picture's
 * and the trace's lanes), and the lanes they are drawn in: one per
 * consumer, per workload when there are many, per kind when there are
 * more. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"
#include "json-util.h"
#include "kube-peers.h"

/* The address of "ADDR:PORT" / "[ADDR]:PORT" as the findings key it:
 * inet_ntop's text, an IPv4-mapped IPv6 address as IPv4. */
static bool canonical(const char *endpoint, char *out, size_t len, bool *loopback)
{
	char a[64];
	unsigned char b[16];

	*loopback = false;
	if (!endpoint || tl_peer_address(endpoint, a, sizeof(a)) < 0)
		return false;
	if (inet_pton(AF_INET, a, b) == 1) {
		*loopback = b[0] == 127;
		return inet_ntop(AF_INET, b, out, (socklen_t)len) != NULL;
	}
	if (inet_pton(AF_INET6, a, b) != 1)
		return false;
	{
		static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};
		static const unsigned char one[16] = {[15] = 1};

		if (memcmp(b, mapped, 12) == 0) {
			*loopback = b[12] == 127;
			return inet_ntop(AF_INET, b + 12, out, (socklen_t)len) != NULL;
		}
		*loopback = memcmp(b, one, 16) == 0;
	}
	return inet_ntop(AF_INET6, b, out, (socklen_t)len) != NULL;
}

/* kubectl's short names of the workload kinds a Pod has */
static const char *short_kind(const char *kind)
{
	static const struct {
		const char *kind, *name;
	} names[] = {
	    {"Deployment", "deploy"}, {"StatefulSet", "sts"}, {"DaemonSet", "ds"},
	    {"ReplicaSet", "rs"},     {"Job", "job"},	  {"CronJob", "cj"},
	};

	for (size_t i = 0; kind && i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(names[i].kind, kind) == 0)
			return names[i].name;
	return kind;
}

int peer_who(struct json_object *doc, const char *peer, struct peer_who *w)
{
	struct json_object *e, *wl;
	const char *kind, *pod_ip = json_str(json_path(doc, "pod"), "ip");
	char own[64], tmp[80];
	bool lo, own_lo;

	memset(w, 0, sizeof(*w));
	if (!canonical(peer, w->addr, sizeof(w->addr), &lo))
		return -EINVAL;
	snprintf(tmp, sizeof(tmp), pod_ip && strchr(pod_ip, ':') ? "[%s]:0" : "%s:0",
		 pod_ip ? pod_ip : "");
	/* an address has dots: not a json_path() */
	e = tl_json_object(json_path(doc, "peers"), w->addr);
	kind = json_str(e, "kind");
	if (lo || (pod_ip && canonical(tmp, own, sizeof(own), &own_lo) && !strcmp(own, w->addr)) ||
	    (kind && strcmp(kind, "self") == 0)) {
		w->self = true;
		w->kind = "self";
		snprintf(w->name, sizeof(w->name), "self");
		return 0;
	}
	w->kind = kind;
	w->created_after = tl_json_bool(e, "createdAfterTraffic", false);
	if (kind && strcmp(kind, "Pod") == 0 && json_str(e, "name")) {
		snprintf(w->name, sizeof(w->name), "%s/%s",
			 json_str(e, "namespace") ? json_str(e, "namespace") : "?",
			 json_str(e, "name"));
		wl = tl_json_object(e, "workload");
		if (json_str(wl, "kind") && json_str(wl, "name"))
			snprintf(w->workload, sizeof(w->workload), "%s/%s",
				 short_kind(json_str(wl, "kind")), json_str(wl, "name"));
	} else if (kind && strcmp(kind, "Node") == 0 && json_str(e, "name")) {
		snprintf(w->name, sizeof(w->name), "node/%s", json_str(e, "name"));
	} else {
		snprintf(w->name, sizeof(w->name), "%s", w->addr);
	}
	return 0;
}

/* The consumer named name, made on first sight; -ENOMEM. */
static int consumer_at(struct consumers *cs, const struct peer_who *w)
{
	struct json_object *idx;
	struct consumer *c;

	if (json_object_object_get_ex(cs->index, w->name, &idx))
		return json_object_get_int(idx);
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 16;
		struct consumer *nc = realloc(cs->c, cap * sizeof(*nc));

		if (!nc)
			return -ENOMEM;
		cs->c = nc;
		cs->cap = cap;
	}
	c = &cs->c[cs->n];
	memset(c, 0, sizeof(*c));
	c->who = *w;
	c->lane = -1;
	c->rank = -1;
	if (json_object_object_add(cs->index, w->name, json_object_new_int((int)cs->n)) < 0)
		return -ENOMEM;
	return (int)cs->n++;
}

static int64_t drain_cutoff(const struct tl_model *m)
{
	int64_t sigterm = 0;

	/* keepalive_across_drain's: the first SIGTERM, else the removal */
	for (size_t i = 0; i < m->n_ctr; i++)
		if (m->ctr[i].sigterm_ns && (!sigterm || m->ctr[i].sigterm_ns < sigterm))
			sigterm = m->ctr[i].sigterm_ns;
	return sigterm ? sigterm : m->removed_ns;
}

int consumers_build(const struct tl_model *m, struct json_object *findings, struct consumers *cs)
{
	struct json_object *seen = NULL, *reused = NULL, *evs = json_path(m->doc, "events");
	struct json_object *by_peer = NULL;
	int r = -ENOMEM;

	memset(cs, 0, sizeof(*cs));
	cs->index = json_object_new_object();
	cs->req = calloc(m->n_req ? m->n_req : 1, sizeof(*cs->req));
	seen = json_object_new_object();
	reused = json_object_new_object();
	by_peer = json_object_new_object();
	if (!cs->index || !cs->req || !seen || !reused || !by_peer)
		goto out;
	cs->cutoff_ns = drain_cutoff(m);
	for (size_t i = 0; i < m->n_req; i++) {
		const struct tl_req *q = &m->reqs[i];
		struct json_object *idx;
		struct peer_who w;
		struct consumer *c;
		int k;

		cs->req[i] = -1;
		if (!q->peer)
			continue;
		cs->any_peer = true;
		if (!q->inbound)
			continue;
		/* one address parse per distinct endpoint, not per request */
		if (json_object_object_get_ex(by_peer, q->peer, &idx)) {
			k = json_object_get_int(idx);
		} else {
			k = peer_who(m->doc, q->peer, &w) < 0 || w.self ? -1 : consumer_at(cs, &w);
			if (k < -1) {
				r = k;
				goto out;
			}
			if (json_object_object_add(by_peer, q->peer, json_object_new_int(k)) < 0)
				goto out;
		}
		if (k < 0)
			continue;
		cs->req[i] = k;
		c = &cs->c[k];
		/* a keep-alive connection from before the drain, used after it;
		 * before the duplicates below: of a request in the proxy's log
		 * and on its socket, only the socket's record has the connection */
		if (cs->cutoff_ns && q->conn && q->start_ns >= cs->cutoff_ns &&
		    (!q->conn_start_ns || q->conn_start_ns < cs->cutoff_ns)) {
			char key[160];

			snprintf(key, sizeof(key), "%s#%lld", q->peer, (long long)q->conn);
			if (!json_object_object_get_ex(reused, key, NULL)) {
				if (json_object_object_add(reused, key, NULL) < 0)
					goto out;
				c->reused++;
			}
		}
		/* a request seen twice (the proxy's log and its socket) once,
		 * failed when either record says so */
		if (q->id) {
			char key[600];

			snprintf(key, sizeof(key), "%d %s", k, q->id);
			if (json_object_object_get_ex(seen, key, &idx)) {
				if (q->failed && !json_object_get_boolean(idx)) {
					c->failed++;
					json_object_set_boolean(idx, 1);
				}
				continue;
			}
			if (json_object_object_add(seen, key, json_object_new_boolean(q->failed)) < 0)
				goto out;
		}
		c->requests++;
		c->failed += q->failed;
		if (!c->first_ns || q->start_ns < c->first_ns)
			c->first_ns = q->start_ns;
		if (q->start_ns > c->last_ns)
			c->last_ns = q->start_ns;
	}
	for (size_t i = 0; evs && i < json_object_array_length(evs); i++) {
		struct json_object *ev = json_object_array_get_idx(evs, i);
		const char *ty = json_str(ev, "type");
		struct peer_who w;
		int64_t count = 1;
		int k;

		if (!ty || strcmp(ty, "tcp.accepted") != 0 || !json_str(ev, "peer"))
			continue;
		cs->any_peer = true;
		if (peer_who(m->doc, json_str(ev, "peer"), &w) < 0 || w.self)
			continue;
		k = consumer_at(cs, &w);
		if (k < 0) {
			r = k;
			goto out;
		}
		tl_json_int(ev, "count", &count);
		cs->c[k].connections += count > 0 ? (size_t)count : 1;
	}
	/* what traffic_after_endpoint_removed says of each */
	for (size_t i = 0; findings && i < json_object_array_length(findings); i++) {
		struct json_object *f = json_object_array_get_idx(findings, i), *list, *idx;

		if (!json_str(f, "rule") || strcmp(json_str(f, "rule"), "traffic_after_endpoint_removed"))
			continue;
		cs->finding = f;
		list = json_path(f, "consumers");
		for (size_t k = 0; list && k < json_object_array_length(list); k++) {
			struct json_object *o = json_object_array_get_idx(list, k);
			const char *name = json_str(o, "consumer");

			if (name && json_object_object_get_ex(cs->index, name, &idx)) {
				cs->c[json_object_get_int(idx)].entry = o;
				cs->c[json_object_get_int(idx)].rank = (int)k;
			}
		}
	}
	r = 0;
out:
	json_object_put(seen);
	json_object_put(reused);
	json_object_put(by_peer);
	if (r < 0)
		consumers_done(cs);
	return r;
}

void consumers_done(struct consumers *cs)
{
	free(cs->c);
	free(cs->req);
	free(cs->lane_name);
	json_object_put(cs->index);
	memset(cs, 0, sizeof(*cs));
}

/* ---- lanes ---- */

/* The slowest first, as traffic_after_endpoint_removed lists them; the
 * others in the order they first sent. */
static int cmp_first(const void *a, const void *b, void *ud)
{
	const struct consumers *cs = ud;
	const struct consumer *x = &cs->c[*(const size_t *)a], *y = &cs->c[*(const size_t *)b];

	if ((x->rank >= 0) != (y->rank >= 0))
		return x->rank >= 0 ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->first_ns != y->first_ns)
		return x->first_ns < y->first_ns ? -1 : 1;
	return strcmp(x->who.name, y->who.name);
}

/* The lane a consumer goes in at a given grouping: 0 by consumer, 1 by
 * workload, 2 by kind. */
static void group_name(const struct consumer *c, int by, char *buf, size_t len)
{
	const char *kind = c->who.kind;

	if (by == 0 || (by == 1 && !c->who.workload[0] && kind && strcmp(kind, "Pod") == 0))
		snprintf(buf, len, "%s", c->who.name);
	else if (by == 1 && c->who.workload[0]) {
		size_t ns = strcspn(c->who.name, "/");

		/* a namespace is at most 63 characters */
		snprintf(buf, len, "%.*s/%.230s", (int)(ns < 63 ? ns : 63), c->who.name,
			 c->who.workload);
	}
	else if (kind && strcmp(kind, "Pod") == 0)
		snprintf(buf, len, "Pods");
	else if (kind && strcmp(kind, "Node") == 0)
		snprintf(buf, len, "Nodes");
	else if (kind && strcmp(kind, "external") == 0)
		snprintf(buf, len, "external");
	else
		snprintf(buf, len, "addresses");
}

int consumers_lanes(struct consumers *cs, size_t max)
{
	size_t *order;
	int by;

	if (!cs->n)
		return 0;
	order = calloc(cs->n, sizeof(*order));
	cs->lane_name = calloc(cs->n, sizeof(*cs->lane_name));
	if (!order || !cs->lane_name) {
		free(order);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cs->n; i++)
		order[i] = i;
	qsort_r(order, cs->n, sizeof(*order), cmp_first, cs);
	for (by = 0; by < 3; by++) {
		struct json_object *members = json_object_new_object();

		if (!members) {
			free(order);
			return -ENOMEM;
		}
		/* a group of one keeps its consumer's own name */
		for (size_t i = 0; i < cs->n; i++) {
			char name[sizeof(cs->lane_name[0])];
			struct json_object *k;

			group_name(&cs->c[i], by, name, sizeof(name));
			if (json_object_object_get_ex(members, name, &k))
				json_object_int_inc(k, 1);
			else
				json_object_object_add(members, name, json_object_new_int(1));
		}
		cs->n_lanes = 0;
		for (size_t i = 0; i < cs->n; i++) {
			struct consumer *c = &cs->c[order[i]];
			char name[sizeof(cs->lane_name[0])];
			struct json_object *k;
			size_t l;

			group_name(c, by, name, sizeof(name));
			if (json_object_object_get_ex(members, name, &k) && json_object_get_int(k) == 1)
				snprintf(name, sizeof(name), "%s", c->who.name);
			for (l = 0; l < cs->n_lanes; l++)
				if (strcmp(cs->lane_name[l], name) == 0)
					break;
			if (l == cs->n_lanes)
				snprintf(cs->lane_name[cs->n_lanes++], sizeof(cs->lane_name[0]), "%s",
					 name);
			c->lane = (int)l;
		}
		json_object_put(members);
		if (cs->n_lanes <= max)
			break;
	}
	cs->lanes_by = by > 2 ? 2 : by;
	/* without a workload among them, the lanes of level 1 are kinds (and
	 * consumers alone in theirs) */
	if (cs->lanes_by == 1) {
		bool any = false;

		for (size_t i = 0; i < cs->n; i++)
			any |= cs->c[i].who.workload[0] != 0;
		if (!any)
			cs->lanes_by = 2;
	}
	free(order);
	return (int)cs->n_lanes;
}

const char *consumers_lane_sub(const struct consumers *cs, size_t lane, char *buf, size_t len)
{
	size_t members = 0;
	const struct consumer *one = NULL;

	for (size_t i = 0; i < cs->n; i++)
		if (cs->c[i].lane == (int)lane) {
			members++;
			one = &cs->c[i];
		}
	if (members == 1 && one->who.workload[0])
		snprintf(buf, len, "%s", one->who.workload);
	else if (members == 1)
		snprintf(buf, len, "%s",
			 !one->who.kind			       ? "consumer"
			 : strcmp(one->who.kind, "Node") == 0 ? "Node: SNAT, NodePort"
			 : strcmp(one->who.kind, "Pod") == 0  ? "Pod"
							      : one->who.kind);
	else
		snprintf(buf, len, "%zu consumers", members);
	return buf;
}

void cut_middle(const struct cli *cli, const char *s, size_t cols, char *buf, size_t len)
{
	size_t n = text_cols(s), head, tail;
	const char *ell = glyph_ellipsis(cli), *p = s, *t;

	if (n <= cols || cols < 3) {
		snprintf(buf, len, "%s", s);
		return;
	}
	/* the start (a namespace, a workload) and the end (a Pod's hash) */
	head = (cols - text_cols(ell)) / 2;
	tail = cols - text_cols(ell) - head;
	/* p stops after head code points */
	for (size_t k = 0; *p;) {
		if (((unsigned char)*p & 0xc0) != 0x80) {
			if (k == head)
				break;
			k++;
		}
		p++;
	}
	t = s + strlen(s);
	for (size_t k = 0; tail && t > s;) {
		t--;
		if (((unsigned char)*t & 0xc0) != 0x80 && ++k == tail)
			break;
	}
	snprintf(buf, len, "%.*s%s%s", (int)(p - s), s, ell, t);
}

void cut_end(const struct cli *cli, const char *s, size_t cols, char *buf, size_t len)
{
	const char *ell = glyph_ellipsis(cli), *p = s;
	size_t keep;

	if (text_cols(s) <= cols || cols <= text_cols(ell)) {
		snprintf(buf, len, "%s", s);
		return;
	}
	keep = cols - text_cols(ell);
	for (size_t k = 0; *p; p++)
		if (((unsigned char)*p & 0xc0) != 0x80 && k++ == keep)
			break;
	snprintf(buf, len, "%.*s%s", (int)(p - s), s, ell);
}
