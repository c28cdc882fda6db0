/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stddef.h>

#include "kubeconfig.h"
#include "loop.h"

/* HTTP GETs to the API server on libcurl's multi-socket API, driven by the
 * daemon's tl_loop (no threads, no blocking perform). */
struct tl_khttp;
struct tl_khttp_req;

struct tl_khttp_ops {
	/* Body bytes of a 2xx response. A negative return aborts the
	 * request; done() then reports -ECANCELED. */
	int (*data)(void *userdata, const char *buf, size_t len);
	/* The request ended: res 0 (body complete) or -errno (transport);
	 * status is the HTTP status (0 when none arrived); retry_after_s the
	 * Retry-After seconds or -1; msg a short reason for logs (the start of
	 * an error body). A non-2xx answer ends once its body passed 512
	 * bytes, with res 0 and its status: the rest is not read. The request
	 * is freed when done() returns. */
	void (*done)(void *userdata, int res, long status, int retry_after_s, const char *msg);
};

struct tl_khttp_opts {
	long total_timeout_s; /* 0: none (watches) */
	long idle_timeout_s;  /* abort when no byte arrived for this long; 0: none */
};

int tl_khttp_new(struct tl_loop *loop, struct tl_khttp **ret);
/* Cancels outstanding requests without calling their done(). */
void tl_khttp_free(struct tl_khttp *h);

/* GET kc->server + path (path starts with '/', query included). */
int tl_khttp_get(struct tl_khttp *h, const struct tl_kubeconfig *kc,
		 const struct tl_kube_creds *creds, const char *path,
		 const struct tl_khttp_opts *opts, const struct tl_khttp_ops *ops, void *userdata,
		 struct tl_khttp_req **ret);
/* Stops a request without calling done(). Accepts NULL. Must not be called
 * from inside that request's own callbacks. */
void tl_khttp_cancel(struct tl_khttp_req *r);
