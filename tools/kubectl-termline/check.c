// SPDX-License-Identifier: Apache-2.0
/* check NS/POD...: a gate for delivery pipelines. Each Pod's assertions
 * with their evidence, as text (one PASS/FAIL line each), JSON, YAML or
 * JUnit XML; exit 1 when any failed, 0 when all passed, 2 when a timeline
 * is missing or incomplete: never a silent pass. With no assertion given,
 * --max-failed-requests 0 is asserted. A missing timeline's reason is in
 * its result, said once. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "findings.h"

static int add_assertion(struct json_object *list, const char *name, bool ok, const char *evidence)
{
	struct json_object *a = json_object_new_object();

	if (!a || json_object_array_add(list, a) < 0) {
		json_object_put(a);
		return -1;
	}
	json_object_object_add(a, "name", json_object_new_string(name));
	json_object_object_add(a, "passed", json_object_new_boolean(ok));
	json_object_object_add(a, "evidence", json_object_new_string(evidence));
	return 0;
}

/* The requests a timeline captured and those that failed, on the basis
 * the findings count them: a request seen twice (its socket and the
 * proxy's log, the proxy's leg and the app's) is one by its ID; a record
 * without an ID is one request. */
static void request_counts(const struct tl_model *m, size_t *captured, size_t *failed)
{
	struct json_object *ids = json_object_new_object();

	*captured = *failed = 0;
	for (size_t i = 0; i < m->n_req; i++) {
		const struct tl_req *q = &m->reqs[i];

		*failed += tl_req_failed_once(q);
		if (q->id && ids) {
			if (json_object_object_get_ex(ids, q->id, NULL))
				continue;
			json_object_object_add(ids, q->id, NULL);
		}
		(*captured)++;
	}
	json_object_put(ids);
}

static const char *ratio_text(char *buf, size_t len, double r)
{
	snprintf(buf, len, "%.3f %%", r * 100);
	return buf;
}

/* One Pod's timeline against the assertions: {"pod", "status":
 * "passed"|"failed"|"missing"|"incomplete", "reason", "requests",
 * "failedRequests", "assertions": [{"name", "passed", "evidence"}]}.
 * max_failed and max_ratio < 0: not asserted on this Pod (a Deployment's
 * are asserted over all its Pods). doc is borrowed; NULL with e: missing. */
static struct json_object *check_doc(const struct cli *cli, const char *label,
				     struct json_object *doc, const struct src_err *e,
				     long max_failed, double max_ratio, int *worst,
				     size_t *ret_captured, size_t *ret_failed)
{
	struct json_object *fs = NULL, *res = json_object_new_object(),
			   *as = json_object_new_array();
	struct tl_model m;
	char ev[1024];
	bool failed_any = false;
	size_t captured = 0, nfailed = 0;

	if (!res || !as) {
		json_object_put(res);
		json_object_put(as);
		return NULL;
	}
	json_object_object_add(res, "pod", json_object_new_string(label));
	json_object_object_add(res, "assertions", as);
	if (!doc) {
		json_object_object_add(res, "status", json_object_new_string("missing"));
		json_object_object_add(res, "reason", json_object_new_string(e->msg));
		if (e->hint[0])
			json_object_object_add(res, "next", json_object_new_string(e->hint));
		*worst = EXIT_USAGE;
		return res;
	}
	if (tl_model_build(doc, &m) < 0 || doc_findings(doc, &fs) < 0) {
		tl_model_done(&m);
		json_object_object_add(res, "status", json_object_new_string("missing"));
		json_object_object_add(res, "reason",
				       json_object_new_string("not a timeline document"));
		*worst = EXIT_USAGE;
		return res;
	}
	request_counts(&m, &captured, &nfailed);
	if (ret_captured)
		*ret_captured = captured;
	if (ret_failed)
		*ret_failed = nfailed;
	json_object_object_add(res, "requests", json_object_new_int64((int64_t)captured));
	json_object_object_add(res, "failedRequests", json_object_new_int64((int64_t)nfailed));
	if (max_failed >= 0) {
		snprintf(ev, sizeof(ev), "%zu failed request%s (at most %ld allowed)", nfailed,
			 nfailed == 1 ? "" : "s", max_failed);
		add_assertion(as, "failed-requests", (long)nfailed <= max_failed, ev);
		failed_any |= (long)nfailed > max_failed;
	}
	if (max_ratio >= 0) {
		double ratio = captured ? (double)nfailed / (double)captured : 0;
		char a[32], b[32];

		snprintf(ev, sizeof(ev), "%zu of %zu captured requests failed, %s (at most %s allowed)",
			 nfailed, captured, ratio_text(a, sizeof(a), ratio),
			 ratio_text(b, sizeof(b), max_ratio));
		add_assertion(as, "failed-ratio", ratio <= max_ratio, ev);
		failed_any |= ratio > max_ratio;
	}
	if (cli->require_graceful) {
		char bad[768] = "", at[OFFSET_LEN];

		for (size_t i = 0; i < m.n_ctr; i++) {
			const struct tl_ctr *c = &m.ctr[i];
			size_t l = strlen(bad);

			if (c->sandbox || strcmp(c->name, "(unknown)") == 0)
				continue;
			if (c->sigkill_ns && (!c->sigterm_ns || c->sigkill_ns >= c->sigterm_ns))
				snprintf(bad + l, sizeof(bad) - l, "%s%s SIGKILLed at %s",
					 l ? ", " : "", c->name,
					 fmt_offset(at, c->sigkill_ns, m.ref_ns));
			else if (c->sigterm_ignored)
				snprintf(bad + l, sizeof(bad) - l, "%s%s ignored SIGTERM",
					 l ? ", " : "", c->name);
		}
		if (!m.deletion_ns && !bad[0])
			snprintf(ev, sizeof(ev), "no deletion recorded");
		else
			snprintf(ev, sizeof(ev), "%s",
				 bad[0]
				     ? bad
				     : "every container exited on its own before the grace ended");
		add_assertion(as, "graceful", !bad[0] && m.deletion_ns, ev);
		failed_any |= bad[0] || !m.deletion_ns;
	}
	if (cli->max_endpoint_lag >= 0) {
		struct json_object *lag = NULL;

		for (size_t i = 0; i < json_object_array_length(fs); i++) {
			struct json_object *f = json_object_array_get_idx(fs, i);

			if (json_str(f, "rule") &&
			    strcmp(json_str(f, "rule"), "endpoint_removal_lag") == 0)
				lag = json_path(f, "numbers.lagS");
		}
		if (lag && (json_object_is_type(lag, json_type_double) ||
			    json_object_is_type(lag, json_type_int))) {
			double v = json_object_get_double(lag);
			char d[OFFSET_LEN], lim[OFFSET_LEN];

			snprintf(ev, sizeof(ev),
				 "the endpoint left every slice %s %s the app stopped serving "
				 "(at most %s allowed)",
				 fmt_secs(d, (int64_t)(v < 0 ? -v * 1e9 : v * 1e9)),
				 v < 0 ? "before" : "after",
				 fmt_secs(lim, (int64_t)(cli->max_endpoint_lag * 1e9)));
			add_assertion(as, "endpoint-lag", v <= cli->max_endpoint_lag, ev);
			failed_any |= v > cli->max_endpoint_lag;
		} else {
			add_assertion(
			    as, "endpoint-lag", false,
			    m.deletion_ns
				? "the endpoint's removal or the app's stop was not recorded"
				: "no deletion recorded");
			failed_any = true;
		}
	}
	json_object_object_add(res, "status",
			       json_object_new_string(!m.complete  ? "incomplete"
						      : failed_any ? "failed"
								   : "passed"));
	if (!m.complete) {
		snprintf(ev, sizeof(ev), "%s; no assertion can pass on it", m.incomplete_why);
		json_object_object_add(res, "reason", json_object_new_string(ev));
		*worst = EXIT_USAGE;
	}
	if (failed_any && *worst == EXIT_FOUND)
		*worst = EXIT_NOT_FOUND;
	tl_model_done(&m);
	json_object_put(fs);
	return res;
}

static struct json_object *check_one(const struct cli *cli, const char *arg, long max_failed,
				     int *worst)
{
	struct json_object *doc = NULL, *res;
	struct src_err e;

	if (load_doc(cli, arg, &doc, true, &e) != EXIT_FOUND)
		doc = NULL;
	res = check_doc(cli, arg, doc, &e, max_failed, cli->max_ratio, worst, NULL, NULL);
	json_object_put(doc);
	return res;
}

/* "deployment" or "rollout": the selector's kind, as its object says */
static const char *sel_word(struct json_object *dep)
{
	const char *k = json_str(dep, "kind");

	return k && strcmp(k, "Rollout") == 0 ? "rollout" : "deployment";
}

static void text_out(const struct cli *cli, struct json_object *dep, struct json_object *results)
{
	if (dep) {
		struct json_object *as = json_path(dep, "assertions");
		const char *st = json_str(dep, "status");
		char who[600];

		snprintf(who, sizeof(who), "%s/%s", sel_word(dep), tx(json_str(dep, "name")));
		wrap(cli, stdout, 0, 2, tx(json_str(dep, "selection")));
		if (strcmp(st, "missing") == 0) {
			printf("%sMISSING%s %s: %s\n", col(cli, "red"), col(cli, "reset"), who,
			       tx(json_str(dep, "reason")));
			if (json_str(dep, "next"))
				printf("  next: %s\n", tx(json_str(dep, "next")));
		}
		for (size_t k = 0; k < json_object_array_length(as); k++) {
			struct json_object *a = json_object_array_get_idx(as, k);
			bool ok = json_object_get_boolean(json_path(a, "passed"));

			printf("%s%s%s %s %s: %s\n", col(cli, ok ? "green" : "red"),
			       ok ? "PASS" : "FAIL", col(cli, "reset"), who, json_str(a, "name"),
			       tx(json_str(a, "evidence")));
		}
	}
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *r = json_object_array_get_idx(results, i),
				   *as = json_path(r, "assertions");
		const char *st = json_str(r, "status"), *pod = tx(json_str(r, "pod"));

		if (strcmp(st, "missing") == 0 || strcmp(st, "incomplete") == 0) {
			printf("%s%s%s %s: %s\n", col(cli, "red"),
			       strcmp(st, "missing") == 0 ? "MISSING" : "INCOMPLETE",
			       col(cli, "reset"), pod, tx(json_str(r, "reason")));
			if (json_str(r, "next"))
				printf("  next: %s\n", tx(json_str(r, "next")));
		}
		for (size_t k = 0; k < json_object_array_length(as); k++) {
			struct json_object *a = json_object_array_get_idx(as, k);
			bool ok = json_object_get_boolean(json_path(a, "passed"));

			printf("%s%s%s %s %s: %s\n", col(cli, ok ? "green" : "red"),
			       ok ? "PASS" : "FAIL", col(cli, "reset"), pod, json_str(a, "name"),
			       tx(json_str(a, "evidence")));
		}
	}
}

static void xml(FILE *f, const char *s)
{
	/* XML 1.0 has no place for control characters: escaped for people */
	for (s = tx(s); *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* JUnit XML as CI systems read it: a testsuite per Pod, a testcase per
 * assertion; a missing or incomplete timeline is an <error>. */
static void junit_out(struct json_object *dep, struct json_object *results)
{
	size_t tests = 0, failures = 0, errors = 0;
	struct json_object *das = json_path(dep, "assertions");
	bool dmissing = dep && strcmp(json_str(dep, "status"), "missing") == 0;

	if (dep) {
		tests += json_object_array_length(das) + dmissing;
		errors += dmissing;
		for (size_t k = 0; k < json_object_array_length(das); k++)
			failures += !json_object_get_boolean(
			    json_path(json_object_array_get_idx(das, k), "passed"));
	}
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *r = json_object_array_get_idx(results, i),
				   *as = json_path(r, "assertions");
		const char *st = json_str(r, "status");

		errors += strcmp(st, "missing") == 0 || strcmp(st, "incomplete") == 0;
		tests += json_object_array_length(as) + (strcmp(st, "missing") == 0);
		for (size_t k = 0; k < json_object_array_length(as); k++)
			failures += !json_object_get_boolean(
			    json_path(json_object_array_get_idx(as, k), "passed"));
	}
	printf("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	       "<testsuites name=\"kubectl termline check\" tests=\"%zu\" failures=\"%zu\" "
	       "errors=\"%zu\">\n",
	       tests, failures, errors);
	if (dep) {
		char name[600];
		size_t nf = 0, n = json_object_array_length(das);

		snprintf(name, sizeof(name), "%s/%s/%s", sel_word(dep), json_str(dep, "namespace"),
			 json_str(dep, "name"));
		for (size_t k = 0; k < n; k++)
			nf += !json_object_get_boolean(
			    json_path(json_object_array_get_idx(das, k), "passed"));
		printf("  <testsuite name=\"");
		xml(stdout, name);
		printf("\" tests=\"%zu\" failures=\"%zu\" errors=\"%d\">\n", n + dmissing, nf,
		       dmissing);
		if (dmissing) {
			printf("    <testcase classname=\"termline.");
			xml(stdout, name);
			printf("\" name=\"timelines\">\n      <error message=\"");
			xml(stdout, json_str(dep, "reason"));
			printf("\"/>\n    </testcase>\n");
		}
		for (size_t k = 0; k < n; k++) {
			struct json_object *a = json_object_array_get_idx(das, k);

			printf("    <testcase classname=\"termline.");
			xml(stdout, name);
			printf("\" name=\"");
			xml(stdout, json_str(a, "name"));
			printf("\">");
			if (!json_object_get_boolean(json_path(a, "passed"))) {
				printf("\n      <failure message=\"");
				xml(stdout, json_str(a, "evidence"));
				printf("\"/>\n    ");
			}
			printf("</testcase>\n");
		}
		printf("  </testsuite>\n");
	}
	for (size_t i = 0; i < json_object_array_length(results); i++) {
		struct json_object *r = json_object_array_get_idx(results, i),
				   *as = json_path(r, "assertions");
		const char *st = json_str(r, "status"), *pod = json_str(r, "pod");
		size_t nf = 0, n = json_object_array_length(as);
		bool missing = strcmp(st, "missing") == 0,
		     incomplete = strcmp(st, "incomplete") == 0;

		for (size_t k = 0; k < n; k++)
			nf += !json_object_get_boolean(
			    json_path(json_object_array_get_idx(as, k), "passed"));
		if (!n && !missing && !incomplete)
			continue; /* a Deployment's Pod with nothing asserted of it alone */
		printf("  <testsuite name=\"");
		xml(stdout, pod);
		printf("\" tests=\"%zu\" failures=\"%zu\" errors=\"%d\">\n", n + missing, nf,
		       missing || incomplete);
		if (missing) {
			printf("    <testcase classname=\"termline.");
			xml(stdout, pod);
			printf("\" name=\"timeline\">\n      <error message=\"");
			xml(stdout, json_str(r, "reason"));
			printf("\"/>\n    </testcase>\n");
		}
		for (size_t k = 0; k < n; k++) {
			struct json_object *a = json_object_array_get_idx(as, k);
			bool ok = json_object_get_boolean(json_path(a, "passed"));

			printf("    <testcase classname=\"termline.");
			xml(stdout, pod);
			printf("\" name=\"");
			xml(stdout, json_str(a, "name"));
			printf("\">");
			if (!ok) {
				printf("\n      <failure message=\"");
				xml(stdout, json_str(a, "evidence"));
				printf("\"/>\n    ");
			}
			if (incomplete) {
				printf("\n      <error message=\"timeline incomplete: ");
				xml(stdout, json_str(r, "reason"));
				printf("\"/>\n    ");
			}
			printf("</testcase>\n");
		}
		printf("  </testsuite>\n");
	}
	printf("</testsuites>\n");
}

static void add_str(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, v ? json_object_new_string(v) : NULL);
}

/* check deployment/NAME (rollout/NAME: an Argo Rollout, the same way):
 * the Pods the rollout replaced (since --since, of --revision, else since
 * the current revision's ReplicaSet was created),
 * the request assertions over all of them together, the others per Pod.
 * The Deployment's object (see docs/cli.md) into *ret_dep, each Pod's
 * result into results. */
static int check_deployment(struct cli *cli, long max_failed, struct json_object *results,
			    struct json_object **ret_dep, int *worst)
{
	struct replaced sel = {0};
	struct json_object *dep = json_object_new_object(), *as = json_object_new_array();
	size_t captured = 0, failed = 0, with_failures = 0, n, incomplete = 0;
	char since[TL_TIME_STRLEN] = "", text[1600], rs[600] = "", who[700] = "", ev[1600];
	int r;

	if (!dep || !as) {
		json_object_put(dep);
		json_object_put(as);
		return EXIT_USAGE;
	}
	*ret_dep = dep;
	json_object_object_add(dep, "assertions", as);
	sel.since_ns = cli->has_since ? cli->since_ns : 0;
	sel.since_current = !cli->has_since && !cli->revision;
	r = replaced_pods(cli, cli->args[0], &sel);
	if (r) {
		replaced_done(&sel);
		return EXIT_USAGE; /* no Deployment, no source: nothing can pass */
	}
	add_str(dep, "kind", sel.rollout ? "Rollout" : "Deployment");
	add_str(dep, "name", sel.name);
	add_str(dep, "namespace", sel.ns);
	json_object_object_add(dep, "replicaSets", json_object_get(sel.names));
	if (sel.since_ns) {
		char *frac;

		tl_time_format(sel.since_ns, since);
		/* a whole second as people write it */
		frac = strstr(since, ".000000000Z");
		if (frac)
			strcpy(frac, "Z");
	}
	add_str(dep, "since", since[0] ? since : NULL);
	json_object_object_add(dep, "revision",
			       cli->revision ? json_object_new_int64(cli->revision) : NULL);
	for (size_t i = 0; i < json_object_array_length(sel.names); i++) {
		size_t l = strlen(rs);

		snprintf(rs + l, sizeof(rs) - l, "%s%s", i ? ", " : "",
			 json_object_get_string(json_object_array_get_idx(sel.names, i)));
	}
	n = json_object_array_length(sel.docs);
	for (size_t i = 0; i < n; i++) {
		struct json_object *d = json_object_array_get_idx(sel.docs, i), *res;
		char label[600];
		size_t c = 0, f = 0;

		snprintf(label, sizeof(label), "%s/%s", json_str(json_path(d, "pod"), "namespace"),
			 json_str(json_path(d, "pod"), "name"));
		res = check_doc(cli, label, d, NULL, -1, -1, worst, &c, &f);
		if (!res || json_object_array_add(results, res) < 0) {
			json_object_put(res);
			replaced_done(&sel);
			return EXIT_USAGE;
		}
		incomplete += strcmp(json_str(res, "status"), "incomplete") == 0;
		captured += c;
		failed += f;
		if (f) {
			size_t l = strlen(who);

			/* the Pods that failed requests, as many as the line holds */
			if (with_failures < 5)
				snprintf(who + l, sizeof(who) - l, "%s%s %zu", with_failures ? ", " : "",
					 json_str(json_path(d, "pod"), "name"), f);
			else if (with_failures == 5)
				snprintf(who + l, sizeof(who) - l, ", %s", glyph_ellipsis(cli));
			with_failures++;
		}
	}
	/* what was selected, in words */
	if (sel.guessed)
		snprintf(rs, sizeof(rs), "the ReplicaSets named %s-<hash>", sel.name);
	snprintf(text, sizeof(text), "%s %s/%s: %zu Pod%s of %s%s%s%s", replaced_kind(&sel), sel.ns,
		 sel.name, n, n == 1 ? "" : "s", rs[0] ? rs : "no replaced ReplicaSet",
		 since[0] ? " replaced since " : "", since,
		 since[0] && !cli->has_since && sel.current_revision
		     ? " (when the current revision's ReplicaSet was created)"
		     : "");
	if (cli->revision) {
		size_t l = strlen(text);

		snprintf(text + l, sizeof(text) - l, " (revision %ld)", cli->revision);
	}
	if (sel.guessed) {
		size_t l = strlen(text);

		snprintf(text + l, sizeof(text) - l, " (--from has no API server to ask)");
	}
	add_str(dep, "selection", text);
	json_object_object_add(dep, "pods", json_object_new_int64((int64_t)n));
	json_object_object_add(dep, "podsWithFailedRequests",
			       json_object_new_int64((int64_t)with_failures));
	json_object_object_add(dep, "requests", json_object_new_int64((int64_t)captured));
	json_object_object_add(dep, "failedRequests", json_object_new_int64((int64_t)failed));
	if (!n) {
		/* nothing to judge is no pass: exit 2 */
		add_str(dep, "status", "missing");
		snprintf(ev, sizeof(ev),
			 "no timeline of a Pod of %s replaced%s%s: the rollout has not replaced "
			 "one yet, or no agent recorded it",
			 rs[0] ? rs : sel.rollout ? "the Rollout" : "the Deployment",
			 since[0] ? " since " : "", since);
		add_str(dep, "reason", ev);
		snprintf(ev, sizeof(ev), "kubectl termline list -n %s", sel.ns);
		add_str(dep, "next", ev);
		*worst = EXIT_USAGE;
		replaced_done(&sel);
		return 0;
	}
	if (max_failed >= 0) {
		snprintf(ev, sizeof(ev), "%zu failed request%s in %zu of %zu Pod%s (at most %ld allowed)%s%s",
			 failed, failed == 1 ? "" : "s", with_failures, n, n == 1 ? "" : "s",
			 max_failed, who[0] ? ": " : "", who);
		add_assertion(as, "failed-requests", (long)failed <= max_failed, ev);
		if ((long)failed > max_failed && *worst == EXIT_FOUND)
			*worst = EXIT_NOT_FOUND;
	}
	if (cli->max_ratio >= 0) {
		double ratio = captured ? (double)failed / (double)captured : 0;
		char a[32], b[32];

		snprintf(ev, sizeof(ev),
			 "%zu of %zu captured requests failed in %zu Pod%s, %s (at most %s allowed)",
			 failed, captured, n, n == 1 ? "" : "s", ratio_text(a, sizeof(a), ratio),
			 ratio_text(b, sizeof(b), cli->max_ratio));
		add_assertion(as, "failed-ratio", ratio <= cli->max_ratio, ev);
		if (ratio > cli->max_ratio && *worst == EXIT_FOUND)
			*worst = EXIT_NOT_FOUND;
	}
	{
		bool any_failed = false;

		for (size_t k = 0; k < json_object_array_length(as); k++)
			any_failed |=
			    !json_object_get_boolean(json_path(json_object_array_get_idx(as, k), "passed"));
		add_str(dep, "status", incomplete ? "incomplete" : any_failed ? "failed" : "passed");
	}
	replaced_done(&sel);
	return 0;
}

int cmd_check(struct cli *cli)
{
	long max_failed = cli->max_failed;
	int worst = EXIT_FOUND;
	struct json_object *results = json_object_new_array(), *dep = NULL;
	bool deployment = cli->nargs >= 1 && is_workload_arg(cli->args[0]);

	if (!results)
		return EXIT_USAGE;
	if (deployment && cli->nargs > 1) {
		cli_err(cli, "check %s takes no other Pod (one Deployment or Rollout, or Pods)",
			cli->args[0]);
		json_object_put(results);
		return EXIT_USAGE;
	}
	if (!deployment && (cli->given & (F_SINCE | F_REVISION))) {
		cli_err(cli, "--since and --revision choose a Deployment's replaced Pods: "
			     "kubectl termline check deployment/NAME (or an Argo Rollout's: "
			     "rollout/NAME)");
		json_object_put(results);
		return EXIT_USAGE;
	}
	if (max_failed < 0 && !cli->require_graceful && cli->max_endpoint_lag < 0 &&
	    cli->max_ratio < 0)
		max_failed = 0;
	if (deployment) {
		int r = check_deployment(cli, max_failed, results, &dep, &worst);

		if (r) {
			json_object_put(dep);
			json_object_put(results);
			return r;
		}
	}
	for (int i = 0; !deployment && i < cli->nargs; i++) {
		struct json_object *r = check_one(cli, cli->args[i], max_failed, &worst);

		if (!r || json_object_array_add(results, r) < 0) {
			json_object_put(r);
			json_object_put(results);
			return EXIT_USAGE;
		}
	}
	if (output_is(cli, "junit")) {
		junit_out(dep, results);
	} else if (!output_is(cli, "text")) {
		struct json_object *o = json_object_new_object();

		/* under "rollout" for an Argo Rollout */
		if (o && dep && json_object_object_add(o, sel_word(dep), json_object_get(dep)) < 0) {
			json_object_put(dep);
			worst = EXIT_USAGE;
		}
		if (!o || json_object_object_add(o, "results", json_object_get(results)) < 0 ||
		    json_object_object_add(o, "passed",
					   json_object_new_boolean(worst == EXIT_FOUND)) < 0 ||
		    json_object_object_add(o, "exitStatus", json_object_new_int(worst)) < 0 ||
		    print_structured(cli, o) != EXIT_FOUND)
			worst = EXIT_USAGE;
		json_object_put(o);
	} else {
		text_out(cli, dep, results);
	}
	json_object_put(dep);
	json_object_put(results);
	return worst;
}
