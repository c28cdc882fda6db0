// SPDX-License-Identifier: Apache-2.0
/* Where timeline documents come from: a state dir (--from DIR), one agent
 * (--from http://HOST:PORT), or by default every agent through the API
 * server's pod proxy, found with the kubeconfig (docs/cli.md). Blocking
 * HTTP on libcurl's easy API: the CLI has nothing else to do meanwhile. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "cli.h"
#include "clock.h"
#include "errmsg.h"
#include "fileio.h"
#include "kubeconfig.h"
#include "termline-config.h"
#include "kube-creds.h"

/* Limits on what a peer (an agent, the API server, a state dir) may hand us. */
#define DOC_MAX (64u << 20)  /* one timeline document */
#define LIST_MAX (16u << 20) /* a list answer */
#define DOCS_MAX 5000	     /* documents read per command */
#define HTTP_TIMEOUT_S 30L
#define AGENT_NAMESPACE "termline"
#define AGENT_SELECTOR "app.kubernetes.io/component%%3Dagent" /* pasted into a format */
#define AGENT_PORT 9440

enum kind { SRC_DIR, SRC_URL, SRC_KUBE };

struct source {
	enum kind kind;
	char *dir;		  /* SRC_DIR */
	char *url;		  /* SRC_URL, no trailing slash */
	struct tl_kubeconfig *kc; /* SRC_KUBE */
	struct tl_kube_auth *auth; /* its credentials */
	CURL *easy;
	char agent_for_node[256]; /* cache: the last node's agent */
	char agent_node[256];
};

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

int source_open(const struct cli *cli, struct source **ret, char *err, size_t errlen)
{
	struct source *s = calloc(1, sizeof(*s));
	struct stat st;
	int r;

	if (!s)
		return -ENOMEM;
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
			tl_err(err, errlen, "--from %s: not a directory or http:// URL", cli->from);
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
		const char *path = cli->kubeconfig ? cli->kubeconfig : getenv("KUBECONFIG");
		char def[4096];

		s->kind = SRC_KUBE;
		if (!path || !*path) {
			const char *home = getenv("HOME");

			snprintf(def, sizeof(def), "%s/.kube/config", home ? home : "");
			path = def;
		}
		/* $KUBECONFIG may list files; the first is the one we read */
		if (strchr(path, ':')) {
			snprintf(def, sizeof(def), "%.*s", (int)(strchr(path, ':') - path), path);
			path = def;
		}
		r = tl_kubeconfig_load(path, &s->kc, err, errlen);
		if (r == 0)
			r = tl_kube_auth_new(s->kc, &s->auth);
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

/* GET base+path; *ret is the parsed body of a 200. -ENOENT on 404, else
 * -errno with err naming the URL. */
static int http_get_json(struct source *s, const char *path, size_t max, struct json_object **ret,
			 char *err, size_t errlen)
{
	struct curl_slist *hdrs = NULL;
	struct buf b = {.max = max};
	char *url = NULL, *auth = NULL, *connect_to = NULL, ebuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *ct = NULL;
	const char *base = s->kind == SRC_URL ? s->url : s->kc->server;
	struct json_tokener *tok = NULL;
	long code = 0;
	CURLcode cr;
	int r;

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
	SETOPT(s->easy, CURLOPT_TIMEOUT, HTTP_TIMEOUT_S);
	SETOPT(s->easy, CURLOPT_CONNECTTIMEOUT, 10L);
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
			tl_err(err, errlen, "%s", cerr);
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
	cr = curl_easy_perform(s->easy);
	if (cr != CURLE_OK) {
		tl_err(err, errlen, "GET %s: %s", url,
		       b.over	 ? "answer larger than the limit"
		       : ebuf[0] ? ebuf
				 : curl_easy_strerror(cr));
		r = b.over ? -EFBIG : -EHOSTUNREACH;
		goto out;
	}
	if (curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK)
		code = 0;
	if (code == 404) {
		tl_err(err, errlen, "GET %s: 404 not found", url);
		r = -ENOENT;
		goto out;
	}
	if (code != 200) {
		tl_err(err, errlen, "GET %s: HTTP %ld%s%.200s", url, code, b.n ? ": " : "",
		       b.n ? b.p : "");
		for (char *p = err; *p; p++)
			if (*p == '\n' || *p == '\r')
				*p = ' ';
		r = -EPROTO;
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
		tl_err(err, errlen, "GET %s: the answer is not JSON", url);
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

static bool keep(struct json_object *doc, const char *ns, const char *okind, const char *oname,
		 int64_t since)
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
	if (since && doc_start(doc) < since)
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
static int dir_list(struct source *s, struct json_object *out, char *err, size_t errlen)
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
		r = -errno; /* before the message: formatting may change errno */
		tl_err(err, errlen, "%s: %s", top, strerror(-r));
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

/* One agent's /v1/timelines, then each document. The agent may not filter
 * (the filters are an addition to its API, docs/http-api.md): pass them,
 * and filter here. Only the documents it lists are fetched. */
static int agent_list(struct source *s, const char *prefix, const char *ns, const char *okind,
		      const char *oname, int64_t since, struct json_object *out, char *err,
		      size_t errlen)
{
	struct json_object *lst = NULL, *arr;
	char path[2048], e1[256], e2[256], e3[512], tbuf[TL_TIME_STRLEN];
	int r;

	if ((ns && seg(s->easy, ns, e1, sizeof(e1)) < 0) ||
	    (okind && seg(s->easy, okind, e2, sizeof(e2)) < 0) ||
	    (oname && seg(s->easy, oname, e3, sizeof(e3)) < 0))
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/v1/timelines?detail=false%s%s%s%s%s%s%s%s", prefix,
		 ns ? "&namespace=" : "", ns ? e1 : "", okind ? "&ownerKind=" : "", okind ? e2 : "",
		 oname ? "&ownerName=" : "", oname ? e3 : "", since ? "&since=" : "",
		 since ? tl_time_format(since, tbuf) : "");
	r = http_get_json(s, path, LIST_MAX, &lst, err, errlen);
	if (r < 0)
		return r;
	if (!json_object_object_get_ex(lst, "timelines", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		tl_err(err, errlen, "GET %s: no \"timelines\" array", path);
		json_object_put(lst);
		return -EBADMSG;
	}
	for (size_t i = 0; i < json_object_array_length(arr) && r == 0; i++) {
		struct json_object *t = json_object_array_get_idx(arr, i), *doc = NULL;
		const char *tns = json_str(t, "namespace"), *name = json_str(t, "name"),
			   *uid = json_str(t, "uid");
		char a[256], b[512], c[256];

		if (!tns || !name || !uid || (ns && strcmp(tns, ns) != 0))
			continue;
		if (seg(s->easy, tns, a, sizeof(a)) < 0 || seg(s->easy, name, b, sizeof(b)) < 0 ||
		    seg(s->easy, uid, c, sizeof(c)) < 0) {
			r = -ENOMEM;
			break;
		}
		snprintf(path, sizeof(path), "%s/v1/timelines/%s/%s?uid=%s", prefix, a, b, c);
		r = http_get_json(s, path, DOC_MAX, &doc, err, errlen);
		if (r == -ENOENT) { /* gone meanwhile */
			r = 0;
			continue;
		}
		if (r == 0)
			r = add_doc(out, doc);
	}
	json_object_put(lst);
	return r;
}

/* The agent Pods (namespace termline, the DaemonSet's labels), optionally
 * only the one on node. Returns an array of pod names. */
static int agents(struct source *s, const char *node, struct json_object **ret, char *err,
		  size_t errlen)
{
	struct json_object *lst, *items, *names;
	char path[1024], enode[300];
	int r;

	if (node && seg(s->easy, node, enode, sizeof(enode)) < 0)
		return -ENOMEM;
	snprintf(path, sizeof(path),
		 "/api/v1/namespaces/" AGENT_NAMESPACE "/pods?labelSelector=" AGENT_SELECTOR "%s%s",
		 node ? "&fieldSelector=spec.nodeName%3D" : "", node ? enode : "");
	r = http_get_json(s, path, LIST_MAX, &lst, err, errlen);
	if (r < 0)
		return r;
	names = json_object_new_array();
	if (!names) {
		json_object_put(lst);
		return -ENOMEM;
	}
	if (json_object_object_get_ex(lst, "items", &items) &&
	    json_object_is_type(items, json_type_array))
		for (size_t i = 0; i < json_object_array_length(items); i++) {
			struct json_object *p = json_object_array_get_idx(items, i);
			const char *n = json_str(json_path(p, "metadata"), "name");
			const char *pn = json_str(json_path(p, "spec"), "nodeName");

			if (!n || (node && (!pn || strcmp(pn, node) != 0)))
				continue;
			if (json_object_array_add(names, json_object_new_string(n)) < 0) {
				json_object_put(names);
				json_object_put(lst);
				return -ENOMEM;
			}
		}
	json_object_put(lst);
	*ret = names;
	return 0;
}

static int proxy_prefix(struct source *s, const char *agent, char *out, size_t len)
{
	char a[300];

	if (seg(s->easy, agent, a, sizeof(a)) < 0)
		return -ENOMEM;
	snprintf(out, len, "/api/v1/namespaces/" AGENT_NAMESPACE "/pods/%s:%d/proxy", a,
		 AGENT_PORT);
	return 0;
}

int source_list(struct source *s, const char *ns, const char *okind, const char *oname,
		int64_t since, struct json_object **ret, char *err, size_t errlen)
{
	struct json_object *all = json_object_new_array(), *out = NULL;
	int r = 0;

	if (!all)
		return -ENOMEM;
	if (s->kind == SRC_DIR) {
		r = dir_list(s, all, err, errlen);
	} else if (s->kind == SRC_URL) {
		r = agent_list(s, "", ns, okind, oname, since, all, err, errlen);
	} else {
		struct json_object *names = NULL;

		r = agents(s, NULL, &names, err, errlen);
		for (size_t i = 0; r == 0 && i < json_object_array_length(names); i++) {
			char prefix[512];

			r = proxy_prefix(
			    s, json_object_get_string(json_object_array_get_idx(names, i)), prefix,
			    sizeof(prefix));
			if (r == 0)
				r = agent_list(s, prefix, ns, okind, oname, since, all, err, errlen);
		}
		json_object_put(names);
	}
	if (r < 0)
		goto fail;
	out = json_object_new_array();
	if (!out) {
		r = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < json_object_array_length(all); i++) {
		struct json_object *d = json_object_array_get_idx(all, i);

		if (keep(d, ns, okind, oname, since) &&
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

int source_get(struct source *s, const char *ns, const char *name, struct json_object **ret,
	       char *err, size_t errlen)
{
	char a[300], b[600], path[2048];
	int r;

	if (s->kind == SRC_DIR) {
		struct json_object *all;

		/* newest of that name (a name is reused by a StatefulSet); a
		 * timeline recorded without the API (--no-api) has no name:
		 * _unknown/UID finds it */
		bool unknown = strcmp(ns, "_unknown") == 0;

		r = source_list(s, unknown ? NULL : ns, NULL, NULL, 0, &all, err, errlen);
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
		tl_err(err, errlen, "no timeline of %s/%s in %s", ns, name, s->dir);
		return -ENOENT;
	}
	if (seg(s->easy, ns, a, sizeof(a)) < 0 || seg(s->easy, name, b, sizeof(b)) < 0)
		return -ENOMEM;
	if (s->kind == SRC_URL) {
		snprintf(path, sizeof(path), "/v1/timelines/%s/%s", a, b);
		r = http_get_json(s, path, DOC_MAX, ret, err, errlen);
		if (r == -ENOENT)
			tl_err(err, errlen, "no timeline of %s/%s at %s", ns, name, s->url);
		return r;
	}
	/* the Pod's node, then that node's agent; a Pod already deleted is
	 * looked for on every agent */
	{
		struct json_object *pod = NULL, *names = NULL;
		const char *node = NULL;

		snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", a, b);
		r = http_get_json(s, path, LIST_MAX, &pod, err, errlen);
		if (r < 0 && r != -ENOENT)
			return r;
		if (pod)
			node = json_str(json_path(pod, "spec"), "nodeName");
		r = agents(s, node, &names, err, errlen);
		json_object_put(pod);
		if (r < 0)
			return r;
		r = -ENOENT;
		for (size_t i = 0; i < json_object_array_length(names) && r == -ENOENT; i++) {
			char prefix[512];

			if (proxy_prefix(
				s, json_object_get_string(json_object_array_get_idx(names, i)),
				prefix, sizeof(prefix)) < 0) {
				r = -ENOMEM;
				break;
			}
			snprintf(path, sizeof(path), "%s/v1/timelines/%s/%s", prefix, a, b);
			r = http_get_json(s, path, DOC_MAX, ret, err, errlen);
		}
		if (r == -ENOENT)
			tl_err(err, errlen, "no timeline of %s/%s on %s agent%s", ns, name,
			       json_object_array_length(names) ? "any" : "no",
			       json_object_array_length(names) ? "" : "s found");
		json_object_put(names);
		return r;
	}
}

int source_api_get(struct source *s, const char *path, struct json_object **ret, char *err,
		   size_t errlen)
{
	if (s->kind != SRC_KUBE) {
		tl_err(err, errlen, "this needs the API server: use the kubeconfig, not --from");
		return -ENOTSUP;
	}
	return http_get_json(s, path, LIST_MAX, ret, err, errlen);
}
