/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup-map.h"
#include "event.h"
#include "loop.h"
#include "metrics.h"
#include "macro.h"

/* Events copy these into fixed fields. */
_Static_assert(TL_CGROUP_UID_MAX <= TL_UID_MAX, "pod UID does not fit struct tl_event");
_Static_assert(TL_CGROUP_ID_MAX <= TL_CONTAINER_ID_MAX, "container id does not fit struct tl_event");

#define METRIC_UNPARSABLE "termline_cgroup_unparsable_total"
#define METRIC_TRACKED "termline_cgroups_tracked"

/* Mask for every directory: children come and go, the directory itself goes.
 * Renames are allowed by cgroupfs within one parent. */
#define WATCH_MASK (IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVED_TO | \
		    IN_ONLYDIR | IN_DONT_FOLLOW)

struct entry {
	struct tl_cgroup_info info;
	char *path;
	int wd;               /* -1: not watched */
	int depth;            /* 0 for the root */
	uint64_t gen;         /* scan generation that last saw it */
	struct entry *next_id; /* chain in by_id */
	struct entry *next_wd; /* chain in by_wd when wd >= 0 */
	struct entry *next_tmp; /* removal batch */
};

struct tl_cgroup_map {
	struct tl_cgroup_map_callbacks cb;
	struct tl_metric *m_unparsable, *m_tracked;
	struct tl_loop *loop;
	int ifd;              /* inotify, -1 until attached */
	char full[PATH_MAX];  /* "<root>/<rel>" while walking; root alone at rest */
	size_t root_len;

	struct entry **by_id;
	struct entry **by_wd;
	size_t nbuckets;      /* power of two, both tables */
	size_t count;

	uint64_t gen;
	struct tl_cgroup_map_stats stats;
	/* inotify_event requires this alignment */
	char evbuf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));
};

static size_t hash_u64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k;
}

static bool is_container(const struct tl_cgroup_info *info)
{
	return info->parsed.kind == TL_CGROUP_CONTAINER || info->parsed.kind == TL_CGROUP_SANDBOX;
}

static void update_gauge(const struct tl_cgroup_map *map)
{
	tl_metric_put(map->m_tracked, (int64_t)map->stats.pod_related);
}

/* ---- mountinfo ---- */

/* The kernel escapes ' ', '\t', '\n' and '\\' in mountinfo as \ooo. */
static int unescape(const char *s, char *buf, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; s[i]; i++) {
		char ch = s[i];

		if (ch == '\\' && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
		    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			ch = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		}
		if (o + 1 >= len)
			return -ENAMETOOLONG;
		buf[o++] = ch;
	}
	if (len == 0)
		return -ENAMETOOLONG;
	buf[o] = '\0';
	return 0;
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SRC SUPEROPTS".
 * Returns 1 with *root and *mnt pointing into line for a cgroup2 mount, else 0. */
static int mountinfo_cgroup2(char *line, char **ret_root, char **ret_mnt)
{
	char *save = NULL, *tok, *root = NULL, *mnt = NULL;
	int field = 0;
	bool sep = false;

	for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save), field++) {
		if (field == 3)
			root = tok;
		else if (field == 4)
			mnt = tok;
		else if (field > 5 && !sep && strcmp(tok, "-") == 0)
			sep = true;
		else if (sep) {
			if (strcmp(tok, "cgroup2") != 0 || !root || !mnt)
				return 0;
			*ret_root = root;
			*ret_mnt = mnt;
			return 1;
		}
	}
	return 0;
}

int tl_cgroup_find_mount(const char *mountinfo, char *buf, size_t len)
{
	char *line = NULL, *best = NULL;
	bool best_full = false;
	size_t cap = 0;
	FILE *f;
	int r;

	f = fopen(mountinfo, "re");
	if (!f)
		return -errno;
	errno = 0;
	while (getline(&line, &cap, f) >= 0) {
		char *root, *mnt;

		if (!mountinfo_cgroup2(line, &root, &mnt))
			continue;
		/* A mount of the hierarchy's root ("/") beats a bind of a subtree
		 * (e.g. a container's view): only the root mount holds the node's
		 * kubepods tree. */
		if (best && (best_full || strcmp(root, "/") != 0))
			continue;
		free(best);
		best = strdup(mnt);
		if (!best) {
			r = -ENOMEM;
			goto out;
		}
		best_full = strcmp(root, "/") == 0;
	}
	if (ferror(f)) {
		r = errno ? -errno : -EIO;
		goto out;
	}
	r = best ? unescape(best, buf, len) : -ENOENT;
out:
	free(best);
	free(line);
	fclose(f);
	return r;
}

/* ---- the table ---- */

static int grow(struct tl_cgroup_map *map)
{
	size_t n = map->nbuckets ? map->nbuckets * 2 : 256;
	struct entry **by_id = calloc(n, sizeof(*by_id));
	struct entry **by_wd = calloc(n, sizeof(*by_wd));

	if (!by_id || !by_wd) {
		free(by_id);
		free(by_wd);
		return -ENOMEM;
	}
	for (size_t b = 0; b < map->nbuckets; b++) {
		struct entry *e, *next;

		for (e = map->by_id[b]; e; e = next) {
			size_t h = hash_u64(e->info.cgroup_id) & (n - 1);

			next = e->next_id;
			e->next_id = by_id[h];
			by_id[h] = e;
		}
		for (e = map->by_wd[b]; e; e = next) {
			size_t h = hash_u64((uint64_t)e->wd) & (n - 1);

			next = e->next_wd;
			e->next_wd = by_wd[h];
			by_wd[h] = e;
		}
	}
	free(map->by_id);
	free(map->by_wd);
	map->by_id = by_id;
	map->by_wd = by_wd;
	map->nbuckets = n;
	return 0;
}

static struct entry *find_id(const struct tl_cgroup_map *map, uint64_t id)
{
	struct entry *e;

	if (!map->nbuckets)
		return NULL;
	for (e = map->by_id[hash_u64(id) & (map->nbuckets - 1)]; e; e = e->next_id)
		if (e->info.cgroup_id == id)
			return e;
	return NULL;
}

static struct entry *find_wd(const struct tl_cgroup_map *map, int wd)
{
	struct entry *e;

	if (!map->nbuckets || wd < 0)
		return NULL;
	for (e = map->by_wd[hash_u64((uint64_t)wd) & (map->nbuckets - 1)]; e; e = e->next_wd)
		if (e->wd == wd)
			return e;
	return NULL;
}

static void unlink_wd(struct tl_cgroup_map *map, struct entry *e)
{
	struct entry **pp;

	if (e->wd < 0)
		return;
	for (pp = &map->by_wd[hash_u64((uint64_t)e->wd) & (map->nbuckets - 1)]; *pp; pp = &(*pp)->next_wd)
		if (*pp == e) {
			*pp = e->next_wd;
			break;
		}
	e->wd = -1;
	e->next_wd = NULL;
}

static void link_wd(struct tl_cgroup_map *map, struct entry *e, int wd)
{
	size_t h = hash_u64((uint64_t)wd) & (map->nbuckets - 1);

	e->wd = wd;
	e->next_wd = map->by_wd[h];
	map->by_wd[h] = e;
}

static void entry_free(struct entry *e)
{
	if (!e)
		return;
	free(e->path);
	free(e);
}

/* Unlinks e, stops its watch, tells the callbacks, frees it. */
static void remove_entry(struct tl_cgroup_map *map, struct entry *e)
{
	struct entry **pp;

	for (pp = &map->by_id[hash_u64(e->info.cgroup_id) & (map->nbuckets - 1)]; *pp; pp = &(*pp)->next_id)
		if (*pp == e) {
			*pp = e->next_id;
			break;
		}
	if (e->wd >= 0) {
		/* A deleted directory's watch is already gone (EINVAL): nothing to undo. */
		(void)inotify_rm_watch(map->ifd, e->wd);
		unlink_wd(map, e);
	}
	map->count--;
	map->stats.tracked--;
	if (e->info.parsed.pod_uid[0]) {
		map->stats.pod_related--;
		update_gauge(map);
	}
	if (is_container(&e->info) && map->cb.removed)
		map->cb.removed(map->cb.userdata, &e->info);
	entry_free(e);
}

/* Removes every entry matching pred (path prefix or stale generation). */
static void remove_where(struct tl_cgroup_map *map, const char *rel, uint64_t keep_gen)
{
	struct entry *batch = NULL, *e;
	size_t rl = rel ? strlen(rel) : 0;

	for (size_t b = 0; b < map->nbuckets; b++)
		for (e = map->by_id[b]; e; e = e->next_id) {
			bool match;

			if (rel)
				match = rl == 0 || (strncmp(e->path, rel, rl) == 0 &&
						    (e->path[rl] == '\0' || e->path[rl] == '/'));
			else
				match = e->gen != keep_gen;
			if (match) {
				e->next_tmp = batch;
				batch = e;
			}
		}
	while (batch) {
		e = batch;
		batch = e->next_tmp;
		remove_entry(map, e);
	}
}

/* ---- walking ---- */

/* map->full for system calls: a root of "/" is kept as "" so that children
 * read "/name". */
static const char *full_of(const struct tl_cgroup_map *map)
{
	return map->full[0] ? map->full : "/";
}

static const char *rel_of(const struct tl_cgroup_map *map)
{
	return map->full[map->root_len] ? map->full + map->root_len + 1 : "";
}

/* Records the directory at map->full (already stat'ed). Returns the entry, or
 * NULL when it is not to be descended (limit, allocation failure). */
static struct entry *upsert(struct tl_cgroup_map *map, uint64_t id, const struct tl_cgroup_path *parsed,
			    int depth, int *ret_err)
{
	const char *rel = rel_of(map);
	struct entry *e = find_id(map, id);
	int wd = -1;

	*ret_err = 0;
	if (e && strcmp(e->path, rel) != 0) {
		/* Renamed: forget the old name (and its subtree) first. */
		char *old = strdup(e->path);

		if (!old) {
			*ret_err = -ENOMEM;
			return NULL;
		}
		remove_where(map, old, 0);
		free(old);
		e = NULL;
	}
	if (e) {
		e->gen = map->gen;
		return e;
	}
	if (map->count >= TL_CGROUP_MAP_MAX_ENTRIES) {
		map->stats.dropped++;
		return NULL;
	}
	if (map->count >= map->nbuckets) {
		*ret_err = grow(map);
		if (*ret_err < 0)
			return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !(e->path = strdup(rel))) {
		entry_free(e);
		*ret_err = -ENOMEM;
		return NULL;
	}
	/* Watch before listing children so none created meanwhile is missed. */
	if (map->ifd >= 0) {
		wd = inotify_add_watch(map->ifd, full_of(map), WATCH_MASK);
		if (wd < 0)
			map->stats.dropped++; /* ENOSPC: max_user_watches; still tracked */
	}
	e->info.cgroup_id = id;
	e->info.parsed = *parsed;
	e->info.path = e->path;
	e->depth = depth;
	e->gen = map->gen;
	e->wd = -1;
	{
		size_t h = hash_u64(id) & (map->nbuckets - 1);

		e->next_id = map->by_id[h];
		map->by_id[h] = e;
	}
	if (wd >= 0) {
		/* The same inode watched again (a rename we saw as remove+add)
		 * returns the same wd: drop any stale owner of it. */
		struct entry *stale = find_wd(map, wd);

		if (stale)
			unlink_wd(map, stale);
		link_wd(map, e, wd);
	}
	map->count++;
	map->stats.tracked++;
	if (parsed->pod_uid[0]) {
		map->stats.pod_related++;
		update_gauge(map);
	}
	if (is_container(&e->info) && map->cb.added)
		map->cb.added(map->cb.userdata, &e->info);
	return e;
}

/* Walks the directory at map->full (relative part rel_of()). A directory that
 * vanished meanwhile is not an error: cgroups come and go during the walk. */
static int walk(struct tl_cgroup_map *map, int depth)
{
	struct tl_cgroup_path parsed;
	struct dirent *de;
	struct entry *e;
	struct stat st;
	size_t len;
	DIR *d;
	int fd, r;

	if (tl_cgroup_path_parse(rel_of(map), &parsed) < 0) {
		map->stats.unparsable++;
		tl_metric_inc(map->m_unparsable, 1);
		return 0;
	}
	fd = open(full_of(map), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (depth == 0)
			return -errno;
		/* Gone meanwhile (ENOENT) is normal churn; anything else loses
		 * only this subtree, not the walk. */
		if (errno != ENOENT)
			map->stats.dropped++;
		return 0;
	}
	if (fstat(fd, &st) < 0) {
		r = depth == 0 ? -errno : 0;
		map->stats.dropped++;
		close(fd);
		return r;
	}
	e = upsert(map, (uint64_t)st.st_ino, &parsed, depth, &r);
	if (!e || depth >= TL_CGROUP_MAP_MAX_DEPTH) {
		if (e)
			map->stats.dropped++;
		close(fd);
		return r;
	}
	d = fdopendir(fd);
	if (!d) {
		r = -errno;
		close(fd);
		return depth == 0 ? r : 0;
	}
	len = strlen(map->full);
	r = 0;
	errno = 0;
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);

		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (len + 1 + nl >= sizeof(map->full)) {
			map->stats.dropped++;
			continue;
		}
		map->full[len] = '/';
		memcpy(map->full + len + 1, de->d_name, nl + 1);
		if (de->d_type == DT_UNKNOWN) {
			struct stat cst;

			if (fstatat(dirfd(d), de->d_name, &cst, AT_SYMLINK_NOFOLLOW) < 0 ||
			    !S_ISDIR(cst.st_mode)) {
				map->full[len] = '\0';
				continue;
			}
		}
		r = walk(map, depth + 1);
		map->full[len] = '\0';
		if (r < 0)
			break;
		errno = 0;
	}
	if (r == 0 && errno != 0 && depth == 0)
		r = -errno;
	closedir(d);
	return r;
}

int tl_cgroup_map_scan(struct tl_cgroup_map *map)
{
	int r;

	map->gen++;
	map->full[map->root_len] = '\0';
	r = walk(map, 0);
	map->full[map->root_len] = '\0';
	if (r < 0)
		return r;
	remove_where(map, NULL, map->gen);
	if (map->gen > 1)
		map->stats.rescans++;
	return 0;
}

/* ---- inotify ---- */

/* Sets map->full to the child name of e; 0 or -ENAMETOOLONG. */
static int set_child(struct tl_cgroup_map *map, const struct entry *e, const char *name)
{
	int n;

	if (e->path[0])
		n = snprintf(map->full + map->root_len, sizeof(map->full) - map->root_len, "/%s/%s",
			     e->path, name);
	else
		n = snprintf(map->full + map->root_len, sizeof(map->full) - map->root_len, "/%s", name);
	if (n < 0 || (size_t)n >= sizeof(map->full) - map->root_len) {
		map->full[map->root_len] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

static int handle_event(struct tl_cgroup_map *map, const struct inotify_event *ev)
{
	struct entry *e = find_wd(map, ev->wd);
	int r = 0;

	if (!e)
		return 0; /* a watch we already dropped */
	if (ev->mask & IN_IGNORED) {
		unlink_wd(map, e);
		return 0;
	}
	if (ev->mask & IN_DELETE_SELF) {
		char *path = strdup(e->path);

		if (!path)
			return -ENOMEM;
		remove_where(map, path, 0);
		free(path);
		return 0;
	}
	if (!(ev->mask & IN_ISDIR) || ev->len == 0 || strnlen(ev->name, ev->len) == ev->len)
		return 0;
	if (set_child(map, e, ev->name) < 0) {
		map->stats.dropped++;
		return 0;
	}
	if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
		if (e->depth < TL_CGROUP_MAP_MAX_DEPTH)
			r = walk(map, e->depth + 1);
		else
			map->stats.dropped++;
	} else if (ev->mask & (IN_DELETE | IN_MOVED_FROM)) {
		char *path = strdup(rel_of(map));

		if (!path) {
			r = -ENOMEM;
		} else {
			remove_where(map, path, 0);
			free(path);
		}
	}
	map->full[map->root_len] = '\0';
	return r;
}

int tl_cgroup_map_process(struct tl_cgroup_map *map)
{
	bool rescan = false;

	if (map->ifd < 0)
		return -EBADF;
	for (;;) {
		ssize_t n = read(map->ifd, map->evbuf, sizeof(map->evbuf));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			return -errno;
		}
		if (n == 0)
			break;
		for (char *p = map->evbuf; p < map->evbuf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			/* Events were lost (overflow) or one could not be
			 * applied: only a full walk makes the map true again.
			 * Until then only watch bookkeeping matters. */
			if (ev->mask & IN_Q_OVERFLOW)
				rescan = true;
			else if ((!rescan || (ev->mask & IN_IGNORED)) && handle_event(map, ev) < 0)
				rescan = true;
			p += sizeof(*ev) + ev->len;
		}
	}
	return rescan ? tl_cgroup_map_scan(map) : 0;
}

static int on_inotify(struct tl_loop *loop _unused_, int fd _unused_, uint32_t events _unused_,
		      void *userdata)
{
	return tl_cgroup_map_process(userdata);
}

/* ---- public ---- */

int tl_cgroup_map_new(const char *root, const struct tl_cgroup_map_callbacks *cb,
		      struct tl_cgroup_map **ret)
{
	struct tl_cgroup_map *map;
	size_t rl;
	int r;

	map = calloc(1, sizeof(*map));
	if (!map)
		return -ENOMEM;
	map->ifd = -1;
	if (cb)
		map->cb = *cb;
	if (root) {
		rl = strlen(root);
		if (rl >= sizeof(map->full)) {
			r = -ENAMETOOLONG;
			goto fail;
		}
		memcpy(map->full, root, rl + 1);
	} else {
		r = tl_cgroup_find_mount("/proc/self/mountinfo", map->full, sizeof(map->full));
		if (r < 0)
			goto fail;
	}
	rl = strlen(map->full);
	/* "/x/" and "/x" name the same root; "/" stays "/" only as "" + "/rel". */
	while (rl > 0 && map->full[rl - 1] == '/')
		map->full[--rl] = '\0';
	map->root_len = rl;
	map->m_unparsable = tl_metric_new(METRIC_UNPARSABLE, NULL, TL_METRIC_COUNTER,
					  "cgroup directories whose kubelet/runtime names did not parse");
	map->m_tracked = tl_metric_new(METRIC_TRACKED, NULL, TL_METRIC_GAUGE,
				       "cgroup directories tracked that belong to a pod");
	r = grow(map);
	if (r < 0)
		goto fail;
	*ret = map;
	return 0;
fail:
	free(map);
	return r;
}

void tl_cgroup_map_free(struct tl_cgroup_map *map)
{
	if (!map)
		return;
	if (map->loop && map->ifd >= 0)
		(void)tl_loop_del_io(map->loop, map->ifd);
	for (size_t b = 0; b < map->nbuckets; b++) {
		struct entry *e, *next;

		for (e = map->by_id[b]; e; e = next) {
			next = e->next_id;
			entry_free(e);
		}
	}
	if (map->ifd >= 0)
		close(map->ifd);
	free(map->by_id);
	free(map->by_wd);
	free(map);
}

const char *tl_cgroup_map_root(const struct tl_cgroup_map *map)
{
	return map->root_len ? map->full : "/";
}

int tl_cgroup_map_attach(struct tl_cgroup_map *map, struct tl_loop *loop)
{
	int r;

	if (map->ifd >= 0)
		return -EALREADY;
	map->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (map->ifd < 0)
		return -errno;
	r = tl_cgroup_map_scan(map);
	if (r < 0)
		return r;
	if (loop) {
		r = tl_loop_add_io(loop, map->ifd, EPOLLIN, on_inotify, map);
		if (r < 0)
			return r;
		map->loop = loop;
	}
	return 0;
}

const struct tl_cgroup_info *tl_cgroup_map_lookup(const struct tl_cgroup_map *map, uint64_t cgroup_id)
{
	const struct entry *e = find_id(map, cgroup_id);

	return e ? &e->info : NULL;
}

/* The id as a cgroup leaf spells it: tl_container_id_bare() drops any
 * "<runtime>://" as Kubernetes' ParseContainerID does, so a runtime the
 * path parser does not name still matches its leaf by id. */
static struct entry *find_leaf(const struct tl_cgroup_map *map, const char *container_id)
{
	const char *id = tl_container_id_bare(container_id);

	if (!id || !id[0])
		return NULL;
	for (size_t b = 0; b < map->nbuckets; b++)
		for (struct entry *e = map->by_id[b]; e; e = e->next_id)
			if (is_container(&e->info) && !e->info.parsed.nested &&
			    strcmp(e->info.parsed.container_id, id) == 0)
				return e;
	return NULL;
}

const struct tl_cgroup_info *tl_cgroup_map_lookup_container(const struct tl_cgroup_map *map,
							    const char *container_id)
{
	const struct entry *e = find_leaf(map, container_id);

	return e ? &e->info : NULL;
}

int tl_cgroup_map_mark_sandbox(struct tl_cgroup_map *map, const char *container_id)
{
	struct entry *leaf = find_leaf(map, container_id);

	if (!leaf)
		return -ENOENT;
	for (size_t b = 0; b < map->nbuckets; b++)
		for (struct entry *e = map->by_id[b]; e; e = e->next_id)
			if (e->info.parsed.kind == TL_CGROUP_CONTAINER &&
			    strcmp(e->info.parsed.container_id, leaf->info.parsed.container_id) == 0 &&
			    strcmp(e->info.parsed.pod_uid, leaf->info.parsed.pod_uid) == 0)
				e->info.parsed.kind = TL_CGROUP_SANDBOX;
	return 0;
}

int tl_cgroup_map_foreach(const struct tl_cgroup_map *map,
			  int (*fn)(void *userdata, const struct tl_cgroup_info *info), void *userdata)
{
	for (size_t b = 0; b < map->nbuckets; b++)
		for (const struct entry *e = map->by_id[b]; e; e = e->next_id) {
			int r = fn(userdata, &e->info);

			if (r)
				return r;
		}
	return 0;
}

void tl_cgroup_map_get_stats(const struct tl_cgroup_map *map, struct tl_cgroup_map_stats *ret)
{
	*ret = map->stats;
}
