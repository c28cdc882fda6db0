/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The OTLP exporter: closed timeline documents in, OTLP/HTTP requests out,
 * on the daemon's loop (curl's multi-socket API, core/curl-multi.h). Never
 * blocks the loop and never holds more than the queue's bound:
 *
 * - a document is encoded when it is handed over (otlp-encode.h) and its
 *   pieces wait for up to TL_OTLP_BATCH_DELAY_MS to share a request with
 *   other documents' (at most TL_OTLP_BATCH_ITEMS spans or records a
 *   request);
 * - requests go out one at a time, in order; 429, 502, 503, 504 and
 *   transport errors (refused, reset, timed out) are retried with
 *   exponential backoff and jitter, or after the answer's Retry-After;
 *   any other answer is final (a 400 is not retried);
 * - what does not fit in the queue (queue_bytes) is dropped, what still
 *   fails after TL_OTLP_RETRY_MAX_ELAPSED_MS of retries is failed: both are
 *   counted, and the document on disk remains the record.
 *
 * Counts are in struct tl_otlp_stats; tl_otlp_metrics_write() prints them
 * as Prometheus text. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "loop.h"
#include "otlp-config.h"
#include "otlp-encode.h"

#define TL_OTLP_BATCH_DELAY_MS 1000
#define TL_OTLP_BATCH_ITEMS 512
#define TL_OTLP_RETRY_INITIAL_MS 1000
#define TL_OTLP_RETRY_MAX_MS 30000
#define TL_OTLP_RETRY_MAX_ELAPSED_MS 300000
#define TL_OTLP_RETRY_AFTER_MAX_S 300
#define TL_OTLP_MAX_DOC_BYTES (256ULL << 20)
#define TL_OTLP_MAX_PENDING_DOCS 1024

/* termline-otlp next to this program (the build tree's daemon/export/,
 * or bin/ beside sbin/), else in PATH's usual place; NULL when none. */
char *tl_otlp_helper_find(void);

struct tl_otlp_stats {
	/* per signal: [TL_OTLP_TRACES] spans, [TL_OTLP_LOGS] log records */
	uint64_t sent[2];    /* accepted by the receiver */
	uint64_t failed[2];  /* refused (non-retryable answer, partial success), or
			      * still failing when the retries ran out */
	uint64_t dropped[2]; /* never sent: the queue was full, or the agent stopped */
	uint64_t queued[2];  /* waiting now (gauge) */
	uint64_t requests;   /* requests that got an answer or a transport error */
	uint64_t retries;
	uint64_t documents;	  /* documents encoded */
	uint64_t document_errors; /* unreadable, not a timeline document, too large,
				   * or more waiting than TL_OTLP_MAX_PENDING_DOCS */
	uint64_t queue_bytes;	  /* bytes waiting now (gauge) */
};

/* What happened to one request (or one document that never became one),
 * for the caller's log. */
struct tl_otlp_report {
	enum tl_otlp_signal signal;
	enum {
		TL_OTLP_SENT,	  /* accepted (rejected: how many it refused) */
		TL_OTLP_RETRYING, /* will be tried again in retry_ms */
		TL_OTLP_FAILED,	  /* given up */
		TL_OTLP_DROPPED,  /* not queued: over queue_bytes */
		TL_OTLP_BAD_DOC,  /* a document that could not be read or encoded */
	} what;
	uint32_t items;
	int64_t rejected;
	long status;	  /* HTTP status, 0 when none came */
	const char *error; /* transport error or the start of the answer's body */
	uint32_t retry_ms;
	const char *label; /* the documents: "NS/NAME" or a path, "+N" when more */
};

struct tl_otlp_exporter;

/* What became of a document added with a key (tl_otlp_exporter_add_doc). */
enum tl_otlp_doc_outcome {
	TL_OTLP_DOC_SENT,     /* every request carrying it was answered 2xx (rejections
			       * a partial success names are counted failed) */
	TL_OTLP_DOC_NOT_SENT, /* dropped (the queue was full, the exporter freed), refused,
			       * or still failing when the retries ran out */
	TL_OTLP_DOC_BAD,      /* it cannot be read or encoded (another try fails too) */
};

struct tl_otlp_exporter_opts {
	/* termline-otlp: documents added by path are encoded by it ("pieces"),
	 * a child process, off the loop (parsing a document of 20000 requests
	 * takes ~0.3 s); NULL encodes in this process. */
	const char *helper;
	uint32_t batch_delay_ms; /* 0: TL_OTLP_BATCH_DELAY_MS */
	uint32_t retry_initial_ms, retry_max_ms, retry_max_elapsed_ms; /* 0: defaults */
	/* Called on the loop after each report and change of the counts. */
	void (*report)(void *ud, const struct tl_otlp_report *r, const struct tl_otlp_stats *s);
	/* Called once per document added with a key, with what became of
	 * it: from inside tl_otlp_exporter_add_doc() when it is settled at
	 * once, from the loop later, or from tl_otlp_exporter_free(). */
	void (*document_done)(void *ud, const char *key, enum tl_otlp_doc_outcome outcome);
	void *ud;
};

/* cfg is copied; cfg->enabled must be true. */
int tl_otlp_exporter_new(struct tl_loop *loop, const struct tl_otlp_config *cfg,
			 const struct tl_otlp_exporter_opts *opts, struct tl_otlp_exporter **ret);
/* Stops at once: what is queued or in flight is counted as dropped.
 * Accepts NULL. */
void tl_otlp_exporter_free(struct tl_otlp_exporter *x);

/* A timeline document was closed: text (len bytes) is its content, or
 * NULL to read it from path (with a helper: the helper reads it, one
 * document at a time, at most TL_OTLP_MAX_PENDING_DOCS waiting). path names
 * it in reports (may be NULL with text). 0 once queued (or counted as
 * dropped or bad: reported), -ENOMEM. */
int tl_otlp_exporter_add(struct tl_otlp_exporter *x, const char *path, const char *text,
			 size_t len);
/* The document at path (read as tl_otlp_exporter_add with text NULL),
 * reported by its key through document_done, once. 0, or -EINVAL,
 * -ENOMEM (reported too). */
int tl_otlp_exporter_add_doc(struct tl_otlp_exporter *x, const char *path, const char *key);
/* The same with a parsed document (only read). */
int tl_otlp_exporter_add_json(struct tl_otlp_exporter *x, const char *label,
			      struct json_object *doc);
/* Sends what waits for its batch delay now. */
void tl_otlp_exporter_flush(struct tl_otlp_exporter *x);
/* Nothing queued, waiting or in flight. */
bool tl_otlp_exporter_idle(const struct tl_otlp_exporter *x);
void tl_otlp_exporter_stats(const struct tl_otlp_exporter *x, struct tl_otlp_stats *ret);

/* The counts as Prometheus text (HELP, TYPE, samples), names in
 * docs/export.md: termline_otlp_spans_{sent,failed,dropped}_total,
 * termline_otlp_log_records_{sent,failed,dropped}_total,
 * termline_otlp_retries_total, termline_otlp_requests_total,
 * termline_otlp_documents_total, termline_otlp_document_errors_total,
 * termline_otlp_queue_length{signal}, termline_otlp_queue_bytes. 0 or
 * -EIO. */
int tl_otlp_metrics_write(const struct tl_otlp_stats *s, FILE *out);
/* The same counts into the agent's registry (core/metrics.h), described
 * on the first call: what termlined's /metrics serves. */
void tl_otlp_metrics_publish(const struct tl_otlp_stats *s);
