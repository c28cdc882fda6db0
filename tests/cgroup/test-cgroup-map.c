/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-map.h"
#include "loop.h"
#include "metrics.h"
#include "macro.h"
#include "../check-run.h"

#define UID1 "5f3c9a2e-1b7d-4c8e-9f0a-123456789abc"
#define UID1S "5f3c9a2e_1b7d_4c8e_9f0a_123456789abc"
#define UID2 "0d8c7b6a-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
#define CID1 "1111111111111111111111111111111111111111111111111111111111111111"
#define CID2 "2222222222222222222222222222222222222222222222222222222222222222"
#define CID3 "3333333333333333333333333333333333333333333333333333333333333333"
#define CID4 "4444444444444444444444444444444444444444444444444444444444444444"

#define POD1 "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID1S ".slice"
#define LEAF1 POD1 "/cri-containerd-" CID1 ".scope"
#define LEAF2 POD1 "/cri-containerd-" CID2 ".scope"
#define POD2 "kubepods/besteffort/pod" UID2
#define LEAF3 POD2 "/crio-" CID3
#define CONMON3 POD2 "/crio-conmon-" CID3

/* ---- mountinfo ---- */

static char *write_tmp(const char *content)
{
	char *path = strdup("/tmp/tl-mountinfo-XXXXXX");
	int fd;

	ck_assert_ptr_nonnull(path);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	return path;
}

static const struct {
	const char *name;
	const char *content;
	int ret;
	const char *mount;
} mountinfo_cases[] = {
	{ "hybrid",
	  "23 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	  "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	  "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
	  "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	  "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
	  0, "/sys/fs/cgroup/unified" },
	{ "pure-v2",
	  "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	  "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 master:1 - cgroup2 cgroup2 "
	  "rw,nsdelegate,memory_recursiveprot\n",
	  0, "/sys/fs/cgroup" },
	{ "escapes",
	  "50 23 0:40 / /mnt/my\\040cgroup\\011tab\\134x rw - cgroup2 none rw\n",
	  0, "/mnt/my cgroup\ttab\\x" },
	{ "subtree-bind-first",
	  "60 23 0:26 /kubepods.slice /host/cg rw - cgroup2 cgroup2 rw\n"
	  "61 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
	  "62 23 0:26 / /other rw - cgroup2 cgroup2 rw\n",
	  0, "/sys/fs/cgroup" },
	{ "subtree-only",
	  "60 23 0:26 /kubepods.slice /host/cg rw - cgroup2 cgroup2 rw\n",
	  0, "/host/cg" },
	{ "fstype-in-source-not-type",
	  "70 23 0:50 / /mnt/x rw - tmpfs cgroup2 rw\n",
	  -ENOENT, NULL },
	{ "none",
	  "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	  "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n",
	  -ENOENT, NULL },
	{ "garbage",
	  "not a mountinfo line\n\n- cgroup2\n41 31\n",
	  -ENOENT, NULL },
	{ "empty", "", -ENOENT, NULL },
};

START_TEST(mountinfo_table)
{
	char *path = write_tmp(mountinfo_cases[_i].content);
	char buf[PATH_MAX];
	int r;

	strcpy(buf, "untouched");
	r = tl_cgroup_find_mount(path, buf, sizeof(buf));
	ck_assert_msg(r == mountinfo_cases[_i].ret, "%s: %d", mountinfo_cases[_i].name, r);
	if (r == 0)
		ck_assert_str_eq(buf, mountinfo_cases[_i].mount);
	else
		ck_assert_str_eq(buf, "untouched");
	unlink(path);
	free(path);
}
END_TEST

START_TEST(mountinfo_small_buffer)
{
	char *path = write_tmp(mountinfo_cases[0].content);
	char buf[8];

	ck_assert_int_eq(tl_cgroup_find_mount(path, buf, sizeof(buf)), -ENAMETOOLONG);
	/* exactly fits: 22 characters + NUL */
	{
		char fit[23];

		ck_assert_int_eq(tl_cgroup_find_mount(path, fit, sizeof(fit)), 0);
		ck_assert_str_eq(fit, "/sys/fs/cgroup/unified");
		ck_assert_int_eq(tl_cgroup_find_mount(path, fit, sizeof(fit) - 1), -ENAMETOOLONG);
	}
	unlink(path);
	free(path);
}
END_TEST

START_TEST(mountinfo_missing_file)
{
	char buf[64];

	ck_assert_int_eq(tl_cgroup_find_mount("/nonexistent/mountinfo", buf, sizeof(buf)), -ENOENT);
}
END_TEST

/* --cgroup-root naming a hybrid host's /sys/fs/cgroup (a tmpfs with the v1
 * hierarchies and unified/), as the DaemonSet mounts it at
 * /host/sys/fs/cgroup: the cgroup2 mount below it is walked. */
START_TEST(resolve_root_hybrid)
{
	char dir[] = "/tmp/tl-hybrid-XXXXXX", want[PATH_MAX], other[PATH_MAX], buf[PATH_MAX], slash[PATH_MAX];
	char content[4 * PATH_MAX];
	char *path;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(content, sizeof(content),
		 "30 22 0:27 / %s rw - tmpfs tmpfs rw\n"
		 "31 30 0:28 / %s/cpu rw - cgroup cgroup rw,cpu\n"
		 /* a sibling whose name starts with dir's: not below it */
		 "32 22 0:40 / %sx/unified rw - cgroup2 cgroup2 rw\n"
		 "40 30 0:37 / %s/unified rw - cgroup2 cgroup2 rw\n",
		 dir, dir, dir, dir);
	path = write_tmp(content);
	snprintf(want, sizeof(want), "%s/unified", dir);
	ck_assert_int_eq(tl_cgroup_resolve_root(path, dir, buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, want);
	snprintf(slash, sizeof(slash), "%s/", dir);
	ck_assert_int_eq(tl_cgroup_resolve_root(path, slash, buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, want);
	/* too small a buffer: an error, not a truncated path */
	ck_assert_int_eq(tl_cgroup_resolve_root(path, dir, buf, strlen(want)), -ENAMETOOLONG);
	unlink(path);
	free(path);

	/* no cgroup2 mount below it: a directory tree standing for the mount
	 * (the tests' roots) is walked as it is */
	snprintf(other, sizeof(other), "40 30 0:37 / %sx/unified rw - cgroup2 cgroup2 rw\n", dir);
	path = write_tmp(other);
	ck_assert_int_eq(tl_cgroup_resolve_root(path, dir, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, dir);
	unlink(path);
	free(path);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* The cgroup2 mount itself, where this machine has one: kept as given. */
START_TEST(resolve_root_cgroup2)
{
	char mnt[PATH_MAX], buf[PATH_MAX];

	if (tl_cgroup_find_mount("/proc/self/mountinfo", mnt, sizeof(mnt)) < 0)
		return;
	ck_assert_int_eq(tl_cgroup_resolve_root("/proc/self/mountinfo", mnt, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, mnt);
}
END_TEST

/* ---- the map on a directory tree standing in for the cgroup root ---- */

struct rec {
	uint64_t id;
	enum tl_cgroup_kind kind;
	char cid[TL_CGROUP_ID_MAX];
	char path[PATH_MAX];
};

struct recorder {
	struct rec added[16], removed[16];
	int n_added, n_removed;
};

static void rec_copy(struct rec *r, const struct tl_cgroup_info *info)
{
	r->id = info->cgroup_id;
	r->kind = info->parsed.kind;
	snprintf(r->cid, sizeof(r->cid), "%s", info->parsed.container_id);
	snprintf(r->path, sizeof(r->path), "%s", info->path);
}

static void on_added(void *ud, const struct tl_cgroup_info *info)
{
	struct recorder *rc = ud;

	ck_assert_int_lt(rc->n_added, 16);
	rec_copy(&rc->added[rc->n_added++], info);
}

static void on_removed(void *ud, const struct tl_cgroup_info *info)
{
	struct recorder *rc = ud;

	ck_assert_int_lt(rc->n_removed, 16);
	rec_copy(&rc->removed[rc->n_removed++], info);
}

static char root[64];
static struct recorder rc;
static struct tl_cgroup_map_callbacks cbs = { on_added, on_removed, &rc };

static void mkdirs(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		ck_assert_msg(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
		*s = '/';
	}
	ck_assert_msg(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
}

static void rmdir_rel(const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	ck_assert_msg(rmdir(p) == 0, "rmdir %s: %s", p, strerror(errno));
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

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/tl-cgroup-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	memset(&rc, 0, sizeof(rc));
	tl_metrics_reset();
}

static void teardown(void)
{
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs the loop until the recorder has seen the expected callbacks. inotify
 * delivers at mkdir/rmdir time, so one round normally suffices; the bound
 * only keeps a broken map from hanging the test. */
static void pump(struct tl_loop *loop, int want_added, int want_removed)
{
	for (int i = 0; i < 10 && (rc.n_added < want_added || rc.n_removed < want_removed); i++)
		ck_assert_int_ge(tl_loop_run_once(loop, 200), 0);
	/* and drain anything else already queued */
	ck_assert_int_ge(tl_loop_run_once(loop, 0), 0);
}

static bool added_has(const char *cid)
{
	for (int i = 0; i < rc.n_added; i++)
		if (strcmp(rc.added[i].cid, cid) == 0)
			return true;
	return false;
}

START_TEST(map_initial_walk)
{
	struct tl_cgroup_map *map = NULL;
	struct tl_cgroup_map_stats st;
	struct tl_loop *loop = NULL;
	const struct tl_cgroup_info *info;

	mkdirs(LEAF1);
	mkdirs(LEAF2);
	mkdirs(LEAF3);
	mkdirs(CONMON3);
	mkdirs("system.slice/ssh.service");
	mkdirs("kubepods.slice/kubepods-gold.slice/child");

	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_cgroup_map_new(root, &cbs, &map), 0);
	ck_assert_str_eq(tl_cgroup_map_root(map), root);
	ck_assert_int_eq(tl_cgroup_map_attach(map, loop), 0);

	/* callbacks for container leaves only: not pods, not conmon, not host */
	ck_assert_int_eq(rc.n_added, 3);
	ck_assert(added_has(CID1));
	ck_assert(added_has(CID2));
	ck_assert(added_has(CID3));
	ck_assert_int_eq(rc.n_removed, 0);

	info = tl_cgroup_map_lookup(map, ino_of(LEAF1));
	ck_assert_ptr_nonnull(info);
	ck_assert_int_eq(info->cgroup_id, ino_of(LEAF1));
	ck_assert_int_eq(info->parsed.kind, TL_CGROUP_CONTAINER);
	ck_assert_int_eq(info->parsed.qos, TL_QOS_BURSTABLE);
	ck_assert_int_eq(info->parsed.runtime, TL_RUNTIME_CONTAINERD);
	ck_assert_str_eq(info->parsed.pod_uid, UID1);
	ck_assert_str_eq(info->parsed.container_id, CID1);
	ck_assert_str_eq(info->path, LEAF1);

	info = tl_cgroup_map_lookup(map, ino_of(POD2));
	ck_assert_ptr_nonnull(info);
	ck_assert_int_eq(info->parsed.kind, TL_CGROUP_POD);
	ck_assert_str_eq(info->parsed.pod_uid, UID2);

	info = tl_cgroup_map_lookup(map, ino_of("system.slice/ssh.service"));
	ck_assert_ptr_nonnull(info);
	ck_assert_int_eq(info->parsed.kind, TL_CGROUP_OTHER);

	info = tl_cgroup_map_lookup(map, ino_of(""));
	ck_assert_ptr_nonnull(info);
	ck_assert_str_eq(info->path, "");

	/* an unparsable level and what is below it are ignored and counted */
	ck_assert_ptr_null(tl_cgroup_map_lookup(map, ino_of("kubepods.slice/kubepods-gold.slice")));
	ck_assert_ptr_null(tl_cgroup_map_lookup(map, ino_of("kubepods.slice/kubepods-gold.slice/child")));
	tl_cgroup_map_get_stats(map, &st);
	ck_assert_int_eq(st.unparsable, 1);
	ck_assert_int_eq(tl_metric_get("termline_cgroup_unparsable_total", NULL), 1);

	/* two pods, three leaves, one conmon carry a pod UID */
	ck_assert_int_eq(st.pod_related, 6);
	ck_assert_int_eq(tl_metric_get("termline_cgroups_tracked", NULL), 6);

	/* by container id, bare or as containerStatuses spell it; conmon shares
	 * CID3 but is not the container */
	info = tl_cgroup_map_lookup_container(map, "containerd://" CID2);
	ck_assert_ptr_nonnull(info);
	ck_assert_str_eq(info->path, LEAF2);
	info = tl_cgroup_map_lookup_container(map, "cri-o://" CID3);
	ck_assert_ptr_nonnull(info);
	ck_assert_str_eq(info->path, LEAF3);
	ck_assert_ptr_null(tl_cgroup_map_lookup_container(map, CID4));
	ck_assert_ptr_null(tl_cgroup_map_lookup_container(map, "containerd://"));
	/* bare, and with a runtime name the path parser does not know: the
	 * leaf is found by its id (Kubernetes' "<type>://<id>") */
	info = tl_cgroup_map_lookup_container(map, CID1);
	ck_assert_ptr_nonnull(info);
	ck_assert_str_eq(info->path, LEAF1);
	info = tl_cgroup_map_lookup_container(map, "docker://" CID2);
	ck_assert_ptr_nonnull(info);
	ck_assert_str_eq(info->path, LEAF2);
	info = tl_cgroup_map_lookup_container(map, "kata://" CID1);
	ck_assert_ptr_nonnull(info);
	ck_assert_str_eq(info->path, LEAF1);
	ck_assert_ptr_null(tl_cgroup_map_lookup_container(map, "containerd://" CID4));
	ck_assert_ptr_null(tl_cgroup_map_lookup_container(map, ""));
	ck_assert_ptr_null(tl_cgroup_map_lookup_container(map, NULL));

	ck_assert_int_eq(tl_cgroup_map_attach(map, loop), -EALREADY);
	tl_cgroup_map_free(map);
	tl_loop_free(loop);
}
END_TEST

START_TEST(map_inotify_add_remove)
{
	struct tl_cgroup_map *map = NULL;
	struct tl_cgroup_map_stats st;
	struct tl_loop *loop = NULL;
	const struct tl_cgroup_info *info;
	uint64_t leaf_id, nested_id;

	mkdirs("kubepods.slice");
	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_cgroup_map_new(root, &cbs, &map), 0);
	ck_assert_int_eq(tl_cgroup_map_attach(map, loop), 0);
	ck_assert_int_eq(rc.n_added, 0);

	/* pod, QoS, leaf and a nested cgroup appear before the loop runs: the
	 * walk of each new directory finds what its watch came too late for */
	mkdirs(LEAF1 "/init");
	pump(loop, 2, 0);
	ck_assert_int_eq(rc.n_added, 2);
	leaf_id = ino_of(LEAF1);
	nested_id = ino_of(LEAF1 "/init");
	info = tl_cgroup_map_lookup(map, leaf_id);
	ck_assert_ptr_nonnull(info);
	ck_assert_str_eq(info->parsed.container_id, CID1);
	ck_assert(!info->parsed.nested);
	info = tl_cgroup_map_lookup(map, nested_id);
	ck_assert_ptr_nonnull(info);
	ck_assert(info->parsed.nested);
	ck_assert_ptr_nonnull(tl_cgroup_map_lookup(map, ino_of(POD1)));

	mkdirs(LEAF2);
	pump(loop, 3, 0);
	ck_assert_int_eq(rc.n_added, 3);
	ck_assert_str_eq(rc.added[2].cid, CID2);
	ck_assert_int_eq(rc.added[2].id, ino_of(LEAF2));
	ck_assert_str_eq(rc.added[2].path, LEAF2);

	rmdir_rel(LEAF1 "/init");
	rmdir_rel(LEAF1);
	pump(loop, 3, 2);
	ck_assert_int_eq(rc.n_removed, 2);
	ck_assert(rc.removed[0].id == nested_id || rc.removed[1].id == nested_id);
	ck_assert(rc.removed[0].id == leaf_id || rc.removed[1].id == leaf_id);
	ck_assert_str_eq(rc.removed[1].cid, CID1);
	ck_assert_ptr_null(tl_cgroup_map_lookup(map, leaf_id));
	ck_assert_ptr_null(tl_cgroup_map_lookup(map, nested_id));
	ck_assert_ptr_null(tl_cgroup_map_lookup_container(map, CID1));
	ck_assert_ptr_nonnull(tl_cgroup_map_lookup_container(map, CID2));

	/* a new unparsable name is counted once and not tracked */
	mkdirs("kubepods.slice/kubepods-gold.slice");
	pump(loop, 3, 2);
	tl_cgroup_map_get_stats(map, &st);
	ck_assert_int_eq(st.unparsable, 1);
	ck_assert_ptr_null(tl_cgroup_map_lookup(map, ino_of("kubepods.slice/kubepods-gold.slice")));

	/* the whole pod goes: pod-related gauge back to zero */
	rmdir_rel(LEAF2);
	rmdir_rel(POD1);
	pump(loop, 3, 3);
	ck_assert_int_eq(rc.n_removed, 3);
	ck_assert_str_eq(rc.removed[2].cid, CID2);
	tl_cgroup_map_get_stats(map, &st);
	ck_assert_int_eq(st.pod_related, 0);
	ck_assert_int_eq(tl_metric_get("termline_cgroups_tracked", NULL), 0);

	tl_cgroup_map_free(map);
	tl_loop_free(loop);
}
END_TEST

START_TEST(map_rename)
{
	struct tl_cgroup_map *map = NULL;
	struct tl_loop *loop = NULL;
	const struct tl_cgroup_info *info;
	char from[PATH_MAX], to[PATH_MAX];
	uint64_t id;

	mkdirs(LEAF3);
	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_cgroup_map_new(root, &cbs, &map), 0);
	ck_assert_int_eq(tl_cgroup_map_attach(map, loop), 0);
	ck_assert_int_eq(rc.n_added, 1);
	id = ino_of(LEAF3);

	snprintf(from, sizeof(from), "%s/%s", root, LEAF3);
	snprintf(to, sizeof(to), "%s/%s/crio-%s", root, POD2, CID4);
	ck_assert_int_eq(rename(from, to), 0);
	pump(loop, 2, 1);
	ck_assert_int_eq(rc.n_removed, 1);
	ck_assert_str_eq(rc.removed[0].cid, CID3);
	ck_assert_int_eq(rc.n_added, 2);
	ck_assert_str_eq(rc.added[1].cid, CID4);
	/* same directory, same cgroup id, new name */
	ck_assert_int_eq(rc.added[1].id, id);
	info = tl_cgroup_map_lookup(map, id);
	ck_assert_ptr_nonnull(info);
	ck_assert_str_eq(info->parsed.container_id, CID4);

	tl_cgroup_map_free(map);
	tl_loop_free(loop);
}
END_TEST

START_TEST(map_scan_unattached)
{
	struct tl_cgroup_map *map = NULL;
	struct tl_cgroup_map_stats st;

	mkdirs(LEAF1);
	ck_assert_int_eq(tl_cgroup_map_new(root, &cbs, &map), 0);
	ck_assert_int_eq(tl_cgroup_map_scan(map), 0);
	ck_assert_int_eq(rc.n_added, 1);

	/* a rescan reports only the difference */
	mkdirs(LEAF2);
	rmdir_rel(LEAF1);
	ck_assert_int_eq(tl_cgroup_map_scan(map), 0);
	ck_assert_int_eq(rc.n_added, 2);
	ck_assert_str_eq(rc.added[1].cid, CID2);
	ck_assert_int_eq(rc.n_removed, 1);
	ck_assert_str_eq(rc.removed[0].cid, CID1);
	ck_assert_int_eq(tl_cgroup_map_scan(map), 0);
	ck_assert_int_eq(rc.n_added, 2);
	ck_assert_int_eq(rc.n_removed, 1);
	tl_cgroup_map_get_stats(map, &st);
	ck_assert_int_eq(st.rescans, 2);
	/* no inotify without attach */
	ck_assert_int_eq(tl_cgroup_map_process(map), -EBADF);
	tl_cgroup_map_free(map);
}
END_TEST

START_TEST(map_mark_sandbox)
{
	struct tl_cgroup_map *map = NULL;
	const struct tl_cgroup_info *info;

	mkdirs(LEAF1 "/nested");
	mkdirs(LEAF2);
	ck_assert_int_eq(tl_cgroup_map_new(root, &cbs, &map), 0);
	ck_assert_int_eq(tl_cgroup_map_scan(map), 0);
	ck_assert_int_eq(tl_cgroup_map_mark_sandbox(map, CID4), -ENOENT);
	ck_assert_int_eq(tl_cgroup_map_mark_sandbox(map, "containerd://" CID1), 0);
	ck_assert_int_eq(tl_cgroup_map_lookup(map, ino_of(LEAF1))->parsed.kind, TL_CGROUP_SANDBOX);
	ck_assert_int_eq(tl_cgroup_map_lookup(map, ino_of(LEAF1 "/nested"))->parsed.kind, TL_CGROUP_SANDBOX);
	ck_assert_int_eq(tl_cgroup_map_lookup(map, ino_of(LEAF2))->parsed.kind, TL_CGROUP_CONTAINER);
	/* still found by id, and the mark survives a rescan */
	ck_assert_int_eq(tl_cgroup_map_scan(map), 0);
	info = tl_cgroup_map_lookup_container(map, CID1);
	ck_assert_ptr_nonnull(info);
	ck_assert_int_eq(info->parsed.kind, TL_CGROUP_SANDBOX);
	tl_cgroup_map_free(map);
}
END_TEST

static int count_pods(void *ud, const struct tl_cgroup_info *info)
{
	if (info->parsed.kind == TL_CGROUP_POD)
		++*(int *)ud;
	return 0;
}

static int stop_at_container(void *ud _unused_, const struct tl_cgroup_info *info)
{
	return info->parsed.kind == TL_CGROUP_CONTAINER ? 7 : 0;
}

START_TEST(map_foreach)
{
	struct tl_cgroup_map *map = NULL;
	int pods = 0;

	mkdirs(LEAF1);
	mkdirs(LEAF3);
	ck_assert_int_eq(tl_cgroup_map_new(root, NULL, &map), 0);
	ck_assert_int_eq(tl_cgroup_map_scan(map), 0);
	ck_assert_int_eq(tl_cgroup_map_foreach(map, count_pods, &pods), 0);
	ck_assert_int_eq(pods, 2);
	ck_assert_int_eq(tl_cgroup_map_foreach(map, stop_at_container, NULL), 7);
	tl_cgroup_map_free(map);
}
END_TEST

START_TEST(map_bad_root)
{
	struct tl_cgroup_map *map = NULL;
	char p[PATH_MAX + 8];

	ck_assert_int_eq(tl_cgroup_map_new("/nonexistent/cgroup", &cbs, &map), 0);
	ck_assert_int_eq(tl_cgroup_map_scan(map), -ENOENT);
	tl_cgroup_map_free(map);
	map = NULL;
	memset(p, 'a', sizeof(p) - 1);
	p[sizeof(p) - 1] = '\0';
	ck_assert_int_eq(tl_cgroup_map_new(p, &cbs, &map), -ENAMETOOLONG);
	ck_assert_ptr_null(map);
	tl_cgroup_map_free(NULL);
}
END_TEST

START_TEST(map_trailing_slash_root)
{
	struct tl_cgroup_map *map = NULL;
	char r2[sizeof(root) + 2];

	mkdirs(LEAF1);
	snprintf(r2, sizeof(r2), "%s/", root);
	ck_assert_int_eq(tl_cgroup_map_new(r2, &cbs, &map), 0);
	ck_assert_int_eq(tl_cgroup_map_scan(map), 0);
	ck_assert_str_eq(tl_cgroup_map_lookup(map, ino_of(LEAF1))->path, LEAF1);
	tl_cgroup_map_free(map);
}
END_TEST

static Suite *map_suite(void)
{
	Suite *s = suite_create("cgroup-map");
	TCase *tc = tcase_create("mountinfo");

	tcase_add_loop_test(tc, mountinfo_table, 0,
			    (int)(sizeof(mountinfo_cases) / sizeof(mountinfo_cases[0])));
	tcase_add_test(tc, mountinfo_small_buffer);
	tcase_add_test(tc, mountinfo_missing_file);
	tcase_add_test(tc, resolve_root_hybrid);
	tcase_add_test(tc, resolve_root_cgroup2);
	suite_add_tcase(s, tc);

	tc = tcase_create("map");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, map_initial_walk);
	tcase_add_test(tc, map_inotify_add_remove);
	tcase_add_test(tc, map_rename);
	tcase_add_test(tc, map_scan_unattached);
	tcase_add_test(tc, map_mark_sandbox);
	tcase_add_test(tc, map_foreach);
	tcase_add_test(tc, map_bad_root);
	tcase_add_test(tc, map_trailing_slash_root);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int failed = tl_check_run(map_suite());

	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
