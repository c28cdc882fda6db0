/* SPDX-License-Identifier: Apache-2.0 */
/* Per-workload metrics of terminations (daemon/export/termination-metrics.h,
 * docs/export.md "Metrics per workload"): what counts as a termination, its
 * outcome, the counters by workload and by rule, the histograms' buckets,
 * the cap on workloads and its overflow labels, every family present from
 * the start, and the committed race document counted as its findings say.
 * The exposition itself goes through the strict parser in
 * test-term-metrics-exposition.py. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "findings.h"
#include "findings-model.h"
#include "findings-summary.h"
#include "metrics.h"
#include "termination-metrics.h"
#include "../check-run.h"

#define M_TERMS "termline_terminations_total"
#define M_FAILED "termline_termination_failed_requests_total"
#define M_OUTCOME "termline_terminations_by_outcome_total"

static struct tl_term_metrics *tm;

static void setup(void)
{
	tl_metrics_reset();
	tm = NULL;
}

static void teardown(void)
{
	tl_term_metrics_free(tm);
	tl_metrics_reset();
}

static int rule_index(const char *rule)
{
	for (int k = 0; TL_FINDING_RULES[k]; k++)
		if (strcmp(TL_FINDING_RULES[k], rule) == 0)
			return k;
	ck_abort_msg("no rule %s", rule);
	return -1;
}

/* A version 2 summary of a terminated Pod, complete, without failures. */
static struct tl_findings_summary summary(void)
{
	struct tl_findings_summary s = {.flags = TL_FS_EXPLAINED | TL_FS_TERMINATED |
						 TL_FS_COMPLETE};

	while (TL_FINDING_RULES[s.n_rules])
		s.n_rules++;
	return s;
}

/* s with n failed requests explained by rule (NULL: by none). */
static void failed_by(struct tl_findings_summary *s, const char *rule, uint64_t n)
{
	s->failed_requests += n;
	if (rule) {
		s->rule[rule_index(rule)].findings++;
		s->rule[rule_index(rule)].failed_requests += n;
		s->rule[rule_index(rule)].explained += n;
	} else {
		s->unexplained += n;
	}
}

static struct tl_termination term(const char *ns, const char *kind, const char *owner,
				  const struct tl_findings_summary *s)
{
	return (struct tl_termination){.ns = ns, .owner_kind = kind, .owner_name = owner,
				       .deletion_ns = 1700000000000000000, .complete = true,
				       .summary = s};
}

/* Counts t; false: no termination. */
static bool count(struct tl_termination t)
{
	return tl_term_metrics_closed(tm, &t);
}

static int64_t get(const char *name, const char *labels)
{
	return tl_metric_get(name, labels);
}

/* The exposition as text (caller frees). */
static char *render(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(tl_metrics_render(f), 0);
	fclose(f);
	return text;
}

/* How many lines of text start with prefix. */
static int lines_starting(const char *text, const char *prefix)
{
	int n = 0;
	size_t pl = strlen(prefix);

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');

		n += strncmp(p, prefix, pl) == 0;
		p = nl ? nl + 1 : NULL;
	}
	return n;
}

/* The value of the sample line "series value" in text, -1 when absent. */
static long long sample(const char *text, const char *series)
{
	size_t sl = strlen(series);

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');

		if (strncmp(p, series, sl) == 0 && p[sl] == ' ')
			return strtoll(p + sl + 1, NULL, 10);
		p = nl ? nl + 1 : NULL;
	}
	return -1;
}

START_TEST(new_bounds)
{
	struct tl_term_metrics *m = NULL;

	ck_assert_int_eq(tl_term_metrics_new(0, &m), -EINVAL);
	ck_assert_int_eq(tl_term_metrics_new(1000001, &m), -EINVAL);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(tl_term_metrics_new(1, &tm), 0);
	ck_assert_ptr_nonnull(tm);
	tl_term_metrics_free(NULL);
	/* NULL counts nothing */
	ck_assert(!tl_term_metrics_closed(NULL, &(struct tl_termination){.deletion_ns = 1}));
	tl_term_metrics_drain_wait(NULL, 10);
}
END_TEST

/* Before any termination every family is in the exposition, at 0: a
 * dashboard or a gate's query has its series from the agent's start. */
START_TEST(present_from_the_start)
{
	char *text;

	ck_assert_int_eq(tl_term_metrics_new(500, &tm), 0);
	text = render();
	ck_assert_int_eq(sample(text, M_TERMS), 0);
	ck_assert_int_eq(sample(text, M_FAILED), 0);
	ck_assert_ptr_nonnull(strstr(text, "# TYPE " M_TERMS " counter\n"));
	ck_assert_ptr_nonnull(strstr(text, "# TYPE " M_FAILED " counter\n"));
	ck_assert_ptr_nonnull(strstr(text, "# TYPE " M_OUTCOME " counter\n"));
	ck_assert_ptr_nonnull(
	    strstr(text, "# TYPE termline_endpoint_removal_lag_seconds histogram\n"));
	ck_assert_ptr_nonnull(strstr(text, "# TYPE termline_drain_wait_seconds histogram\n"));
	ck_assert_ptr_nonnull(strstr(text, "# TYPE termline_metrics_workloads gauge\n"));
	ck_assert_ptr_nonnull(
	    strstr(text, "# TYPE termline_metrics_workloads_overflow_total counter\n"));
	ck_assert_int_eq(sample(text, M_OUTCOME "{outcome=\"clean\"}"), 0);
	ck_assert_int_eq(sample(text, M_OUTCOME "{outcome=\"failed_requests\"}"), 0);
	ck_assert_int_eq(sample(text, M_OUTCOME "{outcome=\"sigkill\"}"), 0);
	ck_assert_int_eq(sample(text, M_OUTCOME "{outcome=\"incomplete\"}"), 0);
	ck_assert_int_eq(sample(text, "termline_endpoint_removal_lag_seconds_count"), 0);
	ck_assert_int_eq(sample(text, "termline_endpoint_removal_lag_seconds_bucket{le=\"+Inf\"}"), 0);
	ck_assert_int_eq(sample(text, "termline_drain_wait_seconds_count"), 0);
	ck_assert_int_eq(sample(text, "termline_metrics_workloads"), 0);
	ck_assert_int_eq(sample(text, "termline_metrics_workloads_overflow_total"), 0);
	free(text);
}
END_TEST

START_TEST(what_is_a_termination)
{
	struct tl_findings_summary s = summary(), not_terminated = summary(), v1 = {0};
	struct tl_termination t;

	not_terminated.flags &= ~TL_FS_TERMINATED;
	/* the summary says (a SIGTERM without a deletion is one) */
	t = term("shop", "ReplicaSet", "web-5d9c7", &s);
	t.deletion_ns = 0;
	ck_assert(tl_term_is_termination(&t));
	t.summary = &not_terminated;
	t.deletion_ns = 1;
	ck_assert(!tl_term_is_termination(&t));
	/* no summary, or a version 1 one: the deletion does */
	t.summary = NULL;
	ck_assert(tl_term_is_termination(&t));
	t.deletion_ns = 0;
	ck_assert(!tl_term_is_termination(&t));
	v1.failed_requests = 3;
	t.summary = &v1;
	ck_assert(!tl_term_is_termination(&t));
	t.deletion_ns = 5;
	ck_assert(tl_term_is_termination(&t));

	/* what is none counts nothing */
	ck_assert_int_eq(tl_term_metrics_new(10, &tm), 0);
	t = term("shop", "ReplicaSet", "web-5d9c7", &not_terminated);
	ck_assert(!tl_term_metrics_closed(tm, &t));
	ck_assert_int_eq(get(M_TERMS, "namespace=\"shop\",workload=\"web\""), 0);
	ck_assert_int_eq(get(M_OUTCOME, "outcome=\"clean\""), 0);
	ck_assert_int_eq(get("termline_metrics_workloads", NULL), 0);
}
END_TEST

START_TEST(outcomes)
{
	struct tl_findings_summary clean = summary(), failed = summary(), killed = summary(),
				   both = summary(), incomplete = summary();
	struct tl_termination t;

	failed_by(&failed, "requests_after_listener_closed", 2);
	killed.flags |= TL_FS_SIGKILL;
	failed_by(&both, "sigkill_after_grace", 1);
	both.flags |= TL_FS_SIGKILL;
	incomplete.flags &= ~TL_FS_COMPLETE;

	t = term("shop", "ReplicaSet", "web-5d9c7", &clean);
	ck_assert_int_eq(tl_term_outcome(&t), TL_TM_CLEAN);
	t.summary = &failed;
	ck_assert_int_eq(tl_term_outcome(&t), TL_TM_FAILED_REQUESTS);
	/* failed requests first, then SIGKILL */
	t.summary = &both;
	ck_assert_int_eq(tl_term_outcome(&t), TL_TM_FAILED_REQUESTS);
	t.summary = &killed;
	ck_assert_int_eq(tl_term_outcome(&t), TL_TM_SIGKILL);
	t.complete = false;
	ck_assert_int_eq(tl_term_outcome(&t), TL_TM_SIGKILL);
	t.summary = &clean;
	ck_assert_int_eq(tl_term_outcome(&t), TL_TM_INCOMPLETE);
	/* no findings: nothing says it was clean */
	t.complete = true;
	t.summary = NULL;
	ck_assert_int_eq(tl_term_outcome(&t), TL_TM_INCOMPLETE);
	/* a failed request on an incomplete document still failed */
	t.complete = false;
	t.summary = &failed;
	ck_assert_int_eq(tl_term_outcome(&t), TL_TM_FAILED_REQUESTS);

	ck_assert_str_eq(tl_term_outcome_name(TL_TM_CLEAN), "clean");
	ck_assert_str_eq(tl_term_outcome_name(TL_TM_FAILED_REQUESTS), "failed_requests");
	ck_assert_str_eq(tl_term_outcome_name(TL_TM_SIGKILL), "sigkill");
	ck_assert_str_eq(tl_term_outcome_name(TL_TM_INCOMPLETE), "incomplete");
	ck_assert_str_eq(tl_term_outcome_name((enum tl_term_outcome)42), "incomplete");

	/* counted: 2 clean, 2 failed_requests, 1 sigkill, 1 incomplete */
	ck_assert_int_eq(tl_term_metrics_new(10, &tm), 0);
	ck_assert(count(term("shop", "ReplicaSet", "web-5d9c7", &clean)));
	ck_assert(count(term("shop", "ReplicaSet", "web-7f8b9", &clean)));
	ck_assert(count(term("shop", "ReplicaSet", "web-5d9c7", &failed)));
	ck_assert(count(term("shop", "StatefulSet", "db", &both)));
	ck_assert(count(term("shop", "StatefulSet", "db", &killed)));
	t = term("shop", "StatefulSet", "db", &clean);
	t.complete = false;
	ck_assert(tl_term_metrics_closed(tm, &t));
	ck_assert_int_eq(get(M_OUTCOME, "outcome=\"clean\""), 2);
	ck_assert_int_eq(get(M_OUTCOME, "outcome=\"failed_requests\""), 2);
	ck_assert_int_eq(get(M_OUTCOME, "outcome=\"sigkill\""), 1);
	ck_assert_int_eq(get(M_OUTCOME, "outcome=\"incomplete\""), 1);
	/* every termination under one outcome */
	ck_assert_int_eq(get(M_TERMS, "namespace=\"shop\",workload=\"web\"") +
			     get(M_TERMS, "namespace=\"shop\",workload=\"db\""),
			 6);
}
END_TEST

START_TEST(counts_by_workload_and_rule)
{
	struct tl_findings_summary a = summary(), b = summary(), c = summary(), v1 = {0};

	ck_assert_int_eq(tl_term_metrics_new(10, &tm), 0);
	/* two revisions of web: one workload */
	failed_by(&a, "requests_after_listener_closed", 14);
	failed_by(&b, "requests_after_listener_closed", 3);
	failed_by(&b, "requests_after_sidecar_exit", 2);
	failed_by(&b, NULL, 1);
	ck_assert(count(term("shop", "ReplicaSet", "web-5d9c7", &a)));
	ck_assert(count(term("shop", "ReplicaSet", "web-7f8b9", &b)));
	/* another namespace, a CronJob, a bare Pod, a Pod of no namespace */
	failed_by(&c, "sigkill_after_grace", 4);
	ck_assert(count(term("batch", "Job", "report-29412360", &c)));
	ck_assert(count(term("batch", "Job", "report-29412361", NULL)));
	ck_assert(count(term("shop", NULL, NULL, NULL)));
	ck_assert(count(term(NULL, "ReplicaSet", "web-5d9c7", NULL)));
	ck_assert(count(term("", "DaemonSet", "agent", NULL)));
	/* a version 1 summary: the failed requests, no rule */
	v1.failed_requests = 5;
	v1.n_rules = 1;
	v1.rule[0].findings = 1;
	v1.rule[0].failed_requests = 5;
	ck_assert(count(term("web", "StatefulSet", "cache", &v1)));

	ck_assert_int_eq(get(M_TERMS, "namespace=\"shop\",workload=\"web\""), 2);
	ck_assert_int_eq(get(M_FAILED, "namespace=\"shop\",workload=\"web\","
				"rule=\"requests_after_listener_closed\""),
			 17);
	ck_assert_int_eq(
	    get(M_FAILED, "namespace=\"shop\",workload=\"web\",rule=\"requests_after_sidecar_exit\""), 2);
	ck_assert_int_eq(get(M_FAILED, "namespace=\"shop\",workload=\"web\",rule=\"none\""), 1);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"batch\",workload=\"report\""), 2);
	ck_assert_int_eq(get(M_FAILED, "namespace=\"batch\",workload=\"report\",rule=\"sigkill_after_grace\""),
			 4);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"shop\",workload=\"_none\""), 1);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"_unknown\",workload=\"web\""), 1);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"_unknown\",workload=\"agent\""), 1);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"web\",workload=\"cache\""), 1);
	ck_assert_int_eq(get(M_FAILED, "namespace=\"web\",workload=\"cache\",rule=\"none\""), 5);
	ck_assert_int_eq(get(M_FAILED, "namespace=\"web\",workload=\"cache\","
				"rule=\"requests_after_listener_closed\""),
			 0);
	/* (shop,web) (batch,report) (shop,_none) (_unknown,web) (_unknown,agent) (web,cache) */
	ck_assert_int_eq(get("termline_metrics_workloads", NULL), 6);
	ck_assert_int_eq(get("termline_metrics_workloads_overflow_total", NULL), 0);
}
END_TEST

/* A rule that explains nothing (its requests are the first finding's) has
 * no series: each failed request counts once, under one rule. */
START_TEST(each_request_once)
{
	struct tl_findings_summary s = summary();
	char *text;

	ck_assert_int_eq(tl_term_metrics_new(10, &tm), 0);
	failed_by(&s, "requests_after_listener_closed", 14);
	/* endpoint_removal_lag counts the same 14, explains none */
	s.rule[rule_index("endpoint_removal_lag")].findings = 1;
	s.rule[rule_index("endpoint_removal_lag")].failed_requests = 14;
	ck_assert(count(term("shop", "ReplicaSet", "web-5d9c7", &s)));
	text = render();
	ck_assert_int_eq(lines_starting(text, M_FAILED "{"), 1);
	ck_assert_int_eq(
	    sample(text, M_FAILED "{namespace=\"shop\",workload=\"web\",rule=\"requests_after_listener_closed\"}"),
	    14);
	ck_assert_int_eq(sample(text, M_FAILED), -1); /* the unlabelled 0 is gone */
	free(text);
}
END_TEST

START_TEST(removal_lag_buckets)
{
	static const double lags[] = {-0.3, 0, 0.05, 0.051, 1.48, 2, 60, 61};
	static const char *const want[][2] = {
	    {"0", "2"},	  {"0.05", "3"}, {"0.1", "4"}, {"0.25", "4"}, {"0.5", "4"}, {"1", "4"},
	    {"2", "6"},	  {"5", "6"},	 {"10", "6"},  {"30", "6"},   {"60", "7"},  {"+Inf", "8"},
	};
	struct tl_findings_summary s = summary(), nolag = summary();
	char *text, series[128];

	ck_assert_int_eq(tl_term_metrics_new(10, &tm), 0);
	for (size_t i = 0; i < sizeof(lags) / sizeof(lags[0]); i++) {
		s.flags |= TL_FS_LAG;
		s.removal_lag_ns = (int64_t)(lags[i] * 1e9);
		ck_assert(count(term("shop", "ReplicaSet", "web-5d9c7", &s)));
	}
	/* without a lag reading: not observed */
	nolag.removal_lag_ns = 5000000000;
	ck_assert(count(term("shop", "ReplicaSet", "web-5d9c7", &nolag)));
	text = render();
	ck_assert_int_eq(lines_starting(text, "termline_endpoint_removal_lag_seconds_bucket{"), 12);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(series, sizeof(series), "termline_endpoint_removal_lag_seconds_bucket{le=\"%s\"}",
			 want[i][0]);
		ck_assert_msg(sample(text, series) == atoll(want[i][1]), "%s: %lld, not %s", series,
			      sample(text, series), want[i][1]);
	}
	ck_assert_int_eq(sample(text, "termline_endpoint_removal_lag_seconds_count"), 8);
	/* negative (the endpoint left first) counts as 0 in the sum */
	ck_assert_ptr_nonnull(strstr(text, "\ntermline_endpoint_removal_lag_seconds_sum 124.581\n"));
	free(text);
}
END_TEST

START_TEST(drain_wait_buckets)
{
	static const int64_t held_ms[] = {-1, 0, 500, 501, 14999, 15000, 300000, 300001};
	static const char *const want[][2] = {
	    {"0.5", "2"}, {"1", "3"},	{"2", "3"},   {"5", "3"},   {"10", "3"}, {"15", "5"},
	    {"30", "5"},  {"60", "5"},	{"120", "5"}, {"300", "6"}, {"+Inf", "7"},
	};
	char *text, series[128];

	ck_assert_int_eq(tl_term_metrics_new(10, &tm), 0);
	for (size_t i = 0; i < sizeof(held_ms) / sizeof(held_ms[0]); i++)
		tl_term_metrics_drain_wait(tm, held_ms[i]);
	text = render();
	ck_assert_int_eq(lines_starting(text, "termline_drain_wait_seconds_bucket{"), 11);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(series, sizeof(series), "termline_drain_wait_seconds_bucket{le=\"%s\"}",
			 want[i][0]);
		ck_assert_msg(sample(text, series) == atoll(want[i][1]), "%s: %lld, not %s", series,
			      sample(text, series), want[i][1]);
	}
	ck_assert_int_eq(sample(text, "termline_drain_wait_seconds_count"), 7);
	/* waits are no terminations */
	ck_assert_int_eq(sample(text, M_TERMS), 0);
	free(text);
}
END_TEST

/* --metrics-max-workloads 2: the first two (namespace, workload) pairs have
 * series of their own; later ones count under workload="_other" in their
 * namespace, for two namespaces, then under namespace="_other" too. The
 * series stay bounded whatever comes. */
START_TEST(cap_and_overflow)
{
	struct tl_findings_summary s = summary();
	char owner[64], ns[64], *text;

	failed_by(&s, "requests_after_listener_closed", 1);
	ck_assert_int_eq(tl_term_metrics_new(2, &tm), 0);
	ck_assert(count(term("a", "StatefulSet", "x", &s)));
	ck_assert(count(term("a", "StatefulSet", "y", &s)));
	ck_assert(count(term("a", "StatefulSet", "z", &s)));
	ck_assert(count(term("b", "StatefulSet", "w", &s)));
	ck_assert(count(term("c", "StatefulSet", "v", &s)));
	/* admitted ones keep their series, the overflowed stay overflowed */
	ck_assert(count(term("a", "StatefulSet", "x", &s)));
	ck_assert(count(term("a", "StatefulSet", "z", &s)));
	ck_assert(count(term("b", "StatefulSet", "y", &s)));

	ck_assert_int_eq(get(M_TERMS, "namespace=\"a\",workload=\"x\""), 2);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"a\",workload=\"y\""), 1);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"a\",workload=\"z\""), 0);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"a\",workload=\"_other\""), 2);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"b\",workload=\"_other\""), 2);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"c\",workload=\"_other\""), 0);
	ck_assert_int_eq(get(M_TERMS, "namespace=\"_other\",workload=\"_other\""), 1);
	ck_assert_int_eq(get(M_FAILED, "namespace=\"a\",workload=\"_other\","
				"rule=\"requests_after_listener_closed\""),
			 2);
	ck_assert_int_eq(get(M_FAILED, "namespace=\"_other\",workload=\"_other\","
				"rule=\"requests_after_listener_closed\""),
			 1);
	ck_assert_int_eq(get("termline_metrics_workloads", NULL), 2);
	ck_assert_int_eq(get("termline_metrics_workloads_overflow_total", NULL), 5);
	/* every termination is counted somewhere */
	ck_assert_int_eq(get(M_OUTCOME, "outcome=\"failed_requests\""), 8);

	/* a thousand more workloads in a thousand namespaces: 2 + 2 + 1 series */
	for (int i = 0; i < 1000; i++) {
		snprintf(ns, sizeof(ns), "ns-%d", i);
		snprintf(owner, sizeof(owner), "app-%d", i);
		ck_assert(count(term(ns, "DaemonSet", owner, &s)));
	}
	text = render();
	ck_assert_int_eq(lines_starting(text, M_TERMS "{"), 5);
	ck_assert_int_eq(lines_starting(text, M_FAILED "{"), 5);
	ck_assert_int_eq(sample(text, M_TERMS "{namespace=\"_other\",workload=\"_other\"}"), 1001);
	ck_assert_int_eq(sample(text, "termline_metrics_workloads_overflow_total"), 1005);
	ck_assert_int_eq(sample(text, "termline_metrics_workloads"), 2);
	free(text);
}
END_TEST

/* Label values are escaped as the exposition format says; a value that
 * would be a label of its own stays a value. */
START_TEST(label_values_escaped)
{
	struct tl_findings_summary s = summary();
	char *text;

	failed_by(&s, NULL, 1);
	ck_assert_int_eq(tl_term_metrics_new(10, &tm), 0);
	ck_assert(count(term("n\"s", "StatefulSet", "we\"b\\\n\",workload=\"x", &s)));
	text = render();
	ck_assert_int_eq(
	    sample(text, M_TERMS "{namespace=\"n\\\"s\",workload=\"we\\\"b\\\\\\n\\\",workload=\\\"x\"}"),
	    1);
	ck_assert_int_eq(lines_starting(text, M_TERMS "{"), 1);
	ck_assert_ptr_null(strstr(text, "workload=\"x\"}"));
	free(text);
}
END_TEST

/* The committed sidecar race (tests/cli/data/state) and its fixed twin,
 * summarised as termline-findings does and counted: 14 failed requests
 * under requests_after_listener_closed (endpoint_removal_lag counts the
 * same 14), the 1.48 s removal lag in the le="2" bucket; then the fix
 * (clean) and the race's incomplete twin (its 14 failed requests count:
 * failed_requests comes before incomplete). */
static struct json_object *fixture(const char *name, struct tl_findings_summary *s,
				   struct tl_model *m)
{
	const char *root = getenv("TERMLINE_SOURCE_ROOT");
	char path[4096];
	struct json_object *doc, *findings = NULL;

	ck_assert_ptr_nonnull(root);
	snprintf(path, sizeof(path), "%s/tests/cli/data/state/timelines/shop/%s", root, name);
	doc = json_object_from_file(path);
	ck_assert_msg(doc != NULL, "%s: not read", path);
	ck_assert_int_eq(tl_findings_compute(doc, &findings), 0);
	ck_assert_int_eq(tl_model_build(doc, m), 0);
	ck_assert_int_eq(tl_findings_summarize(findings, m, s), 0);
	json_object_put(findings);
	return doc;
}

static struct tl_termination of_doc(struct json_object *doc, const struct tl_model *m,
				    const struct tl_findings_summary *s)
{
	struct json_object *pod = json_object_object_get(doc, "pod"),
			   *owner = json_object_object_get(pod, "owner");

	return (struct tl_termination){
	    .ns = json_object_get_string(json_object_object_get(pod, "namespace")),
	    .owner_kind = json_object_get_string(json_object_object_get(owner, "kind")),
	    .owner_name = json_object_get_string(json_object_object_get(owner, "name")),
	    .deletion_ns = m->deletion_ns,
	    .complete = m->complete,
	    .summary = s};
}

START_TEST(the_race_as_its_findings_say)
{
	struct tl_findings_summary race, fixed, lossy;
	struct tl_model mr, mf, ml;
	struct json_object *dr = fixture("web-5d9c7-race_11111111-1111-4111-8111-111111111111.json",
					 &race, &mr),
			   *df = fixture("web-5d9c7-fixed_22222222-2222-4222-8222-222222222222.json",
					 &fixed, &mf),
			   *dl = fixture("web-5d9c7-lossy_33333333-3333-4333-8333-333333333333.json",
					 &lossy, &ml);
	char *text;

	ck_assert_uint_eq(race.failed_requests, 14);
	ck_assert(race.flags & TL_FS_LAG);
	ck_assert_int_eq(tl_term_metrics_new(500, &tm), 0);
	ck_assert(count(of_doc(dr, &mr, &race)));
	text = render();
	ck_assert_int_eq(sample(text, M_TERMS "{namespace=\"shop\",workload=\"web\"}"), 1);
	ck_assert_int_eq(sample(text, M_FAILED "{namespace=\"shop\",workload=\"web\","
					"rule=\"requests_after_listener_closed\"}"),
			 14);
	ck_assert_int_eq(lines_starting(text, M_FAILED "{"), 1);
	ck_assert_int_eq(sample(text, M_OUTCOME "{outcome=\"failed_requests\"}"), 1);
	/* lagS 1.48: in le="2", not in le="1" */
	ck_assert_int_eq(sample(text, "termline_endpoint_removal_lag_seconds_bucket{le=\"1\"}"), 0);
	ck_assert_int_eq(sample(text, "termline_endpoint_removal_lag_seconds_bucket{le=\"2\"}"), 1);
	ck_assert_ptr_nonnull(strstr(text, "\ntermline_endpoint_removal_lag_seconds_sum 1.48\n"));
	free(text);

	/* the fix: clean; the incomplete twin of the race failed the same 14 */
	ck_assert_uint_eq(fixed.failed_requests, 0);
	ck_assert_uint_eq(lossy.failed_requests, 14);
	ck_assert(!(lossy.flags & TL_FS_COMPLETE));
	ck_assert(count(of_doc(df, &mf, &fixed)));
	ck_assert(count(of_doc(dl, &ml, &lossy)));
	text = render();
	ck_assert_int_eq(sample(text, M_TERMS "{namespace=\"shop\",workload=\"web\"}"), 3);
	ck_assert_int_eq(sample(text, M_FAILED "{namespace=\"shop\",workload=\"web\","
					"rule=\"requests_after_listener_closed\"}"),
			 28);
	ck_assert_int_eq(lines_starting(text, M_FAILED "{"), 1);
	ck_assert_int_eq(sample(text, M_OUTCOME "{outcome=\"failed_requests\"}"), 2);
	ck_assert_int_eq(sample(text, M_OUTCOME "{outcome=\"clean\"}"), 1);
	ck_assert_int_eq(sample(text, M_OUTCOME "{outcome=\"incomplete\"}"), 0);
	ck_assert_int_eq(sample(text, "termline_endpoint_removal_lag_seconds_count"),
			 1 + !!(fixed.flags & TL_FS_LAG) + !!(lossy.flags & TL_FS_LAG));
	free(text);
	tl_model_done(&mr);
	tl_model_done(&mf);
	tl_model_done(&ml);
	json_object_put(dr);
	json_object_put(df);
	json_object_put(dl);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("term-metrics");
	TCase *tc = tcase_create("term-metrics");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, new_bounds);
	tcase_add_test(tc, present_from_the_start);
	tcase_add_test(tc, what_is_a_termination);
	tcase_add_test(tc, outcomes);
	tcase_add_test(tc, counts_by_workload_and_rule);
	tcase_add_test(tc, each_request_once);
	tcase_add_test(tc, removal_lag_buckets);
	tcase_add_test(tc, drain_wait_buckets);
	tcase_add_test(tc, cap_and_overflow);
	tcase_add_test(tc, label_values_escaped);
	tcase_add_test(tc, the_race_as_its_findings_say);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? 1 : 0;
}
