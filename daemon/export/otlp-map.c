/* SPDX-License-Identifier: Apache-2.0 */
/* A timeline document as one OTLP trace (and log records): docs/export.md
 * has the mapping as a table. The findings model (daemon/findings) reads
 * the facts the phases rest on (deletion, each container's SIGTERM, exit,
 * SIGKILL, listener close, which requests failed), so a span says what
 * `kubectl termline explain` says. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "clock.h"
#include "findings.h"
#include "json-util.h"
#include "otlp-int.h"
#include "termline-config.h"
#include "workload.h"

#define NS_PER_S 1000000000LL
#define SCHEMA_URL "https://opentelemetry.io/schemas/1.26.0"
#define MAX_GATES 16

enum role {
	R_ROOT,
	R_GRACE,
	R_GATE,
	R_PRESTOP,
	R_STOP,
	R_DRAIN,
	R_REQUEST,
};

struct span_b {
	Otlp__Span *s;
	enum role role;
	int res; /* 0: the Pod's resource; 1 + i: container i's */
	int64_t start, end;
	Otlp__Span__Event **ev; /* malloc'd while collecting */
	size_t n_ev, cap_ev;
	uint32_t ev_dropped;
};

struct ctr_x {
	int prestop, stop, drain; /* span indices, -1 none */
	int64_t prestop_ns, prestop_end_ns;
	int64_t prestop_pid;
	const char *prestop_comm, *prestop_file;
	bool used; /* has a span or a log record: gets a resource */
};

struct log_b {
	Otlp__LogRecord *r;
	int res;
};

struct mapper {
	struct otlp_tree *t;
	struct arena *a;
	const struct tl_otlp_encode_opts *o;
	struct json_object *doc, *events, *pod;
	const char *uid;
	struct tl_model m;
	bool model_ok;
	struct span_b *sp;
	size_t n_sp, cap_sp;
	struct ctr_x cx[TL_FINDINGS_MAX_CONTAINERS];
	int gates[MAX_GATES];
	size_t n_gates;
	struct log_b *lg;
	size_t n_lg, cap_lg;
	/* the model's requests by their event's "source" string (the model
	 * borrows the document's strings: one pointer per event) */
	const struct tl_req **req_by_src;
	size_t req_cap;
	int err;
};

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 16;
	void *q;

	if (n < *cap)
		return 0;
	while (c <= n)
		c *= 2;
	q = realloc(*p, c * size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* ---- the model's requests, found from their event ---- */

static size_t ptr_hash(const void *p, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ULL;

	return (size_t)(h >> 20) & (cap - 1);
}

static int index_requests(struct mapper *x)
{
	size_t cap = 16;

	while (cap < x->m.n_req * 2)
		cap <<= 1;
	x->req_by_src = calloc(cap, sizeof(*x->req_by_src));
	if (!x->req_by_src)
		return -ENOMEM;
	x->req_cap = cap;
	for (size_t i = 0; i < x->m.n_req; i++) {
		const struct tl_req *r = &x->m.reqs[i];
		size_t k;

		if (!r->source)
			continue;
		for (k = ptr_hash(r->source, cap); x->req_by_src[k]; k = (k + 1) & (cap - 1))
			;
		x->req_by_src[k] = r;
	}
	return 0;
}

static const struct tl_req *request_of(const struct mapper *x, struct json_object *ev)
{
	const char *src = tl_json_str(ev, "source");

	if (!src || !x->req_cap)
		return NULL;
	for (size_t k = ptr_hash(src, x->req_cap); x->req_by_src[k]; k = (k + 1) & (x->req_cap - 1))
		if (x->req_by_src[k]->source == src)
			return x->req_by_src[k];
	return NULL;
}

/* ---- spans ---- */

static int span_new(struct mapper *x, enum role role, int res, const char *name, const char *key,
		    int64_t start, int64_t end, int parent)
{
	struct span_b *b;
	Otlp__Span *s;
	uint8_t *tid, *sid, *pid;

	if (grow((void **)&x->sp, &x->cap_sp, x->n_sp, sizeof(*x->sp)) < 0)
		return -ENOMEM;
	s = ar_alloc(x->a, sizeof(*s));
	tid = ar_alloc(x->a, 16);
	sid = ar_alloc(x->a, 8);
	pid = parent >= 0 ? ar_alloc(x->a, 8) : NULL;
	if (!s || !tid || !sid || (parent >= 0 && !pid))
		return -ENOMEM;
	otlp__span__init(s);
	memcpy(tid, x->t->trace_id, 16);
	span_id_of(x->uid, key, sid);
	s->trace_id = (ProtobufCBinaryData){16, tid};
	s->span_id = (ProtobufCBinaryData){8, sid};
	if (parent >= 0) {
		memcpy(pid, x->sp[parent].s->span_id.data, 8);
		s->parent_span_id = (ProtobufCBinaryData){8, pid};
	}
	s->name = ar_str(x->a, name);
	if (!s->name)
		return -ENOMEM;
	s->kind = OTLP__SPAN__SPAN_KIND__SPAN_KIND_INTERNAL;
	/* W3C trace flags: sampled (the document was recorded in full) */
	s->flags = 0x01;
	if (end < start)
		end = start;
	s->start_time_unix_nano = (uint64_t)(start > 0 ? start : 0);
	s->end_time_unix_nano = (uint64_t)(end > 0 ? end : 0);
	b = &x->sp[x->n_sp];
	memset(b, 0, sizeof(*b));
	b->s = s;
	b->role = role;
	b->res = res;
	b->start = start;
	b->end = end;
	if (res > 0)
		x->cx[res - 1].used = true;
	return (int)x->n_sp++;
}

static void span_attrs(struct mapper *x, int i, struct attrs *l)
{
	Otlp__Span *s = x->sp[i].s;

	s->attributes = attrs_take(x->a, l, &s->n_attributes);
	s->dropped_attributes_count = l->dropped;
}

static void span_status(struct mapper *x, int i, bool error, const char *msg)
{
	Otlp__Status *st;

	if (!error)
		return;
	st = ar_alloc(x->a, sizeof(*st));
	if (!st)
		return;
	otlp__status__init(st);
	st->code = OTLP__STATUS__STATUS_CODE__STATUS_CODE_ERROR;
	if (msg) {
		st->message = ar_str(x->a, msg);
		if (!st->message)
			return;
	}
	x->sp[i].s->status = st;
}

static int span_event(struct mapper *x, int i, Otlp__Span__Event *e)
{
	struct span_b *b = &x->sp[i];

	if (b->n_ev >= TL_OTLP_MAX_SPAN_EVENTS) {
		b->ev_dropped++;
		x->t->events_dropped++;
		return 0;
	}
	if (grow((void **)&b->ev, &b->cap_ev, b->n_ev, sizeof(*b->ev)) < 0)
		return -ENOMEM;
	b->ev[b->n_ev++] = e;
	return 0;
}

/* ---- the facts behind the phases ---- */

static int64_t ev_time(struct json_object *ev)
{
	return tl_event_time(ev);
}

static const char *container_id_of(struct mapper *x, const char *name)
{
	struct json_object *ctrs = tl_json_array(x->doc, "containers");

	for (size_t i = 0; name && ctrs && i < json_object_array_length(ctrs); i++) {
		struct json_object *c = json_object_array_get_idx(ctrs, i);
		const char *n = tl_json_str(c, "name"), *id = tl_json_str(c, "containerID"), *p;

		if (!n || strcmp(n, name) != 0 || !id)
			continue;
		p = strstr(id, "://");
		return p ? p + 3 : id;
	}
	return NULL;
}

static bool is_proxy(const struct tl_ctr *c)
{
	return (c->role && strcmp(c->role, "sidecar") == 0) ||
	       strcmp(c->name, "istio-proxy") == 0;
}

/* Each container's preStop: the first exec in it after the deletion and
 * before its SIGTERM (the kubelet runs an exec hook in the container, then
 * sends the stop signal once it returned). */
static void find_prestops(struct mapper *x)
{
	size_t n = json_object_array_length(x->events);

	if (!x->m.deletion_ns)
		return;
	for (size_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(x->events, i);
		const char *type = tl_json_str(ev, "type");
		int ci = tl_model_ctr(&x->m, tl_json_str(ev, "container"));
		int64_t t = ev_time(ev), pid = 0;
		struct ctr_x *c;

		if (!type || ci < 0 || !t || x->m.ctr[ci].sandbox)
			continue;
		c = &x->cx[ci];
		tl_json_int(ev, "pid", &pid);
		if (strcmp(type, "process.exec") == 0 && !c->prestop_ns && t >= x->m.deletion_ns &&
		    (!x->m.ctr[ci].sigterm_ns || t < x->m.ctr[ci].sigterm_ns)) {
			c->prestop_ns = t;
			c->prestop_pid = pid;
			c->prestop_comm = tl_json_str(ev, "comm");
			c->prestop_file = tl_json_str(ev, "filename");
		} else if (strcmp(type, "process.exit") == 0 && c->prestop_ns && !c->prestop_end_ns &&
			   pid == c->prestop_pid && t >= c->prestop_ns) {
			c->prestop_end_ns = t;
		}
	}
}

static int64_t root_end(struct mapper *x, int64_t start)
{
	int64_t end = x->m.deleted_ns;

	if (end < start) {
		end = x->m.last_ns;
		for (size_t i = 0; i < x->m.n_req; i++)
			if (x->m.reqs[i].end_ns > end)
				end = x->m.reqs[i].end_ns;
	}
	return end > start ? end : start;
}

static double secs(int64_t ns)
{
	return (double)ns / 1e9;
}

static int make_root(struct mapper *x)
{
	struct tl_model *m = &x->m;
	struct attrs l = {0};
	struct json_object *loss, *owner, *findings, *rec;
	int64_t start = m->deletion_ns ? m->deletion_ns : m->ref_ns;
	size_t unique_failed = 0;
	const char *err_msg = NULL;
	char buf[96];
	int i;

	if (!start && tl_json_str(tl_json_object(x->doc, "recorder"), "recordingSince"))
		tl_time_parse(tl_json_str(tl_json_object(x->doc, "recorder"), "recordingSince"),
			      &start);
	i = span_new(x, R_ROOT, 0, "pod termination", "root", start, root_end(x, start), -1);
	if (i < 0)
		return i;
	attr_str(x->a, &l, "termline.reference", m->ref_what);
	attr_bool(x->a, &l, "termline.complete", m->complete);
	if (!m->complete)
		attr_str(x->a, &l, "termline.incomplete_reason", m->incomplete_why);
	if (m->grace_s >= 0)
		attr_int(x->a, &l, "termline.grace_period_seconds", m->grace_s);
	for (size_t k = 0; k < m->n_req; k++)
		if (m->reqs[k].failed && !m->reqs[k].dup)
			unique_failed++;
	attr_int(x->a, &l, "termline.requests", (int64_t)m->n_req);
	attr_int(x->a, &l, "termline.failed_requests", (int64_t)unique_failed);
	if (m->deletion_ns && m->removed_ns)
		attr_double(x->a, &l, "termline.endpoint_removed_after_seconds",
			    secs(m->removed_ns - m->deletion_ns));
	owner = tl_json_object(x->pod, "owner");
	attr_str(x->a, &l, "termline.owner.kind", tl_json_str(owner, "kind"));
	attr_str(x->a, &l, "termline.owner.name", tl_json_str(owner, "name"));
	loss = tl_json_object(x->doc, "loss");
	if (loss) {
		json_object_object_foreach(loss, key, val) {
			if (json_object_is_type(val, json_type_int))
				attr_int(x->a, &l, ar_attr_name(x->a, "termline.loss.", key),
					 json_object_get_int64(val));
		}
	}
	rec = tl_json_object(x->doc, "recorder");
	attr_str(x->a, &l, "termline.recorder.agent_version", tl_json_str(rec, "agentVersion"));
	attr_str(x->a, &l, "termline.recorder.kernel", tl_json_str(rec, "kernel"));
	findings = tl_json_array(x->doc, "findings");
	attr_int(x->a, &l, "termline.findings", findings ? (int64_t)json_object_array_length(findings) : 0);
	for (size_t k = 0; findings && k < json_object_array_length(findings); k++) {
		struct json_object *f = json_object_array_get_idx(findings, k);
		const char *sev = tl_json_str(f, "severity");

		if (sev && strcmp(sev, "error") == 0 && !err_msg)
			err_msg = tl_json_str(f, "summary");
	}
	if (!err_msg && unique_failed) {
		snprintf(buf, sizeof(buf), "%zu failed requests", unique_failed);
		err_msg = buf;
	}
	span_attrs(x, i, &l);
	span_status(x, i, err_msg != NULL, err_msg);
	return 0;
}

static int make_phases(struct mapper *x)
{
	struct tl_model *m = &x->m;
	int64_t root_end_ns = x->sp[0].end;
	bool sigkill = false;
	int i;

	for (size_t k = 0; k < m->n_ctr; k++)
		sigkill = sigkill || m->ctr[k].sigkill_ns;
	if (m->deletion_ns && m->grace_s >= 0) {
		struct attrs l = {0};

		i = span_new(x, R_GRACE, 0, "grace period", "grace", m->deletion_ns,
			     m->deletion_ns + (int64_t)m->grace_s * NS_PER_S, 0);
		if (i < 0)
			return i;
		attr_int(x->a, &l, "termline.grace_period_seconds", m->grace_s);
		attr_bool(x->a, &l, "termline.sigkill", sigkill);
		span_attrs(x, i, &l);
		span_status(x, i, sigkill, "the grace period ran out: SIGKILL");
	}
	for (size_t k = 0; k < m->n_ctr; k++) {
		const struct tl_ctr *c = &m->ctr[k];
		struct ctr_x *cx = &x->cx[k];
		int res = 1 + (int)k;
		char name[128], key[128];

		if (c->sandbox)
			continue;
		if (cx->prestop_ns) {
			struct attrs l = {0};
			int64_t end = c->sigterm_ns > cx->prestop_ns ? c->sigterm_ns
				    : cx->prestop_end_ns ? cx->prestop_end_ns
							 : cx->prestop_ns;

			snprintf(name, sizeof(name), "preStop %s", c->name);
			snprintf(key, sizeof(key), "prestop/%s", c->name);
			i = span_new(x, R_PRESTOP, res, name, key, cx->prestop_ns, end, 0);
			if (i < 0)
				return i;
			cx->prestop = i;
			attr_int(x->a, &l, "termline.pid", cx->prestop_pid);
			attr_str(x->a, &l, "termline.comm", cx->prestop_comm);
			attr_str(x->a, &l, "termline.filename", cx->prestop_file);
			span_attrs(x, i, &l);
		}
		if (c->sigterm_ns) {
			struct attrs l = {0};
			int64_t end = c->exit_ns >= c->sigterm_ns ? c->exit_ns
				    : c->sigkill_ns ? c->sigkill_ns
						    : root_end_ns;

			snprintf(name, sizeof(name), "SIGTERM → exit %s", c->name);
			snprintf(key, sizeof(key), "stop/%s", c->name);
			i = span_new(x, R_STOP, res, name, key, c->sigterm_ns, end, 0);
			if (i < 0)
				return i;
			cx->stop = i;
			attr_int(x->a, &l, "termline.pid", c->sigterm_pid);
			attr_str(x->a, &l, "termline.signal_result",
				 c->sigterm_ignored ? "ignored" : "delivered");
			attr_bool(x->a, &l, "termline.exited", c->exit_ns >= c->sigterm_ns);
			if (c->exit_ns >= c->sigterm_ns) {
				attr_int(x->a, &l, "termline.exit_code", c->exit_code);
				attr_int(x->a, &l, "termline.exit_signal", c->exit_signal);
			}
			attr_bool(x->a, &l, "termline.sigkill", c->sigkill_ns != 0);
			span_attrs(x, i, &l);
			span_status(x, i, c->sigkill_ns != 0,
				    c->sigterm_ignored ? "SIGTERM ignored; SIGKILL at the end of the grace period"
						       : "SIGKILL at the end of the grace period");
		}
		if (c->sigterm_ns && is_proxy(c)) {
			struct attrs l = {0};
			struct json_object *pc = tl_json_object(tl_json_object(x->pod, "istio"),
								"proxyConfig");
			struct json_object *v = tl_json_get(pc, "terminationDrainSeconds");
			int64_t end = c->listen_closed_ns >= c->sigterm_ns ? c->listen_closed_ns
				    : c->exit_ns >= c->sigterm_ns	   ? c->exit_ns
				    : c->sigkill_ns			   ? c->sigkill_ns
									   : root_end_ns;

			snprintf(name, sizeof(name), "proxy drain %s", c->name);
			snprintf(key, sizeof(key), "drain/%s", c->name);
			i = span_new(x, R_DRAIN, res, name, key, c->sigterm_ns, end, 0);
			if (i < 0)
				return i;
			cx->drain = i;
			if (v)
				attr_json(x->a, &l, "termline.istio.termination_drain_seconds", v);
			if (c->listen_closed_ns >= c->sigterm_ns)
				attr_int(x->a, &l, "termline.listen_closed_port", c->listen_closed_port);
			span_attrs(x, i, &l);
		}
	}
	return 0;
}

/* The preStop gate's waits (termline-wait): drain.wait_started up to its
 * drain.wait_ended. */
static int make_gates(struct mapper *x)
{
	size_t n = json_object_array_length(x->events);
	int open = -1;

	for (size_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(x->events, i);
		const char *type = tl_json_str(ev, "type");
		int64_t t = ev_time(ev);

		if (!type || !t)
			continue;
		if (strcmp(type, "drain.wait_started") == 0 && x->n_gates < MAX_GATES) {
			char key[32];
			int k;

			snprintf(key, sizeof(key), "gate/%zu", x->n_gates);
			k = span_new(x, R_GATE, 0, "preStop gate wait", key, t, x->sp[0].end, 0);
			if (k < 0)
				return k;
			x->gates[x->n_gates++] = k;
			open = k;
		} else if (strcmp(type, "drain.wait_ended") == 0 && open >= 0) {
			struct attrs l = {0};
			const char *outcome = tl_json_str(ev, "outcome");

			x->sp[open].end = t > x->sp[open].start ? t : x->sp[open].start;
			x->sp[open].s->end_time_unix_nano = (uint64_t)x->sp[open].end;
			json_object_object_foreach(ev, key, val) {
				if (strcmp(key, "time") && strcmp(key, "type") && strcmp(key, "source") &&
				    strcmp(key, "container"))
					attr_json(x->a, &l, ar_attr_name(x->a, "termline.", key), val);
			}
			span_attrs(x, open, &l);
			span_status(x, open, outcome && strcmp(outcome, "drained") != 0, outcome);
			open = -1;
		}
	}
	return 0;
}

/* ---- events ---- */

static bool within(const struct mapper *x, int i, int64_t t)
{
	return i >= 0 && t >= x->sp[i].start && t <= x->sp[i].end;
}

/* The span an event of the document lands on. */
static int span_for(const struct mapper *x, const char *type, int ci, int64_t t)
{
	if (strncmp(type, "drain.wait_", 11) == 0) {
		for (size_t g = 0; g < x->n_gates; g++)
			if (within(x, x->gates[g], t))
				return x->gates[g];
		return 0;
	}
	if (ci < 0)
		return 0;
	/* the most specific phase: the proxy's drain lies within its stop;
	 * SIGTERM itself, where the preStop ends, starts the stop */
	if (within(x, x->cx[ci].drain, t))
		return x->cx[ci].drain;
	if (within(x, x->cx[ci].stop, t))
		return x->cx[ci].stop;
	if (within(x, x->cx[ci].prestop, t))
		return x->cx[ci].prestop;
	return 0;
}

static void event_fields(struct mapper *x, struct attrs *l, struct json_object *ev)
{
	json_object_object_foreach(ev, key, val) {
		if (strcmp(key, "time") == 0 || strcmp(key, "type") == 0 ||
		    strcmp(key, "podUid") == 0 || strcmp(key, "containerId") == 0)
			continue;
		if (strcmp(key, "container") == 0) {
			attr_str(x->a, l, "k8s.container.name", json_object_get_string(val));
			continue;
		}
		attr_json(x->a, l, ar_attr_name(x->a, "termline.", key), val);
	}
}

static int add_log(struct mapper *x, int res, int span, int64_t t, const char *name, int sev,
		   const char *body, struct attrs *l)
{
	static const char *const sev_text[] = {[9] = "INFO", [13] = "WARN", [17] = "ERROR"};
	Otlp__LogRecord *r;
	Otlp__AnyValue *b;

	if (grow((void **)&x->lg, &x->cap_lg, x->n_lg, sizeof(*x->lg)) < 0)
		return -ENOMEM;
	r = ar_alloc(x->a, sizeof(*r));
	b = ar_alloc(x->a, sizeof(*b));
	if (!r || !b)
		return -ENOMEM;
	otlp__log_record__init(r);
	otlp__any_value__init(b);
	r->time_unix_nano = (uint64_t)(t > 0 ? t : 0);
	r->observed_time_unix_nano = r->time_unix_nano;
	r->severity_number = (Otlp__SeverityNumber)sev;
	r->severity_text = (char *)sev_text[sev];
	b->value_case = OTLP__ANY_VALUE__VALUE_STRING_VALUE;
	b->string_value = ar_str(x->a, body);
	r->body = b;
	r->event_name = ar_str(x->a, name);
	r->attributes = attrs_take(x->a, l, &r->n_attributes);
	r->dropped_attributes_count = l->dropped;
	r->trace_id = x->sp[span].s->trace_id;
	r->span_id = x->sp[span].s->span_id;
	r->flags = 0x01;
	x->lg[x->n_lg].r = r;
	x->lg[x->n_lg].res = res;
	x->n_lg++;
	if (res > 0)
		x->cx[res - 1].used = true;
	return 0;
}

static int event_severity(struct json_object *ev, const char *type, const struct tl_req *req)
{
	int64_t v = 0;
	const char *s;

	if (strcmp(type, "http.request") == 0)
		return req && req->failed ? 17 : 9;
	if (strncmp(type, "tcp.reset_", 10) == 0)
		return 13;
	if (strcmp(type, "process.signal") == 0 && (s = tl_json_str(ev, "signal")) &&
	    strcmp(s, "SIGKILL") == 0)
		return 13;
	if (strcmp(type, "container.terminated") == 0 && tl_json_int(ev, "exitCode", &v) && v)
		return 13;
	if (strcmp(type, "drain.wait_ended") == 0 && (s = tl_json_str(ev, "outcome")) &&
	    strcmp(s, "drained") != 0)
		return 13;
	if ((strcmp(type, "events.aggregated") == 0 || strcmp(type, "http.summary") == 0) &&
	    tl_json_int(ev, "failed", &v) && v)
		return 13;
	return 9;
}

/* "10.1.2.3:8080" or "[fd00::1]:80" into address and port. */
static bool split_hostport(const char *s, char *addr, size_t addrlen, int64_t *port)
{
	const char *colon;
	size_t n;
	char *end;
	long p;

	if (!s)
		return false;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || close[1] != ':')
			return false;
		s++;
		n = (size_t)(close - s);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return false;
		n = (size_t)(colon - s);
	}
	if (n == 0 || n >= addrlen)
		return false;
	p = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || p < 0 || p > 65535)
		return false;
	memcpy(addr, s, n);
	addr[n] = '\0';
	*port = p;
	return true;
}

static int hex2(const char *s)
{
	int v = 0;

	for (int i = 0; i < 2; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else
			return -1;
	}
	return v;
}

/* A W3C traceparent ("00-<trace id>-<parent id>-<flags>", lower-case hex;
 * a later version may append fields) as a link. NULL when malformed or
 * the ids are all zero (invalid by the specification). */
static Otlp__Span__Link *traceparent_link(struct mapper *x, const char *tp, const char *tracestate)
{
	Otlp__Span__Link *l;
	uint8_t *tid, *sid;
	int ver, fl;
	bool zt = true, zs = true;

	if (!tp || strlen(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' ||
	    (tp[55] != '\0' && tp[55] != '-'))
		return NULL;
	ver = hex2(tp);
	fl = hex2(tp + 53);
	if (ver < 0 || ver == 0xff || fl < 0 || (ver == 0 && tp[55] != '\0'))
		return NULL;
	l = ar_alloc(x->a, sizeof(*l));
	tid = ar_alloc(x->a, 16);
	sid = ar_alloc(x->a, 8);
	if (!l || !tid || !sid)
		return NULL;
	for (int i = 0; i < 16; i++) {
		int v = hex2(tp + 3 + 2 * i);

		if (v < 0)
			return NULL;
		tid[i] = (uint8_t)v;
		zt = zt && v == 0;
	}
	for (int i = 0; i < 8; i++) {
		int v = hex2(tp + 36 + 2 * i);

		if (v < 0)
			return NULL;
		sid[i] = (uint8_t)v;
		zs = zs && v == 0;
	}
	if (zt || zs)
		return NULL;
	otlp__span__link__init(l);
	l->trace_id = (ProtobufCBinaryData){16, tid};
	l->span_id = (ProtobufCBinaryData){8, sid};
	l->flags = (uint32_t)fl;
	if (tracestate)
		l->trace_state = ar_str(x->a, tracestate);
	return l;
}

/* http.request.method's well-known values (HTTP semantic conventions);
 * anything else is "_OTHER" with the original in method_original. */
static bool method_known(const char *m)
{
	static const char *const known[] = {"CONNECT", "DELETE", "GET",	  "HEAD", "OPTIONS",
					    "PATCH",   "POST",	 "PUT",	  "TRACE", "QUERY"};

	for (size_t i = 0; m && i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(m, known[i]) == 0)
			return true;
	return false;
}

static int request_span(struct mapper *x, size_t idx, struct json_object *ev, int ci,
			const struct tl_req *req)
{
	const char *method = tl_json_str(ev, "method"), *path = tl_json_str(ev, "path");
	const char *dir = tl_json_str(ev, "direction"), *id = tl_json_str(ev, "requestId");
	const char *flags = tl_json_str(ev, "responseFlags"), *error = tl_json_str(ev, "error");
	const char *proto = tl_json_str(ev, "protocol");
	bool inbound = !dir || strcmp(dir, "outbound") != 0;
	struct attrs l = {0};
	int64_t status = 0, grpc, start, end, port;
	char key[48], addr[64], msg[96], code[16];
	Otlp__Span__Link *link;
	bool failed, error_status;
	int i;

	start = req ? req->start_ns : ev_time(ev);
	end = req ? req->end_ns : start;
	snprintf(key, sizeof(key), "request/%zu", idx);
	i = span_new(x, R_REQUEST, ci >= 0 ? 1 + ci : 0,
		     method && method_known(method) ? method : "HTTP", key, start, end, 0);
	if (i < 0)
		return i;
	x->sp[i].s->kind = inbound ? OTLP__SPAN__SPAN_KIND__SPAN_KIND_SERVER
				   : OTLP__SPAN__SPAN_KIND__SPAN_KIND_CLIENT;
	if (method) {
		attr_str(x->a, &l, "http.request.method", method_known(method) ? method : "_OTHER");
		if (!method_known(method))
			attr_str(x->a, &l, "http.request.method_original", method);
	}
	if (path) {
		const char *q = strchr(path, '?');

		if (q) {
			attr_str(x->a, &l, "url.path", ar_strn(x->a, path, (size_t)(q - path)));
			attr_str(x->a, &l, "url.query", q + 1);
		} else {
			attr_str(x->a, &l, "url.path", path);
		}
	}
	tl_json_int(ev, "status", &status);
	if (status > 0)
		attr_int(x->a, &l, "http.response.status_code", status);
	if (id)
		attr_strs(x->a, &l, "http.request.header.x-request-id", &id, 1);
	if (split_hostport(tl_json_str(ev, "peer"), addr, sizeof(addr), &port)) {
		attr_str(x->a, &l, inbound ? "client.address" : "server.address", addr);
		attr_int(x->a, &l, inbound ? "client.port" : "server.port", port);
		attr_str(x->a, &l, "network.peer.address", addr);
		attr_int(x->a, &l, "network.peer.port", port);
	}
	if (proto) {
		attr_str(x->a, &l, "network.protocol.name", "http");
		if (strcmp(proto, "h2") == 0)
			attr_str(x->a, &l, "network.protocol.version", "2");
		else if (strncmp(proto, "http/", 5) == 0 || strncmp(proto, "HTTP/", 5) == 0)
			attr_str(x->a, &l, "network.protocol.version", proto + 5);
	}
	if (tl_json_int(ev, "grpcStatus", &grpc)) {
		attr_str(x->a, &l, "rpc.system", "grpc");
		attr_int(x->a, &l, "rpc.grpc.status_code", grpc);
	}
	/* Server spans: 5xx is an error, 4xx the client's (HTTP semantic
	 * conventions); a client span's 4xx is its own. */
	failed = req ? req->failed : tl_http_event_failed(ev);
	error_status = failed || status >= (inbound ? 500 : 400);
	if (status >= (inbound ? 500 : 400)) {
		snprintf(code, sizeof(code), "%d", (int)status);
		attr_str(x->a, &l, "error.type", code);
	} else if (status == 0) {
		attr_str(x->a, &l, "error.type", error ? error : "no_response");
	} else if (failed) {
		attr_str(x->a, &l, "error.type", flags ? flags : "_OTHER");
	}
	attr_str(x->a, &l, "termline.source", tl_json_str(ev, "source"));
	attr_str(x->a, &l, "termline.direction", dir);
	attr_str(x->a, &l, "termline.response_flags", flags && strcmp(flags, "-") ? flags : NULL);
	attr_str(x->a, &l, "termline.error", error);
	attr_bool(x->a, &l, "termline.failed", failed);
	if (req && req->dup)
		attr_bool(x->a, &l, "termline.duplicate", true);
	span_attrs(x, i, &l);
	if (status > 0)
		snprintf(msg, sizeof(msg), "%d%s%s", (int)status, flags && strcmp(flags, "-") ? " " : "",
			 flags && strcmp(flags, "-") ? flags : "");
	else
		snprintf(msg, sizeof(msg), "no response%s%s", error ? ": " : "", error ? error : "");
	span_status(x, i, error_status, msg);
	link = traceparent_link(x, tl_json_str(ev, "traceparent"), tl_json_str(ev, "tracestate"));
	if (link) {
		Otlp__Span__Link **ls = ar_alloc(x->a, sizeof(*ls));

		if (ls) {
			ls[0] = link;
			x->sp[i].s->links = ls;
			x->sp[i].s->n_links = 1;
			x->t->links++;
		}
	}
	x->t->request_spans++;
	return i;
}

static int map_events(struct mapper *x)
{
	size_t n = json_object_array_length(x->events), n_failed = 0, n_http = 0;
	size_t taken_failed = 0, taken_ok = 0, quota_ok;
	int r;

	for (size_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(x->events, i);
		const char *type = tl_json_str(ev, "type");
		const struct tl_req *req;

		if (!type || strcmp(type, "http.request") != 0)
			continue;
		n_http++;
		req = request_of(x, ev);
		if (req && req->failed)
			n_failed++;
	}
	if (n_failed > TL_OTLP_MAX_REQUEST_SPANS)
		n_failed = TL_OTLP_MAX_REQUEST_SPANS;
	quota_ok = TL_OTLP_MAX_REQUEST_SPANS - n_failed;

	for (size_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(x->events, i);
		const char *type = tl_json_str(ev, "type"), *cname = tl_json_str(ev, "container");
		int ci = tl_model_ctr(&x->m, cname);
		int64_t t = ev_time(ev);
		const struct tl_req *req = NULL;
		struct attrs l = {0};
		int span, res = ci >= 0 ? 1 + ci : 0;

		if (!type)
			continue;
		if (strcmp(type, "http.request") == 0) {
			bool take;

			req = request_of(x, ev);
			if (req && req->failed)
				take = taken_failed++ < TL_OTLP_MAX_REQUEST_SPANS;
			else
				take = taken_ok++ < quota_ok;
			if (!take) {
				x->t->requests_unexported++;
				span = 0;
			} else {
				span = request_span(x, i, ev, ci, req);
				if (span < 0)
					return span;
			}
		} else {
			Otlp__Span__Event *e = ar_alloc(x->a, sizeof(*e));

			span = span_for(x, type, ci, t);
			if (!e)
				return -ENOMEM;
			otlp__span__event__init(e);
			e->time_unix_nano = (uint64_t)(t > 0 ? t : 0);
			e->name = ar_str(x->a, type);
			event_fields(x, &l, ev);
			e->attributes = attrs_take(x->a, &l, &e->n_attributes);
			e->dropped_attributes_count = l.dropped;
			r = span_event(x, span, e);
			if (r < 0)
				return r;
		}
		if (x->o->logs) {
			struct attrs ll = {0};
			const char *body = json_object_to_json_string_ext(
				ev, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

			event_fields(x, &ll, ev);
			r = add_log(x, res, span, t, type, event_severity(ev, type, req), body, &ll);
			if (r < 0)
				return r;
		}
		if (x->a->err)
			return x->a->err;
	}
	return 0;
}

/* Findings: events on the root span at its end (a finding is about the
 * whole termination), with the recommendation and the numbers. */
static int map_findings(struct mapper *x)
{
	struct json_object *fs = tl_json_array(x->doc, "findings");
	int64_t t = x->sp[0].end;

	for (size_t k = 0; fs && k < json_object_array_length(fs); k++) {
		struct json_object *f = json_object_array_get_idx(fs, k), *rec, *nums, *ids;
		Otlp__Span__Event *e = ar_alloc(x->a, sizeof(*e));
		const char *sev = tl_json_str(f, "severity");
		struct attrs l = {0};
		int r;

		if (!e)
			return -ENOMEM;
		otlp__span__event__init(e);
		e->time_unix_nano = (uint64_t)(t > 0 ? t : 0);
		e->name = "termline.finding";
		attr_str(x->a, &l, "termline.finding.rule", tl_json_str(f, "rule"));
		attr_str(x->a, &l, "termline.finding.severity", sev);
		attr_str(x->a, &l, "termline.finding.summary", tl_json_str(f, "summary"));
		rec = tl_json_object(f, "recommendation");
		attr_str(x->a, &l, "termline.recommendation.setting", tl_json_str(rec, "setting"));
		attr_json(x->a, &l, "termline.recommendation.value", tl_json_get(rec, "value"));
		attr_str(x->a, &l, "termline.recommendation.formula", tl_json_str(rec, "formula"));
		if (tl_json_bool(f, "incomplete", false))
			attr_bool(x->a, &l, "termline.finding.incomplete", true);
		ids = tl_json_array(f, "requestIds");
		if (ids) {
			size_t n = json_object_array_length(ids);

			attr_int(x->a, &l, "termline.finding.request_count", (int64_t)n);
			if (n > TL_OTLP_MAX_IDS) {
				ids = NULL; /* only the count: the list is in the document */
			}
		}
		attr_json(x->a, &l, "termline.finding.request_ids", ids);
		nums = tl_json_object(f, "numbers");
		if (nums) {
			json_object_object_foreach(nums, key, val) {
				if (json_object_is_type(val, json_type_int) ||
				    json_object_is_type(val, json_type_double))
					attr_json(x->a, &l,
						  ar_attr_name(x->a, "termline.finding.numbers.", key), val);
			}
		}
		if (x->o->logs) {
			struct attrs ll = l; /* the same attributes, shared nodes */
			const char *body = json_object_to_json_string_ext(
				f, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

			r = add_log(x, 0, 0, t, "termline.finding",
				    sev && strcmp(sev, "error") == 0     ? 17
				    : sev && strcmp(sev, "warning") == 0 ? 13
									 : 9,
				    body, &ll);
			if (r < 0)
				return r;
		}
		e->attributes = attrs_take(x->a, &l, &e->n_attributes);
		e->dropped_attributes_count = l.dropped;
		r = span_event(x, 0, e);
		if (r < 0)
			return r;
	}
	return x->a->err;
}

/* ---- resources ---- */

static void workload_attrs(struct mapper *x, struct attrs *l)
{
	struct json_object *w = tl_json_object(x->pod, "workload");
	struct json_object *owner = tl_json_object(x->pod, "owner");
	const char *kind = tl_json_str(owner, "kind"), *name = tl_json_str(owner, "name");
	char dep[256];

	/* a workload the document names itself wins over the owner's guess */
	if (w && tl_json_str(w, "kind") && tl_json_str(w, "name")) {
		const char *wk = tl_json_str(w, "kind"), *wn = tl_json_str(w, "name");

		if (strcmp(wk, "Deployment") == 0)
			attr_str(x->a, l, "k8s.deployment.name", wn);
		else if (strcmp(wk, "StatefulSet") == 0)
			attr_str(x->a, l, "k8s.statefulset.name", wn);
		else if (strcmp(wk, "DaemonSet") == 0)
			attr_str(x->a, l, "k8s.daemonset.name", wn);
		else if (strcmp(wk, "CronJob") == 0)
			attr_str(x->a, l, "k8s.cronjob.name", wn);
	}
	if (!kind || !name)
		return;
	if (strcmp(kind, "ReplicaSet") == 0) {
		attr_str(x->a, l, "k8s.replicaset.name", name);
		if (tl_workload_deployment_of(name, dep, sizeof(dep)))
			attr_str(x->a, l, "k8s.deployment.name", dep);
	} else if (strcmp(kind, "StatefulSet") == 0) {
		attr_str(x->a, l, "k8s.statefulset.name", name);
	} else if (strcmp(kind, "DaemonSet") == 0) {
		attr_str(x->a, l, "k8s.daemonset.name", name);
	} else if (strcmp(kind, "Job") == 0) {
		attr_str(x->a, l, "k8s.job.name", name);
	}
}

static Otlp__Resource *make_resource(struct mapper *x, int ci)
{
	Otlp__Resource *r = ar_alloc(x->a, sizeof(*r));
	struct attrs l = {0};

	if (!r)
		return NULL;
	otlp__resource__init(r);
	attr_str(x->a, &l, "service.name", x->o->service_name ? x->o->service_name : "termline");
	attr_str(x->a, &l, "k8s.namespace.name", tl_json_str(x->pod, "namespace"));
	attr_str(x->a, &l, "k8s.pod.name", tl_json_str(x->pod, "name"));
	attr_str(x->a, &l, "k8s.pod.uid", x->uid);
	attr_str(x->a, &l, "k8s.node.name", tl_json_str(x->pod, "node"));
	workload_attrs(x, &l);
	if (ci >= 0) {
		const struct tl_ctr *c = &x->m.ctr[ci];

		attr_str(x->a, &l, "k8s.container.name", c->name);
		attr_str(x->a, &l, "container.id", container_id_of(x, c->name));
		attr_str(x->a, &l, "termline.container.role", c->role);
	}
	for (size_t i = 0; i < x->o->n_resource_attrs; i++)
		attr_str(x->a, &l, ar_str(x->a, x->o->resource_attrs[i].key),
			 x->o->resource_attrs[i].value);
	r->attributes = attrs_take(x->a, &l, &r->n_attributes);
	r->dropped_attributes_count = l.dropped;
	return r;
}

static Otlp__InstrumentationScope *make_scope(struct mapper *x)
{
	Otlp__InstrumentationScope *s = ar_alloc(x->a, sizeof(*s));

	if (!s)
		return NULL;
	otlp__instrumentation_scope__init(s);
	s->name = "termline";
	s->version = TERMLINE_VERSION;
	return s;
}

/* Groups spans and records by resource into the two requests. */
static int assemble(struct mapper *x)
{
	size_t n_res = 1 + x->m.n_ctr, n_rs = 0, n_rl = 0;
	Otlp__Resource **res = calloc(n_res, sizeof(*res));
	size_t *n_spans = calloc(n_res, sizeof(size_t)), *n_logs = calloc(n_res, sizeof(size_t));
	Otlp__InstrumentationScope *scope = make_scope(x);
	Otlp__ResourceSpans **rss;
	Otlp__ResourceLogs **rls;
	int r = -ENOMEM;

	if (!res || !n_spans || !n_logs || !scope)
		goto out;
	for (size_t i = 0; i < x->n_sp; i++) {
		struct span_b *b = &x->sp[i];

		n_spans[b->res]++;
		b->s->events = b->n_ev ? ar_alloc(x->a, b->n_ev * sizeof(*b->s->events)) : NULL;
		if (b->n_ev && !b->s->events)
			goto out;
		if (b->n_ev)
			memcpy(b->s->events, b->ev, b->n_ev * sizeof(*b->ev));
		b->s->n_events = b->n_ev;
		b->s->dropped_events_count = b->ev_dropped;
		x->t->span_events += (uint32_t)b->n_ev;
	}
	for (size_t i = 0; i < x->n_lg; i++)
		n_logs[x->lg[i].res]++;
	for (size_t k = 0; k < n_res; k++) {
		if (!n_spans[k] && !n_logs[k])
			continue;
		res[k] = make_resource(x, (int)k - 1);
		if (!res[k])
			goto out;
		n_rs += n_spans[k] != 0;
		n_rl += n_logs[k] != 0;
	}
	rss = n_rs ? ar_alloc(x->a, n_rs * sizeof(*rss)) : NULL;
	rls = n_rl ? ar_alloc(x->a, n_rl * sizeof(*rls)) : NULL;
	if ((n_rs && !rss) || (n_rl && !rls))
		goto out;
	n_rs = n_rl = 0;
	for (size_t k = 0; k < n_res; k++) {
		if (n_spans[k]) {
			Otlp__ResourceSpans *rs = ar_alloc(x->a, sizeof(*rs));
			Otlp__ScopeSpans *ss = ar_alloc(x->a, sizeof(*ss));
			Otlp__ScopeSpans **sss = ar_alloc(x->a, sizeof(*sss));
			Otlp__Span **spans = ar_alloc(x->a, n_spans[k] * sizeof(*spans));
			size_t j = 0;

			if (!rs || !ss || !sss || !spans)
				goto out;
			otlp__resource_spans__init(rs);
			otlp__scope_spans__init(ss);
			for (size_t i = 0; i < x->n_sp; i++)
				if (x->sp[i].res == (int)k)
					spans[j++] = x->sp[i].s;
			ss->scope = scope;
			ss->spans = spans;
			ss->n_spans = j;
			ss->schema_url = SCHEMA_URL;
			sss[0] = ss;
			rs->resource = res[k];
			rs->scope_spans = sss;
			rs->n_scope_spans = 1;
			rs->schema_url = SCHEMA_URL;
			rss[n_rs++] = rs;
		}
		if (n_logs[k]) {
			Otlp__ResourceLogs *rl = ar_alloc(x->a, sizeof(*rl));
			Otlp__ScopeLogs *sl = ar_alloc(x->a, sizeof(*sl));
			Otlp__ScopeLogs **sls = ar_alloc(x->a, sizeof(*sls));
			Otlp__LogRecord **recs = ar_alloc(x->a, n_logs[k] * sizeof(*recs));
			size_t j = 0;

			if (!rl || !sl || !sls || !recs)
				goto out;
			otlp__resource_logs__init(rl);
			otlp__scope_logs__init(sl);
			for (size_t i = 0; i < x->n_lg; i++)
				if (x->lg[i].res == (int)k)
					recs[j++] = x->lg[i].r;
			sl->scope = scope;
			sl->log_records = recs;
			sl->n_log_records = j;
			sl->schema_url = SCHEMA_URL;
			sls[0] = sl;
			rl->resource = res[k];
			rl->scope_logs = sls;
			rl->n_scope_logs = 1;
			rl->schema_url = SCHEMA_URL;
			rls[n_rl++] = rl;
		}
	}
	x->t->traces.resource_spans = rss;
	x->t->traces.n_resource_spans = n_rs;
	x->t->logs.resource_logs = rls;
	x->t->logs.n_resource_logs = n_rl;
	x->t->spans = (uint32_t)x->n_sp;
	x->t->log_records = (uint32_t)x->n_lg;
	r = x->a->err;
out:
	free(res);
	free(n_spans);
	free(n_logs);
	return r < 0 ? r : x->a->err;
}

int otlp_map(struct json_object *doc, const struct tl_otlp_encode_opts *o, struct otlp_tree *t)
{
	struct mapper x = {0};
	int r;

	otlp__export_trace_service_request__init(&t->traces);
	otlp__export_logs_service_request__init(&t->logs);
	x.t = t;
	x.a = &t->arena;
	x.o = o;
	x.doc = doc;
	x.events = tl_json_array(doc, "events");
	x.pod = tl_json_object(doc, "pod");
	x.uid = tl_json_str(x.pod, "uid");
	if (!x.events || !x.uid || !x.uid[0])
		return -EINVAL;
	tl_otlp_trace_id(x.uid, t->trace_id);
	r = tl_model_build(doc, &x.m);
	if (r < 0)
		goto out;
	for (size_t k = 0; k < TL_FINDINGS_MAX_CONTAINERS; k++)
		x.cx[k].prestop = x.cx[k].stop = x.cx[k].drain = -1;
	r = index_requests(&x);
	if (r < 0)
		goto out;
	find_prestops(&x);
	r = make_root(&x);
	if (r >= 0)
		r = make_phases(&x);
	if (r >= 0)
		r = make_gates(&x);
	if (r >= 0)
		r = map_events(&x);
	if (r >= 0)
		r = map_findings(&x);
	if (r >= 0)
		r = assemble(&x);
	if (r >= 0 && x.a->err)
		r = x.a->err;
out:
	for (size_t i = 0; i < x.n_sp; i++)
		free(x.sp[i].ev);
	free(x.sp);
	free(x.lg);
	free(x.req_by_src);
	tl_model_done(&x.m);
	return r;
}
