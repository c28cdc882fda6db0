/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* The store's blocking file-system calls, run in order by one worker
 * thread (fsworker.c); each finished job's done callback runs on the loop
 * thread and frees the job. */
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum fsjob_type { FSJOB_COMMIT, FSJOB_UNLINK, FSJOB_CLOSE, FSJOB_WRITE };

struct fsjob {
	struct fsjob *next;
	enum fsjob_type type;
	int fd;        /* COMMIT, CLOSE: the worker closes it */
	/* WRITE: len bytes at off (then their writeback started); data is
	 * the job's. chain (WRITE, COMMIT): the first error of the jobs of
	 * one document, set and read by the worker only: a commit after a
	 * failed write fails with it instead of renaming a partial file. */
	char *data;
	size_t len, cap;
	uint64_t off;
	int *chain;
	char tmp[PATH_MAX], path[PATH_MAX], dir[PATH_MAX];
	bool renamed;  /* COMMIT: tmp is now path */
	int result;    /* 0 or -errno */
	void (*done)(struct fsjob *job);
	void *ud;
};

struct tl_loop;
struct tl_fsworker;
struct tl_metric;

int tl_fsworker_new(struct tl_loop *loop, struct tl_fsworker **ret);
/* Drains (every done callback run), then stops the thread. Accepts NULL. */
void tl_fsworker_free(struct tl_fsworker *w);
/* Queues job; -errno when the thread cannot start (run it inline then). */
int tl_fsworker_submit(struct tl_fsworker *w, struct fsjob *job);
/* Waits for every queued job and runs their done callbacks (shutdown);
 * from then on tl_fsworker_inline() is true. */
void tl_fsworker_drain(struct tl_fsworker *w);
/* Jobs run on the caller's thread from now on (shutdown). */
bool tl_fsworker_inline(const struct tl_fsworker *w);
/* Runs a job on the calling thread (its result is also returned). */
int tl_fsworker_run(struct fsjob *job);
/* A job nobody waits for (an unlink, the close of a file already
 * replaced): on the worker, or here when it cannot be queued. A failure
 * counts in errors, on the loop thread. */
void tl_fsworker_detached(struct tl_fsworker *w, enum fsjob_type type, int fd, const char *path,
			  struct tl_metric *errors);
