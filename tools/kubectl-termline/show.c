// SPDX-License-Identifier: Apache-2.0
/* show NS/POD: the verdict, then the timeline: the offset from the
 * deletion request, a column per lane (the API server and endpoints, then
 * each container: the lanes are data, a consumer column joins them the
 * same way), and the event. Key moments are marked. At real traffic
 * (200 requests a second over a 30 s drain) a line per request buries
 * them: between two events that are not requests, the requests of one
 * lane with one outcome are one line ("120 x inbound GET /orders -> 200,
 * -2.900...-0.100 s"); --all lists them all, --failed the failed ones and
 * the key moments only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "findings.h"
#include "json-util.h"

#define MAX_LANES (TL_FINDINGS_MAX_CONTAINERS + 1)
#define GROUPS_MAX 64 /* outcome classes held between two events */

struct lanes {
	const char *name[MAX_LANES];
	int width[MAX_LANES];
	size_t n;
	int offset_width;
	int who_width;	 /* the CONSUMER column, 0 without one */
	int peer_width;	 /* -o wide: PEER (ADDR:PORT) and CONN */
	bool split_runs; /* runs are one consumer's (few consumers) */
};

#define WHO_WIDTH 22	   /* the CONSUMER column at most, without -o wide */
#define SPLIT_CONSUMERS 12 /* runs split by consumer up to this many consumers */

/* Who a request or a connection came from (inbound), or went to
 * (outbound, "-> NAME"): as the consumer findings name it; "" for an
 * event without a peer. */
static void who_of(const struct cli *cli, struct json_object *doc, struct json_object *ev,
		   char *buf, size_t len)
{
	const char *peer = json_str(ev, "peer"), *dir = json_str(ev, "direction");
	struct peer_who w;

	buf[0] = 0;
	if (!peer || peer_who(doc, peer, &w) < 0)
		return;
	if (dir && strcmp(dir, "outbound") == 0)
		snprintf(buf, len, "%s %s", cli->utf8 ? "\u2192" : "->", w.name);
	else
		snprintf(buf, len, "%s", w.name);
}

/* The lane of an event: 0 the API server and endpoints (no container), a
 * container's column, -1 a container without one (the sandbox, unknown). */
static int lane_of(const struct lanes *L, const char *c)
{
	if (!c)
		return 0;
	for (size_t i = 1; i < L->n; i++)
		if (strcmp(L->name[i], c) == 0)
			return (int)i;
	return -1;
}

static const char *color_of(const struct cli *cli, struct json_object *ev)
{
	const char *t = json_str(ev, "type");

	if (!t)
		return "";
	if (strcmp(t, "http.request") == 0) {
		return event_failed(ev) ? col(cli, "red") : col(cli, "green");
	}
	if (strncmp(t, "tcp.reset", 9) == 0)
		return col(cli, "red");
	if (strcmp(t, "process.signal") == 0 || strcmp(t, "process.exit") == 0)
		return col(cli, "yellow");
	if (strncmp(t, "pod.", 4) == 0 || strncmp(t, "endpoint.", 9) == 0)
		return col(cli, "cyan");
	return "";
}

/* A left-aligned cell of width columns (UTF-8 counted as columns). */
static void cell(FILE *f, const char *text, int width)
{
	fprintf(f, "  %s%*s", text, width - (int)text_cols(text), "");
}

static void row(const struct cli *cli, FILE *f, const struct lanes *L, bool key, const char *off,
		int lane, const char *color, const char *text, const char *suffix,
		struct json_object *doc, struct json_object *ev, const char *who)
{
	fprintf(f, "%s%c %-*s", key ? col(cli, "bold") : "", key ? '>' : ' ', L->offset_width, off);
	for (size_t i = 0; i < L->n; i++)
		fprintf(f, "  %s%-*s%s", (int)i == lane ? color : "", L->width[i],
			(int)i == lane ? "*" : "|",
			(int)i == lane && *color ? col(cli, "reset") : "");
	if (L->who_width) {
		char name[400], cut[400];

		if (who)
			snprintf(name, sizeof(name), "%s", who);
		else if (ev)
			who_of(cli, doc, ev, name, sizeof(name));
		else
			name[0] = 0;
		cut_middle(cli, name, (size_t)L->who_width, cut, sizeof(cut));
		cell(f, cut, L->who_width);
	}
	if (L->peer_width) {
		char conn[32] = "";
		int64_t c = 0;

		if (ev && tl_json_int(ev, "conn", &c) && c)
			snprintf(conn, sizeof(conn), "#%lld", (long long)c);
		cell(f, ev && json_str(ev, "peer") ? json_str(ev, "peer") : "", L->peer_width);
		cell(f, conn, 6);
	}
	fprintf(f, "  %s%s%s%s%s\n", color, text, suffix, *color || key ? col(cli, "reset") : "",
		"");
}

/* An event's text; a request's without its peer when the CONSUMER
 * column (and under -o wide PEER) says who it was. */
static void describe_request(const struct lanes *L, struct json_object *ev, char *buf, size_t len)
{
	struct json_object *copy = NULL;

	if (L->who_width && json_str(ev, "peer") && json_str(ev, "type") &&
	    strcmp(json_str(ev, "type"), "http.request") == 0 &&
	    json_object_deep_copy(ev, &copy, NULL) == 0) {
		json_object_object_del(copy, "peer");
		describe_event(copy, buf, len);
		json_object_put(copy);
		return;
	}
	describe_event(ev, buf, len);
}

/* consumer name -> the start of its last inbound request at or after the
 * endpoint's removal (the Pod itself is no consumer) */
static struct json_object *last_after_removal(const struct cli *cli, const struct tl_model *m)
{
	struct json_object *o = json_object_new_object(), *evs = json_path(m->doc, "events");

	for (size_t k = 0; o && evs && k < json_object_array_length(evs); k++) {
		struct json_object *ev = json_object_array_get_idx(evs, k), *at;
		const char *ty = json_str(ev, "type"), *dir = json_str(ev, "direction");
		int64_t start = tl_event_time(ev);
		struct peer_who w;

		if (!ty || strcmp(ty, "http.request") || !dir || strcmp(dir, "inbound") ||
		    !json_str(ev, "peer") || peer_who(m->doc, json_str(ev, "peer"), &w) < 0 ||
		    w.self)
			continue;
		if (json_str(ev, "start"))
			tl_time_parse(json_str(ev, "start"), &start);
		if (!start || start < m->removed_ns)
			continue;
		if (json_object_object_get_ex(o, w.name, &at)) {
			if (start > json_object_get_int64(at))
				json_object_set_int64(at, start);
		} else {
			json_object_object_add(o, w.name, json_object_new_int64(start));
		}
	}
	(void)cli;
	return o;
}

/* Key moments: what the verdict and the picture rest on. */
struct moments {
	int64_t first_fail, last_fail; /* starts of the first and last failed request */
};

static bool is_key(const struct tl_model *m, const struct moments *km, struct json_object *ev,
		   int64_t t)
{
	const char *ty = json_str(ev, "type"), *c = json_str(ev, "container");
	int ci = tl_model_ctr(m, c);

	if (!ty || !t)
		return false;
	if ((ci >= 0 && m->ctr[ci].sandbox) || (ci < 0 && !event_is_api(ev)))
		return false;
	if (strcmp(ty, "pod.deletion_requested") == 0 || strcmp(ty, "pod.deleted") == 0 ||
	    strcmp(ty, "endpoint.removed") == 0 || strcmp(ty, "process.signal") == 0)
		return true;
	if (strcmp(ty, "endpoint.condition") == 0)
		return t == m->ready_false_ns || t == m->serving_false_ns;
	if (strcmp(ty, "socket.listen_closed") == 0)
		return ci >= 0 && t == m->ctr[ci].listen_closed_ns;
	if (strcmp(ty, "process.exit") == 0)
		return ci >= 0 && t == m->ctr[ci].exit_ns;
	if (strcmp(ty, "http.request") == 0) {
		int64_t start = t;
		const char *s = json_str(ev, "start");

		if (s)
			tl_time_parse(s, &start);
		return km->first_fail && (start == km->first_fail || start == km->last_fail) &&
		       event_failed(ev);
	}
	return false;
}

/* Requests of one lane and one outcome between two shown events. */
struct group {
	int lane;
	char who[320];	/* the consumer column: the run's consumer, or "N consumers" */
	char whos[4][320]; /* its distinct consumers, the first four */
	size_t nwhos;
	const char *dir, *method, *flags;
	const char *paths[3]; /* the distinct paths, up to three */
	size_t npaths;
	int64_t status, grpc; /* grpc: gRPC's status, -1 none */
	bool failed, more_paths;
	size_t n;
	int64_t first, last;
	const char *first_id, *last_id;
	struct json_object *ev; /* the first: a group of one is shown as itself */
};

static bool group_of(const struct lanes *L, const struct group *g, int lane, struct json_object *ev,
		     const char *who)
{
	const char *d = json_str(ev, "direction"), *mt = json_str(ev, "method"),
		   *fl = json_str(ev, "responseFlags");
	int64_t st = 0, grpc = -1;

	tl_json_int(ev, "status", &st);
	tl_json_int(ev, "grpcStatus", &grpc);
	return g->lane == lane && st == g->status && grpc == g->grpc &&
	       strcmp(d ? d : "", g->dir) == 0 &&
	       strcmp(mt ? mt : "", g->method) == 0 && strcmp(fl ? fl : "", g->flags) == 0 &&
	       (!L->split_runs || strcmp(who, g->whos[0]) == 0);
}

/* A run's consumer column: its one consumer, else how many. */
static void group_who(const struct cli *cli, struct group *g, const char *who)
{
	size_t k;

	for (k = 0; k < g->nwhos && k < 4; k++)
		if (strcmp(g->whos[k], who) == 0)
			break;
	if (k == g->nwhos) {
		if (k < 4)
			snprintf(g->whos[k], sizeof(g->whos[k]), "%s", who);
		g->nwhos++;
	}
	if (g->nwhos == 1)
		snprintf(g->who, sizeof(g->who), "%s", g->whos[0]);
	else
		snprintf(g->who, sizeof(g->who), "%s%zu consumers", g->nwhos > 4 ? "> " : "",
			 g->nwhos > 4 ? (size_t)4 : g->nwhos);
	(void)cli;
}

static void flush_groups(const struct cli *cli, FILE *f, const struct lanes *L,
			 const struct tl_model *m, struct group *g, size_t *ng, size_t *lines)
{
	struct json_object *doc = m->doc;

	for (size_t i = 0; i < *ng; i++) {
		char off[OFFSET_LEN], span[96], text[1024], ids[300] = "";
		const char *fl = *g[i].flags && strcmp(g[i].flags, "-") ? g[i].flags : "";
		char status[64];

		if (g[i].n == 1) {
			describe_request(L, g[i].ev, text, sizeof(text));
			row(cli, f, L, false, fmt_offset(off, g[i].first, m->ref_ns), g[i].lane,
			    g[i].failed ? col(cli, "red") : col(cli, "green"), text, "", doc,
			    g[i].ev, NULL);
			(*lines)++;
			continue;
		}
		if (g[i].status)
			snprintf(status, sizeof(status), "%lld", (long long)g[i].status);
		else
			snprintf(status, sizeof(status), "no response");
		if (g[i].grpc >= 0) {
			size_t l = strlen(status);

			snprintf(status + l, sizeof(status) - l, " grpc %s",
				 grpc_status_name(g[i].grpc));
		}
		fmt_span(cli, span, sizeof(span), g[i].first, g[i].last, m->ref_ns);
		if (g[i].failed && g[i].first_id)
			snprintf(ids, sizeof(ids), ", ids %s%s%s", g[i].first_id,
				 g[i].n > 1 ? glyph_ellipsis(cli) : "",
				 g[i].n > 1 && g[i].last_id ? g[i].last_id : "");
		{
			char paths[400] = "";

			for (size_t k = 0; k < g[i].npaths; k++) {
				size_t l = strlen(paths);

				snprintf(paths + l, sizeof(paths) - l, "%s%s", k ? "," : "",
					 *g[i].paths[k] ? g[i].paths[k] : "?");
			}
			if (g[i].more_paths) {
				size_t l = strlen(paths);

				snprintf(paths + l, sizeof(paths) - l, ",%s", glyph_ellipsis(cli));
			}
			snprintf(text, sizeof(text), "%zu %s %s %s %s -> %s%s%s, %s%s", g[i].n,
				 glyph_times(cli), *g[i].dir ? g[i].dir : "?",
				 *g[i].method ? g[i].method : "?", paths, status, *fl ? " " : "",
				 fl, span, ids);
		}
		row(cli, f, L, false, fmt_offset(off, g[i].first, m->ref_ns), g[i].lane,
		    g[i].failed ? col(cli, "red") : col(cli, "green"), text, "", doc, NULL,
		    g[i].who);
		(*lines)++;
	}
	*ng = 0;
}

static int show_text(const struct cli *cli, FILE *f, struct json_object *doc,
		     struct json_object *fs)
{
	struct tl_model m;
	struct json_object *evs = json_path(doc, "events");
	struct json_object *last_sent = NULL;
	struct lanes L = {.offset_width = 9};
	struct group groups[GROUPS_MAX];
	struct moments km = {0};
	struct verdict v;
	size_t ng = 0, lines = 0, hidden = 0, n = evs ? json_object_array_length(evs) : 0;
	char text[2048];
	int r = tl_model_build(doc, &m);

	if (r < 0) {
		tl_model_done(&m);
		cli_err(cli, "not a timeline document");
		return EXIT_USAGE;
	}
	verdict_build(cli, &m, fs, &v);
	for (size_t i = 0; i < m.n_req; i++)
		if (m.reqs[i].failed && !m.reqs[i].dup) {
			if (!km.first_fail)
				km.first_fail = m.reqs[i].start_ns;
			km.last_fail = m.reqs[i].start_ns;
		}
	L.name[L.n++] = "API";
	for (size_t i = 0; i < m.n_ctr && L.n < MAX_LANES; i++)
		if (!m.ctr[i].sandbox && strcmp(m.ctr[i].name, "(unknown)") != 0)
			L.name[L.n++] = m.ctr[i].name;
	for (size_t i = 0; i < L.n; i++)
		L.width[i] = text_cols(L.name[i]) < 3 ? 3 : (int)text_cols(L.name[i]);
	for (size_t k = 0; k < n; k++)
		if (!tl_event_time(json_object_array_get_idx(evs, k)))
			L.offset_width = 12; /* "invalid time" */
	/* the CONSUMER column, when the document says who sent */
	{
		struct json_object *names = json_object_new_object();
		int natural = 0, peer = 0;

		for (size_t k = 0; names && k < n; k++) {
			struct json_object *ev = json_object_array_get_idx(evs, k);
			char who[400];

			if (!json_str(ev, "peer"))
				continue;
			who_of(cli, doc, ev, who, sizeof(who));
			if ((int)text_cols(who) > natural)
				natural = (int)text_cols(who);
			if ((int)text_cols(json_str(ev, "peer")) > peer)
				peer = (int)text_cols(json_str(ev, "peer"));
			if (json_object_object_length(names) <= SPLIT_CONSUMERS)
				json_object_object_add(names, who, NULL);
		}
		if (natural) {
			L.who_width = natural < 8 ? 8 : natural;
			if (!output_is(cli, "wide") && L.who_width > WHO_WIDTH)
				L.who_width = WHO_WIDTH;
			L.split_runs = names && json_object_object_length(names) <= SPLIT_CONSUMERS;
			if (output_is(cli, "wide"))
				L.peer_width = peer < 4 ? 4 : peer;
		}
		json_object_put(names);
	}

	snprintf(text, sizeof(text), "%s%s/%s%s (node %s, grace %d s, %s%s%s): %s%s%s",
		 col(cli, "bold"), m.ns ? m.ns : "?", m.name ? m.name : "?", col(cli, "reset"),
		 json_str(json_path(doc, "pod"), "node") ? json_str(json_path(doc, "pod"), "node")
							 : "?",
		 m.grace_s, m.complete ? "" : col(cli, "red"),
		 m.complete ? "complete" : "INCOMPLETE", m.complete ? "" : col(cli, "reset"),
		 v.failed ? col(cli, "red") : "", v.headline, v.failed ? col(cli, "reset") : "");
	wrap(cli, f, 0, 2, text);
	if (!m.complete) {
		snprintf(text, sizeof(text), "%sincomplete: %s%s", col(cli, "red"),
			 m.incomplete_why, col(cli, "reset"));
		wrap(cli, f, 2, 2, text);
	}
	snprintf(text, sizeof(text), "Offsets from the %s%s; '>' marks the key moments.",
		 m.deletion_ns ? "deletion request" : m.ref_what,
		 cli->show_all	    ? ""
		 : cli->show_failed ? ", failed requests only"
				    : ", like requests counted on one line");
	wrap(cli, f, 0, 2, text);
	fprintf(f, "  %-*s", L.offset_width, "OFFSET");
	for (size_t i = 0; i < L.n; i++)
		fprintf(f, "  %-*s", L.width[i], L.name[i]);
	if (L.who_width)
		cell(f, "CONSUMER", L.who_width);
	if (L.peer_width) {
		cell(f, "PEER", L.peer_width);
		cell(f, "CONN", 6);
	}
	fprintf(f, "  EVENT\n");
	/* each consumer's last request after the endpoint's removal is a key
	 * moment: how long it kept routing to a removed endpoint */
	if (L.who_width && m.removed_ns)
		last_sent = last_after_removal(cli, &m);

	for (size_t k = 0; k < n; k++) {
		struct json_object *ev = json_object_array_get_idx(evs, k);
		const char *ty = json_str(ev, "type"), *c = json_str(ev, "container");
		int64_t t = tl_event_time(ev), start = t;
		bool req = ty && strcmp(ty, "http.request") == 0, key = is_key(&m, &km, ev, t);
		bool last = false;
		int lane = c || event_is_api(ev) ? lane_of(&L, c) : -1;
		char off[OFFSET_LEN], desc[1024], suffix[300] = "", who[400] = "";

		if (req && last_sent && json_str(ev, "peer")) {
			struct json_object *at;

			if (json_str(ev, "start"))
				tl_time_parse(json_str(ev, "start"), &start);
			who_of(cli, doc, ev, who, sizeof(who));
			last = json_object_object_get_ex(last_sent, who, &at) &&
			       json_object_get_int64(at) == start;
			key |= last;
		}

		if (cli->has_since && t && t < m.ref_ns + cli->since_ns)
			continue;
		if (req && !key && !cli->show_all) {
			struct group *g = NULL;
			bool failed = event_failed(ev);
			const char *path = json_str(ev, "path");
			int64_t start = t;

			if (cli->show_failed && !failed) {
				hidden++;
				continue;
			}
			if (!cli->show_failed && t) {
				if (json_str(ev, "start"))
					tl_time_parse(json_str(ev, "start"), &start);
				if (L.who_width)
					who_of(cli, doc, ev, who, sizeof(who));
				for (size_t i = 0; i < ng && !g; i++)
					if (group_of(&L, &groups[i], lane, ev, who))
						g = &groups[i];
				if (!g && ng == GROUPS_MAX)
					flush_groups(cli, f, &L, &m, groups, &ng, &lines);
				if (!g) {
					g = &groups[ng++];
					memset(g, 0, sizeof(*g));
					g->lane = lane;
					g->dir = json_str(ev, "direction")
						     ? json_str(ev, "direction")
						     : "";
					g->method =
					    json_str(ev, "method") ? json_str(ev, "method") : "";
					g->flags = json_str(ev, "responseFlags")
						       ? json_str(ev, "responseFlags")
						       : "";
					tl_json_int(ev, "status", &g->status);
					g->grpc = -1;
					tl_json_int(ev, "grpcStatus", &g->grpc);
					g->failed = failed;
					g->first = start;
					g->ev = ev;
				}
				g->n++;
				group_who(cli, g, who);
				{
					size_t k;

					for (k = 0; k < g->npaths; k++)
						if (strcmp(g->paths[k], path ? path : "") == 0)
							break;
					if (k == g->npaths && k < 3)
						g->paths[g->npaths++] = path ? path : "";
					else if (k == g->npaths)
						g->more_paths = true;
				}
				if (start < g->first)
					g->first = start;
				if (start > g->last)
					g->last = start;
				if (!g->first_id)
					g->first_id = json_str(ev, "requestId");
				g->last_id = json_str(ev, "requestId");
				continue;
			}
		}
		/* an event that is not a request ends the runs before it */
		flush_groups(cli, f, &L, &m, groups, &ng, &lines);
		if (cli->show_failed && !req && !key) {
			hidden++;
			continue;
		}
		describe_request(&L, ev, desc, sizeof(desc));
		if (lane < 0 && c)
			snprintf(suffix, sizeof(suffix), " (%s%s)", c,
				 tl_model_ctr(&m, c) >= 0 && m.ctr[tl_model_ctr(&m, c)].sandbox
				     ? ", the sandbox"
				     : "");
		else if (lane < 0)
			snprintf(suffix, sizeof(suffix),
				 " (no container: the sandbox, or not attributed)");
		if (!t)
			snprintf(suffix + strlen(suffix), sizeof(suffix) - strlen(suffix),
				 " [time \"%.40s\"]",
				 json_str(ev, "time") ? json_str(ev, "time") : "missing");
		if (key && req && t) {
			int64_t start = t;

			if (json_str(ev, "start"))
				tl_time_parse(json_str(ev, "start"), &start);
			if (start == km.first_fail || start == km.last_fail)
				snprintf(suffix + strlen(suffix), sizeof(suffix) - strlen(suffix),
					 "  %s",
					 start == km.first_fail && start == km.last_fail
					     ? "<- the failed request"
					 : start == km.first_fail ? "<- first failed"
								  : "<- last failed");
			if (last) {
				char d[OFFSET_LEN];

				snprintf(suffix + strlen(suffix), sizeof(suffix) - strlen(suffix),
					 "  <- its last, %s after the endpoint's removal",
					 fmt_secs(d, start - m.removed_ns));
			}
		}
		row(cli, f, &L, key, fmt_offset(off, t, m.ref_ns), lane,
		    lane < 0 ? col(cli, "dim") : color_of(cli, ev), desc, suffix, doc, ev, NULL);
		lines++;
	}
	flush_groups(cli, f, &L, &m, groups, &ng, &lines);
	if (hidden && cli->show_failed)
		fprintf(f, "(%zu other events not shown: --all lists them)\n", hidden);
	json_object_put(last_sent);
	tl_model_done(&m);
	return EXIT_FOUND;
}

int cmd_show(struct cli *cli)
{
	struct json_object *doc, *fs = NULL;
	int r;

	r = load_doc(cli, cli->args[0], &doc, false, NULL);
	if (r != EXIT_FOUND)
		return r;
	if (!output_is(cli, "text") && !output_is(cli, "wide")) {
		r = print_structured(cli, doc);
	} else if (resolve_peers(cli, doc) < 0 || doc_escape(doc) < 0 ||
		   doc_findings(doc, &fs) < 0) {
		cli_err(cli, "%s: not a timeline document", tx(cli->args[0]));
		r = EXIT_USAGE;
	} else {
		r = show_text(cli, stdout, doc, fs);
	}
	json_object_put(fs);
	json_object_put(doc);
	return r;
}
