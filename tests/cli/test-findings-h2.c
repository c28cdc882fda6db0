// SPDX-License-Identifier: Apache-2.0
/* HTTP/2 and gRPC in the findings (docs/findings.md): the one failed-request
 * rule with gRPC's status (a call that failed over HTTP 200 counts, in the
 * model every verb counts with and in the HTTP/2 rules alike), and the
 * three HTTP/2 rules on hand-built timelines of a gRPC server's graceful
 * stop, its death at SIGTERM (no GOAWAY), its cancelling stop (trailers,
 * then RST_STREAM) and a client that kept opening streams above a GOAWAY. */
#include <stdio.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include "check-run.h"
#include "clock.h"
#include "findings.h"

/* 2026-12-01T03:00:00Z */
#define BASE_NS 1796094000000000000LL
#define APP_PID 40

static struct json_object *doc_new(void)
{
	struct json_object *d =
	    json_tokener_parse("{\"apiVersion\":\"termline/v1\","
			       "\"pod\":{\"namespace\":\"shop\",\"name\":\"grpc-1\",\"uid\":\"u1\","
			       "\"node\":\"n1\",\"ip\":\"10.0.0.5\","
			       "\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"grpc-5d9c7\"},"
			       "\"terminationGracePeriodSeconds\":10},"
			       "\"containers\":[{\"name\":\"app\",\"containerID\":\"containerd://"
			       "a\",\"role\":\"main\",\"cgroupId\":1}],"
			       "\"events\":[],\"findings\":[],\"complete\":true,"
			       "\"loss\":{\"kernelEventsDropped\":0,\"eventsAggregated\":0,"
			       "\"eventsDropped\":0,\"diskErrors\":0,\"agentRestarts\":0},"
			       "\"recorder\":{}}");

	ck_assert_ptr_nonnull(d);
	return d;
}

/* An event at BASE + ms; extra is a JSON object merged in. */
static void ev(struct json_object *d, double ms, const char *type, const char *extra)
{
	struct json_object *e = extra ? json_tokener_parse(extra) : json_object_new_object();
	char t[TL_TIME_STRLEN];

	ck_assert_msg(e != NULL, "bad extra %s", extra);
	tl_time_format(BASE_NS + (int64_t)(ms * 1e6), t);
	json_object_object_add(e, "time", json_object_new_string(t));
	json_object_object_add(e, "type", json_object_new_string(type));
	json_object_object_add(e, "container", json_object_new_string("app"));
	json_object_array_add(json_object_object_get(d, "events"), e);
}

/* A gRPC call the app served on connection conn: its request ID, stream,
 * HTTP status, gRPC status (-1: none came) and why it did not complete
 * (NULL: it did). */
static void call(struct json_object *d, double start_ms, double dur_ms, const char *id, int conn,
		 int stream, int status, int grpc, const char *error)
{
	char extra[768], t[TL_TIME_STRLEN], g[32] = "", e[48] = "";

	tl_time_format(BASE_NS + (int64_t)(start_ms * 1e6), t);
	if (grpc >= 0)
		snprintf(g, sizeof(g), ",\"grpcStatus\":%d", grpc);
	if (error)
		snprintf(e, sizeof(e), ",\"error\":\"%s\"", error);
	snprintf(extra, sizeof(extra),
		 "{\"source\":\"kernel\",\"requestId\":\"%s\",\"method\":\"POST\","
		 "\"path\":\"/e2e.Slow/Call\",\"status\":%d,\"start\":\"%s\",\"durationMs\":%g,"
		 "\"direction\":\"inbound\",\"peer\":\"10.0.0.9:41000\",\"conn\":%d,"
		 "\"protocol\":\"h2\",\"streamId\":%d%s%s}",
		 id, status, t, dur_ms, conn, stream, g, e);
	ev(d, start_ms + dur_ms, "http.request", extra);
}

static void sigterm(struct json_object *d, double ms)
{
	ev(d, ms, "process.signal",
	   "{\"source\":\"kernel\",\"signal\":\"SIGTERM\",\"signo\":15,\"pid\":40,\"comm\":"
	   "\"python3\",\"senderPid\":9,\"senderComm\":\"containerd-shim\",\"result\":"
	   "\"delivered\"}");
}

static void app_exit(struct json_object *d, double ms, int signo)
{
	char extra[160];

	snprintf(extra, sizeof(extra),
		 "{\"source\":\"kernel\",\"pid\":%d,\"comm\":\"python3\",\"exitCode\":%d,"
		 "\"exitSignal\":%d}",
		 APP_PID, signo ? 0 : 0, signo);
	ev(d, ms, "process.exit", extra);
}

static void goaway(struct json_object *d, double ms, int conn, int last, int code)
{
	char extra[256];

	snprintf(extra, sizeof(extra),
		 "{\"source\":\"kernel\",\"direction\":\"sent\",\"lastStreamId\":%d,"
		 "\"errorCode\":%d,\"errorName\":\"%s\",\"conn\":%d,\"connDirection\":\"inbound\"}",
		 last, code, code ? "INTERNAL_ERROR" : "NO_ERROR", conn);
	ev(d, ms, "http2.goaway", extra);
}

/* A RST_STREAM the app sent, without the stream's request ID (it came
 * after the stream ended, as a gRPC server's cancelling stop sends it). */
static void rst(struct json_object *d, double ms, int conn, int stream, const char *code)
{
	char extra[256];

	snprintf(extra, sizeof(extra),
		 "{\"source\":\"kernel\",\"direction\":\"sent\",\"streamId\":%d,\"errorCode\":%d,"
		 "\"errorName\":\"%s\",\"conn\":%d,\"connDirection\":\"inbound\"}",
		 stream, strcmp(code, "CANCEL") == 0 ? 8 : 0, code, conn);
	ev(d, ms, "http2.rst_stream", extra);
}

static void conn_end(struct json_object *d, double ms, int conn, int streams, int open,
		     int goaways)
{
	char extra[512];

	snprintf(extra, sizeof(extra),
		 "{\"source\":\"kernel\",\"direction\":\"inbound\",\"peer\":\"10.0.0.9:41000\","
		 "\"conn\":%d,\"localPort\":50051,\"end\":\"closed\",\"decoded\":true,"
		 "\"streams\":%d,\"streamsHeadersUnknown\":0,\"streamsOpenAtEnd\":%d,"
		 "\"goawaysSent\":%d,\"goawaysReceived\":0,\"rstStreamsSent\":0,"
		 "\"rstStreamsReceived\":0,\"streamsAfterGoaway\":0}",
		 conn, streams, open, goaways);
	ev(d, ms, "http2.connection", extra);
}

static struct json_object *compute(struct json_object *d)
{
	struct json_object *f = NULL;

	ck_assert_int_eq(tl_findings_compute(d, &f), 0);
	ck_assert_ptr_nonnull(f);
	return f;
}

static struct json_object *find(struct json_object *fs, const char *rule)
{
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);

		if (strcmp(json_object_get_string(json_object_object_get(f, "rule")), rule) == 0)
			return f;
	}
	return NULL;
}

static const char *ids_of(struct json_object *f)
{
	static char buf[1024];
	struct json_object *ids = json_object_object_get(f, "requestIds");

	buf[0] = 0;
	for (size_t i = 0; i < json_object_array_length(ids); i++) {
		if (i)
			strcat(buf, ",");
		strcat(buf, json_object_get_string(json_object_array_get_idx(ids, i)));
	}
	return buf;
}

/* "ID=outcome" of each call the finding lists, in order. */
static const char *calls_of(struct json_object *f)
{
	static char buf[1024];
	struct json_object *calls = json_object_object_get(f, "calls");

	buf[0] = 0;
	ck_assert_ptr_nonnull(calls);
	for (size_t i = 0; i < json_object_array_length(calls); i++) {
		struct json_object *c = json_object_array_get_idx(calls, i);

		if (i)
			strcat(buf, ",");
		strcat(buf, json_object_get_string(json_object_object_get(c, "requestId")));
		strcat(buf, "=");
		strcat(buf, json_object_get_string(json_object_object_get(c, "outcome")));
	}
	return buf;
}

static double num(struct json_object *f, const char *key)
{
	struct json_object *v = json_object_object_get(json_object_object_get(f, "numbers"), key);

	ck_assert_msg(v != NULL, "no number %s", key);
	return json_object_get_double(v);
}

static uint64_t failed_requests(struct json_object *d)
{
	uint64_t n = 0;

	ck_assert_int_eq(tl_findings_failed_requests(d, &n), 0);
	return n;
}

/* The rule itself: gRPC's status decides when there is one, over the HTTP
 * status it came with; without one, no response, a 5xx, a proxy failure
 * flag or an exchange that did not complete. */
START_TEST(failed_rule)
{
	ck_assert(!tl_http_failed(200, -1, NULL, NULL));
	ck_assert(!tl_http_failed(404, -1, "-", NULL));
	ck_assert(tl_http_failed(0, -1, NULL, NULL));
	ck_assert(tl_http_failed(503, -1, NULL, NULL));
	ck_assert(tl_http_failed(200, -1, "UC", NULL));
	/* gRPC: 200 with UNAVAILABLE failed, 200 with OK did not */
	ck_assert(tl_http_failed(200, 14, NULL, NULL));
	ck_assert(tl_http_failed(200, 1, NULL, NULL));
	ck_assert(tl_http_failed(200, 5, NULL, NULL));
	ck_assert(!tl_http_failed(200, 0, NULL, NULL));
	/* OK trailers, then the server's RST_STREAM(NO_ERROR) of a stream the
	 * client had not ended: the call succeeded */
	ck_assert(!tl_http_failed(200, 0, NULL, "reset"));
	/* HTTP/2 without trailers: headers came, then the stream was cut */
	ck_assert(tl_http_failed(200, -1, NULL, "reset"));
	ck_assert(tl_http_failed(0, -1, NULL, "refused"));
	/* a proxy failure flag wins over the status it wrote */
	ck_assert(tl_http_failed(200, 0, "UF", NULL));
}
END_TEST

/* What list, check and rollout count (tl_model_failed_requests) counts a
 * gRPC call that failed over HTTP 200, and the event rule the CLI colours
 * and shows with agrees. */
START_TEST(model_counts_grpc_failures)
{
	struct json_object *d = doc_new(), *evs;

	sigterm(d, 0);
	call(d, 10, 5, "g-ok", 1, 1, 200, 0, NULL);
	call(d, 20, 5, "g-unavailable", 1, 3, 200, 14, NULL);
	call(d, 30, 5, "g-notfound", 1, 5, 200, 5, NULL);
	call(d, 40, 5, "g-cut", 1, 7, 200, -1, "closed");
	call(d, 50, 5, "g-ok-reset", 1, 9, 200, 0, "reset");
	ck_assert_uint_eq(failed_requests(d), 3);
	evs = json_object_object_get(d, "events");
	ck_assert(!tl_http_event_failed(json_object_array_get_idx(evs, 1)));
	ck_assert(tl_http_event_failed(json_object_array_get_idx(evs, 2)));
	ck_assert(tl_http_event_failed(json_object_array_get_idx(evs, 3)));
	ck_assert(tl_http_event_failed(json_object_array_get_idx(evs, 4)));
	ck_assert(!tl_http_event_failed(json_object_array_get_idx(evs, 5)));
	json_object_put(d);
}
END_TEST

/* server.stop(grace): GOAWAY (gRPC's two: 2^31-1, then the last stream),
 * every in-flight call finishes OK, the connection closes, the process
 * exits. None of the HTTP/2 rules fires. */
START_TEST(graceful_stop_is_quiet)
{
	struct json_object *d = doc_new(), *fs;

	ev(d, -5000, "socket.listen", "{\"source\":\"kernel\",\"address\":\"0.0.0.0\",\"port\":50051}");
	call(d, -900, 50, "g-0", 1, 1, 200, 0, NULL);
	sigterm(d, 0);
	goaway(d, 2, 1, 2147483647, 0);
	goaway(d, 3, 1, 7, 0);
	ev(d, 4, "socket.listen_closed",
	   "{\"source\":\"kernel\",\"address\":\"0.0.0.0\",\"port\":50051}");
	call(d, -500, 1600, "g-1", 1, 3, 200, 0, NULL);
	call(d, -400, 1600, "g-2", 1, 5, 200, 0, NULL);
	call(d, -300, 1600, "g-3", 1, 7, 200, 0, NULL);
	conn_end(d, 1320, 1, 4, 0, 2);
	app_exit(d, 1400, 0);
	fs = compute(d);
	ck_assert_ptr_null(find(fs, "no_goaway_before_close"));
	ck_assert_ptr_null(find(fs, "streams_after_goaway"));
	ck_assert_ptr_null(find(fs, "streams_reset_during_drain"));
	ck_assert_uint_eq(failed_requests(d), 0);
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

/* A server without a SIGTERM handler dies at it: no GOAWAY, its
 * connection ends under two calls. no_goaway_before_close names them by
 * request ID (the outcome: no gRPC status, the connection closed), with
 * the graceful stop as the fix; streams_reset_during_drain names them too. */
START_TEST(killed_server_no_goaway)
{
	struct json_object *d = doc_new(), *fs, *f;

	ev(d, -5000, "socket.listen", "{\"source\":\"kernel\",\"address\":\"0.0.0.0\",\"port\":50051}");
	call(d, -900, 50, "k-0", 1, 1, 200, 0, NULL);
	sigterm(d, 0);
	app_exit(d, 3, 15);
	call(d, -500, 504, "k-1", 1, 3, 0, -1, "closed");
	call(d, -400, 404, "k-2", 1, 5, 0, -1, "closed");
	conn_end(d, 4, 1, 3, 2, 0);
	fs = compute(d);
	f = find(fs, "no_goaway_before_close");
	ck_assert_msg(f != NULL, "%s", json_object_to_json_string(fs));
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "severity")), "error");
	ck_assert_str_eq(ids_of(f), "k-1,k-2");
	ck_assert_str_eq(calls_of(f), "k-1=no status (connection closed),k-2=no status (connection closed)");
	ck_assert_int_eq((int)num(f, "connections"), 1);
	ck_assert_int_eq((int)num(f, "streamsOpenAtEnd"), 2);
	ck_assert_int_eq((int)num(f, "failedCalls"), 2);
	ck_assert_msg(strstr(json_object_get_string(json_object_object_get(f, "summary")),
			     "app exited at +0.003 s with 1 HTTP/2 connection open and sent no GOAWAY") !=
			  NULL,
		      "%s", json_object_get_string(json_object_object_get(f, "summary")));
	ck_assert_ptr_nonnull(strstr(json_object_to_json_string(json_object_object_get(f, "recommendation")),
				     "server.stop(grace)"));
	f = find(fs, "streams_reset_during_drain");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(ids_of(f), "k-1,k-2");
	ck_assert_ptr_null(find(fs, "streams_after_goaway"));
	ck_assert_uint_eq(failed_requests(d), 2);
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

/* server.stop(None): a GOAWAY, then each in-flight call gets trailers with
 * UNAVAILABLE and its stream a RST_STREAM(NO_ERROR) after it ended (the
 * RST_STREAM names no request). streams_reset_during_drain names the calls
 * by request ID and gRPC status; no_goaway_before_close does not fire (a
 * GOAWAY was sent). */
START_TEST(cancelling_stop_names_calls)
{
	struct json_object *d = doc_new(), *fs, *f;

	ev(d, -5000, "socket.listen", "{\"source\":\"kernel\",\"address\":\"0.0.0.0\",\"port\":50051}");
	call(d, -900, 50, "a-0", 1, 1, 200, 0, NULL);
	sigterm(d, 0);
	goaway(d, 2, 1, 2147483647, 0);
	goaway(d, 3, 1, 5, 2);
	call(d, -500, 504, "a-1", 1, 3, 200, 14, NULL);
	rst(d, 4.1, 1, 3, "NO_ERROR");
	call(d, -400, 405, "a-2", 1, 5, 200, 14, NULL);
	rst(d, 5.5, 1, 5, "NO_ERROR");
	/* a bidirectional call the server ended OK, then reset (its client
	 * had not ended its side): completed, not named */
	call(d, -300, 306, "a-ok", 1, 7, 200, 0, "reset");
	rst(d, 6.5, 1, 7, "NO_ERROR");
	conn_end(d, 7, 1, 4, 0, 2);
	app_exit(d, 8, 0);
	fs = compute(d);
	ck_assert_ptr_null(find(fs, "no_goaway_before_close"));
	f = find(fs, "streams_reset_during_drain");
	ck_assert_msg(f != NULL, "%s", json_object_to_json_string(fs));
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "severity")), "error");
	ck_assert_str_eq(ids_of(f), "a-1,a-2");
	ck_assert_str_eq(calls_of(f), "a-1=UNAVAILABLE,a-2=UNAVAILABLE");
	ck_assert_int_eq((int)num(f, "rstStreams"), 3);
	ck_assert_int_eq((int)num(f, "callsCut"), 2);
	ck_assert_ptr_nonnull(
	    strstr(json_object_get_string(json_object_object_get(f, "summary")), "a-1 (/e2e.Slow/Call) UNAVAILABLE"));
	/* the calls count as failed everywhere */
	ck_assert_uint_eq(failed_requests(d), 2);
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

/* A client that opened a stream above the last-stream-id it had been
 * sent: the server refused it (never processed). */
START_TEST(stream_after_goaway)
{
	struct json_object *d = doc_new(), *fs, *f;
	char extra[512], t[TL_TIME_STRLEN];

	sigterm(d, 0);
	goaway(d, 2, 1, 5, 0);
	tl_time_format(BASE_NS + 10 * 1000000LL, t);
	snprintf(extra, sizeof(extra),
		 "{\"source\":\"kernel\",\"requestId\":\"late-1\",\"method\":\"POST\","
		 "\"path\":\"/e2e.Slow/Call\",\"status\":0,\"start\":\"%s\",\"durationMs\":1,"
		 "\"direction\":\"inbound\",\"conn\":1,\"protocol\":\"h2\",\"streamId\":7,"
		 "\"error\":\"refused\",\"afterGoaway\":true}",
		 t);
	ev(d, 11, "http.request", extra);
	fs = compute(d);
	f = find(fs, "streams_after_goaway");
	ck_assert_msg(f != NULL, "%s", json_object_to_json_string(fs));
	ck_assert_str_eq(ids_of(f), "late-1");
	ck_assert_str_eq(calls_of(f), "late-1=no status (refused by GOAWAY)");
	ck_assert_int_eq((int)num(f, "lastStreamId"), 5);
	ck_assert_uint_eq(failed_requests(d), 1);
	json_object_put(fs);
	json_object_put(d);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("findings-h2");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, failed_rule);
	tcase_add_test(tc, model_counts_grpc_failures);
	tcase_add_test(tc, graceful_stop_is_quiet);
	tcase_add_test(tc, killed_server_no_goaway);
	tcase_add_test(tc, cancelling_stop_names_calls);
	tcase_add_test(tc, stream_after_goaway);
	suite_add_tcase(s, tc);
	return tl_check_run(s) ? 1 : 0;
}
