// SPDX-License-Identifier: Apache-2.0
/* list: the timelines, newest first. NAMESPACE, POD, AGE, FAILED, TOP
 * FINDING, COMPLETE within the terminal's width (80 columns when not a
 * terminal): the longest columns give way, a name keeps its end (a Pod's
 * distinguishing suffix). -o wide adds owner, node, state, deletion,
 * duration, findings and UID; -o json and yaml every field. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "findings.h"

struct row {
	const char *ns, *name, *uid, *state, *node, *top;
	char owner[300], start[32], deletion[32], duration[32], age[32];
	size_t failed, findings;
	bool complete;
};

static void iso(int64_t ns, char *buf, size_t len)
{
	char t[TL_TIME_STRLEN];

	if (!ns) {
		snprintf(buf, len, "-");
		return;
	}
	tl_time_format(ns, t);
	snprintf(buf, len, "%.19sZ", t);
}

static int row_of(struct json_object *doc, struct json_object *fs, int64_t now, struct row *r)
{
	struct json_object *pod = json_path(doc, "pod"), *owner = json_path(doc, "pod.owner");
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
	r->node = json_str(pod, "node") ? json_str(pod, "node") : "-";
	if (json_str(owner, "kind"))
		snprintf(r->owner, sizeof(r->owner), "%s/%s", json_str(owner, "kind"),
			 json_str(owner, "name") ? json_str(owner, "name") : "?");
	else
		snprintf(r->owner, sizeof(r->owner), "-");
	r->state = m.deleted_ns ? "closed" : "open";
	iso(m.first_ns, r->start, sizeof(r->start));
	iso(m.deletion_ns, r->deletion, sizeof(r->deletion));
	end = m.deleted_ns ? m.deleted_ns : m.last_ns;
	if (m.deletion_ns && end >= m.deletion_ns)
		fmt_secs(r->duration, end - m.deletion_ns);
	else
		snprintf(r->duration, sizeof(r->duration), "-");
	/* AGE as kubectl's: since the deletion, else since the first event */
	if (m.deletion_ns || m.first_ns)
		fmt_age(r->age, sizeof(r->age), now - (m.deletion_ns ? m.deletion_ns : m.first_ns));
	else
		snprintf(r->age, sizeof(r->age), "-");
	tl_model_done(&m);
	r->failed = doc_failed_requests(doc);
	r->findings = fs ? json_object_array_length(fs) : 0;
	/* the most severe finding that is not an all-clear */
	r->top = "-";
	for (size_t i = 0; fs && i < json_object_array_length(fs); i++) {
		struct json_object *f = json_object_array_get_idx(fs, i);

		if (tl_finding_severity_rank(json_str(f, "severity")) >= 2 && json_str(f, "rule")) {
			r->top = json_str(f, "rule");
			break;
		}
	}
	r->complete =
	    json_path(doc, "complete") && json_object_get_boolean(json_path(doc, "complete"));
	return 0;
}

/* s cut to w columns: the start kept ("requests_after_li…"), or for a
 * name the end ("…5d9c7-x2x9q"). Into buf. */
static const char *fit(const struct cli *cli, const char *s, size_t w, bool keep_end, char *buf,
		       size_t len)
{
	size_t cols = text_cols(s), skip, n = 0;
	const char *e = glyph_ellipsis(cli);
	const char *p = s;

	if (cols <= w || w < 2) {
		snprintf(buf, len, "%s", s);
		return buf;
	}
	if (keep_end) {
		skip = cols - (w - 1);
		for (; *p && skip; p++)
			if (((unsigned char)p[1] & 0xc0) != 0x80)
				skip--;
		snprintf(buf, len, "%s%s", e, p);
		if (!cli->utf8) /* "..." is three columns */
			snprintf(buf, len, "%s%s", e, p + 2 < s + strlen(s) ? p + 2 : p);
		return buf;
	}
	for (size_t c = 0; *p && c < w - (cli->utf8 ? 1 : 3); p++) {
		if (((unsigned char)p[1] & 0xc0) != 0x80)
			c++;
	}
	n = (size_t)(p - s);
	snprintf(buf, len, "%.*s%s", (int)n, s, e);
	return buf;
}

static void pad(FILE *f, const char *s, size_t w)
{
	size_t c = text_cols(s);

	fputs(s, f);
	for (; c < w; c++)
		fputc(' ', f);
}

static void table(const struct cli *cli, struct row *rows, size_t n)
{
	/* NAMESPACE POD AGE FAILED TOP FINDING COMPLETE, two spaces apart */
	size_t w_ns = 9, w_pod = 3, w_age = 3, w_fail = 6, w_top = 11, w_ok = 8, total;
	size_t width = cli->width > 0 ? (size_t)cli->width : 80;

	for (size_t i = 0; i < n; i++) {
		size_t c;

		if ((c = text_cols(rows[i].ns)) > w_ns)
			w_ns = c;
		if ((c = text_cols(rows[i].name)) > w_pod)
			w_pod = c;
		if ((c = text_cols(rows[i].age)) > w_age)
			w_age = c;
		if ((c = text_cols(rows[i].top)) > w_top)
			w_top = c;
	}
	/* within the width: TOP FINDING gives way first, then POD, then NAMESPACE */
	total = w_ns + w_pod + w_age + w_fail + w_top + w_ok + 5 * 2;
	if (total > width) {
		size_t over = total - width, give = w_top > 22 ? w_top - 22 : 0;

		give = give < over ? give : over;
		w_top -= give;
		over -= give;
		give = w_pod > 20 ? w_pod - 20 : 0;
		give = give < over ? give : over;
		w_pod -= give;
		over -= give;
		give = w_ns > 8 ? w_ns - 8 : 0;
		give = give < over ? give : over;
		w_ns -= give;
	}
	pad(stdout, "NAMESPACE", w_ns);
	fputs("  ", stdout);
	pad(stdout, "POD", w_pod);
	fputs("  ", stdout);
	printf("%-*s  %*s  ", (int)w_age, "AGE", (int)w_fail, "FAILED");
	pad(stdout, "TOP FINDING", w_top);
	printf("  COMPLETE\n");
	for (size_t i = 0; i < n; i++) {
		const struct row *w = &rows[i];
		char a[512], b[512], c[512];

		pad(stdout, fit(cli, w->ns, w_ns, false, a, sizeof(a)), w_ns);
		fputs("  ", stdout);
		pad(stdout, fit(cli, w->name, w_pod, true, b, sizeof(b)), w_pod);
		printf("  %-*s  %s%*zu%s  ", (int)w_age, w->age, w->failed ? col(cli, "red") : "",
		       (int)w_fail, w->failed, w->failed ? col(cli, "reset") : "");
		pad(stdout, fit(cli, w->top, w_top, false, c, sizeof(c)), w_top);
		printf("  %s%s%s\n", w->complete ? "" : col(cli, "red"), w->complete ? "yes" : "NO",
		       w->complete ? "" : col(cli, "reset"));
	}
}

static void wide(const struct cli *cli, struct row *rows, size_t n)
{
	printf("%-12s %-32s %-5s %6s %-30s %-8s %-24s %-12s %-6s %-20s %9s %8s %s\n", "NAMESPACE",
	       "POD", "AGE", "FAILED", "TOP FINDING", "COMPLETE", "OWNER", "NODE", "STATE",
	       "DELETION", "DURATION", "FINDINGS", "UID");
	for (size_t i = 0; i < n; i++) {
		const struct row *w = &rows[i];

		printf(
		    "%-12s %-32s %-5s %s%6zu%s %-30s %s%-8s%s %-24s %-12s %-6s %-20s %9s %8zu %s\n",
		    w->ns, w->name, w->age, w->failed ? col(cli, "red") : "", w->failed,
		    w->failed ? col(cli, "reset") : "", w->top, w->complete ? "" : col(cli, "red"),
		    w->complete ? "yes" : "NO", w->complete ? "" : col(cli, "reset"), w->owner,
		    w->node, w->state, w->deletion, w->duration, w->findings, w->uid);
	}
}

int cmd_list(struct cli *cli)
{
	struct source *src = NULL;
	struct json_object *docs = NULL, *out = NULL, *arr = NULL, *keep = json_object_new_array();
	struct src_err e;
	bool text = output_is(cli, "text") || output_is(cli, "wide");
	struct row *rows = NULL;
	size_t n = 0;
	int64_t now = tl_now_real_ns();
	int r;

	r = source_open(cli, &src, &e);
	if (r == 0)
		r = source_list(src, cli->all_namespaces ? NULL : cli->ns, NULL, NULL, &docs, &e);
	source_free(src);
	if (r < 0) {
		if (!e.msg[0])
			snprintf(e.msg, sizeof(e.msg), "%s", strerror(-r));
		report(cli, &e);
		json_object_put(keep);
		return EXIT_USAGE;
	}
	rows = calloc(json_object_array_length(docs) + 1, sizeof(*rows));
	if (!rows || !keep) {
		r = -ENOMEM;
		goto done;
	}
	if (!text) {
		out = json_object_new_object();
		arr = json_object_new_array();
		if (!out || !arr || json_object_object_add(out, "timelines", arr) < 0) {
			json_object_put(arr);
			r = -ENOMEM;
			goto done;
		}
	}
	for (size_t i = 0; i < json_object_array_length(docs); i++) {
		struct json_object *doc = json_object_array_get_idx(docs, i), *fs = NULL;
		struct row *w = &rows[n];

		if (text && doc_escape(doc) < 0) {
			r = -ENOMEM;
			goto done;
		}
		if (doc_findings(doc, &fs) < 0 || row_of(doc, fs, now, w) < 0) {
			json_object_put(fs);
			continue;
		}
		/* the rows borrow from doc and fs: both live until the end */
		if (fs && json_object_array_add(keep, fs) < 0) {
			json_object_put(fs);
			r = -ENOMEM;
			goto done;
		}
		n++;
		if (!text) {
			struct json_object *o = json_object_new_object();

			if (!o || json_object_array_add(arr, o) < 0) {
				json_object_put(o);
				r = -ENOMEM;
				goto done;
			}
			json_object_object_add(o, "namespace", json_object_new_string(w->ns));
			json_object_object_add(o, "name", json_object_new_string(w->name));
			json_object_object_add(o, "uid", json_object_new_string(w->uid));
			json_object_object_add(o, "owner", json_object_new_string(w->owner));
			json_object_object_add(o, "node", json_object_new_string(w->node));
			json_object_object_add(o, "state", json_object_new_string(w->state));
			json_object_object_add(o, "start", json_object_new_string(w->start));
			json_object_object_add(o, "deletion", json_object_new_string(w->deletion));
			json_object_object_add(o, "duration", json_object_new_string(w->duration));
			json_object_object_add(o, "age", json_object_new_string(w->age));
			json_object_object_add(o, "failedRequests",
					       json_object_new_int64((int64_t)w->failed));
			json_object_object_add(o, "findings",
					       json_object_new_int64((int64_t)w->findings));
			json_object_object_add(o, "topFinding",
					       strcmp(w->top, "-") ? json_object_new_string(w->top)
								   : NULL);
			json_object_object_add(o, "complete", json_object_new_boolean(w->complete));
		}
	}
	if (!text) {
		r = print_structured(cli, out) == EXIT_FOUND ? 0 : -EIO;
	} else if (n) {
		if (output_is(cli, "wide"))
			wide(cli, rows, n);
		else
			table(cli, rows, n);
	} else {
		fprintf(stderr, "no timelines%s%s\n",
			cli->ns && !cli->all_namespaces ? " in namespace " : "",
			cli->ns && !cli->all_namespaces ? tx(cli->ns) : "");
	}
done:
	free(rows);
	json_object_put(out);
	json_object_put(keep);
	json_object_put(docs);
	return r < 0 ? EXIT_USAGE : EXIT_FOUND;
}
