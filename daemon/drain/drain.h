/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The drained condition of a Pod (docs/drain.md), as a pure state machine
 * over facts: no clock, no I/O, no allocation. Every fact carries its own
 * time (UTC ns); evaluation is asked at a given "now". A Pod is drained when
 *  (a) its deletion was requested,
 *  (b) in every EndpointSlice that listed it, its endpoint is gone, not
 *      serving, or terminating and not ready (out of rotation), and
 *  (c) no inbound connection, and no inbound request where requests are
 *      captured, arrived for `quiet` after (a) and (b) first held together. */

#define TL_DRAIN_MAX_SLICES 16
#define TL_DRAIN_NAME_MAX 254

enum tl_drain_cond {
	TL_DRAIN_MET = 0,          /* drained */
	TL_DRAIN_NO_DELETION = 1,  /* (a) unmet */
	TL_DRAIN_IN_ROTATION = 2,  /* (b) unmet: some slice still routes to it */
	TL_DRAIN_TRAFFIC = 3,      /* (c) unmet: traffic too recent */
};

struct tl_drain_slice {
	char name[TL_DRAIN_NAME_MAX];
	char service[TL_DRAIN_NAME_MAX];
	bool present, ready, serving, terminating;
	int64_t changed_ns; /* when this state was observed */
};

struct tl_drain_state {
	int64_t deletion_ns; /* 0 = not requested */
	struct tl_drain_slice slices[TL_DRAIN_MAX_SLICES];
	size_t nslices;
	uint64_t slices_ignored; /* beyond TL_DRAIN_MAX_SLICES, all still listing it */
	uint64_t connections;    /* inbound connections seen since tracking began */
	int64_t last_connection_ns;
	uint64_t requests;       /* inbound requests seen (request capture) */
	int64_t last_request_ns;
};

struct tl_drain_verdict {
	enum tl_drain_cond unmet;  /* TL_DRAIN_MET when drained */
	/* When (a) and (b) held together (the later of the two); 0 if not yet. */
	int64_t out_of_rotation_ns;
	/* When the quiet window starts: the latest of out_of_rotation_ns and
	 * the last connection/request. 0 while (a) or (b) is unmet. */
	int64_t quiet_since_ns;
	/* When the Pod becomes drained if no new fact arrives; 0 when it
	 * waits for a fact (deletion, endpoint change). */
	int64_t drained_at_ns;
	const char *slice;         /* TL_DRAIN_IN_ROTATION: a slice still routing */
};

void tl_drain_state_init(struct tl_drain_state *s);

/* Facts. Times are UTC ns since the epoch. A fact older than the state it
 * would change is still applied (facts arrive in observation order). */
void tl_drain_fact_deletion(struct tl_drain_state *s, int64_t t);
/* The endpoint as listed in slice (name unique per namespace). 0, or
 * -EINVAL (empty or too long name), -ENOSPC (too many slices: counted in
 * slices_ignored and held in rotation, see tl_drain_evaluate). */
int tl_drain_fact_endpoint(struct tl_drain_state *s, const char *slice, const char *service,
			   bool ready, bool serving, bool terminating, int64_t t);
int tl_drain_fact_endpoint_removed(struct tl_drain_state *s, const char *slice, int64_t t);
void tl_drain_fact_connection(struct tl_drain_state *s, uint64_t count, int64_t t);
void tl_drain_fact_request(struct tl_drain_state *s, int64_t t);

/* Whether the endpoint in this slice still receives new connections from
 * Services: listed, serving, and ready or not terminating. */
bool tl_drain_slice_in_rotation(const struct tl_drain_slice *sl);

void tl_drain_evaluate(const struct tl_drain_state *s, int64_t now_ns, int64_t quiet_ns,
		       struct tl_drain_verdict *ret);

/* "deletion", "endpoint", "traffic" (the condition still unmet) or "none". */
const char *tl_drain_cond_name(enum tl_drain_cond c);
