// SPDX-License-Identifier: Apache-2.0
/* explain NS/POD: the findings, most severe first, with their numbers, the
 * request IDs involved and the recommended setting. The CLI computes them
 * with its own rules (the agent's stored ones may be older). */
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"

static void wrap_ids(FILE *f, struct json_object *ids)
{
	size_t n = json_object_array_length(ids), col = 0;

	for (size_t i = 0; i < n; i++) {
		const char *id = json_object_get_string(json_object_array_get_idx(ids, i));
		size_t l = strlen(id);

		if (col == 0 || col + l + 1 > 76) {
			fprintf(f, "%s      ", col ? "\n" : "");
			col = 6;
		}
		fprintf(f, " %s", id);
		col += l + 1;
	}
	if (n)
		fputc('\n', f);
}

int explain_text(FILE *f, const struct cli *cli, struct json_object *doc, struct json_object *fs)
{
	struct json_object *pod = json_path(doc, "pod");
	size_t n = json_object_array_length(fs);
	bool complete =
	    json_path(doc, "complete") && json_object_get_boolean(json_path(doc, "complete"));

	fprintf(f,
		"%s%s/%s%s: %zu finding%s%s, %zu failed request%s; times are seconds from the "
		"deletion request\n",
		col(cli, "bold"), json_str(pod, "namespace") ? json_str(pod, "namespace") : "?",
		json_str(pod, "name") ? json_str(pod, "name") : "?", col(cli, "reset"), n,
		n == 1 ? "" : "s", n > 1 ? " (most severe first)" : "", doc_failed_requests(doc),
		doc_failed_requests(doc) == 1 ? "" : "s");
	if (!complete)
		fprintf(f, "%sthe timeline is INCOMPLETE: every finding below may miss events%s\n",
			col(cli, "red"), col(cli, "reset"));
	for (size_t i = 0; i < n; i++) {
		struct json_object *x = json_object_array_get_idx(fs, i), *ids, *nums, *reco;
		const char *sev = json_str(x, "severity");
		int rank = tl_finding_severity_rank(sev);

		fprintf(f, "\n%s%-7s %s%s\n",
			col(cli, rank == 3   ? "red"
				 : rank == 2 ? "yellow"
					     : "dim"),
			sev ? sev : "?", json_str(x, "rule") ? json_str(x, "rule") : "?",
			col(cli, "reset"));
		fprintf(f, "  %s\n", json_str(x, "summary") ? json_str(x, "summary") : "");
		if (json_object_object_get_ex(x, "numbers", &nums) &&
		    json_object_is_type(nums, json_type_object)) {
			fprintf(f, "  numbers:");
			json_object_object_foreach(nums, k, v)
			    fprintf(f, " %s=%s", k, json_object_to_json_string(v));
			fputc('\n', f);
		}
		if (json_object_object_get_ex(x, "requestIds", &ids) &&
		    json_object_array_length(ids)) {
			fprintf(f, "  request IDs (%zu):\n", json_object_array_length(ids));
			wrap_ids(f, ids);
		}
		if (json_object_object_get_ex(x, "recommendation", &reco)) {
			struct json_object *v;
			const char *vs = json_object_object_get_ex(reco, "value", &v)
					     ? json_object_get_string(v)
					     : "?";

			fprintf(f, "  %srecommended:%s %s = %s\n", col(cli, "green"),
				col(cli, "reset"),
				json_str(reco, "setting") ? json_str(reco, "setting") : "?", vs);
			fprintf(f, "    because %s\n",
				json_str(reco, "formula") ? json_str(reco, "formula") : "");
			if (json_object_object_get_ex(reco, "gate", &v)) {
				fprintf(f, "  %sor wait for the drain:%s %s = %s\n",
					col(cli, "green"), col(cli, "reset"),
					json_str(v, "setting") ? json_str(v, "setting") : "?",
					json_str(v, "value") ? json_str(v, "value") : "?");
				fprintf(f, "    which %s\n",
					json_str(v, "formula") ? json_str(v, "formula") : "");
			}
		}
	}
	if (!n)
		fprintf(f, "no findings: nothing failed that the rules recognise\n");
	return 0;
}

int cmd_explain(struct cli *cli)
{
	struct json_object *doc, *fs = NULL;
	int r;

	if (cli->nargs != 1) {
		cli_err(cli, "explain takes one NAMESPACE/POD");
		return EXIT_USAGE;
	}
	if (cli->output && strcmp(cli->output, "text") && strcmp(cli->output, "json")) {
		cli_err(cli, "explain: -o text or json");
		return EXIT_USAGE;
	}
	r = load_doc(cli, cli->args[0], &doc);
	if (r != EXIT_FOUND)
		return r;
	if (resolve_peers(cli, doc) < 0 || doc_findings(doc, &fs) < 0) {
		cli_err(cli, "%s: not a timeline document", cli->args[0]);
		json_object_put(doc);
		return EXIT_USAGE;
	}
	if (cli->output && strcmp(cli->output, "json") == 0) {
		struct json_object *o = json_object_new_object();

		if (!o || json_object_object_add(o, "findings", json_object_get(fs)) < 0 ||
		    print_json(stdout, o) < 0)
			r = EXIT_USAGE;
		json_object_put(o);
	} else {
		explain_text(stdout, cli, doc, fs);
	}
	json_object_put(fs);
	json_object_put(doc);
	return r;
}
