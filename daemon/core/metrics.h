/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Process-wide Prometheus registry (single-threaded daemon, no locks).
 * A module registers each series it counts once, when it starts, and
 * counts through the handle:
 *
 *   m->closed = tl_metric_new("termline_timelines_closed_total", NULL,
 *                             TL_METRIC_COUNTER, "Timelines closed ...");
 *   tl_metric_inc(m->closed, 1);
 *
 * name is the full metric name; labels is the label set without braces
 * ('type="process.exit",source="kernel"') or NULL. The first registration
 * of a name gives the family its kind and help text. A handle is valid
 * until tl_metrics_reset(); NULL (registry full or out of memory) is a
 * valid handle that counts nothing. */
enum tl_metric_kind { TL_METRIC_COUNTER, TL_METRIC_GAUGE, TL_METRIC_HISTOGRAM };

struct tl_metric;

struct tl_metric *tl_metric_new(const char *name, const char *labels, enum tl_metric_kind kind,
				const char *help);
static inline void tl_metric_inc(struct tl_metric *m, uint64_t delta);
static inline void tl_metric_put(struct tl_metric *m, int64_t value);
int64_t tl_metric_value(const struct tl_metric *m);
/* The handle's value cell itself (*cell += n), NULL as tl_metric_new. */
int64_t *tl_metric_cell(const char *name, const char *labels, enum tl_metric_kind kind);

/* By name, for a family whose series are made as they come (labels from
 * data): registers on first use. */
void tl_metric_describe(const char *name, enum tl_metric_kind kind, const char *help);
void tl_metric_add(const char *name, const char *labels, uint64_t delta);
void tl_metric_set(const char *name, const char *labels, int64_t value);
/* Current value (0 when never set): tests and tools. */
int64_t tl_metric_get(const char *name, const char *labels);
/* A family holds at most 256 series unless told otherwise here (a family
 * whose labels come from data is bounded by its caller, who knows how
 * many it makes); a series past the limit is not made (its handle is
 * NULL). */
void tl_metric_limit(const char *name, unsigned max_series);

/* A histogram series of the family name: bounds are the buckets' upper
 * bounds, finite and ascending (copied); the +Inf bucket is implied. The
 * exposition has, per series, name_bucket{LABELS,le="B"} for every bound
 * and "+Inf" (cumulative counts), name_sum and name_count. NULL as
 * tl_metric_new; -EINVAL-like misuse (bounds not ascending, none) also
 * gives NULL. A second call with the same name and labels returns the
 * same series (its bounds stay the first call's). */
struct tl_histogram;
struct tl_histogram *tl_histogram_new(const char *name, const char *labels, const double *bounds,
				      size_t n_bounds, const char *help);
/* Counts v in its bucket (the first whose bound is >= v) and the sum. NaN
 * is not counted. Accepts NULL. */
void tl_histogram_observe(struct tl_histogram *h, double v);
/* Observations so far (0 for NULL): tests. */
uint64_t tl_histogram_count(const struct tl_histogram *h);

/* A label value as the exposition format writes it between quotes
 * (backslash, double quote and newline escaped), into dst[size]; a value
 * that does not fit is cut at a character boundary of the escaped form.
 * Returns dst. */
char *tl_metric_label_value(char *dst, size_t size, const char *v);

/* A bound on the values of a label that come from data (a workload, a
 * namespace): the first max distinct keys are admitted, and later keys
 * not (the caller counts them under an overflow value). Keys are copied. */
struct tl_label_set;
/* 0 and *ret, -EINVAL (max 0), -ENOMEM. */
int tl_label_set_new(size_t max, struct tl_label_set **ret);
void tl_label_set_free(struct tl_label_set *s); /* accepts NULL */
/* True when key is in the set, or was just added to it (fewer than max
 * keys); false when the set is full, or out of memory. */
bool tl_label_set_admit(struct tl_label_set *s, const char *key);
size_t tl_label_set_size(const struct tl_label_set *s);
/* Prometheus text exposition format 0.0.4. Returns 0 or -errno. */
int tl_metrics_render(FILE *out);
/* For tests: forgets every family (and invalidates every handle). */
void tl_metrics_reset(void);

/* A handle is its series' value cell. */
struct tl_metric {
	int64_t value;
};

static inline void tl_metric_inc(struct tl_metric *m, uint64_t delta)
{
	if (m)
		m->value += (int64_t)delta;
}

static inline void tl_metric_put(struct tl_metric *m, int64_t value)
{
	if (m)
		m->value = value;
}
