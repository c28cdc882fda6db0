/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <json-c/json.h>
#include <string.h>
#include <strings.h>

#include "answer.h"
#include "term-escape.h"

enum { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };

/* A chunk-size line: hex digits, then optional whitespace and extensions. */
#define CHUNK_LINE_MAX 256
#define TRAILER_LINE_MAX 1024

void tw_reader_init(struct tw_reader *r)
{
	r->len = r->scan = r->head_len = 0;
	r->status = 0;
	r->content_length = -1;
	r->chunked = r->done = false;
	r->cstate = CH_SIZE;
	r->cpos = r->wpos = r->remain = 0;
	r->body = NULL;
	r->body_len = 0;
	r->raw[0] = '\0';
}

char *tw_reader_space(struct tw_reader *r, size_t *ret_cap)
{
	*ret_cap = TW_RAW_MAX - r->len;
	return r->raw + r->len;
}

static bool is_tchar(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* One header field line [p, end). */
static int header_field(struct tw_reader *r, const char *p, const char *end)
{
	const char *colon = p, *v, *ve;

	while (colon < end && is_tchar((unsigned char)*colon))
		colon++;
	if (colon == p || colon == end || *colon != ':')
		return -EPROTO; /* no name, a space before the colon, obs-fold */
	for (v = colon + 1; v < end && is_ows(*v); v++)
		;
	for (ve = end; ve > v && is_ows(ve[-1]); ve--)
		;
	for (const char *q = v; q < ve; q++)
		if ((unsigned char)*q < 0x20 && *q != '\t')
			return -EPROTO;
	if ((size_t)(colon - p) == 14 && strncasecmp(p, "content-length", 14) == 0) {
		int64_t n = 0;

		if (v == ve)
			return -EPROTO;
		for (const char *q = v; q < ve; q++) {
			if (*q < '0' || *q > '9')
				return -EPROTO;
			n = n * 10 + (*q - '0');
			if (n > TW_BODY_MAX)
				return -EMSGSIZE;
		}
		if (r->content_length >= 0 && r->content_length != n)
			return -EPROTO;
		r->content_length = n;
	} else if ((size_t)(colon - p) == 17 && strncasecmp(p, "transfer-encoding", 17) == 0) {
		/* chunked alone: a coding this reader does not undo is no answer */
		if (ve - v != 7 || strncasecmp(v, "chunked", 7) != 0 || r->chunked)
			return -EPROTO;
		r->chunked = true;
	}
	return 0;
}

/* The status line and the header fields, [raw, raw + head_len). */
static int parse_head(struct tw_reader *r)
{
	const char *p = r->raw, *end = r->raw + r->head_len - 2, *eol;

	eol = memchr(p, '\r', (size_t)(end - p));
	if (!eol || eol - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') ||
	    p[8] != ' ' || p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' ||
	    p[11] > '9' || (eol - p > 12 && p[12] != ' '))
		return -EPROTO;
	for (const char *q = p; q < eol; q++)
		if (((unsigned char)*q < 0x20 && *q != '\t') || *q == 0x7f)
			return -EPROTO;
	r->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (r->status < 200)
		return -EPROTO; /* no interim answer was asked for */
	for (p = eol + 2; p < end; p = eol + 2) {
		int e;

		eol = memchr(p, '\r', (size_t)(end - p + 1));
		if (!eol || eol[1] != '\n')
			return -EPROTO; /* a bare CR or LF */
		if (memchr(p, '\n', (size_t)(eol - p)))
			return -EPROTO;
		e = header_field(r, p, eol);
		if (e < 0)
			return e;
	}
	if (r->chunked && r->content_length >= 0)
		return -EPROTO; /* RFC 9112 6.3: a sender must not send both */
	r->cpos = r->wpos = r->head_len;
	return 0;
}

static int finish(struct tw_reader *r, size_t body_len)
{
	r->body = r->raw + r->head_len;
	r->body_len = body_len;
	r->body[body_len] = '\0';
	r->done = true;
	return 1;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes what arrived of a chunked body, in place. */
static int chunk_step(struct tw_reader *r)
{
	for (;;) {
		char *p = r->raw + r->cpos, *eol;
		size_t avail = r->len - r->cpos, n;

		switch (r->cstate) {
		case CH_SIZE: {
			size_t size = 0, i = 0;

			eol = memmem(p, avail, "\r\n", 2);
			if (!eol)
				return avail > CHUNK_LINE_MAX ? -EPROTO : 0;
			if (eol - p > CHUNK_LINE_MAX)
				return -EPROTO;
			for (; p + i < eol && hexval(p[i]) >= 0; i++) {
				size = size * 16 + (size_t)hexval(p[i]);
				if (size > TW_BODY_MAX)
					return -EMSGSIZE;
			}
			if (i == 0 || (p + i < eol && p[i] != ';' && !is_ows(p[i])))
				return -EPROTO;
			for (char *q = p + i; q < eol; q++)
				if (*q == '\n' || ((unsigned char)*q < 0x20 && *q != '\t'))
					return -EPROTO;
			r->cpos = (size_t)(eol + 2 - r->raw);
			if (size == 0) {
				r->cstate = CH_TRAILER;
				break;
			}
			if (r->wpos - r->head_len + size > TW_BODY_MAX)
				return -EMSGSIZE;
			r->remain = size;
			r->cstate = CH_DATA;
			break;
		}
		case CH_DATA:
			n = avail < r->remain ? avail : r->remain;
			memmove(r->raw + r->wpos, p, n);
			r->wpos += n;
			r->cpos += n;
			r->remain -= n;
			if (r->remain)
				return 0;
			r->cstate = CH_DATA_END;
			break;
		case CH_DATA_END:
			if (avail < 2)
				return avail == 1 && p[0] != '\r' ? -EPROTO : 0;
			if (p[0] != '\r' || p[1] != '\n')
				return -EPROTO;
			r->cpos += 2;
			r->cstate = CH_SIZE;
			break;
		case CH_TRAILER:
			eol = memmem(p, avail, "\r\n", 2);
			if (!eol)
				return avail > TRAILER_LINE_MAX ? -EMSGSIZE : 0;
			if (eol - p > TRAILER_LINE_MAX)
				return -EMSGSIZE;
			r->cpos = (size_t)(eol + 2 - r->raw);
			if (eol == p) {
				r->cstate = CH_DONE;
				return finish(r, r->wpos - r->head_len);
			}
			break; /* a trailer field: not needed */
		default:
			return 1;
		}
	}
}

static int step(struct tw_reader *r)
{
	if (r->done)
		return 1;
	if (!r->head_len) {
		size_t from = r->scan > 3 ? r->scan - 3 : 0, lim = r->len < TW_HEAD_MAX ? r->len : TW_HEAD_MAX;
		char *e = lim > from ? memmem(r->raw + from, lim - from, "\r\n\r\n", 4) : NULL;
		int rr;

		r->scan = lim;
		if (!e)
			return r->len >= TW_HEAD_MAX ? -EMSGSIZE : 0;
		r->head_len = (size_t)(e + 4 - r->raw);
		rr = parse_head(r);
		if (rr < 0)
			return rr;
	}
	if (r->chunked)
		return chunk_step(r);
	if (r->content_length >= 0) {
		if (r->len - r->head_len >= (size_t)r->content_length)
			return finish(r, (size_t)r->content_length);
		return 0;
	}
	/* delimited by the close */
	if (r->len - r->head_len > TW_BODY_MAX)
		return -EMSGSIZE;
	return 0;
}

int tw_reader_wrote(struct tw_reader *r, size_t n)
{
	int e;

	if (n > TW_RAW_MAX - r->len)
		return -EINVAL;
	r->len += n;
	r->raw[r->len] = '\0';
	e = step(r);
	if (e == 0 && r->len == TW_RAW_MAX)
		return -EMSGSIZE;
	return e;
}

int tw_reader_feed(struct tw_reader *r, const void *p, size_t n)
{
	size_t cap;
	char *dst = tw_reader_space(r, &cap);

	if (n > cap)
		return -EMSGSIZE;
	memcpy(dst, p, n);
	return tw_reader_wrote(r, n);
}

int tw_reader_eof(struct tw_reader *r)
{
	if (r->done)
		return 1;
	if (!r->head_len || r->chunked || r->content_length >= 0)
		return -EPROTO;
	return finish(r, r->len - r->head_len);
}

/* Escaped for a terminal; "..." marks a cut (cap > 4). */
static void copy_escaped(char *dst, size_t cap, const char *s, size_t len)
{
	if (tl_term_escape(dst, cap - 3, s, len) >= cap - 3)
		strcat(dst, "...");
}

int tw_verdict_parse(const char *body, size_t len, const char *uid, struct tw_verdict *v)
{
	struct json_tokener *tok;
	struct json_object *o = NULL, *f;
	int r = -EPROTO;
	size_t end;

	memset(v, 0, sizeof(*v));
	if (len > TW_BODY_MAX || len > (size_t)INT32_MAX)
		return -EPROTO;
	tok = json_tokener_new_ex(16);
	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	o = json_tokener_parse_ex(tok, body, (int)len);
	if (!o || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(o, json_type_object))
		goto out;
	/* nothing but white space after the object */
	for (end = json_tokener_get_parse_end(tok); end < len; end++)
		if (!strchr(" \t\r\n", body[end]) || !body[end])
			goto out;
	if (json_object_object_get_ex(o, "uid", &f) &&
	    (!json_object_is_type(f, json_type_string) || strcasecmp(json_object_get_string(f), uid) != 0))
		goto out; /* an answer about another Pod */
	if (json_object_object_get_ex(o, "summary", &f) && json_object_is_type(f, json_type_string))
		copy_escaped(v->summary, sizeof(v->summary), json_object_get_string(f),
			     (size_t)json_object_get_string_len(f));
	else if (json_object_object_get_ex(o, "error", &f) && json_object_is_type(f, json_type_string))
		copy_escaped(v->summary, sizeof(v->summary), json_object_get_string(f),
			     (size_t)json_object_get_string_len(f));
	if (json_object_object_get_ex(o, "unmet", &f) && json_object_is_type(f, json_type_string))
		copy_escaped(v->unmet, sizeof(v->unmet), json_object_get_string(f),
			     (size_t)json_object_get_string_len(f));
	if (!json_object_object_get_ex(o, "drained", &f) || !json_object_is_type(f, json_type_boolean)) {
		/* an error answer (400, 404, 429, 503) has no verdict but says why */
		r = json_object_object_get_ex(o, "error", &f) ? -ENOMSG : -EPROTO;
		goto out;
	}
	v->drained = json_object_get_boolean(f);
	r = 0;
out:
	json_object_put(o);
	json_tokener_free(tok);
	return r;
}
