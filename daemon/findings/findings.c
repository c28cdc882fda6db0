// SPDX-License-Identifier: Apache-2.0
/* The finding rules over a timeline (findings-model.c). Each rule says what
 * happened with its numbers and request IDs, and the setting that would
 * have avoided it, with the formula: docs/findings.md. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "findings.h"
#include "findings-consumers.h"
#include "findings-h2.h"

const char *const TL_FINDING_RULES[] = {
    "requests_after_listener_closed",
    "requests_after_sidecar_exit",
    "traffic_before_ready",
    "sigterm_ignored",
    "sigkill_after_grace",
    "exit_order",
    "resets_during_drain",
    "endpoint_removal_lag",
    "traffic_after_endpoint_removed",
    "keepalive_across_drain",
    "no_goaway_before_close",
    "streams_after_goaway",
    "streams_reset_during_drain",
    NULL,
};

int tl_finding_severity_rank(const char *s)
{
	if (!s)
		return 0;
	if (strcmp(s, "error") == 0)
		return 3;
	if (strcmp(s, "warning") == 0)
		return 2;
	if (strcmp(s, "info") == 0)
		return 1;
	return 0;
}

/* ---- building one finding ---- */

struct fb {
	struct json_object *f, *numbers, *ids;
};

static double rel(const struct tl_model *m, int64_t t)
{
	return (double)(t - m->ref_ns) / 1e9;
}

/* Seconds, rounded up, with a guard against float noise (2.0000001 s of
 * a 2 s window is 2 s). */
static long ceil_s(double s)
{
	long v;

	/* Document times are bounded (findings-model.c), so this is a guard
	 * against NaN and a cast out of range, not a reachable value. */
	if (!(s < 1e12))
		return 1000000000000L;
	v = (long)ceil(s - 1e-6);

	return v < 0 ? 0 : v;
}

static int put_num(struct json_object *o, const char *key, double v)
{
	char buf[48];
	struct json_object *d;

	snprintf(buf, sizeof(buf), "%.3f", v);
	if (strcmp(buf, "-0.000") == 0)
		strcpy(buf, "0.000");
	d = json_object_new_double_s(v, buf);
	if (!d || json_object_object_add(o, key, d) < 0) {
		json_object_put(d);
		return -ENOMEM;
	}
	return 0;
}

static int put_int(struct json_object *o, const char *key, int64_t v)
{
	struct json_object *i = json_object_new_int64(v);

	if (!i || json_object_object_add(o, key, i) < 0) {
		json_object_put(i);
		return -ENOMEM;
	}
	return 0;
}

static int put_str(struct json_object *o, const char *key, const char *v)
{
	struct json_object *s = v ? json_object_new_string(v) : NULL;

	if ((v && !s) || json_object_object_add(o, key, s) < 0) {
		json_object_put(s);
		return -ENOMEM;
	}
	return 0;
}

/* A time as seconds from the reference, or null when it was not recorded. */
static int put_time(const struct tl_model *m, struct json_object *o, const char *key, int64_t t)
{
	if (!t)
		return json_object_object_add(o, key, NULL) < 0 ? -ENOMEM : 0;
	return put_num(o, key, rel(m, t));
}

static int fb_new(struct fb *b, const char *rule, const char *severity)
{
	memset(b, 0, sizeof(*b));
	b->f = json_object_new_object();
	b->numbers = json_object_new_object();
	b->ids = json_object_new_array();
	if (!b->f || !b->numbers || !b->ids)
		goto fail;
	if (put_str(b->f, "rule", rule) < 0 || put_str(b->f, "severity", severity) < 0)
		goto fail;
	return 0;
fail:
	json_object_put(b->f);
	json_object_put(b->numbers);
	json_object_put(b->ids);
	memset(b, 0, sizeof(*b));
	return -ENOMEM;
}

static void fb_free(struct fb *b)
{
	json_object_put(b->f);
	json_object_put(b->numbers);
	json_object_put(b->ids);
	memset(b, 0, sizeof(*b));
}

/* Adds r's ID; returns 1 when added, 0 without ID or past the cap. */
static int fb_id(struct fb *b, const struct tl_req *r)
{
	struct json_object *s;

	/* IDs are unique here: the model marked repeated ones */
	if (!r->id || json_object_array_length(b->ids) >= TL_FINDINGS_MAX_IDS)
		return 0;
	s = json_object_new_string(r->id);
	if (!s || json_object_array_add(b->ids, s) < 0) {
		json_object_put(s);
		return -ENOMEM;
	}
	return 1;
}

static __attribute__((format(printf, 2, 3))) int fb_summary(struct fb *b, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return put_str(b->f, "summary", buf);
}

static __attribute__((format(printf, 4, 5))) int
fb_reco(struct fb *b, const char *setting, struct json_object *value, const char *fmt, ...)
{
	struct json_object *r = json_object_new_object();
	char buf[1024];
	va_list ap;

	if (!r || !value) {
		json_object_put(r);
		json_object_put(value);
		return -ENOMEM;
	}
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (put_str(r, "setting", setting) < 0 || json_object_object_add(r, "value", value) < 0) {
		json_object_put(r);
		return -ENOMEM;
	}
	value = NULL;
	if (put_str(r, "formula", buf) < 0 ||
	    json_object_object_add(b->f, "recommendation", r) < 0) {
		json_object_put(r);
		return -ENOMEM;
	}
	return 0;
}

/* The finished finding, in the order the schema lists its keys. */
static struct json_object *fb_done(const struct tl_model *m, struct fb *b)
{
	struct json_object *f = b->f, *s;

	if (!m->complete) {
		char buf[1400];

		json_object_object_get_ex(f, "summary", &s);
		snprintf(buf, sizeof(buf),
			 "%s Timeline incomplete (%s): events may be missing, so the figures are "
			 "lower bounds.",
			 s ? json_object_get_string(s) : "", m->incomplete_why);
		if (put_str(f, "summary", buf) < 0 ||
		    json_object_object_add(f, "incomplete", json_object_new_boolean(1)) < 0)
			goto fail;
	}
	if (json_object_object_add(f, "requestIds", b->ids) < 0)
		goto fail;
	b->ids = NULL;
	if (json_object_object_add(f, "numbers", b->numbers) < 0)
		goto fail;
	b->numbers = NULL;
	b->f = NULL;
	return f;
fail:
	b->f = f;
	fb_free(b);
	return NULL;
}

/* ---- shared facts ---- */

static bool is_sidecar(const struct tl_ctr *c)
{
	if (c->sandbox)
		return false;
	if (c->role)
		return strcmp(c->role, "sidecar") == 0;
	return strcmp(c->name, "istio-proxy") == 0;
}

static bool is_main(const struct tl_ctr *c)
{
	if (c->sandbox)
		return false;
	if (c->role)
		return strcmp(c->role, "main") == 0;
	return !is_sidecar(c) && strcmp(c->name, "(unknown)") != 0;
}

static int first_sidecar(const struct tl_model *m)
{
	for (size_t i = 0; i < m->n_ctr; i++)
		if (is_sidecar(&m->ctr[i]))
			return (int)i;
	return -1;
}

/* When the sidecar stopped accepting: its listener closed or it exited,
 * whichever came first. */
static int64_t stop_ns(const struct tl_ctr *c)
{
	int64_t t = c->listen_closed_ns;

	if (c->exit_ns && (!t || c->exit_ns < t))
		t = c->exit_ns;
	return t;
}

/* After t: started at or after t, or still in flight at t. A request that
 * ended exactly at t ended before it; a request from an access log may have
 * ended up to its slack later than the line says (docs/findings.md,
 * boundaries). */
static bool after(const struct tl_req *r, int64_t t)
{
	return r->start_ns >= t || r->end_ns + r->slack_ns > t;
}

static const char *ref_note(const struct tl_model *m)
{
	if (m->deletion_ns)
		return "";
	return m->ref_ns && strcmp(m->ref_what, "first SIGTERM") == 0
		   ? " (no deletion recorded: times are from the first SIGTERM)"
		   : " (no deletion or SIGTERM recorded: times are from the first event)";
}

/* The preStop delay that keeps container ci serving until nothing is sent
 * to it any more: from the reference to the endpoint's removal from every
 * slice (or to the last failed request, whichever is later, or when the
 * removal was not recorded), plus the margin. */
/* The preStop gate (termline-wait, docs/drain.md) next to the computed sleep:
 * it holds the container only until the endpoint is out of rotation and no
 * new connection or request came for --quiet, so its --timeout can be
 * generous without slowing a rollout. The timeout covers the sleep it
 * replaces twice over (at least 10 s more), so a slower removal than this
 * timeline's still fits; the grace period must hold the timeout plus the
 * container's own stop. */
#define GATE_QUIET_S 1
static int gate_reco(const struct tl_model *m, struct fb *b, const struct tl_ctr *c, long sleep_s)
{
	struct json_object *reco, *alt, *value;
	char cmd[128], formula[512], setting[256];
	long timeout = sleep_s * 2 > sleep_s + 10 ? sleep_s * 2 : sleep_s + 10;
	long need = timeout;

	if (!json_object_object_get_ex(b->f, "recommendation", &reco))
		return 0;
	if (c->sigterm_ns && c->exit_ns)
		need = ceil_s((double)timeout + (double)(c->exit_ns - c->sigterm_ns) / 1e9);
	snprintf(cmd, sizeof(cmd), "termline-wait --quiet %ds --timeout %lds", GATE_QUIET_S,
		 timeout);
	snprintf(formula, sizeof(formula),
		 "holds %s until its endpoint is out of rotation and nothing new arrived for %d s "
		 "(here about %ld s, as the sleep), at most max(2 x %ld s, %ld s + 10 s) = %ld s; "
		 "terminationGracePeriodSeconds >= %ld (now %d)",
		 c->name, GATE_QUIET_S, sleep_s, sleep_s, sleep_s, timeout,
		 need > m->grace_s ? need : (long)m->grace_s, m->grace_s);
	alt = json_object_new_object();
	value = json_object_new_string(cmd);
	if (!alt || !value) {
		json_object_put(alt);
		json_object_put(value);
		return -ENOMEM;
	}
	snprintf(setting, sizeof(setting), "spec.containers[%s].lifecycle.preStop.exec.command",
		 c->name);
	if (put_str(alt, "setting", setting) < 0 ||
	    json_object_object_add(alt, "value", value) < 0) {
		json_object_put(alt);
		return -ENOMEM;
	}
	if (put_str(alt, "formula", formula) < 0 ||
	    json_object_object_add(reco, "gate", alt) < 0) {
		json_object_put(alt);
		return -ENOMEM;
	}
	return 0;
}

/* The sleep keeps c serving sleep_s, then until it stops listening after
 * its SIGTERM; a sidecar that got SIGTERM at the deletion stops accepting
 * after its own drain. When that drain, as observed, is not longer by the
 * margin, the sleep alone would leave c serving without its proxy
 * (exit_order): the recommendation says what keeps the proxy that long
 * (docs/findings.md). */
static int sidecar_reco(const struct tl_model *m, struct fb *b, const struct tl_ctr *c,
			long sleep_s)
{
	struct json_object *reco, *alt;
	int si = first_sidecar(m);
	const struct tl_ctr *s = si >= 0 ? &m->ctr[si] : NULL;
	int64_t s_stop = s ? stop_ns(s) : 0, c_stop = stop_ns(c);
	char setting[256], formula[512];
	double serve, drain;
	long keep, grace;

	if (!s || s == c || !s->sigterm_ns || !c->sigterm_ns || s_stop < s->sigterm_ns ||
	    !json_object_object_get_ex(b->f, "recommendation", &reco))
		return 0;
	/* c serves until it stops accepting after its SIGTERM (stop_ns) */
	serve = c_stop > c->sigterm_ns ? (double)(c_stop - c->sigterm_ns) / 1e9 : 0;
	drain = (double)(s_stop - s->sigterm_ns) / 1e9;
	if (drain >= (double)sleep_s + serve + TL_FINDINGS_HOOK_SLACK_S)
		return 0;
	keep = ceil_s((double)sleep_s + serve + TL_FINDINGS_MARGIN_S);
	/* the proxy exits after its drain: the grace period outlasts both */
	grace = ceil_s((double)keep + TL_FINDINGS_MARGIN_S);
	if (grace < m->grace_s)
		grace = m->grace_s;
	snprintf(setting, sizeof(setting),
		 "%s as a native sidecar (initContainers[].restartPolicy: Always), else its drain "
		 "(proxy.istio.io/config terminationDrainDuration) in seconds",
		 s->name);
	snprintf(formula, sizeof(formula),
		 "%s stopped accepting %.3f s after its SIGTERM, before %s's %ld s sleep and its "
		 "%.3f s from SIGTERM to no longer accepting end: ceil(%ld s + %.3f s + %.0f s "
		 "margin) = %ld s; terminationGracePeriodSeconds >= max(now, %ld s + %.0f s margin) "
		 "= %ld (now %d)",
		 s->name, drain, c->name, sleep_s, serve, sleep_s, serve, TL_FINDINGS_MARGIN_S, keep,
		 keep, TL_FINDINGS_MARGIN_S, grace, m->grace_s);
	alt = json_object_new_object();
	if (!alt || put_str(alt, "setting", setting) < 0 ||
	    json_object_object_add(alt, "value", json_object_new_int64(keep)) < 0 ||
	    put_str(alt, "formula", formula) < 0 || put_str(alt, "container", s->name) < 0 ||
	    json_object_object_add(alt, "terminationGracePeriodSeconds",
				   json_object_new_int64(grace)) < 0 ||
	    json_object_object_add(reco, "sidecar", alt) < 0) {
		json_object_put(alt);
		return -ENOMEM;
	}
	return 0;
}

static int prestop_reco(const struct tl_model *m, struct fb *b, const struct tl_ctr *c,
			int64_t last_fail_ns)
{
	int r;
	char setting[256];
	int64_t cover = m->removed_ns;
	const char *what = "the endpoint left every slice";
	double x;
	long v;

	char who[300], slowest[400];
	int64_t slow_ns = 0;

	if (!cover || (last_fail_ns && last_fail_ns > cover)) {
		if (last_fail_ns) {
			cover = last_fail_ns;
			what = m->removed_ns
				   ? "the last failed request (after the endpoint's removal)"
				   : "the last failed request (the endpoint's removal was not "
				     "recorded)";
		}
	}
	/* A consumer that kept sending after the removal sets the number
	 * when it came as late or later (findings-consumers.c): its last
	 * request is often the last failed one, and then it is the cause. */
	r = tl_consumers_slowest(m, &slow_ns, who, sizeof(who));
	if (r < 0)
		return r;
	if (r == 1 && slow_ns > m->removed_ns && slow_ns >= cover) {
		snprintf(slowest, sizeof(slowest),
			 "the last request of %s, the slowest consumer (%.3f s after the endpoint's "
			 "removal)",
			 who, (double)(slow_ns - m->removed_ns) / 1e9);
		cover = slow_ns;
		what = slowest;
		if (put_str(b->numbers, "slowestConsumer", who) < 0)
			return -ENOMEM;
	}
	if (!cover)
		return 0;
	x = rel(m, cover);
	v = ceil_s(x + TL_FINDINGS_MARGIN_S);
	snprintf(setting, sizeof(setting), "spec.containers[%s].lifecycle.preStop.sleep.seconds",
		 c->name);
	if (put_num(b->numbers, "coverUntilS", x) < 0)
		return -ENOMEM;
	if (m->grace_s >= 0 && c->sigterm_ns && c->exit_ns) {
		double stop = (double)(c->exit_ns - c->sigterm_ns) / 1e9;
		long need = ceil_s((double)v + stop);

		r = fb_reco(b, setting, json_object_new_int64(v),
			    "ceil((%s at %+.3f s) - (%s at 0) + %.0f s margin) = %ld s; then %s "
			    "stops in %.3f s, "
			    "so terminationGracePeriodSeconds >= %ld (now %d)",
			    what, x, m->ref_what, TL_FINDINGS_MARGIN_S, v, c->name, stop,
			    need > m->grace_s ? need : (long)m->grace_s, m->grace_s);
	} else {
		r = fb_reco(b, setting, json_object_new_int64(v),
			    "ceil((%s at %+.3f s) - (%s at 0) + %.0f s margin) = %ld s", what, x,
			    m->ref_what, TL_FINDINGS_MARGIN_S, v);
	}
	if (r >= 0)
		r = gate_reco(m, b, c, v);
	return r < 0 ? r : sidecar_reco(m, b, c, v);
}

/* Collects into b the failed requests matching pred; returns how many
 * (with or without ID) and their first start and last end. */
struct span {
	size_t n;
	int64_t first_ns, last_ns, last_start_ns;
};

typedef bool (*req_pred)(const struct tl_model *m, const struct tl_req *r, const void *arg);

static int collect(const struct tl_model *m, struct fb *b, req_pred pred, const void *arg,
		   struct span *sp)
{
	memset(sp, 0, sizeof(*sp));
	for (size_t i = 0; i < m->n_req; i++) {
		const struct tl_req *r = &m->reqs[i];
		int k;

		if (!tl_req_failed_once(r) || !pred(m, r, arg))
			continue;
		k = fb_id(b, r);
		if (k < 0)
			return k;
		sp->n++;
		if (!sp->first_ns || r->start_ns < sp->first_ns)
			sp->first_ns = r->start_ns;
		if (r->end_ns > sp->last_ns)
			sp->last_ns = r->end_ns;
		if (r->start_ns > sp->last_start_ns)
			sp->last_start_ns = r->start_ns;
	}
	return 0;
}

/* A rule's finding over the failed requests pred selects: 1 with b open
 * and sp filled when there is at least one, 0 when there is none (b is
 * not open), -ENOMEM. */
static int fb_collect(const struct tl_model *m, struct fb *b, const char *rule,
		      const char *severity, req_pred pred, const void *arg, struct span *sp)
{
	int r;

	if (fb_new(b, rule, severity) < 0)
		return -ENOMEM;
	r = collect(m, b, pred, arg, sp);
	if (r < 0 || sp->n == 0) {
		fb_free(b);
		return r;
	}
	return 1;
}

static int put_span(const struct tl_model *m, struct fb *b, const struct span *sp)
{
	if (put_int(b->numbers, "failedRequests", (int64_t)sp->n) < 0 ||
	    put_time(m, b->numbers, "firstFailedS", sp->first_ns) < 0 ||
	    put_time(m, b->numbers, "lastFailedS", sp->last_ns) < 0)
		return -ENOMEM;
	return 0;
}

/* ---- the rules; each returns 0 (finding or not) or -ENOMEM ---- */

typedef int (*rule_fn)(const struct tl_model *m, struct json_object *out);

static int emit(const struct tl_model *m, struct fb *b, struct json_object *out)
{
	struct json_object *f = fb_done(m, b);

	if (!f || json_object_array_add(out, f) < 0) {
		json_object_put(f);
		return -ENOMEM;
	}
	return 0;
}

struct lc_arg {
	int64_t t;
};

static bool inbound_after(const struct tl_model *m, const struct tl_req *r, const void *arg)
{
	(void)m;
	return r->inbound && after(r, ((const struct lc_arg *)arg)->t);
}

static int rule_listener_closed(const struct tl_model *m, struct json_object *out)
{
	for (size_t i = 0; i < m->n_ctr; i++) {
		const struct tl_ctr *c = &m->ctr[i];
		struct lc_arg a = {c->listen_closed_ns};
		struct json_object *by;
		char who[512] = "";
		struct span sp;
		struct fb b;
		int r;

		if (!is_main(c) || !c->listen_closed_ns)
			continue;
		r = fb_collect(m, &b, "requests_after_listener_closed", "error", inbound_after, &a,
			       &sp);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		/* who forwarded them: the container whose record it is (the
		 * proxy's access log), else the Service's clients */
		by = json_object_new_object();
		if (!by) {
			fb_free(&b);
			return -ENOMEM;
		}
		for (size_t k = 0; k < m->n_req; k++) {
			const struct tl_req *q = &m->reqs[k];
			const char *fwd =
			    q->ctr >= 0 && (size_t)q->ctr != i ? m->ctr[q->ctr].name : "clients";
			struct json_object *cnt;

			if (!tl_req_failed_once(q) || !inbound_after(m, q, &a))
				continue;
			if (json_object_object_get_ex(by, fwd, &cnt))
				json_object_int_inc(cnt, 1);
			else if (put_int(by, fwd, 1) < 0) {
				json_object_put(by);
				fb_free(&b);
				return -ENOMEM;
			}
		}
		json_object_object_foreach(by, k, v)
		{
			size_t n = strlen(who);

			snprintf(who + n, sizeof(who) - n, "%s%s %d", n ? ", " : "", k,
				 json_object_get_int(v));
		}
		if (json_object_object_add(b.numbers, "forwardedBy", by) < 0) {
			json_object_put(by);
			fb_free(&b);
			return -ENOMEM;
		}
		if (put_time(m, b.numbers, "listenerClosedS", c->listen_closed_ns) < 0 ||
		    put_int(b.numbers, "port", c->listen_closed_port) < 0 ||
		    put_span(m, &b, &sp) < 0 ||
		    put_time(m, b.numbers, "endpointRemovedS", m->removed_ns) < 0 ||
		    fb_summary(&b,
			       "%zu request%s reached %s after it closed its listener on :%d at "
			       "%+.3f s%s: "
			       "forwarded by %s, from %+.3f s to %+.3f s; the endpoint %s.",
			       sp.n, sp.n == 1 ? "" : "s", c->name, c->listen_closed_port,
			       rel(m, c->listen_closed_ns), ref_note(m), who, rel(m, sp.first_ns),
			       rel(m, sp.last_ns),
			       m->removed_ns ? "left every slice later"
					     : "was never seen leaving every slice") < 0 ||
		    prestop_reco(m, &b, c, sp.last_start_ns) < 0) {
			fb_free(&b);
			return -ENOMEM;
		}
		if (m->removed_ns) {
			char buf[1200];
			struct json_object *s;

			json_object_object_get_ex(b.f, "summary", &s);
			snprintf(buf, sizeof(buf), "%.*s left every slice at %+.3f s.",
				 (int)(strlen(json_object_get_string(s)) -
				       strlen(" left every slice later.")),
				 json_object_get_string(s), rel(m, m->removed_ns));
			if (put_str(b.f, "summary", buf) < 0) {
				fb_free(&b);
				return -ENOMEM;
			}
		}
		if ((r = emit(m, &b, out)) < 0)
			return r;
	}
	return 0;
}

/* A container's requests around a moment (its sidecar's stop, its kill). */
struct ctr_at {
	int ctr;
	int64_t t;
};

static bool outbound_of_after(const struct tl_model *m, const struct tl_req *r, const void *arg)
{
	const struct ctr_at *a = arg;

	(void)m;
	return !r->inbound && r->ctr == a->ctr && after(r, a->t);
}

/* The Pod's sidecar once it stopped accepting (*ret_stop); NULL without a
 * sidecar or with no stop recorded. */
static const struct tl_ctr *sidecar_stopped(const struct tl_model *m, int64_t *ret_stop)
{
	int si = first_sidecar(m);

	if (si < 0)
		return NULL;
	*ret_stop = stop_ns(&m->ctr[si]);
	return *ret_stop ? &m->ctr[si] : NULL;
}

static int rule_sidecar_exit(const struct tl_model *m, struct json_object *out)
{
	int64_t t_stop;
	const struct tl_ctr *s = sidecar_stopped(m, &t_stop);

	if (!s)
		return 0;
	for (size_t i = 0; i < m->n_ctr; i++) {
		const struct tl_ctr *c = &m->ctr[i];
		struct ctr_at a = {(int)i, t_stop};
		char setting[256];
		struct span sp;
		struct fb b;
		double need;
		long v;
		int r;

		if (!is_main(c))
			continue;
		r = fb_collect(m, &b, "requests_after_sidecar_exit", "error", outbound_of_after, &a,
			       &sp);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		/* the proxy must outlive the main container's stop */
		need =
		    c->exit_ns && c->sigterm_ns
			? (double)(c->exit_ns - c->sigterm_ns) / 1e9
			: (double)(sp.last_ns - (s->sigterm_ns ? s->sigterm_ns : m->ref_ns)) / 1e9;
		v = ceil_s(need + TL_FINDINGS_MARGIN_S);
		snprintf(setting, sizeof(setting),
			 "%s as a native sidecar (initContainers[].restartPolicy: Always), else "
			 "its drain "
			 "(proxy.istio.io/config terminationDrainDuration) in seconds",
			 s->name);
		if (put_time(m, b.numbers, "sidecarStoppedS", t_stop) < 0 ||
		    put_time(m, b.numbers, "sidecarSigtermS", s->sigterm_ns) < 0 ||
		    put_time(m, b.numbers, "mainExitS", c->exit_ns) < 0 ||
		    put_span(m, &b, &sp) < 0 ||
		    fb_summary(&b,
			       "%zu outbound request%s of %s failed after %s stopped accepting at "
			       "%+.3f s%s, "
			       "from %+.3f s to %+.3f s; %s %s.",
			       sp.n, sp.n == 1 ? "" : "s", c->name, s->name, rel(m, t_stop),
			       ref_note(m), rel(m, sp.first_ns), rel(m, sp.last_ns), c->name,
			       c->exit_ns ? "was still running"
					  : "had not exited when the timeline ends") < 0 ||
		    fb_reco(&b, setting, json_object_new_int64(v),
			    "ceil((%s's stop: %s %.3f s) + %.0f s margin) = %ld s", c->name,
			    c->exit_ns && c->sigterm_ns ? "SIGTERM to exit"
							: "its SIGTERM to its last failed request",
			    need, TL_FINDINGS_MARGIN_S, v) < 0) {
			fb_free(&b);
			return -ENOMEM;
		}
		if ((r = emit(m, &b, out)) < 0)
			return r;
	}
	return 0;
}

static bool inbound_before(const struct tl_model *m, const struct tl_req *r, const void *arg)
{
	const struct lc_arg *a = arg;

	return r->inbound && r->start_ns < a->t &&
	       (!m->deletion_ns || r->start_ns < m->deletion_ns);
}

static int rule_before_ready(const struct tl_model *m, struct json_object *out)
{
	int si = first_sidecar(m);

	for (size_t i = 0; i < m->n_ctr; i++) {
		const struct tl_ctr *c = &m->ctr[i];
		struct lc_arg a = {c->listen_ns};
		char setting[256];
		struct span sp;
		struct fb b;
		double gap;
		int r;

		if (!is_main(c) || !c->listen_ns)
			continue;
		r = fb_collect(m, &b, "traffic_before_ready", "error", inbound_before, &a, &sp);
		if (r < 0)
			return r;
		if (r == 0)
			continue;
		gap = (double)(c->listen_ns - sp.first_ns) / 1e9;
		snprintf(setting, sizeof(setting),
			 "spec.containers[%s].readinessProbe on :%d (traffic waits for it), or "
			 "holdApplicationUntilProxyStarts: true",
			 c->name, c->listen_port);
		if (put_time(m, b.numbers, "appListenedS", c->listen_ns) < 0 ||
		    put_time(m, b.numbers, "proxyListenedS", si >= 0 ? m->ctr[si].listen_ns : 0) <
			0 ||
		    put_span(m, &b, &sp) < 0 ||
		    fb_summary(&b,
			       "%zu request%s failed before %s listened on :%d at %+.3f s while %s "
			       "accepted "
			       "them: the first %.3f s before.",
			       sp.n, sp.n == 1 ? "" : "s", c->name, c->listen_port,
			       rel(m, c->listen_ns),
			       si >= 0 ? m->ctr[si].name : "the Pod's address", gap) < 0 ||
		    fb_reco(&b, setting, json_object_new_int64(ceil_s(gap)),
			    "%s listened %.3f s after the first request arrived: a probe that "
			    "passes only once it "
			    "listens keeps the endpoint unready for those ceil(%.3f) = %ld s",
			    c->name, gap, gap, ceil_s(gap)) < 0) {
			fb_free(&b);
			return -ENOMEM;
		}
		if ((r = emit(m, &b, out)) < 0)
			return r;
	}
	return 0;
}

static int rule_sigterm_ignored(const struct tl_model *m, struct json_object *out)
{
	for (size_t i = 0; i < m->n_ctr; i++) {
		const struct tl_ctr *c = &m->ctr[i];
		int64_t end = c->sigkill_ns ? c->sigkill_ns : c->exit_ns;
		char setting[256];
		struct fb b;
		int r;

		if (!c->sigterm_ignored)
			continue;
		if (fb_new(&b, "sigterm_ignored", "error") < 0)
			return -ENOMEM;
		snprintf(setting, sizeof(setting), "the stop signal handling of %s's PID 1",
			 c->name);
		if (put_time(m, b.numbers, "sigtermS", c->sigterm_ns) < 0 ||
		    put_time(m, b.numbers, "sigkillS", c->sigkill_ns) < 0 ||
		    put_int(b.numbers, "pid", c->sigterm_pid) < 0 ||
		    (end &&
		     put_num(b.numbers, "wastedS", (double)(end - c->sigterm_ns) / 1e9) < 0) ||
		    fb_summary(
			&b,
			"%s ignored SIGTERM at %+.3f s (pid %d is PID 1 of its namespace without a "
			"handler)%s; it %s.",
			c->name, rel(m, c->sigterm_ns), c->sigterm_pid, ref_note(m),
			c->sigkill_ns ? "ran on until SIGKILL" : "was not seen stopping") < 0 ||
		    (end ? fb_reco(&b, setting,
				   json_object_new_string(
				       "a SIGTERM handler, or an init (tini, dumb-init) as PID 1"),
				   "SIGTERM at %+.3f s had no effect; the container ran until "
				   "%+.3f s: %.3f s of the "
				   "grace spent waiting",
				   rel(m, c->sigterm_ns), rel(m, end),
				   (double)(end - c->sigterm_ns) / 1e9)
			 : fb_reco(&b, setting,
				   json_object_new_string(
				       "a SIGTERM handler, or an init (tini, dumb-init) as PID 1"),
				   "SIGTERM at %+.3f s had no effect", rel(m, c->sigterm_ns))) <
			0) {
			fb_free(&b);
			return -ENOMEM;
		}
		if ((r = emit(m, &b, out)) < 0)
			return r;
	}
	return 0;
}

static bool in_flight_at(const struct tl_model *m, const struct tl_req *r, const void *arg)
{
	const struct ctr_at *a = arg;

	(void)m;
	return r->ctr == a->ctr && r->start_ns <= a->t &&
	       (r->end_ns + r->slack_ns > a->t || r->status == 0) &&
	       r->start_ns >= m->ref_ns;
}

static int rule_sigkill(const struct tl_model *m, struct json_object *out)
{
	for (size_t i = 0; i < m->n_ctr; i++) {
		const struct tl_ctr *c = &m->ctr[i];
		struct ctr_at a = {(int)i, c->sigkill_ns};
		int64_t busy = c->sigkill_ns;
		struct span sp;
		struct fb b;
		double x;
		long v;
		int r;

		if (c->sandbox || !c->sigkill_ns ||
		    (c->sigterm_ns && c->sigkill_ns < c->sigterm_ns))
			continue;
		if (fb_new(&b, "sigkill_after_grace", "warning") < 0)
			return -ENOMEM;
		/* anything of its own still going at the kill says it needed more */
		if ((r = collect(m, &b, in_flight_at, &a, &sp)) < 0) {
			fb_free(&b);
			return r;
		}
		for (size_t k = 0; k < m->n_req; k++)
			if (m->reqs[k].ctr == (int)i && m->reqs[k].end_ns > busy)
				busy = m->reqs[k].end_ns;
		x = rel(m, busy);
		v = ceil_s(x + TL_FINDINGS_MARGIN_S);
		if (m->grace_s >= 0 && v <= m->grace_s)
			v = m->grace_s + 1;
		if (put_time(m, b.numbers, "sigtermS", c->sigterm_ns) < 0 ||
		    put_time(m, b.numbers, "sigkillS", c->sigkill_ns) < 0 ||
		    put_int(b.numbers, "gracePeriodSeconds", m->grace_s) < 0 ||
		    put_int(b.numbers, "inFlightAtKill", (int64_t)sp.n) < 0 ||
		    put_num(b.numbers, "busyUntilS", x) < 0 ||
		    fb_summary(&b,
			       "%s was killed with SIGKILL at %+.3f s, %.3f s after its SIGTERM, "
			       "at the end of the "
			       "grace period (%d s)%s; %zu of its requests were still in flight.",
			       c->name, rel(m, c->sigkill_ns),
			       c->sigterm_ns ? (double)(c->sigkill_ns - c->sigterm_ns) / 1e9 : 0.0,
			       m->grace_s, ref_note(m), sp.n) < 0 ||
		    fb_reco(&b, "spec.terminationGracePeriodSeconds", json_object_new_int64(v),
			    "at least ceil((%s at %+.3f s) + %.0f s margin) = %ld s, and more than "
			    "the %d s that did not "
			    "suffice: a lower bound, since %s had not finished",
			    busy > c->sigkill_ns ? "its last request" : "the kill", x,
			    TL_FINDINGS_MARGIN_S, v, m->grace_s, c->name) < 0) {
			fb_free(&b);
			return -ENOMEM;
		}
		if ((r = emit(m, &b, out)) < 0)
			return r;
	}
	return 0;
}

static int rule_exit_order(const struct tl_model *m, struct json_object *out)
{
	int64_t t_stop;
	const struct tl_ctr *s = sidecar_stopped(m, &t_stop);

	if (!s)
		return 0;
	for (size_t i = 0; i < m->n_ctr; i++) {
		const struct tl_ctr *c = &m->ctr[i];
		int64_t served = c->listen_closed_ns ? c->listen_closed_ns : c->exit_ns;
		struct fb b;
		double gap;
		int r;

		/* still serving: its listener closed (or it exited) only after */
		if (!is_main(c) || !served || served <= t_stop)
			continue;
		if (fb_new(&b, "exit_order", "warning") < 0)
			return -ENOMEM;
		gap = (double)(served - t_stop) / 1e9;
		if (put_time(m, b.numbers, "sidecarStoppedS", t_stop) < 0 ||
		    put_time(m, b.numbers, "mainServedUntilS", served) < 0 ||
		    put_num(b.numbers, "gapS", gap) < 0 ||
		    fb_summary(&b,
			       "%s stopped at %+.3f s while %s still served until %+.3f s: %.3f s "
			       "without its proxy%s.",
			       s->name, rel(m, t_stop), c->name, rel(m, served), gap,
			       ref_note(m)) < 0 ||
		    fb_reco(&b, "native sidecar: initContainers[].restartPolicy",
			    json_object_new_string("Always"),
			    "a native sidecar gets its stop signal only after every main container "
			    "exited: the "
			    "%.3f s gap (%+.3f s - %+.3f s) closes",
			    gap, rel(m, served), rel(m, t_stop)) < 0) {
			fb_free(&b);
			return -ENOMEM;
		}
		if ((r = emit(m, &b, out)) < 0)
			return r;
	}
	return 0;
}

static bool reset_like(const struct tl_model *m, const struct tl_req *r, const void *arg)
{
	(void)arg;
	return r->start_ns >= m->ref_ns &&
	       (r->status == 0 || (r->flags && (strstr(r->flags, "UC") || strstr(r->flags, "DC") ||
						strstr(r->flags, "LR"))));
}

static int rule_resets(const struct tl_model *m, struct json_object *out)
{
	struct json_object *by;
	int total = 0, main_i = -1;
	char who[512] = "";
	struct span sp;
	struct fb b;
	int r;

	for (size_t i = 0; i < m->n_ctr; i++) {
		total += m->ctr[i].resets;
		if (main_i < 0 && is_main(&m->ctr[i]))
			main_i = (int)i;
	}
	if (!total)
		return 0;
	if (fb_new(&b, "resets_during_drain", "warning") < 0)
		return -ENOMEM;
	by = json_object_new_object();
	if (!by || json_object_object_add(b.numbers, "resetsByContainer", by) < 0) {
		json_object_put(by);
		fb_free(&b);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->n_ctr; i++) {
		size_t n = strlen(who);

		if (!m->ctr[i].resets)
			continue;
		if (put_int(by, m->ctr[i].name, m->ctr[i].resets) < 0) {
			fb_free(&b);
			return -ENOMEM;
		}
		snprintf(who + n, sizeof(who) - n, "%s%s %d", n ? ", " : "", m->ctr[i].name,
			 m->ctr[i].resets);
	}
	if ((r = collect(m, &b, reset_like, NULL, &sp)) < 0 ||
	    put_int(b.numbers, "resets", total) < 0 || put_span(m, &b, &sp) < 0 ||
	    fb_summary(&b,
		       "%d TCP reset%s after the %s (%s)%s; %zu request%s ended without a response "
		       "or with "
		       "the connection reset.",
		       total, total == 1 ? "" : "s", m->ref_what, who, ref_note(m), sp.n,
		       sp.n == 1 ? "" : "s") < 0 ||
	    (main_i >= 0 ? prestop_reco(m, &b, &m->ctr[main_i], sp.last_start_ns) : 0) < 0) {
		fb_free(&b);
		return r < 0 ? r : -ENOMEM;
	}
	if (!json_object_object_get_ex(b.f, "recommendation", NULL) &&
	    fb_reco(&b, "connection draining before the listener closes",
		    json_object_new_string("preStop sleep"),
		    "no endpoint removal or failed request was recorded to size it") < 0) {
		fb_free(&b);
		return -ENOMEM;
	}
	return emit(m, &b, out);
}

static bool in_lag(const struct tl_model *m, const struct tl_req *r, const void *arg)
{
	const struct lc_arg *a = arg;

	return r->inbound && after(r, a->t) && (!m->removed_ns || r->start_ns < m->removed_ns);
}

/* Each step of the endpoint's way out, from the one before it: deletion
 * -> ready:false -> serving:false -> removal (null where a step is missing). */
static int put_gaps(const struct tl_model *m, struct fb *b)
{
	const int64_t t[] = {m->deletion_ns, m->ready_false_ns, m->serving_false_ns, m->removed_ns};
	static const char *const key[] = {"deletionToReadyFalseS", "readyFalseToServingFalseS",
					  "servingFalseToRemovedS"};
	struct json_object *g = json_object_new_object();

	if (!g || json_object_object_add(b->numbers, "gaps", g) < 0) {
		json_object_put(g);
		return -ENOMEM;
	}
	for (size_t i = 0; i < 3; i++) {
		int r = t[i] && t[i + 1]
			    ? put_num(g, key[i], (double)(t[i + 1] - t[i]) / 1e9)
			    : (json_object_object_add(g, key[i], NULL) < 0 ? -ENOMEM : 0);

		if (r < 0)
			return r;
	}
	return 0;
}

static int rule_endpoint_lag(const struct tl_model *m, struct json_object *out)
{
	int64_t stopped = 0;
	int main_i = -1;
	struct lc_arg a;
	struct span sp;
	struct fb b;
	char lag[128];
	bool late;
	int r;

	if (!m->deletion_ns || !m->slices_seen)
		return 0;
	for (size_t i = 0; i < m->n_ctr; i++) {
		const struct tl_ctr *c = &m->ctr[i];
		int64_t t = c->listen_closed_ns ? c->listen_closed_ns : c->exit_ns;

		if (!is_main(c) || !t)
			continue;
		if (!stopped || t < stopped) {
			stopped = t;
			main_i = (int)i;
		}
	}
	/* the app stopped serving while the endpoint still took traffic */
	late = stopped && (!m->removed_ns || m->removed_ns > stopped);
	if (fb_new(&b, "endpoint_removal_lag", late ? "warning" : "info") < 0)
		return -ENOMEM;
	a.t = stopped;
	if (stopped && (r = collect(m, &b, in_lag, &a, &sp)) < 0) {
		fb_free(&b);
		return r;
	}
	if (!stopped)
		memset(&sp, 0, sizeof(sp));
	if (m->removed_ns && stopped)
		snprintf(lag, sizeof(lag), "%.3f s %s",
			 fabs((double)(m->removed_ns - stopped) / 1e9), late ? "after" : "before");
	else
		snprintf(lag, sizeof(lag), "%s",
			 m->removed_ns ? "(the app was not seen stopping)" : "never");
	if (put_time(m, b.numbers, "readyFalseS", m->ready_false_ns) < 0 ||
	    put_time(m, b.numbers, "servingFalseS", m->serving_false_ns) < 0 ||
	    put_time(m, b.numbers, "removedS", m->removed_ns) < 0 ||
	    put_time(m, b.numbers, "appStoppedServingS", stopped) < 0 ||
	    ((m->removed_ns && stopped)
		 ? put_num(b.numbers, "lagS", (double)(m->removed_ns - stopped) / 1e9)
		 : put_time(m, b.numbers, "lagS", 0)) < 0 ||
	    put_int(b.numbers, "slices", m->slices_seen) < 0 || put_span(m, &b, &sp) < 0 ||
	    put_gaps(m, &b) < 0) {
		fb_free(&b);
		return -ENOMEM;
	}
	{
		char rf[32] = "never", sf[32] = "never", rm[32] = "never", st[32] = "not seen";

		if (m->ready_false_ns)
			snprintf(rf, sizeof(rf), "%+.3f s", rel(m, m->ready_false_ns));
		if (m->serving_false_ns)
			snprintf(sf, sizeof(sf), "%+.3f s", rel(m, m->serving_false_ns));
		if (m->removed_ns)
			snprintf(rm, sizeof(rm), "%+.3f s", rel(m, m->removed_ns));
		if (stopped)
			snprintf(st, sizeof(st), "%+.3f s", rel(m, stopped));
		r = fb_summary(&b,
			       "After the deletion the endpoint went ready:false at %s, "
			       "serving:false at %s and left "
			       "%s at %s; %s stopped serving at %s, so the endpoint left %s.",
			       rf, sf, m->slices_seen == 1 ? "its slice" : "every slice", rm,
			       main_i >= 0 ? m->ctr[main_i].name : "the app", st, lag);
	}
	if (r < 0) {
		fb_free(&b);
		return r;
	}
	if (main_i >= 0 && late)
		r = prestop_reco(m, &b, &m->ctr[main_i], sp.last_start_ns);
	else
		r = fb_reco(&b, "none", json_object_new_string("no change"),
			    late ? "the app was not seen stopping"
				 : "the endpoint left before the app stopped serving");
	if (r < 0) {
		fb_free(&b);
		return r;
	}
	return emit(m, &b, out);
}

static const rule_fn RULES[] = {
    rule_listener_closed, rule_sidecar_exit, rule_before_ready, rule_sigterm_ignored,
    rule_sigkill,	  rule_exit_order,   rule_resets,	rule_endpoint_lag,
    tl_rule_consumers,	  tl_rule_keepalive,
    tl_rule_h2_no_goaway, tl_rule_h2_after_goaway, tl_rule_h2_reset,
};

static int rank_of(struct json_object *f)
{
	struct json_object *s;

	return json_object_object_get_ex(f, "severity", &s)
		   ? tl_finding_severity_rank(json_object_get_string(s))
		   : 0;
}

int tl_findings_compute(struct json_object *doc, struct json_object **ret)
{
	struct json_object *all = NULL, *out = NULL;
	struct tl_model m;
	int r;

	r = tl_model_build(doc, &m);
	if (r < 0) {
		tl_model_done(&m);
		return r;
	}
	all = json_object_new_array();
	out = json_object_new_array();
	if (!all || !out) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < sizeof(RULES) / sizeof(RULES[0]); i++)
		if ((r = RULES[i](&m, all)) < 0)
			goto out;
	/* most severe first; rule order within a severity */
	for (int rank = 3; rank >= 0; rank--) {
		for (size_t i = 0; i < json_object_array_length(all); i++) {
			struct json_object *f = json_object_array_get_idx(all, i);

			if (rank_of(f) != rank)
				continue;
			if (json_object_array_add(out, json_object_get(f)) < 0) {
				json_object_put(f);
				r = -ENOMEM;
				goto out;
			}
		}
	}
	*ret = out;
	out = NULL;
	r = 0;
out:
	json_object_put(all);
	json_object_put(out);
	tl_model_done(&m);
	return r;
}

int tl_findings_from_text(const char *text, size_t len, struct json_object **ret)
{
	struct json_tokener *tok;
	struct json_object *doc;
	int r;

	if (!text || len > INT32_MAX)
		return -EINVAL;
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	doc = json_tokener_parse_ex(tok, text, (int)len);
	if (!doc || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(doc);
		json_tokener_free(tok);
		return -EBADMSG;
	}
	json_tokener_free(tok);
	r = tl_findings_compute(doc, ret);
	json_object_put(doc);
	return r;
}

int tl_findings_attach(struct json_object *doc)
{
	struct json_object *f;
	int r = tl_findings_compute(doc, &f);

	if (r < 0)
		return r;
	if (json_object_object_add(doc, "findings", f) < 0) {
		json_object_put(f);
		return -ENOMEM;
	}
	return 0;
}
