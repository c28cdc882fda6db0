/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "kube-creds.h"
#include "kubeconfig.h"
#include "loop.h"
#include "macro.h"
#include "../check-run.h"

/* The credentials of the kubeconfig a test loaded (kube-creds.h), freed
 * with it. */
static struct tl_kube_auth *test_auth;
static const struct tl_kubeconfig *test_auth_kc;

static struct tl_kube_auth *auth_of(const struct tl_kubeconfig *kc)
{
	if (test_auth_kc != kc) {
		tl_kube_auth_free(test_auth);
		test_auth = NULL;
		ck_assert_int_eq(tl_kube_auth_new(kc, &test_auth), 0);
		test_auth_kc = kc;
	}
	return test_auth;
}

static void kc_free(struct tl_kubeconfig *kc)
{
	if (kc && kc == test_auth_kc) {
		tl_kube_auth_free(test_auth);
		test_auth = NULL;
		test_auth_kc = NULL;
	}
	tl_kubeconfig_free(kc);
}

static char dir[256];

static void write_file(const char *name, const char *content, int mode)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	ck_assert_msg(f, "cannot write %s", p);
	fputs(content, f);
	fclose(f);
	chmod(p, (mode_t)mode);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/tl-kubeconfig-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	write_file("ca.crt", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", 0644);
	write_file("token", "file-token-1\n", 0600);
	write_file("client.crt", "CERT\n", 0644);
	write_file("client.key", "KEY\n", 0600);
	write_file("empty-token", "\n", 0600);
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

#define HEAD                                                      \
	"apiVersion: v1\nkind: Config\ncurrent-context: c1\n"     \
	"contexts:\n- name: c1\n  context: {cluster: k1, user: u1}\n"
#define CLUSTER(extra)                                                     \
	"clusters:\n- name: k1\n  cluster:\n    server: https://10.0.0.1:6443\n" extra
#define USER(body) "users:\n- name: u1\n  user:\n" body

/* "Q0EK" is base64 of "CA\n"; "Q0VSVA==" of "CERT"; "S0VZ" of "KEY" */
struct good_case {
	const char *name;
	const char *yaml;
	const char *want_token;    /* creds after the first fetch */
	const char *want_cert_pem; /* creds or data */
	bool want_insecure;
	const char *want_tls_name;
	const char *want_ca_pem;
	bool want_ca_file;
};

static const struct good_case good[] = {
	{ "inline token", HEAD CLUSTER("    certificate-authority: ca.crt\n") USER("    token: abc\n"),
	  "abc", NULL, false, NULL, NULL, true },
	{ "token file (relative)", HEAD CLUSTER("") USER("    tokenFile: token\n"),
	  "file-token-1", NULL, false, NULL, NULL, false },
	{ "token wins over tokenFile", HEAD CLUSTER("") USER("    token: t\n    tokenFile: token\n"),
	  "t", NULL, false, NULL, NULL, false },
	{ "CA data", HEAD CLUSTER("    certificate-authority-data: Q0EK\n") USER("    token: a\n"),
	  "a", NULL, false, NULL, "CA\n", false },
	{ "insecure + tls-server-name",
	  HEAD CLUSTER("    insecure-skip-tls-verify: true\n    tls-server-name: api.internal\n")
		  USER("    token: a\n"),
	  "a", NULL, true, "api.internal", NULL, false },
	{ "client cert files", HEAD CLUSTER("") USER("    client-certificate: client.crt\n"
						    "    client-key: client.key\n"),
	  NULL, NULL, false, NULL, NULL, false },
	{ "client cert data", HEAD CLUSTER("") USER("    client-certificate-data: Q0VSVA==\n"
						   "    client-key-data: S0VZ\n"),
	  NULL, "CERT", false, NULL, NULL, false },
	{ "exec token", HEAD CLUSTER("") USER("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
					      "      command: ./plugin.sh\n      args: [far]\n"
					      "      env: [{name: PLUGIN_TOKEN, value: exec-tok}]\n"),
	  "exec-tok", NULL, false, NULL, NULL, false },
	{ "exec client cert", HEAD CLUSTER("") USER("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n"
						    "      command: ./plugin.sh\n      args: [cert]\n"),
	  NULL, "PEMCERT", false, NULL, NULL, false },
};

/* prints an ExecCredential; counts its runs in DIR/runs */
static const char plugin[] =
	"#!/bin/sh\n"
	"d=$(dirname \"$0\")\n"
	"echo x >> \"$d/runs\"\n"
	"case \"$KUBERNETES_EXEC_INFO\" in *ExecCredential*) ;; *) exit 3;; esac\n"
	"case \"$1\" in\n"
	"far) echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
	"\"status\":{\"token\":\"'$PLUGIN_TOKEN'\",\"expirationTimestamp\":\"2200-01-01T00:00:00Z\"}}';;\n"
	"past) echo '{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"old\","
	"\"expirationTimestamp\":\"2001-01-01T00:00:00Z\"}}';;\n"
	"cert) echo '{\"kind\":\"ExecCredential\",\"status\":{\"clientCertificateData\":\"PEMCERT\","
	"\"clientKeyData\":\"PEMKEY\"}}';;\n"
	"bad) echo 'not json';;\n"
	"fail) exit 1;;\n"
	"linger) echo '{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'; exec >&-; exec sleep 30;;\n"
	/* done only once the test's loop has made the file */
	"wait-go) while [ ! -e \"$d/go\" ]; do sleep 0.02; done;"
	" echo '{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"after-go\"}}';;\n"
	"hang) echo $$ > \"$d/pid\"; exec sleep 60;;\n"
	/* hostile plugins: a null kind, a token that would end its header */
	"nullkind) echo '{\"kind\":null,\"status\":{\"token\":\"t\"}}';;\n"
	"numkind) echo '{\"kind\":7,\"status\":{\"token\":\"t\"}}';;\n"
	/* the first PLUGIN_TOKEN of the environment it was given, as Go's
	 * os.Getenv reads it (a shell keeps the last) */
	"firstenv) t=$(tr '\\0' '\\n' < /proc/$$/environ | sed -n 's/^PLUGIN_TOKEN=//p' | head -n 1);"
	" echo '{\"kind\":\"ExecCredential\",\"status\":{\"token\":\"'$t'\"}}';;\n"
	"inject) printf '%s\\n' '{\"kind\":\"ExecCredential\",\"status\":"
	"{\"token\":\"a\\r\\nX-Injected: 1\"}}';;\n"
	"esac\n";

static int count_runs(void)
{
	char p[512], line[16];
	FILE *f;
	int n = 0;

	snprintf(p, sizeof(p), "%s/runs", dir);
	f = fopen(p, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n++;
	fclose(f);
	return n;
}

static struct tl_kubeconfig *load_yaml(const char *yaml, char *err, size_t errlen, int *ret)
{
	struct tl_kubeconfig *kc = (struct tl_kubeconfig *)0x1;
	char p[512];

	write_file("config", yaml, 0600);
	snprintf(p, sizeof(p), "%s/config", dir);
	*ret = tl_kubeconfig_load(p, &kc, err, errlen);
	if (*ret < 0) {
		ck_assert_ptr_eq(kc, (struct tl_kubeconfig *)0x1); /* untouched on failure */
		return NULL;
	}
	return kc;
}

START_TEST(test_good)
{
	const struct good_case *c = &good[_i];
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	char err[512];
	int r;

	write_file("plugin.sh", plugin, 0755);
	kc = load_yaml(c->yaml, err, sizeof(err), &r);
	ck_assert_msg(kc, "%s: %s", c->name, err);
	ck_assert_str_eq(kc->server, "https://10.0.0.1:6443");
	ck_assert_int_eq(kc->insecure, c->want_insecure);
	if (c->want_tls_name)
		ck_assert_str_eq(kc->tls_server_name, c->want_tls_name);
	else
		ck_assert_ptr_null(kc->tls_server_name);
	if (c->want_ca_pem)
		ck_assert_str_eq(kc->ca_pem, c->want_ca_pem);
	ck_assert_int_eq(kc->ca_file != NULL, c->want_ca_file);
	if (c->want_ca_file)
		ck_assert_ptr_nonnull(strstr(kc->ca_file, dir));
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1000, &cr, err, sizeof(err)), 0);
	if (c->want_token)
		ck_assert_str_eq(cr->token, c->want_token);
	else
		ck_assert_ptr_null(cr->token);
	if (c->want_cert_pem)
		ck_assert_str_eq(cr->cert_pem ? cr->cert_pem : kc->cert_pem, c->want_cert_pem);
	if (strstr(c->name, "cert files")) {
		ck_assert_ptr_nonnull(strstr(kc->cert_file, "/client.crt"));
		ck_assert_ptr_nonnull(strstr(kc->key_file, "/client.key"));
	}
	kc_free(kc);
}
END_TEST

struct bad_case {
	const char *name;
	const char *yaml;
	const char *want_key; /* must appear in the message */
};

static const struct bad_case bad[] = {
	{ "no current-context", "apiVersion: v1\nclusters: []\n", "key current-context" },
	{ "context not found", "current-context: nope\ncontexts:\n- name: c1\n  context: {cluster: k1}\n",
	  "key contexts" },
	{ "cluster not found", HEAD "clusters:\n- name: other\n  cluster: {server: https://x}\n",
	  "key clusters" },
	{ "no server", HEAD "clusters:\n- name: k1\n  cluster: {insecure-skip-tls-verify: true}\n",
	  "key clusters[0].cluster.server" },
	{ "server not a URL", HEAD "clusters:\n- name: k1\n  cluster: {server: 'ftp://x'}\n",
	  "key clusters[0].cluster.server" },
	{ "CA file missing", HEAD CLUSTER("    certificate-authority: nope.crt\n"),
	  "key clusters[0].cluster.certificate-authority" },
	{ "CA data not base64", HEAD CLUSTER("    certificate-authority-data: '%%%'\n"),
	  "key clusters[0].cluster.certificate-authority-data" },
	{ "insecure not a bool", HEAD CLUSTER("    insecure-skip-tls-verify: maybe\n"),
	  "key clusters[0].cluster.insecure-skip-tls-verify" },
	{ "server is a map", HEAD "clusters:\n- name: k1\n  cluster: {server: {a: b}}\n",
	  "key clusters[0].cluster.server" },
	{ "user not found", HEAD CLUSTER("") "users:\n- name: zz\n  user: {token: a}\n", "key users" },
	{ "tokenFile missing", HEAD CLUSTER("") USER("    tokenFile: /nonexistent/token\n"),
	  "key users[0].user.tokenFile" },
	{ "cert without key", HEAD CLUSTER("") USER("    client-certificate: client.crt\n"),
	  "key users[0].user.client-key" },
	{ "key without cert", HEAD CLUSTER("") USER("    client-key-data: S0VZ\n"),
	  "key users[0].user.client-certificate" },
	{ "key data not base64", HEAD CLUSTER("") USER("    client-certificate-data: Q0VSVA==\n"
						       "    client-key-data: '!!'\n"),
	  "key users[0].user.client-key-data" },
	{ "exec without command", HEAD CLUSTER("") USER("    exec: {apiVersion: client.authentication.k8s.io/v1}\n"),
	  "key users[0].user.exec.command" },
	{ "exec without apiVersion", HEAD CLUSTER("") USER("    exec: {command: /bin/true}\n"),
	  "key users[0].user.exec.apiVersion" },
	{ "exec args not a list", HEAD CLUSTER("") USER("    exec: {command: /bin/true, apiVersion: v1, args: x}\n"),
	  "key users[0].user.exec.args" },
	{ "exec args a map", HEAD CLUSTER("") USER("    exec: {command: /bin/true, apiVersion: v1, args: {a: b}}\n"),
	  "key users[0].user.exec.args: expected a list" },
	{ "exec env not a list", HEAD CLUSTER("") USER("    exec: {command: /bin/true, apiVersion: v1, env: x}\n"),
	  "key users[0].user.exec.env: expected a list" },
	{ "context namespace empty",
	  "current-context: c1\ncontexts:\n- name: c1\n  context: {cluster: k1, namespace: ''}\n" CLUSTER(""),
	  "key contexts[0].context.namespace" },
	{ "context namespace with a slash",
	  "current-context: c1\ncontexts:\n- name: c1\n  context: {cluster: k1, namespace: a/b}\n" CLUSTER(""),
	  "key contexts[0].context.namespace" },
	{ "YAML syntax", "current-context: [unclosed\n", "line " },
	{ "not a map", "- a\n- b\n", "not a YAML map" },
};

START_TEST(test_bad)
{
	const struct bad_case *c = &bad[_i];
	char err[512], prefix[300];
	int r;

	ck_assert_ptr_null(load_yaml(c->yaml, err, sizeof(err), &r));
	ck_assert_int_lt(r, 0);
	snprintf(prefix, sizeof(prefix), "kubeconfig %s/config: ", dir);
	ck_assert_msg(strncmp(err, prefix, strlen(prefix)) == 0, "%s: message \"%s\"", c->name, err);
	ck_assert_msg(strstr(err, c->want_key), "%s: message \"%s\" lacks \"%s\"", c->name, err,
		      c->want_key);
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

/* The current context's namespace, for kubectl-termline's names given
 * without one; unset is NULL. */
START_TEST(test_context_namespace)
{
	struct tl_kubeconfig *kc;
	char err[512];
	int r;

	kc = load_yaml("current-context: c2\ncontexts:\n"
		       "- name: c1\n  context: {cluster: k1, namespace: one}\n"
		       "- name: c2\n  context: {cluster: k1, namespace: shop}\n" CLUSTER(""),
		       err, sizeof(err), &r);
	ck_assert_msg(kc, "%s", err);
	ck_assert_str_eq(kc->ns, "shop");
	kc_free(kc);
	kc = load_yaml("current-context: c1\ncontexts:\n- name: c1\n  context: {cluster: k1}\n" CLUSTER(""),
		       err, sizeof(err), &r);
	ck_assert_msg(kc, "%s", err);
	ck_assert_ptr_null(kc->ns);
	kc_free(kc);
}
END_TEST

START_TEST(test_missing_file)
{
	struct tl_kubeconfig *kc = NULL;
	char err[512];

	ck_assert_int_eq(tl_kubeconfig_load("/nonexistent/kubeconfig", &kc, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_null(kc);
	ck_assert_str_eq(err, "kubeconfig /nonexistent/kubeconfig: cannot read: No such file or directory");
}
END_TEST

START_TEST(test_token_file_reread)
{
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	char err[512];
	int r;

	kc = load_yaml(HEAD CLUSTER("") USER("    tokenFile: token\n"), err, sizeof(err), &r);
	ck_assert_ptr_nonnull(kc);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1000, &cr, err, sizeof(err)), 0);
	ck_assert_str_eq(cr->token, "file-token-1");
	write_file("token", "file-token-2", 0600);
	/* younger than 60 s: the copy in memory is used */
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 59000, &cr, err, sizeof(err)), 0);
	ck_assert_str_eq(cr->token, "file-token-1");
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 61000, &cr, err, sizeof(err)), 0);
	ck_assert_str_eq(cr->token, "file-token-2");
	/* after a 401 (force) it is read at once */
	write_file("token", "file-token-3\n", 0600);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), true, 61001, &cr, err, sizeof(err)), 0);
	ck_assert_str_eq(cr->token, "file-token-3");
	/* a broken file keeps the previous token and says which key */
	write_file("token", "\n", 0600);
	ck_assert_int_lt(tl_kube_auth_credentials(auth_of(kc), true, 61002, &cr, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "key users[0].user.tokenFile"));
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 61003, &cr, err, sizeof(err)), 0);
	ck_assert_str_eq(cr->token, "file-token-3");
	kc_free(kc);
}
END_TEST

#define EXEC_USER(arg) \
	USER("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n" \
	     "      command: ./plugin.sh\n      args: [" arg "]\n" \
	     "      env: [{name: PLUGIN_TOKEN, value: t1}]\n")

START_TEST(test_exec_rerun)
{
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	char err[512];
	int r;

	write_file("plugin.sh", plugin, 0755);
	kc = load_yaml(HEAD CLUSTER("") EXEC_USER("far"), err, sizeof(err), &r);
	ck_assert_ptr_nonnull(kc);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1000, &cr, err, sizeof(err)), 0);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 900000, &cr, err, sizeof(err)), 0);
	ck_assert_str_eq(cr->token, "t1");
	ck_assert_int_eq(count_runs(), 1); /* not expired: cached */
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), true, 900001, &cr, err, sizeof(err)), 0);
	ck_assert_int_eq(count_runs(), 2); /* a 401 re-runs it */
	kc_free(kc);

	kc = load_yaml(HEAD CLUSTER("") EXEC_USER("past"), err, sizeof(err), &r);
	ck_assert_ptr_nonnull(kc);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1000, &cr, err, sizeof(err)), 0);
	ck_assert_int_eq(count_runs(), 3);
	/* expired on arrival: used while the plugin may not run again, and
	 * the plugin is not run for every use but after 10 s, then 20 s */
	for (uint64_t t = 1001; t < 11000; t += 500) {
		ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, t, &cr, err, sizeof(err)), 0);
		ck_assert_str_eq(cr->token, "old");
	}
	ck_assert_int_eq(count_runs(), 3);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 11000, &cr, err, sizeof(err)), 0);
	ck_assert_int_eq(count_runs(), 4);
	for (uint64_t t = 11001; t < 31000; t += 500)
		ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, t, &cr, err, sizeof(err)), 0);
	ck_assert_int_eq(count_runs(), 4);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 31000, &cr, err, sizeof(err)), 0);
	ck_assert_int_eq(count_runs(), 5);
	kc_free(kc);
}
END_TEST

START_TEST(test_exec_failures)
{
	static const char *const args[] = { "bad", "fail", "none" };
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	char err[512], yaml[1024];
	int r;

	write_file("plugin.sh", plugin, 0755);
	for (size_t i = 0; i < 3; i++) {
		snprintf(yaml, sizeof(yaml), HEAD CLUSTER("") USER("    exec:\n      apiVersion: v1\n"
			 "      command: ./plugin.sh\n      args: [%s]\n"), args[i]);
		kc = load_yaml(yaml, err, sizeof(err), &r);
		ck_assert_ptr_nonnull(kc);
		ck_assert_int_lt(tl_kube_auth_credentials(auth_of(kc), false, 1, &cr, err, sizeof(err)), 0);
		ck_assert_msg(strstr(err, "key users[0].user.exec: "), "%s", err);
		kc_free(kc);
	}
	/* a plugin that closes its output but does not exit is held to the
	 * deadline, not waited for (the daemon's loop would stand still) */
	kc = load_yaml(HEAD CLUSTER("") USER("    exec:\n      apiVersion: v1\n"
					    "      command: ./plugin.sh\n      args: [linger]\n"),
		       err, sizeof(err), &r);
	ck_assert_ptr_nonnull(kc);
	kc->exec->timeout_ms = 300;
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1, &cr, err, sizeof(err)), -ETIMEDOUT);
	ck_assert_msg(strstr(err, "timed out"), "%s", err);
	kc_free(kc);
	kc = load_yaml(HEAD CLUSTER("") USER("    exec: {apiVersion: v1, command: no-such-plugin-xyz}\n"),
		       err, sizeof(err), &r);
	ck_assert_ptr_nonnull(kc);
	ck_assert_int_lt(tl_kube_auth_credentials(auth_of(kc), false, 1, &cr, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "no-such-plugin-xyz"));
	kc_free(kc);
}
END_TEST

/* ---- exec plugins on the loop ---- */

struct async_ctx {
	struct tl_loop *loop;
	unsigned notified;
	unsigned ticks;
	bool made_go;
};

static void on_creds(void *userdata)
{
	struct async_ctx *a = userdata;

	a->notified++;
}

static void make_go(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *userdata)
{
	struct async_ctx *a = userdata;

	if (++a->ticks == 3) {
		write_file("go", "", 0644);
		a->made_go = true;
	}
}

/* Runs the loop until the kubeconfig says its plugin is done (the plugins
 * here end by themselves or by their deadline). */
static void wait_notified(struct async_ctx *a, unsigned want)
{
	while (a->notified < want)
		ck_assert_int_ge(tl_loop_run_once(a->loop, 1000), 0);
}

static struct tl_kubeconfig *async_kc(const char *arg, struct async_ctx *a)
{
	struct tl_kubeconfig *kc;
	char yaml[1024], err[512];
	int r;

	write_file("plugin.sh", plugin, 0755);
	snprintf(yaml, sizeof(yaml), HEAD CLUSTER("") USER("    exec:\n"
		 "      apiVersion: client.authentication.k8s.io/v1\n"
		 "      command: ./plugin.sh\n      args: [%s]\n"
		 "      env: [{name: PLUGIN_TOKEN, value: t1}]\n"), arg);
	kc = load_yaml(yaml, err, sizeof(err), &r);
	ck_assert_msg(kc, "%s", err);
	memset(a, 0, sizeof(*a));
	ck_assert_int_eq(tl_loop_new(&a->loop), 0);
	ck_assert_int_eq(tl_kube_auth_subscribe(auth_of(kc), on_creds, a), 0);
	return kc;
}

START_TEST(test_exec_async_does_not_block)
{
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	struct tl_timer *t;
	struct async_ctx a;
	char err[512];

	kc = async_kc("wait-go", &a);
	kc->exec->timeout_ms = 20000;
	ck_assert_int_eq(tl_kube_auth_attach(auth_of(kc), a.loop), 0);
	ck_assert_int_eq(tl_loop_add_timer(a.loop, 20, 20, make_go, &a, &t), 0);
	/* nothing to send yet: the caller is told to wait, not given NULL */
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, tl_now_mono_ms(), &cr, err,
						   sizeof(err)), -EAGAIN);
	/* the plugin ends only after a timer on the same loop made its file:
	 * the loop kept running while it ran */
	wait_notified(&a, 1);
	ck_assert(a.made_go);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, tl_now_mono_ms(), &cr, err,
						   sizeof(err)), 0);
	ck_assert_str_eq(cr->token, "after-go");
	ck_assert_int_eq(count_runs(), 1);
	tl_timer_free(t);
	kc_free(kc);
	tl_loop_free(a.loop);
}
END_TEST

START_TEST(test_exec_async_hang_killed)
{
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	struct async_ctx a;
	char err[512], p[512], buf[32];
	FILE *f;
	long pid;

	kc = async_kc("hang", &a);
	kc->exec->timeout_ms = 300;
	ck_assert_int_eq(tl_kube_auth_attach(auth_of(kc), a.loop), 0);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, tl_now_mono_ms(), &cr, err,
						   sizeof(err)), -EAGAIN);
	wait_notified(&a, 1);
	/* reported, with the key, and the caller still waits (a retry is due
	 * later), it does not get a request without credentials */
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, tl_now_mono_ms(), &cr, err,
						   sizeof(err)), -EAGAIN);
	ck_assert_msg(strstr(err, "key users[0].user.exec: ") && strstr(err, "timed out"), "%s",
		      err);
	/* killed and reaped */
	snprintf(p, sizeof(p), "%s/pid", dir);
	f = fopen(p, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	pid = strtol(buf, NULL, 10);
	ck_assert_int_gt(pid, 1);
	ck_assert_int_eq(kill((pid_t)pid, 0), -1);
	ck_assert_int_eq(errno, ESRCH);
	ck_assert_int_eq(count_runs(), 1);
	kc_free(kc);
	tl_loop_free(a.loop);
}
END_TEST

START_TEST(test_exec_async_expired_no_storm)
{
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	struct async_ctx a;
	char err[512];

	kc = async_kc("past", &a);
	ck_assert_int_eq(tl_kube_auth_attach(auth_of(kc), a.loop), 0);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, tl_now_mono_ms(), &cr, err,
						   sizeof(err)), -EAGAIN);
	wait_notified(&a, 1);
	/* every request asks; the expired credential is what there is */
	for (int i = 0; i < 50; i++) {
		ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, tl_now_mono_ms(), &cr, err,
							   sizeof(err)), 0);
		ck_assert_str_eq(cr->token, "old");
		ck_assert_int_ge(tl_loop_run_once(a.loop, 1), 0);
	}
	ck_assert_uint_eq(a.notified, 1);
	ck_assert_int_eq(count_runs(), 1);
	kc_free(kc);
	tl_loop_free(a.loop);
}
END_TEST

START_TEST(test_exec_async_401_reruns_once)
{
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	struct async_ctx a;
	uint64_t gen;
	char err[512];

	kc = async_kc("far", &a);
	/* the first credentials as at start-up, before the loop; issued at
	 * "1 ms", long before the 401s below */
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1, &cr, err, sizeof(err)), 0);
	gen = cr->generation;
	ck_assert_int_eq(tl_kube_auth_attach(auth_of(kc), a.loop), 0);
	/* two requests with them get 401 */
	tl_kube_auth_invalidate(auth_of(kc), gen, tl_now_mono_ms());
	tl_kube_auth_invalidate(auth_of(kc), gen, tl_now_mono_ms());
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, tl_now_mono_ms(), &cr, err,
						   sizeof(err)), -EAGAIN);
	wait_notified(&a, 1);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, tl_now_mono_ms(), &cr, err,
						   sizeof(err)), 0);
	ck_assert_uint_ne(cr->generation, gen);
	ck_assert_int_eq(count_runs(), 2);
	/* a late 401 for the old credentials changes nothing */
	tl_kube_auth_invalidate(auth_of(kc), gen, tl_now_mono_ms());
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, tl_now_mono_ms(), &cr, err,
						   sizeof(err)), 0);
	for (int i = 0; i < 20; i++)
		ck_assert_int_ge(tl_loop_run_once(a.loop, 10), 0);
	ck_assert_uint_eq(a.notified, 1);
	ck_assert_int_eq(count_runs(), 2);
	kc_free(kc);
	tl_loop_free(a.loop);
}
END_TEST

START_TEST(test_in_cluster)
{
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc = NULL;
	char err[512];

	unsetenv("KUBERNETES_SERVICE_HOST");
	ck_assert_int_lt(tl_kubeconfig_in_cluster(dir, &kc, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "KUBERNETES_SERVICE_HOST"));
	ck_assert_ptr_null(kc);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	ck_assert_int_eq(tl_kubeconfig_in_cluster(dir, &kc, err, sizeof(err)), 0);
	ck_assert_str_eq(kc->server, "https://[fd00::1]:443");
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 5, &cr, err, sizeof(err)), 0);
	ck_assert_str_eq(cr->token, "file-token-1");
	kc_free(kc);
	setenv("KUBERNETES_SERVICE_PORT", "https", 1);
	ck_assert_int_lt(tl_kubeconfig_in_cluster(dir, &kc, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "KUBERNETES_SERVICE_PORT"));
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	ck_assert_int_lt(tl_kubeconfig_in_cluster("/nonexistent", &kc, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "ca.crt"));
}
END_TEST

START_TEST(test_base64)
{
	char *out;
	size_t n;

	ck_assert_int_eq(tl_base64_decode("aGVsbG8gd29ybGQ=", &out, &n), 0);
	ck_assert_uint_eq(n, 11);
	ck_assert_str_eq(out, "hello world");
	free(out);
	ck_assert_int_eq(tl_base64_decode("aGVs\nbG8=", &out, &n), 0);
	ck_assert_str_eq(out, "hello");
	free(out);
	ck_assert_int_eq(tl_base64_decode("aGVsbG8=x", &out, &n), -EINVAL);
	ck_assert_int_eq(tl_base64_decode("a", &out, &n), -EINVAL);
	ck_assert_int_eq(tl_base64_decode("a$==", &out, &n), -EINVAL);
}
END_TEST

/* Messages quote values of the file: a value with CR, LF or ESC must not
 * make a log line of its own (or many). */
static void assert_one_clean_line(const char *what, const char *err)
{
	ck_assert_msg(err[0], "%s: no message", what);
	for (const unsigned char *p = (const unsigned char *)err; *p; p++)
		ck_assert_msg(*p >= 0x20 && *p != 0x7f, "%s: control byte 0x%02x in \"%s\"", what,
			      *p, err);
}

START_TEST(test_control_chars_not_echoed)
{
	static const char *const yamls[] = {
		"current-context: \"x\\r\\ny\\e[31m\"\ncontexts:\n- name: c1\n  context: {cluster: k1}\n",
		HEAD CLUSTER("    insecure-skip-tls-verify: \"maybe\\r\\nX\"\n"),
		HEAD "clusters:\n- name: k1\n  cluster: {server: \"ftp://a\\r\\n\\r\\n\\r\\nb\"}\n",
		HEAD "clusters:\n- name: k1\n  cluster: {server: \"ftp://\\x1b[2J\"}\n",
		HEAD CLUSTER("    certificate-authority: \"no\\rsuch\\n.crt\"\n"),
	};
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	char err[512];
	int r;

	for (size_t i = 0; i < sizeof(yamls) / sizeof(yamls[0]); i++) {
		ck_assert_ptr_null(load_yaml(yamls[i], err, sizeof(err), &r));
		assert_one_clean_line(yamls[i], err);
		ck_assert_msg(strstr(err, "\\x"), "%s", err);
	}
	/* the plugin's name, in the message of a failed run */
	kc = load_yaml(HEAD CLUSTER("") USER("    exec: {apiVersion: v1, command: \"no\\r\\nplugin\"}\n"),
		       err, sizeof(err), &r);
	ck_assert_ptr_nonnull(kc);
	ck_assert_int_lt(tl_kube_auth_credentials(auth_of(kc), false, 1, &cr, err, sizeof(err)), 0);
	assert_one_clean_line("exec command", err);
	ck_assert_ptr_nonnull(strstr(err, "no\\x0d\\x0aplugin"));
	kc_free(kc);
}
END_TEST

/* kind null (or not a string) was a strcmp on NULL: a crash at start and
 * at every refresh. */
START_TEST(test_exec_kind_not_a_string)
{
	static const char *const args[] = { "nullkind", "numkind" };
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	char err[512], yaml[1024];
	int r;

	write_file("plugin.sh", plugin, 0755);
	for (size_t i = 0; i < 2; i++) {
		snprintf(yaml, sizeof(yaml), HEAD CLUSTER("") USER("    exec:\n      apiVersion: v1\n"
			 "      command: ./plugin.sh\n      args: [%s]\n"), args[i]);
		kc = load_yaml(yaml, err, sizeof(err), &r);
		ck_assert_ptr_nonnull(kc);
		ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1, &cr, err, sizeof(err)), -EINVAL);
		ck_assert_msg(strstr(err, "not an ExecCredential"), "%s", err);
		kc_free(kc);
	}
}
END_TEST

/* A token is a header value: CR LF in it would start a header of the
 * plugin's (or the file's) choosing. */
START_TEST(test_token_header_injection)
{
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	char err[512];
	int r;

	write_file("plugin.sh", plugin, 0755);
	kc = load_yaml(HEAD CLUSTER("") USER("    exec:\n      apiVersion: v1\n"
					    "      command: ./plugin.sh\n      args: [inject]\n"),
		       err, sizeof(err), &r);
	ck_assert_ptr_nonnull(kc);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1, &cr, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "control characters"), "%s", err);
	kc_free(kc);

	ck_assert_ptr_null(load_yaml(HEAD CLUSTER("") USER("    token: \"a\\r\\nX-Injected: 1\"\n"),
				     err, sizeof(err), &r));
	ck_assert_msg(strstr(err, "key users[0].user.token"), "%s", err);
	write_file("token", "a\rX-Injected: 1\n", 0600);
	kc = load_yaml(HEAD CLUSTER("") USER("    tokenFile: token\n"), err, sizeof(err), &r);
	ck_assert_ptr_nonnull(kc);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1, &cr, err, sizeof(err)), -EBADMSG);
	kc_free(kc);
}
END_TEST

/* client-go: the kubeconfig's env entries win over the inherited ones. */
START_TEST(test_exec_env_overrides_inherited)
{
	const struct tl_kube_creds *cr;
	struct tl_kubeconfig *kc;
	char err[512];
	int r;

	write_file("plugin.sh", plugin, 0755);
	ck_assert_int_eq(setenv("PLUGIN_TOKEN", "from-agent", 1), 0);
	kc = load_yaml(HEAD CLUSTER("") EXEC_USER("firstenv"), err, sizeof(err), &r);
	ck_assert_ptr_nonnull(kc);
	ck_assert_int_eq(tl_kube_auth_credentials(auth_of(kc), false, 1000, &cr, err, sizeof(err)), 0);
	ck_assert_str_eq(cr->token, "t1");
	kc_free(kc);
	ck_assert_int_eq(unsetenv("PLUGIN_TOKEN"), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kubeconfig");
	TCase *tc = tcase_create("core");
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_good, 0, (int)(sizeof(good) / sizeof(good[0])));
	tcase_add_loop_test(tc, test_bad, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, test_context_namespace);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_token_file_reread);
	tcase_add_test(tc, test_exec_rerun);
	tcase_add_test(tc, test_exec_failures);
	tcase_add_test(tc, test_exec_async_does_not_block);
	tcase_add_test(tc, test_exec_async_hang_killed);
	tcase_add_test(tc, test_exec_async_expired_no_storm);
	tcase_add_test(tc, test_exec_async_401_reruns_once);
	tcase_add_test(tc, test_in_cluster);
	tcase_add_test(tc, test_base64);
	tcase_add_test(tc, test_control_chars_not_echoed);
	tcase_add_test(tc, test_exec_kind_not_a_string);
	tcase_add_test(tc, test_token_header_injection);
	tcase_add_test(tc, test_exec_env_overrides_inherited);
	suite_add_tcase(s, tc);
	failed = tl_check_run(s);
	return failed ? 1 : 0;
}
