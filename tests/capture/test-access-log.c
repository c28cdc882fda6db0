/* SPDX-License-Identifier: Apache-2.0 */
/* CRI log lines (P/F joining, any chunking, garbage) and proxy access-log
 * records in Envoy's default, Istio's text and Istio's JSON formats. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "access-log.h"
#include "clock.h"
#include "cri-log.h"
#include "../check-run.h"

START_TEST(test_cri_line)
{
	struct tl_cri_piece p;
	const char *l = "2026-12-01T03:04:05.123456789Z stdout F hello world";
	char ts[TL_TIME_STRLEN];

	ck_assert_int_eq(tl_cri_parse_line(l, strlen(l), &p), 0);
	ck_assert(!p.partial && !p.is_stderr);
	ck_assert_int_eq(p.len, 11);
	ck_assert(memcmp(p.text, "hello world", 11) == 0);
	ck_assert_str_eq(tl_time_format(p.time_ns, ts), "2026-12-01T03:04:05.123456789Z");

	l = "2026-12-01T03:04:05.1+01:00 stderr P:x part";
	ck_assert_int_eq(tl_cri_parse_line(l, strlen(l), &p), 0);
	ck_assert(p.partial && p.is_stderr);
	ck_assert_int_eq(p.len, 4);
	l = "2026-12-01T03:04:05Z stdout F";
	ck_assert_int_eq(tl_cri_parse_line(l, strlen(l), &p), 0);
	ck_assert_int_eq(p.len, 0);

	static const char *const bad[] = {
		"", "garbage", "2026-12-01T03:04:05Z", "2026-12-01T03:04:05Z stdout",
		"2026-12-01T03:04:05Z stdin F x", "2026-12-01T03:04:05Z stdout X x",
		"2026-12-01T03:04:05Z stdout FF x", "yesterday stdout F x",
		"2026-13-01T03:04:05Z stdout F x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(tl_cri_parse_line(bad[i], strlen(bad[i]), &p) == -EINVAL, "%s", bad[i]);
}
END_TEST

struct rec {
	char text[256];
	int64_t t;
	bool err, cut;
	size_t len;
};
static struct rec recs[16];
static int nrecs;

static void on_rec(void *ud, int64_t t, bool is_stderr, const char *text, size_t len, bool cut)
{
	(void)ud;
	ck_assert_int_lt(nrecs, 16);
	ck_assert_int_eq(text[len], '\0');
	snprintf(recs[nrecs].text, sizeof(recs[nrecs].text), "%s", text);
	recs[nrecs].t = t;
	recs[nrecs].err = is_stderr;
	recs[nrecs].cut = cut;
	recs[nrecs].len = len;
	nrecs++;
}

static const char cri_file[] =
	"2026-12-01T00:00:01.000000001Z stdout P first \n"
	"2026-12-01T00:00:02Z stderr F an error line\n"
	"2026-12-01T00:00:03Z stdout P second \n"
	"not a cri line at all\n"
	"2026-12-01T00:00:04Z stdout F third\n"
	"2026-12-01T00:00:05Z stdout F \n"
	"2026-12-01T00:00:06Z stdout F last\n"
	"2026-12-01T00:00:07Z stdout F unfinished";

static void check_file_records(void)
{
	ck_assert_int_eq(nrecs, 4);
	ck_assert_str_eq(recs[0].text, "an error line");
	ck_assert(recs[0].err);
	/* Joined from P, P, F; the time of its first piece; the garbage line
	 * between the pieces does not break them. */
	ck_assert_str_eq(recs[1].text, "first second third");
	ck_assert_int_eq(recs[1].t % 1000000000LL, 1);
	ck_assert(!recs[1].err && !recs[1].cut);
	ck_assert_str_eq(recs[2].text, "");
	ck_assert_str_eq(recs[3].text, "last");
}

START_TEST(test_cri_reader_split)
{
	size_t n = strlen(cri_file);

	for (size_t k = 0; k <= n; k++) {
		struct tl_cri_reader *r;

		nrecs = 0;
		ck_assert_int_eq(tl_cri_reader_new(&r), 0);
		ck_assert_int_eq(tl_cri_reader_feed(r, cri_file, k, on_rec, NULL), 0);
		ck_assert_int_eq(tl_cri_reader_feed(r, cri_file + k, n - k, on_rec, NULL), 0);
		check_file_records();
		ck_assert_int_eq(tl_cri_reader_garbage(r), 1);
		tl_cri_reader_free(r);
	}
	/* One byte at a time. */
	{
		struct tl_cri_reader *r;

		nrecs = 0;
		ck_assert_int_eq(tl_cri_reader_new(&r), 0);
		for (size_t k = 0; k < n; k++)
			tl_cri_reader_feed(r, cri_file + k, 1, on_rec, NULL);
		check_file_records();
		/* The unfinished line completes later... */
		tl_cri_reader_feed(r, " now\n", 5, on_rec, NULL);
		ck_assert_int_eq(nrecs, 5);
		ck_assert_str_eq(recs[4].text, "unfinished now");
		tl_cri_reader_free(r);
	}
}
END_TEST

START_TEST(test_cri_reader_limits)
{
	struct tl_cri_reader *r;
	char *big = malloc(TL_CRI_LINE_MAX * 2);
	const char *head = "2026-12-01T00:00:01Z stdout P ";
	size_t hl = strlen(head);

	ck_assert_int_eq(tl_cri_reader_new(&r), 0);
	nrecs = 0;
	/* An over-long physical line is garbage up to its newline. */
	memset(big, 'x', TL_CRI_LINE_MAX * 2);
	big[TL_CRI_LINE_MAX * 2 - 1] = '\n';
	tl_cri_reader_feed(r, big, TL_CRI_LINE_MAX, on_rec, NULL);
	tl_cri_reader_feed(r, big + TL_CRI_LINE_MAX, TL_CRI_LINE_MAX, on_rec, NULL);
	tl_cri_reader_feed(r, "2026-12-01T00:00:01Z stdout F ok\n", 33, on_rec, NULL);
	ck_assert_int_eq(nrecs, 1);
	ck_assert_str_eq(recs[0].text, "ok");
	ck_assert_int_eq(tl_cri_reader_garbage(r), 1);
	/* Five 16 KiB P pieces: the record is cut at its limit. */
	memcpy(big, head, hl);
	memset(big + hl, 'y', 16384);
	big[hl + 16384] = '\n';
	for (int i = 0; i < 5; i++)
		tl_cri_reader_feed(r, big, hl + 16385, on_rec, NULL);
	tl_cri_reader_feed(r, "2026-12-01T00:00:01Z stdout F end\n", 34, on_rec, NULL);
	ck_assert_int_eq(nrecs, 2);
	ck_assert(recs[1].cut);
	ck_assert_int_eq(recs[1].len, TL_CRI_RECORD_MAX);
	/* reset: a P piece from before a truncation is forgotten. */
	tl_cri_reader_feed(r, "2026-12-01T00:00:01Z stdout P old \n2026-12-01T00:00:01Z stdout F ha", 67, on_rec, NULL);
	tl_cri_reader_reset(r);
	tl_cri_reader_feed(r, "2026-12-01T00:00:02Z stdout F new\n", 34, on_rec, NULL);
	ck_assert_int_eq(nrecs, 3);
	ck_assert_str_eq(recs[2].text, "new");
	tl_cri_reader_free(r);
	tl_cri_reader_free(NULL);
	free(big);
}
END_TEST

/* ---- access-log records ---- */

START_TEST(test_envoy_default)
{
	/* As termline-simpod's proxy and Envoy's default format write it. */
	const char *l = "[2026-12-01T03:04:05.123Z] \"GET /api/items?id=1 HTTP/1.1\" 503 UF 0 91 2 - \"-\" "
			"\"python-urllib/3.11\" \"req-0007\" \"127.0.0.1:15006\" \"-\"";
	struct tl_access_record r;
	char ts[TL_TIME_STRLEN];

	ck_assert_int_eq(tl_access_parse(l, strlen(l), &r), 0);
	ck_assert_int_eq(r.format, TL_ACCESS_ENVOY);
	ck_assert_str_eq(tl_time_format(r.start_ns, ts), "2026-12-01T03:04:05.123000000Z");
	ck_assert_str_eq(r.method, "GET");
	ck_assert_str_eq(r.path, "/api/items?id=1");
	ck_assert_str_eq(r.protocol, "HTTP/1.1");
	ck_assert_int_eq(r.status, 503);
	ck_assert_str_eq(r.flags, "UF");
	ck_assert_int_eq(r.duration_ms, 2);
	ck_assert_str_eq(r.request_id, "req-0007");
	ck_assert_str_eq(r.authority, "127.0.0.1:15006");
	ck_assert_str_eq(r.upstream_host, "");
	ck_assert_int_eq(r.direction, TL_DIR_UNKNOWN);

	l = "[2026-12-01T03:04:05.123Z] \"POST /x HTTP/1.1\" 200 - 10 2 15 14 \"10.0.0.1\" \"curl/8\" "
	    "\"a\"b\" \"svc:80\" \"10.1.2.3:8080\"\r";
	ck_assert_int_eq(tl_access_parse(l, strlen(l), &r), 0);
	ck_assert_str_eq(r.flags, "");
	ck_assert_str_eq(r.request_id, "a\"b"); /* Envoy does not escape quotes */
	ck_assert_str_eq(r.upstream_host, "10.1.2.3:8080");
	ck_assert_int_eq(r.duration_ms, 15);
}
END_TEST

START_TEST(test_istio_text)
{
	/* The example of Istio's access-log documentation. */
	const char *l = "[2020-11-25T21:26:18.409Z] \"GET /status/418 HTTP/1.1\" 418 - via_upstream - \"-\" 0 135 4 4 "
			"\"-\" \"curl/7.73.0-DEV\" \"84961386-6d84-929d-98bd-c5aee93b5c88\" \"httpbin:8000\" "
			"\"10.44.1.27:80\" outbound|8000||httpbin.foo.svc.cluster.local 10.44.1.23:37652 "
			"10.0.45.184:8000 10.44.1.23:46520 - default";
	struct tl_access_record r;

	ck_assert_int_eq(tl_access_parse(l, strlen(l), &r), 0);
	ck_assert_int_eq(r.format, TL_ACCESS_ISTIO);
	ck_assert_int_eq(r.status, 418);
	ck_assert_str_eq(r.details, "via_upstream");
	ck_assert_str_eq(r.request_id, "84961386-6d84-929d-98bd-c5aee93b5c88");
	ck_assert_str_eq(r.authority, "httpbin:8000");
	ck_assert_str_eq(r.upstream_host, "10.44.1.27:80");
	ck_assert_str_eq(r.upstream_cluster, "outbound|8000||httpbin.foo.svc.cluster.local");
	ck_assert_int_eq(r.direction, TL_DIR_OUTBOUND);
	ck_assert_int_eq(r.duration_ms, 4);

	/* A request the app refused while terminating: 503 UF, inbound. */
	l = "[2026-12-01T03:04:05.000Z] \"GET / HTTP/1.1\" 503 UF upstream_reset_before_response_started{connection_failure} - "
	    "\"-\" 0 91 0 - \"-\" \"wrk\" \"id-9\" \"app\" \"10.1.0.5:8080\" inbound|8080|| - 10.1.0.5:8080 10.1.0.9:5000 "
	    "outbound_.8080_._.app.default.svc.cluster.local default";
	ck_assert_int_eq(tl_access_parse(l, strlen(l), &r), 0);
	ck_assert_int_eq(r.format, TL_ACCESS_ISTIO);
	ck_assert_int_eq(r.status, 503);
	ck_assert_str_eq(r.flags, "UF");
	ck_assert_int_eq(r.direction, TL_DIR_INBOUND);
	ck_assert_str_eq(r.request_id, "id-9");
}
END_TEST

START_TEST(test_istio_json)
{
	const char *l = "{\"authority\":\"app:8080\",\"bytes_received\":0,\"bytes_sent\":91,"
			"\"downstream_local_address\":\"10.1.0.5:8080\",\"duration\":3,\"method\":\"POST\","
			"\"path\":\"/orders\",\"protocol\":\"HTTP/1.1\",\"request_id\":\"j-1\","
			"\"response_code\":503,\"response_code_details\":\"upstream_reset_before_response_started{connection_termination}\","
			"\"response_flags\":\"UC\",\"start_time\":\"2026-12-01T03:04:05.250Z\","
			"\"upstream_cluster\":\"inbound|8080||\",\"upstream_host\":\"10.1.0.5:8080\",\"route_name\":null}";
	struct tl_access_record r;

	ck_assert_int_eq(tl_access_parse(l, strlen(l), &r), 0);
	ck_assert_int_eq(r.format, TL_ACCESS_ISTIO_JSON);
	ck_assert_str_eq(r.method, "POST");
	ck_assert_str_eq(r.path, "/orders");
	ck_assert_int_eq(r.status, 503);
	ck_assert_str_eq(r.flags, "UC");
	ck_assert_str_eq(r.request_id, "j-1");
	ck_assert_int_eq(r.duration_ms, 3);
	ck_assert_int_eq(r.direction, TL_DIR_INBOUND);
	ck_assert_int_eq(r.start_ns % 1000000000LL, 250000000LL);
	/* Strings for numbers, "-" for empty, status 0 for no response. */
	l = "{\"method\":\"GET\",\"path\":\"/\",\"response_code\":\"0\",\"response_flags\":\"DC\","
	    "\"request_id\":\"-\",\"duration\":\"12\",\"start_time\":\"2026-12-01T03:04:05Z\"}  ";
	ck_assert_int_eq(tl_access_parse(l, strlen(l), &r), 0);
	ck_assert_int_eq(r.status, 0);
	ck_assert_str_eq(r.request_id, "");
	ck_assert_int_eq(r.duration_ms, 12);
}
END_TEST

START_TEST(test_not_records)
{
	static const char *const bad[] = {
		"",
		"istio-proxy: SIGTERM: draining for 5s",
		"2026-12-01T03:04:05.000000Z\tinfo\tEnvoy proxy is ready",
		/* TCP proxy records */
		"[2026-12-01T03:04:05.000Z] \"- - -\" 0 UF 0 0 1 - \"-\" \"-\" \"-\" \"-\" \"10.1.0.5:5432\"",
		/* truncated */
		"[2026-12-01T03:04:05.000Z] \"GET / HTTP/1.1\" 200 - 0 0 1",
		"[2026-12-01T03:04:05.000Z] \"GET / HTTP/1.1\" 2000 - 0 0 1 - \"-\" \"-\" \"i\" \"a\" \"u\"",
		"[not a time] \"GET / HTTP/1.1\" 200 - 0 0 1 - \"-\" \"-\" \"i\" \"a\" \"u\"",
		"[2026-12-01T03:04:05.000Z] \"get / HTTP/1.1\" 200 - 0 0 1 - \"-\" \"-\" \"i\" \"a\" \"u\"",
		"[2026-12-01T03:04:05.000Z] \"GET / HTTP/1.1\" 200 - 0 0 1 - \"-\" \"-\" \"i\" \"a\" \"u",
		"{\"method\":\"GET\"}",
		"{\"method\":\"GET\",\"response_code\":200} trailing",
		"{\"method\":\"GET\",\"response_code\":200,\"start_time\":\"soon\"}",
		"{\"method\":\"-\",\"response_code\":0}",
		"{not json",
		"[]",
	};
	struct tl_access_record r;

	memset(&r, 0x5a, sizeof(r));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(tl_access_parse(bad[i], strlen(bad[i]), &r) == -EINVAL, "%s", bad[i]);
		/* The output is untouched on failure. */
		ck_assert_int_eq(((unsigned char *)&r)[0], 0x5a);
	}
}
END_TEST

/* Every prefix of a record parses or fails cleanly (never a read past len). */
START_TEST(test_prefixes)
{
	static const char *const lines[] = {
		"[2026-12-01T03:04:05.123Z] \"GET /a HTTP/1.1\" 200 - 0 2 1 1 \"-\" \"ua\" \"id\" \"h\" \"u\"",
		"{\"method\":\"GET\",\"path\":\"/\",\"response_code\":200,\"request_id\":\"x\"}",
	};
	struct tl_access_record r;

	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(lines[i]);

		for (size_t k = 0; k < n; k++) {
			char *p = malloc(k + 1);

			memcpy(p, lines[i], k);
			ck_assert_int_eq(tl_access_parse(p, k, &r), -EINVAL);
			free(p);
		}
		ck_assert_int_eq(tl_access_parse(lines[i], n, &r), 0);
	}
}
END_TEST

/* Why a line is not a record (termline_http_log_lines_unparsed_total). */
START_TEST(test_unparsed_reasons)
{
	static const struct {
		const char *line;
		enum tl_access_unparsed why;
	} cases[] = {
		/* Envoy's own log, istio-proxy's agent, a JSON log line. */
		{"[2021-03-12 15:31:30.492][1][warning][runtime] [source/common/runtime/runtime_features.cc:31] x",
		 TL_ACCESS_UNPARSED_NOT_ACCESS},
		{"2020-11-22T19:32:07.499719Z\twarning\tenvoy runtime\tUnable to use runtime singleton",
		 TL_ACCESS_UNPARSED_NOT_ACCESS},
		{"{\"level\":\"debug\",\"time\":\"2024-05-06T20:12:45.128689Z\",\"scope\":\"envoy pool\"}",
		 TL_ACCESS_UNPARSED_NOT_ACCESS},
		{"", TL_ACCESS_UNPARSED_NOT_ACCESS},
		/* TCP proxy records, text and JSON. */
		{"[2020-11-22T20:04:33.157Z] \"- - -\" 0 - \"-\" \"-\" 4841 9845236 16230 - \"-\" \"-\" \"-\" \"-\" "
		 "\"104.20.28.24:443\" PassthroughCluster 172.18.0.10:49944 104.20.28.24:443 172.18.0.10:49942 - -",
		 TL_ACCESS_UNPARSED_TCP},
		{"{\"method\":\"-\",\"response_code\":0,\"upstream_cluster\":\"PassthroughCluster\"}",
		 TL_ACCESS_UNPARSED_TCP},
		/* A record's shape no format reads: Kuma's, unconfigured. */
		{"[2025-06-26T13:19:18.314Z] default \"GET /api HTTP/1.1\" 404 NR 0 0 0 - \"-\" \"k\" \"-\" \"i\"",
		 TL_ACCESS_UNPARSED_FORMAT},
		{"{\"method\":\"GET\",\"response_code\":\"soon\"}", TL_ACCESS_UNPARSED_FORMAT},
	};
	struct tl_access_record r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum tl_access_unparsed why = TL_ACCESS_UNPARSED_NONE;

		ck_assert_msg(tl_access_parse_with(NULL, 0, cases[i].line, strlen(cases[i].line), &r, &why) ==
				      -EINVAL,
			      "read: %s", cases[i].line);
		ck_assert_msg(why == cases[i].why, "%s: %s", cases[i].line, tl_access_unparsed_name(why));
	}
	ck_assert_str_eq(tl_access_unparsed_name(TL_ACCESS_UNPARSED_NOT_ACCESS), "not_access_log");
	ck_assert_str_eq(tl_access_unparsed_name(TL_ACCESS_UNPARSED_FORMAT), "no_format");
	ck_assert_str_eq(tl_access_unparsed_name(TL_ACCESS_UNPARSED_COUNT), "unknown");
}
END_TEST

/* Start times: RFC 3339 with Z, an offset, an offset without its colon
 * (START_TIME(...%z)); anything else is not a time. */
START_TEST(test_start_time_offsets)
{
	static const struct {
		const char *t, *utc;
	} ok[] = {
		{"2022-03-11T09:58:37.960+0000", "2022-03-11T09:58:37.960000000Z"},
		{"2022-03-11T10:58:37.960+0100", "2022-03-11T09:58:37.960000000Z"},
		{"2022-03-11T04:28:37.960-0530", "2022-03-11T09:58:37.960000000Z"},
		{"2022-03-11T10:58:37.960+01:00", "2022-03-11T09:58:37.960000000Z"},
		{"2022-03-11T09:58:37Z", "2022-03-11T09:58:37.000000000Z"},
	};
	static const char *const bad[] = {"2022-03-11T09:58:37.960+000", "2022-03-11T09:58:37.960+00a0",
					  "2022-03-11T09:58:37.960", "+0000"};
	char line[256], ts[TL_TIME_STRLEN];
	struct tl_access_record r;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(line, sizeof(line), "{\"method\":\"GET\",\"response_code\":200,\"start_time\":\"%s\"}",
			 ok[i].t);
		ck_assert_msg(tl_access_parse(line, strlen(line), &r) == 0, "%s", ok[i].t);
		ck_assert_str_eq(tl_time_format(r.start_ns, ts), ok[i].utc);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "{\"method\":\"GET\",\"response_code\":200,\"start_time\":\"%s\"}",
			 bad[i]);
		ck_assert_msg(tl_access_parse(line, strlen(line), &r) == -EINVAL, "%s", bad[i]);
	}
}
END_TEST

/* A format with neither method nor response code (a TCP listener's)
 * reads its lines as records of no HTTP request; a format that ends in a
 * newline, written or escaped, reads lines without one. */
START_TEST(test_format_edges)
{
	struct tl_access_fmt *f[2];
	struct tl_access_record r;
	enum tl_access_unparsed why;
	char err[256];
	const char *tcp = "[2025-06-26T21:29:21.535Z] - default took 14004ms";
	const char *http = "[2025-06-26T21:29:21.535Z] 204 7ms \"abc\"";

	ck_assert_int_eq(tl_access_format_compile("[%START_TIME%] %RESPONSE_FLAGS% %KUMA_MESH% took %DURATION%ms",
						  &f[0], err, sizeof(err)),
			 0);
	ck_assert_int_eq(tl_access_parse_with((const struct tl_access_fmt *const *)f, 1, tcp, strlen(tcp), &r,
					      &why),
			 -EINVAL);
	ck_assert_int_eq(why, TL_ACCESS_UNPARSED_TCP);
	tl_access_format_free(f[0]);
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(tl_access_format_compile(k ? "[%START_TIME%] %RESPONSE_CODE% %DURATION%ms "
							      "\"%REQ(X-REQUEST-ID)%\"\\n"
							    : "[%START_TIME%] %RESPONSE_CODE% %DURATION%ms "
							      "\"%REQ(X-REQUEST-ID)%\"\n",
							  &f[k], err, sizeof(err)),
				 0);
		ck_assert_int_eq(tl_access_parse_with((const struct tl_access_fmt *const *)&f[k], 1, http,
						      strlen(http), &r, &why),
				 0);
		ck_assert_int_eq(r.status, 204);
		ck_assert_int_eq(r.duration_ms, 7);
		ck_assert_str_eq(r.request_id, "abc");
		ck_assert_str_eq(r.method, "");
		tl_access_format_free(f[k]);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("access-log");
	TCase *tc = tcase_create("cri");

	tcase_add_test(tc, test_cri_line);
	tcase_add_test(tc, test_cri_reader_split);
	tcase_add_test(tc, test_cri_reader_limits);
	suite_add_tcase(s, tc);
	tc = tcase_create("access");
	tcase_add_test(tc, test_envoy_default);
	tcase_add_test(tc, test_istio_text);
	tcase_add_test(tc, test_istio_json);
	tcase_add_test(tc, test_not_records);
	tcase_add_test(tc, test_prefixes);
	tcase_add_test(tc, test_unparsed_reasons);
	tcase_add_test(tc, test_start_time_offsets);
	tcase_add_test(tc, test_format_edges);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
