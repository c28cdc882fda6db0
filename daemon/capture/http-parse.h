/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* HTTP/1.x message heads as the kernel copies them from a socket: a bounded
 * prefix of one read or write (docs/http-capture.md). Only the start line and
 * a few named headers are kept; bodies are never looked at. Everything here
 * is peer-controlled bytes: every field is bounded and a value that does not
 * fit is cut (and flagged), never overflowed. */

#define TL_HTTP_METHOD_MAX 16
#define TL_HTTP_PATH_MAX 256
#define TL_HTTP_ID_MAX 128
/* Header names a parser looks for (request-id headers, traceparent). */
#define TL_HTTP_WANT_MAX 8
/* A head longer than this is not HTTP we want to follow. */
#define TL_HTTP_HEAD_MAX 16384

enum tl_http_kind {
	TL_HTTP_NONE = 0,     /* not the start of an HTTP/1.x message */
	TL_HTTP_REQUEST = 1,
	TL_HTTP_RESPONSE = 2,
	TL_HTTP_TLS = 3,      /* a TLS record header: the connection is not plaintext HTTP */
	TL_HTTP_H2 = 4,       /* the HTTP/2 connection preface */
};

/* What the first bytes of a buffer say. Needs at most 8 bytes; with fewer it
 * answers from what it has (a short buffer that could still start a message
 * counts as that message). */
enum tl_http_kind tl_http_classify(const uint8_t *buf, size_t len);

struct tl_http_want {
	const char *names[TL_HTTP_WANT_MAX]; /* lower case, e.g. "x-request-id" */
	int n;
};

struct tl_http_head {
	enum tl_http_kind kind;
	uint8_t minor;                      /* HTTP/1.<minor> */
	uint16_t status;                    /* response */
	char method[TL_HTTP_METHOD_MAX];    /* request */
	char path[TL_HTTP_PATH_MAX];        /* request target, cut to fit */
	bool path_cut;
	/* The first wanted header found, by the order of tl_http_want (so a
	 * request-id header configured first wins over traceparent). */
	char id[TL_HTTP_ID_MAX];
	int id_header;                      /* index into tl_http_want, -1 = none */
	bool id_cut;
	bool chunked;
	bool has_length;
	uint64_t content_length;
	bool conn_close;
	bool upgrade;                       /* "Upgrade" header or "Connection: upgrade" */
	bool expect_continue;
	size_t head_len;                    /* bytes up to and including the blank line */
};

/* Parses a message head from buf. Returns:
 *   0        the head is complete (ret->head_len bytes), *ret filled;
 *   -EAGAIN  the head is not complete yet: *ret holds what the complete
 *            lines said (the caller may use it if no more bytes will come);
 *   -EBADMSG not an HTTP/1.x message head (ret->kind says TLS/H2 if so);
 *   -E2BIG   the head is longer than TL_HTTP_HEAD_MAX.
 * want may be NULL (no headers wanted). The strings are NUL-terminated;
 * their bytes past the NUL are not set. */
int tl_http_parse_head(const uint8_t *buf, size_t len, const struct tl_http_want *want,
		       struct tl_http_head *ret);

/* "GET" and friends: a token of upper-case letters, as RFC 9110 methods in use
 * are. */
bool tl_http_method_ok(const char *m, size_t len);
