/* SPDX-License-Identifier: Apache-2.0 */
/* The findings' typed summary and its wire form (findings-summary.h). */
#include <errno.h>
#include <string.h>
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

int tl_findings_summarize(struct json_object *findings, const struct tl_model *m,
			  struct tl_findings_summary *ret)
{
	struct tl_findings_summary s;

	if (!json_object_is_type(findings, json_type_array))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	while (s.n_rules < TL_FINDINGS_RULES_MAX && TL_FINDING_RULES[s.n_rules])
		s.n_rules++;
	s.findings = (uint32_t)json_object_array_length(findings);
	s.failed_requests = tl_model_failed_requests(m);
	for (size_t i = 0; i < json_object_array_length(findings); i++) {
		struct json_object *f = json_object_array_get_idx(findings, i), *v, *n;
		int k = json_object_object_get_ex(f, "rule", &v) ? rule_index(json_object_get_string(v)) : -1;

		if (k < 0)
			continue;
		s.rule[k].findings++;
		if (json_object_object_get_ex(f, "numbers", &n) &&
		    json_object_object_get_ex(n, "failedRequests", &v) &&
		    json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0)
			s.rule[k].failed_requests += (uint64_t)json_object_get_int64(v);
	}
	*ret = s;
	return 0;
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
	o += put(buf + o, 1, 2);
	o += put(buf + o, n, 2);
	o += put(buf + o, s->findings, 4);
	o += put(buf + o, s->failed_requests, 8);
	for (uint32_t i = 0; i < n; i++) {
		o += put(buf + o, s->rule[i].findings, 4);
		o += put(buf + o, s->rule[i].failed_requests, 8);
	}
	return o;
}

int tl_findings_summary_decode(const uint8_t *buf, size_t len, struct tl_findings_summary *ret)
{
	struct tl_findings_summary s;
	size_t o = 20;

	if (len < 20 || memcmp(buf, "TLFS", 4) != 0 || get(buf + 4, 2) != 1)
		return -EBADMSG;
	memset(&s, 0, sizeof(s));
	s.n_rules = (uint32_t)get(buf + 6, 2);
	if (s.n_rules > TL_FINDINGS_RULES_MAX || len != 20 + (size_t)s.n_rules * 12)
		return -EBADMSG;
	s.findings = (uint32_t)get(buf + 8, 4);
	s.failed_requests = get(buf + 12, 8);
	for (uint32_t i = 0; i < s.n_rules; i++, o += 12) {
		s.rule[i].findings = (uint32_t)get(buf + o, 4);
		s.rule[i].failed_requests = get(buf + o + 4, 8);
	}
	*ret = s;
	return 0;
}
