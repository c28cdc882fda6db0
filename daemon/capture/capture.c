/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "clock.h"
#include "metrics.h"

struct tl_capture {
	struct tl_emitter emit;
	struct tl_pod_logs *logs;
	struct tl_http_want want;
	uint64_t log_records;
	uint64_t log_not_access;
};

static const char *direction_name(enum tl_http_direction d)
{
	return d == TL_HTTP_DIR_OUTBOUND ? "outbound" : "inbound";
}

/* Fields shared by both sources; every setter's result is checked because
 * a field the event model refuses means a malformed event. */
static int set_common(struct tl_event *ev, const char *id, const char *method, const char *path,
		      int status, int64_t start_ns, int64_t duration_ms, const char *direction)
{
	char tbuf[TL_TIME_STRLEN];
	int r = 0;

	/* The contract: requestId is null when the request carried none. */
	r = r ?: tl_event_set_str(ev, "requestId", id && id[0] ? id : NULL);
	r = r ?: tl_event_set_str(ev, "method", method);
	r = r ?: tl_event_set_str(ev, "path", path);
	r = r ?: tl_event_set_int(ev, "status", status);
	r = r ?: tl_event_set_str(ev, "start", tl_time_format(start_ns, tbuf));
	r = r ?: tl_event_set_int(ev, "durationMs", duration_ms < 0 ? 0 : duration_ms);
	r = r ?: tl_event_set_str(ev, "direction", direction);
	return r;
}

int tl_capture_log_event(const struct tl_pod_log_source *src, const struct tl_access_record *rec,
			 int64_t cri_ns, struct tl_event *ev)
{
	int64_t start = rec->start_ns ? rec->start_ns : cri_ns;
	/* Envoy's default format names no direction; a sidecar's log of the
	 * Pod's own traffic is its inbound listener unless the Istio cluster
	 * name says otherwise. */
	const char *dir = rec->direction == TL_DIR_OUTBOUND ? "outbound" : "inbound";
	int r;

	r = tl_event_init(ev, TL_SRC_LOG, "http.request", start);
	if (r < 0)
		return r;
	snprintf(ev->pod_uid, sizeof(ev->pod_uid), "%s", src->uid);
	snprintf(ev->container, sizeof(ev->container), "%s", src->container);
	r = set_common(ev, rec->request_id, rec->method, rec->path, rec->status, start,
		       rec->duration_ms, dir);
	/* The contract writes Envoy's "-" for no flags. */
	r = r ?: tl_event_set_str(ev, "responseFlags", rec->flags[0] ? rec->flags : "-");
	if (r < 0)
		tl_event_clear(ev);
	return r;
}

int tl_capture_kernel_event(const struct tl_http_exchange *x,
			    int64_t start_ns, int64_t end_ns, struct tl_event *ev)
{
	int64_t dur = end_ns > start_ns ? (end_ns - start_ns) / 1000000 : 0;
	int r;

	r = tl_event_init(ev, TL_SRC_KERNEL, "http.request", start_ns);
	if (r < 0)
		return r;
	ev->cgroup_id = x->cgroup_id;
	r = set_common(ev, x->id, x->method, x->path, x->status, start_ns, dur,
		       direction_name(x->direction));
	if (r == 0 && x->error)
		r = tl_event_set_str(ev, "error", x->error);
	if (r < 0)
		tl_event_clear(ev);
	return r;
}

static void on_log_record(void *ud, const struct tl_pod_log_source *src, int64_t t,
			  const char *text, size_t len, bool cut)
{
	struct tl_capture *c = ud;
	struct tl_access_record rec;
	struct tl_event ev;

	/* A cut record lost its tail: its last fields cannot be trusted. */
	if (cut || tl_access_parse(text, len, &rec) < 0) {
		c->log_not_access++;
		return;
	}
	if (tl_capture_log_event(src, &rec, t, &ev) < 0) {
		tl_metric_add("termline_http_log_records_dropped_total", NULL, 1);
		return;
	}
	c->log_records++;
	tl_metric_add("termline_http_log_records_total", NULL, 1);
	tl_emit(&c->emit, &ev);
}

int tl_capture_new(const struct tl_capture_config *cfg, struct tl_loop *loop,
		   const struct tl_emitter *emit, struct tl_capture **ret)
{
	struct tl_capture *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	c->emit = *emit;
	for (int i = 0; i < cfg->n_request_id_headers && i < TL_HTTP_WANT_MAX; i++)
		c->want.names[c->want.n++] = cfg->request_id_headers[i];
	tl_metric_describe("termline_http_log_records_total", TL_METRIC_COUNTER,
			   "Proxy access-log records recorded as http.request.");
	tl_metric_describe("termline_http_log_records_dropped_total", TL_METRIC_COUNTER,
			   "Proxy access-log records that could not be made into events.");
	if (cfg->pod_logs_dir && cfg->pod_logs_dir[0]) {
		struct tl_pod_logs_config pc = {
			.root = cfg->pod_logs_dir,
			.container = cfg->log_container ? cfg->log_container
							: TL_CAPTURE_LOG_CONTAINER_DEFAULT,
		};

		r = tl_pod_logs_new(&pc, loop, on_log_record, c, &c->logs);
		if (r < 0) {
			tl_capture_free(c);
			return r;
		}
	}
	*ret = c;
	return 0;
}

void tl_capture_free(struct tl_capture *c)
{
	if (!c)
		return;
	tl_pod_logs_free(c->logs);
	free(c);
}

int tl_capture_poll_logs(struct tl_capture *c)
{
	return c->logs ? tl_pod_logs_poll(c->logs) : 0;
}
