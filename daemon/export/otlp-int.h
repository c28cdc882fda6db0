/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Inside the encoder: the OTLP message tree (protobuf-c structs generated
 * from otlp.proto) built in an arena, attribute lists, ids. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "otlp.pb-c.h"
#include "otlp-opts.h"

struct json_object;

/* Every node of one document's tree comes from one arena, freed at once.
 * The first failure sets err; later calls return NULL and callers check
 * err once where it matters (a NULL from an arena call is never
 * dereferenced). */
struct ar_chunk;
struct arena {
	struct ar_chunk *head;
	int err;
};

void *ar_alloc(struct arena *a, size_t n); /* zeroed */
/* A copy that is valid UTF-8 (a bad sequence becomes U+FFFD) of at most
 * TL_OTLP_MAX_STR bytes, cut on a character; NULL s: "". */
char *ar_str(struct arena *a, const char *s);
char *ar_strn(struct arena *a, const char *s, size_t n);
char *ar_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ar_free(struct arena *a);

/* An attribute list being filled: at most TL_OTLP_MAX_ATTRS, then counted
 * in dropped. Keys must be unique: a key already there is not added again
 * (the first value wins). */
struct attrs {
	Otlp__KeyValue *kv[TL_OTLP_MAX_ATTRS];
	size_t n;
	uint32_t dropped;
};

void attr_str(struct arena *a, struct attrs *l, const char *key, const char *val);
void attr_int(struct arena *a, struct attrs *l, const char *key, int64_t v);
void attr_double(struct arena *a, struct attrs *l, const char *key, double v);
void attr_bool(struct arena *a, struct attrs *l, const char *key, bool v);
void attr_strs(struct arena *a, struct attrs *l, const char *key, const char *const *v, size_t n);
/* A JSON value as an attribute: string, integer, double, boolean; an array
 * of strings as a string array; anything else as its JSON text; null is
 * left out. */
void attr_json(struct arena *a, struct attrs *l, const char *key, struct json_object *v);
bool attr_has(const struct attrs *l, const char *key);
/* Moves the list into the arena; *n its length. NULL with n 0 when empty. */
Otlp__KeyValue **attrs_take(struct arena *a, struct attrs *l, size_t *n);

/* "gracePeriodSeconds" -> "prefix" "grace_period_seconds" (OpenTelemetry
 * attribute names are snake_case). */
char *ar_attr_name(struct arena *a, const char *prefix, const char *field);

/* 8 bytes of SHA-256(uid NUL key), never all zero. */
void span_id_of(const char *uid, const char *key, uint8_t ret[8]);

/* The tree of one document. */
struct otlp_tree {
	struct arena arena;
	Otlp__ExportTraceServiceRequest traces;
	Otlp__ExportLogsServiceRequest logs;
	uint8_t trace_id[16];
	uint32_t spans, span_events, links, log_records, request_spans;
	uint32_t requests_unexported, events_dropped;
};

/* otlp-map.c: fills t from doc. 0, -EINVAL, -ENOMEM. */
int otlp_map(struct json_object *doc, const struct tl_otlp_encode_opts *o, struct otlp_tree *t);

/* otlp-json.c: a message as OTLP/JSON (the proto3 JSON mapping with OTLP's
 * exceptions: lowerCamelCase keys, trace and span ids as hex, enums as
 * integers, 64-bit integers as strings, fields at their default left out). */
struct tl_buf;
void otlp_json_message(struct tl_buf *b, const ProtobufCMessage *m);
