/* SPDX-License-Identifier: Apache-2.0 */
/* Per-workload metrics of terminations (termination-metrics.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "findings-summary.h"
#include "metrics.h"
#include "termination-metrics.h"
#include "workload.h"

#define TERMINATIONS "termline_terminations_total"
#define FAILED "termline_termination_failed_requests_total"
#define OUTCOMES "termline_terminations_by_outcome_total"
#define REMOVAL_LAG "termline_endpoint_removal_lag_seconds"
#define DRAIN_WAIT "termline_drain_wait_seconds"
#define WORKLOADS "termline_metrics_workloads"
#define OVERFLOW "termline_metrics_workloads_overflow_total"

#define OUTCOMES_N 4
#define LABELS_MAX 768 /* namespace, workload and rule, escaped */

struct tl_term_metrics {
	struct tl_label_set *workloads;	 /* "NS/WORKLOAD" with series of their own */
	struct tl_label_set *overflowed; /* namespaces with a workload="_other" */
	struct tl_metric *outcome[OUTCOMES_N], *n_workloads, *overflow;
	struct tl_histogram *removal_lag, *drain_wait;
	unsigned n_rules;
};

static const char *const outcome_names[OUTCOMES_N] = {
    [TL_TM_CLEAN] = "clean",
    [TL_TM_FAILED_REQUESTS] = "failed_requests",
    [TL_TM_SIGKILL] = "sigkill",
    [TL_TM_INCOMPLETE] = "incomplete",
};

const char *tl_term_outcome_name(enum tl_term_outcome o)
{
	return (unsigned)o < OUTCOMES_N ? outcome_names[o] : "incomplete";
}

bool tl_term_is_termination(const struct tl_termination *t)
{
	const struct tl_findings_summary *s = t->summary;

	/* a version 1 summary does not say: the deletion alone does */
	if (s && (s->flags & TL_FS_EXPLAINED))
		return s->flags & TL_FS_TERMINATED;
	return t->deletion_ns != 0;
}

enum tl_term_outcome tl_term_outcome(const struct tl_termination *t)
{
	const struct tl_findings_summary *s = t->summary;

	if (s && s->failed_requests)
		return TL_TM_FAILED_REQUESTS;
	if (s && (s->flags & TL_FS_SIGKILL))
		return TL_TM_SIGKILL;
	if (!s || !t->complete)
		return TL_TM_INCOMPLETE;
	return TL_TM_CLEAN;
}

int tl_term_metrics_new(uint32_t max_workloads, struct tl_term_metrics **ret)
{
	static const double lag[] = {TL_TM_REMOVAL_LAG_BUCKETS},
			    wait[] = {TL_TM_DRAIN_WAIT_BUCKETS};
	struct tl_term_metrics *m;
	unsigned pairs;
	int r;

	if (!max_workloads || max_workloads > 1000000)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	while (TL_FINDING_RULES[m->n_rules])
		m->n_rules++;
	r = tl_label_set_new(max_workloads, &m->workloads);
	if (r == 0)
		r = tl_label_set_new(max_workloads, &m->overflowed);
	if (r < 0) {
		tl_term_metrics_free(m);
		return r;
	}
	/* the workloads, the "_other" of as many namespaces, and one more */
	pairs = 2 * max_workloads + 1;
	tl_metric_describe(TERMINATIONS, TL_METRIC_COUNTER,
			   "Terminations recorded (closed timelines with a deletion or a SIGTERM), "
			   "by namespace and workload.");
	tl_metric_limit(TERMINATIONS, pairs);
	tl_metric_describe(FAILED, TL_METRIC_COUNTER,
			   "Requests that failed while the workload's Pods terminated, each under "
			   "the finding that explains it (rule=\"none\": no finding does).");
	tl_metric_limit(FAILED, pairs * (m->n_rules + 1));
	for (int o = 0; o < OUTCOMES_N; o++) {
		char labels[64];

		snprintf(labels, sizeof(labels), "outcome=\"%s\"", outcome_names[o]);
		m->outcome[o] =
		    tl_metric_new(OUTCOMES, labels, TL_METRIC_COUNTER,
				  "Terminations by how they ended, the first that holds: "
				  "failed_requests, sigkill, incomplete, clean.");
	}
	m->removal_lag = tl_histogram_new(
	    REMOVAL_LAG, NULL, lag, sizeof(lag) / sizeof(lag[0]),
	    "Seconds the endpoint stayed in an EndpointSlice after the app stopped serving "
	    "(0 when it left first), per termination where both were recorded.");
	m->drain_wait =
	    tl_histogram_new(DRAIN_WAIT, NULL, wait, sizeof(wait) / sizeof(wait[0]),
			     "Seconds a preStop gate (termline-wait) held its Pod, per wait.");
	m->n_workloads = tl_metric_new(WORKLOADS, NULL, TL_METRIC_GAUGE,
				       "Workloads with per-workload series of their own "
				       "(at most --metrics-max-workloads).");
	m->overflow =
	    tl_metric_new(OVERFLOW, NULL, TL_METRIC_COUNTER,
			  "Terminations counted under workload=\"_other\": their workload "
			  "came after --metrics-max-workloads others.");
	*ret = m;
	return 0;
}

void tl_term_metrics_free(struct tl_term_metrics *m)
{
	if (!m)
		return;
	tl_label_set_free(m->workloads);
	tl_label_set_free(m->overflowed);
	free(m);
}

/* The namespace and workload labels of t, bounded: 'namespace="NS",workload="W"'. */
static void workload_labels(struct tl_term_metrics *m, const struct tl_termination *t, char *buf,
			    size_t size)
{
	char wname[256], key[512], ns_v[200], w_v[600];
	const char *kind, *ns = t->ns && t->ns[0] ? t->ns : TL_TM_NO_NAMESPACE;
	const char *w = TL_TM_NO_WORKLOAD;

	if (tl_workload_of(t->owner_kind, t->owner_name, &kind, wname, sizeof(wname)))
		w = wname;
	snprintf(key, sizeof(key), "%s/%s", ns, w);
	if (!tl_label_set_admit(m->workloads, key)) {
		tl_metric_inc(m->overflow, 1);
		w = TL_TM_OTHER;
		if (!tl_label_set_admit(m->overflowed, ns))
			ns = TL_TM_OTHER;
	}
	tl_metric_put(m->n_workloads, (int64_t)tl_label_set_size(m->workloads));
	snprintf(buf, size, "namespace=\"%s\",workload=\"%s\"",
		 tl_metric_label_value(ns_v, sizeof(ns_v), ns),
		 tl_metric_label_value(w_v, sizeof(w_v), w));
}

static void count_failed(const char *wl, const char *rule, uint64_t n)
{
	char labels[LABELS_MAX + 64];

	if (!n)
		return;
	snprintf(labels, sizeof(labels), "%s,rule=\"%s\"", wl, rule);
	tl_metric_inc(tl_metric_new(FAILED, labels, TL_METRIC_COUNTER, NULL), n);
}

bool tl_term_metrics_closed(struct tl_term_metrics *m, const struct tl_termination *t)
{
	const struct tl_findings_summary *s = t->summary;
	char wl[LABELS_MAX];

	if (!m || !tl_term_is_termination(t))
		return false;
	workload_labels(m, t, wl, sizeof(wl));
	tl_metric_inc(tl_metric_new(TERMINATIONS, wl, TL_METRIC_COUNTER, NULL), 1);
	tl_metric_inc(m->outcome[tl_term_outcome(t)], 1);
	if (!s)
		return true;
	if (s->flags & TL_FS_EXPLAINED) {
		for (unsigned k = 0; k < s->n_rules && k < m->n_rules; k++)
			count_failed(wl, TL_FINDING_RULES[k], s->rule[k].explained);
		count_failed(wl, TL_TM_NO_RULE, s->unexplained);
	} else {
		/* a version 1 summary: which rule explains which request is
		 * not known */
		count_failed(wl, TL_TM_NO_RULE, s->failed_requests);
	}
	if (s->flags & TL_FS_LAG)
		tl_histogram_observe(m->removal_lag,
				     s->removal_lag_ns > 0 ? (double)s->removal_lag_ns / 1e9 : 0.0);
	return true;
}

void tl_term_metrics_drain_wait(struct tl_term_metrics *m, int64_t held_ms)
{
	if (m && held_ms >= 0)
		tl_histogram_observe(m->drain_wait, (double)held_ms / 1e3);
}
