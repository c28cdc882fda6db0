/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* What a document's findings come to, as a typed record: termline-findings
 * (the child that computes them off the agent's loop) hands it to the agent
 * on a pipe, and the agent hands it to whatever follows a closed timeline
 * (the per-workload metrics, docs/export.md) so that neither the close nor
 * a start parses a document for it. Per rule, in the order of
 * TL_FINDING_RULES: how many findings, the failed requests they count, and
 * the failed requests each rule explains (each failed request once). */
#include <stddef.h>
#include <stdint.h>

struct json_object;
struct tl_model;

#define TL_FINDINGS_RULES_MAX 32

/* tl_findings_summary.flags */
#define TL_FS_TERMINATED 0x1 /* a deletion request or a SIGTERM was recorded */
#define TL_FS_SIGKILL 0x2    /* a container (not the sandbox) got SIGKILL */
#define TL_FS_COMPLETE 0x4   /* the document is complete */
#define TL_FS_LAG 0x8        /* removal_lag_ns is known */
#define TL_FS_EXPLAINED 0x10 /* rule[].explained and unexplained are known (not in
			      * a version 1 record) */

struct tl_findings_summary {
	uint32_t findings;        /* findings in the document */
	uint64_t failed_requests; /* tl_model_failed_requests() */
	uint32_t flags;           /* TL_FS_* */
	/* endpoint_removal_lag's numbers.lagS: the app stopped serving ->
	 * the endpoint out of every slice; negative when it left first */
	int64_t removal_lag_ns;
	/* Failed requests no finding counts. With the rules' explained, each
	 * failed request is in exactly one: they sum to failed_requests. */
	uint64_t unexplained;
	uint32_t n_rules; /* rules of this build (TL_FINDING_RULES) */
	struct {
		uint32_t findings;
		uint64_t failed_requests; /* the sum of its findings' numbers.failedRequests
					   * (a request may count under several rules) */
		uint64_t explained;       /* failed requests this rule explains: those
					   * its findings count that no finding before
					   * them in the document (most severe first) does */
	} rule[TL_FINDINGS_RULES_MAX];
};

/* The summary of findings (a document's "findings" array, in the
 * document's order) over the document whose model is m. A failed request
 * is explained by the first finding that lists its ID in requestIds;
 * what a finding counts beyond the IDs it lists (requests without an ID,
 * or past the list's bound) is taken, in the same order, from the failed
 * requests no finding listed. 0, -EINVAL (findings not an array) or
 * -ENOMEM. */
int tl_findings_summarize(struct json_object *findings, const struct tl_model *m,
			  struct tl_findings_summary *ret);

/* The record on the wire, little endian: "TLFS", version (u16), n_rules
 * (u16), findings (u32), failed_requests (u64); version 2 then has flags
 * (u32), removal_lag_ns (i64), unexplained (u64) and per rule findings
 * (u32), failed_requests (u64), explained (u64); version 1 has per rule
 * findings (u32) and failed_requests (u64) only. */
#define TL_FINDINGS_SUMMARY_MAX (40 + TL_FINDINGS_RULES_MAX * 20)
/* Bytes written into buf (at least TL_FINDINGS_SUMMARY_MAX): version 2. */
size_t tl_findings_summary_encode(const struct tl_findings_summary *s, uint8_t *buf);
/* Reads versions 1 and 2. 0, or -EBADMSG for anything but one whole
 * record. */
int tl_findings_summary_decode(const uint8_t *buf, size_t len, struct tl_findings_summary *ret);
