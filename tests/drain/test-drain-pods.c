/* SPDX-License-Identifier: Apache-2.0 */
/* The drained gate's per-Pod state over a long life under churn: kept only
 * for Pods a wait can be answered for (the API knows them), and freed when
 * the Pod ends, by deletion or, without the API, by its cgroups' removal. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "drain-agent.h"
#include "event.h"
#include "loop.h"
#include "macro.h"
#include "../check-run.h"

static bool known;

static bool fx_known(void *ud _unused_, const char *uid _unused_)
{
	return known;
}

static void fx_emit(void *ud _unused_, struct tl_event *ev)
{
	tl_event_clear(ev);
}

static void uid_of(int i, char *uid, size_t n)
{
	snprintf(uid, n, "0d7a1b2c-0000-4000-8000-%012d", i);
}

static void observe(struct tl_drain_agent *d, enum tl_source src, const char *type, int i)
{
	struct tl_event ev;

	ck_assert_int_eq(tl_event_init(&ev, src, type, tl_now_real_ns()), 0);
	uid_of(i, ev.pod_uid, sizeof(ev.pod_uid));
	if (strcmp(type, "http.request") == 0) {
		tl_event_set_s(&ev, TL_F_HTTP_DIRECTION, "inbound", strlen("inbound"));
		tl_event_set_s(&ev, TL_F_HTTP_REQUEST_ID, "r-1", strlen("r-1"));
	}
	tl_drain_agent_observe(d, &ev);
	tl_event_clear(&ev);
}

static struct tl_drain_agent *agent(struct tl_loop **loop)
{
	struct tl_drain_agent_config dc = { .pod_known = fx_known, .emit = { .emit = fx_emit } };
	struct tl_drain_agent *d;

	ck_assert_int_eq(tl_loop_new(loop), 0);
	ck_assert_int_eq(tl_drain_agent_new(&dc, *loop, &d), 0);
	return d;
}

START_TEST(unknown_pods_keep_nothing)
{
	struct tl_loop *loop;
	struct tl_drain_agent *d = agent(&loop);

	/* without the API (or before it reports the Pod) a wait gets 404:
	 * requests of 600 such Pods leave no state */
	known = false;
	for (int i = 0; i < 600; i++)
		observe(d, TL_SRC_LOG, "http.request", i);
	ck_assert_uint_eq(tl_drain_agent_pods(d), 0);
	tl_drain_agent_free(d);
	tl_loop_free(loop);
}
END_TEST

START_TEST(state_freed_when_the_pod_ends)
{
	struct tl_loop *loop;
	struct tl_drain_agent *d = agent(&loop);

	known = true;
	for (int i = 0; i < 300; i++)
		observe(d, TL_SRC_LOG, "http.request", i);
	ck_assert_uint_eq(tl_drain_agent_pods(d), 300);
	/* half end by deletion, half by their cgroups' removal */
	for (int i = 0; i < 150; i++)
		observe(d, TL_SRC_API, "pod.deleted", i);
	ck_assert_uint_eq(tl_drain_agent_pods(d), 150);
	for (int i = 150; i < 300; i++)
		observe(d, TL_SRC_KERNEL, "pod.cgroups_removed", i);
	ck_assert_uint_eq(tl_drain_agent_pods(d), 0);
	/* churn: at most one Pod's state at a time */
	for (int i = 1000; i < 3000; i++) {
		observe(d, TL_SRC_LOG, "http.request", i);
		observe(d, TL_SRC_KERNEL, "pod.cgroups_removed", i);
	}
	ck_assert_uint_eq(tl_drain_agent_pods(d), 0);
	tl_drain_agent_free(d);
	tl_loop_free(loop);
}
END_TEST

static Suite *drain_pods_suite(void)
{
	Suite *s = suite_create("drain-pods");
	TCase *tc = tcase_create("drain-pods");

	tcase_add_test(tc, unknown_pods_keep_nothing);
	tcase_add_test(tc, state_freed_when_the_pod_ends);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int failed = tl_check_run(drain_pods_suite());

	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
