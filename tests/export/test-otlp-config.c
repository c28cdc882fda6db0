/* SPDX-License-Identifier: Apache-2.0 */
/* The exporter's settings (values, OTEL_EXPORTER_OTLP_* variables and their
 * precedence), the trace id of a UID, and the receiver's answer read back. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "otlp-config.h"
#include "otlp-encode.h"
#include "otlp.pb-c.h"
#include "../check-run.h"

/* ---- a fake environment ---- */

static const char *const *fake_env;

static const char *fake_getenv(const char *name)
{
	for (size_t i = 0; fake_env && fake_env[i]; i += 2)
		if (strcmp(fake_env[i], name) == 0)
			return fake_env[i + 1];
	return NULL;
}

static int resolve(const struct tl_otlp_settings *s, const char *const *env,
		   struct tl_otlp_config *c, char *err, size_t errlen)
{
	fake_env = env;
	memset(c, 0, sizeof(*c));
	return tl_otlp_config_resolve(s, fake_getenv, c, err, errlen);
}

START_TEST(headers_parse)
{
	struct tl_otlp_header h[TL_OTLP_MAX_HEADERS] = {0};
	char why[TL_OTLP_WHY_MAX];
	size_t n = 0;

	ck_assert_int_eq(tl_otlp_parse_headers(" authorization = Bearer%20t0k%3D ,x-tenant=a,,", h, &n,
					       why),
			 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(h[0].name, "authorization");
	ck_assert_str_eq(h[0].value, "Bearer t0k=");
	ck_assert_str_eq(h[1].name, "x-tenant");
	ck_assert_str_eq(h[1].value, "a");
	for (size_t i = 0; i < n; i++) {
		free(h[i].name);
		free(h[i].value);
	}
}
END_TEST

START_TEST(headers_bad)
{
	static const struct {
		const char *in, *why;
	} cases[] = {
		{"novalue", "name=value"},
		{"=x", "empty name"},
		{"a b=c", "HTTP token"},
		{"a=%zz", "%-escape"},
		{"a=%4", "%-escape"},
		{"a=x%0Ay", "control character"}, /* would end the header line */
		{"a:b=c", "HTTP token"},
	};
	char why[TL_OTLP_WHY_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(tl_otlp_parse_headers(cases[i].in, NULL, NULL, why), -EINVAL);
		ck_assert_msg(strstr(why, cases[i].why), "%s: %s", cases[i].in, why);
	}
}
END_TEST

START_TEST(timeouts)
{
	char why[TL_OTLP_WHY_MAX];
	uint32_t ms = 0;

	ck_assert_int_eq(tl_otlp_parse_timeout("10s", false, &ms, why), 0);
	ck_assert_uint_eq(ms, 10000);
	ck_assert_int_eq(tl_otlp_parse_timeout("1500ms", false, &ms, why), 0);
	ck_assert_uint_eq(ms, 1500);
	ck_assert_int_eq(tl_otlp_parse_timeout("2m", false, &ms, why), 0);
	ck_assert_uint_eq(ms, 120000);
	ck_assert_int_eq(tl_otlp_parse_timeout("7", false, &ms, why), 0);
	ck_assert_uint_eq(ms, 7000);
	/* OTEL_EXPORTER_OTLP_TIMEOUT is in milliseconds */
	ck_assert_int_eq(tl_otlp_parse_timeout("2500", true, &ms, why), 0);
	ck_assert_int_eq(tl_otlp_parse_timeout("2s", true, &ms, why), -EINVAL);
	ck_assert_uint_eq(ms, 2500);
	ck_assert_int_eq(tl_otlp_parse_timeout("0", false, &ms, why), -EINVAL);
	ck_assert_int_eq(tl_otlp_parse_timeout("11m", false, &ms, why), -EINVAL);
	ck_assert_int_eq(tl_otlp_parse_timeout("-1s", false, &ms, why), -EINVAL);
	ck_assert_int_eq(tl_otlp_parse_timeout("5h", false, &ms, why), -EINVAL);
	ck_assert_int_eq(tl_otlp_parse_timeout("99999999999999999999", false, &ms, why), -EINVAL);
}
END_TEST

START_TEST(protocol_and_url)
{
	enum tl_otlp_protocol p;
	char why[TL_OTLP_WHY_MAX];

	ck_assert_int_eq(tl_otlp_parse_protocol("http/json", &p, why), 0);
	ck_assert_int_eq(p, TL_OTLP_HTTP_JSON);
	ck_assert_int_eq(tl_otlp_parse_protocol("http/protobuf", &p, why), 0);
	ck_assert_int_eq(p, TL_OTLP_HTTP_PROTOBUF);
	ck_assert_int_eq(tl_otlp_parse_protocol("grpc", &p, why), -EINVAL);
	ck_assert_ptr_nonnull(strstr(why, "not supported"));
	ck_assert_int_eq(tl_otlp_check_url("http://collector:4318", why), 0);
	ck_assert_int_eq(tl_otlp_check_url("https://[::1]:4318/otlp", why), 0);
	ck_assert_int_eq(tl_otlp_check_url("collector:4318", why), -EINVAL);
	ck_assert_int_eq(tl_otlp_check_url("http://", why), -EINVAL);
	ck_assert_int_eq(tl_otlp_check_url("http://a b", why), -EINVAL);
}
END_TEST

START_TEST(resolve_nothing)
{
	static const char *const env[] = {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", NULL};
	struct tl_otlp_settings s = {0};
	struct tl_otlp_config c;
	char err[256];

	/* no endpoint anywhere: export is off, and nothing else is read (a
	 * cluster-wide grpc protocol does not stop an agent that exports
	 * nothing) */
	ck_assert_int_eq(resolve(&s, env, &c, err, sizeof(err)), 0);
	ck_assert(!c.enabled);
	tl_otlp_config_free(&c);
}
END_TEST

START_TEST(resolve_env)
{
	static const char *const env[] = {
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/",
		"OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://logs:4318/custom",
		"OTEL_EXPORTER_OTLP_HEADERS", "a=1",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2,c=3",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json",
		"OTEL_EXPORTER_OTLP_TIMEOUT", "2500",
		"OTEL_EXPORTER_OTLP_CERTIFICATE", "/ca.pem",
		"OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,deployment.environment=prod%2Deu",
		NULL};
	struct tl_otlp_settings s = {.logs = true};
	struct tl_otlp_config c;
	char err[256];

	ck_assert_int_eq(resolve(&s, env, &c, err, sizeof(err)), 0);
	ck_assert(c.enabled);
	/* the base endpoint gets the signal's path; a signal's own is kept */
	ck_assert_str_eq(c.traces_url, "http://collector:4318/v1/traces");
	ck_assert_str_eq(c.logs_url, "http://logs:4318/custom");
	ck_assert_int_eq(c.protocol, TL_OTLP_HTTP_JSON);
	ck_assert_uint_eq(c.n_headers, 2);
	ck_assert_str_eq(c.headers[0].name, "b");
	ck_assert_uint_eq(c.timeout_ms, 2500);
	ck_assert_str_eq(c.certificate, "/ca.pem");
	ck_assert_str_eq(c.service_name, "from-attrs");
	ck_assert_uint_eq(c.n_resource_attrs, 2);
	ck_assert_str_eq(c.resource_attrs[1].value, "prod-eu");
	ck_assert_uint_eq(c.queue_bytes, TL_OTLP_DEFAULT_QUEUE_BYTES);
	tl_otlp_config_free(&c);
}
END_TEST

START_TEST(resolve_flags_win)
{
	static const char *const env[] = {
		"OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://env-traces:4318/v1/traces",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "http/json",
		"OTEL_EXPORTER_OTLP_HEADERS", "a=1",
		"OTEL_EXPORTER_OTLP_TIMEOUT", "2500",
		"OTEL_SERVICE_NAME", "svc",
		"OTEL_RESOURCE_ATTRIBUTES", "service.name=other",
		NULL};
	struct tl_otlp_settings s = {.endpoint = "https://flag:4318/base",
				     .protocol = "http/protobuf",
				     .headers = "x=y",
				     .timeout = "3s"};
	struct tl_otlp_config c;
	char err[256];

	ck_assert_int_eq(resolve(&s, env, &c, err, sizeof(err)), 0);
	/* the flag's endpoint wins over both variables */
	ck_assert_str_eq(c.traces_url, "https://flag:4318/base/v1/traces");
	ck_assert_str_eq(c.logs_url, "https://flag:4318/base/v1/logs");
	ck_assert_int_eq(c.protocol, TL_OTLP_HTTP_PROTOBUF);
	ck_assert_uint_eq(c.n_headers, 1);
	ck_assert_str_eq(c.headers[0].name, "x");
	ck_assert_uint_eq(c.timeout_ms, 3000);
	/* OTEL_SERVICE_NAME wins over the attributes' service.name */
	ck_assert_str_eq(c.service_name, "svc");
	tl_otlp_config_free(&c);
}
END_TEST

START_TEST(resolve_errors)
{
	static const struct {
		const char *const env[6];
		struct tl_otlp_settings s;
		const char *err;
	} cases[] = {
		{{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", NULL}, {0},
		 "OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' is not an http:// or https:// URL"},
		{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", NULL},
		 {0},
		 "OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' is not supported"},
		{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT", "10s", NULL},
		 {0},
		 "OTEL_EXPORTER_OTLP_TIMEOUT: '10s' is not a number of milliseconds"},
		{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c", "OTEL_EXPORTER_OTLP_HEADERS", "x", NULL},
		 {0},
		 "OTEL_EXPORTER_OTLP_HEADERS: 'x' is not a list of name=value"},
		{{NULL}, {.endpoint = "http://c", .client_key = "/k.pem"},
		 "--otlp-client-key: a client certificate needs its key"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tl_otlp_config c;
		char err[256] = "";

		ck_assert_int_eq(resolve(&cases[i].s, cases[i].env, &c, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, cases[i].err), "case %zu: %s", i, err);
		/* one line */
		ck_assert_ptr_null(strchr(err, '\n'));
		ck_assert_ptr_null(c.traces_url);
	}
}
END_TEST

START_TEST(trace_ids)
{
	static const uint8_t want[16] = {0x6f, 0x1c, 0x2a, 0x3b, 0x4d, 0x5e, 0x46, 0x0f,
					 0x8a, 0x9b, 0xac, 0xbd, 0xce, 0xdf, 0xe0, 0xf1};
	uint8_t a[16], b[16];

	/* a UUID is its own trace id: the Pod UID without dashes */
	tl_otlp_trace_id("6f1c2a3b-4d5e-460f-8a9b-acbdcedfe0f1", a);
	ck_assert_mem_eq(a, want, 16);
	tl_otlp_trace_id("6F1C2A3B-4D5E-460F-8A9B-ACBDCEDFE0F1", b);
	ck_assert_mem_eq(b, want, 16);
	/* anything else: a stable hash, never zero */
	tl_otlp_trace_id("not-a-uuid", a);
	tl_otlp_trace_id("not-a-uuid", b);
	ck_assert_mem_eq(a, b, 16);
	tl_otlp_trace_id("00000000-0000-0000-0000-000000000000", a);
	memset(b, 0, 16);
	ck_assert(memcmp(a, b, 16) != 0);
}
END_TEST

/* ---- the receiver's answer ---- */

START_TEST(rejected_protobuf)
{
	Otlp__ExportTraceServiceResponse r = OTLP__EXPORT_TRACE_SERVICE_RESPONSE__INIT;
	Otlp__ExportTracePartialSuccess ps = OTLP__EXPORT_TRACE_PARTIAL_SUCCESS__INIT;
	uint8_t buf[256];
	char msg[64];
	size_t n;

	ps.rejected_spans = 7;
	ps.error_message = "too old";
	r.partial_success = &ps;
	n = otlp__export_trace_service_response__pack(&r, buf);
	ck_assert_int_eq(tl_otlp_rejected(TL_OTLP_HTTP_PROTOBUF, TL_OTLP_TRACES, (char *)buf, n, msg,
					  sizeof(msg)),
			 7);
	ck_assert_str_eq(msg, "too old");
	/* every cut of the answer reads as something or nothing, never more */
	for (size_t k = 0; k < n; k++) {
		int64_t v = tl_otlp_rejected(TL_OTLP_HTTP_PROTOBUF, TL_OTLP_TRACES, (char *)buf, k,
					     msg, sizeof(msg));

		ck_assert(v == 0 || v == 7);
	}
	/* an empty 200 body: all accepted */
	ck_assert_int_eq(tl_otlp_rejected(TL_OTLP_HTTP_PROTOBUF, TL_OTLP_TRACES, "", 0, msg,
					  sizeof(msg)),
			 0);
}
END_TEST

START_TEST(rejected_json)
{
	static const char ok[] =
		"{\"partialSuccess\":{\"rejectedLogRecords\":\"3\",\"errorMessage\":\"bad\"}}";
	char msg[64];

	ck_assert_int_eq(tl_otlp_rejected(TL_OTLP_HTTP_JSON, TL_OTLP_LOGS, ok, strlen(ok), msg,
					  sizeof(msg)),
			 3);
	ck_assert_str_eq(msg, "bad");
	ck_assert_int_eq(tl_otlp_rejected(TL_OTLP_HTTP_JSON, TL_OTLP_TRACES, ok, strlen(ok), msg,
					  sizeof(msg)),
			 0);
	ck_assert_int_eq(tl_otlp_rejected(TL_OTLP_HTTP_JSON, TL_OTLP_TRACES, "{}", 2, msg, sizeof(msg)),
			 0);
	ck_assert_int_eq(tl_otlp_rejected(TL_OTLP_HTTP_JSON, TL_OTLP_TRACES,
					  "{\"partialSuccess\":{\"rejectedSpans\":-5}}", 38, msg,
					  sizeof(msg)),
			 0);
	for (size_t k = 0; k < strlen(ok); k++) {
		int64_t v = tl_otlp_rejected(TL_OTLP_HTTP_JSON, TL_OTLP_LOGS, ok, k, msg, sizeof(msg));

		ck_assert(v == 0 || v == 3);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("otlp-config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, headers_parse);
	tcase_add_test(tc, headers_bad);
	tcase_add_test(tc, timeouts);
	tcase_add_test(tc, protocol_and_url);
	tcase_add_test(tc, resolve_nothing);
	tcase_add_test(tc, resolve_env);
	tcase_add_test(tc, resolve_flags_win);
	tcase_add_test(tc, resolve_errors);
	tcase_add_test(tc, trace_ids);
	tcase_add_test(tc, rejected_protobuf);
	tcase_add_test(tc, rejected_json);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? 1 : 0;
}
