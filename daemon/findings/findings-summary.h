/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* What a document's findings come to, as a typed record: termline-findings
 * (the child that computes them off the agent's loop) hands it to the agent
 * on a pipe, and the agent keeps it beside the closed document so that
 * neither the close nor a start parses a document for it. Per rule, in the
 * order of TL_FINDING_RULES: how many findings and how many failed
 * requests they count, the figures per-workload counts are made of. */
#include <stddef.h>
#include <stdint.h>

struct json_object;
struct tl_model;

#define TL_FINDINGS_RULES_MAX 32

struct tl_findings_summary {
	uint32_t findings;        /* findings in the document */
	uint64_t failed_requests; /* tl_model_failed_requests() */
	uint32_t n_rules;         /* rules of this build (TL_FINDING_RULES) */
	struct {
		uint32_t findings;
		uint64_t failed_requests; /* the sum of its findings' numbers.failedRequests */
	} rule[TL_FINDINGS_RULES_MAX];
};

/* The summary of findings (a document's "findings" array) over the
 * document whose model is m. 0 or -EINVAL (findings not an array). */
int tl_findings_summarize(struct json_object *findings, const struct tl_model *m,
			  struct tl_findings_summary *ret);

/* The record on the wire: "TLFS", version 1 (u16), n_rules (u16),
 * findings (u32), failed_requests (u64), then per rule findings (u32) and
 * failed_requests (u64); little endian. */
#define TL_FINDINGS_SUMMARY_MAX (4 + 2 + 2 + 4 + 8 + TL_FINDINGS_RULES_MAX * 12)
/* Bytes written into buf (at least TL_FINDINGS_SUMMARY_MAX). */
size_t tl_findings_summary_encode(const struct tl_findings_summary *s, uint8_t *buf);
/* 0, or -EBADMSG for anything but one whole record of this version. */
int tl_findings_summary_decode(const uint8_t *buf, size_t len, struct tl_findings_summary *ret);
