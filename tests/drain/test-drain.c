/* SPDX-License-Identifier: Apache-2.0 */
/* The drained condition on hand-built fact sequences (docs/drain.md). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "drain.h"
#include "../check-run.h"

#define S(x) ((int64_t)(x) * 1000000000LL)
#define MS(x) ((int64_t)(x) * 1000000LL)
#define T0 S(1800000000) /* an arbitrary UTC second */
#define QUIET S(1)

static struct tl_drain_verdict eval(const struct tl_drain_state *s, int64_t now)
{
	struct tl_drain_verdict v;

	tl_drain_evaluate(s, now, QUIET, &v);
	return v;
}

START_TEST(no_deletion_never_drained)
{
	struct tl_drain_state s;
	struct tl_drain_verdict v;

	tl_drain_state_init(&s);
	v = eval(&s, T0 + S(3600));
	ck_assert_int_eq(v.unmet, TL_DRAIN_NO_DELETION);
	ck_assert_int_eq(v.drained_at_ns, 0);
	ck_assert_str_eq(tl_drain_cond_name(v.unmet), "deletion");
	/* an endpoint already gone does not replace the deletion */
	ck_assert_int_eq(tl_drain_fact_endpoint_removed(&s, "web-abc", T0), 0);
	ck_assert_int_eq(eval(&s, T0 + S(10)).unmet, TL_DRAIN_NO_DELETION);
}
END_TEST

/* The endpoint is listed by two slices (two Services); the first drops it
 * at once, the second only 3 s later: drained quiet after the late one. */
START_TEST(two_slices_one_removed_late)
{
	struct tl_drain_state s;
	struct tl_drain_verdict v;

	tl_drain_state_init(&s);
	ck_assert_int_eq(tl_drain_fact_endpoint(&s, "web-a1", "web", true, true, false, T0 - S(60)), 0);
	ck_assert_int_eq(tl_drain_fact_endpoint(&s, "admin-b2", "admin", true, true, false, T0 - S(60)), 0);
	tl_drain_fact_deletion(&s, T0);
	v = eval(&s, T0 + MS(100));
	ck_assert_int_eq(v.unmet, TL_DRAIN_IN_ROTATION);
	ck_assert_str_eq(v.slice, "web-a1");
	ck_assert_str_eq(tl_drain_cond_name(v.unmet), "endpoint");

	ck_assert_int_eq(tl_drain_fact_endpoint(&s, "web-a1", "web", false, true, true, T0 + MS(200)), 0);
	v = eval(&s, T0 + S(2));
	ck_assert_int_eq(v.unmet, TL_DRAIN_IN_ROTATION);
	ck_assert_str_eq(v.slice, "admin-b2");

	ck_assert_int_eq(tl_drain_fact_endpoint_removed(&s, "admin-b2", T0 + S(3)), 0);
	v = eval(&s, T0 + S(3) + MS(999));
	ck_assert_int_eq(v.unmet, TL_DRAIN_TRAFFIC);
	ck_assert_int_eq(v.out_of_rotation_ns, T0 + S(3));
	ck_assert_int_eq(v.drained_at_ns, T0 + S(4));
	v = eval(&s, T0 + S(4));
	ck_assert_int_eq(v.unmet, TL_DRAIN_MET);
	ck_assert_str_eq(tl_drain_cond_name(v.unmet), "none");
}
END_TEST

/* A connection that arrives after the endpoint change (another node's
 * dataplane still had the old endpoint) restarts the quiet window. */
START_TEST(connection_after_removal)
{
	struct tl_drain_state s;
	struct tl_drain_verdict v;

	tl_drain_state_init(&s);
	tl_drain_fact_endpoint(&s, "web-a1", "web", true, true, false, T0 - S(60));
	tl_drain_fact_connection(&s, 5, T0 - S(1));
	tl_drain_fact_deletion(&s, T0);
	tl_drain_fact_endpoint(&s, "web-a1", "web", false, true, true, T0 + MS(50));
	v = eval(&s, T0 + MS(500));
	ck_assert_int_eq(v.unmet, TL_DRAIN_TRAFFIC);
	ck_assert_int_eq(v.drained_at_ns, T0 + MS(1050));

	tl_drain_fact_connection(&s, 1, T0 + MS(900));
	v = eval(&s, T0 + MS(1100));
	ck_assert_int_eq(v.unmet, TL_DRAIN_TRAFFIC);
	ck_assert_int_eq(v.quiet_since_ns, T0 + MS(900));
	ck_assert_int_eq(v.drained_at_ns, T0 + MS(1900));
	ck_assert_uint_eq(s.connections, 6);

	/* a request seen by request capture counts the same way */
	tl_drain_fact_request(&s, T0 + MS(1500));
	ck_assert_int_eq(eval(&s, T0 + MS(2000)).unmet, TL_DRAIN_TRAFFIC);
	v = eval(&s, T0 + MS(2500));
	ck_assert_int_eq(v.unmet, TL_DRAIN_MET);
	ck_assert_int_eq(v.quiet_since_ns, T0 + MS(1500));
	/* a fact reported late (older than the newest) does not move time back */
	tl_drain_fact_connection(&s, 1, T0 + MS(100));
	ck_assert_int_eq(eval(&s, T0 + MS(2500)).unmet, TL_DRAIN_MET);
	ck_assert_uint_eq(s.connections, 7);
}
END_TEST

/* A Pod behind no Service: nothing routes to it, (b) holds from the
 * deletion on and only traffic holds the gate. */
START_TEST(no_endpointslice_at_all)
{
	struct tl_drain_state s;
	struct tl_drain_verdict v;

	tl_drain_state_init(&s);
	tl_drain_fact_deletion(&s, T0);
	v = eval(&s, T0 + MS(10));
	ck_assert_int_eq(v.unmet, TL_DRAIN_TRAFFIC);
	ck_assert_int_eq(v.out_of_rotation_ns, T0);
	v = eval(&s, T0 + S(1));
	ck_assert_int_eq(v.unmet, TL_DRAIN_MET);
	/* quiet 0: drained at the deletion itself */
	tl_drain_evaluate(&s, T0, 0, &v);
	ck_assert_int_eq(v.unmet, TL_DRAIN_MET);
}
END_TEST

/* serving:false alone takes it out even while ready is still true (a
 * slice written by another controller); ready:false without terminating is
 * an endpoint failing its probe, which kube-proxy still uses as a fallback
 * only when terminating: it stays out only when terminating. */
START_TEST(rotation_rules)
{
	static const struct {
		bool present, ready, serving, terminating, in;
	} cases[] = {
		{ true, true, true, false, true },
		{ true, false, true, true, false },  /* what the controller writes at deletion */
		{ true, false, false, true, false },
		{ true, true, false, false, false },
		{ true, false, true, false, true },  /* not terminating: a probe flap, still listed */
		{ false, false, false, false, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tl_drain_slice sl = { .present = cases[i].present, .ready = cases[i].ready,
					     .serving = cases[i].serving,
					     .terminating = cases[i].terminating };

		ck_assert_msg(tl_drain_slice_in_rotation(&sl) == cases[i].in, "case %zu", i);
	}
}
END_TEST

/* The endpoint comes back (deletion cancelled by a finalizer dance, or a
 * relist that shows it again): back in rotation, gate closed again. */
START_TEST(endpoint_back_in_rotation)
{
	struct tl_drain_state s;

	tl_drain_state_init(&s);
	tl_drain_fact_deletion(&s, T0);
	tl_drain_fact_endpoint(&s, "web-a1", "web", false, false, true, T0 + MS(10));
	ck_assert_int_eq(eval(&s, T0 + S(5)).unmet, TL_DRAIN_MET);
	tl_drain_fact_endpoint(&s, "web-a1", "web", true, true, false, T0 + S(6));
	ck_assert_int_eq(eval(&s, T0 + S(7)).unmet, TL_DRAIN_IN_ROTATION);
	/* a second deletion fact keeps the first time */
	tl_drain_fact_deletion(&s, T0 + S(8));
	ck_assert_int_eq(s.deletion_ns, T0);
}
END_TEST

START_TEST(slice_limits)
{
	struct tl_drain_state s;
	char name[TL_DRAIN_NAME_MAX + 8];

	tl_drain_state_init(&s);
	tl_drain_fact_deletion(&s, T0);
	ck_assert_int_eq(tl_drain_fact_endpoint(&s, "", "x", true, true, false, T0), -EINVAL);
	ck_assert_int_eq(tl_drain_fact_endpoint(&s, NULL, "x", true, true, false, T0), -EINVAL);
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	ck_assert_int_eq(tl_drain_fact_endpoint(&s, name, "x", true, true, false, T0), -EINVAL);
	ck_assert_int_eq(s.nslices, 0);
	for (int i = 0; i < TL_DRAIN_MAX_SLICES; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		ck_assert_int_eq(tl_drain_fact_endpoint(&s, name, "x", false, true, true, T0), 0);
	}
	/* full, every slot still listing it: the extra slice cannot be
	 * tracked, and the gate must not open on what it does not know */
	ck_assert_int_eq(tl_drain_fact_endpoint(&s, "one-too-many", "x", true, true, false, T0), -ENOSPC);
	ck_assert_int_eq(eval(&s, T0 + S(60)).unmet, TL_DRAIN_IN_ROTATION);
	/* a removed slice frees its slot for a new one */
	tl_drain_state_init(&s);
	tl_drain_fact_deletion(&s, T0);
	for (int i = 0; i < TL_DRAIN_MAX_SLICES; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		tl_drain_fact_endpoint(&s, name, "x", false, true, true, T0);
	}
	ck_assert_int_eq(tl_drain_fact_endpoint_removed(&s, "s3", T0 + S(1)), 0);
	ck_assert_int_eq(tl_drain_fact_endpoint(&s, "late", "y", false, false, true, T0 + S(2)), 0);
	ck_assert_int_eq(s.nslices, TL_DRAIN_MAX_SLICES);
	ck_assert_int_eq(s.slices_ignored, 0);
	ck_assert_int_eq(eval(&s, T0 + S(3)).unmet, TL_DRAIN_MET);
}
END_TEST

static Suite *drain_suite(void)
{
	Suite *s = suite_create("drain");
	TCase *tc = tcase_create("state");

	tcase_add_test(tc, no_deletion_never_drained);
	tcase_add_test(tc, two_slices_one_removed_late);
	tcase_add_test(tc, connection_after_removal);
	tcase_add_test(tc, no_endpointslice_at_all);
	tcase_add_test(tc, rotation_rules);
	tcase_add_test(tc, endpoint_back_in_rotation);
	tcase_add_test(tc, slice_limits);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(drain_suite()) ? 1 : 0;
}
