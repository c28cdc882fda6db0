/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "log.h"
#include "otlp-config.h"

/* Every setting of termlined. Each one is a command-line flag and a key of
 * the --config YAML file (same name without the leading dashes, e.g.
 * "state-dir: /var/lib/termline"); a flag on the command line wins over the
 * file. Keys only in the file (no flag) are marked below. The defaults are
 * defined once, in opt_defs[] (options.c), and printed by --help. */
#define TL_MAX_HEADERS 16
#define TL_MAX_ACCESS_LOG_FORMATS 16

/* Defaults that another module also falls back to when handed 0; opt_defs[]
 * applies them and --help prints them from these. */
#define TL_DEFAULT_RINGBUF_KIB 4096          /* ring-buffer-kib */
#define TL_DEFAULT_MAX_EVENTS 20000          /* max-events-per-timeline */
#define TL_DEFAULT_MAX_OPEN_TIMELINES 1024   /* max-open-timelines */
#define TL_DEFAULT_TIMELINE_IDLE_CLOSE_S 900 /* timeline-idle-close */
#define TL_DEFAULT_JOURNAL_FSYNC_MS 200      /* journal-fsync-ms */
#define TL_DEFAULT_ACCESS_LOG_CONTAINER "istio-proxy" /* access-log-container */
#define TL_DEFAULT_METRICS_MAX_WORKLOADS 500 /* metrics-max-workloads */

/* --http-capture: when the syscall programs that see HTTP on the Pods'
 * sockets are attached (docs/http-capture.md). */
enum tl_http_capture_mode {
	TL_HTTP_CAPTURE_WINDOWS = 0, /* while a Pod is starting or terminating */
	TL_HTTP_CAPTURE_ALWAYS = 1,
	TL_HTTP_CAPTURE_OFF = 2,
};

struct tl_options {
	char *config_path;          /* --config */
	char *kubeconfig;           /* --kubeconfig (NULL = in-cluster) */
	char *node;                 /* --node */
	char *state_dir;            /* --state-dir */
	char *listen;               /* --listen; "" or "off" disables */
	char *cgroup_root;          /* --cgroup-root */
	char *pod_logs_dir;         /* --pod-logs-dir */
	char *request_id_headers[TL_MAX_HEADERS]; /* --request-id-header (repeatable) */
	int n_request_id_headers;
	enum tl_log_level log_level; /* --log-level */
	uint32_t linger_s;          /* --linger */
	bool no_api;                /* --no-api */
	char *emit_events;          /* --emit-events FILE|- (NULL = off) */
	enum tl_http_capture_mode http_capture; /* --http-capture */
	char *access_log_container; /* --access-log-container */
	char *access_log_formats[TL_MAX_ACCESS_LOG_FORMATS]; /* --access-log-format (repeatable) */
	int n_access_log_formats;

	/* file-only keys (also accepted as flags of the same name) */
	uint32_t ringbuf_kib;       /* ring-buffer-kib */
	uint64_t signal_mask;       /* signals: list of names;
				     * bit (signo - 1), the BPF filter's layout */
	uint32_t max_events_per_timeline; /* max-events-per-timeline */
	uint32_t max_open_timelines; /* max-open-timelines */
	uint32_t timeline_idle_close_s; /* timeline-idle-close (0: never) */
	uint64_t retention_bytes;   /* retention-bytes */
	uint32_t retention_hours;   /* retention-hours */
	uint32_t journal_fsync_ms;  /* journal-fsync-ms */
	uint32_t http_prefix_bytes; /* http-prefix-bytes: bytes of a message head copied */
	uint32_t metrics_max_workloads; /* metrics-max-workloads: workloads with series of
					 * their own (docs/export.md) */

	/* OTLP export (docs/export.md): flag > config file >
	 * OTEL_EXPORTER_OTLP_* > default; NULL: not set by a flag or the file */
	char *otlp_endpoint;           /* --otlp-endpoint */
	char *otlp_protocol;           /* --otlp-protocol */
	char *otlp_headers;            /* --otlp-headers */
	char *otlp_timeout;            /* --otlp-timeout */
	char *otlp_certificate;        /* --otlp-certificate */
	char *otlp_client_certificate; /* --otlp-client-certificate */
	char *otlp_client_key;         /* --otlp-client-key */
	bool otlp_insecure;            /* --otlp-insecure */
	bool otlp_logs;                /* --otlp-logs */
	uint64_t otlp_queue_bytes;     /* otlp-queue-bytes */

	/* derived */
	char config_digest[72];
	struct tl_otlp_config otlp; /* the above resolved with the environment */     /* "sha256:<hex>" of the effective settings */
};

/* Parses argv (and the --config file it names) into *opts.
 * Returns 0 to run, 1 when --help/--version was printed (exit 0),
 * or -EINVAL after writing one line naming the bad flag, file, line and key
 * into err (caller prints it and exits 2). */
int tl_options_parse(struct tl_options *opts, int argc, char **argv, char *err, size_t errlen);
void tl_options_free(struct tl_options *opts);
/* The canonical text of the effective settings that config_digest hashes:
 * one "key=value" line per setting in a fixed order (the node and the config
 * path left out, so every node of one ConfigMap shares a digest). Caller
 * frees *ret. 0 or -ENOMEM. */
int tl_options_render(const struct tl_options *opts, char **ret);
