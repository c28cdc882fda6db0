/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP API's answers and parameters (http-api.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "http-api.h"

static struct json_object *str_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

static struct json_object *time_or_null(int64_t ns)
{
	char buf[TL_TIME_STRLEN];

	return ns > 0 ? json_object_new_string(tl_time_format(ns, buf)) : NULL;
}

/* ---- GET /v1/timelines ---- */

struct list {
	struct json_object *arr;
	bool detail;
};

static int list_item(void *ud, const struct tl_timeline_info *i)
{
	struct list *l = ud;
	struct json_object *o = json_object_new_object();

	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "namespace", str_or_null(i->ns));
	json_object_object_add(o, "name", str_or_null(i->name));
	json_object_object_add(o, "uid", json_object_new_string(i->uid));
	json_object_object_add(o, "state", json_object_new_string(i->open ? "open" : "closed"));
	json_object_object_add(o, "events", json_object_new_int64((int64_t)i->events));
	json_object_object_add(o, "findings", json_object_new_int64((int64_t)i->findings));
	if (l->detail) {
		struct json_object *owner = NULL;

		if (i->owner_kind || i->owner_name) {
			owner = json_object_new_object();
			if (!owner) {
				json_object_put(o);
				return -ENOMEM;
			}
			json_object_object_add(owner, "kind", str_or_null(i->owner_kind));
			json_object_object_add(owner, "name", str_or_null(i->owner_name));
		}
		json_object_object_add(o, "owner", owner);
		json_object_object_add(o, "deletion", time_or_null(i->deletion_ns));
		json_object_object_add(o, "complete", json_object_new_boolean(i->complete));
		json_object_object_add(o, "failedRequests", i->failed_requests >= 0
				       ? json_object_new_int64(i->failed_requests) : NULL);
	}
	if (json_object_array_add(l->arr, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	return 0;
}

int tl_http_list_json(struct tl_timelines *t, const struct tl_list_filter *f, bool detail,
		      struct json_object **ret)
{
	struct json_object *root = json_object_new_object();
	struct list l = { .arr = json_object_new_array(), .detail = detail };

	if (!root || !l.arr || json_object_object_add(root, "timelines", l.arr) < 0) {
		json_object_put(root);
		json_object_put(l.arr);
		return -ENOMEM;
	}
	if (tl_timelines_foreach(t, f, list_item, &l) < 0) {
		json_object_put(root);
		return -ENOMEM;
	}
	*ret = root;
	return 0;
}

/* ---- the drained wait ---- */

static char *to_body(struct json_object *o, size_t *ret_len)
{
	size_t len;
	const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	char *body = s ? malloc(len + 2) : NULL;

	if (body) {
		memcpy(body, s, len);
		body[len++] = '\n';
		body[len] = '\0';
		*ret_len = len;
	}
	return body;
}

char *tl_http_drain_json(const struct tl_drain_answer *a, size_t *ret_len)
{
	const struct tl_drain_state *st = a->st;
	struct json_object *o = json_object_new_object(), *eps = json_object_new_array();
	char *body;

	if (!o || !eps) {
		json_object_put(o);
		json_object_put(eps);
		return NULL;
	}
	json_object_object_add(o, "uid", json_object_new_string(a->uid));
	json_object_object_add(o, "drained", json_object_new_boolean(a->v.unmet == TL_DRAIN_MET));
	json_object_object_add(o, "unmet", json_object_new_string(tl_drain_cond_name(a->v.unmet)));
	json_object_object_add(o, "heldBy", json_object_new_string(a->held_by));
	json_object_object_add(o, "quietMs", json_object_new_int64(a->quiet_ms));
	json_object_object_add(o, "waitStarted", time_or_null(a->started_ns));
	json_object_object_add(o, "answered", time_or_null(a->answered_ns));
	json_object_object_add(o, "heldMs", json_object_new_int64((a->answered_ns - a->started_ns) / 1000000));
	json_object_object_add(o, "deletionRequested", time_or_null(st->deletion_ns));
	json_object_object_add(o, "outOfRotation", time_or_null(a->v.out_of_rotation_ns));
	for (size_t i = 0; i < st->nslices; i++) {
		const struct tl_drain_slice *sl = &st->slices[i];
		struct json_object *e = json_object_new_object();

		if (!e)
			continue;
		json_object_object_add(e, "endpointSlice", json_object_new_string(sl->name));
		json_object_object_add(e, "service", json_object_new_string(sl->service));
		json_object_object_add(e, "listed", json_object_new_boolean(sl->present));
		json_object_object_add(e, "ready", json_object_new_boolean(sl->ready));
		json_object_object_add(e, "serving", json_object_new_boolean(sl->serving));
		json_object_object_add(e, "terminating", json_object_new_boolean(sl->terminating));
		json_object_object_add(e, "inRotation", json_object_new_boolean(tl_drain_slice_in_rotation(sl)));
		json_object_object_add(e, "since", time_or_null(sl->changed_ns));
		json_object_array_add(eps, e);
	}
	json_object_object_add(o, "endpoints", eps);
	json_object_object_add(o, "connections", json_object_new_int64((int64_t)st->connections));
	json_object_object_add(o, "lastConnection", time_or_null(st->last_connection_ns));
	json_object_object_add(o, "requests", json_object_new_int64((int64_t)st->requests));
	json_object_object_add(o, "lastRequest", time_or_null(st->last_request_ns));
	json_object_object_add(o, "quietSince", time_or_null(a->v.quiet_since_ns));
	json_object_object_add(o, "drainedAt", time_or_null(a->v.unmet == TL_DRAIN_MET ? a->v.drained_at_ns : 0));
	json_object_object_add(o, "summary", json_object_new_string(a->summary));
	body = to_body(o, ret_len);
	json_object_put(o);
	return body;
}

char *tl_http_error_json(const char *msg, bool summary, size_t *ret_len)
{
	struct json_object *o = json_object_new_object();
	char *body;

	if (!o)
		return NULL;
	json_object_object_add(o, "error", json_object_new_string(msg));
	if (summary)
		json_object_object_add(o, "summary", json_object_new_string(msg));
	body = to_body(o, ret_len);
	json_object_put(o);
	return body;
}

/* ---- parameters ---- */

int tl_http_parse_duration(const char *s, size_t len, int64_t *ret_ms)
{
	int64_t whole = 0, frac = 0, scale = 1, mult;
	size_t i = 0, digits = 0;
	const char *unit;

	if (!s || len == 0 || len > 32 || memchr(s, '\0', len))
		return -EINVAL;
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
		if (++digits > 10) /* past an hour in any unit; no overflow */
			return -EINVAL;
		whole = whole * 10 + (s[i] - '0');
	}
	if (!digits)
		return -EINVAL;
	if (i < len && s[i] == '.') {
		size_t fd = 0;

		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, fd++) {
			if (scale < 1000000000) {
				frac = frac * 10 + (s[i] - '0');
				scale *= 10;
			}
		}
		if (!fd)
			return -EINVAL;
	}
	unit = s + i;
	if (len - i == 0 || (len - i == 1 && unit[0] == 's'))
		mult = 1000;
	else if (len - i == 2 && memcmp(unit, "ms", 2) == 0)
		mult = 1;
	else if (len - i == 1 && unit[0] == 'm')
		mult = 60000;
	else
		return -EINVAL;
	/* compared unrounded (whole * mult is at most 6e14 here) */
	if (whole * mult > TL_DRAIN_MAX_TIMEOUT_MS ||
	    whole * mult * scale + frac * mult > (int64_t)TL_DRAIN_MAX_TIMEOUT_MS * scale)
		return -EINVAL;
	*ret_ms = whole * mult + (frac * mult + scale / 2) / scale;
	return 0;
}
