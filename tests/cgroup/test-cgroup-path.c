/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-path.h"
#include "../check-run.h"

/* A pod UID in API form, as the systemd driver writes it, and a 64-hex id. */
#define UID "5f3c9a2e-1b7d-4c8e-9f0a-123456789abc"
#define UIDS "5f3c9a2e_1b7d_4c8e_9f0a_123456789abc"
#define STATIC_UID "2f1e5d1ab0bd4e9f8b2c3d4e5f60718a"
#define CID "4f1e0c9a8b7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f"
#define CID_SHORT "4f1e0c9a8b7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1"
#define CID_UPPER "4F1E0C9A8B7D6E5F4A3B2C1D0E9F8A7B6C5D4E3F2A1B0C9D8E7F6A5B4C3D2E1F"

#define SD_BU "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDS ".slice"
#define SD_BE "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDS ".slice"
#define SD_GU "kubepods.slice/kubepods-pod" UIDS ".slice"
#define FS_BU "kubepods/burstable/pod" UID
#define FS_BE "kubepods/besteffort/pod" UID
#define FS_GU "kubepods/pod" UID

enum { K_OTHER = TL_CGROUP_OTHER, K_POD = TL_CGROUP_POD, K_CTR = TL_CGROUP_CONTAINER };
enum { Q_NONE = TL_QOS_UNKNOWN, Q_GU = TL_QOS_GUARANTEED, Q_BU = TL_QOS_BURSTABLE, Q_BE = TL_QOS_BESTEFFORT };
enum { R_NONE = TL_RUNTIME_UNKNOWN, R_CTRD = TL_RUNTIME_CONTAINERD, R_CRIO = TL_RUNTIME_CRIO,
       R_DOCKER = TL_RUNTIME_DOCKER };
enum { D_NONE = TL_DRIVER_UNKNOWN, D_SD = TL_DRIVER_SYSTEMD, D_FS = TL_DRIVER_CGROUPFS };

struct path_case {
	const char *name;
	const char *path;
	int ret;
	int kind, qos, runtime, driver;
	bool conmon, nested;
	const char *uid, *id;
};

#define OK(n, p, k, q, r, d, c, ne, u, i) { n, p, 0, k, q, r, d, c, ne, u, i }
#define BAD(n, p) { n, p, -EINVAL, 0, 0, 0, 0, false, false, NULL, NULL }

static const struct path_case cases[] = {
	/* containerd, systemd driver, every QoS */
	OK("ctrd-sd-guaranteed", SD_GU "/cri-containerd-" CID ".scope", K_CTR, Q_GU, R_CTRD, D_SD, false, false, UID, CID),
	OK("ctrd-sd-burstable", SD_BU "/cri-containerd-" CID ".scope", K_CTR, Q_BU, R_CTRD, D_SD, false, false, UID, CID),
	OK("ctrd-sd-besteffort", SD_BE "/cri-containerd-" CID ".scope", K_CTR, Q_BE, R_CTRD, D_SD, false, false, UID, CID),
	/* containerd (or cri-dockerd), cgroupfs driver: a bare id names no runtime */
	OK("ctrd-fs-guaranteed", FS_GU "/" CID, K_CTR, Q_GU, R_NONE, D_FS, false, false, UID, CID),
	OK("ctrd-fs-burstable", FS_BU "/" CID, K_CTR, Q_BU, R_NONE, D_FS, false, false, UID, CID),
	OK("ctrd-fs-besteffort", FS_BE "/" CID, K_CTR, Q_BE, R_NONE, D_FS, false, false, UID, CID),
	/* CRI-O, both drivers, every QoS */
	OK("crio-sd-guaranteed", SD_GU "/crio-" CID ".scope", K_CTR, Q_GU, R_CRIO, D_SD, false, false, UID, CID),
	OK("crio-sd-burstable", SD_BU "/crio-" CID ".scope", K_CTR, Q_BU, R_CRIO, D_SD, false, false, UID, CID),
	OK("crio-sd-besteffort", SD_BE "/crio-" CID ".scope", K_CTR, Q_BE, R_CRIO, D_SD, false, false, UID, CID),
	OK("crio-fs-guaranteed", FS_GU "/crio-" CID, K_CTR, Q_GU, R_CRIO, D_FS, false, false, UID, CID),
	OK("crio-fs-burstable", FS_BU "/crio-" CID, K_CTR, Q_BU, R_CRIO, D_FS, false, false, UID, CID),
	OK("crio-fs-besteffort", FS_BE "/crio-" CID, K_CTR, Q_BE, R_CRIO, D_FS, false, false, UID, CID),
	/* CRI-O's conmon is not the container */
	OK("crio-conmon-sd", SD_BU "/crio-conmon-" CID ".scope", K_OTHER, Q_BU, R_CRIO, D_SD, true, false, UID, CID),
	OK("crio-conmon-fs", FS_GU "/crio-conmon-" CID, K_OTHER, Q_GU, R_CRIO, D_FS, true, false, UID, CID),
	/* docker (cri-dockerd), systemd */
	OK("docker-sd-burstable", SD_BU "/docker-" CID ".scope", K_CTR, Q_BU, R_DOCKER, D_SD, false, false, UID, CID),
	/* the sandbox's leaf is indistinguishable by name: reported as container */
	OK("sandbox-leaf", SD_BE "/cri-containerd-" CID ".scope", K_CTR, Q_BE, R_CTRD, D_SD, false, false, UID, CID),
	/* runc's cgroupfs driver given "<pod slice>:<prefix>:<id>" (a .slice parent with the
	 * runtime's SystemdCgroup off): one directory of that name, anywhere */
	OK("colon-ctrd-besteffort", "kubepods-besteffort-pod" UIDS ".slice:cri-containerd:" CID,
	   K_CTR, Q_BE, R_CTRD, D_FS, false, false, UID, CID),
	OK("colon-ctrd-burstable-prefixed", "termline-rt-1/kubepods-burstable-pod" UIDS ".slice:cri-containerd:" CID,
	   K_CTR, Q_BU, R_CTRD, D_FS, false, false, UID, CID),
	OK("colon-crio-guaranteed", "kubepods-pod" UIDS ".slice:crio:" CID, K_CTR, Q_GU, R_CRIO, D_FS, false, false,
	   UID, CID),
	OK("colon-root-kubepods", "kubelet-kubepods-besteffort-pod" UIDS ".slice:cri-containerd:" CID,
	   K_CTR, Q_BE, R_CTRD, D_FS, false, false, UID, CID),
	OK("colon-static-pod", "kubepods-besteffort-pod" STATIC_UID ".slice:cri-containerd:" CID,
	   K_CTR, Q_BE, R_CTRD, D_FS, false, false, STATIC_UID, CID),
	OK("colon-nested", "kubepods-besteffort-pod" UIDS ".slice:cri-containerd:" CID "/child",
	   K_CTR, Q_BE, R_CTRD, D_FS, false, true, UID, CID),
	/* colons elsewhere are no kubelet's names */
	OK("colon-short-id", "kubepods-besteffort-pod" UIDS ".slice:cri-containerd:" CID_SHORT,
	   K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	OK("colon-unknown-prefix", "kubepods-besteffort-pod" UIDS ".slice:runc:" CID,
	   K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	OK("colon-no-slice", "kubepods-besteffort-pod" UIDS ":cri-containerd:" CID,
	   K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	OK("colon-dash-uid", "kubepods-besteffort-pod" UID ".slice:cri-containerd:" CID,
	   K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	OK("colon-not-kubepods", "user-pod" UIDS ".slice:cri-containerd:" CID,
	   K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	OK("colon-other", "foo:bar", K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	/* levels above the container */
	OK("pod-sd-burstable", SD_BU, K_POD, Q_BU, R_NONE, D_SD, false, false, UID, ""),
	OK("pod-sd-guaranteed", SD_GU, K_POD, Q_GU, R_NONE, D_SD, false, false, UID, ""),
	OK("pod-fs-besteffort", FS_BE, K_POD, Q_BE, R_NONE, D_FS, false, false, UID, ""),
	OK("pod-fs-guaranteed", FS_GU, K_POD, Q_GU, R_NONE, D_FS, false, false, UID, ""),
	OK("qos-sd", "kubepods.slice/kubepods-besteffort.slice", K_OTHER, Q_BE, R_NONE, D_SD, false, false, "", ""),
	OK("qos-fs", "kubepods/burstable", K_OTHER, Q_BU, R_NONE, D_FS, false, false, "", ""),
	OK("kubepods-sd", "kubepods.slice", K_OTHER, Q_NONE, R_NONE, D_SD, false, false, "", ""),
	OK("kubepods-fs", "kubepods", K_OTHER, Q_NONE, R_NONE, D_FS, false, false, "", ""),
	OK("root-empty", "", K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	OK("root-slash", "/", K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	OK("host-service", "system.slice/containerd.service", K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	OK("host-lookalike", "system.slice/kubepods-x.service", K_OTHER, Q_NONE, R_NONE, D_NONE, false, false, "", ""),
	/* as /proc/PID/cgroup prints it */
	OK("leading-slash", "/" SD_BU "/cri-containerd-" CID ".scope", K_CTR, Q_BU, R_CTRD, D_SD, false, false, UID, CID),
	/* prefixes above kubepods */
	OK("prefix-test-dir", "termline-test-123/" SD_BU "/cri-containerd-" CID ".scope", K_CTR, Q_BU, R_CTRD, D_SD,
	   false, false, UID, CID),
	OK("prefix-system-slice", "system.slice/" FS_BE "/" CID, K_CTR, Q_BE, R_NONE, D_FS, false, false, UID, CID),
	OK("prefix-cgroup-root-sd",
	   "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" UIDS
	   ".slice/cri-containerd-" CID ".scope", K_CTR, Q_BU, R_CTRD, D_SD, false, false, UID, CID),
	OK("prefix-cgroup-root-sd-guaranteed",
	   "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod" UIDS ".slice/crio-" CID ".scope",
	   K_CTR, Q_GU, R_CRIO, D_SD, false, false, UID, CID),
	OK("prefix-cgroup-root-fs", "kubelet/" FS_BE "/" CID, K_CTR, Q_BE, R_NONE, D_FS, false, false, UID, CID),
	/* static (mirror) pods: 32-hex UID */
	OK("static-pod-sd", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID ".slice",
	   K_POD, Q_BU, R_NONE, D_SD, false, false, STATIC_UID, ""),
	OK("static-pod-fs", "kubepods/pod" STATIC_UID "/" CID, K_CTR, Q_GU, R_NONE, D_FS, false, false, STATIC_UID, CID),
	/* cgroups a container made below its own leaf belong to it */
	OK("nested-sd", SD_BU "/crio-" CID ".scope/container", K_CTR, Q_BU, R_CRIO, D_SD, false, true, UID, CID),
	OK("nested-fs-deep", FS_GU "/" CID "/a/b/c", K_CTR, Q_GU, R_NONE, D_FS, false, true, UID, CID),

	/* malformed and truncated */
	BAD("null", NULL),
	BAD("id-truncated", SD_BU "/cri-containerd-" CID_SHORT ".scope"),
	BAD("id-too-long", SD_BU "/cri-containerd-" CID "0.scope"),
	BAD("id-uppercase", SD_BU "/cri-containerd-" CID_UPPER ".scope"),
	BAD("id-empty", SD_BU "/cri-containerd-.scope"),
	BAD("id-fs-truncated", FS_BU "/" CID_SHORT),
	BAD("crio-fs-empty", FS_BU "/crio-"),
	BAD("conmon-empty", SD_BU "/crio-conmon-.scope"),
	BAD("scope-missing", SD_BU "/cri-containerd-" CID),
	BAD("scope-truncated", SD_BU "/cri-containerd-" CID ".scop"),
	BAD("runtime-unknown", SD_BU "/containerd-" CID ".scope"),
	BAD("leaf-under-qos", "kubepods/burstable/" CID),
	BAD("uid-dashes-under-systemd", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID ".slice"),
	BAD("uid-underscores-under-cgroupfs", "kubepods/burstable/pod" UIDS),
	BAD("uid-truncated", "kubepods/burstable/pod5f3c9a2e-1b7d-4c8e-9f0a-123456789ab"),
	BAD("uid-bad-hex", "kubepods/burstable/pod5f3c9a2e-1b7d-4c8e-9f0a-123456789abg"),
	BAD("uid-uppercase", "kubepods/burstable/pod5F3C9A2E-1B7D-4C8E-9F0A-123456789ABC"),
	BAD("uid-misplaced-dash", "kubepods/burstable/pod5f3c9a2e1-b7d-4c8e-9f0a-123456789abc"),
	BAD("uid-empty", "kubepods.slice/kubepods-pod.slice"),
	BAD("uid-static-truncated", "kubepods/pod2f1e5d1ab0bd4e9f8b2c3d4e5f60718"),
	BAD("pod-slice-missing", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDS),
	BAD("pod-qos-mismatch", "kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod" UIDS ".slice"),
	BAD("pod-qos-level-missing", "kubepods.slice/kubepods-burstable-pod" UIDS ".slice"),
	BAD("pod-prefix-mismatch", "kubelet.slice/kubelet-kubepods.slice/kubepods-pod" UIDS ".slice"),
	BAD("qos-unknown-sd", "kubepods.slice/kubepods-gold.slice"),
	BAD("qos-unknown-fs", "kubepods/gold"),
	BAD("qos-truncated", "kubepods.slice/kubepods-"),
	BAD("pod-truncated", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-"),
	BAD("pod-truncated-pod", "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"),
	BAD("empty-component", "kubepods//burstable"),
	BAD("trailing-slash", "kubepods/"),
	BAD("dotdot", "kubepods/../kubepods/burstable"),
	BAD("dot", "./kubepods"),
	BAD("dotdot-host", "system.slice/.."),
};

static void assert_untouched(const struct tl_cgroup_path *p)
{
	const unsigned char *b = (const unsigned char *)p;

	for (size_t i = 0; i < sizeof(*p); i++)
		ck_assert_msg(b[i] == 0xa5, "output changed at byte %zu on failure", i);
}

START_TEST(path_table)
{
	const struct path_case *c = &cases[_i];
	struct tl_cgroup_path p;
	int r;

	memset(&p, 0xa5, sizeof(p));
	r = tl_cgroup_path_parse(c->path, &p);
	ck_assert_msg(r == c->ret, "%s: returned %d, expected %d", c->name, r, c->ret);
	if (c->ret < 0) {
		assert_untouched(&p);
		return;
	}
	ck_assert_msg(p.kind == (enum tl_cgroup_kind)c->kind, "%s: kind %s", c->name, tl_cgroup_kind_name(p.kind));
	ck_assert_msg(p.qos == (enum tl_cgroup_qos)c->qos, "%s: qos %s", c->name, tl_cgroup_qos_name(p.qos));
	ck_assert_msg(p.runtime == (enum tl_cgroup_runtime)c->runtime, "%s: runtime %s", c->name,
		      tl_cgroup_runtime_name(p.runtime));
	ck_assert_msg(p.driver == (enum tl_cgroup_driver)c->driver, "%s: driver %s", c->name,
		      tl_cgroup_driver_name(p.driver));
	ck_assert_msg(p.conmon == c->conmon, "%s: conmon", c->name);
	ck_assert_msg(p.nested == c->nested, "%s: nested", c->name);
	ck_assert_msg(strcmp(p.pod_uid, c->uid) == 0, "%s: pod_uid '%s'", c->name, p.pod_uid);
	ck_assert_msg(strcmp(p.container_id, c->id) == 0, "%s: container_id '%s'", c->name, p.container_id);
}
END_TEST

START_TEST(path_null_ret)
{
	ck_assert_int_eq(tl_cgroup_path_parse(FS_GU, NULL), -EINVAL);
}
END_TEST

/* Builds prefix + a component of n 'a's + suffix. */
static char *with_component(const char *prefix, size_t n, const char *suffix)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);
	char *s = malloc(pl + n + sl + 1);

	ck_assert_ptr_nonnull(s);
	memcpy(s, prefix, pl);
	memset(s + pl, 'a', n);
	memcpy(s + pl + n, suffix, sl + 1);
	return s;
}

START_TEST(path_component_limit)
{
	struct tl_cgroup_path p;
	char *ok = with_component("system.slice/", 255, "/x");
	char *bad = with_component("system.slice/", 256, "/x");
	char *bad_leaf = with_component(FS_GU "/", 256, "");
	char *bad_nested = with_component(FS_GU "/" CID "/", 300, "");

	ck_assert_int_eq(tl_cgroup_path_parse(ok, &p), 0);
	ck_assert_int_eq(p.kind, TL_CGROUP_OTHER);
	memset(&p, 0xa5, sizeof(p));
	ck_assert_int_eq(tl_cgroup_path_parse(bad, &p), -EINVAL);
	ck_assert_int_eq(tl_cgroup_path_parse(bad_leaf, &p), -EINVAL);
	ck_assert_int_eq(tl_cgroup_path_parse(bad_nested, &p), -EINVAL);
	assert_untouched(&p);
	free(ok);
	free(bad);
	free(bad_leaf);
	free(bad_nested);
}
END_TEST

/* "a/a/a/..." of exactly len bytes below a valid container leaf. */
static char *deep_path(size_t len)
{
	const char *base = FS_BU "/" CID;
	size_t bl = strlen(base);
	char *s = malloc(len + 1);

	ck_assert_ptr_nonnull(s);
	ck_assert_uint_gt(len, bl + 2);
	memcpy(s, base, bl);
	for (size_t i = bl; i < len; i++)
		s[i] = ((i - bl) % 2 == 0) ? '/' : 'a';
	if (s[len - 1] == '/')
		s[len - 1] = 'b', s[len - 2] = 'b';
	s[len] = '\0';
	return s;
}

START_TEST(path_length_limit)
{
	struct tl_cgroup_path p;
	char *longest = deep_path(PATH_MAX - 1);
	char *too_long = deep_path(PATH_MAX);
	char *huge = deep_path(16 * PATH_MAX);

	/* the most components a real path can have still parses, as nested */
	ck_assert_int_eq(tl_cgroup_path_parse(longest, &p), 0);
	ck_assert_int_eq(p.kind, TL_CGROUP_CONTAINER);
	ck_assert(p.nested);
	ck_assert_str_eq(p.container_id, CID);
	memset(&p, 0xa5, sizeof(p));
	ck_assert_int_eq(tl_cgroup_path_parse(too_long, &p), -EINVAL);
	ck_assert_int_eq(tl_cgroup_path_parse(huge, &p), -EINVAL);
	assert_untouched(&p);
	free(longest);
	free(too_long);
	free(huge);
}
END_TEST

START_TEST(path_names)
{
	ck_assert_str_eq(tl_cgroup_kind_name(TL_CGROUP_SANDBOX), "sandbox");
	ck_assert_str_eq(tl_cgroup_kind_name(TL_CGROUP_CONTAINER), "container");
	ck_assert_str_eq(tl_cgroup_qos_name(TL_QOS_BESTEFFORT), "besteffort");
	ck_assert_str_eq(tl_cgroup_runtime_name(TL_RUNTIME_CRIO), "crio");
	ck_assert_str_eq(tl_cgroup_driver_name(TL_DRIVER_CGROUPFS), "cgroupfs");
	ck_assert_str_eq(tl_cgroup_kind_name((enum tl_cgroup_kind)99), "other");
}
END_TEST

static Suite *path_suite(void)
{
	Suite *s = suite_create("cgroup-path");
	TCase *tc = tcase_create("parse");

	tcase_add_loop_test(tc, path_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, path_null_ret);
	tcase_add_test(tc, path_component_limit);
	tcase_add_test(tc, path_length_limit);
	tcase_add_test(tc, path_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int failed = tl_check_run(path_suite());

	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
