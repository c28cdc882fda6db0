/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "clock.h"
#include "event.h"
#include "http-api.h"
#include "journal.h"
#include "tl-buf.h"
#include "metrics.h"
#include "scenario.h"
#include "macro.h"
#include "../check-run.h"

#define UID_A "aaaaaaaa-0000-4000-8000-000000000001"
#define UID_B "bbbbbbbb-0000-4000-8000-000000000002"
#define UID_C "cccccccc-0000-4000-8000-000000000003"

static const char *const probes[] = { "signal_generate:tp_btf", NULL };

/* snprintf into a path buffer; a truncated path would test the wrong file. */
#define PATHF(buf, ...) ck_assert_int_lt(snprintf(buf, sizeof(buf), __VA_ARGS__), (int)sizeof(buf))

struct fx {
	char *dir;
	struct tl_loop *loop;
	struct tl_timelines *t;
	struct tl_timelines_config cfg;
};

static void fx_store(struct fx *f)
{
	ck_assert_int_eq(tl_timelines_new(&f->cfg, f->loop, &f->t), 0);
}

/* Everything but the store, so a test can change the configuration first. */
static void fx_prepare(struct fx *f, uint32_t linger_s, uint32_t max_events)
{
	memset(f, 0, sizeof(*f));
	f->dir = scn_tmpdir();
	ck_assert_ptr_nonnull(f->dir);
	ck_assert_int_eq(tl_loop_new(&f->loop), 0);
	f->cfg = (struct tl_timelines_config){
		.state_dir = f->dir,
		.linger_s = linger_s,
		.max_events = max_events,
		.fsync_ms = 50,
		.findings_helper = TL_FINDINGS_HELPER,
		.recorder = { .agent_version = "0.1.0-test", .node = "node-1", .kernel = "6.18.0",
			      .config_digest = "sha256:abc", .probes = probes },
	};
}

static void fx_init(struct fx *f, uint32_t linger_s, uint32_t max_events)
{
	fx_prepare(f, linger_s, max_events);
	fx_store(f);
}

static void fx_done(struct fx *f)
{
	tl_timelines_free(f->t);
	tl_loop_free(f->loop);
	scn_rm_rf(f->dir);
	free(f->dir);
}

static struct json_object *get_doc(struct tl_timelines *t, const char *ns, const char *name,
				   const char *uid)
{
	char *s = NULL;
	size_t len = 0;
	struct json_object *o;

	ck_assert_int_eq(tl_timelines_get(t, ns, name, uid, &s, &len), 0);
	o = json_tokener_parse(s);
	ck_assert_ptr_nonnull(o);
	free(s);
	return o;
}

static struct json_object *jget(struct json_object *o, const char *path)
{
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
		struct json_object *v = NULL;

		if (json_object_is_type(o, json_type_array))
			v = json_object_array_get_idx(o, (size_t)atoi(k));
		else
			json_object_object_get_ex(o, k, &v);
		o = v;
	}
	return o;
}

static int64_t jint(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	ck_assert_msg(v && json_object_is_type(v, json_type_int), "%s is not an int", path);
	return json_object_get_int64(v);
}

static const char *jstr(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	ck_assert_msg(v && json_object_is_type(v, json_type_string), "%s is not a string", path);
	return json_object_get_string(v);
}

static bool jbool(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	ck_assert_msg(v && json_object_is_type(v, json_type_boolean), "%s is not a bool", path);
	return json_object_get_boolean(v);
}

static size_t jlen(struct json_object *o, const char *path)
{
	struct json_object *v = jget(o, path);

	ck_assert_msg(v && json_object_is_type(v, json_type_array), "%s is not an array", path);
	return json_object_array_length(v);
}

static void validate_doc(struct fx *f, struct json_object *doc, const char *name)
{
	char dir[PATH_MAX];
	const char *s = json_object_to_json_string(doc);

	PATHF(dir, "%s/checked", f->dir);
	mkdir(dir, 0755);
	ck_assert_int_eq(scn_write(dir, name, s, strlen(s)), 0);
	PATHF(dir, "%s/checked/%s", f->dir, name);
	ck_assert_int_eq(scn_validate(dir), 0);
}

static char *read_all(const char *path, size_t *ret_len)
{
	FILE *fp = fopen(path, "re");
	char *buf;
	long n;

	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	ck_assert_int_gt(n, 0);
	rewind(fp);
	buf = malloc((size_t)n);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*ret_len = (size_t)n;
	return buf;
}

static bool file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

struct wait_file {
	const char *path;
	const char *journal; /* when set, also wait for it to be gone */
};

/* The document is there and, with journal set, its close has completed
 * (the writer process renames the file a moment before it exits). */
static bool file_appears(void *ud)
{
	struct wait_file *w = ud;

	return file_exists(w->path) && !(w->journal && file_exists(w->journal));
}

/* Runs the loop until the document w names is written, and reads it. */
static struct json_object *wait_doc(struct fx *f, struct wait_file *w)
{
	struct json_object *doc;

	ck_assert(scn_run_until(f->loop, file_appears, w));
	doc = json_object_from_file(w->path);
	ck_assert_ptr_nonnull(doc);
	return doc;
}

static bool none_open(void *ud)
{
	return tl_timelines_open_count(ud) == 0;
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void set_meta(struct tl_timelines *t, const char *ns, const char *name, const char *uid)
{
	struct json_object *m = scn_meta(ns, name, uid);

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(scn_set_meta(t, uid, m), 0);
	json_object_put(m);
}

/* The journal's own CRC is zlib's crc32, value for value: journals
 * written before and after it replay alike. Every length up to a few
 * frames, at every alignment. */
START_TEST(test_journal_crc_is_zlib_crc32)
{
	static uint8_t buf[700];
	uint32_t x = 12345;

	for (size_t i = 0; i < sizeof(buf); i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (uint8_t)(x >> 16);
	}
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len + off <= 650; len++)
			ck_assert_uint_eq(tl_journal_crc(buf + off, len),
					  (uint32_t)crc32(0L, buf + off, (uInt)len));
	ck_assert_uint_eq(tl_journal_crc("123456789", 9), 0xcbf43926u);
}
END_TEST

START_TEST(test_order_and_dedupe)
{
	struct fx f;
	struct json_object *doc, *again;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S, dup0;
	int n;

	fx_init(&f, 30, 0);
	set_meta(f.t, "shop", "web-1", UID_A);
	n = scn_termination(f.t, UID_A, t0, false);
	ck_assert_int_gt(n, 10);
	/* Every event once more (a relist, a re-read log): all duplicates,
	 * each counted. */
	dup0 = tl_metric_get("termline_timeline_duplicate_events_total", NULL);
	ck_assert_int_eq(scn_termination(f.t, UID_A, t0, false), n);
	ck_assert_int_eq(tl_metric_get("termline_timeline_duplicate_events_total", NULL), dup0 + n);
	/* Same time, different content: not a duplicate. */
	{
		struct tl_event ev;

		ck_assert_int_eq(scn_event(&ev, UID_A, "process.exit", t0 + 30100 * 1000000LL), 0);
		ck_assert_int_eq(tl_event_set_i(&ev, TL_F_EXIT_PID, 4712), 0);
		ck_assert_int_eq(tl_timelines_add(f.t, &ev), 0);
		tl_event_clear(&ev);
	}
	/* No pod_uid: ignored, no timeline. */
	{
		struct tl_event ev;

		ck_assert_int_eq(scn_event(&ev, "", "process.exit", t0), 0);
		ck_assert_int_eq(tl_timelines_add(f.t, &ev), 0);
		tl_event_clear(&ev);
	}
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);

	doc = get_doc(f.t, "shop", "web-1", NULL);
	ck_assert_uint_eq(jlen(doc, "events"), (size_t)n + 1);
	for (size_t i = 1; i < jlen(doc, "events"); i++) {
		char k1[64], k2[64];
		int64_t a, b;

		snprintf(k1, sizeof(k1), "events.%zu.time", i - 1);
		snprintf(k2, sizeof(k2), "events.%zu.time", i);
		ck_assert_int_eq(tl_time_parse(jstr(doc, k1), &a), 0);
		ck_assert_int_eq(tl_time_parse(jstr(doc, k2), &b), 0);
		ck_assert_int_le(a, b);
	}
	ck_assert_str_eq(jstr(doc, "events.0.type"), "process.exec");
	ck_assert_str_eq(jstr(doc, "events.1.type"), "socket.listen");
	ck_assert_str_eq(jstr(doc, "events.2.type"), "pod.deletion_requested");
	ck_assert(jbool(doc, "complete"));
	ck_assert_str_eq(jstr(doc, "pod.namespace"), "shop");
	ck_assert_str_eq(jstr(doc, "pod.uid"), UID_A);
	ck_assert_str_eq(jstr(doc, "recorder.node"), "node-1");
	ck_assert_str_eq(jstr(doc, "recorder.probes.0"), "signal_generate:tp_btf");
	/* The meta's container got the cgroup id the kernel side saw. */
	ck_assert_int_eq(jint(doc, "containers.0.cgroupId"), 4242);
	/* Findings are computed when the timeline closes (off the loop, by
	 * termline-findings): an open one has none yet. */
	ck_assert_uint_eq(jlen(doc, "findings"), 0);
	validate_doc(&f, doc, "ordered.json");

	/* Meta arriving again unchanged changes nothing. */
	set_meta(f.t, "shop", "web-1", UID_A);
	again = get_doc(f.t, "shop", "web-1", UID_A);
	ck_assert(json_object_equal(doc, again));
	json_object_put(again);
	json_object_put(doc);
	fx_done(&f);
}
END_TEST

/* The events.aggregated entries of doc: how many, and the events they
 * count (all of them, and the failed ones), each of kind type when given. */
struct folds {
	size_t entries;
	int64_t count, failed;
};

static struct folds sum_folds(struct json_object *doc, const char *type)
{
	struct folds r = { 0 };

	for (size_t i = 0; i < jlen(doc, "events"); i++) {
		char k[64];

		snprintf(k, sizeof(k), "events.%zu.type", i);
		if (strcmp(jstr(doc, k), "events.aggregated") != 0)
			continue;
		r.entries++;
		snprintf(k, sizeof(k), "events.%zu.count", i);
		r.count += jint(doc, k);
		snprintf(k, sizeof(k), "events.%zu.failed", i);
		if (jget(doc, k)) /* requests only */
			r.failed += jint(doc, k);
		if (type) {
			snprintf(k, sizeof(k), "events.%zu.aggregatedType", i);
			ck_assert_str_eq(jstr(doc, k), type);
		}
	}
	return r;
}

START_TEST(test_cap_aggregates_and_counts_loss)
{
	struct fx f;
	struct json_object *doc;
	/* Whole second, so that the requests below fill exactly two buckets. */
	int64_t t0 = (tl_now_real_ns() / SCN_S - 100) * SCN_S;
	struct folds folds;

	fx_init(&f, 30, 10);
	set_meta(f.t, "shop", "web-2", UID_B);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(scn_add(f.t, UID_B, "process.exec", t0 + i), 0);
	/* 50 requests over two seconds, past the cap. */
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(scn_add(f.t, UID_B, "http.request", t0 + SCN_S + i * 40000000LL), 0);
	/* Lifecycle events are still kept individually... */
	ck_assert_int_eq(scn_add(f.t, UID_B, "pod.deletion_requested", t0 + 5 * SCN_S), 0);
	ck_assert_int_eq(scn_add(f.t, UID_B, "process.signal", t0 + 6 * SCN_S), 0);
	doc = get_doc(f.t, "shop", "web-2", NULL);
	ck_assert(!jbool(doc, "complete"));
	ck_assert_int_eq(jint(doc, "loss.eventsAggregated"), 50);
	ck_assert_int_eq(jint(doc, "loss.eventsDropped"), 0);
	folds = sum_folds(doc, "http.request");
	ck_assert_uint_eq(folds.entries, 2); /* one per second */
	ck_assert_int_eq(folds.count, 50);
	ck_assert_int_eq(folds.failed, 50);
	ck_assert_uint_eq(jlen(doc, "events"), 10 + 2 + 2);
	validate_doc(&f, doc, "capped.json");
	json_object_put(doc);

	/* ...termination (from the deletion request, entry 12) has a budget of
	 * its own: 10 more exits are all kept... */
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(scn_add(f.t, UID_B, "process.exit", t0 + 7 * SCN_S + i), 0);
	doc = get_doc(f.t, "shop", "web-2", NULL);
	ck_assert_uint_eq(jlen(doc, "events"), 24);
	ck_assert_int_eq(jint(doc, "loss.eventsDropped"), 0);
	json_object_put(doc);
	/* ...up to the hard limit (2 x cap from the termination's start); past
	 * it they are dropped and counted. */
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(scn_add(f.t, UID_B, "process.exit", t0 + 8 * SCN_S + i), 0);
	doc = get_doc(f.t, "shop", "web-2", NULL);
	ck_assert_uint_eq(jlen(doc, "events"), 12 + 20);
	ck_assert_int_eq(jint(doc, "loss.eventsDropped"), 12);
	validate_doc(&f, doc, "dropped.json");
	json_object_put(doc);
	fx_done(&f);
}
END_TEST

/* A long-lived Pod's probes (an exec and an exit every few seconds) fill the
 * budget long before the Pod terminates: they are folded, and every event of
 * the termination itself is still kept one by one. */
START_TEST(test_termination_kept_after_long_life)
{
	struct fx f;
	struct json_object *doc;
	int64_t t0 = (tl_now_real_ns() / SCN_S - 1000) * SCN_S;
	static const char *const termination[] = {
		"pod.deletion_requested", "process.exec",   "process.signal",
		"socket.listen_closed",   "process.exit",   "container.terminated",
		"endpoint.condition",     "endpoint.removed", "pod.deleted",
	};
	size_t n_term = sizeof(termination) / sizeof(termination[0]);

	fx_init(&f, 30, 10);
	set_meta(f.t, "shop", "web-3", UID_B);
	for (int i = 0; i < 300; i++)
		ck_assert_int_eq(scn_add(f.t, UID_B, i % 2 ? "process.exit" : "process.exec",
					 t0 + (i / 2) * 10 * SCN_S),
				 0);
	for (size_t i = 0; i < n_term; i++)
		ck_assert_int_eq(scn_add(f.t, UID_B, termination[i], t0 + 2000 * SCN_S + (int64_t)i), 0);
	doc = get_doc(f.t, "shop", "web-3", NULL);
	ck_assert_int_eq(jint(doc, "loss.eventsDropped"), 0);
	ck_assert_int_eq(jint(doc, "loss.eventsAggregated"), 290);
	ck_assert(!jbool(doc, "complete"));
	/* The last n_term entries are the termination, in order, unfolded. */
	for (size_t i = 0; i < n_term; i++) {
		char k[64];

		snprintf(k, sizeof(k), "events.%zu.type", jlen(doc, "events") - n_term + i);
		ck_assert_str_eq(jstr(doc, k), termination[i]);
	}
	ck_assert_int_eq(sum_folds(doc, NULL).count, 290);
	validate_doc(&f, doc, "long-life.json");
	json_object_put(doc);
	fx_done(&f);
}
END_TEST

START_TEST(test_kernel_loss_marks_open_timelines)
{
	struct fx f;
	struct json_object *doc;
	int64_t t0 = tl_now_real_ns();

	fx_init(&f, 30, 0);
	ck_assert_int_eq(scn_add(f.t, UID_A, "process.exec", t0), 0);
	tl_timelines_note_kernel_loss(f.t, 7);
	/* Opened after the drop: not charged. */
	ck_assert_int_eq(scn_add(f.t, UID_B, "process.exec", t0), 0);
	doc = get_doc(f.t, "_unknown", UID_A, NULL);
	ck_assert(!jbool(doc, "complete"));
	ck_assert_int_eq(jint(doc, "loss.kernelEventsDropped"), 7);
	validate_doc(&f, doc, "kernel-loss.json");
	json_object_put(doc);
	doc = get_doc(f.t, "_unknown", UID_B, NULL);
	ck_assert(jbool(doc, "complete"));
	json_object_put(doc);
	fx_done(&f);
}
END_TEST

START_TEST(test_linger_close_writes_atomically)
{
	struct fx f;
	char path[PATH_MAX], dir[PATH_MAX], jpath[PATH_MAX];
	struct json_object *doc, *list;
	struct wait_file w = { path, jpath };
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	int64_t closed0 = tl_metric_get("termline_timelines_closed_total", NULL);
	int n;

	fx_init(&f, 1, 0);
	set_meta(f.t, "shop", "web-3", UID_C);
	n = scn_termination(f.t, UID_C, t0, true);
	PATHF(dir, "%s/timelines/shop", f.dir);
	PATHF(path, "%s/web-3_%s.json", dir, UID_C);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_C);
	ck_assert(!file_exists(path));
	ck_assert(file_exists(jpath));
	/* A late reset after pod.deleted still lands during the linger. */
	ck_assert_int_eq(scn_add(f.t, UID_C, "tcp.reset_sent", t0 + 31500 * 1000000LL), 0);
	ck_assert(scn_run_until(f.loop, file_appears, &w));
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 0);
	ck_assert(!file_exists(jpath));
	ck_assert_uint_eq(count_entries(dir), 1); /* no temp file left behind */
	ck_assert_int_eq(tl_metric_get("termline_timelines_closed_total", NULL), closed0 + 1);

	doc = json_object_from_file(path);
	ck_assert_ptr_nonnull(doc);
	ck_assert_uint_eq(jlen(doc, "events"), (size_t)n + 1);
	ck_assert_str_eq(jstr(doc, "events.14.type"), "tcp.reset_sent");
	ck_assert_str_eq(jstr(doc, "pod.name"), "web-3");
	ck_assert(jbool(doc, "complete"));
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);

	/* Events after the close do not reopen it. */
	ck_assert_int_eq(scn_add(f.t, UID_C, "tcp.reset_sent", t0 + 99 * SCN_S), 0);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 0);
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
	ck_assert_uint_eq(jlen(list, "timelines"), 1);
	ck_assert_str_eq(jstr(list, "timelines.0.state"), "closed");
	ck_assert_int_eq(jint(list, "timelines.0.events"), n + 1);
	json_object_put(list);

	/* A new store (agent restart) still knows the closed document. */
	tl_timelines_free(f.t);
	fx_store(&f);
	doc = get_doc(f.t, "shop", "web-3", UID_C);
	ck_assert_uint_eq(jlen(doc, "events"), (size_t)n + 1);
	json_object_put(doc);
	fx_done(&f);
}
END_TEST

/* The sidecar race, by hand: the app closes its listener after the
 * deletion, and the proxy still forwards a request to it, which fails. The
 * closed document carries the shared rules' finding (daemon/findings/),
 * and the list counts what the document holds. */
START_TEST(test_closed_document_has_findings)
{
	struct fx f;
	char path[PATH_MAX], jpath[PATH_MAX];
	struct json_object *doc, *list, *fs;
	struct wait_file w = { path, jpath };
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	const char *const types[] = { "socket.listen", "pod.deletion_requested", "socket.listen_closed",
				      "http.request", "pod.deleted" };
	const int64_t at[] = { -10 * SCN_S, 0, SCN_S, 2 * SCN_S, 5 * SCN_S };
	bool seen = false;
	int64_t n;

	fx_init(&f, 0, 0);
	set_meta(f.t, "shop", "web-race", UID_C);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct tl_event ev;

		ck_assert_int_eq(scn_event(&ev, UID_C, types[i], t0 + at[i]), 0);
		if (strcmp(types[i], "http.request") == 0) {
			/* recorded by the proxy, which forwarded it to the app */
			snprintf(ev.container, sizeof(ev.container), "istio-proxy");
			snprintf(ev.container_id, sizeof(ev.container_id), "fedc9876");
		}
		ck_assert_int_eq(tl_timelines_add(f.t, &ev), 0);
		tl_event_clear(&ev);
	}
	PATHF(path, "%s/timelines/shop/web-race_%s.json", f.dir, UID_C);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_C);
	ck_assert(scn_run_until(f.loop, file_appears, &w));
	ck_assert(scn_run_until(f.loop, none_open, f.t));

	doc = json_object_from_file(path);
	ck_assert_ptr_nonnull(doc);
	ck_assert(json_object_object_get_ex(doc, "findings", &fs));
	ck_assert_uint_gt(json_object_array_length(fs), 0);
	for (size_t i = 0; i < json_object_array_length(fs); i++)
		if (strcmp(jstr(json_object_array_get_idx(fs, i), "rule"), "requests_after_listener_closed") == 0)
			seen = true;
	ck_assert_msg(seen, "no requests_after_listener_closed in %s", json_object_to_json_string(fs));
	ck_assert_int_eq(scn_validate(path), 0);
	n = (int64_t)json_object_array_length(fs);

	ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
	ck_assert_uint_eq(jlen(list, "timelines"), 1);
	ck_assert_str_eq(jstr(list, "timelines.0.state"), "closed");
	ck_assert_int_eq(jint(list, "timelines.0.findings"), n);
	ck_assert_int_eq(jint(list, "timelines.0.events"), (int64_t)jlen(doc, "events"));
	json_object_put(list);
	/* Served from the file, findings included. */
	{
		struct json_object *served = get_doc(f.t, "shop", "web-race", UID_C);

		ck_assert(json_object_equal(served, doc));
		json_object_put(served);
	}
	/* No temp file of the helper or the writer is left. */
	PATHF(path, "%s/timelines/shop", f.dir);
	ck_assert_uint_eq(count_entries(path), 1);
	json_object_put(doc);

	/* A restarted store reads the count back from the document. */
	tl_timelines_free(f.t);
	fx_store(&f);
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
	ck_assert_int_eq(jint(list, "timelines.0.findings"), n);
	json_object_put(list);
	fx_done(&f);
}
END_TEST

/* What a list says of a closed document (owner, deletion, events,
 * findings, failed requests, complete) is kept beside it in
 * STATE/closed.idx: a restart lists it without reading the document again,
 * and reads a document the cache does not describe (changed since, or
 * written by an agent before the cache). */
START_TEST(test_closed_summary_kept_beside_document)
{
	struct fx f;
	char path[PATH_MAX], jpath[PATH_MAX], cache[PATH_MAX];
	struct wait_file w = { path, jpath };
	struct json_object *list, *want;
	struct timespec times[2];
	struct stat st;
	size_t len;
	char *text, *orig;
	FILE *fp;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	fx_init(&f, 0, 0);
	set_meta(f.t, "shop", "web-kept", UID_A);
	ck_assert_int_eq(scn_termination(f.t, UID_A, t0, true), 14);
	PATHF(path, "%s/timelines/shop/web-kept_%s.json", f.dir, UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	PATHF(cache, "%s/closed.idx", f.dir);
	ck_assert(scn_run_until(f.loop, file_appears, &w));
	ck_assert(scn_run_until(f.loop, none_open, f.t));
	ck_assert(file_exists(cache));
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, true, &want), 0);
	ck_assert_int_eq(jint(want, "timelines.0.failedRequests"), 1);
	ck_assert_int_ge(jint(want, "timelines.0.findings"), 1);
	tl_timelines_free(f.t);

	/* The document's bytes replaced by others of the same size and
	 * time: what the list says comes from the cache, not from them. */
	orig = read_all(path, &len);
	text = malloc(len);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(stat(path, &st), 0);
	memset(text, ' ', len);
	fp = fopen(path, "we");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(text, 1, len, fp), len);
	ck_assert_int_eq(fclose(fp), 0);
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	ck_assert_int_eq(utimensat(AT_FDCWD, path, times, 0), 0);
	fx_store(&f);
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, true, &list), 0);
	ck_assert_msg(json_object_equal(list, want), "%s", json_object_to_json_string(list));
	json_object_put(list);
	tl_timelines_free(f.t);

	/* Its time changed: read again (a blank file is no document). */
	times[1].tv_sec -= 10;
	ck_assert_int_eq(utimensat(AT_FDCWD, path, times, 0), 0);
	fx_store(&f);
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, true, &list), 0);
	ck_assert_uint_eq(jlen(list, "timelines"), 0); /* no uid: not listed */
	json_object_put(list);
	tl_timelines_free(f.t);

	/* The document back and the cache gone (an agent before it): the
	 * documents are read, and the cache written again. */
	fp = fopen(path, "we");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(orig, 1, len, fp), len);
	ck_assert_int_eq(fclose(fp), 0);
	ck_assert_int_eq(unlink(cache), 0);
	fx_store(&f);
	ck_assert(file_exists(cache));
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, true, &list), 0);
	ck_assert_msg(json_object_equal(list, want), "%s", json_object_to_json_string(list));
	json_object_put(list);
	free(text);
	free(orig);
	json_object_put(want);
	fx_done(&f);
}
END_TEST

/* Without the helper the document is still written, valid, with no
 * findings. */
START_TEST(test_closed_without_helper)
{
	struct fx f;
	char path[PATH_MAX], jpath[PATH_MAX];
	struct json_object *doc, *list;
	struct wait_file w = { path, jpath };
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	fx_prepare(&f, 0, 0);
	f.cfg.findings_helper = "/nonexistent/termline-findings";
	fx_store(&f);
	set_meta(f.t, "shop", "web-nohelper", UID_C);
	ck_assert_int_gt(scn_termination(f.t, UID_C, t0, true), 0);
	PATHF(path, "%s/timelines/shop/web-nohelper_%s.json", f.dir, UID_C);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_C);
	ck_assert(scn_run_until(f.loop, file_appears, &w));
	ck_assert(scn_run_until(f.loop, none_open, f.t));
	doc = json_object_from_file(path);
	ck_assert_ptr_nonnull(doc);
	ck_assert_uint_eq(jlen(doc, "findings"), 0);
	ck_assert_int_eq(scn_validate(path), 0);
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
	ck_assert_int_eq(jint(list, "timelines.0.findings"), 0);
	json_object_put(list);
	json_object_put(doc);
	fx_done(&f);
}
END_TEST

START_TEST(test_unknown_pod_file_name)
{
	struct fx f;
	char path[PATH_MAX];
	struct json_object *doc;
	struct wait_file w = { path, NULL };

	fx_init(&f, 0, 0);
	ck_assert_int_eq(scn_termination(f.t, UID_A, tl_now_real_ns(), true), 14);
	PATHF(path, "%s/timelines/_unknown/%s.json", f.dir, UID_A);
	doc = wait_doc(&f, &w);
	ck_assert(json_object_is_type(jget(doc, "pod.namespace"), json_type_null));
	ck_assert(json_object_is_type(jget(doc, "pod.name"), json_type_null));
	/* Containers known only from the kernel side. */
	ck_assert_uint_eq(jlen(doc, "containers"), 1);
	ck_assert_str_eq(jstr(doc, "containers.0.containerID"), "0123abcd");
	ck_assert_int_eq(jint(doc, "containers.0.cgroupId"), 4242);
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	/* Malformed UIDs cannot name files. */
	{
		struct tl_event ev;

		ck_assert_int_eq(scn_event(&ev, "../../etc", "process.exit", 1), 0);
		ck_assert_int_eq(tl_timelines_add(f.t, &ev), -EINVAL);
		tl_event_clear(&ev);
	}
	fx_done(&f);
}
END_TEST

/* The agent is killed (SIGKILL) in the middle of a termination; a new agent
 * replays the journal and closes the timeline with everything in it. */
static void child_records_then_dies(struct fx *f, int64_t t0, bool deleted)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct tl_loop *loop;
		struct tl_timelines *t;
		struct json_object *m = scn_meta("shop", "web-4", UID_A);

		if (tl_loop_new(&loop) < 0 || tl_timelines_new(&f->cfg, loop, &t) < 0 ||
		    scn_set_meta(t, UID_A, m) < 0 ||
		    scn_termination(t, UID_A, t0, deleted) < 0)
			_exit(3);
		tl_timelines_note_kernel_loss(t, 5);
		/* Journal frames are written at the end of the loop iteration
		 * that recorded them (docs/journal-format.md): let it end. */
		for (int i = 0; i < 3; i++)
			tl_loop_run_once(loop, 5);
		raise(SIGKILL);
		_exit(4);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* A store that recorded and was SIGKILLed (see child_records_then_dies),
 * with tail appended to its journal as damage; f is left without a store. */
static void journal_after_kill(struct fx *f, int64_t t0, const char *tail, size_t tail_len)
{
	char jpath[PATH_MAX];
	int fd;

	fx_init(f, 1, 0);
	tl_timelines_free(f->t);
	f->t = NULL;
	child_records_then_dies(f, t0, false);
	PATHF(jpath, "%s/journal/%s.tlj", f->dir, UID_A);
	fd = open(jpath, O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, tail, tail_len), (ssize_t)tail_len);
	close(fd);
}

START_TEST(test_journal_replay_after_kill)
{
	struct fx f;
	char path[PATH_MAX];
	struct json_object *doc;
	struct wait_file w = { path, NULL };
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	/* A write torn by the kill (a frame header promising 80 bytes, 3
	 * there) must not break the replay. */
	journal_after_kill(&f, t0, "\x50\0\0\0\x11\x22\x33\x44" "E\x01\x02", 11);

	fx_store(&f);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	ck_assert_int_eq(scn_add(f.t, UID_A, "pod.deleted", t0 + 31 * SCN_S), 0);
	PATHF(path, "%s/timelines/shop/web-4_%s.json", f.dir, UID_A);
	doc = wait_doc(&f, &w);
	ck_assert_uint_eq(jlen(doc, "events"), 14);
	ck_assert_str_eq(jstr(doc, "pod.name"), "web-4");
	ck_assert_int_eq(jint(doc, "loss.kernelEventsDropped"), 5);
	ck_assert_int_eq(jint(doc, "loss.agentRestarts"), 1);
	ck_assert_uint_eq(jlen(doc, "recorder.gaps"), 1);
	ck_assert(!jbool(doc, "complete"));
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	fx_done(&f);
}
END_TEST

/* A Pod-metadata frame as agents before the typed metadata wrote it (the
 * API model's JSON: its key order, "" for unknown strings, preStop, the
 * cgroup main added) still replays, and the document says what it said. */
START_TEST(test_journal_previous_meta_record)
{
	static const char old_meta[] =
		"M{\"pod\":{\"namespace\":\"shop\",\"name\":\"web-old\",\"uid\":\"" UID_A "\","
		"\"node\":\"node-1\",\"ip\":\"\",\"owner\":{\"kind\":\"StatefulSet\",\"name\":\"db\"},"
		"\"terminationGracePeriodSeconds\":60,\"istio\":{\"annotations\":"
		"{\"sidecar.istio.io/inject\":\"true\"}}},"
		"\"containers\":[{\"name\":\"app\",\"containerID\":\"containerd://0123abcd\","
		"\"role\":\"main\",\"cgroupId\":4242,\"preStop\":\"exec\"},"
		"{\"name\":\"late\",\"containerID\":\"\",\"role\":\"init\",\"cgroupId\":0,"
		"\"preStop\":null}]}";
	struct tl_buf frame;
	struct fx f;
	char path[PATH_MAX];
	struct json_object *doc;
	struct wait_file w = { path, NULL };
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	tl_buf_init(&frame, 0);
	tl_journal_frame(&frame, old_meta, sizeof(old_meta) - 1);
	ck_assert_int_eq(frame.err, 0);
	journal_after_kill(&f, t0, frame.p, frame.len);
	tl_buf_free(&frame);

	fx_store(&f);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	ck_assert_int_eq(scn_add(f.t, UID_A, "pod.deleted", t0 + 31 * SCN_S), 0);
	/* the latest metadata wins: the old record's name */
	PATHF(path, "%s/timelines/shop/web-old_%s.json", f.dir, UID_A);
	doc = wait_doc(&f, &w);
	ck_assert_str_eq(jstr(doc, "pod.name"), "web-old");
	ck_assert_str_eq(jstr(doc, "pod.uid"), UID_A);
	ck_assert_str_eq(jstr(doc, "pod.owner.kind"), "StatefulSet");
	ck_assert_int_eq(jint(doc, "pod.terminationGracePeriodSeconds"), 60);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(
				 json_object_object_get(jget(doc, "pod.istio"), "annotations"),
				 "sidecar.istio.io/inject")), "true");
	ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(json_object_object_get(doc, "pod"), "ip"),
							JSON_C_TO_STRING_PLAIN), "null");
	ck_assert_str_eq(jstr(doc, "containers.0.name"), "app");
	ck_assert_str_eq(jstr(doc, "containers.0.containerID"), "containerd://0123abcd");
	ck_assert_int_eq(jint(doc, "containers.0.cgroupId"), 4242);
	ck_assert_ptr_null(json_object_object_get(json_object_array_get_idx(json_object_object_get(doc, "containers"), 0),
						  "preStop"));
	ck_assert_str_eq(jstr(doc, "containers.1.role"), "init");
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 0);
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	fx_done(&f);
}
END_TEST

/* Journal frames that cannot be read back (a bad CRC, a frame whose event
 * does not decode, or a write torn by the kill) are events lost: the
 * document counts each once in diskErrors, however often the agent
 * restarts and meets the damaged frames again. */
START_TEST(test_journal_unreadable_records_counted)
{
	static const uint8_t bad_kind[] = { 'E', 0x02, 0x63 /* kind 99 */, 0x01, 0x00, 0x00, 0x00 };
	struct tl_buf damage;
	struct fx f;
	char path[PATH_MAX];
	struct json_object *doc;
	struct wait_file w = { path, NULL };
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	tl_buf_init(&damage, 0);
	/* a frame whose CRC does not match */
	tl_journal_frame(&damage, "E\x02\x07", 3);
	damage.p[damage.len - 1] ^= 0x40;
	/* a frame whose CRC matches but whose event is no kind */
	tl_journal_frame(&damage, bad_kind, sizeof(bad_kind));
	/* a torn frame */
	tl_buf_add(&damage, "\x50\0\0\0\x11\x22", 6);
	ck_assert_int_eq(damage.err, 0);
	journal_after_kill(&f, t0, damage.p, damage.len);
	tl_buf_free(&damage);

	fx_store(&f);
	tl_timelines_free(f.t);
	f.t = NULL;
	fx_store(&f);
	ck_assert_int_eq(scn_add(f.t, UID_A, "pod.deleted", t0 + 31 * SCN_S), 0);
	PATHF(path, "%s/timelines/shop/web-4_%s.json", f.dir, UID_A);
	doc = wait_doc(&f, &w);
	ck_assert_uint_eq(jlen(doc, "events"), 14);
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 3);
	ck_assert_int_eq(jint(doc, "loss.agentRestarts"), 2);
	ck_assert(!jbool(doc, "complete"));
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	fx_done(&f);
}
END_TEST

START_TEST(test_journal_replay_closes_lingering)
{
	struct fx f;
	char path[PATH_MAX];
	struct json_object *doc;
	struct wait_file w = { path, NULL };

	fx_init(&f, 1, 0);
	tl_timelines_free(f.t);
	f.t = NULL;
	/* pod.deleted already journaled: the new agent finishes the linger alone. */
	child_records_then_dies(&f, tl_now_real_ns() - 100 * SCN_S, true);
	fx_store(&f);
	PATHF(path, "%s/timelines/shop/web-4_%s.json", f.dir, UID_A);
	doc = wait_doc(&f, &w);
	ck_assert_uint_eq(jlen(doc, "events"), 14);
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	fx_done(&f);
}
END_TEST

/* pod.deletion_requested with deletionTimestamp, or container.terminated
 * with finishedAt = at (the API's own time of the fact). */
static int add_api_fact(struct tl_timelines *t, const char *type, int64_t time, const char *at)
{
	bool deletion = strcmp(type, "pod.deletion_requested") == 0;
	struct tl_event ev;
	int r = scn_event(&ev, UID_A, type, time);

	if (r < 0)
		return r;
	r = tl_event_set_text(&ev, deletion ? TL_F_DELREQ_DELETION_TS : TL_F_TERM_FINISHED, at);
	r = r ?: tl_timelines_add(t, &ev);
	tl_event_clear(&ev);
	return r;
}

/* A restarted agent's first LIST restates the deletion and the terminated
 * containers of a Pod that was terminating before the restart: the
 * document keeps each fact once; a new run's termination is still kept. */
START_TEST(test_restart_restated_api_facts)
{
	static const char *const del = "pod.deletion_requested";
	static const char *const term = "container.terminated";
	static const char *const t30 = "2026-01-01T00:00:30Z", *const t05 = "2026-01-01T00:00:05Z";
	struct fx f;
	struct json_object *doc;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	fx_init(&f, 30, 0);
	set_meta(f.t, "shop", "web-r", UID_A);
	ck_assert_int_eq(add_api_fact(f.t, del, t0, t30), 0);
	ck_assert_int_eq(add_api_fact(f.t, term, t0 + SCN_S, t05), 0);
	tl_timelines_free(f.t);
	fx_store(&f);
	ck_assert_int_eq(add_api_fact(f.t, del, t0 + 50 * SCN_S, t30), 0);
	ck_assert_int_eq(add_api_fact(f.t, term, t0 + 50 * SCN_S, t05), 0);
	ck_assert_int_eq(add_api_fact(f.t, term, t0 + 51 * SCN_S, "2026-01-01T00:00:40Z"), 0);
	doc = get_doc(f.t, "shop", "web-r", UID_A);
	ck_assert_uint_eq(jlen(doc, "events"), 3);
	ck_assert_str_eq(jstr(doc, "events.0.type"), del);
	ck_assert_str_eq(jstr(doc, "events.1.finishedAt"), t05);
	ck_assert_str_eq(jstr(doc, "events.2.finishedAt"), "2026-01-01T00:00:40Z");
	ck_assert_int_eq(jint(doc, "loss.agentRestarts"), 1);
	json_object_put(doc);
	fx_done(&f);
}
END_TEST

/* The journal's mtime can be behind the last event it holds (coarse
 * clock; kernel events stamped ahead of the write): the gap of a restart
 * starts no earlier than the last recorded event. */
START_TEST(test_restart_gap_after_last_event)
{
	struct fx f;
	struct json_object *doc;
	int64_t last = tl_now_real_ns() + 5 * SCN_S, from;

	fx_init(&f, 30, 0);
	set_meta(f.t, "shop", "web-g", UID_A);
	ck_assert_int_eq(scn_add(f.t, UID_A, "process.exec", last - SCN_S), 0);
	ck_assert_int_eq(scn_add(f.t, UID_A, "process.exit", last), 0);
	tl_timelines_free(f.t);
	fx_store(&f);
	doc = get_doc(f.t, "shop", "web-g", UID_A);
	ck_assert_uint_eq(jlen(doc, "recorder.gaps"), 1);
	ck_assert_int_eq(tl_time_parse(jstr(doc, "recorder.gaps.0.from"), &from), 0);
	ck_assert_int_ge(from, last);
	json_object_put(doc);
	fx_done(&f);
}
END_TEST

static bool only_b_exists(void *ud _unused_, const char *uid)
{
	return strcmp(uid, UID_B) == 0;
}

/* Pods deleted while the agent was down: closed once the LIST says so. */
START_TEST(test_close_missing_after_restart)
{
	struct fx f;
	char path[PATH_MAX], jpath[PATH_MAX];
	struct wait_file w = { path, jpath };
	struct json_object *doc;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	fx_init(&f, 1, 0);
	set_meta(f.t, "shop", "web-a", UID_A);
	ck_assert_int_eq(scn_termination(f.t, UID_A, t0, false), 13);
	ck_assert_int_eq(scn_add(f.t, UID_B, "process.exec", t0), 0);
	tl_timelines_free(f.t);
	fx_store(&f);
	ck_assert_int_eq(tl_timelines_close_missing(f.t, only_b_exists, NULL, 0, TL_CLOSE_UNKNOWN_TO_API), 1);
	PATHF(path, "%s/timelines/shop/web-a_%s.json", f.dir, UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	ck_assert(scn_run_until(f.loop, file_appears, &w));
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	doc = json_object_from_file(path);
	ck_assert_ptr_nonnull(doc);
	ck_assert_uint_eq(jlen(doc, "events"), 13);
	ck_assert(!jbool(doc, "complete"));
	ck_assert_int_eq(jint(doc, "loss.agentRestarts"), 1);
	ck_assert_str_eq(jstr(doc, "closeReason"), "unknownToApi");
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	fx_done(&f);
}
END_TEST

static void close_one(struct fx *f, const char *name, const char *uid)
{
	set_meta(f->t, "shop", name, uid);
	ck_assert_int_gt(scn_termination(f->t, uid, tl_now_real_ns() - 100 * SCN_S, true), 0);
	ck_assert(scn_run_until(f->loop, none_open, f->t));
}

START_TEST(test_retention_by_bytes)
{
	struct fx f;
	char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX];
	struct stat st;

	fx_init(&f, 0, 0);
	close_one(&f, "web-a", UID_A);
	PATHF(a, "%s/timelines/shop/web-a_%s.json", f.dir, UID_A);
	ck_assert_int_eq(stat(a, &st), 0);
	tl_timelines_free(f.t);
	/* Room for about two documents. */
	f.cfg.retention_bytes = (uint64_t)st.st_size * 2 + (uint64_t)st.st_size / 2;
	fx_store(&f);
	ck_assert(file_exists(a));
	close_one(&f, "web-b", UID_B);
	PATHF(b, "%s/timelines/shop/web-b_%s.json", f.dir, UID_B);
	ck_assert(file_exists(a) && file_exists(b));
	close_one(&f, "web-c", UID_C);
	PATHF(c, "%s/timelines/shop/web-c_%s.json", f.dir, UID_C);
	ck_assert(!file_exists(a)); /* the oldest went */
	ck_assert(file_exists(b) && file_exists(c));
	ck_assert_int_le(tl_metric_get("termline_disk_bytes", NULL), (int64_t)f.cfg.retention_bytes);
	fx_done(&f);
}
END_TEST

START_TEST(test_retention_by_age)
{
	struct fx f;
	char a[PATH_MAX], b[PATH_MAX];
	struct timespec old[2];

	fx_init(&f, 0, 0);
	close_one(&f, "web-a", UID_A);
	close_one(&f, "web-b", UID_B);
	PATHF(a, "%s/timelines/shop/web-a_%s.json", f.dir, UID_A);
	PATHF(b, "%s/timelines/shop/web-b_%s.json", f.dir, UID_B);
	tl_timelines_free(f.t);
	old[0].tv_sec = old[1].tv_sec = time(NULL) - 3 * 3600;
	old[0].tv_nsec = old[1].tv_nsec = 0;
	ck_assert_int_eq(utimensat(AT_FDCWD, a, old, 0), 0);
	f.cfg.retention_hours = 2;
	fx_store(&f);
	ck_assert(!file_exists(a));
	ck_assert(file_exists(b));
	fx_done(&f);
}
END_TEST

static bool disk_error_seen(void *ud)
{
	return tl_metric_get("termline_disk_errors_total", NULL) > *(int64_t *)ud;
}

/* The namespace directory cannot be created (a file is in the way): the
 * close fails, is counted, the agent keeps recording, and once the way is
 * clear the document is written and says what happened. */
START_TEST(test_unwritable_directory)
{
	struct fx f;
	char path[PATH_MAX], blocker[PATH_MAX];
	struct wait_file w = { path, NULL };
	struct json_object *doc;
	int64_t errs0 = tl_metric_get("termline_disk_errors_total", NULL);
	int fd;

	fx_init(&f, 1, 0);
	PATHF(blocker, "%s/timelines/shop", f.dir);
	fd = open(blocker, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	set_meta(f.t, "shop", "web-a", UID_A);
	ck_assert_int_eq(scn_termination(f.t, UID_A, tl_now_real_ns() - 100 * SCN_S, true), 14);
	ck_assert(scn_run_until(f.loop, disk_error_seen, &errs0));
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	/* Still recording and serving. */
	ck_assert_int_eq(scn_add(f.t, UID_B, "process.exec", tl_now_real_ns()), 0);
	/* A write that is retried is no loss: nothing is missing. */
	doc = get_doc(f.t, "shop", "web-a", NULL);
	ck_assert(jbool(doc, "complete"));
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 0);
	json_object_put(doc);

	ck_assert_int_eq(unlink(blocker), 0);
	PATHF(path, "%s/timelines/shop/web-a_%s.json", f.dir, UID_A);
	doc = wait_doc(&f, &w);
	ck_assert(jbool(doc, "complete"));
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 0);
	ck_assert_uint_eq(jlen(doc, "events"), 14);
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	fx_done(&f);
}
END_TEST

static void fill_fs(const char *path)
{
	char buf[4096];
	int fd = open(path, O_CREAT | O_WRONLY | O_APPEND, 0644);

	ck_assert_int_ge(fd, 0);
	memset(buf, 'x', sizeof(buf));
	while (write(fd, buf, sizeof(buf)) > 0)
		;
	/* what a page cannot hold, a byte may */
	while (write(fd, buf, 1) > 0)
		;
	close(fd);
}

static unsigned file_mode(const char *path)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return st.st_mode & 0777;
}

struct mode_wait {
	const char *path;
	unsigned mode;
};

static bool mode_is(void *ud)
{
	struct mode_wait *m = ud;
	struct stat st;

	return stat(m->path, &st) == 0 && (st.st_mode & 0777) == m->mode;
}

static bool only_a_exists(void *ud _unused_, const char *uid)
{
	return strcmp(uid, UID_A) == 0;
}

/* A really full filesystem (tmpfs of a few pages, in a private mount
 * namespace): journal appends and the close fail with ENOSPC; nothing
 * crashes and the errors are counted. Once space returns:
 * - a timeline whose writes were retried and succeeded lost nothing: its
 *   document is complete, loss.diskErrors 0;
 * - a journal left behind by failed appends is rewritten from memory
 *   (its mark goes): a restart then replays every event;
 * - a journal still behind when the agent stops (the disk full to the
 *   end) lost events for real: the document after the restart says so
 *   (loss.diskErrors, complete false).
 * Needs root; outside CI a non-root run only checks nothing. */
START_TEST(test_disk_full_tmpfs)
{
	struct fx f;
	char state[PATH_MAX], fill[PATH_MAX], path[PATH_MAX], jc[PATH_MAX], jb[PATH_MAX];
	struct wait_file w = { path, NULL };
	struct mode_wait mw;
	struct json_object *doc;
	int64_t errs0, t0 = tl_now_real_ns() - 200 * SCN_S;

	if (geteuid() != 0) {
		const char *ci = getenv("CI");

		ck_assert_msg(!(ci && strcmp(ci, "true") == 0), "needs root under CI=true");
		return;
	}
	ck_assert_int_eq(unshare(CLONE_NEWNS), 0);
	ck_assert_int_eq(mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL), 0);
	memset(&f, 0, sizeof(f));
	f.dir = scn_tmpdir();
	ck_assert_ptr_nonnull(f.dir);
	ck_assert_int_eq(mount("tmpfs", f.dir, "tmpfs", 0, "size=128k"), 0);
	PATHF(state, "%s/state", f.dir);
	ck_assert_int_eq(tl_loop_new(&f.loop), 0);
	f.cfg = (struct tl_timelines_config){ .state_dir = state, .linger_s = 1, .fsync_ms = 50,
					      .findings_helper = "",
					      .recorder = { .node = "node-1", .probes = probes } };
	fx_store(&f);
	set_meta(f.t, "shop", "web-a", UID_A);
	set_meta(f.t, "shop", "web-c", UID_C);
	ck_assert_int_eq(scn_add(f.t, UID_A, "process.exec", t0), 0);
	ck_assert_int_eq(scn_add(f.t, UID_C, "process.exec", t0), 0);
	ck_assert_int_eq(tl_timelines_flush(f.t), 0);
	PATHF(jc, "%s/journal/%s.tlj", state, UID_C);
	ck_assert_uint_eq(file_mode(jc), 0600);
	PATHF(fill, "%s/filler", f.dir);
	fill_fs(fill);
	errs0 = tl_metric_get("termline_disk_errors_total", NULL);
	/* C's journal cannot take its new events (a frame per event, synced
	 * every 50 ms); A's close cannot write its document. */
	for (int i = 1; i <= 300; i++)
		ck_assert_int_eq(scn_add(f.t, UID_C, "process.exec", t0 + i * SCN_S / 100), 0);
	ck_assert_int_eq(scn_termination(f.t, UID_A, t0 + 100 * SCN_S, true), 14);
	ck_assert(scn_run_until(f.loop, disk_error_seen, &errs0));
	mw = (struct mode_wait){ jc, TL_JOURNAL_MODE_BEHIND };
	ck_assert(scn_run_until(f.loop, mode_is, &mw)); /* C's journal is marked behind */
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 2);
	ck_assert_int_eq(unlink(fill), 0);

	/* retried until written: nothing lost */
	PATHF(path, "%s/timelines/shop/web-a_%s.json", state, UID_A);
	doc = wait_doc(&f, &w);
	ck_assert(jbool(doc, "complete"));
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 0);
	ck_assert_uint_eq(jlen(doc, "events"), 15);
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	/* C's journal rewritten from memory: unmarked, and a restart finds
	 * every event (lost: none; the restart itself is counted) */
	mw = (struct mode_wait){ jc, 0600 };
	ck_assert(scn_run_until(f.loop, mode_is, &mw));
	tl_timelines_free(f.t);
	fx_store(&f);
	doc = get_doc(f.t, "shop", "web-c", UID_C);
	ck_assert_uint_eq(jlen(doc, "events"), 301);
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 0);
	ck_assert_int_eq(jint(doc, "loss.agentRestarts"), 1);
	json_object_put(doc);

	/* B's events never reach its journal, and the agent stops with the
	 * disk still full: they are lost, and B's document says so. */
	set_meta(f.t, "shop", "web-b", UID_B);
	ck_assert_int_eq(tl_timelines_flush(f.t), 0);
	PATHF(jb, "%s/journal/%s.tlj", state, UID_B);
	fill_fs(fill);
	errs0 = tl_metric_get("termline_disk_errors_total", NULL);
	for (int i = 0; i < 300; i++)
		ck_assert_int_eq(scn_add(f.t, UID_B, "process.exec", t0 + i * SCN_S / 100), 0);
	ck_assert(scn_run_until(f.loop, disk_error_seen, &errs0));
	mw = (struct mode_wait){ jb, TL_JOURNAL_MODE_BEHIND };
	ck_assert(scn_run_until(f.loop, mode_is, &mw));
	doc = get_doc(f.t, "shop", "web-b", UID_B);
	ck_assert_uint_eq(jlen(doc, "events"), 300); /* in memory, all of them */
	ck_assert(jbool(doc, "complete"));
	json_object_put(doc);
	tl_timelines_free(f.t);
	ck_assert_int_eq(unlink(fill), 0);
	fx_store(&f);
	ck_assert_uint_eq(file_mode(jb), 0600); /* counted once: the mark is gone */
	ck_assert_int_eq(tl_timelines_close_missing(f.t, only_a_exists, NULL, 0, TL_CLOSE_UNKNOWN_TO_API), 2);
	PATHF(path, "%s/timelines/shop/web-b_%s.json", state, UID_B);
	doc = wait_doc(&f, &w);
	ck_assert(!jbool(doc, "complete"));
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 1);
	ck_assert_uint_lt(jlen(doc, "events"), 300);
	ck_assert_str_eq(jstr(doc, "closeReason"), "unknownToApi");
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	tl_timelines_free(f.t);
	tl_loop_free(f.loop);
	umount2(f.dir, MNT_DETACH);
	rmdir(f.dir);
	free(f.dir);
}
END_TEST

/* ---- closing through the document writer ---- */

/* Holds a document writer until the test opens the gate: the writer says
 * it started (a file) and writes nothing while another file is missing. */
struct gate {
	char started[PATH_MAX], open[PATH_MAX];
	pid_t owner;
};

static bool gate_hook(void *ud) /* asked before each chunk of a document */
{
	struct gate *g = ud;
	int fd = open(g->started, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	if (fd >= 0)
		close(fd);
	return access(g->open, F_OK) == 0;
}

static void fx_init_gated(struct fx *f, struct gate *g, uint32_t max_events, uint32_t wait_ms)
{
	fx_prepare(f, 0, max_events);
	PATHF(g->started, "%s/writer-started", f->dir);
	PATHF(g->open, "%s/writer-go", f->dir);
	g->owner = getpid();
	f->cfg.writer_hook = gate_hook;
	f->cfg.writer_hook_ud = g;
	f->cfg.close_wait_ms = wait_ms;
	fx_store(f);
}

static void touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

static bool writer_started(void *ud)
{
	return file_exists(((struct gate *)ud)->started);
}

struct ticker {
	uint64_t ticks, until;
};

static void tick_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *ud)
{
	((struct ticker *)ud)->ticks++;
}

static bool ticked(void *ud)
{
	struct ticker *k = ud;

	return k->ticks >= k->until;
}

/* The commit (fdatasync, rename, directory fsync) runs on the store's
 * worker thread: when it fails (a directory with a file in it where the
 * document goes: the rename fails), the failure comes back to the loop,
 * is counted, the timeline stays open and journaled, and the close is
 * retried; once the way is clear the document appears and the journal
 * goes. */
START_TEST(test_commit_off_loop_failure_reported)
{
	struct fx f;
	char path[PATH_MAX], jpath[PATH_MAX], inside[PATH_MAX + 8];
	struct wait_file w = { path, jpath };
	struct json_object *doc;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	int64_t errs0 = tl_metric_get("termline_disk_errors_total", NULL);

	fx_prepare(&f, 0, 0);
	f.cfg.findings_helper = "";
	fx_store(&f);
	PATHF(path, "%s/timelines/shop", f.dir);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	PATHF(path, "%s/timelines/shop/web-commit_%s.json", f.dir, UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	PATHF(inside, "%s/x", path);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	touch(inside);
	set_meta(f.t, "shop", "web-commit", UID_A);
	ck_assert_int_eq(scn_termination(f.t, UID_A, t0, true), 14);
	ck_assert(scn_run_until(f.loop, disk_error_seen, &errs0));
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	ck_assert(file_exists(jpath));
	doc = get_doc(f.t, "shop", "web-commit", NULL);
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 0);
	ck_assert(jbool(doc, "complete"));
	json_object_put(doc);
	/* no temp file left behind by the failed commit */
	PATHF(inside, "%s/timelines/shop", f.dir);
	ck_assert_uint_eq(count_entries(inside), 1);

	PATHF(inside, "%s/x", path);
	ck_assert_int_eq(unlink(inside), 0);
	ck_assert_int_eq(rmdir(path), 0);
	doc = wait_doc(&f, &w);
	ck_assert_uint_eq(jlen(doc, "events"), 14);
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 0);
	ck_assert(jbool(doc, "complete"));
	json_object_put(doc);
	ck_assert(scn_run_until(f.loop, none_open, f.t));
	ck_assert(!file_exists(jpath));
	ck_assert_int_eq(scn_validate(path), 0);
	fx_done(&f);
}
END_TEST

/* A 50 000-event document is written while the loop goes on: a 10 ms timer
 * on the same loop keeps firing while the writer runs (it is held until the
 * test saw the ticks, so this does not depend on how fast the machine is).
 * Meanwhile the timeline is listed once, as open, and served from memory
 * byte for byte as the file that is then written. */
START_TEST(test_close_does_not_block_loop)
{
	enum { N = 50000 };
	struct fx f;
	struct gate g;
	struct ticker k = { 0, 0 };
	struct tl_timer *tick;
	char path[PATH_MAX], jpath[PATH_MAX];
	struct wait_file w = { path, jpath };
	struct json_object *list;
	char *served = NULL, *file;
	size_t served_len = 0, file_len;
	int64_t t0 = tl_now_real_ns() - 3600 * SCN_S;
	int64_t closed0 = tl_metric_get("termline_timelines_closed_total", NULL);

	fx_init_gated(&f, &g, N + 1000, 0);
	set_meta(f.t, "shop", "big", UID_A);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(scn_add(f.t, UID_A, i % 2 ? "http.request" : "process.exec",
					 t0 + (int64_t)i * 1000000), 0);
	ck_assert_int_eq(tl_loop_add_timer(f.loop, 10, 10, tick_cb, &k, &tick), 0);
	ck_assert_int_eq(scn_add(f.t, UID_A, "pod.deleted", t0 + (int64_t)N * 1000000), 0);
	PATHF(path, "%s/timelines/shop/big_%s.json", f.dir, UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);

	ck_assert(scn_run_until(f.loop, writer_started, &g));
	k.until = k.ticks + 5;
	ck_assert(scn_run_until(f.loop, ticked, &k));
	/* The writer is still held: the ticks happened during the close. */
	ck_assert(!file_exists(path));
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
	ck_assert_uint_eq(jlen(list, "timelines"), 1);
	ck_assert_str_eq(jstr(list, "timelines.0.state"), "open");
	ck_assert_int_eq(jint(list, "timelines.0.events"), N + 1);
	json_object_put(list);
	ck_assert_int_eq(tl_timelines_get(f.t, "shop", "big", NULL, &served, &served_len), 0);

	touch(g.open);
	ck_assert(scn_run_until(f.loop, file_appears, &w));
	ck_assert_uint_gt(k.ticks, k.until - 1);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 0);
	ck_assert_int_eq(tl_metric_get("termline_timelines_closed_total", NULL), closed0 + 1);
	file = read_all(path, &file_len);
	ck_assert_uint_eq(file_len, served_len);
	ck_assert(memcmp(file, served, file_len) == 0);
	free(file);
	free(served);
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
	ck_assert_uint_eq(jlen(list, "timelines"), 1);
	ck_assert_str_eq(jstr(list, "timelines.0.state"), "closed");
	ck_assert_int_eq(jint(list, "timelines.0.events"), N + 1);
	json_object_put(list);
	tl_timer_free(tick);
	fx_done(&f);
}
END_TEST

/* Events and metadata that arrive while the document is being written are
 * not in it: once it is on disk they are counted as late, like events
 * after a close. */
START_TEST(test_events_while_closing_counted_late)
{
	struct fx f;
	struct gate g;
	char path[PATH_MAX], jpath[PATH_MAX];
	struct wait_file w = { path, jpath };
	struct json_object *doc;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	int64_t late0 = tl_metric_get("termline_timeline_late_events_total", NULL);

	fx_init_gated(&f, &g, 0, 0);
	set_meta(f.t, "shop", "web-a", UID_A);
	ck_assert_int_eq(scn_termination(f.t, UID_A, t0, true), 14);
	PATHF(path, "%s/timelines/shop/web-a_%s.json", f.dir, UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	ck_assert(scn_run_until(f.loop, writer_started, &g));
	ck_assert_int_eq(scn_add(f.t, UID_A, "tcp.reset_sent", t0 + 40 * SCN_S), 0);
	ck_assert_int_eq(scn_add(f.t, UID_A, "tcp.reset_received", t0 + 41 * SCN_S), 0);
	set_meta(f.t, "shop", "renamed", UID_A);
	tl_timelines_note_kernel_loss(f.t, 7);
	doc = get_doc(f.t, "shop", "web-a", NULL); /* the document being written */
	ck_assert_uint_eq(jlen(doc, "events"), 14);
	ck_assert(jbool(doc, "complete"));
	json_object_put(doc);

	touch(g.open);
	doc = wait_doc(&f, &w);
	ck_assert_uint_eq(jlen(doc, "events"), 14);
	ck_assert_str_eq(jstr(doc, "pod.name"), "web-a");
	ck_assert(jbool(doc, "complete"));
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	ck_assert_int_eq(tl_metric_get("termline_timeline_late_events_total", NULL), late0 + 3);
	/* and after the close, as before */
	ck_assert_int_eq(scn_add(f.t, UID_A, "tcp.reset_sent", t0 + 50 * SCN_S), 0);
	ck_assert_int_eq(tl_metric_get("termline_timeline_late_events_total", NULL), late0 + 4);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 0);
	fx_done(&f);
}
END_TEST

/* The writer process cannot write (a file where the namespace directory
 * must go): the error is counted, the timeline stays open with what arrived
 * during the attempt, and the retry writes all of it once the way is clear. */
START_TEST(test_writer_disk_error_retried)
{
	struct fx f;
	struct gate g;
	char path[PATH_MAX], jpath[PATH_MAX], blocker[PATH_MAX];
	struct wait_file w = { path, jpath };
	struct json_object *doc;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	int64_t errs0 = tl_metric_get("termline_disk_errors_total", NULL);
	int64_t late0 = tl_metric_get("termline_timeline_late_events_total", NULL);

	fx_init_gated(&f, &g, 0, 0);
	PATHF(blocker, "%s/timelines/shop", f.dir);
	touch(blocker);
	set_meta(f.t, "shop", "web-a", UID_A);
	ck_assert_int_eq(scn_termination(f.t, UID_A, t0, true), 14);
	PATHF(path, "%s/timelines/shop/web-a_%s.json", f.dir, UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	ck_assert(scn_run_until(f.loop, writer_started, &g));
	ck_assert_int_eq(scn_add(f.t, UID_A, "tcp.reset_sent", t0 + 40 * SCN_S), 0);
	tl_timelines_note_kernel_loss(f.t, 7);
	touch(g.open);
	ck_assert(scn_run_until(f.loop, disk_error_seen, &errs0));
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	doc = get_doc(f.t, "shop", "web-a", NULL);
	ck_assert_uint_eq(jlen(doc, "events"), 15);
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 0);
	ck_assert_int_eq(jint(doc, "loss.kernelEventsDropped"), 7);
	ck_assert(!jbool(doc, "complete"));
	json_object_put(doc);

	ck_assert_int_eq(unlink(blocker), 0);
	doc = wait_doc(&f, &w);
	ck_assert_uint_eq(jlen(doc, "events"), 15);
	ck_assert_str_eq(jstr(doc, "events.14.type"), "tcp.reset_sent");
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 0);
	ck_assert_int_eq(jint(doc, "loss.kernelEventsDropped"), 7);
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	/* kept, hence not late */
	ck_assert_int_eq(tl_metric_get("termline_timeline_late_events_total", NULL), late0);
	fx_done(&f);
}
END_TEST

/* The agent stops while a writer is still at work and does not finish in
 * time: nothing is written, the journal stays, and the next start closes
 * the timeline again with everything, what arrived during the close too. */
START_TEST(test_shutdown_during_write_keeps_journal)
{
	struct fx f;
	struct gate g;
	char path[PATH_MAX], jpath[PATH_MAX], dir[PATH_MAX];
	struct wait_file w = { path, jpath };
	struct json_object *doc;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	fx_init_gated(&f, &g, 0, 200);
	set_meta(f.t, "shop", "web-a", UID_A);
	ck_assert_int_eq(scn_termination(f.t, UID_A, t0, true), 14);
	PATHF(dir, "%s/timelines/shop", f.dir);
	PATHF(path, "%s/web-a_%s.json", dir, UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	ck_assert(scn_run_until(f.loop, writer_started, &g));
	ck_assert_int_eq(scn_add(f.t, UID_A, "tcp.reset_sent", t0 + 40 * SCN_S), 0);
	tl_timelines_free(f.t); /* the gate stays shut: the writer is given up */
	f.t = NULL;
	ck_assert(!file_exists(path));
	ck_assert(file_exists(jpath));
	ck_assert_uint_eq(count_entries(dir), 0);

	touch(g.open);
	fx_store(&f);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	doc = wait_doc(&f, &w);
	ck_assert_uint_eq(jlen(doc, "events"), 15);
	ck_assert_int_eq(jint(doc, "loss.agentRestarts"), 1);
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	fx_done(&f);
}
END_TEST

/* A writer that finishes within close_wait_ms completes the close at
 * shutdown: the document is indexed and the journal gone. */
START_TEST(test_shutdown_waits_for_writer)
{
	struct fx f;
	struct gate g;
	char path[PATH_MAX], jpath[PATH_MAX];
	struct json_object *list;
	int64_t closed0 = tl_metric_get("termline_timelines_closed_total", NULL);

	fx_init_gated(&f, &g, 0, 30000);
	set_meta(f.t, "shop", "web-a", UID_A);
	ck_assert_int_eq(scn_termination(f.t, UID_A, tl_now_real_ns() - 100 * SCN_S, true), 14);
	PATHF(path, "%s/timelines/shop/web-a_%s.json", f.dir, UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	ck_assert(scn_run_until(f.loop, writer_started, &g));
	touch(g.open);
	tl_timelines_free(f.t);
	f.t = NULL;
	ck_assert(file_exists(path));
	ck_assert(!file_exists(jpath));
	ck_assert_int_eq(tl_metric_get("termline_timelines_closed_total", NULL), closed0 + 1);
	fx_store(&f);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 0);
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
	ck_assert_uint_eq(jlen(list, "timelines"), 1);
	ck_assert_str_eq(jstr(list, "timelines.0.state"), "closed");
	json_object_put(list);
	fx_done(&f);
}
END_TEST

/* ---- store items of the hostile-input audit ---- */

static size_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

static size_t journal_settled(struct fx *f, const char *jpath)
{
	/* frames are written at the end of a loop iteration */
	for (int i = 0; i < 5; i++)
		tl_loop_run_once(f->loop, 5);
	return file_size(jpath);
}

/* The API side repeats a Pod's metadata (every status change, resyncs):
 * the store records it again only when a field changed. */
START_TEST(test_meta_recorded_only_when_changed)
{
	struct fx f;
	char jpath[PATH_MAX];
	struct json_object *doc;
	size_t first, again;

	fx_init(&f, 30, 0);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	set_meta(f.t, "shop", "web-m", UID_A);
	first = journal_settled(&f, jpath);
	ck_assert_uint_gt(first, 0);
	for (int i = 0; i < 5; i++)
		set_meta(f.t, "shop", "web-m", UID_A);
	again = journal_settled(&f, jpath);
	ck_assert_uint_eq(again, first);
	/* one field differs: one more record, and the document says it */
	set_meta(f.t, "shop", "web-n", UID_A);
	ck_assert_uint_gt(journal_settled(&f, jpath), again);
	doc = get_doc(f.t, "shop", "web-n", NULL);
	ck_assert_str_eq(jstr(doc, "pod.name"), "web-n");
	json_object_put(doc);
	fx_done(&f);
}
END_TEST

/* ---- journals of earlier builds ---- */

static void copy_file(const char *from, size_t skip, const char *to)
{
	size_t len;
	char *data = read_all(from, &len);
	FILE *fp = fopen(to, "we");

	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_ge(len, skip);
	ck_assert_uint_eq(fwrite(data + skip, 1, len - skip, fp), len - skip);
	ck_assert_int_eq(fclose(fp), 0);
	free(data);
}

static struct json_object *gz_json(const char *path)
{
	gzFile gz = gzopen(path, "rb");
	struct tl_buf b;
	char buf[65536];
	int n;
	struct json_object *o;

	ck_assert_ptr_nonnull(gz);
	tl_buf_init(&b, 0);
	while ((n = gzread(gz, buf, sizeof(buf))) > 0)
		tl_buf_add(&b, buf, (size_t)n);
	ck_assert_int_eq(n, 0);
	gzclose(gz);
	ck_assert_int_eq(b.err, 0);
	o = json_tokener_parse(b.p);
	ck_assert_ptr_nonnull(o);
	tl_buf_free(&b);
	return o;
}

/* The document as recorded, without what differs from one start to the
 * next: the gap of the start itself and when recording began. */
static void drop_start(struct json_object *doc)
{
	struct json_object *rec = jget(doc, "recorder"), *gaps = jget(doc, "recorder.gaps");

	ck_assert_ptr_nonnull(gaps);
	ck_assert_uint_ge(json_object_array_length(gaps), 1);
	json_object_array_del_idx(gaps, json_object_array_length(gaps) - 1, 1);
	json_object_object_del(rec, "recordingSince");
	json_object_object_del(rec, "agentVersion");
	json_object_object_del(rec, "node");
	json_object_object_del(rec, "kernel");
	json_object_object_del(rec, "probes");
	json_object_object_del(rec, "configDigest");
	for (size_t i = 0; i < json_object_array_length(gaps); i++) {
		/* earlier starts' gaps end at their recordingSince: now-ish */
		json_object_object_del(json_object_array_get_idx(gaps, i), "from");
		json_object_object_del(json_object_array_get_idx(gaps, i), "to");
	}
}

/* Journals written by earlier builds (tests/timeline/compat/, made by
 * compat-journal.c) replay to the documents those builds served: every
 * frame type a live agent writes, a compaction's R and T frames, a G
 * frame. A change of the journal format that breaks an upgrading agent's
 * journals fails here. */
START_TEST(test_journal_compat)
{
	static const struct {
		const char *name, *uid, *ns, *pod;
	} cases[] = {
		{ "compat-08e45ab", "c0c0c0c0-0000-4000-8000-00000000c0c0", "shop", "compat-renamed" },
		{ "compat-08e45ab-gone", "c1c1c1c1-0000-4000-8000-00000000c1c1", "_unknown",
		  "c1c1c1c1-0000-4000-8000-00000000c1c1" },
	};
	const char *src = getenv("TERMLINE_SOURCE_ROOT");

	ck_assert_ptr_nonnull(src);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char from[PATH_MAX], to[PATH_MAX];
		struct json_object *want, *got;
		struct fx f;

		fx_prepare(&f, 3600, 0);
		f.cfg.findings_helper = "";
		PATHF(to, "%s/journal", f.dir);
		ck_assert_int_eq(mkdir(to, 0755), 0);
		PATHF(from, "%s/tests/timeline/compat/%s.tlj", src, cases[i].name);
		PATHF(to, "%s/journal/%s.tlj", f.dir, cases[i].uid);
		copy_file(from, 0, to);
		fx_store(&f);
		ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
		got = get_doc(f.t, cases[i].ns, cases[i].pod, cases[i].uid);
		PATHF(from, "%s/tests/timeline/compat/%s.json.gz", src, cases[i].name);
		want = gz_json(from);
		drop_start(got);
		drop_start(want);
		ck_assert_msg(json_object_equal(got, want), "%s: the replayed document differs",
			      cases[i].name);
		json_object_put(got);
		json_object_put(want);
		fx_done(&f);
	}
}
END_TEST

/* Every seed of the journal fuzzer's corpus (corpus-journal/: its first
 * byte picks the format) replays in a starting store, which then lists
 * and serves what it replayed. */
START_TEST(test_journal_corpus_replays)
{
	const char *src = getenv("TERMLINE_SOURCE_ROOT");
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int seeds = 0;

	ck_assert_ptr_nonnull(src);
	PATHF(dir, "%s/tests/timeline/corpus-journal", src);
	d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		char from[PATH_MAX], to[PATH_MAX];
		struct json_object *list, *arr;
		uint8_t first;
		FILE *fp;
		struct fx f;

		if (de->d_name[0] == '.')
			continue;
		PATHF(from, "%s/%s", dir, de->d_name);
		fp = fopen(from, "re");
		ck_assert_ptr_nonnull(fp);
		ck_assert_uint_eq(fread(&first, 1, 1, fp), 1);
		fclose(fp);
		fx_prepare(&f, 3600, 64);
		f.cfg.findings_helper = "";
		PATHF(to, "%s/journal", f.dir);
		ck_assert_int_eq(mkdir(to, 0755), 0);
		PATHF(to, "%s/journal/%s%s", f.dir, UID_A, first & 1 ? ".jsonl" : ".tlj");
		copy_file(from, 1, to);
		fx_store(&f);
		ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
		arr = jget(list, "timelines");
		for (size_t i = 0; i < json_object_array_length(arr); i++) {
			struct json_object *e = json_object_array_get_idx(arr, i);
			struct json_object *ns = jget(e, "namespace"), *name = jget(e, "name"), *o;
			char *doc = NULL;
			size_t len;

			ck_assert_int_eq(tl_timelines_get(f.t, ns ? json_object_get_string(ns) : "_unknown",
							  name ? json_object_get_string(name) : UID_A,
							  NULL, &doc, &len), 0);
			o = json_tokener_parse(doc);
			ck_assert_ptr_nonnull(o);
			json_object_put(o);
			free(doc);
		}
		json_object_put(list);
		fx_done(&f);
		seeds++;
	}
	closedir(d);
	ck_assert_int_ge(seeds, 6);
}
END_TEST

/* A journal written by the previous agent (JSON lines) replays after the
 * upgrade, is rewritten in the binary form and the old file goes. */
START_TEST(test_legacy_journal_upgrade)
{
	struct fx f;
	char jdir[PATH_MAX], legacy[PATH_MAX], bin[PATH_MAX], path[PATH_MAX], line[2048];
	struct wait_file w = { path, NULL };
	struct json_object *doc;
	struct tl_event ev;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	char tbuf[TL_TIME_STRLEN];
	FILE *fp;

	fx_prepare(&f, 1, 0);
	PATHF(jdir, "%s/journal", f.dir);
	ck_assert_int_eq(mkdir(jdir, 0755), 0);
	PATHF(legacy, "%s/%s.jsonl", jdir, UID_A);
	PATHF(bin, "%s/%s.tlj", jdir, UID_A);
	fp = fopen(legacy, "w");
	ck_assert_ptr_nonnull(fp);
	fprintf(fp, "{\"k\":\"open\",\"uid\":\"%s\",\"opened\":\"%s\",\"since\":\"%s\"}\n", UID_A,
		tl_time_format(t0, tbuf), tl_time_format(t0, tbuf));
	{
		struct json_object *m = scn_meta("shop", "old-1", UID_A);

		fprintf(fp, "{\"k\":\"meta\",\"m\":%s}\n", json_object_to_json_string(m));
		json_object_put(m);
	}
	for (int i = 0; i < 3; i++) {
		struct json_object *e;

		ck_assert_int_eq(scn_event(&ev, UID_A, i == 2 ? "tcp.reset_sent" : "process.exec",
					   t0 + i * SCN_S), 0);
		e = tl_event_to_json(&ev, true);
		snprintf(line, sizeof(line), "{\"k\":\"ev\",\"e\":%s}", json_object_to_json_string(e));
		fprintf(fp, "%s\n", line);
		json_object_put(e);
		tl_event_clear(&ev);
	}
	fprintf(fp, "{\"k\":\"loss\",\"kernel\":2,\"aggregated\":0,\"dropped\":0,\"disk\":0,\"restarts\":0,\"unreadable\":0}\n");
	fprintf(fp, "{\"k\":\"ev\",\"e\":{\"ti"); /* torn by the old agent's death */
	ck_assert_int_eq(fclose(fp), 0);

	fx_store(&f);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	ck_assert(!file_exists(legacy));
	ck_assert(file_exists(bin));
	/* once more: the binary journal alone restores the same timeline */
	tl_timelines_free(f.t);
	fx_store(&f);
	ck_assert_int_eq(scn_add(f.t, UID_A, "pod.deleted", t0 + 10 * SCN_S), 0);
	PATHF(path, "%s/timelines/shop/old-1_%s.json", f.dir, UID_A);
	doc = wait_doc(&f, &w);
	ck_assert_uint_eq(jlen(doc, "events"), 4);
	ck_assert_str_eq(jstr(doc, "events.0.type"), "process.exec");
	ck_assert_str_eq(jstr(doc, "events.2.type"), "tcp.reset_sent");
	ck_assert_str_eq(jstr(doc, "events.2.local"), "10.0.0.7:8080");
	ck_assert_int_eq(jint(doc, "loss.kernelEventsDropped"), 2);
	ck_assert_int_eq(jint(doc, "loss.agentRestarts"), 2);
	ck_assert_int_eq(jint(doc, "loss.diskErrors"), 1); /* the torn line */
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	fx_done(&f);
}
END_TEST

/* Item 5: a Pod name of 253 characters (valid) is written, under a file
 * name cut to NAME_MAX, and served and listed by its whole name. */
START_TEST(test_long_pod_name_written)
{
	struct fx f;
	char name[254], file[PATH_MAX], dir[PATH_MAX];
	struct json_object *doc, *list;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	memset(name, 'a', 253);
	name[253] = '\0';
	fx_init(&f, 0, 0);
	set_meta(f.t, "shop", name, UID_A);
	ck_assert_int_gt(scn_termination(f.t, UID_A, t0, true), 0);
	ck_assert(scn_run_until(f.loop, none_open, f.t));
	PATHF(dir, "%s/timelines/shop", f.dir);
	ck_assert_uint_eq(count_entries(dir), 1);
	PATHF(file, "%s/%.*s_%s.json", dir, (int)(255 - 1 - strlen(UID_A) - 5), name, UID_A);
	ck_assert(file_exists(file));
	doc = get_doc(f.t, "shop", name, NULL);
	ck_assert_str_eq(jstr(doc, "pod.name"), name);
	json_object_put(doc);
	/* after a restart the index is rebuilt from the document */
	tl_timelines_free(f.t);
	fx_store(&f);
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
	ck_assert_uint_eq(jlen(list, "timelines"), 1);
	ck_assert_str_eq(jstr(list, "timelines.0.name"), name);
	json_object_put(list);
	fx_done(&f);
}
END_TEST

/* Item 6: a Pod named ".hidden" and a namespace starting with '.' are
 * documents like any other: kept across a restart, listed and served. */
START_TEST(test_dot_names_kept)
{
	struct fx f;
	char path[PATH_MAX], path2[PATH_MAX];
	struct json_object *list, *doc;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;

	fx_init(&f, 0, 0);
	set_meta(f.t, "shop", ".hidden", UID_A);
	set_meta(f.t, ".dotted", "web", UID_B);
	ck_assert_int_gt(scn_termination(f.t, UID_A, t0, true), 0);
	ck_assert_int_gt(scn_termination(f.t, UID_B, t0, true), 0);
	ck_assert(scn_run_until(f.loop, none_open, f.t));
	PATHF(path, "%s/timelines/shop/.hidden_%s.json", f.dir, UID_A);
	PATHF(path2, "%s/timelines/.dotted/web_%s.json", f.dir, UID_B);
	ck_assert(file_exists(path));
	ck_assert(file_exists(path2));
	tl_timelines_free(f.t);
	fx_store(&f);
	ck_assert(file_exists(path));
	ck_assert_int_eq(tl_http_list_json(f.t, NULL, false, &list), 0);
	ck_assert_uint_eq(jlen(list, "timelines"), 2);
	json_object_put(list);
	doc = get_doc(f.t, ".dotted", "web", NULL);
	ck_assert_str_eq(jstr(doc, "pod.namespace"), ".dotted");
	json_object_put(doc);
	/* a crash's temp file is still cleaned up */
	tl_timelines_free(f.t);
	f.t = NULL;
	{
		char tdir[PATH_MAX];

		PATHF(tdir, "%s/timelines/shop", f.dir);
		ck_assert_int_eq(scn_write(tdir, ".tl-AbC123.tmp", "x", 1), 0);
		fx_store(&f);
		PATHF(path, "%s/.tl-AbC123.tmp", tdir);
		ck_assert(!file_exists(path));
	}
	fx_done(&f);
}
END_TEST

/* Item 14: retention with no closed document at all (qsort of nothing
 * was undefined: UBSan reported it in this very call). */
START_TEST(test_retention_nothing_closed)
{
	struct fx f;

	fx_prepare(&f, 0, 0);
	f.cfg.retention_bytes = 1;
	f.cfg.retention_hours = 1;
	fx_store(&f);
	ck_assert_int_eq(tl_timelines_retention_run(f.t), 0);
	fx_done(&f);
}
END_TEST

static size_t fds_under(const char *dir)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	size_t n = 0, dl = strlen(dir);

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d))) {
		char link[PATH_MAX], target[PATH_MAX];
		ssize_t k;

		PATHF(link, "/proc/self/fd/%s", de->d_name);
		k = readlink(link, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = '\0';
		n += strncmp(target, dir, dl) == 0;
	}
	closedir(d);
	return n;
}

/* Item 4 (store side): open timelines are capped, the refused counted;
 * journals do not hold a descriptor each. */
static void cap_uid(char *buf, size_t len, int i)
{
	snprintf(buf, len, "0b6a1c2e-0000-4000-8000-%012d", i);
}

static const char *doc_reason(struct fx *f, const char *uid, char *buf, size_t len)
{
	char path[PATH_MAX];
	struct json_object *doc, *v = NULL;

	PATHF(path, "%s/timelines/_unknown/%s.json", f->dir, uid);
	doc = json_object_from_file(path);
	if (!doc)
		return NULL;
	if (json_object_object_get_ex(doc, "closeReason", &v))
		snprintf(buf, len, "%s", json_object_get_string(v));
	else
		snprintf(buf, len, "-");
	json_object_put(doc);
	return buf;
}

static bool journals_are_20(void *ud)
{
	return count_entries(ud) == 20;
}

static bool open_is(void *ud)
{
	struct fx *f = ud;

	return tl_timelines_open_count(f->t) == f->cfg.max_open;
}

/* At the cap, a new Pod is recorded: the least recently active timeline
 * closes to make room (closeReason "openLimit", counted), not the new Pod
 * refused. Only when 64 such closes are in progress at once is a Pod
 * refused (the bound on timelines in memory: max_open + 64). */
START_TEST(test_open_timelines_capped)
{
	struct fx f;
	char uid[64], jdir[PATH_MAX], why[32];
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	int64_t refused0 = tl_metric_get("termline_timelines_refused_total", NULL);
	int64_t evicted0 = tl_metric_get("termline_timelines_evicted_total", "reason=\"openLimit\"");

	fx_prepare(&f, 30, 0);
	f.cfg.max_open = 20;
	f.cfg.journal_fds = 4;
	f.cfg.findings_helper = "";
	fx_store(&f);
	/* each one a few ms after the one before (the store's clock moves
	 * at its ticks: tl_timelines_idle_run is one) */
	for (int i = 0; i < 20; i++) {
		cap_uid(uid, sizeof(uid), i);
		ck_assert_int_eq(scn_add(f.t, uid, "process.exec", t0 + i), 0);
		usleep(3000);
		tl_timelines_idle_run(f.t);
	}
	/* the first five are active again: the next five are the least
	 * recently active */
	for (int i = 0; i < 5; i++) {
		cap_uid(uid, sizeof(uid), i);
		ck_assert_int_eq(scn_add(f.t, uid, "process.exec", t0 + 100 + i), 0);
	}
	for (int i = 20; i < 25; i++) {
		cap_uid(uid, sizeof(uid), i);
		ck_assert_int_eq(scn_add(f.t, uid, "process.exec", t0 + i), 0);
	}
	ck_assert_uint_eq(tl_timelines_refused(f.t), 0);
	ck_assert_int_eq(tl_metric_get("termline_timelines_refused_total", NULL), refused0);
	ck_assert_int_eq(tl_metric_get("termline_timelines_evicted_total", "reason=\"openLimit\""),
			 evicted0 + 5);
	ck_assert(scn_run_until(f.loop, open_is, &f));
	for (int i = 0; i < 25; i++) {
		const char *r;

		cap_uid(uid, sizeof(uid), i);
		r = doc_reason(&f, uid, why, sizeof(why));
		if (i >= 5 && i < 10)
			ck_assert_msg(r && strcmp(r, "openLimit") == 0, "%d: %s", i, r ? r : "no document");
		else
			ck_assert_msg(!r, "%d closed", i);
	}
	PATHF(jdir, "%s/journal", f.dir);
	ck_assert(scn_run_until(f.loop, journals_are_20, jdir)); /* removed off the loop */
	ck_assert_uint_le(fds_under(jdir), 4);
	/* every journal still has what it was given */
	tl_timelines_free(f.t);
	fx_store(&f);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 20);
	fx_done(&f);
}
END_TEST

/* Closes to make room that cannot finish (the loop does not run) are
 * bounded: past 64 in progress, the next new Pod is refused and counted. */
START_TEST(test_open_limit_evictions_bounded)
{
	struct fx f;
	char uid[64];
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	int64_t refused0 = tl_metric_get("termline_timelines_refused_total", NULL);

	fx_prepare(&f, 30, 0);
	f.cfg.max_open = 2;
	f.cfg.findings_helper = "";
	fx_store(&f);
	for (int i = 0; i < 2 + 64; i++) {
		cap_uid(uid, sizeof(uid), i);
		ck_assert_int_eq(scn_add(f.t, uid, "process.exec", t0 + i), 0);
	}
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 66);
	cap_uid(uid, sizeof(uid), 66);
	ck_assert_int_eq(scn_add(f.t, uid, "process.exec", t0), -ENOSPC);
	ck_assert_uint_eq(tl_timelines_refused(f.t), 1);
	ck_assert_int_eq(tl_metric_get("termline_timelines_refused_total", NULL), refused0 + 1);
	/* once they are written, there is room again */
	f.cfg.max_open = 2;
	ck_assert(scn_run_until(f.loop, open_is, &f));
	ck_assert_int_eq(scn_add(f.t, uid, "process.exec", t0), 0);
	fx_done(&f);
}
END_TEST

static bool vouch_for_a(void *ud _unused_, const char *uid)
{
	return strcmp(uid, UID_A) == 0;
}

static bool closed_n(void *ud)
{
	struct fx *f = ud;

	return tl_timelines_open_count(f->t) == 1;
}

/* Idle timelines: with nothing recorded for the bound and nothing
 * vouching for the Pod, the timeline closes (closeReason "idle"); one a
 * source vouches for stays open however long it is quiet; a closed one
 * says why, is complete (nothing was lost), and survives a restart
 * with its reason. */
START_TEST(test_idle_close)
{
	struct fx f;
	char path[PATH_MAX], why[32];
	struct wait_file w = { path, NULL };
	struct json_object *doc;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	int64_t idle0 = tl_metric_get("termline_timelines_evicted_total", "reason=\"idle\"");

	fx_prepare(&f, 0, 0);
	f.cfg.idle_close_s = 1;
	f.cfg.vouched = vouch_for_a;
	f.cfg.findings_helper = "";
	fx_store(&f);
	ck_assert_int_eq(scn_add(f.t, UID_A, "process.exec", t0), 0);
	ck_assert_int_eq(scn_add(f.t, UID_B, "process.exec", t0), 0);
	ck_assert_int_eq(scn_add(f.t, UID_B, "process.exit", t0 + SCN_S), 0);
	/* not before the bound */
	ck_assert_int_eq(tl_timelines_idle_run(f.t), 0);
	PATHF(path, "%s/timelines/_unknown/%s.json", f.dir, UID_B);
	doc = wait_doc(&f, &w);
	ck_assert_str_eq(jstr(doc, "closeReason"), "idle");
	ck_assert(jbool(doc, "complete"));
	ck_assert_uint_eq(jlen(doc, "events"), 2);
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	ck_assert(scn_run_until(f.loop, closed_n, &f));
	ck_assert_int_eq(tl_metric_get("termline_timelines_evicted_total", "reason=\"idle\""), idle0 + 1);
	/* A, vouched for, is still open after more than the bound */
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	ck_assert_int_eq(tl_timelines_idle_run(f.t), 0);
	ck_assert_ptr_null(doc_reason(&f, UID_A, why, sizeof(why)));
	/* events for the closed one are late, not a new timeline */
	ck_assert_int_eq(scn_add(f.t, UID_B, "process.exec", t0 + 2 * SCN_S), 0);
	ck_assert_uint_eq(tl_timelines_open_count(f.t), 1);
	fx_done(&f);
}
END_TEST

/* The close paths the caller drives: tl_timelines_end() with a reason
 * (log directory gone, cgroups gone) and tl_timelines_close_missing()
 * after a LIST, which spares a timeline opened after the LIST began. A
 * reason given before a restart is still the document's after it. */
START_TEST(test_end_reasons_survive_restart)
{
	struct fx f;
	char path[PATH_MAX], why[32];
	struct wait_file w = { path, NULL };
	struct json_object *doc;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S, list_ns;

	fx_prepare(&f, 30, 0);
	f.cfg.findings_helper = "";
	fx_store(&f);
	ck_assert_int_eq(scn_add(f.t, UID_A, "process.exec", t0), 0);
	ck_assert_int_eq(scn_add(f.t, UID_B, "process.exec", t0), 0);
	ck_assert_int_eq(tl_timelines_end(f.t, UID_A, TL_CLOSE_LOGS_REMOVED), 1);
	ck_assert_int_eq(tl_timelines_end(f.t, UID_A, TL_CLOSE_IDLE), 0); /* ended already */
	ck_assert_int_eq(tl_timelines_end(f.t, UID_C, TL_CLOSE_IDLE), 0); /* not open */
	ck_assert_int_eq(tl_timelines_end(f.t, UID_B, 0), -EINVAL);
	/* served while it lingers, with why it will close */
	doc = get_doc(f.t, "_unknown", UID_A, NULL);
	ck_assert_str_eq(jstr(doc, "closeReason"), "logsRemoved");
	json_object_put(doc);
	list_ns = tl_now_real_ns();
	usleep(2000);
	ck_assert_int_eq(scn_add(f.t, UID_C, "process.exec", t0), 0); /* opened after the LIST began */
	ck_assert_int_eq(tl_timelines_close_missing(f.t, vouch_for_a, NULL, list_ns, TL_CLOSE_UNKNOWN_TO_API), 1); /* B */
	tl_timelines_free(f.t);
	/* the restart: each keeps its reason and closes */
	f.cfg.linger_s = 0;
	fx_store(&f);
	PATHF(path, "%s/timelines/_unknown/%s.json", f.dir, UID_A);
	doc = wait_doc(&f, &w);
	ck_assert_str_eq(jstr(doc, "closeReason"), "logsRemoved");
	ck_assert_int_eq(jint(doc, "loss.agentRestarts"), 1);
	json_object_put(doc);
	ck_assert_int_eq(scn_validate(path), 0);
	PATHF(path, "%s/timelines/_unknown/%s.json", f.dir, UID_B);
	doc = wait_doc(&f, &w);
	ck_assert_str_eq(jstr(doc, "closeReason"), "unknownToApi");
	json_object_put(doc);
	ck_assert(scn_run_until(f.loop, closed_n, &f));
	ck_assert_ptr_null(doc_reason(&f, UID_C, why, sizeof(why)));
	fx_done(&f);
}
END_TEST

/* Item 8: a long-lived Pod's probes and metadata changes do not grow its
 * journal without bound; the replay restores the same timeline. */
START_TEST(test_journal_compacted_over_a_long_life)
{
	struct fx f;
	char jpath[PATH_MAX];
	struct json_object *doc, *again;
	int64_t t0 = tl_now_real_ns() - 400000 * SCN_S;
	size_t max_size = 0;

	fx_init(&f, 30, 100);
	set_meta(f.t, "shop", "probe", UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	for (int i = 0; i < 40000; i++) {
		/* an exec probe every 5 s, each with its own pid */
		struct tl_event ev;

		ck_assert_int_eq(scn_event(&ev, UID_A, "process.exec", t0 + (int64_t)i * 5 * SCN_S), 0);
		ck_assert_int_eq(tl_event_set_i(&ev, TL_F_EXEC_PID, 1000 + i), 0);
		ck_assert_int_eq(tl_timelines_add(f.t, &ev), 0);
		tl_event_clear(&ev);
		if (i % 20 == 0) {
			struct json_object *m = scn_meta("shop", "probe", UID_A);
			char rv[32];

			snprintf(rv, sizeof(rv), "10.1.%d.%d", (i / 250) % 250, 1 + i % 250);
			json_object_object_add(json_object_object_get(m, "pod"), "ip",
					       json_object_new_string(rv));
			ck_assert_int_eq(scn_set_meta(f.t, UID_A, m), 0);
			json_object_put(m);
		}
		if (file_size(jpath) > max_size)
			max_size = file_size(jpath);
	}
	/* 40,000 events and 2,000 metadata changes: ~1.6 MB of frames
	 * without compaction, at most ~0.5 MB with it. */
	ck_assert_uint_lt(max_size, 600 * 1024);
	doc = get_doc(f.t, "shop", "probe", NULL);
	tl_timelines_free(f.t);
	fx_store(&f);
	again = get_doc(f.t, "shop", "probe", NULL);
	ck_assert_uint_eq(jlen(again, "events"), jlen(doc, "events"));
	ck_assert_int_eq(jint(again, "loss.eventsAggregated"), jint(doc, "loss.eventsAggregated"));
	ck_assert_str_eq(jstr(again, "pod.ip"), jstr(doc, "pod.ip"));
	for (size_t i = 0; i < jlen(doc, "events"); i += 17) {
		char k[64];

		snprintf(k, sizeof(k), "events.%zu", i);
		ck_assert(json_object_equal(jget(doc, k), jget(again, k)));
	}
	json_object_put(doc);
	json_object_put(again);
	fx_done(&f);
}
END_TEST

/* Events folded past the cap are not journaled one by one: the aggregate
 * entries are, as they are made and with their counts once per loop
 * iteration (or as they leave the recent ones: 40 seconds here, more than
 * the 32 entries taking events). A replay gives the same document. */
START_TEST(test_journal_folded_as_aggregates)
{
	struct fx f;
	char jpath[PATH_MAX];
	struct json_object *doc, *again;
	int64_t t0 = (tl_now_real_ns() / SCN_S - 1000) * SCN_S;
	struct folds folds;

	/* a cap of 50: the execs and 40 requests kept, the rest folded */
	fx_init(&f, 30, 50);
	set_meta(f.t, "shop", "flood", UID_A);
	PATHF(jpath, "%s/journal/%s.tlj", f.dir, UID_A);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(scn_add(f.t, UID_A, "process.exec", t0 + i), 0);
	/* 20,000 requests over 40 s, past the cap (as event frames, with
	 * compaction: 168 KiB) */
	for (int i = 0; i < 20000; i++)
		ck_assert_int_eq(scn_add(f.t, UID_A, "http.request", t0 + SCN_S + (int64_t)i * 2000000LL), 0);
	ck_assert_int_eq(tl_timelines_flush(f.t), 0);
	ck_assert_uint_lt(file_size(jpath), 16 * 1024);
	doc = get_doc(f.t, "shop", "flood", NULL);
	ck_assert_int_eq(jint(doc, "loss.eventsAggregated"), 19960);
	folds = sum_folds(doc, "http.request");
	ck_assert_int_eq(folds.count, 19960);
	ck_assert_uint_ge(folds.entries, 39); /* one per second */
	ck_assert_uint_eq(jlen(doc, "events"), 50 + folds.entries);

	/* more into the last entries, then a restart: the counts since the
	 * last flush are written as the store stops */
	for (int i = 0; i < 500; i++)
		ck_assert_int_eq(scn_add(f.t, UID_A, "http.request", t0 + 40 * SCN_S + (int64_t)i * 1000000LL), 0);
	json_object_put(doc);
	doc = get_doc(f.t, "shop", "flood", NULL);
	tl_timelines_free(f.t);
	fx_store(&f);
	again = get_doc(f.t, "shop", "flood", NULL);
	ck_assert_int_eq(jint(again, "loss.eventsAggregated"), 20460);
	ck_assert_uint_eq(jlen(again, "events"), jlen(doc, "events"));
	for (size_t i = 0; i < jlen(doc, "events"); i++) {
		char k[64];

		snprintf(k, sizeof(k), "events.%zu", i);
		ck_assert_msg(json_object_equal(jget(doc, k), jget(again, k)), "event %zu differs: %s vs %s", i,
			      json_object_to_json_string(jget(doc, k)), json_object_to_json_string(jget(again, k)));
	}
	json_object_put(doc);
	json_object_put(again);
	fx_done(&f);
}
END_TEST

/* Item 9: a document is served from a snapshot in chunks: what a reader
 * gets does not change while the timeline goes on or closes, at most 16
 * readers exist at once, and the stream equals the whole document. */
START_TEST(test_doc_readers_bounded_and_stable)
{
	struct fx f;
	struct tl_doc_reader *r[17], *one;
	char *whole = NULL, buf[1000];
	size_t whole_len = 0;
	struct tl_buf got;
	int64_t t0 = tl_now_real_ns() - 100 * SCN_S;
	ssize_t n;

	fx_init(&f, 0, 0);
	set_meta(f.t, "shop", "web", UID_A);
	for (int i = 0; i < 5000; i++)
		ck_assert_int_eq(scn_add(f.t, UID_A, "process.exec", t0 + i * 1000000LL), 0);
	ck_assert_int_eq(tl_timelines_get(f.t, "shop", "web", NULL, &whole, &whole_len), 0);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(tl_timelines_open_doc(f.t, "shop", "web", NULL, &r[i]), 0);
	ck_assert_int_eq(tl_timelines_open_doc(f.t, "shop", "web", NULL, &r[16]), -EBUSY);
	for (int i = 1; i < 16; i++)
		tl_doc_reader_free(r[i]);
	one = r[0];
	/* the timeline goes on (its record arena, shared with the snapshot,
	 * grows into a copy) and closes while the first reader reads */
	for (int i = 0; i < 5000; i++)
		ck_assert_int_eq(scn_add(f.t, UID_A, "tcp.reset_sent", t0 + 6 * SCN_S + i * 1000000LL), 0);
	ck_assert_int_eq(scn_add(f.t, UID_A, "pod.deleted", t0 + 20 * SCN_S), 0);
	ck_assert(scn_run_until(f.loop, none_open, f.t));
	tl_buf_init(&got, 0);
	while ((n = tl_doc_read(one, buf, sizeof(buf))) > 0) {
		ck_assert_int_le(n, (ssize_t)sizeof(buf));
		tl_buf_add(&got, buf, (size_t)n);
	}
	ck_assert_int_eq(n, 0);
	tl_doc_reader_free(one);
	ck_assert_uint_eq(got.len, whole_len);
	ck_assert(memcmp(got.p, whole, whole_len) == 0);
	tl_buf_free(&got);
	free(whole);
	ck_assert_int_eq(tl_timelines_open_doc(f.t, "shop", "nosuch", NULL, &one), -ENOENT);
	fx_done(&f);
}
END_TEST


static Suite *timeline_suite(void)
{
	Suite *s = suite_create("timeline");
	TCase *tc = tcase_create("store");

	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_journal_crc_is_zlib_crc32);
	tcase_add_test(tc, test_order_and_dedupe);
	tcase_add_test(tc, test_cap_aggregates_and_counts_loss);
	tcase_add_test(tc, test_termination_kept_after_long_life);
	tcase_add_test(tc, test_kernel_loss_marks_open_timelines);
	tcase_add_test(tc, test_linger_close_writes_atomically);
	tcase_add_test(tc, test_unknown_pod_file_name);
	tcase_add_test(tc, test_journal_replay_after_kill);
	tcase_add_test(tc, test_legacy_journal_upgrade);
	tcase_add_test(tc, test_journal_compat);
	tcase_add_test(tc, test_journal_corpus_replays);
	tcase_add_test(tc, test_long_pod_name_written);
	tcase_add_test(tc, test_dot_names_kept);
	tcase_add_test(tc, test_retention_nothing_closed);
	tcase_add_test(tc, test_open_timelines_capped);
	tcase_add_test(tc, test_open_limit_evictions_bounded);
	tcase_add_test(tc, test_idle_close);
	tcase_add_test(tc, test_end_reasons_survive_restart);
	tcase_add_test(tc, test_journal_compacted_over_a_long_life);
	tcase_add_test(tc, test_journal_folded_as_aggregates);
	tcase_add_test(tc, test_doc_readers_bounded_and_stable);
	tcase_add_test(tc, test_journal_unreadable_records_counted);
	tcase_add_test(tc, test_journal_previous_meta_record);
	tcase_add_test(tc, test_meta_recorded_only_when_changed);
	tcase_add_test(tc, test_journal_replay_closes_lingering);
	tcase_add_test(tc, test_close_missing_after_restart);
	tcase_add_test(tc, test_restart_restated_api_facts);
	tcase_add_test(tc, test_restart_gap_after_last_event);
	tcase_add_test(tc, test_retention_by_bytes);
	tcase_add_test(tc, test_retention_by_age);
	tcase_add_test(tc, test_unwritable_directory);
	tcase_add_test(tc, test_disk_full_tmpfs);
	tcase_add_test(tc, test_close_does_not_block_loop);
	tcase_add_test(tc, test_events_while_closing_counted_late);
	tcase_add_test(tc, test_writer_disk_error_retried);
	tcase_add_test(tc, test_shutdown_during_write_keeps_journal);
	tcase_add_test(tc, test_shutdown_waits_for_writer);
	tcase_add_test(tc, test_closed_document_has_findings);
	tcase_add_test(tc, test_closed_without_helper);
	tcase_add_test(tc, test_closed_summary_kept_beside_document);
	tcase_add_test(tc, test_commit_off_loop_failure_reported);
	suite_add_tcase(s, tc);
	return s;
}


int main(void)
{
	int failed = tl_check_run(timeline_suite());

	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
