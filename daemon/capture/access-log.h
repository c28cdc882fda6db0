/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Envoy / Istio proxy access-log records, the record of requests a sidecar
 * answered itself (503 UF when the app refused, UC when it hung up) that
 * never put HTTP bytes on a plaintext socket under mTLS
 * (docs/http-capture.md). A line is read by the formats configured with
 * --access-log-format first (Envoy format strings or JSON key -> operator
 * mappings, compiled once), then recognised by its shape:
 *   envoy       Envoy's default text format
 *               [%START_TIME%] "%METHOD% %PATH% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS%
 *               %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %UPSTREAM_SERVICE_TIME% "%XFF%"
 *               "%USER-AGENT%" "%X-REQUEST-ID%" "%AUTHORITY%" "%UPSTREAM_HOST%"
 *   istio       Istio's text formats: the same start, then up to four fields before
 *               the byte counts (1.1: "mixer status"; 1.3-1.7: "mixer status"
 *               "transport failure"; 1.8+: %RESPONSE_CODE_DETAILS%
 *               %CONNECTION_TERMINATION_DETAILS% "transport failure"), and after the
 *               upstream host %UPSTREAM_CLUSTER% %UPSTREAM_LOCAL_ADDRESS%
 *               %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% ...
 *   istio-json  Istio's JSON encoding (keys start_time, method, path, response_code, ...)
 */
enum tl_access_format {
	TL_ACCESS_ENVOY = 0,
	TL_ACCESS_ISTIO = 1,
	TL_ACCESS_ISTIO_JSON = 2,
	TL_ACCESS_CONFIGURED = 3, /* one of --access-log-format's */
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
	/* The downstream peer (%DOWNSTREAM_REMOTE_ADDRESS%): "ip:port", IPv6 in
	 * brackets; the address alone when the format has no port; "" when the
	 * format carries none (Envoy's default). */
	char peer[64];
	int grpc_status;             /* gRPC's code; -1 when absent */
	int64_t bytes_received, bytes_sent; /* -1 when absent */
	int format_index;            /* TL_ACCESS_CONFIGURED: which --access-log-format */
};

/* Why a line was not read as a record (termline_http_log_lines_unparsed_total
 * counts them by reason). */
enum tl_access_unparsed {
	TL_ACCESS_UNPARSED_NONE = 0,
	TL_ACCESS_UNPARSED_NOT_ACCESS, /* proxy chatter: no format's shape at all */
	TL_ACCESS_UNPARSED_TCP,        /* a TCP proxy record ("- - -"): no HTTP request */
	TL_ACCESS_UNPARSED_FORMAT,     /* a record's shape that no format reads */
	TL_ACCESS_UNPARSED_TOO_LONG,   /* past TL_ACCESS_LINE_MAX */
	TL_ACCESS_UNPARSED_CUT,        /* the log runtime cut the record (the caller's) */
	TL_ACCESS_UNPARSED_COUNT,
};
const char *tl_access_unparsed_name(enum tl_access_unparsed r);

/* A compiled --access-log-format. */
struct tl_access_fmt;

/* Compiles an Envoy format string ("[%START_TIME%] \"%REQ(:METHOD)% ...") or a
 * JSON object mapping keys to format strings ({"request_id":
 * "%REQ(X-REQUEST-ID)%", ...}). Unknown command operators are fields that
 * are skipped, not errors. 0, -ENOMEM, or -EINVAL with a one-line reason in
 * err (an operator without its closing '%', a bad JSON object, no operator). */
int tl_access_format_compile(const char *spec, struct tl_access_fmt **ret, char *err,
			     size_t errlen);
void tl_access_format_free(struct tl_access_fmt *f);

/* Reads one line: with fmts[0..n) in order, then by shape. 0, or -EINVAL
 * with *why set (why may be NULL). ret is untouched on failure. */
int tl_access_parse_with(const struct tl_access_fmt *const *fmts, int n, const char *line,
			 size_t len, struct tl_access_record *ret, enum tl_access_unparsed *why);

/* The agent's formats (--access-log-format), compiled once at start and
 * used by tl_access_parse(). 0, or -EINVAL / -ENOMEM with err naming the
 * format; the formats before stay as they were. */
int tl_access_configure(const char *const *specs, int n, char *err, size_t errlen);
void tl_access_configure_clear(void);

/* Parses one line of the proxy's log with the configured formats, then by
 * shape; a line that is not a record is counted in
 * termline_http_log_lines_unparsed_total{reason}. 0, or -EINVAL. */
int tl_access_parse(const char *line, size_t len, struct tl_access_record *ret);
/* Counts a line not read for a reason of the caller's (a cut record). */
void tl_access_count_unparsed(enum tl_access_unparsed r);

const char *tl_access_format_name(enum tl_access_format f);
/* An access-log method: upper-case letters only. */
bool tl_access_method_ok(const char *m);
