/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube-stream.h"

#define KSTREAM_DEFAULT_MAX_OBJECT (8u << 20)
#define KSTREAM_DEFAULT_MAX_DEPTH 64

struct tl_kstream {
	struct json_tokener *tok;
	tl_kstream_cb cb;
	void *userdata;
	size_t max_object;
	bool started;  /* a value has begun in the tokener */
	bool skipping; /* discarding bytes up to the next newline */
	size_t obj_bytes;
	char last; /* the last byte consumed, across feeds */
	uint64_t malformed;
};

int tl_kstream_new(const struct tl_kstream_limits *limits, tl_kstream_cb cb, void *userdata,
		   struct tl_kstream **ret)
{
	struct tl_kstream *s;
	int depth = KSTREAM_DEFAULT_MAX_DEPTH;

	if (!cb || !ret)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->max_object = KSTREAM_DEFAULT_MAX_OBJECT;
	if (limits && limits->max_object)
		s->max_object = limits->max_object;
	/* json_tokener takes an int length per call */
	if (s->max_object > (size_t)INT32_MAX)
		s->max_object = INT32_MAX;
	if (limits && limits->max_depth > 0)
		depth = limits->max_depth;
	s->tok = json_tokener_new_ex(depth);
	if (!s->tok) {
		free(s);
		return -ENOMEM;
	}
	/* Strict: the API server writes strict JSON, and json-c's
	 * extensions (comments) look past a value's end, which would make
	 * a value's fate depend on the bytes after it and on chunking. */
	json_tokener_set_flags(s->tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS);
	s->cb = cb;
	s->userdata = userdata;
	s->last = '\n';
	*ret = s;
	return 0;
}

void tl_kstream_free(struct tl_kstream *s)
{
	if (!s)
		return;
	json_tokener_free(s->tok);
	free(s);
}

void tl_kstream_reset(struct tl_kstream *s)
{
	json_tokener_reset(s->tok);
	s->started = false;
	s->skipping = false;
	s->obj_bytes = 0;
	s->last = '\n';
}

bool tl_kstream_partial(const struct tl_kstream *s)
{
	return s->started;
}

uint64_t tl_kstream_malformed(const struct tl_kstream *s)
{
	return s->malformed;
}

static void kstream_drop(struct tl_kstream *s)
{
	s->malformed++;
	json_tokener_reset(s->tok);
	s->started = false;
	s->obj_bytes = 0;
	s->skipping = true;
}

int tl_kstream_feed(struct tl_kstream *s, const char *buf, size_t len)
{
	while (len > 0) {
		struct json_object *obj;
		enum json_tokener_error jerr;
		size_t n, used;
		int r;

		if (s->skipping) {
			const char *nl = memchr(buf, '\n', len);

			if (!nl)
				return 0;
			used = (size_t)(nl - buf) + 1;
			buf += used;
			len -= used;
			s->last = '\n';
			s->skipping = false;
			continue;
		}
		if (!s->started) {
			/* whitespace between values is not part of any value and
			 * must not count against the next one's size */
			if (*buf == ' ' || *buf == '\n' || *buf == '\r' || *buf == '\t') {
				s->last = *buf;
				buf++;
				len--;
				continue;
			}
			/* Only objects are events. A bare scalar has no end a
			 * stream can see (is "12" followed by "3"?), so its
			 * parse would depend on where chunks split. */
			if (*buf != '{') {
				kstream_drop(s);
				continue;
			}
			s->started = true;
			s->obj_bytes = 0;
		}
		n = s->max_object - s->obj_bytes;
		if (n > len)
			n = len;
		/* json-c reads a NUL byte as the end of its input, which
		 * would make the outcome depend on chunking: a NUL is never
		 * valid JSON text, so the line it is on is malformed. */
		{
			const char *nul = memchr(buf, '\0', n);

			if (nul == buf) {
				kstream_drop(s);
				continue;
			}
			if (nul)
				n = (size_t)(nul - buf);
		}
		obj = json_tokener_parse_ex(s->tok, buf, (int)n);
		jerr = json_tokener_get_error(s->tok);
		if (obj) {
			used = json_tokener_get_parse_end(s->tok);
			if (used == 0 || used > n)
				used = n;
			json_tokener_reset(s->tok);
			s->started = false;
			s->obj_bytes = 0;
			s->last = buf[used - 1];
			buf += used;
			len -= used;
			r = s->cb(s->userdata, obj);
			json_object_put(obj);
			if (r < 0)
				return r;
			continue;
		}
		if (jerr == json_tokener_continue) {
			s->last = buf[n - 1];
			s->obj_bytes += n;
			buf += n;
			len -= n;
			if (s->obj_bytes >= s->max_object)
				kstream_drop(s);
			continue;
		}
		/* Malformed: resume at the next line. When the error is at
		 * the first byte of a line the value began on an earlier one
		 * (an unterminated object swallowed the newline): that line
		 * was the bad one and this one starts afresh. */
		used = json_tokener_get_parse_end(s->tok);
		if (used > n)
			used = n;
		{
			bool at_start = s->obj_bytes == 0 && used == 0;
			char prev = used > 0 ? buf[used - 1] : s->last;

			kstream_drop(s);
			s->last = prev;
			if (!at_start && prev == '\n')
				s->skipping = false;
		}
		buf += used;
		len -= used;
	}
	return 0;
}
