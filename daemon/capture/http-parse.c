/* SPDX-License-Identifier: Apache-2.0 */
/* HTTP/1.x heads from captured socket prefixes (RFC 9112 sections 2-5).
 * Lenient where real peers are (a bare LF ends a line, header names in any
 * case), strict where leniency would misread bytes that are not HTTP (the
 * start line must be exactly METHOD SP target SP HTTP/1.d, or
 * HTTP/1.d SP 3DIGIT). */
#include <errno.h>
#include <string.h>

#include "http-parse.h"

static bool is_upper(uint8_t c)
{
	return c >= 'A' && c <= 'Z';
}

static bool is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

static uint8_t lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c + 32) : c;
}

/* RFC 9110 tchar, by table: every byte of every header name is checked,
 * once per captured request (bench/bench-http-capture --consumer-only). */
static bool is_tchar(uint8_t c)
{
	static const uint32_t bits[8] = {
		0x00000000, /* 0x00-0x1f */
		0x03ff6cfa, /* !#$%&'*+-. 0-9 */
		0xc7fffffe, /* A-Z ^ _ */
		0x57ffffff, /* ` a-z | ~ */
	};

	return (bits[c >> 5] >> (c & 31)) & 1;
}

static bool is_token(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_tchar(p[i]))
			return false;
	return true;
}

bool tl_http_method_ok(const char *m, size_t len)
{
	if (len == 0 || len >= TL_HTTP_METHOD_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_upper((uint8_t)m[i]))
			return false;
	return true;
}

static const char h2_preface[] = "PRI * HTTP/2.0\r\n";

/* The first eight bytes as one number: the classification's common case
 * (every captured head has eight) is two compares instead of two memcmp()
 * calls. */
static uint64_t word8(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

enum tl_http_kind tl_http_classify(const uint8_t *buf, size_t len)
{
	static const char resp[] = "HTTP/1.";
	size_t i;

	if (len == 0)
		return TL_HTTP_NONE;
	/* TLS record: content type handshake (22) or application data (23),
	 * then major version 3 (RFC 8446 section 5.1). */
	if ((buf[0] == 0x16 || buf[0] == 0x17) && (len < 2 || buf[1] == 0x03))
		return TL_HTTP_TLS;
	if (len >= 8) {
		uint64_t w = word8(buf);

		if (w == word8((const uint8_t *)h2_preface))
			return TL_HTTP_H2;
		/* "HTTP/1." and any eighth byte (the mask's eighth byte is
		 * the literal's NUL, on either byte order) */
		if (((w ^ word8((const uint8_t *)"HTTP/1.x")) &
		     word8((const uint8_t *)"\xff\xff\xff\xff\xff\xff\xff")) == 0)
			return TL_HTTP_RESPONSE;
	} else {
		if (memcmp(buf, h2_preface, len) == 0 && len >= 4)
			return TL_HTTP_H2;
		if (memcmp(buf, resp, len < 7 ? len : 7) == 0)
			return TL_HTTP_RESPONSE;
	}
	for (i = 0; i < len && i < TL_HTTP_METHOD_MAX; i++) {
		if (buf[i] == ' ')
			return i > 0 ? TL_HTTP_REQUEST : TL_HTTP_NONE;
		if (!is_upper(buf[i]))
			return TL_HTTP_NONE;
	}
	return i == len ? TL_HTTP_REQUEST : TL_HTTP_NONE;
}

/* One line [p, end-of-line): returns its length without CR LF and sets
 * *next past the LF, or -1 when no LF is in the buffer. */
static long line_end(const uint8_t *p, size_t len, size_t *next)
{
	const uint8_t *lf = memchr(p, '\n', len);
	size_t n;

	if (!lf)
		return -1;
	n = (size_t)(lf - p);
	*next = n + 1;
	if (n > 0 && p[n - 1] == '\r')
		n--;
	return (long)n;
}

static void copy_cut(char *dst, size_t cap, const uint8_t *src, size_t n, bool *cut)
{
	size_t k = n < cap - 1 ? n : cap - 1;

	/* Control bytes would end up in JSON and logs: replace them. */
	for (size_t i = 0; i < k; i++)
		dst[i] = (src[i] < 0x20 || src[i] == 0x7f) ? '?' : (char)src[i];
	dst[k] = '\0';
	if (cut)
		*cut = k < n;
}

static int parse_version(const uint8_t *p, size_t n, uint8_t *minor)
{
	if (n != 8 || memcmp(p, "HTTP/1.", 7) != 0 || !is_digit(p[7]))
		return -EBADMSG;
	*minor = (uint8_t)(p[7] - '0');
	return 0;
}

static int parse_start(const uint8_t *p, size_t n, struct tl_http_head *h)
{
	if (n >= 7 && memcmp(p, "HTTP/1.", 7) == 0) {
		/* HTTP/1.d SP 3DIGIT [SP reason] */
		if (n < 12 || parse_version(p, 8, &h->minor) < 0 || p[8] != ' ' || !is_digit(p[9]) ||
		    !is_digit(p[10]) || !is_digit(p[11]) || (n > 12 && p[12] != ' '))
			return -EBADMSG;
		h->kind = TL_HTTP_RESPONSE;
		h->status = (uint16_t)((p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0'));
		if (h->status < 100)
			return -EBADMSG;
		return 0;
	}
	const uint8_t *sp1 = memchr(p, ' ', n), *sp2;
	size_t mlen;

	if (!sp1)
		return -EBADMSG;
	mlen = (size_t)(sp1 - p);
	if (!tl_http_method_ok((const char *)p, mlen))
		return -EBADMSG;
	/* The target holds no space; the version is the last 8 bytes. */
	if (n < mlen + 1 + 1 + 1 + 8)
		return -EBADMSG;
	sp2 = p + n - 9;
	if (*sp2 != ' ' || sp2 <= sp1 || memchr(sp1 + 1, ' ', (size_t)(sp2 - sp1 - 1)))
		return -EBADMSG;
	if (parse_version(sp2 + 1, 8, &h->minor) < 0)
		return -EBADMSG;
	h->kind = TL_HTTP_REQUEST;
	memcpy(h->method, p, mlen);
	h->method[mlen] = '\0';
	copy_cut(h->path, sizeof(h->path), sp1 + 1, (size_t)(sp2 - sp1 - 1), &h->path_cut);
	return 0;
}

static bool name_is_n(const uint8_t *name, size_t n, const char *want, size_t wl)
{
	if (wl != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (lower(name[i]) != (uint8_t)want[i])
			return false;
	return true;
}

/* want is NUL-terminated lower case: compared as it is walked, no strlen()
 * per header line. */
static bool name_is(const uint8_t *name, size_t n, const char *want)
{
	for (size_t i = 0; i < n; i++)
		if (!want[i] || lower(name[i]) != (uint8_t)want[i])
			return false;
	return want[n] == '\0';
}

/* A literal's length is known at compile time: most names differ in it. */
#define NAME_IS(name, n, lit) name_is_n(name, n, lit, sizeof(lit) - 1)

/* Is token (lower case) one of the comma-separated elements of v? */
static bool has_token(const uint8_t *v, size_t n, const char *token)
{
	size_t i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (name_is(v + s, e - s, token))
			return true;
	}
	return false;
}

static void parse_header(const uint8_t *p, size_t n, const struct tl_http_want *want,
			 struct tl_http_head *h)
{
	const uint8_t *colon, *v, *ve;
	uint8_t first = lower(p[0]);
	bool maybe = first == 'c' || first == 't' || first == 'u' || first == 'e';
	size_t nl;

	/* Most lines (Host, Date, Server, User-Agent, Accept...) are none of
	 * the names below: told by their first letter, before the colon is
	 * looked for. */
	for (int i = 0; !maybe && want && i < want->n && i < TL_HTTP_WANT_MAX; i++)
		maybe = want->names[i] && (uint8_t)want->names[i][0] == first;
	if (!maybe)
		return;
	colon = memchr(p, ':', n);
	if (!colon || colon == p)
		return;
	nl = (size_t)(colon - p);
	/* A name that is not a token is no header: the fixed names below are
	 * tokens, so only a configured name that matched is checked (once
	 * per head, not every byte of every name). */
	v = colon + 1;
	ve = p + n;
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;

	for (int i = 0; want && i < want->n && i < TL_HTTP_WANT_MAX; i++) {
		if (!want->names[i] || !name_is(p, nl, want->names[i]))
			continue;
		if (!is_token(p, nl))
			return;
		/* An earlier-listed header wins; the first instance of each. */
		if (h->id_header < 0 || i < h->id_header) {
			copy_cut(h->id, sizeof(h->id), v, (size_t)(ve - v), &h->id_cut);
			h->id_header = i;
		}
		break;
	}
	if (NAME_IS(p, nl, "content-length")) {
		uint64_t x = 0;
		const uint8_t *q = v;

		if (q == ve)
			return;
		for (; q < ve && is_digit(*q); q++) {
			if (x > (UINT64_MAX - 9) / 10)
				return;
			x = x * 10 + (uint64_t)(*q - '0');
		}
		if (q == ve) {
			h->has_length = true;
			h->content_length = x;
		}
	} else if (NAME_IS(p, nl, "transfer-encoding")) {
		if (has_token(v, (size_t)(ve - v), "chunked"))
			h->chunked = true;
	} else if (NAME_IS(p, nl, "connection")) {
		if (has_token(v, (size_t)(ve - v), "close"))
			h->conn_close = true;
		if (has_token(v, (size_t)(ve - v), "upgrade"))
			h->upgrade = true;
	} else if (NAME_IS(p, nl, "upgrade")) {
		h->upgrade = true;
	} else if (NAME_IS(p, nl, "expect")) {
		if (has_token(v, (size_t)(ve - v), "100-continue"))
			h->expect_continue = true;
	}
}

/* Every field empty, strings as empty strings: their bytes past the NUL are
 * left as they were (a memset() of the whole ~450 bytes was a fifth of the
 * parse, bench-http-capture --consumer-only). */
static void head_init(struct tl_http_head *h)
{
	h->kind = TL_HTTP_NONE;
	h->minor = 0;
	h->status = 0;
	h->method[0] = '\0';
	h->path[0] = '\0';
	h->path_cut = false;
	h->id[0] = '\0';
	h->id_header = -1;
	h->id_cut = false;
	h->chunked = false;
	h->has_length = false;
	h->content_length = 0;
	h->conn_close = false;
	h->upgrade = false;
	h->expect_continue = false;
	h->head_len = 0;
}

int tl_http_parse_head(const uint8_t *buf, size_t len, const struct tl_http_want *want,
		       struct tl_http_head *ret)
{
	/* Filled in place: the head is ~450 bytes, and a copy of it per
	 * return was a tenth of the parse (bench-http-capture --consumer-only). */
	struct tl_http_head *h = ret;
	size_t off = 0, next;
	long n;
	int r;

	head_init(h);
	h->kind = tl_http_classify(buf, len);
	if (h->kind == TL_HTTP_NONE || h->kind == TL_HTTP_TLS || h->kind == TL_HTTP_H2)
		return -EBADMSG;
	n = line_end(buf, len < TL_HTTP_HEAD_MAX ? len : TL_HTTP_HEAD_MAX, &next);
	if (n < 0)
		return len >= TL_HTTP_HEAD_MAX ? -E2BIG : -EAGAIN;
	r = parse_start(buf, (size_t)n, h);
	if (r < 0) {
		head_init(h);
		return r;
	}
	off = next;
	for (;;) {
		size_t lim = len < TL_HTTP_HEAD_MAX ? len : TL_HTTP_HEAD_MAX;

		n = line_end(buf + off, lim - off, &next);
		if (n < 0)
			return len >= TL_HTTP_HEAD_MAX ? -E2BIG : -EAGAIN;
		if (n == 0) {
			h->head_len = off + next;
			return 0;
		}
		/* obs-fold continuation lines carry nothing we keep */
		if (buf[off] != ' ' && buf[off] != '\t')
			parse_header(buf + off, (size_t)n, want, h);
		off += next;
	}
}
