/* SPDX-License-Identifier: Apache-2.0 */
/* Closing a timeline: the document written from a snapshot a chunk per
 * loop iteration, then its findings by termline-findings off the loop
 * (docs/http-api.md), then the journal removed. */
#include <dirent.h>
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
#include <time.h>
#include <unistd.h>
#include "child.h"
#include "clock.h"
#include "export-json.h"
#include "fileio.h"
#include "findings.h"
#include "journal.h"
#include "log.h"
#include "metrics.h"
#include "store-int.h"
#include "timeline.h"
#include "macro.h"

/* ---- closing ---- */

int64_t timeline_started(const struct timeline *tl)
{
	return tl->s.n ? tl->s.ev[0].time_ns : tl->s.opened_ns;
}

const char *meta_str(const struct timeline *tl, const char *key)
{
	return state_meta_str(&tl->s, key);
}

/* Owner and deletion of tl; complete and failed are the caller's. */
void timeline_summary(const struct timeline *tl, struct summary *sm)
{
	memset(sm, 0, sizeof(*sm));
	sm->failed = -1;
	sm->deletion_ns = tl->deletion_ns;
	/* both or neither (pod-meta.h) */
	if (tl->s.meta && tl->s.meta->owner_kind[0]) {
		sm->owner_kind = tl->s.meta->owner_kind;
		sm->owner_name = tl->s.meta->owner_name;
	}
}

/* DIR (STATE/timelines/NS), FILE and DIR/FILE of tl's document. */
static int doc_location(const struct timeline *tl, char *dir, size_t dirlen, char *file,
			size_t filelen, char *path, size_t pathlen)
{
	char reldir[300];
	int r;

	r = tl_export_doc_location(meta_str(tl, "namespace"), meta_str(tl, "name"), tl->s.uid, reldir,
				   sizeof(reldir), file, filelen);
	if (r < 0)
		return r;
	r = join_path(dir, dirlen, tl->store->timelines_dir, reldir);
	if (r < 0)
		return r;
	return join_path(path, pathlen, dir, file);
}

static const char *meta_name_ok(const struct timeline *tl, const char *key)
{
	const char *v = meta_str(tl, key);

	return tl_export_name_ok(v) ? v : NULL;
}


/* Disk full or unwritable: count it, keep the timeline open (it is
 * journaled) and try again later. */
static void close_failed(struct timeline *tl, int err)
{
	struct tl_timelines *t = tl->store;
	uint64_t retry_ms = (uint64_t)t->linger_s * 1000;

	if (!tl->write_warned) {
		tl_warn("timeline of pod %s not written: %s (retrying)", tl->s.uid, strerror(err));
		tl->write_warned = true;
	}
	note_disk_error(tl);
	journal_loss(tl);
	if (retry_ms < 1000)
		retry_ms = 1000;
	if (retry_ms > CLOSE_RETRY_MAX_MS)
		retry_ms = CLOSE_RETRY_MAX_MS;
	if (!tl->close_timer) {
		if (tl_loop_add_timer(t->loop, retry_ms, 0, close_cb, tl, &tl->close_timer) < 0)
			tl->close_timer = NULL; /* retried by the fsync tick */
		return;
	}
	if (tl_timer_arm(tl->close_timer, retry_ms, 0) < 0) {
		tl_timer_free(tl->close_timer);
		tl->close_timer = NULL;
	}
}

/* ---- file-system calls off the loop (fsworker.c) ---- */

static void fs_job_done(struct fsjob *job)
{
	if (job->result < 0)
		note_disk_error(NULL);
	free(job);
}

/* Runs job on the worker, or here when it cannot be queued (shutdown, no
 * thread, no memory for the job: then with a job on the stack). */
static void fs_detached(struct tl_timelines *t, int type, int fd, const char *path)
{
	struct fsjob *job = t->sync_fs ? NULL : calloc(1, sizeof(*job));
	struct fsjob local = { .type = type, .fd = fd };

	if (job) {
		job->type = type;
		job->fd = fd;
		job->done = fs_job_done;
		if (path)
			snprintf(job->path, sizeof(job->path), "%s", path);
		if (tl_fsworker_submit(t->fsw, job) == 0)
			return;
		free(job);
	}
	if (path)
		snprintf(local.path, sizeof(local.path), "%s", path);
	if (fsjob_run(&local) < 0)
		note_disk_error(NULL);
}

/* The document is on disk and indexed: the timeline is gone. Freeing is a
 * few free() calls (compact state), fine inside its own timer callback
 * since the loop allows freeing a timer there. The journal is closed here
 * and unlinked by the worker: an unlink frees the file's pages, which took
 * milliseconds on the loop. (Its uid is closed: events for it are late and
 * open no new journal at that path.) */
static void close_done(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	char path[PATH_MAX] = "";

	tl_metric_add(M_CLOSED, NULL, 1);
	timeline_unlink(tl);
	if (tl->journal)
		snprintf(path, sizeof(path), "%s", tl_journal_path(tl->journal));
	tl_journal_discard(tl->journal);
	tl->journal = NULL;
	if (path[0])
		fs_detached(t, FSJOB_UNLINK, -1, path);
	timeline_free(tl);
	tl_timelines_retention_run(t);
}

/* ---- the document writer ---- */

#define WRITER_CHUNK (64u * 1024)

void writer_free(struct tl_loop *loop, struct writer *w)
{
	if (!w)
		return;
	if (w->job) {
		/* Not before a drain (writers_wait): if it ever were, the
		 * worker owns the descriptor and the temp file now. */
		w->job->ud = NULL;
		w->tmp[0] = '\0';
	}
	tl_timer_free(w->timer);
	if (w->pid > 0) {
		/* Given up (shutdown): its temp file, if any, is removed by
		 * the next start's scan; the timeline stays journaled. */
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	if (w->pid_fd >= 0) {
		tl_loop_del_io(loop, w->pid_fd);
		close(w->pid_fd);
	}
	if (w->out_fd >= 0)
		close(w->out_fd);
	if (w->fd >= 0)
		close(w->fd);
	/* Only a writer given up on (shutdown past close_wait_ms, or a failed
	 * write) leaves its temp file: its timeline stays journaled. */
	if (w->tmp[0])
		unlink(w->tmp);
	state_release(&w->snap);
	tl_buf_free(&w->buf);
	for (unsigned i = 0; i < w->n_spare; i++)
		free(w->spare[i]);
	tl_buf_free(&w->held);
	free(w->ns);
	free(w->name);
	free(w->path);
	free(w);
}

/* The end, on the loop (doc_commit, as the worker does it). */
static int writer_commit(struct writer *w)
{
	bool renamed;
	int fd = w->fd, r;

	w->fd = -1;
	r = doc_commit(fd, w->tmp, w->path, w->dir, &renamed);
	if (renamed)
		w->tmp[0] = '\0';
	return r;
}

static void writer_finish(struct timeline *tl, int err);

static void commit_done(struct fsjob *job)
{
	struct timeline *tl = job->ud;
	struct writer *w = tl ? tl->writer : NULL;
	int r = job->result;

	if (!w) {
		/* its writer was given up on: the temp file is the job's */
		if (!job->renamed && job->tmp[0])
			unlink(job->tmp);
		free(job);
		return;
	}
	w->job = NULL;
	w->fd = -1; /* closed by the worker */
	if (job->renamed)
		w->tmp[0] = '\0';
	free(job);
	writer_finish(tl, -r);
}

/* writer_commit on the worker: the loop goes on while the disk syncs, and
 * commit_done finishes the close. > 0 once queued; done here (0 or -errno)
 * when it cannot be (shutdown, no thread, no memory). */
static int writer_commit_off_loop(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	struct fsjob *job = t->sync_fs ? NULL : calloc(1, sizeof(*job));

	if (!job)
		return writer_commit(w);
	job->type = FSJOB_COMMIT;
	job->fd = w->fd;
	snprintf(job->tmp, sizeof(job->tmp), "%s", w->tmp);
	snprintf(job->path, sizeof(job->path), "%s", w->path);
	snprintf(job->dir, sizeof(job->dir), "%s", w->dir);
	job->chain = &w->chain;
	job->done = commit_done;
	job->ud = tl;
	if (tl_fsworker_submit(t->fsw, job) < 0) {
		free(job);
		return writer_commit(w);
	}
	w->fd = -1;
	w->job = job;
	return 1;
}

/* The temp file, in the document's directory, under a short name of its
 * own (one derived from the document's name passed NAME_MAX: item 5 of the
 * hostile-input audit). */
static int writer_open(struct writer *w)
{
	if (mkdir(w->dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	if (snprintf(w->tmp, sizeof(w->tmp), "%s/" TL_EXPORT_TMP_PREFIX "XXXXXX" TL_EXPORT_TMP_SUFFIX,
		     w->dir) >= (int)sizeof(w->tmp)) {
		w->tmp[0] = '\0';
		return -ENAMETOOLONG;
	}
	w->fd = mkostemps(w->tmp, (int)strlen(TL_EXPORT_TMP_SUFFIX), O_CLOEXEC);
	if (w->fd < 0) {
		w->tmp[0] = '\0';
		return -errno;
	}
	return 0;
}

/* ---- findings, off the loop ---- */

/* The findings of docs/findings.md need the whole document parsed (~0.2 s
 * for 20k events with json-c): too long for a loop step, and the tree's
 * memory would stay in this process's heap. So once the temp file is
 * written, termline-findings (a small program of its own, started with
 * posix_spawn: no copy of this process's page tables, unlike fork) reads
 * it, writes the document with its findings in place atomically (temp,
 * fsync, rename, fsync of the directory: those syncs leave the loop too),
 * removes the temp file and prints how many findings it wrote. Its exit
 * reaches the loop through a pidfd. Until then the timeline is closing,
 * served from memory as before. If it cannot run or fails, the temp file
 * is committed as it is: a valid document with no findings. */

static int helper_pid_cb(struct tl_loop *loop, int fd, uint32_t events, void *userdata);
static void writer_finish(struct timeline *tl, int err);
static int writer_commit(struct writer *w);
static int writer_commit_off_loop(struct timeline *tl);

static int helper_start(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	struct tl_child child;
	const char *file = strrchr(w->path, '/');
	char *argv[5], *envp[] = { NULL };
	int r;

	if (!file || w->tmp[0] == '\0')
		return -EINVAL;
	argv[0] = t->findings_helper;
	argv[1] = w->tmp;
	argv[2] = w->dir;
	argv[3] = (char *)file + 1;
	argv[4] = NULL;
	/* An empty environment; stdout a pipe, stdin /dev/null and neither
	 * the signal mask the agent reads through a signalfd nor ignored
	 * dispositions (child.h). */
	r = tl_child_spawn(t->findings_helper, false, argv, envp, &child);
	if (r < 0) {
		w->pid = -1;
		return r;
	}
	w->pid = child.pid;
	w->out_fd = child.out_fd;
	/* Without a pidfd (kernel < 5.3) the writer's timer polls the exit. */
	w->pid_fd = child.pid_fd;
	if (w->pid_fd >= 0 && tl_loop_add_io(t->loop, w->pid_fd, EPOLLIN, helper_pid_cb, tl) < 0) {
		close(w->pid_fd);
		w->pid_fd = -1;
	}
	if (w->pid_fd >= 0) {
		/* The exit wakes the loop: no more ticks needed. */
		tl_timer_free(w->timer);
		w->timer = NULL;
	}
	return 0;
}

/* > 0 while the helper runs, 0 once the document is in place, -errno. */
static int helper_poll(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	siginfo_t si;
	char out[32];
	ssize_t n = -1;
	unsigned long long count = 0, failed = 0;
	struct stat st;
	bool ok;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)w->pid, &si, WEXITED | WNOHANG) < 0) {
		if (errno == EINTR)
			return 1;
		si.si_code = 0; /* not ours any more: treat as failed */
	} else if (si.si_pid == 0) {
		return 1;
	}
	w->pid = -1;
	if (w->pid_fd >= 0) {
		tl_loop_del_io(t->loop, w->pid_fd);
		close(w->pid_fd);
		w->pid_fd = -1;
	}
	if (w->out_fd >= 0) {
		n = read(w->out_fd, out, sizeof(out) - 1);
		close(w->out_fd);
		w->out_fd = -1;
	}
	ok = si.si_code == CLD_EXITED && si.si_status == 0 && n > 0;
	if (ok) {
		char *end;

		out[n] = '\0';
		errno = 0;
		count = strtoull(out, &end, 10);
		ok = errno == 0 && end != out;
		/* then the failed requests it counted */
		if (ok && *end == ' ') {
			char *p = end + 1;

			failed = strtoull(p, &end, 10);
			ok = errno == 0 && end != p;
			if (ok)
				w->failed = (int64_t)failed;
		}
		ok = ok && (*end == '\n' || *end == '\0');
	}
	if (ok && stat(w->path, &st) == 0) {
		/* The helper unlinked the temp file: this last descriptor frees
		 * its pages, on the worker. */
		if (w->fd >= 0)
			fs_detached(t, FSJOB_CLOSE, w->fd, NULL);
		w->fd = -1;
		w->tmp[0] = '\0'; /* removed by the helper */
		w->bytes = (uint64_t)st.st_size;
		w->findings = (size_t)count;
		return 0;
	}
	tl_warn("timeline %s: %s failed (%s %d): its document is written without findings",
		tl->s.uid, t->findings_helper, si.si_code == CLD_EXITED ? "exit" : "signal",
		si.si_status);
	if (access(w->tmp, F_OK) < 0)
		return -EIO; /* not written: the close is retried */
	return writer_commit_off_loop(tl);
}

static int helper_pid_cb(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
			 void *userdata)
{
	struct timeline *tl = userdata;
	int r = helper_poll(tl);

	if (r <= 0)
		writer_finish(tl, -r);
	return 0;
}

/* The helper: cfg's path ("" turns it off), else next to this program
 * (installed side by side, or termlined in the build tree's daemon/ and
 * the helper in daemon/store/), else the libexec directory it is
 * installed to. */
int findings_helper_find(const char *configured, char **ret)
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

static void chunk_done(struct fsjob *job)
{
	struct timeline *tl = job->ud;
	struct writer *w = tl->writer;

	/* The writer waits for its chunks before it ends (writer_step). */
	w->inflight--;
	if (job->result < 0 && !w->werr)
		w->werr = job->result;
	if (w->n_spare < WRITER_INFLIGHT_MAX) {
		w->spare[w->n_spare] = job->data;
		w->spare_cap[w->n_spare++] = job->cap;
	} else {
		free(job->data);
	}
	free(job);
}

/* w->buf to the file: written by the worker (the loop only encodes the
 * document: a 64 KiB write(2) took milliseconds of the loop's system time
 * on the test VM), or here when it cannot be queued. 0 or -errno. */
static int writer_chunk(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	struct fsjob *job = NULL;
	int r;

	if (!t->sync_fs && w->buf.len > 0 && (job = calloc(1, sizeof(*job)))) {
		job->type = FSJOB_WRITE;
		job->fd = w->fd;
		job->off = w->bytes;
		job->chain = &w->chain;
		job->done = chunk_done;
		job->ud = tl;
		job->data = w->buf.p;
		job->len = w->buf.len;
		job->cap = w->buf.cap;
		tl_buf_init(&w->buf, 0);
		if (w->n_spare) {
			w->n_spare--;
			w->buf.p = w->spare[w->n_spare];
			w->buf.cap = w->spare_cap[w->n_spare];
		}
		if (tl_fsworker_submit(t->fsw, job) == 0) {
			/* w->buf is empty now: the caller adds nothing more */
			w->inflight++;
			w->bytes += job->len;
			return 0;
		}
		/* not queued: the chunk goes back, written here */
		tl_buf_free(&w->buf);
		w->buf.p = job->data;
		w->buf.len = job->len;
		w->buf.cap = job->cap;
		free(job);
	}
	r = tl_write_all(w->fd, w->buf.p, w->buf.len, NULL);
	if (r < 0)
		return r;
	(void)sync_file_range(w->fd, (off64_t)w->bytes, (off64_t)w->buf.len, SYNC_FILE_RANGE_WRITE);
	return 0;
}

/* One chunk of the document: > 0 more to do, 0 written and renamed, or
 * -errno. */
static int writer_step(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	int q, r;

	if (w->pid > 0)
		return helper_poll(tl);
	if (w->job)
		return 1; /* the commit runs on the worker */
	/* Chunks on the worker: none may be left when the file is handed
	 * on or given up (it shares the descriptor). */
	if (w->werr)
		return w->inflight ? 1 : w->werr;
	if (w->inflight >= WRITER_INFLIGHT_MAX || (w->cur.phase == 3 && w->inflight))
		return 1;
	if (w->cur.phase != 3) {
		if (t->writer_hook && !t->writer_hook(t->writer_hook_ud))
			return 1; /* held by a test */
		if (w->fd < 0) {
			r = writer_open(w);
			if (r < 0)
				return r;
		}
		tl_buf_reset(&w->buf);
		q = document_write(&w->snap, &t->rec, &w->cur, &w->buf, WRITER_CHUNK);
		r = q < 0 ? q : writer_chunk(tl);
		if (r < 0) {
			w->werr = r; /* ends the writer once its chunks are back */
			return w->inflight ? 1 : r;
		}
		w->bytes += w->buf.len;
		if (q > 0 || w->inflight)
			return 1;
	}
	if (t->findings_helper) {
		r = helper_start(tl);
		if (r == 0)
			return 1;
		tl_warn("timeline %s: cannot run %s (%s): its document is written without findings",
			tl->s.uid, t->findings_helper, strerror(-r));
	}
	return writer_commit_off_loop(tl);
}

static void writer_finish(struct timeline *tl, int err)
{
	struct tl_timelines *t = tl->store;
	struct writer *w = tl->writer;
	int r = -err;

	if (r == 0) {
		struct summary sm;

		timeline_summary(tl, &sm);
		sm.complete = state_complete(&w->snap);
		sm.failed = w->failed;
		r = closed_add(t, w->ns, w->name, tl->s.uid, w->path, w->bytes, tl_now_real_ns(),
			       timeline_started(tl), w->snap.n, w->findings, &sm);
	}
	if (r == 0) {
		tl_metric_add(M_LATE, NULL, w->late);
		close_done(tl);
		return;
	}
	/* Not written: what was held aside joins the timeline (already
	 * journaled, hence replaying), and the close is retried. */
	tl->writer = NULL;
	tl->s.loss.kernel += w->held_kernel;
	tl->s.loss.disk += w->held_disk;
	tl->s.loss.dropped += w->held_dropped;
	tl->replaying = true;
	for (size_t o = 0; o + 8 <= w->held.len;) {
		uint32_t len;

		memcpy(&len, w->held.p + o, 4); /* written by tl_journal_frame: LE */
		len = le32toh(len);
		replay_frame(tl, (const uint8_t *)w->held.p + o + 8, len);
		o += 8 + len;
	}
	tl->replaying = false;
	writer_free(t->loop, w);
	close_failed(tl, err);
}

static void writer_timer_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_,
			    void *userdata)
{
	struct timeline *tl = userdata;
	int r = writer_step(tl);

	if (r <= 0)
		writer_finish(tl, -r); /* frees the timer: allowed in its callback */
}

/* Starts writing tl's document: the loop's share per iteration is one
 * 64 KiB chunk (~0.5 ms of CPU here), the final fsync and the rename. */
static int writer_start(struct timeline *tl)
{
	struct tl_timelines *t = tl->store;
	char file[400];
	const char *ns = meta_name_ok(tl, "namespace"), *name = meta_name_ok(tl, "name");
	struct writer *w;
	int r;

	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = -1;
	w->failed = -1;
	w->pid = -1;
	w->pid_fd = -1;
	w->out_fd = -1;
	tl_buf_init(&w->buf, 0);
	tl_buf_init(&w->held, 0);
	{
		char path[PATH_MAX];

		r = doc_location(tl, w->dir, sizeof(w->dir), file, sizeof(file), path, sizeof(path));
		if (r < 0)
			goto fail;
		w->path = strdup(path);
	}
	w->ns = ns ? strdup(ns) : NULL;
	w->name = name ? strdup(name) : NULL;
	if ((ns && !w->ns) || (name && !w->name) || !w->path) {
		r = -ENOMEM;
		goto fail;
	}
	r = state_copy(&tl->s, &w->snap);
	if (r < 0)
		goto fail;
	r = tl_loop_add_timer(t->loop, 1, 1, writer_timer_cb, tl, &w->timer);
	if (r < 0)
		goto fail;
	tl->writer = w;
	return 0;
fail:
	writer_free(t->loop, w);
	return r;
}

/* Held aside while closing (see timeline.h): journaled, and kept to be
 * replayed into the timeline if the write fails. */
void hold_frame(struct timeline *tl, const void *body, size_t len)
{
	struct writer *w = tl->writer;

	w->late++;
	if (w->n_held >= tl->store->max_events) {
		w->held_dropped++;
		return;
	}
	journal_defs(tl);
	journal_raw(tl, body, len);
	tl_journal_frame(&w->held, body, len);
	if (w->held.err) {
		w->held_dropped++;
		return;
	}
	w->n_held++;
}

void close_cb(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_, void *userdata)
{
	struct timeline *tl = userdata;
	int r;

	if (tl->writer)
		return;
	/* What a source still holds of this Pod comes in first (it lands in
	 * this timeline: it is not closing yet). */
	if (tl->store->before_close)
		tl->store->before_close(tl->store->before_close_ud, tl->s.uid);
	r = writer_start(tl);
	if (r < 0)
		close_failed(tl, -r);
}

/* Shutdown: give running writers close_wait_ms to finish. The worker's
 * jobs finish first (their callbacks may close timelines); from then on
 * the file-system calls run inline. */
void writers_wait(struct tl_timelines *t)
{
	uint64_t deadline = tl_now_mono_ms() + t->close_wait_ms;

	tl_fsworker_drain(t->fsw);
	t->sync_fs = true;

	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		struct timeline *tl = t->buckets[b];

		while (tl) {
			struct timeline *next = tl->hnext;

			while (tl->writer) {
				int r = writer_step(tl);

				if (r <= 0) {
					writer_finish(tl, -r); /* may free tl */
					break;
				}
				if (tl_now_mono_ms() >= deadline)
					break; /* given up: freed with its timeline */
				if (t->writer_hook || tl->writer->pid > 0)
					usleep(1000); /* held, or the helper runs: do not spin */
			}
			tl = next;
		}
	}
}
