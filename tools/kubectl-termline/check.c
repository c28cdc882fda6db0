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

/* {"pod", "status": "passed"|"failed"|"missing"|"incomplete", "reason",
 * "assertions": [{"name", "passed", "evidence"}]} */
static struct json_object *check_one(const struct cli *cli, const char *arg, long max_failed,
				     int *worst)
{
	struct json_object *doc = NULL, *fs = NULL, *res = json_object_new_object(),
			   *as = json_object_new_array();
	struct src_err e;
	struct tl_model m;
	char ev[1024];
	int r;
	bool failed_any = false;

	if (!res || !as) {
		json_object_put(res);
		json_object_put(as);
		return NULL;
	}
	json_object_object_add(res, "pod", json_object_new_string(arg));
	json_object_object_add(res, "assertions", as);
	r = load_doc(cli, arg, &doc, true, &e);
	if (r != EXIT_FOUND) {
		json_object_object_add(res, "status", json_object_new_string("missing"));
		json_object_object_add(res, "reason", json_object_new_string(e.msg));
		if (e.hint[0])
			json_object_object_add(res, "next", json_object_new_string(e.hint));
		*worst = EXIT_USAGE;
		return res;
	}
	if (tl_model_build(doc, &m) < 0 || doc_findings(doc, &fs) < 0) {
		tl_model_done(&m);
		json_object_object_add(res, "status", json_object_new_string("missing"));
		json_object_object_add(res, "reason",
				       json_object_new_string("not a timeline document"));
		*worst = EXIT_USAGE;
		json_object_put(doc);
		return res;
	}
	if (max_failed >= 0) {
		size_t n = doc_failed_requests(doc);

		snprintf(ev, sizeof(ev), "%zu failed request%s (at most %ld allowed)", n,
			 n == 1 ? "" : "s", max_failed);
		add_assertion(as, "failed-requests", (long)n <= max_failed, ev);
		failed_any |= (long)n > max_failed;
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
	json_object_put(doc);
	return res;
}

static void text_out(const struct cli *cli, struct json_object *results)
{
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
static void junit_out(struct json_object *results)
{
	size_t tests = 0, failures = 0, errors = 0;

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

int cmd_check(struct cli *cli)
{
	long max_failed = cli->max_failed;
	int worst = EXIT_FOUND;
	struct json_object *results = json_object_new_array();

	if (!results)
		return EXIT_USAGE;
	if (max_failed < 0 && !cli->require_graceful && cli->max_endpoint_lag < 0)
		max_failed = 0;
	for (int i = 0; i < cli->nargs; i++) {
		struct json_object *r = check_one(cli, cli->args[i], max_failed, &worst);

		if (!r || json_object_array_add(results, r) < 0) {
			json_object_put(r);
			json_object_put(results);
			return EXIT_USAGE;
		}
	}
	if (output_is(cli, "junit")) {
		junit_out(results);
	} else if (!output_is(cli, "text")) {
		struct json_object *o = json_object_new_object();

		if (!o || json_object_object_add(o, "results", json_object_get(results)) < 0 ||
		    json_object_object_add(o, "passed",
					   json_object_new_boolean(worst == EXIT_FOUND)) < 0 ||
		    json_object_object_add(o, "exitStatus", json_object_new_int(worst)) < 0 ||
		    print_structured(cli, o) != EXIT_FOUND)
			worst = EXIT_USAGE;
		json_object_put(o);
	} else {
		text_out(cli, results);
	}
	json_object_put(results);
	return worst;
}
