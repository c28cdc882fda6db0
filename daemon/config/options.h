/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "log.h"

/* Every setting of termlined. Each one is a command-line flag and a key of
 * the --config YAML file (same name without the leading dashes, e.g.
 * "state-dir: /var/lib/termline"); a flag on the command line wins over the
 * file. Keys only in the file (no flag) are marked below. */
#define TL_MAX_HEADERS 16

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
	char *node;                 /* --node, default $NODE_NAME */
	char *state_dir;            /* --state-dir, default /var/lib/termline */
	char *listen;               /* --listen, default 0.0.0.0:9440; "" or "off" disables */
	char *cgroup_root;          /* --cgroup-root, default: cgroup2 mount from mountinfo */
	char *pod_logs_dir;         /* --pod-logs-dir, default /var/log/pods */
	char *request_id_headers[TL_MAX_HEADERS]; /* --request-id-header (repeatable), default x-request-id */
	int n_request_id_headers;
	enum tl_log_level log_level; /* --log-level */
	uint32_t linger_s;          /* --linger, default 30 */
	bool no_api;                /* --no-api */
	char *emit_events;          /* --emit-events FILE|- (NULL = off) */
	enum tl_http_capture_mode http_capture; /* --http-capture, default windows */
	char *access_log_container; /* --access-log-container, default istio-proxy */

	/* file-only keys (also accepted as flags of the same name) */
	uint32_t ringbuf_kib;       /* ring-buffer-kib, default 4096 */
	uint64_t signal_mask;       /* signals: list of names, default TL_SIGNALS_DEFAULT (signals.h);
				     * bit (signo - 1), the BPF filter's layout */
	uint32_t max_events_per_timeline; /* max-events-per-timeline, default 20000 */
	uint64_t retention_bytes;   /* retention-bytes, default 256 MiB */
	uint32_t retention_hours;   /* retention-hours, default 168 */
	uint32_t journal_fsync_ms;  /* journal-fsync-ms, default 200 */
	uint32_t http_prefix_bytes; /* http-prefix-bytes, default 2048: bytes of a message head copied */

	/* derived */
	char config_digest[72];     /* "sha256:<hex>" of the effective settings */
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
