/* SPDX-License-Identifier: Apache-2.0 */
/* The pod-log tailer on a scratch directory laid out as the kubelet does:
 * Pods present at start are read from the end, new ones from the start;
 * appends, a rotation (rename away, new file) and a truncation each yield
 * every record once; other containers and odd names are ignored; Pod and
 * container directories that are symlinks out of the root yield nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <check.h>

#include "pod-logs.h"
#include "../check-run.h"

static char root[256];
static char seen[32][128];
static char seen_uid[32][64];
static int nseen;

static void on_rec(void *ud, const struct tl_pod_log_source *src, int64_t t, const char *text,
		   size_t len, bool cut)
{
	(void)ud;
	(void)t;
	(void)len;
	ck_assert(!cut);
	ck_assert_int_lt(nseen, 32);
	ck_assert_str_eq(src->container, "istio-proxy");
	ck_assert_str_eq(src->ns, "default");
	snprintf(seen_uid[nseen], sizeof(seen_uid[0]), "%s", src->uid);
	snprintf(seen[nseen++], sizeof(seen[0]), "%s", text);
}

static void mkdirs(const char *pod, const char *container)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", root, pod);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%s/%s", root, pod, container);
	ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void append(const char *pod, const char *container, const char *file, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s/%s/%s", root, pod, container, file);
	f = fopen(p, "a");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

#define LINE(s) "2026-12-01T03:04:05.000000001Z stdout F " s "\n"
#define OLD "default_old-pod_11111111-2222-3333-4444-555555555555"
#define NEW "default_new-pod_aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/termline-test-pod-logs-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	nseen = 0;
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_tail)
{
	struct tl_pod_logs_config cfg = { .root = root, .container = "istio-proxy" };
	struct tl_pod_logs *p;
	struct tl_pod_logs_stats st;
	char path[512], rotated[600];

	mkdirs(OLD, "istio-proxy");
	mkdirs(OLD, "app");
	append(OLD, "istio-proxy", "0.log", LINE("before start"));
	ck_assert_int_eq(tl_pod_logs_new(&cfg, NULL, on_rec, NULL, &p), 0);
	/* Already there: read from the end. */
	ck_assert_int_eq(tl_pod_logs_poll(p), 0);
	append(OLD, "istio-proxy", "0.log", LINE("a1") "2026-12-01T03:04:05Z stdout P a");
	append(OLD, "app", "0.log", LINE("not the proxy"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 1);
	ck_assert_str_eq(seen[0], "a1");
	append(OLD, "istio-proxy", "0.log", "2\n");
	ck_assert_int_eq(tl_pod_logs_poll(p), 0); /* the P piece waits for its F */
	append(OLD, "istio-proxy", "0.log", LINE("3"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 1);
	ck_assert_str_eq(seen[1], "a23");

	/* A new Pod: from its beginning; odd names are not Pods. */
	mkdirs(NEW, "istio-proxy");
	mkdirs("no-underscores", "istio-proxy");
	append(NEW, "istio-proxy", "0.log", LINE("n1") LINE("n2"));
	append(NEW, "istio-proxy", "0.log.20261201-030405", LINE("rotated long ago"));
	append("no-underscores", "istio-proxy", "0.log", LINE("x"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 2);
	ck_assert_str_eq(seen[2], "n1");
	ck_assert_str_eq(seen_uid[2], "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");

	/* Rotation: lines written to the old file after our last read, then
	 * the rename, then a new 0.log. */
	append(NEW, "istio-proxy", "0.log", LINE("n3 late in old"));
	snprintf(path, sizeof(path), "%s/%s/istio-proxy/0.log", root, NEW);
	snprintf(rotated, sizeof(rotated), "%s.20261201-040000", path);
	ck_assert_int_eq(rename(path, rotated), 0);
	append(NEW, "istio-proxy", "0.log", LINE("n4 in new"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 2);
	ck_assert_str_eq(seen[4], "n3 late in old");
	ck_assert_str_eq(seen[5], "n4 in new");

	/* Truncation in place (copytruncate). */
	ck_assert_int_eq(truncate(path, 0), 0);
	append(NEW, "istio-proxy", "0.log", LINE("t1"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 1);
	ck_assert_str_eq(seen[6], "t1");

	/* A container restart writes 1.log: from its beginning. */
	append(OLD, "istio-proxy", "1.log", LINE("restart"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 1);
	ck_assert_str_eq(seen[7], "restart");

	tl_pod_logs_stats(p, &st);
	ck_assert_int_eq(st.files, 3);
	ck_assert_int_eq(st.rotations + st.truncations, 2);
	ck_assert_int_eq(st.records, 8);
	tl_pod_logs_free(p);
	tl_pod_logs_free(NULL);
}
END_TEST

START_TEST(test_missing_root_and_limits)
{
	struct tl_pod_logs_config cfg = { .root = root, .container = "istio-proxy", .max_files = 1 };
	struct tl_pod_logs *p;
	struct tl_pod_logs_stats st;
	char missing[300];

	snprintf(missing, sizeof(missing), "%s/later", root);
	cfg.root = missing;
	ck_assert_int_eq(tl_pod_logs_new(&cfg, NULL, on_rec, NULL, &p), 0);
	ck_assert_int_eq(tl_pod_logs_poll(p), 0);
	/* The root appears after start: its Pods are new. */
	ck_assert_int_eq(mkdir(missing, 0755), 0);
	snprintf(root + strlen(root), sizeof(root) - strlen(root), "/later");
	mkdirs(NEW, "istio-proxy");
	mkdirs(OLD, "istio-proxy");
	append(NEW, "istio-proxy", "0.log", LINE("one"));
	append(OLD, "istio-proxy", "0.log", LINE("two"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 1);
	tl_pod_logs_stats(p, &st);
	ck_assert_int_eq(st.files, 1);
	ck_assert_int_ge(st.files_refused, 1);
	tl_pod_logs_free(p);
	*strrchr(root, '/') = '\0';

	cfg.container = "a/b";
	ck_assert_int_eq(tl_pod_logs_new(&cfg, NULL, on_rec, NULL, &p), -EINVAL);
}
END_TEST

static char refused[8][300];
static int nrefused;

static void on_refused(void *ud, const char *r, const char *rel)
{
	(void)ud;
	ck_assert_str_eq(r, root);
	ck_assert_int_lt(nrefused, 8);
	snprintf(refused[nrefused++], sizeof(refused[0]), "%s", rel);
}

#define LINK_POD "default_link-pod_12121212-0000-4000-8000-000000000001"
#define LINK_CTR "default_link-ctr_12121212-0000-4000-8000-000000000002"
#define REAL "default_real-pod_12121212-0000-4000-8000-000000000003"

static void symlinked_dirs(bool openat2)
{
	struct tl_pod_logs_config cfg = { .root = root, .container = "istio-proxy", .on_refused = on_refused };
	struct tl_pod_logs *p;
	struct tl_pod_logs_stats st;
	char outside[64] = "/tmp/termline-test-outside-XXXXXX", path[512], target[512], cmd[300];
	FILE *f;

	tl_pod_logs_test_no_openat2(!openat2);
	nrefused = 0;
	/* elsewhere on the node: a Pod-like tree with a log */
	ck_assert_ptr_nonnull(mkdtemp(outside));
	snprintf(path, sizeof(path), "%s/istio-proxy", outside);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/istio-proxy/0.log", outside);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(LINE("stolen"), f);
	fclose(f);

	ck_assert_int_eq(tl_pod_logs_new(&cfg, NULL, on_rec, NULL, &p), 0);
	/* a Pod directory that is a symlink out of the root */
	snprintf(path, sizeof(path), "%s/%s", root, LINK_POD);
	ck_assert_int_eq(symlink(outside, path), 0);
	/* a real Pod directory whose container directory is one */
	snprintf(path, sizeof(path), "%s/%s", root, LINK_CTR);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%s/istio-proxy", root, LINK_CTR);
	snprintf(target, sizeof(target), "%s/istio-proxy", outside);
	ck_assert_int_eq(symlink(target, path), 0);
	/* a real one beside them still works */
	mkdirs(REAL, "istio-proxy");
	append(REAL, "istio-proxy", "0.log", LINE("fine"));

	ck_assert_int_eq(tl_pod_logs_poll(p), 1);
	ck_assert_int_eq(nseen, 1);
	ck_assert_str_eq(seen[0], "fine");
	ck_assert(!tl_pod_logs_has_pod(p, "12121212-0000-4000-8000-000000000001"));
	ck_assert(!tl_pod_logs_has_pod(p, "12121212-0000-4000-8000-000000000002"));
	tl_pod_logs_stats(p, &st);
	ck_assert_int_eq(st.files, 1);
	ck_assert_int_eq(st.dirs_refused, 2);
	ck_assert_int_eq(nrefused, 2);
	ck_assert(strcmp(refused[0], LINK_POD) == 0 || strcmp(refused[1], LINK_POD) == 0);
	ck_assert(strcmp(refused[0], LINK_CTR "/istio-proxy") == 0 ||
		  strcmp(refused[1], LINK_CTR "/istio-proxy") == 0);

	/* more lines out there, more scans: still nothing, reported once */
	snprintf(path, sizeof(path), "%s/istio-proxy/0.log", outside);
	f = fopen(path, "a");
	ck_assert_ptr_nonnull(f);
	fputs(LINE("stolen too"), f);
	fclose(f);
	append(REAL, "istio-proxy", "0.log", LINE("fine too"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 1);
	ck_assert_int_eq(tl_pod_logs_poll(p), 0);
	ck_assert_int_eq(nseen, 2);
	ck_assert_str_eq(seen[1], "fine too");
	tl_pod_logs_stats(p, &st);
	ck_assert_int_eq(st.dirs_refused, 2);
	ck_assert_int_eq(nrefused, 2);

	/* gone and back: reported again */
	snprintf(path, sizeof(path), "%s/%s", root, LINK_POD);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(tl_pod_logs_poll(p), 0);
	ck_assert_int_eq(symlink(outside, path), 0);
	ck_assert_int_eq(tl_pod_logs_poll(p), 0);
	tl_pod_logs_stats(p, &st);
	ck_assert_int_eq(st.dirs_refused, 3);
	ck_assert_int_eq(nrefused, 3);
	ck_assert_int_eq(nseen, 2);

	tl_pod_logs_free(p);
	tl_pod_logs_test_no_openat2(false);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", outside);
	ck_assert_int_eq(system(cmd), 0);
}

static char gone[8][64];
static int ngone;

static void on_gone(void *ud, const char *uid)
{
	(void)ud;
	ck_assert_int_lt(ngone, 8);
	snprintf(gone[ngone++], sizeof(gone[0]), "%s", uid);
}

static void rm_rf(const char *rel)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", root, rel);
	ck_assert_int_eq(system(cmd), 0);
}

/* The store's "log directory gone" close path: told once per Pod, when
 * its last file goes (a restart's 1.log beside 0.log keeps it), after
 * what the files held was read. */
START_TEST(test_pod_gone_told_once)
{
	struct tl_pod_logs_config cfg = { .root = root, .container = "istio-proxy",
					  .on_pod_gone = on_gone };
	struct tl_pod_logs *p;

	ngone = 0;
	ck_assert_int_eq(tl_pod_logs_new(&cfg, NULL, on_rec, NULL, &p), 0);
	mkdirs(NEW, "istio-proxy");
	mkdirs(OLD, "istio-proxy");
	append(NEW, "istio-proxy", "0.log", LINE("n0"));
	append(NEW, "istio-proxy", "1.log", LINE("n1"));
	append(OLD, "istio-proxy", "0.log", LINE("o0"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 3);
	rm_rf(NEW "/istio-proxy/0.log");
	ck_assert_int_eq(tl_pod_logs_poll(p), 0);
	ck_assert_int_eq(ngone, 0); /* 1.log is still read */
	append(NEW, "istio-proxy", "1.log", LINE("last words"));
	rm_rf(NEW);
	/* what it held before it went is read (the descriptor is still open) */
	ck_assert_int_eq(tl_pod_logs_poll(p), 1);
	ck_assert_str_eq(seen[nseen - 1], "last words");
	ck_assert_int_eq(ngone, 1);
	ck_assert_str_eq(gone[0], "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
	ck_assert(!tl_pod_logs_has_pod(p, gone[0]));
	ck_assert(tl_pod_logs_has_pod(p, "11111111-2222-3333-4444-555555555555"));
	ck_assert_int_eq(tl_pod_logs_poll(p), 0);
	ck_assert_int_eq(ngone, 1);
	tl_pod_logs_free(p);
}
END_TEST

static void run_for(struct tl_loop *loop, int ms)
{
	uint64_t end = tl_now_mono_ms() + (uint64_t)ms;

	while (tl_now_mono_ms() < end)
		tl_loop_run_once(loop, 10);
}

/* On the loop, nothing walks the whole tree while inotify watches it: an
 * idle tree of Pods costs no walk (the per-tick cost is the reads), a new
 * Pod directory is read alone as inotify names it, and so is one that
 * goes (its last records read, the store told). */
START_TEST(test_rescan_only_on_change)
{
	struct tl_pod_logs_config cfg = { .root = root, .container = "istio-proxy", .rescan_ms = 20,
					  .on_pod_gone = on_gone };
	struct tl_pod_logs_stats st0, st1;
	struct tl_pod_logs *p;
	struct tl_loop *loop;
	char name[128];

	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "default_pod-%d_0000%04d-bbbb-cccc-dddd-eeeeeeeeeeee", i, i);
		mkdirs(name, "istio-proxy");
		append(name, "istio-proxy", "0.log", LINE("old"));
	}
	ngone = 0;
	ck_assert_int_eq(tl_loop_new(&loop), 0);
	ck_assert_int_eq(tl_pod_logs_new(&cfg, loop, on_rec, NULL, &p), 0);
	tl_pod_logs_stats(p, &st0);
	ck_assert_uint_eq(st0.files, 50);
	run_for(loop, 300); /* 15 ticks */
	tl_pod_logs_stats(p, &st1);
	ck_assert_uint_eq(st1.rescans, st0.rescans);
	/* appends are read without a walk */
	append("default_pod-7_00000007-bbbb-cccc-dddd-eeeeeeeeeeee", "istio-proxy", "0.log", LINE("appended"));
	run_for(loop, 100);
	ck_assert_int_eq(nseen, 1);
	ck_assert_str_eq(seen[0], "appended");
	tl_pod_logs_stats(p, &st1);
	ck_assert_uint_eq(st1.rescans, st0.rescans);
	/* a new Pod: found without a walk */
	mkdirs(NEW, "istio-proxy");
	append(NEW, "istio-proxy", "0.log", LINE("new pod"));
	run_for(loop, 200);
	ck_assert_int_eq(nseen, 2);
	ck_assert_str_eq(seen[1], "new pod");
	tl_pod_logs_stats(p, &st1);
	ck_assert_uint_eq(st1.rescans, st0.rescans);
	ck_assert_uint_eq(st1.files, 51);
	/* and one that goes: its last line read, told once, without a walk */
	append(NEW, "istio-proxy", "0.log", LINE("last"));
	rm_rf(NEW);
	run_for(loop, 200);
	ck_assert_int_eq(nseen, 3);
	ck_assert_str_eq(seen[2], "last");
	ck_assert_int_eq(ngone, 1);
	ck_assert_str_eq(gone[0], "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee");
	tl_pod_logs_stats(p, &st1);
	ck_assert_uint_eq(st1.rescans, st0.rescans);
	ck_assert_uint_eq(st1.files, 50);
	tl_pod_logs_free(p);
	tl_loop_free(loop);
}
END_TEST

START_TEST(test_symlinked_dirs)
{
	symlinked_dirs(true);
}
END_TEST

START_TEST(test_symlinked_dirs_without_openat2)
{
	symlinked_dirs(false);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pod-logs");
	TCase *tc = tcase_create("tail");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_tail);
	tcase_add_test(tc, test_missing_root_and_limits);
	tcase_add_test(tc, test_symlinked_dirs);
	tcase_add_test(tc, test_pod_gone_told_once);
	tcase_add_test(tc, test_rescan_only_on_change);
	tcase_add_test(tc, test_symlinked_dirs_without_openat2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_check_run(suite()) ? EXIT_FAILURE : EXIT_SUCCESS;
}
