// SPDX-License-Identifier: Apache-2.0
/* A timeline document read into the few facts the rules need: per
 * container its signals, listener and exit; the endpoint's way out of the
 * slices; the HTTP requests. Strings are borrowed from the document. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "clock.h"
#include "findings-model.h"
#include "json-util.h"

/* Unlike tl_json_int(), a number written with a fraction counts too
 * (truncated). */
static bool int_of(struct json_object *o, const char *key, int64_t *ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return false;
	if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
		return false;
	*ret = json_object_get_int64(v);
	return true;
}

/* The rules subtract any two times of a document. A hostile one may carry
 * year 1 and year 2262, whose difference in nanoseconds overflows int64: only
 * times after 1970 and before 2200 are taken, others read as absent (0). */
#define MODEL_MAX_NS 7258118400000000000LL /* 2200-01-01T00:00:00Z */

static bool model_time(const char *s, int64_t *ret_ns)
{
	int64_t ns;

	if (!s || tl_time_parse(s, &ns) < 0 || ns <= 0 || ns >= MODEL_MAX_NS)
		return false;
	*ret_ns = ns;
	return true;
}

int64_t tl_event_time(struct json_object *ev)
{
	int64_t ns;

	return model_time(tl_json_str(ev, "time"), &ns) ? ns : 0;
}

int tl_model_ctr(const struct tl_model *m, const char *name)
{
	if (!name)
		return -1;
	for (size_t i = 0; i < m->n_ctr; i++)
		if (strcmp(m->ctr[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* Envoy %RESPONSE_FLAGS% that mean the request failed in the proxy
 * (docs/findings.md, "failed request"). */
static bool flags_failed(const char *f)
{
	static const char *const bad[] = {"UF", "UC", "URX", "UH", "LR", "DC", "UO", "NR", "UT"};
	char buf[64];
	char *save = NULL;

	if (!f || !*f || strcmp(f, "-") == 0 || strlen(f) >= sizeof(buf))
		return false;
	strcpy(buf, f);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			if (strcmp(tok, bad[i]) == 0)
				return true;
	return false;
}

bool tl_http_failed(int status, int grpc, const char *flags, const char *error)
{
	if (flags_failed(flags))
		return true;
	if (grpc >= 0)
		return grpc != 0;
	return status == 0 || status >= 500 || (error && *error);
}

bool tl_http_event_failed(struct json_object *ev)
{
	int64_t st = 0, grpc = -1;

	if (!int_of(ev, "status", &st) || st < 0 || st >= 1000)
		st = 0;
	if (!int_of(ev, "grpcStatus", &grpc) || grpc < 0 || grpc > INT32_MAX)
		grpc = -1;
	return tl_http_failed((int)st, (int)grpc, tl_json_str(ev, "responseFlags"),
			      tl_json_str(ev, "error"));
}

static int req_cmp(const void *a, const void *b)
{
	const struct tl_req *x = a, *y = b;

	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static void set_incomplete(struct tl_model *m, const char *why)
{
	size_t n = strlen(m->incomplete_why);

	if (n && n + 2 < sizeof(m->incomplete_why)) {
		strcat(m->incomplete_why, ", ");
		n += 2;
	}
	if (n < sizeof(m->incomplete_why))
		snprintf(m->incomplete_why + n, sizeof(m->incomplete_why) - n, "%s", why);
}

static void read_loss(struct tl_model *m)
{
	static const char *const keys[] = {"kernelEventsDropped", "eventsAggregated",
					   "eventsDropped", "diskErrors", "agentRestarts"};
	struct json_object *loss;
	char buf[64];

	if (!json_object_object_get_ex(m->doc, "loss", &loss))
		return;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		int64_t v = 0;

		if (int_of(loss, keys[i], &v) && v > 0) {
			snprintf(buf, sizeof(buf), "%s %lld", keys[i], (long long)v);
			set_incomplete(m, buf);
		}
	}
}

static int add_container(struct tl_model *m, const char *name, const char *role)
{
	struct tl_ctr *c;

	if (m->n_ctr >= TL_FINDINGS_MAX_CONTAINERS) {
		m->truncated = true;
		return -1;
	}
	c = &m->ctr[m->n_ctr];
	memset(c, 0, sizeof(*c));
	c->name = name ? name : "(unknown)";
	c->role = role;
	return (int)m->n_ctr++;
}

static void read_request(struct tl_model *m, struct json_object *ev, int64_t t, int ci)
{
	struct tl_req *r;
	const char *start, *dir;
	int64_t v;
	struct json_object *d;

	if (m->n_req >= TL_FINDINGS_MAX_REQUESTS) {
		m->truncated = true;
		return;
	}
	r = &m->reqs[m->n_req++];
	memset(r, 0, sizeof(*r));
	r->id = tl_json_str(ev, "requestId");
	r->method = tl_json_str(ev, "method");
	r->path = tl_json_str(ev, "path");
	r->flags = tl_json_str(ev, "responseFlags");
	r->container = tl_json_str(ev, "container");
	r->source = tl_json_str(ev, "source");
	r->ctr = ci;
	r->start_ns = t;
	start = tl_json_str(ev, "start");
	if (model_time(start, &v))
		r->start_ns = v;
	r->end_ns = r->start_ns;
	if (json_object_object_get_ex(ev, "durationMs", &d) &&
	    (json_object_is_type(d, json_type_double) || json_object_is_type(d, json_type_int))) {
		double ms = json_object_get_double(d);

		if (ms > 0 && ms < 1e9)
			r->end_ns = r->start_ns + (int64_t)(ms * 1e6);
	}
	/* An access log has millisecond times: its start is truncated and its
	 * duration whole milliseconds, so the request may have lasted up to
	 * TL_FINDINGS_LOG_RESOLUTION_NS past what the line says
	 * (docs/findings.md, boundaries). */
	if (r->source && strcmp(r->source, "log") == 0)
		r->slack_ns = TL_FINDINGS_LOG_RESOLUTION_NS;
	if (int_of(ev, "status", &v) && v >= 0 && v < 1000)
		r->status = (int)v;
	dir = tl_json_str(ev, "direction");
	r->inbound = !dir || strcmp(dir, "outbound") != 0;
	r->grpc = -1;
	if (int_of(ev, "grpcStatus", &v) && v >= 0 && v <= INT32_MAX)
		r->grpc = (int)v;
	r->error = tl_json_str(ev, "error");
	r->failed = tl_http_failed(r->status, r->grpc, r->flags, r->error);
	r->peer = tl_json_str(ev, "peer");
	if (int_of(ev, "conn", &v) && v > 0)
		r->conn = v;
	if (model_time(tl_json_str(ev, "connStart"), &v))
		r->conn_start_ns = v;
	r->conn_close = tl_json_bool(ev, "connClose", false);
	if (r->failed)
		m->n_failed++;
}

static void read_slices(struct tl_model *m, struct json_object *events, const int64_t *times,
			size_t n)
{
	/* The endpoint is out of service once it left every slice it was
	 * seen in: remember each slice's last word. */
	const char *names[64];
	int64_t removed[64];
	int ns = 0;

	for (size_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);
		const char *type = tl_json_str(ev, "type"), *slice = tl_json_str(ev, "endpointSlice");
		int64_t t = times[i];
		int k;

		if (!type || !slice || !t || strncmp(type, "endpoint.", 9) != 0)
			continue;
		for (k = 0; k < ns; k++)
			if (strcmp(names[k], slice) == 0)
				break;
		if (k == ns) {
			if (ns == 64)
				continue;
			names[ns] = slice;
			removed[ns++] = 0;
		}
		if (strcmp(type, "endpoint.removed") == 0) {
			removed[k] = t;
		} else if (strcmp(type, "endpoint.condition") == 0) {
			removed[k] = 0; /* back in the slice */
			if (!tl_json_bool(ev, "ready", true) && !m->ready_false_ns)
				m->ready_false_ns = t;
			if (!tl_json_bool(ev, "serving", true) && !m->serving_false_ns)
				m->serving_false_ns = t;
		}
	}
	m->slices_seen = ns;
	for (int k = 0; k < ns; k++) {
		if (!removed[k])
			continue;
		m->slices_removed++;
		if (removed[k] > m->removed_ns)
			m->removed_ns = removed[k];
	}
	if (m->slices_removed < ns)
		m->removed_ns = 0; /* still in some slice when the timeline ends */
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* Marks the failed requests whose ID an earlier (by start) failed request
 * has: one open-addressing table, linear in the requests. */
static int mark_dups(struct tl_model *m)
{
	size_t cap = 16;
	const char **tab;

	while (cap < m->n_failed * 2)
		cap <<= 1;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_req; i++) {
		struct tl_req *r = &m->reqs[i];
		size_t k;

		if (!r->failed || !r->id)
			continue;
		for (k = fnv1a(r->id) & (cap - 1); tab[k]; k = (k + 1) & (cap - 1))
			if (strcmp(tab[k], r->id) == 0)
				break;
		if (tab[k])
			r->dup = true;
		else
			tab[k] = r->id;
	}
	free(tab);
	return 0;
}

int tl_model_build(struct json_object *doc, struct tl_model *m)
{
	struct json_object *events, *ctrs, *pod, *v;
	size_t n, n_http = 0;
	int64_t grace, *times = NULL;
	int r;

	memset(m, 0, sizeof(*m));
	m->doc = doc;
	m->grace_s = -1;
	if (!doc || !json_object_object_get_ex(doc, "events", &events) ||
	    !json_object_is_type(events, json_type_array))
		return -EINVAL;
	n = json_object_array_length(events);
	m->complete = tl_json_bool(doc, "complete", false);
	if (!m->complete) {
		read_loss(m);
		if (!m->incomplete_why[0])
			set_incomplete(m, "the agent marked it incomplete");
	}
	if (json_object_object_get_ex(doc, "pod", &pod)) {
		m->ns = tl_json_str(pod, "namespace");
		m->name = tl_json_str(pod, "name");
		if (int_of(pod, "terminationGracePeriodSeconds", &grace) && grace >= 0 &&
		    grace < 1000000)
			m->grace_s = (int)grace;
	}
	if (json_object_object_get_ex(doc, "containers", &ctrs) &&
	    json_object_is_type(ctrs, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(ctrs); i++) {
			struct json_object *c = json_object_array_get_idx(ctrs, i);
			const char *name = tl_json_str(c, "name");

			if (name && tl_model_ctr(m, name) < 0)
				add_container(m, name, tl_json_str(c, "role"));
		}
	}
	for (size_t i = 0; i < n; i++) {
		const char *type = tl_json_str(json_object_array_get_idx(events, i), "type");

		if (type && strcmp(type, "http.request") == 0)
			n_http++;
	}
	if (n_http > TL_FINDINGS_MAX_REQUESTS)
		n_http = TL_FINDINGS_MAX_REQUESTS;
	if (n_http) {
		m->reqs = calloc(n_http, sizeof(*m->reqs));
		if (!m->reqs)
			return -ENOMEM;
	}
	/* each event's time, parsed once for the passes below */
	times = calloc(n ? n : 1, sizeof(*times));
	if (!times)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		times[i] = tl_event_time(json_object_array_get_idx(events, i));

	/* First pass: the reference (deletion) and the first SIGTERM. */
	for (size_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);
		const char *type = tl_json_str(ev, "type");
		int64_t t = times[i];

		if (!type || !t)
			continue;
		if (!m->first_ns || t < m->first_ns)
			m->first_ns = t;
		if (t > m->last_ns)
			m->last_ns = t;
		if (strcmp(type, "pod.deletion_requested") == 0 && !m->deletion_ns) {
			int64_t g;

			m->deletion_ns = t;
			if (int_of(ev, "gracePeriodSeconds", &g) && g >= 0 && g < 1000000)
				m->grace_s = (int)g;
		} else if (strcmp(type, "pod.deleted") == 0 && !m->deleted_ns) {
			m->deleted_ns = t;
		}
	}
	m->ref_ns = m->deletion_ns;
	m->ref_what = "deletion";

	for (size_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);
		const char *type = tl_json_str(ev, "type"), *cname = tl_json_str(ev, "container");
		int64_t t = times[i], pid = 0, port = 0;
		struct tl_ctr *c;
		int ci;

		if (!type || !t)
			continue;
		ci = tl_model_ctr(m, cname);
		if (cname && ci < 0)
			ci = add_container(m, cname, NULL);
		if (strcmp(type, "http.request") == 0) {
			read_request(m, ev, t, ci);
			continue;
		}
		if (ci < 0)
			continue;
		c = &m->ctr[ci];
		if (json_object_object_get_ex(ev, "sandbox", &v) && json_object_get_boolean(v))
			c->sandbox = true;
		int_of(ev, "pid", &pid);
		if (strcmp(type, "process.signal") == 0) {
			const char *sig = tl_json_str(ev, "signal"), *res = tl_json_str(ev, "result");

			if (!sig)
				continue;
			if (strcmp(sig, "SIGTERM") == 0 && !c->sigterm_ns) {
				c->sigterm_ns = t;
				c->sigterm_pid = (int)pid;
				c->sigterm_ignored = res && strcmp(res, "ignored") == 0;
			} else if (strcmp(sig, "SIGKILL") == 0 && !c->sigkill_ns &&
				   (!c->sigterm_pid || c->sigterm_pid == pid)) {
				c->sigkill_ns = t;
			}
		} else if (strcmp(type, "process.exit") == 0) {
			int64_t code = 0, sig = 0;

			/* Events are in time order: once SIGTERM named the main
			 * process, other exits (a preStop helper) are not the stop. */
			if (c->sigterm_pid && pid != c->sigterm_pid)
				continue;
			int_of(ev, "exitCode", &code);
			int_of(ev, "exitSignal", &sig);
			c->exit_ns = t;
			c->exit_code = (int)code;
			c->exit_signal = (int)sig;
		} else if (strcmp(type, "socket.listen") == 0) {
			if (!c->listen_ns) {
				c->listen_ns = t;
				if (int_of(ev, "port", &port))
					c->listen_port = (int)port;
			}
		}
	}
	if (!m->ref_ns) {
		for (size_t i = 0; i < m->n_ctr; i++)
			if (m->ctr[i].sigterm_ns &&
			    (!m->ref_ns || m->ctr[i].sigterm_ns < m->ref_ns))
				m->ref_ns = m->ctr[i].sigterm_ns;
		m->ref_what = "first SIGTERM";
	}
	if (!m->ref_ns) {
		m->ref_ns = m->first_ns;
		m->ref_what = "first event";
	}

	/* Second pass: what happened after the reference. */
	for (size_t i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);
		const char *type = tl_json_str(ev, "type");
		int64_t t = times[i], port = 0;
		int ci = tl_model_ctr(m, tl_json_str(ev, "container"));
		struct tl_ctr *c;

		if (!type || !t || ci < 0)
			continue;
		c = &m->ctr[ci];
		if (strcmp(type, "socket.listen_closed") == 0 && !c->listen_closed_ns &&
		    (t >= m->ref_ns || (c->sigterm_ns && t >= c->sigterm_ns))) {
			c->listen_closed_ns = t;
			if (int_of(ev, "port", &port))
				c->listen_closed_port = (int)port;
		} else if (strncmp(type, "tcp.reset_", 10) == 0 && t >= m->ref_ns) {
			c->resets++;
		}
	}
	/* A process exit before SIGTERM is not the container's stop. */
	for (size_t i = 0; i < m->n_ctr; i++)
		if (m->ctr[i].exit_ns && m->ctr[i].sigterm_ns &&
		    m->ctr[i].exit_ns < m->ctr[i].sigterm_ns)
			m->ctr[i].exit_ns = 0;

	read_slices(m, events, times, n);
	free(times);
	if (m->truncated)
		set_incomplete(m, "more containers or requests than the rules read");
	if (m->n_req)
		qsort(m->reqs, m->n_req, sizeof(*m->reqs), req_cmp);
	r = mark_dups(m);
	return r;
}

void tl_model_done(struct tl_model *m)
{
	if (!m)
		return;
	free(m->reqs);
	m->reqs = NULL;
	m->n_req = 0;
}

uint64_t tl_model_failed_requests(const struct tl_model *m)
{
	uint64_t n = 0;

	for (size_t i = 0; i < m->n_req; i++)
		n += tl_req_failed_once(&m->reqs[i]);
	return n;
}

int tl_findings_failed_requests(struct json_object *doc, uint64_t *ret)
{
	struct tl_model m;
	int r = tl_model_build(doc, &m);

	if (r == 0)
		*ret = tl_model_failed_requests(&m);
	tl_model_done(&m);
	return r;
}
