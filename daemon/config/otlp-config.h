/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The OTLP exporter's settings: parsers for each value (used by
 * daemon/config for the flags and config keys) and the resolution that
 * fills what neither set from the standard environment variables
 * (OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
 * Precedence: flag > config file > environment > default (docs/export.md).
 *
 * Each parser returns 0, -ENOMEM, or -EINVAL with the reason in why (a
 * phrase that follows the value: "'x' is not ..."). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum tl_otlp_protocol {
	TL_OTLP_HTTP_PROTOBUF = 0,
	TL_OTLP_HTTP_JSON = 1,
};

/* A resource attribute from OTEL_RESOURCE_ATTRIBUTES (a string). */
struct tl_otlp_attr {
	const char *key, *value;
};

#define TL_OTLP_DEFAULT_TIMEOUT_MS 10000
#define TL_OTLP_DEFAULT_QUEUE_BYTES (16ULL << 20)
#define TL_OTLP_MAX_HEADERS 32
#define TL_OTLP_MAX_RESOURCE_ATTRS 32
#define TL_OTLP_MAX_TIMEOUT_MS 600000
#define TL_OTLP_WHY_MAX 256

struct tl_otlp_header {
	char *name, *value;
};

/* What the command line and the config file set; NULL: not set there. */
struct tl_otlp_settings {
	const char *endpoint; /* base URL: requests go to {endpoint}/v1/traces */
	const char *protocol;
	const char *headers; /* "name=value,..." (values percent-encoded) */
	const char *timeout; /* "10s", "500ms", a bare number is seconds */
	const char *certificate, *client_certificate, *client_key;
	bool insecure, logs;
	uint64_t queue_bytes; /* 0: default */
};

/* What the exporter runs with. */
struct tl_otlp_config {
	bool enabled; /* an endpoint came from somewhere */
	char *traces_url, *logs_url;
	enum tl_otlp_protocol protocol;
	struct tl_otlp_header headers[TL_OTLP_MAX_HEADERS];
	size_t n_headers;
	uint32_t timeout_ms;
	char *certificate, *client_certificate, *client_key;
	bool insecure; /* do not verify the collector's certificate */
	bool logs;     /* also send every event as a log record */
	uint64_t queue_bytes;
	char *service_name; /* OTEL_SERVICE_NAME, else OTEL_RESOURCE_ATTRIBUTES' service.name, else "termline" */
	struct tl_otlp_attr resource_attrs[TL_OTLP_MAX_RESOURCE_ATTRS]; /* owned strings */
	size_t n_resource_attrs;
};

/* An http:// or https:// URL with a host. */
int tl_otlp_check_url(const char *s, char *why);
int tl_otlp_parse_protocol(const char *s, enum tl_otlp_protocol *ret, char *why);
/* "name=value,name2=value2" (the W3C Baggage form the OTLP exporter
 * specification uses: values percent-decoded, blanks around items
 * ignored) into headers; names are HTTP tokens, values without control
 * characters. ret may be NULL (check only). */
int tl_otlp_parse_headers(const char *s, struct tl_otlp_header *ret, size_t *ret_n, char *why);
/* "10s", "1500ms", "2m", or a bare number of seconds; with env_form
 * (OTEL_EXPORTER_OTLP_TIMEOUT) a bare number of milliseconds only. 1 ms ..
 * 10 min. */
int tl_otlp_parse_timeout(const char *s, bool env_form, uint32_t *ret_ms, char *why);
/* OTEL_RESOURCE_ATTRIBUTES: "key=value,..." percent-decoded. */
int tl_otlp_parse_resource_attrs(const char *s, struct tl_otlp_attr *ret, size_t *ret_n,
				 char *why);

/* Resolves s (and, for what s leaves unset, getenv_fn's variables) into c.
 * On -EINVAL err holds one line naming the variable or setting and the
 * problem. c must be zeroed; free with tl_otlp_config_free(). */
int tl_otlp_config_resolve(const struct tl_otlp_settings *s, const char *(*getenv_fn)(const char *),
			   struct tl_otlp_config *c, char *err, size_t errlen);
void tl_otlp_config_free(struct tl_otlp_config *c);
/* "http/protobuf" or "http/json". */
const char *tl_otlp_protocol_name(enum tl_otlp_protocol p);
/* A deep copy into dst (zeroed). 0 or -ENOMEM. */
int tl_otlp_config_copy(struct tl_otlp_config *dst, const struct tl_otlp_config *src);
