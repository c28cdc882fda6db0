/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fileio.h"
#include "journal.h"
#include "tl-buf.h"

/* Bytes of a journal's write queue kept between flushes. */
#define PENDING_KEEP (4u * 1024)

struct tl_jpool {
	unsigned max_open, n_open;
	struct tl_journal *lru_head, *lru_tail; /* open journals, most recent first */
};

struct tl_journal {
	struct tl_jpool *pool;
	struct tl_journal *prev, *next; /* in the pool's LRU while fd >= 0 */
	int fd;
	char path[PATH_MAX];
	uint64_t bytes;   /* in the file */
	bool dirty;       /* written since the last fsync */
	struct tl_buf pending; /* frames not written yet (tl_journal_flush) */
};

static int journal_path(const char *dir, const char *name, const char *ext, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s%s", dir, name, ext);

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int tl_jpool_new(unsigned max_open, struct tl_jpool **ret)
{
	struct tl_jpool *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->max_open = max_open ? max_open : 1;
	*ret = p;
	return 0;
}

void tl_jpool_free(struct tl_jpool *p)
{
	free(p);
}

unsigned tl_jpool_open_fds(const struct tl_jpool *p)
{
	return p ? p->n_open : 0;
}

static void lru_unlink(struct tl_journal *j)
{
	struct tl_jpool *p = j->pool;

	if (j->prev)
		j->prev->next = j->next;
	else
		p->lru_head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	else
		p->lru_tail = j->prev;
	j->prev = j->next = NULL;
}

static void lru_push(struct tl_journal *j)
{
	struct tl_jpool *p = j->pool;

	j->prev = NULL;
	j->next = p->lru_head;
	if (p->lru_head)
		p->lru_head->prev = j;
	p->lru_head = j;
	if (!p->lru_tail)
		p->lru_tail = j;
}

/* Gives up j's descriptor. Not synced here: fsync works on the file, not
 * the descriptor, so the next tl_journal_sync reopens it if it is still
 * dirty; syncing at every eviction made a node with more Pods than
 * descriptors sync a journal per flush. */
static int fd_release(struct tl_journal *j)
{
	if (j->fd < 0)
		return 0;
	close(j->fd);
	j->fd = -1;
	lru_unlink(j);
	j->pool->n_open--;
	return 0;
}

static int fd_acquire(struct tl_journal *j)
{
	struct tl_jpool *p = j->pool;

	if (j->fd >= 0) {
		if (p->lru_head != j) {
			lru_unlink(j);
			lru_push(j);
		}
		return 0;
	}
	while (p->n_open >= p->max_open && p->lru_tail)
		fd_release(p->lru_tail);
	j->fd = open(j->path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, TL_JOURNAL_MODE);
	if (j->fd < 0)
		return -errno;
	p->n_open++;
	lru_push(j);
	return 0;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

/* zlib's crc32 (same polynomial, same values: journals of either read
 * the same), eight bytes per step: zlib's own goes a byte at a time on
 * buffers this short (a frame per event, ~30-60 bytes), 10-17 % of the
 * store's instructions per event (bench-timeline under callgrind). */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int k = 1; k < 8; k++)
			crc_tab[k][i] = (crc_tab[k - 1][i] >> 8) ^ crc_tab[0][crc_tab[k - 1][i] & 0xff];
}

uint32_t tl_journal_crc(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = 0xffffffffu;

	pthread_once(&crc_once, crc_init);
	for (; len >= 8; p += 8, len -= 8) {
		uint32_t a = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				  (uint32_t)p[3] << 24);
		uint32_t b = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
			     (uint32_t)p[7] << 24;

		c = crc_tab[7][a & 0xff] ^ crc_tab[6][(a >> 8) & 0xff] ^ crc_tab[5][(a >> 16) & 0xff] ^
		    crc_tab[4][a >> 24] ^ crc_tab[3][b & 0xff] ^ crc_tab[2][(b >> 8) & 0xff] ^
		    crc_tab[1][(b >> 16) & 0xff] ^ crc_tab[0][b >> 24];
	}
	while (len--)
		c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

void tl_journal_frame(struct tl_buf *out, const void *body, size_t len)
{
	uint8_t h[8];

	put_le32(h, (uint32_t)len);
	put_le32(h + 4, tl_journal_crc(body, len));
	/* one reserve for both (a frame per event comes here) */
	if (tl_buf_reserve(out, 8 + len) < 0)
		return;
	memcpy(out->p + out->len, h, 8);
	memcpy(out->p + out->len + 8, body, len);
	out->len += 8 + len;
	out->p[out->len] = '\0';
}

/* Offset just past the last whole frame of fd. */
static int whole_frames_end(int fd, off_t size, off_t *ret)
{
	uint8_t h[8];
	off_t pos = 0;

	while (pos + 8 <= size) {
		ssize_t n = pread(fd, h, 8, pos);
		uint32_t len;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n != 8)
			break;
		len = get_le32(h);
		if (len > TL_JOURNAL_FRAME_MAX || pos + 8 + (off_t)len > size)
			break;
		pos += 8 + (off_t)len;
	}
	*ret = pos;
	return 0;
}

int tl_journal_open(struct tl_jpool *pool, const char *dir, const char *name,
		    struct tl_journal **ret)
{
	struct tl_journal *j;
	struct stat st;
	off_t end = 0;
	int r;

	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->pool = pool;
	j->fd = -1;
	tl_buf_init(&j->pending, 0);
	r = journal_path(dir, name, TL_JOURNAL_EXT, j->path, sizeof(j->path));
	if (r < 0)
		goto fail;
	r = fd_acquire(j);
	if (r < 0)
		goto fail;
	if (fstat(j->fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	r = whole_frames_end(j->fd, st.st_size, &end);
	if (r < 0)
		goto fail;
	if (end != st.st_size && ftruncate(j->fd, end) < 0) {
		r = -errno;
		goto fail;
	}
	j->bytes = (uint64_t)end;
	*ret = j;
	return 0;
fail:
	tl_journal_close(j);
	return r;
}

int tl_journal_append_raw(struct tl_journal *j, const void *frames, size_t len)
{
	size_t done;
	int r;

	r = fd_acquire(j);
	if (r < 0)
		return r;
	r = tl_write_all(j->fd, frames, len, &done);
	if (r < 0 && done > 0) {
		/* A partial frame (ENOSPC mid-write) is cut off; if that fails
		 * too, the replay stops at it (its CRC or length is wrong). */
		if (ftruncate(j->fd, (off_t)j->bytes) < 0)
			j->bytes += done;
	} else if (r == 0) {
		j->bytes += len;
	}
	j->dirty = true;
	return r;
}

int tl_journal_flush(struct tl_journal *j)
{
	int r;

	if (!j || j->pending.len == 0)
		return 0;
	r = tl_journal_append_raw(j, j->pending.p, j->pending.len);
	/* Written or not, these frames are done with: a failure is the
	 * caller's to count, and retrying a full disk with the same bytes
	 * would only grow the backlog. A queue that a burst grew past
	 * PENDING_KEEP is given back: kept, every journal would hold its
	 * largest burst (up to 128 KiB) for life, 7 MiB of the agent's RSS
	 * with 110 Pods x 10,000 events (bench/README.md, API memory);
	 * growing it again costs a few reallocs per burst, next to its
	 * write(2). */
	if (j->pending.cap > PENDING_KEEP)
		tl_buf_free(&j->pending);
	tl_buf_reset(&j->pending);
	return r;
}

int tl_journal_append(struct tl_journal *j, const void *body, size_t len)
{
	if (len > TL_JOURNAL_FRAME_MAX)
		return -E2BIG;
	tl_journal_frame(&j->pending, body, len);
	if (j->pending.err) {
		int r = j->pending.err;

		tl_buf_reset(&j->pending);
		return r;
	}
	if (j->pending.len >= TL_JOURNAL_PENDING_MAX)
		return tl_journal_flush(j);
	return 0;
}

bool tl_journal_pending(const struct tl_journal *j)
{
	return j && j->pending.len > 0;
}

int tl_journal_rewrite(struct tl_journal *j, const void *frames, size_t len)
{
	char tmp[PATH_MAX + 8];
	size_t done;
	int fd, r;

	if (snprintf(tmp, sizeof(tmp), "%s.new", j->path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, TL_JOURNAL_MODE);
	if (fd < 0)
		return -errno;
	r = tl_write_all(fd, frames, len, &done);
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, j->path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	/* The old descriptor points at the replaced file; what was pending is
	 * in the rewrite. */
	tl_buf_reset(&j->pending);
	j->dirty = false;
	if (j->fd >= 0) {
		close(j->fd);
		j->fd = -1;
		lru_unlink(j);
		j->pool->n_open--;
	}
	j->bytes = len;
	return 0;
}

int tl_journal_sync(struct tl_journal *j)
{
	int r = tl_journal_flush(j);

	if (r < 0)
		return r;
	if (!j || !j->dirty)
		return 0;
	r = fd_acquire(j);
	if (r < 0)
		return r;
	if (fdatasync(j->fd) < 0)
		return -errno;
	j->dirty = false;
	return 0;
}

uint64_t tl_journal_bytes(const struct tl_journal *j)
{
	return j ? j->bytes + j->pending.len : 0;
}

const char *tl_journal_path(const struct tl_journal *j)
{
	return j->path;
}

void tl_journal_close(struct tl_journal *j)
{
	if (!j)
		return;
	tl_journal_flush(j);
	fd_release(j);
	tl_buf_free(&j->pending);
	free(j);
}

int tl_journal_mark(struct tl_journal *j, bool behind)
{
	if (!j)
		return 0;
	return chmod(j->path, behind ? TL_JOURNAL_MODE_BEHIND : TL_JOURNAL_MODE) < 0 ? -errno : 0;
}

void tl_journal_discard(struct tl_journal *j)
{
	if (!j)
		return;
	j->dirty = false;
	tl_buf_reset(&j->pending);
	tl_journal_close(j);
}

int tl_journal_remove(struct tl_journal *j)
{
	int r = 0;

	if (!j)
		return 0;
	if (unlink(j->path) < 0 && errno != ENOENT)
		r = -errno;
	tl_journal_discard(j);
	return r;
}

int tl_journal_read(const char *path, uint64_t max, tl_journal_frame_cb cb, void *userdata,
		    uint64_t *ret_bad)
{
	uint8_t *data = NULL;
	uint64_t bad = 0;
	struct stat st;
	size_t pos = 0, size;
	ssize_t n;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		r = -EFBIG;
		goto out;
	}
	size = (size_t)st.st_size;
	data = malloc(size ? size : 1);
	if (!data) {
		r = -ENOMEM;
		goto out;
	}
	while (pos < size) {
		n = pread(fd, data + pos, size - pos, (off_t)pos);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			goto out;
		}
		pos += (size_t)n;
	}
	pos = 0;
	while (pos + 8 <= size) {
		uint32_t len = get_le32(data + pos), crc = get_le32(data + pos + 4);

		if (len > TL_JOURNAL_FRAME_MAX || pos + 8 + len > size)
			break;
		if (tl_journal_crc(data + pos + 8, len) != crc) {
			bad++;
		} else {
			r = cb(userdata, data + pos + 8, len);
			if (r < 0)
				goto out;
		}
		pos += 8 + len;
	}
	if (pos < size)
		bad++; /* torn tail */
	r = 0;
out:
	free(data);
	close(fd);
	if (r == 0 && ret_bad)
		*ret_bad = bad;
	return r;
}

int tl_journal_replay(const char *dir, const char *name, tl_journal_frame_cb cb, void *userdata,
		      uint64_t *ret_bad)
{
	char path[PATH_MAX];
	int r = journal_path(dir, name, TL_JOURNAL_EXT, path, sizeof(path));

	/* Compaction keeps a journal near the size of its timeline's state
	 * (a few MB at the event cap): reading it whole is bounded. */
	return r < 0 ? r : tl_journal_read(path, UINT64_MAX, cb, userdata, ret_bad);
}

/* ---- the previous format ---- */

static int replay_line(char *line, size_t len, tl_journal_record_cb cb, void *userdata,
		       uint64_t *bad)
{
	struct json_tokener *tok;
	struct json_object *rec;
	int r = 0;

	if (len == 0)
		return 0;
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	rec = json_tokener_parse_ex(tok, line, (int)len);
	if (!rec || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len ||
	    !json_object_is_type(rec, json_type_object)) {
		(*bad)++;
	} else {
		r = cb(userdata, rec);
	}
	json_object_put(rec);
	json_tokener_free(tok);
	return r;
}

int tl_journal_replay_jsonl(const char *dir, const char *name, tl_journal_record_cb cb,
			    void *userdata, uint64_t *ret_bad)
{
	char path[PATH_MAX];
	char *line = NULL;
	size_t len = 0, cap = 0;
	bool skipping = false;
	uint64_t bad = 0;
	FILE *f;
	int c, r;

	r = journal_path(dir, name, TL_JOURNAL_LEGACY_EXT, path, sizeof(path));
	if (r < 0)
		return r;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while ((c = getc(f)) != EOF) {
		if (c == '\n') {
			if (skipping)
				bad++;
			else
				r = replay_line(line, len, cb, userdata, &bad);
			len = 0;
			skipping = false;
			if (r < 0)
				goto out;
			continue;
		}
		if (skipping)
			continue;
		if (len + 1 >= TL_JOURNAL_RECORD_MAX) {
			skipping = true;
			continue;
		}
		if (len + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *n = realloc(line, ncap);

			if (!n) {
				r = -ENOMEM;
				goto out;
			}
			line = n;
			cap = ncap;
		}
		line[len++] = (char)c;
	}
	if (ferror(f)) {
		r = -EIO;
		goto out;
	}
	/* A last line without '\n' was torn by a crash: not a record. */
	if (len > 0 || skipping)
		bad++;
	r = 0;
out:
	free(line);
	fclose(f);
	if (r == 0 && ret_bad)
		*ret_bad = bad;
	return r;
}
