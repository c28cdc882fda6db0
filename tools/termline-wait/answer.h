/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The agent's answer to GET /v1/pods/{uid}/drained, read within bounds:
 * an HTTP/1.1 response (RFC 9112) of at most TW_HEAD_MAX bytes of status
 * line and header fields and TW_BODY_MAX bytes of body (Content-Length,
 * chunked, or up to the close), whose body is the verdict object of
 * docs/drain.md. Anything else is no verdict. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TW_HEAD_MAX 8192
#define TW_BODY_MAX 65536
/* Chunked framing of a body that fits TW_BODY_MAX: one-byte chunks at worst
 * cost 6 bytes each, but the agent's chunks (libmicrohttpd) are whole
 * buffers; 16 KiB of framing is room for any chunking a server uses. */
#define TW_RAW_MAX (TW_HEAD_MAX + TW_BODY_MAX + 16384)

struct tw_reader {
	size_t len;            /* bytes in raw */
	size_t scan;           /* where the search for the header's end resumes */
	size_t head_len;       /* through the empty line; 0 until it arrived */
	int status;
	int64_t content_length; /* -1 without */
	bool chunked;
	bool done;
	/* chunked decoding, in place: data moves from cpos down to wpos */
	int cstate;
	size_t cpos, wpos, remain;
	char *body;            /* once done: body_len bytes, NUL-terminated */
	size_t body_len;
	char raw[TW_RAW_MAX + 1];
};

void tw_reader_init(struct tw_reader *r);
/* Where the next bytes go, and how many fit (0: the answer is too big). */
char *tw_reader_space(struct tw_reader *r, size_t *ret_cap);
/* n bytes were written at tw_reader_space(). Returns 1 when the answer is
 * complete, 0 when more is needed, -EMSGSIZE past a bound, -EPROTO when it
 * is not an HTTP/1.x response. */
int tw_reader_wrote(struct tw_reader *r, size_t n);
/* Copies p in (tests, fuzzing); as tw_reader_wrote. */
int tw_reader_feed(struct tw_reader *r, const void *p, size_t n);
/* The peer closed: 1 when the answer is complete (a body without length
 * ends here), -EPROTO when it was cut short. */
int tw_reader_eof(struct tw_reader *r);

struct tw_verdict {
	bool drained;          /* "drained": true */
	char unmet[32];        /* "unmet", when a short word */
	char summary[512];     /* "summary" (or "error"), escaped for a terminal, cut with "..." */
};

/* The body as the agent's verdict object: JSON (at most 16 levels deep)
 * holding "drained" as a boolean and, where it has one, the uid asked
 * about. Returns 0; -ENOMSG for an error object (an "error" string and no
 * verdict; its text in summary); -EPROTO when it is neither. */
int tw_verdict_parse(const char *body, size_t len, const char *uid, struct tw_verdict *v);
