// SPDX-License-Identifier: Apache-2.0
/* -o yaml: a json-c value written through libyaml's emitter, so that a
 * YAML reader gets the same object as -o json gives. The emitter chooses
 * quoting for what YAML would misread (": ", "#", control characters);
 * what it cannot know is the schema: a string that reads as a number, a
 * boolean, a null or a timestamp to a YAML 1.1 or 1.2 reader is double-
 * quoted here, and numbers, booleans and nulls are written plain. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <yaml.h>

#include "cli.h"

/* Strings that a YAML reader (1.1 resolvers such as PyYAML's included)
 * would take for something else: quoted. */
static bool ambiguous(const char *s, size_t n)
{
	static const char *const words[] = {"y",     "n",     "yes",  "no", "on",   "off",
					    "true",  "false", "null", "~",  ".inf", "-.inf",
					    "+.inf", ".nan",  "<<",   "="};
	char low[8];

	if (n == 0)
		return true;
	/* numbers in any base, dates and times, sexagesimals: all begin so */
	if (isdigit((unsigned char)s[0]) || ((s[0] == '-' || s[0] == '+' || s[0] == '.') && n > 1 &&
					     (isdigit((unsigned char)s[1]) || s[1] == '.')))
		return true;
	if (n >= sizeof(low))
		return false;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)s[i]);
	low[n] = 0;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcmp(low, words[i]) == 0)
			return true;
	return false;
}

static int emit(yaml_emitter_t *em, yaml_event_t *ev)
{
	/* yaml_emitter_emit() takes the event whatever it answers */
	return yaml_emitter_emit(em, ev) ? 0 : -EIO;
}

static int scalar(yaml_emitter_t *em, const char *s, size_t n, bool plain_only)
{
	yaml_event_t ev;
	yaml_scalar_style_t style = plain_only	      ? YAML_PLAIN_SCALAR_STYLE
				    : ambiguous(s, n) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
						      : YAML_ANY_SCALAR_STYLE;

	if (n > (size_t)INT32_MAX)
		return -E2BIG;
	/* fails on text that is not UTF-8: YAML has no way to carry it */
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)n, 1, 1, style))
		return -EILSEQ;
	return emit(em, &ev);
}

static int node(yaml_emitter_t *em, struct json_object *o)
{
	yaml_event_t ev;
	int r;

	switch (json_object_get_type(o)) {
	case json_type_null:
		return scalar(em, "null", 4, true);
	case json_type_boolean:
		return json_object_get_boolean(o) ? scalar(em, "true", 4, true)
						  : scalar(em, "false", 5, true);
	case json_type_int:
	case json_type_double: {
		const char *t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);

		return scalar(em, t, strlen(t), true);
	}
	case json_type_string:
		return scalar(em, json_object_get_string(o), (size_t)json_object_get_string_len(o),
			      false);
	case json_type_array:
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							  json_object_array_length(o)
							      ? YAML_BLOCK_SEQUENCE_STYLE
							      : YAML_FLOW_SEQUENCE_STYLE))
			return -ENOMEM;
		if ((r = emit(em, &ev)) < 0)
			return r;
		for (size_t i = 0; i < json_object_array_length(o); i++)
			if ((r = node(em, json_object_array_get_idx(o, i))) < 0)
				return r;
		yaml_sequence_end_event_initialize(&ev);
		return emit(em, &ev);
	case json_type_object:
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							 json_object_object_length(o)
							     ? YAML_BLOCK_MAPPING_STYLE
							     : YAML_FLOW_MAPPING_STYLE))
			return -ENOMEM;
		if ((r = emit(em, &ev)) < 0)
			return r;
		json_object_object_foreach(o, k, v)
		{
			if ((r = scalar(em, k, strlen(k), false)) < 0 || (r = node(em, v)) < 0)
				return r;
		}
		yaml_mapping_end_event_initialize(&ev);
		return emit(em, &ev);
	}
	return -EINVAL;
}

struct membuf {
	char *p;
	size_t n, cap;
};

static int mem_write(void *data, unsigned char *buf, size_t size)
{
	struct membuf *b = data;

	if (b->n + size > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		char *p;

		while (cap < b->n + size)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return 0;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, buf, size);
	b->n += size;
	return 1;
}

int print_yaml(FILE *f, struct json_object *o)
{
	struct membuf out = {0};
	yaml_emitter_t em;
	yaml_event_t ev;
	int r;

	if (!yaml_emitter_initialize(&em))
		return -ENOMEM;
	/* into memory first: a string YAML cannot carry fails the whole
	 * answer, not half of it already printed */
	yaml_emitter_set_output(&em, mem_write, &out);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1); /* a request ID or path stays on one line */
	yaml_emitter_set_indent(&em, 2);
	r = -ENOMEM;
	if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) || emit(&em, &ev) < 0)
		goto out;
	if (!yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) || emit(&em, &ev) < 0)
		goto out;
	r = node(&em, o);
	if (r < 0)
		goto out;
	r = -EIO;
	if (!yaml_document_end_event_initialize(&ev, 1) || emit(&em, &ev) < 0)
		goto out;
	if (!yaml_stream_end_event_initialize(&ev) || emit(&em, &ev) < 0)
		goto out;
	r = yaml_emitter_flush(&em) ? 0 : -EIO;
	if (r == 0 && out.n && fwrite(out.p, 1, out.n, f) != out.n)
		r = -EIO;
out:
	yaml_emitter_delete(&em);
	free(out.p);
	return r;
}
