/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>

#include "curl-multi.h"
#include "kube-http.h"
#include "termline-config.h"
#include "macro.h"

#define KHTTP_CONNECT_TIMEOUT_MS 10000L
#define KHTTP_ERRBODY_MAX 512

struct tl_khttp {
	struct tl_curlm *curlm;
	struct tl_khttp_req *reqs; /* outstanding, doubly linked */
};

struct tl_khttp_req {
	struct tl_curlm_xfer xfer; /* first: the driver hands it back */
	struct tl_khttp *h;
	CURL *easy;
	struct curl_slist *headers;
	struct curl_slist *connect_to; /* curl keeps the pointer, not a copy */
	struct tl_khttp_ops ops;
	void *userdata;
	int retry_after_s;
	bool aborted;
	bool errbody_capped; /* ended by us: the error body passed its cap */
	char errbuf[CURL_ERROR_SIZE];
	char errbody[KHTTP_ERRBODY_MAX + 1];
	size_t errbody_len;
	struct tl_khttp_req *prev, *next;
};

static void req_unlink(struct tl_khttp_req *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else if (r->h->reqs == r)
		r->h->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
}

static void req_free(struct tl_khttp_req *r)
{
	if (!r)
		return;
	if (r->easy)
		curl_easy_cleanup(r->easy);
	curl_slist_free_all(r->headers);
	curl_slist_free_all(r->connect_to);
	free(r);
}

static void req_done(struct tl_curlm_xfer *x, CURL *easy _unused_, CURLcode result)
{
	struct tl_khttp_req *r = (struct tl_khttp_req *)x;
	long status = 0;
	const char *msg;
	int res;

	res = tl_curl_errno(result);
	if (curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
		status = 0;
	/* the status is the answer; the rest of its body is not needed */
	if (r->errbody_capped)
		res = 0;
	req_unlink(r);
	if (res < 0)
		msg = r->errbuf[0] ? r->errbuf : curl_easy_strerror(result);
	else
		msg = r->errbody;
	r->errbody[r->errbody_len] = '\0';
	r->ops.done(r->userdata, res, status, r->retry_after_s, msg);
	req_free(r);
}

int tl_khttp_new(struct tl_loop *loop, struct tl_khttp **ret)
{
	struct tl_khttp *h;
	int r;

	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	r = tl_curlm_new(loop, &h->curlm);
	if (r < 0) {
		free(h);
		return r;
	}
	*ret = h;
	return 0;
}

void tl_khttp_free(struct tl_khttp *h)
{
	if (!h)
		return;
	while (h->reqs)
		tl_khttp_cancel(h->reqs);
	tl_curlm_free(h->curlm);
	free(h);
}

void tl_khttp_cancel(struct tl_khttp_req *r)
{
	if (!r)
		return;
	tl_curlm_remove(r->h->curlm, r->easy);
	req_unlink(r);
	req_free(r);
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct tl_khttp_req *r = userdata;
	size_t len = size * nmemb;
	long status = 0;

	if (r->aborted)
		return 0;
	if (curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK)
		return 0;
	if (status < 200 || status > 299) {
		/* keep the start of an error body (a Status) for the log */
		size_t n = KHTTP_ERRBODY_MAX - r->errbody_len;

		if (n > len)
			n = len;
		memcpy(r->errbody + r->errbody_len, ptr, n);
		r->errbody_len += n;
		/* A body past the cap is ended here: an error answer to a
		 * WATCH is chunked too, and one that never ends would hold
		 * the request (and the reflector's retry) forever. */
		if (n < len) {
			r->errbody_capped = true;
			return 0;
		}
		return len;
	}
	if (r->ops.data(r->userdata, ptr, len) < 0) {
		r->aborted = true;
		return 0;
	}
	return len;
}

static size_t header_cb(char *buf, size_t size, size_t nitems, void *userdata)
{
	struct tl_khttp_req *r = userdata;
	size_t len = size * nitems;
	static const char name[] = "retry-after:";

	if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0)
		r->retry_after_s = -1; /* a new response (after 100 Continue) */
	else if (len > sizeof(name) - 1 && strncasecmp(buf, name, sizeof(name) - 1) == 0) {
		const char *p = buf + sizeof(name) - 1, *end = buf + len;
		long v = 0;
		bool digits = false;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		while (p < end && isdigit((unsigned char)*p) && v < 100000) {
			v = v * 10 + (*p - '0');
			digits = true;
			p++;
		}
		/* the HTTP-date form is not used by the API server: ignore it */
		if (digits)
			r->retry_after_s = (int)v;
	}
	return len;
}

/* With tls-server-name the URL names that host (SNI and verification use
 * it) and CONNECT_TO sends the connection to the real server. */
static int build_url(const struct tl_kubeconfig *kc, const char *path, char **ret_url,
		     char **ret_connect_to)
{
	CURLU *u = NULL;
	char *host = NULL, *port = NULL, *url = NULL, *full = NULL;
	int r = -EINVAL;

	if (asprintf(&full, "%s%s", kc->server, path) < 0)
		return -ENOMEM;
	if (!kc->tls_server_name) {
		*ret_url = full;
		*ret_connect_to = NULL;
		return 0;
	}
	u = curl_url();
	if (!u) {
		r = -ENOMEM;
		goto out;
	}
	if (curl_url_set(u, CURLUPART_URL, full, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_HOST, kc->tls_server_name, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK)
		goto out;
	if (asprintf(ret_connect_to, "%s:%s:%s:%s", kc->tls_server_name, port, host, port) < 0)
		goto out;
	*ret_url = strdup(url);
	if (!*ret_url) {
		free(*ret_connect_to);
		r = -ENOMEM;
		goto out;
	}
	r = 0;
out:
	curl_free(host);
	curl_free(port);
	curl_free(url);
	curl_url_cleanup(u);
	free(full);
	return r;
}

/* A client certificate and key held in memory (PEM bytes): curl copies
 * them, so credentials refreshed meanwhile do not pull them away. */
static bool set_client_cert(CURL *easy, char *cert, size_t cert_len, char *key, size_t key_len)
{
	struct curl_blob c = { .data = cert, .len = cert_len, .flags = CURL_BLOB_COPY };
	struct curl_blob k = { .data = key, .len = key_len, .flags = CURL_BLOB_COPY };

	return curl_easy_setopt(easy, CURLOPT_SSLCERT_BLOB, &c) == CURLE_OK &&
	       curl_easy_setopt(easy, CURLOPT_SSLKEY_BLOB, &k) == CURLE_OK;
}

#define SETOPT(e, opt, val)                                         \
	do {                                                        \
		if (curl_easy_setopt((e), (opt), (val)) != CURLE_OK) \
			goto fail;                                  \
	} while (0)

int tl_khttp_get(struct tl_khttp *h, const struct tl_kubeconfig *kc,
		 const struct tl_kube_creds *creds, const char *path,
		 const struct tl_khttp_opts *opts, const struct tl_khttp_ops *ops, void *userdata,
		 struct tl_khttp_req **ret)
{
	struct tl_khttp_req *r;
	struct curl_slist *l;
	char *url = NULL, *connect_to = NULL, *auth = NULL;
	int err = -EIO;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->h = h;
	r->xfer.done = req_done;
	r->ops = *ops;
	r->userdata = userdata;
	r->retry_after_s = -1;
	err = build_url(kc, path, &url, &connect_to);
	if (err < 0)
		goto out_err;
	err = -EIO;
	r->easy = curl_easy_init();
	if (!r->easy) {
		err = -ENOMEM;
		goto out_err;
	}
	l = curl_slist_append(r->headers, "Accept: application/json");
	if (!l)
		goto fail;
	r->headers = l;
	if (creds && creds->token) {
		/* kubeconfig and credential code check tokens; a header is
		 * never built from one that could end it */
		if (!tl_kube_token_ok(creds->token)) {
			err = -EINVAL;
			goto out_err;
		}
		if (asprintf(&auth, "Authorization: Bearer %s", creds->token) < 0) {
			auth = NULL;
			goto fail;
		}
		l = curl_slist_append(r->headers, auth);
		if (!l)
			goto fail;
		r->headers = l;
	}
	SETOPT(r->easy, CURLOPT_URL, url);
	SETOPT(r->easy, CURLOPT_NOSIGNAL, 1L);
	SETOPT(r->easy, CURLOPT_ERRORBUFFER, r->errbuf);
	SETOPT(r->easy, CURLOPT_HTTPHEADER, r->headers);
	SETOPT(r->easy, CURLOPT_WRITEFUNCTION, write_cb);
	SETOPT(r->easy, CURLOPT_WRITEDATA, r);
	SETOPT(r->easy, CURLOPT_HEADERFUNCTION, header_cb);
	SETOPT(r->easy, CURLOPT_HEADERDATA, r);
	SETOPT(r->easy, CURLOPT_USERAGENT, "termlined/" TERMLINE_VERSION);
	SETOPT(r->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SETOPT(r->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	SETOPT(r->easy, CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(r->easy, CURLOPT_CONNECTTIMEOUT_MS, KHTTP_CONNECT_TIMEOUT_MS);
	SETOPT(r->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	if (opts && opts->total_timeout_s > 0)
		SETOPT(r->easy, CURLOPT_TIMEOUT, opts->total_timeout_s);
	if (opts && opts->idle_timeout_s > 0) {
		SETOPT(r->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
		SETOPT(r->easy, CURLOPT_LOW_SPEED_TIME, opts->idle_timeout_s);
	}
	if (connect_to) {
		r->connect_to = curl_slist_append(NULL, connect_to);
		if (!r->connect_to)
			goto fail;
		SETOPT(r->easy, CURLOPT_CONNECT_TO, r->connect_to);
	}
	if (kc->insecure) {
		SETOPT(r->easy, CURLOPT_SSL_VERIFYPEER, 0L);
		SETOPT(r->easy, CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		SETOPT(r->easy, CURLOPT_SSL_VERIFYPEER, 1L);
		SETOPT(r->easy, CURLOPT_SSL_VERIFYHOST, 2L);
		if (kc->ca_pem) {
			struct curl_blob b = { .data = kc->ca_pem, .len = kc->ca_pem_len,
					       .flags = CURL_BLOB_COPY };

			SETOPT(r->easy, CURLOPT_CAINFO_BLOB, &b);
		} else if (kc->ca_file)
			SETOPT(r->easy, CURLOPT_CAINFO, kc->ca_file);
	}
	/* An exec plugin's certificate over the kubeconfig's own. */
	if (creds && creds->cert_pem) {
		if (!set_client_cert(r->easy, creds->cert_pem, creds->cert_pem_len, creds->key_pem,
				     creds->key_pem_len))
			goto fail;
	} else if (kc->cert_pem) {
		if (!set_client_cert(r->easy, kc->cert_pem, kc->cert_pem_len, kc->key_pem,
				     kc->key_pem_len))
			goto fail;
	} else if (kc->cert_file) {
		SETOPT(r->easy, CURLOPT_SSLCERT, kc->cert_file);
		SETOPT(r->easy, CURLOPT_SSLKEY, kc->key_file);
	}
	if (tl_curlm_add(h->curlm, r->easy, &r->xfer) < 0)
		goto fail;
	r->next = h->reqs;
	if (h->reqs)
		h->reqs->prev = r;
	h->reqs = r;
	free(url);
	free(connect_to);
	free(auth);
	*ret = r;
	return 0;
fail:
	err = -EIO;
out_err:
	free(url);
	free(connect_to);
	free(auth);
	req_free(r);
	return err;
}
