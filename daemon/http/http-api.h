/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* What the agent's HTTP API says and reads (docs/http-api.md,
 * docs/drain.md), apart from the server that carries it (http-server.c):
 * the JSON of its answers, made from the typed answers of the store and
 * of the drain agent, and the values of its parameters. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "drain-agent.h"
#include "timeline.h"

/* GET /v1/timelines: {"timelines":[{"namespace","name","uid","state",
 * "events","findings"}]} of the timelines f selects (NULL: all); detail
 * adds "owner", "deletion", "complete" and "failedRequests". New object in
 * *ret; 0 or -ENOMEM. */
int tl_http_list_json(struct tl_timelines *t, const struct tl_list_filter *f, bool detail,
		      struct json_object **ret);

/* The body of a drained wait's answer (docs/drain.md), with its newline;
 * malloc'd, NULL when out of memory. */
char *tl_http_drain_json(const struct tl_drain_answer *a, size_t *ret_len);

/* {"error": msg} (and "summary": msg with summary), malloc'd. */
char *tl_http_error_json(const char *msg, bool summary, size_t *ret_len);

/* A duration as the drained endpoint takes it: decimal digits, an
 * optional fraction, then "ms", "s" (the default) or "m"; nothing else (no
 * sign, exponent, hexadecimal or space), at most an hour. len bytes of s
 * (a NUL among them is refused). 0 or -EINVAL (*ret_ms untouched). */
int tl_http_parse_duration(const char *s, size_t len, int64_t *ret_ms);
