/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Typed reads of one member of a json-c object, the one family of these
 * helpers. Each takes any json_object (NULL or not an object: no member) and
 * a key, and answers NULL, false or the caller's default when the member is
 * missing or of another type: a document or an API answer whose field has
 * the wrong type reads as if the field were absent. */
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

/* The member, of any type, or NULL. */
struct json_object *tl_json_get(struct json_object *o, const char *key);
/* A string member's text, or NULL. */
const char *tl_json_str(struct json_object *o, const char *key);
/* An array member, or NULL. */
struct json_object *tl_json_array(struct json_object *o, const char *key);
/* An object member, or NULL. */
struct json_object *tl_json_object(struct json_object *o, const char *key);
/* A boolean member's value, or dflt. */
bool tl_json_bool(struct json_object *o, const char *key, bool dflt);
/* An integer member (a JSON number written without a fraction) into *ret;
 * false (and *ret untouched) when there is none. */
bool tl_json_int(struct json_object *o, const char *key, int64_t *ret);
