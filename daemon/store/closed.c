/* SPDX-License-Identifier: Apache-2.0 */
/* The closed documents of a store (closed.h). */
#include <dirent.h>
#include <fcntl.h>
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
#include "event.h"
#include "fileio.h"
#include "findings-model.h"
#include "journal.h"
#include "macro.h"
#include "metrics.h"
#include "tl-buf.h"

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

static int index_add(struct closed_index *x, const struct closed *c)
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

int closed_init(struct closed_index *x, const char *dir, const char *cache,
		struct tl_metric *errors)
{
	memset(x, 0, sizeof(*x));
	x->errors = errors;
	x->dir = strdup(dir);
	x->cache = cache ? strdup(cache) : NULL;
	return !x->dir || (cache && !x->cache) ? -ENOMEM : 0;
}

void closed_free(struct closed_index *x)
{
	for (size_t i = 0; i < x->n; i++)
		closed_clear(&x->v[i]);
	free(x->v);
	free(x->dir);
	free(x->cache);
	memset(x, 0, sizeof(*x));
}

/* ---- the cache (STATE/closed.idx) ----
 *
 * Journal frames (journal.c: length, CRC, body), one per document:
 *   'D' | path | uid | ns | name | ownerKind | ownerName   (varint length + bytes;
 *                                                           length 0: none)
 *       | bytes | mtime | started | events | findings | deletion | failed+1
 *       | complete (1 byte)                                (varints, times zigzag)
 *       [ | export (1 byte: enum closed_export) ]          (records before it: none)
 * path is relative to STATE/timelines. A later record of a path replaces
 * an earlier one (the export marked done is a record appended). */
#define CACHE_MAX_BYTES (64u << 20)

static void put_str(struct tl_buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	uint8_t v[10];

	tl_buf_add(b, v, tl_varint_put(v, n));
	tl_buf_add(b, s, n);
}

static void put_u(struct tl_buf *b, uint64_t u)
{
	uint8_t v[10];

	tl_buf_add(b, v, tl_varint_put(v, u));
}

/* c's record, framed, appended to out; c->path must be under x->dir. */
static void cache_record(const struct closed_index *x, const struct closed *c, struct tl_buf *out)
{
	size_t dl = strlen(x->dir);
	const char *rel = strncmp(c->path, x->dir, dl) == 0 && c->path[dl] == '/' ? c->path + dl + 1
										  : c->path;
	struct tl_buf b;

	tl_buf_init(&b, 0);
	tl_buf_addc(&b, 'D');
	put_str(&b, rel);
	put_str(&b, c->uid);
	put_str(&b, c->ns);
	put_str(&b, c->name);
	put_str(&b, c->owner_kind);
	put_str(&b, c->owner_name);
	put_u(&b, c->bytes);
	put_u(&b, tl_zigzag(c->mtime_ns));
	put_u(&b, tl_zigzag(c->started_ns));
	put_u(&b, c->events);
	put_u(&b, c->findings);
	put_u(&b, tl_zigzag(c->deletion_ns));
	put_u(&b, (uint64_t)(c->failed + 1));
	tl_buf_addc(&b, c->complete ? 1 : 0);
	tl_buf_addc(&b, (char)c->export);
	if (!b.err)
		tl_journal_frame(out, b.p, b.len);
	else
		out->err = b.err;
	tl_buf_free(&b);
}

struct rd {
	const uint8_t *p;
	size_t len, o;
	bool bad;
};

static uint64_t get_u(struct rd *r)
{
	uint64_t v = 0;
	size_t n = r->bad ? 0 : tl_varint_get(r->p + r->o, r->len - r->o, &v);

	if (!n)
		r->bad = true;
	r->o += n;
	return v;
}

/* A string of the record into dst (NULL when empty). */
static char *get_str(struct rd *r, char *dst, size_t size)
{
	uint64_t n = get_u(r);

	if (r->bad || n >= size || n > r->len - r->o) {
		r->bad = true;
		return NULL;
	}
	memcpy(dst, r->p + r->o, n);
	dst[n] = '\0';
	r->o += n;
	if (memchr(dst, '\0', n))
		r->bad = true;
	return n ? dst : NULL;
}

/* A decoded record: strings in its own buffers. */
struct cached {
	struct closed c;
	char path[64 + 256];          /* NS/FILE: a namespace, a file name */
	char ns[64], name[254], okind[64], oname[254];
	size_t seq; /* its place in the file: the last of a path wins */
	bool used;
};

/* 0, or -EBADMSG for a body that is not a whole record. */
static int cache_decode(const uint8_t *p, size_t len, struct cached *k)
{
	struct rd r = { .p = p, .len = len, .o = 1 };
	char uid[TL_UID_MAX];
	uint64_t failed;

	memset(&k->c, 0, sizeof(k->c));
	k->used = false;
	if (len < 1 || p[0] != 'D')
		return -EBADMSG;
	k->ns[0] = k->name[0] = k->okind[0] = k->oname[0] = '\0';
	k->c.path = get_str(&r, k->path, sizeof(k->path));
	if (!get_str(&r, uid, sizeof(uid)))
		r.bad = true;
	k->c.ns = get_str(&r, k->ns, sizeof(k->ns));
	k->c.name = get_str(&r, k->name, sizeof(k->name));
	k->c.owner_kind = get_str(&r, k->okind, sizeof(k->okind));
	k->c.owner_name = get_str(&r, k->oname, sizeof(k->oname));
	k->c.bytes = get_u(&r);
	k->c.mtime_ns = tl_unzigzag(get_u(&r));
	k->c.started_ns = tl_unzigzag(get_u(&r));
	k->c.events = (size_t)get_u(&r);
	k->c.findings = (size_t)get_u(&r);
	k->c.deletion_ns = tl_unzigzag(get_u(&r));
	failed = get_u(&r);
	if (r.bad || !k->c.path || failed > INT64_MAX || r.o + 1 > len || p[r.o] > 1)
		return -EBADMSG;
	k->c.failed = (int64_t)failed - 1;
	k->c.complete = p[r.o++];
	/* the export byte, absent from records written before it */
	if (r.o < len) {
		if (r.o + 1 != len || p[r.o] > CLOSED_EXPORT_DONE)
			return -EBADMSG;
		k->c.export = p[r.o];
	}
	memcpy(k->c.uid, uid, sizeof(uid));
	return 0;
}

struct cache_load {
	struct cached *v;
	size_t n, cap;
	size_t records; /* read, superseded ones included */
	uint64_t bad;
};

static int cache_frame(void *ud, const uint8_t *body, size_t len)
{
	struct cache_load *l = ud;

	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 64;
		struct cached *n = realloc(l->v, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->v = n;
		l->cap = ncap;
	}
	if (cache_decode(body, len, &l->v[l->n]) < 0) {
		l->bad++;
	} else {
		l->v[l->n].seq = l->records;
		l->n++;
	}
	l->records++;
	return 0;
}

static int cmp_cached(const void *a, const void *b)
{
	const struct cached *p = a, *q = b;
	int c = strcmp(p->path, q->path);

	return c ? c : (p->seq > q->seq) - (p->seq < q->seq);
}

/* The cache, sorted by path; a later record of a path wins. */
static void cache_load(const struct closed_index *x, struct cache_load *l)
{
	uint64_t torn = 0;
	size_t o = 0;

	memset(l, 0, sizeof(*l));
	if (!x->cache || tl_journal_read(x->cache, CACHE_MAX_BYTES, cache_frame, l, &torn) < 0) {
		l->n = 0;
		l->bad++;
		return;
	}
	l->bad += torn;
	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp_cached);
	/* A path twice: the later record replaces the earlier. */
	for (size_t i = 0; i < l->n; i++) {
		struct cached *k;

		if (o > 0 && strcmp(l->v[o - 1].path, l->v[i].path) == 0)
			o--;
		if (o != i)
			l->v[o] = l->v[i];
		/* the strings live in the record: pointers after the moves */
		k = &l->v[o++];
		k->c.ns = k->ns[0] ? k->ns : NULL;
		k->c.name = k->name[0] ? k->name : NULL;
		k->c.owner_kind = k->okind[0] ? k->okind : NULL;
		k->c.owner_name = k->oname[0] ? k->oname : NULL;
	}
	l->n = o;
}

static struct cached *cache_find(struct cache_load *l, const char *rel)
{
	size_t lo = 0, hi = l->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l->v[mid].path, rel);

		if (c == 0)
			return &l->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The whole cache from the index, atomically. */
static int cache_rewrite(struct closed_index *x)
{
	char dir[PATH_MAX], *slash;
	struct tl_buf b;
	int r;

	if (!x->cache || strlen(x->cache) >= sizeof(dir))
		return 0;
	memcpy(dir, x->cache, strlen(x->cache) + 1);
	slash = strrchr(dir, '/');
	if (!slash)
		return -EINVAL;
	*slash = '\0';
	tl_buf_init(&b, 0);
	for (size_t i = 0; i < x->n; i++)
		cache_record(x, &x->v[i], &b);
	r = b.err ? b.err : tl_file_write_atomic(dir, slash + 1, b.p ? b.p : "", b.len);
	tl_buf_free(&b);
	if (r < 0) {
		tl_metric_inc(x->errors, 1);
		return r;
	}
	x->cache_records = x->n;
	return 0;
}

/* Not synced: a record lost to a crash is a document parsed at the next
 * start. */
static void cache_append(struct closed_index *x, const struct closed *c)
{
	struct tl_buf b;
	int fd, r = 0;

	if (!x->cache)
		return;
	tl_buf_init(&b, 0);
	cache_record(x, c, &b);
	fd = b.err ? -1 : open(x->cache, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0 || tl_write_all(fd, b.p, b.len, NULL) < 0)
		r = -EIO;
	if (fd >= 0)
		close(fd);
	tl_buf_free(&b);
	if (r < 0)
		tl_metric_inc(x->errors, 1);
	else
		x->cache_records++;
}

int closed_set_export(struct closed_index *x, const char *uid, enum closed_export e)
{
	struct closed *c = closed_find(x, uid);

	if (!c)
		return -ENOENT;
	if (c->export != e) {
		c->export = (uint8_t)e;
		cache_append(x, c);
	}
	return 0;
}

size_t closed_pending_export(const struct closed_index *x, size_t max, size_t *ret)
{
	size_t n = 0;

	if (!max)
		return 0;
	/* the newest max in ret[], kept sorted newest first */
	for (size_t i = 0; i < x->n; i++) {
		size_t at;

		if (x->v[i].export != CLOSED_EXPORT_PENDING)
			continue;
		if (n == max && x->v[i].mtime_ns <= x->v[ret[n - 1]].mtime_ns)
			continue;
		at = n < max ? n++ : n - 1;
		while (at > 0 && x->v[ret[at - 1]].mtime_ns < x->v[i].mtime_ns) {
			ret[at] = ret[at - 1];
			at--;
		}
		ret[at] = i;
	}
	return n;
}

int closed_add(struct closed_index *x, const struct closed *c)
{
	int r = index_add(x, c);

	if (r == 0)
		cache_append(x, c);
	return r;
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
	/* the cache says what is gone too, until it is rewritten */
	if (x->cache_records > 2 * x->n + 64)
		cache_rewrite(x);
	return 0;
}

/* ---- the scan at start ---- */


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

/* What a list entry says of the document at path, read from it. */
static void parse_doc(struct closed_index *x, const char *path, const struct stat *st)
{
	struct json_object *doc, *pod = NULL, *events, *first, *owner = NULL, *v;
	struct closed c = { .failed = -1 };
	uint64_t failed;

	x->parsed++;
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
		if (tl_findings_failed_requests(doc, &failed) == 0)
			c.failed = (int64_t)failed;
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
	c.path = (char *)path;
	c.bytes = (uint64_t)st->st_size;
	c.mtime_ns = (int64_t)st->st_mtim.tv_sec * NS_PER_S + st->st_mtim.tv_nsec;
	c.events = doc ? array_len(doc, "events") : 0;
	c.findings = doc ? array_len(doc, "findings") : 0;
	/* Unreadable documents still count against retention. */
	index_add(x, &c);
	json_object_put(doc);
}

/* dir/file: a document (from the cache, or parsed), a temp file, or
 * neither. Returns true when the cache did not describe a document. */
static bool scan_file(struct closed_index *x, struct cache_load *l, const char *dir,
		      const char *file)
{
	char path[PATH_MAX];
	struct cached *k;
	struct stat st;
	int n = snprintf(path, sizeof(path), "%s/%s", dir, file);

	if (n < 0 || (size_t)n >= sizeof(path) || stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	if (tl_file_is_temp(file)) {
		/* A temp file left by a crash while a document was written. */
		unlink(path);
		return false;
	}
	/* Any name ending in .json is a document, ".hidden_UID.json" too. */
	if (strlen(file) < 6 || strcmp(file + strlen(file) - 5, ".json") != 0)
		return false;
	k = cache_find(l, path + strlen(x->dir) + 1);
	if (k && !k->used && k->c.bytes == (uint64_t)st.st_size &&
	    k->c.mtime_ns == (int64_t)st.st_mtim.tv_sec * NS_PER_S + st.st_mtim.tv_nsec) {
		k->used = true;
		k->c.path = path;
		index_add(x, &k->c);
		return false;
	}
	parse_doc(x, path, &st);
	return true;
}

static bool dot_or_dotdot(const char *s)
{
	return strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

int closed_scan(struct closed_index *x)
{
	const char *dir = x->dir;
	struct cache_load l;
	DIR *top, *sub;
	struct dirent *de, *fe;
	char path[PATH_MAX];
	bool stale;

	top = opendir(dir);
	if (!top)
		return -errno;
	cache_load(x, &l);
	stale = l.bad > 0;
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
			if (!dot_or_dotdot(fe->d_name) && scan_file(x, &l, path, fe->d_name))
				stale = true;
		closedir(sub);
	}
	closedir(top);
	for (size_t i = 0; i < l.n; i++)
		stale |= !l.v[i].used;
	free(l.v);
	x->cache_records = l.records;
	/* superseded records are rewritten away as retention does */
	if (stale || x->cache_records > 2 * x->n + 64)
		cache_rewrite(x);
	return 0;
}
