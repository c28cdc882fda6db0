// SPDX-License-Identifier: Apache-2.0
/* render -o trace: the timeline as Chrome Trace Event JSON (Perfetto UI,
 * chrome://tracing): a track per container, one for the API server and
 * endpoints and one for the findings (a slice over each finding's window);
 * complete slices for the preStop and drain spans, async slices for
 * requests (they overlap), instants with human names for the rest, their
 * offset from the deletion in args. Perfetto refuses negative timestamps,
 * so ts counts microseconds from the first thing recorded, and the
 * deletion is a global instant across every track (otherData.referenceTs
 * says where it is). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "findings.h"

#define CONSUMER_TRACKS 32 /* a track per consumer up to this many, else per workload or kind */

struct tr {
	struct json_object *evs;
	int64_t t0;
	const char *lane[TL_FINDINGS_MAX_CONTAINERS + 1];
	size_t nl;
	struct consumers cs;
	size_t first_consumer; /* the tid - 1 of the consumers' first track */
};

static int lane_of(const struct tr *t, const char *c)
{
	for (size_t i = 1; c && i < t->nl; i++)
		if (strcmp(t->lane[i], c) == 0)
			return (int)i;
	return 0;
}

static struct json_object *ev_new(const struct tr *t, const char *name, const char *ph, int64_t at,
				  int lane)
{
	struct json_object *o = json_object_new_object();
	char us[40];
	int64_t d = at - t->t0;

	if (!o)
		return NULL;
	/* microseconds with the nanoseconds kept as a fraction */
	snprintf(us, sizeof(us), "%lld.%03lld", (long long)(d / 1000),
		 (long long)(d % 1000 < 0 ? -(d % 1000) : d % 1000));
	if (json_object_object_add(o, "name", json_object_new_string(name)) < 0 ||
	    json_object_object_add(o, "ph", json_object_new_string(ph)) < 0 ||
	    json_object_object_add(o, "ts", json_object_new_double_s((double)d / 1000.0, us)) < 0 ||
	    json_object_object_add(o, "pid", json_object_new_int(1)) < 0 ||
	    json_object_object_add(o, "tid", json_object_new_int(lane + 1)) < 0 ||
	    json_object_array_add(t->evs, o) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

static int meta(struct tr *t, const char *what, int tid, const char *name)
{
	struct json_object *o = json_object_new_object(), *args = json_object_new_object();

	if (!o || !args || json_object_object_add(o, "name", json_object_new_string(what)) < 0 ||
	    json_object_object_add(o, "ph", json_object_new_string("M")) < 0 ||
	    json_object_object_add(o, "ts", json_object_new_int(0)) < 0 ||
	    json_object_object_add(o, "pid", json_object_new_int(1)) < 0 ||
	    json_object_object_add(o, "tid", json_object_new_int(tid)) < 0 ||
	    json_object_object_add(args, "name", json_object_new_string(name)) < 0 ||
	    json_object_object_add(o, "args", args) < 0) {
		json_object_put(o);
		json_object_put(args);
		return -ENOMEM;
	}
	return json_object_array_add(t->evs, o) < 0 ? (json_object_put(o), -ENOMEM) : 0;
}

static int span(struct tr *t, const char *name, const char *cat, int64_t from, int64_t to, int lane)
{
	struct json_object *o;
	char us[40];

	if (!from || to < from)
		return 0;
	o = ev_new(t, name, "X", from, lane);
	snprintf(us, sizeof(us), "%lld.%03lld", (long long)((to - from) / 1000),
		 (long long)((to - from) % 1000));
	if (!o ||
	    json_object_object_add(
		o, "dur", json_object_new_double_s((double)(to - from) / 1000.0, us)) < 0 ||
	    json_object_object_add(o, "cat", json_object_new_string(cat)) < 0)
		return -ENOMEM;
	return 0;
}

int render_trace(FILE *f, struct json_object *doc)
{
	struct json_object *root = json_object_new_object(), *evs = json_path(doc, "events"),
			   *other, *fs = NULL;
	struct tr t = {0};
	struct tl_model m;
	char title[600], ref[TL_TIME_STRLEN];
	int r = -ENOMEM;

	if (tl_model_build(doc, &m) < 0 || doc_findings(doc, &fs) < 0) {
		tl_model_done(&m);
		json_object_put(root);
		return -EINVAL;
	}
	if (consumers_build(&m, fs, &t.cs) < 0 || consumers_lanes(&t.cs, CONSUMER_TRACKS) < 0)
		goto out;
	t.evs = json_object_new_array();
	other = json_object_new_object();
	if (!root || !t.evs || !other || json_object_object_add(root, "traceEvents", t.evs) < 0) {
		json_object_put(t.evs);
		json_object_put(other);
		goto out;
	}
	if (json_object_object_add(root, "displayTimeUnit", json_object_new_string("ms")) < 0 ||
	    json_object_object_add(root, "otherData", other) < 0) {
		json_object_put(other);
		goto out;
	}
	t.lane[t.nl++] = "API / endpoints";
	for (size_t i = 0; i < m.n_ctr && t.nl <= TL_FINDINGS_MAX_CONTAINERS; i++)
		if (!m.ctr[i].sandbox && strcmp(m.ctr[i].name, "(unknown)") != 0)
			t.lane[t.nl++] = m.ctr[i].name;
	t.t0 = m.first_ns;
	for (size_t i = 0; i < m.n_req; i++)
		if (!t.t0 || m.reqs[i].start_ns < t.t0)
			t.t0 = m.reqs[i].start_ns;
	snprintf(title, sizeof(title), "%s/%s", m.ns ? m.ns : "?", m.name ? m.name : "?");
	tl_time_format(m.ref_ns, ref);
	if (json_object_object_add(other, "pod", json_object_new_string(title)) < 0 ||
	    json_object_object_add(other, "reference", json_object_new_string(m.ref_what)) < 0 ||
	    json_object_object_add(other, "referenceTime", json_object_new_string(ref)) < 0 ||
	    json_object_object_add(other, "referenceTs",
				   json_object_new_double((double)(m.ref_ns - t.t0) / 1000.0)) <
		0 ||
	    json_object_object_add(other, "complete", json_object_new_boolean(m.complete)) < 0)
		goto out;
	if (meta(&t, "process_name", 0, title) < 0)
		goto out;
	for (size_t i = 0; i < t.nl; i++)
		if (meta(&t, "thread_name", (int)i + 1, t.lane[i]) < 0)
			goto out;
	/* who sent: a track per consumer (per workload or kind when many) */
	t.first_consumer = t.nl;
	for (size_t i = 0; i < t.cs.n_lanes; i++) {
		char name[400], sub[64];

		snprintf(name, sizeof(name), "from %s (%s)", t.cs.lane_name[i],
			 consumers_lane_sub(&t.cs, i, sub, sizeof(sub)));
		if (meta(&t, "thread_name", (int)(t.first_consumer + i) + 1, name) < 0)
			goto out;
	}
	if (meta(&t, "thread_name", (int)(t.first_consumer + t.cs.n_lanes) + 1, "findings") < 0)
		goto out;
	/* spans: preStop (exec in the container before its SIGTERM) and the
	 * drain (SIGTERM to exit) */
	for (size_t i = 0; i < m.n_ctr; i++) {
		const struct tl_ctr *c = &m.ctr[i];
		int lane = lane_of(&t, c->name);
		int64_t prestop = 0;

		if (c->sandbox || !lane)
			continue;
		prestop = prestop_of(&m, evs, c->name);
		if (prestop && span(&t, "preStop", "termination", prestop,
				    c->sigterm_ns ? c->sigterm_ns : m.last_ns, lane) < 0)
			goto out;
		if (c->sigterm_ns &&
		    span(&t, c->sigkill_ns ? "stop (killed)" : "stop", "termination", c->sigterm_ns,
			 c->exit_ns	 ? c->exit_ns
			 : c->sigkill_ns ? c->sigkill_ns
					 : m.last_ns,
			 lane) < 0)
			goto out;
	}
	/* requests: async slices, one id each */
	for (size_t i = 0; i < m.n_req; i++) {
		const struct tl_req *q = &m.reqs[i];
		int lane = q->ctr >= 0 ? lane_of(&t, m.ctr[q->ctr].name) : 0;
		char name[400], id[32];
		struct json_object *b, *e, *args;

		snprintf(name, sizeof(name), "%s %s %d%s%s", q->method ? q->method : "?",
			 q->path ? q->path : "?", q->status,
			 q->flags && strcmp(q->flags, "-") ? " " : "",
			 q->flags && strcmp(q->flags, "-") ? q->flags : "");
		snprintf(id, sizeof(id), "0x%zx", i + 1);
		b = ev_new(&t, name, "b", q->start_ns, lane);
		e = ev_new(&t, name, "e", q->end_ns, lane);
		args = json_object_new_object();
		/* the same request on its consumer's track */
		if (t.cs.req[i] >= 0 && t.cs.c[t.cs.req[i]].lane >= 0) {
			char cid[32];
			int cl = (int)t.first_consumer + t.cs.c[t.cs.req[i]].lane;
			struct json_object *cb = ev_new(&t, name, "b", q->start_ns, cl),
					   *ce = ev_new(&t, name, "e", q->end_ns, cl), *ca;
			const char *cat = q->failed ? "request,failed,consumer" : "request,consumer";

			snprintf(cid, sizeof(cid), "0xc%zx", i + 1);
			ca = json_object_new_object();
			if (!cb || !ce || !ca ||
			    json_object_object_add(cb, "cat", json_object_new_string(cat)) < 0 ||
			    json_object_object_add(ce, "cat", json_object_new_string(cat)) < 0 ||
			    json_object_object_add(cb, "id", json_object_new_string(cid)) < 0 ||
			    json_object_object_add(ce, "id", json_object_new_string(cid)) < 0 ||
			    json_object_object_add(ca, "requestId",
						   q->id ? json_object_new_string(q->id) : NULL) < 0 ||
			    json_object_object_add(
				ca, "consumer",
				json_object_new_string(t.cs.c[t.cs.req[i]].who.name)) < 0 ||
			    json_object_object_add(ca, "peer", json_object_new_string(q->peer)) < 0 ||
			    json_object_object_add(cb, "args", ca) < 0) {
				json_object_put(ca);
				json_object_put(args);
				goto out;
			}
		}
		if (!b || !e || !args ||
		    json_object_object_add(
			b, "cat",
			json_object_new_string(q->failed ? "request,failed" : "request")) < 0 ||
		    json_object_object_add(
			e, "cat",
			json_object_new_string(q->failed ? "request,failed" : "request")) < 0 ||
		    json_object_object_add(b, "id", json_object_new_string(id)) < 0 ||
		    json_object_object_add(e, "id", json_object_new_string(id)) < 0 ||
		    json_object_object_add(args, "requestId",
					   q->id ? json_object_new_string(q->id) : NULL) < 0 ||
		    json_object_object_add(args, "status", json_object_new_int(q->status)) < 0 ||
		    json_object_object_add(
			args, "direction",
			json_object_new_string(q->inbound ? "inbound" : "outbound")) < 0 ||
		    (q->peer &&
		     json_object_object_add(args, "peer", json_object_new_string(q->peer)) < 0) ||
		    json_object_object_add(b, "args", args) < 0) {
			json_object_put(args);
			goto out;
		}
	}
	/* instants: a human name, the details and the offset in args; the
	 * deletion across every track */
	for (size_t k = 0; evs && k < json_object_array_length(evs); k++) {
		struct json_object *ev = json_object_array_get_idx(evs, k), *o, *args;
		const char *ty = json_str(ev, "type"), *c = json_str(ev, "container");
		int64_t at = tl_event_time(ev);
		char text[1024], name[300], off[OFFSET_LEN];
		bool deletion;
		int lane;

		if (!ty || !at || strcmp(ty, "http.request") == 0)
			continue;
		lane = lane_of(&t, c);
		/* an accepted connection: on its consumer's track */
		if (strcmp(ty, "tcp.accepted") == 0) {
			struct peer_who w;
			struct json_object *idx;

			if (peer_who(doc, json_str(ev, "peer"), &w) == 0 && !w.self &&
			    json_object_object_get_ex(t.cs.index, w.name, &idx) &&
			    t.cs.c[json_object_get_int(idx)].lane >= 0)
				lane = (int)t.first_consumer + t.cs.c[json_object_get_int(idx)].lane;
		}
		if ((c && !lane) || (!c && !event_is_api(ev)))
			continue; /* the sandbox's teardown, an unknown container */
		describe_event(ev, text, sizeof(text));
		deletion = strcmp(ty, "pod.deletion_requested") == 0;
		if (strcmp(ty, "process.signal") == 0)
			snprintf(name, sizeof(name), "%s to %s", kind_name(ev), c ? c : "?");
		else if (strcmp(ty, "socket.listen_closed") == 0 ||
			 strcmp(ty, "socket.listen") == 0)
			snprintf(name, sizeof(name), "%s :%lld", kind_name(ev),
				 (long long)json_object_get_int64(json_path(ev, "port")));
		else
			snprintf(name, sizeof(name), "%s", kind_name(ev));
		o = ev_new(&t, name, "i", at, lane);
		args = json_object_new_object();
		if (!o || !args ||
		    json_object_object_add(o, "s",
					   json_object_new_string(deletion ? "g"
								  : ty[0] == 'p' && ty[1] == 'o'
								      ? "p"
								      : "t")) < 0 ||
		    json_object_object_add(o, "cat", json_object_new_string(ty)) < 0 ||
		    json_object_object_add(args, "offset",
					   json_object_new_string(fmt_offset(off, at, m.ref_ns))) <
			0 ||
		    json_object_object_add(args, "event", json_object_new_string(text)) < 0 ||
		    json_object_object_add(o, "args", args) < 0) {
			json_object_put(args);
			goto out;
		}
	}
	/* the findings: a track of their own, a slice over each one's window */
	for (size_t i = 0; i < json_object_array_length(fs); i++) {
		struct json_object *x = json_object_array_get_idx(fs, i), *o, *args;
		int64_t from, to;
		char name[300];

		if (!finding_window(&m, x, &from, &to))
			from = to = m.ref_ns;
		snprintf(name, sizeof(name), "%s (%s)",
			 json_str(x, "rule") ? json_str(x, "rule") : "?",
			 json_str(x, "severity") ? json_str(x, "severity") : "?");
		if (span(&t, name, "finding", from, to > from ? to : from + 1000,
			 (int)(t.first_consumer + t.cs.n_lanes)) < 0)
			goto out;
		o = json_object_array_get_idx(t.evs, json_object_array_length(t.evs) - 1);
		args = json_object_new_object();
		if (!args || json_object_object_add(o, "args", args) < 0) {
			json_object_put(args);
			goto out;
		}
		json_object_object_add(args, "summary", json_object_get(json_path(x, "summary")));
		json_object_object_add(args, "requestIds",
				       json_object_get(json_path(x, "requestIds")));
		json_object_object_add(args, "recommendation",
				       json_object_get(json_path(x, "recommendation")));
	}
	r = fprintf(f, "%s\n",
		    json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
							     JSON_C_TO_STRING_NOSLASHESCAPE)) < 0
		? -EIO
		: 0;
out:
	consumers_done(&t.cs);
	tl_model_done(&m);
	json_object_put(fs);
	json_object_put(root);
	return r;
}

int cmd_render(struct cli *cli)
{
	struct json_object *doc;
	FILE *f;
	int r;

	r = load_doc(cli, cli->args[0], &doc, false, NULL);
	if (r != EXIT_FOUND)
		return r;
	/* names and IDs escaped as for the terminal: an SVG holds no control
	 * character, and a trace viewer shows them as text; the consumers
	 * named first */
	if (resolve_peers(cli, doc) < 0 || doc_escape(doc) < 0) {
		json_object_put(doc);
		return EXIT_USAGE;
	}
	f = open_out(cli);
	if (!f) {
		cli_err(cli, "%s: %s", cli->out_file, strerror(errno));
		json_object_put(doc);
		return EXIT_USAGE;
	}
	r = output_is(cli, "svg") ? render_svg(cli, f, doc) : render_trace(f, doc);
	if (close_out(cli, f) < 0 || r < 0) {
		if (r < 0)
			cli_err(cli, "%s: cannot render: %s", cli->args[0], strerror(-r));
		json_object_put(doc);
		return EXIT_USAGE;
	}
	json_object_put(doc);
	return EXIT_FOUND;
}
