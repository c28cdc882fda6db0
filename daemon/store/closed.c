/* SPDX-License-Identifier: Apache-2.0 */
/* The closed documents of a store (closed.h). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "clock.h"
#include "closed.h"
#include "fileio.h"
#include "findings.h"
#include "macro.h"
#include "metrics.h"

#define NS_PER_S 1000000000LL

static void closed_clear(struct closed *c)
{
	free(c->ns);
	free(c->name);
	free(c->path);
	free(c->owner_kind);
	free(c->owner_name);
}

static char *dup_opt(const char *s, bool *fail)
{
	char *d = s ? strdup(s) : NULL;

	if (s && !d)
		*fail = true;
	return d;
}

int closed_add(struct closed_index *x, const struct closed *c)
{
	struct closed *n;
	bool fail = false;

	if (x->n == x->cap) {
		size_t ncap = x->cap ? x->cap * 2 : 64;

		n = realloc(x->v, ncap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		x->v = n;
		x->cap = ncap;
	}
	n = &x->v[x->n];
	*n = *c;
	n->ns = dup_opt(c->ns, &fail);
	n->name = dup_opt(c->name, &fail);
	n->path = dup_opt(c->path, &fail);
	n->owner_kind = dup_opt(c->owner_kind, &fail);
	n->owner_name = dup_opt(c->owner_name, &fail);
	if (fail || !n->path) {
		closed_clear(n);
		return -ENOMEM;
	}
	x->n++;
	x->bytes += c->bytes;
	return 0;
}

struct closed *closed_find(struct closed_index *x, const char *uid)
{
	for (size_t i = 0; i < x->n; i++)
		if (strcmp(x->v[i].uid, uid) == 0)
			return &x->v[i];
	return NULL;
}

void closed_free(struct closed_index *x)
{
	for (size_t i = 0; i < x->n; i++)
		closed_clear(&x->v[i]);
	free(x->v);
	memset(x, 0, sizeof(*x));
}

/* ---- retention ---- */

static void remove_at(struct closed_index *x, size_t i)
{
	x->bytes -= x->v[i].bytes;
	closed_clear(&x->v[i]);
	memmove(&x->v[i], &x->v[i + 1], (x->n - i - 1) * sizeof(*x->v));
	x->n--;
}

static int cmp_mtime(const void *a, const void *b)
{
	const struct closed *p = a, *q = b;

	return (p->mtime_ns > q->mtime_ns) - (p->mtime_ns < q->mtime_ns);
}

int closed_retention(struct closed_index *x, uint32_t hours, uint64_t max_bytes,
		     uint64_t extra_bytes, int64_t now_ns, struct tl_metric *errors)
{
	/* Closed in order, so the array is (nearly) oldest first already.
	 * qsort with a NULL base is undefined even for 0 elements. */
	if (x->n > 1)
		qsort(x->v, x->n, sizeof(*x->v), cmp_mtime);
	while (x->n > 0) {
		const struct closed *c = &x->v[0];
		bool too_old = hours && c->mtime_ns < now_ns - (int64_t)hours * 3600 * NS_PER_S;
		bool too_big = max_bytes && x->bytes + extra_bytes > max_bytes;

		if (!too_old && !too_big)
			break;
		if (unlink(c->path) < 0 && errno != ENOENT) {
			tl_metric_inc(errors, 1);
			return -errno;
		}
		remove_at(x, 0);
	}
	return 0;
}

/* ---- the scan at start ---- */

/* Failed requests of a document as kubectl-termline counts them. */
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

static const char *obj_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static void scan_file(struct closed_index *x, const char *dir, const char *file)
{
	char path[PATH_MAX];
	struct json_object *doc, *pod = NULL, *events, *first, *owner = NULL, *v;
	struct closed c = { .failed = -1 };
	struct stat st;
	int n = snprintf(path, sizeof(path), "%s/%s", dir, file);

	if (n < 0 || (size_t)n >= sizeof(path) || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (tl_file_is_temp(file)) {
		/* A temp file left by a crash while a document was written. */
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
		if (tl_time_parse(obj_str(first, "time"), &c.started_ns) < 0)
			c.started_ns = 0;
		for (size_t i = 0; i < json_object_array_length(events); i++) {
			struct json_object *e = json_object_array_get_idx(events, i);
			const char *type = obj_str(e, "type");

			if (type && strcmp(type, "pod.deletion_requested") == 0 &&
			    tl_time_parse(obj_str(e, "time"), &c.deletion_ns) == 0)
				break;
			c.deletion_ns = 0;
		}
		c.failed = doc_failed_requests(doc);
	}
	if (pod && json_object_object_get_ex(pod, "owner", &owner) &&
	    json_object_is_type(owner, json_type_object)) {
		c.owner_kind = (char *)obj_str(owner, "kind");
		c.owner_name = (char *)obj_str(owner, "name");
	}
	c.complete = doc && json_object_object_get_ex(doc, "complete", &v) &&
		     json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
	c.ns = pod ? (char *)obj_str(pod, "namespace") : NULL;
	c.name = pod ? (char *)obj_str(pod, "name") : NULL;
	tl_copy_str(c.uid, sizeof(c.uid), (pod ? obj_str(pod, "uid") : NULL) ?: "");
	c.path = path;
	c.bytes = (uint64_t)st.st_size;
	c.mtime_ns = (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec;
	c.events = doc ? array_len(doc, "events") : 0;
	c.findings = doc ? array_len(doc, "findings") : 0;
	/* Unreadable documents still count against retention. */
	closed_add(x, &c);
	json_object_put(doc);
}

static bool dot_or_dotdot(const char *s)
{
	return strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

int closed_scan(struct closed_index *x, const char *dir)
{
	DIR *top, *sub;
	struct dirent *de, *fe;
	char path[PATH_MAX];

	top = opendir(dir);
	if (!top)
		return -errno;
	while ((de = readdir(top))) {
		int n;

		/* A namespace may start with '.': only . and .. are skipped. */
		if (dot_or_dotdot(de->d_name))
			continue;
		n = snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		sub = opendir(path);
		if (!sub)
			continue;
		while ((fe = readdir(sub)))
			if (!dot_or_dotdot(fe->d_name))
				scan_file(x, path, fe->d_name);
		closedir(sub);
	}
	closedir(top);
	return 0;
}
