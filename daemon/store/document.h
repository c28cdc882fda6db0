/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The timeline document (schema/timeline.schema.json,
 * docs/timeline-format.md) written from a timeline's state, in chunks, so
 * that a GET streams it and a close writes it without holding it whole. */
#include <stdbool.h>
#include <stddef.h>

#include "state.h"
#include "tl-buf.h"

/* Recorder provenance, shared by every document of a store. */
struct doc_recorder {
	char *agent_version, *node, *kernel, *config_digest;
	char **probes;
	size_t n_probes;
};

/* Where a document being written stands (zeroed = at the start). */
struct doc_cursor {
	int phase; /* 0 head, 1 events, 2 tail, 3 done */
	size_t i;  /* next event */
};

/* Appends the document from cur on to out until out holds chunk bytes or
 * more (0: all of it). Returns 1 while more remains, 0 when done, or a
 * negative errno. */
int doc_write(const struct tl_state *s, const struct doc_recorder *rec, struct doc_cursor *cur,
	      struct tl_buf *out, size_t chunk);
