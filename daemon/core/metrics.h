/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
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
enum tl_metric_kind { TL_METRIC_COUNTER, TL_METRIC_GAUGE };

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
