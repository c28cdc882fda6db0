/* SPDX-License-Identifier: Apache-2.0 */
/* The findings' typed summary and its wire form (findings-summary.h). */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <json-c/json.h>

#include "findings.h"
#include "findings-summary.h"

static int rule_index(const char *name)
{
	for (int i = 0; name && TL_FINDING_RULES[i] && i < TL_FINDINGS_RULES_MAX; i++)
		if (strcmp(TL_FINDING_RULES[i], name) == 0)
			return i;
	return -1;
}

/* The failed requests with an ID, by ID (one each: the model marks a
 * failed request whose ID an earlier one has as a duplicate). */
struct by_id {
	const struct tl_req **v;
	bool *claimed;
	size_t n;
};

static int cmp_req_id(const void *a, const void *b)
{
	return strcmp((*(const struct tl_req *const *)a)->id, (*(const struct tl_req *const *)b)->id);
}

static int by_id_build(const struct tl_model *m, struct by_id *x)
{
	memset(x, 0, sizeof(*x));
	if (!m->n_req)
		return 0;
	x->v = malloc(m->n_req * sizeof(*x->v));
	x->claimed = calloc(m->n_req, sizeof(*x->claimed));
	if (!x->v || !x->claimed)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_req; i++)
		if (tl_req_failed_once(&m->reqs[i]) && m->reqs[i].id)
			x->v[x->n++] = &m->reqs[i];
	if (x->n > 1)
		qsort(x->v, x->n, sizeof(*x->v), cmp_req_id);
	return 0;
}

static ssize_t by_id_find(const struct by_id *x, const char *id)
{
	size_t lo = 0, hi = x->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(x->v[mid]->id, id);

		if (c == 0)
			return (ssize_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static void by_id_free(struct by_id *x)
{
	free(x->v);
	free(x->claimed);
}

/* numbers.<key> of a finding as a count; -1 when absent or not one. */
static int64_t number_int(struct json_object *f, const char *key)
{
	struct json_object *n, *v;

	if (!json_object_object_get_ex(f, "numbers", &n) || !json_object_object_get_ex(n, key, &v) ||
	    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
		return -1;
	return json_object_get_int64(v);
}

static bool number_seconds(struct json_object *f, const char *key, int64_t *ret_ns)
{
	struct json_object *n, *v;
	double d;

	if (!json_object_object_get_ex(f, "numbers", &n) || !json_object_object_get_ex(n, key, &v) ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return false;
	d = json_object_get_double(v);
	/* a document's times are bounded (findings-model.c): a lag past a
	 * day is no reading of one */
	if (!(d > -86400.0 && d < 86400.0))
		return false;
	*ret_ns = (int64_t)llround(d * 1e9);
	return true;
}

int tl_findings_summarize(struct json_object *findings, const struct tl_model *m,
			  struct tl_findings_summary *ret)
{
	struct tl_findings_summary s;
	struct by_id ids;
	uint64_t *extra = NULL, listed = 0, pool;
	size_t nf;
	int r;

	if (!json_object_is_type(findings, json_type_array))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	while (s.n_rules < TL_FINDINGS_RULES_MAX && TL_FINDING_RULES[s.n_rules])
		s.n_rules++;
	nf = json_object_array_length(findings);
	s.findings = (uint32_t)nf;
	s.failed_requests = tl_model_failed_requests(m);
	s.flags = TL_FS_EXPLAINED;
	if (m->deletion_ns || (m->ref_what && strcmp(m->ref_what, "first SIGTERM") == 0))
		s.flags |= TL_FS_TERMINATED;
	if (m->complete)
		s.flags |= TL_FS_COMPLETE;
	for (size_t i = 0; i < m->n_ctr; i++)
		if (!m->ctr[i].sandbox && m->ctr[i].sigkill_ns)
			s.flags |= TL_FS_SIGKILL;
	r = by_id_build(m, &ids);
	if (r == 0 && nf && !(extra = calloc(nf, sizeof(*extra))))
		r = -ENOMEM;
	if (r < 0)
		goto out;
	/* Each failed request to the first finding that lists it. */
	for (size_t i = 0; i < nf; i++) {
		struct json_object *f = json_object_array_get_idx(findings, i), *v, *list;
		int k = json_object_object_get_ex(f, "rule", &v) ? rule_index(json_object_get_string(v)) : -1;
		int64_t counted;
		uint64_t matched = 0;

		if (k < 0)
			continue;
		counted = number_int(f, "failedRequests");
		s.rule[k].findings++;
		if (counted > 0)
			s.rule[k].failed_requests += (uint64_t)counted;
		if (k == rule_index("endpoint_removal_lag") &&
		    number_seconds(f, "lagS", &s.removal_lag_ns))
			s.flags |= TL_FS_LAG;
		if (json_object_object_get_ex(f, "requestIds", &list) &&
		    json_object_is_type(list, json_type_array)) {
			for (size_t j = 0; j < json_object_array_length(list); j++) {
				const char *id = json_object_get_string(json_object_array_get_idx(list, j));
				ssize_t e = id ? by_id_find(&ids, id) : -1;

				if (e < 0)
					continue;
				matched++;
				if (ids.claimed[e])
					continue;
				ids.claimed[e] = true;
				s.rule[k].explained++;
				listed++;
			}
		}
		extra[i] = counted > 0 && (uint64_t)counted > matched ? (uint64_t)counted - matched : 0;
	}
	/* What findings count beyond the IDs they list, in the same order,
	 * from the failed requests no finding listed. */
	pool = s.failed_requests > listed ? s.failed_requests - listed : 0;
	for (size_t i = 0; i < nf && pool; i++) {
		struct json_object *v;
		int k = json_object_object_get_ex(json_object_array_get_idx(findings, i), "rule", &v)
				? rule_index(json_object_get_string(v))
				: -1;
		uint64_t take = extra[i] < pool ? extra[i] : pool;

		if (k < 0)
			continue;
		s.rule[k].explained += take;
		pool -= take;
	}
	s.unexplained = pool;
	*ret = s;
out:
	free(extra);
	by_id_free(&ids);
	return r;
}

static size_t put(uint8_t *p, uint64_t v, size_t bytes)
{
	for (size_t i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return bytes;
}

static uint64_t get(const uint8_t *p, size_t bytes)
{
	uint64_t v = 0;

	for (size_t i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

size_t tl_findings_summary_encode(const struct tl_findings_summary *s, uint8_t *buf)
{
	uint32_t n = s->n_rules > TL_FINDINGS_RULES_MAX ? TL_FINDINGS_RULES_MAX : s->n_rules;
	size_t o = 0;

	memcpy(buf, "TLFS", 4);
	o += 4;
	o += put(buf + o, 2, 2);
	o += put(buf + o, n, 2);
	o += put(buf + o, s->findings, 4);
	o += put(buf + o, s->failed_requests, 8);
	o += put(buf + o, s->flags, 4);
	o += put(buf + o, (uint64_t)s->removal_lag_ns, 8);
	o += put(buf + o, s->unexplained, 8);
	for (uint32_t i = 0; i < n; i++) {
		o += put(buf + o, s->rule[i].findings, 4);
		o += put(buf + o, s->rule[i].failed_requests, 8);
		o += put(buf + o, s->rule[i].explained, 8);
	}
	return o;
}

int tl_findings_summary_decode(const uint8_t *buf, size_t len, struct tl_findings_summary *ret)
{
	struct tl_findings_summary s;
	uint64_t version;
	size_t o, head, per;

	if (len < 20 || memcmp(buf, "TLFS", 4) != 0)
		return -EBADMSG;
	version = get(buf + 4, 2);
	if (version == 1) {
		head = 20;
		per = 12;
	} else if (version == 2) {
		head = 40;
		per = 20;
	} else {
		return -EBADMSG;
	}
	memset(&s, 0, sizeof(s));
	s.n_rules = (uint32_t)get(buf + 6, 2);
	if (s.n_rules > TL_FINDINGS_RULES_MAX || len != head + (size_t)s.n_rules * per)
		return -EBADMSG;
	s.findings = (uint32_t)get(buf + 8, 4);
	s.failed_requests = get(buf + 12, 8);
	if (version == 2) {
		s.flags = (uint32_t)get(buf + 20, 4);
		s.removal_lag_ns = (int64_t)get(buf + 24, 8);
		s.unexplained = get(buf + 32, 8);
	}
	o = head;
	for (uint32_t i = 0; i < s.n_rules; i++, o += per) {
		s.rule[i].findings = (uint32_t)get(buf + o, 4);
		s.rule[i].failed_requests = get(buf + o + 4, 8);
		if (version == 2)
			s.rule[i].explained = get(buf + o + 12, 8);
	}
	*ret = s;
	return 0;
}
