// SPDX-License-Identifier: Apache-2.0
/* explain NS/POD: the verdict first (what failed, how many, when, why),
 * then the fix once, paste-ready, then the findings, each saying which of
 * the failed requests it covers. The CLI computes the findings with its
 * own rules (the agent's stored ones may be older). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "findings.h"
#include "json-util.h"

#define IDS_LINES 2 /* request ID lines without -v */

/* The IDs wrapped under "IDs:"; without -v two lines, the second ending
 * in "… N more" when they do not all fit. */
static void print_ids(const struct cli *cli, FILE *f, struct json_object *ids, size_t count)
{
	int width = cli->width > 100 ? 100 : cli->width < 40 ? 40 : cli->width;
	size_t n = json_object_array_length(ids), i = 0, shown = 0;

	for (size_t line = 1; i < n; line++) {
		size_t col = 6, first = i;
		bool last = cli->verbose < 1 && line == IDS_LINES;

		/* the IDs this line holds */
		while (i < n) {
			size_t l =
			    text_cols(json_object_get_string(json_object_array_get_idx(ids, i)));

			if (i > first && col + l + 1 > (size_t)width)
				break;
			col += l + 1;
			i++;
		}
		/* the last line without -v: room for what is left unsaid */
		while (last && i < count && i > first + 1) {
			char more[64];
			size_t mcols;

			snprintf(more, sizeof(more), " %s %zu more (-v lists them)",
				 glyph_ellipsis(cli), count - i);
			mcols = text_cols(more);

			if (col + mcols <= (size_t)width)
				break;
			col -=
			    text_cols(json_object_get_string(json_object_array_get_idx(ids, --i))) +
			    1;
		}
		fprintf(f, "%s", line == 1 ? "  IDs:" : "\n      ");
		for (size_t k = first; k < i; k++)
			fprintf(f, " %s",
				json_object_get_string(json_object_array_get_idx(ids, k)));
		shown = i;
		if (last)
			break;
	}
	if (shown < count)
		fprintf(f, " %s %zu more (%s)", glyph_ellipsis(cli), count - shown,
			shown < n ? "-v lists them" : "-o json");
	fputc('\n', f);
}

static void print_numbers(const struct cli *cli, FILE *f, struct json_object *nums)
{
	char text[4096] = "numbers:";

	json_object_object_foreach(nums, k, v)
	{
		size_t l = strlen(text);

		snprintf(text + l, sizeof(text) - l, " %s=%s", k,
			 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	}
	wrap(cli, f, 2, 4, text);
}

/* The rules' own sentences write times with %+.3f: a time a hair before
 * the reference reads "-0.000 s". Said as the one formatter says it. */
static const char *norm(const char *text, char *buf, size_t len)
{
	char *p;

	snprintf(buf, len, "%s", text ? text : "");
	for (p = strstr(buf, "-0.000 s"); p; p = strstr(p + 1, "-0.000 s"))
		*p = '+';
	return buf;
}

/* The same setting: equal, or "containers[]" (a rule that names no
 * container) where the other names one. */
static bool same_setting(const char *a, const char *b)
{
	const char *pa = strstr(a, "containers["), *pb = strstr(b, "containers[");

	if (strcmp(a, b) == 0)
		return true;
	if (!pa || !pb || pa - a != pb - b || strncmp(a, b, (size_t)(pa - a)) != 0)
		return false;
	pa = strchr(pa, ']');
	pb = strchr(pb, ']');
	if (!pa || !pb || strcmp(pa, pb) != 0)
		return false;
	return strstr(a, "containers[]") || strstr(b, "containers[]");
}

static bool same_reco(struct json_object *a, struct json_object *b)
{
	struct json_object *ra = json_path(a, "recommendation"),
			   *rb = json_path(b, "recommendation");
	const char *sa = json_str(ra, "setting"), *sb = json_str(rb, "setting");

	return sa && sb && same_setting(sa, sb) &&
	       strcmp(json_object_to_json_string(json_path(ra, "value")),
		      json_object_to_json_string(json_path(rb, "value"))) == 0;
}

#define CONSUMER_ROWS 10 /* consumers listed without -v */

/* A table within the width: the columns' widths, the two text columns
 * (CONSUMER, WORKLOAD) cut in the middle until the rest fits. */
enum { C_NAME, C_KIND, C_WORKLOAD, C_LAG, C_REQ, C_FAILED, C_REUSED, C_N };

static void consumer_row(const struct cli *cli, FILE *f, const int *w, char cells[C_N][320])
{
	fputs("  ", f);
	for (int c = 0; c < C_N; c++) {
		char cut[340];
		size_t cols;

		if (!w[c])
			continue; /* a column left out */
		if (c == C_WORKLOAD)
			cut_end(cli, cells[c], (size_t)w[c], cut, sizeof(cut));
		else
			cut_middle(cli, cells[c], (size_t)w[c], cut, sizeof(cut));
		cols = text_cols(cut);
		/* text left, numbers right */
		if (c >= C_LAG)
			fprintf(f, "%*s%s", w[c] - (int)cols, "", cut);
		else
			fprintf(f, "%s%*s", cut, w[c] - (int)cols, "");
		if (c < C_N - 1)
			fputs("  ", f);
	}
	fputc('\n', f);
}

/* Who kept sending: traffic_after_endpoint_removed's consumers, the
 * slowest first, with the keep-alive connections each reused (computed
 * here from the document: the rule lists connections, not per consumer). */
static void print_consumers(const struct cli *cli, FILE *f, const struct tl_model *m,
			    struct json_object *fs)
{
	struct consumers cs;
	struct json_object *list;
	size_t n, rows;
	/* a table may use the whole terminal (prose stops at 100 columns) */
	int width = cli->width < 60 ? 60 : cli->width;
	int w[C_N] = {0}, total;
	static const char *const head[C_N] = {"CONSUMER", "KIND", "WORKLOAD", "LAG",
					      "REQUESTS", "FAILED", "REUSED"};
	char cells[C_N][320], text[600], at[OFFSET_LEN], cut[OFFSET_LEN];
	bool show_kind = false, show_workload = false;

	if (consumers_build(m, fs, &cs) < 0)
		return;
	list = json_path(cs.finding, "consumers");
	n = list ? json_object_array_length(list) : 0;
	if (!n) {
		consumers_done(&cs);
		return;
	}
	rows = cli->verbose > 0 || n <= CONSUMER_ROWS + 1 ? n : CONSUMER_ROWS;
	snprintf(text, sizeof(text),
		 "Who sent (%zu consumer%s from the %s on; LAG: its last request after the "
		 "endpoint left every slice at %s; REUSED: keep-alive connections opened before "
		 "%s and used after it):",
		 n, n == 1 ? "" : "s", m->deletion_ns ? "deletion" : m->ref_what,
		 fmt_offset(at, m->removed_ns, m->ref_ns),
		 cs.cutoff_ns && cs.cutoff_ns != m->removed_ns ? "SIGTERM" : "the removal");
	wrap(cli, f, 0, 2, text);
	/* KIND says something only of a consumer named by its address
	 * (external, unknown): "ns/name" is a Pod, "node/NAME" a Node */
	for (size_t i = 0; i < n; i++) {
		const char *k = json_str(json_object_array_get_idx(list, i), "kind");

		show_kind |= k && strcmp(k, "Pod") && strcmp(k, "Node");
	}
	for (size_t i = 0; i < cs.n; i++)
		show_workload |= cs.c[i].entry && cs.c[i].who.workload[0];
	for (int pass = 0; pass < 2; pass++) {
		for (int c = 0; c < C_N && pass == 0; c++)
			w[c] = (int)text_cols(head[c]);
		for (size_t i = 0; i <= rows; i++) {
			struct json_object *o = i ? json_object_array_get_idx(list, i - 1) : NULL;
			struct json_object *lag = json_path(o, "lagSeconds"), *idx;
			const struct consumer *c = NULL;

			if (!i) {
				for (int k = 0; k < C_N; k++)
					snprintf(cells[k], sizeof(cells[k]), "%s", head[k]);
			} else {
				if (json_str(o, "consumer") &&
				    json_object_object_get_ex(cs.index, json_str(o, "consumer"),
							      &idx))
					c = &cs.c[json_object_get_int(idx)];
				snprintf(cells[C_NAME], sizeof(cells[0]), "%s",
					 json_str(o, "consumer") ? json_str(o, "consumer") : "?");
				snprintf(cells[C_KIND], sizeof(cells[0]), "%s",
					 json_str(o, "kind") ? json_str(o, "kind") : "-");
				snprintf(cells[C_WORKLOAD], sizeof(cells[0]), "%s",
					 c && c->who.workload[0] ? c->who.workload : "-");
				if (lag && (json_object_is_type(lag, json_type_double) ||
					    json_object_is_type(lag, json_type_int)))
					fmt_offset(cut,
						   m->removed_ns +
						       llround(json_object_get_double(lag) * 1e9),
						   m->removed_ns);
				else
					snprintf(cut, sizeof(cut), "-");
				snprintf(cells[C_LAG], sizeof(cells[0]), "%s", cut);
				snprintf(cells[C_REQ], sizeof(cells[0]), "%lld",
					 (long long)json_object_get_int64(json_path(o, "requests")));
				snprintf(cells[C_FAILED], sizeof(cells[0]), "%lld",
					 (long long)json_object_get_int64(json_path(o, "failed")));
				snprintf(cells[C_REUSED], sizeof(cells[0]), "%zu",
					 c ? c->reused : (size_t)0);
			}
			if (pass == 0) {
				for (int k = 0; k < C_N; k++)
					if ((int)text_cols(cells[k]) > w[k])
						w[k] = (int)text_cols(cells[k]);
				continue;
			}
			consumer_row(cli, f, w, cells);
		}
		if (pass)
			break;
		if (!show_kind)
			w[C_KIND] = 0;
		if (!show_workload)
			w[C_WORKLOAD] = 0;
		/* fit: WORKLOAD gives way first (to 16 columns), then CONSUMER
		 * (to 16), then WORKLOAD again (to 8) */
		total = 2 - 2;
		for (int k = 0; k < C_N; k++)
			total += w[k] ? w[k] + 2 : 0;
		for (int step = 0; step < 3 && total > width; step++) {
			int k = step == 1 ? C_NAME : C_WORKLOAD, min = step == 2 ? 8 : 16;

			while (total > width && w[k] > min) {
				w[k]--;
				total--;
			}
		}
	}
	if (rows < n)
		fprintf(f, "  %s %zu more consumer%s (-v lists them; -o json has each)\n",
			glyph_ellipsis(cli), n - rows, n - rows == 1 ? "" : "s");
	fputc('\n', f);
	consumers_done(&cs);
}

/* -v: the HTTP/2 findings' calls, one a line: request ID, method path,
 * how it ended (gRPC's status, or why it has none), its stream. */
static void print_calls(const struct cli *cli, FILE *f, struct json_object *calls)
{
	char text[1024];

	if (!calls || !json_object_is_type(calls, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(calls); i++) {
		struct json_object *c = json_object_array_get_idx(calls, i);
		const char *id = json_str(c, "requestId"), *path = json_str(c, "path"),
			   *out = json_str(c, "outcome"), *dir = json_str(c, "direction");
		int64_t conn = 0, stream = 0;

		tl_json_int(c, "conn", &conn);
		tl_json_int(c, "streamId", &stream);
		snprintf(text, sizeof(text), "%s %s %s: %s (%s, connection %lld, stream %lld)",
			 i ? "     " : "calls:", id ? id : "(no request ID)", path ? path : "?",
			 out ? out : "?", dir ? dir : "direction unknown", (long long)conn,
			 (long long)stream);
		wrap(cli, f, 2, 8, text);
	}
}

static int explain_text(FILE *f, const struct cli *cli, struct json_object *doc,
			struct json_object *fs)
{
	size_t n = json_object_array_length(fs);
	struct verdict v;
	struct tl_model m;
	char text[2048];
	bool all_said = false;

	if (tl_model_build(doc, &m) < 0) {
		tl_model_done(&m);
		return -1;
	}
	verdict_build(cli, &m, fs, &v);
	snprintf(text, sizeof(text), "%s%s/%s:%s %s%s%s", col(cli, "bold"), m.ns ? m.ns : "?",
		 m.name ? m.name : "?", col(cli, "reset"), v.failed ? col(cli, "red") : "",
		 v.headline, v.failed ? col(cli, "reset") : "");
	wrap(cli, f, 0, 2, text);
	if (!m.complete) {
		snprintf(text, sizeof(text),
			 "%sThe timeline is INCOMPLETE (%s): every count below is a lower bound.%s",
			 col(cli, "red"), m.incomplete_why, col(cli, "reset"));
		wrap(cli, f, 0, 2, text);
	}
	fputc('\n', f);
	if (verdict_print_fix(cli, f, &m, &v))
		fputc('\n', f);
	print_consumers(cli, f, &m, fs);
	if (n)
		fprintf(f, "%zu finding%s, most severe first (times from the %s):\n", n,
			n == 1 ? "" : "s", m.deletion_ns ? "deletion request" : m.ref_what);
	else
		fprintf(f, "No findings: nothing happened that the rules recognise.\n");
	for (size_t i = 0; i < n; i++) {
		struct json_object *x = json_object_array_get_idx(fs, i), *ids, *nums, *reco;
		const char *sev = json_str(x, "severity");
		int rank = tl_finding_severity_rank(sev);
		char covers[300];
		bool has_ids = json_object_object_get_ex(x, "requestIds", &ids) &&
			       json_object_array_length(ids);

		verdict_covers(&v, x, !all_said, covers, sizeof(covers));
		if (strncmp(covers, "all ", 4) == 0)
			all_said = true;
		snprintf(text, sizeof(text), "%s[%s] %s%s%s%s",
			 col(cli, rank == 3   ? "red"
				  : rank == 2 ? "yellow"
					      : "dim"),
			 sev ? sev : "?", json_str(x, "rule") ? json_str(x, "rule") : "?",
			 col(cli, "reset"), covers[0] ? ": " : "", covers);
		wrap(cli, f, 0, 4, text);
		wrap(cli, f, 2, 2, norm(json_str(x, "summary"), text, sizeof(text)));
		if (cli->verbose > 0 && json_object_object_get_ex(x, "numbers", &nums) &&
		    json_object_is_type(nums, json_type_object))
			print_numbers(cli, f, nums);
		if (has_ids) {
			long long count = (long long)json_object_array_length(ids);
			struct json_object *c =
			    json_path(json_path(x, "numbers"), "failedRequests");

			if (c && json_object_is_type(c, json_type_int) &&
			    json_object_get_int64(c) > count)
				count = json_object_get_int64(c);
			print_ids(cli, f, ids, (size_t)count);
		}
		if (cli->verbose > 0)
			print_calls(cli, f, json_path(x, "calls"));
		reco = json_path(x, "recommendation");
		if (reco && json_str(reco, "setting") &&
		    strcmp(json_str(reco, "setting"), "none")) {
			if (v.fix && (x == v.fix || same_reco(x, v.fix)))
				fprintf(f, "  fix: the one above\n");
			else {
				snprintf(text, sizeof(text), "also: %s = %s",
					 json_str(reco, "setting"),
					 json_object_get_string(json_path(reco, "value")));
				wrap(cli, f, 2, 4, text);
			}
			if (cli->verbose > 0 && json_str(reco, "formula")) {
				snprintf(text, sizeof(text), "because %s",
					 json_str(reco, "formula"));
				wrap(cli, f, 4, 4, text);
			}
		}
	}
	tl_model_done(&m);
	return 0;
}

int cmd_explain(struct cli *cli)
{
	struct json_object *doc, *fs = NULL;
	int r;

	r = load_doc(cli, cli->args[0], &doc, false, NULL);
	if (r != EXIT_FOUND)
		return r;
	/* The peers' names from the API first, so the escape below covers
	 * them too. text: every string escaped for the terminal; json and
	 * yaml: exact. */
	if (resolve_peers(cli, doc) < 0) {
		cli_err(cli, "%s: not a timeline document", cli->args[0]);
		json_object_put(doc);
		return EXIT_USAGE;
	}
	if (output_is(cli, "text") && doc_escape(doc) < 0) {
		json_object_put(doc);
		return EXIT_USAGE;
	}
	if (doc_findings(doc, &fs) < 0) {
		cli_err(cli, "%s: not a timeline document", cli->args[0]);
		json_object_put(doc);
		return EXIT_USAGE;
	}
	if (!output_is(cli, "text")) {
		struct json_object *o = json_object_new_object(), *vo = json_object_new_object();
		struct tl_model m;
		struct verdict v;

		if (tl_model_build(doc, &m) == 0)
			verdict_build(cli, &m, fs, &v);
		else
			memset(&v, 0, sizeof(v));
		if (!o || !vo || json_object_object_add(o, "findings", json_object_get(fs)) < 0 ||
		    json_object_object_add(o, "verdict", vo) < 0) {
			json_object_put(vo);
			r = EXIT_USAGE;
		} else {
			json_object_object_add(vo, "text", json_object_new_string(v.headline));
			json_object_object_add(vo, "failedRequests",
					       json_object_new_int64((int64_t)v.failed));
			json_object_object_add(vo, "cause",
					       v.cause_rule ? json_object_new_string(v.cause_rule)
							    : NULL);
			json_object_object_add(
			    vo, "fix",
			    v.fix ? json_object_new_string(json_str(v.fix, "rule")) : NULL);
			r = print_structured(cli, o);
		}
		tl_model_done(&m);
		json_object_put(o);
	} else {
		r = explain_text(stdout, cli, doc, fs) < 0 ? EXIT_USAGE : EXIT_FOUND;
	}
	json_object_put(fs);
	json_object_put(doc);
	return r;
}
