/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "kube-stream.h"
#include "../check-run.h"

struct collect {
	struct json_object *out; /* array of the values' JSON text */
	int stop_after;          /* return -EPIPE after this many; 0 = never */
};

static int collect_cb(void *userdata, struct json_object *obj)
{
	struct collect *c = userdata;

	json_object_array_add(c->out, json_object_new_string(
		json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN)));
	if (c->stop_after && (int)json_object_array_length(c->out) >= c->stop_after)
		return -EPIPE;
	return 0;
}

static char *read_data(const char *name, size_t *len)
{
	char path[4096];
	const char *dir = getenv("KUBE_TEST_DATA");
	FILE *f;
	char *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "tests/kube/data", name);
	f = fopen(path, "rb");
	ck_assert_msg(f, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

/* The oracle: every complete line parsed on its own, without streaming. */
static void oracle(const char *buf, size_t len, struct json_object *out, uint64_t *malformed)
{
	const char *p = buf, *end = buf + len;

	*malformed = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char *line;
		struct json_object *o;
		size_t i, n;

		if (!nl)
			break; /* an unterminated tail is not a value yet */
		n = (size_t)(nl - p);
		line = strndup(p, n);
		for (i = 0; i < n && strchr(" \r\t", p[i]); i++)
			;
		if (i < n) {
			o = memchr(p, '\0', n) ? NULL : json_tokener_parse(line);
			if (o)
				json_object_array_add(out, json_object_new_string(
					json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)));
			else
				(*malformed)++;
			json_object_put(o);
		}
		free(line);
		p = nl + 1;
	}
}

static void run_split(const char *buf, size_t len, const size_t *cuts, size_t ncuts,
		      struct json_object *want, uint64_t want_malformed, bool want_partial)
{
	struct collect c = { .out = json_object_new_array() };
	struct tl_kstream *s;
	size_t prev = 0;

	ck_assert_int_eq(tl_kstream_new(NULL, collect_cb, &c, &s), 0);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t next = i < ncuts ? cuts[i] : len;

		ck_assert_int_eq(tl_kstream_feed(s, buf + prev, next - prev), 0);
		prev = next;
	}
	ck_assert_msg(json_object_equal(c.out, want), "values differ with a cut at %zu",
		      ncuts ? cuts[0] : 0);
	ck_assert_uint_eq(tl_kstream_malformed(s), want_malformed);
	ck_assert_int_eq(tl_kstream_partial(s), want_partial);
	tl_kstream_free(s);
	json_object_put(c.out);
}

static void check_stream(const char *name, bool tail_partial)
{
	struct json_object *want = json_object_new_array();
	uint64_t want_malformed;
	size_t len, *bytes;
	char *buf = read_data(name, &len);

	oracle(buf, len, want, &want_malformed);
	ck_assert_int_ge((int)json_object_array_length(want), 3);
	run_split(buf, len, NULL, 0, want, want_malformed, tail_partial);
	for (size_t cut = 1; cut < len; cut++)
		run_split(buf, len, &cut, 1, want, want_malformed, tail_partial);
	bytes = malloc(len * sizeof(*bytes));
	for (size_t i = 0; i < len; i++)
		bytes[i] = i + 1;
	run_split(buf, len, bytes, len - 1, want, want_malformed, tail_partial);
	free(bytes);
	free(buf);
	json_object_put(want);
}

START_TEST(test_recorded_watch_every_split)
{
	check_stream("watch-pods.stream", false);
}
END_TEST

START_TEST(test_garbage_every_split)
{
	/* garbage lines are skipped and counted; the truncated tail stays
	 * partial; every valid event around them survives */
	check_stream("watch-garbage.stream", true);
}
END_TEST

START_TEST(test_oversized_value_skipped)
{
	struct tl_kstream_limits lim = { .max_object = 64 };
	struct collect c = { .out = json_object_new_array() };
	struct tl_kstream *s;
	char big[512];
	const char *small = "{\"type\":\"BOOKMARK\"}\n";

	snprintf(big, sizeof(big), "{\"type\":\"ADDED\",\"object\":{\"pad\":\"%0300d\"}}\n", 7);
	ck_assert_int_eq(tl_kstream_new(&lim, collect_cb, &c, &s), 0);
	for (size_t i = 0; i < strlen(big); i += 7)
		ck_assert_int_eq(tl_kstream_feed(s, big + i, strlen(big) - i < 7 ? strlen(big) - i : 7), 0);
	ck_assert_int_eq(tl_kstream_feed(s, small, strlen(small)), 0);
	ck_assert_uint_eq(tl_kstream_malformed(s), 1);
	ck_assert_uint_eq(json_object_array_length(c.out), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(c.out, 0)),
			 "{\"type\":\"BOOKMARK\"}");
	tl_kstream_free(s);
	json_object_put(c.out);
}
END_TEST

START_TEST(test_depth_limit)
{
	struct tl_kstream_limits lim = { .max_depth = 8 };
	struct collect c = { .out = json_object_new_array() };
	struct tl_kstream *s;
	char deep[256] = "";

	for (int i = 0; i < 50; i++)
		strcat(deep, "[");
	strcat(deep, "\n{\"ok\":1}\n");
	ck_assert_int_eq(tl_kstream_new(&lim, collect_cb, &c, &s), 0);
	ck_assert_int_eq(tl_kstream_feed(s, deep, strlen(deep)), 0);
	ck_assert_uint_eq(tl_kstream_malformed(s), 1);
	ck_assert_uint_eq(json_object_array_length(c.out), 1);
	tl_kstream_free(s);
	json_object_put(c.out);
}
END_TEST

START_TEST(test_callback_stops_feed_and_reset)
{
	struct collect c = { .out = json_object_new_array(), .stop_after = 1 };
	struct tl_kstream *s;
	const char *two = "{\"a\":1}\n{\"b\":2}\n{\"c\":";

	ck_assert_int_eq(tl_kstream_new(NULL, collect_cb, &c, &s), 0);
	ck_assert_int_eq(tl_kstream_feed(s, two, strlen(two)), -EPIPE);
	ck_assert_uint_eq(json_object_array_length(c.out), 1);
	c.stop_after = 0;
	ck_assert_int_eq(tl_kstream_feed(s, "{\"c\":", 5), 0);
	ck_assert(tl_kstream_partial(s));
	tl_kstream_reset(s);
	ck_assert(!tl_kstream_partial(s));
	ck_assert_int_eq(tl_kstream_feed(s, "{\"d\":4}\n", 8), 0);
	ck_assert_uint_eq(json_object_array_length(c.out), 2);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(c.out, 1)), "{\"d\":4}");
	ck_assert_uint_eq(tl_kstream_malformed(s), 0);
	tl_kstream_free(s);
	json_object_put(c.out);
}
END_TEST

/* The same bytes whole and in pieces of every size up to 17 give the same
 * values and the same malformed count (what fuzz-kube-stream checks). */
static void assert_split_invariant(const char *buf, size_t len, const struct tl_kstream_limits *lim)
{
	struct collect whole = { .out = json_object_new_array() };
	struct tl_kstream *a, *b;

	ck_assert_int_eq(tl_kstream_new(lim, collect_cb, &whole, &a), 0);
	ck_assert_int_eq(tl_kstream_feed(a, buf, len), 0);
	for (size_t step = 1; step <= 17; step++) {
		struct collect pieces = { .out = json_object_new_array() };

		ck_assert_int_eq(tl_kstream_new(lim, collect_cb, &pieces, &b), 0);
		for (size_t off = 0; off < len; off += step)
			ck_assert_int_eq(tl_kstream_feed(b, buf + off, len - off < step ? len - off : step), 0);
		ck_assert_msg(json_object_equal(whole.out, pieces.out), "values differ in pieces of %zu: %s vs %s",
			      step, json_object_to_json_string(whole.out),
			      json_object_to_json_string(pieces.out));
		ck_assert_uint_eq(tl_kstream_malformed(a), tl_kstream_malformed(b));
		tl_kstream_free(b);
		json_object_put(pieces.out);
	}
	tl_kstream_free(a);
	json_object_put(whole.out);
}

/* json-c does not keep a number's state across calls: "1" then "-2,..."
 * was taken as 1 where the whole text is rejected. */
START_TEST(test_number_split_across_chunks)
{
	const char *bad = "{\"a\":1-2,\"b\":3}\n{\"ok\":1}\n";
	struct collect c = { .out = json_object_new_array() };
	struct tl_kstream *s;

	ck_assert_int_eq(tl_kstream_new(NULL, collect_cb, &c, &s), 0);
	ck_assert_int_eq(tl_kstream_feed(s, bad, 6), 0);
	ck_assert_int_eq(tl_kstream_feed(s, bad + 6, strlen(bad) - 6), 0);
	ck_assert_uint_eq(tl_kstream_malformed(s), 1);
	ck_assert_uint_eq(json_object_array_length(c.out), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(c.out, 0)), "{\"ok\":1}");
	tl_kstream_free(s);
	json_object_put(c.out);
}
END_TEST

/* Inputs fuzz-kube-stream found (tests/kube/corpus-kube-stream/), less
 * their first byte, which the fuzzer takes for the piece size. */
static const char *const fuzz_found[] = {
	"{\"\":0-",                  /* the number state, above */
	"{\"td\":410\n1x",           /* a number held back at a line's end */
	"{\n0{",                     /* an error inside a held-back number */
	"{\"n\":-1.5e+3,\"m\":[1,2,-0,1e5,2E-3,7]}\n{\"x\":1e}\n{\"y\":1.}\n{\"z\":--1}\n",
	"{\"n\":00000000000000000000000000000000000000000000000000000000000000000000001}\n{\"k\":1}\n",
};

START_TEST(test_fuzz_found_inputs)
{
	struct tl_kstream_limits small = { .max_object = 4096, .max_depth = 16, .max_cost = 8192 };

	assert_split_invariant(fuzz_found[_i], strlen(fuzz_found[_i]), NULL);
	assert_split_invariant(fuzz_found[_i], strlen(fuzz_found[_i]), &small);
}
END_TEST

/* One event of "{}," inside the byte limit: json-c's objects would take
 * ~260 times its size. The value is dropped before json-c builds it. */
START_TEST(test_object_count_bounded)
{
	struct tl_kstream_limits lim = { .max_object = 8u << 20, .max_cost = 32u << 20 };
	struct collect c = { .out = json_object_new_array() };
	struct tl_kstream *s;
	struct rusage ru0, ru1;
	const size_t n = 1u << 20;
	char *ev = malloc(n + 64);
	size_t o;

	ck_assert_ptr_nonnull(ev);
	o = (size_t)sprintf(ev, "{\"type\":\"ADDED\",\"object\":[");
	while (o < n)
		o += (size_t)sprintf(ev + o, "{},");
	o += (size_t)sprintf(ev + o, "{}]}\n{\"type\":\"BOOKMARK\"}\n");
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru0), 0);
	ck_assert_int_eq(tl_kstream_new(&lim, collect_cb, &c, &s), 0);
	for (size_t off = 0; off < o; off += 16384)
		ck_assert_int_eq(tl_kstream_feed(s, ev + off, o - off < 16384 ? o - off : 16384), 0);
	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru1), 0);
	ck_assert_uint_eq(tl_kstream_malformed(s), 1);
	ck_assert_uint_eq(json_object_array_length(c.out), 1);
	/* ~266 MB before the bound; the bound allows 32 MiB of estimate */
	ck_assert_msg(ru1.ru_maxrss - ru0.ru_maxrss < 64 * 1024, "max RSS grew by %ld KiB",
		      ru1.ru_maxrss - ru0.ru_maxrss);
	tl_kstream_free(s);
	json_object_put(c.out);
	free(ev);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kube-stream");
	TCase *tc = tcase_create("core");
	int failed;

	tcase_add_test(tc, test_recorded_watch_every_split);
	tcase_add_test(tc, test_garbage_every_split);
	tcase_add_test(tc, test_oversized_value_skipped);
	tcase_add_test(tc, test_depth_limit);
	tcase_add_test(tc, test_callback_stops_feed_and_reset);
	tcase_add_test(tc, test_number_split_across_chunks);
	tcase_add_loop_test(tc, test_fuzz_found_inputs, 0,
			    (int)(sizeof(fuzz_found) / sizeof(fuzz_found[0])));
	tcase_add_test(tc, test_object_count_bounded);
	suite_add_tcase(s, tc);
	failed = tl_check_run(s);
	return failed ? 1 : 0;
}
