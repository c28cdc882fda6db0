// SPDX-License-Identifier: Apache-2.0
/* render -o svg: the termination as a picture that tells its story
 * without the legend. Under the title the verdict and the fix; a lane per
 * party (the endpoint, then each container; the lanes are a list built
 * from the document, so a consumer becomes one more lane), each with
 * state bands named in place (in the slice, listening, draining,
 * stopping); the key moments labelled with their offsets where they
 * happened, staggered when they collide; the failure window shaded and
 * counted; requests as ticks (failed ones red) with their IDs in <title>
 * (the browser shows it on hover); the deletion as a dashed line; a
 * legend that draws the very glyphs of the plot. The sandbox (pause)
 * container is left out: its SIGKILL is the kubelet's normal teardown. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"

#define W 1280
#define LEFT 160
#define RIGHT 24
#define TOP 96
#define LANE_H 100
#define BAND_Y 30 /* band centre from the lane's top */
#define REQ_Y 70  /* first request row from the lane's top */
#define REQ_ROWS 4
/* a consumer's lane: its name above the band, its requests below */
#define CLANE_H 80
#define CBAND_Y 28
#define CREQ_Y 40
#define CONSUMER_LANES 6 /* a lane per consumer up to this many, else per workload or kind */
#define CHEAD_H 26	 /* the heading over the consumers' lanes */
#define CHAR_W 6.2 /* average advance of an 11 px sans-serif character */
#define MAX_LANES (TL_FINDINGS_MAX_CONTAINERS + 1)
#define MAX_LABELS 256
#define LABEL_ROWS 3

enum glyph {
	G_SIGTERM,
	G_IGNORED,
	G_KILL,
	G_EXEC,
	G_EXIT,
	G_LISTEN,
	G_CLOSED,
	G_RESET,
	G_EP_COND,
	G_EP_REMOVED,
	G_POD,
	G_ACCEPT,
	G_OTHER,
};

enum lane_kind { LANE_ENDPOINT, LANE_CONTAINER, LANE_CONSUMER };

struct lane {
	enum lane_kind kind;
	const char *name, *sub;
	int ctr;  /* LANE_CONTAINER: index in the model; LANE_CONSUMER: the consumers' lane */
	double y; /* its top */
	char subbuf[64];
};

struct placed {
	int lane, row;
	double x0, x1;
};

struct pic {
	const struct cli *cli;
	FILE *f;
	const struct tl_model *m;
	int64_t t0, t1, ref;
	struct lane lanes[MAX_LANES + CONSUMER_LANES];
	int nl, ep;	     /* lanes; the endpoint's */
	struct consumers cs; /* who sent (consumers.c) */
	double bottom;
	struct placed placed[MAX_LABELS];
	int np;
	size_t clipped; /* events before the plot's start */
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
			/* the document was escaped for text (doc_escape): no
			 * control character is left but these */
			if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
				fputc(*s, f);
		}
	}
}

static double x_of(const struct pic *p, int64_t t)
{
	double span = (double)(p->t1 - p->t0);

	if (t < p->t0)
		t = p->t0;
	if (t > p->t1)
		t = p->t1;
	return LEFT + (span > 0 ? (double)(t - p->t0) / span : 0) * (W - LEFT - RIGHT);
}

static double lane_y(const struct pic *p, int lane)
{
	return lane < p->nl ? p->lanes[lane].y : p->bottom;
}

static bool is_consumer(const struct pic *p, int lane)
{
	return p->lanes[lane].kind == LANE_CONSUMER;
}

static double band_y(const struct pic *p, int lane)
{
	return lane_y(p, lane) + (is_consumer(p, lane) ? CBAND_Y : BAND_Y);
}

static int lane_of_ctr(const struct pic *p, const char *c)
{
	if (!c)
		return 0; /* the API server's facts: the endpoint's lane */
	for (int i = 0; i < p->nl; i++)
		if (p->lanes[i].kind == LANE_CONTAINER &&
		    strcmp(p->m->ctr[p->lanes[i].ctr].name, c) == 0)
			return i;
	return -1; /* the sandbox, an unknown container: not drawn */
}

/* One glyph, the same in the plot and in the legend. */
static void glyph(FILE *f, enum glyph g, double x, double y)
{
	switch (g) {
	case G_SIGTERM:
	case G_IGNORED:
		fprintf(f, "<path d=\"M%.1f %.1f l6 6 l-6 6 l-6 -6 z\" fill=\"%s\"/>", x, y - 6,
			g == G_SIGTERM ? "#ff7f0e" : "#7f7f7f");
		break;
	case G_KILL:
		fprintf(f,
			"<path d=\"M%.1f %.1f l10 10 m0 -10 l-10 10\" stroke=\"#8b0000\" "
			"stroke-width=\"3\"/>",
			x - 5, y - 5);
		break;
	case G_EXEC:
		fprintf(f, "<path d=\"M%.1f %.1f l6 10 l-12 0 z\" fill=\"#1f77b4\"/>", x, y - 5);
		break;
	case G_EXIT:
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#222222\"/>", x, y);
		break;
	case G_LISTEN:
	case G_CLOSED:
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"%s\"/>",
			x - 4.5, y - 4.5, g == G_LISTEN ? "#2ca02c" : "#9467bd");
		break;
	case G_RESET:
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"#d62728\"/>", x, y + 9);
		break;
	case G_EP_COND:
	case G_EP_REMOVED:
		fprintf(f,
			"<path d=\"M%.1f %.1f l6 6 l-6 6 l-6 -6 z\" fill=\"%s\" stroke=\"#ffffff\" "
			"stroke-width=\"1\"/>",
			x, y - 6, g == G_EP_REMOVED ? "#17becf" : "#9fb4de");
		break;
	case G_POD:
		fprintf(f,
			"<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"none\" "
			"stroke=\"#555555\" stroke-width=\"1.5\"/>",
			x - 4, y - 4);
		break;
	case G_ACCEPT:
		fprintf(f,
			"<path d=\"M%.1f %.1f l0 9\" stroke=\"#555555\" stroke-width=\"2\"/>", x,
			y - 4.5);
		break;
	case G_OTHER:
		fprintf(
		    f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"none\" stroke=\"#7f7f7f\"/>",
		    x, y);
		break;
	}
}

static const char *glyph_color(enum glyph g)
{
	switch (g) {
	case G_SIGTERM:
		return "#c85a00";
	case G_KILL:
		return "#8b0000";
	case G_EXEC:
		return "#1f77b4";
	case G_CLOSED:
		return "#7b4fa6";
	case G_LISTEN:
		return "#238023";
	case G_EP_COND:
	case G_EP_REMOVED:
		return "#0f7c87";
	case G_RESET:
		return "#b22222";
	default:
		return "#222222";
	}
}

static bool overlaps(const struct pic *p, int lane, int row, double x0, double x1)
{
	for (int i = 0; i < p->np; i++)
		if (p->placed[i].lane == lane && p->placed[i].row == row &&
		    x0 < p->placed[i].x1 + 6 && x1 > p->placed[i].x0 - 6)
			return true;
	return false;
}

static double row_y(const struct pic *p, int lane, int row)
{
	/* above the band, below it, below that; a consumer's: above its
	 * band, below its requests */
	static const double dy[LABEL_ROWS] = {17, 50, 63}, cdy[LABEL_ROWS] = {16, 74, 74};

	return lane_y(p, lane) + (is_consumer(p, lane) ? cdy[row] : dy[row]);
}

static int label_rows(const struct pic *p, int lane)
{
	return is_consumer(p, lane) ? 2 : LABEL_ROWS;
}

/* A key moment's label next to its marker, pointing at it: right of it
 * ("◀ text"), else left of it ("text ▶"), in the first label row of the
 * lane where it collides with nothing. */
static void label(struct pic *p, int lane, int64_t t, const char *text, const char *color,
		  bool bold)
{
	double x = x_of(p, t), w = (double)text_cols(text) * CHAR_W + 16;
	int row = -1;
	bool right = true;

	for (int r = 0; r < label_rows(p, lane) && row < 0; r++) {
		if (x + 3 + w <= W - RIGHT / 2 && !overlaps(p, lane, r, x + 3, x + 3 + w))
			row = r, right = true;
		else if (x - 3 - w >= 4 + LEFT && !overlaps(p, lane, r, x - 3 - w, x - 3))
			row = r, right = false;
	}
	if (row < 0) { /* crowded: the least busy row, on whichever side fits */
		int best = 0, cnt[LABEL_ROWS] = {0};

		for (int i = 0; i < p->np; i++)
			if (p->placed[i].lane == lane)
				cnt[p->placed[i].row]++;
		for (int r = 1; r < label_rows(p, lane); r++)
			if (cnt[r] < cnt[best])
				best = r;
		row = best;
		right = x + 3 + w <= W - RIGHT / 2;
	}
	if (p->np < MAX_LABELS)
		p->placed[p->np++] = (struct placed){lane, row, right ? x + 3 : x - 3 - w,
						     right ? x + 3 + w : x - 3};
	fprintf(p->f,
		"<text class=\"moment\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"%s\"%s%s>%s",
		right ? x + 3 : x - 3, row_y(p, lane, row), color, bold ? " font-weight=\"bold\"" : "",
		right ? "" : " text-anchor=\"end\"", right ? "\u25c0 " : "");
	esc(p->f, text);
	fprintf(p->f, "%s</text>\n", right ? "" : " \u25b6");
}

static void title_el(struct pic *p, int64_t t, const char *text)
{
	char off[OFFSET_LEN];

	fprintf(p->f, "<title>%s ", fmt_offset(off, t, p->ref));
	esc(p->f, text);
	fputs("</title>", p->f);
}

static void band(struct pic *p, int lane, int64_t from, int64_t to, const char *fill,
		 double opacity, double h, const char *name, const char *text_color)
{
	double x0, x1, y = band_y(p, lane);

	if (!from || !to || to <= p->t0 || from >= p->t1)
		return;
	x0 = x_of(p, from);
	x1 = x_of(p, to);
	if (x1 - x0 < 1)
		x1 = x0 + 1;
	fprintf(p->f,
		"<rect class=\"band\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		"fill=\"%s\" fill-opacity=\"%.2f\"><title>",
		x0, y - h / 2, x1 - x0, h, fill, opacity);
	esc(p->f, name);
	fputs("</title></rect>\n", p->f);
	/* the state's name on the band, where it fits; the moments' labels
	 * keep clear of it */
	if (name && (double)text_cols(name) * CHAR_W + 8 < x1 - x0) {
		double tw = (double)text_cols(name) * CHAR_W;

		if (p->np < MAX_LABELS)
			p->placed[p->np++] = (struct placed){lane, 0, (x0 + x1) / 2 - tw / 2,
							     (x0 + x1) / 2 + tw / 2};
		fprintf(p->f,
			"<text class=\"state\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
			"text-anchor=\"middle\" fill=\"%s\">",
			(x0 + x1) / 2, y - h / 2 - 3, text_color);
		esc(p->f, name);
		fputs("</text>\n", p->f);
	}
}

static double nice_step(double span_s)
{
	static const double steps[] = {0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1,    2,	 5,
				       10,   15,   30,	 60,  120, 300,	 600, 1800, 3600};

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (span_s / steps[i] <= 10)
			return steps[i];
	return 7200;
}

static bool is_sidecar(const struct tl_ctr *c)
{
	return c->role ? strcmp(c->role, "sidecar") == 0 : strcmp(c->name, "istio-proxy") == 0;
}

/* Top to bottom as the requests flow: who sent them (a lane per
 * consumer, or per workload or kind when there are many), the endpoint
 * that routed them, the containers that served them (main containers,
 * then sidecars: the app's story first). */
static void lanes_build(struct pic *p)
{
	const struct tl_model *m = p->m;
	double y = TOP;
	int nc = consumers_lanes(&p->cs, CONSUMER_LANES);

	if (nc > 0)
		y += CHEAD_H;
	for (int i = 0; i < nc; i++) {
		struct lane *l = &p->lanes[p->nl++];

		*l = (struct lane){LANE_CONSUMER, p->cs.lane_name[i], NULL, i, y, ""};
		l->sub = consumers_lane_sub(&p->cs, (size_t)i, l->subbuf, sizeof(l->subbuf));
		y += CLANE_H;
	}
	p->ep = p->nl;
	p->lanes[p->nl++] = (struct lane){LANE_ENDPOINT, "API / endpoint", "in the Service", -1, y, ""};
	y += LANE_H;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < m->n_ctr && p->nl < MAX_LANES + nc; i++) {
			const struct tl_ctr *c = &m->ctr[i];

			if (c->sandbox || strcmp(c->name, "(unknown)") == 0 ||
			    is_sidecar(c) != (pass == 1))
				continue;
			p->lanes[p->nl++] =
			    (struct lane){LANE_CONTAINER, c->name,
					  is_sidecar(c) ? "sidecar" : "container", (int)i, y, ""};
			y += LANE_H;
		}
	p->bottom = y;
}

static void bands_of(struct pic *p, struct json_object *evs)
{
	const struct tl_model *m = p->m;
	char name[160];

	/* the endpoint's way out: in the slice, ready; terminating but still
	 * in the slice; gone */
	if (m->slices_seen) {
		int64_t end_ready = m->ready_false_ns ? m->ready_false_ns
				    : m->removed_ns   ? m->removed_ns
						      : p->t1;
		int64_t end_all = m->removed_ns ? m->removed_ns : p->t1;

		band(p, p->ep, p->t0, end_ready, "#17becf", 0.55, 8, "endpoint ready in the slice",
		     "#0b6b74");
		if (m->ready_false_ns)
			band(p, p->ep, m->ready_false_ns, end_all, "#17becf", 0.25, 8,
			     m->serving_false_ns ? "terminating, still in the slice"
						 : "not ready, still in the slice",
			     "#0b6b74");
	}
	for (int i = 0; i < p->nl; i++) {
		const struct tl_ctr *c;
		int64_t up, closed, term, pre;
		int port;

		if (p->lanes[i].kind != LANE_CONTAINER)
			continue;
		c = &m->ctr[p->lanes[i].ctr]; /* other lanes have no container (-1) */
		up = c->listen_ns ? c->listen_ns : (c->listen_closed_ns ? p->t0 : 0);
		closed = c->listen_closed_ns ? c->listen_closed_ns
			 : c->exit_ns	     ? c->exit_ns
					     : (up ? p->t1 : 0);
		term = c->sigterm_ns && c->sigterm_ns < closed ? c->sigterm_ns : closed;
		pre = prestop_of(m, evs, c->name);
		port = c->listen_closed_port ? c->listen_closed_port : c->listen_port;

		if (port)
			snprintf(name, sizeof(name), "%s listening :%d", c->name, port);
		else
			snprintf(name, sizeof(name), "%s listening", c->name);
		band(p, i, up, term, "#2ca02c", 0.55, 8, name, "#1e6b1e");
		if (up && term < closed) {
			snprintf(name, sizeof(name), "%s draining (still %s)", c->name,
				 is_sidecar(c) ? "forwarding" : "listening");
			band(p, i, term, closed, "#ff7f0e", 0.6, 8, name, "#a34a00");
		}
		if (c->exit_ns && closed < c->exit_ns)
			band(p, i, closed, c->exit_ns, "#9e9e9e", 0.45, 4,
			     "stopping, not listening", "#555555");
		if (pre)
			band(p, i, pre, c->sigterm_ns ? c->sigterm_ns : p->t1, "#1f77b4", 0.35, 14,
			     "preStop", "#17476b");
	}
}

/* Markers for every event (with its description on hover), and labels
 * with offsets for the key moments. */
static void moments(struct pic *p, struct json_object *evs)
{
	const struct tl_model *m = p->m;
	char text[300], off[OFFSET_LEN];
	int64_t term0 = 0;
	bool one_sigterm = true;
	int n_term = 0;

	/* SIGTERM to every container at once (the kubelet without a
	 * preStop): one label */
	for (int i = p->ep + 1; i < p->nl; i++) {
		const struct tl_ctr *c = &m->ctr[p->lanes[i].ctr];

		if (!c->sigterm_ns)
			continue;
		if (!term0)
			term0 = c->sigterm_ns;
		one_sigterm &= llabs(c->sigterm_ns - term0) <= 1000000;
		n_term++;
	}
	for (size_t k = 0; evs && k < json_object_array_length(evs); k++) {
		struct json_object *ev = json_object_array_get_idx(evs, k);
		const char *ty = json_str(ev, "type"), *sig = json_str(ev, "signal");
		int64_t at = tl_event_time(ev);
		const char *cn = json_str(ev, "container");
		int lane = cn ? lane_of_ctr(p, cn) : event_is_api(ev) ? p->ep : -1;
		enum glyph g = G_OTHER;
		char desc[1024];

		if (!ty || !at || lane < 0 || strcmp(ty, "http.request") == 0)
			continue;
		if (at < p->t0) {
			p->clipped++;
			continue;
		}
		if (strcmp(ty, "pod.deletion_requested") == 0)
			continue; /* the dashed line */
		if (strcmp(ty, "process.signal") == 0)
			g = sig && strcmp(sig, "SIGKILL") == 0 ? G_KILL
			    : json_str(ev, "result") &&
				    strcmp(json_str(ev, "result"), "ignored") == 0
				? G_IGNORED
				: G_SIGTERM;
		else if (strcmp(ty, "process.exec") == 0)
			g = G_EXEC;
		else if (strcmp(ty, "process.exit") == 0)
			g = G_EXIT;
		else if (strcmp(ty, "socket.listen") == 0)
			g = G_LISTEN;
		else if (strcmp(ty, "socket.listen_closed") == 0)
			g = G_CLOSED;
		else if (strncmp(ty, "tcp.reset", 9) == 0)
			g = G_RESET;
		else if (strcmp(ty, "endpoint.removed") == 0)
			g = G_EP_REMOVED;
		else if (strcmp(ty, "endpoint.condition") == 0)
			g = G_EP_COND;
		else if (strcmp(ty, "pod.deleted") == 0)
			g = G_POD;
		describe_event(ev, desc, sizeof(desc));
		fprintf(p->f, "<g class=\"ev\">");
		glyph(p->f, g, x_of(p, at), band_y(p, lane));
		title_el(p, at, desc);
		fputs("</g>\n", p->f);
	}
	/* the key moments' labels, in the order they matter */
	if (m->removed_ns)
		label(p, p->ep, m->removed_ns,
		      (snprintf(text, sizeof(text), "endpoint removed %s",
				fmt_offset(off, m->removed_ns, p->ref)),
		       text),
		      glyph_color(G_EP_REMOVED), true);
	if (m->ready_false_ns)
		label(p, p->ep, m->ready_false_ns,
		      (snprintf(text, sizeof(text), "not ready %s",
				fmt_offset(off, m->ready_false_ns, p->ref)),
		       text),
		      glyph_color(G_EP_COND), false);
	if (m->serving_false_ns && m->serving_false_ns != m->ready_false_ns)
		label(p, p->ep, m->serving_false_ns,
		      (snprintf(text, sizeof(text), "not serving %s",
				fmt_offset(off, m->serving_false_ns, p->ref)),
		       text),
		      glyph_color(G_EP_COND), false);
	for (int i = p->ep + 1; i < p->nl; i++) {
		const struct tl_ctr *c = &m->ctr[p->lanes[i].ctr];
		int64_t pre = prestop_of(m, evs, c->name);

		if (c->listen_closed_ns)
			label(p, i, c->listen_closed_ns,
			      (snprintf(text, sizeof(text), "%s stops listening%s%.0d %s", c->name,
					c->listen_closed_port ? " :" : "", c->listen_closed_port,
					fmt_offset(off, c->listen_closed_ns, p->ref)),
			       text),
			      glyph_color(G_CLOSED), true);
		if (pre)
			label(p, i, pre,
			      (snprintf(text, sizeof(text), "preStop %s",
					fmt_offset(off, pre, p->ref)),
			       text),
			      glyph_color(G_EXEC), false);
		if (c->sigterm_ns && !(one_sigterm && n_term > 1 && i > p->ep + 1))
			label(p, i, c->sigterm_ns,
			      (snprintf(text, sizeof(text), "SIGTERM%s%s %s",
					c->sigterm_ignored ? " ignored" : "",
					one_sigterm && n_term > 1 ? " to every container" : "",
					fmt_offset(off, c->sigterm_ns, p->ref)),
			       text),
			      glyph_color(G_SIGTERM), false);
		if (c->sigkill_ns)
			label(p, i, c->sigkill_ns,
			      (snprintf(text, sizeof(text), "SIGKILL %s",
					fmt_offset(off, c->sigkill_ns, p->ref)),
			       text),
			      glyph_color(G_KILL), true);
		if (c->exit_ns) {
			char how[64] = "";

			if (c->exit_signal)
				snprintf(how, sizeof(how), " (signal %d)", c->exit_signal);
			else if (c->exit_code)
				snprintf(how, sizeof(how), " (code %d)", c->exit_code);
			label(p, i, c->exit_ns,
			      (snprintf(text, sizeof(text), "%s exits%s %s", c->name, how,
					fmt_offset(off, c->exit_ns, p->ref)),
			       text),
			      glyph_color(G_EXIT), false);
		}
	}
	if (m->deleted_ns && m->deleted_ns <= p->t1)
		label(p, p->ep, m->deleted_ns,
		      (snprintf(text, sizeof(text), "Pod deleted %s",
				fmt_offset(off, m->deleted_ns, p->ref)),
		       text),
		      "#555555", false);
}

/* A request as a tick on a lane, in the first of its rows free at its
 * start; failed ones red; what it was in <title>. */
static void req_tick(struct pic *p, int64_t (*row_end)[REQ_ROWS], int lane, size_t i,
		     const char *text)
{
	const struct tl_req *r = &p->m->reqs[i];
	double x0 = x_of(p, r->start_ns), x1 = x_of(p, r->end_ns);
	int row = 0;

	for (int k = 0; k < REQ_ROWS; k++)
		if (row_end[lane][k] <= r->start_ns) {
			row = k;
			break;
		} else if (k == REQ_ROWS - 1) {
			row = (int)(i % REQ_ROWS);
		}
	row_end[lane][row] = r->end_ns;
	fprintf(p->f,
		"<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"5\" "
		"fill=\"%s\">",
		r->failed ? "req failed" : "req", x0,
		lane_y(p, lane) + (is_consumer(p, lane) ? CREQ_Y : REQ_Y) + row * 6,
		x1 - x0 < 2 ? 2 : x1 - x0, r->failed ? "#d62728" : "#2ca02c");
	title_el(p, r->start_ns, text);
	fputs("</rect>\n", p->f);
}

/* Every request on the lane of the container that saw it, and an inbound
 * one also on its consumer's lane: who sent what, and what failed. */
static void requests(struct pic *p)
{
	const struct tl_model *m = p->m;
	int64_t(*row_end)[REQ_ROWS] = calloc((size_t)p->nl, sizeof(*row_end));

	if (!row_end)
		return;
	fputs("<g class=\"requests\">\n", p->f);
	for (size_t i = 0; i < m->n_req; i++) {
		const struct tl_req *r = &m->reqs[i];
		int lane = r->ctr >= 0 ? lane_of_ctr(p, m->ctr[r->ctr].name) : p->ep;
		int who = p->cs.req ? p->cs.req[i] : -1;
		char text[1100], status[32];

		if (lane < 0)
			lane = p->ep;
		if (r->status)
			snprintf(status, sizeof(status), "%d", r->status);
		else
			snprintf(status, sizeof(status), "no response");
		snprintf(text, sizeof(text), "%s %s %s -> %s%s%s id=%s (%.0f ms)%s%s",
			 r->inbound ? "inbound" : "outbound", r->method ? r->method : "?",
			 r->path ? r->path : "?", status,
			 r->flags && strcmp(r->flags, "-") ? " " : "",
			 r->flags && strcmp(r->flags, "-") ? r->flags : "", r->id ? r->id : "-",
			 (double)(r->end_ns - r->start_ns) / 1e6, who >= 0 ? " from " : "",
			 who >= 0 ? p->cs.c[who].who.name : "");
		req_tick(p, row_end, lane, i, text);
		if (who >= 0 && p->cs.c[who].lane >= 0)
			req_tick(p, row_end, p->cs.c[who].lane, i, text);
	}
	fputs("</g>\n", p->f);
	free(row_end);
}

/* Each consumer lane's story: sending while the endpoint was in the
 * slice, then still sending after it left every slice (how long: its
 * lag), its accepted connections, and a label naming it with its lag and
 * failures at its last request. */
static void consumer_lanes(struct pic *p, struct json_object *evs)
{
	const struct tl_model *m = p->m;
	const struct consumers *cs = &p->cs;

	for (int l = 0; l < p->nl; l++) {
		int64_t first = 0, last = 0, last_rm = 0;
		size_t req = 0, failed = 0, members = 0;
		const struct consumer *worst = NULL;
		char name[200], text[700], d[OFFSET_LEN];

		if (!is_consumer(p, l))
			continue;
		for (size_t i = 0; i < cs->n; i++) {
			const struct consumer *c = &cs->c[i];

			if (c->lane != p->lanes[l].ctr)
				continue;
			members++;
			req += c->requests;
			failed += c->failed;
			if (c->first_ns && (!first || c->first_ns < first))
				first = c->first_ns;
			if (c->last_ns > last) {
				last = c->last_ns;
				worst = c;
			}
		}
		for (size_t i = 0; i < m->n_req; i++)
			if (cs->req[i] >= 0 && cs->c[cs->req[i]].lane == p->lanes[l].ctr &&
			    m->removed_ns && m->reqs[i].start_ns >= m->removed_ns &&
			    m->reqs[i].start_ns > last_rm)
				last_rm = m->reqs[i].start_ns;
		if (first && m->removed_ns)
			band(p, l, first, last < m->removed_ns ? last : m->removed_ns, "#6baed6", 0.45,
			     8, "sending, endpoint in the slice", "#2b5f86");
		else if (first)
			band(p, l, first, last, "#6baed6", 0.45, 8, "sending", "#2b5f86");
		if (last_rm) {
			snprintf(name, sizeof(name), "still sending after the removal");
			band(p, l, m->removed_ns, last_rm, "#e6550d", 0.65, 8, name, "#a63603");
		}
		/* the label: the lane's name in full, what it did after the removal */
		if (!last)
			continue;
		if (last_rm)
			snprintf(text, sizeof(text), "%s kept sending %s after the removal; %zu of its %zu requests failed",
				 p->lanes[l].name, fmt_secs(d, last_rm - m->removed_ns), failed, req);
		else if (m->removed_ns)
			snprintf(text, sizeof(text), "%s stopped %s before the removal; %zu of its %zu requests failed",
				 p->lanes[l].name, fmt_secs(d, m->removed_ns - last), failed, req);
		else
			snprintf(text, sizeof(text), "%s: %zu of its %zu requests failed", p->lanes[l].name,
				 failed, req);
		(void)worst;
		(void)members;
		label(p, l, last_rm ? last_rm : last, text, last_rm ? "#a63603" : "#2b5f86",
		      last_rm != 0);
	}
	/* accepted connections, a tick each (a folded group at its first) */
	for (size_t k = 0; evs && k < json_object_array_length(evs); k++) {
		struct json_object *ev = json_object_array_get_idx(evs, k);
		const char *ty = json_str(ev, "type");
		int64_t at = tl_event_time(ev);
		struct json_object *idx;
		struct peer_who w;
		char desc[600];
		int lane = -1;

		if (!ty || strcmp(ty, "tcp.accepted") || !at || at < p->t0 ||
		    peer_who(m->doc, json_str(ev, "peer"), &w) < 0 || w.self ||
		    !json_object_object_get_ex(cs->index, w.name, &idx))
			continue;
		for (int l = 0; l < p->nl; l++)
			if (is_consumer(p, l) && p->lanes[l].ctr == cs->c[json_object_get_int(idx)].lane)
				lane = l;
		if (lane < 0)
			continue;
		describe_event(ev, desc, sizeof(desc));
		fputs("<g class=\"ev accept\">", p->f);
		glyph(p->f, G_ACCEPT, x_of(p, at), band_y(p, lane));
		title_el(p, at, desc);
		fputs("</g>\n", p->f);
	}
}

/* The legend's next item goes at *x on line *y, or on the next line. */
static void legend_room(double *x, double *y, const char *what, double extra)
{
	if (*x + extra + (double)text_cols(what) * CHAR_W > W - RIGHT) {
		*x = LEFT;
		*y += 18;
	}
}

static double legend_item(FILE *f, double x, double y, enum glyph g, const char *what)
{
	glyph(f, g, x + 6, g == G_RESET ? y - 13 : y - 4); /* a reset sits under its lane's line */
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444444\">%s</text>\n",
		x + 16, y, what);
	return x + 16 + (double)text_cols(what) * CHAR_W + 18;
}

static double legend_band(FILE *f, double x, double y, const char *fill, double op, double h,
			  const char *what)
{
	fprintf(f,
		"<rect x=\"%.1f\" y=\"%.1f\" width=\"22\" height=\"%.0f\" fill=\"%s\" "
		"fill-opacity=\"%.2f\"/>",
		x, y - 4 - h / 2, h, fill, op);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444444\">%s</text>\n",
		x + 28, y, what);
	return x + 28 + (double)text_cols(what) * CHAR_W + 18;
}

static void legend(FILE *f, double y, bool consumers)
{
	static const struct {
		enum glyph g;
		const char *what;
	} glyphs[] = {
	    {G_SIGTERM, "SIGTERM"},
	    {G_IGNORED, "SIGTERM ignored"},
	    {G_KILL, "SIGKILL"},
	    {G_EXEC, "exec (preStop)"},
	    {G_EXIT, "exit"},
	    {G_LISTEN, "listen"},
	    {G_CLOSED, "listener closed"},
	    {G_RESET, "TCP reset"},
	    {G_EP_COND, "endpoint condition"},
	    {G_EP_REMOVED, "endpoint removed"},
	    {G_POD, "Pod deleted"},
	    {G_OTHER, "other event"},
	};
	static const struct {
		const char *fill;
		double op, h;
		const char *what;
	} bands[] = {
	    {"#17becf", 0.55, 8, "endpoint ready"},
	    {"#17becf", 0.25, 8, "terminating, still routed"},
	    {"#2ca02c", 0.55, 8, "listening"},
	    {"#ff7f0e", 0.6, 8, "draining"},
	    {"#9e9e9e", 0.45, 4, "stopping"},
	    {"#1f77b4", 0.35, 12, "preStop"},
	    {"#2ca02c", 1, 5, "request"},
	    {"#d62728", 1, 5, "failed request"},
	    {"#d62728", 0.12, 12, "failure window"},
	};
	double x = LEFT;

	for (size_t i = 0; i < sizeof(glyphs) / sizeof(glyphs[0]); i++) {
		legend_room(&x, &y, glyphs[i].what, 16);
		x = legend_item(f, x, y, glyphs[i].g, glyphs[i].what);
	}
	x = LEFT;
	y += 18;
	for (size_t i = 0; i < sizeof(bands) / sizeof(bands[0]); i++) {
		legend_room(&x, &y, bands[i].what, 28);
		x = legend_band(f, x, y, bands[i].fill, bands[i].op, bands[i].h, bands[i].what);
	}
	legend_room(&x, &y, "deletion", 18);
	fprintf(f,
		"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
		"stroke-width=\"2\" stroke-dasharray=\"6 3\"/>",
		x + 11, y - 11, x + 11, y + 3);
	fprintf(f,
		"<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444444\">deletion</text>\n",
		x + 18, y);
	x += 18 + 8 * CHAR_W + 18;
	if (!consumers)
		return;
	/* the consumers' lanes */
	x = LEFT;
	y += 18;
	x = legend_band(f, x, y, "#6baed6", 0.45, 8, "consumer sending, endpoint in the slice");
	legend_room(&x, &y, "still sending after the removal", 28);
	x = legend_band(f, x, y, "#e6550d", 0.65, 8, "still sending after the removal");
	legend_room(&x, &y, "connection accepted", 16);
	x = legend_item(f, x, y, G_ACCEPT, "connection accepted");
	legend_room(&x, &y, "endpoint removed, across the consumers", 18);
	fprintf(f,
		"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#0f7c87\" "
		"stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/>",
		x + 11, y - 11, x + 11, y + 3);
	fprintf(f,
		"<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#444444\">endpoint removed, "
		"across the consumers</text>\n",
		x + 18, y);
}

/* The verdict under the title, cut into lines of about max_chars. */
static int verdict_lines(FILE *f, const char *text, double y, int max_chars, const char *color)
{
	const char *p = text;
	int n = 0;

	while (*p && n < 3) {
		size_t len = strlen(p), cut = len;

		if ((int)text_cols(p) > max_chars) {
			cut = 0;
			for (size_t i = 0, cols = 0; p[i] && (int)cols <= max_chars; i++) {
				if (p[i] == ' ')
					cut = i;
				cols += ((unsigned char)p[i] & 0xc0) != 0x80;
			}
			if (!cut)
				cut = len;
		}
		fprintf(f,
			"<text class=\"verdict\" x=\"12\" y=\"%.1f\" font-size=\"13\" fill=\"%s\">",
			y + n * 17, color);
		{
			char *line = strndup(p, cut);

			esc(f, line ? line : "");
			free(line);
		}
		fputs("</text>\n", f);
		p += cut;
		while (*p == ' ')
			p++;
		n++;
	}
	return n;
}

int render_svg(const struct cli *cli, FILE *f, struct json_object *doc)
{
	struct pic *p = calloc(1, sizeof(*p));
	struct json_object *evs = json_path(doc, "events"), *fs = NULL;
	struct tl_model m;
	struct verdict v;
	double step, h, bottom;
	char fix[200], head[1200], off[OFFSET_LEN];

	if (!p)
		return -ENOMEM;
	if (tl_model_build(doc, &m) < 0 || doc_findings(doc, &fs) < 0) {
		tl_model_done(&m);
		free(p);
		return -EINVAL;
	}
	verdict_build(cli, &m, fs, &v);
	if (consumers_build(&m, fs, &p->cs) < 0) {
		tl_model_done(&m);
		json_object_put(fs);
		free(p);
		return -ENOMEM;
	}
	p->cli = cli;
	p->f = f;
	p->m = &m;
	p->ref = m.ref_ns;
	p->t0 = m.first_ns;
	p->t1 = m.last_ns;
	for (size_t i = 0; i < m.n_req; i++) {
		if (!p->t0 || m.reqs[i].start_ns < p->t0)
			p->t0 = m.reqs[i].start_ns;
		if (m.reqs[i].end_ns > p->t1)
			p->t1 = m.reqs[i].end_ns;
	}
	if (p->t1 <= p->t0)
		p->t1 = p->t0 + 1000000000;
	/* the termination is the story: what came long before it (a Pod
	 * that ran for days) is cut to as much as came after it */
	if (p->ref && p->t1 > p->ref) {
		int64_t after = p->t1 - p->ref, lead = after > 2000000000 ? after : 2000000000;

		if (p->ref - p->t0 > lead)
			p->t0 = p->ref - lead;
	}
	{
		int64_t pad = (p->t1 - p->t0) / 40;

		p->t0 -= pad;
		p->t1 += pad;
	}
	lanes_build(p);
	verdict_fix_short(&v, fix, sizeof(fix));
	snprintf(head, sizeof(head), "%s%s%s%s", v.headline, fix[0] ? " Fix: " : "", fix,
		 fix[0] ? " (kubectl termline explain)." : "");
	h = p->bottom + (p->cs.n_lanes ? 160 : 120);
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
		"viewBox=\"0 0 %d %.0f\" font-family=\"DejaVu Sans, Verdana, sans-serif\">\n",
		W, h, W, h);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%.0f\" fill=\"#ffffff\"/>\n", W, h);
	fputs("<text class=\"title\" x=\"12\" y=\"24\" font-size=\"17\" font-weight=\"bold\">", f);
	esc(f, m.ns ? m.ns : "?");
	fputc('/', f);
	esc(f, m.name ? m.name : "?");
	fprintf(f, "%s</text>\n",
		m.complete ? "" : " (timeline INCOMPLETE: counts are lower bounds)");
	verdict_lines(f, head, 44, (int)((W - 24) / 7.0), v.failed ? "#c00000" : "#1e6b1e");
	/* lanes: who sent, under a heading of their own, then the Pod's */
	if (p->cs.n_lanes) {
		snprintf(head, sizeof(head),
			 "Who sent: %zu consumer%s%s (requests, failed red; %s)", p->cs.n,
			 p->cs.n == 1 ? "" : "s",
			 p->cs.lanes_by == 1   ? ", a lane per workload"
			 : p->cs.lanes_by == 2 ? ", a lane per kind"
					       : "",
			 m.removed_ns ? "orange: still sending after the endpoint left every slice"
				      : "the endpoint's removal was not recorded");
		fprintf(f,
			"<text class=\"heading\" x=\"12\" y=\"%.1f\" font-size=\"12\" "
			"font-weight=\"bold\" fill=\"#444444\">",
			(double)TOP + CHEAD_H - 8);
		esc(f, head);
		fputs("</text>\n", f);
	}
	for (int i = 0; i < p->nl; i++) {
		bool cons = is_consumer(p, i);
		char cut[200];

		fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n",
			LEFT, lane_y(p, i), W - LEFT - RIGHT, cons ? CLANE_H : LANE_H,
			cons ? (i % 2 ? "#fbf7ef" : "#f5efe3") : i % 2 ? "#f6f6f6" : "#edf2f7");
		/* a consumer's name is long ("namespace/pod-hash"): cut here,
		 * whole in its label in the plot and its <title> */
		cut_middle(cli, p->lanes[i].name, cons ? 21 : 64, cut, sizeof(cut));
		fprintf(f, "<text class=\"lane%s\" x=\"12\" y=\"%.1f\" font-size=\"%d\">",
			cons ? " consumer" : "", band_y(p, i) + 5, cons ? 12 : 14);
		esc(f, cut);
		if (strcmp(cut, p->lanes[i].name)) {
			fputs("<title>", f);
			esc(f, p->lanes[i].name);
			fputs("</title>", f);
		}
		fprintf(f, "</text><text x=\"12\" y=\"%.1f\" font-size=\"11\" fill=\"#777777\">",
			band_y(p, i) + (cons ? 19 : 21));
		cut_end(cli, p->lanes[i].sub ? p->lanes[i].sub : "", 24, cut, sizeof(cut));
		esc(f, cut);
		fputs("</text>\n", f);
	}
	bottom = p->bottom;
	/* time axis: offsets from the reference */
	step = nice_step((double)(p->t1 - p->t0) / 1e9);
	for (double k = ceil((double)(p->t0 - p->ref) / 1e9 / step);
	     k * step <= (double)(p->t1 - p->ref) / 1e9; k++) {
		int64_t t = p->ref + (int64_t)llround(k * step * 1e9);
		double x = x_of(p, t);

		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#cccccc\" "
			"stroke-width=\"0.6\"/>"
			"<text class=\"tick\" x=\"%.1f\" y=\"%d\" font-size=\"11\" "
			"text-anchor=\"middle\" "
			"fill=\"#555555\">%s</text>\n",
			x, TOP - 6, x, bottom, x, TOP - 12, fmt_offset(off, t, p->ref));
	}
	/* the failure window, shaded and counted */
	if (v.failed && v.window_from && v.window_to) {
		double x0 = x_of(p, v.window_from), x1 = x_of(p, v.window_to);

		fprintf(f,
			"<rect class=\"window\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			"fill=\"#d62728\" fill-opacity=\"0.12\"><title>",
			x0, lane_y(p, 0), x1 - x0 < 2 ? 2 : x1 - x0, bottom - lane_y(p, 0));
		esc(f, v.window_label);
		fputs("</title></rect>\n", f);
		fprintf(f,
			"<text class=\"window-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"13\" "
			"font-weight=\"bold\" fill=\"#c00000\">",
			x0 + 4, bottom + 17);
		esc(f, v.window_label);
		fputs("</text>\n", f);
	}
	bands_of(p, evs);
	if (p->cs.n_lanes)
		consumer_lanes(p, evs);
	requests(p);
	/* the endpoint's removal, from its lane up through the consumers':
	 * what each sent after it went to an endpoint no longer in the slice */
	if (m.removed_ns && p->cs.n_lanes && m.removed_ns >= p->t0 && m.removed_ns <= p->t1) {
		double x = x_of(p, m.removed_ns);

		fprintf(f,
			"<line class=\"removal\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#0f7c87\" stroke-width=\"1.5\" stroke-dasharray=\"2 3\"/>\n",
			x, (double)TOP + CHEAD_H, x, band_y(p, p->ep));
	}
	/* the deletion: across every lane */
	if (m.deletion_ns) {
		double x = x_of(p, m.deletion_ns);

		fprintf(f,
			"<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
			"stroke-width=\"2\" stroke-dasharray=\"6 3\"/>"
			"<text class=\"moment\" x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
			"fill=\"#d62728\" text-anchor=\"end\">deletion %s</text>\n",
			x, TOP - 4, x, bottom + 34, x - 4, bottom + 32,
			fmt_offset(off, m.deletion_ns, p->ref));
	}
	moments(p, evs);
	if (p->clipped)
		fprintf(f,
			"<text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#777777\">%s %zu earlier "
			"event%s not drawn (kubectl termline show)</text>\n",
			LEFT + 4, TOP + 12, "\u25c0", p->clipped, p->clipped == 1 ? "" : "s");
	legend(f, bottom + 60, p->cs.n_lanes > 0);
	fputs("</svg>\n", f);
	consumers_done(&p->cs);
	tl_model_done(&m);
	json_object_put(fs);
	free(p);
	return ferror(f) ? -EIO : 0;
}
