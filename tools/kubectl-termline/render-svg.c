// SPDX-License-Identifier: Apache-2.0
/* render -o svg: a swimlane picture of one timeline. A lane for the API
 * server and endpoints and one per container; markers for the deletion,
 * preStop exec, signals, listener changes, resets, exits and endpoint
 * changes; request bars (failed ones red) with their IDs in <title> (the
 * browser shows it on hover); a time axis with offsets from the deletion. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"

#define W 1200
#define LEFT 150
#define RIGHT 30
#define TOP 70
#define LANE_H 64
#define ROWS 6 /* request bars stacked per lane before they share a row */

struct svg {
	FILE *f;
	int64_t t0, t1, ref;
	const char *lane[TL_FINDINGS_MAX_CONTAINERS + 1];
	size_t nl;
};

static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
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
			/* XML 1.0 forbids most control characters */
			if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
				fputc(*s, f);
		}
	}
}

static double x_of(const struct svg *s, int64_t t)
{
	double span = (double)(s->t1 - s->t0);

	return LEFT + (span > 0 ? (double)(t - s->t0) / span : 0) * (W - LEFT - RIGHT);
}

static int lane_of(const struct svg *s, const char *c)
{
	for (size_t i = 1; c && i < s->nl; i++)
		if (strcmp(s->lane[i], c) == 0)
			return (int)i;
	return 0;
}

static double y_of(int lane)
{
	return TOP + lane * LANE_H;
}

static void title(const struct svg *s, int64_t t, const char *text)
{
	char off[32];

	fmt_offset(off, sizeof(off), t - s->ref);
	fprintf(s->f, "<title>%s ", off);
	esc(s->f, text);
	fputs("</title>", s->f);
}

static double nice_step(double span_s)
{
	static const double steps[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1,    2,	 5,
				       10,   15,   30,	 60,  120, 300,	 600, 1800, 3600};

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (span_s / steps[i] <= 12)
			return steps[i];
	return 7200;
}

static void marker(struct svg *s, struct json_object *ev)
{
	const char *t = json_str(ev, "type"), *sig = json_str(ev, "signal");
	int64_t at = tl_event_time(ev);
	int lane = lane_of(s, json_str(ev, "container"));
	double x = x_of(s, at), y = y_of(lane) + 14;
	char text[1024];

	if (!t || !at || strcmp(t, "http.request") == 0)
		return;
	describe_event(ev, text, sizeof(text));
	fprintf(s->f, "<g class=\"ev\">");
	if (strcmp(t, "pod.deletion_requested") == 0) {
		fprintf(s->f,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
			"stroke-width=\"2\" stroke-dasharray=\"6 3\"/>",
			x, TOP - 8, x, y_of((int)s->nl));
		fprintf(
		    s->f,
		    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#d62728\">deletion</text>",
		    x + 3, y_of((int)s->nl) + 12);
	} else if (strcmp(t, "process.signal") == 0 && sig && strcmp(sig, "SIGKILL") == 0) {
		fprintf(s->f,
			"<path d=\"M%.1f %.1f l10 10 m0 -10 l-10 10\" stroke=\"#8b0000\" "
			"stroke-width=\"3\"/>",
			x - 5, y - 5);
	} else if (strcmp(t, "process.signal") == 0) {
		const char *res = json_str(ev, "result");

		fprintf(s->f, "<path d=\"M%.1f %.1f l6 6 l-6 6 l-6 -6 z\" fill=\"%s\"/>", x, y - 6,
			res && strcmp(res, "ignored") == 0 ? "#7f7f7f" : "#ff7f0e");
	} else if (strcmp(t, "process.exec") == 0) {
		fprintf(s->f, "<path d=\"M%.1f %.1f l6 10 l-12 0 z\" fill=\"#1f77b4\"/>", x, y - 5);
	} else if (strcmp(t, "process.exit") == 0) {
		fprintf(s->f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#222\"/>", x, y);
	} else if (strcmp(t, "socket.listen") == 0 || strcmp(t, "socket.listen_closed") == 0) {
		fprintf(s->f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"%s\"/>",
			x - 4.5, y - 4.5, strcmp(t, "socket.listen") == 0 ? "#2ca02c" : "#9467bd");
	} else if (strncmp(t, "tcp.reset", 9) == 0) {
		fprintf(s->f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#d62728\"/>", x,
			y + 8);
	} else if (strncmp(t, "endpoint.", 9) == 0) {
		fprintf(s->f, "<path d=\"M%.1f %.1f l6 6 l-6 6 l-6 -6 z\" fill=\"%s\"/>", x, y - 6,
			strcmp(t, "endpoint.removed") == 0 ? "#17becf" : "#aec7e8");
	} else {
		fprintf(
		    s->f,
		    "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"none\" stroke=\"#7f7f7f\"/>", x,
		    y);
	}
	title(s, at, text);
	fputs("</g>\n", s->f);
}

int render_svg(FILE *f, struct json_object *doc)
{
	struct svg s = {.f = f};
	struct tl_model m;
	struct json_object *evs = json_path(doc, "events");
	int64_t row_end[TL_FINDINGS_MAX_CONTAINERS + 1][ROWS];
	double step, h;
	const char *ns = json_str(json_path(doc, "pod"), "namespace"),
		   *name = json_str(json_path(doc, "pod"), "name");

	if (tl_model_build(doc, &m) < 0) {
		tl_model_done(&m);
		return -EINVAL;
	}
	s.lane[s.nl++] = "API / endpoints";
	for (size_t i = 0; i < m.n_ctr && s.nl <= TL_FINDINGS_MAX_CONTAINERS; i++)
		if (!m.ctr[i].sandbox && strcmp(m.ctr[i].name, "(unknown)") != 0)
			s.lane[s.nl++] = m.ctr[i].name;
	s.ref = m.ref_ns;
	s.t0 = m.first_ns;
	s.t1 = m.last_ns;
	for (size_t i = 0; i < m.n_req; i++) {
		if (!s.t0 || m.reqs[i].start_ns < s.t0)
			s.t0 = m.reqs[i].start_ns;
		if (m.reqs[i].end_ns > s.t1)
			s.t1 = m.reqs[i].end_ns;
	}
	if (s.t1 <= s.t0)
		s.t1 = s.t0 + 1000000000;
	{
		int64_t pad = (s.t1 - s.t0) / 40;

		s.t0 -= pad;
		s.t1 += pad;
	}
	h = y_of((int)s.nl) + 40;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" "
		"font-family=\"sans-serif\">\n",
		W, h, W, h);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n", W, h);
	fputs("<text x=\"10\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", f);
	esc(f, ns ? ns : "?");
	fputc('/', f);
	esc(f, name ? name : "?");
	fprintf(f, "%s</text>\n", m.complete ? "" : " (timeline INCOMPLETE)");
	/* lanes */
	for (size_t i = 0; i < s.nl; i++) {
		fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
			LEFT, y_of((int)i), W - LEFT - RIGHT, LANE_H,
			i % 2 ? "#f7f7f7" : "#eef3f8");
		fprintf(f, "<text x=\"10\" y=\"%.1f\" font-size=\"12\">",
			y_of((int)i) + LANE_H / 2.0 + 4);
		esc(f, s.lane[i]);
		fputs("</text>\n", f);
	}
	/* time axis: offsets from the reference */
	step = nice_step((double)(s.t1 - s.t0) / 1e9);
	for (double k = ceil((double)(s.t0 - s.ref) / 1e9 / step);
	     k * step <= (double)(s.t1 - s.ref) / 1e9; k++) {
		int64_t t = s.ref + (int64_t)llround(k * step * 1e9);
		double x = x_of(&s, t);
		char off[32];

		fmt_offset(off, sizeof(off), t - s.ref);
		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#cccccc\" "
			"stroke-width=\"0.5\"/>"
			"<text x=\"%.1f\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" "
			"fill=\"#555\">%s</text>\n",
			x, TOP - 4, x, y_of((int)s.nl), x, TOP - 22 + 8, off);
	}
	/* request bars, stacked in rows under the markers */
	memset(row_end, 0, sizeof(row_end));
	fputs("<g class=\"requests\">\n", f);
	for (size_t i = 0; i < m.n_req; i++) {
		const struct tl_req *r = &m.reqs[i];
		int lane = r->ctr >= 0 ? lane_of(&s, m.ctr[r->ctr].name) : 0, row = 0;
		double x0 = x_of(&s, r->start_ns), x1 = x_of(&s, r->end_ns);
		char text[600];

		for (int k = 0; k < ROWS; k++)
			if (row_end[lane][k] <= r->start_ns) {
				row = k;
				break;
			} else if (k == ROWS - 1) {
				row = (int)(i % ROWS);
			}
		row_end[lane][row] = r->end_ns;
		snprintf(text, sizeof(text), "%s %s %s -> %d%s%s id=%s (%.0f ms)",
			 r->inbound ? "inbound" : "outbound", r->method ? r->method : "?",
			 r->path ? r->path : "?", r->status,
			 r->flags && strcmp(r->flags, "-") ? " " : "",
			 r->flags && strcmp(r->flags, "-") ? r->flags : "", r->id ? r->id : "-",
			 (double)(r->end_ns - r->start_ns) / 1e6);
		fprintf(f,
			"<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"5\" "
			"fill=\"%s\">",
			r->failed ? "req failed" : "req", x0, y_of(lane) + 28 + row * 6,
			x1 - x0 < 2 ? 2 : x1 - x0, r->failed ? "#d62728" : "#2ca02c");
		title(&s, r->start_ns, text);
		fputs("</rect>\n", f);
	}
	fputs("</g>\n", f);
	for (size_t k = 0; evs && k < json_object_array_length(evs); k++)
		marker(&s, json_object_array_get_idx(evs, k));
	/* legend */
	fprintf(f,
		"<text x=\"%d\" y=\"%.0f\" font-size=\"10\" fill=\"#555\">"
		"orange: SIGTERM, dark red x: SIGKILL, blue: exec (preStop), black: exit, "
		"green/purple square: listen/closed, "
		"red dot: reset, cyan: endpoint; bars: requests (red failed)</text>\n",
		LEFT, h - 12);
	fputs("</svg>\n", f);
	tl_model_done(&m);
	return ferror(f) ? -EIO : 0;
}
