/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cri-log.h"
#include "macro.h"
#include "pod-logs.h"

/* Bytes read from one file per wake-up: a proxy logging faster than this
 * is read on the next wake-up instead of holding the loop. */
#define READ_BUDGET (4u << 20)
#define READ_CHUNK (64u * 1024)
/* A change inotify names is handled in its Pod directory alone
 * (scan_changed). The whole tree is walked again (every Pod directory: a
 * readdir, two opens and two watches each) only when inotify cannot say
 * where (its queue overflowed, an unknown watch), at most once per
 * RESCAN_MIN_MS (the rest wait for the timer), while the root is missing,
 * and every RESCAN_SAFETY_MS in case a watch could not be added:
 * docs/hostile-peers.md has the bound. */
#define RESCAN_MIN_MS 250
#define RESCAN_SAFETY_MS (60 * 1000)
#define FILE_BUCKETS 4096
#define WD_BUCKETS 1024
/* Pod directories one inotify read names at most; past it, a walk. */
#define CHANGED_MAX 64

/* A watched Pod directory or container directory: inotify's events name
 * the watch, this names the Pod directory. */
struct wdent {
	struct wdent *next;
	int wd;
	bool is_pod; /* the Pod directory, else its container directory */
	char *pod;   /* "<ns>_<pod>_<uid>" */
};

struct tfile {
	struct tfile *next;
	struct tfile *hnext; /* in the path hash */
	char *path;
	char ns[64];
	char pod[254];
	char uid[64];
	int fd;
	dev_t dev;
	ino_t ino;
	off_t off;
	struct tl_cri_reader *rd;
	bool seen;
};

/* A Pod or container directory that is a symlink: refused, and reported
 * once while it stays. */
struct refused {
	struct refused *next;
	char *rel;
	bool seen;
};

struct tl_pod_logs {
	char *root;
	char *container;
	uint32_t max_files;
	struct tl_loop *loop;
	struct tl_timer *timer;
	int ifd;
	tl_pod_log_cb cb;
	void *ud;
	struct tfile *files;
	struct tfile *by_path[FILE_BUCKETS];
	int root_wd;          /* -1: the root is not watched (missing): the timer rescans */
	struct wdent *wds[WD_BUCKETS];
	bool tree_dirty;      /* a change inotify reported that no rescan has seen yet */
	uint64_t last_scan_ms;
	struct refused *refused;
	size_t n_refused;
	tl_pod_log_refused_cb on_refused;
	tl_pod_log_gone_cb on_pod_gone;
	bool scanned_once;
	char *chunk;
	struct tl_pod_logs_stats st;
	int records_now;
};

static void tfile_free(struct tfile *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	tl_cri_reader_free(f->rd);
	free(f->path);
	free(f);
}

struct rec_ctx {
	struct tl_pod_logs *p;
	struct tfile *f;
};

static void on_record(void *ud, int64_t t, bool is_stderr _unused_, const char *text, size_t len,
		      bool cut)
{
	struct rec_ctx *c = ud;
	struct tl_pod_log_source src = {
		.ns = c->f->ns, .pod = c->f->pod, .uid = c->f->uid,
		.container = c->p->container, .file = c->f->path,
	};

	c->p->st.records++;
	c->p->records_now++;
	c->p->cb(c->p->ud, &src, t, text, len, cut);
}

/* Reads what was appended since the last read; a file shorter than what was
 * read already was truncated (copytruncate rotation): start over. */
static void read_file(struct tl_pod_logs *p, struct tfile *f)
{
	struct rec_ctx ctx = { p, f };
	struct stat st;
	size_t total = 0;

	if (f->fd < 0)
		return;
	if (fstat(f->fd, &st) == 0 && st.st_size < f->off) {
		p->st.truncations++;
		f->off = 0;
		tl_cri_reader_reset(f->rd);
	}
	while (total < READ_BUDGET) {
		ssize_t n = pread(f->fd, p->chunk, READ_CHUNK, f->off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		f->off += n;
		total += (size_t)n;
		p->st.bytes += (uint64_t)n;
		tl_cri_reader_feed(f->rd, p->chunk, (size_t)n, on_record, &ctx);
	}
}

/* name is one component of the container directory dfd: O_NOFOLLOW
 * refuses a symlink. */
static int tfile_open(struct tfile *f, int dfd, const char *name, bool at_end)
{
	struct stat st;

	f->fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (f->fd < 0)
		return -errno;
	if (fstat(f->fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(f->fd);
		f->fd = -1;
		return -EINVAL;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->off = at_end ? st.st_size : 0;
	return 0;
}

static bool no_openat2;

void tl_pod_logs_test_no_openat2(bool on)
{
	no_openat2 = on;
}

/* Opens the directory name (one component, from readdir) of the directory
 * dfd without following a symlink: openat2 resolving beneath dfd with no
 * symlink at all, or, where the kernel has no openat2 (before 5.6, or a
 * seccomp filter refusing it), openat with O_NOFOLLOW, which for a single
 * component is the same. Returns the fd, -ELOOP for a symlink, or -errno. */
static int open_dir_beneath(int dfd, const char *name)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	int fd = -1, e;

	if (!no_openat2) {
		fd = (int)syscall(SYS_openat2, dfd, name, &how, sizeof(how));
		if (fd < 0 && (errno == ENOSYS || errno == EPERM || errno == E2BIG))
			no_openat2 = true;
	}
	if (no_openat2)
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd >= 0)
		return fd;
	e = errno;
	/* O_NOFOLLOW|O_DIRECTORY on a symlink says ENOTDIR: tell them apart */
	if (e == ELOOP || ((e == ENOTDIR || e == EXDEV) &&
			   fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)))
		return -ELOOP;
	return -e;
}

/* A refused directory (path relative to the root): counted and reported
 * the first time; refusals are remembered up to max_files. */
static void refuse(struct tl_pod_logs *p, const char *rel)
{
	struct refused *r;

	for (r = p->refused; r; r = r->next) {
		if (strcmp(r->rel, rel) == 0) {
			r->seen = true;
			return;
		}
	}
	if (p->n_refused >= p->max_files)
		return;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->rel = strdup(rel))) {
		free(r);
		return;
	}
	r->seen = true;
	r->next = p->refused;
	p->refused = r;
	p->n_refused++;
	p->st.dirs_refused++;
	if (p->on_refused)
		p->on_refused(p->ud, p->root, rel);
}

static void refused_prune(struct tl_pod_logs *p)
{
	struct refused **rr = &p->refused;

	while (*rr) {
		struct refused *r = *rr;

		if (r->seen) {
			r->seen = false;
			rr = &r->next;
			continue;
		}
		*rr = r->next;
		p->n_refused--;
		free(r->rel);
		free(r);
	}
}

/* "<namespace>_<pod>_<uid>": neither a namespace nor a Pod name may hold
 * '_' (DNS labels and subdomains), so the first and last '_' split it. */
static int parse_pod_dir(const char *name, struct tfile *f)
{
	const char *a = strchr(name, '_'), *b = strrchr(name, '_');

	if (!a || a == b || a == name || !b[1])
		return -EINVAL;
	if ((size_t)(a - name) >= sizeof(f->ns) || (size_t)(b - a - 1) >= sizeof(f->pod) ||
	    strlen(b + 1) >= sizeof(f->uid) || b - a - 1 == 0)
		return -EINVAL;
	memcpy(f->ns, name, (size_t)(a - name));
	f->ns[a - name] = '\0';
	memcpy(f->pod, a + 1, (size_t)(b - a - 1));
	f->pod[b - a - 1] = '\0';
	snprintf(f->uid, sizeof(f->uid), "%s", b + 1);
	return 0;
}

/* The runtime's current files are "<restart count>.log"; rotated ones
 * ("0.log.20261201-030405", ".gz") are never written again. */
static bool is_log_name(const char *n)
{
	const char *d = n;

	while (*d >= '0' && *d <= '9')
		d++;
	return d > n && strcmp(d, ".log") == 0;
}

static size_t path_bucket(const char *path)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	for (const unsigned char *c = (const unsigned char *)path; *c; c++)
		h = (h ^ *c) * 1099511628211ULL;
	return (size_t)(h % FILE_BUCKETS);
}

/* A lookup per file per rescan: hashed, so that a rescan costs in
 * proportion to the files, not their square. */
static struct tfile *find_file(struct tl_pod_logs *p, const char *path)
{
	for (struct tfile *f = p->by_path[path_bucket(path)]; f; f = f->hnext)
		if (strcmp(f->path, path) == 0)
			return f;
	return NULL;
}

static void hash_remove(struct tl_pod_logs *p, struct tfile *f)
{
	struct tfile **pp = &p->by_path[path_bucket(f->path)];

	while (*pp && *pp != f)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = f->hnext;
}

static struct wdent *wd_find(struct tl_pod_logs *p, int wd)
{
	for (struct wdent *w = p->wds[(unsigned)wd % WD_BUCKETS]; w; w = w->next)
		if (w->wd == wd)
			return w;
	return NULL;
}

/* The same inode watched again gives the same wd: the entry is updated. */
static void wd_put(struct tl_pod_logs *p, int wd, bool is_pod, const char *pod)
{
	struct wdent *w;
	char *name;

	if (wd < 0)
		return;
	w = wd_find(p, wd);
	if (w && w->is_pod == is_pod && strcmp(w->pod, pod) == 0)
		return;
	name = strdup(pod);
	if (!name)
		return;
	if (!w) {
		w = calloc(1, sizeof(*w));
		if (!w) {
			free(name);
			return;
		}
		w->wd = wd;
		w->next = p->wds[(unsigned)wd % WD_BUCKETS];
		p->wds[(unsigned)wd % WD_BUCKETS] = w;
	}
	free(w->pod);
	w->pod = name;
	w->is_pod = is_pod;
}

static void wd_forget(struct tl_pod_logs *p, int wd)
{
	struct wdent **ww = &p->wds[(unsigned)wd % WD_BUCKETS];

	while (*ww && (*ww)->wd != wd)
		ww = &(*ww)->next;
	if (*ww) {
		struct wdent *w = *ww;

		*ww = w->next;
		free(w->pod);
		free(w);
	}
}

/* dfd: the container directory (taken), dir its path. */
static void scan_container_dir(struct tl_pod_logs *p, const char *pod_name, int dfd, const char *dir)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;

	if (!d) {
		close(dfd);
		return;
	}
	wd_put(p, inotify_add_watch(p->ifd, dir, IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
						  IN_MODIFY | IN_ONLYDIR | IN_DONT_FOLLOW),
	       false, pod_name);
	while ((de = readdir(d))) {
		char path[PATH_MAX];
		struct tfile *f;
		struct stat st;

		if (!is_log_name(de->d_name))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= sizeof(path))
			continue;
		f = find_file(p, path);
		if (f) {
			f->seen = true;
			/* Rotated: the name now holds a new file. The old one
			 * is read to its end first; it gets no more lines. */
			if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    (st.st_ino != f->ino || st.st_dev != f->dev)) {
				read_file(p, f);
				close(f->fd);
				f->fd = -1;
				tl_cri_reader_reset(f->rd);
				p->st.rotations++;
				if (tfile_open(f, dfd, de->d_name, false) < 0)
					f->seen = false;
			}
			continue;
		}
		if (p->st.files >= p->max_files) {
			p->st.files_refused++;
			continue;
		}
		f = calloc(1, sizeof(*f));
		if (!f)
			break;
		f->fd = -1;
		f->path = strdup(path);
		if (!f->path || parse_pod_dir(pod_name, f) < 0 || tl_cri_reader_new(&f->rd) < 0 ||
		    tfile_open(f, dfd, de->d_name, !p->scanned_once) < 0) {
			tfile_free(f);
			continue;
		}
		f->seen = true;
		f->next = p->files;
		p->files = f;
		f->hnext = p->by_path[path_bucket(f->path)];
		p->by_path[path_bucket(f->path)] = f;
		p->st.files++;
	}
	closedir(d);
}

/* The Pod directory name of the root rfd, and in it the container's
 * directory, each opened beneath its parent without following a symlink:
 * a symlink out of the logs directory is refused, not read. */
static void scan_pod_dir(struct tl_pod_logs *p, int rfd, const char *name)
{
	char pod_dir[PATH_MAX], dir[PATH_MAX], rel[PATH_MAX];
	int pfd, cfd;

	if ((size_t)snprintf(pod_dir, sizeof(pod_dir), "%s/%s", p->root, name) >= sizeof(pod_dir) ||
	    (size_t)snprintf(dir, sizeof(dir), "%s/%s", pod_dir, p->container) >= sizeof(dir))
		return;
	pfd = open_dir_beneath(rfd, name);
	if (pfd == -ELOOP)
		refuse(p, name);
	if (pfd < 0)
		return;
	wd_put(p, inotify_add_watch(p->ifd, pod_dir, IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM |
						      IN_ONLYDIR | IN_DONT_FOLLOW),
	       true, name);
	cfd = open_dir_beneath(pfd, p->container);
	if (cfd == -ELOOP && (size_t)snprintf(rel, sizeof(rel), "%s/%s", name, p->container) < sizeof(rel))
		refuse(p, rel);
	close(pfd);
	if (cfd >= 0)
		scan_container_dir(p, name, cfd, dir);
}

static void prune(struct tl_pod_logs *p);

static void rescan(struct tl_pod_logs *p)
{
	DIR *d = NULL;
	struct dirent *de;
	int rfd;

	for (struct tfile *f = p->files; f; f = f->next)
		f->seen = false;
	/* The root itself is the operator's choice: followed if a symlink. */
	rfd = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rfd >= 0) {
		int lfd = dup(rfd);

		d = lfd >= 0 ? fdopendir(lfd) : NULL;
		if (!d && lfd >= 0)
			close(lfd);
	}
	p->tree_dirty = false;
	p->last_scan_ms = tl_now_mono_ms();
	p->st.rescans++;
	p->root_wd = -1;
	if (d) {
		p->root_wd = inotify_add_watch(p->ifd, p->root, IN_CREATE | IN_MOVED_TO | IN_DELETE |
								IN_MOVED_FROM | IN_ONLYDIR);
		while ((de = readdir(d))) {
			struct tfile probe;

			if (de->d_name[0] == '.' || parse_pod_dir(de->d_name, &probe) < 0)
				continue;
			scan_pod_dir(p, rfd, de->d_name);
		}
		closedir(d);
	}
	if (rfd >= 0)
		close(rfd);
	refused_prune(p);
	p->scanned_once = true;
	prune(p);
}

/* Files whose name is gone (Pod directory removed, renamed without a
 * successor yet): what they still hold is read, then they are closed. */
static void prune(struct tl_pod_logs *p)
{
	struct tfile **pp = &p->files;

	while (*pp) {
		struct tfile *f = *pp;

		if (f->seen) {
			pp = &f->next;
			continue;
		}
		read_file(p, f);
		*pp = f->next;
		hash_remove(p, f);
		p->st.files--;
		if (p->on_pod_gone && !tl_pod_logs_has_pod(p, f->uid))
			p->on_pod_gone(p->ud, f->uid);
		tfile_free(f);
	}
}

/* Whether f is a file of the Pod directory pod. */
static bool of_pod(const struct tl_pod_logs *p, const struct tfile *f, const char *pod)
{
	size_t r = strlen(p->root), n = strlen(pod);

	return strncmp(f->path, p->root, r) == 0 && f->path[r] == '/' &&
	       strncmp(f->path + r + 1, pod, n) == 0 && f->path[r + 1 + n] == '/';
}

/* The Pod directories inotify named, each looked at again alone: gone ones
 * have their files read and closed, others their container directory
 * read for new, rotated and removed files. Syscalls in proportion to those
 * directories; a walk of the open files' list (memory) per batch. */
static void scan_changed(struct tl_pod_logs *p, char (*pods)[NAME_MAX + 1], size_t n)
{
	int rfd = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	for (struct tfile *f = p->files; f; f = f->next)
		for (size_t i = 0; i < n && f->seen; i++)
			if (of_pod(p, f, pods[i]))
				f->seen = false;
	for (size_t i = 0; rfd >= 0 && i < n; i++)
		scan_pod_dir(p, rfd, pods[i]);
	if (rfd >= 0)
		close(rfd);
	prune(p);
}

static void read_all(struct tl_pod_logs *p)
{
	for (struct tfile *f = p->files; f; f = f->next)
		read_file(p, f);
}

int tl_pod_logs_poll(struct tl_pod_logs *p)
{
	p->records_now = 0;
	rescan(p);
	read_all(p);
	return p->records_now;
}

int tl_pod_logs_read_pod(struct tl_pod_logs *p, const char *uid)
{
	p->records_now = 0;
	for (struct tfile *f = p->files; f; f = f->next)
		if (strcmp(f->uid, uid) == 0)
			read_file(p, f);
	return p->records_now;
}

static int on_inotify(struct tl_loop *loop _unused_, int fd, uint32_t events _unused_, void *ud)
{
	struct tl_pod_logs *p = ud;
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	char pods[CHANGED_MAX][NAME_MAX + 1];
	size_t n_pods = 0;

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)q;

			const char *pod = NULL;

			q += sizeof(*e) + e->len;
			if (!(e->mask & ~(uint32_t)IN_MODIFY))
				continue; /* an append: read below */
			if (e->mask & IN_Q_OVERFLOW) {
				p->tree_dirty = true;
			} else if (e->wd == p->root_wd) {
				if (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
					p->root_wd = -1; /* the root went: looked for by the timer */
					p->tree_dirty = true;
				} else if (e->len && e->name[0] != '.') {
					struct tfile probe;

					/* a Pod directory came or went */
					if (parse_pod_dir(e->name, &probe) == 0)
						pod = e->name;
				}
			} else {
				struct wdent *w = wd_find(p, e->wd);

				if (e->mask & IN_IGNORED) {
					wd_forget(p, e->wd); /* its directory went */
					continue;
				}
				if (w)
					pod = w->pod; /* in a Pod or container directory */
				else
					p->tree_dirty = true;
			}
			if (!pod)
				continue;
			for (size_t i = 0; i < n_pods && pod; i++)
				if (strcmp(pods[i], pod) == 0)
					pod = NULL;
			if (pod && n_pods < CHANGED_MAX && strlen(pod) <= NAME_MAX)
				snprintf(pods[n_pods++], sizeof(pods[0]), "%s", pod);
			else if (pod)
				p->tree_dirty = true;
		}
	}
	if (p->tree_dirty && tl_now_mono_ms() - p->last_scan_ms >= RESCAN_MIN_MS)
		rescan(p);
	else if (n_pods)
		scan_changed(p, pods, n_pods);
	read_all(p);
	return 0;
}

/* The files are read every tick (an append inotify missed, a watch that
 * could not be added); the tree is walked only when it changed, when the
 * root is not watched, or every RESCAN_SAFETY_MS. */
static void on_timer(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *ud)
{
	struct tl_pod_logs *p = ud;

	p->records_now = 0;
	if (p->tree_dirty || p->root_wd < 0 || tl_now_mono_ms() - p->last_scan_ms >= RESCAN_SAFETY_MS)
		rescan(p);
	read_all(p);
}

int tl_pod_logs_new(const struct tl_pod_logs_config *cfg, struct tl_loop *loop, tl_pod_log_cb cb,
		    void *userdata, struct tl_pod_logs **ret)
{
	struct tl_pod_logs *p;
	int r;

	if (!cfg->root || !cfg->container || !cfg->container[0] || strchr(cfg->container, '/'))
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->ifd = -1;
	p->root_wd = -1;
	p->cb = cb;
	p->on_refused = cfg->on_refused;
	p->on_pod_gone = cfg->on_pod_gone;
	p->ud = userdata;
	p->loop = loop;
	p->max_files = cfg->max_files ? cfg->max_files : 1024;
	p->root = strdup(cfg->root);
	p->container = strdup(cfg->container);
	p->chunk = malloc(READ_CHUNK);
	if (!p->root || !p->container || !p->chunk) {
		r = -ENOMEM;
		goto fail;
	}
	p->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (p->ifd < 0) {
		r = -errno;
		goto fail;
	}
	rescan(p);
	if (loop) {
		uint32_t ms = cfg->rescan_ms ? cfg->rescan_ms : 1000;

		r = tl_loop_add_io(loop, p->ifd, EPOLLIN, on_inotify, p);
		if (r < 0)
			goto fail;
		r = tl_loop_add_timer(loop, ms, ms, on_timer, p, &p->timer);
		if (r < 0) {
			tl_loop_del_io(loop, p->ifd);
			goto fail;
		}
	}
	*ret = p;
	return 0;
fail:
	if (p->ifd >= 0)
		close(p->ifd);
	p->ifd = -1;
	p->loop = NULL;
	tl_pod_logs_free(p);
	return r;
}

void tl_pod_logs_free(struct tl_pod_logs *p)
{
	if (!p)
		return;
	tl_timer_free(p->timer);
	if (p->ifd >= 0) {
		if (p->loop)
			tl_loop_del_io(p->loop, p->ifd);
		close(p->ifd);
	}
	while (p->files) {
		struct tfile *f = p->files;

		p->files = f->next;
		tfile_free(f);
	}
	for (size_t b = 0; b < WD_BUCKETS; b++) {
		while (p->wds[b]) {
			struct wdent *w = p->wds[b];

			p->wds[b] = w->next;
			free(w->pod);
			free(w);
		}
	}
	while (p->refused) {
		struct refused *r = p->refused;

		p->refused = r->next;
		free(r->rel);
		free(r);
	}
	free(p->root);
	free(p->container);
	free(p->chunk);
	free(p);
}

void tl_pod_logs_stats(const struct tl_pod_logs *p, struct tl_pod_logs_stats *ret)
{
	*ret = p->st;
	ret->garbage_lines = 0;
	for (const struct tfile *f = p->files; f; f = f->next)
		ret->garbage_lines += tl_cri_reader_garbage(f->rd);
}

bool tl_pod_logs_has_pod(const struct tl_pod_logs *p, const char *uid)
{
	for (const struct tfile *f = p->files; f; f = f->next)
		if (strcmp(f->uid, uid) == 0)
			return true;
	return false;
}
