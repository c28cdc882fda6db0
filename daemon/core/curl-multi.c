/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "curl-multi.h"
#include "macro.h"

struct tl_curlm {
	struct tl_loop *loop;
	CURLM *multi;
	struct tl_timer *timer;
};

int tl_curl_errno(CURLcode c)
{
	switch (c) {
	case CURLE_OK:
		return 0;
	case CURLE_OPERATION_TIMEDOUT:
		return -ETIMEDOUT;
	case CURLE_COULDNT_CONNECT:
		return -ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
		return -EHOSTUNREACH;
	case CURLE_WRITE_ERROR:
		return -ECANCELED;
	case CURLE_OUT_OF_MEMORY:
		return -ENOMEM;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
		return -EPROTO;
	default:
		return -EIO;
	}
}

static void process_done(struct tl_curlm *m)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(m->multi, &left))) {
		struct tl_curlm_xfer *x = NULL;
		CURL *easy = msg->easy_handle;
		CURLcode result = msg->data.result;

		if (msg->msg != CURLMSG_DONE)
			continue;
		if (curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x) != CURLE_OK || !x)
			continue;
		curl_multi_remove_handle(m->multi, easy);
		x->done(x, easy, result);
	}
}

static int io_cb(struct tl_loop *loop _unused_, int fd, uint32_t events, void *userdata)
{
	struct tl_curlm *m = userdata;
	int flags = 0, running;
	CURLMcode mc;

	if (events & EPOLLIN)
		flags |= CURL_CSELECT_IN;
	if (events & EPOLLOUT)
		flags |= CURL_CSELECT_OUT;
	if (events & (EPOLLERR | EPOLLHUP))
		flags |= CURL_CSELECT_ERR;
	mc = curl_multi_socket_action(m->multi, fd, flags, &running);
	process_done(m);
	return mc == CURLM_OK ? 0 : -EIO;
}

static void timer_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct tl_curlm *m = userdata;
	int running;

	curl_multi_socket_action(m->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	process_done(m);
}

static int socket_cb(CURL *easy _unused_, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct tl_curlm *m = userp;
	uint32_t ev = 0;
	int r;

	if (what == CURL_POLL_REMOVE) {
		if (socketp) {
			tl_loop_del_io(m->loop, s);
			curl_multi_assign(m->multi, s, NULL);
		}
		return 0;
	}
	if (what & CURL_POLL_IN)
		ev |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev |= EPOLLOUT;
	if (socketp)
		r = tl_loop_mod_io(m->loop, s, ev);
	else {
		r = tl_loop_add_io(m->loop, s, ev, io_cb, m);
		if (r == 0 && curl_multi_assign(m->multi, s, m) != CURLM_OK) {
			tl_loop_del_io(m->loop, s);
			r = -EIO;
		}
	}
	return r < 0 ? -1 : 0;
}

static int timer_fn(CURLM *multi _unused_, long timeout_ms, void *userp)
{
	struct tl_curlm *m = userp;
	int r;

	if (timeout_ms < 0)
		r = tl_timer_disarm(m->timer);
	else /* 0 means "now"; an armed 0/0 timer would be disarmed */
		r = tl_timer_arm(m->timer, timeout_ms > 0 ? (uint64_t)timeout_ms : 1, 0);
	return r < 0 ? -1 : 0;
}

int tl_curlm_new(struct tl_loop *loop, struct tl_curlm **ret)
{
	static bool global_done;
	struct tl_curlm *m;
	int r;

	if (!global_done) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			return -EIO;
		global_done = true;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->loop = loop;
	r = tl_loop_add_timer(loop, 0, 0, timer_cb, m, &m->timer);
	if (r < 0)
		goto fail;
	m->multi = curl_multi_init();
	if (!m->multi) {
		r = -ENOMEM;
		goto fail;
	}
	if (curl_multi_setopt(m->multi, CURLMOPT_SOCKETFUNCTION, socket_cb) != CURLM_OK ||
	    curl_multi_setopt(m->multi, CURLMOPT_SOCKETDATA, m) != CURLM_OK ||
	    curl_multi_setopt(m->multi, CURLMOPT_TIMERFUNCTION, timer_fn) != CURLM_OK ||
	    curl_multi_setopt(m->multi, CURLMOPT_TIMERDATA, m) != CURLM_OK) {
		r = -EIO;
		goto fail;
	}
	*ret = m;
	return 0;
fail:
	tl_curlm_free(m);
	return r;
}

void tl_curlm_free(struct tl_curlm *m)
{
	if (!m)
		return;
	if (m->multi)
		curl_multi_cleanup(m->multi);
	tl_timer_free(m->timer);
	free(m);
}

int tl_curlm_add(struct tl_curlm *m, CURL *easy, struct tl_curlm_xfer *x)
{
	if (curl_easy_setopt(easy, CURLOPT_PRIVATE, x) != CURLE_OK)
		return -EIO;
	if (curl_multi_add_handle(m->multi, easy) != CURLM_OK)
		return -EIO;
	return 0;
}

void tl_curlm_remove(struct tl_curlm *m, CURL *easy)
{
	curl_multi_remove_handle(m->multi, easy);
}
