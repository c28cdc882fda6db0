// SPDX-License-Identifier: Apache-2.0
/* Who was still sending: the consumers of a terminating Pod (the peers of
 * its inbound requests and accepted connections, named by the document's
 * "peers" when kubectl-termline resolved them, else by address), how long
 * after the endpoint's removal each kept sending, what failed, and the
 * keep-alive connections that outlived the drain. docs/findings.md has
 * the formula behind each number. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "clock.h"
#include "findings-consumers.h"
#include "json-util.h"

/* Failed request IDs listed per consumer; the count is in "failed". */
#define IDS_PER_CONSUMER 200
/* Connections listed by keepalive_across_drain; the count is in numbers. */
#define CONNS_LISTED 50

struct cons {
	char key[300]; /* "ns/name", "node/NAME", or the address */
	char addr[64]; /* the first address seen */
	const char *kind; /* "Pod", "Node", "external", "unknown"; NULL: not resolved */
	struct json_object *entry; /* the document's peers entry, borrowed */
	size_t requests, failed, requests_rm, failed_rm;
	int64_t first_nr, last_nr, first_rm, last_rm; /* request starts */
	int64_t cfirst_nr, clast_nr, cfirst_rm, clast_rm; /* accepted connections */
	size_t connections;
	struct json_object *ids;  /* failed request IDs (distinct), owned */
	struct json_object *seen; /* request IDs counted (distinct), owned */
};

struct cset {
	struct cons *c;
	size_t n, cap;
	struct json_object *index; /* key -> int index */
	/* "ADDR:PORT" as the events write it -> int index, -1: the Pod itself
	 * (one address parse per distinct endpoint, not per request) */
	struct json_object *by_peer;
	char own[64];   /* the Pod's own address, canonical ("" unknown) */
	int64_t nr_ns;  /* the endpoint went not-ready (0: not seen) */
	int64_t rm_ns;  /* removed from every slice (0: not seen) */
	bool any_peer;  /* the document has peers at all */
};

static double secs(int64_t a, int64_t b)
{
	return (double)(a - b) / 1e9;
}

static int put(struct json_object *o, const char *k, struct json_object *v)
{
	if (!v && k) {
		/* a JSON null */
		return json_object_object_add(o, k, NULL) < 0 ? -ENOMEM : 0;
	}
	if (!v || json_object_object_add(o, k, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static struct json_object *num3(double v)
{
	char buf[48];

	if (!(fabs(v) < 1e12))
		v = 0;
	snprintf(buf, sizeof(buf), "%.3f", v);
	if (strcmp(buf, "-0.000") == 0)
		strcpy(buf, "0.000");
	return json_object_new_double_s(v, buf);
}

/* Seconds from the reference, or null when t is 0. */
static int put_rel(const struct tl_model *m, struct json_object *o, const char *k, int64_t t)
{
	return put(o, k, t ? num3(secs(t, m->ref_ns)) : NULL);
}

/* The address of "ADDR:PORT" / "[ADDR]:PORT", canonical (inet_ntop's
 * text; an IPv4-mapped IPv6 address as IPv4). false when it is none. */
static bool peer_addr(const char *ep, char *out, size_t len, bool *loopback)
{
	char buf[64];
	const char *end;
	unsigned char a[16];
	size_t n;

	if (!ep)
		return false;
	if (ep[0] == '[') {
		end = strchr(ep, ']');
		ep++;
	} else {
		end = strrchr(ep, ':');
	}
	if (!end || end <= ep || (size_t)(end - ep) >= sizeof(buf))
		return false;
	n = (size_t)(end - ep);
	memcpy(buf, ep, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, a) == 1) {
		*loopback = a[0] == 127;
		return inet_ntop(AF_INET, a, out, (socklen_t)len) != NULL;
	}
	if (inet_pton(AF_INET6, buf, a) != 1)
		return false;
	{
		static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		static const unsigned char one[16] = { [15] = 1 };

		if (memcmp(a, mapped, 12) == 0) {
			*loopback = a[12] == 127;
			return inet_ntop(AF_INET, a + 12, out, (socklen_t)len) != NULL;
		}
		*loopback = memcmp(a, one, 16) == 0;
	}
	return inet_ntop(AF_INET6, a, out, (socklen_t)len) != NULL;
}

static void cset_free(struct cset *s)
{
	for (size_t i = 0; i < s->n; i++) {
		json_object_put(s->c[i].ids);
		json_object_put(s->c[i].seen);
	}
	free(s->c);
	json_object_put(s->index);
	json_object_put(s->by_peer);
	memset(s, 0, sizeof(*s));
}

/* The consumer an endpoint belongs to, made on first sight; NULL for the
 * Pod itself (loopback, its own address, a resolved "self") and for what
 * is not an address. *err set on -ENOMEM. */
static struct cons *consumer_of(const struct tl_model *m, struct cset *s, const char *peer, int *err)
{
	struct json_object *peers = tl_json_object(m->doc, "peers"), *e, *idx;
	char addr[64], key[300];
	const char *kind;
	struct cons *c;
	bool lo;

	if (!peer_addr(peer, addr, sizeof(addr), &lo) || lo || strcmp(s->own, addr) == 0)
		return NULL;
	e = tl_json_object(peers, addr);
	kind = tl_json_str(e, "kind");
	if (kind && strcmp(kind, "self") == 0)
		return NULL;
	if (kind && strcmp(kind, "Pod") == 0 && tl_json_str(e, "name"))
		snprintf(key, sizeof(key), "%s/%s",
			 tl_json_str(e, "namespace") ? tl_json_str(e, "namespace") : "?",
			 tl_json_str(e, "name"));
	else if (kind && strcmp(kind, "Node") == 0 && tl_json_str(e, "name"))
		snprintf(key, sizeof(key), "node/%s", tl_json_str(e, "name"));
	else
		snprintf(key, sizeof(key), "%s", addr);
	if (json_object_object_get_ex(s->index, key, &idx))
		return &s->c[json_object_get_int(idx)];
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct cons *n = realloc(s->c, cap * sizeof(*n));

		if (!n) {
			*err = -ENOMEM;
			return NULL;
		}
		s->c = n;
		s->cap = cap;
	}
	c = &s->c[s->n];
	memset(c, 0, sizeof(*c));
	snprintf(c->key, sizeof(c->key), "%s", key);
	snprintf(c->addr, sizeof(c->addr), "%s", addr);
	c->kind = kind;
	c->entry = e;
	c->ids = json_object_new_array();
	c->seen = json_object_new_object();
	if (!c->ids || !c->seen || json_object_object_add(s->index, key, json_object_new_int((int)s->n)) < 0) {
		json_object_put(c->ids);
		json_object_put(c->seen);
		*err = -ENOMEM;
		return NULL;
	}
	s->n++;
	return c;
}

static struct cons *consumer(const struct tl_model *m, struct cset *s, const char *peer, int *err)
{
	struct json_object *idx;
	struct cons *c;

	if (!peer)
		return NULL;
	if (json_object_object_get_ex(s->by_peer, peer, &idx)) {
		int i = json_object_get_int(idx);

		return i < 0 ? NULL : &s->c[i];
	}
	c = consumer_of(m, s, peer, err);
	if (*err)
		return NULL;
	if (json_object_object_add(s->by_peer, peer, json_object_new_int(c ? (int)(c - s->c) : -1)) < 0) {
		*err = -ENOMEM;
		return NULL;
	}
	return c;
}

static void span(int64_t *first, int64_t *last, int64_t t)
{
	if (!*first || t < *first)
		*first = t;
	if (t > *last)
		*last = t;
}

/* Every consumer's traffic from the reference on. */
static int cset_build(const struct tl_model *m, struct cset *s)
{
	struct json_object *events = tl_json_array(m->doc, "events");
	int err = 0;

	memset(s, 0, sizeof(*s));
	s->index = json_object_new_object();
	s->by_peer = json_object_new_object();
	if (!s->index || !s->by_peer)
		return -ENOMEM;
	{
		const char *pod_ip = tl_json_str(tl_json_object(m->doc, "pod"), "ip");
		char tmp[80];
		bool lo;

		snprintf(tmp, sizeof(tmp), pod_ip && strchr(pod_ip, ':') ? "[%s]:0" : "%s:0",
			 pod_ip ? pod_ip : "");
		if (!pod_ip || !peer_addr(tmp, s->own, sizeof(s->own), &lo))
			s->own[0] = '\0';
	}
	s->nr_ns = m->ready_false_ns;
	s->rm_ns = m->removed_ns;
	for (size_t i = 0; i < m->n_req; i++) {
		const struct tl_req *r = &m->reqs[i];
		struct cons *c;
		bool dup = false;

		if (r->peer)
			s->any_peer = true;
		if (!r->inbound || !r->peer || r->start_ns < m->ref_ns)
			continue;
		c = consumer(m, s, r->peer, &err);
		if (err)
			return err;
		if (!c)
			continue;
		/* one request seen twice (the proxy's log and its socket) */
		if (r->id) {
			if (json_object_object_get_ex(c->seen, r->id, NULL))
				dup = true;
			else if (json_object_object_add(c->seen, r->id, NULL) < 0)
				return -ENOMEM;
		}
		if (s->nr_ns && r->start_ns >= s->nr_ns)
			span(&c->first_nr, &c->last_nr, r->start_ns);
		if (s->rm_ns && r->start_ns >= s->rm_ns)
			span(&c->first_rm, &c->last_rm, r->start_ns);
		if (dup) {
			/* the other record of it may say it failed */
			if (r->failed && r->id) {
				bool listed = false;

				for (size_t k = 0; k < json_object_array_length(c->ids); k++)
					if (strcmp(json_object_get_string(json_object_array_get_idx(c->ids, k)),
						   r->id) == 0)
						listed = true;
				if (!listed) {
					c->failed++;
					if (s->rm_ns && r->start_ns >= s->rm_ns)
						c->failed_rm++;
					if (json_object_array_length(c->ids) < IDS_PER_CONSUMER &&
					    json_object_array_add(c->ids, json_object_new_string(r->id)) < 0)
						return -ENOMEM;
				}
			}
			continue;
		}
		c->requests++;
		if (s->rm_ns && r->start_ns >= s->rm_ns)
			c->requests_rm++;
		if (r->failed) {
			c->failed++;
			if (s->rm_ns && r->start_ns >= s->rm_ns)
				c->failed_rm++;
			if (r->id && json_object_array_length(c->ids) < IDS_PER_CONSUMER &&
			    json_object_array_add(c->ids, json_object_new_string(r->id)) < 0)
				return -ENOMEM;
		}
	}
	for (size_t i = 0; events && i < json_object_array_length(events); i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);
		const char *type = tl_json_str(ev, "type"), *lt = tl_json_str(ev, "last");
		int64_t t = tl_event_time(ev), last = t, count = 1;
		struct cons *c;

		if (!type || strcmp(type, "tcp.accepted") != 0 || !t)
			continue;
		s->any_peer = true;
		if (lt)
			(void)tl_time_parse(lt, &last);
		if (last < m->ref_ns)
			continue;
		if (t < m->ref_ns)
			t = m->ref_ns;
		c = consumer(m, s, tl_json_str(ev, "peer"), &err);
		if (err)
			return err;
		if (!c)
			continue;
		tl_json_int(ev, "count", &count);
		c->connections += count > 0 ? (size_t)count : 1;
		/* a folded group that spans the moment counts from it */
		if (s->nr_ns && last >= s->nr_ns) {
			span(&c->cfirst_nr, &c->clast_nr, t > s->nr_ns ? t : s->nr_ns);
			span(&c->cfirst_nr, &c->clast_nr, last);
		}
		if (s->rm_ns && last >= s->rm_ns) {
			span(&c->cfirst_rm, &c->clast_rm, t > s->rm_ns ? t : s->rm_ns);
			span(&c->cfirst_rm, &c->clast_rm, last);
		}
	}
	return 0;
}

/* The consumer's last request or connection after the removal (0: none). */
static int64_t last_after_removal(const struct cons *c)
{
	return c->last_rm > c->clast_rm ? c->last_rm : c->clast_rm;
}

/* Its last traffic from the reference on, for the lag of a consumer that
 * stopped before the removal. */
static int64_t last_any(const struct cset *s, const struct cons *c)
{
	int64_t t = last_after_removal(c);

	(void)s;
	if (!t)
		t = c->last_nr > c->clast_nr ? c->last_nr : c->clast_nr;
	return t;
}

static const char *cons_name(const struct cons *c)
{
	return c->key;
}

int tl_consumers_slowest(const struct tl_model *m, int64_t *ret_ns, char *who, size_t len)
{
	struct cset s;
	const struct cons *best = NULL;
	int r = cset_build(m, &s);

	if (r < 0) {
		cset_free(&s);
		return r;
	}
	for (size_t i = 0; i < s.n; i++)
		if (last_after_removal(&s.c[i]) &&
		    (!best || last_after_removal(&s.c[i]) > last_after_removal(best)))
			best = &s.c[i];
	if (best) {
		*ret_ns = last_after_removal(best);
		snprintf(who, len, "%s", cons_name(best));
	}
	cset_free(&s);
	return best ? 1 : 0;
}

static int cons_json(const struct tl_model *m, const struct cset *s, const struct cons *c,
		     struct json_object **ret)
{
	struct json_object *o = json_object_new_object(), *w;
	int64_t last = last_any(s, c);
	int r = 0;

	if (!o)
		return -ENOMEM;
	w = tl_json_get(c->entry, "workload");
	r = r ?: put(o, "consumer", json_object_new_string(c->key));
	r = r ?: put(o, "kind", c->kind ? json_object_new_string(c->kind) : NULL);
	r = r ?: put(o, "namespace",
		     tl_json_str(c->entry, "namespace")
			 ? json_object_new_string(tl_json_str(c->entry, "namespace"))
			 : NULL);
	r = r ?: put(o, "name",
		     tl_json_str(c->entry, "name") ? json_object_new_string(tl_json_str(c->entry, "name"))
						   : NULL);
	r = r ?: put(o, "workload", w ? json_object_get(w) : NULL);
	r = r ?: put(o, "address", json_object_new_string(c->addr));
	if (r == 0 && c->entry) {
		r = put(o, "resolvedAt",
			tl_json_str(c->entry, "resolvedAt")
			    ? json_object_new_string(tl_json_str(c->entry, "resolvedAt"))
			    : NULL);
		r = r ?: put(o, "createdAfterTraffic",
			     json_object_new_boolean(tl_json_bool(c->entry, "createdAfterTraffic", false)));
	}
	r = r ?: put(o, "requests", json_object_new_int64((int64_t)c->requests));
	r = r ?: put(o, "failed", json_object_new_int64((int64_t)c->failed));
	r = r ?: put(o, "requestsAfterRemoval", json_object_new_int64((int64_t)c->requests_rm));
	r = r ?: put(o, "failedAfterRemoval", json_object_new_int64((int64_t)c->failed_rm));
	r = r ?: put(o, "failedRequestIds", json_object_get(c->ids));
	r = r ?: put(o, "connectionsAccepted", json_object_new_int64((int64_t)c->connections));
	r = r ?: put_rel(m, o, "firstAfterNotReadyS", c->first_nr);
	r = r ?: put_rel(m, o, "lastAfterNotReadyS", c->last_nr);
	r = r ?: put_rel(m, o, "firstAfterRemovalS", c->first_rm);
	r = r ?: put_rel(m, o, "lastAfterRemovalS", c->last_rm);
	r = r ?: put_rel(m, o, "firstConnectionAfterNotReadyS", c->cfirst_nr);
	r = r ?: put_rel(m, o, "lastConnectionAfterNotReadyS", c->clast_nr);
	r = r ?: put_rel(m, o, "firstConnectionAfterRemovalS", c->cfirst_rm);
	r = r ?: put_rel(m, o, "lastConnectionAfterRemovalS", c->clast_rm);
	r = r ?: put(o, "lagSeconds", s->rm_ns && last ? num3(secs(last, s->rm_ns)) : NULL);
	if (r < 0) {
		json_object_put(o);
		return r;
	}
	*ret = o;
	return 0;
}

static int cmp_lag(const void *a, const void *b)
{
	const struct cons *x = *(const struct cons *const *)a, *y = *(const struct cons *const *)b;
	int64_t lx = last_after_removal(x), ly = last_after_removal(y);

	if (lx != ly)
		return lx > ly ? -1 : 1;
	return strcmp(x->key, y->key);
}

static struct json_object *finding_new(const char *rule, const char *severity)
{
	struct json_object *f = json_object_new_object();

	if (!f)
		return NULL;
	if (put(f, "rule", json_object_new_string(rule)) < 0 ||
	    put(f, "severity", json_object_new_string(severity)) < 0 ||
	    put(f, "requestIds", json_object_new_array()) < 0 ||
	    put(f, "numbers", json_object_new_object()) < 0) {
		json_object_put(f);
		return NULL;
	}
	return f;
}

static int reco(struct json_object *f, const char *setting, struct json_object *value,
		const char *formula)
{
	struct json_object *o = json_object_new_object();

	if (!o || put(o, "setting", json_object_new_string(setting)) < 0 || put(o, "value", value) < 0 ||
	    put(o, "formula", json_object_new_string(formula)) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return put(f, "recommendation", o);
}

/* The document is incomplete: every finding says so. */
static int mark_incomplete(const struct tl_model *m, struct json_object *f, char *summary, size_t len)
{
	size_t n = strlen(summary);

	if (m->complete)
		return 0;
	snprintf(summary + n, len - n, " (the timeline is incomplete: %s)", m->incomplete_why);
	return put(f, "incomplete", json_object_new_boolean(1));
}

int tl_rule_consumers(const struct tl_model *m, struct json_object *out)
{
	struct cset s;
	struct json_object *f = NULL, *list = NULL, *nums, *ids;
	const struct cons **order = NULL;
	char summary[1024], formula[512];
	size_t n_after = 0, failed = 0, requests_rm = 0;
	int r;

	if (!m->removed_ns)
		return 0;
	r = cset_build(m, &s);
	if (r < 0)
		goto done;
	order = calloc(s.n ? s.n : 1, sizeof(*order));
	if (!order) {
		r = -ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < s.n; i++) {
		order[i] = &s.c[i];
		failed += s.c[i].failed;
		requests_rm += s.c[i].requests_rm;
		if (last_after_removal(&s.c[i]))
			n_after++;
	}
	if (!n_after) {
		r = 0;
		goto done;
	}
	qsort(order, s.n, sizeof(*order), cmp_lag);
	f = finding_new("traffic_after_endpoint_removed", failed ? "error" : "warning");
	list = json_object_new_array();
	if (!f || !list) {
		r = -ENOMEM;
		goto done;
	}
	json_object_object_get_ex(f, "numbers", &nums);
	json_object_object_get_ex(f, "requestIds", &ids);
	for (size_t i = 0; i < s.n; i++) {
		struct json_object *o;

		r = cons_json(m, &s, order[i], &o);
		if (r < 0)
			goto done;
		if (json_object_array_add(list, o) < 0) {
			json_object_put(o);
			r = -ENOMEM;
			goto done;
		}
		for (size_t k = 0; k < json_object_array_length(order[i]->ids); k++)
			if (json_object_array_length(ids) < TL_FINDINGS_MAX_IDS &&
			    json_object_array_add(ids, json_object_get(json_object_array_get_idx(
							   order[i]->ids, k))) < 0) {
				r = -ENOMEM;
				goto done;
			}
	}
	{
		const struct cons *w = order[0];
		double lag = secs(last_after_removal(w), s.rm_ns);

		snprintf(summary, sizeof(summary),
			 "%s kept sending %.1f s after the endpoint was removed: %zu request%s, %zu "
			 "failed",
			 w->key, lag, w->requests_rm, w->requests_rm == 1 ? "" : "s", w->failed_rm);
		if (n_after > 1) {
			size_t l = strlen(summary);

			snprintf(summary + l, sizeof(summary) - l,
				 "; %zu consumers sent after the removal, %zu requests in all, %zu failed "
				 "since the deletion",
				 n_after, requests_rm, failed);
		}
		if (w->entry && tl_json_bool(w->entry, "createdAfterTraffic", false)) {
			size_t l = strlen(summary);

			snprintf(summary + l, sizeof(summary) - l,
				 " (%s was created after this traffic: its address was another Pod's "
				 "then)",
				 w->key);
		}
		r = mark_incomplete(m, f, summary, sizeof(summary));
		r = r ?: put(f, "summary", json_object_new_string(summary));
		r = r ?: put(nums, "consumers", json_object_new_int64((int64_t)s.n));
		r = r ?: put(nums, "consumersAfterRemoval", json_object_new_int64((int64_t)n_after));
		r = r ?: put_rel(m, nums, "readyFalseS", m->ready_false_ns);
		r = r ?: put_rel(m, nums, "removedS", m->removed_ns);
		r = r ?: put(nums, "maxLagSeconds", num3(lag));
		r = r ?: put(nums, "requestsAfterRemoval", json_object_new_int64((int64_t)requests_rm));
		r = r ?: put(nums, "failedRequests", json_object_new_int64((int64_t)failed));
		r = r ?: put(f, "consumers", json_object_get(list));
		snprintf(formula, sizeof(formula),
			 "ceil(%.3f s (the removal, from the %s) + %.3f s (%s's lag) + %.0f s margin) "
			 "= %ld s, or remove the consumer's delay: it routed to the endpoint %.3f s "
			 "after it left every slice",
			 secs(s.rm_ns, m->ref_ns), m->ref_what, lag, w->key, TL_FINDINGS_MARGIN_S,
			 (long)ceil(secs(s.rm_ns, m->ref_ns) + lag + TL_FINDINGS_MARGIN_S - 1e-6), lag);
		r = r ?: reco(f, "spec.containers[].lifecycle.preStop.sleep.seconds",
			      json_object_new_int64(
				  (int64_t)ceil(secs(s.rm_ns, m->ref_ns) + lag + TL_FINDINGS_MARGIN_S - 1e-6)),
			      formula);
	}
	if (r < 0)
		goto done;
	if (json_object_array_add(out, f) < 0) {
		r = -ENOMEM;
		goto done;
	}
	f = NULL;
	r = 0;
done:
	json_object_put(f);
	json_object_put(list);
	free(order);
	cset_free(&s);
	return r;
}

/* ---- keepalive_across_drain ---- */

struct kconn {
	const char *peer;
	int64_t conn, conn_start_ns;
	size_t requests, failed;
	int64_t first_ns, last_ns, told_ns;
	struct json_object *ids;
};

/* Whether the connection listed this request ID as failed already. */
static bool conn_has_id(const struct kconn *c, const char *id)
{
	if (!id)
		return false;
	for (size_t k = 0; k < json_object_array_length(c->ids); k++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(c->ids, k)), id) == 0)
			return true;
	return false;
}

int tl_rule_keepalive(const struct tl_model *m, struct json_object *out)
{
	int64_t sigterm = 0, stop = 0, cutoff;
	struct json_object *f = NULL, *list = NULL, *index = NULL, *nums, *ids;
	struct kconn *k = NULL;
	size_t n = 0, cap = 0, failed = 0, told = 0, listed = 0;
	char summary[1024], formula[768], sbuf[96] = "";
	const char *cut_what;
	int r = 0;

	for (size_t i = 0; i < m->n_ctr; i++) {
		const struct tl_ctr *c = &m->ctr[i];
		int64_t st = c->listen_closed_ns ? c->listen_closed_ns : c->exit_ns;

		if (c->sigterm_ns && (!sigterm || c->sigterm_ns < sigterm))
			sigterm = c->sigterm_ns;
		if (st && (!stop || st < stop))
			stop = st;
	}
	cutoff = sigterm ? sigterm : m->removed_ns;
	cut_what = sigterm ? "SIGTERM" : "the endpoint's removal";
	if (!cutoff)
		return 0;
	index = json_object_new_object();
	if (!index)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_req; i++) {
		const struct tl_req *q = &m->reqs[i];
		char key[128], addr[64];
		struct json_object *idx;
		struct kconn *c;
		bool lo;

		if (!q->inbound || !q->peer || !q->conn || q->start_ns < cutoff ||
		    (q->conn_start_ns && q->conn_start_ns >= cutoff) ||
		    !peer_addr(q->peer, addr, sizeof(addr), &lo) || lo)
			continue;
		{
			const char *kind = tl_json_str(tl_json_object(tl_json_object(m->doc, "peers"), addr), "kind");
			const char *pod_ip = tl_json_str(tl_json_object(m->doc, "pod"), "ip");

			if ((kind && strcmp(kind, "self") == 0) || (pod_ip && strcmp(pod_ip, addr) == 0))
				continue;
		}
		snprintf(key, sizeof(key), "%s#%lld", q->peer, (long long)q->conn);
		if (json_object_object_get_ex(index, key, &idx)) {
			c = &k[json_object_get_int(idx)];
		} else {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct kconn *nk = realloc(k, nc * sizeof(*nk));

				if (!nk) {
					r = -ENOMEM;
					goto done;
				}
				k = nk;
				cap = nc;
			}
			c = &k[n];
			memset(c, 0, sizeof(*c));
			c->peer = q->peer;
			c->conn = q->conn;
			c->conn_start_ns = q->conn_start_ns;
			c->ids = json_object_new_array();
			if (!c->ids || json_object_object_add(index, key, json_object_new_int((int)n)) < 0) {
				json_object_put(c->ids);
				r = -ENOMEM;
				goto done;
			}
			n++;
		}
		c->requests++;
		span(&c->first_ns, &c->last_ns, q->start_ns);
		if (q->conn_close && !c->told_ns)
			c->told_ns = q->end_ns;
		/* A request the proxy's log has too is marked dup in whichever
		 * record sorts second; only the socket's carries the connection,
		 * so a dup counts here unless this connection counted its ID. */
		if (q->failed && (!q->dup || !conn_has_id(c, q->id))) {
			c->failed++;
			if (q->id && json_object_array_length(c->ids) < IDS_PER_CONSUMER &&
			    json_object_array_add(c->ids, json_object_new_string(q->id)) < 0) {
				r = -ENOMEM;
				goto done;
			}
		}
	}
	if (!n)
		goto done;
	f = finding_new("keepalive_across_drain", "warning");
	list = json_object_new_array();
	if (!f || !list) {
		r = -ENOMEM;
		goto done;
	}
	json_object_object_get_ex(f, "numbers", &nums);
	json_object_object_get_ex(f, "requestIds", &ids);
	{
		int64_t last = 0;

		for (size_t i = 0; i < n; i++) {
			struct kconn *c = &k[i];
			struct json_object *o = json_object_new_object();

			failed += c->failed;
			if (c->told_ns && (!stop || c->told_ns <= stop))
				told++;
			if (c->last_ns > last)
				last = c->last_ns;
			if (!o)
				goto nomem;
			r = put(o, "peer", json_object_new_string(c->peer));
			r = r ?: put(o, "conn", json_object_new_int64(c->conn));
			r = r ?: put_rel(m, o, "connStartS", c->conn_start_ns);
			r = r ?: put(o, "requests", json_object_new_int64((int64_t)c->requests));
			r = r ?: put(o, "failed", json_object_new_int64((int64_t)c->failed));
			r = r ?: put(o, "failedRequestIds", json_object_get(c->ids));
			r = r ?: put_rel(m, o, "firstS", c->first_ns);
			r = r ?: put_rel(m, o, "lastS", c->last_ns);
			r = r ?: put(o, "toldToClose", json_object_new_boolean(c->told_ns != 0));
			r = r ?: put_rel(m, o, "toldToCloseS", c->told_ns);
			if (r < 0) {
				json_object_put(o);
				goto done;
			}
			if (listed < CONNS_LISTED) {
				if (json_object_array_add(list, o) < 0) {
					json_object_put(o);
					goto nomem;
				}
				listed++;
			} else {
				json_object_put(o);
			}
			for (size_t j = 0; j < json_object_array_length(c->ids); j++)
				if (json_object_array_length(ids) < TL_FINDINGS_MAX_IDS &&
				    json_object_array_add(ids, json_object_get(json_object_array_get_idx(c->ids, j))) < 0)
					goto nomem;
		}
		if (failed && put(f, "severity", json_object_new_string("error")) < 0)
			goto nomem;
		if (stop)
			snprintf(sbuf, sizeof(sbuf), "%.3f s", secs(stop, cutoff));
		snprintf(summary, sizeof(summary),
			 "%zu connection%s opened before %s carried requests after it, the last %.3f s "
			 "after it; %zu failed; the server told %zu of them to close (Connection: close) "
			 "%s",
			 n, n == 1 ? "" : "s", cut_what, secs(last, cutoff), failed, told,
			 stop ? "before it stopped accepting" : "");
		r = mark_incomplete(m, f, summary, sizeof(summary));
		r = r ?: put(f, "summary", json_object_new_string(summary));
		r = r ?: put(nums, "connections", json_object_new_int64((int64_t)n));
		r = r ?: put(nums, "failedRequests", json_object_new_int64((int64_t)failed));
		r = r ?: put(nums, "toldToClose", json_object_new_int64((int64_t)told));
		r = r ?: put_rel(m, nums, "cutoffS", cutoff);
		r = r ?: put_rel(m, nums, "stoppedAcceptingS", stop);
		r = r ?: put(nums, "lastRequestAfterCutoffSeconds", num3(secs(last, cutoff)));
		r = r ?: put(f, "connections", json_object_get(list));
		if (stop && stop > cutoff)
			snprintf(formula, sizeof(formula),
				 "from %s on, answer with \"Connection: close\" (or close idle keep-alive "
				 "connections): here the server stopped accepting %.3f s after %s while "
				 "%zu connection%s opened before it still carried requests (the last "
				 "%.3f s after it); an idle timeout below %.3f s closes them in time",
				 cut_what, secs(stop, cutoff), cut_what, n, n == 1 ? "" : "s",
				 secs(last, cutoff), secs(stop, cutoff));
		else
			snprintf(formula, sizeof(formula),
				 "from %s on, answer with \"Connection: close\" (or close idle keep-alive "
				 "connections): %zu connection%s opened before it still carried "
				 "requests up to %.3f s after it",
				 cut_what, n, n == 1 ? "" : "s", secs(last, cutoff));
		r = r ?: reco(f, "server: Connection: close during drain, keep-alive idle timeout",
			      json_object_new_string(stop && stop > cutoff ? "Connection: close from SIGTERM; idle timeout below the drain" : "Connection: close from SIGTERM"),
			      formula);
		if (r < 0)
			goto done;
	}
	if (json_object_array_add(out, f) < 0)
		goto nomem;
	f = NULL;
	r = 0;
	goto done;
nomem:
	r = -ENOMEM;
done:
	for (size_t i = 0; i < n; i++)
		json_object_put(k[i].ids);
	free(k);
	json_object_put(f);
	json_object_put(list);
	json_object_put(index);
	return r;
}

/* ---- rollout ---- */

static int lag_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int tl_consumers_rollout_add(struct json_object *agg, struct json_object *findings)
{
	for (size_t i = 0; findings && i < json_object_array_length(findings); i++) {
		struct json_object *f = json_object_array_get_idx(findings, i);
		struct json_object *list = tl_json_array(f, "consumers");
		const char *rule = tl_json_str(f, "rule");

		if (!rule || strcmp(rule, "traffic_after_endpoint_removed") != 0)
			continue;
		for (size_t k = 0; list && k < json_object_array_length(list); k++) {
			struct json_object *c = json_object_array_get_idx(list, k), *a, *lag;
			struct json_object *w = tl_json_object(c, "workload");
			char key[600];
			int64_t v;

			if (w && tl_json_str(w, "kind") && tl_json_str(w, "name"))
				snprintf(key, sizeof(key), "%s/%s/%s",
					 tl_json_str(c, "namespace") ? tl_json_str(c, "namespace") : "",
					 tl_json_str(w, "kind"), tl_json_str(w, "name"));
			else
				snprintf(key, sizeof(key), "%s", tl_json_str(c, "consumer") ? tl_json_str(c, "consumer") : "?");
			if (!json_object_object_get_ex(agg, key, &a)) {
				a = json_object_new_object();
				if (!a || json_object_object_add(agg, key, a) < 0) {
					json_object_put(a);
					return -ENOMEM;
				}
				if (put(a, "consumer", json_object_new_string(key)) < 0 ||
				    put(a, "workload", w ? json_object_get(w) : NULL) < 0 ||
				    put(a, "kind", tl_json_str(c, "kind") ? json_object_new_string(tl_json_str(c, "kind")) : NULL) < 0 ||
				    put(a, "pods", json_object_new_object()) < 0 ||
				    put(a, "timelines", json_object_new_int(0)) < 0 ||
				    put(a, "requests", json_object_new_int64(0)) < 0 ||
				    put(a, "failed", json_object_new_int64(0)) < 0 ||
				    put(a, "lags", json_object_new_array()) < 0)
					return -ENOMEM;
			}
			json_object_int_inc(tl_json_get(a, "timelines"), 1);
			if (tl_json_int(c, "requests", &v))
				json_object_int_inc(tl_json_get(a, "requests"), v);
			if (tl_json_int(c, "failed", &v))
				json_object_int_inc(tl_json_get(a, "failed"), v);
			if (tl_json_str(c, "consumer") &&
			    json_object_object_add(tl_json_get(a, "pods"), tl_json_str(c, "consumer"), NULL) < 0)
				return -ENOMEM;
			lag = tl_json_get(c, "lagSeconds");
			if (lag && (json_object_is_type(lag, json_type_double) || json_object_is_type(lag, json_type_int)) &&
			    json_object_array_add(tl_json_get(a, "lags"), json_object_new_double(json_object_get_double(lag))) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

struct json_object *tl_consumers_rollout_done(struct json_object *agg)
{
	struct json_object *out = json_object_new_array();

	if (!out)
		return NULL;
	json_object_object_foreach(agg, key, a)
	{
		struct json_object *lags = tl_json_get(a, "lags"), *o = json_object_new_object();
		size_t n = lags ? json_object_array_length(lags) : 0;
		double *v = calloc(n ? n : 1, sizeof(*v));
		int r = 0;

		(void)key;
		if (!o || !v) {
			json_object_put(o);
			free(v);
			json_object_put(out);
			return NULL;
		}
		for (size_t i = 0; i < n; i++)
			v[i] = json_object_get_double(json_object_array_get_idx(lags, i));
		qsort(v, n, sizeof(*v), lag_cmp);
		r = r ?: put(o, "consumer", json_object_get(tl_json_get(a, "consumer")));
		r = r ?: put(o, "kind", json_object_get(tl_json_get(a, "kind")));
		r = r ?: put(o, "workload", json_object_get(tl_json_get(a, "workload")));
		r = r ?: put(o, "pods", json_object_new_int(json_object_object_length(tl_json_get(a, "pods"))));
		r = r ?: put(o, "timelines", json_object_get(tl_json_get(a, "timelines")));
		r = r ?: put(o, "requests", json_object_get(tl_json_get(a, "requests")));
		r = r ?: put(o, "failed", json_object_get(tl_json_get(a, "failed")));
		/* nearest rank: the ceil(p * n)-th smallest */
		r = r ?: put(o, "lagP50Seconds", n ? num3(v[(size_t)ceil(0.50 * (double)n) - 1]) : NULL);
		r = r ?: put(o, "lagP99Seconds", n ? num3(v[(size_t)ceil(0.99 * (double)n) - 1]) : NULL);
		r = r ?: put(o, "lagMaxSeconds", n ? num3(v[n - 1]) : NULL);
		free(v);
		if (r < 0 || json_object_array_add(out, o) < 0) {
			json_object_put(o);
			json_object_put(out);
			return NULL;
		}
	}
	return out;
}
