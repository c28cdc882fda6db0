/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <curl/curl.h>

#include "loop.h"

/* libcurl's multi-socket API driven by the daemon's tl_loop: curl's sockets
 * are registered with the loop's epoll, its timeout is one loop timer, and
 * no call ever blocks (no curl_multi_perform, no threads). The API client
 * (kube-http.c) and the OTLP exporter each own one on the same loop.
 *
 * A transfer is an easy handle the caller configured, plus a tl_curlm_xfer
 * (usually embedded in the caller's request struct) whose done() is called
 * once, on the loop, when the transfer ended. */
struct tl_curlm;

struct tl_curlm_xfer {
	/* The transfer ended with result (CURLE_OK: a whole response came,
	 * whatever its status). The easy handle has been taken out of the
	 * multi handle and belongs to the caller again (getinfo works; it
	 * may be cleaned up or added anew from here). */
	void (*done)(struct tl_curlm_xfer *x, CURL *easy, CURLcode result);
};

int tl_curlm_new(struct tl_loop *loop, struct tl_curlm **ret);
/* Every transfer must have been removed or have ended. Accepts NULL. */
void tl_curlm_free(struct tl_curlm *m);

/* Starts easy (CURLOPT_PRIVATE is set to x: the caller must not use it).
 * 0, or -EIO when curl refuses the handle. */
int tl_curlm_add(struct tl_curlm *m, CURL *easy, struct tl_curlm_xfer *x);
/* Stops a transfer without calling its done(). Must not be called from
 * inside that transfer's own curl callbacks (write, header). */
void tl_curlm_remove(struct tl_curlm *m, CURL *easy);

/* curl's result as -errno (CURLE_OK: 0), for callers that report one. */
int tl_curl_errno(CURLcode c);
