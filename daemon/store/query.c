/* SPDX-License-Identifier: Apache-2.0 */
/* The store's queries: the list of timelines, and documents served a
 * chunk at a time (a snapshot of an open timeline, the file of a closed
 * one) while the loop goes on. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "export-json.h"
#include "store-int.h"

/* What the document of an open timeline says now: while it is closing,
 * the document being written. */
static const struct tl_state *current(const struct timeline *tl)
{
	return tl->closing ? close_snapshot(tl->closing) : &tl->s;
}

/* ---- the list ---- */

static bool list_match(const struct tl_list_filter *f, const struct tl_timeline_info *i)
{
	int64_t at = i->deletion_ns ? i->deletion_ns : i->started_ns;

	if (!f)
		return true;
	if (f->ns && (!i->ns || strcmp(f->ns, i->ns) != 0))
		return false;
	if (f->owner_kind && (!i->owner_kind || strcmp(f->owner_kind, i->owner_kind) != 0))
		return false;
	if (f->owner_name && (!i->owner_name || strcmp(f->owner_name, i->owner_name) != 0))
		return false;
	if (f->since_ns && at < f->since_ns)
		return false;
	if (f->until_ns && at > f->until_ns)
		return false;
	return true;
}

int tl_timelines_foreach(struct tl_timelines *t, const struct tl_list_filter *f,
			 int (*cb)(void *ud, const struct tl_timeline_info *info), void *ud)
{
	int n = 0, r;

	for (size_t k = 0; k < t->closed.n; k++) {
		const struct closed *c = &t->closed.v[k];
		struct tl_timeline_info i = {
			.ns = c->ns, .name = c->name, .uid = c->uid, .open = false,
			.events = c->events, .findings = c->findings, .owner_kind = c->owner_kind,
			.owner_name = c->owner_name, .deletion_ns = c->deletion_ns,
			.started_ns = c->started_ns, .complete = c->complete,
			.failed_requests = c->failed,
		};

		if (!c->uid[0] || !list_match(f, &i))
			continue;
		r = cb(ud, &i);
		if (r < 0)
			return r;
		n++;
	}
	for (struct index_node *x = index_next(&t->open, NULL); x; x = index_next(&t->open, x)) {
		const struct tl_state *s = current(tl_of(x));
		/* findings and failed requests are computed when it closes */
		struct tl_timeline_info i = {
			.ns = state_ns(s), .name = state_name(s), .uid = s->uid, .open = true,
			.events = s->n, .deletion_ns = s->deletion_ns, .started_ns = state_started(s),
			.complete = state_complete(s), .failed_requests = -1,
		};

		/* both or neither (pod-meta.h) */
		if (s->meta && s->meta->owner_kind[0]) {
			i.owner_kind = s->meta->owner_kind;
			i.owner_name = s->meta->owner_name;
		}
		if (!list_match(f, &i))
			continue;
		r = cb(ud, &i);
		if (r < 0)
			return r;
		n++;
	}
	return n;
}

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

static bool name_matches(const char *ns, const char *name, const char *uid, const char *want_ns,
			 const char *want_name)
{
	if (tl_export_name_ok(ns) && tl_export_name_ok(name))
		return strcmp(ns, want_ns) == 0 && strcmp(name, want_name) == 0;
	/* Unnamed Pods are addressed as _unknown/UID, like their files. */
	return strcmp(want_ns, TL_UNKNOWN_NS) == 0 && strcmp(want_name, uid) == 0;
}

int tl_timelines_open_doc(struct tl_timelines *t, const char *ns, const char *name,
			  const char *uid, struct tl_doc_reader **ret)
{
	const struct tl_state *best_open = NULL;
	const struct closed *best_closed = NULL;
	int64_t best = INT64_MIN;
	struct tl_doc_reader *r;

	for (size_t i = 0; i < t->closed.n; i++) {
		const struct closed *c = &t->closed.v[i];

		if (!c->uid[0] || !name_matches(c->ns, c->name, c->uid, ns, name))
			continue;
		if (uid && strcmp(uid, c->uid) != 0)
			continue;
		if (!best_closed || c->started_ns >= best) {
			best_closed = c;
			best = c->started_ns;
		}
	}
	for (struct index_node *n = index_next(&t->open, NULL); n; n = index_next(&t->open, n)) {
		const struct tl_state *s = current(tl_of(n));

		if (!name_matches(state_ns(s), state_name(s), s->uid, ns, name))
			continue;
		if (uid && strcmp(uid, s->uid) != 0)
			continue;
		if ((!best_open && !best_closed) || state_started(s) >= best) {
			best_open = s;
			best = state_started(s);
		}
	}
	if (!best_open && !best_closed)
		return -ENOENT;
	if (t->n_readers >= STORE_MAX_READERS)
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
		if (state_copy(best_open, &r->snap) < 0) {
			free(r);
			return -ENOMEM;
		}
	} else {
		r->fd = open(best_closed->path, O_RDONLY | O_CLOEXEC);
		if (r->fd < 0) {
			int e = -errno;

			free(r);
			return e;
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
		q = doc_write(&r->snap, &r->store->rec, &r->cur, &r->buf, STORE_READ_CHUNK);
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
	char chunk[STORE_READ_CHUNK];
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
