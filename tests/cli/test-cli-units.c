/* SPDX-License-Identifier: Apache-2.0 */
/* The pieces under kubectl-termline that a terminal and a kubeconfig rest
 * on: the control-character escaper (daemon/core/term-escape.c) and the
 * merge of $KUBECONFIG's files with kubectl's --context, --cluster and
 * --user (daemon/kube/kubeconfig.c). */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kubeconfig.h"
#include "term-escape.h"
#include "../check-run.h"

/* ---- the escaper ---- */

/* No byte a terminal acts on, and UTF-8 throughout. */
static void assert_inert(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; p[i]; i++) {
		ck_assert_msg(p[i] >= 0x20 && p[i] != 0x7f, "control byte 0x%02x at %zu in \"%s\"",
			      p[i], i, s);
		/* C1 as UTF-8: C2 80..C2 9F */
		ck_assert_msg(!(p[i] == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f),
			      "C1 control at %zu in \"%s\"", i, s);
	}
	ck_assert_msg(!tl_term_needs_escape(s, strlen(s)), "\"%s\" still needs escaping", s);
}

#define C(in, out)                                                                                 \
	{                                                                                          \
		in, sizeof(in) - 1, out                                                            \
	}
static const struct {
	const char *in;
	size_t len;
	const char *out;
} esc_cases[] = {
    C("plain id-0001", "plain id-0001"),
    C("caf\xc3\xa9 \xe2\x9c\x93", "caf\xc3\xa9 \xe2\x9c\x93"), /* é ✓ stay */
    C("a\x1b]0;owned\x07z", "a\\x1b]0;owned\\x07z"),	       /* OSC title */
    C("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),		       /* CSI clear */
    C("\x1b]8;;http://x\x1b\\click\x1b]8;;\x1b\\",
      "\\x1b]8;;http://x\\x1b\\click\\x1b]8;;\\x1b\\"), /* OSC 8 link */
    C("\xc2\x9b"
      "31m",
      "\\u009b31m"), /* C1 CSI */
    C("tab\tnl\ncr\r", "tab\\tnl\\ncr\\r"),
    C("nul\0x", "nul\\x00x"),
    C("del\x7f", "del\\x7f"),
    C("\xff\xfe", "\\xff\\xfe"),		   /* not UTF-8 */
    C("\xc3", "\\xc3"),				   /* cut short */
    C("\xc0\xaf", "\\xc0\\xaf"),		   /* overlong '/' */
    C("\xed\xa0\x80", "\\xed\\xa0\\x80"),	   /* a surrogate */
    C("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"), /* past U+10FFFF */
    C("abc\xe2\x80\xae"
      "def",
      "abc\\u202edef"),				       /* RIGHT-TO-LEFT OVERRIDE */
    C("\xe2\x81\xa6x\xe2\x81\xa9", "\\u2066x\\u2069"), /* isolates */
    C("\xef\xbb\xbf"
      "bom",
      "\\ufeffbom"),
    C("back\\slash", "back\\slash"),
};

START_TEST(test_escape_table)
{
	char out[256];
	size_t need = tl_term_escape(out, sizeof(out), esc_cases[_i].in, esc_cases[_i].len);
	char *dup = tl_term_escape_dup(esc_cases[_i].in, esc_cases[_i].len);

	ck_assert_str_eq(out, esc_cases[_i].out);
	ck_assert_uint_eq(need, strlen(esc_cases[_i].out));
	ck_assert_ptr_nonnull(dup);
	ck_assert_str_eq(dup, out);
	free(dup);
	assert_inert(out);
	ck_assert(tl_term_needs_escape(esc_cases[_i].in, esc_cases[_i].len) ==
		  (strcmp(esc_cases[_i].in, esc_cases[_i].out) != 0 ||
		   esc_cases[_i].len != strlen(esc_cases[_i].in)));
}
END_TEST

/* Cut at every length: never half an escape or half a character, and the
 * full escape's length is always the answer. */
START_TEST(test_escape_truncation)
{
	static const char in[] = "id\x1b[31m\xc3\xa9\xff\xe2\x80\xae!";
	char full[128];
	size_t need = tl_term_escape(full, sizeof(full), in, sizeof(in) - 1);

	for (size_t len = 0; len <= need + 1; len++) {
		char buf[128];

		memset(buf, 'Z', sizeof(buf));
		ck_assert_uint_eq(tl_term_escape(len ? buf : NULL, len, in, sizeof(in) - 1), need);
		if (!len)
			continue;
		ck_assert_uint_lt(strlen(buf), len);
		ck_assert_msg(strncmp(buf, full, strlen(buf)) == 0, "len %zu: \"%s\"", len, buf);
		/* a cut falls between units: the rest of the full text starts a unit */
		ck_assert_msg(full[strlen(buf)] == 0 || full[strlen(buf)] == '\\' ||
				  ((unsigned char)full[strlen(buf)] & 0xc0) != 0x80,
			      "len %zu cuts inside a unit: \"%s\"", len, buf);
		ck_assert_msg(strlen(buf) == 0 || buf[strlen(buf) - 1] != '\\',
			      "len %zu: a lone backslash", len);
		assert_inert(buf);
	}
}
END_TEST

/* Every byte value, in every position of a short string: the result is
 * inert. */
START_TEST(test_escape_all_bytes)
{
	for (unsigned b = 0; b < 256; b++) {
		char in[4] = {'x', (char)b, (char)(b ^ 0x40), 'y'}, out[64];

		tl_term_escape(out, sizeof(out), in, sizeof(in));
		assert_inert(out);
	}
}
END_TEST

/* ---- the merged kubeconfig ---- */

static char dir[256];

static void write_file(const char *name, const char *content)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	ck_assert_msg(f, "cannot write %s", p);
	fputs(content, f);
	fclose(f);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/tl-cli-kc-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	{
		char sub[300];

		snprintf(sub, sizeof(sub), "%s/b", dir);
		ck_assert_int_eq(mkdir(sub, 0700), 0);
	}
	write_file("ca-a.crt", "CA A\n");
	write_file("b/ca-b.crt", "CA B\n");
	/* a: current-context alpha; a cluster "shared" that b also names */
	write_file("a.yaml", "apiVersion: v1\nkind: Config\ncurrent-context: alpha\n"
			     "contexts:\n"
			     "- name: alpha\n  context: {cluster: ka, user: ua, namespace: ns-a}\n"
			     "- name: mixed\n  context: {cluster: shared, user: ub}\n"
			     "clusters:\n"
			     "- name: ka\n  cluster: {server: 'https://a.example:6443', "
			     "certificate-authority: ca-a.crt}\n"
			     "- name: shared\n  cluster: {server: 'https://shared-from-a:6443'}\n"
			     "users:\n- name: ua\n  user: {token: token-a}\n");
	/* b (in a subdirectory): its own current-context, ignored after a's */
	write_file("b/b.yaml", "apiVersion: v1\nkind: Config\ncurrent-context: beta\n"
			       "contexts:\n"
			       "- name: beta\n  context: {cluster: kb, user: ub, namespace: ns-b}\n"
			       "- name: alpha\n  context: {cluster: kb, user: ub}\n"
			       "clusters:\n"
			       "- name: kb\n  cluster: {server: 'https://b.example:6443', "
			       "certificate-authority: ca-b.crt}\n"
			       "- name: shared\n  cluster: {server: 'https://shared-from-b:6443'}\n"
			       "users:\n- name: ub\n  user: {token: token-b}\n");
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static int load(const char *const *names, size_t n, const char *ctx, const char *cluster,
		const char *user, struct tl_kubeconfig **ret, char *err, size_t errlen)
{
	const struct tl_kubeconfig_select sel = {ctx, cluster, user};
	char paths[4][512];
	const char *p[4];

	for (size_t i = 0; i < n; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/%s", dir, names[i]);
		p[i] = paths[i];
	}
	return tl_kubeconfig_load_merged(p, n, &sel, ret, err, errlen);
}

START_TEST(test_merge_first_wins)
{
	static const char *const ab[] = {"a.yaml", "b/b.yaml"}, *const ba[] = {"b/b.yaml",
									       "a.yaml"};
	struct tl_kubeconfig *kc = NULL;
	char err[512] = "", ca[600];

	/* a's current-context, a's "alpha" (b's is shadowed) */
	ck_assert_int_eq(load(ab, 2, NULL, NULL, NULL, &kc, err, sizeof(err)), 0);
	ck_assert_str_eq(kc->server, "https://a.example:6443");
	ck_assert_str_eq(kc->token, "token-a");
	ck_assert_str_eq(kc->ns, "ns-a");
	snprintf(ca, sizeof(ca), "%s/ca-a.crt", dir);
	ck_assert_str_eq(kc->ca_file, ca);
	tl_kubeconfig_free(kc);
	kc = NULL;
	/* --context beta: b's entries, b's paths relative to b's directory */
	ck_assert_int_eq(load(ab, 2, "beta", NULL, NULL, &kc, err, sizeof(err)), 0);
	ck_assert_str_eq(kc->server, "https://b.example:6443");
	ck_assert_str_eq(kc->token, "token-b");
	ck_assert_str_eq(kc->ns, "ns-b");
	snprintf(ca, sizeof(ca), "%s/b/ca-b.crt", dir);
	ck_assert_str_eq(kc->ca_file, ca);
	tl_kubeconfig_free(kc);
	kc = NULL;
	/* the order decides: b first, b's current-context and b's alpha */
	ck_assert_int_eq(load(ba, 2, NULL, NULL, NULL, &kc, err, sizeof(err)), 0);
	ck_assert_str_eq(kc->server, "https://b.example:6443");
	tl_kubeconfig_free(kc);
	kc = NULL;
	ck_assert_int_eq(load(ba, 2, "alpha", NULL, NULL, &kc, err, sizeof(err)), 0);
	ck_assert_str_eq(kc->server, "https://b.example:6443");
	tl_kubeconfig_free(kc);
	kc = NULL;
	/* a context of one file naming a cluster both have: the first file's */
	ck_assert_int_eq(load(ab, 2, "mixed", NULL, NULL, &kc, err, sizeof(err)), 0);
	ck_assert_str_eq(kc->server, "https://shared-from-a:6443");
	ck_assert_str_eq(kc->token, "token-b");
	tl_kubeconfig_free(kc);
}
END_TEST

START_TEST(test_merge_overrides)
{
	static const char *const ab[] = {"a.yaml", "b/b.yaml"};
	struct tl_kubeconfig *kc = NULL;
	char err[512] = "";

	/* --cluster and --user over the context's */
	ck_assert_int_eq(load(ab, 2, NULL, "kb", NULL, &kc, err, sizeof(err)), 0);
	ck_assert_str_eq(kc->server, "https://b.example:6443");
	ck_assert_str_eq(kc->token, "token-a");
	tl_kubeconfig_free(kc);
	kc = NULL;
	ck_assert_int_eq(load(ab, 2, "alpha", NULL, "ub", &kc, err, sizeof(err)), 0);
	ck_assert_str_eq(kc->server, "https://a.example:6443");
	ck_assert_str_eq(kc->token, "token-b");
	tl_kubeconfig_free(kc);
	kc = NULL;
	/* a name no file has: one line naming the flag */
	ck_assert_int_eq(load(ab, 2, "nope", NULL, NULL, &kc, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_null(kc);
	ck_assert_msg(strstr(err, "\"nope\"") && strstr(err, "--context"), "%s", err);
	ck_assert_int_eq(load(ab, 2, NULL, "nope", NULL, &kc, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, "--cluster"), "%s", err);
	ck_assert_int_eq(load(ab, 2, NULL, NULL, "nope", &kc, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, "--user"), "%s", err);
}
END_TEST

START_TEST(test_merge_missing_files)
{
	static const char *const gap[] = {"missing.yaml", "b/b.yaml"},
				 *const none[] = {"missing.yaml", "gone.yaml"},
				 *const bad[] = {"a.yaml", "broken.yaml"};
	struct tl_kubeconfig *kc = NULL;
	char err[512] = "";

	/* kubectl skips a listed file that does not exist */
	ck_assert_int_eq(load(gap, 2, NULL, NULL, NULL, &kc, err, sizeof(err)), 0);
	ck_assert_str_eq(kc->server, "https://b.example:6443");
	tl_kubeconfig_free(kc);
	kc = NULL;
	ck_assert_int_eq(load(none, 2, NULL, NULL, NULL, &kc, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, "missing.yaml:") && strstr(err, "gone.yaml"), "%s", err);
	/* one that exists and is broken is an error naming it */
	write_file("broken.yaml", "clusters: [\n");
	ck_assert_int_lt(load(bad, 2, NULL, NULL, NULL, &kc, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "broken.yaml"), "%s", err);
	ck_assert_ptr_null(kc);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli-units");
	TCase *te = tcase_create("term-escape"), *tk = tcase_create("kubeconfig-merge");
	int failed;

	tcase_add_loop_test(te, test_escape_table, 0,
			    (int)(sizeof(esc_cases) / sizeof(esc_cases[0])));
	tcase_add_test(te, test_escape_truncation);
	tcase_add_test(te, test_escape_all_bytes);
	suite_add_tcase(s, te);
	tcase_add_checked_fixture(tk, setup, teardown);
	tcase_add_test(tk, test_merge_first_wins);
	tcase_add_test(tk, test_merge_overrides);
	tcase_add_test(tk, test_merge_missing_files);
	suite_add_tcase(s, tk);
	failed = tl_check_run(s);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
