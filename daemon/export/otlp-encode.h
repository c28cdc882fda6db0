/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* A closed timeline document (schema/timeline.schema.json) as OTLP: one
 * trace per Pod in an ExportTraceServiceRequest, and optionally every event
 * (and finding) as a log record in an ExportLogsServiceRequest, encoded as
 * protobuf (http/protobuf) or OTLP/JSON (http/json). The mapping is
 * docs/export.md's table.
 *
 * Ids are derived from the Pod's UID and the document alone, so encoding
 * the same document again gives the same trace and span ids (a re-export is
 * idempotent for a backend that keys spans by id).
 *
 * Library code: no logging, no global state; the document is only read. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "otlp-config.h"
#include "otlp-opts.h"

struct json_object;

/* One ResourceSpans or ResourceLogs with at most piece_items spans or
 * records, encoded on its own so that pieces of several documents can be
 * joined into one request (tl_otlp_body()). protobuf: the request's field 1
 * (tag, length, message), so a piece alone is a whole request; json: the
 * ResourceSpans/ResourceLogs object. */
struct tl_otlp_piece {
	enum tl_otlp_signal signal;
	uint32_t items;
	size_t len;
	char data[];
};

struct tl_otlp_encoded {
	struct tl_otlp_piece **pieces; /* traces first, then logs */
	size_t n_pieces;
	uint8_t trace_id[16];
	/* What the pieces hold (tests, logs, the exporter's counts). */
	uint32_t spans, span_events, links, log_records;
	uint32_t request_spans;
	uint32_t requests_unexported; /* past TL_OTLP_MAX_REQUEST_SPANS */
	uint32_t events_dropped;      /* past TL_OTLP_MAX_SPAN_EVENTS */
};

/* Encodes doc. 0, -EINVAL (not a timeline document: no "events" array, or
 * no pod.uid), -ENOMEM. *ret is filled only on success. */
int tl_otlp_encode(struct json_object *doc, const struct tl_otlp_encode_opts *o,
		   struct tl_otlp_encoded *ret);
void tl_otlp_encoded_done(struct tl_otlp_encoded *e); /* accepts a zeroed one */

/* The body of one request holding these pieces (all of one signal): for
 * protobuf their concatenation (repeated fields concatenate), for JSON
 * {"resourceSpans":[...]} or {"resourceLogs":[...]}. 0 or -ENOMEM; *ret
 * malloc'd. */
int tl_otlp_body(enum tl_otlp_protocol p, enum tl_otlp_signal s,
		 struct tl_otlp_piece *const *pieces, size_t n, char **ret, size_t *ret_len);

/* A response body: how many spans (or records) the receiver says it
 * rejected (partial_success), 0 when none or unreadable. The message, if
 * any, into msg. */
int64_t tl_otlp_rejected(enum tl_otlp_protocol p, enum tl_otlp_signal s, const char *body,
			 size_t len, char *msg, size_t msglen);


const char *tl_otlp_content_type(enum tl_otlp_protocol p);
