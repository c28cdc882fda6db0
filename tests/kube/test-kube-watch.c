/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>

#include "kube-watch.h"
#include "../check-run.h"

START_TEST(test_backoff_grows_capped_jittered)
{
	uint64_t prev_max = 0;

	for (unsigned a = 0; a < 40; a++) {
		uint64_t lo = tl_backoff_delay_ms(a, 250, 30000, 0.0);
		uint64_t hi = tl_backoff_delay_ms(a, 250, 30000, 0.999999);
		uint64_t mid = tl_backoff_delay_ms(a, 250, 30000, 0.5);

		ck_assert_uint_le(hi, 30000);
		ck_assert_uint_ge(lo, hi / 2);
		ck_assert_uint_lt(lo, hi); /* jitter spreads agents apart */
		ck_assert(mid >= lo && mid <= hi);
		ck_assert_uint_ge(hi, prev_max);
		prev_max = hi;
	}
	ck_assert_uint_le(tl_backoff_delay_ms(0, 250, 30000, 0.999), 250);
	ck_assert_uint_ge(tl_backoff_delay_ms(20, 250, 30000, 0.0), 15000);
	/* out-of-range randomness cannot push past the cap */
	ck_assert_uint_le(tl_backoff_delay_ms(50, 250, 30000, 7.0), 30000);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kube-watch");
	TCase *tc = tcase_create("core");
	int failed;

	tcase_add_test(tc, test_backoff_grows_capped_jittered);
	suite_add_tcase(s, tc);
	failed = tl_check_run(s);
	return failed ? 1 : 0;
}
