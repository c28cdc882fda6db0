/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Envoy / Istio proxy access-log records, the record of requests a sidecar
 * answered itself (503 UF when the app refused, UC when it hung up) that
 * never put HTTP bytes on a plaintext socket under mTLS. Three formats are
 * recognised per line, without configuration (docs/http-capture.md):
 *   envoy       Envoy's default text format
 *               [%START_TIME%] "%METHOD% %PATH% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS%
 *               %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %UPSTREAM_SERVICE_TIME% "%XFF%"
 *               "%USER-AGENT%" "%X-REQUEST-ID%" "%AUTHORITY%" "%UPSTREAM_HOST%"
 *   istio       Istio's text format: the same start, then %RESPONSE_CODE_DETAILS%
 *               %CONNECTION_TERMINATION_DETAILS% "%UPSTREAM_TRANSPORT_FAILURE_REASON%"
 *               before the byte counts, and %UPSTREAM_CLUSTER% ... after the upstream host
 *   istio-json  Istio's JSON encoding (keys start_time, method, path, response_code, ...)
 */
enum tl_access_format {
	TL_ACCESS_ENVOY = 0,
	TL_ACCESS_ISTIO = 1,
	TL_ACCESS_ISTIO_JSON = 2,
};

/* An access-log line is at most this long; longer ones are not records. */
#define TL_ACCESS_LINE_MAX (32 * 1024)

enum tl_access_direction { TL_DIR_UNKNOWN = 0, TL_DIR_INBOUND = 1, TL_DIR_OUTBOUND = 2 };

struct tl_access_record {
	enum tl_access_format format;
	int64_t start_ns;            /* UTC; 0 when absent */
	char method[16];
	char path[256];
	char protocol[16];
	int status;                  /* 0: no response was sent */
	char flags[64];              /* "UF,URX"; "" for none ("-") */
	char details[128];           /* response code details (istio formats) */
	char request_id[128];
	char authority[128];
	char upstream_host[128];
	char upstream_cluster[192];
	int64_t duration_ms;         /* -1 when absent */
	enum tl_access_direction direction; /* from the upstream cluster ("inbound|8080||") */
};

/* Parses one record. 0, or -EINVAL for a line that is not an HTTP access-log
 * record in any of the formats (proxy chatter, TCP records "- - -"). */
int tl_access_parse(const char *line, size_t len, struct tl_access_record *ret);

const char *tl_access_format_name(enum tl_access_format f);
/* An access-log method: upper-case letters only. */
bool tl_access_method_ok(const char *m);
