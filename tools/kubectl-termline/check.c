// SPDX-License-Identifier: Apache-2.0
/* check NS/POD...: a gate for delivery pipelines. One PASS/FAIL line per
 * assertion with its evidence; exit 1 when any failed, 0 when all passed,
 * 2 when a timeline is missing or incomplete: never a silent pass. With no
 * assertion given, --max-failed-requests 0 is asserted. */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"

static void line(const struct cli *cli, bool ok, const char *pod, const char *what,
		 const char *evidence)
{
	printf("%s%s%s %s %s: %s\n", col(cli, ok ? "green" : "red"), ok ? "PASS" : "FAIL",
	       col(cli, "reset"), pod, what, evidence);
}

static int check_one(const struct cli *cli, const char *arg, long max_failed, int *worst)
{
	struct json_object *doc = NULL, *fs = NULL;
	struct tl_model m;
	char ev[1024];
	int r = load_doc(cli, arg, &doc);
	bool failed_any = false;

	if (r != EXIT_FOUND) {
		printf("%sMISSING%s %s: no timeline (%s)\n", col(cli, "red"), col(cli, "reset"),
		       arg, r == EXIT_NOT_FOUND ? "not recorded" : "source unreachable");
		*worst = EXIT_USAGE;
		return 0;
	}
	if (tl_model_build(doc, &m) < 0 || doc_findings(doc, &fs) < 0) {
		tl_model_done(&m);
		printf("MISSING %s: not a timeline document\n", arg);
		*worst = EXIT_USAGE;
		json_object_put(doc);
		return 0;
	}
	if (!m.complete) {
		printf("%sINCOMPLETE%s %s: %s; no assertion can pass on it\n", col(cli, "red"),
		       col(cli, "reset"), arg, m.incomplete_why);
		*worst = EXIT_USAGE;
	}
	if (max_failed >= 0) {
		size_t n = doc_failed_requests(doc);

		snprintf(ev, sizeof(ev), "%zu failed request%s (at most %ld allowed)", n,
			 n == 1 ? "" : "s", max_failed);
		line(cli, (long)n <= max_failed, arg, "failed-requests", ev);
		failed_any |= (long)n > max_failed;
	}
	if (cli->require_graceful) {
		char bad[768] = "";

		for (size_t i = 0; i < m.n_ctr; i++) {
			const struct tl_ctr *c = &m.ctr[i];
			size_t l = strlen(bad);

			if (c->sandbox || strcmp(c->name, "(unknown)") == 0)
				continue;
			if (c->sigkill_ns && (!c->sigterm_ns || c->sigkill_ns >= c->sigterm_ns))
				snprintf(bad + l, sizeof(bad) - l, "%s%s SIGKILLed at %+.3f s",
					 l ? ", " : "", c->name,
					 (double)(c->sigkill_ns - m.ref_ns) / 1e9);
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
		line(cli, !bad[0] && m.deletion_ns, arg, "graceful", ev);
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
		if (lag && json_object_is_type(lag, json_type_double)) {
			double v = json_object_get_double(lag);

			snprintf(ev, sizeof(ev),
				 "the endpoint left every slice %.3f s %s the app stopped serving "
				 "(at most %.3f s allowed)",
				 v < 0 ? -v : v, v < 0 ? "before" : "after", cli->max_endpoint_lag);
			line(cli, v <= cli->max_endpoint_lag, arg, "endpoint-lag", ev);
			failed_any |= v > cli->max_endpoint_lag;
		} else {
			line(cli, false, arg, "endpoint-lag",
			     m.deletion_ns
				 ? "the endpoint's removal or the app's stop was not recorded"
				 : "no deletion recorded");
			failed_any = true;
		}
	}
	if (failed_any && *worst == EXIT_FOUND)
		*worst = EXIT_NOT_FOUND;
	tl_model_done(&m);
	json_object_put(fs);
	json_object_put(doc);
	return 0;
}

int cmd_check(struct cli *cli)
{
	long max_failed = cli->max_failed;
	int worst = EXIT_FOUND;

	if (cli->nargs < 1) {
		cli_err(cli, "check takes one or more NAMESPACE/POD");
		return EXIT_USAGE;
	}
	if (max_failed < 0 && !cli->require_graceful && cli->max_endpoint_lag < 0)
		max_failed = 0;
	for (int i = 0; i < cli->nargs; i++)
		check_one(cli, cli->args[i], max_failed, &worst);
	return worst;
}
