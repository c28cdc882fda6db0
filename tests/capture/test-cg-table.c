/* SPDX-License-Identifier: Apache-2.0 */
/* The tracked cgroups' table (bpf/include/termline-cgtab.h) as user space
 * writes it, through the search the programs make: every id added is found
 * (its window from its home, ending at an empty slot), no id removed is,
 * colliding ids fill a window and the next one spills, removed slots are
 * reused and emptied again, across the table's end, and against a
 * reference set under random adds and removes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>

#include "termline-cgtab.h"
#include "../check-run.h"

static __u64 slots[TL_CG_SLOTS];

/* The programs' search, without the spilled ids' map. */
static bool found(uint64_t id)
{
	return tl_cg_find(slots, id) == 1;
}

static size_t used(void)
{
	size_t n = 0;

	for (size_t i = 0; i < TL_CG_SLOTS; i++)
		n += slots[i] != 0;
	return n;
}

/* n ids whose home is home, from the id start on. */
static void same_home(uint32_t home, __u64 start, __u64 *ids, size_t n)
{
	for (__u64 id = start; n > 0; id++)
		if (tl_cg_home(id) == home) {
			*ids++ = id;
			n--;
		}
}

static void setup(void)
{
	memset(slots, 0, sizeof(slots));
}

START_TEST(add_find_remove)
{
	__u64 ids[] = { 1, 2, 4242, 0x100000001ULL, 0x7fffffffffffffffULL };

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		ck_assert(!found(ids[i]));
		ck_assert_int_eq(tl_cg_table_add(slots, ids[i]), 1);
		ck_assert_int_eq(tl_cg_table_add(slots, ids[i]), 0);
	}
	ck_assert_uint_eq(used(), 5);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		ck_assert(found(ids[i]));
	ck_assert(!found(3));
	ck_assert(tl_cg_table_remove(slots, 4242));
	ck_assert(!tl_cg_table_remove(slots, 4242));
	ck_assert(!found(4242));
	ck_assert(found(1) && found(2));
	/* 0 is "empty" to the search, GONE a removed slot: neither an id */
	ck_assert_int_eq(tl_cg_table_add(slots, 0), -EINVAL);
	ck_assert_int_eq(tl_cg_table_add(slots, TL_CG_GONE), -EINVAL);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		tl_cg_table_remove(slots, ids[i]);
	ck_assert_uint_eq(used(), 0);
}
END_TEST

/* Nine ids of one home: eight fill the window, the ninth spills; a removed
 * one's slot takes it; the others stay found, past the removed slot. */
static void collide(uint32_t home)
{
	__u64 ids[10];

	setup();
	same_home(home, 1000, ids, 10);
	for (int i = 0; i < TL_CG_PROBES; i++)
		ck_assert_int_eq(tl_cg_table_add(slots, ids[i]), 1);
	ck_assert_int_eq(tl_cg_table_add(slots, ids[8]), -ENOSPC);
	ck_assert(!found(ids[8]));
	ck_assert(tl_cg_table_remove(slots, ids[2]));
	ck_assert_uint_eq(slots[(home + 2) & (TL_CG_SLOTS - 1)], TL_CG_GONE);
	for (int i = 3; i < TL_CG_PROBES; i++)
		ck_assert(found(ids[i]));
	ck_assert_int_eq(tl_cg_table_add(slots, ids[8]), 1);
	ck_assert(found(ids[8]));
	ck_assert_int_eq(tl_cg_table_add(slots, ids[9]), -ENOSPC);
	/* the last of the window first: its slot and every removed one
	 * before it go back to empty */
	ck_assert(tl_cg_table_remove(slots, ids[4]));
	ck_assert(tl_cg_table_remove(slots, ids[7]));
	ck_assert_uint_eq(slots[(home + 7) & (TL_CG_SLOTS - 1)], 0);
	ck_assert_uint_eq(slots[(home + 4) & (TL_CG_SLOTS - 1)], TL_CG_GONE);
	ck_assert(tl_cg_table_remove(slots, ids[6]));
	ck_assert(tl_cg_table_remove(slots, ids[5]));
	ck_assert_uint_eq(slots[(home + 4) & (TL_CG_SLOTS - 1)], 0);
	ck_assert(found(ids[0]) && found(ids[1]) && found(ids[3]) && found(ids[8]));
	ck_assert_uint_eq(used(), 4);
	tl_cg_table_remove(slots, ids[0]);
	tl_cg_table_remove(slots, ids[1]);
	tl_cg_table_remove(slots, ids[3]);
	tl_cg_table_remove(slots, ids[8]);
	ck_assert_uint_eq(used(), 0);
}

START_TEST(colliding_ids)
{
	collide(100);
}
END_TEST

START_TEST(window_wraps)
{
	collide(TL_CG_SLOTS - 3);
}
END_TEST

/* Random adds and removes against a reference: after each step, every id
 * the table holds is found, every other one is not, and the table holds
 * every id of the set that did not spill. Few homes, so windows fill. */
START_TEST(against_a_set)
{
	enum { N = 600 };
	__u64 ids[N];
	bool in[N] = { false }, spilled[N] = { false };
	unsigned seed = 7;

	same_home(10, 1, ids, N / 3);
	same_home(11, 1, ids + N / 3, N / 3);
	for (size_t i = 2 * (N / 3); i < N; i++)
		ids[i] = 1000000 + i * 7919;
	for (int step = 0; step < 20000; step++) {
		size_t i = (size_t)rand_r(&seed) % N;

		if (!in[i]) {
			int r = tl_cg_table_add(slots, ids[i]);

			ck_assert(r == 1 || r == -ENOSPC);
			in[i] = true;
			spilled[i] = r == -ENOSPC;
		} else {
			ck_assert(tl_cg_table_remove(slots, ids[i]) == !spilled[i]);
			in[i] = spilled[i] = false;
		}
		if (step % 97 == 0 || step > 19900)
			for (size_t j = 0; j < N; j++)
				ck_assert_msg(found(ids[j]) == (in[j] && !spilled[j]), "step %d id %zu", step, j);
	}
	for (size_t j = 0; j < N; j++)
		if (in[j] && !spilled[j])
			tl_cg_table_remove(slots, ids[j]);
	ck_assert_uint_eq(used(), 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cg-table");
	TCase *tc = tcase_create("table");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, add_find_remove);
	tcase_add_test(tc, colliding_ids);
	tcase_add_test(tc, window_wraps);
	tcase_add_test(tc, against_a_set);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
