/* SPDX-License-Identifier: Apache-2.0 */
/* Writing one closed timeline's document (close.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "close.h"
#include "fileio.h"
#include "fsworker.h"
#include "log.h"
#include "loop.h"
#include "macro.h"

#define CLOSE_CHUNK (64u * 1024)
/* Chunks of a document queued to the worker at most. */
#define CLOSE_INFLIGHT_MAX 4

struct close_job {
	const struct close_ctx *ctx;
	close_done_fn done;
	void *ud;
	struct tl_state snap;
	struct doc_cursor cur;
	struct tl_buf buf;
	struct tl_timer *timer;
	int fd;             /* the temp file, -1 once closed */
	char tmp[PATH_MAX]; /* "" once renamed or removed */
	char dir[PATH_MAX], path[PATH_MAX];
	struct fsjob *commit; /* the commit, while the worker runs it */
	/* Chunks queued to the worker and not back yet; the first error
	 * one came back with; the worker's own error of this document. */
	unsigned inflight;
	int werr, chain;
	/* Chunk buffers back from the worker, reused: a new 64-128 KiB
	 * buffer per chunk costs its page faults on the loop every time. */
	char *spare[CLOSE_INFLIGHT_MAX];
	size_t spare_cap[CLOSE_INFLIGHT_MAX];
	unsigned n_spare;
	uint64_t bytes;
	bool summarized;
	struct tl_findings_summary summary;
	/* termline-findings, run on the written temp file: -1 when none. */
	pid_t pid;
	int pid_fd, out_fd;
	bool finished; /* done was called */
};

static void job_finish(struct close_job *j, int err);

const struct tl_state *close_snapshot(const struct close_job *j)
{
	return &j->snap;
}

bool close_waiting(const struct close_job *j)
{
	return j->pid > 0 || j->ctx->writer_hook;
}

void close_free(struct close_job *j)
{
	if (!j)
		return;
	if (j->commit) {
		/* Only after a drain: if it ever were before, the worker owns
		 * the descriptor and the temp file now. */
		j->commit->ud = NULL;
		j->tmp[0] = '\0';
	}
	tl_timer_free(j->timer);
	if (j->pid > 0) {
		/* Given up (shutdown): its temp file, if any, is removed by
		 * the next start's scan; the timeline stays journaled. */
		kill(j->pid, SIGKILL);
		while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (j->pid_fd >= 0) {
		tl_loop_del_io(j->ctx->loop, j->pid_fd);
		close(j->pid_fd);
	}
	if (j->out_fd >= 0)
		close(j->out_fd);
	if (j->fd >= 0)
		close(j->fd);
	/* Only a job given up on (shutdown, or a failed write) leaves its
	 * temp file. */
	if (j->tmp[0])
		unlink(j->tmp);
	state_release(&j->snap);
	tl_buf_free(&j->buf);
	for (unsigned i = 0; i < j->n_spare; i++)
		free(j->spare[i]);
	free(j);
}

/* ---- the end: durable and in place ---- */

/* On the loop (what the worker does, when it cannot). */
static int commit_here(struct close_job *j)
{
	bool renamed;
	int fd = j->fd, r;

	j->fd = -1;
	r = tl_file_commit(fd, j->tmp, j->path, j->dir, &renamed);
	if (renamed)
		j->tmp[0] = '\0';
	return r;
}

static void commit_done(struct fsjob *job)
{
	struct close_job *j = job->ud;
	int r = job->result;

	if (!j) {
		/* its close job was given up on: the temp file is the job's */
		if (!job->renamed && job->tmp[0])
			unlink(job->tmp);
		free(job);
		return;
	}
	j->commit = NULL;
	j->fd = -1; /* closed by the worker */
	if (job->renamed)
		j->tmp[0] = '\0';
	free(job);
	job_finish(j, r);
}

/* The commit on the worker: the loop goes on while the disk syncs, and
 * commit_done finishes the job. > 0 once queued; done here (0 or -errno)
 * when it cannot be (shutdown, no thread, no memory). */
static int commit(struct close_job *j)
{
	struct fsjob *job = tl_fsworker_inline(j->ctx->fsw) ? NULL : calloc(1, sizeof(*job));

	if (!job)
		return commit_here(j);
	job->type = FSJOB_COMMIT;
	job->fd = j->fd;
	snprintf(job->tmp, sizeof(job->tmp), "%s", j->tmp);
	snprintf(job->path, sizeof(job->path), "%s", j->path);
	snprintf(job->dir, sizeof(job->dir), "%s", j->dir);
	job->chain = &j->chain;
	job->done = commit_done;
	job->ud = j;
	if (tl_fsworker_submit(j->ctx->fsw, job) < 0) {
		free(job);
		return commit_here(j);
	}
	j->fd = -1;
	j->commit = job;
	return 1;
}

/* ---- findings, off the loop ---- */

/* The findings of docs/findings.md need the whole document parsed (~0.2 s
 * for 20k events with json-c): too long for a loop step, and the tree's
 * memory would stay in this process's heap. So once the temp file is
 * written, termline-findings (a program of its own, started with
 * posix_spawn: no copy of this process's page tables, unlike fork) reads
 * it, writes the document with its findings in place atomically (temp,
 * fsync, rename, fsync of the directory: those syncs leave the loop too),
 * removes the temp file and writes the findings' summary, a typed record
 * (findings-summary.h), on its stdout. Its exit
 * reaches the loop through a pidfd. If it cannot run or fails, the temp
 * file is committed as it is: a valid document with no findings. */

static int helper_pid_cb(struct tl_loop *loop, int fd, uint32_t events, void *userdata);

static int helper_start(struct close_job *j)
{
	const struct close_ctx *ctx = j->ctx;
	struct tl_child child;
	const char *file = strrchr(j->path, '/');
	char *argv[5], *envp[] = { NULL };
	int r;

	if (!file || j->tmp[0] == '\0')
		return -EINVAL;
	argv[0] = (char *)ctx->findings_helper;
	argv[1] = j->tmp;
	argv[2] = j->dir;
	argv[3] = (char *)file + 1;
	argv[4] = NULL;
	/* An empty environment; stdout a pipe, stdin /dev/null and neither
	 * the signal mask the agent reads through a signalfd nor ignored
	 * dispositions (child.h). */
	r = tl_child_spawn(ctx->findings_helper, false, argv, envp, &child);
	if (r < 0) {
		j->pid = -1;
		return r;
	}
	j->pid = child.pid;
	j->out_fd = child.out_fd;
	/* Without a pidfd (kernel < 5.3) the job's timer polls the exit. */
	j->pid_fd = child.pid_fd;
	if (j->pid_fd >= 0 && tl_loop_add_io(ctx->loop, j->pid_fd, EPOLLIN, helper_pid_cb, j) < 0) {
		close(j->pid_fd);
		j->pid_fd = -1;
	}
	if (j->pid_fd >= 0) {
		/* The exit wakes the loop: no more ticks needed. */
		tl_timer_free(j->timer);
		j->timer = NULL;
	}
	return 0;
}

/* > 0 while the helper runs, 0 once the document is in place, -errno. */
static int helper_poll(struct close_job *j)
{
	const struct close_ctx *ctx = j->ctx;
	siginfo_t si;
	uint8_t out[TL_FINDINGS_SUMMARY_MAX + 1];
	ssize_t n = -1;
	struct stat st;
	bool ok;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)j->pid, &si, WEXITED | WNOHANG) < 0) {
		if (errno == EINTR)
			return 1;
		si.si_code = 0; /* not ours any more: treat as failed */
	} else if (si.si_pid == 0) {
		return 1;
	}
	j->pid = -1;
	if (j->pid_fd >= 0) {
		tl_loop_del_io(ctx->loop, j->pid_fd);
		close(j->pid_fd);
		j->pid_fd = -1;
	}
	if (j->out_fd >= 0) {
		/* the whole record or nothing: it is written before the exit */
		do
			n = read(j->out_fd, out, sizeof(out));
		while (n < 0 && errno == EINTR);
		close(j->out_fd);
		j->out_fd = -1;
	}
	ok = si.si_code == CLD_EXITED && si.si_status == 0 && n > 0 &&
	     tl_findings_summary_decode(out, (size_t)n, &j->summary) == 0;
	if (ok && stat(j->path, &st) == 0) {
		/* The helper unlinked the temp file: this last descriptor frees
		 * its pages, on the worker. */
		if (j->fd >= 0)
			tl_fsworker_detached(ctx->fsw, FSJOB_CLOSE, j->fd, NULL, ctx->disk_errors);
		j->fd = -1;
		j->tmp[0] = '\0'; /* removed by the helper */
		j->bytes = (uint64_t)st.st_size;
		j->summarized = true;
		return 0;
	}
	tl_warn("timeline %s: %s failed (%s %d): its document is written without findings",
		j->snap.uid, ctx->findings_helper, si.si_code == CLD_EXITED ? "exit" : "signal",
		si.si_status);
	if (access(j->tmp, F_OK) < 0)
		return -EIO; /* not written: the close is retried */
	return commit(j);
}

static int helper_pid_cb(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
			 void *userdata)
{
	struct close_job *j = userdata;
	int r = helper_poll(j);

	if (r <= 0)
		job_finish(j, r);
	return 0;
}

int close_find_helper(const char *configured, char **ret)
{
	static const char *const rel[] = { "termline-findings", "store/termline-findings",
					   "../libexec/termline-findings" };
	char exe[PATH_MAX], cand[PATH_MAX];
	ssize_t n;

	*ret = NULL;
	if (configured) {
		if (!*configured)
			return 0;
		*ret = strdup(configured);
		return *ret ? 0 : -ENOMEM;
	}
	/* next to this program (installed side by side, or termlined in the
	 * build tree's daemon/ and the helper in daemon/store/) */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		for (size_t i = 0; slash && i < sizeof(rel) / sizeof(rel[0]); i++) {
			if (snprintf(cand, sizeof(cand), "%s/%s", exe, rel[i]) >= (int)sizeof(cand))
				continue;
			if (access(cand, X_OK) == 0)
				goto found;
		}
	}
	snprintf(cand, sizeof(cand), "%s/termline-findings", TL_LIBEXECDIR);
	if (access(cand, X_OK) == 0)
		goto found;
	tl_warn("termline-findings not found next to this program nor in %s: closed timelines are written without findings",
		TL_LIBEXECDIR);
	return 0;
found:
	*ret = strdup(cand);
	return *ret ? 0 : -ENOMEM;
}

/* ---- the document, a chunk at a time ---- */

static void chunk_done(struct fsjob *job)
{
	struct close_job *j = job->ud;

	/* The job waits for its chunks before it ends (job_step). */
	j->inflight--;
	if (job->result < 0 && !j->werr)
		j->werr = job->result;
	if (j->n_spare < CLOSE_INFLIGHT_MAX) {
		j->spare[j->n_spare] = job->data;
		j->spare_cap[j->n_spare++] = job->cap;
	} else {
		free(job->data);
	}
	free(job);
}

/* j->buf to the file: written by the worker (the loop only encodes the
 * document: a 64 KiB write(2) costs milliseconds of the loop's system
 * time), or here when it cannot be queued. 0 or -errno. */
static int write_chunk(struct close_job *j)
{
	struct fsjob *job = NULL;
	int r;

	if (!tl_fsworker_inline(j->ctx->fsw) && j->buf.len > 0 && (job = calloc(1, sizeof(*job)))) {
		job->type = FSJOB_WRITE;
		job->fd = j->fd;
		job->off = j->bytes;
		job->chain = &j->chain;
		job->done = chunk_done;
		job->ud = j;
		job->data = j->buf.p;
		job->len = j->buf.len;
		job->cap = j->buf.cap;
		tl_buf_init(&j->buf, 0);
		if (j->n_spare) {
			j->n_spare--;
			j->buf.p = j->spare[j->n_spare];
			j->buf.cap = j->spare_cap[j->n_spare];
		}
		if (tl_fsworker_submit(j->ctx->fsw, job) == 0) {
			/* j->buf is empty now: the caller adds nothing more */
			j->inflight++;
			j->bytes += job->len;
			return 0;
		}
		/* not queued: the chunk goes back, written here */
		tl_buf_free(&j->buf);
		j->buf.p = job->data;
		j->buf.len = job->len;
		j->buf.cap = job->cap;
		free(job);
	}
	r = tl_write_all(j->fd, j->buf.p, j->buf.len, NULL);
	if (r < 0)
		return r;
	(void)sync_file_range(j->fd, (off64_t)j->bytes, (off64_t)j->buf.len, SYNC_FILE_RANGE_WRITE);
	return 0;
}

/* One chunk of the document: > 0 more to do, 0 written and in place, or
 * -errno. */
static int job_step(struct close_job *j)
{
	const struct close_ctx *ctx = j->ctx;
	int q, r;

	if (j->pid > 0)
		return helper_poll(j);
	if (j->commit)
		return 1; /* the commit runs on the worker */
	/* Chunks on the worker: none may be left when the file is handed
	 * on or given up (it shares the descriptor). */
	if (j->werr)
		return j->inflight ? 1 : j->werr;
	if (j->inflight >= CLOSE_INFLIGHT_MAX || (j->cur.phase == 3 && j->inflight))
		return 1;
	if (j->cur.phase != 3) {
		if (ctx->writer_hook && !ctx->writer_hook(ctx->writer_hook_ud))
			return 1; /* held by a test */
		if (j->fd < 0) {
			j->fd = tl_file_temp(j->dir, j->tmp, sizeof(j->tmp));
			if (j->fd < 0)
				return j->fd;
		}
		tl_buf_reset(&j->buf);
		q = doc_write(&j->snap, ctx->rec, &j->cur, &j->buf, CLOSE_CHUNK);
		r = q < 0 ? q : write_chunk(j);
		if (r < 0) {
			j->werr = r; /* ends the job once its chunks are back */
			return j->inflight ? 1 : r;
		}
		j->bytes += j->buf.len;
		if (q > 0 || j->inflight)
			return 1;
	}
	if (ctx->findings_helper) {
		r = helper_start(j);
		if (r == 0)
			return 1;
		tl_warn("timeline %s: cannot run %s (%s): its document is written without findings",
			j->snap.uid, ctx->findings_helper, strerror(-r));
	}
	return commit(j);
}

/* Calls done, the last thing the job does: done may free it. */
static void job_finish(struct close_job *j, int err)
{
	struct close_result res = {
		.err = err,
		.path = j->path,
		.bytes = j->bytes,
		.snap = &j->snap,
		.summarized = j->summarized,
		.summary = j->summary,
	};

	tl_timer_free(j->timer); /* allowed inside its own callback */
	j->timer = NULL;
	j->finished = true;
	j->done(j->ud, &res);
}

int close_step(struct close_job *j)
{
	int r;

	if (j->finished)
		return 0;
	r = job_step(j);
	if (r <= 0)
		job_finish(j, r);
	return r;
}

static void timer_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	close_step(userdata);
}

int close_start(const struct close_ctx *ctx, const struct tl_state *s, const char *dir,
		const char *path, close_done_fn done, void *ud, struct close_job **ret)
{
	struct close_job *j = calloc(1, sizeof(*j));
	int r;

	if (!j)
		return -ENOMEM;
	j->ctx = ctx;
	j->done = done;
	j->ud = ud;
	j->fd = -1;
	j->pid = -1;
	j->pid_fd = -1;
	j->out_fd = -1;
	tl_buf_init(&j->buf, 0);
	if (strlen(dir) >= sizeof(j->dir) || strlen(path) >= sizeof(j->path)) {
		r = -ENAMETOOLONG;
		goto fail;
	}
	memcpy(j->dir, dir, strlen(dir) + 1);
	memcpy(j->path, path, strlen(path) + 1);
	r = state_copy(s, &j->snap);
	if (r < 0)
		goto fail;
	r = tl_loop_add_timer(ctx->loop, 1, 1, timer_cb, j, &j->timer);
	if (r < 0)
		goto fail;
	*ret = j;
	return 0;
fail:
	close_free(j);
	return r;
}
