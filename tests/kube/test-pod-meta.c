/* SPDX-License-Identifier: Apache-2.0 */
/* The typed Pod metadata (daemon/event/pod-meta.h): the one encoder against
 * expected text, the journal record's decoder on this format and the
 * previous one, equality, and the bounds on a damaged record. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pod-meta.h"
#include "../check-run.h"

#define UID "11111111-1111-1111-1111-111111111111"
#define PLAIN (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* The record as the API model wrote it before the typed metadata (the
 * journal corpus's binary-termination has it byte for byte), with one more
 * container as that model wrote it: "" for an unknown id, preStop. */
static const char old_record[] =
	"{\"pod\":{\"namespace\":\"shop\",\"name\":\"web-1\",\"uid\":\"" UID "\",\"node\":\"node-1\","
	"\"ip\":\"10.0.0.7\",\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"web-5d8f\"},"
	"\"terminationGracePeriodSeconds\":30,\"istio\":{\"annotations\":{\"sidecar.istio.io/inject\":\"true\"}}},"
	"\"containers\":[{\"name\":\"app\",\"containerID\":\"containerd://0123abcd\",\"role\":\"main\",\"cgroupId\":0,"
	"\"preStop\":\"exec\"},"
	"{\"name\":\"istio-proxy\",\"containerID\":\"containerd://fedc9876\",\"role\":\"sidecar\",\"cgroupId\":777,"
	"\"preStop\":null},"
	"{\"name\":\"late\",\"containerID\":\"\",\"role\":\"init\",\"cgroupId\":0,\"preStop\":null}]}";

static struct tl_pod_meta *decode(const char *text, const char *uid)
{
	struct json_object *o = json_tokener_parse(text);
	struct tl_pod_meta *m = NULL;

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(tl_pod_meta_from_json(o, uid, &m), 0);
	json_object_put(o);
	ck_assert_ptr_nonnull(m);
	return m;
}

static void assert_json(struct json_object *o, const char *expect)
{
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(json_object_to_json_string_ext(o, PLAIN), expect);
	json_object_put(o);
}

START_TEST(test_previous_record_decoded)
{
	struct tl_pod_meta *m = decode(old_record, "other-uid");

	ck_assert_str_eq(m->ns, "shop");
	ck_assert_str_eq(m->name, "web-1");
	ck_assert_str_eq(m->uid, UID); /* the record's own */
	ck_assert_str_eq(m->node, "node-1");
	ck_assert_str_eq(m->ip, "10.0.0.7");
	ck_assert_str_eq(m->owner_kind, "ReplicaSet");
	ck_assert_str_eq(m->owner_name, "web-5d8f");
	ck_assert_int_eq(m->grace_s, 30);
	ck_assert_ptr_nonnull(m->istio);
	ck_assert_uint_eq(m->n_containers, 3);
	ck_assert_uint_eq(m->containers_dropped, 0);
	ck_assert_str_eq(m->containers[0].container_id, "containerd://0123abcd");
	ck_assert_int_eq(m->containers[0].role, TL_ROLE_MAIN);
	ck_assert_int_eq(m->containers[0].prestop, TL_PRESTOP_EXEC);
	ck_assert_uint_eq(m->containers[1].cgroup_id, 777);
	ck_assert_int_eq(m->containers[1].role, TL_ROLE_SIDECAR);
	ck_assert_str_eq(m->containers[2].container_id, "");
	ck_assert_int_eq(m->containers[2].role, TL_ROLE_INIT);
	tl_pod_meta_unref(m);
}
END_TEST

/* The contract's text (docs/timeline-format.md): key order as documents
 * were written, null where unknown. */
START_TEST(test_encoder_text)
{
	struct tl_pod_meta *m = decode(old_record, NULL);

	assert_json(tl_pod_meta_pod_json(m, NULL),
		    "{\"namespace\":\"shop\",\"name\":\"web-1\",\"node\":\"node-1\",\"ip\":\"10.0.0.7\","
		    "\"uid\":\"" UID "\",\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"web-5d8f\"},"
		    "\"terminationGracePeriodSeconds\":30,"
		    "\"istio\":{\"annotations\":{\"sidecar.istio.io/inject\":\"true\"}}}");
	/* the document's container: no preStop; the cgroup is the caller's */
	assert_json(tl_pod_meta_container_json(&m->containers[2], 42, false),
		    "{\"name\":\"late\",\"containerID\":null,\"role\":\"init\",\"cgroupId\":42}");
	/* the journal's record */
	assert_json(tl_pod_meta_to_json(m),
		    "{\"pod\":{\"namespace\":\"shop\",\"name\":\"web-1\",\"node\":\"node-1\",\"ip\":\"10.0.0.7\","
		    "\"uid\":\"" UID "\",\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"web-5d8f\"},"
		    "\"terminationGracePeriodSeconds\":30,"
		    "\"istio\":{\"annotations\":{\"sidecar.istio.io/inject\":\"true\"}}},"
		    "\"containers\":[{\"name\":\"app\",\"containerID\":\"containerd://0123abcd\",\"role\":\"main\","
		    "\"cgroupId\":0,\"preStop\":\"exec\"},{\"name\":\"istio-proxy\",\"containerID\":"
		    "\"containerd://fedc9876\",\"role\":\"sidecar\",\"cgroupId\":777,\"preStop\":null},"
		    "{\"name\":\"late\",\"containerID\":null,\"role\":\"init\",\"cgroupId\":0,\"preStop\":null}]}");
	/* the timeline's uid wins in the document */
	assert_json(tl_pod_meta_pod_json(m, "u-2"),
		    "{\"namespace\":\"shop\",\"name\":\"web-1\",\"node\":\"node-1\",\"ip\":\"10.0.0.7\","
		    "\"uid\":\"u-2\",\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"web-5d8f\"},"
		    "\"terminationGracePeriodSeconds\":30,"
		    "\"istio\":{\"annotations\":{\"sidecar.istio.io/inject\":\"true\"}}}");
	/* --no-api: nothing known but the uid */
	assert_json(tl_pod_meta_pod_json(NULL, "u-3"),
		    "{\"namespace\":null,\"name\":null,\"node\":null,\"ip\":null,\"uid\":\"u-3\","
		    "\"owner\":null,\"terminationGracePeriodSeconds\":null}");
	tl_pod_meta_unref(m);
}
END_TEST

/* This encoder's record read back is the same metadata. */
START_TEST(test_round_trip)
{
	struct tl_pod_meta *m = decode(old_record, NULL), *back;
	struct json_object *o = tl_pod_meta_to_json(m);

	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(tl_pod_meta_from_json(o, NULL, &back), 0);
	json_object_put(o);
	ck_assert(tl_pod_meta_equal(m, back));
	tl_pod_meta_unref(back);
	/* and with nothing known */
	tl_pod_meta_unref(m);
	m = tl_pod_meta_new(0);
	ck_assert_ptr_nonnull(m);
	o = tl_pod_meta_to_json(m);
	ck_assert_int_eq(tl_pod_meta_from_json(o, NULL, &back), 0);
	json_object_put(o);
	ck_assert(tl_pod_meta_equal(m, back));
	tl_pod_meta_unref(back);
	tl_pod_meta_unref(m);
}
END_TEST

/* Containers the table dropped are still counted after a journal's
 * record is read back: the replayed Pod is not taken as having only the
 * containers it kept. */
START_TEST(test_round_trip_dropped)
{
	struct tl_pod_meta *m = decode(old_record, NULL), *back;
	struct json_object *o;

	m->containers_dropped = 3;
	o = tl_pod_meta_to_json(m);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(tl_pod_meta_from_json(o, NULL, &back), 0);
	json_object_put(o);
	ck_assert_uint_eq(back->containers_dropped, 3);
	ck_assert(tl_pod_meta_equal(m, back));
	tl_pod_meta_unref(back);
	tl_pod_meta_unref(m);
}
END_TEST

/* Every field counts: a copy is equal, a copy with any one field changed
 * is not. */
START_TEST(test_equality)
{
	struct tl_pod_meta *m = decode(old_record, NULL), *c;

	ck_assert(tl_pod_meta_equal(NULL, NULL));
	ck_assert(!tl_pod_meta_equal(m, NULL));
	ck_assert(!tl_pod_meta_equal(NULL, m));
	for (int f = 0; f <= 14; f++) {
		c = tl_pod_meta_dup(m);
		ck_assert_ptr_nonnull(c);
		ck_assert_uint_eq(c->refs, 1);
		ck_assert(tl_pod_meta_equal(m, c));
		switch (f) {
		case 0: c->ns[0] = 'x'; break;
		case 1: c->name[0] = 'x'; break;
		case 2: c->uid[0] = 'x'; break;
		case 3: c->node[0] = 'x'; break;
		case 4: c->ip[0] = '\0'; break;
		case 5: c->owner_kind[0] = 'x'; break;
		case 6: c->owner_name[0] = 'x'; break;
		case 7: c->grace_s = -1; break;
		case 8:
			json_object_put(c->istio);
			c->istio = json_tokener_parse("{\"annotations\":{\"sidecar.istio.io/inject\":\"false\"}}");
			break;
		case 9: c->containers_dropped = 1; break;
		case 10: c->n_containers--; break;
		case 11: c->containers[1].cgroup_id = 778; break;
		case 12: c->containers[2].role = TL_ROLE_MAIN; break;
		case 13: c->containers[0].prestop = TL_PRESTOP_NONE; break;
		case 14: c->containers[0].container_id[14] = 'x'; break;
		}
		ck_assert_msg(!tl_pod_meta_equal(m, c), "field %d", f);
		tl_pod_meta_unref(c);
	}
	/* the same istio settings by value, not by pointer */
	c = tl_pod_meta_dup(m);
	json_object_put(c->istio);
	c->istio = json_tokener_parse("{\"annotations\":{\"sidecar.istio.io/inject\":\"true\"}}");
	ck_assert(tl_pod_meta_equal(m, c));
	tl_pod_meta_unref(c);
	/* shared by count: the last reference frees */
	c = tl_pod_meta_ref(m);
	ck_assert_ptr_eq(c, m);
	ck_assert_uint_eq(m->refs, 2);
	tl_pod_meta_unref(c);
	ck_assert_uint_eq(m->refs, 1);
	tl_pod_meta_unref(m);
	tl_pod_meta_unref(NULL);
}
END_TEST

/* A damaged record: wrong types read as absent, strings that do not fit
 * are dropped whole, the container table is bounded and counted. */
START_TEST(test_damaged_record)
{
	size_t cap = 40000, len = 0;
	char *text = malloc(cap), long_ns[100];
	struct json_object *o;
	struct tl_pod_meta *m = NULL;

	ck_assert_ptr_nonnull(text);
	memset(long_ns, 'n', 99);
	long_ns[99] = '\0';
	len += (size_t)snprintf(text + len, cap - len,
				"{\"pod\":{\"namespace\":\"%s\",\"name\":7,\"uid\":\"\",\"ip\":[1],"
				"\"owner\":{\"kind\":\"Job\"},\"terminationGracePeriodSeconds\":1.5,"
				"\"istio\":\"no\"},\"containers\":[5,{\"name\":null},", long_ns);
	for (int i = 0; i < 300; i++)
		len += (size_t)snprintf(text + len, cap - len,
					"{\"name\":\"c%d\",\"role\":\"boss\",\"cgroupId\":-4,\"preStop\":3},", i);
	len += (size_t)snprintf(text + len, cap - len, "{\"name\":\"last\"}]}");
	ck_assert_uint_lt(len, cap - 1);
	m = decode(text, "fallback-uid");
	ck_assert_str_eq(m->ns, "");
	ck_assert_str_eq(m->name, "");
	ck_assert_str_eq(m->uid, "fallback-uid");
	ck_assert_str_eq(m->ip, "");
	ck_assert_str_eq(m->owner_kind, "");
	ck_assert_str_eq(m->owner_name, "");
	ck_assert_int_eq(m->grace_s, -1);
	ck_assert_ptr_null(m->istio);
	ck_assert_uint_eq(m->n_containers, TL_POD_CONTAINERS_MAX);
	/* kept: the nameless one (as documents showed it: name null) and
	 * c0..c254; dropped: 5, c255..c299 and "last" */
	ck_assert_uint_eq(m->containers_dropped, 1 + 45 + 1);
	ck_assert_str_eq(m->containers[0].name, "");
	ck_assert_str_eq(m->containers[1].name, "c0");
	ck_assert_str_eq(m->containers[255].name, "c254");
	ck_assert_int_eq(m->containers[1].role, TL_ROLE_NONE);
	ck_assert_int_eq(m->containers[1].prestop, TL_PRESTOP_NONE);
	ck_assert_uint_eq(m->containers[1].cgroup_id, 0);
	tl_pod_meta_unref(m);
	free(text);
	/* not an object at all */
	o = json_tokener_parse("[1,2]");
	ck_assert_int_eq(tl_pod_meta_from_json(o, UID, &m), -EINVAL);
	json_object_put(o);
	ck_assert_int_eq(tl_pod_meta_from_json(NULL, UID, &m), -EINVAL);
}
END_TEST

START_TEST(test_bounded_copy)
{
	char small[4];

	ck_assert_int_eq(TL_POD_META_SET(small, "abc"), 0);
	ck_assert_str_eq(small, "abc");
	ck_assert_int_eq(TL_POD_META_SET(small, "abcd"), -ENAMETOOLONG);
	ck_assert_str_eq(small, ""); /* never cut */
	ck_assert_int_eq(TL_POD_META_SET(small, NULL), 0);
	ck_assert_str_eq(small, "");
	ck_assert_ptr_null(tl_pod_meta_new(TL_POD_CONTAINERS_MAX + 1));
	ck_assert_str_eq(tl_pod_role_name(TL_ROLE_SIDECAR), "sidecar");
	ck_assert_ptr_null(tl_pod_role_name(TL_ROLE_NONE));
	ck_assert_ptr_null(tl_pod_role_name(99));
	ck_assert_int_eq(tl_pod_prestop_parse("httpGet"), TL_PRESTOP_HTTP_GET);
	ck_assert_int_eq(tl_pod_prestop_parse("HTTPGET"), TL_PRESTOP_NONE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pod-meta");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_previous_record_decoded);
	tcase_add_test(tc, test_encoder_text);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_round_trip_dropped);
	tcase_add_test(tc, test_equality);
	tcase_add_test(tc, test_damaged_record);
	tcase_add_test(tc, test_bounded_copy);
	suite_add_tcase(s, tc);
	return tl_check_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
