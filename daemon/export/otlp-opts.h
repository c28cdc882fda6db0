/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* What an encoding is asked for, and its limits: shared by the encoder's
 * entry (otlp-encode.h) and its inside (otlp-int.h), which sits below it. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "otlp-config.h"

enum tl_otlp_signal {
	TL_OTLP_TRACES = 0,
	TL_OTLP_LOGS = 1,
};

/* Limits on what one document becomes (past them: counted, not sent). */
#define TL_OTLP_MAX_REQUEST_SPANS 20000 /* failed requests first, then in order */
#define TL_OTLP_MAX_SPAN_EVENTS 4096	/* per span: dropped_events_count */
#define TL_OTLP_MAX_ATTRS 64		/* per span, event, record, resource */
#define TL_OTLP_MAX_STR 8192		/* bytes of one string value (cut on a character) */
#define TL_OTLP_MAX_IDS 1000		/* request IDs listed on a finding's event */
#define TL_OTLP_DEFAULT_PIECE_ITEMS 512

struct tl_otlp_encode_opts {
	enum tl_otlp_protocol protocol;
	bool logs;		  /* also the log records */
	const char *service_name; /* NULL: "termline" */
	const struct tl_otlp_attr *resource_attrs;
	size_t n_resource_attrs;
	uint32_t piece_items; /* spans or records per piece; 0: TL_OTLP_DEFAULT_PIECE_ITEMS */
};

/* The trace id of a Pod UID: the UUID's 16 bytes when uid is one (the
 * trace id is then the UID without its dashes), else the first 16 bytes
 * of SHA-256("termline trace " uid). */
void tl_otlp_trace_id(const char *uid, uint8_t ret[16]);
