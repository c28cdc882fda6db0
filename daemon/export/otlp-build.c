/* SPDX-License-Identifier: Apache-2.0 */
/* The encoder's building blocks: the arena the tree lives in, strings made
 * valid UTF-8 (protobuf's string fields must be; a receiver may refuse a
 * request otherwise), attribute lists, ids. */
#include <ctype.h>
#include <errno.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/evp.h>

#include "otlp-int.h"

#define AR_CHUNK (64 * 1024)

struct ar_chunk {
	struct ar_chunk *next;
	size_t used, cap;
	alignas(max_align_t) unsigned char data[];
};

void *ar_alloc(struct arena *a, size_t n)
{
	struct ar_chunk *c = a->head;
	size_t need = (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
	void *p;

	if (a->err)
		return NULL;
	if (need < n) {
		a->err = -ENOMEM;
		return NULL;
	}
	if (!c || c->cap - c->used < need) {
		size_t cap = need > AR_CHUNK / 2 ? need : AR_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c) {
			a->err = -ENOMEM;
			return NULL;
		}
		c->used = 0;
		c->cap = cap;
		/* a big allocation gets its own chunk behind the current one,
		 * whose free room stays in use */
		if (a->head && cap != AR_CHUNK) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	p = c->data + c->used;
	c->used += need;
	memset(p, 0, n);
	return p;
}

void ar_free(struct arena *a)
{
	struct ar_chunk *c = a->head;

	while (c) {
		struct ar_chunk *next = c->next;

		free(c);
		c = next;
	}
	a->head = NULL;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid
 * (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f))
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

char *ar_strn(struct arena *a, const char *s, size_t n)
{
	static const char repl[] = "\xef\xbf\xbd";
	const unsigned char *p = (const unsigned char *)s;
	size_t out = 0, i = 0;
	char *d;

	if (!s)
		n = 0;
	/* worst case: every byte becomes U+FFFD */
	if (n > TL_OTLP_MAX_STR)
		n = TL_OTLP_MAX_STR;
	d = ar_alloc(a, n * 3 + 1);
	if (!d)
		return NULL;
	while (i < n && p[i]) {
		size_t k = utf8_len(p + i, n - i);

		if (k == 0) {
			if (out + 3 > TL_OTLP_MAX_STR)
				break;
			memcpy(d + out, repl, 3);
			out += 3;
			i++;
			continue;
		}
		if (out + k > TL_OTLP_MAX_STR)
			break;
		memcpy(d + out, p + i, k);
		out += k;
		i += k;
	}
	d[out] = '\0';
	return d;
}

char *ar_str(struct arena *a, const char *s)
{
	return ar_strn(a, s, s ? strnlen(s, TL_OTLP_MAX_STR + 1) : 0);
}

char *ar_printf(struct arena *a, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0) {
		a->err = a->err ? a->err : -EINVAL;
		return NULL;
	}
	return ar_str(a, buf);
}

char *ar_attr_name(struct arena *a, const char *prefix, const char *field)
{
	char buf[256];
	size_t n = strlen(prefix);

	if (n >= sizeof(buf))
		return NULL;
	memcpy(buf, prefix, n);
	for (const char *p = field; *p && n + 3 < sizeof(buf); p++) {
		unsigned char c = (unsigned char)*p;

		if (isupper(c)) {
			if (p != field)
				buf[n++] = '_';
			buf[n++] = (char)tolower(c);
		} else {
			buf[n++] = (char)c;
		}
	}
	buf[n] = '\0';
	return ar_str(a, buf);
}

/* ---- attributes ---- */

bool attr_has(const struct attrs *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->kv[i]->key, key) == 0)
			return true;
	return false;
}

/* A new KeyValue for key in l (its value left for the caller), or NULL when
 * the key is there already, the list is full (counted) or out of memory. */
static Otlp__AnyValue *attr_new(struct arena *a, struct attrs *l, const char *key)
{
	Otlp__KeyValue *kv;
	Otlp__AnyValue *v;

	if (!key || attr_has(l, key))
		return NULL;
	if (l->n >= TL_OTLP_MAX_ATTRS) {
		l->dropped++;
		return NULL;
	}
	kv = ar_alloc(a, sizeof(*kv));
	v = ar_alloc(a, sizeof(*v));
	if (!kv || !v)
		return NULL;
	otlp__key_value__init(kv);
	otlp__any_value__init(v);
	kv->key = (char *)key;
	kv->value = v;
	l->kv[l->n++] = kv;
	return v;
}

void attr_str(struct arena *a, struct attrs *l, const char *key, const char *val)
{
	Otlp__AnyValue *v;
	char *s;

	if (!val)
		return;
	s = ar_str(a, val);
	if (!s)
		return;
	v = attr_new(a, l, key);
	if (!v)
		return;
	v->value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
	v->string_value = s;
}

void attr_int(struct arena *a, struct attrs *l, const char *key, int64_t i)
{
	Otlp__AnyValue *v = attr_new(a, l, key);

	if (!v)
		return;
	v->value_case = OTLP__ANY_VALUE__VALUE_INT_VALUE;
	v->int_value = i;
}

void attr_double(struct arena *a, struct attrs *l, const char *key, double d)
{
	Otlp__AnyValue *v = attr_new(a, l, key);

	if (!v)
		return;
	v->value_case = OTLP__ANY_VALUE__VALUE_DOUBLE_VALUE;
	v->double_value = d;
}

void attr_bool(struct arena *a, struct attrs *l, const char *key, bool b)
{
	Otlp__AnyValue *v = attr_new(a, l, key);

	if (!v)
		return;
	v->value_case = OTLP__ANY_VALUE__VALUE_BOOL_VALUE;
	v->bool_value = b;
}

void attr_strs(struct arena *a, struct attrs *l, const char *key, const char *const *s, size_t n)
{
	Otlp__ArrayValue *arr;
	Otlp__AnyValue *v, **vals;

	if (attr_has(l, key))
		return;
	arr = ar_alloc(a, sizeof(*arr));
	vals = n ? ar_alloc(a, n * sizeof(*vals)) : NULL;
	if (!arr || (n && !vals))
		return;
	otlp__array_value__init(arr);
	for (size_t i = 0; i < n; i++) {
		vals[i] = ar_alloc(a, sizeof(**vals));
		if (!vals[i])
			return;
		otlp__any_value__init(vals[i]);
		vals[i]->value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
		vals[i]->string_value = ar_str(a, s[i]);
		if (!vals[i]->string_value)
			return;
	}
	arr->n_values = n;
	arr->values = vals;
	v = attr_new(a, l, key);
	if (!v)
		return;
	v->value_case = OTLP__ANY_VALUE__VALUE_ARRAY_VALUE;
	v->array_value = arr;
}

void attr_json(struct arena *a, struct attrs *l, const char *key, struct json_object *v)
{
	switch (json_object_get_type(v)) {
	case json_type_null:
		return;
	case json_type_boolean:
		attr_bool(a, l, key, json_object_get_boolean(v));
		return;
	case json_type_int:
		attr_int(a, l, key, json_object_get_int64(v));
		return;
	case json_type_double:
		attr_double(a, l, key, json_object_get_double(v));
		return;
	case json_type_string:
		attr_str(a, l, key, json_object_get_string(v));
		return;
	case json_type_array: {
		size_t n = json_object_array_length(v);
		const char **s;
		bool all = n <= TL_OTLP_MAX_IDS;

		for (size_t i = 0; all && i < n; i++)
			all = json_object_is_type(json_object_array_get_idx(v, i), json_type_string);
		if (all) {
			s = n ? ar_alloc(a, n * sizeof(*s)) : NULL;
			if (n && !s)
				return;
			for (size_t i = 0; i < n; i++)
				s[i] = json_object_get_string(json_object_array_get_idx(v, i));
			attr_strs(a, l, key, s, n);
			return;
		}
		break;
	}
	case json_type_object:
		break;
	}
	attr_str(a, l, key,
		 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
							   JSON_C_TO_STRING_NOSLASHESCAPE));
}

Otlp__KeyValue **attrs_take(struct arena *a, struct attrs *l, size_t *n)
{
	Otlp__KeyValue **kv;

	*n = 0;
	if (!l->n)
		return NULL;
	kv = ar_alloc(a, l->n * sizeof(*kv));
	if (!kv)
		return NULL;
	memcpy(kv, l->kv, l->n * sizeof(*kv));
	*n = l->n;
	return kv;
}

/* ---- ids ---- */

static void sha256(const void *p, size_t n, unsigned char md[32])
{
	unsigned int len = 0;

	/* EVP_Digest fails only without memory or a SHA-256 implementation;
	 * the ids are then zero and fixed up by the callers */
	if (!EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) || len != 32)
		memset(md, 0, 32);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* 8-4-4-4-12 hex digits */
static bool uuid_bytes(const char *s, uint8_t ret[16])
{
	int nib[32];
	size_t k = 0;

	if (strlen(s) != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		int v;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
			continue;
		}
		v = hexval(s[i]);
		if (v < 0)
			return false;
		nib[k++] = v;
	}
	for (size_t i = 0; i < 16; i++)
		ret[i] = (uint8_t)(nib[2 * i] << 4 | nib[2 * i + 1]);
	return true;
}

void tl_otlp_trace_id(const char *uid, uint8_t ret[16])
{
	static const char pre[] = "termline trace ";
	unsigned char md[32];
	char buf[512];
	size_t n;
	bool zero = true;

	if (uid && uuid_bytes(uid, ret)) {
		for (int i = 0; i < 16; i++)
			zero = zero && ret[i] == 0;
		if (!zero)
			return;
	}
	n = (size_t)snprintf(buf, sizeof(buf), "%s%s", pre, uid ? uid : "");
	sha256(buf, n < sizeof(buf) ? n : sizeof(buf) - 1, md);
	memcpy(ret, md, 16);
	/* an all-zero trace id is invalid */
	zero = true;
	for (int i = 0; i < 16; i++)
		zero = zero && ret[i] == 0;
	if (zero)
		ret[15] = 1;
}

void span_id_of(const char *uid, const char *key, uint8_t ret[8])
{
	unsigned char md[32];
	char buf[640];
	int n = snprintf(buf, sizeof(buf), "%s%c%s", uid, '\0', key);
	bool zero = true;

	if (n < 0)
		n = 0;
	sha256(buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1, md);
	memcpy(ret, md, 8);
	for (int i = 0; i < 8; i++)
		zero = zero && ret[i] == 0;
	if (zero)
		ret[7] = 1;
}
