/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "findings-model.h"

/* Findings: what went wrong in one Pod's termination (or start-up), the
 * request IDs it cost, and the setting that would have avoided it, computed
 * from a timeline document (schema/timeline.schema.json). The agent writes
 * them into each closed timeline; kubectl-termline recomputes them. The
 * rules and their formulas are in docs/findings.md.
 *
 * Library code: no logging, no global state; the document is only read. */

/* Every finding object has: "rule", "severity" ("error"|"warning"|"info"),
 * "summary", "requestIds" (array of strings), "numbers" (object: the
 * figures the finding rests on, seconds relative to the reference time
 * unless named otherwise), "recommendation" ({"setting", "value",
 * "formula"}), and "incomplete": true with the reason in the summary when
 * the timeline is not complete. Ordered most severe first, then by rule
 * (the order of TL_FINDING_RULES). */

/* Computes the findings of doc (a parsed timeline document). On success
 * *ret is a new json array (caller puts it), possibly empty. -EINVAL when
 * doc is not a timeline document (no "events" array), -ENOMEM. */
int tl_findings_compute(struct json_object *doc, struct json_object **ret);

/* tl_findings_compute(), then replaces doc's "findings" with the result:
 * what the agent calls on a timeline as it closes, before writing it. */
int tl_findings_attach(struct json_object *doc);

/* For a store that writes documents as text (streamed, not as a json-c
 * tree): parses the document text (at most len bytes; its "findings", if
 * any, are ignored) and computes the findings from it. -EBADMSG when the
 * text is not JSON, else as tl_findings_compute(). */
int tl_findings_from_text(const char *text, size_t len, struct json_object **ret);

/* A finding's severity as a rank: error 3, warning 2, info 1, else 0. */
int tl_finding_severity_rank(const char *severity);

/* The rule names, in order of evaluation (and of output at equal severity). */
extern const char *const TL_FINDING_RULES[];

