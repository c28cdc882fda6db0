// SPDX-License-Identifier: Apache-2.0
/* show NS/POD: one line per event, offset from the deletion request, a lane
 * per container plus one for the API server and endpoints. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "findings.h"
#include "json-util.h"

int load_doc(const struct cli *cli, const char *arg, struct json_object **ret)
{
	struct source *src = NULL;
	char err[1024] = "", *ns = NULL, *name = NULL;
	int r;

	r = source_open(cli, &src, err, sizeof(err));
	if (r < 0) {
		cli_err(cli, "%s", err[0] ? err : strerror(-r));
		return EXIT_USAGE;
	}
	if (split_ns_name(arg, source_namespace(src, cli), &ns, &name) < 0) {
		cli_err(cli, "%s: not NAMESPACE/POD", arg);
		source_free(src);
		return EXIT_USAGE;
	}
	r = source_get(src, ns, name, ret, err, sizeof(err));
	source_free(src);
	free(ns);
	free(name);
	if (r == -ENOENT) {
		cli_err(cli, "%s", err);
		return EXIT_NOT_FOUND;
	}
	if (r < 0) {
		cli_err(cli, "%s", err[0] ? err : strerror(-r));
		return EXIT_USAGE;
	}
	return EXIT_FOUND;
}

static long long jint(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? (long long)json_object_get_int64(v) : 0;
}

#define S(k) (json_str(ev, k) ? json_str(ev, k) : "?")

void describe_event(struct json_object *ev, char *buf, size_t len)
{
	const char *t = json_str(ev, "type");

	if (!t)
		t = "?";
	if (strcmp(t, "pod.deletion_requested") == 0)
		snprintf(buf, len, "deletion requested (grace %lld s)",
			 jint(ev, "gracePeriodSeconds"));
	else if (strcmp(t, "pod.condition") == 0)
		snprintf(buf, len, "condition %s=%s", S("condition"), S("status"));
	else if (strcmp(t, "container.terminated") == 0)
		snprintf(buf, len, "terminated: exit code %lld (%s)", jint(ev, "exitCode"),
			 S("reason"));
	else if (strcmp(t, "pod.deleted") == 0)
		snprintf(buf, len, "Pod deleted");
	else if (strcmp(t, "endpoint.condition") == 0)
		snprintf(buf, len, "endpoint in %s: ready=%s serving=%s terminating=%s",
			 S("endpointSlice"), tl_json_bool(ev, "ready", true) ? "true" : "false",
			 tl_json_bool(ev, "serving", true) ? "true" : "false",
			 tl_json_bool(ev, "terminating", false) ? "true" : "false");
	else if (strcmp(t, "endpoint.removed") == 0)
		snprintf(buf, len, "endpoint removed from %s", S("endpointSlice"));
	else if (strcmp(t, "process.signal") == 0)
		snprintf(buf, len, "%s to %s(%lld) from %s(%lld): %s", S("signal"), S("comm"),
			 jint(ev, "pid"), S("senderComm"), jint(ev, "senderPid"), S("result"));
	else if (strcmp(t, "process.signal_delivered") == 0)
		snprintf(buf, len, "%s reached a handler in %s(%lld)", S("signal"), S("comm"),
			 jint(ev, "pid"));
	else if (strcmp(t, "process.exec") == 0)
		snprintf(buf, len, "exec %s (%s, pid %lld)", S("filename"), S("comm"),
			 jint(ev, "pid"));
	else if (strcmp(t, "process.exit") == 0) {
		if (jint(ev, "exitSignal"))
			snprintf(buf, len, "%s(%lld) exited: killed by signal %lld", S("comm"),
				 jint(ev, "pid"), jint(ev, "exitSignal"));
		else
			snprintf(buf, len, "%s(%lld) exited: code %lld", S("comm"), jint(ev, "pid"),
				 jint(ev, "exitCode"));
	} else if (strcmp(t, "socket.listen") == 0)
		snprintf(buf, len, "listening on %s:%lld", S("address"), jint(ev, "port"));
	else if (strcmp(t, "socket.listen_closed") == 0)
		snprintf(buf, len, "stopped listening on %s:%lld", S("address"), jint(ev, "port"));
	else if (strcmp(t, "tcp.reset_sent") == 0)
		snprintf(buf, len, "reset sent %s -> %s", S("local"), S("remote"));
	else if (strcmp(t, "tcp.reset_received") == 0)
		snprintf(buf, len, "reset received %s <- %s", S("local"), S("remote"));
	else if (strcmp(t, "http.request") == 0) {
		struct json_object *d;
		double ms =
		    json_object_object_get_ex(ev, "durationMs", &d) ? json_object_get_double(d) : 0;
		const char *fl = json_str(ev, "responseFlags");

		snprintf(buf, len, "%s %s %s %s -> %lld%s%s id=%s (%.0f ms)", S("direction"),
			 S("method"), S("path"),
			 json_str(ev, "source") && strcmp(json_str(ev, "source"), "log") == 0
			     ? "[log]"
			     : "[socket]",
			 jint(ev, "status"), fl && strcmp(fl, "-") ? " " : "",
			 fl && strcmp(fl, "-") ? fl : "",
			 json_str(ev, "requestId") ? json_str(ev, "requestId") : "-", ms);
	} else if (strcmp(t, "events.aggregated") == 0)
		snprintf(buf, len, "%lld x %s (aggregated)", jint(ev, "count"),
			 S("aggregatedType"));
	else
		snprintf(buf, len, "%s", t);
}

static const char *color_of(const struct cli *cli, struct json_object *ev)
{
	const char *t = json_str(ev, "type");

	if (!t)
		return "";
	if (strcmp(t, "http.request") == 0) {
		long long st = jint(ev, "status");

		return st == 0 || st >= 500 ? col(cli, "red") : col(cli, "green");
	}
	if (strncmp(t, "tcp.reset", 9) == 0)
		return col(cli, "red");
	if (strcmp(t, "process.signal") == 0 || strcmp(t, "process.exit") == 0)
		return col(cli, "yellow");
	if (strncmp(t, "pod.", 4) == 0 || strncmp(t, "endpoint.", 9) == 0)
		return col(cli, "cyan");
	return "";
}

/* Lanes: API/endpoints, then each container of the document in order. */
static int show_text(const struct cli *cli, FILE *f, struct json_object *doc)
{
	struct tl_model m;
	struct json_object *evs = json_path(doc, "events");
	const char *lane[TL_FINDINGS_MAX_CONTAINERS + 1];
	int width[TL_FINDINGS_MAX_CONTAINERS + 1];
	size_t nl = 1;
	const char *ns = json_str(json_path(doc, "pod"), "namespace"),
		   *name = json_str(json_path(doc, "pod"), "name");
	int r = tl_model_build(doc, &m);

	if (r < 0) {
		tl_model_done(&m);
		cli_err(cli, "not a timeline document");
		return EXIT_USAGE;
	}
	lane[0] = "API";
	for (size_t i = 0; i < m.n_ctr && nl <= TL_FINDINGS_MAX_CONTAINERS; i++)
		if (!m.ctr[i].sandbox && strcmp(m.ctr[i].name, "(unknown)") != 0)
			lane[nl++] = m.ctr[i].name;
	for (size_t i = 0; i < nl; i++)
		width[i] = (int)strlen(lane[i]) < 3 ? 3 : (int)strlen(lane[i]);
	fprintf(
	    f, "%s%s/%s%s uid %s on %s: %s%s, grace %d s, %s\n", col(cli, "bold"), ns ? ns : "?",
	    name ? name : "?", col(cli, "reset"),
	    json_str(json_path(doc, "pod"), "uid") ? json_str(json_path(doc, "pod"), "uid") : "?",
	    json_str(json_path(doc, "pod"), "node") ? json_str(json_path(doc, "pod"), "node") : "?",
	    m.deletion_ns ? "offsets from the deletion request" : "offsets from the ",
	    m.deletion_ns ? "" : m.ref_what, m.grace_s, m.complete ? "complete" : "INCOMPLETE");
	if (!m.complete)
		fprintf(f, "%sincomplete: %s%s\n", col(cli, "red"), m.incomplete_why,
			col(cli, "reset"));
	fprintf(f, "%-9s", "OFFSET");
	for (size_t i = 0; i < nl; i++)
		fprintf(f, "  %-*s", width[i], lane[i]);
	fprintf(f, "  EVENT\n");
	for (size_t k = 0; evs && k < json_object_array_length(evs); k++) {
		struct json_object *ev = json_object_array_get_idx(evs, k);
		const char *c = json_str(ev, "container");
		char off[32], text[1024];
		size_t at = 0;

		for (size_t i = 1; c && i < nl; i++)
			if (strcmp(lane[i], c) == 0)
				at = i;
		fmt_offset(off, sizeof(off), tl_event_time(ev) - m.ref_ns);
		describe_event(ev, text, sizeof(text));
		fprintf(f, "%-9s", off);
		for (size_t i = 0; i < nl; i++)
			fprintf(f, "  %s%-*s%s", i == at ? color_of(cli, ev) : "", width[i],
				i == at ? "*" : "|", i == at ? col(cli, "reset") : "");
		fprintf(f, "  %s%s%s%s%s\n", color_of(cli, ev), text, c && !at ? " " : "",
			c && !at ? c : "", *color_of(cli, ev) ? col(cli, "reset") : "");
	}
	tl_model_done(&m);
	return EXIT_FOUND;
}

int cmd_show(struct cli *cli)
{
	struct json_object *doc;
	int r;

	if (cli->nargs != 1) {
		cli_err(cli, "show takes one NAMESPACE/POD");
		return EXIT_USAGE;
	}
	if (cli->output && strcmp(cli->output, "text") && strcmp(cli->output, "json")) {
		cli_err(cli, "show: -o text or json");
		return EXIT_USAGE;
	}
	r = load_doc(cli, cli->args[0], &doc);
	if (r != EXIT_FOUND)
		return r;
	if (cli->output && strcmp(cli->output, "json") == 0)
		r = print_json(stdout, doc) < 0 ? EXIT_USAGE : EXIT_FOUND;
	else
		r = show_text(cli, stdout, doc);
	json_object_put(doc);
	return r;
}
