/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "access-log.h"
#include "event.h"
#include "http-pair.h"
#include "loop.h"
#include "pod-logs.h"

/* HTTP requests into the timeline as http.request events: from the proxy's
 * access log (source log) and from the Pod's own sockets (source kernel).
 * docs/http-capture.md. */
struct tl_capture;

#define TL_CAPTURE_LOG_CONTAINER_DEFAULT "istio-proxy"

struct tl_capture_config {
	const char *pod_logs_dir;        /* NULL or "" : no access logs */
	const char *log_container;       /* NULL = TL_CAPTURE_LOG_CONTAINER_DEFAULT */
	const char *const *request_id_headers; /* lower case, priority order */
	int n_request_id_headers;
};

int tl_capture_new(const struct tl_capture_config *cfg, struct tl_loop *loop,
		   const struct tl_emitter *emit, struct tl_capture **ret);
void tl_capture_free(struct tl_capture *c);
/* Reads every access log now (tests, shutdown). Records read or -errno. */
int tl_capture_poll_logs(struct tl_capture *c);

/* The event of one access-log record of container src->container of the Pod
 * src->uid; cri_ns (the runtime's time for the line) stands in when the record
 * has no start time. 0 or -errno; ev is initialised by this call. */
int tl_capture_log_event(const struct tl_pod_log_source *src, const struct tl_access_record *r,
			 int64_t cri_ns, struct tl_event *ev);
/* The event of one exchange seen on a socket; times are UTC ns. */
int tl_capture_kernel_event(const struct tl_http_exchange *x,
			    int64_t start_ns, int64_t end_ns, struct tl_event *ev);
