/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "clock.h"
#include "errmsg.h"
#include "event.h"
#include "json-util.h"
#include "loop.h"
#include "metrics.h"
#include "macro.h"
#include "signals.h"
#include "../check-run.h"

/* ---- clock ---- */

static const struct {
	const char *in;
	int64_t ns;
	const char *canonical;
} time_cases[] = {
	{ "1970-01-01T00:00:00Z", 0, "1970-01-01T00:00:00.000000000Z" },
	{ "2026-11-29T21:14:14.123456789Z", 1795986854123456789LL, "2026-11-29T21:14:14.123456789Z" },
	{ "2026-11-29T21:14:14.5Z", 1795986854500000000LL, "2026-11-29T21:14:14.500000000Z" },
	{ "2026-11-29T22:14:14.000000001+01:00", 1795986854000000001LL,
	  "2026-11-29T21:14:14.000000001Z" },
	{ "2026-11-29T21:14:14.1234567891234Z", 1795986854123456789LL,
	  "2026-11-29T21:14:14.123456789Z" },
};

START_TEST(time_roundtrip)
{
	int64_t ns = -1;
	char buf[TL_TIME_STRLEN];

	ck_assert_int_eq(tl_time_parse(time_cases[_i].in, &ns), 0);
	ck_assert_int_eq(ns, time_cases[_i].ns);
	ck_assert_str_eq(tl_time_format(ns, buf), time_cases[_i].canonical);
}
END_TEST

static const char *const bad_times[] = {
	"", "2026", "2026-13-01T00:00:00Z", "2026-11-29T21:14:14", "2026-11-29T21:14:14.Z",
	"2026-11-29T25:00:00Z", "2026-11-29T21:14:14Zjunk", "2026-11-29T21:14:14+1:00",
	"2999-01-01T00:00:00Z", /* past int64 nanoseconds: rejected, not wrapped */
};

START_TEST(time_rejects)
{
	int64_t ns = 42;

	ck_assert_int_eq(tl_time_parse(bad_times[_i], &ns), -EINVAL);
	ck_assert_int_eq(ns, 42);
}
END_TEST

START_TEST(clock_offset)
{
	struct tl_clock c = { 0 };
	int64_t real, boot;

	ck_assert_int_eq(tl_clock_sample(&c), 0);
	real = tl_now_real_ns();
	boot = tl_now_boot_ns();
	/* The converted boot time must land within a second of realtime. */
	ck_assert_int_lt(llabs(tl_clock_boot_to_real(&c, (uint64_t)boot) - real), 1000000000LL);
	ck_assert_int_ge(c.uncertainty_ns, 0);
	ck_assert_int_eq(c.samples, 1);
}
END_TEST

/* ---- events ---- */

START_TEST(event_json_roundtrip)
{
	struct tl_event ev, back;
	struct json_object *o, *v;

	ck_assert_int_eq(tl_event_init_kind(&ev, TL_KIND_PROCESS_SIGNAL, TL_SRC_KERNEL,
					    1795986854000000007LL), 0);
	strcpy(ev.pod_uid, "0b6a1c2e-0000-4000-8000-000000000001");
	strcpy(ev.container, "app");
	ck_assert_int_eq(tl_event_set_text(&ev, TL_F_SIG_SIGNAL, "SIGTERM"), 0);
	ck_assert_int_eq(tl_event_set_i(&ev, TL_F_SIG_SIGNO, 15), 0);

	o = tl_event_to_json(&ev, false);
	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_object_get_ex(o, "time", &v));
	ck_assert_str_eq(json_object_get_string(v), "2026-11-29T21:14:14.000000007Z");
	ck_assert(json_object_object_get_ex(o, "type", &v));
	ck_assert_str_eq(json_object_get_string(v), "process.signal");
	ck_assert(!json_object_object_get_ex(o, "podUid", &v));
	json_object_put(o);

	o = tl_event_to_json(&ev, true);
	ck_assert(json_object_object_get_ex(o, "containerId", &v));
	ck_assert(json_object_is_type(v, json_type_null));
	ck_assert_int_eq(tl_event_from_json(o, &back), 0);
	ck_assert_int_eq(back.time_ns, ev.time_ns);
	ck_assert_int_eq(back.source, TL_SRC_KERNEL);
	ck_assert_str_eq(back.type, "process.signal");
	ck_assert_str_eq(back.pod_uid, ev.pod_uid);
	ck_assert_str_eq(back.container, "app");
	ck_assert_str_eq(back.container_id, "");
	{
		int64_t signo;

		ck_assert(tl_event_get_i(&back, TL_F_SIG_SIGNO, &signo));
		ck_assert_int_eq(signo, 15);
	}
	json_object_put(o);
	tl_event_clear(&back);
	tl_event_clear(&ev);
}
END_TEST

START_TEST(event_from_json_rejects)
{
	static const char *const bad[] = {
		"[]",
		"{\"source\":\"api\",\"type\":\"pod.deleted\"}",
		"{\"time\":\"2026-11-29T21:14:14Z\",\"source\":\"radio\",\"type\":\"pod.deleted\"}",
		"{\"time\":\"2026-11-29T21:14:14Z\",\"source\":\"api\",\"type\":\"\"}",
		"{\"time\":\"2026-11-29T21:14:14Z\",\"source\":\"api\",\"type\":\"x\",\"container\":7}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct json_object *o = json_tokener_parse(bad[i]);
		struct tl_event ev = { .time_ns = 99 };

		ck_assert_msg(tl_event_from_json(o, &ev) == -EINVAL, "accepted %s", bad[i]);
		ck_assert_int_eq(ev.time_ns, 99);
		json_object_put(o);
	}
}
END_TEST

/* ---- loop ---- */

struct tick_state {
	int fired;
	struct tl_timer *self;
	bool free_self;
};

static void on_tick(struct tl_loop *loop, struct tl_timer *t, void *ud)
{
	struct tick_state *st = ud;

	st->fired++;
	if (st->free_self && st->fired == 2) {
		tl_timer_free(t);
		st->self = NULL;
	}
	if (st->fired >= 3)
		tl_loop_quit(loop, 7);
}

START_TEST(loop_timer_periodic)
{
	struct tl_loop *loop;
	struct tick_state st = { 0 };

	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_loop_add_timer(loop, 1, 1, on_tick, &st, &st.self), 0);
	ck_assert_int_eq(tl_loop_run(loop), 7);
	ck_assert_int_eq(st.fired, 3);
	tl_timer_free(st.self);
	tl_loop_free(loop);
}
END_TEST

START_TEST(loop_timer_free_inside_callback)
{
	struct tl_loop *loop;
	struct tick_state st = { .free_self = true };

	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_loop_add_timer(loop, 1, 1, on_tick, &st, &st.self), 0);
	/* After freeing itself the timer never fires again: three bounded
	 * iterations see exactly two ticks. */
	for (int i = 0; i < 5; i++)
		tl_loop_run_once(loop, 20);
	ck_assert_int_eq(st.fired, 2);
	ck_assert_ptr_null(st.self);
	tl_loop_free(loop);
}
END_TEST

static int on_pipe(struct tl_loop *loop _unused_, int fd, uint32_t events _unused_, void *ud)
{
	char buf[16];
	int *got = ud;
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n > 0)
		*got += (int)n;
	return 0;
}

START_TEST(loop_io)
{
	struct tl_loop *loop;
	int p[2], got = 0;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_loop_add_io(loop, p[0], EPOLLIN, on_pipe, &got), 0);
	ck_assert_int_eq(tl_loop_add_io(loop, p[0], EPOLLIN, on_pipe, &got), -EEXIST);
	ck_assert_int_eq(write(p[1], "abc", 3), 3);
	ck_assert_int_eq(tl_loop_run_once(loop, 1000), 1);
	ck_assert_int_eq(got, 3);
	ck_assert_int_eq(tl_loop_del_io(loop, p[0]), 0);
	ck_assert_int_eq(write(p[1], "de", 2), 2);
	ck_assert_int_eq(tl_loop_run_once(loop, 10), 0);
	ck_assert_int_eq(got, 3);
	ck_assert_int_eq(tl_loop_del_io(loop, p[0]), -ENOENT);
	tl_loop_free(loop);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* Deferred callbacks: after the iteration's callbacks, once each however
 * often asked, in order, none outside a dispatch, a cancelled one never. */
struct defer_state {
	int order[8], n, reads;
	bool cancel_b;
};

static void defer_a(struct tl_loop *loop _unused_, void *ud)
{
	struct defer_state *st = ud;

	st->order[st->n++] = 1;
}

static void defer_b(struct tl_loop *loop _unused_, void *ud)
{
	struct defer_state *st = ud;

	st->order[st->n++] = 2;
}

static int on_pipe_defer(struct tl_loop *loop, int fd, uint32_t events _unused_, void *ud)
{
	struct defer_state *st = ud;
	char buf[16];

	ck_assert_int_gt(read(fd, buf, sizeof(buf)), 0);
	st->reads++;
	/* nothing deferred has run yet in this iteration */
	ck_assert_int_eq(st->n, 0);
	ck_assert_int_eq(tl_loop_defer(loop, defer_a, st), 0);
	ck_assert_int_eq(tl_loop_defer(loop, defer_b, st), 0);
	ck_assert_int_eq(tl_loop_defer(loop, defer_a, st), 0);
	if (st->cancel_b)
		tl_loop_cancel_defer(loop, defer_b, st);
	return 0;
}

START_TEST(loop_defer)
{
	struct tl_loop *loop;
	struct defer_state st = { 0 };
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_loop_defer(loop, defer_a, &st), -EAGAIN);
	ck_assert_int_eq(tl_loop_add_io(loop, p[0], EPOLLIN, on_pipe_defer, &st), 0);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	ck_assert_int_eq(tl_loop_run_once(loop, 1000), 1);
	ck_assert_int_eq(st.reads, 1);
	ck_assert_int_eq(st.n, 2);
	ck_assert_int_eq(st.order[0], 1);
	ck_assert_int_eq(st.order[1], 2);
	/* an iteration with nothing to do runs nothing deferred */
	ck_assert_int_eq(tl_loop_run_once(loop, 10), 0);
	ck_assert_int_eq(st.n, 2);
	st.n = 0;
	st.cancel_b = true;
	ck_assert_int_eq(write(p[1], "y", 1), 1);
	ck_assert_int_eq(tl_loop_run_once(loop, 1000), 1);
	ck_assert_int_eq(st.n, 1);
	ck_assert_int_eq(st.order[0], 1);
	tl_loop_free(loop);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* ---- metrics ---- */

START_TEST(metrics_render)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	tl_metrics_reset();
	tl_metric_describe("termline_events_total", TL_METRIC_COUNTER, "Events recorded.");
	tl_metric_add("termline_events_total", "type=\"pod.deleted\",source=\"api\"", 2);
	tl_metric_add("termline_events_total", "type=\"pod.deleted\",source=\"api\"", 1);
	tl_metric_set("termline_timelines_open", NULL, 4);
	ck_assert_int_eq(tl_metric_get("termline_events_total", "type=\"pod.deleted\",source=\"api\""), 3);
	f = open_memstream(&buf, &len);
	ck_assert_int_eq(tl_metrics_render(f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE termline_events_total counter\n"));
	ck_assert_ptr_nonnull(strstr(buf, "termline_events_total{type=\"pod.deleted\",source=\"api\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(buf, "# TYPE termline_timelines_open gauge\ntermline_timelines_open 4\n"));
	free(buf);
	tl_metrics_reset();
	ck_assert_int_eq(tl_metric_get("termline_events_total", "type=\"pod.deleted\",source=\"api\""), 0);
}
END_TEST

START_TEST(signal_names_by_constant)
{
	char buf[32];
	int no = 0;

	ck_assert_str_eq(tl_signal_name(SIGTERM, buf, sizeof(buf)), "SIGTERM");
	/* Aliases are read, never written: 6 is SIGABRT, SIGIO is not SIGPOLL. */
	ck_assert_str_eq(tl_signal_name(SIGIOT, buf, sizeof(buf)), "SIGABRT");
	ck_assert_str_eq(tl_signal_name(SIGPOLL, buf, sizeof(buf)), "SIGIO");
	ck_assert_str_eq(tl_signal_name(35, buf, sizeof(buf)), "SIGRTMIN+3");
	ck_assert_ptr_null(tl_signal_name(35, NULL, 0));
	ck_assert_ptr_null(tl_signal_name(0, buf, sizeof(buf)));
	ck_assert_ptr_null(tl_signal_name(65, buf, sizeof(buf)));

	ck_assert_int_eq(tl_signal_lookup("usr1", 4, &no), 0);
	ck_assert_int_eq(no, SIGUSR1);
	ck_assert_int_eq(tl_signal_lookup("SigTerm,KILL", 7, &no), 0);
	ck_assert_int_eq(no, SIGTERM);
	ck_assert_int_eq(tl_signal_lookup("IOT", 3, &no), 0);
	ck_assert_int_eq(no, SIGABRT);
	ck_assert_int_eq(tl_signal_lookup("SIG", 3, &no), -EINVAL);
	ck_assert_int_eq(tl_signal_lookup("TERMX", 5, &no), -EINVAL);
	ck_assert_int_eq(tl_signal_lookup("RTMIN", 5, &no), -EINVAL);
}
END_TEST

/* The default set's text (--help) names exactly the default mask. */
START_TEST(signal_default_text_is_the_mask)
{
	const char *p = TL_SIGNALS_DEFAULT_TEXT;
	uint64_t mask = 0;

	ck_assert_str_eq(p, "TERM,KILL,INT,QUIT,HUP,USR1,USR2");
	while (*p) {
		size_t n = strcspn(p, ",");
		int no;

		ck_assert_int_eq(tl_signal_lookup(p, n, &no), 0);
		mask |= TL_SIGNAL_BIT(no);
		p += n + (p[n] == ',');
	}
	ck_assert_uint_eq(mask, TL_SIGNALS_DEFAULT);
	ck_assert(TL_SIGNALS_DEFAULT & TL_SIGNAL_BIT(SIGTERM));
	ck_assert(!(TL_SIGNALS_DEFAULT & TL_SIGNAL_BIT(SIGCHLD)));
}
END_TEST

START_TEST(err_line)
{
	char err[8];

	ck_assert_int_eq(tl_err(NULL, 64, "x %d", 1), -EINVAL);
	memset(err, 'z', sizeof(err));
	ck_assert_int_eq(tl_err(err, 0, "x %d", 1), -EINVAL);
	ck_assert_int_eq(err[0], 'z');
	ck_assert_int_eq(tl_err(err, sizeof(err), "bad %s", "value"), -EINVAL);
	ck_assert_str_eq(err, "bad val"); /* cut to the buffer, terminated */
}
END_TEST

/* A member of another type reads as absent. */
START_TEST(json_members)
{
	struct json_object *o = json_tokener_parse(
	    "{\"s\":\"x\",\"i\":7,\"d\":1.5,\"b\":true,\"a\":[1],\"o\":{\"k\":\"v\"},\"n\":null}");
	struct json_object *arr = json_object_new_array();
	int64_t i = -1;

	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(tl_json_str(o, "s"), "x");
	ck_assert_ptr_null(tl_json_str(o, "i"));
	ck_assert_ptr_null(tl_json_str(o, "missing"));
	ck_assert_ptr_null(tl_json_str(NULL, "s"));
	ck_assert(tl_json_int(o, "i", &i));
	ck_assert_int_eq(i, 7);
	ck_assert(!tl_json_int(o, "d", &i));
	ck_assert(!tl_json_int(o, "s", &i));
	ck_assert_int_eq(i, 7);
	ck_assert(tl_json_bool(o, "b", false));
	ck_assert(!tl_json_bool(o, "s", false));
	ck_assert(tl_json_bool(o, "missing", true));
	ck_assert_ptr_nonnull(tl_json_array(o, "a"));
	ck_assert_ptr_null(tl_json_array(o, "o"));
	ck_assert_str_eq(tl_json_str(tl_json_object(o, "o"), "k"), "v");
	ck_assert_ptr_null(tl_json_object(o, "a"));
	ck_assert_ptr_nonnull(tl_json_get(o, "d"));
	ck_assert_ptr_null(tl_json_get(o, "n")); /* json-c holds null as NULL */
	ck_assert_ptr_null(tl_json_get(o, "missing"));
	/* Not an object: no members. */
	ck_assert_ptr_null(tl_json_get(arr, "s"));
	json_object_put(arr);
	json_object_put(o);
}
END_TEST

/* The one rule for a container id's runtime prefix, for every caller: the
 * cgroup map (API or bare form in, the leaf's id out), the Pod model and
 * attribution (API form), the document (compares both). */
static const struct {
	const char *in, *out;
} bare_cases[] = {
	{ "containerd://abc", "abc" },
	{ "cri-o://abc", "abc" },
	{ "docker://abc", "abc" },
	{ "kata://abc", "abc" },    /* any runtime name, as Kubernetes' ParseContainerID */
	{ "abc", "abc" },           /* already bare: as is */
	{ "containerd://", "" },    /* a scheme and no id: empty, never a match */
	{ "", "" },
	{ "a://b://c", "b://c" },   /* only the first "://" is the scheme's */
};

START_TEST(container_id_bare)
{
	ck_assert_str_eq(tl_container_id_bare(bare_cases[_i].in), bare_cases[_i].out);
}
END_TEST

START_TEST(container_id_bare_null)
{
	const char *id = "abc";

	ck_assert_ptr_null(tl_container_id_bare(NULL));
	/* a bare id is returned itself, not a copy */
	ck_assert_ptr_eq(tl_container_id_bare(id), id);
}
END_TEST

static Suite *core_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("clock");

	tcase_add_loop_test(tc, time_roundtrip, 0, sizeof(time_cases) / sizeof(time_cases[0]));
	tcase_add_loop_test(tc, time_rejects, 0, sizeof(bad_times) / sizeof(bad_times[0]));
	tcase_add_test(tc, clock_offset);
	suite_add_tcase(s, tc);
	tc = tcase_create("event");
	tcase_add_test(tc, event_json_roundtrip);
	tcase_add_test(tc, event_from_json_rejects);
	tcase_add_loop_test(tc, container_id_bare, 0, sizeof(bare_cases) / sizeof(bare_cases[0]));
	tcase_add_test(tc, container_id_bare_null);
	suite_add_tcase(s, tc);
	tc = tcase_create("loop");
	tcase_add_test(tc, loop_timer_periodic);
	tcase_add_test(tc, loop_timer_free_inside_callback);
	tcase_add_test(tc, loop_io);
	tcase_add_test(tc, loop_defer);
	suite_add_tcase(s, tc);
	tc = tcase_create("metrics");
	tcase_add_test(tc, metrics_render);
	suite_add_tcase(s, tc);
	tc = tcase_create("signals");
	tcase_add_test(tc, signal_names_by_constant);
	tcase_add_test(tc, signal_default_text_is_the_mask);
	suite_add_tcase(s, tc);
	tc = tcase_create("errmsg");
	tcase_add_test(tc, err_line);
	suite_add_tcase(s, tc);
	tc = tcase_create("json");
	tcase_add_test(tc, json_members);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int failed = tl_check_run(core_suite());

	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
