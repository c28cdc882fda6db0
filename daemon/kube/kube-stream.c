/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kube-stream.h"

#define KSTREAM_DEFAULT_MAX_OBJECT (8u << 20)
#define KSTREAM_DEFAULT_MAX_DEPTH 64
/* No number the API server writes comes near this (int64: 20 bytes). */
#define KSTREAM_MAX_NUMBER 64
/* What json-c allocates per parsed value, roughly (measured with 1 MiB of
 * "{},": ~760 bytes per object; an array's first 32 slots; a scalar and
 * its slot in the parent). Used to bound the memory of one value before
 * json-c builds it: 8 MiB of "{}," would otherwise become 2 GB. */
#define KSTREAM_COST_OBJECT 768
#define KSTREAM_COST_ARRAY 384
#define KSTREAM_COST_MEMBER 64
#define KSTREAM_MIN_COST (1u << 20)

struct tl_kstream {
	struct json_tokener *tok;
	tl_kstream_cb cb;
	void *userdata;
	size_t max_object;
	bool started;  /* a value has begun in the tokener */
	bool skipping; /* discarding bytes up to the next newline */
	size_t obj_bytes;
	char last; /* the last byte json-c or the skipping took, across feeds */
	uint64_t malformed;
	size_t max_cost;
	/* A light lexer runs ahead of json-c over the current value: it
	 * bounds the value's cost and keeps json-c from ever stopping inside
	 * a number, whose state json-c does not keep across calls ("1" then
	 * "-2" was taken as 1). The bytes of a number not yet ended wait in
	 * carry, and go to json-c with the byte that ends it. */
	struct {
		bool in_str, esc;
		unsigned num; /* length of the number being read; 0 = none */
		unsigned depth;
		size_t cost;
	} lex;
	char carry[KSTREAM_MAX_NUMBER + 2];
	size_t carry_len;
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
	if (limits && limits->max_cost) {
		s->max_cost = limits->max_cost;
	} else {
		s->max_cost = 4 * s->max_object;
		if (s->max_cost < KSTREAM_MIN_COST)
			s->max_cost = KSTREAM_MIN_COST;
	}
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

static void lex_reset(struct tl_kstream *s)
{
	memset(&s->lex, 0, sizeof(s->lex));
	s->carry_len = 0;
}

void tl_kstream_reset(struct tl_kstream *s)
{
	json_tokener_reset(s->tok);
	lex_reset(s);
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
	lex_reset(s);
	s->started = false;
	s->obj_bytes = 0;
	s->skipping = true;
}

static bool is_num_char(char c)
{
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

enum lex_stop {
	LEX_MORE,     /* all bytes taken, the value goes on */
	LEX_END,      /* the last byte taken closed the outermost value */
	LEX_NUM_END,  /* the last byte taken ended a number begun in carry */
	LEX_BAD,      /* the next byte would break a limit: the value is dropped */
};

/* Takes bytes of the current value into the lexer; returns how many. */
static size_t lex_scan(struct tl_kstream *s, const char *buf, size_t n, enum lex_stop *stop)
{
	bool from_carry = s->carry_len > 0;
	size_t i;

	*stop = LEX_MORE;
	for (i = 0; i < n; i++) {
		char c = buf[i];
		size_t add = 1;

		if (s->lex.in_str) {
			if (s->lex.esc)
				s->lex.esc = false;
			else if (c == '\\')
				s->lex.esc = true;
			else if (c == '"')
				s->lex.in_str = false;
		} else if (s->lex.num && is_num_char(c)) {
			if (s->lex.num >= KSTREAM_MAX_NUMBER) {
				*stop = LEX_BAD;
				return i;
			}
			s->lex.num++;
		} else {
			bool ended_num = s->lex.num > 0;

			s->lex.num = 0;
			if (c == '"') {
				s->lex.in_str = true;
			} else if (c == '{' || c == '[') {
				s->lex.depth++;
				add += c == '{' ? KSTREAM_COST_OBJECT : KSTREAM_COST_ARRAY;
			} else if (c == '}' || c == ']') {
				if (s->lex.depth > 0)
					s->lex.depth--;
			} else if (c == ',' || c == ':') {
				add += KSTREAM_COST_MEMBER;
			} else if ((c >= '0' && c <= '9') || c == '-') {
				s->lex.num = 1;
			}
			if (s->lex.cost + add > s->max_cost) {
				s->lex.num = 0;
				*stop = LEX_BAD;
				return i;
			}
			s->lex.cost += add;
			if (ended_num && from_carry) {
				*stop = LEX_NUM_END;
				return i + 1;
			}
			if (s->lex.depth == 0 && (c == '}' || c == ']')) {
				*stop = LEX_END;
				return i + 1;
			}
			continue;
		}
		if (s->lex.cost + add > s->max_cost) {
			*stop = LEX_BAD;
			return i;
		}
		s->lex.cost += add;
	}
	return i;
}

int tl_kstream_feed(struct tl_kstream *s, const char *buf, size_t len)
{
	while (len > 0) {
		struct json_object *obj;
		enum json_tokener_error jerr;
		enum lex_stop stop;
		char tmp[sizeof(s->carry) + 1];
		const char *seg; /* what json-c gets this round */
		size_t n, used, seglen, pre, take;
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
			lex_reset(s);
		}
		if (s->obj_bytes >= s->max_object) {
			kstream_drop(s);
			continue;
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
		take = lex_scan(s, buf, n, &stop);
		s->obj_bytes += take;
		pre = s->carry_len;
		if (pre > 0) {
			if (stop == LEX_MORE && s->lex.num > 0) {
				/* the number goes on past this chunk */
				memcpy(s->carry + s->carry_len, buf, take);
				s->carry_len += take;
				buf += take;
				len -= take;
				continue;
			}
			/* the number and what ended it, in one call */
			memcpy(tmp, s->carry, pre);
			memcpy(tmp + pre, buf, take);
			seg = tmp;
			seglen = pre + take;
			s->carry_len = 0;
		} else {
			size_t hold = stop == LEX_MORE ? s->lex.num : 0;

			seg = buf;
			seglen = take - hold;
			if (hold) {
				memcpy(s->carry, buf + seglen, hold);
				s->carry_len = hold;
			}
		}
		if (seglen == 0) {
			/* nothing for json-c yet: a held number, or a limit
			 * broken at the first byte */
			buf += take;
			len -= take;
			if (stop == LEX_BAD)
				kstream_drop(s);
			continue;
		}
		obj = json_tokener_parse_ex(s->tok, seg, (int)seglen);
		jerr = json_tokener_get_error(s->tok);
		if (obj) {
			used = json_tokener_get_parse_end(s->tok);
			if (used == 0 || used > seglen)
				used = seglen;
			json_tokener_reset(s->tok);
			lex_reset(s);
			s->started = false;
			s->obj_bytes = 0;
			s->last = seg[used - 1];
			used = used > pre ? used - pre : 0;
			buf += used;
			len -= used;
			r = s->cb(s->userdata, obj);
			json_object_put(obj);
			if (r < 0)
				return r;
			continue;
		}
		if (jerr == json_tokener_continue) {
			s->last = seg[seglen - 1];
			buf += take;
			len -= take;
			if (stop == LEX_BAD)
				kstream_drop(s);
			continue;
		}
		/* Malformed: resume at the next line. When the error is at
		 * the first byte of a line the value began on an earlier one
		 * (an unterminated object swallowed the newline): that line
		 * was the bad one and this one starts afresh. */
		used = json_tokener_get_parse_end(s->tok);
		if (used > seglen)
			used = seglen;
		{
			bool at_start = s->obj_bytes == take && pre == 0 && used == 0;
			char prev = used > 0 ? seg[used - 1] : s->last;

			kstream_drop(s);
			s->last = prev;
			if (!at_start && prev == '\n') {
				s->skipping = false;
				/* resuming inside the carried number: a digit
				 * starts no value, so that line is dropped */
				if (used < pre)
					kstream_drop(s);
			}
		}
		used = used > pre ? used - pre : 0;
		buf += used;
		len -= used;
	}
	return 0;
}
