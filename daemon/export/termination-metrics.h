/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Per-workload Prometheus metrics of terminations (docs/export.md,
 * "Metrics per workload"), counted in the agent's registry
 * (core/metrics.h) as timelines close:
 *
 *   termline_terminations_total{namespace,workload}
 *   termline_termination_failed_requests_total{namespace,workload,rule}
 *   termline_terminations_by_outcome_total{outcome}
 *   termline_endpoint_removal_lag_seconds (histogram)
 *   termline_drain_wait_seconds (histogram)
 *   termline_metrics_workloads, termline_metrics_workloads_overflow_total
 *
 * Cardinality is bounded: a workload, never a Pod; the first max_workloads
 * (namespace, workload) pairs get series of their own, later ones count
 * under workload="_other" in their namespace (for the first max_workloads
 * namespaces that overflow; then namespace="_other" too). Counters start
 * at 0 with the process: documents a start finds are not counted again. */
#include <stdbool.h>
#include <stdint.h>

struct tl_findings_summary;
struct tl_term_metrics;

/* Label values for what has no name of its own. */
#define TL_TM_OTHER "_other"	  /* past the bound */
#define TL_TM_NO_WORKLOAD "_none" /* a Pod without a controller owner */
#define TL_TM_NO_NAMESPACE "_unknown"
#define TL_TM_NO_RULE "none" /* a failed request no finding explains */

/* Bucket bounds, seconds. */
#define TL_TM_REMOVAL_LAG_BUCKETS 0, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60
#define TL_TM_DRAIN_WAIT_BUCKETS 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300

/* What a closed timeline says of its termination. */
struct tl_termination {
	const char *ns;			     /* NULL: unknown */
	const char *owner_kind, *owner_name; /* the controller owner; NULL: none */
	int64_t deletion_ns;		     /* 0: no deletion request recorded */
	bool complete;
	const struct tl_findings_summary *summary; /* NULL: no findings */
};

enum tl_term_outcome {
	TL_TM_CLEAN,
	TL_TM_FAILED_REQUESTS,
	TL_TM_SIGKILL,
	TL_TM_INCOMPLETE,
};

/* The outcome of a termination, the first that holds: failed_requests (a
 * request failed), sigkill (a container got SIGKILL), incomplete (the
 * document is not complete, or has no findings), else clean. */
enum tl_term_outcome tl_term_outcome(const struct tl_termination *t);
const char *tl_term_outcome_name(enum tl_term_outcome o);
/* A termination: a deletion request or a SIGTERM was recorded (a timeline
 * closed for another reason, a Pod gone while the agent was down without
 * either, is none). */
bool tl_term_is_termination(const struct tl_termination *t);

/* Registers the families (every name present, at 0, from the start). 0,
 * -EINVAL (max_workloads 0), -ENOMEM. */
int tl_term_metrics_new(uint32_t max_workloads, struct tl_term_metrics **ret);
void tl_term_metrics_free(struct tl_term_metrics *m); /* accepts NULL */
/* Counts a closed timeline; false when it is no termination (nothing
 * counted). */
bool tl_term_metrics_closed(struct tl_term_metrics *m, const struct tl_termination *t);
/* A preStop gate's wait (drain.wait_ended) held its Pod held_ms. */
void tl_term_metrics_drain_wait(struct tl_term_metrics *m, int64_t held_ms);
