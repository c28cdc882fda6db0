// SPDX-License-Identifier: Apache-2.0
/* Where timeline documents come from: a state dir (--from DIR), one agent
 * (--from http://HOST:PORT), or by default every agent through the API
 * server's pod proxy, found with the kubeconfig (docs/cli.md). Blocking
 * HTTP on libcurl's easy API, each request bounded by --request-timeout:
 * the CLI has nothing else to do meanwhile. Errors say who failed (the
 * API server, the agent on a node, a state dir) and what to run next;
 * the URL and the answer are for -v. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "fileio.h"
#include "kube-creds.h"
#include "kubeconfig.h"
#include "term-escape.h"
#include "termline-config.h"

/* Limits on what a peer (an agent, the API server, a state dir) may hand us. */
#define DOC_MAX (64u << 20)  /* one timeline document */
#define LIST_MAX (16u << 20) /* a list answer */
#define DOCS_MAX 5000	     /* documents read per command */
#define KUBECONFIG_FILES_MAX 64
#define AGENT_NAMESPACE "termline"
#define AGENT_LABEL "app.kubernetes.io/component=agent"
#define AGENT_SELECTOR "app.kubernetes.io/component%%3Dagent" /* pasted into a format */
#define AGENT_PORT 9440
#define AGENTS_CMD "kubectl -n " AGENT_NAMESPACE " get pods -o wide -l " AGENT_LABEL

enum kind { SRC_DIR, SRC_URL, SRC_KUBE };

struct source {
	enum kind kind;
	const struct cli *cli;
	char *dir;		  /* SRC_DIR */
	char *url;		  /* SRC_URL, no trailing slash */
	struct tl_kubeconfig *kc; /* SRC_KUBE */
	struct tl_kube_auth *auth; /* its credentials */
	CURL *easy;
};

/* Who a request goes to, for the messages. */
enum whom_kind { W_API, W_PROXY, W_AGENT };
struct whom {
	enum whom_kind kind;
	const char *agent, *node; /* W_PROXY */
};

static __attribute__((format(printf, 3, 4))) void set(char *buf, size_t len, const char *fmt, ...)
{
	char raw[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* every part may quote a name, a URL or an answer */
	tl_term_escape(buf, len, raw, strlen(raw));
}

void report(const struct cli *cli, const struct src_err *e)
{
	cli_err(cli, "%s", e->msg[0] ? e->msg : "failed");
	if (e->hint[0])
		fprintf(stderr, "  next: %s\n", e->hint);
	if (e->detail[0] && cli->verbose > 0)
		fprintf(stderr, "  %s\n", e->detail);
	else if (e->detail[0])
		fprintf(stderr, "  (-v 1 shows the request and the answer)\n");
}

void source_free(struct source *s)
{
	if (!s)
		return;
	if (s->easy)
		curl_easy_cleanup(s->easy);
	tl_kube_auth_free(s->auth);
	tl_kubeconfig_free(s->kc);
	free(s->dir);
	free(s->url);
	free(s);
}

static int open_kube(struct source *s, const struct cli *cli, struct src_err *e)
{
	const struct tl_kubeconfig_select sel = {cli->context, cli->cluster, cli->user};
	const char *paths[KUBECONFIG_FILES_MAX];
	const char *env = getenv("KUBECONFIG");
	char def[4096], *list = NULL, err[1024] = "";
	size_t n = 0;
	int r;

	if (cli->kubeconfig) {
		paths[n++] = cli->kubeconfig;
	} else if (env && *env) {
		/* kubectl: $KUBECONFIG lists files, merged in order */
		list = strdup(env);
		if (!list)
			return -ENOMEM;
		for (char *save = NULL, *p = strtok_r(list, ":", &save);
		     p && n < KUBECONFIG_FILES_MAX; p = strtok_r(NULL, ":", &save))
			if (*p)
				paths[n++] = p;
	}
	if (!n) {
		const char *home = getenv("HOME");

		snprintf(def, sizeof(def), "%s/.kube/config", home ? home : "");
		paths[n++] = def;
	}
	r = tl_kubeconfig_load_merged(paths, n, &sel, &s->kc, err, sizeof(err));
	free(list);
	if (r < 0) {
		set(e->msg, sizeof(e->msg), "%s", err);
		if (cli->context && strstr(err, "contexts"))
			set(e->hint, sizeof(e->hint), "kubectl config get-contexts");
		else if (r == -ENOENT && !strstr(err, "key "))
			set(e->hint, sizeof(e->hint),
			    "--kubeconfig FILE, or --from DIR|URL to read an agent or a state dir");
		return r;
	}
	return 0;
}

int source_open(const struct cli *cli, struct source **ret, struct src_err *e)
{
	struct source *s = calloc(1, sizeof(*s));
	struct stat st;
	int r;

	memset(e, 0, sizeof(*e));
	if (!s)
		return -ENOMEM;
	s->cli = cli;
	if (cli->from &&
	    (strncmp(cli->from, "http://", 7) == 0 || strncmp(cli->from, "https://", 8) == 0)) {
		size_t n;

		s->kind = SRC_URL;
		s->url = strdup(cli->from);
		if (!s->url) {
			source_free(s);
			return -ENOMEM;
		}
		n = strlen(s->url);
		while (n > 8 && s->url[n - 1] == '/')
			s->url[--n] = 0;
	} else if (cli->from) {
		s->kind = SRC_DIR;
		if (stat(cli->from, &st) < 0 || !S_ISDIR(st.st_mode)) {
			set(e->msg, sizeof(e->msg), "--from %s: not a directory or http:// URL",
			    cli->from);
			set(e->hint, sizeof(e->hint),
			    "a termlined state dir holds timelines/NS/POD_UID.json");
			source_free(s);
			return -ENOENT;
		}
		s->dir = strdup(cli->from);
		if (!s->dir) {
			source_free(s);
			return -ENOMEM;
		}
		*ret = s;
		return 0;
	} else {
		s->kind = SRC_KUBE;
		r = open_kube(s, cli, e);
		if (r == 0) {
			r = tl_kube_auth_new(s->kc, &s->auth);
			if (r < 0)
				set(e->msg, sizeof(e->msg), "kubeconfig: credentials: %s", strerror(-r));
		}
		if (r < 0) {
			source_free(s);
			return r;
		}
	}
	s->easy = curl_easy_init();
	if (!s->easy) {
		source_free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

const char *source_namespace(const struct source *s, const struct cli *cli)
{
	if (cli->ns)
		return cli->ns;
	if (s && s->kind == SRC_KUBE && s->kc && s->kc->ns)
		return s->kc->ns;
	return "default";
}

/* ---- HTTP ---- */

struct buf {
	char *p;
	size_t n, max;
	bool over;
};

static size_t write_cb(char *data, size_t sz, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = sz * nmemb;
	char *p;

	if (b->n + n > b->max) {
		b->over = true;
		return 0;
	}
	p = realloc(b->p, b->n + n + 1);
	if (!p)
		return 0;
	memcpy(p + b->n, data, n);
	b->p = p;
	b->n += n;
	b->p[b->n] = 0;
	return n;
}

#define SETOPT(e, o, v)                                                                            \
	do {                                                                                       \
		if (curl_easy_setopt(e, o, v) != CURLE_OK) {                                       \
			r = -EINVAL;                                                               \
			goto out;                                                                  \
		}                                                                                  \
	} while (0)

static void who(const struct source *s, const struct whom *w, char *buf, size_t len)
{
	if (w->kind == W_API)
		snprintf(buf, len, "the API server (%s)", s->kc->server);
	else if (w->kind == W_PROXY)
		snprintf(buf, len, "the termline agent %s/%s%s%s", AGENT_NAMESPACE, w->agent,
			 w->node ? " on node " : "", w->node ? w->node : "");
	else
		snprintf(buf, len, "the termline agent at %s", s->url);
}

static void next_step(const struct source *s, const struct whom *w, long code, struct src_err *e)
{
	const struct cli *cli = s->cli;
	char ctx[300] = "";

	if (cli->context)
		snprintf(ctx, sizeof(ctx), " --context %s", cli->context);
	if (code == 401)
		set(e->hint, sizeof(e->hint),
		    "kubectl%s auth whoami (are the credentials current?)", ctx);
	else if (code == 403)
		set(e->hint, sizeof(e->hint),
		    "kubectl%s auth can-i get pods/proxy -n " AGENT_NAMESPACE
		    " (manifests/user-rbac.yaml grants what the CLI needs)",
		    ctx);
	else if (w->kind == W_API)
		set(e->hint, sizeof(e->hint), "kubectl%s cluster-info (is this the right context?)",
		    ctx);
	else if (w->kind == W_PROXY)
		set(e->hint, sizeof(e->hint),
		    "kubectl%s -n " AGENT_NAMESPACE " logs %s; " AGENTS_CMD, ctx, w->agent);
	else
		set(e->hint, sizeof(e->hint), "curl %s/healthz (is termlined listening there?)",
		    s->url);
}

/* GET base+path; *ret is the parsed body of a 200. -ENOENT on the agent's
 * 404 (nothing of that name); else -errno with e. */
static int http_get_json(struct source *s, const struct whom *w, const char *path, size_t max,
			 struct json_object **ret, struct src_err *e)
{
	const struct cli *cli = s->cli;
	struct curl_slist *hdrs = NULL;
	struct buf b = {.max = max};
	char *url = NULL, *auth = NULL, *connect_to = NULL, ebuf[CURL_ERROR_SIZE] = "";
	char whom[512];
	struct curl_slist *ct = NULL;
	const char *base = s->kind == SRC_URL ? s->url : s->kc->server;
	struct json_tokener *tok = NULL;
	struct timespec t0, t1;
	long code = 0;
	CURLcode cr;
	int r;

	who(s, w, whom, sizeof(whom));
	curl_easy_reset(s->easy);
	if (asprintf(&url, "%s%s", base, path) < 0)
		return -ENOMEM;
	SETOPT(s->easy, CURLOPT_URL, url);
	SETOPT(s->easy, CURLOPT_NOSIGNAL, 1L);
	SETOPT(s->easy, CURLOPT_ERRORBUFFER, ebuf);
	SETOPT(s->easy, CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(s->easy, CURLOPT_WRITEDATA, &b);
	SETOPT(s->easy, CURLOPT_USERAGENT, "kubectl-termline/" TERMLINE_VERSION);
	SETOPT(s->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(s->easy, CURLOPT_FOLLOWLOCATION, 0L);
	/* --request-timeout bounds the whole request, a silent agent included */
	SETOPT(s->easy, CURLOPT_TIMEOUT_MS, cli->timeout_ms);
	SETOPT(s->easy, CURLOPT_CONNECTTIMEOUT_MS,
	       cli->timeout_ms && cli->timeout_ms < 10000 ? cli->timeout_ms : 10000L);
	if (s->kind == SRC_KUBE) {
		const struct tl_kubeconfig *kc = s->kc;
		const struct tl_kube_creds *cr_ = NULL;
		char cerr[512] = "";
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = tl_kube_auth_credentials(
		    s->auth, false, (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000, &cr_,
		    cerr, sizeof(cerr));
		if (r < 0) {
			set(e->msg, sizeof(e->msg), "%s", cerr);
			goto out;
		}
		if (kc->tls_server_name) {
			/* the certificate names tls-server-name, not the address
			 * in server: ask for the name, connect to the address */
			CURLU *u = curl_url();
			char *host = NULL, *port = NULL, *named = NULL;

			r = -EINVAL;
			if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
			    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
			    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ==
				CURLUE_OK &&
			    curl_url_set(u, CURLUPART_HOST, kc->tls_server_name, 0) == CURLUE_OK &&
			    curl_url_get(u, CURLUPART_URL, &named, 0) == CURLUE_OK &&
			    asprintf(&connect_to, "%s:%s:%s:%s", kc->tls_server_name, port, host,
				     port) >= 0)
				r = 0;
			if (r == 0 && curl_easy_setopt(s->easy, CURLOPT_URL, named) != CURLE_OK)
				r = -EINVAL;
			curl_free(host);
			curl_free(port);
			curl_free(named);
			curl_url_cleanup(u);
			if (r < 0)
				goto out;
			ct = curl_slist_append(NULL, connect_to);
			if (!ct) {
				r = -ENOMEM;
				goto out;
			}
			SETOPT(s->easy, CURLOPT_CONNECT_TO, ct);
		}
		if (kc->insecure) {
			SETOPT(s->easy, CURLOPT_SSL_VERIFYPEER, 0L);
			SETOPT(s->easy, CURLOPT_SSL_VERIFYHOST, 0L);
		} else if (kc->ca_pem) {
			struct curl_blob cb = {
			    .data = kc->ca_pem, .len = kc->ca_pem_len, .flags = CURL_BLOB_COPY};

			SETOPT(s->easy, CURLOPT_CAINFO_BLOB, &cb);
		} else if (kc->ca_file) {
			SETOPT(s->easy, CURLOPT_CAINFO, kc->ca_file);
		}
		if (cr_ && cr_->cert_pem && cr_->key_pem) {
			struct curl_blob c = {.data = cr_->cert_pem,
					      .len = cr_->cert_pem_len,
					      .flags = CURL_BLOB_COPY};
			struct curl_blob k = {
			    .data = cr_->key_pem, .len = cr_->key_pem_len, .flags = CURL_BLOB_COPY};

			SETOPT(s->easy, CURLOPT_SSLCERT_BLOB, &c);
			SETOPT(s->easy, CURLOPT_SSLKEY_BLOB, &k);
		} else if (kc->cert_file && kc->key_file) {
			SETOPT(s->easy, CURLOPT_SSLCERT, kc->cert_file);
			SETOPT(s->easy, CURLOPT_SSLKEY, kc->key_file);
		}
		if (cr_ && cr_->token) {
			if (asprintf(&auth, "Authorization: Bearer %s", cr_->token) < 0) {
				auth = NULL;
				r = -ENOMEM;
				goto out;
			}
			hdrs = curl_slist_append(hdrs, auth);
			if (!hdrs) {
				r = -ENOMEM;
				goto out;
			}
		}
	}
	{
		struct curl_slist *h = curl_slist_append(hdrs, "Accept: application/json");

		if (!h) {
			r = -ENOMEM;
			goto out;
		}
		hdrs = h;
	}
	SETOPT(s->easy, CURLOPT_HTTPHEADER, hdrs);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr = curl_easy_perform(s->easy);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK)
		code = 0;
	if (cli->verbose >= 6) /* kubectl's -v=6: every request with its status */
		fprintf(stderr, "GET %s %ld in %lld ms\n", tx(url), code,
			(long long)((t1.tv_sec - t0.tv_sec) * 1000 +
				    (t1.tv_nsec - t0.tv_nsec) / 1000000));
	if (cr != CURLE_OK) {
		if (cr == CURLE_OPERATION_TIMEDOUT)
			set(e->msg, sizeof(e->msg),
			    "%s did not answer within %.3g s (--request-timeout)", whom,
			    (double)cli->timeout_ms / 1000);
		else if (b.over)
			set(e->msg, sizeof(e->msg), "%s answered more than %zu MiB: not read", whom,
			    max >> 20);
		else
			set(e->msg, sizeof(e->msg), "cannot reach %s: %s", whom,
			    ebuf[0] ? ebuf : curl_easy_strerror(cr));
		set(e->detail, sizeof(e->detail), "GET %s: %s", url,
		    ebuf[0] ? ebuf : curl_easy_strerror(cr));
		next_step(s, w, 0, e);
		r = b.over ? -EFBIG : cr == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EHOSTUNREACH;
		goto out;
	}
	if (code == 404) {
		/* the API server's own 404 is a Status; through the pod proxy
		 * it means the agent's Pod is gone, not that it lacks a timeline */
		struct json_object *st = w->kind == W_PROXY && b.p ? json_tokener_parse(b.p) : NULL;
		bool status = json_str(st, "kind") && strcmp(json_str(st, "kind"), "Status") == 0;

		json_object_put(st);
		if (!status) {
			set(e->msg, sizeof(e->msg), "%s: not found", path);
			r = -ENOENT;
			goto out;
		}
	}
	if (code != 200) {
		char reason[200] = "";
		struct json_object *st = b.p ? json_tokener_parse(b.p) : NULL;

		/* a Status' message, else the agent's {"error": ...} */
		if (json_str(st, "message"))
			snprintf(reason, sizeof(reason), ": %.180s", json_str(st, "message"));
		else if (json_str(st, "error"))
			snprintf(reason, sizeof(reason), ": %.180s", json_str(st, "error"));
		json_object_put(st);
		if (w->kind == W_PROXY && (code == 401 || code == 403))
			set(e->msg, sizeof(e->msg),
			    "the API server refused to proxy to %s (HTTP %ld%s)", whom, code,
			    reason);
		else if (w->kind == W_PROXY)
			set(e->msg, sizeof(e->msg),
			    "%s did not answer through the API server (HTTP %ld%s)", whom, code,
			    reason);
		else if (w->kind == W_API && (code == 401 || code == 403))
			set(e->msg, sizeof(e->msg), "%s refused the request (HTTP %ld%s)", whom,
			    code, reason);
		else
			set(e->msg, sizeof(e->msg), "%s answered HTTP %ld%s", whom, code, reason);
		set(e->detail, sizeof(e->detail), "GET %s -> HTTP %ld: %.1200s", url, code,
		    b.p ? b.p : "");
		next_step(s, w, code, e);
		r = code == 401 || code == 403 ? -EACCES : -EPROTO;
		goto out;
	}
	tok = json_tokener_new();
	if (!tok) {
		r = -ENOMEM;
		goto out;
	}
	*ret = json_tokener_parse_ex(tok, b.p ? b.p : "", (int)b.n);
	if (!*ret || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(*ret);
		*ret = NULL;
		set(e->msg, sizeof(e->msg), "%s answered something that is not JSON", whom);
		set(e->detail, sizeof(e->detail), "GET %s -> %.1200s", url, b.p ? b.p : "");
		next_step(s, w, 0, e);
		r = -EBADMSG;
		goto out;
	}
	r = 0;
out:
	if (tok) /* json-c 0.16 does not accept NULL here */
		json_tokener_free(tok);
	curl_slist_free_all(hdrs);
	curl_slist_free_all(ct);
	free(connect_to);
	free(auth);
	free(url);
	free(b.p);
	return r;
}

/* URL-encodes a path segment (namespace and Pod names are DNS labels, but
 * a user may type anything). */
static int seg(CURL *e, const char *in, char *out, size_t len)
{
	char *x = curl_easy_escape(e, in, 0);

	if (!x)
		return -ENOMEM;
	snprintf(out, len, "%s", x);
	curl_free(x);
	return 0;
}

/* ---- filters ---- */

static int64_t doc_start(struct json_object *doc)
{
	struct json_object *evs = json_path(doc, "events");
	const char *t = NULL;
	int64_t ns = 0;

	if (evs && json_object_is_type(evs, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(evs); i++) {
			struct json_object *e = json_object_array_get_idx(evs, i);

			if (json_str(e, "type") &&
			    strcmp(json_str(e, "type"), "pod.deletion_requested") == 0) {
				t = json_str(e, "time");
				break;
			}
		}
		if (!t && json_object_array_length(evs))
			t = json_str(json_object_array_get_idx(evs, 0), "time");
	}
	if (t && tl_time_parse(t, &ns) < 0)
		ns = 0;
	return ns;
}

static bool keep(struct json_object *doc, const char *ns, const char *okind, const char *oname)
{
	const char *dns = json_str(json_path(doc, "pod"), "namespace");
	struct json_object *owner = json_path(doc, "pod.owner");

	if (!json_path(doc, "events"))
		return false;
	if (ns && (!dns || strcmp(dns, ns) != 0))
		return false;
	if (okind && (!json_str(owner, "kind") || strcmp(json_str(owner, "kind"), okind) != 0))
		return false;
	if (oname && (!json_str(owner, "name") || strcmp(json_str(owner, "name"), oname) != 0))
		return false;
	return true;
}

static int by_start_desc(const void *a, const void *b)
{
	struct json_object *da = *(struct json_object *const *)a,
			   *db = *(struct json_object *const *)b;
	int64_t x = doc_start(da), y = doc_start(db);
	const char *na = json_str(json_path(da, "pod"), "name"),
		   *nb = json_str(json_path(db, "pod"), "name");

	if (x != y)
		return x < y ? 1 : -1;
	/* the same moment (a scaled-down ReplicaSet): by name, for a stable table */
	return strcmp(na ? na : "", nb ? nb : "");
}

static int add_doc(struct json_object *arr, struct json_object *doc)
{
	if (json_object_array_length(arr) >= DOCS_MAX) {
		json_object_put(doc);
		return 0;
	}
	if (json_object_array_add(arr, doc) < 0) {
		json_object_put(doc);
		return -ENOMEM;
	}
	return 0;
}

static int read_doc(const char *path, struct json_object **ret)
{
	char *text = NULL;
	size_t len = 0;
	int r = tl_read_file(path, DOC_MAX, &text, &len);

	if (r < 0)
		return r;
	*ret = json_tokener_parse(text);
	free(text);
	return *ret ? 0 : -EBADMSG;
}

/* STATE/timelines/NS/NAME_UID.json (and _unknown/UID.json) */
static int dir_list(struct source *s, struct json_object *out, struct src_err *e)
{
	char top[4096];
	DIR *d, *sub;
	struct dirent *de, *fe;
	int r = 0;

	snprintf(top, sizeof(top), "%s/timelines", s->dir);
	d = opendir(top);
	if (!d) {
		if (errno == ENOENT)
			return 0; /* a state dir with nothing closed yet */
		r = -errno;	  /* before the message: formatting may change errno */
		set(e->msg, sizeof(e->msg), "%s: %s", top, strerror(-r));
		return r;
	}
	while (r == 0 && (de = readdir(d))) {
		char nsdir[4096 + 256];

		if (de->d_name[0] == '.')
			continue;
		snprintf(nsdir, sizeof(nsdir), "%s/%s", top, de->d_name);
		sub = opendir(nsdir);
		if (!sub)
			continue;
		while (r == 0 && (fe = readdir(sub))) {
			char path[sizeof(nsdir) + 256];
			size_t n = strlen(fe->d_name);
			struct json_object *doc;

			if (fe->d_name[0] == '.' || n < 6 ||
			    strcmp(fe->d_name + n - 5, ".json") != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", nsdir, fe->d_name);
			if (read_doc(path, &doc) < 0)
				continue; /* a file being replaced, or not ours */
			r = add_doc(out, doc);
		}
		closedir(sub);
	}
	closedir(d);
	return r;
}

/* One agent's /v1/timelines entries (namespace, name, uid). The agent may
 * not filter (the filters are an addition to its API, docs/http-api.md):
 * pass them, and filter here. */
static int agent_entries(struct source *s, const struct whom *w, const char *prefix, const char *ns,
			 const char *okind, const char *oname, struct json_object **ret,
			 struct src_err *e)
{
	struct json_object *lst = NULL, *arr;
	char path[2048], e1[256], e2[256], e3[512];
	int r;

	if ((ns && seg(s->easy, ns, e1, sizeof(e1)) < 0) ||
	    (okind && seg(s->easy, okind, e2, sizeof(e2)) < 0) ||
	    (oname && seg(s->easy, oname, e3, sizeof(e3)) < 0))
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/v1/timelines?detail=false%s%s%s%s%s%s", prefix,
		 ns ? "&namespace=" : "", ns ? e1 : "", okind ? "&ownerKind=" : "", okind ? e2 : "",
		 oname ? "&ownerName=" : "", oname ? e3 : "");
	r = http_get_json(s, w, path, LIST_MAX, &lst, e);
	if (r == -ENOENT) {
		set(e->msg, sizeof(e->msg), "%s/v1/timelines: not found: not a termline agent?",
		    prefix);
		return -EPROTO;
	}
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(lst, "timelines", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		set(e->msg, sizeof(e->msg), "GET %s: no \"timelines\" array", path);
		json_object_put(lst);
		return -EBADMSG;
	}
	*ret = json_object_get(arr);
	json_object_put(lst);
	return 0;
}

/* The documents an agent lists. Only the ones it lists are fetched. */
static int agent_list(struct source *s, const struct whom *w, const char *prefix, const char *ns,
		      const char *okind, const char *oname, struct json_object *out,
		      struct src_err *e)
{
	struct json_object *arr = NULL;
	int r = agent_entries(s, w, prefix, ns, okind, oname, &arr, e);

	for (size_t i = 0; r == 0 && i < json_object_array_length(arr); i++) {
		struct json_object *t = json_object_array_get_idx(arr, i), *doc = NULL;
		const char *tns = json_str(t, "namespace"), *name = json_str(t, "name"),
			   *uid = json_str(t, "uid");
		char a[256], b[512], c[256], path[2048];

		if (!tns || !name || !uid || (ns && strcmp(tns, ns) != 0))
			continue;
		if (seg(s->easy, tns, a, sizeof(a)) < 0 || seg(s->easy, name, b, sizeof(b)) < 0 ||
		    seg(s->easy, uid, c, sizeof(c)) < 0) {
			r = -ENOMEM;
			break;
		}
		snprintf(path, sizeof(path), "%s/v1/timelines/%s/%s?uid=%s", prefix, a, b, c);
		r = http_get_json(s, w, path, DOC_MAX, &doc, e);
		if (r == -ENOENT) { /* gone meanwhile */
			r = 0;
			continue;
		}
		if (r == 0)
			r = add_doc(out, doc);
	}
	json_object_put(arr);
	return r;
}

/* The agent Pods (namespace termline, the DaemonSet's labels), optionally
 * only the one on node: an array of {"name", "node"}. */
static int agents(struct source *s, const char *node, struct json_object **ret, struct src_err *e)
{
	static const struct whom api = {W_API, NULL, NULL};
	struct json_object *lst, *items, *out;
	char path[1024], enode[300];
	int r;

	if (node && seg(s->easy, node, enode, sizeof(enode)) < 0)
		return -ENOMEM;
	snprintf(path, sizeof(path),
		 "/api/v1/namespaces/" AGENT_NAMESPACE "/pods?labelSelector=" AGENT_SELECTOR "%s%s",
		 node ? "&fieldSelector=spec.nodeName%3D" : "", node ? enode : "");
	r = http_get_json(s, &api, path, LIST_MAX, &lst, e);
	if (r == -ENOENT) /* no namespace termline: no agents */
		lst = json_object_new_object(), r = lst ? 0 : -ENOMEM;
	if (r < 0)
		return r;
	out = json_object_new_array();
	if (!out) {
		json_object_put(lst);
		return -ENOMEM;
	}
	if (json_object_object_get_ex(lst, "items", &items) &&
	    json_object_is_type(items, json_type_array))
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			struct json_object *p = json_object_array_get_idx(items, i), *a;
			const char *n = json_str(json_path(p, "metadata"), "name");
			const char *pn = json_str(json_path(p, "spec"), "nodeName");

			if (!n || (node && (!pn || strcmp(pn, node) != 0)))
				continue;
			a = json_object_new_object();
			if (!a || json_object_array_add(out, a) < 0 ||
			    json_object_object_add(a, "name", json_object_new_string(n)) < 0 ||
			    (pn &&
			     json_object_object_add(a, "node", json_object_new_string(pn)) < 0)) {
				json_object_put(a);
				json_object_put(out);
				json_object_put(lst);
				return -ENOMEM;
			}
		}
	json_object_put(lst);
	*ret = out;
	return 0;
}

static int proxy_of(struct source *s, struct json_object *agent, struct whom *w, char *prefix,
		    size_t len)
{
	char a[300];

	w->kind = W_PROXY;
	w->agent = json_str(agent, "name");
	w->node = json_str(agent, "node");
	if (!w->agent || seg(s->easy, w->agent, a, sizeof(a)) < 0)
		return -ENOMEM;
	snprintf(prefix, len, "/api/v1/namespaces/" AGENT_NAMESPACE "/pods/%s:%d/proxy", a,
		 AGENT_PORT);
	return 0;
}

static int collect(struct source *s, const char *ns, const char *okind, const char *oname,
		   struct json_object *all, struct src_err *e)
{
	static const struct whom direct = {W_AGENT, NULL, NULL};
	struct json_object *list = NULL;
	int r;

	if (s->kind == SRC_DIR)
		return dir_list(s, all, e);
	if (s->kind == SRC_URL)
		return agent_list(s, &direct, "", ns, okind, oname, all, e);
	r = agents(s, NULL, &list, e);
	for (size_t i = 0; r == 0 && i < json_object_array_length(list); i++) {
		char prefix[512];
		struct whom w;

		r = proxy_of(s, json_object_array_get_idx(list, i), &w, prefix, sizeof(prefix));
		if (r == 0)
			r = agent_list(s, &w, prefix, ns, okind, oname, all, e);
	}
	json_object_put(list);
	return r;
}

int source_list(struct source *s, const char *ns, const char *okind, const char *oname,
		struct json_object **ret, struct src_err *e)
{
	struct json_object *all = json_object_new_array(), *out = NULL;
	int r;

	memset(e, 0, sizeof(*e));
	if (!all)
		return -ENOMEM;
	r = collect(s, ns, okind, oname, all, e);
	if (r < 0)
		goto fail;
	out = json_object_new_array();
	if (!out) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		struct json_object *d = json_object_array_get_idx(all, i);

		if (keep(d, ns, okind, oname) &&
		    json_object_array_add(out, json_object_get(d)) < 0) {
			json_object_put(d);
			r = -ENOMEM;
			goto fail;
		}
	}
	json_object_array_sort(out, by_start_desc);
	json_object_put(all);
	*ret = out;
	return 0;
fail:
	json_object_put(all);
	json_object_put(out);
	return r;
}

/* ---- one Pod, and why it was not found ---- */

/* The namespaces other than ns in which the source has a timeline of a Pod
 * named name, and every namespace with a timeline, as ", "-joined text. */
struct others {
	char with_name[256];
	char any[256];
	size_t n_with_name;
};

static void add_ns(char *buf, size_t len, const char *ns)
{
	size_t n = strlen(buf);
	char pat[300];

	snprintf(pat, sizeof(pat), "%s,", ns);
	if (strstr(buf, pat) == buf)
		return;
	snprintf(pat, sizeof(pat), ", %s,", ns);
	if (strstr(buf, pat))
		return;
	snprintf(buf + n, len - n, "%s%s,", n ? " " : "", ns);
}

static void others_of(struct source *s, const char *ns, const char *name, struct others *o)
{
	struct json_object *entries = json_object_new_array();
	struct src_err ignored;

	memset(o, 0, sizeof(*o));
	if (!entries)
		return;
	if (s->kind == SRC_DIR) {
		struct json_object *docs = json_object_new_array();

		if (docs && dir_list(s, docs, &ignored) == 0)
			for (size_t i = 0; i < json_object_array_length(docs); i++) {
				struct json_object *p = json_path(
						       json_object_array_get_idx(docs, i), "pod"),
						   *x = json_object_new_object();

				if (!x || json_object_array_add(entries, x) < 0) {
					json_object_put(x);
					break;
				}
				json_object_object_add(x, "namespace",
						       json_object_get(json_path(p, "namespace")));
				json_object_object_add(x, "name",
						       json_object_get(json_path(p, "name")));
			}
		json_object_put(docs);
	} else if (s->kind == SRC_URL) {
		static const struct whom direct = {W_AGENT, NULL, NULL};
		struct json_object *arr = NULL;

		if (agent_entries(s, &direct, "", NULL, NULL, NULL, &arr, &ignored) == 0) {
			json_object_put(entries);
			entries = arr;
		}
	} else {
		struct json_object *list = NULL;

		if (agents(s, NULL, &list, &ignored) == 0)
			for (size_t i = 0; i < json_object_array_length(list); i++) {
				struct json_object *arr = NULL;
				char prefix[512];
				struct whom w;

				if (proxy_of(s, json_object_array_get_idx(list, i), &w, prefix,
					     sizeof(prefix)) < 0 ||
				    agent_entries(s, &w, prefix, NULL, NULL, NULL, &arr, &ignored) <
					0)
					continue;
				for (size_t k = 0; k < json_object_array_length(arr); k++)
					json_object_array_add(
					    entries,
					    json_object_get(json_object_array_get_idx(arr, k)));
				json_object_put(arr);
			}
		json_object_put(list);
	}
	for (size_t i = 0; i < json_object_array_length(entries); i++) {
		struct json_object *x = json_object_array_get_idx(entries, i);
		const char *xns = json_str(x, "namespace"), *xn = json_str(x, "name");

		if (!xns)
			continue;
		add_ns(o->any, sizeof(o->any), xns);
		if (xn && strcmp(xn, name) == 0 && strcmp(xns, ns) != 0) {
			add_ns(o->with_name, sizeof(o->with_name), xns);
			o->n_with_name++;
		}
	}
	/* "a, b," -> "a, b" */
	for (char *b = o->with_name; b; b = b == o->with_name ? o->any : NULL)
		if (*b && b[strlen(b) - 1] == ',')
			b[strlen(b) - 1] = 0;
	json_object_put(entries);
}

static bool ns_in(const char *list, const char *ns)
{
	size_t n = strlen(ns);

	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");

		if (k == n && strncmp(p, ns, n) == 0)
			return true;
		p += k;
		while (*p == ',' || *p == ' ')
			p++;
	}
	return false;
}

/* Only one namespace in an others list: it, else NULL. */
static const char *single(const char *list, char *buf, size_t len)
{
	if (!*list || strchr(list, ','))
		return NULL;
	snprintf(buf, len, "%s", list);
	return buf;
}

static void not_found(struct source *s, const char *ns, const char *name, struct json_object *pod,
		      size_t n_agents, struct src_err *e)
{
	const char *verb = s->cli->verb ? s->cli->verb->name : "show";
	struct others o;
	char one[256];

	if (pod) {
		const char *node = json_str(json_path(pod, "spec"), "nodeName");
		bool deleting = json_path(pod, "metadata.deletionTimestamp") != NULL;

		set(e->msg, sizeof(e->msg),
		    "no timeline of %s/%s yet: the Pod %s on node %s, and %s has recorded nothing "
		    "of it",
		    ns, name, deleting ? "is terminating" : "is running (not deleted)",
		    node ? node : "(none yet)",
		    n_agents ? "the termline agent there" : "no termline agent runs there");
		if (!n_agents)
			set(e->hint, sizeof(e->hint),
			    "%s (the DaemonSet: kubectl apply -k manifests/)", AGENTS_CMD);
		else
			set(e->hint, sizeof(e->hint),
			    "kubectl termline %s %s/%s once it terminated; %s", verb, ns, name,
			    AGENTS_CMD);
		return;
	}
	others_of(s, ns, name, &o);
	if (o.n_with_name) {
		const char *n1 = single(o.with_name, one, sizeof(one));

		set(e->msg, sizeof(e->msg),
		    "no timeline of %s/%s; there is one of %s in namespace%s %s", ns, name, name,
		    n1 ? "" : "s", o.with_name);
		set(e->hint, sizeof(e->hint), "kubectl termline %s %s/%s", verb, n1 ? n1 : "NS",
		    name);
		return;
	}
	if (s->kind == SRC_KUBE) {
		static const struct whom api = {W_API, NULL, NULL};
		struct json_object *nso = NULL;
		struct src_err ignored;
		char path[600], a[300];

		if (seg(s->easy, ns, a, sizeof(a)) == 0) {
			snprintf(path, sizeof(path), "/api/v1/namespaces/%s", a);
			/* only a clear 404 says the namespace does not exist: a
			 * user without "get namespaces" learns nothing here */
			if (http_get_json(s, &api, path, LIST_MAX, &nso, &ignored) == -ENOENT) {
				set(e->msg, sizeof(e->msg), "namespace %s does not exist", ns);
				set(e->hint, sizeof(e->hint), "kubectl get namespaces%s%s",
				    *o.any ? "; timelines are in " : "", o.any);
				return;
			}
			json_object_put(nso);
		}
		if (!n_agents) {
			set(e->msg, sizeof(e->msg),
			    "no timeline of %s/%s: no termline agent found (no Pod "
			    "labelled " AGENT_LABEL " in namespace " AGENT_NAMESPACE ")",
			    ns, name);
			set(e->hint, sizeof(e->hint),
			    "kubectl apply -k manifests/ (the DaemonSet)");
			return;
		}
		set(e->msg, sizeof(e->msg),
		    "no timeline of %s/%s: no such Pod, and none of the %zu termline agent%s has "
		    "one",
		    ns, name, n_agents, n_agents == 1 ? "" : "s");
	} else {
		const char *where = s->kind == SRC_DIR ? s->dir : s->url;

		if (ns_in(o.any, ns))
			set(e->msg, sizeof(e->msg), "no timeline of %s/%s in %s", ns, name, where);
		else
			set(e->msg, sizeof(e->msg),
			    "no timeline of %s/%s in %s: none in namespace %s at all", ns, name,
			    where, ns);
	}
	if (*o.any)
		set(e->hint, sizeof(e->hint), "kubectl termline list -A%s%s (timelines are in: %s)",
		    s->cli->from ? " --from " : "", s->cli->from ? s->cli->from : "", o.any);
	else
		set(e->hint, sizeof(e->hint), "kubectl termline list -A%s%s",
		    s->cli->from ? " --from " : "", s->cli->from ? s->cli->from : "");
}

int source_get(struct source *s, const char *ns, const char *name, struct json_object **ret,
	       struct src_err *e)
{
	static const struct whom api = {W_API, NULL, NULL}, direct = {W_AGENT, NULL, NULL};
	char a[300], b[600], path[2048];
	int r;

	memset(e, 0, sizeof(*e));
	if (s->kind == SRC_DIR) {
		struct json_object *all;

		/* newest of that name (a name is reused by a StatefulSet); a
		 * timeline recorded without the API (--no-api) has no name:
		 * _unknown/UID finds it */
		bool unknown = strcmp(ns, "_unknown") == 0;

		r = source_list(s, unknown ? NULL : ns, NULL, NULL, &all, e);
		if (r < 0)
			return r;
		for (size_t i = 0; i < json_object_array_length(all); i++) {
			struct json_object *d = json_object_array_get_idx(all, i);
			const char *n = json_str(json_path(d, "pod"), "name");
			const char *uid = json_str(json_path(d, "pod"), "uid");

			if ((!unknown && n && strcmp(n, name) == 0) ||
			    (unknown && !n && uid && strcmp(uid, name) == 0)) {
				*ret = json_object_get(d);
				json_object_put(all);
				return 0;
			}
		}
		json_object_put(all);
		not_found(s, ns, name, NULL, 0, e);
		return -ENOENT;
	}
	if (seg(s->easy, ns, a, sizeof(a)) < 0 || seg(s->easy, name, b, sizeof(b)) < 0)
		return -ENOMEM;
	if (s->kind == SRC_URL) {
		snprintf(path, sizeof(path), "/v1/timelines/%s/%s", a, b);
		r = http_get_json(s, &direct, path, DOC_MAX, ret, e);
		if (r == -ENOENT)
			not_found(s, ns, name, NULL, 0, e);
		return r;
	}
	/* the Pod's node, then that node's agent; a Pod already deleted is
	 * looked for on every agent */
	{
		struct json_object *pod = NULL, *list = NULL;
		const char *node = NULL;
		struct src_err first;
		bool failed = false;

		memset(&first, 0, sizeof(first));
		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", a, b);
		r = http_get_json(s, &api, path, LIST_MAX, &pod, e);
		if (r < 0 && r != -ENOENT)
			return r;
		if (pod)
			node = json_str(json_path(pod, "spec"), "nodeName");
		r = agents(s, node, &list, e);
		if (r < 0) {
			json_object_put(pod);
			return r;
		}
		r = -ENOENT;
		for (size_t i = 0; i < json_object_array_length(list) && r != 0; i++) {
			char prefix[512];
			struct whom w;

			if (proxy_of(s, json_object_array_get_idx(list, i), &w, prefix,
				     sizeof(prefix)) < 0) {
				r = -ENOMEM;
				break;
			}
			snprintf(path, sizeof(path), "%s/v1/timelines/%s/%s", prefix, a, b);
			r = http_get_json(s, &w, path, DOC_MAX, ret, e);
			if (r < 0 && r != -ENOENT && !failed) {
				/* the timeline may be on this one: said if no
				 * other agent has it */
				first = *e;
				failed = true;
			}
			if (r == -ENOMEM)
				break;
		}
		if (r != 0 && failed) {
			*e = first;
			r = -EHOSTUNREACH;
		} else if (r == -ENOENT) {
			memset(e, 0, sizeof(*e));
			not_found(s, ns, name, pod, json_object_array_length(list), e);
		}
		json_object_put(pod);
		json_object_put(list);
		return r;
	}
}

int source_api_get(struct source *s, const char *path, struct json_object **ret, struct src_err *e)
{
	static const struct whom api = {W_API, NULL, NULL};

	memset(e, 0, sizeof(*e));
	if (s->kind != SRC_KUBE) {
		set(e->msg, sizeof(e->msg),
		    "this needs the API server: use the kubeconfig, not --from");
		return -ENOTSUP;
	}
	return http_get_json(s, &api, path, LIST_MAX, ret, e);
}

int load_doc(const struct cli *cli, const char *arg, struct json_object **ret, bool quiet,
	     struct src_err *e)
{
	struct source *src = NULL;
	struct src_err local;
	char *ns = NULL, *name = NULL;
	int r;

	if (!e)
		e = &local;
	r = source_open(cli, &src, e);
	if (r < 0) {
		if (!e->msg[0])
			set(e->msg, sizeof(e->msg), "%s", strerror(-r));
		if (!quiet)
			report(cli, e);
		return EXIT_USAGE;
	}
	if (split_ns_name(arg, source_namespace(src, cli), &ns, &name) < 0) {
		memset(e, 0, sizeof(*e));
		set(e->msg, sizeof(e->msg), "%s: not NAMESPACE/POD, pod/POD or POD", arg);
		if (!quiet)
			report(cli, e);
		source_free(src);
		return EXIT_USAGE;
	}
	r = source_get(src, ns, name, ret, e);
	source_free(src);
	free(ns);
	free(name);
	if (r < 0 && !e->msg[0])
		set(e->msg, sizeof(e->msg), "%s: %s", arg, strerror(-r));
	if (r < 0 && !quiet)
		report(cli, e);
	if (r == -ENOENT)
		return EXIT_NOT_FOUND;
	return r < 0 ? EXIT_USAGE : EXIT_FOUND;
}
