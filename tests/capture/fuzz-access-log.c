/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer: CRI log bytes through the reader, each joined record through
 * the access-log parser; the whole input as one access-log line, by shape
 * and with real formats configured (--access-log-format: Istio's, Envoy's,
 * Kuma's HTTP and TCP, a custom JSON mapping, as in
 * tests/capture/corpus/access-real/lines.json); and the input up to its
 * first newline compiled as a format that reads the lines after it. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "access-log.h"
#include "cri-log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const formats[] = {
    /* Istio's default text format since 1.8, with the \n users copy. */
    "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" "
    "%RESPONSE_CODE% "
    "%RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% "
    "\"%UPSTREAM_TRANSPORT_FAILURE_REASON%\" %BYTES_RECEIVED% %BYTES_SENT% %DURATION% "
    "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" "
    "\"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" \"%UPSTREAM_HOST%\" %UPSTREAM_CLUSTER% "
    "%UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% "
    "%REQUESTED_SERVER_NAME% %ROUTE_NAME%\\n",
    /* Kuma's TCP and HTTP formats: unknown operators, no method. */
    "[%START_TIME%] %RESPONSE_FLAGS% %KUMA_MESH% "
    "%KUMA_SOURCE_ADDRESS_WITHOUT_PORT%(%KUMA_SOURCE_SERVICE%)->"
    "%UPSTREAM_HOST%(%KUMA_DESTINATION_SERVICE%) took %DURATION%ms, sent %BYTES_SENT% bytes, "
    "received: "
    "%BYTES_RECEIVED% bytes",
    "[%START_TIME%] %KUMA_MESH% \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" "
    "%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% "
    "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% \"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" "
    "\"%REQ(X-B3-TRACEID?X-DATADOG-TRACEID)%\" \"%REQ(X-REQUEST-ID)%\" \"%REQ(:AUTHORITY)%\" "
    "\"%KUMA_SOURCE_SERVICE%\" \"%KUMA_DESTINATION_SERVICE%\" "
    "\"%KUMA_SOURCE_ADDRESS_WITHOUT_PORT%\" "
    "\"%UPSTREAM_HOST%\"",
    /* A JSON mapping with gRPC's status and operators termline skips. */
    "{\"start_time\": \"%START_TIME%\", \"method\": \"%REQ(:METHOD)%\", \"path\": "
    "\"%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%\", \"protocol\": \"%PROTOCOL%\", \"response_code\": "
    "\"%RESPONSE_CODE%\", \"response_flags\": \"%RESPONSE_FLAGS%\", \"response_code_details\": "
    "\"%RESPONSE_CODE_DETAILS%\", \"duration\": \"%DURATION%\", \"request_id\": "
    "\"%REQ(X-REQUEST-ID)%\", "
    "\"upstream_host\": \"%UPSTREAM_HOST%\", \"upstream_cluster\": \"%UPSTREAM_CLUSTER_RAW%\", "
    "\"downstream_remote_address\": \"%DOWNSTREAM_REMOTE_ADDRESS%\", \"grpc_status\": "
    "\"%GRPC_STATUS%\", "
    "\"request_duration\": \"%REQUEST_DURATION%\"}",
    /* Envoy's default format. */
    "[%START_TIME%] \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" "
    "%RESPONSE_CODE% "
    "%RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% "
    "%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "
    "\"%REQ(X-FORWARDED-FOR)%\" \"%REQ(USER-AGENT)%\" \"%REQ(X-REQUEST-ID)%\" "
    "\"%REQ(:AUTHORITY)%\" "
    "\"%UPSTREAM_HOST%\"\\n",
};
#define N_FORMATS (sizeof(formats) / sizeof(formats[0]))

static struct tl_access_fmt *compiled[N_FORMATS];

static void on_rec(void *ud, int64_t t, bool is_stderr, const char *text, size_t len, bool cut)
{
	struct tl_access_record r;

	(void)ud;
	(void)t;
	(void)is_stderr;
	(void)cut;
	tl_access_parse(text, len, &r);
}

static void setup(void)
{
	static bool done;
	char err[256];

	if (done)
		return;
	done = true;
	for (size_t i = 0; i < N_FORMATS; i++)
		if (tl_access_format_compile(formats[i], &compiled[i], err, sizeof(err)) < 0)
			abort();
	if (tl_access_configure(formats, (int)N_FORMATS, err, sizeof(err)) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	const char *nl = memchr(s, '\n', size);
	struct tl_cri_reader *r;
	struct tl_access_record rec;
	enum tl_access_unparsed why;
	size_t half = size / 2;

	setup();
	/* By shape, then with the real formats (the agent's path). */
	tl_access_parse_with(NULL, 0, s, size, &rec, &why);
	tl_access_parse(s, size, &rec);
	/* Format, newline, lines in it. */
	if (nl) {
		size_t fl = (size_t)(nl - s);
		char *spec = malloc(fl + 1), err[256];
		struct tl_access_fmt *f;

		if (spec) {
			memcpy(spec, s, fl);
			spec[fl] = '\0';
			if (tl_access_format_compile(spec, &f, err, sizeof(err)) == 0) {
				const struct tl_access_fmt *with[2] = {f, compiled[0]};
				const char *p = nl + 1, *end = s + size;

				while (p <= end) {
					const char *e = memchr(p, '\n', (size_t)(end - p));
					size_t n = e ? (size_t)(e - p) : (size_t)(end - p);

					tl_access_parse_with(with, 2, p, n, &rec, &why);
					if (!e)
						break;
					p = e + 1;
				}
				tl_access_format_free(f);
			}
			free(spec);
		}
	}
	if (tl_cri_reader_new(&r) < 0)
		return 0;
	tl_cri_reader_feed(r, s, half, on_rec, NULL);
	tl_cri_reader_feed(r, s + half, size - half, on_rec, NULL);
	tl_cri_reader_free(r);
	return 0;
}
