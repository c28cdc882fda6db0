// SPDX-License-Identifier: Apache-2.0
/* list: a table of timelines (namespace, Pod, owner, state, start,
 * deletion, duration, failed requests, findings, complete). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "findings.h"

struct row {
	const char *ns, *name, *uid, *state;
	char owner[300], start[32], deletion[32], duration[32];
	size_t failed, findings;
	bool complete;
};

static void hhmmss(int64_t ns, char *buf, size_t len)
{
	char t[TL_TIME_STRLEN];

	if (!ns) {
		snprintf(buf, len, "-");
		return;
	}
	tl_time_format(ns, t);
	snprintf(buf, len, "%.19sZ", t);
}

static int row_of(struct json_object *doc, struct row *r)
{
	struct json_object *pod = json_path(doc, "pod"), *owner = json_path(doc, "pod.owner"),
			   *fs = NULL;
	struct tl_model m;
	int64_t end;

	memset(r, 0, sizeof(*r));
	if (tl_model_build(doc, &m) < 0) {
		tl_model_done(&m);
		return -EINVAL;
	}
	r->ns = json_str(pod, "namespace") ? json_str(pod, "namespace") : "-";
	r->name = json_str(pod, "name") ? json_str(pod, "name") : "-";
	r->uid = json_str(pod, "uid") ? json_str(pod, "uid") : "-";
	if (json_str(owner, "kind"))
		snprintf(r->owner, sizeof(r->owner), "%s/%s", json_str(owner, "kind"),
			 json_str(owner, "name") ? json_str(owner, "name") : "?");
	else
		snprintf(r->owner, sizeof(r->owner), "-");
	r->state = m.deleted_ns ? "closed" : "open";
	hhmmss(m.first_ns, r->start, sizeof(r->start));
	hhmmss(m.deletion_ns, r->deletion, sizeof(r->deletion));
	end = m.deleted_ns ? m.deleted_ns : m.last_ns;
	if (m.deletion_ns && end >= m.deletion_ns)
		snprintf(r->duration, sizeof(r->duration), "%.1fs",
			 (double)(end - m.deletion_ns) / 1e9);
	else
		snprintf(r->duration, sizeof(r->duration), "-");
	tl_model_done(&m);
	r->failed = doc_failed_requests(doc);
	if (doc_findings(doc, &fs) == 0)
		r->findings = json_object_array_length(fs);
	json_object_put(fs);
	r->complete =
	    json_path(doc, "complete") && json_object_get_boolean(json_path(doc, "complete"));
	return 0;
}

int cmd_list(struct cli *cli)
{
	struct source *src = NULL;
	struct json_object *docs = NULL, *out = NULL, *arr = NULL;
	char err[1024] = "";
	bool json = cli->output && strcmp(cli->output, "json") == 0;
	int r;

	if (cli->nargs) {
		cli_err(cli, "list takes no arguments (-n NAMESPACE)");
		return EXIT_USAGE;
	}
	if (cli->output && !json && strcmp(cli->output, "text")) {
		cli_err(cli, "list: -o text or json");
		return EXIT_USAGE;
	}
	r = source_open(cli, &src, err, sizeof(err));
	if (r == 0)
		r = source_list(src, cli->all_namespaces ? NULL : cli->ns, NULL, NULL, 0, &docs,
				err, sizeof(err));
	source_free(src);
	if (r < 0) {
		cli_err(cli, "%s", err[0] ? err : strerror(-r));
		return EXIT_USAGE;
	}
	if (json) {
		out = json_object_new_object();
		arr = json_object_new_array();
		if (!out || !arr || json_object_object_add(out, "timelines", arr) < 0) {
			json_object_put(arr);
			r = -ENOMEM;
			goto done;
		}
	} else if (json_object_array_length(docs)) {
		printf("%-12s %-32s %-24s %-6s %-20s %-20s %8s %6s %8s %s\n", "NAMESPACE", "POD",
		       "OWNER", "STATE", "START", "DELETION", "DURATION", "FAILED", "FINDINGS",
		       "COMPLETE");
	}
	for (size_t i = 0; i < json_object_array_length(docs); i++) {
		struct row w;

		if (row_of(json_object_array_get_idx(docs, i), &w) < 0)
			continue;
		if (json) {
			struct json_object *o = json_object_new_object();

			if (!o || json_object_array_add(arr, o) < 0) {
				json_object_put(o);
				r = -ENOMEM;
				goto done;
			}
			json_object_object_add(o, "namespace", json_object_new_string(w.ns));
			json_object_object_add(o, "name", json_object_new_string(w.name));
			json_object_object_add(o, "uid", json_object_new_string(w.uid));
			json_object_object_add(o, "owner", json_object_new_string(w.owner));
			json_object_object_add(o, "state", json_object_new_string(w.state));
			json_object_object_add(o, "start", json_object_new_string(w.start));
			json_object_object_add(o, "deletion", json_object_new_string(w.deletion));
			json_object_object_add(o, "duration", json_object_new_string(w.duration));
			json_object_object_add(o, "failedRequests",
					       json_object_new_int64((int64_t)w.failed));
			json_object_object_add(o, "findings",
					       json_object_new_int64((int64_t)w.findings));
			json_object_object_add(o, "complete", json_object_new_boolean(w.complete));
		} else {
			printf("%-12s %-32s %-24s %-6s %-20s %-20s %8s %s%6zu%s %8zu %s%s%s\n",
			       w.ns, w.name, w.owner, w.state, w.start, w.deletion, w.duration,
			       w.failed ? col(cli, "red") : "", w.failed,
			       w.failed ? col(cli, "reset") : "", w.findings,
			       w.complete ? "" : col(cli, "red"), w.complete ? "yes" : "NO",
			       w.complete ? "" : col(cli, "reset"));
		}
	}
	if (json && print_json(stdout, out) < 0)
		r = -EIO;
	if (!json && !json_object_array_length(docs))
		fprintf(stderr, "no timelines\n");
done:
	json_object_put(out);
	json_object_put(docs);
	return r < 0 ? EXIT_USAGE : EXIT_FOUND;
}
