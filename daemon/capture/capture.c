/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "capture.h"
#include "clock.h"
#include "h2-frame.h"
#include "http-bpf.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"
#include "term-escape.h"

/* Inbound exchanges of a Pod with an access log wait this long for the
 * proxy's record of the same request (it is written after the response,
 * through the runtime's log pipe), to become one event. */
#define JOIN_WAIT_NS (2LL * 1000000000LL)
#define MAX_HELD 4096
/* --http-capture always, outside a Pod's windows: requests are counted per
 * second per cgroup and direction (http.summary), failed ones (no response,
 * 5xx) kept in full up to this many per second each. */
#define MAX_SUMMARIES 1024
/* always mode: the last requests counted in summaries are also kept (a ring
 * shared by all Pods) so that a deletion request brings the seconds before
 * it back in full (the pre-roll). */
#define PREROLL_MAX 4096
#define PREROLL_NS (5LL * 1000000000LL)
#define FAILED_FULL_PER_S 20
#define MAX_CGROUPS 16384
#define CG_BUCKETS 8192
#define MAX_WINDOWS 4096
#define HOUSEKEEPING_MS 1000
/* Connections without a read or write for this long are forgotten. */
#define CONN_IDLE_NS (300LL * 1000000000LL)
/* A termination window whose Pod never reports deleted (API away). */
#define TERMINATION_MAX_NS (900LL * 1000000000LL)
/* Accepted connections of Pods in a termination window, folded per Pod
 * cgroup, peer address and local port until the next housekeeping tick
 * (tcp.accepted with a count): at most this many at once; past it the
 * table is written out early. */
#define MAX_ACCEPT_FOLDS 1024

struct cg {
	uint64_t id;
	char uid[TL_UID_MAX];
	char container_id[TL_CONTAINER_ID_MAX];
	bool tracked;     /* in the kernel's http_cgroups now */
};

struct window {
	char uid[TL_UID_MAX];
	int64_t until_ns;   /* the window closes then */
	bool terminating;   /* a termination window (start-up otherwise) */
	bool ending;        /* until_ns set from the end of the Pod's timeline */
};

struct held {
	struct tl_http_exchange x;
	char uid[TL_UID_MAX];
	int64_t start_ns, end_ns; /* UTC */
	int64_t held_at;          /* CLOCK_BOOTTIME */
};

struct summary {
	uint64_t cgroup_id;
	enum tl_http_direction dir;
	uint64_t count;
	uint64_t failed;
	uint64_t failed_full;   /* kept in full this second */
	int64_t first_ns;       /* UTC of the first request counted */
};

struct accept_fold {
	uint64_t cgroup_id;
	struct tl_http_peer peer;  /* the first connection's */
	uint64_t count;
	int64_t first_ns, last_ns; /* CLOCK_BOOTTIME */
};

struct preroll {
	struct tl_http_exchange x;
	char uid[TL_UID_MAX];
	int64_t start_ns, end_ns;  /* UTC */
};

struct tl_capture {
	struct tl_emitter emit;
	struct tl_capture_config cfg;
	struct tl_pod_logs *logs;
	struct tl_http_want want;
	struct tl_http_bpf *bpf;
	struct tl_http_tracker *tracker;
	struct tl_timer *timer;
	struct cg *cgs;
	size_t n_cgs;
	int32_t *cg_bucket;       /* hash of cgs by id: chains through cg_next */
	int32_t *cg_next;
	struct summary *sums;
	size_t n_sums;
	struct preroll *pre;      /* ring, next write at pre_next */
	size_t pre_next, n_pre;
	struct held *held;        /* ring, oldest at held_head */
	size_t held_head, n_held;
	struct window *win;
	size_t n_win;
	struct accept_fold *acc;
	size_t n_acc;
	/* Connection numbers (http.request's conn): unique within the run,
	 * so within each timeline. */
	uint32_t next_conn;
	uint64_t log_records;
	uint64_t log_not_access;
	uint64_t attaches;
	bool attach_failed_logged;
	/* termline_http_kernel_requests_total and _dropped_total, counted on
	 * every captured request: their cells are looked up once. */
	int64_t *m_kernel, *m_kernel_dropped;
};

static const char *direction_name(enum tl_http_direction d)
{
	return d == TL_HTTP_DIR_OUTBOUND ? "outbound" : "inbound";
}

/* Fields shared by both sources, set by slot (typed): no text round trip
 * for numbers and times on a path that runs once per request. Every
 * setter's result is checked: a field the model refuses means a malformed
 * event. */
static int set_str(struct tl_event *ev, unsigned slot, const char *v)
{
	return tl_event_set_s(ev, slot, v, strlen(v));
}

static int set_common(struct tl_event *ev, const char *id, const char *method, const char *path,
		      int status, int64_t start_ns, int64_t duration_ms, const char *direction)
{
	int r = 0;

	/* The contract: requestId is null when the request carried none,
	 * which an unset ID field says (event.c). */
	if (id && id[0])
		r = set_str(ev, TL_F_HTTP_REQUEST_ID, id);
	r = r ?: set_str(ev, TL_F_HTTP_METHOD, method);
	r = r ?: set_str(ev, TL_F_HTTP_PATH, path);
	r = r ?: tl_event_set_i(ev, TL_F_HTTP_STATUS, status);
	r = r ?: tl_event_set_i(ev, TL_F_HTTP_START, start_ns);
	r = r ?: tl_event_set_i(ev, TL_F_HTTP_DURATION_MS, duration_ms < 0 ? 0 : duration_ms);
	r = r ?: set_str(ev, TL_F_HTTP_DIRECTION, direction);
	return r;
}

/* An access log's %PROTOCOL% in the names http.request uses ("HTTP/1.1"
 * -> "http/1.1", "HTTP/2" -> "h2", "HTTP/3" -> "h3"); NULL for what is
 * none of them ("-": a TCP record, or no protocol). */
static const char *log_protocol(const char *p)
{
	if (strcasecmp(p, "HTTP/1.1") == 0)
		return "http/1.1";
	if (strcasecmp(p, "HTTP/1.0") == 0)
		return "http/1.0";
	if (strcasecmp(p, "HTTP/2") == 0 || strcasecmp(p, "HTTP/2.0") == 0)
		return "h2";
	if (strcasecmp(p, "HTTP/3") == 0)
		return "h3";
	return NULL;
}

/* "ADDR:PORT" or "[ADDR]:PORT" (what a log's %DOWNSTREAM_REMOTE_ADDRESS%
 * holds) into family, address and port; false for anything else (an
 * address without a port is not an endpoint). */
static bool parse_endpoint(const char *s, uint16_t *family, uint8_t addr[16], uint16_t *port)
{
	char buf[64];
	const char *colon, *a = s;
	size_t n;
	unsigned long v;
	char *end;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return false;
		a = s + 1;
		n = (size_t)(close - a);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || memchr(s, ':', (size_t)(colon - s)))
			return false;
		n = (size_t)(colon - s);
	}
	if (n == 0 || n >= sizeof(buf) || !colon[1])
		return false;
	memcpy(buf, a, n);
	buf[n] = '\0';
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (errno || *end || v > 65535)
		return false;
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, buf, addr) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, buf, addr) == 1)
		*family = AF_INET6;
	else
		return false;
	*port = (uint16_t)v;
	return true;
}

/* The peer, protocol and gRPC status a log record carries (each only when
 * its format has it). */
static int set_log_extras(struct tl_event *ev, const struct tl_access_record *rec)
{
	const char *proto = log_protocol(rec->protocol);
	uint8_t addr[16];
	uint16_t family, port;
	int r = 0;

	if (rec->peer[0] && parse_endpoint(rec->peer, &family, addr, &port))
		r = tl_event_set_addr(ev, TL_F_HTTP_PEER, family, addr, port);
	if (r == 0 && proto)
		r = set_str(ev, TL_F_HTTP_PROTOCOL, proto);
	if (r == 0 && rec->grpc_status >= 0)
		r = tl_event_set_i(ev, TL_F_HTTP_GRPC_STATUS, rec->grpc_status);
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

	r = tl_event_init_kind(ev, TL_KIND_HTTP_REQUEST, TL_SRC_LOG, start);
	if (r < 0)
		return r;
	tl_copy_str(ev->pod_uid, sizeof(ev->pod_uid), src->uid);
	tl_copy_str(ev->container, sizeof(ev->container), src->container);
	r = set_common(ev, rec->request_id, rec->method, rec->path, rec->status, start,
		       rec->duration_ms, dir);
	/* The contract writes Envoy's "-" for no flags. */
	r = r ?: set_str(ev, TL_F_HTTP_RESPONSE_FLAGS, rec->flags[0] ? rec->flags : "-");
	r = r ?: set_log_extras(ev, rec);
	if (r < 0)
		tl_event_clear(ev);
	return r;
}

/* The connection the exchange came on: its peer, when it was established
 * (unset when before the capture), its number, and "Connection: close". */
static int set_conn(struct tl_event *ev, const struct tl_http_exchange *x)
{
	int r = 0;

	if (x->peer.family)
		r = tl_event_set_addr(ev, TL_F_HTTP_PEER, x->peer.family, x->peer.addr, x->peer.port);
	if (r == 0 && x->conn_start_ns)
		r = tl_event_set_i(ev, TL_F_HTTP_CONN_START, x->conn_start_ns);
	if (r == 0 && x->conn_seq)
		r = tl_event_set_i(ev, TL_F_HTTP_CONN, x->conn_seq);
	if (r == 0 && x->conn_close)
		r = tl_event_set_i(ev, TL_F_HTTP_CONN_CLOSE, 1);
	return r;
}

/* The protocol, and an HTTP/2 stream's own fields. */
static int set_h2(struct tl_event *ev, const struct tl_http_exchange *x)
{
	int r;

	if (x->protocol != TL_HTTP_PROTO_H2)
		return set_str(ev, TL_F_HTTP_PROTOCOL, "http/1.1");
	r = set_str(ev, TL_F_HTTP_PROTOCOL, "h2");
	r = r ?: tl_event_set_i(ev, TL_F_HTTP_STREAM_ID, x->stream_id);
	if (r == 0 && x->grpc_status >= 0)
		r = tl_event_set_i(ev, TL_F_HTTP_GRPC_STATUS, x->grpc_status);
	if (r == 0 && x->grpc_message[0])
		r = set_str(ev, TL_F_HTTP_GRPC_MESSAGE, x->grpc_message);
	if (r == 0 && x->response_unknown)
		r = tl_event_set_i(ev, TL_F_HTTP_RESPONSE_UNKNOWN, 1);
	if (r == 0 && x->after_goaway)
		r = tl_event_set_i(ev, TL_F_HTTP_AFTER_GOAWAY, 1);
	return r;
}

int tl_capture_kernel_event(const struct tl_http_exchange *x, int64_t start_ns, int64_t end_ns,
			    struct tl_event *ev)
{
	int64_t dur = end_ns > start_ns ? (end_ns - start_ns) / 1000000 : 0;
	int r;

	r = tl_event_init_kind(ev, TL_KIND_HTTP_REQUEST, TL_SRC_KERNEL, start_ns);
	if (r < 0)
		return r;
	ev->cgroup_id = x->cgroup_id;
	r = set_common(ev, x->id, x->method, x->path, x->status, start_ns, dur,
		       direction_name(x->direction));
	if (r == 0 && x->error)
		r = set_str(ev, TL_F_HTTP_ERROR, x->error);
	if (r == 0)
		r = set_conn(ev, x);
	if (r == 0)
		r = set_h2(ev, x);
	if (r < 0)
		tl_event_clear(ev);
	return r;
}

/* Every captured request looks its cgroup up: a hash, not a scan of the
 * node's cgroups. */
static unsigned cg_hash(uint64_t id)
{
	return (unsigned)((id * 0x9E3779B97F4A7C15ULL) >> 51) % CG_BUCKETS;
}

static int32_t cg_index(const struct tl_capture *c, uint64_t id)
{
	for (int32_t i = c->cg_bucket[cg_hash(id)]; i >= 0; i = c->cg_next[i])
		if (c->cgs[i].id == id)
			return i;
	return -1;
}

static void cg_link(struct tl_capture *c, int32_t i)
{
	unsigned h = cg_hash(c->cgs[i].id);

	c->cg_next[i] = c->cg_bucket[h];
	c->cg_bucket[h] = i;
}

static void cg_unlink(struct tl_capture *c, int32_t i)
{
	int32_t *pp = &c->cg_bucket[cg_hash(c->cgs[i].id)];

	while (*pp >= 0 && *pp != i)
		pp = &c->cg_next[*pp];
	if (*pp == i)
		*pp = c->cg_next[i];
}

static const struct cg *find_cg(struct tl_capture *c, uint64_t cgroup_id)
{
	int32_t i = cg_index(c, cgroup_id);

	return i >= 0 ? &c->cgs[i] : NULL;
}

static const char *cgroup_pod(struct tl_capture *c, uint64_t cgroup_id)
{
	const struct cg *g = find_cg(c, cgroup_id);

	return g ? g->uid : NULL;
}

static void emit_kernel(struct tl_capture *c, const struct tl_http_exchange *x, int64_t start,
			int64_t end)
{
	struct tl_event ev;

	if (tl_capture_kernel_event(x, start, end, &ev) < 0) {
		if (c->m_kernel_dropped)
			*c->m_kernel_dropped += 1;
		return;
	}
	if (c->m_kernel)
		*c->m_kernel += 1;
	tl_emit(&c->emit, &ev);
}

/* Held exchanges that waited long enough (or all, at the end) go out alone. */
static void release_held(struct tl_capture *c, int64_t before)
{
	while (c->n_held) {
		struct held *h = &c->held[c->held_head];

		if (h->held_at >= before)
			break;
		c->held_head = (c->held_head + 1) % MAX_HELD;
		c->n_held--;
		if (h->x.id[0] == '\0')
			continue; /* joined already */
		emit_kernel(c, &h->x, h->start_ns, h->end_ns);
	}
}

/* The proxy's record and the proxy's own inbound leg of the same request
 * are one request: the log event takes the socket's timing (nanoseconds,
 * where the log has milliseconds) and cgroup, and says it was seen by both.
 * Of the held inbound exchanges of this Pod with this request ID, the
 * earliest is the proxy's (the app reads the request after the proxy). */
static void join_kernel(struct tl_capture *c, const char *uid, const struct tl_access_record *rec,
			struct tl_event *ev)
{
	struct held *best = NULL;
	const struct cg *g;

	if (!rec->request_id[0] || rec->direction == TL_DIR_OUTBOUND)
		return;
	/* The proxy logs right after it answers; the answer's record may
	 * still sit in the ring (drained every 25 ms): take it first. */
	if (c->bpf)
		tl_http_bpf_drain(c->bpf);
	for (size_t i = 0; i < c->n_held; i++) {
		struct held *h = &c->held[(c->held_head + i) % MAX_HELD];

		if (h->x.id[0] && strcmp(h->x.id, rec->request_id) == 0 && strcmp(h->uid, uid) == 0 &&
		    (!best || h->start_ns < best->start_ns))
			best = h;
	}
	if (!best)
		return;
	ev->time_ns = best->start_ns;
	ev->cgroup_id = best->x.cgroup_id;
	/* The Pod is known from the log's directory, so the sink will not
	 * look at the cgroup: the container id comes from here. */
	g = find_cg(c, best->x.cgroup_id);
	if (g)
		tl_copy_str(ev->container_id, sizeof(ev->container_id), g->container_id);
	if (tl_event_set_i(ev, TL_F_HTTP_START, best->start_ns) < 0 ||
	    tl_event_set_i(ev, TL_F_HTTP_DURATION_MS, (best->end_ns - best->start_ns) / 1000000) < 0 ||
	    tl_event_set_s(ev, TL_F_HTTP_ALSO_SEEN_BY, "kernel", 6) < 0 ||
	    (!ev->v[TL_F_HTTP_PEER].set && set_conn(ev, &best->x) < 0))
		tl_metric_add("termline_http_join_errors_total", NULL, 1);
	/* The socket saw no response (reset, closed): the log's status
	 * stands, the kernel's reason is kept. */
	if (best->x.error)
		tl_event_set_i(ev, TL_F_HTTP_STATUS, rec->status);
	best->x.id[0] = '\0';
	tl_metric_add("termline_http_joined_total", NULL, 1);
}

/* A symlinked Pod or container directory in the logs directory: not
 * followed (pod-logs.h), said once. */
static void on_log_dir_refused(void *ud _unused_, const char *root, const char *rel)
{
	char r[512], d[512];

	tl_term_escape(r, sizeof(r), root, strlen(root));
	tl_term_escape(d, sizeof(d), rel, strlen(rel));
	tl_warn("access logs: %s/%s is a symlink: not followed out of %s", r, d, r);
	tl_metric_add("termline_http_log_dirs_refused_total", NULL, 1);
}

static void on_log_dir_gone(void *ud, const char *uid)
{
	struct tl_capture *c = ud;

	if (c->cfg.logs_gone)
		c->cfg.logs_gone(c->cfg.logs_gone_ud, uid);
}

static void on_log_record(void *ud, const struct tl_pod_log_source *src, int64_t t,
			  const char *text, size_t len, bool cut)
{
	struct tl_capture *c = ud;
	struct tl_access_record rec;
	struct tl_event ev;

	/* A cut record lost its tail: its last fields cannot be trusted. */
	if (cut) {
		tl_access_count_unparsed(TL_ACCESS_UNPARSED_CUT);
		c->log_not_access++;
		return;
	}
	if (tl_access_parse(text, len, &rec) < 0) {
		c->log_not_access++;
		return;
	}
	if (tl_capture_log_event(src, &rec, t, &ev) < 0) {
		tl_metric_add("termline_http_log_records_dropped_total", NULL, 1);
		return;
	}
	join_kernel(c, src->uid, &rec, &ev);
	c->log_records++;
	tl_metric_add("termline_http_log_records_total", NULL, 1);
	tl_emit(&c->emit, &ev);
}

/* ---- sockets ---- */

static void flush_summaries(struct tl_capture *c)
{
	for (size_t i = 0; i < c->n_sums; i++) {
		struct summary *m = &c->sums[i];
		struct tl_event ev;

		if (!m->count)
			continue;
		const char *dir = m->dir == TL_HTTP_DIR_OUTBOUND ? "outbound" : "inbound";

		if (tl_event_init_kind(&ev, TL_KIND_HTTP_SUMMARY, TL_SRC_KERNEL, m->first_ns) < 0)
			continue;
		ev.cgroup_id = m->cgroup_id;
		if (tl_event_set_i(&ev, TL_F_HSUM_INTERVAL_MS, 1000) < 0 ||
		    tl_event_set_i(&ev, TL_F_HSUM_COUNT, (int64_t)m->count) < 0 ||
		    tl_event_set_i(&ev, TL_F_HSUM_FAILED, (int64_t)m->failed) < 0 ||
		    tl_event_set_s(&ev, TL_F_HSUM_DIRECTION, dir, strlen(dir)) < 0) {
			tl_event_clear(&ev);
			continue;
		}
		tl_metric_add("termline_http_requests_summarized_total", NULL, m->count);
		tl_emit(&c->emit, &ev);
	}
	c->n_sums = 0;
}

/* Outside every window in always mode: true when the exchange was counted
 * into a summary instead of being recorded in full. */
static bool summarize(struct tl_capture *c, const struct tl_http_exchange *x, int64_t start)
{
	bool failed = x->status == 0 || x->status >= 500;
	struct summary *m = NULL;

	for (size_t i = 0; i < c->n_sums; i++)
		if (c->sums[i].cgroup_id == x->cgroup_id && c->sums[i].dir == x->direction)
			m = &c->sums[i];
	if (!m) {
		if (c->n_sums == MAX_SUMMARIES)
			flush_summaries(c);
		m = &c->sums[c->n_sums++];
		memset(m, 0, sizeof(*m));
		m->cgroup_id = x->cgroup_id;
		m->dir = x->direction;
		m->first_ns = start;
	}
	if (failed && m->failed_full < FAILED_FULL_PER_S) {
		m->failed_full++;
		return false;
	}
	m->count++;
	m->failed += failed;
	return true;
}

static bool in_window(struct tl_capture *c, const char *uid);
static struct window *find_window(struct tl_capture *c, const char *uid);

/* A connection's number (http.request's conn), given at its first event. */
static uint32_t conn_number(struct tl_capture *c, uint32_t *no)
{
	if (!*no)
		*no = ++c->next_conn ? c->next_conn : ++c->next_conn;
	return *no;
}

static void on_exchange(void *ud, const struct tl_http_exchange *xr)
{
	struct tl_capture *c = ud;
	int64_t off = c->cfg.clock ? c->cfg.clock->offset_ns : 0;
	int64_t start = (int64_t)xr->start_ns + off, end = (int64_t)xr->end_ns + off;
	struct tl_http_exchange xc = *xr;
	const struct tl_http_exchange *x = &xc;
	const char *uid;
	struct held *h;

	/* The connection's number, given at its first exchange; the copy
	 * keeps it (held and pre-roll exchanges outlive the connection). */
	if (xr->conn_no)
		xc.conn_seq = conn_number(c, xr->conn_no);
	xc.conn_no = NULL;
	/* (the copy's times are UTC, as tl_capture_kernel_event takes them) */
	if (xc.conn_start_ns)
		xc.conn_start_ns += off;

	if (c->cfg.mode == TL_HTTP_CAPTURE_ALWAYS &&
	    !((uid = cgroup_pod(c, x->cgroup_id)) && find_window(c, uid)) && summarize(c, x, start)) {
		if (uid) {
			struct preroll *p = &c->pre[c->pre_next];

			p->x = *x;
			tl_copy_str(p->uid, sizeof(p->uid), uid);
			p->start_ns = start;
			p->end_ns = end;
			c->pre_next = (c->pre_next + 1) % PREROLL_MAX;
			if (c->n_pre < PREROLL_MAX)
				c->n_pre++;
		}
		return;
	}
	/* An inbound request with an ID in a Pod whose proxy logs: wait for
	 * the log's record of it. Everything else goes out now. */
	if (!c->logs || !x->id[0] || x->direction != TL_HTTP_DIR_INBOUND ||
	    !(uid = cgroup_pod(c, x->cgroup_id)) || !tl_pod_logs_has_pod(c->logs, uid)) {
		emit_kernel(c, x, start, end);
		return;
	}
	if (c->n_held == MAX_HELD) {
		/* Full: the oldest goes out alone. */
		h = &c->held[c->held_head];
		c->held_head = (c->held_head + 1) % MAX_HELD;
		c->n_held--;
		if (h->x.id[0])
			emit_kernel(c, &h->x, h->start_ns, h->end_ns);
	}
	h = &c->held[(c->held_head + c->n_held++) % MAX_HELD];
	h->x = *x;
	tl_copy_str(h->uid, sizeof(h->uid), uid);
	h->start_ns = start;
	h->end_ns = end;
	h->held_at = tl_now_boot_ns();
}

/* ---- HTTP/2 connections: GOAWAY, RST_STREAM, their ends ---- */

/* RFC 9113 section 7's name of an error code, "UNKNOWN" past them. */
static const char *h2_error_name(uint32_t code)
{
	const char *n = tl_h2_error_name(code);

	return n ? n : "UNKNOWN";
}

static int set_h2_conn(struct tl_event *ev, const struct tl_http_h2_event *e, unsigned peer_slot,
		       unsigned conn_slot, uint32_t conn)
{
	int r = 0;

	if (e->peer.family)
		r = tl_event_set_addr(ev, peer_slot, e->peer.family, e->peer.addr, e->peer.port);
	return r ?: tl_event_set_i(ev, conn_slot, conn);
}

static int h2_goaway_event(const struct tl_http_h2_event *e, uint32_t conn, int64_t off,
			   struct tl_event *ev)
{
	char debug[TL_H2_DEBUG_KEEP + 1];
	size_t n = e->debug_len < TL_H2_DEBUG_KEEP ? e->debug_len : TL_H2_DEBUG_KEEP;
	int r;

	/* the peer's bytes, printable ASCII only */
	for (size_t i = 0; i < n; i++)
		debug[i] = e->debug[i] >= 0x20 && e->debug[i] < 0x7f ? (char)e->debug[i] : '?';
	debug[n] = '\0';
	r = set_str(ev, TL_F_GOAWAY_DIRECTION, e->sent ? "sent" : "received");
	r = r ?: tl_event_set_i(ev, TL_F_GOAWAY_LAST_STREAM_ID, e->last_stream_id);
	r = r ?: tl_event_set_i(ev, TL_F_GOAWAY_ERROR_CODE, e->error_code);
	r = r ?: set_str(ev, TL_F_GOAWAY_ERROR_NAME, h2_error_name(e->error_code));
	r = r ?: set_h2_conn(ev, e, TL_F_GOAWAY_PEER, TL_F_GOAWAY_CONN, conn);
	if (r == 0 && e->conn_start_ns)
		r = tl_event_set_i(ev, TL_F_GOAWAY_CONN_START, e->conn_start_ns + off);
	if (r == 0 && n)
		r = set_str(ev, TL_F_GOAWAY_DEBUG, debug);
	if (r == 0 && e->payload_lost)
		r = tl_event_set_i(ev, TL_F_GOAWAY_PAYLOAD_LOST, 1);
	if (r == 0 && e->direction != TL_HTTP_DIR_UNKNOWN)
		r = set_str(ev, TL_F_GOAWAY_CONN_DIRECTION, direction_name(e->direction));
	return r;
}

static int h2_rst_event(const struct tl_http_h2_event *e, uint32_t conn, struct tl_event *ev)
{
	int r;

	r = set_str(ev, TL_F_RST_DIRECTION, e->sent ? "sent" : "received");
	r = r ?: tl_event_set_i(ev, TL_F_RST_STREAM_ID, e->stream_id);
	r = r ?: tl_event_set_i(ev, TL_F_RST_ERROR_CODE, e->error_code);
	r = r ?: set_str(ev, TL_F_RST_ERROR_NAME, h2_error_name(e->error_code));
	r = r ?: set_h2_conn(ev, e, TL_F_RST_PEER, TL_F_RST_CONN, conn);
	if (r == 0 && e->request_id[0])
		r = set_str(ev, TL_F_RST_REQUEST_ID, e->request_id);
	if (r == 0 && e->path[0])
		r = set_str(ev, TL_F_RST_PATH, e->path);
	if (r == 0 && e->payload_lost)
		r = tl_event_set_i(ev, TL_F_RST_PAYLOAD_LOST, 1);
	if (r == 0 && e->direction != TL_HTTP_DIR_UNKNOWN)
		r = set_str(ev, TL_F_RST_CONN_DIRECTION, direction_name(e->direction));
	return r;
}

static int h2_end_event(const struct tl_http_h2_event *e, uint32_t conn, int64_t off,
			struct tl_event *ev)
{
	int r = 0;

	if (e->direction != TL_HTTP_DIR_UNKNOWN)
		r = set_str(ev, TL_F_H2C_DIRECTION, direction_name(e->direction));
	r = r ?: set_h2_conn(ev, e, TL_F_H2C_PEER, TL_F_H2C_CONN, conn);
	if (r == 0 && e->conn_start_ns)
		r = tl_event_set_i(ev, TL_F_H2C_CONN_START, e->conn_start_ns + off);
	if (r == 0 && e->peer.family)
		r = tl_event_set_i(ev, TL_F_H2C_LOCAL_PORT, e->peer.local_port);
	r = r ?: set_str(ev, TL_F_H2C_END, e->end);
	r = r ?: tl_event_set_i(ev, TL_F_H2C_DECODED, e->decoded);
	r = r ?: tl_event_set_i(ev, TL_F_H2C_STREAMS, (int64_t)e->streams);
	r = r ?: tl_event_set_i(ev, TL_F_H2C_STREAMS_UNKNOWN, (int64_t)e->streams_unknown);
	r = r ?: tl_event_set_i(ev, TL_F_H2C_STREAMS_OPEN, (int64_t)e->streams_open);
	r = r ?: tl_event_set_i(ev, TL_F_H2C_GOAWAYS_SENT, (int64_t)e->goaways_sent);
	r = r ?: tl_event_set_i(ev, TL_F_H2C_GOAWAYS_RECEIVED, (int64_t)e->goaways_received);
	r = r ?: tl_event_set_i(ev, TL_F_H2C_RSTS_SENT, (int64_t)e->rsts_sent);
	r = r ?: tl_event_set_i(ev, TL_F_H2C_RSTS_RECEIVED, (int64_t)e->rsts_received);
	r = r ?: tl_event_set_i(ev, TL_F_H2C_STREAMS_AFTER_GOAWAY, (int64_t)e->streams_after_goaway);
	return r;
}

/* A GOAWAY, RST_STREAM or connection end of a followed HTTP/2 connection:
 * an event of the Pod's, inside its windows (in always mode outside them
 * its streams are counted in summaries and these are not kept). */
static void on_h2(void *ud, const struct tl_http_h2_event *e)
{
	static const enum tl_kind kinds[] = {
		[TL_HTTP_H2_GOAWAY] = TL_KIND_HTTP2_GOAWAY,
		[TL_HTTP_H2_RST_STREAM] = TL_KIND_HTTP2_RST_STREAM,
		[TL_HTTP_H2_END] = TL_KIND_HTTP2_CONNECTION,
	};
	struct tl_capture *c = ud;
	const char *uid = cgroup_pod(c, e->cgroup_id);
	int64_t off = c->cfg.clock ? c->cfg.clock->offset_ns : 0;
	struct tl_event ev;
	uint32_t conn;
	int r;

	if (c->cfg.mode == TL_HTTP_CAPTURE_ALWAYS && !(uid && find_window(c, uid)))
		return;
	conn = conn_number(c, e->conn_no);
	r = tl_event_init_kind(&ev, kinds[e->kind], TL_SRC_KERNEL, e->ts_ns + off);
	if (r < 0)
		return;
	ev.cgroup_id = e->cgroup_id;
	switch (e->kind) {
	case TL_HTTP_H2_GOAWAY:
		r = h2_goaway_event(e, conn, off, &ev);
		break;
	case TL_HTTP_H2_RST_STREAM:
		r = h2_rst_event(e, conn, &ev);
		break;
	case TL_HTTP_H2_END:
		r = h2_end_event(e, conn, off, &ev);
		break;
	}
	if (r < 0) {
		tl_event_clear(&ev);
		tl_metric_add("termline_http2_events_dropped_total", NULL, 1);
		return;
	}
	tl_metric_add("termline_http2_events_total", NULL, 1);
	tl_emit(&c->emit, &ev);
}

/* Folded accepted connections go out as tcp.accepted events. */
static void flush_accepts(struct tl_capture *c)
{
	int64_t off = c->cfg.clock ? c->cfg.clock->offset_ns : 0;

	for (size_t i = 0; i < c->n_acc; i++) {
		const struct accept_fold *a = &c->acc[i];
		struct tl_event ev;
		int r;

		r = tl_event_init_kind(&ev, TL_KIND_TCP_ACCEPTED, TL_SRC_KERNEL, a->first_ns + off);
		if (r < 0)
			continue;
		ev.cgroup_id = a->cgroup_id;
		r = tl_event_set_addr(&ev, TL_F_ACC_PEER, a->peer.family, a->peer.addr, a->peer.port);
		r = r ?: tl_event_set_i(&ev, TL_F_ACC_PORT, a->peer.local_port);
		r = r ?: tl_event_set_i(&ev, TL_F_ACC_COUNT, (int64_t)a->count);
		if (r == 0 && a->count > 1)
			r = tl_event_set_i(&ev, TL_F_ACC_LAST, a->last_ns + off);
		if (r < 0) {
			tl_event_clear(&ev);
			continue;
		}
		tl_metric_add("termline_http_accepted_total", NULL, (int64_t)a->count);
		tl_emit(&c->emit, &ev);
	}
	c->n_acc = 0;
}

static bool peer_loopback(const struct tl_http_peer *p)
{
	static const uint8_t one[16] = { [15] = 1 };

	return p->family == TL_HTTP_AF_INET ? p->addr[0] == 127 : memcmp(p->addr, one, 16) == 0;
}

/* An accepted connection of a Pod in its termination window: counted per
 * peer address and local port (a consumer that connects without sending a
 * whole request is seen too). The Pod's own loopback legs (a sidecar to
 * its app) are not a consumer's. */
static void on_accepted(struct tl_capture *c, const struct tl_http_rec *r)
{
	struct tl_http_peer p;
	struct accept_fold *a = NULL;
	const struct window *w;
	const char *uid;

	if (!tl_http_rec_peer(r, &p) || peer_loopback(&p) || !(uid = cgroup_pod(c, r->cgroup_id)) ||
	    !(w = find_window(c, uid)) || !w->terminating)
		return;
	for (size_t i = 0; i < c->n_acc; i++) {
		struct accept_fold *f = &c->acc[i];

		if (f->cgroup_id == r->cgroup_id && f->peer.family == p.family &&
		    f->peer.local_port == p.local_port && memcmp(f->peer.addr, p.addr, 16) == 0) {
			a = f;
			break;
		}
	}
	if (!a) {
		if (c->n_acc == MAX_ACCEPT_FOLDS)
			flush_accepts(c);
		a = &c->acc[c->n_acc++];
		a->cgroup_id = r->cgroup_id;
		a->peer = p;
		a->count = 0;
		a->first_ns = (int64_t)r->ktime_ns;
	}
	a->count++;
	a->last_ns = (int64_t)r->ktime_ns;
}

static void on_rec(void *ud, const struct tl_http_rec *r, const uint8_t *data)
{
	struct tl_capture *c = ud;

	if (r->kind == TL_HTTP_REC_OPEN && (r->flags & TL_HTTP_RF_ACCEPTED))
		on_accepted(c, r);
	tl_http_tracker_record(c->tracker, r, data);
}

static struct window *find_window(struct tl_capture *c, const char *uid)
{
	for (size_t i = 0; i < c->n_win; i++)
		if (strcmp(c->win[i].uid, uid) == 0)
			return &c->win[i];
	return NULL;
}

static bool in_window(struct tl_capture *c, const char *uid)
{
	return c->cfg.mode == TL_HTTP_CAPTURE_ALWAYS || find_window(c, uid) != NULL;
}

/* The kernel follows exactly the cgroups of Pods inside a window, and the
 * program is attached while there is at least one. */
static void sync_kernel(struct tl_capture *c)
{
	bool any = false;

	if (!c->bpf)
		return;
	for (size_t i = 0; i < c->n_cgs; i++) {
		struct cg *g = &c->cgs[i];
		bool want = in_window(c, g->uid);

		any |= want;
		if (want && !g->tracked)
			g->tracked = tl_http_bpf_track_cgroup(c->bpf, g->id) == 0;
		else if (!want && g->tracked) {
			tl_http_bpf_untrack_cgroup(c->bpf, g->id);
			g->tracked = false;
		}
	}
	if (c->cfg.mode == TL_HTTP_CAPTURE_ALWAYS)
		any = true;
	if (any && !tl_http_bpf_attached(c->bpf)) {
		int r = tl_http_bpf_attach(c->bpf);

		if (r < 0) {
			tl_metric_add("termline_http_capture_attach_errors_total", NULL, 1);
			if (!c->attach_failed_logged)
				tl_warn("HTTP capture: cannot attach the syscall program: %s",
					strerror(-r));
			c->attach_failed_logged = true;
		} else {
			c->attaches++;
			tl_info("HTTP capture: attached (%zu Pod(s) in a capture window)", c->n_win);
		}
	} else if (!any && tl_http_bpf_attached(c->bpf)) {
		tl_http_bpf_detach(c->bpf);
		tl_info("HTTP capture: detached (no Pod in a capture window)");
	}
	tl_metric_set("termline_http_capture_attached", NULL, tl_http_bpf_attached(c->bpf));
	tl_metric_set("termline_http_capture_windows", NULL, (int64_t)c->n_win);
}

/* The Pod's timeline says when capture was on: an http.capture event as
 * its window opens (on, or unavailable when the program is not attached)
 * and closes (off). */
static void emit_window(struct tl_capture *c, const struct window *w, bool open)
{
	struct tl_event ev;
	const char *state = !open ? "off" : tl_capture_attached(c) ? "on" : "unavailable";
	const char *kind = w->terminating ? "termination" : "start-up";

	if (tl_event_init_kind(&ev, TL_KIND_HTTP_CAPTURE, TL_SRC_KERNEL, tl_now_real_ns()) < 0)
		return;
	tl_copy_str(ev.pod_uid, sizeof(ev.pod_uid), w->uid);
	if (tl_event_set_s(&ev, TL_F_CAPTURE_STATE, state, strlen(state)) < 0 ||
	    tl_event_set_s(&ev, TL_F_CAPTURE_WINDOW, kind, strlen(kind)) < 0) {
		tl_event_clear(&ev);
		return;
	}
	tl_emit(&c->emit, &ev);
}

/* Opens (or extends) a Pod's window. until 0: open-ended. */
/* A Pod's termination starts: its requests of the last seconds, counted in
 * summaries so far, come back in full (preRoll: true; the summaries
 * already written count them too). */
static void emit_preroll(struct tl_capture *c, const char *uid)
{
	int64_t since = tl_now_real_ns() - PREROLL_NS;

	flush_summaries(c);
	for (size_t i = 0; i < c->n_pre; i++) {
		struct preroll *p = &c->pre[(c->pre_next + PREROLL_MAX - c->n_pre + i) % PREROLL_MAX];
		struct tl_event ev;

		if (!p->uid[0] || strcmp(p->uid, uid) != 0 || p->start_ns < since)
			continue;
		if (tl_capture_kernel_event(&p->x, p->start_ns, p->end_ns, &ev) < 0)
			continue;
		if (tl_event_set_i(&ev, TL_F_HTTP_PRE_ROLL, true) < 0) {
			tl_event_clear(&ev);
			continue;
		}
		p->uid[0] = '\0';
		tl_metric_add("termline_http_preroll_requests_total", NULL, 1);
		tl_emit(&c->emit, &ev);
	}
}

static void open_window(struct tl_capture *c, const char *uid, bool terminating, int64_t until_ns)
{
	struct window *w = find_window(c, uid);
	bool changed = false;

	if (c->cfg.mode == TL_HTTP_CAPTURE_OFF || !uid[0])
		return;
	if (!w) {
		if (c->n_win == MAX_WINDOWS) {
			tl_metric_add("termline_http_capture_windows_refused_total", NULL, 1);
			return;
		}
		w = &c->win[c->n_win++];
		memset(w, 0, sizeof(*w));
		tl_copy_str(w->uid, sizeof(w->uid), uid);
		w->until_ns = until_ns;
		w->terminating = terminating;
		changed = true;
	} else if (terminating && !w->terminating) {
		w->terminating = true;
		w->ending = false;
		w->until_ns = until_ns;
		changed = true;
	} else if (!w->ending && until_ns > w->until_ns) {
		w->until_ns = until_ns;
	}
	sync_kernel(c);
	if (changed)
		emit_window(c, w, true);
	if (changed && terminating && c->cfg.mode == TL_HTTP_CAPTURE_ALWAYS)
		emit_preroll(c, uid);
}

/* The window closes at until_ns (a Pod's Ready, its timeline's end). */
static void end_window(struct tl_capture *c, const char *uid, int64_t until_ns, bool start_only)
{
	struct window *w = find_window(c, uid);

	if (!w || (start_only && w->terminating))
		return;
	w->until_ns = until_ns;
	w->ending = true;
}

static void expire_windows(struct tl_capture *c, int64_t now)
{
	size_t j = 0, n = c->n_win;

	for (size_t i = 0; i < n; i++) {
		if (c->win[i].until_ns > now) {
			c->win[j++] = c->win[i];
			continue;
		}
		/* A termination window ends with the Pod's timeline: an event
		 * now would come after its close. */
		if (!c->win[i].terminating)
			emit_window(c, &c->win[i], false);
	}
	if (j != n) {
		c->n_win = j;
		sync_kernel(c);
	}
}

static void on_housekeeping(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *ud)
{
	struct tl_capture *c = ud;

	flush_accepts(c);
	expire_windows(c, tl_now_real_ns());
	release_held(c, tl_now_boot_ns() - JOIN_WAIT_NS);
	flush_summaries(c);
	if (c->tracker) {
		struct tl_http_tracker_stats st;

		tl_http_tracker_expire(c->tracker, tl_now_boot_ns() - CONN_IDLE_NS);
		/* The pairing's own view: how many connections it follows, and
		 * what it had to give up (docs/http-capture.md, "When the
		 * programs are attached", its metrics). */
		tl_http_tracker_stats(c->tracker, &st);
		tl_metric_set("termline_http_capture_connections", NULL, (int64_t)st.conns);
		tl_metric_set("termline_http_capture_connections_evicted_total", NULL, (int64_t)st.evicted);
		tl_metric_set("termline_http_capture_responses_unmatched_total", NULL,
			      (int64_t)st.unmatched_responses);
		tl_metric_set("termline_http_capture_requests_overflowed_total", NULL,
			      (int64_t)st.pending_overflow);
		tl_metric_set("termline_http_capture_requests_lost_total", NULL, (int64_t)st.lost_requests);
		tl_metric_set("termline_http_capture_connections_not_http_total", NULL, (int64_t)st.not_http);
		tl_metric_set("termline_http_capture_connections_h2_total", NULL, (int64_t)st.h2);
	}
	if (c->bpf)
		tl_metric_set("termline_http_ring_dropped", NULL, (int64_t)tl_http_bpf_dropped(c->bpf));
}

void tl_capture_cgroup_added(struct tl_capture *c, uint64_t cgroup_id, const char *pod_uid,
			     const char *container_id, bool opening)
{
	struct cg *g = NULL;
	int32_t i;

	if (!c || !pod_uid || !pod_uid[0])
		return;
	i = cg_index(c, cgroup_id);
	if (i >= 0) {
		g = &c->cgs[i];
	} else {
		if (c->n_cgs == MAX_CGROUPS)
			return;
		i = (int32_t)c->n_cgs++;
		g = &c->cgs[i];
		memset(g, 0, sizeof(*g));
		g->id = cgroup_id;
		cg_link(c, i);
	}
	tl_copy_str(g->uid, sizeof(g->uid), pod_uid);
	tl_copy_str(g->container_id, sizeof(g->container_id), container_id ? container_id : "");
	if (opening && !find_window(c, pod_uid))
		open_window(c, pod_uid, false,
			    tl_now_real_ns() + (int64_t)c->cfg.start_max_s * 1000000000LL);
	else
		sync_kernel(c);
}

void tl_capture_cgroup_removed(struct tl_capture *c, uint64_t cgroup_id)
{
	int32_t i, last;

	if (!c || (i = cg_index(c, cgroup_id)) < 0)
		return;
	if (c->cgs[i].tracked && c->bpf)
		tl_http_bpf_untrack_cgroup(c->bpf, cgroup_id);
	/* The last entry moves into the hole. */
	last = (int32_t)c->n_cgs - 1;
	cg_unlink(c, i);
	if (i != last) {
		cg_unlink(c, last);
		c->cgs[i] = c->cgs[last];
		cg_link(c, i);
	}
	c->n_cgs--;
}

void tl_capture_observe(struct tl_capture *c, const struct tl_event *ev)
{
	int64_t v;
	const char *s;

	if (!c || c->cfg.mode == TL_HTTP_CAPTURE_OFF || !ev->pod_uid[0])
		return;
	/* Every event passes here, requests most: the clock is read only
	 * where a window moves. */
	switch (ev->kind) {
	case TL_KIND_POD_DELETION_REQUESTED:
		open_window(c, ev->pod_uid, true, tl_now_real_ns() + TERMINATION_MAX_NS);
		break;
	case TL_KIND_PROCESS_SIGNAL:
		/* Without the API server the first SIGTERM is the first sign. */
		if (tl_event_get_i(ev, TL_F_SIG_SIGNO, &v) && v == SIGTERM)
			open_window(c, ev->pod_uid, true, tl_now_real_ns() + TERMINATION_MAX_NS);
		break;
	case TL_KIND_POD_CONDITION:
		s = tl_event_get_s(ev, TL_F_COND_CONDITION);
		if (s && strcmp(s, "Ready") == 0 && (s = tl_event_get_s(ev, TL_F_COND_STATUS)) &&
		    strcmp(s, "True") == 0)
			end_window(c, ev->pod_uid,
				   tl_now_real_ns() + (int64_t)c->cfg.ready_margin_s * 1000000000LL, true);
		break;
	case TL_KIND_POD_DELETED:
	case TL_KIND_POD_CGROUPS_REMOVED:
		/* The timeline stays open for the linger: so does the window. */
		end_window(c, ev->pod_uid, tl_now_real_ns() + (int64_t)c->cfg.linger_s * 1000000000LL,
			   false);
		break;
	default:
		break;
	}
}

void tl_capture_flush_pod(struct tl_capture *c, const char *uid)
{
	if (!c || !uid || !uid[0])
		return;
	if (c->bpf)
		tl_http_bpf_drain(c->bpf);
	flush_accepts(c);
	/* Log records join the held legs they belong to... */
	if (c->logs)
		tl_pod_logs_read_pod(c->logs, uid);
	/* ...and the legs no record came for go out alone. They stay in the
	 * ring, marked done, until it moves past them. */
	for (size_t i = 0; i < c->n_held; i++) {
		struct held *h = &c->held[(c->held_head + i) % MAX_HELD];

		if (h->x.id[0] && strcmp(h->uid, uid) == 0) {
			emit_kernel(c, &h->x, h->start_ns, h->end_ns);
			h->x.id[0] = '\0';
		}
	}
	tl_metric_add("termline_http_flushes_total", NULL, 1);
}

void tl_capture_drain(struct tl_capture *c)
{
	if (c && c->bpf)
		tl_http_bpf_drain(c->bpf);
}

uint64_t tl_capture_dropped(const struct tl_capture *c)
{
	return c && c->bpf ? tl_http_bpf_dropped(c->bpf) : 0;
}

bool tl_capture_has_pod_logs(const struct tl_capture *c, const char *uid)
{
	return c && c->logs && tl_pod_logs_has_pod(c->logs, uid);
}

bool tl_capture_sockets(const struct tl_capture *c)
{
	return c && c->bpf;
}

bool tl_capture_attached(const struct tl_capture *c)
{
	return c && c->bpf && tl_http_bpf_attached(c->bpf);
}

static void describe_metrics(void)
{
	tl_metric_describe("termline_http_log_records_total", TL_METRIC_COUNTER,
			   "Proxy access-log records recorded as http.request.");
	tl_metric_describe("termline_http_log_records_dropped_total", TL_METRIC_COUNTER,
			   "Proxy access-log records that could not be made into events.");
	tl_metric_describe("termline_http_log_dirs_refused_total", TL_METRIC_COUNTER,
			   "Pod or container directories of the logs directory that are symlinks: "
			   "not followed (each counted once while it stays).");
	tl_metric_describe("termline_http_kernel_requests_total", TL_METRIC_COUNTER,
			   "Requests seen on Pod sockets recorded as http.request.");
	tl_metric_describe("termline_http_kernel_requests_dropped_total", TL_METRIC_COUNTER,
			   "Requests seen on Pod sockets that could not be made into events.");
	tl_metric_describe("termline_http_capture_attached", TL_METRIC_GAUGE,
			   "1 while the HTTP syscall program is attached.");
	tl_metric_describe("termline_http_capture_windows", TL_METRIC_GAUGE,
			   "Pods inside a capture window (start-up or termination).");
	tl_metric_describe("termline_http_capture_attach_errors_total", TL_METRIC_COUNTER,
			   "Failed attaches of the HTTP syscall program.");
	tl_metric_describe("termline_http_capture_windows_refused_total", TL_METRIC_COUNTER,
			   "Capture windows not opened: too many at once.");
	tl_metric_describe("termline_http_requests_summarized_total", TL_METRIC_COUNTER,
			   "Requests outside capture windows counted in per-second summaries (always mode).");
	tl_metric_describe("termline_http_preroll_requests_total", TL_METRIC_COUNTER,
			   "Requests of the seconds before a deletion request recorded in full (always mode).");
	tl_metric_describe("termline_http_joined_total", TL_METRIC_COUNTER,
			   "Access-log records joined with the proxy's inbound leg seen on its socket.");
	tl_metric_describe("termline_http_join_errors_total", TL_METRIC_COUNTER,
			   "Joined records whose socket fields could not be set.");
	tl_metric_describe("termline_http_flushes_total", TL_METRIC_COUNTER,
			   "Closing timelines whose held requests and unread log records were taken first.");
	tl_metric_describe("termline_http_ring_dropped", TL_METRIC_GAUGE,
			   "HTTP records lost to a full ring buffer since start.");
	tl_metric_describe("termline_http_capture_connections", TL_METRIC_GAUGE,
			   "Connections the request pairing follows now.");
	tl_metric_describe("termline_http_capture_connections_evicted_total", TL_METRIC_COUNTER,
			   "Connections dropped at the pairing's limit, their pending requests "
			   "reported with error evicted.");
	tl_metric_describe("termline_http_capture_responses_unmatched_total", TL_METRIC_COUNTER,
			   "Responses with no pending request (a connection first seen mid-stream).");
	tl_metric_describe("termline_http_capture_requests_overflowed_total", TL_METRIC_COUNTER,
			   "Pipelined requests dropped unreported at the per-connection limit.");
	tl_metric_describe("termline_http_capture_requests_lost_total", TL_METRIC_COUNTER,
			   "Pending requests dropped because a record of their connection was lost.");
	tl_metric_describe("termline_http_capture_connections_not_http_total", TL_METRIC_COUNTER,
			   "Connections found to carry TLS: not followed.");
	tl_metric_describe("termline_http_capture_connections_h2_total", TL_METRIC_COUNTER,
			   "Connections followed as cleartext HTTP/2.");
	tl_metric_describe("termline_http2_events_total", TL_METRIC_COUNTER,
			   "HTTP/2 GOAWAY, RST_STREAM and connection-end events recorded.");
	tl_metric_describe("termline_http2_events_dropped_total", TL_METRIC_COUNTER,
			   "HTTP/2 events that could not be made into events.");
}

int tl_capture_new(const struct tl_capture_config *cfg, struct tl_loop *loop,
		   const struct tl_emitter *emit, struct tl_capture **ret, char *err, size_t errlen)
{
	struct tl_capture *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	if (err && errlen)
		err[0] = '\0';
	c->emit = *emit;
	c->cfg = *cfg;
	if (!c->cfg.ready_margin_s)
		c->cfg.ready_margin_s = 10;
	if (!c->cfg.start_max_s)
		c->cfg.start_max_s = 120;
	for (int i = 0; i < cfg->n_request_id_headers && i < TL_HTTP_WANT_MAX; i++)
		c->want.names[c->want.n++] = cfg->request_id_headers[i];
	describe_metrics();
	c->m_kernel = tl_metric_cell("termline_http_kernel_requests_total", NULL, TL_METRIC_COUNTER);
	c->m_kernel_dropped =
		tl_metric_cell("termline_http_kernel_requests_dropped_total", NULL, TL_METRIC_COUNTER);
	c->cgs = calloc(MAX_CGROUPS, sizeof(*c->cgs));
	c->cg_bucket = malloc(CG_BUCKETS * sizeof(*c->cg_bucket));
	c->cg_next = malloc(MAX_CGROUPS * sizeof(*c->cg_next));
	if (!c->cg_bucket || !c->cg_next) {
		tl_capture_free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < CG_BUCKETS; i++)
		c->cg_bucket[i] = -1;
	c->win = calloc(MAX_WINDOWS, sizeof(*c->win));
	c->acc = calloc(MAX_ACCEPT_FOLDS, sizeof(*c->acc));
	c->held = calloc(MAX_HELD, sizeof(*c->held));
	c->sums = calloc(MAX_SUMMARIES, sizeof(*c->sums));
	c->pre = cfg->mode == TL_HTTP_CAPTURE_ALWAYS ? calloc(PREROLL_MAX, sizeof(*c->pre)) : NULL;
	if (!c->cgs || !c->win || !c->acc || !c->held || !c->sums ||
	    (cfg->mode == TL_HTTP_CAPTURE_ALWAYS && !c->pre)) {
		tl_capture_free(c);
		return -ENOMEM;
	}
	if (cfg->pod_logs_dir && cfg->pod_logs_dir[0]) {
		struct tl_pod_logs_config pc = {
			.root = cfg->pod_logs_dir,
			.container = cfg->log_container ? cfg->log_container
							: TL_CAPTURE_LOG_CONTAINER_DEFAULT,
			.on_refused = on_log_dir_refused,
			.on_pod_gone = on_log_dir_gone,
		};

		r = tl_pod_logs_new(&pc, loop, on_log_record, c, &c->logs);
		if (r < 0) {
			tl_capture_free(c);
			return r;
		}
	}
	if (cfg->mode != TL_HTTP_CAPTURE_OFF) {
		struct tl_http_tracker_config tc = { .want = c->want };
		struct tl_http_bpf_config bc = {
			.prefix_bytes = cfg->prefix_bytes,
			.ringbuf_bytes = cfg->ringbuf_bytes,
		};

		r = tl_http_tracker_new(&tc, on_exchange, c, &c->tracker);
		if (r < 0) {
			tl_capture_free(c);
			return r;
		}
		tl_http_tracker_on_h2(c->tracker, on_h2, c);
		r = tl_http_bpf_new(&bc, on_rec, c, &c->bpf, err, errlen);
		if (r == 0)
			tl_info("HTTP capture: sys_exit program loaded (fd walk: %s)",
				tl_http_bpf_variant(c->bpf));
		if (r == 0 && loop)
			r = tl_http_bpf_attach_loop(c->bpf, loop);
		if (r < 0) {
			/* Not fatal: the access logs still come in. */
			tl_http_bpf_free(c->bpf);
			c->bpf = NULL;
		}
	}
	if (loop) {
		r = tl_loop_add_timer(loop, HOUSEKEEPING_MS, HOUSEKEEPING_MS, on_housekeeping, c,
				      &c->timer);
		if (r < 0) {
			tl_capture_free(c);
			return r;
		}
	}
	sync_kernel(c);
	*ret = c;
	return 0;
}

void tl_capture_free(struct tl_capture *c)
{
	if (!c)
		return;
	tl_timer_free(c->timer);
	if (c->bpf)
		tl_http_bpf_detach(c->bpf);
	/* What still waits for its log record goes out as it is. */
	if (c->held)
		release_held(c, INT64_MAX);
	if (c->sums)
		flush_summaries(c);
	tl_http_bpf_free(c->bpf);
	tl_http_tracker_free(c->tracker);
	tl_pod_logs_free(c->logs);
	free(c->cgs);
	free(c->cg_bucket);
	free(c->cg_next);
	free(c->win);
	free(c->held);
	free(c->sums);
	free(c->acc);
	free(c->pre);
	free(c);
}

int tl_capture_poll_logs(struct tl_capture *c)
{
	return c->logs ? tl_pod_logs_poll(c->logs) : 0;
}
