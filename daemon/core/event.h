/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

/* One recorded fact, from whichever source. Producers fill what they know and
 * hand the event to the sink (struct tl_emitter); attribution (pod UID,
 * container name) is completed there. Type names and fields are the timeline
 * contract of DESIGN.md: see schema/timeline.schema.json. */
enum tl_source { TL_SRC_API = 0, TL_SRC_KERNEL = 1, TL_SRC_LOG = 2 };

#define TL_UID_MAX 64
#define TL_CONTAINER_ID_MAX 96
#define TL_NAME_MAX 254
#define TL_TYPE_MAX 40

struct tl_event {
	int64_t time_ns;                       /* UTC, ns since the epoch */
	enum tl_source source;
	char type[TL_TYPE_MAX];                /* "process.signal", ... */
	char pod_uid[TL_UID_MAX];              /* "" when unknown */
	char container_id[TL_CONTAINER_ID_MAX]; /* bare runtime id (hex), "" when unknown */
	char container[TL_NAME_MAX];           /* container name, "" when unknown */
	uint64_t cgroup_id;                    /* kernel events: the cgroup v2 inode; else 0 */
	struct json_object *fields;            /* type-specific fields; owned; never NULL after init */
};

/* Zeroes ev and gives it an empty fields object. 0 or -ENOMEM. */
int tl_event_init(struct tl_event *ev, enum tl_source source, const char *type, int64_t time_ns);
/* Releases fields; accepts a zeroed event. */
void tl_event_clear(struct tl_event *ev);
/* Deep copy into *ret (initialised by this call). */
int tl_event_copy(const struct tl_event *src, struct tl_event *ret);

const char *tl_source_name(enum tl_source s);
int tl_source_parse(const char *s, enum tl_source *ret);

/* Field helpers; return 0 or -ENOMEM. A NULL string adds JSON null. */
int tl_event_set_str(struct tl_event *ev, const char *key, const char *val);
int tl_event_set_int(struct tl_event *ev, const char *key, int64_t val);
int tl_event_set_bool(struct tl_event *ev, const char *key, bool val);

/* The timeline's event object: {"time","source","type","container", fields...};
 * with_ids adds "podUid" and "containerId" (null when unknown), as in
 * --emit-events and the journal. New reference or NULL. */
struct json_object *tl_event_to_json(const struct tl_event *ev, bool with_ids);
/* Inverse of tl_event_to_json (with or without ids). 0 or -EINVAL. */
int tl_event_from_json(struct json_object *obj, struct tl_event *ret);

/* Producers emit through this; the callee takes ownership of ev->fields
 * (and leaves ev cleared). */
struct tl_emitter {
	void (*emit)(void *userdata, struct tl_event *ev);
	void *userdata;
};
static inline void tl_emit(const struct tl_emitter *e, struct tl_event *ev)
{
	e->emit(e->userdata, ev);
}
