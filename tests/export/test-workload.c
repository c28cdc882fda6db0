/* SPDX-License-Identifier: Apache-2.0 */
/* A Pod's workload from its controller owner (daemon/findings/workload.h),
 * the name the per-workload metrics and the OTLP resource use
 * (docs/export.md): a ReplicaSet's pod-template-hash stripped to its
 * Deployment, a CronJob's Job to the CronJob, every other owner itself, a
 * bare Pod none. */
#include <check.h>
#include <string.h>

#include "workload.h"
#include "../check-run.h"

/* tl_workload_of() into kind and name; false: none. */
static bool of(const char *kind, const char *name, const char **ret_kind, char *buf, size_t size)
{
	*ret_kind = "(unset)";
	memset(buf, 'x', size);
	return tl_workload_of(kind, name, ret_kind, buf, size);
}

#define WORKLOAD(okind, oname, want_kind, want_name)                                          \
	do {                                                                                  \
		const char *k_;                                                               \
		char n_[256];                                                                 \
		ck_assert_msg(of(okind, oname, &k_, n_, sizeof(n_)), "%s/%s: no workload",    \
			      okind, oname);                                                  \
		ck_assert_str_eq(k_, want_kind);                                              \
		ck_assert_str_eq(n_, want_name);                                              \
	} while (0)

START_TEST(deployment_hash_stripped)
{
	char buf[64];

	/* the Deployment controller's ReplicaSets: NAME-HASH, the hash in
	 * SafeEncodeString's alphabet (no vowels, no 0, 1, 3) */
	WORKLOAD("ReplicaSet", "web-5d9c7", "Deployment", "web");
	WORKLOAD("ReplicaSet", "checkout-service-7d9f8b6c5d", "Deployment", "checkout-service");
	WORKLOAD("ReplicaSet", "api-v2-68f4b5bd47", "Deployment", "api-v2");
	WORKLOAD("ReplicaSet", "a-b", "Deployment", "a");
	/* ten characters is the longest hash */
	WORKLOAD("ReplicaSet", "web-bcdfghjklm", "Deployment", "web");
	/* an Argo Rollout names its ReplicaSets the same way */
	WORKLOAD("ReplicaSet", "canary-demo-6cbf7d5c8", "Deployment", "canary-demo");

	ck_assert(tl_workload_deployment_of("web-5d9c7", buf, sizeof(buf)));
	ck_assert_str_eq(buf, "web");
	/* "web" needs 4 bytes */
	ck_assert(tl_workload_deployment_of("web-5d9c7", buf, 4));
	ck_assert_str_eq(buf, "web");
	ck_assert(!tl_workload_deployment_of("web-5d9c7", buf, 3));
	ck_assert(!tl_workload_deployment_of(NULL, buf, sizeof(buf)));
}
END_TEST

START_TEST(replicaset_of_its_own)
{
	char buf[64];

	/* not a hash: a vowel, 0, 1, 3, upper case, too long, empty, no name */
	WORKLOAD("ReplicaSet", "web-abc", "ReplicaSet", "web-abc");
	WORKLOAD("ReplicaSet", "web-5d9c0", "ReplicaSet", "web-5d9c0");
	WORKLOAD("ReplicaSet", "web-5d1c3", "ReplicaSet", "web-5d1c3");
	WORKLOAD("ReplicaSet", "web-5D9C7", "ReplicaSet", "web-5D9C7");
	WORKLOAD("ReplicaSet", "web-bcdfghjklmn", "ReplicaSet", "web-bcdfghjklmn");
	WORKLOAD("ReplicaSet", "web-", "ReplicaSet", "web-");
	WORKLOAD("ReplicaSet", "-5d9c7", "ReplicaSet", "-5d9c7");
	WORKLOAD("ReplicaSet", "frontend", "ReplicaSet", "frontend");
	ck_assert(!tl_workload_deployment_of("frontend", buf, sizeof(buf)));
	ck_assert(!tl_workload_deployment_of("web-", buf, sizeof(buf)));
	ck_assert(!tl_workload_deployment_of("-5d9c7", buf, sizeof(buf)));
	/* only the last dash counts: the hash is what follows it */
	WORKLOAD("ReplicaSet", "web-5d9c7-extra", "ReplicaSet", "web-5d9c7-extra");
}
END_TEST

START_TEST(other_controllers_are_themselves)
{
	/* a StatefulSet's or DaemonSet's Pods are named after it, but its
	 * owner reference is the controller itself: never stripped */
	WORKLOAD("StatefulSet", "db", "StatefulSet", "db");
	WORKLOAD("StatefulSet", "db-5d9c7", "StatefulSet", "db-5d9c7");
	WORKLOAD("DaemonSet", "fluent-bit", "DaemonSet", "fluent-bit");
	WORKLOAD("DaemonSet", "node-exporter-bcd", "DaemonSet", "node-exporter-bcd");
	/* a static Pod's mirror is owned by its Node */
	WORKLOAD("Node", "node-a", "Node", "node-a");
	WORKLOAD("Rollout", "canary-demo", "Rollout", "canary-demo");
}
END_TEST

START_TEST(jobs_and_cronjobs)
{
	/* the CronJob controller's Jobs: NAME-<minutes since the epoch> */
	WORKLOAD("Job", "report-29412360", "CronJob", "report");
	WORKLOAD("Job", "nightly-backup-2941236000", "CronJob", "nightly-backup");
	WORKLOAD("Job", "a-b-c-12345678", "CronJob", "a-b-c");
	/* 7 or 11 digits, a letter, no name before the dash: a Job of its own */
	WORKLOAD("Job", "migrate-1234567", "Job", "migrate-1234567");
	WORKLOAD("Job", "migrate-12345678901", "Job", "migrate-12345678901");
	WORKLOAD("Job", "migrate-2941236a", "Job", "migrate-2941236a");
	WORKLOAD("Job", "-29412360", "Job", "-29412360");
	WORKLOAD("Job", "migrate", "Job", "migrate");
	/* digits after a ReplicaSet's name are a hash of digits, stripped;
	 * after a StatefulSet's, nothing */
	WORKLOAD("ReplicaSet", "web-29452", "Deployment", "web");
	WORKLOAD("StatefulSet", "db-29412360", "StatefulSet", "db-29412360");
}
END_TEST

START_TEST(bare_pod_and_bounds)
{
	const char *k;
	char name[16];

	/* no controller owner: no workload (the metrics count it as "_none") */
	ck_assert(!of(NULL, NULL, &k, name, sizeof(name)));
	ck_assert(!of("", "", &k, name, sizeof(name)));
	ck_assert(!of("ReplicaSet", NULL, &k, name, sizeof(name)));
	ck_assert(!of("ReplicaSet", "", &k, name, sizeof(name)));
	ck_assert(!of(NULL, "web-5d9c7", &k, name, sizeof(name)));
	ck_assert(!of("ReplicaSet", "web-5d9c7", &k, name, 0));
	/* a name that does not fit is no workload, never a cut one */
	ck_assert(!of("StatefulSet", "a-statefulset-of-16", &k, name, sizeof(name)));
	ck_assert(!of("StatefulSet", "sixteen-chars-xx", &k, name, sizeof(name)));
	ck_assert(of("StatefulSet", "fifteen-chars-x", &k, name, sizeof(name)));
	ck_assert_str_eq(name, "fifteen-chars-x");
	/* the Deployment's name fits where the ReplicaSet's would not */
	ck_assert(of("ReplicaSet", "checkout-7d9f8b6c5d", &k, name, sizeof(name)));
	ck_assert_str_eq(k, "Deployment");
	ck_assert_str_eq(name, "checkout");
	/* a Deployment whose name does not fit either */
	ck_assert(!of("ReplicaSet", "a-very-long-deployment-7d9f8b6c5d", &k, name, sizeof(name)));
	/* a CronJob's name that fits, its Job's not */
	ck_assert(of("Job", "report-29412360", &k, name, 8));
	ck_assert_str_eq(k, "CronJob");
	ck_assert_str_eq(name, "report");
	ck_assert(!of("Job", "report-29412360", &k, name, 6));
}
END_TEST

START_TEST(longest_names)
{
	/* Kubernetes' longest object names (253) fit the metrics' buffer */
	char rs[254], want[254];
	const char *k;
	char name[256];

	memset(rs, 'w', sizeof(rs));
	memcpy(rs + 253 - 11, "-7d9f8b6c5d", 11);
	rs[253] = '\0';
	memcpy(want, rs, 242);
	want[242] = '\0';
	ck_assert(of("ReplicaSet", rs, &k, name, sizeof(name)));
	ck_assert_str_eq(k, "Deployment");
	ck_assert_str_eq(name, want);
	ck_assert(of("StatefulSet", rs, &k, name, sizeof(name)));
	ck_assert_str_eq(name, rs);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("workload");
	TCase *tc = tcase_create("workload");

	tcase_add_test(tc, deployment_hash_stripped);
	tcase_add_test(tc, replicaset_of_its_own);
	tcase_add_test(tc, other_controllers_are_themselves);
	tcase_add_test(tc, jobs_and_cronjobs);
	tcase_add_test(tc, bare_pod_and_bounds);
	tcase_add_test(tc, longest_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? 1 : 0;
}
