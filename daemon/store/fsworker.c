/* SPDX-License-Identifier: Apache-2.0 */
/* The close's blocking file-system calls, off the loop: one worker thread
 * runs them in order and hands each finished job back to the loop through
 * an eventfd, where its done callback runs (docs/journal-format.md,
 * "Closing").
 *
 * Why: the document's fdatasync, its rename, the directory's fsync and the
 * journal's unlink (which frees the file's pages) are the longest steps of
 * a close, milliseconds of kernel time each for a 20k-event timeline
 * (bench/README.md): on the loop they would stall every other source. The
 * loop only queues them. A thread, not a fork: the job touches no memory
 * of the store, only descriptors and paths it owns. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "loop.h"
#include "fsworker.h"
#include "metrics.h"
#include "macro.h"

struct tl_fsworker {
	struct tl_loop *loop;
	int efd;
	pthread_t thread;
	bool started, stop;
	bool inline_only; /* drained for shutdown: jobs run on the caller's thread */
	pthread_mutex_t mu;
	pthread_cond_t work_cv, idle_cv;
	struct fsjob *q_head, *q_tail;    /* queued */
	struct fsjob *d_head, *d_tail;    /* done, waiting for the loop */
	unsigned unfinished;              /* queued or running */
};

static int job_commit(struct fsjob *job)
{
	int fd = job->fd, r = job->chain ? *job->chain : 0;

	job->fd = -1;
	if (r < 0) {
		/* a chunk of it was not written */
		close(fd);
		return r;
	}
	return tl_file_commit(fd, job->tmp, job->path, job->dir, &job->renamed);
}

int tl_fsworker_run(struct fsjob *job)
{
	switch (job->type) {
	case FSJOB_COMMIT:
		return job_commit(job);
	case FSJOB_UNLINK:
		return unlink(job->path) < 0 && errno != ENOENT ? -errno : 0;
	case FSJOB_WRITE: {
		int r = job->chain && *job->chain < 0 ? *job->chain : 0;

		if (r == 0)
			r = tl_write_all(job->fd, job->data, job->len, NULL);
		/* Writeback of this chunk starts now: the final fdatasync then
		 * finds little left to do. Advisory: a failure only moves the
		 * work there. */
		if (r == 0)
			(void)sync_file_range(job->fd, (off64_t)job->off, (off64_t)job->len,
					      SYNC_FILE_RANGE_WRITE);
		if (r < 0 && job->chain && *job->chain == 0)
			*job->chain = r;
		return r;
	}
	case FSJOB_CLOSE:
		/* The last descriptor of a file already unlinked (the findings
		 * helper replaced it): the kernel frees its pages here. */
		close(job->fd);
		job->fd = -1;
		return 0;
	}
	return -EINVAL;
}

static void *worker_main(void *arg)
{
	struct tl_fsworker *w = arg;
	const uint64_t one = 1;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct fsjob *job;

		while (!w->q_head && !w->stop)
			pthread_cond_wait(&w->work_cv, &w->mu);
		if (!w->q_head)
			break;
		job = w->q_head;
		w->q_head = job->next;
		if (!w->q_head)
			w->q_tail = NULL;
		pthread_mutex_unlock(&w->mu);

		job->result = tl_fsworker_run(job);

		pthread_mutex_lock(&w->mu);
		job->next = NULL;
		if (w->d_tail)
			w->d_tail->next = job;
		else
			w->d_head = job;
		w->d_tail = job;
		if (--w->unfinished == 0)
			pthread_cond_broadcast(&w->idle_cv);
		if (write(w->efd, &one, sizeof(one)) < 0) {
			/* EAGAIN: the counter is full (2^64 - 2 wake-ups not
			 * read, never in practice); the loop is woken by the
			 * ones already counted and takes every finished job. */
		}
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Runs the done callbacks of the finished jobs, on the calling (loop)
 * thread. */
static void dispatch(struct tl_fsworker *w)
{
	struct fsjob *job;

	pthread_mutex_lock(&w->mu);
	job = w->d_head;
	w->d_head = w->d_tail = NULL;
	pthread_mutex_unlock(&w->mu);
	while (job) {
		struct fsjob *next = job->next;

		job->done(job); /* frees the job */
		job = next;
	}
}

static int efd_cb(struct tl_loop *loop _unused_, int fd, uint32_t events _unused_, void *userdata)
{
	uint64_t n;

	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN && errno != EINTR)
		return -errno;
	dispatch(userdata);
	return 0;
}

int tl_fsworker_new(struct tl_loop *loop, struct tl_fsworker **ret)
{
	struct tl_fsworker *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	w->loop = loop;
	w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (w->efd < 0) {
		r = -errno;
		free(w);
		return r;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->work_cv, NULL);
	pthread_cond_init(&w->idle_cv, NULL);
	r = tl_loop_add_io(loop, w->efd, EPOLLIN, efd_cb, w);
	if (r < 0) {
		close(w->efd);
		w->efd = -1;
		tl_fsworker_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

/* The thread starts with the first job: a store that never closes a
 * timeline (most tests, replay-only runs) has none. Every signal blocked
 * in it: the agent reads its signals through a signalfd on the loop. */
static int start(struct tl_fsworker *w)
{
	sigset_t all, old;
	int r;

	if (w->started)
		return 0;
	sigfillset(&all);
	r = -pthread_sigmask(SIG_SETMASK, &all, &old);
	if (r < 0)
		return r;
	r = -pthread_create(&w->thread, NULL, worker_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r < 0)
		return r;
	w->started = true;
	return 0;
}

int tl_fsworker_submit(struct tl_fsworker *w, struct fsjob *job)
{
	int r;

	if (!w || w->inline_only)
		return -ESHUTDOWN;
	r = start(w);
	if (r < 0)
		return r;
	job->next = NULL;
	pthread_mutex_lock(&w->mu);
	if (w->q_tail)
		w->q_tail->next = job;
	else
		w->q_head = job;
	w->q_tail = job;
	w->unfinished++;
	pthread_cond_signal(&w->work_cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

void tl_fsworker_drain(struct tl_fsworker *w)
{
	if (!w)
		return;
	w->inline_only = true;
	pthread_mutex_lock(&w->mu);
	while (w->unfinished)
		pthread_cond_wait(&w->idle_cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	dispatch(w);
}

bool tl_fsworker_inline(const struct tl_fsworker *w)
{
	return !w || w->inline_only;
}

struct detached {
	struct fsjob job;
	struct tl_metric *errors;
};

static void detached_done(struct fsjob *job)
{
	struct detached *d = (struct detached *)job;

	if (job->result < 0)
		tl_metric_inc(d->errors, 1);
	free(d);
}

void tl_fsworker_detached(struct tl_fsworker *w, enum fsjob_type type, int fd, const char *path,
			  struct tl_metric *errors)
{
	struct detached *d = tl_fsworker_inline(w) ? NULL : calloc(1, sizeof(*d));
	struct fsjob local = { .type = type, .fd = fd };

	if (d) {
		d->job.type = type;
		d->job.fd = fd;
		d->job.done = detached_done;
		d->errors = errors;
		if (path)
			snprintf(d->job.path, sizeof(d->job.path), "%s", path);
		if (tl_fsworker_submit(w, &d->job) == 0)
			return;
		free(d);
	}
	/* not queued (shutdown, no thread, no memory): here, with a job on
	 * the stack */
	if (path)
		snprintf(local.path, sizeof(local.path), "%s", path);
	if (tl_fsworker_run(&local) < 0)
		tl_metric_inc(errors, 1);
}

void tl_fsworker_free(struct tl_fsworker *w)
{
	if (!w)
		return;
	if (w->started) {
		tl_fsworker_drain(w);
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_signal(&w->work_cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
	}
	if (w->efd >= 0) {
		tl_loop_del_io(w->loop, w->efd);
		close(w->efd);
	}
	pthread_cond_destroy(&w->work_cv);
	pthread_cond_destroy(&w->idle_cv);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
