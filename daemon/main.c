/* SPDX-License-Identifier: Apache-2.0 */
/* termlined: the node agent. One thread, one epoll loop: the BPF ring
 * buffer, the cgroup inotify fd, curl's sockets, the HTTP server, timers and
 * signals all dispatch from tl_loop. Every recorded event passes through
 * sink_emit(), which completes its attribution (cgroup id -> pod and
 * container id -> container name), counts it, prints it for --emit-events
 * and hands it to the timeline store. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bpf-loader.h"
#include "capture.h"
#include "access-log.h"
#include "attribution.h"
#include "cgroup-map.h"
#include "clock.h"
#include "drain-agent.h"
#include "drain-conn.h"
#include "event.h"
#include "http-server.h"
#include "kube.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"
#include "options.h"
#include "otlp-export.h"
#include "termination-metrics.h"
#include "termline-config.h"
#include "timeline.h"
#include "macro.h"

/* How often the BOOTTIME->REALTIME offset is re-sampled: NTP slews move
 * REALTIME by at most 500 ppm, i.e. 30 ms per minute. */
#define CLOCK_RESAMPLE_MS 60000
/* Once a second: ring-buffer loss, API errors to log, Pod IPs to expire. */
#define HOUSEKEEPING_MS 1000
struct agent {
	struct tl_options opts;
	struct tl_clock clock; /* BOOTTIME -> UTC, re-sampled every CLOCK_RESAMPLE_MS */
	struct tl_loop *loop;
	struct tl_bpf *bpf;
	struct tl_cgroup_map *cgroups;
	struct tl_kube *kube;
	struct tl_timelines *timelines;
	struct tl_capture *capture;
	struct tl_http *http;
	struct tl_drain_agent *drain;     /* the preStop gate (docs/drain.md) */
	struct tl_drain_conn *drain_conn; /* its kernel connection counters */
	struct tl_timer *clock_timer;
	struct tl_timer *housekeeping_timer;
	FILE *emit_out;
	struct tl_buf emit_buf; /* one --emit-events line */
	int sigfd;
	uint64_t dropped_seen;
	bool bpf_ready;
	char kernel[256];
	char api_error[512]; /* last API error logged, to log each one once */
	struct tl_attr *attr; /* an event's Pod and container (daemon/attribution) */
	/* What the agent counts itself, registered once (start_metrics). */
	struct {
		struct tl_metric *events[TL_KIND_MAX][TL_SRC_MAX];
		struct tl_metric *unattributed, *ip_track_errors, *conn_poll_errors;
	} m;
	struct tl_otlp_exporter *otlp; /* --otlp-endpoint (docs/export.md) */
	char *otlp_helper;
	struct tl_term_metrics *term_metrics; /* per-workload metrics (docs/export.md) */
};

/* ---- OTLP export (daemon/export) ---- */

/* Documents closed before a start and not exported (the agent stopped
 * with them queued, or the queue was full): at most this many, the
 * newest, are exported at the start (docs/export.md). */
#define OTLP_BACKLOG_MAX 256

static void otlp_report(void *ud _unused_, const struct tl_otlp_report *r, const struct tl_otlp_stats *s)
{
	const char *what = r->signal == TL_OTLP_TRACES ? "spans" : "log records";

	tl_otlp_metrics_publish(s);
	switch (r->what) {
	case TL_OTLP_SENT:
		if (r->rejected)
			tl_warn("OTLP: %s: the receiver rejected %lld of %u %s: %s", r->label,
				(long long)r->rejected, r->items, what, r->error ? r->error : "");
		else
			tl_debug("OTLP: %s: %u %s sent", r->label, r->items, what);
		break;
	case TL_OTLP_RETRYING:
		tl_info("OTLP: %s: %u %s not sent (%s%ld%s%s), again in %u ms", r->label, r->items, what,
			r->status ? "HTTP " : "", r->status, r->error && r->error[0] ? ": " : "",
			r->error ? r->error : "", r->retry_ms);
		break;
	case TL_OTLP_FAILED:
		tl_warn("OTLP: %s: %u %s could not be sent (%s%ld%s%s); the documents on disk keep them",
			r->label, r->items, what, r->status ? "HTTP " : "", r->status,
			r->error && r->error[0] ? ": " : "", r->error ? r->error : "");
		break;
	case TL_OTLP_DROPPED:
		tl_warn("OTLP: %s: %u %s dropped: the export queue is full (otlp-queue-bytes)", r->label,
			r->items, what);
		break;
	case TL_OTLP_BAD_DOC:
		tl_warn("OTLP: %s: not exported: %s", r->label, r->error ? r->error : "");
		break;
	}
}

/* A closed timeline's document is at path: export it. */
static void otlp_document_closed(struct agent *a, const char *uid, const char *path)
{
	if (a->otlp && tl_otlp_exporter_add_doc(a->otlp, path, uid) < 0)
		tl_warn("OTLP: %s: not exported: out of memory", path);
}

/* What became of a document: sent (or never sendable) is marked so beside
 * it; one not sent waits for the next start. */
static void otlp_document_done(void *ud, const char *uid, enum tl_otlp_doc_outcome o)
{
	struct agent *a = ud;

	if (a->timelines && (o == TL_OTLP_DOC_SENT || o == TL_OTLP_DOC_BAD))
		tl_timelines_exported(a->timelines, uid);
}

static int otlp_backlog_one(void *ud, const struct tl_closed_info *info)
{
	otlp_document_closed(ud, info->uid, info->path);
	return 0;
}

/* A start step: the documents that still wait for the export. */
static int start_otlp_backlog(struct agent *a)
{
	int n;

	if (!a->otlp || !a->timelines)
		return 0;
	n = tl_timelines_unexported(a->timelines, OTLP_BACKLOG_MAX, otlp_backlog_one, a);
	if (n < 0)
		tl_warn("OTLP: documents not exported before this start: %s", strerror(-n));
	else if (n > 0)
		tl_info("OTLP: exporting %d document%s closed before this start and not exported%s", n,
			n == 1 ? "" : "s",
			n == OTLP_BACKLOG_MAX ? " (the newest; termline-otlp send for older ones)" : "");
	return 0;
}

/* A start step (below): 0, or exit status 1. */
static int start_otlp(struct agent *a)
{
	const struct tl_otlp_config *c = &a->opts.otlp;
	struct tl_otlp_exporter_opts xo = {
		.report = otlp_report,
		.document_done = otlp_document_done,
		.ud = a,
	};
	struct tl_otlp_stats zero = { 0 };
	int r;

	/* listed without the export too: the dashboard's panels read 0 */
	tl_otlp_metrics_publish(&zero);
	if (!c->enabled)
		return 0;
	/* documents are encoded by termline-otlp, off the loop */
	a->otlp_helper = tl_otlp_helper_find();
	if (!a->otlp_helper)
		tl_warn("OTLP: termline-otlp not found next to termlined: documents are encoded on the loop");
	xo.helper = a->otlp_helper;
	r = tl_otlp_exporter_new(a->loop, c, &xo, &a->otlp);
	if (r < 0) {
		tl_error("OTLP export: %s", strerror(-r));
		return 1;
	}
	tl_info("OTLP export: %s to %s%s%s", tl_otlp_protocol_name(c->protocol), c->traces_url,
		c->logs ? " and " : "", c->logs ? c->logs_url : "");
	return 0;
}

/* A series per kind and source, registered as it is first seen: counting
 * is on every event's path. */
static void count_event(struct agent *a, const struct tl_event *ev)
{
	struct tl_metric **m = &a->m.events[ev->kind][ev->source];

	if (!*m) {
		char labels[128];

		snprintf(labels, sizeof(labels), "type=\"%s\",source=\"%s\"", tl_kind_name(ev->kind),
			 tl_source_name(ev->source));
		*m = tl_metric_new("termline_events_total", labels, TL_METRIC_COUNTER,
				   "Events recorded, by type and source.");
	}
	tl_metric_inc(*m, 1);
}

static const struct tl_attr_tombstone *find_tombstone(const struct agent *a, uint64_t cgroup_id)
{
	return a->attr ? tl_attr_find_tombstone(a->attr, cgroup_id, tl_now_real_ns()) : NULL;
}

static void attribute(struct agent *a, struct tl_event *ev)
{
	if (a->attr)
		tl_attr_event(a->attr, ev, TL_ATTR_NOW);
}

static const char *meta_pod_ip(const struct tl_pod_meta *meta)
{
	return meta && meta->ip[0] ? meta->ip : NULL;
}

static void schedule_ip_untrack(struct agent *a, const char *uid)
{
	struct tl_pod_meta *meta = tl_kube_pod_meta(a->kube, uid);
	const char *ip = meta_pod_ip(meta);

	/* Resets can still land during the linger; a few seconds more for
	 * the ring's drain and the API's own delay. */
	if (ip && a->bpf && a->attr)
		tl_attr_ip_expire_at(a->attr, ip, uid,
				     tl_now_real_ns() + ((int64_t)a->opts.linger_s + 5) * 1000000000LL);
	tl_pod_meta_unref(meta);
}

static const char *attr_pod_by_ip(void *ud, const char *ip)
{
	struct agent *a = ud;

	return a->kube ? tl_kube_pod_by_ip(a->kube, ip) : NULL;
}

static const char *attr_container_name(void *ud, const char *bare_id)
{
	struct agent *a = ud;
	const char *uid = NULL, *name = NULL;

	if (!a->kube || tl_kube_lookup_container(a->kube, bare_id, &uid, &name) < 0)
		return NULL;
	return name;
}

static void attr_untrack_ip(void *ud, const char *ip)
{
	struct agent *a = ud;

	if (a->bpf)
		tl_bpf_untrack_ip(a->bpf, ip);
}

/* A timeline starts to close: the capture hands over what it still holds of
 * the Pod (its requests waiting for the proxy's log record, log lines not
 * read yet), so that they are in the document rather than counted late. */
static void timeline_closing(void *ud, const char *uid)
{
	struct agent *a = ud;

	tl_capture_flush_pod(a->capture, uid);
}

/* A timeline's document is on disk (the store's closed hook): what
 * follows a closed timeline. */
static void timeline_closed(void *ud, const struct tl_closed_info *info)
{
	struct agent *a = ud;
	struct tl_termination term = {
		.ns = info->ns,
		.owner_kind = info->owner_kind,
		.owner_name = info->owner_name,
		.deletion_ns = info->deletion_ns,
		.complete = info->complete,
		.summary = info->summary,
	};

	tl_term_metrics_closed(a->term_metrics, &term);
	otlp_document_closed(a, info->uid, info->path);
}

static void sink_emit(void *userdata, struct tl_event *ev)
{
	struct agent *a = userdata;

	attribute(a, ev);
	tl_capture_observe(a->capture, ev);
	count_event(a, ev);
	if (ev->kind == TL_KIND_DRAIN_WAIT_ENDED) {
		int64_t held_ms;

		if (tl_event_get_i(ev, TL_F_DRAIN_HELD_MS, &held_ms))
			tl_term_metrics_drain_wait(a->term_metrics, held_ms);
	}
	if (!ev->pod_uid[0])
		tl_metric_inc(a->m.unattributed, 1);
	if (a->emit_out) {
		/* The document's encoder, with the ids (docs/timeline-format.md). */
		tl_buf_reset(&a->emit_buf);
		tl_event_append_json(ev, true, &a->emit_buf);
		tl_buf_addc(&a->emit_buf, '\n');
		if (!a->emit_buf.err) {
			fwrite(a->emit_buf.p, 1, a->emit_buf.len, a->emit_out);
			fflush(a->emit_out);
		}
	}
	if (a->kube && ev->pod_uid[0] && ev->kind == TL_KIND_POD_DELETED)
		schedule_ip_untrack(a, ev->pod_uid);
	tl_drain_agent_observe(a->drain, ev);
	if (a->timelines && ev->pod_uid[0]) {
		int r = tl_timelines_add(a->timelines, ev);

		if (r < 0)
			tl_debug("timeline: event %s for pod %s not recorded: %s", ev->type, ev->pod_uid,
				 strerror(-r));
	}
	tl_event_clear(ev);
}

static void on_cgroup_added(void *userdata, const struct tl_cgroup_info *info)
{
	struct agent *a = userdata;
	int r;

	/* Cgroups found at start come to the capture once it exists (as Pods
	 * already running); these are new. */
	tl_capture_cgroup_added(a->capture, info->cgroup_id, info->parsed.pod_uid,
				info->parsed.container_id, true);
	if (!a->bpf)
		return;
	r = tl_bpf_track_cgroup(a->bpf, info->cgroup_id);
	if (r < 0)
		tl_warn("cgroup %s: cannot track: %s", info->path, strerror(-r));
	else
		tl_debug("tracking cgroup %llu %s", (unsigned long long)info->cgroup_id, info->path);
}

static int register_cgroup(void *userdata, const struct tl_cgroup_info *info)
{
	struct agent *a = userdata;

	tl_capture_cgroup_added(a->capture, info->cgroup_id, info->parsed.pod_uid,
				info->parsed.container_id, false);
	return 0;
}

static int pod_has_leaf(void *userdata, const struct tl_cgroup_info *info)
{
	const char *uid = userdata;

	return (info->parsed.kind == TL_CGROUP_CONTAINER || info->parsed.kind == TL_CGROUP_SANDBOX) &&
	       strcmp(info->parsed.pod_uid, uid) == 0;
}

static bool pod_known(void *ud, const char *uid);

static bool pod_has_cgroups(struct agent *a, const char *uid)
{
	return tl_cgroup_map_foreach(a->cgroups, pod_has_leaf, (void *)uid) != 0;
}

/* Whether some source still vouches for the Pod of uid: its cgroups, its
 * access-log directory, the API. The store does not close such a Pod's
 * timeline for being idle (docs/hostile-peers.md). */
static bool pod_vouched(void *ud, const char *uid)
{
	struct agent *a = ud;

	return pod_has_cgroups(a, uid) || tl_capture_has_pod_logs(a->capture, uid) ||
	       (a->kube && pod_known(a, uid));
}

/* The Pod's log directory went away. Its timeline ends unless its cgroups
 * or the API still vouch for it (their own ends close it then). */
static void on_logs_gone(void *ud, const char *uid)
{
	struct agent *a = ud;

	if (!a->timelines || pod_has_cgroups(a, uid) ||
	    (a->kube && (!tl_kube_synced(a->kube) || pod_known(a, uid))))
		return;
	if (tl_timelines_end(a->timelines, uid, TL_CLOSE_LOGS_REMOVED) > 0)
		tl_debug("pod %s: log directory gone: timeline closes", uid);
}

/* A Pod LIST completed: the timelines of Pods it does not hold close (the
 * Pods deleted while the agent was down; cgroups or log directories of
 * Pods the API never reported). */
static void on_pods_listed(void *ud, int64_t started_ns)
{
	struct agent *a = ud;
	int n;

	if (!a->timelines)
		return;
	n = tl_timelines_close_missing(a->timelines, pod_known, a, started_ns, TL_CLOSE_UNKNOWN_TO_API);
	if (n > 0)
		tl_info("%d timelines of Pods the API does not report close", n);
}

static void on_cgroup_removed(void *userdata, const struct tl_cgroup_info *info)
{
	struct agent *a = userdata;
	int64_t removed_ns = tl_now_real_ns();

	if (a->attr)
		tl_attr_cgroup_removed(a->attr, info, removed_ns);
	tl_capture_drain(a->capture);
	tl_capture_cgroup_removed(a->capture, info->cgroup_id);
	if (a->bpf) {
		/* Whatever the container left in the ring is still attributable
		 * now; drain it before the cgroup is forgotten. */
		tl_bpf_drain(a->bpf);
		tl_bpf_untrack_cgroup(a->bpf, info->cgroup_id);
	}
	/* Without the API server nothing says a Pod is gone; the removal of
	 * its last container cgroup (the runtime removes them once every
	 * process has exited) is the closest fact. */
	if (a->opts.no_api && info->parsed.pod_uid[0] && !info->parsed.nested &&
	    !tl_cgroup_map_foreach(a->cgroups, pod_has_leaf, (void *)info->parsed.pod_uid)) {
		struct tl_event ev;

		if (tl_event_init_kind(&ev, TL_KIND_POD_CGROUPS_REMOVED, TL_SRC_KERNEL, removed_ns) == 0) {
			snprintf(ev.pod_uid, sizeof(ev.pod_uid), "%s", info->parsed.pod_uid);
			tl_event_set_s(&ev, TL_F_CGREMOVED_CGROUP, info->path, strlen(info->path));
			sink_emit(a, &ev);
		}
	}
	/* With the API, a Pod it never reported (a kubelet-style cgroup of no
	 * Pod) has no pod.deleted to come: its last cgroup's removal ends it. */
	if (a->kube && a->timelines && info->parsed.pod_uid[0] && !info->parsed.nested &&
	    tl_kube_synced(a->kube) && !pod_known(a, info->parsed.pod_uid) &&
	    !pod_has_cgroups(a, info->parsed.pod_uid) &&
	    tl_timelines_end(a->timelines, info->parsed.pod_uid, TL_CLOSE_CGROUPS_REMOVED) > 0)
		tl_debug("pod %s: cgroups gone, unknown to the API: timeline closes",
			 info->parsed.pod_uid);
}

static void on_pod_changed(void *userdata, const char *uid)
{
	struct agent *a = userdata;
	struct tl_pod_meta *shared, *meta;

	if (!a->timelines || !a->kube)
		return;
	shared = tl_kube_pod_meta(a->kube, uid);
	if (!shared)
		return;
	/* The pause container's leaf looks like any other. */
	if (a->attr && tl_attr_mark_sandbox(a->attr, uid, shared) > 0)
		tl_debug("pod %s: sandbox container marked", uid);
	/* The API only knows container IDs; the cgroup map knows their
	 * cgroups. The model's metadata is shared: a copy gets them. */
	meta = tl_pod_meta_dup(shared);
	tl_pod_meta_unref(shared);
	if (!meta)
		return;
	for (uint32_t i = 0; i < meta->n_containers; i++) {
		struct tl_pod_container *c = &meta->containers[i];
		const struct tl_cgroup_info *info;

		if (!c->container_id[0])
			continue;
		info = tl_cgroup_map_lookup_container(a->cgroups, c->container_id);
		if (info)
			c->cgroup_id = info->cgroup_id;
	}
	/* Resets of refused connections carry only addresses: let the kernel
	 * keep those that involve a Pod IP of this node. */
	const char *ip = meta_pod_ip(meta);

	if (a->bpf && ip) {
		int r = tl_bpf_track_ip(a->bpf, ip);

		if (r < 0) {
			tl_metric_inc(a->m.ip_track_errors, 1);
			tl_debug("pod %s: cannot track IP %s: %s", uid, ip, strerror(-r));
		}
	}
	tl_timelines_set_pod_meta(a->timelines, uid, meta);
	tl_pod_meta_unref(meta);
}

static void on_clock_timer(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *ud)
{
	struct agent *a = ud;
	int r = tl_clock_sample(&a->clock);

	if (r < 0)
		tl_warn("clock: cannot sample: %s", strerror(-r));
}

static bool pod_known(void *ud, const char *uid)
{
	struct agent *a = ud;
	struct tl_pod_meta *meta = tl_kube_pod_meta(a->kube, uid);

	tl_pod_meta_unref(meta);
	return meta != NULL;
}

/* The drained gate's facts and questions (docs/drain.md). */
static void drain_conn_seen(void *ud, uint64_t cgroup_id, uint64_t count, int64_t last_ns)
{
	struct agent *a = ud;
	const struct tl_cgroup_info *info = tl_cgroup_map_lookup(a->cgroups, cgroup_id);
	const struct tl_attr_tombstone *t = info ? NULL : find_tombstone(a, cgroup_id);
	const char *uid = info ? info->parsed.pod_uid : t ? t->pod_uid : NULL;

	if (uid && uid[0])
		tl_drain_agent_connection(a->drain, uid, count, last_ns);
}

static void drain_poll(void *ud)
{
	struct agent *a = ud;

	/* The requests the Pod received up to now, not up to the HTTP
	 * ring's last timed drain: the gate's "quiet since" depends on them. */
	tl_capture_drain(a->capture);
	if (a->drain_conn && tl_drain_conn_poll(a->drain_conn, drain_conn_seen, a) < 0)
		tl_metric_inc(a->m.conn_poll_errors, 1);
}

static bool drain_synced(void *ud)
{
	struct agent *a = ud;

	return !a->kube || tl_kube_synced(a->kube);
}

/* A wait for a Pod whose endpoints the gate never saw change (the first
 * LIST after a restart reports none): read the slices held now. */
struct drain_seed {
	struct agent *a;
	const char *uid;
};

static void drain_seed_endpoint(void *ud, const char *slice, const char *service, bool ready,
				bool serving, bool terminating)
{
	struct drain_seed *s = ud;

	tl_drain_agent_endpoint(s->a->drain, s->uid, slice, service, ready, serving, terminating,
				tl_now_real_ns());
}

static void drain_seed(void *ud, const char *uid)
{
	struct agent *a = ud;
	struct drain_seed s = { .a = a, .uid = uid };

	if (a->kube)
		tl_kube_foreach_endpoint(a->kube, uid, drain_seed_endpoint, &s);
}

/* Without the API nothing says a Pod is being deleted: every Pod is
 * unknown (404), and termline-wait serves its fallback sleep. */
static bool drain_pod_known(void *ud, const char *uid)
{
	struct agent *a = ud;

	return a->kube && pod_known(a, uid);
}

static void on_housekeeping(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *ud)
{
	struct agent *a = ud;
	uint64_t dropped;

	/* The API client does not log (it is a library); say each new error
	 * once so an operator sees 401s and relists without --log-level debug. */
	if (a->kube) {
		const char *e = tl_kube_last_error(a->kube);

		if (e && e[0] && strcmp(e, a->api_error) != 0) {
			tl_warn("api: %s", e);
			snprintf(a->api_error, sizeof(a->api_error), "%s", e);
		}
		if (a->bpf && a->attr)
			tl_attr_ip_expire(a->attr, tl_now_real_ns());
	}

	if (!a->bpf)
		return;
	dropped = tl_bpf_dropped_total(a->bpf) + tl_capture_dropped(a->capture);
	if (dropped > a->dropped_seen) {
		tl_warn("ring buffer full: %llu kernel events lost; open timelines marked incomplete",
			(unsigned long long)(dropped - a->dropped_seen));
		if (a->timelines)
			tl_timelines_note_kernel_loss(a->timelines, dropped - a->dropped_seen);
		a->dropped_seen = dropped;
	}
}

static int on_signal(struct tl_loop *loop, int fd, uint32_t events _unused_, void *ud _unused_)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	tl_info("received %s, detaching", strsignal((int)si.ssi_signo));
	tl_loop_quit(loop, 0);
	return 0;
}

static bool agent_ready(void *ud)
{
	struct agent *a = ud;

	return a->bpf_ready && (!a->kube || tl_kube_synced(a->kube));
}

static int setup_signals(struct agent *a)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
		return -errno;
	a->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (a->sigfd < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	return tl_loop_add_io(a->loop, a->sigfd, EPOLLIN, on_signal, a);
}

/* ---- start: a list of steps ----
 *
 * Each step starts one part of the agent and returns 0, or the exit status
 * (2: bad input the user fixes, 1: a runtime failure) with its error
 * logged. The steps run in order; agent_stop() frees whatever the steps
 * before a failure made. */

static int start_metrics(struct agent *a)
{
	int r;

	/* listed from the start; its series come with the first events */
	tl_metric_describe("termline_events_total", TL_METRIC_COUNTER,
			   "Events recorded, by type and source.");
	a->m.unattributed = tl_metric_new("termline_events_unattributed_total", NULL,
					  TL_METRIC_COUNTER,
					  "Events that could not be attributed to a Pod.");
	a->m.ip_track_errors = tl_metric_new("termline_pod_ip_track_errors_total", NULL,
					     TL_METRIC_COUNTER,
					     "Pod IPs the kernel programs could not be told about.");
	a->m.conn_poll_errors = tl_metric_new("termline_drain_conn_poll_errors_total", NULL,
					      TL_METRIC_COUNTER,
					      "Failed reads of the kernel's connection counters (drained gate).");
	r = tl_term_metrics_new(a->opts.metrics_max_workloads, &a->term_metrics);
	if (r < 0) {
		tl_error("metrics: %s", strerror(-r));
		return 1;
	}
	return 0;
}

static int start_clock(struct agent *a)
{
	struct utsname uts;
	int r;

	if (uname(&uts) == 0)
		snprintf(a->kernel, sizeof(a->kernel), "%s", uts.release);
	r = tl_clock_sample(&a->clock);
	if (r < 0) {
		tl_error("clock: %s", strerror(-r));
		return 2;
	}
	return 0;
}

static int start_loop(struct agent *a)
{
	int r = tl_loop_new(&a->loop);

	if (r == 0)
		r = setup_signals(a);
	if (r < 0) {
		tl_error("event loop: %s", strerror(-r));
		return 1;
	}
	return 0;
}

static int start_emit_events(struct agent *a)
{
	if (!a->opts.emit_events)
		return 0;
	if (strcmp(a->opts.emit_events, "-") == 0) {
		a->emit_out = stdout;
		return 0;
	}
	a->emit_out = fopen(a->opts.emit_events, "ae");
	if (!a->emit_out) {
		tl_error("--emit-events %s: %s", a->opts.emit_events, strerror(errno));
		return 2;
	}
	return 0;
}

/* The API client before BPF: a kubeconfig error is the user's to fix and
 * must not wait behind BPF loading. */
static int start_api(struct agent *a)
{
	struct tl_kube_config kc = { .kubeconfig = a->opts.kubeconfig, .node = a->opts.node };
	struct tl_kube_callbacks cb = { .pod_changed = on_pod_changed,
					.pods_listed = on_pods_listed,
					.userdata = a };
	struct tl_emitter emit = { .emit = sink_emit, .userdata = a };
	char err[512] = "";
	int r;

	if (a->opts.no_api)
		return 0;
	if (!a->opts.node || !a->opts.node[0]) {
		tl_error("no node name: set --node or $NODE_NAME (or run with --no-api)");
		return 2;
	}
	r = tl_kube_new(&kc, a->loop, &emit, &a->kube, err, sizeof(err));
	if (r < 0) {
		tl_error("%s", err[0] ? err : strerror(-r));
		return 2;
	}
	tl_kube_set_callbacks(a->kube, &cb);
	return 0;
}

static int start_bpf(struct agent *a)
{
	struct tl_bpf_config bc = {
		.ringbuf_bytes = a->opts.ringbuf_kib * 1024u,
		.signal_mask = a->opts.signal_mask,
		.clock = &a->clock,
	};
	struct tl_emitter emit = { .emit = sink_emit, .userdata = a };
	char err[512] = "";
	int r;

	r = tl_bpf_new(&bc, &a->bpf, err, sizeof(err));
	if (r < 0) {
		tl_error("%s", err[0] ? err : strerror(-r));
		return 2;
	}
	r = tl_bpf_attach_loop(a->bpf, a->loop, &emit);
	if (r < 0) {
		tl_error("ring buffer: %s", strerror(-r));
		return 2;
	}
	for (const char *const *p = tl_bpf_probe_names(a->bpf); p && *p; p++)
		tl_info("probe attached: %s", *p);
	return 0;
}

static int start_cgroups(struct agent *a)
{
	struct tl_cgroup_map_callbacks cb = {
		.added = on_cgroup_added,
		.removed = on_cgroup_removed,
		.userdata = a,
	};
	struct tl_attr_ops ops = {
		.pod_by_ip = attr_pod_by_ip,
		.container_name = attr_container_name,
		.untrack_ip = attr_untrack_ip,
		.ud = a,
	};
	int r;

	r = tl_cgroup_map_new(a->opts.cgroup_root, &cb, &a->cgroups);
	if (r < 0) {
		tl_error("cgroup2: %s%s%s", a->opts.cgroup_root ? a->opts.cgroup_root : "",
			 a->opts.cgroup_root ? ": " : "",
			 r == -ENOENT ? "no cgroup2 mount found in /proc/self/mountinfo" : strerror(-r));
		return 2;
	}
	r = tl_attr_new(a->cgroups, &ops, &a->attr);
	if (r < 0) {
		tl_error("attribution: %s", strerror(-r));
		return 1;
	}
	r = tl_cgroup_map_attach(a->cgroups, a->loop);
	if (r < 0) {
		tl_error("cgroup2 %s: %s", tl_cgroup_map_root(a->cgroups), strerror(-r));
		return 2;
	}
	tl_info("cgroup2 root %s", tl_cgroup_map_root(a->cgroups));
	a->bpf_ready = true;
	return 0;
}

static int start_timelines(struct agent *a)
{
	struct tl_timelines_config tc = {
		.state_dir = a->opts.state_dir,
		.linger_s = a->opts.linger_s,
		.max_events = a->opts.max_events_per_timeline,
		.max_open = a->opts.max_open_timelines,
		.idle_close_s = a->opts.timeline_idle_close_s,
		.vouched = pod_vouched,
		.vouched_ud = a,
		.retention_bytes = a->opts.retention_bytes,
		.retention_hours = a->opts.retention_hours,
		.fsync_ms = a->opts.journal_fsync_ms,
		.recorder = {
			.agent_version = TERMLINE_VERSION,
			.node = a->opts.node ? a->opts.node : "",
			.kernel = a->kernel,
			.config_digest = a->opts.config_digest,
			.probes = tl_bpf_probe_names(a->bpf),
			.recording_since_ns = tl_now_real_ns(),
		},
		.before_close = timeline_closing,
		.before_close_ud = a,
		.closed = timeline_closed,
		.closed_ud = a,
		.export_marks = a->otlp != NULL,
	};
	int r = tl_timelines_new(&tc, a->loop, &a->timelines);

	if (r < 0) {
		tl_error("state dir %s: %s", a->opts.state_dir, strerror(-r));
		return 2;
	}
	return 0;
}

static int start_capture(struct agent *a)
{
	struct tl_capture_config cc = {
		.pod_logs_dir = a->opts.pod_logs_dir,
		.log_container = a->opts.access_log_container,
		.request_id_headers = (const char *const *)a->opts.request_id_headers,
		.n_request_id_headers = a->opts.n_request_id_headers,
		.mode = a->opts.http_capture,
		.prefix_bytes = a->opts.http_prefix_bytes,
		.linger_s = a->opts.linger_s,
		.clock = &a->clock,
		.logs_gone = on_logs_gone,
		.logs_gone_ud = a,
	};
	struct tl_emitter emit = { .emit = sink_emit, .userdata = a };
	char err[512] = "";
	int r;

	r = tl_capture_new(&cc, a->loop, &emit, &a->capture, err, sizeof(err));
	if (r < 0) {
		tl_error("HTTP capture (pod logs %s): %s", a->opts.pod_logs_dir, strerror(-r));
		return 2;
	}
	if (a->opts.http_capture != TL_HTTP_CAPTURE_OFF && !tl_capture_sockets(a->capture))
		tl_warn("%s; requests come from access logs only", err);
	tl_cgroup_map_foreach(a->cgroups, register_cgroup, a);
	/* Without the API nothing else would say that a Pod replayed from the
	 * journal ended while the agent was down: neither its cgroups nor its
	 * log directory are left (with the API, the first LIST says). */
	if (a->opts.no_api && a->timelines) {
		int n = tl_timelines_close_missing(a->timelines, pod_vouched, a, tl_now_real_ns(),
						   TL_CLOSE_CGROUPS_REMOVED);

		if (n > 0)
			tl_info("%d timelines of Pods gone while the agent was stopped close", n);
	}
	return 0;
}

static int start_drain(struct agent *a)
{
	struct tl_drain_agent_config dc = {
		.synced = drain_synced,
		.pod_known = drain_pod_known,
		.poll = drain_poll,
		.seed = drain_seed,
		.ud = a,
		.emit = { .emit = sink_emit, .userdata = a },
	};
	int r;

	/* the connection counts come from the TCP program (bpf/net.bpf.c) */
	if (!a->bpf)
		tl_warn("no kernel programs: the drained gate sees no connections");
	else if ((r = tl_drain_conn_new(tl_bpf_accepted_map_fd(a->bpf), &a->clock, &a->drain_conn)) < 0)
		tl_warn("drained gate: connection counts: %s: the gate sees no connections",
			strerror(-r));
	r = tl_drain_agent_new(&dc, a->loop, &a->drain);
	if (r < 0) {
		tl_error("drained gate: %s", strerror(-r));
		return 1;
	}
	return 0;
}

static int start_http(struct agent *a)
{
	struct tl_http_config hc = {
		.listen = a->opts.listen,
		.ready = agent_ready,
		.ud = a,
		.drain = a->drain,
	};
	char err[512] = "";
	int r;

	if (!a->opts.listen || !a->opts.listen[0] || strcmp(a->opts.listen, "off") == 0)
		return 0;
	r = tl_http_new(&hc, a->loop, a->timelines, &a->http, err, sizeof(err));
	if (r < 0) {
		tl_error("%s", err[0] ? err : strerror(-r));
		return 2;
	}
	tl_info("serving HTTP on %s (port %u)", a->opts.listen, tl_http_port(a->http));
	return 0;
}

static int start_timers(struct agent *a)
{
	int r = tl_loop_add_timer(a->loop, CLOCK_RESAMPLE_MS, CLOCK_RESAMPLE_MS, on_clock_timer, a,
				  &a->clock_timer);

	if (r >= 0)
		r = tl_loop_add_timer(a->loop, HOUSEKEEPING_MS, HOUSEKEEPING_MS, on_housekeeping, a,
				      &a->housekeeping_timer);
	if (r < 0) {
		tl_error("timers: %s", strerror(-r));
		return 1;
	}
	return 0;
}

static int (*const start_steps[])(struct agent *a) = {
	start_metrics, start_clock,  start_loop,    start_emit_events, start_api,  start_bpf,
	start_cgroups, start_otlp,    start_timelines,   start_otlp_backlog, start_capture,
	start_drain,   start_http,    start_timers,
};

static int agent_start(struct agent *a)
{
	for (size_t i = 0; i < sizeof(start_steps) / sizeof(start_steps[0]); i++) {
		int r = start_steps[i](a);

		if (r)
			return r;
	}
	return 0;
}

/* Once the programs are attached, tracefs is mounted and the port is bound,
 * the agent needs only CAP_BPF (map updates as cgroups come and go: before
 * Linux 6.5 every bpf() command checks it when unprivileged BPF is off) and
 * CAP_DAC_READ_SEARCH (kubelet's pod log directories). Everything else —
 * CAP_PERFMON, CAP_SYS_ADMIN, CAP_DAC_OVERRIDE, ... — is dropped for good,
 * from the effective, permitted, inheritable, ambient and bounding sets. */
static int drop_capabilities(void)
{
	cap_value_t keep[2] = { CAP_BPF, CAP_DAC_READ_SEARCH };
	cap_t caps;
	int r = 0;

	/* Kernels before 5.8 have no CAP_BPF: there BPF needs CAP_SYS_ADMIN. */
	if (!CAP_IS_SUPPORTED(CAP_BPF))
		keep[0] = CAP_SYS_ADMIN;
	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		if (c == keep[0] || c == keep[1] || !CAP_IS_SUPPORTED(c))
			continue;
		/* Needs CAP_SETPCAP, which a DaemonSet does not grant; its
		 * bounding set is already the runtime's. */
		if (cap_drop_bound(c) < 0 && errno != EPERM)
			return -errno;
	}
	if (cap_reset_ambient() < 0 && errno != EINVAL)
		return -errno;
	caps = cap_init();
	if (!caps)
		return -errno;
	if (cap_set_flag(caps, CAP_PERMITTED, 2, keep, CAP_SET) < 0 ||
	    cap_set_flag(caps, CAP_EFFECTIVE, 2, keep, CAP_SET) < 0)
		r = -errno;
	/* A capability the process never had cannot be kept: retry with what
	 * is actually there. */
	if (r == 0 && cap_set_proc(caps) < 0) {
		cap_t cur = cap_get_proc();
		cap_flag_value_t v;

		cap_clear(caps);
		for (int i = 0; cur && i < 2; i++) {
			if (cap_get_flag(cur, keep[i], CAP_PERMITTED, &v) == 0 && v == CAP_SET) {
				cap_set_flag(caps, CAP_PERMITTED, 1, &keep[i], CAP_SET);
				cap_set_flag(caps, CAP_EFFECTIVE, 1, &keep[i], CAP_SET);
			}
		}
		cap_free(cur);
		if (cap_set_proc(caps) < 0)
			r = -errno;
	}
	cap_free(caps);
	if (r == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		r = -errno;
	return r;
}

static void agent_stop(struct agent *a)
{
	/* Drain what the kernel already recorded before detaching, so that a
	 * clean stop loses nothing. */
	if (a->bpf)
		tl_bpf_drain(a->bpf);
	if (a->capture)
		tl_capture_poll_logs(a->capture);
	tl_capture_free(a->capture);
	tl_http_free(a->http);
	tl_drain_agent_free(a->drain);
	tl_drain_conn_free(a->drain_conn);
	if (a->timelines)
		tl_timelines_flush(a->timelines);
	tl_timelines_free(a->timelines);
	a->timelines = NULL; /* the exporter's last reports find no store */
	tl_otlp_exporter_free(a->otlp);
	free(a->otlp_helper);
	tl_term_metrics_free(a->term_metrics);
	tl_kube_free(a->kube);
	tl_cgroup_map_free(a->cgroups);
	tl_attr_free(a->attr);
	tl_bpf_free(a->bpf);
	tl_timer_free(a->clock_timer);
	tl_timer_free(a->housekeeping_timer);
	if (a->sigfd >= 0) {
		if (a->loop)
			tl_loop_del_io(a->loop, a->sigfd);
		close(a->sigfd);
	}
	tl_loop_free(a->loop);
	if (a->emit_out && a->emit_out != stdout)
		fclose(a->emit_out);
	tl_buf_free(&a->emit_buf);
	tl_options_free(&a->opts);
}

int main(int argc, char **argv)
{
	struct agent a = { .sigfd = -1 };
	char err[512] = "";
	int r;

	tl_log_set_prog("termlined");
	r = tl_options_parse(&a.opts, argc, argv, err, sizeof(err));
	if (r == 1)
		return 0;
	if (r < 0) {
		/* Flag errors already name the program; file errors name the file. */
		fprintf(stderr, "%s%s\n", strncmp(err, "termlined: ", 11) == 0 ? "" : "termlined: ",
			err[0] ? err : strerror(-r));
		return 2;
	}
	tl_log_set_level(a.opts.log_level);
	/* The access-log formats are compiled once, before anything runs. */
	r = tl_access_configure((const char *const *)a.opts.access_log_formats,
				a.opts.n_access_log_formats, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "termlined: --access-log-format: %s\n",
			r == -EINVAL ? err : strerror(-r));
		tl_options_free(&a.opts);
		return 2;
	}
	r = agent_start(&a);
	if (r == 0) {
		int c = drop_capabilities();

		if (c < 0)
			tl_warn("cannot drop capabilities: %s", strerror(-c));
		else
			tl_debug("capabilities reduced to BPF and DAC_READ_SEARCH");
		tl_info("termlined %s running on node %s", TERMLINE_VERSION,
			a.opts.node && a.opts.node[0] ? a.opts.node : "(unnamed)");
		r = tl_loop_run(a.loop);
		if (r < 0) {
			tl_error("event loop: %s", strerror(-r));
			r = 1;
		}
	}
	agent_stop(&a);
	return r;
}
