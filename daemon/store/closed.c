/* SPDX-License-Identifier: Apache-2.0 */
/* The closed documents of the store: their index (loaded at start from
 * STATE/timelines), retention by age and bytes, the disk metrics. */
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

/* ---- closed documents ---- */

void closed_clear(struct closed *c)
{
	free(c->ns);
	free(c->name);
	free(c->path);
	free(c->owner_kind);
	free(c->owner_name);
}

int closed_add(struct tl_timelines *t, const char *ns, const char *name, const char *uid,
		      const char *path, uint64_t bytes, int64_t mtime_ns, int64_t started_ns,
		      size_t events, size_t findings, const struct summary *sm)
{
	struct closed *c;

	if (t->n_closed == t->cap_closed) {
		size_t ncap = t->cap_closed ? t->cap_closed * 2 : 64;
		struct closed *n = realloc(t->closed, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->closed = n;
		t->cap_closed = ncap;
	}
	c = &t->closed[t->n_closed];
	memset(c, 0, sizeof(*c));
	c->ns = ns ? strdup(ns) : NULL;
	c->name = name ? strdup(name) : NULL;
	c->path = strdup(path);
	c->owner_kind = sm->owner_kind ? strdup(sm->owner_kind) : NULL;
	c->owner_name = sm->owner_name ? strdup(sm->owner_name) : NULL;
	if ((ns && !c->ns) || (name && !c->name) || !c->path || (sm->owner_kind && !c->owner_kind) ||
	    (sm->owner_name && !c->owner_name)) {
		closed_clear(c);
		return -ENOMEM;
	}
	snprintf(c->uid, sizeof(c->uid), "%s", uid ? uid : "");
	c->bytes = bytes;
	c->mtime_ns = mtime_ns;
	c->started_ns = started_ns;
	c->events = events;
	c->findings = findings;
	c->deletion_ns = sm->deletion_ns;
	c->failed = sm->failed;
	c->complete = sm->complete;
	t->n_closed++;
	t->closed_bytes += bytes;
	return 0;
}

static uint64_t journal_bytes_total(struct tl_timelines *t)
{
	uint64_t journal = 0;

	for (size_t b = 0; b < HASH_BUCKETS; b++)
		for (struct timeline *tl = t->buckets[b]; tl; tl = tl->hnext)
			journal += tl_journal_bytes(tl->journal);
	return journal;
}

void update_disk_metrics(struct tl_timelines *t)
{
	uint64_t journal = journal_bytes_total(t);

	tl_metric_set(M_JOURNAL, NULL, (int64_t)journal);
	tl_metric_set(M_JOURNAL_FDS, NULL, tl_jpool_open_fds(t->jpool));
	tl_metric_set(M_DISK, NULL, (int64_t)(journal + t->closed_bytes));
}

static void closed_remove_at(struct tl_timelines *t, size_t i)
{
	t->closed_bytes -= t->closed[i].bytes;
	closed_clear(&t->closed[i]);
	memmove(&t->closed[i], &t->closed[i + 1], (t->n_closed - i - 1) * sizeof(*t->closed));
	t->n_closed--;
}

static int cmp_closed_mtime(const void *a, const void *b)
{
	const struct closed *x = a, *y = b;

	return (x->mtime_ns > y->mtime_ns) - (x->mtime_ns < y->mtime_ns);
}

int tl_timelines_retention_run(struct tl_timelines *t)
{
	int64_t now = tl_now_real_ns();
	int r = 0;

	/* Open timelines' journals cannot be removed, but they use the same
	 * disk: closed documents make room for them. */
	uint64_t journals = journal_bytes_total(t);

	/* Closed in order, so the array is (nearly) oldest first already.
	 * qsort with a NULL base is undefined even for 0 elements. */
	if (t->n_closed > 1)
		qsort(t->closed, t->n_closed, sizeof(*t->closed), cmp_closed_mtime);
	while (t->n_closed > 0) {
		struct closed *c = &t->closed[0];
		bool too_old = t->retention_hours &&
			       c->mtime_ns < now - (int64_t)t->retention_hours * 3600 * NS_PER_S;
		bool too_big = t->retention_bytes && t->closed_bytes + journals > t->retention_bytes;

		if (!too_old && !too_big)
			break;
		if (unlink(c->path) < 0 && errno != ENOENT) {
			r = -errno;
			note_disk_error(NULL);
			break;
		}
		closed_remove_at(t, 0);
	}
	update_disk_metrics(t);
	return r;
}

/* Failed requests of a document as kubectl-termline counts them: a request
 * seen twice (socket and log) once. */
static int64_t doc_failed_requests(struct json_object *doc)
{
	struct tl_model m;
	int64_t n = -1;

	if (tl_model_build(doc, &m) == 0) {
		n = 0;
		for (size_t i = 0; i < m.n_req; i++)
			n += m.reqs[i].failed && !m.reqs[i].dup;
	}
	tl_model_done(&m);
	return n;
}

static size_t array_len(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_array))
		return 0;
	return json_object_array_length(v);
}

const char *obj_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static void scan_closed_file(struct tl_timelines *t, const char *dir, const char *file)
{
	char path[PATH_MAX];
	struct json_object *doc, *pod = NULL, *events, *first, *owner = NULL, *v;
	struct summary sm = { .failed = -1 };
	struct stat st;
	int64_t started = 0;

	if (join_path(path, sizeof(path), dir, file) < 0 || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (tl_export_is_temp(file)) {
		/* A temp file left by a crash inside tl_export_write_atomic. */
		unlink(path);
		return;
	}
	/* Any name ending in .json is a document, ".hidden_UID.json" too. */
	if (strlen(file) < 6 || strcmp(file + strlen(file) - 5, ".json") != 0)
		return;
	doc = json_object_from_file(path);
	if (doc && json_object_is_type(doc, json_type_object))
		json_object_object_get_ex(doc, "pod", &pod);
	if (doc && json_object_object_get_ex(doc, "events", &events) &&
	    json_object_is_type(events, json_type_array) && json_object_array_length(events) > 0) {
		first = json_object_array_get_idx(events, 0);
		if (tl_time_parse(obj_str(first, "time"), &started) < 0)
			started = 0;
		for (size_t i = 0; i < json_object_array_length(events); i++) {
			struct json_object *e = json_object_array_get_idx(events, i);
			const char *type = obj_str(e, "type");

			if (type && strcmp(type, "pod.deletion_requested") == 0 &&
			    tl_time_parse(obj_str(e, "time"), &sm.deletion_ns) == 0)
				break;
			sm.deletion_ns = 0;
		}
		sm.failed = doc_failed_requests(doc);
	}
	if (pod && json_object_object_get_ex(pod, "owner", &owner) &&
	    json_object_is_type(owner, json_type_object)) {
		sm.owner_kind = obj_str(owner, "kind");
		sm.owner_name = obj_str(owner, "name");
	}
	sm.complete = doc && json_object_object_get_ex(doc, "complete", &v) &&
		      json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
	/* Unreadable documents still count against retention. */
	closed_add(t, pod ? obj_str(pod, "namespace") : NULL, pod ? obj_str(pod, "name") : NULL,
		   pod ? obj_str(pod, "uid") : NULL, path, (uint64_t)st.st_size,
		   (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec, started,
		   doc ? array_len(doc, "events") : 0, doc ? array_len(doc, "findings") : 0, &sm);
	json_object_put(doc);
}

static bool dot_or_dotdot(const char *s)
{
	return strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

int scan_closed(struct tl_timelines *t)
{
	DIR *top, *sub;
	struct dirent *de, *fe;
	char dir[PATH_MAX];

	top = opendir(t->timelines_dir);
	if (!top)
		return -errno;
	while ((de = readdir(top))) {
		/* A namespace may start with '.': only . and .. are skipped. */
		if (dot_or_dotdot(de->d_name))
			continue;
		if (join_path(dir, sizeof(dir), t->timelines_dir, de->d_name) < 0)
			continue;
		sub = opendir(dir);
		if (!sub)
			continue;
		while ((fe = readdir(sub)))
			if (!dot_or_dotdot(fe->d_name))
				scan_closed_file(t, dir, fe->d_name);
		closedir(sub);
	}
	closedir(top);
	return 0;
}
