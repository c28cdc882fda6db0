// SPDX-License-Identifier: Apache-2.0
/* The verdict every verb opens with: what failed, how many, when, and the
 * cause, in one sentence; the fix, once, paste-ready; what each finding
 * covers of the failed requests, so that the counts reconcile. Built from
 * the findings as data: a rule named in STORIES is told in its own words
 * and has a failure window; any other rule (a newer agent's, a newer
 * library's) is told by its summary. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"

/* A number of the finding's "numbers" in seconds from the reference, as a
 * time; 0 when absent or null. */
static int64_t num_time(const struct tl_model *m, struct json_object *f, const char *key)
{
	struct json_object *v = json_path(json_path(f, "numbers"), key);

	if (!v ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return 0;
	return m->ref_ns + (int64_t)llround(json_object_get_double(v) * 1e9);
}

static bool num_int(struct json_object *f, const char *key, long long *ret)
{
	struct json_object *v = json_path(json_path(f, "numbers"), key);

	if (!v || !json_object_is_type(v, json_type_int))
		return false;
	*ret = json_object_get_int64(v);
	return true;
}

bool setting_container(const char *setting, char *buf, size_t len)
{
	const char *p = setting ? strstr(setting, "containers[") : NULL, *q;

	if (!p)
		return false;
	p += strlen("containers[");
	q = strchr(p, ']');
	if (!q || q == p)
		return false;
	snprintf(buf, len, "%.*s", (int)(q - p), p);
	return true;
}

/* The first word of text (a container name a summary starts with). */
static void first_word(const char *text, char *buf, size_t len)
{
	size_t n = text ? strcspn(text, " ") : 0;

	snprintf(buf, len, "%.*s", (int)n, text ? text : "");
}

static const char *main_name(const struct tl_model *m)
{
	for (size_t i = 0; i < m->n_ctr; i++) {
		const struct tl_ctr *c = &m->ctr[i];

		if (c->sandbox || strcmp(c->name, "(unknown)") == 0)
			continue;
		if (c->role ? strcmp(c->role, "main") == 0 : strcmp(c->name, "istio-proxy") != 0)
			return c->name;
	}
	return "the app";
}

/* ---- the rules told in their own words ---- */

typedef void (*cause_fn)(const struct tl_model *m, struct json_object *f, char *buf, size_t len);

static void cause_listener(const struct tl_model *m, struct json_object *f, char *buf, size_t len)
{
	char ctr[128], d[OFFSET_LEN], at[OFFSET_LEN];
	long long port = 0;
	int64_t closed = num_time(m, f, "listenerClosedS"),
		removed = num_time(m, f, "endpointRemovedS");

	if (!setting_container(json_str(json_path(f, "recommendation"), "setting"), ctr,
			       sizeof(ctr)))
		snprintf(ctr, sizeof(ctr), "%s", main_name(m));
	num_int(f, "port", &port);
	if (closed && removed && removed > closed)
		snprintf(buf, len, "%s closed :%lld %s before its endpoint left the slice", ctr,
			 port, fmt_secs(d, removed - closed));
	else
		snprintf(buf, len,
			 "%s closed :%lld at %s while its endpoint was still in the slice", ctr,
			 port, fmt_offset(at, closed, m->ref_ns));
}

static void cause_lag(const struct tl_model *m, struct json_object *f, char *buf, size_t len)
{
	int64_t stopped = num_time(m, f, "appStoppedServingS"),
		removed = num_time(m, f, "removedS");
	char d[OFFSET_LEN];
	const char *app = main_name(m);

	if (stopped && removed && removed > stopped)
		snprintf(buf, len, "%s stopped serving %s before its endpoint left the slice", app,
			 fmt_secs(d, removed - stopped));
	else if (stopped && removed)
		snprintf(buf, len, "the endpoint left the slice %s before %s stopped serving",
			 fmt_secs(d, stopped - removed), app);
	else if (stopped)
		snprintf(buf, len,
			 "%s stopped serving while its endpoint was never seen leaving the "
			 "slice",
			 app);
	else
		snprintf(buf, len, "the endpoint's way out of the slice (%s was not seen stopping)",
			 app);
}

static void cause_sidecar(const struct tl_model *m, struct json_object *f, char *buf, size_t len)
{
	char side[128], at[OFFSET_LEN];

	first_word(json_str(json_path(f, "recommendation"), "setting"), side, sizeof(side));
	snprintf(buf, len, "%s stopped at %s while %s still sent requests through it", side,
		 fmt_offset(at, num_time(m, f, "sidecarStoppedS"), m->ref_ns), main_name(m));
}

static void cause_before_ready(const struct tl_model *m, struct json_object *f, char *buf,
			       size_t len)
{
	char ctr[128], at[OFFSET_LEN];

	if (!setting_container(json_str(json_path(f, "recommendation"), "setting"), ctr,
			       sizeof(ctr)))
		snprintf(ctr, sizeof(ctr), "%s", main_name(m));
	snprintf(buf, len, "requests arrived before %s listened (at %s)", ctr,
		 fmt_offset(at, num_time(m, f, "appListenedS"), m->ref_ns));
}

static void cause_from_summary_name(const struct tl_model *m, struct json_object *f, char *buf,
				    size_t len, const char *what)
{
	char who[128], d[OFFSET_LEN];
	int64_t from = num_time(m, f, "sigtermS"), to = num_time(m, f, "sigkillS");

	first_word(json_str(f, "summary"), who, sizeof(who));
	if (strcmp(what, "ignored") == 0)
		snprintf(buf, len, "%s ignored SIGTERM%s%s%s", who, to ? " and was killed " : "",
			 to ? fmt_secs(d, to - from) : "", to ? " later" : "");
	else
		snprintf(buf, len, "%s was killed at the end of the %d s grace period", who,
			 m->grace_s);
}

static void cause_ignored(const struct tl_model *m, struct json_object *f, char *buf, size_t len)
{
	cause_from_summary_name(m, f, buf, len, "ignored");
}

static void cause_killed(const struct tl_model *m, struct json_object *f, char *buf, size_t len)
{
	cause_from_summary_name(m, f, buf, len, "killed");
}

static void cause_exit_order(const struct tl_model *m, struct json_object *f, char *buf, size_t len)
{
	char side[128], d[OFFSET_LEN];
	struct json_object *gap = json_path(json_path(f, "numbers"), "gapS");

	first_word(json_str(f, "summary"), side, sizeof(side));
	snprintf(buf, len, "%s stopped %s before %s did", side,
		 fmt_secs(d, gap ? (int64_t)llround(json_object_get_double(gap) * 1e9) : 0),
		 main_name(m));
}

static void cause_resets(const struct tl_model *m, struct json_object *f, char *buf, size_t len)
{
	long long n = 0;

	(void)m;
	num_int(f, "resets", &n);
	snprintf(buf, len, "%lld TCP reset%s during the drain", n, n == 1 ? "" : "s");
}

/* The worst consumer, in the words of the finding's summary, from its
 * numbers: "mesh/api-gateway-0 kept sending 1.908 s after the endpoint
 * was removed: 19 requests, 19 failed". */
static void cause_consumers(const struct tl_model *m, struct json_object *f, char *buf, size_t len)
{
	struct json_object *w = json_object_array_get_idx(json_path(f, "consumers"), 0);
	struct json_object *lag = json_path(w, "lagSeconds");
	const char *name = json_str(w, "consumer");
	long long n = 0, failed = 0, after = 0;
	char d[OFFSET_LEN];

	(void)m;
	if (!name || !lag ||
	    !(json_object_is_type(lag, json_type_double) || json_object_is_type(lag, json_type_int))) {
		snprintf(buf, len, "consumers kept sending after the endpoint was removed");
		return;
	}
	n = json_object_get_int64(json_path(w, "requestsAfterRemoval"));
	failed = json_object_get_int64(json_path(w, "failedAfterRemoval"));
	num_int(f, "consumersAfterRemoval", &after);
	snprintf(buf, len, "%s kept sending %s after the endpoint was removed: %lld request%s, %lld "
		 "failed%s",
		 name, fmt_secs(d, llround(json_object_get_double(lag) * 1e9)), n, n == 1 ? "" : "s",
		 failed, after > 1 ? " (the slowest of the consumers)" : "");
}

static void cause_keepalive(const struct tl_model *m, struct json_object *f, char *buf, size_t len)
{
	struct json_object *last = json_path(json_path(f, "numbers"), "lastRequestAfterCutoffSeconds");
	long long n = 0, told = 0;
	bool sigterm = false;
	char d[OFFSET_LEN];

	/* the rule's cutoff: the first SIGTERM, else the endpoint's removal */
	for (size_t i = 0; i < m->n_ctr; i++)
		sigterm |= m->ctr[i].sigterm_ns != 0;
	num_int(f, "connections", &n);
	num_int(f, "toldToClose", &told);
	snprintf(buf, len,
		 "%lld keep-alive connection%s opened before %s still carried requests %s after "
		 "it, %s told to close",
		 n, n == 1 ? "" : "s", sigterm ? "SIGTERM" : "the endpoint's removal",
		 fmt_secs(d, last ? llround(json_object_get_double(last) * 1e9) : 0),
		 told == 0 ? "none" : told >= n ? "all" : "not all");
}

static const struct story {
	const char *rule;
	cause_fn cause;
	const char *from, *to; /* the failure window in "numbers"; "+KEY": from + KEY seconds */
	const char *lens;      /* how the finding sees the requests it covers */
} STORIES[] = {
    {"requests_after_listener_closed", cause_listener, "listenerClosedS", "endpointRemovedS",
     "that reached the app after its listener closed"},
    {"requests_after_sidecar_exit", cause_sidecar, "sidecarStoppedS", "lastFailedS",
     "sent through the proxy after it stopped"},
    {"traffic_before_ready", cause_before_ready, "firstFailedS", "appListenedS",
     "sent before the app listened"},
    {"sigterm_ignored", cause_ignored, "sigtermS", "sigkillS", NULL},
    {"sigkill_after_grace", cause_killed, "sigtermS", "sigkillS", "in flight at the kill"},
    {"exit_order", cause_exit_order, "sidecarStoppedS", "mainServedUntilS", NULL},
    {"resets_during_drain", cause_resets, "firstFailedS", "lastFailedS",
     "ended by a reset or without a response"},
    {"endpoint_removal_lag", cause_lag, "appStoppedServingS", "removedS",
     "sent while the endpoint was still in the slice"},
    {"traffic_after_endpoint_removed", cause_consumers, "removedS", "+maxLagSeconds",
     "sent by the consumers from the deletion on"},
    {"keepalive_across_drain", cause_keepalive, "cutoffS", "+lastRequestAfterCutoffSeconds",
     "sent on keep-alive connections opened before the drain"},
};

static const struct story *story_of(struct json_object *f)
{
	const char *rule = json_str(f, "rule");

	for (size_t i = 0; rule && i < sizeof(STORIES) / sizeof(STORIES[0]); i++)
		if (strcmp(STORIES[i].rule, rule) == 0)
			return &STORIES[i];
	return NULL;
}

/* The end of a story's window: a time of "numbers", or its start plus a
 * duration of them ("+KEY"). */
static int64_t window_to(const struct tl_model *m, struct json_object *f, const struct story *st,
			 int64_t from)
{
	struct json_object *v;

	if (!st || !st->to)
		return 0;
	if (st->to[0] != '+')
		return num_time(m, f, st->to);
	v = json_path(json_path(f, "numbers"), st->to + 1);
	if (!from || !v ||
	    !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int)))
		return 0;
	return from + llround(json_object_get_double(v) * 1e9);
}

bool finding_window(const struct tl_model *m, struct json_object *f, int64_t *from, int64_t *to)
{
	const struct story *st = story_of(f);

	*from = st && st->from ? num_time(m, f, st->from) : 0;
	*to = window_to(m, f, st, *from);
	if (!*from)
		*from = num_time(m, f, "firstFailedS");
	if (!*to || *to < *from)
		*to = num_time(m, f, "lastFailedS");
	if (*from && (!*to || *to < *from))
		*to = *from;
	return *from != 0;
}

/* A rule not known here: its summary's first sentence. */
static void cause_generic(struct json_object *f, char *buf, size_t len)
{
	const char *s = json_str(f, "summary");
	size_t n = 0;

	/* its first clause: up to a ';' or a '.' that is not a decimal point
	 * ("+0.039 s") */
	while (s && s[n] && s[n] != ';' && !(s[n] == '.' && !isdigit((unsigned char)s[n + 1])))
		n++;

	snprintf(buf, len, "%.*s", (int)n, s ? s : json_str(f, "rule") ? json_str(f, "rule") : "?");
	if (*buf && isupper((unsigned char)buf[0]) && !isupper((unsigned char)buf[1]))
		buf[0] = (char)tolower((unsigned char)buf[0]);
}

static size_t covered(struct json_object *f, bool *has)
{
	long long n = 0;
	struct json_object *ids = json_path(f, "requestIds");

	*has = true;
	if (num_int(f, "failedRequests", &n))
		return n < 0 ? 0 : (size_t)n;
	if (ids && json_object_is_type(ids, json_type_array) && json_object_array_length(ids))
		return json_object_array_length(ids);
	*has = false;
	return 0;
}

static bool no_change(struct json_object *f)
{
	struct json_object *reco = json_path(f, "recommendation");
	const char *setting = json_str(reco, "setting");
	const char *value = json_str(reco, "value");

	return !reco || !setting || strcmp(setting, "none") == 0 ||
	       (value && strcmp(value, "no change") == 0);
}

/* "503 UF", "12 × 503 UF, 2 × no response", "gRPC UNAVAILABLE": the
 * outcomes of the failed requests, most frequent first (a gRPC call by its
 * status: it failed over HTTP 200). */
static void outcomes(const struct cli *cli, const struct tl_model *m, char *buf, size_t len)
{
	struct {
		int status, grpc;
		const char *flags;
		size_t n;
	} cls[4] = {{0}};
	size_t ncls = 0, other = 0;

	buf[0] = 0;
	for (size_t i = 0; i < m->n_req; i++) {
		const struct tl_req *r = &m->reqs[i];
		const char *fl = r->flags && strcmp(r->flags, "-") ? r->flags : "";
		int grpc = r->grpc > 0 ? r->grpc : -1;
		size_t k;

		if (!r->failed || r->dup)
			continue;
		for (k = 0; k < ncls; k++)
			if (cls[k].status == r->status && cls[k].grpc == grpc &&
			    strcmp(cls[k].flags, fl) == 0)
				break;
		if (k == ncls && ncls == 4) {
			other++;
			continue;
		}
		if (k == ncls) {
			cls[k].status = r->status;
			cls[k].grpc = grpc;
			cls[k].flags = fl;
			ncls++;
		}
		cls[k].n++;
	}
	for (size_t i = 0; i < ncls; i++) /* most frequent first */
		for (size_t k = i + 1; k < ncls; k++)
			if (cls[k].n > cls[i].n) {
				__typeof__(cls[0]) t = cls[i];

				cls[i] = cls[k];
				cls[k] = t;
			}
	for (size_t i = 0; i < ncls && i < 3; i++) {
		size_t n = strlen(buf);
		char what[96];

		if (cls[i].grpc > 0)
			snprintf(what, sizeof(what), "gRPC %s", grpc_status_name(cls[i].grpc));
		else if (cls[i].status)
			snprintf(what, sizeof(what), "%d%s%s", cls[i].status,
				 *cls[i].flags ? " " : "", cls[i].flags);
		else
			snprintf(what, sizeof(what), "no response%s%s", *cls[i].flags ? " " : "",
				 cls[i].flags);
		if (ncls == 1)
			snprintf(buf + n, len - n, "%s", what);
		else
			snprintf(buf + n, len - n, "%s%zu %s %s", i ? ", " : "", cls[i].n,
				 glyph_times(cli), what);
	}
	if (ncls > 3 || other) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, ", %s", glyph_ellipsis(cli));
	}
}

int verdict_build(const struct cli *cli, const struct tl_model *m, struct json_object *fs,
		  struct verdict *v)
{
	char cause[512] = "", what[200], span[96];
	size_t n = fs ? json_object_array_length(fs) : 0;

	memset(v, 0, sizeof(*v));
	for (size_t i = 0; i < m->n_req; i++) {
		const struct tl_req *r = &m->reqs[i];

		if (!r->failed || r->dup)
			continue;
		v->failed++;
		if (!v->first_fail_ns || r->start_ns < v->first_fail_ns)
			v->first_fail_ns = r->start_ns;
		if (r->end_ns > v->last_fail_ns)
			v->last_fail_ns = r->end_ns;
	}
	v->terminated = m->deletion_ns != 0;
	for (size_t i = 0; i < m->n_ctr; i++)
		v->terminated |= m->ctr[i].sigterm_ns != 0;
	/* the cause: the most severe finding that covers failed requests,
	 * else the most severe one (they come sorted, most severe first) */
	for (size_t i = 0; i < n && !v->primary; i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);
		bool has;

		if (covered(f, &has) > 0)
			v->primary = f;
	}
	for (size_t i = 0; i < n && !v->primary; i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);

		if (tl_finding_severity_rank(json_str(f, "severity")) >= 2)
			v->primary = f;
	}
	if (!v->primary && n)
		v->primary = json_object_array_get_idx(fs, 0);
	/* the fix: the primary's recommendation, else the first that changes something */
	if (v->primary && !no_change(v->primary) &&
	    tl_finding_severity_rank(json_str(v->primary, "severity")) >= 2)
		v->fix = v->primary;
	for (size_t i = 0; i < n && !v->fix; i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);

		if (!no_change(f) && tl_finding_severity_rank(json_str(f, "severity")) >= 2)
			v->fix = f;
	}
	if (v->primary) {
		const struct story *st = story_of(v->primary);

		v->cause_rule = json_str(v->primary, "rule");
		if (st)
			st->cause(m, v->primary, cause, sizeof(cause));
		else
			cause_generic(v->primary, cause, sizeof(cause));
		if (st && st->from) {
			v->window_from = num_time(m, v->primary, st->from);
			v->window_to = window_to(m, v->primary, st, v->window_from);
		}
	}
	if (v->failed) {
		/* the window (the rule's, from its cause) reaches the last failure */
		if (!v->window_from)
			v->window_from = v->first_fail_ns;
		if (!v->window_to || v->window_to < v->last_fail_ns)
			v->window_to = v->last_fail_ns;
		outcomes(cli, m, what, sizeof(what));
		fmt_span(cli, span, sizeof(span), v->first_fail_ns, v->last_fail_ns, m->ref_ns);
		snprintf(v->window_label, sizeof(v->window_label), "%zu %s %s (%s)", v->failed,
			 glyph_times(cli), strchr(what, ',') ? "failed" : what, span);
		snprintf(v->headline, sizeof(v->headline), "%zu request%s failed (%s, %s): %s.",
			 v->failed, v->failed == 1 ? "" : "s", what, span,
			 cause[0] && v->primary && covered(v->primary, &(bool){0})
			     ? cause
			     : "no rule recognises why (show --failed lists them)");
	} else if (v->primary && tl_finding_severity_rank(json_str(v->primary, "severity")) >= 2) {
		v->window_from = v->window_to = 0;
		snprintf(v->headline, sizeof(v->headline), "No request failed, but %s.", cause);
	} else if (!v->terminated) {
		snprintf(
		    v->headline, sizeof(v->headline),
		    "Not terminated (no deletion or SIGTERM recorded): nothing failed so far.");
	} else if (v->primary) {
		v->window_from = v->window_to = 0;
		snprintf(v->headline, sizeof(v->headline), "No request failed: %s.", cause);
	} else {
		snprintf(v->headline, sizeof(v->headline),
			 "No request failed and no rule found anything wrong.");
	}
	snprintf(v->cause, sizeof(v->cause), "%s", cause);
	if (v->window_to && v->window_from && v->window_to < v->window_from)
		v->window_to = v->window_from;
	return 0;
}

void verdict_covers(const struct verdict *v, struct json_object *f, bool first, char *buf,
		    size_t len)
{
	const struct story *st = story_of(f);
	bool has;
	size_t n = covered(f, &has);
	const char *lens = st && st->lens ? st->lens : NULL;

	buf[0] = 0;
	if (!has || !v->failed) {
		if (has && n)
			snprintf(buf, len, "%zu request%s", n, n == 1 ? "" : "s");
		return;
	}
	if (n >= v->failed)
		snprintf(buf, len, "%s %zu request%s%s%s", first ? "all" : "the same", v->failed,
			 v->failed == 1 ? "" : "s", lens && !first ? ", seen as those " : "",
			 lens && !first ? lens : "");
	else if (n)
		snprintf(buf, len, "%zu of the %zu failed requests%s%s", n, v->failed,
			 lens ? ": those " : "", lens ? lens : "");
	else
		snprintf(buf, len, "none of the %zu failed requests", v->failed);
}

/* ---- the fix ---- */

void verdict_fix_short(const struct verdict *v, char *buf, size_t len)
{
	struct json_object *reco = v->fix ? json_path(v->fix, "recommendation") : NULL;
	struct json_object *val = json_path(reco, "value");
	const char *setting = json_str(reco, "setting");
	char ctr[128];

	buf[0] = 0;
	if (!setting)
		return;
	if (strstr(setting, "lifecycle.preStop.sleep.seconds") &&
	    setting_container(setting, ctr, sizeof(ctr)) && val)
		snprintf(buf, len, "preStop sleep %s s on %s", json_object_get_string(val), ctr);
	else if (strcmp(setting, "spec.terminationGracePeriodSeconds") == 0 && val)
		snprintf(buf, len, "terminationGracePeriodSeconds %s", json_object_get_string(val));
	else if (strstr(setting, "native sidecar") || strstr(setting, "restartPolicy"))
		snprintf(buf, len, "the proxy as a native sidecar");
	else if (strstr(setting, "readinessProbe") && setting_container(setting, ctr, sizeof(ctr)))
		snprintf(buf, len, "a readiness probe on %s", ctr);
	else
		snprintf(buf, len, "see kubectl termline explain");
}

/* The owner's kubectl patch target ("deployment web"), or 0. */
static bool patch_target(const struct tl_model *m, char *buf, size_t len)
{
	struct json_object *owner = json_path(m->doc, "pod.owner");
	const char *kind = json_str(owner, "kind"), *name = json_str(owner, "name");
	const char *dash;

	if (!kind || !name)
		return false;
	if (strcmp(kind, "ReplicaSet") == 0) {
		/* a Deployment's ReplicaSet is NAME-<pod-template-hash> */
		dash = strrchr(name, '-');
		if (!dash || dash == name || !dash[1])
			return false;
		snprintf(buf, len, "deployment %.*s", (int)(dash - name), name);
		return true;
	}
	if (strcmp(kind, "StatefulSet") == 0 || strcmp(kind, "DaemonSet") == 0) {
		snprintf(buf, len, "%s %s",
			 strcmp(kind, "StatefulSet") == 0 ? "statefulset" : "daemonset", name);
		return true;
	}
	return false;
}

static double ctr_stop_s(const struct tl_model *m, const char *ctr)
{
	int i = tl_model_ctr(m, ctr);

	if (i < 0 || !m->ctr[i].sigterm_ns || !m->ctr[i].exit_ns ||
	    m->ctr[i].exit_ns < m->ctr[i].sigterm_ns)
		return 0;
	return (double)(m->ctr[i].exit_ns - m->ctr[i].sigterm_ns) / 1e9;
}

/* The grace period that holds a preStop of hold_s and then the container's
 * own stop (docs/findings.md: max(now, ceil(value + stop))). */
static long grace_needed(const struct tl_model *m, const char *ctr, long hold_s)
{
	long need = (long)ceil((double)hold_s + ctr_stop_s(m, ctr) - 1e-6);

	return m->grace_s > need ? m->grace_s : need;
}

/* The patch's head and the Pod spec's indentation, or a bare fragment. */
static int patch_head(const struct cli *cli, FILE *f, const struct tl_model *m)
{
	char target[300];

	(void)cli;
	if (patch_target(m, target, sizeof(target))) {
		fprintf(f, "  kubectl -n %s patch %s -p '\n  spec:\n    template:\n      spec:\n",
			m->ns ? m->ns : "default", target);
		return 8;
	}
	fprintf(f, "  # in the Pod's spec (its owner's Pod template):\n");
	return 2;
}

/* The fix's recommendation.sidecar: the sidecar's drain, as observed,
 * ends before the sleep and what the container then serves, so the sleep
 * alone would leave it serving without its proxy (docs/findings.md). */
static void sidecar_note(const struct cli *cli, FILE *f, const struct tl_model *m,
			 struct json_object *fx, const char *ctr, long value)
{
	struct json_object *sc = json_path(json_path(fx, "recommendation"), "sidecar");
	struct json_object *val = json_path(sc, "value");
	struct json_object *g = json_path(sc, "terminationGracePeriodSeconds");
	const char *who = json_str(sc, "container");
	char text[800], grace[96] = "";
	long long keep;

	if (!who || !val || !json_object_is_type(val, json_type_int))
		return;
	keep = (long long)json_object_get_int64(val);
	if (g && json_object_is_type(g, json_type_int) && json_object_get_int64(g) > m->grace_s)
		snprintf(grace, sizeof(grace), " and terminationGracePeriodSeconds: %lld",
			 (long long)json_object_get_int64(g));
	snprintf(text, sizeof(text),
		 "%s stops accepting before %s's %ld s sleep and what %s then serves end: keep it "
		 "that long, as a native sidecar (initContainers[].restartPolicy: Always), or "
		 "with a %lld s drain, annotation proxy.istio.io/config: "
		 "'{\"terminationDrainDuration\": \"%llds\"}' on the Pod template%s.",
		 who, ctr, value, ctr, keep, keep, grace);
	wrap(cli, f, 2, 2, text);
	if (cli->verbose > 0 && json_str(sc, "formula")) {
		snprintf(text, sizeof(text), "because %s", json_str(sc, "formula"));
		wrap(cli, f, 4, 4, text);
	}
}

static void preStop_fix(const struct cli *cli, FILE *f, const struct tl_model *m,
			struct json_object *fx, const char *ctr, long value)
{
	struct json_object *reco = json_path(fx, "recommendation"), *gate = json_path(reco, "gate");
	int64_t cover = num_time(m, fx, "coverUntilS");
	long need = grace_needed(m, ctr, value);
	char at[OFFSET_LEN], stop[OFFSET_LEN], text[800], until[400];
	const char *rule = json_str(fx, "rule");
	int ind;

	/* what set the number, as the finding's formula says it
	 * (docs/findings.md): the slowest consumer's last request, else the
	 * last failed request when it came after the removal, else the
	 * removal itself */
	if (cover && json_str(json_path(fx, "numbers"), "slowestConsumer"))
		snprintf(until, sizeof(until), "its slowest consumer, %s, stopped sending",
			 json_str(json_path(fx, "numbers"), "slowestConsumer"));
	else if (cover && m->removed_ns && cover > m->removed_ns)
		snprintf(until, sizeof(until), "the last failed request, after its endpoint left "
					       "every slice, has reached it");
	else
		snprintf(until, sizeof(until), "%s",
			 cover ? "its endpoint has left every slice" : "the last request has reached it");
	/* the consumers' rule: until its slowest consumer stopped sending */
	if (!cover && rule && strcmp(rule, "traffic_after_endpoint_removed") == 0) {
		struct json_object *w = json_object_array_get_idx(json_path(fx, "consumers"), 0);
		struct json_object *lag = json_path(json_path(fx, "numbers"), "maxLagSeconds");
		int64_t removed = num_time(m, fx, "removedS");

		if (removed && lag && json_str(w, "consumer")) {
			cover = removed + llround(json_object_get_double(lag) * 1e9);
			snprintf(until, sizeof(until), "its slowest consumer, %s, stopped sending",
				 json_str(w, "consumer"));
		}
	}
	snprintf(text, sizeof(text),
		 "%sFix:%s hold %s in a %ld s preStop sleep, so that it still serves until %s "
		 "(%s; + 1 s margin, rounded up):",
		 col(cli, "green"), col(cli, "reset"), ctr, value, until,
		 fmt_offset(at, cover ? cover : m->ref_ns, m->ref_ns));
	wrap(cli, f, 0, 2, text);
	ind = patch_head(cli, f, m);
	if (need > m->grace_s)
		fprintf(f, "%*sterminationGracePeriodSeconds: %ld\n", ind, "", need);
	fprintf(f,
		"%*scontainers:\n%*s- name: %s\n%*s  lifecycle:\n%*s    preStop:\n%*s      sleep:\n"
		"%*s        seconds: %ld%s\n",
		ind, "", ind, "", ctr, ind, "", ind, "", ind, "", ind, "", value,
		ind == 8 ? "'" : "");
	if (need > m->grace_s)
		snprintf(
		    text, sizeof(text),
		    "terminationGracePeriodSeconds %d -> %ld, to hold the %ld s sleep and %s's "
		    "%s stop.",
		    m->grace_s, need, value, ctr,
		    fmt_secs(stop, (int64_t)(ctr_stop_s(m, ctr) * 1e9)));
	else
		snprintf(
		    text, sizeof(text),
		    "terminationGracePeriodSeconds %d already holds the %ld s sleep and %s's %s "
		    "stop.",
		    m->grace_s, value, ctr, fmt_secs(stop, (int64_t)(ctr_stop_s(m, ctr) * 1e9)));
	wrap(cli, f, 2, 2, text);
	snprintf(text, sizeof(text),
		 "(preStop.sleep needs Kubernetes 1.30; before: exec: {command: [sleep, \"%ld\"]})",
		 value);
	wrap(cli, f, 2, 3, text);
	sidecar_note(cli, f, m, fx, ctr, value);
	if (gate && json_str(gate, "value")) {
		char cmd[256], list[400] = "";
		const char *t = strstr(json_str(gate, "value"), "--timeout ");
		long timeout = t ? strtol(t + 10, NULL, 10) : 0, gneed;

		snprintf(cmd, sizeof(cmd), "%s", json_str(gate, "value"));
		for (char *save = NULL, *w = strtok_r(cmd, " ", &save); w;
		     w = strtok_r(NULL, " ", &save)) {
			size_t n = strlen(list);

			snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "", w);
		}
		gneed = grace_needed(m, ctr, timeout);
		snprintf(
		    text, sizeof(text),
		    "Or, rather than a fixed sleep, hold %s until its endpoint is out of rotation "
		    "and no request came for 1 s (termline-wait in %s's image):",
		    ctr, ctr);
		wrap(cli, f, 0, 2, text);
		fprintf(f, "  preStop: {exec: {command: [%s]}}\n", list);
		if (gneed > m->grace_s)
			fprintf(f, "  and terminationGracePeriodSeconds: %ld (now %d)\n", gneed,
				m->grace_s);
		else
			fprintf(f, "  (terminationGracePeriodSeconds %d holds it)\n", m->grace_s);
	}
}

int verdict_print_fix(const struct cli *cli, FILE *f, const struct tl_model *m,
		      const struct verdict *v)
{
	struct json_object *reco = v->fix ? json_path(v->fix, "recommendation") : NULL, *val;
	const char *setting = json_str(reco, "setting");
	char ctr[128], text[1400];
	int ind;

	if (!reco || !setting)
		return 0;
	val = json_path(reco, "value");
	/* "containers[]": a rule that names no container means the app's */
	if (strstr(setting, "containers[]"))
		snprintf(ctr, sizeof(ctr), "%s", main_name(m));
	if (strstr(setting, "lifecycle.preStop.sleep.seconds") &&
	    (strstr(setting, "containers[]") || setting_container(setting, ctr, sizeof(ctr))) &&
	    val && json_object_is_type(val, json_type_int)) {
		preStop_fix(cli, f, m, v->fix, ctr, (long)json_object_get_int64(val));
		return 1;
	}
	if (strcmp(setting, "spec.terminationGracePeriodSeconds") == 0 && val &&
	    json_object_is_type(val, json_type_int)) {
		snprintf(text, sizeof(text),
			 "%sFix:%s a longer grace period, %lld s (now %d): a lower bound, the "
			 "container had not finished when it was killed:",
			 col(cli, "green"), col(cli, "reset"),
			 (long long)json_object_get_int64(val), m->grace_s);
		wrap(cli, f, 0, 2, text);
		ind = patch_head(cli, f, m);
		fprintf(f, "%*sterminationGracePeriodSeconds: %lld%s\n", ind, "",
			(long long)json_object_get_int64(val), ind == 8 ? "'" : "");
		return 1;
	}
	if (strstr(setting, "native sidecar") || strstr(setting, "restartPolicy")) {
		char side[128];

		first_word(strstr(setting, "native sidecar:") ? json_str(v->fix, "summary")
							      : setting,
			   side, sizeof(side));
		snprintf(text, sizeof(text),
			 "%sFix:%s run %s as a native sidecar: it then gets its stop signal only "
			 "after every main container exited (Kubernetes 1.29; Istio 1.19+: "
			 "ENABLE_NATIVE_SIDECARS=true in istiod does it for istio-proxy):",
			 col(cli, "green"), col(cli, "reset"), side);
		wrap(cli, f, 0, 2, text);
		ind = patch_head(cli, f, m);
		if (ind == 8)
			fprintf(f, "%*s# move %s from containers to initContainers:\n", ind, "",
				side);
		fprintf(f, "%*sinitContainers:\n%*s- name: %s\n%*s  restartPolicy: Always%s\n", ind,
			"", ind, "", side, ind, "", ind == 8 ? "'" : "");
		if (val && json_object_is_type(val, json_type_int)) {
			snprintf(text, sizeof(text),
				 "Or keep %s draining %lld s: annotation proxy.istio.io/config: "
				 "'{\"terminationDrainDuration\": \"%llds\"}' on the Pod template.",
				 side, (long long)json_object_get_int64(val),
				 (long long)json_object_get_int64(val));
			wrap(cli, f, 0, 2, text);
		}
		return 1;
	}
	if (strstr(setting, "readinessProbe")) {
		char port[32] = "";
		const char *p = strstr(setting, "on :");

		if (p)
			snprintf(port, sizeof(port), "%ld", strtol(p + 4, NULL, 10));
		if (!setting_container(setting, ctr, sizeof(ctr)))
			snprintf(ctr, sizeof(ctr), "%s", main_name(m));
		snprintf(text, sizeof(text),
			 "%sFix:%s a readiness probe on %s's port, so traffic waits until it "
			 "listens (with Istio, holdApplicationUntilProxyStarts: true as well):",
			 col(cli, "green"), col(cli, "reset"), ctr);
		wrap(cli, f, 0, 2, text);
		ind = patch_head(cli, f, m);
		fprintf(f,
			"%*scontainers:\n%*s- name: %s\n%*s  readinessProbe:\n%*s    tcpSocket:\n"
			"%*s      port: %s%s\n",
			ind, "", ind, "", ctr, ind, "", ind, "", ind, "", port[0] ? port : "PORT",
			ind == 8 ? "'" : "");
		return 1;
	}
	/* a setting without a snippet: said as the rule says it */
	snprintf(text, sizeof(text), "%sFix:%s %s = %s", col(cli, "green"), col(cli, "reset"),
		 setting, val ? json_object_get_string(val) : "?");
	wrap(cli, f, 0, 2, text);
	if (json_str(reco, "formula")) {
		snprintf(text, sizeof(text), "(%s)", json_str(reco, "formula"));
		wrap(cli, f, 2, 2, text);
	}
	return 1;
}
