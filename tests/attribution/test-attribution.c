/* SPDX-License-Identifier: Apache-2.0 */
/* Attribution without root: a kubelet-style directory tree stands for the
 * cgroup2 mount, the API side is a pair of callbacks. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attribution.h"
#include "cgroup-map.h"
#include "event.h"
#include "macro.h"
#include "../check-run.h"

#define UID1 "5f3c9a2e-1b7d-4c8e-9f0a-123456789abc"
#define UID1S "5f3c9a2e_1b7d_4c8e_9f0a_123456789abc"
#define UID2 "0d8c7b6a-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
#define CID_APP "1111111111111111111111111111111111111111111111111111111111111111"
#define CID_PAUSE "2222222222222222222222222222222222222222222222222222222222222222"
#define POD1 "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID1S ".slice"
#define LEAF_APP POD1 "/cri-containerd-" CID_APP ".scope"
#define LEAF_PAUSE POD1 "/cri-containerd-" CID_PAUSE ".scope"
#define S 1000000000LL

static char root[64];
static char untracked[4][64];
static int n_untracked;

static const char *pod_by_ip(void *ud _unused_, const char *ip)
{
	if (strcmp(ip, "10.1.0.7") == 0)
		return UID2;
	if (strcmp(ip, "fd00::7") == 0)
		return UID1;
	return NULL;
}

static const char *container_name(void *ud _unused_, const char *bare_id)
{
	return strcmp(bare_id, CID_APP) == 0 ? "app" : NULL;
}

static void untrack_ip(void *ud _unused_, const char *ip)
{
	ck_assert_int_lt(n_untracked, 4);
	snprintf(untracked[n_untracked++], sizeof(untracked[0]), "%s", ip);
}

static const struct tl_attr_ops ops = { pod_by_ip, container_name, untrack_ip, NULL };

static void mkdirs(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		ck_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
		*s = '/';
	}
	ck_assert(mkdir(p, 0755) == 0 || errno == EEXIST);
}

static uint64_t ino_of(const char *rel)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	ck_assert_int_eq(stat(p, &st), 0);
	return (uint64_t)st.st_ino;
}

static int rm_one(const char *path, const struct stat *st _unused_, int flag _unused_,
		  struct FTW *ftw _unused_)
{
	return remove(path);
}

static struct tl_cgroup_map *map;
static struct tl_attr *attr;

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/tl-attr-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	mkdirs(LEAF_APP);
	mkdirs(LEAF_PAUSE);
	ck_assert_int_eq(tl_cgroup_map_new(root, NULL, &map), 0);
	ck_assert_int_eq(tl_cgroup_map_scan(map), 0);
	ck_assert_int_eq(tl_attr_new(map, &ops, &attr), 0);
	n_untracked = 0;
}

static void teardown(void)
{
	tl_attr_free(attr);
	tl_cgroup_map_free(map);
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static struct tl_event ev;

START_TEST(by_cgroup_and_name)
{
	tl_event_init_kind(&ev, TL_KIND_PROCESS_EXEC, TL_SRC_KERNEL, 1);
	ev.cgroup_id = ino_of(LEAF_APP);
	tl_attr_event(attr, &ev, 10 * S);
	ck_assert_str_eq(ev.pod_uid, UID1);
	ck_assert_str_eq(ev.container_id, CID_APP);
	ck_assert_str_eq(ev.container, "app");
	ck_assert(!(ev.flags & TL_EF_SANDBOX));
	/* an unknown cgroup stays unattributed */
	tl_event_init_kind(&ev, TL_KIND_PROCESS_EXEC, TL_SRC_KERNEL, 1);
	ev.cgroup_id = 999999999;
	tl_attr_event(attr, &ev, 10 * S);
	ck_assert_str_eq(ev.pod_uid, "");
	/* what the producer knew is kept */
	tl_event_init_kind(&ev, TL_KIND_PROCESS_EXEC, TL_SRC_KERNEL, 1);
	ev.cgroup_id = ino_of(LEAF_APP);
	strcpy(ev.pod_uid, UID2);
	tl_attr_event(attr, &ev, 10 * S);
	ck_assert_str_eq(ev.pod_uid, UID2);
}
END_TEST

START_TEST(tombstones_for_a_minute)
{
	const struct tl_cgroup_info *info;
	uint64_t id = ino_of(LEAF_APP);
	char p[PATH_MAX];

	info = tl_cgroup_map_lookup(map, id);
	ck_assert_ptr_nonnull(info);
	tl_attr_cgroup_removed(attr, info, 100 * S);
	snprintf(p, sizeof(p), "%s/%s", root, LEAF_APP);
	ck_assert_int_eq(rmdir(p), 0);
	ck_assert_int_eq(tl_cgroup_map_scan(map), 0);
	ck_assert_ptr_null(tl_cgroup_map_lookup(map, id));
	/* the container's last exit, drained after the removal */
	tl_event_init_kind(&ev, TL_KIND_PROCESS_EXIT, TL_SRC_KERNEL, 1);
	ev.cgroup_id = id;
	tl_attr_event(attr, &ev, 130 * S);
	ck_assert_str_eq(ev.pod_uid, UID1);
	ck_assert_str_eq(ev.container, "app");
	/* past the TTL: forgotten */
	tl_event_init_kind(&ev, TL_KIND_PROCESS_EXIT, TL_SRC_KERNEL, 1);
	ev.cgroup_id = id;
	tl_attr_event(attr, &ev, 100 * S + TL_ATTR_TOMBSTONE_TTL_NS);
	ck_assert_str_eq(ev.pod_uid, "");
	ck_assert_ptr_null(tl_attr_find_tombstone(attr, id, 200 * S));
	ck_assert_ptr_nonnull(tl_attr_find_tombstone(attr, id, 101 * S));
}
END_TEST

START_TEST(resets_by_pod_ip)
{
	uint8_t local[16] = { 0 }, remote[16] = { 0 };

	/* a reset without a socket: cgroup 0, the Pod known by its IP */
	tl_event_init_kind(&ev, TL_KIND_TCP_RESET_SENT, TL_SRC_KERNEL, 1);
	inet_pton(AF_INET, "10.9.9.9", local);
	inet_pton(AF_INET, "10.1.0.7", remote);
	tl_event_set_addr(&ev, TL_F_RESET_LOCAL, AF_INET, local, 40000);
	tl_event_set_addr(&ev, TL_F_RESET_REMOTE, AF_INET, remote, 8080);
	tl_attr_event(attr, &ev, 1);
	ck_assert_str_eq(ev.pod_uid, UID2);
	/* an IPv4-mapped IPv6 address matches the IPv4 Pod IP; IPv6 as such */
	tl_event_init_kind(&ev, TL_KIND_TCP_RESET_RECEIVED, TL_SRC_KERNEL, 1);
	memset(local, 0, 16);
	local[10] = local[11] = 0xff;
	inet_pton(AF_INET, "10.1.0.7", local + 12);
	tl_event_set_addr(&ev, TL_F_RESET_LOCAL, AF_INET6, local, 8080);
	tl_attr_event(attr, &ev, 1);
	ck_assert_str_eq(ev.pod_uid, UID2);
	tl_event_init_kind(&ev, TL_KIND_TCP_RESET_RECEIVED, TL_SRC_KERNEL, 1);
	inet_pton(AF_INET6, "fd00::7", remote);
	tl_event_set_addr(&ev, TL_F_RESET_REMOTE, AF_INET6, remote, 8080);
	tl_attr_event(attr, &ev, 1);
	ck_assert_str_eq(ev.pod_uid, UID1);
	/* other kinds are not attributed by address */
	tl_event_init_kind(&ev, TL_KIND_SOCKET_LISTEN, TL_SRC_KERNEL, 1);
	tl_event_set_addr(&ev, TL_F_LISTEN_ADDRESS, AF_INET, remote, 0);
	tl_attr_event(attr, &ev, 1);
	ck_assert_str_eq(ev.pod_uid, "");
}
END_TEST

START_TEST(pod_ips_expire)
{
	tl_attr_ip_expire_at(attr, "10.1.0.7", UID1, 50 * S); /* now owned by UID2 */
	tl_attr_ip_expire_at(attr, "10.1.0.8", UID1, 50 * S);
	tl_attr_ip_expire_at(attr, "10.1.0.9", UID1, 90 * S);
	tl_attr_ip_expire(attr, 40 * S);
	ck_assert_int_eq(n_untracked, 0);
	tl_attr_ip_expire(attr, 60 * S);
	/* 10.1.0.7 belongs to a new Pod now: it stays tracked */
	ck_assert_int_eq(n_untracked, 1);
	ck_assert_str_eq(untracked[0], "10.1.0.8");
	tl_attr_ip_expire(attr, 100 * S);
	ck_assert_int_eq(n_untracked, 2);
	ck_assert_str_eq(untracked[1], "10.1.0.9");
	/* all slots busy: the soonest due goes at once */
	for (int i = 0; i < TL_ATTR_IP_EXPIRIES; i++) {
		char ip[32];

		snprintf(ip, sizeof(ip), "10.2.%d.%d", i / 200, i % 200);
		tl_attr_ip_expire_at(attr, ip, UID1, (200 + i) * S);
	}
	ck_assert_int_eq(n_untracked, 2);
	tl_attr_ip_expire_at(attr, "10.3.0.1", UID1, 999 * S);
	ck_assert_int_eq(n_untracked, 3);
	ck_assert_str_eq(untracked[2], "10.2.0.0");
}
END_TEST

/* A Pod's metadata with containers (name, id) as the API model fills it. */
static struct tl_pod_meta *meta_of(const char *const *ctrs, uint32_t n)
{
	struct tl_pod_meta *m = tl_pod_meta_new(n);

	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(TL_POD_META_SET(m->uid, UID1), 0);
	for (uint32_t i = 0; i < n; i++) {
		ck_assert_int_eq(TL_POD_META_SET(m->containers[i].name, ctrs[2 * i]), 0);
		ck_assert_int_eq(TL_POD_META_SET(m->containers[i].container_id, ctrs[2 * i + 1]), 0);
		m->containers[i].role = TL_ROLE_MAIN;
	}
	m->n_containers = n;
	return m;
}

START_TEST(sandbox_marked_when_decidable)
{
	static const char *const late[] = { "app", "containerd://" CID_APP, "late", "" };
	static const char *const known[] = { "app", "containerd://" CID_APP };
	struct tl_pod_meta *m = meta_of(late, 2);

	/* a container without an id yet: not decidable */
	ck_assert_int_eq(tl_attr_mark_sandbox(attr, UID1, m), 0);
	tl_pod_meta_unref(m);
	/* a container the table could not hold (containers_dropped): its
	 * leaf would look like the sandbox's, so nothing is marked */
	m = meta_of(known, 1);
	m->containers_dropped = 1;
	ck_assert_int_eq(tl_attr_mark_sandbox(attr, UID1, m), 0);
	ck_assert_int_eq(tl_attr_mark_sandbox(attr, UID1, NULL), 0);
	m->containers_dropped = 0;
	ck_assert_int_eq(tl_attr_mark_sandbox(attr, UID1, m), 1);
	tl_pod_meta_unref(m);
	tl_event_init_kind(&ev, TL_KIND_PROCESS_EXEC, TL_SRC_KERNEL, 1);
	ev.cgroup_id = ino_of(LEAF_PAUSE);
	tl_attr_event(attr, &ev, 1);
	ck_assert_str_eq(ev.pod_uid, UID1);
	ck_assert(ev.flags & TL_EF_SANDBOX);
	ck_assert_str_eq(ev.container, "");
	ck_assert_str_eq(tl_container_id_bare("cri-o://abc"), "abc");
	ck_assert_str_eq(tl_container_id_bare("abc"), "abc");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("attribution");
	TCase *tc = tcase_create("attribution");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, by_cgroup_and_name);
	tcase_add_test(tc, tombstones_for_a_minute);
	tcase_add_test(tc, resets_by_pod_ip);
	tcase_add_test(tc, pod_ips_expire);
	tcase_add_test(tc, sandbox_marked_when_decidable);
	suite_add_tcase(s, tc);
	return tl_check_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
