// SPDX-License-Identifier: Apache-2.0
/* HTTP/2 through a termination: connections the Pod closed without a
 * GOAWAY, streams a client opened above a GOAWAY's last-stream-id, streams
 * reset while the Pod drained. Read from the document's http.request
 * (protocol "h2"), http2.goaway, http2.rst_stream and http2.connection
 * events (docs/http-capture.md, "HTTP/2"); each finding names the calls it
 * cost by request ID and status, and the setting that would have avoided
 * them, with the formula (docs/findings.md). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "clock.h"
#include "findings-h2.h"
#include "json-util.h"

/* Calls named in a summary; all of them are in "calls" (up to the IDs'
 * cap) and their IDs in requestIds. */
#define CALLS_IN_SUMMARY 8

struct h2req {
	const char *id, *path, *error, *container, *direction, *peer;
	int64_t start_ns, end_ns;
	int64_t conn, stream;
	int status, grpc; /* grpc -1: none */
	bool after_goaway;
};

struct h2conn {
	const char *container, *direction, *peer, *end;
	int64_t end_ns, start_ns, conn, local_port;
	int64_t streams, open_at_end, goaways_sent, after_goaway, unknown;
};

struct h2frame {
	const char *container, *direction, *code, *conn_direction, *id, *path;
	int64_t t, conn, stream, last;
	int64_t code_num;
};

/* The stop of a container: when it stopped accepting (its listener
 * closed) or its process exited, whichever came first, from its SIGTERM
 * (or the reference) on. */
struct ctrstop {
	const char *name;
	int64_t sigterm_ns, stop_ns;
	const char *how; /* "stopped accepting", "exited" */
	int64_t sigterm_pid;
	int ports[16];
	int n_ports;
};

struct h2set {
	struct h2req *r;
	size_t n_r;
	struct h2conn *c;
	size_t n_c;
	struct h2frame *rst, *ga;
	size_t n_rst, n_ga;
	struct ctrstop cs[TL_FINDINGS_MAX_CONTAINERS];
	size_t n_cs;
	int64_t max_call_ns; /* the longest h2 call that completed */
};

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static int64_t num(struct json_object *ev, const char *key, int64_t dflt)
{
	int64_t v;

	return tl_json_int(ev, key, &v) ? v : dflt;
}

/* A time field (RFC 3339) in ns, 0 when absent or out of the bounds the
 * rules take (findings-model.c: after 1970, before 2200). */
static int64_t time_of(struct json_object *ev, const char *key)
{
	const char *s = tl_json_str(ev, key);
	int64_t t;

	if (!s || tl_time_parse(s, &t) < 0 || t <= 0 || t >= 7258118400000000000LL)
		return 0;
	return t;
}

static struct ctrstop *ctr_stop(struct h2set *s, const char *name)
{
	for (size_t i = 0; i < s->n_cs; i++)
		if (same(s->cs[i].name, name))
			return &s->cs[i];
	if (s->n_cs == TL_FINDINGS_MAX_CONTAINERS)
		return NULL;
	memset(&s->cs[s->n_cs], 0, sizeof(s->cs[0]));
	s->cs[s->n_cs].name = name;
	return &s->cs[s->n_cs++];
}

static void *grow(void *p, size_t n, size_t *cap, size_t size)
{
	void *q;

	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 16;
	q = realloc(p, *cap * size);
	if (!q)
		free(p);
	return q;
}

static void h2set_free(struct h2set *s)
{
	free(s->r);
	free(s->c);
	free(s->rst);
	free(s->ga);
	memset(s, 0, sizeof(*s));
}

static const char *grpc_name(int code)
{
	static const char *const names[] = {
	    "OK",
	    "CANCELLED",
	    "UNKNOWN",
	    "INVALID_ARGUMENT",
	    "DEADLINE_EXCEEDED",
	    "NOT_FOUND",
	    "ALREADY_EXISTS",
	    "PERMISSION_DENIED",
	    "RESOURCE_EXHAUSTED",
	    "FAILED_PRECONDITION",
	    "ABORTED",
	    "OUT_OF_RANGE",
	    "UNIMPLEMENTED",
	    "INTERNAL",
	    "UNAVAILABLE",
	    "DATA_LOSS",
	    "UNAUTHENTICATED",
	};

	return code >= 0 && code < (int)(sizeof(names) / sizeof(names[0])) ? names[code] : "CODE";
}

/* A call's outcome as the wire said it: gRPC's status when its trailers
 * came, else why the stream ended. */
static void call_status(const struct h2req *r, char *buf, size_t len)
{
	if (r->grpc >= 0)
		snprintf(buf, len, "%s", grpc_name(r->grpc));
	else if (r->error)
		snprintf(buf, len, "no status (%s)",
			 strcmp(r->error, "refused") == 0  ? "refused by GOAWAY"
			 : strcmp(r->error, "closed") == 0 ? "connection closed"
			 : strcmp(r->error, "reset") == 0  ? "reset"
							   : r->error);
	else if (r->status)
		snprintf(buf, len, "HTTP %d, no gRPC status", r->status);
	else
		snprintf(buf, len, "no response");
}

/* Did the call fail? The one rule of every count of failed requests
 * (findings-model.h): its gRPC status when it has one, else no response,
 * a 5xx or a stream that did not complete. */
static bool call_failed(const struct h2req *r)
{
	return tl_http_failed(r->status, r->grpc, NULL, r->error);
}

static int collect(const struct tl_model *m, struct h2set *s)
{
	struct json_object *events = tl_json_array(m->doc, "events");
	size_t cap_r = 0, cap_c = 0, cap_rst = 0, cap_ga = 0;

	memset(s, 0, sizeof(*s));
	for (size_t i = 0; events && i < json_object_array_length(events); i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);
		const char *type = tl_json_str(ev, "type"), *ctr = tl_json_str(ev, "container");
		int64_t t = tl_event_time(ev);
		struct ctrstop *cs;

		if (!type || !t)
			continue;
		if (strcmp(type, "http.request") == 0) {
			const char *proto = tl_json_str(ev, "protocol"),
				   *src = tl_json_str(ev, "source");
			struct h2req *r;

			if (!proto || strcmp(proto, "h2") != 0 || !src ||
			    strcmp(src, "kernel") != 0 || s->n_r >= TL_FINDINGS_MAX_REQUESTS)
				continue;
			if (!(s->r = grow(s->r, s->n_r, &cap_r, sizeof(*s->r))))
				return -ENOMEM;
			r = &s->r[s->n_r++];
			memset(r, 0, sizeof(*r));
			r->id = tl_json_str(ev, "requestId");
			r->path = tl_json_str(ev, "path");
			r->error = tl_json_str(ev, "error");
			r->container = ctr;
			r->direction = tl_json_str(ev, "direction");
			r->peer = tl_json_str(ev, "peer");
			r->start_ns = time_of(ev, "start");
			if (!r->start_ns)
				r->start_ns = t;
			r->end_ns = r->start_ns + (int64_t)(num(ev, "durationMs", 0) * 1000000);
			r->conn = num(ev, "conn", 0);
			r->stream = num(ev, "streamId", 0);
			r->status = (int)num(ev, "status", 0);
			r->grpc = (int)num(ev, "grpcStatus", -1);
			r->after_goaway = tl_json_bool(ev, "afterGoaway", false);
			if (!r->error && r->grpc >= 0 && !call_failed(r) &&
			    r->end_ns - r->start_ns > s->max_call_ns)
				s->max_call_ns = r->end_ns - r->start_ns;
		} else if (strcmp(type, "http2.connection") == 0) {
			struct h2conn *c;

			if (!(s->c = grow(s->c, s->n_c, &cap_c, sizeof(*s->c))))
				return -ENOMEM;
			c = &s->c[s->n_c++];
			memset(c, 0, sizeof(*c));
			c->container = ctr;
			c->direction = tl_json_str(ev, "direction");
			c->peer = tl_json_str(ev, "peer");
			c->end = tl_json_str(ev, "end");
			c->end_ns = t;
			c->start_ns = time_of(ev, "connStart");
			c->conn = num(ev, "conn", 0);
			c->local_port = num(ev, "localPort", 0);
			c->streams = num(ev, "streams", 0);
			c->open_at_end = num(ev, "streamsOpenAtEnd", 0);
			c->goaways_sent = num(ev, "goawaysSent", 0);
			c->after_goaway = num(ev, "streamsAfterGoaway", 0);
			c->unknown = num(ev, "streamsHeadersUnknown", 0);
		} else if (strcmp(type, "http2.rst_stream") == 0 ||
			   strcmp(type, "http2.goaway") == 0) {
			bool rst = type[6] == 'r';
			struct h2frame *f;

			if (rst) {
				if (!(s->rst = grow(s->rst, s->n_rst, &cap_rst, sizeof(*s->rst))))
					return -ENOMEM;
				f = &s->rst[s->n_rst++];
			} else {
				if (!(s->ga = grow(s->ga, s->n_ga, &cap_ga, sizeof(*s->ga))))
					return -ENOMEM;
				f = &s->ga[s->n_ga++];
			}
			memset(f, 0, sizeof(*f));
			f->container = ctr;
			f->t = t;
			f->direction = tl_json_str(ev, "direction");
			f->code = tl_json_str(ev, "errorName");
			f->code_num = num(ev, "errorCode", 0);
			f->conn_direction = tl_json_str(ev, "connDirection");
			f->conn = num(ev, "conn", 0);
			f->stream = num(ev, "streamId", 0);
			f->last = num(ev, "lastStreamId", 0);
			f->id = tl_json_str(ev, "requestId");
			f->path = tl_json_str(ev, "path");
		} else if (strcmp(type, "process.signal") == 0) {
			const char *sig = tl_json_str(ev, "signal");

			if (sig && strcmp(sig, "SIGTERM") == 0 && (cs = ctr_stop(s, ctr)) &&
			    !cs->sigterm_ns) {
				cs->sigterm_ns = t;
				cs->sigterm_pid = num(ev, "pid", 0);
			}
		} else if (strcmp(type, "socket.listen") == 0) {
			if ((cs = ctr_stop(s, ctr)) && cs->n_ports < 16)
				cs->ports[cs->n_ports++] = (int)num(ev, "port", 0);
		}
	}
	/* Second pass: each container's stop, from its SIGTERM (else the
	 * reference) on. */
	for (size_t i = 0; events && i < json_object_array_length(events); i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);
		const char *type = tl_json_str(ev, "type");
		int64_t t = tl_event_time(ev), from;
		struct ctrstop *cs;
		bool closed;

		if (!type || !t)
			continue;
		closed = strcmp(type, "socket.listen_closed") == 0;
		if (!closed && strcmp(type, "process.exit") != 0)
			continue;
		cs = ctr_stop(s, tl_json_str(ev, "container"));
		if (!cs)
			continue;
		from = cs->sigterm_ns ? cs->sigterm_ns : m->ref_ns;
		if (t < from || (cs->stop_ns && cs->stop_ns <= t))
			continue;
		/* an exit is the stop when it is the process SIGTERM named */
		if (!closed && cs->sigterm_pid && num(ev, "pid", 0) != cs->sigterm_pid)
			continue;
		cs->stop_ns = t;
		cs->how = closed ? "stopped accepting" : "exited";
	}
	return 0;
}

/* ---- building a finding ---- */

static int put(struct json_object *o, const char *k, struct json_object *v)
{
	if (!v)
		return json_object_object_add(o, k, NULL) < 0 ? -ENOMEM : 0;
	if (json_object_object_add(o, k, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static struct json_object *sec3(double v)
{
	char buf[48];

	if (!(fabs(v) < 1e12))
		v = 0;
	snprintf(buf, sizeof(buf), "%.3f", v);
	if (strcmp(buf, "-0.000") == 0)
		strcpy(buf, "0.000");
	return json_object_new_double_s(v, buf);
}

static double rel(const struct tl_model *m, int64_t t)
{
	return (double)(t - m->ref_ns) / 1e9;
}

struct fnd {
	struct json_object *f, *numbers, *ids, *calls;
	char summary[2048];
	size_t named;
};

static int fnd_new(struct fnd *b, const char *rule, const char *severity)
{
	memset(b, 0, sizeof(*b));
	b->f = json_object_new_object();
	b->numbers = json_object_new_object();
	b->ids = json_object_new_array();
	b->calls = json_object_new_array();
	if (!b->f || !b->numbers || !b->ids || !b->calls ||
	    put(b->f, "rule", json_object_new_string(rule)) < 0 ||
	    put(b->f, "severity", json_object_new_string(severity)) < 0) {
		json_object_put(b->f);
		json_object_put(b->numbers);
		json_object_put(b->ids);
		json_object_put(b->calls);
		memset(b, 0, sizeof(*b));
		return -ENOMEM;
	}
	return 0;
}

static void fnd_free(struct fnd *b)
{
	json_object_put(b->f);
	json_object_put(b->numbers);
	json_object_put(b->ids);
	json_object_put(b->calls);
	memset(b, 0, sizeof(*b));
}

static __attribute__((format(printf, 2, 3))) void say(struct fnd *b, const char *fmt, ...)
{
	size_t n = strlen(b->summary);
	va_list ap;

	if (n + 1 >= sizeof(b->summary))
		return;
	va_start(ap, fmt);
	vsnprintf(b->summary + n, sizeof(b->summary) - n, fmt, ap);
	va_end(ap);
}

/* A call into the finding: its ID in requestIds (once), its line in
 * calls, and the first few named in the summary ("ID (path) STATUS"). */
static int add_call(const struct tl_model *m, struct fnd *b, const struct h2req *r, const char *why)
{
	struct json_object *o;
	char st[64];

	call_status(r, st, sizeof(st));
	if (r->id) {
		for (size_t i = 0; i < json_object_array_length(b->ids); i++)
			if (strcmp(json_object_get_string(json_object_array_get_idx(b->ids, i)),
				   r->id) == 0)
				return 0; /* the other leg of the same call */
		if (json_object_array_length(b->ids) < TL_FINDINGS_MAX_IDS &&
		    json_object_array_add(b->ids, json_object_new_string(r->id)) < 0)
			return -ENOMEM;
	}
	if (json_object_array_length(b->calls) >= TL_FINDINGS_MAX_IDS)
		return 0;
	o = json_object_new_object();
	if (!o || put(o, "requestId", r->id ? json_object_new_string(r->id) : NULL) < 0 ||
	    put(o, "path", r->path ? json_object_new_string(r->path) : NULL) < 0 ||
	    put(o, "direction", r->direction ? json_object_new_string(r->direction) : NULL) < 0 ||
	    put(o, "conn", json_object_new_int64(r->conn)) < 0 ||
	    put(o, "streamId", json_object_new_int64(r->stream)) < 0 ||
	    put(o, "grpcStatus", r->grpc >= 0 ? json_object_new_int(r->grpc) : NULL) < 0 ||
	    put(o, "status", json_object_new_int(r->status)) < 0 ||
	    put(o, "outcome", json_object_new_string(st)) < 0 ||
	    put(o, "startS", sec3(rel(m, r->start_ns))) < 0 ||
	    put(o, "endS", sec3(rel(m, r->end_ns))) < 0 ||
	    (why && put(o, "why", json_object_new_string(why)) < 0) ||
	    json_object_array_add(b->calls, o) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	if (b->named < CALLS_IN_SUMMARY)
		say(b, "%s%s (%s) %s", b->named ? ", " : "", r->id ? r->id : "(no request ID)",
		    r->path ? r->path : "?", st);
	else if (b->named == CALLS_IN_SUMMARY)
		say(b, ", …");
	b->named++;
	return 0;
}

static int reco(struct fnd *b, const char *setting, struct json_object *value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int reco(struct fnd *b, const char *setting, struct json_object *value, const char *fmt, ...)
{
	struct json_object *o = json_object_new_object();
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!o || !value || put(o, "setting", json_object_new_string(setting)) < 0 ||
	    put(o, "value", value) < 0 || put(o, "formula", json_object_new_string(buf)) < 0) {
		json_object_put(o);
		if (!o)
			json_object_put(value);
		return -ENOMEM;
	}
	return put(b->f, "recommendation", o);
}

static int fnd_emit(const struct tl_model *m, struct fnd *b, struct json_object *out)
{
	int r;

	if (!m->complete)
		say(b,
		    " Timeline incomplete (%s): events may be missing, so the figures are lower "
		    "bounds.",
		    m->incomplete_why);
	r = put(b->f, "summary", json_object_new_string(b->summary));
	if (r == 0 && !m->complete)
		r = put(b->f, "incomplete", json_object_new_boolean(1));
	r = r ?: put(b->f, "requestIds", json_object_get(b->ids));
	r = r ?: put(b->f, "numbers", json_object_get(b->numbers));
	r = r ?: put(b->f, "calls", json_object_get(b->calls));
	if (r == 0 && json_object_array_add(out, json_object_get(b->f)) < 0)
		r = -ENOMEM;
	fnd_free(b);
	return r;
}

static bool is_sidecar_name(const struct tl_model *m, const char *name)
{
	int i = tl_model_ctr(m, name);

	if (i >= 0 && m->ctr[i].role)
		return strcmp(m->ctr[i].role, "sidecar") == 0;
	return name && strcmp(name, "istio-proxy") == 0;
}

/* Is the connection one the container served (inbound), as the capture
 * said or, when it could not tell, by its local port being one the
 * container listened on? */
static bool served(const struct h2set *s, const struct h2conn *c)
{
	if (c->direction)
		return strcmp(c->direction, "inbound") == 0;
	for (size_t i = 0; i < s->n_cs; i++)
		if (same(s->cs[i].name, c->container))
			for (int k = 0; k < s->cs[i].n_ports; k++)
				if (s->cs[i].ports[k] == c->local_port)
					return true;
	return false;
}

static const struct ctrstop *stop_of(const struct h2set *s, const char *ctr)
{
	for (size_t i = 0; i < s->n_cs; i++)
		if (same(s->cs[i].name, ctr) && s->cs[i].stop_ns)
			return &s->cs[i];
	return NULL;
}

/* The drain a graceful stop needs: the longest call that completed, plus
 * the margin, in whole seconds (at least 1). */
static long drain_s(const struct h2set *s)
{
	double v = (double)s->max_call_ns / 1e9 + TL_FINDINGS_MARGIN_S;
	long n = (long)ceil(v - 1e-6);

	return n < 1 ? 1 : n;
}

/* ---- no_goaway_before_close ---- */

int tl_rule_h2_no_goaway(const struct tl_model *m, struct json_object *out)
{
	struct h2set s;
	struct fnd b;
	const struct ctrstop *st = NULL;
	const char *ctr = NULL;
	size_t n = 0, open = 0, failed = 0;
	int64_t first_end = 0, last_end = 0;
	int r;

	r = collect(m, &s);
	if (r < 0)
		goto done;
	for (size_t i = 0; i < s.n_c; i++) {
		const struct h2conn *c = &s.c[i];
		const struct ctrstop *cs = stop_of(&s, c->container);

		if (!cs || c->goaways_sent || !served(&s, c) || c->end_ns < cs->stop_ns ||
		    (c->start_ns && c->start_ns >= cs->stop_ns))
			continue;
		if (!st || cs->stop_ns < st->stop_ns) {
			st = cs;
			ctr = c->container;
		}
		n++;
		open += (size_t)c->open_at_end;
		if (!first_end || c->end_ns < first_end)
			first_end = c->end_ns;
		if (c->end_ns > last_end)
			last_end = c->end_ns;
	}
	if (!n)
		goto done;
	for (size_t i = 0; i < s.n_r; i++) {
		const struct h2req *q = &s.r[i];

		for (size_t k = 0; k < s.n_c; k++) {
			const struct h2conn *c = &s.c[k];
			const struct ctrstop *cs = stop_of(&s, c->container);

			if (c->conn == q->conn && same(c->container, q->container) && cs &&
			    !c->goaways_sent && served(&s, c) && c->end_ns >= cs->stop_ns &&
			    call_failed(q) && q->end_ns >= cs->stop_ns - 1000000) {
				failed++;
				break;
			}
		}
	}
	r = fnd_new(&b, "no_goaway_before_close", failed || open ? "error" : "warning");
	if (r < 0)
		goto done;
	say(&b,
	    "%s %s at %+.3f s with %zu HTTP/2 connection%s open and sent no GOAWAY on %s: they "
	    "ended %+.3f s",
	    ctr ? ctr : "the container", st->how, rel(m, st->stop_ns), n, n == 1 ? "" : "s",
	    n == 1 ? "it" : "them", rel(m, first_end));
	if (last_end != first_end)
		say(&b, "..%+.3f s", rel(m, last_end));
	say(&b, " with %zu stream%s still open", open, open == 1 ? "" : "s");
	if (failed)
		say(&b, "; calls cut: ");
	else
		say(&b, ".");
	for (size_t i = 0; i < s.n_r; i++) {
		const struct h2req *q = &s.r[i];

		for (size_t k = 0; k < s.n_c; k++) {
			const struct h2conn *c = &s.c[k];
			const struct ctrstop *cs = stop_of(&s, c->container);

			if (c->conn == q->conn && same(c->container, q->container) && cs &&
			    !c->goaways_sent && served(&s, c) && c->end_ns >= cs->stop_ns &&
			    call_failed(q) && q->end_ns >= cs->stop_ns - 1000000) {
				if ((r = add_call(m, &b, q,
						  "its connection ended without a GOAWAY")) < 0) {
					fnd_free(&b);
					goto done;
				}
				break;
			}
		}
	}
	if (failed)
		say(&b, ".");
	r = put(b.numbers, "connections", json_object_new_int64((int64_t)n));
	r = r ?: put(b.numbers, "streamsOpenAtEnd", json_object_new_int64((int64_t)open));
	r = r ?: put(b.numbers, "failedCalls", json_object_new_int64((int64_t)failed));
	r = r
		?: put(b.numbers, "failedRequests",
		       json_object_new_int64((int64_t)json_object_array_length(b.calls)));
	r = r ?: put(b.numbers, "stopS", sec3(rel(m, st->stop_ns)));
	r = r ?: put(b.numbers, "sigtermS", st->sigterm_ns ? sec3(rel(m, st->sigterm_ns)) : NULL);
	r = r ?: put(b.numbers, "firstConnectionEndS", sec3(rel(m, first_end)));
	r = r ?: put(b.numbers, "longestCallS", sec3((double)s.max_call_ns / 1e9));
	if (r == 0 && is_sidecar_name(m, ctr)) {
		r = reco(
		    &b,
		    "proxy drain (Istio: terminationDrainDuration, or "
		    "EXIT_ON_ZERO_ACTIVE_CONNECTIONS)",
		    json_object_new_int64(drain_s(&s)),
		    "the proxy closed %zu HTTP/2 connection%s without a GOAWAY when it %s at %+.3f "
		    "s; "
		    "a drain sends GOAWAY first and waits for in-flight streams: ceil(longest call "
		    "%.3f s + %.0f s margin) = %ld s",
		    n, n == 1 ? "" : "s", st->how, rel(m, st->stop_ns), (double)s.max_call_ns / 1e9,
		    TL_FINDINGS_MARGIN_S, drain_s(&s));
	} else if (r == 0) {
		char setting[320];

		snprintf(
		    setting, sizeof(setting),
		    "spec.containers[%s]: graceful HTTP/2 stop on SIGTERM (GOAWAY, then wait for "
		    "in-flight streams; gRPC: Server.GracefulStop / server.stop(grace)) before "
		    "exit",
		    ctr ? ctr : "?");
		r = reco(&b, setting, json_object_new_int64(drain_s(&s)),
			 "seconds of graceful stop: ceil(longest call served %.3f s + %.0f s "
			 "margin) = %ld s, "
			 "started at SIGTERM%s; terminationGracePeriodSeconds >= preStop + %ld s "
			 "(now %d)",
			 (double)s.max_call_ns / 1e9, TL_FINDINGS_MARGIN_S, drain_s(&s),
			 st->sigterm_ns ? "" : " (no SIGTERM recorded)", drain_s(&s), m->grace_s);
	}
	if (r < 0) {
		fnd_free(&b);
		goto done;
	}
	r = fnd_emit(m, &b, out);
done:
	h2set_free(&s);
	return r;
}

/* ---- streams_after_goaway ---- */

int tl_rule_h2_after_goaway(const struct tl_model *m, struct json_object *out)
{
	struct h2set s;
	struct fnd b;
	size_t n = 0, decoded = 0, in = 0;
	const struct h2frame *ga = NULL;
	int r;

	r = collect(m, &s);
	if (r < 0)
		goto done;
	for (size_t i = 0; i < s.n_r; i++)
		if (s.r[i].after_goaway)
			decoded++;
	for (size_t i = 0; i < s.n_c; i++)
		n += (size_t)s.c[i].after_goaway;
	/* connections that ended say how many of theirs (headers known or
	 * not); streams of others are counted from their requests */
	for (size_t i = 0; i < s.n_r; i++) {
		bool counted = false;

		if (!s.r[i].after_goaway)
			continue;
		for (size_t k = 0; k < s.n_c; k++)
			counted |=
			    s.c[k].conn == s.r[i].conn && same(s.c[k].container, s.r[i].container);
		if (!counted)
			n++;
	}
	if (!n)
		goto done;
	for (size_t i = 0; i < s.n_ga; i++) {
		for (size_t k = 0; k < s.n_r; k++)
			if (s.r[k].after_goaway && s.r[k].conn == s.ga[i].conn &&
			    same(s.r[k].container, s.ga[i].container) && (!ga || s.ga[i].t < ga->t))
				ga = &s.ga[i];
	}
	if (!ga)
		for (size_t i = 0; i < s.n_ga; i++)
			if (!ga || s.ga[i].t < ga->t)
				ga = &s.ga[i];
	r = fnd_new(&b, "streams_after_goaway", "error");
	if (r < 0)
		goto done;
	say(&b, "%zu HTTP/2 stream%s opened above the last-stream-id of a GOAWAY", n,
	    n == 1 ? " was" : "s were");
	if (ga)
		say(&b, " (%s %s at %+.3f s on connection %lld, last-stream-id %lld)",
		    ga->direction && strcmp(ga->direction, "sent") == 0 ? "sent by" : "received by",
		    ga->container ? ga->container : "the Pod", rel(m, ga->t), (long long)ga->conn,
		    (long long)ga->last);
	say(&b,
	    ": the peer kept using a connection it had been told to leave, and such streams are "
	    "never processed");
	if (decoded)
		say(&b, "; calls: ");
	for (size_t i = 0; i < s.n_r; i++) {
		if (!s.r[i].after_goaway)
			continue;
		if (s.r[i].direction && strcmp(s.r[i].direction, "inbound") == 0)
			in++;
		if ((r = add_call(m, &b, &s.r[i], "opened above the GOAWAY's last-stream-id")) <
		    0) {
			fnd_free(&b);
			goto done;
		}
	}
	say(&b, ".");
	r = put(b.numbers, "streams", json_object_new_int64((int64_t)n));
	r = r ?: put(b.numbers, "streamsWithHeaders", json_object_new_int64((int64_t)decoded));
	r = r
		?: put(b.numbers, "failedRequests",
		       json_object_new_int64((int64_t)json_object_array_length(b.calls)));
	r = r ?: put(b.numbers, "goawayS", ga ? sec3(rel(m, ga->t)) : NULL);
	r = r ?: put(b.numbers, "lastStreamId", ga ? json_object_new_int64(ga->last) : NULL);
	r = r
		?: reco(&b,
			"client: honour GOAWAY and retry REFUSED_STREAM on a new connection (gRPC: "
			"retryPolicy retryableStatusCodes [UNAVAILABLE])",
			json_object_new_string("retry streams above a GOAWAY's last-stream-id"),
			"RFC 9113 section 8.7: streams above the last-stream-id were not processed "
			"and are "
			"safe to retry; %zu stream%s here%s",
			n, n == 1 ? "" : "s",
			in ? " came from consumers of this Pod (their client or proxy needs it)"
			   : " were opened by this Pod's own client");
	if (r < 0) {
		fnd_free(&b);
		goto done;
	}
	r = fnd_emit(m, &b, out);
done:
	h2set_free(&s);
	return r;
}

/* ---- streams_reset_during_drain ---- */

struct codecount {
	char name[48];
	size_t n;
};

static void count_code(struct codecount *cc, size_t *ncc, const char *dir, const char *code)
{
	char key[48];

	snprintf(key, sizeof(key), "%s %s", code ? code : "UNKNOWN",
		 dir && strcmp(dir, "sent") == 0 ? "sent" : "received");
	for (size_t i = 0; i < *ncc; i++)
		if (strcmp(cc[i].name, key) == 0) {
			cc[i].n++;
			return;
		}
	if (*ncc == 16)
		return;
	snprintf(cc[*ncc].name, sizeof(cc[*ncc].name), "%s", key);
	cc[(*ncc)++].n = 1;
}

/* A call the rule names: it ended after the reference without
 * completing (error, unless its gRPC status came and was OK), or it failed
 * and a RST_STREAM of its stream followed
 * (a gRPC server cancelling its calls answers each with an error status,
 * then resets the stream: the RST_STREAM cannot name the call, the call
 * names it). */
static bool cut_call(const struct tl_model *m, const struct h2set *s, const struct h2req *q)
{
	if (q->end_ns < m->ref_ns)
		return false;
	/* a gRPC status says how the call ended: OK trailers, then the
	 * stream reset or its connection closed (a client that had not
	 * ended its side), is a call that completed */
	if (q->error)
		return q->grpc < 0 || call_failed(q);
	if (!call_failed(q) || !q->stream)
		return false;
	for (size_t i = 0; i < s->n_rst; i++)
		if (s->rst[i].stream == q->stream && s->rst[i].conn == q->conn &&
		    same(s->rst[i].container, q->container) && s->rst[i].t >= m->ref_ns)
			return true;
	return false;
}

int tl_rule_h2_reset(const struct tl_model *m, struct json_object *out)
{
	struct h2set s;
	struct fnd b;
	struct codecount cc[16];
	size_t ncc = 0, n_rst = 0, n_conn = 0, n_calls = 0, refused = 0, cancel_sent = 0,
	       unknown = 0, ended;
	const char *ctr = NULL, *ctr_served = NULL;
	struct json_object *codes = NULL;
	int64_t first = 0, last = 0;
	int r;

	if (!m->ref_ns)
		return 0;
	r = collect(m, &s);
	if (r < 0)
		goto done;
	for (size_t i = 0; i < s.n_rst; i++) {
		const struct h2frame *f = &s.rst[i];

		if (f->t < m->ref_ns)
			continue;
		n_rst++;
		count_code(cc, &ncc, f->direction, f->code);
		if (f->code && strcmp(f->code, "REFUSED_STREAM") == 0)
			refused++;
		if (f->direction && strcmp(f->direction, "sent") == 0 && f->code &&
		    (strcmp(f->code, "CANCEL") == 0 || strcmp(f->code, "INTERNAL_ERROR") == 0 ||
		     strcmp(f->code, "NO_ERROR") == 0))
			cancel_sent++;
		if (!first || f->t < first)
			first = f->t;
		if (f->t > last)
			last = f->t;
		if (!ctr)
			ctr = f->container;
	}
	for (size_t i = 0; i < s.n_r; i++) {
		const struct h2req *q = &s.r[i];

		if (!cut_call(m, &s, q))
			continue;
		n_calls++;
		if (q->error && (strcmp(q->error, "closed") == 0 || strcmp(q->error, "reset") == 0))
			n_conn++;
		if (q->error && strcmp(q->error, "refused") == 0)
			refused++;
		if (!first || q->end_ns < first)
			first = q->end_ns;
		if (q->end_ns > last)
			last = q->end_ns;
		/* whose stop it was: the server's side of a cut call first
		 * (its client's RST_STREAMs follow from it) */
		if (!ctr_served && q->direction && strcmp(q->direction, "inbound") == 0)
			ctr_served = q->container;
		if (!ctr)
			ctr = q->container;
	}
	if (ctr_served)
		ctr = ctr_served;
	/* streams a connection's end cut whose headers were never known:
	 * its open ones less the cut calls it has */
	for (size_t i = 0; i < s.n_c; i++) {
		int64_t cut = 0;

		if (s.c[i].end_ns < m->ref_ns || !s.c[i].open_at_end)
			continue;
		for (size_t k = 0; k < s.n_r; k++)
			if (s.r[k].conn == s.c[i].conn &&
			    same(s.r[k].container, s.c[i].container) && s.r[k].error &&
			    (strcmp(s.r[k].error, "closed") == 0 ||
			     strcmp(s.r[k].error, "reset") == 0))
				cut++;
		if (s.c[i].open_at_end > cut)
			unknown += (size_t)(s.c[i].open_at_end - cut);
	}
	if (!n_rst && !n_calls && !unknown)
		goto done;
	r = fnd_new(&b, "streams_reset_during_drain", n_calls || unknown ? "error" : "warning");
	if (r < 0)
		goto done;
	codes = json_object_new_object();
	if (!codes) {
		fnd_free(&b);
		r = -ENOMEM;
		goto done;
	}
	/* the streams: the calls (a reset of one is the same stream), else
	 * the RST_STREAMs */
	ended = n_calls + unknown + (n_calls ? 0 : n_rst);
	say(&b,
	    "After the %s, %zu HTTP/2 stream%s ended without completing between %+.3f s and %+.3f "
	    "s",
	    m->ref_what, ended, ended == 1 ? "" : "s", rel(m, first), rel(m, last));
	if (n_rst) {
		say(&b, "; RST_STREAM: ");
		for (size_t i = 0; i < ncc; i++) {
			say(&b, "%s%s x%zu", i ? ", " : "", cc[i].name, cc[i].n);
			if (put(codes, cc[i].name, json_object_new_int64((int64_t)cc[i].n)) < 0) {
				json_object_put(codes);
				fnd_free(&b);
				r = -ENOMEM;
				goto done;
			}
		}
	}
	if (n_conn)
		say(&b, "; %zu with their connection (closed or reset under them)", n_conn);
	if (unknown)
		say(&b, "; %zu on connections first seen mid-stream (headers unknown)", unknown);
	if (n_calls)
		say(&b, "; calls: ");
	for (size_t i = 0; i < s.n_r; i++) {
		const struct h2req *q = &s.r[i];

		if (!cut_call(m, &s, q))
			continue;
		if ((r = add_call(m, &b, q, q->error ? NULL : "its stream was reset")) < 0) {
			json_object_put(codes);
			fnd_free(&b);
			goto done;
		}
	}
	say(&b, ".");
	r = put(b.numbers, "rstStreams", json_object_new_int64((int64_t)n_rst));
	r = r ?: put(b.numbers, "rstStreamsByCode", codes);
	r = r ?: put(b.numbers, "callsCut", json_object_new_int64((int64_t)n_calls));
	r = r ?: put(b.numbers, "callsCutWithConnection", json_object_new_int64((int64_t)n_conn));
	r = r
		?: put(b.numbers, "failedRequests",
		       json_object_new_int64((int64_t)json_object_array_length(b.calls)));
	r = r ?: put(b.numbers, "streamsUnknownOpenAtEnd", json_object_new_int64((int64_t)unknown));
	r = r ?: put(b.numbers, "refused", json_object_new_int64((int64_t)refused));
	r = r ?: put(b.numbers, "firstS", sec3(rel(m, first)));
	r = r ?: put(b.numbers, "lastS", sec3(rel(m, last)));
	r = r ?: put(b.numbers, "longestCallS", sec3((double)s.max_call_ns / 1e9));
	if (r < 0) {
		fnd_free(&b);
		goto done;
	}
	/* The setting by what reset most: the server's stop, the proxy's
	 * drain, or the client's retry of refused streams. */
	if (refused && refused >= n_conn + cancel_sent)
		r = reco(
		    &b,
		    "client retry of REFUSED_STREAM (gRPC: retryPolicy retryableStatusCodes "
		    "[UNAVAILABLE])",
		    json_object_new_string("retry refused streams on a new connection"),
		    "%zu stream%s refused (RST_STREAM REFUSED_STREAM or above a GOAWAY's "
		    "last-stream-id) were never processed: RFC 9113 section 8.7 makes them safe to "
		    "retry",
		    refused, refused == 1 ? " was" : "s were");
	else if (is_sidecar_name(m, ctr))
		r = reco(&b,
			 "proxy drain (Istio: terminationDrainDuration, or "
			 "EXIT_ON_ZERO_ACTIVE_CONNECTIONS)",
			 json_object_new_int64(drain_s(&s)),
			 "the proxy ended %zu in-flight stream%s at its stop; a drain of "
			 "ceil(longest call "
			 "%.3f s + %.0f s margin) = %ld s lets them finish",
			 ended, ended == 1 ? "" : "s",
			 (double)s.max_call_ns / 1e9, TL_FINDINGS_MARGIN_S, drain_s(&s));
	else {
		char setting[320];

		snprintf(setting, sizeof(setting),
			 "spec.containers[%s]: graceful HTTP/2 stop on SIGTERM (gRPC: "
			 "Server.GracefulStop / server.stop(grace)) with a drain of",
			 ctr ? ctr : "?");
		r = reco(&b, setting, json_object_new_int64(drain_s(&s)),
			 "%zu stream%s ended with the server's stop (%zu with its connection, %zu "
			 "reset by "
			 "it); a graceful stop of ceil(longest call %.3f s + %.0f s margin) = %ld "
			 "s lets "
			 "them finish; terminationGracePeriodSeconds >= preStop + %ld s (now %d)",
			 ended, ended == 1 ? "" : "s", n_conn, cancel_sent,
			 (double)s.max_call_ns / 1e9, TL_FINDINGS_MARGIN_S, drain_s(&s),
			 drain_s(&s), m->grace_s);
	}
	if (r < 0) {
		fnd_free(&b);
		goto done;
	}
	r = fnd_emit(m, &b, out);
done:
	h2set_free(&s);
	return r;
}
