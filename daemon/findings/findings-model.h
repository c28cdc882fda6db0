/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* A timeline document read into the few facts the finding rules need
 * (findings.h), also used by the CLI's renderers: per container its
 * signals, listener and exit; the endpoint's way out of the slices; the
 * HTTP requests. Library code: no logging, no global state; the document
 * is only read. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct json_object;

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

/* What a timeline without a preStop cannot show of one: the kubelet's
 * signal after the hook and the container's reaction to it (tens of
 * milliseconds where measured, tools/termline-demo). A sidecar whose drain
 * outlasts the hook and the container's serving by less is told to stay
 * longer (recommendation.sidecar, docs/findings.md). */
#define TL_FINDINGS_HOOK_SLACK_S 0.5

/* How much later than its line says a request from an access log may have
 * ended: Envoy truncates its start to the millisecond and writes its
 * duration in whole milliseconds. */
#define TL_FINDINGS_LOG_RESOLUTION_NS (2 * 1000000LL)

struct tl_req {
	const char *id; /* requestId, NULL when none */
	const char *method, *path, *flags, *container, *source;
	int64_t start_ns, end_ns;
	int64_t slack_ns; /* TL_FINDINGS_LOG_RESOLUTION_NS for a log record */
	int status; /* 0 = no response */
	int grpc;   /* grpcStatus, -1 none */
	const char *error; /* why the exchange did not complete (kernel source), NULL */
	bool inbound;
	bool failed; /* tl_http_failed() */
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

/* Builds the model (borrowing strings from doc, which must outlive it).
 * 0, -EINVAL, -ENOMEM. */
int tl_model_build(struct json_object *doc, struct tl_model *m);
void tl_model_done(struct tl_model *m);
/* Index of the container named name, or -1. */
int tl_model_ctr(const struct tl_model *m, const char *name);
/* The event's time (ns since the epoch), 0 when missing or bad. */
int64_t tl_event_time(struct json_object *ev);

/* A failed request, the one rule every count of them follows (the
 * findings, the HTTP/2 ones too, their summary, /v1/timelines, the CLI;
 * docs/findings.md, "failed request"): a proxy failure flag; then a gRPC
 * call by its grpcStatus (anything but 0 OK failed, whatever the HTTP
 * status: gRPC answers its errors with 200); else no response, a 5xx, or
 * an exchange that did not complete (error: a stream reset, refused or cut
 * by its connection's end). flags and error may be NULL; grpc -1: none. */
bool tl_http_failed(int status, int grpc, const char *flags, const char *error);
/* The same of an http.request event of a document. */
bool tl_http_event_failed(struct json_object *ev);

/* A request seen both on its socket and in the proxy's log counts once. */
static inline bool tl_req_failed_once(const struct tl_req *r)
{
	return r->failed && !r->dup;
}
uint64_t tl_model_failed_requests(const struct tl_model *m);
/* The same of a document: 0 and *ret, or -EINVAL (not a timeline
 * document), -ENOMEM. */
int tl_findings_failed_requests(struct json_object *doc, uint64_t *ret);
