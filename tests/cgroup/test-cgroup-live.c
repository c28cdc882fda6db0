/* SPDX-License-Identifier: Apache-2.0 */
/* The map on the real cgroup2 mount, fed by termline-simpod: inotify on
 * kernfs, inode == cgroup id, and the parser on names the tool creates.
 * Needs root; skips (77) only when not root outside CI. */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup-map.h"
#include "loop.h"
#include "../check-run.h"

struct seen {
	uint64_t added[8], removed[8];
	char added_cid[8][TL_CGROUP_ID_MAX];
	int n_added, n_removed;
};

static void on_added(void *ud, const struct tl_cgroup_info *info)
{
	struct seen *s = ud;

	if (!strstr(info->path, "termline-cgroup-live-") || s->n_added >= 8)
		return;
	snprintf(s->added_cid[s->n_added], TL_CGROUP_ID_MAX, "%s", info->parsed.container_id);
	s->added[s->n_added++] = info->cgroup_id;
}

static void on_removed(void *ud, const struct tl_cgroup_info *info)
{
	struct seen *s = ud;

	if (!strstr(info->path, "termline-cgroup-live-") || s->n_removed >= 8)
		return;
	s->removed[s->n_removed++] = info->cgroup_id;
}

/* Runs the tool; returns its stdout parsed as JSON (NULL on failure). */
static struct json_object *simpod(const char *args)
{
	char cmd[1024], *out = NULL;
	size_t len = 0, cap = 0;
	struct json_object *obj;
	FILE *p;
	int n;

	n = snprintf(cmd, sizeof(cmd), "%s/tools/termline-simpod --state-dir /run/termline-cgroup-live %s",
		     getenv("TERMLINE_SOURCE_ROOT"), args);
	ck_assert_int_lt(n, (int)sizeof(cmd));
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			out = realloc(out, cap);
			ck_assert_ptr_nonnull(out);
		}
		size_t r = fread(out + len, 1, 4096, p);

		if (r == 0)
			break;
		len += r;
	}
	out[len] = '\0';
	ck_assert_msg(pclose(p) == 0, "%s failed: %s", cmd, out);
	obj = json_tokener_parse(out);
	free(out);
	return obj;
}

static void pump(struct tl_loop *loop, const int *count, int want)
{
	for (int i = 0; i < 10 && *count < want; i++)
		ck_assert_int_ge(tl_loop_run_once(loop, 200), 0);
}

START_TEST(live_simpod)
{
	struct tl_cgroup_map_callbacks cb;
	struct tl_cgroup_map *map = NULL;
	struct tl_loop *loop = NULL;
	struct json_object *pod, *ctrs, *o;
	struct seen s = { 0 };
	char args[512], uid[64];
	int n;

	cb = (struct tl_cgroup_map_callbacks){ on_added, on_removed, &s };
	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_cgroup_map_new(NULL, &cb, &map), 0);
	ck_assert_int_eq(tl_cgroup_map_attach(map, loop), 0);
	ck_assert_int_eq(s.n_added, 0);

	/* created after the walk: only inotify can report these */
	snprintf(args, sizeof(args), "create --no-netns --app-port %d --proxy-port %d "
		 "--prefix termline-cgroup-live-%d --layout systemd --qos guaranteed",
		 20000 + getpid() % 20000, 40000 + getpid() % 20000, (int)getpid());
	pod = simpod(args);
	ck_assert_ptr_nonnull(pod);
	ck_assert(json_object_object_get_ex(pod, "podUid", &o));
	snprintf(uid, sizeof(uid), "%s", json_object_get_string(o));
	ck_assert(json_object_object_get_ex(pod, "containers", &ctrs));
	n = (int)json_object_array_length(ctrs);
	ck_assert_int_eq(n, 3);

	pump(loop, &s.n_added, n);
	ck_assert_int_eq(s.n_added, n);
	for (int i = 0; i < n; i++) {
		struct json_object *c = json_object_array_get_idx(ctrs, (size_t)i), *v;
		const struct tl_cgroup_info *info;
		uint64_t id;

		ck_assert(json_object_object_get_ex(c, "cgroupId", &v));
		id = (uint64_t)json_object_get_int64(v);
		info = tl_cgroup_map_lookup(map, id);
		ck_assert_ptr_nonnull(info);
		ck_assert_int_eq(info->parsed.kind, TL_CGROUP_CONTAINER);
		ck_assert_int_eq(info->parsed.qos, TL_QOS_GUARANTEED);
		ck_assert_int_eq(info->parsed.runtime, TL_RUNTIME_CONTAINERD);
		ck_assert_str_eq(info->parsed.pod_uid, uid);
		ck_assert(json_object_object_get_ex(c, "containerId", &v));
		ck_assert_str_eq(info->parsed.container_id, json_object_get_string(v));
		ck_assert(json_object_object_get_ex(c, "cgroupPath", &v));
		ck_assert_str_eq(info->path, json_object_get_string(v));
		/* the process the tool started runs in that cgroup */
		{
			char path[128], line[4096], want[4200];
			FILE *f;

			ck_assert(json_object_object_get_ex(c, "pid", &v));
			snprintf(path, sizeof(path), "/proc/%d/cgroup", json_object_get_int(v));
			f = fopen(path, "re");
			ck_assert_ptr_nonnull(f);
			ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
			fclose(f);
			line[strcspn(line, "\n")] = '\0';
			snprintf(want, sizeof(want), "0::/%s", info->path);
			/* hybrid hosts list v1 hierarchies first: find the v2 line */
			if (strncmp(line, "0::", 3) != 0) {
				f = fopen(path, "re");
				ck_assert_ptr_nonnull(f);
				while (fgets(line, sizeof(line), f) && strncmp(line, "0::", 3) != 0)
					;
				fclose(f);
				line[strcspn(line, "\n")] = '\0';
			}
			ck_assert_str_eq(line, want);
		}
	}
	json_object_put(pod);

	snprintf(args, sizeof(args), "delete --pod-uid %s", uid);
	pod = simpod(args);
	ck_assert_ptr_nonnull(pod);
	json_object_put(pod);
	pump(loop, &s.n_removed, n);
	ck_assert_int_eq(s.n_removed, n);
	for (int i = 0; i < n; i++)
		ck_assert_ptr_null(tl_cgroup_map_lookup(map, s.added[i]));

	tl_cgroup_map_free(map);
	tl_loop_free(loop);
}
END_TEST

int main(void)
{
	const char *ci = getenv("CI");
	Suite *s = suite_create("cgroup-live");
	TCase *tc = tcase_create("simpod");
	int failed;

	if (geteuid() != 0) {
		if (ci && strcmp(ci, "true") == 0) {
			fprintf(stderr, "cgroup-live: needs root, and CI=true forbids skipping\n");
			return EXIT_FAILURE;
		}
		return 77;
	}
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, live_simpod);
	suite_add_tcase(s, tc);
	failed = tl_check_run(s);
	/* a failed run must not leave pods (processes, cgroups) behind */
	{
		char cmd[1024];

		snprintf(cmd, sizeof(cmd),
			 "for d in /run/termline-cgroup-live/*/; do [ -d \"$d\" ] && "
			 "%s/tools/termline-simpod --state-dir /run/termline-cgroup-live delete "
			 "--pod-uid \"$(basename \"$d\")\" >/dev/null; done; true",
			 getenv("TERMLINE_SOURCE_ROOT"));
		if (system(cmd) != 0)
			fprintf(stderr, "cgroup-live: cleanup failed\n");
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
