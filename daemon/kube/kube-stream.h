/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

/* Splits a byte stream of concatenated JSON values (a watch stream: one
 * object per line, or a LIST body: one object) into objects, whatever the
 * chunk boundaries. The peer controls every byte, so the size of one value,
 * the memory its parse takes and the nesting depth are bounded; a value that is malformed or too large
 * (or not an object) is skipped up to the next newline (the API server writes one event per
 * line) and counted, and parsing resumes there. */
struct tl_kstream;

struct tl_kstream_limits {
	size_t max_object; /* bytes of one JSON value; 0 = 8 MiB */
	int max_depth;     /* nesting; 0 = 64 */
	/* Memory one parsed value may take, estimated from its text before
	 * it is parsed (objects, arrays and members weigh what json-c
	 * allocates for them); 0 = 4 x max_object, at least 1 MiB. A value above it is
	 * skipped like an oversized one. */
	size_t max_cost;
};

/* Called for each complete value; takes no ownership (put it to keep it).
 * A negative return stops tl_kstream_feed(), which returns it. */
typedef int (*tl_kstream_cb)(void *userdata, struct json_object *obj);

int tl_kstream_new(const struct tl_kstream_limits *limits, tl_kstream_cb cb, void *userdata,
		   struct tl_kstream **ret);
void tl_kstream_free(struct tl_kstream *s);
/* Forget any partial value (a new connection). */
void tl_kstream_reset(struct tl_kstream *s);
/* 0, or the callback's negative return, or -ENOMEM. */
int tl_kstream_feed(struct tl_kstream *s, const char *buf, size_t len);
/* True when a value has started and not yet completed (a stream cut in the
 * middle of an object). */
bool tl_kstream_partial(const struct tl_kstream *s);
/* Values skipped as malformed or oversized since creation. */
uint64_t tl_kstream_malformed(const struct tl_kstream *s);
