/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "event.h"

static const char *const source_names[] = {
	[TL_SRC_API] = "api",
	[TL_SRC_KERNEL] = "kernel",
	[TL_SRC_LOG] = "log",
};

/* Keys the envelope owns; a type-specific field of the same name would be
 * ambiguous in the document, so fields never override them. */
static const char *const envelope_keys[] = {
	"time", "source", "type", "container", "podUid", "containerId",
};

const char *tl_source_name(enum tl_source s)
{
	if ((unsigned)s >= sizeof(source_names) / sizeof(source_names[0]))
		return "unknown";
	return source_names[s];
}

int tl_source_parse(const char *s, enum tl_source *ret)
{
	for (size_t i = 0; i < sizeof(source_names) / sizeof(source_names[0]); i++) {
		if (s && strcmp(s, source_names[i]) == 0) {
			*ret = (enum tl_source)i;
			return 0;
		}
	}
	return -EINVAL;
}

int tl_event_init(struct tl_event *ev, enum tl_source source, const char *type, int64_t time_ns)
{
	memset(ev, 0, sizeof(*ev));
	ev->fields = json_object_new_object();
	if (!ev->fields)
		return -ENOMEM;
	ev->source = source;
	ev->time_ns = time_ns;
	if (type)
		snprintf(ev->type, sizeof(ev->type), "%s", type);
	return 0;
}

void tl_event_clear(struct tl_event *ev)
{
	if (!ev)
		return;
	json_object_put(ev->fields);
	memset(ev, 0, sizeof(*ev));
}

int tl_event_copy(const struct tl_event *src, struct tl_event *ret)
{
	struct json_object *fields = NULL;

	if (src->fields && json_object_deep_copy(src->fields, &fields, NULL) < 0)
		return -ENOMEM;
	memcpy(ret, src, sizeof(*ret));
	ret->fields = fields ? fields : json_object_new_object();
	if (!ret->fields)
		return -ENOMEM;
	return 0;
}

static int set_field(struct tl_event *ev, const char *key, struct json_object *v, bool null_ok)
{
	if (!v && !null_ok)
		return -ENOMEM;
	if (json_object_object_add(ev->fields, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

int tl_event_set_str(struct tl_event *ev, const char *key, const char *val)
{
	return set_field(ev, key, val ? json_object_new_string(val) : NULL, !val);
}

int tl_event_set_int(struct tl_event *ev, const char *key, int64_t val)
{
	return set_field(ev, key, json_object_new_int64(val), false);
}

int tl_event_set_bool(struct tl_event *ev, const char *key, bool val)
{
	return set_field(ev, key, json_object_new_boolean(val), false);
}

static bool is_envelope_key(const char *key)
{
	for (size_t i = 0; i < sizeof(envelope_keys) / sizeof(envelope_keys[0]); i++)
		if (strcmp(key, envelope_keys[i]) == 0)
			return true;
	return false;
}

static struct json_object *str_or_null(const char *s)
{
	return s && *s ? json_object_new_string(s) : NULL;
}

struct json_object *tl_event_to_json(const struct tl_event *ev, bool with_ids)
{
	char tbuf[TL_TIME_STRLEN];
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "time", json_object_new_string(tl_time_format(ev->time_ns, tbuf)));
	json_object_object_add(o, "source", json_object_new_string(tl_source_name(ev->source)));
	json_object_object_add(o, "type", json_object_new_string(ev->type));
	json_object_object_add(o, "container", str_or_null(ev->container));
	if (with_ids) {
		json_object_object_add(o, "podUid", str_or_null(ev->pod_uid));
		json_object_object_add(o, "containerId", str_or_null(ev->container_id));
	}
	if (ev->fields) {
		json_object_object_foreach(ev->fields, key, val)
		{
			if (is_envelope_key(key))
				continue;
			json_object_object_add(o, key, json_object_get(val));
		}
	}
	return o;
}

static int copy_str(struct json_object *obj, const char *key, char *dst, size_t len)
{
	struct json_object *v;
	const char *s;

	if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null)) {
		dst[0] = '\0';
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	s = json_object_get_string(v);
	if (strlen(s) >= len)
		return -EINVAL;
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

int tl_event_from_json(struct json_object *obj, struct tl_event *ret)
{
	struct json_object *v;
	struct tl_event ev;
	enum tl_source src;
	int64_t t;

	if (!obj || !json_object_is_type(obj, json_type_object))
		return -EINVAL;
	if (!json_object_object_get_ex(obj, "time", &v) ||
	    tl_time_parse(json_object_get_string(v), &t) < 0)
		return -EINVAL;
	if (!json_object_object_get_ex(obj, "source", &v) ||
	    tl_source_parse(json_object_get_string(v), &src) < 0)
		return -EINVAL;
	if (!json_object_object_get_ex(obj, "type", &v) || !json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) == 0 || json_object_get_string_len(v) >= TL_TYPE_MAX)
		return -EINVAL;
	if (tl_event_init(&ev, src, json_object_get_string(v), t) < 0)
		return -ENOMEM;
	if (copy_str(obj, "container", ev.container, sizeof(ev.container)) < 0 ||
	    copy_str(obj, "podUid", ev.pod_uid, sizeof(ev.pod_uid)) < 0 ||
	    copy_str(obj, "containerId", ev.container_id, sizeof(ev.container_id)) < 0) {
		tl_event_clear(&ev);
		return -EINVAL;
	}
	json_object_object_foreach(obj, key, val)
	{
		if (is_envelope_key(key))
			continue;
		json_object_object_add(ev.fields, key, json_object_get(val));
	}
	*ret = ev;
	return 0;
}
