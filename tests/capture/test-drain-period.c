/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP ring's drain period (daemon/capture/http-bpf.c): the programs
 * wake the agent only at each half of the ring, so the timer's period is
 * what keeps the ring from filling at a steady rate. Slow records keep it
 * at 25 ms; faster ones shorten it so that a period fills about a quarter
 * of the ring, down to 1 ms; it settles, keeps still while a jittery rate
 * stays near the one that set it, and goes back to 25 ms when the records
 * slow. */
#include <stdint.h>
#include <stdlib.h>
#include <check.h>

#include "capture/http-bpf.h"
#include "../check-run.h"

#define MIB (1024u * 1024u)
#define RING (4 * MIB)

START_TEST(slow_records_keep_the_slow_period)
{
	ck_assert_uint_eq(tl_http_drain_period_ms(25, 0, RING, 25), 25);
	ck_assert_uint_eq(tl_http_drain_period_ms(25, 100 * 1024, RING, 25), 25);
	ck_assert_uint_eq(tl_http_drain_period_ms(25, RING / 4, RING, 25), 25);
	/* (from a short period too: the rate, not the bytes, decides) */
	ck_assert_uint_eq(tl_http_drain_period_ms(2, 40 * 1024, RING, 25), 25);
	/* a slow period of the configuration's */
	ck_assert_uint_eq(tl_http_drain_period_ms(25, 0, RING, 60000), 60000);
	ck_assert_uint_eq(tl_http_drain_period_ms(1000, RING / 2, RING, 60000), 500);
}
END_TEST

START_TEST(fast_records_shorten_it)
{
	/* twice a quarter in 25 ms: half the period */
	ck_assert_uint_eq(tl_http_drain_period_ms(25, RING / 2, RING, 25), 12);
	/* a third more than a quarter: shorter */
	ck_assert_uint_eq(tl_http_drain_period_ms(25, RING / 3, RING, 25), 18);
	/* the whole ring in 25 ms */
	ck_assert_uint_eq(tl_http_drain_period_ms(25, RING, RING, 25), 6);
	/* more than the ring holds per millisecond: the floor */
	ck_assert_uint_eq(tl_http_drain_period_ms(1, RING, RING, 25), 1);
	ck_assert_uint_eq(tl_http_drain_period_ms(25, UINT32_MAX, 4096, 25), 1);
}
END_TEST

/* A steady rate, period after period: the period settles where one period
 * drains about a quarter of the ring (at most a third: within that the
 * period is kept, not far under it), and the ring never holds more than
 * that at a timer. */
START_TEST(a_steady_rate_settles)
{
	static const uint64_t per_ms[] = { 1024, 30 * 1024, 50 * 1024, 100 * 1024, 400 * 1024, 3 * MIB };

	for (size_t i = 0; i < sizeof(per_ms) / sizeof(per_ms[0]); i++) {
		uint64_t p = 25;

		for (int k = 0; k < 20; k++) {
			uint64_t next = tl_http_drain_period_ms(p, p * per_ms[i], RING, 25);

			/* settled after two periods */
			if (k >= 2)
				ck_assert_msg(next == p, "rate %lu: %lu -> %lu", (unsigned long)per_ms[i],
					      (unsigned long)p, (unsigned long)next);
			p = next;
		}
		ck_assert_msg(p * per_ms[i] <= RING / 3 || p == 1, "rate %lu: period %lu fills %lu",
			      (unsigned long)per_ms[i], (unsigned long)p, (unsigned long)(p * per_ms[i]));
		ck_assert_msg(p == 25 || (p + 1) * per_ms[i] > RING / 4, "rate %lu: period %lu is shorter than needed",
			      (unsigned long)per_ms[i], (unsigned long)p);
	}
}
END_TEST

/* A rate near the one that set the period, as a timer's jitter measures a
 * steady one, keeps it: no re-arm per period. Further off, it follows. */
START_TEST(jitter_keeps_the_period)
{
	/* 8 ms fills a quarter at RING / 32 per ms */
	const uint64_t rate = RING / 32;

	for (int pct = 80; pct <= 130; pct += 5)
		ck_assert_msg(tl_http_drain_period_ms(8, 8 * rate * (uint64_t)pct / 100, RING, 25) == 8,
			      "%d %% of the rate moved the period", pct);
	/* a quarter more in the period: kept (the ring holds a third then) */
	ck_assert_uint_eq(tl_http_drain_period_ms(8, 10 * rate, RING, 25), 8);
	/* a half more: shorter */
	ck_assert_uint_eq(tl_http_drain_period_ms(8, 12 * rate, RING, 25), 5);
	/* half the rate: longer */
	ck_assert_uint_eq(tl_http_drain_period_ms(8, 4 * rate, RING, 25), 16);
	/* neighbouring milliseconds at the short end */
	ck_assert_uint_eq(tl_http_drain_period_ms(3, 3 * RING / 16, RING, 25), 3);
	ck_assert_uint_eq(tl_http_drain_period_ms(4, 4 * RING / 12, RING, 25), 4);
	/* none at all: the slow period */
	ck_assert_uint_eq(tl_http_drain_period_ms(8, 0, RING, 25), 25);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("drain-period");
	TCase *tc = tcase_create("period");

	tcase_add_test(tc, slow_records_keep_the_slow_period);
	tcase_add_test(tc, fast_records_shorten_it);
	tcase_add_test(tc, a_steady_rate_settles);
	tcase_add_test(tc, jitter_keeps_the_period);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
