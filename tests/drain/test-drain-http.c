/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/pods/{uid}/drained on the real HTTP server and loop: answers as
 * the facts arrive, 504 at the timeout, 429 past the cap, a wait freed when
 * its client leaves, waits answered when the server stops, and the
 * drain.wait_started / drain.wait_ended events. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "drain-agent.h"
#include "event.h"
#include "http-api.h"
#include "http-server.h"
#include "loop.h"
#include "macro.h"
#include "../check-run.h"

#define UID "0d7a1b2c-0000-4000-8000-00000000d1a1"

struct rec {
	char kinds[32][48];
	char outcome[32][32];
	char held_by[32][32];
	char uid[32][TL_UID_MAX];
	int n;
};

struct fixture {
	struct tl_loop *loop;
	struct tl_drain_agent *d;
	struct tl_http *h;
	struct rec rec;
	bool synced;
	int polls;
	int seeds;
	bool seed_listed; /* the seed finds the Pod listed, ready */
};

static void rec_emit(void *ud, struct tl_event *ev)
{
	struct fixture *f = ud;
	struct json_object *o = tl_event_to_json(ev, true), *v;
	int i = f->rec.n;

	if (i < 32) {
		snprintf(f->rec.kinds[i], sizeof(f->rec.kinds[i]), "%s", ev->type);
		snprintf(f->rec.uid[i], sizeof(f->rec.uid[i]), "%s", ev->pod_uid);
		f->rec.outcome[i][0] = f->rec.held_by[i][0] = '\0';
		if (o && json_object_object_get_ex(o, "outcome", &v))
			snprintf(f->rec.outcome[i], 32, "%s", json_object_get_string(v));
		if (o && json_object_object_get_ex(o, "heldBy", &v))
			snprintf(f->rec.held_by[i], 32, "%s", json_object_get_string(v));
		ck_assert_msg(o != NULL, "event %s does not encode", ev->type);
		f->rec.n++;
	}
	json_object_put(o);
	tl_event_clear(ev);
}

static bool fx_synced(void *ud)
{
	return ((struct fixture *)ud)->synced;
}

static bool fx_known(void *ud _unused_, const char *uid)
{
	return strcmp(uid, "ffffffff-0000-4000-8000-000000000000") != 0;
}

static void fx_poll(void *ud)
{
	((struct fixture *)ud)->polls++;
}

static void fx_seed(void *ud, const char *uid)
{
	struct fixture *f = ud;

	f->seeds++;
	if (f->seed_listed)
		tl_drain_agent_endpoint(f->d, uid, "web-s1", "web", true, true, false, tl_now_real_ns());
}

static void setup(struct fixture *f, unsigned max_waiters)
{
	struct tl_drain_agent_config dc = {
		.synced = fx_synced, .pod_known = fx_known, .poll = fx_poll, .seed = fx_seed, .ud = f,
		.emit = { .emit = rec_emit, .userdata = f }, .max_waiters = max_waiters,
	};
	struct tl_http_config hc = { .listen = "127.0.0.1:0" };
	char err[256] = "";

	memset(f, 0, sizeof(*f));
	f->synced = true;
	ck_assert_int_eq(tl_loop_new(&f->loop), 0);
	ck_assert_int_eq(tl_drain_agent_new(&dc, f->loop, &f->d), 0);
	hc.drain = f->d;
	ck_assert_msg(tl_http_new(&hc, f->loop, NULL, &f->h, err, sizeof(err)) == 0, "%s", err);
}

static void teardown(struct fixture *f)
{
	tl_http_free(f->h);
	tl_drain_agent_free(f->d);
	tl_loop_free(f->loop);
}

static void fact(struct fixture *f, const char *type, const char *slice, bool ready, bool serving,
		 bool terminating)
{
	struct tl_event ev;

	ck_assert_int_eq(tl_event_init(&ev, TL_SRC_API, type, tl_now_real_ns()), 0);
	snprintf(ev.pod_uid, sizeof(ev.pod_uid), "%s", UID);
	if (slice) {
		ck_assert_int_eq(tl_event_set_text(&ev, TL_F_EP_SERVICE, "web"), 0);
		ck_assert_int_eq(tl_event_set_text(&ev, TL_F_EP_SLICE, slice), 0);
	}
	if (strcmp(type, "endpoint.condition") == 0) {
		ck_assert_int_eq(tl_event_set_i(&ev, TL_F_EP_READY, ready), 0);
		ck_assert_int_eq(tl_event_set_i(&ev, TL_F_EP_SERVING, serving), 0);
		ck_assert_int_eq(tl_event_set_i(&ev, TL_F_EP_TERMINATING, terminating), 0);
	}
	if (strcmp(type, "pod.deletion_requested") == 0)
		ck_assert_int_eq(tl_event_set_i(&ev, TL_F_DELREQ_GRACE, 30), 0);
	tl_drain_agent_observe(f->d, &ev);
	tl_event_clear(&ev);
}

struct client {
	int fd;
	char buf[8192];
	size_t len;
	bool done;
	int status;
	uint64_t started, ended;
};

static void client_start(struct fixture *f, struct client *c, const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(tl_http_port(f->h)) };
	char req[512];
	int n;

	memset(c, 0, sizeof(*c));
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(c->fd, 0);
	ck_assert(connect(c->fd, (struct sockaddr *)&a, sizeof(a)) == 0 || errno == EINPROGRESS);
	/* let the server accept before writing */
	for (int i = 0; i < 5; i++)
		tl_loop_run_once(f->loop, 5);
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
	ck_assert_int_eq(send(c->fd, req, (size_t)n, MSG_NOSIGNAL), n);
	c->started = tl_now_mono_ms();
}

static void client_step(struct client *c)
{
	ssize_t n;

	if (c->done || c->fd < 0)
		return;
	n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
	if (n > 0) {
		c->len += (size_t)n;
		c->buf[c->len] = '\0';
		return;
	}
	if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
		c->done = true;
		c->ended = tl_now_mono_ms();
		c->status = c->len > 12 ? atoi(c->buf + 9) : 0;
		close(c->fd);
		c->fd = -1;
	}
}

/* Runs the loop until every client is done or ms pass. */
static void run_until_done(struct fixture *f, struct client **cs, int n, int ms)
{
	uint64_t end = tl_now_mono_ms() + (uint64_t)ms;

	for (;;) {
		bool all = true;

		tl_loop_run_once(f->loop, 5);
		for (int i = 0; i < n; i++) {
			client_step(cs[i]);
			all = all && cs[i]->done;
		}
		if (all || tl_now_mono_ms() >= end)
			return;
	}
}

static void run_for(struct fixture *f, int ms)
{
	uint64_t end = tl_now_mono_ms() + (uint64_t)ms;

	while (tl_now_mono_ms() < end)
		tl_loop_run_once(f->loop, 5);
}

static int count_kind(const struct fixture *f, const char *kind, const char *outcome)
{
	int n = 0;

	for (int i = 0; i < f->rec.n; i++)
		if (strcmp(f->rec.kinds[i], kind) == 0 && (!outcome || strcmp(f->rec.outcome[i], outcome) == 0))
			n++;
	return n;
}

START_TEST(bad_requests)
{
	struct fixture f;
	struct client c;
	struct client *cs[] = { &c };
	static const struct {
		const char *path;
		int status;
	} cases[] = {
		{ "/v1/pods/" UID "/other", 404 },
		{ "/v1/pods/" UID, 404 },
		{ "/v1/pods/not_a_uid!/drained", 400 },
		{ "/v1/pods/" UID "/drained?quiet=soon", 400 },
		{ "/v1/pods/" UID "/drained?timeout=2h", 400 },
		/* read whole and once: no hexadecimal, no value cut at %00, no
		 * parameter twice */
		{ "/v1/pods/" UID "/drained?quiet=0x10", 400 },
		{ "/v1/pods/" UID "/drained?quiet=1s%00junk", 400 },
		{ "/v1/pods/" UID "/drained?timeout=5s%00", 400 },
		{ "/v1/pods/" UID "/drained?quiet=1s&quiet=30m", 400 },
		{ "/v1/pods/" UID "/drained?timeout=1s&timeout=1s", 400 },
		{ "/v1/pods/ffffffff-0000-4000-8000-000000000000/drained", 404 },
	};

	setup(&f, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		client_start(&f, &c, cases[i].path);
		run_until_done(&f, cs, 1, 2000);
		ck_assert_msg(c.done && c.status == cases[i].status, "%s: %d", cases[i].path, c.status);
	}
	f.synced = false;
	client_start(&f, &c, "/v1/pods/" UID "/drained");
	run_until_done(&f, cs, 1, 2000);
	ck_assert_int_eq(c.status, 503);
	ck_assert_int_eq(f.rec.n, 0); /* refused requests are no waits */
	teardown(&f);
}
END_TEST

START_TEST(answers_when_drained)
{
	struct fixture f;
	struct client c;
	struct client *cs[] = { &c };

	setup(&f, 0);
	fact(&f, "endpoint.condition", "web-a1", true, true, false);
	client_start(&f, &c, "/v1/pods/" UID "/drained?quiet=300ms&timeout=10s");
	run_until_done(&f, cs, 1, 300);
	ck_assert(!c.done); /* not deleted yet: pending */
	ck_assert_int_eq(tl_drain_agent_waiters(f.d), 1);
	ck_assert_int_eq(count_kind(&f, "drain.wait_started", NULL), 1);
	fact(&f, "pod.deletion_requested", NULL, false, false, false);
	run_until_done(&f, cs, 1, 300);
	ck_assert(!c.done); /* still listed, ready */
	fact(&f, "endpoint.condition", "web-a1", false, true, true);
	{
		uint64_t out = tl_now_mono_ms();

		run_until_done(&f, cs, 1, 5000);
		ck_assert(c.done);
		ck_assert_int_eq(c.status, 200);
		/* quiet counted from the endpoint change, not from the request */
		ck_assert_uint_ge(c.ended - out, 290);
		ck_assert_uint_lt(c.ended - out, 2000);
	}
	ck_assert_ptr_nonnull(strstr(c.buf, "\"drained\":true"));
	ck_assert_ptr_nonnull(strstr(c.buf, "\"unmet\":\"none\""));
	ck_assert_ptr_nonnull(strstr(c.buf, "\"endpointSlice\":\"web-a1\""));
	ck_assert_ptr_nonnull(strstr(c.buf, "\"summary\":\"endpoint out of rotation in 1 of 1 slice(s)"));
	ck_assert_int_eq(count_kind(&f, "drain.wait_ended", "drained"), 1);
	ck_assert_int_eq(tl_drain_agent_waiters(f.d), 0);
	ck_assert_int_gt(f.polls, 0); /* kernel counters read while waiting */

	/* already drained: answered at once */
	client_start(&f, &c, "/v1/pods/" UID "/drained?quiet=100ms");
	run_until_done(&f, cs, 1, 2000);
	ck_assert_int_eq(c.status, 200);
	ck_assert_uint_lt(c.ended - c.started, 500);
	ck_assert_int_eq(count_kind(&f, "drain.wait_ended", "drained"), 2);
	teardown(&f);
}
END_TEST

START_TEST(connection_holds_the_gate)
{
	struct fixture f;
	struct client c;
	struct client *cs[] = { &c };
	uint64_t last;

	setup(&f, 0);
	fact(&f, "pod.deletion_requested", NULL, false, false, false);
	fact(&f, "endpoint.condition", "web-a1", false, true, true);
	/* a connection every 200 ms (a fifth of quiet: room for a busy machine) */
	client_start(&f, &c, "/v1/pods/" UID "/drained?quiet=1s&timeout=20s");
	for (int i = 0; i < 4; i++) {
		run_until_done(&f, cs, 1, 200);
		ck_assert(!c.done);
		tl_drain_agent_connection(f.d, UID, 1, tl_now_real_ns());
	}
	last = tl_now_mono_ms();
	run_until_done(&f, cs, 1, 10000);
	ck_assert_int_eq(c.status, 200);
	ck_assert_uint_ge(c.ended - last, 990);
	ck_assert_ptr_nonnull(strstr(c.buf, "\"connections\":4"));
	ck_assert_ptr_nonnull(strstr(c.buf, "\"heldBy\":\"traffic\""));
	ck_assert_int_eq(count_kind(&f, "drain.wait_ended", "drained"), 1);
	teardown(&f);
}
END_TEST

START_TEST(timeout_names_the_condition)
{
	struct fixture f;
	struct client c;
	struct client *cs[] = { &c };

	setup(&f, 0);
	fact(&f, "endpoint.condition", "web-a1", true, true, false);
	fact(&f, "pod.deletion_requested", NULL, false, false, false);
	client_start(&f, &c, "/v1/pods/" UID "/drained?timeout=400ms");
	run_until_done(&f, cs, 1, 5000);
	ck_assert_int_eq(c.status, 504);
	ck_assert_uint_ge(c.ended - c.started, 390);
	ck_assert_ptr_nonnull(strstr(c.buf, "\"unmet\":\"endpoint\""));
	ck_assert_ptr_nonnull(strstr(c.buf, "still routed by web-a1"));
	ck_assert_int_eq(count_kind(&f, "drain.wait_ended", "timeout"), 1);
	teardown(&f);
}
END_TEST

START_TEST(cap_and_client_leaving)
{
	struct fixture f;
	struct client a, b, c;
	struct client *cs[] = { &c };

	setup(&f, 2);
	client_start(&f, &a, "/v1/pods/" UID "/drained?timeout=60s");
	client_start(&f, &b, "/v1/pods/" UID "/drained?timeout=60s");
	run_for(&f, 100);
	ck_assert_int_eq(tl_drain_agent_waiters(f.d), 2);
	client_start(&f, &c, "/v1/pods/" UID "/drained?timeout=60s");
	run_until_done(&f, cs, 1, 2000);
	ck_assert_int_eq(c.status, 429);
	/* a client that leaves frees its wait at once, not at its timeout */
	close(a.fd);
	a.fd = -1;
	run_for(&f, 200);
	ck_assert_int_eq(tl_drain_agent_waiters(f.d), 1);
	ck_assert_int_eq(count_kind(&f, "drain.wait_ended", "abandoned"), 1);
	client_start(&f, &c, "/v1/pods/" UID "/drained?timeout=60s");
	run_for(&f, 100);
	ck_assert_int_eq(tl_drain_agent_waiters(f.d), 2);
	close(c.fd);
	/* stopping the server answers what is still pending */
	tl_http_free(f.h);
	f.h = NULL;
	{
		struct client *bs[] = { &b };

		run_until_done(&f, bs, 1, 2000);
		ck_assert(b.done);
		ck_assert(b.status == 503 || b.status == 0);
	}
	ck_assert_int_eq(tl_drain_agent_waiters(f.d), 0);
	ck_assert_int_eq(count_kind(&f, "drain.wait_started", NULL), 3);
	ck_assert_int_eq(count_kind(&f, "drain.wait_ended", NULL), 3);
	teardown(&f);
}
END_TEST

/* A client that closes only its sending side after the request (as some
 * HTTP/1.0-era clients do) still waits and gets its answer: an interim 102
 * at once, then the drained answer; its wait is not taken for abandoned. */
START_TEST(half_closed_client_answered)
{
	struct fixture f;
	struct client c;
	struct client *cs[] = { &c };

	setup(&f, 0);
	fact(&f, "endpoint.condition", "web-a1", true, true, false);
	client_start(&f, &c, "/v1/pods/" UID "/drained?quiet=100ms&timeout=10s");
	ck_assert_int_eq(shutdown(c.fd, SHUT_WR), 0);
	run_until_done(&f, cs, 1, 300);
	ck_assert(!c.done);
	ck_assert_int_eq(tl_drain_agent_waiters(f.d), 1);
	ck_assert_int_eq(count_kind(&f, "drain.wait_ended", "abandoned"), 0);
	ck_assert_ptr_nonnull(strstr(c.buf, "HTTP/1.1 102 Processing\r\n\r\n"));
	fact(&f, "pod.deletion_requested", NULL, false, false, false);
	fact(&f, "endpoint.condition", "web-a1", false, true, true);
	run_until_done(&f, cs, 1, 5000);
	ck_assert(c.done);
	ck_assert_msg(strstr(c.buf, "\r\n\r\nHTTP/1.1 200 OK\r\n") != NULL, "%s", c.buf);
	ck_assert_ptr_nonnull(strstr(c.buf, "\"drained\":true"));
	ck_assert_int_eq(count_kind(&f, "drain.wait_ended", "drained"), 1);
	teardown(&f);
}
END_TEST

/* After an agent restart the first LIST reports no endpoint change: the
 * wait reads the slices held now instead of taking "no slice" for "out of
 * every slice". */
START_TEST(seeded_after_restart)
{
	struct fixture f;
	struct client c;
	struct client *cs[] = { &c };

	setup(&f, 0);
	f.seed_listed = true;
	fact(&f, "pod.deletion_requested", NULL, false, false, false);
	client_start(&f, &c, "/v1/pods/" UID "/drained?quiet=100ms&timeout=10s");
	run_until_done(&f, cs, 1, 500);
	ck_assert(!c.done); /* still ready in web-s1 */
	ck_assert_int_eq(f.seeds, 1);
	fact(&f, "endpoint.condition", "web-s1", false, true, true);
	run_until_done(&f, cs, 1, 5000);
	ck_assert_int_eq(c.status, 200);
	ck_assert_ptr_nonnull(strstr(c.buf, "\"endpointSlice\":\"web-s1\""));
	/* seeded once: the next wait does not read the model again */
	client_start(&f, &c, "/v1/pods/" UID "/drained?quiet=100ms");
	run_until_done(&f, cs, 1, 2000);
	ck_assert_int_eq(c.status, 200);
	ck_assert_int_eq(f.seeds, 1);
	teardown(&f);
}
END_TEST

/* Durations are read whole and in the documented form only: no
 * hexadecimal (strtod took 0x10 for 16 s), exponent, sign or space. */
START_TEST(durations)
{
	static const struct {
		const char *in;
		int64_t ms;
		int r;
	} cases[] = {
		{ "1s", 1000, 0 }, { "1.5s", 1500, 0 }, { "250ms", 250, 0 }, { "2m", 120000, 0 },
		{ "3", 3000, 0 }, { "0", 0, 0 }, { "3600s", 3600000, 0 }, { "0.0004s", 0, 0 },
		{ "", 0, -EINVAL }, { "-1s", 0, -EINVAL }, { "1h", 0, -EINVAL }, { "61m", 0, -EINVAL },
		{ "nan", 0, -EINVAL }, { "1 s", 0, -EINVAL }, { "0x10", 0, -EINVAL },
		{ "1e3", 0, -EINVAL }, { "+1s", 0, -EINVAL }, { " 1s", 0, -EINVAL },
		{ ".5s", 0, -EINVAL }, { "1.s", 0, -EINVAL }, { "99999999999ms", 0, -EINVAL },
		{ "3600.0001s", 0, -EINVAL }, { "1sec", 0, -EINVAL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t ms = -1;

		ck_assert_msg(tl_http_parse_duration(cases[i].in, strlen(cases[i].in), &ms) == cases[i].r,
			      "%s", cases[i].in);
		if (!cases[i].r)
			ck_assert_int_eq(ms, cases[i].ms);
		else
			ck_assert_int_eq(ms, -1); /* untouched on failure */
	}
	/* a NUL inside is no duration */
	{
		int64_t ms = -1;

		ck_assert_int_eq(tl_http_parse_duration("1s\0x", 4, &ms), -EINVAL);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("drain-http");
	TCase *tc = tcase_create("http");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, bad_requests);
	tcase_add_test(tc, answers_when_drained);
	tcase_add_test(tc, connection_holds_the_gate);
	tcase_add_test(tc, timeout_names_the_condition);
	tcase_add_test(tc, cap_and_client_leaving);
	tcase_add_test(tc, half_closed_client_answered);
	tcase_add_test(tc, seeded_after_restart);
	tcase_add_test(tc, durations);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? 1 : 0;
}
