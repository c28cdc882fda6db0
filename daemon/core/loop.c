/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "loop.h"
#include "macro.h"

/* A registration is referenced by epoll's data.ptr. Removing one while a
 * batch of epoll events is being dispatched must not free it under the
 * dispatcher's feet, so removals only mark it dead; dead entries are freed
 * after the batch. */
struct io_reg {
	int fd;
	bool dead;
	tl_io_cb cb;
	void *userdata;
	struct tl_timer *timer; /* set when this registration is a timer's timerfd */
	struct io_reg *next;
};

struct tl_timer {
	struct tl_loop *loop;
	int fd;
	tl_timer_cb cb;
	void *userdata;
	struct io_reg *reg;
};

#define MAX_DEFERS 16

struct tl_loop {
	int epfd;
	bool quit;
	int quit_code;
	bool dispatching;
	struct io_reg *regs;
	struct {
		tl_defer_cb cb;
		void *ud;
	} defers[MAX_DEFERS];
	unsigned n_defers;
};

int tl_loop_defer(struct tl_loop *loop, tl_defer_cb cb, void *ud)
{
	if (!loop->dispatching)
		return -EAGAIN;
	for (unsigned i = 0; i < loop->n_defers; i++)
		if (loop->defers[i].cb == cb && loop->defers[i].ud == ud)
			return 0;
	if (loop->n_defers == MAX_DEFERS)
		return -ENOSPC;
	loop->defers[loop->n_defers].cb = cb;
	loop->defers[loop->n_defers].ud = ud;
	loop->n_defers++;
	return 0;
}

void tl_loop_cancel_defer(struct tl_loop *loop, tl_defer_cb cb, void *ud)
{
	unsigned j = 0;

	if (!loop)
		return;
	for (unsigned i = 0; i < loop->n_defers; i++)
		if (loop->defers[i].cb != cb || loop->defers[i].ud != ud)
			loop->defers[j++] = loop->defers[i];
	loop->n_defers = j;
}

/* Each runs once, in the order asked; one that a deferred callback asks
 * for runs in this pass too (at most a few passes' worth: no livelock). */
static void run_defers(struct tl_loop *loop)
{
	loop->dispatching = true;
	for (unsigned budget = 4 * MAX_DEFERS; loop->n_defers && budget; budget--) {
		tl_defer_cb cb = loop->defers[0].cb;
		void *ud = loop->defers[0].ud;

		loop->n_defers--;
		memmove(&loop->defers[0], &loop->defers[1], loop->n_defers * sizeof(loop->defers[0]));
		cb(loop, ud);
	}
	/* Any left run after the next iteration. */
	loop->dispatching = false;
}

uint64_t tl_now_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int tl_loop_new(struct tl_loop **ret)
{
	struct tl_loop *loop = calloc(1, sizeof(*loop));

	if (!loop)
		return -ENOMEM;
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (loop->epfd < 0) {
		int r = -errno;

		free(loop);
		return r;
	}
	*ret = loop;
	return 0;
}

static struct io_reg *find_reg(struct tl_loop *loop, int fd)
{
	for (struct io_reg *r = loop->regs; r; r = r->next)
		if (!r->dead && r->fd == fd)
			return r;
	return NULL;
}

static void reap_dead(struct tl_loop *loop)
{
	struct io_reg **pp = &loop->regs;

	while (*pp) {
		struct io_reg *r = *pp;

		if (r->dead) {
			*pp = r->next;
			free(r);
		} else {
			pp = &r->next;
		}
	}
}

static int add_reg(struct tl_loop *loop, int fd, uint32_t events, tl_io_cb cb, void *userdata,
		   struct io_reg **ret)
{
	struct epoll_event ev = { .events = events };
	struct io_reg *r;

	if (fd < 0 || !cb)
		return -EINVAL;
	if (find_reg(loop, fd))
		return -EEXIST;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = fd;
	r->cb = cb;
	r->userdata = userdata;
	ev.data.ptr = r;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int e = -errno;

		free(r);
		return e;
	}
	r->next = loop->regs;
	loop->regs = r;
	if (ret)
		*ret = r;
	return 0;
}

int tl_loop_add_io(struct tl_loop *loop, int fd, uint32_t events, tl_io_cb cb, void *userdata)
{
	return add_reg(loop, fd, events, cb, userdata, NULL);
}

int tl_loop_mod_io(struct tl_loop *loop, int fd, uint32_t events)
{
	struct io_reg *r = find_reg(loop, fd);
	struct epoll_event ev = { .events = events };

	if (!r)
		return -ENOENT;
	ev.data.ptr = r;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return -errno;
	return 0;
}

static void drop_reg(struct tl_loop *loop, struct io_reg *r)
{
	/* The fd may already be closed (curl closes sockets before telling
	 * us): EBADF/ENOENT from epoll then mean it is gone anyway. */
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, r->fd, NULL);
	r->dead = true;
	if (!loop->dispatching)
		reap_dead(loop);
}

int tl_loop_del_io(struct tl_loop *loop, int fd)
{
	struct io_reg *r = find_reg(loop, fd);

	if (!r)
		return -ENOENT;
	drop_reg(loop, r);
	return 0;
}

static int timer_io(struct tl_loop *loop, int fd, uint32_t events _unused_, void *userdata)
{
	struct tl_timer *t = userdata;
	uint64_t expirations;

	if (read(fd, &expirations, sizeof(expirations)) != sizeof(expirations))
		return 0; /* spurious wakeup or disarmed meanwhile */
	t->cb(loop, t, t->userdata);
	return 0;
}

static void ms_to_ts(uint64_t ms, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ms / 1000);
	ts->tv_nsec = (long)((ms % 1000) * 1000000);
}

int tl_timer_arm(struct tl_timer *t, uint64_t first_ms, uint64_t interval_ms)
{
	struct itimerspec its = { 0 };

	if (first_ms == 0 && interval_ms != 0)
		first_ms = interval_ms;
	ms_to_ts(first_ms, &its.it_value);
	ms_to_ts(interval_ms, &its.it_interval);
	/* Both zero leaves it disarmed (timerfd semantics); callers wanting
	 * "as soon as possible" pass 1 ms. */
	if (timerfd_settime(t->fd, 0, &its, NULL) < 0)
		return -errno;
	return 0;
}

int tl_timer_disarm(struct tl_timer *t)
{
	struct itimerspec its = { 0 };

	if (timerfd_settime(t->fd, 0, &its, NULL) < 0)
		return -errno;
	return 0;
}

int tl_loop_add_timer(struct tl_loop *loop, uint64_t first_ms, uint64_t interval_ms,
		      tl_timer_cb cb, void *userdata, struct tl_timer **ret)
{
	struct tl_timer *t;
	int r;

	if (!cb)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->loop = loop;
	t->cb = cb;
	t->userdata = userdata;
	t->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->fd < 0) {
		r = -errno;
		free(t);
		return r;
	}
	r = add_reg(loop, t->fd, EPOLLIN, timer_io, t, &t->reg);
	if (r < 0)
		goto fail;
	t->reg->timer = t;
	if (first_ms || interval_ms) {
		r = tl_timer_arm(t, first_ms, interval_ms);
		if (r < 0) {
			drop_reg(loop, t->reg);
			goto fail;
		}
	}
	if (ret)
		*ret = t;
	return 0;
fail:
	close(t->fd);
	free(t);
	return r;
}

void tl_timer_free(struct tl_timer *t)
{
	if (!t)
		return;
	/* The io registration stays allocated (dead) until the batch ends, but
	 * it must no longer point at this timer. */
	t->reg->userdata = NULL;
	t->reg->cb = NULL;
	t->reg->timer = NULL;
	drop_reg(t->loop, t->reg);
	close(t->fd);
	free(t);
}

int tl_loop_run_once(struct tl_loop *loop, int timeout_ms)
{
	struct epoll_event evs[64];
	int n;

	n = epoll_wait(loop->epfd, evs, 64, timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	loop->dispatching = true;
	for (int i = 0; i < n; i++) {
		struct io_reg *r = evs[i].data.ptr;
		int rc;

		if (r->dead || !r->cb)
			continue;
		rc = r->cb(loop, r->fd, evs[i].events, r->userdata);
		if (rc < 0)
			tl_debug("loop: callback for fd %d: %s", r->fd, strerror(-rc));
		if (loop->quit)
			break;
	}
	loop->dispatching = false;
	if (loop->n_defers)
		run_defers(loop);
	reap_dead(loop);
	return n;
}

int tl_loop_run(struct tl_loop *loop)
{
	loop->quit = false;
	while (!loop->quit) {
		int r = tl_loop_run_once(loop, -1);

		if (r < 0)
			return r;
	}
	return loop->quit_code;
}

void tl_loop_quit(struct tl_loop *loop, int code)
{
	loop->quit = true;
	loop->quit_code = code;
}

void tl_loop_free(struct tl_loop *loop)
{
	if (!loop)
		return;
	/* Timers and io registrations belong to their owners, who must have
	 * freed them; whatever is left is released here. */
	while (loop->regs) {
		struct io_reg *r = loop->regs;

		loop->regs = r->next;
		free(r);
	}
	close(loop->epfd);
	free(loop);
}
