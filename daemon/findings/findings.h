/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Findings: what went wrong in one Pod's termination (or start-up), the
 * request IDs it cost, and the setting that would have avoided it, computed
 * from a timeline document (schema/timeline.schema.json). The agent writes
 * them into each closed timeline; kubectl-termline recomputes them. The
 * rules and their formulas are in docs/findings.md.
 *
 * Library code: no logging, no global state; the document is only read. */

struct json_object;

/* Every finding object has: "rule", "severity" ("error"|"warning"|"info"),
 * "summary", "requestIds" (array of strings), "numbers" (object: the
 * figures the finding rests on, seconds relative to the reference time
 * unless named otherwise), "recommendation" ({"setting", "value",
 * "formula"}), and "incomplete": true with the reason in the summary when
 * the timeline is not complete. Ordered most severe first, then by rule
 * (the order of TL_FINDING_RULES). */

/* Limits on what one document may hold for the rules (a peer can send any
 * document to the CLI); past them the extra items are ignored and every
 * finding says the timeline was truncated. */
#define TL_FINDINGS_MAX_CONTAINERS 64
#define TL_FINDINGS_MAX_REQUESTS 200000
#define TL_FINDINGS_MAX_IDS 1000 /* requestIds listed per finding; the count is in numbers */

/* Margin added to every observed window before rounding up to whole
 * seconds: the endpoint's removal reaches every node's dataplane some time
 * after the API server wrote it (nothing in Kubernetes measures it). */
#define TL_FINDINGS_MARGIN_S 1.0

/* How much later than its line says a request from an access log may have
 * ended: Envoy truncates its start to the millisecond and writes its
 * duration in whole milliseconds. */
#define TL_FINDINGS_LOG_RESOLUTION_NS (2 * 1000000LL)

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

/* ---- the model the rules read, also used by the CLI's renderers ---- */

struct tl_req {
	const char *id; /* requestId, NULL when none */
	const char *method, *path, *flags, *container, *source;
	int64_t start_ns, end_ns;
	int64_t slack_ns; /* TL_FINDINGS_LOG_RESOLUTION_NS for a log record */
	int status; /* 0 = no response */
	bool inbound;
	bool failed; /* no response, 5xx, or an Envoy failure flag */
	bool dup;    /* a failed request whose ID an earlier failed one has
		      * (the same request on a socket and in the log) */
	int ctr;     /* index into containers, -1 when unknown */
	/* The connection (http.request's peer, conn, connStart, connClose):
	 * peer NULL and the rest 0 in documents without them. */
	const char *peer;
	int64_t conn;
	int64_t conn_start_ns;
	bool conn_close;
};

struct tl_ctr {
	const char *name; /* never NULL: "(unknown)" when the document has none */
	const char *role; /* "main", "sidecar", "init" or NULL */
	bool sandbox;
	int64_t sigterm_ns; /* first SIGTERM (0 = none) */
	int sigterm_pid;
	bool sigterm_ignored;
	int64_t sigkill_ns; /* first SIGKILL to its main process (0 = none) */
	int64_t listen_ns;  /* first socket.listen (0 = none) */
	int listen_port;
	int64_t
	    listen_closed_ns; /* first socket.listen_closed at or after the reference (0 = none) */
	int listen_closed_port;
	int64_t exit_ns; /* exit of the process that got SIGTERM, else its last exit */
	int exit_code, exit_signal;
	int resets; /* tcp.reset_* after the reference */
};

struct tl_model {
	struct json_object *doc;
	bool complete;
	char incomplete_why[160]; /* "" when complete */
	const char *ns, *name;
	int grace_s;	      /* -1 unknown */
	int64_t deletion_ns;  /* 0 = no pod.deletion_requested */
	int64_t ref_ns;	      /* deletion, else first SIGTERM, else first event */
	const char *ref_what; /* "deletion", "first SIGTERM", "first event" */
	int64_t ready_false_ns, serving_false_ns, removed_ns, deleted_ns;
	int slices_seen, slices_removed;
	int64_t first_ns, last_ns;
	struct tl_ctr ctr[TL_FINDINGS_MAX_CONTAINERS];
	size_t n_ctr;
	struct tl_req *reqs; /* sorted by start */
	size_t n_req;
	size_t n_failed;
	bool truncated;
};

/* ---- consumers (findings-consumers.c, docs/findings.md) ---- */

/* The rules over who sent the Pod traffic (the peers of its requests). */
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

/* Builds the model (borrowing strings from doc, which must outlive it).
 * 0, -EINVAL, -ENOMEM. */
int tl_model_build(struct json_object *doc, struct tl_model *m);
void tl_model_done(struct tl_model *m);
/* Index of the container named name, or -1. */
int tl_model_ctr(const struct tl_model *m, const char *name);
/* The event's time (ns since the epoch), 0 when missing or bad. */
int64_t tl_event_time(struct json_object *ev);
