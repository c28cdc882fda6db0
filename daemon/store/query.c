/* SPDX-License-Identifier: Apache-2.0 */
/* Serving documents: a snapshot of an open timeline or the file of a closed
 * one, read by the HTTP server a chunk at a time. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
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

/* ---- serving documents ---- */

struct tl_doc_reader {
	struct tl_timelines *store;
	bool open;             /* a snapshot of an open timeline, else a file */
	struct tl_state snap;
	struct doc_cursor cur;
	struct tl_buf buf;
	size_t off;            /* served part of buf */
	int fd;
	bool done;
};

int tl_timelines_open_doc(struct tl_timelines *t, const char *ns, const char *name,
			  const char *uid, struct tl_doc_reader **ret)
{
	struct timeline *best_open = NULL;
	struct closed *best_closed = NULL;
	int64_t best = INT64_MIN;
	struct tl_doc_reader *r;

	for (size_t i = 0; i < t->n_closed; i++) {
		struct closed *c = &t->closed[i];

		if (!c->uid[0] || !name_matches(c->ns, c->name, c->uid, ns, name))
			continue;
		if (uid && strcmp(uid, c->uid) != 0)
			continue;
		if (!best_closed || c->started_ns >= best) {
			best_closed = c;
			best = c->started_ns;
		}
	}
	for (size_t b = 0; b < HASH_BUCKETS; b++) {
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext) {
			if (!name_matches(meta_str(tl, "namespace"), meta_str(tl, "name"), tl->s.uid, ns, name))
				continue;
			if (uid && strcmp(uid, tl->s.uid) != 0)
				continue;
			if ((!best_open && !best_closed) || timeline_started(tl) >= best) {
				best_open = tl;
				best = timeline_started(tl);
			}
		}
	}
	if (!best_open && !best_closed)
		return -ENOENT;
	if (t->n_readers >= MAX_READERS)
		return -EBUSY;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->store = t;
	r->fd = -1;
	tl_buf_init(&r->buf, 0);
	if (best_open) {
		/* A copy of the compact state: ~16 + ~30 bytes per event, a
		 * memcpy of a few MB at most; the client then reads at its own
		 * pace while the timeline goes on. */
		r->open = true;
		if (state_copy(&best_open->s, &r->snap) < 0) {
			free(r);
			return -ENOMEM;
		}
	} else {
		r->fd = open(best_closed->path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0) {
			int e = -errno;

			free(r);
			return e == -ENOENT ? -ENOENT : e;
		}
	}
	t->n_readers++;
	*ret = r;
	return 0;
}

ssize_t tl_doc_read(struct tl_doc_reader *r, char *buf, size_t max)
{
	size_t n;

	if (!r->open) {
		ssize_t k;

		do
			k = read(r->fd, buf, max);
		while (k < 0 && errno == EINTR);
		return k < 0 ? -errno : k;
	}
	if (r->off == r->buf.len) {
		int q;

		if (r->done)
			return 0;
		tl_buf_reset(&r->buf);
		r->off = 0;
		q = document_write(&r->snap, &r->store->rec, &r->cur, &r->buf, READ_CHUNK);
		if (q < 0)
			return q;
		if (q == 0)
			r->done = true;
	}
	n = r->buf.len - r->off;
	if (n > max)
		n = max;
	memcpy(buf, r->buf.p + r->off, n);
	r->off += n;
	return (ssize_t)n;
}

void tl_doc_reader_free(struct tl_doc_reader *r)
{
	if (!r)
		return;
	r->store->n_readers--;
	state_release(&r->snap);
	tl_buf_free(&r->buf);
	if (r->fd >= 0)
		close(r->fd);
	free(r);
}

int tl_timelines_get(struct tl_timelines *t, const char *ns, const char *name, const char *uid,
		     char **ret, size_t *ret_len)
{
	struct tl_doc_reader *r;
	struct tl_buf b;
	char chunk[READ_CHUNK];
	ssize_t n;
	int q;

	q = tl_timelines_open_doc(t, ns, name, uid, &r);
	if (q < 0)
		return q;
	tl_buf_init(&b, 0);
	while ((n = tl_doc_read(r, chunk, sizeof(chunk))) > 0)
		tl_buf_add(&b, chunk, (size_t)n);
	tl_doc_reader_free(r);
	if (n < 0) {
		tl_buf_free(&b);
		return (int)n;
	}
	*ret = tl_buf_steal(&b, ret_len);
	return *ret ? 0 : -ENOMEM;
}
