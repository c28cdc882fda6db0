/* SPDX-License-Identifier: Apache-2.0 */
/* termline-wait's reader of the agent's answer (tools/termline-wait/answer.c):
 * the same answer however the bytes are split, bounds on header and body,
 * malformed responses refused, and the verdict object checked field by
 * field. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "../check-run.h"

#define UID "6b1f2c3d-0000-4000-8000-00000000beef"
#define BODY "{\"uid\":\"" UID "\",\"drained\":true,\"unmet\":\"none\",\"summary\":\"out of rotation\"}"

static struct tw_reader rd;

/* Feeds s in pieces cut at the given offsets (ascending), then the close
 * when eof. Returns the last result. */
static int feed_split(const char *s, size_t len, const size_t *cuts, size_t ncuts, bool eof)
{
	size_t at = 0;
	int r = 0;

	tw_reader_init(&rd);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t to = i < ncuts ? cuts[i] : len;

		r = tw_reader_feed(&rd, s + at, to - at);
		at = to;
		if (r != 0)
			return r;
	}
	return eof ? tw_reader_eof(&rd) : r;
}

static int feed_all(const char *s, bool eof)
{
	return feed_split(s, strlen(s), NULL, 0, eof);
}

static void assert_split_everywhere(const char *resp, bool eof, const char *want_body)
{
	size_t len = strlen(resp);

	for (size_t a = 0; a <= len; a++) {
		ck_assert_int_eq(feed_split(resp, len, &a, 1, eof), 1);
		ck_assert_int_eq(rd.status, 200);
		ck_assert_uint_eq(rd.body_len, strlen(want_body));
		ck_assert_str_eq(rd.body, want_body);
	}
	/* and a byte at a time */
	tw_reader_init(&rd);
	for (size_t i = 0; i < len; i++) {
		int r = tw_reader_feed(&rd, resp + i, 1);

		ck_assert_int_eq(r, i + 1 == len && !eof ? 1 : 0);
	}
	if (eof)
		ck_assert_int_eq(tw_reader_eof(&rd), 1);
	ck_assert_str_eq(rd.body, want_body);
}

START_TEST(content_length_split_everywhere)
{
	char resp[512];

	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
		 "Connection: close\r\n\r\n%s",
		 strlen(BODY), BODY);
	assert_split_everywhere(resp, false, BODY);
}
END_TEST

START_TEST(chunked_split_everywhere)
{
	static const char resp[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
				   "5\r\n{\"dra\r\n"
				   "0a;name=value\r\nined\":true\r\n"
				   "1 \r\n}\r\n"
				   "0\r\nX-Trailer: 1\r\n\r\n";

	assert_split_everywhere(resp, false, "{\"drained\":true}");
}
END_TEST

START_TEST(close_delimited_split_everywhere)
{
	assert_split_everywhere("HTTP/1.0 200 OK\r\nServer: x\r\n\r\n{\"drained\":true}", true,
				"{\"drained\":true}");
	/* an empty body is complete at the close too */
	ck_assert_int_eq(feed_all("HTTP/1.1 200 OK\r\n\r\n", true), 1);
	ck_assert_uint_eq(rd.body_len, 0);
}
END_TEST

START_TEST(cut_short)
{
	/* the agent went away mid-answer */
	ck_assert_int_eq(feed_all("HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n{\"drained\":", true), -EPROTO);
	ck_assert_int_eq(feed_all("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"dra", true),
			 -EPROTO);
	ck_assert_int_eq(feed_all("HTTP/1.1 200 OK\r\nContent-", true), -EPROTO);
	ck_assert_int_eq(feed_all("", true), -EPROTO);
}
END_TEST

START_TEST(bounds)
{
	static char big[TW_RAW_MAX + 64];
	size_t n;
	int r = 0;

	/* a header past TW_HEAD_MAX, fed in pieces */
	tw_reader_init(&rd);
	ck_assert_int_eq(tw_reader_feed(&rd, "HTTP/1.1 200 OK\r\nX-Pad: ", 24), 0);
	memset(big, 'a', sizeof(big));
	for (n = 24; r == 0 && n < 20000; n += 100)
		r = tw_reader_feed(&rd, big, 100);
	ck_assert_int_eq(r, -EMSGSIZE);
	ck_assert_uint_le(n, TW_HEAD_MAX + 200);

	/* a header of just under the bound is fine */
	n = (size_t)snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nX-Pad: ");
	memset(big + n, 'a', TW_HEAD_MAX - n - 26);
	n = TW_HEAD_MAX - 26;
	n += (size_t)snprintf(big + n, sizeof(big) - n, "\r\nContent-Length: 2\r\n\r\n{}");
	ck_assert_int_eq(feed_split(big, n, NULL, 0, false), 1);
	ck_assert_str_eq(rd.body, "{}");

	/* a Content-Length past TW_BODY_MAX is refused on sight */
	ck_assert_int_eq(feed_all("HTTP/1.1 200 OK\r\nContent-Length: 65537\r\n\r\n", false), -EMSGSIZE);
	ck_assert_int_eq(feed_all("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", false),
			 -EMSGSIZE);
	ck_assert_int_eq(feed_all("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10001\r\n", false),
			 -EMSGSIZE);
	ck_assert_int_eq(feed_all("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				  "fffffffffffffffffffffffff\r\n", false),
			 -EMSGSIZE);

	/* an endless chunked stream ends at the body bound */
	tw_reader_init(&rd);
	r = tw_reader_feed(&rd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 47);
	ck_assert_int_eq(r, 0);
	memset(big, '{', 4096);
	for (n = 0; r == 0 && n < 1000; n++) {
		r = tw_reader_feed(&rd, "1000\r\n", 6);
		if (r == 0)
			r = tw_reader_feed(&rd, big, 4096);
		if (r == 0)
			r = tw_reader_feed(&rd, "\r\n", 2);
	}
	ck_assert_int_eq(r, -EMSGSIZE);
	ck_assert_uint_le(n, TW_BODY_MAX / 4096 + 1);

	/* so does a body up to the close */
	tw_reader_init(&rd);
	r = tw_reader_feed(&rd, "HTTP/1.1 200 OK\r\n\r\n", 19);
	for (n = 0; r == 0 && n < 1000; n++)
		r = tw_reader_feed(&rd, big, 4096);
	ck_assert_int_eq(r, -EMSGSIZE);

	/* nothing is taken past the buffer */
	tw_reader_init(&rd);
	ck_assert_int_eq(tw_reader_feed(&rd, big, sizeof(big)), -EMSGSIZE);
}
END_TEST

START_TEST(malformed)
{
	static const char *const bad[] = {
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 099 OK\r\n\r\n",
		"HTTP/1.1 100 Continue\r\n\r\n",
		"HTTP/1.1 200\tOK\r\n\r\n",
		"HTTP/1.1 200 O\x1bK\r\n\r\n",
		"http/1.1 200 OK\r\n\r\n",
		"SSH-2.0-OpenSSH_9.2\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\nY: b\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
		"HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nName : x\r\n\r\n",
		"HTTP/1.1 200 OK\r\n: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nx\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XY",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2x\r\n{}\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;\x1b\r\n{}\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = feed_all(bad[i], true);

		ck_assert_msg(r == -EPROTO, "case %zu: %d", i, r);
	}
	/* a duplicate Content-Length with the same value is one */
	ck_assert_int_eq(feed_all("HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\n{}", false), 1);
	/* the status without a reason phrase */
	ck_assert_int_eq(feed_all("HTTP/1.1 504\r\nContent-Length: 0\r\n\r\n", false), 1);
	ck_assert_int_eq(rd.status, 504);
}
END_TEST

static int verdict(const char *body, struct tw_verdict *v)
{
	return tw_verdict_parse(body, strlen(body), UID, v);
}

START_TEST(verdict_fields)
{
	struct tw_verdict v;
	char deep[64];

	ck_assert_int_eq(verdict(BODY, &v), 0);
	ck_assert(v.drained);
	ck_assert_str_eq(v.unmet, "none");
	ck_assert_str_eq(v.summary, "out of rotation");
	ck_assert_int_eq(verdict("{\"drained\":false,\"unmet\":\"traffic\"}\n", &v), 0);
	ck_assert(!v.drained);
	ck_assert_str_eq(v.unmet, "traffic");
	/* the UID as the downward API gives it, or as the agent echoes it */
	ck_assert_int_eq(verdict("{\"uid\":\"6B1F2C3D-0000-4000-8000-00000000BEEF\",\"drained\":true}", &v), 0);

	ck_assert_int_eq(verdict("{\"error\":\"bad timeout\",\"summary\":\"bad timeout\"}", &v), -ENOMSG);
	ck_assert_str_eq(v.summary, "bad timeout");

	static const char *const bad[] = {
		"", "{{{{{", "[true]", "true", "{\"drained\":\"true\"}", "{\"drained\":1}",
		"{\"uid\":\"ffffffff\",\"drained\":true}", "{\"uid\":7,\"drained\":true}",
		"{\"drained\":true} {\"drained\":false}", "{\"drained\":true}x",
		"{\"drained\":true", "{\"drained\":tru}",
		"{\"drained\":true,}", "{\"summary\":\"x\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		{
			int r = verdict(bad[i], &v);

			ck_assert_msg(r == -EPROTO, "case %zu: %d", i, r);
		}
		ck_assert(!v.drained);
	}
	/* 16 levels deep is an answer; 17 is not */
	snprintf(deep, sizeof(deep), "{\"drained\":true,\"x\":%.*s%.*s}", 14,
		 "[[[[[[[[[[[[[[[[[[[[", 14, "]]]]]]]]]]]]]]]]]]]]");
	ck_assert_int_eq(verdict(deep, &v), 0);
	snprintf(deep, sizeof(deep), "{\"drained\":true,\"x\":%.*s%.*s}", 16,
		 "[[[[[[[[[[[[[[[[[[[[", 16, "]]]]]]]]]]]]]]]]]]]]");
	ck_assert_int_eq(verdict(deep, &v), -EPROTO);
}
END_TEST

START_TEST(verdict_text_escaped)
{
	struct tw_verdict v;
	char body[40000];
	size_t n;

	ck_assert_int_eq(verdict("{\"drained\":true,\"unmet\":\"a\\u001b[2J\","
				 "\"summary\":\"x\\u001b]0;t\\u0007y\\n\\u0000z\\u009b\"}", &v), 0);
	ck_assert_str_eq(v.summary, "x\\x1b]0;t\\x07y\\n\\x00z\\u009b");
	ck_assert_str_eq(v.unmet, "a\\x1b[2J");
	/* long text: cut at an escape's boundary, marked */
	n = (size_t)snprintf(body, sizeof(body), "{\"drained\":true,\"summary\":\"");
	for (int i = 0; i < 5000; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "\\u001b");
	snprintf(body + n, sizeof(body) - n, "\",\"unmet\":\"%s\"}", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	ck_assert_int_eq(verdict(body, &v), 0);
	n = strlen(v.summary);
	ck_assert_uint_lt(n, sizeof(v.summary));
	ck_assert_str_eq(v.summary + n - 7, "\\x1b...");
	ck_assert_uint_eq((n - 3) % 4, 0);
	ck_assert_uint_eq(strlen(v.unmet), sizeof(v.unmet) - 1);
	ck_assert_str_eq(v.unmet + strlen(v.unmet) - 3, "...");
}
END_TEST

static Suite *answer_suite(void)
{
	Suite *s = suite_create("wait-answer");
	TCase *tc = tcase_create("wait-answer");

	tcase_add_test(tc, content_length_split_everywhere);
	tcase_add_test(tc, chunked_split_everywhere);
	tcase_add_test(tc, close_delimited_split_everywhere);
	tcase_add_test(tc, cut_short);
	tcase_add_test(tc, bounds);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, verdict_fields);
	tcase_add_test(tc, verdict_text_escaped);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int failed = tl_check_run(answer_suite());

	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
