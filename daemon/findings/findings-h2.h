/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include "findings-model.h"

/* HTTP/2 through a termination: the rules over a timeline's HTTP/2
 * connections, GOAWAYs, RST_STREAMs and gRPC calls (findings-h2.c,
 * docs/findings.md). Library code: no logging, no global state; the
 * document is only read. */

struct json_object;

/* no_goaway_before_close, streams_after_goaway, streams_reset_during_drain:
 * 0 (a finding appended to out, or none) or -ENOMEM. */
int tl_rule_h2_no_goaway(const struct tl_model *m, struct json_object *out);
int tl_rule_h2_after_goaway(const struct tl_model *m, struct json_object *out);
int tl_rule_h2_reset(const struct tl_model *m, struct json_object *out);
