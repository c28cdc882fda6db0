/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "kube-http.h"
#include "kube-creds.h"
#include "kubeconfig.h"
#include "loop.h"

/* A reflector for one resource, in the manner of client-go's: LIST with
 * paging, then WATCH from the list's resourceVersion with bookmarks;
 * clean EOF -> watch again from the last version; 410 (HTTP or an ERROR
 * event) -> LIST again; 401 -> fresh credentials; 429/5xx/transport ->
 * capped exponential backoff with jitter (Retry-After honoured).
 *
 * The consumer owns the cache. A LIST (first or re-) is delivered as
 * list_begin, list_item for every object, list_end once the last page
 * arrived: the consumer diffs each item against its cache and, at
 * list_end, treats whatever it did not see as deleted. A LIST that fails
 * after some pages starts over with a new list_begin (the abandoned one gets
 * no list_end). */
struct tl_reflector;

struct tl_reflector_ops {
	void (*list_begin)(void *userdata, bool initial);
	void (*list_item)(void *userdata, struct json_object *obj, bool initial);
	void (*list_end)(void *userdata, bool initial);
	/* type: "ADDED", "MODIFIED" or "DELETED"; obj has metadata.uid */
	void (*event)(void *userdata, const char *type, struct json_object *obj);
};

struct tl_reflector_config {
	const char *resource; /* metrics label: "pods", "endpointslices" */
	const char *path;     /* "/api/v1/pods" */
	const char *query;    /* selectors, already escaped ("fieldSelector=..."), or NULL */
	unsigned page_limit;  /* LIST limit; 0 = 500 */
};

/* Counters kept per reflector (also exported through metrics.h). */
struct tl_reflector_stats {
	uint64_t lists, relists, watches, restarts, events, bookmarks, malformed, errors;
};

/* kc (where the API server is) and auth (its credentials, kept fresh)
 * must outlive the reflector. */
int tl_reflector_new(struct tl_loop *loop, struct tl_khttp *http, const struct tl_kubeconfig *kc,
		     struct tl_kube_auth *auth, const struct tl_reflector_config *cfg,
		     const struct tl_reflector_ops *ops, void *userdata, struct tl_reflector **ret);
/* Starts the first LIST (from the loop, on the next iteration). */
int tl_reflector_start(struct tl_reflector *r);
void tl_reflector_free(struct tl_reflector *r);
/* The first complete LIST has been delivered. */
bool tl_reflector_synced(const struct tl_reflector *r);
const struct tl_reflector_stats *tl_reflector_stats(const struct tl_reflector *r);
/* Last error, for logs ("" when none). */
const char *tl_reflector_last_error(const struct tl_reflector *r);

/* Backoff: the delay before attempt n (0-based) with jitter from rnd in
 * [0,1): equal jitter in [d/2, d), d = min(cap, base << n). For tests. */
uint64_t tl_backoff_delay_ms(unsigned attempt, uint64_t base_ms, uint64_t cap_ms, double rnd);
