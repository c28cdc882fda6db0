/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdint.h>
#include <stdio.h>

/* Process-wide Prometheus registry (single-threaded daemon, no locks).
 * name is the full metric name ("termline_events_total"); labels is the
 * label set without braces ('type="process.exit",source="kernel"') or NULL.
 * The first call for a name registers it with help text and kind. */
enum tl_metric_kind { TL_METRIC_COUNTER, TL_METRIC_GAUGE };

void tl_metric_describe(const char *name, enum tl_metric_kind kind, const char *help);
void tl_metric_add(const char *name, const char *labels, uint64_t delta);
void tl_metric_set(const char *name, const char *labels, int64_t value);
/* The value cell of one series, for a hot path that counts per event
 * without looking the series up each time: *cell += n. Valid until
 * tl_metrics_reset(); NULL when the registry is full or out of memory. */
int64_t *tl_metric_cell(const char *name, const char *labels, enum tl_metric_kind kind);
/* Current value (0 when never set). */
int64_t tl_metric_get(const char *name, const char *labels);
/* Prometheus text exposition format 0.0.4. Returns 0 or -errno. */
int tl_metrics_render(FILE *out);
/* For tests. */
void tl_metrics_reset(void);
