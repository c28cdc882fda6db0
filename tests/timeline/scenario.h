/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "event.h"
#include "loop.h"
#include "timeline.h"

/* Shared by the timeline tests and the sample writer: events of every
 * kind of docs/timeline-format.md with plausible fields, Pod metadata, loop
 * helpers. */
#define SCN_S 1000000000LL

/* Fills ev (initialised here) with a valid event of type at time t. */
int scn_event(struct tl_event *ev, const char *uid, const char *type, int64_t t);
/* Adds one event of type; 0 or -errno. */
int scn_add(struct tl_timelines *t, const char *uid, const char *type, int64_t time);
/* {"pod":{...},"containers":[app (main), istio-proxy (sidecar)]}. */
struct json_object *scn_meta(const char *ns, const char *name, const char *uid);
/* m (scn_meta's JSON, the journal record's form) as the typed metadata
 * through tl_timelines_set_pod_meta(). */
int scn_set_meta(struct tl_timelines *t, const char *uid, struct json_object *m);
/* A whole termination, one event of each required type (pod.deleted last
 * only when with_deleted), added out of time order. Returns the number of
 * distinct events added. */
int scn_termination(struct tl_timelines *t, const char *uid, int64_t t0, bool with_deleted);

/* Runs the loop until pred(ud) or 60 s passed. */
bool scn_run_until(struct tl_loop *loop, bool (*pred)(void *ud), void *ud);

/* Temp directory under TMPDIR; caller frees. */
char *scn_tmpdir(void);
void scn_rm_rf(const char *path);
/* Runs /usr/bin/python3 tests/timeline/validate.py on path (file or dir);
 * returns its exit status (0 = every document valid). */
int scn_validate(const char *path);
/* Writes a document string to dir/name so it can be validated. */
int scn_write(const char *dir, const char *name, const char *data, size_t len);
