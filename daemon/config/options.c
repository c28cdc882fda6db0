/* SPDX-License-Identifier: Apache-2.0 */
/* termlined's settings: command-line flags and the --config YAML file.
 *
 * Every setting is one row of opt_defs[]; flags, file keys, --help and the
 * canonical rendering behind config_digest all come from that table, so a new
 * setting cannot be forgotten in one of them.
 *
 * Precedence: defaults < file < command line, whatever the order of --config
 * among the flags. A file key that a flag overrides is still validated, so a
 * broken ConfigMap is reported even on a node started with overrides. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <yaml.h>

#include "errmsg.h"
#include "fileio.h"
#include "macro.h"
#include "options.h"
#include "signals.h"
#include "termline-http.h"
#include "tl-buf.h"
#include "termline-config.h"

#define PROG "termlined"
/* A config file is a handful of keys; the cap bounds what libyaml buffers
 * and what a mistaken --config /dev/zero can cost. */
#define CONFIG_MAX_BYTES (64 * 1024)
#define HEADER_NAME_MAX 64
#define NODE_NAME_MAX 253
#define WHY_MAX 256

enum opt_id {
	OPT_CONFIG,
	OPT_KUBECONFIG,
	OPT_NODE,
	OPT_STATE_DIR,
	OPT_LISTEN,
	OPT_CGROUP_ROOT,
	OPT_POD_LOGS_DIR,
	OPT_REQUEST_ID_HEADER,
	OPT_LOG_LEVEL,
	OPT_LINGER,
	OPT_NO_API,
	OPT_EMIT_EVENTS,
	OPT_RINGBUF_KIB,
	OPT_SIGNALS,
	OPT_MAX_EVENTS,
	OPT_MAX_OPEN_TIMELINES,
	OPT_TIMELINE_IDLE_CLOSE,
	OPT_RETENTION_BYTES,
	OPT_RETENTION_HOURS,
	OPT_JOURNAL_FSYNC_MS,
	OPT_HTTP_CAPTURE,
	OPT_HTTP_PREFIX_BYTES,
	OPT_ACCESS_LOG_CONTAINER,
	OPT_ACCESS_LOG_FORMAT,
	OPT_METRICS_MAX_WORKLOADS,
	OPT_OTLP_ENDPOINT,
	OPT_OTLP_PROTOCOL,
	OPT_OTLP_HEADERS,
	OPT_OTLP_TIMEOUT,
	OPT_OTLP_CERTIFICATE,
	OPT_OTLP_CLIENT_CERTIFICATE,
	OPT_OTLP_CLIENT_KEY,
	OPT_OTLP_INSECURE,
	OPT_OTLP_LOGS,
	OPT_OTLP_QUEUE_BYTES,
	OPT_VERSION,
	OPT_HELP,
	OPT_COUNT
};

enum opt_kind {
	KIND_PATH,	/* char *, non-empty path */
	KIND_NODE,	/* char *, DNS-1123 subdomain */
	KIND_LISTEN,	/* char *, ADDR:PORT, [V6]:PORT, "" or "off" */
	KIND_EMIT,	/* char *, "-" or a path */
	KIND_HEADER,	/* request_id_headers[], repeatable */
	KIND_LOG_LEVEL, /* enum tl_log_level */
	KIND_U32,	/* uint32_t within [min, max] */
	KIND_BYTES,	/* uint64_t with optional binary suffix */
	KIND_BOOL,	/* bool: a bare flag, true/false in the file */
	KIND_SIGNALS,	/* uint64_t mask of signal numbers */
	KIND_HTTP_CAPTURE, /* enum tl_http_capture_mode */
	KIND_CONTAINER,	/* char *, a container name (DNS-1123 label) */
	KIND_FORMAT,	/* access_log_formats[], repeatable */
	KIND_OTLP,	/* char *, checked by the OTLP exporter's parser for the option */
	KIND_CONFIG,	/* --config: command line only */
	KIND_ACTION,	/* --help, --version */
};

struct opt_def {
	const char *name;
	enum opt_kind kind;
	size_t offset;	   /* into struct tl_options */
	uint64_t min, max; /* KIND_U32, KIND_BYTES */
	const char *unit;  /* "seconds": used in range errors */
	const char *meta;  /* argument name in --help, NULL for none */
	/* The default, defined here only: set_defaults() applies it through
	 * set_value() and --help prints it. */
	const char *def;
	const char *help;
	/* def says how the default is found (e.g. "$NODE_NAME, else the host
	 * name"): --help prints it, set_defaults() leaves the setting unset. */
	bool def_described;
};

#define OFF(field) offsetof(struct tl_options, field)

static const struct opt_def opt_defs[OPT_COUNT] = {
    [OPT_CONFIG] = {"config", KIND_CONFIG, OFF(config_path), 0, 0, NULL, "FILE", "none",
		    "YAML file whose top-level keys are any of the settings below", .def_described = true},
    [OPT_KUBECONFIG] = {"kubeconfig", KIND_PATH, OFF(kubeconfig), 0, 0, NULL, "FILE",
			"in-cluster service account", "kubeconfig used to reach the API server",
			.def_described = true},
    [OPT_NODE] = {"node", KIND_NODE, OFF(node), 0, 0, NULL, "NAME",
		  "$NODE_NAME, else the host name", "name of the node this agent records",
		  .def_described = true},
    [OPT_STATE_DIR] = {"state-dir", KIND_PATH, OFF(state_dir), 0, 0, NULL, "DIR",
		       "/var/lib/termline", "journal and closed timelines"},
    [OPT_LISTEN] = {"listen", KIND_LISTEN, OFF(listen), 0, 0, NULL, "ADDR:PORT", "0.0.0.0:9440",
		    "HTTP address (IPv6 as [::1]:9440; \"off\" disables)"},
    [OPT_CGROUP_ROOT] = {"cgroup-root", KIND_PATH, OFF(cgroup_root), 0, 0, NULL, "DIR",
			 "the cgroup2 mount in /proc/self/mountinfo", "cgroup v2 hierarchy to map",
			 .def_described = true},
    [OPT_POD_LOGS_DIR] = {"pod-logs-dir", KIND_PATH, OFF(pod_logs_dir), 0, 0, NULL, "DIR",
			  "/var/log/pods", "kubelet's container log directory"},
    [OPT_REQUEST_ID_HEADER] = {"request-id-header", KIND_HEADER, 0, 0, 0, NULL, "NAME",
			       "x-request-id", "HTTP header carrying request IDs (repeatable)"},
    [OPT_LOG_LEVEL] = {"log-level", KIND_LOG_LEVEL, OFF(log_level), 0, 0, NULL, "LEVEL", "info",
		       "debug, info, warn or error"},
    [OPT_LINGER] = {"linger", KIND_U32, OFF(linger_s), 0, 86400, "seconds", "SECONDS", "30",
		    "how long a timeline stays open after pod.deleted"},
    [OPT_NO_API] = {"no-api", KIND_BOOL, OFF(no_api), 0, 0, NULL, NULL, "false",
		    "record without an API server (kernel and node only)"},
    [OPT_EMIT_EVENTS] = {"emit-events", KIND_EMIT, OFF(emit_events), 0, 0, NULL, "FILE|-", "off",
			 "write every recorded event as a JSON line (- is stdout)", .def_described = true},
    [OPT_RINGBUF_KIB] = {"ring-buffer-kib", KIND_U32, OFF(ringbuf_kib), 64, 1048576, "KiB", "KIB",
			 TL_XSTR(TL_DEFAULT_RINGBUF_KIB), "kernel ring buffer size, a power of two"},
    [OPT_SIGNALS] = {"signals", KIND_SIGNALS, OFF(signal_mask), 0, 0, NULL, "LIST",
		     TL_SIGNALS_DEFAULT_TEXT,
		     "signals recorded (names, comma-separated)"},
    [OPT_MAX_EVENTS] = {"max-events-per-timeline", KIND_U32, OFF(max_events_per_timeline), 1,
			10000000, "events", "N", TL_XSTR(TL_DEFAULT_MAX_EVENTS), "events kept per timeline"},
    [OPT_MAX_OPEN_TIMELINES] = {"max-open-timelines", KIND_U32, OFF(max_open_timelines), 1, 1000000,
				"timelines", "N", TL_XSTR(TL_DEFAULT_MAX_OPEN_TIMELINES),
				"open timelines; at it the least recently active one closes"},
    [OPT_TIMELINE_IDLE_CLOSE] = {"timeline-idle-close", KIND_U32, OFF(timeline_idle_close_s), 0,
				 604800, "seconds", "SECONDS", TL_XSTR(TL_DEFAULT_TIMELINE_IDLE_CLOSE_S),
				 "close an idle timeline nothing vouches for (0: never)"},
    [OPT_RETENTION_BYTES] = {"retention-bytes", KIND_BYTES, OFF(retention_bytes), 1ULL << 20,
			     1ULL << 50, "bytes", "BYTES", "256Mi",
			     "disk budget for closed timelines (suffixes Ki Mi Gi Ti)"},
    [OPT_RETENTION_HOURS] = {"retention-hours", KIND_U32, OFF(retention_hours), 1, 87600, "hours",
			     "HOURS", "168", "age after which closed timelines are removed"},
    [OPT_JOURNAL_FSYNC_MS] = {"journal-fsync-ms", KIND_U32, OFF(journal_fsync_ms), 0, 60000,
			      "milliseconds", "MS", TL_XSTR(TL_DEFAULT_JOURNAL_FSYNC_MS),
			      "longest time journal writes stay unsynced"},
    [OPT_HTTP_CAPTURE] = {"http-capture", KIND_HTTP_CAPTURE, OFF(http_capture), 0, 0, NULL,
			  "MODE", "windows",
			  "HTTP on Pod sockets: windows (start-up, termination), always, off"},
    [OPT_HTTP_PREFIX_BYTES] = {"http-prefix-bytes", KIND_U32, OFF(http_prefix_bytes), 64,
			       TL_HTTP_PREFIX_MAX, "bytes", "BYTES", TL_XSTR(TL_HTTP_PREFIX_DEFAULT),
			       "bytes of an HTTP message head copied"},
    [OPT_ACCESS_LOG_CONTAINER] = {"access-log-container", KIND_CONTAINER, OFF(access_log_container),
				  0, 0, NULL, "NAME", TL_DEFAULT_ACCESS_LOG_CONTAINER,
				  "container whose log holds the proxy's access log"},
    [OPT_ACCESS_LOG_FORMAT] = {"access-log-format", KIND_FORMAT, 0, 0, 0, NULL, "FORMAT",
			       "none: Envoy's and Istio's formats by their shape",
			       "proxy access-log format, Envoy operators or JSON (repeatable)",
			       .def_described = true},
    [OPT_METRICS_MAX_WORKLOADS] = {"metrics-max-workloads", KIND_U32, OFF(metrics_max_workloads),
				   1, 100000, "workloads", "N",
				   TL_XSTR(TL_DEFAULT_METRICS_MAX_WORKLOADS),
				   "workloads with metrics of their own; later ones are workload=\"_other\""},
    /* OTLP export (docs/export.md); what none of these set comes from the
     * OTEL_EXPORTER_OTLP_* variables (tl_otlp_config_resolve) */
    [OPT_OTLP_ENDPOINT] = {"otlp-endpoint", KIND_OTLP, OFF(otlp_endpoint), 0, 0, NULL, "URL",
			   "$OTEL_EXPORTER_OTLP_ENDPOINT, else off",
			   "OTLP/HTTP collector: traces to URL/v1/traces", .def_described = true},
    [OPT_OTLP_PROTOCOL] = {"otlp-protocol", KIND_OTLP, OFF(otlp_protocol), 0, 0, NULL, "PROTO",
			   "$OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf",
			   "http/protobuf or http/json", .def_described = true},
    [OPT_OTLP_HEADERS] = {"otlp-headers", KIND_OTLP, OFF(otlp_headers), 0, 0, NULL, "K=V,...",
			  "$OTEL_EXPORTER_OTLP_HEADERS, else none",
			  "headers of every OTLP request (values %-encoded)", .def_described = true},
    [OPT_OTLP_TIMEOUT] = {"otlp-timeout", KIND_OTLP, OFF(otlp_timeout), 0, 0, NULL, "DURATION",
			  "$OTEL_EXPORTER_OTLP_TIMEOUT (ms), else 10s",
			  "time for one OTLP request (10s, 500ms)", .def_described = true},
    [OPT_OTLP_CERTIFICATE] = {"otlp-certificate", KIND_PATH, OFF(otlp_certificate), 0, 0, NULL,
			      "FILE", "$OTEL_EXPORTER_OTLP_CERTIFICATE, else the system's",
			      "CA bundle that verifies the collector", .def_described = true},
    [OPT_OTLP_CLIENT_CERTIFICATE] = {"otlp-client-certificate", KIND_PATH,
				     OFF(otlp_client_certificate), 0, 0, NULL, "FILE",
				     "$OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, else none",
				     "client certificate (PEM) for mutual TLS", .def_described = true},
    [OPT_OTLP_CLIENT_KEY] = {"otlp-client-key", KIND_PATH, OFF(otlp_client_key), 0, 0, NULL, "FILE",
			     "$OTEL_EXPORTER_OTLP_CLIENT_KEY, else none",
			     "its private key (PEM)", .def_described = true},
    [OPT_OTLP_INSECURE] = {"otlp-insecure", KIND_BOOL, OFF(otlp_insecure), 0, 0, NULL, NULL, "false",
			   "do not verify the collector's TLS certificate"},
    [OPT_OTLP_LOGS] = {"otlp-logs", KIND_BOOL, OFF(otlp_logs), 0, 0, NULL, NULL, "false",
		       "also send every event as an OTLP log record (URL/v1/logs)"},
    [OPT_OTLP_QUEUE_BYTES] = {"otlp-queue-bytes", KIND_BYTES, OFF(otlp_queue_bytes), 1ULL << 20,
			      1ULL << 30, "bytes", "BYTES", "16Mi",
			      "encoded OTLP data waiting at most; past it, dropped and counted"},
    [OPT_VERSION] = {"version", KIND_ACTION, 0, 0, 0, NULL, NULL, NULL,
		     "print the version and exit"},
    [OPT_HELP] = {"help", KIND_ACTION, 0, 0, 0, NULL, NULL, NULL, "print this help and exit"},
};

static const char *const http_capture_names[] = {
    [TL_HTTP_CAPTURE_WINDOWS] = "windows",
    [TL_HTTP_CAPTURE_ALWAYS] = "always",
    [TL_HTTP_CAPTURE_OFF] = "off",
};

static const char *const log_level_names[] = {
    [TL_LOG_DEBUG] = "debug",
    [TL_LOG_INFO] = "info",
    [TL_LOG_WARN] = "warn",
    [TL_LOG_ERROR] = "error",
};

/* Where a value came from, for the one-line error. */
struct origin {
	const char *file; /* NULL: the command line */
	unsigned long line;
};

/* Values and file names are echoed in errors: keep them on one line and
 * within the buffer (len >= 4), cut with "..." when longer. */
static void quote(char *buf, size_t len, const char *s)
{
	size_t i = 0;

	for (; *s; s++) {
		if (i + 4 >= len) {
			memcpy(buf + i, "...", 3);
			i += 3;
			break;
		}
		buf[i++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	}
	buf[i] = '\0';
}

static int fail_at(char *err, size_t errlen, const struct origin *at, const char *key,
		   const char *why)
{
	if (!at->file)
		return tl_err(err, errlen, PROG ": --%s: %s", key, why);
	return tl_err(err, errlen, "config %s:%lu: %s: %s", at->file, at->line, key, why);
}

static int why_value(char *why, const char *val, const char *what)
{
	char q[80];

	quote(q, sizeof(q), val);
	snprintf(why, WHY_MAX, "'%s' %s", q, what);
	return -EINVAL;
}

static int parse_u64(const char *s, uint64_t *ret, const char **ret_end)
{
	unsigned long long v;
	char *end;

	/* strtoull accepts leading blanks and a sign; a setting does not. */
	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	*ret = v;
	*ret_end = end;
	return 0;
}

static int parse_bytes(const char *s, uint64_t *ret)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} suffixes[] = {
	    {"", 0},	 {"B", 0},  {"K", 10},	{"Ki", 10},  {"KiB", 10}, {"M", 20},  {"Mi", 20},
	    {"MiB", 20}, {"G", 30}, {"Gi", 30}, {"GiB", 30}, {"T", 40},	  {"Ti", 40}, {"TiB", 40},
	};
	const char *end;
	uint64_t v;
	int r;

	r = parse_u64(s, &v, &end);
	if (r < 0)
		return r;
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		if (strcmp(end, suffixes[i].suffix) != 0)
			continue;
		if (v > (UINT64_MAX >> suffixes[i].shift))
			return -ERANGE;
		*ret = v << suffixes[i].shift;
		return 0;
	}
	return -EINVAL;
}

/* Kubernetes node names are DNS-1123 subdomains. */
static bool node_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > NODE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		bool edge = i == 0 || i == n - 1 || s[i - 1] == '.' || s[i + 1] == '.';

		if (alnum)
			continue;
		if ((c == '-' || c == '.') && !edge)
			continue;
		return false;
	}
	return true;
}

/* Container names are DNS-1123 labels: a subdomain without dots, <= 63. */
static bool container_name_valid(const char *s)
{
	return strlen(s) <= 63 && !strchr(s, '.') && node_name_valid(s);
}

/* RFC 9110 section 5.6.2: tchar. */
static bool is_tchar(char c)
{
	return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static int check_listen(const char *s, char *why)
{
	char host[INET6_ADDRSTRLEN + 1];
	unsigned char addr[sizeof(struct in6_addr)];
	const char *colon, *port;
	const char *end;
	uint64_t p;
	size_t hl;
	int family = AF_INET;

	if (s[0] == '\0' || strcmp(s, "off") == 0)
		return 0;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return why_value(why, s, "is not [IPv6]:PORT");
		hl = (size_t)(close - s - 1);
		if (hl >= sizeof(host))
			return why_value(why, s, "is not [IPv6]:PORT");
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		port = close + 2;
		family = AF_INET6;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return why_value(why, s, "is not ADDR:PORT (e.g. 0.0.0.0:9440)");
		hl = (size_t)(colon - s);
		if (memchr(s, ':', hl))
			return why_value(why, s,
					 "needs brackets around an IPv6 address (e.g. [::1]:9440)");
		if (hl >= sizeof(host))
			return why_value(why, s, "is not ADDR:PORT (e.g. 0.0.0.0:9440)");
		memcpy(host, s, hl);
		host[hl] = '\0';
		port = colon + 1;
	}
	if (inet_pton(family, host, addr) != 1)
		return why_value(why, s,
				 family == AF_INET6
				     ? "does not hold an IPv6 address"
				     : "does not hold an IPv4 address (e.g. 0.0.0.0:9440)");
	/* Port 0 is allowed on purpose: the kernel picks a free port (tests). */
	if (parse_u64(port, &p, &end) < 0 || *end || p > 65535)
		return why_value(why, s, "does not end in a port 0..65535");
	return 0;
}

static int set_string(char **field, const char *val)
{
	char *dup = strdup(val);

	if (!dup)
		return -ENOMEM;
	free(*field);
	*field = dup;
	return 0;
}

static int add_header(struct tl_options *o, const char *val, char *why)
{
	size_t n = strlen(val);
	char *lower;

	if (n == 0 || n > HEADER_NAME_MAX)
		return why_value(why, val, "is not a header name (1 to 64 characters)");
	for (size_t i = 0; i < n; i++)
		if (!is_tchar(val[i]))
			return why_value(
			    why, val, "is not a header name (letters, digits and !#$%&'*+-.^_`|~)");
	lower = strdup(val);
	if (!lower)
		return -ENOMEM;
	/* Header names are case-insensitive; matchers compare lower case. */
	for (size_t i = 0; i < n; i++)
		lower[i] = (char)tolower((unsigned char)lower[i]);
	for (int i = 0; i < o->n_request_id_headers; i++) {
		if (strcmp(o->request_id_headers[i], lower) == 0) {
			free(lower);
			return 0;
		}
	}
	if (o->n_request_id_headers >= TL_MAX_HEADERS) {
		free(lower);
		snprintf(why, WHY_MAX, "more than %d header names", TL_MAX_HEADERS);
		return -EINVAL;
	}
	o->request_id_headers[o->n_request_id_headers++] = lower;
	return 0;
}

/* An Envoy format string or JSON mapping; compiled (and fully checked) by
 * the access-log reader at start. */
#define ACCESS_LOG_FORMAT_MAX 8192

static int add_format(struct tl_options *o, const char *val, char *why)
{
	char *dup;

	if (val[0] == '\0' || strlen(val) > ACCESS_LOG_FORMAT_MAX)
		return why_value(why, val, "is not an access-log format (1 to 8192 bytes)");
	if (!strchr(val, '%'))
		return why_value(why, val, "has no command operator (e.g. %RESPONSE_CODE%)");
	for (int i = 0; i < o->n_access_log_formats; i++)
		if (strcmp(o->access_log_formats[i], val) == 0)
			return 0;
	if (o->n_access_log_formats >= TL_MAX_ACCESS_LOG_FORMATS) {
		snprintf(why, WHY_MAX, "more than %d formats", TL_MAX_ACCESS_LOG_FORMATS);
		return -EINVAL;
	}
	dup = strdup(val);
	if (!dup)
		return -ENOMEM;
	o->access_log_formats[o->n_access_log_formats++] = dup;
	return 0;
}

static void clear_formats(struct tl_options *o)
{
	for (int i = 0; i < o->n_access_log_formats; i++) {
		free(o->access_log_formats[i]);
		o->access_log_formats[i] = NULL;
	}
	o->n_access_log_formats = 0;
}

static void clear_headers(struct tl_options *o)
{
	for (int i = 0; i < o->n_request_id_headers; i++) {
		free(o->request_id_headers[i]);
		o->request_id_headers[i] = NULL;
	}
	o->n_request_id_headers = 0;
}

/* A list of names separated by commas or blanks: "TERM,SIGKILL". */
static int add_signals(uint64_t *mask, const char *val, char *why)
{
	const char *p = val;
	bool any = false;

	while (*p) {
		size_t len = strcspn(p, ", \t");
		int signo;

		if (len > 0) {
			char name[32];

			if (tl_signal_lookup(p, len, &signo) < 0) {
				snprintf(name, sizeof(name), "%.*s", (int)(len < 24 ? len : 24), p);
				return why_value(why, name,
						 "is not a signal name (e.g. SIGTERM or TERM)");
			}
			*mask |= TL_SIGNAL_BIT(signo);
			any = true;
		}
		p += len;
		p += strspn(p, ", \t");
	}
	if (!any)
		return why_value(why, val, "is not a list of signal names");
	return 0;
}

static int parse_bool(const char *val, bool *ret)
{
	/* YAML 1.2 core schema booleans only: "yes"/"on" are strings there. */
	static const char *const t[] = {"true", "True", "TRUE"};
	static const char *const f[] = {"false", "False", "FALSE"};

	for (size_t i = 0; i < 3; i++) {
		if (strcmp(val, t[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcmp(val, f[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* 1048576 -> "1Mi", 1125899906842624 -> "1024Ti" */
static void fmt_size(char *buf, size_t len, uint64_t v)
{
	static const char *const suffix[] = {"Ti", "Gi", "Mi", "Ki"};

	for (int i = 0; i < 4; i++) {
		uint64_t unit = 1ULL << (40 - 10 * i);

		if (v >= unit && v % unit == 0 && (i == 0 || v / unit < 1024)) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(v / unit), suffix[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* The OTLP exporter's own parser for each of its values (otlp-config.h). */
static int otlp_check(const struct opt_def *d, const char *val, char *why)
{
	char w[TL_OTLP_WHY_MAX];
	enum tl_otlp_protocol p;
	uint32_t ms;
	int r = -EINVAL;

	if (d->offset == OFF(otlp_endpoint))
		r = tl_otlp_check_url(val, w);
	else if (d->offset == OFF(otlp_protocol))
		r = tl_otlp_parse_protocol(val, &p, w);
	else if (d->offset == OFF(otlp_headers))
		r = tl_otlp_parse_headers(val, NULL, NULL, w);
	else if (d->offset == OFF(otlp_timeout))
		r = tl_otlp_parse_timeout(val, false, &ms, w);
	if (r == -EINVAL)
		snprintf(why, WHY_MAX, "%s", w);
	return r;
}

/* Validates val for def and stores it into o. Returns 0, -ENOMEM, or
 * -EINVAL with the reason in why. Headers and signals add to what is there:
 * the callers decide when a list starts afresh. */
static int set_value(struct tl_options *o, const struct opt_def *d, const char *val, char *why)
{
	char *base = (char *)o;
	const char *end;
	uint64_t v;
	int r;

	switch (d->kind) {
	case KIND_PATH:
	case KIND_EMIT:
		if (val[0] == '\0')
			return why_value(why, val, "is empty");
		if (strlen(val) >= PATH_MAX)
			return why_value(why, val, "is longer than PATH_MAX");
		return set_string((char **)(base + d->offset), val);
	case KIND_NODE:
		if (!node_name_valid(val))
			return why_value(why, val, "is not a node name (lower-case DNS subdomain)");
		return set_string((char **)(base + d->offset), val);
	case KIND_LISTEN:
		r = check_listen(val, why);
		if (r < 0)
			return r;
		return set_string((char **)(base + d->offset), val);
	case KIND_HEADER:
		return add_header(o, val, why);
	case KIND_FORMAT:
		return add_format(o, val, why);
	case KIND_CONTAINER:
		if (!container_name_valid(val))
			return why_value(why, val, "is not a container name (lower-case DNS label)");
		return set_string((char **)(base + d->offset), val);
	case KIND_LOG_LEVEL:
		for (size_t i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]); i++) {
			if (strcmp(val, log_level_names[i]) == 0) {
				*(enum tl_log_level *)(base + d->offset) = (enum tl_log_level)i;
				return 0;
			}
		}
		return why_value(why, val, "is not a log level (debug, info, warn or error)");
	case KIND_HTTP_CAPTURE:
		for (size_t i = 0; i < sizeof(http_capture_names) / sizeof(http_capture_names[0]); i++) {
			if (strcmp(val, http_capture_names[i]) == 0) {
				*(enum tl_http_capture_mode *)(base + d->offset) =
					(enum tl_http_capture_mode)i;
				return 0;
			}
		}
		return why_value(why, val, "is not a capture mode (windows, always or off)");
	case KIND_U32:
		r = parse_u64(val, &v, &end);
		if (r == -EINVAL || (r == 0 && *end)) {
			char what[64];

			snprintf(what, sizeof(what), "is not a number of %s", d->unit);
			return why_value(why, val, what);
		}
		if (r < 0 || v < d->min || v > d->max) {
			char what[96];

			snprintf(what, sizeof(what), "is out of range (%llu..%llu %s)",
				 (unsigned long long)d->min, (unsigned long long)d->max, d->unit);
			return why_value(why, val, what);
		}
		/* libbpf rejects a ring buffer that is not a power of two. */
		if (d->offset == OFF(ringbuf_kib) && (v & (v - 1)) != 0)
			return why_value(why, val, "is not a power of two");
		*(uint32_t *)(base + d->offset) = (uint32_t)v;
		return 0;
	case KIND_BYTES:
		r = parse_bytes(val, &v);
		if (r == -EINVAL)
			return why_value(why, val,
					 "is not a size in bytes (e.g. 268435456 or 256Mi)");
		if (r < 0 || v < d->min || v > d->max) {
			char what[96], lo[24], hi[24];

			fmt_size(lo, sizeof(lo), d->min);
			fmt_size(hi, sizeof(hi), d->max);
			snprintf(what, sizeof(what), "is out of range (%s..%s)", lo, hi);
			return why_value(why, val, what);
		}
		*(uint64_t *)(base + d->offset) = v;
		return 0;
	case KIND_BOOL: {
		bool b;

		if (parse_bool(val, &b) < 0)
			return why_value(why, val, "is not a boolean (true or false)");
		*(bool *)(base + d->offset) = b;
		return 0;
	}
	case KIND_SIGNALS:
		return add_signals((uint64_t *)(base + d->offset), val, why);
	case KIND_OTLP:
		r = otlp_check(d, val, why);
		if (r < 0)
			return r;
		return set_string((char **)(base + d->offset), val);
	case KIND_CONFIG:
	case KIND_ACTION:
		break;
	}
	snprintf(why, WHY_MAX, "cannot be set here");
	return -EINVAL;
}

/* Every default comes from its row of opt_defs[], parsed as a value from
 * the file or the command line would be. */
static int set_defaults(struct tl_options *o, char *err, size_t errlen)
{
	char why[WHY_MAX];

	for (int i = 0; i < OPT_COUNT; i++) {
		const struct opt_def *d = &opt_defs[i];
		int r;

		if (!d->def || d->def_described || d->kind == KIND_CONFIG || d->kind == KIND_ACTION)
			continue;
		r = set_value(o, d, d->def, why);
		if (r == -EINVAL)
			return tl_err(err, errlen, PROG ": the default of --%s %s", d->name, why);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The Downward API puts spec.nodeName into $NODE_NAME; outside a cluster
 * the kubelet's default node name is the lower-cased host name. */
static int default_node(struct tl_options *o, char *err, size_t errlen)
{
	const char *env = getenv("NODE_NAME");
	struct utsname u;
	char q[80];

	if (env && env[0]) {
		if (!node_name_valid(env)) {
			quote(q, sizeof(q), env);
			return tl_err(err, errlen,
				    PROG ": $NODE_NAME: '%s' is not a node name "
					 "(lower-case DNS subdomain)",
				    q);
		}
		return set_string(&o->node, env);
	}
	if (uname(&u) < 0)
		return 0;
	for (char *c = u.nodename; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	if (!node_name_valid(u.nodename))
		return 0;
	return set_string(&o->node, u.nodename);
}

/* ---- the config file ---- */

struct file_state {
	struct tl_options *o;
	const bool *from_cli; /* [OPT_COUNT]: a flag already set this one */
	bool seen[OPT_COUNT];
	const char *open_path;
	char path[256]; /* as shown in errors */
	char *err;
	size_t errlen;
};

static const struct opt_def *find_key(const char *key)
{
	for (int i = 0; i < OPT_COUNT; i++)
		if (strcmp(opt_defs[i].name, key) == 0)
			return &opt_defs[i];
	return NULL;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t row[HEADER_NAME_MAX + 1];

	if (la > HEADER_NAME_MAX || lb > HEADER_NAME_MAX)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (tolower((unsigned char)a[i - 1]) !=
						  tolower((unsigned char)b[j - 1]) &&
					      !(a[i - 1] == '_' && b[j - 1] == '-'));

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

static int unknown_key(struct file_state *fs, unsigned long line, const char *key)
{
	const char *best = NULL;
	size_t best_d = 3;
	char q[80];

	for (int i = 0; i < OPT_COUNT; i++) {
		size_t d;

		if (opt_defs[i].kind == KIND_ACTION || opt_defs[i].kind == KIND_CONFIG)
			continue;
		d = edit_distance(key, opt_defs[i].name);
		if (d < best_d) {
			best_d = d;
			best = opt_defs[i].name;
		}
	}
	quote(q, sizeof(q), key);
	if (best)
		return tl_err(fs->err, fs->errlen,
			    "config %s:%lu: unknown key '%s' (did you mean '%s'?)", fs->path, line,
			    q, best);
	return tl_err(fs->err, fs->errlen, "config %s:%lu: unknown key '%s'", fs->path, line, q);
}

static unsigned long line_of(const yaml_event_t *ev)
{
	return (unsigned long)ev->start_mark.line + 1;
}

static bool scalar_is_null(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;

	if (!ev->data.scalar.plain_implicit || ev->data.scalar.tag)
		return false;
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
	       strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

static int next_event(yaml_parser_t *p, yaml_event_t *ev, struct file_state *fs)
{
	unsigned long line, ctx_line;

	if (yaml_parser_parse(p, ev))
		return 0;
	line = (unsigned long)p->problem_mark.line + 1;
	ctx_line = (unsigned long)p->context_mark.line + 1;
	/* An unclosed quote or bracket is reported where the input ends; the
	 * context names where it was opened, which is what needs fixing. */
	if (p->context && ctx_line != line)
		return tl_err(fs->err, fs->errlen,
			    "config %s:%lu: malformed YAML: %s %s started on "
			    "line %lu",
			    fs->path, line, p->problem ? p->problem : "parse error", p->context,
			    ctx_line);
	return tl_err(fs->err, fs->errlen, "config %s:%lu: malformed YAML: %s%s%s", fs->path, line,
		    p->problem ? p->problem : "parse error", p->context ? " " : "",
		    p->context ? p->context : "");
}

/* Applies one scalar to the setting, or only validates it when a flag
 * overrides the key: the scratch copy is thrown away. */
static int file_scalar(struct file_state *fs, const struct opt_def *d, const yaml_event_t *ev,
		       struct tl_options *dst)
{
	const char *val = (const char *)ev->data.scalar.value;
	char why[WHY_MAX];
	struct origin at = {fs->path, line_of(ev)};
	int r;

	if (ev->type == YAML_ALIAS_EVENT)
		return fail_at(fs->err, fs->errlen, &at, d->name, "aliases are not supported");
	if (ev->type != YAML_SCALAR_EVENT)
		return fail_at(fs->err, fs->errlen, &at, d->name, "expected a single value");
	if (scalar_is_null(ev))
		return fail_at(fs->err, fs->errlen, &at, d->name, "has no value");
	if (strlen(val) != ev->data.scalar.length)
		return fail_at(fs->err, fs->errlen, &at, d->name, "contains a NUL byte");
	r = set_value(dst, d, val, why);
	if (r == -EINVAL)
		return fail_at(fs->err, fs->errlen, &at, d->name, why);
	return r;
}

static int file_key(struct file_state *fs, yaml_parser_t *p, const yaml_event_t *kev)
{
	const char *key = (const char *)kev->data.scalar.value;
	const struct opt_def *d = find_key(key);
	struct tl_options scratch = {0};
	struct tl_options *dst;
	struct origin at = {fs->path, line_of(kev)};
	yaml_event_t ev;
	bool list;
	int id, r;

	if (!d || d->kind == KIND_ACTION || strlen(key) != kev->data.scalar.length)
		return unknown_key(fs, at.line, key);
	if (d->kind == KIND_CONFIG)
		return fail_at(fs->err, fs->errlen, &at, key, "cannot be set inside a config file");
	id = (int)(d - opt_defs);
	if (fs->seen[id])
		return fail_at(fs->err, fs->errlen, &at, key, "appears twice");
	fs->seen[id] = true;
	dst = fs->from_cli[id] ? &scratch : fs->o;
	list = d->kind == KIND_HEADER || d->kind == KIND_SIGNALS || d->kind == KIND_FORMAT;
	/* The file's list replaces the default list. */
	if (d->kind == KIND_HEADER)
		clear_headers(dst);
	if (d->kind == KIND_FORMAT)
		clear_formats(dst);
	if (d->kind == KIND_SIGNALS)
		dst->signal_mask = 0;

	r = next_event(p, &ev, fs);
	if (r < 0)
		goto out;
	if (ev.type == YAML_SEQUENCE_START_EVENT && list) {
		bool any = false;

		yaml_event_delete(&ev);
		for (;;) {
			r = next_event(p, &ev, fs);
			if (r < 0)
				goto out;
			if (ev.type == YAML_SEQUENCE_END_EVENT)
				break;
			r = file_scalar(fs, d, &ev, dst);
			yaml_event_delete(&ev);
			if (r < 0)
				goto out;
			any = true;
		}
		if (!any)
			r = fail_at(fs->err, fs->errlen, &at, key, "the list is empty");
	} else if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
		r = fail_at(fs->err, fs->errlen, &at, key,
			    list ? "expected a name or a list of names"
				 : "expected a single value, not a list or mapping");
	} else {
		r = file_scalar(fs, d, &ev, dst);
	}
	yaml_event_delete(&ev);
out:
	tl_options_free(&scratch);
	return r;
}

static int read_file(const char *open_path, const char *path, char **ret, size_t *ret_len,
		     char *err, size_t errlen)
{
	int r = tl_read_file(open_path, CONFIG_MAX_BYTES, ret, ret_len);

	if (r == -EFBIG)
		return tl_err(err, errlen, "config %s: larger than %d KiB", path, CONFIG_MAX_BYTES / 1024);
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		return tl_err(err, errlen, "config %s: cannot read: %s", path, strerror(-r));
	return 0;
}

/* The accepted shape is one document holding one flat mapping whose values
 * are scalars or, for list settings, sequences of scalars. The event API lets
 * anything deeper be refused at once instead of loaded. */
static int parse_config(struct file_state *fs)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	char *buf = NULL;
	size_t len = 0;
	int r, docs = 0;
	bool done = false;

	r = read_file(fs->open_path, fs->path, &buf, &len, fs->err, fs->errlen);
	if (r < 0)
		return r;
	if (!yaml_parser_initialize(&parser)) {
		free(buf);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);

	while (!done) {
		r = next_event(&parser, &ev, fs);
		if (r < 0)
			break;
		switch (ev.type) {
		case YAML_STREAM_START_EVENT:
		case YAML_DOCUMENT_END_EVENT:
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1)
				r = tl_err(fs->err, fs->errlen,
					 "config %s:%lu: only one YAML document "
					 "is allowed",
					 fs->path, line_of(&ev));
			break;
		case YAML_SCALAR_EVENT:
			/* A document that is empty or only "~" sets nothing. */
			if (!scalar_is_null(&ev))
				r = tl_err(fs->err, fs->errlen,
					 "config %s:%lu: the top level must be a "
					 "mapping of settings",
					 fs->path, line_of(&ev));
			break;
		case YAML_MAPPING_START_EVENT:
			for (;;) {
				yaml_event_t kev;

				r = next_event(&parser, &kev, fs);
				if (r < 0)
					break;
				if (kev.type == YAML_MAPPING_END_EVENT) {
					yaml_event_delete(&kev);
					break;
				}
				if (kev.type != YAML_SCALAR_EVENT)
					r = tl_err(fs->err, fs->errlen,
						 "config %s:%lu: keys must be "
						 "setting names",
						 fs->path, line_of(&kev));
				else
					r = file_key(fs, &parser, &kev);
				yaml_event_delete(&kev);
				if (r < 0)
					break;
			}
			break;
		default:
			r = tl_err(fs->err, fs->errlen,
				 "config %s:%lu: the top level must be a "
				 "mapping of settings",
				 fs->path, line_of(&ev));
			break;
		}
		yaml_event_delete(&ev);
		if (r < 0)
			break;
	}
	yaml_parser_delete(&parser);
	free(buf);
	return r;
}

/* ---- canonical rendering and digest ---- */

/* Strings are escaped so that no value can forge another line; sep (0:
 * none) too, so that no item of a list can forge two. */
static void sb_item(struct tl_buf *b, const char *s, char sep)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f || c == '\\' || (sep && c == (unsigned char)sep))
			tl_buf_printf(b, "\\x%02x", c);
		else
			tl_buf_addc(b, (char)c);
	}
}

static void sb_value(struct tl_buf *b, const char *s)
{
	sb_item(b, s, 0);
}

int tl_options_render(const struct tl_options *o, char **ret)
{
	struct tl_buf b;

	tl_buf_init(&b, 0);
	/* The node and the config file's path are left out: every node running
	 * the same ConfigMap reports the same digest. */
	for (int i = 0; i < OPT_COUNT; i++) {
		const struct opt_def *d = &opt_defs[i];
		const char *base = (const char *)o;

		if (d->kind == KIND_ACTION || d->kind == KIND_CONFIG || i == OPT_NODE)
			continue;
		tl_buf_printf(&b, "%s=", d->name);
		switch (d->kind) {
		case KIND_PATH:
		case KIND_NODE:
		case KIND_LISTEN:
		case KIND_EMIT:
		case KIND_CONTAINER:
			sb_value(&b, *(char *const *)(base + d->offset));
			break;
		case KIND_OTLP:
			/* header values may be credentials: only their names */
			if (i == OPT_OTLP_HEADERS && o->otlp_headers) {
				const char *p = o->otlp_headers;

				while (*p) {
					size_t n = strcspn(p, "=,");

					tl_buf_add(&b, p, n);
					p += n;
					p += strcspn(p, ",");
					if (*p == ',') {
						tl_buf_addc(&b, ',');
						p++;
					}
				}
				break;
			}
			sb_value(&b, *(char *const *)(base + d->offset));
			break;
		case KIND_HEADER:
			for (int h = 0; h < o->n_request_id_headers; h++) {
				if (h)
					tl_buf_addc(&b, ',');
				sb_value(&b, o->request_id_headers[h]);
			}
			break;
		case KIND_FORMAT:
			/* one line: the formats escaped (a bar in one too),
			 * joined by a bar */
			for (int h = 0; h < o->n_access_log_formats; h++) {
				if (h)
					tl_buf_addc(&b, '|');
				sb_item(&b, o->access_log_formats[h], '|');
			}
			break;
		case KIND_LOG_LEVEL:
			sb_value(&b,
				 (unsigned)o->log_level < 4 ? log_level_names[o->log_level] : "?");
			break;
		case KIND_HTTP_CAPTURE:
			sb_value(&b, (unsigned)o->http_capture < 3 ? http_capture_names[o->http_capture]
								   : "?");
			break;
		case KIND_U32:
			tl_buf_printf(&b, "%u", *(const uint32_t *)(base + d->offset));
			break;
		case KIND_BYTES:
			tl_buf_printf(&b, "%llu",
				  (unsigned long long)*(const uint64_t *)(base + d->offset));
			break;
		case KIND_BOOL:
			sb_value(&b, *(const bool *)(base + d->offset) ? "true" : "false");
			break;
		case KIND_SIGNALS: {
			bool first = true;

			for (int s = 1; s < 64; s++) {
				const char *name;

				if (!(o->signal_mask & TL_SIGNAL_BIT(s)))
					continue;
				name = tl_signal_name(s, NULL, 0);
				if (!first)
					tl_buf_addc(&b, ',');
				first = false;
				if (name)
					tl_buf_printf(&b, "%s", name);
				else
					tl_buf_printf(&b, "%d", s);
			}
			break;
		}
		case KIND_CONFIG:
		case KIND_ACTION:
			break;
		}
		tl_buf_addc(&b, '\n');
	}
	*ret = tl_buf_steal(&b, NULL);
	return *ret ? 0 : -ENOMEM;
}

static int compute_digest(struct tl_options *o)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char *text = NULL;
	int r;

	r = tl_options_render(o, &text);
	if (r < 0)
		return r;
	if (!EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha256(), NULL) || mdlen != 32) {
		free(text);
		return -EIO;
	}
	free(text);
	memcpy(o->config_digest, "sha256:", 7);
	for (unsigned i = 0; i < mdlen; i++)
		snprintf(o->config_digest + 7 + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/* ---- command line ---- */

static void print_help(void)
{
	printf("Usage: " PROG " [OPTION]...\n"
	       "Records what happens to the Pods of this node while they start and terminate.\n"
	       "Every option is also a key of the --config YAML file (same name, no dashes);\n"
	       "a flag on the command line wins over the file.\n\n");
	for (int i = 0; i < OPT_COUNT; i++) {
		const struct opt_def *d = &opt_defs[i];
		char left[64];

		if (i == OPT_RINGBUF_KIB)
			printf("\nSettings usually kept in the config file:\n");
		if (i == OPT_OTLP_ENDPOINT)
			printf("\nOTLP export (docs/export.md), also from the OTEL_EXPORTER_OTLP_* "
			       "variables:\n");
		if (i == OPT_VERSION)
			printf("\n");
		snprintf(left, sizeof(left), "--%s%s%s", d->name, d->meta ? " " : "",
			 d->meta ? d->meta : "");
		printf("  %-28s %s\n", left, d->help);
		if (d->def)
			printf("  %-28s default: %s\n", "", d->def);
	}
	printf("\nExit status: 0 after a clean stop, 2 on bad flags or configuration.\n");
}

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* What the flags and the file left unset comes from the environment. */
static int resolve_otlp(struct tl_options *o, char *err, size_t errlen)
{
	struct tl_otlp_settings s = {
		.endpoint = o->otlp_endpoint,
		.protocol = o->otlp_protocol,
		.headers = o->otlp_headers,
		.timeout = o->otlp_timeout,
		.certificate = o->otlp_certificate,
		.client_certificate = o->otlp_client_certificate,
		.client_key = o->otlp_client_key,
		.insecure = o->otlp_insecure,
		.logs = o->otlp_logs,
		.queue_bytes = o->otlp_queue_bytes,
	};

	tl_otlp_config_free(&o->otlp);
	return tl_otlp_config_resolve(&s, env_get, &o->otlp, err, errlen);
}

static void options_move(struct tl_options *dst, struct tl_options *src)
{
	*dst = *src;
	memset(src, 0, sizeof(*src));
}

int tl_options_parse(struct tl_options *opts, int argc, char **argv, char *err, size_t errlen)
{
	struct option longopts[OPT_COUNT + 1];
	struct tl_options o = {0};
	bool from_cli[OPT_COUNT] = {false};
	char why[WHY_MAX];
	int r, c;

	if (err && errlen)
		err[0] = '\0';
	for (int i = 0; i < OPT_COUNT; i++) {
		const struct opt_def *d = &opt_defs[i];
		bool arg = d->kind != KIND_ACTION && d->kind != KIND_BOOL;

		longopts[i] = (struct option){d->name, arg ? required_argument : no_argument, NULL,
					      0x100 + i};
	}
	longopts[OPT_COUNT] = (struct option){0};

	r = set_defaults(&o, err, errlen);
	if (r < 0)
		goto out;

	/* optind = 0 makes glibc start over, so the parser can run more than
	 * once in a process; '+' stops at the first operand instead of permuting
	 * the caller's argv; ':' reports a missing argument apart. */
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:", longopts, NULL)) != -1) {
		const struct opt_def *d;
		int id;

		if (c == '?') {
			char q[80];

			quote(q, sizeof(q), optind > 0 && optind <= argc ? argv[optind - 1] : "?");
			if (optopt >= 0x100 && optopt < 0x100 + OPT_COUNT)
				r = tl_err(err, errlen, PROG ": --%s takes no value",
					 opt_defs[optopt - 0x100].name);
			else
				r = tl_err(err, errlen, PROG ": unknown option '%s' (see --help)", q);
			goto out;
		}
		if (c == ':') {
			if (optopt >= 0x100 && optopt < 0x100 + OPT_COUNT)
				r = tl_err(err, errlen, PROG ": --%s needs a value",
					 opt_defs[optopt - 0x100].name);
			else
				r = tl_err(err, errlen, PROG ": an option needs a value");
			goto out;
		}
		id = c - 0x100;
		if (id < 0 || id >= OPT_COUNT) {
			r = tl_err(err, errlen, PROG ": unknown option (see --help)");
			goto out;
		}
		d = &opt_defs[id];
		if (id == OPT_HELP) {
			print_help();
			r = 1;
			goto out;
		}
		if (id == OPT_VERSION) {
			printf(PROG " %s\n", TERMLINE_VERSION);
			r = 1;
			goto out;
		}
		if (id == OPT_CONFIG) {
			if (optarg[0] == '\0') {
				r = tl_err(err, errlen, PROG ": --config: the file name is empty");
				goto out;
			}
			r = set_string(&o.config_path, optarg);
			if (r < 0)
				goto out;
			continue;
		}
		/* The first flag of a list replaces the default (or the file's)
		 * list; later ones add to it. */
		if (!from_cli[id] && d->kind == KIND_HEADER)
			clear_headers(&o);
		if (!from_cli[id] && d->kind == KIND_FORMAT)
			clear_formats(&o);
		if (!from_cli[id] && d->kind == KIND_SIGNALS)
			o.signal_mask = 0;
		from_cli[id] = true;
		r = d->kind == KIND_BOOL ? set_value(&o, d, "true", why)
					 : set_value(&o, d, optarg, why);
		if (r == -EINVAL) {
			struct origin at = {NULL, 0};

			r = fail_at(err, errlen, &at, d->name, why);
		}
		if (r < 0)
			goto out;
	}
	if (optind < argc) {
		char q[80];

		quote(q, sizeof(q), argv[optind]);
		r = tl_err(err, errlen, PROG ": unexpected argument '%s' (see --help)", q);
		goto out;
	}

	if (o.config_path) {
		struct file_state fs = {
		    .o = &o,
		    .from_cli = from_cli,
		    .open_path = o.config_path,
		    .err = err,
		    .errlen = errlen,
		};

		quote(fs.path, sizeof(fs.path), o.config_path);

		r = parse_config(&fs);
		if (r < 0)
			goto out;
	}
	if (!o.node) {
		r = default_node(&o, err, errlen);
		if (r < 0)
			goto out;
	}
	r = resolve_otlp(&o, err, errlen);
	if (r < 0)
		goto out;
	r = compute_digest(&o);
	if (r < 0)
		goto out;

	options_move(opts, &o);
	return 0;
out:
	if (r == -ENOMEM)
		tl_err(err, errlen, PROG ": out of memory");
	else if (r == -EIO)
		tl_err(err, errlen, PROG ": cannot compute the config digest");
	tl_options_free(&o);
	return r;
}

void tl_options_free(struct tl_options *opts)
{
	if (!opts)
		return;
	free(opts->config_path);
	free(opts->kubeconfig);
	free(opts->node);
	free(opts->state_dir);
	free(opts->listen);
	free(opts->cgroup_root);
	free(opts->pod_logs_dir);
	free(opts->access_log_container);
	clear_headers(opts);
	clear_formats(opts);
	free(opts->emit_events);
	free(opts->otlp_endpoint);
	free(opts->otlp_protocol);
	free(opts->otlp_headers);
	free(opts->otlp_timeout);
	free(opts->otlp_certificate);
	free(opts->otlp_client_certificate);
	free(opts->otlp_client_key);
	tl_otlp_config_free(&opts->otlp);
	memset(opts, 0, sizeof(*opts));
}
