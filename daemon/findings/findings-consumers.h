/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "findings-model.h"

/* Who was still sending: the rules over the consumers of a terminating Pod
 * (the peers of its inbound requests and accepted connections), the
 * slowest one's last request for the preStop recommendations, and the
 * rollout's aggregate of consumers over many timelines. docs/findings.md.
 * Library code: no logging, no global state; the document is only read. */

struct json_object;

/* traffic_after_endpoint_removed and keepalive_across_drain: 0 (a finding
 * appended to out, or none) or -ENOMEM. */
int tl_rule_consumers(const struct tl_model *m, struct json_object *out);
int tl_rule_keepalive(const struct tl_model *m, struct json_object *out);
/* The consumer whose last request or connection came latest after the
 * endpoint's removal: 1 with its time and its name in who, 0 when none
 * sent after the removal (or nothing says who), -ENOMEM. */
int tl_consumers_slowest(const struct tl_model *m, int64_t *ret_ns, char *who, size_t len);
/* rollout: the consumers of many timelines' findings, by workload (or by
 * consumer when unresolved): Pods, timelines, lag p50/p99/max, requests
 * and failed. agg starts as a new empty object; done turns it into the
 * array to print (new reference, or NULL). */
int tl_consumers_rollout_add(struct json_object *agg, struct json_object *findings);
struct json_object *tl_consumers_rollout_done(struct json_object *agg);
