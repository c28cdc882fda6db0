/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
#include <stdint.h>

/* The one event loop of termlined: epoll over fds plus timerfd timers.
 * Single-threaded; callbacks run on the loop and must not block. */
struct tl_loop;
struct tl_timer;

/* events: EPOLLIN/EPOLLOUT/... Return value of the callback is ignored
 * except that a negative value is logged at debug level. */
typedef int (*tl_io_cb)(struct tl_loop *loop, int fd, uint32_t events, void *userdata);
typedef void (*tl_timer_cb)(struct tl_loop *loop, struct tl_timer *timer, void *userdata);

int tl_loop_new(struct tl_loop **ret);
void tl_loop_free(struct tl_loop *loop);

/* Register, change or remove an fd. One registration per fd. -errno on error. */
int tl_loop_add_io(struct tl_loop *loop, int fd, uint32_t events, tl_io_cb cb, void *userdata);
int tl_loop_mod_io(struct tl_loop *loop, int fd, uint32_t events);
int tl_loop_del_io(struct tl_loop *loop, int fd);

/* A timer fires first after first_ms, then every interval_ms (0 = once).
 * For "as soon as possible" pass first_ms = 1.
 * first_ms == 0 and interval_ms == 0 leaves it disarmed. */
int tl_loop_add_timer(struct tl_loop *loop, uint64_t first_ms, uint64_t interval_ms,
		      tl_timer_cb cb, void *userdata, struct tl_timer **ret);
int tl_timer_arm(struct tl_timer *timer, uint64_t first_ms, uint64_t interval_ms);
int tl_timer_disarm(struct tl_timer *timer);
/* Removes it from the loop and frees it; accepts NULL. Safe inside its own callback. */
void tl_timer_free(struct tl_timer *timer);

/* While callbacks of an iteration are being dispatched: runs cb(ud) once
 * after the last of them, before the loop waits again (no syscall, no
 * wakeup of its own), once however often it is asked for in the iteration.
 * -EAGAIN outside a dispatch (arm a timer then), -ENOSPC when too many are
 * pending. tl_loop_cancel_defer() drops a pending one (its ud is going). */
typedef void (*tl_defer_cb)(struct tl_loop *loop, void *ud);
int tl_loop_defer(struct tl_loop *loop, tl_defer_cb cb, void *ud);
void tl_loop_cancel_defer(struct tl_loop *loop, tl_defer_cb cb, void *ud);

/* Runs until tl_loop_quit(); returns the code given to it. */
int tl_loop_run(struct tl_loop *loop);
void tl_loop_quit(struct tl_loop *loop, int code);
/* Runs one iteration, waiting at most timeout_ms (-1 = forever). For tests. */
int tl_loop_run_once(struct tl_loop *loop, int timeout_ms);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t tl_now_mono_ms(void);
