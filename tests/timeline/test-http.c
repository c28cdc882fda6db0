/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "http-server.h"
#include "metrics.h"
#include "scenario.h"
#include "../check-run.h"

#define UID_OLD "aaaaaaaa-0000-4000-8000-00000000000a"
#define UID_NEW "bbbbbbbb-0000-4000-8000-00000000000b"
#define UID_ANON "cccccccc-0000-4000-8000-00000000000c"

struct reply {
	long status;
	char *body;
	size_t len;
	char allow[64];
};

struct req {
	const char *method;
	char url[512];
	const char *extra_header; /* NULL or a header line */
	struct reply r;
};

struct client {
	uint16_t port;
	struct req *reqs;
	size_t n;
	atomic_bool *ready;
	atomic_bool done;
};

static size_t body_cb(char *p, size_t sz, size_t n, void *ud)
{
	struct reply *r = ud;
	char *nb = realloc(r->body, r->len + sz * n + 1);

	if (!nb)
		return 0;
	r->body = nb;
	memcpy(r->body + r->len, p, sz * n);
	r->len += sz * n;
	r->body[r->len] = '\0';
	return sz * n;
}

static size_t header_cb(char *p, size_t sz, size_t n, void *ud)
{
	struct reply *r = ud;

	if (sz * n > 7 && strncasecmp(p, "Allow: ", 7) == 0)
		snprintf(r->allow, sizeof(r->allow), "%.*s", (int)(sz * n - 7 - 2), p + 7);
	return sz * n;
}

static void perform(struct req *q)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;

	if (!c) {
		q->r.status = -1;
		return;
	}
	curl_easy_setopt(c, CURLOPT_URL, q->url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, q->method);
	if (strcmp(q->method, "POST") == 0)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{}");
	if (q->extra_header) {
		h = curl_slist_append(h, q->extra_header);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &q->r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &q->r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	if (curl_easy_perform(c) != CURLE_OK)
		q->r.status = -1;
	else
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &q->r.status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

static void *client_main(void *ud)
{
	struct client *cl = ud;

	for (size_t i = 0; i < cl->n; i++) {
		/* /readyz is asked twice: before and after the agent becomes ready. */
		if (i > 0 && strstr(cl->reqs[i - 1].url, "/readyz"))
			atomic_store(cl->ready, true);
		perform(&cl->reqs[i]);
	}
	atomic_store(&cl->done, true);
	return NULL;
}

static atomic_bool ready_flag;

static bool is_ready(void *ud)
{
	return atomic_load((atomic_bool *)ud);
}

static bool client_done(void *ud)
{
	return atomic_load(&((struct client *)ud)->done);
}

static bool none_open_but(void *ud)
{
	return tl_timelines_open_count(ud) == 2;
}

static struct json_object *parse(const struct reply *r)
{
	struct json_object *o;

	ck_assert_ptr_nonnull(r->body);
	o = json_tokener_parse(r->body);
	ck_assert_msg(o != NULL, "not JSON: %s", r->body);
	return o;
}

static const char *str_at(struct json_object *o, const char *k1, const char *k2)
{
	struct json_object *v;

	ck_assert(json_object_object_get_ex(o, k1, &v));
	if (k2)
		ck_assert(json_object_object_get_ex(v, k2, &v));
	return json_object_get_string(v);
}

START_TEST(test_http_api)
{
	static const char *const probes[] = { "signal_generate:tp_btf", NULL };
	char *dir = scn_tmpdir();
	struct tl_loop *loop;
	struct tl_timelines *t;
	struct tl_http *h;
	struct tl_timelines_config cfg = {
		.state_dir = dir,
		.linger_s = 0,
		.findings_helper = TL_FINDINGS_HELPER,
		.recorder = { .agent_version = "0.1.0", .node = "node-1", .kernel = "6.18",
			      .config_digest = "sha256:1", .probes = probes },
	};
	struct tl_http_config hc = { .listen = "127.0.0.1:0", .ready = is_ready, .ud = &ready_flag };
	struct json_object *m, *o, *arr;
	char err[256] = "", checked[PATH_MAX];
	char big[40000];
	struct req reqs[24];
	char since[128], until[128], tbuf[TL_TIME_STRLEN];
	struct client cl = { 0 };
	pthread_t th;
	int64_t t0 = tl_now_real_ns() - 3600 * SCN_S;
	size_t n = 0;

	ck_assert_ptr_nonnull(dir);
	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_timelines_new(&cfg, loop, &t), 0);

	/* web-1 twice: an old, closed Pod and its replacement, still open. */
	m = scn_meta("shop", "web-1", UID_OLD);
	ck_assert_int_eq(scn_set_meta(t, UID_OLD, m), 0);
	json_object_put(m);
	ck_assert_int_eq(scn_termination(t, UID_OLD, t0, true), 14);
	m = scn_meta("shop", "web-1", UID_NEW);
	ck_assert_int_eq(scn_set_meta(t, UID_NEW, m), 0);
	json_object_put(m);
	ck_assert_int_eq(scn_add(t, UID_NEW, "process.exec", t0 + 600 * SCN_S), 0);
	ck_assert_int_eq(scn_add(t, UID_ANON, "process.exec", t0 + 700 * SCN_S), 0);
	ck_assert(scn_run_until(loop, none_open_but, t));

	ck_assert_msg(tl_http_new(&hc, loop, t, &h, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_ne(tl_http_port(h), 0);

	memset(reqs, 0, sizeof(reqs));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "X-Big: ", 7);
#define REQ(m, path, hdr) do { \
		reqs[n].method = m; \
		snprintf(reqs[n].url, sizeof(reqs[n].url), "http://127.0.0.1:%u%s", tl_http_port(h), path); \
		reqs[n].extra_header = hdr; \
		n++; \
	} while (0)
	REQ("GET", "/healthz", NULL);                               /* 0 */
	REQ("GET", "/readyz", NULL);                                /* 1 */
	REQ("GET", "/readyz", NULL);                                /* 2 */
	REQ("GET", "/metrics", NULL);                               /* 3 */
	REQ("GET", "/v1/timelines", NULL);                          /* 4 */
	REQ("GET", "/v1/timelines/shop/web-1", NULL);               /* 5 */
	REQ("GET", "/v1/timelines/shop/web-1?uid=" UID_OLD, NULL);  /* 6 */
	REQ("GET", "/v1/timelines/shop/nope", NULL);                /* 7 */
	REQ("POST", "/v1/timelines/shop/web-1", NULL);              /* 8 */
	REQ("DELETE", "/v1/timelines", NULL);                       /* 9 */
	REQ("GET", "/nope", NULL);                                  /* 10 */
	REQ("GET", "/v1/timelines/_unknown/" UID_ANON, NULL);       /* 11 */
	REQ("GET", "/v1/timelines/shop/web-1", big);                /* 12 */
	REQ("GET", "/v1/timelines/a/b/c", NULL);                    /* 13 */
	REQ("GET", "/healthz", NULL);                               /* 14 */
	/* the list's filters (docs/http-api.md) */
	snprintf(since, sizeof(since), "/v1/timelines?since=%s", tl_time_format(t0 + 650 * SCN_S, tbuf));
	snprintf(until, sizeof(until), "/v1/timelines?until=%s&detail=true",
		 tl_time_format(t0 + 650 * SCN_S, tbuf));
	REQ("GET", "/v1/timelines?namespace=shop&detail=true", NULL); /* 15 */
	REQ("GET", "/v1/timelines?ownerKind=ReplicaSet&ownerName=web-5d8f", NULL); /* 16 */
	REQ("GET", since, NULL);                                    /* 17 */
	REQ("GET", until, NULL);                                    /* 18 */
	REQ("GET", "/v1/timelines?since=yesterday", NULL);          /* 19 */
	REQ("GET", "/v1/timelines?namespace=a/b", NULL);            /* 20 */
	REQ("GET", "/v1/timelines?ownerName=other", NULL);          /* 21 */
#undef REQ
	cl.reqs = reqs;
	cl.n = n;
	cl.ready = &ready_flag;
	ck_assert_int_eq(pthread_create(&th, NULL, client_main, &cl), 0);
	ck_assert(scn_run_until(loop, client_done, &cl));
	ck_assert_int_eq(pthread_join(th, NULL), 0);

	ck_assert_int_eq(reqs[0].r.status, 200);
	ck_assert_int_eq(reqs[1].r.status, 503);
	ck_assert_int_eq(reqs[2].r.status, 200);
	ck_assert_int_eq(reqs[3].r.status, 200);
	ck_assert_ptr_nonnull(strstr(reqs[3].r.body, "\ntermline_timelines_open 2\n"));
	ck_assert_ptr_nonnull(strstr(reqs[3].r.body, "termline_timelines_closed_total 1\n"));
	ck_assert_ptr_nonnull(strstr(reqs[3].r.body, "termline_disk_bytes "));

	ck_assert_int_eq(reqs[4].r.status, 200);
	o = parse(&reqs[4].r);
	ck_assert(json_object_object_get_ex(o, "timelines", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 3);
	for (size_t i = 0; i < 3; i++) {
		struct json_object *it = json_object_array_get_idx(arr, i);
		const char *uid = str_at(it, "uid", NULL);

		if (strcmp(uid, UID_OLD) == 0) {
			ck_assert_str_eq(str_at(it, "state", NULL), "closed");
			ck_assert_str_eq(str_at(it, "name", NULL), "web-1");
			ck_assert_str_eq(str_at(it, "events", NULL), "14");
		} else {
			ck_assert_str_eq(str_at(it, "state", NULL), "open");
		}
	}
	json_object_put(o);

	snprintf(checked, sizeof(checked), "%s/checked", dir);
	ck_assert_int_eq(mkdir(checked, 0755), 0);
	ck_assert_int_eq(reqs[5].r.status, 200);
	o = parse(&reqs[5].r);
	ck_assert_str_eq(str_at(o, "pod", "uid"), UID_NEW); /* the newest */
	json_object_put(o);
	ck_assert_int_eq(scn_write(checked, "new.json", reqs[5].r.body, reqs[5].r.len), 0);
	ck_assert_int_eq(reqs[6].r.status, 200);
	o = parse(&reqs[6].r);
	ck_assert_str_eq(str_at(o, "pod", "uid"), UID_OLD);
	json_object_put(o);
	ck_assert_int_eq(scn_write(checked, "old.json", reqs[6].r.body, reqs[6].r.len), 0);

	ck_assert_int_eq(reqs[7].r.status, 404);
	ck_assert_int_eq(reqs[8].r.status, 405);
	ck_assert_str_eq(reqs[8].r.allow, "GET, HEAD");
	ck_assert_int_eq(reqs[9].r.status, 405);
	ck_assert_int_eq(reqs[10].r.status, 404);
	ck_assert_int_eq(reqs[11].r.status, 200);
	o = parse(&reqs[11].r);
	ck_assert_str_eq(str_at(o, "pod", "uid"), UID_ANON);
	json_object_put(o);
	ck_assert_int_eq(scn_write(checked, "anon.json", reqs[11].r.body, reqs[11].r.len), 0);
	/* Headers beyond the per-connection memory are refused... */
	ck_assert_int_ge(reqs[12].r.status, 400);
	ck_assert_int_lt(reqs[12].r.status, 500);
	ck_assert_int_eq(reqs[13].r.status, 404);
	/* ...and the server carries on. */
	ck_assert_int_eq(reqs[14].r.status, 200);

	ck_assert_int_eq(scn_validate(checked), 0);

	/* namespace, with the entries' detail */
	ck_assert_int_eq(reqs[15].r.status, 200);
	o = parse(&reqs[15].r);
	ck_assert(json_object_object_get_ex(o, "timelines", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 2);
	for (size_t i = 0; i < 2; i++) {
		struct json_object *it = json_object_array_get_idx(arr, i), *v;
		const char *uid = str_at(it, "uid", NULL);

		ck_assert_str_eq(str_at(it, "namespace", NULL), "shop");
		ck_assert_str_eq(str_at(it, "owner", "kind"), "ReplicaSet");
		ck_assert_str_eq(str_at(it, "owner", "name"), "web-5d8f");
		ck_assert(json_object_object_get_ex(it, "complete", &v) &&
			  json_object_is_type(v, json_type_boolean));
		ck_assert(json_object_object_get_ex(it, "deletion", &v));
		if (strcmp(uid, UID_OLD) == 0) {
			int64_t del;

			ck_assert(json_object_is_type(v, json_type_string));
			ck_assert_int_eq(tl_time_parse(json_object_get_string(v), &del), 0);
			ck_assert_int_ge(del, t0);
			ck_assert_int_lt(del, t0 + 600 * SCN_S);
			/* the closed one: counted by termline-findings */
			ck_assert(json_object_object_get_ex(it, "failedRequests", &v) &&
				  json_object_is_type(v, json_type_int));
			ck_assert_int_ge(json_object_get_int64(v), 1);
		} else {
			ck_assert_str_eq(uid, UID_NEW);
			ck_assert(v == NULL); /* no deletion yet */
			ck_assert(json_object_object_get_ex(it, "failedRequests", &v) && v == NULL);
		}
	}
	json_object_put(o);
	/* owner: the two web-1 Pods, not the unnamed one; without detail the
	 * entries are as before */
	ck_assert_int_eq(reqs[16].r.status, 200);
	o = parse(&reqs[16].r);
	ck_assert(json_object_object_get_ex(o, "timelines", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 2);
	ck_assert(!json_object_object_get_ex(json_object_array_get_idx(arr, 0), "owner", NULL));
	json_object_put(o);
	/* since/until: on the deletion (the old Pod's is near t0), else the
	 * start (the new one t0+600 s, the unnamed one t0+700 s) */
	ck_assert_int_eq(reqs[17].r.status, 200);
	o = parse(&reqs[17].r);
	ck_assert(json_object_object_get_ex(o, "timelines", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 1);
	ck_assert_str_eq(str_at(json_object_array_get_idx(arr, 0), "uid", NULL), UID_ANON);
	json_object_put(o);
	ck_assert_int_eq(reqs[18].r.status, 200);
	o = parse(&reqs[18].r);
	ck_assert(json_object_object_get_ex(o, "timelines", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 2);
	json_object_put(o);
	ck_assert_int_eq(reqs[19].r.status, 400);
	ck_assert_int_eq(reqs[20].r.status, 400);
	ck_assert_int_eq(reqs[21].r.status, 200);
	o = parse(&reqs[21].r);
	ck_assert(json_object_object_get_ex(o, "timelines", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 0);
	json_object_put(o);

	for (size_t i = 0; i < n; i++)
		free(reqs[i].r.body);
	tl_http_free(h);
	tl_timelines_free(t);
	tl_loop_free(loop);
	scn_rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(test_http_bad_listen)
{
	struct tl_loop *loop;
	struct tl_http *h = NULL;
	struct tl_http_config hc = { .listen = "not-an-address" };
	char err[256] = "";

	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_http_new(&hc, loop, NULL, &h, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(h);
	ck_assert_ptr_nonnull(strstr(err, "not-an-address"));
	tl_loop_free(loop);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("timeline-http");
	TCase *tc = tcase_create("http");
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_http_api);
	tcase_add_test(tc, test_http_bad_listen);
	suite_add_tcase(s, tc);
	failed = tl_check_run(s);
	curl_global_cleanup();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
