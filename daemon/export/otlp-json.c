/* SPDX-License-Identifier: Apache-2.0 */
/* OTLP/JSON from the protobuf-c message tree, walking the generated
 * descriptors: one mapping (otlp-map.c) serves both encodings, so the JSON
 * says exactly what the protobuf says. The rules are the OTLP
 * specification's "JSON Protobuf Encoding": the proto3 JSON mapping with
 * lowerCamelCase keys, traceId/spanId/parentSpanId as hex (not base64),
 * enum values as integers, 64-bit integers as decimal strings, and fields
 * at their default value (and unset oneofs) left out. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>

#include "otlp-int.h"
#include "tl-buf.h"

static void json_key(struct tl_buf *b, const char *name)
{
	tl_buf_addc(b, '"');
	for (const char *p = name; *p; p++) {
		if (*p == '_' && p[1]) {
			p++;
			tl_buf_addc(b, (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p));
		} else {
			tl_buf_addc(b, *p);
		}
	}
	tl_buf_adds(b, "\":");
}

static bool hex_id(const ProtobufCFieldDescriptor *f)
{
	return strcmp(f->name, "trace_id") == 0 || strcmp(f->name, "span_id") == 0 ||
	       strcmp(f->name, "parent_span_id") == 0;
}

static void json_bytes(struct tl_buf *b, const ProtobufCFieldDescriptor *f,
		       const ProtobufCBinaryData *d)
{
	static const char hex[] = "0123456789abcdef";

	tl_buf_addc(b, '"');
	if (hex_id(f)) {
		for (size_t i = 0; i < d->len; i++) {
			tl_buf_addc(b, hex[d->data[i] >> 4]);
			tl_buf_addc(b, hex[d->data[i] & 15]);
		}
	} else if (d->len) {
		unsigned char out[192 + 1];

		/* base64 in pieces of 144 input bytes (192 characters, no padding) */
		for (size_t i = 0; i < d->len; i += 144) {
			size_t n = d->len - i < 144 ? d->len - i : 144;
			int k = EVP_EncodeBlock(out, d->data + i, (int)n);

			if (k > 0)
				tl_buf_add(b, out, (size_t)k);
		}
	}
	tl_buf_addc(b, '"');
}

static void json_double(struct tl_buf *b, double v)
{
	if (isnan(v))
		tl_buf_adds(b, "\"NaN\"");
	else if (isinf(v))
		tl_buf_adds(b, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	else
		tl_buf_printf(b, "%.17g", v);
}

/* One value of field f stored at p. */
static void json_value(struct tl_buf *b, const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_ENUM:
		tl_buf_printf(b, "%d", *(const int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		tl_buf_printf(b, "%u", *(const uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		tl_buf_printf(b, "\"%lld\"", (long long)*(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		tl_buf_printf(b, "\"%llu\"", (unsigned long long)*(const uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		json_double(b, *(const float *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		json_double(b, *(const double *)p);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		tl_buf_adds(b, *(const protobuf_c_boolean *)p ? "true" : "false");
		break;
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		tl_buf_add_json_str(b, s ? s : "", s ? strlen(s) : 0);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES:
		json_bytes(b, f, p);
		break;
	case PROTOBUF_C_TYPE_MESSAGE: {
		const ProtobufCMessage *m = *(const ProtobufCMessage *const *)p;

		if (m)
			otlp_json_message(b, m);
		else
			tl_buf_adds(b, "{}");
		break;
	}
	}
}

static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_ENUM:
		return 4;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return 8;
	case PROTOBUF_C_TYPE_FLOAT:
		return sizeof(float);
	case PROTOBUF_C_TYPE_DOUBLE:
		return sizeof(double);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	}
	return 0;
}

/* A proto3 field without presence at its default value is not written. */
static bool is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		return !s || !s[0];
	}
	case PROTOBUF_C_TYPE_BYTES:
		return ((const ProtobufCBinaryData *)p)->len == 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(void *const *)p == NULL;
	case PROTOBUF_C_TYPE_FLOAT:
		return *(const float *)p == 0;
	case PROTOBUF_C_TYPE_DOUBLE:
		return *(const double *)p == 0;
	case PROTOBUF_C_TYPE_BOOL:
		return !*(const protobuf_c_boolean *)p;
	default: {
		size_t n = elem_size(f->type);
		static const unsigned char zero[8];

		return memcmp(p, zero, n) == 0;
	}
	}
}

void otlp_json_message(struct tl_buf *b, const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;
	bool first = true;

	tl_buf_addc(b, '{');
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const void *p = base + f->offset;

		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			const char *arr = *(const char *const *)p;
			size_t sz = elem_size(f->type);

			if (!n)
				continue;
			if (!first)
				tl_buf_addc(b, ',');
			first = false;
			json_key(b, f->name);
			tl_buf_addc(b, '[');
			for (size_t k = 0; k < n; k++) {
				if (k)
					tl_buf_addc(b, ',');
				json_value(b, f, arr + k * sz);
			}
			tl_buf_addc(b, ']');
			continue;
		}
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			/* a oneof member is written when set, even at its default */
			if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
				continue;
		} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
			   f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE) {
			if (!*(const protobuf_c_boolean *)(base + f->quantifier_offset))
				continue;
		} else if (is_default(f, p)) {
			continue;
		}
		if (!first)
			tl_buf_addc(b, ',');
		first = false;
		json_key(b, f->name);
		json_value(b, f, p);
	}
	tl_buf_addc(b, '}');
}
