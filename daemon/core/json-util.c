/* SPDX-License-Identifier: Apache-2.0 */
#include "json-util.h"

struct json_object *tl_json_get(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

static struct json_object *get_typed(struct json_object *o, const char *key, enum json_type t)
{
	struct json_object *v = tl_json_get(o, key);

	return v && json_object_is_type(v, t) ? v : NULL;
}

const char *tl_json_str(struct json_object *o, const char *key)
{
	struct json_object *v = get_typed(o, key, json_type_string);

	return v ? json_object_get_string(v) : NULL;
}

struct json_object *tl_json_array(struct json_object *o, const char *key)
{
	return get_typed(o, key, json_type_array);
}

struct json_object *tl_json_object(struct json_object *o, const char *key)
{
	return get_typed(o, key, json_type_object);
}

bool tl_json_bool(struct json_object *o, const char *key, bool dflt)
{
	struct json_object *v = get_typed(o, key, json_type_boolean);

	return v ? json_object_get_boolean(v) : dflt;
}

bool tl_json_int(struct json_object *o, const char *key, int64_t *ret)
{
	struct json_object *v = get_typed(o, key, json_type_int);

	if (!v)
		return false;
	*ret = json_object_get_int64(v);
	return true;
}
