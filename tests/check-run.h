/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <check.h>

/* Runs a Check suite (verbosity from CK_VERBOSITY, default normal) and
 * returns how many of its tests failed. */
static inline int tl_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed;
}
