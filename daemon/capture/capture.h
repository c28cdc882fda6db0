/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "access-log.h"
#include "event.h"
#include "http-pair.h"
#include "loop.h"
#include "options.h"
#include "pod-logs.h"

/* HTTP requests into the timeline as http.request events: from the proxy's
 * access log (source log) and from the Pod's own sockets (source kernel).
 * docs/http-capture.md. */
struct tl_capture;

#define TL_CAPTURE_LOG_CONTAINER_DEFAULT TL_DEFAULT_ACCESS_LOG_CONTAINER /* options.h */

struct tl_clock;

struct tl_capture_config {
	const char *pod_logs_dir;        /* NULL or "" : no access logs */
	const char *log_container;       /* NULL = TL_CAPTURE_LOG_CONTAINER_DEFAULT */
	const char *const *request_id_headers; /* lower case, priority order */
	int n_request_id_headers;
	/* Socket capture: off, always, or only while a Pod of this node is
	 * in a start-up or termination window (the programs are detached
	 * otherwise: an attached syscall program slows every process). */
	enum tl_http_capture_mode mode;
	uint32_t prefix_bytes;           /* 0 = TL_HTTP_PREFIX_DEFAULT */
	uint32_t ringbuf_bytes;          /* 0 = 4 MiB */
	uint32_t ready_margin_s;         /* start window: until Ready + this; 0 = 10 */
	uint32_t start_max_s;            /* start window without a Ready: 0 = 120 */
	uint32_t linger_s;               /* termination window: until pod.deleted + this */
	/* BOOTTIME -> UTC for the sockets' records, re-sampled by its owner;
	 * NULL: their times stay BOOTTIME. */
	const struct tl_clock *clock;
	/* The last access-log file of Pod uid went away (its log directory
	 * removed): read to its end first. NULL: not told. */
	void (*logs_gone)(void *ud, const char *uid);
	void *logs_gone_ud;
};

/* Loads the socket capture (unless off) and starts tailing access logs.
 * A socket capture that cannot load is not fatal: err says why, the access
 * logs are still read, and tl_capture_sockets() is false. */
int tl_capture_new(const struct tl_capture_config *cfg, struct tl_loop *loop,
		   const struct tl_emitter *emit, struct tl_capture **ret, char *err, size_t errlen);
void tl_capture_free(struct tl_capture *c);
bool tl_capture_sockets(const struct tl_capture *c);
/* Whether an access-log file of Pod uid is being read. */
bool tl_capture_has_pod_logs(const struct tl_capture *c, const char *uid);
/* Whether the syscall programs are attached now. */
bool tl_capture_attached(const struct tl_capture *c);

/* A container cgroup of a Pod appeared or went away (the cgroup map's
 * callbacks; container_id bare, "" above the container level). opening:
 * the Pod is new (not found at agent start), so its start-up window opens. */
void tl_capture_cgroup_added(struct tl_capture *c, uint64_t cgroup_id, const char *pod_uid,
			     const char *container_id, bool opening);
void tl_capture_cgroup_removed(struct tl_capture *c, uint64_t cgroup_id);
/* Every event the agent records, after attribution: lifecycle facts
 * (deletion requested, SIGTERM, Ready, deleted, cgroups removed) open and
 * close capture windows. */
void tl_capture_observe(struct tl_capture *c, const struct tl_event *ev);
/* The Pod's timeline is about to close: everything the capture still holds
 * of it goes out now (the socket ring is consumed, the Pod's access logs are
 * read to their end, inbound exchanges still waiting for their log record
 * are emitted alone), so that it lands in the document, not late. */
void tl_capture_flush_pod(struct tl_capture *c, const char *uid);
/* Consumes the socket ring now and reports what it saw. */
void tl_capture_drain(struct tl_capture *c);
/* Records lost to a full ring since load. */
uint64_t tl_capture_dropped(const struct tl_capture *c);
/* Reads every access log now (tests, shutdown). Records read or -errno. */
int tl_capture_poll_logs(struct tl_capture *c);

/* The event of one access-log record of container src->container of the Pod
 * src->uid; cri_ns (the runtime's time for the line) stands in when the record
 * has no start time. 0 or -errno; ev is initialised by this call. */
int tl_capture_log_event(const struct tl_pod_log_source *src, const struct tl_access_record *r,
			 int64_t cri_ns, struct tl_event *ev);
/* The event of one exchange seen on a socket; times are UTC ns (its
 * conn_start_ns too). */
int tl_capture_kernel_event(const struct tl_http_exchange *x, int64_t start_ns, int64_t end_ns,
			    struct tl_event *ev);
